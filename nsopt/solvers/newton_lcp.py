r"""Semismooth Newton on the Fischer–Burmeister function, for LCP and MLCP.

With :math:`w = Mz + q` and :math:`\varphi(a, b) = \sqrt{a^2 + b^2} - a - b` (zero iff
:math:`a \ge 0, b \ge 0, ab = 0`), the problem is the nonsmooth system

.. math::  \Phi_i(z) = \varphi(z_i, w_i)\ \text{(complementarity rows)},\qquad
           \Phi_i(z) = w_i\ \text{(free rows of an MLCP, kept as equations)} .

Each step solves :math:`H d = -\Phi` with an element of the generalised Jacobian
:math:`H = D_a + D_b M` (:math:`D_a = \mathrm{diag}(z_i/\rho_i - 1)`,
:math:`D_b = \mathrm{diag}(w_i/\rho_i - 1)`, :math:`\rho_i = \|(z_i, w_i)\|`; at a degenerate pair
:math:`z_i = w_i = 0` the element with direction (1, 1) is used). The step is globalised by an
Armijo backtracking line search on the merit :math:`\Psi = \tfrac12\|\Phi\|^2`, whose gradient is
:math:`H^\top \Phi` (:math:`\Psi` is continuously differentiable); when the Newton system is
singular or its solution is not a sufficient descent direction, the gradient step
:math:`d = -\nabla\Psi` is taken instead (De Luca–Facchinei–Kanzow). The Newton system is solved by
:func:`nsopt.solvers.newton_system.newton_direction` (LAPACK for a dense M, SuperLU for a sparse one). The stopping test is the problem's own error measure
(``problem.error``); once the error is below 1e-4, each step also tries a direct solve on the
support {z_i > w_i} (active-set polish), kept when it lowers the error.

Newton runs on :math:`(M/s, q/s)` with :math:`s = \min(1, \max_{ij}|M_{ij}|)` (the same z; w divided by
s): the descent test :math:`\nabla\Psi\cdot d \le -\rho\|d\|^p` has an absolute threshold, which on
(1e-9 M, 1e-9 q) rejected every Newton step (:math:`\nabla\Psi\cdot d = -2\Psi \sim 10^{-17}`) for gradient
steps of length 1e-18; brought to unit scale, the problem takes the steps of (M, q). A matrix above unit
scale is left as it is (the descent test is then weaker, not stronger; dividing it changes the balance of
z and w that the FB function sees, and Siconos' Buck converter MLCPs, max|M| = 1e4, no longer converge).
``info["merit"]`` is :math:`\Psi` of the problem Newton ran on and ``info["scale"]`` is s.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import OptionError
from ..linalg import dense_solve, factorise
from ..registry import register
from .newton_loop import newton_loop
from .newton_system import newton_direction


def _fb(z, w, comp):
    """Phi and the diagonals (Da, Db) of the Jacobian element."""
    r = np.hypot(z, w)
    phi = r - z - w
    deg = r == 0.0
    rs = np.where(deg, 1.0, r)
    s = 1.0 / np.sqrt(2.0)
    Da = np.where(deg, s - 1.0, z / rs - 1.0)
    Db = np.where(deg, s - 1.0, w / rs - 1.0)
    if comp is not None:
        eq = ~comp
        phi = np.where(eq, w, phi)
        Da = np.where(eq, 0.0, Da)
        Db = np.where(eq, 1.0, Db)
    return phi, Da, Db


def _newton(problem, mon, M, q, comp, *, linear_solver, armijo, backtrack_factor, descent_coef, descent_exp,
            max_backtracks, polish_below=1e-4):
    n = q.shape[0]
    sparse = sp.issparse(M)
    if linear_solver == "auto":
        linear_solver = "sparse" if sparse else "dense"
    if linear_solver not in ("dense", "sparse"):
        raise OptionError(f"linear_solver must be 'auto', 'dense' or 'sparse', got {linear_solver!r}")
    if linear_solver == "dense" and sparse:
        M = M.toarray()
        sparse = False
    if linear_solver == "sparse" and not sparse:
        M = sp.csr_matrix(M)
        sparse = True
    mon.budget(100)
    z = mon.start_vector("z", n)
    # LCP(M, q) and LCP(M/s, q/s) have the same z (w is divided by s): a problem below unit scale is brought to it
    # (module docstring); the error stays the problem's own
    s = _scale(M, q)
    M, q = M / s, q / s
    system = _FBNewton(problem, M, q, comp, sparse, armijo, backtrack_factor, descent_coef, descent_exp,
                       max_backtracks, polish_below, mon.tol)
    system.set(z, system.matvec(z) + q)
    newton_loop(system, z, mon)
    return mon.solution(info={"gradient_steps": system.ngrad, "merit": system.psi, "scale": s})


def _scale(M, q):
    """The factor s that Newton divides (M, q) by: min(1, max|M_ij|), or min(1, max|q_i|) for M = 0; 1 for 0."""
    m = float(abs(M).max()) if M.shape[0] and (not sp.issparse(M) or M.nnz) else 0.0
    if not (np.isfinite(m) and m > 0.0):
        m = float(np.max(np.abs(q))) if q.size else 0.0
    return min(m, 1.0) if np.isfinite(m) and m > 0.0 else 1.0


class _FBNewton:
    """The Fischer–Burmeister system as :func:`~nsopt.solvers.newton_loop.newton_loop` reads it: x = z,
    (w, Phi, D_a, D_b, Psi) kept for the current z; the direction is Newton's when it is a sufficient
    descent direction of Psi, else the gradient's; the line search is Armijo's on the slope; no
    fallback (a failed line search stops); the active-set polish below ``polish_below``."""

    wscale = 1.0

    def __init__(self, problem, M, q, comp, sparse, armijo, backtrack_factor, descent_coef, descent_exp,
                 max_backtracks, polish_below, tol):
        self.p, self.M, self.q, self.comp, self.sparse = problem, M, q, comp, sparse
        self.armijo, self.backtrack_factor, self.max_backtracks = armijo, backtrack_factor, max_backtracks
        self.descent_coef, self.descent_exp = descent_coef, descent_exp
        self.polish_below, self.tol = polish_below, tol
        self.ngrad = 0
        self._why = None

    def matvec(self, x):
        return np.asarray(self.M @ x).reshape(-1)

    def set(self, z, w):
        self.w = w
        self.phi, self.Da, self.Db = _fb(z, w, self.comp)
        self.psi = 0.5 * float(self.phi @ self.phi)

    def error(self, z):
        return self.p.error(z)

    def variables(self, z):
        return {"z": z}

    def linearise(self, z):
        self.g = self.Da * self.phi + np.asarray(self.M.T @ (self.Db * self.phi)).reshape(-1)
        return self.psi

    def direction(self, z, shift):
        M, Da, Db, g = self.M, self.Da, self.Db, self.g
        if self.sparse:
            H = (sp.diags(Da) + sp.diags(Db) @ M).tocsc()
        else:
            H = Db[:, None] * M
            H[np.diag_indices(z.shape[0])] += Da
        d = newton_direction(H, -self.phi)
        slope = float(g @ d) if d is not None else 0.0
        if d is None or slope > -self.descent_coef * float(np.linalg.norm(d)) ** self.descent_exp:
            d = -g       # singular, or not a sufficient descent direction: the gradient step
            slope = -float(g @ g)
            self.ngrad += 1
        self.slope = slope
        if slope == 0.0:
            self._why = "zero gradient of the merit function (stationary point)"
            return None
        return d

    def search(self, z, d, f0, fref, line_search, regularised):
        t = 1.0
        for _ in range(self.max_backtracks):
            zt = z + t * d
            wt = self.matvec(zt) + self.q
            phit, Dat, Dbt = _fb(zt, wt, self.comp)
            psit = 0.5 * float(phit @ phit)
            if psit <= self.psi + self.armijo * t * self.slope:
                self._step = (zt, wt, phit, Dat, Dbt, psit)
                return True, t, psit
            t *= self.backtrack_factor
        return False, 0.0, f0

    def move(self, z, t, d):
        z, self.w, self.phi, self.Da, self.Db, self.psi = self._step
        return z

    def fallback(self, z):
        return None

    def why(self, k):
        return self._why or f"line search failed after {k} Newton step(s)"

    def polish(self, z, err):
        """The active-set polish (module docstring), kept when it lowers the error."""
        if self.tol < err < self.polish_below:
            zp = _polish(self.M, self.q, z, self.comp, self.sparse)
            if zp is not None:
                ep = self.p.error(zp)
                if ep < err:
                    self.set(zp, self.matvec(zp) + self.q)
                    return zp, ep
        return z, err



def _residual(M, q, J, zJ, comp):
    """||min(z, w)|| on complementarity rows and ||w|| on free rows, for z = zJ on J and 0 elsewhere."""
    if not np.all(np.isfinite(zJ)):
        return np.inf
    z = np.zeros(q.shape[0])
    z[J] = zJ
    w = np.asarray(M @ z).reshape(-1) + q
    r = np.minimum(z, w)
    if comp is not None:
        r = np.where(comp, r, w)
    return float(np.linalg.norm(r))


def _polish(M, q, z, comp, sparse):
    """Direct solve on the support: rows/cols J = free ∪ {z_i > w_i}, the other z_i = 0."""
    w = np.asarray(M @ z).reshape(-1) + q
    J = z > w
    if comp is not None:
        J |= ~comp
    J = np.flatnonzero(J)
    if J.size == 0:
        return None
    try:
        if sparse:
            lu = factorise(sp.csc_matrix(M)[J][:, J].tocsc())
            if lu is None:
                return None
            zJ = lu.solve(-q[J])
        else:
            # a direct solve, and a least-squares correction of the current z_J: exact on a
            # consistent singular system (degenerate PSD M) and, being minimal, next to the iterate;
            # the candidate with the smaller complementarity residual is kept
            MJ = np.asarray(M)[np.ix_(J, J)]
            cands = [z[J] + np.linalg.lstsq(MJ, -(MJ @ z[J] + q[J]), rcond=None)[0]]
            x = dense_solve(MJ, -q[J])
            if x is not None:
                cands.append(x)
            zJ = min(cands, key=lambda c: _residual(M, q, J, c, comp))
    except (np.linalg.LinAlgError, RuntimeError):
        return None
    if not np.all(np.isfinite(zJ)):
        return None
    out = np.zeros_like(z)
    out[J] = zJ
    return out


_DOC_OPTS = """
    Options: the warm start ``z`` (default 0); ``max_iter`` Newton steps (default 100);
    ``linear_solver`` "auto" (sparse LU for sparse M, LAPACK otherwise), "dense" or "sparse";
    ``armijo`` the Armijo constant c of Psi(z + t d) <= Psi(z) + c t slope (1e-4),
    ``backtrack_factor`` the factor t is multiplied by after a rejected step (0.5), ``max_backtracks``
    the most backtracking steps (40); a Newton direction d is rejected for the gradient when
    grad·d > -descent_coef ||d||^descent_exp (1e-8, 2.1). nsopt 0.1's names ``sigma``, ``beta``,
    ``max_ls``, ``rho``, ``p_exp`` are accepted until the next release (DeprecationWarning).
