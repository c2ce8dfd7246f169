"""The one registry of methods, keyed by (problem kind, method name), filled by :func:`register`."""

from __future__ import annotations

import inspect
import os
import sys
import warnings
from collections.abc import Callable, Collection, Mapping
from types import MappingProxyType

from ._doc import insert_section
from .exceptions import MethodNotFound, OptionError
from .result import Status, lazy_message


class Outcome:
    """What a method may return to :func:`nsopt.solve` instead of ``mon.solution(...)`` (which makes
    the :class:`Solution` itself): its iterate and how it stopped (``mon.outcome(...)`` for a result a
    method still changes, the empty and certified-infeasible problems of ``solve``, a method written
    without the monitor).

    ``x`` maps the problem's variable names (``z``, ``r``, ``v``, ...) to vectors; ``status`` is the
    method's own view (SOLVED when its criterion was met), which ``solve`` re-judges by the error
    measure. ``nit`` counts the method's main iterations (sweeps, pivots, Newton steps).
    ``complete=True`` says that ``x`` holds every variable of the problem and ``error`` is the
    problem's own measure of them, computed by the same formula (``solve`` then does not recompute).
    ``message`` may be given as (format, values), made into a str when it is read.
    """

    def __init__(self, x, status=Status.SOLVED, nit=0, history=None, message="", info=None, build_time=0.0,
                 error=None, complete=False):
        self.x, self.status, self.nit, self.history, self._message = x, status, nit, history, message
        self.info = {} if info is None else info
        self.build_time, self.error, self.complete = build_time, error, complete

    message = lazy_message()

    def __repr__(self):
        return f"Outcome(status={self.status.value!r}, nit={self.nit}, variables={sorted(self.x)})"


class MethodInfo:
    """A registered method: ``kind``, ``name``, ``func(problem, mon, **options) -> Solution``
    (``mon.solution(...)``; or an :class:`Outcome`), its one-line ``summary``, its own ``options``
    (the keyword-only parameters of ``func``) with their ``defaults`` (read from the signature,
    once), ``applies(problem) -> None | reason`` and ``check(**options) -> dict``, the method's check
    of its options (run once per distinct option values: :meth:`call_options`)."""

    __slots__ = ("kind", "name", "func", "summary", "options", "defaults", "applies", "check", "_checked", "bare")

    def __init__(self, kind, name, func, summary, options, defaults, applies=None, check=None):
        self.kind, self.name, self.func, self.summary = kind, name, func, summary
        self.options, self.defaults, self.applies, self.check = options, defaults, applies, check
        self._checked = {}
        #: True once the checked defaults are known to be the defaults themselves (same values and
        #: types): a call without options then calls ``func(problem, mon)``, which takes them from
        #: its signature (:func:`nsopt.solve`)
        self.bare = False

    def call_options(self, options: dict) -> dict:
        """The options ``func`` is called with: the method's ``check`` of its defaults updated by
        ``options`` (unknown ones raise :class:`OptionError`), remembered per distinct values (keyed
        with their types: ``True`` is not ``1``); without a ``check``, ``options`` as given."""
        if not options:
            hit = self._checked.get(())     # (the common call: the defaults)
            if hit is not None:
                return hit
            key = ()
        else:
            bad = [k for k in options if k not in self.options]
            if bad:
                options = renamed(options, self.options, f"method {self.name!r}")
                bad = [k for k in options if k not in self.options]
            if bad:
                raise OptionError(f"unknown option(s) {bad} for method {self.name!r} on {self.kind}; "
                                  f"valid options: {list(self.options) + list(COMMON)}")
            if self.check is None:
                return options
            key = option_key(options)
            hit = self._checked.get(key) if key is not None else None
            if hit is not None:
                return hit
        opts = options if self.check is None else self.check(**{**self.defaults, **options})
        if key is not None and len(self._checked) < 256:
            self._checked[key] = opts
        if key == ():
            self.bare = not opts or (len(opts) == len(self.defaults)
                                     and option_key(opts) == option_key(self.defaults) is not None)
        return opts


def option_key(options: dict):
    """A hashable key of option values (each with its type), or None when one is not hashable."""
    try:
        k = tuple(sorted((n, type(v), v) for n, v in options.items()))
        hash(k)
    except TypeError:
        return None
    return k


