r"""Global semismooth Newton for the generic mechanical problem ("nsn" for ``gmp``).

The blocks of :math:`u = Mr + q` are stacked in one nonsmooth equation :math:`\Phi(r) = 0`, one
residual per block kind, and solved by a semismooth Newton method with a line search on
:math:`\tfrac12\|\Phi\|^2`:

=========  =====================================================================================
block      residual :math:`\Phi_k`
=========  =====================================================================================
equality   :math:`u_k` (the rows as equations)
lcp        Fischer–Burmeister :math:`r_i + u_i - \sqrt{r_i^2 + u_i^2}` (``lcp="fb"``, default) or the
           natural map :math:`\min(r_i, u_i)` (``lcp="nm"``)
relay      natural map :math:`r_k - \Pi_{[lb, ub]}(r_k - u_k)`
fc2d/fc3d  Alart–Curnier :math:`\big(r_N - \max(0, r_N - \rho_N u_N),\ r_T - P_{D(\mu\max(0, r_N -
           \rho_N u_N))}(r_T - \rho_T u_T)\big)`, the kernel of ``nsn-ac`` (``_newton_kernels.ac_jac``)
=========  =====================================================================================

An element of the generalised Jacobian is :math:`J = D_A + D_B M` with :math:`D_A, D_B` block
diagonal (scalars for equality, LCP and relay rows, ``dim x dim`` blocks for the contacts); the
Newton step solves :math:`J d = -\Phi` (SuperLU for sparse M, LAPACK for dense, minimum-norm least
squares when J is singular: ``nsopt.linalg.solve_or_lstsq``). Armijo backtracking on
:math:`\tfrac12\|\Phi\|^2`; when it fails, a Levenberg–Marquardt step
:math:`(J^\top J + \lambda I)d = -J^\top\Phi` with :math:`\lambda = \|\Phi\|`, a descent direction of
the merit. The stopping test and the best iterate are the iteration contract's, on the problem's
own error (Siconos' ``gmp_compute_error``). The contact parameters default to
:math:`\rho_N = \rho_T = 1`, the natural map of that error measure: with ``nsn-ac``'s scaled choice
(``rho="auto"``, the inverse of the diagonal block's entries) a badly scaled problem (Siconos'
GMP5.dat, W entries ~1e6 next to equality rows) reaches a tiny merit while the error stays at 6e-8.

Where Gauss–Seidel is slow (strongly coupled blocks: long chains, stiff joints, many sweeps), the
Newton method converges in a few tens of iterations; see ``benchmarks/bench_gmp.py``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import OptionError
from ..linalg import solve_or_lstsq
from ..registry import register
from ._newton_kernels import ac_jac, ac_phi
from .newton_loop import newton_loop
from .newton import _rho_from_blocks

DEFAULT_MAX_ITER = 200
ARMIJO = 1e-4
DENSE_MAX = 400         # below this size J is assembled and factorised dense


class _Structure:
    """The block layout of a GenericMechanical problem, as index arrays (built once per (M, blocks))."""

    def __init__(self, problem, rho):
        M = problem.M
        self.n = problem.size
        self.dense = not sp.issparse(M) or self.n <= DENSE_MAX
        self.M = (M.toarray() if sp.issparse(M) else np.asarray(M)) if self.dense else sp.csr_matrix(M)
        eq, lcp, rel, lb, ub = [], [], [], [], []
        fc = {2: ([], []), 3: ([], [])}
        for b, s in problem.slices():
            idx = list(range(s.start, s.stop))
            if b.kind == "equality":
                eq += idx
            elif b.kind == "lcp":
                lcp += idx
            elif b.kind == "relay":
                rel += idx
                lb += list(b.lb)
                ub += list(b.ub)
            else:
                d = int(b.kind[2])
                fc[d][0].append(idx)
                fc[d][1].append(float(b.mu))
        self.eq = np.array(eq, dtype=np.int64)
        self.lcp = np.array(lcp, dtype=np.int64)
        self.rel = np.array(rel, dtype=np.int64)
        self.lb, self.ub = np.array(lb, float), np.array(ub, float)
        Md = self.M
        self.fc = []
        for d, (rows, mus) in fc.items():
            if not rows:
                continue
            I = np.array(rows, dtype=np.int64)                                    # (nc, d)
            Wd = np.array([_block(Md, ix) for ix in I]).reshape(len(rows), d, d)
            rN, rT, _ = _rho_from_blocks(Wd, rho, np.array(mus))
            mu = np.array(mus)
            mu.setflags(write=False)      # read-only, as a problem's mu: one compiled signature of the AC kernels
            self.fc.append((d, I, mu, np.ascontiguousarray(rN), np.ascontiguousarray(rT)))
        # the fixed sparsity of D_A and D_B: scalar rows on the diagonal, contact blocks dense
        scal = np.concatenate([self.eq, self.lcp, self.rel])
        rr, cc = [scal], [scal]
        for d, I, *_ in self.fc:
            rr.append(np.repeat(I, d, axis=1).reshape(-1))
            cc.append(np.tile(I, (1, d)).reshape(-1))
        self.rows, self.cols = np.concatenate(rr), np.concatenate(cc)
        self.nscal = scal.shape[0]


def _block(M, ix):
    if sp.issparse(M):
        return M[ix, :][:, ix].toarray()
    return M[np.ix_(ix, ix)]


def _residual(S, r, u, lcp_fb, jac):
    """Phi(r) and, with ``jac``, the values of D_A and D_B on S.rows/S.cols."""
    phi = np.empty(S.n)
    a = np.zeros(S.nscal)
    b = np.zeros(S.nscal)
    k = 0
    # equality rows: phi = u
    ne = S.eq.shape[0]
    phi[S.eq] = u[S.eq]
    b[:ne] = 1.0
    k = ne
    # LCP rows
    i = S.lcp
    ri, ui = r[i], u[i]
    nl = i.shape[0]
    if lcp_fb:
        s = np.sqrt(ri * ri + ui * ui)
        phi[i] = ri + ui - s
        pos = s > 0
        a[k:k + nl] = np.where(pos, 1.0 - ri / np.where(pos, s, 1.0), 1.0 - np.sqrt(0.5))
        b[k:k + nl] = np.where(pos, 1.0 - ui / np.where(pos, s, 1.0), 1.0 - np.sqrt(0.5))
    else:
        use_u = ui < ri
        phi[i] = np.where(use_u, ui, ri)
        a[k:k + nl] = ~use_u
        b[k:k + nl] = use_u
    k += nl
    # relay rows: phi = r - clip(r - u, lb, ub)
    i = S.rel
    x = r[i] - u[i]
    inside = (x > S.lb) & (x < S.ub)
    phi[i] = r[i] - np.clip(x, S.lb, S.ub)
    nr = i.shape[0]
    a[k:k + nr] = ~inside
    b[k:k + nr] = inside
    vals_a, vals_b = [a], [b]
    # contacts: Alart–Curnier
    for d, I, mu, rN, rT in S.fc:
        flat = I.reshape(-1)
        rc = np.ascontiguousarray(r[flat])
        uc = np.ascontiguousarray(u[flat])
        ph = np.empty(flat.shape[0])
        if not jac:
            ac_phi(rc, uc, mu, rN, rT, d, ph)
            phi[flat] = ph
            continue
        A = np.empty((I.shape[0], d, d))
        B = np.empty((I.shape[0], d, d))
        ac_jac(rc, uc, mu, rN, rT, d, ph, A, B)
        phi[flat] = ph
        vals_a.append(A.reshape(-1))
        vals_b.append(B.reshape(-1))
    if not jac:
        return phi, None, None
    return phi, np.concatenate(vals_a), np.concatenate(vals_b)


def _jacobian(S, va, vb):
    """J = D_A + D_B M (dense ndarray or CSC)."""
    n = S.n
    if S.dense:
        DA = np.zeros((n, n))
        DB = np.zeros((n, n))
        np.add.at(DA, (S.rows, S.cols), va)
        np.add.at(DB, (S.rows, S.cols), vb)
        return DA + DB @ S.M
    DA = sp.csr_matrix((va, (S.rows, S.cols)), shape=(n, n))
    DB = sp.csr_matrix((vb, (S.rows, S.cols)), shape=(n, n))
    return sp.csc_matrix(DA + DB @ S.M)


def _lm_step(J, phi, lam):
    """Levenberg–Marquardt direction: (J^T J + lam I) d = -J^T phi."""
    g = J.T @ phi
    if sp.issparse(J):
        A = (J.T @ J + lam * sp.identity(J.shape[1])).tocsc()
    else:
        A = J.T @ J + lam * np.eye(J.shape[1])
    return solve_or_lstsq(A, -np.asarray(g).reshape(-1))[0]


def _matvec(S, x):
    return np.asarray(S.M @ x).reshape(-1)


def _backtrack(S, q, fb, r, d, f, max_backtracks, sigma):
    """Halve t from 1 until the merit 1/2||Phi(r + t d)||^2 <= (1 - 2 sigma t) f (strictly below f
    when sigma = 0); returns (r + t d, its u) or None."""
    t = 1.0
    for _ in range(max_backtracks):
        rt = r + t * d
        ut = _matvec(S, rt) + q
        pt = _residual(S, rt, ut, fb, False)[0]
        ft = 0.5 * float(pt @ pt)
        if ft <= (1.0 - 2.0 * sigma * t) * f and (sigma > 0.0 or ft < f):
            return rt, ut
        t *= 0.5
    return None


@register("gmp", "nsn", "global semismooth Newton on the stacked block residual (equalities as "
          "equations, LCP by Fischer–Burmeister, relay by the natural map, contacts by Alart–Curnier)")
def gmp_nsn(problem, mon, *, rho=1.0, lcp="fb", max_backtracks=30):
    """Semismooth Newton on the stacked residual (see the module docstring).

    Options
    -------
    rho : the Alart–Curnier parameters: a positive number (default 1, the natural map of Siconos'
        error measure), a pair (rho_N, rho_T), or "auto" (nsn-ac's choice from the diagonal blocks).
    lcp : "fb" (Fischer–Burmeister, default) or "nm" (natural map) for the LCP blocks.
    max_backtracks : Armijo halvings before the Levenberg–Marquardt fallback (default 30).
    """
    if lcp not in ("fb", "nm"):
        raise OptionError(f"nsn: lcp must be 'fb' or 'nm', got {lcp!r}")
    if isinstance(max_backtracks, bool) or not isinstance(max_backtracks, (int, np.integer)) or max_backtracks < 1:
        raise OptionError(f"nsn: max_backtracks must be a positive integer, got {max_backtracks!r}")
    key = ("gmp_nsn_structure", rho if isinstance(rho, str) else tuple(np.atleast_1d(rho).tolist()))
    S = problem.cached(key, lambda: _Structure(problem, rho), on=("M", "blocks"))
    mon.budget(DEFAULT_MAX_ITER)
    mon.built()
    system = _GMPNewton(S, problem, lcp == "fb", max_backtracks)
    r = mon.start_vector("r", problem.size)
    system.u = _matvec(S, r) + system.q
    # the Levenberg–Marquardt direction after a failed Newton step (reg_step 0), every iteration
    _, _, info = newton_loop(system, r, mon, reg=1.0, reg_step=0.0, plain="always", adapt=False)
    return mon.solution(info={"lm_steps": info["regularised_steps"] + system.failed_lm, "merit": system.f})


class _GMPNewton:
    """The stacked residual as :func:`~nsopt.solvers.newton_loop.newton_loop` reads it: x = r, u = Mr + q
    kept; the regularised direction is Levenberg–Marquardt's, searched with a strict decrease."""

    polish = None
    wscale = 1.0

    def __init__(self, S, problem, fb, max_backtracks):
        self.S, self.p, self.fb, self.max_backtracks = S, problem, fb, max_backtracks
        self.q = np.asarray(problem.q, float)
        self.f = np.inf
        self.failed_lm = 0
        self._step = self._at = None

    def error(self, r):
        return self.p.error(r)

    def variables(self, r):
        return {"r": r}

    def _residual(self, r):
        self.phi, va, vb = _residual(self.S, r, self.u, self.fb, True)
        self.f = 0.5 * float(self.phi @ self.phi)
        self._at = (r, va, vb)

    def linearise(self, r):
        if self._at is None or self._at[0] is not r:
            self._residual(r)
        self.J = _jacobian(self.S, *self._at[1:])
        return self.f

    def direction(self, r, shift):
        if shift is None:
            d = solve_or_lstsq(self.J, -self.phi)[0]
            return d if np.all(np.isfinite(d)) else None
        return _lm_step(self.J, self.phi, float(np.sqrt(2.0 * self.f)))   # always a descent direction of the merit

    def search(self, r, d, f0, fref, line_search, regularised):
        step = _backtrack(self.S, self.q, self.fb, r, d, f0, self.max_backtracks, 0.0 if regularised else ARMIJO)
        if step is None:
            self.failed_lm += regularised
            return False, 0.0, f0
        self._step = step
        return True, 1.0, 0.0

    def move(self, r, t, d):
        r, self.u = self._step
        self._residual(r)          # (the merit of the new iterate, and the Jacobian's values for the next step)
        return r

    def fallback(self, r):
        return None

    def why(self, k):
        return f"line search failed after {k} iteration(s) (merit {self.f:.3g})"

