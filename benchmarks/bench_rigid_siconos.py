"""Siconos' numbers on the rigid-body scenes of issue 23 §4 (its side of the comparison; nsopt's side runs the
same scenes once the Newton–Euler step lands in nsopt.modeling).

    python benchmarks/bench_rigid_siconos.py [--scenes cube spheres chain pile10 pile100] [--out DIR]
        [--tol 1e-6] [--max-iter 1000] [--budget SECONDS] [--summary-only]

Runs ``siconos_rigid.py`` under /usr/bin/python3 for each scene (one at a time, one BLAS thread), then prints
one row per scene from the CSV/NPZ files in DIR (default benchmarks/results/rigid): steps, wall time per
step (mean over the steps with contacts and over all), solver failures (residual above tol), mean/max
iterations, contacts detected at the end, rest height (highest body at the end) and centre of mass, kinetic
energy at the end, deepest penetration, peak RSS, and the log-log slope of the time per step against the
number of cubes over the piles found. ``--summary-only`` reads what is there (e.g. a 1000-cube pile run in
the background with a time budget).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SICONOS_PY = "/usr/bin/python3"


def summarize(out: Path):
    rows = []
    for npz in sorted(out.glob("*.npz")):
        d = np.load(npz)
        if "meta" not in d:
            continue
        meta = json.loads(str(d["meta"]))
        st = d["step_time"]
        busy = d["osns_size"] > 0
        rows.append(dict(scene=meta["scene"], bodies=meta["bodies"], steps=meta["steps"], completed=meta["completed"],
                         T=meta["T"], h=meta["h"], tol=meta["tol"], osns=meta["osns"],
                         ms_step=1e3 * st.mean(), ms_contact_step=1e3 * (st[busy].mean() if busy.any() else 0.0),
                         cpu_ms_contact_step=1e3 * (d["step_cpu"][busy].mean() if "step_cpu" in d and busy.any() else np.nan),
                         failed=int(d["failed"].sum()), solves=int(busy.sum()),
                         nit_mean=float(d["nit"][busy].mean()) if busy.any() else 0.0,
                         nit_max=int(d["nit"].max()), contacts_end=int(d["contacts_detected"][-1]),
                         contacts_max=int(d["contacts_detected"].max()), top_z=float(d["top_z"][-1]),
                         com_z=float(d["com_z"][-1]), energy_end=float(d["kinetic_energy"][-1]),
                         penetration_max=float(d["penetration"].max()), rss_mb=float(d["peak_rss_mb"].max()),
                         wall_s=meta["wall_time"]))
    return rows


def print_table(rows):
    cols = ["scene", "bodies", "steps", "completed", "ms_step", "ms_contact_step", "cpu_ms_contact_step", "failed", "solves", "nit_mean",
            "nit_max", "contacts_end", "top_z", "com_z", "energy_end", "penetration_max", "rss_mb", "wall_s"]
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(f"{r[c]:.4g}" if isinstance(r[c], float) else str(r[c]) for c in cols))
    for key in ("ms_contact_step", "cpu_ms_contact_step"):
        piles = sorted((r["bodies"], r[key]) for r in rows if r["scene"].startswith("pile") and np.isfinite(r[key]))
        if len(piles) > 1:
            slope = np.polyfit(np.log([p[0] for p in piles]), np.log([p[1] for p in piles]), 1)[0]
            print(f"Siconos: {key} ~ cubes^{slope:.2f} over {[p[0] for p in piles]}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", nargs="+", default=["cube", "spheres", "chain", "pile10", "pile100"])
    ap.add_argument("--out", default=str(HERE / "results" / "rigid"))
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--budget", type=float, default=None)
    ap.add_argument("--summary-only", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.summary_only:
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        for s in args.scenes:
            cmd = [SICONOS_PY, str(HERE / "siconos_rigid.py"), s, str(out / f"siconos_{s}"), "--tol", str(args.tol),
                   "--max-iter", str(args.max_iter)] + (["--time-budget", str(args.budget)] if args.budget else [])
            r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
            if r.returncode:
                sys.stderr.write(r.stderr[-3000:])
                raise SystemExit(f"{s}: siconos_rigid.py failed")
            print(r.stdout.strip().splitlines()[-1])
    print_table(summarize(out))


if __name__ == "__main__":
    main()
