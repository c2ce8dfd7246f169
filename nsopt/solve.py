"""``nsopt.solve``: the one entry point; ``nsopt.methods``: what applies to a problem."""

from __future__ import annotations

import math
import numbers
import sys
import time

import numpy as np

from . import registry
from .exceptions import MethodNotFound, NotApplicable, OptionError
from .monitor import Monitor, Workspace
from .problems._base import FLOAT64, Problem, all_finite
from .result import Solution, Status

_ALIASES = ("z0", "r0", "v0")    # the per-method initial-guess options of nsopt 0.1, now warm_start


def _kind(problem) -> str:
    if not isinstance(problem, Problem):
        raise TypeError(f"nsopt.solve needs an nsopt problem (nsopt.problems.*), got {type(problem).__name__}")
    return problem.kind


def methods(problem) -> dict[str, str]:
    """The methods that apply to ``problem`` (or to a kind given as a string), each with one line."""
    kind = problem if isinstance(problem, str) else _kind(problem)
    from . import solvers  # noqa: F401  (fills the registry)

    out = {"auto": "the documented policy (nsopt.policy): tries methods in order, records the path taken"}
    for m in registry.for_kind(kind):
        if not isinstance(problem, str) and m.applies is not None and m.applies(problem):
            continue
        out[m.name] = m.summary
    return out


# ------------------------------------------------------------------------------------- options
def check_tol(tol) -> float:
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not (0 < float(tol) < math.inf):
        raise OptionError(f"tol must be a finite positive number, got {tol!r}")
    return float(tol)


def check_max_iter(max_iter):
    if max_iter is None:
        return None
    if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 0:
        raise OptionError(f"max_iter must be a non-negative integer or None, got {max_iter!r}")
    return int(max_iter)


def check_time_limit(time_limit):
    if time_limit is None:
        return None
    if isinstance(time_limit, bool) or not isinstance(time_limit, numbers.Real) or not float(time_limit) >= 0:
        raise OptionError(f"time_limit must be a non-negative number of seconds or None, got {time_limit!r}")
    t = float(time_limit)
    return None if t == math.inf else t


def _check_workspace(workspace):
    if workspace is not None and not isinstance(workspace, Workspace):
        raise OptionError(f"workspace must be an nsopt.Workspace or None, got {type(workspace).__name__}")
    return workspace


