"""Affine variational inequality over a polyhedron."""

from __future__ import annotations

import numpy as np

from ._base import EPS, AffineProblem, affine, as_matrix, as_square_system, as_vector, check_input, norm2


class AVI(AffineProblem):
    r"""Affine variational inequality (Siconos ``AffineVariationalInequalities``).

    Find :math:`z \in K = \{z : Hz \ge k\}` with :math:`(Mz + q)^\top (y - z) \ge 0` for all
    :math:`y \in K`. (Siconos stores the polyhedron as :math:`\{z : Hz \le K\}`; nsopt's readers flip
    the sign.)

    Parameters
    ----------
    M : (n, n) array_like or sparse
    q : (n,) array_like
    H : (p, n) array_like or sparse
        The constraint rows of the polyhedron.
    k : (p,) array_like
        Their right-hand sides.

    Raises
    ------
    ProblemError
        For wrong shapes or non-finite entries.

    Notes
    -----
    Error measure: the natural map with the Euclidean projection on K,
    :math:`\|z - \Pi_K(z - (Mz + q))\|_2 / \|q\|_2` (divided when :math:`\|q\| >` DBL_EPSILON),
    computed with a small QP; Siconos 4.4 has no AVI error function of its own to compare with. When K
    is empty the measure is ``inf``: no vector solves the problem.

    Examples
    --------
    The worked example of ``formulations/avi.md``: project (2, 1) on the half-plane z1 + z2 <= 1.

    >>> import nsopt
    >>> p = nsopt.AVI([[1.0, 0.0], [0.0, 1.0]], [-2.0, -1.0], H=[[-1.0, -1.0]], k=[-1.0])
    >>> s = nsopt.solve(p, method="lemke")
    >>> print(s.status.value, s.z.round(6) + 0.0)      # + 0.0: no negative zero
    solved [1. 0.]
    """

    kind = "avi"
    _fields = ("M", "q", "H", "k")

    def __init__(self, M, q, H, k):
        M, q = as_square_system(M, q, "AVI")
        n = M.shape[0]
        H = as_matrix(H, "H", "AVI", shape=(None, n))
        k = as_vector(k, "k", "AVI", size=H.shape[0])
        self.M, self.q, self.H, self.k = M, q, H, k
        self._freeze()

    def is_empty(self) -> bool:
        """True when the polyhedron K = {z : Hz >= k} is empty (a feasibility LP, cached)."""
        def make():
            from scipy.optimize import linprog

            n = self.size
            if self.H.shape[0] == 0:
                return False
            res = linprog(np.zeros(n), A_ub=-self.H, b_ub=-np.asarray(self.k), bounds=[(None, None)] * n,
                          method="highs")
            return res.status == 2          # 2: infeasible
        return self.cached("k_empty", make, on=("H", "k"))

    def infeasibility(self):
        return ("the polyhedron K = {z : Hz >= k} is empty (a feasibility LP is infeasible): no z solves "
                "the AVI") if self.is_empty() else None

    def project(self, y) -> np.ndarray:
        """Euclidean projection on K = {z : Hz >= k}, by the dual QP: min ||x - y||^2, Hx >= k."""
        from scipy.optimize import minimize

        y = np.asarray(y, dtype=float)
        H = np.asarray(self.H.toarray() if hasattr(self.H, "toarray") else self.H)
        if np.all(H @ y >= self.k - 1e-15):
            return y.copy()
        # dual: min_{l >= 0} 1/2 ||H^T l||^2 + l^T (H y - k), x = y + H^T l; then an exact polish on
        # the active set (H_A x = k_A) so the projection is accurate to rounding, not to L-BFGS' tolerance
        G, c = H @ H.T, H @ y - self.k
        res = minimize(lambda l: 0.5 * l @ G @ l + c @ l, np.zeros(len(c)), jac=lambda l: G @ l + c,
                       bounds=[(0, None)] * len(c), method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-13})
        lam = res.x
        x = y + H.T @ lam
        act = lam > 1e-12 * max(1.0, float(np.max(lam, initial=0.0)))
        if np.any(act):
            HA = H[act]
            la, *_ = np.linalg.lstsq(HA @ HA.T, self.k[act] - HA @ y, rcond=None)
            xa = y + HA.T @ la
            if np.all(la >= -1e-14) and np.all(H @ xa >= self.k - 1e-12 * (1 + np.abs(self.k))):
                x = xa
        return x

    def error(self, z, w=None) -> float:
        z = check_input(z, "z", "AVI", self.size)
        if self.is_empty():       # no z solves the AVI: no finite measure can call any z a solution
            return float("inf")
        w = affine(self.M, z, self.q)
        e = norm2(z - self.project(z - w))
        nq = norm2(self.q)
        return e / nq if nq > EPS else e

    def __repr__(self):
        return f"AVI(n={self.size}, constraints={self.H.shape[0]})"
