"""Coulomb cones: projection and the natural-map residual, vectorised over contacts (Siconos' formulas)."""

from __future__ import annotations

import math

import numpy as np


def project_coulomb(X: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Project each row x = (x_N, x_T) of ``X`` (shape nc x dim) on K_mu = {||x_T|| <= mu x_N}.

    As Siconos' ``projectionOnCone``: 0 if mu ||x_T|| <= -x_N (polar cone), x if ||x_T|| <= mu x_N,
    else x_N' = (mu ||x_T|| + x_N) / (1 + mu^2), x_T' = mu x_N' x_T / ||x_T||.
    """
    xN = X[:, 0]
    xT = X[:, 1:]
    two_d = X.shape[1] == 2    # 2-D: |x_T| and sign(x_T), as Siconos' fc2d (no overflow in x_T^2)
    nT = np.abs(xT[:, 0]) if two_d else np.sqrt(np.einsum("ij,ij->i", xT, xT))
    polar = mu * nT <= -xN
    inside = nT <= mu * xN
    pN = (mu * nT + xN) / (mu * mu + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(nT > 0.0, mu * pN / nT, 0.0)
    # branch order as Siconos: polar first, then inside, else the boundary
    keep = np.where(polar, 0.0, np.where(inside, 1.0, 0.0))
    bnd = ~(polar | inside)
    P = X * keep[:, None]
    P[:, 0] += np.where(bnd, pN, 0.0)
    if two_d:
        P[:, 1] += np.where(bnd, mu * pN, 0.0) * np.sign(xT[:, 0])
    else:
        P[:, 1:] += np.where(bnd, scale, 0.0)[:, None] * xT
    return P


def _natural_map_sq_small(r, u, mu, dim) -> float:
    """The same sum with plain floats: a few contacts cost less than numpy's per-call overhead."""
    r, u, mu = r.tolist(), u.tolist(), mu.tolist()
    if dim == 2:       # |t| rather than sqrt(t*t): Siconos' fc2d, and no overflow of t*t
        def norm(v):
            return abs(v[0])
    else:
        def norm(v):
            return math.sqrt(sum(t * t for t in v))
    tot = 0.0
    for a, m in enumerate(mu):
        i = a * dim
        rT, uT = r[i + 1:i + dim], u[i + 1:i + dim]
        xN = r[i] - u[i] - m * norm(uT)
        xT = [ri - ui for ri, ui in zip(rT, uT)]
        nT = norm(xT)
        if m * nT <= -xN:
            pN, pT = 0.0, [0.0] * (dim - 1)
        elif nT <= m * xN:
            pN, pT = xN, xT
        else:
            pN = (m * nT + xN) / (m * m + 1.0)
            pT = [math.copysign(m * pN, xT[0])] if dim == 2 else [m * pN * t / nT for t in xT]
        dN = r[i] - pN                 # products, not ** 2: a float ** overflows with an exception
        tot += dN * dN + sum((a_ - b_) * (a_ - b_) for a_, b_ in zip(rT, pT))
    return tot


def natural_map_sq(r: np.ndarray, u: np.ndarray, mu: np.ndarray, dim: int) -> float:
    """sum_a ||r_a - P_K(r_a - u_a - mu_a ||u_T,a|| e_N)||^2 (rho = 1): the unnormalised FC error squared."""
    if mu.shape[0] <= 8:
        return _natural_map_sq_small(r, u, mu, dim)
    R = r.reshape(-1, dim)
    U = u.reshape(-1, dim)
    UT = U[:, 1:]
    X = R - U
    X[:, 0] -= mu * (np.abs(UT[:, 0]) if dim == 2 else np.sqrt(np.einsum("ij,ij->i", UT, UT)))
    D = R - project_coulomb(X, mu)
    return float(np.einsum("ij,ij->", D, D))
