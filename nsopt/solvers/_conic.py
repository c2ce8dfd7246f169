"""The convex methods' common machinery: backend status maps, a CVXPY program compiled once and
solved from its data (:class:`Compiled`), and the polish of a box-affine point. Used by ``qp``
(:mod:`nsopt.solvers.convex`) and the SOCP fixed points (:mod:`nsopt.solvers.socp_fp`); the
statuses are documented in :mod:`nsopt.solvers.convex`.
"""

from __future__ import annotations

import time
import warnings
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from ..exceptions import OptionError, SolverError
from ..linalg import solve_or_lstsq
from ..problems._base import matvec
from ..result import Status

S = Status
# -------------------------------------------------------------------------- backend status maps
CLARABEL_STATUS_MAP = MappingProxyType({
    "Solved": S.SOLVED, "AlmostSolved": S.INACCURATE,
    "PrimalInfeasible": S.INFEASIBLE, "AlmostPrimalInfeasible": S.INFEASIBLE,
    "DualInfeasible": S.INFEASIBLE, "AlmostDualInfeasible": S.INFEASIBLE,
    "MaxIterations": S.MAX_ITER, "MaxTime": S.TIME_LIMIT,
    "NumericalError": S.NUMERICAL_ERROR, "InsufficientProgress": S.NUMERICAL_ERROR,
    "CallbackTerminated": S.CALLBACK_STOP, "Unsolved": S.NUMERICAL_ERROR,
})
# OSQP >= 1.0 ``results.info.status_val``
OSQP_STATUS_MAP = MappingProxyType({1: S.SOLVED, 2: S.INACCURATE, 3: S.INFEASIBLE, 4: S.INFEASIBLE, 5: S.INFEASIBLE,
                   6: S.INFEASIBLE, 7: S.MAX_ITER, 8: S.TIME_LIMIT, 9: S.NUMERICAL_ERROR,
                   10: S.NUMERICAL_ERROR, 11: S.NUMERICAL_ERROR})
# SCS 3 ``info["status_val"]``
SCS_STATUS_MAP = MappingProxyType({1: S.SOLVED, 2: S.INACCURATE, -1: S.INFEASIBLE, -6: S.INFEASIBLE, -2: S.INFEASIBLE,
                  -7: S.INFEASIBLE, -3: S.NUMERICAL_ERROR, -4: S.NUMERICAL_ERROR, -5: S.NUMERICAL_ERROR,
                  0: S.MAX_ITER})
# CVXPY's own vocabulary (any other backend)
CVXPY_STATUS_MAP = MappingProxyType({
    "optimal": S.SOLVED, "optimal_inaccurate": S.INACCURATE,
    "infeasible": S.INFEASIBLE, "infeasible_inaccurate": S.INFEASIBLE,
    "unbounded": S.INFEASIBLE, "unbounded_inaccurate": S.INFEASIBLE,
    "infeasible_or_unbounded": S.INFEASIBLE, "user_limit": S.MAX_ITER, "solver_error": S.NUMERICAL_ERROR,
})
_PRIMAL_INF = frozenset({"PrimalInfeasible", "AlmostPrimalInfeasible", "infeasible", "infeasible_inaccurate",
               "primal infeasible", "primal infeasible inaccurate"})
_OSQP_PRIMAL_INF, _SCS_PRIMAL_INF = {3, 4}, {-2, -7}
_TOL_OPTS = frozenset({"tol_gap_abs", "tol_gap_rel", "tol_feas", "tol_ktratio", "eps_abs", "eps_rel", "abstol",
             "reltol", "feastol"})
_TIME_KEY = MappingProxyType({"CLARABEL": "time_limit", "OSQP": "time_limit", "SCS": "time_limit_secs"})


def clarabel_cones(dims) -> list:
    """Clarabel's cones (its public ``ZeroConeT``, ``NonnegativeConeT``, ``SecondOrderConeT``) of the rows
    of a program's data for Clarabel, from the documented fields of the ``dims`` that
    ``cvxpy.Problem.get_problem_data("CLARABEL")`` returns (``zero``, ``nonneg``, ``soc``: the rows come in
    that order). nsopt's programs have no other cone; one would be refused here rather than mis-read."""
    import clarabel

    other = [k for k in ("exp", "psd", "p3d", "pnd") if getattr(dims, k, 0)]
    if other:
        raise SolverError(f"the direct Clarabel path handles zero, nonnegative and second-order cones; this "
                          f"program has {other} cones")
    cones = [clarabel.ZeroConeT(int(dims.zero))] if dims.zero else []
    if dims.nonneg:
        cones.append(clarabel.NonnegativeConeT(int(dims.nonneg)))
    cones += [clarabel.SecondOrderConeT(int(k)) for k in dims.soc]
    return cones


