"""The scene object: the contact flow into the model (link, keep, remove), groups and joints, inertia from the
shapes, and the HDF5 record on synthetic data (round trip, a run cut short, continuing from a step)."""

import doctest

import numpy as np
import pytest

from conftest import need_extra

need_extra("mechanics")
import h5py  # noqa: E402

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


def test_a_body_frame_is_its_centre_of_mass():
    # a cone (radius r, height h, axis y, its middle at the shape's origin): its centre of mass is h/4 below the
    # middle, its inertia about it diag(m(3r²/20 + 3h²/80), 3mr²/10, same) (closed form of the solid cone)
    r, h, m = 0.3, 0.8, 2.0
    sc = mc.Scene()
    sc.add_primitive_shape("cone", "Cone", (r, h))
    turn = rot.quat_exp([np.pi / 2, 0, 0])                      # body y (the apex) up
    sc.add_object("c", ["cone"], translation=[1.0, 2.0, 3.0], orientation=turn, mass=m)
    o = sc.objects[0]
    np.testing.assert_allclose(o["com_offset"], [0, -h / 4, 0], atol=1e-3 * h)         # the mesh's faceting
    np.testing.assert_allclose(o["pose"][:3], [1.0, 2.0, 3.0 - h / 4], atol=1e-3 * h)   # the frame moved there ...
    np.testing.assert_allclose(o["contactors"][0].translation, [0, h / 4, 0], atol=1e-3 * h)   # ... the shape stays
    perp = m * (3 * r * r / 20 + 3 * h * h / 80)
    np.testing.assert_allclose(np.diag(o["inertia"]), [perp, 3 * m * r * r / 10, perp], rtol=0.03)
    assert np.abs(o["inertia"] - np.diag(np.diag(o["inertia"]))).max() < 1e-9
    # a symmetric body keeps its frame; a given inertia keeps the frame given
    sc.add_object("b", [mc.Contactor(mc.Box([1, 1, 1]))], translation=[0, 0, 5], mass=1.0)
    sc.add_object("c2", ["cone"], translation=[0, 0, 7], mass=m, inertia=[1, 1, 1])
    for k in (1, 2):
        assert np.all(sc.objects[k]["com_offset"] == 0)
        np.testing.assert_allclose(sc.objects[k]["pose"][:3], [0, 0, 5 + 2 * (k - 1)])
    # the description keeps it; a joint point given in the body's frame moves with it
    d = sc.describe()
    again = mc.Scene.from_description(d)
    np.testing.assert_allclose(again.objects[0]["com_offset"], o["com_offset"])
    assert again.describe() == d
    sc.add_joint("knee", "c", points=[[0, h / 2, 0]], joint_class="KneeJointR", absolute=False)   # at the apex
    model = sc.build()
    knee = model.nsds.interactions[0].relation
    np.testing.assert_allclose(knee.P, [0, h / 2 + h / 4, 0], atol=1e-3 * h)   # the apex, from the centre of mass


def test_a_cone_comes_to_rest_on_its_base_and_on_its_side():
    # dropped from 1 cm: at rest its centre of mass is h/4 above the floor standing on its base, and
    # (3h/4) sin(alpha) (alpha = atan(r/h), the half-angle) lying on its side along a generator; a single contact
    # point per cone (coal's patch) let it rock about that point and sink by ~0.13 in 1.5 s
    r, h, gap = 0.3, 0.8, 0.01
    alpha = np.arctan2(r, h)
    for turn, rest in ((rot.quat_exp([np.pi / 2, 0, 0]), h / 4),
                       (rot.quat_exp([-alpha, 0, 0]), 0.75 * h * np.sin(alpha))):
        sc = mc.Scene(margin=0.02)
        sc.add_primitive_shape("cone", "Cone", (r, h))
        sc.add_primitive_shape("floor", "HalfSpace", (0, 0, 1, 0))
        sc.add_Newton_impact_friction_nsl("contact", mu=0.5, e=0.0)
        sc.add_object("floor", ["floor"], translation=[0, 0, 0])
        R = rot.rotation_matrix(turn)
        corners = np.array([[0, h / 2, 0], [0, -h / 2, -r], [0, -h / 2, r], [r, -h / 2, 0], [-r, -h / 2, 0]]) @ R.T
        sc.add_object("cone", ["cone"], translation=[0, 0, gap - corners[:, 2].min()], orientation=turn, mass=1.0)
        run = sc.run(T=1.0, h=5e-3)
        assert run.failed_steps == [] and run.kinetic_energy[-1] < 1e-8
        k = len(run) // 2
        assert run.penetration[k:].max() < 2e-3 and np.ptp(run.penetration[k:]) < 1e-6      # not sinking
        assert run.top[-1] == pytest.approx(rest, abs=2e-3)


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


