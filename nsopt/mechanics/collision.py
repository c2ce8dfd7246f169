r"""Contact detection with coal (the maintained successor of hpp-fcl), in the manner of Siconos'
``SiconosBulletCollisionManager``: bodies carry contactors; one call to :meth:`CollisionManager.detect`
runs coal's broad phase (``DynamicAABBTreeCollisionManager``) and narrow phase over the whole scene and
returns every contact point within the margin, as stacked arrays (:class:`Contacts`).

Conventions (those of :class:`nsopt.modeling.NewtonEuler3DR`): ``body1`` is a dynamic body, ``body2`` another
dynamic body or -1 (a static object: the world); ``pc1`` lies on body 1, ``pc2`` on body 2, the unit normal
``normal`` points from body 2 towards body 1 and ``distance`` is the signed distance along it (negative when
the shapes interpenetrate).

Manifolds. A pair of polyhedral contactors in contact over a face (box on box, box on a half-space, a
convex mesh lying flat) gives the polygon of coal's contact patch, reduced to at most ``max_points`` (4)
points spanning it (the deepest point, the farthest from it, then the points making the largest
triangles on either side); curved shapes give one point (two for a capsule lying flat). Each point
carries an ``id`` that survives from one :meth:`detect` to the next while the point persists (same pair of
contactors, both its body-frame points within ``persistence`` of the previous ones: Bullet's rule with its
contact-breaking threshold), so a warm start can follow it.

Interpenetration. Shapes that start interpenetrating deeper than a tolerance are an error
(:meth:`CollisionManager.check_interpenetration` raises :class:`InterpenetrationError` naming the pairs);
during a run a negative distance is reported as it is (the time-stepping scheme pushes the bodies apart
at the velocity level and the deepest penetration is recorded per step). Non-convex meshes are refused by
:meth:`nsopt.mechanics.ConvexMesh.from_file` unless their convex hull is asked for.

Groups and filters. Each contactor has a collision group; :meth:`CollisionManager.set_group_pair` switches
the pairs of groups that collide (all do by default), :meth:`CollisionManager.exclude_pair` two bodies
that never collide (bodies held by a joint, as Siconos' ``allow_self_collide=False``). Static objects
never collide with each other.
"""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np

from ..exceptions import ModelingError, NsoptWarning
from ..modeling import _rotation as rot
from ..modeling._check import scalar, vector
from . import _collision_kernels as kern
from .shapes import Contactor, HalfSpace

__all__ = ["CollisionManager", "Contacts", "InterpenetrationError", "TunnellingWarning"]

# a line through a patch point along the normal that passes by a polyhedron's vertex within this fraction of the
# margin touches it there (CollisionManager._along: coal's normal and patch points carry round-off)
TOUCH = 1e-3


class TunnellingWarning(NsoptWarning):
    """A body passed through another object, or ended deep inside one, within one time step (it moved farther than
    its own size: the contact detection at the start and at the end of the step cannot see it).

    Issued by :meth:`nsopt.mechanics.Scene.run` (:meth:`CollisionManager.swept`), naming the body, the object and
    the step; ``warnings.simplefilter("error", TunnellingWarning)`` makes it an error that stops the run (the
    record keeps every step up to that one). The cure is a smaller time step.
    """


class InterpenetrationError(ModelingError):
    """Shapes interpenetrate deeper than the tolerance where they must not (at the start of a run).

    A :class:`~nsopt.exceptions.ModelingError`; its message names the deepest pairs and their depths.

    Examples
    --------
    See the example of :class:`CollisionManager` (a sphere pushed into the ground).
    """


@dataclasses.dataclass
class Contacts:
    """Contact points of a scene, stacked (k rows). See the module docstring for the conventions.

    Attributes
    ----------
    body1 : (k,) int ndarray
        A dynamic body.
    body2 : (k,) int ndarray
        A dynamic body or -1 (static object).
    static2 : (k,) int ndarray
        The static object where body2 == -1, else -1.
    contactor1, contactor2 : (k,) int ndarray
        The index in body 1's contactors, and in body 2's (or the static object's).
    pc1, pc2 : (k, 3) ndarray
        The world points on body 1 and on body 2.
    normal : (k, 3) ndarray
        The unit normal from body 2 towards body 1.
    distance : (k,) ndarray
        The signed distance along the normal (negative in interpenetration).
    id : (k,) int64 ndarray
        The persistent point id.
    new : (k,) bool ndarray
        The point was not there at the previous detection.

    Examples
    --------
    See the example of :class:`CollisionManager` (the contact of a sphere above the ground, its fields
    and :meth:`relative`).
    """

    body1: np.ndarray           # (k,) int, a dynamic body
    body2: np.ndarray           # (k,) int, a dynamic body or -1 (static object)
    static2: np.ndarray         # (k,) int, the static object where body2 == -1, else -1
    contactor1: np.ndarray      # (k,) int, index in body 1's contactors
    contactor2: np.ndarray      # (k,) int, index in body 2's (or the static object's) contactors
    pc1: np.ndarray             # (k, 3) world point on body 1
    pc2: np.ndarray             # (k, 3) world point on body 2
    normal: np.ndarray          # (k, 3) unit normal from body 2 towards body 1
    distance: np.ndarray        # (k,) signed distance
    id: np.ndarray              # (k,) int64, persistent point id
    new: np.ndarray             # (k,) bool, the point was not there at the previous detection

    def __len__(self):
        return int(self.body1.shape[0])

    @classmethod
    def empty(cls):
        """No contact (k = 0)."""
        i, f3 = np.zeros(0, dtype=np.int64), np.zeros((0, 3))
        return cls(i, i.copy(), i.copy(), i.copy(), i.copy(), f3, f3.copy(), f3.copy(), np.zeros(0), i.copy(),
                   np.zeros(0, dtype=bool))

    def relative(self, Q):
        """Body-frame data (rel_pc1, rel_pc2, rel_nc) at the poses Q (n, 7) of the dynamic bodies, as
        :func:`nsopt.modeling.newton_euler.contact_outputs` and ``NewtonEuler3DR.update_contact_points`` take
        them: pc1 in body 1's frame; pc2 and the normal in body 2's frame (the world's for a static object).

        Parameters
        ----------
        Q : (n, 7) array_like
            The poses of the dynamic bodies.

        Returns
        -------
        rel_pc1, rel_pc2, rel_nc : (k, 3) ndarray
            The body-frame points and normal.

        Examples
        --------
        See the example of :class:`CollisionManager`.
        """
        Q = np.asarray(Q, dtype=float)
        i, f = np.int64, float
        return kern.body_frames(rot.rotation_matrix(Q[:, 3:7]), Q, np.asarray(self.body1, dtype=i),
                                np.asarray(self.body2, dtype=i), np.asarray(self.pc1, dtype=f),
                                np.asarray(self.pc2, dtype=f), np.asarray(self.normal, dtype=f))


