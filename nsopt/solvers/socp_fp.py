r"""Friction contact by fixed points on second-order-cone programs: ``socp-fp`` and ``socp-tresca``
(fc2d, fc3d), ``socp-fp`` (gfc2d, gfc3d). The programs are built by ``nsopt.formulations``
(:class:`~nsopt.formulations.FCasSOCP`, :class:`~nsopt.formulations.FCTresca`,
:class:`~nsopt.formulations.GFCPrimalSOCP`); the math is in ``formulations/fc3d.md`` and ``gfc3d.md``.

The fixed point [1]_ ``x <- G(x)``:

* ``socp-fp`` (local): x = D (s~ + A r) (scaled), s_a = mu_a ||u_T,a||; G solves the SOCP with linear
  term D q + x and returns the new shift. A fixed point is Coulomb's law (De Saxcé).
* ``socp-tresca``: x = (g, A r), g_a = mu_a r_N,a the friction thresholds of the Tresca program.
* ``socp-fp`` (global): x = s; G solves the primal SOCP over v, r from the cone multipliers.

The program is compiled once by CVXPY; each iteration changes only the linear term or the cones'
heads in the compiled data (:class:`nsopt.solvers.convex.Compiled`); with Clarabel (``direct=True``,
default) one Clarabel solver is built and updated in place (``solver.update(q=..., b=...)``).

Acceleration and finish: type-II Anderson acceleration (memory ``anderson``) with a safeguard (an
accelerated step whose merit, ``safeguard="residual"`` ``||G(x) - x||`` or ``"error"`` the problem's
error, exceeds the previous one is undone and the memory cleared); after ``PLAIN_AFTER`` iterations
without progress a stretch of ``PLAIN_SPAN`` plain iterations (a slowly sliding contact drifts
linearly to its kink). Once the error is below ``polish_at`` (and again each time it dropped 4x),
``polish_steps`` iterations of the registered semismooth Newton method ``nsn-ac``
(:mod:`nsopt.solvers.newton`) from the iterate give the last digits. No decrease of the best error over
``stall_window`` iterations: ``Status.STALLED`` (``auto`` then goes on to Newton).

Iteration contract: every fixed-point iteration is one ``mon.step`` (the Newton polish is one more);
``time_limit`` is checked between iterations and passed to the conic solver (Clarabel's
``time_limit``); the CVXPY compile is ``Solution.build_time``.

Options
-------
backend, backend_options : the conic backend ("CLARABEL" default, "SCS") and its settings, merged over
    ``nsopt.formulations.ACCURATE`` (the fixed point needs images accurate to ~1e-12).
anderson : Anderson memory (default 5; 0 = plain fixed point).
safeguard : "residual" (default) or "error": the merit of the Anderson safeguard.
polish : Newton polish (default True); polish_at : error below which it starts (default 1e-6);
polish_steps : Newton iterations per polish (default 10).
stall_window : iterations without a new best error before STALLED (default 60).
inexact : Clarabel's tolerances follow the error (1e-3 of it, in [1e-12, 1e-8]); default False
    (measured on the Capsules files the fixed point then stalls).
direct : Clarabel updated in place (default True); False: CVXPY's solving chain on the updated data.
reuse_solver : with ``direct``, update one Clarabel solver (default True) or build one per solve.
prox : (``socp-fp`` local) proximal term prox/2 ||rhat - rhat_k||^2, for a singular W (default 0).
scale : per-contact diagonal scaling (default True).
formulation : an already built formulation object of this problem (its compiled program is reused
    only through the object: the build is repeated per call).

References
----------
.. [1] V. Acary, F. Cadoux, C. Lemaréchal, J. Malick, A formulation of the linear discrete Coulomb
   friction problem via convex optimization, ZAMM 91 (2011); Siconos ``fc3d_ACLMFixedPoint``.
"""

from __future__ import annotations

