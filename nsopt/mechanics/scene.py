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
``nsds.remove_interaction``; the integrator then steps the model and the record takes the step.

Record (HDF5, :class:`Recorder` writes, :func:`load_record` reads): attributes ``format`` =
"nsopt-mechanics", ``version`` = 1, ``scene`` (the scene's description as JSON: shapes, objects, joints,
laws, gravity, margin) and the run's settings (``h``, ``theta``, ``osns``, ``method``, ``tol``, ...);
datasets grown step by step (a run cut short keeps every complete step):

- ``steps/t`` (S,), ``steps/q`` (S, n, 7), ``steps/v`` (S, n, 6), ``steps/status`` (S,) strings,
  ``steps/nit`` (S,), ``steps/error`` (S,), ``steps/contacts`` (S + 1,) offsets into the contact rows;
- ``contacts/body1``, ``contacts/body2``, ``contacts/static2``, ``contacts/id`` (K,), ``contacts/pc1``,
  ``contacts/pc2``, ``contacts/normal``, ``contacts/force`` (K, 3), ``contacts/distance`` (K,): the rows of
  step s are ``steps/contacts[s]:steps/contacts[s+1]``; ``force`` is the contact impulse over the step
  divided by h, in the contact frame (normal, t1, t2).

A record reloads (:func:`load_record`) into its arrays and its scene (:meth:`Record.scene`), whose bodies
start from the last recorded state (``Record.scene(step=-1)``), so that a run continues where it stopped.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..exceptions import FormatError, ModelingError
from ..io._target import check_file
from ..modeling import EqualityConditionNSL, Interaction, NewtonEuler3DR, NewtonEulerDS, NewtonImpactFrictionNSL
from ..modeling import NonSmoothDynamicalSystem
from ..modeling import joints as _joints
from ..modeling import _rotation as rot
from .collision import CollisionManager, Contacts
from .shapes import Box, Capsule, Cone, Contactor, ConvexMesh, Cylinder, HalfSpace, Shape, Sphere

__all__ = ["Scene", "SceneModel", "Recorder", "Record", "load_record", "FORMAT", "VERSION"]

FORMAT, VERSION = "nsopt-mechanics", 1
_PRIMITIVES = {"Sphere": Sphere, "Box": Box, "Capsule": Capsule, "Cylinder": Cylinder, "Cone": Cone}
_JOINTS = {"KneeJointR": _joints.KneeJointR, "PivotJointR": _joints.PivotJointR,
           "PrismaticJointR": _joints.PrismaticJointR, "FixedJointR": _joints.FixedJointR}


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
    if kind not in _PRIMITIVES:
        raise ModelingError("Scene", "shape", f"unknown primitive {kind!r}; known: {sorted(_PRIMITIVES)}")
    cls = _PRIMITIVES[kind]
    return cls(params) if cls is Box else cls(*params)


def mesh_inertia(contactors, mass):
    """The inertia (3, 3) about the body origin of its contactors' solids, of uniform density and total
    ``mass`` (from their triangle meshes: exact for boxes and convex meshes, within a few % for curved shapes)."""
    import trimesh

    from .viewer import shape_mesh
    parts = []
    for c in contactors:
        V, F = shape_mesh(c.shape)
        m = trimesh.Trimesh(V @ rot.rotation_matrix(c.orientation).T + c.translation, F)
        parts.append(m)
    vol = sum(p.volume for p in parts)
    I = np.zeros((3, 3))
    for p in parts:
        # trimesh's inertia about the part's centre of mass at density 1, moved to the origin (parallel axes)
        d = p.center_mass
        I += p.moment_inertia + p.volume * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
    return I * (mass / vol)


