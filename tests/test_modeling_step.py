"""The one Moreau–Jean step (nsopt/modeling/_stepper.py): the grouped evaluation against the one-by-one
evaluation on random models (a property test), the run's state owned by the simulation (two runs of
one model, ``ds.q`` during and after a run, ``continue_from``), interrupted runs, the step record.

Tolerance: the two evaluations compute the same formulas in a different order, so every recorded
field agrees to 1e-12 relative to its scale (max(1, max |.|)) at every step, over runs short enough
that rounding does not change a decision (an index set, a Lemke pivot, a Newton count).
"""

import numpy as np
import pytest

from nsopt import modeling as nm
from nsopt.exceptions import ModelingError, StepFailed

from conftest import need_extra  # noqa: E402

need_extra("test", ["hypothesis"])
import hypothesis  # noqa: E402
st = hypothesis.strategies
TOL = 1e-12


def _close(a, b, tol=TOL, what=""):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, what
    assert np.array_equal(np.isnan(a), np.isnan(b)), what
    scale = max(1.0, float(np.nanmax(np.abs(a), initial=0.0)))
    err = float(np.nanmax(np.abs(a - b), initial=0.0))
    assert err <= tol * scale, f"{what}: {err:.3e} > {tol:g} x {scale:.3g}"


# ----------------------------------------------------------------------------- random models
def _system(draw, rng, kind, n, simple=False):
    q0 = rng.uniform(-0.2, 0.2, n)
    q0[0] = rng.uniform(0.002, 0.05)                 # the first coordinate: a gap that closes soon
    v0 = rng.uniform(-1.0, 1.0, n)
    v0[0] = rng.uniform(-2.0, 0.5)
    d = rng.uniform(0.5, 2.0, n)
    M = np.diag(d)
    if kind == "lti-full" and n > 1:                 # a non-diagonal M: LU factors
        A = rng.normal(size=(n, n)) * 0.2
        M = M + A @ A.T
    g = np.zeros(n)
    g[0] = -9.81
    if kind in ("lti", "lti-full"):
        fext = g * d if simple or draw(st.booleans()) else (lambda t, z, g=g * d: g + 0.1 * np.sin(7 * t))
        K = C = None
        if not simple and draw(st.booleans()):
            A = rng.normal(size=(n, n))
            K = A @ A.T + np.eye(n)
            C = 0.1 * np.eye(n)
        return nm.LagrangianLinearTIDS(q0, v0, M, K=K, C=C, fext=fext)
    if kind == "ds":                                 # constant M, no state force: the constant group
        return nm.LagrangianDS(q0, v0, M, fext=g * d)
    if kind == "ds-fint":                            # a cubic spring (F_int = k3 q³ - g d): the Newton loop
        k3 = rng.uniform(10.0, 50.0)
        return nm.LagrangianDS(q0, v0, M, fint=lambda t, q, v, z: k3 * q ** 3 - g * d,
                               jacobian_fint_q=lambda t, q, v, z: np.diag(3 * k3 * q ** 2),
                               jacobian_fint_v=lambda t, q, v, z: np.zeros((n, n)))
    # a mass matrix that depends on q (one by one, Newton)
    return nm.LagrangianDS(q0, v0, lambda q, z: np.diag(d * (1.0 + 0.1 * q * q)), fext=g * d)


def _ground(draw, rng, n, e, simple=False):
    """A contact of one system with the ground, y = q[0] + small terms, of a random relation kind."""
    # (no Jacobian by finite differences here: a difference quotient turns the two evaluations' rounding of
    # q, 1e-17, into 1e-10 in G0; tests/test_modeling_batch.py compares those with the same arithmetic)
    kind = "linear" if simple else draw(st.sampled_from(["linear", "linear-bD", "sclero", "sclero-vec", "rheo",
                                                         "compliant"]))
    a = np.zeros(n)
    a[0] = 1.0
    if n > 1:
        a[1:] = rng.uniform(-0.3, 0.3, n - 1)
    c = rng.uniform(0.0, 0.5)
    law = nm.NewtonImpactNSL(e) if kind != "compliant" else nm.ComplementarityConditionNSL(1)
    if kind == "linear":
        return nm.LagrangianLinearTIR([a]), law
    if kind == "linear-bD":
        return nm.LagrangianLinearTIR([a], b=[-0.001], D=[[1e-3]]), law
    if kind in ("sclero", "sclero-fd"):
        G0 = (lambda q, z: np.array([a + 2 * c * q[0] * np.eye(n)[0]])) if kind == "sclero" else None
        return nm.LagrangianScleronomousR(lambda q, z: np.array([a @ q + c * q[0] ** 2]), G0), law
    if kind == "sclero-vec":
        return nm.LagrangianScleronomousR(lambda q, z: (q @ a + c * q[:, 0] ** 2)[:, None],
                                          lambda q, z: (a[None, :] + 2 * c * q[:, :1] * np.eye(n)[0][None, :])[:, None, :],
                                          vectorized=True), law
    if kind == "rheo":
        w = rng.uniform(1.0, 5.0)
        return nm.LagrangianRheonomousR(lambda q, t, z: np.array([a @ q - 0.01 * np.sin(w * t)]),
                                        lambda q, t, z: np.array([a]),
                                        lambda q, t, z: np.array([-0.01 * w * np.cos(w * t)])), law
    k = rng.uniform(1e3, 1e4)
    return nm.LagrangianCompliantR(lambda q, lam, z: np.array([a @ q + lam[0] / k]),
                                   lambda q, lam, z: np.array([a]), lambda q, lam, z: np.array([[1.0 / k]])), law


