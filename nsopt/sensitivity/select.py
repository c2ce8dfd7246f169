r"""Which solution: ``nsopt.solve(..., select=...)`` and :func:`select`.

Rules (:data:`SELECT_RULES`):

``"min-norm"``
    Among the solutions, the one of least Euclidean norm of the primal variable (z, or r). Where the
    problem has a convex view with a symmetric positive semidefinite matrix S = L Lᵀ (an LCP, MLCP,
    Relay, AVI or GenericMechanical with symmetric PSD M; a friction problem with symmetric PSD W,
    at the fixed De Saxcé shift :math:`\tilde s = \mu\|\bar u_T\|` of the given solution; a global one
    through its local W = HᵀM⁻¹H), the solutions x̄ of that program form the convex set

    .. math::  \{x \in C : L^\top x = L^\top \bar x,\ c^\top x \le c^\top \bar x\}

    (all minimisers of a convex quadratic share Sx and cᵀx; C the laws' cone or box, c the linear
    term), which nsopt minimises ||x|| over by CVXPY (Clarabel), then polishes on the face the answer
    lies on (a least-norm solve of the same equations restricted to it). Every point of that set has
    the same y = Mx + q (the same u), so for friction it is a solution of Coulomb's law with the same
    local velocities; it is the least-norm one among those, not among Coulomb solutions with other
    velocities (the Coulomb solution set need not be convex). An Equality problem: the
    pseudo-inverse solution. Elsewhere (a nonsymmetric or indefinite matrix, MultipleImpact) there is
    no such guarantee: the solution is returned as the method gave it, and ``Solution.info["select"]``
    says why.
"""

from __future__ import annotations

import dataclasses
import time
import warnings

import numpy as np
import scipy.sparse as sp

from ..exceptions import OptionError
from ..problems._base import matvec
from ._kinds import model_of
from ._laws import TOL_DEGENERATE

SELECT_RULES = {"min-norm": "the solution of least norm of the primal variable (z or r), through the convex view"}
RANK_DENSE_MAX = 5000      # S = L L^T by a dense eigendecomposition up to this size (else Sx = S x̄ itself)


def check_select(select):
    if select is None or select in SELECT_RULES:
        return select
    raise OptionError(f"select must be None or one of {list(SELECT_RULES)}, got {select!r}")


def select(solution, rule: str = "min-norm"):
    """The solution chosen by ``rule`` among the solutions of ``solution.problem`` (see the module
    docstring); what ``nsopt.solve(..., select=rule)`` calls after the method.

    Parameters
    ----------
    solution : nsopt.Solution
        A solution (its ``problem`` is the problem).
    rule : str, default "min-norm"
        One of :data:`SELECT_RULES`.

    Returns
    -------
    nsopt.Solution
        A new solution, its error recomputed; ``info["select"]`` says what was done (``rule``,
        ``guaranteed``, ``how`` or ``why`` not, ``time``).

    Raises
    ------
    OptionError
        When ``rule`` is not one of :data:`SELECT_RULES`.

    Examples
    --------
    >>> import nsopt
    >>> p = nsopt.LCP([[1.0, 1.0], [1.0, 1.0]], [-1.0, -1.0])     # z1 + z2 = 1, z >= 0
    >>> s = nsopt.solve(p, method="lemke", select="min-norm")
    >>> s.z.round(6), s.info["select"]["guaranteed"]
    (array([0.5, 0.5]), True)
    """
    check_select(rule)
    problem = solution.problem
    t0 = time.perf_counter()
    why = _not_applicable(problem, solution)
    if why:
        return _with(solution, None, {"rule": rule, "guaranteed": False, "why": why}, t0)
    try:
        x, how = _min_norm(problem, solution)
    except _Failed as e:
        return _with(solution, None, {"rule": rule, "guaranteed": False, "why": str(e)}, t0)
    return _with(solution, x, {"rule": rule, "guaranteed": True, "how": how}, t0)


class _Failed(Exception):
    pass


def _matrix_of(problem):
    if problem.kind in ("fc2d", "fc3d"):
        return problem.W
    if problem.kind in ("gfc2d", "gfc3d"):
        return problem.local().W
    return getattr(problem, "M", None)


def _not_applicable(problem, solution):
    from ..formulations._base import PSD_TOL_W, check_symmetric_psd

    if not solution.success:
        return f"the solution was not solved to its tolerance (status {solution.status.value}): nothing to select from"
    if problem.kind == "multiple-impact":
        return ("a multiple impact's outcome is set by the LZB process itself (no convex view of its solution "
                "set): the solution is the method's")
    if problem.kind == "equality":
        return None
    M = _matrix_of(problem)
    tol = PSD_TOL_W if problem.kind in ("fc2d", "fc3d", "gfc2d", "gfc3d") else 1e-10
    name = "W" if problem.kind in ("fc2d", "fc3d") else "W = H^T M^-1 H" if problem.kind.startswith("gfc") else "M"
    why = problem.cached(f"select:psd:{tol:g}", lambda: check_symmetric_psd(M, psd_tol=tol, name=name), on=None)
    if why:
        why = why.split("; the QP")[0]        # (the rest of the reason speaks of an LCP's QP)
        return f"no convex view of the solution set ({why}): no least-norm guarantee, the method's solution is kept"
    return None


