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
    and cached on the problem) and factorised by SuperLU (minimum-degree ordering of
    :math:`J^\top + J`, diagonal-preferring pivoting); small dense problems use LAPACK. W is often
    singular (more contact unknowns than degrees of freedom) and the plain AC Jacobian with it: a
    plain step that the line search cuts below 0.1 is retried with the regularised matrix
    :math:`A + B(W + \sigma_k I)`, :math:`\sigma_k` proportional to the current error
    (Levenberg–Marquardt-like, option ``reg``; the residual is never changed). Globalised by a non-monotone Armijo line search on :math:`\tfrac12\|\phi\|^2`
    (switching to monotone Armijo and back when progress is slow); when the line search fails,
    projected Gauss–Seidel sweeps (projected fixed-point steps per contact) are taken instead; a
    singular matrix gets a diagonal shift. Hybrid: when the best error has not halved over 100
    iterations, the method continues with proximal-point iterations (below) from its best iterate.
``nsn-fb`` (fc2d, fc3d, gfc3d)
    The same with the Fischer–Burmeister function of the second-order cone (Jordan algebra,
    Fukushima, Luo & Tseng [3]_) on De Saxcé's modified velocity
    :math:`\hat u = u + \mu\|u_T\| e_N`: with :math:`x = (\mu r_N, r_T)`,
    :math:`y = (\hat u_N, \mu \hat u_T)`, :math:`\phi = x + y - (x^2 + y^2)^{1/2}`
    (x, y in the Lorentz cone and orthogonal iff r in :math:`K_\mu`, :math:`\hat u \in K_\mu^*`,
    :math:`r \perp \hat u`); where :math:`x^2 + y^2` is on the cone boundary the Jacobian of a
    slightly smoothed square root is used. Same globalisation and hybrid continuation.
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

import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from ..exceptions import OptionError
from ..problems._base import EPS
from ..problems.cones import natural_map_sq
from ..registry import Outcome, as_x0, register, stop_status
from ..result import Status
from . import _newton_kernels as K

_DENSE_MAX = 240          # dense LAPACK path for W dense and n <= this
_LS = ("armijo", "nonmonotone", "none")
_TREG = 0.1   # a plain Newton step shorter than this is retried with the regularised matrix
_PROX = [3.0, 10.0, 8]     # sigma divided by [0] after an inner solve of <= [2] iterations, times [1] on failure


# ============================================================================ helpers


def _fc_err(r, u, mu, dim, qnorm):
    """Siconos' friction-contact error (as FrictionContact.error) from r and u."""
    e = np.sqrt(natural_map_sq(r, u, mu, dim))
    s = max(qnorm, float(np.linalg.norm(r)), float(np.linalg.norm(u)))
    return float(e / s) if s > EPS else float(e)


def _diag_blocks(W, nc, dim):
    """The diagonal dim x dim blocks of W (dense or sparse) as an (nc, dim, dim) array."""
    n = nc * dim
    if sp.issparse(W):
        Wc = W.tocsr()
        D = np.zeros((nc, dim, dim))
        for l in range(dim):
            for m in range(dim):
                D[:, l, m] = np.asarray(Wc[np.arange(l, n, dim), np.arange(m, n, dim)]).reshape(-1)
        return D
    Wd = np.asarray(W)
    idx = np.arange(n).reshape(nc, dim)
    return Wd[idx[:, :, None], idx[:, None, :]]


