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
    nT = np.sqrt(np.einsum("ij,ij->i", xT, xT))
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
    P[:, 1:] += np.where(bnd, scale, 0.0)[:, None] * xT
    return P


def _natural_map_sq_small(r, u, mu, dim) -> float:
    """The same sum with plain floats: a few contacts cost less than numpy's per-call overhead."""
    r, u, mu = r.tolist(), u.tolist(), mu.tolist()
    tot = 0.0
    for a, m in enumerate(mu):
        i = a * dim
        rT, uT = r[i + 1:i + dim], u[i + 1:i + dim]
        xN = r[i] - u[i] - m * math.sqrt(sum(t * t for t in uT))
        xT = [ri - ui for ri, ui in zip(rT, uT)]
        nT = math.sqrt(sum(t * t for t in xT))
        if m * nT <= -xN:
            pN, pT = 0.0, [0.0] * (dim - 1)
        elif nT <= m * xN:
            pN, pT = xN, xT
        else:
            pN = (m * nT + xN) / (m * m + 1.0)
            pT = [m * pN * t / nT for t in xT]
        tot += (r[i] - pN) ** 2 + sum((a_ - b_) ** 2 for a_, b_ in zip(rT, pT))
    return tot


def natural_map_sq(r: np.ndarray, u: np.ndarray, mu: np.ndarray, dim: int) -> float:
    """sum_a ||r_a - P_K(r_a - u_a - mu_a ||u_T,a|| e_N)||^2 (rho = 1): the unnormalised FC error squared."""
    if mu.shape[0] <= 8:
        return _natural_map_sq_small(r, u, mu, dim)
    R = r.reshape(-1, dim)
    U = u.reshape(-1, dim)
    UT = U[:, 1:]
    X = R - U
    X[:, 0] -= mu * np.sqrt(np.einsum("ij,ij->i", UT, UT))
    D = R - project_coulomb(X, mu)
    return float(np.einsum("ij,ij->", D, D))