_HERE = os.path.dirname(os.path.abspath(__file__))      # nsopt's directory (renamed's warnings skip it)
_REGISTRY: dict[tuple[str, str], MethodInfo] = {}
COMMON = ("tol", "max_iter", "time_limit", "history", "callback", "warm_start", "workspace")
ALIASES = ("z0", "r0", "v0")    # the per-method initial-guess options of nsopt 0.1, now warm_start

#: The glossary of option names: each name means one thing in every method that takes it
#: (:func:`register` refuses a method whose option is not here). The common options first, then the
#: methods' own, alphabetically. Shown on the docs page of :func:`nsopt.solve` (``{nsopt-options}``).
OPTIONS: Mapping[str, str] = MappingProxyType({
    # the common options (nsopt.solve's own keywords, handled by the monitor)
    "tol": "target of the problem's Siconos error measure; SOLVED iff error <= tol",
    "max_iter": "the method's budget of main iterations (sweeps, pivots, Newton or outer steps)",
    "time_limit": "wall-clock budget in seconds",
    "history": "record the error after every iteration",
    "callback": "called after every iteration with an nsopt.Iterate; StopIteration stops",
    "warm_start": "where to start: a Solution, a dict of the problem's variables or an array",
    "workspace": "an nsopt.Workspace reused across the solves of a loop",
    "z0": "alias of warm_start (the primal z of an LCP, MLCP, Relay, AVI)",
    "r0": "alias of warm_start (the reaction r of a friction problem)",
    "v0": "alias of warm_start (the velocity v of a global friction problem)",
    # the methods' own options
    "anderson": "memory of the Anderson acceleration of a fixed point (0: plain iteration)",
    "armijo": "sufficient-decrease constant c of the Armijo line search: f(x + t d) <= f(x) + c t slope",
    "backend": "the CVXPY backend of a convex method (\"CLARABEL\", \"SCS\", \"OSQP\", ...)",
    "backend_options": "the backend's own settings (a dict), merged over nsopt.formulations.ACCURATE",
    "backtrack_factor": "the factor a rejected line-search step t is multiplied by (0 < factor < 1)",
    "compliance": "the compliance model of the LZB impact law (\"bi\" or \"mono\" stiffness)",
    "cover": "Lemke's covering vector d (the column of the artificial variable)",
    "dense_max": "largest number of unknowns solved with dense LAPACK (else the sparse LU)",
    "descent_coef": "a Newton direction d is replaced by the gradient's when grad.d > -descent_coef "
                    "||d||^descent_exp",
    "descent_exp": "the exponent of ||d|| in the descent test (see descent_coef)",
    "direct": "update the conic backend in place (Clarabel) instead of CVXPY's solving chain",
    "end_energy": "as tol_energy, in the LZB termination rule (Siconos' ZeroEner_EndIm)",
    "end_velocity": "as tol_velocity, in the LZB termination rule (Siconos' ZeroVel_EndIm)",
    "equalities": "how the equality blocks of a generic mechanical problem are treated",
    "fb_scale": "the factor s of the Fischer-Burmeister function taken on (r, s u) (same zeros)",
    "formulation": "an already built formulation object of this problem, reused",
    "grow": "factor the proximal weight sigma is multiplied by after an inner solve that failed",
    "hybrid": "continue a stalled Newton with proximal-point iterations from its best iterate",
    "impulse_step": "the step on the primary contact's impulse of the LZB integration (Siconos' DelP)",
    "inexact": "the backend's tolerances follow the fixed point's error",
    "inner": "the inner Newton of each proximal step (\"ac\" Alart-Curnier or \"fb\" Fischer-Burmeister)",
    "lcp": "the complementarity function of the LCP blocks (\"fb\" or \"nm\")",
    "line_search": "the line search of a Newton method (\"nonmonotone\", \"armijo\", \"none\")",
    "linear_solver": "how the Newton system is solved (\"auto\", \"dense\" LAPACK, \"sparse\" LU)",
    "local_max_iter": "iteration budget of each inner solve (nsgs: the per-contact local solver; prox: the "
                      "inner Newton of one proximal step)",
    "local_tol": "tolerance of nsgs' per-contact local solver",
    "max_backtracks": "the most steps a line search shortens before it gives up (or falls back)",
    "omega": "relaxation parameter of a Gauss-Seidel sweep, in (0, 2)",
    "piv_tol": "relative size below which a pivot column entry does not block",
    "polish": "refine the method's last iterate (an active-set solve or Newton steps)",
    "polish_at": "error below which the Newton polish starts",
    "polish_steps": "Newton iterations per polish",
    "prox": "weight of the proximal term prox/2 ||r - r_k||^2 in socp-fp's programs (a singular W)",
    "record_bases": "record the basis of every pivot",
    "reduction": "how the problem is reduced to an LCP before pivoting",
    "reg": "the Levenberg-Marquardt regularisation constant of the Newton matrix",
    "reg_step": "a plain Newton step cut below this by the line search is retried regularised",
    "restarts": "pivoting restarts with a new covering vector after a ray termination",
    "resync": "sweeps between recomputations of the local velocities from scratch",
    "reuse_solver": "keep one backend solver updated in place across the fixed point's solves",
    "rho": "the Alart-Curnier parameters (rho_N, rho_T): a number, a pair or \"auto\"",
    "safeguard": "the merit of the Anderson safeguard (\"residual\" or \"error\")",
    "scale": "scale each contact's block diagonally in the conic program",
    "seed": "seed of the random contact order (with shuffle)",
    "shrink": "factor the proximal weight sigma is divided by after a fast inner solve",
    "shuffle": "sweep the contacts in a random order",
    "sigma": "weight of the proximal term sigma (r - r_k) (prox: its initial value, then adapted)",
    "stall_window": "iterations without a new best error before STALLED",
    "tie_tol": "relative tolerance under which two ratios of the ratio test tie",
    "tol_energy": "stored energy below which it counts as zero when LZB classifies contacts (Siconos' "
                  "Tol_Ener)",
    "tol_velocity": "threshold below which a relative velocity counts as non-negative when LZB classifies "
                    "contacts (Siconos' Tol_Vel)",
})

