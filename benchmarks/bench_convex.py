"""Benchmark of nsopt's convex formulations (issue 3), one command:

    python benchmarks/bench_convex.py                      # fc3d folder, CLARABEL and SCS, + Siconos ACLMFP
    python benchmarks/bench_convex.py --solvers CLARABEL --no-siconos --files Capsules-i101-404.dat

Part 1 (the fc3d table): every problem of the shared fc3d folder solved by ``socp-fp`` (SOCP + the
Anderson-accelerated fixed point on s = mu ||u_T||) with each conic solver: contacts, error reached
(nsopt's Siconos error measure), fixed-point iterations, time inside the conic solver, total time;
Siconos' ACLMFP (its convex-relaxation fixed point) in the same run through
``../shared/tools/siconos_bench.py`` (``/usr/bin/python3``; skipped cleanly when unavailable) and
the time ratio nsopt / Siconos on the problems with >= 50 contacts.

Part 2 (the compiled-once re-solve): on one problem (default Capsules-i101-404, 225 contacts), the
time per fixed-point iteration when the compiled program's data are updated in place and re-solved
(through CVXPY's solving chain, and through one Clarabel solver updated in place, nsopt's default),
versus rebuilding the CVXPY program each iteration (ratio measured in this run), and the share of
the re-solve time spent inside the conic solver.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nsopt
from nsopt.data import corpus_files, data_dir
from nsopt.studies.siconos import run_folders


def run_siconos(folder, files, timeout):
    """Siconos' ACLMFP on the folder: {file name: (status, error, iterations, seconds)} or None."""
    out = Path(tempfile.mkdtemp()) / "aclmfp.csv"
    rows = run_folders(data_dir(), [folder], ["ACLMFP"], out, tol="1e-8", timeout=timeout,
                       what="Siconos ACLMFP")
    shutil.rmtree(out.parent, ignore_errors=True)
    if not rows:
        return None
    res = {}
    for row in rows.values():
        name = Path(row["file"]).name
        err = float(row["err_check"]) if row["err_check"] else float("nan")
        it = int(row["iterations"]) if row["iterations"] else -1
        res[name] = (row["status"], err, it, float(row["time_s"]))
    return res


def fc3d_table(args):
    files = corpus_files(args.folder)
    if args.files:
        files = [f for f in files if f.name in args.files]
    if not files:
        print(f"no problem files in {data_dir() / args.folder}")
        return
    sic = None if args.no_siconos else run_siconos(args.folder, files, args.timeout)
    import cvxpy as cp  # warm-up: CVXPY's first solve pays one-off imports and initialisation

    w = cp.Variable(2)
    for s in args.solvers:
        cp.Problem(cp.Minimize(cp.sum_squares(w)), [cp.norm(w) <= w[0] + 1]).solve(solver=s)
    # and the Newton polish (nsn-ac): its compiled kernels are loaded once per process
    nsopt.solve(nsopt.FrictionContact(3, np.eye(3), [-1.0, 1.0, 0.0], 0.5), method="nsn-ac")
    rows = []
    head = f"{'problem':44s} {'nc':>4s}"
    for s in args.solvers:
        head += f" | {s[:8]:>8s} {'error':>8s} {'fp_it':>5s} {'solver_s':>8s} {'total_s':>8s}"
    if sic is not None:
        head += f" | {'ACLMFP':>7s} {'error':>8s} {'it':>5s} {'time_s':>8s}"
    print(head)
    print("-" * len(head))
    for f in files:
        p = nsopt.io.load(f)
        line = f"{f.name[:44]:44s} {p.nc:4d}"
        row = {"name": f.name, "nc": p.nc}
        for s in args.solvers:
            sol = nsopt.solve(p, method="socp-fp", solver=s, max_iter=args.max_iter, time_limit=args.time_limit)
            t = sol.info.get("timings", {})
            row[s] = (sol.error, sol.nit, t.get("solver", float("nan")), sol.solve_time, sol.status.value)
            line += (f" | {sol.status.value[:8]:>8s} {sol.error:8.1e} {sol.nit:5d} "
                     f"{t.get('solver', float('nan')):8.3f} {sol.solve_time:8.3f}")
        if sic is not None:
            st, err, it, ts = sic.get(f.name, ("absent", float("nan"), -1, float("nan")))
            row["siconos"] = (st, err, it, ts)
            line += f" | {st[:7]:>7s} {err:8.1e} {it:5d} {ts:8.3f}"
        print(line, flush=True)
        rows.append(row)
    print()
    for s in args.solvers:
        ok = sum(1 for r in rows if r[s][0] <= 1e-8)
        print(f"socp-fp + {s}: {ok}/{len(rows)} problems to error <= 1e-8; "
              f"not reached (Newton fallback needed): "
              f"{', '.join(r['name'] for r in rows if r[s][0] > 1e-8) or 'none'}")
    if sic is not None:
        ok = sum(1 for r in rows if r["siconos"][0] == "ok")
        print(f"Siconos ACLMFP: {ok}/{len(rows)} ok")
        print("\nTime ratio nsopt socp-fp / Siconos ACLMFP on problems with >= 50 contacts "
              "(< 1: nsopt faster; Siconos not ok counts its time until it stopped):")
        for s in args.solvers:
            parts, wins, tot = [], 0, 0
            for r in rows:
                if r["nc"] < 50:
                    continue
                ts = r["siconos"][3]
                ratio = r[s][3] / ts if ts and np.isfinite(ts) and ts > 0 else float("nan")
                tot += 1
                wins += ratio < 1
                parts.append(f"{r['name'][:26]}={ratio:.3g}")
            print(f"  {s}: faster on {wins}/{tot}: " + ", ".join(parts))


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
    form = FCasSOCP(p, solver=args.resolve_solver)
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
    if form.solver == "CLARABEL":
        fd = SOCPMap(FCasSOCP(p, solver=args.resolve_solver), direct=True)
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
            prob.solve(solver=form.solver, **form.solver_options)
        except cp.error.SolverError:
            pass
        st = prob.solver_stats
        t_solver_b += float(st.solve_time) if st is not None and st.solve_time else 0.0
    t_rebuild = (time.perf_counter() - t0) / n_it
    print(f"  first solve (builds and compiles)  : {t_first * 1e3:8.1f} ms")
    print(f"  re-solve, CVXPY chain on new data  : {t_param * 1e3:8.1f} ms / iteration "
          f"({share * 100:.0f}% of it inside {form.solver}, "
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
    ap.add_argument("--time-limit", type=float, default=75.0,
                    help="nsopt per-solve wall limit (s), as Siconos' --timeout")
    ap.add_argument("--no-siconos", action="store_true", help="do not run Siconos' ACLMFP")
    ap.add_argument("--timeout", type=float, default=75.0, help="Siconos per-solve wall limit (s)")
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
