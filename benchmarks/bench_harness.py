"""Overhead of the campaign harness (nsopt.studies): campaign wall time W against the sum S of the
solve times it records, cold (a fresh command) and warm (a second ``compare()`` in one process).

    python benchmarks/bench_harness.py [--data DIR] [--repeat 3] [--warm-repeat 21] [--copies 4]
                                       [--gen-n 100] [--gen-count 8] [--gen-iter 80000]

S is the sum of the ``time`` column: the time of each ``nsopt.solve`` call as the worker recorded it.
Everything else in W is the harness' (starting Python and the workers, imports, the untimed JIT
warm-up, loading the files, the pipe, the records written to disk, the tables and the report).

1. **cold**: the command a user runs, ``python -m nsopt compare DATA/lcp --methods lemke --jobs J
   --out DIR`` (a fresh folder each time; the same program as the ``nsopt`` script), W the wall time
   of the whole command, for J = 1 and 2; the median of ``--repeat`` runs. The corpus folder ``lcp``
   holds 16 small LCPs: lemke solves each in well under a millisecond, so W is nearly all harness.
   The split of W: the time spent outside ``compare()`` (interpreter start, imports, the summary
   printed) and inside it per phase, as the campaign records it in ``logs/timings.json``.
2. **warm**: in one process, ``nsopt.studies.compare(lcp_files, "lemke", jobs=J)`` once to start
   the workers, then ``--warm-repeat`` more times (median): the notebook user's second call. With
   ``out=None`` (the DataFrame only) and with ``out=DIR`` (a fresh folder: results.csv, .parquet,
   summary.csv and the profiles written; and ``report=False``: the tables only).
3. **per task**: warm, jobs 1, out=None, on the lcp folder and on ``--copies`` copies of it (16 and
   16 x copies tasks): the fixed cost F and the cost per task c from W - S = F + c n.
4. ``--gen-count`` generated P-matrix LCPs of size ``--gen-n`` solved by ``pgs`` for exactly
   ``--gen-iter`` sweeps (``tol=1e-30`` is never reached: about a second of work per solve), cold,
   jobs 1 and 2: the ratio once solves cost something. ``--gen-count 0`` skips it.

Then the speed-ups W(jobs 1) / W(jobs 2), and the target, W/S < 1.5 with ``--jobs 1`` on the lcp
folder, checked on the warm figure (the harness' own cost per call and per task) and shown for the
cold one (which adds the fixed cost of a command: ~2-3 s of Python, imports and figures against
S ~ 5-10 ms; its floor is discussed in ``benchmarks/README.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nsopt.studies as st
from nsopt import generate
from nsopt.data import data_dir
from nsopt.io import write_siconos_dat


def cold(path, method, jobs, tmp, extra=()):
    """One fresh command-line campaign: (W, S, rows, phase timings or {})."""
    out = Path(tempfile.mkdtemp(dir=tmp))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "nsopt", "compare", str(path), "--methods", method, "--jobs", str(jobs),
           "--out", str(out), *extra]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if r.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-2000:]}")
    df = st.load_results(out)
    tj = out / "logs" / "timings.json"
    phases = json.loads(tj.read_text()) if tj.is_file() else {}
    shutil.rmtree(out)
    return wall, float(df["time"].sum()), len(df), phases


def warm(files, method, jobs, tmp, out=False, **kw):
    """One compare() call in this process: (W, S, rows)."""
    folder = Path(tempfile.mkdtemp(dir=tmp)) if out else None
    t0 = time.perf_counter()
    df = st.compare(files, method, jobs=jobs, out=folder, progress=False, **kw)
    wall = time.perf_counter() - t0
    if folder is not None:
        shutil.rmtree(folder)
    return wall, float(df["time"].sum()), len(df)


def median_runs(fn, repeat):
    runs = [fn() for _ in range(repeat)]
    k = sorted(range(len(runs)), key=lambda i: runs[i][0])[len(runs) // 2]
    return runs[k]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help="corpus folder (default: NSOPT_DATA or ../shared/siconos-data)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per cold figure (median)")
    ap.add_argument("--warm-repeat", type=int, default=21,
                    help="runs per warm figure (median; a warm call takes milliseconds)")
    ap.add_argument("--copies", type=int, default=4, help="copies of the lcp folder for the per-task fit")
    ap.add_argument("--gen-n", type=int, default=100, help="size of the generated LCPs")
    ap.add_argument("--gen-count", type=int, default=8, help="number of generated LCPs (0: skip)")
    ap.add_argument("--gen-iter", type=int, default=80000, help="PGS sweeps per generated LCP")
    args = ap.parse_args(argv)
    data = Path(args.data) if args.data else data_dir()
    lcp_dir = data / "lcp"
    lcp = sorted(str(p) for p in lcp_dir.glob("*.dat"))
    if not lcp:
        sys.exit(f"no lcp folder at {lcp_dir} (--data DIR or NSOPT_DATA)")
    tmp = Path(tempfile.mkdtemp(prefix="bench_harness_"))
    rows, walls, phases = [], {}, {}
    try:
        # 1. cold: the command line
        for jobs in (1, 2):
            w, s, n, ph = median_runs(lambda j=jobs: cold(lcp_dir, "lemke", j, tmp), args.repeat)
            rows.append(("cold", f"lcp ({len(lcp)}), lemke, CLI", jobs, n, w, s))
            walls[("cold", jobs)], phases[jobs] = w, (w, ph)
        # 2. warm: a second compare() in this process
        warm(lcp, "lemke", 1, tmp)
        for jobs in (1, 2):
            warm(lcp, "lemke", jobs, tmp)
            w, s, n = median_runs(lambda j=jobs: warm(lcp, "lemke", j, tmp), args.warm_repeat)
            rows.append(("warm", f"lcp ({len(lcp)}), lemke, out=None", jobs, n, w, s))
            walls[("warm", jobs)] = w
        for label, kw in (("out=DIR", {}), ("out=DIR, report=False", {"report": False})):
            w, s, n = median_runs(lambda k=kw: warm(lcp, "lemke", 1, tmp, out=True, **k), args.repeat)
            rows.append(("warm", f"lcp ({len(lcp)}), lemke, {label}", 1, n, w, s))
        # 3. per task: W - S = F + c n
        many = []
        for k in range(args.copies):
            d = tmp / f"copy{k}"
            d.mkdir()
            for f in lcp:
                shutil.copy2(f, d / Path(f).name)   # the same files again: same mtime
            many += sorted(str(p) for p in d.glob("*.dat"))
        warm(many, "lemke", 1, tmp)
        w1, s1, n1 = median_runs(lambda: warm(lcp, "lemke", 1, tmp), args.warm_repeat)
        w2, s2, n2 = median_runs(lambda: warm(many, "lemke", 1, tmp), args.warm_repeat)
        rows.append(("warm", f"lcp x{args.copies} ({n2}), lemke, out=None", 1, n2, w2, s2))
        c = ((w2 - s2) - (w1 - s1)) / (n2 - n1)
        fixed = (w1 - s1) - c * n1
        # 4. generated problems whose solves cost about a second
        if args.gen_count:
            gdir = tmp / "gen"
            gdir.mkdir()
            for i in range(args.gen_count):
                write_siconos_dat(generate.lcp(args.gen_n, seed=500 + i, matrix="p")[0],
                                  gdir / f"gen_lcp_{args.gen_n}_{i:02d}.dat")
            name = f"P-LCP n={args.gen_n} ({args.gen_count}), pgs x{args.gen_iter}, CLI"
            for jobs in (1, 2):
                w, s, n, _ = cold(gdir, "pgs", jobs, tmp, ["--tol", "1e-30", "--max-iter",
                                                           str(args.gen_iter)])
                rows.append(("cold", name, jobs, n, w, s))
                walls[("gen", jobs)] = w
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print("\nharness overhead (W: wall time, S: sum of the recorded solve times; "
          f"median of {args.repeat} runs cold, {args.warm_repeat} warm (out=None), {args.repeat} "
          f"warm (out=DIR); one run of the generated set)")
    head = f"{'':<5} {'set':<44} {'jobs':>4} {'runs':>5} {'W s':>8} {'S s':>8} {'W/S':>8}"
    print(head)
    print("-" * len(head))
    for kind, name, jobs, n, w, s in rows:
        print(f"{kind:<5} {name:<44} {jobs:>4} {n:>5} {w:>8.3f} {s:>8.4f} {w / s:>8.2f}")
    print(f"\nper task (warm, jobs 1, out=None; W - S = F + c n over {n1} and {n2} tasks): "
          f"c = {c * 1e6:.0f} us per task, F = {fixed * 1e3:.1f} ms per compare() call")
    for jobs, (w, ph) in phases.items():
        if ph:
            inside = ph.get("total", 0.0)
            parts = ", ".join(f"{k} {v:.3f}" for k, v in ph.items() if k != "total")
            print(f"cold --jobs {jobs}: W {w:.2f} s = outside compare() (interpreter, imports, printing, "
                  f"exit) {w - inside:.2f} s + compare() {inside:.2f} s ({parts})")
    print()
    for key, label in (("cold", "cold, lcp"), ("warm", "warm, lcp"), ("gen", "cold, generated")):
        if (key, 2) in walls:
            print(f"speed-up --jobs 2 over --jobs 1, {label}: {walls[(key, 1)] / walls[(key, 2)]:.2f}x")
    print("(With --jobs 2, S sums the solve times of both workers.)")
    by = {(kind, jobs, name.split(",")[-1].strip()): (w, s) for kind, name, jobs, n, w, s in rows
          if name.startswith("lcp (")}
    print("\n== target: W/S < 1.5 with --jobs 1 on the lcp folder ==")
    w, s = by[("warm", 1, "out=None")]
    print(f"warm (a second compare() in the process, out=None): W/S = {w / s:.2f} -> "
          f"{'met' if w / s < 1.5 else 'NOT met'}  (W {w * 1e3:.1f} ms, S {s * 1e3:.1f} ms; "
          f"F {fixed * 1e3:.1f} ms per call + c {c * 1e6:.0f} us per task)")
    w, s = by[("cold", 1, "CLI")]
    print(f"cold (the nsopt compare command):                    W/S = {w / s:.0f} -> "
          f"{'met' if w / s < 1.5 else 'NOT met'}  (W {w:.2f} s, of which {w - s:.2f} s fixed per "
          f"command: see benchmarks/README.md for its floor)")
    if ("gen", 1) in walls:
        print(f"speed-up --jobs 2: {walls[('gen', 1)] / walls[('gen', 2)]:.2f}x (generated set), "
              f"{walls[('cold', 1)] / walls[('cold', 2)]:.2f}x (lcp, cold)")


if __name__ == "__main__":
    main()
