"""Problem objects: validation (typed errors naming the field), immutability, sparsity, error measures."""

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt
from nsopt import generate as g
from nsopt.exceptions import ProblemError
from nsopt.problems import (AVI, LCP, MLCP, Block, Equality, FrictionContact, GenericMechanical,
                            GlobalFrictionContact, Relay)
from nsopt.problems.cones import project_coulomb

I2 = np.eye(2)


@pytest.mark.parametrize("make, field, match", [
    (lambda: LCP(np.ones((2, 3)), [1, 1]), "M", "must be square"),
    (lambda: LCP(I2, [1, 1, 1]), "q", "has 3 entries, expected 2"),
    (lambda: LCP([[1, np.nan], [0, 1]], [1, 1]), "M", "non-finite"),
    (lambda: LCP(I2, [1, np.inf]), "q", "non-finite"),
    (lambda: LCP(sp.csr_matrix(([np.inf], ([0], [0])), shape=(2, 2)), [1, 1]), "M", "non-finite"),
    (lambda: LCP("abc", [1]), "M", "not a numeric matrix"),
    (lambda: Relay(I2, [0, 0], [0, 1], [1, 0]), "lb", "lb > ub at index 1"),
    (lambda: Relay(I2, [0, 0], [0, 0, 0], [1, 1]), "lb", "has 3 entries"),
    (lambda: FrictionContact(4, np.eye(8), np.zeros(8), [0.1, 0.1]), "dim", "must be 2 or 3"),
    (lambda: FrictionContact(3, np.eye(4), np.zeros(4), [0.1]), "W", "not a multiple of dim"),
    (lambda: FrictionContact(3, np.eye(3), np.zeros(3), [-0.1]), "mu", "must be >= 0"),
    (lambda: FrictionContact(3, np.eye(6), np.zeros(6), [0.1, 0.2, 0.3]), "mu", "one per contact"),
    (lambda: GlobalFrictionContact(np.eye(4), np.ones((3, 3)), np.zeros(4), np.zeros(3), [0.1]), "H", "does not match"),
    (lambda: GlobalFrictionContact(np.eye(4), np.ones((4, 4)), np.zeros(4), np.zeros(4), [0.1], 3), "H", "not a multiple"),
    (lambda: MLCP.from_matrix(np.eye(3), np.zeros(3), 4), "n", "outside"),
    (lambda: MLCP(I2, I2, np.ones((2, 3)), np.ones((2, 2)), [0, 0], [0, 0]), "C", "does not match"),
    (lambda: AVI(I2, [0, 0], np.ones((3, 3)), [0, 0, 0]), "H", "does not match"),
    (lambda: GenericMechanical(np.eye(4), np.zeros(4), [("lcp", 1), ("fc3d", 3, -1.0)]), "blocks[1].mu", ">= 0"),
    (lambda: GenericMechanical(np.eye(4), np.zeros(4), [("lcp", 2)]), "blocks", "add up to 2"),
    (lambda: GenericMechanical(np.eye(4), np.zeros(4), [("foo", 4)]), "blocks[0].kind", "unknown block kind"),
])
def test_bad_input_raises_typed_error_naming_the_field(make, field, match):
    with pytest.raises(ProblemError, match=match) as ei:
        make()
    assert ei.value.field == field
    assert isinstance(ei.value, ValueError) and isinstance(ei.value, nsopt.NsoptError)


def test_problems_are_immutable_and_arrays_read_only():
    p = LCP(I2, [1.0, 2.0])
    with pytest.raises(AttributeError, match="immutable"):
        p.q = np.zeros(2)
    with pytest.raises(ValueError):
        p.q[0] = 5.0
    with pytest.raises(ValueError):
        p.M[0, 0] = 5.0


def test_sparse_input_stays_sparse():
    n = 3000
    W = sp.random(n, n, density=1e-3, random_state=0, format="csr") + sp.identity(n, format="csr")
    p = FrictionContact(3, W, np.zeros(n), 0.3)
    assert sp.issparse(p.W) and p.W.shape == (n, n)
    assert p.nc == 1000 and p.kind == "fc3d"
    assert LCP(W, np.zeros(n)).M.nnz == W.nnz


