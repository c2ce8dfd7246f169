"""W given by its factors (W = Hᵀ diag(minv) H, H of nv x n as GlobalFrictionContact's): the problem's record of them, the Newton systems solved in
the dofs' space (nsopt.solvers.newton_system.BodySystem) against a dense solve and against the contacts' space, and
the factors a Moreau–Jean step hands over with its W."""

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt
from nsopt import modeling as nm
from nsopt.exceptions import ProblemError
from nsopt.problems import DelassusFactors
from nsopt.solvers.newton_system import CONTACTS, BodySystem

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def bodies_and_contacts(nb, nc, dim=3, seed=0):
    """nb bodies of 6 dofs (diagonal masses), nc contacts each between two bodies (or one and the world):
    H (nc*dim, 6 nb) with a dense dim x 6 block per body of a contact."""
    rng = np.random.default_rng(seed)
    rows, cols, vals = [], [], []
    for a in range(nc):
        bodies = rng.choice(nb, size=1 if rng.random() < 0.2 else 2, replace=False)
        for b in bodies:
            r, c = np.meshgrid(np.arange(dim) + a * dim, np.arange(6) + 6 * b, indexing="ij")
            rows.append(r.ravel())
            cols.append(c.ravel())
            vals.append(rng.standard_normal(dim * 6))
    H = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(nc * dim, 6 * nb))
    minv = rng.uniform(0.5, 2.0, 6 * nb)
    return H, minv


def test_factors_validated_and_checked_against_W():
    H, minv = bodies_and_contacts(5, 8)
    W = (H @ sp.diags(minv) @ H.T).tocsr()
    f = DelassusFactors(H.T, minv)
    assert abs(f.W() - W).max() < 1e-12
    p = nsopt.FrictionContact(3, W, np.ones(24), 0.5)
    assert p.delassus_factors is None
    assert p.with_delassus_factors(H.T, minv) is p and p.delassus_factors.H.shape == (30, 24)
    # replace(q=) keeps W: the factors go with it; a new W: none
    assert p.replace(q=np.zeros(24)).delassus_factors is p.delassus_factors
    assert p.replace(W=W.toarray()).delassus_factors is None
    with pytest.raises(ProblemError, match="H.*shape"):
        p.with_delassus_factors(H[:-3].T, minv)
    with pytest.raises(ProblemError, match="minv.*shape"):
        p.with_delassus_factors(H.T, minv[:-1])
    with pytest.raises(ProblemError, match="minv.*> 0"):
        p.with_delassus_factors(H.T, -minv)
    with pytest.raises(ProblemError, match="minv.*> 0"):
        p.with_delassus_factors(H.T, np.full(30, np.nan))
    bad = H.copy()
    bad.data[0] = np.inf
    with pytest.raises(ProblemError, match="H.*non-finite"):
        p.with_delassus_factors(bad.T, minv)
    with pytest.raises(ProblemError, match="not the problem's W"):
        p.with_delassus_factors(H.T, 2 * minv)
    with pytest.raises(ProblemError, match="H"):
        p.with_delassus_factors("abc", minv)


def test_factors_take_global_friction_contacts_H():
    """One orientation of H in nsopt (issue 31 §8): DelassusFactors takes GlobalFrictionContact's H
    (nv x n: M v = H r + q, u = Hᵀ v + b), so the factors of a GFC problem with a diagonal M are its H
    and diag(M)⁻¹, and their product is the W of its local problem (1e-12)."""
    Hrows, minv = bodies_and_contacts(5, 8, seed=3)
    H = Hrows.T.tocsc()                                   # (30 dofs, 24 contact unknowns)
    M = sp.diags(1.0 / minv).tocsr()
    g = nsopt.GlobalFrictionContact(M, H, np.ones(30), np.zeros(24), np.full(8, 0.5))
    f = DelassusFactors(g.H, minv)
    assert f.H.shape == g.H.shape == (30, 24) and f.nv == 30
    local = g.local()
    assert abs(f.W() - sp.csr_matrix(local.W)).max() <= 1e-12 * abs(f.W()).max()
    assert local.with_delassus_factors(g.H, minv) is local and local.delassus_factors.H.shape == (30, 24)
    with pytest.raises(ProblemError, match=r"H.*shape.*\(nv, 24\)"):
        local.with_delassus_factors(Hrows, minv)         # the contact rows: the other orientation


def _blocks(nc, dim, rng, open_frac=0.3, stick_frac=0.3):
    """Random Newton blocks, with open contacts (A_a = I, B_a = 0) and sticking ones regularised as the
    solver makes them (A_a = sigma B_a, B_a = diag(rho_N, rho_T, ...): C_a = I / sigma)."""
    A = rng.standard_normal((nc, dim, dim)) + 3 * np.eye(dim)
    B = rng.standard_normal((nc, dim, dim))
    u = rng.random(nc)
    open_, stick = u < open_frac, (u >= open_frac) & (u < open_frac + stick_frac)
    A[open_], B[open_] = np.eye(dim), 0.0
    rho = np.array([0.7] + [1.3] * (dim - 1))
    B[stick] = np.diag(rho)
    A[stick] = 1e-3 * np.diag(rho)
    return A, B


