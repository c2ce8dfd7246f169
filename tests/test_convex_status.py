"""The convex methods as solvers (issue 8 §3, issue 7 §4): backend status maps (no status contradicts
the backend), NotApplicable before solving, empty problems, the iteration contract of the fixed point,
programs that CVXPY does not densify, and the formulations/solvers split."""

from __future__ import annotations

import ast
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt
import nsopt.generate as gen
from nsopt import registry
from nsopt.exceptions import NotApplicable, OptionError
from nsopt import formulations as F
from nsopt.result import Status
from nsopt.solvers import convex
from nsopt.solvers.socp_fp import SOCPMap, TrescaMap

ROOT = Path(__file__).resolve().parent.parent
QP_SOLVERS = ("CLARABEL", "OSQP", "SCS")


# ---------------------------------------------------------------------------------------------
# status maps: a certificate gives INFEASIBLE, never "solved"
# ---------------------------------------------------------------------------------------------
def _empty_polyhedron_avi():
    return nsopt.AVI(np.eye(1), [-1.0], [[1.0], [-1.0]], [1.0, 0.0])   # z >= 1 and z <= 0


@pytest.mark.parametrize("solver", QP_SOLVERS)
def test_empty_polyhedron_is_infeasible(solver):
    """Issue 7 §4: `qp` used to return 'solved, error 0.0' while Clarabel said infeasible."""
    s = nsopt.solve(_empty_polyhedron_avi(), method="qp", backend=solver)
    assert s.status is Status.INFEASIBLE and not s.success
    assert "empty" in s.message                     # solve() checks K before any method runs
    # the backend's own certificate, mapped by its status map (the method called directly)
    from nsopt.monitor import Monitor

    out = registry.get("avi", "qp").func(_empty_polyhedron_avi(), Monitor(tol=1e-8), backend=solver)
    assert out.status is Status.INFEASIBLE and out.info["certificate"] == "primal infeasible"
    assert "infeasible" in out.message.lower() and "empty" in out.message


def test_auto_reports_the_certificate_and_stops():
    s = nsopt.solve(_empty_polyhedron_avi())
    assert s.status is Status.INFEASIBLE and s.method == "auto:qp"
    assert [t[0] for t in s.trace] == ["qp"]          # the proof ends the policy
    assert s.trace[0][1] == "infeasible"
    # an LCP with no solution (M = 0, q has a negative entry): the QP is unbounded below, which
    # Clarabel certifies; auto stops there too
    s = nsopt.solve(nsopt.LCP(np.zeros((2, 2)), [-1.0, 1.0]))
    assert s.status is Status.INFEASIBLE and s.info["certificate"] != "problem"


@pytest.mark.parametrize("solver", QP_SOLVERS)
def test_unbounded_qp_proves_the_psd_lcp_infeasible(solver):
    """M = 0 (PSD), q = (-1, 1): w_1 = -1 < 0 for every z, no solution; the QP is unbounded below."""
    p = nsopt.LCP(np.zeros((2, 2)), [-1.0, 1.0])
    s = nsopt.solve(p, method="qp", backend=solver)
    assert s.status is Status.INFEASIBLE and s.info["certificate"] == "dual infeasible"
    assert nsopt.solve(p).status is Status.INFEASIBLE
    lem = nsopt.solve(p, method="lemke")      # Lemke's secondary ray agrees
    assert lem.status is Status.INFEASIBLE


def test_status_maps_cover_every_backend_status():
    import clarabel  # noqa: F401

    for label in ("Solved", "AlmostSolved", "PrimalInfeasible", "DualInfeasible", "AlmostPrimalInfeasible",
                  "AlmostDualInfeasible", "MaxIterations", "MaxTime", "NumericalError", "InsufficientProgress"):
        assert label in convex.CLARABEL_STATUS_MAP
    assert convex.CLARABEL_STATUS_MAP["PrimalInfeasible"] is Status.INFEASIBLE
    assert convex.CLARABEL_STATUS_MAP["MaxTime"] is Status.TIME_LIMIT
    assert convex.OSQP_STATUS_MAP[3] is Status.INFEASIBLE and convex.OSQP_STATUS_MAP[7] is Status.MAX_ITER
    assert convex.SCS_STATUS_MAP[-2] is Status.INFEASIBLE and convex.SCS_STATUS_MAP[1] is Status.SOLVED
    import cvxpy.settings as s

    for st in (s.OPTIMAL, s.OPTIMAL_INACCURATE, s.INFEASIBLE, s.INFEASIBLE_INACCURATE, s.UNBOUNDED,
               s.UNBOUNDED_INACCURATE, s.USER_LIMIT, s.SOLVER_ERROR):
        assert st in convex.CVXPY_STATUS_MAP
    st, label, cert = convex.backend_status("ECOS", "infeasible")
    assert st is Status.INFEASIBLE and cert == "primal infeasible"


