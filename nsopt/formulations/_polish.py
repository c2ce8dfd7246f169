"""Final polish of a fixed-point iterate: semismooth Newton steps on Coulomb's natural map.

An interior-point solution of the SOCP is accurate to the solver's tolerance, and the fixed point on
s converges linearly; both limit the last digits. Near the solution the contact states (take-off,
stick, slide) are known, so a few Newton steps on the natural map

    F(r) = r - P_K(r - rho û(r)),   û = u + mu ||u_T|| e_N,  u = W r + q   (local problem; rho_a > 0
                                      per contact, 1 / mean diagonal of W_aa: the same zeros as rho = 1)

converge quadratically. The generalised Jacobian of the projection on each Coulomb cone is explicit
(0 in the polar cone, I inside, the derivative of the boundary formula otherwise). Each step is
kept only if the problem's own error decreases (backtracking on ||F||).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..problems._base import matvec
from ..problems.cones import project_coulomb


def projection_jacobian(X, mu):
    """Blocks dP/dx (nc x dim x dim) of the projection on K_mu at the rows of X (nc x dim)."""
    nc, dim = X.shape
    J = np.zeros((nc, dim, dim))
    xN, xT = X[:, 0], X[:, 1:]
    nT = np.sqrt(np.sum(xT * xT, axis=1))
    polar = mu * nT <= -xN
    inside = (~polar) & (nT <= mu * xN)
    side = ~(polar | inside)
    J[inside] = np.eye(dim)
    if np.any(side):
        m = mu[side]
        t = xT[side] / nT[side][:, None]
        c = 1.0 / (1.0 + m * m)
        pN = (m * nT[side] + xN[side]) * c
        k = side.sum()
        B = np.zeros((k, dim, dim))
        B[:, 0, 0] = c
        B[:, 0, 1:] = (m * c)[:, None] * t
        B[:, 1:, 0] = (m * c)[:, None] * t
        tt = t[:, :, None] * t[:, None, :]
        eye = np.eye(dim - 1)[None]
        B[:, 1:, 1:] = m[:, None, None] * ((m * c)[:, None, None] * tt +
                                           (pN / nT[side])[:, None, None] * (eye - tt))
        J[side] = B
    return J


def _blockdiag(blocks):
    nc, dim, _ = blocks.shape
    rows = np.repeat(np.arange(nc * dim).reshape(nc, dim), dim, axis=1).reshape(-1)
    cols = np.tile(np.arange(dim), (nc * dim, 1)).reshape(nc, dim, dim)
    cols = (cols + (np.arange(nc) * dim)[:, None, None]).reshape(-1)
    return sp.csr_matrix((blocks.reshape(-1), (rows, cols)), shape=(nc * dim, nc * dim))


def shift_jacobian(U, mu):
    """Blocks d(mu ||u_T|| e_N)/du (nc x dim x dim): row 0 = (0, mu u_T / ||u_T||), 0 at u_T = 0."""
    nc, dim = U.shape
    S = np.zeros((nc, dim, dim))
    nT = np.sqrt(np.sum(U[:, 1:] ** 2, axis=1))
    ok = nT > 0
    S[ok, 0, 1:] = (mu[ok] / nT[ok])[:, None] * U[ok, 1:]
    return S


REG = 1e-10   # Levenberg-Marquardt shift of the Newton matrix (redundant contacts make J singular)


def _solve(J, rhs):
    n = J.shape[0]
    if sp.issparse(J) and n > 150:
        from scipy.sparse.linalg import splu

        try:
            x = splu(sp.csc_matrix(J + REG * sp.eye(n))).solve(rhs)
            if np.all(np.isfinite(x)):
                return x
        except RuntimeError:
            pass
    Jd = J.toarray() if sp.issparse(J) else np.asarray(J)
    try:
        x = np.linalg.solve(Jd + REG * np.eye(n), rhs)
        if np.all(np.isfinite(x)):
            return x
    except np.linalg.LinAlgError:
        pass
    return np.linalg.lstsq(Jd, rhs, rcond=None)[0]


def polish_local(problem, r, *, tol, max_steps=20):
    """Newton steps on the natural map of a FrictionContact problem from r: with the per-contact
    scaled rho first, then (if that does not reach tol) with rho = 1. An attempt stops when two steps in
    a row gain less than 10% (Newton is then not converging: a contact state is wrong).

    Returns (r, error, steps taken, history of errors)."""
    r1, e1, k1, h1 = _polish_local(problem, r, tol=tol, max_steps=max_steps, scaled=True)
    if e1 <= tol:
        return r1, e1, k1, h1
    r2, e2, k2, h2 = _polish_local(problem, r, tol=tol, max_steps=max_steps, scaled=False)
    if e2 < e1:
        return r2, e2, k1 + k2, h1 + h2
    return r1, e1, k1 + k2, h1 + h2


def _polish_local(problem, r, *, tol, max_steps, scaled):
    W, q, mu, dim, nc = problem.W, np.asarray(problem.q), np.asarray(problem.mu), problem.dim, problem.nc
    n = problem.size

    # rho_a = 1 / (mean diagonal of W's block a): same zeros as rho = 1, a well-scaled Newton matrix
    diag = (W.diagonal() if sp.issparse(W) else np.diag(np.asarray(W))).reshape(nc, dim).mean(axis=1)
    ref = float(np.median(diag[diag > 0])) if np.any(diag > 0) else 1.0
    rho = 1.0 / np.where(diag > 1e-12 * ref, diag, ref) if scaled else np.ones(nc)
    rho_n = np.repeat(rho, dim)

    def resid(r):
        u = matvec(W, r) + q
        U = u.reshape(nc, dim)
        uh = U.copy()
        uh[:, 0] += mu * np.sqrt(np.sum(U[:, 1:] ** 2, axis=1))
        X = r.reshape(nc, dim) - rho[:, None] * uh
        return (r - project_coulomb(X, mu).reshape(-1)), U, X

    r = np.asarray(r, float).copy()
    e = problem.error(r)
    best_r, best_e = r.copy(), e
    hist = []
    Wd = W if sp.issparse(W) else np.asarray(W)
    F, U, X = resid(r)
    steps = n_slow = 0
    for steps in range(1, max_steps + 1):
        if e <= tol:
            steps -= 1
            break
        D = _blockdiag(projection_jacobian(X, mu))
        Sd = _blockdiag(shift_jacobian(U, mu))
        I = sp.eye(n, format="csr")
        R = sp.diags(rho_n)
        if sp.issparse(Wd):
            dU = R @ (I + Sd) @ Wd                 # rho d û / d r
            J = (I - D @ (I - dU)).tocsr()
        else:
            dU = np.asarray(R @ (I + Sd) @ Wd)
            J = np.eye(n) - D @ (np.eye(n) - dU)
        d = _solve(J, -F)
        nF = float(np.linalg.norm(F))
        t, accepted = 1.0, False
        for _ in range(12):                     # backtracking on ||F||
            rn = r + t * d
            Fn, Un, Xn = resid(rn)
            if np.linalg.norm(Fn) < (1 - 1e-4 * t) * nF:
                accepted = True
                break
            t *= 0.5
        if not accepted:
            break
        en = problem.error(rn)
        hist.append(en)
        r, F, U, X = rn, Fn, Un, Xn
        n_slow = n_slow + 1 if en > 0.9 * e else 0
        if en < best_e:     # keep the best by the problem's own error
            best_r, best_e = r.copy(), en
        e = en
        if n_slow >= 2:     # two steps in a row gaining less than 10%: not converging
            break
    return best_r, best_e, steps, hist


def polish_global(problem, r, v, *, tol, max_steps=20):
    """Newton steps on the global system  M v - q - H r = 0,  r - P_K(r - û(H^T v + b)) = 0.

    The Jacobian [[M, -H], [D (I + S') H^T, I - D]] is sparse and factorised by SuperLU (M is never
    inverted). Returns (r, v, error, steps, history)."""
    M = sp.csr_matrix(problem.M)
    H = sp.csr_matrix(problem.H)
    q, b = np.asarray(problem.q), np.asarray(problem.b)
    mu, dim, nc = np.asarray(problem.mu), problem.dim, problem.nc
    nd, m = problem.ndof, problem.size

    def resid(r, v):
        u = H.T @ v + b
        U = u.reshape(nc, dim)
        uh = U.copy()
        uh[:, 0] += mu * np.sqrt(np.sum(U[:, 1:] ** 2, axis=1))
        X = r.reshape(nc, dim) - uh
        F = np.concatenate([M @ v - q - H @ r, r - project_coulomb(X, mu).reshape(-1)])
        return F, U, X

    r, v = np.asarray(r, float).copy(), np.asarray(v, float).copy()
    best = (r.copy(), v.copy(), problem.error(r, v))
    F, U, X = resid(r, v)
    hist, steps = [], 0
    Im = sp.eye(m, format="csr")
    for steps in range(1, max_steps + 1):
        if best[2] <= tol:
            steps -= 1
            break
        D = _blockdiag(projection_jacobian(X, mu))
        Sd = _blockdiag(shift_jacobian(U, mu))
        J = sp.bmat([[M, -H], [D @ (Im + Sd) @ H.T, Im - D]], format="csc")
        from scipy.sparse.linalg import splu

        try:
            d = splu(J + REG * sp.eye(nd + m, format="csc")).solve(-F)
        except RuntimeError:
            break
        if not np.all(np.isfinite(d)):
            break
        nF = float(np.linalg.norm(F))
        t, accepted = 1.0, False
        for _ in range(12):
            vn, rn = v + t * d[:nd], r + t * d[nd:]
            Fn, Un, Xn = resid(rn, vn)
            if np.linalg.norm(Fn) < (1 - 1e-4 * t) * nF:
                accepted = True
                break
            t *= 0.5
        if not accepted:
            break
        r, v, F, U, X = rn, vn, Fn, Un, Xn
        e = problem.error(r, v)
        hist.append(e)
        if e < best[2]:
            best = (r.copy(), v.copy(), e)
    return best[0], best[1], best[2], steps, hist
