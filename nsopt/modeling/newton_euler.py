r"""Rigid bodies in 3D and their contact relations, with Siconos' names and conventions
(``NewtonEulerDS``, ``NewtonEulerR``, ``NewtonEuler1DR``, ``NewtonEuler3DR``).

A body's position is ``q = (x, y, z, qw, qx, qy, qz)`` (centre of mass, unit quaternion body → world),
its velocity the twist ``v = (vx, vy, vz, ωx, ωy, ωz)``: the linear velocity in the world frame, the
angular velocity in the body frame. The kinematics is :math:`\dot q = T(q) v` and the dynamics, in twist
coordinates, :math:`M \dot v = F(t, q, v) + p` with the constant :math:`M = \mathrm{diag}(m I_3, I)` and
the wrench

.. math:: F = \begin{pmatrix} f_{ext} - f_{int} \\ m_{ext} - ω \times I ω - m_{int} \end{pmatrix}

(moments in the body frame). A relation gives its output y = h(q) and its Jacobian with respect to the
twist of each body, :math:`H = \nabla_q h \; \mathrm{blockdiag}(T(q_1), T(q_2))` (Siconos' ``jachqT``),
so that :math:`\dot y = H v`, the impulse on the bodies is :math:`H^\top λ` and the one-step matrix is
:math:`W = H M^{-1} H^\top`. The vectorised forms (:func:`contact_outputs`, :func:`wrenches`,
:func:`kinetic_energy`, ...) take stacked arrays, one row per body or per contact.
"""

from __future__ import annotations

from operator import attrgetter

import numpy as np
from numba import njit

from ..exceptions import ModelingError
from . import _rotation as rot
from ._check import Operator, fd_jacobian, matrix, scalar, vector
from .relations import Relation
from .systems import DynamicalSystem

__all__ = ["NewtonEulerDS", "NewtonEulerR", "NewtonEuler1DR", "NewtonEuler3DR", "ContactTable", "contact_outputs",
           "stack_contacts", "wrenches", "kinetic_energy", "linear_momentum", "angular_momentum",
           "mass_matrix", "inverse_mass_matrix", "ne_positions"]