@pytest.mark.parametrize("solver", QP_SOLVERS)
def test_qp_status_follows_the_backend(solver):
    """A solvable problem: the backend's status is in the message, the error judges SOLVED."""
    p, known = gen.lcp(8, seed=4)
    s = nsopt.solve(p, method="qp", backend=solver)
    assert s.success and s.error <= 1e-8
    assert s.info["backend_status"].lower().startswith("solved")
    np.testing.assert_allclose(s.z, known["z"], atol=1e-7)
    # a one-iteration budget of the backend: its MAX_ITER status, never "solved" with a wrong z
    key = {"SCS": "max_iters"}.get(solver, "max_iter")
    t = nsopt.solve(p, method="qp", backend=solver, backend_options={key: 1}, polish=False)
    assert t.status in (Status.MAX_ITER, Status.INACCURATE) and t.error > 1e-8


# ---------------------------------------------------------------------------------------------
# NotApplicable before solving; auto moves on
# ---------------------------------------------------------------------------------------------
def test_indefinite_w_is_not_applicable_and_auto_moves_on():
    p = nsopt.FrictionContact(3, np.diag([1.0, -1.0, 1.0]), [-1.0, 1.0, 0.0], 0.5)
    for method in ("socp-fp", "socp-tresca"):
        with pytest.raises(NotApplicable, match="positive semidefinite"):
            nsopt.solve(p, method=method)
        assert method not in nsopt.methods(p)
    g = nsopt.GlobalFrictionContact(np.diag([1.0, -1.0, 1.0]), np.eye(3), np.zeros(3), [-1.0, 1.0, 0.0], 0.5)
    with pytest.raises(NotApplicable, match="mass matrix"):
        nsopt.solve(g, method="socp-fp")
    # a singular PSD W (stored to 8 digits: the corpus' Confeti-ex13 has lambda_min / ||W|| = -2.5e-8) applies
    B = np.random.default_rng(3).standard_normal((6, 4))
    W = np.round(B @ B.T, 8)
    q, _ = gen.friction_contact(2, seed=1)
    assert "socp-fp" in nsopt.methods(nsopt.FrictionContact(3, W, q.q, 0.3))


def test_auto_skips_an_inapplicable_socp_fp():
    from nsopt import policy

    p = nsopt.FrictionContact(3, np.diag([1.0, -1.0, 1.0]), [-1.0, 1.0, 0.0], 0.5)
    old = policy.POLICY.auto("fc3d")
    try:
        policy.POLICY.set("fc3d", auto=("socp-fp", "nsgs"))
        s = nsopt.solve(p)
    finally:
        policy.POLICY.set("fc3d", auto=old)
    assert s.trace[0][0] == "socp-fp" and s.trace[0][1] == "skipped"
    assert "positive semidefinite" in s.trace[0][4] and s.method == "auto:nsgs"


def test_auto_size_limit():
    from nsopt import policy

    p, _ = gen.lcp(6, seed=2)
    policy.POLICY.max_size[("lcp", "qp")] = 5
    try:
        s = nsopt.solve(p)
    finally:
        del policy.POLICY.max_size[("lcp", "qp")]
    assert s.trace[0][:2] == ("qp", "skipped") and "max_size" in s.trace[0][4] and s.success


# ---------------------------------------------------------------------------------------------
# empty problems
# ---------------------------------------------------------------------------------------------
def _empty_problems():
    z = np.zeros((0, 0))
    return {"lcp": nsopt.LCP(z, np.zeros(0)), "relay": nsopt.Relay(z, np.zeros(0), np.zeros(0), np.zeros(0)),
            "avi": nsopt.AVI(z, np.zeros(0), np.zeros((0, 0)), np.zeros(0)),
            "fc3d": nsopt.FrictionContact(3, z, np.zeros(0), np.zeros(0))}


