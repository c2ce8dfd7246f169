"""Bad input to nsopt.modeling: each a typed nsopt error naming the object and the field."""

import numpy as np
import pytest

from nsopt import modeling as nm
from nsopt.exceptions import ModelingError, NsoptError, NsoptWarning, PluginError, StepFailed


def ball(**kw):
    args = dict(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-9.81])
    args.update(kw)
    return nm.LagrangianLinearTIDS(**args)


def test_mixing_first_and_second_order_systems():
    nsds = nm.NonSmoothDynamicalSystem(0.0, 1.0)
    nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0]])), ball())
    plant = nm.FirstOrderLinearTIDS([0.0], [[-1.0]], name="plant")
    with pytest.raises(ModelingError, match=r"NonSmoothDynamicalSystem\.dynamical_systems: cannot mix first-order "
                                            r"FirstOrderLinearTIDS 'plant' with Lagrangian"):
        nsds.insert_dynamical_system(plant)
    # a Lagrangian relation on a first-order system
    with pytest.raises(ModelingError, match=r"Interaction\.relation: LagrangianLinearTIR is a Lagrangian relation"):
        nm.NonSmoothDynamicalSystem(0, 1).link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0]])),
                                               plant)
    # an integrator of the wrong order
    nsds2 = nm.NonSmoothDynamicalSystem(0, 1)
    nsds2.link(nm.Interaction(nm.RelayNSL(1), nm.FirstOrderLinearTIR([[1.0]], [[1.0]])), nm.FirstOrderLinearTIDS([0.0], [[-1.0]]))
    with pytest.raises(ModelingError, match=r"TimeStepping\.integrator: MoreauJeanOSI integrates Lagrangian systems"):
        nm.TimeStepping(nsds2, 0.1, nm.MoreauJeanOSI())


def test_law_and_relation_sizes_differ():
    with pytest.raises(ModelingError, match=r"Interaction\.nslaw: NewtonImpactNSL has size 2 but LagrangianLinearTIR has 1 rows"):
        nm.Interaction(nm.NewtonImpactNSL(0.5, size=2), nm.LagrangianLinearTIR([[1.0, 0.0]]))
    # a relation whose H does not fit the linked system
    inter = nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0, 0.0]]))
    with pytest.raises(ModelingError, match=r"LagrangianLinearTIR\.H: has shape \(1, 2\), expected \(1, 1\)"):
        nm.NonSmoothDynamicalSystem(0, 1).link(inter, ball())
    with pytest.raises(ModelingError, match=r"FirstOrderLinearTIR\.B: has shape \(1, 1\), expected \(2, 1\)"):
        nm.FirstOrderLinearTIR(C=[[1.0, 0.0]], B=[[1.0]])


def test_plugin_with_the_wrong_shape():
    rel = nm.LagrangianScleronomousR(h=lambda q, z: q[:1], G0=lambda q, z: np.ones((2, 2)), name="wall")
    inter = nm.Interaction(nm.NewtonImpactNSL(0.5), rel)
    nsds = nm.NonSmoothDynamicalSystem(0, 0.1)
    nsds.link(inter, ball(q0=[0.0, 0.0], v0=[-1.0, 0.0], M=np.eye(2), fext=None))
    with pytest.raises(PluginError, match=r"LagrangianScleronomousR 'wall'\.G0: plug-in G0\(q, z\) returned shape "
                                          r"\(2, 2\), expected \(1, 2\)"):
        nm.TimeStepping(nsds, 0.01, osns="lcp", method="lemke").run()


def test_plugin_non_finite_and_raising():
    bad = nm.LagrangianDS([0.0], [0.0], M=[[1.0]], fext=lambda t, z: np.array([np.nan]), name="b")
    nsds = nm.NonSmoothDynamicalSystem(0, 0.1)
    nsds.insert_dynamical_system(bad)
    with pytest.raises(PluginError, match=r"LagrangianDS 'b'\.fext: plug-in fext\(t, z\) returned non-finite values"):
        nm.TimeStepping(nsds, 0.01).run()
    boom = nm.FirstOrderNonLinearDS([1.0], f=lambda t, x, z: 1 / 0, name="f0")
    nsds = nm.NonSmoothDynamicalSystem(0, 0.1)
    nsds.insert_dynamical_system(boom)
    with pytest.raises(PluginError, match=r"FirstOrderNonLinearDS 'f0'\.f: plug-in f\(t, x, z\) raised ZeroDivisionError"):
        nm.TimeStepping(nsds, 0.01).run()


