"""Numba kernels of the friction-contact semismooth Newton methods (:mod:`nsopt.solvers.newton`).

Per contact ``a`` (``dim`` = 2 or 3, normal first) each formulation gives a residual block
``phi_a(r_a, u_a)`` and an element of its generalised Jacobian as two ``dim x dim`` blocks
``A_a = d phi_a / d r_a`` and ``B_a = d phi_a / d u_a``; with ``u = W r + q`` the Newton matrix is
``J = A + B W`` (A, B block diagonal). ``assemble_csr`` fills J's values on a fixed CSR pattern
(the block rows of W plus the diagonal blocks) so the pattern, and the LU ordering, never change.
"""

from __future__ import annotations

import math

import numpy as np
from .._contract import RUN, stop_code
from .._jit import njit
from .._linalg_kernels import insertion_sort, sort_index, sym_eig_work, sym_eigvals

from . import _gs_kernels as GS
from ._gs_kernels import proj_cone

MU_TINY = 1e-12   # FB: friction coefficients below this are treated as frictionless (r_T = 0)

# ----------------------------------------------------------------------------- Alart-Curnier


@njit(cache=True, error_model="numpy")
def _ac_contact(r, u, mu, rhoN, rhoT, dim, i0, phi):
    """The Alart-Curnier residual of one contact into ``phi[i0:i0 + dim]`` (the one home of the
    formula: :func:`ac_phi`, :func:`ac_jac`), Christensen's radius R = mu max(0, r_N - rho_N u_N).
    Returns (r_N - rho_N u_N, R, ||r_T - rho_T u_T||)."""
    xN = r[i0] - rhoN * u[i0]
    pN = max(0.0, xN)
    phi[i0] = r[i0] - pN
    R = mu * pN
    nx = 0.0
    for k in range(1, dim):
        x = r[i0 + k] - rhoT * u[i0 + k]
        nx += x * x
    nx = math.sqrt(nx)
    if nx <= R and R > 0.0:       # stick
        for k in range(1, dim):
            phi[i0 + k] = rhoT * u[i0 + k]
    elif nx <= R:                 # R = 0 and x_T = 0: phi_T = r_T (= rho_T u_T)
        for k in range(1, dim):
            phi[i0 + k] = r[i0 + k]
    else:                         # slide (or take-off when R = 0)
        s = R / nx
        for k in range(1, dim):
            phi[i0 + k] = r[i0 + k] - s * (r[i0 + k] - rhoT * u[i0 + k])
    return xN, R, nx


@njit(cache=True, error_model="numpy")
def ac_phi(r, u, mu, rhoN, rhoT, dim, phi):
    """Alart-Curnier residual (Christensen's radius mu * max(0, r_N - rho_N u_N)); returns 1/2||phi||^2."""
    nc = mu.shape[0]
    f = 0.0
    for a in range(nc):
        i0 = a * dim
        _ac_contact(r, u, mu[a], rhoN[a], rhoT[a], dim, i0, phi)
        for k in range(dim):
            f += phi[i0 + k] * phi[i0 + k]
    return 0.5 * f


@njit(cache=True, error_model="numpy")
def ac_jac(r, u, mu, rhoN, rhoT, dim, phi, A, B):
    """Alart-Curnier residual and a generalised Jacobian element (blocks A = dphi/dr, B = dphi/du)."""
    nc = mu.shape[0]
    f = 0.0
    for a in range(nc):
        i0 = a * dim
        for k in range(dim):
            for m in range(dim):
                A[a, k, m] = 0.0
                B[a, k, m] = 0.0
        xN, R, nx = _ac_contact(r, u, mu[a], rhoN[a], rhoT[a], dim, i0, phi)
        active = xN > 0.0
        if active:
            B[a, 0, 0] = rhoN[a]
        else:
            A[a, 0, 0] = 1.0
        if nx <= R and R > 0.0:   # stick
            for k in range(1, dim):
                B[a, k, k] = rhoT[a]
        elif nx <= R:               # R = 0 and x_T = 0: phi_T = r_T
            for k in range(1, dim):
                A[a, k, k] = 1.0
        else:                       # slide (or take-off when R = 0)
            s = R / nx
            for k in range(1, dim):
                nk = (r[i0 + k] - rhoT[a] * u[i0 + k]) / nx
                for m in range(1, dim):
                    nm = (r[i0 + m] - rhoT[a] * u[i0 + m]) / nx
                    P = (1.0 if k == m else 0.0) - nk * nm      # (I - n n^T)
                    A[a, k, m] = (1.0 if k == m else 0.0) - s * P
                    B[a, k, m] = s * P * rhoT[a]
                if active:
                    A[a, k, 0] = -mu[a] * nk
                    B[a, k, 0] = mu[a] * rhoN[a] * nk
        for k in range(dim):
            f += phi[i0 + k] * phi[i0 + k]
    return 0.5 * f


# ----------------------------------------------------------------------------- Fischer-Burmeister


@njit(cache=True, error_model="numpy")
def _soc_sqrt(w, dim, z):
    """z = w^(1/2) in the Jordan algebra of the Lorentz cone (w in the cone); returns lambda_min(w)."""
    nw = 0.0
    for k in range(1, dim):
        nw += w[k] * w[k]
    nw = math.sqrt(nw)
    l1 = w[0] - nw
    l2 = w[0] + nw
    s1 = math.sqrt(l1) if l1 > 0.0 else 0.0
    s2 = math.sqrt(l2) if l2 > 0.0 else 0.0
    z[0] = 0.5 * (s1 + s2)
    if nw > 0.0:
        c = 0.5 * (s2 - s1) / nw
        for k in range(1, dim):
            z[k] = c * w[k]
    else:
        for k in range(1, dim):
            z[k] = 0.0
    return l1


@njit(cache=True, error_model="numpy")
def _arrow_solve(z, X, dim, out):
    """out = L_z^{-1} X for the arrow matrix L_z = [[z0, zb^T], [zb, z0 I]] (z interior), X dim x dim."""
    z0 = z[0]
    nz2 = 0.0
    for k in range(1, dim):
        nz2 += z[k] * z[k]
    det = z0 * z0 - nz2
    # L_z^{-1} = 1/(z0 det) [[z0^2, -z0 zb^T], [-z0 zb, det I + zb zb^T]]
    for c in range(dim):
        zx = 0.0
        for k in range(1, dim):
            zx += z[k] * X[k, c]
        out[0, c] = (z0 * X[0, c] - zx) / det
        for k in range(1, dim):
            out[k, c] = (-z0 * z[k] * X[0, c] + det * X[k, c] + z[k] * zx) / (z0 * det)


