"""Siconos-kernel side of the modeling benchmarks, run by /usr/bin/python3 (siconos.kernel 4.4).

Usage: /usr/bin/python3 _siconos_modeling.py {ball|diode} OUT.npz [T]
Writes every step's state, output and multiplier, and the wall time of the stepping loop.
Parameters: siconos-tutorials 4.4.0 examples/mechanics/BouncingBall/BouncingBallTS.py and
examples/electronics/DiodeBridge/DiodeBridge.py.
"""
import sys
import time

import numpy as np
import siconos.kernel as sk


def _ball_simulation(T):
    t0, h, r, g, m, e, theta = 0.0, 0.005, 0.1, 9.81, 1.0, 0.9, 0.5
    mass = np.eye(3)
    mass[2, 2] = 2.0 / 5 * r * r
    ds = sk.LagrangianLinearTIDS([1.0, 0.0, 0.0], [0.0, 0.0, 0.0], mass)
    ds.setFExtPtr([-m * g, 0.0, 0.0])
    inter = sk.Interaction(sk.NewtonImpactNSL(e), sk.LagrangianLinearTIR([[1.0, 0.0, 0.0]]))
    nsds = sk.NonSmoothDynamicalSystem(t0, T)
    nsds.insertDynamicalSystem(ds)
    nsds.link(inter, ds)
    s = sk.TimeStepping(nsds, sk.TimeDiscretisation(t0, h), sk.MoreauJeanOSI(theta), sk.LCP())
    return s, ds, inter, int(round((T - t0) / h))


def ball(T=10.0):
    s, ds, inter, N = _ball_simulation(T)
    out = {k: np.zeros((N + 1, 3)) for k in ("q", "v", "p")}
    out.update({k: np.zeros((N + 1, 1)) for k in ("y0", "y1", "lam")})
    q, v, p = ds.q(), ds.velocity(), ds.p(1)
    k = 0

    def rec(k):
        out["q"][k], out["v"][k], out["p"][k] = q, v, p
        out["y0"][k], out["y1"][k], out["lam"][k] = inter.y(0), inter.y(1), inter.lambda_(1)
    rec(0)
    tic = time.process_time()
    while s.hasNextEvent():
        s.computeOneStep()
        k += 1
        rec(k)
        s.nextStep()
    out["time"] = np.array(time.process_time() - tic)
    out["steps"] = np.array(k)
    return out


def ball_speed(T=10.0):
    """The same simulation, nothing recorded: the kernel's CPU time per step."""
    s, ds, inter, N = _ball_simulation(T)
    k = 0
    tic = time.process_time()
    while s.hasNextEvent():
        s.computeOneStep()
        s.nextStep()
        k += 1
    return {"time": np.array(time.process_time() - tic), "steps": np.array(k)}


def diode(T=5.0e-3):
    t0, h = 0.0, 1.0e-6
    L, C, R, V0 = 1e-2, 1e-6, 1e3, 10.0
    A = np.zeros((2, 2))
    A.flat[...] = [0.0, -1.0 / C, 1.0 / L, 0.0]
    ds = sk.FirstOrderLinearDS([V0, 0.0], A)
    Cm = [[0.0, 0.0], [0.0, 0.0], [-1.0, 0.0], [1.0, 0.0]]
    D = [[1.0 / R, 1.0 / R, -1.0, 0.0], [1.0 / R, 1.0 / R, 0.0, -1.0], [1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]
    B = [[0.0, 0.0, -1.0 / C, 1.0 / C], [0.0, 0.0, 0.0, 0.0]]
    rel = sk.FirstOrderLinearTIR(Cm, B)
    rel.setDPtr(D)
    inter = sk.Interaction(sk.ComplementarityConditionNSL(4), rel)
    nsds = sk.NonSmoothDynamicalSystem(t0, T)
    nsds.insertDynamicalSystem(ds)
    nsds.link(inter, ds)
    s = sk.TimeStepping(nsds, sk.TimeDiscretisation(t0, h), sk.EulerMoreauOSI(0.5), sk.LCP())
    N = int(round((T - t0) / h))
    out = {"x": np.zeros((N + 1, 2)), "y": np.zeros((N + 1, 4)), "lam": np.zeros((N + 1, 4))}
    x, y, lam = ds.x(), inter.y(0), inter.lambda_(0)
    out["x"][0], out["y"][0], out["lam"][0] = x, y, lam
    k = 0
    tic = time.process_time()
    while s.hasNextEvent():
        s.computeOneStep()
        k += 1
        out["x"][k], out["y"][k], out["lam"][k] = x, y, lam
        s.nextStep()
    out["time"] = np.array(time.process_time() - tic)
    out["steps"] = np.array(k)
    return out


if __name__ == "__main__":
    what, path = sys.argv[1], sys.argv[2]
    args = [float(a) for a in sys.argv[3:]]
    res = {"ball": ball, "ball_speed": ball_speed, "diode": diode}[what](*args)
    np.savez(path, **res)
