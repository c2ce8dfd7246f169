"""A nearby problem against a cold start: nsn-ac on fc3d problems whose q is moved by a relative 1e-6.

    python benchmarks/newton_nearby.py [--files fc3d/Capsules-i100-1090.dat ...] [--seeds 5] [--tols 1e-8 1e-12]
                                       [--in-range] [--max-iter N]
    python benchmarks/newton_nearby.py --capture cubes10 DIR [--T 0.3] [--tol 1e-9]
    python benchmarks/newton_nearby.py --sample DIR [--tol 1e-9]

For each file and tolerance: the unperturbed solve (cold), then for each seed the perturbed problem
(``q * (1 + 1e-6 * rng.standard_normal(n))``) solved cold and warm-started from the unperturbed solution;
prints iterations and times, and the ratios warm/cold and cold(perturbed)/cold(unperturbed) measured in the
same run (issue 31: a warm start from a nearby solution never costs more than a cold start).

``--capture SCENE DIR`` runs a scene of ``rigid_scenes.py`` (nsn-ac, ``--tol``, to ``--T``) and writes, for each
step whose solve took more than 60 iterations or a second attempt, ``W_kkkk.npz`` and ``p_kkkk.npz`` (q, mu, warm:
the scene's warm start; the format of ``pile_newton_sample.py``); ``--sample DIR`` solves each such problem cold
and from its warm start (the hyperstatic 10-cube pile: a warm start that stalls).

A q moved off the range of a singular W (the default move, not ``--in-range``) still has a solution (the
problem is strictly feasible: some r gives W r + q inside the dual cone with a margin, which is Acary, Cadoux,
Lemaréchal & Malick's condition of existence), but a degenerate one: nsopt's nsn-ac, nsn-fb and prox and Siconos
4.4's NSGS, NSN_AC, NSN_FB, PROX and ADMM all creep below ~1e-9 (nsn-ac's proximal continuation halves its
error every ~200 iterations, with long plateaus; the slow steps of a hyperstatic pile creep alike and converge, so
a stop on the observed rate would end them too), to ``max_iter``; with ``--in-range`` the nearby problems are
solved in a few iterations.

The active-set polish of a stalled Newton (``nsopt.solvers.newton._active_set_polish``, up to 300 unknowns) ends the
pile steps whose plateau is a few sticking contacts of the solution on their cone's boundary (``--sample``: the
10-cube pile's step 3, cold 113 -> 38 iterations, warm 139 -> 64). On the nearby Capsules (828 unknowns) it is not
tried, and forced (1.4 s a polish) it does not lower the error from the Newton's stall (3.1e-9) nor from the
continuation's 1000th iterate (1.3e-11): there the iterates creep along W's null space while sticking contacts turn
sliding one by one (156 sticking at iteration 100, 150 at 1000), the reduced system of any one iterate's active set
is inconsistent at ~2e-11 (q off the range of the sticking rows), and 4000 iterations reach 3e-12.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

import nsopt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))     # rigid_scenes (--capture)


def _solve(p, tol, max_iter=None, **kw):
    t = time.perf_counter()
    s = nsopt.solve(p, method="nsn-ac", tol=tol, max_iter=max_iter, **kw)
    return s, time.perf_counter() - t


def nearby(p, seed, rel=1e-6, in_range=False):
    """p with q moved by a relative ``rel`` (a seeded standard normal per entry); ``in_range``: the move
    projected on the range of W (dense eigendecomposition), so that a q in range(W) stays there."""
    rng = np.random.default_rng(seed)
    dq = rel * p.q * rng.standard_normal(p.q.shape[0])
    if in_range:
        W = p.W.toarray() if hasattr(p.W, "toarray") else np.asarray(p.W)
        ev, V = np.linalg.eigh(0.5 * (W + W.T))
        R = V[:, ev > 1e-10 * ev[-1]]
        dq = R @ (R.T @ dq)
    return nsopt.FrictionContact(p.dim, p.W, p.q + dq, p.mu)


def capture(scene, folder, T, tol):
    """Run ``scene`` and keep its slow one-step problems with their warm starts (see the module docstring)."""
    import rigid_scenes
    import scipy.sparse as sp

    from nsopt import policy
    os.makedirs(folder, exist_ok=True)
    attempt, calls = policy.MethodPolicy.attempt, [0]

    def kept(self, problem, methods, solve, *, tol, warm=None, **kw):
        calls[0] += 1
        s = attempt(self, problem, methods, solve, tol=tol, warm=warm, **kw)
        if s.nit > 60 or len(getattr(s, "trace", None) or ()) > 1:
            k = calls[0]
            sp.save_npz(os.path.join(folder, f"W_{k:04d}.npz"), sp.csr_matrix(problem.W))
            np.savez(os.path.join(folder, f"p_{k:04d}.npz"), q=problem.q, mu=problem.mu,
                     warm=np.zeros(problem.size) if warm is None else warm)
            print(f"solve {k}: {problem.size} unknowns, {s.nit} iterations, {s.status.value}: {s.message}", flush=True)
        return s

    policy.MethodPolicy.attempt = kept
    sc = rigid_scenes.scene(scene)
    rigid_scenes.nsopt_scene(sc).run(T, sc["h"], method="nsn-ac", tol=tol, keep_states=False)


def sample(folder, tol):
    """Each captured problem of ``folder`` solved cold and warm (nsn-ac, ``tol``)."""
    import glob

    import scipy.sparse as sp
    files = sorted(glob.glob(os.path.join(folder, "p_*.npz")))
    for f in files:
        k = os.path.basename(f)[2:6]
        d = np.load(f)
        p = nsopt.FrictionContact(3, sp.load_npz(os.path.join(folder, f"W_{k}.npz")), d["q"], d["mu"])
        if f == files[0]:
            _solve(p, tol)      # compiles the kernels: not timed
        c, tc = _solve(p, tol)
        w, tw = _solve(p, tol, warm_start=d["warm"])
        print(f"solve {k} ({p.size} unknowns): cold {c.status.value} nit {c.nit:4d} error {c.error:.1e} {tc * 1e3:7.0f} ms"
              f" | warm {w.status.value} nit {w.nit:4d} error {w.error:.1e} {tw * 1e3:7.0f} ms (warm/cold time"
              f" {tw / tc:5.2f}, nit {w.nit / max(c.nit, 1):5.2f})\n    cold: {c.message}\n    warm: {w.message}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="+", default=["fc3d/Capsules-i100-1090.dat"])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--tols", nargs="+", type=float, default=[1e-8, 1e-12])
    ap.add_argument("--in-range", action="store_true", help="project the move of q on the range of W")
    ap.add_argument("--max-iter", type=int, default=None, help="nsn-ac's budget (default: its own, 1000)")
    ap.add_argument("--capture", nargs=2, metavar=("SCENE", "DIR"), help="keep a scene's slow step problems in DIR")
    ap.add_argument("--sample", metavar="DIR", help="solve the problems kept by --capture, cold and warm")
    ap.add_argument("--T", type=float, default=0.3, help="--capture: the run's end time")
    ap.add_argument("--tol", type=float, default=1e-9, help="--capture / --sample: the solves' tol")
    a = ap.parse_args(argv)
    if a.capture:
        return capture(*a.capture, a.T, a.tol)
    if a.sample:
        return sample(a.sample, a.tol)
    root = Path(os.environ.get("NSOPT_DATA", "."))
    for f in a.files:
        path = Path(f) if Path(f).exists() else root / f
        p = nsopt.io.load(path)
        _solve(p, 1e-8)      # compiles the kernels: not timed
        for tol in a.tols:
            s0, t0 = _solve(p, tol)
            print(f"{path.name} tol {tol:g}: unperturbed {s0.status.value} nit {s0.nit} {t0 * 1e3:.0f} ms")
            for seed in range(a.seeds):
                pp = nearby(p, seed, in_range=a.in_range)
                c, tc = _solve(pp, tol, a.max_iter)
                w, tw = _solve(pp, tol, a.max_iter, r0=s0.r)
                print(f"  seed {seed}: cold {c.status.value} nit {c.nit:4d} error {c.error:.1e} {tc * 1e3:7.0f} ms"
                      f" ({tc / t0:6.1f}x unperturbed) | warm {w.status.value} nit {w.nit:4d} error {w.error:.1e}"
                      f" {tw * 1e3:7.0f} ms (warm/cold time {tw / tc:5.2f}, nit {w.nit / max(c.nit, 1):5.2f})")


if __name__ == "__main__":
    main()
