"""Hostile input to the 3D layer (issue 29 §2-§4): every bad value gets a typed nsopt error naming the argument,
never a numpy error, a crash of coal's C++ code, a multi-gigabyte read or a silent wrong answer."""

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("coal")

from nsopt import mechanics as mc  # noqa: E402
from nsopt.exceptions import ModelingError  # noqa: E402


# ---------------------------------------------------------------------------- shapes
@pytest.mark.parametrize("make, field", [
    (lambda: mc.Sphere("a"), "Sphere.radius"),
    (lambda: mc.Sphere(1j), "Sphere.radius"),
    (lambda: mc.Sphere([1.0, 2.0]), "Sphere.radius"),
    (lambda: mc.Sphere(True), "Sphere.radius"),
    (lambda: mc.Capsule(0.1, "long"), "Capsule.length"),
    (lambda: mc.Cone(np.nan, 1.0), "Cone.radius"),
    (lambda: mc.Box("abc"), "Box.extents"),
    (lambda: mc.Box([1.0, 2.0]), "Box.extents"),
    (lambda: mc.Box([1.0, 1j, 1.0]), "Box.extents"),
    (lambda: mc.HalfSpace([0, 0, np.nan]), "HalfSpace.normal"),
    (lambda: mc.HalfSpace([0, 1]), "HalfSpace.normal"),
    (lambda: mc.HalfSpace([0, 0, 1], "x"), "HalfSpace.offset"),
    (lambda: mc.Contactor(mc.Sphere(1.0), translation=[0, 1]), "Contactor.translation"),
    (lambda: mc.Contactor(mc.Sphere(1.0), translation="abc"), "Contactor.translation"),
    (lambda: mc.Contactor(mc.Sphere(1.0), orientation=[0, 0, 0, 0]), "Contactor.orientation"),
    (lambda: mc.Contactor(mc.Sphere(1.0), group="a"), "Contactor.group"),
    (lambda: mc.Contactor(mc.Sphere(1.0), group=1.5), "Contactor.group"),
    (lambda: mc.ConvexMesh("abc"), "ConvexMesh.vertices"),
    (lambda: mc.ConvexMesh([[1j, 0, 0]] * 4), "ConvexMesh.vertices"),
    (lambda: mc.ConvexMesh(np.eye(3)), "ConvexMesh.vertices"),
    (lambda: mc.ConvexMesh(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]) * 1e300), "ConvexMesh.vertices"),
])
def test_shapes_refuse_bad_values_by_name(make, field):
    with pytest.raises(ModelingError) as e:
        make()
    assert str(e.value).startswith(field + ":")


@pytest.mark.parametrize("points", [
    [[0, 0, 0], [.2, 0, 0], [0, .2, 0], [.1, .1, 1e-9]],           # coal's hull crashed the process (rc 139)
    [[0, 0, 0], [.2, 0, 0], [0, .2, 0], [.1, .1, 1e-8]],
    [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]],                   # collinear
    [[1, 1, 1]] * 5,                                                # coincident
    [[1e3, 0, 0], [1e3 + 1e-6, 0, 0], [1e3, 1e-6, 0], [1e3, 0, 1e-6]],   # tiny relative to its coordinates
])
def test_degenerate_convex_meshes_are_refused_before_coal(points):
    with pytest.raises(ModelingError, match="ConvexMesh.vertices: are degenerate"):
        mc.ConvexMesh(points)


