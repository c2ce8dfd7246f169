"""The factorisation homes folded into :mod:`nsopt.linalg` (issue 31 §1): the same calls on two source
trees (``--base``: the tree before, ``--new``: after), in turns in one run, each in its own process;
prints per case the median time of each, their ratio (new / base) and the largest difference of the
results (relative to their largest entry).

Cases: the stepper's iteration matrices (a coupled 2-dof system and a ball, 2000 steps: ``Factor``
-> ``factor_iteration_matrix``), ``sensitivity`` of a dense LCP (n = 300, ``jacobian("q")``) and of a
sparse one (n = 4000, 20 directions), ``GlobalFrictionContact.local`` (sparse M, 300 dofs), NSGS on
a GenericMechanical problem with equality blocks (their inverses), ``MultipleImpact`` sensitivity
(block-diagonal M, 40 dofs),
``SubstituteEqualities`` and the MLCP -> LCP Schur reduction.

Run: ``python benchmarks/factor_homes_before_after.py --base /tmp/base_tree --new . [--repeat 5]``
(``--base``: e.g. ``git archive <commit> nsopt | tar -x -C /tmp/base_tree``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from before_after import in_turns

CASES = ["stepper", "sens_dense", "sens_sparse", "gfc_local", "nsgs_gmp", "impact_sens", "subst_eq", "mlcp_schur"]

WORKER = r'''
import os, sys, time, json
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np, scipy.sparse as sp
import nsopt
from nsopt import generate as g

def case(name):
    if name == "stepper":
        import nsopt.modeling as nm
        def run():
            body = nm.LagrangianLinearTIDS(q0=[0.0, 1.0], v0=[0.0, 0.0], M=[[2.0, 0.5], [0.5, 1.0]],
                                           K=[[10.0, -2.0], [-2.0, 5.0]], fext=[0.0, -9.81])
            ball = nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-9.81])
            nsds = nm.NonSmoothDynamicalSystem(0.0, 10.0)
            nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[0.0, 1.0]])), body)
            nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.9), nm.LagrangianLinearTIR([[1.0]])), ball)
            tr = nm.TimeStepping(nsds, 0.005, nm.MoreauJeanOSI(0.5), osns="lcp", method="lemke", tol=1e-12).run()
            return np.concatenate([tr.q(body).ravel(), tr.q(ball).ravel()])
        return run
    if name in ("sens_dense", "sens_sparse"):
        if name == "sens_dense":
            p = g.lcp(300, seed=0)[0]
        else:
            n = 4000
            M = sp.diags([-1.0, 4.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
            p = nsopt.LCP(M, np.random.default_rng(0).standard_normal(n))
        sol = nsopt.solve(p, tol=1e-12)
        D = np.random.default_rng(1).standard_normal((20, p.size))
        def run():
            s = nsopt.sensitivity(p, sol)
            if name == "sens_dense":
                return s.jacobian("q")["z"].ravel()
            return np.concatenate([s.jvp(q=d)["z"] for d in D])
        return run
    if name == "gfc_local":
        p0 = g.global_friction_contact(nc=60, ndof=300, seed=3)[0]
        def run():
            p = nsopt.GlobalFrictionContact(sp.csr_matrix(p0.M), p0.H, p0.q, p0.b, p0.mu)
            loc = p.local()
            W = loc.W.toarray() if sp.issparse(loc.W) else np.asarray(loc.W)
            return np.concatenate([W.ravel(), loc.q, p.v(np.ones(p.size))])
        return run
    if name == "nsgs_gmp":
        sys.path.insert(0, "TESTS")
        from test_solvers_nsgs import _gmp
        ps = [_gmp(s, kinds=("equality", "lcp", "equality", "fc3d", "relay", "equality", "fc3d")) for s in range(5)]
        def run():
            return np.concatenate([nsopt.solve(p, method="nsgs", tol=1e-12, max_iter=20000, equalities="gs").r for p in ps])
        return run
    if name == "impact_sens":
        rng = np.random.default_rng(2)
        import scipy.linalg as sla
        blocks = [(lambda A: A @ A.T + 4 * np.eye(4))(rng.standard_normal((4, 4))) for _ in range(10)]
        M = sla.block_diag(*blocks)           # 10 bodies of 4 dofs, contact i on body i alone (W diagonal)
        H = np.zeros((10, 40)); v = rng.standard_normal(40)
        for i in range(10):
            H[i, 4 * i:4 * i + 4] = rng.standard_normal(4)
        p = nsopt.MultipleImpact(M, H, v, restitution=0.5, stiffness=1e6)
        sol = nsopt.solve(p)
        def run():
            s = nsopt.sensitivity(p, sol)
            return np.concatenate([s.jvp(v=np.ones(40))["v"], s.vjp(v=np.ones(40))["v"]])
        return run
    if name == "subst_eq":
        sys.path.insert(0, "TESTS")
        from test_solvers_nsgs import _gmp
        ps = [_gmp(s) for s in range(5)]
        def run():
            return np.concatenate([nsopt.solve(p, method="nsgs", tol=1e-12, max_iter=20000, equalities="substitute").r for p in ps])
        return run
    if name == "mlcp_schur":
        from nsopt.reductions.to_lcp import MLCPToLCP
        rng = np.random.default_rng(4)
        M = g.spd_matrix(200, rng); q = rng.standard_normal(200); eq = np.arange(200) < 80
        def run():
            Ml, ql, _ = MLCPToLCP.matrices(M, q, eq, reduction="schur")
            return np.concatenate([Ml.ravel(), ql])
        return run

name, reps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
run = case(name)
x = run()                       # (warm: compilation, caches)
ts = []
for _ in range(reps):
    t = time.thread_time(); run(); ts.append(time.thread_time() - t)
np.save(out, np.asarray(x, float))
print(json.dumps(ts))
'''


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", default=str(Path(__file__).resolve().parents[1]))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cases", nargs="*", default=CASES)
    a = ap.parse_args(argv)
    import numpy as np

    tests = str(Path(__file__).resolve().parents[1] / "tests")
    src = WORKER.replace("TESTS", tests)
    print(f"{'case':12s} {'base s':>9s} {'new s':>9s} {'new/base':>8s} {'max rel diff':>12s}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.cases:
            xs = {}

            def run(tag, tree, name=name, xs=xs):
                out = os.path.join(tmp, f"{name}_{tag}.npy")
                env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
                r = subprocess.run([sys.executable, "-c", src, name, str(a.repeat), out], env=env,
                                   capture_output=True, text=True, check=False)
                if r.returncode:
                    sys.exit(f"{name} ({tag}): {r.stderr[-3000:]}")
                xs[tag] = np.load(out)
                return json.loads(r.stdout.strip().splitlines()[-1])

            # in turns: base, new, new, base (before_after.in_turns)
            times = {tag: [t for ts in runs for t in ts]
                     for tag, runs in in_turns({"base": a.base, "new": a.new}, 2, run).items()}
            tb, tn = statistics.median(times["base"]), statistics.median(times["new"])
            xb, xn = xs["base"], xs["new"]
            diff = float(np.max(np.abs(xb - xn)) / max(float(np.max(np.abs(xb))), 1e-300)) if xb.shape == xn.shape else float("nan")
            print(f"{name:12s} {tb:9.4f} {tn:9.4f} {tn / tb:8.3f} {diff:12.2e}", flush=True)


if __name__ == "__main__":
    main()
