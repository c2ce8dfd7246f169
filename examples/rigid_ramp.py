r"""A box sliding and tumbling down a ramp
======================================

A rigid box (``NewtonEulerDS`` in a :class:`nsopt.mechanics.Scene`) released on a ramp tilted by
:math:`\alpha = 30°` with friction :math:`\mu = 0.3 < \tan\alpha`: it slides flat, accelerating at
:math:`g(\sin\alpha - \mu\cos\alpha)` (Coulomb's law, the one-step problems FrictionContact(3) solved by
``nsn-ac``), leaves the ramp's lower edge, tumbles onto the floor and comes to rest there.

The scene: a static box tilted about y (the ramp), a static floor, the moving box; contacts found by coal at
each step (up to four points per box–box pair, kept by persistent ids so the warm start survives). The run is
recorded to HDF5 (``Scene.run(record=...)``) and the viewer page (offline three.js, a time slider) and a still
are written from the record (``load_record(...).write_html``, ``.still``).

Writes ``rigid_ramp.png`` (the path along the ramp against the closed form, the energy), ``rigid_ramp.html`` and
``rigid_ramp_still.png`` (the box halfway down the ramp: the gallery's thumbnail). ``NSOPT_QUICK=1`` (the site's build) runs the same scene for a shorter time.
"""
import math
import os
import tempfile
from pathlib import Path

import numpy as np

from _plotting import figure_path, pyplot, show_still
from nsopt import mechanics as mc

# sphinx_gallery_thumbnail_number = 1

G, ALPHA, MU, SIDE, MASS = 9.81, math.radians(30.0), 0.3, 0.25, 1.0
RAMP_LENGTH, RAMP_THICK = 2.0, 0.1
H = 5e-3


def ramp_frame():
    """The ramp's surface: a point on it (the box's start, its lower face), the downhill unit vector and the
    unit normal (the ramp is rotated by -α about y: downhill is +x)."""
    down = np.array([math.cos(ALPHA), 0.0, -math.sin(ALPHA)])
    normal = np.array([math.sin(ALPHA), 0.0, math.cos(ALPHA)])
    top = 1.3                                                   # height of the ramp's centre line
    centre = np.array([0.0, 0.0, top])
    surface_mid = centre + normal * RAMP_THICK / 2
    return centre, surface_mid, down, normal


def build():
    """The scene: floor (z = 0), ramp, box at rest on the ramp's upper part."""
    sc = mc.Scene(gravity=(0.0, 0.0, -G), margin=0.02)
    sc.add_primitive_shape("Floor", "Box", (4.5, 1.5, 0.2))
    sc.add_primitive_shape("Ramp", "Box", (RAMP_LENGTH, 1.0, RAMP_THICK))
    sc.add_primitive_shape("Crate", "Box", (SIDE, SIDE, SIDE))
    sc.add_Newton_impact_friction_nsl("contact", mu=MU, e=0.0)
    centre, surface_mid, down, normal = ramp_frame()
    q_ramp = (math.cos(ALPHA / 2), 0.0, math.sin(ALPHA / 2), 0.0)          # +α about y tilts +x downhill
    sc.add_object("floor", ["Floor"], translation=(1.2, 0.0, -0.1))
    sc.add_object("ramp", ["Ramp"], translation=centre, orientation=q_ramp)
    start = surface_mid - down * (0.4 * RAMP_LENGTH) + normal * (SIDE / 2)
    sc.add_object("crate", ["Crate"], translation=start, orientation=q_ramp, mass=MASS)
    return sc, start, down, normal


def simulate(T=2.5, record=None):
    """Run the scene to T; returns the run, the box's start, downhill and normal unit vectors."""
    sc, start, down, normal = build()
    run = sc.run(T, H, method="nsn-ac", tol=1e-8, record=record)
    return run, start, down, normal


def sliding_phase(run, start, down, normal):
    """Distance travelled downhill s(t) while the box is on the ramp (its centre within the ramp's length), and
    the closed form s = a t²/2, a = g(sin α - μ cos α), with the scheme's start: the contact is active from the
    first step."""
    x = run.q[:, 0, :3] - start
    s = x @ down
    t = np.r_[0.0, run.t]
    on = s < 0.4 * RAMP_LENGTH - 0.05
    a = G * (math.sin(ALPHA) - MU * math.cos(ALPHA))
    return t[on], s[on], 0.5 * a * t[on] ** 2, (x @ normal)[on]


def main():
    quick = os.environ.get("NSOPT_QUICK", "0") == "1"
    plt = pyplot()
    with tempfile.TemporaryDirectory() as tmp:
        rec_path = Path(tmp) / "ramp.h5"
        run, start, down, normal = simulate(T=1.6 if quick else 2.5, record=rec_path)
        rec = mc.load_record(rec_path)
        page = rec.write_html(figure_path("rigid_ramp.html"), title="box down a ramp", overwrite=True)
        k = int(np.searchsorted(rec.t, 0.6))           # halfway through the slide
        still = rec.still(figure_path("rigid_ramp_still.png"), step=k, overwrite=True, elev=20.0, azim=-70.0,
                          title=f"sliding down the ramp at g(sin α − μ cos α), t = {rec.t[k]:.2f} s")
        show_still(plt, still)          # the scene: figure 1, the gallery's thumbnail
    t, s, s_exact, lift = sliding_phase(run, start, down, normal)
    a_fit = 2 * np.polyfit(t, s, 2)[0]
    a = G * (math.sin(ALPHA) - MU * math.cos(ALPHA))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    ax1.plot(t, s, "o", ms=3, label="nsopt (Moreau–Jean, coal contacts)")
    ax1.plot(t, s_exact, "-", label=r"$g(\sin\alpha - \mu\cos\alpha)\,t^2/2$")
    ax1.set_xlabel("time t [s]"); ax1.set_ylabel("distance down the ramp [m]")
    ax1.set_title(f"sliding: acceleration {a_fit:.4f} m/s² (exact {a:.4f})"); ax1.grid(alpha=0.3); ax1.legend()
    ax2.plot(run.t, run.kinetic_energy, color="C2")
    ax2.set_xlabel("time t [s]"); ax2.set_ylabel("kinetic energy [J]")
    ax2.set_title("off the edge, tumbling, at rest"); ax2.grid(alpha=0.3)
    out = figure_path("rigid_ramp.png")
    fig.savefig(out, dpi=100)
    z = run.q[-1, 0, 2]
    print(f"sliding acceleration {a_fit:.5f} m/s2 (closed form {a:.5f}), rest height {z:.4f} m, "
          f"{len(run.failed_steps)} failed solves, figures: {out}, {still}, page: {page}")


if __name__ == "__main__":
    main()
