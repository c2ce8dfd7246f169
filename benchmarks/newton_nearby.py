"""A nearby problem against a cold start: nsn-ac on fc3d problems whose q is moved by a relative 1e-6.

    python benchmarks/newton_nearby.py [--files fc3d/Capsules-i100-1090.dat ...] [--seeds 5] [--tols 1e-8 1e-12]
                                       [--in-range]

For each file and tolerance: the unperturbed solve (cold), then for each seed the perturbed problem
(``q * (1 + 1e-6 * rng.standard_normal(n))``) solved cold and warm-started from the unperturbed solution;
prints iterations and times, and the ratios warm/cold and cold(perturbed)/cold(unperturbed) measured in the
same run (issue 31: a warm start from a nearby solution never costs more than a cold start).

A q moved off the range of a singular W (the default move, not ``--in-range``) has no exact solution: to
1e-12, nsn-ac's proximal continuation stops ``stalled`` at ~1e-10 (the best error not halved over 100
iterations) rather than creeping to ``max_iter``; with ``--in-range`` the nearby problems are solved.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import nsopt


def _solve(p, tol, **kw):
    t = time.perf_counter()
    s = nsopt.solve(p, method="nsn-ac", tol=tol, max_iter=2000, **kw)
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="+", default=["fc3d/Capsules-i100-1090.dat"])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--tols", nargs="+", type=float, default=[1e-8, 1e-12])
    ap.add_argument("--in-range", action="store_true", help="project the move of q on the range of W")
    a = ap.parse_args(argv)
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
                c, tc = _solve(pp, tol)
                w, tw = _solve(pp, tol, r0=s0.r)
                print(f"  seed {seed}: cold {c.status.value} nit {c.nit:4d} error {c.error:.1e} {tc * 1e3:7.0f} ms"
                      f" ({tc / t0:6.1f}x unperturbed) | warm {w.status.value} nit {w.nit:4d} error {w.error:.1e}"
                      f" {tw * 1e3:7.0f} ms (warm/cold time {tw / tc:5.2f}, nit {w.nit / max(c.nit, 1):5.2f})")


if __name__ == "__main__":
    main()
