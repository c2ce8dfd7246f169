r"""The solution set near a solution, piece by piece (what :func:`nsopt.diagnose` reports).

Near a solution :math:`\bar x` every law in a strict state keeps it, so it contributes its linearised
equations (the rows of :math:`K = A + B\mathcal M` of :mod:`.core`). A *degenerate* law (no strict
complementarity) can leave through :math:`\bar x` in several states, and each choice is a piece of
the solution set through :math:`\bar x`. To first order the piece is the cone

.. math::  C_b = \{d : E_b\,d = 0,\ G_b\,d \ge 0\},\qquad dy = \mathcal M\,d,

with :math:`E_b` the strict laws' rows of K and the equations of the chosen states, :math:`G_b` their
inequalities:

* a box row at its lower bound with :math:`y_i = 0`: *at the bound* (:math:`dx_i = 0`,
  :math:`dy_i \ge 0`) or *free* (:math:`dy_i = 0`, :math:`dx_i \ge 0`); the upper bound with the signs
  reversed;
* a contact with :math:`r = 0`, :math:`u_N = 0`: *take-off* (:math:`dr = 0`, :math:`du_N \ge 0`), and
  *slide* in the direction g of :math:`u_T \neq 0` (:math:`du_N = 0`, :math:`dr_T = -\mu g\,dr_N`,
  :math:`dr_N \ge 0`), or, when :math:`u = 0` too, *stick* (:math:`du = 0`, :math:`dr` in the
  friction cone) and *slide* in any direction (:math:`du_N = 0`, :math:`dr` in the cone);
  frictionless: take-off or *closed* (:math:`du_N = 0`, :math:`dr_T = 0`, :math:`dr_N \ge 0`);
* a contact on the cone's edge with :math:`u = 0`: *stick* (:math:`du = 0`, :math:`dr` into the cone,
  :math:`n\cdot dr \le 0`) or *slide* along :math:`g = -r_T/\|r_T\|` (:math:`du_N = 0`,
  :math:`du_T = g\,d\sigma` with :math:`d\sigma \ge 0`, :math:`g\cdot dr_T = -\mu\,dr_N`; the part
  of :math:`dr_T` across g is free: the sliding direction turns).

Where the tangent cone is not polyhedral (a 3D contact with :math:`r = 0` and :math:`u = 0`: the round
cone, a sliding direction that is not yet chosen) it is replaced by a polyhedral cone that contains
it (the square pyramid around the friction cone, :math:`du_T` free), so a dimension is never
under-counted (a solution called unique is). For box laws (LCP, MLCP, Relay,
AVI, the box blocks of GMP) the cones are exact: the solution set near :math:`\bar x` *is*
:math:`\bar x + \bigcup_b C_b` (the laws are piecewise affine).

The dimension of a cone: its linear span is the null space of :math:`E_b` and of the rows of
:math:`G_b` that vanish on the whole cone (its implicit equations, found by one linear program:
maximise :math:`\sum_i t_i` subject to :math:`G_b d \ge t`, :math:`0 \le t \le 1`, :math:`E_b d = 0`;
a row is implicit where :math:`t_i = 0` at the optimum). Null spaces by the SVD with the shared
threshold :data:`._factor.RANK_RTOL`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from . import _laws as L
from ._factor import RANK_RTOL, null_space

BRANCH_MAX = 4096        # pieces through a point enumerated up to this many (else: not decided)


@dataclass
class Piece:
    """One piece of the solution set through the point: the state chosen at each degenerate law
    (``states``: {law: state}), its dimension and its span (``span``: columns spanning it; a 2D
    contact sliding either way from r = 0, u = 0 gives two cones under one name, merged)."""

    states: dict
    dimension: int
    span: np.ndarray
    cones: list = None            # [(span, G)]: the cone(s) {span y : G span y >= 0} of the piece


def _dense(A):
    return np.asarray(A.toarray() if sp.issparse(A) else A, float)


def degenerate_laws(m, st, sx, sy, tol):
    """[(law, rows of K it owns, [(state name, E rows, G rows), ...])] for every degenerate law of
    the model ``m`` at the state ``st`` (module docstring); law = ("row", i) or ("contact", a)."""
    out = []
    n = m.x.shape[0]
    Md = None

    def My(i):
        nonlocal Md
        if Md is None:
            Md = _dense(m.Mext)
        return Md[i]

    def e(i):
        v = np.zeros(n)
        v[i] = 1.0
        return v

    box = m.laws.box
    for k in np.flatnonzero(st.box_degenerate):
        i = int(box[k])
        if st.box_state[k] == L.FREE:
            continue
        s = 1.0 if st.box_state[k] == L.LOWER else -1.0
        name = L.STATE_NAMES[("box", int(st.box_state[k]))]
        alts = [(name, [e(i)], [s * My(i)]), ("free", [My(i)], [s * e(i)])]
        out.append((("row", i), [i], alts))
    for dim, (starts, mu) in m.laws.fc.items():
        for a in np.flatnonzero(st.fc_degenerate[dim]):
            s0 = int(starts[a])
            idx = s0 + np.arange(dim)
            R, U = m.x[idx], m.y[idx]
            mua = float(mu[a])
            alts = []
            edge = st.fc_edge.get(dim)
            if edge is not None and edge[a]:
                nrT = float(np.linalg.norm(R[1:]))
                tT = R[1:] / nrT
                nrm = np.concatenate([[-mua], tT])                  # outward normal of the cone at r
                alts.append(("stick", [My(j) for j in idx], [-_embed(n, idx, nrm)]))
                g = -tT                                             # the direction u_T slides in
                E = [My(s0), _embed(n, idx, np.concatenate([[mua], g]))]
                if dim == 3:                                        # u_T leaves along g: du_T = g dsigma
                    E.append(-g[1] * My(idx[1]) + g[0] * My(idx[2]))
                alts.append(("slide", E, [sum(g[k] * My(idx[1 + k]) for k in range(dim - 1))]))
            else:
                alts.append(("take-off", [e(j) for j in idx], [My(s0)]))
                nuT = float(np.linalg.norm(U[1:]))
                if mua == 0:
                    alts.append(("closed", [My(s0)] + [e(j) for j in idx[1:]], [e(s0)]))
                elif nuT / sy > tol:
                    g = U[1:] / nuT
                    alts.append(("slide", [My(s0)] + [e(idx[1 + k]) + mua * g[k] * e(s0) for k in range(dim - 1)],
                                 [e(s0)]))
                elif dim == 2:                       # exact: the cone is an interval, two directions
                    cone = [mua * e(s0) + e(s0 + 1), mua * e(s0) - e(s0 + 1)]
                    alts.append(("stick", [My(j) for j in idx], cone))
                    for sg in (1.0, -1.0):              # u_T = sg |u_T|, r_T = -sg mu r_N
                        alts.append(("slide", [My(s0), e(s0 + 1) + sg * mua * e(s0)], [e(s0), sg * My(s0 + 1)]))
                else:
                    pyr = [mua * e(s0) + sg * e(idx[1 + k]) for k in range(dim - 1) for sg in (1.0, -1.0)]
                    alts.append(("stick", [My(j) for j in idx], pyr))
                    alts.append(("slide", [My(s0)], pyr))
            out.append((("contact", int(a) if len(m.laws.fc) == 1 else (dim, int(a))), list(idx), alts))
    return out


def _embed(n, idx, v):
    out = np.zeros(n)
    out[idx] = v
    return out


def cone_span(E, G, rtol=RANK_RTOL):
    """(dimension, orthonormal basis of the span) of the cone {d : E d = 0, G d >= 0} (module
    docstring); E, G dense row blocks (possibly empty); ``rtol`` the rank threshold."""
    n = E.shape[1]
    _, N = null_space(E, rtol) if E.shape[0] else (0, np.eye(n))
    if N.shape[1] == 0 or G.shape[0] == 0:
        return N.shape[1], N
    GN = G @ N
    nrm = np.max(np.abs(GN), axis=1)
    big = nrm > rtol * max(float(np.max(np.abs(G), initial=0.0)), 1e-300)
    if not big.any():
        return N.shape[1], N
    GN = GN[big] / nrm[big, None]
    implicit = _implicit_rows(GN)
    if not implicit.any():
        return N.shape[1], N
    _, N2 = null_space(GN[implicit], rtol)
    Nn = N @ N2
    return Nn.shape[1], Nn


def _implicit_rows(G):
    """The rows i of G with G_i d = 0 for every d in {d : G d >= 0} (one LP, module docstring)."""
    from scipy.optimize import linprog

    m, k = G.shape
    # variables (d, t): maximise sum t, G d - t >= 0, 0 <= t <= 1
    c = np.concatenate([np.zeros(k), -np.ones(m)])
    A = np.hstack([-G, np.eye(m)])
    bounds = [(None, None)] * k + [(0.0, 1.0)] * m
    res = linprog(c, A_ub=A, b_ub=np.zeros(m), bounds=bounds, method="highs")
    if res.status != 0:
        return np.ones(m, bool)            # (never seen: the LP is feasible, d = 0, and bounded)
    return res.x[k:] < 0.5


def pieces(m, st, K, sx, sy, tol, rtol=RANK_RTOL, limit=BRANCH_MAX):
    """The pieces of the solution set through the model's point (module docstring): a list of
    :class:`Piece`, or None when there are more than ``limit`` of them."""
    Kd = _dense(K)
    laws = degenerate_laws(m, st, sx, sy, tol)
    owned = np.zeros(Kd.shape[0], bool)
    for _, rows, _ in laws:
        owned[rows] = True
    E0 = Kd[~owned]
    count = 1
    for *_, alts in laws:
        count *= len(alts)
        if count > limit:
            return None
    out, seen = [], {}
    n = Kd.shape[1]
    for choice in itertools.product(*[range(len(alts)) for *_, alts in laws]):
        E = [E0]
        G = []
        states = {}
        for (law, _, alts), c in zip(laws, choice):
            name, Er, Gr = alts[c]
            states[law] = name
            E += [np.asarray(Er).reshape(-1, n)]
            G += [np.asarray(Gr).reshape(-1, n)]
        Ea = np.vstack(E)
        Ga = np.vstack(G) if G else np.zeros((0, n))
        dim, span = cone_span(Ea, Ga, rtol)
        key = tuple(states.items())
        if key in seen:                     # one state name, two cones (a 2D slide either way)
            pc = seen[key]
            pc.dimension = max(pc.dimension, dim)
            pc.span = np.hstack([pc.span, span])
            pc.cones.append((span, Ga))
            continue
        seen[key] = Piece(states, dim, span, [(span, Ga)])
        out.append(seen[key])
    return out


def free_units(m, kind, mov):
    """The rows / contacts / constraints / blocks touched by the null space."""
    out = {}
    if kind in ("lcp", "mlcp", "relay", "equality"):
        out["rows"] = np.flatnonzero(mov)
    elif kind == "avi":
        out["rows"] = np.flatnonzero(mov[:m.n])
        out["multipliers"] = np.flatnonzero(mov[m.n:])
    elif kind in ("fc2d", "fc3d", "gfc2d", "gfc3d"):
        (dim, (starts, _)), = m.laws.fc.items()
        out["contacts"] = np.flatnonzero(mov[starts[:, None] + np.arange(dim)].any(axis=1))
        if kind.startswith("gfc"):
            out["velocities"] = np.flatnonzero(mov[:m.nd])
    elif kind == "gmp":
        out["blocks"] = np.asarray([k for k, rows in enumerate(m.block_rows) if mov[rows].any()], dtype=np.int64)
    return out
