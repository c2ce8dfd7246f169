"""The Newton methods on the fc3d corpus, one tree at a time: status, error, iterations and CPU time per problem.

    PYTHONPATH=<tree> python benchmarks/newton_before_after.py OUT.json [--methods nsn-ac,nsn-fb,prox]
    python benchmarks/newton_before_after.py --compare BEFORE.json AFTER.json

Every fc3d problem of ``$NSOPT_DATA/fc3d`` with more than 24 unknowns (the sizes nsn-ac solves with its Python
Newton loop), tol 1e-8, time limit 30 s; each solve once untimed (numba's compilation), then once timed (CPU).
``python benchmarks/before_after.py --base TREE --benches newton-corpus`` runs it on two trees in turns and
prints the table; ``--compare`` prints two runs' files side by side, the ratio of times and the median ratio
per method.
"""
import argparse
import glob
import json
import os
import statistics
import sys
import time


def measure(out, methods):
    import nsopt
    data = os.environ.get("NSOPT_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "siconos-data"))
    files = sorted(glob.glob(os.path.join(data, "fc3d", "*.dat")) + glob.glob(os.path.join(data, "fc3d", "*.hdf5")))
    rows = {}
    for f in files:
        p = nsopt.io.load(f)
        if p.size <= 24:
            continue
        for m in methods:
            key = f"{os.path.basename(f)}|{m}"
            try:
                nsopt.solve(p, method=m, tol=1e-8, time_limit=2)
                t = time.process_time()
                s = nsopt.solve(p, method=m, tol=1e-8, time_limit=30)
                rows[key] = [s.status.value, float(s.error), int(s.nit), time.process_time() - t]
            except Exception as e:  # noqa: BLE001  a row per failure, the run goes on
                rows[key] = [type(e).__name__, None, None, None]
            print(key, rows[key], flush=True)
    with open(out, "w") as fh:
        json.dump(rows, fh)


def compare(before, after):
    a, b = json.load(open(before)), json.load(open(after))
    ratios = {}
    for k, x in a.items():
        y = b.get(k)
        if y is None:
            continue
        r = y[3] / x[3] if x[3] and y[3] else float("nan")
        ratios.setdefault(k.split("|")[1], []).append(r)
        print(f"{k:60s} {x[0]:8s} {x[2]!s:>5} {x[3] or 0:8.3f} s | {y[0]:8s} {y[2]!s:>5} {y[3] or 0:8.3f} s  x{r:.2f}")
    for m, rs in ratios.items():
        ok = [r for r in rs if r == r]
        print(f"{m}: median after/before {statistics.median(ok):.2f}; solved before "
              f"{sum(a[k][0] == 'solved' for k in a if k.endswith('|' + m))}, after "
              f"{sum(b[k][0] == 'solved' for k in b if k.endswith('|' + m))}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--methods", default="nsn-ac,nsn-fb,prox")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        compare(*args.compare)
    elif args.out:
        measure(args.out, args.methods.split(","))
    else:
        sys.exit("give OUT.json or --compare BEFORE.json AFTER.json")
