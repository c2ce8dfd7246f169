"""Rigid bodies (NewtonEulerDS) and their relations: kinematics against analytic rotations, the torque-free
body against Euler's closed form and the conservation laws, twist Jacobians against central finite
differences through the exponential map."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import expm

from nsopt import modeling as nm
from nsopt.exceptions import ModelingError, PluginError
from nsopt.modeling import _rotation as rot
from nsopt.modeling.newton_euler import (angular_momentum, contact_outputs, kinetic_energy, linear_momentum,
                                         stack_contacts, wrenches)

FD_TOL = 1e-7      # central differences with step 1e-5 on functions with O(1) second derivatives


def random_pose(rng, spread=1.0):
    quat = rng.normal(size=4)
    return np.concatenate([spread * rng.normal(size=3), quat / np.linalg.norm(quat)])


def fd_twist(f, qs, vs, eps=1e-5):
    """d/dε f(q_1 ⊕ ε v_1, q_2 ⊕ ε v_2) at 0, by central differences along the exponential map."""
    plus = f(*[rot.exp_step(q, v, eps) for q, v in zip(qs, vs)])
    minus = f(*[rot.exp_step(q, v, -eps) for q, v in zip(qs, vs)])
    return (np.asarray(plus) - np.asarray(minus)) / (2 * eps)


# ---------------------------------------------------------------------------- quaternions and kinematics
def test_rotation_matrix_is_the_quaternion_rotation():
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = random_pose(rng)[3:]
        vec = rng.normal(size=3)
        # the rotation as the quaternion sandwich q (0, v) q*, written independently
        sandwich = rot.quat_mul(rot.quat_mul(q, np.r_[0.0, vec]), rot.quat_conj(q))[1:]
        np.testing.assert_allclose(rot.rotation_matrix(q) @ vec, sandwich, atol=1e-14)
        np.testing.assert_allclose(rot.rotation_matrix(q) @ rot.rotation_matrix(q).T, np.eye(3), atol=1e-14)


def test_quaternion_kinematics_against_an_analytic_rotation():
    """q̇ = T(q) v with a constant body-frame ω: R(t) = R(0) expm(t [ω]×) and q(t) = q(0) ⊗ exp(ωt/2)."""
    rng = np.random.default_rng(1)
    q0 = random_pose(rng)
    v = np.r_[0.3, -0.2, 0.5, 1.1, -0.7, 2.3]
    sol = solve_ivp(lambda t, q: rot.T_matrix(q) @ v, (0.0, 3.0), q0, rtol=1e-12, atol=1e-12, dense_output=True)
    for t in (0.5, 1.7, 3.0):
        q = sol.sol(t)
        np.testing.assert_allclose(q[:3], q0[:3] + t * v[:3], atol=1e-9)
        np.testing.assert_allclose(q[3:], rot.quat_mul(q0[3:], rot.quat_exp(t * v[3:])), atol=1e-9)
        R_exact = rot.rotation_matrix(q0[3:]) @ expm(t * rot.skew(v[3:]))
        np.testing.assert_allclose(rot.rotation_matrix(q[3:]), R_exact, atol=1e-9)
    # T(q) v and the product form agree; T's quaternion block has orthogonal columns of norm 1/2
    np.testing.assert_allclose(rot.T_matrix(q0) @ v, rot.qdot(q0, v), atol=1e-15)
    Tq = rot.T_matrix(q0)[3:, 3:]
    np.testing.assert_allclose(Tq.T @ Tq, np.eye(3) / 4, atol=1e-15)


def test_normalize_and_exp_step():
    q = np.r_[1.0, 2.0, 3.0, 2.0, 0.0, 0.0, 0.0]
    np.testing.assert_allclose(nm.NewtonEulerDS.normalize(q), [1, 2, 3, 1, 0, 0, 0])
    # a half turn about z, by the exponential map
    q1 = rot.exp_step([0, 0, 0, 1, 0, 0, 0], [0, 0, 0, 0, 0, np.pi], 1.0)
    np.testing.assert_allclose(rot.rotation_matrix(q1[3:]), np.diag([-1.0, -1.0, 1.0]), atol=1e-15)
    np.testing.assert_allclose(rot.quat_exp(np.zeros(3)), [1, 0, 0, 0])


def test_ortho_base_is_siconos_4_4():
    """The three branches of Siconos 4.4's orthoBaseFromVector (op3x3.h), and a right-handed frame."""
    n = np.array([0.8, 0.6, 0.0])                        # x largest: t1 = (ny, -nx, 0)
    t1, t2 = rot.ortho_base(n)
    np.testing.assert_allclose(t1, [0.6, -0.8, 0.0])
    n = np.array([0.0, 0.6, -0.8])                       # z largest: t1 = (0, -nz, ny) (4.4: (0, -nz, nx))
    t1, _ = rot.ortho_base(n)
    np.testing.assert_allclose(t1, [0.0, 0.8, 0.6])
    n = np.array([0.0, 1.0, 0.0])                        # y largest: t1 = (-ny, nx, 0)
    t1, t2 = rot.ortho_base(n)
    np.testing.assert_allclose(t1, [-1.0, 0.0, 0.0])
    rng = np.random.default_rng(2)
    N = rng.normal(size=(50, 3))
    N /= np.linalg.norm(N, axis=1, keepdims=True)
    T1, T2 = rot.ortho_base(N)
    F = np.stack([N, T1, T2], axis=1)
    np.testing.assert_allclose(F @ F.transpose(0, 2, 1), np.broadcast_to(np.eye(3), (50, 3, 3)), atol=1e-14)
    np.testing.assert_allclose(np.linalg.det(F), 1.0, atol=1e-14)