class Scene:
    """Shapes, objects, joints and laws (Siconos ``MechanicsHdf5Runner``'s ``add_*`` methods, same names).

    Parameters
    ----------
    gravity : (3,) acceleration applied to every dynamic body (fext = m g).
    margin : the collision margin (contacts are detected closer than this).
    """

    def __init__(self, *, gravity=(0.0, 0.0, -9.81), margin: float = 0.05):
        self.gravity = np.asarray(gravity, dtype=float).reshape(3)
        self.margin = float(margin)
        self._shapes: dict = {}
        self.objects: list[dict] = []          # name, contactors, pose, twist, mass (None: static), inertia
        self.joints: list[dict] = []
        self.laws: dict = {}                   # (g1, g2) -> (name, mu, e)

    # ---- definitions
    def add_primitive_shape(self, name: str, primitive: str, params):
        """A named primitive: "Sphere" (radius), "Box" (extents), "Capsule"/"Cylinder" (radius, length),
        "Cone" (radius, height)."""
        self._shapes[name] = _shape_from_spec([primitive, list(np.atleast_1d(params).tolist())])

    def add_convex_shape(self, name: str, points):
        self._shapes[name] = ConvexMesh(points)

    def add_shape(self, name: str, shape: Shape):
        if not isinstance(shape, Shape):
            raise ModelingError("Scene", "shape", f"expected an nsopt.mechanics shape, got {type(shape).__name__}")
        self._shapes[name] = shape

    def shape(self, name: str) -> Shape:
        if name not in self._shapes:
            raise ModelingError("Scene", "shape", f"no shape named {name!r}; defined: {sorted(self._shapes)}")
        return self._shapes[name]

    def add_Newton_impact_friction_nsl(self, name: str, mu: float, e: float = 0.0, collision_group1: int = 0,  # noqa: N802
                                       collision_group2: int = 0):
        """The contact law between two collision groups (Siconos' name and defaults). A pair of groups without a
        law does not collide."""
        law = NewtonImpactFrictionNSL(e, 0.0, mu, 3, name=name)
        g = (min(collision_group1, collision_group2), max(collision_group1, collision_group2))
        self.laws[g] = law

    def add_object(self, name: str, contactors, translation, orientation=(1.0, 0.0, 0.0, 0.0), velocity=(0.0,) * 6,
                   mass=None, inertia=None):
        """A body (``mass`` given) or a static object (``mass=None``), as Siconos' ``add_object``: contactors
        (Contactor objects, or shape names), initial translation, orientation (unit quaternion (w, x, y, z), or
        (axis, angle)), twist; ``inertia`` (3,) or (3, 3), default from the contactors' solids."""
        if any(o["name"] == name for o in self.objects):
            raise ModelingError("Scene", "name", f"an object named {name!r} exists")
        cts = [Contactor(self.shape(c)) if isinstance(c, str) else c for c in
               ([contactors] if isinstance(contactors, (Contactor, str)) else contactors)]
        if len(orientation) == 2:
            axis, angle = orientation
            orientation = rot.quat_exp(float(angle) * np.asarray(axis, dtype=float) / np.linalg.norm(axis))
        pose = np.r_[np.asarray(translation, dtype=float).reshape(3), np.asarray(orientation, dtype=float).reshape(4)]
        pose = rot.normalize_q(pose)
        if mass is not None and inertia is None:
            inertia = mesh_inertia(cts, float(mass))
        self.objects.append(dict(name=name, contactors=cts, pose=pose, twist=np.asarray(velocity, dtype=float).reshape(6),
                                 mass=None if mass is None else float(mass),
                                 inertia=None if inertia is None else np.asarray(inertia, dtype=float)))

    def add_joint(self, name: str, object1: str, object2: str | None = None, points=((0.0, 0.0, 0.0),),
                  axes=((0.0, 1.0, 0.0),), joint_class: str = "PivotJointR", absolute: bool = True,
                  allow_self_collide: bool = False):
        """A joint (Siconos' ``add_joint``): ``joint_class`` in KneeJointR, PivotJointR, PrismaticJointR,
        FixedJointR; points and axes in the world frame when ``absolute``, else in object1's frame."""
        if joint_class not in _JOINTS:
            raise ModelingError("Scene", "joint_class", f"unknown joint {joint_class!r}; known: {sorted(_JOINTS)}")
        self.joints.append(dict(name=name, object1=object1, object2=object2, points=np.asarray(points, dtype=float).tolist(),
                                axes=np.asarray(axes, dtype=float).tolist(), joint_class=joint_class,
                                absolute=bool(absolute), allow_self_collide=bool(allow_self_collide)))

    # ---- description (the record's "scene" attribute)
    def describe(self) -> dict:
        def cts(cs):
            return [dict(shape=_shape_spec(c.shape), translation=c.translation.tolist(), orientation=c.orientation.tolist(),
                         group=c.group) for c in cs]
        return dict(gravity=self.gravity.tolist(), margin=self.margin,
                    objects=[dict(name=o["name"], contactors=cts(o["contactors"]), pose=o["pose"].tolist(),
                                  twist=o["twist"].tolist(), mass=o["mass"],
                                  inertia=None if o["inertia"] is None else np.asarray(o["inertia"]).tolist())
                             for o in self.objects],
                    joints=self.joints,
                    laws=[dict(name=law.name, mu=law.mu, e=law.en, groups=list(g)) for g, law in self.laws.items()])

    @classmethod
    def from_description(cls, d: dict) -> "Scene":
        sc = cls(gravity=d["gravity"], margin=d["margin"])
        for law in d["laws"]:
            sc.add_Newton_impact_friction_nsl(law["name"], law["mu"], law["e"], *law["groups"])
        for o in d["objects"]:
            cs = [Contactor(_shape_from_spec(c["shape"]), c["translation"], c["orientation"], c["group"]) for c in o["contactors"]]
            sc.add_object(o["name"], cs, o["pose"][:3], o["pose"][3:], o["twist"], o["mass"], o["inertia"])
        for j in d["joints"]:
            sc.add_joint(**j)
        return sc

    # ---- the model
    def build(self, t0: float = 0.0, T: float = 1.0) -> "SceneModel":
        """The model: a NonSmoothDynamicalSystem with a NewtonEulerDS per dynamic object (fext = m g) and an
        interaction per joint, and the collision manager with the objects' contactors."""
        nsds = NonSmoothDynamicalSystem(t0, T)
        cm = CollisionManager(margin=self.margin)
        bodies, names, index = [], [], {}
        for o in self.objects:
            if o["mass"] is None:
                cm.add_static(o["contactors"], o["pose"])
                continue
            ds = NewtonEulerDS(o["pose"], o["twist"], o["mass"], o["inertia"], fext=o["mass"] * self.gravity, name=o["name"])
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
            P, A = j["points"][0], j["axes"][0]
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


