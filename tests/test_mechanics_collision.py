"""Contact detection with coal against analytic distances, normals and points, and the broad phase against
brute force on random scenes."""

import itertools

import numpy as np
import pytest

from conftest import need_extra

need_extra("mechanics")
import coal  # noqa: E402

from nsopt import mechanics as mc  # noqa: E402
from nsopt import modeling as nm  # noqa: E402
from nsopt.exceptions import ModelingError  # noqa: E402
from nsopt.modeling import _rotation as rot  # noqa: E402
from nsopt.modeling.newton_euler import contact_outputs  # noqa: E402

TOL = 1e-9     # coal's GJK/EPA and closed-form primitive routines reach ~1e-12 on these shapes


def pose(x, quat=(1.0, 0.0, 0.0, 0.0)):
    return np.r_[np.asarray(x, dtype=float), np.asarray(quat, dtype=float) / np.linalg.norm(quat)]


def floor_and(*bodies, margin=0.05):
    cm = mc.CollisionManager(margin=margin)
    cm.add_static(mc.Contactor(mc.HalfSpace()))
    for contactors, p in bodies:
        cm.add_body(contactors, p)
    return cm


def test_sphere_sphere_analytic():
    rng = np.random.default_rng(0)
    for _ in range(20):
        r1, r2 = rng.uniform(0.2, 1.0, 2)
        x1 = rng.normal(size=3)
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        gap = rng.uniform(-0.02, 0.09)
        x2 = x1 + (r1 + r2 + gap) * u
        cm = mc.CollisionManager(margin=0.1)
        cm.add_body(mc.Contactor(mc.Sphere(r1)), pose(x1))
        cm.add_body(mc.Contactor(mc.Sphere(r2)), pose(x2))
        c = cm.detect()
        assert len(c) == 1 and c.body1[0] == 0 and c.body2[0] == 1
        assert c.distance[0] == pytest.approx(gap, abs=TOL)
        np.testing.assert_allclose(c.normal[0], -u, atol=TOL)          # from body 2 towards body 1
        np.testing.assert_allclose(c.pc1[0], x1 + r1 * u, atol=TOL)
        np.testing.assert_allclose(c.pc2[0], x2 - r2 * u, atol=TOL)
    # beyond the margin: nothing
    cm = mc.CollisionManager(margin=0.05)
    cm.add_body(mc.Contactor(mc.Sphere(0.5)), pose([0, 0, 0]))
    cm.add_body(mc.Contactor(mc.Sphere(0.5)), pose([1.06, 0, 0]))
    assert len(cm.detect()) == 0


def test_sphere_and_tilted_half_space():
    n = np.array([0.3, -0.2, 1.0])
    n /= np.linalg.norm(n)
    cm = mc.CollisionManager(margin=0.1)
    cm.add_static(mc.Contactor(mc.HalfSpace(n, 0.4)))
    x = 0.4 * n + 0.53 * n + np.cross(n, [1.0, 0, 0])     # centre 0.53 above the plane n·x = 0.4
    cm.add_body(mc.Contactor(mc.Sphere(0.5)), pose(x))
    c = cm.detect()
    assert len(c) == 1 and c.body2[0] == -1 and c.static2[0] == 0
    assert c.distance[0] == pytest.approx(0.03, abs=TOL)
    np.testing.assert_allclose(c.normal[0], n, atol=TOL)
    np.testing.assert_allclose(c.pc1[0], x - 0.5 * n, atol=TOL)