def _rho_from_blocks(Wd, rho, mu):
    """(rho_N, rho_T, rho_pgs) per contact. ``rho`` scalar, a pair, or "auto" (split spectral norm)."""
    nc, dim = Wd.shape[0], Wd.shape[1]
    S = 0.5 * (Wd + np.transpose(Wd, (0, 2, 1)))
    lmax = np.linalg.eigvalsh(S)[:, -1] if nc else np.zeros(0)
    good = lmax > 0
    fill = float(np.median(lmax[good])) if np.any(good) else 1.0
    lmax = np.where(good, lmax, fill)
    rho_pgs = 1.0 / lmax
    if isinstance(rho, str):
        if rho != "auto":
            raise OptionError(f"rho must be a positive number, a pair, or 'auto', got {rho!r}")
        wN = Wd[:, 0, 0]
        wN = np.where(wN > 0, wN, lmax)
        if dim > 1:
            lT = np.linalg.eigvalsh(S[:, 1:, 1:])[:, -1]
            lT = np.where(lT > 0, lT, lmax)
        else:
            lT = lmax
        return 1.0 / wN, 1.0 / lT, rho_pgs
    vals = np.atleast_1d(np.asarray(rho, dtype=float))
    if vals.size not in (1, 2) or not np.all(np.isfinite(vals)) or np.any(vals <= 0):
        raise OptionError(f"rho must be a positive number, a pair (rho_N, rho_T), or 'auto', got {rho!r}")
    rN = np.full(nc, vals[0])
    rT = np.full(nc, vals[-1])
    return rN, rT, rho_pgs


def _check_reg(reg):
    if isinstance(reg, bool) or not isinstance(reg, (int, float)) or not np.isfinite(reg) or reg < 0:
        raise OptionError(f"reg must be a non-negative number, got {reg!r}")
    return float(reg)


def _check_scale(scale):
    if scale == "auto":
        return scale
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not np.isfinite(scale) or scale <= 0:
        raise OptionError(f"scale must be a positive number or 'auto', got {scale!r}")
    return float(scale)


def _check_common(line_search, max_iter, default):
    if line_search not in _LS:
        raise OptionError(f"line_search must be one of {_LS}, got {line_search!r}")
    return default if max_iter is None else int(max_iter)


class _Pattern:
    """Fixed CSR pattern of J = A + B W (W's block rows plus the diagonal blocks) and LU reuse."""

    def __init__(self, W, nc, dim):
        n = nc * dim
        W = sp.csr_matrix(W)
        W.sum_duplicates()
        W.sort_indices()
        self.W = W
        self.Wdata = np.ascontiguousarray(W.data, dtype=float)
        self.Windices = W.indices.astype(np.int64)
        self.Windptr = W.indptr.astype(np.int64)
        # union of the columns of the dim rows of each contact, plus the diagonal block
        cols_per = []
        wpos = np.empty(W.nnz, dtype=np.int64)
        dpos = np.empty(n, dtype=np.int64)
        indptr = [0]
        indices = []
        for a in range(nc):
            lo, hi = W.indptr[a * dim], W.indptr[a * dim + dim]
            c = np.union1d(W.indices[lo:hi], np.arange(a * dim, a * dim + dim))
            cols_per.append(c)
            for m in range(dim):
                p0, p1 = W.indptr[a * dim + m], W.indptr[a * dim + m + 1]
                wpos[p0:p1] = np.searchsorted(c, W.indices[p0:p1])
            dpos[a * dim:(a + 1) * dim] = np.searchsorted(c, np.arange(a * dim, a * dim + dim))
            for _ in range(dim):
                indices.append(c)
                indptr.append(indptr[-1] + c.size)
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.indices = np.concatenate(indices).astype(np.int32) if indices else np.zeros(0, np.int32)
        self.wpos, self.dpos = wpos, dpos
        self.diag_idx = np.array([self.indptr[i] + dpos[i] for i in range(n)], dtype=np.int64)
        self.data = np.zeros(self.indices.size)
        self.n = n
        self.indptr32 = self.indptr.astype(np.int32)
        self.permc, self.thresh = "MMD_AT_PLUS_A", 0.01

    def factor(self, shift=0.0):
        """LU of J (stored as the CSC matrix J^T); returns a solve(b) callable or None if singular.

        SuperLU with the minimum-degree ordering of J^T + J (the pattern is structurally symmetric
        when W is) and a diagonal-preferring pivot threshold: about half the fill of COLAMD with
        partial pivoting on the contact problems of the corpus.
        """
        n = self.n
        data = self.data
        if shift:
            data = data.copy()
            data[self.diag_idx] += shift
        Jt = sp.csc_matrix((data, self.indices, self.indptr32), shape=(n, n))
        try:
            lu = splu(Jt, permc_spec=self.permc, diag_pivot_thresh=self.thresh)
        except RuntimeError:
            return None
        return lambda b: lu.solve(b, trans="T")


