"""Lemke's revised tableau and its complementary pivots (:mod:`nsopt.solvers.lemke` drives them).

A dense *revised* tableau: the basis inverse :math:`B^{-1}` is kept explicitly (column major)
together with :math:`\beta = B^{-1} q`; a column of :math:`B^{-1}` whose unit vector :math:`w_j` is
basic is the unit vector of its row, so products and rank-one updates only touch the :math:`k`
"dense" columns. The pivots run compiled (:func:`lemke_run`), in chunks that :class:`Tableau`
steps; the lexicographic ratio test with its noise-scaled ties is documented in
:mod:`nsopt.solvers.lemke`. :func:`lcp_start` is the compiled iteration 0 of a small dense LCP.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from .._jit import njit

from . import _gs_kernels as K

HASH_WINDOW = 1 << 20    # basis hashes kept to tell whether a basis repeated (8 MB)
REFINE_ROUNDS = np.int64(3)   # refinement steps of the compiled start's support solve (typed: no literal)


# --------------------------------------------------------------------------------------------
# compiled kernel
# variables: w_i -> i, z_i -> n + i, z0 -> 2n; pos[var] = basis row or -1; basis[row] = var
# Binv is Fortran ordered; dense[j] is True when column j of Binv is not a unit vector
# (i.e. w_j is not basic); the other columns are e_{pos[j]} and are never stored as such.
# --------------------------------------------------------------------------------------------

@njit(cache=True, inline="always")
def _entering_column(MF, cover, Binv, dense, pos, var, col):
    n = col.shape[0]
    if var < n:  # w_var: column e_var of the constraint matrix [I, -M, -d]
        if dense[var]:
            for i in range(n):
                col[i] = Binv[i, var]
        else:
            for i in range(n):
                col[i] = 0.0
            col[pos[var]] = 1.0
        return
    for i in range(n):
        col[i] = 0.0
    if var < 2 * n:
        j = var - n
        for c in range(n):
            a = -MF[c, j]
            if a == 0.0:
                continue
            if dense[c]:
                for i in range(n):
                    col[i] += Binv[i, c] * a
            else:
                col[pos[c]] += a
    else:
        for c in range(n):
            a = -cover[c]
            if dense[c]:
                for i in range(n):
                    col[i] += Binv[i, c] * a
            else:
                col[pos[c]] += a


@njit(cache=True, inline="always")
def _lex_value(Binv, dense, basis, i, j):
    """(B^-1)[i, j] with the unit columns implicit."""
    if dense[j]:
        return Binv[i, j]
    return 1.0 if basis[i] == j else 0.0


@njit(cache=True)
def _keep_ties(cand, c, x, slack, m):
    """Keep in front the candidates k < m whose ratio x_k / c_k (c_k > 0) is at most
    min_l (x_l + slack) / c_l (Harris' bound: pivoting on k leaves every x_l - c_l x_k / c_k
    above -slack). Returns how many are kept (at least the minimum ratio's row)."""
    bound = np.inf
    for k in range(m):
        t = (x[k] + slack) / c[k]
        if t < bound:
            bound = t
    mm = 0
    for k in range(m):
        if x[k] / c[k] <= bound:
            t = cand[mm]
            cand[mm] = cand[k]
            cand[k] = t
            v = c[mm]
            c[mm] = c[k]
            c[k] = v
            v = x[mm]
            x[mm] = x[k]
            x[k] = v
            mm += 1
    return mm


@njit(cache=True, inline="always")
def _ratio_test(Binv, beta, col, dense, basis, z0var, initial, piv_tol, tie_tol, cand, c, x):
    """Row leaving the basis, or -1 (secondary ray). ``initial``: the z0 step (lexicographic max).

    Lexicographic minimum of (beta_i, Binv_i,:) / col_i over the blocking rows; two values tie
    when choosing either leaves the other row's entry above minus the noise (module docstring)."""
    n = col.shape[0]
    cmax = 0.0
    for i in range(n):
        a = abs(col[i])
        if a > cmax:
            cmax = a
    thr = piv_tol * max(cmax, 1e-300)
    sgn = -1.0 if initial else 1.0     # initial: the rows with col < 0, lexicographic max of the ratio
    sb = 1.0
    for i in range(n):
        if abs(beta[i]) > sb:
            sb = abs(beta[i])
    nc = np.int64(0)      # (a literal 0 would be passed to _keep_ties as Literal[int](0): a second compile)
    for i in range(n):
        if sgn * col[i] > thr:
            cand[nc] = i
            c[nc] = sgn * col[i]
            x[nc] = beta[i]
            nc += 1
    if nc == 0:
        return -1
    m = _keep_ties(cand, c, x, tie_tol * sb, nc)
    if m == 1:
        return cand[0]
    if not initial:  # z0 tied on the ratio: let it leave, which ends the path with a solution
        for k in range(m):
            if basis[cand[k]] == z0var:
                return cand[k]
    # lexicographic tie-break on the columns of B^-1 (noise scale: the largest entry of B^-1)
    sB = 1.0
    for j in range(n):
        if dense[j]:
            for i in range(n):
                if abs(Binv[i, j]) > sB:
                    sB = abs(Binv[i, j])
    j = np.int64(0)
    while m > 1 and j < n:
        for k in range(m):
            x[k] = _lex_value(Binv, dense, basis, cand[k], j)
        m = _keep_ties(cand, c, x, tie_tol * sB, m)
        j += 1
    return cand[0]


@njit(cache=True, inline="always")
def _pivot(Binv, beta, col, dense, basis, pos, r, enter, nzc):
    """Pivot on row r with entering variable ``enter`` whose updated column is ``col``."""
    n = col.shape[0]
    leave = basis[r]
    # column j of the new B^-1 = E * old column j, E the eta matrix of (r, col)
    inv = 1.0 / col[r]
    nnz = 0
    for j in range(n):
        if dense[j]:
            nzc[nnz] = j
            nnz += 1
    if leave < n:
        # w_leave leaves: its unit column e_r becomes dense
        j = leave
        for i in range(n):
            Binv[i, j] = 0.0
        Binv[r, j] = 1.0
        dense[j] = True
        nzc[nnz] = j
        nnz += 1
    br = beta[r] * inv
    for i in range(n):
        beta[i] -= col[i] * br
    beta[r] = br
    for k in range(nnz):
        j = nzc[k]
        f = Binv[r, j] * inv
        if f != 0.0:
            for i in range(n):
                Binv[i, j] -= col[i] * f
        Binv[r, j] = f
    # unit columns of rows other than r are unchanged (E e_i = e_i for i != r)
    basis[r] = enter
    pos[leave] = -1
    pos[enter] = r
    if enter < n:
        # w_enter basic at row r: its column of B^-1 is exactly e_r again
        j = enter
        dense[j] = False
        for i in range(n):
            Binv[i, j] = 0.0


@njit(cache=True)
def lemke_run(MF, cover, Binv, beta, dense, basis, pos, state, nsteps, piv_tol, tie_tol, col, zob, hashes):
    """Run up to ``nsteps`` pivots. state = [entering var, pivots done, basis hash].

    ``hashes[k]`` receives the (Zobrist) hash of the basis after the k-th pivot of this call.
    Returns 0 (nsteps done), 1 (z0 left: solution), 2 (secondary ray; col = its column),
    3 (numerical trouble).
    """
    n = beta.shape[0]
    z0var = 2 * n
    cand = np.empty(n, dtype=np.int64)
    cc = np.empty(n)
    xx = np.empty(n)
    nzc = np.empty(n + 1, dtype=np.int64)
    for k in range(nsteps):
        enter = state[0]
        _entering_column(MF, cover, Binv, dense, pos, enter, col)
        initial = pos[z0var] < 0 and enter == z0var
        r = _ratio_test(Binv, beta, col, dense, basis, z0var, initial, piv_tol, tie_tol, cand, cc, xx)
        if r < 0:
            return 2
        if not np.isfinite(col[r]) or col[r] == 0.0:
            return 3
        leave = basis[r]
        _pivot(Binv, beta, col, dense, basis, pos, r, enter, nzc)
        state[1] += 1
        state[2] ^= zob[leave] ^ zob[enter]
        hashes[k] = state[2]
        if leave == z0var:
            return 1
        # complementary rule
        state[0] = leave + n if leave < n else leave - n
    return 0



# --------------------------------------------------------------------------------------------
# iteration 0 of a small dense LCP, compiled (the start of lemke on a small LCP)
# --------------------------------------------------------------------------------------------

@njit(cache=True)
def lcp_start(M, q, z, w, warm, qnorm, tol):
    """Iteration 0 of ``lemke`` on a small dense LCP (:func:`_begin`) in one call: w = Mz + q and
    the error of the start z (the warm start, else 0); when a warm start is above ``tol``, the point
    of its support {z > 0} as a final basis (M_FF z_F = -q_F, the rest 0), kept when its error is
    smaller (z, w updated in place). Returns (error, code): 0 the start kept, 1 the support point
    taken, 2 the support system needs the Python path, -1 z not finite."""
    n = q.shape[0]
    for i in range(n):
        if not math.isfinite(z[i]):
            return np.nan, -1
    K.dense_affine(M, z, q, w)
    err = K.lcp_error(z, w, qnorm)
    if not (warm and err > tol):
        return err, 0
    F = np.empty(n, dtype=np.int64)
    m = 0
    for i in range(n):
        if z[i] > 0.0:
            F[m] = i
            m += 1
    A = np.empty((m, m))
    b = np.empty(m)
    for a in range(m):
        b[a] = -q[F[a]]
        for c in range(m):
            A[a, c] = M[F[a], F[c]]
    x = np.empty(m)
    if m and not K.lu_refined(A, b, x, REFINE_ROUNDS):
        return err, 2
    zb = np.zeros(n)
    for a in range(m):
        zb[F[a]] = x[a]
    wb = np.empty(n)
    K.dense_affine(M, zb, q, wb)
    eb = K.lcp_error(zb, wb, qnorm)
    if eb < err:
        for i in range(n):
            z[i] = zb[i]
            w[i] = wb[i]
        return eb, 1
    return err, 0


# --------------------------------------------------------------------------------------------
# the tableau stepped from Python
# --------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=64)
def _zobrist(n):
    """Zobrist hashing of the bases of size n: one random 62-bit key per variable, XORed
    over the basic ones, and the hash of the initial basis (every w basic)."""
    zob = np.random.default_rng(2 * n + 1).integers(1, 2 ** 62, size=2 * n + 1, dtype=np.int64)
    return zob, (np.bitwise_xor.reduce(zob[:n]) if n else np.int64(0))


class Tableau:
    """State of a Lemke path on unit-scaled data (stepped in compiled chunks)."""

    def __init__(self, M, q, cover, unscale=1.0, b=1.0):
        n = q.shape[0]
        self.n, self.unscale, self.b = n, unscale, b
        self.MF = np.asfortranarray(M, dtype=float)
        self.cover = np.ascontiguousarray(cover, dtype=float)
        self.Binv = np.zeros((n, n), order="F")
        self.beta = q.astype(float).copy()
        self.dense = np.zeros(n, dtype=np.bool_)
        self.basis = np.arange(n, dtype=np.int64)
        self.pos = -np.ones(2 * n + 1, dtype=np.int64)
        self.pos[:n] = np.arange(n)
        self.zob, h = _zobrist(n)
        self.state = np.array([2 * n, 0, h], dtype=np.int64)
        self.hashes = [np.array([h], dtype=np.int64)]   # basis hashes, the most recent HASH_WINDOW
        self._kept, self.trimmed = 1, False
        self.col = np.zeros(n)

    def run(self, nsteps, piv_tol, tie_tol):
        buf = np.empty(nsteps, dtype=np.int64)
        before = int(self.state[1])
        code = int(lemke_run(self.MF, self.cover, self.Binv, self.beta, self.dense, self.basis, self.pos,
                              self.state, int(nsteps), float(piv_tol), float(tie_tol), self.col, self.zob, buf))
        self.hashes.append(buf[:int(self.state[1]) - before])
        self._kept += self.hashes[-1].size
        while self._kept > HASH_WINDOW and len(self.hashes) > 1:   # bounded memory on long runs
            self._kept -= self.hashes.pop(0).size
            self.trimmed = True
        return code

    @property
    def pivots(self) -> int:
        return int(self.state[1])

    def repeated(self) -> bool:
        """True when some basis of the path came back (by its hash)."""
        h = np.concatenate(self.hashes)
        return np.unique(h).size < h.size

    def z(self):
        n, b = self.n, self.basis
        z = np.zeros(n)
        zb = (b >= n) & (b < 2 * n)
        z[b[zb] - n] = self.beta[zb]
        return z * self.unscale

    def basic_mask(self):
        """Boolean mask of the basic z_i."""
        n, b = self.n, self.basis
        mask = np.zeros(n, bool)
        mask[b[(b >= n) & (b < 2 * n)] - n] = True
        return mask

    def z0(self):
        r = self.pos[2 * self.n]
        return float(self.beta[r]) * self.b if r >= 0 else 0.0

    def ray(self):
        """Direction (w, z, z0) of the secondary ray from the last entering column."""
        n = self.n
        d = np.zeros(2 * n + 1)
        d[self.state[0]] = 1.0
        d[self.basis] = -self.col
        return d[:n], d[n:2 * n], float(d[2 * n])


def scaled_tableau(M, q, cover, a=None):
    """The start of Lemke's path on unit-scaled data: the LCP is homogeneous, z solves (M, q) iff
    a z / b solves (M / a, q / b), a = max|M|, b = max|q| (``a``: given when already known)."""
    a = a if a is not None else float(np.max(np.abs(M))) or 1.0
    b = float(np.max(np.abs(q))) or 1.0
    return Tableau(M / a, q / b, cover, unscale=b / a, b=b)


def first_chunk(n: int) -> float:
    """Pivots of the first compiled chunk of a path (a pivot costs O(n^2) at most)."""
    return 1e6 / max(1, n) ** 2
