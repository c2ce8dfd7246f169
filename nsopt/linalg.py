"""Small linear-algebra helpers shared by the solvers: one home for "solve, else least squares" and for
the refined solves of a final basis (Lemke, enumeration)."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

EXTENDED_MAX = 2000      # refined_solve: residuals in extended precision up to this size


def solve_or_lstsq(A, b) -> tuple[np.ndarray, bool]:
    r"""Solve :math:`A x = b`; when :math:`A` is singular (or the solve is not finite), return the
    minimum-norm least-squares solution :math:`x = A^+ b` instead.

    ``A`` is a dense ndarray or a scipy sparse matrix (sparse LU first; the least-squares fallback
    densifies, so it is meant for the small or rare singular case). Returns ``(x, exact)``, where
    ``exact`` is False when the least-squares fallback was taken.
    """
    b = np.asarray(b, dtype=float)
    if sp.issparse(A):
        from scipy.sparse.linalg import MatrixRankWarning, spsolve

        with warnings.catch_warnings():
            warnings.simplefilter("error", MatrixRankWarning)
            try:
                x = np.asarray(spsolve(sp.csc_matrix(A), b))
                if np.all(np.isfinite(x)):
                    return x.reshape(b.shape), True
            except (MatrixRankWarning, RuntimeError):
                pass
        A = A.toarray()
    A = np.asarray(A, dtype=float)
    try:
        with np.errstate(all="ignore"):
            x = np.linalg.solve(A, b)
        if np.all(np.isfinite(x)):
            return x, True
    except np.linalg.LinAlgError:
        pass
    return np.linalg.lstsq(A, b, rcond=None)[0], False


def refined_solve(A, b, rounds: int = 3) -> np.ndarray:
    r"""Solve :math:`Ax = b` by LU with iterative refinement: :math:`r = b - Ax` in extended
    precision (``np.longdouble``; in double above ``EXTENDED_MAX`` rows),
    :math:`x \leftarrow x + A^{-1} r`. Singular A: the least-squares solution
    (:func:`nsopt.linalg.solve_or_lstsq`)."""
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    if b.shape[0] == 0:
        return np.zeros(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sla.LinAlgWarning)
        try:
            lu = sla.lu_factor(A, check_finite=False)
        except (sla.LinAlgWarning, ValueError, np.linalg.LinAlgError):
            return solve_or_lstsq(A, b)[0]
    x = sla.lu_solve(lu, b, check_finite=False)
    if not np.all(np.isfinite(x)):
        return solve_or_lstsq(A, b)[0]
    # extended-precision residuals below EXTENDED_MAX rows (numpy's longdouble product has no BLAS);
    # above, fixed-precision refinement (which still gives a componentwise backward-stable x)
    ext = np.longdouble if A.shape[0] <= EXTENDED_MAX else np.float64
    Al, bl = A.astype(ext), b.astype(ext)
    for _ in range(rounds):
        r = np.asarray(bl - Al @ x.astype(ext), dtype=float)
        dx = sla.lu_solve(lu, r, check_finite=False)
        if not np.all(np.isfinite(dx)):
            break
        x = x + dx
        if np.max(np.abs(dx)) <= np.finfo(float).eps * max(np.max(np.abs(x)), np.finfo(float).tiny):
            break
    return x


def basis_solve(M, q, lo, hi, F, z) -> np.ndarray:
    r"""The point of a final basis of a box-affine problem (:math:`w = Mz + q`, :math:`z \in [lo, hi]`):
    the components outside ``F`` at the bound nearest to ``z`` (0 when both are infinite), those in
    ``F`` from :math:`M_{FF} z_F = -(q_F + M_{F\bar F} z_{\bar F})` (:func:`refined_solve`)."""
    z = np.asarray(z, dtype=float)
    F = np.asarray(F, dtype=bool)
    out = np.where(np.abs(z - lo) <= np.abs(z - hi), lo, hi)
    out = np.where(np.isfinite(out), out, 0.0)
    Fi, Ai = np.flatnonzero(F), np.flatnonzero(~F)
    rhs = -(q[Fi] + M[np.ix_(Fi, Ai)] @ out[Ai]) if Ai.size else -q[Fi]
    out[Fi] = refined_solve(M[np.ix_(Fi, Fi)], rhs)
    return out