"""


def _checked(*, linear_solver, armijo, backtrack_factor, descent_coef, descent_exp, max_backtracks):
    """newton-fb's options, checked once per distinct values (``OptionError`` naming the bad one)."""
    def number(name, v, lo, hi):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)) or not lo < v < hi:
            raise OptionError(f"newton-fb: {name} must be a number in ({lo}, {hi}), got {v!r}")
        return float(v)

    if isinstance(max_backtracks, bool) or not isinstance(max_backtracks, (int, np.integer)) or max_backtracks < 1:
        raise OptionError(f"newton-fb: max_backtracks must be a positive integer, got {max_backtracks!r}")
    return {"linear_solver": linear_solver, "armijo": number("armijo", armijo, 0.0, 1.0),
            "backtrack_factor": number("backtrack_factor", backtrack_factor, 0.0, 1.0),
            "descent_coef": number("descent_coef", descent_coef, 0.0, np.inf),
            "descent_exp": number("descent_exp", descent_exp, 0.0, np.inf), "max_backtracks": int(max_backtracks)}


@register("lcp", "newton-fb", "semismooth Newton on the Fischer-Burmeister function, Armijo line search",
          check=_checked)
def lcp_newton_fb(problem, mon, *, linear_solver="auto", armijo=1e-4, backtrack_factor=0.5, descent_coef=1e-8,
                  descent_exp=2.1, max_backtracks=40):
    return _newton(problem, mon, problem.M, np.asarray(problem.q, float), None, linear_solver=linear_solver,
                   armijo=armijo, backtrack_factor=backtrack_factor, descent_coef=descent_coef,
                   descent_exp=descent_exp, max_backtracks=max_backtracks)


@register("mlcp", "newton-fb", "semismooth Newton on Fischer-Burmeister (free rows kept as equations)",
          check=_checked)
def mlcp_newton_fb(problem, mon, *, linear_solver="auto", armijo=1e-4, backtrack_factor=0.5, descent_coef=1e-8,
                   descent_exp=2.1, max_backtracks=40):
    comp = ~np.asarray(problem.is_eq)
    return _newton(problem, mon, problem.M, np.asarray(problem.q, float), comp, linear_solver=linear_solver,
                   armijo=armijo, backtrack_factor=backtrack_factor, descent_coef=descent_coef,
                   descent_exp=descent_exp, max_backtracks=max_backtracks)


lcp_newton_fb.__doc__ = "Fischer–Burmeister semismooth Newton for the LCP (module docstring).\n" + _DOC_OPTS
mlcp_newton_fb.__doc__ = ("Fischer–Burmeister semismooth Newton for the MLCP; the free rows are the "
                          "equations w_i = 0 (module docstring).\n" + _DOC_OPTS)
