r"""Semismooth Newton methods for friction contact: Alart–Curnier, Fischer–Burmeister, proximal point.

Methods
-------
``nsn-ac`` (fc2d, fc3d, gfc2d, gfc3d)
    Semismooth Newton on the Alart–Curnier function [1]_ [2]_, contact by contact
    (normal first, :math:`\rho_N, \rho_T > 0`)

    .. math::
        \phi_N = r_N - \max(0, r_N - \rho_N u_N),\qquad
        \phi_T = r_T - P_{D(\mu\max(0, r_N - \rho_N u_N))}(r_T - \rho_T u_T),

    whose zeros are the solutions of Coulomb's law; an element of the generalised Jacobian gives
    the Newton matrix :math:`J = A + B W` (A, B block diagonal, ``dim x dim`` per contact),
    assembled (numba) on a fixed CSR pattern (W's block rows plus the diagonal blocks, built once
    and cached on the problem, kept from the previous step's problem of a run when W's pattern is
    the same), ordered by SuperLU's first factorisation (minimum-degree ordering of
    :math:`J^\top + J`) and refactorised in that order by the LU without pivoting (backward error
    checked; SuperLU's diagonal-preferring pivoting when it fails); small dense problems use LAPACK. W is often
    singular (more contact unknowns than degrees of freedom) and the plain AC Jacobian with it: a
    plain step that the line search cuts below 0.1 is retried with the regularised matrix
    :math:`A + B(W + \sigma_k I)`, :math:`\sigma_k = c_k\,\bar\lambda \min(e_k, 1)` proportional to
    the current error (Levenberg–Marquardt-like, option ``reg``; the residual is never changed).
    Outside the compiled loop of small dense problems (up to 24 unknowns, which keeps both as they
    were), once a plain step has been singular or poor the solve takes the regularised one only (one
    factorisation an iteration), and the factor :math:`c_k` adapts as Levenberg–Marquardt's does:
    halved after a full step, doubled after a step cut below 1/4, within [reg/10, 10 reg] (on the
    one-step problems of a 1000-cube pile: 45 % fewer iterations than a fixed factor).
    Globalised by a non-monotone Armijo line search on :math:`\tfrac12\|\phi\|^2` against the
    largest of the last 5 merits (for AC from 2000 contacts: of the last 20, at most 1000x the current
    merit; on a 1000-cube pile, 44 % fewer iterations)
    (switching to monotone Armijo and back when progress is slow); when the line search fails,
    projected Gauss–Seidel sweeps (projected fixed-point steps per contact) are taken instead; a
    singular matrix gets a diagonal shift. Hybrid: when the best error has not halved over 30
    iterations (100 for FB and in the compiled loop of W up to 24 unknowns), or the line search has
    cut 5 steps in a row below 2^-10 without halving it (the iterates creep: on a 1000-cube pile, a
    few contacts at the stick/slip or open/closed boundary whose solution lies far along W's null
    space), the method continues with proximal-point iterations (below) from its best iterate. When
    the iterates from a warm start stall, the Newton first runs again from zero (a warm start costs its
    stall, not a whole failed solve, more than a cold start). At each stall, and at ``max_iter``, an
    active-set polish of the best iterate (up to 300 unknowns): each contact classified separated,
    sticking or sliding, the reduced system (:math:`r = 0`; :math:`u = 0`; :math:`u_N = 0` with
    :math:`\|r_T\| = \mu r_N` along :math:`r_T`) solved by minimum-norm Gauss–Newton steps, round after
    round one more sticking contact held on its cone's boundary (the degenerate solutions of a hyperstatic
    pile: sticking contacts on the boundary, slip velocities ~1e-8, the solution far along W's null space);
    its point is kept when the problem's error measure of it is lower (a step of the 10-cube pile: 136 ->
    53 iterations at 1e-9).
``nsn-fb`` (fc2d, fc3d, gfc3d)
    The same with the Fischer–Burmeister function of the second-order cone (Jordan algebra,
    Fukushima, Luo & Tseng [3]_) on De Saxcé's modified velocity
    :math:`\hat u = u + \mu\|u_T\| e_N`: with :math:`x = (\mu r_N, r_T)`,
    :math:`y = (\hat u_N, \mu \hat u_T)`, :math:`\phi = x + y - (x^2 + y^2)^{1/2}`
    (x, y in the Lorentz cone and orthogonal iff r in :math:`K_\mu`, :math:`\hat u \in K_\mu^*`,
    :math:`r \perp \hat u`); where :math:`x^2 + y^2` is on the cone boundary the Jacobian of a
    slightly smoothed square root is used. Same globalisation; when the FB iterates stall, the
    solve continues as ``nsn-ac`` would from the same starting point (its regularised Newton, then its
    guarded proximal continuation), within the same iteration budget. The FB iterates stall on
    Siconos' RockPile, and on BoxesStack1 once in 15 runs under 1e-13 changes of q (or under another
    CPU's BLAS rounding); there a proximal continuation with an inner FB Newton did not converge, and
    the AC Newton from the FB iterate creeps (issue 33).
``prox`` (fc3d)
    Proximal point outer loop [4]_: at :math:`r_k`, solve the regularised problem
    :math:`W + \sigma I,\ q - \sigma r_k` by ``nsn-ac`` (a well-conditioned Newton matrix even when
    W is singular), set :math:`r_{k+1}` to its solution, and adapt :math:`\sigma`.

Global problems (gfc2d, gfc3d) are solved on the global system: unknowns :math:`(v, r)`,
residual :math:`(Mv - Hr - q,\ \phi(r, H^\top v + b))`, sparse Newton matrix
:math:`\begin{pmatrix} M & -H \\ B H^\top & A \end{pmatrix}`.

Never raises on non-convergence: the iterate with the smallest error comes back with a status.

References
----------
.. [1] P. Alart, A. Curnier, A mixed formulation for frictional contact problems prone to Newton
   like solution methods, CMAME 92 (1991).
.. [2] P. Christensen, A. Klarbring, J. Pang, N. Strömberg, Formulation and comparison of
   algorithms for frictional contact problems, IJNME 42 (1998).
.. [3] M. Fukushima, Z.-Q. Luo, P. Tseng, Smoothing functions for second-order-cone
   complementarity problems, SIAM J. Optim. 12 (2002).
.. [4] V. Acary, F. Cadoux, C. Lemaréchal, J. Malick, A formulation of the linear discrete Coulomb
   friction problem via convex optimization, ZAMM 91 (2011); Siconos ``fc3d_proximal``.
"""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from .._jit import entry_point
from ..exceptions import OptionError
from ..linalg import min_norm_lstsq
from ..monitor import Monitor
from ..problems._base import affine
from ..problems.cones import project_coulomb
from ..problems.friction import diag_blocks
from ..registry import register
from ..result import Status
from . import _gs_kernels as GS
from . import _newton_kernels as K
from .newton_loop import CREEP_N, CREEP_T, REG_STEP, newton_loop  # noqa: F401  (CREEP_*: the loop's, named here)
from .newton_system import CONTACTS, BodySystem, ContactSystem, dense_contact_matrix, newton_direction

