"""Convex formulations (issue 3): QP / SOCP views, their worked examples, and property tests."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

import nsopt
import nsopt.generate as gen
from nsopt.exceptions import NotApplicable, OptionError
from nsopt.solvers.socp_fp import GFCMap, SOCPMap
from nsopt.formulations import (
    AVIasQP,
    FCasSOCP,
    FCTresca,
    GFCPrimalSOCP,
    LCPasQP,
    MLCPasQP,
    RelayAsQP,
    check_symmetric_psd,
)
from conftest import given, HealthCheck, settings, st  # hypothesis' names (property tests skip without it)

FAST = settings(max_examples=int(__import__("os").environ.get("NSOPT_HYP_EXAMPLES", 25)), deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------------------------
# worked examples of formulations/*.md
# ---------------------------------------------------------------------------------------------
def test_worked_lcp():
    p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-1.0, 1.0])
    f = LCPasQP(p)
    f.program.solve(solver="CLARABEL")
    np.testing.assert_allclose(f.z.value, [0.5, 0.0], atol=1e-7)
    np.testing.assert_allclose(f.lower.dual_value, [0.0, 1.5], atol=1e-7)   # multiplier = w
    sol = nsopt.solve(p, method="qp", formulation=f)
    assert sol.method == "qp" and sol.success and sol.error == 0.0
    np.testing.assert_allclose(sol.z, [0.5, 0.0], atol=1e-14)
    np.testing.assert_allclose(sol.w, [0.0, 1.5], atol=1e-14)
    assert sol.info["formulation"] is f


def test_worked_mlcp():
    p = nsopt.MLCP.from_matrix([[2.0, 1.0], [1.0, 2.0]], [-2.0, -3.0], 1)
    sol = nsopt.solve(p, method="qp")
    np.testing.assert_allclose(sol.z, [1 / 3, 4 / 3], atol=1e-12)
    np.testing.assert_allclose(sol.w, [0.0, 0.0], atol=1e-12)
    assert sol.error < 1e-12


def test_worked_relay():
    p = nsopt.Relay([[2.0, 1.0], [1.0, 2.0]], [-3.0, 3.0], -1.0, 1.0)
    f = RelayAsQP(p)
    f.program.solve(solver="CLARABEL")
    lo, up = f.multipliers()
    np.testing.assert_allclose(lo, [0.0, 2.0], atol=1e-7)
    np.testing.assert_allclose(up, [2.0, 0.0], atol=1e-7)
    sol = nsopt.solve(p, method="qp")
    np.testing.assert_allclose(sol.z, [1.0, -1.0], atol=1e-14)
    np.testing.assert_allclose(sol.w, [-2.0, 2.0], atol=1e-14)
    assert sol.error == 0.0


def test_worked_avi():
    p = nsopt.AVI(np.eye(2), [-2.0, -1.0], [[-1.0, -1.0]], [-1.0])
    f = AVIasQP(p)
    f.program.solve(solver="CLARABEL")
    np.testing.assert_allclose(f.poly.dual_value, [1.0], atol=1e-7)
    sol = nsopt.solve(p, method="qp")
    np.testing.assert_allclose(sol.z, [1.0, 0.0], atol=1e-10)
    assert sol.error < 1e-10


def _fc_example(dim):
    q = [-1.0, 1.0, 0.0][:dim]
    return nsopt.FrictionContact(dim, np.eye(dim), q, 0.5)


def _check_worked_fc(dim):
    """fc3d.md / fc2d.md: s_{k+1} = 0.2 + 0.2 s_k from s_0 = 0.5, r(s) on the cone's boundary."""
    p = _fc_example(dim)
    f = FCasSOCP(p)
    for direct in (True, False):          # Clarabel updated in place, or CVXPY's chain on the data
        _plain_iterates(SOCPMap(f, direct=direct))
    for method in ("socp-fp", "socp-tresca"):
        s = nsopt.solve(p, method=method)
        assert s.success, (method, s.error, s.message)
        np.testing.assert_allclose(s.r[:2], [1.0, -0.5], atol=1e-8)
        np.testing.assert_allclose(s.u[:2], [0.0, 0.5], atol=1e-8)


def _plain_iterates(fmap):
    x = fmap.start()
    np.testing.assert_allclose(x[0], 0.5)
    want_s = [0.3, 0.26, 0.252, 0.2504]
    want_r = [(0.8, -0.4), (0.96, -0.48), (0.992, -0.496), (0.9984, -0.4992)]
    for k in range(4):
        g, sol, res = fmap.image(x)
        assert res.status is nsopt.Status.SOLVED and res.label in ("Solved", "optimal")
        np.testing.assert_allclose(g[0], want_s[k], atol=1e-8)
        np.testing.assert_allclose(sol["r"][:2], want_r[k], atol=1e-8)
        x = g


def test_worked_fc3d():
    _check_worked_fc(3)


