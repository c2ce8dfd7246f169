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

import numpy as np

from ..exceptions import ModelingError
from ..modeling import _rotation as rot
from .shapes import Contactor, HalfSpace

__all__ = ["CollisionManager", "Contacts", "InterpenetrationError"]


class InterpenetrationError(ModelingError):
    """Shapes interpenetrate deeper than the tolerance where they must not (at the start of a run)."""


@dataclasses.dataclass
class Contacts:
    """Contact points of a scene, stacked (k rows). See the module docstring for the conventions."""

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
        i, f3 = np.zeros(0, dtype=np.int64), np.zeros((0, 3))
        return cls(i, i.copy(), i.copy(), i.copy(), i.copy(), f3, f3.copy(), f3.copy(), np.zeros(0), i.copy(),
                   np.zeros(0, dtype=bool))

    def relative(self, Q):
        """Body-frame data (rel_pc1, rel_pc2, rel_nc) at the poses Q (n, 7) of the dynamic bodies, as
        :func:`nsopt.modeling.newton_euler.contact_outputs` and ``NewtonEuler3DR.update_contact_points`` take
        them: pc1 in body 1's frame; pc2 and the normal in body 2's frame (the world's for a static object)."""
        Q = np.asarray(Q, dtype=float)
        Q1 = Q[self.body1]
        R1 = rot.rotation_matrix(Q1[:, 3:7])
        rp1 = np.einsum("kji,kj->ki", R1, self.pc1 - Q1[:, :3])
        rp2, rn = self.pc2.copy(), self.normal.copy()
        two = self.body2 >= 0
        if two.any():
            Q2 = Q[self.body2[two]]
            R2 = rot.rotation_matrix(Q2[:, 3:7])
            rp2[two] = np.einsum("kji,kj->ki", R2, self.pc2[two] - Q2[:, :3])
            rn[two] = np.einsum("kji,kj->ki", R2, self.normal[two])
        return rp1, rp2, rn


class _Object:
    __slots__ = ("owner", "static", "contactor", "index", "obj", "shape")

    def __init__(self, owner, static, contactor, index, obj, shape):
        self.owner, self.static, self.contactor, self.index, self.obj, self.shape = owner, static, contactor, index, obj, shape


