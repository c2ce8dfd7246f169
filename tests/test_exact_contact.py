"""Rigid contact that stays exact (issue 32): the look-ahead activation rule and the position projection of
``MoreauJeanOSI`` (``formulations/time_stepping.md`` §6), on the scenes of ``benchmarks/rigid_scenes.py``
(cubes of side 0.2 m, m = 1 kg, μ = 0.5, e = 0, h = 5 ms, θ = 0.50001): no sinking at impact or at rest, no
energy created, piles at rest, Coulomb's law on a slope and at its threshold; and Siconos' rule kept
(``activation="siconos"``) where nsopt agrees with Siconos."""

import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import need_extra

need_extra("mechanics")

from nsopt import mechanics as mc  # noqa: E402
from nsopt import modeling as nm  # noqa: E402
from nsopt.exceptions import ModelingError  # noqa: E402
from nsopt.modeling.newton_euler import kinetic_energy  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import rigid_scenes as rs  # noqa: E402

G = rs.GRAVITY
H, THETA = 5e-3, 0.50001


def _run(sc, T=None, **kw):
    """A scene of rigid_scenes.py through Scene.run (nsn-ac; the scene's h, T; ``kw`` to run)."""
    kw.setdefault("tol", 1e-10)
    return rs.nsopt_scene(sc).run(T or sc["T"], sc["h"], theta=THETA, method="nsn-ac", **kw)


def _energy(run, sc):
    """Kinetic + potential energy of the bodies at every recorded state (k + 1,)."""
    m = np.array([b[2] for b in sc["bodies"]])
    inertia = np.array([np.diag(b[3]) for b in sc["bodies"]])
    KE = np.array([kinetic_energy(V, m, inertia).sum() for V in run.v])
    return KE + G * (run.q[:, :, 2] * m).sum(1)


# ---------------------------------------------------------------------------- no sinking
def test_fast_drop_does_not_sink():
    """Issue 32's fast approach: a cube dropped from 1.086 m is 15 mm above the floor at 4.36 m/s the step before
    it lands. Siconos' rule (y + hẏ/2 <= 0: +4.1 mm, off) lets it fall a whole step into the floor and stop there
    one step later, 18.3 mm deep for good. The look-ahead rule takes the contact into that step, whose gap term
    brings the cube to the speed at which the next step's stop ends it on the surface: it lands at y = 0 without
    the projection (its centre at a / 2 to 1e-12; the detection's box-box distance is off by 1.4e-6), and the
    default (with the projection) records no state deeper than projection_tol (1e-8), at rest on its face."""
    sc = rs.drop()
    sc["T"] = 0.7
    siconos = _run(sc, activation="siconos", projection=False)
    assert siconos.penetration[-1] == pytest.approx(0.0183, abs=2e-4)
    plain = _run(sc, projection=False)                 # the look-ahead rule and the gap term alone
    k = int(np.argmax(plain.active > 0))
    assert plain.v[k + 1, 0, 2] > -0.8                   # slowed in the closing step (from -4.41 m/s) ...
    assert np.abs(plain.v[k + 2:, 0, 2]).max() < 1e-9    # ... stopped in the next
    assert abs(plain.q[-1, 0, 2] - 0.1) < 1e-12          # on the surface (its centre at a / 2)
    assert plain.penetration.max() < 2e-6                 # (coal's box-box distance: 1.4e-6 here)
    run = _run(sc)                                        # the default: look-ahead and projection
    assert run.penetration.max() <= 1e-8
    assert abs(run.q[-1, 0, 2] - 0.1) < 2e-6
    assert np.abs(run.v[-50:]).max() < 1e-9
    assert not run.failed_steps


