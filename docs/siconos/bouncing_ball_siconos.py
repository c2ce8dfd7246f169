"""The bouncing ball in Siconos' kernel (siconos-tutorials 4.4, BouncingBallTS.py), for /usr/bin/python3.

Usage: /usr/bin/python3 bouncing_ball_siconos.py OUT.npz    (writes t, q, v, lam per step)
"""
import sys

import numpy as np
import siconos.kernel as sk

t0, T, h = 0.0, 2.0, 0.005            # start, end, time step [s]
r, m, g, e, theta = 0.1, 1.0, 9.81, 0.9, 0.5

mass = np.diag([m, m, 2.0 / 5.0 * m * r * r])
ball = sk.LagrangianLinearTIDS([1.0, 0.0, 0.0], [0.0, 0.0, 0.0], mass)
ball.setFExtPtr([-m * g, 0.0, 0.0])
ground = sk.Interaction(sk.NewtonImpactNSL(e), sk.LagrangianLinearTIR([[1.0, 0.0, 0.0]]))

nsds = sk.NonSmoothDynamicalSystem(t0, T)
nsds.insertDynamicalSystem(ball)
nsds.link(ground, ball)
sim = sk.TimeStepping(nsds, sk.TimeDiscretisation(t0, h), sk.MoreauJeanOSI(theta), sk.LCP())

t, q, v, lam = [t0], [ball.q()[0]], [ball.velocity()[0]], [ground.lambda_(1)[0]]
k = 0
while sim.hasNextEvent():
    sim.computeOneStep()
    k += 1
    t.append(t0 + k * h)
    q.append(ball.q()[0])
    v.append(ball.velocity()[0])
    lam.append(ground.lambda_(1)[0])
    sim.nextStep()
np.savez(sys.argv[1], t=t, q=q, v=v, lam=lam)
