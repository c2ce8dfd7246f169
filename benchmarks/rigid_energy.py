"""The energy of issue 32 §2 (no energy created, e = 0): the column of ten spheres dropped in its tube and a capsule
rolling on the floor (the scenes of ``rigid_scenes.py``), each run with nsopt's default (look-ahead activation and
the position projection), the look-ahead rule without the projection, and Siconos' rule (``activation="siconos"``)
with and without the projection (the setting that created energy before the rows were taken at q_k).

    python benchmarks/rigid_energy.py [--plot docs/img/rigid_energy.png] [--tol 1e-10]

Per scene and setting: the total energy (kinetic + potential) minus its start against time, the deepest
penetration; prints the largest energy gain over the start, the energy and the fastest speed at the end, the
deepest penetration. nsn-ac to ``--tol``, θ = 0.50001, h = 5 ms.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rigid_scenes as rs  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SETTINGS = (("default: look-ahead + projection", {}),
            ("look-ahead, projection=False", dict(projection=False)),
            ("Siconos' rule + projection", dict(activation="siconos", projection=True)),
            ("Siconos' rule, projection=False", dict(activation="siconos", projection=False)))


def total_energy(run, sc):
    """Kinetic + potential energy of the bodies at every recorded state (k + 1,)."""
    from nsopt.modeling.newton_euler import kinetic_energy

    m = np.array([b[2] for b in sc["bodies"]])
    inertia = np.array([np.diag(b[3]) for b in sc["bodies"]])
    KE = np.array([kinetic_energy(V, m, inertia).sum() for V in run.v])
    return KE + rs.GRAVITY * (run.q[:, :, 2] * m).sum(1)


def run_scene(sc, T, tol, **kw):
    """The scene through ``Scene.run`` (nsn-ac to ``tol``, θ = 0.50001): (run, total energy)."""
    run = rs.nsopt_scene(sc).run(T, sc["h"], theta=0.50001, method="nsn-ac", tol=tol, **kw)
    return run, total_energy(run, sc)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plot", default=os.path.join(HERE, "results", "rigid_energy.png"))
    ap.add_argument("--tol", type=float, default=1e-10)
    args = ap.parse_args(argv)
    import warnings

    import matplotlib

    from nsopt.mechanics import TunnellingWarning

    # Siconos' rule without the projection lets the capsule sink through the floor: the swept test says so at every
    # step; the figure shows it (its penetration), the warnings would only repeat it
    warnings.simplefilter("ignore", TunnellingWarning)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scenes = (("the column of ten spheres in its tube", rs.spheres(10), 2.0),
              ("a capsule rolling on the floor at 20 rad/s", rs.rolling_capsule(), 3.0))
    fig, ax = plt.subplots(2, 2, figsize=(12, 7.5), layout="constrained")
    print(f"{'scene':10s} {'setting':34s} {'max E - E0 [J]':>15s} {'E_end - E0 [J]':>15s} {'max |v| end':>12s} "
          f"{'deepest [mm]':>13s} {'failed':>6s}")
    for j, (title, sc, T) in enumerate(scenes):
        for k, (label, kw) in enumerate(SETTINGS):
            run, E = run_scene(sc, T, args.tol, **kw)
            t = np.r_[0.0, run.t]
            dE = E - E[0]
            pen = np.r_[0.0, run.penetration]
            print(f"{sc['name']:10s} {label:34s} {dE.max():15.3e} {dE[-1]:15.3e} {np.abs(run.v[-1]).max():12.3e} "
                  f"{1e3 * pen.max():13.4g} {len(run.failed_steps):6d}", flush=True)
            ax[0, j].plot(t, dE, color=f"C{k}", lw=1.2, ls="-" if k < 2 else "--", label=label)
            ax[1, j].semilogy(t, np.maximum(1e3 * pen, 1e-9), color=f"C{k}", lw=1.2, ls="-" if k < 2 else "--",
                              label=label)
        ax[0, j].set_yscale("symlog", linthresh=1e-6)
        ax[0, j].set_title(title), ax[0, j].set_ylabel("total energy − its start [J] (linear within ±1e-6)")
        ax[1, j].set_xlabel("time t [s]"), ax[1, j].set_ylabel("deepest penetration [mm] (1e-9 shown for less)")
        for a in ax[:, j]:
            a.grid(alpha=0.3, which="both")
    ax[0, 0].legend(fontsize=8)
    os.makedirs(os.path.dirname(os.path.abspath(args.plot)), exist_ok=True)
    fig.savefig(args.plot, dpi=100)
    print("figure:", args.plot)


if __name__ == "__main__":
    main()
