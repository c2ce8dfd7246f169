"""Coulomb cones: projection, natural-map residual and the friction-contact error (Siconos' formulas).

The one NumPy home of this math; the compiled twins used inside the numba kernels are in
:mod:`nsopt.solvers._gs_kernels` (``proj_cone``, ``nat_map_sq``, ``fc_error``), and
``tests/test_kernels_twin.py`` checks that they give the same numbers.
"""

from __future__ import annotations

import math

import numpy as np

from ._base import EPS, norm2


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
    # (np.where, not products with 0/1 masks: 0 * inf would be nan where Siconos gives 0 or inf)
    bnd = ~(polar | inside)
    P = np.where((inside & ~polar)[:, None], X, 0.0)
    P[:, 0] += np.where(bnd, pN, 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        if two_d:
            P[:, 1] += np.where(bnd, mu * pN * np.sign(xT[:, 0]), 0.0)
        else:
            P[:, 1:] += np.where(bnd[:, None], scale[:, None] * xT, 0.0)
    return P


def natural_map_sq(r: np.ndarray, u: np.ndarray, mu: np.ndarray, dim: int) -> float:
    """sum_a ||r_a - P_K(r_a - u_a - mu_a ||u_T,a|| e_N)||^2 (rho = 1): the unnormalised FC error squared."""
    R = r.reshape(-1, dim)
    U = u.reshape(-1, dim)
    UT = U[:, 1:]
    X = R - U
    X[:, 0] -= mu * (np.abs(UT[:, 0]) if dim == 2 else np.sqrt(np.einsum("ij,ij->i", UT, UT)))
    D = R - project_coulomb(X, mu)
    return float(np.einsum("ij,ij->", D, D))


def fc_error(r: np.ndarray, u: np.ndarray, mu: np.ndarray, dim: int, qnorm: float) -> float:
    r"""Siconos' friction-contact error (``fc3d_compute_error``) of (r, u):
    :math:`\sqrt{\sum_a \|r_a - P_{K_{\mu_a}}(r_a - \hat u_a)\|^2} / \max(\|q\|, \|r\|, \|u\|)`,
    the division only when that maximum exceeds DBL_EPSILON (``qnorm`` = :math:`\|q\|`)."""
    e = math.sqrt(natural_map_sq(r, u, mu, dim))
    scale = max(qnorm, norm2(r), norm2(u))
    return e / scale if scale > EPS else e
