"""Projected Gauss–Seidel ("pgs") and projected SOR ("psor") for LCP, MLCP and relay problems.

All three kinds are box-constrained linear problems for a Gauss–Seidel sweep: row i of
``w = Mz + q`` is solved exactly for ``z_i`` and the result projected on the row's interval
(LCP ``[0, inf)``; MLCP free rows ``(-inf, inf)`` i.e. the exact 1-D solve of the equality row,
complementarity rows ``[0, inf)``; relay ``[lb_i, ub_i]``). PSOR relaxes the step by ``omega``.
The sweeps run in a compiled kernel on M in CSR (a dense M is converted once and cached on the
problem); convergence is judged by the problem's own error measure (``problem.error``), after every
chunk of sweeps that the iteration contract (:class:`nsopt.monitor.Monitor`) asks for: one sweep when
a history or a callback wants every one, else chunks of about 20 ms.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import OptionError
from ..registry import register
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
    return problem.cached("gs_csr_box", make, on=tuple(f for f in problem._fields if f != "q"))


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


def _run(problem, mon, omega):
    n = problem.size
    mon.budget(DEFAULT_MAX_ITER)
    z = mon.start_vector("z", n)
    ptr, idx, val, diag, lo, hi = _split(problem)
    msg = _check_diag(problem, diag, lo, hi)
    if msg:
        return mon.solution(x={"z": z}, status=Status.NUMERICAL_ERROR, message=msg)
    np.clip(z, lo, hi, out=z)
    if mon.start({"z": z}, problem.error(z)):
        return mon.solution(info={"omega": omega})
    q = problem.q
    while not mon.stopped:
        c = mon.chunk(per_iteration_errors=False, work=val.shape[0] + n)   # deterministic sizes
        pgs_sweeps(ptr, idx, val, diag, q, lo, hi, z, float(omega), c)
        mon.step({"z": z}, problem.error(z), c)
    return mon.solution(info={"omega": omega})


@register(KINDS, "pgs", "projected Gauss–Seidel (compiled sweeps; MLCP free rows solved exactly, "
          "relay rows projected on [lb, ub])")
def pgs(problem, mon):
    """Projected Gauss–Seidel, from the warm start (default 0) projected on the box.

    {solve_contract}
    >>> p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    >>> s = nsopt.solve(p, method="pgs", tol=1e-10)
    >>> print(s.status.value, s.z.round(6))
    solved [1.333333 2.333333]
    """
    return _run(problem, mon, 1.0)


@register(KINDS, "psor", "projected successive over-relaxation (PGS with relaxation omega in (0, 2))")
def psor(problem, mon, *, omega=1.2):
    """Projected SOR: ``z_i <- P(z_i - omega w_i / M_ii)``. Options: ``omega`` in (0, 2).

    {solve_contract}
    >>> p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    >>> s = nsopt.solve(p, method="psor", tol=1e-10)
    >>> print(s.status.value, s.z.round(6))
    solved [1.333333 2.333333]
    """
    if isinstance(omega, bool) or not isinstance(omega, (int, float, np.floating)) or not 0.0 < float(omega) < 2.0:
        raise OptionError(f"psor: omega must be a number in (0, 2), got {omega!r}")
    return _run(problem, mon, float(omega))
