"""Bad input to nsopt.modeling: each a typed nsopt error naming the object and the field."""

import numpy as np
import pytest

from nsopt import modeling as nm
from nsopt.exceptions import ModelingError, NsoptError, PluginError


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
