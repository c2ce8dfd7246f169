"""The scene object: the contact flow into the model (link, keep, remove), groups and joints, inertia from the
shapes, and the HDF5 record on synthetic data (round trip, a run cut short, continuing from a step)."""

import doctest

import numpy as np
import pytest

pytest.importorskip("coal")
h5py = pytest.importorskip("h5py")

from nsopt import mechanics as mc  # noqa: E402
from nsopt import modeling as nm  # noqa: E402
from nsopt.exceptions import FormatError, ModelingError, OutputError  # noqa: E402
from nsopt.mechanics import scene as scene_module  # noqa: E402
from nsopt.modeling import _rotation as rot  # noqa: E402


def test_docstring_example():
    assert doctest.testmod(scene_module).failed == 0


def cube_on_ground(z=0.52, groups=(0, 0), laws=((0, 0),)):
    sc = mc.Scene()
    sc.add_primitive_shape("Cube", "Box", (1.0, 1.0, 1.0))
    sc.add_primitive_shape("Ground", "Box", (10.0, 10.0, 1.0))
    for g in laws:
        sc.add_Newton_impact_friction_nsl(f"law{g}", mu=0.5, collision_group1=g[0], collision_group2=g[1])
    sc.add_object("cube", [mc.Contactor(sc.shape("Cube"), group=groups[0])], translation=[0, 0, z], mass=2.0)
    sc.add_object("ground", [mc.Contactor(sc.shape("Ground"), group=groups[1])], translation=[0, 0, -0.5])
    return sc


def test_contact_flow_links_keeps_and_removes_interactions():
    model = cube_on_ground().build()
    cube = model.bodies[0]
    assert isinstance(cube, nm.NewtonEulerDS) and cube.scalar_mass == 2.0
    np.testing.assert_allclose(cube.wrench(0.0, cube.q, cube.v)[:3], [0, 0, -2 * 9.81])
    contacts = dict(model.update_contacts())
    assert len(contacts) == 4 and len(model.nsds.interactions) == 4
    for inter in contacts.values():
        assert isinstance(inter.relation, nm.NewtonEuler3DR) and inter.nslaw.mu == 0.5
        assert inter.relation.distance(cube.q) == pytest.approx(0.02, abs=1e-9)
        np.testing.assert_allclose(inter.relation.jachqT(cube.q)[0, :3], [0, 0, 1], atol=1e-12)
    # a small move: the same interactions, their points moved with the detection
    cube.q = rot.normalize_q(np.r_[0.004, 0.0, 0.505, rot.quat_exp([0, 0, 0.002])])
    again = model.update_contacts()
    assert set(again) == set(contacts) and all(again[k] is contacts[k] for k in contacts)
    for inter in again.values():
        assert inter.relation.distance(cube.q) == pytest.approx(0.005, abs=1e-9)
    version = model.nsds._version
    # lifted beyond the margin: all removed, through nsds.remove_interaction
    cube.q = np.r_[0.0, 0.0, 0.6, 1.0, 0.0, 0.0, 0.0]
    assert model.update_contacts() == {} and model.nsds.interactions == []
    assert [w for w, _ in model.nsds.changes_since(version)] == ["remove"] * 4
    # back down: new points, new interactions
    cube.q = np.r_[0.0, 0.0, 0.51, 1.0, 0.0, 0.0, 0.0]
    back = model.update_contacts()
    assert len(back) == 4 and not set(back) & set(contacts)


def test_pairs_of_groups_without_a_law_do_not_collide():
    assert len(cube_on_ground(groups=(1, 0), laws=((0, 0),)).build().update_contacts()) == 0
    model = cube_on_ground(groups=(1, 0), laws=((0, 0), (0, 1))).build()
    assert len(model.update_contacts()) == 4


def test_joints_and_excluded_pairs():
    sc = mc.Scene()
    sc.add_primitive_shape("Link", "Capsule", (0.1, 0.8))
    sc.add_Newton_impact_friction_nsl("contact", mu=0.3)
    for j in range(3):            # capsules along y touching tip to tip (pitch 1.0 = length + 2 radius)
        sc.add_object(f"link{j}", ["Link"], translation=[0, j + 0.5, 2.0], mass=1.0)
        sc.add_joint(f"pivot{j}", f"link{j}", None if j == 0 else f"link{j - 1}", points=[[0, j, 2.0]],
                     axes=[[1, 0, 0]], joint_class="PivotJointR")
    model = sc.build()
    assert len(model.joints) == 3 and all(i.relation.nb_constraints == 5 for i in model.joints)
    Q = model.poses()
    for inter in model.joints:
        rel = inter.relation
        Qi = np.concatenate([b.q for b in inter.systems])
        np.testing.assert_allclose(rel.h(Qi), 0.0, atol=1e-12)
    assert len(model.update_contacts()) == 0           # the touching tips of linked capsules are excluded
    sc.joints[1]["allow_self_collide"] = True
    model = sc.build()
    c = model.update_contacts()
    assert len(c) == 1 and model.last.distance[0] == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ModelingError, match="not a dynamic object"):
        sc.add_joint("bad", "nowhere")
        sc.build()
    assert Q.shape == (3, 7)


