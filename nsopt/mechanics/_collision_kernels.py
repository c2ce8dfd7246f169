"""The compiled phases of :meth:`nsopt.mechanics.CollisionManager.detect` (the one home of their formulas; coal's
narrow phase stays in Python between them): the objects' world poses, the broad phase (bounding boxes by sweep and
prune, half-spaces by their support, the filters), the reuse test of the pairs' last narrow phase, the assembly of
the contact points in the world frame, oriented, and the persistence of their ids. Each runs over the whole scene in
one call: a small scene's step pays a few calls, not one NumPy call per array operation (issue 32 §6).

The arithmetic is that of the NumPy expressions these phases replaced, term by term and in the same order (``einsum``
over a contiguous axis of 3 sums (p0 + p2) + p1, over a strided one left to right; ``norm`` of a 3x3 block pairwise),
without fused multiply-add, so that a run's trajectory is the same to the last bit.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit


@njit(inline="always")
def _dot3(a0, a1, a2, b0, b1, b2):  # pragma: no cover  (compiled)
    """a·b of 3-vectors summed as NumPy's ``einsum`` sums over a contiguous axis of 3: (a0 b0 + a2 b2) + a1 b1."""
    return (a0 * b0 + a2 * b2) + a1 * b1


@njit
def _member(sorted_codes, code):  # pragma: no cover  (compiled)
    k = np.searchsorted(sorted_codes, code)
    return k < sorted_codes.shape[0] and sorted_codes[k] == code


@njit
def _push(I, J, p, a, b):  # pragma: no cover  (compiled)
    """The pair (min, max) of a and b written at row p of (I, J), grown (doubled) when full."""
    if p == I.shape[0]:
        I2, J2 = np.empty(2 * p, dtype=np.int64), np.empty(2 * p, dtype=np.int64)
        I2[:p], J2[:p] = I[:p], J[:p]
        I, J = I2, J2
    I[p], J[p] = min(a, b), max(a, b)
    return I, J


@njit
def allowed(I, J, owner, static, group, nbodies, excluded, groups_off):  # pragma: no cover  (compiled)
    """Which object pairs (I, J) may collide: not two static objects, not two contactors of one body, not an
    excluded pair of bodies (codes a·nbodies + b, a < b, sorted), not a pair of groups switched off (codes
    g1·2^20 + g2, g1 <= g2, sorted)."""
    keep = np.zeros(I.shape[0], dtype=np.bool_)
    for s in range(I.shape[0]):
        a, b = I[s], J[s]
        if static[a] and static[b]:
            continue
        if not static[a] and not static[b]:
            if owner[a] == owner[b]:
                continue
            if excluded.shape[0] and _member(excluded, min(owner[a], owner[b]) * nbodies + max(owner[a], owner[b])):
                continue
        if groups_off.shape[0] and _member(groups_off, min(group[a], group[b]) * (1 << 20) + max(group[a], group[b])):
            continue
        keep[s] = True
    return keep


