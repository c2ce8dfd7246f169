"""Overhead of the campaign harness (nsopt.studies): campaign wall time against the sum of the solve
times it records, with --jobs 1, and the speed-up of --jobs 2.

    python benchmarks/bench_harness.py [--data DIR] [--method lemke] [--gen-n 300] [--gen-count 12]

Two problem sets, each run as a fresh campaign (a new folder, no resume):

1. the corpus folder ``lcp`` (16 small LCPs, sub-millisecond solves);
2. ``--gen-count`` generated P-matrix LCPs of size ``--gen-n`` written as Siconos .dat files (solves of
   tens of milliseconds), so that the per-run overhead can be compared with a solve that costs
   something.

Per set and jobs: W = wall time of the ``nsopt.studies.compare`` call; S = sum of the recorded solve
times; W1 = wall time of the same campaign on the set's first file alone (worker start, imports,
warm-up, one solve: the fixed cost). Printed: W / S (target < 1.5 with --jobs 1), the fixed cost W1,
the steady-state ratio (W - W1) / (S - s1) and the overhead per run ((W - W1) - (S - s1)) / (N - 1), and
the speed-up W(jobs 1) / W(jobs 2).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import nsopt.studies as st  # noqa: E402
from nsopt import generate  # noqa: E402
from nsopt.data import data_dir  # noqa: E402
from nsopt.io import write_siconos_dat  # noqa: E402


def campaign(files, method, jobs, tmp):
    out = Path(tempfile.mkdtemp(dir=tmp))
    t0 = time.perf_counter()
    df = st.compare(files, method, jobs=jobs, timeout=120, out=out, progress=False, report=False)
    wall = time.perf_counter() - t0
    shutil.rmtree(out)
    return wall, df


def measure(name, files, method, tmp):
    rows = []
    w1, d1 = campaign(files[:1], method, 1, tmp)
    s1 = float(d1["time"].sum())
    walls = {}
    for jobs in (1, 2):
        w, df = campaign(files, method, jobs, tmp)
        s = float(df["time"].sum())
        walls[jobs] = w
        n = len(df)
        steady = (w - w1) / max(s - s1, 1e-12)
        per_run = ((w - w1) - (s - s1)) / max(n - 1, 1)
        rows.append((name, jobs, n, int((df["status"] == "solved").sum()), w, s, w / s, w1, steady,
                     per_run * 1e3))
    return rows, walls[1] / walls[2]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help="corpus folder (default: NSOPT_DATA or ../shared/siconos-data)")
    ap.add_argument("--method", default="lemke", help="the cheap method")
    ap.add_argument("--gen-n", type=int, default=300, help="size of the generated LCPs")
    ap.add_argument("--gen-count", type=int, default=12, help="number of generated LCPs")
    args = ap.parse_args(argv)
    data = Path(args.data) if args.data else data_dir()
    lcp = sorted(str(p) for p in (data / "lcp").glob("*.dat"))
    tmp = Path(tempfile.mkdtemp(prefix="bench_harness_"))
    try:
        gen = []
        for i in range(args.gen_count):
            f = tmp / f"gen_lcp_{args.gen_n}_{i:02d}.dat"
            write_siconos_dat(generate.lcp(args.gen_n, seed=500 + i, matrix="p")[0], f)
            gen.append(str(f))
        rows, speed = [], {}
        sets = [(f"lcp corpus ({len(lcp)})", lcp)] if lcp else []
        if not lcp:
            print(f"# no corpus at {data}: only the generated set")
        sets.append((f"generated P-LCP n={args.gen_n} ({len(gen)})", gen))
        for name, files in sets:
            r, sp = measure(name, files, args.method, tmp)
            rows += r
            speed[name] = sp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nharness overhead, method {args.method} (W: campaign wall, S: sum of recorded solve times, "
          f"W1: the same campaign on one file = fixed cost)")
    head = (f"{'set':<30} {'jobs':>4} {'runs':>5} {'solved':>6} {'W s':>8} {'S s':>8} {'W/S':>8} "
            f"{'W1 s':>7} {'steady':>7} {'ms/run':>7}")
    print(head)
    print("-" * len(head))
    for name, jobs, n, ok, w, s, ratio, w1, steady, per in rows:
        print(f"{name:<30} {jobs:>4} {n:>5} {ok:>6} {w:>8.2f} {s:>8.3f} {ratio:>8.2f} {w1:>7.2f} "
              f"{steady:>7.2f} {per:>7.2f}")
    print()
    for name, sp in speed.items():
        print(f"speed-up --jobs 2 over --jobs 1 on {name}: {sp:.2f}x")
    print("(target: W/S < 1.5 with --jobs 1; steady = (W - W1) / (S - s1), the ratio once the workers run; "
          "ms/run = harness time per run beyond its solve: loading the file in the worker, the "
          "warm-up lookup, the pipe, the record written to disk)")


if __name__ == "__main__":
    main()