def backend_status(solver: str, raw) -> tuple[Status, str, str | None]:
    """(nsopt status, the backend's own status label, certificate) of a raw backend solution.

    ``certificate`` is "primal infeasible" / "dual infeasible" when the backend proved one, else None."""
    if solver == "CLARABEL" and hasattr(raw, "status"):
        label = str(raw.status)
        st = CLARABEL_STATUS_MAP.get(label, S.NUMERICAL_ERROR)
        primal = label in _PRIMAL_INF
    elif solver == "OSQP" and hasattr(raw, "info"):
        code = int(raw.info.status_val)
        label, st, primal = str(raw.info.status), OSQP_STATUS_MAP.get(code, S.NUMERICAL_ERROR), code in _OSQP_PRIMAL_INF
    elif solver == "SCS" and isinstance(raw, dict) and "info" in raw:
        code = int(raw["info"].get("status_val", -4))
        label, st, primal = str(raw["info"].get("status", code)), SCS_STATUS_MAP.get(code, S.NUMERICAL_ERROR), \
            code in _SCS_PRIMAL_INF
    else:
        label = str(raw)
        st = CVXPY_STATUS_MAP.get(label, S.NUMERICAL_ERROR)
        primal = label in _PRIMAL_INF
    cert = None
    if st is S.INFEASIBLE:
        cert = "primal infeasible" if primal else "dual infeasible"
    return st, label, cert


# -------------------------------------------------------------------------- a compiled program
class ConicResult:
    """One solve of a compiled program: ``status`` (nsopt), ``label`` (the backend's), ``certificate``,
    ``x`` (the primal variable of interest, or None), ``head_duals`` ((lambda_0, lambda_X) of the
    head constraint, or None), ``iterations``, ``solver_time``, ``wall``."""

    __slots__ = ("status", "label", "certificate", "x", "head_duals", "iterations", "solver_time", "wall",
                 "path")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    def info(self) -> dict:
        return {"status": self.label, "wall": self.wall, "solver_time": self.solver_time,
                "solver_iterations": self.iterations, "path": self.path}