@st.composite
def models(draw):
    """A random model: 1 to 3 systems of 1 to 3 dofs (linear time-invariant with or without K, C and a
    full M, constant-M LagrangianDS, a nonlinear spring, a q-dependent M), a ground contact each of a
    random relation kind, pair contacts between neighbours, θ, h; contacts open and close. One model
    in four is linear time-invariant (the fused compiled phases and the free flight)."""
    seed = draw(st.integers(0, 2 ** 31 - 1))
    rng = np.random.default_rng(seed)
    n_sys = draw(st.integers(1, 3))
    simple = draw(st.integers(0, 3)) == 0      # a linear time-invariant model: the fused compiled phases
    systems, links = [], []
    for _ in range(n_sys):
        n = draw(st.integers(1, 3))
        kind = draw(st.sampled_from(["lti", "ds"] if simple else ["lti", "lti", "lti-full", "ds", "ds-fint", "ds-mass"]))
        ds = _system(draw, rng, kind, n, simple)
        systems.append(ds)
        rel, law = _ground(draw, rng, n, draw(st.sampled_from([0.0, 0.5, 0.9])), simple)
        links.append((rel, law, (ds,)))
    for a, b in zip(systems[:-1], systems[1:]):
        if draw(st.booleans()):              # y = q_b[0] - q_a[0] + gap: a pair contact
            H = np.zeros((1, a.n + b.n))
            H[0, 0], H[0, a.n] = -1.0, 1.0
            links.append((nm.LagrangianLinearTIR(H, b=[rng.uniform(0.0, 0.02)]),
                          nm.NewtonImpactNSL(draw(st.sampled_from([0.0, 0.5]))), (a, b)))
    theta = draw(st.sampled_from([0.5, 0.75, 1.0]))
    h = draw(st.sampled_from([2e-3, 5e-3, 1e-2]))
    return systems, links, theta, h, seed


def _run(model, batch, steps=40):
    systems, links, theta, h, _ = model
    nsds = nm.NonSmoothDynamicalSystem(0.0, steps * h)
    inters = []
    for rel, law, dss in links:
        inters.append(nsds.link(nm.Interaction(law, rel), *dss))
    sim = nm.TimeStepping(nsds, h, nm.MoreauJeanOSI(theta, batch=batch), osns="lcp", method="lemke", tol=1e-12,
                          newton_tol=1e-9, newton_max_iter=30)
    return sim.run(), inters, sim