DEFAULT_MAX_ITER = 1000  # Newton iterations (proximal outer iterations) when max_iter is None
DENSE_MAX = 240          # default of the option dense_max: dense LAPACK path for W dense and n <= this
SMALL_DENSE = 24         # a dense system up to this size runs the compiled Newton loop (newton_dense)
DENSE_CHUNK = 1024       # iterations per compiled call of that loop (without callback or deadline)
_LS = ("armijo", "nonmonotone", "none")
# hybrid: the Newton iterates have stalled when the best error has not halved over STALL[formulation]
# iterations (STALL_SMALL in the compiled loop of small dense W), or when they creep: CREEP_N iterations in a row
# whose line search cut the step below CREEP_T (or failed) without halving the best error. Then the proximal
# continuation (_prox_loop) takes over from the best iterate. On the one-step problems of a 1000-cube pile the
# AC iterates creep (steps of 1e-3..1e-8) on a few contacts at the stick/slip or open/closed boundary whose
# solution lies far away along W's null space; RockPile_tob1 likewise (100 creeping iterations at 3e-8). The
# FB Newton progresses slowly but surely on the corpus (BoxesStack1, 105 iterations) and keeps 100.
STALL, STALL_SMALL = {"ac": 30, "fb": 100}, 100
# the non-monotone line search of the AC Newton on a system of at least MEMORY_NC contacts larger than SMALL_DENSE:
# Armijo against the largest of the last MEMORY[1] merits (MEMORY[0] below, in the compiled loop and for FB), at
# most RISE x the current merit. On a hyperstatic pile of thousands of contacts the regularised AC steps alternate:
# a full step that raises the merit 10-1000x (a few contacts change state; the shift, proportional to the error, is
# small after a good step), then one that lowers it 100-1e6x; with a memory of 5 a raising step is cut whenever the
# merit 5 steps back was lower, and the iterates creep; a memory of 20 also takes rises of 1e7-1e8 from near a
# solution, which RISE stops. The one-step problems of a 1000-cube pile (3900 contacts), iterations a solve:
# 250-274: 81 (5) -> 52.8 (20) -> 45.7 (20, RISE 1e3); 180-319: 61.0 -> 50.8 -> 45.3 (memory 10 and 40, RISE 1e2,
# 1e4 and 1e5 did less well or no better). On a few hundred contacts a long memory lets the iterates climb back to the
# start's merits: RockPile_tob1 (463 contacts) took 393 iterations instead of 108 with 20, a 10-cube pile step
# stalled at 2e-9: they keep 5, without the cap
MEMORY, MEMORY_NC, RISE = (5, 20), 2000, 1e3
# the proximal continuation of the AC Newton (guarded): an inner Newton that has not halved its error in
# PROX_INNER_STALL iterations gives up, and sigma never shrinks back below shrink x a sigma that failed
PROX_INNER_STALL = 8
# the active-set polish (_active_set_polish) of a stalled solve: up to POLISH_MAX unknowns (dense least squares),
# POLISH_ROUNDS reduced systems (each one more contact held on its cone's boundary), POLISH_GN Gauss-Newton steps each
# (singular values below POLISH_RCOND x the largest dropped: W's null space)
POLISH_MAX, POLISH_ROUNDS, POLISH_GN, POLISH_RCOND = 300, 4, 2, 1e-12


# ============================================================================ helpers


def _rho_from_blocks(Wd, rho, mu):
    """(rho_N, rho_T, rho_pgs) per contact from the diagonal blocks ``Wd`` (nc, dim, dim). ``rho``
    scalar, a pair, or "auto" (split spectral norm): :func:`_newton_kernels.rho_of_blocks`."""
    if isinstance(rho, str):
        if rho != "auto":
            raise OptionError(f"rho must be a positive number, a pair, or 'auto', got {rho!r}")
        auto, rn, rt = True, 1.0, 1.0
    else:
        auto, (rn, rt) = False, _rho_pair(rho)
    nc = Wd.shape[0]
    rhoN, rhoT, rho_pgs = np.empty(nc), np.empty(nc), np.empty(nc)
    K.rho_of_blocks(np.ascontiguousarray(Wd, dtype=float), auto, rn, rt, rhoN, rhoT, rho_pgs)
    return rhoN, rhoT, rho_pgs


def _rho_pair(rho):
    """(rho_N, rho_T) of a positive number or a pair (the option ``rho`` when it is not "auto")."""
    try:
        vals = np.atleast_1d(np.asarray(rho, dtype=float))
    except (TypeError, ValueError):
        vals = np.zeros(0)
    if vals.size not in (1, 2) or not np.all(np.isfinite(vals)) or np.any(vals <= 0):
        raise OptionError(f"rho must be a positive number, a pair (rho_N, rho_T), or 'auto', got {rho!r}")
    return float(vals[0]), float(vals[-1])


def _check_reg(reg):
    if isinstance(reg, bool) or not isinstance(reg, (int, float)) or not math.isfinite(reg) or reg < 0:
        raise OptionError(f"reg must be a non-negative number, got {reg!r}")
    return float(reg)


def _check_scale(scale):
    if scale == "auto":
        return scale
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not np.isfinite(scale) or scale <= 0:
        raise OptionError(f"fb_scale must be a positive number or 'auto', got {scale!r}")
    return float(scale)


def _check_line_search(line_search):
    if line_search not in _LS:
        raise OptionError(f"line_search must be one of {_LS}, got {line_search!r}")


_SMALL_LAZY = frozenset(("rhoN", "rhoT", "rho_pgs", "gamma_c", "gamma", "csr", "_Wcsr", "A", "B", "phi", "_x", "_px",
                         "search_work"))


