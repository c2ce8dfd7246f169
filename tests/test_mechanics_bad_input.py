"""Hostile input to the 3D layer (issue 29 §2-§4): every bad value gets a typed nsopt error naming the argument,
never a numpy error, a crash of coal's C++ code, a multi-gigabyte read or a silent wrong answer."""

import subprocess
import sys

import numpy as np
import pytest

from conftest import need_extra

need_extra("mechanics")

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
    (lambda: mc.HalfSpace([0, 0, np.nan]), "HalfSpace.normal: has non-finite"),          # not "the zero vector"
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
    assert str(e.value).startswith(field if ":" in field else field + ":"), str(e.value)


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


# ---------------------------------------------------------------------------- runs: options checked before the first step
def _ground(sc):
    sc.add_object("ground", ["Ground"], translation=[0, 0, -0.5])
    return sc


def _sliding(mu=0.5):
    """A cube sliding at 2 m/s on the ground (fc3d stops it at x = 0.408 m)."""
    sc = mc.Scene()
    sc.add_primitive_shape("Cube", "Box", (1.0, 1.0, 1.0))
    sc.add_primitive_shape("Ground", "Box", (10.0, 10.0, 1.0))
    sc.add_Newton_impact_friction_nsl("contact", mu=mu)
    sc.add_object("cube", ["Cube"], translation=[0, 0, 0.5], velocity=[2, 0, 0, 0, 0, 0], mass=1.0)
    return _ground(sc)


@pytest.mark.parametrize("kw, error, match", [
    (dict(omega=1.0), "OptionError", r"unknown option\(s\) \['omega'\]"),
    (dict(gamma=1.5), "ModelingError", "gamma"),
    (dict(activation="soon"), "ModelingError", "activation"),
    (dict(method="bogus"), "MethodNotFound", "unknown method 'bogus'"),
    (dict(tol=-1), "OptionError", "tol must be a finite positive number"),
    (dict(fallback=["nope"]), "MethodNotFound", "unknown method 'nope'"),
    (dict(fallback="nsgs"), "ModelingError", "fallback: must be a sequence"),
    (dict(max_iter=-3), "OptionError", "max_iter"),
    (dict(on_step=5), "ModelingError", "Scene.on_step: must be a callable"),
    (dict(observers=print), "ModelingError", "Scene.observers: must be a sequence of callables"),
    (dict(observers=[3]), "ModelingError", "Scene.observers: must be a sequence of callables"),
    (dict(check="x"), "ModelingError", "Scene.check"),
    (dict(keep_states="yes"), "ModelingError", "Scene.keep_states"),
    (dict(osns="bogus"), "ModelingError", "Scene.osns: unknown one-step problem kind"),
    (dict(osns="lcp"), "ModelingError", "Scene.osns: a 'lcp' problem cannot hold the scene's laws"),
    (dict(h="0.01"), "ModelingError", "Scene.h"),
    (dict(continue_from=3), "ModelingError", "Scene.continue_from: must be a record"),
])
def test_scene_run_checks_every_option_before_the_first_step(tmp_path, kw, error, match):
    """Each bad option is refused before any step is taken (on_step never called) and before the record is made
    (it failed at step 1, or at step 21 after 20 steps were computed, or ran on with friction dropped)."""
    import nsopt.exceptions as ex
    steps = []
    args = dict(T=0.1, h=0.01, record=tmp_path / "r.h5", on_step=lambda step: steps.append(step.k))
    args.update(kw)
    with pytest.raises(getattr(ex, error), match=match):
        _sliding().run(**args)
    assert steps == [] and not (tmp_path / "r.h5").exists()


def test_a_friction_law_linked_during_a_time_stepping_run_is_refused_by_lcp():
    """TimeStepping(osns='lcp') refused a friction law present at construction; one linked during the run (as a
    Scene links its contacts) lost its friction: the cube slid on at 2 m/s where fc3d stops it."""
    from nsopt import modeling as nm
    model = _sliding().build(0.0, 0.1)
    sim = nm.TimeStepping(model.nsds, 0.01, nm.MoreauJeanOSI(0.5), osns="lcp", method="lemke")
    model.update_contacts()                                  # the contacts' friction laws, linked now
    with pytest.raises(ModelingError, match=r"TimeStepping\.osns: .*NewtonImpactFrictionNSL 'contact'.*cannot hold "
                                            r".*use osns='fc3d'"):
        sim.step()
    run = _sliding().run(T=0.5, h=0.005)                     # fc3d: friction stops the cube near v0² / (2 μ g)
    assert run.q[-1, 0, 0] == pytest.approx(4 / 9.81, abs=4 * 0.005) and abs(run.v[-1, 0, 0]) < 1e-9