@njit
def broad_phase(obj_R, obj_x, lc, le, inf, hs_n, hs_off, owner, static, group, nbodies, excluded,
                groups_off):  # pragma: no cover  (compiled)
    """The candidate pairs (i < j) of objects, sorted by i·n + j: boxes (local centre lc, half extents le, enlarged by
    the margin) overlapping on the three axes, found by sweep and prune along the axis of largest spread of their
    centres; a half-space (``inf``; its plane n·y <= off in its object's frame) against every box whose support
    along its normal reaches it; then the filters (:func:`allowed`)."""
    n = obj_R.shape[0]
    c = np.empty((n, 3))
    e = np.empty((n, 3))
    for k in range(n):
        for i in range(3):
            c[k, i] = _dot3(obj_R[k, i, 0], obj_R[k, i, 1], obj_R[k, i, 2], lc[k, 0], lc[k, 1], lc[k, 2]) + obj_x[k, i]
            e[k, i] = _dot3(abs(obj_R[k, i, 0]), abs(obj_R[k, i, 1]), abs(obj_R[k, i, 2]), le[k, 0], le[k, 1], le[k, 2])
    fin = np.flatnonzero(~inf)
    m = fin.shape[0]
    I = np.empty(16 + 4 * n, dtype=np.int64)
    J = np.empty(16 + 4 * n, dtype=np.int64)
    p = 0
    if m > 1:
        ax = 0
        best = -1.0
        for a in range(3):
            lo_a, hi_a = np.inf, -np.inf
            for k in fin:
                lo_a = min(lo_a, c[k, a])
                hi_a = max(hi_a, c[k, a])
            if hi_a - lo_a > best:
                best, ax = hi_a - lo_a, a
        lows = np.empty(m)
        for s in range(m):
            lows[s] = c[fin[s], ax] - e[fin[s], ax]
        order = np.argsort(lows, kind="mergesort")
        for s in range(m):
            a = fin[order[s]]
            top = c[a, ax] + e[a, ax]
            for t in range(s + 1, m):
                b = fin[order[t]]
                if lows[order[t]] > top:
                    break
                ok = True
                for d in range(3):
                    if not (c[a, d] - e[a, d] <= c[b, d] + e[b, d] and c[b, d] - e[b, d] <= c[a, d] + e[a, d]):
                        ok = False
                        break
                if ok:
                    I, J = _push(I, J, p, a, b)
                    p += 1
    for h in range(n):
        if not inf[h]:
            continue
        nw = np.empty(3)
        for i in range(3):
            nw[i] = obj_R[h, i, 0] * hs_n[h, 0] + obj_R[h, i, 1] * hs_n[h, 1] + obj_R[h, i, 2] * hs_n[h, 2]
        off = hs_off[h] + (nw[0] * obj_x[h, 0] + nw[1] * obj_x[h, 1] + nw[2] * obj_x[h, 2])
        for k in fin:
            support = (c[k, 0] * nw[0] + c[k, 1] * nw[1] + c[k, 2] * nw[2]) - (
                e[k, 0] * abs(nw[0]) + e[k, 1] * abs(nw[1]) + e[k, 2] * abs(nw[2]))
            if support <= off + 1e-12:
                I, J = _push(I, J, p, k, h)
                p += 1
    keep = allowed(I[:p], J[:p], owner, static, group, nbodies, excluded, groups_off)
    ci, cj = I[:p][keep], J[:p][keep]
    srt = np.argsort(ci * n + cj, kind="mergesort")
    return ci[srt], cj[srt]


@njit
def reuse_test(ci, cj, radius, curved, obj_R, obj_x, ckey, cR, ct, reuse):  # pragma: no cover  (compiled)
    """Per candidate pair (sorted keys ci·n + cj): the relative pose of its smaller object in the larger one's frame
    (relR, relt), its row ``pos`` in the cache of the last narrow phases (keys ckey, poses cR, ct) and whether its
    narrow phase must run again (``need``): a pair new to the cache, or moved by more than ``reuse`` (translation
    plus rotation times the smaller object's radius), or with a curved shape turned by more than 1e-9 at its
    radius."""
    n = obj_R.shape[0]
    P = ci.shape[0]
    relR = np.empty((P, 3, 3))
    relt = np.empty((P, 3))
    pos = np.zeros(P, dtype=np.int64)
    need = np.ones(P, dtype=np.bool_)
    nc = ckey.shape[0]
    r2 = np.sqrt(2.0)
    for k in range(P):
        i, j = ci[k], cj[k]
        if radius[j] <= radius[i]:
            big, sm = i, j
        else:
            big, sm = j, i
        for a in range(3):
            for b in range(3):
                relR[k, a, b] = (obj_R[big, 0, a] * obj_R[sm, 0, b] + obj_R[big, 1, a] * obj_R[sm, 1, b]) + \
                    obj_R[big, 2, a] * obj_R[sm, 2, b]
            relt[k, a] = (obj_R[big, 0, a] * (obj_x[sm, 0] - obj_x[big, 0])
                          + obj_R[big, 1, a] * (obj_x[sm, 1] - obj_x[big, 1])) \
                + obj_R[big, 2, a] * (obj_x[sm, 2] - obj_x[big, 2])
        if nc == 0:
            continue
        key = i * n + j
        q = min(np.searchsorted(ckey, key), nc - 1)
        pos[k] = q
        if ckey[q] != key:
            continue
        rho = radius[sm] if np.isfinite(radius[sm]) else 0.0
        d2 = np.empty(9)
        for a in range(3):
            for b in range(3):
                d2[3 * a + b] = (relR[k, a, b] - cR[q, a, b]) ** 2
        dR = np.sqrt((((d2[0] + d2[1]) + (d2[2] + d2[3])) + ((d2[4] + d2[5]) + (d2[6] + d2[7]))) + d2[8]) / r2
        st = 0.0
        for a in range(3):
            d = relt[k, a] - ct[q, a]
            st += d * d
        move = np.sqrt(st) + rho * dR
        need[k] = not (move <= reuse) or ((curved[i] or curved[j]) and rho * dR > 1e-9)
    return relR, relt, pos, need


