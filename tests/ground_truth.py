r"""A ground truth for the solution sets of small problems, computed without nsopt's solvers and
without ``nsopt.sensitivity`` (issue 30): what ``nsopt.diagnose`` and ``select="min-norm"`` are
tested against.

The solution set of a problem with box laws (LCP, MLCP, Relay) or of a 2D friction problem is a
finite union of polyhedra, its *pieces*: one per choice of a state for every row (at its lower bound
with :math:`y_i \ge 0`, at its upper bound with :math:`y_i \le 0`, or free with :math:`y_i = 0` between
the bounds) or every contact (take-off :math:`r = 0, u_N \ge 0`; stick :math:`u = 0, |r_T| \le \mu r_N`;
slide to the right or to the left :math:`u_N = 0, r_T = \mp\mu r_N, \pm u_T \ge 0`). Each piece is
the polyhedron :math:`\{x : A_{eq}x = b_{eq}, A_{ub}x \le b_{ub}\}` in the primal variable
(:math:`y = \mathcal Mx + q` substituted), and:

* it is non-empty, and its dimension is found, by one linear program (HiGHS through
  ``scipy.optimize.linprog``): maximise :math:`\sum t_i` subject to :math:`A_{ub}x + t \le b_{ub}`,
  :math:`0 \le t \le 1`; the rows with :math:`t_i = 0` are its implicit equations, and the dimension
  is :math:`n` minus the rank of the equations;
* its least-norm point is a quadratic program (Clarabel, called directly);
* it contains a point :math:`\bar x` when the distance (max-norm, one more LP) is below ``CONTAINS``.

**Through a point** (:func:`local_pieces`) the pieces are those whose states :math:`\bar x` satisfies:
a row with :math:`\bar x_i` at a bound and :math:`\bar y_i = 0` can be in either, so the candidates are
the products of the possible states of the *degenerate* rows and contacts; the dimension of the
solution set near :math:`\bar x` is the largest of their dimensions (a convex piece has, near any of
its points, its own dimension).

**3D friction** is not polyhedral: the cone is round and a sliding contact's direction follows its
velocity. Through a point, each piece is the set of the equations of its states,

* take-off :math:`r = 0`; stick :math:`u = 0`; slide :math:`u_N = 0`, :math:`r_T + \mu r_N u_T/\|u_T\| = 0`;
* slide leaving the cone's edge (:math:`u = 0`, :math:`\|r_T\| = \mu r_N`): unknowns :math:`\sigma \ge 0`,
  :math:`\varphi` added, :math:`u_N = 0`, :math:`r_T + \mu r_N g(\varphi) = 0`, :math:`u_T = \sigma g(\varphi)`;

with their inequalities. Its dimension near :math:`\bar x` is that of the cone of the linearised
equations (Jacobian by central differences of the equations written here) and active inequalities,
*confirmed* by exhibiting solutions: for two distances :math:`\varepsilon` and random points of that
cone, ``scipy.optimize.least_squares`` finds points of the piece at those positions along it, each
checked to be a solution (``problem.error`` below ``SOLUTION_TOL``). A dimension that cannot be
confirmed is reported as None (inconclusive). A contact with :math:`r = 0` and :math:`u = 0` makes the
point inconclusive. Least-norm points of 3D pieces are computed only over stick and take-off
states (``all_pieces`` on a 3D problem: second-order-cone programs through CVXPY and Clarabel).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import least_squares, linprog

REL = 1e-7            # a quantity counts as zero below REL times the scale of its kind (diagnose's default)
RANK = 1e-9           # relative singular value counted as zero
CONTAINS = 1e-7       # a piece contains a point at (relative) max-norm distance below this
SOLUTION_TOL = 1e-9   # a point exhibited by the continuation must have an error below this


def dense(A):
    return np.asarray(A.toarray() if sp.issparse(A) else A, float)


@dataclass
class GTPiece:
    """A piece: the state of every row / contact (``states``, a tuple), its dimension (None:
    inconclusive) and, where computed, its least-norm point."""

    states: tuple
    dimension: int | None
    least_norm: np.ndarray | None = None
    first_order: int | None = None     # the dimension of its linearised cone (3D: an upper bound)

    def __post_init__(self):
        if self.first_order is None:
            self.first_order = self.dimension


# ====================================================================== polyhedra
def _rank(A):
    if A.shape[0] == 0:
        return 0
    nr = np.max(np.abs(A), axis=1)
    A = A[nr > 0] / nr[nr > 0, None]
    if A.shape[0] == 0:
        return 0
    s = np.linalg.svd(A, compute_uv=False)
    return int(np.sum(s > RANK * s[0]))


def _normalise(A, b):
    nr = np.max(np.abs(A), axis=1) if A.shape[0] else np.zeros(0)
    nr = np.where(nr > 0, nr, 1.0)
    return A / nr[:, None], b / nr


def _strict_rows(Aeq, beq, Aub, bub, bounds_x):
    """The rows of Aub x <= bub that some point of the polyhedron satisfies strictly: LPs maximising
    the sum of the slacks t <= 1 of the rows not yet found strict, until none is (each LP finds at
    least one new strict row if there is one); None when the polyhedron is empty."""
    n = Aub.shape[1]
    m = Aub.shape[0]
    strict = np.zeros(m, bool)
    while True:
        rest = np.flatnonzero(~strict)
        if rest.size == 0:
            return strict
        k = rest.size
        c = np.concatenate([np.zeros(n), -np.ones(k)])
        T = np.zeros((m, k))
        T[rest, np.arange(k)] = 1.0
        res = linprog(c, A_ub=np.hstack([Aub, T]), b_ub=bub,
                      A_eq=np.hstack([Aeq, np.zeros((Aeq.shape[0], k))]) if Aeq.shape[0] else None,
                      b_eq=beq if Aeq.shape[0] else None, bounds=bounds_x + [(0.0, 1.0)] * k, method="highs")
        if res.status == 2:
            return None
        if res.status != 0:
            raise RuntimeError(f"ground truth LP: {res.message}")
        new = res.x[n:] > 1e-9
        if not new.any():
            return strict
        strict[rest[new]] = True


def polyhedron(Aeq, beq, Aub, bub):
    """(empty, dimension) of {x : Aeq x = beq, Aub x <= bub} (module docstring)."""
    n = Aeq.shape[1] if Aeq.shape[0] else Aub.shape[1]
    Aeq, beq = _normalise(Aeq, beq)
    Aub, bub = _normalise(Aub, bub)
    if Aub.shape[0] == 0:
        res = linprog(np.zeros(n), A_eq=Aeq, b_eq=beq, bounds=[(None, None)] * n, method="highs")
        return (True, None) if res.status == 2 else (False, n - _rank(Aeq))
    strict = _strict_rows(Aeq, beq, Aub, bub, [(None, None)] * n)
    if strict is None:
        return True, None
    return False, n - _rank(np.vstack([Aeq, Aub[~strict]]))


def distance(Aeq, beq, Aub, bub, x):
    """The max-norm distance from x to the polyhedron (an LP)."""
    n = x.shape[0]
    # variables (y, s): min s, |y - x| <= s
    c = np.concatenate([np.zeros(n), [1.0]])
    I = np.eye(n)
    rows = [np.hstack([I, -np.ones((n, 1))]), np.hstack([-I, -np.ones((n, 1))])]
    rhs = [x, -x]
    if Aub.shape[0]:
        rows.append(np.hstack([Aub, np.zeros((Aub.shape[0], 1))]))
        rhs.append(bub)
    res = linprog(c, A_ub=np.vstack(rows), b_ub=np.concatenate(rhs),
                  A_eq=np.hstack([Aeq, np.zeros((Aeq.shape[0], 1))]) if Aeq.shape[0] else None,
                  b_eq=beq if Aeq.shape[0] else None, bounds=[(None, None)] * (n + 1), method="highs")
    return float(res.x[-1]) if res.status == 0 else np.inf


def least_norm(Aeq, beq, Aub, bub, soc=()):
    """argmin ||x|| over {Aeq x = beq, Aub x <= bub, (mu_a x_N, x_T) in the second-order cone for
    each (start, dim, mu) in soc} (Clarabel, called directly by a thin wrapper: no nsopt solver)."""
    from nsopt.sensitivity._pieces import quadratic_program

    n = Aeq.shape[1] if Aeq.shape[0] else Aub.shape[1]
    cones = []
    for s0, dim, mu in soc:
        C = np.zeros((dim, n))
        C[0, s0] = mu
        for k in range(1, dim):
            C[k, s0 + k] = 1.0
        cones.append((C, np.zeros(dim)))
    return quadratic_program(2 * np.eye(n), np.zeros(n), (Aeq, beq), (Aub, bub), cones)


# ====================================================================== box laws and 2D friction
def box_data(p):
    """(M, q, lb, ub) of an LCP, MLCP or Relay."""
    n = p.size
    M, q = dense(p.M), np.asarray(p.q, float)
    if p.kind == "lcp":
        return M, q, np.zeros(n), np.full(n, np.inf)
    if p.kind == "mlcp":
        eq = np.asarray(p.is_eq, bool)
        return M, q, np.where(eq, -np.inf, 0.0), np.full(n, np.inf)
    if p.kind == "relay":
        return M, q, np.asarray(p.lb, float), np.asarray(p.ub, float)
    raise ValueError(p.kind)


def box_states(lb, ub):
    out = []
    if np.isfinite(lb):
        out.append("at lower bound")
    if np.isfinite(ub):
        out.append("at upper bound")
    return out + ["free"]


def _box_rows(M, q, lb, ub, i, state):
    """(eq rows, ub rows) of row i in ``state``: lists of (a, b) with a x = b, a x <= b."""
    n = M.shape[0]
    e = np.zeros(n)
    e[i] = 1.0
    if state == "at lower bound":
        return [(e, lb[i])], [(-M[i], q[i])]               # y_i >= 0
    if state == "at upper bound":
        return [(e, ub[i])], [(M[i], -q[i])]               # y_i <= 0
    ub_rows = ([(-e, -lb[i])] if np.isfinite(lb[i]) else []) + ([(e, ub[i])] if np.isfinite(ub[i]) else [])
    return [(M[i], -q[i])], ub_rows


def fc2d_states(mu):
    return ["take-off", "closed"] if mu == 0 else ["take-off", "stick", "slide+", "slide-"]


def _fc2d_rows(W, q, mu, a, state):
    n = W.shape[0]
    N, T = 2 * a, 2 * a + 1
    eN, eT = np.zeros(n), np.zeros(n)
    eN[N], eT[T] = 1.0, 1.0
    if state == "take-off":
        return [(eN, 0.0), (eT, 0.0)], [(-W[N], q[N])]      # u_N >= 0
    if state == "closed":
        return [(W[N], -q[N]), (eT, 0.0)], [(-eN, 0.0)]
    if state == "stick":
        return [(W[N], -q[N]), (W[T], -q[T])], [(eT - mu * eN, 0.0), (-eT - mu * eN, 0.0)]
    s = 1.0 if state == "slide+" else -1.0                 # u_T s >= 0, r_T = -s mu r_N
    return [(W[N], -q[N]), (eT + s * mu * eN, 0.0)], [(-s * W[T], s * q[T]), (-eN, 0.0)]


def _law_system(p):
    """(units, states per unit, rows(unit, state) -> (eq, ub)) for a box-law or 2D friction problem."""
    if p.kind in ("lcp", "mlcp", "relay"):
        M, q, lb, ub = box_data(p)
        return (list(range(p.size)), [box_states(lb[i], ub[i]) for i in range(p.size)],
                lambda i, s: _box_rows(M, q, lb, ub, i, s))
    if p.kind == "fc2d":
        W, q, mu = dense(p.W), np.asarray(p.q, float), np.asarray(p.mu, float)
        return (list(range(p.nc)), [fc2d_states(mu[a]) for a in range(p.nc)],
                lambda a, s: _fc2d_rows(W, q, mu[a], a, s))
    raise ValueError(p.kind)


def _assemble(rows_of, units, states, n):
    eq, ub = [], []
    for u, s in zip(units, states):
        e, b = rows_of(u, s)
        eq += e
        ub += b
    Aeq = np.array([a for a, _ in eq]).reshape(-1, n)
    beq = np.array([b for _, b in eq], float)
    Aub = np.array([a for a, _ in ub]).reshape(-1, n)
    bub = np.array([b for _, b in ub], float)
    return Aeq, beq, Aub, bub


def _candidates_polyhedral(p, x):
    """The possible states of every unit at x (the GT's own classification)."""
    n = p.size
    if p.kind in ("lcp", "mlcp", "relay"):
        M, q, lb, ub = box_data(p)
        y = M @ x + q
        sx = max(np.max(np.abs(x)), 1.0)
        sy = max(np.max(np.abs(y)), np.max(np.abs(q)), 1.0)
        out = []
        for i in range(n):
            c = []
            if np.isfinite(lb[i]) and x[i] - lb[i] <= REL * sx and y[i] >= -REL * sy:
                c.append("at lower bound")
            if np.isfinite(ub[i]) and ub[i] - x[i] <= REL * sx and y[i] <= REL * sy:
                c.append("at upper bound")
            if abs(y[i]) <= REL * sy:
                c.append("free")
            out.append(c)
        return out
    W, q, mu = dense(p.W), np.asarray(p.q, float), np.asarray(p.mu, float)
    u = W @ x + q
    sx = max(np.max(np.abs(x)), 1e-300)
    sy = max(np.max(np.abs(u)), np.max(np.abs(q)), 1e-300)
    out = []
    for a in range(p.nc):
        rN, rT, uN, uT = x[2 * a], x[2 * a + 1], u[2 * a], u[2 * a + 1]
        z_r = abs(rN) <= REL * sx and abs(rT) <= REL * sx
        c = []
        if z_r and uN >= -REL * sy:
            c.append("take-off")
        if mu[a] == 0:
            if abs(uN) <= REL * sy and abs(rT) <= REL * sx:
                c.append("closed")
        else:
            if abs(uN) <= REL * sy and abs(uT) <= REL * sy and mu[a] * rN - abs(rT) >= -REL * sx:
                c.append("stick")
            if abs(uN) <= REL * sy and uT >= -REL * sy and abs(rT + mu[a] * rN) <= REL * sx:
                c.append("slide+")
            if abs(uN) <= REL * sy and uT <= REL * sy and abs(rT - mu[a] * rN) <= REL * sx:
                c.append("slide-")
        out.append(c)
    return out


def _label(p, unit):
    return ("row", unit) if p.kind in ("lcp", "mlcp", "relay") else ("contact", unit)


def local_pieces(p, x):
    """The pieces through x: [GTPiece] with ``states`` a dict {unit label: state} of the units that
    have more than one possible state (the degenerate ones), and the piece's dimension; or None when
    the point is inconclusive (3D: a contact with r = 0 and u = 0; a dimension not confirmed)."""
    x = np.asarray(x, float)
    if p.kind == "fc3d":
        return _local_pieces_fc3d(p, x)
    units, _, rows_of = _law_system(p)
    cand = _candidates_polyhedral(p, x)
    if any(not c for c in cand):
        raise ValueError("the point is not a solution (a row or contact in no state)")
    deg = [u for u, c in zip(units, cand) if len(c) > 1]
    out = {}
    sx = max(np.max(np.abs(x)), 1.0)
    for choice in itertools.product(*cand):
        Aeq, beq, Aub, bub = _assemble(rows_of, units, choice, p.size)
        if distance(Aeq, beq, Aub, bub, x) > CONTAINS * sx:
            continue
        _, dim = polyhedron(Aeq, beq, Aub, bub)
        key = tuple((_label(p, u), _merge(choice[u])) for u in deg)
        out[key] = max(out.get(key, -1), dim)
    return [GTPiece(dict(k), d) for k, d in out.items()]


def _merge(state):
    return "slide" if state.startswith("slide") else state


def all_pieces(p, limit=4096):
    """Every non-empty piece of the problem with its dimension and least-norm point (box laws, 2D
    friction; 3D friction: the pieces where every contact sticks or takes off). Depth-first over the
    units, a branch cut as soon as the states chosen so far are infeasible."""
    if p.kind == "fc3d":
        return _all_pieces_fc3d_stick(p)
    units, states, rows_of = _law_system(p)
    n = p.size
    out = []

    def relax_rows(k):          # a relaxation of the undecided units: their bounds / cones only
        eq, ub = [], []
        for u in units[k:]:
            if p.kind in ("lcp", "mlcp", "relay"):
                _, _, lb, ub_ = box_data(p)
                e = np.zeros(n)
                e[u] = 1.0
                if np.isfinite(lb[u]):
                    ub.append((-e, -lb[u]))
                if np.isfinite(ub_[u]):
                    ub.append((e, ub_[u]))
            else:
                mu = float(p.mu[u])
                eN, eT = np.zeros(n), np.zeros(n)
                eN[2 * u], eT[2 * u + 1] = 1.0, 1.0
                ub += [(eT - mu * eN, 0.0), (-eT - mu * eN, 0.0)]
        return eq, ub

    def rec(k, chosen):
        if len(out) > limit:
            raise RuntimeError("too many pieces")
        Aeq, beq, Aub, bub = _assemble(rows_of, units[:k], chosen, n)
        _, rub = relax_rows(k)
        if rub:
            Aub = np.vstack([Aub, np.array([a for a, _ in rub])])
            bub = np.concatenate([bub, [b for _, b in rub]])
        empty, dim = polyhedron(Aeq, beq, Aub, bub)
        if empty:
            return
        if k == len(units):
            out.append(GTPiece(tuple(chosen), dim, least_norm(Aeq, beq, Aub, bub)))
            return
        for s in states[k]:
            rec(k + 1, chosen + [s])

    rec(0, [])
    return out


def union_least_norm(pieces):
    """The least-norm point of the union of the pieces (None if none has one)."""
    pts = [pc.least_norm for pc in pieces if pc.least_norm is not None]
    return min(pts, key=np.linalg.norm) if pts else None


# ====================================================================== 3D friction
def _fc3d_data(p):
    return dense(p.W), np.asarray(p.q, float), np.asarray(p.mu, float)


def _fc3d_candidates(p, r):
    W, q, mu = _fc3d_data(p)
    u = W @ r + q
    sx = max(np.max(np.abs(r)), 1e-300)
    sy = max(np.max(np.abs(u)), np.max(np.abs(q)), 1e-300)
    out = []
    for a in range(p.nc):
        R, U = r[3 * a:3 * a + 3], u[3 * a:3 * a + 3]
        zr = np.linalg.norm(R) <= REL * sx
        zuN, zuT = abs(U[0]) <= REL * sy, np.linalg.norm(U[1:]) <= REL * sy
        if zr and zuN and zuT:
            return None                                  # r = 0 and u = 0: inconclusive here
        c = []
        if zr:
            if U[0] >= -REL * sy:
                c.append("take-off")
            if zuN:
                c.append("closed" if mu[a] == 0 else "slide")
        else:
            if mu[a] == 0:
                c.append("closed")
            else:
                margin = mu[a] * R[0] - np.linalg.norm(R[1:])
                if zuN and zuT:
                    c.append("stick")
                    if margin <= REL * sx:
                        c.append("slide-edge")
                elif zuN and margin <= REL * sx:
                    c.append("slide")
        if not c:
            raise ValueError(f"contact {a} of the point is in no state: not a solution")
        out.append(c)
    return out


def _fc3d_system(p, r0, pattern):
    """(y0, F, H): the unknowns at the point (r, then sigma, phi per edge-slide contact), the
    equations F(y) = 0 and the inequalities H(y) >= 0 of the pattern, and the indices of the
    inequalities active at y0."""
    W, q, mu = _fc3d_data(p)
    n = r0.shape[0]
    extra = [a for a, s in enumerate(pattern) if s == "slide-edge"]
    y0 = [r0]
    for a in extra:
        rT = r0[3 * a + 1:3 * a + 3]
        g = -rT / np.linalg.norm(rT)
        y0.append([0.0, np.arctan2(g[1], g[0])])
    y0 = np.concatenate([np.asarray(v, float).reshape(-1) for v in y0])
    pos = {a: n + 2 * k for k, a in enumerate(extra)}

    def split(y):
        r = y[:n]
        return r, W @ r + q

    def F(y):
        r, u = split(y)
        out = []
        for a, s in enumerate(pattern):
            R, U = r[3 * a:3 * a + 3], u[3 * a:3 * a + 3]
            if s == "take-off":
                out.append(R)
            elif s == "stick":
                out.append(U)
            elif s == "closed":
                out.append([U[0], R[1], R[2]])
            elif s == "slide":
                nu = max(np.linalg.norm(U[1:]), 1e-300)
                out.append([U[0], *(R[1:] + mu[a] * R[0] * U[1:] / nu)])
            else:
                sig, phi = y[pos[a]], y[pos[a] + 1]
                g = np.array([np.cos(phi), np.sin(phi)])
                out.append([U[0], *(R[1:] + mu[a] * R[0] * g), *(U[1:] - sig * g)])
        return np.concatenate([np.asarray(o, float) for o in out])

    def H(y):
        r, u = split(y)
        out = []
        for a, s in enumerate(pattern):
            R, U = r[3 * a:3 * a + 3], u[3 * a:3 * a + 3]
            if s == "take-off":
                out.append(U[0])
            elif s == "stick":
                out.append(mu[a] * R[0] - np.linalg.norm(R[1:]))
            elif s in ("closed", "slide"):
                out.append(R[0])
            else:
                out.append(y[pos[a]])
        return np.array(out, float)

    return y0, F, H


def _jac(f, y, h):
    f0 = f(y)
    J = np.zeros((f0.shape[0], y.shape[0]))
    for j in range(y.shape[0]):
        e = np.zeros(y.shape[0])
        e[j] = h
        J[:, j] = (f(y + e) - f(y - e)) / (2 * h)
    return J


def _cone(J, G):
    """(dimension, span basis, a direction of the relative interior in span coordinates) of
    {d : J d = 0, G d >= 0}."""
    n = J.shape[1]
    if J.shape[0]:
        Jn = J / np.where(np.max(np.abs(J), axis=1) > 0, np.max(np.abs(J), axis=1), 1.0)[:, None]
        _, s, Vt = np.linalg.svd(Jn)
        rank = int(np.sum(s > 1e-7 * s[0])) if s.size and s[0] > 0 else 0
        N = Vt[rank:].T
    else:
        N = np.eye(n)
    if N.shape[1] == 0:
        return 0, N, np.zeros(0)
    if G.shape[0] == 0:
        return N.shape[1], N, None
    GN = G @ N
    keep = np.max(np.abs(GN), axis=1) > 1e-7 * np.maximum(np.max(np.abs(G), axis=1), 1e-300)
    if not keep.any():                      # every inequality vanishes on the span: implied
        return N.shape[1], N, None
    GN = GN[keep] / np.max(np.abs(GN[keep]), axis=1)[:, None]
    k, m = N.shape[1], GN.shape[0]
    strict = _strict_rows(np.zeros((0, k)), np.zeros(0), -GN, np.zeros(m), [(-1.0, 1.0)] * k)
    implicit = ~strict
    # a direction of the relative interior: the slacks of the strict rows at least 1e-3 of their best
    res = linprog(-np.ones(int(strict.sum())) @ -GN[strict] if strict.any() else np.zeros(k),
                  A_ub=np.vstack([-GN[strict], GN[implicit], -GN[implicit]]) if m else None,
                  b_ub=np.zeros(int(strict.sum()) + 2 * int(implicit.sum())) if m else None,
                  bounds=[(-1.0, 1.0)] * k, method="highs")
    d = res.x if res.status == 0 else np.zeros(k)
    if implicit.any():
        _, s, Vt = np.linalg.svd(GN[implicit])
        rank = int(np.sum(s > 1e-7 * s[0])) if s.size and s[0] > 0 else 0
        N2 = Vt[rank:].T
        d = N2.T @ d
        N = N @ N2
    return N.shape[1], N, d


def _confirm(p, F, H, y0, N, d, G, active, rng, n):
    """True when solutions of the pattern are found at two distances (1e-3 and 1e-4 relative, less
    when another face of the piece is nearer) along directions of the cone's relative interior
    (module docstring)."""
    k = N.shape[1]
    scale = max(np.max(np.abs(y0[:n])), 1e-300)
    GN = G @ N if G.shape[0] else np.zeros((0, k))
    base = d / np.linalg.norm(d) if d is not None and np.any(d) else None
    inactive = np.setdiff1d(np.arange(H(y0).shape[0]), active)
    room = float(np.min(np.abs(H(y0)[inactive]), initial=np.inf)) / scale    # to the piece's other faces
    eps1 = min(1e-3, 0.2 * room)
    if eps1 < 1e-9:
        return False
    for eps in (eps1, eps1 / 10):
        for trial in range(2):
            c = rng.standard_normal(k)
            c /= np.linalg.norm(c)
            if base is not None:
                s0 = GN @ base
                for t in (0.5, 0.2, 0.05, 0.0):          # stay inside the cone, with a margin
                    ct = base + t * c
                    if np.all(GN @ ct >= 0.5 * s0 - 1e-12):
                        break
                c = ct / np.linalg.norm(ct)
            elif GN.shape[0] and np.any(GN @ c < 0):
                c = -c if np.all(GN @ -c >= 0) else c
            c = eps * scale * c

            def R(y, c=c):
                return np.concatenate([F(y), N.T @ (y - y0) - c])

            y = least_squares(R, y0 + N @ c, xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=200).x
            if np.max(np.abs(F(y))) > 1e-11 * max(scale, 1.0):
                return False
            if np.any(H(y)[active] < -1e-10 * scale):
                return False
            if float(p.error(y[:n])) > SOLUTION_TOL:
                return False
            if np.linalg.norm(y[:n] - y0[:n]) < 0.1 * eps * scale:
                return False
    return True


def _local_pieces_fc3d(p, r, seed=0):
    cand = _fc3d_candidates(p, r)
    if cand is None:
        return None
    rng = np.random.default_rng(seed)
    n = r.shape[0]
    deg = [a for a, c in enumerate(cand) if len(c) > 1]
    out = {}
    for pattern in itertools.product(*cand):
        y0, F, H = _fc3d_system(p, r, pattern)
        h0 = H(y0)
        sc = max(np.max(np.abs(r)), 1e-300)
        active = np.flatnonzero(np.abs(h0) <= 1e-7 * sc)
        hstep = 1e-7 * sc
        J = _jac(F, y0, hstep)
        G = _jac(lambda y, H=H, active=active: H(y)[active], y0, hstep) if active.size else np.zeros((0, y0.shape[0]))
        dim, N, d = _cone(J, G)
        conf = dim if (dim == 0 or _confirm(p, F, H, y0, N, d, G, active, rng, n)) else None
        key = tuple((("contact", a), "slide" if pattern[a] == "slide-edge" else pattern[a]) for a in deg)
        if key in out:                      # (two patterns with one label: keep the larger)
            pc, pf = out[key]
            conf = None if (conf is None or pc is None) else max(pc, conf)
            dim = max(pf, dim)
        out[key] = (conf, dim)
    return [GTPiece(dict(k), c, first_order=f) for k, (c, f) in out.items()]


def _all_pieces_fc3d_stick(p):
    """Stick / take-off pieces of a 3D problem (second-order-cone constraints): each non-empty one
    with its least-norm point (Clarabel); dimension not computed (None)."""
    W, q, mu = _fc3d_data(p)
    n = p.size
    out = []
    for pattern in itertools.product(["take-off", "stick"], repeat=p.nc):
        eq, ub, soc = [], [], []
        for a, s in enumerate(pattern):
            idx = 3 * a + np.arange(3)
            if s == "take-off":
                for j in idx:
                    e = np.zeros(n)
                    e[j] = 1.0
                    eq.append((e, 0.0))
                ub.append((-W[3 * a], q[3 * a]))
            else:
                for j in idx:
                    eq.append((W[j], -q[j]))
                soc.append((3 * a, 3, mu[a]))
        Aeq = np.array([a for a, _ in eq]).reshape(-1, n)
        beq = np.array([b for _, b in eq], float)
        Aub = np.array([a for a, _ in ub]).reshape(-1, n)
        bub = np.array([b for _, b in ub], float)
        x = least_norm(Aeq, beq, Aub, bub, soc)
        if x is not None and float(p.error(x)) < 1e-8:
            out.append(GTPiece(pattern, None, x))
    return out


def verdict(pieces):
    """(unique, dimension) from the pieces through a point: the dimension is the largest of the
    pieces'; a piece whose dimension is not confirmed lies between 0 and its first-order dimension,
    so the verdict is None (inconclusive) only when such a piece could change it."""
    if pieces is None:
        return None, None
    lo = max((pc.dimension for pc in pieces if pc.dimension is not None), default=0)
    hi = max(pc.first_order if pc.dimension is None else pc.dimension for pc in pieces)
    if lo == hi:
        return lo == 0, lo
    return (False if lo > 0 else None), None