def test_box_resting_on_plane_gives_its_four_bottom_corners():
    rng = np.random.default_rng(1)
    for _ in range(5):
        yaw = rng.uniform(0, 2 * np.pi)
        q = rot.quat_exp([0, 0, yaw])
        ext = rng.uniform(0.3, 2.0, 3)
        x = np.r_[rng.normal(size=2), ext[2] / 2 + 0.01]
        cm = floor_and(([mc.Contactor(mc.Box(ext))], pose(x, q)))
        c = cm.detect()
        assert len(c) == 4
        corners = np.array([x + rot.rotation_matrix(q) @ (np.array([sx, sy, -1]) * ext / 2)
                            for sx, sy in itertools.product((-1, 1), (-1, 1))])
        for p in c.pc1:
            assert np.min(np.linalg.norm(corners - p, axis=1)) < TOL
        np.testing.assert_allclose(c.distance, 0.01, atol=TOL)
        np.testing.assert_allclose(c.normal, np.tile([0, 0, 1.0], (4, 1)), atol=TOL)
        np.testing.assert_allclose(c.pc2[:, 2], 0.0, atol=TOL)


def test_box_tilted_on_an_edge_measures_its_lifted_corners():
    """A box standing on one bottom edge over a floor box, tilted by θ: coal's patch spans the bottom face, and the
    two lifted corners are b sin θ above the floor. The vertical line through a lifted corner meets the box there
    only; coal's normal and patch points are off by round-off (1e-9 to 1e-6), so the line misses the box by that
    much: the corner was then kept at coal's depth, the deepest point's (gap 0 for a corner up to 18 mm above the
    floor, in 187 of 300 such poses; a rocking tower got impulses there)."""
    rng = np.random.default_rng(1)
    b = 0.2
    for _ in range(40):
        th, H, yaw = rng.uniform(0.005, 0.09), rng.choice([0.2, 1.0, 2.0]), rng.uniform(0, 2 * np.pi)
        q = rot.quat_mul(rot.quat_exp([0, 0, yaw]), rot.quat_exp([0, th, 0]))
        R = rot.rotation_matrix(q)
        centre = np.r_[rng.uniform(-1, 1, 2), 0.0] - R @ np.array([b / 2, b / 2, -H / 2])   # on its edge x = b/2
        cm = mc.CollisionManager(margin=0.05)
        cm.add_static(mc.Contactor(mc.Box([4, 4, 0.2])), pose([0, 0, -0.1]))
        cm.add_body(mc.Contactor(mc.Box([b, b, H])), pose(centre, q))
        c = cm.detect()
        lifted = ((c.pc1 - centre) @ R)[:, 0] < 0
        assert lifted.sum() == 2 and (~lifted).sum() == 2
        np.testing.assert_allclose(c.distance[lifted], b * np.sin(th), atol=1e-8)
        np.testing.assert_allclose(c.distance[~lifted], 0.0, atol=1e-8)


def test_box_on_box_and_cylinder_on_plane_manifolds():
    # a small box centred on a larger one: the small box's four bottom corners
    cm = mc.CollisionManager(margin=0.05)
    cm.add_body(mc.Contactor(mc.Box([2, 2, 1])), pose([0, 0, 0.5]))
    cm.add_body(mc.Contactor(mc.Box([1, 1, 1])), pose([0.1, -0.2, 1.52], rot.quat_exp([0, 0, 0.4])))
    c = cm.detect()
    assert len(c) == 4
    np.testing.assert_allclose(c.distance, 0.02, atol=TOL)
    np.testing.assert_allclose(np.sort(c.pc2[:, 2]), np.full(4, 1.02), atol=TOL)   # on body 2 (the upper box)
    np.testing.assert_allclose(c.normal, np.tile([0, 0, -1.0], (4, 1)), atol=TOL)   # towards body 1 (below)
    # a standing cylinder: coal's 12-point rim reduced to 4 points on the rim, spread around it
    cm = floor_and(([mc.Contactor(mc.Cylinder(0.3, 1.0))], pose([0, 0, 0.52], rot.quat_exp([np.pi / 2, 0, 0]))))
    c = cm.detect()
    assert len(c) == 4
    np.testing.assert_allclose(np.linalg.norm(c.pc1[:, :2], axis=1), 0.3, atol=TOL)
    np.testing.assert_allclose(c.distance, 0.02, atol=TOL)
    assert np.linalg.norm(c.pc1[:, :2].mean(axis=0)) < 0.1      # not bunched on one side


