"""Ball on a vibrating plate
=========================

Ball on a vibrating plate: a rheonomous relation y = q - A sin(ωt) (Siconos LagrangianRheonomousR).

The plate's acceleration amplitude Aω² is about g, so the ball keeps bouncing. At every impact the
relative velocity obeys Newton's law ẏ⁺ = -e ẏ⁻ (with ẏ = v + ∂h/∂t), and the ball stays above the plate.
Writes ``modeling_vibrating_plate.png``.
"""

import numpy as np

from _plotting import figure_path, pyplot
from nsopt import modeling as nm


def simulate(A=0.015, f=5.0, e=0.5, h=1e-3, T=3.0):
    w, g = 2 * np.pi * f, 9.81
    ball = nm.LagrangianLinearTIDS(q0=[0.05], v0=[0.0], M=[[1.0]], fext=[-g])
    plate = nm.LagrangianRheonomousR(h=lambda q, t, z: np.array([q[0] - A * np.sin(w * t)]),
                                     G0=lambda q, t, z: np.array([[1.0]]),
                                     hdot=lambda q, t, z: np.array([-A * w * np.cos(w * t)]))
    inter = nm.Interaction(nm.NewtonImpactNSL(e), plate)
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(inter, ball)
    traj = nm.TimeStepping(nsds, h, nm.MoreauJeanOSI(0.5), osns="lcp", method="lemke", tol=1e-12).run()
    return {"t": traj.t, "q": traj.q(ball)[:, 0], "plate": A * np.sin(w * traj.t), "gap": traj.y(inter, 0)[:, 0],
            "ydot": traj.y(inter, 1)[:, 0], "lam": traj.lambda_(inter, 1)[:, 0], "status": traj.status}


def main():
    plt = pyplot()
    r = simulate()
    fig, ax = plt.subplots(2, 1, sharex=True, figsize=(7, 5))
    ax[0].plot(r["t"], r["q"], label="ball"); ax[0].plot(r["t"], r["plate"], label="plate"); ax[0].legend()
    ax[0].set_ylabel("height [m]")
    ax[1].plot(r["t"], r["lam"]); ax[1].set_ylabel("impulse λ [N s]"); ax[1].set_xlabel("t [s]")
    fig.suptitle("Ball on a vibrating plate (rheonomous relation)")
    out = figure_path("modeling_vibrating_plate.png")
    fig.savefig(out, dpi=100)
    print("impacts:", int(np.sum(r["lam"] > 0)), " min gap:", r["gap"].min(), " figure:", out)


if __name__ == "__main__":
    main()