@pytest.mark.parametrize("T, h", [(0.105, 0.01), (0.005, 0.01), (1.0, 0.003)])
def test_a_run_that_is_not_a_whole_number_of_steps_is_refused(T, h):
    """The rule (TimeStepping and Scene.run alike): the last step ends at T. T = 0.105 with h = 0.01 stopped at
    0.10, and h > T ran no step, without a word."""
    from nsopt import modeling as nm
    with pytest.raises(ModelingError, match=r"^Scene\.T: .* not a whole number .*give T = "):
        _sliding().run(T=T, h=h)
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.insert_dynamical_system(nm.LagrangianLinearTIDS([1.0], [0.0], [[1.0]]))
    with pytest.raises(ModelingError, match=r"^TimeStepping\.T: .* not a whole number"):
        nm.TimeStepping(nsds, h)
    assert len(_sliding().run(T=0.1, h=0.01)) == 10


def test_continue_from_a_record_of_another_scene_is_refused(tmp_path):
    _sliding().run(T=0.02, h=0.01, record=tmp_path / "a.h5")
    with pytest.raises(ModelingError, match=r"Scene\.continue_from: the record a\.h5 is of another scene: its "
                                            r"laws\[0\]\.mu is 0\.5, this scene's 0\.3"):
        _sliding(mu=0.3).run(T=0.04, h=0.01, continue_from=tmp_path / "a.h5")
    more = _sliding()
    more.add_object("ball", [mc.Contactor(mc.Sphere(0.2))], translation=[3, 0, 0.2], mass=1.0)
    with pytest.raises(ModelingError, match="is of another scene: its objects"):
        more.run(T=0.04, h=0.01, continue_from=tmp_path / "a.h5")
    bigger = mc.Scene()
    bigger.add_primitive_shape("Cube", "Box", (1.0, 1.0, 2.0))
    bigger.add_primitive_shape("Ground", "Box", (10.0, 10.0, 1.0))
    bigger.add_Newton_impact_friction_nsl("contact", mu=0.5)
    bigger.add_object("cube", ["Cube"], translation=[0, 0, 1.0], mass=1.0, inertia=[1, 1, 1])
    with pytest.raises(ModelingError, match="is of another scene: its objects\\[0\\]"):
        _ground(bigger).run(T=0.04, h=0.01, continue_from=tmp_path / "a.h5")
    # the same scene, from elsewhere (its bodies' poses are the record's to give): continues
    rec = mc.load_record(tmp_path / "a.h5")
    assert len(rec.scene(-1).run(T=0.04, h=0.01, continue_from=rec)) == 2


# ---------------------------------------------------------------------------- tunnelling
def _falling(v0=0.0, z=1.0):
    sc = mc.Scene()
    sc.add_primitive_shape("Cube", "Box", (1.0, 1.0, 1.0))
    sc.add_primitive_shape("Ground", "Box", (10.0, 10.0, 1.0))
    sc.add_Newton_impact_friction_nsl("contact", mu=0.5)
    sc.add_object("cube", ["Cube"], translation=[0, 0, z], velocity=[0, 0, v0, 0, 0, 0], mass=1.0)
    return _ground(sc)


@pytest.mark.parametrize("kw", [dict(v0=-1e4, T=0.01, h=0.01), dict(T=100.0, h=10.0)])
def test_a_body_passing_through_the_ground_in_one_step_is_a_warning(kw):
    """v0 = -1e4 m/s, or h = 10 s: the cube went to z = -99 m (or -49 km) with 0 contacts and no word."""
    T, h = kw.pop("T"), kw.pop("h")
    with pytest.warns(mc.TunnellingWarning, match=r"step 1 \(t = 0 to .*\): body 'cube' passed through 'ground'"):
        run = _falling(**kw).run(T=T, h=h)
    assert run.tunnelling[0]["step"] == 1 and run.tunnelling[0]["other"] == "ground"