@njit(cache=True, error_model="numpy")
def _fb_contact(r, u, m, dim, i0, phi, x, y, w, z):
    """The Fischer-Burmeister residual of one contact into ``phi[i0:i0 + dim]`` (the one home of the
    formula: :func:`fb_phi`, :func:`fb_jac`). Frictionless (``m <= MU_TINY``): phi_N = FB(r_N, u_N),
    phi_T = r_T, and returns -1. Else x = (m r_N, r_T), y = (u_N + m||u_T||, m u_T), w = x^2 + y^2
    and z = w^(1/2) (Jordan algebra), phi = x + y - z; returns lambda_min(w) and ||u_T||
    (``x[...]`` etc. filled for the Jacobian)."""
    if m <= MU_TINY:
        phi[i0] = r[i0] + u[i0] - math.sqrt(r[i0] * r[i0] + u[i0] * u[i0])
        for k in range(1, dim):
            phi[i0 + k] = r[i0 + k]
        return -1.0, 0.0
    nuT = 0.0
    for k in range(1, dim):
        nuT += u[i0 + k] * u[i0 + k]
    nuT = math.sqrt(nuT)
    x[0] = m * r[i0]
    y[0] = u[i0] + m * nuT
    for k in range(1, dim):
        x[k] = r[i0 + k]
        y[k] = m * u[i0 + k]
    w[0] = 0.0
    for k in range(dim):
        w[0] += x[k] * x[k] + y[k] * y[k]
    for k in range(1, dim):
        w[k] = 2.0 * (x[0] * x[k] + y[0] * y[k])
    l1 = _soc_sqrt(w, dim, z)
    for k in range(dim):
        phi[i0 + k] = x[k] + y[k] - z[k]
    return l1, nuT


@njit(cache=True, error_model="numpy")
def fb_phi(r, u, mu, dim, phi):
    """Fischer-Burmeister residual on (x, y) = ((mu r_N, r_T), (u_N + mu||u_T||, mu u_T)); returns 1/2||phi||^2.

    x in K_1, y in K_1, x.y = 0  <=>  r in K_mu, u + mu||u_T|| e_N in K_mu^*, r.(u + mu||u_T|| e_N) = 0.
    Frictionless contacts (mu <= MU_TINY): phi_N = FB(r_N, u_N) (scalar), phi_T = r_T.
    """
    nc = mu.shape[0]
    x = np.empty(dim)
    y = np.empty(dim)
    w = np.empty(dim)
    z = np.empty(dim)
    f = 0.0
    for a in range(nc):
        i0 = a * dim
        _fb_contact(r, u, mu[a], dim, i0, phi, x, y, w, z)
        for k in range(dim):
            f += phi[i0 + k] * phi[i0 + k]
    return 0.5 * f


@njit(cache=True, error_model="numpy")
def fb_jac(r, u, mu, dim, phi, A, B):
    """Fischer-Burmeister residual and a generalised Jacobian element (A = dphi/dr, B = dphi/du).

    Where z = (x^2 + y^2)^(1/2) is on the cone boundary the Jacobian of the smoothed function
    (x^2 + y^2 + eps^2 e)^(1/2) is used, eps small: an approximation of an element of the
    B-subdifferential (Fukushima, Luo & Tseng 2002; Pan & Chen).
    """
    nc = mu.shape[0]
    x = np.empty(dim)
    y = np.empty(dim)
    w = np.empty(dim)
    z = np.empty(dim)
    Lx = np.empty((dim, dim))
    Ly = np.empty((dim, dim))
    Jx = np.empty((dim, dim))
    Jy = np.empty((dim, dim))
    D = np.zeros((dim, dim))
    f = 0.0
    for a in range(nc):
        i0 = a * dim
        m = mu[a]
        for k in range(dim):
            for l in range(dim):
                A[a, k, l] = 0.0
                B[a, k, l] = 0.0
        l1, nuT = _fb_contact(r, u, m, dim, i0, phi, x, y, w, z)
        if m <= MU_TINY:
            rn, un = r[i0], u[i0]
            s = math.sqrt(rn * rn + un * un)
            if s > 1e-300:
                A[a, 0, 0] = 1.0 - rn / s
                B[a, 0, 0] = 1.0 - un / s
            else:
                A[a, 0, 0] = 1.0 - 1.0 / math.sqrt(2.0)
                B[a, 0, 0] = 1.0 - 1.0 / math.sqrt(2.0)
            for k in range(1, dim):
                A[a, k, k] = 1.0
        else:
            thr = 1e-10 * w[0]
            if l1 <= thr:   # boundary or zero: smoothed Jacobian
                eps2 = max(thr, 1e-20) if w[0] > 0.0 else 1e-20
                w[0] += eps2
                _soc_sqrt(w, dim, z)
            # arrow matrices
            for k in range(dim):
                for l in range(dim):
                    Lx[k, l] = 0.0
                    Ly[k, l] = 0.0
            for k in range(dim):
                Lx[k, k] = x[0]
                Ly[k, k] = y[0]
            for k in range(1, dim):
                Lx[0, k] = x[k]
                Lx[k, 0] = x[k]
                Ly[0, k] = y[k]
                Ly[k, 0] = y[k]
            _arrow_solve(z, Lx, dim, Jx)
            _arrow_solve(z, Ly, dim, Jy)
            for k in range(dim):
                for l in range(dim):
                    Jx[k, l] = (1.0 if k == l else 0.0) - Jx[k, l]
                    Jy[k, l] = (1.0 if k == l else 0.0) - Jy[k, l]
            # x = S r, S = diag(mu, 1, ..): A = Jx S
            for k in range(dim):
                A[a, k, 0] = Jx[k, 0] * m
                for l in range(1, dim):
                    A[a, k, l] = Jx[k, l]
            # y = T uhat(u), T = diag(1, mu, ..), d uhat/du = [[1, mu uT^T/||uT||], [0, I]]
            for k in range(dim):
                for l in range(dim):
                    D[k, l] = 0.0
            D[0, 0] = 1.0
            for k in range(1, dim):
                D[k, k] = m
                if nuT > 0.0:
                    D[0, k] = m * u[i0 + k] / nuT
            for k in range(dim):
                for l in range(dim):
                    s = 0.0
                    for p in range(dim):
                        s += Jy[k, p] * D[p, l]
                    B[a, k, l] = s
        for k in range(dim):
            f += phi[i0 + k] * phi[i0 + k]
    return 0.5 * f


# ----------------------------------------------------------------------------- assembly, sweeps


@njit(cache=True, error_model="numpy")
def assemble_csr(Wdata, Windptr, dim, A, B, wpos, dpos, Jindptr, Jdata):
    """J = A + B W on J's CSR pattern (rows of a contact share one column pattern).

    ``wpos[p]`` = offset, within its contact's row pattern, of W's p-th stored entry;
    ``dpos[a*dim + l]`` = offset of column a*dim + l (the diagonal block) in contact a's pattern.
    """
    nc = A.shape[0]
    Jdata[:] = 0.0
    for a in range(nc):
        for l in range(dim):
            row = a * dim + l
            base = Jindptr[row]
            for m in range(dim):
                bl = B[a, l, m]
                if bl != 0.0:
                    wr = a * dim + m
                    for p in range(Windptr[wr], Windptr[wr + 1]):
                        Jdata[base + wpos[p]] += bl * Wdata[p]
            for m in range(dim):
                Jdata[base + dpos[a * dim + m]] += A[a, l, m]