@pytest.mark.parametrize("dim", [2, 3])
def test_body_solve_is_the_newton_system(dim):
    """(A + s I + B W) d = -phi solved in the dofs' space equals the dense solve (rtol 1e-9), the first
    call (which orders S) and the later ones (in the kept order), with open contacts (A_a = I, B_a = 0)."""
    rng = np.random.default_rng(dim)
    nc, nb = 40, 12
    H, minv = bodies_and_contacts(nb, nc, dim, seed=dim)
    W = (H @ sp.diags(minv) @ H.T).toarray()
    body = BodySystem(DelassusFactors(H.T, minv), nc, dim)
    n = nc * dim
    for shift in (0.0, 1e-3, 0.0):
        A, B = _blocks(nc, dim, rng)
        phi = rng.standard_normal(n)
        J = sp.block_diag(list(A)).toarray() + shift * np.eye(n) + sp.block_diag(list(B)).toarray() @ W
        d = body.solve(A, B, phi, shift)
        np.testing.assert_allclose(d, np.linalg.solve(J, -phi), rtol=1e-9, atol=1e-11)
        assert body.order is not None


def test_body_solve_singular_blocks():
    """A singular block of A + sI: the system goes back to the contacts' space (``CONTACTS``), unless
    more rows of A are zero than W has rank at most (the dofs' count): J is then singular (None)."""
    rng = np.random.default_rng(7)
    nc, nb, dim = 30, 4, 3              # 90 unknowns, 24 dofs: W singular
    H, minv = bodies_and_contacts(nb, nc, dim, seed=7)
    body = BodySystem(DelassusFactors(H.T, minv), nc, dim)
    A, B = _blocks(nc, dim, rng)
    phi = rng.standard_normal(nc * dim)
    A[0] = 0.0                          # one sticking contact (A_a = 0): 3 zero rows <= 24
    assert body.solve(A, B, phi, 0.0) is CONTACTS
    A[:9] = 0.0                         # 27 zero rows > 24 dofs: J singular
    assert body.solve(A, B, phi, 0.0) is None
    assert body.solve(A, B, phi, 1e-6) is not None      # shifted: every block invertible


@pytest.mark.parametrize("method", ["nsn-ac", "nsn-fb", "prox"])
def test_newton_with_factors_matches_the_contacts_space(method):
    """A problem with more contact unknowns than dofs (W singular, as a pile's): with its factors the
    Newton methods solve it to the tolerance (the error re-judged by solve()); nsn-ac and prox take
    the same steps (same iterations, the same solution to 1e-7 relative)."""
    nb, nc = 30, 110                    # 180 dofs, 330 unknowns (sparse path: above dense_max = 240)
    H, minv = bodies_and_contacts(nb, nc, seed=11)
    W = (H @ sp.diags(minv) @ H.T).tocsr()
    rng = np.random.default_rng(12)
    q = rng.standard_normal(3 * nc)
    q[::3] = -np.abs(q[::3])
    mu = rng.uniform(0.2, 0.8, nc)
    plain = nsopt.solve(nsopt.FrictionContact(3, W, q, mu), method=method, tol=1e-10)
    p = nsopt.FrictionContact(3, W, q, mu).with_delassus_factors(H.T, minv)
    fact = nsopt.solve(p, method=method, tol=1e-10)
    assert plain.status.value == fact.status.value == "solved" and fact.error <= 1e-10
    if method != "nsn-fb":
        assert fact.nit == plain.nit
        assert np.linalg.norm(fact.r - plain.r) <= 1e-7 * np.linalg.norm(plain.r)
    # (nsn-fb, without regularisation, meets nearly singular plain matrices on this singular W, where
    # directions equal to round-off part: 23 and 32 iterations to two solutions of the non-unique problem)
    assert p._store["newton_body"][1].order is not None      # the dofs' space was used


def _spheres():
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    import modeling_spheres_box as ex

    return ex