class _LocalFrictionSystem:
    """One local friction-contact system u = W r + q + sigma (r - rc) and its Newton machinery.

    Built once per (W, mu, formulation, rho, scale) and kept in the problem's cache or the caller's
    :class:`~nsopt.Workspace`; :meth:`reset` sets the q of the problem being solved."""

    def __init__(self, problem, formulation, rho, fb_scale=1.0, dense_max=DENSE_MAX, previous=None):
        self.dim, self.nc = dim, nc = problem.dim, problem.nc
        self.n = n = problem.size
        self.mu = np.ascontiguousarray(problem.mu, dtype=float)
        W = problem.W
        self.dense = (type(W) is np.ndarray or not sp.issparse(W)) and n <= dense_max
        self.small = self.dense and n <= SMALL_DENSE      # the compiled Newton loop (newton_dense)
        self.formulation = formulation
        self.label = formulation.upper()
        self.pat = self.body = None
        self.dense_state = None     # work arrays and arguments of the compiled loop (_newton_dense)
        if self.small:
            # one compiled call: rho, the FB scale and W's CSR (no NumPy or SciPy set-up per W); the
            # views of the Python path (rho, gamma, W's CSR, the Newton blocks) are made when first
            # read (__getattr__): the compiled loop reads the packed P, Q only
            self.Wd = W if type(W) is np.ndarray and W.flags.c_contiguous else np.ascontiguousarray(W, dtype=float)
            auto = isinstance(rho, str)
            rn, rt = (1.0, 1.0) if auto else _rho_pair(rho)
            if auto and rho != "auto":
                raise OptionError(f"rho must be a positive number, a pair, or 'auto', got {rho!r}")
            self.P, self.Q = K.dense_layout(n, nc)
            self.wscale = K.dense_setup(self.Wd, dim, self.mu, auto, rn, rt, fb_scale == "auto",
                                        1.0 if fb_scale == "auto" else float(fb_scale), self.P, self.Q)
            self.reset(problem)
            return
        if self.dense:
            self.Wd = np.ascontiguousarray(W, dtype=float)
            Wcsr = None         # (W's CSR, read by pgs and the proximal terms only: made when first read)
        else:
            # (the previous system's patterns and kept orders when they still hold)
            prev = previous if isinstance(previous, _LocalFrictionSystem) else None
            self.pat = pat = problem.cached("newton_pattern", lambda: ContactSystem(W, nc, dim, prev and prev.pat),
                                            on=("W",))
            Wcsr = pat.W
            self.csr = (pat.Wdata, pat.Windices, pat.Windptr)     # (the pattern's: read only)
            f = problem.delassus_factors
            if f is not None and f.nv < n:      # the Newton systems in the dofs' space (smaller)
                self.body = problem.cached("newton_body", lambda: BodySystem(f, nc, dim, prev and prev.body),
                                           on=("W",))
        self._Wcsr = Wcsr
        self.rhoN, self.rhoT, self.rho_pgs = _rho_from_blocks(problem.diag_blocks(), rho, self.mu)
        # FB: phi(r, gamma u), gamma > 0 (same zeros); "auto": gamma = 1 / mean lambda_max(W_aa)
        g = float(np.mean(self.rho_pgs)) if fb_scale == "auto" else float(fb_scale)
        self.gamma_c = np.full(nc, g)
        self.gamma = np.repeat(self.gamma_c, dim)
        self.wscale = float(np.mean(1.0 / self.rho_pgs)) if nc else 1.0
        self._blocks()
        self.reset(problem)

    def _blocks(self):
        """The work arrays of the Python path's Newton steps (:meth:`jac`, :meth:`direction`) and of
        :meth:`error`."""
        nc, dim = self.nc, self.dim
        self._x, self._px = np.empty(dim), np.empty(dim)
        self.A = np.zeros((nc, dim, dim))
        self.B = np.zeros((nc, dim, dim))
        self.phi = np.zeros(self.n)
        # the line search's r + t d, u + t W d and FB's gamma u (_newton_kernels.backtrack)
        self.search_work = (np.empty(self.n), np.empty(self.n), np.empty(self.n))

    def __getattr__(self, name):
        # a small system (the compiled loop) makes the Python path's views of its packed arrays when
        # one is first read (the proximal continuation, the prox method, the error measure in Python);
        # a dense one makes W's CSR when pgs first reads it
        if name in _SMALL_LAZY and self.__dict__.get("small"):
            n, nc = self.n, self.nc
            self.rhoN, self.rhoT, self.rho_pgs, self.gamma_c, self.gamma = K.dense_views(self.P, n, nc)
            nz = int(self.Q[n])
            o = 4 * nc + n
            self.csr = (self.P[o:o + nz], self.Q[n + 1:n + 1 + nz], self.Q[:n + 1])
            self._Wcsr = None
            self._blocks()
            return self.__dict__[name]
        if name == "csr" and self.__dict__.get("dense"):
            Wcsr = sp.csr_matrix(self.Wd)
            self.csr = (np.ascontiguousarray(Wcsr.data, dtype=float), Wcsr.indices.astype(np.int64),
                        Wcsr.indptr.astype(np.int64))
            return self.csr
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def Wcsr(self):
        """W as a SciPy CSR matrix (the Python path; made when first asked for a small dense W)."""
        if self._Wcsr is None:
            data, ind, ptr = self.csr
            self._Wcsr = sp.csr_matrix((data, ind, ptr), shape=(self.n, self.n))
        return self._Wcsr

    def reset(self, problem):
        """Start a solve of ``problem`` (same W and mu): its q, no proximal term."""
        self.q = problem.q        # (a problem's q: float64, contiguous, read-only)
        self.qnorm = problem.qnorm
        self.sigma, self.rc = 0.0, None
        self.reg = 0.0            # Levenberg-Marquardt-like shift of the Newton matrix only: A + B (W + reg I)
        self.direction_Wd = None  # (d, W d) of the last direction when its solve gave W d (the bodies' space)
        return self

    def error(self, r, u):
        """The problem's error measure of (r, u) (the proximal term aside): its one compiled home
        (:func:`nsopt.problems._measures.fc_error`, which :func:`nsopt.problems.cones.fc_error` calls)."""
        return GS.fc_error(self.dim, r, u, self.mu, self.qnorm, self._x, self._px)

    def matvec(self, x):
        return self.Wd @ x if self.dense else self.Wcsr @ x

    def u(self, r):
        u = self.matvec(r) + self.q
        if self.sigma:
            u += self.sigma * (r - self.rc)
        return u

    def jac(self, r, u):
        if self.formulation == "ac":
            return K.ac_jac(r, u, self.mu, self.rhoN, self.rhoT, self.dim, self.phi, self.A, self.B)
        f = K.fb_jac(r, self.gamma * u, self.mu, self.dim, self.phi, self.A, self.B)
        self.B *= self.gamma_c[:, None, None]
        return f

    def direction(self, shifts=(0.0, 1e-10, 1e-6)):
        """Solve J d = -phi (J = A + B (W + sigma I)); None when singular even after regularisation."""
        sg = self.sigma + self.reg
        A = self.A + sg * self.B if sg else self.A
        if self.dense and self.n <= SMALL_DENSE:     # compiled: assembly and LU in one call
            d = np.empty(self.n)
            return d if K.dense_direction(A, self.B, self.Wd, self.phi, np.array(shifts, dtype=float), d) else None
        if self.dense:
            return newton_direction(dense_contact_matrix(A, self.B, self.Wd), -self.phi, shifts)
        pat, body, assembled = self.pat, self.body, False
        for s in shifts:
            d = body.solve(A, self.B, self.phi, s) if body is not None else CONTACTS
            wd = None
            if d is CONTACTS:
                if not assembled:
                    pat.assemble(A, self.B)
                    assembled = True
                d = pat.solve(A, self.B, self.phi, s)
            elif d is not None:
                wd = body.Wd
            if d is not None and np.all(np.isfinite(d)):
                self.direction_Wd = (d, wd)
                return d
        return None

    def pgs(self, r, nsweeps=1, inner=10):
        """Projected Gauss-Seidel sweeps on the (regularised) system, in place."""
        if self.sigma:    # W + sigma I, q - sigma rc
            Wc = (self.Wcsr + self.sigma * sp.identity(self.n, format="csr")).tocsr()
            Wc.sort_indices()
            data, ind, ptr = Wc.data, Wc.indices.astype(np.int64), Wc.indptr.astype(np.int64)
            q = self.q - self.sigma * self.rc
            rho = 1.0 / (1.0 / self.rho_pgs + self.sigma)
        else:
            data, ind, ptr = self.csr
            q, rho = self.q, self.rho_pgs
        K.fc_projected_sweeps(data, ind, ptr, q, self.mu, self.dim, rho, r, nsweeps, inner)


def _search(sys, r, u, d, f0, fref, line_search, phi_t):
    """Backtracking (Armijo against fref) on the merit along d: (accepted, t, merit at t). W d from the
    direction's solve in the bodies' space (:class:`~nsopt.solvers.newton_system.BodySystem`), else a product."""
    last = sys.direction_Wd
    Wd = last[1] if last is not None and last[0] is d and last[1] is not None else sys.matvec(d)
    if sys.sigma:
        Wd += sys.sigma * d
    if line_search == "none":
        return True, 1.0, f0
    w = sys.search_work
    return K.backtrack(sys.formulation == "fb", r, u, d, Wd, f0, fref, sys.mu, sys.rhoN, sys.rhoT, sys.gamma, sys.dim,
                       w[0], w[1], phi_t, w[2])




