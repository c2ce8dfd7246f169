"""Collision shapes and contactors (as ``siconos.mechanics.collision``: a body carries contactors, each a
shape at an offset in the body frame, in a collision group), turned into coal geometries.

Conventions follow Siconos (Bullet): a ``Box`` takes its full extents; ``Capsule``, ``Cylinder`` and ``Cone``
have their axis along the body's y axis, centred on the origin (the cone's apex at +height/2); a
``HalfSpace`` is the set {x : n·x <= offset}, for static objects only.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._doc import insert_section
from ..exceptions import ModelingError
from ..modeling import _rotation as rot
from ..modeling._check import matrix, scalar, vector

__all__ = ["Shape", "Sphere", "Box", "Capsule", "Cylinder", "Cone", "ConvexMesh", "HalfSpace", "Contactor"]

# coal's capsule, cylinder and cone run along z: this turn takes z to y (Bullet's and Siconos' axis)
_Z_TO_Y = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
_Z_TO_Y.setflags(write=False)


#: A convex mesh is refused when its hull is thinner than this times its size (the larger of its extent and its
#: largest coordinate, which sets Qhull's round-off): coal's hull of such points crashes the process (below ~1e-8).
DEGENERATE_RTOL = 1e-6
#: The largest coordinate of a convex mesh: Qhull (scipy's and coal's) computes with products of three coordinates.
MAX_COORDINATE = 1e100


def _positive(value, owner, field):
    """``value`` as a float after checking that it is a finite real number > 0 (strings, complex numbers, arrays and
    booleans refused), a :class:`ModelingError` naming ``owner.field`` otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ModelingError(owner, field, f"must be a finite positive number, got {value!r} ({type(value).__name__})")
    v = float(value)
    if not np.isfinite(v) or v <= 0:
        raise ModelingError(owner, field, f"must be a finite positive number, got {value!r}")
    return v


def group_index(g, owner, field) -> int:
    """A collision group: an integer (a bool, a float or a string refused), a :class:`ModelingError` otherwise."""
    if isinstance(g, (bool, np.bool_)) or not isinstance(g, numbers.Integral):
        raise ModelingError(owner, field, f"must be an integer (a collision group), got {g!r} ({type(g).__name__})")
    return int(g)


def quaternion(q, owner, field) -> np.ndarray:
    """A unit quaternion (w, x, y, z) from ``q``: 4 finite numbers, not all zero (normalised here); a
    :class:`ModelingError` naming ``owner.field`` otherwise ("the quaternion is zero": it has no direction)."""
    q = vector(q, owner, field, 4)
    n = float(np.linalg.norm(q))
    if not n > 0:
        raise ModelingError(owner, field, "the quaternion is zero; give a unit quaternion, (1, 0, 0, 0) for no rotation")
    return q / n


