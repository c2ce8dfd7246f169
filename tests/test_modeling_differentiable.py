"""Derivatives of whole Moreau–Jean runs (nsopt.modeling.differentiable, issue 21 part 3) against
central finite differences of whole simulations.

Tolerances: a central difference with step d has a truncation error O(d^2 f''') (about 1e-12 here)
and a round-off error about eps |f| / d, with the steps' problems solved to 1e-13..1e-14: about
1e-9 relative for d = 1e-6. The tests ask 1e-6 relative (what the step allows, with room); the
agreement seen is 5e-11 .. 9e-9 (printed by ``-s``; the largest for the mass, the smallest step d/dfext uses d = 1e-4). Reverse and forward mode contract the same
linearisations, so they agree to round-off (1e-12 relative asked).
"""

import numpy as np
import pytest

from nsopt import modeling as nm
from nsopt.exceptions import ModelingError

G = 9.81
FD_STEP = 1e-6
FD_RTOL = 1e-6
MODES_RTOL = 1e-12


def central(f, x, d=FD_STEP):
    return (f(x + d) - f(x - d)) / (2 * d)


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


# ------------------------------------------------------------------------------------ bouncing ball
def ball_run(e=0.8, v0=1.0, q0=1.0, m=1.0, f=None, T=1.0, h=1e-3, diff=True):
    ball = nm.LagrangianLinearTIDS(q0=[q0], v0=[v0], M=[[m]], fext=[-G if f is None else f])
    ground = nm.Interaction(nm.NewtonImpactNSL(e=e), nm.LagrangianLinearTIR(H=[[1.0]]))
    nsds = nm.NonSmoothDynamicalSystem(t0=0.0, T=T)
    nsds.link(ground, ball)
    traj = nm.TimeStepping(nsds, h=h, osns="lcp", method="lemke", tol=1e-14, differentiable=diff).run()
    return traj, ball, ground


APEX_STEP = 620        # after the first bounce (impulse in row 566: step 566), ascending


def apex(Q, V, k=APEX_STEP):
    """The apex height of the ballistic arc through the state of step k: q + v^2 / 2g (the θ = 1/2
    scheme is exact for a constant force, so this is the apex the run reaches)."""
    gQ, gV = np.zeros_like(Q), np.zeros_like(V)
    gQ[k, 0], gV[k, 0] = 1.0, V[k, 0] / G
    return Q[k, 0] + V[k, 0] ** 2 / (2 * G), gQ, gV


def ball_apex(**kw):
    traj, ball, _ = ball_run(diff=False, **kw)
    return apex(traj.q(ball), traj.v(ball))[0]


def test_bouncing_ball_apex_against_finite_differences():
    traj, ball, ground = ball_run()
    bounce = np.flatnonzero(traj.lambda_(ground)[:, 0] > 0)
    assert bounce.tolist() == [566] and traj.v(ball)[APEX_STEP, 0] > 0     # one impact, then flying up
    g = traj.gradient(apex, wrt=["e", "v0", "q0", "mass", "fext"])
    assert g.value == pytest.approx(ball_apex(), rel=1e-15)
    fd = {"e": central(lambda x: ball_apex(e=x), 0.8), "v0": central(lambda x: ball_apex(v0=x), 1.0),
          "q0": central(lambda x: ball_apex(q0=x), 1.0), "mass": central(lambda x: ball_apex(m=x, f=-G), 1.0),
          "fext": central(lambda x: ball_apex(f=x), -G, 1e-4)}   # a small derivative of an O(1) value: a larger step
    for k, v in fd.items():
        got = float(np.ravel(g[k])[0])
        print(f"ball apex d/d{k}: adjoint {got:.12g}, central FD {v:.12g}, relative difference {rel(got, v):.1e}")
        assert rel(got, v) <= FD_RTOL, k
    # in closed form: the impact step gives v+ = -e v_k and q+ = q_k + h (v_k + v+) / 2, then the arc
    # (exact for θ = 1/2) rises by v+^2 / 2g: d(apex)/de = e v_k^2 / g - h v_k / 2
    vk = traj.v(ball)[565, 0]
    assert g["e"] == pytest.approx(0.8 * vk ** 2 / G - 1e-3 * vk / 2, rel=1e-12)
    # forward mode: the same numbers to round-off
    _, V = traj.states()
    for item in ("e", "mass"):
        dQ, dV = traj.jvp({item: 1.0})
        fwd = dQ[APEX_STEP, 0] + V[APEX_STEP, 0] * dV[APEX_STEP, 0] / G
        assert rel(fwd, g[item]) <= MODES_RTOL
    dQ, dV = traj.jvp({"v0": [1.0]})
    assert rel(dQ[APEX_STEP, 0] + V[APEX_STEP, 0] * dV[APEX_STEP, 0] / G, g["v0"][0]) <= MODES_RTOL
    assert not g.report.near_switches and not g.report.degenerate and g.report.contact_steps == 1