def _reduced_system(sys, r, u, kind, boundary):
    r"""The linearised equations at r of the active set ``kind`` (per contact: 0 separated, 1 sticking, 2 sliding)
    for :func:`_active_set_polish`: (A, b) with the Gauss–Newton step d of ``A d = b`` (least squares)."""
    dim, nc, mu = sys.dim, sys.nc, sys.mu
    R = r.reshape(nc, dim)
    rt = np.sqrt(np.sum(R[:, 1:] ** 2, axis=1))
    base = dim * np.arange(nc)
    sep, stick, slide = kind == 0, kind == 1, kind == 2
    # rows of W: u_N = 0 on closed contacts, u_T = 0 on sticking ones
    wrows = np.sort(np.concatenate([base[~sep]] + [base[stick] + j for j in range(1, dim)]))
    W = sys.Wd[wrows] if sys.dense else sys.Wcsr[wrows].toarray()
    blocks, rhs = [W], [-u[wrows]]
    # r = 0 on separated contacts; r_T = 0 on a sliding one without tangential reaction (mu = 0)
    flat = sep[:, None] | ((slide & (rt == 0.0))[:, None] & (np.arange(dim) > 0))
    idx = np.flatnonzero(flat.reshape(-1))
    E = np.zeros((idx.size, sys.n))
    E[np.arange(idx.size), idx] = 1.0
    blocks.append(E)
    rhs.append(-r[idx])
    # |r_T| = mu r_N on sliding contacts and on sticking ones held on the boundary; a sliding contact keeps the
    # direction of r_T (dim 3: no change across it)
    cone = np.flatnonzero((slide | (stick & boundary)) & (rt > 0.0))
    t = R[cone, 1:] / rt[cone, None]
    C = np.zeros((cone.size, sys.n))
    C[np.arange(cone.size), base[cone]] = -mu[cone]
    for j in range(1, dim):
        C[np.arange(cone.size), base[cone] + j] = t[:, j - 1]
    blocks.append(C)
    rhs.append(mu[cone] * R[cone, 0] - rt[cone])
    if dim == 3:
        turn = np.flatnonzero(slide & (rt > 0.0))
        T = np.zeros((turn.size, sys.n))
        T[np.arange(turn.size), base[turn] + 1] = -R[turn, 2] / rt[turn]
        T[np.arange(turn.size), base[turn] + 2] = R[turn, 1] / rt[turn]
        blocks.append(T)
        rhs.append(np.zeros(turn.size))
    return np.vstack(blocks), np.concatenate(rhs)


def _active_set_polish(sys, r, err, tol):
    r"""A point of lower error near a stalled iterate r (error ``err``), or None: the active-set polish.

    Each contact of r is classified (with :math:`\rho` = ``rho_pgs``): separated when
    :math:`r_N - \rho u_N \le 0`, sticking when :math:`\mu r_N - \|r_T\| > \rho \|u_T\|`, else sliding. The
    reduced system (separated: :math:`r = 0`; sticking: :math:`u = Wr + q = 0`; sliding: :math:`u_N = 0`,
    :math:`\|r_T\| = \mu r_N` along the direction of :math:`r_T`) is solved by Gauss–Newton steps of minimum
    norm (W singular: :func:`nsopt.linalg.min_norm_lstsq`). When the iterates creep, some sticking contacts of
    the solution lie on their cone's boundary, their slip velocity a few orders below the error (a hyperstatic
    pile: the solution far along W's null space); round after round, the sticking contact whose :math:`u_T`
    the reduced solve leaves largest is held on its boundary too (:math:`\|r_T\| = \mu r_N` added to
    :math:`u = 0`). The point of lowest error by the problem's measure (``sys.error``) is returned when it is
    below ``err``; the rounds end at ``tol``."""
    if sys.n > POLISH_MAX or sys.sigma:
        return None
    nc, dim = sys.nc, sys.dim
    u = sys.u(r)
    R, U = r.reshape(nc, dim), u.reshape(nc, dim)
    rho = sys.rho_pgs
    rt, ut = np.sqrt(np.sum(R[:, 1:] ** 2, axis=1)), np.sqrt(np.sum(U[:, 1:] ** 2, axis=1))
    sep = R[:, 0] - rho * U[:, 0] <= 0.0
    kind = np.where(sep, 0, np.where(sys.mu * R[:, 0] - rt > rho * ut, 1, 2))
    boundary = np.zeros(nc, dtype=bool)
    best, best_err = None, err
    for _ in range(POLISH_ROUNDS):
        x, ux = r, u
        for _ in range(POLISH_GN):
            d = min_norm_lstsq(*_reduced_system(sys, x, ux, kind, boundary), rcond=POLISH_RCOND)
            if d is None:
                return best
            x = x + d
            ux = sys.u(x)
        e = sys.error(x, ux)
        if e < best_err:
            best, best_err = (x, e), e
        if best_err <= tol:
            break
        free = np.flatnonzero((kind == 1) & ~boundary)
        if not free.size:
            break
        slip = np.sum(ux.reshape(nc, dim)[free, 1:] ** 2, axis=1)
        boundary[free[np.argmax(slip)]] = True
    return best


_LS_CODES = MappingProxyType({"armijo": 0, "nonmonotone": 1, "none": 2})
_FRESH, _RUN, _STOP, _STALLED = K.NEWTON_FRESH, K.NEWTON_RUN, K.NEWTON_STOP, K.NEWTON_STALLED
_NO_ERRORS = np.zeros(0)


_DENSE_KERNELS = {}     # the flags of a small system's W -> the entry point of newton_dense


def _dense_kernel(sys, istate, S, Wk, errs):
    """The compiled ``newton_dense`` for a small system (``sys``) and its state, called without
    numba's dispatch (:func:`nsopt._jit.entry_point`): the types of its arguments are those of the
    system's W, known when it is made, and fixed otherwise (the packed arrays, a problem's read-only
    vectors, float64 r, u and errors, and the scalars as ``_newton_dense`` passes them)."""
    key = sys.Wd.flags.num
    kernel = _DENSE_KERNELS.get(key)
    if kernel is None:
        kernel = _DENSE_KERNELS[key] = entry_point(K.newton_dense, (
            False, sys.Wd, sys.q, sys.mu, sys.P, sys.Q, 1.0, 1.0, errs, errs, istate, S, Wk, 1, 1, 1e-8, 1, 1, 1, 1.0,
            0.1, errs))
    return kernel


def _newton_dense(sys, r, mon, line_search, memory, stall, switch, reg, reg_step):
    """:func:`_newton_local` on a small dense system without proximal term: the same loop, compiled
    (``_newton_kernels.newton_dense``), called in turns under the monitor (:meth:`Monitor.record`:
    the kernel keeps the best iterate and applies the contract's stops, the monitor judges). Without
    a callback or a deadline the start and up to ``DENSE_CHUNK`` iterations are one call.
    Returns (r, stalled, info, measured): ``measured`` is (u, error) of the best iterate as the
    kernel computed them when it stopped, else None."""
    st = sys.dense_state
    nb = (stall if stall is not None and stall > switch else switch) + 2
    if st is None or st[0] != memory or st[1] != nb:
        istate, S, (_, _, best_r), Wk = K.dense_state(sys.n, memory, nb, sys.nc)
        # what every call reads, in one tuple: the work arrays, the errors' room, the view of fstate and
        # best read after a call (S[:4]), the best iterate as the monitor borrows it, the compiled
        # kernel and the system's own arguments
        st = sys.dense_state = (memory, nb, istate, S, Wk, _NO_ERRORS, S[:4], {"r": best_r},
                                _dense_kernel(sys, istate, S, Wk, _NO_ERRORS), sys.formulation == "fb", sys.Wd, sys.mu,
                                sys.P, sys.Q, sys.wscale)
    _, _, istate, S, Wk, errs, head, xbest, kernel, fb, W, mu, P, Q, wscale = st
    istate[1], istate[8] = _LS_CODES[line_search], _FRESH
    u = np.empty(sys.n)
    stall = -1 if stall is None else stall
    max_iter = mon.max_iter
    if mon.callback is None and mon.deadline is None:      # fused: the start and the first chunk in one call
        c = DENSE_CHUNK if DENSE_CHUNK < max_iter else max_iter
        fused = True
    else:
        c, fused = 0, False
    keep = mon.history is not None or mon.callback is not None     # the errors of each iteration
    if not keep:
        errs = _NO_ERRORS
    x, start, q, qnorm, tol = {"r": r}, True, sys.q, sys.qnorm, mon.tol
    while True:
        if keep and errs.shape[0] < c:
            errs = np.empty(max(c, 2 * errs.shape[0]))
            sys.dense_state = st = st[:5] + (errs,) + st[6:]
        kk = kernel(fb, W, q, mu, P, Q, qnorm, wscale, r, u, istate, S, Wk, memory, c, tol, max_iter, stall, switch, reg,
                    reg_step, errs)
        e, e0, e_best, b = head.tolist()      # (fstate and best)
        ist = istate.tolist()       # (read once: the loop's code now, the counters after it)
        code = ist[8]
        if mon.record(e0 if start else None, kk, e, errs, x, xbest, b, ist[9]) is not None or code != _RUN:
            break
        start = False
        c = min(DENSE_CHUNK, max_iter - mon.k) if fused else mon.chunk()
    _, _, n_fb, n_sing, n_sw, n_lm, _, _, code, _ = ist
    info = {"fallback_steps": n_fb, "singular": n_sing, "line_search_switches": n_sw, "regularised_steps": n_lm}
    measured = (u, e_best) if code == _STOP else None
    return r, code == _STALLED and mon.status is None, info, measured