class _Object:
    __slots__ = ("owner", "static", "contactor", "index", "obj", "shape", "hs", "row_norms")

    def __init__(self, owner, static, contactor, index, obj, shape):
        self.owner, self.static, self.contactor, self.index, self.obj, self.shape = owner, static, contactor, index, obj, shape
        self.hs = shape.halfspaces()         # {y : A y <= b} of a polyhedron (None: curved), as coal's geometry: fixed
        self.row_norms = None if self.hs is None else np.linalg.norm(self.hs[0], axis=1)      # |A_i| (_along)


class CollisionManager:
    """Contact detection for a scene of rigid bodies (see the module docstring).

    Parameters
    ----------
    margin : float, default 0.05
        Contacts are reported for shapes closer than this (coal's ``security_margin``; Siconos and
        Bullet call it the contact-processing threshold).
    persistence : float, default 0.02
        How far (body frames) a point may move and keep its id.
    max_points : int, default 4
        The most points kept per pair of contactors.
    reuse : float, optional
        A pair's narrow phase is rerun only when its relative pose moved by more than this since the last
        one (translation plus rotation times the smaller object's radius); default ``0.02 * margin``, in
        [0, margin).

    Raises
    ------
    ModelingError
        When ``margin < 0``, ``persistence <= 0``, ``max_points < 1`` or ``reuse`` is outside [0, margin).

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt import mechanics as mc
    >>> cm = mc.CollisionManager(margin=0.05)
    >>> cm.add_static(mc.Contactor(mc.HalfSpace()))               # the ground z <= 0
    0
    >>> cm.add_body(mc.Contactor(mc.Sphere(0.1)), pose=[0, 0, 0.12, 1, 0, 0, 0])
    0
    >>> c = cm.detect()                                             # the sphere 0.02 above the ground
    >>> len(c), c.body1.tolist(), c.body2.tolist(), c.static2.tolist(), c.distance.round(6).tolist()
    (1, [0], [-1], [0], [0.02])
    >>> c.pc1.round(6).tolist(), c.normal.tolist(), c.new.tolist()
    ([[0.0, 0.0, 0.02]], [[0.0, 0.0, 1.0]], [True])
    >>> rp1, rp2, rn = c.relative([[0, 0, 0.12, 1, 0, 0, 0]])      # in the bodies' frames
    >>> rp1.round(6).tolist(), rp2.tolist(), rn.tolist()
    ([[0.0, 0.0, -0.1]], [[0.0, 0.0, 0.0]], [[0.0, 0.0, 1.0]])
    >>> c2 = cm.detect(np.array([[0, 0, 0.11, 1, 0, 0, 0]]))        # moved: the point keeps its id
    >>> c2.id.tolist() == c.id.tolist(), c2.new.tolist(), c2.distance.round(6).tolist()
    (True, [False], [0.01])
    >>> len(cm.detect(np.array([[0, 0, 1.0, 1, 0, 0, 0]])))         # beyond the margin
    0
    >>> len(mc.Contacts.empty())
    0
    >>> try:                                                        # pushed 0.05 into the ground
    ...     cm.check_interpenetration(Q=np.array([[0, 0, 0.05, 1, 0, 0, 0]]))
    ... except mc.InterpenetrationError as e:
    ...     print(e)
    CollisionManager.poses: 1 contact point(s) interpenetrate deeper than 0.001 (body 0 and static 0 by 0.05); move the bodies apart before the run
    """

    def __init__(self, *, margin: float = 0.05, persistence: float = 0.02, max_points: int = 4,
                 reuse: float | None = None):
        import coal
        self._coal = coal
        o = "CollisionManager"
        margin = scalar(margin, o, "margin", low=0.0)
        persistence = scalar(persistence, o, "persistence", low=0.0, low_open=True)
        if isinstance(max_points, bool) or not isinstance(max_points, numbers.Integral) or max_points < 1:
            raise ModelingError(o, "max_points", f"must be an integer >= 1, got {max_points!r}")
        reuse = 0.02 * margin if reuse is None else scalar(reuse, o, "reuse")
        if not 0 <= reuse < max(margin, 1e-300):
            raise ModelingError("CollisionManager", "reuse", f"must be in [0, margin), got {reuse!r}")
        self.margin, self.persistence, self.max_points = float(margin), float(persistence), int(max_points)
        self.reuse = float(reuse)
        self._cache = None                 # per candidate pair: its relative pose and points at its last narrow phase
        self.stats = {"pairs": 0, "narrow": 0}
        self._objects: list[_Object] = []
        self.bodies: list[list[Contactor]] = []
        self.statics: list[list[Contactor]] = []
        self._static_poses: list[np.ndarray] = []
        self._body_objects: list[list[int]] = []
        self._excluded: set = set()
        self._group_off: set = set()
        self._previous = None              # (pair keys sorted, ids, body-frame points) of the last detection
        self._codes = None                 # the excluded pairs' and the groups switched off's codes, sorted
        self._body_R = None                # the bodies' rotations at the poses of the last update()
        self._next_id = 0
        self._obj_R = np.zeros((0, 3, 3))  # each coal object's rotation and position (world frame)
        self._obj_x = np.zeros((0, 3))
        self._local: list = []             # per object: local AABB centre, half extents, infinite, rotation, offset, radius, group
        self._stale = np.zeros(0, dtype=bool)   # coal's transform of the object lags behind _obj_R, _obj_x
        self._obj_body = np.zeros(0, dtype=np.int64)
        self._patch_request = coal.ContactPatchRequest()       # curved shapes: coal's patch tolerance (1e-3)
        self._flat_request = coal.ContactPatchRequest()        # polyhedra: every support point within the margin
        self._flat_request.setPatchTolerance(max(self.margin, 1e-3))
        self._request = coal.CollisionRequest(coal.CollisionRequestFlag.CONTACT, 1)
        self._request.security_margin = self.margin
        self._result = coal.CollisionResult()                  # coal's results, cleared and reused by each call
        self._patch_result = coal.ContactPatchResult(self._patch_request)
        self._flat_result = coal.ContactPatchResult(self._flat_request)

    # ---- building
    def _register(self, contactors, pose, static):
        if isinstance(contactors, Contactor):
            contactors = [contactors]
        contactors = list(contactors)
        owner = len(self.statics) if static else len(self.bodies)
        label = f"{'static' if static else 'body'} {owner}"
        if not contactors:
            raise ModelingError("CollisionManager", label, "has no contactor")
        idx = []
        for c, ct in enumerate(contactors):
            if not isinstance(ct, Contactor):
                raise ModelingError("CollisionManager", label, f"contactor {c} is a {type(ct).__name__}, expected a Contactor")
            if isinstance(ct.shape, HalfSpace) and not static:
                raise ModelingError("CollisionManager", label, "a HalfSpace can only belong to a static object")
            g = ct.shape.geometry()
            g.computeLocalAABB()
            g.cost_density = float(len(self._objects))       # coal hands back geometries: this tags them
            if np.isfinite(g.aabb_radius):
                g.aabb_radius += self.margin
                g.aabb_local.min_ = g.aabb_local.min_ - self.margin
                g.aabb_local.max_ = g.aabb_local.max_ + self.margin
            obj = self._coal.CollisionObject(g, self._coal.Transform3s(np.eye(3), np.zeros(3)), False)
            idx.append(len(self._objects))
            self._objects.append(_Object(owner, static, c, len(self._objects), obj, ct.shape))
            inf = not np.isfinite(g.aabb_radius)
            lo = np.zeros(3) if inf else np.asarray(g.aabb_local.min_, dtype=float)
            hi = np.zeros(3) if inf else np.asarray(g.aabb_local.max_, dtype=float)
            self._local.append((0.5 * (lo + hi), 0.5 * (hi - lo), inf, ct.local_rotation(), ct.translation,
                                np.inf if inf else float(ct.shape.bounding_radius()), ct.group))
        self._obj_R = np.concatenate([self._obj_R, np.zeros((len(idx), 3, 3))])
        self._obj_x = np.concatenate([self._obj_x, np.zeros((len(idx), 3))])
        self._owner_arrays = (np.array([o.owner for o in self._objects], dtype=np.int64),
                              np.array([o.static for o in self._objects], dtype=bool),
                              np.array([o.contactor for o in self._objects], dtype=np.int64))
        L = self._local
        self._lc, self._le = np.array([x[0] for x in L]), np.array([x[1] for x in L])
        self._inf = np.array([x[2] for x in L], dtype=bool)
        self._lR, self._lt = np.array([x[3] for x in L]), np.array([x[4] for x in L])
        self._radius = np.array([x[5] for x in L])
        self._curved = np.array([o.shape.curved for o in self._objects], dtype=bool)
        self._group = np.array([x[6] for x in L], dtype=np.int64)
        self._hs_n, self._hs_off = np.zeros((len(L), 3)), np.zeros(len(L))      # a half-space's plane, its frame
        for h in np.flatnonzero(self._inf).tolist():
            A, bb = self._objects[h].hs
            self._hs_n[h], self._hs_off[h] = A[0], bb[0]
        self._stale = np.concatenate([self._stale, np.zeros(len(idx), dtype=bool)])
        self._cache = None
        self._codes = None
        return contactors, idx

    def add_body(self, contactors, pose=(0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)) -> int:
        """A dynamic body with its contactor(s), at ``pose`` (7,); returns its index (its row in Q).

        Parameters
        ----------
        contactors : Contactor or list of Contactor
            Its contactors (a compound when several).
        pose : (7,) array_like, default the identity pose
            Its position and quaternion.

        Returns
        -------
        int
            The body's index.

        Raises
        ------
        ModelingError
            When there is no contactor, one is not a :class:`Contactor`, or one is a :class:`HalfSpace`
            (static objects only).

        Examples
        --------
        >>> from nsopt import mechanics as mc
        >>> cm = mc.CollisionManager()
        >>> cm.add_body(mc.Contactor(mc.Sphere(0.1))), cm.add_body([mc.Contactor(mc.Box([1, 1, 1]))])
        (0, 1)
        """
        pose = _pose(pose, f"body {len(self.bodies)}")
        contactors, idx = self._register(contactors, pose, False)
        self.bodies.append(contactors)
        self._body_objects.append(idx)
        self._obj_body = np.concatenate([self._obj_body, np.full(len(idx), len(self.bodies) - 1, dtype=np.int64)])
        self._place(idx, contactors, pose)
        return len(self.bodies) - 1

    def add_static(self, contactors, pose=(0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)) -> int:
        """A static object (contact only, never moves).

        Parameters
        ----------
        contactors : Contactor or list of Contactor
            Its contactors.
        pose : (7,) array_like, default the identity pose
            Its position and quaternion.

        Returns
        -------
        int
            The static object's index (the ``static2`` of its contacts).

        Raises
        ------
        ModelingError
            When there is no contactor or one is not a :class:`Contactor`.

        Examples
        --------
        >>> from nsopt import mechanics as mc
        >>> mc.CollisionManager().add_static(mc.Contactor(mc.HalfSpace()))
        0
        """
        pose = _pose(pose, f"static {len(self.statics)}")
        contactors, idx = self._register(contactors, pose, True)
        self._obj_body = np.concatenate([self._obj_body, np.full(len(idx), -1, dtype=np.int64)])
        self.statics.append(contactors)
        self._static_poses.append(pose)
        self._place(idx, contactors, pose)
        return len(self.statics) - 1

    def exclude_pair(self, a: int, b: int):
        """Dynamic bodies a and b never collide (e.g. held together by a joint).

        Parameters
        ----------
        a, b : int
            Body indices.

        Examples
        --------
        >>> from nsopt import mechanics as mc
        >>> cm = mc.CollisionManager()
        >>> a = cm.add_body(mc.Contactor(mc.Sphere(0.1)), pose=[0, 0, 0, 1, 0, 0, 0])
        >>> b = cm.add_body(mc.Contactor(mc.Sphere(0.1)), pose=[0.15, 0, 0, 1, 0, 0, 0])
        >>> len(cm.detect())
        1
        >>> cm.exclude_pair(a, b)
        >>> len(cm.detect())
        0
        """
        self._excluded.add((min(a, b), max(a, b)))
        self._codes = None

    def set_group_pair(self, g1: int, g2: int, collide: bool = True):
        """Whether contactors of groups g1 and g2 collide (all pairs do by default).

        Parameters
        ----------
        g1, g2 : int
            Collision groups.
        collide : bool, default True
            Switch the pair on or off.

        Examples
        --------
        >>> from nsopt import mechanics as mc
        >>> cm = mc.CollisionManager()
        >>> _ = cm.add_static(mc.Contactor(mc.HalfSpace(), group=0))
        >>> _ = cm.add_body(mc.Contactor(mc.Sphere(0.1), group=1), pose=[0, 0, 0.12, 1, 0, 0, 0])
        >>> cm.set_group_pair(0, 1, collide=False)
        >>> len(cm.detect())
        0
        """
        key = (min(g1, g2), max(g1, g2))
        if collide:
            self._group_off.discard(key)
        else:
            self._group_off.add(key)
        self._codes = None

    # ---- poses
    def _place(self, idx, contactors, pose):
        R = rot.rotation_matrix(pose[3:7])
        for i, ct in zip(idx, contactors):
            self._obj_R[i], self._obj_x[i] = R @ ct.local_rotation(), pose[:3] + R @ ct.translation
            self._stale[i] = True

    def update(self, Q):
        """Move the dynamic bodies to the poses Q (n, 7) (their objects' world rotations and positions, at once;
        coal's transforms are set when a narrow phase needs them).

        Parameters
        ----------
        Q : (n, 7) array_like
            The poses of the n dynamic bodies.

        Raises
        ------
        ModelingError
            When Q is not (n, 7).
        """
        Q = np.asarray(Q, dtype=float)
        if Q.shape != (len(self.bodies), 7):
            raise ModelingError("CollisionManager", "Q", f"has shape {Q.shape}, expected ({len(self.bodies)}, 7)")
        dyn = np.flatnonzero(self._obj_body >= 0)
        self._body_R = rot.rotation_matrix(Q[:, 3:7])       # the bodies' rotations at Q (for the contacts' frames)
        if not dyn.size:
            return
        b = self._obj_body[dyn]
        R = self._body_R[b]
        self._obj_R[dyn] = R @ self._lR[dyn]
        self._obj_x[dyn] = Q[b, :3] + np.einsum("kij,kj->ki", R, self._lt[dyn])
        self._stale[dyn] = True

    def _sync(self, objs):
        """coal's transforms of the objects ``objs`` (indices) set from their world poses."""
        T = self._coal.Transform3s
        for i in objs.tolist():
            if self._stale[i]:
                o = self._objects[i].obj
                o.setTransform(T(self._obj_R[i], self._obj_x[i]))
                o.computeAABB()
                self._stale[i] = False

    # ---- detection
    def candidate_pairs(self):
        """The broad phase: the pairs of objects (i, j), i < j, whose bounding boxes (enlarged by the margin)
        overlap, filters applied (static pairs, a body's own contactors, excluded pairs, groups), as two index
        arrays sorted by (i, j). Boxes by sweep and prune along the axis of largest spread; half-spaces against every
        box by its support along their normal (compiled: :func:`~nsopt.mechanics._collision_kernels.broad_phase`).

        Returns
        -------
        i, j : (p,) int ndarray
            The object indices of the candidate pairs.
        """
        if len(self._objects) < 2:
            e = np.zeros(0, dtype=np.int64)
            return e, e
        owner, static, _ = self._owner_arrays
        return kern.broad_phase(self._obj_R, self._obj_x, self._lc, self._le, self._inf, self._hs_n, self._hs_off, owner,
                                static, self._group, max(len(self.bodies), 1), *self._filter_codes())

    def _filter_codes(self):
        """The excluded pairs of bodies (a·n + b) and the pairs of groups switched off (g1·2^20 + g2), sorted."""
        if self._codes is None:
            nb = max(len(self.bodies), 1)
            self._codes = (np.array(sorted(a * nb + b for a, b in self._excluded), dtype=np.int64),
                           np.array(sorted(a * (1 << 20) + b for a, b in self._group_off), dtype=np.int64))
        return self._codes

    def _collide_filter(self, lo_, hi_):
        """Which object pairs (lo_, hi_) may collide (:func:`~nsopt.mechanics._collision_kernels.allowed`)."""
        owner, static, _ = self._owner_arrays
        return kern.allowed(np.asarray(lo_, dtype=np.int64), np.asarray(hi_, dtype=np.int64), owner, static,
                            self._group, max(len(self.bodies), 1), *self._filter_codes())

    def _narrow(self, i, j):
        """coal's narrow phase on objects i < j: None (farther than the margin) or (points on i, points on j
        (r, 3) each, world frame, the normal from i towards j)."""
        coal = self._coal
        a, b = self._objects[i], self._objects[j]
        req, res = self._request, self._result
        res.clear()
        if not coal.collide(a.obj, b.obj, req, res):
            return None
        c = res.getContact(0)
        nab = np.asarray(c.normal, dtype=float)                     # coal: from i towards j
        pts = None
        if not (a.shape.curved and b.shape.curved):
            flat = not (a.shape.curved or b.shape.curved)
            preq, pres = (self._flat_request, self._flat_result) if flat else (self._patch_request, self._patch_result)
            pres.set(preq)
            coal.computeContactPatch(a.obj, b.obj, res, preq, pres)
            if pres.numContactPatches():
                p = pres.getContactPatch(0)
                if p.size() > 1:
                    P1 = np.array([p.getPointShape1(r) for r in range(p.size())])
                    P2 = np.array([p.getPointShape2(r) for r in range(p.size())])
                    if flat:          # each point measured along the normal between the two polyhedra
                        P1, P2 = self._measure(i, j, 0.5 * (P1 + P2), nab, P1, P2)
                    pts = _reduce(P1, P2, -nab, self.max_points)
        if pts is None:
            pts = (np.asarray(c.getNearestPoint1(), dtype=float)[None], np.asarray(c.getNearestPoint2(), dtype=float)[None])
        if pts[0].shape[0] < self.max_points:
            edge = self._edge_contacts(i, j, nab)
            if edge is not None and edge[0].shape[0] > pts[0].shape[0]:
                pts = edge
        return pts[0], pts[1], nab

    def _edge_contacts(self, i, j, nab):
        """The contact points of a shape with :meth:`~nsopt.mechanics.shapes.Shape.edge_points` (a cone) against a
        polyhedron (a box, a convex mesh, a half-space), the normal nab from i towards j: each edge point measured
        along the normal to the polyhedron, those within the margin kept (at most ``max_points``); None for other
        pairs."""
        for e, f, sign in ((i, j, 1.0), (j, i, -1.0)):
            E = self._objects[e].shape.edge_points(self._obj_R[e].T @ (sign * nab))
            if E is not None and self._objects[f].hs is not None:
                break
        else:
            return None
        P = E @ self._obj_R[e].T + self._obj_x[e]                   # world points on the edges of e
        n = sign * nab                                              # from e towards f
        Q, hit = self._along(f, P, n, farthest=False)
        keep = hit & ((Q - P) @ n <= self.margin)
        if not keep.any():
            return None
        P, Q = P[keep], Q[keep]
        P1, P2 = (P, Q) if e == i else (Q, P)
        return _reduce(P1, P2, -nab, self.max_points)

    def detect(self, Q=None) -> Contacts:
        """Every contact point within the margin, at the poses Q (n, 7) (default: the last :meth:`update`).

        The broad phase (:meth:`candidate_pairs`) runs every call; coal's narrow phase only for the pairs new to
        it or whose relative pose moved by more than ``reuse`` since their last narrow phase (translation plus
        rotation times the smaller object's radius), or, for a pair with a curved shape, turned at all (by more than
        1e-9 at its radius: a kept material point of a rolling body would lag behind the contact). The others keep
        the points found then, fixed in their objects (Bullet's persistent manifold in spirit): their distances and
        normals follow the bodies.

        Parameters
        ----------
        Q : (n, 7) array_like, optional
            The poses of the dynamic bodies; None: the last :meth:`update`.

        Returns
        -------
        Contacts
            The contact points, stacked.

        Raises
        ------
        ModelingError
            When Q is not (n, 7).

        Examples
        --------
        >>> import numpy as np
        >>> from nsopt import mechanics as mc
        >>> cm = mc.CollisionManager()
        >>> _ = cm.add_static(mc.Contactor(mc.HalfSpace()))
        >>> _ = cm.add_body(mc.Contactor(mc.Box([1, 1, 1])), pose=[0, 0, 0.5, 1, 0, 0, 0])
        >>> c = cm.detect()                                   # a box lying flat: 4 points spanning its face
        >>> len(c), bool(np.abs(c.distance).max() < 1e-9)
        (4, True)
        """
        if Q is not None:
            self.update(Q)
        ci, cj = self.candidate_pairs()
        cache = self._cache
        if cache is None:
            cache = {"key": np.zeros(0, dtype=np.int64), "R": np.zeros((0, 3, 3)), "t": np.zeros((0, 3)),
                     "n": np.zeros(0, dtype=np.int64), "start": np.zeros(0, dtype=np.int64), "pa": np.zeros((0, 3)),
                     "pb": np.zeros((0, 3)), "na": np.zeros((0, 3))}
        relR, relt, pos, need = kern.reuse_test(ci, cj, self._radius, self._curved, self._obj_R, self._obj_x,
                                                cache["key"], cache["R"], cache["t"], self.reuse)
        todo = np.flatnonzero(need)
        self.stats = {"pairs": int(ci.shape[0]), "narrow": int(todo.size)}
        counts = np.zeros(ci.shape[0], dtype=np.int64)
        kept = ~need
        counts[kept] = cache["n"][pos[kept]]
        # the narrow phase of the pairs that need it: their points in their objects' frames (pa on i, pb on j) and
        # the normal in i's frame
        fresh = ([], [], [])
        if todo.size:
            self._sync(np.unique(np.concatenate([ci[todo], cj[todo]])))
            R, x = self._obj_R, self._obj_x
            for k, i, j in zip(todo.tolist(), ci[todo].tolist(), cj[todo].tolist()):
                out = self._narrow(i, j)
                if out is None:
                    continue
                Pi, Pj, nab = out
                r = Pi.shape[0]
                fresh[0].append((Pi - x[i]) @ R[i])
                fresh[1].append((Pj - x[j]) @ R[j])
                fresh[2].append(np.broadcast_to(R[i].T @ nab, (r, 3)))
                counts[k] = r
        fa, fb, fn = map(np.concatenate, fresh) if fresh[0] else (np.zeros((0, 3)),) * 3
        starts, pa, pb, na, kR, kt, A, B, PA, PB, NN = kern.assemble(
            ci, cj, need, pos, relR, relt, counts, fa, fb, fn, cache["start"], cache["pa"], cache["pb"], cache["na"],
            cache["R"], cache["t"], self._obj_R, self._obj_x, *self._owner_arrays[:2])
        nobj = len(self._objects)
        self._cache = {"key": ci * nobj + cj, "R": kR, "t": kt, "n": counts, "start": starts[:-1], "pa": pa, "pb": pb,
                       "na": na}
        return self._persist(A, B, PA, PB, NN)

    def _measure(self, i, j, P, n, P1, P2):
        """The points of polyhedral objects i and j on the lines through the patch points P (m, 3) along the normal n
        (from i towards j): on i the farthest along n, on j the nearest ({x : A x <= b} of each shape). coal's patch
        keeps every support point within the margin but places them all at the deepest point's depth; this gives each
        its own. A line that misses a shape (round-off at a patch's rim) keeps coal's point."""
        out = []
        for o, farthest, Pc in ((i, True, P1), (j, False, P2)):
            Q, ok = self._along(o, P, n, farthest)
            out.append(np.where(ok[:, None], Q, Pc))
        return out[0], out[1]

    def _along(self, o, P, n, farthest):
        """Where the lines through the points P (m, 3) along n cross the polyhedral object o: its point farthest
        along n (``farthest``) or nearest, and whether the line meets o at all.

        A line through a vertex of o that meets o there only (the far corners of a tilted box over a face: coal's
        normal and patch points are off by round-off, 1e-9 to 1e-6) misses it by that round-off: where the line
        crosses the plane of o's face most turned along it (the bottom face's, through that corner) is taken when
        that point is within ``TOUCH`` x margin of o (else a line that misses keeps coal's point, which has the
        deepest point's depth: a far corner 9 mm above the floor measured at gap 0)."""
        A, b = self._objects[o].hs
        R, x = self._obj_R[o], self._obj_x[o]
        p = (P - x) @ R                                   # the points and the direction in the shape's frame
        d = R.T @ n
        norm = self._objects[o].row_norms
        Ad = (A @ d) / norm                               # rows as unit normals: slack = distance to each plane
        slack = (b[None, :] - p @ A.T) / norm[None, :]    # (m, rows): b - A p
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = slack / Ad[None, :]
        up = np.where(Ad[None, :] > 1e-12, bound, np.inf).min(axis=1)     # t <= up
        lo = np.where(Ad[None, :] < -1e-12, bound, -np.inf).max(axis=1)   # t >= lo
        t = up if farthest else lo
        ok = (lo <= up + 1e-9) & (np.abs(Ad) > 1e-12).any()
        near = ~ok & np.isfinite(up) & np.isfinite(lo)
        if near.any():          # the line passes by a vertex: where it crosses the plane of the face turned along it
            face = int(np.argmax(Ad)) if farthest else int(np.argmin(Ad))
            t = t.copy()
            t[near] = bound[near, face]
            Pn = p[near] + t[near][:, None] * d
            beyond = (Pn @ A.T / norm[None, :] - (b / norm)[None, :]).max(axis=1)     # its distance outside o
            ok[near] = beyond <= TOUCH * self.margin
        ok &= np.isfinite(t)
        return P + np.where(ok, t, 0.0)[:, None] * n, ok

    def _persist(self, A, B, PA, PB, N) -> Contacts:
        k = A.shape[0]
        if k == 0:
            self._previous = None
            return Contacts.empty()
        owner, static, contactor = self._owner_arrays
        body1 = owner[A]
        static2 = np.where(static[B], owner[B], -1)
        body2 = np.where(static[B], -1, owner[B])
        prev = self._previous
        if prev is None:
            prev = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros((0, 6)))
        dist, _, ids, new, self._next_id, *previous = kern.persist(A, B, PA, PB, N, self._obj_R, self._obj_x, *prev,
                                                                     self.persistence, self._next_id)
        self._previous = tuple(previous)
        return Contacts(body1, body2, static2, contactor[A], contactor[B], PA, PB, N, dist, ids, new)

    def check_interpenetration(self, tol: float = 1e-3, Q=None):
        """Raise :class:`InterpenetrationError` when shapes interpenetrate deeper than ``tol``, naming the
        deepest pairs; returns the contacts otherwise.

        Parameters
        ----------
        tol : float, default 1e-3
            The depth allowed.
        Q : (n, 7) array_like, optional
            The poses; None: the last :meth:`update`.

        Returns
        -------
        Contacts
            The contacts, when none is deeper than ``tol``.

        Raises
        ------
        InterpenetrationError
            When some are (see :class:`InterpenetrationError` for an example).
        """
        c = self.detect(Q)
        bad = np.flatnonzero(c.distance < -tol)
        if bad.size:
            worst = bad[np.argsort(c.distance[bad])][:5]
            desc = "; ".join(f"body {c.body1[m]} and " + (f"body {c.body2[m]}" if c.body2[m] >= 0 else f"static {c.static2[m]}")
                             + f" by {-c.distance[m]:.3g}" for m in worst)
            raise InterpenetrationError("CollisionManager", "poses",
                                        f"{bad.size} contact point(s) interpenetrate deeper than {tol:g} ({desc}); "
                                        "move the bodies apart before the run")
        return c


    # ---- the swept test (tunnelling)
    def body_sizes(self):
        """Per dynamic body: the radius R of a ball about its origin holding its contactors, and its thickness w (the
        smallest of its contactors' :meth:`~nsopt.mechanics.Shape.thickness`, a lower bound of its width)."""
        key = len(self._objects)
        if getattr(self, "_sizes", (None,))[0] != key:
            R = np.array([max(float(np.linalg.norm(c.translation)) + c.shape.bounding_radius() for c in cs)
                          for cs in self.bodies])
            w = np.array([min(c.shape.thickness() for c in cs) for cs in self.bodies])
            self._sizes = (key, R, w)
        return self._sizes[1], self._sizes[2]

    def fast_bodies(self, Q0, Q1, moved=None):
        """The bodies (indices) that moved more than half their thickness from poses Q0 to Q1 (:meth:`moved`, or its
        value ``moved``; :meth:`body_sizes`): those :meth:`swept` sweeps."""
        _, w = self.body_sizes()
        return np.flatnonzero((self.moved(Q0, Q1) if moved is None else moved) > 0.5 * w)

    def moved(self, Q0, Q1):
        r"""How far each body's points moved from poses Q0 to Q1 at most (n,): :math:`\|\Delta x\| + \theta R`, θ the
        rotation's angle, R the body's radius."""
        Q0, Q1 = np.asarray(Q0, dtype=float), np.asarray(Q1, dtype=float)
        R, _ = self.body_sizes()
        return np.linalg.norm(Q1[:, :3] - Q0[:, :3], axis=1) + _angle(Q0[:, 3:7], Q1[:, 3:7]) * R

    def swept(self, Q0, Q1, *, fast=None) -> list[dict]:
        r"""The bodies that passed through another object, or ended deep inside one, over a step from the poses Q0 to
        Q1 (n, 7): what a contact detection at Q0 and at Q1 alone misses when a body moves farther than its own size
        in one step (tunnelling).

        A body whose points moved by more than half its thickness w (:meth:`moved`, :meth:`body_sizes`) is swept:
        its motion, and that of each object within reach (bounding balls, margin added), is sampled at poses linearly
        interpolated (positions; rotations about a fixed axis) at most :math:`\max(w_b, w_o)/2` apart relative to
        each other, so that the copies of the thicker of the two overlap along the way; coal measures the signed
        distance of each pair of contactors at each sample. A pair that interpenetrates deeper than :math:`\tau =
        \min(\max(m, w/100), w/4)` (m the margin, w the thinner) at a sample was passed through when at Q1 it is
        farther apart than the margin or on the other side (the normal between the closest contactors turned by more
        than 90° from Q0's: a body that sank through a thin object by the scheme's :math:`h|v|/2` at an impact); a
        pair deeper than w_b/2 at Q1 ended inside (the normal of that contact is not to be trusted). Half-spaces are not swept (the distance to a
        plane is linear along a translation: a crossing shows at Q1, where the contact is detected).

        Parameters
        ----------
        Q0, Q1 : (n, 7) array_like
            The poses at the start and at the end of the step.
        fast : (k,) int array_like, optional
            The bodies to sweep; default those that moved more than half their thickness.

        Returns
        -------
        list of dict
            One per event: ``body``, ``other`` (a body index or None), ``static`` (a static index or None), ``kind``
            ("passed through" or "ended inside"), ``depth`` (the deepest interpenetration met), ``at`` (the fraction
            of the step where it was met), ``moved`` (the body's motion bound).

        Examples
        --------
        >>> import numpy as np
        >>> from nsopt import mechanics as mc
        >>> cm = mc.CollisionManager()
        >>> _ = cm.add_static(mc.Contactor(mc.Box([10, 10, 1])), pose=[0, 0, -0.5, 1, 0, 0, 0])
        >>> _ = cm.add_body(mc.Contactor(mc.Box([1, 1, 1])), pose=[0, 0, 1, 1, 0, 0, 0])
        >>> Q0, Q1 = np.array([[0, 0, 1.0, 1, 0, 0, 0]]), np.array([[0, 0, -99.0, 1, 0, 0, 0]])
        >>> len(cm.detect(Q1))                                  # at the end of the step: nothing near
        0
        >>> [(e["kind"], e["static"], round(e["moved"], 3)) for e in cm.swept(Q0, Q1)]
        [('passed through', 0, 100.0)]
        """
        Q0, Q1 = np.asarray(Q0, dtype=float), np.asarray(Q1, dtype=float)
        R, w = self.body_sizes()
        move = self.moved(Q0, Q1)
        fast = self.fast_bodies(Q0, Q1, move) if fast is None else np.asarray(fast, dtype=np.int64)
        owner, static, _ = self._owner_arrays
        events = []
        swept = set()
        for b in fast.tolist():
            mine = np.asarray(self._body_objects[b], dtype=np.int64)
            # the obstacles: each bounded static object, each other body (a pair swept once)
            obstacles = [("static", int(i)) for i in np.flatnonzero(static & np.isfinite(self._radius))]
            obstacles += [("body", B) for B in range(len(self.bodies)) if B != b and (B, b) not in swept]
            for kind, o in obstacles:
                theirs = np.array([o]) if kind == "static" else np.asarray(self._body_objects[o], dtype=np.int64)
                I, J = np.repeat(mine, theirs.size), np.tile(theirs, mine.size)
                ok = self._collide_filter(np.minimum(I, J), np.maximum(I, J))
                if not ok.any():
                    continue
                I, J = I[ok], J[ok]
                other = o if kind == "body" else None
                if kind == "static":
                    c0 = c1 = self._obj_x[o]
                    Ro, wo, ango = self._radius[o], self._objects[o].shape.thickness(), 0.0
                else:
                    c0, c1 = Q0[o, :3], Q1[o, :3]
                    Ro, wo, ango = R[o], w[o], float(_angle(Q0[o:o + 1, 3:7], Q1[o:o + 1, 3:7])[0])
                d0, e = Q0[b, :3] - c0, (Q1[b, :3] - c1) - (Q0[b, :3] - c0)
                span = _within(d0, e, R[b] + Ro + self.margin)
                if span is None:
                    continue
                angb = float(_angle(Q0[b:b + 1, 3:7], Q1[b:b + 1, 3:7])[0])
                rel = float(np.linalg.norm(e)) + angb * R[b] + ango * Ro
                step = 0.5 * max(w[b], wo)
                n = int(min(np.ceil(rel * (span[1] - span[0]) / step), 100_000)) + 1
                ts = np.linspace(span[0], span[1], n + 1)
                ts = ts[(ts > 0.0) & (ts < 1.0)]
                tau = min(max(self.margin, 0.01 * min(w[b], wo)), 0.25 * min(w[b], wo))
                deepest, at = 0.0, None
                for t in ts.tolist():
                    dist, _ = self._closest_at(b, other, I, J, Q0, Q1, t)
                    if -dist > deepest:
                        deepest, at = -dist, t
                ev = None
                if deepest > tau:
                    dist0, n0 = self._closest_at(b, other, I, J, Q0, Q1, 0.0)
                    dist1, n1 = self._closest_at(b, other, I, J, Q0, Q1, 1.0)
                    if dist1 > self.margin or float(n0 @ n1) < 0:        # away, or on the other side
                        ev = "passed through"
                    elif -dist1 > 0.5 * w[b]:
                        ev, deepest, at = "ended inside", -dist1, 1.0
                else:
                    dist1, _ = self._closest_at(b, other, I, J, Q0, Q1, 1.0)
                    if -dist1 > 0.5 * w[b]:
                        ev, deepest, at = "ended inside", -dist1, 1.0
                if ev is not None:
                    events.append({"body": b, "other": other, "static": int(owner[o]) if kind == "static" else None,
                                   "kind": ev, "depth": float(deepest), "at": float(at), "moved": float(move[b])})
            swept.update((b, B) for B in range(len(self.bodies)))     # each pair of bodies swept once
        return events

    def _closest_at(self, b, other, I, J, Q0, Q1, t):
        """The signed distance of the closest of the object pairs (I: body b's, J: body ``other``'s or a static one)
        at the fraction t of the step (negative: interpenetrating), and its unit normal from I's object to J's."""
        coal = self._coal
        poses = {b: _interpolate(Q0[b], Q1[b], t)}
        if other is not None:
            poses[other] = _interpolate(Q0[other], Q1[other], t)
        req = coal.DistanceRequest()
        best, normal = np.inf, np.zeros(3)
        for i, j in zip(I.tolist(), J.tolist()):
            tf = []
            for k in (i, j):
                B = int(self._obj_body[k])
                if B < 0:
                    tf.append(coal.Transform3s(self._obj_R[k], self._obj_x[k]))
                else:
                    q = poses[B]
                    Rb = rot.rotation_matrix(q[3:7])
                    tf.append(coal.Transform3s(Rb @ self._lR[k], q[:3] + Rb @ self._lt[k]))
            res = coal.DistanceResult()
            d = float(coal.distance(self._objects[i].obj.collisionGeometry(), tf[0],
                                    self._objects[j].obj.collisionGeometry(), tf[1], req, res))
            if d < best:
                best, normal = d, np.asarray(res.normal, dtype=float)
        return best, normal