def test_worked_fc2d():
    _check_worked_fc(2)


def test_worked_gfc3d():
    p = nsopt.GlobalFrictionContact(np.eye(3), np.eye(3), [0.0, 0.0, 0.0], [-1.0, 1.0, 0.0], 0.5)
    f = GFCPrimalSOCP(p)
    for direct in (True, False):    # Clarabel's z or CVXPY's dual values: the same multipliers
        fmap = GFCMap(f, direct=direct)
        s = fmap.start()
        for want_s, want_v in ((0.2, (1.2, -0.6, 0.0)), (0.24, (1.04, -0.52, 0.0)), (0.248, (1.008, -0.504, 0.0))):
            g, sol, _ = fmap.image(s)
            np.testing.assert_allclose(g, [want_s], atol=1e-8)
            np.testing.assert_allclose(sol["v"], want_v, atol=1e-8)
            np.testing.assert_allclose(sol["r"], want_v, atol=1e-7)     # multipliers: r = v (M = H = I)
            s = g
    sol = nsopt.solve(p, method="socp-fp")
    assert sol.success
    np.testing.assert_allclose(sol.v, [1.0, -0.5, 0.0], atol=1e-8)
    np.testing.assert_allclose(sol.r, [1.0, -0.5, 0.0], atol=1e-8)
    np.testing.assert_allclose(p.M @ sol.v, p.q + p.H @ sol.r, atol=1e-8)  # the sign of r


# ---------------------------------------------------------------------------------------------
# structure checks and the teaching view
# ---------------------------------------------------------------------------------------------
def test_psd_check():
    assert check_symmetric_psd(np.eye(3)) is None
    assert "not symmetric" in check_symmetric_psd(np.array([[1.0, 2.0], [0.0, 1.0]]))
    assert "not positive semidefinite" in check_symmetric_psd(np.diag([1.0, -1.0]))
    import scipy.sparse as sp

    assert check_symmetric_psd(sp.identity(5, format="csr")) is None
    B = np.random.default_rng(0).standard_normal((6, 3))
    assert check_symmetric_psd(B @ B.T) is None          # PSD singular: accepted


def test_qp_rejects_non_psd_and_auto_moves_on():
    p, _ = gen.lcp(8, seed=3, matrix="p")           # nonsymmetric P-matrix
    with pytest.raises(NotApplicable, match="not symmetric"):
        nsopt.solve(p, method="qp")
    assert "qp" not in nsopt.methods(p)
    sol = nsopt.solve(p)
    assert sol.trace[0][0] == "qp" and sol.trace[0][1] == "skipped"
    q = nsopt.LCP(np.diag([1.0, -1.0]), [1.0, 1.0])
    with pytest.raises(NotApplicable, match="positive semidefinite"):
        nsopt.solve(q, method="qp")
    with pytest.raises(NotApplicable):
        LCPasQP(q)


def test_explain_program_history_and_info():
    p, _ = gen.friction_contact(4, seed=2)
    f = FCasSOCP(p)
    assert isinstance(f.program, cp.Problem) and not f.program.parameters()   # data as constants
    text = f.explain()
    for word in ("Variables", "Objective", "Constraints", "KKT", "When it fails", "compiled once"):
        assert word in text
    assert "\\min" in f.explain(latex=True)
    sol = nsopt.solve(p, method="socp-fp", formulation=f, history=True)
    assert sol.success and sol.history and len(sol.info["fixed_point"]) >= 1
    assert len(sol.history) == sol.nit + 1 and sol.build_time > 0
    t = sol.info["timings"]
    assert t["solves"] >= 1 and t["solver"] > 0 and t["cvxpy"] >= 0 and t["compile"] > 0
    assert sol.info["formulation"] is f and 0 < sol.info["solver_share"] <= 1
    for cls, prob in ((LCPasQP, gen.lcp(4, seed=1)[0]), (MLCPasQP, gen.mlcp(2, 3, seed=1)[0]),
                      (RelayAsQP, gen.relay(3, seed=1)[0]), (FCTresca, p)):
        assert "KKT" in cls(prob).explain()


def test_backend_options():
    p, _ = gen.lcp(6, seed=5)
    for solver in ("CLARABEL", "OSQP", "SCS"):
        s = nsopt.solve(p, method="qp", backend=solver)
        assert s.success and s.info["backend"] == solver
    with pytest.raises(OptionError, match="not installed"):
        nsopt.solve(p, method="qp", backend="NO_SUCH_SOLVER")
    fc, _ = gen.friction_contact(2, seed=1)
    with pytest.raises(OptionError, match="OSQP"):
        nsopt.solve(fc, method="socp-fp", backend="OSQP")
    with pytest.raises(OptionError):
        nsopt.solve(p, method="qp", backend_options=[1])
    with pytest.raises(OptionError, match="Clarabel setting"):
        nsopt.solve(fc, method="socp-fp", backend_options={"no_such_setting": 1})
    # the direct path and CVXPY's own solve agree
    a = nsopt.solve(fc, method="socp-fp", direct=True)
    b = nsopt.solve(fc, method="socp-fp", direct=False)
    assert a.success and b.success
    np.testing.assert_allclose(a.r, b.r, atol=1e-7)
    # options are passed through: a 1-iteration budget cannot reach 1e-8, yet nothing raises
    s = nsopt.solve(fc, method="socp-fp", max_iter=1, polish=False)
    assert s.nit == 1