def test_pile_of_ten_rests_without_sinking():
    """Ten cubes dropped into the box (rigid_scenes.cubes(10)): no contact ever deeper than 1e-8 (the projection's
    tolerance), the pile at rest by t = 2 s (kinetic energy below 1e-9 J), every body slower than 1e-9 m/s over
    the last 0.5 s of a 4.5 s run, the total energy never above its start. (A cube left standing on two diagonal
    corners over a gap of a few 1e-9 m under a third, within the projection's tolerance, is an inverted pendulum:
    it tips onto that corner, its speed growing from ~1e-9 m/s at about 7.6 /s, to at most ~1e-5 m/s and 1e-12 J,
    then rests on three corners; when it starts depends on the last bits of the state, so the test asks for rest
    after it, not at a fixed time.) Without the projection the look-ahead rule keeps every contact above -1 mm;
    Siconos' MoreauJeanOSI rests with contacts 8 mm deep."""
    sc = rs.cubes(10)
    run = _run(sc, T=4.5, tol=1e-9)
    assert not run.failed_steps
    assert run.penetration.max() <= 1e-8
    at2 = np.searchsorted(run.t, 2.0 - 1e-9)
    assert run.kinetic_energy[at2:].max() < 1e-9
    at4 = np.searchsorted(run.t, 4.0 - 1e-9)
    assert np.abs(run.v[at4 + 1:, :, :3]).max() < 1e-9
    E = _energy(run, sc)
    assert E.max() <= E[0]
    plain = _run(sc, T=1.5, projection=False, tol=1e-6)
    assert plain.penetration.max() < 1e-3
    siconos = _run(sc, T=1.5, activation="siconos", projection=False, tol=1e-6)
    assert siconos.penetration[-1] > 5e-3


# ---------------------------------------------------------------------------- round-off at a gap of zero
def _resting_cube(vz, activation):
    """A cube resting flat at gap exactly 0 on four corner contacts, its vertical velocity ``vz`` (round-off
    of either sign, as OpenBLAS's kernels leave it); 20 steps."""
    a, m = 0.1, 1.0
    cube = nm.NewtonEulerDS([0, 0, a, 1, 0, 0, 0], [0, 0, vz, 0, 0, 0], m, np.eye(3) * m * (2 * a) ** 2 / 6,
                            fext=[0, 0, -G * m])
    nsds = nm.NonSmoothDynamicalSystem(0.0, 20 * H)
    for cx, cy in [(a, a), (-a, a), (-a, -a), (a, -a)]:
        nsds.link(nm.Interaction(nm.NewtonImpactFrictionNSL(0.0, 0.0, 0.5, 3),
                                 nm.NewtonEuler3DR(point=[cx, cy, -a], normal=[0, 0, 1])), cube)
    traj = nm.TimeStepping(nsds, H, nm.MoreauJeanOSI(THETA, activation=activation, projection=False), osns="fc3d",
                           method="nsn-ac", tol=1e-12).run()
    return traj.q(cube), traj.status


@pytest.mark.parametrize("vz", [1e-17, -1e-17])
def test_round_off_at_zero_gap_keeps_the_contact(vz):
    """At a gap of exactly 0 Siconos' rule y + γhẏ <= 0 follows the sign of ẏ's round-off (issue 33): with
    ẏ = +1e-17 the resting cube falls freely for a step (no contact in it) and ends 1.2e-4 deep. The look-ahead
    rule reads the free velocity (-hg here): the contact stays, whatever the sign, and the cube stays put."""
    q, status = _resting_cube(vz, None)
    assert all(s is not None for s in status)
    assert np.abs(q[:, 2] - 0.1).max() < 1e-15
    q2, status2 = _resting_cube(vz, "siconos")
    if vz > 0:
        assert status2[0] is None and q2[-1, 2] < 0.1 - 1e-4
    else:
        assert all(s is not None for s in status2)


def test_round_off_lagrangian_box_with_the_lookahead_rule():
    """The same on a Lagrangian model (a box on four LagrangianLinearTIR corner contacts, fc3d): with
    ``activation="lookahead"`` its contacts stay active at a gap of exactly 0 under either sign of round-off;
    with the default (Siconos' rule for Lagrangian systems) the positive sign loses them."""
    M = np.diag([1.0, 1.0, 1.0, 0.1, 0.1, 0.1])
    out = {}
    for rule in (None, "lookahead"):
        for vz in (1e-17, -1e-17):
            box = nm.LagrangianLinearTIDS(q0=[0, 0, 0.2, 0, 0, 0], v0=[0, 0, vz, 0, 0, 0], M=M,
                                          fext=[0, 0, -G, 0, 0, 0])
            nsds = nm.NonSmoothDynamicalSystem(0.0, 5 * H)
            for cx, cy in [(0.1, 0.1), (-0.1, 0.1), (-0.1, -0.1), (0.1, -0.1)]:
                Hc = np.array([[0, 0, 1, cy, -cx, 0], [1, 0, 0, 0, -0.2, -cy], [0, 1, 0, 0.2, 0, cx]], dtype=float)
                nsds.link(nm.Interaction(nm.NewtonImpactFrictionNSL(0.0, 0.0, 0.5, 3),
                                         nm.LagrangianLinearTIR(H=Hc, b=[-0.2, 0, 0])), box)
            traj = nm.TimeStepping(nsds, H, nm.MoreauJeanOSI(THETA, activation=rule), osns="fc3d", method="nsn-ac",
                                   tol=1e-12).run()
            out[rule, vz] = (traj.status[0] is not None, traj.q(box)[-1, 2])
    assert out["lookahead", 1e-17][0] and out["lookahead", -1e-17][0]
    assert abs(out["lookahead", 1e-17][1] - 0.2) < 1e-15 and abs(out["lookahead", -1e-17][1] - 0.2) < 1e-15
    assert not out[None, 1e-17][0] and out[None, -1e-17][0]


