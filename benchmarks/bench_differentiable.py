"""The cost of differentiating a Moreau–Jean run (nsopt.modeling.differentiable) against the run itself.

    python benchmarks/bench_differentiable.py [--repeat 3]

For three scenes of ``tests/test_modeling_differentiable.py`` and the identification example (a
bouncing ball, 1000 steps, one impact; a block sliding on an incline, fc2d, 600 steps all in
contact; three spheres in a box, fc3d, 200 steps, sphere–sphere contacts; the puck of
``examples/identify_contact.py``, 1200 steps, 2 impacts), in turns (best of ``--repeat``):

- ``run``: the simulation, ``differentiable=False`` (the baseline of the ratios);
- ``run+tape``: the same with ``differentiable=True`` (what recording costs);
- ``gradient``: ``traj.gradient(loss, wrt)`` on a fresh run (the replay: each contact step's
  linearisation and ``nsopt.sensitivity`` factorisation, checked against the run, then one adjoint sweep);
- ``again``: a second gradient of the same run (the replay kept: the adjoint sweep alone);
- ``jvp``: one forward sweep (replay kept).

The load average is printed: the machine is shared, only the ratios measured in the same turn mean
something. CSV: ``benchmarks/results/bench_differentiable.csv``.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

from tests import test_modeling_differentiable as T


def final_x(Q, V):
    gQ = np.zeros_like(Q)
    gQ[-1, 0] = 1.0
    return Q[-1, 0], gQ, None


def scenes():
    import identify_contact as ic

    data = ic.measurements()

    def fit(Q, V):
        r = Q - data
        return float(np.sum(r * r)) / len(Q), 2 * r / len(Q), None

    return {
        "ball (lcp, 1000 steps, 1 impact)": (lambda d: T.ball_run(diff=d)[0], T.apex, ["e", "v0"], {"e": 1.0}),
        "incline (fc2d, 600 steps in contact)": (lambda d: T.incline_run(diff=d)[0], T.slid, ["mu", "v0"],
                                                 {"mu": 1.0}),
        "3 spheres (fc3d, 200 steps, pairs)": (lambda d: T.spheres_run(diff=d)[0], final_x, ["mu"], {"mu": 1.0}),
        "puck (fc2d, 1200 steps, 2 impacts)": (lambda d: ic.simulate(0.7, 0.25, differentiable=d)[0], fit,
                                               ["e", "mu"], {"e": 1.0}),
    }


def clock(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def turn(run, loss, wrt, direction):
    """One turn: the run, the run with its tape, a gradient, a second one, a jvp (seconds)."""
    t = {}
    t["run"], _ = clock(lambda: run(False))
    t["run+tape"], traj = clock(lambda: run(True))
    t["gradient"], _ = clock(lambda: traj.gradient(loss, wrt=wrt))
    t["again"], _ = clock(lambda: traj.gradient(loss, wrt=wrt))
    t["jvp"], _ = clock(lambda: traj.jvp(direction))
    return t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    rows = []
    for name, (run, loss, wrt, direction) in scenes().items():
        best = {}
        run(True).gradient(loss, wrt=wrt)          # warm-up (compiled kernels, caches)
        for _ in range(args.repeat):
            t = turn(run, loss, wrt, direction)
            for k, v in t.items():
                best[k] = min(best.get(k, np.inf), v)
        base = best["run"]
        line = {"scene": name, **{k: round(v, 4) for k, v in best.items()},
                **{f"{k}/run": round(v / base, 2) for k, v in best.items() if k != "run"}}
        rows.append(line)
        print(f"{name:40s} run {base * 1e3:8.1f} ms | run+tape x{best['run+tape'] / base:5.2f} | gradient "
              f"x{best['gradient'] / base:6.2f} | again x{best['again'] / base:5.2f} | jvp x{best['jvp'] / base:5.2f}")
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    with open(out / "bench_differentiable.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
