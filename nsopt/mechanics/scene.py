r"""A scene of rigid bodies in the manner of Siconos' ``MechanicsHdf5Runner``: shapes, dynamic and static
objects, joints and contact laws per pair of collision groups; the contact flow between the collision
detection and the model; the HDF5 record of a run and its reload.

>>> from nsopt import mechanics as mc
>>> sc = mc.Scene()
>>> sc.add_primitive_shape("Cube", "Box", (1.0, 1.0, 1.0))
>>> sc.add_primitive_shape("Ground", "Box", (10.0, 10.0, 1.0))
>>> sc.add_Newton_impact_friction_nsl("contact", mu=0.5)
>>> sc.add_object("cube", [mc.Contactor(sc.shape("Cube"))], translation=[0, 0, 0.52], mass=1.0)
>>> sc.add_object("ground", [mc.Contactor(sc.shape("Ground"))], translation=[0, 0, -0.5])
>>> model = sc.build()
>>> len(model.update_contacts())          # the cube's four bottom corners, linked as NewtonEuler3DR
4

The flow of one step (``SceneModel``; the time step itself is :class:`nsopt.modeling.TimeStepping`'s):
the collision manager detects the contacts at the bodies' poses; :meth:`SceneModel.update_contacts` links
an interaction (a :class:`~nsopt.modeling.NewtonEuler3DR` with the law of the pair of groups) for each
new contact point through ``nsds.link``, moves the points of the persisting ones (the same Interaction
object, so its multiplier and warm start survive) and removes those that vanished through
``nsds.remove_interaction``; the integrator then steps the model. A step of :meth:`Scene.run` is that pipeline,
detect → assemble and solve → update → record, filling one :class:`SceneStep` (the step's figures) that the
observers (the :class:`Recorder`, the problem writer, ``Scene.run(observers=)``) and ``on_step`` get.

Record (HDF5, :class:`Recorder` writes, :func:`load_record` reads): attributes ``format`` =
"nsopt-mechanics", ``version`` = 1, ``scene`` (the scene's description as JSON: shapes, objects, joints,
laws, gravity, margin) and the run's settings (``h``, ``theta``, ``osns``, ``method``, ``tol``, ...);
datasets grown step by step (a run cut short keeps every complete step):

- ``steps/t`` (S,), ``steps/q`` (S, n, 7), ``steps/v`` (S, n, 6), ``steps/status`` (S,) strings,
  ``steps/nit`` (S,), ``steps/error`` (S,), ``steps/contacts`` (S + 1,) offsets into the contact rows;
- ``contacts/body1``, ``contacts/body2``, ``contacts/static2``, ``contacts/id`` (K,), ``contacts/pc1``,
  ``contacts/pc2``, ``contacts/normal``, ``contacts/force`` (K, 3), ``contacts/distance`` (K,),
  ``contacts/active`` (K,) bool: the rows of step s are ``steps/contacts[s]:steps/contacts[s+1]``, the points
  detected at the start of the step; ``force`` is the contact impulse over the step divided by h, in the
  contact frame (normal, t1, t2); ``active``: the point was in the step's one-step problem;
- ``resume`` (written when a run ends): the collision manager's memory (``keys``, ``ids``, ``loc``,
  ``next_id``) and the warm starts (``contact_ids``, ``contact_lambda``, ``joint_lambda``), what
  :meth:`Scene.run` needs to continue the run exactly (``continue_from=``).

The same file holds the run in Siconos' mechanics layout (group ``data`` and the root attribute ``dimension``:
:mod:`nsopt.mechanics.siconos_hdf5`), which Siconos' ``MechanicsHdf5Runner`` reads (and continues) and
``siconos_vview`` shows; :func:`~nsopt.mechanics.load_siconos_record` reads a record that Siconos wrote.

A record reloads (:func:`load_record`) into its arrays and its scene (:meth:`Record.scene`), whose bodies
start from the last recorded state (``Record.scene(step=-1)``), so that a run continues where it stopped.
"""

from __future__ import annotations

import json
import numbers
import os
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter
from pathlib import Path
from types import MappingProxyType

import numpy as np

from ..exceptions import FormatError, ModelingError
from ..io._target import check_file
from ..modeling import EqualityConditionNSL, Interaction, NewtonEulerDS, NewtonImpactFrictionNSL
from ..modeling import NonSmoothDynamicalSystem
from ..modeling import joints as _joints
from ..modeling import _rotation as rot
from ..modeling._check import matrix, scalar, vector
from ..modeling.newton_euler import ContactTable, kinetic_energy
from . import _collision_kernels as kern
from .collision import CollisionManager, Contacts
from .shapes import Box, Capsule, Cone, Contactor, ConvexMesh, Cylinder, HalfSpace, Shape, Sphere, group_index, quaternion

__all__ = ["Scene", "SceneModel", "SceneRun", "SceneStep", "Recorder", "Record", "load_record", "FORMAT", "VERSION"]

FORMAT, VERSION = "nsopt-mechanics", 1
_PRIMITIVES = MappingProxyType({"Sphere": Sphere, "Box": Box, "Capsule": Capsule, "Cylinder": Cylinder, "Cone": Cone})
_N_PARAMS = MappingProxyType({"Sphere": 1, "Box": 3, "Capsule": 2, "Cylinder": 2, "Cone": 2})
_JOINTS = MappingProxyType({"KneeJointR": _joints.KneeJointR, "PivotJointR": _joints.PivotJointR,
                            "PrismaticJointR": _joints.PrismaticJointR, "FixedJointR": _joints.FixedJointR})


def _shape_spec(shape: Shape):
    if isinstance(shape, ConvexMesh):
        return ["Convex", shape.vertices.tolist()]
    if isinstance(shape, HalfSpace):
        return ["HalfSpace", [*shape.normal.tolist(), shape.offset]]
    return [shape.kind, list(shape.params())]


def _shape_from_spec(spec):
    kind, params = spec
    if kind == "Convex":
        return ConvexMesh(params)
    if kind == "HalfSpace":
        return HalfSpace(params[:3], params[3])
    if not isinstance(kind, str) or kind not in _PRIMITIVES:
        raise ModelingError("Scene", "shape", f"unknown primitive {kind!r}; known: {sorted(_PRIMITIVES)}")
    if not isinstance(params, (list, tuple)) or len(params) != _N_PARAMS[kind]:
        raise ModelingError("Scene", "params", f"a {kind} takes {_N_PARAMS[kind]} parameter(s), got {params!r}")
    cls = _PRIMITIVES[kind]
    return cls(params) if cls is Box else cls(*params)


def _name(name, owner, field="name") -> str:
    if not isinstance(name, str):
        raise ModelingError(owner, field, f"must be a str, got {name!r} ({type(name).__name__})")
    return name


def _body_size(contactors) -> float:
    """L: the largest coordinate of a body's contactors (their offsets and their shapes' sizes), computed without
    squares (no overflow)."""
    def size(shape):
        return float(np.abs(shape.vertices).max()) if isinstance(shape, ConvexMesh) else float(max(shape.params()))
    return max(max(float(np.abs(c.translation).max()), size(c.shape)) for c in contactors)


def _scaled(shape, f):
    """The shape scaled by f."""
    if isinstance(shape, ConvexMesh):
        return ConvexMesh(shape.vertices * f)
    if isinstance(shape, Box):
        return Box([e * f for e in shape.extents])
    return type(shape)(*[p * f for p in shape.params()])


def mass_properties(contactors, mass):
    """The centre of mass c (3,) of a body's contactors' solids, of uniform density and total ``mass``, and their
    inertia (3, 3) about c (from their triangle meshes: exact for boxes and convex meshes, within a few % for
    curved shapes): I_c = Σ_parts [I_part + m_part (|d|² 1 − d dᵀ)], d the part's centre minus c.

    The solids are measured in units of the body's size L (:func:`_body_size`): c = L c₁ and I = m L² I₁ / V₁
    from the solids scaled to unit size (volume V₁), so that neither a large body (V ~ L³) nor a small one
    (trimesh merges vertices closer than 1e-8) loses its inertia; I is not finite when m L² overflows."""
    import trimesh

    from .viewer import shape_mesh
    L = _body_size(contactors)
    parts = []
    for c in contactors:
        V, F = shape_mesh(_scaled(c.shape, 1.0 / L))
        parts.append(trimesh.Trimesh(V @ rot.rotation_matrix(c.orientation).T + c.translation / L, F, process=False))
    vol = sum(p.volume for p in parts)
    centre = sum(p.volume * p.center_mass for p in parts) / vol
    I = np.zeros((3, 3))
    for p in parts:
        # trimesh's inertia about the part's centre of mass at density 1, moved to the body's (parallel axes)
        d = p.center_mass - centre
        I += p.moment_inertia + p.volume * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return centre * L, (I / vol) * (mass * L * L)


def _first_difference(a, b, path):
    """The first place (path, a's value, b's value) where two descriptions differ (numbers to a relative 1e-9,
    lists by length and items, dicts by keys and values), None when they agree."""
    if isinstance(a, dict) and isinstance(b, dict):
        if sorted(a) != sorted(b):
            return (path or "keys", sorted(a), sorted(b))
        for k in a:
            d = _first_difference(a[k], b[k], f"{path}.{k}" if path else k)
            if d is not None:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return (f"{path} (length)", len(a), len(b))
        for k, (x, y) in enumerate(zip(a, b)):
            d = _first_difference(x, y, f"{path}[{k}]")
            if d is not None:
                return d
        return None
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool) and not isinstance(b, bool):
        return None if abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300) or a == b else (path, a, b)
    return None if a == b else (path, a, b)


def _orientation(orientation, owner) -> np.ndarray:
    """A unit quaternion from a quaternion (w, x, y, z) or an (axis, angle) pair, checked (``owner.orientation``)."""
    if isinstance(orientation, (list, tuple)) and len(orientation) == 2:
        axis = vector(orientation[0], owner, "orientation axis", 3)
        if not np.linalg.norm(axis) > 0:
            raise ModelingError(owner, "orientation axis", "is the zero vector")
        angle = scalar(orientation[1], owner, "orientation angle")
        return rot.quat_exp(angle * axis / np.linalg.norm(axis))
    return quaternion(orientation, owner, "orientation")


def _check_computed_inertia(owner, contactors, mass, centre, I):
    """The inertia computed from a body's shapes (:func:`mass_properties`: no ``inertia`` given), checked: finite and
    positive definite, else an error saying that it was computed, from what, and why it is not usable."""
    L = _body_size(contactors)
    why = None
    if not (np.isfinite(I).all() and np.isfinite(centre).all()):
        why = f"m L² = {mass:.3g} x ({L:.3g})² overflows the floating-point range"
    elif np.linalg.eigvalsh(0.5 * (I + I.T)).min() <= 0:
        why = f"m L² = {mass:.3g} x ({L:.3g})² underflows: the inertia is not positive definite"
    if why is not None:
        raise ModelingError(owner, "inertia", f"was not given, so it was computed from the shapes (uniform density, "
                                              f"mass {mass:g}, size L = {L:.3g}): {why}; give inertia= or use units "
                                              f"in which the body's size and mass are moderate")


def mesh_inertia(contactors, mass):
    """The inertia (3, 3) about the body origin of its contactors' solids, of uniform density and total
    ``mass`` (:func:`mass_properties`' inertia moved from the centre of mass c to the origin)."""
    c, I = mass_properties(contactors, mass)
    return I + mass * (np.dot(c, c) * np.eye(3) - np.outer(c, c))