class SceneModel:
    """A built scene: ``nsds``, ``bodies`` (NewtonEulerDS, in the collision manager's order), ``collision``
    (the :class:`CollisionManager`), ``joints`` (their interactions) and ``contacts``: the contact interactions
    linked now, by persistent point id."""

    def __init__(self, scene, nsds, bodies, names, collision, joints):
        self.scene, self.nsds, self.bodies, self.names = scene, nsds, bodies, names
        self.collision, self.joints = collision, joints
        self.contacts: dict = {}
        self.last: Contacts | None = None
        self._groups = [[c.group for c in o["contactors"]] for o in scene.objects if o["mass"] is not None]
        self._static_groups = [[c.group for c in o["contactors"]] for o in scene.objects if o["mass"] is None]

    def poses(self) -> np.ndarray:
        """The bodies' current poses (n, 7)."""
        return np.array([b.q for b in self.bodies]) if self.bodies else np.zeros((0, 7))

    def twists(self) -> np.ndarray:
        return np.array([b.v for b in self.bodies]) if self.bodies else np.zeros((0, 6))

    def _law(self, c: Contacts, k: int):
        g1 = self._groups[c.body1[k]][c.contactor1[k]]
        g2 = (self._groups[c.body2[k]] if c.body2[k] >= 0 else self._static_groups[c.static2[k]])[c.contactor2[k]]
        return self.scene.laws[(min(g1, g2), max(g1, g2))]

    def update_contacts(self, Q=None) -> dict:
        """Detect the contacts at the poses Q (default: the bodies' current ones) and bring the model in line:
        link new points, move persisting ones, remove vanished ones (see the module docstring). Returns the
        contact interactions by point id."""
        Q = self.poses() if Q is None else np.asarray(Q, dtype=float)
        c = self.collision.detect(Q)
        rp1, rp2, rn = c.relative(Q)
        alive = set()
        for k in range(len(c)):
            pid = int(c.id[k])
            alive.add(pid)
            inter = self.contacts.get(pid)
            if inter is None:
                rel = NewtonEuler3DR()
                inter = Interaction(self._law(c, k), rel)
                d2 = () if c.body2[k] < 0 else (self.bodies[c.body2[k]],)
                self.nsds.link(inter, self.bodies[c.body1[k]], *d2)
                self.contacts[pid] = inter
            inter.relation.update_contact_points(rp1[k], rp2[k], rn[k])
        for pid in [p for p in self.contacts if p not in alive]:
            self.nsds.remove_interaction(self.contacts.pop(pid))
        self.last = c
        return self.contacts


