r"""Lexicographic Lemke method for the LCP, and the problems nsopt reduces to an LCP for it.

The LCP :math:`w = Mz + q,\ 0 \le z \perp w \ge 0` is augmented with an artificial variable
:math:`z_0` and a covering vector :math:`d > 0` (default :math:`d = e = (1, \dots, 1)`):

.. math::  w = Mz + q + d z_0 ,

started from the almost complementary basis where every :math:`w_i` is basic, then :math:`z_0`
enters at the value :math:`\max_i(-q_i/d_i)`. Each pivot lets the complement of the variable that
just left enter (complementary pivoting); the leaving row is chosen by the lexicographic minimum
ratio rule on the rows :math:`(\beta_i, (B^{-1})_{i,:})/\bar a_i`, which keeps every basis
lexicographically feasible and therefore never revisits a basis: degenerate problems do not cycle.
The method stops

* with a solution when :math:`z_0` leaves the basis (then :math:`z` is polished by one direct solve
  of :math:`M_{JJ} z_J = -q_J` on the final basis, kept when it has the smaller error), or
* on a *secondary ray*: the entering column has no blocking row. The ray
  :math:`(w, z, z_0)(t) = (w, z, z_0)^k + t\,(w^h, z^h, z_0^h)` is returned in
  ``Outcome.info["ray"]`` (the z part ``z^h``; ``"ray_w"``, ``"ray_z0"`` the others). For a
  copositive-plus M (e.g. positive semidefinite M) a secondary ray proves that the LCP has no
  solution (Cottle–Pang–Stone, Thm 4.4.9): then :math:`y = z^h \ge 0` satisfies the Farkas
  conditions :math:`M^\top y \le 0,\ q^\top y < 0`, so :math:`\{z \ge 0 : Mz + q \ge 0\}` is empty.
  nsopt checks these conditions numerically: when they hold the status is ``INFEASIBLE`` and
  ``info["certificate"]`` is True; when they do not (M not copositive-plus, nothing is proven) the
  status is ``STALLED`` with ``info["certificate"] = False`` and the ray still reported.

Implementation: a dense *revised* tableau. The basis inverse :math:`B^{-1}` is kept explicitly
(column major) together with :math:`\beta = B^{-1} q`; a column of :math:`B^{-1}` whose unit
vector :math:`w_j` is basic is the unit vector of its row, so products and rank-one updates only
touch the :math:`k` "dense" columns (``k`` = number of basic ``z`` plus ``z_0``): a pivot costs
:math:`O(nk)` instead of the :math:`O(n^2)` of the full tableau (Siconos keeps the full
:math:`n \times 2(n+1)` tableau). The pivot loop is compiled with numba. The data are scaled to
unit size first (z solves (M, q) iff :math:`az/b` solves :math:`(M/a, q/b)`), so the tolerances
are scale free: a column entry blocks when it exceeds ``piv_tol`` times the column's largest entry;
two ratios tie when they agree to ``tie_tol`` relatively, or when both rows are degenerate
(:math:`|\beta_i|` below ``tie_tol`` times the largest); when :math:`z_0` is among the tied rows it
leaves at once. For the LCP, a ray without certificate is retried (``restarts``) with other,
random positive covering vectors.

Size guard: an LCP (after reduction) larger than ``MAX_LCP`` = 10000 is refused with
:class:`~nsopt.exceptions.NotApplicable` (the dense tableau alone would take 800 MB); sparse
input is densified (with a warning above n = 2000).

Reductions to an LCP (used by the ``lemke`` method of the other kinds):

* Relay, box :math:`[lb, ub]`: :math:`z = lb + x` and the upper-bound multiplier :math:`y`,
  :math:`0 \le x \perp Mx + (q + M\,lb) + y \ge 0`, :math:`0 \le y \perp (ub - lb) - x \ge 0`
  (a one-sided bound gives one row, a free component :math:`z = x^+ - x^-` two).
* MLCP: the free variables are eliminated by the Schur complement when the equality block A is
  not numerically singular (condition number below 1e14; Siconos' MLCP LCP_LEMKE always does
  this and fails only on an exactly singular A): :math:`u = -A^{-1}(Cv + a)`, LCP in v with matrix
  :math:`B - DA^{-1}C`. Otherwise (or ``reduction="split"``, or when the Schur route does not
  reach ``tol``) :math:`u = u^+ - u^-` with the equality rows doubled with opposite signs (LCP of
  size 2n + m; copositive-plus when M is positive semidefinite).
* AVI over :math:`K = \{z: Hz \ge k\}`: its KKT system :math:`Mz + q - H^\top\lambda = 0`,
  :math:`0 \le \lambda \perp Hz - k \ge 0` is an MLCP (equivalent to the AVI since K is polyhedral),
  solved by the MLCP reduction above (Schur: LCP in :math:`\lambda` with :math:`H M^{-1} H^\top`,
  split when M is singular, e.g. M = 0, a linear program). For a bounded nonempty K the AVI has a
  solution; with M positive semidefinite both reductions are copositive-plus, so Lemke finds it
  (a ray would prove the KKT system infeasible). Siconos solves AVIs with the Cao–Ferris path
  method instead, a Lemke-type method on the same KKT system; ``info["multipliers"]`` holds
  :math:`\lambda` and ``info["kkt_error"]`` the KKT residual.
* FC2D: with :math:`\beta_a = r_{T,a} + \mu_a r_{N,a} \ge 0` and a slack :math:`\lambda_a \ge 0`,
  each contact gives the three complementarity pairs
  :math:`r_N \perp u_N`, :math:`\beta \perp u_T + \lambda`, :math:`\lambda \perp 2\mu r_N - \beta`
  (Siconos' FC2D LEMKE uses the same 3-per-contact form); the result is checked by the FC2D error.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from ..exceptions import NsoptWarning, OptionError
from ..registry import Outcome, register
from ..result import Status

try:
    from numba import njit
except ImportError:  # pragma: no cover
    def njit(*a, **k):
        if a and callable(a[0]):
            return a[0]
        return lambda f: f


# --------------------------------------------------------------------------------------------
# compiled kernel
# variables: w_i -> i, z_i -> n + i, z0 -> 2n; pos[var] = basis row or -1; basis[row] = var
# Binv is Fortran ordered; dense[j] is True when column j of Binv is not a unit vector
# (i.e. w_j is not basic); the other columns are e_{pos[j]} and are never stored as such.
# --------------------------------------------------------------------------------------------

@njit(cache=True)
def _entering_column(MF, cover, Binv, dense, pos, var, col):
    n = col.shape[0]
    if var < n:  # w_var: column e_var of the constraint matrix [I, -M, -d]
        if dense[var]:
            for i in range(n):
                col[i] = Binv[i, var]
        else:
            for i in range(n):
                col[i] = 0.0
            col[pos[var]] = 1.0
        return
    for i in range(n):
        col[i] = 0.0
    if var < 2 * n:
        j = var - n
        for c in range(n):
            a = -MF[c, j]
            if a == 0.0:
                continue
            if dense[c]:
                for i in range(n):
                    col[i] += Binv[i, c] * a
            else:
                col[pos[c]] += a
    else:
        for c in range(n):
            a = -cover[c]
            if dense[c]:
                for i in range(n):
                    col[i] += Binv[i, c] * a
            else:
                col[pos[c]] += a


@njit(cache=True)
def _lex_value(Binv, dense, basis, i, j):
    """(B^-1)[i, j] with the unit columns implicit."""
    if dense[j]:
        return Binv[i, j]
    return 1.0 if basis[i] == j else 0.0


@njit(cache=True)
def _ratio_test(Binv, beta, col, dense, basis, z0var, initial, piv_tol, tie_tol, cand, vals):
    """Row leaving the basis, or -1 (secondary ray). ``initial``: the z0 step (lexicographic max)."""
    n = col.shape[0]
    cmax = 0.0
    for i in range(n):
        a = abs(col[i])
        if a > cmax:
            cmax = a
    thr = piv_tol * max(cmax, 1e-300)
    nc = 0
    if initial:
        for i in range(n):
            if col[i] < -thr:
                cand[nc] = i
                vals[nc] = -beta[i] / col[i]    # minimise -ratio: lexicographic max of the ratio
                nc += 1
    else:
        for i in range(n):
            if col[i] > thr:
                cand[nc] = i
                vals[nc] = beta[i] / col[i]
                nc += 1
    if nc == 0:
        return -1
    sgn = -1.0 if initial else 1.0
    # first key: the ratio. Ties: relative closeness of the ratios, or both rows degenerate
    # (beta ~ 0 at the noise level of the unit-scaled data)
    best = vals[0]
    kb = 0
    bmax = 1.0
    for k in range(nc):
        if vals[k] < best:
            best = vals[k]
            kb = k
        if abs(beta[cand[k]]) > bmax:
            bmax = abs(beta[cand[k]])
    zero = tie_tol * bmax
    bzero = abs(beta[cand[kb]]) <= zero
    lim = best + tie_tol * abs(best)
    # move the tied candidates to the front, keeping the others after them (for the z0 check)
    m = 0
    for k in range(nc):
        if vals[k] <= lim or (bzero and abs(beta[cand[k]]) <= zero):
            t = cand[m]
            cand[m] = cand[k]
            cand[k] = t
            m += 1
    if m == 1:
        return cand[0]
    if not initial:  # z0 tied, or at zero: let it leave, which ends the path with a solution
        for k in range(nc):
            if basis[cand[k]] == z0var and (k < m or abs(beta[cand[k]]) <= zero):
                return cand[k]
    # lexicographic tie-break on the columns of B^-1
    j = 0
    while m > 1 and j < n:
        for k in range(m):
            i = cand[k]
            vals[k] = sgn * _lex_value(Binv, dense, basis, i, j) / col[i]
        best = vals[0]
        scale = abs(vals[0])
        for k in range(1, m):
            if vals[k] < best:
                best = vals[k]
            if abs(vals[k]) > scale:
                scale = abs(vals[k])
        lim = best + tie_tol * max(scale, 1e-300)
        mm = 0
        for k in range(m):
            if vals[k] <= lim:
                cand[mm] = cand[k]
                mm += 1
        m = mm
        j += 1
    return cand[0]


@njit(cache=True)
def _pivot(Binv, beta, col, dense, basis, pos, r, enter, nzc):
    """Pivot on row r with entering variable ``enter`` whose updated column is ``col``."""
    n = col.shape[0]
    leave = basis[r]
    # column j of the new B^-1 = E * old column j, E the eta matrix of (r, col)
    inv = 1.0 / col[r]
    nnz = 0
    for j in range(n):
        if dense[j]:
            nzc[nnz] = j
            nnz += 1
    if leave < n:
        # w_leave leaves: its unit column e_r becomes dense
        j = leave
        for i in range(n):
            Binv[i, j] = 0.0
        Binv[r, j] = 1.0
        dense[j] = True
        nzc[nnz] = j
        nnz += 1
    br = beta[r] * inv
    for i in range(n):
        beta[i] -= col[i] * br
    beta[r] = br
    for k in range(nnz):
        j = nzc[k]
        f = Binv[r, j] * inv
        if f != 0.0:
            for i in range(n):
                Binv[i, j] -= col[i] * f
        Binv[r, j] = f
    # unit columns of rows other than r are unchanged (E e_i = e_i for i != r)
    basis[r] = enter
    pos[leave] = -1
    pos[enter] = r
    if enter < n:
        # w_enter basic at row r: its column of B^-1 is exactly e_r again
        j = enter
        dense[j] = False
        for i in range(n):
            Binv[i, j] = 0.0


@njit(cache=True)
def _lemke_run(MF, cover, Binv, beta, dense, basis, pos, state, nsteps, piv_tol, tie_tol, col):
    """Run up to ``nsteps`` pivots. state = [entering var, pivots done].

    Returns 0 (budget used), 1 (z0 left: solution), 2 (secondary ray; col = its column),
    3 (numerical trouble).
    """
    n = beta.shape[0]
    z0var = 2 * n
    cand = np.empty(n, dtype=np.int64)
    vals = np.empty(n)
    nzc = np.empty(n + 1, dtype=np.int64)
    for _ in range(nsteps):
        enter = state[0]
        _entering_column(MF, cover, Binv, dense, pos, enter, col)
        initial = pos[z0var] < 0 and enter == z0var
        r = _ratio_test(Binv, beta, col, dense, basis, z0var, initial, piv_tol, tie_tol, cand, vals)
        if r < 0:
            return 2
        if not np.isfinite(col[r]) or col[r] == 0.0:
            return 3
        leave = basis[r]
        _pivot(Binv, beta, col, dense, basis, pos, r, enter, nzc)
        state[1] += 1
        if leave == z0var:
            return 1
        # complementary rule
        state[0] = leave + n if leave < n else leave - n
    return 0


# --------------------------------------------------------------------------------------------
# Python driver
# --------------------------------------------------------------------------------------------

class _Tableau:
    """State of a Lemke run (so that history/callback can step it pivot by pivot)."""

    def __init__(self, M, q, cover):
        n = q.shape[0]
        self.n = n
        self.MF = np.asfortranarray(M, dtype=float)
        self.q = q
        self.cover = cover
        self.Binv = np.zeros((n, n), order="F")
        self.beta = q.astype(float).copy()
        self.dense = np.zeros(n, dtype=np.bool_)
        self.basis = np.arange(n, dtype=np.int64)
        self.pos = -np.ones(2 * n + 1, dtype=np.int64)
        self.pos[:n] = np.arange(n)
        self.state = np.array([2 * n, 0], dtype=np.int64)
        self.col = np.zeros(n)

    def run(self, nsteps, piv_tol, tie_tol):
        return int(_lemke_run(self.MF, self.cover, self.Binv, self.beta, self.dense, self.basis,
                              self.pos, self.state, int(nsteps), float(piv_tol), float(tie_tol), self.col))

    unscale = 1.0

    def z(self):
        n, b = self.n, self.basis
        z = np.zeros(n)
        zb = (b >= n) & (b < 2 * n)
        z[b[zb] - n] = self.beta[zb]
        return z * self.unscale

    def basic_z(self):
        n = self.n
        b = self.basis
        return np.sort(b[(b >= n) & (b < 2 * n)] - n)

    def z0(self):
        r = self.pos[2 * self.n]
        return float(self.beta[r]) * self.b if r >= 0 else 0.0

    def ray(self):
        """Direction (w, z, z0) of the secondary ray from the last entering column."""
        n = self.n
        d = np.zeros(2 * n + 1)
        d[self.state[0]] = 1.0
        d[self.basis] = -self.col
        return d[:n], d[n:2 * n], float(d[2 * n])


def _lcp_error(M, q, z):
    w = M @ z + q
    e = float(np.linalg.norm(z - np.maximum(0.0, z - w)))
    nq = float(np.linalg.norm(q))
    return e / nq if nq > np.finfo(float).eps else e


def _polish(M, q, z, J=None):
    """Re-solve M_JJ z_J = -q_J on the final basis J (default: the support of z); None if singular."""
    if J is None:
        J = np.flatnonzero(z > 0)
    if J.size == 0:
        return None
    try:
        zJ = np.linalg.solve(M[np.ix_(J, J)], -q[J])
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(zJ)):
        return None
    out = np.zeros_like(z)
    out[J] = zJ
    return out


def farkas_certificate(M, q, y, tol=1e-9):
    """True when y proves that {z >= 0: Mz + q >= 0} is empty: y >= 0, M^T y <= 0, q^T y < 0 (scaled)."""
    y = np.asarray(y, float)
    ny = float(np.max(np.abs(y))) if y.size else 0.0
    if ny == 0.0:
        return False
    y = y / ny
    MTy = np.asarray(M.T @ y).reshape(-1)
    scale = 1.0 + float(np.max(np.abs(M))) if np.size(M) else 1.0
    qs = 1.0 + float(np.max(np.abs(q)))
    return bool(np.all(y >= -tol) and np.all(MTy <= tol * scale) and float(q @ y) < -tol * qs)


_CERT_MSG = "secondary ray: y = info['ray'] >= 0 with M^T y <= 0, q^T y < 0 proves the LCP infeasible"


def lemke_lcp(M, q, *, max_iter=None, piv_tol=1e-12, tie_tol=1e-13, cover=None, history=False,
              callback=None, err_fn=None, xname="z", to_x=None, polish_tol=1e-14):
    """Core Lemke on dense (M, q). Returns (z, status, nit, hist, message, info).

    ``err_fn(z)`` is the error reported in history/callback (default: the LCP error);
    ``to_x(z)`` maps the LCP iterate to the caller's variables for the callback.
    """
    M = np.asarray(M, dtype=float)
    q = np.asarray(q, dtype=float).reshape(-1)
    n = q.shape[0]
    if max_iter is None:
        max_iter = 10 * n + 100
    err_fn = err_fn or (lambda z: _lcp_error(M, q, z))
    hist = [] if history else None
    info = {"pivots": 0}
    if n == 0 or np.all(q >= 0):
        z = np.zeros(n)
        if hist is not None:
            hist.append(err_fn(z))
        return z, Status.SOLVED, 0, hist, "q >= 0: z = 0", info
    if n == 1 and cover is None:  # closed form (also keeps the compiled kernel to one array layout)
        m11, q1 = float(M[0, 0]), float(q[0])
        if m11 > 0:
            z = np.array([-q1 / m11])
            if hist is not None:
                hist.append(err_fn(z))
            return z, Status.SOLVED, 1, hist, "z0 left the basis", {"pivots": 1}
        info.update(ray=np.ones(1), ray_w=np.array([m11]), ray_z0=0.0, certificate=True, z0=-q1)
        return np.zeros(1), Status.INFEASIBLE, 1, hist, _CERT_MSG, info
    if cover is None:
        cover = np.ones(n)
    else:
        cover = np.asarray(cover, dtype=float).reshape(-1)
        if cover.shape[0] != n or not np.all(cover > 0) or not np.all(np.isfinite(cover)):
            raise OptionError(f"cover: the covering vector must be a positive finite vector of size {n}")
    # the LCP is homogeneous: z solves (M, q) iff z' = a z / b solves (M / a, q / b); pivoting on
    # unit-scaled data makes the tie and pivot tolerances scale free
    a = float(np.max(np.abs(M))) or 1.0
    b = float(np.max(np.abs(q))) or 1.0
    T = _Tableau(M / a, q / b, cover)
    T.unscale, T.b = b / a, b
    step = 1 if (history or callback is not None) else max_iter
    code = 0
    while T.state[1] < max_iter:
        code = T.run(min(step, max_iter - T.state[1]), piv_tol, tie_tol)
        if hist is not None or callback is not None:
            z = T.z()
            err = err_fn(z)
            if hist is not None:
                hist.append(err)
            if callback is not None:
                try:
                    callback(int(T.state[1]), {xname: to_x(z) if to_x else z}, err)
                except StopIteration:
                    info["pivots"] = int(T.state[1])
                    return z, Status.CALLBACK_STOP, int(T.state[1]), hist, "stopped by the callback", info
        if code != 0:
            break
    nit = int(T.state[1])
    info["pivots"] = nit
    z = T.z()
    if code == 1:
        err = _lcp_error(M, q, z)
        if err > polish_tol:  # one direct solve on the final basis removes the pivoting round-off
            for J in (T.basic_z(), None):
                zp = _polish(M, q, z, J)
                if zp is not None:
                    ep = _lcp_error(M, q, zp)
                    if ep < err:
                        z, err = zp, ep
                        info["polished"] = True
        return z, Status.SOLVED, nit, hist, "z0 left the basis", info
    if code == 2 and abs(T.z0()) <= tie_tol * b and _lcp_error(M, q, z) <= 1e-12:
        # degenerate end: z0 already reached 0 (the current point solves the LCP) but its row
        # cannot block the last entering column
        info["z0"] = T.z0()
        return z, Status.SOLVED, nit, hist, "z0 reached 0 (degenerate end of the path)", info
    if code == 2:
        rw, rz, rz0 = T.ray()
        cert = farkas_certificate(M, q, rz)
        info.update(ray=rz, ray_w=rw, ray_z0=rz0, certificate=cert, z0=T.z0())
        if cert:
            return z, Status.INFEASIBLE, nit, hist, _CERT_MSG, info
        return z, Status.STALLED, nit, hist, ("secondary ray (no infeasibility certificate: "
                                              "M is not copositive-plus on this path)"), info
    if code == 3:
        return z, Status.NUMERICAL_ERROR, nit, hist, "zero or non-finite pivot", info
    info["z0"] = T.z0()
    return z, Status.MAX_ITER, nit, hist, f"{nit} pivots without termination (z0 = {T.z0():.3g})", info


def _dense(M, what):
    if sp.issparse(M):
        if M.shape[0] > 2000:
            warnings.warn(f"lemke: {what} is sparse and is densified (n = {M.shape[0]})",
                          NsoptWarning, stacklevel=4)
        return M.toarray()
    return np.asarray(M, dtype=float)


MAX_LCP = 10_000   # dense tableau: n^2 doubles (800 MB at the limit)


def _lcp_size(problem):
    k = problem.kind
    if k == "relay":
        lb, ub = np.asarray(problem.lb), np.asarray(problem.ub)
        lo, hi = np.isfinite(lb), np.isfinite(ub)
        return int(problem.size + np.sum(lo & hi) + np.sum(~lo & ~hi))
    if k == "mlcp":
        return problem.m
    if k == "avi":
        return int(problem.H.shape[0])
    if k == "fc2d":
        return 3 * problem.nc
    return problem.size


def _too_big(problem):
    n = _lcp_size(problem)
    if n > MAX_LCP:
        return (f"Lemke works on a dense {n} x {n} tableau ({8 * n * n / 1e9:.1f} GB); the limit is an LCP "
                f"of size {MAX_LCP} (use newton-fb, pgs or nsgs)")
    return None


# --------------------------------------------------------------------------------------------
# LCP
# --------------------------------------------------------------------------------------------

@register("lcp", "lemke",
          "lexicographic Lemke (covering vector e); secondary ray -> infeasibility certificate",
          applies=_too_big)
def lcp_lemke(problem, *, tol, max_iter, history=False, callback=None, z0=None, piv_tol=1e-12,
              tie_tol=1e-13, cover=None, restarts=2):
    """Lexicographic Lemke for the LCP (see the module docstring).

    Options: ``z0`` is ignored (Lemke starts from the artificial basis); ``max_iter`` pivots
    (default 10 n + 100); ``piv_tol`` relative size below which a column entry does not block;
    ``tie_tol`` relative tolerance of the lexicographic ties; ``cover`` covering vector (default
    ones); ``restarts``: after a secondary ray *without* certificate, retry this many times with
    another covering vector (a ray with a certificate is final).
    """
    M = _dense(problem.M, "M")
    q = np.asarray(problem.q, dtype=float)
    n = q.shape[0]
    z, status, nit, hist, msg, info = lemke_lcp(M, q, max_iter=max_iter, piv_tol=piv_tol, tie_tol=tie_tol,
                                                cover=cover, history=history, callback=callback)
    total = nit
    k = 0
    while status is Status.STALLED and "ray" in info and k < restarts:
        k += 1
        rng = np.random.default_rng(k)
        cov = 1.0 + rng.random(n)
        z2, st2, nit2, h2, msg2, info2 = lemke_lcp(M, q, max_iter=max_iter, piv_tol=piv_tol,
                                                   tie_tol=tie_tol, cover=cov, history=history,
                                                   callback=callback)
        total += nit2
        if hist is not None and h2:
            hist.extend(h2)
        z, status, msg, info = z2, st2, f"{msg2} (restart {k}, random covering vector)", info2
    info["pivots"] = total
    return Outcome({"z": z}, status, total, hist, msg, info)


# --------------------------------------------------------------------------------------------
# Relay
# --------------------------------------------------------------------------------------------

def relay_to_lcp(M, q, lb, ub):
    """Relay (box VI) -> LCP. Returns (Mlcp, qlcp, T, c) with z = T x[:p] + c."""
    n = q.shape[0]
    cols, sign, c = [], [], np.zeros(n)
    ypair = []   # (x column, i) for boxes with both bounds finite
    for i in range(n):
        lo, hi = np.isfinite(lb[i]), np.isfinite(ub[i])
        if lo:
            c[i] = lb[i]
            cols.append(i)
            sign.append(1.0)
            if hi:
                ypair.append((len(cols) - 1, i))
        elif hi:
            c[i] = ub[i]
            cols.append(i)
            sign.append(-1.0)
        else:
            cols.extend([i, i])
            sign.extend([1.0, -1.0])
    p, m = len(cols), len(ypair)
    T = np.zeros((n, p))
    T[cols, np.arange(p)] = sign
    G = np.zeros((p, m))
    d = np.zeros(m)
    for b, (a, i) in enumerate(ypair):
        G[a, b] = 1.0
        d[b] = ub[i] - lb[i]
    Ml = np.zeros((p + m, p + m))
    Ml[:p, :p] = T.T @ M @ T
    Ml[:p, p:] = G
    Ml[p:, :p] = -G.T
    ql = np.concatenate([T.T @ (M @ c + q), d])
    return Ml, ql, T, c


@register("relay", "lemke", "Lemke on the LCP reformulation of the box VI (z = lb + x, upper multiplier y)",
          applies=_too_big)
def relay_lemke(problem, *, tol, max_iter, history=False, callback=None, z0=None, piv_tol=1e-12,
                tie_tol=1e-13):
    """Relay by Lemke on its LCP reformulation (module docstring); ``z0`` is ignored."""
    M = _dense(problem.M, "M")
    q = np.asarray(problem.q, float)
    Ml, ql, T, c = relay_to_lcp(M, q, np.asarray(problem.lb), np.asarray(problem.ub))
    p = T.shape[1]

    def to_z(x):
        return T @ x[:p] + c

    x, status, nit, hist, msg, info = lemke_lcp(Ml, ql, max_iter=max_iter, piv_tol=piv_tol, tie_tol=tie_tol,
                                                history=history, callback=callback,
                                                err_fn=lambda x: problem.error(to_z(x)), to_x=to_z)
    info["lcp_size"] = Ml.shape[0]
    return Outcome({"z": to_z(x)}, status, nit, hist, msg, info)


# --------------------------------------------------------------------------------------------
# MLCP and AVI
# --------------------------------------------------------------------------------------------

def mlcp_to_lcp(M, q, is_eq, reduction="auto", cond_max=1e14):
    """MLCP (free rows/columns ``is_eq``) -> LCP. Returns (Mlcp, qlcp, back, how) with z = back(x)."""
    M = np.asarray(M, float)
    q = np.asarray(q, float)
    E = np.flatnonzero(is_eq)
    I = np.flatnonzero(~is_eq)
    N = q.shape[0]
    A, C = M[np.ix_(E, E)], M[np.ix_(E, I)]
    D, B = M[np.ix_(I, E)], M[np.ix_(I, I)]
    a, b = q[E], q[I]
    if reduction not in ("auto", "schur", "split"):
        raise OptionError(f"reduction must be 'auto', 'schur' or 'split', got {reduction!r}")
    if E.size == 0:
        def back0(x):
            z = np.zeros(N)
            z[I] = x
            return z
        return B, b, back0, "none"
    use_schur = reduction == "schur"
    if reduction == "auto":
        try:
            use_schur = bool(np.linalg.cond(A) < cond_max)
        except np.linalg.LinAlgError:
            use_schur = False
    if use_schur:
        import scipy.linalg as sla

        lu = sla.lu_factor(A)
        AiC = sla.lu_solve(lu, C)
        Aia = sla.lu_solve(lu, a)
        Ml = B - D @ AiC
        ql = b - D @ Aia

        def back(x):
            z = np.zeros(N)
            z[I] = x
            z[E] = -(AiC @ x + Aia)
            return z
        return Ml, ql, back, "schur"
    ne = E.size
    Ml = np.block([[A, -A, C], [-A, A, -C], [D, -D, B]])
    ql = np.concatenate([a, -a, b])

    def back2(x):
        z = np.zeros(N)
        z[E] = x[:ne] - x[ne:2 * ne]
        z[I] = x[2 * ne:]
        return z
    return Ml, ql, back2, "split"


@register("mlcp", "lemke", "Lemke on the LCP reduction (Schur complement of A, or u = u+ - u-)",
          applies=_too_big)
def mlcp_lemke(problem, *, tol, max_iter, history=False, callback=None, z0=None, piv_tol=1e-12,
               tie_tol=1e-13, reduction="auto"):
    """MLCP by Lemke: ``reduction`` "auto" (Schur complement when A is well conditioned, else split),
    "schur" or "split" (module docstring). When the Schur reduction does not reach ``tol``
    (``auto``), the split reduction is tried as well. ``z0`` is ignored."""
    M = _dense(problem.M, "M")
    q = np.asarray(problem.q, float)
    tries = [reduction] if reduction != "auto" else ["auto", "split"]
    best = None
    for red in tries:
        Ml, ql, back, how = mlcp_to_lcp(M, q, np.asarray(problem.is_eq), red)
        if best is not None and how == best.info.get("reduction"):
            continue
        x, status, nit, hist, msg, info = lemke_lcp(Ml, ql, max_iter=max_iter, piv_tol=piv_tol,
                                                    tie_tol=tie_tol, history=history, callback=callback,
                                                    err_fn=lambda x: problem.error(back(x)), to_x=back)
        z = back(x)
        info["reduction"] = how
        info["lcp_size"] = Ml.shape[0]
        info["error"] = problem.error(z)
        out = Outcome({"z": z}, status, nit, hist, msg, info)
        if best is None or info["error"] < best.info["error"]:
            if best is not None:
                out.nit += best.nit
            best = out
        if best.info["error"] <= tol or status is Status.CALLBACK_STOP:
            break
    return best


def avi_to_mlcp(M, q, H, k):
    """AVI over {z: Hz >= k} -> KKT MLCP on (z free, lambda >= 0): M z - H^T l + q = 0, Hz - k >= 0."""
    n, m = M.shape[0], H.shape[0]
    Mm = np.block([[M, -H.T], [H, np.zeros((m, m))]])
    qm = np.concatenate([q, -k])
    is_eq = np.zeros(n + m, bool)
    is_eq[:n] = True
    return Mm, qm, is_eq


@register("avi", "lemke",
          "Lemke on the KKT system of the AVI (MLCP -> LCP, Schur complement when M is invertible)",
          applies=_too_big)
def avi_lemke(problem, *, tol, max_iter, history=False, callback=None, z0=None, piv_tol=1e-12,
              tie_tol=1e-13, reduction="auto"):
    """AVI by Lemke on its KKT MLCP (module docstring); ``z0`` is ignored. Siconos uses Cao–Ferris."""
    M = _dense(problem.M, "M")
    H = _dense(problem.H, "H")
    q, k = np.asarray(problem.q, float), np.asarray(problem.k, float)
    n = q.shape[0]
    Mm, qm, is_eq = avi_to_mlcp(M, q, H, k)
    tries = [reduction] if reduction != "auto" else ["auto", "split"]
    best = None
    for red in tries:
        Ml, ql, back, how = mlcp_to_lcp(Mm, qm, is_eq, red)
        if best is not None and how == best.info.get("reduction"):
            continue
        kkt_err = lambda x: _kkt_error(Mm, qm, n, back(x))  # noqa: E731
        x, status, nit, hist, msg, info = lemke_lcp(Ml, ql, max_iter=max_iter, piv_tol=piv_tol,
                                                    tie_tol=tie_tol, history=history, callback=callback,
                                                    err_fn=kkt_err, to_x=lambda x: back(x)[:n])
        zl = back(x)
        info.update(reduction=how, lcp_size=Ml.shape[0], multipliers=zl[n:], kkt_error=kkt_err(x))
        out = Outcome({"z": zl[:n]}, status, nit, hist, msg, info)
        if best is None or info["kkt_error"] < best.info["kkt_error"]:
            best = out
        if best.info["kkt_error"] <= tol * 1e-2 or status is Status.CALLBACK_STOP:
            break
    return best


def _kkt_error(Mm, qm, n, zl):
    w = Mm @ zl + qm
    e = np.concatenate([w[:n], np.minimum(zl[n:], w[n:])])
    return float(np.linalg.norm(e)) / (1.0 + float(np.linalg.norm(qm)))


# --------------------------------------------------------------------------------------------
# FC2D
# --------------------------------------------------------------------------------------------

def fc2d_to_lcp(W, q, mu):
    """2D Coulomb friction -> LCP on x = (r_N, beta, lambda) per contact, beta = r_T + mu r_N.

    w = (u_N, u_T + lambda, 2 mu r_N - beta); u = W r + q, r_N = x0, r_T = x1 - mu x0.
    """
    W = np.asarray(W, float)
    nc = mu.shape[0]
    # r = P x with P mapping (rN, beta, lam) -> (rN, rT)
    P = np.zeros((2 * nc, 3 * nc))
    a = np.arange(nc)
    P[2 * a, 3 * a] = 1.0
    P[2 * a + 1, 3 * a] = -mu
    P[2 * a + 1, 3 * a + 1] = 1.0
    # rows: (u_N, u_T) from W P x + q, plus lambda in the tangent row, plus the cone row
    R = np.zeros((3 * nc, 2 * nc))
    R[3 * a, 2 * a] = 1.0
    R[3 * a + 1, 2 * a + 1] = 1.0
    Ml = R @ W @ P
    Ml[3 * a + 1, 3 * a + 2] += 1.0
    Ml[3 * a + 2, 3 * a] = 2.0 * mu
    Ml[3 * a + 2, 3 * a + 1] = -1.0
    ql = R @ q
    return Ml, ql, P


@register("fc2d", "lemke", "Lemke on the 2D Coulomb LCP (r_T = beta - mu r_N, 3 pairs per contact)",
          applies=_too_big)
def fc2d_lemke(problem, *, tol, max_iter, history=False, callback=None, r0=None, piv_tol=1e-12,
               tie_tol=1e-13):
    """FC2D by Lemke on the LCP of Coulomb's law (module docstring); ``r0`` is ignored."""
    W = _dense(problem.W, "W")
    q = np.asarray(problem.q, float)
    Ml, ql, P = fc2d_to_lcp(W, q, np.asarray(problem.mu, float))
    x, status, nit, hist, msg, info = lemke_lcp(Ml, ql, max_iter=max_iter, piv_tol=piv_tol, tie_tol=tie_tol,
                                                history=history, callback=callback,
                                                err_fn=lambda x: problem.error(P @ x), xname="r",
                                                to_x=lambda x: P @ x)
    info["lcp_size"] = Ml.shape[0]
    return Outcome({"r": P @ x}, status, nit, hist, msg, info)