# ---------------------------------------------------------------------------- the body
def test_body_mass_and_momenta():
    I = np.array([[2.0, 0.1, 0.0], [0.1, 3.0, 0.2], [0.0, 0.2, 4.0]])
    q0 = np.r_[1.0, -2.0, 0.5, rot.quat_exp([0.3, 0.2, -0.1])]
    v0 = np.r_[0.5, 0.1, -0.3, 1.0, 2.0, 3.0]
    b = nm.NewtonEulerDS(q0, v0, 2.5, I)
    M = b.mass()
    np.testing.assert_allclose(M[:3, :3], 2.5 * np.eye(3))
    np.testing.assert_allclose(M[3:, 3:], I)
    np.testing.assert_allclose(b.inverse_mass() @ M, np.eye(6), atol=1e-14)
    assert b.kinetic_energy() == pytest.approx(0.5 * v0 @ M @ v0, rel=1e-14)
    np.testing.assert_allclose(b.linear_momentum(), 2.5 * v0[:3])
    R = rot.rotation_matrix(q0[3:])
    np.testing.assert_allclose(b.angular_momentum(), np.cross(q0[:3], 2.5 * v0[:3]) + R @ I @ v0[3:], atol=1e-14)
    # the vectorised forms on a stack of bodies agree with the per-body methods
    Q = np.stack([q0, q0 * np.r_[1, 1, 1, -1, -1, -1, -1]])
    V = np.stack([v0, -v0])
    np.testing.assert_allclose(kinetic_energy(V, [2.5, 2.5], [I, I]), [b.kinetic_energy()] * 2)
    np.testing.assert_allclose(linear_momentum(V, np.array([2.5, 2.5]))[1], -2.5 * v0[:3])
    np.testing.assert_allclose(angular_momentum(Q, V, np.array([2.5, 2.5]), np.stack([I, I]))[0], b.angular_momentum())
    assert b.n == 6 and b.qdim == 7 and b.order == 2
    assert nm.NewtonEulerDS([0, 0, 0, 2, 0, 0, 0], np.zeros(6), 1.0, [1, 2, 3]).q0[3] == 1.0   # normalised


