"""Benchmark of nsopt's convex formulations (issue 3), one command:

    python benchmarks/bench_convex.py                      # fc3d folder, CLARABEL and SCS, + Siconos ACLMFP
    python benchmarks/bench_convex.py --solvers CLARABEL --no-siconos --files Capsules-i101-404.dat

Part 1 (the fc3d table): one campaign (:func:`nsopt.studies.compare`, folder
``benchmarks/results/bench_convex_campaign``, made afresh: results table, summary, profiles) on the
shared fc3d folder: ``socp-fp`` (SOCP + the Anderson-accelerated fixed point on s = mu ||u_T||) with
each conic solver (``socp-fp[backend=CLARABEL]``, ...), and Siconos' ACLMFP (its convex-relaxation fixed
point) through ``siconos_bench.py`` (skipped cleanly when unavailable), ``--time-limit`` seconds per
solve for both. Printed: contacts, error reached (nsopt's Siconos error measure), fixed-point
iterations, time inside the conic solver (the ``timings.solver`` entry of the ``info`` column),
total time of the solve (the ``time`` column, after the worker's untimed warm-up: CVXPY's imports
and first compile of a tiny problem), and the time ratio nsopt / Siconos on the problems with >= 50
contacts (:func:`nsopt.studies.tables.time_ratio`).

Part 2 (the compiled-once re-solve, a micro-benchmark in this process): on one problem (default
Capsules-i101-404, 225 contacts), the time per fixed-point iteration when the compiled program's data
are updated in place and re-solved (through CVXPY's solving chain, and through one Clarabel solver
updated in place, nsopt's default), versus rebuilding the CVXPY program each iteration (ratio
measured in this run), and the share of the re-solve time spent inside the conic solver.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nsopt
import nsopt.studies as st
from nsopt.data import corpus_files, data_dir
from nsopt.studies.tables import by_problem, time_ratio

SICONOS = "Siconos ACLMFP"


def fc3d_table(args):
    files = corpus_files(args.folder)
    if args.files:
        files = [f for f in files if f.name in args.files]
    if not files:
        print(f"no problem files in {data_dir() / args.folder}")
        return
    out = ROOT / "benchmarks" / "results" / "bench_convex_campaign"
    shutil.rmtree(out, ignore_errors=True)
    methods = [("socp-fp", {"backend": s}) for s in args.solvers]
    df = st.compare(files, methods, tol=1e-8, max_iter=args.max_iter, timeout=args.time_limit, out=out,
                    siconos=None if args.no_siconos else "ACLMFP")
    df["solver_s"] = [json.loads(i).get("timings.solver", np.nan) if isinstance(i, str) else np.nan
                      for i in df["info"]]
    wide = by_problem(df, ("status", "error", "nit", "solver_s", "time"))
    labels = {s: f"socp-fp backend={s}" for s in args.solvers}
    has_sic = ("time", SICONOS) in wide.columns
    head = f"{'problem':44s} {'nc':>4s}"
    for s in args.solvers:
        head += f" | {s[:8]:>8s} {'error':>8s} {'fp_it':>5s} {'solver_s':>8s} {'total_s':>8s}"
    if has_sic:
        head += f" | {'ACLMFP':>7s} {'error':>8s} {'it':>5s} {'time_s':>8s}"
    print(head)
    print("-" * len(head))
    for _, r in wide.iterrows():
        line = f"{r[('name', '')][:44]:44s} {int(r[('nc', '')] or 0):4d}"
        for m in list(labels.values()) + ([SICONOS] if has_sic else []):
            it = r[("nit", m)]
            line += f" | {str(r[('status', m)])[:8]:>8s} {r[('error', m)]:8.1e} {-1 if np.isnan(it) else it:5.0f}"
            line += (f" {r[('solver_s', m)]:8.3f}" if m != SICONOS else "") + f" {r[('time', m)]:8.3f}"
        print(line)
    print()
    for s, m in labels.items():
        d = df[df["options"].str.contains(f'"{s}"') & df["method"].eq("socp-fp")]
        bad = [Path(p).name for p, e in zip(d["problem"], d["error"]) if not e <= 1e-8]
        print(f"socp-fp + {s}: {len(d) - len(bad)}/{len(d)} problems to error <= 1e-8; "
              f"not reached (Newton fallback needed): {', '.join(bad) or 'none'}")
    if has_sic:
        d = df[df["method"].eq("siconos:ACLMFP")]
        print(f"Siconos ACLMFP: {int(d['status'].eq('solved').sum())}/{len(d)} solved")
        print("\nTime ratio nsopt socp-fp / Siconos ACLMFP on problems with >= 50 contacts "
              "(< 1: nsopt faster; Siconos not solved counts its time until it stopped):")
        big = set(wide.index[wide[("nc", "")].fillna(0) >= 50])
        for s, m in labels.items():
            ratio = time_ratio(df, m, SICONOS, both_solved=False)
            ratio = ratio[[p for p in ratio.index if p in big]]
            print(f"  {s}: faster on {int((ratio < 1).sum())}/{len(ratio)}: " +
                  ", ".join(f"{Path(p).name[:26]}={x:.3g}" for p, x in ratio.items()))


def resolve_benchmark(args):
    """Compiled-once re-solve (data updated in place) vs rebuilding the program each iteration."""
    import cvxpy as cp

    from nsopt.formulations import FCasSOCP
    from nsopt.formulations._base import quad_matrix
    from nsopt.solvers.socp_fp import SOCPMap

    f = data_dir() / args.folder / args.resolve_problem
    if not f.is_file():
        print(f"# re-solve benchmark skipped: {f} not found")
        return
    p = nsopt.io.load(f)
    n_it = args.resolve_iterations
    print(f"\nCompiled-once re-solve on {f.name} ({p.nc} contacts), {n_it} plain fixed-point iterations, "
          f"solver {args.resolve_solver}:")
    # (a) compiled once, the linear term updated in the compiled data, CVXPY's solving chain (direct=False)
    t_first = time.perf_counter()
    form = FCasSOCP(p, backend=args.resolve_solver)
    fmap = SOCPMap(form, direct=False)
    x = np.zeros(p.size)
    g, _, _ = fmap.image(x)              # build, compile and first solve
    t_first = time.perf_counter() - t_first
    fmap.timings.update(cvxpy=0.0, solver=0.0, solves=0)
    xs = [x, g]
    t0 = time.perf_counter()
    for _ in range(n_it):
        g, _, _ = fmap.image(g)
        xs.append(g)
    t_param = (time.perf_counter() - t0) / n_it
    share = fmap.time_share()
    # (a') the default path: one Clarabel solver, its linear term updated in place per iteration
    t_direct = share_d = float("nan")
    if form.backend == "CLARABEL":
        fd = SOCPMap(FCasSOCP(p, backend=args.resolve_solver), direct=True)
        fd.image(xs[0])
        fd.timings.update(cvxpy=0.0, solver=0.0, solves=0)
        t0 = time.perf_counter()
        for k in range(n_it):
            fd.image(xs[k + 1])
        t_direct = (time.perf_counter() - t0) / n_it
        share_d = fd.time_share()
    # (b) rebuild: a fresh CVXPY program with the linear term as a constant, same iterates
    P = quad_matrix(form.P)
    mu = np.asarray(p.mu)
    t_solver_b = 0.0
    t0 = time.perf_counter()
    for k in range(n_it):
        c = form.dd * form.q_data + xs[k + 1]
        r = cp.Variable(p.size)
        R = cp.reshape(r, (p.nc, 3), order="C")
        prob = cp.Problem(cp.Minimize(0.5 * cp.quad_form(r, cp.psd_wrap(P)) + c @ r),
                          [cp.SOC(cp.multiply(mu, R[:, 0]), R[:, 1:], axis=1)])
        try:
            prob.solve(solver=form.backend, **form.backend_options)
        except cp.error.SolverError:
            pass
        st = prob.solver_stats
        t_solver_b += float(st.solve_time) if st is not None and st.solve_time else 0.0
    t_rebuild = (time.perf_counter() - t0) / n_it
    print(f"  first solve (builds and compiles)  : {t_first * 1e3:8.1f} ms")
    print(f"  re-solve, CVXPY chain on new data  : {t_param * 1e3:8.1f} ms / iteration "
          f"({share * 100:.0f}% of it inside {form.backend}, "
          f"{(1 - share) * 100:.0f}% in CVXPY: data conversion and unpacking)")
    print(f"  same, Clarabel updated in place    : {t_direct * 1e3:8.1f} ms / iteration "
          f"({share_d * 100:.0f}% inside the solver; nsopt's default path, direct=True)")
    print(f"  rebuild the program each iteration : {t_rebuild * 1e3:8.1f} ms / iteration "
          f"({t_solver_b / n_it / t_rebuild * 100:.0f}% inside the solver)")
    print(f"  ratio rebuild / re-solve           : {t_rebuild / t_param:8.2f}x (CVXPY chain), "
          f"{t_rebuild / t_direct:.2f}x (direct)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", default="fc3d")
    ap.add_argument("--files", nargs="*", help="only these file names")
    ap.add_argument("--solvers", nargs="+", default=["CLARABEL", "SCS"])
    ap.add_argument("--max-iter", type=int, default=None, help="fixed-point iterations (default 200)")
    ap.add_argument("--time-limit", "--timeout", type=float, default=75.0,
                    help="per-solve wall limit (s) of nsopt and of Siconos")
    ap.add_argument("--no-siconos", action="store_true", help="do not run Siconos' ACLMFP")
    ap.add_argument("--resolve-problem", default="Capsules-i101-404.dat")
    ap.add_argument("--resolve-solver", default="CLARABEL")
    ap.add_argument("--resolve-iterations", type=int, default=20)
    ap.add_argument("--skip-table", action="store_true")
    ap.add_argument("--skip-resolve", action="store_true")
    args = ap.parse_args(argv)
    if not data_dir().is_dir():
        print(f"shared corpus not found at {data_dir()} (set NSOPT_DATA)")
        return 0
    if not args.skip_table:
        fc3d_table(args)
    if not args.skip_resolve:
        resolve_benchmark(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
