"""Friction contact (2D/3D) as a sequence of second-order-cone programs (see ``formulations/fc3d.md``).

:class:`FCasSOCP` — De Saxcé's fixed point: for fixed ``s_a = mu_a ||u_T,a||`` the modified Coulomb
problem is the KKT system of the convex SOCP ``min 1/2 r^T W r + (q + s~)^T r, r in K``; the program is
compiled once with the linear term as a CVXPY parameter and re-solved while ``s`` is updated
(Anderson-accelerated, with restart).

:class:`FCTresca` — the cylinder (Tresca) variant: for fixed thresholds ``g_a`` the friction disc
``||r_T,a|| <= g_a, r_N,a >= 0`` replaces the cone; the fixed point ``g <- mu r_N`` gives Coulomb.

A nonsymmetric W (Siconos' Capsules files: ||W - W^T|| / ||W|| ~ 1e-4) is split W = S + A, S the
symmetric part in the quadratic form and ``A r_k`` carried in the linear term by the same fixed point.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..exceptions import SolverError
from ..problems._base import matvec
from ..result import Status
from ._base import Anderson, Formulation, quad_matrix, sym_part

DEFAULT_MAX_ITER = 200
STALL_WINDOW = 60     # no decrease of the best error over this many iterations -> STALLED
POLISH_STEPS = 6      # Newton steps of one polish attempt
POLISH_EVERY = 0.25   # a new polish attempt once the error dropped 4x since the last one
PLAIN_AFTER = 12      # Anderson without progress for this many iterations -> plain fixed point ...
PLAIN_SPAN = 25       # ... for this many iterations (a slow drift towards a contact's kink), then again
SAFEGUARD_ON = "residual"  # merit of the safeguard: "residual" ||g(x) - x|| or "error" (the problem's)
SAFEGUARD = 1.0      # an accelerated step whose merit exceeds SAFEGUARD x the previous one is undone
REUSE_SOLVER = True  # direct path: update Clarabel's q in place (True) or build a fresh solver per solve
G_FLOOR = 1e-12      # smallest Tresca threshold, relative to the largest (scaled) one
_TOL_KEYS = {"CLARABEL": ("tol_gap_abs", "tol_gap_rel", "tol_feas", "tol_ktratio")}


def fixed_point(form, G, x0, error_of, *, tol, max_iter, anderson, callback, polish=None,
                polish_at=1e-6, time_limit=None):
    """Generic safeguarded (Anderson-accelerated) fixed point ``x <- G(x)`` with a Newton finish.

    ``G(x)`` returns ``(g, sol, info)``: the image, a dict of the problem's variables at the
    program's solution, and the solve's info (status, times); ``error_of(sol)`` is the problem's
    own error measure. An accelerated step that increases the fixed-point residual ||g - x|| is
    undone (back to the plain image of the previous point, memory cleared); Anderson without
    progress for PLAIN_AFTER iterations gives way to PLAIN_SPAN plain iterations. ``polish(sol)``
    -> (sol, error, steps) is tried once the error is below ``polish_at`` and again each time it
    dropped 4x, and once more from the best iterate when the fixed point stops without success.
    Returns ``(best_sol, best_error, status, iterations, message)``.
    """
    acc = Anderson(anderson)
    x = np.asarray(x0, float).copy()
    best_sol, best_e, best_k = None, np.inf, -1
    e_prev, last_plain, restarts = np.inf, None, 0
    plain_left, last_switch, switches = 0, 0, 0
    last_polish = np.inf
    errs = []
    status, msg = Status.MAX_ITER, ""
    k = 0
    t_start = time.perf_counter()
    for k in range(1, max_iter + 1):
        if time_limit is not None and k > 1 and time.perf_counter() - t_start > time_limit:
            status, msg = Status.TIME_LIMIT, f"time limit {time_limit:g} s reached after {k - 1} iteration(s)"
            k -= 1
            break
        form._err_hint = e_prev if np.isfinite(e_prev) else (best_e if np.isfinite(best_e) else None)
        try:
            gx, sol, info = G(x)
        except SolverError as e:  # backend failure mid-way: return the best iterate so far
            if best_sol is None:
                raise
            status, msg = Status.NUMERICAL_ERROR, f"conic solver failed at iteration {k}: {e}"
            break
        if sol is None:
            status, msg = Status.NUMERICAL_ERROR, f"conic solver returned no solution at iteration {k} ({info.get('status')})"
            break
        e = float(error_of(sol))
        errs.append(e)
        step = float(np.linalg.norm(gx - x))
        form.history.append({"iteration": k, "error": e, "step": step,
                             "accelerated": bool(acc.dF), **info})
        if e < best_e:
            best_sol, best_e, best_k = sol, e, k
        if callback is not None:
            try:
                callback(k, sol, e)
            except StopIteration:
                status, msg = Status.CALLBACK_STOP, f"callback stopped the fixed point at iteration {k}"
                break
        if e <= tol:
            status, msg = Status.SOLVED, f"fixed point reached error {e:.2e} in {k} iteration(s)"
            break
        if polish is not None and e <= polish_at and e <= POLISH_EVERY * last_polish:
            last_polish = e
            psol, pe, steps = polish(sol)
            form.history.append({"iteration": k, "stage": "polish", "error": pe, "newton_steps": steps,
                                 "from_error": e})
            if pe < best_e:   # best_k is left alone: the fixed point's own progress drives its logic
                best_sol, best_e = psol, pe
            if pe <= tol:
                status = Status.SOLVED
                msg = (f"fixed point reached {e:.2e} in {k} iteration(s), then {steps} Newton polish "
                       f"step(s) reached {pe:.2e}")
                break
        if not np.isfinite(e):
            status, msg = Status.NUMERICAL_ERROR, f"non-finite error at iteration {k}"
            break
        merit = e if SAFEGUARD_ON == "error" else step
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
        if k - best_k >= STALL_WINDOW:
            window = errs[-STALL_WINDOW:]
            lo, hi = min(window), max(window)
            kind = "cycles" if hi > 1.5 * lo else "stalls"
            status = Status.STALLED
            msg = (f"fixed point {kind}: best error {best_e:.2e} at iteration {best_k}, no decrease over "
                   f"the last {STALL_WINDOW} iterations (errors in [{lo:.2e}, {hi:.2e}]); "
                   f"a Newton method (nsn-ac) is the fallback")
            break
    else:
        msg = f"max_iter = {max_iter} fixed-point iterations reached, best error {best_e:.2e}"
    if status in (Status.MAX_ITER, Status.STALLED) and polish is not None and best_sol is not None and \
            best_e <= 1e2 * polish_at and best_e < last_polish:
        psol, pe, steps = polish(best_sol)           # a last try from the best iterate
        form.history.append({"iteration": k, "stage": "polish", "error": pe, "newton_steps": steps,
                             "from_error": best_e})
        if pe < best_e:
            best_sol, best_e = psol, pe
            msg += f"; Newton polish ({steps} step(s)) from the best iterate reached {pe:.2e}"
            if pe <= tol:
                status = Status.SOLVED
    if restarts or switches:
        msg += f" ({restarts} Anderson restart(s), {switches} plain stretch(es))"
    return best_sol, best_e, status, k, msg


class _FCBase(Formulation):
    """Common data of the local friction-contact programs: symmetric split, per-contact scaling."""

    def __init__(self, problem, *, solver=None, solver_options=None, scale=True):
        super().__init__(problem, solver=solver, solver_options=solver_options, conic=True)
        self.dim, self.nc = problem.dim, problem.nc
        W = sp.csr_matrix(problem.W) if sp.issparse(problem.W) else np.asarray(problem.W)
        self.W = W
        self.S = sym_part(W)
        A = W - self.S
        amax = abs(A).max() if (A.nnz if sp.issparse(A) else A.size) else 0.0
        self.A = (sp.csr_matrix(A) if sp.issparse(A) else A) if amax > 0 else None
        self.q_data = np.asarray(problem.q, float)
        # per-contact scaling r = d_a * rhat: unit mean diagonal of each contact's block of S
        diag = (self.S.diagonal() if sp.issparse(self.S) else np.diag(self.S)).reshape(self.nc, self.dim)
        dg = diag.mean(axis=1)
        ref = float(np.median(dg[dg > 0])) if np.any(dg > 0) else 1.0
        dg = np.where(dg > 1e-12 * ref, dg, ref)
        self.d = 1.0 / np.sqrt(dg) if scale else np.ones(self.nc)
        self.dd = np.repeat(self.d, self.dim)
        D = sp.diags(self.dd)
        P = D @ (sp.csr_matrix(self.S) if sp.issparse(self.S) else self.S) @ D
        self.P = sp.csr_matrix(P) if sp.issparse(self.S) else np.asarray(P)

    def _opts(self):
        """Solver options for the next solve: Clarabel tolerances follow the fixed point's error
        (1e-3 of it, within [1e-12, 1e-8]) unless the user fixed them."""
        base = self.solver_options
        keys = _TOL_KEYS.get(self.solver)
        if not self.inexact or keys is None or any(kk in self.user_options for kk in keys):
            return base
        e = getattr(self, "_err_hint", None)
        if e is None:
            return base
        t = float(np.clip(1e-3 * e, 1e-12, 1e-8))
        o = dict(base)
        o.update({kk: t for kk in keys})
        o["tol_ktratio"] = max(t, 1e-10)
        return o

    def velocity(self, r):
        return matvec(self.W, r) + self.q_data


class FCasSOCP(_FCBase):
    r"""Coulomb friction contact as the SOCP fixed point (De Saxcé's bipotential view).

    For fixed s (one s_a per contact) solve

    .. math:: \min_r \tfrac12 r^\top W r + (q + \tilde s)^\top r \quad \text{s.t.}\ r_a \in K_{\mu_a},

    with :math:`\tilde s` holding s_a in each normal slot, then set s_a = mu_a ||u_T,a(r)||.
    Options: ``anderson`` memory (0 = plain fixed point), ``prox`` (a proximal term
    prox/2 ||rhat - rhat_k||^2 in the scaled variables, for singular W), ``inexact`` (Clarabel
    tolerances follow the fixed point's error; off by default: measured on the Capsules files, the
    fixed point then stalls — it needs images accurate to ~1e-12), ``scale`` (per-contact diagonal
    scaling).
    """

    method = "socp-fp"

    def __init__(self, problem, *, solver=None, solver_options=None, scale=True, prox=0.0, inexact=False,
                 direct=True):
        t0 = time.perf_counter()
        super().__init__(problem, solver=solver, solver_options=solver_options, scale=scale)
        import cvxpy as cp

        self.user_options = dict(solver_options or {})
        self.direct = bool(direct)
        self._Q = None
        self.prox, self.inexact = float(prox), bool(inexact)
        n, nc, dim = problem.size, self.nc, self.dim
        P = self.P + self.prox * (sp.eye(n, format="csr") if sp.issparse(self.P) else np.eye(n))
        self.rhat = cp.Variable(n, name="r_scaled")
        self.c = cp.Parameter(n, name="linear_term")
        R = cp.reshape(self.rhat, (nc, dim), order="C")
        mu = np.asarray(problem.mu, float)
        pos, zero = np.flatnonzero(mu > 0), np.flatnonzero(mu == 0)
        cons = []
        self.cone = None
        if pos.size == nc:
            self.cone = cp.SOC(cp.multiply(mu, R[:, 0]), R[:, 1:], axis=1)
        elif pos.size:
            self.cone = cp.SOC(cp.multiply(mu[pos], R[pos, 0]), R[pos, 1:], axis=1)
        if self.cone is not None:
            cons.append(self.cone)
        if zero.size:   # mu = 0: the cone degenerates to the half-line r_T = 0, r_N >= 0
            cons += [R[zero, 0] >= 0, R[zero, 1:] == 0]
        obj = 0.5 * cp.quad_form(self.rhat, cp.psd_wrap(quad_matrix(P))) + self.c @ self.rhat
        self.program = cp.Problem(cp.Minimize(obj), cons)
        self.timings["build"] = time.perf_counter() - t0
        self.s = np.zeros(nc)

    def shift(self, u):
        """s~: mu_a ||u_T,a|| in each normal slot."""
        U = u.reshape(self.nc, self.dim)
        out = np.zeros((self.nc, self.dim))
        out[:, 0] = np.asarray(self.problem.mu) * np.sqrt(np.sum(U[:, 1:] ** 2, axis=1))
        return out.reshape(-1)

    # -- direct re-solve path: CVXPY's compiled parametric program, Clarabel called directly ------
    def _direct_setup(self):
        """From CVXPY's compiled (DPP) program: the constant P, A, b, cones and the affine map
        c -> Clarabel's linear term (the parameter only enters the objective's linear part).
        A Clarabel solver is built once; each re-solve only updates q (no re-allocation)."""
        import cvxpy as cp
        from cvxpy.reductions.solvers.conic_solvers.clarabel_conif import dims_to_solver_cones

        data, _, _ = self.program.get_problem_data(cp.CLARABEL)
        pp = data[cp.settings.PARAM_PROB]
        nv, npar = pp.x.size, pp.total_param_size
        Qt = sp.csr_matrix(pp.q)
        col = pp.param_id_to_col[self.c.id]
        n = self.problem.size
        self._Q = Qt[:nv, col:col + n].tocsr()
        self._q0 = np.asarray(Qt[:nv, npar].todense()).reshape(-1)
        self._Pd = sp.triu(sp.csc_matrix(data["P"])).tocsc()
        self._Ad, self._bd = sp.csc_matrix(data["A"]), np.asarray(data["b"], float)
        self._cones = dims_to_solver_cones(data["dims"])
        self._xoff = pp.var_id_to_col[self.rhat.id]
        self._clar = None

    def _direct_solve(self, c_scaled, opts):
        import clarabel

        if getattr(self, "_Q", None) is None:
            t0 = time.perf_counter()
            self._direct_setup()
            self.timings["cvxpy"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        q = self._Q @ c_scaled + self._q0
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        for k, v in opts.items():
            if not hasattr(settings, k):
                from ..exceptions import OptionError

                raise OptionError(f"unknown Clarabel setting {k!r} in solver_options")
            setattr(settings, k, v)
        if REUSE_SOLVER and self._clar is not None and self._clar.is_data_update_allowed():
            self._clar.update(q=q, settings=settings)
        else:
            self._clar = clarabel.DefaultSolver(self._Pd, q, self._Ad, self._bd, self._cones, settings)
        sol = self._clar.solve()
        wall = time.perf_counter() - t0
        status = str(sol.status)
        inside = float(sol.solve_time)
        self.timings["solver"] += inside
        self.timings["cvxpy"] += max(wall - inside, 0.0)   # here: q = Q c + q0 and the Python calls
        self.timings["solves"] += 1
        x = np.asarray(sol.x, float)
        ok = status in ("Solved", "AlmostSolved") and x.size and np.all(np.isfinite(x))
        info = {"status": "optimal" if status == "Solved" else status, "wall": wall,
                "solver_time": inside, "solver_iterations": int(sol.iterations), "path": "direct"}
        return (x[self._xoff:self._xoff + self.problem.size].copy() if ok else None), info

    def solve_subproblem(self, c_scaled):
        """One conic solve with the scaled linear term; returns (rhat, r, info).

        With Clarabel (and ``direct=True``) the compiled program's data are handed to Clarabel once
        and each re-solve only updates the linear term; otherwise (or if that solve fails) CVXPY's
        ``problem.solve`` with the new parameter value."""
        if self.direct and self.solver == "CLARABEL":
            rh, info = self._direct_solve(c_scaled, self._opts())
            if rh is not None:
                return rh, self.dd * rh, info
        self.c.value = c_scaled
        t0 = time.perf_counter()
        status, wall, inside = self._solve_program(self._opts())
        info = {"status": status, "wall": wall, "solver_time": inside,
                "solver_iterations": int(getattr(self.program.solver_stats, "num_iters", 0) or 0)}
        if self.rhat.value is None:
            return None, None, info
        rh = np.asarray(self.rhat.value, float).copy()
        info["wall"] = time.perf_counter() - t0
        return rh, self.dd * rh, info

    def image(self, x):
        """The fixed-point map on x = D (s~ + A r) - prox * rhat (scaled): returns (g, sol, info)."""
        rh, r, info = self.solve_subproblem(self.dd * self.q_data + x)
        if r is None:
            return x, None, info
        u = self.velocity(r)
        g = self.shift(u)
        self.s = g[0::self.dim].copy()
        if self.A is not None:
            g = g + matvec(self.A, r)
        g = self.dd * g
        if self.prox:
            g = g - self.prox * rh
        return g, {"r": r}, info

    def initial(self, r0=None):
        """x0 from a guess r0 (s from its velocity u = W r0 + q); default r0 = 0, i.e. s = mu ||q_T||."""
        r0 = np.zeros(self.problem.size) if r0 is None else np.asarray(r0, float)
        g = self.shift(self.velocity(r0))
        if self.A is not None:
            g = g + matvec(self.A, r0)
        g = self.dd * g
        if self.prox:
            g = g - self.prox * (r0 / self.dd)
        return g

    def run(self, *, tol=1e-8, max_iter=None, anderson=5, r0=None, callback=None, polish=True,
            polish_at=1e-6, time_limit=None):
        max_iter = DEFAULT_MAX_ITER if max_iter is None else max_iter
        self.history.clear()
        if max_iter == 0:
            r = np.zeros(self.problem.size) if r0 is None else np.asarray(r0, float)
            return {"r": r}, self.problem.error(r), Status.MAX_ITER, 0, "max_iter = 0"
        return fixed_point(self, self.image, self.initial(r0), lambda sol: self.problem.error(sol["r"]),
                           tol=tol, max_iter=max_iter, anderson=anderson, callback=callback,
                           polish=self._polisher(tol) if polish else None, polish_at=polish_at,
                           time_limit=time_limit)

    def _polisher(self, tol):
        from ._polish import polish_local

        def run(sol):
            r, e, steps, _ = polish_local(self.problem, sol["r"], tol=tol, max_steps=POLISH_STEPS)
            return {"r": r}, e, steps
        return run

    def statement(self):
        p = self.problem
        return {
            "title": f"FC{p.dim}D Coulomb friction ({p.nc} contacts) as a fixed point on second-order-cone programs",
            "variables": {"text": f"r in R^{p.size} (contact by contact: r_N then r_T), scaled r = D rhat",
                          "latex": rf"r = (r_{{N,a}}, r_{{T,a}})_{{a=1..{p.nc}}}"},
            "objective": {"text": ("minimize 1/2 r^T W r + (q + s~)^T r, with s~_a = (s_a, 0...) and "
                                   "s_a = mu_a ||u_T,a|| frozen at the previous iterate (a CVXPY Parameter)"),
                          "latex": (r"\min_r\ \tfrac12 r^\top W r + (q + \tilde s)^\top r,\ "
                                    r"\tilde s_a = (\mu_a\|u_{T,a}\|, 0)")},
            "constraints": {"text": "r_a in K_mu_a = {||r_T,a|| <= mu_a r_N,a} for every contact, as ONE "
                                    "vectorised SOC constraint (multiplier y_a in the dual cone)",
                            "latex": r"r_a \in K_{\mu_a} = \{\|r_{T}\| \le \mu_a r_{N}\}"},
            "kkt": {"text": ("stationarity W r + q + s~ = y with y in K* and r ⊥ y: y is De Saxcé's modified "
                             "velocity u + mu ||u_T|| e_N once s equals mu ||u_T(r)||, so a fixed point of "
                             "s <- mu ||u_T(r(s))|| is exactly Coulomb's law K ∋ r ⊥ û ∈ K*."),
                    "latex": (r"Wr + q + \tilde s = y,\ K \ni r \perp y \in K^*;\ "
                              r"\tilde s = \mu\|u_T(r)\| \Rightarrow y = \hat u")},
            "when_fails": ("W must be PSD (it is, W = H^T M^-1 H); a nonsymmetric part of W is moved to the "
                           "linear term by the same fixed point. The map s -> mu ||u_T(r(s))|| need not be a "
                           "contraction (large mu, singular W): the fixed point may stall or cycle, which "
                           "is reported (Status.STALLED) and `auto` falls back to Newton. With mu > 0 and s = 0 "
                           "(no fixed point) the solution is that of a different, associated friction law."),
        }


class FCTresca(_FCBase):
    r"""Tresca (cylinder) program and the Coulomb fixed point g <- mu r_N built on it.

    For fixed thresholds g: ``min 1/2 r^T W r + q^T r`` s.t. ``r_N,a >= 0``, ``||r_T,a|| <= g_a``.
    KKT: ``0 <= r_N ⊥ u_N >= 0`` and ``-u_T in N_{disc(g)}(r_T)``: Tresca's law. With g = mu r_N it is
    Coulomb's law (no De Saxcé shift needed: the normal complementarity is on u_N itself).
    """

    method = "socp-tresca"

    def __init__(self, problem, *, g=None, solver=None, solver_options=None, scale=True, inexact=False):
        t0 = time.perf_counter()
        super().__init__(problem, solver=solver, solver_options=solver_options, scale=scale)
        import cvxpy as cp

        self.user_options = dict(solver_options or {})
        self.inexact = bool(inexact)
        n, nc, dim = problem.size, self.nc, self.dim
        self.rhat = cp.Variable(n, name="r_scaled")
        self.c = cp.Parameter(n, name="linear_term")
        self.g = cp.Parameter(nc, name="threshold_scaled", nonneg=True)
        R = cp.reshape(self.rhat, (nc, dim), order="C")
        self.disc = cp.SOC(self.g, R[:, 1:], axis=1)
        cons = [R[:, 0] >= 0, self.disc]
        obj = 0.5 * cp.quad_form(self.rhat, cp.psd_wrap(quad_matrix(self.P))) + self.c @ self.rhat
        self.program = cp.Problem(cp.Minimize(obj), cons)
        self.timings["build"] = time.perf_counter() - t0
        self.g_fixed = None if g is None else np.broadcast_to(np.asarray(g, float), (nc,)).copy()

    def solve_tresca(self, g, lin=None):
        """One Tresca solve for thresholds g (unscaled); returns (r, info)."""
        g = np.maximum(np.asarray(g, float), 0.0) / self.d
        # a zero radius leaves the disc without interior (interior-point solvers then fail): floor it
        self.g.value = np.maximum(g, G_FLOOR * max(float(g.max(initial=0.0)), 1.0))
        self.c.value = self.dd * (self.q_data + (0.0 if lin is None else lin))
        status, wall, inside = self._solve_program(self._opts())
        info = {"status": status, "wall": wall, "solver_time": inside,
                "solver_iterations": int(getattr(self.program.solver_stats, "num_iters", 0) or 0)}
        if self.rhat.value is None:
            return None, info
        return self.dd * np.asarray(self.rhat.value, float), info

    def image(self, x):
        """x = (g, A r) stacked: returns the image, the solution and the solve info."""
        nc = self.nc
        r, info = self.solve_tresca(x[:nc], x[nc:] if self.A is not None else None)
        if r is None:
            return x, None, info
        g = np.asarray(self.problem.mu) * r[0::self.dim]
        if self.A is not None:
            g = np.concatenate([g, matvec(self.A, r)])
        return g, {"r": r}, info

    def run(self, *, tol=1e-8, max_iter=None, anderson=5, r0=None, callback=None, polish=True,
            polish_at=1e-6, time_limit=None):
        max_iter = DEFAULT_MAX_ITER if max_iter is None else max_iter
        self.history.clear()
        p = self.problem
        if self.g_fixed is not None:     # a plain Tresca problem: one solve
            r, info = self.solve_tresca(self.g_fixed)
            self.history.append({"iteration": 1, **info})
            r = np.zeros(p.size) if r is None else r
            return {"r": r}, p.error(r), Status.SOLVED, 1, "Tresca problem with fixed thresholds"
        if r0 is not None:
            r0 = np.asarray(r0, float)
            x0 = np.asarray(p.mu) * r0[0::self.dim]
            if self.A is not None:
                x0 = np.concatenate([x0, matvec(self.A, r0)])
        else:
            # start from the frictionless normal reaction scale: g = mu * max(-q_N / W_NN, 0)
            qN = self.q_data[0::self.dim]
            WNN = (self.S.diagonal() if sp.issparse(self.S) else np.diag(self.S))[0::self.dim]
            x0 = np.asarray(p.mu) * np.maximum(-qN / np.where(WNN > 0, WNN, 1.0), 0.0)
            if self.A is not None:
                x0 = np.concatenate([x0, np.zeros(p.size)])
        if max_iter == 0:
            r = np.zeros(p.size) if r0 is None else r0
            return {"r": r}, p.error(r), Status.MAX_ITER, 0, "max_iter = 0"
        return fixed_point(self, self.image, x0, lambda sol: p.error(sol["r"]), tol=tol,
                           max_iter=max_iter, anderson=anderson, callback=callback,
                           polish=FCasSOCP._polisher(self, tol) if polish else None, polish_at=polish_at,
                           time_limit=time_limit)

    def statement(self):
        p = self.problem
        return {
            "title": f"FC{p.dim}D Coulomb friction ({p.nc} contacts) by Tresca (cylinder) programs, g <- mu r_N",
            "variables": {"text": f"r in R^{p.size}", "latex": r"r = (r_{N,a}, r_{T,a})_a"},
            "objective": {"text": "minimize 1/2 r^T W r + q^T r",
                          "latex": r"\min_r\ \tfrac12 r^\top W r + q^\top r"},
            "constraints": {"text": "r_N,a >= 0 and ||r_T,a|| <= g_a (the friction disc; g a CVXPY Parameter)",
                            "latex": r"r_{N,a} \ge 0,\ \|r_{T,a}\| \le g_a"},
            "kkt": {"text": ("u = W r + q: 0 <= r_N ⊥ u_N >= 0, and -u_T in the normal cone of the disc at "
                             "r_T (stick inside, slide opposite to r_T on the rim): Tresca's law; when "
                             "g = mu r_N at the solution this is Coulomb's law."),
                    "latex": (r"0 \le r_N \perp u_N \ge 0,\ -u_T \in N_{\{\|\cdot\| \le g\}}(r_T),\ "
                              r"g = \mu r_N \Rightarrow \text{Coulomb}")},
            "when_fails": ("The map g -> mu r_N(g) is a contraction only for small enough mu (a classical "
                           "result for Coulomb's law by successive Tresca problems); otherwise it may "
                           "stall or cycle (reported)."),
        }