# ============================================================================ the body
class NewtonEulerDS(DynamicalSystem):
    r"""A rigid body in 3D (Siconos ``NewtonEulerDS``).

    ``n`` is 6 (the twist's size: Siconos' ``ndof``, the size of M and of the relations' Jacobian blocks),
    ``qdim`` is 7. ``q``, ``v`` and ``p`` (the impulse of the last step, twist-sized) hold the current state.

    Parameters
    ----------
    q0 : (7,) array_like
        Initial position and unit quaternion ``(x, y, z, qw, qx, qy, qz)`` (normalised here).
    v0 : (6,) array_like
        Initial twist: linear velocity (world frame), angular velocity (body frame).
    mass : float
        The scalar mass m > 0.
    inertia : (3, 3) or (3,) array_like
        Symmetric positive definite inertia matrix about the centre of mass, in the body frame, or (3,)
        its principal moments.
    fext : (3,) array_like or callable, optional
        Force on the centre of mass (world frame), a constant or a plug-in ``fext(t, q, v, z)``.
    mext : (3,) array_like or callable, optional
        Moment, a constant or a plug-in ``mext(t, q, v, z)``; in the body frame, or in the world frame
        with ``mext_frame="world"`` (Siconos ``setIsMextExpressedInInertialFrame``).
    fint, mint : callable or (3,) array_like, optional
        Plug-ins ``(t, q, v, z) -> (3,)`` (or constants), subtracted from the wrench as in Siconos.
    mext_frame : {"body", "world"}, default "body"
        The frame ``mext`` is expressed in.
    gyroscopic : bool, default True
        Include the gyroscopic moment ω × Iω (Siconos' default; ``False`` is its ``setNullifyMGyr``).
    z : array_like, optional
        The free vector Z passed to the plug-ins.
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When ``q0``, ``v0``, ``mass`` or ``inertia`` has the wrong shape or value (a zero quaternion, a
        mass <= 0, an inertia not symmetric or not positive definite), or ``mext_frame`` is neither
        "body" nor "world".
    PluginError
        When a plug-in returns the wrong shape or non-finite values (at its first evaluation).

    Examples
    --------
    >>> from nsopt import modeling as nm
    >>> body = nm.NewtonEulerDS([0, 0, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 2], mass=2.0,
    ...                         inertia=[0.1, 0.1, 0.2], fext=[0, 0, -19.62])
    >>> body.n, body.qdim
    (6, 7)
    >>> round(body.kinetic_energy(), 6)
    1.4
    >>> body.wrench(0.0, body.q, body.v).round(2).tolist()
    [0.0, 0.0, -19.62, 0.0, 0.0, 0.0]
    """

    order = 2
    kind = "newton_euler"
    qdim = 7

    def __init__(self, q0, v0, mass, inertia, fext=None, mext=None, fint=None, mint=None, *,
                 mext_frame="body", gyroscopic=True, z=None, name=None):
        super().__init__(z, name)
        o = self._owner
        q0 = vector(q0, o, "q0", 7)
        nq = np.linalg.norm(q0[3:7])
        if nq < 1e-12:
            raise ModelingError(o, "q0", "the quaternion is zero (q0[3:7] = 0); give a unit quaternion, (1, 0, 0, 0) "
                                        "for no rotation")
        q0[3:7] /= nq
        self.q0 = q0
        self.v0 = vector(v0, o, "v0", 6)
        self._n = 6
        self.scalar_mass = scalar(mass, o, "mass", low=0.0, low_open=True)
        I = np.asarray(inertia, dtype=float) if not callable(inertia) else None
        if I is not None and I.ndim == 1:
            I = np.diag(vector(inertia, o, "inertia", 3))
        I = matrix(I if I is not None else inertia, o, "inertia", (3, 3))
        if not np.allclose(I, I.T, rtol=1e-12, atol=1e-12 * np.abs(I).max()):
            raise ModelingError(o, "inertia", "is not symmetric")
        if np.linalg.eigvalsh(I).min() <= 0:
            raise ModelingError(o, "inertia", f"is not positive definite (eigenvalues {np.linalg.eigvalsh(I)})")
        self.inertia = I
        self.inertia.setflags(write=False)
        if mext_frame not in ("body", "world"):
            raise ModelingError(o, "mext_frame", f"must be 'body' or 'world', got {mext_frame!r}")
        self.mext_frame = mext_frame
        self.gyroscopic = bool(gyroscopic)
        sig = "t, q, v, z"
        self._fext = None if fext is None else Operator(fext, o, "fext", (3,), sig)
        self._mext = None if mext is None else Operator(mext, o, "mext", (3,), sig)
        self._fint = None if fint is None else Operator(fint, o, "fint", (3,), sig)
        self._mint = None if mint is None else Operator(mint, o, "mint", (3,), sig)
        self.q, self.v = self.q0.copy(), self.v0.copy()
        self.p = np.zeros(6)

    # ---- mass
    def mass(self, q=None) -> np.ndarray:
        """M = diag(m I3, I) (6, 6), constant (the argument is ignored, as for a constant LagrangianDS).

        Parameters
        ----------
        q : array_like, optional
            Ignored.

        Returns
        -------
        (6, 6) ndarray
            The mass matrix in twist coordinates.

        Examples
        --------
        >>> from nsopt import modeling as nm
        >>> nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], [0] * 6, 2.0, [1, 2, 3]).mass().diagonal().tolist()
        [2.0, 2.0, 2.0, 1.0, 2.0, 3.0]
        """
        return mass_matrix(self.scalar_mass, self.inertia)

    def inverse_mass(self) -> np.ndarray:
        """M⁻¹ = diag(I3/m, I⁻¹) (6, 6).

        Returns
        -------
        (6, 6) ndarray
            The inverse mass matrix.

        Examples
        --------
        >>> from nsopt import modeling as nm
        >>> nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], [0] * 6, 2.0, [1, 2, 4]).inverse_mass().diagonal().tolist()
        [0.5, 0.5, 0.5, 1.0, 0.5, 0.25]
        """
        return inverse_mass_matrix(self.scalar_mass, self.inertia)

    constant_mass = True

    # ---- kinematics
    @staticmethod
    def T(q) -> np.ndarray:
        """Siconos' T(q) (7, 6): q̇ = T(q) v.

        Parameters
        ----------
        q : (7,) array_like
            A position and unit quaternion.

        Returns
        -------
        (7, 6) ndarray
            The identity on the position rows, :math:`\\frac12` of the quaternion product on the rotation rows.

        Examples
        --------
        >>> from nsopt import modeling as nm
        >>> (nm.NewtonEulerDS.T([0, 0, 0, 1, 0, 0, 0])[3:, 3:] + 0.0).tolist()
        [[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 0.5]]
        """
        return rot.T_matrix(q)

    @staticmethod
    def qdot(q, v) -> np.ndarray:
        """q̇ = T(q) v (7,).

        Parameters
        ----------
        q : (7,) array_like
            A position and unit quaternion.
        v : (6,) array_like
            A twist.

        Returns
        -------
        (7,) ndarray
            The time derivative of q.

        Examples
        --------
        >>> from nsopt import modeling as nm
        >>> nm.NewtonEulerDS.qdot([0, 0, 0, 1, 0, 0, 0], [1, 0, 0, 0, 0, 2]).tolist()
        [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
        """
        return rot.qdot(q, v)

    @staticmethod
    def normalize(q) -> np.ndarray:
        """q with a unit quaternion (Siconos ``normalizeq``); a copy.

        Parameters
        ----------
        q : (7,) array_like
            A position and a nonzero quaternion.

        Returns
        -------
        (7,) ndarray
            A copy with the quaternion divided by its norm.

        Examples
        --------
        >>> from nsopt import modeling as nm
        >>> nm.NewtonEulerDS.normalize([1, 2, 3, 2, 0, 0, 0]).tolist()
        [1.0, 2.0, 3.0, 1.0, 0.0, 0.0, 0.0]
        """
        return rot.normalize_q(q)

    def rotation(self, q=None) -> np.ndarray:
        """R(q) (3, 3), body to world, at q (default: the current position).

        Parameters
        ----------
        q : (7,) array_like, optional
            A position; default the current ``self.q``.

        Returns
        -------
        (3, 3) ndarray
            The rotation matrix of the quaternion ``q[3:7]``.

        Examples
        --------
        >>> import numpy as np
        >>> from nsopt import modeling as nm
        >>> c = np.cos(np.pi / 4)
        >>> body = nm.NewtonEulerDS([0, 0, 0, c, 0, 0, c], [0] * 6, 1.0, [1, 1, 1])   # 90° about z
        >>> (body.rotation() @ [1, 0, 0]).round(6) + 0.0
        array([0., 1., 0.])
        """
        return rot.rotation_matrix((self.q if q is None else np.asarray(q))[3:7])

    # ---- forces
    @property
    def _plugged(self) -> bool:
        """Whether a part of the wrench other than the gyroscopic term may depend on q or v."""
        return (self._fint is not None or self._mint is not None or self.mext_frame == "world"
                or any(op is not None and not op.constant for op in (self._fext, self._mext)))

    @property
    def _gyroscopic_term(self) -> bool:
        """Whether ω × Iω can be nonzero: the term is on and the inertia is not isotropic (I = cI3 gives
        ω × cω = 0 for every ω)."""
        if not self.gyroscopic:
            return False
        I = self.inertia
        return bool(np.any(I != I[0, 0] * np.eye(3)))

    @property
    def has_state_forces(self) -> bool:
        """True when the wrench depends on q or v (a gyroscopic term that does not vanish, internal forces,
        plug-ins, a world-frame moment)."""
        return self._gyroscopic_term or self._plugged

    @property
    def constant_iteration_matrix(self) -> bool:
        r"""True when Moreau–Jean's :math:`\hat M = M + hθC + h^2θ^2K` never changes (no state-dependent
        wrench): the body joins the stacked constant systems of the step."""
        return not self.has_state_forces

    @property
    def has_fext(self) -> bool:
        """Whether an external force or moment is given."""
        return self._fext is not None or self._mext is not None

    @property
    def constant_fext(self) -> bool:
        """Whether the external wrench :meth:`fext` is a constant (body-frame moment, no plug-in)."""
        return not self._plugged

    def fext(self, t) -> np.ndarray | None:
        """The external wrench [fext, mext] (6,) of a body whose wrench does not depend on its state (the
        moment in the body frame), None without one: the F_ext(t) of Moreau–Jean's stacked free velocity.

        Parameters
        ----------
        t : float
            The time.

        Returns
        -------
        (6,) ndarray or None
            [fext, mext] at t (plug-ins evaluated at the initial state), None without external force or moment.

        Examples
        --------
        >>> from nsopt import modeling as nm
        >>> body = nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], [0] * 6, 1.0, [1, 1, 1], fext=[0, 0, -9.81])
        >>> body.fext(0.0).tolist()
        [0.0, 0.0, -9.81, 0.0, 0.0, 0.0]
        """
        if not self.has_fext:
            return None
        F = np.zeros(6)
        z = self.z
        if self._fext is not None:
            F[:3] = self._fext(t, self.q0, self.v0, z)
        if self._mext is not None:
            F[3:] = self._mext(t, self.q0, self.v0, z)
        return F

    def wrench(self, t, q, v) -> np.ndarray:
        """F = [fext - fint, mext - ω×Iω - mint] (6,), moments in the body frame (Siconos ``computeWrench``).

        Parameters
        ----------
        t : float
            The time.
        q : (7,) ndarray
            The position.
        v : (6,) ndarray
            The twist.

        Returns
        -------
        (6,) ndarray
            The force (world frame) and the moment (body frame).

        Raises
        ------
        PluginError
            When a plug-in returns the wrong shape or non-finite values.

        Examples
        --------
        >>> import numpy as np
        >>> from nsopt import modeling as nm
        >>> body = nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], [0] * 6, 1.0, [1, 2, 3])
        >>> body.wrench(0.0, body.q, np.array([0, 0, 0, 1.0, 1.0, 0])).tolist()   # -ω × Iω
        [0.0, 0.0, 0.0, 0.0, 0.0, -1.0]
        """
        return self._wrench(t, q, v, self.gyroscopic)

    def _wrench(self, t, q, v, gyroscopic):
        z = self.z
        F = np.zeros(6)
        if self._fext is not None:
            F[:3] += self._fext(t, q, v, z)
        if self._fint is not None:
            F[:3] -= self._fint(t, q, v, z)
        if self._mext is not None:
            m = self._mext(t, q, v, z)
            F[3:] += m if self.mext_frame == "body" else rot.rotation_matrix(q[3:7]).T @ m
        if gyroscopic:
            w = v[3:6]
            F[3:] -= np.cross(w, self.inertia @ w)
        if self._mint is not None:
            F[3:] -= self._mint(t, q, v, z)
        return F

    forces = wrench

    def jacobian_wrench(self, t, q, v):
        r"""(∂F/∂q (6, 7), ∂F/∂v (6, 6)): the gyroscopic part exactly,
        :math:`\partial(ω\times Iω)/\partial ω = [ω]_\times I - [Iω]_\times`, the plug-ins by finite differences.

        Parameters
        ----------
        t, q, v
            The time, the position (7,) and the twist (6,), as for :meth:`wrench`.

        Returns
        -------
        Jq : (6, 7) ndarray
            ∂F/∂q.
        Jv : (6, 6) ndarray
            ∂F/∂v.

        Examples
        --------
        >>> import numpy as np
        >>> from nsopt import modeling as nm
        >>> body = nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], [0] * 6, 1.0, [1, 2, 3])
        >>> Jq, Jv = body.jacobian_wrench(0.0, body.q, np.array([0, 0, 0, 1.0, 0, 0]))
        >>> Jq.shape, Jv[3:, 3:].tolist()
        ((6, 7), [[0.0, 0.0, 0.0], [0.0, 0.0, 2.0], [0.0, -1.0, 0.0]])
        """
        Jq = np.zeros((6, 7))
        Jv = np.zeros((6, 6))
        if self.gyroscopic:
            w = v[3:6]
            Jv[3:, 3:] -= rot.skew(w) @ self.inertia - rot.skew(self.inertia @ w)
        if self._plugged:
            Jq += fd_jacobian(lambda x: self._wrench(t, x, v, False), q, 6)
            Jv += fd_jacobian(lambda x: self._wrench(t, q, x, False), v, 6)
        return Jq, Jv

    def jacobian_forces(self, t, q, v):
        r"""(K, C) = (-∂F/∂q · T(q), -∂F/∂v) (6, 6) each, in twist coordinates (Moreau–Jean's
        :math:`\hat M = M + hθC + h^2θ^2K`, Siconos' ``computeW``), or (None, None) when F depends on neither.

        Parameters
        ----------
        t, q, v
            The time, the position (7,) and the twist (6,), as for :meth:`wrench`.

        Returns
        -------
        K, C : (6, 6) ndarray or None
            The stiffness and damping in twist coordinates; both None when the wrench depends on neither q nor v.

        Examples
        --------
        >>> import numpy as np
        >>> from nsopt import modeling as nm
        >>> nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], [0] * 6, 1.0, [1, 1, 1]).jacobian_forces(0.0, None, None)
        (None, None)
        """
        if not self.has_state_forces:
            return None, None
        Jq, Jv = self.jacobian_wrench(t, q, v)
        return -(Jq @ rot.T_matrix(q)), -Jv

    # ---- energy and momenta (world frame)
    def kinetic_energy(self, v=None):
        """½ vᵀ M v (a float; an array (k,) for twists (k, 6), e.g. ``traj.v(body)``).

        Parameters
        ----------
        v : (6,) or (k, 6) array_like, optional
            Twists; default the current ``self.v``.

        Returns
        -------
        float or (k,) ndarray
            The kinetic energy.

        Examples
        --------
        >>> from nsopt import modeling as nm
        >>> body = nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], [1, 0, 0, 0, 0, 2], 2.0, [1, 1, 1])
        >>> body.kinetic_energy(), body.kinetic_energy([[0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0]]).tolist()
        (3.0, [0.0, 1.0])
        """
        E = kinetic_energy(self.v if v is None else v, self.scalar_mass, self.inertia)
        return float(E) if np.ndim(E) == 0 else E

    def potential_energy(self, q=None, gravity=(0.0, 0.0, -9.81)):
        """-m g · x, the gravitational potential energy (a float, or (k,) for poses (k, 7)).

        Parameters
        ----------
        q : (7,) or (k, 7) array_like, optional
            Poses; default the current ``self.q``.
        gravity : (3,) array_like, default (0, 0, -9.81)
            The gravity vector g.

        Returns
        -------
        float or (k,) ndarray
            The potential energy.

        Examples
        --------
        >>> from nsopt import modeling as nm
        >>> nm.NewtonEulerDS([0, 0, 2, 1, 0, 0, 0], [0] * 6, 3.0, [1, 1, 1]).potential_energy(gravity=(0, 0, -10))
        60.0
        """
        E = -self.scalar_mass * np.asarray(self.q if q is None else q, dtype=float)[..., :3] @ np.asarray(gravity, dtype=float)
        return float(E) if np.ndim(E) == 0 else E

    def linear_momentum(self, v=None) -> np.ndarray:
        """m v_lin (world frame); (k, 3) for twists (k, 6).

        Parameters
        ----------
        v : (6,) or (k, 6) array_like, optional
            Twists; default the current ``self.v``.

        Returns
        -------
        (3,) or (k, 3) ndarray
            The linear momentum.

        Examples
        --------
        >>> from nsopt import modeling as nm
        >>> nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0], 2.0, [1, 1, 1]).linear_momentum().tolist()
        [2.0, 0.0, 0.0]
        """
        return linear_momentum(self.v if v is None else v, self.scalar_mass)

    def angular_momentum(self, q=None, v=None, about=(0.0, 0.0, 0.0)) -> np.ndarray:
        """x × m v_lin + R I ω about the world point ``about`` (world frame); (k, 3) for poses (k, 7) and
        twists (k, 6), e.g. ``body.angular_momentum(traj.q(body), traj.v(body))``.

        Parameters
        ----------
        q : (7,) or (k, 7) array_like, optional
            Poses; default the current ``self.q``.
        v : (6,) or (k, 6) array_like, optional
            Twists; default the current ``self.v``.
        about : (3,) array_like, default (0, 0, 0)
            The world point the moment is taken about.

        Returns
        -------
        (3,) or (k, 3) ndarray
            The angular momentum in the world frame.

        Examples
        --------
        >>> from nsopt import modeling as nm
        >>> body = nm.NewtonEulerDS([0, 0, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 2], 2.0, [0.1, 0.1, 0.2])
        >>> body.angular_momentum().round(6).tolist()
        [0.0, 2.0, 0.4]
        """
        return angular_momentum(self.q if q is None else q, self.v if v is None else v, self.scalar_mass,
                                self.inertia, about)

    def __repr__(self):
        return f"{self._owner}(mass={self.scalar_mass})"