@hypothesis.settings(max_examples=60, deadline=None, derandomize=True,
                     suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(models())
def test_grouped_and_one_by_one_steps_agree_on_random_models(model):
    systems, links, theta, h, seed = model
    # the relations are bound to sizes when linked: a fresh copy of the model for each run
    ta, ia, sa = _run(model, True)
    tb, ib, sb = _run(model, False)
    assert not sb._stepper.batch and sb._stepper.singles is not None
    for ds in systems:
        for f in ("q", "v", "p"):
            _close(getattr(ta, f)(ds), getattr(tb, f)(ds), what=f"{f} of {ds} (seed {seed})")
    for x, y in zip(ia, ib):
        for lev in (0, 1):
            _close(ta.y(x, lev), tb.y(y, lev), what=f"y{lev} (seed {seed})")
            _close(ta.lambda_(x, lev), tb.lambda_(y, lev), what=f"lambda{lev} (seed {seed})")
    assert [s is None for s in ta.status] == [s is None for s in tb.status]
    assert np.array_equal(ta.newton_converged, tb.newton_converged)


def test_the_random_models_cover_every_kind():
    """The property test's generator draws every system group, relation kind and path (contacts that
    open and close included): checked on the models it draws."""
    seen = set()

    @hypothesis.settings(max_examples=30, deadline=None, derandomize=True,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(models())
    def collect(model):
        t, inters, sim = _run(model, True, steps=40)
        stp = sim._stepper
        seen.add("groups" if stp.groups else "no-groups")
        seen.update(type(i.relation).__name__ for i in inters)
        seen.update(type(ds).__name__ + ("-nonconstant" if not ds.constant_iteration_matrix else "") for ds in model[0])
        seen.add("fused" if stp.fused_phases else "general")
        lam = np.concatenate([t.lambda_(i, 1)[:, 0] for i in inters])
        if np.any(lam > 0):
            seen.add("contact")
        act = [s is not None for s in t.status]
        if any(a and not b for a, b in zip(act, act[1:])):
            seen.add("opens")

    collect()
    for want in ("groups", "LagrangianLinearTIR", "LagrangianScleronomousR", "LagrangianRheonomousR",
                 "LagrangianCompliantR", "LagrangianLinearTIDS", "LagrangianDS", "LagrangianDS-nonconstant",
                 "fused", "general", "contact", "opens"):
        assert want in seen, (want, sorted(seen))


# ----------------------------------------------------------------------------- the run owns its state
def _ball(T=1.0, h=5e-3, e=0.9):
    ball = nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-9.81], name="ball")
    ground = nm.Interaction(nm.NewtonImpactNSL(e), nm.LagrangianLinearTIR([[1.0]]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(ground, ball)
    return nsds, ball, ground


def test_two_runs_of_one_model_give_the_same_trajectory():
    nsds, ball, ground = _ball()
    ta = nm.TimeStepping(nsds, 5e-3, osns="lcp", method="lemke", tol=1e-12).run()
    qa = ta.q(ball)
    assert abs(ball.q[0] - qa[-1, 0]) == 0.0          # after the run: its final state
    tb = nm.TimeStepping(nsds, 5e-3, osns="lcp", method="lemke", tol=1e-12).run()
    np.testing.assert_array_equal(tb.q(ball), qa)       # from q0 again, not from the first run's end
    np.testing.assert_array_equal(tb.lambda_(ground), ta.lambda_(ground))
    assert ball.q0[0] == 1.0 and qa[0, 0] == 1.0
    # the objects hold no integrator data (only their own fields)
    own = {"name", "_owner", "_jac_checked", "z", "q0", "v0", "_n", "_M", "_fgyr", "_fint", "_fext", "_jac", "K",
           "C", "_state_q", "_state_v", "_state_p"}
    assert set(vars(ball)) <= own, set(vars(ball)) - own
    assert set(vars(ground)) <= {"name", "nslaw", "relation", "size", "systems", "_state_y", "_state_lambda_"}


def test_reading_the_state_during_and_after_a_run():
    """During a run its state is read from the run (sim.state_of); the object's own (ds.q) stays its initial
    state until the run stops, then holds a plain copy of the run's final state."""
    nsds, ball, ground = _ball(T=0.5)
    sim = nm.TimeStepping(nsds, 5e-3, osns="lcp", method="lemke", tol=1e-12)
    seen = []
    while sim.has_next_step():
        sim.step()
        st, g = sim.state_of(ball), sim.state_of(ground)
        seen.append((st.q.copy(), g.y[0].copy()))
        assert not st.q.flags.writeable and st.q is not ball.q          # a read-only view of the run's array
        if sim.has_next_step():
            assert ball.q[0] == 1.0                                      # the object's own: q0 until the run stops
    traj = sim.trajectory
    np.testing.assert_array_equal(np.array([q for q, _ in seen])[:, 0], traj.q(ball)[1:, 0])
    np.testing.assert_array_equal(np.array([y for _, y in seen])[:, 0], traj.y(ground, 0)[1:, 0])
    np.testing.assert_array_equal(sim.state_of(ground, "lambda_")[1], traj.lambda_(ground, 1)[-1])
    q_end = ball.q
    assert q_end.flags.writeable and q_end[0] == traj.q(ball)[-1, 0]   # after the run: a plain copy
    q_end[0] = 123.0                                    # the user's array now: changes nothing in the run
    assert traj.q(ball)[-1, 0] != 123.0 and sim.state_of(ball, "q")[0] != 123.0
    with pytest.raises(ModelingError, match="not a system or a linked interaction"):
        sim.state_of(nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]]))
    with pytest.raises(ModelingError, match="not 'x'"):
        sim.state_of(ball, "x")


