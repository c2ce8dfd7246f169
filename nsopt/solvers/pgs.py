"""Projected Gauss–Seidel ("pgs") and projected SOR ("psor") for LCP, MLCP and relay problems.

All three kinds are box-constrained linear problems for a Gauss–Seidel sweep: row i of
``w = Mz + q`` is solved exactly for ``z_i`` and the result projected on the row's interval
(LCP ``[0, inf)``; MLCP free rows ``(-inf, inf)`` i.e. the exact 1-D solve of the equality row,
complementarity rows ``[0, inf)``; relay ``[lb_i, ub_i]``). PSOR relaxes the step by ``omega``.
The sweeps run in a compiled kernel on M in CSR (a dense M is converted once and cached on the
problem); convergence is judged by the problem's own error measure (``problem.error``), checked
after every sweep at first, then every few sweeps (at most 8) when neither history nor a callback
asks for every one.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import OptionError
from ..registry import Outcome, as_x0, register
from ..result import Status
from ._gs_kernels import pgs_sweeps

KINDS = ("lcp", "mlcp", "relay")
DEFAULT_MAX_ITER = 1000


def _split(problem):
    """(ptr, idx, val, diag, lo, hi) of the problem, computed once and cached on it."""
    def make():
        M = problem.M
        A = M.tocsr(copy=True) if sp.issparse(M) else sp.csr_matrix(np.asarray(M))
        A.sum_duplicates()
        A.sort_indices()
        diag = np.ascontiguousarray(A.diagonal(), dtype=np.float64)
        n = A.shape[0]
        if problem.kind == "lcp":
            lo, hi = np.zeros(n), np.full(n, np.inf)
        elif problem.kind == "mlcp":
            eq = np.asarray(problem.is_eq)
            lo = np.where(eq, -np.inf, 0.0)
            hi = np.full(n, np.inf)
        else:
            lo = np.array(problem.lb, dtype=np.float64)
            hi = np.array(problem.ub, dtype=np.float64)
        return (A.indptr.astype(np.int64), A.indices.astype(np.int64),
                np.ascontiguousarray(A.data, dtype=np.float64), diag, lo, hi)
    return problem.cached("gs_csr_box", make)


def _check_diag(problem, diag, lo, hi):
    """A message when a sweep cannot run (zero diagonal, or a negative one on a projected row)."""
    scale = float(np.max(np.abs(diag))) if diag.size else 0.0
    tiny = np.abs(diag) <= np.finfo(float).eps * max(scale, 1.0)
    if np.any(tiny):
        i = int(np.flatnonzero(tiny)[0])
        return f"zero diagonal entry M[{i},{i}] = {diag[i]:g}: a Gauss–Seidel row solve is impossible"
    bounded = np.isfinite(lo) | np.isfinite(hi)
    neg = bounded & (diag < 0)
    if np.any(neg):
        i = int(np.flatnonzero(neg)[0])
        return (f"negative diagonal entry M[{i},{i}] = {diag[i]:g} on a constrained row: "
                "projected Gauss–Seidel needs M_ii > 0")
    return None


def _run(problem, omega, tol, max_iter, history, callback, z0):
    n = problem.size
    max_iter = DEFAULT_MAX_ITER if max_iter is None else int(max_iter)
    z = as_x0(z0, n, "z0")
    ptr, idx, val, diag, lo, hi = _split(problem)
    hist = [] if history else None
    msg = _check_diag(problem, diag, lo, hi)
    if msg:
        return Outcome(x={"z": z}, status=Status.NUMERICAL_ERROR, nit=0, history=hist, message=msg)
    np.clip(z, lo, hi, out=z)
    err = problem.error(z)
    if err <= tol:
        return Outcome(x={"z": z}, status=Status.SOLVED, nit=0, history=hist,
                       message="initial guess solves the problem", info={"error": err})
    best_z, best_err = z.copy(), err
    every = history or callback is not None
    k, chunk = 0, 1
    status, message = Status.MAX_ITER, f"no convergence in {max_iter} sweeps"
    while k < max_iter:
        c = 1 if every else min(chunk, max_iter - k)
        pgs_sweeps(ptr, idx, val, diag, problem.q, lo, hi, z, float(omega), c)
        k += c
        chunk = min(2 * chunk, 8)
        err = problem.error(z)
        if hist is not None:
            hist.append(err)
        if not np.isfinite(err):
            status, message = Status.NUMERICAL_ERROR, f"non-finite iterate after {k} sweeps (divergence)"
            break
        if err < best_err:
            best_z, best_err = z.copy(), err
        if err <= tol:
            status, message = Status.SOLVED, f"error {err:.3g} <= tol after {k} sweeps"
            break
        if callback is not None:
            try:
                callback(k, {"z": z.copy()}, err)
            except StopIteration:
                status, message = Status.CALLBACK_STOP, f"stopped by the callback after {k} sweeps"
                break
    if status is not Status.SOLVED and best_err < err:
        z = best_z
    return Outcome(x={"z": z}, status=status, nit=k, history=hist, message=message,
                   info={"error": min(err, best_err) if np.isfinite(err) else best_err, "omega": omega})


@register(KINDS, "pgs", "projected Gauss–Seidel (compiled sweeps; MLCP free rows solved exactly, "
          "relay rows projected on [lb, ub])")
def pgs(problem, *, tol, max_iter, history=False, callback=None, z0=None):
    """Projected Gauss–Seidel. Options: ``z0`` initial guess (default 0), projected on the box first."""
    return _run(problem, 1.0, tol, max_iter, history, callback, z0)


@register(KINDS, "psor", "projected successive over-relaxation (PGS with relaxation omega in (0, 2))")
def psor(problem, *, tol, max_iter, history=False, callback=None, z0=None, omega=1.2):
    """Projected SOR: ``z_i <- P(z_i - omega w_i / M_ii)``. Options: ``z0``, ``omega`` in (0, 2)."""
    if not isinstance(omega, (int, float, np.floating)) or not 0.0 < float(omega) < 2.0:
        raise OptionError(f"psor: omega must be a number in (0, 2), got {omega!r}")
    return _run(problem, float(omega), tol, max_iter, history, callback, z0)
