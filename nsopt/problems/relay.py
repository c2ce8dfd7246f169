"""Relay problem and the equality problem."""

from __future__ import annotations

import numpy as np

from ._base import AffineProblem, affine, as_bounds, as_square_system, check_input, norm2


class Relay(AffineProblem):
    r"""Relay problem (Siconos ``RelayProblem``): a box-constrained affine variational inequality.

    .. math::  w = Mz + q,\qquad -w \in N_{[lb, ub]}(z),

    i.e. for each i: lb_i < z_i < ub_i and w_i = 0, or z_i = lb_i and w_i >= 0, or z_i = ub_i and
    w_i <= 0.

    Parameters
    ----------
    M : (n, n) array_like or sparse
    q : (n,) array_like
    lb, ub : (n,) array_like or float
        The box, ``lb <= ub`` (a scalar applies to every entry; infinite bounds are allowed).

    Raises
    ------
    ProblemError
        For wrong shapes, non-finite M or q, or ``lb > ub`` somewhere (the message names the index).

    Notes
    -----
    Error measure (Siconos ``relay_compute_error``): :math:`\|z - \Pi_{[lb,ub]}(z - w)\|_2 / (1 + \|q\|_2)`.

    Examples
    --------
    The worked example of ``formulations/relay.md``:

    >>> import nsopt
    >>> p = nsopt.Relay([[2.0, 1.0], [1.0, 2.0]], [-3.0, 3.0], lb=[-1.0, -1.0], ub=[1.0, 1.0])
    >>> s = nsopt.solve(p, method="lemke")
    >>> print(s.status.value, s.z.round(6), s.w.round(6))
    solved [ 1. -1.] [-2.  2.]
    """

    kind = "relay"
    _fields = ("M", "q", "lb", "ub")

    def __init__(self, M, q, lb, ub):
        M, q = as_square_system(M, q, "Relay")
        n = M.shape[0]
        lb, ub = as_bounds(lb, ub, n, "Relay")
        self.M, self.q, self.lb, self.ub = M, q, lb, ub
        self._freeze()



    def error(self, z, w=None) -> float:
        z = check_input(z, "z", "Relay", self.size)
        w = affine(self.M, z, self.q)
        e = norm2(z - np.clip(z - w, self.lb, self.ub))
        return e / (1.0 + norm2(self.q))

    def __repr__(self):
        return f"Relay(n={self.size})"


class Equality(AffineProblem):
    r"""Linear equality problem :math:`Mz + q = 0` (Siconos' equality block).

    Parameters
    ----------
    M : (n, n) array_like or sparse
    q : (n,) array_like

    Notes
    -----
    Error measure: :math:`\|Mz + q\|_2 / (1 + \|q\|_2)`; Siconos has no standalone equality error
    function, and this is the normalisation its generic-mechanical blocks use for the other kinds
    (inside a :class:`GenericMechanical` problem an equality block is judged by :math:`\max_i |w_i|`,
    as Siconos does).

    Examples
    --------
    >>> import nsopt
    >>> s = nsopt.solve(nsopt.Equality([[2.0, 0.0], [0.0, 4.0]], [-2.0, -2.0]))
    >>> print(s.method, s.z)
    auto:linear [1.  0.5]
    """

    kind = "equality"
    _fields = ("M", "q")

    def __init__(self, M, q):
        M, q = as_square_system(M, q, "Equality")
        self.M, self.q = M, q
        self._freeze()



    def error(self, z, w=None) -> float:
        return norm2(self.w(z)) / (1.0 + norm2(self.q))

    def __repr__(self):
        return f"Equality(n={self.size})"
