"""Numba kernels of the Gauss–Seidel family (PGS/PSOR sweeps, NSGS over contacts, local contact solvers).

Kept few and simply typed (float64 arrays, int64 index arrays, Python scalars) so that the first
compilation is short and cached on disk (``cache=True``); ``fastmath`` stays off so that the error
computed inside the loop equals the problem's own error measure.

Conventions
-----------
* Matrices come in compressed form ``(ptr, idx, val)``: CSR for the PGS sweeps (row i of M), CSC for
  NSGS (column j of W), NSGS keeping ``u = Wr + q`` up to date with one column update per contact
  (the same cost as the row products of a textbook sweep, but u is exact at the end of each sweep,
  so the Siconos error is available in O(n) after every sweep).
* Local friction-contact problem of one contact: ``u = W r + q`` (W = the diagonal block ``W_aa``,
  q = ``q_loc``), find r in the Coulomb cone K_mu with ``u + mu ||u_T|| e_N`` in the dual cone,
  orthogonal to r.
"""

from __future__ import annotations

import math

import numpy as np
from .._jit import njit

from ..problems._base import ORDERED_ROWS
from ..problems._products import csr_affine, dense_affine  # noqa: F401  (the kernels' u = Wr + q, w = Mz + q)

EPS = np.finfo(np.float64).eps
TINY = np.finfo(np.float64).tiny
# Arguments passed to other kernels as typed values, not literals: numba compiles a function once
# per literal it is called with (Literal[int](3) is not int64), so a literal would add a specialisation.
DIM2, DIM3 = np.int64(2), np.int64(3)
WITH_J, NO_J = np.int64(1), np.int64(0)
ZERO = np.int64(0)

# status codes shared with the Python side
OK, MAXIT, NUMERR, CALLBACK = 0, 1, 2, 3


# ----------------------------------------------------------------------------------------------
# PGS / PSOR on a box-constrained linear problem: lo <= z <= hi, w = Mz + q, -w in N_[lo,hi](z)
# (LCP: [0, inf); MLCP equality rows: (-inf, inf), exact 1-D solve; relay: [lb, ub]).
# ----------------------------------------------------------------------------------------------
@njit(cache=True)
def pgs_sweeps(ptr, idx, val, diag, q, lo, hi, z, omega, nsweeps):
    """``nsweeps`` Gauss–Seidel sweeps in place on z: z_i <- clip(z_i - omega (Mz + q)_i / M_ii, lo_i, hi_i)."""
    n = q.shape[0]
    for _ in range(nsweeps):
        for i in range(n):
            w = q[i]
            for p in range(ptr[i], ptr[i + 1]):
                w += val[p] * z[idx[p]]
            zi = z[i] - omega * w / diag[i]
            if zi < lo[i]:
                zi = lo[i]
            elif zi > hi[i]:
                zi = hi[i]
            z[i] = zi
    return 0


# the error measures and the Coulomb projection: one compiled home in nsopt.problems._measures, which
# nsopt.problems.cones and nsopt.problems.lcp call too
from ..problems._measures import _norm_t, fc_error, lcp_error, nat_map_sq, proj_cone  # noqa: E402,F401


# ----------------------------------------------------------------------------------------------
# small dense linear algebra (the one compiled home: enum's supports, lemke's compiled start,
# the dense Newton loop)
# ----------------------------------------------------------------------------------------------
@njit(cache=True)
def gauss_solve(A, b, x, rel):
    """x = A^-1 b by Gaussian elimination with partial pivoting, in place on A and b (work copies;
    x may be b). False when a pivot is <= ``rel`` x max|A| (``rel`` = 0: exactly 0, as LAPACK's
    dgesv reports a singular matrix)."""
    n = b.shape[0]
    if n == 0:
        return True
    amax = 0.0
    for i in range(n):
        for j in range(n):
            if abs(A[i, j]) > amax:
                amax = abs(A[i, j])
    if amax == 0.0:
        return False
    tiny = amax * rel
    for k in range(n):
        p = k
        best = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > best:
                best = abs(A[i, k])
                p = i
        if best <= tiny:
            return False
        if p != k:
            for j in range(n):
                t = A[k, j]
                A[k, j] = A[p, j]
                A[p, j] = t
            t = b[k]
            b[k] = b[p]
            b[p] = t
        for i in range(k + 1, n):
            f = A[i, k] / A[k, k]
            if f != 0.0:
                for j in range(k + 1, n):
                    A[i, j] -= f * A[k, j]
                b[i] -= f * b[k]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= A[i, j] * x[j]
        x[i] = s / A[i, i]
    return True