def _with(solution, x, info, t0):
    """A copy of ``solution`` with the primal variable ``x`` (None: unchanged) and info["select"]."""
    p = solution.problem
    info = dict(info, time=time.perf_counter() - t0)
    sel_info = {**solution.info, "select": info}
    if x is None:
        msg = solution.message + f"; select={info['rule']!r}: not guaranteed ({info['why']})"
        return dataclasses.replace(solution, info=sel_info, message=msg)
    xs = p.complete({p.primal: x})
    err = float(p.error_of(xs))
    from ..result import judged

    status = judged(solution.status, err, solution.tol)
    info["error_before"] = float(solution.error)
    msg = solution.message + f"; select={info['rule']!r}: least-norm solution ({info['how']})"
    return dataclasses.replace(solution, error=err, status=status, info=sel_info, message=msg, **xs)


# --------------------------------------------------------------------------------------- min-norm
def _min_norm(problem, solution):
    if problem.kind == "equality":
        from ..problems._base import dense

        return np.linalg.lstsq(dense(problem.M), -np.asarray(problem.q), rcond=None)[0], "pseudo-inverse"
    if problem.kind in ("gfc2d", "gfc3d"):
        local = problem.local()
        x, how = _min_norm(local, dataclasses.replace(solution, problem=local, u=None, v=None))
        return x, how + " (on the local problem W = H^T M^-1 H)"
    m = model_of(problem, solution, TOL_DEGENERATE)
    x_bar = m.x[:problem.size] if problem.kind == "avi" else m.x
    M = problem.M if problem.kind in ("lcp", "mlcp", "relay", "avi", "gmp") else problem.W
    q = np.asarray(problem.q, float)
    c = q.copy()
    y = matvec(M, x_bar) + q
    for dim, (starts, mu) in (m.laws.fc.items() if problem.kind != "avi" else ()):
        U = y[starts[:, None] + np.arange(dim)]
        c[starts] += mu * np.sqrt(np.sum(U[:, 1:] ** 2, axis=1))     # De Saxcé's shift, frozen
    S = 0.5 * (M + M.T)
    n = x_bar.shape[0]
    scale = max(float(np.max(np.abs(x_bar), initial=0.0)), 1e-300)
    if n <= RANK_DENSE_MAX:
        Sd = S.toarray() if sp.issparse(S) else np.asarray(S)
        lam, V = np.linalg.eigh(Sd)
        keep = lam > 1e-12 * max(float(lam[-1]), 1e-300)
        Lt = (V[:, keep] * np.sqrt(lam[keep])).T               # S = L L^T, L^T: rank x n
    else:
        Lt = sp.csr_matrix(S)
    b = matvec(Lt, x_bar)
    x = _program(problem, m, Lt, b, c, x_bar, scale)
    polished = False
    if n <= RANK_DENSE_MAX:
        x, polished = _polish(problem, m, Lt, b, c, x_bar, x, scale)
    return x, "convex view, Clarabel" + (", face polish" if polished else "")


def _cones(cp, problem, m, xv):
    """The laws' set C for the CVXPY variable xv (the primal variable)."""
    cons = []
    if problem.kind == "avi":
        H = problem.H
        cons.append(H @ xv >= np.asarray(problem.k, float))
        return cons
    box, lb, ub = m.laws.box, m.laws.lb, m.laws.ub
    il, iu = box[np.isfinite(lb)], box[np.isfinite(ub)]
    if il.size:
        cons.append(xv[il] >= lb[np.isfinite(lb)])
    if iu.size:
        cons.append(xv[iu] <= ub[np.isfinite(ub)])
    for dim, (starts, mu) in m.laws.fc.items():
        pos = mu > 0
        if pos.any():
            s = starts[pos]
            tang = np.stack([s + k for k in range(1, dim)], axis=1)
            cons.append(cp.SOC(cp.multiply(mu[pos], xv[s]), cp.hstack([cp.reshape(xv[tang[:, k]], (s.size, 1), order="C")
                                                                       for k in range(dim - 1)]), axis=1))
        if (~pos).any():
            s = starts[~pos]
            cons.append(xv[s] >= 0)
            for k in range(1, dim):
                cons.append(xv[s + k] == 0)
    return cons


