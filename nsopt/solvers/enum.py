r"""Enumeration of the complementary bases of a small LCP or MLCP.

For an LCP (``w = Mz + q``, ``0 <= z ⊥ w >= 0``) each subset J of the indices is a candidate
support: :math:`M_{JJ} z_J = -q_J`, :math:`z_{\bar J} = 0`; it is a solution when
:math:`z_J \ge 0` and :math:`w_{\bar J} \ge 0`. For an MLCP the free variables (``is_eq``) are
always basic and their rows always equations: the square system on rows and columns
:math:`E \cup J` is solved instead. All :math:`2^m` subsets (m = number of complementarity pairs)
are visited at most once, by increasing Hamming distance from a guess (the support of the warm
start when given — which is itself iteration 0, returned when it solves the problem — else
:math:`\{i : q_i < 0\}`, the solution when M is diagonal); a candidate that passes the sign test
is recomputed from its basis by an LU solve with iterative refinement
(:func:`nsopt.linalg.basis_solve`), and the first whose error measure (``problem.error``) is
at most ``tol`` is returned. A singular subsystem is skipped. The supports are
visited in compiled chunks (iteration contract: one support per iteration; ``time_limit`` and Ctrl-C
act between chunks; the iterate of a chunk is the point of the last support solved).

Size guard: m > :data:`MAX_PAIRS` (= 20, about a million linear systems) is refused with
:class:`~nsopt.exceptions.NotApplicable` (through the method's ``applies`` check).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._jit import njit

from ..linalg import basis_solve
from ..reductions import box_of
from ..registry import register
from ..result import Status
from ._gs_kernels import gauss_solve

MAX_PAIRS = 20


@njit(cache=True)
def _enum_run(M, q, eq, comp, guess, state, budget, tol, z, supp):
    """Visit up to ``budget`` supports from state = [distance d, combination x, visited].

    ``z`` holds the point of the last support whose system was solved, ``supp`` that support (the
    free variables and the basic complementarity ones). Returns 1 when the support just visited
    passes the cheap sign test (state already points past it), 0 when the budget is used, 2 when
    all supports are visited.
    """
    N = q.shape[0]
    ne = eq.shape[0]
    m = comp.shape[0]
    scale = 1.0
    for i in range(N):
        if abs(q[i]) > scale:
            scale = abs(q[i])
    idx = np.empty(N, dtype=np.int64)
    A = np.empty(N * N)
    b = np.empty(N)
    x = np.empty(N)
    d = state[0]
    cur = state[1]
    top = np.int64(1) << m
    used = 0
    while d <= m:
        if cur < 0:
            cur = (np.int64(1) << d) - 1
        while cur < top:
            if used >= budget:
                state[0] = d
                state[1] = cur
                return 0
            mask = cur ^ guess
            # next combination of the same popcount (Gosper), computed before testing
            if cur == 0:
                nxt = top
            else:
                c = cur & -cur
                r = cur + c
                nxt = (((r ^ cur) >> 2) // c) | r
            used += 1
            state[2] += 1
            k = 0
            for i in range(ne):
                idx[k] = eq[i]
                k += 1
            for t in range(m):
                if (mask >> t) & 1:
                    idx[k] = comp[t]
                    k += 1
            Ak = A[:k * k].reshape((k, k))     # C-contiguous, as gauss_solve's other callers pass
            for a in range(k):
                b[a] = -q[idx[a]]
                for c2 in range(k):
                    Ak[a, c2] = M[idx[a], idx[c2]]
            ok = gauss_solve(Ak, b[:k], x[:k], 1e-13)
            if ok:
                for i in range(N):
                    z[i] = 0.0
                    supp[i] = False
                for a in range(k):
                    z[idx[a]] = x[a]
                    supp[idx[a]] = True
                good = True
                for t in range(m):
                    i = comp[t]
                    if (mask >> t) & 1:
                        if z[i] < -tol * scale:
                            good = False
                            break
                    else:
                        w = q[i]
                        for a in range(k):
                            w += M[i, idx[a]] * x[a]
                        if w < -tol * scale:
                            good = False
                            break
                if good:
                    state[0] = d
                    state[1] = nxt
                    return 1
            cur = nxt
        d += 1
        cur = -1
    state[0] = d
    state[1] = -1
    return 2


def _too_big(problem):
    m = problem.size if problem.kind == "lcp" else problem.m
    if m > MAX_PAIRS:
        what = "n" if problem.kind == "lcp" else "m (complementarity pairs)"
        return (f"enumeration visits 2^{what} complementary bases; {what} = {m} exceeds the limit "
                f"{MAX_PAIRS} (use lemke or newton-fb)")
    return None


def _enumerate(problem, mon, eq, comp):
    M = problem.M.toarray() if sp.issparse(problem.M) else np.asarray(problem.M, float)
    M = np.ascontiguousarray(M)
    q = np.asarray(problem.q, float)
    N, m = q.shape[0], comp.shape[0]
    lo, hi = box_of(problem)
    mon.budget(1 << m)
    # guess of the support: that of the warm start, else the rows with q_i < 0 (exact when M is diagonal)
    x0 = mon.x0.get("z") if mon.x0 is not None else None
    sel = np.asarray(x0) > 0 if x0 is not None else q < 0
    guess = 0
    for t, i in enumerate(comp):
        if sel[i]:
            guess |= 1 << t
    z = mon.start_vector("z", N)
    supp = np.zeros(N, dtype=np.bool_)
    info = {"visited": 0}
    if mon.start({"z": z}, problem.error(z)):
        return mon.solution(info=info, message="the start (warm start, else z = 0) solves the problem"
                           if mon.status is Status.SOLVED else "")
    state = np.array([0, -1, 0], dtype=np.int64)
    cheap_tol = max(mon.tol, 1e-10)
    _enum_run(M, q, eq, comp, np.int64(guess), state.copy(), 0, cheap_tol, z.copy(), supp)   # load the kernel
    mon.built()
    while True:
        c = mon.chunk(per_iteration_errors=False)
        before = int(state[2])
        code = int(_enum_run(M, q, eq, comp, np.int64(guess), state, c, cheap_tol, z, supp))
        done = int(state[2]) - before
        mon.timed(done)
        info["visited"] = int(state[2])
        if code == 0 and int(state[2]) >= 1 << m:
            code = 2
        x = z
        if code == 1:   # a candidate: recompute it from its basis (refined solve), judged by the error
            zr = basis_solve(M, q, lo, hi, supp, z)
            x = zr if problem.error(zr) < problem.error(z) else z
        if code == 2:
            if done:
                mon.step({"z": x}, problem.error(x), done)
            if mon.stopped and mon.status is not Status.MAX_ITER:
                return mon.solution(info=info)
            msg = (f"all 2^{m} supports visited: no complementary basic solution (with nonsingular basis) "
                   "within tol")
            return mon.solution(status=Status.STALLED, message=msg, info=info)
        if mon.step({"z": x}, problem.error(x), done):
            if mon.status is Status.SOLVED:
                mon.message = f"solution on support {int(state[2])} visited"
            elif mon.status is Status.MAX_ITER:
                mon.message = f"{int(state[2])} supports visited without a solution"
            return mon.solution(info=info)


@register("lcp", "enum", f"enumeration of the 2^n complementary bases (n <= {MAX_PAIRS})",
          applies=_too_big)
def lcp_enum(problem, mon):
    """Enumerate the supports J of z (module docstring); ``max_iter`` bounds the number visited
    (default 2^n); ``warm_start``: the enumeration starts from its support. When every support has
    been visited without success the status is STALLED (no solution with a nonsingular basis exists;
    this is not a proof of infeasibility when some bases are singular).

    {solve_contract}
    >>> p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    >>> s = nsopt.solve(p, method="enum", tol=1e-10)
    >>> print(s.status.value, s.z.round(6))
    solved [1.333333 2.333333]
    """
    n = problem.size
    return _enumerate(problem, mon, np.zeros(0, np.int64), np.arange(n, dtype=np.int64))


@register("mlcp", "enum",
          f"enumeration of the 2^m complementary bases, free variables always basic (m <= {MAX_PAIRS})",
          applies=_too_big)
def mlcp_enum(problem, mon):
    """Enumerate the supports of the complementarity variables (module docstring).

    {solve_contract}
    >>> p = nsopt.MLCP(A=[[2.0]], B=[[2.0]], C=[[1.0]], D=[[1.0]], a=[-2.0], b=[-3.0])
    >>> s = nsopt.solve(p, method="enum", tol=1e-10)
    >>> print(s.status.value, s.z.round(6))
    solved [0.333333 1.333333]
    """
    eq = np.flatnonzero(problem.is_eq).astype(np.int64)
    comp = np.flatnonzero(~np.asarray(problem.is_eq)).astype(np.int64)
    return _enumerate(problem, mon, eq, comp)
