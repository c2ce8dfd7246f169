"""Nonsmooth Gauss–Seidel ("nsgs") for friction contact (fc2d, fc3d, gfc2d, gfc3d) and generic
mechanical problems (gmp): Siconos' workhorse.

Friction contact: one sweep visits the contacts in turn; for contact a the local problem
``u_a = W_aa r_a + q_loc`` with ``q_loc = q_a + sum_{b != a} W_ab r_b`` (the current reactions) is
solved by a local solver, and ``u = Wr + q`` is updated by the columns of contact a. The sweep is
compiled (numba) and runs in chunks of sweeps under the iteration contract
(:class:`nsopt.monitor.Monitor`: ``time_limit`` and Ctrl-C act between chunks of about 20 ms); the
Siconos error measure (its one compiled home, :func:`nsopt.problems._measures.fc_error`, which
:func:`nsopt.problems.cones.fc_error` calls) is evaluated after every sweep inside the compiled loop, on u recomputed
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

import numpy as np
import scipy.sparse as sp

from .._jit import entry_point
from ..exceptions import OptionError
from ..linalg import factorise, solve_or_lstsq
from ..monitor import plain_schedule
from ..problems._base import ORDERED_ROWS, affine, nnz
from ..reductions.friction import GlobalToLocal, SubstituteEqualities
from ..registry import register
from ..result import Status
from . import _gs_kernels as K

DEFAULT_MAX_ITER = 1000
LOCAL_WORK = 100     # flops of one contact's local solve, for the chunk schedule (work of a sweep = nnz(W) + this x nc)


_EMPTY_W = np.empty((0, 0))
_EMPTY_W.setflags(write=False)          # as a problem's W: one compiled signature for dense and CSC
_NO_INDEX = np.zeros(0, dtype=np.int64)
_NO_VALUE = np.zeros(0)


def _csc_of(W):
    """(ptr, idx, val) of W in CSC (int64 indices): scipy's for a sparse W, from the nonzero pattern
    of the transpose for a dense one (cheaper than scipy)."""
    if sp.issparse(W):
        C = W.tocsc(copy=True)
        C.sum_duplicates()
        C.sort_indices()
        return C.indptr.astype(np.int64), C.indices.astype(np.int64), np.array(C.data, dtype=np.float64)
    AT = np.asarray(W).T
    mask = AT != 0.0
    ptr = np.zeros(AT.shape[0] + 1, dtype=np.int64)
    np.cumsum(mask.sum(axis=1), out=ptr[1:])
    return ptr, np.nonzero(mask)[1].astype(np.int64), np.array(AT[mask], dtype=np.float64, order="C")


def _check_opts(omega, local_tol, local_max_iter, resync):
    if not isinstance(omega, (int, float, np.floating)) or not 0.0 < float(omega) < 2.0:
        raise OptionError(f"nsgs: omega must be a number in (0, 2), got {omega!r}")
    if not isinstance(local_tol, (int, float, np.floating)) or not float(local_tol) > 0.0:
        raise OptionError(f"nsgs: local_tol must be a positive number, got {local_tol!r}")
    if isinstance(local_max_iter, bool) or not isinstance(local_max_iter, (int, np.integer)) or local_max_iter < 1:
        raise OptionError(f"nsgs: local_max_iter must be a positive integer, got {local_max_iter!r}")
    if isinstance(resync, bool) or not isinstance(resync, (int, np.integer)) or resync < 0:
        raise OptionError(f"nsgs: resync must be a non-negative integer, got {resync!r}")


def _checked(*, local_tol, local_max_iter, omega, shuffle, seed, resync):
    """The options of ``nsgs`` checked and converted (once per distinct values: ``register(check=)``)."""
    _check_opts(omega, local_tol, local_max_iter, resync)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise OptionError(f"nsgs: seed must be an integer, got {seed!r}")
    return {"local_tol": float(local_tol), "local_max_iter": int(local_max_iter), "omega": float(omega),
            "shuffle": bool(shuffle), "seed": int(seed), "resync": int(resync)}


class _Sweeper:
    """NSGS on the W of one FrictionContact: W as the kernels take it (dense up to ``ORDERED_ROWS``
    rows, else in CSC; a sparse W also in CSR int64 arrays for the final u = Wr + q), the diagonal
    blocks (filled by the kernel) and the work arrays; built once per W and kept in the problem's
    cache or the caller's :class:`~nsopt.Workspace`. ``work``: the cost of one sweep in flops (the
    monitor's deterministic chunk schedule)."""

    __slots__ = ("dim", "W", "csc", "csr", "work", "plain", "nc", "n", "I", "F", "state", "best", "best_r", "head",
                 "errs", "ready", "bad", "q", "mu", "qnorm", "kernel", "xbest")

    def __init__(self, problem):
        W = problem.W
        n, nc, self.dim = problem.size, problem.nc, problem.dim
        none = (_NO_INDEX, _NO_INDEX, _NO_VALUE)
        if type(W) is np.ndarray and n <= ORDERED_ROWS:
            self.W, self.csc, self.csr, nz = W, none, none, n * n
        else:
            self.W = _EMPTY_W
            self.csc = _csc_of(W)
            nz = self.csc[2].shape[0]
            self.csr = (W.indptr.astype(np.int64), W.indices.astype(np.int64), np.array(W.data, dtype=np.float64)) \
                if sp.issparse(W) else none
        self.work = nz + LOCAL_WORK * nc
        self.plain = plain_schedule(self.work)     # (cap, turn) without callback or time limit
        self.nc, self.n = nc, n
        self.I, self.F, (self.state, self.best, self.best_r) = K.nsgs_layout(n, nc, self.dim, *self.csc, *self.csr)
        self.xbest = {"r": self.best_r}    # the best iterate as the monitor borrows it (Monitor.record)
        self.head = (self.dim, self.W, self.I, self.F)     # the kernel's first arguments
        self.kernel = _solve_kernel(self.head, problem)
        self.errs = _NO_VALUE
        self.ready = False        # D filled (the first solve's kernel call)

    @property
    def D(self):
        """The diagonal blocks (nc, dim, dim), a view of the packed array (filled by the kernel)."""
        f = K.NBEST + self.n
        return self.F[f:f + self.nc * self.dim * self.dim].reshape(self.nc, self.dim, self.dim)

    @property
    def order(self):
        """The contact order of the sweeps (a view of the packed array)."""
        o = K.I_STATE + K.NSTATE
        return self.I[o:o + self.nc]

    def diag(self, problem):
        """The diagonal blocks and the message when NSGS cannot run on this W (W_NN <= 0), for the
        Python loops (gfc); the local solve fills them in its kernel."""
        if not self.ready:
            ptr, idx, val = self.csc
            self.bad = K.diag_blocks_of(self.dim, self.W, ptr, idx, val, self.D)
            self.ready = True
        return self._bad_message() if self.bad >= 0 else None

    def _bad_message(self):
        a = self.bad
        return (f"contact {a} has W_NN = {self.D[a, 0, 0]:g} <= 0 (W[{a * self.dim},{a * self.dim}]): "
                "the local problem of NSGS is not solvable")

    def error(self, problem, r, u):
        """u = Wr + q (in ``u``) and the error of r, by the measure's compiled home; sets the q, mu and ||q||
        that :meth:`run` uses."""
        self.q, self.mu, self.qnorm = problem.q, problem.mu, problem.qnorm
        ptr, idx, val = self.csc
        K._matvec(self.W, ptr, idx, val, r, self.q, u)
        return K.fc_error(self.dim, r, u, self.mu, self.qnorm, np.empty(self.dim), np.empty(self.dim))

    def run(self, r, u, nsweeps, tol, best_err, opts):
        """At most ``nsweeps`` sweeps in place on r and u (after :meth:`error`), one chunk of the
        solve kernel (:func:`_gs_kernels.nsgs_fc_solve`); returns (errors per sweep, local failures)."""
        if self.errs.shape[0] < nsweeps:
            self.errs = np.empty(max(nsweeps, 2 * self.errs.shape[0]))
        state, best = self.state, self.best
        state[0], state[1], state[2], state[3], state[4] = 0, nsweeps, 0, _RUNNING, -1
        best[0] = best_err
        K.nsgs_fc_solve(*self.head, self.q, self.mu, r, u, self.errs, tol, nsweeps, opts["local_tol"],
                        opts["local_max_iter"], opts["omega"], opts["shuffle"], self.qnorm, opts["resync"], nsweeps,
                        nsweeps)
        return self.errs[:state.item(5)], state.item(2)


