"""NSGS benchmark: nsopt's NSGS against Siconos 4.4 NSGS, measured in the same run.

    python benchmarks/bench_nsgs.py [--data DIR] [--timeout S] [--max-iter 10000] [--no-siconos]
                                    [--folders fc3d fc2d gfc3d] [--siconos-folders fc3d ...]

One campaign (:func:`nsopt.studies.compare`, folder ``benchmarks/results/bench_nsgs_campaign``,
made afresh each run: results table, summary, performance profiles): nsopt's ``nsgs`` on every file
of ``--folders`` and Siconos' NSGS (``--siconos NSGS``: ``siconos_bench.py``, skipped with a message
when Siconos is not available) on those of ``--siconos-folders``, tol 1e-8, ``--max-iter`` sweeps,
``--timeout`` seconds per solve for both. Times: the campaign's ``time`` column (nsopt: the method
and the final error check inside ``nsopt.solve``, on a fresh copy of the loaded problem, after the
worker's untimed JIT warm-up; Siconos: ``fc3d_driver``), median of 3 when under 1 s (``repeat=3``).

1. fc3d, nsopt vs Siconos: per problem contacts, nsopt's error, sweeps, time, Siconos' status, error
   and time, the ratio nsopt/Siconos; the median ratio over the problems where Siconos takes more than
   1 ms (:func:`nsopt.studies.tables.time_ratio`).
2. The fixed cost of one ``nsopt.solve`` call on a one-contact problem (FrictionContact3D_1c), with
   its split (method body, error measure), timed in this process (a micro-benchmark, not a campaign).
3. The per-problem table of nsopt NSGS on fc3d, fc2d and gfc3d (contacts, error, sweeps, time).

CSV files go to benchmarks/results/ (gitignored).
"""

from __future__ import annotations

import argparse
import csv
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nsopt
import nsopt.studies as st
from nsopt import generate
from nsopt.data import data_dir
from nsopt.studies.tables import by_problem, fmt_time, time_ratio

TOL = 1e-8


def campaign(data, a):
    """nsopt's NSGS on the folders, Siconos NSGS on the Siconos folders: one campaign folder."""
    out = a.out / "bench_nsgs_campaign"
    shutil.rmtree(out, ignore_errors=True)
    folders = list(dict.fromkeys(a.folders + a.siconos_folders))
    files = {fo: st.find_problems([data / fo])[0] if (data / fo).is_dir() else [] for fo in folders}
    both = [f for fo in a.siconos_folders for f in files[fo]]
    kw = {"tol": TOL, "max_iter": a.max_iter, "timeout": a.timeout, "repeat": 3, "out": out, "jobs": 1}
    if both and not a.no_siconos:
        st.compare(both, "nsgs", siconos="NSGS", siconos_bench=a.siconos_bench, report=False, **kw)
    return st.compare([f for fo in folders for f in files[fo]], "nsgs", **kw,   # the other folders
                      log=lambda m: m.startswith("resuming") or print(m, file=sys.stderr))