# ---- vectorised body quantities (rows are bodies or time steps)
def mass_matrix(mass, inertia) -> np.ndarray:
    """diag(m I3, I) (..., 6, 6) for masses (...) and inertias (..., 3, 3)."""
    mass, inertia = np.asarray(mass, dtype=float), np.asarray(inertia, dtype=float)
    M = np.zeros(mass.shape + (6, 6))
    for k in range(3):
        M[..., k, k] = mass
    M[..., 3:, 3:] = inertia
    return M


def inverse_mass_matrix(mass, inertia) -> np.ndarray:
    """diag(I3/m, I⁻¹) (..., 6, 6)."""
    mass, inertia = np.asarray(mass, dtype=float), np.asarray(inertia, dtype=float)
    Mi = np.zeros(mass.shape + (6, 6))
    for k in range(3):
        Mi[..., k, k] = 1.0 / mass
    Mi[..., 3:, 3:] = np.linalg.inv(inertia)
    return Mi


def kinetic_energy(V, mass, inertia) -> np.ndarray:
    """½ m |v_lin|² + ½ ωᵀ I ω for twists V (..., 6)."""
    V = np.asarray(V, dtype=float)
    w = V[..., 3:6]
    return 0.5 * np.asarray(mass) * np.einsum("...i,...i->...", V[..., :3], V[..., :3]) \
        + 0.5 * np.einsum("...i,...ij,...j->...", w, np.asarray(inertia, dtype=float), w)