def test_non_finite_state():
    with pytest.raises(ModelingError, match=r"LagrangianLinearTIDS\.q0: has non-finite entries"):
        ball(q0=[np.nan])
    with pytest.raises(ModelingError, match=r"FirstOrderLinearTIDS\.x0: has non-finite entries"):
        nm.FirstOrderLinearTIDS([np.inf], [[1.0]])
    b = ball(name="ball")
    nsds = nm.NonSmoothDynamicalSystem(0, 1)
    nsds.insert_dynamical_system(b)
    b.v0 = np.array([np.nan])        # a run starts from q0, v0: checked when the simulation is built
    with pytest.raises(ModelingError, match=r"LagrangianLinearTIDS 'ball'\.v0: initial state has non-finite entries"):
        nm.TimeStepping(nsds, 0.1)


@pytest.mark.parametrize("h", [0.0, -1e-3, np.nan, np.inf, "0.1", True])
def test_bad_time_step(h):
    nsds = nm.NonSmoothDynamicalSystem(0, 1)
    nsds.insert_dynamical_system(ball())
    with pytest.raises(ModelingError, match=r"TimeStepping\.h: time step must be a finite number > 0"):
        nm.TimeStepping(nsds, h)


def test_final_time_before_start():
    with pytest.raises(ModelingError, match=r"NonSmoothDynamicalSystem\.T: final time T = 0.5 is before t0 = 1.0"):
        nm.NonSmoothDynamicalSystem(t0=1.0, T=0.5)


def test_other_typed_errors():
    with pytest.raises(ModelingError, match=r"NewtonImpactNSL\.e: must be <= 1"):
        nm.NewtonImpactNSL(1.5)
    with pytest.raises(ModelingError, match=r"NewtonImpactFrictionNSL\.dim: must be 2 or 3"):
        nm.NewtonImpactFrictionNSL(0.5, 0.0, 0.3, dim=4)
    with pytest.raises(ModelingError, match=r"RelayNSL\.lb: lb > ub"):
        nm.RelayNSL(1, lb=1.0, ub=-1.0)
    nsds = nm.NonSmoothDynamicalSystem(0, 1)
    nsds.link(nm.Interaction(nm.NewtonImpactFrictionNSL(0.5, 0.0, 0.3, 2), nm.LagrangianLinearTIR(np.eye(2))),
              ball(q0=[1.0, 0.0], v0=[0.0, 0.0], M=np.eye(2), fext=None))
    with pytest.raises(ModelingError, match=r"TimeStepping\.osns: a 'lcp' problem cannot hold the laws of block kind\(s\) \['fc2d'\]"):
        nm.TimeStepping(nsds, 0.1, osns="lcp")
    with pytest.raises(ModelingError, match=r"TimeStepping\.on_failure"):
        nm.TimeStepping(nsds, 0.1, on_failure="ignore")
    assert issubclass(ModelingError, NsoptError) and issubclass(PluginError, ModelingError)


def test_complex_data_is_rejected_naming_the_field():
    """Modeling data goes through the problems' validators: complex values are not silently cut."""
    with pytest.raises(ModelingError, match=r"LagrangianLinearTIDS\.q0: has complex entries"):
        nm.LagrangianLinearTIDS(q0=[1j], v0=[0.0], M=[[1.0]])
    with pytest.raises(ModelingError, match=r"LagrangianLinearTIR\.H: has complex entries"):
        nm.LagrangianLinearTIR(H=[[1j]])


# ----------------------------------------------------------------------------- issue 20: silent wrong answers
@pytest.mark.parametrize("G0", [[[0.0, -1.0]], [[1.0, 0.0]], lambda q, z: np.array([[0.0, -1.0]]),
                                lambda q, z: np.array([[1.0, 0.0]])], ids=["sign", "column", "sign-plugin",
                                                                            "column-plugin"])
@pytest.mark.parametrize("batch", [True, False])
def test_a_wrong_given_jacobian_is_caught_at_its_first_evaluation(G0, batch):
    """h = q[1] with a sign-flipped or wrong-column G0: the ball would fall through the floor."""
    b = ball(q0=[0.0, 1.0], v0=[0.0, 0.0], M=np.eye(2), fext=[0.0, -9.81])
    rel = nm.LagrangianScleronomousR(lambda q, z: np.array([q[1]]), G0, name="floor")
    nsds = nm.NonSmoothDynamicalSystem(0, 1)
    nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), rel), b)
    with pytest.raises(PluginError, match=r"LagrangianScleronomousR 'floor'\.G0: the given Jacobian G0 \(of h\(q, z\)\) "
                                          r"disagrees with central finite differences at entry \(0, [01]\)"):
        nm.TimeStepping(nsds, 1e-2, nm.MoreauJeanOSI(batch=batch)).run()