@njit
def assemble(ci, cj, need, pos, relR, relt, counts, fresh_pa, fresh_pb, fresh_na, cstart, cpa, cpb, cna, cR, ct,
             obj_R, obj_x, owner, static):  # pragma: no cover  (compiled)
    """The points of every pair in its objects' frames (a kept pair's from the cache, a fresh one's from
    ``fresh_*``, stacked in pair order), the poses the cache keeps (a kept pair's of its last narrow phase), and the
    world points of every contact, oriented: A dynamic (the lower body of two), the normal NN from B towards A."""
    P = ci.shape[0]
    starts = np.zeros(P + 1, dtype=np.int64)
    for k in range(P):
        starts[k + 1] = starts[k] + counts[k]
    total = starts[P]
    pa, pb, na = np.empty((total, 3)), np.empty((total, 3)), np.empty((total, 3))
    kR, kt = relR.copy(), relt.copy()
    f = 0
    for k in range(P):
        s0 = starts[k]
        if need[k]:
            for r in range(counts[k]):
                pa[s0 + r], pb[s0 + r], na[s0 + r] = fresh_pa[f + r], fresh_pb[f + r], fresh_na[f + r]
            f += counts[k]
        else:
            q = pos[k]
            for r in range(counts[k]):
                pa[s0 + r], pb[s0 + r], na[s0 + r] = cpa[cstart[q] + r], cpb[cstart[q] + r], cna[cstart[q] + r]
            kR[k], kt[k] = cR[q], ct[q]
    A = np.empty(total, dtype=np.int64)
    B = np.empty(total, dtype=np.int64)
    PA, PB, NN = np.empty((total, 3)), np.empty((total, 3)), np.empty((total, 3))
    PI, PJ, N = np.empty(3), np.empty(3), np.empty(3)
    for k in range(P):
        I, J = ci[k], cj[k]
        swap = static[I] or (not static[J] and owner[J] < owner[I])
        for s in range(starts[k], starts[k + 1]):
            for i in range(3):
                PI[i] = _dot3(obj_R[I, i, 0], obj_R[I, i, 1], obj_R[I, i, 2], pa[s, 0], pa[s, 1], pa[s, 2]) + obj_x[I, i]
                PJ[i] = _dot3(obj_R[J, i, 0], obj_R[J, i, 1], obj_R[J, i, 2], pb[s, 0], pb[s, 1], pb[s, 2]) + obj_x[J, i]
                N[i] = _dot3(obj_R[I, i, 0], obj_R[I, i, 1], obj_R[I, i, 2], na[s, 0], na[s, 1], na[s, 2])
            if swap:
                A[s], B[s] = J, I
                PA[s], PB[s], NN[s] = PJ, PI, N
            else:
                A[s], B[s] = I, J
                PA[s], PB[s] = PI, PJ
                for i in range(3):
                    NN[s, i] = -N[i]
    return starts, pa, pb, na, kR, kt, A, B, PA, PB, NN


