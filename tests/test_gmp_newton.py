"""GenericMechanical by the global semismooth Newton ("nsn") and the block Gauss–Seidel ("nsgs"):
the Siconos corpus, generated stacks of cubes (strongly coupled blocks), options."""

import sys
from pathlib import Path

import numpy as np
import pytest

import nsopt
from nsopt.exceptions import OptionError
from nsopt.io import load
from nsopt.result import Status

from conftest import corpus_params

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from bench_gmp import stack_gmp  # noqa: E402


@pytest.mark.parametrize("path", corpus_params("gmp"))
@pytest.mark.parametrize("method", ["nsn", "nsgs"])
def test_corpus_solved_by_both(path, method):
    """Every gmp/ problem of the Siconos corpus to Siconos' gmp error <= 1e-8."""
    if path is None:
        pytest.skip("no corpus")
    p = load(path)
    s = nsopt.solve(p, method=method, tol=1e-8, max_iter=10000)
    assert s.status is Status.SOLVED and s.error <= 1e-8, (s.status, s.error, s.message)


def _check_laws(p, r, tol=1e-7):
    """Each block's own law, checked directly on (r, u = Mr + q)."""
    u = p.u(r)
    for b, s in p.slices():
        rk, uk = r[s], u[s]
        if b.kind == "equality":
            assert np.all(np.abs(uk) <= tol)
        elif b.kind == "lcp":
            assert np.all(rk >= -tol) and np.all(uk >= -tol) and abs(rk @ uk) <= tol
        elif b.kind == "relay":
            assert np.all(rk >= np.array(b.lb) - tol) and np.all(rk <= np.array(b.ub) + tol)
        else:
            assert rk[0] >= -tol and np.linalg.norm(rk[1:]) <= b.mu * rk[0] + tol   # in the cone
            assert uk[0] >= -tol and abs(rk[0] * uk[0]) <= tol


@pytest.mark.parametrize("N", [3, 6])
def test_stack_newton_and_gauss_seidel(N):
    """A stack of cubes (frictional contacts, hinges, stops, frictional hinges): both methods reach
    1e-8, and the Newton method needs far fewer iterations than Gauss–Seidel needs sweeps."""
    p = stack_gmp(N)
    kinds = {b.kind for b in p.blocks}
    assert kinds == {"fc3d", "equality", "lcp", "relay"}
    nw = nsopt.solve(p, method="nsn", tol=1e-10)
    gs = nsopt.solve(p, method="nsgs", tol=1e-8, max_iter=20000)
    assert nw.success and gs.success, (nw.message, gs.message)
    _check_laws(p, nw.r)
    _check_laws(p, gs.r, tol=1e-5)
    assert nw.nit < 30
    if N == 6:
        assert gs.nit > 100 and nw.nit * 10 < gs.nit
    # the normal reactions of the stack carry the weight (the contact normal rows are the r[3i])
    assert np.all(nw.r[0:3 * N:3] > 0)


def test_natural_map_lcp_and_scaled_rho():
    p = stack_gmp(4, seed=3)
    for opts in (dict(lcp="nm"), dict(rho="auto"), dict(rho=(1.0, 0.5))):
        s = nsopt.solve(p, method="nsn", tol=1e-9, **opts)
        assert s.success, (opts, s.message)


def test_warm_start_and_contract():
    p = stack_gmp(4)
    s = nsopt.solve(p, method="nsn", tol=1e-11)
    again = nsopt.solve(p, method="nsn", tol=1e-10, warm_start=s)
    assert again.nit == 0 and again.success
    s = nsopt.solve(p, method="nsn", tol=1e-30, max_iter=3, history=True)
    assert s.status is Status.MAX_ITER and s.nit == 3 and len(s.history) == 4


@pytest.mark.parametrize("opt", [dict(lcp="ssn"), dict(rho=-1.0), dict(rho="big"), dict(max_backtracks=0),
                                 dict(omega=1.0)])
def test_bad_options(opt):
    with pytest.raises(OptionError):
        nsopt.solve(stack_gmp(3), method="nsn", **opt)


def test_sparse_path_on_a_tall_stack():
    """n > 400 with a sparse M: J assembled and factorised sparse (SuperLU); 101 equal cubes."""
    import scipy.sparse as sp

    p = stack_gmp(101, ratio=1.0)
    ps = nsopt.GenericMechanical(sp.csr_matrix(p.M), p.q, p.blocks)
    assert ps.size > 400
    s = nsopt.solve(ps, method="nsn", tol=1e-9, max_iter=400)
    assert s.success, s.message
    _check_laws(ps, s.r)