def test_callback_stops_fixed_point():
    p, _ = gen.friction_contact(5, seed=4, mu=0.8)
    seen = []

    def cb(k, x, err):
        seen.append(err)
        raise StopIteration

    s = nsopt.solve(p, method="socp-fp", callback=cb, polish=False)
    assert s.status is nsopt.Status.CALLBACK_STOP and len(seen) == 1


def test_warm_start_r0():
    p, known = gen.friction_contact(6, seed=9)
    s = nsopt.solve(p, method="socp-fp", r0=known["r"])
    assert s.success and s.nit <= 2
    s = nsopt.solve(p, method="socp-fp", warm_start={"r": known["r"]})
    assert s.success and s.nit == 0


# ---------------------------------------------------------------------------------------------
# property tests on generated problems with known solutions
# ---------------------------------------------------------------------------------------------
@FAST
@given(n=st.integers(1, 25), seed=st.integers(0, 10_000), kind=st.sampled_from(["spd", "psd"]))
def test_random_psd_lcp_by_qp(n, seed, kind):
    p, known = gen.lcp(n, seed=seed, matrix=kind)
    s = nsopt.solve(p, method="qp")
    assert s.error <= 1e-8, s.message
    if kind == "spd":           # unique solution: the known one
        np.testing.assert_allclose(s.z, known["z"], atol=1e-7)
    else:                       # w is unique for a PSD M (z need not be)
        np.testing.assert_allclose(s.w, known["w"], atol=1e-6)


@FAST
@given(n=st.integers(1, 6), m=st.integers(1, 8), seed=st.integers(0, 10_000))
def test_random_mlcp_and_relay_by_qp(n, m, seed):
    p, known = gen.mlcp(n, m, seed=seed)
    s = nsopt.solve(p, method="qp")
    assert s.error <= 1e-8
    np.testing.assert_allclose(s.z, known["z"], atol=1e-7)
    r, known = gen.relay(n + m, seed=seed)
    s = nsopt.solve(r, method="qp")
    assert s.error <= 1e-8
    np.testing.assert_allclose(s.z, known["z"], atol=1e-7)


@FAST
@given(nc=st.integers(1, 6), seed=st.integers(0, 10_000), mu=st.floats(0.05, 1.2),
       dim=st.sampled_from([3, 3, 2]))
def test_random_contacts_fixed_point_recovers_coulomb(nc, seed, mu, dim):
    """Well-posed contacts (W SPD, a known Coulomb solution): the fixed point reaches 1e-8 and
    returns Coulomb's law contact by contact (the solution is unique for these small mu)."""
    p, _ = gen.friction_contact(nc, dim=dim, seed=seed, mu=mu)
    s = nsopt.solve(p, method="socp-fp")
    assert s.error <= 1e-8, s.message
    R, U = s.r.reshape(nc, dim), s.u.reshape(nc, dim)
    nT = np.linalg.norm(R[:, 1:], axis=1)
    assert np.all(nT <= mu * R[:, 0] + 1e-6 * (1 + np.abs(R).max()))          # r in the cone
    assert np.all(U[:, 0] >= -1e-6 * (1 + np.abs(U).max()))                    # no penetration
    assert abs(float(np.sum(R[:, 0] * U[:, 0]))) <= 1e-6 * (1 + np.abs(R).max() * np.abs(U).max())


@FAST
@given(nc=st.integers(1, 5), seed=st.integers(0, 10_000), mu=st.floats(0.05, 1.0))
def test_random_tresca_and_global(nc, seed, mu):
    p, _ = gen.friction_contact(nc, seed=seed, mu=mu)
    s = nsopt.solve(p, method="socp-tresca")
    assert s.error <= 1e-8, s.message
    g, _ = gen.global_friction_contact(nc=nc, ndof=3 * nc + 2, seed=seed, mu=mu)
    s = nsopt.solve(g, method="socp-fp")
    assert s.error <= 1e-8, s.message
    np.testing.assert_allclose(g.M @ s.v, g.q + g.H @ s.r, atol=1e-7 * (1 + np.abs(g.q).max()))


def test_mu_zero_contacts():
    p, _ = gen.friction_contact(4, seed=11, mu=np.array([0.0, 0.3, 0.0, 0.5]))
    for method in ("socp-fp", "socp-tresca"):
        s = nsopt.solve(p, method=method)
        assert s.error <= 1e-8, (method, s.message)