@njit(cache=True, inline="always")
def lu_refined(A, b, x, rounds):
    """x = A^-1 b for a small dense A: Gaussian elimination with partial pivoting
    (``_gs_kernels.gauss_solve``), then ``rounds`` steps of iterative refinement with residuals
    b - Ax in double-double (as :func:`refined_solve` with its extended-precision residuals).
    False when a pivot is exactly 0 or x is not finite (the caller then takes the Python path:
    :func:`refined_solve`, least squares when singular)."""
    m = b.shape[0]
    if not gauss_solve(A.copy(), b.copy(), x, 0.0):
        return False
    for i in range(m):
        if not math.isfinite(x[i]):
            return False
    r = np.empty(m)
    y = np.empty(m)
    for _ in range(rounds):
        for i in range(m):      # r = b - A x in double-double, rounded once
            hi = b[i]
            lo = 0.0
            for j in range(m):
                a, bj = A[i, j], x[j]       # p = fl(a bj), p + e = a bj exactly (Dekker's product)
                p = a * bj
                c = 134217729.0 * a
                ah = c - (c - a)
                al = a - ah
                c = 134217729.0 * bj
                bh = c - (c - bj)
                bl = bj - bh
                e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
                s = hi - p
                bb = s - hi
                lo += ((hi - (s - bb)) + (-p - bb)) - e
                hi = s
            r[i] = hi + lo
        if not gauss_solve(A.copy(), r, y, 0.0):
            return True
        big = 0.0
        dmax = 0.0
        for i in range(m):
            if not math.isfinite(y[i]):
                return True          # as refined_solve: a non-finite correction ends the refinement
        for i in range(m):
            x[i] += y[i]
            big = max(big, abs(x[i]))
            dmax = max(dmax, abs(y[i]))
        if dmax <= EPS * max(big, TINY):
            return True
    return True


# ----------------------------------------------------------------------------------------------
# Local solvers for one contact
# ----------------------------------------------------------------------------------------------
@njit(cache=True)
def _solve3(A, b, x):
    """x = A^{-1} b for a 3x3 A by Gaussian elimination with partial pivoting; False if singular."""
    M = np.empty((3, 4))
    for i in range(3):
        for j in range(3):
            M[i, j] = A[i, j]
        M[i, 3] = b[i]
    scale = 0.0
    for i in range(3):
        for j in range(3):
            scale = max(scale, abs(A[i, j]))
    if scale == 0.0:
        return False
    for k in range(3):
        p = k
        for i in range(k + 1, 3):
            if abs(M[i, k]) > abs(M[p, k]):
                p = i
        if abs(M[p, k]) <= 1e-14 * scale:
            return False
        if p != k:
            for j in range(4):
                t = M[k, j]
                M[k, j] = M[p, j]
                M[p, j] = t
        for i in range(k + 1, 3):
            f = M[i, k] / M[k, k]
            for j in range(k, 4):
                M[i, j] -= f * M[k, j]
    for i in range(2, -1, -1):
        s = M[i, 3]
        for j in range(i + 1, 3):
            s -= M[i, j] * x[j]
        x[i] = s / M[i, i]
    return True