def test_scalar_mu_broadcasts_and_kinds():
    p = FrictionContact(2, np.eye(4), np.zeros(4), 0.5)
    assert p.kind == "fc2d" and np.all(p.mu == 0.5)
    gp, _ = g.global_friction_contact(seed=0)
    assert gp.kind == "gfc3d"


def test_lcp_error_murty():
    # Murty's example: M=[[2,1],[1,2]], q=[-5,-6], z*=[4/3,7/3]
    p = LCP([[2, 1], [1, 2]], [-5, -6])
    assert p.error([4 / 3, 7 / 3]) < 1e-15
    # error = ||min(z, w)|| / ||q||: at z = 0, w = q, min = q -> error 1
    assert p.error([0, 0]) == pytest.approx(1.0)


def test_lcp_error_not_normalised_when_q_is_zero():
    p = LCP(I2, [0.0, 0.0])
    assert p.error([-1.0, 0.0]) == pytest.approx(1.0)


def test_coulomb_projection_cases():
    mu = np.array([0.5, 0.5, 0.5])
    X = np.array([[1.0, 0.1, 0.0],     # inside the cone: unchanged
                  [-1.0, 0.1, 0.0],    # in the polar cone: 0
                  [0.0, 1.0, 0.0]])    # projected on the boundary
    P = project_coulomb(X, mu)
    assert np.allclose(P[0], X[0]) and np.allclose(P[1], 0)
    assert np.linalg.norm(P[2, 1:]) == pytest.approx(0.5 * P[2, 0])
    # the projection is the closest point: compare to a brute-force search on the boundary
    t = np.linspace(0, 3, 30001)
    d = (t - 0.0) ** 2 + (0.5 * t - 1.0) ** 2
    assert P[2, 0] == pytest.approx(t[np.argmin(d)], abs=1e-4)


@pytest.mark.parametrize("gen", [g.lcp, g.mlcp, g.relay, g.friction_contact, g.global_friction_contact])
def test_generated_problems_have_zero_error_at_their_solution(gen):
    for seed in range(5):
        p, s = gen(seed=seed)
        e = p.error(s["r"], s["v"]) if "v" in s else p.error(s.get("z", s.get("r")))
        assert e < 1e-12


def test_generated_fc2d_zero_error():
    p, s = g.friction_contact(7, dim=2, seed=3)
    assert p.error(s["r"]) < 1e-13
    # a perturbed reaction has a positive error
    assert p.error(s["r"] + 0.1) > 1e-3


def test_global_local_reformulation_consistent():
    gp, s = g.global_friction_contact(nc=3, ndof=10, seed=2)
    loc = gp.local()
    assert np.allclose(loc.u(s["r"]), s["u"])
    assert np.allclose(gp.v(s["r"]), s["v"])
    gs = GlobalFrictionContact(sp.csr_matrix(gp.M), sp.csr_matrix(gp.H), gp.q, gp.b, gp.mu, 3)
    assert np.allclose(gs.local().u(s["r"]), s["u"])
    assert gs.error(s["r"], s["v"]) < 1e-12


def test_mlcp_abcd_and_matrix_forms_agree():
    p, s = g.mlcp(2, 3, seed=4)
    q = np.asarray(p.q)
    p2 = MLCP(p.A, p.B, p.C, p.D, q[:2], q[2:])
    assert p2 == p
    assert p2.error(s["z"]) == p.error(s["z"]) < 1e-12


def test_mlcp_blocks_interleaved():
    M = np.diag([1.0, 2.0, 3.0])
    p = MLCP.from_matrix(M, [-1.0, 1.0, -3.0], 1, blocks_rows=[0, 1, 2, 3], blocks_is_comp=[1, 0, 1])
    assert list(p.is_eq) == [False, True, False]
    z = np.array([1.0, -0.5, 1.0])
    assert p.error(z) < 1e-15


