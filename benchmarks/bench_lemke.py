"""Lemke benchmark: nsopt's lexicographic Lemke against Siconos 4.4 LEMKE, measured in the same run.

    python benchmarks/bench_lemke.py [--sizes 100 300 1000] [--seeds 3] [--corpus] [--profile]
                                     [--no-siconos] [--data DIR] [--timeout 120]

1. Generates LCPs with nsopt.generate (P-matrices and SPD matrices, alternately) at each size,
   writes them as Siconos ``.dat`` files (nsopt.io.write_siconos_dat) in a temporary folder, and runs
   one campaign on them (:func:`nsopt.studies.compare`: nsopt's ``lemke`` and, with ``--siconos
   LEMKE``, Siconos' LEMKE through ``siconos_bench.py``; skipped with a message when unavailable).
   Prints per problem: n, pivots, errors, times and the ratio nsopt/Siconos when both solved, then the
   median ratio per size and at n >= 300 (target <= 2). Times: the campaign's ``time`` column (nsopt:
   the method and the final error check inside ``nsopt.solve``, after the worker's untimed JIT
   warm-up; Siconos: ``lcp_driver_DenseMatrix``), median of 3 under 1 s.
2. ``--corpus``: the same campaign on the corpus folders lcp, relay, mlcp, fc2d (Siconos LEMKE,
   MLCP LCP_LEMKE, FC2D LEMKE), with the solved counts of both at tol 1e-8.
3. ``--profile``: cProfile of nsopt's Lemke on the largest generated problem (top entries).

The campaign folders (results, summary, profiles) are ``benchmarks/results/bench_lemke_gen`` and
``bench_lemke_corpus``; CSV files go to benchmarks/results/ (gitignored).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nsopt
import nsopt.studies as st
from nsopt import generate
from nsopt.data import data_dir
from nsopt.studies.tables import by_problem, time_ratio

RESULTS = ROOT / "benchmarks" / "results"
TOL = 1e-8
SICONOS_LABEL = {"lcp": "LEMKE", "relay": "LEMKE", "mlcp": "LCP_LEMKE", "fc2d": "LEMKE"}


def campaign(files, name, args):
    """nsopt's lemke and Siconos' Lemke solvers on ``files``: (per-problem table, ratio per problem)."""
    out = RESULTS / name
    shutil.rmtree(out, ignore_errors=True)
    labels = sorted(set(SICONOS_LABEL.values()))
    df = st.compare(files, "lemke", tol=TOL, timeout=args.timeout, repeat=3, out=out,
                    siconos=None if args.no_siconos else labels)
    df = df[df["status"] != "skipped"]           # a Siconos label without a solver for the kind
    sic = df["method"].str.startswith("siconos:")
    df.loc[sic, "method"] = "siconos:LEMKE"      # one Siconos column (LEMKE or LCP_LEMKE by kind)
    wide = by_problem(df, ("status", "error", "nit", "time"))
    ratio = time_ratio(df, "lemke", "Siconos LEMKE") if sic.any() else {}
    print(f"{'problem':44s} {'kind':5s} {'n':>5s} {'pivots':>6s} {'nsopt err':>10s} {'sic err':>10s} "
          f"{'sic it':>6s} {'t nsopt':>9s} {'t siconos':>9s} {'ratio':>7s}")
    print("-" * 118)
    rows = []
    def cell(r, c, m):
        v = r.get((c, m)) if (c, m) in wide.columns else None
        return None if v is None or (isinstance(v, float) and np.isnan(v)) else v

    for p, r in wide.iterrows():
        def get(c, m, r=r):
            return cell(r, c, m)
        st_n, st_s = get("status", "lemke"), get("status", "Siconos LEMKE")
        if st_n == "load_error":
            print(f"{r[('name', '')]:44s} not loadable by nsopt")
            continue
        row = dict(problem=p, kind=r[("kind", "")], n=int(r[("size", "")] or 0),  # noqa: C408
                   pivots=get("nit", "lemke"), nsopt_status=st_n, nsopt_error=get("error", "lemke"),
                   nsopt_time=get("time", "lemke"), siconos_status=st_s or "",
                   siconos_error=get("error", "Siconos LEMKE"), siconos_iter=get("nit", "Siconos LEMKE"),
                   siconos_time=get("time", "Siconos LEMKE"), ratio=ratio.get(p) if len(ratio) else None)
        rows.append(row)

        def f(x, fmt):
            return format(x, fmt) if x is not None else format("-", fmt.rstrip("efg").split(".")[0] or ">")
        print(f"{r[('name', '')][-44:]:44s} {row['kind']:5s} {row['n']:5d} {f(row['pivots'], '6.0f')} "
              f"{f(row['nsopt_error'], '10.2e')} {f(row['siconos_error'], '10.2e')} "
              f"{f(row['siconos_iter'], '6.0f')} {f(row['nsopt_time'], '9.4f')} {f(row['siconos_time'], '9.4f')} "
              f"{f(row['ratio'], '7.2f')}"
              f"{'' if st_n == 'solved' else '  nsopt: ' + str(st_n)}"
              f"{'' if st_s in (None, 'solved') else '  siconos: ' + st_s}")
    return rows


def write_csv(rows, path):
    if not rows:
        return
    import pandas as pd

    pd.DataFrame(rows).to_csv(path, index=False)
    print(f"# wrote {path}")


def generated(args):
    tmp = Path(tempfile.mkdtemp(prefix="nsopt_lemke_"))
    (tmp / "lcp").mkdir()
    files = []
    for n in args.sizes:
        for s in range(args.seeds):
            matrix = "p" if s % 2 == 0 else "spd"
            p, _ = generate.lcp(n, seed=1000 * n + s, matrix=matrix)
            f = tmp / "lcp" / f"lcp_gen_{matrix}_n{n:05d}_s{s}.dat"
            nsopt.io.write_siconos_dat(p, f)
            files.append(f)
    print(f"# {len(files)} generated LCPs in {tmp}")
    rows = campaign(files, "bench_lemke_gen", args)
    for n in args.sizes:
        rs = [r["ratio"] for r in rows if r["n"] == n and r["ratio"]]
        if rs:
            print(f"# n = {n:5d}: median ratio nsopt/Siconos = {statistics.median(rs):.2f} "
                  f"over {len(rs)} problems")
    big = [r["ratio"] for r in rows if r["n"] >= 300 and r["ratio"]]
    if big:
        print(f"# median ratio nsopt/Siconos at n >= 300: {statistics.median(big):.2f} "
              f"over {len(big)} problems (target <= 2)")
    write_csv(rows, RESULTS / "bench_lemke_gen.csv")
    return tmp, files


def corpus(args):
    data = Path(args.data) if args.data else data_dir()
    folders = ["lcp", "relay", "mlcp", "fc2d"]
    files, _ = st.find_problems([data / fo for fo in folders])
    rows = campaign(files, "bench_lemke_corpus", args)
    print()
    for fo in folders:
        rs = [r for r in rows if Path(r["problem"]).parent.name == fo]
        every = [f for f in files if Path(f).parent.name == fo]
        ns = sum(r["nsopt_status"] == "solved" for r in rs)
        ss = sum(r["siconos_status"] == "solved" for r in rs)
        sic_only = [Path(r["problem"]).name for r in rs
                    if r["siconos_status"] == "solved" and r["nsopt_status"] != "solved"]
        print(f"# {fo:6s} solved at tol {TOL:g}: nsopt lemke {ns}/{len(every)}, Siconos {SICONOS_LABEL[fo]} "
              f"{ss}/{len(every)}" + (f"; solved by Siconos only: {sic_only}" if sic_only else ""))
    write_csv(rows, RESULTS / "bench_lemke_corpus.csv")


def profile(files):
    f = max(files, key=lambda f: (f.name.split("_n")[1], "_p_" in f.name))  # largest n, P-matrix
    nsopt.solve(nsopt.io.load(f), method="lemke")      # JIT warm-up (the campaign's was in its worker)
    p = nsopt.io.load(f)
    pr = cProfile.Profile()
    pr.enable()
    nsopt.solve(p, method="lemke")
    pr.disable()
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(8)
    print(f"# cProfile of nsopt lemke on {f.name}")
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:3000])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000])
    ap.add_argument("--seeds", type=int, default=3, help="problems per size (P and SPD alternately)")
    ap.add_argument("--corpus", action="store_true",
                    help="also compare on lcp, relay, mlcp, fc2d of the corpus")
    ap.add_argument("--profile", action="store_true", help="cProfile nsopt's Lemke on the largest problem")
    ap.add_argument("--no-siconos", action="store_true")
    ap.add_argument("--data", default=None,
                    help="corpus root (default: NSOPT_DATA or ../shared/siconos-data)")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    RESULTS.mkdir(parents=True, exist_ok=True)
    print("## 1. generated LCPs (Siconos .dat files read by both)")
    tmp, files = generated(args)
    if args.corpus:
        print("\n## 2. corpus: lcp, relay, mlcp, fc2d")
        corpus(args)
    if args.profile:
        print("\n## 3. profile")
        profile(files)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