class CollisionManager:
    """Contact detection for a scene of rigid bodies (see the module docstring).

    Parameters
    ----------
    margin : contacts are reported for shapes closer than this (coal's ``security_margin``; Siconos and
        Bullet call it the contact-processing threshold).
    persistence : how far (body frames) a point may move and keep its id.
    max_points : the most points kept per pair of contactors.
    """

    def __init__(self, *, margin: float = 0.05, persistence: float = 0.02, max_points: int = 4):
        import coal
        self._coal = coal
        if not margin >= 0:
            raise ModelingError("CollisionManager", "margin", f"must be >= 0, got {margin!r}")
        if not persistence > 0:
            raise ModelingError("CollisionManager", "persistence", f"must be > 0, got {persistence!r}")
        if int(max_points) < 1:
            raise ModelingError("CollisionManager", "max_points", f"must be >= 1, got {max_points!r}")
        self.margin, self.persistence, self.max_points = float(margin), float(persistence), int(max_points)
        self._objects: list[_Object] = []
        self.bodies: list[list[Contactor]] = []
        self.statics: list[list[Contactor]] = []
        self._static_poses: list[np.ndarray] = []
        self._body_objects: list[list[int]] = []
        self._excluded: set = set()
        self._group_off: set = set()
        self._manager = coal.DynamicAABBTreeCollisionManager()
        self._ready = False
        self._previous = None              # (pair keys sorted, ids, body-frame points) of the last detection
        self._next_id = 0
        self._obj_R = np.zeros((0, 3, 3))  # each coal object's rotation and position (world frame)
        self._obj_x = np.zeros((0, 3))
        self._patch_request = coal.ContactPatchRequest()

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
        self._ready = False
        self._obj_R = np.concatenate([self._obj_R, np.zeros((len(idx), 3, 3))])
        self._obj_x = np.concatenate([self._obj_x, np.zeros((len(idx), 3))])
        self._owner_arrays = (np.array([o.owner for o in self._objects], dtype=np.int64),
                              np.array([o.static for o in self._objects], dtype=bool),
                              np.array([o.contactor for o in self._objects], dtype=np.int64))
        return contactors, idx

    def add_body(self, contactors, pose=(0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)) -> int:
        """A dynamic body with its contactor(s), at ``pose`` (7,); returns its index (its row in Q)."""
        contactors, idx = self._register(contactors, pose, False)
        self.bodies.append(contactors)
        self._body_objects.append(idx)
        self._place(idx, contactors, np.asarray(pose, dtype=float))
        return len(self.bodies) - 1

    def add_static(self, contactors, pose=(0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)) -> int:
        """A static object (contact only, never moves)."""
        contactors, idx = self._register(contactors, pose, True)
        self.statics.append(contactors)
        pose = np.asarray(pose, dtype=float)
        self._static_poses.append(pose)
        self._place(idx, contactors, pose)
        return len(self.statics) - 1

    def exclude_pair(self, a: int, b: int):
        """Dynamic bodies a and b never collide (e.g. held together by a joint)."""
        self._excluded.add((min(a, b), max(a, b)))

    def set_group_pair(self, g1: int, g2: int, collide: bool = True):
        """Whether contactors of groups g1 and g2 collide (all pairs do by default)."""
        key = (min(g1, g2), max(g1, g2))
        if collide:
            self._group_off.discard(key)
        else:
            self._group_off.add(key)

    # ---- poses
    def _place(self, idx, contactors, pose):
        R = rot.rotation_matrix(pose[3:7])
        for i, ct in zip(idx, contactors):
            Ri, xi = R @ ct.local_rotation(), pose[:3] + R @ ct.translation
            self._obj_R[i], self._obj_x[i] = Ri, xi
            o = self._objects[i].obj
            o.setTransform(self._coal.Transform3s(Ri, xi))
            o.computeAABB()

    def update(self, Q):
        """Move the dynamic bodies to the poses Q (n, 7)."""
        Q = np.asarray(Q, dtype=float)
        if Q.shape != (len(self.bodies), 7):
            raise ModelingError("CollisionManager", "Q", f"has shape {Q.shape}, expected ({len(self.bodies)}, 7)")
        R = rot.rotation_matrix(Q[:, 3:7])
        T = self._coal.Transform3s
        oR, ox = self._obj_R, self._obj_x
        for b, idx in enumerate(self._body_objects):
            for i, ct in zip(idx, self.bodies[b]):
                o = self._objects[i].obj
                if ct.shape.local_rotation is None and not ct.translation.any() and ct.orientation[0] == 1.0:
                    oR[i], ox[i] = R[b], Q[b, :3]
                else:
                    oR[i], ox[i] = R[b] @ ct.local_rotation(), Q[b, :3] + R[b] @ ct.translation
                o.setTransform(T(oR[i], ox[i]))
                o.computeAABB()
        if self._ready:
            self._manager.update()

    def _setup(self):
        self._manager.clear()
        for o in self._objects:
            self._manager.registerObject(o.obj)
        self._manager.setup()
        self._ready = True

    # ---- detection
    def candidate_pairs(self):
        """The pairs of contactor objects (i, j), i < j, coal's broad and narrow phases find within the margin
        (filters applied), with coal's contact of each."""
        if not self._ready:
            self._setup()
        cb = self._coal.CollisionCallBackDefault()
        req = cb.data.request
        req.security_margin = self.margin
        req.num_max_contacts = 1 << 30
        req.enable_contact = True
        self._manager.collide(cb)
        out = []
        objs = self._objects
        for c in cb.data.result.getContacts():
            i, j = int(c.o1.cost_density), int(c.o2.cost_density)
            a, b = objs[i], objs[j]
            if a.static and b.static:
                continue
            if not a.static and not b.static:
                if a.owner == b.owner or (min(a.owner, b.owner), max(a.owner, b.owner)) in self._excluded:
                    continue
            if self._group_off:
                ga = (self.statics if a.static else self.bodies)[a.owner][a.contactor].group
                gb = (self.statics if b.static else self.bodies)[b.owner][b.contactor].group
                if (min(ga, gb), max(ga, gb)) in self._group_off:
                    continue
            out.append((i, j, c))
        return out

    def detect(self, Q=None) -> Contacts:
        """Every contact point within the margin, at the poses Q (n, 7) (default: the last :meth:`update`)."""
        if Q is not None:
            self.update(Q)
        coal = self._coal
        preq, objs, cap = self._patch_request, self._objects, self.max_points
        pairs = self.candidate_pairs()
        m = len(pairs) * cap
        A, B = np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64)     # coal object of body 1, of body 2
        PA, PB, N = np.empty((m, 3)), np.empty((m, 3)), np.empty((m, 3))
        k = 0
        for i, j, c in pairs:
            a, b = objs[i], objs[j]
            nab = np.asarray(c.normal, dtype=float)                     # coal: from i towards j
            pts = None
            if not (a.shape.curved and b.shape.curved):
                res = coal.CollisionResult()
                res.addContact(c)
                pres = coal.ContactPatchResult(preq)
                coal.computeContactPatch(a.obj, b.obj, res, preq, pres)
                if pres.numContactPatches():
                    p = pres.getContactPatch(0)
                    if p.size() > 1:
                        pts = _reduce(np.array([p.getPointShape1(r) for r in range(p.size())]),
                                      np.array([p.getPointShape2(r) for r in range(p.size())]), -nab, cap)
            if pts is None:
                pts = (np.asarray(c.getNearestPoint1(), dtype=float)[None], np.asarray(c.getNearestPoint2(), dtype=float)[None])
            r = pts[0].shape[0]
            # body 1: a dynamic body; with two, the lower index. The normal runs from body 2 towards body 1.
            if a.static or (not b.static and b.owner < a.owner):
                A[k:k + r], B[k:k + r], PA[k:k + r], PB[k:k + r], N[k:k + r] = j, i, pts[1], pts[0], nab
            else:
                A[k:k + r], B[k:k + r], PA[k:k + r], PB[k:k + r], N[k:k + r] = i, j, pts[0], pts[1], -nab
            k += r
        return self._persist(A[:k], B[:k], PA[:k], PB[:k], N[:k])

    def _persist(self, A, B, PA, PB, N) -> Contacts:
        k = A.shape[0]
        if k == 0:
            self._previous = None
            return Contacts.empty()
        owner, static, contactor = self._owner_arrays
        body1 = owner[A]
        static2 = np.where(static[B], owner[B], -1)
        body2 = np.where(static[B], -1, owner[B])
        dist = np.einsum("ki,ki->k", N, PA - PB)
        # the points in their contactors' frames (fixed in the bodies), to follow them between detections
        R, x = self._obj_R, self._obj_x
        loc = np.concatenate([np.einsum("kji,kj->ki", R[A], PA - x[A]), np.einsum("kji,kj->ki", R[B], PB - x[B])], axis=1)
        key = A * len(self._objects) + B
        ids = np.full(k, -1, dtype=np.int64)
        prev = self._previous
        if prev is not None:
            pkey, pid, ploc = prev                                        # sorted by key
            lo = np.searchsorted(pkey, key, "left")
            hi = np.searchsorted(pkey, key, "right")
            best, best_d = np.full(k, -1), np.full(k, np.inf)
            for s in range(int((hi - lo).max(initial=0))):                # at most max_points candidates each
                cand = lo + s
                ok = cand < hi
                cand = np.where(ok, cand, 0)
                d = np.maximum(np.linalg.norm(ploc[cand, :3] - loc[:, :3], axis=1),
                               np.linalg.norm(ploc[cand, 3:] - loc[:, 3:], axis=1))
                better = ok & (d < self.persistence) & (d < best_d)
                best = np.where(better, cand, best)
                best_d = np.where(better, d, best_d)
            hit = np.flatnonzero(best >= 0)
            # a previous point taken twice keeps its id on the closer current point only
            order = hit[np.lexsort((best_d[hit], best[hit]))]
            first = np.ones(order.size, dtype=bool)
            first[1:] = best[order][1:] != best[order][:-1]
            ids[order[first]] = pid[best[order[first]]]
        new = ids < 0
        ids[new] = self._next_id + np.arange(int(new.sum()))
        self._next_id += int(new.sum())
        srt = np.argsort(key, kind="stable")
        self._previous = (key[srt], ids[srt], loc[srt])
        return Contacts(body1, body2, static2, contactor[A], contactor[B], PA, PB, N, dist, ids, new)

    def check_interpenetration(self, tol: float = 1e-3, Q=None):
        """Raise :class:`InterpenetrationError` when shapes interpenetrate deeper than ``tol``, naming the
        deepest pairs; returns the contacts otherwise."""
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


def _reduce(P1, P2, n, k):
    """At most k points of a contact polygon spanning it: the deepest, the farthest from it, then the ones making
    the largest triangles with these two on either side (Bullet's manifold reduction in spirit)."""
    m = P1.shape[0]
    if m <= k:
        return P1, P2
    depth = (P1 - P2) @ n
    chosen = [int(np.argmin(depth))]
    if k >= 2:
        chosen.append(int(np.argmax(np.linalg.norm(P1 - P1[chosen[0]], axis=1))))
    if k >= 3:
        e = P1[chosen[1]] - P1[chosen[0]]
        area = np.cross(e, P1 - P1[chosen[0]]) @ n
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