def linear_momentum(V, mass) -> np.ndarray:
    """m v_lin (..., 3), world frame."""
    V = np.asarray(V, dtype=float)
    return np.asarray(mass, dtype=float)[..., None] * V[..., :3]


def angular_momentum(Q, V, mass, inertia, about=(0.0, 0.0, 0.0)) -> np.ndarray:
    """(x - about) × m v_lin + R(q) I ω (..., 3), world frame: constant for a body without external moment."""
    Q, V = np.asarray(Q, dtype=float), np.asarray(V, dtype=float)
    spin = rot.rotate(Q[..., 3:7], np.einsum("...ij,...j->...i", np.asarray(inertia, dtype=float), V[..., 3:6]))
    return np.cross(Q[..., :3] - np.asarray(about, dtype=float), linear_momentum(V, mass)) + spin


def wrenches(V, inertia, fext=None, mext=None, gyroscopic=True) -> np.ndarray:
    r"""The wrench of many bodies at once (k, 6): constant body forces ``fext`` (k, 3) (world frame) and
    moments ``mext`` (k, 3) (body frame), minus the gyroscopic :math:`ω \times Iω` (the stacked form of
    :meth:`NewtonEulerDS.wrench` for bodies without plug-ins)."""
    V = np.asarray(V, dtype=float)
    F = np.zeros(V.shape[:-1] + (6,))
    if fext is not None:
        F[..., :3] += fext
    if mext is not None:
        F[..., 3:] += mext
    if gyroscopic:
        w = V[..., 3:6]
        F[..., 3:] -= np.cross(w, np.einsum("...ij,...j->...i", np.asarray(inertia, dtype=float), w))
    return F