def test_wrench_and_its_jacobians():
    I = np.diag([1.0, 2.0, 3.0])
    q = np.r_[0.0, 0.0, 1.0, rot.quat_exp([0.1, 0.4, -0.3])]
    v = np.r_[0.2, 0.0, -0.1, 0.7, -1.2, 0.4]
    fext = lambda t, q, v, z: np.array([0.0, 0.0, -9.81]) - 0.3 * v[:3]          # drag
    mext = lambda t, q, v, z: np.array([np.sin(t), 0.0, q[2]])                    # world-frame moment
    b = nm.NewtonEulerDS(q, v, 2.0, I, fext=fext, mext=mext, mext_frame="world")
    F = b.wrench(0.3, q, v)
    R = rot.rotation_matrix(q[3:])
    w = v[3:]
    np.testing.assert_allclose(F[:3], [-0.06, 0.0, -9.81 + 0.03], atol=1e-14)
    np.testing.assert_allclose(F[3:], R.T @ [np.sin(0.3), 0.0, 1.0] - np.cross(w, I @ w), atol=1e-14)
    Jq, Jv = b.jacobian_wrench(0.3, q, v)
    from nsopt.modeling._check import fd_jacobian_central
    np.testing.assert_allclose(Jv, fd_jacobian_central(lambda x: b.wrench(0.3, q, x), v, 6), atol=1e-6)
    np.testing.assert_allclose(Jq, fd_jacobian_central(lambda x: b.wrench(0.3, x, v), q, 6), atol=1e-6)
    K, C = b.jacobian_forces(0.3, q, v)
    np.testing.assert_allclose(C, -Jv)
    np.testing.assert_allclose(K, -Jq @ rot.T_matrix(q))
    # constant forces and no gyroscopic term: no state forces
    plain = nm.NewtonEulerDS(q, v, 2.0, I, fext=[0, 0, -1.0], gyroscopic=False)
    assert not plain.has_state_forces and plain.jacobian_forces(0.0, q, v) == (None, None)
    # the stacked wrench of bodies without plug-ins
    gyro = nm.NewtonEulerDS(q, v, 2.0, I, fext=[0, 0, -1.0], mext=[0.1, 0.2, 0.3])
    np.testing.assert_allclose(wrenches(v[None], I[None], np.array([[0, 0, -1.0]]), np.array([[0.1, 0.2, 0.3]]))[0],
                               gyro.wrench(0.0, q, v), atol=1e-15)


def _free_body_rhs(body):
    Mi = body.inverse_mass()

    def rhs(t, x):
        q, v = x[:7], x[7:]
        return np.concatenate([rot.T_matrix(q) @ v, Mi @ body.wrench(t, q, v)])
    return rhs


def test_torque_free_symmetric_top_against_euler_closed_form():
    """I1 = I2: ω3 constant and (ω1, ω2) turns at Ω = (I3 - I1) ω3 / I1 (Euler's equations)."""
    I1, I3, w3, A = 2.0, 5.0, 1.5, 0.4
    body = nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], [0, 0, 0, A, 0.0, w3], 1.0, np.diag([I1, I1, I3]))
    sol = solve_ivp(_free_body_rhs(body), (0, 10), np.r_[body.q0, body.v0], rtol=1e-11, atol=1e-12, dense_output=True)
    Om = (I3 - I1) * w3 / I1
    for t in (1.0, 4.0, 10.0):
        w = sol.sol(t)[10:]
        np.testing.assert_allclose(w, [A * np.cos(Om * t), A * np.sin(Om * t), w3], atol=1e-8)


def test_dzhanibekov_flip_conserves_energy_and_angular_momentum():
    I = np.diag([1.0, 2.0, 3.0])
    body = nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], [0, 0, 0, 1e-3, 2.0, 1e-3], 1.0, I)
    sol = solve_ivp(_free_body_rhs(body), (0, 20), np.r_[body.q0, body.v0], rtol=1e-11, atol=1e-12,
                    t_eval=np.linspace(0, 20, 401))
    Q, V = sol.y[:7].T, sol.y[7:].T
    E = kinetic_energy(V, np.ones(len(V)), np.broadcast_to(I, (len(V), 3, 3)))
    L = angular_momentum(Q, V, np.ones(len(V)), np.broadcast_to(I, (len(V), 3, 3)))
    assert np.ptp(E) / E[0] < 1e-8
    assert np.abs(L - L[0]).max() < 1e-8
    assert V[:, 4].min() < -1.5                # the spin about the intermediate axis reverses


