"""Global friction contact in primal form (see ``formulations/gfc3d.md``).

For fixed s (one per contact), with Siconos' signs ``M v = q + H r``, ``u = H^T v + b``:

    min_v 1/2 v^T M v - q^T v   s.t.   (H^T v + b + s~)_a in K*_{mu_a}  (the dual cone, per contact)

Lagrangian ``1/2 v'Mv - q'v - r'(H'v + b + s~)`` with r in K (the dual of K*): stationarity is
``Mv - q - Hr = 0``, and ``K ∋ r ⊥ u + s~ ∈ K*``; with s = mu ||u_T|| it is Coulomb's law. The
reactions are the multipliers of the cone constraint: with the constraint written as
``SOC(t = u_N + s, X = mu_a u_T)`` and CVXPY's multiplier (lambda_0, lambda_X), r_N = lambda_0 and
r_T = mu_a lambda_X. M is never inverted (a sparse M stays sparse in the quadratic form).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..exceptions import NotApplicable
from ..result import Status
from ._base import Formulation, cached_sym_psd, quad_matrix
from .fc import DEFAULT_MAX_ITER, POLISH_STEPS, fixed_point


class GFCPrimalSOCP(Formulation):
    """Primal SOCP over the global velocity v with the fixed point on s = mu ||u_T||."""

    method = "socp-fp"

    def __init__(self, problem, *, solver=None, solver_options=None, check=True, inexact=False):
        super().__init__(problem, solver=solver, solver_options=solver_options, conic=True)
        import cvxpy as cp

        if check:
            why = cached_sym_psd(problem, key="convex:sym_psd_M")
            if why:
                raise NotApplicable(f"GFCPrimalSOCP needs a symmetric PSD mass matrix: {why}")
        t0 = time.perf_counter()
        self.user_options = dict(solver_options or {})
        self.inexact = bool(inexact)
        p = problem
        dim, nc = p.dim, p.nc
        mu = np.asarray(p.mu, float)
        Ht = sp.csr_matrix(p.H.T) if sp.issparse(p.H) else sp.csr_matrix(np.asarray(p.H).T)
        b = np.asarray(p.b, float)
        self.HtN = Ht[0::dim]
        rows_T = np.array([a * dim + j for a in range(nc) for j in range(1, dim)], dtype=np.int64)
        scaleT = np.repeat(mu, dim - 1)
        self.HtT = sp.diags(scaleT) @ Ht[rows_T] if rows_T.size else Ht[rows_T]
        self.bN, self.bT = b[0::dim], scaleT * b[rows_T]
        self.v = cp.Variable(p.ndof, name="v")
        self.s = cp.Parameter(nc, name="s", nonneg=True, value=np.zeros(nc))
        t = self.HtN @ self.v + self.bN + self.s
        X = cp.reshape(self.HtT @ self.v + self.bT, (nc, dim - 1), order="C")
        self.cone = cp.SOC(t, X, axis=1)
        M = sp.csc_matrix(p.M) if sp.issparse(p.M) else quad_matrix(p.M)
        obj = 0.5 * cp.quad_form(self.v, cp.psd_wrap(M)) - np.asarray(p.q, float) @ self.v
        self.program = cp.Problem(cp.Minimize(obj), [self.cone])
        self.mu = mu
        self.timings["build"] = time.perf_counter() - t0

    _opts = None  # set below (shared with the local formulations)

    def reactions(self):
        """r from the cone multipliers: r_N = lambda_0, r_T = mu lambda_X."""
        dv = self.cone.dual_value
        if dv is None:
            return None
        lam0, lamX = dv
        nc, dim = self.problem.nc, self.problem.dim
        R = np.zeros((nc, dim))
        R[:, 0] = np.asarray(lam0).reshape(-1)
        R[:, 1:] = self.mu[:, None] * np.asarray(lamX).reshape(nc, dim - 1)
        return R.reshape(-1)

    def image(self, s):
        self.s.value = np.maximum(s, 0.0)
        status, wall, inside = self._solve_program(self._opts())
        info = {"status": status, "wall": wall, "solver_time": inside,
                "solver_iterations": int(getattr(self.program.solver_stats, "num_iters", 0) or 0)}
        if self.v.value is None:
            return s, None, info
        v = np.asarray(self.v.value, float).copy()
        r = self.reactions()
        if r is None:
            return s, None, info
        u = self.problem.u(v)
        U = u.reshape(self.problem.nc, self.problem.dim)
        g = self.mu * np.sqrt(np.sum(U[:, 1:] ** 2, axis=1))
        return g, {"r": r, "v": v}, info

    def run(self, *, tol=1e-8, max_iter=None, anderson=5, r0=None, callback=None, polish=True,
            polish_at=1e-6, time_limit=None):
        p = self.problem
        max_iter = DEFAULT_MAX_ITER if max_iter is None else max_iter
        self.history.clear()
        if r0 is not None:
            U = p.u(p.v(np.asarray(r0, float))).reshape(p.nc, p.dim)
            s0 = self.mu * np.sqrt(np.sum(U[:, 1:] ** 2, axis=1))
        else:
            s0 = np.zeros(p.nc)
        if max_iter == 0:
            r = np.zeros(p.size) if r0 is None else np.asarray(r0, float)
            return {"r": r, "v": p.v(r)}, p.error(r), Status.MAX_ITER, 0, "max_iter = 0"
        def polisher(sol):
            from ._polish import polish_global

            r, v, e, steps, _ = polish_global(p, sol["r"], sol["v"], tol=tol, max_steps=POLISH_STEPS)
            return {"r": r, "v": v}, e, steps

        return fixed_point(self, self.image, s0, lambda sol: p.error(sol["r"], sol["v"]), tol=tol,
                           max_iter=max_iter, anderson=anderson, callback=callback,
                           polish=polisher if polish else None, polish_at=polish_at,
                           time_limit=time_limit)

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
                                     "contact (one vectorised SOC; s a CVXPY Parameter); multiplier r_a in K_mu_a"),
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


def _gfc_opts(self):
    from .fc import _FCBase

    return _FCBase._opts(self)


GFCPrimalSOCP._opts = _gfc_opts
