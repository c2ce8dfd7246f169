"""PGS / PSOR on LCP, MLCP and relay problems: generated problems with known solutions, options,
statuses and bad input."""

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt
from nsopt import generate as g
from nsopt.exceptions import OptionError
from nsopt.result import Status

TOL = 1e-8


def _gen(kind, seed):
    if kind == "lcp":
        return g.lcp(n=12, seed=seed)
    if kind == "lcp-p":
        return g.lcp(n=8, seed=seed, matrix="p")
    if kind == "mlcp":
        return g.mlcp(n=4, m=6, seed=seed)
    return g.relay(n=8, seed=seed)


@pytest.mark.parametrize("method", ["pgs", "psor"])
@pytest.mark.parametrize("kind", ["lcp", "lcp-p", "mlcp", "relay"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_solved(kind, method, seed):
    p, known = _gen(kind, seed)
    sol = nsopt.solve(p, method=method, tol=TOL, max_iter=20000)
    assert sol.status is Status.SOLVED, sol
    assert p.error(sol.z) <= TOL
    assert sol.error == pytest.approx(p.error(sol.z))


def test_mlcp_free_rows_and_known_solution():
    p, known = g.mlcp(n=3, m=5, seed=4)
    sol = nsopt.solve(p, method="pgs", tol=1e-12, max_iter=20000)
    assert sol.success
    # M symmetric positive definite: the solution is unique
    np.testing.assert_allclose(sol.z, known["z"], atol=1e-8)
    assert np.max(np.abs(sol.w[:3])) < 1e-9


def test_relay_iterate_in_box():
    p, known = g.relay(n=10, seed=3)
    sol = nsopt.solve(p, method="pgs", tol=1e-10, max_iter=20000)
    assert sol.success
    assert np.all(sol.z >= p.lb - 1e-14) and np.all(sol.z <= p.ub + 1e-14)
    np.testing.assert_allclose(sol.z, known["z"], atol=1e-7)


def test_sparse_matrix_kept_sparse():
    p0, _ = g.lcp(n=15, seed=5)
    p = nsopt.LCP(sp.csr_matrix(p0.M), p0.q)
    sol = nsopt.solve(p, method="pgs")
    assert sol.success and p.error(sol.z) <= TOL


def test_history_and_callback():
    p, _ = g.lcp(n=10, seed=1)
    sol = nsopt.solve(p, method="psor", history=True, omega=1.1)
    assert sol.success and len(sol.history) == sol.nit + 1   # history[0]: the starting point
    assert sol.history[-1] == pytest.approx(sol.error)
    seen = []

    def cb(k, x, err):
        seen.append((k, err))
        if k == 3:
            raise StopIteration

    sol = nsopt.solve(p, method="pgs", tol=1e-14, callback=cb)
    assert sol.status is Status.CALLBACK_STOP and sol.nit == 3 and [k for k, _ in seen] == [1, 2, 3]


def test_max_iter_returns_best_iterate():
    p, _ = g.lcp(n=30, seed=2, matrix="p")
    sol = nsopt.solve(p, method="pgs", tol=1e-15, max_iter=3)
    assert sol.status is Status.MAX_ITER and sol.nit == 3 and np.isfinite(sol.error)


def test_warm_start_z0():
    p, known = g.lcp(n=10, seed=6)
    sol = nsopt.solve(p, method="pgs", z0=known["z"])
    assert sol.success and sol.nit == 0


def test_zero_diagonal_is_numerical_error_not_exception():
    p = nsopt.LCP([[0.0, 1.0], [1.0, 2.0]], [-1.0, -1.0])
    sol = nsopt.solve(p, method="pgs")
    assert sol.status is Status.NUMERICAL_ERROR and "zero diagonal" in sol.message


def test_negative_diagonal_on_constrained_row():
    p = nsopt.Relay([[-1.0, 0.0], [0.0, 2.0]], [1.0, 1.0], -1.0, 1.0)
    sol = nsopt.solve(p, method="pgs")
    assert sol.status is Status.NUMERICAL_ERROR and "negative diagonal" in sol.message


def test_mlcp_negative_diagonal_on_free_row_is_fine():
    # 0 = -u + 2 (free row with M_00 = -1), w = v - 1 >= 0 ⊥ v >= 0 -> u = 2, v = 1
    p = nsopt.MLCP.from_matrix([[-1.0, 0.0], [0.0, 1.0]], [2.0, -1.0], 1)
    sol = nsopt.solve(p, method="pgs")
    assert sol.success
    np.testing.assert_allclose(sol.z, [2.0, 1.0])


@pytest.mark.parametrize("omega", [0.0, 2.0, -1.0, "fast"])
def test_psor_bad_omega(omega):
    p, _ = g.lcp(n=3, seed=0)
    with pytest.raises(OptionError, match="omega"):
        nsopt.solve(p, method="psor", omega=omega)


def test_bad_z0():
    p, _ = g.lcp(n=3, seed=0)
    with pytest.raises(OptionError, match="z0"):
        nsopt.solve(p, method="pgs", z0=[1.0, 2.0])


# ---------------------------------------------------------------- Siconos corpus
from conftest import corpus_params, load_corpus_file  # noqa: E402


@pytest.mark.parametrize("path", corpus_params("lcp", "mlcp", "relay"))
@pytest.mark.parametrize("method", ["pgs", "psor"])
def test_corpus_box_problems(path, method, corpus):
    """Every corpus file: solved to 1e-8 when the diagonal allows a Gauss–Seidel sweep, else a
    NUMERICAL_ERROR status with a message (never an exception)."""
    p = load_corpus_file(path)
    if p is None:                       # refused on purpose, with its error (conftest.EXPECTED_INVALID)
        return
    sol = nsopt.solve(p, method=method, tol=TOL, max_iter=10000)
    d = np.asarray(p.M.diagonal() if sp.issparse(p.M) else np.diag(p.M))
    if np.any(d == 0):
        assert sol.status is Status.NUMERICAL_ERROR and "diagonal" in sol.message
    else:
        assert sol.status is Status.SOLVED, sol
        assert p.error(sol.z) <= TOL
