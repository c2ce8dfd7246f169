r"""One factorisation of the linearised system :math:`K = A + B\mathcal M`, reused for every direction
(``solve``) and for the adjoint (``solve_t``), and the one decision of whether K is singular, shared by
:func:`nsopt.sensitivity` and :func:`nsopt.diagnose`.

**The singularity threshold** (:data:`RANK_RTOL`). K's rows are first equilibrated (each divided by
its largest entry: the laws' rows, :math:`dx_i` or :math:`(B\mathcal M\,dx)_i`, have the units of x or
of y). A singular value of the equilibrated K below ``RANK_RTOL`` times the largest counts as zero:
K is then *singular* (the solution is not locally unique, or not differentiable along every
direction), its rank is the number of the others and its null space N is spanned by their
complement. The factorisations are :func:`nsopt.linalg.factorise`'s. Dense K: LU with LAPACK's condition estimate as a screen (an estimated reciprocal
condition number above ``n * RANK_RTOL`` proves the ratio above ``RANK_RTOL``), the SVD otherwise. A
sparse K: SuperLU, singular when its smallest pivot is below ``RANK_RTOL`` times the largest (a
proxy for the singular values, which a large sparse matrix does not give cheaply); a singular one
of up to ``SINGULAR_DENSE_MAX`` rows is then decided and solved by the dense SVD like a dense K.

**A singular K** gives the minimum-norm least-squares solutions (dense: the truncated SVD) or those of
the proximally regularised system :math:`K + \delta B = A + B(\mathcal M + \delta I)`,
:math:`\delta` = ``PROX_REL`` x the largest entry of :math:`\mathcal M` (larger sparse: the derivative of the
problem with :math:`\mathcal M + \delta I`, which tends to the minimum-norm one as
:math:`\delta \to 0` where :math:`\mathcal M` is symmetric positive semidefinite); :meth:`Factor.residual`
says whether a right-hand side was in the range of K (the linearised system then has solutions)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..linalg import factorise

DENSE_MAX = 2000          # a K with at most this many rows is factorised dense when it is dense anyway
SINGULAR_DENSE_MAX = 3000  # a singular sparse K with at most this many rows: the dense SVD (its null space)
RANK_RTOL = 1e-9          # THE singularity threshold (sensitivity and diagnose): relative singular value
PROX_REL = 1e-10          # the proximal shift of a singular sparse K, relative to the largest entry of M
CONSISTENT_RTOL = 1e-7    # a right-hand side whose residual exceeds this (relative) is not in K's range


def row_scales(K):
    """1 / the largest absolute entry of each row of K (1 for a zero row)."""
    if sp.issparse(K):
        m = np.asarray(abs(K).max(axis=1).todense()).reshape(-1)
    else:
        m = np.max(np.abs(K), axis=1, initial=0.0)
    return 1.0 / np.where(m > 0, m, 1.0)


def null_space(K, rtol=RANK_RTOL):
    """(rank, N): the numerical rank of the row-equilibrated dense ``K`` and an orthonormal basis N of
    its null space (columns), singular values below ``rtol`` times the largest counting as zero."""
    Kd = np.asarray(K.toarray() if sp.issparse(K) else K, float)
    n = Kd.shape[1]
    if Kd.size == 0:
        return 0, np.eye(n)
    Ks = Kd * row_scales(Kd)[:, None]
    _, s, Vt = np.linalg.svd(Ks)
    rank = int(np.sum(s > rtol * s[0])) if s.size and s[0] > 0 else 0
    return rank, Vt[rank:].T.copy()


class Factor:
    """``solve(b)`` = K⁻¹b, ``solve_t(b)`` = K⁻ᵀb (matrices b: one column per direction); K singular
    (module docstring): the minimum-norm least-squares solutions, ``singular`` True, ``rank`` its
    numerical rank, ``null`` an orthonormal basis of its null space (dense K; None for a sparse one)."""

    def __init__(self, K, B=None, mscale=1.0):
        self.n = K.shape[0]
        self.K = K
        self.singular, self.rank, self.rcond, self.shift = False, self.n, 1.0, 0.0
        self.null = np.zeros((self.n, 0))
        self._lu = self._pinv = None
        self._d = np.ones(self.n)
        if self.n == 0:
            return
        if not sp.issparse(K) or self.n <= DENSE_MAX and K.nnz > 0.05 * self.n * self.n:
            Kd = K.toarray() if sp.issparse(K) else np.asarray(K, float)
            self._dense(Kd)
        else:
            self._sparse(sp.csc_matrix(K), B, mscale)

    def _dense(self, Kd):
        self._d = d = row_scales(Kd)
        Ks = Kd * d[:, None]
        lu = factorise(Ks)
        if lu is not None:
            self.rcond = lu.rcond(np.linalg.norm(Ks, 1))
            if self.rcond > self.n * RANK_RTOL:          # proves sigma_min / sigma_max > RANK_RTOL
                self._lu = lu
                return
        U, s, Vt = np.linalg.svd(Ks)
        keep = s > RANK_RTOL * s[0] if s.size and s[0] > 0 else np.zeros(s.shape, bool)
        self.rank = int(keep.sum())
        self.rcond = float(s[-1] / s[0]) if s.size and s[0] > 0 else 0.0
        if self.rank == self.n and lu is not None:
            self._lu = lu
            return
        self.singular = True
        self.null = Vt[self.rank:].T.copy()
        self._pinv = (U[:, keep], s[keep], Vt[keep])

    def _sparse(self, K, B, mscale):
        lu = self._splu_ok(K)
        if lu is None and self.n <= SINGULAR_DENSE_MAX:     # singular, not too large: the dense SVD path
            self._dense(K.toarray())
            return
        if lu is None and B is not None:          # singular: the proximal shift, still sparse
            self.singular, self.rank, self.rcond, self.null = True, -1, 0.0, None
            self.shift = PROX_REL * mscale
            lu = self._splu_ok(sp.csc_matrix(K + self.shift * B), check=False)
        if lu is None:
            raise np.linalg.LinAlgError("the linearised system is singular and cannot be factorised")
        self._lu = lu

    def _splu_ok(self, K, check=True):
        lu = factorise(K, permc="COLAMD")
        if lu is None:
            return None
        d = np.abs(lu.U_diagonal)
        if check:
            if not (d.size and d.min() > RANK_RTOL * d.max()):
                return None
            self.rcond = float(d.min() / d.max())      # a pivot ratio, not LAPACK's estimate
        return lu

    def _apply(self, b, trans):
        b = np.asarray(b, float)
        if self.n == 0:
            return np.zeros(b.shape)
        d = self._d if b.ndim == 1 else self._d[:, None]
        if self._lu is not None:
            if not self._lu.dense:              # (a sparse K is not equilibrated)
                return self._lu.solve(b, trans=trans)
            return d * self._lu.solve(b, trans=True) if trans else self._lu.solve(d * b)
        if self._pinv is not None:
            U, s, Vt = self._pinv
            if trans:
                return d * (U @ ((Vt @ b).T / s).T)
            return Vt.T @ ((U.T @ (d * b)).T / s).T
        raise AssertionError("no factorisation")

    def solve(self, b):
        return self._apply(b, False)

    def solve_t(self, b):
        return self._apply(b, True)

    def residual(self, x, b, trans=False):
        """The relative residual of ``K x = b`` (``Kᵀ x = b``): the part of b outside K's range, relative
        to the size of b (0 when K is nonsingular, up to round-off)."""
        K = self.K
        b = np.asarray(b, float)
        if trans:
            r = np.asarray(K.T @ x) - b
        else:                                   # in the equilibrated rows (each row in its own units)
            d = self._d if b.ndim == 1 else self._d[:, None]
            r, b = d * (np.asarray(K @ x) - b), d * b
        scale = max(float(np.max(np.abs(b), initial=0.0)), 1e-300)
        return float(np.max(np.abs(r), initial=0.0)) / scale
