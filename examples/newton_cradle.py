"""Newton's cradle with the LZB multiple-impact model
==================================================

Newton's cradle with the LZB multiple-impact model: Hertz vs linear contacts, e = 1 and e = 0.8.

A steel ball (R = 1 cm) hits, at V = 1 m/s, a chain of touching equal balls. Newton's restitution law
cannot say how the momentum spreads; the LZB model (Siconos' MultipleImpact) integrates the impact in
the impulse of a primary contact, with a compliant law F = k delta^eta per contact. The printed table
is the one of formulations/multiple_impact.md §5; the PNG shows the post-impact velocities.

Run: python examples/newton_cradle.py   (writes newton_cradle.png in $NSOPT_FIGURES, default examples/figures)
"""

import numpy as np

import nsopt
from _plotting import figure_path, pyplot

R, RHO, YOUNG, POISSON, V = 0.01, 7780.0, 203e9, 0.3, 1.0
m = 4.0 / 3.0 * np.pi * R**3 * RHO
k = np.sqrt(R / 2) * (2.0 / 3.0) * YOUNG / (1.0 - POISSON**2)   # Hertz constant of two equal spheres


def cradle(nb, e, eta):
    H = np.zeros((nb - 1, nb))
    H[np.arange(nb - 1), np.arange(nb - 1)] = -1.0
    H[np.arange(nb - 1), np.arange(1, nb)] = 1.0
    v = np.zeros(nb)
    v[0] = V
    return nsopt.MultipleImpact(m * np.eye(nb), H, v, restitution=e, stiffness=k, elasticity=eta)


rows = []
print(f"{'balls':>5s} {'e':>4s} {'law':>7s}  post-impact velocities / V{'':26s} energy lost  steps")
for nb in (3, 5):
    for e in (1.0, 0.8):
        for eta, law in ((1.5, "Hertz"), (1.0, "linear")):
            p = cradle(nb, e, eta)
            s = nsopt.solve(p, method="lzb", impulse_step=1e-5 * m * V)
            assert s.success, s.message
            assert abs(m * s.v.sum() - m * V) < 1e-15                 # momentum to round-off
            lost = 1.0 - p.kinetic_energy(s.v) / p.kinetic_energy(p.v)
            rows.append((nb, e, law, s.v))
            vel = " ".join(f"{x:+.4f}" for x in s.v)
            print(f"{nb:5d} {e:4.1f} {law:>7s}  {vel:52s} {lost:10.2e}  {s.nit}")

plt = pyplot()
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
for ax, nb in zip(axes, (3, 5)):
    width = 0.2
    for j, (nb_, e, law, v) in enumerate(r for r in rows if r[0] == nb):
        ax.bar(np.arange(nb) + (j - 1.5) * width, v, width, label=f"e={e:g}, {law}")
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xticks(range(nb))
    ax.set_xlabel("ball (1 = the striker)")
    ax.set_xticklabels([str(i + 1) for i in range(nb)])
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(f"{nb} balls, V = {V:g} m/s onto the chain")
axes[0].set_ylabel("post-impact velocity / V")
axes[1].legend(fontsize=8)
fig.tight_layout()
out = figure_path("newton_cradle.png")
fig.savefig(out, dpi=110)
print("wrote", out)