def _program(problem, m, Lt, b, c, x_bar, scale):
    import cvxpy as cp

    n = x_bar.shape[0]
    xv = cp.Variable(n)
    bnd = float(c @ x_bar)
    cons = _cones(cp, problem, m, xv) + [Lt @ xv == b, c @ xv <= bnd + 1e-12 * scale * max(np.abs(c).max(), 1e-300)]
    prog = cp.Problem(cp.Minimize(cp.sum_squares(xv / scale)), cons)
    try:
        with warnings.catch_warnings():     # "may be inaccurate": the answer is judged by the problem's error
            warnings.simplefilter("ignore")
            prog.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, tol_ktratio=1e-10,
                       max_iter=400)
    except Exception as e:     # noqa: BLE001  (a backend crash: no selection)
        raise _Failed(f"the least-norm program failed ({type(e).__name__}: {e})") from None
    if xv.value is None or prog.status not in ("optimal", "optimal_inaccurate"):
        raise _Failed(f"the least-norm program ended {prog.status}")
    return np.asarray(xv.value, float)


def _polish(problem, m, Lt, b, c, x_bar, x, scale, tol=1e-7):
    """The least-norm point of the face of C that x lies on where the laws' equations hold there
    (y_i = 0 on the free rows, u_a = 0 on the stick contacts, u_N = 0 and u_T along the ray on the
    sliding ones; an AVI keeps Lᵀz = Lᵀz̄ with its active constraints as equations): one least-squares
    solve, independent of the solution the selection started from. Kept when the result is not
    worse than x (then the answer no longer carries the interior-point solver's last digits)."""
    n = x.shape[0]
    t = tol * scale
    x0 = np.zeros(n)
    cols = []                     # (indices, direction) of the free coordinates, orthonormal
    Md = m.Mext.toarray() if sp.issparse(m.Mext) else np.asarray(m.Mext, float)
    rows, rhs = [], []
    if problem.kind == "avi":
        cols = [(np.array([i]), np.array([1.0])) for i in range(n)]
        H = problem.H.toarray() if sp.issparse(problem.H) else np.asarray(problem.H, float)
        act = np.flatnonzero(H @ x - problem.k <= t * max(1.0, np.abs(H).max()))
        rows = [Lt.toarray() if sp.issparse(Lt) else Lt, c[None, :], H[act]]
        rhs = [b, [float(c @ x_bar)], np.asarray(problem.k, float)[act]]
    else:
        q = m.qext
        box, lb, ub = m.laws.box, m.laws.lb, m.laws.ub
        xb = x[box]
        at_lo = np.isfinite(lb) & (xb - lb <= t)
        at_hi = np.isfinite(ub) & (ub - xb <= t) & ~at_lo
        x0[box[at_lo]], x0[box[at_hi]] = lb[at_lo], ub[at_hi]
        for i in box[~(at_lo | at_hi)]:
            cols.append((np.array([i]), np.array([1.0])))
            rows.append(Md[i:i + 1])
            rhs.append(-q[i:i + 1])
        for dim, (starts, mu) in m.laws.fc.items():
            for a, s in enumerate(starts):
                idx = s + np.arange(dim)
                ra = x[idx]
                nrm = float(np.linalg.norm(ra))
                if nrm <= t:
                    continue                                     # r_a = 0
                if mu[a] == 0:
                    cols.append((idx[:1], np.array([1.0])))
                    rows.append(Md[s:s + 1])
                    rhs.append(-q[s:s + 1])
                elif mu[a] * ra[0] - np.linalg.norm(ra[1:]) <= t:   # on the cone's surface: its ray
                    cols.append((idx, ra / nrm))
                    tT = ra[1:] / max(np.linalg.norm(ra[1:]), 1e-300)
                    Pr = np.eye(dim - 1) - np.outer(tT, tT)          # u_T along t (dim - 2 equations)
                    rows += [Md[s:s + 1], Pr @ Md[s + 1:s + dim]]
                    rhs += [-q[s:s + 1], -Pr @ q[s + 1:s + dim]]
                else:
                    for k in range(dim):
                        cols.append((idx[k:k + 1], np.array([1.0])))
                    rows.append(Md[idx])
                    rhs.append(-q[idx])
    if not cols:
        return x, False
    P = np.zeros((n, len(cols)))
    for j, (idx, d) in enumerate(cols):
        P[idx, j] = d
    E = np.vstack(rows) if rows else np.zeros((0, n))
    f = np.concatenate([np.asarray(r_, float).reshape(-1) for r_ in rhs]) if rhs else np.zeros(0)
    y, *_ = np.linalg.lstsq(E @ P, f - E @ x0, rcond=None)
    xp = x0 + P @ y
    if not np.all(np.isfinite(xp)):
        return x, False
    e_new = problem.error_of(problem.complete({problem.primal: xp}))
    e_old = problem.error_of(problem.complete({problem.primal: x}))
    if e_new <= max(e_old, 1e-13) * 10:
        return xp, True
    return x, False


__all__ = ["SELECT_RULES", "check_select", "select"]
