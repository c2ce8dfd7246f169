"""Modeling layer: dynamical systems, relations, nonsmooth laws, interactions and time stepping,
with Siconos' kernel names and schemes (``formulations/time_stepping.md`` derives what each step assembles).

>>> import numpy as np
>>> from nsopt import modeling as nm
>>> ball = nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-9.81])
>>> ground = nm.Interaction(nm.NewtonImpactNSL(e=0.5), nm.LagrangianLinearTIR(H=[[1.0]]))
>>> nsds = nm.NonSmoothDynamicalSystem(t0=0.0, T=1.0)
>>> _ = nsds.link(ground, ball)
>>> traj = nm.TimeStepping(nsds, h=1e-3, osns="lcp", method="lemke").run()
>>> bool(traj.q(ball)[:, 0].min() > -1e-2)
True
"""

from .interactions import Interaction, NonSmoothDynamicalSystem
from .laws import (ComplementarityConditionNSL, EqualityConditionNSL, NewtonImpactFrictionNSL, NewtonImpactNSL,
                   NonSmoothLaw, NormalConeNSL, RelayNSL)
from .osi import Assembly, EulerMoreauOSI, MoreauJeanOSI, OneStepIntegrator, StepRecord
from .relations import (FirstOrderLinearR, FirstOrderLinearTIR, FirstOrderR, LagrangianCompliantR, LagrangianLinearTIR,
                        LagrangianR, LagrangianRheonomousR, LagrangianScleronomousR, Relation)
from .simulation import OSNS_BUILDERS, OSNS_KINDS, TimeStepping, Trajectory, register_osns
from .systems import (DynamicalSystem, FirstOrderLinearDS, FirstOrderLinearTIDS, FirstOrderNonLinearDS, LagrangianDS,
                      LagrangianLinearTIDS)

__all__ = [
    "DynamicalSystem", "FirstOrderNonLinearDS", "FirstOrderLinearDS", "FirstOrderLinearTIDS", "LagrangianDS",
    "LagrangianLinearTIDS",
    "Relation", "FirstOrderR", "FirstOrderLinearR", "FirstOrderLinearTIR", "LagrangianR", "LagrangianScleronomousR",
    "LagrangianRheonomousR", "LagrangianCompliantR", "LagrangianLinearTIR",
    "NonSmoothLaw", "ComplementarityConditionNSL", "NewtonImpactNSL", "NewtonImpactFrictionNSL", "RelayNSL",
    "EqualityConditionNSL", "NormalConeNSL",
    "Interaction", "NonSmoothDynamicalSystem",
    "OneStepIntegrator", "MoreauJeanOSI", "EulerMoreauOSI", "Assembly", "StepRecord",
    "TimeStepping", "Trajectory", "OSNS_KINDS", "OSNS_BUILDERS", "register_osns",
]
from .impact import MultipleImpactNSL  # noqa: E402  (osns="multiple-impact", issue 12)

__all__ += ["MultipleImpactNSL"]
from .newton_euler import NewtonEuler1DR, NewtonEuler3DR, NewtonEulerDS, NewtonEulerR  # noqa: E402  (issue 23)

__all__ += ["NewtonEulerDS", "NewtonEulerR", "NewtonEuler1DR", "NewtonEuler3DR"]
from . import joints  # noqa: E402
from .joints import FixedJointR, KneeJointR, NewtonEulerJointR, PivotJointR, PrismaticJointR  # noqa: E402

__all__ += ["NewtonEulerJointR", "KneeJointR", "PivotJointR", "PrismaticJointR", "FixedJointR"]
