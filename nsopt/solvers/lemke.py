r"""Lexicographic Lemke method for the LCP, and through :mod:`nsopt.reductions` for Relay, MLCP, AVI
and FC2D.

The LCP :math:`w = Mz + q,\ 0 \le z \perp w \ge 0` is augmented with an artificial variable
:math:`z_0` and a covering vector :math:`d > 0` (default :math:`d = e = (1, \dots, 1)`):

.. math::  w = Mz + q + d z_0 ,

started from the almost complementary basis where every :math:`w_i` is basic, then :math:`z_0`
enters at the value :math:`\max_i(-q_i/d_i)`. Each pivot lets the complement of the variable that
just left enter (complementary pivoting); the leaving row is chosen by the lexicographic minimum
ratio rule on the rows :math:`(\beta_i, (B^{-1})_{i,:})/\bar a_i` [1]_ (:math:`\beta = B^{-1}q`,
:math:`\bar a = B^{-1}A_{\cdot s}` the entering column). It is the minimum ratio rule for the
perturbed right-hand side :math:`q + (\varepsilon, \varepsilon^2, \dots, \varepsilon^n)`, under
which every basis is nondegenerate: the bases of the path are all distinct and Lemke cannot cycle.

Floating point and the lexicographic rule. The rule compares entries of :math:`B^{-1}` that are
often exactly zero; after a few dozen pivots they carry rounding noise (1e-16..1e-14), and a
comparison that takes the noise for a value picks a row that is *not* the lexicographic minimum —
the perturbed basis is no longer feasible and the path can come back to a basis (nsopt 0.1 cycled
with period 4 on Siconos' ``lcp_tobenna.dat``, 40 x 40, because its tie tolerance was relative to the
largest entry of the *current* column of :math:`B^{-1}` among the tied rows, which is itself noise
when that column should be zero). Each component is therefore compared with a tolerance on the
scale of its whole key: two ratios :math:`v_k = x_k/\bar a_k` tie when

.. math:: |v_k - v_l| \le \tau\,(e_k + e_l),\qquad e_k = (S + |v_k|\,\|\bar a\|_\infty)/|\bar a_k| ,

with :math:`S = \max(1, \|\beta\|_\infty)` for the first key and :math:`S = \max(1, \max|B^{-1}|)`
for the others, :math:`\tau` = ``tie_tol`` (default 1e-11): the noise of :math:`x_k` and of
:math:`\bar a_k` divided by the pivot. When :math:`z_0` is among the rows tied on the ratio it
leaves at once (the basis reached is complementary and feasible). Each basis is hashed (Zobrist)
as the path goes, so a path that ends on the pivot budget says whether a basis came back.

The method stops

* with a solution when :math:`z_0` leaves the basis. The basic variables are then recomputed from
  the final basis, on the *original* data (before any reduction and scaling): with J the basic
  (off-bound) components, :math:`M_{JJ} z_J = -(q_J + M_{J\bar J} z_{\bar J})` is solved by LU with
  iterative refinement (residuals in extended precision), and the result is kept when the
  problem's own error measure is smaller. The answer is thus as accurate as the final basis allows,
  whatever the BLAS;
* on a *secondary ray*: the entering column has no blocking row. The ray
  :math:`(w, z, z_0)(t) = (w, z, z_0)^k + t\,(w^h, z^h, z_0^h)` is returned in
  ``info["ray"]`` (the z part :math:`z^h` of the LCP; ``"ray_w"``, ``"ray_z0"`` the others). For a
  copositive-plus M (e.g. positive semidefinite M) a secondary ray proves that the LCP has no
  solution (Cottle–Pang–Stone, Thm 4.4.9): :math:`y = z^h \ge 0` satisfies the Farkas conditions
  :math:`M^\top y \le 0,\ q^\top y < 0`. nsopt checks them numerically: when they hold the status
  is ``INFEASIBLE`` and ``info["certificate"]`` is True; otherwise (nothing is proven) the status
  is ``STALLED`` with ``info["certificate"] = False``. For the LCP, a ray without certificate is
  retried (``restarts``) with random positive covering vectors;
* on the pivot budget: ``max_iter`` pivots, default :data:`PIVOTS_PER_ROW` x n (n the size of the
  LCP after reduction; Lemke's paths are a few n long in practice, exponential only on contrived
  examples such as Murty's); the message says whether a basis repeated;
* as the iteration contract (:class:`~nsopt.monitor.Monitor`) says: ``time_limit``, a callback,
  or an intermediate point whose error is already below ``tol``.

``nit`` (and ``info["pivots"]``) counts every basis change, the first one (z0 entering) included:
Siconos' LEMKE reports one fewer on the same path (``benchmarks/bench_lemke_corpus.py``).
The pivots run in compiled chunks of about 20 ms (one pivot per chunk when a history or a callback
asks for every one), so ``time_limit`` and Ctrl-C act between chunks.

Iteration 0 and warm start. The contract's starting point is the warm start, else z = 0 of the
problem (``history[0]`` is its error); when it solves the problem within ``tol`` the answer comes
back with 0 pivots. For lcp, mlcp and relay the support of the warm start (the components strictly
inside their bounds) is also tried as a final basis: one solve as above, kept when better (the
common case of a re-solve with a new q and the same active set). Lemke's path itself always starts
from the artificial basis: a warm start that does not solve the problem does not shorten it.

Implementation: a dense *revised* tableau. The basis inverse :math:`B^{-1}` is kept explicitly
(column major) together with :math:`\beta = B^{-1} q`; a column of :math:`B^{-1}` whose unit
vector :math:`w_j` is basic is the unit vector of its row, so products and rank-one updates only
touch the :math:`k` "dense" columns (``k`` = number of basic ``z`` plus ``z_0``): a pivot costs
:math:`O(nk)` instead of the :math:`O(n^2)` of the full tableau (Siconos keeps the full
:math:`n \times 2(n+1)` tableau). The data are scaled to unit size first (z solves (M, q) iff
:math:`az/b` solves :math:`(M/a, q/b)`), so the tolerances are scale free; a column entry blocks
when it exceeds ``piv_tol`` times the column's largest entry.

Size guard: an LCP (after reduction) larger than ``MAX_LCP`` = 10000 is refused with
:class:`~nsopt.exceptions.NotApplicable` (the dense tableau alone would take 800 MB); sparse
input is densified (with a warning above n = 2000).

Reductions (:mod:`nsopt.reductions.to_lcp`): Relay by :class:`~nsopt.reductions.RelayToLCP`; MLCP by
:class:`~nsopt.reductions.MLCPToLCP` (``reduction="auto"``: Schur complement of A when it is well
conditioned, else, or when the Schur route does not reach ``tol``, the split u = u+ - u-); AVI by
its KKT MLCP (:class:`~nsopt.reductions.AVIToLCP`; ``info["multipliers"]``, ``info["kkt_error"]``;
Siconos solves AVIs with the Cao–Ferris path method instead); FC2D by
:class:`~nsopt.reductions.FC2DToLCP`.

References
----------
.. [1] K. G. Murty, *Linear Complementarity, Linear and Nonlinear Programming*, Heldermann, 1988,
   §2.2–2.3 (the complementary pivot method and its lexicographic degeneracy resolution).
"""

