r"""The Delassus operator :math:`W = H M^{-1} H^\top`: the one home of this product in nsopt.

Its users: the one-step matrix of a Moreau–Jean step (``nsopt.modeling``, assembled rows or blocks),
the multiple-impact problem in contact coordinates (:class:`~nsopt.problems.impact.MultipleImpact`) and
the condensation of a global friction-contact problem (:meth:`GlobalFrictionContact.local`, where the
problem's H is n x m, so that W = Hᵀ M⁻¹ H is this product of its transpose).

Two forms of the same sums:

- :func:`delassus`: the rows H as one matrix (dense or CSR), M⁻¹ a diagonal or a solve;
- :func:`block_delassus_for`: the rows as blocks :math:`G_{a,s}` (interaction a, system s) with a
  diagonal :math:`M = \mathrm{diag}(D_s)`, :math:`W_{ab} = \sum_s G_{a,s} D_s^{-1} G_{b,s}^\top`,
  compiled, for many interactions of one size on systems of one size (the modeling layer's block plan).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def delassus(H, minv, *, left=None, extras=(), symmetrize: bool = False):
    r""":math:`W = L M^{-1} H^\top` (+ extra diagonal blocks), with :math:`L = H` unless ``left``.

    Parameters
    ----------
    H : (m, n) ndarray or scipy sparse matrix
        The rows (an interaction's ``G0``, stacked).
    minv : (n,) ndarray or callable
        :math:`M^{-1}`: the diagonal d of a diagonal M (W is then a scaled product, no solve), or a
        function ``X -> M⁻¹X`` of an (n, k) array (dense; a sparse H passes ``Hᵀ`` as CSC, which the
        function may solve sparse or densify).
    left : (m, n), optional
        The left factor L (rows of H scaled, say): :math:`W = L M^{-1}H^\top`.
    extras : iterable of (offset, block)
        Square blocks added on the diagonal of W at rows/columns ``offset``.
    symmetrize : bool
        Return :math:`(W + W^\top)/2` (dense), for callers that need W exactly symmetric.

    Returns
    -------
    W : (m, m) ndarray (dense H) or CSR matrix (sparse H).
    """
    L = H if left is None else left
    sparse = sp.issparse(H)
    if isinstance(minv, np.ndarray):
        d = minv
        if sparse:
            # M⁻¹Hᵀ is the transpose of H with its columns divided by d (the same products)
            Hc = sp.csr_matrix(H)
            X = sp.csr_matrix((Hc.data * (1.0 / d)[Hc.indices], Hc.indices, Hc.indptr), shape=Hc.shape).T
        else:
            Ht = np.asarray(H).T
            X = Ht / d[:, None] if Ht.ndim == 2 else Ht / d
    else:
        X = minv(H.T.tocsc() if sparse else np.asarray(H).T)
    W = L @ X
    if sparse:
        W = sp.csr_matrix(W)
        extras = list(extras)
        if extras:
            W = W.tolil()
            for o, E in extras:
                k = E.shape[0]
                W[o:o + k, o:o + k] = W[o:o + k, o:o + k].toarray() + E
            W = W.tocsr()
        return W
    W = np.asarray(W)
    for o, E in extras:
        k = E.shape[0]
        W[o:o + k, o:o + k] += E
    if symmetrize:
        W = np.ascontiguousarray(0.5 * (W + W.T))
    return W


_BLOCK: dict = {}


def block_delassus_for(m: int, n: int):
    r"""The compiled block form of :func:`delassus` for blocks of m x n (m, n frozen as constants so
    that the loops over a block are unrolled: about twice as fast for 3 x 6), one per (m, n) and
    process; see :func:`nsopt.problems._delassus_kernels.block_delassus` for its arguments."""
    f = _BLOCK.get((m, n))
    if f is None:
        from ._delassus_kernels import block_delassus_mn

        f = _BLOCK[(m, n)] = block_delassus_mn(m, n)
    return f


class DelassusFactors:
    r"""W given by its factors, :math:`W = H^\top\mathrm{diag}(m^{-1})\,H`, with H oriented as in
    :class:`~nsopt.GlobalFrictionContact` (:math:`Mv = Hr + q`, :math:`u = H^\top v + b`): H is
    nv x n, one column per contact unknown, and ``minv`` the diagonal of :math:`M^{-1}` (nv,) from
    which an assembler built W (the one-step matrix of a Moreau–Jean step on bodies of diagonal
    mass). A friction-contact problem that knows them
    (:meth:`~nsopt.problems.FrictionContact.with_delassus_factors`) lets ``nsn-ac``, ``nsn-fb`` and
    ``prox`` solve their Newton systems in the space of the nv dofs instead of the n contact
    unknowns; the problem, its error measure and the directions are unchanged.

    Parameters
    ----------
    H : (nv, n) array_like or sparse
        The factor (GlobalFrictionContact's H).
    minv : (nv,) array_like
        The diagonal of :math:`M^{-1}`, finite and > 0.
    n : int, optional
        The number of columns H must have (a problem's size).

    Attributes
    ----------
    H : (nv, n) sparse matrix
        The factor (a CSC view of ``rows``' transpose).
    rows : (n, nv) CSR matrix
        :math:`H^\top`, the contact rows (the Jacobian of the contacts' velocities), which the
        Newton systems read.
    minv : (nv,) ndarray

    Raises
    ------
    ProblemError
        For a wrong shape or non-finite entries of ``H``, or a ``minv`` of the wrong size, not
        finite or not positive.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> from nsopt.problems import DelassusFactors
    >>> f = DelassusFactors([[1.0, 0.0, 1.0], [0.0, 2.0, 1.0]], [0.5, 0.5])
    >>> f.W().toarray()
    array([[0.5, 0. , 0.5],
           [0. , 2. , 1. ],
           [0.5, 1. , 1. ]])
    """

    __slots__ = ("minv", "rows")

    def __init__(self, H, minv, n: int | None = None):
        from ..exceptions import ProblemError

        owner = "DelassusFactors"
        try:
            H = sp.csc_matrix(H, dtype=float)
        except (TypeError, ValueError) as e:
            raise ProblemError("H", f"is not a matrix of numbers ({e})", owner) from None
        if H.ndim != 2 or (n is not None and H.shape[1] != n):
            raise ProblemError("H", f"has shape {H.shape}, expected (nv, {n}): GlobalFrictionContact's "
                               "orientation, one column per contact unknown", owner)
        if not np.all(np.isfinite(H.data)):
            raise ProblemError("H", "has non-finite entries (nan or inf)", owner)
        rows = sp.csr_matrix(H.T)
        rows.sum_duplicates()
        m = np.asarray(minv, dtype=float)
        if m.shape != (H.shape[0],):
            raise ProblemError("minv", f"has shape {m.shape}, expected ({H.shape[0]},): one per row of H", owner)
        if not (np.all(np.isfinite(m)) and np.all(m > 0)):
            raise ProblemError("minv", "must be finite and > 0 (the diagonal of M^-1)", owner)
        self.rows, self.minv = rows, m

    @classmethod
    def trusted(cls, rows, minv):
        r"""From the contact rows :math:`H^\top` (n x nv, canonical CSR) and a positive ``minv`` that an
        assembler made itself, unchecked."""
        self = object.__new__(cls)
        self.rows, self.minv = rows, minv
        return self

    @property
    def H(self):
        r"""The factor H (nv x n), GlobalFrictionContact's orientation: ``rows.T`` (no copy)."""
        return self.rows.T

    @property
    def nv(self) -> int:
        """The number of dofs (rows of H)."""
        return self.rows.shape[1]

    def W(self):
        r""":math:`H^\top\mathrm{diag}(m^{-1})\,H` (CSR), by :func:`delassus` on the rows."""
        return delassus(self.rows, 1.0 / self.minv)

    def check(self, W, rtol: float = 1e-10):
        r"""Raise ProblemError unless W equals the factors' product, tested on one random vector:
        :math:`\|Wx - H^\top(m^{-1}\odot Hx)\| \le` rtol x (:math:`\|Wx\|` + its norm)."""
        from ..exceptions import ProblemError

        x = np.random.default_rng(0).standard_normal(W.shape[1])
        a = np.asarray(W @ x).ravel()
        b = self.rows @ (self.minv * (self.rows.T @ x))
        if not np.linalg.norm(a - b) <= rtol * (np.linalg.norm(a) + np.linalg.norm(b)) + 1e-300:
            raise ProblemError("H", "the factors' product H^T diag(minv) H is not the problem's W", "DelassusFactors")