def test_given_jacobians_of_every_kind_are_checked():
    rheo = nm.LagrangianRheonomousR(lambda q, t, z: np.array([q[0] - t]), lambda q, t, z: np.array([[1.0]]),
                                    lambda q, t, z: np.array([1.0]), name="r")     # ∂h/∂t is -1
    rheo.bind(1, 1, 0)
    with pytest.raises(PluginError, match=r"'r'\.hdot: the given Jacobian hdot .* entry \(0, 0\): 1 given, -1"):
        rheo.hdot(np.zeros(1), 0.0, np.zeros(0))
    comp = nm.LagrangianCompliantR(lambda q, l, z: np.array([q[0] + l[0] / 10]), lambda q, l, z: np.array([[1.0]]),
                                   lambda q, l, z: np.array([[10.0]]), name="c")    # ∂h/∂λ is 0.1
    comp.bind(1, 1, 0)
    with pytest.raises(PluginError, match=r"'c'\.G1: the given Jacobian G1"):
        comp.G1(np.zeros(1), 0.0, np.zeros(1), np.zeros(0))
    ds = nm.LagrangianDS([0.5], [0.0], [[1.0]], fint=lambda t, q, v, z: q ** 3,
                         jacobian_fint_q=lambda t, q, v, z: np.array([[q[0] ** 2]]), name="s")
    with pytest.raises(PluginError, match=r"'s'\.jacobian_fint_q: the given Jacobian"):
        ds.jacobian_forces(0.0, ds.q0, ds.v0)
    # a right Jacobian at a point where h is not differentiable (|q| at 0) passes: one-sided differences agree
    kink = nm.LagrangianScleronomousR(lambda q, z: np.abs(q[:1]), lambda q, z: np.array([[1.0]]))
    kink.bind(1, 1, 0)
    kink.G0(np.zeros(1), 0.0, None, np.zeros(0))


def _cubic(h, T, **kw):
    ds = nm.LagrangianDS([1.0], [0.0], [[1.0]], fint=lambda t, q, v, z: -q ** 3, name="cubic")    # q̈ = q³
    nsds = nm.NonSmoothDynamicalSystem(0, T)
    nsds.insert_dynamical_system(ds)
    return nm.TimeStepping(nsds, h, **kw), ds


def test_a_newton_loop_that_misses_its_tolerance_is_a_failed_step():
    """q'' = q³ blows up at t ≈ 1.85: the Newton loop cannot follow it (and the local error estimate
    flags the steps before it: tests/test_local_error.py)."""
    sim, ds = _cubic(1e-2, 10.0)
    with pytest.warns(NsoptWarning, match=r"step 18\d .*local error estimate"):
        traj = sim.run()
    assert traj.failed_steps and traj.failed_steps[0] in range(180, 190)
    assert not traj.newton_converged[traj.failed_steps[0] - 1]
    sim, ds = _cubic(1e-2, 10.0, on_failure="raise")
    with pytest.warns(NsoptWarning, match="local error estimate"), \
            pytest.raises(StepFailed, match=r"step 18\d .*the Newton loop did not converge: residual .* > newton_tol 1e-06"):
        sim.run()


def test_an_exploding_state_stops_the_run():
    """θ = 0 (explicit) on a stiff spring: the state grows by 1e2 a step until it is stopped."""
    ds = nm.LagrangianLinearTIDS([1.0], [0.0], [[1.0]], K=[[1e6]], name="stiff")
    nsds = nm.NonSmoothDynamicalSystem(0, 1.0)
    nsds.insert_dynamical_system(ds)
    sim = nm.TimeStepping(nsds, 1e-2, nm.MoreauJeanOSI(0.0))
    with pytest.warns(NsoptWarning, match=r"step 1 .*local error estimate .* 'stiff'"), \
            pytest.raises(StepFailed, match=r"the state v of LagrangianLinearTIDS 'stiff' exploded \(\|v\| = .* > 1e\+100\)"):
        sim.run()
    q = sim.trajectory.q(ds)
    assert np.all(np.isfinite(q)) and np.abs(q).max() <= 1e100 and q.shape[0] == sim.k + 1


@pytest.mark.parametrize("M, fault", [([[1.0, 0.5], [0.0, 1.0]], r"is not symmetric: M\[0, 1\] = 0.5 but M\[1, 0\] = 0"),
                                      (np.diag([-1.0, 1.0]), r"is not positive definite \(smallest eigenvalue -1"),
                                      ([[1.0, 2.0], [2.0, 1.0]], r"is not positive definite")])
