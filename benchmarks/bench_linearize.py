"""Time to numeric A, B of the n-link pendulum on a cart: nsopt.symbolic.linearize against SymPy's Linearizer.

    python benchmarks/bench_linearize.py [--n 1 2 3 4 5 6] [--repeat 5] [--profile]

For each n, SymPy's ``n_link_pendulum_on_cart(n, cart_force=True)`` equations are formed once,
outside the timing. Both sides get the same numeric operating point (a generic, non-equilibrium
state, every parameter, the input F and the accelerations the equations give there):

* SymPy: ``KM.to_linearizer()`` then ``.linearize(A_and_B=True, op_point=op, simplify=False)``,
  timed once (its first call; SymPy's cache makes repeats unrepresentative), and the two parts apart;
* nsopt: ``symbolic.linearize(KM, op_point=op, A_and_B=True)``, the whole call, first call and the
  median of ``--repeat`` calls.

Prints both times, the ratio SymPy / nsopt (target >= 10 from n = 4, >= 50 at n = 6), the largest
entry difference of A and B relative to the largest entry, and where nsopt's time goes (general
form, Jacobian evaluation, dense algebra). CSV in ``benchmarks/results/bench_linearize.csv``.
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import pstats
import statistics
import time
from pathlib import Path

import numpy as np
import sympy.physics.mechanics as me
from sympy.physics.mechanics.models import n_link_pendulum_on_cart

from nsopt import symbolic
from nsopt.symbolic import linearization as L


def op_point(KM, seed=0):
    rng = np.random.default_rng(seed)
    t = me.dynamicsymbols._t
    exprs = list(KM.mass_matrix_full) + list(KM.forcing_full)
    syms = sorted(set().union(*[e.free_symbols for e in exprs]) - {t}, key=str)
    op = {s: rng.uniform(0.5, 2.0) for s in syms}
    op.update({x: rng.uniform(-1.0, 1.0) for x in list(KM.q) + list(KM.u)})
    op[me.dynamicsymbols("F")] = 0.3
    # the accelerations at that state, so that SymPy's A (whose mass matrix depends on q) is numeric
    return dict(symbolic.linearize(KM, op).op_point)


def phases(KM, op):
    """nsopt's time split: general form, Jacobians at the point (AD, with their error bounds), dense algebra
    (with the bounds carried through)."""
    t0 = time.perf_counter()
    form = L._form_of(KM, None, None, None, None)
    t1 = time.perf_counter()
    values = {x: float(v) for x, v in op.items()}
    num = L._Numeric(form, values)
    F = num.evaluate()
    t2 = time.perf_counter()
    L._assemble(form, L._with_errors(F), num.seeds, True)
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="cProfile nsopt's call at the largest n")
    args = ap.parse_args(argv)
    rows = []
    print(f"{'n':>2} {'sympy to_lin':>12} {'sympy lin':>10} {'sympy tot':>10} {'nsopt 1st':>10} "
          f"{'nsopt med':>10} {'ratio':>7} {'ratio lin':>9} {'max diff':>9}  nsopt: form / AD / algebra")
    for n in args.n:
        KM = n_link_pendulum_on_cart(n, cart_force=True, joint_torques=False)
        op = op_point(KM)
        t0 = time.perf_counter()
        lin = KM.to_linearizer()
        t1 = time.perf_counter()
        A_s, B_s = lin.linearize(A_and_B=True, op_point=op, simplify=False)
        t2 = time.perf_counter()
        sym_tolin, sym_lin = t1 - t0, t2 - t1
        t3 = time.perf_counter()
        res = symbolic.linearize(KM, op_point=op, A_and_B=True)
        first = time.perf_counter() - t3
        times = []
        for _ in range(args.repeat):
            t4 = time.perf_counter()
            symbolic.linearize(KM, op_point=op, A_and_B=True)
            times.append(time.perf_counter() - t4)
        med = statistics.median(times)
        A_s, B_s = np.array(A_s, dtype=float), np.array(B_s, dtype=float)
        scale = max(1.0, np.abs(A_s).max(), np.abs(B_s).max())
        diff = max(np.abs(res.A - A_s).max(), np.abs(res.B - B_s).max()) / scale
        ph = phases(KM, op)
        total = sym_tolin + sym_lin
        print(f"{n:>2} {sym_tolin:12.3f} {sym_lin:10.3f} {total:10.3f} {first:10.4f} {med:10.4f} "
              f"{total / med:7.0f} {sym_lin / med:9.0f} {diff:9.1e}  "
              f"{ph[0] * 1e3:.1f} / {ph[1] * 1e3:.1f} / {ph[2] * 1e3:.1f} ms")
        rows.append(dict(n=n, sympy_to_linearizer_s=sym_tolin, sympy_linearize_s=sym_lin, sympy_total_s=total,
                         nsopt_first_s=first, nsopt_median_s=med, ratio_total=total / med,
                         ratio_linearize_only=sym_lin / med, max_rel_diff=diff, nsopt_form_s=ph[0],
                         nsopt_ad_s=ph[1], nsopt_algebra_s=ph[2]))
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    with open(out / "bench_linearize.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    if args.profile:
        n = args.n[-1]
        KM = n_link_pendulum_on_cart(n, cart_force=True, joint_torques=False)
        op = op_point(KM)
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(5):
            symbolic.linearize(KM, op_point=op, A_and_B=True)
        pr.disable()
        print(f"\nprofile of 5 nsopt calls at n = {n} (by own time):")
        pstats.Stats(pr).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
