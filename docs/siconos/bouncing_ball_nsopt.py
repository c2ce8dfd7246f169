"""The same bouncing ball in nsopt's modeling layer (any Python with nsopt)."""
import numpy as np

from nsopt import modeling as nm

t0, T, h = 0.0, 2.0, 0.005            # start, end, time step [s]
r, m, g, e, theta = 0.1, 1.0, 9.81, 0.9, 0.5

mass = np.diag([m, m, 2.0 / 5.0 * m * r * r])
ball = nm.LagrangianLinearTIDS(q0=[1.0, 0.0, 0.0], v0=[0.0, 0.0, 0.0], M=mass,
                               fext=[-m * g, 0.0, 0.0])
ground = nm.Interaction(nm.NewtonImpactNSL(e=e), nm.LagrangianLinearTIR(H=[[1.0, 0.0, 0.0]]))

nsds = nm.NonSmoothDynamicalSystem(t0=t0, T=T)
nsds.link(ground, ball)                # inserts the ball too
sim = nm.TimeStepping(nsds, h=h, integrator=nm.MoreauJeanOSI(theta=theta),
                      osns="lcp", method="lemke", tol=1e-12)

traj = sim.run()                       # every step recorded: arrays, one row per step
t, q, v, lam = traj.t, traj.q(ball)[:, 0], traj.v(ball)[:, 0], traj.lambda_(ground, 1)[:, 0]