def test_capsule_on_plane():
    # lying flat (its axis, the body's y, horizontal): two points under the ends of its segment
    cm = floor_and(([mc.Contactor(mc.Capsule(0.1, 0.7))], pose([1.0, 2.0, 0.12])))
    c = cm.detect()
    assert len(c) == 2
    np.testing.assert_allclose(np.sort(c.pc1[:, 1]), [2.0 - 0.35, 2.0 + 0.35], atol=TOL)
    np.testing.assert_allclose(c.distance, 0.02, atol=TOL)
    # tilted by 0.5 rad about x: one point under the lower end
    q = rot.quat_exp([0.5, 0, 0])
    lower = np.array([0, 0, 1.0]) + rot.rotation_matrix(q) @ [0, -0.35, 0]
    cm = floor_and(([mc.Contactor(mc.Capsule(0.1, 0.7))], pose([0, 0, 1.0], q)), margin=2.0)
    c = cm.detect()
    assert len(c) == 1
    assert c.distance[0] == pytest.approx(lower[2] - 0.1, abs=TOL)
    np.testing.assert_allclose(c.pc1[0], lower - [0, 0, 0.1], atol=TOL)


def test_cone_on_its_side_and_on_its_base():
    # a cone (radius r, height h, axis y, apex at +h/2) lying on its side touches the floor along a generator:
    # two points, under the apex and under the base's rim, each 0.02 above the floor (coal's patch alone gives one)
    r, h, gap = 0.3, 0.8, 0.02
    alpha = np.arctan2(r, h)                           # the half-angle: the generator makes it with the axis
    q = rot.quat_exp([-alpha, 0, 0])                   # the axis (y, towards the apex) turned down by alpha about x
    R = rot.rotation_matrix(q)
    apex_local, rim_local = np.array([0, h / 2, 0]), np.array([0, -h / 2, -r])    # the generator below the axis
    z0 = gap - (R @ apex_local)[2]                     # the apex at height gap
    for floor in (mc.HalfSpace(), None):
        if floor is None:
            cm = mc.CollisionManager(margin=0.05)
            cm.add_static(mc.Contactor(mc.Box([10, 10, 1])), pose([0, 0, -0.5]))
        else:
            cm = mc.CollisionManager(margin=0.05)
            cm.add_static(mc.Contactor(floor))
        cm.add_body(mc.Contactor(mc.Cone(r, h)), pose([0, 0, z0], q))
        c = cm.detect()
        assert len(c) == 2
        np.testing.assert_allclose(c.distance, gap, atol=TOL)
        want = np.array([R @ apex_local, R @ rim_local]) + [0, 0, z0]
        got = c.pc1[np.argsort(c.pc1[:, 1])]
        np.testing.assert_allclose(got, want[np.argsort(want[:, 1])], atol=TOL)
        np.testing.assert_allclose(c.normal, np.tile([0, 0, 1.0], (2, 1)), atol=TOL)
    # standing on its base: four points on the rim, spread around it
    cm = floor_and(([mc.Contactor(mc.Cone(r, h))], pose([0, 0, h / 2 + gap], rot.quat_exp([np.pi / 2, 0, 0]))))
    c = cm.detect()
    assert len(c) == 4
    np.testing.assert_allclose(np.linalg.norm(c.pc1[:, :2], axis=1), r, atol=TOL)
    np.testing.assert_allclose(c.distance, gap, atol=TOL)
    assert np.linalg.norm(c.pc1[:, :2].mean(axis=0)) < 0.1
    # apex down: one point, under the apex
    cm = floor_and(([mc.Contactor(mc.Cone(r, h))], pose([0, 0, h / 2 + gap], rot.quat_exp([-np.pi / 2, 0, 0]))))
    c = cm.detect()
    assert len(c) == 1 and c.distance[0] == pytest.approx(gap, abs=TOL)


