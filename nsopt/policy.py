"""The ``auto`` policy, documented in one place.

For each problem kind, ``POLICY`` lists the methods ``method="auto"`` tries, in order. A method is
skipped when it is not registered (optional backend missing) or its ``applies`` check rejects the
instance (e.g. ``qp`` needs a symmetric positive semidefinite M; enumeration needs a small problem);
it is abandoned for the next one when its result does not reach ``tol`` (max_iter, stalled fixed
point, Newton line-search failure, ray termination). Every attempt is recorded in
``Solution.trace`` as ``(method, status, error, seconds, note)``, so the user sees the path taken.
The returned solution is the first that reaches ``tol``, else the attempt with the smallest error.

===============  ======================================================================================
kind             order
===============  ======================================================================================
lcp              qp (symmetric PSD M) → lemke (n <= 10000 after reduction) → newton-fb → pgs
mlcp             qp (symmetric PSD structure) → enum (m <= 20) → lemke → newton-fb → pgs
relay            qp (symmetric PSD M) → lemke → pgs
equality         linear
avi              qp (symmetric PSD M) → lemke
fc2d             nsgs → nsn-ac → lemke → nsn-fb
fc3d             nsgs → nsn-ac → socp-fp → nsn-fb → prox
gfc2d            nsgs → nsn-ac
gfc3d            nsgs → nsn-ac → socp-fp → nsn-fb
gmp              nsgs → nsn (global semismooth Newton when block Gauss–Seidel stalls)
multiple-impact  lzb
===============  ======================================================================================

NSGS leads for friction contact because it is cheap per sweep and Siconos' own default, so the
numbers compare; a Newton method takes over when NSGS stalls (typically on stiff or badly
conditioned problems such as RockPile), warm-started from NSGS' best iterate where it accepts one.

A certificate stops the policy: when a method returns ``Status.INFEASIBLE`` with
``Solution.info["certificate"]`` (a conic backend proved the QP primal infeasible, e.g. an AVI over
an empty polyhedron, or dual infeasible, i.e. unbounded below, so a PSD problem has no solution),
``auto`` returns that INFEASIBLE solution and does not try the other methods, whose error measures
cannot contradict a proof.

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
45–64 MB, most of it their compiled kernels. ``MAX_SIZE`` is the place for a size above which
``auto`` skips a method (empty: every method in the table scales).
"""

from __future__ import annotations

import math
import time

from . import registry
from .exceptions import NotApplicable, OptionError
from .registry import ALIASES
from .result import Solution, Status

POLICY: dict[str, tuple[str, ...]] = {
    "lcp": ("qp", "lemke", "newton-fb", "pgs"),
    "mlcp": ("qp", "enum", "lemke", "newton-fb", "pgs"),
    "relay": ("qp", "lemke", "pgs"),
    "equality": ("linear",),
    "avi": ("qp", "lemke"),
    "fc2d": ("nsgs", "nsn-ac", "lemke", "nsn-fb"),
    "fc3d": ("nsgs", "nsn-ac", "socp-fp", "nsn-fb", "prox"),
    "gfc2d": ("nsgs", "nsn-ac"),
    "gfc3d": ("nsgs", "nsn-ac", "socp-fp", "nsn-fb"),
    "gmp": ("nsgs", "nsn"),
    "multiple-impact": ("lzb",),
}


MAX_SIZE: dict[tuple[str, str], int] = {}    # (kind, method) -> largest problem.size auto tries it on


def solve_auto(problem, kind, tol, max_iter, options, solve, *, time_limit=None, history=False, callback=None,
               x0=None) -> Solution:
    """Try the policy's methods in order (see the module docstring), each attempt a call of ``solve``
    (:func:`nsopt.solve`, handed over by it: the one body of every solve) with the method named.
    The common options apply to every attempt; ``time_limit`` is the budget of the whole policy;
    each attempt after the first is warm-started from the best iterate so far (when its error is
    finite; else from ``x0``, the caller's warm start)."""
    names = [m for m in POLICY.get(kind, ()) if registry.has(kind, m)]
    candidates = [registry.get(kind, m) for m in names] or registry.for_kind(kind)
    used = set(ALIASES)
    for info in candidates:
        used.update(k for k in options if k in info.options)
    unknown = [k for k in options if k not in used]
    if unknown:
        raise OptionError(f"option(s) {unknown} are accepted by none of the methods auto tries for {kind}: "
                          f"{[i.name for i in candidates]}")
    trace, best = [], None
    t_all = time.perf_counter()
    deadline = None if time_limit is None else t_all + time_limit
    for info in candidates:
        note = ""
        limit = MAX_SIZE.get((kind, info.name))
        if limit is not None and problem.size > limit:    # before applies: it may cost a factorisation
            why = f"size {problem.size} > {limit}, auto's limit for this method (nsopt.policy.MAX_SIZE)"
        else:
            why = info.applies(problem) if info.applies is not None else None
        if why:
            trace.append((info.name, "skipped", float("nan"), 0.0, why))
            continue
        left = None
        if deadline is not None:
            left = deadline - time.perf_counter()
            if left <= 0:
                trace.append((info.name, "skipped", float("nan"), 0.0, "time limit of auto reached"))
                continue
        opts = {k: v for k, v in options.items() if k in info.options or k in ALIASES}
        start = x0
        if best is not None and math.isfinite(best.error):  # warm start from the best iterate so far
            start = best
            note = f"warm start from {best.method}"
        t0 = time.perf_counter()
        try:
            sol = solve(problem, info.name, tol, max_iter, time_limit=left, history=history, callback=callback,
                        warm_start=start, **opts)
        except NotApplicable as e:
            trace.append((info.name, "skipped", float("nan"), time.perf_counter() - t0, str(e)))
            continue
        trace.append((info.name, sol.status.value, sol.error, sol.solve_time, note or sol.message))
        if best is None or sol.error < best.error:
            best = sol
        if sol.status is Status.SOLVED:
            break
        if sol.status is Status.INFEASIBLE and sol.info.get("certificate"):
            break       # a certificate (e.g. a conic backend's): the problem has no solution
    if best is None:
        raise NotApplicable(f"no method of the auto policy applies to this {kind} problem: {trace}")
    best.trace = trace
    best.solve_time = time.perf_counter() - t_all
    best.method = f"auto:{best.method}"
    best.options = dict(options)
    return best
