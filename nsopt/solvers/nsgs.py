"""Nonsmooth Gauss–Seidel ("nsgs") for friction contact (fc2d, fc3d, gfc2d, gfc3d) and generic
mechanical problems (gmp): Siconos' workhorse.

Friction contact: one sweep visits the contacts in turn; for contact a the local problem
``u_a = W_aa r_a + q_loc`` with ``q_loc = q_a + sum_{b != a} W_ab r_b`` (the current reactions) is
solved by a local solver, and ``u = Wr + q`` is updated by the columns of contact a. The sweep is
compiled (numba) and runs in chunks of sweeps under the iteration contract
(:class:`nsopt.monitor.Monitor`: ``time_limit`` and Ctrl-C act between chunks of about 20 ms); the
Siconos error measure (:func:`nsopt.problems.cones.fc_error`, compiled twin
``_gs_kernels.fc_error``) is evaluated after every sweep inside the compiled loop, on u recomputed
from scratch at the end of each chunk and before any decision, so the reported error is the
problem's error measure of the returned r (the method returns it with u, and ``solve`` does not
recompute it). Local solvers: fc3d a hybrid like Siconos' ONECONTACT_NSN_GP_HYBRID
(closed-form take-off and stick cases, else a semismooth Newton method on the Alart–Curnier function
with a backtracking line search, falling back to the projected fixed point
``r <- P_K(r - rho (W_aa r + q_loc + mu ||u_T|| e_N))`` when Newton fails, then Newton again);
fc2d an exact enumeration of take-off / stick / slide (projected fixed point when degenerate).

Global friction contact: NSGS on the condensed local problem (the reduction
:class:`nsopt.reductions.friction.GlobalToLocal`, W = HᵀM⁻¹H from a sparse factorisation of M),
then v = M⁻¹(q + Hr) after each chunk, judged by the global error; the local tolerance is tightened
until the global error reaches ``tol``.

Generic mechanical: Gauss–Seidel over the blocks (equalities substituted by the reduction
:class:`nsopt.reductions.friction.SubstituteEqualities`, or each equality block solved exactly; LCP / relay:
projected Gauss–Seidel on the block to the local tolerance; fc2d / fc3d: the contact local solvers),
converging on :meth:`GenericMechanical.error`.
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from ..exceptions import OptionError
from ..linalg import solve_or_lstsq
from ..monitor import WORK_PER_CHUNK
from ..problems._base import FLOAT64, ORDERED_ROWS, affine, nnz, norm2
from ..reductions.friction import GlobalToLocal, SubstituteEqualities
from ..registry import plan, register
from ..result import Solution, Status, judged
from . import _gs_kernels as K

DEFAULT_MAX_ITER = 1000
LOCAL_WORK = 100     # flops of one contact's local solve, for the chunk schedule (work of a sweep = nnz(W) + this x nc)


def fc_split(problem):
    """(ptr, idx, val) of W in CSC (int64 indices), the diagonal blocks, and a message when a
    contact has W_NN <= 0 (no Gauss–Seidel step possible); computed once per W (shared by every
    problem made by ``replace`` with the same W)."""
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
        D = problem.diag_blocks()
        bad = np.flatnonzero(~(D[:, 0, 0] > 0.0))
        msg = None
        if bad.size:
            a = int(bad[0])
            msg = (f"contact {a} has W_NN = {D[a, 0, 0]:g} <= 0 (W[{a * problem.dim},{a * problem.dim}]): "
                   "the local problem of NSGS is not solvable")
        return ptr, idx, np.array(val, dtype=np.float64, order="C"), D, msg
    return problem.cached("gs_fc_csc", make, on=("W",))


def _check_opts(omega, local_tol, local_max_iter, resync):
    if not isinstance(omega, (int, float, np.floating)) or not 0.0 < float(omega) < 2.0:
        raise OptionError(f"nsgs: omega must be a number in (0, 2), got {omega!r}")
    if not isinstance(local_tol, (int, float, np.floating)) or not float(local_tol) > 0.0:
        raise OptionError(f"nsgs: local_tol must be a positive number, got {local_tol!r}")
    if isinstance(local_max_iter, bool) or not isinstance(local_max_iter, (int, np.integer)) or local_max_iter < 1:
        raise OptionError(f"nsgs: local_max_iter must be a positive integer, got {local_max_iter!r}")
    if isinstance(resync, bool) or not isinstance(resync, (int, np.integer)) or resync < 0:
        raise OptionError(f"nsgs: resync must be a non-negative integer, got {resync!r}")


_LOADED: list = []     # the kernels are loaded (Dispatcher.signatures costs ~100 us per look)


def _csr_of(W):
    """W in CSR arrays for u = Wr + q as ``FrictionContact.u`` computes it (the re-solve kernel's
    last product): a sparse W's own arrays, the nonzeros of a small dense W by rows (the same bits,
    :func:`~nsopt.problems._products.csr_affine`), empty arrays for a large dense W (BLAS: the
    product is then left to Python)."""
    if sp.issparse(W):
        return W.indptr, W.indices, W.data
    if W.shape[0] > ORDERED_ROWS:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0)   # none: not given
    mask = W != 0.0
    ptr = np.zeros(W.shape[0] + 1, dtype=np.int32)
    np.cumsum(mask.sum(axis=1), out=ptr[1:])
    return ptr, np.nonzero(mask)[1].astype(np.int32), np.ascontiguousarray(W[mask])


class _Sweeper:
    """NSGS sweeps on one FrictionContact: the CSC split and the work arrays, built once per W and
    kept in the problem's cache or the caller's :class:`~nsopt.Workspace`. ``work``: the cost of
    one sweep in flops (the monitor's deterministic chunk schedule)."""

    def __init__(self, problem):
        self.ptr, self.idx, self.val, self.D, self.msg = fc_split(problem)
        n, nc = problem.size, problem.nc
        self.dim = problem.dim
        self.work = self.val.shape[0] + LOCAL_WORK * nc
        self.u = np.empty(n)
        self.best_r = np.empty(n)
        self.best = np.empty(1)
        self.errs = np.empty(64)
        self.order = np.arange(nc, dtype=np.int64)
        self.x, self.px = np.empty(self.dim), np.empty(self.dim)
        if not self.msg and not _LOADED:
            # load the compiled kernels now (part of the build, not of the time limit)
            self.error(problem, np.zeros(n))
            self.run(np.zeros(n), 0, 0.0, np.inf, (1e-13, 1, 1.0, False, 0))
            _LOADED.append(True)

    def error(self, problem, r):
        """u = Wr + q (kept in ``self.u``) and the error of r, by the compiled twin; sets the q, mu
        and ||q|| that :meth:`run` uses."""
        self.q, self.mu, self.qnorm = problem.q, problem.mu, problem.qnorm
        K.matvec_csc(self.ptr, self.idx, self.val, r, self.q, self.u)
        return K.fc_error(self.dim, r, self.u, self.mu, self.qnorm, self.x, self.px)

    def run(self, r, nsweeps, tol, best_err, opts):
        """At most ``nsweeps`` sweeps in place on r (after :meth:`error`); returns (errors per
        sweep, local failures)."""
        if self.errs.shape[0] < nsweeps:
            self.errs = np.empty(max(nsweeps, 2 * self.errs.shape[0]))
        self.best[0] = best_err
        local_tol, local_max_iter, omega, shuffle, resync = opts
        k, fails = K.nsgs_fc(self.dim, self.ptr, self.idx, self.val, self.D, self.q, self.mu, r, self.u,
                             self.order, shuffle, tol, nsweeps, local_tol, local_max_iter, omega,
                             self.qnorm, resync, self.errs, self.best_r, self.best)
        return self.errs[:k], fails


def _sweeper(problem, mon, shuffle):
    sw = mon.state(problem, "nsgs_sweeper", lambda: _Sweeper(problem), on=("W",))
    if shuffle:   # the same seed gives the same sequence of orders
        sw.order[:] = np.arange(sw.order.shape[0])
    return sw


def _options(local_tol, local_max_iter, omega, shuffle, seed, resync):
    _check_opts(omega, local_tol, local_max_iter, resync)
    if shuffle:
        K.seed(int(seed))
    return float(local_tol), int(local_max_iter), float(omega), bool(shuffle), int(resync)


@register(("fc2d", "fc3d"), "nsgs",
          "nonsmooth Gauss–Seidel over contacts (compiled; fc3d local Alart–Curnier Newton with "
          "projected fixed-point fallback, fc2d exact local solve)")
def nsgs_fc(problem, mon, *, local_tol=1e-13, local_max_iter=10, omega=1.0, shuffle=False, seed=0, resync=50):
    """NSGS for local friction contact, from the warm start ``r`` (default 0).

    Options: ``local_tol`` (relative tolerance of the local Newton solver), ``local_max_iter``
    (Newton iterations per attempt); ``omega`` relaxation of the contact update in (0, 2);
    ``shuffle`` visits the contacts in a new random order each sweep (``seed``); ``resync``
    recomputes u = Wr + q from scratch every so many sweeps (0: only at the end of each chunk and
    before deciding convergence) to remove the rounding drift of the incremental updates.
    ``max_iter``: sweeps (default 1000).
    """
    opts = _options(local_tol, local_max_iter, omega, shuffle, seed, resync)
    mon.budget(DEFAULT_MAX_ITER)
    sw = _sweeper(problem, mon, shuffle)
    mon.built()
    r = mon.start_vector("r", problem.size)
    if sw.msg:
        return mon.outcome(x={"r": r}, status=Status.NUMERICAL_ERROR, message=sw.msg)
    fails = 0
    if not mon.start({"r": r}, sw.error(problem, r)):
        while not mon.stopped:
            # chunks on the deterministic schedule (sizes fixed by the problem, not by timing), which
            # the re-solve plan (_Plan) runs in one compiled call: the same iterates either way
            errs, f = sw.run(r, mon.chunk(work=sw.work), mon.tol, mon.best_err, opts)
            fails += f
            mon.steps(errs, {"r": r}, best=({"r": sw.best_r}, sw.best[0]))
    info = {"local_failures": fails}
    if mon.err <= mon.best_err:
        # the last iterate is (one of) the best: it comes back with u and its error (_measured)
        r = r.copy()
        u, err = _measured(problem, r, sw, problem.qnorm)
        out = mon.outcome(info=info, x={"r": r, "u": u})
        out.error, out.complete = err, True
        return out
    return mon.outcome(info=info)


def _measured(problem, r, sw, qnorm):
    """(u, error) of r: u = Wr + q by ``problem.u``'s own product (``problems._base.affine``), the
    error by the compiled twin of the problem's measure on (r, u), so the same number as
    ``problem.error(r)`` up to the twin's rounding (tests/test_resolve.py); solve() does not
    recompute it."""
    u = affine(problem.W, r, problem.q)
    return u, K.fc_error(problem.dim, r, u, problem.mu, qnorm, sw.x, sw.px)


_STATUS = {K.SOLVED: Status.SOLVED, K.MAX_ITER: Status.MAX_ITER, K.NON_FINITE: Status.NUMERICAL_ERROR}


_FRESH, _RUNNING, _BAD_START, _SOLVED = K.FRESH, K.RUNNING, K.BAD_START, Status.SOLVED


class _Plan:
    """The re-solve plan of ``nsgs`` on fc2d/fc3d (:func:`nsopt.registry.plan`): the whole solve in
    one compiled call (:func:`_gs_kernels.nsgs_fc_solve`: the chunks, best iterate and stops of
    :func:`nsgs_fc` under the monitor), then the Solution that ``nsopt.solve`` would build.
    The sweeper (CSC split, diagonal blocks) is the full path's, from the workspace; a new W
    fetches or builds it there."""

    def __init__(self, problem, tol, max_iter, opts, ws):
        self.cls, self.dim, self.ws = type(problem), problem.dim, ws
        self.tol = tol
        self.max_iter = DEFAULT_MAX_ITER if max_iter is None else max_iter
        self.local_tol, self.local_max_iter, self.omega, _, self.resync = opts
        self.W = self.sw = self.last = None
        self.state = np.empty(5, dtype=np.int64)
        self.best = np.empty(3)

    def _bind(self, problem):
        """The sweeper of problem's W (None when NSGS cannot run on it: the full path reports why)."""
        if problem.size == 0:
            return None
        sw = self.ws.get(problem, "nsgs_sweeper", lambda: _Sweeper(problem), ("W",))
        if sw.msg:
            return None
        self.sw, self.W, self.csr = sw, problem.W, _csr_of(problem.W)
        self.best_r = np.empty(problem.size)
        cap = max(1, int(WORK_PER_CHUNK // max(sw.work, 1)))
        self.cap, self.budget = cap, 4 * cap
        self.errs = np.empty(max(1, min(cap, self.max_iter)))
        # the kernel's arguments before q, between u and qnorm, after qnorm (one tuple each: a call
        # unpacks them in C)
        self.head = (self.dim, sw.ptr, sw.idx, sw.val, sw.D)
        self.mid = (sw.order, self.tol, self.max_iter, self.local_tol, self.local_max_iter, self.omega)
        self.tail = (self.resync, self.errs, self.best_r, self.best, cap, self.state, self.budget) + tuple(self.csr)
        return sw

    def __call__(self, problem, warm_start, options):
        t0 = time.perf_counter()
        if type(problem) is not self.cls or problem.dim != self.dim:
            return None
        build = 0.0
        if problem.W is not self.W:
            if self._bind(problem) is None:
                return None
            build = time.perf_counter() - t0
        q = problem.q
        n = q.shape[0]
        if warm_start is None:
            r = np.zeros(n)
        elif warm_start is self.last and warm_start.r.shape[0] == n:   # this plan's last Solution
            r = warm_start.r.copy()
        elif type(warm_start) is Solution:     # a previous solve of this kind (warm_start_of's cheap case)
            r0, p0 = warm_start.r, warm_start.problem
            if type(p0) is not self.cls or p0.dim != self.dim or r0 is None or r0.shape[0] != n \
                    or not math.isfinite(warm_start.error):
                return None
            r = r0.copy()
        elif type(warm_start) is np.ndarray and warm_start.shape == (n,) and warm_start.dtype == FLOAT64:
            r = warm_start.copy()              # checked finite by the kernel
        else:
            return None                        # validated by the full path
        state = self.state
        u = np.empty(n)
        state[3] = _FRESH
        qnorm = math.hypot(*q.tolist()) if n <= 16 else norm2(q)     # (norm2's own short path)
        solve = K.nsgs_fc_solve
        while True:
            solve(*self.head, q, problem.mu, r, u, *self.mid, qnorm, *self.tail)
            if state[3] != _RUNNING:
                break
        k, _, fails, code, measured = state.tolist()
        if code == _BAD_START:
            return None
        best_err, last, err = self.best.tolist()
        if measured:             # the last iterate is the best: u and its error as nsgs_fc returns them
            x = {"r": r, "u": u}
        elif last <= best_err:   # the same, u by BLAS (a large dense W)
            u, err = _measured(problem, r, self.sw, qnorm)
            x = {"r": r, "u": u}
        else:                    # the best iterate, u and the error recomputed (as nsopt.solve does)
            x = problem.complete({"r": self.best_r.copy()})
            err = float(problem.error_of(x))
        if code == K.SOLVED:     # (the monitor's message, formatted when it is read)
            msg = ("error %.3g <= tol after %d iteration(s)", (last, k))
        elif code == K.MAX_ITER:
            msg = f"no convergence in {k} iteration(s) (best error {best_err:.3g})"
        else:
            msg = f"non-finite error after {k} iteration(s)"
        sol = Solution._make(problem, "nsgs", _SOLVED if err <= self.tol else judged(_STATUS[code], err, self.tol),
                             err, self.tol, k, time.perf_counter() - t0, x, None, msg, {"local_failures": fails},
                             dict(options) if options else {}, build)
        self.last = sol if math.isfinite(err) else None      # (a finite r of this W: a warm start as it is)
        return sol


@plan(("fc2d", "fc3d"), "nsgs")
def _nsgs_plan(problem, tol, max_iter, options, ws, info=None):
    if options.get("shuffle") or not set(options) <= {"local_tol", "local_max_iter", "omega", "resync", "seed",
                                                       "shuffle"}:
        return None
    o = {"local_tol": 1e-13, "local_max_iter": 10, "omega": 1.0, "shuffle": False, "seed": 0, "resync": 50, **options}
    p = _Plan(problem, tol, max_iter, _options(**o), ws)
    return p if p._bind(problem) is not None else None


@register(("gfc2d", "gfc3d"), "nsgs",
          "NSGS on the condensed local problem (W = HᵀM⁻¹H by a sparse factorisation of M), "
          "then v = M⁻¹(q + Hr)")
def nsgs_gfc(problem, mon, *, local_tol=1e-13, local_max_iter=10, omega=1.0, shuffle=False, seed=0, resync=50):
    """NSGS for global friction contact through the reduction
    :class:`~nsopt.reductions.friction.GlobalToLocal`.

    Same options as the local ``nsgs``. Each iteration of the contract is a chunk of sweeps on the
    local problem followed by v = M⁻¹(q + Hr) and the global error (one sweep per chunk when a
    history or a callback is requested). The local problem's sweeps stop at a local tolerance that
    starts at ``tol`` and is tightened while the global error is above ``tol``.
    """
    opts = _options(local_tol, local_max_iter, omega, shuffle, seed, resync)
    mon.budget(DEFAULT_MAX_ITER)
    red = GlobalToLocal()
    loc, data = red.reduce(problem)
    sw = _sweeper(loc, mon, shuffle)
    mon.built()
    r = mon.start_vector("r", problem.size)
    if sw.msg:
        return mon.outcome(x={"r": r}, status=Status.NUMERICAL_ERROR, message=sw.msg + " (local problem)")

    def full(r):
        x = red.invert({"r": r}, data)
        return x, problem.error(r, x["v"])

    x, err = full(r)
    sw.error(loc, r)     # u = Wr + q_loc for the sweeps
    fails, t = 0, mon.tol
    if not mon.start(x, err):
        while not mon.stopped:
            c = mon.chunk(per_iteration_errors=False, work=nnz(loc.W) + nnz(problem.H))   # deterministic
            errs, f = sw.run(r, c, t, np.inf, opts)
            fails += f
            x, err = full(r)
            if errs.shape[0] < c and err > mon.tol:   # the local tolerance was reached, not the global one
                t = max(min(t, float(errs[-1])) * max(mon.tol / err, 1e-3) * 0.5, 1e-16)
            mon.advance(errs.shape[0], x, err)
    return mon.outcome(info={"local_failures": fails, "local_tol_final": t})


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


def _gmp_sweep(P, blocks, r, local_tol, local_max_iter, wk, J):
    """One Gauss–Seidel sweep over the blocks of P, in place on r."""
    q = np.asarray(P.q)
    for b, s, rows, Mkk, extra in blocks:
        rk = r[s]
        ql = np.asarray(rows @ r).reshape(-1) + q[s] - Mkk @ rk
        if b.kind == "equality":
            r[s] = -(extra @ ql) if extra is not None else solve_or_lstsq(Mkk, -ql)[0]
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


def _gmp_unsolvable(blocks):
    for b, s, rows, Mkk, extra in blocks:
        if b.kind in ("fc2d", "fc3d") and not Mkk[0, 0] > 0:
            return f"{b.kind} block at rows {s.start}:{s.stop} has W_NN <= 0"
        if b.kind in ("lcp", "relay") and np.any(extra[3] <= 0):
            return f"{b.kind} block at rows {s.start}:{s.stop} has a diagonal entry <= 0"
    return None


@register("gmp", "nsgs",
          "Gauss–Seidel over the blocks (equalities substituted or solved, LCP/relay by projected "
          "Gauss–Seidel, contacts by the NSGS local solvers)")
def nsgs_gmp(problem, mon, *, local_tol=1e-13, local_max_iter=10, equalities="substitute"):
    """NSGS for a generic mechanical problem, converging on :meth:`GenericMechanical.error`.

    Options: ``local_tol``, ``local_max_iter`` (local solvers); ``equalities``:
    ``"substitute"`` (default, Siconos' SUBS_EQ: the equality blocks are eliminated once by the
    reduction :class:`~nsopt.reductions.friction.SubstituteEqualities` and recovered after each
    sweep; falls back to ``"gs"`` when it does not apply: M_EE singular, or a large problem) or
    ``"gs"`` (each equality block solved in turn within the sweep, Siconos' default NSGS). A problem
    of equality blocks only is one linear solve (one iteration).
    """
    _check_opts(1.0, local_tol, local_max_iter, 0)
    if equalities not in ("substitute", "gs"):
        raise OptionError(f"nsgs: equalities must be 'substitute' or 'gs', got {equalities!r}")
    mon.budget(DEFAULT_MAX_ITER)
    r = mon.start_vector("r", problem.size)
    if mon.start({"r": r}, problem.error(r)):
        return mon.outcome()
    if equalities == "substitute" and all(b.kind == "equality" for b in problem.blocks):
        x, exact = solve_or_lstsq(problem.M, -np.asarray(problem.q))
        mon.step({"r": x}, problem.error(x))
        return mon.outcome(message="only equality blocks: one linear solve"
                           + ("" if exact else " (least squares: M is singular)"))
    red = SubstituteEqualities()
    if equalities == "substitute" and red.accepts(problem):
        P, data = red.reduce(problem)
        y = r[data[2]].copy()    # the unknowns of the blocks that are not equalities

        def full(y):
            x = red.invert({"r": y}, data)
            return x, problem.error(x["r"])
        note = " (equalities substituted)"
    else:
        P, y, note = problem, r, ""

        def full(y):
            return {"r": y}, problem.error(y)
    blocks = _gmp_split(P)
    msg = _gmp_unsolvable(blocks)
    if msg:
        return mon.outcome(status=Status.NUMERICAL_ERROR, message=msg)
    mon.built()
    wk, J = np.empty(32), np.empty((3, 3))
    while not mon.stopped:
        _gmp_sweep(P, blocks, y, local_tol, local_max_iter, wk, J)
        mon.step(*full(y))
    return mon.outcome(message=mon.message + note)
