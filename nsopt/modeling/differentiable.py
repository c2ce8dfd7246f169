r"""Derivatives of a Moreau–Jean trajectory with respect to the model's parameters and initial state.

``TimeStepping(..., differentiable=True)`` keeps, for every step with contact, what the step emitted
(its :class:`~nsopt.modeling.StepRecord`: the index set, the rows, the one-step problem and its
impulses, v_free; a :class:`Tape`); the :class:`~nsopt.modeling.Trajectory` then
differentiates the whole run (``formulations/sensitivity.md``, "Through time stepping"):

- ``traj.gradient(loss, wrt)`` — reverse mode (an adjoint sweep over the recorded steps) of a loss
  ``loss(Q, V) -> (value, dQ, dV)`` of the recorded states (a final state, a sum of per-step terms);
- ``traj.vjp(dQ, dV, wrt)`` — the same sweep for given cotangents of the states;
- ``traj.jvp(direction)`` — forward mode: the tangents of every recorded state along a direction of
  the parameters (few parameters, every state);
- ``traj.jacobian(wrt)`` — the Jacobian of the final state (q_N, v_N) by forward mode;
- ``traj.derivative_report()`` — where the derivative is that of one branch only (see below).

Parameters (``wrt`` items; a name alone means one parameter shared by every system or interaction
that has it, i.e. all moved together; ``(name, obj)`` that of one system or interaction):
``"q0"``, ``"v0"`` (initial state), ``"fext"`` (a constant force added to the system's F_ext),
``("M", ds)`` (the mass matrix, an (n, n) gradient), ``"mass"`` (the scalar mass m of a system whose
M is proportional to it, m = M[0, 0]: it scales M only, not the weight m g, which is part of F_ext;
differentiate with respect to ``"fext"`` too for a change of mass that changes the weight), ``"e"`` (restitution: ``NewtonImpactNSL.e``,
``NewtonImpactFrictionNSL.en``), ``"et"`` (tangential restitution), ``"mu"`` (friction).

What is differentiated, step by step (at each step its own linearisation, the chain rule between):
:math:`\hat M = M + h\theta C + h^2\theta^2K`, :math:`v_{free} = v_k - \hat M^{-1}R`,
:math:`W = H\hat M^{-1}H^\top`, :math:`q = Hv_{free} + c\odot\dot y_k`, the impulses
:math:`\lambda(W, q, \mu)` by :func:`nsopt.sensitivity` (its ``jvp`` / ``vjp``: the implicit function
theorem on the step's problem), :math:`v_{k+1} = v_{free} + \hat M^{-1}H^\top\lambda`,
:math:`q_{k+1} = q_k + h[(1-\theta)v_k + \theta v_{k+1}]`, and the outputs
:math:`\dot y_{k+1} = G_0 v_{k+1}` that the next impact's restitution term uses. For a
``LagrangianScleronomousR`` the rows :math:`H = G_0(q_k + hv_k)` move with the state: their
derivative is taken by central differences of the ``G0`` plug-in (step ``FD_REL`` relative).

The **index set is held fixed**: the derivative is that of the piecewise-smooth branch the run took.
The activation of a contact (its predicted gap crossing the threshold) is a discontinuity of the
discrete trajectory that the derivative does not see; ``derivative_report()`` lists the steps whose
activation margin is small (``near_switches``), where a finite difference may jump. At an impact step
nothing special is done: Newton's law is in q (the restitution term), so the derivative with respect
to e and to the incoming velocity is exact for that branch. Steps whose solution has no strict
complementarity (a contact between stick and slip, a closed contact with zero force) are
differentiated by part 1's rule (``nsopt.sensitivity``: ``Sensitivity.rule``), or with the smoothed
laws (``smoothing=eps``, ``Sensitivity.smoothed``); they are listed as ``degenerate``.

Supported: Lagrangian systems with a constant iteration matrix (``LagrangianLinearTIDS``; a
``LagrangianDS`` with a constant M, no F_int or F_gyr), relations ``LagrangianLinearTIR`` (without D)
and ``LagrangianScleronomousR``, laws ``NewtonImpactNSL`` and ``NewtonImpactFrictionNSL``, problems
``lcp``, ``fc2d``, ``fc3d``. Nothing of a step is assembled again: the derivative reads each step's
:class:`~nsopt.modeling.StepRecord` (rows, problem, impulses, v_free, ẏ_k, M̂⁻¹ by the run's factors),
checks it against the model (q with the laws' restitution now, the new velocity) and raises
:class:`~nsopt.exceptions.ModelingError` naming the step where they differ. Every step's matrices are dense (m x m, m x ndof): models of up to a few hundred
degrees of freedom and contacts.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..exceptions import ModelingError
from ..sensitivity import sensitivity
from ._check import label
from .laws import NewtonImpactFrictionNSL, NewtonImpactNSL
from .osi import MoreauJeanOSI
from .relations import LagrangianLinearTIR, LagrangianScleronomousR
from .systems import LagrangianDS, LagrangianLinearTIDS

KINDS = ("lcp", "fc2d", "fc3d")
SYSTEM_PARAMS = ("q0", "v0", "fext", "M", "mass")
LAW_PARAMS = ("e", "et", "mu")
FD_REL = 1e-6          # relative step of the central differences of G0 (second derivatives of h)
CHECK_RTOL = 1e-7      # the replay must give the recorded problem and velocities to this (relative)
REUSE_RTOL = 1e-13     # a step whose W, q, mu and impulses equal the last one's to this reuses its sensitivity
MARGIN_RTOL = 1e-3     # an activation is "near a switch" when |y0 + γhẏ - thr| <= this * γh max|ẏ| (+ |thr|)


# ============================================================================ what can be differentiated
def check_model(sim):
    """Raise :class:`ModelingError` (naming the object and the feature) unless ``sim`` is one the
    derivative supports (module docstring)."""
    o = label(sim)
    if not isinstance(sim.integrator, MoreauJeanOSI):
        raise ModelingError(o, "differentiable", "needs Lagrangian systems integrated by MoreauJeanOSI, "
                                                 f"got {label(sim.integrator)}")
    if sim.osns_kind not in KINDS:
        raise ModelingError(o, "differentiable", f"differentiates {', '.join(KINDS)} steps, not osns="
                                                 f"{sim.osns_kind!r}")
    for ds in sim.nsds.dynamical_systems:
        check_system(ds)
    for inter in sim.nsds.interactions:
        check_interaction(inter)


def check_system(ds):
    o = label(ds)
    if not isinstance(ds, LagrangianDS):
        raise ModelingError(o, "differentiable", f"a {type(ds).__name__} is not differentiated (Lagrangian "
                                                 "systems with a constant iteration matrix only)")
    if getattr(ds, "qdim", ds.n) != ds.n:
        raise ModelingError(o, "differentiable", "positions of another size than the velocities are not differentiated")
    if not isinstance(ds, LagrangianLinearTIDS) and (not ds.constant_mass or ds.has_state_forces):
        raise ModelingError(o, "differentiable", "needs a constant mass matrix and no fint/fgyr "
                                                 "(LagrangianLinearTIDS, or LagrangianDS with a constant M)")


def check_interaction(inter):
    o = label(inter)
    rel, law = inter.relation, inter.nslaw
    if isinstance(rel, LagrangianLinearTIR):
        if rel.D is not None:
            raise ModelingError(o, "differentiable", "a LagrangianLinearTIR with D is not differentiated")
    elif not isinstance(rel, LagrangianScleronomousR):
        raise ModelingError(o, "differentiable", f"a {type(rel).__name__} is not differentiated "
                                                 "(LagrangianLinearTIR or LagrangianScleronomousR)")
    if not isinstance(law, (NewtonImpactNSL, NewtonImpactFrictionNSL)):
        raise ModelingError(o, "differentiable", f"a {type(law).__name__} is not differentiated "
                                                 "(NewtonImpactNSL or NewtonImpactFrictionNSL)")


# ============================================================================ the tape
@dataclass
class _Record:
    """What the adjoint reads of one step with contact, all of it from the run's
    :class:`~nsopt.modeling.StepRecord`: nothing of the step is assembled again."""

    active: list
    lam: np.ndarray
    problem: object
    solution: object
    H: object                    # the active rows G0 (m x ndof, dense or sparse) of the problem
    vfree: np.ndarray
    ydot: np.ndarray             # ẏ_k of the active rows (the restitution term's)


class Tape:
    """What ``TimeStepping(..., differentiable=True)`` keeps of each step with contact (the index
    set in row order, the impulses, the problem and its solution, its rows, v_free and the outputs
    the restitution read), filled by :meth:`record` from the step records; steps without a problem
    are free flight. ``minv``: M̂⁻¹ by the run's own factors (constant: the model is checked for it)."""

    def __init__(self, sim):
        check_model(sim)
        self.sim = sim
        self.records: dict[int, _Record] = {}
        self.minv = None
        self._replay = {}

    def record(self, rec):
        self._replay.clear()
        if rec._minv is not None:
            self.minv = rec._minv
        if rec.problem is None:
            self.records.pop(rec.k, None)
            return
        for inter in rec.active:          # interactions linked during the run
            check_interaction(inter)
        self.records[rec.k] = _Record(list(rec.active), np.array(rec.lam, dtype=float), rec.problem, rec.solution,
                                      rec.rows(), np.array(rec.vfree, dtype=float), np.array(rec.ydot, dtype=float))

    def replay(self, traj, smoothing=None) -> _Replay:
        key = (traj._k, smoothing)
        if key not in self._replay:
            self._replay = {key: _Replay(self, traj, smoothing)}
        return self._replay[key]