def test_final_state_jacobian_is_the_forward_sweep():
    traj, ball, _ = ball_run(T=0.8)
    J = traj.jacobian(["v0", "e", ("M", ball)])
    assert J["v0"].shape == (2, 1) and J["e"].shape == (2,) and J[("M", ball)].shape == (2, 1, 1)
    # against central differences of the final state
    def final(**kw):
        t, b, _ = ball_run(T=0.8, diff=False, **kw)
        return np.array([t.q(b)[-1, 0], t.v(b)[-1, 0]])
    fd = (final(v0=1.0 + FD_STEP) - final(v0=1.0 - FD_STEP)) / (2 * FD_STEP)
    np.testing.assert_allclose(J["v0"][:, 0], fd, rtol=FD_RTOL)
    # reverse mode on each final coordinate gives the rows of the same Jacobian
    N = traj.states()[0].shape[0]
    for r in range(2):
        gQ, gV = np.zeros((N, 1)), np.zeros((N, 1))
        (gQ if r == 0 else gV)[-1, 0] = 1.0
        g = traj.vjp(gQ, gV, wrt=["e", "v0"])
        assert rel(g["e"], J["e"][r]) <= MODES_RTOL and rel(g["v0"][0], J["v0"][r, 0]) <= MODES_RTOL


# ------------------------------------------------------------------------------------ block on an incline
ALPHA = np.radians(20.0)


