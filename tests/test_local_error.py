"""The local error estimate of the θ-scheme's smooth phase (formulations/time_stepping.md §6).

A step solved to a spurious root must not pass silently: q̈ = q³ from q0 = 1, v0 = 0 blows up at
t ≈ 1.854; with h = 0.05 and θ = 1/2 the run goes from q = 17.2 to -50.9 in one step (every Newton loop
converged). The estimate flags that step; it agrees with the true local error (the step minus the exact
solution through its start, by DOP853 at 1e-13) to a few percent on smooth motions (the derivation's
leading terms), and flags nothing on a bouncing ball, a pendulum against a wall, the examples (see
tests/test_examples.py).
"""

import warnings

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from nsopt import modeling as nm
from nsopt.exceptions import ModelingError, NsoptWarning, StepFailed


def cubic(T=3.0, h=0.05, term="fint", **kw):
    """q̈ = q³: F_int = -q³ (or F_gyr = -q³) on the left of M q̈ + F_gyr + F_int = 0 (Siconos' signs)."""
    if term == "fint":
        ds = nm.LagrangianDS([1.0], [0.0], [[1.0]], fint=lambda t, q, v, z: -q ** 3,
                             jacobian_fint_q=lambda t, q, v, z: np.array([[-3 * q[0] ** 2]]))
    else:
        ds = nm.LagrangianDS([1.0], [0.0], [[1.0]], fgyr=lambda q, v, z: -q ** 3,
                             jacobian_fgyr_q=lambda q, v, z: np.array([[-3 * q[0] ** 2]]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.insert_dynamical_system(ds)
    return nm.TimeStepping(nsds, h, nm.MoreauJeanOSI(0.5), **kw), ds


@pytest.mark.parametrize("term", ["fint", "fgyr"])
def test_the_step_to_a_spurious_root_is_flagged(term):
    """The issue's run, written with F_int or with F_gyr (both on the left: the same equation)."""
    sim, ds = cubic(term=term)
    with pytest.warns(NsoptWarning, match=r"step 35 \(t = 1\.75\): the local error estimate .* > local_tol 0\.05"):
        traj = sim.run()
    q = traj.q(ds)[:, 0]
    jump = int(np.flatnonzero((q[:-1] > 0) & (q[1:] < 0))[0]) + 1      # the step that lands on the spurious root
    assert jump == 36 and q[35] == pytest.approx(17.23, abs=0.01) and q[36] == pytest.approx(-50.9, abs=0.1)
    assert traj.failed_steps == [] and all(traj.newton_converged)     # what the Newton loops say
    err = traj.local_error
    assert err[jump - 1] > 10 * sim.local_tol                          # the estimate at that step: 0.55
    assert np.all(err[:32] < 0.01)                                     # t <= 1.6: resolved (q < 6)
    assert traj.inaccurate_steps[:2] == [35, 36]                       # 35: 10% off already (q 17.2 for 15.5)
    # with local_tol = 0.1 the first step flagged is the one that leaves the solution
    sim, ds = cubic(local_tol=0.1)
    with pytest.warns(NsoptWarning, match=r"step 36 \(t = 1\.8\)"):
        traj = sim.run()
    assert traj.inaccurate_steps[0] == jump


def test_on_local_error_fail_makes_it_a_failed_step():
    sim, _ = cubic(local_tol=0.1, on_local_error="fail")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        traj = sim.run()
    assert traj.failed_steps[0] == 36 and traj.failed_steps == traj.inaccurate_steps
    sim, _ = cubic(local_tol=0.1, on_local_error="fail", on_failure="raise")
    with pytest.raises(StepFailed, match=r"step 36 \(t = 1\.8\): the local error estimate of the smooth phase is "
                                         r"0\.55") as info:
        sim.run()
    assert info.value.step == 36 and sim.k == 36                       # the step is recorded, then the run stops
    sim, _ = cubic(on_local_error="ignore")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        traj = sim.run()
    assert np.all(np.isnan(traj.local_error)) and traj.inaccurate_steps == []


@pytest.mark.parametrize("bad", [{"on_local_error": "loud"}, {"local_tol": 0.0}, {"local_tol": np.nan}])
def test_local_error_options_are_checked(bad):
    with pytest.raises(ModelingError, match="on_local_error|local_tol"):
        cubic(**bad)


# ---------------------------------------------------------------------------- the estimate is the local error
def true_local_errors(traj, X, rhs):
    """The step minus the exact solution through its start, relative to 1 + |value| (the estimate's scale)."""
    t = traj.t
    out = np.empty(len(t) - 1)
    for k in range(len(t) - 1):
        sol = solve_ivp(rhs, (t[k], t[k + 1]), X[k], method="DOP853", rtol=1e-13, atol=1e-14)
        out[k] = np.max(np.abs(X[k + 1] - sol.y[:, -1]) / (1 + np.maximum(np.abs(X[k]), np.abs(X[k + 1]))))
    return out


def _agrees(est, true):
    r = est[1:] / true[1:]          # (the first step has no second difference for the velocity's h³ term)
    return np.median(r), np.percentile(r, 5), np.percentile(r, 95)


@pytest.mark.parametrize("theta", [0.5, 0.7, 1.0])
def test_estimate_matches_the_local_error_of_a_forced_damped_pendulum(theta):
    """LagrangianDS (the Newton loop, F_int and F_ext(t)): median ratio 1.00, 90% of the steps within 5%."""
    ds = nm.LagrangianDS([1.0], [0.0], [[1.0]], fint=lambda t, q, v, z: 9.81 * np.sin(q) + 0.3 * v,
                         fext=lambda t, z: np.array([0.5 * np.cos(2 * t)]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, 2.0)
    nsds.insert_dynamical_system(ds)
    traj = nm.TimeStepping(nsds, 0.01, nm.MoreauJeanOSI(theta), newton_tol=1e-12).run()
    true = true_local_errors(traj, np.hstack([traj.q(ds), traj.v(ds)]),
                             lambda t, x: [x[1], 0.5 * np.cos(2 * t) - 9.81 * np.sin(x[0]) - 0.3 * x[1]])
    med, lo, hi = _agrees(traj.local_error, true)
    assert abs(med - 1) < 0.01 and lo > 0.95 and hi < 1.05


@pytest.mark.parametrize("theta", [0.5, 1.0])
def test_estimate_matches_the_local_error_of_a_linear_oscillator(theta):
    """LagrangianLinearTIDS (K, C, F_ext(t); the estimate from K Δq, C Δv): median ratio 1.00."""
    M, K, C = np.diag([1.0, 2.0]), np.array([[40.0, -5.0], [-5.0, 20.0]]), np.diag([0.2, 0.1])
    ds = nm.LagrangianLinearTIDS([1.0, 0.0], [0.0, 1.0], M, K=K, C=C, fext=lambda t, z: np.array([np.sin(3 * t), 0.0]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, 2.0)
    nsds.insert_dynamical_system(ds)
    traj = nm.TimeStepping(nsds, 0.01, nm.MoreauJeanOSI(theta)).run()
    true = true_local_errors(traj, np.hstack([traj.q(ds), traj.v(ds)]), lambda t, x: np.r_[
        x[2:], np.linalg.solve(M, np.array([np.sin(3 * t), 0.0]) - K @ x[:2] - C @ x[2:])])
    med, lo, hi = _agrees(traj.local_error, true)
    assert abs(med - 1) < 0.01 and lo > 0.85 and hi < 1.1


@pytest.mark.parametrize("theta", [0.5, 1.0])
def test_estimate_matches_the_local_error_of_a_first_order_system(theta):
    """Euler–Moreau (FirstOrderLinearDS, b(t)): median ratio 1.00."""
    A = np.array([[0.0, 1.0], [-10.0, -0.5]])
    ds = nm.FirstOrderLinearDS([1.0, 0.0], A, b=lambda t, z: np.array([0.0, np.sin(2 * t)]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, 2.0)
    nsds.insert_dynamical_system(ds)
    traj = nm.TimeStepping(nsds, 0.01, nm.EulerMoreauOSI(theta)).run()
    true = true_local_errors(traj, traj.x(ds), lambda t, x: A @ x + np.array([0.0, np.sin(2 * t)]))
    med, lo, hi = _agrees(traj.local_error, true)
    assert abs(med - 1) < 0.02 and lo > 0.9 and hi < 1.1


# ---------------------------------------------------------------------------- what must not be flagged
def _quiet_run(sim):
    with warnings.catch_warnings():
        warnings.simplefilter("error", NsoptWarning)
        return sim.run()


@pytest.mark.parametrize("theta", [0.5, 1.0])
def test_a_bouncing_ball_is_not_flagged(theta):
    """Free flight under gravity: a is constant, the estimate is h²(θ - 1/2)g (0 at θ = 1/2), the impacts'
    impulses are not the smooth phase's."""
    ball = nm.LagrangianLinearTIDS([1.0, 0.0], [0.0, 0.5], np.diag([1.0, 1.0]), fext=[-9.81, 0.0])
    nsds = nm.NonSmoothDynamicalSystem(0.0, 3.0)
    nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.9), nm.LagrangianLinearTIR([[1.0, 0.0]])), ball)
    traj = _quiet_run(nm.TimeStepping(nsds, 0.005, nm.MoreauJeanOSI(theta), osns="lcp", method="lemke"))
    assert traj.status.count(None) < len(traj.status)                 # it bounced
    q = traj.q(ball)[:, 0]
    expect = 0.005 ** 2 * (theta - 0.5) * 9.81 / (1 + np.maximum(q[:-1], q[1:]))
    np.testing.assert_allclose(traj.local_error, expect, rtol=1e-12, atol=1e-16)


def test_a_pendulum_against_a_wall_is_not_flagged():
    """The nonlinear pendulum of tests/test_modeling.py hitting its wall: the estimate stays below 1e-4."""
    L, g = 1.0, 9.81
    ds = nm.LagrangianDS([1.0], [0.0], M=[[L * L]], fint=lambda t, q, v, z: np.array([g * L * np.sin(q[0])]))
    rel = nm.LagrangianScleronomousR(h=lambda q, z: np.array([L * np.sin(q[0]) + 0.5]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, 3.0)
    wall = nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.8), rel), ds)
    traj = _quiet_run(nm.TimeStepping(nsds, 1e-2, nm.MoreauJeanOSI(0.5), osns="lcp", method="lemke",
                                      newton_tol=1e-10))
    assert traj.lambda_(wall, 1).max() > 0.1                          # it hit the wall
    assert np.nanmax(traj.local_error) < 1e-4 and traj.inaccurate_steps == []


def test_a_spinning_rigid_body_is_not_flagged_and_a_coarse_step_is():
    """A NewtonEulerDS spinning about its intermediate axis (the gyroscopic moment flips it): the twist's
    error is resolved at h = 1e-3 and flagged at h = 0.4 (|ω|h = 2.4)."""
    def run(h):
        body = nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], [0, 0, 0, 0.1, 6.0, 0.1], 1.0, [1.0, 2.0, 3.0])
        nsds = nm.NonSmoothDynamicalSystem(0.0, 4.0)
        nsds.insert_dynamical_system(body)
        return nm.TimeStepping(nsds, h, nm.MoreauJeanOSI(0.5), newton_tol=1e-12)
    traj = _quiet_run(run(1e-3))
    assert 0 < np.max(traj.local_error) < 1e-4
    with pytest.warns(NsoptWarning, match="local error estimate") as rec:
        traj = run(0.4).run()
    assert rec[0].filename == __file__                                  # the warning points at the user's line
    assert traj.inaccurate_steps