# ============================================================================ relations
class NewtonEulerR(Relation):
    r"""Relation between one or two rigid bodies (Siconos ``NewtonEulerR``): a user plug-in
    ``h(q, z) -> (m,)`` of the stacked positions q (7 or 14), its Jacobian ``jachq(q, z) -> (m, 7·nb)``
    with respect to q (finite differences when None), mapped to the twists by T:
    :math:`H = \nabla_q h\,\mathrm{blockdiag}(T(q_1), T(q_2))` (``jachqT``, (m, 6·nb)).

    ``G0`` is ``jachqT``: :math:`\dot y = G_0 v` and the impulse is :math:`G_0^\top λ`, as for a Lagrangian
    relation but in twist coordinates.

    Parameters
    ----------
    h : callable
        The output plug-in ``h(q, z) -> (m,)`` of the stacked positions q (7 or 14).
    jachq : callable, optional
        Its Jacobian ``jachq(q, z) -> (m, 7·nb)`` with respect to q; finite differences when None.
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When ``h`` is missing or not callable, or (when the interaction is linked) the relation does not
        join one or two :class:`NewtonEulerDS` (total size 6 or 12).
    PluginError
        When a plug-in returns the wrong shape or non-finite values.

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> rel = nm.NewtonEulerR(h=lambda q, z: q[2:3] - 0.1)      # height of the centre above 0.1
    >>> rel.bind(1, 6, 0)                                         # (done by the interaction)
    >>> q = np.array([0, 0, 1.0, 1, 0, 0, 0])
    >>> rel.h(q).round(6).tolist(), rel.jachqT(q).round(6).tolist(), rel.bodies
    ([0.9], [[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]], 1)
    """

    kind = "newton_euler"
    compliant = False       # (what Moreau–Jean's step asks of every Lagrangian-like relation)
    rheonomous = False
    vectorized = False

    def __init__(self, h=None, jachq=None, *, name=None):
        super().__init__(name)
        if h is not None and not callable(h):
            raise ModelingError(self._owner, "h", "must be a plug-in h(q, z) -> (m,)")
        if h is None and type(self) is NewtonEulerR:
            raise ModelingError(self._owner, "h", "is required (a plug-in h(q, z) -> (m,))")
        self._given = dict(h=h, jachq=jachq)

    @property
    def bodies(self) -> int:
        """The number of bodies (1 or 2), known once linked."""
        return None if self.n is None else self.n // 6

    def _bind(self):
        if self.n not in (6, 12):
            raise ModelingError(self._owner, "relation", f"joins systems of total size {self.n}; a Newton–Euler "
                                                         "relation joins one or two NewtonEulerDS (6 or 12)")
        m, nq = self.m, 7 * (self.n // 6)
        self._h = None if self._given["h"] is None else Operator(self._given["h"], self._owner, "h", (m,), "q, z")
        jq = self._given["jachq"]
        self._jq = None if jq is None else Operator(jq, self._owner, "jachq", (m, nq), "q, z")

    def h(self, Q, t=None, lam=None, Z=None) -> np.ndarray:
        """y = h(q) (m,).

        Parameters
        ----------
        Q : (7·nb,) array_like
            The stacked positions of the bodies.
        t, lam : ignored
            (The signature every relation shares.)
        Z : ndarray, optional
            The free vector; zeros when None.

        Returns
        -------
        (m,) ndarray
            The output y.
        """
        return self._h(np.asarray(Q, dtype=float), self._z(Z))

    def _z(self, Z):
        return np.zeros(self.nz or 0) if Z is None else Z

    def jachq(self, Q, t=None, lam=None, Z=None) -> np.ndarray:
        """∇_q h (m, 7·nb).

        Parameters
        ----------
        Q : (7·nb,) array_like
            The stacked positions.
        t, lam, Z : optional
            As for :meth:`h`.

        Returns
        -------
        (m, 7·nb) ndarray
            The given ``jachq`` plug-in's value, or finite differences of :meth:`h`.
        """
        Q = np.asarray(Q, dtype=float)
        if self._jq is not None:
            return self._jq(Q, self._z(Z))
        return fd_jacobian(lambda x: self.h(x, t, lam, Z), Q, self.m)

    def jachqT(self, Q, t=None, lam=None, Z=None) -> np.ndarray:
        """H = ∇_q h · blockdiag(T(q_i)) (m, 6·nb): the Jacobian with respect to the twists.

        Parameters
        ----------
        Q : (7·nb,) array_like
            The stacked positions.
        t, lam, Z : optional
            As for :meth:`h`.

        Returns
        -------
        (m, 6·nb) ndarray
            H, so that ẏ = H v and the impulse on the bodies is Hᵀ λ.
        """
        Q = np.asarray(Q, dtype=float)
        Jq = self.jachq(Q, t, lam, Z)
        nb = Q.shape[0] // 7
        return np.hstack([Jq[:, 7 * b:7 * b + 7] @ rot.T_matrix(Q[7 * b:7 * b + 7]) for b in range(nb)])

    def G0(self, Q, t=None, lam=None, Z=None) -> np.ndarray:
        return self.jachqT(Q, t, lam, Z)

    def G1(self, Q, t=None, lam=None, Z=None):
        return None

    def hdot(self, Q, t=None, Z=None):
        return None

    def velocity(self, Q, V, t=None, lam=None, Z=None, G0=None) -> np.ndarray:
        """ẏ = H v.

        Parameters
        ----------
        Q : (7·nb,) array_like
            The stacked positions.
        V : (6·nb,) array_like
            The stacked twists.
        t, lam, Z : optional
            As for :meth:`h`.
        G0 : (m, 6·nb) ndarray, optional
            H when already computed.

        Returns
        -------
        (m,) ndarray
            The output velocity.
        """
        return (self.jachqT(Q, t, lam, Z) if G0 is None else G0) @ np.asarray(V, dtype=float)

    # ---- the batched evaluation (Moreau–Jean's relation groups, nsopt.modeling._stepper)
    def batch_key(self):
        """Interactions whose relations have equal keys are evaluated by one call of :meth:`h_batch` and
        :meth:`G0_batch` per step (a plug-in relation: one row at a time)."""
        return ("ne-loop", self.m, self.n, self.nz)

    def h_batch(self, Q, Z, rels):
        """y of k relations ``rels`` (of one key) at their stacked positions Q (k, 7·nb): (k, m)."""
        return np.array([r.h(Q[j], None, None, Z[j]) for j, r in enumerate(rels)]).reshape(Q.shape[0], self.m)

    def h_G0_batch(self, Q, Z, rels):
        """(:meth:`h_batch`, :meth:`G0_batch`): both at once where a relation computes them together."""
        return self.h_batch(Q, Z, rels), self.G0_batch(Q, Z, rels)

    def G0_batch(self, Q, Z, rels):
        """The twist Jacobians of k relations (k, m, 6·nb)."""
        return np.array([r.G0(Q[j], None, None, Z[j]) for j, r in enumerate(rels)]).reshape(Q.shape[0], self.m, self.n)


class NewtonEuler1DR(NewtonEulerR):
    r"""Normal contact between a body and another body or the world (Siconos ``NewtonEuler1DR``).

    The contact is held as in Siconos' ``ContactR``: a point ``rel_pc1`` fixed in body 1's frame, a point
    ``rel_pc2`` and a normal ``rel_nc`` fixed in body 2's frame (in the world frame without body 2). The
    normal points from body 2 towards body 1, and the output is the signed distance
    :math:`y = n \cdot (P_1 - P_2)` (positive apart). The Jacobian is Siconos': the velocity of body 1's
    material point at :math:`P_1` minus that of body 2's material point at :math:`P_1`, in the contact
    frame, :math:`H_1 = [R_c,\; R_c [G_1 - P_1]_\times R_1]`, :math:`H_2 = -[R_c,\; R_c [G_2 - P_1]_\times R_2]`,
    rows :math:`R_c` = (n) here, (n, t1, t2) for :class:`NewtonEuler3DR`.

    Set it either

    - hand-built, a body-frame ``point`` against the world plane :math:`n \cdot x = \text{offset}`
      (``normal=`` a world-frame vector, normalised here), for a relation linked to one body; or
    - from the collision detection: :meth:`set_contact` with world points and normal at the bodies'
      current positions, or :meth:`update_contact_points` with body-frame data (Siconos' names).

    Parameters
    ----------
    point : (3,) array_like, optional
        A hand-built contact's point, in the body's frame.
    normal : (3,) array_like, optional
        The world plane's normal (world frame, normalised here), pointing towards the body.
    offset : float, default 0.0
        The plane :math:`n \cdot x = \text{offset}`.
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When only one of ``point``, ``normal`` is given, the normal is zero, a hand-built (plane) contact is
        linked to two bodies, the relation's size differs from its law's, or the relation is evaluated
        before it has a contact point.

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> rel = nm.NewtonEuler1DR(point=[0, 0, -0.1], normal=[0, 0, 1])   # the bottom of a ball of radius 0.1
    >>> rel.bind(1, 6, 0)                                              # (done by the interaction)
    >>> q = np.array([0, 0, 1.0, 1, 0, 0, 0])
    >>> rel.distance(q), rel.jachqT(q).tolist()
    (0.9, [[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]])
    """

    dim = 1

    def __init__(self, point=None, normal=None, offset=0.0, *, name=None):
        super().__init__(None, None, name=name)
        o = self._owner
        self._table, self._row = None, 0
        self._own = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])    # rel_pc1, rel_pc2, rel_nc
        self._has_contact = False
        if point is not None or normal is not None:
            if point is None or normal is None:
                raise ModelingError(o, "point" if point is None else "normal",
                                    "a hand-built contact needs both point= (body frame) and normal= (world frame)")
            n = vector(normal, o, "normal", 3)
            nn = np.linalg.norm(n)
            if nn == 0:
                raise ModelingError(o, "normal", "is the zero vector")
            n = n / nn
            c = scalar(offset, o, "offset")
            self.update_contact_points(vector(point, o, "point", 3), c * n, n)
            self._plane = True
        else:
            self._plane = False

    def _bind(self):
        if self.n not in (6, 12):
            raise ModelingError(self._owner, "relation", f"joins systems of total size {self.n}; a Newton–Euler "
                                                         "relation joins one or two NewtonEulerDS (6 or 12)")
        if self.m != self.dim:
            raise ModelingError(self._owner, "relation", f"has {self.dim} row(s) but its law has size {self.m}")
        if self._plane and self.n != 6:
            raise ModelingError(self._owner, "point", "a contact against a world plane (point=, normal=) joins one body, "
                                                      "not two; use set_contact() for a body–body contact")

    def _data(self) -> np.ndarray:
        """(9,): rel_pc1, rel_pc2, rel_nc (a view of the relation's row of its :class:`ContactTable`, if any)."""
        return self._own if self._table is None else self._table.data[self._row]

    @property
    def rel_pc1(self) -> np.ndarray:
        """The contact point in body 1's frame (3,)."""
        return self._data()[0:3]

    @property
    def rel_pc2(self) -> np.ndarray:
        """The contact point in body 2's frame, or in the world frame without body 2 (3,)."""
        return self._data()[3:6]

    @property
    def rel_nc(self) -> np.ndarray:
        """The unit normal (from body 2 towards body 1) in body 2's frame, or the world frame (3,)."""
        return self._data()[6:9]

    def update_contact_points(self, rel_pc1, rel_pc2, rel_nc):
        """Set the contact from body-frame data (Siconos ``ContactR.updateContactPoints``): ``rel_pc1`` in body
        1's frame, ``rel_pc2`` and the unit normal ``rel_nc`` in body 2's frame (world frame without body 2).

        Parameters
        ----------
        rel_pc1, rel_pc2, rel_nc : (3,) array_like
            The two points and the normal (normalised here).

        Examples
        --------
        >>> from nsopt import modeling as nm
        >>> rel = nm.NewtonEuler1DR()
        >>> rel.update_contact_points([0, 0, -0.1], [0, 0, 0], [0, 0, 2])
        >>> rel.rel_nc.tolist()
        [0.0, 0.0, 1.0]
        """
        n = np.array(rel_nc, dtype=float).reshape(3)
        d = self._data()
        d[0:3] = np.asarray(rel_pc1, dtype=float).reshape(3)
        d[3:6] = np.asarray(rel_pc2, dtype=float).reshape(3)
        d[6:9] = n / np.linalg.norm(n)
        self._has_contact = True

    def set_contact(self, pc1, pc2, nc, q1, q2=None):
        """Set the contact from world points ``pc1`` (on body 1), ``pc2`` (on body 2 or the world) and the world
        normal ``nc`` (from body 2 towards body 1), found at the positions q1 (and q2).

        Parameters
        ----------
        pc1, pc2, nc : (3,) array_like
            World points and normal.
        q1 : (7,) array_like
            Body 1's position when they were found.
        q2 : (7,) array_like, optional
            Body 2's position; None for a contact with the world.

        Examples
        --------
        >>> import numpy as np
        >>> from nsopt import modeling as nm
        >>> rel = nm.NewtonEuler3DR()
        >>> q1, q2 = np.array([0, 0, 1.0, 1, 0, 0, 0]), np.array([0, 0, 0.0, 1, 0, 0, 0])
        >>> rel.set_contact([0, 0, 0.5], [0, 0, 0.2], [0, 0, 1], q1, q2)
        >>> rel.rel_pc1.tolist(), round(rel.distance(np.r_[q1, q2]), 6)
        ([0.0, 0.0, -0.5], 0.3)
        """
        q1 = np.asarray(q1, dtype=float)
        R1 = rot.rotation_matrix(q1[3:7])
        rp1 = R1.T @ (np.asarray(pc1, dtype=float) - q1[:3])
        if q2 is None:
            self.update_contact_points(rp1, pc2, nc)
        else:
            q2 = np.asarray(q2, dtype=float)
            R2 = rot.rotation_matrix(q2[3:7])
            self.update_contact_points(rp1, R2.T @ (np.asarray(pc2, dtype=float) - q2[:3]), R2.T @ np.asarray(nc, dtype=float))

    def _eval(self, Q):
        if not self._has_contact:
            raise ModelingError(self._owner, "contact", "has no contact point yet: give point=/normal= or call set_contact()")
        Q = np.asarray(Q, dtype=float)
        two = Q.shape[0] == 14
        Q2 = Q[7:14][None] if two else np.zeros((1, 7))
        return contact_outputs(Q[None, :7], Q2, np.array([two]), self.rel_pc1[None], self.rel_pc2[None],
                               self.rel_nc[None], self.dim)

    def h(self, Q, t=None, lam=None, Z=None) -> np.ndarray:
        """[distance] (and zeros on the tangent rows of a 3D contact)."""
        y = np.zeros(self.dim)
        y[0] = self._eval(Q)[0][0]
        return y

    def distance(self, Q) -> float:
        """The signed distance n · (P1 - P2) at the stacked positions Q.

        Parameters
        ----------
        Q : (7,) or (14,) array_like
            The stacked positions of the one or two bodies.

        Returns
        -------
        float
            Positive apart, negative in interpenetration.

        Raises
        ------
        ModelingError
            When the relation has no contact point yet.
        """
        return float(self._eval(Q)[0][0])

    def contact_points(self, Q):
        """(pc1, pc2, nc) in the world frame at the stacked positions Q.

        Parameters
        ----------
        Q : (7,) or (14,) array_like
            The stacked positions of the one or two bodies.

        Returns
        -------
        pc1, pc2, nc : (3,) ndarray
            The world points on body 1 and body 2 (or the world) and the world normal.

        Examples
        --------
        >>> import numpy as np
        >>> from nsopt import modeling as nm
        >>> rel = nm.NewtonEuler1DR(point=[0, 0, -0.1], normal=[0, 0, 1])
        >>> [p.tolist() for p in rel.contact_points(np.array([0, 0, 1.0, 1, 0, 0, 0]))]
        [[0.0, 0.0, 0.9], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
        """
        _, _, P1, P2, N = self._eval(Q)
        return P1[0], P2[0], N[0]

    def jachqT(self, Q, t=None, lam=None, Z=None) -> np.ndarray:
        H = self._eval(Q)[1][0]
        return H if np.asarray(Q).shape[0] == 14 else H[:, :6].copy()

    def batch_key(self):
        return ("ne-contact", self.dim, self.n)

    def h_G0_batch(self, Q, Z, rels):
        """([distance, 0, 0] (k, dim), the twist Jacobians (k, dim, 6·nb)) of k contacts by one
        :func:`contact_outputs` call."""
        d, H = _contacts_of(Q, rels, self.dim)
        y = np.zeros((Q.shape[0], self.dim))
        y[:, 0] = d
        return y, H

    def h_batch(self, Q, Z, rels):
        """[distance, 0, 0] of k contacts (k, dim) (:meth:`h_G0_batch`)."""
        return self.h_G0_batch(Q, Z, rels)[0]

    def G0_batch(self, Q, Z, rels):
        """The twist Jacobians of k contacts (k, dim, 6·nb) (:meth:`h_G0_batch`)."""
        return self.h_G0_batch(Q, Z, rels)[1]

    def jachq(self, Q, t=None, lam=None, Z=None) -> np.ndarray:
        """∇_q of the rows whose twist Jacobian is :meth:`jachqT` (H = jachq · T, with jachq = H Tᵀ·4 on the
        quaternion block, since TᵀT = I/4 there for a unit quaternion)."""
        Q = np.asarray(Q, dtype=float)
        H = self.jachqT(Q)
        nb = Q.shape[0] // 7
        out = np.zeros((self.dim, 7 * nb))
        for b in range(nb):
            T = rot.T_matrix(Q[7 * b:7 * b + 7])
            out[:, 7 * b:7 * b + 3] = H[:, 6 * b:6 * b + 3]
            out[:, 7 * b + 3:7 * b + 7] = 4.0 * H[:, 6 * b + 3:6 * b + 6] @ T[3:7, 3:6].T
        return out


