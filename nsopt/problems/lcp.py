"""Linear complementarity problem."""

from __future__ import annotations

import numpy as np

from ._base import AffineProblem, affine, as_square_system, check_input, norm2
from ._measures import lcp_error as _lcp_error


class LCP(AffineProblem):
    r"""Linear complementarity problem (Siconos ``LinearComplementarityProblem``).

    .. math::  w = Mz + q,\qquad 0 \le z \perp w \ge 0.

    Parameters
    ----------
    M : (n, n) array_like or scipy.sparse matrix
        The matrix; a sparse matrix is kept sparse (never silently densified).
    q : (n,) array_like
        The vector.

    Raises
    ------
    ProblemError
        When a field has the wrong shape or non-finite entries (the message names the field).

    See Also
    --------
    nsopt.solve : methods ``qp`` (symmetric PSD M), ``lemke``, ``enum``, ``newton-fb``, ``pgs``, ``psor``.

    Notes
    -----
    Error measure (Siconos ``lcp_compute_error``): :math:`\|z - \max(0, z - w)\|_2 / \|q\|_2`, the
    division only when :math:`\|q\|_2` exceeds DBL_EPSILON (:func:`lcp_error`).

    Examples
    --------
    >>> import nsopt
    >>> p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    >>> p
    LCP(n=2, dense)
    >>> s = nsopt.solve(p, method="lemke")
    >>> print(s.status.value, s.z.round(6), s.w.round(6))
    solved [1.333333 2.333333] [0. 0.]
    >>> p.error([1.0, 1.0]) > 0 == p.error(s.z)
    True
    """

    kind = "lcp"
    _fields = ("M", "q")

    def __init__(self, M, q):
        M, q = as_square_system(M, q, "LCP")
        self.__dict__.update(M=M, q=q, _store={}, _frozen=True)

    def replace(self, **changes):
        """As :meth:`Problem.replace`; ``replace(q=...)`` (the re-solve of a time-stepping loop) checks
        only q and shares M and the cache as they are."""
        if len(changes) != 1 or "q" not in changes:
            return super().replace(**changes)
        return self._with_vector("q", changes["q"], "LCP")


    def error(self, z, w=None) -> float:
        """Siconos' LCP error of z (w is recomputed as Mz + q, as Siconos does)."""
        z = check_input(z, "z", "LCP", self.size)
        return lcp_error(z, affine(self.M, z, self.q), norm2(self.q))

    def __repr__(self):
        return f"LCP(n={self.size}, {'sparse' if hasattr(self.M, 'nnz') else 'dense'})"


def lcp_error(z: np.ndarray, w: np.ndarray, qnorm: float) -> float:
    r"""Siconos' LCP error (``lcp_compute_error``) of (z, w): :math:`\|z - \max(0, z - w)\|_2 / \|q\|_2`,
    the division only when :math:`\|q\|_2` (``qnorm``) exceeds DBL_EPSILON. The one home of this
    formula (compiled: :func:`nsopt.problems._measures.lcp_error`, which the kernels call too): methods
    that track w themselves call it rather than write it again."""
    return float(_lcp_error(np.ascontiguousarray(z, dtype=np.float64), np.ascontiguousarray(w, dtype=np.float64),
                            float(qnorm)))