class _LocalNewton:
    """A :class:`_LocalFrictionSystem` as :func:`~nsopt.solvers.newton_loop.newton_loop` reads it: x = r, with
    u = W r + q (+ the proximal term) kept from the last :meth:`error`."""

    polish = None

    def __init__(self, sys, err_fn, reg):
        self.sys, self.err_fn = sys, err_fn
        self.shifts = (0.0,) if reg else (0.0, 1e-10, 1e-6)  # with reg, a singular plain matrix goes to the regularised one
        self.wscale = sys.wscale
        self.phi_t = np.empty(sys.n)
        self.u = None

    def error(self, r):
        self.u = self.sys.u(r)
        return self.err_fn(r, self.u)

    def variables(self, r):
        return {"r": r}

    def linearise(self, r):
        return self.sys.jac(r, self.u)

    def direction(self, r, shift):
        sys = self.sys
        if shift is None:
            return sys.direction(self.shifts)
        sys.reg = shift        # A + B (W + shift I): the residual is never changed
        try:
            return sys.direction()
        finally:
            sys.reg = 0.0

    def search(self, r, d, f0, fref, line_search, regularised):
        return _search(self.sys, r, self.u, d, f0, fref, line_search, self.phi_t)

    def move(self, r, t, d):
        return r + t * d

    def fallback(self, r):
        r = r.copy()
        self.sys.pgs(r, nsweeps=3)
        return r


def _newton_local(sys, r, mon, *, line_search, err_fn, memory=5, rise=None, stall=None, switch=20, reg=0.0,
                  reg_step=REG_STEP, started=False):
    """Globalised semismooth Newton on a _LocalFrictionSystem under the monitor ``mon``: the one Newton loop
    (:func:`~nsopt.solvers.newton_loop.newton_loop`; its :meth:`~Monitor.start` unless ``started``).
    Returns (last r, stalled, info); the best iterate is the monitor's. ``stalled``: the best error
    has not halved over the last ``stall`` iterations, or (``stall`` given) over the last CREEP_N
    iterations, each with a step cut below CREEP_T or failed. A small dense system (n <=
    SMALL_DENSE) without proximal term runs the compiled form of this loop (:func:`_newton_dense`)."""
    if sys.small and not sys.sigma and err_fn == sys.error:
        return _newton_dense(sys, r, mon, line_search, memory, stall, switch, float(reg), float(reg_step))[:3]
    return newton_loop(_LocalNewton(sys, err_fn, reg), r, mon, line_search=line_search, memory=memory, rise=rise,
                       stall=stall, switch=switch, reg=reg, reg_step=reg_step, plain="until_poor", started=started)


def _search_memory(sys):
    """The non-monotone line search of the Newton on ``sys``: {memory, rise} (MEMORY, MEMORY_NC, RISE)."""
    if sys.formulation == "ac" and sys.nc >= MEMORY_NC:
        return {"memory": MEMORY[1], "rise": RISE}
    return {"memory": MEMORY[0], "rise": None}


def _check_dense_max(dense_max):
    if isinstance(dense_max, bool) or not isinstance(dense_max, (int, np.integer)) or dense_max < 0:
        raise OptionError(f"dense_max must be a non-negative integer, got {dense_max!r}")
    return int(dense_max)


_KEYED = frozenset((str, float, int))


def _local_system(problem, mon, formulation, rho, scale=1.0, dense_max=DENSE_MAX):
    """The _LocalFrictionSystem of ``problem`` (built once per W and mu and these options, and kept: see
    :meth:`Monitor.state`), reset to its q; a new one's build time is the solve's build_time."""
    # rho "auto" (the default) or a number as it is; anything else (a pair, a list) by its text
    key = ("newton_local", formulation, rho if type(rho) in _KEYED else repr(rho), scale, dense_max)
    return mon.state(problem, key, _LocalFrictionSystem, ("W", "mu"), (formulation, rho, scale, dense_max),
                     previous=True).reset(problem)


def _local_checked(*, line_search, reg_step, dense_max, **options):
    """The options of ``nsn-ac`` / ``nsn-fb`` checked (once per distinct values: ``register(check=)``);
    ``rho`` and ``scale`` are checked with the system they build."""
    _check_line_search(line_search)
    if not (isinstance(reg_step, (int, float)) and 0.0 <= reg_step <= 1.0) or isinstance(reg_step, bool):
        raise OptionError(f"reg_step must be a number in [0, 1], got {reg_step!r}")
    options.update(line_search=line_search, reg_step=float(reg_step), dense_max=_check_dense_max(dense_max),
                   reg=_check_reg(options["reg"]))
    if "fb_scale" in options:
        options["fb_scale"] = _check_scale(options["fb_scale"])
    return options


def _polish_stalled(sys, mon, polished, tried):
    """The active-set polish (:func:`_active_set_polish`) of the best iterate of a stalled Newton (not one polished
    before: the best errors in ``tried``): recorded as one iteration when its error reaches tol (True: solved),
    else a point of lower error kept in ``polished``."""
    if mon.stopped or mon.best_x is None or mon.best_err in tried:
        return False
    tried.append(mon.best_err)
    p = _active_set_polish(sys, mon.best_x["r"], mon.best_err, mon.tol)
    if p is None:
        return False
    if p[1] > mon.tol:
        polished.append(p)
        return False
    mon.step({"r": p[0]}, p[1])
    return mon.status is Status.SOLVED