def test_gmp_error_max_over_blocks():
    W = np.eye(4)
    p = GenericMechanical(W, [-1.0, -2.0, 0.0, 0.0], [Block("lcp", 1), Block("fc3d", 3, mu=0.5)])
    r = np.array([1.0, 2.0, 0.0, 0.0])  # u = r + q = [0, 0, 0, 0]
    assert p.error(r) == 0.0
    assert p.error(np.zeros(4)) > 0


def test_avi_error_box():
    M = np.eye(2)
    p = AVI(M, [-3.0, 0.5], np.vstack([np.eye(2), -np.eye(2)]), [-1, -1, -1, -1])   # box [-1, 1]^2
    assert p.error([1.0, -0.5]) < 1e-9
    assert p.error([0.0, 0.0]) > 0.1


def test_problem_equality():
    p1, _ = g.friction_contact(seed=1)
    p2 = FrictionContact(3, sp.csr_matrix(p1.W), p1.q, p1.mu)
    assert p1 == p2
    assert p1 != FrictionContact(3, p1.W, p1.q, p1.mu * 2)


def test_equality_linear_solve():
    p = Equality([[2.0, 0], [0, 4.0]], [1.0, 1.0])
    s = nsopt.solve(p)
    assert s.success and np.allclose(s.z, [-0.5, -0.25]) and s.error < 1e-15


def test_mlcp_sparse_blocks_stay_sparse():
    n, m = 200, 300
    A = sp.identity(n, format="csr")
    B = sp.identity(m, format="csr") * 2.0
    C = sp.random(n, m, density=0.01, random_state=1, format="csr")
    D = sp.random(m, n, density=0.01, random_state=2, format="csr")
    p = MLCP(A, B, C, D, np.zeros(n), np.ones(m))
    assert sp.issparse(p.M) and p.M.nnz == A.nnz + B.nnz + C.nnz + D.nnz
    assert sp.issparse(p.C) and p.C.shape == (n, m)
    assert p.error(np.zeros(n + m)) == 0.0


# --- error measures at the ends of the float range (found by tests/test_error_differential.py) ---

def test_norms_neither_underflow_nor_overflow():
    from nsopt.problems._base import norm2

    for x in ([3e-300, 4e-300], [3e200, 4e200], [3.0, 4.0], [3e-170, 4e-170]):
        a = np.asarray(x)
        assert norm2(a) == pytest.approx(5 * a[0] / 3, rel=1e-15)
    assert norm2(np.zeros(3)) == 0.0 and norm2(np.array([])) == 0.0
    assert np.isnan(norm2([np.nan, 1.0])) and norm2([np.inf, 1.0]) == np.inf


def test_relay_error_of_a_tiny_iterate_is_not_zero():
    # z = -1.27e-290 outside the box [0, 0]: Siconos (dnrm2) reports |z| / (1 + ||q||), not 0
    p = Relay([[1.0]], [0.0], [0.0], [0.0])
    z = np.array([-1.2691290181130624e-290])
    assert p.error(z) == pytest.approx(1.2691290181130624e-290, rel=1e-15)


def test_fc2d_error_of_huge_vectors_is_inf_not_nan():
    p = FrictionContact(2, np.eye(2), [0.0, 0.0], [0.5])
    r = np.array([1e160, -3e160])
    with np.errstate(over="ignore"):
        e = p.error(r)
    assert not np.isnan(e)
    big = FrictionContact(2, sp.eye(20, format="csr"), np.zeros(20), np.full(10, 0.5))
    with np.errstate(over="ignore", invalid="ignore"):
        assert not np.isnan(big.error(np.tile(r, 10)))          # the vectorised path too


def test_fc3d_error_of_huge_vectors_raises_nothing():
    p = FrictionContact(3, np.eye(3), [1.0, 0.0, 0.0], [0.5])
    with np.errstate(over="ignore", invalid="ignore"):
        p.error(np.array([1e200, 1e200, -1e200]))              # no OverflowError from float **