# ---------------------------------------------------------------------------- contact relations
def _link(rel, *bodies, dim=3):
    law = nm.NewtonImpactFrictionNSL(0.0, 0.0, 0.5, 3) if dim == 3 else nm.NewtonImpactNSL(0.0)
    nsds = nm.NonSmoothDynamicalSystem(0.0, 1.0)
    nsds.link(nm.Interaction(law, rel), *bodies)
    return rel


def _body(q):
    return nm.NewtonEulerDS(q, np.zeros(6), 1.0, np.eye(3))


@pytest.mark.parametrize("cls", [nm.NewtonEuler1DR, nm.NewtonEuler3DR])
def test_plane_contact_jacobian_against_finite_differences(cls):
    rng = np.random.default_rng(3)
    for _ in range(10):
        q = random_pose(rng)
        point = rng.normal(size=3)
        normal = rng.normal(size=3)
        rel = _link(cls(point=point, normal=normal, offset=0.3), _body(q), dim=cls.dim)
        n = normal / np.linalg.norm(normal)
        h = lambda qq: n @ (qq[:3] + rot.rotation_matrix(qq[3:]) @ point) - 0.3
        assert rel.h(q)[0] == pytest.approx(h(q), abs=1e-14)
        H = rel.jachqT(q)
        assert H.shape == (cls.dim, 6)
        F = np.stack([n, *rot.ortho_base(n)])[:cls.dim]
        for _ in range(3):
            v = rng.normal(size=6)
            # the material point's displacement, in the contact frame at the start
            ref = fd_twist(lambda qq: F @ (qq[:3] + rot.rotation_matrix(qq[3:]) @ point), [q], [v])
            np.testing.assert_allclose(H @ v, ref, atol=FD_TOL)
            np.testing.assert_allclose(H[0] @ v, fd_twist(h, [q], [v]), atol=FD_TOL)
        # the Jacobian with respect to q maps back to H through T
        np.testing.assert_allclose(rel.jachq(q) @ rot.T_matrix(q), H, atol=1e-14)


def test_body_body_contact_from_collision_points_against_finite_differences():
    rng = np.random.default_rng(4)
    for _ in range(10):
        q1, q2 = random_pose(rng), random_pose(rng)
        n = rng.normal(size=3)
        n /= np.linalg.norm(n)
        pc2 = rng.normal(size=3)
        d = 0.05 * rng.normal()
        pc1 = pc2 + d * n                           # closest points: P1 - P2 along the normal
        rel = _link(nm.NewtonEuler3DR(), _body(q1), _body(q2))
        rel.set_contact(pc1, pc2, n, q1, q2)
        Q = np.r_[q1, q2]
        assert rel.distance(Q) == pytest.approx(d, abs=1e-13)
        P1, P2, N = rel.contact_points(Q)
        np.testing.assert_allclose(P1, pc1, atol=1e-13)
        np.testing.assert_allclose(N, n, atol=1e-13)
        H = rel.jachqT(Q)
        F = np.stack([n, *rot.ortho_base(n)])
        a1 = rot.rotation_matrix(q1[3:]).T @ (pc1 - q1[:3])     # body 1's material point at P1
        a2 = rot.rotation_matrix(q2[3:]).T @ (pc1 - q2[:3])     # body 2's material point at P1
        mat = lambda x1, x2: F @ ((x1[:3] + rot.rotation_matrix(x1[3:]) @ a1) - (x2[:3] + rot.rotation_matrix(x2[3:]) @ a2))
        for _ in range(3):
            v1, v2 = rng.normal(size=6), rng.normal(size=6)
            np.testing.assert_allclose(H @ np.r_[v1, v2], fd_twist(mat, [q1, q2], [v1, v2]), atol=FD_TOL)
            # with closest points, the normal row is the derivative of the distance itself
            # (points fixed in their bodies, the normal turning with body 2)
            dist = lambda x1, x2: rel.distance(np.r_[x1, x2])
            assert H[0] @ np.r_[v1, v2] == pytest.approx(float(fd_twist(dist, [q1, q2], [v1, v2])), abs=FD_TOL)