def test_no_accepted_convex_mesh_crashes_coal(tmp_path):
    """Random nearly flat point sets (thin, at an offset, with near-duplicates): every set ConvexMesh accepts gives a
    coal geometry, in a child process (a crash of coal's Qhull kills the process: rc 139)."""
    rng = np.random.default_rng(7)
    kept = []
    for _ in range(300):
        V = rng.normal(size=(int(rng.integers(4, 20)), 3)) * 10.0 ** rng.uniform(-6, 6)
        V[:, 2] *= 10.0 ** rng.uniform(-9, -4)
        V = V @ np.linalg.qr(rng.normal(size=(3, 3)))[0] + rng.normal(size=3) * rng.choice([0.0, 1.0, 1e3])
        try:
            kept.append(mc.ConvexMesh(V))
        except ModelingError:
            pass
    assert 20 < len(kept) < 300
    np.save(tmp_path / "kept.npy", np.array([m.vertices for m in kept], dtype=object), allow_pickle=True)
    code = ("import numpy as np; from nsopt import mechanics as mc\n"
            f"for V in np.load({str(tmp_path / 'kept.npy')!r}, allow_pickle=True):\n"
            "    mc.ConvexMesh(V).geometry()\nprint('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_thickness_is_the_inscribed_ball():
    assert mc.Box([1, 2, 3]).thickness() == 1.0 and mc.Sphere(0.5).thickness() == 1.0
    tet = mc.ConvexMesh([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    assert tet.thickness() == pytest.approx(2 / (3 + np.sqrt(3)), rel=1e-9)     # twice the inradius
    assert mc.Cone(1.0, 1.0).thickness() == pytest.approx(2 / (1 + np.sqrt(2)))


# ---------------------------------------------------------------------------- scene definitions
def _scene():
    sc = mc.Scene()
    sc.add_primitive_shape("Cube", "Box", (1.0, 1.0, 1.0))
    sc.add_primitive_shape("Ground", "Box", (10.0, 10.0, 1.0))
    sc.add_Newton_impact_friction_nsl("contact", mu=0.5)
    return sc


def _cube(sc, **kw):
    args = dict(translation=[0, 0, 0.5], mass=1.0)
    args.update(kw)
    sc.add_object("cube", ["Cube"], **args)
    return sc


@pytest.mark.parametrize("call, field", [
    (lambda sc: mc.Scene(gravity=[0, -9.81]), "Scene.gravity"),
    (lambda sc: mc.Scene(gravity="down"), "Scene.gravity"),
    (lambda sc: mc.Scene(margin="a"), "Scene.margin"),
    (lambda sc: mc.Scene(margin=-1.0), "Scene.margin"),
    (lambda sc: sc.add_primitive_shape("S", "Sphere", "big"), "Sphere.radius"),
    (lambda sc: sc.add_primitive_shape("S", "Capsule", 1.0), "Scene.params"),
    (lambda sc: sc.add_primitive_shape("S", "Box", (1.0, 1.0)), "Scene.params"),
    (lambda sc: sc.add_Newton_impact_friction_nsl("x", mu=0.5, collision_group1="a"), "Scene law 'x'.collision_group1"),
    (lambda sc: sc.add_Newton_impact_friction_nsl("x", mu=0.5, collision_group2=0.5), "Scene law 'x'.collision_group2"),
    (lambda sc: sc.add_object("c", [], translation=[0, 0, 1], mass=1), "Scene object 'c'.contactors"),
    (lambda sc: sc.add_object("c", [3], translation=[0, 0, 1], mass=1), "Scene object 'c'.contactors[0]"),
    (lambda sc: _cube(sc, translation=[0, 1]), "Scene object 'cube'.translation"),
    (lambda sc: _cube(sc, translation="abc"), "Scene object 'cube'.translation"),
    (lambda sc: _cube(sc, translation=[0, 0, 1j]), "Scene object 'cube'.translation"),
    (lambda sc: _cube(sc, velocity=[0, 1]), "Scene object 'cube'.velocity"),
    (lambda sc: _cube(sc, orientation=(0, 0, 0, 0)), "Scene object 'cube'.orientation"),
    (lambda sc: _cube(sc, orientation=(1, 0, 0)), "Scene object 'cube'.orientation"),
    (lambda sc: _cube(sc, orientation=([0, 0, 0], 1.0)), "Scene object 'cube'.orientation axis"),
    (lambda sc: _cube(sc, orientation=([0, 0, 1], "right")), "Scene object 'cube'.orientation angle"),
    (lambda sc: _cube(sc, mass="a"), "Scene object 'cube'.mass"),
    (lambda sc: _cube(sc, mass=-1.0), "Scene object 'cube'.mass"),
    (lambda sc: _cube(sc, inertia="abc"), "Scene object 'cube'.inertia"),
    (lambda sc: _cube(sc, inertia=[1.0, 2.0]), "Scene object 'cube'.inertia"),
    (lambda sc: _cube(sc, inertia=np.eye(2)), "Scene object 'cube'.inertia"),
    (lambda sc: _cube(sc, force=[0, 1]), "Scene object 'cube'.force"),
    (lambda sc: sc.add_object("g", ["Ground"], translation=[np.inf, 0, 0]), "Scene object 'g'.translation"),
    (lambda sc: sc.add_object("g", ["Ground"], translation=[0, 0, 0], orientation=[0, 0, 0, 0]),
     "Scene object 'g'.orientation"),
    (lambda sc: _cube(sc).add_joint("j", "cube", points=[[np.nan, 0, 0]]), "Scene joint 'j'.points"),
    (lambda sc: _cube(sc).add_joint("j", "cube", points=[]), "Scene joint 'j'.points"),
    (lambda sc: _cube(sc).add_joint("j", "cube", points="abc"), "Scene joint 'j'.points"),
    (lambda sc: _cube(sc).add_joint("j", "cube", axes=[[np.nan, 0, 0]]), "Scene joint 'j'.axes"),
    (lambda sc: _cube(sc).add_joint("j", "cube", axes=[[0, 0, 0]]), "Scene joint 'j'.axes"),
    (lambda sc: _cube(sc).add_joint("j", "cube", axes=[], joint_class="PrismaticJointR"), "Scene joint 'j'.axes"),
    (lambda sc: _cube(sc).add_joint("j", 5), "Scene joint 'j'.object1"),
])
def test_scene_definitions_refuse_bad_values_by_name(call, field):
    with pytest.raises(ModelingError) as e:
        call(_scene())
    assert str(e.value).startswith(field + ":"), str(e.value)


def test_zero_quaternion_says_so_everywhere():
    """A zero orientation says "the quaternion is zero" whether it reaches a Scene, a Contactor, a body or a joint."""
    from nsopt import modeling as nm
    calls = [lambda: _cube(_scene(), orientation=(0, 0, 0, 0)),
             lambda: mc.Contactor(mc.Sphere(1.0), orientation=(0, 0, 0, 0)),
             lambda: nm.NewtonEulerDS([0, 0, 0, 0, 0, 0, 0], [0] * 6, 1.0, [1, 1, 1]),
             lambda: nm.FixedJointR().set_base_positions([0, 0, 0, 0, 0, 0, 0])]
    for call in calls:
        with pytest.raises(ModelingError, match="the quaternion is zero"):
            call()


@pytest.mark.parametrize("cls, args, field", [
    ("PivotJointR", ([0, 0, 0], [np.nan, 0, 0]), "PivotJointR 'hinge'.A"),
    ("PivotJointR", ([np.nan, 0, 0], [1, 0, 0]), "PivotJointR 'hinge'.P"),
    ("KneeJointR", ("abc",), "KneeJointR 'hinge'.P"),
    ("PrismaticJointR", ([np.inf, 0, 0],), "PrismaticJointR 'hinge'.axis"),
])
def test_joint_points_and_axes_not_finite_name_the_joint(cls, args, field):
    from nsopt import modeling as nm
    with pytest.raises(ModelingError) as e:
        getattr(nm, cls)(*args, name="hinge")
    msg = str(e.value)
    assert msg.startswith(field + ":") and ("non-finite" in msg or "not a numeric" in msg), msg
    assert "zero vector" not in msg


def test_a_nan_joint_point_never_reaches_the_one_step_problem():
    sc = _cube(_scene(), translation=[0, 0, 2.0])
    with pytest.raises(ModelingError, match=r"^Scene joint 'j'\.points: has non-finite"):
        sc.add_joint("j", "cube", points=[[np.nan, 0, 0]])


@pytest.mark.parametrize("shape, inertia", [
    (mc.Sphere(1e12), 0.4 * 1e24),         # trimesh at that size: NaN inertia ("NewtonEulerDS 'b'.inertia: non-finite")
    (mc.Box([1e-12] * 3), 1e-24 / 6),      # trimesh merged the vertices: NaN
])
def test_inertia_from_the_shape_at_extreme_sizes(shape, inertia):
    """The inertia computed from a shape (no inertia given) is measured in units of the body's size: right at 1e12
    and 1e-12 (within the icosphere's few % for the sphere)."""
    sc = mc.Scene()
    sc.add_object("b", [mc.Contactor(shape)], translation=[0, 0, 0], mass=1.0)
    np.testing.assert_allclose(np.diag(sc.objects[0]["inertia"]), inertia, rtol=0.03)


@pytest.mark.parametrize("shape, mass, why", [
    (mc.Sphere(1e200), 1.0, "overflows"), (mc.Box([1e200] * 3), 1.0, "overflows"),
    (mc.Sphere(1e-200), 1.0, "underflows"), (mc.Sphere(1e10), 1e300, "overflows"),
])
def test_an_inertia_computed_from_the_shape_that_overflows_says_so(shape, mass, why):
    sc = mc.Scene()
    with pytest.raises(ModelingError, match=rf"^Scene object 'b'\.inertia: was not given, so it was computed from the "
                                            rf"shapes .*{why}"):
        sc.add_object("b", [mc.Contactor(shape)], translation=[0, 0, 0], mass=mass)