def test_inertia_from_the_shapes():
    I = scene_module.mesh_inertia([mc.Contactor(mc.Box([1.0, 2.0, 3.0]))], 6.0)
    np.testing.assert_allclose(I, np.diag([6 * (4 + 9) / 12, 6 * (1 + 9) / 12, 6 * (1 + 4) / 12]), atol=1e-9)
    # two boxes side by side along x act as one box of twice the length
    pair = [mc.Contactor(mc.Box([1, 1, 1]), translation=[-0.5, 0, 0]), mc.Contactor(mc.Box([1, 1, 1]), translation=[0.5, 0, 0])]
    np.testing.assert_allclose(scene_module.mesh_inertia(pair, 2.0), np.diag([2 * 2 / 12, 2 * 5 / 12, 2 * 5 / 12]), atol=1e-9)
    # a sphere: 2/5 m r^2 within the faceting
    np.testing.assert_allclose(np.diag(scene_module.mesh_inertia([mc.Contactor(mc.Sphere(0.5))], 1.0)), 0.1, rtol=0.05)


def _synthetic_run(path, steps=6):
    sc = cube_on_ground()
    sc.add_object("ball", [mc.Contactor(mc.Sphere(0.3), translation=[0.1, 0, 0])], translation=[2, 0, 0.31],
                  velocity=[1, 0, 0, 0, 0, 0], mass=1.0, inertia=[0.036] * 3)
    model = sc.build()
    rng = np.random.default_rng(0)
    rows = []
    with mc.Recorder(path, sc, h=1e-3, theta=0.5, osns="fc3d", method="nsgs", tol=1e-8) as rec:
        for s in range(steps):
            Q = model.poses() + np.r_[0, 0, -0.001 * s, 0, 0, 0, 0]
            V = rng.normal(size=(2, 6))
            c = model.collision.detect(Q)
            F = rng.normal(size=(len(c), 3))
            rec.append(1e-3 * (s + 1), Q, V, status="solved", nit=s + 3, error=1e-9 * s, contacts=c, forces=F)
            rows.append((Q, V, c, F))
    return sc, rows


def test_record_round_trip(tmp_path):
    sc, rows = _synthetic_run(tmp_path / "run.h5")
    r = mc.load_record(tmp_path / "run.h5")
    assert len(r) == 6 and r.names == ["cube", "ball"]
    assert r.settings["osns"] == "fc3d" and r.settings["h"] == 1e-3
    for s, (Q, V, c, F) in enumerate(rows):
        np.testing.assert_array_equal(r.q[s], Q)
        np.testing.assert_array_equal(r.v[s], V)
        assert r.status[s] == "solved" and r.nit[s] == s + 3 and r.t[s] == pytest.approx(1e-3 * (s + 1))
        got = r.contacts(s)
        assert len(got["id"]) == len(c) > 0
        np.testing.assert_array_equal(got["id"], c.id)
        np.testing.assert_array_equal(got["pc1"], c.pc1)
        np.testing.assert_array_equal(got["force"], F)
        np.testing.assert_array_equal(got["body2"], c.body2)
    # the scene comes back whole, and continues from the last step
    again = r.scene(step=None)
    assert again.describe() == sc.describe()
    cont = r.scene(step=-1).build()
    np.testing.assert_allclose(cont.poses()[0], rot.normalize_q(rows[-1][0][0]), atol=1e-15)
    np.testing.assert_allclose(cont.twists(), rows[-1][1])
    with pytest.raises(OutputError):
        mc.Recorder(tmp_path / "run.h5", sc)


def test_record_cut_short_and_bad_files(tmp_path):
    _synthetic_run(tmp_path / "cut.h5", steps=3)
    with h5py.File(tmp_path / "cut.h5", "r+") as f:           # a step interrupted after its time was written
        f["steps/t"].resize(4, axis=0)
        f["steps/q"].resize(4, axis=0)
    r = mc.load_record(tmp_path / "cut.h5")
    assert len(r) == 3 and r.q.shape[0] == 3
    (tmp_path / "junk.h5").write_bytes(b"not hdf5")
    with pytest.raises(FormatError, match="cannot be opened"):
        mc.load_record(tmp_path / "junk.h5")
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f.attrs["format"] = "something"
    with pytest.raises(FormatError, match="not an nsopt-mechanics record"):
        mc.load_record(tmp_path / "other.h5")


def test_scene_bad_input():
    sc = mc.Scene()
    with pytest.raises(ModelingError, match="no shape named"):
        sc.add_object("a", ["Nope"], [0, 0, 0], mass=1.0)
    with pytest.raises(ModelingError, match="unknown primitive"):
        sc.add_primitive_shape("x", "Torus", (1.0, 0.2))
    with pytest.raises(ModelingError, match="unknown joint"):
        sc.add_joint("j", "a", joint_class="HingeJoint")
    sc.add_primitive_shape("Ball", "Sphere", 0.5)
    sc.add_object("a", ["Ball"], [0, 0, 0], mass=1.0)
    with pytest.raises(ModelingError, match="exists"):
        sc.add_object("a", ["Ball"], [0, 0, 0], mass=1.0)