# ============================================================================ the model, stacked
class _Layout:
    """The systems stacked in the model's order: offsets, the constant operators K, C (block diagonal)
    that the derivative of v_free needs, M̂⁻¹ by the run's own factors (the step records'), and per
    interaction its columns and its rows G0 at a point (for their derivatives)."""

    def __init__(self, sim, minv):
        self.sim = sim
        self.h, self.theta = sim.h, sim.integrator.theta
        self.gamma, self.thr = sim.integrator.gamma, sim.integrator.activation_threshold
        self.systems = list(sim.nsds.dynamical_systems)
        sizes = [ds.n for ds in self.systems]
        self.off = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        self.n = int(self.off[-1])
        self.index = {id(ds): k for k, ds in enumerate(self.systems)}
        Ms, Ks, Cs = [], [], []
        for ds in self.systems:
            M = np.asarray(ds.mass(ds.q0), dtype=float)
            K = getattr(ds, "K", None)
            C = getattr(ds, "C", None)
            Ms.append(M)
            Ks.append(np.zeros_like(M) if K is None else np.asarray(K, float))
            Cs.append(np.zeros_like(M) if C is None else np.asarray(C, float))
        self.M = Ms
        self.K = sp.block_diag(Ks, format="csr")
        self.C = sp.block_diag(Cs, format="csr")
        self.has_K = any(np.any(k) for k in Ks)
        self.has_C = any(np.any(c) for c in Cs)
        self._minv = minv
        self._cols, self._Z = {}, {}

    def minv(self, x):
        """M̂⁻¹ x (x: (n,) or (n, k)) by the run's factors."""
        return self._minv(np.asarray(x, dtype=float))

    def dofs(self, ds) -> slice:
        k = self.index.get(id(ds))
        if k is None:
            raise ModelingError(label(ds), "ds", "is not a system of this simulation")
        return slice(int(self.off[k]), int(self.off[k + 1]))

    def cols(self, inter) -> np.ndarray:
        c = self._cols.get(id(inter))
        if c is None:
            c = np.concatenate([np.arange(self.dofs(ds).start, self.dofs(ds).stop) for ds in inter.systems])
            self._cols[id(inter)] = c
            self._Z[id(inter)] = np.concatenate([ds.z for ds in inter.systems])
        return c

    # ---- the rows of an interaction (local: m x n_i) at local positions P, and their derivatives
    def G(self, inter, P):
        rel = inter.relation
        if isinstance(rel, LagrangianLinearTIR):
            return np.asarray(rel.H, dtype=float)
        self.cols(inter)
        return np.asarray(rel.G0(P, None, None, self._Z[id(inter)]), dtype=float)

    def _G_many(self, inter, Ps):
        rel = inter.relation
        Z = self._Z[id(inter)]
        if rel.vectorized:
            return rel.G0_batch(Ps, np.repeat(Z[None, :], Ps.shape[0], axis=0))
        return np.array([rel.G0(P, None, None, Z) for P in Ps])

    def dG_tensor(self, inter, P):
        r"""T[a, b, l] = :math:`\partial G_0[a, b]/\partial P_l` at P by central differences of the
        plug-in (2 n evaluations, one call for a vectorized relation); None for a linear relation.
        The forward and the adjoint sweeps contract the same T, so they agree to round-off."""
        if isinstance(inter.relation, LagrangianLinearTIR):
            return None
        self.cols(inter)
        n = P.shape[0]
        s = FD_REL * max(1.0, float(np.max(np.abs(P))))
        E = s * np.eye(n)
        Gs = self._G_many(inter, np.vstack([P + E, P - E]))
        return np.moveaxis((Gs[:n] - Gs[n:]) / (2 * s), 0, -1)


def _law_rows(law):
    """(c, the rows that e moves, the rows that et moves) of a law's restitution term c ⊙ ẏ_k."""
    m = law.size
    if isinstance(law, NewtonImpactNSL):
        return np.full(m, law.e), np.ones(m), np.zeros(m)
    en, et = np.zeros(m), np.zeros(m)
    en[0], et[1:] = 1.0, 1.0
    return law.en * en + law.et * et, en, et


@dataclass
class _Step:
    """One step with contact, linearised: rows H (m x n), U = M̂⁻¹Hᵀ, the restitution data, the
    impulses and the sensitivity of the step's problem."""

    j: int                       # the step goes from recorded row j to row j + 1
    active: list
    rows: list                   # per active interaction, its slice of the problem's rows
    cols: list
    H: np.ndarray
    U: np.ndarray
    lam: np.ndarray
    c: np.ndarray
    e_rows: np.ndarray
    et_rows: np.ndarray
    ydot: np.ndarray             # ẏ_k of the active rows (the restitution term's)
    yfrom: list                  # per active interaction: True when its ẏ_k used the G0 of step j-1's iterate
    Gy: list                     # per active interaction: the G0 of ẏ_k
    Ta: list                     # per active interaction: ∂G0/∂q at the iterate (None: linear relation)
    Ty: list                     # per active interaction: ∂G0/∂q at the point of ẏ_k
    sens: object
    primal: str
    Wname: str
    mu_of: np.ndarray | None     # per active interaction, its contact index (friction) or -1
    index: set = field(default_factory=set)
    timing: list = field(default_factory=list)   # impacts: (M̂⁻¹Hᵢᵀλᵢ, its response to a, ∂τ/∂q_k, ∂τ/∂v_k)
    free_v: int = 0              # the dimension along which the velocities after the step move (0: unique)