class Scene:
    """Shapes, objects, joints and laws (Siconos ``MechanicsHdf5Runner``'s ``add_*`` methods, same names).

    Parameters
    ----------
    gravity : (3,) array_like, default (0, 0, -9.81)
        Acceleration applied to every dynamic body (fext = m g).
    margin : float, default 0.05
        The collision margin (contacts are detected closer than this).

    Examples
    --------
    >>> from nsopt import mechanics as mc
    >>> sc = mc.Scene()
    >>> sc.add_primitive_shape("Ball", "Sphere", 0.1)
    >>> sc.add_primitive_shape("Ground", "Box", (2.0, 2.0, 0.2))
    >>> sc.add_Newton_impact_friction_nsl("contact", mu=0.3)
    >>> sc.add_object("ball", ["Ball"], translation=[0, 0, 0.1], mass=1.0)     # resting on the ground
    >>> sc.add_object("ground", ["Ground"], translation=[0, 0, -0.1])          # static (no mass)
    >>> run = sc.run(T=0.03, h=0.01)
    >>> run
    SceneRun(3 steps, 1 bodies, 0 failed solves, 3 contact points over the run)
    >>> round(float(run.q[-1, 0, 2]), 6)                                       # the ball stays at rest
    0.1
    """

    def __init__(self, *, gravity=(0.0, 0.0, -9.81), margin: float = 0.05):
        self.gravity = vector(gravity, "Scene", "gravity", 3)
        self.margin = scalar(margin, "Scene", "margin", low=0.0)
        self._shapes: dict = {}
        self.objects: list[dict] = []          # name, contactors, pose, twist, mass (None: static), inertia
        self.joints: list[dict] = []
        self.laws: dict = {}                   # (g1, g2) -> (name, mu, e)

    # ---- definitions
    def add_primitive_shape(self, name: str, primitive: str, params):
        """A named primitive: "Sphere" (radius), "Box" (extents), "Capsule"/"Cylinder" (radius, length),
        "Cone" (radius, height).

        Parameters
        ----------
        name : str
            The name objects use (:meth:`add_object`'s contactors, :meth:`shape`).
        primitive : {"Sphere", "Box", "Capsule", "Cylinder", "Cone"}
            Siconos' primitive name.
        params : float or sequence of float
            Its parameters, as above.

        Raises
        ------
        ModelingError
            When the primitive is unknown or its parameters are not finite positive numbers.

        Examples
        --------
        >>> from nsopt import mechanics as mc
        >>> sc = mc.Scene()
        >>> sc.add_primitive_shape("Rod", "Capsule", (0.05, 1.0))
        >>> sc.shape("Rod")
        Capsule(0.05, 1.0)
        """
        _name(name, "Scene", "shape name")
        if isinstance(params, np.ndarray):
            params = params.tolist()
        self._shapes[name] = _shape_from_spec([primitive, list(params) if isinstance(params, (list, tuple)) else [params]])

    def add_convex_shape(self, name: str, points):
        """A named :class:`ConvexMesh`: the convex hull of ``points`` (n, 3) (Siconos' ``add_convex_shape``).

        Raises
        ------
        ModelingError
            When the points are not a finite (n >= 4, 3) array or are coplanar.

        Examples
        --------
        >>> from nsopt import mechanics as mc
        >>> sc = mc.Scene()
        >>> sc.add_convex_shape("Tet", [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
        >>> sc.shape("Tet")
        ConvexMesh(4,)
        """
        self._shapes[_name(name, "Scene", "shape name")] = ConvexMesh(points)

    def add_shape(self, name: str, shape: Shape):
        """A named shape object (any :class:`Shape`: one built by hand, or read by :meth:`ConvexMesh.from_file`).

        Parameters
        ----------
        name : str
            The name objects use.
        shape : Shape
            The shape.

        Raises
        ------
        ModelingError
            When ``shape`` is not an nsopt.mechanics shape.

        Examples
        --------
        >>> from nsopt import mechanics as mc
        >>> sc = mc.Scene()
        >>> sc.add_shape("Floor", mc.HalfSpace([0, 0, 1]))
        >>> sc.shape("Floor").normal.tolist()
        [0.0, 0.0, 1.0]
        """
        if not isinstance(shape, Shape):
            raise ModelingError("Scene", "shape", f"expected an nsopt.mechanics shape, got {type(shape).__name__}")
        self._shapes[name] = shape

    def shape(self, name: str) -> Shape:
        """The shape defined under ``name``.

        Raises
        ------
        ModelingError
            When no shape has that name (the message lists the defined ones).

        Examples
        --------
        >>> from nsopt import mechanics as mc
        >>> sc = mc.Scene()
        >>> sc.add_primitive_shape("Ball", "Sphere", 0.1)
        >>> sc.shape("Ball")
        Sphere(0.1,)
        """
        if name not in self._shapes:
            raise ModelingError("Scene", "shape", f"no shape named {name!r}; defined: {sorted(self._shapes)}")
        return self._shapes[name]

    def add_Newton_impact_friction_nsl(self, name: str, mu: float, e: float = 0.0, collision_group1: int = 0,  # noqa: N802
                                       collision_group2: int = 0):
        """The contact law between two collision groups (Siconos' name and defaults). A pair of groups without a
        law does not collide.

        Parameters
        ----------
        name : str
            The law's name.
        mu : float
            The Coulomb friction coefficient.
        e : float, default 0.0
            The normal Newton restitution coefficient (the tangential one is 0).
        collision_group1, collision_group2 : int, default 0
            The pair of groups (in either order) the law applies to.

        Examples
        --------
        >>> from nsopt import mechanics as mc
        >>> sc = mc.Scene()
        >>> sc.add_Newton_impact_friction_nsl("bouncy", mu=0.5, e=0.8, collision_group1=1)
        >>> law = sc.laws[(0, 1)]
        >>> law.mu, law.en
        (0.5, 0.8)
        """
        law = NewtonImpactFrictionNSL(e, 0.0, mu, 3, name=name)
        g1 = group_index(collision_group1, f"Scene law {name!r}", "collision_group1")
        g2 = group_index(collision_group2, f"Scene law {name!r}", "collision_group2")
        g = (min(g1, g2), max(g1, g2))
        self.laws[g] = law

    def add_object(self, name: str, contactors, translation, orientation=(1.0, 0.0, 0.0, 0.0), velocity=(0.0,) * 6,
                   mass=None, inertia=None, *, force=None, moment=None):
        """A body (``mass`` given) or a static object (``mass=None``), as Siconos' ``add_object``: contactors
        (Contactor objects, or shape names), initial translation, orientation (unit quaternion (w, x, y, z), or
        (axis, angle)), twist; ``inertia`` (3,) or (3, 3), default from the contactors' solids; a constant
        ``force`` (3,) (world frame, added to the weight) and ``moment`` (3,) (body frame) on a body.

        Parameters
        ----------
        name : str
            A name, unique in the scene.
        contactors : Contactor, str, or list of them
            Contactor objects, or names of shapes defined in the scene (a contactor at the body's origin).
        translation : (3,) array_like
            The initial position.
        orientation : (4,) array_like or (axis, angle), default (1, 0, 0, 0)
            The initial orientation: a quaternion (w, x, y, z) (normalised here), or an axis (3,) and an angle
            in radians.
        velocity : (6,) array_like, default zeros
            The initial twist (linear velocity in the world frame, angular velocity in the body frame).
        mass : float, optional
            The mass; None: a static object.
        inertia : (3,) or (3, 3) array_like, optional
            The inertia about the centre of mass in the body frame; default from the contactors' solids at
            uniform density (:func:`mass_properties`). A body's frame is its centre of mass (``NewtonEulerDS``):
            given ``inertia``, the origin of the frame given is taken to be it; without ``inertia``, when the
            solids' centre of mass c is off the origin (a cone: c is a quarter of its height below its middle),
            the body's frame is moved to it: the contactors are shifted by −c and ``translation`` by R c, so the
            shapes stay where they were placed, and the body's pose (``run.q``, the record) is then its centre
            of mass' (``objects[k]["com_offset"]`` = c; points of joints given in its frame move with it).
        force : (3,) array_like, optional
            A constant force (world frame), added to the weight.
        moment : (3,) array_like, optional
            A constant moment (body frame).

        Raises
        ------
        ModelingError
            When the name is taken, a shape name is not defined, a static object is given a force or moment, a value
            has the wrong type, shape or is not finite (a static object at x = inf), the quaternion is zero, the
            mass is not > 0, or the inertia computed from the shapes is not finite (the message says it was
            computed); each message names the object and the argument.

        Examples
        --------
        >>> import numpy as np
        >>> from nsopt import mechanics as mc
        >>> sc = mc.Scene()
        >>> sc.add_primitive_shape("Rod", "Box", (0.05, 0.05, 1.0))
        >>> sc.add_object("rod", ["Rod"], translation=[0.5, 0, 0], orientation=([0, 1, 0], np.pi / 2), mass=1.0)
        >>> np.diag(sc.objects[0]["inertia"]).round(5).tolist()          # m (b² + c²) / 12, ...
        [0.08354, 0.08354, 0.00042]
        """
        _name(name, "Scene", "object name")
        if any(o["name"] == name for o in self.objects):
            raise ModelingError("Scene", "name", f"an object named {name!r} exists")
        o = f"Scene object {name!r}"
        given = [contactors] if isinstance(contactors, (Contactor, str)) else contactors
        if not isinstance(given, (list, tuple)) or not given:
            raise ModelingError(o, "contactors", f"must be a non-empty list of Contactor objects or shape names, got "
                                                 f"{contactors!r}")
        for k, c in enumerate(given):
            if not isinstance(c, (Contactor, str)):
                raise ModelingError(o, f"contactors[{k}]", f"is a {type(c).__name__}, expected a Contactor or a shape name")
        cts = [Contactor(self.shape(c)) if isinstance(c, str) else c for c in given]
        pose = np.r_[vector(translation, o, "translation", 3), _orientation(orientation, o)]
        twist = vector(velocity, o, "velocity", 6)
        if mass is not None:
            mass = scalar(mass, o, "mass", low=0.0, low_open=True)
        if inertia is not None:
            I = np.asarray(inertia, dtype=object)
            inertia = vector(inertia, o, "inertia", 3) if I.ndim == 1 else matrix(inertia, o, "inertia", (3, 3))
        if mass is None and (force is not None or moment is not None):
            raise ModelingError("Scene", f"object {name!r}", "a static object takes no force or moment")
        force = None if force is None else vector(force, o, "force", 3)
        moment = None if moment is None else vector(moment, o, "moment", 3)
        com = np.zeros(3)
        if mass is not None and inertia is None:
            com, inertia = mass_properties(cts, mass)
            _check_computed_inertia(o, cts, mass, com, inertia)
            if np.linalg.norm(com) > 1e-12 * max(c.shape.bounding_radius() + np.linalg.norm(c.translation) for c in cts):
                cts = [Contactor(c.shape, c.translation - com, c.orientation, c.group) for c in cts]
                pose[:3] += rot.rotation_matrix(pose[3:]) @ com
            else:
                com = np.zeros(3)
        self.objects.append(dict(name=name, contactors=cts, pose=pose, twist=twist, mass=mass,
                                 inertia=None if inertia is None else np.asarray(inertia, dtype=float),
                                 force=force, moment=moment, com_offset=com))

    def add_joint(self, name: str, object1: str, object2: str | None = None, points=((0.0, 0.0, 0.0),),
                  axes=((0.0, 1.0, 0.0),), joint_class: str = "PivotJointR", absolute: bool = True,
                  allow_self_collide: bool = False):
        """A joint (Siconos' ``add_joint``): ``joint_class`` in KneeJointR, PivotJointR, PrismaticJointR,
        FixedJointR; points and axes in the world frame when ``absolute``, else in object1's frame.

        Parameters
        ----------
        name : str
            The joint's name.
        object1 : str
            The first dynamic object.
        object2 : str, optional
            The second dynamic object; None: the world.
        points : sequence of (3,), default ((0, 0, 0),)
            The joint point (the first is used: KneeJointR, PivotJointR).
        axes : sequence of (3,), default ((0, 1, 0),)
            The axis (the first is used: PivotJointR's hinge, PrismaticJointR's slide).
        joint_class : {"KneeJointR", "PivotJointR", "PrismaticJointR", "FixedJointR"}, default "PivotJointR"
            The joint (:mod:`nsopt.modeling.joints`).
        absolute : bool, default True
            Points and axes in the world frame, else in object1's frame.
        allow_self_collide : bool, default False
            Whether the two joined objects may still collide.

        Raises
        ------
        ModelingError
            When ``joint_class`` is unknown, the points or axes are not finite (k, 3) arrays, the joint's point
            or axis is missing, or its axis is zero (the message names the joint and the field); at :meth:`build`,
            when an object is not a dynamic object of the scene.

        Examples
        --------
        A pendulum: a rod hinged to the world at the origin, starting horizontal. A scene with joints steps a
        generic mechanical problem ("gmp"), solved by "nsn" unless ``method=`` says otherwise.

        >>> import numpy as np
        >>> from nsopt import mechanics as mc
        >>> sc = mc.Scene()
        >>> sc.add_primitive_shape("Rod", "Box", (0.05, 0.05, 1.0))
        >>> sc.add_object("rod", ["Rod"], translation=[0.5, 0, 0], orientation=([0, 1, 0], np.pi / 2), mass=1.0)
        >>> sc.add_joint("hinge", "rod", points=[[0, 0, 0]], axes=[[0, 1, 0]], joint_class="PivotJointR")
        >>> run = sc.run(T=0.05, h=0.01)                                  # osns "gmp", method "nsn"
        >>> np.linalg.norm(run.q[:, 0, :3], axis=1).round(4).tolist()   # the centre stays 0.5 from the pivot
        [0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
        """
        if not isinstance(joint_class, str) or joint_class not in _JOINTS:
            raise ModelingError("Scene", "joint_class", f"unknown joint {joint_class!r}; known: {sorted(_JOINTS)}")
        _name(name, "Scene", "joint name")
        o = f"Scene joint {name!r}"
        _name(object1, o, "object1")
        if object2 is not None:
            _name(object2, o, "object2")
        P = matrix(points, o, "points", (None, 3))
        A = matrix(axes, o, "axes", (None, 3))
        if joint_class in ("KneeJointR", "PivotJointR") and not P.shape[0]:
            raise ModelingError(o, "points", f"is empty: a {joint_class} needs its joint point")
        if joint_class in ("PivotJointR", "PrismaticJointR"):
            if not A.shape[0]:
                raise ModelingError(o, "axes", f"is empty: a {joint_class} needs its axis")
            if not np.linalg.norm(A[0]) > 0:
                raise ModelingError(o, "axes", "the axis is the zero vector")
        self.joints.append(dict(name=name, object1=object1, object2=object2, points=P.tolist(), axes=A.tolist(),
                                joint_class=joint_class, absolute=bool(absolute),
                                allow_self_collide=bool(allow_self_collide)))

    # ---- description (the record's "scene" attribute)
    def describe(self) -> dict:
        """The scene as plain data (JSON-ready): gravity, margin, objects, joints, laws; the record's ``scene``
        attribute, read back by :meth:`from_description`.

        Examples
        --------
        >>> from nsopt import mechanics as mc
        >>> sc = mc.Scene()
        >>> sc.add_object("ball", mc.Contactor(mc.Sphere(0.1)), translation=[0, 0, 1], mass=2.0)
        >>> d = sc.describe()
        >>> d["objects"][0]["contactors"][0]["shape"], d["objects"][0]["mass"]
        (['Sphere', [0.1]], 2.0)
        >>> mc.Scene.from_description(d).describe() == d
        True
        """
        def cts(cs):
            return [dict(shape=_shape_spec(c.shape), translation=c.translation.tolist(), orientation=c.orientation.tolist(),
                         group=c.group) for c in cs]
        return dict(gravity=self.gravity.tolist(), margin=self.margin,
                    objects=[dict(name=o["name"], contactors=cts(o["contactors"]), pose=o["pose"].tolist(),
                                  twist=o["twist"].tolist(), mass=o["mass"],
                                  inertia=None if o["inertia"] is None else np.asarray(o["inertia"]).tolist(),
                                  force=None if o.get("force") is None else o["force"].tolist(),
                                  moment=None if o.get("moment") is None else o["moment"].tolist(),
                                  com_offset=np.asarray(o.get("com_offset", np.zeros(3))).tolist())
                             for o in self.objects],
                    joints=self.joints,
                    laws=[dict(name=law.name, mu=law.mu, e=law.en, groups=list(g)) for g, law in self.laws.items()])

    @classmethod
    def from_description(cls, d: dict) -> "Scene":
        """The scene of a :meth:`describe` dictionary (see there for an example)."""
        sc = cls(gravity=d["gravity"], margin=d["margin"])
        for law in d["laws"]:
            sc.add_Newton_impact_friction_nsl(law["name"], law["mu"], law["e"], *law["groups"])
        for o in d["objects"]:
            cs = [Contactor(_shape_from_spec(c["shape"]), c["translation"], c["orientation"], c["group"]) for c in o["contactors"]]
            sc.add_object(o["name"], cs, o["pose"][:3], o["pose"][3:], o["twist"], o["mass"], o["inertia"],
                          force=o.get("force"), moment=o.get("moment"))
            sc.objects[-1]["com_offset"] = np.asarray(o.get("com_offset", np.zeros(3)), dtype=float)
        for j in d["joints"]:
            sc.add_joint(**j)
        return sc

    # ---- the checks of a run
    def _check_run(self, T, h, osns, on_step, check, record, write_problems, continue_from, observers, **flags):
        """:meth:`run`'s own arguments, checked before anything is built (the solver's are checked by
        :class:`~nsopt.modeling.TimeStepping` before the first step); returns T and h as floats."""
        from ..modeling.simulation import _HOLDS, OSNS_BUILDERS, OSNS_KINDS, infer_osns
        T = scalar(T, "Scene", "T")
        h = scalar(h, "Scene", "h", low=0.0, low_open=True)
        if osns is not None:
            if not isinstance(osns, str) or (osns not in OSNS_KINDS and osns not in OSNS_BUILDERS):
                raise ModelingError("Scene", "osns", f"unknown one-step problem kind {osns!r}; expected one of "
                                                     f"{OSNS_KINDS}")
            blocks = {law.block for law in self.laws.values()} | ({"equality"} if self.joints else set())
            if blocks - _HOLDS[osns]:
                raise ModelingError("Scene", "osns", f"a {osns!r} problem cannot hold the scene's laws (block kinds "
                                                     f"{sorted(blocks)}: friction would be dropped from every contact); "
                                                     f"use osns={infer_osns(blocks)!r}")
        if on_step is not None and not callable(on_step):
            raise ModelingError("Scene", "on_step", f"must be a callable on_step(step) or None, got {on_step!r}")
        if isinstance(observers, (str, bytes)) or not isinstance(observers, (list, tuple)) \
                or not all(callable(o) for o in observers):
            raise ModelingError("Scene", "observers", f"must be a sequence of callables observer(step), got "
                                                      f"{observers!r}")
        if check is not None:
            scalar(check, "Scene", "check", low=0.0)
        for field, v in (("record", record), ("write_problems", write_problems)):
            if v is not None and not isinstance(v, (str, os.PathLike)):
                raise ModelingError("Scene", field, f"must be a path or None, got {type(v).__name__}")
        if continue_from is not None and not isinstance(continue_from, (str, os.PathLike, Record)):
            raise ModelingError("Scene", "continue_from", f"must be a record (a path or a Record), got "
                                                          f"{type(continue_from).__name__}")
        for field, v in flags.items():
            if not isinstance(v, (bool, np.bool_)):
                raise ModelingError("Scene", field, f"must be True or False, got {v!r}")
        return T, h

    def _check_same_scene(self, rec: "Record"):
        """A record continued by :meth:`run` must be of this scene: the same gravity, margin, laws, joints and objects
        (names, shapes, contactors, masses, inertias, forces, static poses; the bodies' poses and twists are the
        record's to give), to round-off; a :class:`ModelingError` naming the first difference otherwise."""
        mine, theirs = self.describe(), rec.description
        for d in (mine, theirs):
            for o in d.get("objects", ()):
                if isinstance(o, dict) and o.get("mass") is not None:
                    o.pop("pose", None)
                    o.pop("twist", None)
        where = _first_difference(json.loads(json.dumps(mine)), theirs, "")
        if where is not None:
            path, a, b = where
            raise ModelingError("Scene", "continue_from", f"the record {Path(rec.path).name} is of another scene: its "
                                                          f"{path or 'description'} is {b!r}, this scene's {a!r}")

    # ---- the model
    def build(self, t0: float = 0.0, T: float = 1.0) -> "SceneModel":
        """The model: a NonSmoothDynamicalSystem with a NewtonEulerDS per dynamic object (fext = m g) and an
        interaction per joint, and the collision manager with the objects' contactors.

        Parameters
        ----------
        t0, T : float, default 0.0 and 1.0
            The time interval of the NonSmoothDynamicalSystem.

        Returns
        -------
        SceneModel
            The model; its contacts are linked by :meth:`SceneModel.update_contacts`.

        Raises
        ------
        ModelingError
            When a joint names an object that is not a dynamic object.

        Examples
        --------
        See the module docstring and :class:`SceneModel`.
        """
        nsds = NonSmoothDynamicalSystem(t0, T)
        cm = CollisionManager(margin=self.margin)
        bodies, names, index = [], [], {}
        for o in self.objects:
            if o["mass"] is None:
                cm.add_static(o["contactors"], o["pose"])
                continue
            f = o["mass"] * self.gravity + (0.0 if o.get("force") is None else o["force"])
            ds = NewtonEulerDS(o["pose"], o["twist"], o["mass"], o["inertia"], fext=f, mext=o.get("moment"), name=o["name"])
            nsds.insert_dynamical_system(ds)
            index[o["name"]] = cm.add_body(o["contactors"], o["pose"])
            bodies.append(ds)
            names.append(o["name"])
        groups = sorted({c.group for o in self.objects for c in o["contactors"]})
        for a in groups:
            for b in groups:
                if a <= b and (a, b) not in self.laws:
                    cm.set_group_pair(a, b, False)
        joints = []
        for j in self.joints:
            for key in ("object1", "object2"):
                if j[key] is not None and j[key] not in index:
                    raise ModelingError("Scene", f"joint {j['name']!r}", f"{key} {j[key]!r} is not a dynamic object")
            d1 = bodies[index[j["object1"]]]
            d2 = None if j["object2"] is None else bodies[index[j["object2"]]]
            cls = _JOINTS[j["joint_class"]]
            P = j["points"][0] if j["points"] else None          # (checked by add_joint where the class needs it)
            A = j["axes"][0] if j["axes"] else None
            if not j["absolute"] and P is not None:   # a point in object1's frame as given: its frame is at its centre of mass
                P = np.asarray(P, dtype=float) - self.objects[[o["name"] for o in self.objects].index(j["object1"])].get(
                    "com_offset", np.zeros(3))
            if cls is _joints.KneeJointR:
                rel = cls(P, j["absolute"], d1, d2, name=j["name"])
            elif cls is _joints.PivotJointR:
                rel = cls(P, A, j["absolute"], d1, d2, name=j["name"])
            elif cls is _joints.PrismaticJointR:
                rel = cls(A, j["absolute"], d1, d2, name=j["name"])
            else:
                rel = cls(d1, d2, name=j["name"])
            inter = Interaction(EqualityConditionNSL(rel.nb_constraints), rel, name=j["name"])
            nsds.link(inter, d1, *(() if d2 is None else (d2,)))
            joints.append(inter)
            if d2 is not None and not j["allow_self_collide"]:
                cm.exclude_pair(index[j["object1"]], index[j["object2"]])
        return SceneModel(self, nsds, bodies, names, cm, joints)

    # ---- a run
    def run(self, T: float, h: float = 5e-3, *, theta: float = 0.50001, osns: str | None = None,
            method: str | None = None, tol: float = 1e-6, record=None, overwrite: bool = False, write_problems=None,
            continue_from=None, progress: bool = False, keep_states: bool = True, check: float | None = 1e-3,
            fallback=(), on_step=None, observers=(), projection=None, gamma=None, activation=None,
            activation_threshold=0.0, **options) -> "SceneRun":
        r"""Simulate the scene to time ``T``: at each step the contacts are detected at the current poses
        (:meth:`SceneModel.update_contacts`: new points linked, vanished ones removed, the others moved), their
        outputs updated (:meth:`~nsopt.modeling.TimeStepping.update_outputs`), then one Moreau–Jean step
        (:class:`~nsopt.modeling.MoreauJeanOSI` with ``theta``; one-step problem ``osns``: "fc3d", or "gmp" when
        the scene has joints; ``method``, ``tol``, ``fallback`` and ``options`` go to :func:`nsopt.solve`).

        Parameters
        ----------
        T : float
            The final time.
        h : float, default 5e-3
            The time step.
        theta : float, default 0.50001
            Moreau–Jean's θ.
        osns : {"fc3d", "gmp"}, optional
            The one-step problem; default "fc3d", or "gmp" when the scene has joints.
        method : str, optional
            The :func:`nsopt.solve` method; default: the first method of the one-step problem's run order in
            :data:`nsopt.policy.POLICY` ("nsn-ac" for "fc3d", "nsn" for "gmp"), with that order's fallbacks
            when ``fallback`` is empty (:meth:`nsopt.policy.MethodPolicy.attempt`, the rule of every step).
        tol : float, default 1e-6
            The solver's tolerance.
        record : str or path-like, optional
            A path: the run is written there step by step (:class:`Recorder`: poses, twists, contacts, forces,
            the solver's status; at the end, what a continued run needs).
        overwrite : bool, default False
            Replace an existing record (and problem files).
        write_problems : str or path-like, optional
            A folder receiving each step's one-step problem (FCLIB for friction contact: a corpus for
            ``nsopt compare``; an observer of the steps, :class:`~nsopt.modeling.simulation.ProblemWriter`).
        continue_from : str, path-like or Record, optional
            A record of this scene: the run starts from its last step (poses, twists, the contact ids and the
            warm starts of the contacts and joints) and goes to ``T``.
        progress : bool, default False
            Show a tqdm progress bar.
        keep_states : bool, default True
            Keep the poses and twists of every step in memory (``SceneRun.q``, ``SceneRun.v``).
        check : float or None, default 1e-3
            Shapes interpenetrating deeper than this at the start raise
            :class:`~nsopt.mechanics.InterpenetrationError` (None: no check); not for a run continued from a record
            (its poses are the recorded run's, with the scheme's penetration of bodies at rest).
        fallback : sequence of str, default ()
            Methods tried when ``method`` fails (:class:`~nsopt.modeling.TimeStepping`); default: the policy's
            fallbacks when ``method`` is not given, none when it is.
        on_step : callable, optional
            ``on_step(step)``, called after each step with its :class:`SceneStep` (the step's figures, forces,
            problem, solution and times per phase), after the observers; raising ``StopIteration`` ends the run
            there (the record keeps every step and what a continued run needs).
        observers : sequence of callables, default ()
            Each is called with every :class:`SceneStep` (the record phase, after the record and the problem
            writer, which are observers too); one with a ``finish(run)`` method has it called when the run ends
            (also when it stops on an error). A writer of the steps' figures, for example.
        projection : bool or None, default None
            The position projection of the contacts after each step (``MoreauJeanOSI(projection=)``). None (True
            here: every body is a NewtonEulerDS): the bodies are projected out of the floor and of each other after
            each step, to ``projection_tol`` = 1e-8, their velocities unchanged; False: no projection (a plastic
            impact still ends on the surface, to the linearisation's error; with ``activation="siconos"`` too,
            Siconos' MoreauJeanOSI: a body stopped at speed :math:`|v|` sinks by up to :math:`h|v|` and stays there).
        gamma : float, optional
            The γ of the activation rule (``MoreauJeanOSI(gamma=)``): the fraction of the step it looks ahead
            (default 1 for the look-ahead rule, 1/2 for Siconos').
        activation : {None, "lookahead", "siconos"}, default None
            The activation rule (``MoreauJeanOSI(activation=)``). None ("lookahead" here): a contact enters the
            step's problem when the gap at the end of the step without its impulse,
            :math:`y_k + \gamma h[(1-\theta)\dot y_k + \theta\dot y_{free}]`, closes, and one that the step
            puts into penetration after all is added and the step solved again; "siconos": Siconos 4.4's
            :math:`y_k + \gamma h\dot y_k \le 0`. ``formulations/time_stepping.md`` §6.
        activation_threshold : float, default 0.0
            A contact enters the problem when its predicted gap is at most this.
        **options
            Passed to :func:`nsopt.solve`.

        Returns
        -------
        SceneRun
            The run, step by step. A body that moved more than half its thickness in a step is swept
            (:meth:`CollisionManager.swept`): one that passed through an object, or ended deep inside one, is a
            :class:`~nsopt.mechanics.TunnellingWarning` naming it, the object and the step (``run.tunnelling``).

        Raises
        ------
        ModelingError
            When an argument has the wrong type or value (``T``, ``h``, ``osns``, ``on_step``, ``observers``,
            ``check``, the flags), ``T`` is not after the start time, [t0, T] is not a whole number of steps of
            ``h`` (the last step ends at T: :data:`nsopt.modeling.simulation.STEP_RULE`), ``osns`` cannot hold the
            scene's laws (``"lcp"`` would drop their friction), the scene has no dynamic body, or the record to continue from
            holds no step or is of another scene (its laws, shapes, masses or static objects differ). All of
            them, and the solver's options (``MethodNotFound``, ``OptionError``), are checked before the first
            step.
        InterpenetrationError
            When shapes interpenetrate deeper than ``check`` at the start.
        FormatError
            When ``continue_from`` is not a record.

        Examples
        --------
        A run written to a record, then continued from it:

        >>> import os, tempfile
        >>> from nsopt import mechanics as mc
        >>> sc = mc.Scene()
        >>> sc.add_primitive_shape("Ball", "Sphere", 0.1)
        >>> sc.add_primitive_shape("Ground", "Box", (2.0, 2.0, 0.2))
        >>> sc.add_Newton_impact_friction_nsl("contact", mu=0.3)
        >>> sc.add_object("ball", ["Ball"], translation=[0, 0, 0.1], mass=1.0)     # resting on the ground
        >>> sc.add_object("ground", ["Ground"], translation=[0, 0, -0.1])          # static (no mass)
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = os.path.join(tmp, "ball.h5")
        ...     first = sc.run(T=0.02, h=0.01, record=path)
        ...     more = sc.run(T=0.04, h=0.01, continue_from=path)
        >>> first.t.tolist(), more.t.round(6).tolist()
        ([0.01, 0.02], [0.03, 0.04])
        """
        from ..modeling import MoreauJeanOSI, TimeStepping
        from ..modeling.simulation import ProblemWriter, whole_steps

        T, h = self._check_run(T, h, osns, on_step, check, record, write_problems, continue_from, observers,
                               progress=progress, keep_states=keep_states, overwrite=overwrite)
        scene, t0, resume = self, 0.0, None
        if continue_from is not None:
            rec = continue_from if isinstance(continue_from, Record) else load_record(continue_from)
            if not len(rec):
                raise ModelingError("Scene", "continue_from", f"the record {rec.path} holds no step")
            self._check_same_scene(rec)
            scene, t0, resume = rec.scene(-1), float(rec.t[-1]), rec.resume
        if not T > t0:
            raise ModelingError("Scene", "T", f"must be after the start time {t0:g}, got {T!r}")
        whole_steps(t0, T, h, "Scene")
        model = scene.build(t0, T)
        if check is not None and model.bodies and resume is None:
            model.collision.check_interpenetration(check, model.poses())
            model.collision._previous = None
        if resume is not None:
            model.restore_memory(resume)
        osns = osns if osns is not None else ("gmp" if model.joints else "fc3d")
        method = method if method is not None else "auto"        # the policy's run order of osns
        if not model.bodies:
            raise ModelingError("Scene", "objects", "the scene has no dynamic body")
        osi = MoreauJeanOSI(theta, gamma, projection=projection, activation=activation,
                            activation_threshold=activation_threshold)
        sim = TimeStepping(model.nsds, h, osi, osns=osns, method=method, tol=tol, fallback=fallback, **options)
        rec = None
        if record is not None:
            rec = Recorder(record, scene, overwrite=overwrite, h=h, theta=theta, osns=osns, method=sim.method, tol=tol,
                           t0=t0, gamma=osi.gamma_given if osi.gamma_given is not None else "default",
                           activation=str(activation), projection=str(projection),
                           activation_threshold=activation_threshold)
        out = SceneRun(model, sim, keep_states)
        try:
            if rec is not None:
                out.observers.append(rec)
            if write_problems is not None:
                out.observers.append(ProblemWriter(write_problems, sim.k + 1, sim.n_steps, overwrite=overwrite))
            out.observers.extend(observers)
            bar = None
            if progress:
                from tqdm import tqdm
                bar = tqdm(total=sim.n_steps, desc="scene", unit="step")
            first = True
            while sim.has_next_step():
                step = out._step(resume if first else None)
                first = False
                if bar is not None:
                    bar.update(1)
                if on_step is not None:
                    try:
                        on_step(step)
                    except StopIteration:
                        break
            if bar is not None:
                bar.close()
        finally:
            for o in out.observers:
                finish = getattr(o, "finish", None)
                if finish is not None:
                    finish(out)
        return out


