"""Nonsmooth Gauss–Seidel ("nsgs") for friction contact (fc2d, fc3d, gfc2d, gfc3d) and generic
mechanical problems (gmp): Siconos' workhorse.

Friction contact: one sweep visits the contacts in turn; for contact a the local problem
``u_a = W_aa r_a + q_loc`` with ``q_loc = q_a + sum_{b != a} W_ab r_b`` (the current reactions) is
solved by a local solver, and ``u = Wr + q`` is updated by the columns of contact a. The sweep is
compiled (numba); the Siconos error measure (:meth:`FrictionContact.error`) is evaluated after every
sweep inside the compiled loop, on u recomputed from scratch before any decision, so the reported
error is ``problem.error(r)``. Local solvers: fc3d a hybrid like Siconos' ONECONTACT_NSN_GP_HYBRID
(closed-form take-off and stick cases, else a semismooth Newton method on the Alart–Curnier function
with a backtracking line search, falling back to the projected fixed point
``r <- P_K(r - rho (W_aa r + q_loc + mu ||u_T|| e_N))`` when Newton fails, then Newton again);
fc2d an exact enumeration of take-off / stick / slide (projected fixed point when degenerate).

Global friction contact: NSGS on the condensed local problem (:meth:`GlobalFrictionContact.local`,
W = HᵀM⁻¹H from a sparse factorisation of M), then v = M⁻¹(q + Hr); the local tolerance is tightened
until the global error reaches ``tol``.

Generic mechanical: Gauss–Seidel over the blocks (equality: the block solved exactly; LCP / relay:
projected Gauss–Seidel on the block to the local tolerance; fc2d / fc3d: the contact local solvers),
converging on :meth:`GenericMechanical.error`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import OptionError
from ..registry import Outcome, as_x0, register
from ..result import Status
from . import _gs_kernels as K

DEFAULT_MAX_ITER = 1000
_STATUS = {K.OK: Status.SOLVED, K.MAXIT: Status.MAX_ITER, K.NUMERR: Status.NUMERICAL_ERROR}
_EMPTY = np.empty(0)


def _diag_blocks(W, nc, dim):
    """The diagonal blocks W_aa, shape (nc, dim, dim)."""
    if sp.issparse(W):
        C = W.tocoo()
        bi, bj = C.row // dim, C.col // dim
        m = bi == bj
        D = np.zeros((nc, dim, dim))
        np.add.at(D, (bi[m], C.row[m] % dim, C.col[m] % dim), C.data[m])
        return D
    Wd = np.asarray(W)
    return np.array(Wd.reshape(nc, dim, nc, dim).diagonal(axis1=0, axis2=2).transpose(2, 0, 1), order="C")


def fc_split(problem):
    """(ptr, idx, val) of W in CSC (int64 indices), the diagonal blocks, ||q||, and a message when
    a contact has W_NN <= 0 (no Gauss–Seidel step possible); computed once, cached on the problem."""
    def make():
        W = problem.W
        if sp.issparse(W):
            C = W.tocsc(copy=True)
            C.sum_duplicates()
            C.sort_indices()
            ptr, idx, val = C.indptr.astype(np.int64), C.indices.astype(np.int64), C.data
        else:  # dense: CSC arrays straight from the nonzero pattern of the transpose (cheaper than scipy)
            AT = np.asarray(W).T
            mask = AT != 0.0
            ptr = np.zeros(AT.shape[0] + 1, dtype=np.int64)
            np.cumsum(mask.sum(axis=1), out=ptr[1:])
            idx = np.nonzero(mask)[1].astype(np.int64)
            val = AT[mask]
        D = _diag_blocks(W, problem.nc, problem.dim)
        bad = np.flatnonzero(~(D[:, 0, 0] > 0.0))
        msg = None
        if bad.size:
            a = int(bad[0])
            msg = (f"contact {a} has W_NN = {D[a, 0, 0]:g} <= 0 (W[{a * problem.dim},{a * problem.dim}]): "
                   "the local problem of NSGS is not solvable")
        return (ptr, idx, np.array(val, dtype=np.float64, order="C"), D,
                float(np.linalg.norm(problem.q)), msg)
    return problem.cached("gs_fc_csc", make)


def _check_opts(omega, local_tol, local_max_iter, resync):
    if not isinstance(omega, (int, float, np.floating)) or not 0.0 < float(omega) < 2.0:
        raise OptionError(f"nsgs: omega must be a number in (0, 2), got {omega!r}")
    if not isinstance(local_tol, (int, float, np.floating)) or not float(local_tol) > 0.0:
        raise OptionError(f"nsgs: local_tol must be a positive number, got {local_tol!r}")
    if isinstance(local_max_iter, bool) or not isinstance(local_max_iter, (int, np.integer)) or local_max_iter < 1:
        raise OptionError(f"nsgs: local_max_iter must be a positive integer, got {local_max_iter!r}")
    if isinstance(resync, bool) or not isinstance(resync, (int, np.integer)) or resync < 0:
        raise OptionError(f"nsgs: resync must be a non-negative integer, got {resync!r}")


def _nsgs_fc(problem, tol, max_iter, history, callback, r0, local_tol, local_max_iter, omega,
             shuffle, seed, resync):
    """The NSGS loop on a FrictionContact; returns an Outcome with x={"r": r}."""
    ptr, idx, val, D, normq, msg = fc_split(problem)
    dim = problem.dim
    max_iter = DEFAULT_MAX_ITER if max_iter is None else int(max_iter)
    r = np.zeros(problem.size) if r0 is None else as_x0(r0, problem.size, "r0")
    if msg:
        return Outcome(x={"r": r}, status=Status.NUMERICAL_ERROR, nit=0,
                       history=[] if history else None, message=msg)
    u = np.empty(problem.size)
    order = np.arange(problem.nc, dtype=np.int64)
    mu = problem.mu
    q = problem.q
    if callback is None:
        hist = np.empty(max_iter) if history else _EMPTY
        nit, err, st, fails = K.nsgs_fc(dim, ptr, idx, val, D, q, mu, r, u, order, bool(shuffle), int(seed),
                                        float(tol), max_iter, float(local_tol), int(local_max_iter),
                                        float(omega), normq, int(resync), hist)
        status = _STATUS[st]
        hl = hist[:nit].tolist() if history else None
    else:
        hl = [] if history else None
        hist1 = np.empty(1)
        nit, fails, status = 0, 0, Status.MAX_ITER
        err = float("nan")
        rng = np.random.default_rng(seed)
        while nit < max_iter:
            s1 = int(rng.integers(0, 2**31 - 1)) if shuffle else 0
            k1, err, st, f1 = K.nsgs_fc(dim, ptr, idx, val, D, q, mu, r, u, order, bool(shuffle), s1,
                                        float(tol), 1, float(local_tol), int(local_max_iter),
                                        float(omega), normq, int(resync), hist1)
            fails += f1
            if k1 == 0:            # already solved on entry
                status = Status.SOLVED
                break
            nit += 1
            if hl is not None:
                hl.append(err)
            if st == K.NUMERR:
                status = Status.NUMERICAL_ERROR
                break
            if st == K.OK:
                status = Status.SOLVED
                break
            try:
                callback(nit, {"r": r.copy()}, err)
            except StopIteration:
                status = Status.CALLBACK_STOP
                break
    if status is Status.SOLVED:
        message = f"error {err:.3g} <= tol after {nit} sweeps"
    elif status is Status.MAX_ITER:
        message = f"no convergence in {max_iter} sweeps (error {err:.3g})"
    elif status is Status.NUMERICAL_ERROR:
        message = f"non-finite iterate after {nit} sweeps"
    else:
        message = f"stopped by the callback after {nit} sweeps"
    return Outcome(x={"r": r}, status=status, nit=int(nit), history=hl, message=message,
                   info={"error": float(err), "local_failures": int(fails)})


@register(("fc2d", "fc3d"), "nsgs",
          "nonsmooth Gauss–Seidel over contacts (compiled; fc3d local Alart–Curnier Newton with "
          "projected fixed-point fallback, fc2d exact local solve)")
def nsgs_fc(problem, *, tol, max_iter, history=False, callback=None, r0=None, local_tol=1e-13,
            local_max_iter=10, omega=1.0, shuffle=False, seed=0, resync=50):
    """NSGS for local friction contact.

    Options: ``r0`` initial reaction (default 0); ``local_tol`` (relative tolerance of the local
    Newton solver), ``local_max_iter`` (Newton iterations per attempt); ``omega`` relaxation of the
    contact update in (0, 2); ``shuffle`` visits the contacts in a new random order each sweep
    (``seed``); ``resync`` recomputes u = Wr + q from scratch every so many sweeps (0: only before
    deciding convergence) to remove the rounding drift of the incremental updates.
    """
    _check_opts(omega, local_tol, local_max_iter, resync)
    return _nsgs_fc(problem, tol, max_iter, history, callback, r0, local_tol, local_max_iter, omega,
                    shuffle, seed, resync)


@register(("gfc2d", "gfc3d"), "nsgs",
          "NSGS on the condensed local problem (W = HᵀM⁻¹H by a sparse factorisation of M), "
          "then v = M⁻¹(q + Hr)")
def nsgs_gfc(problem, *, tol, max_iter, history=False, callback=None, r0=None, local_tol=1e-13,
             local_max_iter=10, omega=1.0, shuffle=False, seed=0, resync=50):
    """NSGS for global friction contact through :meth:`GlobalFrictionContact.local`.

    Same options as the local ``nsgs``; history and callback report the error of the local problem.
    The local tolerance starts at ``tol`` and is tightened (at most 4 times) until the global error
    measure is <= tol.
    """
    _check_opts(omega, local_tol, local_max_iter, resync)
    loc = problem.local()
    max_iter = DEFAULT_MAX_ITER if max_iter is None else int(max_iter)
    r = None if r0 is None else as_x0(r0, problem.size, "r0")
    t, nit, hist = tol, 0, ([] if history else None)
    out = None
    for _ in range(5):
        out = _nsgs_fc(loc, t, max_iter - nit, history, callback, r, local_tol, local_max_iter, omega,
                       shuffle, seed, resync)
        nit += out.nit
        if hist is not None:
            hist.extend(out.history or [])
        r = out.x["r"]
        v = problem.v(r)
        err = problem.error(r, v)
        if err <= tol or out.status is not Status.SOLVED or nit >= max_iter:
            break
        lerr = out.info["error"]
        t = max(min(t, lerr) * max(tol / err, 1e-3) * 0.5, 1e-16)
    status = Status.SOLVED if err <= tol else (Status.MAX_ITER if out.status is Status.SOLVED else out.status)
    return Outcome(x={"r": r, "v": v}, status=status, nit=nit, history=hist,
                   message=f"{out.message} (local problem); global error {err:.3g}",
                   info={"error": err, "local_error": out.info.get("error"),
                         "local_failures": out.info.get("local_failures")})


# ----------------------------------------------------------------------------------------------
# generic mechanical problems
# ----------------------------------------------------------------------------------------------
def _gmp_split(problem):
    def make():
        M = problem.M
        A = M.tocsr() if sp.issparse(M) else sp.csr_matrix(np.asarray(M))
        blocks = []
        for b, s in problem.slices():
            rows = A[s, :]
            Mkk = rows[:, s].toarray()
            extra = None
            if b.kind == "equality":
                try:
                    extra = np.linalg.inv(Mkk) if np.linalg.cond(Mkk) < 1e14 else None
                except np.linalg.LinAlgError:
                    extra = None
            elif b.kind in ("lcp", "relay"):
                B = sp.csr_matrix(Mkk)
                d = np.ascontiguousarray(np.diag(Mkk), dtype=np.float64)
                if b.kind == "lcp":
                    lo, hi = np.zeros(b.size), np.full(b.size, np.inf)
                else:
                    lo, hi = np.array(b.lb, float), np.array(b.ub, float)
                extra = (B.indptr.astype(np.int64), B.indices.astype(np.int64),
                         np.ascontiguousarray(B.data, dtype=np.float64), d, lo, hi)
            blocks.append((b, s, rows, Mkk, extra))
        return blocks
    return problem.cached("gs_gmp_blocks", make)


def _box_block_solve(Mkk, extra, ql, rk, tol, maxit):
    """Projected Gauss–Seidel on one LCP/relay block to its own tolerance (sweeps in the kernel)."""
    ptr, idx, val, d, lo, hi = extra
    if np.any(d <= 0):
        return False
    np.clip(rk, lo, hi, out=rk)
    scale = 1.0 + float(np.linalg.norm(ql))
    for _ in range(max(1, maxit)):
        K.pgs_sweeps(ptr, idx, val, d, ql, lo, hi, rk, 1.0, 10)
        w = Mkk @ rk + ql
        if np.linalg.norm(rk - np.clip(rk - w, lo, hi)) <= tol * scale:
            return True
    return False


def _gmp_reduced(problem):
    """Siconos' SUBS_EQ: the equality blocks eliminated by a Schur complement (dense, cached).

    Returns None when there is no equality block, no other block, M_EE is singular or too large;
    else (reduced GenericMechanical on the other blocks, E rows, O rows, LU of M_EE, M_EO).
    """
    def make():
        from scipy.linalg import lu_factor, lu_solve

        from ..problems import GenericMechanical

        blocks = problem.blocks
        if not any(b.kind == "equality" for b in blocks) or all(b.kind == "equality" for b in blocks):
            return None
        if problem.size > 3000:
            return None
        eq = np.zeros(problem.size, dtype=bool)
        for b, s in problem.slices():
            eq[s] = b.kind == "equality"
        E, O = np.flatnonzero(eq), np.flatnonzero(~eq)
        M = problem.M.toarray() if sp.issparse(problem.M) else np.asarray(problem.M)
        MEE, MEO, MOE, MOO = M[np.ix_(E, E)], M[np.ix_(E, O)], M[np.ix_(O, E)], M[np.ix_(O, O)]
        if np.linalg.cond(MEE) > 1e12:
            return None
        lu = lu_factor(MEE)
        q = np.asarray(problem.q)
        S = MOO - MOE @ lu_solve(lu, MEO)
        qr = q[O] - MOE @ lu_solve(lu, q[E])
        red = GenericMechanical(S, qr, [b for b in blocks if b.kind != "equality"])
        return red, E, O, lu, MEO, q[E]
    return problem.cached("gs_gmp_subs_eq", make)


def _gmp_loop(P, r, tol, max_iter, hist, callback, local_tol, local_max_iter, full):
    """Gauss–Seidel sweeps over the blocks of P in place on r; ``full(r)`` -> (r of the original
    problem, its error)."""
    blocks = _gmp_split(P)
    q = np.asarray(P.q)
    wk = np.empty(32)
    J = np.empty((3, 3))
    rf, err = full(r)
    if err <= tol:
        return rf, err, Status.SOLVED, 0, "the initial guess solves the problem"
    for b, s, rows, Mkk, extra in blocks:
        if b.kind in ("fc2d", "fc3d") and not Mkk[0, 0] > 0:
            return rf, err, Status.NUMERICAL_ERROR, 0, f"{b.kind} block at rows {s.start}:{s.stop} has W_NN <= 0"
        if b.kind in ("lcp", "relay") and np.any(extra[3] <= 0):
            return rf, err, Status.NUMERICAL_ERROR, 0, f"{b.kind} block at rows {s.start}:{s.stop} has a diagonal entry <= 0"
    for it in range(max_iter):
        for b, s, rows, Mkk, extra in blocks:
            rk = r[s]
            ql = np.asarray(rows @ r).reshape(-1) + q[s] - Mkk @ rk
            if b.kind == "equality":
                if extra is not None:
                    r[s] = -(extra @ ql)
                else:
                    r[s] = np.linalg.lstsq(Mkk, -ql, rcond=None)[0]
            elif b.kind in ("lcp", "relay"):
                x = rk.copy()
                _box_block_solve(Mkk, extra, ql, x, local_tol, local_max_iter * 10)
                r[s] = x
            elif b.kind == "fc3d":
                x = rk.copy()
                K.local_fc3d(Mkk, ql, float(b.mu), x, float(local_tol), int(local_max_iter), wk, J)
                r[s] = x
            else:
                x = rk.copy()
                K.local_fc2d(Mkk, ql, float(b.mu), x, float(local_tol), int(local_max_iter), wk)
                r[s] = x
        nit = it + 1
        rf, err = full(r)
        if hist is not None:
            hist.append(err)
        if not np.isfinite(err):
            return rf, err, Status.NUMERICAL_ERROR, nit, f"non-finite iterate after {nit} sweeps"
        if err <= tol:
            return rf, err, Status.SOLVED, nit, f"error {err:.3g} <= tol after {nit} sweeps"
        if callback is not None:
            try:
                callback(nit, {"r": rf.copy()}, err)
            except StopIteration:
                return rf, err, Status.CALLBACK_STOP, nit, f"stopped by the callback after {nit} sweeps"
    return rf, err, Status.MAX_ITER, max_iter, f"no convergence in {max_iter} sweeps (error {err:.3g})"


@register("gmp", "nsgs",
          "Gauss–Seidel over the blocks (equalities substituted or solved, LCP/relay by projected "
          "Gauss–Seidel, contacts by the NSGS local solvers)")
def nsgs_gmp(problem, *, tol, max_iter, history=False, callback=None, r0=None, local_tol=1e-13,
             local_max_iter=10, equalities="substitute"):
    """NSGS for a generic mechanical problem, converging on :meth:`GenericMechanical.error`.

    Options: ``r0``; ``local_tol``, ``local_max_iter`` (local solvers); ``equalities``:
    ``"substitute"`` (default, Siconos' SUBS_EQ: the equality blocks are eliminated once by a
    Schur complement and recovered after each sweep; falls back to ``"gs"`` when M_EE is singular
    or the problem is large) or ``"gs"`` (each equality block solved in turn within the sweep,
    Siconos' default NSGS).
    """
    _check_opts(1.0, local_tol, local_max_iter, 0)
    if equalities not in ("substitute", "gs"):
        raise OptionError(f"nsgs: equalities must be 'substitute' or 'gs', got {equalities!r}")
    max_iter = DEFAULT_MAX_ITER if max_iter is None else int(max_iter)
    r = as_x0(r0, problem.size, "r0")
    hist = [] if history else None
    if equalities == "substitute" and all(b.kind == "equality" for b in problem.blocks):
        try:  # only equalities: one linear solve
            if sp.issparse(problem.M):
                from scipy.sparse.linalg import spsolve

                x = np.asarray(spsolve(sp.csc_matrix(problem.M), -np.asarray(problem.q))).reshape(-1)
            else:
                x = np.linalg.solve(np.asarray(problem.M), -np.asarray(problem.q))
            err = problem.error(x)
            if np.isfinite(err) and err <= tol:
                return Outcome(x={"r": x}, status=Status.SOLVED, nit=1, history=[err] if history else None,
                               message="only equality blocks: one linear solve", info={"error": err})
        except (np.linalg.LinAlgError, RuntimeError, ValueError):
            pass
    red = _gmp_reduced(problem) if equalities == "substitute" else None
    if red is None:
        rf, err, status, nit, message = _gmp_loop(problem, r, tol, max_iter, hist, callback, local_tol,
                                                  local_max_iter, lambda x: (x, problem.error(x)))
        return Outcome(x={"r": rf}, status=status, nit=nit, history=hist, message=message,
                       info={"error": err})
    from scipy.linalg import lu_solve

    P, E, O, lu, MEO, qE = red
    rf = r.copy()

    def full(rO):
        rf[O] = rO
        rf[E] = -lu_solve(lu, qE + MEO @ rO)
        return rf, problem.error(rf)

    rO = r[O].copy()
    rf, err, status, nit, message = _gmp_loop(P, rO, tol, max_iter, hist, callback, local_tol,
                                              local_max_iter, full)
    return Outcome(x={"r": rf.copy()}, status=status, nit=nit, history=hist,
                   message=message + " (equalities substituted)", info={"error": err})
