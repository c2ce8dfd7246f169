"""Re-solving cheaply: a sequence of problems with the same W and a new q, as a time-stepping loop makes.

    python benchmarks/bench_resolve.py [--data DIR] [--n 1000] [--n-big 100] [--drift 0.01] [--no-siconos]
                                      [--big fc3d/Capsules-i101-404.dat] [--methods nsgs nsn-ac]
                                      [--repeat 15] [--n-lcp 6000] [--no-lcp] [--skip-big] [--new-arrays]
                                      [--compare-to DIR]

For the one-contact ``fc3d/FrictionContact3D_1c.dat`` and a Capsules-sized problem, a sequence of
``--n`` right-hand sides (``--n-big`` for the large one) ``q_k = q_0 (1 + d sin(0.1 k + phi_i))``
(a smooth drift of relative amplitude d = ``--drift``, default 0.01, per entry phase phi_i) is solved with nsgs and nsn-ac (tol 1e-8) three ways; time per solve:

(a) fresh: a new ``nsopt.FrictionContact(3, W, q_k, mu)`` and ``nsopt.solve`` from zero (``--new-arrays``:
    on new copies of W and mu each, as a simulation whose W changes at every step);
(b) re-solve: ``p.replace(q=q_k)``, ``workspace=ws`` and ``warm_start=`` the previous solution;
(c) Siconos 4.4 under /usr/bin/python3 (subprocess): ``FrictionContactProblem(3, nc, M, q_k, mu)``
    and ``fc3d_driver`` with the previous reaction as initial guess (NSGS, NSN_AC), same tol,
    10000 iterations; the sequence is cut after ``--siconos-budget`` seconds per solver (Siconos'
    NSGS and NSN_AC take seconds per solve on Capsules) and the time is per solve done. nsopt gets
    the same budget of 10000 iterations. NSGS reuses one SolverOptions; NSN_AC gets fresh ones per
    solve (reused, they keep internal state that makes the next Capsules solves fail).

For the one-contact sequence with nsgs it also times the compiled kernel alone (the one call that
does the work of a solve, ``_gs_kernels.nsgs_fc_solve``: u = Wr + q, the error, the sweeps, the
stops, with its arguments as ``nsgs`` passes them) and prints the fixed cost of (b): its time
minus the kernel's, and the ratios (b)/(c) (target <= 2.5) and (a)/(c) (target <= 5).

``--compare-to DIR`` runs the same fresh and re-solve measures on another nsopt tree (e.g. a
``git worktree`` of an earlier commit) in a subprocess, in the same turns, and prints its times
and the ratios new/old beside them: a before/after in one run.

Then the one-step LCPs of a bouncing ball (``--n-lcp`` Moreau-Jean steps, W = 1/m, the steps
with an active contact: impacts, then the ball at rest), solved by ``lemke`` as the modeling
layer does it (``replace(q=...)``, ``workspace=``, the previous impulse as warm start, None when
it was 0), against a fresh problem and solve, and against Siconos' ``linearComplementarity_driver``
with ``SICONOS_LCP_LEMKE`` (a new ``LCP(M, q)`` per step, z = the previous solution); the compiled
work alone is lemke's iteration 0 (``_lcp_start``).

The one-contact and LCP measures are each the best of ``--repeat`` runs (default 15) taken in turns
(Siconos; then, per method, nsgs' kernel, the re-solve and the fresh solve), which keeps the ratios
and the fixed cost (a difference of two measures) meaningful on a loaded machine whose speed drifts
by tens of percent over seconds; the Capsules ones are single runs.
All numbers come from one run on the same machine (only ratios measured together mean something).
CSV: ``benchmarks/results/bench_resolve.csv``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# NSOPT_BENCH_TREE: the nsopt tree to import (the --compare-to worker), else this checkout
sys.path.insert(0, os.environ.get("NSOPT_BENCH_TREE") or str(ROOT))

import nsopt  # noqa: E402
from nsopt.io import load  # noqa: E402

SICONOS_PY = "/usr/bin/python3"
TOL = 1e-8
MAX_ITER = {"nsgs": 10000, "nsn-ac": 10000}   # as Siconos' iparam[MAX_ITER] below
SICONOS_IDS = {"nsgs": "SICONOS_FRICTION_3D_NSGS", "nsn-ac": "SICONOS_FRICTION_3D_NSN_AC"}

_SICONOS_WORKER = r"""
import json, sys, time
import numpy as np
import siconos.numerics as sn
path, qfile, methods, tol = sys.argv[1], sys.argv[2], sys.argv[3].split(","), float(sys.argv[4])
budget = float(sys.argv[5])
qs = np.load(qfile)
base = sn.frictionContact_new_from_filename(path)
nc = base.numberOfContacts
mu = np.array(base.mu)
out = {}
def options(sid):
    so = sn.SolverOptions(sid)
    so.dparam[sn.SICONOS_DPARAM_TOL] = tol
    so.iparam[sn.SICONOS_IPARAM_MAX_ITER] = 10000
    return so
