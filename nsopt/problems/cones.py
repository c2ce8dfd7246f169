"""Coulomb cones: projection, natural-map residual and the friction-contact error (Siconos' formulas).

Each formula is written once, compiled, in :mod:`nsopt.problems._measures` (``proj_cone``,
``nat_map_sq``, ``fc_error``): these functions call it, and so do the solvers' kernels.
"""

from __future__ import annotations

import numpy as np

from . import _measures as _M


def _floats(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def project_coulomb(X: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Project each row x = (x_N, x_T) of ``X`` (shape nc x dim) on K_mu = {||x_T|| <= mu x_N}.

    As Siconos' ``projectionOnCone``: 0 if mu ||x_T|| <= -x_N (polar cone), x if ||x_T|| <= mu x_N,
    else x_N' = (mu ||x_T|| + x_N) / (1 + mu^2), x_T' = mu x_N' x_T / ||x_T|| (2-D: |x_T| and
    sign(x_T), as Siconos' fc2d: no overflow in x_T^2).
    """
    X = _floats(X)
    out = np.empty_like(X)
    _M.project_rows(X, _floats(np.broadcast_to(mu, X.shape[:1])), out)
    return out


def natural_map_sq(r: np.ndarray, u: np.ndarray, mu: np.ndarray, dim: int) -> float:
    """sum_a ||r_a - P_K(r_a - u_a - mu_a ||u_T,a|| e_N)||^2 (rho = 1): the unnormalised FC error squared."""
    return float(_M.natural_map_sum(_floats(r), _floats(u), _floats(mu), int(dim)))


def fc_error(r: np.ndarray, u: np.ndarray, mu: np.ndarray, dim: int, qnorm: float) -> float:
    r"""Siconos' friction-contact error (``fc3d_compute_error``) of (r, u):
    :math:`\sqrt{\sum_a \|r_a - P_{K_{\mu_a}}(r_a - \hat u_a)\|^2} / \max(\|q\|, \|r\|, \|u\|)`,
    the division only when that maximum exceeds DBL_EPSILON (``qnorm`` = :math:`\|q\|`)."""
    return float(_M.fc_error_of(int(dim), _floats(r), _floats(u), _floats(mu), float(qnorm)))
