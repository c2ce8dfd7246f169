"""Slider-crank with a frictional slider: a GenericMechanical problem per step
===========================================================================

A slider-crank with a frictional slider: bilateral joints, a unilateral contact and Coulomb friction
in one Moreau–Jean simulation that assembles and solves a GenericMechanical problem at every step.

Three planar bodies in one Lagrangian system, q = (x1, y1, th1, x2, y2, th2, x3, y3): the crank
(length l1, pinned at the origin, driven by a constant torque), the connecting rod (length l2) and the
slider (a block of half-height s that rests on the floor y = 0). Pins O–crank, crank–rod and rod–slider
are bilateral joints (EqualityConditionNSL, nonlinear relations h(q) = 0); the slider touches the floor
through a unilateral contact with Coulomb friction (NewtonImpactFrictionNSL, 2-D). Each step's
one-step problem therefore mixes equality blocks and a 2-D friction block: TimeStepping assembles it as
a GenericMechanical problem, solved by the global semismooth Newton "nsn" (fallback: "nsgs").

Run: python examples/slider_crank_gmp.py   (writes slider_crank_gmp.png in $NSOPT_FIGURES, default examples/figures)
"""

from __future__ import annotations

import numpy as np

from _plotting import figure_path, pyplot
from nsopt import modeling as nm

L1, L2, S = 0.1, 0.3, 0.02                 # crank, rod, slider half-height (m)
M1, M2, M3 = 0.5, 1.0, 2.0                 # masses (kg)
MU, G, TORQUE = 0.3, 9.81, 1.2             # friction coefficient, gravity, torque on the crank (N m)


def _joints():
    """The three pins: (h, G0) with h(q) in R^2 (zero when the pin holds)."""
    def pin_O(q, z):
        x1, y1, t1 = q[0:3]
        return np.array([x1 - 0.5 * L1 * np.cos(t1), y1 - 0.5 * L1 * np.sin(t1)])

    def G_O(q, z):
        t1 = q[2]
        G = np.zeros((2, 8))
        G[0, 0], G[0, 2] = 1.0, 0.5 * L1 * np.sin(t1)
        G[1, 1], G[1, 2] = 1.0, -0.5 * L1 * np.cos(t1)
        return G

    def pin_B(q, z):
        x1, y1, t1, x2, y2, t2 = q[0:6]
        return np.array([x1 + 0.5 * L1 * np.cos(t1) - x2 + 0.5 * L2 * np.cos(t2),
                         y1 + 0.5 * L1 * np.sin(t1) - y2 + 0.5 * L2 * np.sin(t2)])

    def G_B(q, z):
        t1, t2 = q[2], q[5]
        G = np.zeros((2, 8))
        G[0, 0], G[0, 2], G[0, 3], G[0, 5] = 1.0, -0.5 * L1 * np.sin(t1), -1.0, -0.5 * L2 * np.sin(t2)
        G[1, 1], G[1, 2], G[1, 4], G[1, 5] = 1.0, 0.5 * L1 * np.cos(t1), -1.0, 0.5 * L2 * np.cos(t2)
        return G

    def pin_P(q, z):
        x2, y2, t2, x3, y3 = q[3], q[4], q[5], q[6], q[7]
        return np.array([x2 + 0.5 * L2 * np.cos(t2) - x3, y2 + 0.5 * L2 * np.sin(t2) - y3])

    def G_P(q, z):
        t2 = q[5]
        G = np.zeros((2, 8))
        G[0, 3], G[0, 5], G[0, 6] = 1.0, -0.5 * L2 * np.sin(t2), -1.0
        G[1, 4], G[1, 5], G[1, 7] = 1.0, 0.5 * L2 * np.cos(t2), -1.0
        return G

    return [(pin_O, G_O), (pin_B, G_B), (pin_P, G_P)]


def initial_state(theta=0.3):
    """A configuration that satisfies the joints, the slider on the floor, at rest."""
    bx, by = L1 * np.cos(theta), L1 * np.sin(theta)
    x3, y3 = bx + np.sqrt(L2**2 - (by - S) ** 2), S
    t2 = np.arctan2(y3 - by, x3 - bx)
    return np.array([0.5 * bx, 0.5 * by, theta, 0.5 * (bx + x3), 0.5 * (by + y3), t2, x3, y3])


