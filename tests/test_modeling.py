"""nsopt.modeling: contracts, schemes against analytic solutions, Jacobians, reuse, writing problems, failures.

Tolerances: analytic checks of the schemes to 1e-10 (exact discrete formulas) or the stated physical
tolerance; Jacobians against central finite differences to 1e-6 relative; Siconos agreement 1e-8.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nsopt import Status
from nsopt import modeling as nm
from nsopt.exceptions import ModelingError, StepFailed
from nsopt.modeling._check import fd_jacobian_central

from conftest import need_extra

ROOT = Path(__file__).resolve().parent.parent
CONTRACTS = Path("/work/shared/contracts")


def _run(script):
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.parametrize("name", ["modeling_bouncing_ball.py", "modeling_relay.py"])
def test_contract_scripts(name):
    if not (CONTRACTS / name).exists():
        pytest.skip("shared contracts folder absent")
    r = _run(CONTRACTS / name)
    assert r.returncode == 0, r.stderr[-2000:]
    assert ": ok" in r.stdout


def bouncing_ball(e=0.9, h=0.005, T=3.0, theta=0.5):
    ball = nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-9.81])
    ground = nm.Interaction(nm.NewtonImpactNSL(e), nm.LagrangianLinearTIR([[1.0]]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(ground, ball)
    sim = nm.TimeStepping(nsds, h, nm.MoreauJeanOSI(theta), osns="lcp", method="lemke", tol=1e-12)
    return sim, ball, ground


def test_free_flight_is_exact_and_impacts_obey_newton():
    sim, ball, ground = bouncing_ball()
    traj = sim.run()
    q, v, lam = traj.q(ball)[:, 0], traj.v(ball)[:, 0], traj.lambda_(ground, 1)[:, 0]
    h, g = 0.005, 9.81
    # without impulse, Moreau–Jean with θ = 1/2 is exact for constant gravity: v_{k+1} = v_k - gh
    free = lam[1:] == 0
    assert np.allclose((v[1:] - v[:-1])[free], -g * h, rtol=0, atol=1e-12)
    assert np.allclose((q[1:] - q[:-1])[free], h * 0.5 * (v[1:] + v[:-1])[free], rtol=0, atol=1e-13)
    # at each impact step, the post-impact velocity is -e times the pre-impact one (the impact law)
    hits = np.flatnonzero(lam[1:] > 1e-9)
    first = [k for k in hits if k - 1 not in hits]
    assert len(first) >= 3
    for k in first[:3]:
        assert v[k + 1] == pytest.approx(-0.9 * v[k], rel=1e-10)
    # impulses are non-negative, every step's LCP is solved
    assert lam.min() >= -1e-12
    assert all(s is None or s is Status.SOLVED for s in traj.status)


def test_problem_reused_with_replace_when_active_set_unchanged():
    sim, ball, ground = bouncing_ball(e=0.0, T=2.0)
    mats = []
    while sim.has_next_step():
        if sim.step() is not None:
            mats.append(sim._problem[1].M)
    # the ball rests on the ground: one LCP matrix object shared by every step (no refactorisation)
    assert len(mats) > 100
    assert len({id(M) for M in mats[-100:]}) == 1


def test_write_problems_and_read_back(tmp_path):
    from nsopt import io

    sim, ball, ground = bouncing_ball(e=0.5, T=1.0)
    traj = sim.run(write_problems=tmp_path)
    files = sorted(tmp_path.glob("step_*_lcp.dat"))
    solved = [j for j, s in enumerate(traj.status) if s is not None]
    assert len(files) == len(solved) > 0
    p = io.load(files[0])
    assert p.kind == "lcp" and p.size == 1


def test_failure_is_recorded_or_raised():
    sim, ball, ground = bouncing_ball(T=1.0)
    sim.method, sim.fallback, sim.options = "pgs", (), {"max_iter": 0}
    sim.tol = 1e-300
    with pytest.raises(StepFailed) as info:
        sim.on_failure = "raise"
        sim.run()
    assert info.value.step >= 1 and not info.value.solution.success
    sim2, ball, ground = bouncing_ball(T=1.0)
    sim2.method, sim2.fallback, sim2.options, sim2.tol = "pgs", (), {"max_iter": 0}, 1e-300
    traj = sim2.run()
    assert traj.failed_steps and all(traj.status[k - 1] is not Status.SOLVED for k in traj.failed_steps)


def test_relay_oscillator_matches_the_discrete_formula():
    A = np.array([[0.0, 1.0], [-1.0, -0.2]])
    plant = nm.FirstOrderLinearTIDS(x0=[1.0, 0.0], A=A)
    relay = nm.Interaction(nm.RelayNSL(1, -1.0, 1.0), nm.FirstOrderLinearTIR(C=[[1.0, 0.0]], B=[[0.0], [1.0]]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, 0.5)
    nsds.link(relay, plant)
    h, th = 1e-2, 0.5
    traj = nm.TimeStepping(nsds, h, nm.EulerMoreauOSI(th), osns="relay", method="lemke", tol=1e-12).run()
    x, lam = traj.x(plant), traj.lambda_(relay, 0)[:, 0]
    W = np.eye(2) - h * th * A
    for k in range(len(x) - 1):   # x_{k+1} = x_k + W⁻¹ h (A x_k + B λ_{k+1})  (θ-method, γ = 1)
        ref = x[k] + np.linalg.solve(W, h * (A @ x[k] + np.array([0.0, lam[k + 1]])))
        assert np.allclose(x[k + 1], ref, rtol=0, atol=1e-12)
    assert np.all(lam[1:] == pytest.approx(-1.0))    # y = x1 > 0 on this interval: λ = lb


def pendulum_sim(G0=True, T=1.0, h=1e-2):
    """A pendulum (LagrangianDS, gravity through fint: M q̈ + F_int = 0, F_int = gL sin q) hitting a wall
    x >= -0.5 (scleronomous)."""
    L, g = 1.0, 9.81
    ds = nm.LagrangianDS([1.0], [0.0], M=[[L * L]], fint=lambda t, q, v, z: np.array([g * L * np.sin(q[0])]),
                         jacobian_fint_q=lambda t, q, v, z: np.array([[g * L * np.cos(q[0])]]),
                         jacobian_fint_v=lambda t, q, v, z: np.zeros((1, 1)))
    rel = nm.LagrangianScleronomousR(h=lambda q, z: np.array([L * np.sin(q[0]) + 0.5]),
                                     G0=(lambda q, z: np.array([[L * np.cos(q[0])]])) if G0 else None)
    inter = nm.Interaction(nm.NewtonImpactNSL(0.8), rel)
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(inter, ds)
    sim = nm.TimeStepping(nsds, h, nm.MoreauJeanOSI(0.5), osns="lcp", method="lemke", tol=1e-12, newton_tol=1e-10)
    return sim, ds, inter, rel


def test_nonlinear_lagrangian_newton_converges_and_keeps_the_constraint():
    sim, ds, inter, rel = pendulum_sim()
    traj = sim.run()
    assert traj.newton_converged.all() and traj.newton_iterations.max() > 1
    assert traj.newton_residual.max() <= 1e-10
    y = traj.y(inter, 0)[:, 0]
    assert y.min() > -0.05              # the wall holds, up to one step's penetration
    assert traj.lambda_(inter, 1).max() > 0  # it was hit
    # finite-difference G0 gives the same trajectory
    sim2, ds2, inter2, rel2 = pendulum_sim(G0=False)
    traj2 = sim2.run()
    assert np.allclose(traj2.q(ds2), traj.q(ds), rtol=0, atol=1e-6)


def test_given_jacobians_agree_with_finite_differences():
    rng = np.random.default_rng(0)
    Q, V, lam, Z, t = rng.normal(size=2), rng.normal(size=2), rng.normal(size=1), np.zeros(0), 0.3
    rels = {
        "scleronomous": nm.LagrangianScleronomousR(lambda q, z: np.array([q[0] ** 2 + np.sin(q[1])]),
                                                   lambda q, z: np.array([[2 * q[0], np.cos(q[1])]])),
        "rheonomous": nm.LagrangianRheonomousR(lambda q, t, z: np.array([q[0] - np.sin(t)]),
                                               lambda q, t, z: np.array([[1.0, 0.0]]),
                                               lambda q, t, z: np.array([-np.cos(t)])),
        "compliant": nm.LagrangianCompliantR(lambda q, l, z: np.array([q[1] + 0.1 * l[0] ** 2]),
                                             lambda q, l, z: np.array([[0.0, 1.0]]),
                                             lambda q, l, z: np.array([[0.2 * l[0]]])),
    }
    for name, rel in rels.items():
        rel.bind(1, 2, 0)
        G0 = rel.G0(Q, t, lam, Z)
        assert np.allclose(G0, fd_jacobian_central(lambda q: rel.h(q, t, lam, Z), Q, 1), atol=1e-6), name
        if rel.rheonomous:
            fd = (rel.h(Q, t + 1e-6, lam, Z) - rel.h(Q, t - 1e-6, lam, Z)) / 2e-6
            assert np.allclose(rel.hdot(Q, t, Z), fd, atol=1e-6)
        if rel.compliant:
            assert np.allclose(rel.G1(Q, t, lam, Z), fd_jacobian_central(lambda l: rel.h(Q, t, l, Z), lam, 1), atol=1e-6)
    fo = nm.FirstOrderR(h=lambda x, t, l, z: np.array([x[0] * l[0]]), g=lambda x, t, l, z: np.array([l[0], x[1] * l[0]]),
                        H0=lambda x, t, l, z: np.array([[l[0], 0.0]]), H1=lambda x, t, l, z: np.array([[x[0]]]),
                        G0=lambda x, t, l, z: np.array([[0.0, 0.0], [0.0, l[0]]]),
                        G1=lambda x, t, l, z: np.array([[1.0], [x[1]]]))
    fo.bind(1, 2, 0)
    C, D, K, B = fo.jacobians(Q, t, lam, Z)
    assert np.allclose(C, fd_jacobian_central(lambda x: fo.output(x, t, lam, Z), Q, 1), atol=1e-6)
    assert np.allclose(D, fd_jacobian_central(lambda l: fo.output(Q, t, l, Z), lam, 1), atol=1e-6)
    assert np.allclose(K, fd_jacobian_central(lambda x: fo.input(x, t, lam, Z), Q, 2), atol=1e-6)
    assert np.allclose(B, fd_jacobian_central(lambda l: fo.input(Q, t, l, Z), lam, 2), atol=1e-6)
    ds = nm.LagrangianDS([0.3], [0.1], M=[[1.0]], fgyr=lambda q, v, z: np.array([q[0] * v[0] ** 2]),
                         jacobian_fgyr_q=lambda q, v, z: np.array([[v[0] ** 2]]),
                         jacobian_fgyr_v=lambda q, v, z: np.array([[2 * q[0] * v[0]]]))
    K, C = ds.jacobian_forces(0.0, ds.q, ds.v)
    assert np.allclose(K, fd_jacobian_central(lambda q: -ds.forces(0.0, q, ds.v), ds.q, 1), atol=1e-6)
    assert np.allclose(C, fd_jacobian_central(lambda v: -ds.forces(0.0, ds.q, v), ds.v, 1), atol=1e-6)


def test_nonlinear_first_order_system_with_relay_newton():
    """ẋ = -x³ + λ, y = x - 0.5, λ ∈ -sign(y)·[0, 1]... (relay [-1, 1]); a Newton loop per step."""
    ds = nm.FirstOrderNonLinearDS([2.0], f=lambda t, x, z: -x ** 3, jacobian_f=lambda t, x, z: np.diag(-3 * x ** 2))
    inter = nm.Interaction(nm.RelayNSL(1), nm.FirstOrderLinearTIR(C=[[1.0]], B=[[1.0]], e=[-0.5]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, 3.0)
    nsds.link(inter, ds)
    traj = nm.TimeStepping(nsds, 1e-2, nm.EulerMoreauOSI(1.0), osns="relay", method="lemke", tol=1e-12,
                           newton_tol=1e-12).run()
    x = traj.x(ds)[:, 0]
    assert traj.newton_converged.all()
    assert abs(x[-1] - 0.5) < 1e-9          # reaches the switching surface and slides on it
    lam = traj.lambda_(inter, 0)[-1, 0]
    assert lam == pytest.approx(0.5 ** 3, abs=1e-9)   # the equivalent control keeps ẋ = 0


def test_progress_bar_and_step_api():
    need_extra("mechanics", ["tqdm"])     # (progress=True draws a tqdm bar)
    sim, ball, ground = bouncing_ball(T=0.05)
    s = sim.step()
    assert s is None and sim.k == 1 and sim.t == pytest.approx(0.005)
    traj = sim.run(progress=True)
    assert sim.k == sim.n_steps == 10 and traj.q(ball).shape == (11, 1)


def test_siconos_side_by_side():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_modeling_siconos as b

    if not b.have_siconos():
        pytest.skip("Siconos' kernel not available for /usr/bin/python3")
    s, n = b.run_siconos("ball", 3.0), b.nsopt_ball(3.0)
    r = b.compare(n, s, ("q", "v", "p", "lam"))
    assert max(r.values()) <= 1e-8, r
    s, n = b.run_siconos("diode", 5e-4), b.nsopt_diode(5e-4)
    r = b.compare(n, s, ("x", "y", "lam"), first=1)
    assert max(r.values()) <= 1e-8, r


def test_theta_gamma_scheme_matches_the_discrete_formula():
    A = np.array([[0.0, 1.0], [-1.0, -0.2]])
    plant = nm.FirstOrderLinearTIDS(x0=[1.0, 0.0], A=A)
    relay = nm.Interaction(nm.RelayNSL(1, -1.0, 1.0), nm.FirstOrderLinearTIR(C=[[1.0, 0.0]], B=[[0.0], [1.0]]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, 3.0)
    nsds.link(relay, plant)
    h, th, gam = 1e-2, 0.6, 0.5
    traj = nm.TimeStepping(nsds, h, nm.EulerMoreauOSI(th, gam), osns="relay", method="lemke", tol=1e-12).run()
    x, r = traj.x(plant), traj.r(plant)
    W = np.eye(2) - h * th * A
    for k in range(len(x) - 1):   # x_{k+1} = x_k + W⁻¹ h (A x_k + γ r_{k+1} + (1-γ) r_k)
        ref = x[k] + np.linalg.solve(W, h * (A @ x[k] + gam * r[k + 1] + (1 - gam) * r[k]))
        assert np.allclose(x[k + 1], ref, rtol=0, atol=1e-12)


def test_first_order_jacobian_by_finite_differences():
    ds = nm.FirstOrderNonLinearDS([0.3, -0.2], f=lambda t, x, z: np.array([x[1] ** 2, np.sin(x[0]) * t]),
                                  jacobian_f=lambda t, x, z: np.array([[0.0, 2 * x[1]], [np.cos(x[0]) * t, 0.0]]))
    J = ds.jacobian_f(0.7, ds.x)
    assert np.allclose(J, fd_jacobian_central(lambda x: ds.f(0.7, x), ds.x, 2), atol=1e-6)
    nofd = nm.FirstOrderNonLinearDS([0.3, -0.2], f=lambda t, x, z: np.array([x[1] ** 2, np.sin(x[0]) * t]))
    assert np.allclose(nofd.jacobian_f(0.7, nofd.x), J, atol=1e-6)


def test_to_fclib_from_kept_problems(tmp_path):
    from nsopt import io

    sim, ball, ground = bouncing_ball(e=0.5, T=0.6)
    sim.keep_problems = True
    traj = sim.run()
    files = traj.to_fclib(tmp_path / "lcp")
    assert files and all(f.suffix == ".dat" for f in files) and io.load(files[0]).kind == "lcp"
    block = nm.LagrangianLinearTIDS([0.0, 0.0], [1.0, 0.0], np.eye(2), fext=[0.0, -9.81])
    contact = nm.Interaction(nm.NewtonImpactFrictionNSL(0.0, 0.0, 0.5, 2), nm.LagrangianLinearTIR([[0.0, 1.0], [1.0, 0.0]]))
    nsds = nm.NonSmoothDynamicalSystem(0, 0.05)
    nsds.link(contact, block)
    traj = nm.TimeStepping(nsds, 1e-2, keep_problems=True).run()
    files = traj.to_fclib(tmp_path / "fc")
    assert len(files) == 5 and all(f.suffix == ".hdf5" for f in files)
    p = io.load(files[-1])
    assert p.kind == "fc2d" and np.allclose(p.q, traj.problems[5].q)
    with pytest.raises(ModelingError, match="keep_problems"):
        bouncing_ball(T=0.1)[0].run().to_fclib(tmp_path / "none")



def test_trajectory_names_nit_and_the_status_of_steps_without_contact():
    sim, ball, ground = bouncing_ball(T=1.0)
    traj = sim.run()
    contact = [j for j, s in enumerate(traj.status) if s is not None]
    assert contact and len(contact) < len(traj.status)
    assert np.all(traj.nit[[j for j, s in enumerate(traj.status) if s is None]] == 0)
    assert np.isnan(traj.error[[j for j, s in enumerate(traj.status) if s is None]]).all()
    with pytest.warns(DeprecationWarning, match="Trajectory.nit"):
        np.testing.assert_array_equal(traj.iterations, traj.nit)
    r = repr(traj)
    assert f"{len(contact)} with a problem" in r and "without contact (status None)" in r
    assert "None for a step without contact" in type(traj).__doc__
