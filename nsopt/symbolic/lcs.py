r"""Linear complementarity systems from SymPy Lagrangian systems with unilateral contacts, through Moreau–Jean's scheme."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sm
import sympy.physics.mechanics as me

from ..exceptions import NsoptError, ProblemError
from ._autodiff import collect_leaves, to_float
from .linearization import _kane_constraints, _merge_op
from .relations import compile_plugin

__all__ = ["LCS", "ContactModel", "lcs"]

_t = me.dynamicsymbols._t


class ContactModel:
    r"""A Lagrangian system with unilateral contacts, compiled from SymPy:
    :math:`M(q)\dot v = F(q, v, u) + G(q)^\top \lambda`, gaps :math:`g(q) \ge 0`, :math:`G = \partial g/\partial q`,
    with :math:`\dot q = v`.

    Built by :func:`lcs` from a KanesMethod (kinematic equations :math:`\dot q = u`) or a
    LagrangesMethod (no constraints), the gap expressions and numeric parameters. Its
    :meth:`step` is one step of Moreau–Jean's scheme as ``nsopt.modeling.MoreauJeanOSI`` takes it
    (θ-method, impulses at the velocity level with Newton's impact law, index set from the
    predicted gap :math:`g + \gamma h \dot g \le 0`), solved to convergence.

    Parameters
    ----------
    system : KanesMethod or LagrangesMethod
        With its equations of motion formed.
    gaps : list
        SymPy expressions of the coordinates and parameters.
    params : dict
        Numbers for the parameters.
    inputs : list, optional
        The input functions (default: the other functions of time).

    Raises
    ------
    ProblemError
        As :func:`lcs`.
    """

    def __init__(self, system, gaps, params: dict, inputs=None):
        if isinstance(system, me.KanesMethod):
            try:
                Mq, Fq = system.mass_matrix, system.forcing
            except ValueError:      # (SymPy's 'Need to compute Fr, Fr* first.')
                raise ProblemError("system", "equations of motion not formed: call kanes_equations() first",
                                   "lcs") from None
            q, v = list(system.q), list(system.u)
            kd = system.kindiffdict()
            if any(sm.simplify(kd[x.diff(_t)] - y) != 0 for x, y in zip(q, v)):
                raise ProblemError("system", "the kinematic equations must be q' = u for an LCS", "lcs")
            q_dep, u_dep = _kane_constraints(system)[:2]
            if len(q_dep) or len(u_dep):
                raise ProblemError("system", "dependent coordinates or speeds are not supported", "lcs")
        elif isinstance(system, me.LagrangesMethod):
            if system.eom is None:
                raise ProblemError("system", "equations of motion not formed: call form_lagranges_equations() "
                                   "first", "lcs")
            if len(system.lam_vec):
                raise ProblemError("system", "constraints (Lagrange multipliers) are not supported", "lcs")
            q, v = list(system.q), [x.diff(_t) for x in system.q]
            Mq, Fq = system.mass_matrix, system.forcing
        else:
            raise ProblemError("system", f"expected a KanesMethod or LagrangesMethod, got {type(system).__name__}",
                               "lcs")
        n = len(q)
        self.q_names, self.v_names = q, v
        vals = {k: sm.Float(to_float(x, k)) for k, x in params.items()}
        gaps = sm.Matrix(gaps)
        leaves = collect_leaves(list(Mq) + list(Fq) + list(gaps))
        known = set(q) | set(v) | set(vals)
        u = list(inputs) if inputs is not None else sorted(
            {x for x in leaves - known if x.free_symbols == {_t}}, key=sm.default_sort_key)
        missing = leaves - known - set(u)
        if missing:
            raise ProblemError("params", f"no value for {', '.join(sorted(map(str, missing)))}", "lcs")
        self.u_names, self.n, self.m, self.nu = u, n, len(gaps), len(u)
        Q, V, U = sm.symbols(f"q0:{n}"), sm.symbols(f"v0:{n}"), sm.symbols(f"u0:{max(len(u), 1)}")[:len(u)]
        W, P = sm.symbols(f"w0:{n}"), sm.symbols(f"P0:{len(gaps)}")
        sub = {**vals, **dict(zip(v, V)), **dict(zip(u, U))}
        subq = dict(zip(q, Q))
        # derivatives first (a Lagrange v is q'), then the coordinates
        Mq = me.msubs(Mq, sub).xreplace(subq)
        Fq = me.msubs(Fq, sub).xreplace(subq)
        g = me.msubs(gaps, vals).xreplace(subq)
        G = g.jacobian(Q)
        Qa, Va, Ua, Wa, Pa = ("q", Q), ("v", V), ("u", U), ("w", W), ("P", P)
        cp = compile_plugin
        self.M = cp(Mq, [Qa], (n, n))
        self.F = cp(Fq, [Qa, Va, Ua], (n,))
        self.F_q = cp(Fq.jacobian(Q), [Qa, Va, Ua], (n, n))
        self.F_v = cp(Fq.jacobian(V), [Qa, Va, Ua], (n, n))
        self.F_u = cp(Fq.jacobian(U) if U else sm.zeros(n, 0), [Qa, Va, Ua], (n, len(U)))
        self.Mw_q = cp((Mq * sm.Matrix(W)).jacobian(Q), [Qa, Wa], (n, n))        # d(M(q) w)/dq
        self.g = cp(g, [Qa], (len(g),))
        self.G = cp(G, [Qa], (len(g), n))
        self.GtP_q = cp((G.T * sm.Matrix(P)).jacobian(Q), [Qa, Pa], (n, n))      # d(G(q)^T P)/dq
        self.Gw_q = cp((G * sm.Matrix(W)).jacobian(Q), [Qa, Wa], (len(g), n))    # d(G(q) w)/dq

    @classmethod
    def from_modeling(cls, ds, interactions, t: float = 0.0, eps: float = 1e-6) -> "ContactModel":
        r"""The same model from ``nsopt.modeling``: a LagrangianDS (or LagrangianLinearTIDS) and the
        Lagrangian interactions linked to it alone (``nsds.link(inter, ds)``), at time t.

        M, F and its Jacobians, g and G come from the system and relations (their plug-ins, or
        their own finite differences); the curvature terms :math:`\partial(M(q)w)/\partial q`,
        :math:`\partial(G^\top P)/\partial q`, :math:`\partial(Gw)/\partial q` are central
        differences with step ``eps``. The system has no input (u is empty).
        """
        self = cls.__new__(cls)
        n = ds.n
        for inter in interactions:
            if len(getattr(inter, "systems", ())) != 1 or inter.systems[0] is not ds:
                raise ProblemError("interactions", f"{inter!r} is not linked to this system alone", "lcs")
            if getattr(inter.relation, "kind", "") != "lagrangian" or inter.relation.compliant:
                raise ProblemError("interactions", f"{inter!r}: only scleronomous/linear Lagrangian "
                                   "relations are supported", "lcs")
        z = ds.z
        rels = [i.relation for i in interactions]
        self.q_names = [f"q{i}" for i in range(n)]
        self.v_names = [f"v{i}" for i in range(n)]
        self.u_names, self.n, self.nu = [], n, 0
        self.m = sum(i.size for i in interactions)
        self.M = lambda q: np.asarray(ds.mass(q), dtype=float)
        self.F = lambda q, v, u: ds.forces(t, q, v)

        def jac(q, v, which):
            K, C = ds.jacobian_forces(t, q, v)
            J = K if which == 0 else C
            return np.zeros((n, n)) if J is None else -np.asarray(J, dtype=float)

        self.F_q = lambda q, v, u: jac(q, v, 0)
        self.F_v = lambda q, v, u: jac(q, v, 1)
        self.F_u = lambda q, v, u: np.zeros((n, 0))
        self.g = lambda q: np.concatenate([r.h(q, t, None, z) for r in rels])
        self.G = lambda q: np.vstack([r.G0(q, t, None, z) for r in rels])

        def fd(f, q, rows):
            out = np.empty((rows, n))
            for j in range(n):
                dq = np.zeros(n)
                dq[j] = eps * max(1.0, abs(q[j]))
                out[:, j] = (f(q + dq) - f(q - dq)) / (2 * dq[j])
            return out

        self.Mw_q = lambda q, w: fd(lambda x: self.M(x) @ w, q, n)
        self.GtP_q = lambda q, P: fd(lambda x: self.G(x).T @ P, q, n)
        self.Gw_q = lambda q, w: fd(lambda x: self.G(x) @ w, q, self.m)
        return self

    def active(self, q, v, h, gamma=0.5, threshold=0.0):
        """Contacts in the index set of the coming step: predicted gap :math:`g + \\gamma h G v \\le` threshold.

        Returns
        -------
        ndarray
            The indices of those contacts.
        """
        return np.flatnonzero(self.g(q) + gamma * h * (self.G(q) @ v) <= threshold)

    def step(self, q, v, u, h, *, theta=0.5, e=0.0, gamma=0.5, active=None, method="lemke", tol=1e-13,
             max_iter=100):
        r"""One Moreau–Jean step from (q, v) with input u: ``(q1, v1, P, active)``.

        Solves :math:`M(q_1)(v_1 - v) = h(1-\theta)F(q, v, u) + h\theta F(q_1, v_1, u) + G_A(q_1)^\top P`,
        :math:`q_1 = q + h((1-\theta) v + \theta v_1)`,
        :math:`0 \le P \perp G_A(q_1) v_1 + e\,G_A(q) v \ge 0` by Newton's method (an LCP per iteration).

        Parameters
        ----------
        q, v, u : array_like
            The coordinates, speeds and inputs.
        h : float
            The step.
        theta, e, gamma : float
            The θ of the scheme, Newton's restitution, the γ of the activation rule.
        active : array_like of int, optional
            The index set (default: from the predicted gaps, :meth:`active`).
        method, tol : str, float
            The LCP method and its tolerance.
        max_iter : int, default 100
            Newton iterations at most.

        Returns
        -------
        q1, v1 : ndarray
            The state after the step.
        P : ndarray
            The impulses of the active contacts.
        active : ndarray
            The index set used.
        """
        import nsopt

        q, v, u = (np.asarray(a, dtype=float) for a in (q, v, u))
        A = self.active(q, v, h, gamma) if active is None else np.asarray(active, dtype=int)
        Fk = self.F(q, v, u)
        restit = e * (self.G(q) @ v)[A]
        v1 = v.copy()
        P = np.zeros(len(A))
        for _ in range(max_iter):
            q1 = q + h * ((1 - theta) * v + theta * v1)
            M1 = self.M(q1)
            R = M1 @ (v1 - v) - h * (1 - theta) * Fk - h * theta * self.F(q1, v1, u)
            J = (M1 + h * theta * self.Mw_q(q1, v1 - v) - h * theta * self.F_v(q1, v1, u)
                 - (h * theta) ** 2 * self.F_q(q1, v1, u))
            vfree = v1 - np.linalg.solve(J, R)
            if len(A):
                GA = self.G(q1)[A]
                JiGt = np.linalg.solve(J, GA.T)
                sol = nsopt.solve(nsopt.LCP(GA @ JiGt, GA @ vfree + restit), method=method, tol=1e-14)
                if not sol.success:
                    raise NsoptError(f"ContactModel.step: the LCP of a Newton iteration was not solved "
                                     f"({sol.status.value}, error {sol.error:.1e})")
                P = sol.z
                vnew = vfree + JiGt @ P
            else:
                vnew = vfree
            done = np.abs(vnew - v1).max() <= tol * max(1.0, np.abs(vnew).max())
            v1 = vnew
            if done:
                break
        q1 = q + h * ((1 - theta) * v + theta * v1)
        return q1, v1, P, A


@dataclass
class LCS:
    r"""A linear complementarity system :math:`x^+ = A x + B u + D\lambda + d`,
    :math:`0 \le \lambda \perp E x + F\lambda + H u + c \ge 0` (plain numpy matrices).

    From :func:`lcs`: x = [q; v], λ the contact impulses of the index set ``active`` over one step of
    length ``h``; valid while that index set does not change.

    Attributes
    ----------
    A, B, D, d, E, F, H, c : ndarray
        The matrices and vectors above.
    h : float
        The step.
    active : ndarray
        The contacts of the index set the LCS holds for.
    x_names, u_names : list
        The SymPy names of the state and the inputs.

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt.symbolic import LCS
    >>> S = LCS(A=np.eye(1), B=np.zeros((1, 0)), D=np.eye(1), d=np.zeros(1), E=np.eye(1), F=np.eye(1),
    ...         H=np.zeros((1, 0)), c=np.zeros(1))
    >>> x1, lam, _ = S.step([-1.0])            # w = x + lam >= 0 pushes x back to 0
    >>> x1, lam
    (array([0.]), array([1.]))
    """

    A: np.ndarray
    B: np.ndarray
    D: np.ndarray
    d: np.ndarray
    E: np.ndarray
    F: np.ndarray
    H: np.ndarray
    c: np.ndarray
    h: float = 1.0
    active: np.ndarray | None = None
    x_names: list | None = None
    u_names: list | None = None

    def lcp(self, x, u=None):
        """The LCP of one step from x: ``nsopt.LCP(F, E x + H u + c)``.

        Parameters
        ----------
        x : (nx,) array_like
            The state [q; v].
        u : (nu,) array_like, optional
            The input (zeros when None).

        Returns
        -------
        nsopt.LCP

        Raises
        ------
        ProblemError
            When x or u has the wrong shape.
        """
        import nsopt

        x, u = self._xu(x, u)
        return nsopt.LCP(self.F, self.E @ x + self.H @ u + self.c)

    def _xu(self, x, u):
        x = np.asarray(x, dtype=float).reshape(-1)
        u = np.zeros(self.B.shape[1]) if u is None else np.asarray(u, dtype=float).reshape(-1)
        if x.shape != (self.A.shape[0],):
            raise ProblemError("x", f"has shape {x.shape}, expected ({self.A.shape[0]},)", "LCS")
        if u.shape != (self.B.shape[1],):
            raise ProblemError("u", f"has shape {u.shape}, expected ({self.B.shape[1]},)", "LCS")
        return x, u

    def step(self, x, u=None, *, method="lemke", **options):
        r"""One step: solve the LCP for λ with ``nsopt.solve(method=...)``.

        Parameters
        ----------
        x, u
            As in :meth:`lcp`.
        method : str, default "lemke"
            The LCP method.
        **options
            Its options.

        Returns
        -------
        x_next : ndarray
            The next state.
        lam : ndarray
            The impulses of the active contacts.
        solution : nsopt.Solution or None
            The LCP's solution (None without an active contact).
        """
        import nsopt

        x, u = self._xu(x, u)
        if self.F.shape[0] == 0:
            return self.A @ x + self.B @ u + self.d, np.zeros(0), None
        sol = nsopt.solve(self.lcp(x, u), method=method, **options)
        lam = sol.z
        return self.A @ x + self.B @ u + self.D @ lam + self.d, lam, sol

    def to_modeling(self, x0, u=None):
        r"""The LCS as ``nsopt.modeling`` pieces for a fixed input u: ``(system, interaction, integrator, h)``.

        ``EulerMoreauOSI(theta=0)`` (γ = 1) takes :math:`x_{k+1} = x_k + h f(x_k) + h r_{k+1}` and
        :math:`y_{k+1} = C x_{k+1} + D_r\lambda + e`. With :math:`f(x) = ((A - I)x + Bu + d)/h` and
        :math:`r = (D/h)\lambda`, the first is the LCS's :math:`x^+`; writing its
        :math:`w = Ex + F\lambda + Hu + c` through :math:`x = A^{-1}(x^+ - Bu - d - D\lambda)` gives
        :math:`C = EA^{-1}`, :math:`D_r = F - EA^{-1}D`, :math:`e = c + Hu - EA^{-1}(Bu + d)`. One
        simulation step of length h is then exactly :meth:`step` (A must be invertible).

        Parameters
        ----------
        x0 : (nx,) array_like
            The initial state of the system.
        u : (nu,) array_like, optional
            The fixed input (zeros when None).

        Returns
        -------
        system : nsopt.modeling.FirstOrderLinearTIDS
        interaction : nsopt.modeling.Interaction or None
            None without an active contact.
        integrator : nsopt.modeling.EulerMoreauOSI
        h : float
            The step to simulate with.

        Raises
        ------
        ProblemError
            When A is singular, or x0 or u has the wrong shape.

        Examples
        --------
        >>> import numpy as np
        >>> from nsopt import modeling as nm
        >>> from nsopt.symbolic import LCS
        >>> S = LCS(A=np.eye(1), B=np.zeros((1, 0)), D=np.eye(1), d=np.zeros(1), E=np.eye(1),
        ...         F=np.eye(1), H=np.zeros((1, 0)), c=np.zeros(1))
        >>> ds, inter, osi, h = S.to_modeling([-1.0])
        >>> nsds = nm.NonSmoothDynamicalSystem(0.0, h)
        >>> _ = nsds.link(inter, ds)
        >>> traj = nm.TimeStepping(nsds, h, osi, osns="lcp", method="lemke").run()
        >>> traj.x(ds)[-1], S.step([-1.0])[0]          # one simulation step is one LCS step
        (array([0.]), array([0.]))
        """
        from .. import modeling as nm

        x0, u = self._xu(x0, u)
        h, n = self.h, self.A.shape[0]
        b = self.B @ u + self.d
        try:
            EAi = np.linalg.solve(self.A.T, self.E.T).T
        except np.linalg.LinAlgError:
            raise ProblemError("A", "is singular: the LCS cannot be written as a first-order system with an "
                               "output at the new state", "LCS") from None
        ds = nm.FirstOrderLinearTIDS(x0=x0, A=(self.A - np.eye(n)) / h, b=b / h)
        m = self.F.shape[0]
        rel = nm.FirstOrderLinearTIR(C=EAi, B=self.D / h, D=self.F - EAi @ self.D,
                                     e=self.c + self.H @ u - EAi @ b) if m else None
        inter = nm.Interaction(nm.ComplementarityConditionNSL(m), rel) if m else None
        return ds, inter, nm.EulerMoreauOSI(theta=0.0), h


def lcs(system, gaps, op_point, h, *, theta=0.5, e=0.0, gamma=0.5, inputs=None, model=None) -> LCS:
    r"""Linearize a SymPy Lagrangian system with unilateral contacts into an :class:`LCS` about an operating point.

    The system is :math:`M(q)\dot v = F(q, v, u) + G(q)^\top\lambda`, gaps :math:`g(q) \ge 0`, and
    the map is one step of Moreau–Jean's scheme (:meth:`ContactModel.step`, as the modeling layer
    integrates it). Its first-order expansion about the step from the operating point
    :math:`(q^*, v^*, u^*) \mapsto (q_1^*, v_1^*, P^*)`, with the index set fixed to the contacts
    active there, eliminating :math:`q_1 = q + h((1-\theta)v + \theta v_1)` and writing
    :math:`\Phi(v_1; q, v, u, P) = 0` for the momentum balance, is

    .. math::
        \delta v_1 = -\Phi_{v_1}^{-1}(\Phi_q\delta q + \Phi_v\delta v + \Phi_u\delta u + \Phi_P\delta P),\quad
        \delta q_1 = \delta q + h(1-\theta)\delta v + h\theta\,\delta v_1,

    and :math:`w = G_A(q_1)v_1 + e\,G_A(q)v` expanded the same way gives E, F, H; d and c make the
    LCS reproduce the nonlinear step exactly at the operating point.

    Parameters
    ----------
    system : KanesMethod, LagrangesMethod or nsopt.modeling.LagrangianDS
        A KanesMethod (with q' = u) or LagrangesMethod with its equations formed; or an
        ``nsopt.modeling`` LagrangianDS (see :meth:`ContactModel.from_modeling`).
    gaps : list
        SymPy expressions of the coordinates (and parameters), >= 0 when apart; for a modeling
        system, its Interactions.
    op_point : dict or list of dicts
        Numbers for q, the speeds, the parameters and the inputs; for a modeling system
        ``{"q": ..., "v": ...}`` (default: its current state).
    h : float
        The step.
    theta : float, default 0.5
        The θ of the scheme.
    e : float, default 0
        Newton's restitution coefficient.
    gamma : float, default 0.5
        The γ of the activation rule.
    inputs : list, optional
        The input functions u (default: the other functions of time, sorted).
    model : ContactModel, optional
        A compiled model to reuse (linearizing about several points compiles once).

    Returns
    -------
    LCS
        The matrices, the index set ``active`` they hold for, and the names of x and u.

    Raises
    ------
    ProblemError
        Equations not formed, kinematic equations other than q' = u, dependent coordinates or
        constraints, or an operating point that misses a value (the message names it).

    See Also
    --------
    nsopt.symbolic.linearize : the linearization without contacts.

    Examples
    --------
    A point mass falling at 1 m/s onto the ground (gap q), over one step of 10 ms:

    >>> import sympy as sm, sympy.physics.mechanics as me
    >>> from nsopt import symbolic
    >>> q = me.dynamicsymbols("q"); m, g = sm.symbols("m g")
    >>> N = me.ReferenceFrame("N"); O = me.Point("O"); O.set_vel(N, 0)
    >>> P = O.locatenew("P", q * N.y); P.set_vel(N, q.diff() * N.y)
    >>> LM = me.LagrangesMethod(me.Lagrangian(N, me.Particle("p", P, m)), [q],
    ...                         forcelist=[(P, -m * g * N.y)], frame=N)
    >>> _ = LM.form_lagranges_equations()
    >>> S = symbolic.lcs(LM, [q], {q: 0.0, q.diff(): -1.0, m: 1.0, g: 9.81}, h=0.01)
    >>> S.A, S.F, S.active
    (array([[1.  , 0.01],
           [0.  , 1.  ]]), array([[1.]]), array([0]))
    >>> x1, lam, sol = S.step([0.0, -1.0])      # the impulse stops the mass (e = 0)
    >>> x1.round(6), lam.round(6)
    (array([-0.005,  0.   ]), array([1.0981]))
    """
    if not isinstance(system, (me.KanesMethod, me.LagrangesMethod)) and hasattr(system, "mass"):
        # an nsopt.modeling LagrangianDS; gaps: its interactions; op_point: {"q": ..., "v": ...} or None
        model = model or ContactModel.from_modeling(system, gaps)
        op = dict(op_point or {})
        q = np.asarray(op.get("q", system.q), dtype=float)
        v = np.asarray(op.get("v", system.v), dtype=float)
        u = np.zeros(0)
        if q.shape != (model.n,) or v.shape != (model.n,):
            raise ProblemError("op_point", f"q and v must have shape ({model.n},)", "lcs")
    else:
        op = _merge_op(op_point)
        model = model or ContactModel(system, gaps, {k: x for k, x in op.items() if k.free_symbols != {_t}},
                                      inputs)
        try:
            q = np.array([to_float(op[x], x) for x in model.q_names])
            v = np.array([to_float(op[x], x) for x in model.v_names])
            u = np.array([to_float(op[x], x) for x in model.u_names])
        except KeyError as err:
            raise ProblemError("op_point", f"no value for {err.args[0]}", "lcs") from None
    n, th = model.n, theta
    q1, v1, P, A = model.step(q, v, u, h, theta=th, e=e, gamma=gamma)
    I = np.eye(n)
    M1, Mwq = model.M(q1), model.Mw_q(q1, v1 - v)
    G1 = model.G(q1)[A]
    GtPq = model.GtP_q(q1, _scatter(P, A, model.m)) if len(A) else np.zeros((n, n))
    Fq0, Fv0, Fu0 = model.F_q(q, v, u), model.F_v(q, v, u), model.F_u(q, v, u)
    Fq1, Fv1, Fu1 = model.F_q(q1, v1, u), model.F_v(q1, v1, u), model.F_u(q1, v1, u)
    K = Mwq - GtPq  # d/dq1 of M(q1)(v1 - v) - G(q1)^T P
    Phi_v1 = M1 + h * th * K - h * th * Fv1 - (h * th) ** 2 * Fq1
    Phi_q = K - h * (1 - th) * Fq0 - h * th * Fq1
    Phi_v = h * (1 - th) * K - M1 - h * (1 - th) * Fv0 - (h * th) * h * (1 - th) * Fq1
    Phi_u = -h * (1 - th) * Fu0 - h * th * Fu1
    Phi_P = -G1.T
    S = -np.linalg.solve(Phi_v1, np.hstack([Phi_q, Phi_v, Phi_u, Phi_P]))
    Vq, Vv, Vu, VP = np.split(S, np.cumsum([n, n, model.nu]), axis=1)
    lift = np.vstack([h * th * I, I])                       # d[q1; v1] / d v1
    Ax = np.block([[I, h * (1 - th) * I], [np.zeros((n, 2 * n))]]) + lift @ np.hstack([Vq, Vv])
    Bx, Dx = lift @ Vu, lift @ VP
    x0, x1 = np.concatenate([q, v]), np.concatenate([q1, v1])
    d = x1 - Ax @ x0 - Bx @ u - Dx @ P
    if len(A):
        Gq, Gv = model.G(q)[A], model.G(q)
        w_v1 = G1 + h * th * model.Gw_q(q1, v1)[A]
        w_q = model.Gw_q(q1, v1)[A] + e * model.Gw_q(q, v)[A]
        w_v = h * (1 - th) * model.Gw_q(q1, v1)[A] + e * Gq
        E = w_v1 @ np.hstack([Vq, Vv]) + np.hstack([w_q, w_v])
        F, H = w_v1 @ VP, w_v1 @ Vu
        w_star = G1 @ v1 + e * (Gv @ v)[A]
        c = w_star - E @ x0 - F @ P - H @ u
    else:
        E, F, H, c = (np.zeros((0, 2 * n)), np.zeros((0, 0)), np.zeros((0, model.nu)), np.zeros(0))
    return LCS(Ax, Bx, Dx, d, E, F, H, c, h=h, active=A, x_names=model.q_names + model.v_names,
               u_names=model.u_names)


def _scatter(P, A, m):
    out = np.zeros(m)
    out[A] = P
    return out