def test_tunnelling_can_stop_the_run(tmp_path):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", mc.TunnellingWarning)
        with pytest.raises(mc.TunnellingWarning):
            _falling(v0=-1e4).run(T=0.02, h=0.01, record=tmp_path / "r.h5")
    assert len(mc.load_record(tmp_path / "r.h5")) == 1               # the record keeps the step


def _ball_over_a_thin_plate():
    """A 1 cm ball 0.5 m above a 5 mm plate, falling at 5 m/s."""
    sc = mc.Scene()
    sc.add_primitive_shape("Ball", "Sphere", 0.01)
    sc.add_primitive_shape("Plate", "Box", (2.0, 2.0, 0.005))
    sc.add_Newton_impact_friction_nsl("c", mu=0.0)
    sc.add_object("ball", ["Ball"], translation=[0, 0, 0.5], velocity=[0, 0, -5, 0, 0, 0], mass=0.01)
    sc.add_object("plate", ["Plate"], translation=[0, 0, 0])
    return sc


def test_sinking_through_a_thin_floor_at_an_impact_is_caught():
    """A 1 cm ball landing at 5.9 m/s on a 5 mm plate: the θ-scheme's sinking h|v|/2 = 2.9 cm carries it through
    during the impact step, with the contact active; it ends within the margin, below the plate."""
    sc = _ball_over_a_thin_plate()
    with pytest.warns(mc.TunnellingWarning, match="body 'ball' passed through 'plate'"):
        sc.run(T=0.2, h=0.01, activation="siconos", projection=False)


def test_the_look_ahead_rule_stops_the_ball_on_the_thin_floor(recwarn):
    """The same landing under the default (look-ahead) rule: the contact is in the step that would carry the
    ball through, the ball ends on the plate's top face, and no TunnellingWarning is given."""
    sc = _ball_over_a_thin_plate()
    run = sc.run(T=0.2, h=0.01)
    assert not [w for w in recwarn if issubclass(w.category, mc.TunnellingWarning)]
    assert run.q[-1, 0, 2] == pytest.approx(0.0025 + 0.01, abs=1e-6)


def test_no_tunnelling_warning_for_fast_bodies_that_do_not_pass_through(recwarn):
    """The swept test's neighbours: a small ball fast along a table and off its edge (swept every step, touching
    the table it leaves), a cube falling fast but less than its size per step, a rolling ball on a half-space."""
    sc = mc.Scene()
    sc.add_primitive_shape("Ball", "Sphere", 0.01)
    sc.add_primitive_shape("Table", "Box", (1.0, 1.0, 0.2))
    sc.add_Newton_impact_friction_nsl("c", mu=0.0)
    sc.add_object("ball", ["Ball"], translation=[0.3, 0, 0.01], velocity=[2, 0, 0, 0, 0, 0], mass=0.01)
    sc.add_object("table", ["Table"], translation=[0, 0, -0.1])
    assert sc.run(T=0.6, h=0.01).tunnelling == []
    assert _falling(v0=-30.0, z=1.0).run(T=0.1, h=0.01).tunnelling == []
    sc = mc.Scene()
    sc.add_shape("Floor", mc.HalfSpace())
    sc.add_primitive_shape("Ball", "Sphere", 0.01)
    sc.add_Newton_impact_friction_nsl("c", mu=0.5)
    sc.add_object("ball", ["Ball"], translation=[0, 0, 0.01], velocity=[3, 0, 0, 0, 300, 0], mass=0.01)
    sc.add_object("floor", ["Floor"], translation=[0, 0, 0])
    assert sc.run(T=0.1, h=0.01).tunnelling == []
    assert not [w for w in recwarn if issubclass(w.category, mc.TunnellingWarning)]


# ---------------------------------------------------------------------------- damaged records
h5py = pytest.importorskip("h5py")


@pytest.fixture
def record(tmp_path):
    path = tmp_path / "run.h5"
    _sliding().run(T=0.05, h=0.01, record=path)
    return path


def _damage(path, how):
    with h5py.File(path, "r+") as f:
        how(f)


def _resize(names, size):
    def how(f):
        for n in names:
            f[n].resize(size, axis=0)
    return how


