"""Speed of nsopt.modeling's time stepping: steps per second, and the share of a step spent outside
the OSNS solve.

1. Bouncing ball (BouncingBallTS: 2000 steps), nsopt against Siconos' kernel driven from Python
   (``/usr/bin/python3``, ``siconos.kernel``), same simulation, measured in the same run; ratio.
2. Spheres in a 3D box with friction (examples/modeling_spheres_box.py) at about 10 and 200 spheres:
   steps per second and the share of the step time outside ``nsopt.solve`` (target < 30% at 200).

Run: ``python benchmarks/bench_modeling_speed.py [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "examples"))
sys.path.insert(0, str(HERE))


def ball_nsopt(T=10.0):
    from bench_modeling_siconos import ball_simulation

    sim = ball_simulation(T)[0]
    tic = time.process_time()
    sim.run()
    total = time.process_time() - tic
    return total, sim.n_steps, sim.trajectory.solve_time


def spheres(n, steps, h=2e-3):
    import modeling_spheres_box as ex

    from nsopt import modeling as nm

    box = ex.Box(n, T=steps * h, gap=0.0)     # a packed lattice resting in the box: contacts from step 1
    sim = nm.TimeStepping(box.nsds, h, nm.MoreauJeanOSI(0.5), osns="fc3d", method="nsn-ac", tol=1e-8,
                          fallback=("nsgs",))
    detect = 0.0
    tic = time.process_time()
    nc = []
    while sim.has_next_step():
        if sim.k % 5 == 0 and sim.k > 0:
            t = time.process_time()
            box.detect()
            detect += time.process_time() - t
        s = sim.step()
        if s is not None:
            nc.append(s.problem.nc)
    total = time.process_time() - tic
    return total, sim.n_steps, sim.trajectory.solve_time, detect, (statistics.mean(nc) if nc else 0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps (smoke run)")
    args = ap.parse_args(argv)
    from bench_modeling_siconos import have_siconos, run_siconos

    ball_nsopt(0.5)
    spheres(10, 10)      # imports and JIT compilation outside the timings

    print("1. bouncing ball, 2000 steps (h = 0.005, T = 10)")
    best = min((ball_nsopt() for _ in range(3)), key=lambda r: r[0])
    ns_step = best[0] / best[1]
    print(f"   nsopt   : {best[1] / best[0]:9.0f} steps/s  ({ns_step * 1e6:7.1f} µs/step, "
          f"{100 * (1 - best[2] / best[0]):.0f}% outside nsopt.solve)")
    if have_siconos():
        runs = [run_siconos("ball_speed") for _ in range(3)]
        sic = min(float(r["time"]) / int(r["steps"]) for r in runs)
        print(f"   Siconos : {1 / sic:9.0f} steps/s  ({sic * 1e6:7.1f} µs/step)")
        print(f"   ratio nsopt/Siconos time per step: {ns_step / sic:.2f}")
    else:
        print("   Siconos' kernel not available: no ratio")
    print("2. spheres in a box (fc3d, nsn-ac, h = 2e-3; contact detection every 5 steps, timed apart)")
    for n, steps in ((10, 100 if args.quick else 300), (200, 10 if args.quick else 40)):
        total, N, solve_t, detect, nc = spheres(n, steps)
        step_t = total - detect
        print(f"   {n:4d} spheres: {N / step_t:8.1f} steps/s, {nc:6.1f} contacts/step on average, "
              f"{100 * (step_t - solve_t) / step_t:4.1f}% of a step outside nsopt.solve "
              f"(detection: {1e3 * detect / N:.2f} ms/step)")


if __name__ == "__main__":
    main()
