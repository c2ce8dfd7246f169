"""Global friction contact in primal form (see ``formulations/gfc3d.md``).

For fixed s (one per contact), with Siconos' signs ``M v = q + H r``, ``u = H^T v + b``:

    min_v 1/2 v^T M v - q^T v   s.t.   (H^T v + b + s~)_a in K*_{mu_a}  (the dual cone, per contact)

Lagrangian ``1/2 v'Mv - q'v - r'(H'v + b + s~)`` with r in K (the dual of K*): stationarity is
``Mv - q - Hr = 0``, and ``K ∋ r ⊥ u + s~ ∈ K*``; with s = mu ||u_T|| it is Coulomb's law. The
reactions are the multipliers of the cone constraint: with the constraint written as
``SOC(t = u_N + s, X = mu_a u_T)`` and CVXPY's multiplier (lambda_0, lambda_X), r_N = lambda_0 and
r_T = mu_a lambda_X. M is never inverted (a sparse M stays sparse in the quadratic form).

This class only builds the program (s a constant of it); the fixed point on s is
``nsopt/solvers/socp_fp.py``.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ._base import Formulation, quad_matrix, require_sym_psd


class GFCPrimalSOCP(Formulation):
    """Primal SOCP over the global velocity v with the fixed point on s = mu ||u_T||.

    ``min_v 1/2 v^T M v - q^T v`` subject to ``(H^T v + b + s~)_a in K*_{mu_a}`` per contact; the
    multipliers of the cone constraints are the reactions (``formulations/gfc3d.md``). No inverse of M.

    Parameters
    ----------
    problem : GlobalFrictionContact
    backend, backend_options, check
        As :class:`LCPasQP`.
    s : (nc,) array_like, optional
        The frozen shift (default 0).

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> p = nsopt.GlobalFrictionContact(np.eye(3), np.eye(3), np.zeros(3), [-1.0, 1.0, 0.0], [0.5])
    >>> s = nsopt.solve(p, method="socp-fp", formulation=nsopt.formulations.GFCPrimalSOCP(p), tol=1e-10)
    >>> print(s.status.value, s.v.round(6) + 0.0)
    solved [ 1.  -0.5  0. ]
    """

    method = "socp-fp"

    linear_var = None    # the fixed point changes only the cones' heads

    def __init__(self, problem, *, backend=None, backend_options=None, check=True, s=None):
        super().__init__(problem, backend=backend, backend_options=backend_options, conic=True)
        if check:
            require_sym_psd(problem, "GFCPrimalSOCP needs a symmetric PSD mass matrix")
        t0 = time.perf_counter()
        p = problem
        dim, nc = p.dim, p.nc
        mu = np.asarray(p.mu, float)
        Ht = sp.csr_matrix(p.H.T) if sp.issparse(p.H) else sp.csr_matrix(np.asarray(p.H).T)
        b = np.asarray(p.b, float)
        self.HtN = Ht[0::dim]
        rows_T = (np.arange(nc, dtype=np.int64)[:, None] * dim + np.arange(1, dim)).reshape(-1)
        scaleT = np.repeat(mu, dim - 1)
        self.HtT = sp.diags(scaleT) @ Ht[rows_T] if rows_T.size else Ht[rows_T]
        self.bN, self.bT = b[0::dim], scaleT * b[rows_T]
        self.mu = mu
        self.v = self.cone = self.head_constraint = None
        self.build(self.bN + (np.zeros(nc) if s is None else np.maximum(np.asarray(s, float), 0.0)))
        self.build_time = time.perf_counter() - t0

    def build(self, head):
        """(Re)build the program with the cones' constant heads ``head = b_N + s`` (one per contact)."""
        import cvxpy as cp

        p = self.problem
        nc, dim = p.nc, p.dim
        self.head = np.asarray(head, float).copy()
        if p.ndof == 0 or nc == 0:
            self.v = cp.Variable(p.ndof, name="v") if p.ndof else None
            self.program = self._empty_program() if self.v is None else cp.Problem(
                cp.Minimize(0.5 * cp.quad_form(self.v, cp.psd_wrap(quad_matrix(p.M)))
                            - np.asarray(p.q, float) @ self.v))
            return self.program
        self.v = cp.Variable(p.ndof, name="v")
        t = self.HtN @ self.v + self.head
        X = cp.reshape(self.HtT @ self.v + self.bT, (nc, dim - 1), order="C")
        self.cone = self.head_constraint = cp.SOC(t, X, axis=1)
        M = sp.csc_matrix(p.M) if sp.issparse(p.M) else quad_matrix(p.M)
        obj = 0.5 * cp.quad_form(self.v, cp.psd_wrap(M)) - np.asarray(p.q, float) @ self.v
        self.program = cp.Problem(cp.Minimize(obj), [self.cone])
        return self.program

    def reactions(self, duals=None):
        """r from the cone multipliers: r_N = lambda_0, r_T = mu lambda_X (``duals``: the pair
        (lambda_0, lambda_X); default the cone constraint's ``dual_value``)."""
        dv = self.cone.dual_value if duals is None else duals
        if dv is None:
            return None
        lam0, lamX = dv
        nc, dim = self.problem.nc, self.problem.dim
        R = np.zeros((nc, dim))
        R[:, 0] = np.asarray(lam0).reshape(-1)
        R[:, 1:] = self.mu[:, None] * np.asarray(lamX).reshape(nc, dim - 1)
        return R.reshape(-1)

    def statement(self):
        p = self.problem
        return {
            "title": (f"GFC{p.dim}D ({p.nc} contacts, {p.ndof} dofs) in primal form: an SOCP over the "
                      "velocities, fixed point on s = mu ||u_T||"),
            "variables": {"text": f"v in R^{p.ndof} (global velocities)",
                          "latex": rf"v \in \mathbb{{R}}^{{{p.ndof}}}"},
            "objective": {"text": "minimize 1/2 v^T M v - q^T v (M never inverted)",
                          "latex": r"\min_v\ \tfrac12 v^\top M v - q^\top v"},
            "constraints": {"text": ("u~_a = (H^T v + b)_a + (s_a, 0) in K*_mu_a = {mu_a ||u~_T|| <= u~_N} for every "
                                     "contact (one vectorised SOC; s a constant of the compiled program, updated in place); multiplier r_a in K_mu_a"),
                            "latex": r"(H^\top v + b + \tilde s)_a \in K^*_{\mu_a}\quad (r_a \in K_{\mu_a})"},
            "kkt": {"text": ("Lagrangian 1/2 v'Mv - q'v - r'(H'v + b + s~): stationarity M v = q + H r (Siconos' "
                             "equation of motion), K ∋ r ⊥ u + s~ ∈ K*; at s = mu ||u_T(v)|| this is De "
                             "Saxcé's form of Coulomb's law, so a fixed point solves the GFC problem. The "
                             "reactions are the cone multipliers: r_N = lambda_0, r_T = mu lambda_X for "
                             "CVXPY's SOC(t, X) with t = u~_N, X = mu u~_T."),
                    "latex": (r"Mv = q + Hr,\ K \ni r \perp H^\top v + b + \tilde s \in K^*,\ "
                              r"\tilde s = \mu\|u_T\| \Rightarrow \text{Coulomb}")},
            "when_fails": ("M must be symmetric PSD (mass matrices are SPD); M singular with a load q outside "
                           "the range allowed by the contacts makes the SOCP unbounded. The fixed point on "
                           "s may stall or cycle (reported). Redundant contacts (H rank deficient) leave r "
                           "non-unique: the solver returns one multiplier."),
        }

