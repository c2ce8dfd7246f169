"""Multiple-impact problem (Siconos ``MultipleImpact``): the LZB model of simultaneous impacts."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import ProblemError
from ._base import Problem, as_matrix, as_vector, check_input, dense, matvec
from ._delassus import delassus

OWNER = "MultipleImpact"


def _per_contact(x, field: str, m: int, *, low: float, high: float = np.inf, open_low: bool = False):
    """One value per contact (a scalar is broadcast), finite, in [low, high] (or (low, high])."""
    a = as_vector(x, field, OWNER)
    if a.shape[0] == 1 and m != 1:
        a = np.full(m, a[0])
    if a.shape[0] != m:
        raise ProblemError(field, f"has {a.shape[0]} entries, expected one per contact ({m}) or one for all", OWNER)
    bad = np.flatnonzero((a <= low if open_low else a < low) | (a > high))
    if bad.size:
        i = int(bad[0])
        lo = "(" if open_low else "["
        hi = "inf)" if high == np.inf else f"{high:g}]"
        raise ProblemError(field, f"entry {i} is {a[i]:g}, outside {lo}{low:g}, {hi}", OWNER)
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


class MultipleImpact(Problem):
    r"""Multiple-impact problem: the LZB model (Liu, Zhao, Brogliato [1]_) of Siconos' ``MultipleImpact``.

    Bodies with mass matrix :math:`M` (n x n, symmetric positive definite) and pre-impact velocity
    :math:`v^-` touch at the m contacts of the normal Jacobian :math:`H` (m x n; the relative normal
    velocity :math:`u = Hv` is negative when approaching). The impact is the Darboux–Keller dynamics

    .. math::  M\,dv = H^\top dP, \qquad dE_i = -u_i\,dP_i \ \text{(compression)},\quad
               dE_i = -u_i\,dP_i / e_i^2 \ \text{(expansion)},

    integrated in the impulse :math:`P_{\text{primary}}` of the primary contact, with the impulse
    increments distributed by the compliance law :math:`F_i = k_i\,\delta_i^{\eta_i}` (stiffness
    :math:`k_i`, elasticity exponent :math:`\eta_i`: 1.5 Hertz, 1 linear) and the potential energy
    :math:`E_i` stored at each contact. It ends when every contact has no stored energy and is not
    approaching. See ``formulations/multiple_impact.md``.

    Parameters
    ----------
    M : (n, n) array_like or sparse, symmetric positive definite mass matrix
    H : (m, n) array_like or sparse, normal Jacobian of the contacts closed at the impact
    v : (n,) pre-impact velocity
    restitution : energetic coefficient of restitution per contact in [0, 1] (or one for all)
    stiffness : contact stiffness :math:`k_i > 0` per contact (or one for all)
    elasticity : elasticity exponent :math:`\eta_i > 0` per contact (or one for all)

    Variables of a solution: ``v`` (post-impact velocity, n) and ``p`` (total normal impulse per contact, m).

    Error measure: the LZB termination conditions and momentum balance that the end state must satisfy,

    .. math::  \max\Big(\frac{\|M(v - v^-) - H^\top p\|}{1 + \|Mv^-\|},\;
               \frac{\|\min(0, Hv)\|}{1 + \|Hv^-\|},\; \frac{\|\min(0, p)\|}{1 + \|p\|}\Big)

    (2-norms): momentum balance, no contact still approaching, non-negative impulses. The energetic
    restitution itself is a property of the impact process, not of its end state; the ``lzb`` method
    reports the stored energy left (zero at its termination) and the kinetic energy in ``Solution.info``.

    References
    ----------
    .. [1] C. Liu, Z. Zhao, B. Brogliato, "Frictionless multiple impacts in multibody systems. I.
       Theoretical framework", Proc. R. Soc. A 464 (2008) 3193–3211.
    """

    kind = "multiple-impact"
    _fields = ("M", "H", "v", "restitution", "stiffness", "elasticity")
    primal = "p"

    def __init__(self, M, H, v, restitution=1.0, stiffness=1.0, elasticity=1.5):
        M = as_matrix(M, "M", OWNER, square=True)
        n = M.shape[0]
        H = as_matrix(H, "H", OWNER, shape=(None, n))
        m = H.shape[0]
        v = as_vector(v, "v", OWNER, size=n)
        self.M, self.H, self.v = M, H, v
        self.restitution = _per_contact(restitution, "restitution", m, low=0.0, high=1.0)
        self.stiffness = _per_contact(stiffness, "stiffness", m, low=0.0, open_low=True)
        self.elasticity = _per_contact(elasticity, "elasticity", m, low=0.0, open_low=True)
        self._factor()          # M symmetric positive definite, checked once
        self._freeze()

    @classmethod
    def from_delassus(cls, W, u, restitution=1.0, stiffness=1.0, elasticity=1.5):
        r"""The problem in contact coordinates, from the Delassus matrix :math:`W = HM^{-1}H^\top`
        (m x m, symmetric positive semidefinite) and the pre-impact relative velocity u (m,): what a
        time-stepping scheme assembles. With :math:`W = FF^\top` (F = m x r, r = rank W), it is the
        problem ``M = I_r, H = F, v = F^+ u``; its impulses p are those of the original bodies, its
        velocity v lives in the r coordinates (the bodies' velocity is :math:`v^- + M^{-1}H^\top p`).
        ``u`` must lie in the range of W (it does when u = Hv for some v)."""
        Wd = dense(as_matrix(W, "W", OWNER, square=True))
        m = Wd.shape[0]
        u = as_vector(u, "u", OWNER, size=m)
        if not np.allclose(Wd, Wd.T, rtol=1e-10, atol=1e-14 * max(1.0, float(np.max(np.abs(Wd), initial=0.0)))):
            raise ProblemError("W", "must be symmetric", OWNER)
        lam, V = np.linalg.eigh(0.5 * (Wd + Wd.T)) if m else (np.zeros(0), np.zeros((0, 0)))
        top = float(np.max(lam, initial=0.0))
        if m and float(np.min(lam)) < -1e-10 * max(top, 1e-300):
            raise ProblemError("W", f"must be positive semidefinite (eigenvalue {float(np.min(lam)):.3g})", OWNER)
        keep = lam > 1e-12 * top if top > 0 else np.zeros(m, dtype=bool)
        F = V[:, keep] * np.sqrt(lam[keep])
        v = np.linalg.lstsq(F, u, rcond=None)[0] if F.size else np.zeros(0)
        if F.shape[1] == 0:       # W = 0: nothing can move; one dummy coordinate keeps the shapes valid
            F, v = np.zeros((m, 1)), np.zeros(1)
        return cls(np.eye(F.shape[1]), F, v, restitution, stiffness, elasticity)

    # -- derived data -------------------------------------------------------------------------------
    def _factor(self):
        Md = dense(self.M)
        if not np.allclose(Md, Md.T, rtol=1e-12, atol=1e-14 * max(1.0, float(np.max(np.abs(Md), initial=0.0)))):
            raise ProblemError("M", "must be symmetric", OWNER)
        from ..linalg import cholesky

        L = cholesky(Md)
        if L is None:
            raise ProblemError("M", "must be positive definite (Cholesky failed)", OWNER)
        object.__setattr__(self, "_chol", L)

    def minv_ht(self) -> np.ndarray:
        """:math:`M^{-1}H^\\top` (n x m, dense), computed once."""
        def make():
            Ht = dense(self.H).T
            return self._chol.solve(Ht) if Ht.size else np.zeros(Ht.shape)
        return self.cached("minv_ht", make, on=("M", "H"))

    def delassus(self) -> np.ndarray:
        """:math:`W = HM^{-1}H^\\top` (m x m, dense, symmetrized): the impulse-to-relative-velocity map
        (:func:`nsopt.problems._delassus.delassus`, M⁻¹ by the Cholesky factor)."""
        def make():
            L = self._chol
            return delassus(dense(self.H), lambda X: L.solve(X) if X.size else np.zeros(X.shape),
                            symmetrize=True)
        return self.cached("delassus", make, on=("M", "H"))

    @property
    def n(self) -> int:
        return self.M.shape[0]

    @property
    def nc(self) -> int:
        return self.H.shape[0]

    @property
    def size(self) -> int:
        """Number of contacts m (the size of the impulse p)."""
        return self.H.shape[0]

    def u(self, v) -> np.ndarray:
        """Relative normal velocity :math:`Hv`."""
        return matvec(self.H, check_input(v, "v", OWNER, self.n))

    def kinetic_energy(self, v) -> float:
        r""":math:`\tfrac12 v^\top M v`."""
        v = check_input(v, "v", OWNER, self.n)
        return 0.5 * float(v @ matvec(self.M, v))

    # -- variables and error ------------------------------------------------------------------------
    def variable_sizes(self):
        return {"v": self.n, "p": self.size}

    def complete(self, x):
        p = x.get("p")
        v = x.get("v")
        if p is None and v is None:
            raise ProblemError("p", "a solution needs the impulse p or the velocity v", OWNER)
        if p is None:   # the impulses that explain the velocity jump (least squares when H is rank deficient)
            from ..linalg import solve_or_lstsq

            Ht = dense(self.H).T
            p = solve_or_lstsq(Ht.T @ Ht, Ht.T @ matvec(self.M, np.asarray(v, float) - self.v))[0]
        if v is None:
            v = self.v + self.minv_ht() @ np.asarray(p, float)
        return {"v": np.asarray(v, float), "p": np.asarray(p, float)}

    def error(self, p, v=None) -> float:
        """The error measure of the class docstring (v = v^- + M^{-1}H^T p when not given)."""
        p = check_input(p, "p", OWNER, self.size)
        v = self.v + self.minv_ht() @ p if v is None else check_input(v, "v", OWNER, self.n)
        Mv0 = matvec(self.M, self.v)
        mom = matvec(self.M, v) - Mv0 - (self.H.T @ p if sp.issparse(self.H) else dense(self.H).T @ p)
        e_mom = float(np.linalg.norm(mom)) / (1.0 + float(np.linalg.norm(Mv0)))
        e_sep = float(np.linalg.norm(np.minimum(0.0, self.u(v)))) / (1.0 + float(np.linalg.norm(self.u(self.v))))
        e_sgn = float(np.linalg.norm(np.minimum(0.0, p))) / (1.0 + float(np.linalg.norm(p)))
        return max(e_mom, e_sep, e_sgn)

    def error_of(self, xs):
        return self.error(xs["p"], xs["v"])

    @property
    def default_method(self) -> str:
        return "lzb"

    def __repr__(self):
        return f"MultipleImpact(n={self.n}, contacts={self.size})"
