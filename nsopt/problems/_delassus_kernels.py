"""Compiled loops of :mod:`nsopt.problems._delassus`: the block form of W = H M⁻¹ Hᵀ."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(inline="always")
def block_row_ptr(indptr, counts, m, per):  # pragma: no cover  (compiled)
    """CSR ``indptr`` of block rows of m rows each, row block A holding ``counts[A] * per`` entries a row."""
    indptr[0] = 0
    for A in range(counts.shape[0]):
        for i in range(m):
            indptr[A * m + i + 1] = indptr[A * m + i] + counts[A] * per


@njit(inline="always")
def block_delassus(m, n, G, dinv, slot_p, slot_q, run, mirror, inter_a, inter_b, act):  # pragma: no cover  (compiled)
    r"""W of the active interactions in block form (the modeling layer's block plan, ``nsopt.modeling._stepper``):
    :math:`W_{ab} = \sum_s G_{a,s}D_s^{-1}G_{b,s}^\top`. The pairs of slots ``(slot_p[w], slot_q[w])``
    (a slot: one (interaction, system) block) of the interactions ``(inter_a[w], inter_b[w])`` are sorted
    by (a, b) and cut into runs of one (a, b) (``run``: the starts);
    ``mirror[r]`` is the run of (b, a). ``G[p]`` is the block of slot p (m x n), ``dinv[p]`` (n,) the
    inverse diagonal :math:`D_s^{-1}` of its system. Blocks with a <= b are summed, the others are copied
    transposed from their mirror (W is symmetric; the mirror comes first in the (a, b) order).
    Returns the CSR (indptr, indices, data), canonical. Inlined into :func:`block_delassus_mn`
    (m, n compile-time constants: the small loops unrolled)."""
    n_i = act.shape[0]
    new = np.empty(n_i, dtype=np.int64)
    nb = 0
    for a in range(n_i):
        new[a] = -1
        if act[a]:
            new[a] = nb
            nb += 1
    nruns = run.shape[0] - 1
    nblk = np.zeros(nb, dtype=np.int64)
    for r in range(nruns):
        a, b = inter_a[run[r]], inter_b[run[r]]
        if act[a] and act[b]:
            nblk[new[a]] += 1
    indptr = np.zeros(nb * m + 1, dtype=np.int32)
    block_row_ptr(indptr, nblk, m, m)
    indices = np.empty(indptr[nb * m], dtype=np.int32)
    data = np.empty(indptr[nb * m])
    pos = np.zeros(nb, dtype=np.int64)
    start = np.zeros(nruns, dtype=np.int64)      # run r's block: data[start[r] + i * row length + k]
    for r in range(nruns):
        a, b = inter_a[run[r]], inter_b[run[r]]
        if not (act[a] and act[b]):
            continue
        A, B = new[a], new[b]
        base = indptr[A * m] + pos[A] * m
        start[r] = base
        rowlen = nblk[A] * m
        if a <= b:
            for i in range(m):
                for k in range(m):
                    s = 0.0
                    for w in range(run[r], run[r + 1]):
                        p, q = slot_p[w], slot_q[w]
                        for j in range(n):
                            s += G[p, i, j] * (G[q, k, j] * dinv[q, j])
                    data[base + i * rowlen + k] = s
        else:
            bm, rowlen_m = start[mirror[r]], nblk[B] * m
            for i in range(m):
                for k in range(m):
                    data[base + i * rowlen + k] = data[bm + k * rowlen_m + i]
        for i in range(m):
            for k in range(m):
                indices[base + i * rowlen + k] = B * m + k
        pos[A] += 1
    return indptr, indices, data


def block_delassus_mn(m: int, n: int):
    """:func:`block_delassus` compiled for blocks of m x n (m, n closure constants: the loops over a
    block unrolled), cached on disk per (m, n)."""
    @njit(cache=True)
    def f(G, dinv, slot_p, slot_q, run, mirror, inter_a, inter_b, act):  # pragma: no cover  (compiled)
        return block_delassus(m, n, G, dinv, slot_p, slot_q, run, mirror, inter_a, inter_b, act)
    return f
