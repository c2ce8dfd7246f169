"""LCP (and every box-constrained affine problem) with symmetric PSD M as a convex QP.

:class:`BoxQP` is the common program ``min 1/2 z^T M z + q^T z  s.t.  lb <= z <= ub`` (infinite
bounds dropped); :class:`LCPasQP` is the case lb = 0, ub = +inf. See ``formulations/lcp.md``.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..problems._base import matvec
from ._base import _TOL_OPTS, Formulation, cached_sym_psd, quad_matrix, sym_part


def _solve_sym(S, rhs):
    """Solve S x = rhs for a symmetric PSD block (least squares when singular)."""
    if rhs.size == 0:
        return rhs.copy()
    if sp.issparse(S):
        from scipy.sparse.linalg import splu

        try:
            x = splu(sp.csc_matrix(S)).solve(rhs)
            if np.all(np.isfinite(x)) and np.linalg.norm(S @ x - rhs) <= 1e-12 * (1 + np.linalg.norm(rhs)):
                return x
        except RuntimeError:
            pass
        S = S.toarray()
    S = np.asarray(S)
    try:
        x = np.linalg.solve(S, rhs)
        if np.all(np.isfinite(x)) and np.linalg.norm(S @ x - rhs) <= 1e-12 * (1 + np.linalg.norm(rhs)):
            return x
    except np.linalg.LinAlgError:
        pass
    return np.linalg.lstsq(S, rhs, rcond=None)[0]   # singular (PSD) block: minimum-norm solution


def box_polish(M, q, lb, ub, z, error, rounds=3):
    """Active-set polish of an interior-point solution of a box-constrained QP / complementarity problem.

    Reads the active set off the natural map p = clip(z - w, lb, ub) (w = Mz + q): rows where p hits a
    bound are fixed there, the others are free and must have w = 0, so one linear solve
    M_FF z_F = -(q_F + M_FB z_B) gives the exact vertex of the identified face. Kept only when the
    problem's own error decreases. Returns (z, error, rounds used).
    """
    best_z, best_e = z, error(z)
    Mc = sp.csr_matrix(M) if sp.issparse(M) else np.asarray(M)
    used = 0
    for _ in range(rounds):
        w = matvec(Mc, best_z) + q
        p = np.clip(best_z - w, lb, ub)
        at_lb = p <= lb
        at_ub = (p >= ub) & ~at_lb
        F = ~(at_lb | at_ub)
        zn = np.where(at_lb, lb, np.where(at_ub, ub, 0.0))
        zn = np.where(np.isfinite(zn), zn, 0.0)
        if F.any():
            Fi = np.flatnonzero(F)
            B = np.flatnonzero(~F)
            MFF = Mc[Fi][:, Fi]
            rhs = -(q[Fi] + (matvec(Mc[Fi][:, B], zn[B]) if B.size else 0.0))
            zn[Fi] = _solve_sym(MFF, rhs)
        used += 1
        e = error(zn)
        if not e < best_e:
            break
        best_z, best_e = zn, e
        if e == 0.0:
            break
    return best_z, best_e, used


class BoxQP(Formulation):
    """``min 1/2 z^T S z + q^T z`` over the box ``lb <= z <= ub`` (S the symmetric part of M)."""

    method = "qp"
    title = "Box-constrained convex QP"

    def __init__(self, problem, lb, ub, *, solver=None, solver_options=None, check=True):
        super().__init__(problem, solver=solver, solver_options=solver_options, conic=False)
        import cvxpy as cp

        if check:
            why = cached_sym_psd(problem)
            if why:
                from ..exceptions import NotApplicable

                raise NotApplicable(f"{type(self).__name__}: {why}")
        t0 = time.perf_counter()
        n = problem.size
        self.lb = np.broadcast_to(np.asarray(lb, float), (n,)).copy()
        self.ub = np.broadcast_to(np.asarray(ub, float), (n,)).copy()
        self.S = sym_part(problem.M)
        self.z = cp.Variable(n, name="z")
        self.q = cp.Parameter(n, name="q", value=np.asarray(problem.q, float))
        obj = 0.5 * cp.quad_form(self.z, cp.psd_wrap(quad_matrix(self.S))) + self.q @ self.z
        cons = []
        il, iu = np.flatnonzero(np.isfinite(self.lb)), np.flatnonzero(np.isfinite(self.ub))
        self.lower = self.upper = None
        if il.size:
            self.lower = self.z[il] >= self.lb[il] if il.size < n else self.z >= self.lb
            cons.append(self.lower)
        if iu.size:
            self.upper = self.z[iu] <= self.ub[iu] if iu.size < n else self.z <= self.ub
            cons.append(self.upper)
        self._il, self._iu = il, iu
        self.program = cp.Problem(cp.Minimize(obj), cons)
        self.timings["build"] = time.perf_counter() - t0

    def multipliers(self):
        """(lambda_lb, lambda_ub) as full-size vectors (zeros where a bound is infinite)."""
        n = self.problem.size
        lo, up = np.zeros(n), np.zeros(n)
        if self.lower is not None and self.lower.dual_value is not None:
            lo[self._il] = self.lower.dual_value
        if self.upper is not None and self.upper.dual_value is not None:
            up[self._iu] = self.upper.dual_value
        return lo, up

    def run(self, *, polish=True, history=False, callback=None, tol=1e-8):
        """Solve the QP (and polish); returns (z, status message, solver iterations).

        When the result misses ``tol`` (degenerate, rank-deficient M: Clarabel may stop
        "optimal_inaccurate"), the QP is solved once more with a stronger static regularisation
        (Clarabel) or the solver's default tolerances, and the better point is kept."""
        z, status, it = self._run_once(polish, callback)
        e = self.problem.error(z) if z is not None else np.inf
        if e > tol:
            retry = dict(self.solver_options)
            if self.solver == "CLARABEL":
                retry["static_regularization_constant"] = 1e-7
            else:
                for k in _TOL_OPTS:
                    retry.pop(k, None)
            z2, status2, it2 = self._run_once(polish, None, retry)
            e2 = self.problem.error(z2) if z2 is not None else np.inf
            if e2 < e:
                return z2, f"{status2} (second solve, regularised)", it + it2
        return z, status, it

    def _run_once(self, polish, callback, opts=None):
        status, wall, inside = self._solve_program(opts)
        z = self.z.value
        it = int(getattr(self.program.solver_stats, "num_iters", 0) or 0)
        if z is None:
            self.history.append({"stage": "qp", "status": status, "error": float("inf")})
            return None, status, it
        z = np.asarray(z, float).reshape(-1)
        e = self.problem.error(z)
        self.history.append({"stage": "qp", "status": status, "error": e, "solver_time": inside,
                             "wall": wall, "solver_iterations": it})
        if callback is not None:
            callback(0, {"z": z}, e)
        if polish and e > 0:
            t0 = time.perf_counter()
            z2, e2, used = box_polish(self.problem.M, np.asarray(self.problem.q), self.lb, self.ub, z,
                                      self.problem.error)
            self.timings["polish"] = time.perf_counter() - t0
            self.history.append({"stage": "polish", "error": e2, "rounds": used})
            if e2 < e:
                z = z2
        return z, status, it