class _Local:
    """One local friction-contact system u = W r + q + sigma (r - rc) and its Newton machinery."""

    def __init__(self, problem, formulation, rho, fb_scale=1.0):
        self.dim, self.nc = problem.dim, problem.nc
        self.n = problem.size
        self.mu = np.ascontiguousarray(problem.mu, dtype=float)
        self.q = np.ascontiguousarray(problem.q, dtype=float)
        self.qnorm = float(np.linalg.norm(self.q))
        W = problem.W
        self.dense = (not sp.issparse(W)) and self.n <= _DENSE_MAX
        if self.dense:
            self.Wd = np.ascontiguousarray(W, dtype=float)
            self.pat = None
            Wcsr = sp.csr_matrix(self.Wd)
        else:
            self.pat = problem.cached("newton_pattern", lambda: _Pattern(W, self.nc, self.dim))
            Wcsr = self.pat.W
        self.Wcsr = Wcsr
        self.csr = (np.ascontiguousarray(Wcsr.data, dtype=float), Wcsr.indices.astype(np.int64),
                    Wcsr.indptr.astype(np.int64))
        blocks = problem.cached("newton_diag_blocks", lambda: _diag_blocks(W, self.nc, self.dim))
        self.rhoN, self.rhoT, self.rho_pgs = _rho_from_blocks(blocks, rho, self.mu)
        self.formulation = formulation
        # FB: phi(r, gamma u), gamma > 0 (same zeros); "auto": gamma = 1 / mean lambda_max(W_aa)
        g = float(np.mean(self.rho_pgs)) if fb_scale == "auto" else float(fb_scale)
        self.gamma_c = np.full(self.nc, g)
        self.gamma = np.repeat(self.gamma_c, self.dim)
        self.A = np.zeros((self.nc, self.dim, self.dim))
        self.B = np.zeros((self.nc, self.dim, self.dim))
        self.phi = np.zeros(self.n)
        self.sigma, self.rc = 0.0, None
        self.reg = 0.0            # Levenberg-Marquardt-like shift of the Newton matrix only: A + B (W + reg I)
        self.wscale = float(np.mean(1.0 / self.rho_pgs)) if self.nc else 1.0

    def matvec(self, x):
        return self.Wd @ x if self.dense else self.Wcsr @ x

    def u(self, r):
        u = self.matvec(r) + self.q
        if self.sigma:
            u += self.sigma * (r - self.rc)
        return u

    def merit(self, r, u, out):
        if self.formulation == "ac":
            return K.ac_phi(r, u, self.mu, self.rhoN, self.rhoT, self.dim, out)
        return K.fb_phi(r, self.gamma * u, self.mu, self.dim, out)

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
        if self.dense:
            nc, dim = self.nc, self.dim
            J = np.einsum("alm,amj->alj", self.B, self.Wd.reshape(nc, dim, self.n)).reshape(self.n, self.n)
            idx = np.arange(self.n).reshape(nc, dim)
            J[idx[:, :, None], idx[:, None, :]] += A
            for s in shifts:
                try:
                    Js = J + s * np.eye(self.n) if s else J
                    d = np.linalg.solve(Js, -self.phi)
                    if np.all(np.isfinite(d)):
                        return d
                except np.linalg.LinAlgError:
                    pass
            return None
        pat = self.pat
        K.assemble_csr(pat.Wdata, pat.Windptr, self.dim, A, self.B, pat.wpos, pat.dpos, pat.indptr, pat.data)
        for s in shifts:
            solve = pat.factor(s)
            if solve is not None:
                d = solve(-self.phi)
                if np.all(np.isfinite(d)):
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
        K.pgs_sweeps(data, ind, ptr, q, self.mu, self.dim, rho, r, nsweeps, inner)


