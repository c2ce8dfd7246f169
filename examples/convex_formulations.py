"""The convex views: LCP as a QP, friction as SOCP plus a fixed point
==================================================================

The convex view of the one-step problems, as a lesson: LCP = QP (and when not), friction = SOCP + fixed point.

    python examples/convex_formulations.py

1. A 2 x 2 LCP with symmetric positive definite M: the QP, its statement and KKT explanation, its
   multiplier = w, the same answer as Lemke's pivoting method.
2. A nonsymmetric LCP: ``method="qp"`` refuses it (NotApplicable) and ``auto`` goes to Lemke.
3. One 3-D contact: the SOCP with s = mu ||u_T|| frozen, the plain fixed point s_{k+1} = 0.2 + 0.2 s_k
   (formulations/fc3d.md), then ``socp-fp`` with its history and its timings (CVXPY vs solver).
4. The same SOCP re-solved with new data: compiled once, data updated in place, against rebuilding.
5. An empty polyhedron: the backend's certificate gives ``Status.INFEASIBLE``, never "solved".
"""

from __future__ import annotations

import time

import numpy as np

import nsopt
from nsopt import generate
from nsopt.formulations import FCasSOCP, LCPasQP
from nsopt.solvers.socp_fp import SOCPMap


def lesson_lcp():
    print("=" * 78, "\n1. LCP with symmetric positive definite M as a QP\n")
    p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-1.0, 1.0])
    f = LCPasQP(p)
    print(f.explain())
    f.program.solve(solver="CLARABEL")
    print(f"raw interior-point z = {f.z.value},\n  multiplier of z >= 0 = {f.lower.dual_value}  (= w)")
    sol = nsopt.solve(p, method="qp", formulation=f)
    print(f"nsopt.solve(method='qp'):  z = {sol.z}, w = {sol.w}, error {sol.error:.1e} ({sol.message})")
    if "lemke" in nsopt.methods(p):
        lem = nsopt.solve(p, method="lemke")
        print(f"nsopt.solve(method='lemke'): z = {lem.z}, error {lem.error:.1e}  -> same solution")


def lesson_nonsymmetric():
    print("=" * 78, "\n2. A nonsymmetric M: the QP would solve the LCP of (M + M^T)/2\n")
    p, _ = generate.lcp(6, seed=2, matrix="p")
    try:
        nsopt.solve(p, method="qp")
    except nsopt.NotApplicable as e:
        print(f"method='qp' -> NotApplicable: {e}")
    sol = nsopt.solve(p)     # auto: qp skipped, next method
    for name, status, err, secs, note in sol.trace:
        print(f"  auto tried {name:10s} {status:10s} error {err:9.2e}  {note[:60]}")


def lesson_friction():
    print("=" * 78, "\n3. One contact, W = I, q = (-1, 1, 0), mu = 0.5: Coulomb as an SOCP fixed point\n")
    p = nsopt.FrictionContact(3, np.eye(3), [-1.0, 1.0, 0.0], 0.5)
    f = FCasSOCP(p)
    print(f.explain())
    fmap = SOCPMap(f)           # the fixed-point map on the compiled program (nsopt.solvers.socp_fp)
    x = fmap.start()
    print("plain fixed point (formulations/fc3d.md: s_{k+1} = 0.2 + 0.2 s_k):")
    for k in range(5):
        g, sol, _ = fmap.image(x)
        print(f"  s_{k} = {x[0]:.5f}  ->  r = {np.round(sol['r'], 5)},  error {p.error(sol['r']):.2e}")
        x = g
    s = nsopt.solve(p, method="socp-fp", history=True)
    print(f"socp-fp (Anderson + polish): r = {np.round(s.r, 12)}, u = {np.round(s.u, 12)}, "
          f"{s.nit} iterations, error {s.error:.1e}\n  history {[f'{e:.1e}' for e in s.history]}\n"
          f"  timings { {k: round(v, 4) for k, v in s.info['timings'].items()} }")

    print("\n   30 generated contacts (stick / slide / take-off):")
    q, ref = generate.friction_contact(30, seed=1, mu=0.5)
    for m in ("socp-fp", "socp-tresca"):
        s = nsopt.solve(q, method=m)
        print(f"  {m:12s} {s.status.value:8s} error {s.error:.1e}, {s.nit} iterations, "
              f"{s.solve_time:.3f} s, {s.info['solver_share'] * 100:.0f}% of the solve time in {s.info['solver']}"
              f"  | max |r - r_known| = {np.abs(s.r - ref['r']).max():.1e}")


def lesson_resolve():
    print("=" * 78, "\n4. Compiled once: re-solve with the data updated in place vs rebuild\n")
    import cvxpy as cp

    p, _ = generate.friction_contact(60, seed=3, mu=0.4)
    f = FCasSOCP(p)
    fmap = SOCPMap(f)                       # compiles the program once
    x = fmap.start()
    fmap.image(x)
    t0 = time.perf_counter()
    for _ in range(5):
        g, _, _ = fmap.image(x)
        x = g
    t_param = (time.perf_counter() - t0) / 5
    t0 = time.perf_counter()
    for _ in range(5):
        r = cp.Variable(p.size)
        R = cp.reshape(r, (p.nc, 3), order="C")
        prob = cp.Problem(cp.Minimize(0.5 * cp.quad_form(r, cp.psd_wrap(f.P)) + (f.dd * p.q + x) @ r),
                          [cp.SOC(0.4 * R[:, 0], R[:, 1:], axis=1)])
        prob.solve(solver="CLARABEL")
    t_build = (time.perf_counter() - t0) / 5
    print(f"  per solve: compiled once {t_param * 1e3:.1f} ms, rebuild {t_build * 1e3:.1f} ms "
          f"(x{t_build / t_param:.1f})")


def lesson_infeasible():
    print("=" * 78, "\n5. An empty polyhedron {z >= 1, z <= 0}: the backend's certificate\n")
    p = nsopt.AVI(np.eye(1), [-1.0], [[1.0], [-1.0]], [1.0, 0.0])
    for method in ("qp", "auto"):
        s = nsopt.solve(p, method=method)
        print(f"  method={method!r}: status {s.status.value} ({s.message}); "
              f"certificate: {s.info.get('certificate')}")


if __name__ == "__main__":
    lesson_lcp()
    lesson_nonsymmetric()
    lesson_friction()
    lesson_resolve()
    lesson_infeasible()
