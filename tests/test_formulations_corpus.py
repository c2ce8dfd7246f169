"""Convex formulations on the shared Siconos corpus (marker ``corpus``).

* every lcp / mlcp / relay problem with a convex view (symmetric PSD M) is solved by ``qp`` to the
  Siconos error <= 1e-8; the others are refused with NotApplicable;
* a few small fc3d files by ``socp-fp`` (the full fc3d folder is in benchmarks/bench_convex.py);
* the small gfc3d files by the primal ``socp-fp``.
"""

from __future__ import annotations

import pytest
from conftest import corpus_params, need_corpus

import nsopt
from nsopt.exceptions import FormatError, NotApplicable, ProblemError
from nsopt.formulations import check_symmetric_psd

FC3D_SMALL = {"FC3D_Example1.dat", "FrictionContact3D_1c.dat", "FrictionContact3D_RR_1c.dat",
              "GFC3D_TwoRods1-condensed.dat", "NESpheres_10_1.dat", "Rover1039.dat", "Rover4144.dat",
              "Rover4609.dat", "Confeti-ex13-4contact-Fc3D-SBM.dat", "OneObject-i1028-138.hdf5.dat"}
GFC3D_SMALL = {"GFC3D_Example0.dat", "GFC3D_Example00.dat", "GFC3D_Example00_badly_scaled.dat",
               "GFC3D_Example1.dat", "GFC3D_Example0_SBM.dat"}


def _load(path):
    need_corpus()
    try:
        return nsopt.io.load(path)
    except (FormatError, ProblemError):   # Rectangular_mlcp.dat: not a square MLCP, refused typed
        return None


@pytest.mark.parametrize("path", corpus_params("lcp", "mlcp", "relay"))
def test_qp_on_corpus(path):
    p = _load(path)
    if p is None:
        return
    why = check_symmetric_psd(p.M)
    if why:
        with pytest.raises(NotApplicable):
            nsopt.solve(p, method="qp")
        assert "qp" not in nsopt.methods(p)
        return
    sol = nsopt.solve(p, method="qp")
    assert sol.error <= 1e-8, f"{path.name}: {sol.error:.2e} {sol.message}"


def test_corpus_has_convex_views():
    """The convex view covers part of the corpus, not none of it (guards the PSD check)."""
    need_corpus()
    from nsopt.data import corpus_files

    n = sum(1 for f in corpus_files("relay") if check_symmetric_psd(nsopt.io.load(f).M) is None)
    assert n == len(corpus_files("relay")) > 0


@pytest.mark.parametrize("path", [p for p in corpus_params("fc3d")
                                  if p.values[0] is None or p.values[0].name in FC3D_SMALL])
def test_socp_fp_small_fc3d(path):
    p = _load(path)
    sol = nsopt.solve(p, method="socp-fp")
    assert sol.error <= 1e-8, f"{path.name}: {sol.error:.2e} {sol.message}"


@pytest.mark.parametrize("path", [p for p in corpus_params("gfc3d")
                                  if p.values[0] is None or p.values[0].name in GFC3D_SMALL])
def test_socp_fp_small_gfc3d(path):
    p = _load(path)
    sol = nsopt.solve(p, method="socp-fp")
    assert sol.error <= 1e-8, f"{path.name}: {sol.error:.2e} {sol.message}"


@pytest.mark.parametrize("method", ["socp-fp", "socp-tresca"])
def test_time_limit_on_rockpile(method):
    """Issue 8 must-show: time_limit=0.05 on RockPile_tob1 returns within 0.2 s plus the one-off
    build (the CVXPY compile, Solution.build_time), with TIME_LIMIT and the best iterate."""
    from nsopt.data import data_dir

    need_corpus()
    f = data_dir() / "fc3d" / "RockPile_tob1.dat"
    if not f.is_file():
        pytest.skip("RockPile_tob1.dat not in the corpus")
    p = nsopt.io.load(f)
    sol = nsopt.solve(p, method=method, time_limit=0.05)
    assert sol.status is nsopt.Status.TIME_LIMIT
    assert sol.solve_time - sol.build_time < 0.2 + 0.3      # margin for a loaded test machine
    assert sol.r is not None and sol.r.shape == (p.size,)
