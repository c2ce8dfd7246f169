r"""Records in Siconos' mechanics HDF5 layout: what ``siconos.io.mechanics_run.MechanicsHdf5Runner`` writes and
reads back (a run continued from its file) and ``siconos_vview`` shows (Siconos 4.4, ``siconos/io/mechanics_hdf5.py``
and ``mechanics_run.py``).

A :class:`~nsopt.mechanics.Recorder` writes this layout beside nsopt's own datasets, so that one file opens in
both: Siconos' tools read the ``data`` group, nsopt reads its ``steps``, ``contacts`` and ``resume`` groups and
its root attributes (``format`` = "nsopt-mechanics", the scene as JSON, the run's settings), which Siconos'
tools ignore. :func:`load_siconos_record` reads a record that Siconos wrote (or the ``data`` group of any file)
into a :class:`~nsopt.mechanics.Record`, so that its trajectory, contacts, viewer page and stills, and a run of
nsopt continued from any of its steps, are those of nsopt's own records.

The layout (3D), as Siconos writes it:

- root attribute ``dimension`` = 3;
- ``data/ref/<shape>``: a primitive's parameters (1, k) with attributes ``type`` = "primitive", ``primitive``
  (Siconos' name: Sphere, Box, Capsule, Cylinder, Cone) and ``id``; a convex shape's points (n, 3) with ``type`` =
  "convex";
- ``data/input/<object>``: a group with attributes ``id`` (dynamic objects 1, 2, ... in the order they were added,
  static ones -1, -2, ...), ``type`` ("dynamic" or "static"), ``mass``, ``inertia``, ``translation``,
  ``orientation`` (w, x, y, z), ``velocity`` (linear velocity in the world frame, angular velocity in the body
  frame), ``center_of_mass``; one empty dataset per contactor (attributes ``instance_name``, ``shape_name``,
  ``group``, ``translation``, ``orientation``);
- ``data/nslaws/<law>``: attributes ``type`` = "NewtonImpactFrictionNSL", ``mu``, ``e``, ``gid1``, ``gid2``;
  ``data/joints/<joint>``: ``object1``, ``object2``, ``type``, ``points``, ``axes``, ``absolute``,
  ``allow_self_collide``;
- ``data/static`` (rows: time, id, translation (3), orientation (4)); ``data/dynamic`` (the same columns, one row
  per dynamic body and output time, the initial state first); ``data/velocities`` (time, id, twist (6), from the
  first step on); ``data/cf`` (one row per contact of the step's one-step problem: time, μ, point on body 1 (3),
  point on body 2 (3), normal from body 2 to body 1 (3), the contact impulse on body 1 in the world frame (3),
  y (3: the gap, 0, 0), ẏ (3), the impulse in the contact frame (3: normal, t1, t2), the contact's id, ds 1, ds 2
  (ds 2 = ds 1 against a static object)); ``data/solv`` (time, iterations, error, local error).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType

import numpy as np

from ..exceptions import FormatError
from ..modeling import _rotation as rot

__all__ = ["SiconosLayout", "load_siconos_record", "SICONOS_GRAVITY"]

#: Siconos' runner applies ``scipy.constants.g`` (``MechanicsHdf5Runner.apply_gravity``).
SICONOS_GRAVITY = 9.80665
_WIDTHS = MappingProxyType({"static": 9, "dynamic": 9, "velocities": 8, "cf": 26, "solv": 4})
_INFO = MappingProxyType({"dynamic": "time,  ds id  ,  translation ,orientation",
         "velocities": "time,  ds id  ,translational velocities ,angular velocities",
         "cf": "time,  mu,  contact point A ,contact point B,  contact normal, relative gap  relative velocity,"
               "reaction impulse,  interaction id,ds 1 number,  ds 2 number "})


def _grow(ds, rows):
    """Append ``rows`` (k, width) to a resizable dataset."""
    rows = np.asarray(rows, dtype=float)
    if rows.shape[0]:
        n = ds.shape[0]
        ds.resize(n + rows.shape[0], axis=0)
        ds[n:] = rows


class SiconosLayout:
    """Writes Siconos' mechanics layout (the module docstring) into an open h5py file, step by step.

    Parameters
    ----------
    f : h5py.File
        The file (open for writing).
    scene : Scene
        The scene: its shapes, objects, laws and joints go to ``data/ref``, ``data/input``, ``data/nslaws``,
        ``data/joints``, its static objects to ``data/static`` and its bodies' initial state to ``data/dynamic``.
    t0 : float, default 0.0
        The start time.

    Examples
    --------
    A :class:`~nsopt.mechanics.Recorder` writes it (``Scene.run(record=...)``); Siconos' reader sees the run:

    >>> import os, tempfile, h5py
    >>> from nsopt import mechanics as mc
    >>> sc = mc.Scene()
    >>> sc.add_primitive_shape("Ball", "Sphere", 0.1)
    >>> sc.add_primitive_shape("Ground", "Box", (2.0, 2.0, 0.2))
    >>> sc.add_Newton_impact_friction_nsl("contact", mu=0.3)
    >>> sc.add_object("ball", ["Ball"], translation=[0, 0, 0.1], mass=1.0)
    >>> sc.add_object("ground", ["Ground"], translation=[0, 0, -0.1])
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = sc.run(T=0.02, h=0.01, record=os.path.join(tmp, "ball.h5"))
    ...     with h5py.File(os.path.join(tmp, "ball.h5"), "r") as f:
    ...         shapes = {k: f["data/ref"][k].attrs["primitive"] for k in f["data/ref"]}
    ...         ids = {k: int(f["data/input"][k].attrs["id"]) for k in f["data/input"]}
    ...         dyn, cf = f["data/dynamic"][:], f["data/cf"][:]
    >>> shapes, ids
    ({'Ball': 'Sphere', 'Ground': 'Box'}, {'ball': 1, 'ground': -1})
    >>> dyn[:, :5].round(3).tolist()                  # time, id, translation: the start and two steps
    [[0.0, 1.0, 0.0, 0.0, 0.1], [0.01, 1.0, 0.0, 0.0, 0.1], [0.02, 1.0, 0.0, 0.0, 0.1]]
    >>> cf[-1, [0, 1, 14, 20, 24, 25]].round(4).tolist()    # time, mu, gap, normal impulse, ds 1, ds 2
    [0.02, 0.3, 0.0, 0.0981, 1.0, 1.0]
    """

    def __init__(self, f, scene, t0: float = 0.0):
        self.f = f
        f.attrs["dimension"] = 3
        data = f.require_group("data")
        for g in ("ref", "input", "nslaws", "joints", "permanent_interactions", "plugins", "external_functions",
                  "boundary_conditions", "log"):
            data.require_group(g)
        self.sets = {}
        for name, width in _WIDTHS.items():
            ds = data.create_dataset(name, (0, width), maxshape=(None, width), chunks=(256, width), dtype="f8")
            if name in _INFO:
                ds.attrs["info"] = _INFO[name]
            self.sets[name] = ds
        names = self._shapes(data["ref"], scene)
        dyn = [o for o in scene.objects if o["mass"] is not None]
        sta = [o for o in scene.objects if o["mass"] is None]
        self.ids = np.arange(1, len(dyn) + 1, dtype=float)
        for k, o in enumerate(dyn):
            self._object(data["input"], o, k + 1, names)
        for k, o in enumerate(sta):
            self._object(data["input"], o, -(k + 1), names)
        mu = {}
        for (g1, g2), law in scene.laws.items():
            ds = data["nslaws"].create_dataset(law.name or f"law{g1}_{g2}", (0,), dtype="f8")
            ds.attrs.update(type="NewtonImpactFrictionNSL", mu=law.mu, e=law.en, gid1=g1, gid2=g2)
            mu[g1, g2] = law.mu
        self.mu = mu
        self.groups = [[c.group for c in o["contactors"]] for o in dyn]
        self.static_groups = [[c.group for c in o["contactors"]] for o in sta]
        for j in scene.joints:
            ds = data["joints"].create_dataset(j["name"], (0,), dtype="f8")
            ds.attrs.update(object1=j["object1"], type=j["joint_class"], points=np.asarray(j["points"], dtype=float),
                            axes=np.asarray(j["axes"], dtype=float), absolute=bool(j["absolute"]),
                            allow_self_collide=bool(j["allow_self_collide"]))
            if j["object2"] is not None:
                ds.attrs["object2"] = j["object2"]
        _grow(self.sets["static"], [np.r_[t0, -(k + 1), o["pose"]] for k, o in enumerate(sta)])
        if dyn:
            self._dynamic(t0, np.array([o["pose"] for o in dyn]))

    @staticmethod
    def _shapes(ref, scene) -> dict:
        """``data/ref``: the shapes of the contactors, by the scene's names (``shape<k>`` for unnamed ones); returns
        {id(shape): name}."""
        names = {id(s): n for n, s in scene._shapes.items()}
        k = 0
        for o in scene.objects:
            for c in o["contactors"]:
                if id(c.shape) not in names:
                    while f"shape{k}" in scene._shapes:
                        k += 1
                    names[id(c.shape)] = f"shape{k}"
                    k += 1
        done = set()
        sid = 0
        for o in scene.objects:
            for c in o["contactors"]:
                name = names[id(c.shape)]
                if name in done:
                    continue
                done.add(name)
                s = c.shape
                if s.kind == "Convex":
                    ds = ref.create_dataset(name, data=np.asarray(s.vertices, dtype=float))
                    ds.attrs["type"] = "convex"
                else:       # Siconos' primitives (a half-space is nsopt's: Siconos' tools do not know it)
                    ds = ref.create_dataset(name, data=np.asarray(s.params(), dtype=float).reshape(1, -1))
                    ds.attrs.update(type="primitive", primitive=s.kind)
                ds.attrs["id"] = sid
                sid += 1
        return names

    @staticmethod
    def _object(inp, o, oid, names):
        g = inp.create_group(o["name"])
        g.attrs.update(id=oid, type="dynamic" if oid > 0 else "static", translation=o["pose"][:3],
                       orientation=o["pose"][3:], velocity=o["twist"], center_of_mass=np.zeros(3),
                       allow_self_collide=False)
        if oid > 0:
            g.attrs["mass"] = o["mass"]
            g.attrs["inertia"] = np.asarray(o["inertia"], dtype=float)
        for k, c in enumerate(o["contactors"]):
            name = names[id(c.shape)]
            inst = f"{name}-{k}"
            ds = g.create_dataset(inst, (0, 0), dtype="f8")
            ds.attrs.update(instance_name=inst, shape_name=name, group=c.group, translation=c.translation,
                            orientation=c.orientation)

    def _dynamic(self, t, Q):
        n = Q.shape[0]
        _grow(self.sets["dynamic"], np.column_stack([np.full(n, t), self.ids, Q]))

    def append(self, t, q, v, *, h, contacts=None, forces=None, active=None, nit=0, error=0.0):
        """One step: the poses (n, 7) and twists (n, 6) at time t, the contacts of the step's one-step problem
        (the rows of ``contacts`` where ``active``; ``forces`` (k, 3) their forces in the contact frame, impulse
        over h), the solver's iterations and error.

        Parameters
        ----------
        t : float
            The step's end time.
        q, v : ndarray
            Poses (n, 7) and twists (n, 6).
        h : float
            The step (the impulses are the forces times h).
        contacts : Contacts, optional
            The contacts detected at the step's start.
        forces : (k, 3) ndarray, optional
            Their forces in the contact frame.
        active : (k,) bool ndarray, optional
            Which were in the step's one-step problem (Siconos writes those of its index set 1).
        nit : int, default 0
            The solver's iterations.
        error : float, default 0.0
            Its error.
        """
        n = q.shape[0]
        self._dynamic(t, q)
        _grow(self.sets["velocities"], np.column_stack([np.full(n, t), self.ids, v]))
        if contacts is not None and len(contacts) and active is not None and np.any(active):
            on = np.flatnonzero(active)
            nc = contacts.normal[on]
            lam = forces[on] * h
            t1, t2 = rot.ortho_base(nc)
            world = lam[:, :1] * nc + lam[:, 1:2] * t1 + lam[:, 2:3] * t2
            b1 = contacts.body1[on]
            b2 = contacts.body2[on]
            mu = np.array([self._mu(contacts, j) for j in on.tolist()])
            zeros = np.zeros((on.shape[0], 2))
            rows = np.column_stack([np.full(on.shape[0], t), mu, contacts.pc1[on], contacts.pc2[on], nc, world,
                                    contacts.distance[on], zeros, np.zeros((on.shape[0], 3)), lam,
                                    contacts.id[on], b1 + 1, np.where(b2 >= 0, b2 + 1, b1 + 1)])
            _grow(self.sets["cf"], rows)
        _grow(self.sets["solv"], [[t, nit, error, error]])

    def _mu(self, c, j):
        g1 = self.groups[c.body1[j]][c.contactor1[j]]
        g2 = (self.groups[c.body2[j]] if c.body2[j] >= 0 else self.static_groups[c.static2[j]])[c.contactor2[j]]
        return self.mu.get((min(g1, g2), max(g1, g2)), 0.0)


# ============================================================================ reading
def _attr(a, key, default=None):
    v = a.get(key, default)
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.ndarray) and v.dtype.kind in "SO" and v.ndim == 0:
        v = v[()]
        return v.decode() if isinstance(v, bytes) else v
    return v


def _description(path, f) -> dict:
    """The scene of a Siconos record as :meth:`Scene.describe`'s plain data (``data/ref``, ``data/input``,
    ``data/nslaws``, ``data/joints``); gravity Siconos' (:data:`SICONOS_GRAVITY`)."""
    data = f["data"]
    shapes = {}
    for name in data["ref"]:
        ds = data["ref"][name]
        kind = _attr(ds.attrs, "type")
        if kind == "primitive":
            prim = _attr(ds.attrs, "primitive")
            if prim not in ("Sphere", "Box", "Capsule", "Cylinder", "Cone"):
                raise FormatError(path, f"shape {name!r}: primitive {prim!r} is not one nsopt has "
                                        "(Sphere, Box, Capsule, Cylinder, Cone)")
            shapes[name] = [prim, np.asarray(ds[()], dtype=float).reshape(-1).tolist()]
        elif kind == "convex":
            shapes[name] = ["Convex", np.asarray(ds[()], dtype=float).reshape(-1, 3).tolist()]
        else:
            raise FormatError(path, f"shape {name!r} of type {kind!r}: nsopt reads primitives and convex shapes")
    objects = []
    for name in data["input"]:
        g = data["input"][name]
        a = g.attrs
        oid = int(a["id"])
        dynamic = _attr(a, "type", "dynamic" if oid > 0 else "static") == "dynamic"
        com = np.asarray(a.get("center_of_mass", np.zeros(3)), dtype=float).reshape(3)
        cts = []
        for cname in g:
            c = g[cname].attrs
            shape = _attr(c, "shape_name")
            if shape not in shapes:
                raise FormatError(path, f"object {name!r}: contactor {cname!r} names the shape {shape!r}, not in data/ref")
            cts.append(dict(shape=shapes[shape], translation=(np.asarray(c.get("translation", np.zeros(3)), dtype=float)
                                                              - com).tolist(),
                            orientation=rot.normalize_q(np.r_[np.zeros(3), np.asarray(
                                c.get("orientation", [1.0, 0, 0, 0]), dtype=float)])[3:].tolist(),
                            group=int(c.get("group", 0))))
        ori = np.asarray(a.get("orientation", [1.0, 0, 0, 0]), dtype=float).reshape(-1)
        if ori.shape[0] != 4:
            raise FormatError(path, f"object {name!r}: orientation of {ori.shape[0]} entries (a 2D record?)")
        inertia = a.get("inertia")
        if inertia is not None:
            inertia = np.asarray(inertia, dtype=float)
            inertia = (np.diag(inertia) if inertia.shape == (3,) else inertia.reshape(3, 3)).tolist()
        objects.append((oid, dict(name=name, contactors=cts, pose=np.r_[np.asarray(a["translation"], dtype=float),
                                                                          ori / np.linalg.norm(ori)].tolist(),
                                  twist=np.asarray(a.get("velocity", np.zeros(6)), dtype=float).reshape(6).tolist(),
                                  mass=float(a["mass"]) if dynamic else None, inertia=inertia if dynamic else None,
                                  force=None, moment=None, com_offset=[0.0, 0.0, 0.0])))
    # dynamic objects by id (1, 2, ...), then the static ones (-1, -2, ...)
    objects.sort(key=lambda x: (x[0] < 0, abs(x[0])))
    laws = []
    for name in data["nslaws"]:
        a = data["nslaws"][name].attrs
        if _attr(a, "type") != "NewtonImpactFrictionNSL":
            raise FormatError(path, f"law {name!r} of type {_attr(a, 'type')!r}: nsopt reads NewtonImpactFrictionNSL")
        laws.append(dict(name=name, mu=float(a["mu"]), e=float(a.get("e", 0.0)),
                         groups=[int(a.get("gid1", 0)), int(a.get("gid2", 0))]))
    joints = []
    for name in data.get("joints", {}):
        a = data["joints"][name].attrs
        joints.append(dict(name=name, object1=_attr(a, "object1"), object2=_attr(a, "object2"),
                           points=np.asarray(a.get("points", [[0.0, 0, 0]]), dtype=float).tolist(),
                           axes=np.asarray(a.get("axes", [[0.0, 1, 0]]), dtype=float).tolist(),
                           joint_class=_attr(a, "type"), absolute=bool(a.get("absolute", True)),
                           allow_self_collide=bool(a.get("allow_self_collide", False))))
    return dict(gravity=[0.0, 0.0, -SICONOS_GRAVITY], margin=0.05, objects=[o for _, o in objects], joints=joints,
                laws=laws)


