"""Semismooth Newton for 3D friction contact
=========================================

Semismooth Newton for 3-D friction contact: Alart–Curnier, Fischer–Burmeister, proximal point.

    python examples/fc3d_newton.py [path/to/problem.dat]

Solves a generated problem with a known solution (sticking, sliding and take-off contacts), then,
when the shared Siconos corpus is present, ``fc3d/RockPile_tob1.dat`` (463 contacts, which no
Siconos 4.4 solver brings to 1e-8 within a minute), and shows a warm start from NSGS.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

import nsopt
from nsopt import generate


# NSOPT_QUICK=1 (the site's build): shorter time budgets on the corpus problem, the same calls
LONG, SHORT = (8, 2) if os.environ.get("NSOPT_QUICK") == "1" else (60, 10)


def show(label, sol):
    print(f"  {label:28s} {sol.status.value:10s} error {sol.error:9.2e}  {sol.nit:5d} it  {sol.solve_time:7.3f} s")


def main():
    # 1. generated: 30 contacts, mixed stick / slide / take-off, known solution
    p, ref = generate.friction_contact(nc=30, dim=3, seed=1, mu=0.5)
    print(f"generated {p}: states {np.bincount(ref['states'], minlength=3)} (take-off, stick, slide)")
    for m in ("nsn-ac", "nsn-fb", "prox"):
        s = nsopt.solve(p, method=m, tol=1e-10, history=True)
        show(m, s)
        assert s.error == p.error(s.r)                # the error is nsopt's own measure
    s = nsopt.solve(p, method="nsn-ac", tol=1e-10, rho=1.0, line_search="armijo")
    show("nsn-ac rho=1, armijo", s)

    # 2. a corpus problem (RockPile by default)
    from nsopt.data import data_dir
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else data_dir() / "fc3d" / "RockPile_tob1.dat"
    if not path.is_file():
        print(f"(no corpus problem at {path}: skipped)")
        return
    from nsopt.io import load

    p = load(path)
    print(f"\n{path.name}: {p}")
    t0 = time.perf_counter()
    s = nsopt.solve(p, method="nsn-fb", tol=1e-8, time_limit=LONG)
    show("nsn-fb (hybrid prox)", s)
    print(f"    {s.message}")
    for m in ("nsn-ac", "prox"):   # a short budget: the best iterate comes back with its status
        show(m, nsopt.solve(p, method=m, tol=1e-8, time_limit=SHORT))
    # warm start: a few NSGS sweeps, then Newton from there
    if "nsgs" in nsopt.methods(p):
        g = nsopt.solve(p, method="nsgs", tol=1e-8, max_iter=200)
        show("nsgs (200 sweeps)", g)
        show("  then nsn-fb from it", nsopt.solve(p, method="nsn-fb", tol=1e-8, r0=g.r, time_limit=LONG))
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
