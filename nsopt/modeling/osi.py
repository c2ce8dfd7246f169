r"""One-step integrators: :class:`MoreauJeanOSI` (Lagrangian systems, impulse–velocity level) and
:class:`EulerMoreauOSI` (first-order systems), the schemes of Siconos' kernel.

An integrator is a configuration (θ, γ, ...). A :class:`~nsopt.modeling.TimeStepping` starts it
(:meth:`MoreauJeanOSI.start`): the *stepper* it returns owns the run's state, indexed by position,
computes each step (the free state, the one-step nonsmooth (OSNS) problem of the active
interactions as an :class:`Assembly` that the simulation solves, the update) and hands the new state
to the simulation, which commits it. Moreau–Jean's step is :mod:`nsopt.modeling._stepper`; the
derivation of what is assembled is in ``formulations/time_stepping.md``.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ModelingError, StepFailed
from . import _state
from ._check import label, scalar, vector
from ._kernels import STATE_LIMIT as _LIMIT
from ._stepper import SPARSE_DOFS, Assembly, MoreauJeanStepper, StepRecord, factor_iteration_matrix

#: The activation rules of :class:`MoreauJeanOSI` (``activation=``); None: "lookahead" for the unilateral
#: contacts of rigid bodies, "siconos" for the others.
ACTIVATION_RULES = (None, "siconos", "lookahead")

__all__ = ["ACTIVATION_RULES", "SPARSE_DOFS", "Assembly", "EulerMoreauOSI", "MoreauJeanOSI", "OneStepIntegrator", "StepRecord"]


class OneStepIntegrator:
    """Base class: ``theta`` and the order of the systems it integrates. :meth:`start` returns the
    stepper of one simulation (the integrator object itself keeps no run state: two simulations may
    share it).

    Parameters
    ----------
    theta : float, default 0.5
        The θ of the scheme, in [0, 1].
    name : str, optional
        A name for messages and reports.
    """

    order = 0

    def __init__(self, theta=0.5, *, name=None):
        self.name = name
        self.theta = scalar(theta, label(self), "theta", low=0.0, high=1.0)

    def __repr__(self):
        return f"{label(self)}(theta={self.theta})"


# ============================================================================ Moreau–Jean
class MoreauJeanOSI(OneStepIntegrator):
    r"""Moreau–Jean's time-stepping scheme for Lagrangian systems (Siconos ``MoreauJeanOSI``).

    On :math:`[t_k, t_{k+1}]`, with the iteration matrix :math:`\hat M = M + h\theta C + h^2\theta^2 K`,

    .. math::
        \hat M (v_{k+1} - v_{free}) = p_{k+1} = G_0^\top \lambda_{k+1},\qquad
        q_{k+1} = q_k + h[(1-\theta) v_k + \theta v_{k+1}],

    and, for each active interaction, the velocity-level law between
    :math:`\dot y_{k+1} = G_0 v_{k+1} (+\partial_t h)` and the impulse :math:`\lambda_{k+1}` (Newton's
    impact law: :math:`0 \le \dot y_{k+1} + e\dot y_k \perp \lambda_{k+1} \ge 0`). An interaction
    is active when its predicted gap :math:`y_k + \gamma h \dot y_k \le` ``activation_threshold``
    (γ = 1/2), Siconos 4.4's ``MoreauJeanOSI::addInteractionInIndexSet`` (``activation="siconos"``).

    Rigid bodies (:class:`~nsopt.modeling.NewtonEulerDS`) move by :math:`Δ = h(1-\theta)v_k + h\theta v_{k+1}`:
    the position by :math:`Δ_{0:3}`, the quaternion by the exponential map of the rotation vector
    :math:`φ = Δ_{3:6}` (body frame), :math:`\mathbf q_{k+1} = \mathbf q_k \otimes (\cos\frac{|φ|}2,
    \sin\frac{|φ|}2\frac{φ}{|φ|})` (Siconos 4.4's ``updatePosition``), and by default their unilateral contacts
    are kept exact (``formulations/time_stepping.md`` §4, "Rigid contact that stays exact"):

    - *the look-ahead rule* (``activation="lookahead"``): a contact is active when the gap at the end of the step
      without its impulse closes, :math:`y_k + \gamma h[(1-\theta)\dot y_k + \theta\dot y_{free}] \le`
      ``activation_threshold`` with :math:`\dot y_{free} = G_0(q_k)v_{free}` (γ = 1; minus
      :math:`|G_0||v_{free} - v_k|` on plastic contacts, for stacks, which also look over the next step's stop),
      and a contact the step leaves out but puts
      into penetration joins the index set and the step is solved again. Siconos' rule looks half a step ahead
      with the current velocity: a body arriving fast passes through the surface in the step it misses, and at
      a gap of exactly 0 its decision follows the sign of round-off;
    - *the gap term*: a contact without restitution has the law :math:`0 \le \dot y_{k+1} + b \perp \lambda \ge 0`,
      :math:`b = [y_k + h(1-\theta)\dot y_k]^+/h`: the step brings an arriving contact to the speed from which
      the next step's stop ends on the surface (it neither hovers nor sinks; :math:`b = 0` at rest: Newton's
      law). Siconos' rule leaves a body stopped at normal speed :math:`|\dot y|` up to :math:`h|\dot y|` deep;
    - *the rows at* :math:`q_k`: the look-ahead contacts' Jacobians are taken where the contact was found, not at
      the Newton iterate :math:`q_k + hv_k` (where a rolling body's material contact point has turned behind
      the contact: a driving torque);
    - *the position projection* (Siconos' ``MoreauJeanDirectProjectionOSI``): when a unilateral contact's gap
      :math:`y_n(q_{k+1})` is below ``-projection_tol``, with :math:`H_n` the normal rows of the contacts' twist
      Jacobians at :math:`q_{k+1}` (the step's and the penetrating ones) and :math:`M = \mathrm{diag}(mI_3, I)`,

      .. math::
          \Delta = \arg\min \tfrac12 \Delta^\top M \Delta \ \text{s.t.}\ y_n + H_n\Delta \ge 0,\qquad
          q_{k+1} \leftarrow q_{k+1} + T(q_{k+1})\,\Delta \ \text{(normalised)},

      (its LCP on an active set of rows, by :func:`nsopt.solve`), repeated with the gaps re-evaluated until none
      is below ``-projection_tol`` (at most ``projection_max_iter`` times). The velocities are not changed.

    ``activation="siconos", projection=False`` is Siconos' ``MoreauJeanOSI`` on rigid bodies too. Joints (equality
    relations) are left to the velocity level; Lagrangian systems keep Siconos' rule and are not projected.

    Parameters
    ----------
    theta : float, default 0.5
        The θ of the scheme, in [0, 1] (1/2: second order in free flight, energy-conserving for a
        linear spring; 1: backward Euler).
    gamma : float, optional
        The γ of the activation rule, in [0, 1]: the fraction of the step it looks ahead (None: 1/2 for Siconos'
        rule, as Siconos; 1 for the look-ahead rule).
    activation : {None, "lookahead", "siconos"}, default None
        The activation rule of the unilateral interactions: "siconos" (:math:`y_k + \gamma h\dot y_k`),
        "lookahead" (with the gap term and the rows at :math:`q_k`, above); None: "lookahead" for the contacts
        whose systems are all :class:`~nsopt.modeling.NewtonEulerDS`, "siconos" for the others (every Lagrangian
        step is Siconos').
    activation_threshold : float, default 0
        An interaction enters the index set when its predicted gap is at most this.
    projection : {None, True, False}, default None
        The position projection of rigid-body contacts (Siconos ``MoreauJeanDirectProjectionOSI``).
        None: on for the unilateral contacts between :class:`~nsopt.modeling.NewtonEulerDS` bodies (and
        the world), never for Lagrangian systems, whose steps are exactly Siconos' ``MoreauJeanOSI`` ones;
        False: off (the gap term alone: a plastic impact ends on the surface to the linearisation's error; with
        Siconos' rule a body stopped at normal speed :math:`|\dot y|` stays up to :math:`h|\dot y|` deep); True: on,
        and a :class:`~nsopt.exceptions.ModelingError` when a unilateral interaction joins a system that is not a
        NewtonEulerDS.
    projection_tol : float, default 1e-8
        The penetration tolerated after a step (in the model's length unit): the projection runs when a
        gap is below ``-projection_tol``, and iterates until none is.
    projection_max_iter : int, default 5
        At most this many projections per step; the gaps left are in the stepper's ``projection_info``.
    projection_activation : float, default 1e-7
        With the projection on, Siconos' activation rule in a model with rigid bodies reads
        :math:`y_k + \gamma h\dot y_k \le` ``activation_threshold + projection_activation``: a projected
        contact ends at y = 0 up to the linearisation's and the contact detection's errors (~1e-8) and must
        stay in the index set. Siconos' ``MoreauJeanDirectProjectionOSI`` activation threshold
        (``SICONOS_MPC_DEFAULT_ACTIVATION_POS_THRESHOLD``).
    batch : bool, default True
        Evaluate the systems and relations group-wise, with the compiled and block forms where they
        apply; False: every system and relation one by one, none of the grouped forms (the reference
        the grouped step is tested against). The step is the same (:mod:`nsopt.modeling._stepper`).
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When ``theta`` or ``gamma`` is outside [0, 1], a value is not a finite number, ``activation`` or
        ``projection`` is not one of its values, or ``projection=True`` meets a unilateral interaction on a
        non-rigid system.

    See Also
    --------
    TimeStepping : the simulation that runs it; ``formulations/time_stepping.md`` the derivation.

    Examples
    --------
    >>> from nsopt import modeling as nm
    >>> osi = nm.MoreauJeanOSI(theta=0.5)
    >>> osi
    MoreauJeanOSI(theta=0.5)
    >>> osi.gamma, osi.lookahead_gamma, osi.activation, osi.activation_threshold, osi.projection, osi.projection_tol
    (0.5, 1.0, None, 0.0, None, 1e-08)
    >>> nm.MoreauJeanOSI(theta=1.5)
    Traceback (most recent call last):
    ...
    nsopt.exceptions.ModelingError: ...theta...
    """

    order = 2

    def __init__(self, theta=0.5, gamma=None, *, activation=None, activation_threshold=0.0, projection=None,
                 projection_tol=1e-8, projection_max_iter=5, projection_activation=1e-7, batch=True, name=None):
        super().__init__(theta, name=name)
        self.batch = bool(batch)
        if not (activation is None or (isinstance(activation, str) and activation in ACTIVATION_RULES)):
            raise ModelingError(label(self), "activation", f"must be one of {ACTIVATION_RULES}, got {activation!r}")
        self.activation = activation
        if projection not in (None, True, False):
            raise ModelingError(label(self), "projection", f"must be None, True or False, got {projection!r}")
        self.projection = projection
        self.projection_tol = scalar(projection_tol, label(self), "projection_tol", low=0.0)
        if not isinstance(projection_max_iter, (int, np.integer)) or isinstance(projection_max_iter, bool) \
                or projection_max_iter < 1:
            raise ModelingError(label(self), "projection_max_iter", f"must be an integer >= 1, got {projection_max_iter!r}")
        self.projection_max_iter = int(projection_max_iter)
        self.projection_activation = scalar(projection_activation, label(self), "projection_activation", low=0.0)
        self.gamma_given = None if gamma is None else scalar(gamma, label(self), "gamma", low=0.0, high=1.0)
        self.activation_threshold = scalar(activation_threshold, label(self), "activation_threshold")

    @property
    def gamma(self) -> float:
        r"""The γ of Siconos' rule :math:`y_k + \gamma h\dot y_k`: the one given, else 1/2."""
        return 0.5 if self.gamma_given is None else self.gamma_given

    @property
    def lookahead_gamma(self) -> float:
        r"""The γ of the look-ahead rule :math:`y_k + \gamma h[(1-\theta)\dot y_k + \theta\dot y_{free}]`: the
        one given, else 1 (the whole step)."""
        return 1.0 if self.gamma_given is None else self.gamma_given

    def start(self, sim, prev=None, source=None) -> MoreauJeanStepper:
        """The stepper of ``sim``: from the systems' initial conditions, from ``source`` (a stepper whose
        run this one continues), or after a topology change from ``prev`` (the stepper it replaces)."""
        return MoreauJeanStepper(self, sim, prev=prev, source=source)


# ============================================================================ Euler–Moreau
class EulerMoreauOSI(OneStepIntegrator):
    r"""Euler–Moreau's θ-γ scheme for first-order systems (Siconos ``EulerMoreauOSI``).

    .. math::
        x_{k+1} = x_k + h[\theta f(t_{k+1}, x_{k+1}) + (1-\theta) f(t_k, x_k)]
                  + h[\gamma r_{k+1} + (1-\gamma) r_k],\qquad
        y_{k+1} = h(x_{k+1}, \lambda_{k+1}),\quad r_{k+1} = g(x_{k+1}, \lambda_{k+1}),

    with the law between :math:`y_{k+1}` and :math:`\lambda_{k+1}`. For linear systems and relations
    the OSNS matrix is :math:`D + h\gamma C W^{-1} B` with :math:`W = I - h\theta A`, and
    :math:`q = C x_{free} + F z + e`; nonlinear ones are linearised in a Newton loop.
    ``gamma=None`` means γ = 1 (r fully implicit), as Siconos does without ``useGamma``.
    Every interaction is always active (index set 0).

    Parameters
    ----------
    theta : float, default 0.5
        The θ of the scheme for the vector field f, in [0, 1].
    gamma : float, optional
        The γ of the input r, in [0, 1]; None: 1 (fully implicit).
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When ``theta`` or ``gamma`` is outside [0, 1].

    Examples
    --------
    >>> from nsopt import modeling as nm
    >>> nm.EulerMoreauOSI(theta=1.0)
    EulerMoreauOSI(theta=1.0)
    """

    order = 1

    def __init__(self, theta=0.5, gamma=None, *, name=None):
        super().__init__(theta, name=name)
        self.gamma = None if gamma is None else scalar(gamma, label(self), "gamma", low=0.0, high=1.0)

    def start(self, sim, prev=None, source=None) -> EulerMoreauStepper:
        """The stepper of ``sim`` (see :meth:`MoreauJeanOSI.start`)."""
        return EulerMoreauStepper(self, sim, prev=prev, source=source)


class EulerMoreauStepper:
    """The run of an :class:`EulerMoreauOSI` in one simulation: the state (x, r of the systems; y, λ
    of the interactions: one array ``buf`` laid out as the trajectory records it) owned here, indexed
    by position; the step computed into ``pending`` and committed by the simulation."""

    def __init__(self, osi, sim, prev=None, source=None):
        nsds = sim.nsds
        self.osi, self.sim, self.h = osi, sim, sim.h
        self.version = nsds._version
        self.systems = tuple(nsds.dynamical_systems)
        self.inters = list(nsds.interactions)
        sizes = [ds.n for ds in self.systems]
        self.off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
        self.nv = int(self.off[-1])
        self.offsets = list(zip(self.off[:-1].tolist(), self.off[1:].tolist()))
        index = {id(ds): k for k, ds in enumerate(self.systems)}
        rng = [np.arange(a, b) for a, b in self.offsets]
        self.cols = []
        for inter in self.inters:
            ix = [index[id(d)] for d in inter.systems]
            self.cols.append(rng[ix[0]] if len(ix) == 1 else np.concatenate([rng[ix[0]], rng[ix[1]]]))
        m = [i.size for i in self.inters]
        self.first = np.concatenate([[0], np.cumsum(m)]).astype(np.intp)
        self.mtot = int(self.first[-1])
        self.bounds = list(zip(self.first[:-1].tolist(), self.first[1:].tolist()))
        self._lin_ds = [ds.linear and ds.constant_jacobian for ds in self.systems]
        self.nonlinear = any(not c for c in self._lin_ds) or any(not i.relation.linear for i in self.inters)
        self._const = all(self._lin_ds) and all(i.relation.constant for i in self.inters)
        self.factors = [None] * len(self.systems)
        self._cache = None
        self.alive = np.ones(len(self.inters), dtype=bool)
        # the state: x, r, y0, y1, λ0, λ1 (from ``src`` by identity, else the initial conditions)
        src = prev if prev is not None else source
        nv, mt = self.nv, self.mtot
        buf = np.zeros(2 * nv + 4 * mt)
        sidx = {id(ds): k for k, ds in enumerate(src.systems)} if src is not None else {}
        for k, ds in enumerate(self.systems):
            a, b = self.offsets[k]
            j = sidx.get(id(ds))
            if j is None:
                buf[a:b] = ds.x0
            else:
                c, d = src.offsets[j]
                buf[a:b], buf[nv + a:nv + b] = src.buf[c:d], src.buf[src.nv + c:src.nv + d]
        self.buf = buf
        iidx = {id(i): j for j, i in enumerate(src.inters)} if src is not None else {}
        for j, inter in enumerate(self.inters):
            lo, hi = self.bounds[j]
            o = iidx.get(id(inter))
            if o is not None:
                slo, shi = src.bounds[o]
                for f in range(4):
                    buf[2 * nv + f * mt + lo:2 * nv + f * mt + hi] = src.buf[2 * src.nv + f * src.mtot + slo:
                                                                            2 * src.nv + f * src.mtot + shi]
            else:
                X, Z = self._concat(buf[:nv], j), self._Z(inter)
                buf[2 * nv + lo:2 * nv + hi] = inter.relation.output(X, sim.t, np.zeros(hi - lo), Z)
        self.warm = self.part(4).copy()
        self.pending = None
        self.count = sim.k
        self.last = None
        self._sys_at = None

    def part(self, f, buf=None):
        """Field f of the stacked row: 0 x, 1 r, 2 y0, 3 y1, 4 λ0, 5 λ1."""
        buf = self.buf if buf is None else buf
        nv, m = self.nv, self.mtot
        a = (0, nv, 2 * nv, 2 * nv + m, 2 * nv + 2 * m, 2 * nv + 3 * m, 2 * nv + 4 * m)
        return buf[a[f]:a[f + 1]]

    def _concat(self, x, j):
        return x[self.cols[j]]

    def _Z(self, inter):
        dss = inter.systems
        if len(dss) == 1:
            return dss[0].z
        a, b = dss[0].z, dss[1].z
        return np.zeros(0) if a.shape[0] == 0 and b.shape[0] == 0 else np.concatenate([a, b])

    def minv(self, X):
        out = np.empty_like(X)
        for f, (a, b) in zip(self.factors, self.offsets):
            out[a:b] = f.solve(X[a:b])
        return out

    # ---- the run's state (sim.state_of)
    def index_of(self, obj):
        """(position, state fields) of a system or an interaction of this run, or None."""
        if self._sys_at is None:
            self._sys_at = ({id(ds): k for k, ds in enumerate(self.systems)},
                            {id(i): j for j, i in enumerate(self.inters)})
        k = self._sys_at[0].get(id(obj))
        if k is not None and self.systems[k] is obj:
            return k, _state.FIELDS[1]
        j = self._sys_at[1].get(id(obj))
        if j is not None and self.inters[j] is obj:
            return j, _state.FIELDS["interaction"]
        return None

    def read(self, k, name):
        if name in ("x", "r"):
            a, b = self.offsets[k]
            arr = self.part(0 if name == "x" else 1)[a:b]
        elif name in ("y", "lambda_"):
            lo, hi = self.bounds[k]
            f = 2 if name == "y" else 4
            y0, y1 = self.part(f)[lo:hi], self.part(f + 1)[lo:hi]
            y0.flags.writeable = y1.flags.writeable = False
            return [y0, y1]
        else:
            raise AttributeError(name)
        arr.flags.writeable = False
        return arr

    def write(self, k, name, value):
        buf = self.buf.copy()
        if name in ("x", "r"):
            a, b = self.offsets[k]
            self.part(0 if name == "x" else 1, buf)[a:b] = vector(value, label(self.systems[k]), name, b - a)
        elif name in ("y", "lambda_"):
            lo, hi = self.bounds[k]
            f = 2 if name == "y" else 4
            parts = list(value)
            if len(parts) != 2:
                raise ModelingError(label(self.inters[k]), name, f"expected [level 0, level 1], got {len(parts)} entries")
            for g, part in zip((f, f + 1), parts):
                self.part(g, buf)[lo:hi] = vector(part, label(self.inters[k]), name, hi - lo)
        else:
            raise AttributeError(name)
        self.buf = buf

    def release(self):
        """Write the run's state onto the objects (plain copies: :mod:`nsopt.modeling._state`)."""
        for k, ds in enumerate(self.systems):
            for f in ("x", "r"):
                getattr(type(ds), f).keep(ds, self.read(k, f).copy())
        for j, inter in enumerate(self.inters):
            lo, hi = self.bounds[j]
            type(inter).y.keep(inter, [self.part(2)[lo:hi].copy(), self.part(3)[lo:hi].copy()])
            type(inter).lambda_.keep(inter, [self.part(4)[lo:hi].copy(), self.part(5)[lo:hi].copy()])

    def park_all(self):
        """Before a rebuild: hand the removed interactions their state."""
        live = {id(i) for i in self.sim.nsds.interactions}
        for j, inter in enumerate(self.inters):
            if id(inter) not in live:
                lo, hi = self.bounds[j]
                type(inter).y.keep(inter, [self.part(2)[lo:hi].copy(), self.part(3)[lo:hi].copy()])
                type(inter).lambda_.keep(inter, [self.part(4)[lo:hi].copy(), self.part(5)[lo:hi].copy()])

    def follow(self, changes, outputs=True) -> bool:
        return False

    def row_layout(self):
        return ({"x": self.nv, "r": self.nv}, list(self.systems),
                (list(self.inters), self.first[:-1], self.first[1:], self.mtot))

    def columns(self):
        return [((a, b), (a, b)) for a, b in self.offsets]

    fused_phases = False          # no compiled free flight

    def free_flight(self, sim, nmax, rec, j0) -> int:
        return 0

    def commit(self, k):
        self.buf, self.warm = self.pending
        self.count = k
        self.pending = None

    # ---- one step
    def step(self, sim):
        """One θ-γ step (the class docstring of :class:`EulerMoreauOSI`); the new state pending."""
        osi = self.osi
        h, th = self.h, osi.theta
        gam = 1.0 if osi.gamma is None else osi.gamma
        t0, t1 = sim.t, sim.t + h
        systems, inters = self.systems, self.inters
        xk, rk = self.part(0).copy(), self.part(1).copy()
        fk = [ds.f(t0, xk[a:b]) for ds, (a, b) in zip(systems, self.offsets)]
        x = xk.copy()
        it, converged, res = 0, False, np.inf
        max_it = sim.newton_max_iter if self.nonlinear else 1
        lam_alpha = [self.part(4)[lo:hi].copy() for lo, hi in self.bounds]
        y0 = self.part(2).copy()
        L0 = np.zeros(self.mtot)
        r = rk
        while it < max_it:
            it += 1
            # Jacobians of the relations at the current iterate
            jac = []
            for j, inter in enumerate(inters):
                X, Z = x[self.cols[j]], self._Z(inter)
                C, D, Kg, B = inter.relation.jacobians(X, t1, lam_alpha[j], Z)
                jac.append((X, Z, C, D, Kg, B))
            reuse = self._const and self._cache is not None
            if not reuse:
                for k, ds in enumerate(systems):
                    a, b = self.offsets[k]
                    W = np.eye(ds.n) - h * th * ds.jacobian_f(t1, x[a:b])
                    for j, inter in enumerate(inters):
                        Kg = jac[j][4]
                        if Kg is None or not any(d is ds for d in inter.systems):
                            continue
                        c = self.cols[j]
                        sel = (c >= a) & (c < b)
                        W -= h * gam * Kg[np.ix_(sel, sel)]
                    self.factors[k] = factor_iteration_matrix(W, label(ds))
            # free state: x_free = x - W⁻¹[x - x_k - h(1-θ) f_k - hθ f(x) - h(1-γ) r_k]
            xfree = np.empty(self.nv)
            for k, ds in enumerate(systems):
                a, b = self.offsets[k]
                R = x[a:b] - xk[a:b] - h * (1 - th) * fk[k] - h * th * ds.f(t1, x[a:b])
                if osi.gamma is not None:
                    R = R - h * (1 - gam) * rk[a:b]
                xfree[a:b] = x[a:b] - self.factors[k].solve(R)
            # nonlinear relations: shift the free state by hγ W⁻¹ (g_α - B λ_α)
            xp = xfree
            if self.nonlinear:
                shift = np.zeros(self.nv)
                for j, inter in enumerate(inters):
                    X, Z, C, D, Kg, B = jac[j]
                    if inter.relation.linear:
                        continue
                    la = lam_alpha[j]
                    g = inter.relation.input(X, t1, la, Z)
                    np.add.at(shift, self.cols[j], g - B @ la)
                xp = xfree + h * gam * self.minv(shift)
            # assembly
            qs = []
            for j, inter in enumerate(inters):
                X, Z, C, D, Kg, B = jac[j]
                c = self.cols[j]
                if inter.relation.linear:
                    qs.append(C @ xp[c] + inter.relation.offset(t1, Z))
                else:
                    la = lam_alpha[j]
                    qs.append(inter.relation.output(X, t1, la, Z) + C @ (xp[c] - X) - D @ la)
            q = np.concatenate(qs) if qs else np.zeros(0)
            if reuse:
                asm = Assembly(key=self._cache, interactions=inters, q=q, W=None, constant=True, osi=self,
                               warm=self.warm)
            else:
                mtot = q.shape[0]
                Cg = np.zeros((mtot, self.nv))
                Bg = np.zeros((self.nv, mtot))
                Dg = np.zeros((mtot, mtot))
                for j, inter in enumerate(inters):
                    X, Z, C, D, Kg, B = jac[j]
                    c, (lo, hi) = self.cols[j], self.bounds[j]
                    Cg[lo:hi, c] = C
                    Bg[c, lo:hi] = B
                    Dg[lo:hi, lo:hi] = D
                W = Dg + h * gam * Cg @ self.minv(Bg)
                key = ("euler-moreau", id(self), tuple(id(i) for i in inters))
                if self._const:
                    self._cache = key
                asm = Assembly(key=key, interactions=inters, q=q, W=W, constant=self._const, osi=self, warm=self.warm)
            lam = sim.solve_assembly(asm) if inters else np.zeros(0)
            self.last = (np.arange(len(inters)), lam, xfree, None, None)
            # update: r = g_α + B(λ - λ_α) (= Bλ for linear relations), x = x_p + hγ W⁻¹ B λ
            rr = np.zeros(self.nv)
            dl = 0.0
            new_alpha = []
            for j, inter in enumerate(inters):
                X, Z, C, D, Kg, B = jac[j]
                lo, hi = self.bounds[j]
                lm = lam[lo:hi].copy()
                dl = max(dl, float(np.linalg.norm(lm - lam_alpha[j])) / (1.0 + float(np.linalg.norm(lm))))
                new_alpha.append(lm)
                L0[lo:hi] = lm
                np.add.at(rr, self.cols[j], B @ lm)
            xn = xp + h * gam * self.minv(rr) if inters else xp
            dx = 0.0
            for k in range(len(systems)):
                a, b = self.offsets[k]
                dx = max(dx, float(np.linalg.norm(xn[a:b] - x[a:b])) / (1.0 + float(np.linalg.norm(xn[a:b]))))
            x = xn
            for j, inter in enumerate(inters):
                lo, hi = self.bounds[j]
                y0[lo:hi] = inter.relation.output(x[self.cols[j]], t1, L0[lo:hi], self._Z(inter))
            r = np.zeros(self.nv)
            for j, inter in enumerate(inters):
                lo, hi = self.bounds[j]
                np.add.at(r, self.cols[j], inter.relation.input(x[self.cols[j]], t1, L0[lo:hi], self._Z(inter)))
            lam_alpha = new_alpha
            if not self.nonlinear:
                converged, res = True, 0.0
                break
            res = max(dx, dl)
            if res <= sim.newton_tol:
                converged = True
                break
        if not np.all(np.abs(x) <= _LIMIT):
            k = next(k for k, (a, b) in enumerate(self.offsets) if not np.all(np.abs(x[a:b]) <= _LIMIT))
            raise StepFailed(f"step {sim.k + 1} (t = {t1:.6g}): the state x of {label(systems[k])} is not finite or "
                             f"exploded (max |x| = {float(np.max(np.abs(x))):.3g}); the run stops at step {sim.k}",
                             step=sim.k + 1, time=t1, solution=sim._last[1] if sim._last else None)
        mt = self.mtot
        buf = np.concatenate([x, r, y0, self.part(3), L0, np.zeros(mt)])
        warm = L0.copy() if inters else self.warm
        self.pending = (buf, warm)
        return it, res, converged

    def iteration_matrix(self):
        import scipy.sparse as sp

        return sp.block_diag([sp.csr_matrix(f.matrix) for f in self.factors], format="csr")