import time
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from .. import registry
from ..exceptions import OptionError
from ..formulations import FCasSOCP, FCTresca, GFCPrimalSOCP
from ..formulations._base import PSD_TOL_W, cached_sym_psd
from ..monitor import Monitor
from ..problems._base import matvec
from ..registry import register
from ..result import Status
from ._conic import Compiled, info_of, reuse

DEFAULT_MAX_ITER = 200
STALL_WINDOW = 60     # default: no decrease of the best error over this many iterations -> STALLED
POLISH_STEPS = 10     # default: Newton iterations of one polish attempt
POLISH_EVERY = 0.25   # a new polish attempt once the error dropped 4x since the last one
PLAIN_AFTER = 12      # Anderson without progress for this many iterations -> plain fixed point ...
PLAIN_SPAN = 25       # ... for this many iterations (a slow drift towards a contact's kink), then again
SAFEGUARD = 1.0       # an accelerated step whose merit exceeds SAFEGUARD x the previous one is undone
_TOL_KEYS = MappingProxyType({"CLARABEL": ("tol_gap_abs", "tol_gap_rel", "tol_feas", "tol_ktratio")})


class Anderson:
    """Type-II Anderson acceleration of a fixed point x = g(x), memory ``m``, with restart.

    ``step(x, g)`` takes the current point and its image and returns the next point; ``restart()``
    forgets the memory (called by the fixed point when an accelerated step made the merit worse).
    """

    def __init__(self, m=5, rcond=1e-10):
        self.m, self.rcond = int(m), rcond
        self.dF, self.dG = [], []
        self.f_prev = self.g_prev = None

    def restart(self):
        self.dF.clear()
        self.dG.clear()
        self.f_prev = self.g_prev = None

    def step(self, x, g):
        f = g - x
        if self.m <= 0:
            return g
        if self.f_prev is not None:
            self.dF.append(f - self.f_prev)
            self.dG.append(g - self.g_prev)
            if len(self.dF) > self.m:
                self.dF.pop(0)
                self.dG.pop(0)
        self.f_prev, self.g_prev = f, g
        if not self.dF:
            return g
        F = np.array(self.dF).T
        G = np.array(self.dG).T
        gam, *_ = np.linalg.lstsq(F, f, rcond=self.rcond)
        out = g - G @ gam
        return out if np.all(np.isfinite(out)) else g


# ============================================================================ the fixed-point maps
class FixedPointMap:
    """The map x -> G(x) of a formulation on its compiled program (see the module docstring).

    ``image(x)`` returns ``(G(x), variables at the program's solution or None, ConicResult)``;
    ``start(x0)`` the first x from a dict of the problem's variables; ``history`` one dict per
    solve; ``timings`` and ``time_share()`` where the time went (build / compile / CVXPY / solver).
    """

    def __init__(self, form, *, direct=True, reuse_solver=True, inexact=False):
        self.form, self.problem = form, form.problem
        self.inexact = bool(inexact)
        self.err_hint = None
        self.history: list[dict] = []
        self.comp = Compiled(form, var=self._var(), direct=direct, reuse_solver=reuse_solver,
                             opts=form.backend_options)
        self.timings = self.comp.timings

    def _var(self):
        return self.form.linear_var

    def time_share(self) -> float:
        return self.comp.time_share()

    def opts(self):
        """Solver options of the next solve: with ``inexact``, Clarabel's tolerances follow the
        fixed point's error (1e-3 of it, within [1e-12, 1e-8]) unless the user fixed them."""
        base = self.form.backend_options
        keys = _TOL_KEYS.get(self.form.backend)
        if not self.inexact or keys is None or any(k in self.form.user_options for k in keys) \
                or self.err_hint is None:
            return base
        t = float(np.clip(1e-3 * self.err_hint, 1e-12, 1e-8))
        o = dict(base)
        o.update({k: t for k in keys})
        o["tol_ktratio"] = max(t, 1e-10)
        return o

    def error(self, sol) -> float:
        return self.problem.error(sol["r"])


