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