def _timed(ds, width: int) -> np.ndarray:
    """A dataset of rows (time, ...) as float64, (-1, width); a single-precision dataset (Siconos' runner can write
    float32) has its times read as the shortest decimals that round to them (0.30000001192092896 -> 0.3), so that
    the record's times are on its step grid and a run continued from it has a whole number of steps."""
    a = np.asarray(ds[()], dtype=float).reshape(-1, width)
    if ds.dtype == np.float32 and a.shape[0]:
        a[:, 0] = [float(np.format_float_positional(np.float32(t), unique=True)) for t in a[:, 0]]
    return a


def read_siconos_layout(path) -> tuple:
    """The arguments of a :class:`~nsopt.mechanics.Record` read from a file in Siconos' mechanics layout (see
    :func:`~nsopt.mechanics.load_siconos_record`, which makes the Record; this module does not import the scene's)."""
    import h5py

    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise FormatError(path, f"cannot be opened as HDF5 ({e})") from None
    with f:
        if "data" not in f or not isinstance(f["data"], h5py.Group):
            raise FormatError(path, "no 'data' group: not a record in Siconos' mechanics layout")
        if int(f.attrs.get("dimension", 3)) != 3:
            raise FormatError(path, f"a {int(f.attrs['dimension'])}D record: nsopt reads 3D ones")
        data = f["data"]
        for name in ("ref", "input", "nslaws", "dynamic"):
            if name not in data:
                raise FormatError(path, f"missing data/{name}")
        desc = _description(path, f)
        if "scene" in f.attrs:                  # written by nsopt: its own description (gravity, margin, forces)
            desc = json.loads(f.attrs["scene"])
        dyn_objs = [o for o in desc["objects"] if o["mass"] is not None]
        names = [o["name"] for o in dyn_objs]
        n = len(names)
        ids = {int(data["input"][nm].attrs["id"]): k for k, nm in enumerate(names)}
        D = _timed(data["dynamic"], 9)
        V = _timed(data["velocities"], 8) if "velocities" in data else np.zeros((0, 8))
        V = V[V[:, 1] != 0]                     # (Siconos' runner leaves zero rows at the start of the dataset)
        times = np.unique(V[:, 0])
        S = times.shape[0]
        q = np.zeros((S, n, 7))
        v = np.zeros((S, n, 6))
        for arr, width, out in ((D, 7, q), (V, 6, v)):
            sel = np.isin(arr[:, 0], times)
            rows = arr[sel]
            step = np.searchsorted(times, rows[:, 0])
            body = np.array([ids.get(int(i), -1) for i in rows[:, 1]], dtype=np.intp)
            ok = body >= 0
            out[step[ok], body[ok]] = rows[ok, 2:2 + width]
        h = float(np.diff(np.r_[D[0, 0] if D.shape[0] else 0.0, times]).min()) if S else 0.0
        C = _timed(data["cf"], 26) if "cf" in data else np.zeros((0, 26))
        C = C[np.isin(C[:, 0], times)]
        C = C[np.argsort(C[:, 0], kind="stable")]
        offsets = np.searchsorted(C[:, 0], times, side="left")
        offsets = np.r_[offsets, C.shape[0]].astype(np.int64)
        b1 = np.array([ids.get(int(i), -1) for i in C[:, 24]], dtype=np.int64)
        b2 = np.array([ids.get(int(j), -1) if int(j) != int(i) else -1 for i, j in zip(C[:, 24], C[:, 25])],
                      dtype=np.int64)
        contacts = {"body1": b1, "body2": b2, "static2": np.full(C.shape[0], -1, dtype=np.int64),
                    "id": C[:, 23].astype(np.int64), "distance": C[:, 14].copy(), "pc1": C[:, 2:5].copy(),
                    "pc2": C[:, 5:8].copy(), "normal": C[:, 8:11].copy(),
                    "force": C[:, 20:23] / h if h > 0 else C[:, 20:23].copy(), "active": np.ones(C.shape[0], dtype=bool)}
        nit, err = np.zeros(S, dtype=np.int64), np.full(S, np.nan)
        if "solv" in data:
            Sv = _timed(data["solv"], 4)
            k = np.searchsorted(times, Sv[:, 0])
            ok = (k < S) & (times[np.minimum(k, S - 1)] == Sv[:, 0])
            nit[k[ok]], err[k[ok]] = Sv[ok, 1].astype(np.int64), Sv[ok, 2]
        status = np.array(["siconos"] * S)
        settings = {"h": h, "source": "siconos", "t0": float(D[0, 0]) if D.shape[0] else 0.0}
        return str(Path(path)), desc, names, settings, (times, q, v, status, nit, err), contacts, offsets