def _search(sys, r, u, d, f0, fref, line_search, phi_t):
    """Backtracking (Armijo against fref) on the merit along d: (accepted, t, merit at t)."""
    Wd = sys.matvec(d)
    if sys.sigma:
        Wd += sys.sigma * d
    if line_search == "none":
        return True, 1.0, f0
    t = 1.0
    while t >= 1e-10:
        ft = sys.merit(r + t * d, u + t * Wd, phi_t)
        if np.isfinite(ft) and ft <= fref - 1e-4 * t * 2.0 * f0:
            return True, t, ft
        t *= 0.5
    return False, 0.0, f0


def _newton_local(sys, r, *, tol, max_iter, line_search, err_fn, history, callback,
                  deadline=None, memory=5, stall=None, switch=20, keep="best", reg=0.0):
    """Globalised semismooth Newton on a _Local system. Returns (best_r, status, nit, hist, info)."""
    n = sys.n
    u = sys.u(r)
    hist = [] if history else None
    best_r, best_err = r.copy(), np.inf
    merits = []
    phi_t = np.empty(n)
    n_fallback = n_reg = n_switch = n_lm = 0
    status = Status.MAX_ITER
    nit = 0
    since_best = 0
    bests = []
    for k in range(max_iter + 1):
        err = err_fn(r, u)
        if hist is not None:
            hist.append(err)
        if err < best_err:
            best_err, best_r = err, r.copy()
        bests.append(best_err)
        # stalled: the best error has not halved over the last `stall` iterations
        since_best = stall if (stall is not None and len(bests) > stall and best_err > 0.5 * bests[-1 - stall]) else 0
        stop = stop_status(k, {"r": r.copy()} if callback else None, err, tol=tol, max_iter=max_iter,
                           callback=callback, deadline=deadline)
        if stop is not None:
            status = stop
            break
        if stall is not None and since_best >= stall:
            status = Status.STALLED
            break
        if switch and k and k % switch == 0 and len(bests) > switch and best_err > 0.5 * bests[-1 - switch] \
                and line_search != "none":
            # slow progress: alternate monotone / non-monotone acceptance, restart the memory
            line_search = "armijo" if line_search == "nonmonotone" else "nonmonotone"
            merits.clear()
            n_switch += 1
        nit = k + 1
        f0 = sys.jac(r, u)
        merits.append(f0)
        fref = max(merits[-memory:]) if line_search == "nonmonotone" else f0

        # with reg, a singular plain matrix goes straight to the regularised one (no tiny shifts)
        d = sys.direction((0.0,) if reg else (0.0, 1e-10, 1e-6))
        accepted, t, ft = False, 0.0, f0
        if d is not None:
            accepted, t, ft = _search(sys, r, u, d, f0, fref, line_search, phi_t)
        else:
            n_reg += 1
        if reg and (not accepted or t < _TREG):
            # poor plain step (W singular or nearly): retry with the regularised matrix
            # A + B (W + sigma_k I), sigma_k = reg x scale x min(err, 1), keep the better step
            sys.reg = reg * sys.wscale * min(err, 1.0)
            d2 = sys.direction()
            sys.reg = 0.0
            if d2 is not None:
                a2, t2, f2 = _search(sys, r, u, d2, f0, fref, line_search, phi_t)
                if a2 and (not accepted or f2 < ft):
                    accepted, t, ft, d = True, t2, f2, d2
                    n_lm += 1
        if accepted:
            r = r + t * d
        if not accepted:
            n_fallback += 1
            merits.clear()
            sys.pgs(r, nsweeps=3)
        u = sys.u(r)
    info = {"fallback_steps": n_fallback, "singular": n_reg, "line_search_switches": n_switch,
            "regularised_steps": n_lm}
    if keep == "last" and status is not Status.SOLVED:   # inner solves: the merit decreased, move on
        return r, err, status, nit, hist, info
    return best_r, best_err, status, nit, hist, info


