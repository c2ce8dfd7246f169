"""Semismooth Newton for 3D friction contact
=========================================

Semismooth Newton for 3-D friction contact: Alart–Curnier, Fischer–Burmeister, proximal point.

    python examples/fc3d_newton.py [path/to/problem.dat]

Solves a generated problem with a known solution (sticking, sliding and take-off contacts), then one of
Siconos' test problems, ``fc3d/Capsules-i101-404.dat`` (225 contacts, from the sample that ships with
nsopt; give another file, e.g. the corpus' ``fc3d/RockPile_tob1.dat``, as the argument), with each
Newton method and, for contrast, Gauss–Seidel (``nsgs``), and shows a warm start from NSGS.

The figure is the lesson: the error against the iterations (a Newton method ends in a few steps, each
of which solves a linear system) and against time (where the cheap sweeps of Gauss–Seidel need
thousands of steps for the same error). Writes ``fc3d_newton.png``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

import nsopt
from nsopt import data, generate

from _plotting import convergence, convergence_axes, figure_path, pyplot

# NSOPT_QUICK=1 (the site's build): shorter time budgets on a hard problem, the same calls
LONG, SHORT = (8, 2) if os.environ.get("NSOPT_QUICK") == "1" else (60, 10)
NEWTON = ("nsn-ac", "nsn-fb", "prox")


def show(label, sol):
    print(f"  {label:28s} {sol.status.value:10s} error {sol.error:9.2e}  {sol.nit:5d} it  {sol.solve_time:7.3f} s")


def main():
    # 1. generated: 30 contacts, mixed stick / slide / take-off, known solution
    p, ref = generate.friction_contact(nc=30, dim=3, seed=1, mu=0.5)
    print(f"generated {p}: states {np.bincount(ref['states'], minlength=3)} (take-off, stick, slide)")
    for m in NEWTON:
        s = nsopt.solve(p, method=m, tol=1e-10, history=True)
        show(m, s)
        assert s.error == p.error(s.r)                # the error is nsopt's own measure
    s = nsopt.solve(p, method="nsn-ac", tol=1e-10, rho=1.0, line_search="armijo")
    show("nsn-ac rho=1, armijo", s)

    # 2. one of Siconos' test problems (the shipped sample's Capsules, or the file given)
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else data.sample("fc3d/Capsules-i101-404.dat")
    p = nsopt.io.load(path)
    print(f"\n{path.name}: {p}")
    t0 = time.perf_counter()
    runs = {}
    for m in NEWTON + ("nsgs",):
        nsopt.solve(p, method=m, max_iter=1)            # the kernels loaded: not in the times below
        runs[m] = nsopt.solve(p, method=m, tol=1e-8, history=True, time_limit=LONG,
                              max_iter=100_000 if m == "nsgs" else None)
        show(m, runs[m])
    for m in ("nsn-ac", "prox"):   # a short budget: the best iterate comes back with its status
        show(f"{m} (time_limit={SHORT})", nsopt.solve(p, method=m, tol=1e-8, time_limit=SHORT))
    # warm start: a few NSGS sweeps, then Newton from there
    g = nsopt.solve(p, method="nsgs", tol=1e-8, max_iter=200)
    show("nsgs (200 sweeps)", g)
    show("  then nsn-fb from it", nsopt.solve(p, method="nsn-fb", tol=1e-8, r0=g.r, time_limit=LONG))
    print(f"total {time.perf_counter() - t0:.1f} s")
    assert all(runs[m].success for m in ("nsn-ac", "nsn-fb")) or len(sys.argv) > 1

    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.4), layout="constrained")
    for i, (m, s) in enumerate(runs.items()):
        style = dict(color=f"C{i}", marker="o" if m != "nsgs" else None, ms=3, lw=1.4)
        convergence(ax1 if m != "nsgs" else None, ax2, s, f"{m}: {s.nit} it, {s.solve_time:.3g} s", **style)
    convergence_axes(ax1, ax2, 1e-8, "Newton iteration")
    ax1.set_title(f"{path.name} ({p.nc} contacts): the Newton methods", fontsize=10)
    ax2.set_title("against time, with Gauss–Seidel (nsgs) for contrast", fontsize=10)
    out = figure_path("fc3d_newton.png")
    fig.savefig(out, dpi=100)
    print(f"figure: {out}")


if __name__ == "__main__":
    main()
