"""Small random problems with known solutions, so that nsopt tests itself without the corpus.

Each generator returns ``(problem, solution)`` where ``solution`` holds vectors that satisfy the
problem exactly (error 0 up to rounding): the data are built backwards from a chosen solution.
"""

from __future__ import annotations

import numpy as np

from .problems import LCP, MLCP, FrictionContact, GlobalFrictionContact, Relay


def _rng(seed):
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def spd_matrix(n, rng, cond=10.0):
    """Symmetric positive definite matrix with eigenvalues in [1, cond]."""
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (Q * np.linspace(1.0, cond, n)) @ Q.T


def p_matrix(n, rng):
    """A nonsymmetric P-matrix: positive definite symmetric part plus a skew part."""
    S = rng.standard_normal((n, n))
    return spd_matrix(n, rng) + (S - S.T) * 0.5


def psd_matrix(n, rng, rank=None):
    """Symmetric positive semidefinite matrix of the given rank."""
    rank = n if rank is None else rank
    B = rng.standard_normal((n, rank))
    return B @ B.T


def complementary_pair(n, rng, degenerate=0.0):
    """z, w >= 0 with z_i w_i = 0; a fraction ``degenerate`` of indices has z_i = w_i = 0."""
    z, w = np.zeros(n), np.zeros(n)
    act = rng.random(n) < 0.5
    z[act] = rng.uniform(0.1, 2.0, act.sum())
    w[~act] = rng.uniform(0.1, 2.0, (~act).sum())
    if degenerate:
        d = rng.random(n) < degenerate
        z[d] = w[d] = 0.0
    return z, w