def _local_solve(problem, formulation, *, tol, max_iter, history, callback, r0, rho, line_search,
                 time_limit, hybrid=True, stall=100, default_iter=1000, reg=0.0, scale=1.0):
    max_iter = _check_common(line_search, max_iter, default_iter)
    r = as_x0(r0, problem.size, "r0")
    if problem.size == 0:
        return Outcome(x={"r": r}, status=Status.SOLVED, nit=0, history=[0.0] if history else None)
    sys = _Local(problem, formulation, rho, scale)
    deadline = None if time_limit is None else time.perf_counter() + float(time_limit)

    def err_fn(r, u):
        return _fc_err(r, u, sys.mu, sys.dim, sys.qnorm)

    best_r, best_err, status, nit, hist, info = _newton_local(
        sys, r, tol=tol, max_iter=max_iter, line_search=line_search, err_fn=err_fn, history=history,
        callback=callback, deadline=deadline, stall=stall if hybrid else None, reg=reg)
    msg = f"{formulation.upper()} Newton: error {best_err:.3g} after {nit} iterations"
    if status is Status.STALLED and nit < max_iter:
        # hybrid: the plain Newton stalled -> proximal regularisation from the best iterate
        out = _prox_loop(sys, best_r, tol=tol, max_iter=max(1, max_iter - nit), sigma=None, inner_iter=30,
                         line_search=line_search, history=history, callback=callback, deadline=deadline)
        if out.history is not None and hist is not None:
            hist = hist + out.history
        info.update(prox_outer=out.nit, prox_newton=out.info["newton_iterations"])
        nit += out.info["newton_iterations"]
        if out.info["best_error"] <= best_err:
            best_r, best_err, status = out.x["r"], out.info["best_error"], out.status
        msg += f"; stalled, proximal continuation: error {best_err:.3g}"
    return Outcome(x={"r": best_r}, status=status, nit=nit, history=hist, message=msg, info=info)


# ============================================================================ global problems


class _Global:
    """Newton on the global system (v, r): F = (M v - H r - q, phi(r, H^T v + b))."""

    def __init__(self, problem, formulation, rho):
        self.p = problem
        self.dim, self.nc, self.m, self.ndof = problem.dim, problem.nc, problem.size, problem.ndof
        self.M = sp.csr_matrix(problem.M)
        self.H = sp.csr_matrix(problem.H)
        self.Ht = self.H.T.tocsr()
        self.q = np.asarray(problem.q, float)
        self.b = np.asarray(problem.b, float)
        self.mu = np.ascontiguousarray(problem.mu, float)
        self.formulation = formulation
        # rho from the diagonal blocks of H^T diag(M)^-1 H (exact when M is diagonal)
        dM = self.M.diagonal()
        dM = np.where(np.abs(dM) > 0, np.abs(dM), 1.0)
        Wapprox = (self.Ht @ sp.diags(1.0 / dM) @ self.H).tocsr()
        blocks = _diag_blocks(Wapprox, self.nc, self.dim)
        self.rhoN, self.rhoT, rp = _rho_from_blocks(blocks, rho, self.mu)
        self.wscale = float(np.mean(1.0 / rp)) if self.nc else 1.0
        self.A = np.zeros((self.nc, self.dim, self.dim))
        self.B = np.zeros((self.nc, self.dim, self.dim))
        self.phi = np.zeros(self.m)
        bi = np.arange(self.nc, dtype=np.int32)
        self._bsr = (bi, np.arange(self.nc + 1, dtype=np.int32))

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
        N = J.shape[0]
        for s in (0.0, 1e-10, 1e-6):
            Js = J + s * sp.identity(N, format="csc") if s else J
            try:
                lu = splu(Js, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.01)
            except RuntimeError:
                continue
            d = lu.solve(-F)
            if np.all(np.isfinite(d)):
                return d
        return None


