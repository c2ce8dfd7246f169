"""One method policy (issue 31 item 4): nsopt.policy.POLICY says per kind the methods of
solve(method="auto") and of a run's steps, and MethodPolicy.attempt is the one fallback rule that
solve(method="auto"), TimeStepping and Scene.run follow."""

from __future__ import annotations

import numpy as np
import pytest

import nsopt
from nsopt import modeling as nm
from nsopt.policy import FALLBACK_OPTIONS, POLICY

from conftest import need_extra


@pytest.fixture
def lcp():
    M = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 1.0], [0.5, 1.0, 5.0]])
    return nsopt.LCP(M, [-1.0, 2.0, -3.0])


def test_the_rule_warm_then_cold_then_fallbacks_from_the_best(lcp):
    """pgs with two sweeps fails warm and cold; lemke, warm-started from pgs' best, solves; the
    method's own option (max_iter) does not reach the fallback."""
    warm = np.array([5.0, 5.0, 5.0])
    s = POLICY.attempt(lcp, ("pgs", "lemke", "newton-fb"), nsopt.solve, tol=1e-10, warm=warm,
                       options={"max_iter": 2})
    assert [(t[0], t[1]) for t in s.trace] == [("pgs", "max_iter"), ("pgs", "max_iter"), ("lemke", "solved")]
    assert s.trace[1][4] == "cold start" and s.trace[2][4] == "warm start from pgs"
    assert s.method == "lemke" and s.success and s.error <= 1e-10
    assert "max_iter" not in s.options and set(FALLBACK_OPTIONS) == {"select", "time_limit"}
    np.testing.assert_allclose(s.z, nsopt.solve(lcp, "lemke").z, atol=1e-10)


def test_the_rule_keeps_the_best_error_when_nothing_reaches_tol(lcp):
    s = POLICY.attempt(lcp, ("pgs",), nsopt.solve, tol=1e-300, warm=np.array([5.0, 5.0, 5.0]),
                       options={"max_iter": 1})
    assert not s.success and len(s.trace) == 2 and s.error == min(t[2] for t in s.trace)


def test_the_rule_without_a_warm_start_makes_no_cold_retry(lcp):
    s = POLICY.attempt(lcp, ("pgs", "lemke"), nsopt.solve, tol=1e-10, options={"max_iter": 2})
    assert [t[0] for t in s.trace] == ["pgs", "lemke"]


def test_auto_follows_the_one_rule_with_a_cold_retry(lcp):
    """solve(method="auto") with a warm start: its first method is retried cold when the warm start fails."""
    old = POLICY.auto("lcp")
    try:
        POLICY.set("lcp", auto=("pgs", "lemke"))
        s = nsopt.solve(lcp, "auto", max_iter=2, warm_start=np.array([5.0, 5.0, 5.0]))
    finally:
        POLICY.set("lcp", auto=old)
    assert [t[0] for t in s.trace] == ["pgs", "pgs", "lemke"] and s.method == "auto:lemke" and s.success


def _ball(T=0.3):
    ball = nm.LagrangianLinearTIDS(q0=[0.2], v0=[0.0], M=[[1.0]], fext=[-9.81])
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    ground = nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0]])), ball)
    return nsds, ball, ground


def test_time_stepping_auto_reads_the_run_order_of_the_policy():
    old = POLICY.run("lcp")
    assert old[0] == "lemke"
    try:
        POLICY.set("lcp", run=("pgs", "lemke"))
        sim = nm.TimeStepping(_ball()[0], h=0.01, osns="lcp")
        assert (sim.method, sim.fallback) == ("pgs", ("lemke",))
        traj = sim.run()
    finally:
        POLICY.set("lcp", run=old)
    assert set(m for m in traj.method if m is not None) <= {"pgs", "lemke"} and not traj.failed_steps
    sim = nm.TimeStepping(_ball()[0], h=0.01, osns="lcp")
    assert (sim.method, *sim.fallback) == POLICY.run("lcp")


def test_a_step_that_fails_hands_over_by_the_rule():
    """pgs without a sweep fails the contact steps warm and cold; lemke takes over (its trace says so)."""
    nsds, ball, ground = _ball()
    seen = []
    sim = nm.TimeStepping(nsds, h=0.01, osns="lcp", method="pgs", fallback=("lemke",), tol=1e-12, max_iter=0,
                          on_step=lambda rec: seen.append(rec.solution))
    traj = sim.run()
    handed = [s for s in seen if s is not None and len(s.trace) > 1]
    assert handed and not traj.failed_steps
    for s in handed:
        assert [t[0] for t in s.trace][-1] == "lemke" and s.success


def test_scene_run_takes_the_policy_run_order():
    need_extra("mechanics")
    from nsopt import mechanics as mc
    sc = mc.Scene()
    sc.add_primitive_shape("Ball", "Sphere", 0.1)
    sc.add_primitive_shape("Ground", "Box", (2.0, 2.0, 0.2))
    sc.add_Newton_impact_friction_nsl("contact", mu=0.3)
    sc.add_object("ball", ["Ball"], translation=[0, 0, 0.1], mass=1.0)
    sc.add_object("ground", ["Ground"], translation=[0, 0, -0.1])
    run = sc.run(T=0.02, h=0.01)
    assert (run.sim.method, *run.sim.fallback) == POLICY.run("fc3d")
    run = sc.run(T=0.02, h=0.01, method="nsgs")
    assert (run.sim.method, run.sim.fallback) == ("nsgs", ())


def test_time_limit_is_the_budget_of_all_the_attempts(lcp):
    """A spent budget: the first attempt still judges its start (a status comes back), the fallbacks are
    skipped."""
    s = POLICY.attempt(lcp, ("pgs", "lemke"), nsopt.solve, tol=1e-300, options={"time_limit": 0.0})
    assert s.method == "pgs" and s.status.value == "time_limit"
    assert s.trace[-1][:2] == ("lemke", "skipped") and "time limit" in s.trace[-1][4]
