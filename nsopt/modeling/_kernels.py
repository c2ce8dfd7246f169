"""Compiled twin of the batched Moreau–Jean step (nsopt.modeling._batch) for the steps without contact
of linear time-invariant models; tests/test_modeling_batch.py checks it against the NumPy step."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def free_flight(buf, nd, first, unilateral, gh, thr, Rd, c1, c2, indptr, indices, data, b, nmax, rec,
                j0):  # pragma: no cover  (compiled)
    r"""Advance up to ``nmax`` Moreau–Jean steps while no interaction enters the index set; returns the
    number of steps taken (it stops before a step whose index set is not empty).

    ``buf`` is the stacked state (q, v, p, y0, y1, λ0, λ1), nd = len(q), updated in place. Each step is
    the NumPy path's, without impulses: :math:`v_{free} = v - \hat M^{-1}R` (``Rd`` =
    :math:`\hat M^{-1}R`, constant), :math:`q \leftarrow q + c_1 v + c_2 v_{free}` (c1 = h(1-θ),
    c2 = hθ), :math:`v \leftarrow v_{free}`, :math:`Y_0 = Hq + b`, :math:`Y_1 = Hv` (H in CSR), p = λ = 0;
    the index set from :math:`Y_0 + \gamma h Y_1 \le` thr on each interaction's first row (``gh`` = γh).
    Row j0 + s of ``rec`` records step s.
    """
    m = b.shape[0]
    nmax = min(nmax, rec.shape[0] - j0)       # never past the reserved rows
    if rec.shape[1] != buf.shape[0]:
        return 0
    q0, v0, p0, y0, y1 = 0, nd, 2 * nd, 3 * nd, 3 * nd + m
    for i in range(nd):
        buf[p0 + i] = 0.0
    for i in range(3 * nd + 2 * m, 3 * nd + 4 * m):
        buf[i] = 0.0
    for s in range(nmax):
        for i in range(first.shape[0]):
            f = first[i]
            if not unilateral[i] or buf[y0 + f] + gh * buf[y1 + f] <= thr:
                return s
        for i in range(nd):
            vf = buf[v0 + i] - Rd[i]
            buf[q0 + i] = buf[q0 + i] + c1 * buf[v0 + i] + c2 * vf
            buf[v0 + i] = vf
        for r in range(m):
            s0 = 0.0
            s1 = 0.0
            for jj in range(indptr[r], indptr[r + 1]):
                s0 += data[jj] * buf[q0 + indices[jj]]
                s1 += data[jj] * buf[v0 + indices[jj]]
            buf[y0 + r] = s0 + b[r]
            buf[y1 + r] = s1
        rec[j0 + s, :] = buf
    return nmax


@njit(cache=True)
def lean_pre(buf, nd, first, unil_off, gh, thr, Rd, vfree, act, last, Ha, e, rows, qout, warm,
             wout):  # pragma: no cover  (compiled)
    r"""The start of a step of a linear time-invariant model (``BatchMoreauJean.lean_step``):
    :math:`v_{free} = v - \hat M^{-1}R` into ``vfree``, the index set into ``act``. Returns 0 when it
    is empty; 1 when it equals ``last`` (the previous contact step's), with
    :math:`q = H_a v_{free} + e \odot \dot y_k` on its rows (``Ha`` dense, ``rows`` of y) written
    into ``qout`` and the warm starts of those rows (from ``warm``) into ``wout``; 2 for another
    index set (neither computed)."""
    m = (buf.shape[0] - 3 * nd) // 4
    y0, y1 = 3 * nd, 3 * nd + m
    for i in range(nd):
        vfree[i] = buf[nd + i] - Rd[i]
    c = 0
    same = last.shape[0] == first.shape[0]
    for i in range(first.shape[0]):
        f = first[i]
        a = unil_off[i] or buf[y0 + f] + gh * buf[y1 + f] <= thr
        act[i] = a
        c += a
        if same and last[i] != a:
            same = False
    if c == 0:
        return 0
    if not same:
        return 2
    lean_q(Ha, vfree, e, buf, nd, rows, qout)
    for r in range(rows.shape[0]):
        wout[r] = warm[rows[r]]
    return 1


@njit(cache=True)
def lean_q(Ha, vfree, e, buf, nd, rows, out):  # pragma: no cover  (compiled)
    r""":math:`q = H_a v_{free} + e \odot \dot y_k` on the active rows (H_a dense, ``rows`` of y) into ``out``."""
    m = (buf.shape[0] - 3 * nd) // 4
    y1 = 3 * nd + m
    for r in range(Ha.shape[0]):
        s = 0.0
        for j in range(Ha.shape[1]):
            s += Ha[r, j] * vfree[j]
        out[r] = s + e[r] * buf[y1 + rows[r]]


@njit(cache=True)
def lean_post(buf, out, nd, vfree, lam, rows, Ha, d, c1, c2, Hd, b, warm):  # pragma: no cover  (compiled)
    r"""The end of the step: :math:`p = H_a^\top\lambda`, :math:`v = v_{free} + \hat M^{-1}p`,
    :math:`q \leftarrow q + c_1 v_k + c_2 v`, :math:`Y_0 = Hq + b`, :math:`Y_1 = Hv`, λ on the active
    rows: the new stacked state written into ``out`` (``buf``, the old one, is left as it was);
    λ also into the warm starts ``warm`` of those rows."""
    m = b.shape[0]
    for j in range(nd):
        s = 0.0
        for r in range(Ha.shape[0]):
            s += Ha[r, j] * lam[r]
        vn = vfree[j] + s / d[j]
        out[2 * nd + j] = s
        out[nd + j] = vn
        out[j] = buf[j] + c1 * buf[nd + j] + c2 * vn
    for r in range(m):
        s0 = 0.0
        s1 = 0.0
        for j in range(nd):
            s0 += Hd[r, j] * out[j]
            s1 += Hd[r, j] * out[nd + j]
        out[3 * nd + r] = s0 + b[r]
        out[3 * nd + m + r] = s1
        out[3 * nd + 2 * m + r] = 0.0
        out[3 * nd + 3 * m + r] = 0.0
    for r in range(rows.shape[0]):
        out[3 * nd + 3 * m + rows[r]] = lam[r]
        warm[rows[r]] = lam[r]


@njit(cache=True)
def slot_blocks(E_val, E_start, nsys, m, n):  # pragma: no cover  (compiled)
    r"""The blocks :math:`G_{a,s}` (m x n) of the stacked entries ``E_val``: slot (a, l), the l-th system
    of interaction a, holds the entries E_start[a] + i (nsys[a] n) + l n + j (a's rows are row-major
    over its systems' columns). Slots in interaction order."""
    S = 0
    for a in range(nsys.shape[0]):
        S += nsys[a]
    G = np.empty((S, m, n))
    s = 0
    for a in range(nsys.shape[0]):
        w = nsys[a] * n
        for l in range(nsys[a]):
            base = E_start[a] + l * n
            for i in range(m):
                for j in range(n):
                    G[s, i, j] = E_val[base + i * w + j]
            s += 1
    return G


@njit(cache=True)
def block_pairs(slot_inter, slot_body, n_inter, n_body):  # pragma: no cover  (compiled)
    r"""The (slot p, slot q) pairs on a common system, for :func:`_block_delassus`: slots are the
    (interaction, system) blocks in interaction order, at most two per interaction. Returns ``tp, tq``
    and their interactions ``ta, tb``, sorted by (a, b) and, within one (a, b), by system; ``run``
    (the starts of the runs of one (a, b), and the end) and ``mirror`` (the run of (b, a) of each run)."""
    S = slot_inter.shape[0]
    bptr = np.zeros(n_body + 1, dtype=np.int64)          # the slots of each system, in slot order
    for p in range(S):
        bptr[slot_body[p] + 1] += 1
    for s in range(n_body):
        bptr[s + 1] += bptr[s]
    by_body = np.empty(S, dtype=np.int64)
    fill = bptr[:-1].copy()
    for p in range(S):
        s = slot_body[p]
        by_body[fill[s]] = p
        fill[s] += 1
    total = 0
    for p in range(S):
        total += bptr[slot_body[p] + 1] - bptr[slot_body[p]]
    tp = np.empty(total, dtype=np.intp)
    tq = np.empty(total, dtype=np.intp)
    ta = np.empty(total, dtype=np.intp)
    tb = np.empty(total, dtype=np.intp)
    w = 0
    p = 0
    for a in range(n_inter):
        p0 = p
        while p < S and slot_inter[p] == a:
            p += 1
        if p - p0 == 1:                # one system: its slots, already in interaction order
            s = slot_body[p0]
            for k in range(bptr[s], bptr[s + 1]):
                tp[w], tq[w], ta[w], tb[w] = p0, by_body[k], a, slot_inter[by_body[k]]
                w += 1
        elif p - p0 == 2:              # two: merge the two systems' slots by interaction, then system
            p1, p2 = p0, p0 + 1
            if slot_body[p2] < slot_body[p1]:
                p1, p2 = p2, p1
            i, e1 = bptr[slot_body[p1]], bptr[slot_body[p1] + 1]
            j, e2 = bptr[slot_body[p2]], bptr[slot_body[p2] + 1]
            while i < e1 or j < e2:
                if j >= e2 or (i < e1 and slot_inter[by_body[i]] <= slot_inter[by_body[j]]):
                    tp[w], tq[w] = p1, by_body[i]
                    i += 1
                else:
                    tp[w], tq[w] = p2, by_body[j]
                    j += 1
                ta[w], tb[w] = a, slot_inter[tq[w]]
                w += 1
    nr = 0
    for k in range(total):
        if k == 0 or ta[k] != ta[k - 1] or tb[k] != tb[k - 1]:
            nr += 1
    run = np.empty(nr + 1, dtype=np.intp)
    rstart = np.zeros(n_inter + 1, dtype=np.int64)      # the runs of each a
    r = 0
    for k in range(total):
        if k == 0 or ta[k] != ta[k - 1] or tb[k] != tb[k - 1]:
            run[r] = k
            rstart[ta[k] + 1] += 1
            r += 1
    run[nr] = total
    for a in range(n_inter):
        rstart[a + 1] += rstart[a]
    mirror = np.empty(nr, dtype=np.intp)
    for r in range(nr):
        a, b = ta[run[r]], tb[run[r]]
        lo, hi = rstart[b], rstart[b + 1]              # the runs of b, sorted by their second interaction
        while lo < hi:
            mid = (lo + hi) // 2
            if tb[run[mid]] < a:
                lo = mid + 1
            else:
                hi = mid
        mirror[r] = lo
    return tp, tq, ta, tb, run, mirror


@njit(inline="always")
def _block_delassus(m, n, G, dinv, tp, tq, run, mirror, ta, tb, act):  # pragma: no cover  (compiled)
    r"""W of the active interactions in block form (the plan of ``BatchMoreauJean._block_plan``):
    :math:`W_{ab} = \sum_s G_{a,s}D_s^{-1}G_{b,s}^\top`. The (slot p, slot q) pairs ``tp, tq`` of the
    interactions ``ta, tb`` are sorted by (a, b) and cut into runs of one (a, b) (``run``: the starts);
    ``mirror[r]`` is the run of (b, a). ``G[p]`` is the block of slot p (m x n), ``dinv[p]`` (n,) the
    inverse diagonal :math:`D_s^{-1}` of its system. Blocks with a <= b are summed, the others are copied
    transposed from their mirror (W is symmetric; the mirror comes first in the (a, b) order).
    Returns the CSR (indptr, indices, data), canonical. Inlined into :func:`block_delassus_for`
    (m, n compile-time constants: the small loops unrolled)."""
    n_i = act.shape[0]
    new = np.full(n_i, -1, dtype=np.int64)
    nb = 0
    for a in range(n_i):
        if act[a]:
            new[a] = nb
            nb += 1
    nruns = run.shape[0] - 1
    nblk = np.zeros(nb, dtype=np.int64)
    for r in range(nruns):
        a, b = ta[run[r]], tb[run[r]]
        if act[a] and act[b]:
            nblk[new[a]] += 1
    indptr = np.zeros(nb * m + 1, dtype=np.int32)
    for A in range(nb):
        for i in range(m):
            indptr[A * m + i + 1] = indptr[A * m + i] + nblk[A] * m
    indices = np.empty(indptr[nb * m], dtype=np.int32)
    data = np.empty(indptr[nb * m])
    pos = np.zeros(nb, dtype=np.int64)
    start = np.zeros(nruns, dtype=np.int64)      # run r's block: data[start[r] + i * row length + k]
    for r in range(nruns):
        a, b = ta[run[r]], tb[run[r]]
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
                        p, q = tp[w], tq[w]
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


_BLOCK_DELASSUS = {}


def block_delassus_for(m: int, n: int):
    """:func:`_block_delassus` compiled for blocks of m x n (m, n frozen as constants, so that the
    loops over a block are unrolled: about twice as fast for 3 x 6), one per (m, n) and process."""
    f = _BLOCK_DELASSUS.get((m, n))
    if f is None:
        def f(G, dinv, tp, tq, run, mirror, ta, tb, act):  # pragma: no cover  (compiled)
            return _block_delassus(m, n, G, dinv, tp, tq, run, mirror, ta, tb, act)
        f = _BLOCK_DELASSUS[(m, n)] = njit(f)
    return f


@njit(cache=True)
def slot_matvec(G, slot_inter, slot_off, new, x):  # pragma: no cover  (compiled)
    r""":math:`G x` over the active interactions: row block ``new[a]`` (a active: ``new[a] >= 0``) sums
    :math:`G_{a,s}\,x_s` over a's slots (block ``G[p]``, columns from ``slot_off[p]``)."""
    S, m, n = G.shape
    nb = 0
    for a in range(new.shape[0]):
        if new[a] >= 0:
            nb += 1
    out = np.zeros(nb * m)
    for p in range(S):
        A = new[slot_inter[p]]
        if A < 0:
            continue
        o = slot_off[p]
        for i in range(m):
            s = 0.0
            for j in range(n):
                s += G[p, i, j] * x[o + j]
            out[A * m + i] += s
    return out


@njit(cache=True)
def slot_rmatvec(G, slot_inter, slot_off, new, lam, ndof):  # pragma: no cover  (compiled)
    r""":math:`G^\top\lambda` over the active interactions (the transpose of :func:`slot_matvec`)."""
    S, m, n = G.shape
    out = np.zeros(ndof)
    for p in range(S):
        A = new[slot_inter[p]]
        if A < 0:
            continue
        o = slot_off[p]
        for j in range(n):
            s = 0.0
            for i in range(m):
                s += G[p, i, j] * lam[A * m + i]
            out[o + j] += s
    return out


@njit(cache=True)
def rows_velocity(G, v, cols, rows, out):  # pragma: no cover  (compiled)
    r"""The outputs :math:`\dot y = G_j v_{c_j}` of a group of k interactions with Jacobians ``G``
    (k, m, n) and columns ``cols`` (k, n): row r of interaction j into ``out[rows[j m + r]]``."""
    k, m, n = G.shape
    for i in range(k):
        for r in range(m):
            s = 0.0
            for j in range(n):
                s += G[i, r, j] * v[cols[i, j]]
            out[rows[i * m + r]] = s


@njit(cache=True)
def lin_outputs(indptr, indices, data, b, rows, q, v, y0, y1):  # pragma: no cover  (compiled)
    r"""The outputs of the linear relations: :math:`Y_0 = Hq + b`, :math:`Y_1 = Hv` (H in CSR, summed
    in its storage order as scipy's product) into ``y0[rows]``, ``y1[rows]``."""
    for r in range(rows.shape[0]):
        s0 = 0.0
        s1 = 0.0
        for jj in range(indptr[r], indptr[r + 1]):
            s0 += data[jj] * q[indices[jj]]
            s1 += data[jj] * v[indices[jj]]
        y0[rows[r]] = s0 + b[r]
        y1[rows[r]] = s1