class SOCPMap(FixedPointMap):
    """``socp-fp`` (local): x = D (s~ + A r) - prox rhat; G(x) from the SOCP with linear term D q + x."""

    def start(self, x0=None):
        """x from a guess r0 (s from its velocity u = W r0 + q); default r0 = 0, i.e. s = mu ||q_T||."""
        f = self.form
        r0 = np.zeros(self.problem.size) if not x0 or x0.get("r") is None else np.asarray(x0["r"], float)
        g = f.shift(f.velocity(r0))
        if f.A is not None:
            g = g + matvec(f.A, r0)
        g = f.dd * g
        if f.prox:
            g = g - f.prox * (r0 / f.dd)
        return g

    def image(self, x, time_limit=None):
        f = self.form
        res = self.comp.solve(linear=f.dd * f.q_data + x, opts=self.opts(), time_limit=time_limit)
        if res.x is None:
            return x, None, res
        rh = res.x
        r = f.reaction(rh)
        g = f.shift(f.velocity(r))
        if f.A is not None:
            g = g + matvec(f.A, r)
        g = f.dd * g
        if f.prox:
            g = g - f.prox * rh
        return g, {"r": r}, res


class TrescaMap(FixedPointMap):
    """``socp-tresca``: x = (g, A r); G(x) = (mu r_N, A r) at the Tresca program's solution."""

    def start(self, x0=None):
        f, p = self.form, self.problem
        mu = np.asarray(p.mu)
        if x0 and x0.get("r") is not None:
            r0 = np.asarray(x0["r"], float)
            x = mu * r0[0::f.dim]
            return np.concatenate([x, matvec(f.A, r0)]) if f.A is not None else x
        # the frictionless normal reaction scale: g = mu * max(-q_N / W_NN, 0)
        qN = f.q_data[0::f.dim]
        WNN = (f.S.diagonal() if sp.issparse(f.S) else np.diag(f.S))[0::f.dim]
        x = mu * np.maximum(-qN / np.where(WNN > 0, WNN, 1.0), 0.0)
        return np.concatenate([x, np.zeros(p.size)]) if f.A is not None else x

    def solve_tresca(self, g, lin=None, time_limit=None):
        """One Tresca solve for thresholds g (unscaled) and an extra linear term; (r or None, result)."""
        f = self.form
        res = self.comp.solve(linear=f.dd * (f.q_data + (0.0 if lin is None else lin)),
                              head=f.scaled_thresholds(g), opts=self.opts(), time_limit=time_limit)
        return (None if res.x is None else f.reaction(res.x)), res

    def image(self, x, time_limit=None):
        f, nc = self.form, self.form.nc
        r, res = self.solve_tresca(x[:nc], x[nc:] if f.A is not None else None, time_limit)
        if r is None:
            return x, None, res
        g = np.asarray(self.problem.mu) * r[0::f.dim]
        if f.A is not None:
            g = np.concatenate([g, matvec(f.A, r)])
        return g, {"r": r}, res


class GFCMap(FixedPointMap):
    """``socp-fp`` (global): x = s; G(s) = mu ||u_T(v)|| at the primal SOCP's solution."""

    def _var(self):
        return self.form.v

    def start(self, x0=None):
        p = self.problem
        if not x0:
            return np.zeros(p.nc)
        v = x0.get("v")
        if v is None:
            v = p.v(np.asarray(x0["r"], float))
        U = p.u(np.asarray(v, float)).reshape(p.nc, p.dim)
        return self.form.mu * np.sqrt(np.sum(U[:, 1:] ** 2, axis=1))

    def image(self, s, time_limit=None):
        f, p = self.form, self.problem
        res = self.comp.solve(head=f.bN + np.maximum(s, 0.0), opts=self.opts(), time_limit=time_limit)
        if res.x is None or res.head_duals is None:
            return s, None, res
        v = res.x
        r = f.reactions(res.head_duals)
        U = p.u(v).reshape(p.nc, p.dim)
        g = f.mu * np.sqrt(np.sum(U[:, 1:] ** 2, axis=1))
        return g, {"r": r, "v": v}, res

    def error(self, sol) -> float:
        return self.problem.error(sol["r"], sol["v"])