def test_invalid_mass_matrices_are_rejected(M, fault):
    with pytest.raises(ModelingError, match=r"LagrangianLinearTIDS 'm'\.M: " + fault):
        nm.LagrangianLinearTIDS([0.0, 0.0], [0.0, 0.0], M, name="m")
    with pytest.raises(ModelingError, match=r"LagrangianDS 'm'\.M: " + fault):
        nm.LagrangianDS([0.0, 0.0], [0.0, 0.0], M, name="m")
    ds = nm.LagrangianDS([0.0, 0.0], [0.0, 0.0], lambda q, z, M=np.asarray(M, float): M, name="m")
    nsds = nm.NonSmoothDynamicalSystem(0, 1)
    nsds.insert_dynamical_system(ds)
    with pytest.raises(PluginError, match=r"LagrangianDS 'm'\.M: " + fault):
        nm.TimeStepping(nsds, 1e-2).run()
    # symmetric to round-off is symmetric
    nm.LagrangianLinearTIDS([0.0, 0.0], [0.0, 0.0], [[1.0, 0.1], [0.1 + 1e-17, 1.0]])


def test_a_plugin_returning_complex_values_is_rejected():
    ds = nm.LagrangianDS([0.0], [0.0], [[1.0]], fext=lambda t, z: np.array([1.0 + 1e-9j]), name="c")
    nsds = nm.NonSmoothDynamicalSystem(0, 1)
    nsds.insert_dynamical_system(ds)
    with pytest.raises(PluginError, match=r"LagrangianDS 'c'\.fext: plug-in fext\(t, z\) returned complex values"):
        nm.TimeStepping(nsds, 1e-2).run()


# ----------------------------------------------------------------------------- issue 20: raw crashes and memory
def test_removing_an_interaction_of_another_model():
    n1, n2 = nm.NonSmoothDynamicalSystem(0, 1), nm.NonSmoothDynamicalSystem(0, 1)
    inter = n1.link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0]])), ball())
    n2.insert_dynamical_system(ball())
    with pytest.raises(ModelingError, match=r"NonSmoothDynamicalSystem\.interactions: Interaction is not an "
                                            r"interaction of this model \(linked in another model\)"):
        n2.remove_interaction(inter)
    assert inter.systems and n1.interactions == [inter]          # the other model is left as it was
    nm.TimeStepping(n1, 0.1).run()


@pytest.mark.parametrize("T, h, n", [(1e9, 1e-3, 10 ** 12), (1e5, 1e-3, 10 ** 8)])
def test_long_runs_allocate_as_they_go(T, h, n):
    import tracemalloc

    warm = nm.NonSmoothDynamicalSystem(0, 50 * h)          # the modules a run imports, loaded before the count
    warm.insert_dynamical_system(ball())
    w = nm.TimeStepping(warm, h)
    for _ in range(50):
        w.step()
    nsds = nm.NonSmoothDynamicalSystem(0, T)
    nsds.insert_dynamical_system(ball())
    tracemalloc.start()
    try:
        sim = nm.TimeStepping(nsds, h)
        for _ in range(50):
            sim.step()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sim.n_steps == n and peak < 5e6, peak          # never the whole run's rows up front
    assert sim.trajectory.q(nsds.dynamical_systems[0]).shape == (51, 1) and len(sim.trajectory.status) == 50


@pytest.mark.parametrize("t0, T, h, fault", [(0.0, 1e300, 1e-300, r"is inf steps, more than"),
                                              (0.0, 1e300, 1.0, r"is 1e\+300 steps, more than"),
                                              (1e17, 1e17 + 1024, 1.0, r"below the resolution")])
def test_absurd_step_counts_are_typed_errors(t0, T, h, fault):
    nsds = nm.NonSmoothDynamicalSystem(t0, T)
    nsds.insert_dynamical_system(ball())
    with pytest.raises(ModelingError, match=r"TimeStepping\.h: .*" + fault):
        nm.TimeStepping(nsds, h)


def test_write_problems_checks_the_folder_before_the_run(tmp_path):
    from nsopt.exceptions import OutputError

    def sim():
        nsds = nm.NonSmoothDynamicalSystem(0, 1.0)
        nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0]])), ball())
        return nm.TimeStepping(nsds, 5e-3, osns="lcp", method="lemke")

    sim().run(write_problems=tmp_path)
    first = sorted(p.name for p in tmp_path.iterdir())
    assert first and all(n.startswith("step_") for n in first)
    again = sim()
    with pytest.raises(OutputError, match=r"the folder already holds 'step_\d+_lcp\.dat' \(pass overwrite=True"):
        again.run(write_problems=tmp_path)
    assert again.k == 0 and sorted(p.name for p in tmp_path.iterdir()) == first     # nothing run, nothing written
    again.run(write_problems=tmp_path, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == first
    (tmp_path / "notes.txt").write_text("mine")            # other files do not clash
    with pytest.raises(OutputError):
        sim().run(write_problems=tmp_path)
    with pytest.raises(OutputError, match="is a file"):
        sim().run(write_problems=tmp_path / "notes.txt")