class _Replay:
    """The run's linearisation from its step records: states, free velocities (the records'; a step
    without contact: its new velocity), the linearised steps (the records' rows, problems and
    impulses, with the derivatives of the rows); each record checked against the model's laws and
    the recorded velocities."""

    def __init__(self, tape, traj, smoothing):
        sim = tape.sim
        L = self.L = _Layout(sim, tape.minv if tape.minv is not None else sim._stepper.sys.minv)
        self.tape, self.traj, self.smoothing = tape, traj, smoothing
        N = self.N = traj._k
        if N < 1:
            raise ModelingError(label(sim), "trajectory", "has no step to differentiate: run the simulation first")
        self.Q = np.hstack([traj.q(ds) for ds in L.systems])
        self.V = np.hstack([traj.v(ds) for ds in L.systems])
        self.Vfree = self.V[1:].copy()                 # (N, n): v_{k+1} = v_free without an impulse
        self.Qa = self.Q[:-1] + L.h * self.V[:-1]      # the iterate of G0
        self.steps: list[_Step | None] = [None] * N
        self._last_sens = None
        prev = {}
        kind = sim.osns_kind
        for j in range(N):
            rec = tape.records.get(j + 1)
            if rec is None:
                prev = {}
                continue
            self.Vfree[j] = rec.vfree
            st, prev = self._linearise(j, rec, prev, kind)
            self.steps[j] = st
        self.t = traj.t

    def _mismatch(self, k, what, err, scale):
        raise ModelingError(label(self.tape.sim), "differentiable",
                            f"the replay of step {k} does not give {what} the run recorded (difference {err:.3g}, "
                            f"scale {scale:.3g}): the model uses something the derivative does not follow")

    def _linearise(self, j, rec, prev, kind):
        """Step j's linearisation from its record ``rec``; ``prev``: the rows of the last step's
        active interactions (id -> G0 block). Returns (the :class:`_Step`, this step's rows by id)."""
        L = self.L
        n, active = L.n, rec.active
        H = rec.H.toarray() if sp.issparse(rec.H) else np.asarray(rec.H, dtype=float)
        rows, cols, here = [], [], {}
        c_l, e_l, et_l, yfrom, Gy, mu_of, Ta, Ty = [], [], [], [], [], [], [], []
        r0, nmu = 0, 0
        for i, inter in enumerate(active):
            check_interaction(inter)
            cc = L.cols(inter)
            m = inter.size
            rs = slice(r0, r0 + m)
            rows.append(rs)
            cols.append(cc)
            r0 += m
            here[id(inter)] = G = H[rs, cc]           # the record's rows of the interaction
            Ta.append(L.dG_tensor(inter, self.Qa[j, cc]))
            c, er, etr = _law_rows(inter.nslaw)
            c_l.append(c)
            e_l.append(er)
            et_l.append(etr)
            # ẏ_k: at the end of step j-1 with the G0 that step used (its iterate, its record's rows)
            # when the interaction was active then, else at q_k (Moreau–Jean's outputs)
            alpha = j > 0 and id(inter) in prev
            yfrom.append(alpha)
            if alpha:
                Gy.append(prev[id(inter)])
                Ty.append(L.dG_tensor(inter, self.Qa[j - 1, cc]))
            elif Ta[-1] is None:                      # a linear relation: its constant rows
                Gy.append(G)
                Ty.append(None)
            else:
                Gy.append(L.G(inter, self.Q[j, cc]))
                Ty.append(L.dG_tensor(inter, self.Q[j, cc]))
            if isinstance(inter.nslaw, NewtonImpactFrictionNSL):
                mu_of.append(nmu)
                nmu += 1
            else:
                mu_of.append(-1)
        m = r0
        P = rec.problem
        if H.shape != (m, n) or rec.ydot.shape != (m,):
            self._mismatch(j + 1, f"rows of the active interactions' size ({m} x {n}; recorded {H.shape})", np.inf, 1.0)
        c, ydot = np.concatenate(c_l), rec.ydot
        U = L.minv(H.T)
        if U.ndim == 1:
            U = U[:, None]
        Wrec = P.M if kind == "lcp" else P.W
        W = Wrec.toarray() if sp.issparse(Wrec) else np.asarray(Wrec, dtype=float)
        q = np.asarray(P.q, dtype=float)
        mus = np.asarray(P.mu, dtype=float) if kind != "lcp" else np.zeros(0)
        vfree = rec.vfree
        # the record must be the step of the model being differentiated (its laws now)
        Hv = H @ vfree
        sq = max(float(np.max(np.abs(q))), float(np.max(np.abs(Hv))), 1e-300)
        err = float(np.max(np.abs(Hv + c * ydot - q)))
        if err > CHECK_RTOL * sq:
            self._mismatch(j + 1, "the problem's vector q", err, sq)
        lam = rec.lam
        vn = vfree + U @ lam
        sv = max(1.0, float(np.max(np.abs(self.V[j + 1]))))
        if np.max(np.abs(vn - self.V[j + 1])) > CHECK_RTOL * sv:
            self._mismatch(j + 1, "the velocity after the impulses", float(np.max(np.abs(vn - self.V[j + 1]))), sv)
        primal, Wname = ("z", "M") if kind == "lcp" else ("r", "W")
        last = self._last_sens
        if last is not None and all(a.shape == b.shape and np.allclose(a, b, rtol=REUSE_RTOL, atol=0)
                                    for a, b in zip(last[0], (W, q, mus, lam))):
            s = last[1]                           # the same problem and impulses (at rest): the same derivative
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # an inexact step is reported (failed steps), not warned per step
                s = sensitivity(P, lam, singular="min-norm", max_error=np.inf)
            if self.smoothing:
                s = s.smoothed(self.smoothing)
            s.free_v = _velocity_freedom(s, U)
            self._last_sens = ((W, q, mus, lam), s)
        st = _Step(j, list(active), rows, cols, H, U, lam, c, np.concatenate(e_l), np.concatenate(et_l), ydot,
                   yfrom, Gy, Ta, Ty, s, primal, Wname, np.array(mu_of), {id(i) for i in active})
        st.free_v = s.free_v
        st.timing = self._impacts(st, rec)
        return st, here

    def _impacts(self, st, rec):
        r"""The contacts that step ``st`` activates with an impulse, approaching at a normal velocity
        ẏ_k < 0 with a gap |y_k| <= 2h|ẏ_k|: the impact time relative to the step's start, :math:`\tau = -y_k/\dot y_k`, its
        derivative :math:`d\tau = -(dy_k + \tau\,d\dot y_k)/\dot y_k` (``a_q``, ``a_v``: its
        gradients in q_k and v_k), the velocity jump of the contact's impulse M̂⁻¹Hᵢᵀλᵢ and the change of
        the impulses' velocity for an impact dτ later, (∂v⁺/∂v⁻ - I) a, a the free acceleration
        (``impact_times``: the saltation term :math:`(Rf^- - f^+)\,d\tau`)."""
        L, j = self.L, st.j
        out = []
        for i, inter in enumerate(st.active):
            rs, cc = st.rows[i], st.cols[i]
            if st.yfrom[i] or st.lam[rs.start] <= 0:
                continue
            yd = float(st.ydot[rs.start])
            y0 = float(self.traj.y(inter, 0)[j, 0])
            if not (np.isfinite(y0) and yd < 0 and abs(y0) <= 2 * L.h * -yd):
                continue
            tau = -y0 / yd          # the gap's zero, from the step's start (< 0: crossed during the last step)
            GN = st.Gy[i][0]
            aq, av = np.zeros(L.n), np.zeros(L.n)
            aq[cc] = -GN / yd
            if st.Ty[i] is not None:
                aq[cc] -= tau * (self.V[j, cc] @ st.Ty[i][0]) / yd
            av[cc] = -tau * GN / yd
            # the velocity part: the impulse's response to the free acceleration a over dτ (the
            # reset's derivative along a, minus a: (∂v⁺/∂v⁻ - I) a)
            a = (self.Vfree[j] - self.V[j]) / L.h
            dq = np.zeros(st.H.shape[0])
            dq[rs] = st.H[rs] @ a + st.c[rs] * (st.Gy[i] @ a[cc])
            dlam = st.sens.jvp(q=dq)[st.primal]
            out.append((st.U[:, rs] @ st.lam[rs], st.U @ dlam, aq, av))
        return out

    # ------------------------------------------------------------------ reverse mode
    def vjp(self, gQ, gV, wanted, impact_times=False):
        """Cotangents of the recorded states (N+1, n) -> the accumulators of ``wanted`` (a
        :class:`_Wanted`)."""
        L, N = self.L, self.N
        h, th = L.h, L.theta
        qb, vb = np.zeros(L.n), np.zeros(L.n)
        acc = wanted.accumulators(L)
        ypend = {}          # id(inter) -> (inter, ȳ): cotangent of ẏ at the start of the step being undone
        for j in range(N - 1, -1, -1):
            qb = qb + gQ[j + 1]
            vb = vb + gV[j + 1]
            st = self.steps[j]
            qab = np.zeros(L.n)
            # the outputs ẏ_{j+1} that step j+1's restitution used: ẏ = G0(P) v_{j+1}, P the
            # iterate of step j (interactions active at step j) or q_{j+1}
            for inter, yb, G, T in ypend.values():
                cc = L.cols(inter)
                vb[cc] += G.T @ yb
                if T is not None:
                    alpha = st is not None and id(inter) in st.index
                    (qab if alpha else qb)[cc] += np.tensordot(T, np.outer(yb, self.V[j + 1, cc]), axes=([0, 1], [0, 1]))
            ypend = {}
            # q_{j+1} = q_j + h((1-θ) v_j + θ v_{j+1})
            vnb = vb + h * th * qb
            q_new, v_new = qb.copy(), h * (1 - th) * qb
            if impact_times and st is not None:
                for du, dw, aq, av in st.timing:      # q_{j+1} -= du dτ, v_{j+1} += dw dτ
                    sc = float(dw @ vb) - float(du @ qb)
                    q_new += sc * aq
                    v_new += sc * av
            vfb = vnb
            if st is not None:
                a = L.minv(vnb)
                vfb = vnb.copy()
                lamb = st.H @ a
                Hb = np.outer(st.lam, a)
                if acc.M is not None:
                    acc.add_M(L, -a, st.U @ st.lam)
                g = st.sens.vjp(**{st.primal: lamb})
                Wb, qqb = np.asarray(g[st.Wname].toarray() if sp.issparse(g[st.Wname]) else g[st.Wname]), g["q"]
                vf = self.Vfree[j]
                Hb += np.outer(qqb, vf)
                vfb += st.H.T @ qqb
                cb = qqb * st.ydot
                ys = st.c * qqb
                Hb += (Wb + Wb.T) @ st.U.T
                if acc.M is not None:
                    UW = st.U @ Wb
                    acc.add_M_mat(L, -UW, st.U)
                for i, inter in enumerate(st.active):
                    rs, cc = st.rows[i], st.cols[i]
                    acc.add_law(inter, "e", float(cb[rs] @ st.e_rows[rs]))
                    acc.add_law(inter, "et", float(cb[rs] @ st.et_rows[rs]))
                    if st.mu_of[i] >= 0 and "mu" in g:
                        acc.add_law(inter, "mu", float(g["mu"][st.mu_of[i]]))
                    if np.any(ys[rs]):
                        ypend[id(inter)] = (inter, ys[rs].copy(), st.Gy[i], st.Ty[i])
                    if st.Ta[i] is not None:
                        qab[cc] += np.tensordot(st.Ta[i], Hb[rs][:, cc], axes=([0, 1], [0, 1]))
            # v_free = v_j - M̂⁻¹ R
            v_new += vfb
            b = L.minv(vfb)
            if acc.M is not None:
                acc.add_M(L, b, self.V[j] - self.Vfree[j])
            if L.has_C:
                v_new -= h * (L.C.T @ b)
            if L.has_K:
                v_new -= h * h * th * (L.K.T @ b)
                q_new -= h * (L.K.T @ b)
            if acc.F is not None:
                acc.F += h * b
            q_new += qab
            v_new += h * qab
            qb, vb = q_new, v_new
        for inter, yb, G, T in ypend.values():      # ẏ_0 = G0(q_0) v_0
            cc = L.cols(inter)
            vb[cc] += G.T @ yb
            if T is not None:
                qb[cc] += np.tensordot(T, np.outer(yb, self.V[0, cc]), axes=([0, 1], [0, 1]))
        acc.q0, acc.v0 = qb + gQ[0], vb + gV[0]
        return acc

    # ------------------------------------------------------------------ forward mode
    def jvp(self, d, impact_times=False):
        """Tangents (N+1, n) of the recorded positions and velocities along the direction ``d`` (a
        :class:`_Direction`)."""
        L, N = self.L, self.N
        h, th = L.h, L.theta
        dQ, dV = np.zeros((N + 1, L.n)), np.zeros((N + 1, L.n))
        dq, dv = d.q0.copy(), d.v0.copy()
        dQ[0], dV[0] = dq, dv
        dqa_prev = None
        for j in range(N):
            st = self.steps[j]
            dqa = dq + h * dv
            rhs = np.zeros(L.n)
            if L.has_C:
                rhs += h * (L.C @ dv)
            if L.has_K:
                rhs += h * (L.K @ dq) + h * h * th * (L.K @ dv)
            if d.F is not None:
                rhs -= h * d.F
            if d.M is not None:
                rhs -= d.Mmul(L, self.V[j] - self.Vfree[j])
            dvf = dv - L.minv(rhs)
            if st is None:
                dvn = dvf
            else:
                m = st.H.shape[0]
                dH = np.zeros((m, L.n))
                moved = False
                dyd = np.zeros(m)
                dc = np.zeros(m)
                dmu = None
                for i, inter in enumerate(st.active):
                    rs, cc = st.rows[i], st.cols[i]
                    if st.Ta[i] is not None:
                        dH[rs, cc] = st.Ta[i] @ dqa[cc]
                        moved = True
                    dyd[rs] = st.Gy[i] @ dv[cc]
                    if st.Ty[i] is not None:
                        dP = dqa_prev[cc] if st.yfrom[i] else dq[cc]
                        dyd[rs] += (st.Ty[i] @ dP) @ self.V[j, cc]
                    de, det, dm = d.law(inter)
                    dc[rs] = de * st.e_rows[rs] + det * st.et_rows[rs]
                    if st.mu_of[i] >= 0 and dm:
                        if dmu is None:
                            dmu = np.zeros(int(st.mu_of.max()) + 1)
                        dmu[st.mu_of[i]] = dm
                dW = np.zeros((m, m))
                if moved:
                    dHU = dH @ st.U
                    dW += dHU + dHU.T
                if d.M is not None:
                    dW -= st.U.T @ d.Mmul(L, st.U)
                dqq = st.H @ dvf + dc * st.ydot + st.c * dyd
                if moved:
                    dqq += dH @ self.Vfree[j]
                kw = {st.Wname: dW, "q": dqq}
                if dmu is not None:
                    kw["mu"] = dmu
                dlam = st.sens.jvp(**kw)[st.primal]
                b = st.H.T @ dlam
                if moved:
                    b += dH.T @ st.lam
                if d.M is not None:
                    b -= d.Mmul(L, st.U @ st.lam)
                dvn = dvf + L.minv(b)
            dqn = dq + h * ((1 - th) * dv + th * dvn)
            if impact_times and st is not None:
                for du, dw, aq, av in st.timing:  # the impact dτ later: its velocity jump dτ later
                    dtau = aq @ dq + av @ dv
                    dqn = dqn - du * dtau
                    dvn = dvn + dw * dtau
            dQ[j + 1], dV[j + 1] = dqn, dvn
            dq, dv, dqa_prev = dqn, dvn, dqa
        return dQ, dV