def build(T=1.0, h=1e-3, method="nsn"):
    """The NonSmoothDynamicalSystem and its TimeStepping (osns="gmp"); returns (sim, ds, joints, contact)."""
    J1, J2 = M1 * L1**2 / 12, M2 * L2**2 / 12
    mass = np.diag([M1, M1, J1, M2, M2, J2, M3, M3])
    fext = np.array([0.0, -M1 * G, TORQUE, 0.0, -M2 * G, 0.0, 0.0, -M3 * G])
    ds = nm.LagrangianLinearTIDS(q0=initial_state(), v0=np.zeros(8), M=mass, fext=fext, name="slider-crank")
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    joints = []
    for name, (hq, G0) in zip(("O", "B", "P"), _joints()):
        inter = nm.Interaction(nm.EqualityConditionNSL(2), nm.LagrangianScleronomousR(hq, G0, name=f"pin {name}"))
        nsds.link(inter, ds)
        joints.append(inter)
    Hc = np.zeros((2, 8))
    Hc[0, 7], Hc[1, 6] = 1.0, 1.0                       # normal: y3 - S >= 0; tangent: x3
    contact = nm.Interaction(nm.NewtonImpactFrictionNSL(0.0, 0.0, MU, 2),
                             nm.LagrangianLinearTIR(Hc, b=[-S, 0.0]))
    nsds.link(contact, ds)
    # a contact at rest sits at gap 0 with a round-off velocity of either sign: a 1 micron activation
    # threshold keeps it in the index set (with Siconos' threshold 0 it leaves for one step now and then)
    osi = nm.MoreauJeanOSI(0.5, activation_threshold=1e-6)
    sim = nm.TimeStepping(nsds, h, osi, osns="gmp", method=method, fallback=("nsgs",), tol=1e-10)
    return sim, ds, joints, contact


def simulate(T=1.0, h=1e-3, method="nsn"):
    """Run; returns a dict of arrays: t, q (N+1, 8), joint residual |h(q)| per step, contact impulses
    (normal, tangential) per step, each step's status and method."""
    sim, ds, joints, contact = build(T, h, method)
    kinds = []
    while sim.has_next_step():
        sol = sim.step()                               # the step's Solution (its problem: a GenericMechanical)
        kinds.append(tuple(sorted({b.kind for b in sol.problem.blocks})) if sol is not None else ())
    tr = sim.trajectory
    q = tr.q(ds)
    pins = _joints()
    joint_err = np.array([max(float(np.max(np.abs(hq(qk, None)))) for hq, _ in pins) for qk in q])
    lam = tr.lambda_(contact, 1)
    return dict(t=tr.t, q=q, v=tr.v(ds), joint_error=joint_err, lam_n=lam[:, 0], lam_t=lam[:, 1],
                status=tr.status, failed=tr.failed_steps, error=tr.error, method=tr.method, kinds=kinds)


def main():
    out = simulate()
    n_gmp = sum(s is not None for s in out["status"])
    mixed = sum(k == ("equality", "fc2d") for k in out["kinds"])
    print(f"{len(out['t']) - 1} steps, {n_gmp} GenericMechanical problems ({mixed} with equality and fc2d "
          f"blocks, the others with the joints only: slider in flight), failed steps: {len(out['failed'])}")
    print(f"max joint residual |h(q)| = {out['joint_error'].max():.2e} m, "
          f"min normal impulse = {out['lam_n'].min():.2e} N s, "
          f"max |lambda_T| - mu lambda_N = {np.max(np.abs(out['lam_t']) - MU * out['lam_n']):.2e}")
    print(f"crank turned {out['q'][-1, 2] - out['q'][0, 2]:.2f} rad; slider from x = {out['q'][0, 6]:.3f} "
          f"to {out['q'][-1, 6]:.3f} m, max lift {out['q'][:, 7].max() - S:.2e} m")
    plt = pyplot()
    t = out["t"]
    fig, ax = plt.subplots(4, 1, figsize=(7, 8.5), sharex=True, layout="constrained")
    ax[0].plot(t, out["q"][:, 2], color="C0")
    ax[0].set_ylabel("crank angle [rad]")
    ax[1].plot(t, out["q"][:, 6], color="C1")
    ax[1].set_ylabel("slider position x [m]")
    ax[2].plot(t, out["lam_n"], color="C2", label="normal impulse")
    ax[2].plot(t, out["lam_t"], color="C3", label="friction impulse")
    ax[2].plot(t, MU * out["lam_n"], "k:", lw=0.8, label="μ × normal impulse (cone edge)")
    ax[2].legend(fontsize=8)
    ax[2].set_ylabel("impulse per step [N s]")
    ax[3].semilogy(t, np.maximum(out["joint_error"], 1e-18), color="C4")
    ax[3].set_ylabel("joint residual |h(q)| [m]")
    ax[3].set_xlabel("time t [s]")
    for a in ax:
        a.grid(alpha=0.3)
    fig.suptitle("slider-crank with a frictional slider (a GenericMechanical problem per step)")
    path = figure_path("slider_crank_gmp.png")
    fig.savefig(path, dpi=100)
    print("wrote", path)


if __name__ == "__main__":
    main()