def test_gmp_local_q_without_cancellation():
    # q_loc = q_k + sum_{j != k} M_kj r_j, as Siconos: not u_k - M_kk r_k, which cancels when
    # M_kk r_k is large (relative error 1e-16 |M_kk r_k| in q_loc)
    M = np.array([[1e16, 1.0], [1.0, 1.0]])
    p = GenericMechanical(M, [0.5, 0.0], [Block("lcp", 1), Block("lcp", 1)])
    r = np.array([1.0, 0.0])
    w0 = 1e16 + 0.5
    e0 = abs(1.0 - max(0.0, 1.0 - w0)) / (1.0 + 0.5)            # block 0, q_loc = 0.5 exactly
    assert p.error(r) == max(e0, abs(0.0 - max(0.0, 0.0 - 1.0)) / (1.0 + 1.0))


def test_gmp_relay_block_is_normalised_twice_as_siconos():
    # gmp_compute_error calls relay_compute_error (/(1 + ||q_sub||), q_sub = q_loc) then divides
    # by 1 + ||q_loc|| again
    M = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.5, 0.0, 1.0]])
    q = np.array([1.0, -2.0, 3.0])
    p = GenericMechanical(M, q, [Block("relay", 2, None, (-1.0, -1.0), (1.0, 1.0)), Block("lcp", 1)])
    r = np.array([0.3, -2.0, 0.0])
    u = M @ r + q
    nl = np.linalg.norm(q[:2] + M[:2, 2:] @ r[2:])
    e_relay = np.linalg.norm(r[:2] - np.clip(r[:2] - u[:2], -1, 1)) / (1 + nl) ** 2
    e_lcp = abs(r[2] - max(0.0, r[2] - u[2])) / (1 + abs(q[2] + M[2, :2] @ r[:2]))
    assert p.error(r) == pytest.approx(max(e_relay, e_lcp), rel=1e-15)
    assert e_relay > e_lcp


def test_arrays_of_a_problem_are_taken_as_they_are():
    """A problem built from another problem's own W and mu shares them (no copy, no second check);
    a read-only array the caller made is still copied and checked."""
    import gc

    p = FrictionContact(3, np.eye(3), [-1.0, 0.0, 0.0], [0.5])
    p2 = FrictionContact(3, p.W, np.array([-2.0, 0.0, 0.0]), p.mu)
    assert p2.W is p.W and p2.mu is p.mu
    W = np.eye(3)
    W[0, 0] = np.nan
    W.setflags(write=False)
    with pytest.raises(ProblemError, match="non-finite"):
        FrictionContact(3, W, [0.0, 0.0, 0.0], [0.5])
    mu = np.array([-0.5])
    mu.setflags(write=False)
    with pytest.raises(ProblemError, match="mu"):
        FrictionContact(3, p.W, [0.0, 0.0, 0.0], mu)
    with pytest.raises(ProblemError, match="mu"):       # a checked matrix is not a checked coefficient
        FrictionContact(3, p.W, [0.0, 0.0, 0.0], -p.W[0])
    own = np.eye(3)
    p3 = FrictionContact(3, own, [0.0, 0.0, 0.0], [0.5])
    assert p3.W is not own and not p3.W.flags.writeable
    from nsopt.problems._base import MATRICES, Checked

    assert p.W in MATRICES and p3.W in MATRICES and own not in MATRICES
    checked, kept = Checked(), [np.zeros(3) for _ in range(10)]
    for a in kept:
        checked.add(a)
    for _ in range(500):                  # arrays that come and go: their entries are swept
        checked.add(np.zeros(3))
    gc.collect()
    assert all(a in checked for a in kept) and len(checked._refs) <= 64