class LCPasQP(BoxQP):
    r"""LCP with symmetric PSD M as the QP ``min 1/2 z^T M z + q^T z  s.t.  z >= 0``.

    KKT: ``Mz + q - lambda = 0``, ``0 <= lambda ⊥ z >= 0``: the multiplier of ``z >= 0`` is w.
    """

    title = "LCP(M, q) with symmetric positive semidefinite M as a convex QP"

    def __init__(self, problem, *, solver=None, solver_options=None, check=True):
        super().__init__(problem, 0.0, np.inf, solver=solver, solver_options=solver_options, check=check)

    def statement(self):
        return {
            "title": self.title,
            "variables": {"text": f"z in R^{self.problem.size}",
                          "latex": rf"z \in \mathbb{{R}}^{{{self.problem.size}}}"},
            "objective": {"text": "minimize 1/2 z^T M z + q^T z",
                          "latex": r"\min_z\ \tfrac12 z^\top M z + q^\top z"},
            "constraints": {"text": "z >= 0   (multiplier lambda >= 0)",
                            "latex": r"z \ge 0 \quad (\lambda \ge 0)"},
            "kkt": {"text": ("stationarity  M z + q - lambda = 0, i.e. lambda = w = Mz + q;\n"
                             "feasibility z >= 0, dual feasibility w = lambda >= 0;\n"
                             "complementary slackness lambda_i z_i = 0, i.e. z ⊥ w: exactly the LCP.\n"
                             "M PSD makes the program convex, so KKT points = minimisers: any QP "
                             "solution solves the LCP and conversely."),
                    "latex": (r"Mz + q - \lambda = 0,\quad 0 \le z \perp \lambda \ge 0"
                              r"\iff w = Mz + q,\ 0 \le z \perp w \ge 0")},
            "when_fails": ("M not symmetric: the gradient of the objective is (M + M^T)/2 z + q, so the "
                           "KKT system is the LCP of the symmetric part, a different problem (nsopt "
                           "refuses with NotApplicable). M not PSD: the QP is nonconvex, a local solver "
                           "finds only stationary points. M PSD singular: the LCP may have no solution "
                           "(the QP is unbounded below) or a set of solutions (the QP returns one)."),
        }