def test_compound_body_and_offsets():
    """A dumbbell: two spheres at ±0.4 along x of the body, the body turned by 90° about z."""
    q = rot.quat_exp([0, 0, np.pi / 2])
    dumbbell = [mc.Contactor(mc.Sphere(0.2), translation=[0.4, 0, 0]), mc.Contactor(mc.Sphere(0.2), translation=[-0.4, 0, 0])]
    cm = floor_and((dumbbell, pose([0, 0, 0.21], q)))
    c = cm.detect()
    assert len(c) == 2
    np.testing.assert_allclose(np.sort(c.pc1[:, 1]), [-0.4, 0.4], atol=TOL)
    np.testing.assert_allclose(c.pc1[:, 0], 0.0, atol=TOL)
    assert sorted(c.contactor1.tolist()) == [0, 1]


def test_broad_phase_against_brute_force():
    """The pairs found equal those of coal's narrow phase run on every pair of shapes."""
    rng = np.random.default_rng(2)
    shapes = [lambda: mc.Sphere(rng.uniform(0.2, 0.6)), lambda: mc.Box(rng.uniform(0.3, 1.2, 3)),
              lambda: mc.Capsule(rng.uniform(0.1, 0.3), rng.uniform(0.2, 1.0))]
    cm = None
    for trial in range(4):
        if trial % 2 == 0:                  # a new scene, or (odd trials) the same one moved: the tree's update
            cm = mc.CollisionManager(margin=0.05)
            cm.add_static(mc.Contactor(mc.HalfSpace()))
            cts = [mc.Contactor(shapes[b % 3]()) for b in range(60)]
            for ct in cts:
                cm.add_body(ct)
        poses = [pose(rng.uniform([-3, -3, -0.2], [3, 3, 3]), rng.normal(size=4)) for _ in cts]
        c = cm.detect(np.array(poses))
        found = {(int(a), int(b)) for a, b in zip(c.body1, c.body2)}
        # brute force: coal.collide on every pair (and each body against the floor), same margin
        req = coal.CollisionRequest(coal.CollisionRequestFlag.CONTACT, 1)
        req.security_margin = 0.05
        objs = []
        for ct, p in zip(cts, poses):
            R = rot.rotation_matrix(p[3:])
            objs.append(coal.CollisionObject(ct.shape.geometry(), coal.Transform3s(R @ ct.local_rotation(), p[:3])))
        floor = coal.CollisionObject(coal.Halfspace(np.array([0, 0, 1.0]), 0.0), coal.Transform3s())
        brute = set()
        for i in range(len(objs)):
            if coal.collide(objs[i], floor, req, coal.CollisionResult()):
                brute.add((i, -1))
            for j in range(i + 1, len(objs)):
                if coal.collide(objs[i], objs[j], req, coal.CollisionResult()):
                    brute.add((i, j))
        assert found == brute, (trial, found ^ brute)
        assert len(brute) > 10


def test_persistent_ids_groups_and_filters():
    cm = floor_and(([mc.Contactor(mc.Box([1, 1, 1]))], pose([0, 0, 0.51])))
    c0 = cm.detect()
    c1 = cm.detect(np.array([pose([0.005, 0, 0.505])]))          # moved by less than the persistence
    assert sorted(c1.id.tolist()) == sorted(c0.id.tolist()) and not c1.new.any()
    # tipped onto an edge: two corners stay (same points in both frames), two new ones would not
    c2 = cm.detect(np.array([pose([0.3, 0, 0.51])]))              # slid by 0.3: all points new
    assert c2.new.all() and not set(c2.id) & set(c0.id)
    # groups: group 1 does not collide with the floor's group 0
    cm = mc.CollisionManager(margin=0.05)
    cm.add_static(mc.Contactor(mc.HalfSpace()))
    cm.add_body(mc.Contactor(mc.Sphere(0.5), group=1), pose([0, 0, 0.5]))
    cm.add_body(mc.Contactor(mc.Sphere(0.5)), pose([0.99, 0, 0.5]))
    assert len(cm.detect()) == 3
    cm.set_group_pair(0, 1, False)
    c = cm.detect()
    assert len(c) == 1 and c.body1[0] == 1 and c.body2[0] == -1
    cm.set_group_pair(0, 1, True)
    cm.exclude_pair(1, 0)
    assert {(int(a), int(b)) for a, b in zip(cm.detect().body1, cm.detect().body2)} == {(0, -1), (1, -1)}


