"""Overhead of the campaign harness (nsopt.studies): campaign wall time against the sum of the solve
times it records, with --jobs 1, and the speed-up of --jobs 2.

    python benchmarks/bench_harness.py [--data DIR] [--gen-n 100] [--gen-count 16] [--gen-iter 10000]

Two problem sets, each run as a fresh campaign (a new folder, no resume):

1. the corpus folder ``lcp`` (16 small LCPs) with ``lemke``: sub-millisecond solves, so the ratio shows
   the harness' fixed cost (starting the worker, imports, the JIT warm-up);
2. ``--gen-count`` generated P-matrix LCPs of size ``--gen-n`` (Siconos .dat files) with ``pgs`` run
   for exactly ``--gen-iter`` sweeps (``tol=1e-30`` is never reached: a fixed amount of work per solve,
   about a second here), where the fixed cost is spread over solves that cost something.

Per set and jobs: W = wall time of the ``nsopt.studies.compare`` call, S = sum of the recorded solve
times, W/S (target < 1.5 with --jobs 1), and where the rest goes: loading the files in the workers,
the untimed warm-up, and the remainder (worker start and imports, the pipe, the records written to
disk); then the speed-up W(jobs 1) / W(jobs 2).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import nsopt.solvers  # noqa: E402,F401  (imported once here: not part of the first campaign's time)
import nsopt.studies as st  # noqa: E402
from nsopt import generate  # noqa: E402
from nsopt.data import data_dir  # noqa: E402
from nsopt.io import write_siconos_dat  # noqa: E402


def campaign(files, method, jobs, tmp, **kw):
    out = Path(tempfile.mkdtemp(dir=tmp))
    t0 = time.perf_counter()
    df = st.compare(files, method, jobs=jobs, timeout=300, out=out, progress=False, report=False, **kw)
    wall = time.perf_counter() - t0
    shutil.rmtree(out)
    return wall, df


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help="corpus folder (default: NSOPT_DATA or ../shared/siconos-data)")
    ap.add_argument("--gen-n", type=int, default=100, help="size of the generated LCPs")
    ap.add_argument("--gen-count", type=int, default=16, help="number of generated LCPs")
    ap.add_argument("--gen-iter", type=int, default=10000, help="PGS sweeps per generated LCP")
    args = ap.parse_args(argv)
    data = Path(args.data) if args.data else data_dir()
    lcp = sorted(str(p) for p in (data / "lcp").glob("*.dat"))
    tmp = Path(tempfile.mkdtemp(prefix="bench_harness_"))
    rows, walls = [], {}
    try:
        gen = []
        for i in range(args.gen_count):
            f = tmp / f"gen_lcp_{args.gen_n}_{i:02d}.dat"
            write_siconos_dat(generate.lcp(args.gen_n, seed=500 + i, matrix="p")[0], f)
            gen.append(str(f))
        sets = [(f"lcp corpus ({len(lcp)}), lemke", lcp, "lemke", {})] if lcp else []
        if not lcp:
            print(f"# no corpus at {data}: only the generated set")
        sets.append((f"P-LCP n={args.gen_n} ({len(gen)}), pgs x{args.gen_iter}", gen, "pgs",
                     {"tol": 1e-30, "max_iter": args.gen_iter}))
        for name, files, method, kw in sets:
            for jobs in (1, 2):
                w, df = campaign(files, method, jobs, tmp, **kw)
                s = float(df["time"].sum())
                load = float(df["load_time"].sum())
                warm = float(df["warmup_time"].sum())
                walls[(name, jobs)] = w
                rows.append((name, jobs, len(df), w, s, w / s, load, warm, w - s - load - warm))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\nharness overhead (W: campaign wall time, S: sum of the recorded solve times; load, warm-up: "
          "summed over the runs, in the workers; rest = W - S - load - warm-up)")
    head = (f"{'set':<34} {'jobs':>4} {'runs':>5} {'W s':>8} {'S s':>8} {'W/S':>8} {'load s':>7} "
            f"{'warm s':>7} {'rest s':>7}")
    print(head)
    print("-" * len(head))
    for name, jobs, n, w, s, ratio, load, warm, rest in rows:
        print(f"{name:<34} {jobs:>4} {n:>5} {w:>8.2f} {s:>8.3f} {ratio:>8.2f} {load:>7.2f} {warm:>7.2f} "
              f"{rest:>7.2f}")
    print()
    for name in dict.fromkeys(r[0] for r in rows):
        print(f"speed-up --jobs 2 over --jobs 1, {name}: {walls[(name, 1)] / walls[(name, 2)]:.2f}x")
    print("(target: W/S < 1.5 with --jobs 1. With --jobs 2, S sums the solve times of both workers.)")


if __name__ == "__main__":
    main()