def _velocity_freedom(s, U):
    r"""The dimension of the set the velocities after a step move in: the largest over the pieces of
    the step's solution set through its impulses (:func:`nsopt.sensitivity._local.pieces`: the null
    space of the linearised problem, and the pieces leaving through its degenerate contacts) of the
    rank of :math:`\hat M^{-1}H^\top` on the piece (0: the velocities are unique, even where the
    impulses are not, e.g. redundant contacts that stick)."""
    from ..sensitivity._factor import RANK_RTOL
    from ..sensitivity._local import pieces

    if not (s.singular or s.degenerate) or s.smoothing:
        return 0
    m = s.model
    sx, sy = m.scales()
    pcs = pieces(m, s.state, s._K, sx, sy, s.tol, limit=256)
    if pcs is None:
        return -1                        # not decided (too many pieces): reported as not unique
    top = max(float(np.max(np.abs(U), initial=0.0)), 1e-300)
    out = 0
    for pc in pcs:
        if pc.span.shape[1]:
            V = U @ pc.span
            sv = np.linalg.svd(V, compute_uv=False)
            out = max(out, int(np.sum(sv > 1e3 * RANK_RTOL * top)))
    return out


# ============================================================================ parameters
def _owner_of(item):
    return f"wrt item {item!r}"