def test_interpenetration_is_an_error_at_the_start():
    cm = mc.CollisionManager(margin=0.05)
    cm.add_body(mc.Contactor(mc.Sphere(0.5)), pose([0, 0, 0]))
    cm.add_body(mc.Contactor(mc.Sphere(0.5)), pose([0.8, 0, 0]))
    with pytest.raises(mc.InterpenetrationError, match="body 0 and body 1 by 0.2"):
        cm.check_interpenetration()
    c = cm.detect()                                               # during a run: reported as it is
    assert c.distance[0] == pytest.approx(-0.2, abs=TOL)


def test_convex_meshes_from_vertices_and_files(tmp_path):
    import trimesh
    box = trimesh.creation.box(extents=[1.0, 1.0, 1.0])
    box.export(tmp_path / "cube.obj")
    mesh = mc.ConvexMesh.from_file(tmp_path / "cube.obj")
    cm = floor_and(([mc.Contactor(mesh)], pose([0, 0, 0.51], rot.quat_exp([0, 0, 0.3]))))
    c = cm.detect()
    assert len(c) == 4
    np.testing.assert_allclose(c.distance, 0.01, atol=TOL)
    # a tetrahedron from vertices, resting on a face: its three corners
    tet = mc.ConvexMesh([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    c = floor_and(([mc.Contactor(tet)], pose([0, 0, 0.02]))).detect()
    assert len(c) == 3
    # an L-shaped (non-convex) mesh: refused, or its convex hull on request
    L = trimesh.util.concatenate([trimesh.creation.box([2, 1, 1]), trimesh.creation.box([1, 2, 1]).apply_translation([-0.5, 0.5, 0])])
    assert not L.is_convex
    L.export(tmp_path / "L.obj")
    with pytest.raises(ModelingError, match="not convex.*hull=True"):
        mc.ConvexMesh.from_file(tmp_path / "L.obj")
    hull = mc.ConvexMesh.from_file(tmp_path / "L.obj", hull=True)
    assert hull.vertices.shape[1] == 3
    with pytest.raises(ModelingError, match="coplanar"):
        mc.ConvexMesh([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]])
    with pytest.raises(ModelingError, match="cannot be read"):
        mc.ConvexMesh.from_file(tmp_path / "missing.stl")
    (tmp_path / "junk.obj").write_text("this is not a mesh\n")
    with pytest.raises(ModelingError, match="cannot be read|no vertices"):
        mc.ConvexMesh.from_file(tmp_path / "junk.obj")


def test_contacts_feed_the_contact_relations():
    """The body-frame data of the detected contacts give back, through NewtonEuler3DR's kernel, the same
    distances and points."""
    rng = np.random.default_rng(3)
    cm = mc.CollisionManager(margin=0.2)
    cm.add_static(mc.Contactor(mc.HalfSpace()))
    Q = np.array([pose([0, 0, 0.55], rng.normal(size=4) * [10, 1, 1, 1]), pose([0.2, 0.1, 1.6], rng.normal(size=4) * [10, 1, 1, 1])])
    for p in Q:
        cm.add_body(mc.Contactor(mc.Box([1, 1, 1])), p)
    c = cm.detect()
    assert len(c) >= 2 and (c.body2 >= 0).any() and (c.body2 < 0).any()
    rp1, rp2, rn = c.relative(Q)
    Q2 = np.where((c.body2 >= 0)[:, None], Q[np.maximum(c.body2, 0)], 0.0)
    y, H, P1, P2, N = contact_outputs(Q[c.body1], Q2, c.body2 >= 0, rp1, rp2, rn, 3)
    np.testing.assert_allclose(y, c.distance, atol=TOL)
    np.testing.assert_allclose(P1, c.pc1, atol=TOL)
    np.testing.assert_allclose(N, c.normal, atol=TOL)
    # and one relation set from the same world data
    rel = nm.NewtonEuler3DR()
    nsds = nm.NonSmoothDynamicalSystem(0, 1)
    b = [nm.NewtonEulerDS(q, np.zeros(6), 1.0, np.eye(3)) for q in Q]
    k = int(np.flatnonzero(c.body2 >= 0)[0])
    nsds.link(nm.Interaction(nm.NewtonImpactFrictionNSL(0, 0, 0.5, 3), rel), b[c.body1[k]], b[c.body2[k]])
    rel.set_contact(c.pc1[k], c.pc2[k], c.normal[k], Q[c.body1[k]], Q[c.body2[k]])
    assert rel.distance(np.r_[Q[c.body1[k]], Q[c.body2[k]]]) == pytest.approx(c.distance[k], abs=TOL)


def test_bad_input():
    with pytest.raises(ModelingError, match="radius"):
        mc.Sphere(-1.0)
    with pytest.raises(ModelingError, match="extents"):
        mc.Box([1, 1])
    cm = mc.CollisionManager()
    with pytest.raises(ModelingError, match="HalfSpace can only belong to a static"):
        cm.add_body(mc.Contactor(mc.HalfSpace()))
    with pytest.raises(ModelingError, match="no contactor"):
        cm.add_body([])
    cm.add_body(mc.Contactor(mc.Sphere(1.0)))
    with pytest.raises(ModelingError, match="expected \\(1, 7\\)"):
        cm.update(np.zeros((2, 7)))
    with pytest.raises(ModelingError, match="margin"):
        mc.CollisionManager(margin=-1)


def test_candidate_pairs_sorted_unique_and_covering_every_contact():
    """The compiled broad phase returns each pair once, sorted by (i, j), and every pair that coal's narrow phase
    finds in contact is among them; filters set before more bodies are added still hold after."""
    rng = np.random.default_rng(5)
    cm = mc.CollisionManager(margin=0.05)
    cm.add_static(mc.Contactor(mc.HalfSpace()))
    cm.add_static(mc.Contactor(mc.Box([8.0, 8.0, 0.5])), pose([0, 0, -0.25]))
    for b in range(40):
        cm.add_body(mc.Contactor(mc.Box(rng.uniform(0.3, 1.2, 3)) if b % 2 else mc.Sphere(rng.uniform(0.2, 0.6))))
    cm.exclude_pair(0, 1)
    cm.add_body(mc.Contactor(mc.Sphere(0.4)))                      # a body added after the filter was set
    Q = np.array([pose(rng.uniform([-2, -2, -0.2], [2, 2, 2]), rng.normal(size=4)) for _ in range(41)])
    Q[1, :3] = Q[0, :3] + [0.1, 0.0, 0.0]                          # bodies 0 and 1 overlap, but are excluded
    cm.update(Q)
    i, j = cm.candidate_pairs()
    key = i * len(cm._objects) + j
    assert (i < j).all() and (np.diff(key) > 0).all() and i.size > 20
    c = cm.detect()
    obj = {(o.owner, o.static): o.index for o in cm._objects}
    contact = {tuple(sorted((obj[(a, False)], obj[(b, False)] if b >= 0 else obj[(s, True)])))
               for a, b, s in zip(c.body1.tolist(), c.body2.tolist(), c.static2.tolist())}
    assert contact <= set(zip(i.tolist(), j.tolist())) and len(contact) > 10
    assert not ({(0, 1), (1, 0)} & set(zip(c.body1.tolist(), c.body2.tolist())))
