"""The rigid-body scenes of issue 23 §4, as plain data (numpy only), shared by Siconos' side
(``siconos_rigid.py``, run by /usr/bin/python3) and nsopt's side (``nsopt.mechanics.Scene``), so both
run the very same bodies, poses, shapes, laws and steps.

A scene is a dict: ``shapes`` {name: (kind, params)} with kinds "Box" (full extents), "Sphere" (radius),
"Capsule" (radius, cylinder length, along the body's y axis as Bullet's), ``bodies`` (name, shape, mass,
inertia (3,), pose (7,), twist (6,)), ``statics`` (name, shape, pose), ``joints`` (name, kind, body1,
body2 or None, points, axes; absolute frame), ``mu``, ``e``, ``T`` and a default step ``h``.

    python benchmarks/rigid_scenes.py            # prints a summary of every scene
"""

from __future__ import annotations

import math

import numpy as np

GRAVITY = 9.81


def quat_axis_angle(axis, angle):
    axis = np.asarray(axis, dtype=float)
    axis = axis / np.linalg.norm(axis)
    return np.r_[math.cos(angle / 2), math.sin(angle / 2) * axis]


def cube_inertia(m, a):
    return [m * a * a / 6.0] * 3


def sphere_inertia(m, r):
    return [0.4 * m * r * r] * 3


def capsule_inertia(m, r, l):
    """Principal moments of a solid capsule of mass m (radius r, cylinder length l along y): (Ix, Iy, Iz)."""
    vc, vs = math.pi * r * r * l, 4.0 / 3.0 * math.pi * r ** 3
    rho = m / (vc + vs)
    mc, ms = rho * vc, rho * vs
    axial = mc * r * r / 2 + ms * 2 * r * r / 5
    perp = mc * (l * l / 12 + r * r / 4) + ms * (2 * r * r / 5 + l * l / 4 + 3 * l * r / 8)
    return [perp, axial, perp]


def _ground(size=40.0):
    return {"Ground": ("Box", (size, size, 1.0))}, [("ground", "Ground", [0, 0, -0.5, 1, 0, 0, 0])]


def cube_drop():
    """A unit cube (mass 1) released 0.5 above the floor, tilted by 0.3 rad about (1, 1, 0): it lands on an
    edge and settles flat at z = 0.5."""
    shapes, statics = _ground()
    shapes["Cube"] = ("Box", (1.0, 1.0, 1.0))
    bodies = [("cube", "Cube", 1.0, cube_inertia(1.0, 1.0), np.r_[0, 0, 1.2, quat_axis_angle([1, 1, 0], 0.3)].tolist(),
               [0.0] * 6)]
    return dict(name="cube", shapes=shapes, bodies=bodies, statics=statics, joints=[], mu=0.5, e=0.0, T=2.0, h=5e-3)


def pile(n, seed=0):
    """n unit cubes (mass 1) on a lattice of pitch 1.25, each turned by at most 0.15 rad about a random axis,
    falling into a box (a floor and four walls) of inner width k·1.25 + 0.5, k = ceil(n^(1/3)) cubes a row."""
    rng = np.random.default_rng(seed)
    k = math.ceil(round(n ** (1.0 / 3.0), 9))
    layers = math.ceil(n / (k * k))
    s = 1.25
    L = k * s + 0.5
    H = layers * s + 2.0
    shapes = {"Floor": ("Box", (L + 2.0, L + 2.0, 1.0)), "WallX": ("Box", (1.0, L + 2.0, H)),
              "WallY": ("Box", (L + 2.0, 1.0, H)), "Cube": ("Box", (1.0, 1.0, 1.0))}
    statics = [("floor", "Floor", [0, 0, -0.5, 1, 0, 0, 0]),
               ("wall_x-", "WallX", [-(L / 2 + 0.5), 0, H / 2, 1, 0, 0, 0]),
               ("wall_x+", "WallX", [L / 2 + 0.5, 0, H / 2, 1, 0, 0, 0]),
               ("wall_y-", "WallY", [0, -(L / 2 + 0.5), H / 2, 1, 0, 0, 0]),
               ("wall_y+", "WallY", [0, L / 2 + 0.5, H / 2, 1, 0, 0, 0])]
    bodies = []
    for j in range(n):
        layer, r = divmod(j, k * k)
        iy, ix = divmod(r, k)
        x = (ix - (k - 1) / 2) * s
        y = (iy - (k - 1) / 2) * s
        z = 1.0 + layer * s
        axis = rng.normal(size=3)
        quat = quat_axis_angle(axis, 0.15 * rng.random())
        bodies.append((f"cube{j}", "Cube", 1.0, cube_inertia(1.0, 1.0), np.r_[x, y, z, quat].tolist(), [0.0] * 6))
    return dict(name=f"pile{n}", shapes=shapes, bodies=bodies, statics=statics, joints=[], mu=0.5, e=0.0,
                T=2.0, h=5e-3, box_inner=L)


