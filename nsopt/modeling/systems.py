r"""Dynamical systems: first order (:math:`\dot x = f(t, x, z) + r`) and Lagrangian
(:math:`M(q)\ddot q + F_{gyr}(q, \dot q) = F_{ext}(t) + F_{int}(t, q, \dot q) + p`), as in Siconos' kernel.

Operators are constants or plug-ins (Python callables returning numpy arrays). Every plug-in receives
the system's free vector ``z`` (``z=`` in the constructor, empty by default) as its last argument, as
in Siconos. Missing Jacobians are computed by finite differences.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ModelingError, PluginError
from ._check import Operator, check_once, fd_jacobian, label, mass_matrix, matrix, vector
from ._state import StateField


class DynamicalSystem:
    """Base class: a state, an input slot (``r`` or ``p``) summed over the system's interactions, and
    a free vector ``z`` for user data. ``order`` is 1 (first order) or 2 (Lagrangian).

    The object's own state (``q``, ``v``, ``p`` of a Lagrangian system, ``x``, ``r`` of a first-order
    one) is its initial condition until a run stops; a :class:`~nsopt.modeling.TimeStepping` keeps its
    state itself while it steps (``sim.state_of(ds)`` reads it, ``sim.set_state(ds, ...)`` sets it), and
    writes it onto the object, as plain copies, when it stops (``run()`` returning or interrupted, a step
    reaching T): after a run, ``ds.q`` is where the last run to stop stopped. Every run starts from the
    initial conditions ``q0, v0`` (``x0``), unless it continues another one
    (``TimeStepping(..., continue_from=...)``); setting ``ds.q`` changes the object's own state only.

    Parameters
    ----------
    z : array_like, optional
        The free vector handed to every plug-in as its last argument (default empty).
    name : str, optional
        A name for messages and reports.

    Attributes
    ----------
    order : int
        1 (first order) or 2 (Lagrangian).
    n : int
        Dimension of the state (of q for Lagrangian systems).
    z : numpy.ndarray
        The free vector.
    q, v, p : numpy.ndarray
        Position, velocity and input impulse (Lagrangian systems).
    x, r : numpy.ndarray
        State and input (first-order systems).

    Raises
    ------
    ModelingError
        When ``z`` is not a real vector.

    See Also
    --------
    FirstOrderNonLinearDS, FirstOrderLinearDS, FirstOrderLinearTIDS : first-order systems.
    LagrangianDS, LagrangianLinearTIDS : Lagrangian systems.
    """

    order = 0

    q = StateField("q", "Position (n,) (Lagrangian): the object's own state (see the class docstring).")
    v = StateField("v", "Velocity (n,) (Lagrangian).")
    p = StateField("p", "Input impulse p = Σ G0ᵀλ over the last step (n,) (Lagrangian).")
    x = StateField("x", "State (n,) (first order).")
    r = StateField("r", "Input r = Σ g (n,) over the interactions (first order).")

    def __init__(self, z=None, name=None):
        self.name = name
        self._owner = label(self)
        self._jac_checked: set = set()     # the given Jacobians already checked against differences
        self.z = np.zeros(0) if z is None else vector(z, self._owner, "z")

    @property
    def n(self) -> int:
        """Dimension of the state (of q for Lagrangian systems)."""
        return self._n

    def __repr__(self):
        return f"{self._owner}(n={self.n})"


# ============================================================================ first order
class FirstOrderNonLinearDS(DynamicalSystem):
    r"""First-order nonlinear system :math:`\dot x = f(t, x, z) + r` (Siconos ``FirstOrderNonLinearDS``).

    Parameters
    ----------
    x0 : (n,) initial state.
    f : plug-in ``f(t, x, z) -> (n,)``.
    jacobian_f : plug-in ``jacobian_f(t, x, z) -> (n, n)`` (:math:`\nabla_x f`); finite differences when None.
    z : free vector handed to the plug-ins.
    """

    order = 1
    linear = False

    def __init__(self, x0, f, jacobian_f=None, *, z=None, name=None):
        super().__init__(z, name)
        self.x0 = vector(x0, self._owner, "x0")
        self._n = n = self.x0.shape[0]
        if not callable(f):
            raise ModelingError(self._owner, "f", "must be a plug-in f(t, x, z) -> (n,)")
        self._f = Operator(f, self._owner, "f", (n,), "t, x, z")
        self._jf = None if jacobian_f is None else Operator(jacobian_f, self._owner, "jacobian_f", (n, n), "t, x, z")
        self.x = self.x0.copy()
        self.r = np.zeros(n)

    def f(self, t, x) -> np.ndarray:
        return self._f(t, x, self.z)

    def jacobian_f(self, t, x) -> np.ndarray:
        """∇_x f at (t, x): the given plug-in (checked once against central differences,
        :func:`nsopt.modeling._check.check_jacobian`), else forward differences."""
        if self._jf is not None:
            J = self._jf(t, x, self.z)
            check_once(self._jac_checked, "jacobian_f", J, lambda xx: self.f(t, xx), x, self._owner, "jacobian_f",
                       "f(t, x, z)")
            return J
        return fd_jacobian(lambda xx: self.f(t, xx), x, self.n)

    @property
    def constant_jacobian(self) -> bool:
        return False


class FirstOrderLinearDS(FirstOrderNonLinearDS):
    r"""First-order linear system :math:`\dot x = A(t) x + b(t) + r` (Siconos ``FirstOrderLinearDS``).

    ``A`` (n, n) and ``b`` (n,) are constants or plug-ins ``A(t, z)``, ``b(t, z)``; ``b=None``: no b.

    Parameters
    ----------
    x0 : array_like, shape (n,)
        Initial state.
    A : array_like, shape (n, n), or callable
        The matrix, or a plug-in ``A(t, z) -> (n, n)``.
    b : array_like, shape (n,), or callable, optional
        The constant term, or a plug-in ``b(t, z) -> (n,)``; None: no b.
    z : array_like, optional
        Free vector handed to the plug-ins.
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When ``A`` is missing, or ``x0``, a constant ``A`` or ``b`` has the wrong shape or non-finite
        values.

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> ds = nm.FirstOrderLinearDS([1.0, 0.0], lambda t, z: np.array([[0.0, 1.0], [-1.0, 0.0]]),
    ...                            b=[0.0, 1.0])
    >>> ds, ds.f(0.0, ds.x), ds.constant_jacobian
    (FirstOrderLinearDS(n=2), array([0., 0.]), False)
    """

    linear = True

    def __init__(self, x0, A, b=None, *, z=None, name=None):
        DynamicalSystem.__init__(self, z, name)
        self.x0 = vector(x0, self._owner, "x0")
        self._n = n = self.x0.shape[0]
        if A is None:
            raise ModelingError(self._owner, "A", "is required (use FirstOrderNonLinearDS for f(t, x))")
        self._A = Operator(A, self._owner, "A", (n, n), "t, z")
        self._b = None if b is None else Operator(b, self._owner, "b", (n,), "t, z")
        self.x = self.x0.copy()
        self.r = np.zeros(n)

    def A(self, t) -> np.ndarray:
        return self._A(t, self.z)

    def b(self, t):
        return None if self._b is None else self._b(t, self.z)

    def f(self, t, x) -> np.ndarray:
        out = self.A(t) @ x
        b = self.b(t)
        return out if b is None else out + b

    def jacobian_f(self, t, x) -> np.ndarray:
        return self.A(t)

    @property
    def constant_jacobian(self) -> bool:
        return self._A.constant


class FirstOrderLinearTIDS(FirstOrderLinearDS):
    r"""First-order linear time-invariant system :math:`\dot x = A x + b + r` (constants only).

    Parameters
    ----------
    x0 : array_like, shape (n,)
        Initial state.
    A : array_like, shape (n, n)
        The matrix (a constant).
    b : array_like, shape (n,), optional
        The constant term; None: no b.
    z : array_like, optional
        Free vector (kept for user data).
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When ``A`` or ``b`` is a plug-in (use :class:`FirstOrderLinearDS`), or has the wrong shape.

    Examples
    --------
    >>> from nsopt import modeling as nm
    >>> ds = nm.FirstOrderLinearTIDS([1.0, 0.0], [[0.0, 1.0], [-1.0, 0.0]])
    >>> ds, ds.f(0.0, ds.x), ds.constant_jacobian
    (FirstOrderLinearTIDS(n=2), array([ 0., -1.]), True)
    """

    def __init__(self, x0, A, b=None, *, z=None, name=None):
        if callable(A) or callable(b):
            raise ModelingError(label(self) if name is None else f"{type(self).__name__} {name!r}",
                                "A" if callable(A) else "b",
                                "must be a constant for a time-invariant system (use FirstOrderLinearDS)")
        super().__init__(x0, A, b, z=z, name=name)


# ============================================================================ Lagrangian
class LagrangianDS(DynamicalSystem):
    r"""Lagrangian system (Siconos ``LagrangianDS``, with its equation and signs):

    .. math::
        M(q)\dot v + F_{gyr}(q, v) + F_{int}(t, q, v) = F_{ext}(t) + p,\qquad \dot q = v.

    :math:`F_{int}` and :math:`F_{gyr}` are on the left: an internal spring of stiffness k is
    ``fint = k q`` (a restoring force), gravity on a pendulum of length L is ``fint = m g L sin q``. The
    total force is :math:`F = F_{ext} - F_{int} - F_{gyr}` (:meth:`forces`, Siconos ``forces()``);
    Moreau–Jean uses its Jacobians :math:`K = -\nabla_q F = \nabla_q F_{int} + \nabla_q F_{gyr}` and
    :math:`C = -\nabla_v F` (Siconos ``jacobianqForces``, ``jacobianvForces``).

    .. note::
       ``fint`` has Siconos' sign since the "Unreleased" entry of ``CHANGES.md``; nsopt 0.1.0 added it
       to the force. A model written for that sign passes ``fint=lambda t, q, v, z: -old(t, q, v, z)`` and negates its
       ``jacobian_fint_q``/``jacobian_fint_v``.

    Parameters
    ----------
    q0, v0 : array_like, shape (n,)
        Initial position and velocity.
    M : array_like, shape (n, n), or callable
        The mass matrix, a constant or a plug-in ``M(q, z)`` (symmetric positive definite).
    fgyr : callable or array_like, optional
        :math:`F_{gyr}`, a plug-in ``fgyr(q, v, z) -> (n,)`` (or a constant); None: absent.
    fint : callable or array_like, optional
        :math:`F_{int}`, a plug-in ``fint(t, q, v, z) -> (n,)`` (or a constant); None: absent.
    fext : array_like, shape (n,), or callable, optional
        :math:`F_{ext}`, a constant or a plug-in ``fext(t, z)``; None: absent.
    jacobian_fgyr_q, jacobian_fgyr_v : callable, optional
        :math:`\nabla_q F_{gyr}`, :math:`\nabla_v F_{gyr}`: plug-ins ``(q, v, z) -> (n, n)``; finite
        differences when None, checked once against central differences when given.
    jacobian_fint_q, jacobian_fint_v : callable, optional
        :math:`\nabla_q F_{int}`, :math:`\nabla_v F_{int}`: plug-ins ``(t, q, v, z) -> (n, n)``; the same.
    z : array_like, optional
        The free vector handed to every plug-in as its last argument.
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When a constant has the wrong shape or non-finite values, or a constant M is not symmetric
        positive definite.
    PluginError
        When a plug-in returns the wrong shape or non-finite values, or a given Jacobian disagrees
        with the differences (at its first evaluation).

    Examples
    --------
    A pendulum (angle q from the downward vertical, L = 1, m = 1) with a viscous joint (0.1 v) and a
    constant torque: ``fint`` is the restoring term, on the left of the equation as in Siconos.

    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> g = 9.81
    >>> ds = nm.LagrangianDS([0.5], [1.0], M=[[1.0]], fint=lambda t, q, v, z: g * np.sin(q) + 0.1 * v,
    ...                      fext=[0.2])
    >>> F = ds.forces(0.0, ds.q, ds.v)            # F_ext - F_int - F_gyr
    >>> bool(np.isclose(F[0], 0.2 - g * np.sin(0.5) - 0.1))
    True
    >>> K, C = ds.jacobian_forces(0.0, ds.q, ds.v)   # K = ∇q F_int > 0: a restoring stiffness
    >>> bool(np.isclose(K[0, 0], g * np.cos(0.5), rtol=1e-6)), bool(np.isclose(C[0, 0], 0.1, rtol=1e-6))
    (True, True)
    """

    order = 2

    def __init__(self, q0, v0, M, fgyr=None, fint=None, fext=None, *, jacobian_fgyr_q=None,
                 jacobian_fgyr_v=None, jacobian_fint_q=None, jacobian_fint_v=None, z=None, name=None):
        super().__init__(z, name)
        o = self._owner
        self.q0 = vector(q0, o, "q0")
        self._n = n = self.q0.shape[0]
        self.v0 = vector(v0, o, "v0", n)
        self._M = Operator(M, o, "M", (n, n), "q, z")
        if self._M.constant:
            mass_matrix(self._M.value, o, "M")
        self._fgyr = None if fgyr is None else Operator(fgyr, o, "fgyr", (n,), "q, v, z")
        self._fint = None if fint is None else Operator(fint, o, "fint", (n,), "t, q, v, z")
        self._fext = None if fext is None else Operator(fext, o, "fext", (n,), "t, z")
        jac = {}
        for key, fn, sig in (("jacobian_fgyr_q", jacobian_fgyr_q, "q, v, z"), ("jacobian_fgyr_v", jacobian_fgyr_v, "q, v, z"),
                             ("jacobian_fint_q", jacobian_fint_q, "t, q, v, z"), ("jacobian_fint_v", jacobian_fint_v, "t, q, v, z")):
            jac[key] = None if fn is None else Operator(fn, o, key, (n, n), sig)
        self._jac = jac
        self.q, self.v = self.q0.copy(), self.v0.copy()
        self.p = np.zeros(n)

    # ---- operators
    def mass(self, q) -> np.ndarray:
        """M(q): a constant (checked once), or the plug-in's value, checked at every evaluation:
        symmetric to round-off and positive definite (:func:`nsopt.modeling._check.mass_matrix`)."""
        if self._M.constant:
            return self._M.value
        return mass_matrix(self._M(q, self.z), self._owner, "M", error=PluginError)

    @property
    def constant_mass(self) -> bool:
        return self._M.constant

    @property
    def constant_iteration_matrix(self) -> bool:
        """True when Moreau–Jean's W = M - hθC - h²θ²K never changes (constant M, no state-dependent force)."""
        return self._M.constant and self._fgyr is None and self._fint is None

    @property
    def has_state_forces(self) -> bool:
        return self._fgyr is not None or self._fint is not None

    @property
    def has_fext(self) -> bool:
        return self._fext is not None

    @property
    def constant_fext(self) -> bool:
        return self._fext is None or self._fext.constant

    def fext(self, t):
        return None if self._fext is None else self._fext(t, self.z)

    def forces(self, t, q, v) -> np.ndarray:
        """F = F_ext(t) - F_int(t, q, v) - F_gyr(q, v) (Siconos ``LagrangianDS::computeForces``)."""
        F = np.zeros(self.n)
        if self._fext is not None:
            F += self._fext(t, self.z)
        if self._fint is not None:
            F -= self._fint(t, q, v, self.z)
        if self._fgyr is not None:
            F -= self._fgyr(q, v, self.z)
        return F

    def jacobian_forces(self, t, q, v):
        """(K, C) = (-∂F/∂q, -∂F/∂v) = (∇q F_int + ∇q F_gyr, ∇v F_int + ∇v F_gyr), or (None, None)
        without state-dependent forces."""
        if not self.has_state_forces:
            return None, None
        n, z, j = self.n, self.z, self._jac

        def jac(key, f, x, of):
            if j[key] is None:
                return fd_jacobian(f, x, n)
            J = j[key](t, q, v, z) if "fint" in key else j[key](q, v, z)
            check_once(self._jac_checked, key, J, f, x, self._owner, key, of)
            return J

        K, C = np.zeros((n, n)), np.zeros((n, n))
        if self._fint is not None:
            K += jac("jacobian_fint_q", lambda x: self._fint(t, x, v, z), q, "fint(t, q, v, z)")
            C += jac("jacobian_fint_v", lambda x: self._fint(t, q, x, z), v, "fint(t, q, v, z)")
        if self._fgyr is not None:
            K += jac("jacobian_fgyr_q", lambda x: self._fgyr(x, v, z), q, "fgyr(q, v, z)")
            C += jac("jacobian_fgyr_v", lambda x: self._fgyr(q, x, z), v, "fgyr(q, v, z)")
        return K, C


