"""Reductions as objects (nsopt.reductions), with cvxpy's meanings: ``apply(problem) -> (problem,
inverse_data)`` pure, ``invert(solution, inverse_data)``; round trips judged by the original
problem's own error measure; Chain; wrong kinds."""

import numpy as np
import pytest

import nsopt
from nsopt import generate as g
from nsopt.exceptions import NotApplicable, OptionError
from nsopt.reductions import (TO_LCP, AVIToLCP, AVIToMLCP, Chain, FC2DToLCP, MLCPToLCP, Reduction, RelayToLCP,
                              box_of, lcp_size)
from conftest import given, settings, st  # hypothesis' names (property tests skip without it)

FAST = settings(max_examples=15, deadline=None)


def _solve_lcp(lcp):
    """The reduced LCP solved by enumeration (small) or Lemke: an independent check of the reduction."""
    method = "enum" if lcp.size <= 12 else "lemke"
    s = nsopt.solve(lcp, method=method, tol=1e-12)
    assert s.success, (method, s.status, s.error)
    return s


@FAST
@given(n=st.integers(1, 6), seed=st.integers(0, 10_000))
def test_relay_round_trip(n, seed):
    p, sol = g.relay(n, seed=seed)
    r = RelayToLCP()
    lcp, data = r.apply(p)
    assert isinstance(lcp, nsopt.LCP) and lcp.size == lcp_size(p)
    z = r.invert({"z": _solve_lcp(lcp).z}, data)["z"]
    assert p.error(z) <= 1e-10
    np.testing.assert_allclose(z, sol["z"], atol=1e-8)      # SPD relay: unique solution


def test_relay_one_sided_and_free_bounds_and_basis_support():
    rng = np.random.default_rng(0)
    M = g.spd_matrix(5, rng)
    lb = np.array([-1.0, -np.inf, 0.0, -np.inf, 0.5])
    ub = np.array([1.0, 0.3, np.inf, np.inf, 0.5])
    p = nsopt.Relay(M, rng.standard_normal(5), lb, ub)
    r = RelayToLCP()
    lcp, data = r.apply(p)
    assert lcp.size == 5 + 2 + 1          # two boxes with both bounds (y rows), one free (x+ and x-)
    s = _solve_lcp(lcp)
    z = r.invert(s, data)["z"]            # a Solution of the reduced problem, as cvxpy's invert takes
    assert p.error(z) <= 1e-10
    F = r.basis_support(s.z > 0, data)
    inside = (z > lb + 1e-12) & (z < ub - 1e-12)
    assert np.all(F[inside]) and F[3]          # interior components are in the support; free always


@FAST
@given(n=st.integers(1, 4), m=st.integers(1, 6), seed=st.integers(0, 10_000),
       how=st.sampled_from(["schur", "split", "auto"]))
def test_mlcp_round_trip(n, m, seed, how):
    p, sol = g.mlcp(n, m, seed=seed)
    r = MLCPToLCP(how)
    lcp, data = r.apply(p)
    assert data["how"] == ("schur" if how == "auto" else how)
    assert lcp.size == (m if data["how"] == "schur" else 2 * n + m)
    z = r.invert({"z": _solve_lcp(lcp).z}, data)["z"]
    assert p.error(z) <= 1e-10
    np.testing.assert_allclose(z, sol["z"], atol=1e-8)


def test_mlcp_without_free_variables_is_the_lcp_itself():
    p, _ = g.mlcp(0, 4, seed=1)
    r = MLCPToLCP()
    lcp, data = r.apply(p)
    assert data["how"] == "none" and np.array_equal(np.asarray(lcp.M), np.asarray(p.M))
    assert MLCPToLCP().basis_support(np.array([True, False, True, False]), data).tolist() == \
        [True, False, True, False]


def test_avi_chain_round_trip_and_multipliers():
    rng = np.random.default_rng(3)
    n = 3
    M = g.spd_matrix(n, rng)
    H = np.vstack([np.eye(n), -np.eye(n)])
    k = -np.ones(2 * n)
    p = nsopt.AVI(M, 3 * rng.standard_normal(n), H, k)
    r = AVIToLCP()
    assert isinstance(r, Chain) and r.source == ("avi",) and r.target == "lcp"
    lcp, data = r.apply(p)
    s = _solve_lcp(lcp)
    z = r.invert({"z": s.z}, data)["z"]
    assert z.shape == (n,) and p.error(z) <= 1e-9
    # the same through the explicit two steps, with the multipliers of the KKT system
    kkt = AVIToMLCP()
    mlcp, kdata = kkt.apply(p)
    assert mlcp.kind == "mlcp" and mlcp.n == n
    red = MLCPToLCP()
    lcp2, d2 = red.apply(mlcp)
    zl = red.invert({"z": _solve_lcp(lcp2).z}, d2)["z"]
    lam = kkt.multipliers({"z": zl}, kdata)
    assert np.all(lam >= -1e-12) and np.allclose(M @ zl[:n] + p.q - H.T @ lam, 0, atol=1e-9)


@FAST
@given(nc=st.integers(1, 4), seed=st.integers(0, 10_000), mu=st.sampled_from([0.0, 0.3, 1.0]))
def test_fc2d_round_trip(nc, seed, mu):
    p, _ = g.friction_contact(nc, dim=2, seed=seed, mu=mu)
    r = FC2DToLCP()
    lcp, data = r.apply(p)
    assert lcp.size == 3 * nc
    x = r.invert({"z": _solve_lcp(lcp).z}, data)
    assert set(x) == {"r"} and p.error(x["r"]) <= 1e-10


def test_apply_is_stateless_and_invert_takes_its_data():
    p1, _ = g.relay(4, seed=1)
    p2, _ = g.relay(4, seed=2)
    r = RelayToLCP()
    before = dict(vars(r))
    l1, d1 = r.apply(p1)
    assert vars(r) == before                               # nothing of the call is kept
    l2, d2 = r.apply(p2)
    z1 = r.invert({"z": _solve_lcp(l1).z}, d1)["z"]      # p1's data, although p2 was applied last
    assert p1.error(z1) <= 1e-10
    assert p2.error(r.invert({"z": _solve_lcp(l2).z}, d2)["z"]) <= 1e-10


def test_wrong_kind_and_misuse():
    p, _ = g.lcp(3, seed=0)
    with pytest.raises(NotApplicable, match="relay"):
        RelayToLCP().apply(p)
    with pytest.raises(TypeError):             # invert needs the inverse data of apply
        RelayToLCP().invert({"z": np.zeros(3)})
    with pytest.raises(OptionError, match="reduction"):
        MLCPToLCP("qr")
    with pytest.raises(ValueError):
        Chain([])
    with pytest.raises(OptionError):
        box_of(g.friction_contact(2, dim=2, seed=0)[0])
    assert set(TO_LCP) == {"relay", "mlcp", "avi", "fc2d"}
    assert all(issubclass(c, Reduction) for c in TO_LCP.values())
    assert "relay -> lcp" in repr(RelayToLCP())
