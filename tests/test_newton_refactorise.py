"""Refactorising the Newton systems on a fixed pattern (issue 31 §1, issue 32 §6): the contacts' J = A + B W by the LU
without pivoting in the kept order (SuperLU's pivoting when it fails), and a step's systems keeping the previous
step's patterns, order and LU patterns when the pattern did not change (numeric refactorisation only), each
checked against a dense solve."""

import numpy as np
import scipy.sparse as sp

import nsopt
from nsopt.problems import DelassusFactors
from nsopt.solvers import newton_system as NS
from nsopt.solvers.newton_system import BodySystem, ContactSystem
from test_delassus_factors import bodies_and_contacts


def _moved(H, rng, scale=1e-3):
    """H with the same pattern and values moved (a pile's next step)."""
    H = H.copy()
    H.data = H.data * (1.0 + scale * rng.standard_normal(H.data.size))
    return H


def _ab(nc, dim, rng, open_frac=0.3):
    A = rng.standard_normal((nc, dim, dim)) + 3 * np.eye(dim)
    B = rng.standard_normal((nc, dim, dim))
    op = rng.random(nc) < open_frac
    A[op], B[op] = np.eye(dim), 0.0
    return A, B


def _dense_direction(A, B, W, phi, shift=0.0):
    n = phi.size
    J = sp.block_diag(list(A)).toarray() + shift * np.eye(n) + sp.block_diag(list(B)).toarray() @ W
    return np.linalg.solve(J, -phi)


def test_body_system_keeps_the_previous_patterns_and_order():
    """A system whose rows have the previous system's pattern shares its patterns, kept order and LU (no
    symbolic analysis, no ordering factorisation), with its own blocks (equal to a fresh system's); one whose
    pattern changed builds its own; every direction equals the dense solve (rtol 1e-9)."""
    rng = np.random.default_rng(1)
    nc, nb, dim = 40, 12, 3
    H, minv = bodies_and_contacts(nb, nc, dim, seed=1)
    first = BodySystem(DelassusFactors(H.T, minv), nc, dim)
    A, B = _ab(nc, dim, rng)
    phi = rng.standard_normal(nc * dim)
    first.solve(A, B, phi)
    assert first.order is not None
    H2 = _moved(H, rng)
    second = BodySystem(DelassusFactors(H2.T, minv), nc, dim, first)
    fresh = BodySystem(DelassusFactors(H2.T, minv), nc, dim)
    assert second.order is first.order and second.lu is first.lu and second.spos is first.spos
    np.testing.assert_array_equal(second.Hblk, fresh.Hblk)
    np.testing.assert_array_equal(second.gram, fresh.gram)
    W2 = (H2 @ sp.diags(minv) @ H2.T).toarray()
    for shift in (0.0, 1e-3):
        np.testing.assert_allclose(second.solve(A, B, phi, shift), _dense_direction(A, B, W2, phi, shift),
                                   rtol=1e-9, atol=1e-11)
    H3, _ = bodies_and_contacts(nb, nc, dim, seed=2)         # other contacts: another pattern
    third = BodySystem(DelassusFactors(H3.T, minv), nc, dim, second)
    assert third.order is None and third.spos is not second.spos
    W3 = (H3 @ sp.diags(minv) @ H3.T).toarray()
    np.testing.assert_allclose(third.solve(A, B, phi), _dense_direction(A, B, W3, phi), rtol=1e-9, atol=1e-11)


def _contact_W(n, seed):
    W = sp.random(n, n, density=0.05, random_state=seed, format="csr")
    return (W @ W.T + sp.identity(n)).tocsr()


