"""Newton benchmark: nsopt's nsn-ac against Siconos 4.4 NSN_AC on fc3d, measured in the same run.

    python benchmarks/bench_newton.py [--data DIR] [--timeout 60] [--no-siconos] [--methods nsn-ac ...]
                                      [--files NAME ...] [--profile FILE ...]

1. One campaign (:func:`nsopt.studies.compare`, folder ``benchmarks/results/bench_newton_campaign``,
   made afresh: results table, summary, profiles): nsopt's ``nsn-ac``, ``nsn-fb`` and ``prox`` and
   Siconos' NSN_AC (``--siconos NSN_AC`` through ``siconos_bench.py``, 10000 iterations; skipped with a
   message when Siconos is not available) on the fc3d folder, tol 1e-8, ``--timeout`` seconds per
   solve for all. Printed per problem: contacts, nsopt's error, status, Newton iterations and time,
   Siconos' status and time, the ratio nsopt nsn-ac / Siconos; then the median ratio over the
   problems with >= 50 contacts solved by both (:func:`nsopt.studies.tables.time_ratio`; target
   <= 2) and the counts solved at 1e-8. Times: the campaign's ``time`` column (the method and the final
   error check inside ``nsopt.solve``, on a fresh copy of the loaded problem, including the one-off
   sparse pattern build cached on it, after the worker's untimed JIT warm-up), median of 3 under 1 s.
2. ``--profile FILE ...`` (default Capsules-i101-404.dat RockPile_tob1.dat): cProfile of nsn-ac on
   those files (second solve: the pattern is cached and the kernels compiled), top entries by tottime.

CSV files go to benchmarks/results/ (gitignored).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nsopt
import nsopt.studies as st
from nsopt.data import corpus_files, data_dir
from nsopt.studies.tables import by_problem, time_ratio

TOL = 1e-8
METHODS = ("nsn-ac", "nsn-fb", "prox")
SICONOS = "Siconos NSN_AC"


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
    ap.add_argument("--files", nargs="*", help="only these fc3d file names")
    a = ap.parse_args(argv)
    import os

    if a.data is not None:
        os.environ["NSOPT_DATA"] = str(a.data.resolve())
    data = data_dir()
    files = [f for f in corpus_files("fc3d") if not a.files or f.name in a.files]
    if not files:
        print(f"# no fc3d corpus at {data}: nothing to do")
        return 0
    res = ROOT / "benchmarks" / "results"
    out = res / "bench_newton_campaign"
    shutil.rmtree(out, ignore_errors=True)
    df = st.compare(files, a.methods, tol=TOL, timeout=a.timeout, repeat=3, out=out,
                    siconos=None if a.no_siconos else "NSN_AC", siconos_bench=a.siconos_bench)
    # (Siconos runs with its tool's 10000 iterations: max_iter=None leaves each its own default)
    wide = by_problem(df, ("status", "error", "nit", "time"))
    has_sic = ("time", SICONOS) in wide.columns
    ratio = time_ratio(df, "nsn-ac", SICONOS, both_solved=False) if has_sic and "nsn-ac" in a.methods else {}

    print(f"\n## fc3d, tol {TOL:g}: nsopt {', '.join(a.methods)} vs Siconos NSN_AC (ratio = nsopt nsn-ac / Siconos)")
    head = f"{'problem':40s} {'nc':>4s}"
    for m in a.methods:
        head += f" | {m:>6s} {'status':8s} {'error':>8s} {'it':>5s} {'time':>8s}"
    print(head + (" | Siconos  status     time  | ratio" if has_sic else ""))
    big = []
    for p, r in wide.iterrows():
        line = f"{r[('name', '')][:40]:40s} {int(r[('nc', '')] or 0):4d}"
        for m in a.methods:
            e, it, t = r[("error", m)], r[("nit", m)], r[("time", m)]
            line += (f" | {'':6s} {str(r[('status', m)])[:8]:8s} {e:8.1e} {it:5.0f} {t:8.4f}"
                     if isinstance(r[("status", m)], str) else f" | {'':6s} {'-':8s}")
        if has_sic:
            line += f" | {str(r[('status', SICONOS)])[:7]:7s} {r[('time', SICONOS)]:9.4f} |"
            if p in ratio:
                line += f" {ratio[p]:.2f}"
                if (r[("nc", "")] or 0) >= 50 and r[("status", SICONOS)] == "solved" == r[("status", "nsn-ac")]:
                    big.append(ratio[p])
        print(line, flush=True)
    solved = {m: int(df[df["method"].eq(m)]["status"].eq("solved").sum()) for m in a.methods}
    print(f"\nsolved at {TOL:g}: " + ", ".join(f"{m} {solved[m]}/{len(files)}" for m in a.methods)
          + "   (Siconos 4.4 anchors: NSN-AC 29/30, NSN-FB 28/30, PROX 29/30)")
    if has_sic:
        sic_ok = int(df[df["method"].eq("siconos:NSN_AC")]["status"].eq("solved").sum())
        print(f"Siconos NSN_AC in this run: {sic_ok}/{len(files)}")
    if big:
        print(f"median ratio nsopt nsn-ac / Siconos NSN_AC over {len(big)} problems with >= 50 contacts "
              f"solved by both: {statistics.median(big):.2f} (target <= 2); "
              f"per problem: {', '.join(f'{x:.2f}' for x in big)}")
    wide.to_csv(res / "bench_newton.csv")
    print(f"# CSV: {res / 'bench_newton.csv'}; campaign (results, summary, profiles): {out}")
    for name in a.profile or ():
        pf = data / "fc3d" / name
        if pf.is_file():
            profile(pf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