def _global_solve(problem, formulation, *, tol, max_iter, history, callback, r0, v0, rho,
                  line_search, time_limit, reg=0.0, default_iter=1000):
    max_iter = _check_common(line_search, max_iter, default_iter)
    r = as_x0(r0, problem.size, "r0")
    if problem.size == 0:
        v = problem.factor_M().solve(np.asarray(problem.q, float))
        return Outcome(x={"r": r, "v": v}, status=Status.SOLVED, history=[0.0] if history else None)
    g = _Global(problem, formulation, rho)
    v = as_x0(v0, problem.ndof, "v0") if v0 is not None else problem.v(r)
    deadline = None if time_limit is None else time.perf_counter() + float(time_limit)
    hist = [] if history else None
    best = (np.inf, r.copy(), v.copy())
    merits = []
    status, nit, n_fb = Status.MAX_ITER, 0, 0
    memory = 5
    phi_t = np.empty(g.m)
    for k in range(max_iter + 1):
        u = g.Ht @ v + g.b
        err = problem.error(r, v)
        if hist is not None:
            hist.append(err)
        if err < best[0]:
            best = (err, r.copy(), v.copy())
        stop = stop_status(k, {"r": r.copy(), "v": v.copy()} if callback else None, err, tol=tol, max_iter=max_iter,
                           callback=callback, deadline=deadline)
        if stop is not None:
            status = stop
            break
        nit = k + 1
        res1 = g.M @ v - g.H @ r - g.q
        f0 = g.jac(r, u) + 0.5 * float(res1 @ res1)
        merits.append(f0)
        d = g.direction(np.concatenate([res1, g.phi]), reg * g.wscale * min(err, 1.0) if reg else 0.0)
        accepted = False
        if d is not None:
            dv, dr = d[:g.ndof], d[g.ndof:]
            du = g.Ht @ dv
            Mdv, Hdr = g.M @ dv, g.H @ dr
            fref = max(merits[-memory:]) if line_search == "nonmonotone" else f0
            t = 1.0
            while t >= 1e-10:
                if line_search == "none":
                    accepted = True
                    break
                rt = res1 + t * (Mdv - Hdr)
                ft = g.merit_phi(r + t * dr, u + t * du, phi_t) + 0.5 * float(rt @ rt)
                if np.isfinite(ft) and ft <= fref - 1e-4 * t * 2.0 * f0:
                    accepted = True
                    break
                t *= 0.5
            if accepted:
                r, v = r + t * dr, v + t * dv
        if not accepted:
            # fallback: a projected step on the condensed problem, then v from r
            n_fb += 1
            merits.clear()
            x = (r - g.rhoN.repeat(g.dim) * g.phi)
            from ..problems.cones import project_coulomb
            r = project_coulomb(x.reshape(-1, g.dim), g.mu).reshape(-1)
            v = problem.v(r)
    err, r, v = best
    # v from r exactly (e1 = 0 up to rounding) when that is not worse
    v2 = problem.v(r)
    e2 = problem.error(r, v2)
    if e2 <= err:
        v, err = v2, e2
    if err <= tol:
        status = Status.SOLVED
    msg = f"{formulation.upper()} Newton (global): error {err:.3g} after {nit} iterations"
    return Outcome(x={"r": r, "v": v}, status=status, nit=nit, history=hist, message=msg,
                   info={"fallback_steps": n_fb})


# ============================================================================ registered methods


