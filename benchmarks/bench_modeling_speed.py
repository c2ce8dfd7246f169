"""Speed of nsopt.modeling's time stepping: time per step, and the share of a step spent outside the
OSNS solve (``nsopt.solve``), next to Siconos' kernel (4.4, driven from ``/usr/bin/python3``).

1. Bouncing ball (BouncingBallTS: 2000 steps), nsopt and Siconos' kernel in turns, same simulation;
   the ratio of the times per step. The nsopt time is split into the solves (``nsopt.solve``) and the
   rest (the modeling layer), per step and per step that solves an LCP.
2. Spheres in a 3D box with friction (examples/modeling_spheres_box.py's lattice resting in the box,
   see :func:`_box`) at 10 and 200 spheres, nsopt (FrictionContact, ``nsn-ac``) and Siconos' kernel
   (FrictionContact(3, NSN_AC), the same tol and max_iter, the pair contact a compiled plug-in:
   benchmarks/_siconos_modeling.py ``spheres``) in turns: steps per second, the share of a step
   outside the OSNS solve (Siconos: outside ``computeOneStepNSProblem``, timed in a second run that
   drives the step's phases from Python), contacts per step, solver iterations, and the largest
   difference of the final positions (the check that both sides simulate the same thing). Then the
   packed lattice (nsopt alone; target: < 30% of a step outside nsopt.solve at 200 spheres), the
   example's default (spheres dropped with random velocities: W changes every step and the contact
   detection, every 5 steps, changes the topology, which the batched integrator follows in place)
   and the one-by-one evaluation (``MoreauJeanOSI(batch=False)``) as the baseline.

Times are CPU times of the stepping thread (``time.thread_time``, on both sides: robust to the
preemptions of a shared machine); the ball's solves inside a run by ``time.perf_counter`` (cheap: a
thread_time call costs about 1 µs, a solve about 10; a preemption inside one is rare). BLAS is kept to
one thread for nsopt and Siconos alike; medians over repetitions; construction and contact detection
timed apart. Siconos' part is skipped without Siconos.

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

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "examples"))
sys.path.insert(0, str(HERE))

CLOCK = time.thread_time          # CPU time of the stepping thread (robust on a shared machine)
SPHERES_CLOCK = time.thread_time  # the spheres' solves too (ms steps: often preempted)
H_SPHERES, EVERY, TOL, MAX_ITER = 2e-3, 5, 1e-8, 1000      # the spheres: step, detection period, solver
CLEARANCE = 1e-6


def ball_nsopt(T=10.0, batch=True, solve_clock=time.perf_counter):
    """(seconds, steps, seconds in nsopt.solve, steps with a problem) for one BouncingBallTS run; the
    solves timed by ``solve_clock`` (``simulation.SOLVE_CLOCK``)."""
    from bench_modeling_siconos import ball_simulation

    from nsopt.modeling import simulation

    from nsopt import modeling as nm

    simulation.SOLVE_CLOCK = solve_clock
    sim = ball_simulation(T)[0]
    if not batch:       # the one-by-one evaluation (the reference path)
        sim = nm.TimeStepping(sim.nsds, sim.h, nm.MoreauJeanOSI(0.5, batch=False), osns="lcp", method="lemke",
                              tol=1e-12)
    tic = CLOCK()
    traj = sim.run()
    total = CLOCK() - tic
    simulation.SOLVE_CLOCK = time.perf_counter
    return total, sim.n_steps, traj.solve_time, sum(s is not None for s in traj.status)


def _box(n, steps, h, clearance, gap=0.0):
    """examples/modeling_spheres_box.py's packed lattice (``Box(gap=0)``), its positions stretched by
    ``1 + clearance``. With clearance 0 every neighbour and the near walls touch at a zero gap and
    velocity: those contacts are active or not by the sign of rounding noise (which differs between
    two codes). With ``CLEARANCE`` (1e-6): columns of spheres that settle on the floor and on each
    other in the first steps, about 1e-6 R from the walls and from the next columns: the
    gravity-loaded contacts are active at every step, the others never, on both sides."""
    import modeling_spheres_box as ex

    box = ex.Box(n, T=steps * h, gap=gap)
    if clearance:
        for s in box.spheres:
            q = s.q.copy()
            q[:3] *= 1.0 + clearance
            s.q0 = q        # a run starts from the initial conditions
            s.q = q
    return box


def spheres(n, steps, h=H_SPHERES, batch=True, clearance=CLEARANCE, gap=0.0):
    """The resting lattice of ``n`` spheres (:func:`_box`) for ``steps`` steps (contact detection every
    ``EVERY`` steps, timed apart): a dict of seconds stepping, steps, seconds in nsopt.solve, contacts
    per step, iterations per solve, unsolved steps, final positions."""
    from nsopt import modeling as nm
    from nsopt.modeling import simulation

    simulation.SOLVE_CLOCK = CLOCK = SPHERES_CLOCK
    box = _box(n, steps, h, clearance, gap)
    sim = nm.TimeStepping(box.nsds, h, nm.MoreauJeanOSI(0.5, batch=batch), osns="fc3d", method="nsn-ac",
                          tol=TOL, max_iter=MAX_ITER, fallback=("nsgs",))
    detect = 0.0
    nc, nit, fails = [], [], 0
    tic = CLOCK()
    while sim.has_next_step():
        if sim.k % EVERY == 0 and sim.k > 0:
            t = CLOCK()
            box.detect(sim)
            detect += CLOCK() - t
        s = sim.step()
        if s is not None:
            nc.append(s.problem.nc)
            nit.append(s.nit)
            fails += not s.success
        else:
            nc.append(0)
    total = CLOCK() - tic - detect
    simulation.SOLVE_CLOCK = time.perf_counter
    return {"time": total, "steps": sim.n_steps, "solve": sim.trajectory.solve_time, "contacts": statistics.mean(nc),
            "iterations": statistics.mean(nit) if nit else 0.0, "fails": fails,
            "q": np.array([s.q for s in box.spheres])}


def spheres_siconos(n, steps, h=H_SPHERES):
    """The same simulation in Siconos' kernel (benchmarks/_siconos_modeling.py ``spheres``): the
    lattice, walls and parameters handed over from examples/modeling_spheres_box.py."""
    import tempfile

    import modeling_spheres_box as ex
    from bench_modeling_siconos import run_siconos

    box = _box(n, steps, h, CLEARANCE)
    walls = [ex.wall_relation(nn, d) for nn, d in box.walls]
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "in.npz"
        np.savez(f, q0=np.array([s.q for s in box.spheres]), walls_H=np.array([w.H for w in walls]),
                 walls_b=np.array([w.b for w in walls]), walls_n=np.array([nn for nn, _ in box.walls], dtype=float),
                 walls_d=np.array([dd for _, dd in box.walls], dtype=float), R=ex.R, mass=ex.MASS,
                 inertia=ex.INERTIA, g=ex.G, en=box.en, mu=box.mu, margin=box.margin, h=h, steps=steps,
                 every=EVERY, tol=TOL, max_iter=MAX_ITER, theta=0.5)
        return run_siconos("spheres", f)


def ball_contact_steps(T=10.0):
    """(µs per step with contact, µs of it outside nsopt.solve) for one BouncingBallTS run: the steps
    that solve an LCP (``TimeStepping.step``; the free flights are taken apart, compiled) timed one by
    one with ``time.perf_counter``, the solves too; the medians over those steps (a step preempted by
    another process is an outlier, which the median leaves out)."""
    from bench_modeling_siconos import ball_simulation

    from nsopt import modeling as nm
    from nsopt.modeling import simulation

    each = []

    class Timed(nm.TimeStepping):
        def step(self):
            s0 = self._solve_time
            t = time.perf_counter()
            sol = super().step()
            if sol is not None:
                dt = time.perf_counter() - t
                each.append((dt, dt - (self._solve_time - s0)))
            return sol

    simulation.SOLVE_CLOCK = time.perf_counter
    sim = ball_simulation(T)[0]
    sim.__class__ = Timed
    sim.run()
    return (1e6 * statistics.median(a for a, _ in each), 1e6 * statistics.median(b for _, b in each))


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
    spheres(200, 3)

    print("1. bouncing ball, 2000 steps (h = 0.005, T = 10), median of", reps, "runs")
    ns = None
    for label, batch in (("nsopt", True), ("nsopt, one by one (batch=False)", False)):
        # the split by thread_time on both clocks (a preempted solve would count outside otherwise)
        total, N, solve_t, ncontact = _median([ball_nsopt(batch=batch, solve_clock=CLOCK) for _ in range(reps)])
        out = total - solve_t
        print(f"   {label:28s}: {1e6 * total / N:7.1f} µs/step = {1e6 * out / N:6.1f} outside nsopt.solve + "
              f"{1e6 * solve_t / N:6.1f} in nsopt.solve  ({ncontact} steps solve an LCP: "
              f"{1e6 * solve_t / max(ncontact, 1):.1f} µs per solve, {1e6 * out / max(ncontact, 1):.1f} µs "
              f"outside per such step)")
        if batch:
            ns = total / N
            each = [ball_contact_steps() for _ in range(reps)]
            print(f"   {'':28s}  a step with contact: {statistics.median(a for a, _ in each):.1f} µs, of which "
                  f"{statistics.median(b for _, b in each):.1f} outside nsopt.solve (those steps timed one by one: "
                  f"the median step, median of {reps} runs)")
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

    print(f"2. spheres in a box (fc3d, nsn-ac, tol {TOL:g}, max_iter {MAX_ITER}, h = {H_SPHERES:g}; contact "
          f"detection every {EVERY} steps, timed apart); the lattice with clearance {CLEARANCE:g}, nsopt and "
          f"Siconos in turns")
    sizes = ((10, 100 if args.quick else 300), (200, 10 if args.quick else 40))
    sic = have_siconos()
    for n, steps in sizes:
        runs, sruns = [], []
        for _ in range(reps if n < 100 else max(3, reps // 2)):      # in turns, as the ball
            runs.append(spheres(n, steps))
            if sic:
                sruns.append(spheres_siconos(n, steps))
        med = statistics.median
        t = med(r["time"] / r["steps"] for r in runs)
        out = med((r["time"] - r["solve"]) / r["time"] for r in runs)
        r = runs[0]
        print(f"   nsopt   {n:4d} spheres: {1 / t:8.1f} steps/s, {100 * out:4.1f}% of a step outside nsopt.solve, "
              f"{r['contacts']:5.1f} contacts/step, {r['iterations']:4.2f} Newton iterations/solve, "
              f"{r['fails']} unsolved steps")
        if not sic:
            continue
        ts = med(float(x["time"]) / int(x["steps"]) for x in sruns)
        share = med(1 - float(x["split_osns_time"]) / float(x["split_time"]) for x in sruns)
        x = sruns[0]
        dq = float(np.abs(r["q"][:, :3] - x["q"][:, :3]).max())
        print(f"   Siconos {n:4d} spheres: {1 / ts:8.1f} steps/s, {100 * share:4.1f}% of a step outside "
              f"computeOneStepNSProblem, {x['contacts'].mean():5.1f} contacts/step, "
              f"{x['iterations'].mean() if x['iterations'].size else 0:4.2f} Newton iterations/solve, "
              f"{int(x['fails'])} unsolved steps, Newton passes/step {x['newton'].mean():.0f}")
        print(f"   nsopt/Siconos time per step {t / ts:.2f} (median of the ratios in turns "
              f"{med(a['time'] / a['steps'] / (float(b['time']) / int(b['steps'])) for a, b in zip(runs, sruns)):.2f}); "
              f"final positions: max |Δx| = {dq:.1e} m ({dq / 0.05:.1e} R)")
    print("   the packed lattice (clearance 0: contacts at a zero gap too), nsopt alone")
    for n, steps in sizes:
        r = [spheres(n, steps, clearance=0.0) for _ in range(3)]
        t = statistics.median(x["time"] / x["steps"] for x in r)
        out = statistics.median((x["time"] - x["solve"]) / x["time"] for x in r)
        print(f"   nsopt   {n:4d} spheres: {1 / t:8.1f} steps/s, {100 * out:4.1f}% of a step outside nsopt.solve, "
              f"{r[0]['contacts']:5.1f} contacts/step")
    print("   the example's default (gap 0.2: spheres dropped with random velocities; the contacts and W change"
          " every step, a new topology every 5 steps), nsopt alone")
    for n, steps in sizes:
        r = [spheres(n, steps, clearance=0.0, gap=0.2) for _ in range(3)]
        t = statistics.median(x["time"] / x["steps"] for x in r)
        out = statistics.median((x["time"] - x["solve"]) / x["time"] for x in r)
        print(f"   nsopt   {n:4d} spheres: {1 / t:8.1f} steps/s, {100 * out:4.1f}% of a step outside nsopt.solve, "
              f"{r[0]['contacts']:5.1f} contacts/step, {statistics.mean(x['iterations'] for x in r):4.2f} Newton "
              "iterations/solve")
    print("   baseline: the one-by-one evaluation (MoreauJeanOSI(batch=False)), packed lattice")
    for n, steps in sizes:
        r = spheres(n, max(5, steps // 4), batch=False, clearance=0.0)
        print(f"   per-interaction {n:4d} spheres: {r['steps'] / r['time']:8.1f} steps/s, "
              f"{100 * (r['time'] - r['solve']) / r['time']:4.1f}% of a step outside nsopt.solve")


if __name__ == "__main__":
    main()
