"""Sensitivities (nsopt.sensitivity): accuracy against finite differences, and the cost of one vjp
against the cost of the solve.

    python benchmarks/bench_sensitivity.py [--data DIR] [--repeat 3] [--skip-large]

1. Accuracy: for every kind, the largest relative difference between ``jvp`` and central finite
   differences over the problems the tests use (``tests/test_sensitivity.py``: the generated cases
   with seeds 1, 2, 3 and the corpus files with strict complementarity), the measure and the step
   of the tests (h = 1e-6 relative, re-solves to 1e-14 from the base solution).
2. Cost: per kind a small problem (generated) and a large one (fc3d: RockPile_tob1, 463 contacts;
   lcp: a sparse n = 100000 LCP, the 5-point Laplacian of a 250 x 400 grid with a random
   complementary solution), the time of the solve (method named), of building the sensitivity (the
   linearisation and its one factorisation) and of one vjp with respect to every field after it.
   Each time is the best of ``--repeat`` runs taken in turns (solve, build, vjp), so that the ratios
   mean something on a loaded machine; the load average is printed.

CSV: ``benchmarks/results/bench_sensitivity.csv``.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import nsopt  # noqa: E402
from nsopt import generate  # noqa: E402
from tests.test_sensitivity import CORPUS, GENERATED, METHOD, fd_difference  # noqa: E402


def laplacian_lcp(nx=250, ny=400, seed=0):
    """A sparse LCP of size nx * ny with a known strictly complementary solution."""
    T = sp.diags([-np.ones(nx - 1), 4.0 * np.ones(nx), -np.ones(nx - 1)], [-1, 0, 1])
    S = sp.diags([-np.ones(ny - 1), -np.ones(ny - 1)], [-1, 1])
    M = (sp.kron(sp.identity(ny), T) + sp.kron(S, sp.identity(nx))).tocsr()
    n = nx * ny
    rng = np.random.default_rng(seed)
    z = np.where(rng.random(n) < 0.5, rng.uniform(0.1, 1.0, n), 0.0)
    w = np.where(z > 0, 0.0, rng.uniform(0.1, 1.0, n))
    return nsopt.LCP(M, w - M @ z)


def accuracy(data):
    rows = {}
    for case, make in sorted(GENERATED.items()):
        for seed in (1, 2, 3):
            p = make(seed)
            d = fd_difference(p, seed=seed)
            k = p.kind
            rows.setdefault(k, []).append((f"{case} (seed {seed})", d))
    if data is not None:
        for name in CORPUS:
            p = nsopt.io.load(Path(data) / name)
            d = _corpus_direction(p)
            rows.setdefault(p.kind, []).append((name, fd_difference(p, d)))
    p = nsopt.MultipleImpact(np.diag([2.0, 3.0]), np.eye(2), [-1.0, -0.5], restitution=[0.8, 0.6], stiffness=1e6)
    rows["multiple-impact"] = [("two decoupled contacts", _impact_fd(p))]
    return rows


def _corpus_direction(p):
    from tests.test_sensitivity import _directions, solve_tight  # noqa: F401

    d = _directions(p, np.random.default_rng(0))
    if "M" in d and p.kind.startswith("gfc"):
        d["M"] = 0.5 * (d["M"] + d["M"].T)
    return d


def _impact_fd(p, h=1e-6):
    rng = np.random.default_rng(0)
    s = nsopt.sensitivity(p, nsopt.solve(p, method="lzb", impulse_step=1e-6))
    d = {"M": np.diag(rng.standard_normal(2)), "v": rng.standard_normal(2), "restitution": 0.1 * rng.standard_normal(2)}
    J = s.jvp(**d)

    def pt(sg):
        q = nsopt.MultipleImpact(p.M + sg * h * d["M"], p.H, p.v + sg * h * d["v"],
                                 restitution=p.restitution + sg * h * d["restitution"], stiffness=1e6)
        return nsopt.sensitivity(q, {"p": np.zeros(2)}).point()

    a, b = pt(1), pt(-1)
    worst = max(float(np.max(np.abs(J[k] - (a[k] - b[k]) / (2 * h)))) for k in J)
    return worst / max(float(np.max(np.abs(np.concatenate([(a[k] - b[k]) / (2 * h) for k in J])))), 1e-300)


def cost_cases(data, skip_large):
    """(kind, label, problem, method, options) small and large."""
    cases = []
    for case in ("lcp-spd", "mlcp", "relay", "equality", "avi", "fc2d", "fc3d", "gfc2d", "gfc3d", "gmp"):
        p = GENERATED[case](1)
        cases.append((p.kind, f"generated {case}", p, METHOD[p.kind], {}))
    if not skip_large:
        cases.append(("lcp", "sparse Laplacian n=100000", laplacian_lcp(), "pgs", {"max_iter": 10000}))
        if data is not None:
            for kind, name, method, opts in (("fc3d", "fc3d/RockPile_tob1.dat", "nsn-ac", {}),
                                             ("fc2d", "fc2d/fc2d_granularflowonwall_00667_00000.dat", "nsn-ac", {}),
                                             ("gfc3d", "gfc3d/Box_Stacks-i0122-82-5.hdf5", "nsn-ac", {}),
                                             ("mlcp", "mlcp/BuckConverter_mlcp.dat", "lemke", {})):
                cases.append((kind, name, nsopt.io.load(Path(data) / name), method, opts))
    return cases


def cost(cases, repeat, tol=1e-10):
    out = []
    rng = np.random.default_rng(0)
    for kind, label, p, method, opts in cases:
        best = {"solve": np.inf, "build": np.inf, "vjp": np.inf}
        sol = None
        for _ in range(repeat):
            t = time.perf_counter()
            sol = nsopt.solve(p, method=method, tol=tol, **opts)
            best["solve"] = min(best["solve"], time.perf_counter() - t)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = time.perf_counter()
                s = nsopt.sensitivity(p, sol)
                best["build"] = min(best["build"], time.perf_counter() - t)
            g = {v: rng.standard_normal(n) for v, n in s.model.sizes().items()}
            t = time.perf_counter()
            G = s.vjp(**g)
            best["vjp"] = min(best["vjp"], time.perf_counter() - t)
        sparse_ok = all(sp.issparse(G[f]) for f in G if sp.issparse(getattr(p, f, None)))
        out.append({"kind": kind, "problem": label, "n": s.model.x.shape[0], "method": method,
                    "status": sol.status.value, "error": sol.error, "solve_s": best["solve"], "build_s": best["build"],
                    "vjp_s": best["vjp"], "vjp_over_solve": best["vjp"] / best["solve"],
                    "build_vjp_over_solve": (best["build"] + best["vjp"]) / best["solve"],
                    "degenerate": sum(len(v) for v in s.degenerate.values()), "singular": s.singular,
                    "sparse_gradients": sparse_ok})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.environ.get("NSOPT_DATA", str(ROOT.parent / "shared" / "siconos-data")))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-large", action="store_true")
    a = ap.parse_args(argv)
    data = a.data if Path(a.data).is_dir() else None
    print(f"load average at start: {os.getloadavg()}")
    rows = accuracy(data)
    print("\n1. jvp against central finite differences (h = 1e-6 relative; re-solves to 1e-14)")
    print(f"{'kind':<16} {'problems':>8}  {'largest rel. difference':>24}  worst on")
    for kind, lst in sorted(rows.items()):
        worst = max(lst, key=lambda x: x[1])
        print(f"{kind:<16} {len(lst):>8}  {worst[1]:>24.2e}  {worst[0]}")
    res = cost(cost_cases(data, a.skip_large), a.repeat)
    print(f"\n2. one vjp against the solve (best of {a.repeat} in turns; build = linearisation + factorisation)")
    print(f"{'kind':<8} {'problem':<46} {'n':>7} {'method':<8} {'solve s':>9} {'build s':>9} {'vjp s':>9} "
          f"{'vjp/solve':>10} {'(b+v)/solve':>11} {'deg':>4} sing sparse")
    for r in res:
        print(f"{r['kind']:<8} {r['problem']:<46} {r['n']:>7} {r['method']:<8} {r['solve_s']:>9.2e} "
              f"{r['build_s']:>9.2e} {r['vjp_s']:>9.2e} {r['vjp_over_solve']:>10.2e} {r['build_vjp_over_solve']:>11.2e} "
              f"{r['degenerate']:>4} {str(r['singular'])[0]:>4} {str(r['sparse_gradients'])[0]:>6}")
    print(f"load average at end: {os.getloadavg()}")
    outdir = ROOT / "benchmarks" / "results"
    outdir.mkdir(parents=True, exist_ok=True)
    with open(outdir / "bench_sensitivity.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(res[0]))
        w.writeheader()
        w.writerows(res)
    return rows, res


if __name__ == "__main__":
    main()
