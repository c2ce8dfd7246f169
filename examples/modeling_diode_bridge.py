"""Diode bridge: a first-order system with complementarity
=======================================================

Diode bridge (Siconos' DiodeBridge tutorial): an LC oscillator feeding a resistor through four diodes.

First-order linear system + FirstOrderLinearTIR + complementarity, Euler–Moreau θ = 1/2, LCP by Lemke.
The bridge rectifies: the resistor current never changes sign, and the LC energy only decreases.
Writes ``modeling_diode_bridge.png``.
"""

import numpy as np

from _plotting import figure_path, pyplot
from nsopt import modeling as nm

L, C, R, V0 = 1e-2, 1e-6, 1e3, 10.0


def simulate(h=1e-6, T=5e-3):
    A = np.array([[0.0, -1.0 / C], [1.0 / L, 0.0]])
    circuit = nm.FirstOrderLinearDS([V0, 0.0], A)           # x = (capacitor voltage, inductor current)
    Cm = [[0.0, 0.0], [0.0, 0.0], [-1.0, 0.0], [1.0, 0.0]]
    D = [[1.0 / R, 1.0 / R, -1.0, 0.0], [1.0 / R, 1.0 / R, 0.0, -1.0], [1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]
    B = [[0.0, 0.0, -1.0 / C, 1.0 / C], [0.0, 0.0, 0.0, 0.0]]
    diodes = nm.Interaction(nm.ComplementarityConditionNSL(4), nm.FirstOrderLinearTIR(C=Cm, B=B, D=D))
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(diodes, circuit)
    traj = nm.TimeStepping(nsds, h, nm.EulerMoreauOSI(0.5), osns="lcp", method="lemke", tol=1e-12).run()
    x, y, lam = traj.x(circuit), traj.y(diodes, 0), traj.lambda_(diodes, 0)
    energy = 0.5 * C * x[:, 0] ** 2 + 0.5 * L * x[:, 1] ** 2
    return {"t": traj.t, "v": x[:, 0], "i": x[:, 1], "y": y, "lam": lam, "i_R": y[:, 0] + lam[:, 2],
            "energy": energy, "status": traj.status}


def main():
    plt = pyplot()
    r = simulate()
    fig, ax = plt.subplots(3, 1, sharex=True, figsize=(7, 7))
    ax[0].plot(r["t"] * 1e3, r["v"]); ax[0].set_ylabel("capacitor voltage [V]")
    ax[1].plot(r["t"] * 1e3, r["i_R"] * 1e3); ax[1].set_ylabel("resistor current [mA]")
    ax[2].plot(r["t"] * 1e3, r["energy"] * 1e6); ax[2].set_ylabel("LC energy [µJ]"); ax[2].set_xlabel("t [ms]")
    fig.suptitle("Diode bridge rectifier (Siconos DiodeBridge parameters)")
    out = figure_path("modeling_diode_bridge.png")
    fig.savefig(out, dpi=100)
    print(f"energy {r['energy'][0]:.3e} J -> {r['energy'][-1]:.3e} J; min resistor current {r['i_R'].min():.3e} A")
    print("figure:", out)


if __name__ == "__main__":
    main()
