"""NSGS benchmark: nsopt's NSGS against Siconos 4.4 NSGS, measured in the same run.

    python benchmarks/bench_nsgs.py [--data DIR] [--timeout S]

1. Runs Siconos' NSGS (``../shared/tools/siconos_bench.py`` under ``/usr/bin/python3``) on the fc3d
   folder (skipped with a message when siconos is not importable there), then nsopt's NSGS on the
   same files, and prints per problem: contacts, nsopt error, sweeps, nsopt time, Siconos time and
   the ratio nsopt/Siconos, with the median ratio over the problems where Siconos takes > 1 ms.
   Times: wall time of one solve on a freshly loaded problem (nsopt: the whole ``nsopt.solve``
   call including the one-off CSC conversion and the final error check; Siconos: ``fc3d_driver``),
   median of 3 when under 1 s, after a JIT warm-up (compile time is never counted).
2. The fixed cost of one ``nsopt.solve`` call on a one-contact problem (FrictionContact3D_1c),
   with its split (method body, error measure) so that the overhead is visible.
3. The per-problem table of nsopt NSGS on fc2d, fc3d and gfc3d (contacts, error, sweeps, time).

CSV files go to benchmarks/results/ (gitignored).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nsopt  # noqa: E402
from nsopt import generate  # noqa: E402
from nsopt.data import data_dir  # noqa: E402
from nsopt.studies.siconos import run_folders  # noqa: E402
from nsopt.studies.timing import median_time  # noqa: E402

TOL = 1e-8


def run_siconos(data, folders, timeout, max_iter, out, bench):
    """Siconos NSGS through siconos_bench.py; {'folder/file': row} (time_s, status, err_check, iterations)."""
    return run_folders(data, folders, ["NSGS"], out, timeout=timeout, max_iter=max_iter, tool=bench,
                       what="Siconos NSGS")


def warm_up():
    """Compile (or load from the numba cache) every kernel before timing anything."""
    for dim in (2, 3):
        p, _ = generate.friction_contact(nc=3, dim=dim, seed=0)
        nsopt.solve(p, method="nsgs")
        p, _ = generate.global_friction_contact(nc=2, ndof=8, dim=dim, seed=0)
        nsopt.solve(p, method="nsgs")


def time_nsopt(path, max_iter):
    """(solution, problem, wall seconds): median of 3 fresh-load solves when one takes < 1 s."""
    sol, t = median_time(lambda: nsopt.io.load(path), "nsgs", tol=TOL, max_iter=max_iter)
    return sol, sol.problem, t


def fmt_t(t):
    if t is None or (isinstance(t, float) and np.isnan(t)):
        return "-"
    return f"{t * 1e3:.3f}ms" if t < 1 else f"{t:.3f}s"


def fixed_cost(data, sic_rows):
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
    t_method = per_call(lambda: info.func(p, Monitor(tol=TOL)))
    t_error = per_call(lambda: p.error(r))
    t_u = per_call(lambda: p.u(r))
    srow = sic_rows.get("fc3d/FrictionContact3D_1c.dat")
    t_sic = float(srow["time_s"]) if srow and srow.get("time_s") else None
    return dict(problem=path.name if path.is_file() else "generated 1 contact", solve_us=t_solve * 1e6,
                method_us=t_method * 1e6, error_us=t_error * 1e6, u_us=t_u * 1e6,
                siconos_us=t_sic * 1e6 if t_sic else None)


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
    bench = a.siconos_bench     # None: $NSOPT_SICONOS_BENCH, else ../shared/tools/siconos_bench.py

    sic = {} if a.no_siconos else run_siconos(data, a.siconos_folders, a.timeout, a.max_iter,
                                              a.out / "siconos_nsgs.csv", bench)
    warm_up()

    rows = []
    for folder in a.folders:
        files = sorted(f for f in (data / folder).iterdir() if f.suffix in (".dat", ".hdf5")) \
            if (data / folder).is_dir() else []
        for f in files:
            key = f"{folder}/{f.name}"
            try:
                sol, p, t = time_nsopt(f, a.max_iter)
            except Exception as e:  # a reader or solver crash is a result too
                rows.append(dict(problem=key, folder=folder, contacts="", status=f"error: {e}"))
                continue
            s = sic.get(key, {})
            ts = float(s["time_s"]) if s.get("time_s") else None
            rows.append(dict(problem=key, folder=folder, contacts=p.nc, status=sol.status.value,
                             error=sol.error, sweeps=sol.nit, time_s=t, method_time_s=sol.solve_time,
                             siconos_status=s.get("status", ""), siconos_error=s.get("err_check", ""),
                             siconos_sweeps=s.get("iterations", ""), siconos_time_s=ts,
                             ratio=(t / ts) if ts else None))
            print(f"  {key:55s} {sol.status.value:9s} err={sol.error:.2e} sweeps={sol.nit:<6d} "
                  f"t={fmt_t(t)}", flush=True)

    with open(a.out / "bench_nsgs.csv", "w", newline="") as fh:
        fields = ["problem", "folder", "contacts", "status", "error", "sweeps", "time_s", "method_time_s",
                  "siconos_status", "siconos_error", "siconos_sweeps", "siconos_time_s", "ratio"]
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") if r.get(k) is not None else "" for k in fields})

    # 1. nsopt vs Siconos on fc3d
    print("\n## NSGS on fc3d: nsopt vs Siconos 4.4 (tol 1e-8, same run)\n")
    print(f"| {'problem':45s} | contacts | nsopt error | sweeps | nsopt time | Siconos | Siconos time | ratio |")
    print(f"|{'-' * 47}|---------:|------------:|-------:|-----------:|---------|-------------:|------:|")
    ratios = []
    for r in rows:
        if r["folder"] != "fc3d":
            continue
        ts = r.get("siconos_time_s")
        ratio = r.get("ratio")
        if ratio is not None and ts > 1e-3:
            ratios.append(ratio)
        sic_st = (f"{r['siconos_status']} {float(r['siconos_error']):.1e}" if r.get("siconos_error") else
                  (r.get("siconos_status") or "-"))
        print(f"| {r['problem'][5:]:45s} | {r.get('contacts', ''):>8} | {r.get('error', float('nan')):11.2e} | "
              f"{r.get('sweeps', ''):>6} | {fmt_t(r.get('time_s')):>10} | {sic_st:15s} | "
              f"{fmt_t(ts):>12} | {('%.2f' % ratio) if ratio else '-':>5} |")
    solved = sum(1 for r in rows if r["folder"] == "fc3d" and r.get("status") == "solved")
    sic_ok = sum(1 for r in rows if r["folder"] == "fc3d" and r.get("siconos_status") == "ok")
    nfc3d = sum(1 for r in rows if r["folder"] == "fc3d")
    print(f"\nsolved to 1e-8: nsopt {solved}/{nfc3d}, Siconos {sic_ok}/{nfc3d}" if sic else
          f"\nsolved to 1e-8: nsopt {solved}/{nfc3d} (Siconos not run)")
    if ratios:
        print(f"median time ratio nsopt/Siconos over the {len(ratios)} problems where Siconos takes > 1 ms: "
              f"{statistics.median(ratios):.2f}x  (target <= 3x; < 1 means nsopt is faster)")

    # 2. fixed cost
    fc = fixed_cost(data, sic)
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
    print("\n## nsopt NSGS per problem (tol 1e-8, max_iter %d)\n" % a.max_iter)
    print(f"| {'problem':55s} | contacts | status | error | sweeps | time | Siconos NSGS |")
    print(f"|{'-' * 57}|---------:|--------|------:|-------:|-----:|--------------|")
    for r in rows:
        err = r.get("error")
        sic_txt = "-"
        if r.get("siconos_status"):
            e = r.get("siconos_error")
            sic_txt = (f"{r['siconos_status']} {float(e):.1e} {r.get('siconos_sweeps', '')} sw "
                       f"{fmt_t(r.get('siconos_time_s'))}" if e else r["siconos_status"])
        print(f"| {r['problem']:55s} | {r.get('contacts', ''):>8} | {r.get('status', '')} | "
              f"{(f'{err:.1e}' if err is not None else '-')} | {r.get('sweeps', '')} | {fmt_t(r.get('time_s'))} "
              f"| {sic_txt} |")
    print(f"\nCSV: {a.out / 'bench_nsgs.csv'}, {a.out / 'bench_nsgs_fixed.csv'}")


if __name__ == "__main__":
    main()