def test_two_simulations_of_one_model_stepped_alternately_read_their_own_state():
    """Fails with a process-wide registry of the objects' states: there ball.q (and what a run read
    through it) was whichever run stepped last."""
    nsds, ball, ground = _ball(T=0.5)
    a = nm.TimeStepping(nsds, 5e-3, osns="lcp", method="lemke", tol=1e-12)
    b = nm.TimeStepping(nsds, 1e-2, osns="lcp", method="lemke", tol=1e-12)
    for _ in range(20):
        a.step()
        a.step()
        b.step()
        assert ball.q[0] == 1.0                        # neither run wrote onto the object while stepping
        assert a.state_of(ball, "q")[0] == a.trajectory.q(ball)[-1, 0]
        assert b.state_of(ball, "q")[0] == b.trajectory.q(ball)[-1, 0]
        assert a.t == b.t and a.state_of(ball, "q")[0] != b.state_of(ball, "q")[0]   # h differs: so do the states
    ref = nm.TimeStepping(nsds, 5e-3, osns="lcp", method="lemke", tol=1e-12)
    for _ in range(40):
        ref.step()
    np.testing.assert_array_equal(a.trajectory.q(ball), ref.trajectory.q(ball))   # b did not disturb a


def test_a_deleted_simulation_leaves_nothing_held():
    import gc
    import weakref

    nsds, ball, ground = _ball(T=0.1)
    sim = nm.TimeStepping(nsds, 5e-3, osns="lcp", method="lemke", tol=1e-12)
    for _ in range(5):
        sim.step()
    gone = weakref.ref(sim)
    stepper = weakref.ref(sim._stepper)
    q_mid = sim.trajectory.q(ball)[-1].copy()
    del sim
    gc.collect()
    assert gone() is None and stepper() is None            # nothing outside the run refers to it
    assert ball.q[0] == 1.0 and q_mid[0] != 1.0            # the object keeps its own state


def test_setting_the_state_between_steps_moves_the_run():
    nsds, ball, ground = _ball(T=0.1)
    sim = nm.TimeStepping(nsds, 5e-3, osns="lcp", method="lemke", tol=1e-12)
    sim.step()
    sim.set_state(ball, q=[2.0], v=[0.0])
    sim.step()
    q = sim.trajectory.q(ball)[:, 0]
    assert q[2] == pytest.approx(2.0 - 9.81 * 5e-3 ** 2 / 2, abs=1e-14)
    with pytest.raises(ModelingError, match=r"LagrangianLinearTIDS 'ball'\.q: has non-finite"):
        sim.set_state(ball, q=[np.nan])
    with pytest.raises(ModelingError, match=r"not \['x'\]"):
        sim.set_state(ball, x=[0.0])
    ball.q = [5.0]                                      # the object's own state: the run does not move
    sim.step()
    assert sim.trajectory.q(ball)[-1, 0] < 2.0


def test_continue_from_gives_the_uninterrupted_run():
    nsds, ball, ground = _ball(T=1.0)
    whole = nm.TimeStepping(nsds, 5e-3, osns="lcp", method="lemke", tol=1e-12).run().q(ball)
    nsds.T = 0.4
    first = nm.TimeStepping(nsds, 5e-3, osns="lcp", method="lemke", tol=1e-12)
    t1 = first.run()
    nsds.T = 1.0
    second = nm.TimeStepping(nsds, 5e-3, osns="lcp", method="lemke", tol=1e-12, continue_from=t1)
    assert second.t0 == pytest.approx(0.4) and second.n_steps == 120
    q2 = second.run().q(ball)
    np.testing.assert_allclose(np.concatenate([t1.q(ball), q2[1:]]), whole, rtol=0, atol=1e-13)
    other, _, _ = _ball()
    with pytest.raises(ModelingError, match="continue_from.*another model"):
        nm.TimeStepping(other, 5e-3, continue_from=second)


# ----------------------------------------------------------------------------- interrupts
class _Interrupt:
    """A plug-in (F_ext) that raises KeyboardInterrupt at chosen calls."""

    def __init__(self, at):
        self.calls, self.at = 0, set(at)

    def __call__(self, t, z):
        self.calls += 1
        if self.calls in self.at:
            raise KeyboardInterrupt
        return np.array([-9.81, 0.0])


def _plate(fext, T=0.6):
    ds = nm.LagrangianLinearTIDS([0.05, 0.0], [0.0, 0.3], np.diag([1.0, 2.0]), fext=fext, name="m")
    inter = nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0, 0.1]]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(inter, ds)
    return nm.TimeStepping(nsds, 5e-3, osns="lcp", method="lemke", tol=1e-12), ds, inter


