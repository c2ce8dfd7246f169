r"""Enumeration of the complementary bases of a small LCP or MLCP.

For an LCP (``w = Mz + q``, ``0 <= z ⊥ w >= 0``) each subset J of the indices is a candidate
support: :math:`M_{JJ} z_J = -q_J`, :math:`z_{\bar J} = 0`; it is a solution when
:math:`z_J \ge 0` and :math:`w_{\bar J} \ge 0`. For an MLCP the free variables (``is_eq``) are
always basic and their rows always equations: the square system on rows and columns
:math:`E \cup J` is solved instead. All :math:`2^m` subsets (m = number of complementarity pairs)
are visited at most once, by increasing Hamming distance from a guess (the support of ``z0``
when given, else :math:`\{i : q_i < 0\}`, the solution when M is diagonal); the first candidate whose error measure
(``problem.error``) is at most ``tol`` is returned. A singular subsystem is skipped.

Size guard: m > :data:`MAX_PAIRS` (= 20, about a million linear systems) is refused with
:class:`~nsopt.exceptions.NotApplicable` (through the method's ``applies`` check).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..registry import Outcome, as_x0, register
from ..result import Status

try:
    from numba import njit
except ImportError:  # pragma: no cover
    def njit(*a, **k):
        if a and callable(a[0]):
            return a[0]
        return lambda f: f

MAX_PAIRS = 20


@njit(cache=True)
def _solve_small(A, b, x):
    """Gaussian elimination with partial pivoting, in place on copies; False if (near) singular."""
    n = b.shape[0]
    if n == 0:
        return True
    amax = 0.0
    for i in range(n):
        for j in range(n):
            if abs(A[i, j]) > amax:
                amax = abs(A[i, j])
    if amax == 0.0:
        return False
    tiny = amax * 1e-13
    for k in range(n):
        p = k
        best = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > best:
                best = abs(A[i, k])
                p = i
        if best <= tiny:
            return False
        if p != k:
            for j in range(n):
                t = A[k, j]
                A[k, j] = A[p, j]
                A[p, j] = t
            t = b[k]
            b[k] = b[p]
            b[p] = t
        for i in range(k + 1, n):
            f = A[i, k] / A[k, k]
            if f != 0.0:
                for j in range(k + 1, n):
                    A[i, j] -= f * A[k, j]
                b[i] -= f * b[k]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= A[i, j] * x[j]
        x[i] = s / A[i, i]
    return True


@njit(cache=True)
def _enum_run(M, q, eq, comp, guess, state, budget, tol, z):
    """Visit up to ``budget`` supports from state = [distance d, combination x, visited].

    Returns 1 when the support just visited passes the cheap sign test (z holds the candidate;
    state already points past it), 0 when the budget is used, 2 when all supports are visited.
    """
    N = q.shape[0]
    ne = eq.shape[0]
    m = comp.shape[0]
    scale = 1.0
    for i in range(N):
        if abs(q[i]) > scale:
            scale = abs(q[i])
    idx = np.empty(N, dtype=np.int64)
    A = np.empty((N, N))
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
            for a in range(k):
                b[a] = -q[idx[a]]
                for c2 in range(k):
                    A[a, c2] = M[idx[a], idx[c2]]
            ok = _solve_small(A[:k, :k], b[:k], x[:k])
            if ok:
                for i in range(N):
                    z[i] = 0.0
                for a in range(k):
                    z[idx[a]] = x[a]
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


def _enumerate(problem, eq, comp, tol, max_iter, history, callback, z0):
    M = problem.M.toarray() if sp.issparse(problem.M) else np.asarray(problem.M, float)
    M = np.ascontiguousarray(M)
    q = np.asarray(problem.q, float)
    N, m = q.shape[0], comp.shape[0]
    guess = 0
    # guess of the support: that of z0, else the rows with q_i < 0 (exact when M is diagonal)
    sel = as_x0(z0, N, "z0") > 0 if z0 is not None else q < 0
    for t, i in enumerate(comp):
        if sel[i]:
            guess |= 1 << t
    budget = (1 << m) if max_iter is None else int(max_iter)
    state = np.array([0, -1, 0], dtype=np.int64)
    z = np.zeros(N)
    hist = [] if history else None
    best_z, best_e = np.zeros(N), problem.error(np.zeros(N))
    status, msg = Status.MAX_ITER, ""
    cheap_tol = max(tol, 1e-10)
    while True:
        left = budget - int(state[2])
        if left <= 0:
            msg = f"{budget} supports visited without a solution"
            break
        step = 1 if callback is not None else left
        code = int(_enum_run(M, q, eq, comp, np.int64(guess), state, step, cheap_tol, z))
        solved = False
        if code == 1:
            e = problem.error(z)
            if e < best_e:
                best_z, best_e = z.copy(), e
            if hist is not None:
                hist.append(e)
            if e <= tol:
                status, msg, solved = Status.SOLVED, f"solution on support {int(state[2])} visited", True
        if callback is not None:
            try:
                callback(int(state[2]), {"z": best_z.copy()}, best_e)
            except StopIteration:
                status, msg = Status.CALLBACK_STOP, "stopped by the callback"
                break
        if solved:
            break
        if code == 2:
            status = Status.STALLED if best_e > tol else Status.SOLVED
            msg = ("all 2^%d supports visited: no complementary basic solution "
                   "(with nonsingular basis) within tol" % m)
            break
    return Outcome({"z": best_z}, status, int(state[2]), hist, msg, {"visited": int(state[2])})


@register("lcp", "enum", f"enumeration of the 2^n complementary bases (n <= {MAX_PAIRS})",
          applies=_too_big)
def lcp_enum(problem, *, tol, max_iter, history=False, callback=None, z0=None):
    """Enumerate the supports J of z (module docstring); ``max_iter`` bounds the number visited
    (default 2^n); ``z0``: the enumeration starts from its support. When every support has been
    visited without success the status is STALLED (no solution with a nonsingular basis exists;
    this is not a proof of infeasibility when some bases are singular)."""
    n = problem.size
    return _enumerate(problem, np.zeros(0, np.int64), np.arange(n, dtype=np.int64), tol, max_iter,
                      history, callback, z0)


@register("mlcp", "enum",
          f"enumeration of the 2^m complementary bases, free variables always basic (m <= {MAX_PAIRS})",
          applies=_too_big)
def mlcp_enum(problem, *, tol, max_iter, history=False, callback=None, z0=None):
    """Enumerate the supports of the complementarity variables (module docstring)."""
    eq = np.flatnonzero(problem.is_eq).astype(np.int64)
    comp = np.flatnonzero(~np.asarray(problem.is_eq)).astype(np.int64)
    return _enumerate(problem, eq, comp, tol, max_iter, history, callback, z0)