class LagrangianLinearTIDS(LagrangianDS):
    r"""Lagrangian linear time-invariant system :math:`M\ddot q + C\dot q + Kq = F_{ext}(t) + p`
    (Siconos ``LagrangianLinearTIDS``). M, K, C constants (K, C None: absent); ``fext`` a constant
    or a plug-in ``fext(t, z)``.

    Parameters
    ----------
    q0, v0 : array_like, shape (n,)
        Initial position and velocity.
    M : array_like, shape (n, n)
        The mass matrix (symmetric positive definite).
    K, C : array_like, shape (n, n), optional
        Stiffness and damping; None: absent.
    fext : array_like, shape (n,), or callable, optional
        External force, constant or a plug-in ``fext(t, z)``; None: absent.
    z : array_like, optional
        Free vector handed to the plug-in.
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When M, K or C is a plug-in (use :class:`LagrangianDS`), M is not symmetric positive
        definite, or a shape is wrong.

    Examples
    --------
    >>> from nsopt import modeling as nm
    >>> ds = nm.LagrangianLinearTIDS([1.0], [0.0], [[2.0]], K=[[8.0]], fext=[-1.0])
    >>> ds, ds.forces(0.0, ds.q, ds.v)
    (LagrangianLinearTIDS(n=1), array([-9.]))
    """

    def __init__(self, q0, v0, M, K=None, C=None, fext=None, *, z=None, name=None):
        for fld, val in (("M", M), ("K", K), ("C", C)):
            if callable(val):
                raise ModelingError(f"{type(self).__name__}" + (f" {name!r}" if name else ""), fld,
                                    "must be a constant matrix for a time-invariant system (use LagrangianDS)")
        super().__init__(q0, v0, M, fext=fext, z=z, name=name)
        n, o = self.n, self._owner
        self.K = None if K is None else matrix(K, o, "K", (n, n))
        self.C = None if C is None else matrix(C, o, "C", (n, n))

    @property
    def constant_iteration_matrix(self) -> bool:
        return True

    @property
    def has_state_forces(self) -> bool:
        return self.K is not None or self.C is not None

    def forces(self, t, q, v) -> np.ndarray:
        F = np.zeros(self.n) if self._fext is None else np.array(self._fext(t, self.z))
        if self.K is not None:
            F -= self.K @ q
        if self.C is not None:
            F -= self.C @ v
        return F

    def jacobian_forces(self, t, q, v):
        return self.K, self.C