def incline_run(mu=0.6, v0=2.0, dim=2, T=1.2, h=2e-3, diff=True):
    """A block sliding down a 20° incline (coordinates along and across the slope, then normal),
    decelerated by friction (mu > tan 20°) until it sticks."""
    if dim == 2:
        blk = nm.LagrangianLinearTIDS(q0=[0.0, 0.0], v0=[v0, 0.0], M=np.eye(2),
                                      fext=[G * np.sin(ALPHA), -G * np.cos(ALPHA)])
        rel_ = nm.LagrangianLinearTIR(H=[[0.0, 1.0], [1.0, 0.0]])
    else:
        blk = nm.LagrangianLinearTIDS(q0=[0.0, 0.0, 0.0], v0=[v0, 0.3, 0.0], M=np.eye(3),
                                      fext=[G * np.sin(ALPHA), 0.0, -G * np.cos(ALPHA)])
        rel_ = nm.LagrangianLinearTIR(H=[[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    contact = nm.Interaction(nm.NewtonImpactFrictionNSL(0.0, 0.0, mu, dim), rel_)
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(contact, blk)
    # the block rests at zero gap: a small activation threshold keeps the contact's decision off round-off
    sim = nm.TimeStepping(nsds, h=h, integrator=nm.MoreauJeanOSI(0.5, activation_threshold=1e-9),
                          osns=f"fc{dim}d", method="nsn-ac", tol=1e-13, differentiable=diff)
    return sim.run(), blk


def last_q0(traj, ds):
    return traj.q(ds)[-1, 0]


def slid(Q, V):
    gQ = np.zeros_like(Q)
    gQ[-1, 0] = 1.0
    return Q[-1, 0], gQ, None


@pytest.mark.parametrize("dim", [2, 3])
def test_incline_sliding_distance_against_finite_differences(dim):
    traj, blk = incline_run(dim=dim)
    v = traj.v(blk)
    assert abs(v[-1, 0]) < 1e-10 and v[len(v) // 2, 0] > 0.1     # slid, then stuck before T
    g = traj.gradient(slid, wrt=["mu", "v0"])
    fd_mu = central(lambda m: last_q0(*incline_run(mu=m, dim=dim, diff=False)), 0.6)
    print(f"incline fc{dim}d d(distance)/dmu: adjoint {g['mu']:.12g}, central FD {fd_mu:.12g}, "
          f"relative difference {rel(g['mu'], fd_mu):.1e}")
    assert rel(g["mu"], fd_mu) <= FD_RTOL
    # the sliding phase in closed form: d = v0^2 / (2 g (mu cos a - sin a)) up to O(h)
    a = G * (0.6 * np.cos(ALPHA) - np.sin(ALPHA))
    if dim == 2:
        assert g["mu"] == pytest.approx(-(2.0 ** 2) * G * np.cos(ALPHA) / (2 * a * a), rel=2e-2)
    dQ, _ = traj.jvp({"mu": 1.0})
    assert rel(dQ[-1, 0], g["mu"]) <= MODES_RTOL
    assert not g.report.near_switches and not g.report.degenerate


# ------------------------------------------------------------------------------------ spheres in a box
R, MASS = 0.05, 1.0
INERTIA = 0.4 * MASS * R * R


def _frame(n):
    a = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = np.cross(n, a)
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(n, t1)


def _wall(n, d):
    n = np.asarray(n, dtype=float)
    H = np.zeros((3, 6))
    H[0, :3] = n
    for i, t in enumerate(_frame(n), start=1):
        H[i, :3], H[i, 3:] = t, -R * np.cross(n, t)
    return nm.LagrangianLinearTIR(H, b=[-d - R, 0.0, 0.0])


def _pair_h(q, z):
    return np.array([np.linalg.norm(q[:3] - q[6:9]) - 2 * R, 0.0, 0.0])


def _pair_G0(q, z):
    d = q[:3] - q[6:9]
    n = d / np.linalg.norm(d)
    G0 = np.zeros((3, 12))
    G0[0, :3], G0[0, 6:9] = n, -n
    for i, t in enumerate(_frame(n), start=1):
        G0[i, :3], G0[i, 6:9] = t, -t
        G0[i, 3:6] = G0[i, 9:12] = -R * np.cross(n, t)
    return G0


def spheres_run(mu=0.3, T=0.4, h=2e-3, diff=True):
    """Three spheres on the floor of a box (walls at x = 0 and y = 0), thrown at each other: they
    slide, roll, collide (sphere–sphere contacts: LagrangianScleronomousR, rows moving with q)."""
    X = [(0.1, 0.1), (0.25, 0.12), (0.18, 0.3)]
    Vs = [(1.0, 0.2), (-0.8, 0.1), (0.1, -0.9)]
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    spheres = []
    for (x, y), (vx, vy) in zip(X, Vs):
        s = nm.LagrangianLinearTIDS([x, y, R, 0, 0, 0], [vx, vy, 0, 0, 0, 0], np.diag([MASS] * 3 + [INERTIA] * 3),
                                    fext=[0, 0, -MASS * G, 0, 0, 0])
        spheres.append(s)
        for n in ((0, 0, 1), (1, 0, 0), (0, 1, 0)):
            nsds.link(nm.Interaction(nm.NewtonImpactFrictionNSL(0.0, 0.0, mu, 3), _wall(n, 0.0)), s)
    for i in range(3):
        for j in range(i + 1, 3):
            nsds.link(nm.Interaction(nm.NewtonImpactFrictionNSL(0.0, 0.0, mu, 3),
                                     nm.LagrangianScleronomousR(_pair_h, _pair_G0)), spheres[i], spheres[j])
    sim = nm.TimeStepping(nsds, h, nm.MoreauJeanOSI(0.5, activation_threshold=1e-5), osns="fc3d", method="nsn-ac",
                          tol=1e-13, differentiable=diff)
    return sim.run(), spheres


def test_spheres_in_a_box_final_position_against_finite_differences():
    traj, _ = spheres_run()
    tape = traj._sim._tape
    pair_steps = sum(any(isinstance(i.relation, nm.LagrangianScleronomousR) for i in r.active)
                     for r in tape.records.values())
    assert pair_steps > 50                                     # the spheres do collide

    def final_x(Q, V):
        gQ = np.zeros_like(Q)
        gQ[-1, 0] = 1.0
        return Q[-1, 0], gQ, None

    g = traj.gradient(final_x, wrt=["mu", ("mu", traj._sim.nsds.interactions[0])])

    def fx(mu):
        t, ss = spheres_run(mu=mu, diff=False)
        return t.q(ss[0])[-1, 0]

    fd = central(fx, 0.3)
    print(f"spheres d(x_final)/dmu: adjoint {g['mu']:.12g}, central FD {fd:.12g}, relative difference "
          f"{rel(g['mu'], fd):.1e}")
    assert rel(g["mu"], fd) <= FD_RTOL
    dQ, _ = traj.jvp({"mu": 1.0})
    assert rel(dQ[-1, 0], g["mu"]) <= MODES_RTOL
    # one interaction's mu is a part of the shared one
    one = g[("mu", traj._sim.nsds.interactions[0])]
    assert one != 0.0 and abs(one) < abs(g["mu"]) * 10
    assert not g.report.near_switches


# ------------------------------------------------------------------------------------ what is reported, what is refused
def test_report_flags_resting_contacts_decided_on_round_off():
    """Spheres resting at zero gap with no activation threshold: their contacts' decisions are taken
    on round-off (margin 0), which the report lists."""
    traj, _, _ = ball_run(q0=0.0, v0=0.0, T=0.05)
    rep = traj.derivative_report()
    assert rep.near_switches and rep.near_switches[0][0] == 1 and "near their threshold" in str(rep)
    traj, _ = incline_run()
    assert not traj.derivative_report().near_switches


def test_degenerate_steps_are_reported_and_smoothing_is_offered():
    """A ball dropped from rest at zero gap with e = 0 on a ground that does not push (fext = 0): the
    contact is closed with zero force, z = w = 0, a degenerate row at every step."""
    traj, _, _ = ball_run(q0=0.0, v0=0.0, f=0.0, e=0.0, T=0.01)
    rep = traj.derivative_report()
    assert rep.degenerate and rep.degenerate[0][1]["rows"].tolist() == [0]
    g = traj.gradient(slid, wrt=["v0"], smoothing=1e-6)
    assert np.isfinite(g["v0"]).all() and g.report.smoothing == 1e-6


def test_unsupported_models_and_bad_requests_are_typed_errors():
    ball = nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-G])
    nsds = nm.NonSmoothDynamicalSystem(0.0, 0.1)
    nsds.link(nm.Interaction(nm.RelayNSL(1), nm.LagrangianLinearTIR(H=[[1.0]])), ball)
    with pytest.raises(ModelingError, match="differentiates lcp, fc2d, fc3d steps"):
        nm.TimeStepping(nsds, h=1e-2, differentiable=True)
    ball = nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-G])
    nsds = nm.NonSmoothDynamicalSystem(0.0, 0.1)
    nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR(H=[[1.0]], D=[[1.0]])), ball)
    with pytest.raises(ModelingError, match="with D is not differentiated"):
        nm.TimeStepping(nsds, h=1e-2, osns="lcp", differentiable=True)
    traj, _, ground = ball_run(diff=False, T=0.1)
    with pytest.raises(ModelingError, match="differentiable=True"):
        traj.gradient(apex)
    traj, _, ground = ball_run(T=0.7)
    with pytest.raises(ModelingError, match="unknown parameter 'k'"):
        traj.vjp(wrt=["k"])
    with pytest.raises(ModelingError, match="has no friction coefficient"):
        traj.vjp(wrt=[("mu", ground)])
    with pytest.raises(ModelingError, match="expected shape"):
        traj.vjp(np.zeros((3, 1)), wrt=["e"])
    # a model changed after the run: the replay no longer gives the recorded step, and says so
    traj, _, ground = ball_run(T=0.7)
    ground.nslaw.e = 0.5
    with pytest.raises(ModelingError, match="replay of step 566 does not give the problem's vector q"):
        traj.vjp(wrt=["e"])