class SceneModel:
    """A built scene: ``nsds``, ``bodies`` (NewtonEulerDS, in the collision manager's order), ``collision``
    (the :class:`CollisionManager`), ``joints`` (their interactions) and ``contacts``: the contact interactions
    linked now, by persistent point id; ``current``: the contact interactions of the last detection, in its
    order (row k of ``last``); ``table``: the :class:`~nsopt.modeling.newton_euler.ContactTable` holding the
    contact relations' body-frame points.

    Built by :meth:`Scene.build` (not by hand).

    Examples
    --------
    >>> from nsopt import mechanics as mc
    >>> sc = mc.Scene()
    >>> sc.add_primitive_shape("Ball", "Sphere", 0.1)
    >>> sc.add_primitive_shape("Ground", "Box", (2.0, 2.0, 0.2))
    >>> sc.add_Newton_impact_friction_nsl("contact", mu=0.3)
    >>> sc.add_object("ball", ["Ball"], translation=[0, 0, 0.1], mass=1.0)     # resting on the ground
    >>> sc.add_object("ground", ["Ground"], translation=[0, 0, -0.1])          # static (no mass)
    >>> model = sc.build()
    >>> model.names, model.poses().tolist()
    (['ball'], [[0.0, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0]])
    >>> model.update_contacts()
    {0: Interaction(NewtonImpactFrictionNSL 'contact', NewtonEuler3DR, size=3)}
    >>> model.last.distance.round(6).tolist()
    [0.0]
    """

    def __init__(self, scene, nsds, bodies, names, collision, joints):
        self.scene, self.nsds, self.bodies, self.names = scene, nsds, bodies, names
        self.collision, self.joints = collision, joints
        self.contacts: dict = {}
        self.last: Contacts | None = None
        self.current = np.empty(0, dtype=object)
        self.table = ContactTable()
        self._ids = np.zeros(0, dtype=np.int64)          # the linked contacts' ids (sorted), their interactions
        self._inters = np.empty(0, dtype=object)
        self._table_rows = np.zeros(0, dtype=np.intp)     # their relations' rows in the contact table
        self._groups = [[c.group for c in o["contactors"]] for o in scene.objects if o["mass"] is not None]
        self._static_groups = [[c.group for c in o["contactors"]] for o in scene.objects if o["mass"] is None]
        self._rows_at = None          # (stepper, its layout, rows): SceneModel._state_rows

    def poses(self, run=None) -> np.ndarray:
        """The bodies' poses (n, 7): their current ones in the run ``run`` (a
        :class:`~nsopt.modeling.TimeStepping` of this model, :meth:`~nsopt.modeling.TimeStepping.state_of`),
        else their own (``body.q``: see the class example)."""
        if not self.bodies:
            return np.zeros((0, 7))
        if run is None:
            return np.array([b.q for b in self.bodies])
        st, rows = self._state_rows(run)
        return st.q[rows[0]]

    def twists(self, run=None) -> np.ndarray:
        """The bodies' twists (n, 6): in the run ``run``, else their own (as :meth:`poses`)."""
        if not self.bodies:
            return np.zeros((0, 6))
        if run is None:
            return np.array([b.v for b in self.bodies])
        st, rows = self._state_rows(run)
        return st.v[rows[1]]

    def _state_rows(self, run):
        """The run's stepper and where the bodies' poses and twists are in its stacked state: index arrays (n, 7)
        and (n, 6), each body found by :meth:`~nsopt.modeling.TimeStepping.state_of`'s rule, kept while the
        stepper's layout of the systems is the same (one fancy index a read, not a call per body)."""
        st = run._stepper
        S = st.sys
        held = self._rows_at
        if held is not None and held[0] is st and held[1] is S and held[2] is S.qoff and held[3] is S.voff:
            return st, held[4]
        at = [run._locate(b)[0] for b in self.bodies]
        rows = (np.array([np.arange(S.qoff[k], S.qoff[k + 1]) for k in at]),
                np.array([np.arange(S.voff[k], S.voff[k + 1]) for k in at]))
        self._rows_at = (st, S, S.qoff, S.voff, rows)
        return st, rows

    def _law(self, c: Contacts, k: int):
        g1 = self._groups[c.body1[k]][c.contactor1[k]]
        g2 = (self._groups[c.body2[k]] if c.body2[k] >= 0 else self._static_groups[c.static2[k]])[c.contactor2[k]]
        return self.scene.laws[(min(g1, g2), max(g1, g2))]

    def update_contacts(self, Q=None) -> dict:
        """Detect the contacts at the poses Q (default: the bodies' current ones) and bring the model in line:
        link new points, move persisting ones, remove vanished ones (see the module docstring). Returns the
        contact interactions by point id.

        The persisting points' body-frame data are written for all of them at once into the contact table; new
        points get a new :class:`~nsopt.modeling.NewtonEuler3DR` (and Interaction) each, vanished ones are
        removed by one :meth:`~nsopt.modeling.NonSmoothDynamicalSystem.remove_interactions`.

        Parameters
        ----------
        Q : (n, 7) array_like, optional
            The poses; default the bodies' current ones.

        Returns
        -------
        dict
            The contact interactions linked now, by persistent point id (see the class example).
        """
        Q = self.poses() if Q is None else np.asarray(Q, dtype=float)
        c = self.collision.detect(Q)
        # c.relative(Q), with the bodies' rotations at Q that the detection computed
        rp1, rp2, rn = kern.body_frames(self.collision._body_R, Q, c.body1, c.body2, c.pc1, c.pc2, c.normal)
        ids = c.id
        k = len(c)
        old_ids, old_inters = self._ids, self._inters
        pos = np.minimum(np.searchsorted(old_ids, ids), max(old_ids.shape[0] - 1, 0))
        found = (old_ids[pos] == ids) if old_ids.shape[0] else np.zeros(k, dtype=bool)
        inters = np.empty(k, dtype=object)
        inters[found] = old_inters[pos[found]]
        rows = np.empty(k, dtype=np.intp)
        rows[found] = self._table_rows[pos[found]]
        # vanished points: removed in one pass, their table rows released
        if old_ids.shape[0]:
            alive = np.zeros(old_ids.shape[0], dtype=bool)      # the old points found again
            alive[pos[found]] = True
            gone = old_inters[~alive].tolist()
            if gone:
                self.nsds.remove_interactions(gone)
                self.table.release([i.relation for i in gone])
                for pid in old_ids[~alive].tolist():
                    del self.contacts[pid]
        # new points: an interaction each, with the law of their pair of groups
        new = np.flatnonzero(~found)
        if new.size:
            rels = self.table.relations(new.size, 3)
            link, bodies, contacts = self.nsds.link, self.bodies, self.contacts
            for rel, j in zip(rels, new.tolist()):
                inter = Interaction(self._law(c, j), rel)
                b2 = c.body2[j]
                if b2 < 0:
                    link(inter, bodies[c.body1[j]])
                else:
                    link(inter, bodies[c.body1[j]], bodies[b2])
                inters[j] = inter
                rows[j] = rel._row
                contacts[int(ids[j])] = inter
        if k:
            self.table.set(rows, rp1, rp2, rn)
        order = np.argsort(ids, kind="stable")
        self._ids, self._inters, self._table_rows = ids[order], inters[order], rows[order]
        self.current = inters
        self.last = c
        return self.contacts

    def memory(self) -> dict:
        """What a continued run needs of the contact flow: the collision manager's memory of the last
        detection (to keep the point ids) and the next id."""
        prev = self.collision._previous
        out = {"next_id": np.array([self.collision._next_id], dtype=np.int64)}
        if prev is not None:
            out.update(keys=prev[0], ids=prev[1], loc=prev[2])
        return out

    def restore_memory(self, mem: dict):
        """Set the collision manager's memory (from :meth:`memory`, e.g. read back from a record)."""
        self.collision._next_id = int(np.asarray(mem["next_id"]).reshape(-1)[0])
        if "keys" in mem:
            self.collision._previous = (np.asarray(mem["keys"], dtype=np.int64), np.asarray(mem["ids"], dtype=np.int64),
                                        np.asarray(mem["loc"], dtype=float))


