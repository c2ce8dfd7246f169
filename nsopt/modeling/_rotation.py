r"""Unit quaternions and rotations on stacked arrays, in Siconos' conventions (one home for these formulas).

A quaternion is ``(w, x, y, z)``; a pose q is ``(x, y, z, qw, qx, qy, qz)``; a twist v is
``(vx, vy, vz, ωx, ωy, ωz)`` with the linear velocity in the world frame and the angular velocity in the
body frame. Every function takes arrays of any leading shape (``(..., 4)``, ``(..., 7)``), so one call
serves one body or a thousand.
"""

from __future__ import annotations

import numpy as np


def quat_mul(a, b) -> np.ndarray:
    """Hamilton product a ⊗ b of quaternions (..., 4)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def quat_conj(a) -> np.ndarray:
    """Conjugate (the inverse of a unit quaternion)."""
    a = np.array(a, dtype=float)
    a[..., 1:] *= -1.0
    return a


def rotation_matrix(quat) -> np.ndarray:
    """R(q) (..., 3, 3), body to world, of unit quaternions (..., 4) (Siconos ``computeRotationMatrix``)."""
    quat = np.asarray(quat, dtype=float)
    w, x, y, z = quat[..., 0], quat[..., 1], quat[..., 2], quat[..., 3]
    R = np.empty(quat.shape[:-1] + (3, 3))
    R[..., 0, 0] = 1 - 2 * (y * y + z * z)
    R[..., 0, 1] = 2 * (x * y - w * z)
    R[..., 0, 2] = 2 * (x * z + w * y)
    R[..., 1, 0] = 2 * (x * y + w * z)
    R[..., 1, 1] = 1 - 2 * (x * x + z * z)
    R[..., 1, 2] = 2 * (y * z - w * x)
    R[..., 2, 0] = 2 * (x * z - w * y)
    R[..., 2, 1] = 2 * (y * z + w * x)
    R[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def rotate(quat, vec) -> np.ndarray:
    """R(q) v for quaternions (..., 4) and vectors (..., 3)."""
    return np.einsum("...ij,...j->...i", rotation_matrix(quat), np.asarray(vec, dtype=float))


def quat_exp(phi) -> np.ndarray:
    r"""The unit quaternion of the rotation vector φ (..., 3): :math:`(\cos\frac{|φ|}{2}, \sin\frac{|φ|}{2}\,φ/|φ|)`."""
    phi = np.asarray(phi, dtype=float)
    a = np.linalg.norm(phi, axis=-1)
    half = 0.5 * a
    # sin(a/2)/a, continued by its series near 0
    s = np.where(a > 1e-8, np.sin(half) / np.where(a > 1e-8, a, 1.0), 0.5 - a * a / 48.0)
    return np.concatenate([np.cos(half)[..., None], s[..., None] * phi], axis=-1)


def skew(v) -> np.ndarray:
    """The cross-product matrix [v]× (..., 3, 3): skew(a) @ b = a × b."""
    v = np.asarray(v, dtype=float)
    S = np.zeros(v.shape[:-1] + (3, 3))
    S[..., 0, 1], S[..., 0, 2] = -v[..., 2], v[..., 1]
    S[..., 1, 0], S[..., 1, 2] = v[..., 2], -v[..., 0]
    S[..., 2, 0], S[..., 2, 1] = -v[..., 1], v[..., 0]
    return S


def T_matrix(q) -> np.ndarray:
    r"""Siconos' T(q) (..., 7, 6): :math:`\dot q = T(q)\,v`, the identity on the position and
    :math:`\dot{\mathbf q} = \frac12\,\mathbf q \otimes (0, ω)` on the quaternion (ω in the body frame)."""
    q = np.asarray(q, dtype=float)
    w, x, y, z = (0.5 * q[..., k] for k in range(3, 7))
    T = np.zeros(q.shape[:-1] + (7, 6))
    T[..., 0, 0] = T[..., 1, 1] = T[..., 2, 2] = 1.0
    T[..., 3, 3], T[..., 3, 4], T[..., 3, 5] = -x, -y, -z
    T[..., 4, 3], T[..., 4, 4], T[..., 4, 5] = w, -z, y
    T[..., 5, 3], T[..., 5, 4], T[..., 5, 5] = z, w, -x
    T[..., 6, 3], T[..., 6, 4], T[..., 6, 5] = -y, x, w
    return T


def qdot(q, v) -> np.ndarray:
    """T(q) v without forming T: (..., 7)."""
    q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
    omega = np.concatenate([np.zeros(v.shape[:-1] + (1,)), v[..., 3:6]], axis=-1)
    return np.concatenate([v[..., :3], 0.5 * quat_mul(q[..., 3:7], omega)], axis=-1)


def normalize_q(q) -> np.ndarray:
    """The pose with its quaternion scaled to unit norm (Siconos ``normalizeq``); a copy."""
    q = np.array(q, dtype=float)
    nrm = np.linalg.norm(q[..., 3:7], axis=-1, keepdims=True)
    q[..., 3:7] /= nrm
    return q


def exp_step(q, v, eps) -> np.ndarray:
    r"""The pose reached from q along the twist v for a time eps, exactly for a constant twist:
    :math:`x + ε v_{lin}`, :math:`\mathbf q \otimes \exp(ε ω/2)` (the exponential map; finite-difference
    checks of twist Jacobians go through it)."""
    q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
    out = np.array(q, dtype=float)
    out[..., :3] = q[..., :3] + eps * v[..., :3]
    out[..., 3:7] = quat_mul(q[..., 3:7], quat_exp(eps * v[..., 3:6]))
    return out


def ortho_base(n) -> tuple[np.ndarray, np.ndarray]:
    """Two unit tangents (t1, t2) completing the unit normal n (..., 3) into a right-handed frame, built as
    Siconos 4.4 builds it (``orthoBaseFromVector``, numerics/src/tools/op3x3.h): t1 ⊥ n from the largest
    component of n, t2 = n × t1.

    One correction: where |nz| is the largest, 4.4 takes t1 ∝ (0, -nz, nx), which is not orthogonal to n
    unless nx = ny (a Siconos 4.4 bug: its contact frame is skewed for tilted normals; checked against
    Siconos' own NewtonEuler3DR in tests/test_modeling_newton_euler.py); nsopt takes t1 ∝ (0, -nz, ny). The
    frames agree wherever 4.4's is orthonormal (the x- and y-largest cases, and nx = ny, e.g. n = ±z)."""
    n = np.asarray(n, dtype=float)
    ax, ay, az = np.abs(n[..., 0]), np.abs(n[..., 1]), np.abs(n[..., 2])
    zero = np.zeros_like(n[..., 0])
    # the three cases of op3x3.h: x largest, y largest, z largest (ties go as there)
    xbig = (ax > ay) & (ax > az)
    ybig = ~(ax > ay) & (ay > az)
    t1 = np.where(xbig[..., None], np.stack([n[..., 1], -n[..., 0], zero], -1),
                  np.where(ybig[..., None], np.stack([-n[..., 1], n[..., 0], zero], -1),
                           np.stack([zero, -n[..., 2], n[..., 1]], -1)))
    t1 = t1 / np.linalg.norm(t1, axis=-1, keepdims=True)
    return t1, np.cross(n, t1)