def test_impact_times_give_the_continuous_trajectory_derivative():
    """The discrete branch keeps the bounce at its step: d(apex)/dq0 = 1 (the whole arc moves up).
    The continuous ball's apex after the bounce is e^2 (v0^2/2g + q0): d/dq0 = e^2, d/dv0 = e^2 v0 / g,
    which ``impact_times=True`` gives to O(h), and a secant over many steps (d = 0.05: the bounce
    moves by tens of steps) sees too."""
    traj, _, _ = ball_run()
    branch = traj.gradient(apex, wrt=["q0", "v0", "e"])
    timed = traj.gradient(apex, wrt=["q0", "v0", "e"], impact_times=True)
    assert branch["q0"][0] == pytest.approx(1.0, abs=1e-9)
    assert timed["q0"][0] == pytest.approx(0.8 ** 2, abs=5e-3)
    assert timed["v0"][0] == pytest.approx(0.8 ** 2 * 1.0 / G, abs=5e-3)
    assert timed["e"] == pytest.approx(2 * 0.8 * (1.0 / (2 * G) + 1.0), rel=5e-3)
    secant = central(lambda x: ball_apex(q0=x), 1.0, 0.05)
    assert timed["q0"][0] == pytest.approx(secant, abs=1e-2)
    dQ, dV = traj.jvp({"q0": [1.0]}, impact_times=True)
    _, V = traj.states()
    assert rel(dQ[APEX_STEP, 0] + V[APEX_STEP, 0] * dV[APEX_STEP, 0] / G, timed["q0"][0]) <= MODES_RTOL


