"""Relay problem with symmetric PSD M as a box-constrained QP (see ``formulations/relay.md``)."""

from __future__ import annotations

from .lcp import BoxQP, qp_doc


@qp_doc
class RelayAsQP(BoxQP):
    """Relay with symmetric PSD M as ``min 1/2 z^T M z + q^T z subject to lb <= z <= ub``.

    The relay ``w = Mz + q, -w in N_[lb,ub](z)``. KKT: ``Mz + q = lambda_lb - lambda_ub``,
    ``0 <= lambda_lb ⊥ z - lb >= 0``, ``0 <= lambda_ub ⊥ ub - z >= 0``: that is ``-w in N_[lb,ub](z)``.

    Parameters
    ----------
    problem : Relay
        The problem; its matrix must be symmetric positive semidefinite.
    {qp_options}
    >>> p = nsopt.Relay([[2.0, 1.0], [1.0, 2.0]], [-3.0, 3.0], [-1.0, -1.0], [1.0, 1.0])
    >>> s = nsopt.solve(p, method="qp", formulation=nsopt.formulations.RelayAsQP(p))
    >>> print(s.status.value, s.z.round(6))
    solved [ 1. -1.]
    """

    title = "Relay(M, q, lb, ub) with symmetric positive semidefinite M as a box-constrained QP"

    def __init__(self, problem, *, backend=None, backend_options=None, check=True):
        super().__init__(problem, problem.lb, problem.ub, backend=backend, backend_options=backend_options,
                         check=check)

    def statement(self):
        return self._statement(
            constraints={"text": "lb <= z (multiplier lambda_lb >= 0), z <= ub (lambda_ub >= 0)",
                         "latex": r"lb \le z \le ub\quad(\lambda_{lb}, \lambda_{ub} \ge 0)"},
            kkt={"text": ("stationarity w = Mz + q = lambda_lb - lambda_ub;\n"
                          "z_i strictly inside: both multipliers vanish, w_i = 0;\n"
                          "z_i = lb_i: w_i = lambda_lb,i >= 0;  z_i = ub_i: w_i = -lambda_ub,i <= 0;\n"
                          "these three cases are -w in N_[lb,ub](z): the relay problem."),
                 "latex": (r"Mz + q = \lambda_{lb} - \lambda_{ub},\ "
                           r"0 \le \lambda_{lb} \perp z - lb \ge 0,\ 0 \le \lambda_{ub} \perp ub - z \ge 0"
                           r"\iff -w \in N_{[lb,ub]}(z)")},
            when_fails=("M not symmetric or not PSD (NotApplicable). With PSD M and a bounded box the "
                        "QP always has a minimiser, so a relay problem with symmetric PSD M always "
                        "has a solution."),
        )