@njit(cache=True)
def _ac_residual(W, q, mu, rhoN, rhoT, r, phi, J, want_J):
    """Alart–Curnier function phi(r) (and a generalised Jacobian J when want_J) for one 3-D contact."""
    u0 = q[0] + W[0, 0] * r[0] + W[0, 1] * r[1] + W[0, 2] * r[2]
    u1 = q[1] + W[1, 0] * r[0] + W[1, 1] * r[1] + W[1, 2] * r[2]
    u2 = q[2] + W[2, 0] * r[0] + W[2, 1] * r[1] + W[2, 2] * r[2]
    tN = r[0] - rhoN * u0
    t1 = r[1] - rhoT * u1
    t2 = r[2] - rhoT * u2
    if tN > 0.0:
        phi[0] = rhoN * u0
        R = mu * tN
        if want_J:
            for j in range(3):
                J[0, j] = rhoN * W[0, j]
    else:
        phi[0] = r[0]
        R = 0.0
        if want_J:
            J[0, 0] = 1.0
            J[0, 1] = 0.0
            J[0, 2] = 0.0
    nt = math.sqrt(t1 * t1 + t2 * t2)
    if nt <= R:
        phi[1] = rhoT * u1
        phi[2] = rhoT * u2
        if want_J:
            for j in range(3):
                J[1, j] = rhoT * W[1, j]
                J[2, j] = rhoT * W[2, j]
    else:
        e1 = t1 / nt
        e2 = t2 / nt
        phi[1] = r[1] - R * e1
        phi[2] = r[2] - R * e2
        if want_J:
            # dR/dr
            dR0 = 0.0
            dR1 = 0.0
            dR2 = 0.0
            if tN > 0.0:
                dR0 = mu * (1.0 - rhoN * W[0, 0])
                dR1 = -mu * rhoN * W[0, 1]
                dR2 = -mu * rhoN * W[0, 2]
            c = R / nt
            # dt/dr (2x3): rows (1, 2) of I - rhoT W
            for j in range(3):
                dt1 = (1.0 if j == 1 else 0.0) - rhoT * W[1, j]
                dt2 = (1.0 if j == 2 else 0.0) - rhoT * W[2, j]
                # (I - e e^T) dt
                pr = e1 * dt1 + e2 * dt2
                g1 = dt1 - e1 * pr
                g2 = dt2 - e2 * pr
                dRj = dR0 if j == 0 else (dR1 if j == 1 else dR2)
                J[1, j] = (1.0 if j == 1 else 0.0) - e1 * dRj - c * g1
                J[2, j] = (1.0 if j == 2 else 0.0) - e2 * dRj - c * g2
    return phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2]


@njit(cache=True)
def _local_err3(W, q, mu, r, u, x, px):
    """Unnormalised natural-map residual of one 3-D contact."""
    for i in range(3):
        u[i] = q[i] + W[i, 0] * r[0] + W[i, 1] * r[1] + W[i, 2] * r[2]
    return math.sqrt(nat_map_sq(DIM3, mu, r, u, x, px))