def _parse(item, L, laws):
    """A ``wrt`` item -> (name, target): target None (shared by all), a system index, or a law."""
    if isinstance(item, str):
        name, obj = item, None
    elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
        name, obj = item
    else:
        raise ModelingError("Trajectory", "wrt", f"an item is a name or a (name, system or interaction) pair, got {item!r}")
    if name in SYSTEM_PARAMS:
        if obj is None:
            if name == "M":
                raise ModelingError("Trajectory", "wrt", "'M' needs its system: ('M', ds)")
            return name, None
        k = L.index.get(id(obj))
        if k is None:
            raise ModelingError("Trajectory", "wrt", f"{item!r}: {label(obj)} is not a system of this simulation")
        return name, k
    if name in LAW_PARAMS:
        if obj is None:
            if name in ("mu", "et") and not any(isinstance(law, NewtonImpactFrictionNSL) for law in laws.values()):
                what = "friction coefficient" if name == "mu" else "tangential restitution"
                raise ModelingError("Trajectory", "wrt", f"{name!r}: no interaction of this simulation has a {what} "
                                                         "(no NewtonImpactFrictionNSL): its derivative would be 0 "
                                                         "for a parameter the model does not have")
            return name, None
        law = getattr(obj, "nslaw", obj)
        if id(law) not in laws:
            raise ModelingError("Trajectory", "wrt", f"{item!r}: {label(obj)} is not an interaction (or law) of this "
                                                     "simulation")
        if name == "mu" and not isinstance(law, NewtonImpactFrictionNSL):
            raise ModelingError("Trajectory", "wrt", f"{item!r}: {label(law)} has no friction coefficient")
        if name == "et" and not isinstance(law, NewtonImpactFrictionNSL):
            raise ModelingError("Trajectory", "wrt", f"{item!r}: {label(law)} has no tangential restitution")
        return name, law
    raise ModelingError("Trajectory", "wrt", f"unknown parameter {name!r}; expected one of "
                                             f"{', '.join(SYSTEM_PARAMS + LAW_PARAMS)}")


class _Acc:
    """The adjoint's accumulators: q̄_0, v̄_0, M̄ per system (when asked), F̄, and the laws' e, et, mu."""

    def __init__(self, L, need_M, need_F):
        self.M = {k: np.zeros((L.off[k + 1] - L.off[k],) * 2) for k in range(len(L.systems))} if need_M else None
        self.F = np.zeros(L.n) if need_F else None
        self.law = {}
        self.q0 = self.v0 = None

    def add_M(self, L, a, b):
        """M̄ += a bᵀ on the diagonal blocks."""
        for k in self.M:
            s = slice(L.off[k], L.off[k + 1])
            self.M[k] += np.outer(a[s], b[s])

    def add_M_mat(self, L, A, B):
        """M̄ += A Bᵀ on the diagonal blocks (A, B: n x m)."""
        for k in self.M:
            s = slice(L.off[k], L.off[k + 1])
            self.M[k] += A[s] @ B[s].T

    def add_law(self, inter, name, g):
        if g:
            key = (name, id(inter.nslaw))
            self.law[key] = self.law.get(key, 0.0) + g


class _Wanted:
    def __init__(self, wrt, L, laws):
        if isinstance(wrt, (str, tuple)):
            wrt = [wrt]
        self.items = list(wrt)
        self.parsed = [_parse(it, L, laws) for it in self.items]
        self.laws = laws

    def accumulators(self, L):
        return _Acc(L, any(n in ("M", "mass") for n, _ in self.parsed), any(n == "fext" for n, _ in self.parsed))

    def results(self, acc, L):
        out = {}
        for item, (name, tgt) in zip(self.items, self.parsed):
            if name in ("q0", "v0", "fext"):
                arr = {"q0": acc.q0, "v0": acc.v0, "fext": acc.F}[name]
                out[item] = arr.copy() if tgt is None else arr[L.off[tgt]:L.off[tgt + 1]].copy()
            elif name == "M":
                out[item] = acc.M[tgt].copy()
            elif name == "mass":
                ks = range(len(L.systems)) if tgt is None else [tgt]
                out[item] = float(sum(np.sum(acc.M[k] * L.M[k]) / L.M[k][0, 0] for k in ks))
            elif tgt is None:
                out[item] = float(sum(g for (n, _), g in acc.law.items() if n == name))
            else:
                out[item] = float(acc.law.get((name, id(tgt)), 0.0))
        return out


def _direction_value(item, val):
    """A direction's value as real numbers (ModelingError naming the item otherwise)."""
    try:
        a = np.asarray(val)
    except (TypeError, ValueError):
        raise ModelingError("Trajectory", "direction", f"{item!r}: is not a numeric array") from None
    if a.dtype.kind not in "fiub":
        got = "complex numbers" if a.dtype.kind == "c" else f"dtype {a.dtype}"
        raise ModelingError("Trajectory", "direction", f"{item!r}: must be real numbers, got {got}")
    if not np.all(np.isfinite(a.astype(float))):
        raise ModelingError("Trajectory", "direction", f"{item!r}: has non-finite entries")
    name = item[0] if isinstance(item, tuple) else item
    if name in ("mass", "e", "et", "mu"):
        if a.size != 1:
            raise ModelingError("Trajectory", "direction", f"{item!r}: expected a number, got shape {a.shape}")
        return float(a.reshape(-1)[0])
    return a.astype(float)


