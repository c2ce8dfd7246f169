"""Joints (KneeJointR, PivotJointR, PrismaticJointR, FixedJointR): zero at the base positions, zero along the
motions they allow, twist Jacobians against central finite differences through the exponential map."""

import numpy as np
import pytest

from nsopt import modeling as nm
from nsopt.exceptions import ModelingError
from nsopt.modeling import _rotation as rot

FD_TOL = 1e-7


def random_pose(rng):
    quat = rng.normal(size=4)
    return np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat)])


def body(q):
    return nm.NewtonEulerDS(q, np.zeros(6), 1.0, np.eye(3))


def link(joint, *bodies):
    nsds = nm.NonSmoothDynamicalSystem(0.0, 1.0)
    nsds.link(nm.Interaction(nm.EqualityConditionNSL(joint.nb_constraints), joint), *bodies)
    return joint


def fd_twist(f, qs, vs, eps=1e-5):
    plus = f(*[rot.exp_step(q, v, eps) for q, v in zip(qs, vs)])
    minus = f(*[rot.exp_step(q, v, -eps) for q, v in zip(qs, vs)])
    return (np.asarray(plus) - np.asarray(minus)) / (2 * eps)


def make(kind, rng, two, absolute=True):
    q1 = random_pose(rng)
    q2 = random_pose(rng) if two else None
    b1 = body(q1)
    bs = (b1, body(q2)) if two else (b1,)
    P, A = rng.normal(size=3), rng.normal(size=3)
    if kind == "knee":
        j = nm.KneeJointR(P, absolute, *bs)
    elif kind == "pivot":
        j = nm.PivotJointR(P, A, absolute, *bs)
    elif kind == "prismatic":
        j = nm.PrismaticJointR(A, absolute, *bs)
    else:
        j = nm.FixedJointR(*bs)
    return link(j, *bs), q1, q2, P, A


KINDS = ["knee", "pivot", "prismatic", "fixed"]
ROWS = {"knee": 3, "pivot": 5, "prismatic": 5, "fixed": 6}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("two", [False, True])
def test_joint_is_zero_at_base_and_its_jacobian_matches_finite_differences(kind, two):
    rng = np.random.default_rng(2 * KINDS.index(kind) + two)
    for _ in range(4):
        j, q1, q2, P, A = make(kind, rng, two)
        assert j.nb_constraints == ROWS[kind] == j.numberOfConstraints()
        Q0 = np.r_[q1, q2] if two else q1
        np.testing.assert_allclose(j.h(Q0), np.zeros(ROWS[kind]), atol=1e-12)
        # away from the base positions
        w1 = 0.5 * rng.normal(size=6)
        p1 = rot.exp_step(q1, w1, 1.0)
        p2 = rot.exp_step(q2, 0.5 * rng.normal(size=6), 1.0) if two else None
        Q = np.r_[p1, p2] if two else p1
        H = j.jachqT(Q)
        assert H.shape == (ROWS[kind], 12 if two else 6)
        for _ in range(3):
            v1, v2 = rng.normal(size=6), rng.normal(size=6)
            if two:
                ref = fd_twist(lambda a, b: j.h(np.r_[a, b]), [p1, p2], [v1, v2])
                np.testing.assert_allclose(H @ np.r_[v1, v2], ref, atol=FD_TOL)
            else:
                np.testing.assert_allclose(H @ v1, fd_twist(j.h, [p1], [v1]), atol=FD_TOL)
        # NewtonEulerR's generic path (finite differences of h with respect to q, times T) agrees
        np.testing.assert_allclose(nm.NewtonEulerR.jachqT(j, Q), H, atol=1e-6)


def _moved(q, about, axis_world, angle, shift):
    """The pose q turned by ``angle`` about the world line (``about``, ``axis_world``), then shifted."""
    R = rot.rotation_matrix(rot.quat_exp(angle * np.asarray(axis_world)))
    x = about + R @ (q[:3] - about) + shift
    quat = rot.quat_mul(rot.quat_exp(angle * np.asarray(axis_world)), q[3:])
    return np.r_[x, quat]


