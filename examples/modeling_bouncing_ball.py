"""Bouncing ball: Moreau–Jean and Newton's impact law
==================================================

Bouncing ball (Siconos' BouncingBallTS): Moreau–Jean with Newton's impact law, solved by Lemke.

Checks a user makes: apex heights fall by e² per bounce and -v⁺/v⁻ = e at each impact.
Writes ``modeling_bouncing_ball.png`` (in $NSOPT_FIGURES, default examples/figures).
"""

import numpy as np

from _plotting import figure_path, pyplot
from nsopt import modeling as nm


def simulate(e=0.9, h=0.005, T=10.0):
    m, R, g = 1.0, 0.1, 9.81
    ball = nm.LagrangianLinearTIDS(q0=[1.0, 0.0, 0.0], v0=[0.0, 0.0, 0.0],
                                   M=np.diag([m, m, 0.4 * m * R**2]), fext=[-m * g, 0.0, 0.0])
    ground = nm.Interaction(nm.NewtonImpactNSL(e=e), nm.LagrangianLinearTIR(H=[[1.0, 0.0, 0.0]]))
    nsds = nm.NonSmoothDynamicalSystem(t0=0.0, T=T)
    nsds.link(ground, ball)
    sim = nm.TimeStepping(nsds, h=h, integrator=nm.MoreauJeanOSI(theta=0.5), osns="lcp", method="lemke", tol=1e-12)
    traj = sim.run()
    z, v = traj.q(ball)[:, 0], traj.v(ball)[:, 0]
    lam = traj.lambda_(ground, 1)[:, 0]
    apex = [z[i] for i in range(1, len(z) - 1) if z[i] > z[i - 1] and z[i] >= z[i + 1] and z[i] > 0.05]
    hits = [k for k in range(1, len(z)) if lam[k] > 1e-9 and lam[k - 1] == 0.0]
    vel_ratio = [-v[k] / v[k - 1] for k in hits]
    return {"t": traj.t, "z": z, "v": v, "lam": lam, "apex": np.array(apex), "restitution": np.array(vel_ratio),
            "status": traj.status}


def main():
    plt = pyplot()
    r = simulate()
    fig, ax = plt.subplots(3, 1, sharex=True, figsize=(7, 7))
    ax[0].plot(r["t"], r["z"]); ax[0].set_ylabel("height q [m]")
    ax[1].plot(r["t"], r["v"]); ax[1].set_ylabel("velocity v [m/s]")
    ax[2].plot(r["t"], r["lam"]); ax[2].set_ylabel("impulse λ [N s]"); ax[2].set_xlabel("t [s]")
    fig.suptitle("Bouncing ball, Moreau–Jean θ = 1/2, e = 0.9")
    out = figure_path("modeling_bouncing_ball.png")
    fig.savefig(out, dpi=100)
    print("apex ratios", np.round(r["apex"][1:5] / r["apex"][:4], 4), "(e² = 0.81)")
    print("-v+/v- at impacts", np.round(r["restitution"][:4], 6), "(e = 0.9)")
    print("figure:", out)


if __name__ == "__main__":
    main()