# ------------------------------------------------------------------------------------ non-unique velocities (issue 30)
def landing_box(v0, e=0.5, T=0.15, h=1e-3, diff=True):
    """A box (1 x 0.6 x 0.4) dropped flat from 5 cm onto its four bottom corners (mu = 0.5), moving
    sideways at v0: it lands at step 102."""
    from nsopt import generate

    pts = np.array([(-0.5, -0.3), (0.5, -0.3), (0.5, 0.3), (-0.5, 0.3)])
    M, H = generate.rigid_body_contacts(pts)
    box = nm.LagrangianLinearTIDS(q0=[0, 0, 0.25, 0, 0, 0], v0=v0, M=M, fext=[0, 0, -G, 0, 0, 0])
    nsds = nm.NonSmoothDynamicalSystem(t0=0.0, T=T)
    for k in range(4):
        nsds.link(nm.Interaction(nm.NewtonImpactFrictionNSL(e, 0.0, 0.5, 3),
                                 nm.LagrangianLinearTIR(H=H[3 * k:3 * k + 3], b=[-0.2, 0, 0])), box)
    traj = nm.TimeStepping(nsds, h=h, integrator=nm.MoreauJeanOSI(theta=0.5), osns="fc3d", method="nsn-ac",
                           tol=1e-12, differentiable=diff).run()
    return traj, box


def test_landing_box_whose_velocities_are_not_unique_is_flagged():
    """Landing flat while sliding and turning: the impact step's solution set moves the velocities
    (the normal impulses split among the corners change the yaw the friction gives), and a change of
    v0 by 1e-7 moves the run onto another solution: the velocities after the step jump by 1e-2. The
    report says so for step 102 and flags the whole-run derivative; the gradient warns. Before: 'no
    activation decision near threshold' and a silently wrong derivative."""
    v0 = np.array([1.0, 0.3, 0.0, 0.0, 0.0, 0.5])
    traj, box = landing_box(v0)
    k = 102
    V = traj.v(box)
    jumps = []
    for d in (1e-7, -1e-7):
        other, b2 = landing_box(v0 + np.array([0, 0, 0, d, 0, 0]), diff=False)
        jumps.append(np.abs(other.v(b2)[k] - V[k]).max())
    assert max(jumps) > 1e-3                                   # a jump, not a derivative
    rep = traj.derivative_report()
    assert rep.not_unique == [(k, 1)] and not rep.is_the_runs
    assert "NOT THE RUN'S DERIVATIVE" in str(rep) and "step 102 (dimension 1)" in str(rep)
    final = lambda Q, V: (V[-1, 0], None, np.eye(len(V))[-1][:, None] * np.eye(6)[0])
    with pytest.warns(Warning, match="the derivative is not the run's: the velocities after step"):
        g = traj.gradient(final, wrt=["v0"])
    assert not g.report.is_the_runs
    with pytest.warns(Warning, match="not the run's"):
        traj.jvp({"v0": np.eye(6)[3]})


