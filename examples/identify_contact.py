"""Identifying restitution and friction through contact
====================================================

Identification through contact: recover the restitution e and the friction coefficient μ of a
bouncing puck from its noisy trajectory, by gradient descent on the adjoint of the whole simulation.

A puck (a point mass, coordinates x along the floor and z up) is thrown onto a floor with Coulomb
friction and Newton restitution (``NewtonImpactFrictionNSL(e, 0, μ, 2)``: a 2D friction-contact
problem at each step in contact). At each bounce the normal velocity is reversed and scaled by e,
and friction takes at most ``μ (1 + e) |v_z|`` of the horizontal velocity: the heights of the bounces
tell e, the horizontal slowdown tells μ.

The "measurements" are the positions of a run with e = 0.7, μ = 0.25, with Gaussian noise of 2 mm.
The loss is the mean squared distance between the simulated and the measured positions,

    ``L(e, μ) = 1/(N+1) Σ_k |q_k(e, μ) - q_k^meas|²``,

and its gradient is one adjoint sweep over the recorded steps (``TimeStepping(...,
differentiable=True)``, ``traj.gradient(loss, wrt=["e", "mu"])``): the impulses of each contact
step are differentiated by ``nsopt.sensitivity`` (the implicit function theorem on the step's
problem) and chained through Moreau–Jean's update (``formulations/sensitivity.md``, "Through time
stepping"). The loss is minimised by projected gradient descent (Barzilai–Borwein step lengths,
at most 0.1 long, Armijo backtracking) within 0 <= e <= 1, μ >= 0, from e = 0.4, μ = 0.1. (From a μ large enough for the puck to stick at its first bounce the loss is flat in μ: the
sticking branch does not depend on it, and the derivative says so; start where it slides.) The derivative holds the index set of each step fixed: as e changes, the bounces move by
whole steps now and then, a small jump of the loss the gradient does not see (h = 1 ms keeps it
small); the report of the last run says how close the activation decisions were.

Writes ``identify_contact.png``: the loss and the two parameters against the iterations (true values
dashed), and the measured and identified trajectories.
"""

import numpy as np
from _plotting import figure_path, pyplot

from nsopt import modeling as nm

G = 9.81
TRUE = {"e": 0.7, "mu": 0.25}
START = {"e": 0.4, "mu": 0.1}
NOISE = 2e-3        # m


def simulate(e, mu, h=1e-3, T=1.2, differentiable=True):
    """The puck thrown from 0.5 m at (2, 1) m/s onto the floor; returns the trajectory and the puck."""
    puck = nm.LagrangianLinearTIDS(q0=[0.0, 0.5], v0=[2.0, 1.0], M=np.eye(2), fext=[0.0, -G])
    floor = nm.Interaction(nm.NewtonImpactFrictionNSL(e, 0.0, mu, 2),
                           nm.LagrangianLinearTIR(H=[[0.0, 1.0], [1.0, 0.0]]))   # normal z, tangent x
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(floor, puck)
    sim = nm.TimeStepping(nsds, h, nm.MoreauJeanOSI(0.5), osns="fc2d", method="nsn-ac", tol=1e-12,
                          differentiable=differentiable)
    return sim.run(), puck


def measurements(seed=0):
    traj, puck = simulate(TRUE["e"], TRUE["mu"], differentiable=False)
    q = traj.q(puck)
    return q + np.random.default_rng(seed).normal(0.0, NOISE, q.shape)