def warm_start_of(problem, warm_start, label="warm_start") -> dict | None:
    """The warm start as a dict of the problem's variables (float arrays of the right sizes).

    Accepts a :class:`Solution`, a dict of variables, or an array of the problem's primal variable."""
    if warm_start is None:
        return None
    if isinstance(warm_start, Solution):
        sizes = problem.variable_sizes()
        if warm_start.problem is not None and getattr(warm_start.problem, "kind", None) == problem.kind \
                and math.isfinite(warm_start.error):
            # a finite solution of a problem of this kind: its variables are finite arrays made by
            # nsopt; only their sizes are checked (the common re-solve loop, kept cheap)
            out = {}
            for name in (problem.primal, "v"):
                a = getattr(warm_start, name, None)
                if name in sizes and a is not None and a.shape == (sizes[name],):
                    out[name] = a
            if problem.primal in out:
                return out
        x = warm_start.variables()
    elif isinstance(warm_start, dict):
        x = warm_start
    else:
        x = {problem.primal: warm_start}
    sizes = problem.variable_sizes()
    derived = ("w", "u") if problem.primal in x else ()   # determined by the primal one: never a start
    out = {}
    for name, value in x.items():
        if name not in sizes or name in derived:
            continue
        try:
            a = np.array(value, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise OptionError(f"{label}: {name} is not a numeric vector") from None
        if a.shape[0] != sizes[name] or not np.all(np.isfinite(a)):
            raise OptionError(f"{label}: {name} must be a finite vector of size {sizes[name]}, "
                              f"got shape {np.shape(value)}")
        out[name] = a
    if not out:
        raise OptionError(f"{label}: none of {sorted(x)} is a variable of this {problem.kind} problem "
                          f"({', '.join(sizes)})")
    return out


def _pop_aliases(problem, info, options, x0):
    """z0 / r0 / v0 given to a method that does not take them itself: they are warm starts."""
    for a in _ALIASES:
        if a in options and a not in info.options:
            v = options.pop(a)
            if v is not None:
                w = warm_start_of(problem, {a[0]: v}, label=a)
                x0 = {**(x0 or {}), **w}
    return x0


# ------------------------------------------------------------------------------------- running
def run_method(problem, kind, info, tol, max_iter, options, *, time_limit=None, history=False,
               callback=None, x0=None, workspace=None):
    """Call one registered method under the iteration contract and judge its iterate by the
    problem's error measure."""
    given = dict(options)
    x0 = _pop_aliases(problem, info, options, x0)
    bad = [k for k in options if k not in info.options]
    if bad:
        raise OptionError(f"unknown option(s) {bad} for method {info.name!r} on {kind}; "
                          f"valid options: {list(info.options) + list(registry.COMMON)}")
    t0 = time.perf_counter()
    if problem.size == 0:   # every method: the trivial solution of an empty problem
        out = registry.Outcome(x={problem.primal: np.zeros(0)}, nit=0, history=[0.0] if history else None,
                               message="empty problem")
    elif (why := problem.infeasibility()) is not None:   # every method: a certified empty problem
        x = {problem.primal: np.zeros(problem.size)}
        out = registry.Outcome(x=x, status=Status.INFEASIBLE, nit=0, message=why,
                               history=[float(problem.error_of(problem.complete(x)))] if history else None,
                               info={"certificate": "problem"})
    else:
        mon = Monitor(tol=tol, max_iter=max_iter, time_limit=time_limit, history=history,
                      callback=callback, x0=x0, workspace=workspace)
        out = info.func(problem, mon, **options)
    return out.solution(problem, tol, info.name, t0, given)


def solve(problem, method: str = "auto", tol: float = 1e-8, max_iter: int | None = None, *,
          time_limit: float | None = None, history: bool = False, callback=None, warm_start=None,
          workspace=None, select=None, **options) -> Solution:
    """Solve a one-step nonsmooth problem.

    Parameters
    ----------
    problem : an ``nsopt.problems`` object (LCP, MLCP, Relay, Equality, AVI, FrictionContact,
        GlobalFrictionContact, GenericMechanical, ...).
    method : a name from :func:`methods`, or ``"auto"`` (the policy of :mod:`nsopt.policy`).
    tol : target of the problem's Siconos error measure; ``Solution.status`` is SOLVED iff error <= tol.
    max_iter : the method's iteration budget (None: the method's default).
    time_limit : wall-clock budget in seconds (None: none); ``Status.TIME_LIMIT`` with the best
        iterate when it runs out. One-off builds that cannot be interrupted are not counted and are
        reported as ``Solution.build_time``.
    history : record the error after every iteration (``history[0]``: the starting point).
    callback : ``callback(it)`` after every iteration with an :class:`nsopt.Iterate`; raising
        ``StopIteration`` stops with ``CALLBACK_STOP`` (``callback(k, x, err)`` is accepted too).
    warm_start : where to start: a previous :class:`Solution`, a dict of the problem's variables, or
        an array of its primal variable (``z`` or ``r``). ``z0``/``r0``/``v0`` are accepted as aliases.
    workspace : an :class:`nsopt.Workspace` kept across the solves of a loop (same matrices, new
        q): the method reuses what it built there (splits, work arrays, Newton pattern), and the
        next calls with the same method and options (and no ``history``, ``callback`` or
        ``time_limit``) take the method's re-solve plan: no option checks, no registry look-up,
        the whole loop in one compiled call where the method has one, the same Solution.
        Methods that build nothing reusable ignore it. Not used by ``method="auto"``.
    select : None (the method's solution), or a rule that chooses among the solutions when there
        are several (``nsopt.sensitivity.select.SELECT_RULES``): ``"min-norm"``, the solution of
        least norm of z (or r), through the convex view where the solution set is convex;
        ``Solution.info["select"]`` says what was done and whether it is guaranteed.
    **options : the method's own options (see ``help`` of the method, or :func:`methods`); an
        unknown option raises :class:`OptionError`.

    Returns
    -------
    Solution
        Never raises on non-convergence: the best iterate comes back with a status.
    """
    if select is not None:   # which solution (issue 21): the method's, then the rule's choice
        from .sensitivity.select import check_select, select as select_solution

        check_select(select)
        return select_solution(solve(problem, method, tol, max_iter, time_limit=time_limit, history=history,
                                     callback=callback, warm_start=warm_start, workspace=workspace, **options),
                               select)
    key = None
    if workspace is not None and callback is None and time_limit is None and not history \
            and type(tol) is float and type(method) is str and (max_iter is None or type(max_iter) is int) \
            and isinstance(workspace, Workspace):
        # the lean path of a re-solve loop: the plan the method left in the workspace (see Workspace)
        key = (method, tol, max_iter) if not options else _plan_key(method, tol, max_iter, options)
        plan = workspace._plans.get(key) if key is not None else None
        if plan is not None:
            sol = plan(problem, warm_start, options)
            if sol is not None:
                return sol
    kind = _kind(problem)
    if "nsopt.solvers" not in sys.modules:
        from . import solvers  # noqa: F401  (fills the registry)

    tol = tol if type(tol) is float and 0.0 < tol < math.inf else check_tol(tol)
    max_iter = check_max_iter(max_iter)
    time_limit = check_time_limit(time_limit)
    x0 = warm_start_of(problem, warm_start)
    if method == "auto":
        from .policy import solve_auto

        return solve_auto(problem, kind, tol, max_iter, options, time_limit=time_limit, history=history,
                          callback=callback, x0=x0)
    if not isinstance(method, str):
        raise MethodNotFound(f"method must be a name (str), got {type(method).__name__}")
    info = registry.get(kind, method)
    if info.applies is not None:
        why = info.applies(problem)
        if why:
            raise NotApplicable(f"method {method!r} does not apply to this {kind} problem: {why}")
    given = dict(options)
    sol = run_method(problem, kind, info, tol, max_iter, options, time_limit=time_limit, history=history,
                     callback=callback, x0=x0, workspace=_check_workspace(workspace))
    if key is not None:
        plan = info.plan(problem, tol, max_iter, given, workspace, info=info) if info.plan else None
        if plan is None:
            plan = _DirectPlan.make(problem, tol, max_iter, given, workspace, info=info)
        if plan is not None:
            workspace._plans[key] = plan
    return sol


class _DirectPlan:
    """The re-solve plan of a method that has none of its own: the method's function called
    directly with its options checked once and a bare monitor (no registry look-up, no option
    checks), for a problem whose fields other than q are the very objects of the first solve
    (so ``applies`` and the method's structural checks still hold). The same calls as the
    full path, so the same Solution."""

    def __init__(self, problem, tol, max_iter, options, workspace, info):
        self.info, self.tol, self.max_iter, self.ws = info, tol, max_iter, workspace
        self.cls, self.kind = type(problem), problem.kind
        self.fixed = [(f, getattr(problem, f)) for f in problem._fields if f != "q"]
        self.options = options

    @classmethod
    def make(cls, problem, tol, max_iter, options, workspace, info):
        if any(k not in info.options for k in options):     # aliases (z0, r0, v0): the full path maps them
            return None
        return cls(problem, tol, max_iter, options, workspace, info)

    def __call__(self, problem, warm_start, options):
        t0 = time.perf_counter()
        if type(problem) is not self.cls or any(getattr(problem, f) is not v for f, v in self.fixed):
            return None
        name = problem.primal
        if warm_start is None:
            x0 = None
        elif type(warm_start) is Solution and type(warm_start.problem) is self.cls \
                and warm_start.problem.kind == self.kind and math.isfinite(warm_start.error):
            x0 = warm_start_of(problem, warm_start)
        elif type(warm_start) is np.ndarray and warm_start.dtype == FLOAT64 and warm_start.ndim == 1 \
                and warm_start.shape[0] == problem.size and all_finite(warm_start):
            x0 = {name: warm_start.copy()}
        else:
            return None
        if problem.size == 0 or problem.infeasibility() is not None:
            return None
        mon = Monitor(tol=self.tol, max_iter=self.max_iter, x0=x0, workspace=self.ws)
        out = self.info.func(problem, mon, **self.options)
        return out.solution(problem, self.tol, self.info.name, t0, dict(options))


def _plan_key(method, tol, max_iter, options):
    """The key of a re-solve plan in a workspace, or None when the options cannot be one (a value
    that is not hashable). Option values are keyed with their type (``True`` is not ``1``)."""
    try:
        k = (method, tol, max_iter, tuple(sorted((n, type(v), v) for n, v in options.items())))
        hash(k)
    except TypeError:
        return None
    return k


__all__ = ["MethodNotFound", "methods", "solve"]