# ============================================================================ the Newton polish
def newton_polish(problem, x, *, tol, max_steps=POLISH_STEPS, time_limit=None):
    """``max_steps`` iterations of the registered semismooth Newton method ``nsn-ac``
    (:mod:`nsopt.solvers.newton`) warm-started from ``x`` (a dict of the problem's variables), without
    its proximal continuation. Near a solution the contact states are known and Newton converges
    quadratically. Returns ``(variables like x, error, Newton iterations)``."""
    info = registry.get(problem.kind, "nsn-ac")
    opts = {"hybrid": False} if "hybrid" in info.options else {}
    mon = Monitor(tol=tol, max_iter=max_steps, time_limit=time_limit, x0=dict(x), problem=problem, method=info.name)
    sol = info.func(problem, mon, **opts)
    xs = sol.variables()
    return {k: np.asarray(xs[k], float) for k in x}, float(problem.error_of(xs)), int(sol.nit)


# ============================================================================ the fixed point
def fixed_point(mon, fmap, x0, *, anderson=5, polish=True, polish_at=1e-6, polish_steps=POLISH_STEPS,
                safeguard="residual", stall_window=STALL_WINDOW):
    """The safeguarded, Anderson-accelerated fixed point ``x <- G(x)`` with a Newton finish, under the
    iteration contract (module docstring). Returns ``(message, extra info)``; the monitor holds the
    best iterate and the status."""
    problem = fmap.problem
    acc = Anderson(anderson)
    x = np.asarray(x0, float).copy()
    fp_best, best_k = np.inf, 0
    e_prev, last_plain, restarts = np.inf, None, 0
    plain_left, last_switch, switches = 0, 0, 0
    last_polish = np.inf
    errs = []
    k = 0
    msg = ""

    def do_polish(sol, e):
        psol, pe, steps = newton_polish(problem, sol, tol=mon.tol, max_steps=polish_steps, time_limit=mon.time_left())
        fmap.history.append({"iteration": k, "stage": "polish", "error": pe, "newton_steps": steps,
                             "from_error": e})
        return psol, pe, steps

    while not mon.stopped:
        k += 1
        fmap.err_hint = e_prev if np.isfinite(e_prev) else (fp_best if np.isfinite(fp_best) else None)
        gx, sol, res = fmap.image(x, mon.time_left())
        if sol is None:
            st = res.status if res.status in (Status.TIME_LIMIT, Status.MAX_ITER) else Status.NUMERICAL_ERROR
            what = (f"; the frozen-s program has no solution ({res.certificate}), which proves nothing "
                    f"about the problem itself" if res.certificate else "")
            mon.stop(st, f"conic solver returned no solution at iteration {k} ({res.label}){what}")
            break
        e = float(fmap.error(sol))
        errs.append(e)
        step = float(np.linalg.norm(gx - x))
        fmap.history.append({"iteration": k, "error": e, "step": step, "accelerated": bool(acc.dF),
                             **res.info()})
        if e < fp_best:
            fp_best, best_k = e, k
        if mon.step(sol, e):
            msg = (f"fixed point reached error {e:.2e} in {k} iteration(s)" if mon.status is Status.SOLVED
                   else mon.message)
            break
        if polish and e <= polish_at and e <= POLISH_EVERY * last_polish:
            last_polish = e
            psol, pe, steps = do_polish(sol, e)
            if mon.step(psol, pe):
                msg = (f"fixed point reached {e:.2e} in {k} iteration(s), then {steps} Newton (nsn-ac) "
                       f"polish step(s) reached {pe:.2e}" if mon.status is Status.SOLVED else mon.message)
                break
        merit = e if safeguard == "error" else step
        if acc.m > 0 and merit > SAFEGUARD * e_prev and acc.dF and last_plain is not None:
            acc.restart()               # the accelerated step made things worse: undo it
            restarts += 1
            x, e_prev = last_plain, np.inf
            continue
        e_prev, last_plain = merit, gx
        if plain_left > 0:          # plain iterations: follow a slow linear drift up to its kink
            plain_left -= 1
            x = gx
        elif acc.m > 0 and k - best_k >= PLAIN_AFTER and k - last_switch >= PLAIN_AFTER:
            acc.restart()
            plain_left, last_switch, switches = PLAIN_SPAN, k, switches + 1
            x = gx
        else:
            x = acc.step(x, gx)
        if k - best_k >= stall_window:
            window = errs[-stall_window:]
            lo, hi = min(window), max(window)
            kind = "cycles" if hi > 1.5 * lo else "stalls"
            mon.stop(Status.STALLED,
                     f"fixed point {kind}: best error {fp_best:.2e} at iteration {best_k}, no decrease over "
                     f"the last {stall_window} iterations (errors in [{lo:.2e}, {hi:.2e}]); "
                     f"a Newton method (nsn-ac) is the fallback")
            break
    msg = msg or mon.message
    out_x, out_status = None, None
    if mon.status in (Status.MAX_ITER, Status.STALLED) and polish and mon.best_x is not None and \
            mon.best_err <= 1e2 * polish_at and mon.best_err < last_polish:
        best = mon.best_x               # a last try from the best iterate
        psol, pe, steps = do_polish(best, mon.best_err)
        if pe < mon.best_err:
            out_x = psol
            msg += f"; Newton polish ({steps} step(s)) from the best iterate reached {pe:.2e}"
            if pe <= mon.tol:
                out_status = Status.SOLVED
    if restarts or switches:
        msg += f" ({restarts} Anderson restart(s), {switches} plain stretch(es))"
    return msg, out_x, out_status


