"""The method policy, documented in one place: which methods solve a problem when none is named, and
the one rule by which a method that fails hands over to the next.

:data:`POLICY` says, for each problem kind, the methods in order for two uses:

- ``auto``: ``nsopt.solve(problem, method="auto")``, one problem solved once (a convex program is worth
  its CVXPY build);
- ``run``: each step of a run (:class:`~nsopt.modeling.TimeStepping` with ``method="auto"``, and
  :meth:`~nsopt.mechanics.Scene.run`): the first method, then its fallbacks, for thousands of small
  problems (no CVXPY build per step).

===============  ========================================================  ===============================
kind             auto                                                      run (first → fallbacks)
===============  ========================================================  ===============================
lcp              qp (symmetric PSD M) → lemke (n <= 10000) → newton-fb →   lemke → newton-fb → pgs
                 pgs
mlcp             qp (symmetric PSD structure) → enum (m <= 20) → lemke →   lemke → newton-fb → pgs
                 newton-fb → pgs
relay            qp (symmetric PSD M) → lemke → pgs                        lemke → pgs → qp
equality         linear                                                    linear
avi              qp (symmetric PSD M) → lemke                              lemke → qp
fc2d             nsgs → nsn-ac → lemke → nsn-fb                            nsn-ac → nsgs → lemke
fc3d             nsgs → nsn-ac → socp-fp → nsn-fb → prox                   nsn-ac → nsgs → prox
gfc2d            nsgs → nsn-ac
gfc3d            nsgs → nsn-ac → socp-fp → nsn-fb                          nsn-ac → nsgs
gmp              nsgs → nsn (global semismooth Newton when block           nsn → nsgs
                 Gauss–Seidel stalls)
multiple-impact  lzb                                                       lzb
===============  ========================================================  ===============================

NSGS leads ``auto`` for friction contact because it is cheap per sweep and Siconos' own default, so the
numbers compare; a Newton method takes over when NSGS stalls (typically on stiff or badly conditioned
problems such as RockPile), warm-started from NSGS' best iterate. In a run, a Newton method leads: warm-started
from the previous step's impulses it converges in a few iterations.

**The fallback rule** (:meth:`MethodPolicy.attempt`, the one loop of ``auto``, of every step of a
:class:`~nsopt.modeling.TimeStepping` and of a :class:`~nsopt.mechanics.Scene` run):

1. the first method, from the caller's warm start;
2. the first method again from a cold start, when the warm-started solve did not reach ``tol`` (a previous
   step's impulses can start a Newton method in a region it does not leave: a hyperstatic pile of cubes
   whose warm-started nsn-ac creeps at 1.4e-9 while the cold start reaches 1e-9);
3. each fallback in order, warm-started from the best iterate so far (when its error is finite; else from
   the caller's warm start);

keeping the attempt with the smallest error and stopping at the first that reaches ``tol``. A method that
does not apply (``NotApplicable``: ``qp`` needs a symmetric positive semidefinite M, enumeration a small
problem; or a size above :attr:`MethodPolicy.max_size`) is skipped. ``time_limit`` is the budget of all
the attempts. A certificate stops the rule: a method that returns ``Status.INFEASIBLE`` with
``Solution.info["certificate"]`` (a conic backend proved the QP primal or dual infeasible) is returned,
since no error measure of another method can contradict a proof. Every attempt is recorded in
``Solution.trace`` as ``(method, status, error, seconds, note)`` (a run's step solved by its first attempt
keeps the method's own, empty, trace: the rule costs nothing on the steps that need no fallback). The
options: with ``auto`` they are
the policy's, and each method gets those it accepts; with a named method (a run's ``method=...,
**options``) they are that method's, and the fallbacks get only :data:`FALLBACK_OPTIONS` (``select``:
which solution, ``time_limit``).

Size limits of the convex methods (``qp``, ``socp-fp``): none. Their programs are built with
constant data (no CVXPY ``Parameter``, which makes CVXPY 1.9 extract a dense variables x parameters
coefficient array: 298 GiB for a diagonal LCP at n = 200000), so CVXPY's compile and the conic
solver stay linear in nnz. ``benchmarks/bench_memory.py`` measures it on sparse problems, in a fresh
process per size (peak RSS above the pre-solve state, 2026-11-23, max_iter=3): ``qp`` on a diagonal
LCP 18 / 59 / 175 / 387 MB at n = 9000 / 30000 / 90000 / 200000 (growth exponent 0.99; it was a
MemoryError of 298 GiB at 200000), a tridiagonal relay 25 / 77 / 225 MB at 9000 / 30000 / 90000
(``auto``: 811 MB at 9000 before); ``socp-fp`` / ``socp-tresca`` on a sparse fc3d 20 / 60 / 174 MB
and 21 / 65 / 187 MB (1.4–1.9 GB at 9000 before), gfc3d ``socp-fp`` 16 / 51 / 148 MB (605 MB at 9000
before); all with growth exponents 0.96–0.99. The Gauss–Seidel baselines (``pgs``, ``nsgs``) take
45–64 MB, most of it their compiled kernels. :attr:`MethodPolicy.max_size` is the place for a size above
which the policy skips a method (empty: every method in the table scales).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from . import registry
from .exceptions import NotApplicable, OptionError
from .registry import ALIASES
from .result import Solution, Status

#: The options of a named method that reach its fallbacks too (``select``: which solution, issue 21;
#: ``time_limit``: the budget of all the attempts); the others are the method's own.
FALLBACK_OPTIONS = ("select", "time_limit")


@dataclass(frozen=True)
class Plan:
    """A problem kind's methods, in order: ``auto`` for ``solve(method="auto")``, ``run`` for each step
    of a run (the first method, then its fallbacks)."""

    auto: tuple[str, ...] = ()
    run: tuple[str, ...] = ()


class MethodPolicy:
    """The methods tried per problem kind and the one fallback rule (see the module docstring).

    Parameters
    ----------
    plans : dict
        kind -> :class:`Plan`.

    Examples
    --------
    >>> from nsopt.policy import POLICY
    >>> POLICY.auto("lcp"), POLICY.run("fc3d")
    (('qp', 'lemke', 'newton-fb', 'pgs'), ('nsn-ac', 'nsgs', 'prox'))
    """

    def __init__(self, plans: dict[str, Plan]):
        self.plans = dict(plans)
        #: (kind, method) -> the largest ``problem.size`` the policy tries that method on
        self.max_size: dict[tuple[str, str], int] = {}

    def auto(self, kind: str) -> tuple[str, ...]:
        """The methods ``solve(method="auto")`` tries on a ``kind`` problem, in order."""
        plan = self.plans.get(kind)
        return plan.auto if plan is not None else ()

    def run(self, kind: str) -> tuple[str, ...]:
        """The first method and the fallbacks of each step of a run whose one-step problem is ``kind``
        (a kind without a run plan: its ``auto`` order)."""
        plan = self.plans.get(kind)
        return () if plan is None else plan.run or plan.auto

    def set(self, kind: str, *, auto=None, run=None) -> None:
        """Set the ``auto`` and/or ``run`` order of ``kind`` (a one-step problem kind added by
        :func:`nsopt.modeling.register_osns`, or a study of another order)."""
        old = self.plans.get(kind, Plan())
        self.plans[kind] = Plan(old.auto if auto is None else tuple(auto), old.run if run is None else tuple(run))

    def attempt(self, problem, methods, solve, *, tol, warm=None, options=None, shared=False, time_limit=None,
                common=None) -> Solution:
        """Solve ``problem`` by the fallback rule (module docstring) over ``methods`` (the first, then the
        fallbacks); returns the best attempt, its ``trace`` the list of all of them.

        Parameters
        ----------
        problem : a problem of a registered kind.
        methods : sequence of str
            The method names, in order.
        solve : callable
            :func:`nsopt.solve` (handed over by the caller: the one body of every solve).
        tol : float
            The tolerance of every attempt.
        warm : optional
            The caller's warm start (what ``solve`` takes as ``warm_start``).
        options : dict
            The options (``time_limit`` among them is the budget of all the attempts).
        shared : bool
            True: the options are the policy's (``auto``), each method gets those it accepts; False: they are
            the first method's, the fallbacks get :data:`FALLBACK_OPTIONS`.
        common : dict
            Keywords given to every attempt (``max_iter``, ``history``, ``callback`` of ``auto``).

        Raises
        ------
        NotApplicable
            When no method applies.
        """
        options = options or {}
        if not shared and not common and time_limit is None and not self.max_size and "time_limit" not in options:
            # a named method (a run's step): its first attempt as a plain solve; its trace stays the method's
            # (empty) when it reaches tol, the rule's cost being paid only when it does not
            try:
                sol = solve(problem, methods[0], tol, warm_start=warm, **options)
            except NotApplicable:
                sol = None
            else:
                if sol.success:
                    return sol
            return self._rest(problem, methods, solve, tol, warm, options, sol)
        return self._rest(problem, methods, solve, tol, warm, options, None, shared, time_limit, common or {})

    def _rest(self, problem, methods, solve, tol, warm, options, done, shared=False, time_limit=None, common=None):
        """The rule of :meth:`attempt`, ``done`` the first method's warm-started attempt when it was made."""
        common = common or {}
        if "time_limit" in options:
            time_limit = options["time_limit"]
            options = {k: v for k, v in options.items() if k != "time_limit"}
        deadline = None if time_limit is None else time.perf_counter() + time_limit
        kind, limits = problem.kind, self.max_size
        trace, best, first = [], None, True
        for i, name in enumerate(methods):
            limit = limits.get((kind, name)) if limits else None
            if limit is not None and problem.size > limit:      # before applies: it may cost a factorisation
                trace.append((name, "skipped", math.nan, 0.0, f"size {problem.size} > {limit}, the policy's limit "
                                                              f"for this method (nsopt.policy.POLICY.max_size)"))
                continue
            if shared:
                own = registry.get(kind, name).options
                opts = {k: v for k, v in options.items() if k in own or k in ALIASES}
            elif i == 0:
                opts = options
            else:
                opts = {k: v for k, v in options.items() if k in FALLBACK_OPTIONS}
            if best is None or not math.isfinite(best.error):
                starts = [(warm, "")]
                if warm is not None and first:
                    starts.append((None, "cold start"))     # step 2 of the rule, when the warm start fails
            else:
                starts = [(best, f"warm start from {best.method}")]
            for start, note in starts:
                if done is not None:        # the first attempt, made by attempt()
                    sol, done = done, None
                else:
                    left = None
                    if deadline is not None:
                        left = deadline - time.perf_counter()
                        if left <= 0 and best is not None:
                            trace.append((name, "skipped", math.nan, 0.0, "time limit of the policy reached"))
                            break
                        left = max(left, 0.0)   # the first attempt judges its start at least: a status to return
                    t0 = time.perf_counter()
                    try:
                        sol = solve(problem, name, tol, time_limit=left, warm_start=start, **common, **opts)
                    except NotApplicable as e:
                        trace.append((name, "skipped", math.nan, time.perf_counter() - t0, str(e)))
                        break
                first = False
                trace.append((name, sol.status.value, sol.error, sol.solve_time, note or sol.message))
                if best is None or sol.success or sol.error < best.error:
                    best = sol
                if sol.success or (sol.status is Status.INFEASIBLE and sol.info.get("certificate")):
                    best.trace = trace
                    return best
        if best is None:
            raise NotApplicable(f"no method of the policy applies to this {kind} problem: {trace}")
        best.trace = trace
        return best


