r"""The factorisations of nsopt, in one home: factorising a square matrix (LAPACK's LU for a dense one,
SuperLU for a sparse one), refactorising matrices of one pattern in a kept order (:class:`StaticLU`, a
sparse LU without pivoting), a Cholesky factor (:func:`cholesky`), iterative refinement and the backward-error check
(:func:`backward_error`, :func:`solve_checked`), "solve, else least squares" (:func:`solve_or_lstsq`), the
minimum-norm least-squares solution of a singular or rectangular system (:func:`min_norm_lstsq`)
and the refined solves of a final basis (Lemke, enumeration).

No LAPACK routine is called on a matrix or a right-hand side that is not finite, nor on an empty one:
a non-finite system is a failed factorisation (None, or a non-finite solution), never a LAPACK error.
The Newton systems built on these factorisations are in :mod:`nsopt.solvers.newton_system`.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from . import _linalg_kernels as LK
from .problems._base import all_finite

EXTENDED_MAX = 2000      # refined_solve: residuals in extended precision up to this size
# StaticLU: a pivot at most STATIC_PIVOT x its column fails the factorisation; a solve is kept when its backward
# error (max |A x - b| / max (|A||x| + |b|)) is at most STATIC_BERR, after one step of refinement
STATIC_PIVOT, STATIC_BERR = 1e-10, 1e-13


def _finite(A) -> bool:
    """True when every stored value of A (ndarray or scipy sparse) is finite."""
    data = A.data if sp.issparse(A) else np.asarray(A)
    return all_finite(np.ascontiguousarray(data, dtype=float).reshape(-1))


class LU:
    r"""A factorisation of a square matrix K, kept for any number of solves: ``solve(b)`` =
    :math:`K^{-1}b`, ``solve(b, trans=True)`` = :math:`K^{-\top}b` (b a vector or a matrix, one
    column per right-hand side). Made by :func:`factorise` (LAPACK's ``getrf`` for a dense K,
    SuperLU for a sparse one, ``perm_c``: the column order it chose, to keep for later matrices of
    the same pattern; division for a diagonal K when asked, ``d``: its diagonal) or by
    :func:`cholesky` (LAPACK's ``potrf``, :math:`K = LL^\top` for a symmetric positive definite K)."""

    __slots__ = ("n", "dense", "_f", "perm_c", "d", "chol")

    def __init__(self, n, dense, f, perm_c=None, d=None, chol=False):
        self.n, self.dense, self._f, self.perm_c, self.d, self.chol = n, dense, f, perm_c, d, chol

    def solve(self, b, trans=False):
        b = np.asarray(b, dtype=float)
        if self.n == 0:
            return np.zeros(b.shape)
        if self.d is not None:
            return b / self.d if b.ndim == 1 else b / self.d[:, None]
        if self.chol:
            return sla.cho_solve(self._f, b, check_finite=False)
        if self.dense:
            return sla.lu_solve(self._f, b, trans=1 if trans else 0, check_finite=False)
        return self._f.solve(np.ascontiguousarray(b), trans="T" if trans else "N")

    def rcond(self, anorm):
        """LAPACK's estimate of the reciprocal condition number in the 1-norm (dense LU; ``anorm`` = the
        1-norm of K)."""
        return float(sla.lapack.dgecon(self._f[0], anorm, norm="1")[0])

    @property
    def U_diagonal(self):
        """The pivots (the diagonal of U)."""
        if self.d is not None:
            return self.d.copy()
        return np.diag(self._f[0]).copy() if self.dense else self._f.U.diagonal()


def _diagonal_of(K):
    """K's diagonal when K (ndarray or scipy sparse) has no nonzero off its diagonal, else None."""
    if sp.issparse(K):
        C = K.tocoo()
        if np.any(C.data[C.row != C.col]):
            return None
        return np.asarray(K.diagonal(), dtype=float)
    K = np.asarray(K, dtype=float)
    d = np.diag(K).copy()
    return d if not np.any(K - np.diag(d)) else None


def factorise(K, *, permc="COLAMD", pivot=1.0, diagonal=False):
    """The :class:`LU` of a square K (ndarray: LAPACK ``getrf``; scipy sparse: SuperLU with the
    column order ``permc`` and the diagonal pivot threshold ``pivot``; ``diagonal``: a K with nothing
    off its diagonal is solved by division), or None when K is singular (an exactly zero pivot) or
    not finite (LAPACK is never called on non-finite values)."""
    n = K.shape[0]
    if n == 0:
        return LU(0, True, None)
    if not _finite(K):
        return None
    if diagonal:
        d = _diagonal_of(K)
        if d is not None:
            return None if np.any(d == 0) else LU(n, True, None, d=d)
    if sp.issparse(K):
        try:
            f = splu(K if type(K) is sp.csc_matrix else sp.csc_matrix(K), permc_spec=permc, diag_pivot_thresh=pivot)
        except RuntimeError:        # (SuperLU: exactly singular)
            return None
        return LU(n, False, f, f.perm_c)
    with np.errstate(all="ignore"):
        lu, piv, info = sla.lapack.dgetrf(np.asarray(K, dtype=float))
    if info != 0:
        return None
    return LU(n, True, (lu, piv))


def cholesky(K):
    r"""The Cholesky :class:`LU` (:math:`K = LL^\top`, LAPACK ``potrf``) of a dense symmetric K (its lower
    triangle is read), or None when K is not positive definite or not finite."""
    K = np.asarray(K.toarray() if sp.issparse(K) else K, dtype=float)
    n = K.shape[0]
    if n == 0:
        return LU(0, True, None, chol=True)
    if not _finite(K):
        return None
    with np.errstate(all="ignore"):
        L, info = sla.lapack.dpotrf(K, lower=1, clean=1)
    if info != 0:
        return None
    return LU(n, True, (L, True), chol=True)


def dense_solve(A, b):
    r""":math:`A^{-1}b` for a dense square A by LAPACK's ``gesv`` (NumPy's solve), or None when A is
    singular, or A, b or the solution is not finite (no LAPACK call on non-finite values)."""
    if A.shape[0] == 0:
        return np.zeros(np.shape(b))
    if not (all_finite(A.reshape(-1)) and all_finite(np.asarray(b).reshape(-1))):
        return None
    try:
        with np.errstate(all="ignore"):
            x = np.linalg.solve(A, b)
    except np.linalg.LinAlgError:
        return None
    return x if all_finite(x.reshape(-1)) else None


def backward_error(K, x, b) -> float:
    r"""The componentwise-style backward error of a solve, :math:`\max_i |b - Kx|_i / \max_i (|K||x| + |b|)_i`
    (K dense or scipy sparse)."""
    r = b - K @ x
    w = (abs(K) @ np.abs(x)) + np.abs(b)
    return float(np.max(np.abs(r)) / max(float(np.max(w)) if w.size else 0.0, 1e-300)) if r.size else 0.0


def solve_checked(lu, K, b, *, berr=STATIC_BERR, rounds=1):
    """``lu.solve(b)`` refined (``rounds`` steps at most) while its :func:`backward_error` on K is
    above ``berr``; returns (x, backward error)."""
    x = lu.solve(b)
    e = backward_error(K, x, b)
    for _ in range(rounds):
        if e <= berr:
            break
        x = x + lu.solve(b - K @ x)
        e = backward_error(K, x, b)
    return x, e


class StaticLU:
    r"""Sparse LU without pivoting of the matrices of one CSC pattern (``ptr``, ``ind``: n x n, rows
    ascending, pattern symmetric with the diagonal stored), in the order they come in (the order is
    the caller's: typically the ``perm_c`` of a first :func:`factorise` of the pattern, kept). The
    patterns of L and U are found once (elimination tree); each :meth:`solve` factorises new values
    (left-looking, Gilbert–Peierls, compiled), solves, checks the backward error (one step of
    refinement when it is above ``STATIC_BERR``), and returns None when a pivot is at most
    ``STATIC_PIVOT`` x its column or the backward error stays above ``STATIC_BERR`` (the caller then
    factorises with pivoting: :func:`factorise`). Kept over SuperLU for the dofs' systems of a rigid-body
    pile, where it is 2-4x faster than KLU and SuperLU (benchmarks/README.md, "One Newton system")."""

    def __init__(self, ptr, ind, n):
        self.ptr, self.ind, self.n = np.asarray(ptr, np.int64), np.asarray(ind, np.int64), n
        Up, Ui, Lp, Li = LK.static_lu_symbolic(self.ptr, self.ind, n)
        self.lu = (Up, Ui, Lp, Li, np.empty(Ui.size), np.empty(n), np.empty(Li.size), np.zeros(n))
        self._res = (np.empty(n), np.empty(n))

    def solve(self, data, b, pivot=STATIC_PIVOT, berr=STATIC_BERR):
        """x with A x = b for A of values ``data`` on the pattern; None (see the class)."""
        ptr, ind = self.ptr, self.ind
        Up, Ui, Lp, Li, Ux, Ud, Lx, x = self.lu
        if LK.static_lu_numeric(ptr, ind, data, Up, Ui, Lp, Li, Ux, Ud, Lx, x, pivot):
            return None
        res, work = self._res
        y = b.copy()
        LK.static_lu_solve(Up, Ui, Ux, Ud, Lp, Li, Lx, y)
        if LK.csc_residual(ptr, ind, data, y, b, res, work) <= berr:
            return y
        LK.static_lu_solve(Up, Ui, Ux, Ud, Lp, Li, Lx, res)       # one step of iterative refinement
        y += res
        return y if LK.csc_residual(ptr, ind, data, y, b, res, work) <= berr else None


def solve_or_lstsq(A, b) -> tuple[np.ndarray, bool]:
    r"""Solve :math:`A x = b`; when :math:`A` is singular (or the solve is not finite), return the
    minimum-norm least-squares solution :math:`x = A^+ b` instead.

    ``A`` is a dense ndarray or a scipy sparse matrix (sparse LU first; the least-squares fallback
    densifies, so it is meant for the small or rare singular case). Returns ``(x, exact)``, where
    ``exact`` is False when the least-squares fallback was taken.
    """
    b = np.asarray(b, dtype=float)
    if not (_finite(A) and all_finite(b.reshape(-1))):     # (no LAPACK call on non-finite values)
        return np.full(A.shape[1:] + b.shape[1:], np.nan), False
    if sp.issparse(A):
        lu = factorise(A, permc="COLAMD", pivot=1.0)
        if lu is not None:
            x = lu.solve(b)
            if all_finite(x.reshape(-1)):
                return x.reshape(b.shape), True
        A = A.toarray()
    A = np.asarray(A, dtype=float)
    x = dense_solve(A, b)
    if x is not None:
        return x, True
    return np.linalg.lstsq(A, b, rcond=None)[0], False


def min_norm_lstsq(A, b, rcond=None):
    r"""The minimum-norm least-squares solution :math:`x = A^+ b` of a dense A (m x n, any rank: LAPACK's
    ``gelsy``, a complete orthogonal factorisation by QR with column pivoting, the trailing part of R below ``rcond``
    times its largest entry dropped; default ``eps max(m, n)``), or None
    when A or b is not finite or the solve fails (no LAPACK call on non-finite values)."""
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    if A.size == 0:
        return np.zeros(A.shape[1:] + b.shape[1:])
    if not (all_finite(A.reshape(-1)) and all_finite(b.reshape(-1))):
        return None
    try:
        cond = np.finfo(float).eps * max(A.shape) if rcond is None else rcond
        x = sla.lstsq(A, b, cond=cond, lapack_driver="gelsy", check_finite=False)[0]
    except (np.linalg.LinAlgError, ValueError):
        return None
    return x if all_finite(x.reshape(-1)) else None


def refined_solve(A, b, rounds: int = 3) -> np.ndarray:
    r"""Solve :math:`Ax = b` by LU with iterative refinement: :math:`r = b - Ax` in extended
    precision (``np.longdouble``; in double above ``EXTENDED_MAX`` rows),
    :math:`x \leftarrow x + A^{-1} r`. Singular A: the least-squares solution
    (:func:`nsopt.linalg.solve_or_lstsq`)."""
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    if b.shape[0] == 0:
        return np.zeros(0)
    if not (all_finite(A.reshape(-1)) and all_finite(b)):
        return solve_or_lstsq(A, b)[0]
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