def _penetration(st) -> float:
    """max(0, -y) over the live contacts' gaps y at the end of the step the stepper ``st`` took: the outputs it
    computed at q_{k+1} (after the projection), their normal rows (the first row of each unilateral interaction)."""
    on = st.unilateral & st.alive
    return max(0.0, -float(st.Y0[st.first[on]].min())) if on.any() else 0.0


@dataclass(eq=False)
class SceneStep:
    r"""One step of a :class:`Scene` run, as its pipeline filled it once: detect (the contacts at the poses
    :math:`q_k`) → assemble and solve (one Moreau–Jean step of :class:`~nsopt.modeling.TimeStepping`: its
    one-step problem, solved) → update (the step's figures below, read from what the step computed: the
    penetration from the step's own gaps at :math:`q_{k+1}`, not evaluated again) → record (the observers:
    the HDF5 :class:`Recorder`, the problem writer, those of ``Scene.run(observers=)``) → ``on_step``.

    What ``Scene.run(on_step=f)`` and each observer get; :class:`SceneRun`'s per-step arrays are its rows.

    Attributes
    ----------
    k : int
        The step, 1-based (the run's step count after it).
    t : float
        Its end time.
    status : nsopt.Status or None
        The one-step problem's status (None: no contact, no problem solved).
    error : float
        Its error measure (NaN without a problem).
    nit : int
        The solver's iterations (0 without a problem).
    method : str or None
        The method that gave the solution.
    contacts : int
        The contact points detected at the start of the step.
    active : int
        Those in the step's one-step problem.
    penetration : float
        The deepest penetration after the step, max(0, -y) over the contacts' gaps at :math:`q_{k+1}`.
    kinetic_energy : float
        The bodies' kinetic energy after the step.
    top : float
        The highest body centre (z).
    com : (3,) ndarray
        The centre of mass of the bodies.
    q, v : (n, 7) and (n, 6) ndarray
        The poses and twists after the step.
    detected : Contacts or None
        The contact points detected at the start of the step (None: none).
    forces : (contacts, 3) ndarray
        Their forces (the step's impulse over h, contact frame: normal, t1, t2).
    active_mask : (contacts,) bool ndarray
        Which of them were in the step's one-step problem.
    problem : Problem or None
        The step's one-step problem (None without contact).
    solution : nsopt.Solution or None
        Its solution.
    times : dict
        Seconds per phase: "detect" (collision detection and the contacts' update), "step" (assembly, solve and
        integration), "solve" (the solver alone), "update" (the figures above), "record" (the observers),
        "total"; "cpu": the process's CPU time of the step but the record. "record" and "total" are known
        after the observers ran (NaN while they run; ``on_step`` sees them).

    Examples
    --------
    >>> from nsopt import mechanics as mc
    >>> sc = mc.Scene()                                        # a ball resting on a static slab
    >>> sc.add_Newton_impact_friction_nsl("contact", mu=0.3)
    >>> sc.add_object("ball", mc.Contactor(mc.Sphere(0.1)), translation=[0, 0, 0.1], mass=1.0)
    >>> sc.add_object("slab", mc.Contactor(mc.Box((2.0, 2.0, 0.2))), translation=[0, 0, -0.1])
    >>> seen = []
    >>> run = sc.run(T=0.02, h=0.01, on_step=seen.append)
    >>> [(s.k, s.contacts, s.active, s.status.value, s.problem.kind) for s in seen]
    [(1, 1, 1, 'solved', 'fc3d'), (2, 1, 1, 'solved', 'fc3d')]
    >>> (seen[-1].forces.round(3) + 0.0).tolist(), sorted(seen[-1].times)
    ([[9.81, 0.0, 0.0]], ['cpu', 'detect', 'record', 'solve', 'step', 'total', 'update'])
    """

    k: int
    t: float
    status: object
    error: float
    nit: int
    method: object
    contacts: int
    active: int
    penetration: float
    kinetic_energy: float
    top: float
    com: np.ndarray
    q: np.ndarray
    v: np.ndarray
    detected: object
    forces: np.ndarray
    active_mask: np.ndarray
    problem: object
    solution: object
    times: dict


