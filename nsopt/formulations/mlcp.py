"""MLCP with symmetric PSD M as a QP with free variables (see ``formulations/mlcp.md``)."""

from __future__ import annotations

import numpy as np

from .lcp import BoxQP, qp_doc


@qp_doc
class MLCPasQP(BoxQP):
    """MLCP with symmetric PSD M as ``min 1/2 z^T M z + q^T z subject to z_comp >= 0``.

    In Siconos' single-matrix form (z = [u; v], the rows of ``is_eq`` are equalities and their
    variables free). KKT: ``Mz + q = lambda`` with lambda = 0 on the free rows (so ``Au + Cv + a = 0``)
    and ``0 <= lambda ⊥ v >= 0`` on the others (so ``w = Du + Bv + b`` is complementary to v).

    Parameters
    ----------
    problem : MLCP
        The problem; its matrix must be symmetric positive semidefinite.
    {qp_options}
    >>> p = nsopt.MLCP.from_matrix([[2.0, 1.0], [1.0, 2.0]], [-2.0, -3.0], n=1)
    >>> s = nsopt.solve(p, method="qp", formulation=nsopt.formulations.MLCPasQP(p))
    >>> print(s.status.value, s.z.round(6))
    solved [0.333333 1.333333]
    """

    title = "MLCP with symmetric positive semidefinite M as a convex QP with free variables"

    def __init__(self, problem, *, backend=None, backend_options=None, check=True):
        lb = np.where(problem.is_eq, -np.inf, 0.0)
        super().__init__(problem, lb, np.inf, backend=backend, backend_options=backend_options, check=check)

    def statement(self):
        p = self.problem
        return {
            "title": self.title,
            "variables": {"text": f"z = (u, v): {p.n} free u, {p.m} sign-constrained v",
                          "latex": rf"u \in \mathbb{{R}}^{{{p.n}}},\ v \in \mathbb{{R}}^{{{p.m}}}"},
            "objective": {"text": "minimize 1/2 z^T M z + q^T z, M = [[A, C], [D, B]], q = [a; b]",
                          "latex": r"\min_{u,v}\ \tfrac12 z^\top M z + q^\top z,\ z = (u, v)"},
            "constraints": {"text": "v >= 0 (multiplier lambda >= 0); u free",
                            "latex": r"v \ge 0\quad(\lambda \ge 0)"},
            "kkt": {"text": ("gradient w.r.t. the free u: A u + C v + a = 0 (the equality rows);\n"
                             "gradient w.r.t. v: D u + B v + b - lambda = 0, so lambda = w;\n"
                             "0 <= v ⊥ lambda >= 0 is 0 <= v ⊥ w >= 0: exactly the MLCP "
                             "(symmetry gives C = D^T, so both gradients come from one objective)."),
                    "latex": (r"Au + Cv + a = 0,\ Du + Bv + b = \lambda,\ "
                              r"0 \le v \perp \lambda \ge 0")},
            "when_fails": ("M = [[A, C], [D, B]] must be symmetric (C = D^T, A, B symmetric) and PSD; "
                           "circuit MLCPs (diodes, converters) usually are not, and nsopt refuses them "
                           "(NotApplicable) so that `auto` moves on to enumeration / Lemke / Newton."),
        }
