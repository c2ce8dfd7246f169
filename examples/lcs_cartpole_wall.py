"""A cart-pole against a wall, linearized to an LCS
================================================

A cart-pole whose pole tip hits a wall, linearized to a linear complementarity system (LCS).

The cart-pole is derived with SymPy (Kane's method), the wall is a unilateral contact on the pole
tip, and ``nsopt.symbolic.lcs`` linearizes one Moreau–Jean step about a state where the tip strikes
the wall. One ``lcs.step`` agrees with one nonlinear step to first order: the error shrinks like δ²
as the state offset δ shrinks. Writes ``figures/lcs_cartpole_wall.png`` (both rollouts, and the
one-step error against δ).

    python examples/lcs_cartpole_wall.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import sympy as sm
import sympy.physics.mechanics as me

from nsopt import symbolic


def cartpole():
    """Kane's equations of a cart (x, force F) carrying a pole (angle th from the vertical, up)."""
    x, th = me.dynamicsymbols("x th")
    vx, w = me.dynamicsymbols("vx w")
    F = me.dynamicsymbols("F")
    mc, mp, l, g, dwall = sm.symbols("m_c m_p l g d")
    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)
    C = O.locatenew("C", x * N.x)
    C.set_vel(N, vx * N.x)
    Pf = N.orientnew("Pf", "axis", [-th, N.z])
    Pf.set_ang_vel(N, -w * N.z)
    T = C.locatenew("T", l * Pf.y)      # the pole tip (a point mass)
    T.v2pt_theory(C, N, Pf)
    KM = me.KanesMethod(N, [x, th], [vx, w], kd_eqs=[x.diff() - vx, th.diff() - w])
    KM.kanes_equations([me.Particle("cart", C, mc), me.Particle("tip", T, mp)],
                       [(C, F * N.x - mc * g * N.y), (T, -mp * g * N.y)])
    gap = dwall - T.pos_from(O).dot(N.x)   # the wall at x = d, to the right
    params = {mc: 1.0, mp: 0.3, l: 0.8, g: 9.81, dwall: 0.5}
    return KM, [gap], params, (x, th, vx, w, F)


def build(h=0.01):
    KM, gaps, params, (x, th, vx, w, F) = cartpole()
    th0 = 0.35
    x0 = params[sm.Symbol("d")] - params[sm.Symbol("l")] * np.sin(th0)  # tip exactly at the wall
    op = {**params, x: x0, th: th0, vx: 0.6, w: 0.9, F: 0.5}        # tip moving into the wall
    sys_lcs = symbolic.lcs(KM, gaps, op, h)
    model = symbolic.ContactModel(KM, gaps, params)
    xstar = np.array([x0, th0, 0.6, 0.9])
    return sys_lcs, model, xstar, np.array([0.5]), h


def one_step_errors(sys_lcs, model, xstar, u, h, deltas, seed=0):
    """|lcs.step - nonlinear step| from xstar + δ d, for a fixed random unit direction d."""
    d = np.random.default_rng(seed).standard_normal(4)
    d /= np.linalg.norm(d)
    errs = []
    for delta in deltas:
        x = xstar + delta * d
        x_lin, _, _ = sys_lcs.step(x, u)
        q1, v1, _, _ = model.step(x[:2], x[2:], u, h)
        errs.append(np.linalg.norm(x_lin - np.concatenate([q1, v1])))
    return np.array(errs)


def rollout(sys_lcs, model, x, u, h, steps):
    lin, nl = [x.copy()], [x.copy()]
    xl, xn = x.copy(), x.copy()
    for _ in range(steps):
        xl = sys_lcs.step(xl, u)[0]
        q1, v1, _, _ = model.step(xn[:2], xn[2:], u, h)
        xn = np.concatenate([q1, v1])
        lin.append(xl)
        nl.append(xn)
    return np.array(lin), np.array(nl)


def main(out=None):
    sys_lcs, model, xstar, u, h = build()
    deltas = np.array([4e-2, 2e-2, 1e-2, 5e-3, 2.5e-3])
    errs = one_step_errors(sys_lcs, model, xstar, u, h, deltas)
    at_op = np.linalg.norm(sys_lcs.step(xstar, u)[0] - np.concatenate(model.step(xstar[:2], xstar[2:], u, h)[:2]))
    print("active contacts:", sys_lcs.active, " error at the operating point:", f"{at_op:.1e}")
    for dl, e in zip(deltas, errs):
        print(f"delta {dl:8.1e}  |lcs.step - nonlinear step| = {e:.3e}")
    print("ratios err(2δ)/err(δ):", np.round(errs[:-1] / errs[1:], 2))
    lin, nl = rollout(sys_lcs, model, xstar + 0.02 * np.array([0.0, 1.0, 0.0, 0.0]), u, h, 12)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover
        return deltas, errs, at_op
    from matplotlib.ticker import LogLocator, NullFormatter

    # one quantity per axis (with its unit), the LCS dashed over the nonlinear step
    fig = plt.figure(figsize=(11, 5.5), layout="constrained")
    grid = fig.add_gridspec(2, 3, width_ratios=[1, 1, 1.15])
    tt = h * np.arange(len(lin))
    names = [("cart position x", "m"), ("pole angle θ", "rad"), ("cart velocity vₓ", "m/s"),
             ("pole angular velocity ω", "rad/s")]
    for k, (name, unit) in enumerate(names):
        a = fig.add_subplot(grid[k // 2, k % 2])
        a.plot(tt, nl[:, k], "-", color="C0", lw=2, label="nonlinear step")
        a.plot(tt, lin[:, k], "--", color="C1", lw=2, label="LCS step")
        a.set_ylabel(f"{name} [{unit}]")
        a.grid(alpha=0.3)
        if k >= 2:
            a.set_xlabel("time t [s]")
        if k == 0:
            a.legend(fontsize=8)
    fig.suptitle("cart-pole whose pole tip strikes a wall: Moreau–Jean steps and their LCS")
    e = fig.add_subplot(grid[:, 2])
    e.loglog(deltas, errs, "o-", color="C2", label="|LCS step − nonlinear step|")
    e.loglog(deltas, errs[0] * (deltas / deltas[0]) ** 2, "k:", label="slope 2 (δ²)")
    e.xaxis.set_major_locator(LogLocator(base=10, numticks=5))
    e.xaxis.set_minor_formatter(NullFormatter())   # decades only: no overlapping minor labels
    e.set_xlabel("state offset δ (norm of the state difference)")
    e.set_ylabel("one-step difference (state norm)")
    e.set_title("first-order agreement")
    e.grid(alpha=0.3, which="both")
    e.legend(fontsize=8)
    if out is None:  # the figures folder of the examples (NSOPT_FIGURES overrides it)
        from _plotting import figure_path

        out = figure_path("lcs_cartpole_wall.png")
    out = Path(out)
    fig.savefig(out, dpi=100)
    print("wrote", out)
    return deltas, errs, at_op


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