_KERNELS = {}      # the flags of the sweeper's W -> the entry point of nsgs_fc_solve


def _solve_kernel(head, problem):
    """The compiled ``nsgs_fc_solve`` for a sweeper's arrays (``head``) and a problem's q and mu,
    called without numba's dispatch (:func:`nsopt._jit.entry_point`): the types of its arguments are
    those of W (dense, or the empty stand-in of a CSC one), known when the sweeper is made, and
    fixed otherwise (the sweeper's packed arrays, a problem's read-only vectors, float64 r, u and
    errors, and the scalars as ``nsgs_fc`` converts them)."""
    key = head[1].flags.num
    kernel = _KERNELS.get(key)
    if kernel is None:
        kernel = _KERNELS[key] = entry_point(K.nsgs_fc_solve, (*head, problem.q, problem.mu, _NO_VALUE, _NO_VALUE,
                                                              _NO_VALUE, 1e-8, 1, 1e-13, 1, 1.0, False, 1.0, 1, 1, 1))
    return kernel


_FRESH, _RUNNING, _BAD_W = K.FRESH, K.RUNNING, K.BAD_W


@register(("fc2d", "fc3d"), "nsgs",
          "nonsmooth Gauss–Seidel over contacts (compiled; fc3d local Alart–Curnier Newton with "
          "projected fixed-point fallback, fc2d exact local solve)", check=_checked)
