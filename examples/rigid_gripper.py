r"""A gripper closing on a cube
===========================

Two fingers (boxes) slide along x on prismatic joints to the world (``PrismaticJointR``: the bilateral law
``EqualityConditionNSL`` keeps them on their rails), pushed towards each other by a constant force :math:`F`
(``Scene.add_object(force=...)``). Between them a cube of mass :math:`m` is released in the air: the fingers
close on it and friction (:math:`\mu`) holds it if the two contacts can carry its weight,
:math:`2\mu F \ge m g`; otherwise it slides down between them with acceleration :math:`g - 2\mu F / m`
(Coulomb's law at sliding, the normal force on each side being F).

Each step is one GenericMechanical problem (the joints' equality blocks and the contacts' Coulomb blocks,
solved by ``nsgs`` to 1e-8) built by the Moreau–Jean step from ``NewtonEulerDS`` bodies, the joint relations
and coal's contact points (up to four per finger face). The example runs both cases, a firm grip and a weak
one, and compares them with the closed forms.

Writes ``rigid_gripper.png`` (the cube's height in both cases against the closed forms), ``rigid_gripper.html``
(viewer page of the firm grip) and ``rigid_gripper_still.png``.
"""
import tempfile
from pathlib import Path

import numpy as np

from _plotting import figure_path, pyplot, show_still
from nsopt import mechanics as mc

# sphinx_gallery_thumbnail_number = 1

G, H, MU = 9.81, 5e-3, 0.5
CUBE, M_CUBE = 0.1, 0.5                         # side, mass
FINGER, M_FINGER, GAP = (0.04, 0.12, 0.3), 0.2, 0.01
Z0 = 0.4                                        # the cube's centre at the start


def build(F):
    """Fingers at ±(CUBE/2 + GAP + thickness/2) on x rails, pushed inwards by F; the cube at rest between them."""
    sc = mc.Scene(gravity=(0.0, 0.0, -G), margin=0.02)
    sc.add_primitive_shape("Floor", "Box", (0.5, 0.5, 0.1))
    sc.add_primitive_shape("Cube", "Box", (CUBE, CUBE, CUBE))
    sc.add_primitive_shape("Finger", "Box", FINGER)
    sc.add_Newton_impact_friction_nsl("contact", mu=MU, e=0.0)
    sc.add_object("floor", ["Floor"], translation=(0, 0, -0.05))
    sc.add_object("cube", ["Cube"], translation=(0, 0, Z0), mass=M_CUBE)
    x = CUBE / 2 + GAP + FINGER[0] / 2
    for side, name in ((-1, "left"), (1, "right")):
        # the fingers' own weight is carried by their rails (the joints): gravity acts on every body
        sc.add_object(name, ["Finger"], translation=(side * x, 0, Z0), mass=M_FINGER, force=(-side * F, 0.0, 0.0))
        sc.add_joint(f"{name}_rail", name, None, points=[(side * x, 0, Z0)], axes=[(1.0, 0.0, 0.0)],
                     joint_class="PrismaticJointR")
    return sc


def simulate(F, T=0.3, record=None):
    """Run the gripper pushed by F to T; returns the run. Siconos' activation rule: with the look-ahead rule (the
    default) the gap term of the contacts that close on the cube, b = [y + h(1−θ)ẏ]⁺/h per corner, is clipped at
    zero corner by corner; at the grip the four corners of a face come with b = 0, 0, 4e-5, 0 m/s (detection noise
    of 2e-7 m), velocities that no rigid motion of the face has, and Gauss–Seidel stalls on that one-step problem
    (9.5e-6 after 20000 sweeps, nsn at 5e-4), where it solves it in 186 sweeps without that corner's b (a known
    limit, issue 32's note)."""
    return build(F).run(T, H, method="nsgs", tol=1e-8, record=record, activation="siconos", projection=False)


def slip_acceleration(F):
    """The cube's downward acceleration once gripped: 0 if 2μF ≥ mg, else g - 2μF/m."""
    return max(0.0, G - 2 * MU * F / M_CUBE)


def grip_time(run):
    """The first step at which both fingers touch the cube (contacts between the cube (body 0) and each finger)."""
    return next(k for k, c in enumerate(run.contacts) if c > 0) if len(run) else None


def measured_acceleration(run):
    """The cube's downward acceleration between the fingers: a parabola fitted to its height from ten steps after
    the grip to the end (the fingers are tall enough that it is still between them)."""
    t, z = np.r_[0.0, run.t], run.q[:, 0, 2]
    k = grip_time(run) + 10
    return float(-2 * np.polyfit(t[k:], z[k:], 2)[0])


def main():
    plt = pyplot()
    firm, weak = 20.0, 3.0
    with tempfile.TemporaryDirectory() as tmp:
        rec_path = Path(tmp) / "gripper.h5"
        runs = {firm: simulate(firm, record=rec_path), weak: simulate(weak)}
        rec = mc.load_record(rec_path)
        page = rec.write_html(figure_path("rigid_gripper.html"), title="a gripper closing on a cube", overwrite=True)
        still = rec.still(figure_path("rigid_gripper_still.png"), title=f"held by friction, t = {rec.t[-1]:.2f} s",
                          overwrite=True, elev=15.0, azim=-75.0)
        show_still(plt, still)          # the scene: figure 1, the gallery's thumbnail
    fig, ax = plt.subplots(figsize=(6.4, 4.4), layout="constrained")
    lines = []
    for F, run in runs.items():
        t = np.r_[0.0, run.t]
        z = run.q[:, 0, 2]
        k = grip_time(run) + 10                          # after the fingers have closed
        a = slip_acceleration(F)
        fit = measured_acceleration(run)
        ax.plot(t, z, label=f"F = {F:g} N: measured a = {fit:.3f} m/s²")
        ax.plot(t[k:], z[k] + (t[k:] - t[k]) * (z[k + 1] - z[k - 1]) / (2 * H) - 0.5 * a * (t[k:] - t[k]) ** 2, "k:",
                lw=1)
        lines.append(f"F = {F:g} N: 2μF = {2 * MU * F:.1f} N vs mg = {M_CUBE * G:.2f} N, acceleration {fit:.4f} "
                     f"(closed form {a:.4f}) m/s², {len(run.failed_steps)} failed solves")
    ax.set_xlabel("time t [s]"); ax.set_ylabel("cube centre height [m]")
    ax.set_title("grip (2μF ≥ mg) or slip; dotted: closed form"); ax.grid(alpha=0.3); ax.legend(fontsize=8)
    out = figure_path("rigid_gripper.png")
    fig.savefig(out, dpi=100)
    print("\n".join(lines))
    print(f"figures: {out}, {still}, page: {page}")


if __name__ == "__main__":
    main()