def _pose(pose, what) -> np.ndarray:
    """A pose (7,): finite, its quaternion not zero (``CollisionManager.<what> pose``)."""
    p = vector(pose, "CollisionManager", f"{what} pose", 7)
    if not np.linalg.norm(p[3:7]) > 0:
        raise ModelingError("CollisionManager", f"{what} pose", "the quaternion is zero")
    return p


def _angle(qa, qb) -> np.ndarray:
    """The angles (k,) of the rotations taking the unit quaternions qa (k, 4) to qb."""
    c = np.abs(np.einsum("ki,ki->k", qa, qb))
    return 2.0 * np.arccos(np.clip(c, 0.0, 1.0))


def _interpolate(q0, q1, t) -> np.ndarray:
    """The pose at the fraction t between q0 and q1 (7,): the position linearly, the rotation about its fixed axis."""
    r = rot.quat_mul(rot.quat_conj(q0[3:7]), q1[3:7])
    if r[0] < 0:
        r = -r
    v = np.linalg.norm(r[1:])
    phi = 2.0 * np.arctan2(v, r[0]) * (r[1:] / v) if v > 0 else np.zeros(3)
    return np.r_[(1 - t) * q0[:3] + t * q1[:3], rot.quat_mul(q0[3:7], rot.quat_exp(t * phi))]


