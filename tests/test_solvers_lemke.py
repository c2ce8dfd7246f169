"""Lexicographic Lemke: LCP (property tests, degeneracy, rays as infeasibility certificates),
and its reductions for Relay, MLCP, AVI and FC2D; corpus counts against Siconos' LEMKE."""

import numpy as np
import pytest

import nsopt
from nsopt import generate as g
from nsopt.exceptions import OptionError
from nsopt.result import Status
from nsopt.solvers.lemke import farkas_certificate

from conftest import corpus_params, load_corpus_file, need_corpus
from conftest import given, settings, st  # hypothesis' names (property tests skip without it)

FAST = settings(max_examples=25, deadline=None)


def _check_certificate(M, q, y):
    """y proves {z >= 0 : Mz + q >= 0} empty: y >= 0, M^T y <= 0, q^T y < 0 (checked here, independently)."""
    M, q, y = np.asarray(M, float), np.asarray(q, float), np.asarray(y, float)
    y = y / np.max(np.abs(y))
    assert np.all(y >= -1e-12)
    assert np.all(M.T @ y <= 1e-9 * (1 + np.abs(M).max()))
    assert q @ y < -1e-9


# ---------------------------------------------------------------- LCP: property tests

@FAST
@given(n=st.integers(1, 40), seed=st.integers(0, 10_000))
def test_p_matrix_lcp_solved_to_1e_12(n, seed):
    p, sol = g.lcp(n, seed=seed, matrix="p")
    s = nsopt.solve(p, method="lemke", tol=1e-12)
    assert s.status is Status.SOLVED
    assert p.error(s.z) <= 1e-12
    np.testing.assert_allclose(s.z, sol["z"], atol=1e-9)   # P-matrix: unique solution


@FAST
@given(n=st.integers(2, 30), seed=st.integers(0, 10_000), kind=st.sampled_from(["p", "psd", "spd"]),
       frac=st.sampled_from([0.3, 0.7, 1.0]))
