"""Compiled twin of the batched Moreau–Jean step (nsopt.modeling._batch) for the steps without contact
of linear time-invariant models; tests/test_modeling_batch.py checks it against the NumPy step."""

from __future__ import annotations

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