@pytest.mark.parametrize("batch", [True, False])
def test_a_step_hands_over_the_factors_of_its_W(monkeypatch, batch):
    """60 spheres (diagonal M̂, more than SPARSE_DOFS; W = G M̂⁻¹ Gᵀ from the block plan, or from the
    assembled rows one by one): every step's problem carries factors whose product is its W (1e-12), and
    the run without them (the contacts' space) gives the same states (1e-9)."""
    ex = _spheres()
    runs = []
    for with_factors in (True, False):
        if not with_factors:
            monkeypatch.setattr(nsopt.FrictionContact, "with_delassus_factors", lambda self, *a, **k: self)
        box = ex.Box(60, T=12 * 2e-3, gap=0.0)
        sim = nm.TimeStepping(box.nsds, 2e-3, nm.MoreauJeanOSI(0.5, batch=batch), osns="fc3d", method="nsn-ac",
                              tol=1e-10)
        states, seen = [], 0
        while sim.has_next_step():
            sol = sim.step()
            if sol is not None and with_factors:
                f = sol.problem.delassus_factors
                assert f is not None and abs(f.W() - sol.problem.W).max() <= 1e-12 * abs(sol.problem.W).max()
                seen += 1
            states.append(np.concatenate([sim.state_of(s, "q") for s in box.spheres] + [sim.state_of(s, "v") for s in box.spheres]))
        assert not with_factors or seen > 0
        assert (sim._stepper._blocks is not None) == batch
        runs.append(np.array(states))
    np.testing.assert_allclose(runs[0], runs[1], rtol=0, atol=1e-9)


@pytest.mark.parametrize("n", [1, 7, 60, 300])
def test_static_lu_against_a_dense_solve(n):
    """The LU without pivoting of a matrix with a symmetric pattern (values not symmetric): its patterns
    hold the fill (the product L U equals A to 1e-12) and it solves to a backward error ~1e-16; a zero
    pivot is reported (j + 1), not divided by."""
    from nsopt import _linalg_kernels as K

    rng = np.random.default_rng(n)
    P = sp.random(n, n, density=min(1.0, 6.0 / n), random_state=n, format="csc")
    P = P + P.T
    A = (P + sp.diags(abs(P).sum(axis=0).A1 + 1.0)).tocsc()
    A.data *= rng.uniform(0.5, 1.5, A.nnz)       # the same pattern, values not symmetric
    A.sort_indices()
    ptr, ind = A.indptr.astype(np.int64), A.indices.astype(np.int64)
    Up, Ui, Lp, Li = K.static_lu_symbolic(ptr, ind, n)
    Ux, Ud, Lx, x = np.empty(Ui.size), np.empty(n), np.empty(Li.size), np.zeros(n)
    assert K.static_lu_numeric(ptr, ind, A.data, Up, Ui, Lp, Li, Ux, Ud, Lx, x, 1e-10) == 0
    assert not x.any()
    L = sp.csc_matrix((Lx, Li, Lp), shape=(n, n)) + sp.identity(n)
    U = sp.csc_matrix((Ux, Ui, Up), shape=(n, n)) + sp.diags(Ud)
    np.testing.assert_allclose((L @ U).toarray(), A.toarray(), rtol=0, atol=1e-12 * abs(A).max())
    b = rng.standard_normal(n)
    y = b.copy()
    K.static_lu_solve(Up, Ui, Ux, Ud, Lp, Li, Lx, y)
    res, work = np.empty(n), np.empty(n)
    assert K.csc_residual(ptr, ind, A.data, y, b, res, work) < 1e-14
    np.testing.assert_allclose(y, np.linalg.solve(A.toarray(), b), rtol=1e-10)
    data = A.data.copy()                         # A[0, 0] = 0 on the same pattern: column 0 has no pivot
    data[A.indptr[0] + np.flatnonzero(A.indices[A.indptr[0]:A.indptr[1]] == 0)] = 0.0
    assert K.static_lu_numeric(ptr, ind, data, Up, Ui, Lp, Li, Ux, Ud, Lx, x, 1e-10) == 1
    assert not x.any()


def test_body_solve_falls_back_to_pivoting():
    """A dofs' system whose kept order meets a zero pivot (a contact coupling two dofs, the mass of one
    tiny): the LU without pivoting gives up and SuperLU's pivoting solves it (the dense solve, 1e-9)."""
    rng = np.random.default_rng(5)
    nc, nb, dim = 20, 6, 3
    H, minv = bodies_and_contacts(nb, nc, dim, seed=5)
    body = BodySystem(DelassusFactors(H.T, minv), nc, dim)
    W = (H @ sp.diags(minv) @ H.T).toarray()
    A, B = _blocks(nc, dim, rng)
    phi = rng.standard_normal(nc * dim)
    body.solve(A, B, phi, 0.0)                   # the first call: SuperLU orders S, the order is kept
    calls = []
    import nsopt.linalg as linalg

    real = linalg.LK.static_lu_numeric
    try:
        linalg.LK.static_lu_numeric = lambda *a: (calls.append(1), 1)[1]      # a zero pivot in column 0
        A, B = _blocks(nc, dim, rng)
        d = body.solve(A, B, phi, 0.0)
    finally:
        linalg.LK.static_lu_numeric = real
    J = sp.block_diag(list(A)).toarray() + sp.block_diag(list(B)).toarray() @ W
    assert calls and d is not None
    np.testing.assert_allclose(d, np.linalg.solve(J, -phi), rtol=1e-9, atol=1e-11)