def nsgs_fc(problem, mon, *, local_tol=1e-13, local_max_iter=10, omega=1.0, shuffle=False, seed=0, resync=50):
    """NSGS for local friction contact, from the warm start ``r`` (default 0).

    Options: ``local_tol`` (relative tolerance of the local Newton solver), ``local_max_iter``
    (Newton iterations per attempt); ``omega`` relaxation of the contact update in (0, 2);
    ``shuffle`` visits the contacts in a new random order each sweep (``seed``); ``resync``
    recomputes u = Wr + q from scratch every so many sweeps (0: only at the end of each chunk and
    before deciding convergence) to remove the rounding drift of the incremental updates.
    ``max_iter``: sweeps (default 1000).

    The whole solve is one compiled kernel (:func:`_gs_kernels.nsgs_fc_solve`) called in turns
    under the monitor (:meth:`~nsopt.monitor.Monitor.record`).

    {solve_contract}
    >>> p = nsopt.FrictionContact(3, [[1.0, 0.1, 0.0], [0.1, 1.2, 0.0], [0.0, 0.0, 1.2]], [-1.0, -2.0, 0.5], [0.3])
    >>> s = nsopt.solve(p, method="nsgs", tol=1e-10)
    >>> print(s.status.value, s.r.round(6))
    solved [ 0.971803  0.281969 -0.074092]
    """
    if shuffle:   # the same seed gives the same sequence of orders
        K.seed(seed)
    max_iter = mon.max_iter
    if max_iter is None:
        max_iter = mon.budget(DEFAULT_MAX_ITER)
    sw = mon.state(problem, "nsgs_sweeper", _Sweeper, ("W",))
    r = mon.start_vector("r", problem.size)
    u = np.empty(r.shape[0])
    if mon.callback is None and mon.deadline is None and mon.history is None:
        cap, turn = sw.plain
        first = turn
        errs = _NO_VALUE
    else:
        cap, turn, first = mon.schedule(sw.work)
        errs = sw.errs
        if errs.shape[0] < turn + cap:
            errs = sw.errs = np.empty(min(turn + cap, max_iter + 1))
    state, best, xbest = sw.state, sw.best, sw.xbest
    state[3], state[4] = _FRESH, 0
    x, start = {"r": r}, True
    q, mu, qnorm, tol, kernel = problem.q, problem.mu, problem.qnorm, mon.tol, sw.kernel
    dim, W, I, F = sw.head      # (positional arguments only: a call without a tuple of them)
    while True:
        kernel(dim, W, I, F, q, mu, r, u, errs, tol, max_iter, local_tol, local_max_iter, omega, shuffle, qnorm, resync,
               cap, first)
        _, _, fails, code, measured, n, bad = state.tolist()
        b0, last, measured_err, e0 = best.tolist()
        if code == _BAD_W:
            sw.bad, sw.ready = bad, True
            return mon.solution(x={"r": r}, status=Status.NUMERICAL_ERROR, message=sw._bad_message())
        if mon.record(e0 if start else None, n, last, errs, x, xbest, b0, code) is not None or code != _RUNNING:
            break
        start, first = False, turn
    sw.ready = True
    info = {"local_failures": fails}
    if mon.err <= mon.best_err:
        # the last iterate is (one of) the best: it comes back with u and its error (the kernel's, or
        # _measured for a large dense W)
        if measured:
            return mon.solution("", info, {"r": r, "u": u}, None, measured_err)
        u, err = _measured(problem, r, sw, qnorm)
        return mon.solution("", info, {"r": r, "u": u}, None, err)
    return mon.solution(info=info)


def _measured(problem, r, sw, qnorm):
    """(u, error) of r: u = Wr + q by ``problem.u``'s own product (``problems._base.affine``), the
    error by the problem's measure (its one compiled home) on (r, u), so the number
    ``problem.error(r)`` gives (tests/test_resolve.py); solve() does not
    recompute it."""
    u = affine(problem.W, r, problem.q)
    return u, K.fc_error(problem.dim, r, u, problem.mu, qnorm, np.empty(problem.dim), np.empty(problem.dim))