def _local_solve(problem, mon, formulation, rho, line_search, hybrid, reg, scale, dense_max, reg_step):
    """nsn-ac / nsn-fb on a local problem (options checked by :func:`_local_checked`; positional: a
    re-solve's per-call cost)."""
    if mon.max_iter is None:
        mon.budget(DEFAULT_MAX_ITER)
    sys = _local_system(problem, mon, formulation, rho, scale, dense_max)
    r = mon.start_vector("r", problem.size)
    r_start = r.copy()
    measured = None
    if sys.small:
        r, stalled, info, measured = _newton_dense(sys, r, mon, line_search, 5, STALL_SMALL if hybrid else None, 20,
                                                   reg, reg_step)
    else:
        r, stalled, info = _newton_local(sys, r, mon, line_search=line_search, err_fn=sys.error,
                                         **_search_memory(sys), stall=STALL[formulation] if hybrid else None,
                                         reg=reg, reg_step=reg_step)
    polished, tried = [], []      # the polish's points of lower error that did not reach tol; the errors polished
    msg = ("%s Newton: error %.3g after %d iterations", (sys.label, mon.best_err, mon.k))
    if stalled and _polish_stalled(sys, mon, polished, tried):
        stalled, measured = False, None
        msg = f"{msg[0] % msg[1]}; stalled, active-set polish: error {mon.best_err:.3g}"
        info.update(polished=True)
    cold = ""
    if stalled and formulation == "ac" and not sys.small and np.any(r_start) and not mon.stopped:
        # a warm start that stalls (the previous step's impulses in a hyperstatic pile, a nearby problem's
        # solution): the Newton from zero, as a cold solve would start, before the continuation from the best
        # iterate of both; the warm start costs the iterations to its stall, not a whole failed solve
        k0, e0 = mon.k, mon.best_err
        _, stalled, _ = _newton_local(sys, np.zeros_like(r_start), mon, line_search=line_search,
                                      err_fn=sys.error, **_search_memory(sys),
                                      stall=STALL[formulation] if hybrid else None, reg=reg, reg_step=reg_step,
                                      started=True)
        info.update(cold_newton=mon.k - k0)
        cold = f"warm start: error {e0:.3g} after {k0} iterations; stalled, from zero: "
        msg = f"{cold}{sys.label} Newton: error {mon.best_err:.3g} after {mon.k} iterations"
        if stalled and _polish_stalled(sys, mon, polished, tried):
            stalled = False
            msg += f"; stalled, active-set polish: error {mon.best_err:.3g}"
            info.update(polished=True)
    if stalled:
        k0, e0 = mon.k, mon.best_err
        msg = f"{cold}{sys.label} Newton: error {e0:.3g} after {k0} iterations; stalled"
        psys = sys
        if formulation == "fb":
            # the FB iterates stalled: nsn-ac's Newton (its regularised steps) from the starting point, then,
            # if it stalls too, its guarded proximal continuation (see the module's docstring)
            psys = _local_system(problem, mon, "ac", "auto", dense_max=dense_max)
            _, stalled, ainfo = _newton_local(psys, r_start, mon, line_search=line_search,
                                              err_fn=psys.error, **_search_memory(psys), stall=STALL["ac"], reg=1.0,
                                              reg_step=reg_step, started=True) if not psys.small else (None, True, {})
            info.update(ac_newton=mon.k - k0)
            msg += f", AC Newton: error {mon.best_err:.3g}"
        if stalled and not mon.stopped:
            # hybrid: the plain Newton stalled -> proximal regularisation from the best iterate
            k1 = mon.k
            pinfo = _prox_loop(psys, mon.best_x["r"].copy(), mon, sigma=None, local_max_iter=30,
                               line_search=line_search, guarded=True)
            info.update(prox_outer=mon.k - k1, prox_newton=pinfo["newton_iterations"])
            msg += f", proximal continuation: error {mon.best_err:.3g}"
        measured = None
    if mon.status is Status.MAX_ITER or polished:
        # the best iterate of a solve that ends without reaching tol: polished, kept when its error (the problem's
        # measure) is lower than the best iterate's and the polish's earlier points'
        last = (_active_set_polish(sys, mon.best_x["r"], mon.best_err, mon.tol)
                if mon.status is Status.MAX_ITER and mon.best_err not in tried else None)
        x, e = min(polished + ([last] if last else []), key=lambda c: c[1], default=(None, mon.best_err))
        if e < mon.best_err:
            info.update(polished=True)
            head = msg if isinstance(msg, str) else msg[0] % msg[1]
            return mon.solution(f"{head}; active-set polish: error {e:.3g}", info, {"r": x})
    if sys.small and mon.best_x is not None:
        # the compiled loop: the best iterate with u = Wr + q as problem.u computes it (the same
        # product of the same arrays) and its error by the measure's one compiled home (the number
        # problem.error gives), which solve() does not recompute; the
        # kernel computed them when it stopped on its own
        if measured is not None:
            return mon.solution(msg, info, {"r": mon.best_x["r"].copy(), "u": measured[0]}, None, measured[1])
        rb = mon.best_x["r"].copy()
        u = affine(problem.W, rb, problem.q)
        return mon.solution(msg, info, {"r": rb, "u": u}, None, sys.error(rb, u))
    return mon.solution(msg, info)


# ============================================================================ global problems


class _GlobalFrictionSystem:
    """Newton on the global system (v, r): F = (M v - H r - q, phi(r, H^T v + b))."""

    def __init__(self, problem, formulation, rho):
        self.p = problem
        self.dim, self.nc, self.m, self.ndof = problem.dim, problem.nc, problem.size, problem.ndof
        self.M = sp.csr_matrix(problem.M)
        self.H = sp.csr_matrix(problem.H)
        self.Ht = self.H.T.tocsr()
        self.mu = np.ascontiguousarray(problem.mu, float)
        self.formulation = formulation
        # rho from the diagonal blocks of H^T diag(M)^-1 H (exact when M is diagonal)
        dM = self.M.diagonal()
        dM = np.where(np.abs(dM) > 0, np.abs(dM), 1.0)
        Wapprox = (self.Ht @ sp.diags(1.0 / dM) @ self.H).tocsr()
        blocks = diag_blocks(Wapprox, self.nc, self.dim)
        self.rhoN, self.rhoT, rp = _rho_from_blocks(blocks, rho, self.mu)
        self.wscale = float(np.mean(1.0 / rp)) if self.nc else 1.0
        self.A = np.zeros((self.nc, self.dim, self.dim))
        self.B = np.zeros((self.nc, self.dim, self.dim))
        self.phi = np.zeros(self.m)
        bi = np.arange(self.nc, dtype=np.int32)
        self._bsr = (bi, np.arange(self.nc + 1, dtype=np.int32))
        self.reset(problem)

    def reset(self, problem):
        """Start a solve of ``problem`` (same M, H, mu): its q and b."""
        self.p = problem
        self.q = np.asarray(problem.q, float)
        self.b = np.asarray(problem.b, float)
        return self

    def merit_phi(self, r, u, out):
        if self.formulation == "ac":
            return K.ac_phi(r, u, self.mu, self.rhoN, self.rhoT, self.dim, out)
        return K.fb_phi(r, u, self.mu, self.dim, out)

    def jac(self, r, u):
        if self.formulation == "ac":
            return K.ac_jac(r, u, self.mu, self.rhoN, self.rhoT, self.dim, self.phi, self.A, self.B)
        return K.fb_jac(r, u, self.mu, self.dim, self.phi, self.A, self.B)

    def direction(self, F, reg=0.0):
        m = self.m
        ind, ptr = self._bsr
        A = self.A + reg * self.B if reg else self.A
        Ab = sp.bsr_matrix((A, ind, ptr), shape=(m, m)).tocsr()
        Bb = sp.bsr_matrix((self.B, ind, ptr), shape=(m, m)).tocsr()
        J = sp.bmat([[self.M, -self.H], [Bb @ self.Ht, Ab]], format="csc")
        return newton_direction(J, -F, (0.0, 1e-10, 1e-6), permc="MMD_AT_PLUS_A", pivot=0.01)


