r"""One factorisation of the linearised system :math:`K = A + B\mathcal M`, reused for every direction
(``solve``) and for the adjoint (``solve_t``): dense LAPACK LU for small dense systems, SuperLU for
sparse ones. Where K is singular (the solution set is then not a point: see :func:`nsopt.diagnose`):
a dense K gives the minimum-norm least-squares solutions (SVD); a sparse K is never densified, it
gives those of the proximally regularised system :math:`K + \delta B = A + B(\mathcal M + \delta I)`,
:math:`\delta` = ``PROX_REL`` x the largest entry of :math:`\mathcal M` (the derivative of the problem
with :math:`\mathcal M + \delta I`, which tends to the minimum-norm one as :math:`\delta \to 0` where
:math:`\mathcal M` is symmetric positive semidefinite)."""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

DENSE_MAX = 2000          # a K with at most this many rows is factorised dense when it is dense anyway
RCOND_MIN = 1e-13         # below this reciprocal condition number K is taken as singular
PROX_REL = 1e-10          # the proximal shift of a singular sparse K, relative to the largest entry of M


class Factor:
    """``solve(b)`` = K⁻¹b, ``solve_t(b)`` = K⁻ᵀb (matrices b: one column per direction); K singular:
    the minimum-norm least-squares solutions (``singular`` is True, ``rank`` its numerical rank)."""

    def __init__(self, K, B=None, mscale=1.0):
        self.n = K.shape[0]
        self.singular, self.rank, self.rcond, self.shift = False, self.n, 1.0, 0.0
        self._lu = self._splu = self._pinv = None
        if self.n == 0:
            return
        if not sp.issparse(K) or self.n <= DENSE_MAX and K.nnz > 0.05 * self.n * self.n:
            Kd = K.toarray() if sp.issparse(K) else np.asarray(K, float)
            self._dense(Kd)
        else:
            self._sparse(sp.csc_matrix(K), B, mscale)

    def _dense(self, Kd):
        with np.errstate(all="ignore"):
            lu, piv, info = sla.lapack.dgetrf(Kd)
        if info == 0:
            anorm = np.linalg.norm(Kd, 1)
            rc, _ = sla.lapack.dgecon(lu, anorm, norm="1")
            self.rcond = float(rc)
        if info != 0 or not self.rcond > RCOND_MIN:
            self._least_squares(Kd)
            return
        self._lu = (lu, piv)

    def _least_squares(self, Kd):
        U, s, Vt = np.linalg.svd(Kd)
        tol = max(Kd.shape) * np.finfo(float).eps * (s[0] if s.size else 0.0) * 1e3
        keep = s > tol
        self.rank = int(keep.sum())
        self.singular = True
        self.rcond = float(s[-1] / s[0]) if s.size and s[0] > 0 else 0.0
        self._pinv = (U[:, keep], s[keep], Vt[keep])

    def _sparse(self, K, B, mscale):
        from scipy.sparse.linalg import splu

        lu = self._splu_ok(K)
        if lu is None and B is not None:          # singular: the proximal shift, still sparse
            self.singular, self.rank, self.rcond = True, -1, 0.0
            self.shift = PROX_REL * mscale
            lu = self._splu_ok(sp.csc_matrix(K + self.shift * B), check=False)
        if lu is None:
            raise np.linalg.LinAlgError("the linearised system is singular and cannot be factorised")
        self._splu = lu

    def _splu_ok(self, K, check=True):
        from scipy.sparse.linalg import splu

        try:
            lu = splu(K, permc_spec="COLAMD")
        except RuntimeError:
            return None
        d = np.abs(lu.U.diagonal())
        if check:
            if not (d.size and d.min() > 1e-14 * d.max()):
                return None
            self.rcond = float(d.min() / d.max())      # a pivot ratio, not LAPACK's estimate
        return lu

    def _apply(self, b, trans):
        b = np.asarray(b, float)
        if self.n == 0:
            return np.zeros(b.shape)
        if self._lu is not None:
            return sla.lu_solve(self._lu, b, trans=1 if trans else 0, check_finite=False)
        if self._splu is not None:
            return self._splu.solve(np.ascontiguousarray(b), trans="T" if trans else "N")
        if self._pinv is not None:
            U, s, Vt = self._pinv
            if trans:
                return U @ ((Vt @ b).T / s).T
            return Vt.T @ ((U.T @ b).T / s).T
        raise AssertionError("no factorisation")

    def solve(self, b):
        return self._apply(b, False)

    def solve_t(self, b):
        return self._apply(b, True)