# ---------------------------------------------------------------------------- runs
def small_pile(n=6, seed=3):
    """n unit cubes falling into a box (benchmarks/rigid_scenes.pile's construction, smaller)."""
    rng = np.random.default_rng(seed)
    sc = mc.Scene(margin=0.05)
    L = 2 * 1.25 + 0.5
    sc.add_primitive_shape("Cube", "Box", (1.0, 1.0, 1.0))
    sc.add_primitive_shape("Floor", "Box", (L + 2, L + 2, 1.0))
    sc.add_primitive_shape("WallX", "Box", (1.0, L + 2, 4.0))
    sc.add_primitive_shape("WallY", "Box", (L + 2, 1.0, 4.0))
    sc.add_Newton_impact_friction_nsl("contact", mu=0.5)
    for j in range(n):
        layer, r = divmod(j, 4)
        x, y = (r % 2 - 0.5) * 1.25, (r // 2 - 0.5) * 1.25
        quat = rot.quat_exp(0.15 * rng.random() * rng.normal(size=3) / np.sqrt(3))
        sc.add_object(f"cube{j}", ["Cube"], [x, y, 1.0 + 1.25 * layer], quat, mass=1.0, inertia=[1 / 6] * 3)
    sc.add_object("floor", ["Floor"], [0, 0, -0.5])
    for name, shape, x, y in (("wx-", "WallX", -(L / 2 + 0.5), 0), ("wx+", "WallX", L / 2 + 0.5, 0),
                              ("wy-", "WallY", 0, -(L / 2 + 0.5)), ("wy+", "WallY", 0, L / 2 + 0.5)):
        sc.add_object(name, [shape], [x, y, 2.0])
    return sc


def test_run_settles_a_pile_every_step_solved():
    """Six cubes fall into a box and come to rest: every one-step problem solved to the tolerance (nsopt's
    measure, computed by nsopt), the bodies at rest on the floor or on each other, no penetration beyond the
    scheme's (a few h|v|/2 at impact, h|v|/2 ~ 1e-2 here: Moreau–Jean does not push bodies back out), the
    contact forces carrying the weight."""
    sc = small_pile()
    run = sc.run(1.2, 5e-3, tol=1e-8)
    assert len(run) == 240 and not run.failed_steps
    solved = [e for e, s in zip(run.error, run.status) if s is not None]
    assert len(solved) > 100 and max(solved) <= 1e-8
    assert run.kinetic_energy[-1] < 1e-8
    z = run.q[-1][:, 2]
    assert np.all((np.abs(z - 0.5) < 0.02) | (np.abs(z - 1.5) < 0.04))
    assert run.penetration.max() < 0.03
    # the vertical contact forces on the floor carry the whole weight at rest (contact frame: normal first)
    c = run.model.last
    floor = (c.body2 < 0) & (c.normal[:, 2] > 0.99)
    assert run.forces[floor, 0].sum() == pytest.approx(6 * 9.81, rel=1e-6)
    assert run.times["total"].shape == (240,) and np.all(run.times["solve"] <= run.times["step"] + 1e-12)


def test_record_reload_continue_equals_the_uninterrupted_run(tmp_path):
    """A run recorded to HDF5 and continued from its record (poses, twists, the collision manager's point ids,
    the warm starts) gives the uninterrupted run's numbers bit for bit, and the same contact ids."""
    sc = small_pile(5, seed=1)
    whole = sc.run(0.5, 5e-3, tol=1e-10, record=tmp_path / "whole.h5")
    first = sc.run(0.25, 5e-3, tol=1e-10, record=tmp_path / "first.h5")
    rec = mc.load_record(tmp_path / "first.h5")
    assert rec.resume is not None and len(rec) == len(first) == 50
    rest = sc.run(0.5, 5e-3, tol=1e-10, continue_from=tmp_path / "first.h5", record=tmp_path / "rest.h5")
    assert len(rest) == 50
    assert sum(s is not None for s in whole.status[50:]) > 20          # contacts over the continued part
    np.testing.assert_array_equal(rest.q[1:], whole.q[51:])
    np.testing.assert_array_equal(rest.v[1:], whole.v[51:])
    a, b = mc.load_record(tmp_path / "whole.h5"), mc.load_record(tmp_path / "rest.h5")
    np.testing.assert_array_equal(b.contacts(-1)["id"], a.contacts(-1)["id"])
    np.testing.assert_array_equal(b.contacts(-1)["force"], a.contacts(-1)["force"])
    np.testing.assert_array_equal(b.q, a.q[50:])
    # a record without its resume state (cut short) still continues, from the poses and twists
    with h5py.File(tmp_path / "first.h5", "r+") as f:
        del f["resume"]
    assert mc.load_record(tmp_path / "first.h5").resume is None
    again = sc.run(0.3, 5e-3, tol=1e-10, continue_from=tmp_path / "first.h5")
    np.testing.assert_allclose(again.q[-1], whole.q[60], atol=1e-3)


def test_run_writes_each_step_problem_to_fclib(tmp_path):
    """write_problems: one FCLIB file per step with contact (a corpus for nsopt compare); each holds the step's
    friction-contact problem, which the step's recorded forces solve."""
    from nsopt import io
    sc = small_pile(4, seed=2)
    run = sc.run(0.5, 5e-3, tol=1e-10, write_problems=tmp_path / "corpus", record=tmp_path / "run.h5")
    steps = [k + 1 for k, s in enumerate(run.status) if s is not None]
    files = sorted((tmp_path / "corpus").glob("step_*.hdf5"))
    assert [int(f.stem[5:]) for f in files] == steps
    last = io.load(files[-1])
    rec = mc.load_record(tmp_path / "run.h5")
    got = rec.contacts(steps[-1] - 1)
    assert last.kind == "fc3d" and last.nc == int(got["active"].sum()) == run.solution.problem.nc
    np.testing.assert_array_equal(last.q, run.solution.problem.q)
    dense = (lambda W: W.toarray() if hasattr(W, "toarray") else np.asarray(W))
    np.testing.assert_allclose(dense(last.W), dense(run.solution.problem.W), rtol=0, atol=1e-15)
    assert last.error(run.solution.r) <= 1e-10
    # the recorded forces are the solution's impulses / h (the problem's rows in the stepper's order)
    np.testing.assert_allclose(np.sort(got["force"][got["active"], 0]), np.sort(run.solution.r[0::3] / 5e-3), atol=1e-9)


def test_viewer_page_and_still_from_a_record(tmp_path):
    sc = small_pile(3, seed=4)
    sc.run(0.3, 5e-3, record=tmp_path / "run.h5")
    rec = mc.load_record(tmp_path / "run.h5")
    page = rec.write_html(tmp_path / "run.html")
    text = page.read_text()
    assert "<canvas" in text or "three" in text.lower()
    assert len(text) > 100_000                                  # three.js embedded: it works offline
    img = rec.still(tmp_path / "run.png")
    assert img.stat().st_size > 10_000


def test_run_bad_input(tmp_path):
    sc = small_pile(2)
    with pytest.raises(ModelingError, match="T"):
        sc.run(0.0)
    sc.run(0.05, 5e-3, record=tmp_path / "a.h5")
    with pytest.raises(OutputError):
        sc.run(0.05, 5e-3, record=tmp_path / "a.h5")
    with pytest.raises(ModelingError, match="after the start time"):
        sc.run(0.05, 5e-3, continue_from=tmp_path / "a.h5")
    inter = mc.Scene()
    inter.add_primitive_shape("Ball", "Sphere", 0.5)
    inter.add_Newton_impact_friction_nsl("c", mu=0.3)
    inter.add_object("a", ["Ball"], [0, 0, 0], mass=1.0)
    inter.add_object("b", ["Ball"], [0.5, 0, 0], mass=1.0)
    with pytest.raises(mc.InterpenetrationError, match="body 0 and body 1"):
        inter.run(0.1)


def test_a_scene_with_joints_runs_with_the_default_method():
    """Joints make the one-step problem a GenericMechanical one; the default method follows the kind
    (the run order of nsopt.policy.POLICY) instead of fc3d's nsn-ac, which gmp does not have."""
    from nsopt.policy import POLICY

    sc = mc.Scene()
    sc.add_primitive_shape("Rod", "Box", (0.05, 0.05, 1.0))
    sc.add_object("rod", ["Rod"], translation=[0.5, 0, 0], orientation=([0, 1, 0], np.pi / 2), mass=1.0)
    sc.add_joint("hinge", "rod", points=[[0, 0, 0]], axes=[[0, 1, 0]], joint_class="PivotJointR")
    run = sc.run(T=0.1, h=0.01)
    assert set(run.method) <= {POLICY.run("gmp")[0]} == {"nsn"} and not run.failed_steps
    # on its pivot (the joint holds at the velocity level: the position drifts by O(h^2) per step)
    np.testing.assert_allclose(np.linalg.norm(run.q[:, 0, :3], axis=1), 0.5, atol=1e-4)


def _reference_penetration(step, Q0):
    """max(0, -y) over the step's detected contacts at its end poses, evaluated from scratch: the body-frame
    points of the detection at Q0 (what SceneModel.update_contacts writes into the contact table) and the one
    home of the contact formulas."""
    from nsopt.modeling.newton_euler import contact_outputs
    c = step.detected
    if c is None:
        return 0.0
    rp1, rp2, rn = c.relative(Q0)
    Q, two = step.q, c.body2 >= 0
    Q2 = np.zeros((len(c), 7))
    Q2[two] = Q[c.body2[two]]
    y = contact_outputs(Q[c.body1], Q2, two, rp1, rp2, rn, 1)[0]
    return max(0.0, -float(y.min()))


def test_on_step_gets_the_step_with_the_runs_figures():
    """Issue 31 item 6: on_step gets a public SceneStep whose fields are the figures of the step (before, it got
    the SceneRun and a hook read them from the private run._rows / run._times): each step's figures equal the
    run's arrays; its penetration (read from the step's own gaps, no second evaluation) equals the contact
    formula evaluated from scratch; its forces solve its problem; its times are the run's."""
    sc = small_pile(4, seed=2)
    steps = []
    run = sc.run(0.6, 5e-3, tol=1e-10, on_step=steps.append)
    assert len(steps) == len(run) == 120 and all(isinstance(s, mc.SceneStep) for s in steps)
    assert [s.k for s in steps] == list(range(1, 121))
    for f in ("t", "error", "nit", "contacts", "active", "penetration", "kinetic_energy", "top"):
        np.testing.assert_array_equal(np.array([getattr(s, f) for s in steps], dtype=float),
                                      np.asarray(getattr(run, f), dtype=float), err_msg=f)
    assert [s.status for s in steps] == run.status and [s.method for s in steps] == run.method
    np.testing.assert_array_equal(np.array([s.com for s in steps]), run.com)
    np.testing.assert_array_equal(np.array([s.q for s in steps]), run.q[1:])
    np.testing.assert_array_equal(np.array([s.v for s in steps]), run.v[1:])
    for ph, col in run.times.items():
        np.testing.assert_array_equal(np.array([s.times[ph] for s in steps]), col, err_msg=ph)
    assert sorted(run.times) == ["cpu", "detect", "record", "solve", "step", "total", "update"]
    solved = [s for s in steps if s.status is not None]
    assert len(solved) > 20 and sum(s.penetration > 0 for s in steps) > 10
    Q0 = run.q[:-1]
    for j, s in enumerate(steps):
        assert s.penetration == pytest.approx(_reference_penetration(s, Q0[j]), rel=0, abs=1e-15)
        assert s.forces.shape == (s.contacts, 3) and int(s.active_mask.sum()) == s.active
        if s.status is None:
            assert s.problem is None and s.solution is None and s.active == 0
            continue
        assert s.problem.kind == "fc3d" and s.problem.nc == s.active and s.solution.problem is s.problem
        assert s.problem.error(s.solution.r) <= 1e-10
        # the forces of the contacts in the problem are its impulses over h (the problem's rows in another order)
        np.testing.assert_allclose(np.sort(s.forces[s.active_mask, 0]), np.sort(s.solution.r[0::3] / 5e-3),
                                   rtol=0, atol=1e-9)
    assert run.last_step is steps[-1] and run.forces is steps[-1].forces and run.active_mask is steps[-1].active_mask


def test_observers_see_every_step_before_on_step_and_finish(tmp_path):
    """Scene.run(observers=): each observer is called with every SceneStep, after the record and the problem writer
    (observers too) and before on_step, and its finish(run) once at the end, also when on_step stops the run; the
    record then holds the steps taken and what a continued run needs."""
    seen, order = [], []

    class Watch:
        def __call__(self, step):
            assert np.isnan(step.times["record"])            # the record phase is under way
            seen.append(step.k)
            order.append("observer")

        def finish(self, run):
            order.append(("finish", len(run)))

    def stop(step):
        order.append("on_step")
        assert not np.isnan(step.times["record"]) and step.times["total"] >= step.times["record"]
        if step.k == 90:
            raise StopIteration

    sc = small_pile(3, seed=4)
    run = sc.run(0.5, 5e-3, tol=1e-10, observers=[Watch()], on_step=stop, record=tmp_path / "r.h5",
                 write_problems=tmp_path / "pb")
    assert len(run) == 90 and seen == list(range(1, 91))
    assert order == ["observer", "on_step"] * 90 + [("finish", 90)]
    rec = mc.load_record(tmp_path / "r.h5")
    assert len(rec) == 90 and rec.resume is not None
    np.testing.assert_array_equal(rec.q, run.q[1:])
    assert [s or None for s in rec.status.tolist()] == [None if s is None else s.value for s in run.status]
    files = sorted(int(f.stem[5:]) for f in (tmp_path / "pb").glob("step_*.hdf5"))
    assert files == [k + 1 for k, s in enumerate(run.status) if s is not None] and files


def test_the_problem_writer_is_an_observer_of_a_time_stepping_run(tmp_path):
    """ProblemWriter, the one writer of the step problems (TimeStepping.write_problems_to and
    Scene.run(write_problems=)), observes a TimeStepping step as it does a SceneStep: the same files."""
    from nsopt.modeling.simulation import ProblemWriter

    def ball():
        b = nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-9.81])
        nsds = nm.NonSmoothDynamicalSystem(0.0, 1.5)
        nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0]])), b)
        return nsds

    nm.TimeStepping(ball(), h=0.01, on_step=ProblemWriter(tmp_path / "a", 1, 150)).run()
    nm.TimeStepping(ball(), h=0.01).run(write_problems=tmp_path / "b")
    a, b = sorted(p.name for p in (tmp_path / "a").iterdir()), sorted(p.name for p in (tmp_path / "b").iterdir())
    assert a == b and len(a) > 3 and all(n.endswith("_lcp.dat") for n in a)
    assert all((tmp_path / "a" / n).read_bytes() == (tmp_path / "b" / n).read_bytes() for n in a)
    with pytest.raises(OutputError):                        # the folder is checked when the writer is made
        ProblemWriter(tmp_path / "a", 1, 150)