def test_stacked_contacts_equal_the_relations():
    rng = np.random.default_rng(5)
    rels, Q1, Q2, two = [], [], [], []
    for j in range(12):
        q1, q2 = random_pose(rng), random_pose(rng)
        if j % 3 == 0:
            r = _link(nm.NewtonEuler3DR(point=rng.normal(size=3), normal=rng.normal(size=3), offset=rng.normal()), _body(q1))
        else:
            r = _link(nm.NewtonEuler3DR(), _body(q1), _body(q2))
            r.set_contact(rng.normal(size=3), rng.normal(size=3), rng.normal(size=3), q1, q2)
        rels.append(r)
        Q1.append(q1)
        Q2.append(q2)
        two.append(j % 3 != 0)
    y, H, *_ = contact_outputs(np.array(Q1), np.array(Q2), np.array(two), *stack_contacts(rels), 3)
    for j, r in enumerate(rels):
        Q = np.r_[Q1[j], Q2[j]] if two[j] else Q1[j]
        assert y[j] == r.distance(Q)
        np.testing.assert_array_equal(H[j][:, :12 if two[j] else 6], r.jachqT(Q))
        if not two[j]:
            assert not H[j][:, 6:].any()


def test_user_relation_newton_euler_r():
    """h = height of a body point above the floor (one body), and the distance between two body points."""
    p = np.array([0.2, -0.1, 0.3])
    h1 = lambda q, z: np.array([q[2] + (rot.rotation_matrix(q[3:7]) @ p)[2]])
    rng = np.random.default_rng(6)
    q = random_pose(rng)
    rel = _link(nm.NewtonEulerR(h1), _body(q), dim=1)
    for _ in range(3):
        v = rng.normal(size=6)
        np.testing.assert_allclose(rel.jachqT(q) @ v, fd_twist(lambda x: h1(x, None), [q], [v]), atol=1e-6)
    # two bodies, with a given (exact) Jacobian with respect to q
    def h2(Q, z):
        return np.array([Q[0] - Q[7], Q[1] - Q[8]])

    def jq(Q, z):
        J = np.zeros((2, 14))
        J[0, 0], J[0, 7], J[1, 1], J[1, 8] = 1, -1, 1, -1
        return J
    q1, q2 = random_pose(rng), random_pose(rng)
    nsds = nm.NonSmoothDynamicalSystem(0, 1)
    rel2 = nm.NewtonEulerR(h2, jq)
    nsds.link(nm.Interaction(nm.EqualityConditionNSL(2), rel2), _body(q1), _body(q2))
    v1, v2 = rng.normal(size=6), rng.normal(size=6)
    np.testing.assert_allclose(rel2.G0(np.r_[q1, q2]) @ np.r_[v1, v2], [v1[0] - v2[0], v1[1] - v2[1]], atol=1e-14)
    np.testing.assert_allclose(rel2.velocity(np.r_[q1, q2], np.r_[v1, v2]), [v1[0] - v2[0], v1[1] - v2[1]], atol=1e-14)


