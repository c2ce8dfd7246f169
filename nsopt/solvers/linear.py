"""Equality problems Mz + q = 0: a direct linear solve (least squares when M is singular)."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from ..exceptions import NsoptWarning
from ..registry import Outcome, register
from ..result import Status


@register("equality", "linear", "direct solve of Mz = -q (sparse LU or dense LU; least squares if singular)")
def linear(problem, *, tol, max_iter, history=False, callback=None):
    M, q = problem.M, np.asarray(problem.q)
    if sp.issparse(M):
        from scipy.sparse.linalg import MatrixRankWarning, spsolve

        with warnings.catch_warnings():
            warnings.simplefilter("error", MatrixRankWarning)
            try:
                z = spsolve(sp.csc_matrix(M), -q)
                if np.all(np.isfinite(z)):
                    return Outcome({"z": np.asarray(z)}, Status.SOLVED, 1)
            except MatrixRankWarning:
                pass
        M = M.toarray()
    try:
        z = np.linalg.solve(M, -q)
        return Outcome({"z": z}, Status.SOLVED, 1)
    except np.linalg.LinAlgError:
        warnings.warn("Equality: M is singular; returning the least-squares solution", NsoptWarning, stacklevel=3)
        z, *_ = np.linalg.lstsq(M, -q, rcond=None)
        return Outcome({"z": z}, Status.SOLVED, 1, message="singular M: least-squares solution")
