"""Speed of nsopt.modeling's time stepping: time per step, and the share of a step spent outside the
OSNS solve (``nsopt.solve``).

1. Bouncing ball (BouncingBallTS: 2000 steps), nsopt against Siconos' kernel driven from Python
   (``/usr/bin/python3``, ``siconos.kernel``), same simulation, measured in the same run; ratio. The
   nsopt time is split into the solves (``nsopt.solve``) and the rest (the modeling layer).
2. Spheres in a 3D box with friction (examples/modeling_spheres_box.py, a packed lattice at rest) at
   10 and 200 spheres: steps per second and the share of the step time outside ``nsopt.solve``
   (target < 30% at 200).

Each figure is given for the batched path (``MoreauJeanOSI()``, the default) and, as the baseline
measured in the same run, for the per-interaction path (``MoreauJeanOSI(batch=False)``). Times are
CPU times of the stepping thread (``time.thread_time``; BLAS is kept to one thread for nsopt and
Siconos alike), medians over repetitions; contact detection is timed apart.

Run: ``python benchmarks/bench_modeling_speed.py [--quick]``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")     # before numpy: no spinning BLAS threads
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "examples"))
sys.path.insert(0, str(HERE))

CLOCK = time.thread_time


def ball_nsopt(T=10.0, batch=True):
    """(seconds, steps, seconds in nsopt.solve, steps with a problem) for one BouncingBallTS run."""
    from bench_modeling_siconos import ball_simulation

    sim = ball_simulation(T)[0]
    sim.integrator.batch = batch
    sim.integrator.initialize(sim)
    tic = CLOCK()
    traj = sim.run()
    total = CLOCK() - tic
    return total, sim.n_steps, traj.solve_time, sum(s is not None for s in traj.status)


def spheres(n, steps, h=2e-3, batch=True):
    """(seconds stepping, steps, seconds in nsopt.solve, contacts per step) for the resting lattice."""
    import modeling_spheres_box as ex

    from nsopt import modeling as nm

    box = ex.Box(n, T=steps * h, gap=0.0)     # a packed lattice resting in the box: contacts from step 1
    sim = nm.TimeStepping(box.nsds, h, nm.MoreauJeanOSI(0.5, batch=batch), osns="fc3d", method="nsn-ac",
                          tol=1e-8, fallback=("nsgs",))
    detect = 0.0
    nc = []
    tic = CLOCK()
    while sim.has_next_step():
        if sim.k % 5 == 0 and sim.k > 0:
            t = CLOCK()
            box.detect()
            detect += CLOCK() - t
        s = sim.step()
        if s is not None:
            nc.append(s.problem.nc)
    total = CLOCK() - tic - detect
    return total, sim.n_steps, sim.trajectory.solve_time, (statistics.mean(nc) if nc else 0.0)


def _median(runs):
    return sorted(runs, key=lambda r: r[0])[len(runs) // 2]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and repetitions (smoke run)")
    args = ap.parse_args(argv)
    from bench_modeling_siconos import have_siconos, run_siconos

    reps = 3 if args.quick else 7
    ball_nsopt(1.0)
    spheres(60, 3)
    spheres(10, 5)      # imports and JIT compilation (dense and sparse kernels) outside the timings

    print("1. bouncing ball, 2000 steps (h = 0.005, T = 10), median of", reps, "runs")
    ns = None
    for label, batch in (("nsopt", True), ("nsopt, per-interaction path", False)):
        total, N, solve_t, ncontact = _median([ball_nsopt(batch=batch) for _ in range(reps)])
        out = total - solve_t
        print(f"   {label:28s}: {1e6 * total / N:7.1f} µs/step = {1e6 * out / N:6.1f} outside nsopt.solve + "
              f"{1e6 * solve_t / N:6.1f} in nsopt.solve  ({ncontact} steps solve an LCP: "
              f"{1e6 * solve_t / max(ncontact, 1):.1f} µs per solve, {1e6 * out / max(ncontact, 1):.1f} µs "
              f"outside per such step)")
        if batch:
            ns = total / N
    if have_siconos():
        pairs = []                        # nsopt and Siconos in turns: the machine's drift hits both alike
        for _ in range(reps):
            total, N = ball_nsopt()[:2]
            r = run_siconos("ball_speed")
            pairs.append((total / N, float(r["time"]) / int(r["steps"])))
        sic = statistics.median(b for _, b in pairs)
        print(f"   {'Siconos kernel':28s}: {1e6 * sic:7.1f} µs/step")
        print(f"   ratio nsopt/Siconos time per step: {ns / sic:.2f} (medians above); in turns, {reps} pairs: "
              f"median of the ratios {statistics.median(a / b for a, b in pairs):.2f}, "
              f"ratio of the best times {min(a for a, _ in pairs) / min(b for _, b in pairs):.2f}")
    else:
        print("   Siconos' kernel not available: no ratio")

    print("2. spheres in a box (fc3d, nsn-ac, h = 2e-3; contact detection every 5 steps, timed apart)")
    sizes = ((10, 100 if args.quick else 300), (200, 10 if args.quick else 40))
    for label, batch in (("batched", True), ("per-interaction", False)):
        for n, steps in sizes:
            if not batch:
                steps = max(5, steps // 4)
            total, N, solve_t, nc = _median([spheres(n, steps, batch=batch) for _ in range(1 if not batch else 3)])
            print(f"   {label:15s} {n:4d} spheres: {N / total:8.1f} steps/s, {nc:6.1f} contacts/step, "
                  f"{100 * (total - solve_t) / total:4.1f}% of a step outside nsopt.solve "
                  f"({1e3 * (total - solve_t) / N:.2f} ms outside, {1e3 * solve_t / N:.2f} ms in nsopt.solve)")


if __name__ == "__main__":
    main()