@register(("fc2d", "fc3d"), "nsn-ac", "semismooth Newton on the Alart-Curnier function, sparse LU, line search")
def nsn_ac(problem, *, tol, max_iter, history=False, callback=None, r0=None, rho="auto",
           line_search="nonmonotone", reg=1.0, hybrid=True, time_limit=None):
    """Alart–Curnier semismooth Newton.

    Options
    -------
    r0 : initial reaction (warm start), default 0.
    rho : "auto" (per contact: rho_N = 1/W_aa[N,N], rho_T = 1/lambda_max(W_aa[T,T])), a positive
        scalar, or a pair (rho_N, rho_T).
    line_search : "nonmonotone" (Armijo against the max of the last 5 merits), "armijo", "none".
    reg : regularisation of the Newton matrix, A + B (W + sigma_k I) with
        sigma_k = reg x mean_a lambda_max(W_aa) x min(error_k, 1) (Levenberg–Marquardt-like: it vanishes
        as the error does, so the local convergence is kept; the residual is never changed).
        Default 1 for AC (W is often singular: more contact unknowns than degrees of freedom), 0 for FB.
    hybrid : when the Newton iterates stall (40 iterations without a 0.1 % decrease of the best
        error), continue with proximal-point iterations (``prox``: W + sigma I, inner AC Newton) from
        the best iterate; False: plain Newton until max_iter.
    max_iter : Newton iterations (default 1000).
    time_limit : wall-clock budget in seconds (None: none); status TIME_LIMIT when hit.
    """
    return _local_solve(problem, "ac", tol=tol, max_iter=max_iter, history=history, callback=callback,
                        r0=r0, rho=rho, line_search=line_search, time_limit=time_limit, hybrid=hybrid,
                        reg=_check_reg(reg))


@register(("fc2d", "fc3d"), "nsn-fb", "semismooth Newton on the Fischer-Burmeister SOC function (De Saxce)")
def nsn_fb(problem, *, tol, max_iter, history=False, callback=None, r0=None, line_search="nonmonotone",
           reg=0.0, scale=1.0, hybrid=True, time_limit=None):
    """Fischer–Burmeister semismooth Newton (SOC Jordan algebra, De Saxcé's modified velocity).

    Options as ``nsn-ac`` (no rho; ``reg`` defaults to 0), and ``scale``: the FB function is taken
    on (r, scale x u) (same zeros): a positive number (default 1) or "auto" (1 / the mean of
    lambda_max(W_aa)), which helps when W is far from unit scale (e.g. LMGC_100_PR_PerioBox, W ~ 1e-5).
    """
    return _local_solve(problem, "fb", tol=tol, max_iter=max_iter, history=history, callback=callback,
                        r0=r0, rho=1.0, line_search=line_search, time_limit=time_limit, hybrid=hybrid,
                        reg=_check_reg(reg), scale=_check_scale(scale))


@register(("gfc2d", "gfc3d"), "nsn-ac", "Alart-Curnier semismooth Newton on the global sparse system (v, r)")
def gnsn_ac(problem, *, tol, max_iter, history=False, callback=None, r0=None, v0=None, rho="auto",
            line_search="nonmonotone", reg=0.0, time_limit=None):
    """Alart–Curnier Newton on the global system (M v = q + H r, u = H^T v + b); options as fc3d
    (``v0``: initial global velocity, default M^-1 (q + H r0); ``reg`` defaults to 0 here, the
    global matrix being nonsingular when M is; no proximal continuation)."""
    return _global_solve(problem, "ac", tol=tol, max_iter=max_iter, history=history, callback=callback,
                         r0=r0, v0=v0, rho=rho, line_search=line_search, time_limit=time_limit,
                         reg=_check_reg(reg))


@register("gfc3d", "nsn-fb", "Fischer-Burmeister semismooth Newton on the global sparse system (v, r)")
def gnsn_fb(problem, *, tol, max_iter, history=False, callback=None, r0=None, v0=None,
            line_search="nonmonotone", reg=0.0, time_limit=None):
    """Fischer–Burmeister Newton on the global system."""
    return _global_solve(problem, "fb", tol=tol, max_iter=max_iter, history=history, callback=callback,
                         r0=r0, v0=v0, rho=1.0, line_search=line_search, time_limit=time_limit,
                         reg=_check_reg(reg))