def test_joints_allow_their_motions_and_forbid_the_others():
    rng = np.random.default_rng(11)
    for _ in range(5):
        q1, q2 = random_pose(rng), random_pose(rng)
        P, A = rng.normal(size=3), rng.normal(size=3)
        A /= np.linalg.norm(A)
        other = np.cross(A, rng.normal(size=3))
        other /= np.linalg.norm(other)
        # a pivot: body 1 turning about the world axis (P, A) keeps h = 0; about another axis it does not
        piv = link(nm.PivotJointR(P, A, True, body(q1), body(q2)), body(q1), body(q2))
        assert np.abs(piv.h(np.r_[_moved(q1, P, A, 0.7, 0), q2])).max() < 1e-12
        assert piv.angle(np.r_[_moved(q1, P, A, 0.7, 0), q2]) == pytest.approx(0.7, abs=1e-12)
        assert np.abs(piv.h(np.r_[_moved(q1, P, other, 0.2, 0), q2])).max() > 1e-3
        # a ball joint allows any rotation about P, not a translation
        knee = link(nm.KneeJointR(P, True, body(q1)), body(q1))
        assert np.abs(knee.h(_moved(q1, P, other, 1.1, 0))).max() < 1e-12
        assert np.abs(knee.h(_moved(q1, P, A, 0.0, 0.1 * other))).max() > 1e-3
        # a slider allows a translation along its axis, not across it nor a rotation
        pri = link(nm.PrismaticJointR(A, True, body(q1), body(q2)), body(q1), body(q2))
        assert np.abs(pri.h(np.r_[q1, _moved(q2, P, A, 0.0, 0.3 * A)])).max() < 1e-12
        assert pri.displacement(np.r_[q1, _moved(q2, P, A, 0.0, 0.3 * A)]) == pytest.approx(0.3, abs=1e-12)
        assert np.abs(pri.h(np.r_[q1, _moved(q2, P, A, 0.0, 0.3 * other)])).max() > 1e-3
        assert np.abs(pri.h(np.r_[q1, _moved(q2, q2[:3], A, 0.2, 0)])).max() > 1e-3
        # a weld moves with body 1 as one rigid body
        fix = link(nm.FixedJointR(body(q1), body(q2)), body(q1), body(q2))
        assert np.abs(fix.h(np.r_[_moved(q1, P, other, 0.9, A), _moved(q2, P, other, 0.9, A)])).max() < 1e-12
        assert np.abs(fix.h(np.r_[q1, _moved(q2, P, other, 0.0, 0.1 * A)])).max() > 1e-3


def test_body_frame_points_and_stacked_kernels():
    rng = np.random.default_rng(12)
    q1 = random_pose(rng)
    P_body = rng.normal(size=3)
    P_world = q1[:3] + rot.rotation_matrix(q1[3:]) @ P_body
    a = link(nm.KneeJointR(P_body, False, body(q1)), body(q1))
    b = link(nm.KneeJointR(P_world, True, body(q1)), body(q1))
    Q = rot.exp_step(q1, rng.normal(size=6), 1.0)
    np.testing.assert_allclose(a.h(Q), b.h(Q), atol=1e-13)
    np.testing.assert_allclose(a.jachqT(Q), b.jachqT(Q), atol=1e-13)
    # the stacked kernels, row by row
    Q1 = np.stack([random_pose(rng) for _ in range(5)])
    Q2 = np.stack([random_pose(rng) for _ in range(5)])
    C = np.stack([random_pose(rng)[3:] for _ in range(5)])
    h, J = nm.joints.orientation_rows(Q1, Q2, C)
    for k in range(5):
        hk, Jk = nm.joints.orientation_rows(Q1[k:k + 1], Q2[k:k + 1], C[k:k + 1])
        np.testing.assert_array_equal(h[k], hk[0])
        np.testing.assert_array_equal(J[k], Jk[0])


def test_joint_bad_input():
    q = np.r_[0, 0, 0, 1, 0, 0, 0.0]
    with pytest.raises(ModelingError, match="EqualityConditionNSL\\(5\\)"):
        nsds = nm.NonSmoothDynamicalSystem(0, 1)
        nsds.link(nm.Interaction(nm.EqualityConditionNSL(3), nm.PivotJointR([0, 0, 0], [0, 0, 1], True, body(q))), body(q))
    j = nm.KneeJointR([0, 0, 0])
    link(j, body(q))
    with pytest.raises(ModelingError, match="base positions"):
        j.h(q)
    j.set_base_positions(q)
    np.testing.assert_allclose(j.h(q), 0.0)
    with pytest.raises(ModelingError, match="zero vector"):
        nm.PivotJointR([0, 0, 0], [0, 0, 0])
    with pytest.raises(ModelingError, match="d2"):
        nm.FixedJointR(None, body(q))


@pytest.mark.parametrize("kind", KINDS)
def test_stacked_joint_outputs_equal_each_joint(kind):
    rng = np.random.default_rng(40 + KINDS.index(kind))
    joints, Q1, Q2, two = [], [], [], []
    for m in range(6):
        j, q1, q2, _, _ = make(kind, rng, m % 2 == 0)
        p1 = rot.exp_step(q1, 0.3 * rng.normal(size=6), 1.0)
        p2 = rot.exp_step(q2, 0.3 * rng.normal(size=6), 1.0) if q2 is not None else np.r_[0, 0, 0, 1.0, 0, 0, 0]
        joints.append(j)
        Q1.append(p1)
        Q2.append(p2)
        two.append(q2 is not None)
    h, J = nm.joints.joint_outputs(joints, np.array(Q1), np.array(Q2))
    for m, j in enumerate(joints):
        Q = np.r_[Q1[m], Q2[m]] if two[m] else Q1[m]
        np.testing.assert_allclose(h[m], j.h(Q), atol=1e-15)
        np.testing.assert_allclose(J[m][:, :12 if two[m] else 6], j.jachqT(Q), atol=1e-15)
    with pytest.raises(ModelingError, match="one class"):
        other = nm.KneeJointR([0, 0, 0], True, body(Q1[0])) if kind != "knee" else nm.FixedJointR(body(Q1[0]))
        nm.joints.joint_outputs([joints[0], other], np.array(Q1[:2]), np.array(Q2[:2]))