@pytest.mark.parametrize("kind", ["lcp", "relay", "avi", "fc3d"])
def test_empty_problem_convex_methods(kind):
    p = _empty_problems()[kind]
    for m in registry.for_kind(kind):
        if m.name not in ("qp", "socp-fp", "socp-tresca"):
            continue
        s = nsopt.solve(p, method=m.name)
        assert s.success and s.error == 0.0 and getattr(s, p.primal).shape == (0,)
    cls = {"lcp": [F.LCPasQP], "relay": [F.RelayAsQP], "avi": [F.AVIasQP], "fc3d": [F.FCasSOCP, F.FCTresca]}[kind]
    for c in cls:                       # the formulation objects build (and explain) an empty program
        f = c(p)
        assert "Variables" in f.explain()
        f.program.solve(solver="CLARABEL")
        assert f.program.status == "optimal" and f.program.value == 0.0


# ---------------------------------------------------------------------------------------------
# the fixed point on the iteration contract
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["socp-fp", "socp-tresca"])
def test_fixed_point_iterations_go_through_the_monitor(method):
    p, _ = gen.friction_contact(6, seed=7, mu=0.6)
    seen = []
    s = nsopt.solve(p, method=method, history=True, callback=lambda it: seen.append((it.nit, it.error)),
                    polish=False, tol=1e-10)
    assert len(s.history) == s.nit + 1 and [k for k, _ in seen] == list(range(1, s.nit + 1))
    assert [e for _, e in seen] == s.history[1:]
    assert s.build_time > 0 and s.info["timings"]["compile"] > 0
    assert len(s.info["fixed_point"]) == s.nit


def test_time_limit_between_iterations():
    p, _ = gen.friction_contact(20, seed=3, mu=0.9)
    s = nsopt.solve(p, method="socp-fp", time_limit=0.0, tol=1e-14)
    assert s.status is Status.TIME_LIMIT and s.nit == 0
    s = nsopt.solve(p, method="socp-fp", time_limit=1e-3, tol=1e-14, polish=False)
    assert s.status in (Status.TIME_LIMIT, Status.SOLVED) and s.nit <= 2
    g, _ = gen.global_friction_contact(4, 14, seed=2)
    s = nsopt.solve(g, method="socp-fp", time_limit=0.0, tol=1e-14)
    assert s.status is Status.TIME_LIMIT


def test_fixed_point_options_are_documented_defaults():
    info = registry.get("fc3d", "socp-fp")
    for opt in ("anderson", "safeguard", "reuse_solver", "polish_at", "polish_steps", "stall_window", "direct",
                "inexact", "prox"):
        assert opt in info.options
    p, _ = gen.friction_contact(4, seed=5)
    for kw in ({"safeguard": "error"}, {"reuse_solver": False}, {"anderson": 0}, {"stall_window": 5}):
        s = nsopt.solve(p, method="socp-fp", **kw)
        assert s.success, (kw, s.message)
    with pytest.raises(OptionError, match="safeguard"):
        nsopt.solve(p, method="socp-fp", safeguard="nope")
    with pytest.raises(OptionError, match="anderson"):
        nsopt.solve(p, method="socp-fp", anderson=-1)


def test_polish_is_the_registered_newton():
    """The last digits come from nsn-ac (no second Newton in nsopt.formulations)."""
    p, _ = gen.friction_contact(8, seed=12, mu=0.5)
    s = nsopt.solve(p, method="socp-fp", polish_at=1e-2)
    stages = [h for h in s.info["fixed_point"] if h.get("stage") == "polish"]
    assert s.success and stages and all("newton_steps" in h for h in stages)
    assert "nsn-ac" in s.message or s.error <= 1e-8


def test_tresca_with_fixed_thresholds_is_one_solve():
    p, _ = gen.friction_contact(3, seed=1)
    f = F.FCTresca(p, g=np.full(3, 0.1))
    s = nsopt.solve(p, method="socp-tresca", formulation=f)
    assert s.nit == 1 and "fixed thresholds" in s.message
    R = s.r.reshape(3, 3)
    assert np.all(np.linalg.norm(R[:, 1:], axis=1) <= 0.1 * (1 + 1e-6))