def test_degenerate_lcp_does_not_cycle(n, seed, kind, frac):
    """z_i = w_i = 0 on a fraction of the indices: ties in the ratio test at every step."""
    rng = np.random.default_rng(seed)
    make = {"p": g.p_matrix, "psd": lambda n, r: g.psd_matrix(n, r, max(1, n // 2)), "spd": g.spd_matrix}
    M = make[kind](n, rng)
    z, w = g.complementary_pair(n, rng, degenerate=frac)
    p = nsopt.LCP(M, w - M @ z)
    s = nsopt.solve(p, method="lemke", max_iter=10 * n + 100)
    assert s.status is Status.SOLVED, (s.status, s.message)
    assert s.nit <= 10 * n + 100


@FAST
@given(n=st.integers(2, 25), seed=st.integers(0, 10_000))
def test_infeasible_psd_lcp_gives_certified_ray(n, seed):
    """PSD (copositive-plus) M with M y = 0 for some y >= 0 and q^T y < 0: no feasible z."""
    rng = np.random.default_rng(seed)
    y = rng.uniform(0.0, 1.0, n)
    y[rng.integers(n)] = 1.0
    P = np.eye(n) - np.outer(y, y) / (y @ y)
    B = P @ rng.standard_normal((n, n))
    M = B @ B.T
    q = rng.standard_normal(n)
    q -= (q @ y + rng.uniform(0.1, 1.0)) * y / (y @ y)   # q^T y < 0
    s = nsopt.solve(nsopt.LCP(M, q), method="lemke")
    assert s.status is Status.INFEASIBLE, (s.status, s.message)
    assert s.info["certificate"]
    _check_certificate(M, q, s.info["ray"])


@pytest.mark.parametrize("M,q", [
    ([[0.0, 1.0], [-1.0, 0.0]], [-1.0, -1.0]),            # skew (PSD): w2 = -z1 - 1 < 0
    (np.zeros((3, 3)), [1.0, -1.0, 2.0]),                  # M = 0, a negative q
    ([[1.0, -1.0], [-1.0, 1.0]], [-1.0, -1.0]),            # PSD, M e = 0, q^T e < 0
    ([[0.0]], [-2.0]),                                      # 1 x 1
])
def test_no_solution_small(M, q):
    s = nsopt.solve(nsopt.LCP(M, q), method="lemke")
    assert s.status is Status.INFEASIBLE
    _check_certificate(M, q, s.info["ray"])
    assert farkas_certificate(np.asarray(M, float), np.asarray(q, float), s.info["ray"])


def test_trivial_q_nonnegative():
    s = nsopt.solve(nsopt.LCP(np.eye(3), [1.0, 0.0, 2.0]), method="lemke")
    assert s.success and s.nit == 0 and np.all(s.z == 0)


def test_sparse_and_scaled_inputs():
    import scipy.sparse as sp

    p, sol = g.lcp(30, seed=3, matrix="p")
    for scale_M, scale_q in [(1.0, 1.0), (1e6, 1.0), (1.0, 1e-9), (1e-4, 1e5)]:
        q = scale_q * np.asarray(p.q)
        s = nsopt.solve(nsopt.LCP(sp.csr_matrix(scale_M * np.asarray(p.M)), q), method="lemke", tol=1e-12)
        assert s.success, (scale_M, scale_q, s.error)
        zs = sol["z"] * scale_q / scale_M
        np.testing.assert_allclose(s.z, zs, rtol=1e-8, atol=1e-12 * scale_q / scale_M)


def test_history_callback_and_budget():
    p, _ = g.lcp(12, seed=1, matrix="p")
    seen = []
    s = nsopt.solve(p, method="lemke", history=True, callback=lambda k, x, e: seen.append((k, e)))
    assert s.success and len(s.history) == s.nit + 1 and len(seen) == s.nit   # history[0]: the start
    assert s.history[-1] == pytest.approx(s.error, abs=1e-14)

    def stop(k, x, e):
        if k == 2:
            raise StopIteration
    assert nsopt.solve(p, method="lemke", callback=stop).status is Status.CALLBACK_STOP
    s = nsopt.solve(p, method="lemke", max_iter=2)
    assert s.status is Status.MAX_ITER and s.nit == 2


def test_size_guard():
    import scipy.sparse as sp

    from nsopt.exceptions import NotApplicable
    from nsopt.solvers.lemke import MAX_LCP

    big = nsopt.LCP(sp.identity(MAX_LCP + 1, format="csr"), -np.ones(MAX_LCP + 1))
    assert "lemke" not in nsopt.methods(big)
    with pytest.raises(NotApplicable, match=f"size {MAX_LCP}"):
        nsopt.solve(big, method="lemke")


def test_bad_cover():
    p, _ = g.lcp(4, seed=0)
    with pytest.raises(OptionError, match="covering vector"):
        nsopt.solve(p, method="lemke", cover=[1.0, -1.0, 1.0, 1.0])
    assert nsopt.solve(p, method="lemke", cover=[1.0, 2.0, 3.0, 4.0]).success


# ---------------------------------------------------------------- reductions

@FAST
@given(n=st.integers(1, 15), seed=st.integers(0, 10_000))
def test_relay_generated(n, seed):
    p, sol = g.relay(n, seed=seed)
    s = nsopt.solve(p, method="lemke", tol=1e-12)
    assert s.success, (s.error, s.message)
    np.testing.assert_allclose(s.z, sol["z"], atol=1e-8)


def test_relay_one_sided_and_free_bounds():
    rng = np.random.default_rng(0)
    M = g.spd_matrix(6, rng)
    q = rng.standard_normal(6)
    lb = np.array([-1.0, -np.inf, 0.0, -np.inf, -2.0, 0.5])
    ub = np.array([1.0, 0.3, np.inf, np.inf, 2.0, 0.5])
    p = nsopt.Relay(M, q, lb, ub)
    s = nsopt.solve(p, method="lemke", tol=1e-12)
    assert s.success and np.all(s.z >= lb - 1e-12) and np.all(s.z <= ub + 1e-12)


@FAST
@given(n=st.integers(1, 8), m=st.integers(1, 15), seed=st.integers(0, 10_000))
def test_mlcp_generated(n, m, seed):
    p, sol = g.mlcp(n, m, seed=seed)
    for red in ("schur", "split"):
        s = nsopt.solve(p, method="lemke", tol=1e-10, reduction=red)
        assert s.success, (red, s.error, s.message)
        assert s.info["reduction"] == red


def test_avi_box_as_polyhedron():
    """AVI on a box written as Hz >= k: same solution as the Relay on that box."""
    p, sol = g.relay(6, seed=4)
    n = p.size
    H = np.vstack([np.eye(n), -np.eye(n)])
    k = np.concatenate([p.lb, -np.asarray(p.ub)])
    a = nsopt.AVI(p.M, p.q, H, k)
    s = nsopt.solve(a, method="lemke", tol=1e-10)
    assert s.success, s.error
    assert s.info["kkt_error"] <= 1e-12
    np.testing.assert_allclose(s.z, sol["z"], atol=1e-9)


def test_avi_bounded_polytope_nonsymmetric():
    rng = np.random.default_rng(7)
    n, m = 4, 9
    M = g.p_matrix(n, rng)
    H = rng.standard_normal((m, n))
    k = -rng.uniform(0.5, 1.5, m)          # 0 is interior
    q = 3 * rng.standard_normal(n)
    s = nsopt.solve(nsopt.AVI(M, q, H, k), method="lemke", tol=1e-10)
    assert s.info["kkt_error"] <= 1e-12 and np.all(H @ s.z >= k - 1e-10)
    assert s.success, s.error


def test_avi_singular_M_linear_program():
    """M = 0: the AVI is the LP min q^T z over a bounded polytope; the KKT MLCP has a singular A,
    so the split reduction (z = z+ - z-) is used; its LCP matrix is skew, hence copositive-plus."""
    rng = np.random.default_rng(2)
    n, m = 3, 8
    H = np.vstack([np.eye(n), -np.eye(n), rng.standard_normal((m - 2 * n, n))])
    k = -np.ones(m)
    q = rng.standard_normal(n)
    s = nsopt.solve(nsopt.AVI(np.zeros((n, n)), q, H, k), method="lemke", tol=1e-10)
    assert s.info["reduction"] == "split" and s.info["kkt_error"] <= 1e-12
    from scipy.optimize import linprog

    lp = linprog(q, A_ub=-H, b_ub=-k, bounds=[(None, None)] * n)
    assert q @ s.z == pytest.approx(lp.fun, abs=1e-9)


@FAST
@given(nc=st.integers(1, 12), seed=st.integers(0, 10_000), mu=st.sampled_from([0.0, 0.3, 1.0]))
def test_fc2d_generated(nc, seed, mu):
    p, sol = g.friction_contact(nc, dim=2, seed=seed, mu=mu)
    s = nsopt.solve(p, method="lemke", tol=1e-10)
    assert s.success, (s.error, s.message)
    assert p.error(s.r) <= 1e-10


# ---------------------------------------------------------------- corpus (Siconos' LEMKE as anchor)

# Siconos 4.4 LEMKE at tol 1e-8 (../shared/tools/siconos_bench.py): lcp 15/16 (fails lcp_CPS_3, a
# bimatrix game: ray at the first pivot), mlcp LCP_LEMKE 11/14 (fails PD, diodeBridge,
# diodeBridge20: singular A), relay 6/6, fc2d 7/8 (fails FC2D_SliderCrankLagrangian00001;
# granularflowonwall_02020 is not run, n > 3000).
SICONOS_LEMKE_FAILS = {"lcp_CPS_3.dat", "PD_mlcp.dat", "diodeBridge_mlcp.dat", "diodeBridge20_mlcp.dat",
                       "FC2D_SliderCrankLagrangian00001.dat"}
TOO_BIG = {"fc2d_granularflowonwall_02020_00213.dat"}   # 6060 x 6060 LCP: benchmarks/ only


def _load(path):
    if path is None:
        need_corpus()
    return load_corpus_file(path)       # None: refused on purpose, with its error (conftest.EXPECTED_INVALID)


@pytest.mark.parametrize("path", corpus_params("lcp", "relay", "mlcp", "fc2d"))
def test_corpus_lemke(path):
    if path is not None and path.name in TOO_BIG:
        pytest.skip("large: run benchmarks/bench_lemke.py")
    p = _load(path)
    if p is None:
        return
    s = nsopt.solve(p, method="lemke")
    if path.name in SICONOS_LEMKE_FAILS:
        if not s.success:   # allowed, but then the path ended without a false certificate
            assert s.status in (Status.STALLED, Status.INFEASIBLE, Status.INACCURATE, Status.MAX_ITER)
            assert not s.info.get("certificate", False)
        return
    assert s.success, (path.name, s.status, s.error, s.message)
    assert p.error(s.z if s.z is not None else s.r) <= 1e-8


@pytest.mark.corpus
def test_corpus_bimatrix_game_ray_is_not_a_certificate(corpus):
    """lcp_CPS_3: M = [[0, A], [B, 0]] (nonnegative, not copositive-plus): Lemke ends on a ray
    (as Siconos' LEMKE does), which proves nothing; enumeration and newton-fb solve it."""
    p = nsopt.io.load(corpus / "lcp" / "lcp_CPS_3.dat")
    s = nsopt.solve(p, method="lemke")
    assert s.status is Status.STALLED and not s.info["certificate"]
    assert nsopt.solve(p, method="enum").success


# ---------------------------------------------------------------- accuracy of the final basis

def test_refined_solve_reaches_the_rounding_level_on_an_ill_conditioned_system():
    from scipy.linalg import hilbert

    from nsopt.linalg import refined_solve

    A = hilbert(9)                      # cond ~ 5e11
    x = np.arange(1.0, 10.0)
    b = A @ x
    xr = refined_solve(A, b)
    res = np.linalg.norm(A.astype(np.longdouble) @ xr.astype(np.longdouble) - b)
    assert float(res) <= 4 * np.finfo(float).eps * np.linalg.norm(b)


def test_basis_repair_recovers_from_a_final_basis_one_flip_away():
    """What a long path's round-off can leave (deltasigma_mlcp under some BLAS): the basis found is
    one index away from the solution's; the repair moves it and the answer is exact again."""
    from nsopt.solvers.lemke import _basis_points

    p, sol = g.lcp(30, seed=4, matrix="p")
    M, q = np.asarray(p.M), np.asarray(p.q)
    J = sol["z"] > 0
    wrong = J.copy()
    wrong[np.flatnonzero(J)[0]] = False            # one basic variable missing
    wrong[np.flatnonzero(~J)[0]] = True            # one extra
    noisy = sol["z"] * (1 + 1e-7)
    cands = _basis_points(M, q, np.zeros(30), np.full(30, np.inf), noisy, wrong)
    assert p.error(noisy) > 1e-9 and min(p.error(c) for c in cands) <= 1e-14


@pytest.mark.corpus
def test_deltasigma_mlcp_is_accurate(corpus):
    """issue 7 §1: 'z0 left the basis' with error 1.58e-7 under numpy 2.4.6 / scipy 1.17.1."""
    p = nsopt.io.load(corpus / "mlcp" / "deltasigma_mlcp.dat")
    s = nsopt.solve(p, method="lemke", tol=1e-12)
    assert s.success and s.error <= 1e-12 and s.info["reduction"] == "schur", (s.error, s.message)


def test_warm_start_with_the_same_active_set_takes_no_pivot():
    p, sol = g.lcp(40, seed=8, matrix="p")
    s = nsopt.solve(p, method="lemke", tol=1e-12)
    J = s.z > 0
    p2 = p.replace(q=np.asarray(p.q) + 1e-3 * np.where(J, 1.0, 0.0))    # same active set, new q
    cold = nsopt.solve(p2, method="lemke", tol=1e-12)
    warm = nsopt.solve(p2, method="lemke", tol=1e-12, warm_start=s)
    assert cold.success and cold.nit > 0
    assert warm.success and warm.nit == 0 and warm.info["pivots"] == 0
    np.testing.assert_allclose(warm.z, cold.z, atol=1e-10)
    bad = nsopt.solve(p2, method="lemke", tol=1e-12, warm_start=np.ones(40))   # not a solution's support
    assert bad.success and bad.nit == cold.nit


@pytest.mark.corpus
def test_corpus_pivots_against_siconos(corpus, tmp_path):
    """Every LCP of the corpus that Siconos 4.4's LEMKE solves, nsopt's lemke solves, in at most
    Siconos' pivots + 1 (nsopt also counts the first pivot, z0 entering)."""
    import csv
    import shutil
    import subprocess
    from pathlib import Path

    tool = Path(__file__).resolve().parents[2] / "shared" / "tools" / "siconos_bench.py"
    if not tool.is_file() or shutil.which("/usr/bin/python3") is None:
        pytest.skip("Siconos bench tool or /usr/bin/python3 missing")
    chk = subprocess.run(["/usr/bin/python3", "-c", "import siconos.numerics"], capture_output=True)
    if chk.returncode:
        pytest.skip("Siconos is not installed for /usr/bin/python3")
    out = tmp_path / "sic.csv"
    subprocess.run(["/usr/bin/python3", str(tool), "--data", str(corpus), "--folders", "lcp", "--solvers",
                    "LEMKE", "--out", str(out)], check=True, capture_output=True, timeout=600)
    rows = list(csv.DictReader(open(out)))
    assert rows
    for row in rows:
        if row["status"] != "ok" or float(row["err_check"]) > 1e-8:
            continue
        p = nsopt.io.load(corpus / row["file"])
        s = nsopt.solve(p, method="lemke")
        assert s.success, (row["file"], s.status, s.message)
        assert s.info["pivots"] <= int(row["iterations"]) + 1, (row["file"], s.info["pivots"], row["iterations"])