class Compiled:
    """A formulation's CVXPY program compiled once (``get_problem_data``) and solved from its data.

    A fixed point changes only two things between solves, and both are found in the compiled data:
    the linear objective term of ``form.linear_var`` (CVXPY's ``c`` at the variable's columns) and the
    constant heads of ``form.head_constraint``, an ``SOC(t, X, axis=1)`` (``b`` at the first row of
    each cone block: CVXPY's conic form is ``A x + s = b``, s in K). They are updated in place:

    * ``direct=True`` with Clarabel: one ``clarabel.DefaultSolver`` built from the data, and per solve
      ``solver.update(q=..., b=...)`` (``reuse_solver=False``: a fresh solver per solve);
    * otherwise CVXPY's own solving chain on the updated data (``chain.solve_via_data`` and
      ``unpack_results``): any conic backend, no re-compilation.

    When the slots cannot be located (an unexpected canonicalisation), each solve rebuilds and
    re-compiles the program instead (``self.rebuild``: slower, same result).
    """

    def __init__(self, form, *, var=None, direct=False, reuse_solver=True, opts=None):
        import cvxpy as cp

        self.form, self.backend = form, form.backend
        self.var = var if var is not None else getattr(form, "linear_var", None)
        self.direct = bool(direct) and self.backend == "CLARABEL"
        self.reuse_solver = bool(reuse_solver)
        self.timings = {"build": form.build_time, "compile": 0.0, "cvxpy": 0.0, "solver": 0.0, "solves": 0}
        t0 = time.perf_counter()
        self.data, self.chain, self.inv = form.program.get_problem_data(self.backend, solver_opts=opts or {})
        self.timings["compile"] = time.perf_counter() - t0
        self._clar = None
        self.rebuild = False
        self._locate(cp)

    # -- where the fixed point's data live in the compiled program --------------------------
    def _locate(self, cp):
        form, data = self.form, self.data
        pp = data.get(cp.settings.PARAM_PROB)
        cols = getattr(pp, "var_id_to_col", None)
        self.lin_slot = self.var_slot = self.head_rows = None
        key = "c" if "c" in data else "q"
        self.ckey = key
        if self.var is not None and cols is not None and self.var.id in cols:
            off = cols[self.var.id]
            self.var_slot = slice(off, off + self.var.size)
        lv = getattr(form, "linear_var", None)
        if lv is not None:
            if cols is None or lv.id not in cols:
                self.rebuild = True
            else:
                off = cols[lv.id]
                sl = slice(off, off + lv.size)
                if np.allclose(np.asarray(data[key])[sl], form.linear, rtol=1e-14, atol=0.0):
                    self.lin_slot = sl
                else:
                    self.rebuild = True
        hc = getattr(form, "head_constraint", None)
        if hc is not None:
            dims = data.get("dims")
            socs = list(getattr(dims, "soc", []) or [])
            nblk = hc.args[0].size
            if dims is None or len(socs) != nblk or "b" not in data:
                self.rebuild = True
            else:
                start = int(dims.zero) + int(dims.nonneg)
                rows = start + np.concatenate([[0], np.cumsum(socs[:-1])]).astype(np.int64)
                if np.allclose(np.asarray(data["b"])[rows], form.head, rtol=1e-13, atol=1e-300):
                    self.head_rows, self.blocks = rows, np.asarray(socs)
                else:
                    self.rebuild = True

    # -- one solve ----------------------------------------------------------------------------
    def solve(self, *, linear=None, head=None, opts=None, time_limit=None) -> ConicResult:
        """Solve with a new linear term and/or new heads (None: as compiled). Never raises on a
        backend failure: the status says it (NUMERICAL_ERROR), after one retry with relaxed
        tolerances (an interior-point solver may give up at 1e-12: "insufficient progress")."""
        opts = dict(self.form.backend_options if opts is None else opts)
        key = _TIME_KEY.get(self.backend)
        if time_limit is not None and key and key not in self.form.user_options:
            opts[key] = max(float(time_limit), 1e-3)
        res = self._solve_once(linear, head, opts)
        if res.status is S.NUMERICAL_ERROR:
            keep = {k: v for k, v in opts.items() if k not in _TOL_OPTS}
            for extra in ({k: max(float(v), 1e-10) for k, v in opts.items() if k in _TOL_OPTS}, {}):
                r2 = self._solve_once(linear, head, {**keep, **extra})
                r2.wall += res.wall
                res = r2
                if res.status is not S.NUMERICAL_ERROR:
                    break
        self.timings["solves"] += 1
        st = res.solver_time
        if st is not None and np.isfinite(st):
            self.timings["solver"] += st
            self.timings["cvxpy"] += max(res.wall - st, 0.0)
        else:
            self.timings["cvxpy"] += res.wall
        return res

    def _vectors(self, linear, head):
        c = np.array(self.data[self.ckey], dtype=float)
        b = np.array(self.data["b"], dtype=float) if "b" in self.data else None
        if linear is not None:
            c[self.lin_slot] = linear
        if head is not None:
            b[self.head_rows] = head
        return c, b

    def _solve_once(self, linear, head, opts) -> ConicResult:
        if self.rebuild and (linear is not None or head is not None):
            return self._solve_rebuilt(linear, head, opts)
        if self.direct:
            return self._solve_clarabel(linear, head, opts)
        return self._solve_chain(linear, head, opts)

    def _solve_clarabel(self, linear, head, opts):
        import clarabel

        t0 = time.perf_counter()
        q, b = self._vectors(linear, head)
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        for k, v in opts.items():
            if not hasattr(settings, k):
                raise OptionError(f"unknown Clarabel setting {k!r} in backend_options")
            setattr(settings, k, v)
        if self.reuse_solver and self._clar is not None and self._clar.is_data_update_allowed():
            self._clar.update(q=q, b=b, settings=settings)
        else:
            if not hasattr(self, "_Pd"):
                self._Pd = sp.triu(sp.csc_matrix(self.data["P"])).tocsc()
                self._Ad = sp.csc_matrix(self.data["A"])
                self._cones = clarabel_cones(self.data["dims"])
            self._clar = clarabel.DefaultSolver(self._Pd, q, self._Ad, b, self._cones, settings)
        sol = self._clar.solve()
        wall = time.perf_counter() - t0
        status, label, cert = backend_status("CLARABEL", sol)
        x = np.asarray(sol.x, float)
        ok = status in (S.SOLVED, S.INACCURATE) and x.size and np.all(np.isfinite(x))
        xv = duals = None
        if ok:
            xv = x[self.var_slot].copy() if self.var_slot is not None else None
            if self.head_rows is not None:
                z = np.asarray(sol.z, float)
                lam0 = z[self.head_rows]
                k = int(self.blocks[0]) - 1
                lamX = z[self.head_rows[:, None] + 1 + np.arange(k)]
                duals = (lam0, lamX)
        return ConicResult(status=status, label=label, certificate=cert, x=xv, head_duals=duals,
                           iterations=int(sol.iterations), solver_time=float(sol.solve_time), wall=wall,
                           path="direct")

    def _solve_chain(self, linear, head, opts):
        import cvxpy as cp

        t0 = time.perf_counter()
        data = self.data
        if linear is not None or head is not None:
            c, b = self._vectors(linear, head)
            data = dict(self.data)
            data[self.ckey] = c
            if b is not None:
                data["b"] = b
        prog = self.form.program
        self.inv[-1].solver_options = opts
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                raw = self.chain.solve_via_data(prog, data, False, False, opts)
        except cp.error.SolverError as e:
            return ConicResult(status=S.NUMERICAL_ERROR, label=f"solver error: {e}", iterations=0,
                               solver_time=float("nan"), wall=time.perf_counter() - t0, path="cvxpy")
        except TypeError as e:      # a backend refusing an unknown setting
            raise OptionError(f"{self.backend} rejected backend_options {sorted(opts)}: {e}") from e
        status, label, cert = backend_status(self.backend, raw)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prog.unpack_results(raw, self.chain, self.inv)
        except cp.error.SolverError:   # CVXPY refuses the point (e.g. Clarabel's InsufficientProgress):
            if status in (S.SOLVED, S.INACCURATE):      # no values (the variables hold stale ones)
                status = S.NUMERICAL_ERROR
            return ConicResult(status=status, label=label, certificate=cert, iterations=0,
                               solver_time=float("nan"), wall=time.perf_counter() - t0, path="cvxpy")
        return self._result_from_program(status, label, cert, t0, "cvxpy")

    def _result_from_program(self, status, label, cert, t0, path):
        prog = self.form.program
        st = prog.solver_stats
        inside = float(st.solve_time) if st is not None and st.solve_time is not None else float("nan")
        if self.backend == "SCS" and st is not None and isinstance(st.extra_stats, dict):
            x = st.extra_stats.get("info", st.extra_stats)
            if isinstance(x, dict) and "solve_time" in x:      # SCS reports setup + solve in ms
                inside = (x.get("setup_time", 0.0) + x["solve_time"]) / 1e3
        var = self.var
        xv = None if var is None or var.value is None else np.asarray(var.value, float).reshape(-1).copy()
        duals = None
        hc = getattr(self.form, "head_constraint", None)
        if hc is not None and hc.dual_value is not None:
            lam0, lamX = hc.dual_value
            duals = (np.asarray(lam0, float).reshape(-1), np.asarray(lamX, float).reshape(len(np.atleast_1d(lam0)), -1))
        if status not in (S.SOLVED, S.INACCURATE):
            xv = duals = None
        iters = int(getattr(st, "num_iters", 0) or 0) if st is not None else 0
        return ConicResult(status=status, label=label, certificate=cert, x=xv, head_duals=duals,
                           iterations=iters, solver_time=inside, wall=time.perf_counter() - t0, path=path)

    def _solve_rebuilt(self, linear, head, opts):
        """Fallback: rebuild the program with the new constants and let CVXPY compile it again."""
        form = self.form
        t0 = time.perf_counter()
        if getattr(form, "head_constraint", None) is not None and getattr(form, "linear_var", None) is not None:
            form.build(form.linear if linear is None else linear, form.head if head is None else head)
        elif getattr(form, "linear_var", None) is not None:
            form.build(form.linear if linear is None else linear)
        else:
            form.build(form.head if head is None else head)
        self.var = form.linear_var if form.linear_var is not None else getattr(form, "v", None)
        self.data, self.chain, self.inv = form.program.get_problem_data(self.backend, solver_opts=opts)
        res = self._solve_chain(None, None, opts)
        res.wall = time.perf_counter() - t0
        res.path = "rebuilt"
        return res

    def time_share(self) -> float:
        """Share of the solve time spent inside the conic solver (vs CVXPY's own work)."""
        tot = self.timings["solver"] + self.timings["cvxpy"]
        return self.timings["solver"] / tot if tot > 0 else float("nan")


