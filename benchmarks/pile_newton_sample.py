"""nsn-ac on captured one-step problems of the 1000-cube pile, one tree at a time: iterations, error, CPU per problem.

    PYTHONPATH=<tree> python benchmarks/pile_newton_sample.py SAMPLE_DIR OUT.json [--only 90 95 ...]
    python benchmarks/pile_newton_sample.py --compare BEFORE.json AFTER.json

SAMPLE_DIR holds, per captured solve call k of a run of ``nsopt_rigid.py pile1000`` (the calls with more than 60
Newton iterations and every 15th), ``W_kkkk.npz`` (``scipy.sparse.save_npz``) and ``p_kkkk.npz`` (q, mu, warm:
the warm start the scene passed). Each problem is solved as the scene solves it (``FrictionContact(3, W, q, mu)``,
nsn-ac, tol 1e-6, the warm start), once, after one untimed solve of the first problem (numba's compilation);
the error is nsopt's measure re-judged by ``solve()``. Run it on two trees in turn, one BLAS thread, then
``--compare``: per problem both CPU times and their ratio, the iterations, and the totals (CPU per problem,
CPU per Newton iteration).
"""
import argparse
import glob
import json
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def measure(sample, out, only):
    import numpy as np
    import scipy.sparse as sp

    import nsopt
    ks = sorted(int(os.path.basename(f)[2:6]) for f in glob.glob(os.path.join(sample, "p_*.npz")))
    ks = [k for k in ks if not only or k in only]

    def load(k):
        d = np.load(os.path.join(sample, f"p_{k:04d}.npz"))
        W = sp.load_npz(os.path.join(sample, f"W_{k:04d}.npz"))
        return nsopt.FrictionContact(3, W, d["q"], d["mu"]), d["warm"]

    p, warm = load(ks[0])
    nsopt.solve(p, method="nsn-ac", tol=1e-6, warm_start=warm)
    rows = {}
    for k in ks:
        p, warm = load(k)
        t = time.process_time()
        s = nsopt.solve(p, method="nsn-ac", tol=1e-6, warm_start=warm)
        rows[k] = dict(nc=int(p.nc), status=s.status.value, nit=int(s.nit), error=float(s.error),
                       cpu=time.process_time() - t)
        print(k, rows[k], flush=True)
    with open(out, "w") as fh:
        json.dump(rows, fh)


def compare(before, after):
    with open(before) as fh:
        a = json.load(fh)
    with open(after) as fh:
        b = json.load(fh)
    keys = sorted(set(a) & set(b), key=int)
    print(f"{'call':>5} {'nc':>5} {'nit before/after':>17} {'ms before':>10} {'ms after':>10} {'ratio':>6}"
          f" {'ms/it before':>12} {'ms/it after':>11}  status after")
    for k in keys:
        x, y = a[k], b[k]
        print(f"{k:>5} {x['nc']:>5} {x['nit']:>8}/{y['nit']:<8} {1e3 * x['cpu']:>10.1f} {1e3 * y['cpu']:>10.1f}"
              f" {y['cpu'] / x['cpu']:>6.2f} {1e3 * x['cpu'] / max(x['nit'], 1):>12.2f}"
              f" {1e3 * y['cpu'] / max(y['nit'], 1):>11.2f}  {y['status']} {y['error']:.2g}")
    ta, tb = sum(a[k]["cpu"] for k in keys), sum(b[k]["cpu"] for k in keys)
    na, nb = sum(a[k]["nit"] for k in keys), sum(b[k]["nit"] for k in keys)
    sa = sum(a[k]["status"] == "solved" for k in keys)
    sb = sum(b[k]["status"] == "solved" for k in keys)
    print(f"{len(keys)} problems: CPU {ta:.2f} -> {tb:.2f} s (x{tb / ta:.2f}); Newton iterations {na} -> {nb}; "
          f"CPU per iteration {1e3 * ta / na:.2f} -> {1e3 * tb / nb:.2f} ms (x{(tb / nb) / (ta / na):.2f}); "
          f"solved {sa} -> {sb}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs=2, help="SAMPLE_DIR OUT.json, or with --compare BEFORE.json AFTER.json")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--only", nargs="*", type=int, default=None, help="only these call numbers")
    args = ap.parse_args(argv)
    if args.compare:
        compare(*args.paths)
    else:
        measure(args.paths[0], args.paths[1], set(args.only or ()))


if __name__ == "__main__":
    sys.exit(main())
