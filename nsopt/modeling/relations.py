r"""Relations (Siconos ``Relation`` classes): how an interaction's output y and the systems' input
(r or p) depend on the state, time, λ and the free vector Z.

X, Q (and V) are the concatenated states of the one or two systems an interaction joins, Z their
concatenated free vectors, m the size of the interaction (its law's size), n the concatenated state size.

==============================  ====================================================  ============================
relation                        output                                                 input
==============================  ====================================================  ============================
FirstOrderR(h, g, ...)          y = h(X, t, λ, Z)                                     R = g(X, t, λ, Z)
FirstOrderLinearR(C, B, ...)    y = C X + F Z + D λ + e  (each a constant or (t, z))   R = B λ
FirstOrderLinearTIR(C, B, ...)  the same, constants                                    R = B λ
LagrangianScleronomousR(h, G0)  y = h(Q, Z), ẏ = G0(Q, Z) V                            P = G0ᵀ λ
LagrangianRheonomousR(h, ...)   y = h(Q, t, Z), ẏ = G0 V + ∂h/∂t                       P = G0ᵀ λ
LagrangianCompliantR(h, G0, G1) y = h(Q, λ, Z), ẏ = G0 V + G1 λ̇                       P = G0ᵀ λ
LagrangianLinearTIR(H, ...)     y = H Q + b + D λ + F Z                                P = Hᵀ λ
==============================  ====================================================  ============================

Plug-ins take numpy arrays in the order of the formulas (see each class). A plug-in returning the
wrong shape, complex or non-finite values raises :class:`nsopt.exceptions.PluginError` naming the
relation, the plug-in and the expected shape. Missing Jacobians are computed by finite differences;
a given Jacobian (``G0``, ``G1``, ``hdot``, ``H0``, ...) is compared once, at its first evaluation,
with central finite differences of the function it differentiates
(:func:`nsopt.modeling._check.check_jacobian`: entrywise within 1e-6 (1 + max|J|) plus the rounding
of the differences), and a :class:`~nsopt.exceptions.PluginError` names the relation, the plug-in
and the entry that disagrees.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ModelingError
from ._check import (
    Operator,
    call_plugin,
    check_once,
    fd_jacobian,
    fd_jacobian_rows,
    label,
    matrix,
    vector,
)


class Relation:
    """Base class. ``kind`` is ``"first"`` or ``"lagrangian"``; :meth:`bind` fixes the sizes
    (m, n, nz) when the interaction is linked to its systems.

    Parameters
    ----------
    name : str, optional
        A name for messages and reports.

    Attributes
    ----------
    kind : str
        ``"first"`` or ``"lagrangian"``.
    linear : bool
        Output affine in the state and λ with constant-in-state Jacobians.
    constant : bool
        Every operator a constant (nothing to recompute between steps).
    m, n, nz : int or None
        Law size, concatenated state size and free-vector size, None until :meth:`bind`.

    Raises
    ------
    ModelingError
        From :meth:`bind`, when the relation is already used by an interaction of other sizes.

    See Also
    --------
    FirstOrderR, FirstOrderLinearR, FirstOrderLinearTIR : first-order relations.
    LagrangianR : the base of the Lagrangian relations.
    LagrangianScleronomousR, LagrangianRheonomousR, LagrangianCompliantR, LagrangianLinearTIR : Lagrangian relations.
    """

    kind = ""
    linear = False     # output affine in the state and λ with constant-in-state Jacobians
    constant = False   # every operator a constant (nothing to recompute between steps)

    def __init__(self, name=None):
        self.name = name
        self.m = self.n = self.nz = None
        self._jac_checked: set = set()     # the given Jacobians already checked against differences

    def _checked(self, key, J, f, x, of):
        """J after checking it once against central differences of f at x (``check_jacobian``)."""
        check_once(self._jac_checked, key, J, f, x, self._owner, key, of)
        return J

    @property
    def _owner(self):
        return label(self)

    def bind(self, m: int, n: int, nz: int):
        """Check and fix the sizes: law size m, concatenated state size n, free-vector size nz."""
        if self.m is not None and (self.m, self.n, self.nz) != (m, n, nz):
            raise ModelingError(self._owner, "relation", "is already used by an interaction of other sizes "
                                                         f"(m, n, nz) = {(self.m, self.n, self.nz)}; build a new relation")
        self.m, self.n, self.nz = m, n, nz
        self._bind()

    #: the plug-ins of a relation given by functions: (field, shape in the sizes "m", "n", "nz"), in the
    #: order of the constructor, with their one signature
    PLUGINS: tuple = ()
    SIGNATURE = ""

    def _take(self, required, **given):
        """Keep the plug-ins ``given`` (None where absent), each of ``required`` a callable."""
        for fld in required:
            if not callable(given[fld]):
                raise ModelingError(self._owner, fld, f"must be a plug-in {fld}({self.SIGNATURE})")
        self._given = given

    def _bind(self):
        """Each plug-in of :attr:`PLUGINS` as an :class:`Operator` of its shape (``self._<field>``)."""
        size = {"m": self.m, "n": self.n, "nz": self.nz}
        for field, dims in self.PLUGINS:
            setattr(self, "_" + field, self._op(self._given[field], field, tuple(size[d] for d in dims),
                                                self.SIGNATURE))

    def _op(self, value, field, shape, sig):
        return None if value is None else Operator(value, self._owner, field, shape, sig)

    def _jacobian(self, key, args, f, x, of, size=None):
        """∂f/∂x: the plug-in ``key`` at ``args``, checked once against differences of ``f`` at ``x``
        (``of`` names f in messages), or forward differences of ``f`` where ``key`` was not given."""
        op = getattr(self, "_" + key)
        if op is None:
            return fd_jacobian(f, x, self.m if size is None else size)
        return self._checked(key, op(*args), f, x, of)

    def __repr__(self):
        return f"{self._owner}(m={self.m}, n={self.n})"


# ============================================================================ first order
class FirstOrderR(Relation):
    r"""First-order nonlinear relation (Siconos ``FirstOrderNonLinearR``):
    :math:`y = h(X, t, \lambda, Z)`, :math:`R = g(X, t, \lambda, Z)`.

    Plug-ins: ``h(x, t, lam, z) -> (m,)``, ``g(x, t, lam, z) -> (n,)``, and the Jacobians
    ``H0 = ∇_X h (m, n)``, ``H1 = ∇_λ h (m, m)``, ``G0 = ∇_X g (n, n)``, ``G1 = ∇_λ g (n, m)``,
    same arguments; finite differences when None.

    Parameters
    ----------
    h, g : callable
        The output and input plug-ins ``h(x, t, lam, z) -> (m,)`` and ``g(x, t, lam, z) -> (n,)``.
    H0, H1, G0, G1 : callable, optional
        Their Jacobians with respect to X and λ (same arguments); finite differences when None. A
        given Jacobian is checked once against central differences.
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When ``h`` or ``g`` is not callable.
    PluginError
        At the first step, when a plug-in returns the wrong shape or non-finite values, or a given
        Jacobian disagrees with the differences (the message names the plug-in and the entry).

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> rel = nm.FirstOrderR(h=lambda x, t, lam, z: x[:1] + lam, g=lambda x, t, lam, z: np.r_[0.0, lam[0]])
    >>> rel.kind
    'first'
    """

    kind = "first"
    PLUGINS = (("h", ("m",)), ("g", ("n",)), ("H0", ("m", "n")), ("H1", ("m", "m")), ("G0", ("n", "n")),
               ("G1", ("n", "m")))
    SIGNATURE = "x, t, lam, z"

    def __init__(self, h, g, H0=None, H1=None, G0=None, G1=None, *, name=None):
        super().__init__(name)
        self._take(("h", "g"), h=h, g=g, H0=H0, H1=H1, G0=G0, G1=G1)

    def output(self, X, t, lam, Z):
        return self._h(X, t, lam, Z)

    def input(self, X, t, lam, Z):
        return self._g(X, t, lam, Z)

    def jacobians(self, X, t, lam, Z):
        """(C, D, K, B) = (∇_X h, ∇_λ h, ∇_X g, ∇_λ g) at the point, finite differences where not given."""
        m, n = self.m, self.n
        out = []
        for key, f, x, size, of in (
                ("H0", lambda x: self._h(x, t, lam, Z), X, m, "h(x, t, lam, z)"),
                ("H1", lambda v: self._h(X, t, v, Z), lam, m, "h(x, t, lam, z)"),
                ("G0", lambda x: self._g(x, t, lam, Z), X, n, "g(x, t, lam, z)"),
                ("G1", lambda v: self._g(X, t, v, Z), lam, n, "g(x, t, lam, z)")):
            out.append(self._jacobian(key, (X, t, lam, Z), f, x, of, size))
        return tuple(out)


class FirstOrderLinearR(Relation):
    r"""First-order linear relation (Siconos ``FirstOrderLinearR``):
    :math:`y = C(t,Z)X + F(t,Z)Z + D(t,Z)\lambda + e(t,Z)`, :math:`R = B(t,Z)\lambda`.

    Each operator is a constant or a plug-in ``op(t, z)``: C (m, n), B (n, m), D (m, m), F (m, nz),
    e (m,); D, F, e may be None (absent).

    Parameters
    ----------
    C : (m, n) array_like or callable ``C(t, z)``
        The output's state matrix.
    B : (n, m) array_like or callable
        The input matrix.
    D, F, e : array_like or callable, optional
        The feedthrough (m, m), the free-vector matrix (m, nz) and the offset (m,); None: absent.
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When C or B is missing, or (when the interaction is linked) an operator has the wrong shape.

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> rel = nm.FirstOrderLinearR(C=lambda t, z: np.array([[np.cos(t), 0.0]]), B=[[0.0], [1.0]])
    >>> rel.linear
    True
    """

    kind = "first"
    PLUGINS = (("C", ("m", "n")), ("B", ("n", "m")), ("D", ("m", "m")), ("F", ("m", "nz")), ("e", ("m",)))
    SIGNATURE = "t, z"
    linear = True

    def __init__(self, C, B, D=None, F=None, e=None, *, name=None):
        super().__init__(name)
        if C is None or B is None:
            raise ModelingError(self._owner, "C" if C is None else "B", "is required")
        self._given = dict(C=C, B=B, D=D, F=F, e=e)

    def _bind(self):
        super()._bind()
        self.constant = all(o is None or o.constant for o in (self._C, self._B, self._D, self._F, self._e))

    def offset(self, t, Z):
        """The state-free part of y: F Z + e (zeros when absent)."""
        out = np.zeros(self.m)
        if self._F is not None:
            out += self._F(t, Z) @ Z
        if self._e is not None:
            out += self._e(t, Z)
        return out

    def output(self, X, t, lam, Z):
        y = self._C(t, Z) @ X + self.offset(t, Z)
        if self._D is not None:
            y += self._D(t, Z) @ lam
        return y

    def input(self, X, t, lam, Z):
        return self._B(t, Z) @ lam

    def jacobians(self, X, t, lam, Z):
        D = self._D(t, Z) if self._D is not None else np.zeros((self.m, self.m))
        return self._C(t, Z), D, None, self._B(t, Z)


class FirstOrderLinearTIR(FirstOrderLinearR):
    r"""First-order linear time-invariant relation (Siconos ``FirstOrderLinearTIR``): as
    :class:`FirstOrderLinearR` with constant C, B, D, F, e.

    Parameters
    ----------
    C, B, D, F, e : array_like
        Constant operators, shapes as in :class:`FirstOrderLinearR` (D, F, e optional).
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When an operator is a plug-in (use :class:`FirstOrderLinearR`) or B's shape does not match C's.

    Examples
    --------
    >>> from nsopt import modeling as nm
    >>> rel = nm.FirstOrderLinearTIR(C=[[1.0, 0.0]], B=[[0.0], [1.0]], D=[[0.1]])
    >>> rel.linear, rel.kind
    (True, 'first')
    """

    def __init__(self, C, B, D=None, F=None, e=None, *, name=None):
        for fld, v in (("C", C), ("B", B), ("D", D), ("F", F), ("e", e)):
            if callable(v):
                raise ModelingError(f"{type(self).__name__}" + (f" {name!r}" if name else ""), fld,
                                    "must be a constant for a time-invariant relation (use FirstOrderLinearR)")
        super().__init__(C, B, D, F, e, name=name)
        o = self._owner
        # the row count is known now: check what can be checked before link()
        self._C0 = matrix(C, o, "C")
        matrix(B, o, "B", (self._C0.shape[1], self._C0.shape[0]))


# ============================================================================ Lagrangian
class LagrangianR(Relation):
    """Base of the Lagrangian relations: P = G0ᵀ λ. Subclasses define :meth:`h` and :meth:`G0`.

    Parameters
    ----------
    name : str, optional
        A name for messages and reports.

    Attributes
    ----------
    kind : str
        ``"lagrangian"``.
    compliant : bool
        Whether y depends on λ (:meth:`G1` not None).
    rheonomous : bool
        Whether h depends on t (:meth:`hdot` not None).

    See Also
    --------
    LagrangianScleronomousR, LagrangianRheonomousR, LagrangianCompliantR, LagrangianLinearTIR :
        the Lagrangian relations.

    Examples
    --------
    :meth:`velocity` of a linear relation once bound (m = 1, n = 2, no free vector):

    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> rel = nm.LagrangianLinearTIR([[1.0, -1.0]])
    >>> rel.bind(1, 2, 0)
    >>> rel, rel.velocity(np.zeros(2), np.array([2.0, 0.5]), 0.0, None, np.zeros(0))
    (LagrangianLinearTIR(m=1, n=2), array([1.5]))
    """

    kind = "lagrangian"
    compliant = False
    rheonomous = False

    def G1(self, Q, t, lam, Z):
        """Compliance ∂y/∂λ, None when y does not depend on λ."""
        return None

    def hdot(self, Q, t, Z):
        """∂h/∂t, None for scleronomous relations."""
        return None

    def velocity(self, Q, V, t, lam, Z, G0=None):
        """ẏ = G0 V (+ ∂h/∂t)."""
        G = self.G0(Q, t, lam, Z) if G0 is None else G0
        y1 = G @ V
        hd = self.hdot(Q, t, Z)
        return y1 if hd is None else y1 + hd


class LagrangianScleronomousR(LagrangianR):
    r"""Scleronomous relation (Siconos ``LagrangianScleronomousR``): :math:`y = h(Q, Z)`,
    :math:`\dot y = G_0(Q, Z)\dot Q`, :math:`P = G_0^\top\lambda`.

    Plug-ins: ``h(q, z) -> (m,)``, ``G0(q, z) -> (m, n)`` (finite differences when None).

    With ``vectorized=True`` (as scipy's ``solve_ivp``), the plug-ins take stacked arguments: ``q`` of
    shape (k, n) and ``z`` of shape (k, nz), one row per interaction, and return ``h`` (k, m) and
    ``G0`` (k, m, n). Moreau–Jean then evaluates every interaction sharing the same plug-ins in one
    call per step (``formulations/time_stepping.md`` §4).

    Parameters
    ----------
    h : callable
        The gap ``h(q, z) -> (m,)`` (stacked arguments with ``vectorized=True``).
    G0 : callable, optional
        Its Jacobian ``G0(q, z) -> (m, n)``; finite differences when None, checked once when given.
    vectorized : bool, default False
        The plug-ins take one row per interaction (see above).
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When ``h`` is not callable.
    PluginError
        At the first step, when a plug-in returns the wrong shape or non-finite values, or ``G0``
        disagrees with the differences of ``h``.

    Examples
    --------
    A pendulum of length 1 (angle q) against a wall at x = 0.5: the gap is ``0.5 - sin q``.

    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> rel = nm.LagrangianScleronomousR(h=lambda q, z: np.array([0.5 - np.sin(q[0])]),
    ...                                  G0=lambda q, z: np.array([[-np.cos(q[0])]]))
    >>> rel.kind, rel.vectorized
    ('lagrangian', False)
    """

    PLUGINS = (("h", ("m",)), ("G0", ("m", "n")))
    SIGNATURE = "q, z"

    def __init__(self, h, G0=None, *, vectorized=False, name=None):
        super().__init__(name)
        self._take(("h",), h=h, G0=G0)
        self.vectorized = bool(vectorized)

    def batch_key(self):
        """Interactions whose relations have equal keys are evaluated by one call of :meth:`h_batch`."""
        if self.vectorized:
            return ("vectorized", self._given["h"], self._given["G0"], self.m, self.n, self.nz)
        return ("loop", self.m, self.n, self.nz)

    def h_batch(self, Q, Z, rels=None):
        """y = h(Q_j, Z_j) for the rows of Q (k, n), Z (k, nz): (k, m). ``rels``: the relation of each
        row (non-vectorized relations are called one row at a time)."""
        k = Q.shape[0]
        if self.vectorized:
            return call_plugin(self._given["h"], (Q, Z), self._owner, "h", (k, self.m), "q, z")
        return np.array([r._h(Q[j], Z[j]) for j, r in enumerate(rels)]).reshape(k, self.m)

    def G0_batch(self, Q, Z, rels=None):
        """G0(Q_j, Z_j) for the rows of Q: (k, m, n); finite differences when G0 is not given."""
        k, m, n = Q.shape[0], self.m, self.n
        if not self.vectorized:
            return np.array([r.G0(Q[j], None, None, Z[j]) for j, r in enumerate(rels)]).reshape(k, m, n)
        if self._given["G0"] is not None:
            G = call_plugin(self._given["G0"], (Q, Z), self._owner, "G0", (k, m, n), "q, z")
            if k and "G0" not in self._jac_checked:
                self._checked("G0", G[0], lambda q: self.h_batch(q[None, :], Z[:1])[0], Q[0], "h(q, z)")
            return G
        return fd_jacobian_rows(lambda X: self.h_batch(X, Z), Q, m)

    def h(self, Q, t, lam, Z):
        if self.vectorized:
            return self.h_batch(Q[None, :], Z[None, :])[0]
        return self._h(Q, Z)

    def G0(self, Q, t, lam, Z):
        if self.vectorized:
            return self.G0_batch(Q[None, :], Z[None, :])[0]
        return self._jacobian("G0", (Q, Z), lambda q: self._h(q, Z), Q, "h(q, z)")


class LagrangianRheonomousR(LagrangianR):
    r"""Rheonomous relation (Siconos ``LagrangianRheonomousR``): :math:`y = h(Q, t, Z)`,
    :math:`\dot y = G_0 \dot Q + \partial h/\partial t`, :math:`P = G_0^\top\lambda`.

    Plug-ins: ``h(q, t, z) -> (m,)``, ``G0(q, t, z) -> (m, n)``, ``hdot(q, t, z) -> (m,)``
    (∂h/∂t); finite differences when None.

    Parameters
    ----------
    h : callable
        The gap ``h(q, t, z) -> (m,)``.
    G0, hdot : callable, optional
        ``G0(q, t, z) -> (m, n)`` and ``hdot(q, t, z) -> (m,)``; finite differences when None.
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When ``h`` is not callable.

    Examples
    --------
    A ball (height q) above a plate that vibrates as ``0.1 sin(10 t)``:

    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> rel = nm.LagrangianRheonomousR(h=lambda q, t, z: np.array([q[0] - 0.1 * np.sin(10 * t)]),
    ...                                G0=lambda q, t, z: np.array([[1.0]]),
    ...                                hdot=lambda q, t, z: np.array([-np.cos(10 * t)]))
    >>> rel.rheonomous
    True
    """

    rheonomous = True
    PLUGINS = (("h", ("m",)), ("G0", ("m", "n")), ("hdot", ("m",)))
    SIGNATURE = "q, t, z"

    def __init__(self, h, G0=None, hdot=None, *, name=None):
        super().__init__(name)
        self._take(("h",), h=h, G0=G0, hdot=hdot)

    def h(self, Q, t, lam, Z):
        return self._h(Q, t, Z)

    def G0(self, Q, t, lam, Z):
        return self._jacobian("G0", (Q, t, Z), lambda q: self._h(q, t, Z), Q, "h(q, t, z)")

    def hdot(self, Q, t, Z):
        if self._hdot is not None:
            hd = self._hdot(Q, t, Z)
            self._checked("hdot", hd[:, None], lambda s: self._h(Q, s[0], Z), np.array([t]), "h(q, t, z)")
            return hd
        d = 1e-7 * max(1.0, abs(t))
        return (self._h(Q, t + d, Z) - self._h(Q, t - d, Z)) / (2 * d)


class LagrangianCompliantR(LagrangianR):
    r"""Compliant relation (Siconos ``LagrangianCompliantR``): :math:`y = h(Q, \lambda, Z)`,
    :math:`\dot y = G_0\dot Q + G_1\dot\lambda`, :math:`P = G_0^\top\lambda`.

    Plug-ins: ``h(q, lam, z) -> (m,)``, ``G0(q, lam, z) -> (m, n)``, ``G1(q, lam, z) -> (m, m)``
    (finite differences when None). Moreau–Jean treats it at the position level with λ a force
    (the impulse over a step is hλ); see ``formulations/time_stepping.md``.

    Parameters
    ----------
    h : callable
        ``h(q, lam, z) -> (m,)``.
    G0, G1 : callable, optional
        ``G0(q, lam, z) -> (m, n)`` and ``G1(q, lam, z) -> (m, m)``; finite differences when None.
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When ``h`` is not callable.

    Examples
    --------
    A spring-like contact of compliance 0.01: y = q + 0.01 λ.

    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> rel = nm.LagrangianCompliantR(h=lambda q, lam, z: q[:1] + 0.01 * lam)
    >>> rel.compliant
    True
    """

    compliant = True
    PLUGINS = (("h", ("m",)), ("G0", ("m", "n")), ("G1", ("m", "m")))
    SIGNATURE = "q, lam, z"

    def __init__(self, h, G0=None, G1=None, *, name=None):
        super().__init__(name)
        self._take(("h",), h=h, G0=G0, G1=G1)

    def h(self, Q, t, lam, Z):
        return self._h(Q, lam, Z)

    def G0(self, Q, t, lam, Z):
        return self._jacobian("G0", (Q, lam, Z), lambda q: self._h(q, lam, Z), Q, "h(q, lam, z)")

    def G1(self, Q, t, lam, Z):
        return self._jacobian("G1", (Q, lam, Z), lambda v: self._h(Q, v, Z), lam, "h(q, lam, z)")


class LagrangianLinearTIR(LagrangianR):
    r"""Lagrangian linear time-invariant relation (Siconos ``LagrangianLinearTIR``):
    :math:`y = HQ + b + D\lambda + FZ`, :math:`P = H^\top\lambda`; H (m, n), b (m,), D (m, m),
    F (m, nz) constants (b, D, F None: absent). At the velocity level, :math:`\dot y = HV + D\lambda`
    (D is added to the one-step matrix, as Siconos does).

    Parameters
    ----------
    H : (m, n) array_like
        The rows of the gap: y = H Q + ... (n: the total size of the linked systems).
    b : (m,) array_like, optional
        The constant offset.
    D : (m, m) array_like, optional
        The feedthrough (a compliance), added to the one-step matrix.
    F : (m, nz) array_like, optional
        The matrix of the systems' free vector Z.
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When an operator is a plug-in (use :class:`LagrangianScleronomousR`), has the wrong shape, or
        (when linked) H does not match the systems' size.

    Examples
    --------
    The ground under a ball whose first coordinate is its height:

    >>> from nsopt import modeling as nm
    >>> rel = nm.LagrangianLinearTIR(H=[[1.0, 0.0, 0.0]])
    >>> rel.H.shape, rel.constant
    ((1, 3), True)
    >>> nm.LagrangianLinearTIR(H=[[1.0]], b=[0.0, 1.0])
    Traceback (most recent call last):
    ...
    nsopt.exceptions.ModelingError: ...b...
    """

    linear = True
    constant = True

    def __init__(self, H, b=None, D=None, F=None, *, name=None):
        super().__init__(name)
        o = self._owner
        for fld, v in (("H", H), ("b", b), ("D", D), ("F", F)):
            if callable(v):
                raise ModelingError(o, fld, "must be a constant (use LagrangianScleronomousR for h(q))")
        self.H = matrix(H, o, "H")
        m = self.H.shape[0]
        self.b = None if b is None else vector(b, o, "b", m)
        self.D = None if D is None else matrix(D, o, "D", (m, m))
        self._F = F
        self.H.setflags(write=False)

    def _bind(self):
        o = self._owner
        if self.H.shape != (self.m, self.n):
            raise ModelingError(o, "H", f"has shape {self.H.shape}, expected ({self.m}, {self.n}) "
                                        f"(law size x total dimension of the linked systems)")
        self.F = None if self._F is None else matrix(self._F, o, "F", (self.m, self.nz))

    def offset(self, Z) -> np.ndarray:
        """The constant part of y: b + F Z (zeros when both are absent)."""
        out = np.zeros(self.m) if self.b is None else self.b.copy()
        if self.F is not None:
            out += self.F @ Z
        return out

    def h(self, Q, t, lam, Z):
        y = self.H @ Q
        if self.b is not None:
            y = y + self.b
        if self.D is not None and lam is not None:
            y = y + self.D @ lam
        if self.F is not None:
            y = y + self.F @ Z
        return y

    def G0(self, Q, t, lam, Z):
        return self.H

    def G1(self, Q, t, lam, Z):
        return self.D


RELATION_CLASSES = (FirstOrderR, FirstOrderLinearR, FirstOrderLinearTIR, LagrangianScleronomousR,
                    LagrangianRheonomousR, LagrangianCompliantR, LagrangianLinearTIR)
