"""Block on an inclined plane with Coulomb friction
================================================

Block on an inclined plane with Coulomb friction (2D friction contact, NewtonImpactFrictionNSL).

Coordinates along the slope (s, downhill) and normal to it (n). The block sticks when tan α <= μ and
otherwise slides with the analytic acceleration g (sin α - μ cos α). Writes ``modeling_inclined_plane.png``.
"""

import numpy as np

from _plotting import figure_path, pyplot
from nsopt import modeling as nm


def simulate(alpha_deg=30.0, mu=0.3, h=1e-2, T=1.0, method="auto"):
    g, a = 9.81, np.radians(alpha_deg)
    block = nm.LagrangianLinearTIDS(q0=[0.0, 0.0], v0=[0.0, 0.0], M=np.eye(2),
                                    fext=[g * np.sin(a), -g * np.cos(a)])
    # y = (n, s): normal gap first, then the tangential coordinate
    contact = nm.Interaction(nm.NewtonImpactFrictionNSL(0.0, 0.0, mu, dim=2),
                             nm.LagrangianLinearTIR(H=[[0.0, 1.0], [1.0, 0.0]]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(contact, block)
    traj = nm.TimeStepping(nsds, h, nm.MoreauJeanOSI(0.5), osns="fc2d", method=method, tol=1e-12).run()
    return {"t": traj.t, "s": traj.q(block)[:, 0], "n": traj.q(block)[:, 1], "vs": traj.v(block)[:, 0],
            "r": traj.lambda_(contact, 1), "a_analytic": max(0.0, g * (np.sin(a) - mu * np.cos(a))),
            "status": traj.status, "error": traj.error}


def main():
    plt = pyplot()
    fig, ax = plt.subplots(1, 1, figsize=(7, 4))
    for alpha, mu in ((30.0, 0.3), (30.0, 0.7)):
        r = simulate(alpha, mu)
        ax.plot(r["t"], r["s"], label=f"α = {alpha}°, μ = {mu} (simulated)")
        ax.plot(r["t"], 0.5 * r["a_analytic"] * r["t"] ** 2, "k--", lw=0.8)
        print(f"alpha={alpha} mu={mu}: s(T) = {r['s'][-1]:.6f}, analytic {0.5 * r['a_analytic'] * r['t'][-1] ** 2:.6f}")
    ax.set_xlabel("t [s]"); ax.set_ylabel("distance down the slope [m]"); ax.legend()
    ax.set_title("Block on an inclined plane, Coulomb friction (dashed: analytic)")
    out = figure_path("modeling_inclined_plane.png")
    fig.savefig(out, dpi=100)
    print("figure:", out)


if __name__ == "__main__":
    main()