@njit(cache=True)
def local_fc3d(W, q, mu, r, tol, maxit, wk, J):
    """Solve one 3-D contact in place on r (warm start): hybrid Alart–Curnier Newton / projected fixed point.

    Returns the number of local iterations (negative when the local tolerance was not reached).
    ``wk`` is a work array of length >= 24, ``J`` a 3x3 work matrix.
    """
    qN = q[0]
    # take-off: r = 0 solves the contact iff q_N >= 0
    if qN >= 0.0:
        r[0] = 0.0
        r[1] = 0.0
        r[2] = 0.0
        return 0
    WNN = W[0, 0]
    if mu == 0.0:
        r[0] = -qN / WNN
        r[1] = 0.0
        r[2] = 0.0
        return 0
    phi = wk[0:3]
    d = wk[3:6]
    rt = wk[6:9]
    u = wk[9:12]
    x = wk[12:15]
    px = wk[15:18]
    best = wk[18:21]
    mq = wk[21:24]
    nq = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2])
    # stick: W r = -q with r inside the cone gives u = 0
    mq[0] = -q[0]
    mq[1] = -q[1]
    mq[2] = -q[2]
    if _solve3(W, mq, rt):
        if rt[0] >= 0.0 and math.sqrt(rt[1] * rt[1] + rt[2] * rt[2]) <= mu * rt[0]:
            r[0] = rt[0]
            r[1] = rt[1]
            r[2] = rt[2]
            return 0
    # slide: semismooth Newton on the Alart–Curnier function
    rhoN = 1.0 / WNN
    wT = 0.5 * (W[1, 1] + W[2, 2])
    rhoT = 1.0 / wT if wT > 0.0 else rhoN
    if r[0] <= 0.0:  # a cold start on the cone: normal part of the frictionless solution
        r[0] = -qN / WNN
        r[1] = 0.0
        r[2] = 0.0
    scale = max(nq * rhoN, math.sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]))
    atol = tol * scale
    it = 0
    for attempt in range(3):
        f = _ac_residual(W, q, mu, rhoN, rhoT, r, phi, J, WITH_J)
        kn = 0
        while kn < maxit:
            if math.sqrt(f) <= atol:
                return it
            it += 1
            kn += 1
            phi[0] = -phi[0]
            phi[1] = -phi[1]
            phi[2] = -phi[2]
            if not _solve3(J, phi, d):
                break
            t = 1.0
            ok = False
            for _ls in range(30):
                for i in range(3):
                    rt[i] = r[i] + t * d[i]
                ft = _ac_residual(W, q, mu, rhoN, rhoT, rt, mq, J, NO_J)
                if ft <= (1.0 - 1e-4 * t) * f:
                    ok = True
                    break
                t *= 0.5
            if not ok:
                break
            r[0] = rt[0]
            r[1] = rt[1]
            r[2] = rt[2]
            f = _ac_residual(W, q, mu, rhoN, rhoT, r, phi, J, WITH_J)
        if math.sqrt(f) <= atol:
            return it
        if attempt == 2:
            break
        # fallback: projected fixed point r <- P_K(r - rho (u + mu ||u_T|| e_N)), keep the best iterate
        rho = 1.0 / max(WNN, W[1, 1], W[2, 2])
        bestv = _local_err3(W, q, mu, r, u, x, px)
        best[0] = r[0]
        best[1] = r[1]
        best[2] = r[2]
        for k in range(20 * maxit):
            for i in range(3):
                u[i] = q[i] + W[i, 0] * r[0] + W[i, 1] * r[1] + W[i, 2] * r[2]
            uT = math.sqrt(u[1] * u[1] + u[2] * u[2])
            x[0] = r[0] - rho * (u[0] + mu * uT)
            x[1] = r[1] - rho * u[1]
            x[2] = r[2] - rho * u[2]
            proj_cone(DIM3, mu, x, r)
            e = _local_err3(W, q, mu, r, u, x, px)
            if e < bestv:
                bestv = e
                best[0] = r[0]
                best[1] = r[1]
                best[2] = r[2]
            if e <= tol * max(nq, 1e-300):
                break
        r[0] = best[0]
        r[1] = best[1]
        r[2] = best[2]
        it += 1
    return -max(it, 1)


@njit(cache=True)
def local_fc2d(W, q, mu, r, tol, maxit, wk):
    """Solve one 2-D contact exactly by enumerating take-off / stick / slide (both directions).

    Falls back to a projected fixed point when no case is consistent (degenerate local W).
    Returns the number of local iterations (0 for an exact case, negative on failure).
    """
    qN, qT = q[0], q[1]
    if qN >= 0.0:
        r[0] = 0.0
        r[1] = 0.0
        return 0
    W00, W01, W10, W11 = W[0, 0], W[0, 1], W[1, 0], W[1, 1]
    if mu == 0.0:
        r[0] = -qN / W00
        r[1] = 0.0
        return 0
    det = W00 * W11 - W01 * W10
    sc = max(abs(W00), abs(W11), abs(W01), abs(W10))
    if abs(det) > 1e-14 * sc * sc:
        rN = (-qN * W11 + qT * W01) / det
        rT = (-qT * W00 + qN * W10) / det
        if rN >= 0.0 and abs(rT) <= mu * rN:
            r[0] = rN
            r[1] = rT
            return 0
    small = 1e-14 * max(abs(qN), abs(qT))
    for s in (1.0, -1.0):  # r_T = s mu r_N, u_N = 0, s u_T <= 0
        den = W00 + s * mu * W01
        if den > 0.0:
            rN = -qN / den
            uT = (W10 + s * mu * W11) * rN + qT
            if rN >= 0.0 and s * uT <= small:
                r[0] = rN
                r[1] = s * mu * rN
                return 0
    # degenerate: projected fixed point
    x = wk[0:2]
    px = wk[2:4]
    u = wk[4:6]
    rho = 1.0 / max(W00, W11)
    nq = math.sqrt(qN * qN + qT * qT)
    for k in range(maxit * 20):
        u[0] = qN + W00 * r[0] + W01 * r[1]
        u[1] = qT + W10 * r[0] + W11 * r[1]
        x[0] = r[0] - rho * (u[0] + mu * abs(u[1]))
        x[1] = r[1] - rho * u[1]
        proj_cone(DIM2, mu, x, r)
        u[0] = qN + W00 * r[0] + W01 * r[1]
        u[1] = qT + W10 * r[0] + W11 * r[1]
        if math.sqrt(nat_map_sq(DIM2, mu, r, u, x, px)) <= tol * nq:
            return k + 1
    return -1


