"""Shared machinery of the convex formulations: solver choice, timings, structure checks, Anderson.

Every formulation object (``LCPasQP``, ``FCasSOCP`` ...) derives from :class:`Formulation`:

* ``.program``      the :class:`cvxpy.Problem` it builds (compiled once; parameters carry the data
                    that change between fixed-point iterations, so CVXPY never re-canonicalises);
* ``.explain(latex=False)``  a statement of the program and of why its KKT system is the problem;
* ``.solve(...)``   solve through :func:`nsopt.solve` (same error judgement as every other method);
* ``.history``      after solving: one dict per conic solve / fixed-point iteration;
* ``.timings``      seconds spent building, in CVXPY (parameter application, data conversion) and
                    in the conic solver itself.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg  # noqa: F401  (sp.linalg.norm)

from ..exceptions import OptionError, SolverError

DEFAULT_SOLVER = "CLARABEL"
_TOL_OPTS = {"tol_gap_abs", "tol_gap_rel", "tol_feas", "tol_ktratio", "eps_abs", "eps_rel", "abstol",
             "reltol", "feastol"}

# Settings chosen for accuracy at tol 1e-8 on the problem's own error measure. The user's
# ``solver_options`` are merged over these (pass {} to keep them, or any key to override).
ACCURATE = {
    "CLARABEL": {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "tol_ktratio": 1e-10,
                 "max_iter": 400},
    # SCS (first order) is not asked for more than 1e-8: the Newton polish supplies the last digits
    "SCS": {"eps_abs": 1e-8, "eps_rel": 1e-8, "max_iters": 20000},
    "OSQP": {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iter": 200000, "polish": False},
    "ECOS": {"abstol": 1e-11, "reltol": 1e-11, "feastol": 1e-11, "max_iters": 400},
}

# Tolerances of the structure checks (relative to the Frobenius norm of M).
SYM_TOL = 1e-10     # ||M - M^T||_F <= SYM_TOL * ||M||_F       -> "symmetric"
PSD_TOL = 1e-10     # M + PSD_TOL * ||M||_F * I admits a Cholesky factor (or lambda_min >= -that)
DENSE_CHECK_MAX = 3000  # above this size a sparse M is checked by eigsh (smallest eigenvalue)


_INSTALLED = []


def _installed(cp):
    """cvxpy.installed_solvers(), computed once (it probes every interface: ~4 ms a call)."""
    if not _INSTALLED:
        _INSTALLED.extend(cp.installed_solvers())
    return _INSTALLED


def solver_setup(solver, solver_options, *, conic=True):
    """Normalise the ``solver`` / ``solver_options`` options: (NAME, merged options)."""
    import cvxpy as cp

    name = DEFAULT_SOLVER if solver is None else str(solver).upper()
    installed = _installed(cp)
    if name not in installed:
        raise OptionError(f"solver {solver!r} is not installed for CVXPY; installed: {installed}")
    if conic and name == "OSQP":
        raise OptionError("OSQP solves QPs only; a second-order-cone program needs CLARABEL, SCS or ECOS")
    if solver_options is not None and not isinstance(solver_options, dict):
        raise OptionError(f"solver_options must be a dict, got {type(solver_options).__name__}")
    opts = dict(ACCURATE.get(name, {}))
    opts.update(solver_options or {})
    return name, opts


def run_program(program, solver, opts, *, warm_start=True):
    """Solve a CVXPY program; return (status, wall seconds, seconds inside the solver)."""
    import cvxpy as cp

    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "solution may be inaccurate": judged by our own error
            program.solve(solver=solver, warm_start=warm_start, **opts)
    except cp.error.SolverError as e:
        # an over-tight tolerance can make an interior-point solver give up ("insufficient
        # progress"): retry with tolerances 1e-10, then with the solver's own defaults
        keep = {k: v for k, v in opts.items() if k not in _TOL_OPTS}
        for extra in ({k: max(float(v), 1e-10) for k, v in opts.items() if k in _TOL_OPTS}, {}):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    program.solve(solver=solver, warm_start=False, **keep, **extra)
                break
            except cp.error.SolverError:
                continue
        else:
            raise SolverError(f"{solver} failed on the CVXPY program: {e}") from e
    wall = time.perf_counter() - t0
    st = program.solver_stats
    inside = float(st.solve_time) if st is not None and st.solve_time is not None else float("nan")
    if solver == "SCS" and st is not None and st.extra_stats:  # SCS reports setup + solve in ms
        x = st.extra_stats.get("info", st.extra_stats) if isinstance(st.extra_stats, dict) else {}
        if isinstance(x, dict) and "solve_time" in x:
            inside = (x.get("setup_time", 0.0) + x["solve_time"]) / 1e3
    return program.status, wall, inside


def sym_part(M):
    """(M + M^T)/2 (CSR when M is sparse)."""
    if sp.issparse(M):
        return ((M + M.T) * 0.5).tocsr()
    M = np.asarray(M)
    return 0.5 * (M + M.T)


def _fro(M):
    return float(sp.linalg.norm(M)) if sp.issparse(M) else float(np.linalg.norm(M))


def check_symmetric_psd(M, *, sym_tol=SYM_TOL, psd_tol=PSD_TOL):
    """None when M is numerically symmetric positive semidefinite, else the reason (a string).

    Symmetric: ``||M - M^T||_F <= sym_tol ||M||_F``. PSD: a Cholesky factorisation of
    ``S + psd_tol ||M||_F I`` (S the symmetric part) succeeds, i.e. ``lambda_min(S) >= -psd_tol ||M||_F``.
    A sparse M gets a sparse Cholesky attempt first (SuperLU with diagonal pivots only: all pivots
    positive); if that fails, the dense test (up to ``DENSE_CHECK_MAX`` rows) or the smallest
    eigenvalue by ARPACK (``which='SA'``) with the same tolerance decides.
    """
    n = M.shape[0]
    if n == 0:
        return None
    nrm = _fro(M)
    if nrm == 0.0:
        return None
    asym = _fro(M - M.T)
    if asym > sym_tol * nrm:
        return (f"M is not symmetric (||M - M^T||_F / ||M||_F = {asym / nrm:.2e} > {sym_tol:g}); the QP's "
                f"KKT system would be the LCP of (M + M^T)/2, not of M")
    S = sym_part(M)
    shift = psd_tol * nrm
    if sp.issparse(S):
        from scipy.sparse.linalg import eigsh, splu

        # a sparse "Cholesky attempt": LU with diagonal pivots only (symmetric mode) of S + shift I;
        # all pivots positive <=> S + shift I positive definite
        try:
            lu = splu(sp.csc_matrix(S + shift * sp.identity(n)), permc_spec="MMD_AT_PLUS_A",
                      diag_pivot_thresh=0.0, options={"SymmetricMode": True})
            if np.array_equal(lu.perm_r, lu.perm_c) and np.all(lu.U.diagonal() > 0):
                return None
        except RuntimeError:
            pass
    if sp.issparse(S) and n > DENSE_CHECK_MAX:
        try:
            lam = float(eigsh(S, k=1, which="SA", tol=1e-6, return_eigenvectors=False,
                              maxiter=20 * n)[0])
        except (RuntimeError, ValueError) as e:  # pragma: no cover - ARPACK non-convergence
            return f"could not certify that M is positive semidefinite (ARPACK: {e})"
        if lam < -max(shift, 1e-6 * nrm):
            return f"M is not positive semidefinite (smallest eigenvalue {lam:.3e})"
        return None
    Sd = S.toarray() if sp.issparse(S) else S
    try:
        np.linalg.cholesky(Sd + shift * np.eye(n))
        return None
    except np.linalg.LinAlgError:
        lam = float(np.linalg.eigvalsh(Sd)[0])
        return (f"M is not positive semidefinite (smallest eigenvalue {lam:.3e} < -{shift:.1e} = "
                f"-{psd_tol:g} ||M||_F)")


def cached_sym_psd(problem, M=None, key="convex:sym_psd"):
    """:func:`check_symmetric_psd` of ``problem.M`` (or M), computed once per problem."""
    return problem.cached(key, lambda: check_symmetric_psd(problem.M if M is None else M))


def quad_matrix(S):
    """The matrix given to ``cp.quad_form(x, psd_wrap(.))``: sparse CSC when sparse, else dense."""
    return sp.csc_matrix(S) if sp.issparse(S) else np.asarray(S, dtype=float)


class Anderson:
    """Type-II Anderson acceleration of a fixed point x = g(x), memory ``m``, with restart.

    ``step(x, g)`` takes the current point and its image and returns the next point; ``restart()``
    forgets the memory (called by the fixed point when an accelerated step made the error worse).
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