def spheres(n=10):
    """A column of n spheres of radius 0.5 (mass 1), 0.01 apart, on the floor inside a square tube of inner
    width 1.02 (a free column of spheres is an unstable equilibrium that either code may break by round-off):
    at rest the centres are at 0.5 + j (j = 0 .. n-1)."""
    shapes, statics = _ground()
    shapes["Ball"] = ("Sphere", (0.5,))
    w, H = 1.02, n + 1.0
    shapes["TubeX"] = ("Box", (0.2, w + 0.4, H))
    shapes["TubeY"] = ("Box", (w + 0.4, 0.2, H))
    statics += [("tube_x-", "TubeX", [-(w / 2 + 0.1), 0, H / 2, 1, 0, 0, 0]),
                ("tube_x+", "TubeX", [w / 2 + 0.1, 0, H / 2, 1, 0, 0, 0]),
                ("tube_y-", "TubeY", [0, -(w / 2 + 0.1), H / 2, 1, 0, 0, 0]),
                ("tube_y+", "TubeY", [0, w / 2 + 0.1, H / 2, 1, 0, 0, 0])]
    bodies = [(f"ball{j}", "Ball", 1.0, sphere_inertia(1.0, 0.5), [0, 0, 0.51 + j * 1.01, 1, 0, 0, 0], [0.0] * 6)
              for j in range(n)]
    return dict(name=f"spheres{n}", shapes=shapes, bodies=bodies, statics=statics, joints=[], mu=0.5, e=0.0,
                T=1.0, h=5e-3)


def chain(n=8, height=2.0):
    """n capsules (radius 0.1, cylinder 0.7, along y, mass 1) laid end to end along y at height z = ``height``,
    linked by pivot joints of axis x at their tips' midpoints (pitch 1.0), the first one pinned to the world
    at (0, 0, height): the chain swings down and lies on the floor."""
    shapes, statics = _ground()
    r, l, pitch = 0.1, 0.7, 1.0
    shapes["Link"] = ("Capsule", (r, l))
    bodies, joints = [], []
    for j in range(n):
        bodies.append((f"link{j}", "Link", 1.0, capsule_inertia(1.0, r, l), [0, (j + 0.5) * pitch, height, 1, 0, 0, 0],
                       [0.0] * 6))
        joints.append((f"pivot{j}", "PivotJointR", f"link{j}", None if j == 0 else f"link{j - 1}",
                       [[0.0, j * pitch, height]], [[1.0, 0.0, 0.0]]))
    return dict(name=f"chain{n}", shapes=shapes, bodies=bodies, statics=statics, joints=joints, mu=0.3, e=0.0,
                T=3.0, h=5e-3)


# ---------------------------------------------------------------------------- issue 32: small cubes, slopes
SIDE = 0.2          # the side of issue 32's cubes [m] (m = 1 kg, I = m a²/6, μ = 0.5, e = 0, h = 5 ms)