_COLUMNS = ("t", "status", "error", "nit", "method", "contacts", "active", "penetration", "kinetic_energy", "top",
            "com")
_PHASES = ("detect", "step", "solve", "update", "record", "total", "cpu")


class SceneRun:
    """A run of a :class:`Scene` (:meth:`Scene.run`): ``model`` (:class:`SceneModel`), ``sim`` (its
    :class:`~nsopt.modeling.TimeStepping`) and, one entry per step (the rows of its :class:`SceneStep`\\ s):
    ``t``, ``status`` (the one-step problem's :class:`nsopt.Status`, None for a step without contact),
    ``error``, ``nit``, ``method``, ``contacts`` (points detected), ``active`` (contacts in the one-step
    problem), ``penetration`` (the deepest, max(0, -y0) over the contacts after the step), ``kinetic_energy``,
    ``top`` (the highest body centre), ``com`` (k, 3), and the times of each step in seconds (``times``: a dict
    of arrays, :attr:`SceneStep.times`' phases "detect", "step", "solve", "update", "record", "total", "cpu");
    with ``keep_states``, ``q`` (k+1, n, 7) and ``v`` (k+1, n, 6) (row 0: the start).

    Returned by :meth:`Scene.run` (not built by hand). ``last_step`` is the last :class:`SceneStep`;
    ``forces`` (k, 3) (contact frame) and ``active_mask`` are its contact forces and which contacts were in
    its one-step problem; ``solution`` the last step's :class:`~nsopt.result.Result` that solved a problem.

    Raises
    ------
    ModelingError
        On reading ``q`` or ``v`` of a run made with ``keep_states=False``.

    Examples
    --------
    >>> from nsopt import mechanics as mc
    >>> sc = mc.Scene()
    >>> sc.add_primitive_shape("Ball", "Sphere", 0.1)
    >>> sc.add_primitive_shape("Ground", "Box", (2.0, 2.0, 0.2))
    >>> sc.add_Newton_impact_friction_nsl("contact", mu=0.3)
    >>> sc.add_object("ball", ["Ball"], translation=[0, 0, 0.1], mass=1.0)     # resting on the ground
    >>> sc.add_object("ground", ["Ground"], translation=[0, 0, -0.1])          # static (no mass)
    >>> run = sc.run(T=0.03, h=0.01)
    >>> len(run), run.contacts.tolist(), run.active.tolist(), run.failed_steps
    (3, [1, 1, 1], [1, 1, 1], [])
    >>> [s.value for s in run.status], run.q.shape, run.kinetic_energy.round(6).tolist()
    (['solved', 'solved', 'solved'], (4, 1, 7), [0.0, 0.0, 0.0])
    >>> (run.forces.round(3) + 0.0).tolist()                  # the weight, carried by the contact (N, contact frame)
    [[9.81, 0.0, 0.0]]
    >>> sorted(run.times)
    ['cpu', 'detect', 'record', 'solve', 'step', 'total', 'update']
    """

    def __init__(self, model, sim, keep_states, observers=()):
        self.model, self.sim, self.keep_states = model, sim, keep_states
        self.observers = list(observers)     # called with each SceneStep, in order (the record phase)
        b = model.bodies
        self._mass = np.array([x.scalar_mass for x in b])
        self._inertia = np.array([x.inertia for x in b]).reshape(len(b), 3, 3)
        self._rows: dict = {f: [] for f in _COLUMNS}
        self._times: dict = {f: [] for f in _PHASES}
        self._q, self._v = ([model.poses(sim)], [model.twists(sim)]) if keep_states else (None, None)
        self.last_step = None     # the last SceneStep
        self.solution = None      # the last step's Solution that solved a problem (None: none yet)
        self.tunnelling = []      # the swept test's events: step, t, body, other, kind, depth, moved
        self._solved = None       # the StepRecord of the step being taken (TimeStepping's on_step)
        sim.on_step = self._on_step

    def _on_step(self, record):
        self._solved = record

    @property
    def forces(self):
        """The contact forces of the last step (k, 3), contact frame, rows of ``model.last`` (None before a step)."""
        return None if self.last_step is None else self.last_step.forces

    @property
    def active_mask(self):
        """Which contacts of the last step were in its one-step problem (None before a step)."""
        return None if self.last_step is None else self.last_step.active_mask

    # ---- the pipeline of one step: detect -> assemble and solve -> update -> record
    def _step(self, resume) -> SceneStep:
        import time

        c0, w0 = time.process_time(), time.perf_counter()
        Q0 = self._detect(resume)
        w1 = time.perf_counter()
        sim = self.sim
        s0 = sim.trajectory.solve_time
        self._solved = None
        sol = sim.step()
        w2 = time.perf_counter()
        step = self._update(sol)
        w3, cpu3 = time.perf_counter(), time.process_time()
        step.times = tm = {"detect": w1 - w0, "step": w2 - w1, "solve": sim.trajectory.solve_time - s0,
                           "update": w3 - w2, "record": np.nan, "total": np.nan, "cpu": cpu3 - c0}
        for observe in self.observers:
            observe(step)
        w4 = time.perf_counter()
        tm["record"], tm["total"] = w4 - w3, w4 - w0
        self._take(step)
        self._check_tunnelling(Q0, step.q)       # after the step is recorded: a warning made an error keeps it
        return step

    def _detect(self, resume):
        """Detect: the contacts at the current poses (:meth:`SceneModel.update_contacts`), their outputs updated,
        the warm starts of a continued run's first step; returns the poses."""
        model = self.model
        Q0 = model.poses(self.sim)
        model.update_contacts(Q0)
        self.sim.update_outputs()
        if resume is not None:
            self._restore_warm(resume)
        return Q0

    def _update(self, sol) -> SceneStep:
        """Update: the step's figures, from what the step computed (its impulses, its gaps at q_{k+1})."""
        model, sim = self.model, self.sim
        Q, V = model.poses(sim), model.twists(sim)
        c = model.last
        k = len(c)
        F = np.zeros((k, 3))
        on = np.zeros(k, dtype=bool)
        rec = self._solved
        if rec is not None and rec.lam is not None and k:
            where = dict(zip(map(id, model.current.tolist()), range(k)))       # an active contact's row here
            active = rec.active
            na = len(active)
            at = np.fromiter(map(where.get, map(id, active), repeat(-1, na)), dtype=np.intp, count=na)
            size = np.fromiter(map(attrgetter("size"), active), dtype=np.intp, count=na)
            off = np.cumsum(size) - size
            mine = at >= 0
            F[at[mine]] = rec.lam[off[mine, None] + np.arange(3)] / sim.h
            on[at[mine]] = True
        if sol is not None:
            self.solution = sol
        m = self._mass
        return SceneStep(k=sim.k, t=sim.t, status=None if sol is None else sol.status,
                         error=np.nan if sol is None else sol.error, nit=0 if sol is None else sol.nit,
                         method=None if sol is None else sol.method, contacts=k, active=int(on.sum()),
                         penetration=_penetration(sim._stepper) if k else 0.0,
                         kinetic_energy=float(kinetic_energy(V, m, self._inertia).sum()), top=float(Q[:, 2].max()),
                         com=m @ Q[:, :3] / m.sum(), q=Q, v=V, detected=c if k else None, forces=F, active_mask=on,
                         problem=None if rec is None else rec.problem, solution=sol, times={})

    def _take(self, step: SceneStep):
        """The run's row of the step (and its state with ``keep_states``)."""
        for f, col in self._rows.items():
            col.append(getattr(step, f))
        for f, col in self._times.items():
            col.append(step.times[f])
        if self.keep_states:
            self._q.append(step.q)
            self._v.append(step.v)
        self.last_step = step

    def _check_tunnelling(self, Q0, Q):
        """The swept test of the step (:meth:`CollisionManager.swept`) for the bodies that moved more than half their
        thickness: each body that passed through an object (or ended deep inside one) is a
        :class:`~nsopt.mechanics.TunnellingWarning` naming it, the object and the step, kept in ``tunnelling``."""
        cm = self.model.collision
        fast = cm.fast_bodies(Q0, Q)
        if not fast.size:
            return
        _, w = cm.body_sizes()
        import warnings

        from .collision import TunnellingWarning
        names = self.model.names
        statics = [o["name"] for o in self.model.scene.objects if o["mass"] is None]
        sim = self.sim
        for e in cm.swept(Q0, Q, fast=fast):
            other = names[e["other"]] if e["other"] is not None else statics[e["static"]]
            row = dict(step=sim.k, t=sim.t, body=names[e["body"]], other=other, kind=e["kind"], depth=e["depth"],
                       moved=e["moved"])
            self.tunnelling.append(row)
            t0 = sim.t - sim.h
            why = ("the contact detection at the ends of the step missed the contact" if e["kind"] == "passed through"
                   else "the contact detected at the end is deeper than half its thickness: its normal may push it "
                        "through")
            warnings.warn(f"step {sim.k} (t = {t0:.6g} to {sim.t:.6g}): body {row['body']!r} {e['kind']} {other!r} "
                          f"(interpenetrating by {e['depth']:.3g} at t = {t0 + e['at'] * sim.h:.6g}): it moved "
                          f"{e['moved']:.3g} in one step, more than its thickness {w[e['body']]:.3g}, and {why}; "
                          f"choose a smaller h", TunnellingWarning, stacklevel=4)

    def _restore_warm(self, resume):
        """The warm starts of a continued run's first step: the contacts' (by id) and the joints' λ."""
        if "contact_ids" in resume:
            ids, lam = np.asarray(resume["contact_ids"]), np.asarray(resume["contact_lambda"])
            for pid, lm in zip(ids.tolist(), lam):
                inter = self.model.contacts.get(pid)
                if inter is not None:
                    self._set_lambda(inter, lm)
        if "joint_lambda" in resume:
            for inter, lm in zip(self.model.joints, resume["joint_lambda"]):
                self._set_lambda(inter, np.asarray(lm)[:inter.size])

    def _set_lambda(self, inter, lm):
        """λ at level 1 (the warm start of its next solve) of an interaction of the run, else its own."""
        lam = [np.zeros(inter.size), lm]
        if self.sim._stepper.index_of(inter) is not None:
            self.sim.set_state(inter, lambda_=lam)
        else:
            inter.lambda_ = lam

    def resume_state(self) -> dict:
        """What a continued run needs beyond the poses and twists (:meth:`Scene.run` with ``continue_from``): the
        collision manager's memory (point ids) and the warm starts (λ of the last solve of each contact and joint)."""
        out = self.model.memory()
        st = self.sim._stepper
        ids, lams = [], []
        for pid, inter in self.model.contacts.items():
            j = st.position(inter)
            if j >= 0:
                lo, hi = st.bounds[j]
                ids.append(pid)
                lams.append(st.warm[lo:hi])
        out["contact_ids"] = np.array(ids, dtype=np.int64)
        out["contact_lambda"] = np.array(lams).reshape(len(ids), 3)
        J = []
        for inter in self.model.joints:
            j = st.position(inter)
            w = np.zeros(6)
            if j >= 0:
                lo, hi = st.bounds[j]
                w[:hi - lo] = st.warm[lo:hi]
            J.append(w)
        out["joint_lambda"] = np.array(J).reshape(len(J), 6)
        return out

    def __len__(self):
        return len(self._rows["t"])

    def __getattr__(self, name):
        rows = self.__dict__.get("_rows", {})
        if name in rows:
            vals = rows[name]
            if name in ("status", "method"):
                return list(vals)
            return np.array(vals) if name != "com" else np.array(vals).reshape(len(vals), 3)
        raise AttributeError(name)

    @property
    def times(self) -> dict:
        """The times of each step in seconds, a dict of arrays (see the class docstring)."""
        return {k: np.array(v) for k, v in self._times.items()}

    @property
    def q(self) -> np.ndarray:
        """The poses (k+1, n, 7), row 0 the start (``keep_states`` runs only)."""
        if not self.keep_states:
            raise ModelingError("SceneRun", "q", "the run did not keep its states (keep_states=False): read its record")
        return np.array(self._q)

    @property
    def v(self) -> np.ndarray:
        """The twists (k+1, n, 6), row 0 the start (``keep_states`` runs only)."""
        if not self.keep_states:
            raise ModelingError("SceneRun", "v", "the run did not keep its states (keep_states=False): read its record")
        return np.array(self._v)

    @property
    def failed_steps(self) -> list:
        """Steps (1-based) whose one-step problem did not reach the tolerance."""
        from ..result import Status
        return [j + 1 for j, s in enumerate(self._rows["status"]) if s is not None and s is not Status.SOLVED]

    def __repr__(self):
        return (f"SceneRun({len(self)} steps, {len(self.model.bodies)} bodies, {len(self.failed_steps)} failed solves, "
                f"{int(np.sum(self._rows['contacts'])) if len(self) else 0} contact points over the run)")