def info_of(form, comp, t_total) -> dict:
    """``Solution.info`` of a convex method: the formulation object, timings, solver share."""
    t = dict(comp.timings)
    t["total"] = t_total
    return {"formulation": form, "timings": t, "backend": form.backend, "solver_share": comp.time_share()}


def reuse(formulation, cls, problem):
    """The ``formulation=`` option: an already built formulation object of this problem, or None."""
    if formulation is None:
        return None
    if not isinstance(formulation, cls) or formulation.problem is not problem:
        names = cls.__name__ if isinstance(cls, type) else " / ".join(c.__name__ for c in cls)
        raise OptionError(f"formulation must be a {names} built on this problem")
    return formulation


# -------------------------------------------------------------------------- polish of a QP solution
def box_polish(M, q, lb, ub, z, error, rounds=3):
    """Active-set polish of an interior-point solution of a box-constrained QP / complementarity problem.

    Reads the active set off the natural map p = clip(z - w, lb, ub) (w = Mz + q): rows where p hits a
    bound are fixed there, the others are free and must have w = 0, so one linear solve
    M_FF z_F = -(q_F + M_FB z_B) gives the exact vertex of the identified face (sparse LU for a sparse
    M). Kept only when the problem's own error decreases. Yields (z, error) after each round that
    improved the error.
    """
    best_z, best_e = z, error(z)
    Mc = sp.csr_matrix(M) if sp.issparse(M) else np.asarray(M)
    for _ in range(rounds):
        w = matvec(Mc, best_z) + q
        p = np.clip(best_z - w, lb, ub)
        at_lb = p <= lb
        at_ub = (p >= ub) & ~at_lb
        F = ~(at_lb | at_ub)
        zn = np.where(at_lb, lb, np.where(at_ub, ub, 0.0))
        zn = np.where(np.isfinite(zn), zn, 0.0)
        if F.any():
            Fi = np.flatnonzero(F)
            B = np.flatnonzero(~F)
            MFF = Mc[Fi][:, Fi]
            rhs = -(q[Fi] + (matvec(Mc[Fi][:, B], zn[B]) if B.size else 0.0))
            zn[Fi] = solve_or_lstsq(MFF, rhs)[0]
        e = error(zn)
        if not e < best_e:
            return
        best_z, best_e = zn, e
        yield best_z, best_e
        if e == 0.0:
            return


def avi_polish(problem, S, z, lam):
    """Equality-constrained QP on the identified active set of an AVI (sparse when M, H are):
    [[S, -H_A^T], [H_A, 0]] (z, lambda_A) = (-q, k_A)."""
    H, k = problem.H, np.asarray(problem.k)
    Hz = matvec(H, z) - k
    act = np.flatnonzero(lam > Hz) if lam is not None else np.flatnonzero(Hz < 1e-9)
    n, m = problem.size, len(act)
    HA = (sp.csr_matrix(H) if sp.issparse(H) else np.asarray(H))[act]
    if sp.issparse(S) or sp.issparse(H):
        K = sp.bmat([[sp.csr_matrix(S), -sp.csr_matrix(HA).T], [sp.csr_matrix(HA), None]], format="csc")
        if m == 0:
            K = sp.csc_matrix(S)
    else:
        K = np.block([[np.asarray(S), -HA.T], [HA, np.zeros((m, m))]])
    rhs = np.concatenate([-np.asarray(problem.q, float), k[act]])
    return solve_or_lstsq(K, rhs)[0][:n]


# -------------------------------------------------------------------------- the qp method