@njit(cache=True)
def csr_pattern(Windptr, Windices, nc, dim):
    """The CSR pattern of J = A + B W (A, B block diagonal): each row of contact a holds the union of
    the columns of a's ``dim`` rows of W and of a's diagonal block, ascending (W's rows sorted).
    Returns (indptr, indices, wpos, dpos) as :func:`assemble_csr` reads them."""
    n = nc * dim
    mark = np.full(n, -1, dtype=np.int64)
    clen = np.zeros(nc, dtype=np.int64)
    for a in range(nc):                 # the size of each contact's union
        c = 0
        for l in range(dim):
            i = a * dim + l
            if mark[i] != a:
                mark[i] = a
                c += 1
            for p in range(Windptr[i], Windptr[i + 1]):
                j = Windices[p]
                if mark[j] != a:
                    mark[j] = a
                    c += 1
        clen[a] = c
    indptr = np.empty(n + 1, dtype=np.int64)
    indptr[0] = 0
    for i in range(n):
        indptr[i + 1] = indptr[i] + clen[i // dim]
    indices = np.empty(indptr[n], dtype=np.int32)
    wpos = np.empty(Windptr[n], dtype=np.int64)
    dpos = np.empty(n, dtype=np.int64)
    mark[:] = -1
    where = np.empty(n, dtype=np.int64)
    for a in range(nc):
        base = indptr[a * dim]
        c = 0
        for l in range(dim):
            i = a * dim + l
            if mark[i] != a:
                mark[i] = a
                indices[base + c] = i
                c += 1
            for p in range(Windptr[i], Windptr[i + 1]):
                j = Windices[p]
                if mark[j] != a:
                    mark[j] = a
                    indices[base + c] = j
                    c += 1
        row = indices[base:base + c]
        sort_index(row)
        for k in range(c):
            where[row[k]] = k
        for l in range(1, dim):         # the contact's other rows: the same columns
            b2 = indptr[a * dim + l]
            for k in range(c):
                indices[b2 + k] = row[k]
        for l in range(dim):
            i = a * dim + l
            dpos[i] = where[i]
            for p in range(Windptr[i], Windptr[i + 1]):
                wpos[p] = where[Windices[p]]
    return indptr, indices, wpos, dpos


@njit(cache=True, error_model="numpy")
def reduce_csc(Jindptr, Jindices, Jdata, dim, A, B, order, shift, phi, d, newidx, Mptr, Mind, Mdata, b, pos, state):
    """The Newton system J d = -phi (J + shift I, J on its CSR pattern) without its identity rows.

    A contact whose rows of J are the identity (``B_a = 0`` and ``A_a = I``: an open contact of
    Alart-Curnier) has ``d_a = -phi_a / (1 + shift)``, set here in ``d``; its columns go to the right
    side. The other unknowns, in the order ``order`` (a fill-reducing order of the whole pattern),
    give the CSC matrix ``M`` (``Mptr``, ``Mind``, ``Mdata``; row indices ascending in each column)
    and the right side ``b`` of ``M x = b``; ``newidx[j]`` is the place of unknown j in x (-1 when
    eliminated). ``state`` = (m of the last call, or -1 before the first): when the same contacts
    are left out as in the last call, ``newidx`` and ``Mptr`` are kept. Returns the size m of ``M``.
    """
    n = Jindptr.shape[0] - 1
    nc = A.shape[0]
    same = state[0] >= 0
    for a in range(nc):
        triv = True
        for k in range(dim):
            for m in range(dim):
                if B[a, k, m] != 0.0 or A[a, k, m] != (1.0 if k == m else 0.0):
                    triv = False
        pos[a] = 1 if triv else 0
        if same and (newidx[a * dim] < 0) != triv:
            same = False
    scale = 1.0 / (1.0 + shift)
    if same:
        m = state[0]
        for j in range(n):
            if newidx[j] < 0:
                d[j] = -phi[j] * scale
    else:
        for a in range(nc):
            for k in range(dim):
                newidx[a * dim + k] = -pos[a]
        m = 0
        for t in range(n):
            j = order[t]
            if newidx[j] < 0:
                d[j] = -phi[j] * scale
            else:
                newidx[j] = m
                m += 1
        for c in range(m + 1):
            Mptr[c] = 0
        for i in range(n):
            if newidx[i] >= 0:
                for p in range(Jindptr[i], Jindptr[i + 1]):
                    c = newidx[Jindices[p]]
                    if c >= 0:
                        Mptr[c + 1] += 1
        for c in range(m):
            Mptr[c + 1] += Mptr[c]
        state[0] = m
    for c in range(m):
        pos[c] = Mptr[c]
    for t in range(n):          # rows in their new order: ascending row indices in each column
        i = order[t]
        ri = newidx[i]
        if ri < 0:
            continue
        s = -phi[i]
        for p in range(Jindptr[i], Jindptr[i + 1]):
            j = Jindices[p]
            c = newidx[j]
            v = Jdata[p]
            if c >= 0:
                if j == i:
                    v += shift
                k = pos[c]
                Mind[k] = ri
                Mdata[k] = v
                pos[c] = k + 1
            else:
                s -= v * d[j]
        b[ri] = s
    return m


@njit(cache=True, error_model="numpy")
def fc_projected_sweeps(Wdata, Windices, Windptr, q, mu, dim, rho, r, nsweeps, inner):
    """Projected Gauss-Seidel sweeps on u = W r + q (in place on r): per contact, ``inner`` projected
    fixed-point steps r_a <- P_K(r_a - rho_a (u_a + mu ||u_T,a|| e_N)) with u_a kept exact."""
    nc = mu.shape[0]
    ua = np.empty(dim)
    x = np.empty(dim)
    Waa = np.empty((dim, dim))
    for _ in range(nsweeps):
        for a in range(nc):
            i0 = a * dim
            for l in range(dim):
                s = q[i0 + l]
                for m in range(dim):
                    Waa[l, m] = 0.0
                for p in range(Windptr[i0 + l], Windptr[i0 + l + 1]):
                    j = Windices[p]
                    s += Wdata[p] * r[j]
                    if i0 <= j < i0 + dim:
                        Waa[l, j - i0] = Wdata[p]
                ua[l] = s
            for _it in range(inner):
                nT = 0.0
                for k in range(1, dim):
                    nT += ua[k] * ua[k]
                nT = math.sqrt(nT)
                x[0] = r[i0] - rho[a] * (ua[0] + mu[a] * nT)
                for k in range(1, dim):
                    x[k] = r[i0 + k] - rho[a] * ua[k]
                proj_cone(dim, mu[a], x, x)
                ch = 0.0
                for k in range(dim):
                    d = x[k] - r[i0 + k]
                    ch += d * d
                    for l in range(dim):
                        ua[l] += Waa[l, k] * d
                    r[i0 + k] = x[k]
                if ch == 0.0:
                    break


# ----------------------------------------------------------------------------- small dense systems


@njit(cache=True)
def contact_matrix(A, B, W, J):
    """J = A + B W of a dense W (n, n) into J (n, n), A and B block diagonal ((nc, dim, dim) blocks): the
    Newton matrix of the friction contacts (:func:`nsopt.solvers.newton_system.dense_contact_matrix`,
    :func:`dense_direction`). Each entry of B W is summed over the block's columns in order from 0.0, as
    NumPy's ``einsum`` sums it (the same bits), a row of J at a time."""
    nc, dim = A.shape[0], A.shape[1]
    n = W.shape[1]
    for a in range(nc):
        for l in range(dim):
            i = a * dim + l
            for j in range(n):
                J[i, j] = 0.0
            for m in range(dim):
                b = B[a, l, m]
                r = a * dim + m
                for j in range(n):
                    J[i, j] += b * W[r, j]
            for m in range(dim):
                J[i, a * dim + m] += A[a, l, m]


@njit(cache=True, error_model="numpy")
def dense_direction(A, B, W, phi, shifts, d):
    """The Newton direction of a small dense system: J d = -phi with J = A + B W (A, B block
    diagonal, ``dim x dim`` blocks, W dense: :func:`contact_matrix`), retried with J + s I for the next
    ``shifts`` when J is singular or d not finite. Returns True with d set, else False."""
    n = phi.shape[0]
    J = np.empty((n, n))
    contact_matrix(A, B, W, J)
    LU = np.empty((n, n))
    for s in shifts:
        for i in range(n):
            for j in range(n):
                LU[i, j] = J[i, j]
            LU[i, i] += s
            d[i] = -phi[i]
        if GS.gauss_solve(LU, d, d, 0.0):
            ok = True
            for i in range(n):
                if not math.isfinite(d[i]):
                    ok = False
            if ok:
                return True
    return False


@njit(cache=True)
def rho_of_blocks(D, rho_auto, rho_n, rho_t, rhoN, rhoT, rho_pgs):
    """The split spectral parameters of the Newton methods, per contact, from the diagonal blocks D
    (nc, dim, dim) of W: ``rho_pgs`` = 1 / lambda_max of the symmetric part of W_aa (a non-positive
    one replaced by the median of the positive ones, 1 when there is none); with ``rho_auto``,
    ``rhoN`` = 1 / W_aa[N, N] and ``rhoT`` = 1 / lambda_max of the symmetric part of W_aa[T, T] (each
    falling back on lambda_max(W_aa) when not positive), else ``rho_n`` and ``rho_t``. The one home
    of these numbers (:func:`nsopt.solvers.newton._rho_from_blocks` and :func:`dense_setup`); the
    eigenvalues by LAPACK's ``dsyevd`` as NumPy's ``eigvalsh`` (:func:`nsopt._linalg_kernels.sym_eigvals`: the same
    bits; a hard problem such as RockPile_tob1 follows another Newton path when rho moves by 1e-15, and ends
    elsewhere)."""
    nc, dim = D.shape[0], D.shape[1]
    lmax = np.empty(nc)
    S = np.empty((dim, dim))
    T = np.empty((dim - 1, dim - 1)) if dim > 1 else np.empty((1, 1))
    w = np.empty(dim)
    ch, ints, work, iwork = sym_eig_work()
    npos = 0
    for a in range(nc):
        for i in range(dim):
            for j in range(dim):
                S[i, j] = 0.5 * (D[a, i, j] + D[a, j, i])
        sym_eigvals(S, w, ch, ints, work, iwork)
        lmax[a] = w[dim - 1]
        if lmax[a] > 0.0:
            npos += 1
    if npos < nc:
        fill = 1.0
        if npos:
            pos = np.empty(npos)
            k = 0
            for a in range(nc):
                if lmax[a] > 0.0:
                    pos[k] = lmax[a]
                    k += 1
            insertion_sort(pos)         # then the median as np.median takes it
            h = npos // 2
            fill = pos[h] if npos % 2 else 0.5 * (pos[h - 1] + pos[h])
        for a in range(nc):
            if not lmax[a] > 0.0:
                lmax[a] = fill
    for a in range(nc):
        rho_pgs[a] = 1.0 / lmax[a]
        if rho_auto:
            wN = D[a, 0, 0]
            rhoN[a] = 1.0 / (wN if wN > 0.0 else lmax[a])
            lT = lmax[a]
            if dim > 1:
                for i in range(dim - 1):
                    for j in range(dim - 1):
                        T[i, j] = 0.5 * (D[a, 1 + i, 1 + j] + D[a, 1 + j, 1 + i])
                sym_eigvals(T, w, ch, ints, work, iwork)
                e = w[dim - 2]
                if e > 0.0:
                    lT = e
            rhoT[a] = 1.0 / lT
        else:
            rhoN[a] = rho_n
            rhoT[a] = rho_t


def dense_layout(n, nc):
    """The packed arrays of a small dense system (:func:`dense_setup`, :func:`newton_dense`):
    ``P`` = [rho_N | rho_T | rho_pgs | gamma per contact (nc each) | gamma per row (n) | W's nonzeros
    by rows (up to n^2)], ``Q`` = [CSR row pointers (n + 1) | column indices (up to n^2)], and the
    views of P by :func:`dense_views`."""
    return np.empty(4 * nc + n + n * n), np.empty(n + 1 + n * n, dtype=np.int64)


def dense_views(P, n, nc):
    """The views (rhoN, rhoT, rho_pgs, gamma_c, gamma) of :func:`dense_layout`'s ``P``."""
    return P[:nc], P[nc:2 * nc], P[2 * nc:3 * nc], P[3 * nc:4 * nc], P[4 * nc:4 * nc + n]


@njit(cache=True)
def dense_setup(W, dim, mu, rho_auto, rho_n, rho_t, scale_auto, scale, P, Q):
    """What :class:`nsopt.solvers.newton._LocalFrictionSystem` computes for a large system, in one call for a small
    dense W, into the packed ``P``, ``Q`` (:func:`dense_layout`): rho (:func:`rho_of_blocks` on W's
    diagonal blocks), the Fischer–Burmeister scale (``scale_auto``: the mean of rho_pgs, else
    ``scale``) per contact and per row, and W's nonzeros by rows (CSR, columns ascending). Returns
    the mean of 1 / rho_pgs (1.0 without contacts)."""
    nc = mu.shape[0]
    n = W.shape[0]
    rhoN, rhoT, rho_pgs, gamma_c = P[:nc], P[nc:2 * nc], P[2 * nc:3 * nc], P[3 * nc:4 * nc]
    gamma = P[4 * nc:4 * nc + n]
    D = np.empty((nc, dim, dim))
    for a in range(nc):
        for i in range(dim):
            for j in range(dim):
                D[a, i, j] = W[a * dim + i, a * dim + j]
    rho_of_blocks(D, rho_auto, rho_n, rho_t, rhoN, rhoT, rho_pgs)
    g = np.mean(rho_pgs) if scale_auto else scale
    for a in range(nc):
        gamma_c[a] = g
        for i in range(dim):
            gamma[a * dim + i] = g
    o = 4 * nc + n
    k = 0
    Q[0] = 0
    for i in range(n):
        for j in range(n):
            if W[i, j] != 0.0:
                P[o + k] = W[i, j]
                Q[n + 1 + k] = j
                k += 1
        Q[i + 1] = k
    return np.mean(1.0 / rho_pgs) if nc else 1.0


# ----------------------------------------------------------------------------- the whole loop, small dense W

# istate of newton_dense: iterations, line search (0 armijo, 1 nonmonotone, 2 none), fallback steps,
# singular matrices, line-search switches, regularised steps, merits kept, bests kept, stop
NEWTON_RUN, NEWTON_STOP, NEWTON_STALLED, NEWTON_FRESH = 0, 1, 2, -1


@njit(cache=True, error_model="numpy")
def _dense_search(fb, W, r, u, d, f0, fref, ls, mu, rhoN, rhoT, gamma, dim, Wd, rt, ut, phi_t, tmp):
    """Backtracking on the merit (Fischer–Burmeister of (r, gamma u) when ``fb``, else Alart–Curnier)
    along d (``newton._search``): (accepted, t, merit at t)."""
    n = r.shape[0]
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += W[i, j] * d[j]
        Wd[i] = s
    if ls == 2:
        return True, 1.0, f0
    return backtrack(fb, r, u, d, Wd, f0, fref, mu, rhoN, rhoT, gamma, dim, rt, ut, phi_t, tmp)


@njit(cache=True, error_model="numpy")
def backtrack(fb, r, u, d, Wd, f0, fref, mu, rhoN, rhoT, gamma, dim, rt, ut, phi_t, tmp):
    """Armijo backtracking against ``fref`` on the merit at (r + t d, u + t Wd), t = 1, 1/2, ... down
    to 1e-10 (Fischer–Burmeister of (r, gamma u) when ``fb``, else Alart–Curnier): (accepted, t,
    merit at t). The line search of both Newton loops (``_dense_search``, ``newton._search``)."""
    n = r.shape[0]
    t = 1.0
    while t >= 1e-10:
        for i in range(n):
            rt[i] = r[i] + t * d[i]
            ut[i] = u[i] + t * Wd[i]
        if fb:
            for i in range(n):
                tmp[i] = gamma[i] * ut[i]
            ft = fb_phi(rt, tmp, mu, dim, phi_t)
        else:
            ft = ac_phi(rt, ut, mu, rhoN, rhoT, dim, phi_t)
        if math.isfinite(ft) and ft <= fref - 1e-4 * t * 2.0 * f0:
            return True, t, ft
        t *= 0.5
    return False, 0.0, f0


@njit(cache=True)
def _measure_best(W, q, mu, qnorm, best_r, u, fstate, x, px):
    """u = W best_r + q by ``FrictionContact.u``'s own product (``dense_affine``, the same bits:
    W and q are the problem's values) and its error (``fstate[2]``)."""
    GS.dense_affine(W, best_r, q, u)
    fstate[2] = GS.fc_error(q.shape[0] // mu.shape[0] if mu.shape[0] else 1, best_r, u, mu, qnorm, x, px)


def dense_state(n, memory, nb, nc=1):
    """The packed per-solve state of :func:`newton_dense`: ``istate`` (int64, 9) and ``S`` = [fstate
    (3) | best (1) | merits (``memory``) | bests (``nb``) | best_r (n)], with the views (fstate, best,
    best_r) of S, and the kernel's work arrays ``Wk`` (:func:`_dense_work`: made once with the state,
    not at every call)."""
    S = np.empty(4 + memory + nb + n)
    o = 4 + memory + nb
    dim = n // nc if nc else 1
    return np.zeros(10, dtype=np.int64), S, (S[:3], S[3:4], S[o:o + n]), np.empty(3 * nc * dim * dim + 8 * n + 2 * dim + 6)


@njit(cache=True)
def _dense_work(Wk, nc, dim, n):
    """The work arrays of :func:`newton_dense`, views of ``Wk`` (:func:`dense_state`): the Newton
    blocks A, B, Ae (nc, dim, dim), phi, phi_t, d, d2, tmp, rt, ut, Wd (n), x, px (dim), and the room
    of the two lists of shifts (6)."""
    m = nc * dim * dim
    A = Wk[:m].reshape((nc, dim, dim))
    B = Wk[m:2 * m].reshape((nc, dim, dim))
    Ae = Wk[2 * m:3 * m].reshape((nc, dim, dim))
    o = 3 * m
    phi, phi_t, d, d2 = Wk[o:o + n], Wk[o + n:o + 2 * n], Wk[o + 2 * n:o + 3 * n], Wk[o + 3 * n:o + 4 * n]
    tmp, rt, ut, Wd = Wk[o + 4 * n:o + 5 * n], Wk[o + 5 * n:o + 6 * n], Wk[o + 6 * n:o + 7 * n], Wk[o + 7 * n:o + 8 * n]
    o += 8 * n
    return A, B, Ae, phi, phi_t, d, d2, tmp, rt, ut, Wd, Wk[o:o + dim], Wk[o + dim:o + 2 * dim], Wk[o + 2 * dim:o + 2 * dim + 6]


@njit(cache=True, error_model="numpy")
def newton_dense(fb, W, q, mu, P, Q, qnorm, wscale, r, u, istate, S, Wk, memory, nsteps, tol, max_iter, stall, switch,
                 reg, reg_step, errs):
    """At most ``nsteps`` iterations of the globalised semismooth Newton method of
    :func:`nsopt.solvers.newton._newton_local` on a small dense W (no proximal term), in place on
    r and u = Wr + q, for one chunk of the iteration contract: the same steps (nonmonotone Armijo
    on the last 5 merits, the regularised retry, projected Gauss–Seidel when the line search
    fails, monotone/nonmonotone switches every ``switch`` iterations, the stall test over ``stall``
    iterations, -1: none) in one compiled call. ``P``, ``Q``: the system (:func:`dense_layout`);
    ``S``, ``istate``: the state (:func:`dense_state`, ``memory`` merits); ``Wk``: its work arrays. ``errs[k]``: the error
    (the Siconos measure, its one compiled home) after iteration k of the chunk (when ``errs`` is not
    empty); ``best_r``/``best[0]``: the
    best iterate (out). ``fstate[0]``: the error of the current iterate (in/out); ``merits``,
    ``bests``: rings of the last merits and best errors (counts in istate[6], istate[7]). Called with
    istate[8] = NEWTON_FRESH (and istate[1] the line search) it resets the state, sets u = Wr + q and
    the start's error (``fstate[1]``; it stops there when the start is solved, not finite or max_iter
    is 0, as the monitor does). Stops early at error <= tol, a non-finite error or ``max_iter`` iterations in all
    (istate[8] = NEWTON_STOP, istate[9] the contract's code: :func:`nsopt._contract.stop_code`), or on a
    stall (NEWTON_STALLED). At NEWTON_STOP, u is the best
    iterate's, as ``FrictionContact.u`` computes it, and ``fstate[2]`` its error (both of the
    Solution: :func:`_measure_best`). Returns the iterations done."""
    nc = mu.shape[0]
    n = r.shape[0]
    dim = n // nc if nc else 1
    rhoN, rhoT, rho_pgs, gamma_c, gamma = P[:nc], P[nc:2 * nc], P[2 * nc:3 * nc], P[3 * nc:4 * nc], P[4 * nc:4 * nc + n]
    o, nz = 4 * nc + n, Q[n]          # W's packed CSR (dense_layout): data, indices, row pointers
    csr_data, csr_ind, csr_ptr = P[o:o + nz], Q[n + 1:n + 1 + nz], Q[:n + 1]
    fstate, best = S[:3], S[3:4]
    merits = S[4:4 + memory]
    bests = S[4 + memory:S.shape[0] - n]
    best_r = S[S.shape[0] - n:]
    A, B, Ae, phi, phi_t, d, d2, tmp, rt, ut, Wd, x, px, sh = _dense_work(Wk, nc, dim, n)
    sh[0], sh[1], sh[2] = 0.0, 1e-10, 1e-6
    sh[3], sh[4], sh[5] = 0.0, 1e-10, 1e-6
    shifts0 = sh[:1] if reg else sh[:3]        # (a plain singular matrix goes to the regularised one)
    shifts1 = sh[3:]
    nm_cap = merits.shape[0]
    nb_cap = bests.shape[0]
    keep = errs.shape[0] > 0      # (empty: the errors are not kept, no history or callback wants them)
    done = 0
    if istate[8] == NEWTON_FRESH:      # the start: u = Wr + q, its error (fstate[0], fstate[1]), the first best
        istate[0] = 0
        for i in range(2, 7):
            istate[i] = 0
        best[0] = np.inf
        GS.dense_affine(W, r, q, u)
        err = GS.fc_error(dim, r, u, mu, qnorm, x, px)
        fstate[0] = err
        fstate[1] = err
        bests[0] = err
        istate[7] = 1
        istate[8] = NEWTON_RUN
        if err < best[0]:
            best[0] = err
            for i in range(n):
                best_r[i] = r[i]
        istate[9] = stop_code(err, tol, 0, max_iter)
        if istate[9] != RUN:
            istate[8] = NEWTON_STOP
            _measure_best(W, q, mu, qnorm, best_r, u, fstate, x, px)
            return 0
    while done < nsteps:
        k = istate[0]
        ls = istate[1]
        err = fstate[0]      # the error of the current iterate
        if fb:
            for i in range(n):
                tmp[i] = gamma[i] * u[i]
            f0 = fb_jac(r, tmp, mu, dim, phi, A, B)
            for a in range(nc):
                for l in range(dim):
                    for m in range(dim):
                        B[a, l, m] *= gamma_c[a]
        else:
            f0 = ac_jac(r, u, mu, rhoN, rhoT, dim, phi, A, B)
        merits[istate[6] % nm_cap] = f0
        istate[6] += 1
        fref = f0
        if ls == 1:
            for j in range(min(istate[6], nm_cap)):
                fref = max(fref, merits[(istate[6] - 1 - j) % nm_cap])
        accepted, t, ft = False, 0.0, f0
        if dense_direction(A, B, W, phi, shifts0, d):
            accepted, t, ft = _dense_search(fb, W, r, u, d, f0, fref, ls, mu, rhoN, rhoT, gamma, dim, Wd, rt, ut,
                                            phi_t, tmp)
        else:
            istate[3] += 1
        use2 = False
        if reg and (not accepted or t < reg_step):
            sg = reg * wscale * min(err, 1.0)
            for a in range(nc):
                for l in range(dim):
                    for m in range(dim):
                        Ae[a, l, m] = A[a, l, m] + sg * B[a, l, m]
            if dense_direction(Ae, B, W, phi, shifts1, d2):
                a2, t2, f2 = _dense_search(fb, W, r, u, d2, f0, fref, ls, mu, rhoN, rhoT, gamma, dim, Wd, rt, ut,
                                           phi_t, tmp)
                if a2 and (not accepted or f2 < ft):
                    accepted, t, ft, use2 = True, t2, f2, True
                    istate[5] += 1
        if accepted:
            dd = d2 if use2 else d
            for i in range(n):
                r[i] = r[i] + t * dd[i]
        else:
            istate[2] += 1
            istate[6] = 0
            fc_projected_sweeps(csr_data, csr_ind, csr_ptr, q, mu, dim, rho_pgs, r, 3, 10)
        GS.dense_affine(W, r, q, u)
        err = GS.fc_error(dim, r, u, mu, qnorm, x, px)
        k += 1
        istate[0] = k
        fstate[0] = err
        if keep:
            errs[done] = err
        done += 1
        if err < best[0]:
            best[0] = err
            for i in range(n):
                best_r[i] = r[i]
        istate[9] = stop_code(err, tol, k, max_iter)
        if istate[9] != RUN:
            istate[8] = NEWTON_STOP
            _measure_best(W, q, mu, qnorm, best_r, u, fstate, x, px)
            return done
        prev = bests[(istate[7] - 1) % nb_cap]
        best_err = min(prev, err)
        bests[istate[7] % nb_cap] = best_err
        istate[7] += 1
        nb = istate[7]
        if stall >= 0 and nb > stall and best_err > 0.5 * bests[(nb - 1 - stall) % nb_cap]:
            istate[8] = NEWTON_STALLED
            return done
        if switch and k % switch == 0 and nb > switch and best_err > 0.5 * bests[(nb - 1 - switch) % nb_cap] \
                and ls != 2:
            istate[1] = 0 if ls == 1 else 1
            istate[6] = 0
            istate[4] += 1
    return done


# ----------------------------------------------------------------------------- Newton systems in the space of the dofs


@njit(cache=True)
def body_pattern(Hptr, Hind, Hdata, nc, dim, nv):
    r"""The pattern of :math:`S = M + H^\top C H` (C block diagonal, ``dim x dim`` per contact) for
    the rows H (``nc * dim`` x ``nv``, CSR): contact a's columns ``cols[cptr[a]:cptr[a+1]]`` (the union
    of its rows' columns, ascending; k of them) and its rows on them as a dense ``dim x k`` block
    (row-major in ``Hblk[dim * cptr[a]:dim * cptr[a+1]]``), S's CSC pattern (``Sptr``, ``Sind``; rows
    ascending, the diagonal always stored), ``dpos[c]`` = the place of S's entry (c, c) and ``spos`` =
    for each contact its ``k x k`` places in S's data (``spos[soff[a] + i * k + j]``: row ``cols[i]``,
    column ``cols[j]``). Returns (cptr, cols, Hblk, Sptr, Sind, dpos, soff, spos)."""
    mark = np.full(nv, -1, dtype=np.int64)
    cptr = np.zeros(nc + 1, dtype=np.int64)
    for a in range(nc):
        c = 0
        for p in range(Hptr[a * dim], Hptr[a * dim + dim]):
            j = Hind[p]
            if mark[j] != a:
                mark[j] = a
                c += 1
        cptr[a + 1] = cptr[a] + c
    cols = np.empty(cptr[nc], dtype=np.int64)
    Hblk = np.zeros(dim * cptr[nc])
    where = np.empty(nv, dtype=np.int64)
    mark[:] = -1
    ccount = np.zeros(nv + 1, dtype=np.int64)      # the contacts at each column (CSC of the incidence)
    for a in range(nc):
        c = cptr[a]
        for p in range(Hptr[a * dim], Hptr[a * dim + dim]):
            j = Hind[p]
            if mark[j] != a:
                mark[j] = a
                cols[c] = j
                c += 1
        k = c - cptr[a]
        row = cols[cptr[a]:c]
        sort_index(row)
        for t in range(k):
            where[row[t]] = t
            ccount[row[t] + 1] += 1
        o = dim * cptr[a]
        for l in range(dim):
            for p in range(Hptr[a * dim + l], Hptr[a * dim + l + 1]):
                Hblk[o + l * k + where[Hind[p]]] += Hdata[p]
    for j in range(nv):
        ccount[j + 1] += ccount[j]
    at = ccount[:nv].copy()
    cont = np.empty(ccount[nv], dtype=np.int64)     # (contact, and j's place among its columns)
    cpl = np.empty(ccount[nv], dtype=np.int64)
    for a in range(nc):
        for t in range(cptr[a], cptr[a + 1]):
            j = cols[t]
            cont[at[j]] = a
            cpl[at[j]] = t - cptr[a]
            at[j] += 1
    # column j of S: j itself and the columns of every contact at j, ascending (at most 1 + the sum of
    # those contacts' column counts, gathered in that room, then packed)
    room = np.zeros(nv + 1, dtype=np.int64)
    for j in range(nv):
        c = 1
        for t in range(ccount[j], ccount[j + 1]):
            c += cptr[cont[t] + 1] - cptr[cont[t]]
        room[j + 1] = room[j] + c
    tmp = np.empty(room[nv], dtype=np.int32)
    Sptr = np.zeros(nv + 1, dtype=np.int64)
    mark[:] = -1
    for j in range(nv):
        b = room[j]
        c = 1
        mark[j] = j
        tmp[b] = j
        for t in range(ccount[j], ccount[j + 1]):
            a = cont[t]
            for u in range(cptr[a], cptr[a + 1]):
                i = cols[u]
                if mark[i] != j:
                    mark[i] = j
                    tmp[b + c] = i
                    c += 1
        Sptr[j + 1] = Sptr[j] + c
    Sind = np.empty(Sptr[nv], dtype=np.int32)
    dpos = np.empty(nv, dtype=np.int64)
    soff = np.zeros(nc + 1, dtype=np.int64)
    for a in range(nc):
        k = cptr[a + 1] - cptr[a]
        soff[a + 1] = soff[a] + k * k
    spos = np.empty(soff[nc], dtype=np.int64)
    for j in range(nv):
        b = Sptr[j]
        c = Sptr[j + 1] - b
        Sind[b:b + c] = tmp[room[j]:room[j] + c]
        sort_index(Sind[b:b + c])
        for t in range(c):
            where[Sind[b + t]] = b + t
        dpos[j] = where[j]
        for t in range(ccount[j], ccount[j + 1]):      # each contact at j: its entries of column j
            a = cont[t]
            jj = cpl[t]
            k = cptr[a + 1] - cptr[a]
            for ii in range(k):
                spos[soff[a] + ii * k + jj] = where[cols[cptr[a] + ii]]
    return cptr, cols, Hblk, Sptr, Sind, dpos, soff, spos


@njit(cache=True)
def body_values(Hptr, Hind, Hdata, cptr, cols, dim, nv, Hblk):
    """The dense blocks ``Hblk`` of :func:`body_pattern` for new values ``Hdata`` of rows H whose
    pattern (``Hptr``, ``Hind``) is the one ``cptr`` and ``cols`` were found for (a new step of a
    pile whose contacts kept their bodies): the same numbers as :func:`body_pattern`'s."""
    where = np.empty(nv, dtype=np.int64)
    Hblk[:] = 0.0
    nc = cptr.shape[0] - 1
    for a in range(nc):
        c0 = cptr[a]
        k = cptr[a + 1] - c0
        for t in range(k):
            where[cols[c0 + t]] = t
        o = dim * c0
        for l in range(dim):
            for p in range(Hptr[a * dim + l], Hptr[a * dim + l + 1]):
                Hblk[o + l * k + where[Hind[p]]] += Hdata[p]


@njit(cache=True, error_model="numpy")
def _solve_small(E, X, dim, piv_tol):
    """X <- E^-1 X in place (E: dim x dim, overwritten; X: dim x k), Gaussian elimination with
    partial pivoting; False when a pivot is at most ``piv_tol`` x the largest entry of E."""
    big = 0.0
    for i in range(dim):
        for j in range(dim):
            big = max(big, abs(E[i, j]))
    if big == 0.0:
        return False
    k = X.shape[1]
    for c in range(dim):
        p = c
        for i in range(c + 1, dim):
            if abs(E[i, c]) > abs(E[p, c]):
                p = i
        if abs(E[p, c]) <= piv_tol * big:
            return False
        if p != c:
            for j in range(dim):
                E[c, j], E[p, j] = E[p, j], E[c, j]
            for j in range(k):
                X[c, j], X[p, j] = X[p, j], X[c, j]
        for i in range(c + 1, dim):
            f = E[i, c] / E[c, c]
            if f != 0.0:
                for j in range(c, dim):
                    E[i, j] -= f * E[c, j]
                for j in range(k):
                    X[i, j] -= f * X[c, j]
    for c in range(dim - 1, -1, -1):
        for j in range(k):
            s = X[c, j]
            for i in range(c + 1, dim):
                s -= E[c, i] * X[i, j]
            X[c, j] = s / E[c, c]
    return True


@njit(cache=True, error_model="numpy")
def body_gram(Hblk, cptr, soff, dim):
    r"""Per contact the Gram matrix :math:`H_a^\top H_a` of its dense block (k x k, row-major at
    ``soff[a]``, the layout of :func:`body_pattern`'s ``spos``): a contact whose :math:`C_a` is a
    multiple of the identity (a sticking contact of Alart-Curnier: :math:`C_a = I/\sigma`) adds
    :math:`c\,H_a^\top H_a` to S (:func:`body_system`)."""
    nc = cptr.shape[0] - 1
    gram = np.empty(soff[nc])
    for a in range(nc):
        c0 = cptr[a]
        k = cptr[a + 1] - c0
        h0 = dim * c0           # (the block row-major at h0: entry (l, i) at h0 + l * k + i)
        o = soff[a]
        for i in range(k):
            for j in range(i, k):       # (symmetric: the same products, in the same order, for (j, i))
                v = 0.0
                for l in range(dim):
                    v += Hblk[h0 + l * k + i] * Hblk[h0 + l * k + j]
                gram[o + i * k + j] = v
                gram[o + j * k + i] = v
    return gram


@njit(cache=True)
def body_groups(cptr, cols):
    """The runs of consecutive contacts on the same columns (a pile's contacts between the same two
    bodies, 4 for two cubes face to face): group g is contacts ``gptr[g]:gptr[g + 1]``, whose places in
    S (:func:`body_pattern`'s ``spos``) are the same (:func:`body_system` adds their terms in one pass)."""
    nc = cptr.shape[0] - 1
    gptr = np.empty(nc + 1, dtype=np.int64)
    ng = 0
    for a in range(nc):
        same = a > 0 and cptr[a + 1] - cptr[a] == cptr[a] - cptr[a - 1]
        if same:
            k = cptr[a + 1] - cptr[a]
            for t in range(k):
                if cols[cptr[a] + t] != cols[cptr[a - 1] + t]:
                    same = False
                    break
        if not same:
            gptr[ng] = a
            ng += 1
    gptr[ng] = nc
    return gptr[:ng + 1].copy()


@njit(cache=True, error_model="numpy")
def body_system(A, B, shift, phi, Hblk, gram, cptr, cols, soff, spos, dpos, gptr, mass, Sdata, rhs, C, g):
    r"""The Newton system :math:`(A + \mathrm{shift}\,I + BW)\,d = -\phi` with :math:`W = HM^{-1}H^\top`
    (M diagonal: ``mass``) in the space of the dofs: with :math:`E_a = A_a + \mathrm{shift}\,I`,
    :math:`C_a = E_a^{-1}B_a` and :math:`g_a = E_a^{-1}\phi_a` (into ``C``, ``g``),

    .. math:: (M + H^\top C H)\,y = -H^\top g,\qquad d = -(g + C H y)

    (:func:`body_direction`). Fills S's values ``Sdata`` on the pattern of :func:`body_pattern` (H by
    its contacts' dense blocks ``Hblk``; with their Grams ``gram`` for a :math:`C_a` that is a multiple
    of the identity to 1e-14) and the right side ``rhs``; the contacts of a group of
    :func:`body_groups` (``gptr``) add their terms to S's entries gathered once (the same sums, in
    the same order, as entry by entry). Returns the number of contacts whose E_a is singular (a pivot
    at most 1e-13 x its largest entry); S is then not formed."""
    nc, dim = A.shape[0], A.shape[1]
    E = np.empty((dim, dim))
    X = np.empty((dim, dim + 1))
    nsing = 0
    kmax = 0
    for a in range(nc):
        kmax = max(kmax, cptr[a + 1] - cptr[a])
        diag = True
        for i in range(dim):
            for j in range(dim):
                if i != j and (A[a, i, j] != 0.0 or B[a, i, j] != 0.0):
                    diag = False
        if diag:        # (an open or sticking contact: _solve_small's numbers without its elimination)
            big = 0.0
            for i in range(dim):
                big = max(big, abs(A[a, i, i] + shift))
            ok = big > 0.0
            for i in range(dim):
                if abs(A[a, i, i] + shift) <= 1e-13 * big:
                    ok = False
            if not ok:
                nsing += 1
                continue
            for i in range(dim):
                e = A[a, i, i] + shift
                for j in range(dim):
                    C[a, i, j] = 0.0
                C[a, i, i] = B[a, i, i] / e
                g[a * dim + i] = phi[a * dim + i] / e
            continue
        for i in range(dim):
            for j in range(dim):
                E[i, j] = A[a, i, j]
                X[i, j] = B[a, i, j]
            E[i, i] += shift
            X[i, dim] = phi[a * dim + i]
        if not _solve_small(E, X, dim, 1e-13):
            nsing += 1
            continue
        for i in range(dim):
            for j in range(dim):
                C[a, i, j] = X[i, j]
            g[a * dim + i] = X[i, dim]
    if nsing:
        return nsing
    Sdata[:] = 0.0
    rhs[:] = 0.0
    for c in range(mass.shape[0]):
        Sdata[dpos[c]] = mass[c]
    T = np.empty((dim, kmax))           # C_a H_a
    acc = np.empty(kmax)
    blk = np.empty(kmax * kmax)         # a group's entries of S
    for grp in range(gptr.shape[0] - 1):
        a0, a1 = gptr[grp], gptr[grp + 1]
        k = cptr[a0 + 1] - cptr[a0]
        if k == 0:
            continue
        sp0 = soff[a0]
        for t in range(k * k):
            blk[t] = Sdata[spos[sp0 + t]]
        for a in range(a0, a1):
            c0 = cptr[a]
            h0 = dim * c0           # (contact a's block, row-major: entry (l, i) at h0 + l * k + i)
            so = soff[a]
            c = C[a, 0, 0]
            scalar = True
            for l in range(dim):
                for m in range(dim):
                    if (l != m and C[a, l, m] != 0.0) or (l == m and abs(C[a, l, l] - c) > 1e-14 * abs(c)):
                        scalar = False
            if scalar:                      # C_a = c I: c H_a^T H_a
                for i in range(k):
                    s = 0.0
                    for l in range(dim):
                        s += Hblk[h0 + l * k + i] * g[a * dim + l]
                    rhs[cols[c0 + i]] -= s
                if c != 0.0:
                    for t in range(k * k):
                        blk[t] += c * gram[so + t]
                continue
            for l in range(dim):
                for j in range(k):
                    T[l, j] = 0.0
                for m in range(dim):
                    cl = C[a, l, m]
                    if cl != 0.0:
                        for j in range(k):
                            T[l, j] += cl * Hblk[h0 + m * k + j]
            for i in range(k):
                s = 0.0
                for j in range(k):
                    acc[j] = 0.0
                for l in range(dim):
                    h = Hblk[h0 + l * k + i]
                    if h != 0.0:
                        s += h * g[a * dim + l]
                        for j in range(k):
                            acc[j] += h * T[l, j]
                rhs[cols[c0 + i]] -= s
                base = i * k
                for j in range(k):
                    blk[base + j] += acc[j]
        for t in range(k * k):
            Sdata[spos[sp0 + t]] = blk[t]
    return 0


@njit(cache=True, error_model="numpy")
def body_direction(y, Hblk, cptr, cols, C, g, d, Wd):
    r"""d = -(g + C H y) (:func:`body_system`), per contact, and ``Wd`` = H y: W d, since
    :math:`H^\top d = -H^\top g - H^\top C H y = M y` (the line search's W d without a product by W)."""
    nc, dim = C.shape[0], C.shape[1]
    t = np.empty(dim)
    for a in range(nc):
        c0 = cptr[a]
        k = cptr[a + 1] - c0
        o = dim * c0
        for l in range(dim):
            s = 0.0
            for i in range(k):
                s += Hblk[o + l * k + i] * y[cols[c0 + i]]
            t[l] = s
            Wd[a * dim + l] = s
        for l in range(dim):
            s = g[a * dim + l]
            for m in range(dim):
                s += C[a, l, m] * t[m]
            d[a * dim + l] = -s
