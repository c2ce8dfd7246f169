"""select="min-norm" across methods and against the ground truth, per family of problems degenerate
by construction (nsopt.generate.degenerate; issue 30).

    python benchmarks/bench_select.py [--seeds 20] [--families a,b,...] [--tol 1e-10]

For every family and seed, every method of the kind (lcp, mlcp: lemke, pgs, newton-fb; relay:
lemke, pgs; fc2d: nsgs, nsn-ac, nsn-fb, lemke; fc3d: nsgs, nsn-ac, nsn-fb, prox) solves with
``select="min-norm"``; the methods that fail to solve are left out (nothing to select from). Per
family: the problems where ``guaranteed`` is True for every method and the largest spread of the
selected primal variable across methods (relative to its largest entry); those where it is False
(the share, and the spread there); the largest relative difference between the selected norm and
the least norm of the union of the pieces the ground truth enumerates (tests/ground_truth.py; 3D:
its stick and take-off pieces, only for the sticking boxes), where guaranteed; the largest error of
a selection (every one must be within tol, status solved) and the time per selection.

CSV: ``benchmarks/results/bench_select.csv``.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import ground_truth as gt

import nsopt
from nsopt import generate

METHODS = {"lcp": ("lemke", "pgs", "newton-fb"), "mlcp": ("lemke", "pgs", "newton-fb"), "relay": ("lemke", "pgs"),
           "fc2d": ("nsgs", "nsn-ac", "nsn-fb", "lemke"), "fc3d": ("nsgs", "nsn-ac", "nsn-fb", "prox")}


def family_row(family, seeds, tol):
    spread_t = spread_f = gt_diff = worst_err = 0.0
    n_t = n_f = n_mixed = 0
    times, failed_solves = [], 0
    for seed in range(seeds):
        p, _ = generate.degenerate(family, seed)
        sols = []
        for m in METHODS[p.kind]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s = nsopt.solve(p, method=m, tol=tol, max_iter=200 if m == "newton-fb" else 20000, select="min-norm")
            sel = s.info["select"]
            if "why" in sel and "not solved" in sel["why"]:
                failed_solves += 1
                continue
            times.append(sel["time"])
            if not s.success or s.error > tol:
                raise AssertionError(f"{family} {seed} {m}: selection not within tol ({s.status}, {s.error:.2e})")
            worst_err = max(worst_err, s.error)
            sols.append((m, getattr(s, p.primal), sel["guaranteed"]))
        if not sols:
            continue
        X = np.array([x for _, x, _ in sols])
        spread = float(np.max(np.abs(X - X[0]))) / max(float(np.max(np.abs(X))), 1e-300)
        g = {gg for *_, gg in sols}
        if g == {True}:
            n_t += 1
            spread_t = max(spread_t, spread)
            if p.kind != "fc3d" or family == "fc3d-box-stick":
                ref = gt.union_least_norm(gt.all_pieces(p))
                top = max(float(np.linalg.norm(ref)), float(np.linalg.norm(X[0])), 1e-9)   # (0 vs 1e-19: equal)
                gt_diff = max(gt_diff, abs(float(np.linalg.norm(X[0])) - float(np.linalg.norm(ref))) / top)
        elif g == {False}:
            n_f += 1
            spread_f = max(spread_f, spread)
        else:
            n_mixed += 1
    n = n_t + n_f + n_mixed
    return {"family": family, "problems": n, "guaranteed": n_t, "spread_guaranteed": spread_t,
            "not_guaranteed_share": n_f / max(n, 1), "spread_not_guaranteed": spread_f, "mixed": n_mixed,
            "norm_vs_ground_truth": gt_diff, "worst_error": worst_err, "failed_solves": failed_solves,
            "median_select_ms": 1e3 * float(np.median(times)) if times else float("nan")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--families", default=",".join(generate.DEGENERATE_FAMILIES))
    ap.add_argument("--tol", type=float, default=1e-10)
    args = ap.parse_args(argv)
    print(f"select='min-norm', tol {args.tol:g}, {args.seeds} problems per family; load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"{'family':26s} {'n':>3s} {'guar.':>5s} {'spread (guar.)':>14s} {'|norm-GT|':>10s} "
          f"{'not guar.':>9s} {'spread':>8s} {'max error':>9s} {'ms/select':>9s}")
    rows = []
    for fam in args.families.split(","):
        r = family_row(fam, args.seeds, args.tol)
        rows.append(r)
        print(f"{fam:26s} {r['problems']:3d} {r['guaranteed']:5d} {r['spread_guaranteed']:14.1e} "
              f"{r['norm_vs_ground_truth']:10.1e} {100 * r['not_guaranteed_share']:8.0f}% {r['spread_not_guaranteed']:8.1e} "
              f"{r['worst_error']:9.1e} {r['median_select_ms']:9.1f}", flush=True)
    out = ROOT / "benchmarks" / "results" / "bench_select.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"written {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
