r"""Joints between rigid bodies, as Siconos' ``siconos.mechanics.joints`` (``KneeJointR``, ``PivotJointR``,
``PrismaticJointR``, ``FixedJointR``): bilateral relations h(q) = 0 between a body and another body or the
world, to be paired with :class:`~nsopt.modeling.EqualityConditionNSL` of their size (``nb_constraints``,
Siconos' ``numberOfConstraints``: 3, 5, 5, 6).

Each joint is fixed at its base positions (``set_base_positions(q1, q2)``, Siconos ``setBasePositions``;
done by the constructor when the bodies are given): points and axes given in the world frame
(``absolute_ref=True``, Siconos' ``absoluteRef``) are taken into body 1's frame there, and h is zero there.
With :math:`c = \bar q_2^0 \otimes q_1^0` the initial relative orientation (Siconos ``_cq2q10``):

================  ====  ================================================================================
joint             rows  h(q)
================  ====  ================================================================================
KneeJointR (ball)  3    :math:`x_1 + R_1 P_1 - x_2 - R_2 P_2` (the joint point seen from both bodies)
PivotJointR        5    knee rows, :math:`A_1 \cdot r_v`, :math:`A_2 \cdot r_v`, :math:`r = \overline{q_2 \otimes c} \otimes q_1`,
                        :math:`A_1, A_2 \perp A` (the hinge axis, body 1's frame)
PrismaticJointR    5    :math:`V_i \cdot (R_1^\top(x_2 - x_1) - d_0)` (i = 1, 2, :math:`V_i \perp` the axis), :math:`s_v`,
                        :math:`s = q_1 \otimes \overline{q_2 \otimes c}`
FixedJointR        6    :math:`R_1^\top(x_2 - x_1) - d_0`, :math:`s_v`
================  ====  ================================================================================

(:math:`d_0 = R_1^{0\top}(x_2^0 - x_1^0)`; the world is the identity pose.) These are Siconos' formulas
(its Maple/SymPy code in ``mechanics/src/joints``); the Jacobians with respect to the twists are written
in closed form here and checked against central finite differences through the exponential map
(tests/test_modeling_joints.py). Every kernel takes stacked arrays, one row per joint.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ModelingError
from . import _rotation as rot
from ._check import vector
from .newton_euler import NewtonEulerDS, NewtonEulerR

__all__ = ["NewtonEulerJointR", "KneeJointR", "PivotJointR", "PrismaticJointR", "FixedJointR",
           "knee_rows", "orientation_rows", "relative_position_rows", "pivot_rows", "joint_outputs"]

_IDENTITY = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
_IDENTITY.setflags(write=False)      # shared by every joint without a second body: never written


def _owner(cls, name) -> str:
    """How errors name a joint before its relation is built (``label``'s form: the class and the name)."""
    return f"{cls.__name__} {name!r}" if name else cls.__name__


def _axis(a, cls, name, field) -> np.ndarray:
    """A unit axis: 3 finite numbers (else "not finite", named), not the zero vector."""
    a = vector(a, _owner(cls, name), field, 3)
    n = float(np.linalg.norm(a))
    if not n > 0:
        raise ModelingError(_owner(cls, name), field, "the axis is the zero vector")
    return a / n


# ---------------------------------------------------------------------------- stacked kernels
def knee_rows(Q1, Q2, P1, P2):
    r"""Point coincidence, k joints: h = x1 + R1 P1 - x2 - R2 P2 (k, 3) and the twist Jacobians (k, 3, 12):
    :math:`[I, -R_1[P_1]_\times \,|\, -I, R_2[P_2]_\times]`."""
    R1, R2 = rot.rotation_matrix(Q1[:, 3:7]), rot.rotation_matrix(Q2[:, 3:7])
    h = Q1[:, :3] + np.einsum("kij,kj->ki", R1, P1) - Q2[:, :3] - np.einsum("kij,kj->ki", R2, P2)
    J = np.zeros((len(Q1), 3, 12))
    J[:, :, 0:3] = np.eye(3)
    J[:, :, 3:6] = -R1 @ rot.skew(P1)
    J[:, :, 6:9] = -np.eye(3)
    J[:, :, 9:12] = R2 @ rot.skew(P2)
    return h, J


def _qconj_c(Q2, C):
    """conj(q2 ⊗ c) (k, 4)."""
    return rot.quat_conj(rot.quat_mul(Q2[:, 3:7], C))


def pivot_rows(Q1, Q2, C, A1, A2):
    r"""Hinge orientation rows, k joints: :math:`r = \overline{q_2 \otimes c} \otimes q_1`, h = (A1·r_v, A2·r_v)
    (k, 2); :math:`\partial r_v/\partial ω_1 = \frac12(r_w I + [r_v]_\times)`,
    :math:`\partial r_v/\partial ω_2 = -\frac12(r_w I - [r_v]_\times) R(c)^\top`; Jacobians (k, 2, 12)."""
    r = rot.quat_mul(_qconj_c(Q2, C), Q1[:, 3:7])
    rw, rv = r[:, 0, None, None], r[:, 1:]
    S = rot.skew(rv)
    D1 = 0.5 * (rw * np.eye(3) + S)
    D2 = -0.5 * (rw * np.eye(3) - S) @ rot.rotation_matrix(C).transpose(0, 2, 1)
    A = np.stack([A1, A2], axis=1)                       # (k, 2, 3)
    h = np.einsum("kri,ki->kr", A, rv)
    J = np.zeros((len(Q1), 2, 12))
    J[:, :, 3:6] = A @ D1
    J[:, :, 9:12] = A @ D2
    return h, J


def orientation_rows(Q1, Q2, C):
    r"""Relative orientation rows, k joints: :math:`s = q_1 \otimes \overline{q_2 \otimes c}`, h = s_v (k, 3);
    :math:`\partial s_v/\partial ω_1 = \frac12(s_w I - [s_v]_\times) R_1`,
    :math:`\partial s_v/\partial ω_2 = -\frac12(s_w I - [s_v]_\times) R(q_1 \otimes \bar c)`; Jacobians (k, 3, 12)."""
    s = rot.quat_mul(Q1[:, 3:7], _qconj_c(Q2, C))
    sw, sv = s[:, 0, None, None], s[:, 1:]
    B = 0.5 * (sw * np.eye(3) - rot.skew(sv))
    J = np.zeros((len(Q1), 3, 12))
    J[:, :, 3:6] = B @ rot.rotation_matrix(Q1[:, 3:7])
    J[:, :, 9:12] = -B @ rot.rotation_matrix(rot.quat_mul(Q1[:, 3:7], rot.quat_conj(C)))
    return sv.copy(), J


def relative_position_rows(Q1, Q2, D0):
    r"""Body 2's centre seen from body 1, k joints: p = R1ᵀ(x2 - x1), h = p - d0 (k, 3); Jacobians (k, 3, 12):
    :math:`[-R_1^\top, [p]_\times \,|\, R_1^\top, 0]`."""
    R1t = rot.rotation_matrix(Q1[:, 3:7]).transpose(0, 2, 1)
    p = np.einsum("kij,kj->ki", R1t, Q2[:, :3] - Q1[:, :3])
    J = np.zeros((len(Q1), 3, 12))
    J[:, :, 0:3] = -R1t
    J[:, :, 3:6] = rot.skew(p)
    J[:, :, 6:9] = R1t
    return p - D0, J


# ---------------------------------------------------------------------------- relations
class NewtonEulerJointR(NewtonEulerR):
    """Base of the joints (Siconos ``NewtonEulerJointR``): a :class:`NewtonEulerR` whose h and twist Jacobian
    come from the stacked kernels above. Subclasses set ``nb_constraints`` and ``_rows``.

    Parameters
    ----------
    d1, d2 : NewtonEulerDS or (7,) array_like, optional
        The bodies (or their poses) at which the joint is assembled (:meth:`set_base_positions`); ``d2``
        None: the second side is the world. Without them the joint is assembled when it is linked.
    absolute_ref : bool, default True
        Points and axes given in the world frame (True) or in the first body's frame (False).
    name : str, optional
        A name for messages and reports.

    Attributes
    ----------
    nb_constraints : int
        The number of scalar equations the joint imposes (Siconos ``numberOfConstraints``).

    Raises
    ------
    ModelingError
        When ``d2`` is given without ``d1``, or a pose is not a 7-vector.

    See Also
    --------
    KneeJointR : a ball joint (3 constraints), with an example.
    PivotJointR : a hinge (5 constraints).
    PrismaticJointR : a slider (5 constraints).
    FixedJointR : a weld (6 constraints).
    """

    nb_constraints = 0

    def __init__(self, d1=None, d2=None, *, absolute_ref=True, name=None):
        super().__init__(None, None, name=name)
        self.absolute_ref = bool(absolute_ref)
        self._base = None
        if d1 is not None:
            self.set_base_positions(self._pose(d1, "d1"), None if d2 is None else self._pose(d2, "d2"))
        elif d2 is not None:
            raise ModelingError(self._owner, "d2", "is given without d1")

    def _pose(self, d, field):
        if isinstance(d, NewtonEulerDS):
            return d.q
        return vector(d, self._owner, field, 7)

    def numberOfConstraints(self) -> int:  # noqa: N802  (Siconos' name)
        return self.nb_constraints

    def set_base_positions(self, q1, q2=None):
        """Fix the joint at the poses q1 (and q2; None: the world) (Siconos ``setBasePositions``).

        Parameters
        ----------
        q1 : (7,) array_like
            Body 1's pose (its quaternion normalised here).
        q2 : (7,) array_like, optional
            Body 2's pose; None: the world.

        Raises
        ------
        ModelingError
            When a pose is not 7 finite numbers.

        Examples
        --------
        >>> from nsopt import modeling as nm
        >>> weld = nm.FixedJointR()
        >>> weld.set_base_positions([0, 0, 0, 1, 0, 0, 0], [0, 0, 1, 1, 0, 0, 0])
        >>> weld.bind(6, 12, 0)
        >>> (weld.h([0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0]) + 0.0).tolist()
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        """
        q1 = self._unit_pose(q1, "q1")
        q2 = _IDENTITY.copy() if q2 is None else self._unit_pose(q2, "q2")
        self._c = rot.quat_mul(rot.quat_conj(q2[3:7]), q1[3:7])       # Siconos' cq2q10
        self._base = (q1, q2)
        self._set_base(q1, q2)

    def _unit_pose(self, q, field):
        q = vector(q, self._owner, field, 7)
        if not np.linalg.norm(q[3:7]) > 0:
            raise ModelingError(self._owner, field, "the quaternion is zero; give a unit quaternion, (1, 0, 0, 0) for "
                                                    "no rotation")
        return rot.normalize_q(q)

    def _set_base(self, q1, q2):
        pass

    def _bind(self):
        super()._bind()
        if self.m != self.nb_constraints:
            raise ModelingError(self._owner, "relation", f"has {self.nb_constraints} rows but its law has size {self.m} "
                                                         f"(use EqualityConditionNSL({self.nb_constraints}))")

    def _split(self, Q):
        if self._base is None:
            raise ModelingError(self._owner, "base positions", "are not set: give d1 (and d2) to the constructor or "
                                                               "call set_base_positions(q1, q2)")
        Q = np.asarray(Q, dtype=float)
        return Q[None, :7], (Q[None, 7:14] if Q.shape[0] == 14 else _IDENTITY[None])

    # the joint's base data, one row (k = 1) of what the stacked kernels take
    _fields: tuple = ()

    def _data(self):
        return {f: np.asarray(getattr(self, "_" + f))[None] for f in self._fields}

    def _rows(self, Q1, Q2):
        return self._stacked(Q1, Q2, self._data())

    def _eval(self, Q):
        Q1, Q2 = self._split(Q)
        h, J = self._rows(Q1, Q2)
        return h[0], (J[0] if np.asarray(Q).shape[0] == 14 else J[0, :, :6].copy())

    def h(self, Q, t=None, lam=None, Z=None) -> np.ndarray:
        return self._eval(Q)[0]

    def jachqT(self, Q, t=None, lam=None, Z=None) -> np.ndarray:
        return self._eval(Q)[1]

    # ---- the batched evaluation (Moreau–Jean's relation groups): one joint_outputs call per group
    def batch_key(self):
        return ("ne-joint", type(self), self.n)

    def _batch(self, Q, rels):
        k = Q.shape[0]
        Q2 = Q[:, 7:14] if Q.shape[1] == 14 else np.broadcast_to(_IDENTITY, (k, 7))
        h, J = joint_outputs(rels, Q[:, :7], Q2)
        return h, (J if Q.shape[1] == 14 else np.ascontiguousarray(J[:, :, :6]))

    def h_batch(self, Q, Z, rels):
        return self._batch(Q, rels)[0]

    def G0_batch(self, Q, Z, rels):
        return self._batch(Q, rels)[1]

    def h_G0_batch(self, Q, Z, rels):
        return self._batch(Q, rels)


class KneeJointR(NewtonEulerJointR):
    """Ball joint (Siconos ``KneeJointR``): the point ``P`` of body 1 stays on the point of body 2 (or of the
    world) it coincides with at the base positions; 3 rows.

    Parameters
    ----------
    P : (3,) array_like
        The joint point (world frame with ``absolute_ref``, else body 1's frame).
    absolute_ref : bool, default True
        Whether points and axes are given in the world frame (Siconos' ``absoluteRef``; taken into body 1's
        frame at the base positions), else in body 1's frame.
    d1 : NewtonEulerDS or (7,) array_like, optional
        Body 1 (or its pose): fixes the base positions now (Siconos ``setBasePositions``); otherwise call
        :meth:`set_base_positions` before the first step.
    d2 : NewtonEulerDS or (7,) array_like, optional
        Body 2 (or its pose); None: the world (the identity pose).
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When ``P`` is not 3 finite numbers, ``d2`` is given without ``d1``, a pose has the wrong shape, the
        law's size is not 3, or the
        relation is evaluated before its base positions are set.

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> body = nm.NewtonEulerDS([1, 0, 0, 1, 0, 0, 0], [0] * 6, 1.0, [1, 1, 1])
    >>> joint = nm.KneeJointR(P=[0, 0, 0], d1=body)          # the world origin, seen from the body
    >>> joint.bind(3, 6, 0)                                  # (done by the interaction)
    >>> a = 0.5                                              # turn the body by a about z around the origin
    >>> q = np.array([np.cos(a), np.sin(a), 0, np.cos(a / 2), 0, 0, np.sin(a / 2)])
    >>> bool(np.abs(joint.h(q)).max() < 1e-12), float(np.abs(joint.h([2, 0, 0, 1, 0, 0, 0])).max())
    (True, 1.0)
    """

    nb_constraints = 3

    def __init__(self, P, absolute_ref=True, d1=None, d2=None, *, name=None):
        self.P = vector(P, _owner(type(self), name), "P", 3)
        super().__init__(d1, d2, absolute_ref=absolute_ref, name=name)

    def _set_base(self, q1, q2):
        R1, R2 = rot.rotation_matrix(q1[3:7]), rot.rotation_matrix(q2[3:7])
        P_abs = self.P if self.absolute_ref else q1[:3] + R1 @ self.P
        self._G1P0 = R1.T @ (P_abs - q1[:3])
        self._G2P0 = R2.T @ (P_abs - q2[:3])

    _fields = ("G1P0", "G2P0")

    @staticmethod
    def _stacked(Q1, Q2, d):
        return knee_rows(Q1, Q2, d["G1P0"], d["G2P0"])


class PivotJointR(KneeJointR):
    """Hinge (Siconos ``PivotJointR``): a ball joint at ``P`` and a common axis ``A``; 5 rows.

    Parameters
    ----------
    P : (3,) array_like
        The joint point (world frame with ``absolute_ref``, else body 1's frame).
    A : (3,) array_like
        The hinge axis (same frame as ``P``; normalised here).
    absolute_ref, d1, d2, name
        As for :class:`KneeJointR`.

    Raises
    ------
    ModelingError
        When ``P`` or ``A`` is not 3 finite numbers, ``A`` is the zero vector, ``d2`` is given without ``d1``, the law's size is not 5, or the
        relation is evaluated before its base positions are set.

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> body = nm.NewtonEulerDS([1, 0, 0, 1, 0, 0, 0], [0] * 6, 1.0, [1, 1, 1])
    >>> hinge = nm.PivotJointR(P=[0, 0, 0], A=[0, 0, 1], d1=body)
    >>> hinge.bind(5, 6, 0)                                  # (done by the interaction)
    >>> a = 0.5                                              # a rotation about the hinge: h stays 0
    >>> q = np.array([np.cos(a), np.sin(a), 0, np.cos(a / 2), 0, 0, np.sin(a / 2)])
    >>> hinge.numberOfConstraints(), bool(np.abs(hinge.h(q)).max() < 1e-12), round(hinge.angle(q), 6)
    (5, True, 0.5)
    """

    nb_constraints = 5

    def __init__(self, P, A, absolute_ref=True, d1=None, d2=None, *, name=None):
        self.A = _axis(A, type(self), name, "A")
        super().__init__(P, absolute_ref, d1, d2, name=name)

    def _set_base(self, q1, q2):
        super()._set_base(q1, q2)
        A = rot.rotation_matrix(q1[3:7]).T @ self.A if self.absolute_ref else self.A
        self._A = A
        self._A1, self._A2 = rot.ortho_base(A)

    _fields = ("G1P0", "G2P0", "c", "A1", "A2")

    @staticmethod
    def _stacked(Q1, Q2, d):
        hk, Jk = knee_rows(Q1, Q2, d["G1P0"], d["G2P0"])
        hp, Jp = pivot_rows(Q1, Q2, d["c"], d["A1"], d["A2"])
        return np.concatenate([hk, hp], axis=1), np.concatenate([Jk, Jp], axis=1)

    def angle(self, Q) -> float:
        """The rotation of body 1 relative to body 2 about the axis since the base positions (radians, in (-π, π]).

        Parameters
        ----------
        Q : (7,) or (14,) array_like
            The stacked positions of the one or two bodies.

        Returns
        -------
        float
            The angle in radians (see the class example).

        Raises
        ------
        ModelingError
            When the base positions are not set.
        """
        Q1, Q2 = self._split(Q)
        r = rot.quat_mul(_qconj_c(Q2, self._c[None]), Q1[:, 3:7])[0]
        return float(2 * np.arctan2(self._A @ r[1:], r[0]) + np.pi) % (2 * np.pi) - np.pi


class PrismaticJointR(NewtonEulerJointR):
    """Slider (Siconos ``PrismaticJointR``): body 2 keeps its orientation relative to body 1 and moves only
    along ``axis`` (body 1's frame); 5 rows.

    Parameters
    ----------
    axis : (3,) array_like
        The sliding direction (world frame with ``absolute_ref``, else body 1's frame; normalised here).
    absolute_ref, d1, d2, name
        As for :class:`KneeJointR`.

    Raises
    ------
    ModelingError
        When ``axis`` is not 3 finite numbers or is the zero vector, ``d2`` is given without ``d1``, the law's size is not 5, or the
        relation is evaluated before its base positions are set.

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> b1 = nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], [0] * 6, 1.0, [1, 1, 1])
    >>> b2 = nm.NewtonEulerDS([2, 0, 0, 1, 0, 0, 0], [0] * 6, 1.0, [1, 1, 1])
    >>> slider = nm.PrismaticJointR(axis=[1, 0, 0], d1=b1, d2=b2)
    >>> slider.bind(5, 12, 0)                                # (done by the interaction)
    >>> Q = np.r_[b1.q, [2.5, 0, 0, 1, 0, 0, 0]]             # body 2 slid by 0.5 along x
    >>> (slider.h(Q) + 0.0).tolist(), round(slider.displacement(Q), 6)
    ([0.0, 0.0, 0.0, 0.0, 0.0], 0.5)
    """

    nb_constraints = 5

    def __init__(self, axis, absolute_ref=True, d1=None, d2=None, *, name=None):
        self.axis = _axis(axis, type(self), name, "axis")
        super().__init__(d1, d2, absolute_ref=absolute_ref, name=name)

    def _set_base(self, q1, q2):
        R1 = rot.rotation_matrix(q1[3:7])
        a = R1.T @ self.axis if self.absolute_ref else self.axis
        self._V = np.stack(rot.ortho_base(a))               # (2, 3): the two constrained directions
        self._d0 = R1.T @ (q2[:3] - q1[:3])

    _fields = ("d0", "c", "V")

    @staticmethod
    def _stacked(Q1, Q2, d):
        hp, Jp = relative_position_rows(Q1, Q2, d["d0"])
        ho, Jo = orientation_rows(Q1, Q2, d["c"])
        V = d["V"]
        return (np.concatenate([np.einsum("kri,ki->kr", V, hp), ho], axis=1),
                np.concatenate([np.einsum("kri,kic->krc", V, Jp), Jo], axis=1))

    def displacement(self, Q) -> float:
        """The slide along the axis since the base positions.

        Parameters
        ----------
        Q : (7,) or (14,) array_like
            The stacked positions of the one or two bodies.

        Returns
        -------
        float
            The displacement along the axis (see the class example).

        Raises
        ------
        ModelingError
            When the base positions are not set.
        """
        Q1, Q2 = self._split(Q)
        hp, _ = relative_position_rows(Q1, Q2, self._d0[None])
        return float(hp[0] @ np.cross(self._V[0], self._V[1]))


class FixedJointR(NewtonEulerJointR):
    """Weld (Siconos ``FixedJointR``): body 2 keeps its position and orientation relative to body 1; 6 rows.

    Parameters
    ----------
    d1, d2, name
        As for :class:`KneeJointR`.

    Raises
    ------
    ModelingError
        When ``d2`` is given without ``d1``, the law's size is not 6, or the relation is evaluated before its
        base positions are set.

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> b1 = nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], [0] * 6, 1.0, [1, 1, 1])
    >>> b2 = nm.NewtonEulerDS([2, 0, 0, 1, 0, 0, 0], [0] * 6, 1.0, [1, 1, 1])
    >>> weld = nm.FixedJointR(d1=b1, d2=b2)
    >>> weld.bind(6, 12, 0)                                  # (done by the interaction)
    >>> (weld.h(np.r_[b1.q, b2.q]) + 0.0).tolist()
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    >>> weld.h(np.r_[b1.q, [2, 0, 0.5, 1, 0, 0, 0]]).round(6)[:3].tolist()
    [0.0, 0.0, 0.5]
    """

    nb_constraints = 6

    def __init__(self, d1=None, d2=None, *, name=None):
        super().__init__(d1, d2, absolute_ref=True, name=name)

    def _set_base(self, q1, q2):
        self._d0 = rot.rotation_matrix(q1[3:7]).T @ (q2[:3] - q1[:3])

    _fields = ("d0", "c")

    @staticmethod
    def _stacked(Q1, Q2, d):
        hp, Jp = relative_position_rows(Q1, Q2, d["d0"])
        ho, Jo = orientation_rows(Q1, Q2, d["c"])
        return np.concatenate([hp, ho], axis=1), np.concatenate([Jp, Jo], axis=1)


def joint_outputs(joints, Q1, Q2):
    """h (k, rows) and twist Jacobians (k, rows, 12) of k joints of one class at once, their bodies' poses
    Q1, Q2 (k, 7) (the world's identity pose in Q2 for a joint to the world; its Jacobian columns 6:12 are
    then to be dropped). The stacked form of the joints' ``h`` and ``jachqT``."""
    joints = list(joints)
    cls = type(joints[0])
    if any(type(j) is not cls for j in joints):
        raise ModelingError("joint_outputs", "joints", "must all be of one class (group them by class)")
    for j in joints:
        if j._base is None:
            raise ModelingError(j._owner, "base positions", "are not set")
    data = {f: np.stack([np.asarray(getattr(j, "_" + f)) for j in joints]) for f in cls._fields}
    return cls._stacked(np.asarray(Q1, dtype=float), np.asarray(Q2, dtype=float), data)