DAMAGES = {
    "no scene attribute": (lambda f: f.attrs.__delitem__("scene"), "has no 'scene' attribute"),
    "bad JSON": (lambda f: f.attrs.__setitem__("scene", "{not json"), "not JSON"),
    "version abc": (lambda f: f.attrs.__setitem__("version", "abc"), "version attribute 'abc' is not an integer"),
    "wrong schema": (lambda f: f.attrs.__setitem__("scene", '{"objects": 3}'), "not a valid scene"),
    "object of no shape": (lambda f: f.attrs.__setitem__("scene", f.attrs["scene"].replace('"Box"', '"Torus"')),
                           "not a valid scene"),
    "bodies of another scene": (lambda f: f.attrs.__setitem__("bodies", '["ball"]'), "does not name the scene's"),
    "missing dataset": (lambda f: f["steps"].__delitem__("v"), "missing dataset steps/v"),
    "q of another shape": (lambda f: (f["steps"].__delitem__("q"), f["steps"].create_dataset("q", data=np.zeros((5, 2, 7)))),
                           r"steps/q has shape \(5, 2, 7\)"),
    "2e9 steps": (_resize(["steps/t", "steps/q", "steps/v", "steps/status", "steps/nit", "steps/error",
                           "steps/contacts"], 2 * 10 ** 9), "declares 2000000000 rows but the file holds"),
    "3e7 steps": (_resize(["steps/t", "steps/q", "steps/v", "steps/status", "steps/nit", "steps/error",
                           "steps/contacts"], 3 * 10 ** 7), "declares 30000000 rows"),
    "3e7 contacts": (_resize(["contacts/" + k for k in ("body1", "body2", "static2", "id", "distance", "pc1", "pc2",
                                                        "normal", "force", "active")], 3 * 10 ** 7),
                     "contacts/.* declares 30000000 rows"),
    "offsets zero": (lambda f: f["steps/contacts"].__setitem__(slice(None), 0), "contact offsets .* are corrupt"),
    "offsets decreasing": (lambda f: f["steps/contacts"].__setitem__(2, 0), "contact offsets .* are corrupt"),
    "offsets past the rows": (lambda f: f["steps/contacts"].__setitem__(-1, 10 ** 6), "contact offsets .* are corrupt"),
    "offsets negative": (lambda f: f["steps/contacts"].__setitem__(1, -4), "contact offsets .* are corrupt"),
}


@pytest.mark.parametrize("name", sorted(DAMAGES))
def test_a_damaged_record_is_a_format_error_naming_the_file(record, name):
    """No KeyError, JSONDecodeError, ValueError, MemoryError (14.9 GiB asked for 2e9 steps) or 60 s read (3e7):
    the sizes are checked against what the file holds before anything is read; corrupt contact offsets never
    read as 'no contacts'."""
    import tracemalloc

    from nsopt.exceptions import FormatError
    how, match = DAMAGES[name]
    _damage(record, how)
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match=match) as e:
            mc.load_record(record)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(record) in str(e.value) and peak < 50e6


def test_a_record_cut_short_inside_a_step_still_reads(record):
    with h5py.File(record, "r+") as f:                 # a step interrupted between resize and write
        for n in ("t", "q"):
            f["steps"][n].resize(6, axis=0)
    assert len(mc.load_record(record)) == 5


# ---------------------------------------------------------------------------- the viewer and the record's pictures
def _viewer_input(steps=4):
    bodies = [[mc.Contactor(mc.Box([1, 1, 1]))]]
    poses = np.zeros((steps, 1, 7))
    poses[:, 0, 2] = np.linspace(2, 0.5, steps)
    poses[:, 0, 3] = 1.0
    return bodies, poses, np.linspace(0, 1, steps)


@pytest.mark.parametrize("change, field", [
    (dict(max_frames=0), "viewer.max_frames"), (dict(max_frames=-5), "viewer.max_frames"),
    (dict(max_frames=2.5), "viewer.max_frames"), (dict(max_frames=True), "viewer.max_frames"),
    (dict(statics=[([mc.Contactor(mc.Box([5, 5, 1]))], [np.inf, 0, 0, 1, 0, 0, 0])]), "viewer.statics[0].pose"),
    (dict(statics=[([mc.Contactor(mc.Box([5, 5, 1]))], [0, 0, 0, 0, 0, 0, 0])]), "viewer.statics[0].pose"),
    (dict(statics=[([mc.Contactor(mc.Box([5, 5, 1]))], [0, 0, 0])]), "viewer.statics[0].pose"),
    (dict(nan=True), "viewer.poses"), (dict(zero_quaternion=True), "viewer.poses"),
    (dict(bodies=[]), "viewer.bodies"), (dict(title=3), "viewer.title"),
    (dict(times=[0, 1, np.nan, 2]), "viewer.times"), (dict(far=True), "viewer.poses"),
])
def test_the_viewer_never_writes_a_page_that_shows_nothing(tmp_path, change, field):
    from nsopt.mechanics import viewer
    bodies, poses, times = _viewer_input()
    statics = change.pop("statics", ())
    if change.pop("nan", False):
        poses[2, 0, 0] = np.nan
    if change.pop("zero_quaternion", False):
        poses[1, 0, 3:] = 0.0
    if change.pop("far", False):
        poses[1, 0, 0] = 1e300
    bodies = change.pop("bodies", bodies)
    times = change.pop("times", times)
    with pytest.raises(ModelingError) as e:
        viewer.write_html(tmp_path / "p.html", bodies, poses, times, statics, **change)
    assert str(e.value).startswith(field + ":"), str(e.value)
    assert not (tmp_path / "p.html").exists()