# ============================================================================ registered methods
def _fp_options(anderson, safeguard, polish, polish_at, polish_steps, stall_window):
    """The fixed point's own options, checked (OptionError naming the option)."""
    if isinstance(anderson, bool) or not isinstance(anderson, (int, np.integer)) or anderson < 0:
        raise OptionError(f"anderson must be a non-negative integer (memory), got {anderson!r}")
    if safeguard not in ("residual", "error"):
        raise OptionError(f"safeguard must be 'residual' or 'error', got {safeguard!r}")
    if not isinstance(polish_at, (int, float, np.floating)) or not polish_at > 0:
        raise OptionError(f"polish_at must be a positive number, got {polish_at!r}")
    for name, v in (("polish_steps", polish_steps), ("stall_window", stall_window)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise OptionError(f"{name} must be a positive integer, got {v!r}")
    return {"anderson": int(anderson), "safeguard": safeguard, "polish": bool(polish), "polish_at": float(polish_at),
            "polish_steps": int(polish_steps), "stall_window": int(stall_window)}


def _psd_w(problem):
    """socp-fp / socp-tresca need the symmetric part of W to be PSD (the program's objective)."""
    return cached_sym_psd(problem, "W", symmetric=False, psd_tol=PSD_TOL_W)


def _psd_m(problem):
    why = cached_sym_psd(problem, "M")
    return f"the mass matrix: {why}" if why else None


def _run(problem, mon, fmap, t0, fp):
    mon.built()
    mon.budget(DEFAULT_MAX_ITER)
    x0 = mon.x0
    start = problem.complete(x0 or {"r": np.zeros(problem.size)})
    start = {k: np.asarray(start[k], float) for k in ("r", "v") if k in start}
    info = info_of(fmap.form, fmap.comp, 0.0)
    info["fixed_point"] = fmap.history
    if mon.start(start, problem.error_of(problem.complete(start))):
        info["timings"]["total"] = time.perf_counter() - t0
        return mon.solution(info=info)
    msg, x, st = fixed_point(mon, fmap, fmap.start(x0), **fp)
    info = info_of(fmap.form, fmap.comp, time.perf_counter() - t0)
    info["fixed_point"] = fmap.history
    return mon.solution(message=msg, info=info, x=x, status=st)


@register(("fc2d", "fc3d"), "socp-fp",
          "SOCP (CVXPY, compiled once, Clarabel updated in place) + Anderson-accelerated fixed point on "
          "s = mu ||u_T|| (De Saxce), Newton (nsn-ac) polish of the last digits", applies=_psd_w)
def socp_fp(problem, mon, *, backend=None, backend_options=None, anderson=5, prox=0.0, inexact=False, direct=True,
            reuse_solver=True, polish=True, polish_at=1e-6, polish_steps=POLISH_STEPS, safeguard="residual",
            stall_window=STALL_WINDOW, scale=True, formulation=None):
    """De Saxcé's fixed point on SOCPs (module docstring: options)."""
    fp = _fp_options(anderson, safeguard, polish, polish_at, polish_steps, stall_window)
    t0 = time.perf_counter()
    form = reuse(formulation, FCasSOCP, problem) or FCasSOCP(
        problem, backend=backend, backend_options=backend_options, prox=prox, scale=scale)
    return _run(problem, mon, SOCPMap(form, direct=direct, reuse_solver=reuse_solver, inexact=inexact), t0, fp)


@register(("fc2d", "fc3d"), "socp-tresca",
          "Tresca (cylinder) SOCPs + Anderson-accelerated fixed point on the thresholds g = mu r_N",
          applies=_psd_w)
def socp_tresca(problem, mon, *, backend=None, backend_options=None, anderson=5, inexact=False, direct=True,
                reuse_solver=True, polish=True, polish_at=1e-6, polish_steps=POLISH_STEPS, safeguard="residual",
                stall_window=STALL_WINDOW, scale=True, formulation=None):
    """The Tresca fixed point g <- mu r_N (module docstring: options). A ``formulation=FCTresca(p, g=...)``
    with fixed thresholds solves that one Tresca problem (one iteration)."""
    fp = _fp_options(anderson, safeguard, polish, polish_at, polish_steps, stall_window)
    t0 = time.perf_counter()
    form = reuse(formulation, FCTresca, problem) or FCTresca(
        problem, backend=backend, backend_options=backend_options, scale=scale)
    fmap = TrescaMap(form, direct=direct, reuse_solver=reuse_solver, inexact=inexact)
    if form.g_fixed is not None:        # a plain Tresca problem: one solve
        mon.built()
        r, res = fmap.solve_tresca(form.g_fixed, time_limit=mon.time_left())
        fmap.history.append({"iteration": 1, **res.info()})
        r = np.zeros(problem.size) if r is None else r
        mon.k = 1
        info = info_of(form, fmap.comp, time.perf_counter() - t0)
        return mon.solution(x={"r": r}, status=res.status, message="Tresca problem with fixed thresholds "
                           f"({form.backend} status {res.label}); its error is Coulomb's", info=info)
    return _run(problem, mon, fmap, t0, fp)


@register(("gfc2d", "gfc3d"), "socp-fp",
          "primal SOCP over v (min 1/2 v'Mv - q'v, H'v + b + s~ in K*; no M inverse) + fixed point on s",
          applies=_psd_m)
def gfc_socp_fp(problem, mon, *, backend=None, backend_options=None, anderson=5, inexact=False, direct=True,
                reuse_solver=True, polish=True, polish_at=1e-6, polish_steps=POLISH_STEPS, safeguard="residual",
                stall_window=STALL_WINDOW, formulation=None):
    """The primal fixed point on s for global friction contact (module docstring: options)."""
    fp = _fp_options(anderson, safeguard, polish, polish_at, polish_steps, stall_window)
    t0 = time.perf_counter()
    form = reuse(formulation, GFCPrimalSOCP, problem) or GFCPrimalSOCP(
        problem, backend=backend, backend_options=backend_options, check=False)
    return _run(problem, mon, GFCMap(form, direct=direct, reuse_solver=reuse_solver, inexact=inexact), t0, fp)


__all__ = ["Anderson", "FixedPointMap", "GFCMap", "SOCPMap", "TrescaMap", "fixed_point", "newton_polish"]
