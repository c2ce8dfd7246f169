"""``python -m nsopt [FILE|FOLDER ...]``: solve problems with every applicable method, print a table.

Without arguments it solves a handful of problems that nsopt generates itself (with known solutions),
so it works on a fresh machine; files (Siconos ``.dat``, FCLIB ``.hdf5``) and folders given as arguments
are loaded with :func:`nsopt.io.load` and added. Rows are printed as each solve finishes.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np


def demo_problems():
    """A handful of generated problems, one or two per kind: (name, problem)."""
    from . import generate as g
    from .problems import AVI, Equality, GenericMechanical

    rng = np.random.default_rng(7)
    probs = [("lcp-spd-20", g.lcp(20, seed=1)[0]),
             ("lcp-P-20 (nonsym)", g.lcp(20, seed=2, matrix="p")[0]),
             ("mlcp-3+6", g.mlcp(3, 6, seed=3)[0]),
             ("relay-8", g.relay(8, seed=4)[0]),
             ("equality-5", Equality(g.spd_matrix(5, rng), rng.standard_normal(5))),
             ("fc2d-6c", g.friction_contact(6, dim=2, seed=5)[0]),
             ("fc3d-8c", g.friction_contact(8, dim=3, seed=6)[0]),
             ("gfc3d-4c", g.global_friction_contact(4, 12, seed=7)[0])]
    M = g.spd_matrix(4, rng)
    probs.append(("avi-box-4", AVI(M, rng.standard_normal(4), np.vstack([np.eye(4), -np.eye(4)]),
                                   -np.ones(8))))
    fc, _ = g.friction_contact(2, dim=3, seed=8)
    W = g.spd_matrix(8, rng)
    blocks = [("equality", 1), ("lcp", 1), ("fc3d", 3, 0.3), ("fc3d", 3, 0.5)]
    probs.append(("gmp-eq+lcp+2fc3d", GenericMechanical(W, rng.standard_normal(8), blocks)))
    return probs


def file_problems(paths):
    from . import io

    for p in paths:
        p = Path(p)
        files = sorted(f for f in p.iterdir() if f.suffix in (".dat", ".hdf5")) if p.is_dir() else [p]
        for f in files:
            try:
                yield f.name, io.load(f)
            except Exception as e:  # a bad file is reported as a row, the run goes on
                yield f.name, e


def main(argv=None):
    from . import methods, solve

    ap = argparse.ArgumentParser(prog="python -m nsopt", description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="problem files or folders (Siconos .dat, FCLIB .hdf5)")
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--max-iter", type=int, default=None)
    ap.add_argument("--methods", type=lambda s: [m for m in s.split(",") if m],
                    help="only these methods, comma-separated (e.g. auto,nsgs)")
    ap.add_argument("--no-demo", action="store_true", help="skip the generated problems")
    ap.add_argument("--csv", help="also append the rows to this CSV file (written row by row)")
    args = ap.parse_args(argv)

    items = [] if args.no_demo else demo_problems()
    items = list(items) + list(file_problems(args.paths))
    head = f"{'problem':<34} {'kind':<8} {'method':<16} {'status':<15} {'error':>10} {'iter':>7} {'time':>10}"
    print(head)
    print("-" * len(head), flush=True)
    out = open(args.csv, "a") if args.csv else None
    n_ok = n_all = 0
    for name, prob in items:
        if isinstance(prob, Exception):
            print(f"{name:<34} {'?':<8} {'-':<16} {'load error':<15} {type(prob).__name__}: {prob}", flush=True)
            continue
        for m in methods(prob):
            if args.methods and m not in args.methods:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                try:
                    s = solve(prob, method=m, tol=args.tol, max_iter=args.max_iter)
                    row = (s.status.value, f"{s.error:10.2e}", f"{s.nit:7d}")
                    n_ok += s.success
                except Exception as e:  # NotApplicable etc.: shown, not fatal
                    row = ("n/a", f"{'-':>10}", f"{'-':>7}")
                    m = f"{m} ({type(e).__name__})"
                dt = time.perf_counter() - t0
            n_all += 1
            line = f"{name:<34} {prob.kind:<8} {m:<16} {row[0]:<15} {row[1]} {row[2]} {dt * 1e3:8.2f}ms"
            print(line, flush=True)
            if out:
                out.write(",".join([name, prob.kind, m, row[0], row[1].strip(), row[2].strip(), f"{dt:.6g}"]) + "\n")
                out.flush()
    print(f"\n{n_ok} of {n_all} solves reached error <= {args.tol:g} (error = the Siconos measure of each kind)")
    if out:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