# ---------------------------------------------------------------------------- no energy created
def _capsule(**kw):
    """A capsule (radius 0.05, cylinder 0.2, axis along y) rolling along x on the floor at 20 rad/s, 3 s."""
    sc = mc.Scene(gravity=(0, 0, -G), margin=0.02)
    sc.add_primitive_shape("Cap", "Capsule", (0.05, 0.2))
    sc.add_primitive_shape("Ground", "Box", (20.0, 20.0, 0.2))
    sc.add_Newton_impact_friction_nsl("contact", mu=0.5, e=0.0)
    sc.add_object("ground", ["Ground"], translation=[0, 0, -0.1])
    sc.add_object("cap", ["Cap"], translation=[0, 0, 0.05], mass=1.0, velocity=(20 * 0.05, 0, 0, 0, 20.0, 0))
    run = sc.run(3.0, H, theta=THETA, method="nsn-ac", tol=1e-10, **kw)
    I = sc.objects[1]["inertia"]
    E = kinetic_energy(run.v[:, 0], 1.0, I) + G * run.q[:, 0, 2]
    return run, E


def test_rolling_capsule_keeps_its_energy():
    """A capsule rolling on the floor: the look-ahead contacts' Jacobians are taken where the contact was found
    (q_k), so that the normal force passes through the axis: the energy stays at its start to 1e-9 J, no
    penetration. With Siconos' rule (Jacobians at the Newton iterate q_k + hv_k, the material point behind the
    contact) the normal force drives the rolling: with the projection the capsule speeds up (+35 J in 3 s);
    without it, it sinks through the floor."""
    run, E = _capsule()
    assert np.abs(E - E[0]).max() < 1e-9
    assert run.penetration.max() <= 1e-8
    run2, E2 = _capsule(activation="siconos")
    assert E2.max() - E2[0] > 1.0


def test_sphere_column_spun_loses_energy():
    """The column of ten spheres in its tube (rigid_scenes.spheres), each released spinning (random angular
    velocities of ~2 rad/s): the total energy never exceeds its start, the column ends at rest (every speed
    below 1e-9 m/s) with no contact deeper than 1e-8."""
    sc = rs.spheres(10)
    rng = np.random.default_rng(0)
    sc["bodies"] = [(n, s, m, I, p, list(np.r_[0, 0, 0, 2.0 * rng.normal(size=3)])) for n, s, m, I, p, _ in sc["bodies"]]
    run = _run(sc, T=2.0, tol=1e-10)
    E = _energy(run, sc)
    assert E.max() <= E[0]
    assert np.abs(run.v[-1]).max() < 1e-9
    assert run.penetration.max() <= 1e-8


# ---------------------------------------------------------------------------- Coulomb's law
def test_cube_sticks_on_a_25_degree_slope():
    """μ = 0.5 holds a cube on a slope below atan(0.5) = 26.57°: at 25° it slips less than 1e-9 m in 2 s."""
    sc = rs.slope(25.0)
    run = _run(sc)
    d = np.asarray(sc["downhill"])
    slip = (run.q[:, 0, :3] - run.q[0, 0, :3]) @ d
    assert np.abs(slip).max() < 1e-9
    assert run.penetration.max() <= 1e-8


def test_cube_slides_on_a_28_degree_slope_at_coulombs_acceleration():
    """At 28° it slides with g(sin α − μ cos α) = 0.27466 m/s²: the distance down the slope over 2 s fits a
    parabola whose acceleration is within 1e-4 (relative) of it; the cube stays on the slope (no penetration)."""
    sc = rs.slope(28.0)
    run = _run(sc)
    d = np.asarray(sc["downhill"])
    s = (run.q[:, 0, :3] - run.q[0, 0, :3]) @ d
    t = np.r_[0.0, run.t]
    a = 2 * np.polyfit(t, s, 2)[0]
    assert a == pytest.approx(sc["acceleration"], rel=1e-4)
    assert run.penetration.max() <= 1e-8