def identify(data, start=START, max_iter=40, max_step=0.1):
    """Projected gradient descent on (e, μ) with the adjoint gradient: Barzilai–Borwein step lengths,
    each step at most ``max_step`` long and accepted only when the loss decreases (Armijo; halved
    otherwise). Returns the iterates (loss, e, μ), the final run and its gradient."""
    n = data.shape[0]
    lo, hi = np.array([0.0, 0.0]), np.array([1.0, np.inf])

    def loss(Q, V):
        r = Q - data
        return float(np.sum(r * r)) / n, 2.0 * r / n, None

    def evaluate(x):
        traj, _ = simulate(float(x[0]), float(x[1]))
        g = traj.gradient(loss, wrt=["e", "mu"])
        return g.value, np.array([g["e"], g["mu"]]), traj, g

    x = np.array([start["e"], start["mu"]])
    f, g, traj, grad = evaluate(x)
    hist, evals, alpha = [(f, x[0], x[1])], 1, None
    for _ in range(max_iter):
        if alpha is None:
            alpha = max_step / max(np.linalg.norm(g), 1e-300)
        while True:
            d = -alpha * g
            if np.linalg.norm(d) > max_step:
                d *= max_step / np.linalg.norm(d)
            xn = np.clip(x + d, lo, hi)
            fn, gn, trn, gradn = evaluate(xn)
            evals += 1
            if fn <= f + 1e-4 * g @ (xn - x) or alpha < 1e-12:
                break
            alpha *= 0.5
        s_, y_ = xn - x, gn - g
        alpha = float(s_ @ s_ / (s_ @ y_)) if s_ @ y_ > 0 else None      # Barzilai–Borwein
        done = np.linalg.norm(s_) <= 1e-7
        x, f, g, traj, grad = xn, fn, gn, trn, gradn
        hist.append((f, x[0], x[1]))
        if done:
            break
    return {"history": np.array(hist), "e": float(x[0]), "mu": float(x[1]), "traj": traj, "gradient": grad,
            "evaluations": evals, "loss": f}


def main():
    data = measurements()
    r = identify(data)
    h = r["history"]
    print(f"identified e = {r['e']:.4f} (true {TRUE['e']}), mu = {r['mu']:.4f} (true {TRUE['mu']}), "
          f"loss {r['loss']:.3e} m^2 (noise variance x 2 = {2 * NOISE ** 2:.1e}), {len(h) - 1} iterations, "
          f"{r['evaluations']} simulations + gradients")
    print(r["gradient"].report)
    plt = pyplot()
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    it = np.arange(len(h))
    ax[0].semilogy(it, h[:, 0], "o-")
    ax[0].axhline(2 * NOISE ** 2, color="k", ls="--", lw=0.8, label="noise level 2σ²")
    ax[0].set_xlabel("iteration"); ax[0].set_ylabel("loss: mean squared position error [m²]")
    ax[0].set_title("Loss"); ax[0].legend()
    ax[1].plot(it, h[:, 1], "o-", color="C0", label="e (restitution)")
    ax[1].plot(it, h[:, 2], "s-", color="C1", label="μ (friction)")
    ax[1].axhline(TRUE["e"], color="C0", ls="--", lw=1, label=f"true e = {TRUE['e']}")
    ax[1].axhline(TRUE["mu"], color="C1", ls="--", lw=1, label=f"true μ = {TRUE['mu']}")
    ax[1].set_xlabel("iteration"); ax[1].set_ylabel("parameter value [-]")
    ax[1].set_title("Parameters (gradient descent, adjoint gradient)"); ax[1].legend()
    q0, _ = simulate(START["e"], START["mu"], differentiable=False)
    ax[2].plot(data[::10, 0], data[::10, 1], ".", color="0.5", ms=3, label="measured (every 10th step)")
    traj = r["traj"]
    Q, _ = traj.states()
    ax[2].plot(Q[:, 0], Q[:, 1], color="C2", label=f"identified: e = {r['e']:.3f}, μ = {r['mu']:.3f}")
    Q0 = np.hstack([q0.q(ds) for ds in q0._sim.nsds.dynamical_systems])
    ax[2].plot(Q0[:, 0], Q0[:, 1], color="C3", ls=":", label=f"start: e = {START['e']}, μ = {START['mu']}")
    ax[2].axhline(0.0, color="k", lw=1)
    ax[2].set_xlabel("x [m]"); ax[2].set_ylabel("z [m]"); ax[2].set_title("Trajectories"); ax[2].legend(fontsize=8)
    fig.tight_layout()
    out = figure_path("identify_contact.png")
    fig.savefig(out, dpi=100)
    print("figure:", out)


if __name__ == "__main__":
    main()