def _within(d0, e, rho):
    """The fractions [t0, t1] of [0, 1] where |d0 + t e| <= rho, or None."""
    a, bq, c = float(e @ e), float(d0 @ e), float(d0 @ d0) - rho * rho
    if a <= 1e-300:
        return (0.0, 1.0) if c <= 0 else None
    disc = bq * bq - a * c
    if disc < 0:
        return None
    r = np.sqrt(disc)
    t0, t1 = max((-bq - r) / a, 0.0), min((-bq + r) / a, 1.0)
    return (t0, t1) if t0 <= t1 else None


def _reduce(P1, P2, n, k):
    """At most k points of a contact polygon spanning it: the deepest, the farthest from it, then the ones making
    the largest triangles with these two on either side (Bullet's manifold reduction in spirit)."""
    m = P1.shape[0]
    if m <= k:
        return P1, P2
    depth = (P1 - P2) @ n
    chosen = [int(np.argmin(depth))]
    if k >= 2:
        d = P1 - P1[chosen[0]]
        chosen.append(int(np.argmax(np.sqrt(np.add.reduce(d * d, axis=1)))))     # (np.linalg.norm's sum, its order)
    if k >= 3:
        e = P1[chosen[1]] - P1[chosen[0]]
        b = P1 - P1[chosen[0]]           # e x b by components (np.cross's products and differences, without its checks)
        area = np.stack([e[1] * b[:, 2] - e[2] * b[:, 1], e[2] * b[:, 0] - e[0] * b[:, 2],
                         e[0] * b[:, 1] - e[1] * b[:, 0]], axis=1) @ n
        i2 = int(np.argmax(np.abs(area)))
        chosen.append(i2)
        if k >= 4:
            side = -np.sign(area[i2]) * area
            side[chosen] = -np.inf
            chosen.append(int(np.argmax(side)))
    rest = [i for i in range(m) if i not in chosen]
    while len(chosen) < k and rest:
        chosen.append(rest.pop(0))
    chosen = chosen[:k]
    return P1[chosen], P2[chosen]