# ============================================================================ record
class Recorder:
    """Writes a run to HDF5, step by step (see the module docstring for the layout).

    :meth:`Scene.run` makes one when given ``record=``, an observer of the run's steps (``recorder(step)``
    appends a :class:`SceneStep`, ``recorder.finish(run)`` ends the record); a context manager (closes the file).

    Parameters
    ----------
    path : str or path-like
        The HDF5 file.
    scene : Scene
        The scene (stored as its description).
    overwrite : bool, default False
        Replace an existing file.
    **settings
        The run's settings, stored as attributes (``h``, ``theta``, ``osns``, ``method``, ``tol``, ...).

    Raises
    ------
    OutputError
        When the file exists and ``overwrite`` is False, the path is a folder, its folder does not exist, or
        it cannot be written (the message names the file).
    ModelingError
        When the scene has no dynamic body.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from nsopt import mechanics as mc
    >>> sc = mc.Scene()
    >>> sc.add_object("ball", mc.Contactor(mc.Sphere(0.1)), translation=[0, 0, 1], mass=1.0)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "r.h5")
    ...     with mc.Recorder(path, sc, h=0.01) as rec:
    ...         rec.append(0.01, [[0, 0, 1, 1, 0, 0, 0]], np.zeros((1, 6)), status="solved")
    ...     r = mc.load_record(path)
    >>> len(r), r.names, r.status.tolist(), float(r.settings["h"])
    (1, ['ball'], ['solved'], 0.01)
    """

    def __init__(self, path, scene: Scene, *, overwrite: bool = False, **settings):
        import h5py
        if not isinstance(scene, Scene):
            raise ModelingError("Recorder", "scene", f"expected a Scene, got {type(scene).__name__}")
        self.n = sum(o["mass"] is not None for o in scene.objects)
        if not self.n:
            raise ModelingError("Recorder", "scene", "has no dynamic body: nothing to record")
        path = check_file(path, overwrite=overwrite, what="record")
        self.path = Path(path)
        self.f = h5py.File(path, "w")
        f = self.f
        f.attrs["format"], f.attrs["version"] = FORMAT, VERSION
        f.attrs["scene"] = json.dumps(scene.describe())
        f.attrs["bodies"] = json.dumps([o["name"] for o in scene.objects if o["mass"] is not None])
        for k, v in settings.items():
            f.attrs[k] = v
        n = self.n
        s = f.create_group("steps")
        s.create_dataset("t", (0,), maxshape=(None,), chunks=(256,), dtype="f8")
        s.create_dataset("q", (0, n, 7), maxshape=(None, n, 7), chunks=(1, n, 7), dtype="f8")
        s.create_dataset("v", (0, n, 6), maxshape=(None, n, 6), chunks=(1, n, 6), dtype="f8")
        s.create_dataset("status", (0,), maxshape=(None,), chunks=(256,), dtype=h5py.string_dtype())
        s.create_dataset("nit", (0,), maxshape=(None,), chunks=(256,), dtype="i8")
        s.create_dataset("error", (0,), maxshape=(None,), chunks=(256,), dtype="f8")
        s.create_dataset("contacts", data=np.zeros(1, dtype="i8"), maxshape=(None,), chunks=(256,))
        c = f.create_group("contacts")
        for name, width, dt in (("body1", None, "i8"), ("body2", None, "i8"), ("static2", None, "i8"), ("id", None, "i8"),
                                ("distance", None, "f8"), ("pc1", 3, "f8"), ("pc2", 3, "f8"), ("normal", 3, "f8"),
                                ("force", 3, "f8"), ("active", None, "?")):
            shape, maxshape = ((0,), (None,)) if width is None else ((0, width), (None, width))
            c.create_dataset(name, shape, maxshape=maxshape, chunks=(1024,) + shape[1:], dtype=dt)
        from .siconos_hdf5 import SiconosLayout      # the same run in Siconos' layout (group data/)
        self._t = float(settings.get("t0", 0.0))
        self.siconos = SiconosLayout(f, scene, t0=self._t)

    def append(self, t, q, v, *, status="", nit=0, error=0.0, contacts: Contacts | None = None, forces=None,
               active=None):
        """One step: time, poses (n, 7), twists (n, 6), the solver's status, iterations and error, the contacts,
        their forces (k, 3) (contact frame; zeros when None) and whether each was in the step's one-step problem
        (``active``, (k,) bool; False when None).

        Parameters
        ----------
        t : float
            The time at the end of the step.
        q : (n, 7) array_like
            The poses.
        v : (n, 6) array_like
            The twists.
        status : str, default ""
            The solver's status (its value).
        nit : int, default 0
            The solver's iterations.
        error : float, default 0.0
            The solver's error.
        contacts : Contacts, optional
            The contacts of the step.
        forces : (k, 3) array_like, optional
            Their forces (contact frame); zeros when None.
        active : (k,) array_like of bool, optional
            Whether each was in the step's one-step problem; False when None.

        Raises
        ------
        ModelingError
            When q or v does not match the scene's number of dynamic bodies.
        """
        q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
        if q.shape != (self.n, 7) or v.shape != (self.n, 6):
            raise ModelingError("Recorder", "q", f"q {q.shape} and v {v.shape} do not match {self.n} bodies")
        s, cg = self.f["steps"], self.f["contacts"]
        k0 = int(s["contacts"][-1])
        k = 0 if contacts is None else len(contacts)
        if k:
            F = np.zeros((k, 3)) if forces is None else np.asarray(forces, dtype=float).reshape(k, 3)
            act = np.zeros(k, dtype=bool) if active is None else np.asarray(active, dtype=bool).reshape(k)
            for name, arr in (("body1", contacts.body1), ("body2", contacts.body2), ("static2", contacts.static2),
                              ("id", contacts.id), ("distance", contacts.distance), ("pc1", contacts.pc1),
                              ("pc2", contacts.pc2), ("normal", contacts.normal), ("force", F), ("active", act)):
                d = cg[name]
                d.resize(k0 + k, axis=0)
                d[k0:] = arr
        m = s["t"].shape[0]
        for name, val in (("t", t), ("q", q), ("v", v), ("status", str(status)), ("nit", int(nit)), ("error", float(error))):
            d = s[name]
            d.resize(m + 1, axis=0)
            d[m] = val
        s["contacts"].resize(m + 2, axis=0)
        s["contacts"][m + 1] = k0 + k
        self.siconos.append(float(t), q, v, h=float(t) - self._t, contacts=contacts if k else None,
                            forces=F if k else None, active=act if k else None, nit=int(nit), error=float(error))
        self._t = float(t)
        self.f.flush()

    def __call__(self, step: SceneStep):
        """Observe a step of a run (:class:`SceneStep`): append it (:meth:`append`)."""
        self.append(step.t, step.q, step.v, status="" if step.status is None else step.status.value, nit=step.nit,
                    error=step.error, contacts=step.detected, forces=step.forces, active=step.active_mask)

    def finish(self, run: SceneRun):
        """At the end of a run: write what a continued run needs (:meth:`resume`) and close the file."""
        try:
            self.resume(run.resume_state())
        finally:
            self.close()

    def resume(self, state: dict):
        """Write (or replace) what a continued run needs at the end of the record (group ``resume``: the collision
        manager's memory and the warm starts; :meth:`SceneRun.resume_state`)."""
        if "resume" in self.f:
            del self.f["resume"]
        g = self.f.create_group("resume")
        g.attrs["step"] = int(self.f["steps/t"].shape[0])
        for k, v in state.items():
            g.create_dataset(k, data=np.asarray(v))
        self.f.flush()

    def close(self):
        """Close the file."""
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Record:
    """A reloaded record: ``t``, ``q``, ``v``, ``status``, ``nit``, ``error`` (per step), ``settings``,
    ``names`` (dynamic bodies), :meth:`contacts` of a step, :meth:`scene` to continue from a step.

    Made by :func:`load_record`; ``description`` is the scene's (:meth:`Scene.describe`), ``resume`` what a
    continued run needs (None for a record cut short before its end).

    Examples
    --------
    >>> import os, tempfile
    >>> from nsopt import mechanics as mc
    >>> sc = mc.Scene()
    >>> sc.add_primitive_shape("Ball", "Sphere", 0.1)
    >>> sc.add_primitive_shape("Ground", "Box", (2.0, 2.0, 0.2))
    >>> sc.add_Newton_impact_friction_nsl("contact", mu=0.3)
    >>> sc.add_object("ball", ["Ball"], translation=[0, 0, 0.1], mass=1.0)     # resting on the ground
    >>> sc.add_object("ground", ["Ground"], translation=[0, 0, -0.1])          # static (no mass)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = sc.run(T=0.02, h=0.01, record=os.path.join(tmp, "ball.h5"))
    ...     rec = mc.load_record(os.path.join(tmp, "ball.h5"))
    ...     page = rec.write_html(os.path.join(tmp, "ball.html"))
    ...     image = rec.still(os.path.join(tmp, "ball.png"))
    ...     made = page.name, page.stat().st_size > 0, image.name, image.stat().st_size > 0
    >>> made
    ('ball.html', True, 'ball.png', True)
    >>> len(rec), rec.names, rec.t.tolist(), rec.q.shape
    (2, ['ball'], [0.01, 0.02], (2, 1, 7))
    >>> c = rec.contacts(-1)
    >>> c["body1"].tolist(), c["static2"].tolist(), c["force"].round(3).tolist()
    ([0], [0], [[9.81, 0.0, 0.0]])
    >>> rec.scene(-1).objects[0]["pose"][:3]                 # continues from the last recorded pose
    array([0. , 0. , 0.1])
    """

    def __init__(self, path, description, names, settings, arrays, contacts, offsets, resume=None):
        self.path, self.description, self.names, self.settings = path, description, names, settings
        self.t, self.q, self.v, self.status, self.nit, self.error = arrays
        self._contacts, self._offsets = contacts, offsets
        self.resume = resume        # what a continued run needs (None: a record cut short before its end)

    def __len__(self):
        return int(self.t.shape[0])

    def _step(self, step) -> int:
        """``step`` (0-based, negative from the end) as an index into the record's steps, checked."""
        if isinstance(step, (bool, np.bool_)) or not isinstance(step, (numbers.Integral, np.integer)):
            raise ModelingError("Record", "step", f"must be an integer (0-based, negative from the end), got {step!r}")
        if not -len(self) <= step < len(self):
            raise ModelingError("Record", "step", f"is {step}, out of range: the record {Path(self.path).name} holds "
                                                  f"{len(self)} step(s)")
        return int(step) % len(self)

    def contacts(self, step: int) -> dict:
        """The contact rows of a step: body1, body2, static2, id, distance, pc1, pc2, normal, force (and active).

        Parameters
        ----------
        step : int
            The step (0-based; negative from the end).

        Returns
        -------
        dict of str to ndarray
            The rows detected at the start of that step (see the class example).

        Raises
        ------
        ModelingError
            When the step is not an integer or is out of range.
        """
        step = self._step(step)
        lo, hi = int(self._offsets[step]), int(self._offsets[step + 1])
        return {k: v[lo:hi] for k, v in self._contacts.items()}

    def _bodies_statics(self):
        sc = Scene.from_description(self.description)
        bodies = [o["contactors"] for o in sc.objects if o["mass"] is not None]
        statics = [(o["contactors"], o["pose"]) for o in sc.objects if o["mass"] is None]
        return bodies, statics

    def write_html(self, path, *, title: str | None = None, max_frames: int = 400, overwrite: bool = False) -> Path:
        """The viewer page of the recorded motion (:func:`nsopt.mechanics.viewer.write_html`: offline, a time slider).

        Parameters
        ----------
        path : str or path-like
            The HTML file.
        title : str, optional
            The page's title; default the record's file name.
        max_frames : int, default 400
            The most frames kept (steps sampled evenly).
        overwrite : bool, default False
            Replace an existing file.

        Returns
        -------
        Path
            The file written (see the class example).

        Raises
        ------
        ModelingError
            When the record holds no step or no dynamic body, or ``max_frames`` is not an integer >= 1 (nothing is
            written: a page never shows nothing).
        OutputError
            When the file exists and not ``overwrite``.
        """
        from .viewer import write_html
        if not len(self):
            raise ModelingError("Record", "steps", f"the record {Path(self.path).name} holds no step: nothing to show")
        bodies, statics = self._bodies_statics()
        return write_html(path, bodies, self.q, self.t, statics, title=title or Path(self.path).stem,
                          max_frames=max_frames, overwrite=overwrite)

    def still(self, path, step: int = -1, *, title: str | None = None, overwrite: bool = False, **kw) -> Path:
        """A still image of a recorded step (:func:`nsopt.mechanics.viewer.still`).

        Parameters
        ----------
        path : str or path-like
            The image file (its suffix picks the format).
        step : int, default -1
            The step drawn.
        title : str, optional
            Default the step's time.
        overwrite : bool, default False
            Replace an existing file.
        **kw
            Passed to :func:`nsopt.mechanics.viewer.still`.

        Returns
        -------
        Path
            The file written (see the class example).

        Raises
        ------
        ModelingError
            When ``step`` is not an integer in range, or the record has no dynamic body.
        OutputError
            When the file exists (and not ``overwrite``) or its suffix is not an image format matplotlib writes.
        """
        from .viewer import still
        step = self._step(step)
        bodies, statics = self._bodies_statics()
        return still(path, bodies, self.q[step], statics, title=title or f"t = {self.t[step]:.3f} s",
                     overwrite=overwrite, **kw)

    def scene(self, step: int | None = -1) -> Scene:
        """The recorded scene; with ``step``, its bodies start from that step's poses and twists (None: the
        initial ones).

        Parameters
        ----------
        step : int or None, default -1
            The step the bodies start from; None: the recorded initial state.

        Returns
        -------
        Scene
            A new scene (see the class example).
        """
        d = json.loads(json.dumps(self.description))
        if step is not None and len(self):
            step = self._step(step)
            dyn = [o for o in d["objects"] if o["mass"] is not None]
            for b, o in enumerate(dyn):
                o["pose"], o["twist"] = self.q[step, b].tolist(), self.v[step, b].tolist()
        return Scene.from_description(d)