def test_diag_blocks_sparse_equals_dense():
    """friction.diag_blocks: the (nc, dim, dim) diagonal blocks of a sparse W (unsorted, with duplicate
    entries, summed) equal those of its dense copy (rtol 1e-14)."""
    from nsopt.problems.friction import diag_blocks
    rng = np.random.default_rng(3)
    for dim in (2, 3):
        nc = 17
        n = nc * dim
        rows, cols = rng.integers(0, n, 400), rng.integers(0, n, 400)
        W = sp.coo_matrix((rng.standard_normal(400), (rows, cols)), shape=(n, n))   # duplicates kept
        want = diag_blocks(W.toarray(), nc, dim)
        C = W.tocsr()
        order = np.argsort(W.row, kind="stable")          # CSR by hand: rows' entries unsorted, duplicates kept
        raw = sp.csr_matrix((W.data[order], W.col[order], np.r_[0, np.cumsum(np.bincount(W.row, minlength=n))]),
                            shape=(n, n))
        assert not raw.has_canonical_format
        for Ws in (W, C, sp.csr_array(C), raw):
            got = diag_blocks(Ws, nc, dim)
            np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)
            assert got.shape == (nc, dim, dim)


def test_rho_eigenvalues_are_numpys_bits():
    """The split spectral rho (solvers._newton_kernels.rho_of_blocks) takes its eigenvalues from LAPACK's dsyevd
    called directly (_linalg_kernels.sym_eigvals): the same bits as NumPy's eigvalsh, on which the corpus problems'
    Newton paths depend (a moved last bit sends RockPile_tob1 elsewhere)."""
    from nsopt._linalg_kernels import sym_eig_work, sym_eigvals
    from nsopt.solvers.newton import _rho_from_blocks
    rng = np.random.default_rng(4)
    work = sym_eig_work()
    for k in range(400):
        n = 2 + k % 2
        A = rng.standard_normal((n, n)) * 10.0 ** rng.uniform(-8, 8)
        if k % 7 == 0:
            A = np.outer(A[0], A[0])                       # rank one: repeated zero eigenvalues
        S = 0.5 * (A + A.T)
        w = np.empty(n)
        assert sym_eigvals(S.copy(), w, *work) == 0
        assert np.array_equal(w, np.linalg.eigvalsh(S))
    for dim in (2, 3):
        D = rng.standard_normal((50, dim, dim))
        D = D @ D.transpose(0, 2, 1) + 0.1 * rng.standard_normal((50, dim, dim))
        D[3] = -np.eye(dim)                                 # not positive: the median of the others
        rhoN, rhoT, rho_pgs = _rho_from_blocks(D, "auto", np.full(50, 0.5))
        S = 0.5 * (D + D.transpose(0, 2, 1))
        lmax = np.array([np.linalg.eigvalsh(s)[-1] for s in S])
        lmax[lmax <= 0] = np.median(lmax[lmax > 0])
        assert np.array_equal(rho_pgs, 1.0 / lmax)
        lT = np.array([np.linalg.eigvalsh(s[1:, 1:])[-1] for s in S])
        assert np.array_equal(rhoT, 1.0 / np.where(lT > 0, lT, lmax))
        assert np.array_equal(rhoN, 1.0 / np.where(D[:, 0, 0] > 0, D[:, 0, 0], lmax))


def test_trust_travels_with_the_argument_not_a_global_list():
    """replace() and assembled() mark the arrays they pass on (problems._base.Trusted) instead of listing
    them in a module-level list that every validation in the process consulted."""
    import nsopt.problems._base as base
    from nsopt.problems._base import Trusted, as_matrix, as_vector

    assert not hasattr(base, "_TRUSTED")
    p = nsopt.FrictionContact(3, np.eye(6), np.ones(6), [0.3, 0.5])
    r = p.replace(q=-np.ones(6))
    assert r.W is p.W and r.mu is p.mu and r.q is not p.q
    W = sp.eye(6, format="csr")
    a = nsopt.FrictionContact.assembled(("W",), dim=3, W=W, q=np.ones(6), mu=[0.3, 0.5])
    assert a.W is W
    bad = np.array([np.nan, 1.0])
    assert as_vector(Trusted(bad), "q", "X", size=2) is bad and as_matrix(Trusted(W), "W", "X") is W
    with pytest.raises(ProblemError, match="non-finite"):
        as_vector(bad, "q", "X")           # the same array, untrusted, is checked
