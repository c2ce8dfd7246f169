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