# ----------------------------------------------------------------------------------------------
# NSGS over contacts. W is given either dense (``W``, (n, n), and ``ptr`` empty) or in CSC
# (``ptr, idx, val``, and ``W`` of shape (0, 0)): one signature for both.
# ----------------------------------------------------------------------------------------------
@njit(cache=True)
def _matvec(W, ptr, idx, val, r, q, u):
    """u = Wr + q by columns (W dense or CSC), the incremental updates' order."""
    n = u.shape[0]
    for i in range(n):
        u[i] = q[i]
    csc = ptr.shape[0] != 0
    for j in range(r.shape[0]):
        rj = r[j]
        if rj != 0.0:
            if csc:
                for p in range(ptr[j], ptr[j + 1]):
                    u[idx[p]] += val[p] * rj
            else:
                for i in range(n):
                    u[i] += W[i, j] * rj


@njit(cache=True)
def diag_blocks_of(dim, W, ptr, idx, val, D):
    """The diagonal ``dim x dim`` blocks of W (dense or CSC) into D (nc, dim, dim). Returns the first
    contact a whose W_NN = D[a, 0, 0] is not > 0 (NSGS cannot solve its local problem), else -1."""
    nc = D.shape[0]
    if ptr.shape[0] == 0:
        for a in range(nc):
            for i in range(dim):
                for j in range(dim):
                    D[a, i, j] = W[a * dim + i, a * dim + j]
    else:
        D[:] = 0.0
        for c in range(ptr.shape[0] - 1):
            a = c // dim
            for p in range(ptr[c], ptr[c + 1]):
                if idx[p] // dim == a:
                    D[a, idx[p] - a * dim, c - a * dim] += val[p]
    for a in range(nc):
        if not D[a, 0, 0] > 0.0:
            return a
    return -1


@njit(cache=True)
def _sweeps(dim, W, ptr, idx, val, Wd, q, mu, r, u, order, shuffle, tol, nsweeps, local_tol, local_max_iter,
            omega, normq, resync, errs, e0, best_r, best, work, wk, J):
    """At most ``nsweeps`` NSGS sweeps, in place on r (and u = Wr + q), for one chunk of
    :func:`nsgs_fc_solve`: ``W`` dense, or ``ptr, idx, val``: W in CSC; ``Wd``: the diagonal blocks
    (nc, dim, dim); ``order``: the contact order of a sweep (int64, shuffled each sweep when
    ``shuffle``: seed numba's generator with :func:`seed` first). The error of sweep k goes to
    ``errs[e0 + k]`` (when ``errs`` is not empty). The sweeps stop early when the error is <= tol or
    not finite. u is recomputed from scratch (removing the drift of the incremental column updates)
    every ``resync`` sweeps, before any stop and at the end of the chunk, so the error returned is
    the problem's error measure of the returned r. ``best_r`` and ``best[0]`` keep the iterate of
    smallest error seen (``best[0]`` in/out). ``work`` (6, dim), ``wk`` (32,), ``J`` (3, 3): work
    arrays. Returns (sweeps done, local failures, error of the last sweep)."""
    nc = mu.shape[0]
    dense = ptr.shape[0] == 0
    n = r.shape[0]
    rl, ql, dl, x, px = work[0], work[1], work[2], work[3], work[4]
    failures = 0
    keep = errs.shape[0] > 0
    err = np.nan
    for it in range(nsweeps):
        if shuffle:
            np.random.shuffle(order)
        for k in range(nc):
            a = order[k]
            i0 = a * dim
            Wa = Wd[a]
            for i in range(dim):
                s = u[i0 + i]
                for j in range(dim):
                    s -= Wa[i, j] * r[i0 + j]
                ql[i] = s
                rl[i] = r[i0 + i]
            if dim == 3:
                st = local_fc3d(Wa, ql, mu[a], rl, local_tol, local_max_iter, wk, J)
            else:
                st = local_fc2d(Wa, ql, mu[a], rl, local_tol, local_max_iter, wk)
            if st < 0:
                failures += 1
            for i in range(dim):
                v = rl[i]
                if omega != 1.0:
                    v = omega * v + (1.0 - omega) * r[i0 + i]
                dl[i] = v - r[i0 + i]
                r[i0 + i] = v
            for i in range(dim):
                di = dl[i]
                if di != 0.0:
                    c = i0 + i
                    if dense:
                        for j in range(n):
                            u[j] += W[j, c] * di
                    else:
                        for p in range(ptr[c], ptr[c + 1]):
                            u[idx[p]] += val[p] * di
        err = fc_error(dim, r, u, mu, normq, x, px)
        last = it + 1 == nsweeps
        if err <= tol or last or (resync > 0 and (it + 1) % resync == 0) or not math.isfinite(err):
            _matvec(W, ptr, idx, val, r, q, u)
            err = fc_error(dim, r, u, mu, normq, x, px)
        if keep:
            errs[e0 + it] = err
        if err < best[0]:
            best[0] = err
            for i in range(n):
                best_r[i] = r[i]
        if not math.isfinite(err) or err <= tol:
            return it + 1, failures, err
    return nsweeps, failures, err


