"""The one compiled home of the cone formulas (nsopt.problems._measures, which nsopt.problems.cones calls)
against an independent vectorised NumPy statement of Siconos' formulas written here, the Python functions
give the kernels' numbers bit for bit, and the vectorised Newton pattern is the pattern of J = A + B W."""

import numpy as np
import pytest
import scipy.sparse as sp

from nsopt.problems import _measures as M
from nsopt.problems.cones import fc_error, natural_map_sq, project_coulomb
from nsopt.solvers import _gs_kernels as K
from nsopt.solvers import _newton_kernels as NK
from nsopt.solvers.newton_system import ContactSystem


def _np_project(X, mu):
    """Siconos' projectionOnCone, vectorised (an independent statement for the tests)."""
    xN, xT = X[:, 0], X[:, 1:]
    nT = np.abs(xT[:, 0]) if X.shape[1] == 2 else np.sqrt(np.einsum("ij,ij->i", xT, xT))
    polar, inside = mu * nT <= -xN, nT <= mu * xN
    pN = (mu * nT + xN) / (mu * mu + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(nT > 0.0, mu * pN / nT, 0.0)
    bnd = ~(polar | inside)
    P = np.where((inside & ~polar)[:, None], X, 0.0)
    P[:, 0] += np.where(bnd, pN, 0.0)
    if X.shape[1] == 2:
        P[:, 1] += np.where(bnd, mu * pN * np.sign(xT[:, 0]), 0.0)
    else:
        P[:, 1:] += np.where(bnd[:, None], scale[:, None] * xT, 0.0)
    return P


def _np_natural_map_sq(r, u, mu, dim):
    R, U = r.reshape(-1, dim), u.reshape(-1, dim)
    UT = U[:, 1:]
    X = R - U
    X[:, 0] -= mu * (np.abs(UT[:, 0]) if dim == 2 else np.sqrt(np.einsum("ij,ij->i", UT, UT)))
    D = R - _np_project(X, mu)
    return float(np.einsum("ij,ij->", D, D))


def _np_fc_error(r, u, mu, dim, qn):
    e = np.sqrt(_np_natural_map_sq(r, u, mu, dim))
    scale = max(qn, np.linalg.norm(r), np.linalg.norm(u))
    return e / scale if scale > np.finfo(float).eps else e


def _points(rng, nc, dim):
    """Random points with every case of the projection: inside, polar, boundary, zero, mu = 0."""
    X = rng.standard_normal((nc, dim)) * rng.uniform(0.01, 10.0, (nc, 1))
    mu = rng.uniform(0.0, 2.0, nc)
    mu[::7] = 0.0
    X[::5] = 0.0
    X[1::6, 1:] = 0.0
    X[2::9, 0] = -X[2::9, 0] - 1.0       # below the apex
    return X, mu


@pytest.mark.parametrize("dim", [2, 3])
def test_projection_twin(dim):
    rng = np.random.default_rng(dim)
    X, mu = _points(rng, 400, dim)
    P = _np_project(X, mu)
    np.testing.assert_allclose(project_coulomb(X, mu), P, rtol=1e-14, atol=1e-15)
    out = np.empty(dim)
    for a in range(X.shape[0]):
        K.proj_cone(dim, mu[a], X[a].copy(), out)
        np.testing.assert_allclose(out, P[a], rtol=1e-14, atol=1e-15)
        x = X[a].copy()
        K.proj_cone(dim, mu[a], x, x)        # in place, as the Newton sweeps call it
        np.testing.assert_allclose(x, P[a], rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("nc", [1, 3, 250])
def test_fc_error_twin(dim, nc):
    rng = np.random.default_rng(10 * nc + dim)
    for _ in range(20):
        R, mu = _points(rng, nc, dim)
        U, _ = _points(rng, nc, dim)
        r, u = R.reshape(-1), U.reshape(-1)
        qn = float(rng.uniform(0.0, 5.0)) if rng.random() < 0.8 else 0.0
        x, px = np.empty(dim), np.empty(dim)
        e_np = _np_fc_error(r, u, mu, dim, qn)
        e_nb = K.fc_error(dim, r, u, mu, qn, x, px)
        assert e_nb == pytest.approx(e_np, rel=1e-12, abs=1e-300)
        assert fc_error(r, u, mu, dim, qn) == e_nb          # the Python function: the kernel's number
        s = sum(K.nat_map_sq(dim, mu[a], R[a], U[a], x, px) for a in range(nc))
        # the sum's term at an offset (no slice: fc_error's loop) is the contact's, bit for bit
        assert [M.nat_map_sq_at(dim, mu[a], r, u, a * dim, x, px) for a in range(nc)] == \
            [K.nat_map_sq(dim, mu[a], R[a], U[a], x, px) for a in range(nc)]
        assert s == pytest.approx(_np_natural_map_sq(r, u, mu, dim), rel=1e-12, abs=1e-300)
        assert natural_map_sq(r, u, mu, dim) == pytest.approx(s, rel=1e-15, abs=1e-300)


def test_fc_error_twin_scaling_branch():
    """Below DBL_EPSILON the error is not divided, in both versions."""
    r = np.array([1e-17, 0.0, 0.0])
    u = np.array([-1e-17, 0.0, 0.0])
    mu = np.array([0.5])
    x, px = np.empty(3), np.empty(3)
    assert K.fc_error(3, r, u, mu, 0.0, x, px) == fc_error(r, u, mu, 3, 0.0) == _np_fc_error(r, u, mu, 3, 0.0) > 0.0


@pytest.mark.parametrize("dim", [2, 3])
def test_newton_pattern_is_the_pattern_of_J(dim):
    """The vectorised CSR pattern holds every entry of A + B W (A, B block diagonal) and J assembled
    on it equals the dense product."""
    rng = np.random.default_rng(dim)
    nc = 30
    n = nc * dim
    W = sp.random(n, n, density=0.05, random_state=3, format="csr") + sp.identity(n)
    W = (W + W.T).tocsr()
    pat = ContactSystem(W, nc, dim)
    A = rng.standard_normal((nc, dim, dim))
    B = rng.standard_normal((nc, dim, dim))
    pat.assemble(A, B)
    J = sp.csr_matrix((pat.data, pat.indices, pat.indptr), shape=(n, n)).toarray()
    Ab = sp.block_diag(list(A)).toarray()
    Bb = sp.block_diag(list(B)).toarray()
    np.testing.assert_allclose(J, Ab + Bb @ W.toarray(), rtol=1e-13, atol=1e-13)
    # each row of contact a: exactly the union of the columns of a's rows of W and of its block
    Wd = W.toarray() != 0
    for i in range(n):
        a = i // dim
        want = np.flatnonzero(Wd[a * dim:(a + 1) * dim].any(axis=0))
        want = np.union1d(want, np.arange(a * dim, a * dim + dim))
        assert np.array_equal(pat.indices[pat.indptr[i]:pat.indptr[i + 1]], want)


@pytest.mark.parametrize("dim", [2, 3])
def test_newton_pattern_solve_leaves_out_identity_rows(dim):
    """ContactSystem.solve: the first call factorises the whole J (and keeps its order), the later ones
    leave out the contacts whose rows are the identity (B_a = 0, A_a = I); both give the solution
    of (J + shift I) d = -phi by a dense solve (rtol 1e-10), and a singular reduced matrix gives None."""
    rng = np.random.default_rng(10 + dim)
    nc = 40
    n = nc * dim
    W = sp.random(n, n, density=0.05, random_state=5, format="csr")
    W = (W @ W.T + sp.identity(n)).tocsr()
    pat = ContactSystem(W, nc, dim)
    A = rng.standard_normal((nc, dim, dim)) + 3 * np.eye(dim)
    B = rng.standard_normal((nc, dim, dim))
    open_ = rng.random(nc) < 0.3
    A[open_], B[open_] = np.eye(dim), 0.0
    phi = rng.standard_normal(n)
    pat.assemble(A, B)
    J = sp.block_diag(list(A)).toarray() + sp.block_diag(list(B)).toarray() @ W.toarray()
    assert pat.order is None
    for shift in (0.0, 0.0, 1e-3):
        d = pat.solve(A, B, phi, shift)
        np.testing.assert_allclose(d, np.linalg.solve(J + shift * np.eye(n), -phi), rtol=1e-10, atol=1e-12)
        assert pat.order is not None
    # one closed contact whose rows are zero: singular, with or without the identity rows left out
    k = np.flatnonzero(~open_)[0]
    A[k], B[k] = 0.0, 0.0
    pat.assemble(A, B)
    assert pat.solve(A, B, phi, 0.0) is None