class _GlobalNewton:
    r"""A :class:`_GlobalFrictionSystem` as :func:`~nsopt.solvers.newton_loop.newton_loop` reads it: x = (r, v),
    merit :math:`\tfrac12\|\phi\|^2 + \tfrac12\|Mv - Hr - q\|^2`; a failed line search takes a
    projected step on the condensed problem, then v from r."""

    polish = None

    def __init__(self, g, problem):
        self.g, self.p = g, problem
        self.wscale = g.wscale
        self.phi_t = np.empty(g.m)

    def error(self, x):
        return self.p.error(*x)

    def variables(self, x):
        return {"r": x[0], "v": x[1]}

    def linearise(self, x):
        g, (r, v) = self.g, x
        self.u = g.Ht @ v + g.b
        self.res1 = g.M @ v - g.H @ r - g.q
        return g.jac(r, self.u) + 0.5 * float(self.res1 @ self.res1)

    def direction(self, x, shift):
        return self.g.direction(np.concatenate([self.res1, self.g.phi]), shift or 0.0)

    def search(self, x, d, f0, fref, line_search, regularised):
        if line_search == "none":
            return True, 1.0, f0
        g, r = self.g, x[0]
        dv, dr = d[:g.ndof], d[g.ndof:]
        du = g.Ht @ dv
        Mdv, Hdr = g.M @ dv, g.H @ dr
        t = 1.0
        while t >= 1e-10:
            rt = self.res1 + t * (Mdv - Hdr)
            ft = g.merit_phi(r + t * dr, self.u + t * du, self.phi_t) + 0.5 * float(rt @ rt)
            if np.isfinite(ft) and ft <= fref - 1e-4 * t * 2.0 * f0:
                return True, t, ft
            t *= 0.5
        return False, 0.0, f0

    def move(self, x, t, d):
        ndof = self.g.ndof
        return x[0] + t * d[ndof:], x[1] + t * d[:ndof]

    def fallback(self, x):
        g = self.g
        r = project_coulomb((x[0] - g.rhoN.repeat(g.dim) * g.phi).reshape(-1, g.dim), g.mu).reshape(-1)
        return r, self.p.v(r)


def _global_solve(problem, mon, formulation, *, rho, line_search, reg=0.0):
    _check_line_search(line_search)
    mon.budget(DEFAULT_MAX_ITER)
    key = f"newton_global:{formulation}:{rho!r}"
    g = mon.state(problem, key, _GlobalFrictionSystem, ("M", "H", "mu"), (formulation, rho)).reset(problem)
    mon.built()
    r = mon.start_vector("r", problem.size)
    v = mon.start_vector("v", problem.ndof) if (mon.x0 or {}).get("v") is not None else problem.v(r)
    # every step regularised when reg > 0 (the global matrix is nonsingular when M is); no stall test
    _, _, info = newton_loop(_GlobalNewton(g, problem), (r, v), mon, line_search=line_search, reg=reg,
                             plain="never", adapt=False)
    msg = f"{formulation.upper()} Newton (global): error {mon.best_err:.3g} after {mon.k} iterations"
    # v from r exactly (e1 = 0 up to rounding) when that is not worse
    x = mon._best()
    rb = x["r"]
    v2 = problem.v(rb)
    e2 = problem.error(rb, v2)
    status = None
    if e2 <= mon.best_err:
        x = {"r": rb, "v": v2}
        if e2 <= mon.tol:
            status = Status.SOLVED
    return mon.solution(message=msg, info={"fallback_steps": info["fallback_steps"]}, x=x, status=status)


# ============================================================================ registered methods


@register(("fc2d", "fc3d"), "nsn-ac", "semismooth Newton on the Alart-Curnier function, sparse LU, line search",
          check=_local_checked)
def nsn_ac(problem, mon, *, rho="auto", line_search="nonmonotone", reg=1.0, hybrid=True, reg_step=REG_STEP,
           dense_max=DENSE_MAX):
    """Alart–Curnier semismooth Newton, from the warm start ``r`` (default 0).

    Options
    -------
    rho : "auto" (per contact: rho_N = 1/W_aa[N,N], rho_T = 1/lambda_max(W_aa[T,T])), a positive
        scalar, or a pair (rho_N, rho_T).
    line_search : "nonmonotone" (Armijo against the max of the last 5 merits; from 2000 contacts, of the
        last 20, at most 1000x the current merit),
        "armijo", "none".
    reg : regularisation of the Newton matrix, A + B (W + sigma_k I) with
        sigma_k = c_k x mean_a lambda_max(W_aa) x min(error_k, 1) (Levenberg–Marquardt-like: it vanishes
        as the error does, so the local convergence is kept; the residual is never changed); c_k starts
        at reg and is halved after a full regularised step, doubled after one cut below 1/4, within
        [reg/10, 10 reg] (the compiled loop of W up to 24 unknowns keeps c_k = reg).
        Default 1 for AC (W is often singular: more contact unknowns than degrees of freedom), 0 for FB.
    hybrid : when the Newton iterates stall (the best error not halved over 30 iterations, 100
        for a dense W of at most 24 unknowns, or 5 steps in a row cut below 2^-10 by the line search),
        continue with proximal-point iterations (``prox``: W + sigma I, inner AC Newton) from
        the best iterate (after a Newton from zero when the iterates from a warm start stalled), each
        stall first trying the active-set polish (which also polishes the best iterate at max_iter);
        False: plain Newton until max_iter (then the polish).
    reg_step : a plain Newton step that the line search cuts below this (default 0.1) is retried
        with the regularised matrix (when ``reg`` > 0).
    dense_max : a dense W with at most this many unknowns (default 240) uses dense LAPACK solves;
        larger or sparse W, the sparse LU on the fixed pattern.
    max_iter : Newton iterations (default 1000), proximal outer iterations counting as one each.

    {solve_contract}
    >>> p = nsopt.FrictionContact(3, [[1.0, 0.1, 0.0], [0.1, 1.2, 0.0], [0.0, 0.0, 1.2]], [-1.0, -2.0, 0.5], [0.3])
    >>> s = nsopt.solve(p, method="nsn-ac", tol=1e-10)
    >>> print(s.status.value, s.r.round(6))
    solved [ 0.971803  0.281969 -0.074092]
    """
    return _local_solve(problem, mon, "ac", rho, line_search, hybrid, reg, 1.0, dense_max, reg_step)


@register(("fc2d", "fc3d"), "nsn-fb", "semismooth Newton on the Fischer-Burmeister SOC function (De Saxce)",
          check=_local_checked)
def nsn_fb(problem, mon, *, line_search="nonmonotone", reg=0.0, fb_scale=1.0, hybrid=True, reg_step=REG_STEP,
           dense_max=DENSE_MAX):
    """Fischer–Burmeister semismooth Newton (SOC Jordan algebra, De Saxcé's modified velocity).

    Options as ``nsn-ac`` (no rho; ``reg`` defaults to 0; ``hybrid``: after 100 iterations without
    halving the error, or 5 steps in a row cut below 2^-10), and ``fb_scale``: the FB function is taken
    on (r, fb_scale x u) (same zeros): a positive number (default 1) or "auto" (1 / the mean of
    lambda_max(W_aa)), which helps when W is far from unit scale (e.g. LMGC_100_PR_PerioBox, W ~ 1e-5).
    (nsopt 0.1 called it ``scale``, accepted until the next release with a DeprecationWarning.)

    {solve_contract}
    >>> p = nsopt.FrictionContact(3, [[1.0, 0.1, 0.0], [0.1, 1.2, 0.0], [0.0, 0.0, 1.2]], [-1.0, -2.0, 0.5], [0.3])
    >>> s = nsopt.solve(p, method="nsn-fb", tol=1e-10)
    >>> print(s.status.value, s.r.round(6))
    solved [ 0.971803  0.281969 -0.074092]
    """
    return _local_solve(problem, mon, "fb", 1.0, line_search, hybrid, reg, fb_scale, dense_max, reg_step)