@register(("gfc2d", "gfc3d"), "nsgs",
          "NSGS on the condensed local problem (W = HᵀM⁻¹H by a sparse factorisation of M), "
          "then v = M⁻¹(q + Hr)", check=_checked)
def nsgs_gfc(problem, mon, *, local_tol=1e-13, local_max_iter=10, omega=1.0, shuffle=False, seed=0, resync=50):
    """NSGS for global friction contact through the reduction
    :class:`~nsopt.reductions.friction.GlobalToLocal`.

    Same options as the local ``nsgs``. Each iteration of the contract is a chunk of sweeps on the
    local problem followed by v = M⁻¹(q + Hr) and the global error (one sweep per chunk when a
    history or a callback is requested). The local problem's sweeps stop at a local tolerance that
    starts at ``tol`` and is tightened while the global error is above ``tol``.

    {solve_contract}
    >>> p = nsopt.GlobalFrictionContact(np.eye(3), np.eye(3), np.zeros(3), [-1.0, 1.0, 0.0], [0.5])
    >>> s = nsopt.solve(p, method="nsgs", tol=1e-10)
    >>> print(s.status.value, s.v.round(6))
    solved [ 1.  -0.5  0. ]
    """
    opts = {"local_tol": local_tol, "local_max_iter": local_max_iter, "omega": omega, "shuffle": shuffle,
            "resync": resync}
    if shuffle:   # the same seed gives the same sequence of orders
        K.seed(seed)
    mon.budget(DEFAULT_MAX_ITER)
    red = GlobalToLocal()
    loc, data = red.apply(problem)
    sw = mon.state(loc, "nsgs_sweeper", _Sweeper, ("W",))
    sw.order[:] = np.arange(sw.order.shape[0])
    msg = sw.diag(loc)
    mon.built()
    r = mon.start_vector("r", problem.size)
    if msg:
        return mon.solution(x={"r": r}, status=Status.NUMERICAL_ERROR, message=msg + " (local problem)")

    def full(r):
        x = red.invert({"r": r}, data)
        return x, problem.error(r, x["v"])

    x, err = full(r)
    u = np.empty(r.shape[0])
    sw.error(loc, r, u)     # u = Wr + q_loc for the sweeps
    fails, t = 0, mon.tol
    if not mon.start(x, err):
        while not mon.stopped:
            c = mon.chunk(per_iteration_errors=False, work=nnz(loc.W) + nnz(problem.H))   # deterministic
            errs, f = sw.run(r, u, c, t, np.inf, opts)
            fails += f
            x, err = full(r)
            if errs.shape[0] < c and err > mon.tol:   # the local tolerance was reached, not the global one
                t = max(min(t, float(errs[-1])) * max(mon.tol / err, 1e-3) * 0.5, 1e-16)
            mon.step(x, err, errs.shape[0])
    return mon.solution(info={"local_failures": fails, "local_tol_final": t})


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
                    lu = factorise(Mkk) if np.linalg.cond(Mkk) < 1e14 else None
                except np.linalg.LinAlgError:
                    lu = None
                # the explicit inverse (LU solves of I, as numpy's inv), applied at each sweep
                extra = lu.solve(np.eye(b.size)) if lu is not None else None
            elif b.kind in ("lcp", "relay"):
                B = sp.csr_matrix(Mkk)
                d = np.array(np.diag(Mkk), dtype=np.float64)    # (np.diag is a read-only view)
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
    qr = ql.view()
    qr.setflags(write=False)      # as pgs passes a problem's q: one compiled signature
    for _ in range(max(1, maxit)):
        K.pgs_sweeps(ptr, idx, val, d, qr, lo, hi, rk, 1.0, 10)
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
        return mon.solution()
    if equalities == "substitute" and all(b.kind == "equality" for b in problem.blocks):
        x, exact = solve_or_lstsq(problem.M, -np.asarray(problem.q))
        mon.step({"r": x}, problem.error(x))
        return mon.solution(message="only equality blocks: one linear solve"
                           + ("" if exact else " (least squares: M is singular)"))
    red = SubstituteEqualities()
    if equalities == "substitute" and red.accepts(problem):
        P, data = red.apply(problem)
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
        return mon.solution(status=Status.NUMERICAL_ERROR, message=msg)
    mon.built()
    wk, J = np.empty(32), np.empty((3, 3))
    while not mon.stopped:
        _gmp_sweep(P, blocks, y, local_tol, local_max_iter, wk, J)
        mon.step(*full(y))
    return mon.solution(message=mon.message + note)
