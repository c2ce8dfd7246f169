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