POLICY = MethodPolicy({
    "lcp": Plan(("qp", "lemke", "newton-fb", "pgs"), ("lemke", "newton-fb", "pgs")),
    "mlcp": Plan(("qp", "enum", "lemke", "newton-fb", "pgs"), ("lemke", "newton-fb", "pgs")),
    "relay": Plan(("qp", "lemke", "pgs"), ("lemke", "pgs", "qp")),
    "equality": Plan(("linear",), ("linear",)),
    "avi": Plan(("qp", "lemke"), ("lemke", "qp")),
    "fc2d": Plan(("nsgs", "nsn-ac", "lemke", "nsn-fb"), ("nsn-ac", "nsgs", "lemke")),
    "fc3d": Plan(("nsgs", "nsn-ac", "socp-fp", "nsn-fb", "prox"), ("nsn-ac", "nsgs", "prox")),
    "gfc2d": Plan(("nsgs", "nsn-ac"), ()),
    "gfc3d": Plan(("nsgs", "nsn-ac", "socp-fp", "nsn-fb"), ("nsn-ac", "nsgs")),
    "gmp": Plan(("nsgs", "nsn"), ("nsn", "nsgs")),
    "multiple-impact": Plan(("lzb",), ("lzb",)),
})


def solve_auto(problem, kind, tol, max_iter, options, solve, *, time_limit=None, history=False, callback=None,
               x0=None) -> Solution:
    """``solve(method="auto")``: :meth:`MethodPolicy.attempt` over the ``auto`` order of ``kind`` (all the
    registered methods of the kind when it has none), with the policy's options shared among the methods;
    ``time_limit`` is the budget of the whole policy; ``x0`` the caller's warm start."""
    names = [m for m in POLICY.auto(kind) if registry.has(kind, m)] or [i.name for i in registry.for_kind(kind)]
    used = set(ALIASES)
    for name in names:
        used.update(k for k in options if k in registry.get(kind, name).options)
    unknown = [k for k in options if k not in used]
    if unknown:
        raise OptionError(f"option(s) {unknown} are accepted by none of the methods auto tries for {kind}: {names}")
    t_all = time.perf_counter()
    best = POLICY.attempt(problem, names, solve, tol=tol, warm=x0, options=options, shared=True,
                          time_limit=time_limit, common={"max_iter": max_iter, "history": history, "callback": callback})
    best.solve_time = time.perf_counter() - t_all
    best.method = f"auto:{best.method}"
    best.options = dict(options)
    return best