def cubes(n, side=SIDE, seed=0):
    """Issue 32's piles: n cubes of side ``side`` (mass 1) on a lattice of pitch 1.5 side, each jittered by up to
    0.1 side in x, y and z and turned by at most 0.15 rad about a random axis, falling into an open box (a floor
    and four walls) of inner width k·1.5 side + side, k = ceil(n^(1/3)) cubes a row, the lowest layer's centres
    1.5 side above the floor."""
    rng = np.random.default_rng(seed)
    k = math.ceil(round(n ** (1.0 / 3.0), 9))
    layers = math.ceil(n / (k * k))
    s = 1.5 * side
    L = k * s + side
    H = (layers + 1) * s + 2 * side
    wall = side
    shapes = {"Floor": ("Box", (L + 2 * wall, L + 2 * wall, wall)), "WallX": ("Box", (wall, L + 2 * wall, H)),
              "WallY": ("Box", (L + 2 * wall, wall, H)), "Cube": ("Box", (side, side, side))}
    statics = [("floor", "Floor", [0, 0, -wall / 2, 1, 0, 0, 0]),
               ("wall_x-", "WallX", [-(L + wall) / 2, 0, H / 2, 1, 0, 0, 0]),
               ("wall_x+", "WallX", [(L + wall) / 2, 0, H / 2, 1, 0, 0, 0]),
               ("wall_y-", "WallY", [0, -(L + wall) / 2, H / 2, 1, 0, 0, 0]),
               ("wall_y+", "WallY", [0, (L + wall) / 2, H / 2, 1, 0, 0, 0])]
    bodies = []
    for j in range(n):
        layer, r = divmod(j, k * k)
        iy, ix = divmod(r, k)
        jit = rng.uniform(-0.1 * side, 0.1 * side, 3)
        x = (ix - (k - 1) / 2) * s + jit[0]
        y = (iy - (k - 1) / 2) * s + jit[1]
        z = s + layer * s + jit[2]
        quat = quat_axis_angle(rng.normal(size=3), 0.15 * rng.random())
        bodies.append((f"cube{j}", "Cube", 1.0, cube_inertia(1.0, side), np.r_[x, y, z, quat].tolist(), [0.0] * 6))
    return dict(name=f"cubes{n}", shapes=shapes, bodies=bodies, statics=statics, joints=[], mu=0.5, e=0.0,
                T=3.0, h=5e-3, box_inner=L)


def drop(z=1.086, side=SIDE):
    """Issue 32's fast approach: a cube of side ``side`` (mass 1) released flat with its centre at height z: it
    reaches the floor at 4.36 m/s (from 1.086 m), the step before with a gap of 15 mm."""
    shapes, statics = _ground(4.0)
    shapes["Cube"] = ("Box", (side, side, side))
    bodies = [("cube", "Cube", 1.0, cube_inertia(1.0, side), [0, 0, z, 1, 0, 0, 0], [0.0] * 6)]
    return dict(name="drop", shapes=shapes, bodies=bodies, statics=statics, joints=[], mu=0.5, e=0.0, T=1.0,
                h=5e-3)


def slope(alpha_deg, side=SIDE, mu=0.5, T=2.0):
    """A cube of side ``side`` (mass 1) resting on a ramp tilted by α about the y axis (a static box of 4 x 2,
    0.2 thick, its top face through the origin), released at rest flat on it: with μ = 0.5 it sticks below
    atan(μ) = 26.57° and slides above with the acceleration g(sin α − μ cos α) down the slope
    (``downhill``: the unit vector (cos α, 0, −sin α))."""
    a = math.radians(alpha_deg)
    n = np.array([math.sin(a), 0.0, math.cos(a)])
    quat = quat_axis_angle([0, 1, 0], a)
    shapes = {"Ramp": ("Box", (4.0, 2.0, 0.2)), "Cube": ("Box", (side, side, side))}
    statics = [("ramp", "Ramp", np.r_[-0.1 * n, quat].tolist())]
    bodies = [("cube", "Cube", 1.0, cube_inertia(1.0, side), np.r_[0.5 * side * n, quat].tolist(), [0.0] * 6)]
    return dict(name=f"slope{alpha_deg:g}", shapes=shapes, bodies=bodies, statics=statics, joints=[], mu=mu, e=0.0,
                T=T, h=5e-3, downhill=[math.cos(a), 0.0, -math.sin(a)], alpha=alpha_deg,
                acceleration=GRAVITY * max(0.0, math.sin(a) - mu * math.cos(a)))