# ============================================================================ record
class Recorder:
    """Writes a run to HDF5, step by step (see the module docstring for the layout)."""

    def __init__(self, path, scene: Scene, *, overwrite: bool = False, **settings):
        import h5py
        path = check_file(path, overwrite=overwrite, what="record")
        self.path = Path(path)
        self.f = h5py.File(path, "w")
        self.n = sum(o["mass"] is not None for o in scene.objects)
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
                                ("force", 3, "f8")):
            shape, maxshape = ((0,), (None,)) if width is None else ((0, width), (None, width))
            c.create_dataset(name, shape, maxshape=maxshape, chunks=(1024,) + shape[1:], dtype=dt)

    def append(self, t, q, v, *, status="", nit=0, error=0.0, contacts: Contacts | None = None, forces=None):
        """One step: time, poses (n, 7), twists (n, 6), the solver's status, iterations and error, the contacts
        and their forces (k, 3) (contact frame; zeros when None)."""
        q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
        if q.shape != (self.n, 7) or v.shape != (self.n, 6):
            raise ModelingError("Recorder", "q", f"q {q.shape} and v {v.shape} do not match {self.n} bodies")
        s, cg = self.f["steps"], self.f["contacts"]
        k0 = int(s["contacts"][-1])
        k = 0 if contacts is None else len(contacts)
        if k:
            F = np.zeros((k, 3)) if forces is None else np.asarray(forces, dtype=float).reshape(k, 3)
            for name, arr in (("body1", contacts.body1), ("body2", contacts.body2), ("static2", contacts.static2),
                              ("id", contacts.id), ("distance", contacts.distance), ("pc1", contacts.pc1),
                              ("pc2", contacts.pc2), ("normal", contacts.normal), ("force", F)):
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
        self.f.flush()

    def close(self):
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Record:
    """A reloaded record: ``t``, ``q``, ``v``, ``status``, ``nit``, ``error`` (per step), ``settings``,
    ``names`` (dynamic bodies), :meth:`contacts` of a step, :meth:`scene` to continue from a step."""

    def __init__(self, path, description, names, settings, arrays, contacts, offsets):
        self.path, self.description, self.names, self.settings = path, description, names, settings
        self.t, self.q, self.v, self.status, self.nit, self.error = arrays
        self._contacts, self._offsets = contacts, offsets

    def __len__(self):
        return int(self.t.shape[0])

    def contacts(self, step: int) -> dict:
        """The contact rows of a step: body1, body2, static2, id, distance, pc1, pc2, normal, force."""
        step = range(len(self))[step]
        lo, hi = int(self._offsets[step]), int(self._offsets[step + 1])
        return {k: v[lo:hi] for k, v in self._contacts.items()}

    def scene(self, step: int | None = -1) -> Scene:
        """The recorded scene; with ``step``, its bodies start from that step's poses and twists (None: the
        initial ones)."""
        d = json.loads(json.dumps(self.description))
        if step is not None and len(self):
            step = range(len(self))[step]
            dyn = [o for o in d["objects"] if o["mass"] is not None]
            for b, o in enumerate(dyn):
                o["pose"], o["twist"] = self.q[step, b].tolist(), self.v[step, b].tolist()
        return Scene.from_description(d)


def load_record(path) -> Record:
    """Read a record written by :class:`Recorder`; :class:`~nsopt.exceptions.FormatError` if it is not one."""
    import h5py
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise FormatError(path, f"cannot be opened as HDF5 ({e})") from None
    with f:
        if f.attrs.get("format") != FORMAT:
            raise FormatError(path, f"not an {FORMAT} record (format attribute {f.attrs.get('format')!r})")
        if int(f.attrs.get("version", -1)) > VERSION:
            raise FormatError(path, f"record version {f.attrs['version']} is newer than this reader's {VERSION}")
        try:
            s, c = f["steps"], f["contacts"]
            arrays = (s["t"][:], s["q"][:], s["v"][:], np.array([x.decode() if isinstance(x, bytes) else x for x in s["status"][:]]),
                      s["nit"][:], s["error"][:])
            offsets = s["contacts"][:]
            contacts = {k: c[k][:] for k in c}
        except KeyError as e:
            raise FormatError(path, f"missing dataset {e}") from None
        # a run cut short inside a step: keep the complete steps
        m = min(min(a.shape[0] for a in arrays), offsets.shape[0] - 1)
        arrays = tuple(a[:m] for a in arrays)
        settings = {k: f.attrs[k] for k in f.attrs if k not in ("format", "version", "scene", "bodies")}
        return Record(str(path), json.loads(f.attrs["scene"]), json.loads(f.attrs["bodies"]), settings, arrays,
                      contacts, offsets[:m + 1])