@njit
def persist(A, B, PA, PB, N, obj_R, obj_x, pkey, pid, ploc, persistence, next_id):  # pragma: no cover  (compiled)
    """The signed distances, the points in their objects' frames (loc: on A, on B) and the ids: a point keeps the id
    of the previous detection's point of its pair of objects (keys pkey sorted, ids pid, frames' points ploc) nearest
    to it in both frames, within ``persistence`` (a previous point claimed twice keeps its id on the nearer current
    point only); the others get new ids from ``next_id`` on, in their order."""
    k = A.shape[0]
    nobj = obj_R.shape[0]
    dist = np.empty(k)
    loc = np.empty((k, 6))
    key = A * nobj + B
    for s in range(k):
        dist[s] = _dot3(N[s, 0], N[s, 1], N[s, 2], PA[s, 0] - PB[s, 0], PA[s, 1] - PB[s, 1], PA[s, 2] - PB[s, 2])
        a, b = A[s], B[s]
        for i in range(3):
            loc[s, i] = (obj_R[a, 0, i] * (PA[s, 0] - obj_x[a, 0]) + obj_R[a, 1, i] * (PA[s, 1] - obj_x[a, 1])) + \
                obj_R[a, 2, i] * (PA[s, 2] - obj_x[a, 2])
            loc[s, 3 + i] = (obj_R[b, 0, i] * (PB[s, 0] - obj_x[b, 0]) + obj_R[b, 1, i] * (PB[s, 1] - obj_x[b, 1])) + \
                obj_R[b, 2, i] * (PB[s, 2] - obj_x[b, 2])
    ids = np.full(k, -1, dtype=np.int64)
    best = np.full(k, -1, dtype=np.int64)
    best_d = np.full(k, np.inf)
    for s in range(k):
        lo = np.searchsorted(pkey, key[s], "left")
        hi = np.searchsorted(pkey, key[s], "right")
        for cand in range(lo, hi):
            d1 = np.sqrt((ploc[cand, 0] - loc[s, 0]) ** 2 + (ploc[cand, 1] - loc[s, 1]) ** 2 + (ploc[cand, 2] - loc[s, 2]) ** 2)
            d2 = np.sqrt((ploc[cand, 3] - loc[s, 3]) ** 2 + (ploc[cand, 4] - loc[s, 4]) ** 2 + (ploc[cand, 5] - loc[s, 5]) ** 2)
            d = max(d1, d2)
            if d < persistence and d < best_d[s]:
                best[s], best_d[s] = cand, d
    hit = np.flatnonzero(best >= 0)
    if hit.shape[0]:
        # by previous point, then by distance (then by current point): the first of each previous point keeps its id
        o1 = np.argsort(best_d[hit], kind="mergesort")
        h1 = hit[o1]
        o2 = np.argsort(best[h1], kind="mergesort")
        order = h1[o2]
        for r in range(order.shape[0]):
            if r == 0 or best[order[r]] != best[order[r - 1]]:
                ids[order[r]] = pid[best[order[r]]]
    new = ids < 0
    for s in range(k):
        if new[s]:
            ids[s] = next_id
            next_id += 1
    srt = np.argsort(key, kind="mergesort")
    return dist, loc, ids, new, next_id, key[srt], ids[srt], loc[srt]


@njit
def body_frames(R, Q, body1, body2, pc1, pc2, normal):  # pragma: no cover  (compiled)
    """The contacts' points and normal in their bodies' frames (the bodies' rotations R (n, 3, 3), poses Q (n, 7)):
    pc1 in body 1's; pc2 and the normal in body 2's, or as they are for a static body 2 (body2 < 0)."""
    k = body1.shape[0]
    rp1, rp2, rn = np.empty((k, 3)), pc2.copy(), normal.copy()
    for s in range(k):
        a = body1[s]
        for i in range(3):
            rp1[s, i] = (R[a, 0, i] * (pc1[s, 0] - Q[a, 0]) + R[a, 1, i] * (pc1[s, 1] - Q[a, 1])) + \
                R[a, 2, i] * (pc1[s, 2] - Q[a, 2])
        b = body2[s]
        if b >= 0:
            for i in range(3):
                rp2[s, i] = (R[b, 0, i] * (pc2[s, 0] - Q[b, 0]) + R[b, 1, i] * (pc2[s, 1] - Q[b, 1])) + \
                    R[b, 2, i] * (pc2[s, 2] - Q[b, 2])
                rn[s, i] = (R[b, 0, i] * normal[s, 0] + R[b, 1, i] * normal[s, 1]) + R[b, 2, i] * normal[s, 2]
    return rp1, rp2, rn
