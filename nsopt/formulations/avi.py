"""AVI over a polyhedron with symmetric PSD M as a QP (see ``formulations/avi.md``)."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ._base import Formulation, quad_matrix, require_sym_psd, sym_part
from .lcp import qp_doc


@qp_doc
class AVIasQP(Formulation):
    """AVI with symmetric PSD M as ``min 1/2 z^T M z + q^T z subject to Hz >= k``.

    The AVI: find z in K = {Hz >= k} with ``(Mz + q)^T (y - z) >= 0`` for all y in K. KKT:
    ``Mz + q = H^T lambda``, ``0 <= lambda ⊥ Hz - k >= 0``: then for y in K,
    ``(Mz+q)^T (y - z) = lambda^T (Hy - Hz) = lambda^T (Hy - k) >= 0``.

    Parameters
    ----------
    problem : AVI
        The problem; its matrix must be symmetric positive semidefinite.
    {qp_options}
    >>> p = nsopt.AVI([[1.0, 0.0], [0.0, 1.0]], [-2.0, -1.0], [[-1.0, -1.0]], [-1.0])
    >>> s = nsopt.solve(p, method="qp", formulation=nsopt.formulations.AVIasQP(p))
    >>> print(s.status.value, s.z.round(6) + 0.0)
    solved [1. 0.]
    """

    method = "qp"
    title = "AVI(M, q, K = {z : Hz >= k}) with symmetric positive semidefinite M as a QP over K"

    def __init__(self, problem, *, backend=None, backend_options=None, check=True):
        super().__init__(problem, backend=backend, backend_options=backend_options, conic=False)
        import cvxpy as cp

        if check:
            require_sym_psd(problem, "AVIasQP")
        t0 = time.perf_counter()
        n = problem.size
        self.S = sym_part(problem.M)
        self.z = self.poly = None
        if n == 0:
            self.program = self._empty_program()
            self.build_time = time.perf_counter() - t0
            return
        self.z = cp.Variable(n, name="z")
        H = sp.csr_matrix(problem.H) if sp.issparse(problem.H) else np.asarray(problem.H)
        obj = 0.5 * cp.quad_form(self.z, cp.psd_wrap(quad_matrix(self.S))) + np.asarray(problem.q, float) @ self.z
        cons = []
        if problem.H.shape[0]:
            self.poly = H @ self.z >= np.asarray(problem.k)
            cons.append(self.poly)
        self.program = cp.Problem(cp.Minimize(obj), cons)
        self.build_time = time.perf_counter() - t0

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
