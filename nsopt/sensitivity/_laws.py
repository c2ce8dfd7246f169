r"""The laws of the one-step problems, row by row and contact by contact, linearised at a solution.

Every kind nsopt differentiates is written on one unknown x (the primal variable, stacked with
whatever else the kind needs) with an affine residual :math:`y = \mathcal M x + \bar q` and a law per
row or per contact (see ``formulations/sensitivity.md``):

* a **box row** :math:`-y_i \in N_{[l_i, u_i]}(x_i)` (LCP rows: :math:`[0, \infty)`; equations and
  free variables: :math:`(-\infty, \infty)`; relay rows: :math:`[lb_i, ub_i]`);
* a **friction contact** of dimension 2 or 3 with coefficient :math:`\mu_a`: Coulomb's law with De
  Saxcé's modified velocity, :math:`K_{\mu_a} \ni x_a \perp \hat y_a \in K^*_{\mu_a}`.

At a solution each law is in a *state* (at a bound or free; take-off, stick or slide) and its
linearisation is :math:`A_a\,dx_a + B_a\,dy_a + e_a = 0` with :math:`dim \times dim` blocks
:math:`A_a, B_a` and :math:`e_a` the part that comes from the law's own data (a bound, :math:`\mu_a`).
Where the state is not determined (no strict complementarity) the law is *degenerate*; the blocks
are then those of the documented branch (:data:`RULE`), an element of the B-subdifferential.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

# box-row states
LOWER, UPPER, FREE = 0, 1, 2
# contact states
TAKEOFF, STICK, SLIDE = 0, 1, 2
STATE_NAMES = MappingProxyType({("box", LOWER): "at lower bound", ("box", UPPER): "at upper bound", ("box", FREE): "free",
               ("fc", TAKEOFF): "take-off", ("fc", STICK): "stick", ("fc", SLIDE): "slide"})

RULE = ("a degenerate box row (at a bound with zero residual: z = w = 0 in an LCP row) is taken at its "
        "bound (dx_i = d bound_i: the row stays inactive, no force appears); a contact with zero force "
        "and zero normal velocity is taken as take-off (dr_a = 0); a contact on the cone's edge with "
        "zero sliding velocity is taken as stick (du_a = 0)")

TOL_DEGENERATE = 1e-7     # default relative threshold below which a quantity counts as zero


@dataclass
class Laws:
    """The laws of a problem on an unknown of size ``n``: box rows (indices and bounds) and friction
    contacts (start index, dimension, mu), in any order and mixture."""

    n: int
    box: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    lb: np.ndarray = field(default_factory=lambda: np.zeros(0))
    ub: np.ndarray = field(default_factory=lambda: np.zeros(0))
    fc: dict = field(default_factory=dict)        # dim -> (starts, mu)

    @classmethod
    def boxes(cls, lb, ub):
        lb = np.asarray(lb, float)
        return cls(lb.shape[0], np.arange(lb.shape[0]), lb, np.asarray(ub, float))

    @classmethod
    def contacts(cls, dim, mu, offset=0, n=None):
        mu = np.asarray(mu, float)
        nc = mu.shape[0]
        return cls(offset + dim * nc if n is None else n, fc={dim: (offset + dim * np.arange(nc), mu)})


@dataclass
class State:
    """The linearisation of the laws at one point: block-diagonal A, B (CSR, n x n), the states and
    the degenerate rows / contacts, and what e needs (the active bounds' signs, the sliding
    contacts' r_N g)."""

    A: sp.csr_matrix
    B: sp.csr_matrix
    box_state: np.ndarray
    box_degenerate: np.ndarray
    fc_state: dict                 # dim -> states per contact
    fc_degenerate: dict            # dim -> bool per contact
    fc_mu_col: dict                # dim -> (nc, dim) de_a / dmu_a
    box_dlb: np.ndarray            # de_i / dlb_i per box row
    box_dub: np.ndarray            # de_i / dub_i per box row
    smoothing: float = 0.0
    fc_edge: dict = field(default_factory=dict)   # dim -> bool per contact: degenerate on the cone's edge


def scales(x, y, q=None):
    """Scales of x and y (their largest entries; q's for y too), never zero."""
    sx = float(np.max(np.abs(x), initial=0.0))
    sy = max(float(np.max(np.abs(y), initial=0.0)), float(np.max(np.abs(q), initial=0.0)) if q is not None else 0.0)
    return (sx if sx > 0 else 1.0), (sy if sy > 0 else 1.0)


def _block_csr(n, rows, cols, vals):
    return sp.csr_matrix((vals, (rows, cols)), shape=(n, n))


def linearise(laws: Laws, x, y, sx, sy, tol=TOL_DEGENERATE) -> State:
    """Classify every law at (x, y) and build the blocks of its B-derivative (branch :data:`RULE`
    where degenerate). ``sx``, ``sy``: the scales that make "zero" relative."""
    n = laws.n
    Ar, Ac, Av, Br, Bc, Bv = [], [], [], [], [], []
    # ---- box rows
    i = laws.box
    xi, yi, lo, hi = x[i], y[i], laws.lb, laws.ub
    with np.errstate(invalid="ignore"):
        a = np.where(np.isfinite(lo), (xi - lo) / sx, np.inf)     # distance to the lower bound
        b = np.where(np.isfinite(hi), (hi - xi) / sx, np.inf)     # to the upper bound
    g = yi / sy
    st = np.full(i.shape[0], FREE, dtype=np.int64)
    low = (g > 0) & (g >= a)
    up = (g < 0) & (-g >= b) & ~low
    st[low], st[up] = LOWER, UPPER
    deg = (low & (g <= tol)) | (up & (-g <= tol)) | ((st == FREE) & (np.minimum(a, b) <= tol))
    # the rule: a degenerate free row goes to its nearer bound
    fdeg = deg & (st == FREE)
    st[fdeg & (a <= b)] = LOWER
    st[fdeg & (a > b)] = UPPER
    atb = st != FREE
    Ar.append(i[atb])
    Ac.append(i[atb])
    Av.append(np.ones(int(atb.sum())))
    Br.append(i[~atb])
    Bc.append(i[~atb])
    Bv.append(np.ones(int((~atb).sum())))
    dlb = np.where(st == LOWER, -1.0, 0.0)
    dub = np.where(st == UPPER, -1.0, 0.0)
    # ---- friction contacts
    fstate, fdegen, fmu, fedge = {}, {}, {}, {}
    for dim, (starts, mu) in laws.fc.items():
        idx = starts[:, None] + np.arange(dim)[None, :]
        R, U = x[idx], y[idx]
        nc = starts.shape[0]
        rN, uN = R[:, 0] / sx, U[:, 0] / sy
        nrT = np.sqrt(np.sum(R[:, 1:] ** 2, axis=1)) / sx
        nuT = np.sqrt(np.sum(U[:, 1:] ** 2, axis=1))
        closed = rN > uN
        ndeg = np.maximum(rN, uN) <= tol
        closed &= ~ndeg
        margin = mu * rN - nrT
        slide = closed & (mu > 0) & (nuT / sy > margin)
        edge = closed & (mu > 0) & (np.maximum(margin, nuT / sy) <= tol)
        slide &= ~edge
        stick = closed & ~slide
        s = np.where(slide, SLIDE, np.where(stick, STICK, TAKEOFF)).astype(np.int64)
        fstate[dim], fdegen[dim], fedge[dim] = s, ndeg | edge, edge
        col = np.zeros((nc, dim))
        blockA = np.zeros((nc, dim, dim))
        blockB = np.zeros((nc, dim, dim))
        eye = np.eye(dim)
        blockA[s == TAKEOFF] = eye
        frictionless = (s == STICK) & (mu == 0)
        st_ = (s == STICK) & ~frictionless
        blockB[st_] = eye
        blockB[frictionless, 0, 0] = 1.0
        blockA[frictionless, 1:, 1:] = eye[1:, 1:]
        if np.any(slide):
            k = np.flatnonzero(slide)
            UT = U[k, 1:]
            nu = nuT[k]
            gT = UT / nu[:, None]
            blockB[k, 0, 0] = 1.0
            blockA[k, 1:, 1:] = eye[1:, 1:]
            blockA[k, 1:, 0] = mu[k, None] * gT
            P = eye[1:, 1:][None] - gT[:, :, None] * gT[:, None, :]
            blockB[k, 1:, 1:] = (mu[k] * R[k, 0] / nu)[:, None, None] * P
            col[k, 1:] = R[k, 0][:, None] * gT
        fmu[dim] = col
        rr = np.repeat(idx, dim, axis=1).reshape(-1)
        cc = np.tile(idx, (1, dim)).reshape(-1)
        for blk, (rl, cl, vl) in ((blockA, (Ar, Ac, Av)), (blockB, (Br, Bc, Bv))):
            v = blk.reshape(-1)
            nz = v != 0
            rl.append(rr[nz])
            cl.append(cc[nz])
            vl.append(v[nz])
    A = _block_csr(n, np.concatenate(Ar), np.concatenate(Ac), np.concatenate(Av))
    B = _block_csr(n, np.concatenate(Br), np.concatenate(Bc), np.concatenate(Bv))
    return State(A, B, st, deg, fstate, fdegen, fmu, dlb, dub, fc_edge=fedge)


def law_residual(laws: Laws, st: State, x, y):
    """The equations F(x, y) = 0 of every law in its state ``st`` (the table of
    ``formulations/sensitivity.md``; :func:`linearise`'s blocks are their derivatives, A dx + B dy):
    at a bound x_i - bound, free y_i; take-off r, stick u, frictionless closed (u_N, r_T), slide
    (u_N, r_T + mu r_N u_T / ||u_T||)."""
    F = np.zeros(laws.n)
    i = laws.box
    if i.size:
        lo, up = st.box_state == LOWER, st.box_state == UPPER
        fr = ~(lo | up)
        F[i[lo]] = x[i[lo]] - laws.lb[lo]
        F[i[up]] = x[i[up]] - laws.ub[up]
        F[i[fr]] = y[i[fr]]
    for dim, (starts, mu) in laws.fc.items():
        s = st.fc_state[dim]
        for a, s0 in enumerate(starts):
            idx = s0 + np.arange(dim)
            if s[a] == TAKEOFF:
                F[idx] = x[idx]
            elif s[a] == STICK and mu[a] > 0:
                F[idx] = y[idx]
            elif s[a] == STICK:
                F[s0], F[idx[1:]] = y[s0], x[idx[1:]]
            else:
                uT = y[idx[1:]]
                F[s0] = y[s0]
                F[idx[1:]] = x[idx[1:]] + mu[a] * x[s0] * uT / max(float(np.linalg.norm(uT)), 1e-300)
    return F


# ------------------------------------------------------------------------------- smoothing
def _splus(t, eps):
    """The Chen–Harker–Kanzow–Smale smoothing of max(0, t): (t + sqrt(t^2 + 4 eps^2)) / 2."""
    return 0.5 * (t + np.sqrt(t * t + 4.0 * eps * eps))


def smoothed_residual(laws: Laws, x, y, gamma, eps, lb=None, ub=None, mu=None):
    r"""The smoothed natural-map residual :math:`\Phi_\varepsilon(x, y)` of every law (complex-safe:
    the complex-step derivatives of :func:`smoothed_state` go through it).

    Box rows: :math:`x - P_\varepsilon(x - \gamma y)`, :math:`P_\varepsilon(t) = l + s_\varepsilon(t - l)
    - s_\varepsilon(t - u)` (the terms of infinite bounds dropped). Contacts: the Alart–Curnier
    function with :math:`\rho = \gamma`, its max smoothed by :math:`s_\varepsilon` and its disc
    projection by :math:`x R / m_\varepsilon(R, \sqrt{\|x\|^2 + \varepsilon^2})`, :math:`m_\varepsilon`
    the smoothed max. ``eps`` is absolute (in the units of x)."""
    lb = laws.lb if lb is None else lb
    ub = laws.ub if ub is None else ub
    phi = np.zeros(x.shape, dtype=np.result_type(x, y, lb, ub, complex if mu is not None and np.iscomplexobj(mu) else float))
    i = laws.box
    t = x[i] - gamma * y[i]
    flo, fhi = np.isfinite(laws.lb), np.isfinite(laws.ub)
    lo = np.where(flo, lb, 0.0)
    hi = np.where(fhi, ub, 0.0)
    P = np.where(flo & fhi, lo + _splus(t - lo, eps) - _splus(t - hi, eps),
                 np.where(flo, lo + _splus(t - lo, eps), np.where(fhi, hi - _splus(hi - t, eps), t)))
    phi[i] = x[i] - P
    for dim, (starts, mu0) in laws.fc.items():
        m = mu0 if mu is None else mu[dim]
        idx = starts[:, None] + np.arange(dim)[None, :]
        R, U = x[idx], y[idx]
        tN = R[:, 0] - gamma * U[:, 0]
        pN = _splus(tN, eps)
        XT = R[:, 1:] - gamma * U[:, 1:]
        rad = m * pN
        nx = np.sqrt(np.sum(XT * XT, axis=1) + eps * eps)
        mx = 0.5 * (rad + nx + np.sqrt((rad - nx) ** 2 + 4.0 * eps * eps))
        out = np.empty(R.shape, dtype=phi.dtype)
        out[:, 0] = R[:, 0] - pN
        out[:, 1:] = R[:, 1:] - (rad / mx)[:, None] * XT
        phi[idx] = out
    return phi


def smoothed_state(laws: Laws, x, y, gamma, eps) -> tuple[State, np.ndarray]:
    """The exact Jacobian blocks of :func:`smoothed_residual` at (x, y) by complex steps (the
    residual is analytic for eps > 0), and the residual itself."""
    n = laws.n
    phi = smoothed_residual(laws, x, y, gamma, eps).real
    h = 1e-30
    sx = max(float(np.max(np.abs(x), initial=0.0)), 1.0)
    hh = h * sx
    Ar, Ac, Av, Br, Bc, Bv = [], [], [], [], [], []
    i = laws.box
    # box rows: one complex step per variable (rows are uncoupled)
    for which, (rl, cl, vl) in (("x", (Ar, Ac, Av)), ("y", (Br, Bc, Bv))):
        xc, yc = x.astype(complex), y.astype(complex)
        (xc if which == "x" else yc)[i] += 1j * hh
        d = smoothed_residual(laws, xc, yc, gamma, eps)[i].imag / hh
        rl.append(i)
        cl.append(i)
        vl.append(d)
    dlb = np.zeros(i.shape[0])
    dub = np.zeros(i.shape[0])
    if i.size:
        fl, fu = np.isfinite(laws.lb), np.isfinite(laws.ub)
        lbc = laws.lb.astype(complex)
        lbc[fl] += 1j * hh
        dlb = np.where(fl, smoothed_residual(laws, x, y, gamma, eps, lb=lbc)[i].imag / hh, 0.0)
        ubc = laws.ub.astype(complex)
        ubc[fu] += 1j * hh
        dub = np.where(fu, smoothed_residual(laws, x, y, gamma, eps, ub=ubc)[i].imag / hh, 0.0)
    fmu = {}
    fstate, fdeg = {}, {}
    sub = Laws(n, fc=laws.fc)
    for dim, (starts, mu) in laws.fc.items():
        idx = starts[:, None] + np.arange(dim)[None, :]
        nc = starts.shape[0]
        for which, (rl, cl, vl) in (("x", (Ar, Ac, Av)), ("y", (Br, Bc, Bv))):
            for k in range(dim):
                xc, yc = x.astype(complex), y.astype(complex)
                (xc if which == "x" else yc)[idx[:, k]] += 1j * hh
                d = smoothed_residual(sub, xc, yc, gamma, eps)[idx].imag / hh      # (nc, dim): column k
                rl.append(idx.reshape(-1))
                cl.append(np.repeat(idx[:, k], dim))
                vl.append(d.reshape(-1))
        muc = {dd: (mm.astype(complex) + (1j * h if dd == dim else 0.0)) for dd, (_, mm) in laws.fc.items()}
        fmu[dim] = smoothed_residual(sub, x.astype(complex), y.astype(complex), gamma, eps, mu=muc)[idx].imag / h
        fstate[dim] = np.full(nc, -1, dtype=np.int64)
        fdeg[dim] = np.zeros(nc, dtype=bool)
    A = _block_csr(n, np.concatenate(Ar), np.concatenate(Ac), np.concatenate(Av))
    B = _block_csr(n, np.concatenate(Br), np.concatenate(Bc), np.concatenate(Bv))
    st = State(A, B, np.full(i.shape[0], -1, dtype=np.int64), np.zeros(i.shape[0], dtype=bool), fstate, fdeg,
               fmu, dlb, dub, smoothing=eps)
    return st, phi