def test_cube_pushed_at_the_threshold_stays():
    """A cube on the floor pushed by exactly μ m g: Coulomb's threshold, where friction balances the push; it
    moves less than 1e-9 m in 2 s."""
    sc = rs.push()
    run = _run(sc)
    assert np.abs(run.q[:, 0, :3] - run.q[0, 0, :3]).max() < 1e-9
    assert np.abs(run.v[-1, 0]).max() < 1e-9


# ---------------------------------------------------------------------------- settings
def test_run_passes_the_activation_settings():
    """Scene.run passes gamma, activation and activation_threshold to MoreauJeanOSI; bad values are errors
    naming the field."""
    sc = rs.drop(z=0.11)
    run = _run(sc, T=0.02, gamma=0.25, activation="siconos", activation_threshold=1e-3)
    osi = run.sim.integrator
    assert (osi.activation, osi.gamma, osi.activation_threshold) == ("siconos", 0.25, 1e-3)
    assert nm.MoreauJeanOSI().lookahead_gamma == 1.0 and nm.MoreauJeanOSI().gamma == 0.5
    with pytest.raises(ModelingError, match="activation"):
        nm.MoreauJeanOSI(activation="always")
    with pytest.raises(ModelingError, match="gamma"):
        _run(sc, T=0.02, gamma=2.0)


def test_projection_active_set_is_the_full_projection():
    """The projection's active set of rows (MoreauJeanStepper._project_rows) gives the M-metric projection that
    the LCP over every row gives: random contacts on random bodies, the same Δ to 1e-10."""
    import scipy.sparse as sp

    from nsopt import LCP, solve
    from nsopt.modeling._stepper import MoreauJeanStepper

    rng = np.random.default_rng(5)
    for _ in range(20):
        nb, nr = 6, 14
        Mi = sp.diags(rng.uniform(0.5, 2.0, 6 * nb)).tocsr()
        H = sp.random(nr, 6 * nb, density=0.3, random_state=rng, format="csr")
        y = rng.normal(size=nr) * 1e-3
        delta, _ = MoreauJeanStepper._project_rows(H, Mi, y, 1e-12)
        W = (H @ Mi @ H.T).toarray()
        ref = solve(LCP(W, y), method="lemke", tol=1e-13)
        np.testing.assert_allclose(delta, Mi @ H.T @ ref.z, atol=1e-10)
        assert (y + H @ delta).min() >= -1e-12


def test_projection_many_penetrating_rows_one_lcp(monkeypatch):
    """More penetrating rows than PROJECTION_DENSE (pgs' sizes): the projection solves the LCP of every row at
    once (18e4543's one LCP) instead of growing the active set a layer of contacts a round (on the 1000-cube
    pile: 3x the pgs LCPs); the same Δ as the LCP over every row."""
    import scipy.sparse as sp

    from nsopt import LCP, solve
    from nsopt.modeling import _stepper
    from nsopt.modeling._stepper import MoreauJeanStepper

    sizes = []

    def exact(problem, method, **kw):      # every LCP recorded, and solved exactly (lemke) for the comparison
        sizes.append(problem.size)
        M = problem.M.toarray() if hasattr(problem.M, "toarray") else problem.M
        return solve(LCP(M, problem.q), method="lemke", tol=1e-13)

    monkeypatch.setattr(_stepper, "PROJECTION_DENSE", 3)
    monkeypatch.setattr(_stepper, "solve", exact)
    rng = np.random.default_rng(7)
    nb, nr = 6, 14
    for _ in range(10):
        Mi = sp.diags(rng.uniform(0.5, 2.0, 6 * nb)).tocsr()
        H = sp.random(nr, 6 * nb, density=0.3, random_state=rng, format="csr")
        y = rng.normal(size=nr) * 1e-3
        y[:4] = -np.abs(y[:4]) - 1e-4           # more than PROJECTION_DENSE rows penetrate
        sizes.clear()
        delta, n = MoreauJeanStepper._project_rows(H, Mi, y, 1e-12)
        assert sizes == [nr] and n == nr
        ref = solve(LCP((H @ Mi @ H.T).toarray(), y), method="lemke", tol=1e-13)
        np.testing.assert_allclose(delta, Mi @ H.T @ ref.z, atol=1e-10)