def test_direct_and_cvxpy_chain_give_the_same_images():
    p, _ = gen.friction_contact(5, seed=2, mu=0.3)
    for Map, cls in ((SOCPMap, F.FCasSOCP), (TrescaMap, F.FCTresca)):
        a, b = Map(cls(p), direct=True), Map(cls(p), direct=False)
        x = a.start()
        for _ in range(3):
            ga, sa, ra = a.image(x)
            gb, sb, rb = b.image(x)
            assert ra.path == "direct" and rb.path == "cvxpy"
            np.testing.assert_allclose(sa["r"], sb["r"], atol=1e-6)
            x = ga


# ---------------------------------------------------------------------------------------------
# no hidden densification
# ---------------------------------------------------------------------------------------------
def test_programs_have_no_parameters():
    """A CVXPY Parameter in a program with a quadratic objective makes CVXPY 1.9 extract a dense
    (variables x parameters) coefficient array; every program is built with constants."""
    p, _ = gen.friction_contact(3, seed=1)
    for f in (F.LCPasQP(gen.lcp(4, seed=1)[0]), F.MLCPasQP(gen.mlcp(2, 3, seed=1)[0]), F.RelayAsQP(gen.relay(3, seed=1)[0]),
              F.AVIasQP(nsopt.AVI(np.eye(2), [1.0, 1.0], np.eye(2), np.zeros(2))), F.FCasSOCP(p), F.FCTresca(p),
              F.GFCPrimalSOCP(gen.global_friction_contact(2, 8, seed=6)[0])):
        assert not f.program.parameters(), type(f).__name__


def _peak_mb(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def test_sparse_programs_compile_in_memory_linear_in_nnz():
    """n = 6000 sparse diagonal problems: a dense n x n array would be 275 MB; the compile of the
    constant programs stays far below (measured against n in benchmarks/bench_memory.py)."""
    n = 6000
    rng = np.random.default_rng(0)
    lcp = nsopt.LCP(sp.diags(rng.uniform(1, 2, n)).tocsr(), rng.standard_normal(n))
    assert _peak_mb(lambda: convex.Compiled(F.LCPasQP(lcp, check=False), opts={})) < 60
    fc = nsopt.FrictionContact(3, sp.diags(rng.uniform(1, 2, n)).tocsr(), rng.standard_normal(n), 0.3)
    assert _peak_mb(lambda: SOCPMap(F.FCasSOCP(fc))) < 60
    assert _peak_mb(lambda: TrescaMap(F.FCTresca(fc))) < 60


def test_large_sparse_lcp_by_qp():
    """A sparse diagonal LCP, n = 60000, by qp and auto (it used to need 3.3 GB at n = 20000)."""
    n = 60000
    rng = np.random.default_rng(1)
    d = rng.uniform(1, 2, n)
    q = rng.standard_normal(n)
    p = nsopt.LCP(sp.diags(d).tocsr(), q)
    s = nsopt.solve(p, method="qp")
    assert s.success
    np.testing.assert_allclose(s.z, np.maximum(-q / d, 0.0), atol=1e-10)


# ---------------------------------------------------------------------------------------------
# formulations only build programs
# ---------------------------------------------------------------------------------------------
def test_formulations_do_not_import_the_solvers():
    for f in (ROOT / "nsopt" / "formulations").glob("*.py"):
        tree = ast.parse(f.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                mod = "." * node.level + (node.module or "")
                assert not mod.startswith(("..solve", "..solvers", "..policy")), (f.name, mod)
            if isinstance(node, ast.FunctionDef):
                assert node.name not in ("fixed_point", "polish_local", "polish_global", "run"), (f.name, node.name)
    assert not (ROOT / "nsopt" / "formulations" / "_polish.py").exists()


def test_avi_error_is_inf_on_an_empty_polyhedron():
    """No z solves an AVI over an empty K: its measure is inf, never 0 (issue 7 §4)."""
    p = nsopt.AVI(np.eye(1), [-1.0], [[1.0], [-1.0]], [1.0, 0.0])
    assert p.is_empty()
    assert p.error([0.0]) == np.inf
    for method in ("auto", "qp", "lemke"):
        s = nsopt.solve(p, method=method)
        assert s.status is nsopt.Status.INFEASIBLE, (method, s)
    assert not nsopt.AVI(np.eye(1), [-1.0], [[1.0]], [0.0]).is_empty()