class _Direction:
    """A direction of the parameters (forward mode), from ``{item: value}``."""

    def __init__(self, direction, L, laws):
        if not isinstance(direction, dict):
            raise ModelingError("Trajectory", "direction", f"expected a dict {{wrt item: value}}, got {type(direction).__name__}")
        self.q0, self.v0 = np.zeros(L.n), np.zeros(L.n)
        self.F, self.M = None, None
        self._law, self._shared = {}, {}
        for item, val in direction.items():
            name, tgt = _parse(item, L, laws)
            val = _direction_value(item, val)
            if name in ("q0", "v0", "fext"):
                s = slice(0, L.n) if tgt is None else slice(L.off[tgt], L.off[tgt + 1])
                v = np.asarray(val, dtype=float)
                if v.shape != (s.stop - s.start,):
                    raise ModelingError("Trajectory", "direction", f"{item!r}: expected shape ({s.stop - s.start},), got {v.shape}")
                if name == "fext":
                    if self.F is None:
                        self.F = np.zeros(L.n)
                    self.F[s] += v
                else:
                    getattr(self, name)[s] += v
            elif name in ("M", "mass"):
                if self.M is None:
                    self.M = {}
                ks = range(len(L.systems)) if tgt is None else [tgt]
                for k in ks:
                    nk = L.off[k + 1] - L.off[k]
                    if name == "M":
                        dM = np.asarray(val, dtype=float)
                        if dM.shape != (nk, nk):
                            raise ModelingError("Trajectory", "direction", f"{item!r}: expected shape ({nk}, {nk}), got {dM.shape}")
                    else:
                        dM = float(val) * L.M[k] / L.M[k][0, 0]
                    self.M[k] = self.M.get(k, 0.0) + dM
            elif tgt is None:
                self._shared[name] = self._shared.get(name, 0.0) + float(val)
            else:
                key = (name, id(tgt))
                self._law[key] = self._law.get(key, 0.0) + float(val)

    def law(self, inter):
        law = inter.nslaw
        out = []
        for name in LAW_PARAMS:
            has = name == "e" or isinstance(law, NewtonImpactFrictionNSL)
            out.append((self._shared.get(name, 0.0) + self._law.get((name, id(law)), 0.0)) if has else 0.0)
        return tuple(out)

    def Mmul(self, L, X):
        """dM̂ X (block diagonal dM) for X (n,) or (n, m)."""
        out = np.zeros_like(X, dtype=float)
        for k, dM in self.M.items():
            s = slice(L.off[k], L.off[k + 1])
            out[s] = dM @ X[s]
        return out


def _laws_of(tape):
    """id(law) -> law, for the model's interactions and those of the recorded steps."""
    laws = {id(i.nslaw): i.nslaw for i in tape.sim.nsds.interactions}
    for rec in tape.records.values():
        for i in rec.active:
            laws[id(i.nslaw)] = i.nslaw
    return laws


# ============================================================================ what the derivative does not see
@dataclass
class DerivativeReport:
    r"""Where the derivative of a run is that of one branch only (module docstring).

    ``near_switches``: (step, interaction, margin, relative margin) of the activation decisions whose
    margin :math:`y_0 + \gamma h\dot y_0 - \text{threshold}` is within ``MARGIN_RTOL`` of the distance the
    fastest contact of the run travels in :math:`\gamma h` (plus the threshold): a small change of the
    parameters may activate or release the contact one step earlier or later, a jump the derivative
    does not see. A contact resting at zero gap is there at every step (its decision is taken on
    round-off): give it a small ``MoreauJeanOSI(activation_threshold=...)``. ``degenerate``: (step, the contacts or
    rows without strict complementarity, their states), differentiated by ``Sensitivity.rule``.
    ``singular``: steps whose linearised problem is singular (impulses not unique; the minimum-norm
    derivative of the impulses, which is the run's as long as the velocities are unique).
    ``not_unique``: (step, dimension) of the steps after which the **velocities** are not unique
    (the step's solution set moves them, e.g. contacts sliding with indeterminate normal forces, or a
    contact that may start sliding): a change of the parameters may move the run onto another of
    those solutions, so the derivative is not the run's (a finite difference jumps); when one such
    step lies on the path, ``is_the_runs`` is False and the derivative methods warn. ``failed``:
    steps whose problem was not solved to the tolerance.

    Made by ``Trajectory.derivative_report()`` (and attached to every ``Trajectory.gradient``);
    ``print`` it for a summary.

    Attributes
    ----------
    steps, contact_steps : int
        The steps of the run, and those with contact.
    near_switches, degenerate, singular, not_unique, failed : list
        As above.
    is_the_runs : bool
        False when a step with non-unique velocities lies on the path.
    smoothing : float or None
        The smoothing of the laws the derivative used.

    See Also
    --------
    Derivatives.gradient : an example, with the report of a run.
    """

    steps: int
    contact_steps: int
    near_switches: list
    degenerate: list
    singular: list
    failed: list
    smoothing: float | None = None
    names: dict = field(default_factory=dict, repr=False)      # id(interaction) -> how __str__ names it
    not_unique: list = field(default_factory=list)

    @property
    def is_the_runs(self) -> bool:
        """False when the velocities after a step on the path are not unique (``not_unique``)."""
        return not self.not_unique

    def __str__(self):
        lines = [f"Derivative of a run of {self.steps} steps ({self.contact_steps} with contact); the index set "
                 f"held fixed along it" + (f", laws smoothed (eps = {self.smoothing:g})" if self.smoothing else "")]
        if self.near_switches:
            lines.append(f"  {len(self.near_switches)} activation decision(s) near their threshold (a jump the "
                         f"derivative does not see):")
            for k, inter, mg, rel in self.near_switches[:10]:
                lines.append(f"    step {k}: {self.names.get(id(inter), label(inter))} margin {mg:.3g} "
                             f"(relative {rel:.2g})")
        else:
            lines.append(f"  no activation decision within {MARGIN_RTOL:g} (relative) of its threshold")
        if self.degenerate:
            lines.append(f"  {len(self.degenerate)} step(s) without strict complementarity (generalized Jacobian "
                         f"by the documented rule): steps {', '.join(str(k) for k, *_ in self.degenerate[:10])}")
        else:
            lines.append("  strict complementarity at every contact step")
        if self.not_unique:
            lines.append(f"  NOT THE RUN'S DERIVATIVE: {len(self.not_unique)} step(s) after which the velocities are not "
                         f"unique (a small change of the parameters may move the run onto another solution of the "
                         f"step: a jump the derivative does not see): "
                         + ", ".join(f"step {k} (dimension {d if d >= 0 else '?'})" for k, d in self.not_unique[:10]))
        if self.singular:
            uniq = len(self.singular) - len([k for k, _ in self.not_unique if k in set(self.singular)])
            lines.append(f"  {len(self.singular)} step(s) with a singular linearised problem (impulses not unique; "
                         f"{uniq} of them with unique velocities, where the minimum-norm derivative of the impulses "
                         f"gives the run's): steps {', '.join(map(str, self.singular[:10]))}")
        if self.failed:
            lines.append(f"  {len(self.failed)} step(s) not solved to the tolerance: steps "
                         f"{', '.join(map(str, self.failed[:10]))}")
        return "\n".join(lines)