class NewtonEuler3DR(NewtonEuler1DR):
    r"""Contact with friction between a body and another body or the world (Siconos ``NewtonEuler3DR``): as
    :class:`NewtonEuler1DR` with the contact frame (n, t1, t2) built from the normal as Siconos 4.4 builds it
    (``orthoBaseFromVector``): y = (distance, 0, 0), ẏ = (normal, tangential, tangential) relative velocity.

    Parameters
    ----------
    point, normal, offset, name
        As for :class:`NewtonEuler1DR`.

    Raises
    ------
    ModelingError
        As for :class:`NewtonEuler1DR`.

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> rel = nm.NewtonEuler3DR(point=[0.1, 0, 0], normal=[0, 0, 1])
    >>> rel.bind(3, 6, 0)                                   # (done by the interaction)
    >>> q = np.array([0, 0, 1.0, 1, 0, 0, 0])
    >>> rel.h(q).tolist()
    [1.0, 0.0, 0.0]
    >>> (rel.jachqT(q) + 0.0).round(6).tolist()             # rows n, t1, t2; columns twist
    [[0.0, 0.0, 1.0, 0.0, -0.1, 0.0], [0.0, -1.0, 0.0, 0.0, 0.0, -0.1], [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]]
    """

    dim = 3


class ContactTable:
    """The body-frame data of many contact relations (:class:`NewtonEuler1DR`, :class:`NewtonEuler3DR`) in one
    array, a row each: ``data`` (capacity, 9) holds rel_pc1, rel_pc2, rel_nc. A scene's contact detection writes
    the rows of all its contacts at once (:meth:`set`) and Moreau–Jean's step gathers them by rows (one
    :func:`contact_outputs` call per relation group), where relations holding their own data are read one by one.

    >>> t = ContactTable()
    >>> rels = t.relations(2, dim=3)
    >>> t.set([r._row for r in rels], [[0, 0, -1], [0, 0, -1]], [[0, 0, 0], [1, 0, 0]], [[0, 0, 1], [0, 0, 1]])
    >>> rels[1].rel_pc2.tolist()
    [1.0, 0.0, 0.0]
    """

    def __init__(self, capacity: int = 64):
        self.data = np.zeros((max(1, int(capacity)), 9))
        self.data[:, 8] = 1.0
        self._free = list(range(self.data.shape[0] - 1, -1, -1))

    def _grow(self, need):
        n = self.data.shape[0]
        new = max(2 * n, n + need)
        data = np.zeros((new, 9))
        data[:, 8] = 1.0
        data[:n] = self.data
        self.data = data
        self._free = list(range(new - 1, n - 1, -1)) + self._free

    def relations(self, k: int, dim: int = 3) -> list:
        """k new contact relations (:class:`NewtonEuler3DR`, or :class:`NewtonEuler1DR` for ``dim=1``) on new rows."""
        if len(self._free) < k:
            self._grow(k - len(self._free))
        cls = NewtonEuler3DR if dim == 3 else NewtonEuler1DR
        out = []
        for _ in range(k):
            r = cls()
            r._table, r._row = self, self._free.pop()
            r._has_contact = True
            out.append(r)
        return out

    def release(self, relations):
        """Give the rows of these relations back (their interactions were removed); they hold their last data."""
        for r in relations:
            if r._table is self:
                r._own = self.data[r._row].copy()
                self._free.append(r._row)
                r._table = None

    def set(self, rows, rel_pc1, rel_pc2, rel_nc):
        """Write the body-frame data of the relations on ``rows`` (k,): points and unit normals (k, 3) each (the
        normals are normalised here)."""
        rows = np.asarray(rows, dtype=np.intp)
        n = np.asarray(rel_nc, dtype=float)
        D = self.data
        D[rows, 0:3] = rel_pc1
        D[rows, 3:6] = rel_pc2
        D[rows, 6:9] = n / np.linalg.norm(n, axis=1, keepdims=True)