def test_bad_input():
    with pytest.raises(ModelingError, match="inertia.*positive definite"):
        nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], np.zeros(6), 1.0, np.diag([1.0, -1.0, 1.0]))
    with pytest.raises(ModelingError, match="inertia.*symmetric"):
        nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], np.zeros(6), 1.0, [[1, 0.5, 0], [0, 1, 0], [0, 0, 1]])
    with pytest.raises(ModelingError, match="q0.*quaternion"):
        nm.NewtonEulerDS([0, 0, 0, 0, 0, 0, 0], np.zeros(6), 1.0, np.eye(3))
    with pytest.raises(ModelingError, match="mass"):
        nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], np.zeros(6), 0.0, np.eye(3))
    with pytest.raises(ModelingError, match="v0"):
        nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], np.zeros(7), 1.0, np.eye(3))
    with pytest.raises(ModelingError, match="normal"):
        nm.NewtonEuler3DR(point=[0, 0, 0])
    with pytest.raises(ModelingError, match="zero vector"):
        nm.NewtonEuler3DR(point=[0, 0, 0], normal=[0, 0, 0])
    b = _body([0, 0, 0, 1, 0, 0, 0])
    nsds = nm.NonSmoothDynamicalSystem(0, 1)
    with pytest.raises(ModelingError, match="3 row.*size 1"):
        nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.0), nm.NewtonEuler3DR(point=[0, 0, 0], normal=[0, 0, 1])), b)
    with pytest.raises(ModelingError, match="joins one body"):
        nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.0), nm.NewtonEuler1DR(point=[0, 0, 0], normal=[0, 0, 1])),
                  b, _body([1, 0, 0, 1, 0, 0, 0]))
    r = _link(nm.NewtonEuler1DR(), b, dim=1)
    with pytest.raises(ModelingError, match="no contact point"):
        r.h(b.q)
    bad = nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], np.zeros(6), 1.0, np.eye(3), fext=lambda t, q, v, z: [1.0, np.nan, 0])
    with pytest.raises(PluginError, match="fext"):
        bad.wrench(0.0, bad.q, bad.v)
    with pytest.raises(ModelingError, match="h"):
        nm.NewtonEulerR()


# ---------------------------------------------------------------------------- against Siconos' kernel
SICONOS_PY = "/usr/bin/python3"
_SICONOS_JACOBIANS = r"""
import json, sys
import numpy as np
import siconos.kernel as sk
out = []
for case in json.loads(sys.argv[1]):
    bodies = [sk.NewtonEulerDS(np.array(q), np.zeros(6), 1.0, np.eye(3)) for q in case["q"]]
    rel = sk.NewtonEuler3DR()
    rel.setRelPc1(np.array(case["rp1"])); rel.setRelPc2(np.array(case["rp2"])); rel.setRelNc(np.array(case["rn"]))
    inter = sk.Interaction(sk.NewtonImpactFrictionNSL(0.0, 0.0, 0.5, 3), rel)
    nsds = sk.NonSmoothDynamicalSystem(0, 1)
    for b in bodies:
        nsds.insertDynamicalSystem(b)
    nsds.link(inter, *bodies)
    sim = sk.TimeStepping(nsds, sk.TimeDiscretisation(0, 1e-3), sk.MoreauJeanOSI(0.5), sk.FrictionContact(3))
    sim.initialize()
    rel.computeh(0.0, inter.y(0)) if False else None
    rel.computeJach(0.0, inter)
    out.append(np.array(rel.jachqT()).tolist())
print(json.dumps(out))
"""


def _siconos_available():
    import shutil
    import subprocess
    return shutil.which(SICONOS_PY) and subprocess.run([SICONOS_PY, "-c", "import siconos.kernel"],
                                                       capture_output=True).returncode == 0