def _calls_of_a_step(n):
    """The Python calls into each nsopt module during step 3 of n cubes resting side by side on a slab."""
    import sys

    sc = mc.Scene(gravity=(0.0, 0.0, -9.81), margin=0.02)
    sc.add_primitive_shape("Cube", "Box", (0.2, 0.2, 0.2))
    sc.add_primitive_shape("Ground", "Box", (4.0, 4.0, 0.2))
    sc.add_Newton_impact_friction_nsl("contact", mu=0.5)
    sc.add_object("ground", ["Ground"], translation=[0, 0, -0.1])
    for i in range(n):
        sc.add_object(f"cube{i}", ["Cube"], mass=1.0, translation=[0.4 * i - 1.0, 0.0, 0.1])
    calls, seen = {}, [0]

    def count(frame, event, arg):
        mod = frame.f_globals.get("__name__", "")
        if event == "call" and mod.startswith("nsopt"):
            calls[mod] = calls.get(mod, 0) + 1

    def hook(step):
        seen[0] += 1
        sys.setprofile(count if seen[0] == 2 else None)

    old = sys.getprofile()
    try:
        sc.run(0.02, 5e-3, on_step=hook)
    finally:
        sys.setprofile(old)
    return calls


def test_a_step_makes_as_many_python_calls_for_six_bodies_as_for_three():
    """The Scene's per-step work is array work: reading the bodies' poses and twists, the detection and the step's
    figures make no Python call per body or per contact (the fixed cost of a small scene, issue 32 §6)."""
    _calls_of_a_step(3)                     # kernels loaded
    three, six = _calls_of_a_step(3), _calls_of_a_step(6)
    for mod in ("nsopt.mechanics.scene", "nsopt.mechanics.collision", "nsopt.modeling.simulation",
                "nsopt.modeling._stepper"):
        assert three.get(mod, 0) == six.get(mod, 0), (mod, three.get(mod), six.get(mod))
    assert sum(three[m] for m in three if m.startswith("nsopt.mechanics")) <= 40


def test_a_step_evaluates_the_contacts_jacobians_at_the_start_once(monkeypatch):
    """The detection's output refresh computes the contacts' Jacobians at q_k; the step's look-ahead rates take them
    from there instead of evaluating them again (issue 32 §6: each thing computed once)."""
    from nsopt.modeling import newton_euler as ne

    sc = cube_on_ground(z=0.5)
    sc.add_object("cube2", [mc.Contactor(sc.shape("Cube"))], translation=[3, 0, 0.5], mass=1.0)
    seen, repeated = set(), []
    real = ne.NewtonEuler1DR.h_G0_batch

    def counted(self, Q, Z, rels):
        key = (Q.tobytes(), tuple(map(id, rels)))
        if key in seen:
            repeated.append(Q.shape[0])
        seen.add(key)
        return real(self, Q, Z, rels)

    monkeypatch.setattr(ne.NewtonEuler1DR, "h_G0_batch", counted)
    run = sc.run(T=0.05, h=0.01, on_step=lambda step: seen.clear())
    assert len(run) == 5 and set(run.active.tolist()) == {8}
    assert repeated == []