#: Option names of nsopt 0.1 renamed so that a name means one thing everywhere (:data:`OPTIONS`):
#: old name -> new name. An old name given to a method that takes the new name (and not the old)
#: still works for one release, with a DeprecationWarning naming the new one (:func:`renamed`).
RENAMED: Mapping[str, str] = MappingProxyType({
    "solver": "backend", "solver_options": "backend_options",       # the convex methods (STYLE §5)
    "max_ls": "max_backtracks",                                     # newton-fb: as gmp's nsn
    "inner_iter": "local_max_iter",                                 # prox: as nsgs
    "sigma": "armijo", "beta": "backtrack_factor",                  # newton-fb's line search
    "rho": "descent_coef", "p_exp": "descent_exp",                  # newton-fb's descent test
    "scale": "fb_scale",                                            # nsn-fb
})


def renamed(options: dict, accepted: Collection[str], where: str, *, warn: bool = True) -> dict:
    """``options`` with each old name of :data:`RENAMED` that ``accepted`` lacks but whose new name it
    has replaced by the new name, with a DeprecationWarning naming it that points at the first caller
    outside nsopt (the one place where renamed options are translated: the methods, ``method="auto"``,
    the formulation classes; ``warn=False``: a check of a campaign's method specs, before the solves)."""
    old = [k for k in options if k in RENAMED and k not in accepted and RENAMED[k] in accepted]
    if not old:
        return options
    out = dict(options)
    stacklevel, frame = 1, sys._getframe(0)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_HERE):
        frame, stacklevel = frame.f_back, stacklevel + 1
    for k in old:
        new = RENAMED[k]
        if new in options:
            raise OptionError(f"{where}: {k!r} is the old name of {new!r}; give {new!r} only")
        if warn:
            warnings.warn(f"{where}: option {k!r} is renamed {new!r} (the old name is accepted until the next "
                          f"release)", DeprecationWarning, stacklevel=stacklevel)
        out[new] = out.pop(k)
    return out


#: The class of each kind's problem, for the ``problem`` parameter of the registered methods' docstrings.
_PROBLEM_CLASS = MappingProxyType({"lcp": "LCP", "mlcp": "MLCP", "relay": "Relay", "avi": "AVI", "equality": "Equality",
                  "fc2d": "FrictionContact", "fc3d": "FrictionContact", "gfc2d": "GlobalFrictionContact",
                  "gfc3d": "GlobalFrictionContact", "multiple-impact": "MultipleImpact"})