_TABLE_OF, _ROW_OF = attrgetter("_table"), attrgetter("_row")


def _contact_data(rels) -> np.ndarray:
    """(k, 9) body-frame data of contact relations: the rows of each table gathered at once (one gather when they
    share a table), the relations holding their own data (released from a table, or never in one) copied."""
    k = len(rels)
    tabs = list(map(_TABLE_OF, rels))
    t = tabs[0] if k else None
    rows = np.fromiter(map(_ROW_OF, rels), dtype=np.intp, count=k)
    if t is not None and tabs.count(t) == k:
        return t.data[rows]
    D = np.empty((k, 9))
    own = [j for j, x in enumerate(tabs) if x is None]
    for j in own:
        r = rels[j]
        if not r._has_contact:
            r._eval(np.array([0, 0, 0, 1.0, 0, 0, 0]))       # raises: no contact point yet
        D[j] = r._own
    for tb in {id(x): x for x in tabs if x is not None}.values():
        held = np.fromiter((x is tb for x in tabs), dtype=bool, count=k)
        D[held] = tb.data[rows[held]]
    return D


def _contacts_of(Q, rels, dim):
    """(y (k,), H) of the contact relations ``rels`` at their stacked positions Q (k, 7 or 14): the formulas of
    :func:`contact_outputs`, read from Q and the relations' data (k, 9) as they are (no copies), H (k, dim, 6·nb)
    of the nb = 1 or 2 bodies of Q's rows."""
    k = Q.shape[0]
    D = _contact_data(rels)
    nb = 2 if Q.shape[1] == 14 else 1
    y = np.empty(k)
    H = np.zeros((k, dim, 6 * nb))
    P = np.empty((3, k, 3))
    _contact_kernel(np.ascontiguousarray(Q, dtype=float), np.full(k, nb == 2), np.ascontiguousarray(D, dtype=float),
                    dim, y, H, P[0], P[1], P[2])
    return y, H


def stack_contacts(relations):
    """(rel_pc1, rel_pc2, rel_nc) of contact relations stacked (k, 3) each: what :func:`contact_outputs` takes."""
    D = _contact_data(list(relations)) if len(relations) else np.zeros((0, 9))
    return D[:, 0:3].copy(), D[:, 3:6].copy(), D[:, 6:9].copy()


def contact_outputs(Q1, Q2, two, rel_pc1, rel_pc2, rel_nc, dim):
    r"""Outputs and twist Jacobians of k contacts at once (the one home of the contact formulas).

    Parameters
    ----------
    Q1, Q2 : (k, 7) positions of body 1 and body 2 of each contact (Q2's row ignored where ``two`` is False).
    two : (k,) bool, whether the contact has a second body.
    rel_pc1, rel_pc2, rel_nc : (k, 3) body-frame points and normal (see :class:`NewtonEuler1DR`).
    dim : 1 (normal only) or 3 (normal, t1, t2).

    Returns
    -------
    y : (k,) signed distances; H : (k, dim, 12) twist Jacobians (columns 6:12 zero without body 2);
    pc1, pc2, nc : (k, 3) world points and normal.
    """
    k = len(Q1)
    Q, D = np.empty((k, 14)), np.empty((k, 9))      # (the kernel's layout: both poses, the three vectors, a row each)
    Q[:, :7], Q[:, 7:] = Q1, Q2
    D[:, 0:3], D[:, 3:6], D[:, 6:9] = rel_pc1, rel_pc2, rel_nc
    y = np.empty(k)
    H = np.zeros((k, dim, 12))
    P1, P2, N = np.empty((k, 3)), np.empty((k, 3)), np.empty((k, 3))
    _contact_kernel(Q, np.ascontiguousarray(two, dtype=np.bool_), D, dim, y, H, P1, P2, N)
    return y, H, P1, P2, N


