"""Shared pieces of the convex formulations: solver choice, structure checks, the Formulation base.

Every formulation object (``LCPasQP``, ``FCasSOCP`` ...) derives from :class:`Formulation` and only
*builds* a program; solving it is the business of ``nsopt.solvers`` (``convex.py``: the QPs,
``socp_fp.py``: the fixed points):

* ``.program``      the :class:`cvxpy.Problem` it builds. Its data are **constants**, not CVXPY
                    ``Parameter`` objects: with a quadratic objective, CVXPY 1.9 extracts the
                    coefficients of a parametric program as a dense (variables x parameters) array
                    (``coeff_extractor``: ``param_coeffs.toarray()``), quadratic in the size. The
                    fixed points instead compile the program once and update the few entries of the
                    compiled data that change (see ``nsopt/solvers/socp_fp.py``);
* ``.explain(latex=False)``  a statement of the program and of why its KKT system is the problem.

Solve one with ``nsopt.solve(problem, method=f.method, formulation=f)``.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg  # noqa: F401  (sp.linalg.norm)

from ..exceptions import OptionError
from ..linalg import cholesky
from ..registry import renamed

DEFAULT_BACKEND = "CLARABEL"

# Settings chosen for accuracy at tol 1e-8 on the problem's own error measure. The user's
# ``backend_options`` are merged over these (pass {} to keep them, or any key to override).
ACCURATE = MappingProxyType({
    "CLARABEL": MappingProxyType({"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12,
                                  "tol_ktratio": 1e-10, "max_iter": 400}),
    # SCS (first order) is not asked for more than 1e-8: the Newton polish supplies the last digits
    "SCS": MappingProxyType({"eps_abs": 1e-8, "eps_rel": 1e-8, "max_iters": 20000}),
    "OSQP": MappingProxyType({"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iter": 200000, "polish": False}),
    "ECOS": MappingProxyType({"abstol": 1e-11, "reltol": 1e-11, "feastol": 1e-11, "max_iters": 400}),
})

# Tolerances of the structure checks (relative to the Frobenius norm of M).
SYM_TOL = 1e-10     # ||M - M^T||_F <= SYM_TOL * ||M||_F       -> "symmetric"
PSD_TOL = 1e-10     # M + PSD_TOL * ||M||_F * I admits a Cholesky factor (or lambda_min >= -that)
# the friction programs' W = H^T M^-1 H is PSD by construction; the corpus' stored W have relative
# eigenvalues down to -2.5e-8 from the rounding of the files (Confeti-ex13): a looser tolerance there
PSD_TOL_W = 1e-6
DENSE_CHECK_MAX = 3000  # above this size a sparse M is checked by eigsh (smallest eigenvalue)


_INSTALLED = []


def _installed(cp):
    """cvxpy.installed_solvers(), computed once (it probes every interface: ~4 ms a call)."""
    if not _INSTALLED:
        _INSTALLED.extend(cp.installed_solvers())
    return _INSTALLED


def backend_setup(backend, backend_options, *, conic=True):
    """Normalise the ``backend`` / ``backend_options`` options: (NAME, merged options)."""
    import cvxpy as cp

    name = DEFAULT_BACKEND if backend is None else str(backend).upper()
    installed = _installed(cp)
    if name not in installed:
        raise OptionError(f"backend {backend!r} is not installed for CVXPY; installed: {installed}")
    if conic and name == "OSQP":
        raise OptionError("OSQP solves QPs only; a second-order-cone program needs CLARABEL, SCS or ECOS")
    if backend_options is not None and not isinstance(backend_options, dict):
        raise OptionError(f"backend_options must be a dict, got {type(backend_options).__name__}")
    opts = dict(ACCURATE.get(name, {}))
    opts.update(backend_options or {})
    return name, opts


def sym_part(M):
    """(M + M^T)/2 (CSR when M is sparse)."""
    if sp.issparse(M):
        return ((M + M.T) * 0.5).tocsr()
    M = np.asarray(M)
    return 0.5 * (M + M.T)


def _fro(M):
    return float(sp.linalg.norm(M)) if sp.issparse(M) else float(np.linalg.norm(M))


def check_symmetric_psd(M, *, sym_tol=SYM_TOL, psd_tol=PSD_TOL, symmetric=True, name="M"):
    """None when M is numerically symmetric positive semidefinite, else the reason (a string).

    ``symmetric=False`` checks only that the symmetric part (M + M^T)/2 is PSD (the friction
    programs move the skew part to the fixed point's linear term).

    Symmetric: ``||M - M^T||_F <= sym_tol ||M||_F``. PSD: a Cholesky factorisation of
    ``S + psd_tol ||M||_F I`` (S the symmetric part) succeeds, i.e. ``lambda_min(S) >= -psd_tol ||M||_F``.
    A sparse M gets a sparse Cholesky attempt first (SuperLU with diagonal pivots only: all pivots
    positive); if that fails, the dense test (up to ``DENSE_CHECK_MAX`` rows) or the smallest
    eigenvalue by ARPACK (``which='SA'``) with the same tolerance decides.

    Parameters
    ----------
    M : array_like or scipy.sparse matrix
        A square matrix.
    sym_tol : float, default SYM_TOL
        Relative tolerance of the symmetry test.
    psd_tol : float, default PSD_TOL
        Relative tolerance of the PSD test (a shift of ``psd_tol ||M||_F``).
    symmetric : bool, default True
        Whether M itself must be symmetric (False: only its symmetric part is tested for PSD).
    name : str, default "M"
        The matrix's name in the reason.

    Returns
    -------
    str or None
        None when M passes, else why it does not (which test failed and by how much).

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt.formulations import check_symmetric_psd
    >>> check_symmetric_psd(np.eye(2)) is None
    True
    >>> print(check_symmetric_psd(np.array([[1.0, 0.0], [0.0, -1.0]])))
    M is not positive semidefinite (smallest eigenvalue -1.000e+00 < -1.4e-10 = -1e-10 ||M||_F)
    >>> print(check_symmetric_psd(np.array([[1.0, 2.0], [0.0, 1.0]]), symmetric=False))
    None
    """
    n = M.shape[0]
    if n == 0:
        return None
    nrm = _fro(M)
    if nrm == 0.0:
        return None
    asym = _fro(M - M.T) if symmetric else 0.0
    if asym > sym_tol * nrm:
        return (f"{name} is not symmetric (||{name} - {name}^T||_F / ||{name}||_F = {asym / nrm:.2e} > {sym_tol:g}); the QP's "
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
            return f"{name} is not positive semidefinite (smallest eigenvalue {lam:.3e})"
        return None
    Sd = S.toarray() if sp.issparse(S) else S
    if cholesky(Sd + shift * np.eye(n)) is not None:
        return None
    lam = float(np.linalg.eigvalsh(Sd)[0])
    return (f"{name} is not positive semidefinite (smallest eigenvalue {lam:.3e} < -{shift:.1e} = "
            f"-{psd_tol:g} ||{name}||_F)")


def cached_sym_psd(problem, field="M", *, symmetric=True, psd_tol=PSD_TOL):
    """:func:`check_symmetric_psd` of the matrix ``problem.<field>``, computed once per matrix (shared
    by the problems ``replace`` makes from it)."""
    return problem.cached(f"convex:psd:{field}:{symmetric}:{psd_tol:g}",
                          lambda: check_symmetric_psd(getattr(problem, field), symmetric=symmetric,
                                                      psd_tol=psd_tol, name=field if symmetric else
                                                      f"the symmetric part of {field}"),
                          on=(field,))


def require_sym_psd(problem, owner):
    """Raise :class:`~nsopt.exceptions.NotApplicable` (``"<owner>: <why>"``) unless ``problem.M`` is
    symmetric PSD (:func:`cached_sym_psd`): the convex programs that need it refuse the others."""
    why = cached_sym_psd(problem)
    if why:
        from ..exceptions import NotApplicable

        raise NotApplicable(f"{owner}: {why}")


def quad_matrix(S):
    """The matrix given to ``cp.quad_form(x, psd_wrap(.))``: sparse CSC when sparse, else dense."""
    return sp.csc_matrix(S) if sp.issparse(S) else np.asarray(S, dtype=float)


class Formulation:
    """Base class of the convex formulations (see the module docstring).

    A subclass builds its CVXPY program in ``__init__`` (into :attr:`program`), sets ``method``
    and ``title`` and implements :meth:`statement`.

    Parameters
    ----------
    problem : Problem
        The problem the program is built for.
    backend : str, optional
        The CVXPY backend (default ``"CLARABEL"``).
    backend_options : dict, optional
        Merged over nsopt's accurate defaults (:data:`ACCURATE`).
    conic : bool, default True
        Whether the program is conic (OSQP, a QP-only solver, is then refused).

    Attributes
    ----------
    method : str
        The :func:`nsopt.solve` method name that runs this formulation.
    title : str
        The program's title in :meth:`explain`.
    problem : Problem
        The ``problem`` argument.
    backend : str
        The backend's upper-case name.
    backend_options : dict
        The merged options.
    user_options : dict
        The options the user gave.
    build_time : float
        Seconds spent building the CVXPY expressions (not compiling them).
    program : cvxpy.Problem or None
        The program, once built.

    Raises
    ------
    OptionError
        For a solver that is not installed, OSQP on a conic program, or ``backend_options`` not a dict.

    See Also
    --------
    BoxQP, LCPasQP : formulations built on this base.
    """

    method: str = ""          # the nsopt.solve method name that runs this formulation
    title: str = ""

    def __init_subclass__(cls, **kwargs):
        """Each formulation's constructor takes nsopt 0.1's ``solver`` / ``solver_options`` for one more
        release, with a DeprecationWarning naming ``backend`` / ``backend_options``
        (:func:`nsopt.registry.renamed`, the one place renamed options are translated)."""
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return
        accepted = tuple(inspect.signature(init).parameters)

        @functools.wraps(init)
        def __init__(self, *args, **options):
            init(self, *args, **renamed(options, accepted, type(self).__name__))

        cls.__init__ = __init__

    @property
    def solver(self) -> str:
        """nsopt 0.1's name of :attr:`backend` (DeprecationWarning)."""
        warnings.warn("Formulation.solver is renamed Formulation.backend", DeprecationWarning, stacklevel=2)
        return self.backend

    @property
    def solver_options(self) -> dict:
        """nsopt 0.1's name of :attr:`backend_options` (DeprecationWarning)."""
        warnings.warn("Formulation.solver_options is renamed Formulation.backend_options", DeprecationWarning,
                      stacklevel=2)
        return self.backend_options

    def __init__(self, problem, *, backend=None, backend_options=None, conic=True):
        self.problem = problem
        self.backend, self.backend_options = backend_setup(backend, backend_options, conic=conic)
        self.user_options = dict(backend_options or {})
        self.build_time = 0.0     # seconds spent building the CVXPY expressions (not compiling them)
        self.program = None

    def _empty_program(self):
        """The program of an empty problem (n = 0): nothing to minimise (CVXPY has no 0-vectors)."""
        import cvxpy as cp

        return cp.Problem(cp.Minimize(cp.Constant(0.0)))

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
                         f"{len(self.program.constraints)} constraint object(s), data as constants "
                         f"(compiled once; a fixed point updates the compiled data in place); "
                         f"backend {self.backend}")
        return "\n".join(parts)

    def __repr__(self):
        return f"{type(self).__name__}({self.problem!r}, backend={self.backend!r})"
