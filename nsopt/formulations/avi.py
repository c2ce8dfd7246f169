"""AVI over a polyhedron with symmetric PSD M as a QP (see ``formulations/avi.md``)."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..exceptions import NotApplicable
from ..problems._base import dense
from ._base import Formulation, cached_sym_psd, quad_matrix, sym_part


class AVIasQP(Formulation):
    r"""AVI ``find z in K = {Hz >= k}: (Mz + q)^T (y - z) >= 0 for all y in K`` with symmetric PSD M as
    ``min 1/2 z^T M z + q^T z  s.t.  Hz >= k``.

    KKT: ``Mz + q = H^T lambda``, ``0 <= lambda ⊥ Hz - k >= 0``: then for y in K,
    ``(Mz+q)^T (y - z) = lambda^T (Hy - Hz) = lambda^T (Hy - k) >= 0``.
    """

    method = "qp"
    title = "AVI(M, q, K = {z : Hz >= k}) with symmetric positive semidefinite M as a QP over K"

    def __init__(self, problem, *, solver=None, solver_options=None, check=True):
        super().__init__(problem, solver=solver, solver_options=solver_options, conic=False)
        import cvxpy as cp

        if check:
            why = cached_sym_psd(problem)
            if why:
                raise NotApplicable(f"AVIasQP: {why}")
        t0 = time.perf_counter()
        n = problem.size
        self.S = sym_part(problem.M)
        self.z = cp.Variable(n, name="z")
        self.q = cp.Parameter(n, name="q", value=np.asarray(problem.q, float))
        H = sp.csr_matrix(problem.H) if sp.issparse(problem.H) else np.asarray(problem.H)
        self.poly = H @ self.z >= np.asarray(problem.k)
        obj = 0.5 * cp.quad_form(self.z, cp.psd_wrap(quad_matrix(self.S))) + self.q @ self.z
        self.program = cp.Problem(cp.Minimize(obj), [self.poly] if problem.H.shape[0] else [])
        self.timings["build"] = time.perf_counter() - t0

    def polish(self, z, lam):
        """Equality-constrained QP on the identified active set (kept if the AVI error drops)."""
        p = self.problem
        H, k = dense(p.H), np.asarray(p.k)
        S, q = dense(self.S), np.asarray(p.q)
        act = np.flatnonzero(lam > (H @ z - k)) if lam is not None else np.flatnonzero(H @ z - k < 1e-9)
        n, m = len(q), len(act)
        K = np.block([[S, -H[act].T], [H[act], np.zeros((m, m))]])
        rhs = np.concatenate([-q, k[act]])
        sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
        return sol[:n]

    def run(self, *, polish=True, history=False, callback=None):
        status, wall, inside = self._solve_program()
        it = int(getattr(self.program.solver_stats, "num_iters", 0) or 0)
        if self.z.value is None:
            self.history.append({"stage": "qp", "status": status, "error": float("inf")})
            return None, status, it
        z = np.asarray(self.z.value, float)
        e = self.problem.error(z)
        self.history.append({"stage": "qp", "status": status, "error": e, "solver_time": inside,
                             "wall": wall, "solver_iterations": it})
        if callback is not None:
            callback(0, {"z": z}, e)
        if polish and e > 0 and self.problem.H.shape[0]:
            lam = self.poly.dual_value
            z2 = self.polish(z, None if lam is None else np.asarray(lam).reshape(-1))
            e2 = self.problem.error(z2)
            self.history.append({"stage": "polish", "error": e2})
            if e2 < e:
                z = z2
        return z, status, it

    def statement(self):
        p = self.problem
        return {
            "title": self.title,
            "variables": {"text": f"z in R^{p.size}", "latex": rf"z \in \mathbb{{R}}^{{{p.size}}}"},
            "objective": {"text": "minimize 1/2 z^T M z + q^T z",
                          "latex": r"\min_z\ \tfrac12 z^\top M z + q^\top z"},
            "constraints": {"text": f"H z >= k ({p.H.shape[0]} rows, multiplier lambda >= 0)",
                            "latex": r"Hz \ge k\quad(\lambda \ge 0)"},
            "kkt": {"text": ("stationarity M z + q = H^T lambda, 0 <= lambda ⊥ Hz - k >= 0;\n"
                             "for any y in K: (Mz + q)^T (y - z) = lambda^T (Hy - k) - lambda^T (Hz - k)"
                             " = lambda^T (Hy - k) >= 0, the AVI; conversely a solution of the AVI "
                             "minimises the convex objective over K (first-order condition), and "
                             "linear constraints need no constraint qualification."),
                    "latex": (r"Mz + q = H^\top \lambda,\ 0 \le \lambda \perp Hz - k \ge 0 \Rightarrow "
                              r"(Mz+q)^\top(y - z) = \lambda^\top(Hy - k) \ge 0\ \forall y \in K")},
            "when_fails": ("M not symmetric: the VI is not the optimality condition of any objective "
                           "(its Jacobian would have to be symmetric); M not PSD: nonconvex QP. "
                           "Empty K: the QP is infeasible and so is the AVI."),
        }
