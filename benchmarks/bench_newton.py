"""Newton benchmark: nsopt's nsn-ac against Siconos 4.4 NSN_AC on fc3d, measured in the same run.

    python benchmarks/bench_newton.py [--data DIR] [--timeout 60] [--no-siconos] [--profile FILE ...]

1. Runs Siconos' NSN_AC (``../shared/tools/siconos_bench.py`` under ``/usr/bin/python3``, tol 1e-8,
   10000 iterations, per-solve limit ``--timeout``) on the fc3d folder (skipped with a message when
   siconos is not importable there), then nsopt's ``nsn-ac``, ``nsn-fb`` and ``prox`` on the same
   files (tol 1e-8, ``time_limit=--timeout``), and prints per problem: contacts, nsopt's error
   (problem.error), status, Newton iterations and time, Siconos' status and time, and the ratio
   nsopt/Siconos for nsn-ac; then the median ratio over the problems with >= 50 contacts (target
   <= 2) and the counts solved at 1e-8 by each method. Times: wall time of one ``nsopt.solve`` call
   on a loaded problem (including the one-off sparse pattern build cached on the problem and the
   final error check), median of 3 when under 1 s, after a JIT warm-up.
2. ``--profile FILE ...`` (default Capsules-i101-404.dat RockPile_tob1.dat): cProfile of nsn-ac on
   those files (second solve: the pattern is cached and the kernels compiled), top entries by tottime.

CSV files go to benchmarks/results/ (gitignored).
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import io
import math
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nsopt
from nsopt import generate
from nsopt.data import corpus_files, data_dir
from nsopt.studies.siconos import run_folders
from nsopt.studies.timing import median_time

TOL = 1e-8
METHODS = ("nsn-ac", "nsn-fb", "prox")


def run_siconos(data, timeout, out, bench):
    return run_folders(data, ["fc3d"], ["NSN_AC"], out, timeout=timeout, max_iter=10000, tol=TOL,
                       threads=1, tool=bench, what="Siconos NSN_AC")


def warm_up():
    for dim in (2, 3):
        p, _ = generate.friction_contact(nc=4, dim=dim, seed=0)
        for m in ("nsn-ac", "nsn-fb"):
            nsopt.solve(p, method=m)
    p, _ = generate.friction_contact(nc=4, dim=3, seed=0)
    nsopt.solve(p, method="prox")


def timed(problem, method, timeout):
    return median_time(problem, method, tol=TOL, time_limit=timeout)


def profile(path, method="nsn-ac", top=12):
    from nsopt.io import load

    p = load(path)
    nsopt.solve(p, method=method, tol=TOL)      # pattern cached, JIT warm
    p = load(path)
    pr = cProfile.Profile()
    pr.enable()
    s = nsopt.solve(p, method=method, tol=TOL)
    pr.disable()
    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(top)
    print(f"\n## cProfile of {method} on {path.name} ({s.status}, error {s.error:.2e}, {s.nit} it), by tottime")
    lines = buf.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    print("\n".join(lines[start:start + top + 1]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--no-siconos", action="store_true")
    ap.add_argument("--siconos-bench", type=Path, default=None,
                    help="siconos_bench.py (default: $NSOPT_SICONOS_BENCH, else ../shared/tools/siconos_bench.py)")
    ap.add_argument("--profile", nargs="*", default=["Capsules-i101-404.dat", "RockPile_tob1.dat"],
                    help="fc3d files to profile nsn-ac on (none: no profile)")
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    a = ap.parse_args(argv)
    import os

    if a.data is not None:
        os.environ["NSOPT_DATA"] = str(a.data.resolve())
    data = data_dir()
    files = corpus_files("fc3d")
    if not files:
        print(f"# no fc3d corpus at {data}: nothing to do")
        return 0
    res = ROOT / "benchmarks" / "results"
    res.mkdir(parents=True, exist_ok=True)
    sic = {} if a.no_siconos else run_siconos(data, a.timeout, res / "siconos_nsn_ac.csv", a.siconos_bench)

    from nsopt.io import load

    warm_up()
    rows, counts, ratios = [], {m: 0 for m in a.methods}, []
    print(f"\n## fc3d, tol {TOL:g}: nsopt {', '.join(a.methods)} vs Siconos NSN_AC (ratio = nsopt nsn-ac / Siconos)")
    head = f"{'problem':40s} {'nc':>4s}"
    for m in a.methods:
        head += f" | {m:>6s} {'status':8s} {'error':>8s} {'it':>5s} {'time':>8s}"
    head += " | Siconos  status     time  | ratio"
    print(head)
    for f in files:
        p = load(f)
        row = {"problem": f.name, "nc": p.nc}
        line = f"{f.name[:40]:40s} {p.nc:4d}"
        for m in a.methods:
            s, dt = timed(p, m, a.timeout)
            counts[m] += s.success
            row.update({f"{m}_status": s.status.value, f"{m}_error": s.error, f"{m}_nit": s.nit, f"{m}_time": dt})
            line += f" | {'':6s} {s.status.value[:8]:8s} {s.error:8.1e} {s.nit:5d} {dt:8.4f}"
        srow = sic.get(f"fc3d/{f.name}")
        ratio = None
        if srow:
            st = float(srow["time_s"]) if srow["time_s"] else float(srow.get("time_runs") or "nan")
            row.update(siconos_status=srow["status"], siconos_time=st, siconos_error=srow["err_check"])
            if "nsn-ac" in a.methods and math.isfinite(st) and st > 0:
                ratio = row["nsn-ac_time"] / st
                if p.nc >= 50 and srow["status"] == "ok" and row["nsn-ac_status"] == "solved":
                    ratios.append(ratio)
            line += f" | {srow['status'][:7]:7s} {st:9.4f} | {ratio:.2f}" if ratio is not None else \
                f" | {srow['status'][:7]:7s} {st:9.4f} |"
        row["ratio"] = ratio
        rows.append(row)
        print(line, flush=True)
    print(f"\nsolved at {TOL:g}: " + ", ".join(f"{m} {counts[m]}/{len(files)}" for m in a.methods)
          + "   (Siconos 4.4 anchors: NSN-AC 29/30, NSN-FB 28/30, PROX 29/30)")
    if sic:
        sic_ok = sum(1 for r in sic.values() if r["status"] == "ok")
        print(f"Siconos NSN_AC in this run: {sic_ok}/{len(sic)}")
    if ratios:
        print(f"median ratio nsopt nsn-ac / Siconos NSN_AC over {len(ratios)} problems with >= 50 contacts "
              f"solved by both: {statistics.median(ratios):.2f} (target <= 2); "
              f"per problem: {', '.join(f'{x:.2f}' for x in ratios)}")
    keys = sorted({k for r in rows for k in r}, key=lambda k: (k != "problem", k))
    with open(res / "bench_newton.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    for name in a.profile or ():
        pf = data / "fc3d" / name
        if pf.is_file():
            profile(pf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