from __future__ import annotations

import functools
import math
import time
import warnings

import numpy as np
import scipy.linalg as sla

from ..exceptions import OptionError
from ..linalg import solve_or_lstsq
from ..monitor import CHUNK_SECONDS
from ..problems._base import FLOAT64, norm2
from ..problems.lcp import LCP
from ..reductions import AVIToMLCP, FC2DToLCP, MLCPToLCP, RelayToLCP, box_of, dense_of, lcp_size
from ..registry import plan, register
from ..result import Solution, Status, judged
from . import _gs_kernels as K

try:
    from numba import njit
except ImportError:  # pragma: no cover
    def njit(*a, **k):
        if a and callable(a[0]):
            return a[0]
        return lambda f: f

PIVOTS_PER_ROW = 50      # default pivot budget: PIVOTS_PER_ROW * n (n: size of the LCP)
SMALL_LCP = 16           # an LCP up to this size has its iteration 0 compiled (and a re-solve plan)
TINY = np.finfo(float).tiny
EPS = np.finfo(float).eps
MAX_LCP = 10_000         # dense tableau: n^2 doubles (800 MB at the limit)
HASH_WINDOW = 1 << 20    # basis hashes kept to tell whether a basis repeated (8 MB)
EXTENDED_MAX = 2000      # refined_solve: residuals in extended precision up to this size
GOOD_ERROR = 1e-14       # a final point at this error (rounding level) ends the recomputation


# --------------------------------------------------------------------------------------------
# compiled kernel
# variables: w_i -> i, z_i -> n + i, z0 -> 2n; pos[var] = basis row or -1; basis[row] = var
# Binv is Fortran ordered; dense[j] is True when column j of Binv is not a unit vector
# (i.e. w_j is not basic); the other columns are e_{pos[j]} and are never stored as such.
# --------------------------------------------------------------------------------------------

@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
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
    nc = 0
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
    j = 0
    while m > 1 and j < n:
        for k in range(m):
            x[k] = _lex_value(Binv, dense, basis, cand[k], j)
        m = _keep_ties(cand, c, x, tie_tol * sB, m)
        j += 1
    return cand[0]


@njit(cache=True)
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
def _lemke_run(MF, cover, Binv, beta, dense, basis, pos, state, nsteps, piv_tol, tie_tol, col, zob, hashes):
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
# iteration 0 of a small dense LCP, compiled (the start of the full path and the re-solve plan)
# --------------------------------------------------------------------------------------------

