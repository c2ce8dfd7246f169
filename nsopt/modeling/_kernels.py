"""Compiled twin of the batched Moreau–Jean step (nsopt.modeling._batch) for the steps without contact
of linear time-invariant models; tests/test_modeling_batch.py checks it against the NumPy step."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def free_flight(q, v, p, Y0, Y1, L0, L1, first, unilateral, gh, thr, Rd, c1, c2, indptr, indices, data, b,
                nmax, Q, V, P, YR0, YR1, LR0, LR1, j0):  # pragma: no cover  (compiled)
    r"""Advance up to ``nmax`` Moreau–Jean steps while no interaction enters the index set; returns the
    number of steps taken (it stops before a step whose index set is not empty).

    Each step is the NumPy path's, without impulses: :math:`v_{free} = v - \hat M^{-1}R` (``Rd`` =
    :math:`\hat M^{-1}R`, constant), :math:`q \leftarrow q + c_1 v + c_2 v_{free}` (c1 = h(1-θ),
    c2 = hθ), :math:`v \leftarrow v_{free}`, :math:`Y_0 = Hq + b`, :math:`Y_1 = Hv` (H in CSR), the
    index set from :math:`Y_0 + \gamma h Y_1 \le` thr on each interaction's first row (``gh`` = γh).
    q, v, Y0, Y1 are updated in place, p and λ set to zero; row j0 + s of Q, V, P, YR0, YR1, LR0, LR1
    records step s.
    """
    n = q.shape[0]
    m = Y0.shape[0]
    for i in range(n):
        p[i] = 0.0
    for i in range(m):
        L0[i] = 0.0
        L1[i] = 0.0
    for s in range(nmax):
        for i in range(first.shape[0]):
            f = first[i]
            if not unilateral[i] or Y0[f] + gh * Y1[f] <= thr:
                return s
        for i in range(n):
            vf = v[i] - Rd[i]
            q[i] = q[i] + c1 * v[i] + c2 * vf
            v[i] = vf
        for r in range(m):
            s0 = 0.0
            s1 = 0.0
            for jj in range(indptr[r], indptr[r + 1]):
                s0 += data[jj] * q[indices[jj]]
                s1 += data[jj] * v[indices[jj]]
            Y0[r] = s0 + b[r]
            Y1[r] = s1
        j = j0 + s
        for i in range(n):
            Q[j, i] = q[i]
            V[j, i] = v[i]
            P[j, i] = 0.0
        for r in range(m):
            YR0[j, r] = Y0[r]
            YR1[j, r] = Y1[r]
            LR0[j, r] = 0.0
            LR1[j, r] = 0.0
    return nmax


@njit(cache=True)
def block_delassus(G, Gs, tp, tq, ta, tb, act):  # pragma: no cover  (compiled)
    r"""W of the active interactions in block form (the plan of ``BatchMoreauJean._block_plan``):
    :math:`W_{ab} = \sum_s G_{a,s}D_s^{-1}G_{b,s}^\top`, the (slot p, slot q) pairs ``tp, tq`` of the
    interactions ``ta, tb`` sorted by (a, b), ``G[p]`` the block of slot p (m x n) and ``Gs[p]`` the same
    with its columns scaled by :math:`D_s^{-1}`. Returns the CSR (indptr, indices, data), sorted."""
    m, n = G.shape[1], G.shape[2]
    n_i = act.shape[0]
    new = np.full(n_i, -1, dtype=np.int64)
    nb = 0
    for a in range(n_i):
        if act[a]:
            new[a] = nb
            nb += 1
    nblk = np.zeros(nb, dtype=np.int64)
    T = ta.shape[0]
    pa, pb = -1, -1
    for t in range(T):
        a, b = ta[t], tb[t]
        if act[a] and act[b] and (a != pa or b != pb):
            nblk[new[a]] += 1
            pa, pb = a, b
    indptr = np.zeros(nb * m + 1, dtype=np.int64)
    for A in range(nb):
        for i in range(m):
            r = A * m + i
            indptr[r + 1] = indptr[r] + nblk[A] * m
    indices = np.empty(indptr[nb * m], dtype=np.int64)
    data = np.empty(indptr[nb * m])
    pos = np.zeros(nb, dtype=np.int64)
    acc = np.zeros((m, m))
    t = 0
    while t < T:
        a, b = ta[t], tb[t]
        u = t
        while u < T and ta[u] == a and tb[u] == b:
            u += 1
        if act[a] and act[b]:
            acc[:, :] = 0.0
            for w in range(t, u):
                p, q = tp[w], tq[w]
                for i in range(m):
                    for k in range(m):
                        s = 0.0
                        for j in range(n):
                            s += G[p, i, j] * Gs[q, k, j]
                        acc[i, k] += s
            A, B = new[a], new[b]
            for i in range(m):
                base = indptr[A * m + i] + pos[A] * m
                for k in range(m):
                    indices[base + k] = B * m + k
                    data[base + k] = acc[i, k]
            pos[A] += 1
        t = u
    return indptr, indices, data