def test_landing_box_with_unique_velocities_is_not_flagged():
    """Without the turn the impact's normal impulses are indeterminate but the velocities are not:
    the derivative is the run's (a change of v0 moves the run linearly), nothing is flagged."""
    v0 = np.array([1.0, 0.3, 0.0, 0.0, 0.0, 0.0])
    traj, box = landing_box(v0)
    rep = traj.derivative_report()
    assert rep.is_the_runs and not rep.not_unique
    dv = np.array([0, 0, 0, 1e-7, 0, 0])
    other, b2 = landing_box(v0 + dv, diff=False)
    _, tV = traj.jvp({"v0": dv / 1e-7})
    fd = other.v(b2)[103] - traj.v(box)[103]                   # linear, 5e-8 (flagged case: a 1e-2 jump)
    assert np.abs(tV[103] * 1e-7 - fd).max() <= 5e-3 * np.abs(fd).max()   # (a degenerate contact: one-sided)


def test_weak_requests_are_refused():
    traj, _, _ = ball_run(T=0.7)
    with pytest.raises(ModelingError, match="no interaction of this simulation has a friction coefficient"):
        traj.vjp(wrt=["mu"])
    with pytest.raises(ModelingError, match="real numbers"):
        traj.jvp({"v0": ["a"]})
    with pytest.raises(ModelingError, match="expected a number"):
        traj.jvp({"e": [1.0, 2.0]})
    nan_loss = lambda Q, V: (0.0, np.full(Q.shape, np.nan), None)
    with pytest.raises(ModelingError, match="dQ: has non-finite entries .*the loss returned"):
        traj.gradient(nan_loss, wrt=["e"])


# ------------------------------------------------------------------------------------ one step, recorded (issue 31 §3)
def test_the_adjoint_reads_the_step_records_and_assembles_no_step(monkeypatch):
    """The adjoint consumes what each step emitted (its rows, problem, impulses, v_free, ẏ_k and the
    run's factors of M̂): with every piece of the step's assembly made to raise after the run (the
    stepper's contact assembly and free velocity, W's assembly, a relation's rows, a new one-step
    problem, a new factorisation), the gradient is the same number, and the closed form's. Before,
    the adjoint re-assembled every step densely (its own rows, W, q and factors of M̂)."""
    from nsopt.modeling import _stepper
    from nsopt.modeling import differentiable as D

    traj, ball, _ = ball_run(T=0.8)
    rec = traj._sim._tape.records[566]
    assert rec.ydot.shape == (1,) and rec.ydot[0] < 0 and rec.H.shape == (1, 1)

    def boom(*a, **k):
        raise AssertionError("the adjoint assembled a step")

    with monkeypatch.context() as mp:
        mp.setattr(_stepper.MoreauJeanStepper, "_contact", boom)
        mp.setattr(_stepper._Systems, "free_velocity", boom)
        mp.setattr(_stepper, "delassus", boom)
        mp.setattr(D._Layout, "G", boom)
        for name in ("LCP", "FrictionContact", "factorise"):
            mp.setattr(D, name, boom, raising=False)
        g = traj.gradient(apex, wrt=["e", "v0", "mass"])
        dQ, dV = traj.jvp({"e": 1.0})
    vk = traj.v(ball)[565, 0]
    assert g["e"] == pytest.approx(0.8 * vk ** 2 / G - 1e-3 * vk / 2, rel=1e-12)
    _, V = traj.states()
    assert rel(dQ[APEX_STEP, 0] + V[APEX_STEP, 0] * dV[APEX_STEP, 0] / G, g["e"]) <= MODES_RTOL
    traj._sim._tape._replay.clear()
    again = traj.gradient(apex, wrt=["e", "v0", "mass"])
    assert again["e"] == g["e"] and again["mass"] == g["mass"] and again["v0"][0] == g["v0"][0]