#: The sections every registered method's docstring shares (its parameters, the result and how it is
#: called), put where its docstring says ``{solve_contract}`` (:func:`nsopt._doc.insert_section`) by
#: :func:`_contract_doc`, which adds the ``problem`` parameter of the method's kinds before it and the
#: examples' imports after it; the docstring's own examples follow the marker.
SOLVE_CONTRACT_DOC = """mon : nsopt.monitor.Monitor
    The iteration contract :func:`nsopt.solve` builds from ``tol``, ``max_iter``, ``time_limit``,
    ``warm_start``, ``callback`` and ``history``: it judges every iterate and keeps the best.

Returns
-------
nsopt.Solution
    Made by the monitor: ``status``, the problem's variables, ``error`` (recomputed by nsopt),
    ``nit``.

Examples
--------
Called through :func:`nsopt.solve` (its method-specific options are keywords of ``solve``):"""


def _contract_doc(kinds: tuple[str, ...]) -> str:
    """:data:`SOLVE_CONTRACT_DOC` with the Parameters heading and the ``problem`` of ``kinds`` before it."""
    classes = list(dict.fromkeys(f"nsopt.{_PROBLEM_CLASS[k]}" if k in _PROBLEM_CLASS else "nsopt problem"
                                 for k in kinds))
    ticks = ", ".join(f"``{k}``" for k in kinds)
    types = f"{', '.join(classes[:-1])} or {classes[-1]}" if len(classes) > 1 else classes[0]
    return (f"Parameters\n----------\nproblem : {types}\n"
            f"    The problem (kind{'s' if len(kinds) > 1 else ''} {ticks}).\n"
            f"{SOLVE_CONTRACT_DOC}\n\n>>> import numpy as np, nsopt")


def register(kinds, name: str, summary: str, *, applies: Callable | None = None, check: Callable | None = None):
    """Decorator: register ``func(problem, mon, **options) -> Solution`` (what ``mon.solution(...)``
    makes, or an :class:`Outcome`) for one or more kinds.

    ``mon`` is the :class:`~nsopt.monitor.Monitor` that :func:`nsopt.solve` built from the common
    options (``tol, max_iter, time_limit, history, callback, warm_start``); the method's own options
    are its keyword-only parameters, whose defaults are the method's defaults. ``applies(problem)``
    returns None or the reason why the method does not apply to an instance (checked before solving).
    ``check(**options) -> dict`` (optional) validates and converts all the method's options (the
    defaults of its signature updated by the caller's) once per distinct values; ``func`` is then
    called with its result. ``kinds`` is a kind or a tuple of kinds (``"lcp"``, ``"fc3d"``, ...).
    """
    if isinstance(kinds, str):
        kinds = (kinds,)

    def deco(func):
        sig = inspect.signature(func)
        kw = [p for p in sig.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
        opts = tuple(p.name for p in kw)
        defaults = {p.name: p.default for p in kw if p.default is not p.empty}
        clash = [o for o in opts if o in COMMON]
        if clash:
            raise TypeError(f"method {name!r}: {clash} are common options, handled by the monitor")
        unnamed = [o for o in opts if o not in OPTIONS]
        if unnamed:
            raise TypeError(f"method {name!r}: option(s) {unnamed} are not in the glossary "
                            f"(nsopt.registry.OPTIONS): name them there, with the one thing they mean")
        for k in kinds:
            if (k, name) in _REGISTRY:
                raise ValueError(f"method {name!r} registered twice for kind {k!r}")
            _REGISTRY[(k, name)] = MethodInfo(k, name, func, summary, opts, defaults, applies, check)
        func.__doc__ = insert_section(func.__doc__, "solve_contract", _contract_doc(kinds))
        return func

    return deco


def has(kind: str, name: str) -> bool:
    return (kind, name) in _REGISTRY


def get(kind: str, name: str) -> MethodInfo:
    try:
        return _REGISTRY[(kind, name)]
    except KeyError:
        valid = sorted(n for (k, n) in _REGISTRY if k == kind)
        others = sorted({k for (k, n) in _REGISTRY if n == name})
        hint = f" ({name!r} exists for: {', '.join(others)})" if others else ""
        raise MethodNotFound(f"unknown method {name!r} for a {kind} problem{hint}; "
                             f"valid methods: {', '.join(['auto'] + valid)}") from None


def for_kind(kind: str) -> list[MethodInfo]:
    return [m for (k, _), m in sorted(_REGISTRY.items()) if k == kind]


def kinds() -> list[str]:
    return sorted({k for k, _ in _REGISTRY})