# codes of nsgs_fc_solve's state[3]
from .._contract import stop_code  # noqa: E402  (the contract's stopping rule)

RUNNING, BAD_W, FRESH = 0, 4, -1


# the layout of nsgs_fc_solve's packed arrays (fewer arguments: numba unboxes each array it is given)
I_LENS, I_STATE, NSTATE, NBEST = 0, 4, 7, 4


def nsgs_layout(n, nc, dim, ptr, idx, val, rptr, ridx, rval):
    """The packed arrays of :func:`nsgs_fc_solve`, ``(I, F)``: ``I`` = [the lengths of ptr, idx,
    rptr, ridx | state | order | ptr | idx | rptr | ridx] (int64), ``F`` = [best | best_r | D |
    val | rval | the work arrays of the local solvers (6 dim + 41)] (float64), and the views the caller reads
    each solve: ``(state, best, best_r)``."""
    lp, li, lr, lj = ptr.shape[0], idx.shape[0], rptr.shape[0], ridx.shape[0]
    o = I_STATE + NSTATE
    I = np.zeros(o + nc + lp + li + lr + lj, dtype=np.int64)     # (the order: the kernel sets it)
    if lp + li + lr + lj:
        I[:I_STATE] = (lp, li, lr, lj)
        I[o + nc:] = np.concatenate((ptr, idx, rptr, ridx))
    f = NBEST + n + nc * dim * dim
    F = np.empty(f + val.shape[0] + rval.shape[0] + 6 * dim + 41)     # (+ the work arrays of nsgs_fc_solve)
    if val.shape[0] + rval.shape[0]:
        F[f:f + val.shape[0] + rval.shape[0]] = np.concatenate((val, rval))
    return I, F, (I[I_STATE:o], F[:NBEST], F[NBEST:NBEST + n])