def _prox_loop(sys, r, *, tol, max_iter, sigma, inner_iter, line_search, history, callback, deadline):
    """Proximal point iterations on a _Local system (sys.sigma / sys.rc are set here and reset after)."""
    dW = 1.0 / sys.rho_pgs
    sig = float(sigma) if sigma is not None else 1e-2 * float(np.mean(dW))
    if not (np.isfinite(sig) and sig > 0):
        raise OptionError(f"sigma must be a positive number, got {sigma!r}")
    sys.sigma = 0.0
    mu, dim, qn = sys.mu, sys.dim, sys.qnorm

    def outer_err(r):
        return _fc_err(r, sys.u(r), mu, dim, qn)

    def inner_err(r, u):
        return _fc_err(r, u, mu, dim, qn)

    hist = [] if history else None
    best_err, best_r = np.inf, r.copy()
    status, nit, inner_total = Status.MAX_ITER, 0, 0
    err = outer_err(r)
    try:
        for k in range(max_iter + 1):
            if hist is not None:
                hist.append(err)
            if err < best_err:
                best_err, best_r = err, r.copy()
            if callback is not None:
                try:
                    callback(k, {"r": r.copy()}, err)
                except StopIteration:
                    status = Status.CALLBACK_STOP
                    break
            if err <= tol:
                status = Status.SOLVED
                break
            if k == max_iter:
                break
            if deadline is not None and time.perf_counter() > deadline:
                status = Status.TIME_LIMIT
                break
            nit = k + 1
            sys.sigma, sys.rc = sig, r.copy()
            itol = max(min(0.1 * err, 1e-2), 0.1 * tol)
            rn, _, st, ni, _, _ = _newton_local(sys, r.copy(), tol=itol, max_iter=inner_iter,
                                                  line_search=line_search, err_fn=inner_err, history=False,
                                                  callback=None, deadline=deadline, keep="last")
            sys.sigma = 0.0
            inner_total += ni
            e_new = outer_err(rn)
            if st is Status.SOLVED or e_new < err:
                r, err = rn, e_new
                if ni <= _PROX[2]:
                    sig = max(sig / _PROX[0], 1e-14 * float(np.mean(dW)))
            else:
                sig *= _PROX[1]
    finally:
        sys.sigma, sys.rc = 0.0, None
    msg = f"PROX: error {best_err:.3g} after {nit} outer / {inner_total} Newton iterations"
    return Outcome(x={"r": best_r}, status=status, nit=nit, history=hist, message=msg,
                   info={"newton_iterations": inner_total, "sigma": sig, "best_error": best_err})


@register("fc3d", "prox", "proximal point outer loop (W + sigma I) with an inner Alart-Curnier Newton")
def prox(problem, *, tol, max_iter, history=False, callback=None, r0=None, rho="auto", sigma=None,
         inner="ac", inner_iter=30, line_search="nonmonotone", time_limit=None):
    """Proximal point method: r_{k+1} solves the problem with W + sigma I, q - sigma r_k (inner nsn-ac).

    Options
    -------
    sigma : initial proximal parameter (default: 1e-2 x the mean of lambda_max(W_aa));
        divided by 3 after an inner solve that converged in at most 8 Newton steps, multiplied by
        10 after one that neither converged nor decreased the error.
    inner : the inner Newton, "ac" (Alart–Curnier, default) or "fb" (Fischer–Burmeister).
    inner_iter : Newton iterations per inner solve (default 30).
    max_iter : outer iterations (default 1000). Other options as ``nsn-ac``.
    """
    max_iter = _check_common(line_search, max_iter, 1000)
    r = as_x0(r0, problem.size, "r0")
    if problem.size == 0:
        return Outcome(x={"r": r}, status=Status.SOLVED, history=[0.0] if history else None)
    if inner not in ("ac", "fb"):
        raise OptionError(f"inner must be 'ac' or 'fb', got {inner!r}")
    sys = _Local(problem, inner, rho if inner == "ac" else 1.0)
    deadline = None if time_limit is None else time.perf_counter() + float(time_limit)
    return _prox_loop(sys, r, tol=tol, max_iter=max_iter, sigma=sigma, inner_iter=int(inner_iter),
                      line_search=line_search, history=history, callback=callback, deadline=deadline)
