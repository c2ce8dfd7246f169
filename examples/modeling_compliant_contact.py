"""A compliant contact: a unilateral spring
========================================

A compliant contact (LagrangianCompliantR): y = q + λ/k, 0 <= y ⊥ λ >= 0, i.e. a unilateral spring
of stiffness k (λ = k·penetration, a force). A damped mass dropped on it comes to rest at q = -m g / k,
carried by λ = m g. Writes ``modeling_compliant_contact.png``.
"""

import numpy as np

from _plotting import figure_path, pyplot
from nsopt import modeling as nm


def simulate(k=1e4, m=1.0, c=20.0, h=1e-3, T=3.0):
    g = 9.81
    mass = nm.LagrangianLinearTIDS(q0=[0.2], v0=[0.0], M=[[m]], C=[[c]], fext=[-m * g])
    spring = nm.LagrangianCompliantR(h=lambda q, lam, z: np.array([q[0] + lam[0] / k]),
                                     G0=lambda q, lam, z: np.array([[1.0]]),
                                     G1=lambda q, lam, z: np.array([[1.0 / k]]))
    inter = nm.Interaction(nm.ComplementarityConditionNSL(1), spring)
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(inter, mass)
    traj = nm.TimeStepping(nsds, h, nm.MoreauJeanOSI(0.5), osns="lcp", method="lemke", tol=1e-12).run()
    return {"t": traj.t, "q": traj.q(mass)[:, 0], "force": traj.lambda_(inter, 0)[:, 0],
            "y": traj.y(inter, 0)[:, 0], "rest": -m * g / k, "weight": m * g, "status": traj.status}


def main():
    plt = pyplot()
    r = simulate()
    fig, ax = plt.subplots(2, 1, sharex=True, figsize=(7, 5))
    ax[0].plot(r["t"], r["q"]); ax[0].axhline(r["rest"], color="k", ls="--", lw=0.8); ax[0].set_ylabel("q [m]")
    ax[1].plot(r["t"], r["force"]); ax[1].set_ylabel("contact force λ [N]"); ax[1].set_xlabel("t [s]")
    fig.suptitle("Compliant contact (LagrangianCompliantR), damped mass")
    out = figure_path("modeling_compliant_contact.png")
    fig.savefig(out, dpi=100)
    print(f"final q = {r['q'][-1]:.6e} (-mg/k = {r['rest']:.6e}), force = {r['force'][-1]:.6f} (mg = {r['weight']:.6f})")
    print("figure:", out)


if __name__ == "__main__":
    main()