# ---- compiled helpers, one row at a time (here, beside the kernel that inlines them: numba's cache
# follows the file of the function it compiles)
@njit(cache=True, inline="always")
def _rot(qw, qx, qy, qz, R):  # pragma: no cover  (compiled; same formulas as rotation_matrix)
    R[0, 0] = 1 - 2 * (qy * qy + qz * qz)
    R[0, 1] = 2 * (qx * qy - qw * qz)
    R[0, 2] = 2 * (qx * qz + qw * qy)
    R[1, 0] = 2 * (qx * qy + qw * qz)
    R[1, 1] = 1 - 2 * (qx * qx + qz * qz)
    R[1, 2] = 2 * (qy * qz - qw * qx)
    R[2, 0] = 2 * (qx * qz - qw * qy)
    R[2, 1] = 2 * (qy * qz + qw * qx)
    R[2, 2] = 1 - 2 * (qx * qx + qy * qy)


@njit(cache=True, inline="always")
def _ortho(nx, ny, nz, F):  # pragma: no cover  (compiled; same rule as ortho_base)
    """Rows of F: n, t1, t2."""
    F[0, 0], F[0, 1], F[0, 2] = nx, ny, nz
    ax, ay, az = abs(nx), abs(ny), abs(nz)
    if ax > ay and ax > az:
        a, b, c = ny, -nx, 0.0
    elif not ax > ay and ay > az:
        a, b, c = -ny, nx, 0.0
    else:
        a, b, c = 0.0, -nz, ny
    s = np.sqrt(a * a + b * b + c * c)
    a, b, c = a / s, b / s, c / s
    F[1, 0], F[1, 1], F[1, 2] = a, b, c
    F[2, 0], F[2, 1], F[2, 2] = ny * c - nz * b, nz * a - nx * c, nx * b - ny * a


@njit(cache=True)
def _contact_kernel(Q, two, D, dim, y, H, P1, P2, N):  # pragma: no cover  (compiled)
    """Row j: body 1's pose Q[j, 0:7], body 2's Q[j, 7:14] (where ``two[j]``), the body-frame points and
    normal D[j, 0:3], D[j, 3:6], D[j, 6:9]; H (k, dim, 6·nb) with nb = 2 when any row has two bodies."""
    R1 = np.empty((3, 3))
    R2 = np.empty((3, 3))
    F = np.empty((3, 3))
    A = np.empty((3, 3))
    for j in range(Q.shape[0]):
        _rot(Q[j, 3], Q[j, 4], Q[j, 5], Q[j, 6], R1)
        for i in range(3):
            P1[j, i] = Q[j, i] + R1[i, 0] * D[j, 0] + R1[i, 1] * D[j, 1] + R1[i, 2] * D[j, 2]
        if two[j]:
            _rot(Q[j, 10], Q[j, 11], Q[j, 12], Q[j, 13], R2)
            for i in range(3):
                P2[j, i] = Q[j, 7 + i] + R2[i, 0] * D[j, 3] + R2[i, 1] * D[j, 4] + R2[i, 2] * D[j, 5]
                N[j, i] = R2[i, 0] * D[j, 6] + R2[i, 1] * D[j, 7] + R2[i, 2] * D[j, 8]
        else:
            for i in range(3):
                P2[j, i] = D[j, 3 + i]
                N[j, i] = D[j, 6 + i]
        y[j] = N[j, 0] * (P1[j, 0] - P2[j, 0]) + N[j, 1] * (P1[j, 1] - P2[j, 1]) + N[j, 2] * (P1[j, 2] - P2[j, 2])
        _ortho(N[j, 0], N[j, 1], N[j, 2], F)
        nb = 2 if two[j] else 1
        for b in range(nb):
            if b == 0:
                gx, gy, gz = Q[j, 0] - P1[j, 0], Q[j, 1] - P1[j, 1], Q[j, 2] - P1[j, 2]
                R = R1
                s = 1.0
            else:
                gx, gy, gz = Q[j, 7] - P1[j, 0], Q[j, 8] - P1[j, 1], Q[j, 9] - P1[j, 2]
                R = R2
                s = -1.0
            # A = [G - P]x R
            for c in range(3):
                A[0, c] = -gz * R[1, c] + gy * R[2, c]
                A[1, c] = gz * R[0, c] - gx * R[2, c]
                A[2, c] = -gy * R[0, c] + gx * R[1, c]
            for r in range(dim):
                for c in range(3):
                    H[j, r, 6 * b + c] = s * F[r, c]
                    H[j, r, 6 * b + 3 + c] = s * (F[r, 0] * A[0, c] + F[r, 1] * A[1, c] + F[r, 2] * A[2, c])



@njit(cache=True)
def ne_positions(qk, vk, v, qoff, voff, c1, c2, out):  # pragma: no cover  (compiled)
    r"""Moreau–Jean's kinematics of rigid bodies (Siconos 4.4 ``MoreauJeanOSI::updatePosition``), body b's
    pose at ``qoff[b]`` and twist at ``voff[b]`` of the stacked arrays: with :math:`Δ = c_1 v_k + c_2 v_{k+1}`
    (c1 = h(1-θ), c2 = hθ), the position moves by :math:`Δ_{0:3}` and the quaternion by the exponential map of
    the body-frame rotation vector :math:`φ = Δ_{3:6}`,

    .. math:: \mathbf q_{k+1} = \mathbf q_k \otimes \big(\cos\tfrac{|φ|}2,\ \sin\tfrac{|φ|}2\,\tfrac{φ}{|φ|}\big)

    (Siconos' ``quaternionFromTwistVector`` and ``compositionLawLieGroup``; exact for a constant ω, where
    :math:`\mathbf q + T(\mathbf q)Δ` normalised is O(|φ|³) off), then normalised against rounding. Writes
    ``out`` and returns max |out| over these entries (nan when not finite)."""
    top = 0.0
    bad = False
    for b in range(qoff.shape[0]):
        a, o = qoff[b], voff[b]
        for i in range(3):
            x = qk[a + i] + (c1 * vk[o + i] + c2 * v[o + i])
            out[a + i] = x
            if abs(x) > top:
                top = abs(x)
            elif not abs(x) <= top:
                bad = True
        wx = c1 * vk[o + 3] + c2 * v[o + 3]
        wy = c1 * vk[o + 4] + c2 * v[o + 4]
        wz = c1 * vk[o + 5] + c2 * v[o + 5]
        ang = np.sqrt(wx * wx + wy * wy + wz * wz)
        half = 0.5 * ang
        # sin(|φ|/2)/|φ| = ½ sinc(|φ|/2) (its series below 1e-4: exact in double precision)
        f = 0.5 * (1.0 - half * half / 6.0) if half < 1e-4 else np.sin(half) / ang
        dw, dx, dy, dz = np.cos(half), f * wx, f * wy, f * wz
        qw, qx, qy, qz = qk[a + 3], qk[a + 4], qk[a + 5], qk[a + 6]
        nw = qw * dw - qx * dx - qy * dy - qz * dz
        nx = qw * dx + qx * dw + qy * dz - qz * dy
        ny = qw * dy - qx * dz + qy * dw + qz * dx
        nz = qw * dz + qx * dy - qy * dx + qz * dw
        s = np.sqrt(nw * nw + nx * nx + ny * ny + nz * nz)
        out[a + 3], out[a + 4], out[a + 5], out[a + 6] = nw / s, nx / s, ny / s, nz / s
        if not (s > 0.0 and s < np.inf):
            bad = True
    return np.nan if bad else top
