"""Lemke benchmark: nsopt's lexicographic Lemke against Siconos 4.4 LEMKE, measured in the same run.

    python benchmarks/bench_lemke.py [--sizes 100 300 1000] [--seeds 3] [--corpus] [--profile]
                                     [--no-siconos] [--data DIR]

1. Generates LCPs with nsopt.generate (P-matrices and SPD matrices, alternately) at each size,
   writes them as Siconos ``.dat`` files (nsopt.io.write_siconos_dat) in a temporary folder, runs
   Siconos' LEMKE on them (``../shared/tools/siconos_bench.py --folders lcp --solvers LEMKE`` under
   ``/usr/bin/python3``; skipped with a message when unavailable) and nsopt's ``method="lemke"`` on
   the same files read back with nsopt.io.load. Prints per problem: n, matrix, pivots, errors,
   times and the ratio nsopt/Siconos, then the median ratio at n >= 300 (target <= 2).
   Times: wall time of one solve (nsopt: the whole ``nsopt.solve`` call, error check included;
   Siconos: ``lcp_driver_DenseMatrix``), median of 3, after a JIT warm-up.
2. ``--corpus``: the same comparison on the corpus folders lcp, relay, mlcp, fc2d (Siconos LEMKE,
   MLCP LCP_LEMKE, FC2D LEMKE), with the solved counts of both at tol 1e-8.
3. ``--profile``: cProfile of nsopt's Lemke on the largest generated problem (top entries).

CSV files go to benchmarks/results/ (gitignored).
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nsopt  # noqa: E402
from nsopt import generate  # noqa: E402
from nsopt.data import data_dir  # noqa: E402
from nsopt.studies.siconos import run_folders  # noqa: E402
from nsopt.studies.timing import median_time  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
TOL = 1e-8
SICONOS_LABEL = {"lcp": "LEMKE", "relay": "LEMKE", "mlcp": "LCP_LEMKE", "fc2d": "LEMKE"}


def run_siconos(data, folders, solvers, out, timeout=120):
    return run_folders(data, folders, solvers, out, tol=TOL, timeout=timeout)


def time_nsopt(p, repeat=3):
    """Median wall time of nsopt.solve(p, 'lemke') (one run when it takes more than 1 s)."""
    sol, t = median_time(p, "lemke", repeat=repeat, tol=TOL)
    return t, sol


def warm_up():
    for n in (3, 8):
        p, _ = generate.lcp(n, seed=0, matrix="p")
        nsopt.solve(p, method="lemke")
    p, _ = generate.friction_contact(3, dim=2, seed=0)
    nsopt.solve(p, method="lemke")


def fmt_t(t):
    return f"{t:9.4f}" if t is not None else "        -"


def compare(files, sic, rel_root, label_of=None):
    rows = []
    hdr = (f"{'problem':44s} {'kind':5s} {'n':>5s} {'pivots':>6s} {'nsopt err':>10s} {'sic err':>10s} "
           f"{'sic it':>6s} {'t nsopt':>9s} {'t siconos':>9s} {'ratio':>7s}")
    print(hdr)
    print("-" * len(hdr))
    for f in files:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                p = nsopt.io.load(f)
            except nsopt.FormatError as e:
                print(f"{f.name:44s} not loadable: {str(e)[-60:]}")
                continue
            t, sol = time_nsopt(p)
        key = str(f.relative_to(rel_root))
        s = sic.get(key)
        ts = float(s["time_s"]) if s and s["time_s"] not in ("", None) else None
        s_ok = bool(s) and s["status"] == "ok"
        ratio = t / ts if (ts and s_ok and sol.success) else None
        row = dict(problem=key, kind=p.kind, n=p.size, pivots=sol.nit, nsopt_status=sol.status.value,
                   nsopt_error=sol.error, nsopt_time=t, siconos_status=s["status"] if s else "",
                   siconos_error=s["err_check"] if s else "", siconos_iter=s["iterations"] if s else "",
                   siconos_time=ts, ratio=ratio)
        rows.append(row)
        print(f"{key[-44:]:44s} {p.kind:5s} {p.size:5d} {sol.nit:6d} {sol.error:10.2e} "
              f"{(float(s['err_check']) if s and s['err_check'] not in ('', 'nan') else float('nan')):10.2e} "
              f"{(s['iterations'] if s else '-'):>6s} {fmt_t(t)} {fmt_t(ts)} "
              f"{(f'{ratio:7.2f}' if ratio else '      -')}"
              f"{'' if sol.success else '  nsopt: ' + sol.status.value}"
              f"{'' if not s or s_ok else '  siconos: ' + s['status']}")
    return rows


def write_csv(rows, path):
    if not rows:
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
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
    sic = {} if args.no_siconos else run_siconos(tmp, ["lcp"], ["LEMKE"], RESULTS / "siconos_lemke_gen.csv")
    rows = compare(files, sic, tmp)
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
    sic = {} if args.no_siconos else run_siconos(data, folders, ["LEMKE", "LCP_LEMKE"],
                                                 RESULTS / "siconos_lemke_corpus.csv", timeout=args.timeout)
    files = [f for fo in folders for f in sorted((data / fo).iterdir()) if f.suffix in (".dat", ".hdf5")]
    rows = compare(files, sic, data)
    print()
    for fo in folders:
        rs = [r for r in rows if r["problem"].startswith(fo + "/")]
        ns = sum(r["nsopt_status"] == "solved" for r in rs)
        ss = sum(r["siconos_status"] == "ok" for r in rs)
        sic_only = [r["problem"] for r in rs if r["siconos_status"] == "ok" and r["nsopt_status"] != "solved"]
        print(f"# {fo:6s} solved at tol {TOL:g}: nsopt lemke {ns}/{len(rs)}, Siconos {SICONOS_LABEL[fo]} "
              f"{ss}/{len(rs)}" + (f"; solved by Siconos only: {sic_only}" if sic_only else ""))
    write_csv(rows, RESULTS / "bench_lemke_corpus.csv")


def profile(files):
    f = max(files, key=lambda f: (f.name.split("_n")[1], "_p_" in f.name))  # largest n, P-matrix
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
    warm_up()
    print("## 1. generated LCPs (Siconos .dat files read by both)")
    _, files = generated(args)
    if args.corpus:
        print("\n## 2. corpus: lcp, relay, mlcp, fc2d")
        corpus(args)
    if args.profile:
        print("\n## 3. profile")
        profile(files)


if __name__ == "__main__":
    main()
