"""LCP (and every box-constrained affine problem) with symmetric PSD M as a convex QP.

:class:`BoxQP` is the common program ``min 1/2 z^T M z + q^T z subject to lb <= z <= ub`` (infinite
bounds dropped); :class:`LCPasQP` is the case lb = 0, ub = +inf. See ``formulations/lcp.md``.
A sparse M stays sparse: ``quad_form(z, psd_wrap(S))`` with S in CSC and q a constant (no CVXPY
``Parameter``, which would make CVXPY 1.9 extract a dense n x n coefficient array).
"""

from __future__ import annotations

import time

import numpy as np

from .._doc import insert_section
from ._base import Formulation, quad_matrix, require_sym_psd, sym_part

#: The options, errors and examples' import the convex-QP formulations' docstrings share, put where
#: they say ``{qp_options}`` by :func:`qp_doc`.
QP_OPTIONS_DOC = """backend : str, optional
    The CVXPY backend (default ``"CLARABEL"``; ``"OSQP"``, ``"SCS"``, ... when installed).
backend_options : dict, optional
    Merged over nsopt's accurate defaults (:data:`ACCURATE`).
check : bool, optional
    Check symmetry and positive semidefiniteness first (default True).

Raises
------
NotApplicable
    When the matrix is not symmetric positive semidefinite (the message says which and by how much).
OptionError
    For a solver that is not installed or cannot solve the program.

Examples
--------
>>> import nsopt"""


def qp_doc(cls):
    """Class decorator: the ``{qp_options}`` line of ``cls``'s docstring replaced by :data:`QP_OPTIONS_DOC`."""
    cls.__doc__ = insert_section(cls.__doc__, "qp_options", QP_OPTIONS_DOC)
    return cls


@qp_doc
class BoxQP(Formulation):
    """``min 1/2 z^T S z + q^T z`` over the box ``lb <= z <= ub`` (S the symmetric part of M).

    Infinite bounds are dropped; :meth:`multipliers` gives the bounds' multipliers.

    Parameters
    ----------
    problem : Problem
        A box-affine problem with a matrix ``M`` and a vector ``q`` (LCP, MLCP, Relay); M must be
        symmetric positive semidefinite.
    lb, ub : float or array_like
        The bounds (broadcast to the problem's size; ``-inf``/``inf`` for none).
    {qp_options}
    >>> from nsopt.formulations import BoxQP
    >>> f = BoxQP(nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0]), 0.0, 1.0)
    >>> f
    BoxQP(LCP(n=2, dense), backend='CLARABEL')
    >>> _ = f.program.solve(solver=f.backend, **f.backend_options)
    >>> lo, up = f.multipliers()
    >>> print(f.z.value.round(6) + 0.0, lo.round(6) + 0.0, up.round(6) + 0.0)
    [1. 1.] [0. 0.] [2. 3.]
    """

    method = "qp"
    title = "Box-constrained convex QP"

    def __init__(self, problem, lb, ub, *, backend=None, backend_options=None, check=True):
        super().__init__(problem, backend=backend, backend_options=backend_options, conic=False)
        import cvxpy as cp

        if check:
            require_sym_psd(problem, type(self).__name__)
        t0 = time.perf_counter()
        n = problem.size
        self.lb = np.broadcast_to(np.asarray(lb, float), (n,)).copy()
        self.ub = np.broadcast_to(np.asarray(ub, float), (n,)).copy()
        self.S = sym_part(problem.M)
        il, iu = np.flatnonzero(np.isfinite(self.lb)), np.flatnonzero(np.isfinite(self.ub))
        self._il, self._iu = il, iu
        self.lower = self.upper = self.z = None
        if n == 0:
            self.program = self._empty_program()
            self.build_time = time.perf_counter() - t0
            return
        self.z = cp.Variable(n, name="z")
        obj = 0.5 * cp.quad_form(self.z, cp.psd_wrap(quad_matrix(self.S))) + np.asarray(problem.q, float) @ self.z
        cons = []
        if il.size:
            self.lower = self.z[il] >= self.lb[il] if il.size < n else self.z >= self.lb
            cons.append(self.lower)
        if iu.size:
            self.upper = self.z[iu] <= self.ub[iu] if iu.size < n else self.z <= self.ub
            cons.append(self.upper)
        self.program = cp.Problem(cp.Minimize(obj), cons)
        self.build_time = time.perf_counter() - t0

    def _statement(self, constraints, kkt, when_fails):
        """:meth:`statement` of a QP in z over R^n: the title, variables and objective, then the given
        constraints, KKT conditions and failure modes."""
        n = self.problem.size
        return {
            "title": self.title,
            "variables": {"text": f"z in R^{n}", "latex": rf"z \in \mathbb{{R}}^{{{n}}}"},
            "objective": {"text": "minimize 1/2 z^T M z + q^T z",
                          "latex": r"\min_z\ \tfrac12 z^\top M z + q^\top z"},
            "constraints": constraints,
            "kkt": kkt,
            "when_fails": when_fails,
        }

    def multipliers(self):
        """(lambda_lb, lambda_ub) as full-size vectors (zeros where a bound is infinite).

        Returns
        -------
        lambda_lb, lambda_ub : numpy.ndarray
            The multipliers of ``z >= lb`` and ``z <= ub`` after the program is solved (zeros
            before).
        """
        n = self.problem.size
        lo, up = np.zeros(n), np.zeros(n)
        if self.lower is not None and self.lower.dual_value is not None:
            lo[self._il] = self.lower.dual_value
        if self.upper is not None and self.upper.dual_value is not None:
            up[self._iu] = self.upper.dual_value
        return lo, up