@njit(cache=True)
def _two_prod(a, b):
    """(p, e) with p = fl(ab) and p + e = ab exactly (Dekker's product, no FMA needed)."""
    p = a * b
    c = 134217729.0 * a
    ah = c - (c - a)
    al = a - ah
    c = 134217729.0 * b
    bh = c - (c - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


@njit(cache=True)
def _lu_refined(A, b, x, rounds):
    """x = A^-1 b for a small dense A: Gaussian elimination with partial pivoting
    (``_gs_kernels.gauss_solve``), then ``rounds`` steps of iterative refinement with residuals
    b - Ax in double-double (as :func:`refined_solve` with its extended-precision residuals).
    False when a pivot is exactly 0 or x is not finite (the caller then takes the Python path:
    :func:`refined_solve`, least squares when singular)."""
    m = b.shape[0]
    if not K.gauss_solve(A.copy(), b.copy(), x, 0.0):
        return False
    for i in range(m):
        if not math.isfinite(x[i]):
            return False
    r = np.empty(m)
    y = np.empty(m)
    for _ in range(rounds):
        for i in range(m):      # r = b - A x in double-double, rounded once
            hi = b[i]
            lo = 0.0
            for j in range(m):
                p, e = _two_prod(A[i, j], x[j])
                s = hi - p
                bb = s - hi
                lo += ((hi - (s - bb)) + (-p - bb)) - e
                hi = s
            r[i] = hi + lo
        if not K.gauss_solve(A.copy(), r, y, 0.0):
            return True
        big = 0.0
        dmax = 0.0
        for i in range(m):
            if not math.isfinite(y[i]):
                return True          # as refined_solve: a non-finite correction ends the refinement
        for i in range(m):
            x[i] += y[i]
            big = max(big, abs(x[i]))
            dmax = max(dmax, abs(y[i]))
        if dmax <= EPS * max(big, TINY):
            return True
    return True


@njit(cache=True)
def _lcp_start(M, q, z, w, warm, qnorm, tol):
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
    if m and not _lu_refined(A, b, x, 3):
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
# Python driver
# --------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=64)
def _zobrist(n):
    """Zobrist hashing of the bases of size n: one random 62-bit key per variable, XORed
    over the basic ones, and the hash of the initial basis (every w basic)."""
    zob = np.random.default_rng(2 * n + 1).integers(1, 2 ** 62, size=2 * n + 1, dtype=np.int64)
    return zob, (np.bitwise_xor.reduce(zob[:n]) if n else np.int64(0))


class _Tableau:
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
        code = int(_lemke_run(self.MF, self.cover, self.Binv, self.beta, self.dense, self.basis, self.pos,
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


def refined_solve(A, b, rounds: int = 3) -> np.ndarray:
    r"""Solve :math:`Ax = b` by LU with iterative refinement: :math:`r = b - Ax` in extended
    precision (``np.longdouble``; in double above ``EXTENDED_MAX`` rows),
    :math:`x \leftarrow x + A^{-1} r`. Singular A: the least-squares solution
    (:func:`nsopt.linalg.solve_or_lstsq`)."""
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    if b.shape[0] == 0:
        return np.zeros(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sla.LinAlgWarning)
        try:
            lu = sla.lu_factor(A, check_finite=False)
        except (sla.LinAlgWarning, ValueError, np.linalg.LinAlgError):
            return solve_or_lstsq(A, b)[0]
    x = sla.lu_solve(lu, b, check_finite=False)
    if not np.all(np.isfinite(x)):
        return solve_or_lstsq(A, b)[0]
    # extended-precision residuals below EXTENDED_MAX rows (numpy's longdouble product has no BLAS);
    # above, fixed-precision refinement (which still gives a componentwise backward-stable x)
    ext = np.longdouble if A.shape[0] <= EXTENDED_MAX else np.float64
    Al, bl = A.astype(ext), b.astype(ext)
    for _ in range(rounds):
        r = np.asarray(bl - Al @ x.astype(ext), dtype=float)
        dx = sla.lu_solve(lu, r, check_finite=False)
        if not np.all(np.isfinite(dx)):
            break
        x = x + dx
        if np.max(np.abs(dx)) <= np.finfo(float).eps * max(np.max(np.abs(x)), np.finfo(float).tiny):
            break
    return x


def basis_solve(M, q, lo, hi, F, z) -> np.ndarray:
    r"""The point of a final basis of a box-affine problem (:math:`w = Mz + q`, :math:`z \in [lo, hi]`):
    the components outside ``F`` at the bound nearest to ``z`` (0 when both are infinite), those in
    ``F`` from :math:`M_{FF} z_F = -(q_F + M_{F\bar F} z_{\bar F})` (:func:`refined_solve`)."""
    z = np.asarray(z, dtype=float)
    F = np.asarray(F, dtype=bool)
    out = np.where(np.abs(z - lo) <= np.abs(z - hi), lo, hi)
    out = np.where(np.isfinite(out), out, 0.0)
    Fi, Ai = np.flatnonzero(F), np.flatnonzero(~F)
    rhs = -(q[Fi] + M[np.ix_(Fi, Ai)] @ out[Ai]) if Ai.size else -q[Fi]
    out[Fi] = refined_solve(M[np.ix_(Fi, Fi)], rhs)
    return out


def _basis_points(M, q, lo, hi, z, F, repairs=5):
    """Candidates recomputed from a final basis (:func:`basis_solve`), lazily (the caller stops at
    an error at the rounding level): on the support F the pivoting ended with, then on the strict
    support {lo < z < hi} of the pivoted point when it differs; each followed by up to ``repairs``
    block principal pivots that move the components whose sign is wrong (off their box, or at a
    bound with w pushing outwards) in or out of the support: the round-off of a long path on
    ill-conditioned data can leave the final basis one flip away."""
    S0 = (z > lo) & (z < hi)
    for S in ((F, S0) if not np.array_equal(S0, F) else (F,)):
        zc = basis_solve(M, q, lo, hi, S, z)
        yield zc
        for _ in range(repairs):
            w = M @ zc + q
            atlo = np.abs(zc - lo) <= np.abs(zc - hi)
            vz = S & ((zc < lo) | (zc > hi))
            vw = ~S & ((atlo & (w < 0)) | (~atlo & (w > 0)))
            if not (vz.any() or vw.any()):
                break
            S = (S & ~vz) | vw
            zc = basis_solve(M, q, lo, hi, S, zc)
            yield zc


def farkas_certificate(M, q, y, tol=1e-9):
    """True when y proves that {z >= 0: Mz + q >= 0} is empty: y >= 0, M^T y <= 0, q^T y < 0 (scaled)."""
    y = np.asarray(y, float)
    ny = float(np.max(np.abs(y))) if y.size else 0.0
    if ny == 0.0:
        return False
    y = y / ny
    MTy = np.asarray(M.T @ y).reshape(-1)
    scale = 1.0 + float(np.max(np.abs(M))) if np.size(M) else 1.0
    qs = 1.0 + float(np.max(np.abs(q)))
    return bool(np.all(y >= -tol) and np.all(MTy <= tol * scale) and float(q @ y) < -tol * qs)


_CERT_MSG = "secondary ray: y = info['ray'] >= 0 with M^T y <= 0, q^T y < 0 proves the LCP infeasible"


def _budget_message(mon, T):
    rep = T is not None and T.repeated()
    z0 = T.z0() if T is not None else 0.0
    # (mon.k: the pivots of every path so far, restarts included)
    what = ("a basis repeated: the path cycled" if rep else
            "no basis repeated (a long path, not a cycle: raise max_iter)")
    if T is not None and T.trimmed and not rep:
        what = what.replace("no basis repeated", f"no basis repeated in the last {T._kept} pivots")
    return rep, f"pivot budget of {mon.k} pivots used without termination (z0 = {z0:.3g}); {what}"


class Chunks:
    """Sizes of the compiled chunks: 1 when a history or a callback wants every iteration, else
    doubling up to about ``CHUNK_SECONDS`` of kernel time (so ``time_limit`` and Ctrl-C act between
    chunks), within the monitor's ``max_iter``."""

    def __init__(self, mon, first: int = 1):
        self.mon, self.size, self.t = mon, max(1, int(first)), None

    def next(self) -> int:
        mon = self.mon
        if mon.callback is not None or mon.history is not None:
            return 1
        left = mon.max_iter - mon.k if mon.max_iter is not None else self.size
        self.t = time.perf_counter()
        return int(max(1, min(self.size, left)))

    def done(self, n: int):
        if n > 0 and self.t is not None:
            per = (time.perf_counter() - self.t) / n
            self.size = max(1, min(2 * self.size, int(CHUNK_SECONDS / per) if per > 0 else 2 * self.size))


def _scaled_tableau(M, q, cover, a=None):
    """The start of Lemke's path on unit-scaled data: the LCP is homogeneous, z solves (M, q) iff
    a z / b solves (M / a, q / b), a = max|M|, b = max|q| (``a``: given when already known)."""
    a = a if a is not None else float(np.max(np.abs(M))) or 1.0
    b = float(np.max(np.abs(q))) or 1.0
    return _Tableau(M / a, q / b, cover, unscale=b / a, b=b)


def _first_chunk(n: int) -> float:
    """Pivots of the first compiled chunk of a path (a pivot costs O(n^2) at most)."""
    return 1e6 / max(1, n) ** 2


def _path(M, q, mon, cover, piv_tol, tie_tol, report, record):
    """Lemke's path on dense (M, q) under the monitor. Returns (code, pivots of the last chunk, T):
    code 1 (z0 left), 2 (secondary ray), 3 (numerical trouble), 0 (the monitor stopped)."""
    T = _scaled_tableau(M, q, cover)
    chunks = Chunks(mon, first=_first_chunk(q.shape[0]))
    while True:
        c = 1 if record is not None else chunks.next()
        before = T.pivots
        code = T.run(c, piv_tol, tie_tol)
        done = T.pivots - before
        chunks.done(done)
        if record is not None and done:
            record.append(tuple(sorted(T.basis.tolist())))
        if code != 0:
            return code, done, T
        x, err = report(T.z())
        if mon.advance(done, x, err):
            return 0, 0, T


def _record(mon, done, x, err, new=True):
    """The monitor's record of the end of a path: its last ``done`` pivots; when the chunk ended
    without a pivot, the final point as one iteration if it is ``new`` (q >= 0, a point recomputed
    from the final basis), else nothing (the previous chunk recorded it)."""
    if done:
        return mon.advance(done, x, err)
    return mon.step(x, err) if new else None


_LOADED: list = []     # the compiled path is loaded (Dispatcher.signatures costs ~100 us per look)


def _lemke(lcp, M, mon, *, to_x, err_of, polish, piv_tol, tie_tol, cover=None, restarts=0,
           record_bases=False, info=None):
    """Lemke on the dense LCP ``M``, ``lcp.q`` for a problem whose variables are ``to_x(z)`` (a dict),
    with error ``err_of(x)``; ``polish(z, basic)`` yields points recomputed from a final basis
    (``basic``: mask of the basic z). The monitor has recorded the start (:func:`_begin`). Returns
    an Outcome (the monitor counts pivots)."""
    q = np.asarray(lcp.q, dtype=float)
    n = q.shape[0]
    info = {} if info is None else info
    mon.budget(PIVOTS_PER_ROW * max(n, 1))

    def report(z):
        x = to_x(z)
        return x, err_of(x)

    if cover is None:
        cover = np.ones(n)
    else:
        cover = np.asarray(cover, dtype=float).reshape(-1)
        if cover.shape[0] != n or not np.all(cover > 0) or not np.all(np.isfinite(cover)):
            raise OptionError(f"cover: the covering vector must be a positive finite vector of size {n}")
    if mon.k == 0 and mon.build_time == 0.0 and not _LOADED:
        # load the compiled kernel (a one-off build, with the reduction: not counted in time_limit)
        _Tableau(np.eye(2), -np.ones(2), np.ones(2)).run(0, piv_tol, tie_tol)
        _LOADED.append(True)
        mon.built()
    tries = pivots = 0
    while True:
        record = [] if record_bases else None
        if np.all(q >= 0):
            code, done, T = 1, 0, None
        else:
            code, done, T = _path(M, q, mon, cover, piv_tol, tie_tol, report, record)
        if record is not None:
            info.setdefault("bases", []).append(record)
        pivots += T.pivots if T is not None else 0
        info["pivots"] = pivots
        if code == 0:
            if mon.status is Status.MAX_ITER:
                info["basis_repeated"], msg = _budget_message(mon, T)
                return mon.outcome(message=msg, info=info)
            return mon.outcome(info=info)
        z = T.z() if T is not None else np.zeros(n)
        msg = f"z0 left the basis after {pivots} pivots"
        if code == 2 and abs(T.z0()) <= tie_tol * T.b and lcp.error(z) <= 1e-12:
            code, msg = 1, "z0 reached 0 (degenerate end of the path)"
            info["z0"] = T.z0()
        if code == 1:
            basic = T.basic_mask() if T is not None else np.zeros(n, bool)
            x = to_x(z)
            err = err_of(x)
            info["polished"] = False
            # recomputed from the final basis, judged by the error (unless at the rounding level)
            for xp in (polish(z, basic) if err > GOOD_ERROR else ()):
                ep = err_of(xp)
                if ep < err:
                    x, err, info["polished"] = xp, ep, True
                if err <= GOOD_ERROR:
                    break
            _record(mon, done, x, err)
            st = Status.CALLBACK_STOP if mon.status is Status.CALLBACK_STOP else Status.SOLVED
            return mon.outcome(x=x, status=st, message=msg, info=info)
        x, err = report(z)
        _record(mon, done, x, err, new=False)
        if code == 3:
            return mon.outcome(x=x, status=Status.NUMERICAL_ERROR, message="zero or non-finite pivot", info=info)
        rw, rz, rz0 = T.ray()
        cert = farkas_certificate(M, q, rz)
        info.update(ray=rz, ray_w=rw, ray_z0=rz0, certificate=cert, z0=T.z0())
        if cert:
            return mon.outcome(x=x, status=Status.INFEASIBLE, message=_CERT_MSG, info=info)
        if tries < restarts and not mon.stopped:
            tries += 1
            cover = 1.0 + np.random.default_rng(tries).random(n)
            continue
        msg = "secondary ray (no infeasibility certificate: M is not copositive-plus on this path)"
        if tries:
            msg += f" (after {tries} restart(s) with random covering vectors)"
        return mon.outcome(x=x, status=Status.STALLED, message=msg, info=info)


_START_MSG = ("the start (z = 0) solves the problem", "the warm start solves the problem (0 pivots)",
              "the support of the warm start is a solution's basis (0 pivots)")


def _small_lcp(problem, M) -> bool:
    """True for an LCP whose iteration 0 runs compiled (:func:`_lcp_start`)."""
    return problem.kind == "lcp" and problem.size <= SMALL_LCP and isinstance(M, np.ndarray)


def _begin(problem, mon, M=None):
    """Iteration 0 of the contract: the warm start, else z = 0 of the problem (Lemke's own path
    starts from the artificial basis whatever this point is). For the box-affine kinds (``M`` given),
    the support of the warm start is also tried as a final basis (module docstring); for an LCP
    of size <= ``SMALL_LCP`` all of it is compiled (:func:`_lcp_start`, which the re-solve plan
    calls too), and the point comes back with w and its error (the compiled twin of the LCP
    error). Returns the Outcome when this point already solves the problem (or the budget is
    0), else None."""
    name = problem.primal
    x0 = mon.x0.get(name) if mon.x0 is not None else None
    if M is not None and _small_lcp(problem, M):
        z = np.zeros(problem.size) if x0 is None else np.array(x0, dtype=float)
        w = np.empty(problem.size)
        err, code = _lcp_start(M, np.asarray(problem.q, dtype=float), z, w, x0 is not None, norm2(problem.q),
                               mon.tol)
        if code >= 0 and code != 2:
            if mon.start({name: z}, err):
                msg = _START_MSG[code + (x0 is not None)] if mon.status is Status.SOLVED else ""
                out = mon.outcome(message=msg, info={"pivots": 0}, x={"z": z, "w": w})
                out.error, out.complete = err, True
                return out
            return None
    z = np.zeros(problem.size) if x0 is None else np.asarray(x0, dtype=float)
    err = problem.error(z)
    msg = _START_MSG[0]
    if x0 is not None:
        msg = _START_MSG[1]
        if M is not None and err > mon.tol:
            lo, hi = box_of(problem)
            S = ((z > lo) & (z < hi)) | (~np.isfinite(lo) & ~np.isfinite(hi))
            zb = basis_solve(M, np.asarray(problem.q, dtype=float), lo, hi, S, z)
            eb = problem.error(zb)
            if eb < err:
                z, err, msg = zb, eb, _START_MSG[2]
    if mon.start({name: z}, err):
        return mon.outcome(message=msg if mon.status is Status.SOLVED else "", info={"pivots": 0})
    return None


def _box_start(problem, mon):
    """Dense M, q and the bounds of a box-affine problem, with the Outcome of :func:`_begin`."""
    M = dense_of(problem.M, "M", "lemke")
    lo, hi = box_of(problem)
    return M, np.asarray(problem.q, dtype=float), lo, hi, _begin(problem, mon, M)


def _too_big(problem):
    n = lcp_size(problem)
    if n > MAX_LCP:
        return (f"Lemke works on a dense {n} x {n} tableau ({8 * n * n / 1e9:.1f} GB); the limit is an LCP "
                f"of size {MAX_LCP} (use newton-fb, pgs or nsgs)")
    return None


_OPTIONS_DOC = """
    Options: ``piv_tol`` relative size below which a column entry does not block (1e-12);
    ``tie_tol`` relative noise level of the lexicographic comparisons (1e-11, module docstring);
    ``record_bases`` (diagnostic) record every basis of the path in ``info["bases"]`` (one list per
    path, a basis as the sorted tuple of its variables: w_i = i, z_i = n + i, z0 = 2n); it steps the
    path one pivot at a time. ``max_iter``: the pivot budget (default ``PIVOTS_PER_ROW`` * n = 50 n).
"""


# --------------------------------------------------------------------------------------------
# LCP
# --------------------------------------------------------------------------------------------

@register("lcp", "lemke",
          "lexicographic Lemke (covering vector e); secondary ray -> infeasibility certificate",
          applies=_too_big)
def lcp_lemke(problem, mon, *, piv_tol=1e-12, tie_tol=1e-11, cover=None, restarts=2, record_bases=False):
    """Lexicographic Lemke for the LCP (module docstring).

    ``cover``: covering vector (default ones); ``restarts``: after a secondary ray *without*
    certificate, retry this many times with random covering vectors (a certified ray is final).
    """
    M, q, lo, hi, out = _box_start(problem, mon)
    if out is not None:
        return out
    return _lemke(problem, M, mon, to_x=lambda z: {"z": z}, err_of=lambda x: problem.error(x["z"]),
                  polish=lambda z, basic: ({"z": p} for p in _basis_points(M, q, lo, hi, z, basic)),
                  piv_tol=piv_tol, tie_tol=tie_tol, cover=cover, restarts=restarts,
                  record_bases=record_bases)


lcp_lemke.__doc__ += _OPTIONS_DOC


class _LCPPlan:
    """The re-solve plan of ``lemke`` on a small dense LCP (:func:`nsopt.registry.plan`): iteration 0
    compiled (:func:`_lcp_start`, as the full path runs it). When that point solves the problem
    (the start, the warm start, or its support as a final basis: the common steps of a
    time-stepping loop) the Solution comes back without a monitor. Otherwise Lemke's path runs
    as the full path runs it (one compiled chunk: the first chunk of a small LCP covers the whole
    pivot budget) and, when z0 leaves the basis at a point at the rounding level (no
    recomputation from the final basis), the Solution is the full path's; any other end (a ray,
    the budget, a point to polish) goes to the full path."""

    def __init__(self, problem, tol, max_iter, options):
        self.M, self.tol, self.max_iter = problem.M, tol, max_iter
        self.piv_tol = float(options.get("piv_tol", 1e-12))
        self.tie_tol = float(options.get("tie_tol", 1e-11))
        self.path = options.get("cover") is None and not options.get("record_bases", False)
        self.scale = float(np.max(np.abs(self.M))) or 1.0
        n = problem.size
        budget = PIVOTS_PER_ROW * max(n, 1) if max_iter is None else max_iter
        self.chunk = int(max(1, min(max(1, int(_first_chunk(n))), budget)))   # Chunks.next() of the full path
        self.cover = np.ones(n)

    def __call__(self, problem, warm_start, options):
        t0 = time.perf_counter()
        if type(problem) is not LCP or problem.M is not self.M:
            return None
        q = problem.q
        n = q.shape[0]
        if warm_start is None:
            z, warm = np.zeros(n), False
        elif type(warm_start) is np.ndarray and warm_start.shape == (n,) and warm_start.dtype == FLOAT64:
            z, warm = warm_start.copy(), True            # checked finite by the kernel
        elif type(warm_start) is Solution and type(warm_start.problem) is LCP and warm_start.z is not None \
                and warm_start.z.shape[0] == n and math.isfinite(warm_start.error):
            z, warm = warm_start.z.copy(), True
        else:
            return None
        w = np.empty(n)
        err, code = _lcp_start(self.M, q, z, w, warm, norm2(q), self.tol)
        opts = dict(options) if options else {}
        if 0 <= code < 2 and err <= self.tol:
            return Solution._make(problem, "lemke", Status.SOLVED, err, self.tol, 0, time.perf_counter() - t0,
                                  {"z": z, "w": w}, None, _START_MSG[code + warm], {"pivots": 0}, opts)
        if not (0 <= code < 2 and math.isfinite(err) and self.max_iter != 0):
            return None
        if min(q.tolist()) >= 0.0:
            # q >= 0 and the start above tol: _lemke ends at once with z = 0 (one iteration, no pivot)
            x = problem.complete({"z": np.zeros(n)})
            err = float(problem.error_of(x))
            return Solution._make(problem, "lemke", judged(Status.SOLVED, err, self.tol), err, self.tol, 1,
                                  time.perf_counter() - t0, x, None, "z0 left the basis after 0 pivots",
                                  {"pivots": 0, "polished": False}, opts)
        if not self.path:
            return None
        T = _scaled_tableau(self.M, q, self.cover, self.scale)
        if T.run(self.chunk, self.piv_tol, self.tie_tol) != 1:
            return None
        z = T.z()
        err = problem.error(z)
        if err > GOOD_ERROR:     # _lemke recomputes the point from the final basis: the full path
            return None
        k = T.pivots
        return Solution._make(problem, "lemke", judged(Status.SOLVED, err, self.tol), err, self.tol, k,
                              time.perf_counter() - t0, {"z": z, "w": problem.w(z)}, None,
                              f"z0 left the basis after {k} pivots", {"pivots": k, "polished": False}, opts)


@plan("lcp", "lemke")
def _lcp_plan(problem, tol, max_iter, options, ws, info=None):
    return _LCPPlan(problem, tol, max_iter, options) if _small_lcp(problem, problem.M) else None


# --------------------------------------------------------------------------------------------
# Relay
# --------------------------------------------------------------------------------------------

@register("relay", "lemke", "Lemke on the LCP reformulation of the box VI (z = lb + x, upper multiplier y)",
          applies=_too_big)
def relay_lemke(problem, mon, *, piv_tol=1e-12, tie_tol=1e-11, record_bases=False):
    """Relay by Lemke on its LCP reformulation (:class:`~nsopt.reductions.RelayToLCP`)."""
    M, q, lo, hi, out = _box_start(problem, mon)
    if out is not None:
        return out
    red = RelayToLCP()
    lcp = red.apply(problem)

    def polish(x, basic):
        z = red.invert({"z": x})["z"]
        return ({"z": p} for p in _basis_points(M, q, lo, hi, z, red.basis_support(basic)))

    return _lemke(lcp, np.asarray(lcp.M), mon, to_x=lambda z: red.invert({"z": z}),
                  err_of=lambda x: problem.error(x["z"]),
                  polish=polish, piv_tol=piv_tol, tie_tol=tie_tol, record_bases=record_bases,
                  info={"lcp_size": lcp.size})


relay_lemke.__doc__ += _OPTIONS_DOC


# --------------------------------------------------------------------------------------------
# MLCP and AVI
# --------------------------------------------------------------------------------------------

def _mlcp_tries(mlcp, mon, reduction, err_of, to_x, record_bases, piv_tol, tie_tol, good):
    """Lemke on the LCP of ``mlcp`` by ``reduction`` ("auto": the Schur route, then the split one when
    the first does not reach ``good``). ``to_x`` maps the MLCP's z to the caller's variables."""
    M = dense_of(mlcp.M, "M", "lemke")
    q = np.asarray(mlcp.q, dtype=float)
    lo, hi = box_of(mlcp)
    ne = int(np.sum(mlcp.is_eq))
    mon.budget(PIVOTS_PER_ROW * max(1, 2 * ne + mlcp.m if reduction != "schur" else mlcp.m))
    best, pivots = None, 0
    for name in ([reduction] if reduction != "auto" else ["auto", "split"]):
        red = MLCPToLCP(name)
        lcp = red.apply(mlcp)
        if best is not None and red.how == best.info["reduction"]:
            continue

        def polish(x, basic, red=red):
            z = red.invert({"z": x})["z"]
            return (to_x(p) for p in _basis_points(M, q, lo, hi, z, red.basis_support(basic)))

        out = _lemke(lcp, np.asarray(lcp.M), mon, to_x=lambda x, red=red: to_x(red.invert({"z": x})["z"]),
                     err_of=err_of, polish=polish, piv_tol=piv_tol, tie_tol=tie_tol,
                     record_bases=record_bases, info={"reduction": red.how, "lcp_size": lcp.size})
        pivots += out.info.get("pivots", 0)
        out.info["error"] = err_of(out.x) if out.x else np.inf
        if best is None or out.info["error"] < best.info["error"]:
            best = out
        if best.info["error"] <= good or mon.status in (Status.CALLBACK_STOP, Status.TIME_LIMIT,
                                                          Status.MAX_ITER, Status.NUMERICAL_ERROR):
            break
    if mon.status in (Status.CALLBACK_STOP, Status.TIME_LIMIT) and best.status is not mon.status:
        best.status, best.message = mon.status, mon.message   # stopped while trying the split route
    best.nit = mon.k
    best.info["pivots"] = pivots
    return best


@register("mlcp", "lemke", "Lemke on the LCP reduction (Schur complement of A, or u = u+ - u-)",
          applies=_too_big)
def mlcp_lemke(problem, mon, *, piv_tol=1e-12, tie_tol=1e-11, reduction="auto", record_bases=False):
    """MLCP by Lemke on :class:`~nsopt.reductions.MLCPToLCP`: ``reduction`` "auto" (Schur complement
    when A is well conditioned, else split; when the Schur route does not reach ``tol``, the split
    one is tried as well), "schur" or "split"."""
    MLCPToLCP(reduction)   # validates the option
    out = _box_start(problem, mon)[-1]
    if out is not None:
        return out
    return _mlcp_tries(problem, mon, reduction, lambda x: problem.error(x["z"]), lambda z: {"z": z},
                       record_bases, piv_tol, tie_tol, mon.tol)


mlcp_lemke.__doc__ += _OPTIONS_DOC


@register("avi", "lemke",
          "Lemke on the KKT system of the AVI (MLCP -> LCP, Schur complement when M is invertible)",
          applies=_too_big)
def avi_lemke(problem, mon, *, piv_tol=1e-12, tie_tol=1e-11, reduction="auto", record_bases=False):
    """AVI by Lemke on its KKT MLCP (:class:`~nsopt.reductions.AVIToLCP`); a warm start is only
    checked as a solution. ``info["multipliers"]``: lambda; ``info["kkt_error"]``."""
    MLCPToLCP(reduction)
    out = _begin(problem, mon)
    if out is not None:
        return out
    kkt = AVIToMLCP()
    mlcp = kkt.apply(problem)
    n = problem.size
    out = _mlcp_tries(mlcp, mon, reduction, lambda x: problem.error(x["z"]),
                      lambda zl: {"z": zl[:n], "zl": zl}, record_bases, piv_tol, tie_tol, mon.tol * 1e-2)
    zl = out.x.get("zl", np.zeros(mlcp.size)) if out.x else np.zeros(mlcp.size)
    out.x = {"z": zl[:n]}
    out.info.update(multipliers=kkt.multipliers({"z": zl}), kkt_error=mlcp.error(zl))
    return out


avi_lemke.__doc__ += _OPTIONS_DOC


# --------------------------------------------------------------------------------------------
# FC2D
# --------------------------------------------------------------------------------------------

@register("fc2d", "lemke", "Lemke on the 2D Coulomb LCP (r_T = beta - mu r_N, 3 pairs per contact)",
          applies=_too_big)
def fc2d_lemke(problem, mon, *, piv_tol=1e-12, tie_tol=1e-11, record_bases=False):
    """FC2D by Lemke on the LCP of Coulomb's law (:class:`~nsopt.reductions.FC2DToLCP`); a warm
    start is only checked as a solution."""
    red = FC2DToLCP()
    out = _begin(problem, mon)
    if out is not None:
        return out
    lcp = red.apply(problem)
    Ml, ql = np.asarray(lcp.M), np.asarray(lcp.q)
    lo, hi = box_of(lcp)

    def polish(x, basic):
        return (red.invert({"z": p}) for p in _basis_points(Ml, ql, lo, hi, x, basic))

    return _lemke(lcp, Ml, mon, to_x=lambda z: red.invert({"z": z}), err_of=lambda x: problem.error(x["r"]),
                  polish=polish,
                  piv_tol=piv_tol, tie_tol=tie_tol, record_bases=record_bases, info={"lcp_size": lcp.size})


fc2d_lemke.__doc__ += _OPTIONS_DOC