def test_contact_system_refactorises_without_pivoting():
    """After the first factorisation (which orders J), the contacts' J is refactorised by the LU without pivoting
    on its whole pattern in the kept order (the direction of the dense solve, rtol 1e-10); a singular J gives
    None through SuperLU's pivoting, which alone serves after STATIC_TRIES failures in a row; a system of a W
    with the same pattern keeps the previous one's order and LU."""
    rng = np.random.default_rng(3)
    nc, dim = 40, 3
    n = nc * dim
    W = _contact_W(n, 5)
    pat = ContactSystem(W, nc, dim)
    # sticking-like blocks (B_a near rho I, A_a small: J near rho W, as on a pile) and open contacts
    A = 0.1 * rng.standard_normal((nc, dim, dim))
    B = np.eye(dim) + 0.1 * rng.standard_normal((nc, dim, dim))
    op = rng.random(nc) < 0.3
    A[op], B[op] = np.eye(dim), 0.0
    phi = rng.standard_normal(n)
    pat.assemble(A, B)
    pat.solve(A, B, phi)            # (the first: SuperLU, the order)
    for shift in (0.0, 1e-3):
        np.testing.assert_allclose(pat.solve(A, B, phi, shift), _dense_direction(A, B, W.toarray(), phi, shift),
                                   rtol=1e-10, atol=1e-12)
        assert pat.static is not None and pat.static_fails == 0
    k = np.flatnonzero(B.any(axis=(1, 2)))[0]
    A0, B0 = A.copy(), B.copy()
    A0[k], B0[k] = 0.0, 0.0         # a zero block row: J singular
    pat.assemble(A0, B0)
    for i in range(NS.STATIC_TRIES + 1):
        assert pat.solve(A0, B0, phi) is None
    assert pat.static_fails == NS.STATIC_TRIES
    W2 = W.copy()
    W2.data = W2.data * (1.0 + 1e-3 * rng.standard_normal(W2.data.size))
    nxt = ContactSystem(W2, nc, dim, pat)
    nxt.assemble(A, B)
    assert nxt.order is pat.order and nxt.static is pat.static and nxt.static_fails == 0
    np.testing.assert_allclose(nxt.solve(A, B, phi), _dense_direction(A, B, W2.toarray(), phi), rtol=1e-10,
                               atol=1e-12)
    other = ContactSystem(_contact_W(n, 6), nc, dim, nxt)
    other.assemble(A, B)
    assert other.order is None


def test_a_run_of_steps_with_a_workspace():
    """One-step problems of one pattern solved in turn with one Workspace (as a simulation does: each step's
    system gets the previous one's patterns: one symbolic analysis for the run) meet the tolerance (error
    re-judged by the problem) in the iterations of solves without it (up to 2: directions equal to round-off)."""
    rng = np.random.default_rng(4)
    nb, nc = 30, 110                    # 180 dofs, 330 unknowns: the dofs' space, sparse path
    H, minv = bodies_and_contacts(nb, nc, seed=11)
    mu = rng.uniform(0.2, 0.8, nc)
    ws = nsopt.Workspace()
    bodies = []
    for step in range(4):
        H = _moved(H, rng)
        W = (H @ sp.diags(minv) @ H.T).tocsr()
        q = rng.standard_normal(3 * nc)
        q[::3] = -np.abs(q[::3])
        p = nsopt.FrictionContact(3, W, q, mu).with_delassus_factors(H.T, minv)
        s = nsopt.solve(p, method="nsn-ac", tol=1e-10, workspace=ws)
        alone = nsopt.solve(nsopt.FrictionContact(3, W, q, mu).with_delassus_factors(H.T, minv), method="nsn-ac",
                            tol=1e-10)
        assert s.status.value == "solved" and p.error(s.r) <= 1e-10
        assert alone.status.value == "solved" and abs(s.nit - alone.nit) <= 2   # (directions equal to round-off)
        bodies.append(p._store["newton_body"][1])
    assert all(b.lu is bodies[0].lu for b in bodies[1:])      # one symbolic analysis for the run


def test_dense_contact_matrix_is_the_einsum_to_the_bit():
    """The dense J = A + B W (one compiled home, :func:`_newton_kernels.contact_matrix`, that the compiled small
    loop's :func:`dense_direction` assembles by too) is NumPy's ``einsum`` of the blocks plus A, bit for bit
    (a step's trajectory follows these bits), over magnitudes from 1e-8 to 1e3, zero blocks (open contacts) and
    signed zeros, in 2D and 3D."""
    from nsopt.solvers import _newton_kernels as K

    rng = np.random.default_rng(5)
    for dim in (2, 3):
        for nc in (1, 7, 40, 90):
            n = nc * dim
            A, B = _ab(nc, dim, rng)
            B[rng.random(B.shape) < 0.2] = -0.0
            W = rng.standard_normal((n, n)) * 10.0 ** rng.uniform(-8, 3, size=(n, 1))
            ref = np.einsum("alm,amj->alj", B, W.reshape(nc, dim, n)).reshape(n, n)
            idx = np.arange(n).reshape(nc, dim)
            ref[idx[:, :, None], idx[:, None, :]] += A
            J = NS.dense_contact_matrix(A, B, W)
            assert J.tobytes() == ref.tobytes()
            phi = rng.standard_normal(n)
            d = np.empty(n)
            assert K.dense_direction(A, B, W, phi, np.zeros(1), d)
            np.testing.assert_allclose(J @ d, -phi, rtol=1e-6, atol=1e-8 * np.abs(J).max() * np.abs(d).max())