def test_the_title_is_escaped_text_never_a_template_slot(tmp_path):
    from nsopt.mechanics import viewer
    bodies, poses, times = _viewer_input()
    for title in ("%THREE%", "%DATA%", "<script>alert(1)</script> & \"x\""):
        page = viewer.html_page(bodies, poses, times, title=title)
        assert len(page) < len(viewer.html_page(bodies, poses, times, title="t")) + 200     # no 670 kB pasted in
        head = page[:page.index("</title>")]
        assert "%THREE%" not in page.replace(title, "") and "<script>alert" not in page
        assert head.endswith(__import__("html").escape(title))
    page = viewer.html_page(bodies, poses, times, title="%TITLE%")
    assert page.count("three-src") == 2                         # the template's own slots filled once


def test_record_pictures_check_their_arguments(record, tmp_path):
    from nsopt.exceptions import OutputError
    rec = mc.load_record(record)
    for step in (None, 99, -99, 1.5, "1"):
        with pytest.raises(ModelingError, match=r"^Record\.step: "):
            rec.still(tmp_path / "s.png", step=step)
    for step in (5, None):
        with pytest.raises(ModelingError, match=r"^Record\.step: "):
            rec.contacts(step)
    with pytest.raises(OutputError, match="unsupported image format '.xyz'"):
        rec.still(tmp_path / "x.xyz")
    for mf in (0, -5, 2.5):
        with pytest.raises(ModelingError, match=r"^viewer\.max_frames: "):
            rec.write_html(tmp_path / "p.html", max_frames=mf)
    assert not any(tmp_path.glob("p.html")) and not any(tmp_path.glob("*.xyz"))
    assert rec.contacts(-1)["body1"].tolist() == [0, 0, 0, 0]


def test_a_record_without_bodies_is_refused(tmp_path):
    """Nothing to record, nothing to show: the Recorder refuses it (h5py refused its chunks: a raw ValueError)."""
    sc = mc.Scene()
    sc.add_primitive_shape("Ground", "Box", (10.0, 10.0, 1.0))
    sc.add_object("ground", ["Ground"], translation=[0, 0, -0.5])
    with pytest.raises(ModelingError, match=r"^Recorder\.scene: has no dynamic body"):
        mc.Recorder(tmp_path / "r.h5", sc, h=0.01)
    assert not (tmp_path / "r.h5").exists()


@pytest.mark.parametrize("call, field", [
    (lambda: mc.CollisionManager(margin="a"), "CollisionManager.margin"),
    (lambda: mc.CollisionManager(persistence=0), "CollisionManager.persistence"),
    (lambda: mc.CollisionManager(max_points=2.5), "CollisionManager.max_points"),
    (lambda: mc.CollisionManager().add_body(mc.Contactor(mc.Sphere(1.0)), pose=[0, 0, 0]), "CollisionManager.body 0 pose"),
    (lambda: mc.CollisionManager().add_static(mc.Contactor(mc.HalfSpace()), pose=[np.inf, 0, 0, 1, 0, 0, 0]),
     "CollisionManager.static 0 pose"),
    (lambda: mc.CollisionManager().add_static(mc.Contactor(mc.HalfSpace()), pose=[0] * 7),
     "CollisionManager.static 0 pose"),
])
def test_the_collision_manager_refuses_bad_values_by_name(call, field):
    with pytest.raises(ModelingError) as e:
        call()
    assert str(e.value).startswith(field + ":"), str(e.value)