@pytest.mark.skipif(not _siconos_available(), reason="Siconos 4.4 (python3-siconos for /usr/bin/python3) absent")
def test_contact_jacobians_equal_siconos_newton_euler_3dr():
    """Siconos' NewtonEuler3DR.jachqT at the initial positions (its h is evaluated by initialize()), one body
    against the world and two bodies, for normals where Siconos 4.4's frame is orthonormal."""
    import json
    import subprocess
    rng = np.random.default_rng(7)
    cases, mine = [], []
    normals = [[0, 0, 1], [0.8, 0.3, 0.2], [0.1, -0.9, 0.3], [0.4, 0.4, 0.8], [0, 0, -1]]
    for j, n in enumerate(normals):
        two = j % 2 == 1
        qs = [random_pose(rng) for _ in range(2 if two else 1)]
        n = np.asarray(n, dtype=float) / np.linalg.norm(n)
        rp1, rp2 = rng.normal(size=3), rng.normal(size=3)
        if two:                                      # the normal is held in body 2's frame
            n = rot.rotation_matrix(qs[1][3:]).T @ n
        cases.append(dict(q=[q.tolist() for q in qs], rp1=rp1.tolist(), rp2=rp2.tolist(), rn=n.tolist()))
        rel = _link(nm.NewtonEuler3DR(), *[_body(q) for q in qs])
        rel.update_contact_points(rp1, rp2, n)
        mine.append(rel.jachqT(np.concatenate(qs)))
    r = subprocess.run([SICONOS_PY, "-c", _SICONOS_JACOBIANS, json.dumps(cases)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    theirs = json.loads(r.stdout.strip().splitlines()[-1])
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a, np.array(b), atol=1e-12)


def test_delassus_of_a_contact_is_the_effective_mass_at_the_point():
    """W = H M⁻¹ Hᵀ: its normal entry is 1/m + (p × n_b)ᵀ I⁻¹ (p × n_b) (p the body-frame point, n_b the
    normal in the body frame), the textbook inverse effective mass of a rigid body at a point."""
    from nsopt.modeling.newton_euler import inverse_mass_matrix
    rng = np.random.default_rng(8)
    for _ in range(5):
        q = random_pose(rng)
        A = rng.normal(size=(3, 3))
        I = A @ A.T + np.eye(3)
        m = rng.uniform(0.5, 3.0)
        p, n = rng.normal(size=3), rng.normal(size=3)
        n /= np.linalg.norm(n)
        rel = _link(nm.NewtonEuler3DR(point=p, normal=n), nm.NewtonEulerDS(q, np.zeros(6), m, I))
        H = rel.jachqT(q)
        W = H @ inverse_mass_matrix(m, I) @ H.T
        nb = rot.rotation_matrix(q[3:]).T @ n
        c = np.cross(p, nb)
        assert W[0, 0] == pytest.approx(1 / m + c @ np.linalg.solve(I, c), rel=1e-12)
        np.testing.assert_allclose(W, W.T, atol=1e-14)
        assert np.linalg.eigvalsh(W).min() > 0


@pytest.mark.parametrize("two", [False, True])
def test_group_outputs_are_contact_outputs(two):
    """A relation group's h and G0 (one evaluation, ``h_G0_batch``: the contact kernel reading the stacked poses and
    the contact table's rows as they are) are :func:`contact_outputs`' numbers to the bit, and ``h_batch``,
    ``G0_batch`` its parts; one body: H of the body's 6 columns, two: 12."""
    from nsopt.modeling.newton_euler import ContactTable

    rng = np.random.default_rng(4)
    k = 9
    table = ContactTable(4)
    rels = table.relations(k, dim=3)
    P1, P2, N = rng.normal(size=(k, 3)), rng.normal(size=(k, 3)), rng.normal(size=(k, 3))
    table.set([r._row for r in rels], P1, P2, N)
    poses = [np.c_[rng.normal(size=(k, 3)), rot.quat_exp(rng.normal(size=(k, 3)))] for _ in range(2)]
    Q = np.hstack(poses) if two else poses[0]
    y, G = rels[0].h_G0_batch(Q, np.zeros((k, 0)), rels)
    y0, H = contact_outputs(poses[0], poses[1], np.full(k, two), table.data[[r._row for r in rels], 0:3],
                            table.data[[r._row for r in rels], 3:6], table.data[[r._row for r in rels], 6:9], 3)[:2]
    assert G.shape == (k, 3, 12 if two else 6)
    assert G.tobytes() == np.ascontiguousarray(H[:, :, :G.shape[2]]).tobytes()
    assert y[:, 0].tobytes() == y0.tobytes() and not y[:, 1:].any()
    assert rels[0].h_batch(Q, None, rels).tobytes() == y.tobytes()
    assert rels[0].G0_batch(Q, None, rels).tobytes() == G.tobytes()