def report(tape, traj, smoothing=None) -> DerivativeReport:
    R = tape.replay(traj, smoothing)
    L = R.L
    gh = L.gamma * L.h
    inters = {id(i): i for i in tape.sim.nsds.interactions}
    for rec in tape.records.values():
        for i in rec.active:
            inters.setdefault(id(i), i)
    rows = []
    for inter in inters.values():
        try:
            y0 = traj.y(inter, 0)[:R.N, 0]
            y1 = traj.y(inter, 1)[:R.N, 0]
        except (KeyError, ModelingError):
            continue
        rows.append((inter, y0, y1))
    # the scale of a margin: the distance the fastest contact travels in γh (a resting contact's
    # margin, y0 + γhẏ ≈ 0 to round-off, is then near its threshold: a decision taken on round-off)
    vmax = max((float(np.nanmax(np.abs(y1), initial=0.0)) for _, _, y1 in rows), default=0.0)
    scale = gh * vmax + abs(L.thr) or gh * L.h
    near = []
    for inter, y0, y1 in rows:
        with np.errstate(invalid="ignore"):
            mg = y0 + gh * y1 - L.thr
            rel = np.abs(mg) / scale
            hit = np.flatnonzero(np.isfinite(mg) & (rel <= MARGIN_RTOL))
        near += [(int(j) + 1, inter, float(mg[j]), float(rel[j])) for j in hit]
    near.sort(key=lambda x: x[0])
    deg, sing, failed, n_contact, free_v = [], [], [], 0, []
    for st in R.steps:
        if st is None:
            continue
        n_contact += 1
        if st.sens.degenerate:
            deg.append((st.j + 1, dict(st.sens.degenerate), dict(st.sens.states)))
        if st.sens.singular:
            sing.append(st.j + 1)
        if st.free_v:
            free_v.append((st.j + 1, st.free_v))
        sol = tape.records[st.j + 1].solution
        if sol is not None and not sol.success:
            failed.append(st.j + 1)
    names = {}
    for i, inter in enumerate(tape.sim.nsds.interactions):
        names[id(inter)] = inter.name if inter.name else f"interaction #{i}"
    return DerivativeReport(R.N, n_contact, near, deg, sing, failed, smoothing,
                            {k: names.get(k, label(v)) for k, v in inters.items()}, free_v)


def _warn_not_the_runs(R):
    """The whole-run flag: a warning when a step with non-unique velocities lies on the path."""
    bad = [st.j + 1 for st in R.steps if st is not None and st.free_v]
    if bad:
        from ..exceptions import NsoptWarning

        warnings.warn(f"the derivative is not the run's: the velocities after step(s) {', '.join(map(str, bad[:10]))}"
                      f"{' ...' if len(bad) > 10 else ''} are not unique (a small change of the parameters may move the run "
                      f"onto another solution of that step); see derivative_report()", NsoptWarning, stacklevel=3)


class Gradient(dict):
    """``{wrt item: gradient}`` of :meth:`Trajectory.gradient`, with ``value`` (the loss) and ``report``
    (a :class:`DerivativeReport`)."""

    value: float = math.nan
    report: DerivativeReport | None = None


