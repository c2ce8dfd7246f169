"""Contact detection time (nsopt.mechanics.CollisionManager on coal) for piles of cubes.

    python benchmarks/bench_rigid_detection.py [--sizes 10 100 1000] [--repeats 5] [--poses PILE1000.npz]

A pile: the cubes of ``rigid_scenes.pile(n)`` in their box, stacked in touching columns (10 by 10 columns
for 1000 cubes, each cube 0.01 above the one below and beside its neighbours, turned by up to 0.02 rad):
every cube touches its neighbours, face to face, within the margin (0.05), the worst case for manifolds
(about 4 points per touching pair). ``--poses`` takes final poses from a run instead (an npz with
``final_q``, as siconos_rigid.py writes). Each size is timed in turns: ``update`` (poses into coal), the
broad + narrow phase (``candidate_pairs``), the whole ``detect`` (with patches, reduction to 4 points and
persistent ids), repeated with the poses jittered by 1e-4 so that the points persist.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rigid_scenes  # noqa: E402

from nsopt import mechanics as mc  # noqa: E402
from nsopt.modeling import _rotation as rot  # noqa: E402


def stacked_pile(n, seed=0):
    sc = rigid_scenes.pile(n, seed)
    rng = np.random.default_rng(seed)
    k = math.ceil(round(n ** 0.5 / 1.0, 9)) if n <= 10 else 10
    Q = np.zeros((n, 7))
    for j in range(n):
        layer, r = divmod(j, k * k)
        iy, ix = divmod(r, k)
        Q[j, :3] = [(ix - (k - 1) / 2) * 1.01, (iy - (k - 1) / 2) * 1.01, 0.505 + 1.01 * layer]
        Q[j, 3:] = rot.quat_exp(0.02 * rng.uniform(-1, 1, 3))
    return sc, Q


def manager(sc, Q):
    cm = mc.CollisionManager(margin=0.05)
    shapes = {name: (mc.Box(p) if kind == "Box" else mc.Sphere(*p)) for name, (kind, p) in sc["shapes"].items()}
    for name, shape, pose in sc["statics"]:
        cm.add_static(mc.Contactor(shapes[shape]), pose)
    for b, body in enumerate(sc["bodies"]):
        cm.add_body(mc.Contactor(shapes[body[1]]), Q[b])
    return cm


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--poses", default=None, help="npz with final_q (n, 7) of a run, for the largest size")
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"{'cubes':>6} {'contacts':>8} {'pairs':>6} {'update ms':>10} {'broad+narrow ms':>16} {'detect ms':>10} "
          f"{'cold ms':>8} {'persist %':>9}")
    rows = []
    for n in args.sizes:
        sc, Q = stacked_pile(n)
        if args.poses and n == max(args.sizes):
            Q = np.load(args.poses)["final_q"]
            assert Q.shape == (n, 7), Q.shape
        cm = manager(sc, Q)
        t = time.perf_counter()
        c0 = cm.detect(Q)
        cold = time.perf_counter() - t
        rng = np.random.default_rng(1)
        tu, tb, td, kept = [], [], [], []
        for _ in range(args.repeats):                      # in turns: the three measures interleaved
            Qj = Q.copy()
            Qj[:, :3] += 1e-4 * rng.normal(size=(n, 3))
            t = time.perf_counter()
            cm.update(Qj)
            tu.append(time.perf_counter() - t)
            t = time.perf_counter()
            pairs = cm.candidate_pairs()
            tb.append(time.perf_counter() - t)
            t = time.perf_counter()
            c = cm.detect(Qj)
            td.append(time.perf_counter() - t)
            kept.append(1.0 - c.new.mean() if len(c) else 1.0)
        med = lambda a: 1e3 * float(np.median(a))  # noqa: E731
        rows.append((n, len(c0), len(pairs), med(tu), med(tb), med(td), 1e3 * cold, 100 * float(np.mean(kept))))
        print("{:>6d} {:>8d} {:>6d} {:>10.2f} {:>16.2f} {:>10.2f} {:>8.1f} {:>9.1f}".format(*rows[-1]))
    if len(rows) > 1:
        n = np.log([r[0] for r in rows])
        slope = np.polyfit(n, np.log([r[5] for r in rows]), 1)[0]
        print(f"detect time ~ cubes^{slope:.2f} (log-log slope over {[r[0] for r in rows]})")
    return rows


if __name__ == "__main__":
    main()