def lcp(n=10, seed=0, matrix="spd"):
    """LCP with a known solution, built backwards from a complementary pair (z, w).

    Parameters
    ----------
    n : int
        Size.
    seed : int or numpy.random.Generator
    matrix : {"spd", "psd", "p"}
        Symmetric positive definite, positive semidefinite of rank n // 2, or a nonsymmetric P-matrix.

    Returns
    -------
    problem : LCP
    solution : dict
        ``{"z": z, "w": w}`` with ``w = Mz + q``, ``0 <= z ⊥ w >= 0``.

    Examples
    --------
    >>> from nsopt import generate
    >>> p, known = generate.lcp(4, seed=1, matrix="p")
    >>> p, p.error(known["z"]) < 1e-14
    (LCP(n=4, dense), True)
    """
    rng = _rng(seed)
    M = {"spd": lambda: spd_matrix(n, rng), "psd": lambda: psd_matrix(n, rng, max(1, n // 2)),
         "p": lambda: p_matrix(n, rng)}[matrix]()
    z, w = complementary_pair(n, rng)
    return LCP(M, w - M @ z), {"z": z, "w": w}


def mlcp(n=3, m=5, seed=0):
    """MLCP with a known solution, M = [[A, C], [D, B]] symmetric positive definite.

    Parameters
    ----------
    n, m : int
        Numbers of equality and complementarity rows.
    seed : int or numpy.random.Generator

    Returns
    -------
    problem : MLCP
    solution : dict
        ``{"z": [u; v], "w": [0; w]}``.

    Examples
    --------
    >>> from nsopt import generate
    >>> p, known = generate.mlcp(2, 3, seed=0)
    >>> p.error(known["z"]) < 1e-14
    True
    """
    rng = _rng(seed)
    M = spd_matrix(n + m, rng)
    u = rng.standard_normal(n)
    v, w = complementary_pair(m, rng)
    z = np.concatenate([u, v])
    wfull = np.concatenate([np.zeros(n), w])
    return MLCP.from_matrix(M, wfull - M @ z, n), {"z": z, "w": wfull}


def relay(n=6, seed=0):
    """Relay problem with a known solution (each z_i at lb, at ub, or strictly inside with w_i = 0).

    Parameters
    ----------
    n : int
    seed : int or numpy.random.Generator

    Returns
    -------
    problem : Relay
    solution : dict
        ``{"z": z, "w": w}``.

    Examples
    --------
    >>> from nsopt import generate
    >>> p, known = generate.relay(5, seed=2)
    >>> p.error(known["z"]) < 1e-14
    True
    """
    rng = _rng(seed)
    M = spd_matrix(n, rng)
    lb, ub = -rng.uniform(0.5, 2.0, n), rng.uniform(0.5, 2.0, n)
    z, w = np.zeros(n), np.zeros(n)
    state = rng.integers(0, 3, n)
    z[state == 0] = lb[state == 0]
    w[state == 0] = rng.uniform(0.1, 1.0, (state == 0).sum())
    z[state == 1] = ub[state == 1]
    w[state == 1] = -rng.uniform(0.1, 1.0, (state == 1).sum())
    inside = state == 2
    z[inside] = rng.uniform(lb[inside] * 0.9, ub[inside] * 0.9)
    return Relay(M, w - M @ z, lb, ub), {"z": z, "w": w}


def coulomb_pair(nc, dim, mu, rng, states=None):
    """(r, u) satisfying Coulomb's law with De Saxcé's modified velocity, contact by contact.

    Parameters
    ----------
    nc, dim : int
        Number of contacts and their dimension (2 or 3).
    mu : (nc,) array_like
    rng : numpy.random.Generator
    states : (nc,) array_like of {0, 1, 2}, optional
        0 take-off (r = 0, u_N > 0), 1 stick (r inside the cone, u = 0), 2 slide (r on the cone
        boundary, u_N = 0, u_T = -s r_T/||r_T||, s > 0); random when not given.

    Returns
    -------
    r, u : ndarray, shape (dim * nc,)
    states : ndarray of int
    """
    r, u = np.zeros((nc, dim)), np.zeros((nc, dim))
    states = rng.integers(0, 3, nc) if states is None else np.asarray(states)
    for a in range(nc):
        t = rng.standard_normal(dim - 1)
        t /= np.linalg.norm(t)
        if states[a] == 0:
            u[a, 0] = rng.uniform(0.1, 1.0)
            u[a, 1:] = rng.standard_normal(dim - 1)
        elif states[a] == 1:
            rn = rng.uniform(0.5, 2.0)
            r[a] = [rn, *(rng.uniform(0, 0.9) * mu[a] * rn * t)]
        else:
            rn = rng.uniform(0.5, 2.0)
            r[a] = [rn, *(mu[a] * rn * t)]
            u[a, 1:] = -rng.uniform(0.1, 1.0) * t
    return r.reshape(-1), u.reshape(-1), states


def friction_contact(nc=5, dim=3, seed=0, mu=0.3, W=None, states=None):
    """FrictionContact with a known solution; W symmetric positive definite (dense) unless given.

    Parameters
    ----------
    nc : int
        Number of contacts.
    dim : {3, 2}
    seed : int or numpy.random.Generator
    mu : float or (nc,) array_like
    W : (dim * nc, dim * nc) array_like or sparse, optional
        The Delassus matrix to use (q is built for it).
    states : (nc,) array_like, optional
        The contact states of the solution (see :func:`coulomb_pair`).

    Returns
    -------
    problem : FrictionContact
    solution : dict
        ``{"r": r, "u": u, "states": states}``.

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt import generate
    >>> p, known = generate.friction_contact(nc=6, dim=3, seed=1, mu=0.5, states=[0, 1, 2, 0, 1, 2])
    >>> p, p.error(known["r"]) < 1e-14, known["states"].tolist()
    (FrictionContact(dim=3, nc=6, dense), True, [0, 1, 2, 0, 1, 2])
    """
    rng = _rng(seed)
    mu = np.full(nc, mu) if np.ndim(mu) == 0 else np.asarray(mu, float)
    n = dim * nc
    W = spd_matrix(n, rng) if W is None else W
    r, u, st = coulomb_pair(nc, dim, mu, rng, states)
    return FrictionContact(dim, W, u - np.asarray(W @ r).reshape(-1), mu), {"r": r, "u": u, "states": st}


def global_friction_contact(nc=4, ndof=12, dim=3, seed=0, mu=0.3):
    """GlobalFrictionContact with a known solution: M SPD, H random, (r, u) Coulomb-admissible.

    Parameters
    ----------
    nc : int
        Number of contacts.
    ndof : int
        Size of M.
    dim : {3, 2}
    seed : int or numpy.random.Generator
    mu : float

    Returns
    -------
    problem : GlobalFrictionContact
    solution : dict
        ``{"v": v, "r": r, "u": u, "states": states}``.

    Examples
    --------
    >>> from nsopt import generate
    >>> p, known = generate.global_friction_contact(nc=3, ndof=9, seed=0)
    >>> bool(p.error(known["r"], known["v"]) < 1e-12)
    True
    """
    rng = _rng(seed)
    mu = np.full(nc, mu)
    M = spd_matrix(ndof, rng)
    H = rng.standard_normal((ndof, dim * nc))
    r, u, st = coulomb_pair(nc, dim, mu, rng)
    v = rng.standard_normal(ndof)
    q = M @ v - H @ r          # M v = q + H r
    b = u - H.T @ v            # u = H^T v + b
    return GlobalFrictionContact(M, H, q, b, mu, dim), {"v": v, "r": r, "u": u, "states": st}


# ============================================================================ degenerate by construction
def _skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def rigid_body_contacts(points, half=(0.5, 0.3, 0.2), m=1.0, dim=3):
    """(M, H): the mass matrix of a box (half sizes ``half``, mass ``m``) and the contact Jacobian of
    ``points`` on its bottom face (``(x, y)`` offsets from its centre, at height ``-half[-1]``), one
    block of rows per contact: normal (z), then tangents (x, y); in 2D (``dim=2``) a rectangle in the
    (x, z) plane with dofs (x, z, θ) and rows (normal z, tangent x) at offsets x."""
    points = np.atleast_2d(np.asarray(points, float)) if dim == 3 else np.asarray(points, float).reshape(-1)
    if dim == 3:
        a, b, c = half
        inertia = m / 12 * np.diag([4 * (b * b + c * c), 4 * (a * a + c * c), 4 * (a * a + b * b)])
        M = np.zeros((6, 6))
        M[:3, :3], M[3:, 3:] = m * np.eye(3), inertia
        rows = []
        for x, y in points:
            J = np.hstack([np.eye(3), -_skew(np.array([x, y, -c]))])
            rows.append(J[[2, 0, 1]])
        return M, np.vstack(rows)
    a, c = half[0], half[-1]
    M = np.diag([m, m, m * (4 * a * a + 4 * c * c) / 12])
    rows = []
    for x in points:                      # velocity of (x, -c): (vx + c w, vz + x w) for dofs (vx, vz, w)
        rows.append([[0.0, 1.0, x], [1.0, 0.0, c]])
    return M, np.vstack(rows)


def rigid_friction_problem(points, v0, mu=0.5, h=1e-2, g=9.81, dim=3, half=(0.5, 0.3, 0.2), m=1.0):
    """The one-step friction problem of a box (a rectangle in 2D) resting on coplanar (collinear)
    ``points`` with velocity ``v0`` (6 dofs, or 3 in 2D) under gravity: W = H M⁻¹ Hᵀ (singular as soon
    as the points over-constrain the body), q = H v_free."""
    M, H = rigid_body_contacts(points, half, m, dim)
    F = np.zeros(M.shape[0])
    F[2 if dim == 3 else 1] = -g * m
    vfree = np.asarray(v0, float) + h * np.linalg.solve(M, F)
    W = H @ np.linalg.solve(M, H.T)
    return FrictionContact(dim, 0.5 * (W + W.T), H @ vfree, mu)


def _table_points(nc, rng, half=(0.5, 0.3)):
    a, b = half
    corners = [(-a, -b), (a, -b), (a, b), (-a, b)]
    if nc == 3:
        return np.array([(-a, -b), (a, -b), (0.0, b)])
    pts = corners[:min(nc, 4)]
    while len(pts) < nc:                   # more legs along the edges
        t = rng.uniform(-0.8, 0.8)
        pts.append((t * a, b if len(pts) % 2 else -b))
    return np.array(pts)


def _psd_with_repeats(n, rng, rank=None, repeats=1):
    """A symmetric PSD matrix B Bᵀ whose last ``repeats`` rows (and columns) repeat earlier ones."""
    rank = max(1, n // 2) if rank is None else rank
    B = rng.standard_normal((n - repeats, rank))
    idx = rng.choice(n - repeats, repeats, replace=False)
    B = np.vstack([B, B[idx]])
    return B @ B.T, idx


def _box_pair(M, rng, n, degenerate=0.3, force_active=()):
    z, w = complementary_pair(n, rng, degenerate)
    for i in force_active:
        z[i], w[i] = rng.uniform(0.2, 1.0), 0.0
    return z, w


def degenerate(family: str, seed=0):
    """A problem of one of the families of :data:`DEGENERATE_FAMILIES` (non-unique or without strict
    complementarity by construction, or unique for contrast) and a solution of it when the
    construction gives one (None for the rigid-body families, whose solution a method finds).

    Parameters
    ----------
    family : str
        One of :data:`DEGENERATE_FAMILIES`.
    seed : int or numpy.random.Generator

    Returns
    -------
    problem : Problem
    solution : dict or None

    Examples
    --------
    >>> from nsopt import generate
    >>> p, known = generate.degenerate("lcp-repeated-rows", seed=0)
    >>> p.kind, p.error(known["z"]) < 1e-12
    ('lcp', True)
    """
    if family not in DEGENERATE_FAMILIES:
        raise ValueError(f"unknown family {family!r}; families: {', '.join(DEGENERATE_FAMILIES)}")
    rng = _rng(seed)
    n = int(rng.integers(3, 7))
    if family == "lcp-unique-degenerate":          # SPD, some rows with z = w = 0: unique, not strict
        M = spd_matrix(n, rng)
        z, w = complementary_pair(n, rng, 0.35)
        return LCP(M, w - M @ z), {"z": z, "w": w}
    if family == "lcp-repeated-rows":              # repeated rows of a PSD M: a segment, a face...
        M, idx = _psd_with_repeats(n, rng, rank=max(2, n - 2), repeats=1)
        z, w = complementary_pair(n, rng, 0.2)
        j = n - 1
        w[j] = w[idx[0]]                           # a repeated row has the same w (M and q rows equal)
        if w[j] > 0:
            z[j] = 0.0
        elif rng.random() < 0.5:
            z[j] = rng.uniform(0.2, 1.0)
        return LCP(M, w - M @ z), {"z": z, "w": w}
    if family == "lcp-psd-singular":
        M = psd_matrix(n, rng, max(1, n // 2))
        z, w = complementary_pair(n, rng, 0.2)
        return LCP(M, w - M @ z), {"z": z, "w": w}
    if family == "lcp-zero-pivot":                 # zero rows/diagonal: LCP(0, 0) in a corner, skew couplings
        S = psd_matrix(n, rng, max(1, n - 2))
        k = int(rng.integers(1, n))
        S[:k] = 0.0
        S[:, :k] = 0.0
        A = rng.standard_normal((n, n))
        K = (A - A.T) * (rng.random() < 0.5)
        K[:k, :k] = 0.0
        M = S + K
        z, w = complementary_pair(n, rng, 0.25)
        w[:k] = np.where(rng.random(k) < 0.6, 0.0, w[:k])
        z[:k] = np.where(w[:k] > 0, 0.0, z[:k])
        return LCP(M, w - M @ z), {"z": z, "w": w}
    if family == "lcp-isolated":                   # -I plus a small skew part, q > 0: isolated solutions
        A = rng.standard_normal((n, n))
        M = -np.eye(n) + 0.1 * (A - A.T)
        z, w = complementary_pair(n, rng, 0.0)
        return LCP(M, w - M @ z), {"z": z, "w": w}
    if family == "mlcp-dependent-eq":              # two equal equality rows
        ne, ni = 2, max(2, n - 2)
        Mf, idx = _psd_with_repeats(ne + ni, rng, rank=ne + ni - 1, repeats=1)
        perm = np.r_[idx[0], ne + ni - 1, [i for i in range(ne + ni - 1) if i != idx[0]]]
        Mf = Mf[np.ix_(perm, perm)]
        u = rng.standard_normal(ne)
        v, wi = complementary_pair(ni, rng, 0.2)
        z = np.concatenate([u, v])
        w = np.concatenate([np.zeros(ne), wi])
        return MLCP.from_matrix(Mf, w - Mf @ z, ne), {"z": z, "w": w}
    if family == "mlcp-unique":
        return mlcp(2, n - 1, seed=rng)
    if family == "relay-psd":
        M = psd_matrix(n, rng, max(1, n - 2))
        lb, ub = -rng.uniform(0.5, 2.0, n), rng.uniform(0.5, 2.0, n)
        z, w = np.zeros(n), np.zeros(n)
        state = rng.integers(0, 4, n)
        z[state == 0], w[state == 0] = lb[state == 0], rng.uniform(0.1, 1.0, (state == 0).sum())
        z[state == 1], w[state == 1] = ub[state == 1], -rng.uniform(0.1, 1.0, (state == 1).sum())
        z[state == 2] = rng.uniform(lb[state == 2] * 0.9, ub[state == 2] * 0.9)
        z[state == 3] = lb[state == 3]                                  # at the bound with w = 0
        return Relay(M, w - M @ z, lb, ub), {"z": z, "w": w}
    if family == "fc2d-particle-duplicated":       # a point on k identical contacts
        k = int(rng.integers(2, 4))
        H = np.vstack([np.array([[0.0, 1.0], [1.0, 0.0]])] * k)          # rows (normal z, tangent x)
        slide = rng.random() < 0.5
        v0 = np.array([rng.uniform(0.5, 2.0) if slide else 0.0, 0.0])
        vfree = v0 + 1e-2 * np.array([0.0, -9.81])
        return FrictionContact(2, H @ H.T, H @ vfree, rng.uniform(0.2, 0.6)), None
    if family in ("fc2d-block-stick", "fc2d-block-slide"):
        k = int(rng.integers(2, 5))
        pts = np.sort(rng.uniform(-0.5, 0.5, k)) if k > 2 else np.array([-0.5, 0.5])
        v0 = np.zeros(3)
        v0[0] = rng.uniform(0.5, 2.0) if family.endswith("slide") else rng.uniform(0.0, 0.02)
        return rigid_friction_problem(pts, v0, mu=rng.uniform(0.3, 0.7), dim=2, half=(0.5, 0.2)), None
    if family.startswith("fc3d-box-"):
        nc = int(rng.integers(3, 9))
        pts = _table_points(nc, rng)
        v0 = np.zeros(6)
        if family == "fc3d-box-stick":
            v0[:2] = rng.uniform(0.0, 0.02, 2)
        elif family == "fc3d-box-slide":
            v0[:2] = rng.uniform(0.5, 1.5, 2) * rng.choice([-1, 1], 2)
            v0[5] = rng.uniform(-0.5, 0.5)
        else:                                      # turning about one leg: it may stick while others slide
            a = pts[int(rng.integers(nc))]
            w = rng.uniform(0.5, 2.0) * rng.choice([-1, 1])
            v0[5] = w
            v0[:2] = -w * np.array([-a[1], a[0]]) + rng.uniform(-0.02, 0.02, 2)
        return rigid_friction_problem(pts, v0, mu=rng.uniform(0.3, 0.7)), None
    if family == "fc3d-unique-degenerate":         # W SPD, a grazing contact and one on the cone's edge
        nc = int(rng.integers(3, 6))
        mu = np.full(nc, rng.uniform(0.2, 0.6))
        W = spd_matrix(3 * nc, rng)
        r, u, _ = coulomb_pair(nc, 3, mu, rng, rng.integers(0, 3, nc))
        g = 0
        r[3 * g:3 * g + 3] = 0.0                   # grazing: r = 0, u_N = 0, u_T != 0
        u[3 * g] = 0.0
        u[3 * g + 1:3 * g + 3] = rng.standard_normal(2)
        e = nc - 1                                 # on the cone's edge with u = 0
        t = rng.standard_normal(2)
        t /= np.linalg.norm(t)
        rn = rng.uniform(0.5, 2.0)
        r[3 * e:3 * e + 3] = [rn, *(mu[e] * rn * t)]
        u[3 * e:3 * e + 3] = 0.0
        return FrictionContact(3, W, u - W @ r, mu), {"r": r, "u": u}
    raise AssertionError(family)


DEGENERATE_FAMILIES = ("lcp-unique-degenerate", "lcp-repeated-rows", "lcp-psd-singular", "lcp-zero-pivot",
                       "lcp-isolated", "mlcp-dependent-eq", "mlcp-unique", "relay-psd", "fc2d-particle-duplicated",
                       "fc2d-block-stick", "fc2d-block-slide", "fc3d-box-stick", "fc3d-box-slide",
                       "fc3d-box-turn", "fc3d-unique-degenerate")
