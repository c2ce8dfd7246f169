"""Time stepping (Siconos ``TimeStepping``): one OSNS problem per step, solved by :func:`nsopt.solve`,
and the :class:`Trajectory` it records."""

from __future__ import annotations

import inspect
import math
import re
import signal
import sys
import threading
import time
import warnings
from pathlib import Path
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from .._doc import insert_section
from ..exceptions import ModelingError, NsoptWarning, StepFailed
from ..io._target import check_folder
from ..problems import (
    AVI,
    LCP,
    MLCP,
    Equality,
    FrictionContact,
    GenericMechanical,
    GlobalFrictionContact,
    Relay,
)
from ..result import Status
from ..policy import POLICY
from ..solve import solve
from . import _state
from ._check import label, scalar
from ._local_error import NO_ERROR, LocalError
from .differentiable import Derivatives
from .interactions import NonSmoothDynamicalSystem
from .osi import EulerMoreauOSI, MoreauJeanOSI, StepRecord

# the clock of Trajectory.solve_time (cheap: a wall clock); a benchmark on a shared machine may set
# time.thread_time, which leaves out the time the thread was not running (about 1 µs per call)
SOLVE_CLOCK = time.perf_counter

OSNS_KINDS = ("lcp", "mlcp", "relay", "avi", "equality", "fc2d", "fc3d", "gfc3d", "gmp")

# which block kinds each OSNS kind can hold
_HOLDS = {
    "lcp": {"lcp"}, "mlcp": {"lcp", "equality"}, "relay": {"relay"}, "avi": {"avi", "lcp"},
    "equality": {"equality"}, "fc2d": {"fc2d"}, "fc3d": {"fc3d"}, "gfc3d": {"fc3d"},
    "gmp": {"lcp", "equality", "relay", "fc2d", "fc3d"},
}


# one-step problem kinds added by other modeling modules (nsopt.modeling.impact adds "multiple-impact"):
# kind -> builder(asm, laws, previous) -> problem (previous: the last step's problem when asm.W is None,
# i.e. same active set and constant operators); the module also fills _HOLDS[kind] and the policy's run order
# (nsopt.policy.POLICY.set(kind, run=...))
OSNS_BUILDERS: dict = {}


def check_solver_options(osns: str, method, fallback, tol, options: dict) -> float:
    """Check, before the first step, what every step hands to :func:`nsopt.solve`, as it would check it: ``method``
    and each ``fallback`` registered for the one-step problem's kind (:class:`~nsopt.exceptions.MethodNotFound`),
    ``tol``, the common options and the method's own (:class:`~nsopt.exceptions.OptionError` for an unknown one or a
    bad value). A kind added by :func:`register_osns` whose problems are not of a registered kind is left to the
    first solve. Returns ``tol`` as a float."""
    from .. import registry
    from ..exceptions import MethodNotFound, OptionError
    from ..monitor import Workspace, check_max_iter, check_time_limit, check_tol
    from ..solve import methods

    tol = check_tol(tol)
    if len(methods(osns)) == 1:         # only "auto": no method registered for problems of that kind
        return tol
    for m in (method, *fallback):
        if not isinstance(m, str):
            raise MethodNotFound(f"method must be a name (str), got {type(m).__name__}")
        registry.get(osns, m)           # MethodNotFound listing the methods of the kind
    if "warm_start" in options:
        raise OptionError("warm_start is the simulation's (TimeStepping(warm_start=True): the previous step's "
                          "multipliers), not an option of the solver")
    own = {k: v for k, v in options.items() if k not in registry.COMMON and k not in registry.ALIASES and k != "select"}
    check_max_iter(options.get("max_iter"))
    check_time_limit(options.get("time_limit"))
    cb = options.get("callback")
    if cb is not None and not callable(cb):
        raise OptionError(f"callback must be a callable callback(intermediate) or None, got {type(cb).__name__}")
    ws = options.get("workspace")
    if ws is not None and not isinstance(ws, Workspace):
        raise OptionError(f"workspace must be an nsopt.Workspace or None, got {type(ws).__name__}")
    if options.get("select") is not None:
        from ..sensitivity.select import check_select
        check_select(options["select"])
    registry.get(osns, method).call_options(own)      # OptionError for an unknown option or a bad value
    return tol


def infer_osns(blocks: set) -> str:
    """The smallest OSNS kind that holds every block kind in ``blocks``."""
    for kind in ("lcp", "equality", "relay", "fc2d", "fc3d", "mlcp", "avi", "gmp", *OSNS_BUILDERS):
        if blocks <= _HOLDS[kind]:
            return kind
    return "gmp"


def _new_workspace():
    """An ``nsopt.Workspace`` (the methods' built state kept between solves of problems sharing W),
    where the installed nsopt has one; None otherwise."""
    try:
        from ..monitor import Workspace
    except ImportError:
        return None
    return Workspace()


MAX_STEPS = 2 ** 53       # a run counts its steps exactly (t_k = t0 + k h) up to this many

#: The rule of the number of steps (TimeStepping and Scene.run alike): a run takes N = (T - t0) / h steps and its last
#: step ends at T; an interval that is not a whole number of steps (to STEP_RTOL N) is refused, h > T included
#: (Siconos would stop at the last whole step before T, t0 + floor((T - t0)/h) h, without a word).
STEP_RULE = "the last step ends at T: (T - t0) / h must be a whole number of steps"
STEP_RTOL = 1e-9


def whole_steps(t0: float, T: float, h: float, owner="TimeStepping") -> int:
    """N = (T - t0) / h, the number of steps of a run (``STEP_RULE``); a :class:`ModelingError` naming T and
    h, with the nearest T and h that fit, when it is not a whole number (to ``STEP_RTOL`` N).

    Examples
    --------
    >>> from nsopt.modeling.simulation import whole_steps
    >>> whole_steps(0.0, 1.0, 1e-3)
    1000
    >>> whole_steps(0.0, 0.105, 0.01)
    Traceback (most recent call last):
    ...
    nsopt.exceptions.ModelingError: TimeStepping.T: [t0, T] = [0, 0.105] is 10.5 steps of h = 0.01, not a whole number (the last step ends at T): give T = 0.1 or 0.11, or h = 0.00954545 (11 steps)
    """
    span = T - t0
    n = span / h if span > 0 else 0.0
    N = round(n)
    if abs(n - N) <= STEP_RTOL * max(1.0, n):
        return int(N)
    lo, hi = math.floor(n), math.floor(n) + 1
    raise ModelingError(owner, "T", f"[t0, T] = [{t0:g}, {T:g}] is {n:.6g} steps of h = {h:g}, not a whole number (the "
                                    f"last step ends at T): give T = " + (f"{t0 + lo * h:.6g} or " if lo else "") +
                        f"{t0 + hi * h:.6g}, or h = {span / hi:.6g} ({hi} step{'s' if hi > 1 else ''})")


