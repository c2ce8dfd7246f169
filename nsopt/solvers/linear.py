"""Equality problems Mz + q = 0: a direct linear solve (least squares when M is singular)."""

from __future__ import annotations

import warnings

import numpy as np

from ..exceptions import NsoptWarning
from ..linalg import solve_or_lstsq
from ..registry import register
from ..result import Status


@register("equality", "linear", "direct solve of Mz = -q (sparse LU or dense LU; least squares if singular)")
def linear(problem, mon):
    """One iteration: z = -M⁻¹q (:func:`nsopt.linalg.solve_or_lstsq`; the minimum-norm least-squares
    solution, with an :class:`NsoptWarning`, when M is singular). ``history[0]`` is the error of
    the warm start (default 0); ``max_iter=0`` returns the warm start.

    {solve_contract}
    >>> p = nsopt.Equality([[2.0, 1.0], [1.0, 2.0]], [-3.0, -3.0])
    >>> s = nsopt.solve(p, method="linear", tol=1e-10)
    >>> print(s.status.value, s.z.round(6))
    solved [1. 1.]
    """
    z = mon.start_vector("z", problem.size)
    if mon.start({"z": z}, problem.error(z)):
        return mon.solution()
    z, exact = solve_or_lstsq(problem.M, -np.asarray(problem.q))
    if not exact:
        warnings.warn("Equality: M is singular; returning the least-squares solution", NsoptWarning, stacklevel=3)
    if not mon.step({"z": z}, problem.error(z)):
        mon.stop(Status.SOLVED)   # the one solve is done; solve() judges it by the error measure
    return mon.solution(message="" if exact else "singular M: least-squares solution")