def load_siconos_record(path) -> "Record":
    """A record in Siconos' mechanics layout (one that ``MechanicsHdf5Runner`` wrote, or the ``data`` group of an
    nsopt record) as a :class:`~nsopt.mechanics.Record`: its scene (shapes, objects, laws, joints; Siconos' gravity
    unless the file holds nsopt's description), and per output time with velocities (the steps) the poses, twists,
    the solver's iterations and error, and the contacts of ``data/cf`` (those of each step's one-step problem: body
    indices, the static object unknown (-1), forces in the contact frame = impulse / h).

    Parameters
    ----------
    path : str or path-like
        The HDF5 file.

    Returns
    -------
    Record
        Its ``settings`` hold ``h`` (the output interval) and ``source`` = "siconos".

    Raises
    ------
    FormatError
        When the file cannot be opened, has no ``data`` group of Siconos' layout, is a 2D record, or holds a shape,
        law or dataset nsopt does not read (named in the message).

    Examples
    --------
    nsopt's records carry the layout: read back through it, the trajectory is the run's.

    >>> import os, tempfile
    >>> import numpy as np
    >>> from nsopt import mechanics as mc
    >>> sc = mc.Scene()
    >>> sc.add_primitive_shape("Cube", "Box", (0.2, 0.2, 0.2))
    >>> sc.add_primitive_shape("Ground", "Box", (2.0, 2.0, 0.2))
    >>> sc.add_Newton_impact_friction_nsl("contact", mu=0.5)
    >>> sc.add_object("cube", ["Cube"], translation=[0, 0, 0.15], mass=1.0)
    >>> sc.add_object("ground", ["Ground"], translation=[0, 0, -0.1])
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     run = sc.run(T=0.2, h=0.01, record=os.path.join(tmp, "cube.h5"))
    ...     rec = mc.load_siconos_record(os.path.join(tmp, "cube.h5"))
    >>> len(rec), bool(np.array_equal(rec.q, run.q[1:])), rec.names, rec.settings["source"]
    (20, True, ['cube'], 'siconos')
    >>> sorted(rec.contacts(-1))[:4], len(rec.contacts(-1)["id"])
    (['active', 'body1', 'body2', 'distance'], 4)
    """
    from .siconos_hdf5 import read_siconos_layout

    return Record(*read_siconos_layout(path))