def fixed_cost(data, rows):
    """Per-call cost of nsopt.solve on a one-contact problem, and its split."""
    from nsopt import registry
    from nsopt.monitor import Monitor

    path = data / "fc3d" / "FrictionContact3D_1c.dat"
    p = nsopt.io.load(path) if path.is_file() else generate.friction_contact(nc=1, dim=3, seed=0)[0]
    nsopt.solve(p, method="nsgs")
    info = registry.get(p.kind, "nsgs")
    r = nsopt.solve(p, method="nsgs").r

    def per_call(f, n=2000):
        best = []
        for _ in range(7):
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            best.append((time.perf_counter() - t0) / n)
        return statistics.median(best)

    t_solve = per_call(lambda: nsopt.solve(p, method="nsgs"))
    t_method = per_call(lambda: info.func(p, Monitor(tol=TOL, problem=p, method="nsgs")))
    t_error = per_call(lambda: p.error(r))
    t_u = per_call(lambda: p.u(r))
    t_sic = next((r["siconos_time_s"] for r in rows if r["problem"] == "fc3d/FrictionContact3D_1c.dat"),
                 None)
    return {"problem": path.name if path.is_file() else "generated 1 contact", "solve_us": t_solve * 1e6,
            "method_us": t_method * 1e6, "error_us": t_error * 1e6, "u_us": t_u * 1e6,
            "siconos_us": t_sic * 1e6 if t_sic else None}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=None, help="siconos-data folder (default: NSOPT_DATA or ../shared/siconos-data)")
    ap.add_argument("--timeout", type=float, default=60.0, help="per-solve wall limit of the Siconos runs (s)")
    ap.add_argument("--max-iter", type=int, default=10000, help="sweep budget of both NSGS (Siconos bench default)")
    ap.add_argument("--siconos-bench", type=Path, default=None, help="path of siconos_bench.py")
    ap.add_argument("--no-siconos", action="store_true", help="nsopt only")
    ap.add_argument("--folders", nargs="+", default=["fc3d", "fc2d", "gfc3d"],
                    help="folders of the nsopt per-problem table (Siconos is compared on fc3d)")
    ap.add_argument("--siconos-folders", nargs="+", default=["fc3d"],
                    help="folders Siconos NSGS also runs on (default fc3d; fc2d, gfc3d add columns to table 3)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    a = ap.parse_args(argv)
    data = (a.data or data_dir()).resolve()
    if not data.is_dir():
        sys.exit(f"corpus folder {data} not found (--data or NSOPT_DATA)")
    a.out.mkdir(parents=True, exist_ok=True)

    df = campaign(data, a)
    has_sic = bool((df["source"] == "siconos").any())
    if not a.no_siconos and not has_sic:
        print("# Siconos NSGS not run (see the message above): nsopt only")
    wide = by_problem(df, ("status", "error", "nit", "time"))
    sic = "Siconos NSGS"

    def col(c, m, p):     # one cell, None when absent or NaN
        v = wide[(c, m)].get(p) if (c, m) in wide.columns else None
        return None if v is None or (isinstance(v, float) and np.isnan(v)) else v

    rows = []
    for p, r in wide.iterrows():
        folder = Path(p).parent.name
        ts, t = col("time", sic, p), col("time", "nsgs", p)
        rows.append(dict(problem=f"{folder}/{r[('name', '')]}", folder=folder,  # noqa: C408
                         contacts=r[("nc", "")],
                         status=col("status", "nsgs", p), error=col("error", "nsgs", p),
                         sweeps=col("nit", "nsgs", p), time_s=t,
                         siconos_status=col("status", sic, p) or "", siconos_error=col("error", sic, p),
                         siconos_sweeps=col("nit", sic, p), siconos_time_s=ts,
                         ratio=t / ts if ts and t else None))
    with open(a.out / "bench_nsgs.csv", "w", newline="") as fh:
        fields = list(rows[0]) if rows else ["problem"]
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: "" if r.get(k) is None else r[k] for k in fields})

    # 1. nsopt vs Siconos on fc3d
    fc3d = [r for r in rows if r["folder"] == "fc3d"]
    print("\n## NSGS on fc3d: nsopt vs Siconos 4.4 (tol 1e-8, same run)\n")
    print(f"| {'problem':45s} | contacts | nsopt error | sweeps | nsopt time | Siconos | Siconos time | ratio |")
    print(f"|{'-' * 47}|---------:|------------:|-------:|-----------:|---------|-------------:|------:|")
    for r in fc3d:
        sic_st = (f"{r['siconos_status']} {r['siconos_error']:.1e}" if r["siconos_error"] is not None
                  else (r["siconos_status"] or "-"))
        err = r["error"] if r["error"] is not None else float("nan")
        print(f"| {r['problem'][5:]:45s} | {r['contacts'] or '':>8} | {err:11.2e} | "
              f"{r['sweeps'] if r['sweeps'] is not None else '':>6} | {fmt_time(r['time_s']):>10} | "
              f"{sic_st:15s} | {fmt_time(r['siconos_time_s']):>12} | "
              f"{format(r['ratio'], '.2f') if r['ratio'] else '-':>5} |")
    fc3d_df = df[df["kind"].eq("fc3d")]
    solved = int((fc3d_df["method"].eq("nsgs") & fc3d_df["status"].eq("solved")).sum())
    sic_ok = int((fc3d_df["method"].eq("siconos:NSGS") & fc3d_df["status"].eq("solved")).sum())
    print(f"\nsolved to 1e-8: nsopt {solved}/{len(fc3d)}, Siconos {sic_ok}/{len(fc3d)}" if has_sic else
          f"\nsolved to 1e-8: nsopt {solved}/{len(fc3d)} (Siconos not run)")
    ratios = time_ratio(fc3d_df, "nsgs", sic, both_solved=False) if has_sic else []
    slow = fc3d_df[fc3d_df["method"].eq("siconos:NSGS") & (fc3d_df["time"] > 1e-3)]["problem"]
    ratios = [float(x) for p, x in getattr(ratios, "items", list)() if p in set(slow)]
    if ratios:
        print(f"median time ratio nsopt/Siconos over the {len(ratios)} problems where Siconos takes > 1 ms: "
              f"{statistics.median(ratios):.2f}x  (target <= 3x; < 1 means nsopt is faster)")

    # 2. fixed cost
    fc = fixed_cost(data, rows)
    with open(a.out / "bench_nsgs_fixed.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(fc))
        w.writeheader()
        w.writerow(fc)
    sic_txt = f", Siconos fc3d_driver {fc['siconos_us']:.1f} µs" if fc["siconos_us"] else ""
    print(f"\n## fixed cost of one nsopt.solve call ({fc['problem']}, method='nsgs')\n")
    print(f"nsopt.solve: {fc['solve_us']:.1f} µs per call (target < 100 µs){sic_txt}")
    print(f"  of which: method body {fc['method_us']:.1f} µs, problem.error {fc['error_us']:.1f} µs "
          f"(run once by solve to judge the status), problem.u {fc['u_us']:.1f} µs")

    # 3. per-problem table for the note
    print(f"\n## nsopt NSGS per problem (tol 1e-8, max_iter {a.max_iter})\n")
    print(f"| {'problem':55s} | contacts | status | error | sweeps | time | Siconos NSGS |")
    print(f"|{'-' * 57}|---------:|--------|------:|-------:|-----:|--------------|")
    for r in rows:
        err = r.get("error")
        sic_txt = "-"
        if r["siconos_status"]:
            sic_txt = " ".join([r["siconos_status"]] + ([f"{r['siconos_error']:.1e}"] if r["siconos_error"]
                                                         is not None else []) +
                               ([f"{r['siconos_sweeps']:.0f} sw"] if r["siconos_sweeps"] is not None else []) +
                               [fmt_time(r["siconos_time_s"])])
        print(f"| {r['problem']:55s} | {r['contacts'] or '':>8} | {r['status']} | "
              f"{(f'{err:.1e}' if err is not None else '-')} | "
              f"{r['sweeps'] if r['sweeps'] is not None else ''} | {fmt_time(r['time_s'])} | {sic_txt} |")
    print(f"\nCSV: {a.out / 'bench_nsgs.csv'}, {a.out / 'bench_nsgs_fixed.csv'}; campaign (results, "
          f"summary, profiles): {a.out / 'bench_nsgs_campaign'}")


if __name__ == "__main__":
    main()