class Shape:
    """Base class of the shapes (Siconos' primitive shapes). Not built directly: a subclass gives its sizes.

    Attributes
    ----------
    kind : str
        The Siconos primitive it stands for ("Sphere", "Box", ...).
    local_rotation : (3, 3) ndarray or None
        Turns coal's frame of the geometry into the shape's (None: the same frame).
    curved : bool
        True for a curved shape: a pair of curved shapes touches at one point, a pair with a flat side gives a
        contact patch (up to four points).

    See Also
    --------
    Sphere, Box, Capsule, Cylinder, Cone, ConvexMesh, HalfSpace : the shapes, each with an example.
    Contactor : a shape attached to a body with an offset and a collision group.

    Notes
    -----
    :meth:`geometry` builds a fresh coal geometry; :meth:`halfspaces` gives a polyhedron as
    {x : A x <= b} in its own frame; :meth:`bounding_radius` bounds the shape about its origin.
    """

    kind = ""
    local_rotation = None
    curved = False

    def geometry(self):
        raise NotImplementedError

    def halfspaces(self):
        """(A (k, 3), b (k,)): the shape as {x : A x <= b} in its own frame for a polyhedron (a box, a convex mesh,
        a half-space), None for a curved shape. Contact detection measures each point of a contact patch by it."""
        return None

    def edge_points(self, d):
        """Points of the shape's edges that can carry a contact with a flat face in the direction d (unit, coal's
        frame of the geometry), or None when coal's contact patch already spans the contact (every shape but
        the cone). Contact detection measures each against the flat face and keeps those within the margin."""
        return None

    def params(self) -> tuple:
        raise NotImplementedError

    def bounding_radius(self) -> float:
        raise NotImplementedError

    def thickness(self) -> float:
        """The diameter of the largest ball inside the shape: a lower bound of its width in every direction (the
        spacing of the poses at which a run's swept test looks for a body passing through another)."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}{self.params()}"


class Sphere(Shape):
    """A sphere of ``radius`` centred on the body's origin (Siconos' ``Sphere``).

    Parameters
    ----------
    radius : float
        The radius, > 0.

    Raises
    ------
    ModelingError
        When ``radius`` is not a finite positive number.

    Examples
    --------
    >>> from nsopt import mechanics as mc
    >>> ball = mc.Sphere(0.5)
    >>> ball, ball.bounding_radius(), ball.halfspaces() is None
    (Sphere(0.5,), 0.5, True)
    """

    kind = "Sphere"
    curved = True

    def __init__(self, radius):
        self.radius = _positive(radius, "Sphere", "radius")

    def geometry(self):
        import coal
        return coal.Sphere(self.radius)

    def params(self):
        return (self.radius,)

    def bounding_radius(self):
        return self.radius

    def thickness(self):
        return 2.0 * self.radius


class Box(Shape):
    """A box of full extents (lx, ly, lz) (Siconos' ``Box``), centred on the body's origin.

    Parameters
    ----------
    extents : (3,) array_like
        The full lengths along x, y and z, each > 0.

    Raises
    ------
    ModelingError
        When ``extents`` is not 3 finite positive lengths.

    Examples
    --------
    >>> from nsopt import mechanics as mc
    >>> box = mc.Box([1, 2, 2])
    >>> box.extents, box.bounding_radius()
    ((1.0, 2.0, 2.0), 1.5)
    >>> A, b = box.halfspaces()                       # the box as {x : A x <= b}
    >>> A.shape, b.tolist()
    ((6, 3), [0.5, 1.0, 1.0, 0.5, 1.0, 1.0])
    """

    kind = "Box"

    def __init__(self, extents):
        e = vector(extents, "Box", "extents", 3)
        self.extents = tuple(_positive(x, "Box", "extents") for x in e.tolist())

    def geometry(self):
        import coal
        return coal.Box(*self.extents)

    def halfspaces(self):
        e = 0.5 * np.asarray(self.extents)
        return np.vstack([np.eye(3), -np.eye(3)]), np.concatenate([e, e])

    def params(self):
        return self.extents

    def bounding_radius(self):
        return 0.5 * float(np.linalg.norm(self.extents))

    def thickness(self):
        return float(min(self.extents))


class _Axial(Shape):
    """A shape of revolution about the body's y axis: a radius and a length along the axis."""

    local_rotation = _Z_TO_Y
    curved = True
    _second = "length"

    def __init__(self, radius, second):
        self.radius = _positive(radius, self.kind, "radius")
        setattr(self, self._second, _positive(second, self.kind, self._second))

    def geometry(self):
        import coal
        return getattr(coal, self.kind)(self.radius, getattr(self, self._second))

    def params(self):
        return (self.radius, getattr(self, self._second))

    def bounding_radius(self):
        return float(np.hypot(self.radius, 0.5 * getattr(self, self._second)))

    def thickness(self):
        return float(min(2.0 * self.radius, getattr(self, self._second)))


#: The sections the axial shapes' docstrings share (``{axial_sections}``; ``second`` is the length or height).
_AXIAL_DOC = """Raises
------
ModelingError
    When ``radius`` or ``{second}`` is not a finite positive number.

Examples
--------
>>> from nsopt import mechanics as mc"""


class Capsule(_Axial):
    """A capsule: a cylinder of ``length`` and ``radius`` along y, capped by half-spheres (Siconos' ``Capsule``).

    Parameters
    ----------
    radius : float
        The radius of the cylinder and of its caps, > 0.
    length : float
        The length of the cylindrical part (without the caps), > 0.

    {axial_sections}
    >>> mc.Capsule(0.1, 1.0).bounding_radius()        # half the length plus a cap
    0.6
    """

    kind = "Capsule"

    def __init__(self, radius, length):
        super().__init__(radius, length)

    def bounding_radius(self):
        return self.radius + 0.5 * self.length

    def thickness(self):
        return 2.0 * self.radius


class Cylinder(_Axial):
    """A cylinder of ``radius`` and ``length`` along y (Siconos' ``Cylinder``), centred on the body's origin.

    Parameters
    ----------
    radius : float
        The radius, > 0.
    length : float
        The length along y, > 0.

    {axial_sections}
    >>> cyl = mc.Cylinder(0.3, 0.8)
    >>> cyl.params(), round(cyl.bounding_radius(), 6)
    ((0.3, 0.8), 0.5)
    """

    kind = "Cylinder"

    def __init__(self, radius, length):
        super().__init__(radius, length)


class Cone(_Axial):
    """A cone of base ``radius`` and ``height`` along y, centred, its apex at +height/2 (Siconos' ``Cone``).

    Parameters
    ----------
    radius : float
        The base radius, > 0.
    height : float
        The height along y, > 0.

    {axial_sections}
    >>> mc.Cone(0.3, 0.8)
    Cone(0.3, 0.8)
    """

    kind = "Cone"
    _second = "height"

    def __init__(self, radius, height):
        super().__init__(radius, height)

    def thickness(self):
        r, h = self.radius, self.height        # the inscribed sphere: radius r h / (r + slant)
        return float(2.0 * r * h / (r + np.hypot(r, h)))

    def edge_points(self, d):
        """The apex and four points of the base's rim (coal's frame: axis z, apex at +height/2): the rim point
        farthest along d, the opposite one and the two between. A cone lying on its side touches a face along a
        segment (apex to rim), standing on its base along the rim: coal's patch gives one point for the first,
        and a single point lets the cone rock about it and sink."""
        d = np.asarray(d, dtype=float)
        h, r = 0.5 * self.height, self.radius
        t = np.hypot(d[0], d[1])
        u = d[:2] / t if t > 1e-12 else np.array([1.0, 0.0])
        w = np.array([-u[1], u[0]])
        rim = r * np.array([u, -u, w, -w])
        return np.vstack([[0.0, 0.0, h], np.column_stack([rim, np.full(4, -h)])])


for _c in (Capsule, Cylinder, Cone):
    _c.__doc__ = insert_section(_c.__doc__, "axial_sections", _AXIAL_DOC.format(second=_c._second))
del _c


class ConvexMesh(Shape):
    """The convex hull of ``vertices`` (n, 3), in the body frame (Siconos' ``add_convex_shape``).

    :meth:`from_file` reads a mesh file through trimesh; a mesh that is not convex raises
    :class:`~nsopt.exceptions.ModelingError` unless ``hull=True``, which takes its convex hull
    (coal's narrow phase here handles convex shapes only: decompose a non-convex body into convex
    contactors, e.g. with a convex decomposition tool, and give them as a compound).

    Parameters
    ----------
    vertices : (n, 3) array_like
        The points, n >= 4, spanning a volume; the shape is their convex hull.

    Raises
    ------
    ModelingError
        When ``vertices`` is not a finite (n >= 4, 3) array of numbers, has a coordinate beyond
        ``MAX_COORDINATE`` (1e100), or the points are degenerate: coplanar, collinear or coincident relative to
        the mesh's size (the hull, computed by scipy's Qhull, thinner than ``DEGENERATE_RTOL`` = 1e-6 times the
        larger of its extent and its largest coordinate). Such points are refused here, before coal's hull
        (which crashes the process on them) sees them.

    Examples
    --------
    >>> from nsopt import mechanics as mc
    >>> tet = mc.ConvexMesh([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    >>> A, b = tet.halfspaces()                       # its 4 faces as {x : A x <= b}
    >>> tet, A.shape
    (ConvexMesh(4,), (4, 3))
    """

    kind = "Convex"

    def __init__(self, vertices):
        V = matrix(vertices, "ConvexMesh", "vertices", (None, 3))
        if V.shape[0] < 4:
            raise ModelingError("ConvexMesh", "vertices", f"must be a finite (n >= 4, 3) array, got shape {V.shape}")
        size = float(np.abs(V).max())
        if size > MAX_COORDINATE:
            raise ModelingError("ConvexMesh", "vertices", f"has a coordinate of magnitude {size:.3g}, above "
                                                          f"{MAX_COORDINATE:g} (Qhull computes with their cubes)")
        self.vertices = V
        self._hull_of(V, max(size, float(np.ptp(V, axis=0).max())))

    def _hull_of(self, V, size):
        """The hull of V, checked before any C++ library sees the points: Qhull (scipy's) on the points centred and
        scaled to unit extent, its thickness (the smallest over its facets of the farthest vertex behind the facet)
        at least ``DEGENERATE_RTOL`` times ``size``; keeps the hull's vertices and its facets {x : A x <= b}."""
        from scipy.spatial import ConvexHull, QhullError
        c = V.mean(axis=0)
        ext = float(np.ptp(V, axis=0).max())
        flat = ("are degenerate (coplanar, collinear or coincident, relative to the mesh's size {size:.3g}): the hull "
                "is {thick} thick, less than {rtol:g} of its size; a convex mesh needs a volume")
        if not ext > 0:
            raise ModelingError("ConvexMesh", "vertices", flat.format(size=size, thick="0", rtol=DEGENERATE_RTOL))
        U = (V - c) / ext
        try:
            hull = ConvexHull(U)
        except QhullError:
            raise ModelingError("ConvexMesh", "vertices", flat.format(size=size, thick="0 (Qhull finds no volume)",
                                                                      rtol=DEGENERATE_RTOL)) from None
        eq = hull.equations                                    # n·u + d <= 0 inside, unit n
        depth = -(U[hull.vertices] @ eq[:, :3].T + eq[:, 3])   # (vertices, facets): how far behind each facet
        thick = float(depth.max(axis=0).min()) * ext
        if not thick >= DEGENERATE_RTOL * size:
            raise ModelingError("ConvexMesh", "vertices", flat.format(size=size, thick=f"{thick:.3g}",
                                                                      rtol=DEGENERATE_RTOL))
        self._hull_vertices = V[hull.vertices]
        self._hs = (eq[:, :3].copy(), eq[:, :3] @ c - eq[:, 3] * ext)     # n·x <= n·c - d ext
        self._thickness = thick

    @classmethod
    def from_file(cls, path, scale=1.0, hull=False):
        """A convex mesh read from a mesh file (any format trimesh reads: OBJ, STL, PLY, ...).

        Parameters
        ----------
        path : str or path-like
            The mesh file.
        scale : float, default 1.0
            A factor applied to the vertices.
        hull : bool, default False
            Take the convex hull of a mesh that is not convex (else such a mesh raises).

        Returns
        -------
        ConvexMesh
            The shape of the scaled vertices.

        Raises
        ------
        ModelingError
            When the file cannot be read as a mesh, has no vertices, or is not convex and ``hull`` is False.

        Examples
        --------
        >>> import os, tempfile
        >>> from nsopt import mechanics as mc
        >>> obj = "v 0 0 0\\nv 1 0 0\\nv 0 1 0\\nv 0 0 1\\nf 1 3 2\\nf 1 2 4\\nf 1 4 3\\nf 2 3 4\\n"
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = os.path.join(tmp, "tet.obj")
        ...     with open(path, "w") as f:
        ...         _ = f.write(obj)
        ...     tet = mc.ConvexMesh.from_file(path, scale=2.0)
        >>> tet.vertices.max().tolist(), len(tet.vertices)
        (2.0, 4)
        """
        import trimesh
        try:
            mesh = trimesh.load(str(path), force="mesh")
        except Exception as e:  # trimesh raises many types for bad files
            raise ModelingError("ConvexMesh", "path", f"{path}: cannot be read as a mesh ({type(e).__name__}: {e})") from e
        if not len(mesh.vertices):
            raise ModelingError("ConvexMesh", "path", f"{path}: the mesh has no vertices")
        if not mesh.is_convex and not hull:
            raise ModelingError("ConvexMesh", "path", f"{path}: the mesh is not convex; pass hull=True to use its convex "
                                                      "hull, or split it into convex pieces (a compound of contactors)")
        return cls(np.asarray(mesh.vertices, dtype=float) * _positive(scale, "ConvexMesh", "scale"))

    def geometry(self):
        import coal
        pts = coal.StdVec_Vec3s()
        for p in self._hull_vertices:          # checked by _hull_of: coal's Qhull never sees degenerate points
            pts.append(np.ascontiguousarray(p))
        return coal.Convex.convexHull(pts, False, "")

    def params(self):
        return (len(self.vertices),)

    def halfspaces(self):
        return self._hs

    def bounding_radius(self):
        return float(np.linalg.norm(self.vertices, axis=1).max())

    def thickness(self):
        """The diameter of the hull's largest inscribed ball (its Chebyshev centre, a linear program)."""
        if not hasattr(self, "_ball"):
            from scipy.optimize import linprog
            A, b = self._hs
            ext = float(np.ptp(self.vertices, axis=0).max())
            c = self.vertices.mean(axis=0)     # max r : A (c + ext u) + r |a| <= b, in units of the extent
            res = linprog([0, 0, 0, -1.0], A_ub=np.c_[A, np.ones(len(b))], b_ub=(b - A @ c) / ext,
                          bounds=[(None, None)] * 3 + [(0, None)], method="highs")
            self._ball = 2.0 * float(res.x[3]) * ext if res.status == 0 else self._thickness
        return self._ball


class HalfSpace(Shape):
    """The half-space {x : n·x <= offset} (in the frame of the static object that carries it), for static
    objects only.

    Parameters
    ----------
    normal : (3,) array_like, default (0, 0, 1)
        The outward normal n (normalised here).
    offset : float, default 0.0
        The offset: the boundary plane is n·x = offset.

    Raises
    ------
    ModelingError
        When ``normal`` is not 3 finite numbers or is the zero vector, or ``offset`` is not a finite number.

    Examples
    --------
    >>> from nsopt import mechanics as mc
    >>> ground = mc.HalfSpace([0, 0, 2], 0.5)
    >>> ground.normal.tolist(), ground.offset
    ([0.0, 0.0, 1.0], 0.5)
    """

    kind = "HalfSpace"

    def __init__(self, normal=(0.0, 0.0, 1.0), offset=0.0):
        n = vector(normal, "HalfSpace", "normal", 3)
        if not np.linalg.norm(n) > 0:
            raise ModelingError("HalfSpace", "normal", "is the zero vector")
        self.normal = n / np.linalg.norm(n)
        self.offset = scalar(offset, "HalfSpace", "offset")

    def geometry(self):
        import coal
        return coal.Halfspace(self.normal, self.offset)

    def params(self):
        return (*self.normal, self.offset)

    def halfspaces(self):
        return self.normal[None, :].copy(), np.array([self.offset])

    def bounding_radius(self):
        return np.inf

    def thickness(self):
        return np.inf


class Contactor:
    """A shape attached to a body at an offset (Siconos' ``Contactor``): ``translation`` (3,) and
    ``orientation`` (unit quaternion (w, x, y, z)) in the body frame, and a collision ``group``.

    Parameters
    ----------
    shape : Shape
        The shape.
    translation : (3,) array_like, default (0, 0, 0)
        Its offset in the body frame.
    orientation : (4,) array_like, default (1, 0, 0, 0)
        Its rotation in the body frame, a quaternion (w, x, y, z) (normalised here).
    group : int, default 0
        The collision group (the scene's ``add_Newton_impact_friction_nsl`` sets a law per pair of groups).

    Raises
    ------
    ModelingError
        When ``shape`` is not an nsopt.mechanics shape, ``translation`` is not 3 finite numbers, ``orientation`` not 4
        (or the quaternion is zero) or ``group`` not an integer.

    Examples
    --------
    >>> from nsopt import mechanics as mc
    >>> c = mc.Contactor(mc.Cylinder(0.1, 1.0), translation=[0, 0, 0.5], group=1)
    >>> c, c.offset_pose().tolist()
    (Contactor(Cylinder(0.1, 1.0), group=1), [0.0, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0])
    """

    def __init__(self, shape: Shape, translation=(0.0, 0.0, 0.0), orientation=(1.0, 0.0, 0.0, 0.0), group=0):
        if not isinstance(shape, Shape):
            raise ModelingError("Contactor", "shape", f"expected an nsopt.mechanics shape, got {type(shape).__name__}")
        self.shape = shape
        self.translation = vector(translation, "Contactor", "translation", 3)
        self.orientation = quaternion(orientation, "Contactor", "orientation")
        self.group = group_index(group, "Contactor", "group")

    def offset_pose(self) -> np.ndarray:
        """The pose (7,) ``(translation, orientation)`` of the contactor in the body frame (see the class example)."""
        return np.r_[self.translation, self.orientation]

    def local_rotation(self) -> np.ndarray:
        """The contactor's rotation (body frame) composed with the shape's own (coal's axis to Siconos')."""
        R = rot.rotation_matrix(self.orientation)
        return R if self.shape.local_rotation is None else R @ self.shape.local_rotation

    def __repr__(self):
        return f"Contactor({self.shape!r}, group={self.group})"