class Formulation:
    """Base class of the convex formulations (see the module docstring)."""

    method: str = ""          # the nsopt.solve method name that runs this formulation
    title: str = ""

    def __init__(self, problem, *, solver=None, solver_options=None, conic=True):
        self.problem = problem
        self.solver, self.solver_options = solver_setup(solver, solver_options, conic=conic)
        self.history: list[dict] = []
        self.timings = {"build": 0.0, "cvxpy": 0.0, "solver": 0.0, "solves": 0}
        self.program = None

    # -- bookkeeping -------------------------------------------------------------------------
    def _solve_program(self, opts=None):
        status, wall, inside = run_program(self.program, self.solver, opts or self.solver_options)
        if np.isfinite(inside):
            self.timings["solver"] += inside
            self.timings["cvxpy"] += max(wall - inside, 0.0)
        else:
            self.timings["cvxpy"] += wall
        self.timings["solves"] += 1
        return status, wall, inside

    def time_share(self) -> float:
        """Share of the solve time spent inside the conic solver (vs CVXPY's own work)."""
        tot = self.timings["solver"] + self.timings["cvxpy"]
        return self.timings["solver"] / tot if tot > 0 else float("nan")

    # -- teaching view -----------------------------------------------------------------------
    def statement(self) -> dict:
        """Parts of the explanation: title, variables, objective, constraints, kkt, when_fails."""
        raise NotImplementedError

    def explain(self, latex: bool = False) -> str:
        """The program in words and math (plain text, or LaTeX with ``latex=True``)."""
        s = self.statement()
        key = "latex" if latex else "text"
        parts = [s["title"], ""]
        for head in ("variables", "objective", "constraints", "kkt", "when_fails"):
            label = {"variables": "Variables", "objective": "Objective", "constraints": "Constraints",
                     "kkt": "Why its KKT conditions are the problem", "when_fails": "When it fails"}[head]
            body = s[head][key] if isinstance(s[head], dict) else s[head]
            parts.append(f"{label}:\n{body}\n")
        if self.program is not None and not latex:
            parts.append(f"CVXPY program: {len(self.program.variables())} variable(s), "
                         f"{len(self.program.parameters())} parameter(s), "
                         f"{len(self.program.constraints)} constraint object(s); "
                         f"solver {self.solver}; DPP: {self.program.is_dpp()}")
        return "\n".join(parts)

    def __repr__(self):
        return f"{type(self).__name__}({self.problem!r}, solver={self.solver!r})"

    def solve(self, tol=1e-8, max_iter=None, **options):
        """Solve through :func:`nsopt.solve` with this formulation object (returns a Solution)."""
        from ..solve import solve

        return solve(self.problem, method=self.method, tol=tol, max_iter=max_iter, formulation=self,
                     **options)
