"""Cost of the local error estimate (``TimeStepping(on_local_error=...)``, formulations/time_stepping.md §6):
the time of a run with the estimate (``"warn"``, the default) over the same run without it (``"ignore"``),
both measured in this run, in turns, medians over repetitions.

Models: the bouncing ball (BouncingBallTS: a linear time-invariant system with a constant F_ext, the
compiled free flight; its accelerations are constant: the estimate is 0 at θ = 1/2 and costs nothing), a
spring-damper mass on the ground (LagrangianLinearTIDS with K and C: the estimate from K Δq, C Δv), the
pendulum against a wall (LagrangianDS with F_int: one more evaluation of the forces and of M per step),
the slider-crank (examples/modeling_slider_crank.py: M(q), F_gyr), the diode bridge
(examples/modeling_diode_bridge.py: Euler–Moreau, f = A x per step). (Spheres in a box: LTI with a constant
F_ext, nothing to compute; ``benchmarks/bench_modeling_speed.py`` times them.)

Run: ``python benchmarks/bench_local_error.py [--quick]``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "examples"))
sys.path.insert(0, str(HERE))

from nsopt import modeling as nm

CLOCK = time.thread_time


def ball(mode, T):
    from bench_modeling_siconos import ball_simulation

    return _mode(ball_simulation(T)[0], mode)


def spring(mode, T):
    ds = nm.LagrangianLinearTIDS([0.5, 0.0], [0.0, 1.0], np.diag([1.0, 2.0]), K=[[40.0, -5.0], [-5.0, 20.0]],
                                 C=[[0.2, 0.0], [0.0, 0.1]], fext=[-9.81, 0.0])
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0, 0.0]])), ds)
    return nm.TimeStepping(nsds, 1e-3, nm.MoreauJeanOSI(0.5), osns="lcp", method="lemke", on_local_error=mode)


def pendulum(mode, T):
    g = 9.81
    ds = nm.LagrangianDS([1.0], [0.0], M=[[1.0]], fint=lambda t, q, v, z: np.array([g * np.sin(q[0])]),
                         jacobian_fint_q=lambda t, q, v, z: np.array([[g * np.cos(q[0])]]),
                         jacobian_fint_v=lambda t, q, v, z: np.zeros((1, 1)))
    rel = nm.LagrangianScleronomousR(h=lambda q, z: np.array([np.sin(q[0]) + 0.5]),
                                     G0=lambda q, z: np.array([[np.cos(q[0])]]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.8), rel), ds)
    return nm.TimeStepping(nsds, 1e-3, nm.MoreauJeanOSI(0.5), osns="lcp", method="lemke", newton_tol=1e-10,
                           on_local_error=mode)


def slider_crank(mode, T):
    import modeling_slider_crank as ex

    return _mode(_captured(ex.simulate, T), mode)


def diode(mode, T):
    import modeling_diode_bridge as ex

    return _mode(_captured(ex.simulate, T), mode)


def _mode(sim, mode):
    """A simulation built elsewhere (with the default "warn"), turned to ``mode`` before its first step."""
    sim.on_local_error = mode
    if mode == "ignore":
        sim._local = None
    return sim


def _captured(simulate, T):
    """The TimeStepping an example's ``simulate`` builds (its run() replaced by a capture)."""
    box = []
    run = nm.TimeStepping.run

    def grab(self, *a, **k):
        box.append(self)
        raise StopIteration
    nm.TimeStepping.run = grab
    try:
        try:
            simulate(T=T)
        except StopIteration:
            pass
    finally:
        nm.TimeStepping.run = run
    return box[0]


def timed(make, mode, T):
    sim = make(mode, T)
    tic = CLOCK()
    sim.run()
    return CLOCK() - tic, sim.k


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="shorter runs, fewer repetitions")
    args = ap.parse_args()
    reps = 3 if args.quick else 7
    cases = [("bouncing ball (LTI, free flight)", ball, 10.0), ("spring-damper (LTI, K, C)", spring, 2.0),
             ("pendulum (LagrangianDS, F_int)", pendulum, 2.0), ("slider-crank (M(q), F_gyr)", slider_crank, 0.2),
             ("diode bridge (Euler-Moreau)", diode, 2e-3)]
    if args.quick:
        cases = [(n, f, T / 2) for n, f, T in cases]
    print(f"{'model':36s} {'steps':>6s} {'ignore ms':>10s} {'warn ms':>9s} {'ratio':>6s} {'µs/step':>8s}")
    for name, make, T in cases:
        timed(make, "warn", T / 10)                   # compile and warm
        on, off = [], []
        for _ in range(reps):
            t, n = timed(make, "ignore", T)
            off.append(t)
            t, n = timed(make, "warn", T)
            on.append(t)
        a, b = statistics.median(off), statistics.median(on)
        print(f"{name:36s} {n:6d} {1e3 * a:10.1f} {1e3 * b:9.1f} {b / a:6.2f} {1e6 * (b - a) / n:8.1f}")


if __name__ == "__main__":
    main()