@register(("gfc2d", "gfc3d"), "nsn-ac", "Alart-Curnier semismooth Newton on the global sparse system (v, r)")
def gnsn_ac(problem, mon, *, rho="auto", line_search="nonmonotone", reg=0.0):
    """Alart–Curnier Newton on the global system (M v = q + H r, u = H^T v + b); options as fc3d
    (warm start ``r`` and ``v``, default v = M^-1 (q + H r); ``reg`` defaults to 0 here, the
    global matrix being nonsingular when M is; no proximal continuation).

    {solve_contract}
    >>> p = nsopt.GlobalFrictionContact(np.eye(3), np.eye(3), np.zeros(3), [-1.0, 1.0, 0.0], [0.5])
    >>> s = nsopt.solve(p, method="nsn-ac", tol=1e-10)
    >>> print(s.status.value, s.v.round(6))
    solved [ 1.  -0.5  0. ]
    """
    return _global_solve(problem, mon, "ac", rho=rho, line_search=line_search, reg=_check_reg(reg))


@register("gfc3d", "nsn-fb", "Fischer-Burmeister semismooth Newton on the global sparse system (v, r)")
def gnsn_fb(problem, mon, *, line_search="nonmonotone", reg=0.0):
    """Fischer–Burmeister Newton on the global system.

    {solve_contract}
    >>> p = nsopt.GlobalFrictionContact(np.eye(3), np.eye(3), np.zeros(3), [-1.0, 1.0, 0.0], [0.5])
    >>> s = nsopt.solve(p, method="nsn-fb", tol=1e-10)
    >>> print(s.status.value, s.v.round(6))
    solved [ 1.  -0.5  0. ]
    """
    return _global_solve(problem, mon, "fb", rho=1.0, line_search=line_search, reg=_check_reg(reg))


def _prox_loop(sys, r, mon, *, sigma, local_max_iter, line_search, shrink=3.0, grow=10.0, fast=8, guarded=False):
    """Proximal point iterations on a _LocalFrictionSystem, one contract iteration each (the caller has
    started ``mon``). ``sigma`` is divided by ``shrink`` after an inner solve of at most ``fast``
    Newton steps and multiplied by ``grow`` after one that neither converged nor decreased the
    error. ``guarded`` (the continuation of the AC Newton): an inner Newton gives up when it stalls
    (PROX_INNER_STALL, CREEP_N), sigma is multiplied by ``grow`` after any inner solve that did not
    converge and does not shrink back below ``shrink`` x such a sigma (a floor divided by ``shrink``
    after each fast inner solve that did not halve the error). ``sys.sigma`` / ``sys.rc`` are set
    here and reset after. Returns an info dict."""
    dW = 1.0 / sys.rho_pgs
    sig = float(sigma) if sigma is not None else 1e-2 * float(np.mean(dW))
    if not (np.isfinite(sig) and sig > 0):
        raise OptionError(f"sigma must be a positive number, got {sigma!r}")
    sys.sigma = 0.0
    err = sys.error(r, sys.u(r))
    inner_total = 0
    floor = 0.0
    try:
        while not mon.stopped:
            sys.sigma, sys.rc = sig, r.copy()
            itol = max(min(0.1 * err, 1e-2), 0.1 * mon.tol)
            inner = Monitor(tol=itol, max_iter=local_max_iter, time_limit=mon.time_left())
            rn, _, _ = _newton_local(sys, r.copy(), inner, line_search=line_search, err_fn=sys.error,
                                     stall=PROX_INNER_STALL if guarded else None)
            if inner.status is not Status.SOLVED:
                rn = rn            # inner solves: the merit decreased, move on from the last iterate
            else:
                rn = inner.best_x["r"]
            sys.sigma = 0.0
            inner_total += inner.k
            e_new = sys.error(rn, sys.u(rn))
            ok = inner.status is Status.SOLVED
            e_old = err
            moved = ok or e_new < err
            if moved:
                r, err = rn, e_new
            if guarded and not ok:
                # sigma too small for the inner Newton (W + sigma I still nearly singular): grow it, and never
                # shrink it back below shrink x this sigma in this solve (on a 1000-cube pile the inner solves
                # converge in 1-5 steps above such a floor and fail below it, 30 steps each without the guard)
                floor = shrink * sig
                sig *= grow
            elif moved:
                if inner.k <= fast:
                    if e_new > 0.5 * e_old:
                        floor /= shrink     # fast inner solves but slow outer progress: sigma may go lower
                    sig = max(sig / shrink, 1e-14 * float(np.mean(dW)), floor)
            else:
                sig *= grow
            mon.step({"r": r}, err)
    finally:
        sys.sigma, sys.rc = 0.0, None
    return {"newton_iterations": inner_total, "sigma": sig}


@register("fc3d", "prox", "proximal point outer loop (W + sigma I) with an inner Alart-Curnier Newton")
def prox(problem, mon, *, rho="auto", sigma=None, inner="ac", local_max_iter=30, line_search="nonmonotone",
         shrink=3.0, grow=10.0, dense_max=DENSE_MAX):
    """Proximal point method: r_{k+1} solves the problem with W + sigma I, q - sigma r_k (inner nsn-ac),
    from the warm start ``r`` (default 0).

    Options
    -------
    sigma : initial proximal parameter (default: 1e-2 x the mean of lambda_max(W_aa)).
    shrink, grow : sigma is divided by ``shrink`` (default 3) after an inner solve that converged in
        at most 8 Newton steps, multiplied by ``grow`` (default 10) after one that neither
        converged nor decreased the error.
    inner : the inner Newton, "ac" (Alart–Curnier, default) or "fb" (Fischer–Burmeister).
    local_max_iter : Newton iterations per inner solve (default 30; nsopt 0.1: ``inner_iter``).
    max_iter : outer iterations (default 1000). Other options (``rho``, ``line_search``,
        ``dense_max``) as ``nsn-ac``.

    {solve_contract}
    >>> p = nsopt.FrictionContact(3, [[1.0, 0.1, 0.0], [0.1, 1.2, 0.0], [0.0, 0.0, 1.2]], [-1.0, -2.0, 0.5], [0.3])
    >>> s = nsopt.solve(p, method="prox", tol=1e-10)
    >>> print(s.status.value, s.r.round(6))
    solved [ 0.971803  0.281969 -0.074092]
    """
    _check_line_search(line_search)
    if inner not in ("ac", "fb"):
        raise OptionError(f"inner must be 'ac' or 'fb', got {inner!r}")
    for name, v in (("shrink", shrink), ("grow", grow)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 1.0:
            raise OptionError(f"prox: {name} must be a number > 1, got {v!r}")
    mon.budget(DEFAULT_MAX_ITER)
    sys = _local_system(problem, mon, inner, rho if inner == "ac" else 1.0, dense_max=_check_dense_max(dense_max))
    mon.built()
    r = mon.start_vector("r", problem.size)
    if mon.start({"r": r}, sys.error(r, sys.u(r))):
        return mon.solution()
    info = _prox_loop(sys, r, mon, sigma=sigma, local_max_iter=int(local_max_iter), line_search=line_search,
                      shrink=float(shrink), grow=float(grow))
    return mon.solution(message=f"PROX: error {mon.best_err:.3g} after {mon.k} outer / "
                               f"{info['newton_iterations']} Newton iterations", info=info)
