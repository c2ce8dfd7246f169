r"""A pile of mixed shapes in a bin
===============================

Boxes, spheres, capsules, cylinders, cones and convex meshes (a wedge) dropped into a bin
(a floor and four walls, static objects) come to rest on each other: a :class:`nsopt.mechanics.Scene` with
coal's contact detection between every pair of shapes (up to four points per pair, persistent ids for the
warm start), ``NewtonEulerDS`` bodies in the Moreau–Jean step, one FrictionContact(3) problem per step solved by
``nsn-ac`` to 1e-8.

At rest the contact forces on the floor carry the whole weight (the walls only push sideways), every body is
inside the bin, and no contact is deeper than the projection's tolerance (1e-8 m): ``Scene.run``'s defaults keep
the contacts exact (the look-ahead activation, the gap term, the rows where the contacts were found, the position
projection; ``formulations/time_stepping.md`` §4, "Rigid contact that stays exact"), so the pile comes to rest
without sinking and without the energy a rolling capsule or sphere would gain under Siconos' rows.

Writes ``rigid_bin.png`` (kinetic energy, contacts per step, the floor's force against the weight),
``rigid_bin.html`` (viewer page) and ``rigid_bin_still.png``. ``NSOPT_QUICK=1`` (the site's build) drops fewer
bodies for a shorter time.
"""
import os
import tempfile
from pathlib import Path

import numpy as np

from _plotting import figure_path, pyplot
from nsopt import mechanics as mc

G, H, WIDTH, WALL_H, DENSITY = 9.81, 5e-3, 1.2, 0.8, 500.0
KINDS = ("box", "sphere", "capsule", "cylinder", "cone", "wedge")


def shapes(sc):
    sc.add_primitive_shape("box", "Box", (0.2, 0.15, 0.12))
    sc.add_primitive_shape("sphere", "Sphere", (0.08,))
    sc.add_primitive_shape("capsule", "Capsule", (0.05, 0.2))
    sc.add_primitive_shape("cylinder", "Cylinder", (0.08, 0.12))
    sc.add_primitive_shape("cone", "Cone", (0.09, 0.18))
    sc.add_convex_shape("wedge", [[-0.1, -0.08, -0.05], [0.1, -0.08, -0.05], [-0.1, 0.08, -0.05], [0.1, 0.08, -0.05],
                                  [-0.1, 0.0, 0.1], [0.1, 0.0, 0.1]])


def build(n=8, seed=2):
    """n bodies, the six kinds in turn, on a lattice above the bin, randomly turned; mass from the solids' volume
    at ``DENSITY`` (inertia from their meshes)."""
    rng = np.random.default_rng(seed)
    sc = mc.Scene(gravity=(0.0, 0.0, -G), margin=0.02)
    shapes(sc)
    sc.add_primitive_shape("Floor", "Box", (WIDTH + 0.4, WIDTH + 0.4, 0.2))
    sc.add_primitive_shape("WallX", "Box", (0.1, WIDTH + 0.2, WALL_H))
    sc.add_primitive_shape("WallY", "Box", (WIDTH + 0.2, 0.1, WALL_H))
    sc.add_Newton_impact_friction_nsl("contact", mu=0.4, e=0.0)
    sc.add_object("floor", ["Floor"], translation=(0, 0, -0.1))
    d = WIDTH / 2 + 0.05
    for name, shape, xy in (("wall_x-", "WallX", (-d, 0)), ("wall_x+", "WallX", (d, 0)),
                            ("wall_y-", "WallY", (0, -d)), ("wall_y+", "WallY", (0, d))):
        sc.add_object(name, [shape], translation=(*xy, WALL_H / 2))
    per = 3                                     # bodies per row and column of the lattice
    pitch = WIDTH / per
    for j in range(n):
        layer, r = divmod(j, per * per)
        iy, ix = divmod(r, per)
        kind = KINDS[j % len(KINDS)]
        mass = DENSITY * _volume(sc.shape(kind))
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        angle = rng.uniform(0, np.pi)
        quat = (np.cos(angle / 2), *(np.sin(angle / 2) * axis))
        pos = ((ix - (per - 1) / 2) * pitch + rng.uniform(-0.03, 0.03), (iy - (per - 1) / 2) * pitch
               + rng.uniform(-0.03, 0.03), 0.3 + 0.3 * layer)
        sc.add_object(f"{kind}{j}", [kind], translation=pos, orientation=quat, mass=mass)
    return sc


def _volume(shape):
    """The solid's volume, from its triangle mesh (the one ``mesh_inertia`` integrates)."""
    import trimesh

    from nsopt.mechanics.viewer import shape_mesh
    V, F = shape_mesh(shape)
    return float(abs(trimesh.Trimesh(V, F).volume))


def simulate(n=8, T=1.5, record=None):
    sc = build(n)
    run = sc.run(T, H, method="nsn-ac", tol=1e-8, record=record)
    masses = np.array([o["mass"] for o in sc.objects if o["mass"] is not None])
    return run, masses


def floor_force(run):
    """The vertical force on the floor at the last step: the contacts with a static object whose normal is up."""
    c = run.model.last
    up = (c.body2 < 0) & (c.normal[:, 2] > 0.99)
    return float(run.forces[up, 0].sum())


def main():
    quick = os.environ.get("NSOPT_QUICK", "0") == "1"
    n, T = (5, 1.0) if quick else (8, 1.5)
    plt = pyplot()
    with tempfile.TemporaryDirectory() as tmp:
        rec_path = Path(tmp) / "bin.h5"
        run, masses = simulate(n, T, record=rec_path)
        rec = mc.load_record(rec_path)
        page = rec.write_html(figure_path("rigid_bin.html"), title="mixed shapes in a bin", overwrite=True)
        still = rec.still(figure_path("rigid_bin_still.png"), title=f"{n} bodies at rest, t = {rec.t[-1]:.2f} s",
                          overwrite=True, elev=35.0)
    weight = masses.sum() * G
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    ax1.semilogy(run.t, np.maximum(run.kinetic_energy, 1e-12), color="C0")
    ax1.set_xlabel("time t [s]"); ax1.set_ylabel("kinetic energy [J]"); ax1.grid(alpha=0.3)
    ax1.set_title("the pile comes to rest")
    ax2.plot(run.t, run.contacts, color="C1")
    ax2.set_xlabel("time t [s]"); ax2.set_ylabel("contact points detected")
    ax2.set_title(f"floor force at the end {floor_force(run):.2f} N, weight {weight:.2f} N"); ax2.grid(alpha=0.3)
    out = figure_path("rigid_bin.png")
    fig.savefig(out, dpi=100)
    print(f"{n} bodies, {len(run.failed_steps)} failed solves, deepest penetration {run.penetration.max():.2e} m, "
          f"kinetic energy at the end {run.kinetic_energy[-1]:.1e} J, figures: {out}, {still}, page: {page}")


if __name__ == "__main__":
    main()
