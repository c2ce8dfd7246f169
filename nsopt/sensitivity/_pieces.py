r"""The pieces of a small polyhedral problem's solution set, enumerated: the least-norm solution of a
problem whose solution set is not convex (``select="min-norm"``, :mod:`.select`).

The solution set of a problem with box laws (LCP, MLCP, Relay) or of a 2D friction problem is the
union of the polyhedra obtained by fixing a state for every row (at its lower bound with
:math:`y_i \ge 0`, at its upper bound with :math:`y_i \le 0`, free with :math:`y_i = 0` between the
bounds) and every contact (take-off :math:`r = 0, u_N \ge 0`; stick :math:`u = 0, |r_T| \le \mu r_N`;
slide either way :math:`u_N = 0, r_T = \mp\mu r_N, \pm u_T \ge 0`), with :math:`y = \mathcal Mx + q`.
They are enumerated depth first, a branch cut as soon as the states chosen so far and the bounds
(or cones) of the others are infeasible (one LP, HiGHS); the least-norm point of each non-empty
piece is a quadratic program (Clarabel, called directly), and the least-norm solution is the best
of them. Done only when the number of state combinations is at most :data:`ENUM_MAX`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

ENUM_MAX = 1024        # state combinations (the product of the states per row / contact) enumerated at most


def _states(model):
    """[(unit, [states])]: rows of box laws and 2D contacts."""
    laws = model.laws
    out = []
    for k, i in enumerate(laws.box):
        lo, hi = laws.lb[k], laws.ub[k]
        st = (["lo"] if np.isfinite(lo) else []) + (["hi"] if np.isfinite(hi) else []) + ["free"]
        out.append((("row", int(i), k), st))
    for starts, mu in laws.fc.values():
        for a, s0 in enumerate(starts):
            st = ["off", "closed"] if mu[a] == 0 else ["off", "stick", "slide+", "slide-"]
            out.append((("contact", int(s0), float(mu[a])), st))
    return out


def count(model) -> int:
    """The number of state combinations of the model (ENUM_MAX + 1 when larger)."""
    c = 1
    if any(dim != 2 for dim in model.laws.fc):
        return ENUM_MAX + 1
    for _, st in _states(model):
        c *= len(st)
        if c > ENUM_MAX:
            return ENUM_MAX + 1
    return c


def _rows(unit, state, Md, q, laws):
    """(eq, ub) rows of one unit in one state: lists of (a, b) meaning a x = b and a x <= b."""
    n = Md.shape[0]

    def e(j):
        v = np.zeros(n)
        v[j] = 1.0
        return v

    kind, i, extra = unit
    if kind == "row":
        lo, hi = laws.lb[extra], laws.ub[extra]
        if state == "lo":
            return [(e(i), lo)], [(-Md[i], q[i])]
        if state == "hi":
            return [(e(i), hi)], [(Md[i], -q[i])]
        ub = ([(-e(i), -lo)] if np.isfinite(lo) else []) + ([(e(i), hi)] if np.isfinite(hi) else [])
        return [(Md[i], -q[i])], ub
    N, T, mu = i, i + 1, extra
    if state == "off":
        return [(e(N), 0.0), (e(T), 0.0)], [(-Md[N], q[N])]
    if state == "closed":
        return [(Md[N], -q[N]), (e(T), 0.0)], [(-e(N), 0.0)]
    if state == "stick":
        return [(Md[N], -q[N]), (Md[T], -q[T])], [(e(T) - mu * e(N), 0.0), (-e(T) - mu * e(N), 0.0)]
    s = 1.0 if state == "slide+" else -1.0
    return [(Md[N], -q[N]), (e(T) + s * mu * e(N), 0.0)], [(-s * Md[T], s * q[T]), (-e(N), 0.0)]


def _relaxed(unit, laws, n):
    """The rows every state of the unit satisfies (its bounds, its cone): the LP relaxation."""
    kind, i, extra = unit
    e = np.zeros(n)
    if kind == "row":
        lo, hi = laws.lb[extra], laws.ub[extra]
        e[i] = 1.0
        return ([(-e, -lo)] if np.isfinite(lo) else []) + ([(e.copy(), hi)] if np.isfinite(hi) else [])
    eN, eT = np.zeros(n), np.zeros(n)
    eN[i], eT[i + 1] = 1.0, 1.0
    return [(eT - extra * eN, 0.0), (-eT - extra * eN, 0.0)]


def _stack(rows, n):
    A = np.array([a for a, _ in rows]).reshape(-1, n)
    b = np.array([b for _, b in rows], float)
    return A, b


def _feasible(Aeq, beq, Aub, bub, n):
    from scipy.optimize import linprog

    res = linprog(np.zeros(n), A_ub=Aub if Aub.shape[0] else None, b_ub=bub if Aub.shape[0] else None,
                  A_eq=Aeq if Aeq.shape[0] else None, b_eq=beq if Aeq.shape[0] else None,
                  bounds=[(None, None)] * n, method="highs")
    return res.status != 2


def quadratic_program(P, c, eq=None, ub=None, socs=()):
    """argmin ½ yᵀPy + cᵀy over {E y = e} (``eq = (E, e)``), {G y <= h} (``ub = (G, h)``) and
    {C y + c0 in the second-order cone} (each ``(C, c0)`` of ``socs``), by Clarabel called directly,
    at tolerances 1e-12, then 1e-10 and 1e-9 if it does not converge (the last digits come from the
    polish that follows it in :mod:`.select`); None when it does not solve."""
    import clarabel

    k = P.shape[0]
    blocks, rhs, cones = [], [], []
    for block, cone in ((eq, clarabel.ZeroConeT), (ub, clarabel.NonnegativeConeT)):
        if block is not None and np.shape(block[0])[0]:
            blocks.append(np.asarray(block[0], float).reshape(-1, k))
            rhs.append(np.asarray(block[1], float))
            cones.append(cone(blocks[-1].shape[0]))
    for C, c0 in socs:
        blocks.append(-np.asarray(C, float))
        rhs.append(np.asarray(c0, float))
        cones.append(clarabel.SecondOrderConeT(blocks[-1].shape[0]))
    if not blocks:
        return np.linalg.lstsq(P, -c, rcond=None)[0]
    A, b = sp.csc_matrix(np.vstack(blocks)), np.concatenate(rhs)
    for tol in (1e-12, 1e-10, 1e-9):
        st = clarabel.DefaultSettings()
        st.verbose = False
        st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = tol
        st.tol_ktratio = 1e-10 if tol == 1e-12 else 1e-8
        st.max_iter = 400
        sol = clarabel.DefaultSolver(sp.csc_matrix(P), np.asarray(c, float), A, b, cones, st).solve()
        if str(sol.status) in ("Solved", "AlmostSolved"):
            return np.asarray(sol.x, float)
    return None


def _least_norm(Aeq, beq, Aub, bub, n):
    return quadratic_program(2 * np.eye(n), np.zeros(n), (Aeq, beq), (Aub, bub))


def least_norm_solution(model):
    """(x, pieces): the least-norm point of the union of the non-empty pieces of the model's solution
    set and the number of non-empty pieces (module docstring); x None when no piece is non-empty."""
    Md = np.asarray(model.Mext.toarray() if sp.issparse(model.Mext) else model.Mext, float)
    q = np.asarray(model.qext, float)
    n = Md.shape[0]
    units = _states(model)
    laws = model.laws
    relax = [_relaxed(u, laws, n) for u, _ in units]
    best, found = None, 0
    # norm normalisation of the rows for the LPs (rows of M and unit rows mix scales)

    def rec(k, eq, ub):
        nonlocal best, found
        rest = [r for rr in relax[k:] for r in rr]
        Aeq, beq = _stack(eq, n)
        Aub, bub = _stack(ub + rest, n)
        if not _feasible(Aeq, beq, Aub, bub, n):
            return
        if k == len(units):
            x = _least_norm(Aeq, beq, Aub, bub, n)
            if x is not None:
                found += 1
                if best is None or np.linalg.norm(x) < np.linalg.norm(best):
                    best = x
            return
        unit, states = units[k]
        for s in states:
            e, u = _rows(unit, s, Md, q, laws)
            rec(k + 1, eq + e, ub + u)

    rec(0, [], [])
    return best, found