@qp_doc
class LCPasQP(BoxQP):
    """LCP with symmetric PSD M as the QP ``min 1/2 z^T M z + q^T z subject to z >= 0``.

    KKT: ``Mz + q - lambda = 0``, ``0 <= lambda ⊥ z >= 0``: the multiplier of ``z >= 0`` is w
    (``formulations/lcp.md``).

    Parameters
    ----------
    problem : LCP
        The problem; its matrix must be symmetric positive semidefinite.
    {qp_options}
    >>> from nsopt.formulations import LCPasQP
    >>> p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-1.0, 1.0])
    >>> f = LCPasQP(p)
    >>> print(f.explain().splitlines()[0])
    LCP(M, q) with symmetric positive semidefinite M as a convex QP
    >>> s = nsopt.solve(p, method="qp", formulation=f)
    >>> print(s.z.round(8) + 0.0, f.program.constraints[0].dual_value.round(6) + 0.0)
    [0.5 0. ] [0.  1.5]
    """

    title = "LCP(M, q) with symmetric positive semidefinite M as a convex QP"

    def __init__(self, problem, *, backend=None, backend_options=None, check=True):
        super().__init__(problem, 0.0, np.inf, backend=backend, backend_options=backend_options, check=check)

    def statement(self):
        return self._statement(
            constraints={"text": "z >= 0   (multiplier lambda >= 0)",
                         "latex": r"z \ge 0 \quad (\lambda \ge 0)"},
            kkt={"text": ("stationarity  M z + q - lambda = 0, i.e. lambda = w = Mz + q;\n"
                          "feasibility z >= 0, dual feasibility w = lambda >= 0;\n"
                          "complementary slackness lambda_i z_i = 0, i.e. z ⊥ w: exactly the LCP.\n"
                          "M PSD makes the program convex, so KKT points = minimisers: any QP "
                          "solution solves the LCP and conversely."),
                 "latex": (r"Mz + q - \lambda = 0,\quad 0 \le z \perp \lambda \ge 0"
                           r"\iff w = Mz + q,\ 0 \le z \perp w \ge 0")},
            when_fails=("M not symmetric: the gradient of the objective is (M + M^T)/2 z + q, so the "
                        "KKT system is the LCP of the symmetric part, a different problem (nsopt "
                        "refuses with NotApplicable). M not PSD: the QP is nonconvex, a local solver "
                        "finds only stationary points. M PSD singular: the LCP may have no solution "
                        "(the QP is unbounded below) or a set of solutions (the QP returns one)."),
        )
