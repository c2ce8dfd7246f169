r"""Slider-crank with impacts
=========================

Slider-crank with impacts: a nonlinear Lagrangian system and a nonlinear scleronomous relation.

One degree of freedom, the crank angle θ (crank l1, connecting rod l2, crank inertia J, slider mass m).
The slider position is :math:`x(\theta) = l_1\cos\theta + \sqrt{l_2^2 - l_1^2\sin^2\theta}`, so

.. math::  M(\theta) = J + m\,x'(\theta)^2,\qquad F_{gyr}(\theta, \dot\theta) = m\,x'(\theta)\,x''(\theta)\,\dot\theta^2,

and a stop at :math:`x_w` gives the gap :math:`y = h(\theta) = x_w - x(\theta) \ge 0`, :math:`G_0 = -x'(\theta)`,
with Newton's impact law (restitution e). Moreau–Jean with a Newton loop per step; the Jacobians of
F_gyr are left to finite differences. Between impacts the kinetic energy ½M(θ)θ̇² is conserved; at an
impact it is multiplied by about e² (one contact, one degree of freedom).
The same system written with SymPy: h = x_w - (l1 cos θ + sqrt(l2² - l1² sin² θ)).
Writes ``modeling_slider_crank.png``.
"""

import numpy as np

from _plotting import figure_path, pyplot
from nsopt import modeling as nm

L1, L2, J, MS, XW = 0.1, 0.2, 1e-3, 0.5, 0.28


def x_of(th):
    s, c = np.sin(th), np.cos(th)
    return L1 * c + np.sqrt(L2**2 - L1**2 * s**2)


def dx_of(th):
    s, c = np.sin(th), np.cos(th)
    R = np.sqrt(L2**2 - L1**2 * s**2)
    return -L1 * s - L1**2 * s * c / R


def ddx_of(th):
    s, c = np.sin(th), np.cos(th)
    R = np.sqrt(L2**2 - L1**2 * s**2)
    return -L1 * c - L1**2 * ((c**2 - s**2) / R + L1**2 * s**2 * c**2 / R**3)


def build(e=0.7, theta0=np.pi / 2, omega0=-10.0):
    crank = nm.LagrangianDS(
        [theta0], [omega0],
        M=lambda q, z: np.array([[J + MS * dx_of(q[0]) ** 2]]),
        fgyr=lambda q, v, z: np.array([MS * dx_of(q[0]) * ddx_of(q[0]) * v[0] ** 2]))
    stop = nm.LagrangianScleronomousR(h=lambda q, z: np.array([XW - x_of(q[0])]),
                                      G0=lambda q, z: np.array([[-dx_of(q[0])]]), name="stop")
    inter = nm.Interaction(nm.NewtonImpactNSL(e), stop)
    return crank, inter


def simulate(e=0.7, h=1e-3, T=2.0):
    crank, inter = build(e)
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(inter, crank)
    traj = nm.TimeStepping(nsds, h, nm.MoreauJeanOSI(0.5), osns="lcp", method="lemke", tol=1e-12,
                           newton_tol=1e-10).run()
    th, om = traj.q(crank)[:, 0], traj.v(crank)[:, 0]
    energy = 0.5 * (J + MS * dx_of(th) ** 2) * om**2
    return {"t": traj.t, "theta": th, "omega": om, "x": x_of(th), "gap": traj.y(inter, 0)[:, 0],
            "lam": traj.lambda_(inter, 1)[:, 0], "energy": energy, "e": e, "newton": traj.newton_converged,
            "newton_iterations": traj.newton_iterations, "status": traj.status}


def main():
    plt = pyplot()
    r = simulate()
    fig, ax = plt.subplots(3, 1, sharex=True, figsize=(7, 7))
    ax[0].plot(r["t"], r["x"]); ax[0].axhline(XW, color="k", ls="--", lw=0.8); ax[0].set_ylabel("slider x [m]")
    ax[1].plot(r["t"], r["omega"]); ax[1].set_ylabel("crank speed [rad/s]")
    ax[2].semilogy(r["t"], r["energy"]); ax[2].set_ylabel("kinetic energy [J]"); ax[2].set_xlabel("t [s]")
    fig.suptitle("Slider-crank hitting a stop (e = 0.7)")
    out = figure_path("modeling_slider_crank.png")
    fig.savefig(out, dpi=100)
    print(f"impacts: {int(np.sum(r['lam'] > 0))}, min gap {r['gap'].min():.2e} m, "
          f"Newton iterations per step <= {r['newton_iterations'].max()}")
    print("figure:", out)


if __name__ == "__main__":
    main()