@njit(cache=True)
def nsgs_fc_solve(dim, W, I, F, q, mu, r, u, errs, tol, max_iter, local_tol, local_max_iter, omega, shuffle, normq,
                  resync, cap, turn):
    """The ``nsgs`` solve of a local friction-contact problem (fc2d, fc3d), called in turns under
    the iteration contract (:meth:`nsopt.monitor.Monitor.schedule` and :meth:`~Monitor.record`):
    chunks of :func:`_sweeps` of sizes 1, 2, 4, ... up to ``cap`` (the monitor's deterministic
    schedule: the iterates do not depend on timing), with the contract's stops (error <= tol, not
    finite, ``max_iter`` sweeps), until about ``turn`` sweeps are done in this call.

    ``I``, ``F``: the packed arrays (:func:`nsgs_layout`): W's CSC ``ptr, idx, val`` (empty: W dense,
    in ``W``; else ``W`` is (0, 0)), its CSR ``rptr, ridx, rval``, the contact ``order``, the
    diagonal blocks ``D``, ``state``, ``best`` and ``best_r``. ``state`` = [sweeps done, next chunk
    size, local failures, code, measured, sweeps of this call, contact]; call with code ``FRESH``
    to start from r: the diagonal blocks go to ``D`` (code ``BAD_W`` with the contact in
    ``state[6]`` when a W_NN <= 0 forbids NSGS) and u = Wr + q. ``errs`` receives the error of each
    sweep of the call (size >= turn + cap; empty: not kept). ``best`` = [best error, last error, measured error,
    error of the start] (out), ``best_r`` the best iterate, the start included (out).

    ``rptr, ridx, rval``: W in CSR (the problem's own storage) when W is sparse. When the solve ends
    on its best iterate, u is recomputed as ``FrictionContact.u`` computes it (W dense with at most
    ``ORDERED_ROWS`` rows: :func:`dense_affine`; CSR: :func:`csr_affine`; the same bits) and its
    error by :func:`fc_error` goes to ``best[2]``, with ``state[4] = 1`` (else 0: left to Python;
    called with ``state[4] = -1``: never, u stays the sweeps' own).

    One chunk of exactly c sweeps from r and its u (the Python loop of ``nsgs`` on gfc): code
    ``RUNNING``, ``state[0] = 0``, ``state[1] = cap = turn = max_iter = c``, ``best[0]`` the best
    error so far, ``state[4] = -1``.
    """
    n = r.shape[0]
    nc = mu.shape[0]
    o = I_STATE + NSTATE                  # the views of nsgs_layout's packed arrays
    state = I[I_STATE:o]
    order = I[o:o + nc]
    o += nc
    ptr = I[o:o + I[0]]
    o += I[0]
    idx = I[o:o + I[1]]
    o += I[1]
    rptr = I[o:o + I[2]]
    o += I[2]
    ridx = I[o:o + I[3]]
    best = F[:NBEST]
    best_r = F[NBEST:NBEST + n]
    f = NBEST + n + nc * dim * dim
    D = F[NBEST + n:f].reshape((nc, dim, dim))
    val = F[f:f + I[1]]
    rval = F[f + I[1]:f + I[1] + I[3]]
    o = f + I[1] + I[3]      # the work arrays of the local solvers (6 x dim, 32, 3 x 3): made once, with F
    work = F[o:o + 6 * dim].reshape((6, dim))
    wk = F[o + 6 * dim:o + 6 * dim + 32]
    J = F[o + 6 * dim + 32:o + 6 * dim + 41].reshape((3, 3))
    x, px = work[3], work[4]
    state[5] = 0
    measure = state[4] >= 0
    if state[3] == FRESH:
        a = diag_blocks_of(dim, W, ptr, idx, val, D)
        if a >= 0:
            state[3] = BAD_W
            state[6] = a
            return
        _matvec(W, ptr, idx, val, r, q, u)
        err = fc_error(dim, r, u, mu, normq, x, px)
        best[0] = err
        best[1] = err
        best[3] = err
        for i in range(n):
            best_r[i] = r[i]
        for i in range(order.shape[0]):     # the natural order (shuffled from there by shuffle)
            order[i] = i
        state[0] = 0
        state[1] = 1
        state[2] = 0
        state[3] = stop_code(err, tol, 0, max_iter)
    done = ZERO      # (typed: a literal 0 handed to _sweeps would compile it a second time)
    while state[3] == RUNNING and done < turn:
        c = min(state[1], cap)
        state[1] = 2 * c
        c = max(1, min(c, max_iter - state[0]))
        kk, f, err = _sweeps(dim, W, ptr, idx, val, D, q, mu, r, u, order, shuffle, tol, c, local_tol,
                             local_max_iter, omega, normq, resync, errs, done, best_r, best, work, wk, J)
        state[0] += kk
        state[2] += f
        done += kk
        best[1] = err
        state[3] = stop_code(err, tol, state[0], max_iter)
    state[5] = done
    if not measure:
        return
    state[4] = 0
    if state[3] != RUNNING and best[1] <= best[0]:
        if ptr.shape[0] == 0 and n <= ORDERED_ROWS:
            dense_affine(W, r, q, u)
        elif rptr.shape[0] == n + 1:
            csr_affine(rptr, ridx, rval, r, q, u)
        else:
            return
        best[2] = fc_error(dim, r, u, mu, normq, x, px)
        state[4] = 1


@njit(cache=True)
def seed(s):
    """Seed numba's random generator (the contact order of ``shuffle``)."""
    np.random.seed(s)