def load_record(path) -> Record:
    """Read a record written by :class:`Recorder`; :class:`~nsopt.exceptions.FormatError` if it is not one.

    A record cut short inside a step keeps its complete steps.

    Parameters
    ----------
    path : str or path-like
        The HDF5 file.

    Returns
    -------
    Record
        Its arrays, settings and scene.

    Raises
    ------
    FormatError
        When the file cannot be opened as HDF5, is not an nsopt-mechanics record, is of a newer version (or its
        version is not an integer), misses its scene description or a dataset, its description is not JSON or not a
        valid scene, its datasets have the wrong shapes, declare more rows than the file holds (a dataset resized
        without data: the sizes are checked before anything is read), or its contact offsets are not
        non-decreasing offsets into the contact rows. The message names the file and what is wrong.

    Examples
    --------
    >>> import os, tempfile
    >>> from nsopt import mechanics as mc
    >>> from nsopt.exceptions import FormatError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "not.h5")
    ...     with open(path, "w") as f:
    ...         _ = f.write("text")
    ...     try:
    ...         mc.load_record(path)
    ...     except FormatError as e:
    ...         print("FormatError:", "cannot be opened as HDF5" in str(e))
    FormatError: True

    See :class:`Record` for a record read back.
    """
    import h5py
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise FormatError(path, f"cannot be opened as HDF5 ({e})") from None
    with f:
        try:
            return _read_record(f, path)
        except FormatError:
            raise
        except (KeyError, ValueError, TypeError, AttributeError, OSError) as e:   # h5py's own faults of a damaged file
            raise FormatError(path, f"damaged record ({type(e).__name__}: {e})") from None


#: The step datasets of a record: (name, trailing shape (n: the number of bodies), dtype kind).
_STEP_FIELDS = (("t", (), "f"), ("q", ("n", 7), "f"), ("v", ("n", 6), "f"), ("status", (), "OSU"), ("nit", (), "iu"),
                ("error", (), "f"))
_CONTACT_FIELDS = MappingProxyType({"body1": (), "body2": (), "static2": (), "id": (), "distance": (), "pc1": (3,),
                                    "pc2": (3,), "normal": (3,), "force": (3,), "active": ()})


def _rows_held(d) -> int:
    """The rows of dataset d backed by data in the file: a chunked dataset holds its allocated chunks' rows (a dataset
    resized without writing declares rows it does not hold), a contiguous one all or none."""
    if d.chunks is not None:
        return int(d.id.get_num_chunks()) * int(d.chunks[0])
    return d.shape[0] if d.id.get_storage_size() else 0


def _dataset(group, name, tail, kinds, path, where):
    """``group[name]``, checked: a dataset of shape (rows, *tail), dtype of one of ``kinds``, and rows held by the file."""
    import h5py
    if name not in group or not isinstance(group[name], h5py.Dataset):
        raise FormatError(path, f"missing dataset {where}/{name}")
    d = group[name]
    if d.ndim != 1 + len(tail) or tuple(d.shape[1:]) != tuple(tail):
        raise FormatError(path, f"dataset {where}/{name} has shape {d.shape}, expected (rows, {', '.join(map(str, tail))})"
                          if tail else f"dataset {where}/{name} has shape {d.shape}, expected (rows,)")
    if d.dtype.kind not in kinds and not (kinds == "OSU" and h5py.check_string_dtype(d.dtype)):
        raise FormatError(path, f"dataset {where}/{name} has dtype {d.dtype}, expected kind {kinds!r}")
    held = _rows_held(d)
    if d.shape[0] > held + 1:            # one row may be declared by a step interrupted between resize and write
        raise FormatError(path, f"dataset {where}/{name} declares {d.shape[0]} rows but the file holds data for at most "
                                f"{held}: the record is damaged (resized without data)")
    return d


def _read_record(f, path) -> Record:
    """The checks and reads of :func:`load_record` (sizes before data)."""
    import h5py
    fmt = f.attrs.get("format")
    if fmt != FORMAT:
        raise FormatError(path, f"not an {FORMAT} record (format attribute {fmt!r})")
    version = f.attrs.get("version")
    if isinstance(version, (bool, np.bool_)) or not isinstance(version, (numbers.Integral, np.integer)):
        raise FormatError(path, f"its version attribute {version!r} is not an integer")
    if int(version) > VERSION:
        raise FormatError(path, f"record version {version} is newer than this reader's {VERSION}")
    for key in ("scene", "bodies"):
        if key not in f.attrs:
            raise FormatError(path, f"has no {key!r} attribute (the {'scene description' if key == 'scene' else 'names of its bodies'})")
        if not isinstance(f.attrs[key], str):
            raise FormatError(path, f"its {key!r} attribute is a {type(f.attrs[key]).__name__}, expected JSON text")
    try:
        description, names = json.loads(f.attrs["scene"]), json.loads(f.attrs["bodies"])
    except json.JSONDecodeError as e:
        raise FormatError(path, f"its scene or bodies attribute is not JSON ({e})") from None
    try:
        scene = Scene.from_description(description)
    except (ModelingError, KeyError, TypeError, ValueError, AttributeError) as e:
        raise FormatError(path, f"its scene description is not a valid scene ({type(e).__name__}: {e})") from None
    dynamic = [o["name"] for o in scene.objects if o["mass"] is not None]
    if names != dynamic:
        raise FormatError(path, f"its bodies attribute {names!r} does not name the scene's dynamic objects {dynamic!r}")
    n = len(names)
    for g in ("steps", "contacts"):
        if g not in f or not isinstance(f[g], h5py.Group):
            raise FormatError(path, f"missing group {g!r}")
    s, c = f["steps"], f["contacts"]
    steps = {name: _dataset(s, name, tuple(n if x == "n" else x for x in tail), kinds, path, "steps")
             for name, tail, kinds in _STEP_FIELDS}
    offsets_d = _dataset(s, "contacts", (), "iu", path, "steps")
    cds = {name: _dataset(c, name, tail, "fiub" if name != "active" else "b", path, "contacts")
           for name, tail in _CONTACT_FIELDS.items()}
    # a run cut short inside a step: keep the complete steps (the sizes are checked; now read)
    m = min(min(d.shape[0] for d in steps.values()), offsets_d.shape[0] - 1)
    if m < 0:
        raise FormatError(path, "dataset steps/contacts is empty (it starts with the offset 0)")
    offsets = offsets_d[:m + 1].astype(np.int64)
    K = min(d.shape[0] for d in cds.values())
    if offsets[0] != 0 or np.any(np.diff(offsets) < 0) or offsets[-1] > K:
        raise FormatError(path, f"its contact offsets (steps/contacts) are corrupt: they must start at 0 and not "
                                f"decrease up to the {K} contact rows, got {_brief(offsets)}")
    resume = None
    if "resume" in f:
        g = f["resume"]
        step = g.attrs.get("step", -1)
        if isinstance(step, (numbers.Integral, np.integer)) and int(step) == m:
            if offsets[-1] != K:
                raise FormatError(path, f"its contact offsets (steps/contacts) are corrupt: the complete record holds "
                                        f"{K} contact rows but its offsets end at {int(offsets[-1])}")
            for k in g:
                d = g[k]
                if d.ndim and (d.shape[0] > _rows_held(d) + 1 or d.size > 1e8):
                    raise FormatError(path, f"dataset resume/{k} declares {d.shape} but the file does not hold it")
            resume = {k: g[k][()] for k in g}
    arrays = tuple(steps[name][:m] for name, _, _ in _STEP_FIELDS)
    status = np.array([x.decode() if isinstance(x, bytes) else str(x) for x in arrays[3]])
    arrays = arrays[:3] + (status,) + arrays[4:]
    contacts = {k: d[:K] for k, d in cds.items()}
    settings = {k: f.attrs[k] for k in f.attrs if k not in ("format", "version", "scene", "bodies")}
    return Record(str(path), description, names, settings, arrays, contacts, offsets, resume)


def _brief(a) -> str:
    a = np.asarray(a)
    return np.array2string(a if a.size <= 8 else np.r_[a[:4], a[-4:]], separator=", ") + (" (ends shown)" if a.size > 8 else "")