# ============================================================================ the Trajectory's methods
class Derivatives:
    """The derivative methods of :class:`~nsopt.modeling.Trajectory` (a run with
    ``TimeStepping(..., differentiable=True)``; module :mod:`nsopt.modeling.differentiable`)."""

    def _tape(self):
        tape = getattr(self._sim, "_tape", None)
        if tape is None:
            raise ModelingError(label(self._sim), "differentiable", "the run recorded no derivative data: build the "
                                                                    "TimeStepping with differentiable=True")
        return tape

    def states(self):
        """(Q, V): the recorded positions and velocities of all systems, stacked in the model's order,
        (N+1, ndof) each (the layout of the losses and cotangents; :meth:`dofs` gives a system's columns).

        Returns
        -------
        Q, V : ndarray
            Copies of the recorded positions and velocities.

        Raises
        ------
        ModelingError
            When the run was not made with ``differentiable=True``.
        """
        R = self._tape().replay(self)
        return R.Q.copy(), R.V.copy()

    def dofs(self, ds) -> slice:
        """The columns of system ``ds`` in :meth:`states` (and in the stacked ``q0``, ``v0``, ``fext``).

        Parameters
        ----------
        ds : DynamicalSystem
            A system of the model.

        Returns
        -------
        slice
        """
        return self._tape().replay(self).L.dofs(ds)

    def vjp(self, dQ=None, dV=None, wrt=("q0", "v0"), *, smoothing=None, impact_times=False) -> dict:
        r"""Reverse mode: the gradients of :math:`\sum_k \langle dQ_k, q_k\rangle + \langle dV_k, v_k\rangle`
        (cotangents (N+1, ndof), None: zero) with respect to each ``wrt`` item (module docstring):
        one adjoint sweep over the recorded steps, whatever the number of parameters.

        ``impact_times``: False (default), the derivative of the discrete branch the run took (what a
        finite difference with a small step sees); True, plus the derivative of the impact times: at
        each step that activates a contact with an impulse, the impact time inside the step
        :math:`\tau = -y_k/\dot y_k` moves with the parameters and the velocity jump with it,
        :math:`dq_{k+1} \mathrel{-}= \hat M^{-1}H_i^\top\lambda_i\,d\tau`,
        :math:`dv_{k+1} \mathrel{+}= (\partial v^+/\partial v^- - I)\,a\,d\tau` (a the free
        acceleration; the saltation term of the continuous-time system): the derivative of the trajectory the run approximates, to O(h), which
        a target reached after a bounce needs (the discrete branch moves the impact by whole steps
        only).

        Parameters
        ----------
        dQ, dV : (N+1, ndof) array_like, optional
            Cotangents of the recorded positions and velocities (None: zero).
        wrt : sequence, default ("q0", "v0")
            Parameters: names, or ``(name, object)`` pairs (module docstring).
        smoothing : float, optional
            The ``eps`` of ``Sensitivity.smoothed`` at every contact step (None: the exact branch).
        impact_times : bool, default False
            Add the derivative of the impact times (see above).

        Returns
        -------
        dict
            ``{wrt item: gradient}``, arrays for ``q0``, ``v0``, ``fext``, ``("M", ds)``, numbers
            for ``mass``, ``e``, ``et``, ``mu``.

        Raises
        ------
        ModelingError
            When the run was not differentiable, a cotangent has the wrong shape, or a parameter is
            unknown or not in the model.

        See Also
        --------
        gradient : an example of every derivative method on one run.
        """
        R = self._tape().replay(self, smoothing)
        gQ = np.zeros_like(R.Q) if dQ is None else _cot(dQ, R.Q.shape, "dQ")
        gV = np.zeros_like(R.V) if dV is None else _cot(dV, R.V.shape, "dV")
        _warn_not_the_runs(R)
        w = _Wanted(wrt, R.L, _laws_of(self._tape()))
        return w.results(R.vjp(gQ, gV, w, impact_times), R.L)

    def gradient(self, loss, wrt=("q0", "v0"), *, smoothing=None, impact_times=False) -> Gradient:
        """Reverse mode for ``loss(Q, V) -> (value, dQ, dV)``, a function of the recorded states
        (:meth:`states`) returning its value and its partial derivatives (arrays like Q and V, or None);
        returns a :class:`Gradient` (``{item: gradient}``, ``.value``, ``.report``). ``smoothing``: the
        ``eps`` of ``Sensitivity.smoothed`` at every contact step (None: the exact branch);
        ``impact_times``: see :meth:`vjp`.

        Parameters
        ----------
        loss : callable
            ``loss(Q, V) -> (value, dQ, dV)``: the loss of the recorded states and its partial
            derivatives (arrays shaped like Q and V, or None).
        wrt : sequence, default ("q0", "v0")
            Parameters: names, or ``(name, object)`` pairs (module docstring).
        smoothing, impact_times : optional
            As in :meth:`vjp`.

        Returns
        -------
        Gradient
            ``{item: gradient}``, with ``.value`` (the loss) and ``.report``.

        Raises
        ------
        ModelingError
            When ``loss`` does not return ``(value, dQ, dV)``, or as :meth:`vjp`.

        Examples
        --------
        The final height of a ball dropped from 1 m, with respect to the restitution and the initial
        velocity:

        >>> import numpy as np
        >>> from nsopt import modeling as nm
        >>> ball = nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-9.81])
        >>> ground = nm.Interaction(nm.NewtonImpactNSL(e=0.5), nm.LagrangianLinearTIR(H=[[1.0]]))
        >>> nsds = nm.NonSmoothDynamicalSystem(0.0, 1.0)
        >>> _ = nsds.link(ground, ball)
        >>> traj = nm.TimeStepping(nsds, h=0.01, osns="lcp", method="lemke", tol=1e-14,
        ...                        differentiable=True).run()
        >>> final = lambda Q, V: (Q[-1, 0], np.eye(len(Q))[-1][:, None], None)
        >>> g = traj.gradient(final, wrt=["e", "v0"])
        >>> round(g.value, 6), round(float(g["e"]), 5), g["v0"].round(5)
        (0.047081, 2.03067, array([0.24625]))

        The same derivative by the other methods: the adjoint for a given cotangent (``vjp``), the
        tangent of every state (``jvp``), the Jacobian of the final state (``jacobian``), and what
        the derivative does not see (``derivative_report``):

        >>> dQ = np.zeros((len(traj.t), 1)); dQ[-1] = 1.0
        >>> round(float(traj.vjp(dQ, wrt=["e"])["e"]), 5)
        2.03067
        >>> tQ, tV = traj.jvp({"e": 1.0})
        >>> tQ.shape, round(float(tQ[-1, 0]), 5)
        ((101, 1), 2.03067)
        >>> traj.jacobian(["e"])["e"].round(5)                  # (d q_N, d v_N) / d e
        array([2.03067, 0.     ])
        >>> print(traj.derivative_report())
        Derivative of a run of 100 steps (3 with contact); the index set held fixed along it
          no activation decision within 0.001 (relative) of its threshold
          strict complementarity at every contact step
        >>> r = g.report
        >>> r.steps, r.contact_steps, r.near_switches, r.failed
        (100, 3, [], [])
        """
        R = self._tape().replay(self, smoothing)
        out = loss(R.Q.copy(), R.V.copy())
        if not (isinstance(out, tuple) and len(out) == 3):
            raise ModelingError("Trajectory", "loss", "must return (value, dQ, dV)")
        value, dQ, dV = out
        g = Gradient(self.vjp(dQ, dV, wrt, smoothing=smoothing, impact_times=impact_times))
        g.value = float(value)
        g.report = report(self._tape(), self, smoothing)
        return g

    def jvp(self, direction: dict, *, smoothing=None, impact_times=False):
        """Forward mode: (dQ, dV), the tangents (N+1, ndof) of every recorded state along ``direction``
        (``{wrt item: value}``: arrays for ``q0``, ``v0``, ``fext``, ``("M", ds)``; numbers for ``mass``,
        ``e``, ``et``, ``mu``); ``impact_times``: see :meth:`vjp`.

        Parameters
        ----------
        direction : dict
            ``{wrt item: value}``.
        smoothing, impact_times : optional
            As in :meth:`vjp`.

        Returns
        -------
        dQ, dV : ndarray
            (N+1, ndof) each.

        Raises
        ------
        ModelingError
            As :meth:`vjp`.

        See Also
        --------
        gradient : an example of every derivative method on one run.
        """
        R = self._tape().replay(self, smoothing)
        _warn_not_the_runs(R)
        return R.jvp(_Direction(direction, R.L, _laws_of(self._tape())), impact_times)

    def jacobian(self, wrt, *, smoothing=None, impact_times=False) -> dict:
        """``{item: J}``: the Jacobian of the final state (q_N, v_N) (2 ndof) with respect to each item,
        by forward mode (one sweep per parameter component): shape (2 ndof,) for a number,
        (2 ndof, *shape) for an array parameter.

        Parameters
        ----------
        wrt : sequence
            Parameters: names, or ``(name, object)`` pairs.
        smoothing, impact_times : optional
            As in :meth:`vjp`.

        Returns
        -------
        dict
            ``{item: J}``.

        See Also
        --------
        gradient : an example of every derivative method on one run.
        """
        R = self._tape().replay(self, smoothing)
        _warn_not_the_runs(R)
        laws = _laws_of(self._tape())
        w = _Wanted(wrt, R.L, laws)
        out = {}
        for item, (name, tgt) in zip(w.items, w.parsed):
            if name in ("q0", "v0", "fext"):
                size = R.L.n if tgt is None else R.L.off[tgt + 1] - R.L.off[tgt]
                shape = (size,)
            elif name == "M":
                size = (R.L.off[tgt + 1] - R.L.off[tgt]) ** 2
                shape = (math.isqrt(size),) * 2
            else:
                size, shape = 1, ()
            cols = []
            for c in range(size):
                e = np.zeros(size)
                e[c] = 1.0
                val = e.reshape(shape) if shape else 1.0
                dQ, dV = R.jvp(_Direction({item: val}, R.L, laws), impact_times)
                cols.append(np.concatenate([dQ[-1], dV[-1]]))
            J = np.array(cols).T
            out[item] = J.reshape((2 * R.L.n, *shape)) if shape else J[:, 0]
        return out

    def derivative_report(self, *, smoothing=None) -> DerivativeReport:
        """Where the derivative is that of one branch only: activation decisions near their threshold,
        steps without strict complementarity, singular steps, failed steps (:class:`DerivativeReport`).

        Parameters
        ----------
        smoothing : float, optional
            As in :meth:`vjp`.

        Returns
        -------
        DerivativeReport
            Print it for a summary.

        See Also
        --------
        gradient : an example of every derivative method on one run.
        """
        return report(self._tape(), self, smoothing)


def _cot(a, shape, name):
    try:
        a = np.asarray(a)
    except (TypeError, ValueError):
        raise ModelingError("Trajectory", name, "is not a numeric array") from None
    if a.dtype.kind not in "fiub":
        raise ModelingError("Trajectory", name, f"must be real numbers, got dtype {a.dtype}")
    a = a.astype(float)
    if a.shape != shape:
        raise ModelingError("Trajectory", name, f"expected shape {shape} (rows: the N+1 recorded states; columns: "
                                                f"the stacked degrees of freedom), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ModelingError("Trajectory", name, "has non-finite entries (the cotangent of the states that the loss "
                                                "returned, or that was given, holds NaN or inf)")
    return a
