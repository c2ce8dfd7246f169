"""Coulomb cones: projection and the natural-map residual, vectorised over contacts (Siconos' formulas)."""

from __future__ import annotations

import numpy as np


def project_coulomb(X: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Project each row x = (x_N, x_T) of ``X`` (shape nc x dim) on K_mu = {||x_T|| <= mu x_N}.

    As Siconos' ``projectionOnCone``: 0 if mu ||x_T|| <= -x_N (polar cone), x if ||x_T|| <= mu x_N,
    else x_N' = (mu ||x_T|| + x_N) / (1 + mu^2), x_T' = mu x_N' x_T / ||x_T||.
    """
    xN = X[:, 0]
    xT = X[:, 1:]
    nT = np.sqrt(np.sum(xT * xT, axis=1))
    P = X.copy()
    polar = mu * nT <= -xN
    inside = (~polar) & (nT <= mu * xN)
    side = ~(polar | inside)
    P[polar] = 0.0
    if np.any(side):
        m = mu[side]
        pN = (m * nT[side] + xN[side]) / (m * m + 1.0)
        P[side, 0] = pN
        P[side, 1:] = (m * pN / nT[side])[:, None] * xT[side]
    return P


def natural_map_sq(r: np.ndarray, u: np.ndarray, mu: np.ndarray, dim: int) -> float:
    """sum_a ||r_a - P_K(r_a - u_a - mu_a ||u_T,a|| e_N)||^2 (rho = 1): the unnormalised FC error squared."""
    R = r.reshape(-1, dim)
    U = u.reshape(-1, dim)
    X = R - U
    X[:, 0] -= mu * np.sqrt(np.sum(U[:, 1:] ** 2, axis=1))
    D = R - project_coulomb(X, mu)
    return float(np.sum(D * D))
