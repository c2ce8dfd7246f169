"""Small linear-algebra helpers shared by the solvers: one home for "solve, else least squares"."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp


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