def test_body_system_groups_contacts_on_the_same_bodies():
    """Consecutive contacts between the same two bodies (a pile's 4 contacts of two cubes face to face) form a group
    of :func:`body_groups`; :func:`body_system` adds a group's terms to S's entries gathered once: the same S and
    right side, bit for bit, as contact by contact (one contact a group), for general, scalar (C_a = c I) and open
    (C_a = 0) contacts; and the direction is the dense solve's."""
    from nsopt.solvers import _newton_kernels as K
    rng = np.random.default_rng(4)
    nb, dim = 6, 3
    pairs = [(0, 1)] * 4 + [(1, 2)] * 3 + [(0, 1)] + [(3, 4)] * 4 + [(5, 5)] * 2 + [(2, 5)]
    nc = len(pairs)
    H = np.zeros((6 * nb, nc * dim))
    for a, (i, j) in enumerate(pairs):
        for b in {i, j}:
            H[6 * b:6 * b + 6, a * dim:(a + 1) * dim] = rng.standard_normal((6, dim))
    minv = rng.random(6 * nb) + 0.5
    body = BodySystem(DelassusFactors(sp.csc_matrix(H), minv), nc, dim)
    np.testing.assert_array_equal(np.diff(body.gptr), [4, 3, 1, 4, 2, 1])
    A, B = _ab(nc, dim, rng)
    A[5], B[5] = np.zeros((dim, dim)), np.diag([2.0, 2.0, 2.0])      # C_a = c I (shift 1)
    phi = rng.standard_normal(nc * dim)
    out = []
    for gptr in (body.gptr, np.arange(nc + 1, dtype=np.int64)):
        S, rhs, C, g = np.empty(body.Sdata.size), np.empty(body.nv), np.empty((nc, dim, dim)), np.empty(nc * dim)
        assert K.body_system(A, B, 1.0, phi, body.Hblk, body.gram, body.cptr, body.cols, body.soff, body.spos,
                             body.dpos, gptr, body.mass, S, rhs, C, g) == 0
        out.append((S, rhs))
        # C_a = E_a^-1 B_a, g_a = E_a^-1 phi_a (E_a = A_a + I), diagonal blocks (open, sticking) without elimination
        E = A + np.eye(dim)
        np.testing.assert_allclose(C, np.linalg.solve(E, B), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(g, np.linalg.solve(E, phi.reshape(nc, dim, 1)).reshape(-1), rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
    W = H.T @ np.diag(minv) @ H
    d = body.solve(A, B, phi, 1.0)
    np.testing.assert_allclose(d, _dense_direction(A, B, W, phi, 1.0), rtol=1e-9, atol=1e-11)
    # and W d from the dofs' solution (H y), the line search's product
    np.testing.assert_allclose(body.Wd, W @ d, rtol=1e-9, atol=1e-11)


def test_line_search_takes_w_d_from_the_bodies_solve(monkeypatch):
    """nsn-ac on a problem with Delassus factors: the line search's W d is the bodies' solve's H y (no product by
    W: one product an iteration, u = W r + q of the error), equal to W d up to the solve's forward error (which
    grows as the shift vanishes near the solution: 2.5e-8 relative here at 1e-10); a problem without factors
    multiplies by W in the search too. Both meet the tolerance."""
    from nsopt.solvers import newton as N
    rng = np.random.default_rng(6)
    nc, nb, dim = 60, 14, 3
    H, minv = bodies_and_contacts(nb, nc, dim, seed=3)
    W = (H @ sp.diags(minv) @ H.T).tocsr()
    q = rng.standard_normal(nc * dim)
    q[::3] = -np.abs(q[::3])
    plain = nsopt.FrictionContact(dim, W, q, np.full(nc, 0.5))
    factored = plain.with_delassus_factors(H.T, minv, check=False)
    products = []
    matvec = N._LocalFrictionSystem.matvec
    monkeypatch.setattr(N._LocalFrictionSystem, "matvec", lambda self, x: products.append(1) or matvec(self, x))
    searched = []
    search = N._search

    def spy(sys, r, u, d, *args):
        last = sys.direction_Wd
        if last is not None and last[0] is d and last[1] is not None:
            searched.append(np.linalg.norm(last[1] - W @ d) / max(np.linalg.norm(W @ d), 1e-300))
        return search(sys, r, u, d, *args)

    monkeypatch.setattr(N, "_search", spy)
    for p in (factored, plain):
        products.clear(), searched.clear()
        s = nsopt.solve(p, method="nsn-ac", tol=1e-10, dense_max=0)
        assert s.success and p.error(s.r) <= 1e-10, s
        if p is factored:
            assert searched and max(searched) < 1e-6 and len(products) <= s.nit + 2, (searched, len(products), s.nit)
        else:
            assert not searched and len(products) >= 2 * s.nit, (len(products), s.nit)