class TimeStepping:
    """Time-stepping simulation of a :class:`NonSmoothDynamicalSystem` (Siconos ``TimeStepping``).

    Parameters
    ----------
    nsds : the systems and interactions, over [t0, T].
    h : time step (> 0); the run takes whole steps, its last ending at T (``STEP_RULE``): (T - t0) / h must
        be a whole number (to 1e-9 of it), else a :class:`~nsopt.exceptions.ModelingError` gives the T and h
        that fit (h > T included).
    integrator : :class:`MoreauJeanOSI` (Lagrangian systems) or :class:`EulerMoreauOSI` (first
        order); None: the one that fits, with θ = 1/2.
    osns : the one-step problem kind: ``"lcp"``, ``"mlcp"``, ``"relay"``, ``"avi"``, ``"equality"``,
        ``"fc2d"``, ``"fc3d"``, ``"gfc3d"``, ``"gmp"``; None: the smallest kind that holds the laws. A law
        it cannot hold is refused, at construction and when it is linked during the run (a friction law
        in an ``"lcp"`` run would lose its friction).
    method, tol, **options : handed to :func:`nsopt.solve` at every step, and checked here as it checks
        them (:func:`check_solver_options`: ``MethodNotFound``, ``OptionError`` before the first step, not
        at the first contact). ``method="auto"`` takes the first method and the fallbacks of the kind's
        run order in :data:`nsopt.policy.POLICY` (Lemke for LCP/MLCP/Relay/AVI, Newton (nsn-ac) for
        friction, nsn for GenericMechanical, each with its fallbacks).
    fallback : methods tried in order when ``method`` does not reach ``tol`` on a step, by the policy's one
        fallback rule (:meth:`nsopt.policy.MethodPolicy.attempt`: ``method`` warm-started, ``method``
        cold when that failed, then each fallback from the best iterate so far, keeping the smallest
        error); they get the options that are not ``method``'s own (:data:`nsopt.policy.FALLBACK_OPTIONS`:
        ``select``, ``time_limit``, the budget of the step's attempts), so ``select="min-norm"`` reaches
        every step's solve, whichever method solved it.
    on_failure : ``"continue"`` (record the step as failed and go on) or ``"raise"``
        (:class:`~nsopt.exceptions.StepFailed`). A step fails when its OSNS problem is not solved to
        ``tol`` or its Newton loop does not reach ``newton_tol``; a state that is not finite or beyond
        1e100 (``nsopt.modeling._kernels.STATE_LIMIT``) always stops the run with ``StepFailed``, the
        last finite state kept.
    newton_tol, newton_max_iter : the Newton loop around the OSNS solve (nonlinear systems or relations).
    local_tol, on_local_error : the local error estimate of each step's smooth phase (the θ-scheme's, from
        the accelerations a = M⁻¹F at both ends of the step, ``formulations/time_stepping.md`` §6), recorded
        in ``Trajectory.local_error``: the largest error of a position or velocity relative to 1 + the
        size of that value. Above ``local_tol`` (default 0.05), ``on_local_error="warn"`` (the default)
        warns (:class:`~nsopt.exceptions.NsoptWarning`, once per run; ``Trajectory.inaccurate_steps`` lists
        them all), ``"fail"`` records the step as failed (``failed_steps``; ``on_failure="raise"``
        raises), ``"ignore"`` skips the estimate (NaN). A step whose implicit equations were solved to a
        spurious root, or whose h is too large for the motion, is flagged; its cost is one evaluation of
        the forces per nonlinear system and step, none for linear time-invariant systems without K, C.
    warm_start : start each solve from the previous step's λ (True by default).
    keep_problems : keep every step's OSNS problem in the trajectory (for :meth:`Trajectory.to_fclib`).
    progress : show a tqdm progress bar in :meth:`run`.
    continue_from : a :class:`TimeStepping` or :class:`Trajectory` of the same model: this run starts
        where that one stopped (its time, state, multipliers and warm starts) and goes to ``nsds.T``.
        Without it every run starts from the systems' initial conditions (``q0``, ``v0``; ``x0``) at
        ``nsds.t0``: two runs of one model give the same trajectory.
    differentiable : record what the derivatives of the run need (the index set, problem and impulses
        of every step with contact): then ``trajectory.gradient(loss, wrt)``, ``.vjp``, ``.jvp``,
        ``.jacobian`` differentiate the run with respect to ``q0``, ``v0``, ``fext``, masses, ``e``,
        ``mu`` (:mod:`nsopt.modeling.differentiable`, which says what is supported).
    on_step : a callable ``on_step(record)`` called after each committed step with a
        :class:`~nsopt.modeling.osi.StepRecord` (the active set, the problem and its solution, v_free,
        the rows H on demand): what an adjoint sweep over the steps needs. What it raises stops the
        run after that step (the trajectory complete up to it).

    The OSNS problem is rebuilt only when the active set changes or an operator is not constant;
    otherwise the previous one is reused with ``problem.replace(q=...)`` (its caches and
    factorisations shared). ``sim.step()`` advances one step; ``sim.run()`` to T. The integrator's
    state belongs to the simulation: a step that raises (a plug-in, the solver, Ctrl-C) leaves it
    and the trajectory as they were after the last complete step, and ``run()`` continues from there.
    """

    def __init__(self, nsds: NonSmoothDynamicalSystem, h: float, integrator=None, osns: str | None = None,
                 method: str = "auto", tol: float = 1e-8, *, fallback=(), on_failure: str = "continue",
                 newton_tol: float = 1e-6, newton_max_iter: int = 50, local_tol: float = 0.05,
                 on_local_error: str = "warn", warm_start: bool = True,
                 keep_problems: bool = False, progress: bool = False, continue_from=None, on_step=None,
                 differentiable: bool = False, name=None, **options):
        self.name = name
        o = label(self)
        if not isinstance(nsds, NonSmoothDynamicalSystem):
            raise ModelingError(o, "nsds", f"expected a NonSmoothDynamicalSystem, got {type(nsds).__name__}")
        if isinstance(h, bool) or not isinstance(h, (int, float, np.floating)) or not math.isfinite(h) or h <= 0:
            raise ModelingError(o, "h", f"time step must be a finite number > 0, got {h!r}")
        if not nsds.dynamical_systems:
            raise ModelingError(o, "nsds", "holds no dynamical system")
        self.nsds, self.h = nsds, float(h)
        prev = self._previous(continue_from, o)
        order = nsds.order
        if integrator is None:
            integrator = (prev.integrator if prev is not None else
                          MoreauJeanOSI(0.5) if order == 2 else EulerMoreauOSI(0.5))
        if not hasattr(integrator, "start"):
            raise ModelingError(o, "integrator", f"expected MoreauJeanOSI or EulerMoreauOSI, got {type(integrator).__name__}")
        if getattr(integrator, "order", order) != order:
            kinds = {1: "first-order", 2: "Lagrangian"}
            raise ModelingError(o, "integrator", f"{label(integrator)} integrates {kinds[integrator.order]} systems, "
                                                 f"but the systems are {kinds[order]}")
        self.integrator = integrator
        blocks = {i.nslaw.block for i in nsds.interactions}
        if osns is None:
            osns = infer_osns(blocks) if blocks else "lcp"
        if osns not in OSNS_KINDS and osns not in OSNS_BUILDERS:
            raise ModelingError(o, "osns", f"unknown one-step problem kind {osns!r}; expected one of {OSNS_KINDS}")
        bad = blocks - _HOLDS[osns]
        if bad:
            raise ModelingError(o, "osns", f"a {osns!r} problem cannot hold the laws of block kind(s) {sorted(bad)}; "
                                           f"use osns={infer_osns(blocks)!r}")
        if osns == "gfc3d" and order != 2:
            raise ModelingError(o, "osns", "a global friction-contact problem needs Lagrangian systems")
        if on_failure not in ("raise", "continue"):
            raise ModelingError(o, "on_failure", f"must be 'raise' or 'continue', got {on_failure!r}")
        if on_local_error not in ("warn", "fail", "ignore"):
            raise ModelingError(o, "on_local_error", f"must be 'warn', 'fail' or 'ignore', got {on_local_error!r}")
        self.local_tol = scalar(local_tol, o, "local_tol", low=0.0, low_open=True)
        self.on_local_error = on_local_error
        if on_step is not None and not callable(on_step):
            raise ModelingError(o, "on_step", f"must be a callable on_step(record), got {type(on_step).__name__}")
        self.osns_kind = osns
        self.custom_osns = OSNS_BUILDERS
        if isinstance(fallback, str) or not isinstance(fallback, (list, tuple)):
            raise ModelingError(o, "fallback", f"must be a sequence of method names, got {fallback!r}")
        if method == "auto":
            method, *rest = POLICY.run(osns)
            fallback = tuple(fallback) or tuple(rest)
        tol = check_solver_options(osns, method, fallback, tol, options)
        self.method, self.tol, self.options = method, tol, dict(options)
        self.fallback = tuple(fallback)
        self.on_failure = on_failure
        self.on_step = on_step
        self._tape = None
        if differentiable:          # issue 21: the steps' data for the derivatives (nsopt.modeling.differentiable)
            if continue_from is not None:
                raise ModelingError(o, "differentiable", "a run that continues another is not differentiated")
            from .differentiable import Tape

            self._tape = Tape(self)
        self.newton_tol = scalar(newton_tol, o, "newton_tol", low=0.0, low_open=True)
        if isinstance(newton_max_iter, bool) or not isinstance(newton_max_iter, int) or newton_max_iter < 1:
            raise ModelingError(o, "newton_max_iter", f"must be a positive integer, got {newton_max_iter!r}")
        self.newton_max_iter = newton_max_iter
        self.warm_start, self.keep_problems, self.progress = warm_start, keep_problems, progress
        self.t0 = prev.t if prev is not None else nsds.t0
        self.T = nsds.T
        self.n_steps = self._count(o)
        if prev is None:
            self._check_initial_state()
        self.t, self.k = self.t0, 0
        self._problem = None       # (key, problem) of the last assembly
        self._write = None          # the ProblemWriter of write_problems_to
        self._solve_time = 0.0
        self._last = None
        self._opts = (None, None)  # (self.options, the options handed to nsopt.solve with the run's Workspace)
        self._ws = None
        self._critical = self._interrupted = False
        self._stepper = integrator.start(self, source=None if prev is None else prev._stepper)
        self._local = None if on_local_error == "ignore" or not hasattr(integrator, "theta") else \
            LocalError(integrator.theta, self.h)
        self._local_warned = False
        self.trajectory = Trajectory(self)

    # ------------------------------------------------------------------ checks
    def _previous(self, src, o):
        if src is None:
            return None
        sim = src._sim if isinstance(src, Trajectory) else src
        if not isinstance(sim, TimeStepping):
            raise ModelingError(o, "continue_from", f"expected a TimeStepping or a Trajectory, got {type(src).__name__}")
        if sim.nsds is not self.nsds:
            raise ModelingError(o, "continue_from", f"{label(sim)} simulates another model ({label(sim.nsds)})")
        return sim

    def _count(self, o) -> int:
        """The number of steps in [t0, T], checked: finite, countable exactly, h above the resolution of t
        (so that t_k = t0 + k h advances), and a whole number (``STEP_RULE``): the last step ends at T."""
        span = self.T - self.t0
        n = span / self.h if span > 0 else 0.0
        if not math.isfinite(n) or n > MAX_STEPS:
            raise ModelingError(o, "h", f"[t0, T] = [{self.t0:g}, {self.T:g}] with h = {self.h:g} is {n:.3g} steps, more "
                                        f"than the {MAX_STEPS:.3g} a run can count: choose a larger h or a shorter interval")
        if span > 0 and (self.t0 + self.h == self.t0 or self.T - self.h == self.T):
            raise ModelingError(o, "h", f"h = {self.h:g} is below the resolution of the times around t0 = {self.t0:g}, "
                                        f"T = {self.T:g} (t0 + h == t0): the steps would not advance")
        return whole_steps(self.t0, self.T, self.h, o)

    def _check_initial_state(self):
        for ds in self.nsds.dynamical_systems:
            for fld in (("x0",) if ds.order == 1 else ("q0", "v0")):
                val = np.asarray(getattr(ds, fld), dtype=float)
                want = (getattr(ds, "qdim", ds.n),) if fld == "q0" else (ds.n,)
                if val.shape != want or not np.all(np.isfinite(val)):
                    raise ModelingError(label(ds), fld, "initial state has non-finite entries (nan or inf)"
                                        if val.shape == want else f"initial state has shape {val.shape}, expected {want}")

    def _check_linked(self, changes):
        """Interactions linked since the last step (all of them when the log no longer holds the changes) whose law
        the one-step problem cannot hold are refused, as at construction: an ``osns="lcp"`` run would drop a
        friction law linked during the run (as a Scene links its contacts) without a word."""
        holds = _HOLDS[self.osns_kind]
        new = self.nsds.interactions if changes is None else [x for w, x in changes if w == "link" and x.systems]
        for inter in new:
            block = inter.nslaw.block
            if block not in holds:
                blocks = {i.nslaw.block for i in self.nsds.interactions}
                raise ModelingError(label(self), "osns", f"{label(inter)}, linked at step {self.k}, has a law of block "
                                                         f"kind {block!r} ({label(inter.nslaw)}), which a {self.osns_kind!r} "
                                                         f"problem cannot hold (it would be dropped); use "
                                                         f"osns={infer_osns(blocks)!r}")

    # ------------------------------------------------------------------ the OSNS problem
    def _build(self, asm):
        return _BUILDERS[self.osns_kind](asm)

    def solve_assembly(self, asm):
        """Build (or reuse) the step's problem, solve it, return the stacked λ."""
        prev = self._problem
        reuse = asm.W is None and asm.glob is None and prev is not None and prev[0] == asm.key
        if self.osns_kind in OSNS_BUILDERS:
            problem = OSNS_BUILDERS[self.osns_kind](asm, _laws(asm), prev[1] if reuse else None)
        elif reuse:
            problem = prev[1].replace(q=asm.q)
        else:
            problem = self._build(asm)
        self._problem = (asm.key, problem)
        return self._solve(problem, asm.warm if self.warm_start else None)

    def resolve(self, key, q, warm):
        """:meth:`solve_assembly` of a step whose problem is the last one's with a new ``q`` (same
        ``key``, constant operators: W unchanged), the integrator keeping the warm starts (``warm``):
        ``previous.replace(q=q)``, solved; returns λ, or None when the last problem is not that one
        (the caller then hands over an Assembly)."""
        prev = self._problem
        if prev is None or prev[0] != key or self.osns_kind in OSNS_BUILDERS:
            return None
        problem = prev[1].replace(q=q)
        self._problem = (key, problem)
        return self._solve(problem, warm if self.warm_start else None)

    def _solve(self, problem, warm):
        """Solve the step's problem with the method, its fallbacks and one Workspace for the whole run
        (its re-solve plans rebuild what depends on W when W changes); returns λ."""
        if warm is not None and not np.count_nonzero(warm):
            warm = None
        src, opts = self._opts
        if src is not self.options:            # first solve, or options replaced since: one Workspace per run
            src = opts = self.options
            if "workspace" not in opts:
                if self._ws is None:
                    self._ws = _new_workspace()
                if self._ws is not None:
                    opts = {**opts, "workspace": self._ws}
            self._opts = (src, opts)
        clock = SOLVE_CLOCK
        t = clock()
        sol = POLICY.attempt(problem, (self.method, *self.fallback), solve, tol=self.tol, warm=warm, options=opts)
        self._solve_time += clock() - t
        lam = getattr(sol, problem.primal)
        if lam.dtype != np.float64:
            lam = lam.astype(float)
        if not sol.success and not np.isfinite(lam).all():      # a solved problem has a finite λ
            lam = np.zeros_like(lam)
        self._last = (problem, sol)
        return lam

    # ------------------------------------------------------------------ stepping
    def has_next_step(self) -> bool:
        return self.k < self.n_steps

    def _ready(self, refresh=False):
        """The stepper for the coming step: the model's topology followed (in place, or a new stepper),
        the objects bound to this run, nothing half done from an interrupted step. ``refresh``: the caller
        recomputes every output next (:meth:`update_outputs`), so a followed change leaves the new
        interactions' outputs to it."""
        st = self._stepper
        if st.count != self.k:              # an interrupt after the commit, before the count
            self.k = st.count
            self.t = self.t0 + self.k * self.h
        nsds = self.nsds
        if nsds._version != st.version:
            changes = nsds.changes_since(st.version)
            self._check_linked(changes)
            if not (changes and st.follow(changes, outputs=not refresh)):
                st.park_all()
                st = self._stepper = self.integrator.start(self, prev=st)
            self.trajectory._seg_key = None          # a new row layout: a new segment
        st.pending = None
        tr = self.trajectory
        if tr._k != self.k:                 # an interrupt after the row was recorded, before the commit
            tr._truncate(self.k)
        return st

    def step(self):
        """Advance one step; returns the step's :class:`nsopt.Solution` (None when no problem was needed)."""
        if not self.has_next_step():
            raise ModelingError(label(self), "T", f"the simulation already reached T = {self.T}")
        st = self._ready()
        self._last = None
        nit, res, conv = st.step(self)
        sol = self._last[1] if self._last is not None else None
        local = self._local.step(st, self.k, self.t, st.buf, st.pending[0]) if self._local is not None else None
        self._commit(st, 1, nit, res, conv, sol, local)
        return sol

    def _commit(self, st, n, nit=1, res=0.0, conv=True, sol=None, local=None):
        """Record the pending state of ``n`` steps, count them and make it current: the critical
        section (a Ctrl-C inside it is delivered at its end, under :meth:`run`); then write or keep
        the step's problem, call ``on_step``, and raise on a failed step with ``on_failure="raise"``.
        ``local``: the step's local error estimate (its value, the system where it is largest), or the
        estimates of the ``n`` steps of a free flight (an array, or one float for all: :meth:`LocalError.block`)."""
        tr = self.trajectory
        k0 = self.k
        self._critical = True
        try:
            if nit is not None:             # the row, then the state, then the count (see _ready)
                tr._record(self.k + 1, nit, res, conv, sol, st.pending[0], st, None if local is None else local[0])
            else:
                tr._advance(self.k + 1, n, local)
            st.commit(self.k + n)
            if self._local is not None:
                self._local.commit()
            self.k += n
            self.t = self.t0 + self.k * self.h
        finally:
            self._critical = False
        if self.k >= self.n_steps:
            st.release()
        if self._interrupted:
            self._interrupted = False
            raise KeyboardInterrupt
        lerr = False if local is None or local is NO_ERROR else self._local_flag(st, k0, local)
        if nit is None:
            if lerr and self.on_failure == "raise":
                self._raise_local(k0, local)
            return
        if self._write is not None or self.keep_problems or self.on_step is not None or self._tape is not None:
            problem = self._last[0] if self._last is not None else None
            if problem is not None:
                if self._write is not None:
                    self._write.write(problem, self.k)
                if self.keep_problems:
                    tr.problems[self.k] = problem
            if self.on_step is not None or self._tape is not None:
                rec = self._record_of(st, nit, res, conv, sol)
                if self._tape is not None:
                    self._tape.record(rec)
                if self.on_step is not None:
                    self.on_step(rec)
        if (not conv or (sol is not None and sol.status is not Status.SOLVED) or lerr) and self.on_failure == "raise":
            if lerr and conv and (sol is None or sol.status is Status.SOLVED):
                self._raise_local(k0, local)
            if sol is not None and not sol.success:
                why = (f"the {self.osns_kind} problem was not solved by {sol.method!r}: status {sol.status.value}, "
                       f"error {sol.error:.3e} > tol {self.tol:g}")
            else:
                why = (f"the Newton loop did not converge: residual {res:.3e} > newton_tol {self.newton_tol:g} after "
                       f"{nit} iterations")
            raise StepFailed(f"step {self.k} (t = {self.t:.6g}): {why}", step=self.k, time=self.t, solution=sol)

    def _local_flag(self, st, k0, local) -> bool:
        """After steps k0 + 1.. were committed with their local error estimates ``local``: warn at the
        first step of the run above ``local_tol`` (``on_local_error="warn"``); True when one is above it
        and ``on_local_error="fail"`` (a failed step)."""
        if isinstance(local, tuple):
            if not local[0] > self.local_tol:         # (the common case, without numpy)
                return False
            errs = np.array([local[0]])
        elif type(local) is float:                    # every step of a free flight: this estimate (LocalError.block)
            if not local > self.local_tol:
                return False
            errs = np.array([local])
        else:
            errs = np.asarray(local, dtype=float)
        over = np.flatnonzero(errs > self.local_tol)
        if not over.size:
            return False
        if self.on_local_error == "fail":
            return True
        if not self._local_warned:
            self._local_warned = True
            warnings.warn(self._local_message(st, k0 + 1 + int(over[0]), float(errs[over[0]]),
                                              local[1] if isinstance(local, tuple) else -1)
                          + "; the steps above local_tol are in Trajectory.inaccurate_steps "
                          "(on_local_error='fail' makes them failed steps)", NsoptWarning, stacklevel=_caller_level())
        return False

    def _local_message(self, st, k, err, which):
        systems = getattr(getattr(st, "sys", None), "systems", None) or getattr(st, "systems", ())
        where = f" (largest at {label(systems[which])})" if 0 <= which < len(systems) else ""
        return (f"step {k} (t = {self.t0 + k * self.h:.6g}): the local error estimate of the smooth phase is "
                f"{err:.3g} > local_tol {self.local_tol:g}{where}: the step does not follow the solution it started "
                "on (h too large for the motion there, or the implicit step solved to a spurious root)")

    def _raise_local(self, k0, local):
        errs = np.atleast_1d(np.asarray(local[0] if isinstance(local, tuple) else local, dtype=float))
        j = int(np.flatnonzero(errs > self.local_tol)[0])
        k = k0 + 1 + j
        raise StepFailed(self._local_message(self._stepper, k, float(errs[j]),
                                             local[1] if isinstance(local, tuple) else -1),
                         step=k, time=self.t0 + k * self.h, solution=None)

    def _record_of(self, st, nit, res, conv, sol):
        idx, lam, vfree, rows, ydot = st.last if st.last is not None else (None,) * 5
        if ydot is not None:                 # (the outputs ẏ before the step, their offset in it or None, the active rows)
            y, off, sel = ydot
            ydot = y[sel] if off is None else y[off + sel]
        if idx is None:
            idx = np.zeros(0, dtype=np.intp)
        elif idx.dtype == np.bool_:
            idx = np.flatnonzero(idx)
        inters = [st.inters[j] for j in idx.tolist()]
        problem = self._last[0] if self._last is not None else None
        return StepRecord(self.k, self.t, inters, problem, sol, lam, vfree, (nit, res, conv), rows,
                          st.iteration_matrix, ydot, getattr(getattr(st, "sys", st), "minv", None))

    def run(self, *, write_problems=None, overwrite: bool = False, progress: bool | None = None) -> Trajectory:
        """Run to T (from where the simulation is: a second call continues an interrupted run); returns
        the :class:`Trajectory`.

        ``write_problems``: a folder where each step's OSNS problem is written (FCLIB HDF5 for
        friction problems, Siconos ``.dat`` otherwise, named ``step_<k>...``); checked before the
        first step (``nsopt.io._target.check_folder``): a name of this run's steps already there is
        an :class:`~nsopt.exceptions.OutputError` unless ``overwrite=True``.

        Ctrl-C stops the run between two steps (a step in progress is abandoned, not half recorded):
        the trajectory and the systems' state are those of the last complete step, and ``run()``
        again continues to T with the trajectory an uninterrupted run would give."""
        if write_problems is not None:
            self.write_problems_to(write_problems, overwrite=overwrite)
        show = self.progress if progress is None else progress
        bar = None
        if show:
            from .._extras import require

            require("mechanics", "progress=True", ["tqdm"])
            from tqdm import tqdm

            bar = tqdm(total=self.n_steps - self.k, desc="time stepping", unit="step")
        old = self._install_sigint()
        try:
            while self.has_next_step():
                # after a step that solved a problem the next one usually does too: no free flight tried
                n = 0
                if self._last is None and self._stepper.fused_phases and self.on_step is None:
                    st = self._ready()
                    nmax = min(self.n_steps - self.k, max(16, (1 << 21) // max(1, st.buf.shape[0])))
                    rec, j0 = self.trajectory._reserve(self.k + 1, nmax, st)
                    n = st.free_flight(self, nmax, rec, j0)
                    if n:      # steps without contact, taken at once (the compiled free flight)
                        local = None if self._local is None else \
                            self._local.block(st, self.k, st.buf, rec[j0:j0 + n])
                        self._commit(st, n, None, local=local)
                if not n:
                    self.step()
                    n = 1
                if bar is not None:
                    bar.update(n)
        finally:
            if old is not None:
                signal.signal(signal.SIGINT, old)
            if bar is not None:
                bar.close()
            self._write = None
            self._stepper.release()
        return self.trajectory

    # ------------------------------------------------------------------ the run's state
    def _locate(self, obj):
        where = self._stepper.index_of(obj)
        if where is None:
            raise ModelingError(label(self), "state_of", f"{label(obj)} is not a system or a linked interaction of "
                                                         f"this run's model")
        return where

    def state_of(self, obj, field: str | None = None):
        """The current state of a system or interaction **in this run**: after its last step (its initial
        state before the first). ``ds.q`` is the object's own state, written by a run only when it stops
        (:mod:`nsopt.modeling._state`); this reads the run's, so two runs of one model each read their own.

        Parameters
        ----------
        obj : a dynamical system or a linked interaction of the run's model.
        field : str, optional
            One of the object's fields (``"q"``, ``"v"``, ``"p"``; ``"x"``, ``"r"``; ``"y"``, ``"lambda_"``).

        Returns
        -------
        types.SimpleNamespace or numpy.ndarray
            The object's fields (``.q``, ``.v``, ``.p`` of a Lagrangian system, ``.x``, ``.r`` of a
            first-order one, ``.y``, ``.lambda_`` of an interaction: [level 0, level 1]), or the one named:
            read-only views of the run's arrays now (copy them to keep them past the next step).

        Raises
        ------
        ModelingError
            When ``obj`` is not in the run, or has no field ``field``.

        Examples
        --------
        >>> from nsopt import modeling as nm
        >>> ball = nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-9.81])
        >>> nsds = nm.NonSmoothDynamicalSystem(0.0, 1.0)
        >>> ground = nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0]])), ball)
        >>> sim = nm.TimeStepping(nsds, h=0.1, osns="lcp")
        >>> _ = sim.step()
        >>> sim.state_of(ball).q, sim.state_of(ball, "v"), ball.q      # the run's, and the object's own
        (array([0.95095]), array([-0.981]), array([1.]))
        """
        k, names = self._locate(obj)
        if field is None:
            return _state.state_view(self._stepper, k, names)
        if field not in names:
            raise ModelingError(label(self), "state_of", f"{label(obj)} has the fields {names}, not {field!r}")
        return self._stepper.read(k, field)

    def set_state(self, obj, **fields):
        """Set the state of a system or interaction in this run, between steps: the run continues from it (an
        interaction's ``lambda_`` at level 1 is also the warm start of its next solve). ``fields``: ``q=``,
        ``v=``, ``p=``; ``x=``, ``r=``; ``y=``, ``lambda_=`` ([level 0, level 1]). The object's own state
        (``ds.q``) is not changed. A value of the wrong size or with non-finite entries is a
        :class:`~nsopt.exceptions.ModelingError` naming the object and the field."""
        k, names = self._locate(obj)
        bad = [f for f in fields if f not in names]
        if bad:
            raise ModelingError(label(self), "set_state", f"{label(obj)} has the fields {names}, not {bad}")
        for f, value in fields.items():
            self._stepper.write(k, f, value)

    def update_outputs(self):
        """Recompute every interaction's outputs y at the current state (Siconos ``updateOutput``). Call it
        between steps after changing relation data in place (a contact detection moving the points of the
        contacts that persist), so that the next index set and restitution terms use the new data; linked
        interactions get theirs when the next step starts."""
        st = self._ready(refresh=True)
        if not st.fused_phases and hasattr(st, "refresh_outputs"):
            st.refresh_outputs(self.t)

    def write_problems_to(self, folder, *, overwrite: bool = False):
        """Write each coming step's OSNS problem into ``folder`` (as ``run(write_problems=folder)``, for a
        loop of :meth:`step`); None stops writing. The folder is checked now: a file of the names of
        this run's remaining steps already there is an :class:`~nsopt.exceptions.OutputError` unless
        ``overwrite``."""
        self._write = None if folder is None else ProblemWriter(folder, self.k + 1, self.n_steps, overwrite=overwrite)

    def _install_sigint(self):
        """A Ctrl-C handler that delivers the interrupt at once, except inside a step's commit (then at
        its end); the previous handler (returned) is put back by :meth:`run`. Only in the main thread,
        and only over Python's default handler."""
        if threading.current_thread() is not threading.main_thread():
            return None
        old = signal.getsignal(signal.SIGINT)
        if old is not signal.default_int_handler:
            return None

        def handler(signum, frame):
            if self._critical:
                self._interrupted = True
            else:
                raise KeyboardInterrupt

        signal.signal(signal.SIGINT, handler)
        return old

    def __repr__(self):
        return (f"{label(self)}(h={self.h:g}, t = {self.t:g} of [{self.t0:g}, {self.T:g}], step {self.k} of "
                f"{self.n_steps}, osns={self.osns_kind!r}, method={self.method!r})")


def _caller_level() -> int:
    """The ``stacklevel`` of a warning raised in this module that points at the user's line (the first
    frame outside this file, whether the step came from ``run()`` or ``step()``)."""
    f, n = sys._getframe(1), 1
    while f is not None and f.f_code.co_filename == __file__:
        f, n = f.f_back, n + 1
    return n


class ProblemWriter:
    """Writes the one-step problems of steps ``first``..``last`` into ``folder``: FCLIB HDF5 for friction
    problems (``step_<k>.hdf5``), Siconos ``.dat`` otherwise (``step_<k>_<kind>.dat``).

    The folder is checked when the writer is made (``nsopt.io._target.check_folder``): a file of those steps'
    names already there is an :class:`~nsopt.exceptions.OutputError` unless ``overwrite``. What
    :meth:`TimeStepping.write_problems_to` and ``Scene.run(write_problems=)`` use; a writer is an observer of
    a step (``writer(step)``: any object with ``k`` and ``problem``, a :class:`~nsopt.modeling.osi.StepRecord`
    or a :class:`~nsopt.mechanics.SceneStep`).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from nsopt import LCP
    >>> from nsopt.modeling.simulation import ProblemWriter
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     w = ProblemWriter(tmp, 1, 10)
    ...     w.write(LCP(np.eye(2), [-1.0, 1.0]), 3)
    ...     sorted(os.listdir(tmp))
    ['step_000003_lcp.dat']
    """

    _NAME = re.compile(r"step_(\d+)(?:_[A-Za-z0-9-]+)?\.(?:hdf5|dat)$")

    def __init__(self, folder, first: int, last: int, *, overwrite: bool = False):
        def clash(name):
            mt = self._NAME.fullmatch(name)
            return mt is not None and first <= int(mt.group(1)) <= last

        self.folder, self.overwrite = check_folder(folder, clash, overwrite=overwrite), overwrite

    def write(self, problem, k: int):
        """Write ``problem`` as the one-step problem of step ``k``."""
        from .. import io

        if problem.kind in ("fc2d", "fc3d", "gfc3d"):
            fn, path, kw = io.write_fclib, self.folder / f"step_{k:06d}.hdf5", {"title": f"{problem.kind} step {k}"}
        else:
            fn, path, kw = io.write_siconos_dat, self.folder / f"step_{k:06d}_{problem.kind}.dat", {}
        fn(problem, path, **kw, **_overwrite_kw(fn, self.overwrite))

    def __call__(self, step):
        """Observe a step: write its problem (a step without one writes nothing)."""
        if step.problem is not None:
            self.write(step.problem, step.k)


def _overwrite_kw(fn, overwrite) -> dict:
    """``{"overwrite": overwrite}`` when the writer ``fn`` takes it (the folder was checked already)."""
    try:
        return {"overwrite": overwrite} if "overwrite" in inspect.signature(fn).parameters else {}
    except (TypeError, ValueError):
        return {}


CHUNK_BYTES = 1 << 22     # a segment's rows are allocated in blocks of about 4 MB (or the run's remaining rows)
FIRST_ROWS = 8            # a segment's first block: rows (the next ones double)


class _Segment:
    """The steps recorded with one layout of the stepper's row (a new segment after each topology
    change): one row per step from ``start``, the stacked fields side by side (``cols``: their column
    ranges), in chunks of rows allocated as the run goes (no row is copied when more are needed);
    ``data`` is the current chunk, ``used`` its rows written, ``arrays`` its column views."""

    __slots__ = ("_ds", "_inter", "chunks", "cols", "count", "data", "fields", "left", "rows", "start", "used")

    def __init__(self, start, layout, columns, left):
        """``layout``: the stepper's ``row_layout()`` (the systems' field widths, the systems, and
        (interactions, their first rows, their last rows + 1, width)); ``columns``: per system its
        (q columns, v columns)."""
        self.start, self.count, self.left = start, 0, left
        widths, systems, rows = layout
        self._ds = (systems, columns)                       # the column tables: at the first look-up
        self._inter, m = rows[:3], rows[3]
        self.fields = [(f, w) for f, w in widths.items()] + [(f, m) for f in ("y0", "y1", "lam0", "lam1")]
        self.cols, c = {}, 0
        for f, w in self.fields:
            self.cols[f] = (c, c + w)
            c += w
        self.rows = max(FIRST_ROWS, CHUNK_BYTES // (8 * max(1, c)))
        self.chunks, self.data, self.used = [], None, 0
        self._alloc(max(1, min(left, FIRST_ROWS)))     # (a contact detection may end it after a few steps)

    @property
    def ds(self) -> dict:
        """id(system) -> its (q columns, v columns) in the systems' fields."""
        if isinstance(self._ds, tuple):
            systems, columns = self._ds
            self._ds = {id(d): c for d, c in zip(systems, columns)}
        return self._ds

    @property
    def inter(self) -> dict:
        """id(interaction) -> its columns (lo, hi) in the interactions' fields."""
        if isinstance(self._inter, tuple):
            objs, lo, hi = self._inter
            self._inter = {id(o): (a, b) for o, a, b in zip(objs, np.asarray(lo).tolist(), np.asarray(hi).tolist())}
        return self._inter

    def _alloc(self, n):
        if self.data is not None:
            self.chunks.append((self.data, self.used))
        self.data, self.used = np.empty((n, self.cols[self.fields[-1][0]][1])), 0

    def trim(self):
        """Drop the rows never written, when they are more than the rows written."""
        if self.data.shape[0] - self.used > self.used:
            self.data = self.data[:self.used].copy()

    def reserve(self, n):
        """Room for n more rows in the current chunk (a new chunk when it is full); the index of the first."""
        if self.data.shape[0] < self.used + n:     # chunks double up to ``rows`` (about CHUNK_BYTES)
            self._alloc(max(n, min(self.rows, self.left - self.count, 2 * (self.count + FIRST_ROWS))))
        return self.used

    def advance(self, n):
        """n more rows written in the current chunk (counted after they are written)."""
        self.used += n
        self.count += n

    def drop(self, n):
        """Forget the last n rows (of the current chunk and the ones before)."""
        while n > 0:
            k = min(n, self.used)
            self.used -= k
            self.count -= k
            n -= k
            if n > 0 or (self.used == 0 and self.chunks):
                if not self.chunks:
                    break
                self.data, self.used = self.chunks.pop()

    def pieces(self, field, lo, hi):
        """The recorded rows of columns lo:hi of ``field``, chunk by chunk, in step order."""
        a = self.cols[field][0]
        for data, used in self.chunks + [(self.data, self.used)]:
            yield data[:used, a + lo:a + hi]


class _Steps:
    """Per-step records that grow as the run goes (doubling arrays): never allocated for the whole run."""

    __slots__ = ("arrays", "n")

    FIELDS = (("status", object, None), ("error", float, np.nan), ("nit", np.int64, 0), ("method", object, None),
              ("newton_iterations", np.int64, 1), ("newton_residual", float, 0.0), ("newton_converged", bool, True),
              ("local_error", float, np.nan))

    def __init__(self):
        self.n = 0
        self.arrays = {f: np.full(16, v, dtype=dt) for f, dt, v in self.FIELDS}

    def ensure(self, n):
        cap = self.arrays["error"].shape[0]
        if n > cap:
            new = max(n, 2 * cap)
            for f, dt, v in self.FIELDS:
                a = np.full(new, v, dtype=dt)
                a[:cap] = self.arrays[f]
                self.arrays[f] = a

    def reset(self, j):
        """Entries j.. back to their defaults (steps not taken)."""
        for f, dt, v in self.FIELDS:
            self.arrays[f][j:] = v


#: The sections of the docstrings of :meth:`Trajectory.q`, ``v`` and ``p`` (``{lagrangian_accessor}``).
_LAGRANGIAN_ACCESSOR_DOC = """Parameters
----------
ds : DynamicalSystem
    A system of the simulation.

Returns
-------
numpy.ndarray, shape (k+1, n)
    One row per recorded step (NaN where the system was not part of the simulation).

Raises
------
ModelingError
    When ``ds`` is not part of the simulation or is a first-order system.

Examples
--------
See the example of :class:`Trajectory`."""


class Trajectory(Derivatives):
    """What a :class:`TimeStepping` records, step by step: the rows of the steps taken so far (row 0:
    the initial state; after a complete run, N + 1 rows). Nothing is allocated for steps not taken.

    Accessors: ``t`` (k+1,); ``q(ds)``, ``v(ds)``, ``p(ds)`` (Lagrangian, (k+1, n)); ``x(ds)``, ``r(ds)``
    (first order); ``y(inter, level)``, ``lambda_(inter, level)`` ((k+1, m)). Per step (k entries,
    one per step taken): ``status`` (a :class:`nsopt.Status`, or **None for a step without contact**:
    no problem had to be solved), ``error`` (NaN without contact), ``nit`` (the solver's iterations, 0
    without contact), ``method``, ``newton_iterations``, ``newton_residual``, ``newton_converged``,
    ``local_error`` (the estimate of the step's smooth phase, ``formulations/time_stepping.md`` §6);
    ``failed_steps``, ``inaccurate_steps`` (local error above ``local_tol``); ``problems`` (with
    ``keep_problems=True``). With
    ``TimeStepping(..., differentiable=True)``: ``gradient``, ``vjp``, ``jvp``, ``jacobian``,
    ``derivative_report``, ``states``, ``dofs`` (:mod:`nsopt.modeling.differentiable`).

    Interactions linked after the simulation was built (contact detection) are recorded from the
    step they are linked at, and removed ones until they are removed: their rows are NaN where they
    were not part of the system. The recording is stacked (one row of all systems and interactions
    per step), in segments between topology changes.

    Parameters
    ----------
    sim : TimeStepping
        The simulation recorded (a Trajectory is made by :meth:`TimeStepping.run`, not by hand).

    Attributes
    ----------
    t : numpy.ndarray
        Times of the recorded rows, t0 + j h (k+1,).
    status, method : list
        Per step: the :class:`nsopt.Status` (None without contact) and the method used.
    error, nit : numpy.ndarray
        Per step: the error measure (NaN without contact) and the solver's iterations.
    newton_iterations, newton_residual, newton_converged : numpy.ndarray
        Per step: the Newton loop's iterations, last residual and convergence.
    local_error : numpy.ndarray
        Per step: the local error estimate of its smooth phase (NaN with ``on_local_error="ignore"``).
    problems : dict
        The one-step problems, with ``keep_problems=True``.

    See Also
    --------
    TimeStepping : runs the simulation and returns its Trajectory.

    Examples
    --------
    A ball dropped on the ground, its positions, velocities and impulses:

    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> ball = nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-9.81])
    >>> nsds = nm.NonSmoothDynamicalSystem(0.0, 0.5)
    >>> inter = nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0]])), ball)
    >>> traj = nm.TimeStepping(nsds, h=0.01).run()
    >>> traj.t.shape, traj.q(ball).shape
    ((51,), (51, 1))
    >>> traj.status[:2], traj.method[-5], round(float(traj.t[-5]), 6)
    ([None, None], 'lemke', 0.46)
    >>> print(traj.q(ball)[[0, 45, 50], 0].round(6))
    [1.       0.006737 0.076143]
    >>> print(traj.v(ball)[[0, 45, 46], 0].round(6))
    [ 0.      -4.4145   2.20725]
    >>> lam = traj.lambda_(inter)
    >>> int(np.argmax(lam[:, 0])), round(float(lam.max()), 5)
    (46, 6.71985)
    """

    def __init__(self, sim: TimeStepping):
        self._sim = sim
        self.t0, self.h = sim.t0, sim.h
        self._sys_fields = ("x", "r") if sim.nsds.order == 1 else ("q", "v", "p")
        self._segments: list[_Segment] = []
        self._seg_key = None
        self._k = -1
        self._steps = _Steps()
        self.problems: dict = {}
        self._store(0, sim._stepper.buf, sim._stepper)

    # ---- per-step records (the first k entries)
    def _field(self, f):
        return self._steps.arrays[f][:max(self._k, 0)]

    @property
    def t(self) -> np.ndarray:
        """Times of the recorded rows, t0 + j h (k+1,)."""
        return self.t0 + self.h * np.arange(self._k + 1)

    def _per_step(f, doc, as_list=False):
        def get(self):
            a = self._field(f)
            return a.tolist() if as_list else a
        return property(get, doc=doc)

    status = _per_step("status", "Per step: the :class:`nsopt.Status` of its OSNS problem, None for a step without "
                                 "contact.", True)
    method = _per_step("method", "Per step: the method that solved its problem (None without contact).", True)
    error = _per_step("error", "Per step: the problem's error measure (NaN without contact).")
    nit = _per_step("nit", "Per step: the solver's iterations (scipy's ``nit``; 0 without contact).")
    newton_iterations = _per_step("newton_iterations", "Per step: the Newton iterations (1 without a Newton loop).")
    newton_residual = _per_step("newton_residual", "Per step: the Newton loop's last residual.")
    newton_converged = _per_step("newton_converged", "Per step: whether the Newton loop reached newton_tol.")
    local_error = _per_step("local_error", "Per step: the local error estimate of its smooth phase (the largest "
                                           "error of a position or velocity relative to 1 + the size of that "
                                           "value, ``TimeStepping(local_tol=...)``); NaN with "
                                           "``on_local_error='ignore'``.")
    del _per_step

    @property
    def inaccurate_steps(self) -> list[int]:
        """Steps (1-based) whose local error estimate is above the simulation's ``local_tol``."""
        return (np.flatnonzero(self._field("local_error") > self._sim.local_tol) + 1).tolist()

    @property
    def iterations(self) -> np.ndarray:
        """Deprecated alias of :attr:`nit`."""
        warnings.warn("Trajectory.iterations is deprecated: use Trajectory.nit (scipy's name)", DeprecationWarning,
                      stacklevel=2)
        return self.nit

    # ---- recording
    def _segment(self, k, st):
        """The segment recording step k (a new one after a change of the stepper's row layout, which
        the simulation flags by clearing ``_seg_key``)."""
        if self._seg_key is not st:
            if self._segments:                    # the finished segment keeps only its rows
                self._segments[-1].trim()
            self._segments.append(_Segment(k, st.row_layout(), st.columns(), self._sim.n_steps + 1 - k))
            self._seg_key = st
        return self._segments[-1]

    def _reserve(self, k, n, st):
        """Room for rows k .. k+n-1 in the current segment: (its stacked rows, index of row k)."""
        seg = self._segment(k, st)
        j0 = seg.reserve(n)              # may start a new chunk: take the array after it
        return seg.data, j0

    def _advance(self, k, n, local=None):
        """Steps k .. k+n-1 were written into the reserved rows by a compiled loop (no OSNS problem);
        ``local``: their local error estimates."""
        self._steps.ensure(k - 1 + n)
        if local is not None:
            self._steps.arrays["local_error"][k - 1:k - 1 + n] = local
        self._segments[-1].advance(n)
        self._k = k + n - 1

    def _store(self, k, row, st):
        seg = self._segment(k, st)
        j = seg.reserve(1)
        seg.data[j] = row                 # written, then counted: an interrupt leaves no half row
        seg.advance(1)
        self._k = k

    def _record(self, k, nit, res, conv, sol, row, st, local_error=None):
        j = k - 1
        steps = self._steps
        a = steps.arrays
        if k > a["error"].shape[0]:
            steps.ensure(k)
        if local_error is not None:
            a["local_error"][j] = local_error
        if nit != 1:
            a["newton_iterations"][j] = nit
        if res != 0.0 or not conv:
            a["newton_residual"][j], a["newton_converged"][j] = res, conv
        if sol is not None:
            a["status"][j], a["error"][j], a["nit"][j], a["method"][j] = sol.status, sol.error, sol.nit, sol.method
        self._store(k, row, st)

    def _truncate(self, k):
        """Forget the rows after row k (a step recorded but not counted before an interrupt)."""
        extra = self._k - k
        while extra > 0 and self._segments:
            seg = self._segments[-1]
            d = min(extra, seg.count)
            seg.drop(d)
            extra -= d
            if seg.count == 0 and len(self._segments) > 1:
                self._segments.pop()
                self._seg_key = None
        self._steps.reset(k)
        self._k = k

    # ---- reading
    def _gather(self, obj, what, table, field, width, span=None):
        """(k+1, width) rows of ``field`` for ``obj`` over the segments holding it; NaN at the steps
        where it was not part of the system."""
        out = np.full((self._k + 1, width), np.nan)
        found = False
        for seg in self._segments:
            cols = getattr(seg, table).get(id(obj))
            if cols is None:
                continue
            found = True
            lo, hi = cols if span is None else cols[span]
            r = seg.start
            for rows in seg.pieces(field, lo, hi):
                out[r:r + rows.shape[0]] = rows
                r += rows.shape[0]
        if not found:
            raise ModelingError("Trajectory", what, f"{label(obj)} is not part of this simulation")
        return out

    def _ds_field(self, ds, f):
        if f not in self._sys_fields:
            if not any(id(ds) in seg.ds for seg in self._segments):
                raise ModelingError("Trajectory", f, f"{label(ds)} is not part of this simulation")
            raise ModelingError("Trajectory", f, f"{label(ds)} has no {f!r} (first-order systems have x, r; "
                                                 "Lagrangian ones q, v, p)")
        width = getattr(ds, "qdim", ds.n) if f == "q" else ds.n
        return self._gather(ds, f, "ds", f, width, 0 if f == "q" else 1)

    def q(self, ds):
        """Positions (k+1, n) of a Lagrangian system.

        {lagrangian_accessor}
        """
        return self._ds_field(ds, "q")

    def v(self, ds):
        """Velocities (k+1, n) of a Lagrangian system.

        {lagrangian_accessor}
        """
        return self._ds_field(ds, "v")

    def p(self, ds):
        """Input impulse p = Σ G0ᵀλ over each step (k+1, n) of a Lagrangian system.

        {lagrangian_accessor}
        """
        return self._ds_field(ds, "p")

    for _f in (q, v, p):
        _f.__doc__ = insert_section(_f.__doc__, "lagrangian_accessor", _LAGRANGIAN_ACCESSOR_DOC)
    del _f

    def x(self, ds):
        """State (k+1, n) of a first-order system."""
        return self._ds_field(ds, "x")

    def r(self, ds):
        """Input r (k+1, n) of a first-order system."""
        return self._ds_field(ds, "r")

    def _level(self, level):
        if level not in (0, 1):
            raise ModelingError("Trajectory", "level", f"must be 0 or 1, got {level!r}")
        return level

    def y(self, inter, level=0):
        """Output y[level] (k+1, m) of an interaction: level 0 the gap (or y), level 1 its velocity."""
        return self._gather(inter, "y", "inter", f"y{self._level(level)}", inter.size)

    def lambda_(self, inter, level=None):
        """Multiplier λ[level] (k+1, m): level 1 the impulse over each step (Lagrangian), level 0 λ
        (first order; the force for compliant relations). Default: 1 for Lagrangian, 0 for first order.

        Parameters
        ----------
        inter : Interaction
            An interaction of the simulation.
        level : {0, 1}, optional
            The level (default: 1 for Lagrangian systems, 0 for first order).

        Returns
        -------
        numpy.ndarray, shape (k+1, m)
            One row per recorded step (NaN where the interaction was not linked).

        Raises
        ------
        ModelingError
            When ``level`` is not 0 or 1, or ``inter`` is not part of the simulation.

        Examples
        --------
        See the example of :class:`Trajectory`.
        """
        if level is None:
            level = 1 if self._sim.nsds.order == 2 else 0
        return self._gather(inter, "lambda_", "inter", f"lam{self._level(level)}", inter.size)

    @property
    def failed_steps(self) -> list[int]:
        """Steps (1-based) whose OSNS problem did not reach the tolerance or whose Newton loop did not
        converge (and, with ``on_local_error="fail"``, whose local error estimate is above ``local_tol``)."""
        st, conv = self._field("status"), self._field("newton_converged")
        bad = np.zeros(st.shape[0], dtype=bool)
        if self._sim.on_local_error == "fail":
            bad = self._field("local_error") > self._sim.local_tol
        return [j + 1 for j in range(st.shape[0])
                if (st[j] is not None and st[j] is not Status.SOLVED) or not conv[j] or bad[j]]

    @property
    def solve_time(self) -> float:
        """Seconds spent in nsopt.solve over the run (by ``simulation.SOLVE_CLOCK``, ``time.perf_counter``
        unless set otherwise; the rest of a step is the modeling layer)."""
        return self._sim._solve_time

    def __repr__(self):
        st = self._field("status")
        solved = sum(s is not None for s in st)
        return (f"Trajectory({self._k} of {self._sim.n_steps} steps recorded, t in [{self.t0:g}, "
                f"{self.t0 + self._k * self.h:g}]: {solved} with a problem, {st.shape[0] - solved} without contact "
                f"(status None), {len(self.failed_steps)} failed)")

    def to_fclib(self, path, *, overwrite: bool = False) -> list[Path]:
        """Write each kept step problem (``keep_problems=True``) in ``path``: FCLIB HDF5 for friction
        problems, Siconos ``.dat`` otherwise (the folder checked first: an existing file of the same
        name is an :class:`~nsopt.exceptions.OutputError` unless ``overwrite``). Returns the files written."""
        if not self.problems:
            raise ModelingError("Trajectory", "problems", "no problem was kept: simulate with "
                                                          "TimeStepping(..., keep_problems=True) or run(write_problems=path)")
        from .. import io

        names = {}
        for k, pb in sorted(self.problems.items()):
            names[f"step_{k:06d}.hdf5" if pb.kind in ("fc2d", "fc3d", "gfc3d") else f"step_{k:06d}_{pb.kind}.dat"] = (k, pb)
        d = check_folder(path, names, overwrite=overwrite)
        out = []
        for name, (k, pb) in names.items():
            f = d / name
            if pb.kind in ("fc2d", "fc3d", "gfc3d"):
                out.append(Path(io.write_fclib(pb, f, title=f"{pb.kind} step {k}", **_overwrite_kw(io.write_fclib, overwrite))))
            else:
                io.write_siconos_dat(pb, f, **_overwrite_kw(io.write_siconos_dat, overwrite))
                out.append(f)
        return out


# ----------------------------------------------------------------------------- OSNS builders
def _laws(asm):
    return asm.laws if asm.laws is not None else [i.nslaw for i in asm.interactions]


def _build_mlcp(asm):
    rows, comp, off = [0], [], 0
    laws = _laws(asm)
    for law in laws:
        off += law.size
        rows.append(off)
        comp.append(law.block != "equality")
    n_eq = sum(law.size for law in laws if law.block == "equality")
    W = asm.W.toarray() if sp.issparse(asm.W) else asm.W
    return MLCP.from_matrix(W, asm.q, n_eq, blocks_rows=rows, blocks_is_comp=comp)


def _build_avi(asm):
    Hs, ks = [], []
    for law in _laws(asm):
        if law.block == "avi":
            Hs.append(law.H)
            ks.append(law.k)
        else:                        # a complementarity block: λ >= 0
            Hs.append(np.eye(law.size))
            ks.append(np.zeros(law.size))
    return AVI(asm.W, asm.q, sp.block_diag(Hs).toarray(), np.concatenate(ks))


def _build_fc(asm, dim):
    """FrictionContact of the step; a W the batched assembly built in validated form, and the μ it
    keeps, are taken as they are (:meth:`nsopt.problems.Problem.assembled`); q is checked."""
    if asm.mu is not None:
        mu, trusted = asm.mu, (("W", "mu") if asm.trusted_W else ("mu",))
    else:
        mu, trusted = np.array([law.mu for law in _laws(asm)]), (("W",) if asm.trusted_W else ())
    p = FrictionContact.assembled(trusted, dim=dim, W=asm.W, q=asm.q, mu=mu) if trusted else \
        FrictionContact(dim, asm.W, asm.q, mu)
    if asm.factors is not None:
        p.with_delassus_factors(asm.factors, check=False)
    return p


def _build_gfc(asm):
    M, H, qg, b = asm.glob
    return GlobalFrictionContact(M, H, qg, b, [law.mu for law in _laws(asm)], dim=3)


_BUILDERS = MappingProxyType({      # the built-in kinds: builder(asm) -> problem
    "lcp": lambda asm: LCP(asm.W, asm.q),
    "equality": lambda asm: Equality(asm.W, asm.q),
    "relay": lambda asm: Relay(asm.W, asm.q, np.concatenate([law.lb for law in _laws(asm)]),
                               np.concatenate([law.ub for law in _laws(asm)])),
    "mlcp": _build_mlcp,
    "avi": _build_avi,
    "fc2d": lambda asm: _build_fc(asm, 2),
    "fc3d": lambda asm: _build_fc(asm, 3),
    "gfc3d": _build_gfc,
    "gmp": lambda asm: GenericMechanical(asm.W, asm.q, [law.gmp_block() for law in _laws(asm)]),
})


def register_osns(kind: str, build, *, holds, methods):
    """Add a one-step problem kind to TimeStepping (as ``nsopt.modeling.impact`` adds
    ``"multiple-impact"``): ``build(asm, laws, previous) -> problem``, where ``asm`` is the step's
    :class:`~nsopt.modeling.osi.Assembly` (W, q over the active interactions, and the operators H,
    v_free and the integrator), ``laws`` their laws, ``previous`` the last step's problem when
    ``asm.W is None`` (same active set, constant operators: reuse its W) and None otherwise; the
    problem's primal variable must be the stacked λ. ``holds``: the law blocks (``NonSmoothLaw.block``)
    it accepts; ``methods``: the names ``method="auto"`` uses (first, then fallbacks).

    Parameters
    ----------
    kind : str
        The name given as ``TimeStepping(..., osns=kind)``.
    build : callable
        ``build(asm, laws, previous) -> problem`` as above.
    holds : iterable of str
        The law blocks it accepts.
    methods : iterable of str
        The methods ``method="auto"`` uses, first then fallbacks.

    Returns
    -------
    None

    Examples
    --------
    A builder that makes the LCP of the step itself (what ``osns="lcp"`` does):

    >>> import numpy as np
    >>> import nsopt
    >>> from nsopt import modeling as nm
    >>> ball = nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-9.81])
    >>> nsds = nm.NonSmoothDynamicalSystem(0.0, 0.5)
    >>> inter = nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0]])), ball)
    >>> def build(asm, laws, previous):
    ...     return previous.replace(q=asm.q) if asm.W is None else nsopt.LCP(asm.W, asm.q)
    >>> nm.register_osns("doc-lcp", build, holds=["lcp"], methods=["lemke"])
    >>> traj = nm.TimeStepping(nsds, h=0.01, osns="doc-lcp").run()
    >>> traj.method[-5], traj.q(ball)[-1].round(6)
    ('lemke', array([0.076143]))
    """
    OSNS_BUILDERS[kind] = build
    _HOLDS[kind] = set(holds)
    POLICY.set(kind, run=methods)
