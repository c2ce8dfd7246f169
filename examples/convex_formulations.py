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

The figure draws the two views: the QP's level sets over the quadrant z >= 0, whose minimiser is the
LCP's solution (the gradient there is w, the multiplier of z >= 0); and the fixed point of friction,
the map s -> mu ||u_T(s)|| of the SOCP with s frozen, iterated to its fixed point (cobweb).
Writes ``convex_formulations.png``.
"""

from __future__ import annotations

import time

import numpy as np

import nsopt
from nsopt import generate
from nsopt.formulations import FCasSOCP, LCPasQP
from nsopt.solvers.socp_fp import SOCPMap

from _plotting import figure_path, pyplot


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
    iterates = [x[0]]
    print("plain fixed point (formulations/fc3d.md: s_{k+1} = 0.2 + 0.2 s_k):")
    for k in range(5):
        g, sol, _ = fmap.image(x)
        print(f"  s_{k} = {x[0]:.5f}  ->  r = {np.round(sol['r'], 5)},  error {p.error(sol['r']):.2e}")
        x = g
        iterates.append(x[0])
    s = nsopt.solve(p, method="socp-fp", history=True)
    print(f"socp-fp (Anderson + polish): r = {np.round(s.r, 12)}, u = {np.round(s.u, 12)}, "
          f"{s.nit} iterations, error {s.error:.1e}\n  history {[f'{e:.1e}' for e in s.history]}\n"
          f"  timings { {k: round(v, 4) for k, v in s.info['timings'].items()} }")

    print("\n   30 generated contacts (stick / slide / take-off):")
    q, ref = generate.friction_contact(30, seed=1, mu=0.5)
    for m in ("socp-fp", "socp-tresca"):
        s = nsopt.solve(q, method=m)
        print(f"  {m:12s} {s.status.value:8s} error {s.error:.1e}, {s.nit} iterations, "
              f"{s.solve_time:.3f} s, {s.info['solver_share'] * 100:.0f}% of the solve time in {s.info['backend']}"
              f"  | max |r - r_known| = {np.abs(s.r - ref['r']).max():.1e}")
    return fmap, np.array(iterates)


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


def figure(fmap, iterates):
    """The two convex views: the LCP's QP and the friction fixed point (cobweb of the SOCP map)."""
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.6), layout="constrained")
    M, q = np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-1.0, 1.0])
    sol = nsopt.solve(nsopt.LCP(M, q), method="qp")
    (x0, x1), (y0, y1) = (-0.7, 1.5), (-1.3, 1.1)
    z1, z2 = np.meshgrid(np.linspace(x0, x1, 221), np.linspace(y0, y1, 241))
    f = 0.5 * (M[0, 0] * z1**2 + 2 * M[0, 1] * z1 * z2 + M[1, 1] * z2**2) + q[0] * z1 + q[1] * z2
    ax1.contour(z1, z2, f, levels=np.linspace(-1.0, 3.0, 21), cmap="viridis", linewidths=0.8)
    ax1.fill_between([x0, x1], y0, 0.0, color="0.88", zorder=0)          # z2 < 0
    ax1.fill_betweenx([0.0, y1], x0, 0.0, color="0.88", zorder=0)        # z1 < 0
    free = np.linalg.solve(M, -q)
    ax1.plot(*free, "x", color="0.3", ms=9, label=f"unconstrained minimum ({free[0]:g}, {free[1]:g})")
    ax1.plot(*sol.z, "o", color="C3", ms=8, label=f"z* = ({sol.z[0]:.3g}, {sol.z[1]:.3g}): the LCP's solution")
    ax1.annotate("", xy=sol.z + 0.3 * sol.w / np.linalg.norm(sol.w), xytext=sol.z,
                 arrowprops=dict(arrowstyle="->", color="C3", lw=1.6))
    ax1.text(sol.z[0] + 0.06, sol.z[1] + 0.38, f"∇f(z*) = w = ({sol.w[0]:.3g}, {sol.w[1]:.3g})\nw ≥ 0, z*·w = 0",
             color="C3", fontsize=9, bbox=dict(facecolor="white", edgecolor="none", alpha=0.85))
    ax1.set_xlim(x0, x1); ax1.set_ylim(y0, y1)
    ax1.set_xlabel("$z_1$"); ax1.set_ylabel("$z_2$"); ax1.set_aspect("equal")
    ax1.set_title("LCP as a QP: min ½zᵀMz + qᵀz, z ≥ 0\n(level sets; grey: z ≱ 0)", fontsize=10)
    ax1.legend(loc="lower left", fontsize=8)
    s = np.linspace(0.0, 0.8, 41)
    g = [fmap.image(np.array([v, 0.0, 0.0]))[0][0] for v in s]
    ax2.plot(s, g, color="C0", label="g(s) = μ‖u_T‖ at the SOCP's solution, s frozen")
    ax2.plot(s, s, color="0.5", lw=0.8, ls="--", label="g(s) = s")
    ax2.plot(np.repeat(iterates[:-1], 2), np.column_stack([iterates[:-1], iterates[1:]]).ravel(),
             color="C3", lw=1.2, marker=".", label="$s_{k+1} = g(s_k)$ from $s_0$ = μ‖q_T‖ (cobweb)")
    ax2.plot([iterates[-1]], [iterates[-1]], "o", color="C3")
    ax2.set_xlabel("s (the frozen term μ‖u_T‖)"); ax2.set_ylabel("g(s)")
    ax2.set_title("Coulomb's law = SOCP + fixed point\n(one contact, μ = 0.5)", fontsize=10)
    ax2.legend(loc="upper left", fontsize=8); ax2.grid(alpha=0.3)
    out = figure_path("convex_formulations.png")
    fig.savefig(out, dpi=100)
    print(f"figure: {out}")


if __name__ == "__main__":
    lesson_lcp()
    lesson_nonsymmetric()
    fmap, iterates = lesson_friction()
    lesson_resolve()
    lesson_infeasible()
    figure(fmap, iterates)
