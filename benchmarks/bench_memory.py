"""Peak memory of the convex methods against the problem size, on sparse problems (issue 7 §4), one command:

    python benchmarks/bench_memory.py                    # default sizes
    python benchmarks/bench_memory.py --sizes 1000 9000 30000 --kinds lcp fc3d

Every (kind, method, n) runs in a fresh subprocess (``python bench_memory.py --one kind method n``):
it builds a sparse problem with O(n) nonzeros, records the resident set size (RSS) before the
solve, solves with a small iteration budget (memory peaks at the first compile, factorisation and
conic solve; the budget keeps the run short) and prints the peak RSS (``resource.getrusage``
``ru_maxrss``) and the peak above the state before the solve. The baselines are the compiled
Gauss–Seidel methods in the same run: ``pgs`` (lcp, relay) and ``nsgs`` (fc3d, gfc3d).

Problems (seeded): lcp: ``M = diag(U[1, 2])``; relay: tridiagonal SPD M (2 on the diagonal, -0.5
next to it), bounds [-1, 1]; fc3d: block-diagonal W (SPD 3 x 3 blocks) plus a weak coupling of
neighbouring contacts, mu = 0.3, n = 3 nc; gfc3d: diagonal M, H = the identity plus a coupling of
neighbouring contacts, ndof = n = 3 nc.

A method is linear in nnz when "above" grows like n (ratio per n constant); the last lines print the
growth exponent between the two largest sizes (1 = linear, 2 = quadratic) for every method.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

METHODS = {"lcp": ("qp", "auto", "pgs"), "relay": ("qp", "auto", "pgs"),
           "fc3d": ("socp-fp", "socp-tresca", "nsgs"), "gfc3d": ("socp-fp", "nsgs")}
BASELINE = {"lcp": "pgs", "relay": "pgs", "fc3d": "nsgs", "gfc3d": "nsgs"}


def problem(kind, n, seed=0):
    import scipy.sparse as sp

    import nsopt

    rng = np.random.default_rng(seed)
    if kind == "lcp":
        return nsopt.LCP(sp.diags(rng.uniform(1.0, 2.0, n)).tocsr(), rng.standard_normal(n))
    if kind == "relay":
        M = sp.diags([np.full(n - 1, -0.5), np.full(n, 2.0), np.full(n - 1, -0.5)], [-1, 0, 1]).tocsr()
        return nsopt.Relay(M, rng.standard_normal(n), -np.ones(n), np.ones(n))
    nc = n // 3
    if kind == "fc3d":
        B = rng.standard_normal((nc, 3, 3))
        blocks = np.einsum("aij,akj->aik", B, B) + 0.5 * np.eye(3)
        W = sp.block_diag(list(blocks), format="csr")
        C = sp.diags([np.full(3 * nc - 3, 0.05)], [3], shape=(3 * nc, 3 * nc))
        W = (W + C + C.T).tocsr()
        return nsopt.FrictionContact(3, W, rng.standard_normal(3 * nc), 0.3)
    if kind == "gfc3d":
        ndof = 3 * nc
        M = sp.diags(rng.uniform(1.0, 2.0, ndof)).tocsr()
        H = (sp.identity(ndof) + sp.diags([np.full(ndof - 3, 0.1)], [3], shape=(ndof, ndof))).tocsr()
        return nsopt.GlobalFrictionContact(M, H, rng.standard_normal(ndof), rng.standard_normal(ndof), 0.3)
    raise ValueError(kind)


def _rss_mb():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def one(kind, method, n):
    """Run one solve; print 'peak_mb above_mb seconds status' on the last line."""
    import nsopt

    p = problem(kind, n)
    import cvxpy  # noqa: F401  (imported before the baseline, as a user's process would have it)
    from nsopt import solvers  # noqa: F401

    before = _rss_mb()
    t0 = time.perf_counter()
    try:
        s = nsopt.solve(p, method=method, max_iter=3, tol=1e-8)
        status = s.method + ":" + s.status.value
    except MemoryError:
        status = "MemoryError"
    except nsopt.NsoptError as e:
        status = type(e).__name__
    dt = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{peak:.1f} {max(peak - before, 0.0):.1f} {dt:.2f} {status}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--one", nargs=3, metavar=("KIND", "METHOD", "N"))
    ap.add_argument("--sizes", nargs="+", type=int, default=[3000, 9000, 30000, 90000])
    ap.add_argument("--kinds", nargs="+", default=list(METHODS))
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    ap.add_argument("--limit-gb", type=float, default=6.0, help="address-space limit per run (GiB)")
    args = ap.parse_args(argv)
    if args.one:
        kind, method, n = args.one
        return one(kind, method, int(n))
    print(f"{'kind':6s} {'method':12s} {'n':>7s} {'peak MB':>9s} {'above MB':>9s} {'x base':>7s} "
          f"{'s':>7s}  status")
    growth = {}
    for kind in args.kinds:
        for n in args.sizes:
            base = None
            for method in sorted(METHODS[kind], key=lambda m: m != BASELINE[kind]):
                cmd = [sys.executable, __file__, "--one", kind, method, str(n)]
                lim = int(args.limit_gb * 2**30)

                def limit(lim=lim):
                    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))

                try:
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout,
                                         preexec_fn=limit, check=False)
                    last = (out.stdout.strip().splitlines() or [""])[-1].split()
                    if len(last) < 4:
                        err = (out.stderr.strip().splitlines() or ["?"])[-1]
                        print(f"{kind:6s} {method:12s} {n:7d}  failed: {err[:80]}")
                        continue
                    peak, above, secs, status = float(last[0]), float(last[1]), float(last[2]), last[3]
                except subprocess.TimeoutExpired:
                    print(f"{kind:6s} {method:12s} {n:7d}  timeout ({args.timeout:g} s)")
                    continue
                if method == BASELINE[kind]:
                    base = above
                ratio = above / base if base else float("nan")
                growth.setdefault((kind, method), []).append((n, above))
                print(f"{kind:6s} {method:12s} {n:7d} {peak:9.1f} {above:9.1f} {ratio:7.1f} {secs:7.2f}  {status}",
                      flush=True)
    print("\ngrowth exponent of the peak above the pre-solve state between the two largest sizes "
          "(1 = linear in n, 2 = quadratic):")
    for (kind, method), pts in growth.items():
        pts = [(n, a) for n, a in pts if a > 5.0]
        if len(pts) >= 2:
            (n1, a1), (n2, a2) = pts[-2], pts[-1]
            print(f"  {kind:6s} {method:12s} {np.log(a2 / a1) / np.log(n2 / n1):5.2f}  ({n1} -> {n2})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
