r"""Relay feedback with a sliding mode
==================================

Relay feedback with a sliding mode: a double integrator ẍ = u, u = -sign(σ), σ = c x + ẋ.

FirstOrderLinearTIDS + FirstOrderLinearTIR + RelayNSL, Euler–Moreau θ = 1/2, a Relay problem per step.
After a finite reaching time the state slides on σ = 0 (:math:`|\sigma|` at round-off, :math:`|\lambda| < 1`: the equivalent
control), where x decays as exp(-c t) — per step exactly by (1 - ch/2)/(1 + ch/2), the trapezoidal factor.
Writes ``modeling_relay_sliding.png``.
"""

import numpy as np

from _plotting import figure_path, pyplot
from nsopt import modeling as nm


def simulate(c=0.5, h=1e-2, T=10.0):
    plant = nm.FirstOrderLinearTIDS(x0=[1.0, 0.0], A=[[0.0, 1.0], [0.0, 0.0]])
    relay = nm.Interaction(nm.RelayNSL(1, lb=-1.0, ub=1.0), nm.FirstOrderLinearTIR(C=[[c, 1.0]], B=[[0.0], [1.0]]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(relay, plant)
    traj = nm.TimeStepping(nsds, h, nm.EulerMoreauOSI(0.5), osns="relay", method="lemke", tol=1e-12).run()
    x, sigma, lam = traj.x(plant), traj.y(relay, 0)[:, 0], traj.lambda_(relay, 0)[:, 0]
    return {"t": traj.t, "x": x, "sigma": sigma, "lam": lam, "c": c, "h": h, "status": traj.status}


def main():
    plt = pyplot()
    r = simulate()
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    ax[0].plot(r["x"][:, 0], r["x"][:, 1]); ax[0].plot([-1, 1], [r["c"], -r["c"]], "k--", lw=0.8)
    ax[0].set_xlabel("x"); ax[0].set_ylabel("ẋ"); ax[0].set_title("phase plane (dashed: σ = 0)")
    ax[1].plot(r["t"], r["lam"]); ax[1].set_xlabel("t [s]"); ax[1].set_ylabel("relay output λ")
    out = figure_path("modeling_relay_sliding.png")
    fig.savefig(out, dpi=100)
    slide = np.abs(r["sigma"]) < 1e-9
    print(f"sliding from t = {r['t'][np.argmax(slide)]:.2f} s, max |σ| there {np.abs(r['sigma'][slide]).max():.1e}")
    print("figure:", out)


if __name__ == "__main__":
    main()
