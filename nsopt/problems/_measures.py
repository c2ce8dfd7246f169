"""The error measures of the problems and the Coulomb projection, written once as compiled functions
that the problems' Python methods (:mod:`nsopt.problems.cones`, :mod:`nsopt.problems.lcp`) and the
solvers' kernels (:mod:`nsopt.solvers._gs_kernels`, :mod:`nsopt.solvers._newton_kernels`) call alike:
one formula, one set of numbers."""

from __future__ import annotations

import math

import numpy as np

from .._jit import njit

EPS = np.finfo(np.float64).eps


@njit(cache=True)
def project_rows(X, mu, out):
    """out[a] = P_{K_mu[a]}(X[a]) for every row a of X (nc x dim)."""
    dim = X.shape[1]
    for a in range(X.shape[0]):
        proj_cone(dim, mu[a], X[a], out[a])


@njit(cache=True)
def natural_map_sum(r, u, mu, dim):
    """sum_a ||r_a - P_K(r_a - u_a - mu_a ||u_T,a|| e_N)||^2 (:func:`nat_map_sq` over the contacts)."""
    x = np.empty(dim)
    px = np.empty(dim)
    s = 0.0
    for a in range(mu.shape[0]):
        s += nat_map_sq_at(dim, mu[a], r, u, a * dim, x, px)
    return s


@njit(cache=True)
def fc_error_of(dim, r, u, mu, normq):
    """:func:`fc_error` with its own work arrays (the Python side's call)."""
    return fc_error(dim, r, u, mu, normq, np.empty(dim), np.empty(dim))


@njit(cache=True)
def norm2(x):
    """||x||_2 as BLAS ``dnrm2`` (:func:`nsopt.problems._base.norm2`): sqrt(x.x) (one pass), scaled by
    max |x_i| where a square would overflow or underflow."""
    m = 0.0
    s = 0.0
    for i in range(x.shape[0]):
        a = abs(x[i])
        s += a * a
        if not a <= m:          # (nan: kept)
            m = a
    if 1e-140 < m < 1e140:
        return math.sqrt(s)
    if m == 0.0 or not math.isfinite(m):
        return m
    s = 0.0
    for i in range(x.shape[0]):
        y = x[i] / m
        s += y * y
    return m * math.sqrt(s)


@njit(cache=True)
def _norm_t(dim, x):
    """||x_T|| of one contact (|x_1| in 2-D, as Siconos' fc2d: no overflow of the square)."""
    return _norm_t_at(dim, x, 0)


@njit(cache=True, inline="always")
def _norm_t_at(dim, x, i0):
    """:func:`_norm_t` of the contact at ``x[i0:i0 + dim]``."""
    if dim == 2:
        return abs(x[i0 + 1])
    s = 0.0
    for i in range(1, dim):
        s += x[i0 + i] * x[i0 + i]
    return math.sqrt(s)


@njit(cache=True, inline="always")
def proj_cone(dim, mu, x, out):
    """out = P_{K_mu}(x) for one contact (x, out of length dim; out may be x): Siconos'
    ``projectionOnCone`` (:func:`nsopt.problems.cones.project_coulomb` calls it row by row)."""
    xN = x[0]
    nT = _norm_t(dim, x)
    if mu * nT <= -xN:
        for i in range(dim):
            out[i] = 0.0
    elif nT <= mu * xN:
        for i in range(dim):
            out[i] = x[i]
    else:
        pN = (mu * nT + xN) / (mu * mu + 1.0)
        out[0] = pN
        if dim == 2:
            out[1] = mu * pN if x[1] > 0.0 else -mu * pN
        else:
            s = mu * pN / nT
            for i in range(1, dim):
                out[i] = s * x[i]


@njit(cache=True)
def nat_map_sq(dim, mu, r, u, x, px):
    """||r - P_K(r - u - mu ||u_T|| e_N)||^2 for one contact (x, px: work arrays): one term of
    :func:`nsopt.problems.cones.natural_map_sq`."""
    return nat_map_sq_at(dim, mu, r, u, 0, x, px)


@njit(cache=True, inline="always")
def nat_map_sq_at(dim, mu, r, u, i0, x, px):
    """:func:`nat_map_sq` of the contact at ``r[i0:i0 + dim]``, ``u[i0:i0 + dim]`` (offsets, not slices:
    numba makes a view per slice, 2.5x the time of the whole measure on a 1000-cube pile)."""
    for i in range(dim):
        x[i] = r[i0 + i] - u[i0 + i]
    x[0] -= mu * _norm_t_at(dim, u, i0)
    proj_cone(dim, mu, x, px)
    s = 0.0
    for i in range(dim):
        d = r[i0 + i] - px[i]
        s += d * d
    return s


@njit(cache=True)
def fc_error(dim, r, u, mu, normq, x, px):
    """Siconos' friction-contact error of (r, u): the natural map over max(||q||, ||r||, ||u||); the
    one home of the formula (:func:`nsopt.problems.cones.fc_error` calls it)."""
    nc = mu.shape[0]
    e = 0.0
    for a in range(nc):
        e += nat_map_sq_at(dim, mu[a], r, u, a * dim, x, px)
    e = math.sqrt(e)
    scale = max(normq, norm2(r), norm2(u))
    if scale > EPS:
        return e / scale
    return e


@njit(cache=True)
def lcp_error(z, w, qnorm):
    """Siconos' LCP error of (z, w), ||z - max(0, z - w)|| / ||q|| (divided only when ||q|| >
    DBL_EPSILON): the one home of the formula
    (:func:`nsopt.problems.lcp.lcp_error` calls it; nan propagates as in ``np.maximum``)."""
    e = 0.0
    for i in range(z.shape[0]):
        d = z[i] - w[i]
        if not (d > 0.0 or math.isnan(d)):
            d = 0.0
        d = z[i] - d
        e += d * d
    e = math.sqrt(e)
    if qnorm > EPS:
        return e / qnorm
    return e