@pytest.mark.parametrize("at", [[7], [30, 31, 95], [2, 60, 61, 62, 200]])
def test_an_interrupted_run_continues_as_the_uninterrupted_one(at):
    ref, ds_r, in_r = _plate(_Interrupt([]))
    ref.run()
    sim, ds, inter = _plate(_Interrupt(at))
    stops = 0
    while True:
        try:
            sim.run()
            break
        except KeyboardInterrupt:
            stops += 1
            tr = sim.trajectory
            q = tr.q(ds)
            assert q.shape[0] == sim.k + 1 and np.all(np.isfinite(q))     # every recorded row complete
            np.testing.assert_array_equal(ds.q, q[-1])                      # the last q is the real one
            assert len(tr.status) == sim.k
    assert stops == len(at)
    for f in ("q", "v", "p"):
        np.testing.assert_array_equal(getattr(sim.trajectory, f)(ds), getattr(ref.trajectory, f)(ds_r))
    np.testing.assert_array_equal(sim.trajectory.lambda_(inter), ref.trajectory.lambda_(in_r))


def test_an_interrupt_from_the_step_hook_keeps_the_step():
    calls = []

    def hook(rec):
        calls.append(rec.k)
        if rec.k == 40:
            raise KeyboardInterrupt

    sim, ds, inter = _plate(np.array([-9.81, 0.0]))
    sim.on_step = hook
    with pytest.raises(KeyboardInterrupt):
        sim.run()
    assert sim.k == 40 and sim.trajectory.q(ds).shape[0] == 41
    sim.on_step = None
    traj = sim.run()
    ref, ds_r, _ = _plate(np.array([-9.81, 0.0]))
    np.testing.assert_array_equal(traj.q(ds), ref.run().q(ds_r))


def test_the_step_record_gives_what_an_adjoint_needs():
    records = []
    sim, ds, inter = _plate(np.array([-9.81, 0.0]), T=0.3)
    sim.on_step = records.append
    traj = sim.run()
    with_problem = [r for r in records if r.problem is not None]
    assert len(records) + 0 >= len(with_problem) > 3
    for r in with_problem:
        H = r.rows()
        H = H.toarray() if hasattr(H, "toarray") else np.asarray(H)
        Mhat = r.iteration_matrix().toarray()
        W = np.asarray(r.problem.M.toarray() if hasattr(r.problem.M, "toarray") else r.problem.M)
        np.testing.assert_allclose(H @ np.linalg.solve(Mhat, H.T), W, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(r.lam, r.solution.z, rtol=0, atol=0)
        assert r.active == [inter]
        v = r.vfree + np.linalg.solve(Mhat, H.T @ r.lam)             # the step's velocity from the record
        np.testing.assert_allclose(v, traj.v(ds)[r.k], rtol=0, atol=1e-14)


def test_a_step_that_fails_leaves_the_last_good_state():
    sim, ds, inter = _plate(np.array([-9.81, 0.0]))
    for _ in range(5):
        sim.step()
    sim.set_state(ds, v=[1e120, 0.0])
    with pytest.raises(StepFailed, match=r"state q of LagrangianLinearTIDS 'm' exploded"):
        sim.step()
    assert sim.k == 5 and sim.trajectory.q(ds).shape[0] == 6


@pytest.mark.parametrize("where", ["after the row", "after the commit"])
def test_an_interrupt_inside_the_commit_is_repaired_by_the_next_step(monkeypatch, where):
    """A step() loop has no Ctrl-C handler: an interrupt can land between recording a step's row,
    committing its state and counting it; the next step reconciles the three."""
    from nsopt.modeling import _stepper, simulation

    ref, ds_r, _ = _plate(np.array([-9.81, 0.0]))
    ref.run()
    sim, ds, inter = _plate(np.array([-9.81, 0.0]))
    target = (simulation.Trajectory, "_record") if where == "after the row" else (_stepper.MoreauJeanStepper, "commit")
    real = getattr(*target)
    hits = {"n": 0}

    def boom(*a, **k):
        out = real(*a, **k)
        hits["n"] += 1
        if hits["n"] in (10, 57):
            raise KeyboardInterrupt
        return out

    monkeypatch.setattr(*target, boom)
    stops = 0
    while sim.has_next_step():
        try:
            sim.step()
        except KeyboardInterrupt:
            stops += 1
    assert stops == 2
    np.testing.assert_array_equal(sim.trajectory.q(ds), ref.trajectory.q(ds_r))
    assert len(sim.trajectory.status) == sim.n_steps == sim.k