for m in methods:
    sid = getattr(sn, m)
    fresh = m.endswith("NSN_AC")     # NSN_AC keeps state in its options: reused, it fails on Capsules
    so = options(sid)
    z, w = np.zeros(3 * nc), np.zeros(3 * nc)
    fails = 0
    p = sn.FrictionContactProblem(3, nc, base.M, qs[0], mu)      # warm-up
    sn.fc3d_driver(p, z, w, so)
    z[:] = 0.0
    t0 = time.perf_counter()
    done = 0
    for q in qs:
        p = sn.FrictionContactProblem(3, nc, base.M, q, mu)
        info = sn.fc3d_driver(p, z, w, options(sid) if fresh else so)   # z: the previous reaction (warm start)
        fails += info != 0
        done += 1
        if time.perf_counter() - t0 > budget:
            break
    out[m] = {"time": (time.perf_counter() - t0) / done, "fails": int(fails), "done": done}
print(json.dumps(out))
"""


def data_dir(arg):
    if arg:
        return Path(arg)
    if os.environ.get("NSOPT_DATA"):
        return Path(os.environ["NSOPT_DATA"])
    return ROOT.parent / "shared" / "siconos-data"


def sequence(q0, n, drift, seed=0):
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0.0, 2.0 * np.pi, q0.shape[0])
    k = np.arange(n)[:, None]
    return q0[None, :] * (1.0 + drift * np.sin(0.1 * k + phase[None, :]))


def run_fresh(p, qs, method):
    """(a): with ``--new-arrays`` each problem gets its own writable copies of W and mu, made before
    the clock starts (a simulation whose W changes hands new arrays at every step: nothing of the
    last problem's validation is reused); else the loaded problem's own W and mu every time."""
    n = len(qs)
    if os.environ.get("NSOPT_BENCH_NEW_ARRAYS") == "1":
        Ws, mus = [np.array(p.W) for _ in range(n)], [np.array(p.mu) for _ in range(n)]
    else:
        Ws, mus = [p.W] * n, [p.mu] * n
    ok = 0
    t0 = time.perf_counter()
    for q, W, mu in zip(qs, Ws, mus):
        s = nsopt.solve(nsopt.FrictionContact(3, W, q, mu), method=method, tol=TOL, max_iter=MAX_ITER[method])
        ok += s.success
    return (time.perf_counter() - t0) / n, ok


def run_resolve(p, qs, method):
    ws = nsopt.Workspace()
    prev = None
    ok = 0
    t0 = time.perf_counter()
    for q in qs:
        prev = nsopt.solve(p.replace(q=q), method=method, tol=TOL, max_iter=MAX_ITER[method], workspace=ws,
                           warm_start=prev)
        ok += prev.success
    return (time.perf_counter() - t0) / len(qs), ok


def run_kernels(p, qs):
    """The compiled work of nsgs on the same sequence (warm-started): the one kernel call of a solve
    (``_gs_kernels.nsgs_fc_solve``: u = Wr + q, the error, the sweeps, the stops), with its
    arguments as ``nsgs`` passes them and called as it calls it (the sweeper's compiled entry point,
    without numba's dispatch, where the tree has one), without ``nsopt.solve`` around it."""
    from nsopt.solvers import _gs_kernels as K
    from nsopt.solvers.nsgs import _NO_VALUE, _Sweeper

    probs = [p.replace(q=q) for q in qs]      # read-only q, as the kernel sees it inside solve
    qnorms = [pk.qnorm for pk in probs]
    sw = _Sweeper(p)
    r, u, state, best = np.zeros(p.size), np.empty(p.size), sw.state, sw.best
    cap = max(1, 10**7 // sw.work)
    args = (_NO_VALUE, TOL, MAX_ITER["nsgs"], 1e-13, 10, 1.0, False)
    kernel = getattr(sw, "kernel", K.nsgs_fc_solve)
    state[3] = K.FRESH       # load the compiled kernel (from numba's cache) outside the measure
    kernel(*sw.head, p.q, p.mu, r, u, *args, p.qnorm, 50, cap, 4 * cap)
    r[:] = 0.0
    t0 = time.perf_counter()
    for pk, qn in zip(probs, qnorms):
        state[3] = K.FRESH
        while True:
            kernel(*sw.head, pk.q, pk.mu, r, u, *args, qn, 50, cap, 4 * cap)
            if state[3] != K.RUNNING:
                break
    return (time.perf_counter() - t0) / len(qs)


# ------------------------------------------------------------------ a 1x1 LCP (bouncing ball) by lemke
_SICONOS_LCP = r"""
import json, sys, time
import numpy as np
import siconos.numerics as sn
qs = np.load(sys.argv[1]); M = np.load(sys.argv[2]); tol = float(sys.argv[3])
so = sn.SolverOptions(sn.SICONOS_LCP_LEMKE)
so.dparam[sn.SICONOS_DPARAM_TOL] = tol
n = M.shape[0]
z, w = np.zeros(n), np.zeros(n)
sn.linearComplementarity_driver(sn.LCP(M, qs[0]), z, w, so)      # warm-up
z[:] = 0.0
fails = 0
t0 = time.perf_counter()
for q in qs:
    fails += sn.linearComplementarity_driver(sn.LCP(M, q), z, w, so) != 0   # z: the previous solution
print(json.dumps({"time": (time.perf_counter() - t0) / len(qs), "fails": int(fails), "done": len(qs)}))
"""


def ball_sequence(n):
    """The one-step LCPs of a bouncing ball over ``n`` steps of Moreau-Jean (h = 1e-3, m = 1, g = 9.81,
    restitution 0.5, from 1 m): W = 1/m, q = v_free + e min(v_k, 0) on the steps where the
    contact is active (predicted gap x + h v / 2 <= 0): impacts, lift-offs, then the ball at
    rest (q < 0 at every step). Returns the q of those steps and W."""
    h, g, e, m = 1e-3, 9.81, 0.5, 1.0
    x, v = 1.0, 0.0
    qs = []
    for _ in range(n):
        vfree = v - h * g
        if x + 0.5 * h * v <= 0.0:
            q = vfree + e * min(v, 0.0)
            qs.append(q)
            v = vfree + max(0.0, -q)          # lambda = -q / W, W = 1/m: the impulse
        else:
            v = vfree
        x += h * v
    return np.array(qs)[:, None], np.array([[1.0 / m]])


def _lcp_fresh(M, qs):
    t0 = time.perf_counter()
    for q in qs:
        nsopt.solve(nsopt.LCP(M, q), "lemke", tol=TOL)
    return (time.perf_counter() - t0) / len(qs)


def _lcp_resolve(p, qs):
    ws, z, ok = nsopt.Workspace(), None, 0
    t0 = time.perf_counter()
    for q in qs:
        s = nsopt.solve(p.replace(q=q), "lemke", tol=TOL, warm_start=z, workspace=ws)
        z = s.z if s.z[0] != 0.0 else None      # the modeling layer passes None for a zero impulse
        ok += s.success
    return (time.perf_counter() - t0) / len(qs), ok


def _lcp_kernel(p, qs):
    """The compiled work alone: lemke's iteration 0 (``_tableau.lcp_start``, as lemke calls it)."""
    from nsopt.problems._base import norm2
    from nsopt.solvers._tableau import lcp_start as _lcp_start

    probs = [p.replace(q=q) for q in qs]
    z, w = np.zeros(1), np.empty(1)
    _lcp_start(p.M, p.q, z, w, True, norm2(p.q), TOL)
    t0 = time.perf_counter()
    for pk in probs:
        _lcp_start(pk.M, pk.q, z, w, True, norm2(pk.q), TOL)
    return (time.perf_counter() - t0) / len(qs)


def _lcp_siconos(M, qs):
    with tempfile.TemporaryDirectory() as d:
        np.save(Path(d) / "qs.npy", qs)
        np.save(Path(d) / "M.npy", M)
        r = subprocess.run([SICONOS_PY, "-c", _SICONOS_LCP, str(Path(d) / "qs.npy"), str(Path(d) / "M.npy"),
                            str(TOL)], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print("  Siconos LCP worker failed:", r.stderr[-300:])
        return float("nan"), None
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return out["time"], f'{out["done"] - out["fails"]}/{out["done"]}'


def run_lcp(steps, siconos, repeat, other=None):
    qs, M = ball_sequence(steps)
    n = len(qs)
    p = nsopt.LCP(M, qs[0])
    nsopt.solve(p, "lemke")
    siconos = siconos and shutil.which(SICONOS_PY)
    tf = tr = tk = ts = of = orr = float("inf")
    sok = None
    for _ in range(repeat):      # best of ``repeat``, the measures in turns
        tf = min(tf, _lcp_fresh(M, qs))
        t, ok = _lcp_resolve(p, qs)
        tr = min(tr, t)
        tk = min(tk, _lcp_kernel(p, qs))
        if siconos:
            t, sok = _lcp_siconos(M, qs)
            ts = min(ts, t)
        if other:
            o = run_other(other, "lcp", qs, M)
            if o:
                of, orr = min(of, o["fresh"]), min(orr, o["resolve"])
    if not siconos:
        ts = float("nan")
    free = int(np.sum(qs >= 0))
    print(f"\nbouncing ball 1x1 LCP, lemke: {steps} steps, {n} with an active contact ({free} with q >= 0), "
          f"tol {TOL:g}")
    print(f"  {'method':8s} {'fresh us':>9s} {'resolve us':>10s} {'siconos us':>10s} "
          f"{'fresh/sic':>9s} {'res/sic':>8s}  solved (resolve, siconos)")
    print(f"  {'lemke':8s} {us(tf)} {us(tr):>10s} {us(ts):>10s} {tf / ts:9.2f} {tr / ts:8.2f}  ({ok}, {sok})")
    print(f"  {'':8s} compiled iteration 0 alone {us(tk)} us -> fixed cost of a re-solve {us(tr - tk)} us")
    row = {"problem": "ball-1x1-lcp", "nc": 1, "n": n, "method": "lemke", "fresh_us": tf * 1e6,
           "resolve_us": tr * 1e6, "siconos_us": ts * 1e6, "fresh_over_resolve": tf / tr,
           "resolve_over_siconos": tr / ts, "fresh_over_siconos": tf / ts, "solved_fresh": None,
           "solved_resolve": ok, "solved_siconos": sok, "kernel_us": tk * 1e6, "fixed_us": (tr - tk) * 1e6}
    if other and math.isfinite(of):
        _other_line(f"{other}", tf, tr, of, orr)
        row.update(other_fresh_us=of * 1e6, other_resolve_us=orr * 1e6)
    return row


def run_other(tree, kind, *arrays_and_args):
    """One turn of the fresh and re-solve measures on another nsopt tree (``--compare-to``), in a
    subprocess that imports that tree (``NSOPT_BENCH_TREE``): kind "fc" with (path, qs, method), or
    "lcp" with (qs, M). Returns {"fresh": seconds, "resolve": seconds} per solve, or None."""
    with tempfile.TemporaryDirectory() as d:
        args = []
        for i, a in enumerate(arrays_and_args):
            if isinstance(a, np.ndarray):
                f = Path(d) / f"a{i}.npy"
                np.save(f, a)
                args.append(str(f))
            else:
                args.append(str(a))
        env = dict(os.environ, NSOPT_BENCH_TREE=str(tree), PYTHONPATH=str(tree), OMP_NUM_THREADS="1",
                   OPENBLAS_NUM_THREADS="1")
        r = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", kind, *args],
                           capture_output=True, text=True, env=env, timeout=3600)
    if r.returncode != 0:
        print(f"  --compare-to worker failed: {r.stderr[-500:]}")
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def worker(argv):
    """``--worker fc PATH QS METHOD`` / ``--worker lcp QS M``: one warm-up, then one measure of the
    fresh and the re-solve sequences with the nsopt this process imports (the --compare-to tree)."""
    kind = argv[0]
    if kind == "fc":
        p, qs, m = load(Path(argv[1])), np.load(argv[2]), argv[3]
        run_fresh(p, qs[:5], m)
        run_resolve(p, qs[:5], m)
        out = {"fresh": run_fresh(p, qs, m)[0], "resolve": run_resolve(p, qs, m)[0]}
    else:
        qs, M = np.load(argv[1]), np.load(argv[2])
        p = nsopt.LCP(M, qs[0])
        _lcp_fresh(M, qs[:5])
        _lcp_resolve(p, qs[:5])
        out = {"fresh": _lcp_fresh(M, qs), "resolve": _lcp_resolve(p, qs)[0]}
    print(json.dumps(out))
    return 0


def _other_line(label, tf, tr, of, orr):
    """The --compare-to line: the other tree's fresh and re-solve times and this tree's ratios to them."""
    print(f"  {'':8s} {label}: fresh {us(of)} us, resolve {us(orr)} us -> this/that: fresh {tf / of:.2f}, "
          f"resolve {tr / orr:.2f}")


def run_siconos(path, qs, methods, budget):
    if not (shutil.which(SICONOS_PY) and subprocess.run([SICONOS_PY, "-c", "import siconos.numerics"],
                                                        capture_output=True).returncode == 0):
        print("  (Siconos not available under /usr/bin/python3: comparison skipped)")
        return None
    with tempfile.TemporaryDirectory() as d:
        qf = Path(d) / "qs.npy"
        np.save(qf, qs)
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        r = subprocess.run([SICONOS_PY, "-c", _SICONOS_WORKER, str(path), str(qf),
                            ",".join(SICONOS_IDS[m] for m in methods), str(TOL), str(budget)],
                           capture_output=True, text=True, env=env, timeout=3600)
    if r.returncode != 0:
        print("  Siconos worker failed:", r.stderr[-500:])
        return None
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return {m: out[SICONOS_IDS[m]] for m in methods}


def us(t):
    return f"{t * 1e6:9.1f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data")
    ap.add_argument("--n", type=int, default=1000, help="length of the one-contact sequence")
    ap.add_argument("--n-big", type=int, default=100,
                    help="length of the Capsules-sized sequence (Siconos needs up to seconds per solve there)")
    ap.add_argument("--drift", type=float, default=0.01, help="relative amplitude of the change of q")
    ap.add_argument("--big", default="fc3d/Capsules-i101-404.dat")
    ap.add_argument("--methods", nargs="+", default=["nsgs", "nsn-ac"])
    ap.add_argument("--no-siconos", action="store_true")
    ap.add_argument("--repeat", type=int, default=15,
                    help="one-contact and LCP sequences: best of this many runs of each measure (taken in turns)")
    ap.add_argument("--n-lcp", type=int, default=6000, help="time steps of the bouncing ball (1x1 LCP, lemke)")
    ap.add_argument("--no-lcp", action="store_true", help="skip the bouncing-ball LCP sequence")
    ap.add_argument("--skip-big", action="store_true", help="skip the Capsules-sized problem")
    ap.add_argument("--compare-to", metavar="DIR",
                    help="another nsopt tree (e.g. a git worktree of an earlier commit): its fresh and re-solve "
                         "times in the same turns, in a subprocess, and the ratios to them")
    ap.add_argument("--new-arrays", action="store_true",
                    help="fresh solves (a) on new copies of W and mu each (made before the clock starts), "
                         "as a simulation whose W changes at every step")
    ap.add_argument("--siconos-budget", type=float, default=120.0,
                    help="seconds per (problem, Siconos solver): the sequence is cut there, the time per "
                         "solve is over the solves done")
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        return worker(argv[1:])
    a = ap.parse_args(argv)
    if a.new_arrays:      # read by run_fresh, here and in the --compare-to worker
        os.environ["NSOPT_BENCH_NEW_ARRAYS"] = "1"
    data = data_dir(a.data)
    rows = []
    for rel, n in (("fc3d/FrictionContact3D_1c.dat", a.n),) + (() if a.skip_big else ((a.big, a.n_big),)):
        path = data / rel
        if not path.is_file():
            print(f"{rel}: not found under {data}, skipped")
            continue
        p = load(path)
        qs = sequence(np.asarray(p.q), n, a.drift)
        print(f"\n{rel}: {p.nc} contact(s), {n} right-hand sides, tol {TOL:g}")
        for m in a.methods:     # JIT / cache warm-up outside the measures
            nsopt.solve(p, method=m, tol=TOL)
        # the one-contact sequence is cheap: every measure is the best of --repeat runs, taken in
        # turns (nsopt, Siconos), so that the load of a shared machine disturbs the ratios less
        rep = a.repeat if p.nc == 1 else 1
        sic = None
        for _ in range(rep):
            s1 = None if a.no_siconos else run_siconos(path, qs, a.methods, a.siconos_budget)
            if s1 is not None:
                sic = s1 if sic is None else {m: min(sic[m], s1[m], key=lambda x: x["time"]) for m in a.methods}
        with_kern = "nsgs" in a.methods and p.nc == 1
        kern = None
        print(f"  {'method':8s} {'fresh us':>9s} {'resolve us':>10s} {'siconos us':>10s} "
              f"{'fresh/sic':>9s} {'res/sic':>8s}  solved (fresh, resolve, siconos)")
        for m in a.methods:
            # in turns (kernel, re-solve, fresh, the other tree): the machine's speed drifts less
            # between the measures whose difference is the fixed cost, or whose ratio is reported
            fr, rs, ks, ot = [], [], [], []
            for _ in range(rep):
                if m == "nsgs" and with_kern:
                    ks.append(run_kernels(p, qs))
                rs.append(run_resolve(p, qs, m))
                fr.append(run_fresh(p, qs, m))
                if a.compare_to and p.nc == 1:
                    o = run_other(a.compare_to, "fc", path, qs, m)
                    if o:
                        ot.append(o)
            tf, okf = min(fr)
            tr, okr = min(rs)
            if ks:
                kern = min(ks)
            ts = sic[m]["time"] if sic else float("nan")
            sok = f'{sic[m]["done"] - sic[m]["fails"]}/{sic[m]["done"]}' if sic else None
            print(f"  {m:8s} {us(tf)} {us(tr):>10s} {us(ts):>10s} {tf / ts:9.2f} {tr / ts:8.2f}  "
                  f"({okf}, {okr}, {sok})")
            row = {"problem": rel, "nc": p.nc, "n": n, "method": m, "fresh_us": tf * 1e6,
                   "resolve_us": tr * 1e6, "siconos_us": ts * 1e6, "fresh_over_resolve": tf / tr,
                   "resolve_over_siconos": tr / ts, "fresh_over_siconos": tf / ts, "solved_fresh": okf,
                   "solved_resolve": okr, "solved_siconos": sok}
            if ot:
                of, orr = min(o["fresh"] for o in ot), min(o["resolve"] for o in ot)
                _other_line(a.compare_to, tf, tr, of, orr)
                row.update(other_fresh_us=of * 1e6, other_resolve_us=orr * 1e6)
            if m == "nsgs" and kern is not None:
                row["kernel_us"] = kern * 1e6
                row["fixed_us"] = (tr - kern) * 1e6
                print(f"  {'':8s} nsgs kernel alone {us(kern)} us -> fixed cost of a re-solve "
                      f"{us(tr - kern)} us")
            rows.append(row)
    if not a.no_lcp:
        rows.append(run_lcp(a.n_lcp, not a.no_siconos, a.repeat, a.compare_to))
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    if rows:
        keys = sorted({k for r in rows for k in r}, key=lambda k: list(rows[0]).index(k) if k in rows[0] else 99)
        with open(out / "bench_resolve.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)
        print(f"\nCSV: {out / 'bench_resolve.csv'}")


if __name__ == "__main__":
    sys.exit(main())
