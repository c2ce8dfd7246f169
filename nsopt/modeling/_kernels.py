"""Compiled inner loops of the Moreau–Jean step (:mod:`nsopt.modeling._stepper`).

The step's formulas that a compiled loop needs are written once here, as small inlined functions
(:func:`closes` and :func:`reaches`: the index-set rules; :func:`position`: the position update), and
its phases once, as compiled functions: the index set (:func:`index_set`, Siconos' rule
:func:`closed_set`), the positions (:func:`positions`), the linear relations' outputs (:func:`lin_row`,
:func:`lin_outputs`). The general step calls the
phases; the fused loops of linear time-invariant models (:func:`free_flight`,
:func:`fused_step_start`, :func:`fused_step_end`) call the same phases inside one compiled call
(what is fused is the calls, not the formulas).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from ..problems._delassus_kernels import block_row_ptr

STATE_LIMIT = 1e100     # a state entry beyond this (or not finite) stops the run (the stepper's guard)


@njit(inline="always")
def closes(y0, y1, gh, thr):  # pragma: no cover  (compiled)
    r"""The index-set rule (Siconos 4.4): a unilateral interaction is active when its predicted gap
    :math:`y_0 + \gamma h\, \dot y_0 \le` ``thr`` (``gh`` = γh)."""
    return y0 + gh * y1 <= thr


@njit(inline="always")
def reaches(y0, y1, y1f, c1, c2, thr):  # pragma: no cover  (compiled)
    r"""The look-ahead index-set rule: a unilateral interaction is active when the gap at the end of the
    step without its impulse, :math:`y_k + \gamma h[(1-\theta)\dot y_k + \theta\dot y_{free}]`, is at most
    ``thr`` (``c1`` = γh(1-θ), ``c2`` = γhθ; :math:`\dot y_{free} = G_0 v_{free}`, the rate the free
    velocity gives it)."""
    return y0 + c1 * y1 + c2 * y1f <= thr


@njit(inline="always")
def position(qk, vk, v, c1, c2):  # pragma: no cover  (compiled)
    r"""The position update :math:`q_{k+1} = q_k + h(1-\theta) v_k + h\theta v_{k+1}` (c1 = h(1-θ), c2 = hθ)."""
    return qk + c1 * vk + c2 * v


@njit(inline="always")
def closed_set(Y0, Y1, first, unil_off, gh, thr, act):  # pragma: no cover  (compiled)
    """Siconos' index set into ``act`` (one flag per interaction): interaction i is active when
    ``unil_off[i]`` (not unilateral) or :func:`closes` holds on its first row (``first[i]``); returns
    its size. The rule of :func:`index_set` for the interactions without look-ahead, and the whole
    index set of the fused models (no look-ahead, no compliant relation, none removed)."""
    c = 0
    for i in range(first.shape[0]):
        f = first[i]
        a = unil_off[i] or closes(Y0[f], Y1[f], gh, thr)
        act[i] = a
        c += a
    return c


@njit(inline="always")
def lin_row(indptr, indices, data, b, r, q, v):  # pragma: no cover  (compiled)
    r"""The outputs of row r of the linear relations, :math:`(Hq + b)_r` and :math:`(Hv)_r` (H in CSR,
    summed in its storage order as scipy's product)."""
    s0 = 0.0
    s1 = 0.0
    for jj in range(indptr[r], indptr[r + 1]):
        s0 += data[jj] * q[indices[jj]]
        s1 += data[jj] * v[indices[jj]]
    return s0 + b[r], s1


@njit(cache=True)
def index_set(Y0, Y1, first, gap_at, gap, unil_off, alive, gh, thr, act, look, Y1f, c1, c2):  # pragma: no cover
    """The index set into ``act`` (one flag per interaction); returns its size. Interaction i is active
    when ``unil_off[i]`` (not unilateral) or its rule holds on its first row (``first[i]``), and
    ``alive[i]``: :func:`reaches` (with ``Y1f``, ``c1``, ``c2``) where ``look[i]``, :func:`closes` (``gh``)
    elsewhere; the interactions ``gap_at`` (compliant relations) use ``gap`` (y at λ = 0) for y0."""
    closed_set(Y0, Y1, first, unil_off, gh, thr, act)
    for i in range(first.shape[0]):
        if look[i]:
            f = first[i]
            act[i] = unil_off[i] or reaches(Y0[f], Y1[f], Y1f[f], c1, c2, thr)
    for k in range(gap_at.shape[0]):
        i = gap_at[k]
        f = first[i]
        if look[i]:
            a = unil_off[i] or reaches(gap[k], Y1[f], Y1f[f], c1, c2, thr)
        else:
            a = unil_off[i] or closes(gap[k], Y1[f], gh, thr)
        act[i] = a
    c = 0
    for i in range(first.shape[0]):
        act[i] = act[i] and alive[i]
        c += act[i]
    return c


@njit(cache=True)
def positions(qk, vk, v, c1, c2, out):  # pragma: no cover  (compiled)
    """:func:`position` for every entry: ``out = qk + c1 vk + c2 v``; returns max |out| (nan when not finite)."""
    top = 0.0
    for i in range(out.shape[0]):
        x = position(qk[i], vk[i], v[i], c1, c2)
        out[i] = x
        a = abs(x)
        if not a <= top:
            top = a
    return top


@njit(cache=True)
def free_flight(buf, nd, first, unil_off, gh, thr, Rd, c1, c2, indptr, indices, data, b, nmax, rec,
                j0):  # pragma: no cover  (compiled)
    r"""Advance up to ``nmax`` Moreau–Jean steps while no interaction enters the index set; returns the
    number of steps taken (it stops before a step whose index set is not empty).

    ``buf`` is the stacked state (q, v, p, y0, y1, λ0, λ1), nd = len(q), updated in place. Each step is
    the NumPy path's, without impulses: :math:`v_{free} = v - \hat M^{-1}R` (``Rd`` =
    :math:`\hat M^{-1}R`, constant), :math:`q \leftarrow q + c_1 v + c_2 v_{free}` (c1 = h(1-θ),
    c2 = hθ), :math:`v \leftarrow v_{free}`, the outputs by :func:`lin_row` (H in CSR), p = λ = 0; the
    index set by :func:`closed_set` (the fused models have no look-ahead rule).
    Row j0 + s of ``rec`` records step s. It also stops before a step whose state would not be
    finite or beyond ``STATE_LIMIT`` (the caller's step then raises).
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
    Y0, Y1, Q, V = buf[y0:y0 + m], buf[y1:y1 + m], buf[q0:q0 + nd], buf[v0:v0 + nd]
    act = np.empty(first.shape[0], dtype=np.bool_)
    for s in range(nmax):
        if closed_set(Y0, Y1, first, unil_off, gh, thr, act):
            return s
        for i in range(nd):           # a step whose state would leave STATE_LIMIT is the caller's
            vf = buf[v0 + i] - Rd[i]
            if not (abs(vf) <= STATE_LIMIT and abs(position(buf[q0 + i], buf[v0 + i], vf, c1, c2)) <= STATE_LIMIT):
                return s
        for i in range(nd):
            vf = buf[v0 + i] - Rd[i]
            buf[q0 + i] = position(buf[q0 + i], buf[v0 + i], vf, c1, c2)
            buf[v0 + i] = vf
        for r in range(m):
            Y0[r], Y1[r] = lin_row(indptr, indices, data, b, r, Q, V)
        for i in range(rec.shape[1]):      # (an explicit loop: a slice assignment costs a second of compile)
            rec[j0 + s, i] = buf[i]
    return nmax


@njit(cache=True)
def fused_step_start(buf, nd, first, unil_off, gh, thr, Rd, vfree, act, last, Ha, e, rows, qout, warm,
                     wout):  # pragma: no cover  (compiled)
    r"""The start of a step of a linear time-invariant model (the stepper's compiled phases):
    :math:`v_{free} = v - \hat M^{-1}R` into ``vfree``, the index set into ``act`` (:func:`closed_set`:
    the fused models have no look-ahead rule). Returns 0 when it
    is empty; 1 when it equals ``last`` (the previous contact step's), with
    :math:`q = H_a v_{free} + e \odot \dot y_k` on its rows (``Ha`` dense, ``rows`` of y) written
    into ``qout`` and the warm starts of those rows (from ``warm``) into ``wout``; 2 for another
    index set (neither computed)."""
    m = (buf.shape[0] - 3 * nd) // 4
    y0, y1 = 3 * nd, 3 * nd + m
    for i in range(nd):
        vfree[i] = buf[nd + i] - Rd[i]
    Y0, Y1 = buf[y0:y0 + m], buf[y1:y1 + m]
    if closed_set(Y0, Y1, first, unil_off, gh, thr, act) == 0:
        return 0
    if last.shape[0] != first.shape[0]:
        return 2
    for i in range(first.shape[0]):
        if last[i] != act[i]:
            return 2
    problem_vector(Ha, vfree, e, buf, nd, rows, qout)
    for r in range(rows.shape[0]):
        wout[r] = warm[rows[r]]
    return 1


@njit(cache=True)
def problem_vector(Ha, vfree, e, buf, nd, rows, out):  # pragma: no cover  (compiled)
    r""":math:`q = H_a v_{free} + e \odot \dot y_k` on the active rows (H_a dense, ``rows`` of y) into ``out``."""
    m = (buf.shape[0] - 3 * nd) // 4
    y1 = 3 * nd + m
    for r in range(Ha.shape[0]):
        s = 0.0
        for j in range(Ha.shape[1]):
            s += Ha[r, j] * vfree[j]
        out[r] = s + e[r] * buf[y1 + rows[r]]


@njit(cache=True)
def fused_step_end(buf, out, nd, vfree, lam, rows, d, c1, c2, indptr, indices, data, b,
                   warm):  # pragma: no cover  (compiled)
    r"""The end of the step: :math:`p = H_a^\top\lambda` (H_a: the rows ``rows`` of H, in CSR; the sum
    over the rows in their order, as the dense product's), :math:`v = v_{free} + \hat M^{-1}p`,
    :math:`q` by :func:`position`, the outputs by :func:`lin_row` (H in CSR), λ on the active
    rows: the new stacked state written into ``out`` (``buf``, the old one, is left as it was);
    λ also into the warm starts ``warm`` of those rows. Returns max |q|, |v| (nan when not finite)."""
    m = b.shape[0]
    top = 0.0
    for j in range(nd):
        out[2 * nd + j] = 0.0
    for r in range(rows.shape[0]):
        k = rows[r]
        for jj in range(indptr[k], indptr[k + 1]):
            out[2 * nd + indices[jj]] += data[jj] * lam[r]
    for j in range(nd):
        s = out[2 * nd + j]
        vn = vfree[j] + s / d[j]
        out[2 * nd + j] = s
        out[nd + j] = vn
        x = position(buf[j], buf[nd + j], vn, c1, c2)
        out[j] = x
        for a in (abs(x), abs(vn)):
            if not a <= top:
                top = a
    Q, V = out[:nd], out[nd:2 * nd]
    for r in range(m):
        out[3 * nd + r], out[3 * nd + m + r] = lin_row(indptr, indices, data, b, r, Q, V)
        out[3 * nd + 2 * m + r] = 0.0
        out[3 * nd + 3 * m + r] = 0.0
    for r in range(rows.shape[0]):
        out[3 * nd + 3 * m + rows[r]] = lam[r]
        warm[rows[r]] = lam[r]
    return top


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
    r"""The (slot p, slot q) pairs on a common system, for the block form of W (:func:`nsopt.problems._delassus.block_delassus_for`): slots are the
    (interaction, system) blocks in interaction order, at most two per interaction. Returns ``slot_p, slot_q``
    and their interactions ``inter_a, inter_b``, sorted by (a, b) and, within one (a, b), by system; ``run``
    (the starts of the runs of one (a, b), and the end) and ``mirror`` (the run of (b, a) of each run)."""
    S = slot_inter.shape[0]
    bptr = np.zeros(n_body + 1, dtype=np.int64)          # the slots of each system, in slot order
    for p in range(S):
        bptr[slot_body[p] + 1] += 1
    for s in range(n_body):
        bptr[s + 1] += bptr[s]
    by_body = np.empty(S, dtype=np.int64)
    fill = np.empty(n_body, dtype=np.int64)
    for s in range(n_body):
        fill[s] = bptr[s]
    for p in range(S):
        s = slot_body[p]
        by_body[fill[s]] = p
        fill[s] += 1
    total = 0
    for p in range(S):
        total += bptr[slot_body[p] + 1] - bptr[slot_body[p]]
    slot_p = np.empty(total, dtype=np.intp)
    slot_q = np.empty(total, dtype=np.intp)
    inter_a = np.empty(total, dtype=np.intp)
    inter_b = np.empty(total, dtype=np.intp)
    w = 0
    p = 0
    for a in range(n_inter):
        p0 = p
        while p < S and slot_inter[p] == a:
            p += 1
        if p - p0 == 1:                # one system: its slots, already in interaction order
            s = slot_body[p0]
            for k in range(bptr[s], bptr[s + 1]):
                slot_p[w], slot_q[w], inter_a[w], inter_b[w] = p0, by_body[k], a, slot_inter[by_body[k]]
                w += 1
        elif p - p0 == 2:              # two: merge the two systems' slots by interaction, then system
            p1, p2 = p0, p0 + 1
            if slot_body[p2] < slot_body[p1]:
                p1, p2 = p2, p1
            i, e1 = bptr[slot_body[p1]], bptr[slot_body[p1] + 1]
            j, e2 = bptr[slot_body[p2]], bptr[slot_body[p2] + 1]
            while i < e1 or j < e2:
                if j >= e2 or (i < e1 and slot_inter[by_body[i]] <= slot_inter[by_body[j]]):
                    slot_p[w], slot_q[w] = p1, by_body[i]
                    i += 1
                else:
                    slot_p[w], slot_q[w] = p2, by_body[j]
                    j += 1
                inter_a[w], inter_b[w] = a, slot_inter[slot_q[w]]
                w += 1
    nr = 0
    for k in range(total):
        if k == 0 or inter_a[k] != inter_a[k - 1] or inter_b[k] != inter_b[k - 1]:
            nr += 1
    run = np.empty(nr + 1, dtype=np.intp)
    rstart = np.zeros(n_inter + 1, dtype=np.int64)      # the runs of each a
    r = 0
    for k in range(total):
        if k == 0 or inter_a[k] != inter_a[k - 1] or inter_b[k] != inter_b[k - 1]:
            run[r] = k
            rstart[inter_a[k] + 1] += 1
            r += 1
    run[nr] = total
    for a in range(n_inter):
        rstart[a + 1] += rstart[a]
    mirror = np.empty(nr, dtype=np.intp)
    for r in range(nr):
        a, b = inter_a[run[r]], inter_b[run[r]]
        lo, hi = rstart[b], rstart[b + 1]              # the runs of b, sorted by their second interaction
        while lo < hi:
            mid = (lo + hi) // 2
            if inter_b[run[mid]] < a:
                lo = mid + 1
            else:
                hi = mid
        mirror[r] = lo
    return slot_p, slot_q, inter_a, inter_b, run, mirror


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
def slot_rows_csr(G, slot_inter, slot_off, new, nb):  # pragma: no cover  (compiled)
    r"""The rows :math:`G` of the ``nb`` active interactions as CSR arrays (indptr, indices, data):
    row block ``new[a]`` holds a's slot blocks ``G[p]`` (columns from ``slot_off[p]``), the slots in
    ascending column (an interaction's slots are consecutive); the matrix of :func:`slot_matvec`."""
    S, m, n = G.shape
    cnt = np.zeros(nb, dtype=np.int64)
    for p in range(S):
        A = new[slot_inter[p]]
        if A >= 0:
            cnt[A] += 1
    indptr = np.zeros(nb * m + 1, dtype=np.int64)
    block_row_ptr(indptr, cnt, m, n)
    indices = np.empty(indptr[nb * m], dtype=np.int32)
    data = np.empty(indptr[nb * m])
    order = np.empty(S, dtype=np.int64)
    p = 0
    while p < S:
        a = slot_inter[p]
        q = p
        while q < S and slot_inter[q] == a:
            q += 1
        A = new[a]
        if A >= 0:
            k = q - p
            for t in range(k):          # the slots by ascending column (insertion: 1 or 2 slots)
                order[t] = p + t
                u = t
                while u > 0 and slot_off[order[u - 1]] > slot_off[order[u]]:
                    order[u - 1], order[u] = order[u], order[u - 1]
                    u -= 1
            for i in range(m):
                c = indptr[A * m + i]
                for t in range(k):
                    s = order[t]
                    for j in range(n):
                        indices[c] = slot_off[s] + j
                        data[c] = G[s, i, j]
                        c += 1
        p = q
    return indptr, indices, data


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
        y0[rows[r]], y1[rows[r]] = lin_row(indptr, indices, data, b, r, q, v)




@njit(cache=True)
def projection_delassus(ptr, ind, hm, Hptr, Hind, Hdat, idx, nv, W):  # pragma: no cover  (compiled)
    r""":math:`W = (HM^{-1})_S H_S^\top` of the rows S = ``idx`` of a position projection's round
    (:meth:`~nsopt.modeling._stepper.MoreauJeanStepper._project_rows`), dense into ``W`` (|S| x |S|), from
    :math:`HM^{-1}` in CSR (``ptr``, ``ind``, ``hm``: scipy's product, in its storage order) and H in CSR
    (``Hptr``, ``Hind``, ``Hdat``, no duplicates; ``nv`` columns): each entry summed over the row of
    :math:`HM^{-1}` in that order from 0.0, as scipy's ``HM[S] @ H[S].T`` sums it (the same numbers; an entry
    absent from H adds ±0.0, which leaves a sum as it is). Column b of W against row ``idx[b]`` of H scattered
    into a work vector (no dense H)."""
    m = idx.shape[0]
    work = np.zeros(nv)
    for b in range(m):
        k = idx[b]
        for p in range(Hptr[k], Hptr[k + 1]):
            work[Hind[p]] = Hdat[p]
        for a in range(m):
            i = idx[a]
            s = 0.0
            for p in range(ptr[i], ptr[i + 1]):
                s += hm[p] * work[ind[p]]
            W[a, b] = s
        for p in range(Hptr[k], Hptr[k + 1]):
            work[Hind[p]] = 0.0


@njit(cache=True)
def projection_step(ptr, ind, hm, Hptr, Hind, Hdat, idx, mu, y, delta, gap):  # pragma: no cover  (compiled)
    r"""The move of a position projection's round and the linearised gaps it leaves:
    :math:`\Delta = (HM^{-1})_S^\top\mu` into ``delta`` (as scipy's ``HM[S].T @ mu``: the rows of S in turn, each
    in its storage order) and :math:`y + H\Delta` into ``gap`` (H in CSR, ``Hptr``, ``Hind``, ``Hdat``: as scipy's
    ``H @ delta``, each row summed in its storage order from 0.0)."""
    delta[:] = 0.0
    for a in range(idx.shape[0]):
        i = idx[a]
        for p in range(ptr[i], ptr[i + 1]):
            delta[ind[p]] += hm[p] * mu[a]
    for r in range(Hptr.shape[0] - 1):
        s = 0.0
        for p in range(Hptr[r], Hptr[r + 1]):
            s += Hdat[p] * delta[Hind[p]]
        gap[r] = y[r] + s