def push(side=SIDE, mu=0.5, T=2.0, ratio=1.0):
    """A cube of side ``side`` (mass 1) resting on the floor pushed along x by ``ratio`` μ m g (``forces``): at
    ratio 1 exactly the threshold of Coulomb's law, where it must stay."""
    shapes, statics = _ground(4.0)
    shapes["Cube"] = ("Box", (side, side, side))
    bodies = [("cube", "Cube", 1.0, cube_inertia(1.0, side), [0, 0, side / 2, 1, 0, 0, 0], [0.0] * 6)]
    return dict(name="push", shapes=shapes, bodies=bodies, statics=statics, joints=[], mu=mu, e=0.0, T=T, h=5e-3,
                forces={"cube": [ratio * mu * GRAVITY, 0.0, 0.0]})


def rolling_capsule(omega=20.0, r=0.05, l=0.2, T=3.0):
    """A capsule of radius r and cylinder l (axis along y, mass 1) lying on the floor and rolling along x without
    slipping at ``omega`` rad/s (centre speed omega·r): with e = 0 its total energy must stay at its start."""
    shapes, statics = _ground(20.0)
    shapes["Cap"] = ("Capsule", (r, l))
    bodies = [("cap", "Cap", 1.0, capsule_inertia(1.0, r, l), [0, 0, r, 1, 0, 0, 0], [omega * r, 0, 0, 0, omega, 0])]
    return dict(name="capsule", shapes=shapes, bodies=bodies, statics=statics, joints=[], mu=0.5, e=0.0, T=T,
                h=5e-3)


SCENES = {"cube": cube_drop, "pile10": lambda: pile(10), "pile100": lambda: pile(100),
          "pile1000": lambda: pile(1000), "spheres": spheres, "chain": chain,
          "cubes10": lambda: cubes(10), "cubes100": lambda: cubes(100), "cubes1000": lambda: cubes(1000),
          "drop": drop, "slope25": lambda: slope(25.0), "slope28": lambda: slope(28.0), "push": push, "capsule": rolling_capsule}


def arguments(description: str):
    """The command line both sides share: SCENE OUT_PREFIX [--h H] [--theta θ] [--tol TOL] (an argparse parser)."""
    import argparse

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("scene")
    ap.add_argument("out")
    ap.add_argument("--h", type=float, default=None)
    ap.add_argument("--theta", type=float, default=0.50001)
    ap.add_argument("--tol", type=float, default=1e-6)
    return ap


def scene(name: str) -> dict:
    if name.startswith("pile") and name not in SCENES:
        return pile(int(name[4:]))
    if name.startswith("cubes") and name not in SCENES:
        return cubes(int(name[5:]))
    return SCENES[name]()


if __name__ == "__main__":
    for key in SCENES:
        s = scene(key)
        print(f"{key:9s} bodies {len(s['bodies']):5d} statics {len(s['statics'])} joints {len(s['joints'])} "
              f"T {s['T']} h {s['h']}")


def nsopt_scene(sc: dict, margin: float = 0.05):
    """The scene as an :class:`nsopt.mechanics.Scene` (same shapes, bodies, statics, joints, μ, e)."""
    from nsopt import mechanics as mc

    s = mc.Scene(gravity=(0.0, 0.0, -GRAVITY), margin=margin)
    for name, (kind, params) in sc["shapes"].items():
        s.add_primitive_shape(name, kind, params)
    s.add_Newton_impact_friction_nsl("contact", mu=sc["mu"], e=sc["e"])
    forces = sc.get("forces", {})
    for name, shape, mass, inertia, pose, twist in sc["bodies"]:
        s.add_object(name, [mc.Contactor(s.shape(shape))], translation=pose[:3], orientation=pose[3:], velocity=twist,
                     mass=mass, inertia=inertia, force=forces.get(name))
    for name, shape, pose in sc["statics"]:
        s.add_object(name, [mc.Contactor(s.shape(shape))], translation=pose[:3], orientation=pose[3:])
    for name, kind, b1, b2, points, axes in sc["joints"]:
        s.add_joint(name, b1, b2, points=points, axes=axes, joint_class=kind, absolute=True)
    return s
