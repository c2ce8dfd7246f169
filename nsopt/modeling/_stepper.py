r"""The Moreau–Jean step, once, on stacked arrays (``formulations/time_stepping.md`` derives it).

A :class:`MoreauJeanStepper` is what a :class:`~nsopt.modeling.TimeStepping` with a
:class:`~nsopt.modeling.MoreauJeanOSI` runs: it owns the run's state (positions, velocities,
impulses of all systems; outputs, multipliers and warm starts of all interactions) as stacked arrays
indexed by position, and nothing of it is written onto the user's systems and interactions while it
steps (``sim.state_of(ds)`` reads it; the run writes it onto them when it stops:
:mod:`nsopt.modeling._state`). One step, for every model:

1. the index set from the outputs of the last step (:func:`~nsopt.modeling._kernels.closes`);
2. (Newton loop when a system is nonlinear) the free velocity of each system group at the iterate,
   the Jacobians :math:`G_0` of the active interactions at the iterate (first: :math:`q_k + hv_k`),
   the one-step problem :math:`W = G_0\hat M^{-1}G_0^\top (+D)`, :math:`q = G_0 v_{free} + \dots`
   (:func:`nsopt.problems._delassus.delassus`, or its block form), solved by the simulation;
3. :math:`p = G_0^\top\lambda`, :math:`v = v_{free} + \hat M^{-1}p`, the position update
   (:func:`~nsopt.modeling._kernels.position`), the outputs at the new state;
4. the new state is handed to the simulation, which records it and commits it
   (:meth:`MoreauJeanStepper.commit`): a step that raises (a plug-in, Ctrl-C, a solver) changes nothing.

Who evaluates what is decided once per topology, not per step:

- **systems** (:class:`_Systems`): those with a constant iteration matrix :math:`\hat M` (LagrangianLinearTIDS,
  LagrangianDS with a constant M and no state-dependent force) share one stacked K, C and F_ext and keep
  their factors; the others (a plug-in M, ``fint``, ``fgyr``) are evaluated one by one at every Newton
  iterate (:func:`iteration_matrix`, :meth:`_Systems.free_velocity`), as Siconos does;
- **relations**: ``LagrangianLinearTIR`` rows are one constant sparse H (their outputs by the compiled
  :func:`~nsopt.modeling._kernels.lin_outputs`); ``LagrangianScleronomousR`` are grouped by plug-in
  (:class:`_Group`: one call of ``h``/``G0`` per group and step with ``vectorized=True``); anything else
  (rheonomous, compliant relations, laws whose restitution is not a per-row coefficient) is evaluated one
  interaction at a time (:class:`_Singles`), writing into the same stacked rows;
- **W**: by blocks (:func:`~nsopt.problems._delassus.block_delassus_for`) when every interaction has one
  size and every system one size with a diagonal M̂, else from the assembled rows;
- **linear time-invariant models** (only ``LagrangianLinearTIR`` without D, no K or C, constant F_ext,
  diagonal M̂): the phases are fused into compiled calls (``fused_step_start`` / ``fused_step_end``, and the
  steps without contact by :func:`~nsopt.modeling._kernels.free_flight`), which call the general step's
  compiled phases (:func:`~nsopt.modeling._kernels.index_set`, :func:`~nsopt.modeling._kernels.lin_outputs`,
  :func:`~nsopt.modeling._kernels.position`) and its constant :math:`\hat M^{-1}R`
  (:meth:`_Systems.constant_residual_shift`).

``MoreauJeanOSI(batch=False)`` evaluates every system and relation one by one and uses none of the
grouped or fused forms: the reference the property test (tests/test_modeling_step.py) compares with.

Extension points (documented in ``formulations/time_stepping.md``):

- a **system group** (:class:`_Systems` holds the groups) provides, for its members, the factors of
  :math:`\hat M`, the free velocity at a Newton iterate, the Newton residual, the forces at t_k and
  the **kinematics** (:meth:`_Systems.positions`: q_{k+1} from q_k, v_k, v_{k+1}); the stacked
  position array has its own offsets (``qoff``), distinct from the velocity offsets (``voff``), so
  that a group whose q is not v-sized (a rigid body: position + quaternion, 7, and twist, 6) plugs in
  by giving its own ``positions`` (the quaternion moved by the exponential map) and forces (the gyroscopic term), and
  its relations Jacobians with respect to the twist;
- a **step record** (:class:`StepRecord`): ``TimeStepping(..., on_step=f)`` calls ``f`` after each
  committed step with the active set, the problem solved (W, q), its solution λ, v_free and the rows
  H (on demand), i.e. what an adjoint sweep over the steps needs.
"""

from __future__ import annotations

import collections
import itertools
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..exceptions import ModelingError, StepFailed
from ..linalg import factorise
from ..problems import LCP
from ..problems._delassus import DelassusFactors, block_delassus_for, delassus
from ..solve import solve
from . import _kernels as K
from . import _state
from ._check import label, vector
from .laws import (
    ComplementarityConditionNSL,
    EqualityConditionNSL,
    NewtonImpactFrictionNSL,
    NewtonImpactNSL,
    RelayNSL,
)
from .newton_euler import NewtonEulerDS, ne_positions
from .relations import LagrangianLinearTIR, LagrangianScleronomousR

SPARSE_DOFS = 300        # above this many degrees of freedom, the rows and W are assembled sparse
LAWS = (NewtonImpactNSL, ComplementarityConditionNSL, NewtonImpactFrictionNSL, EqualityConditionNSL, RelayNSL)
ACTIVATION_PASSES = 3    # a step is solved again (at most this many times in all) with the look-ahead contacts it missed
PROJECTION_DENSE = 300   # the position projection's LCPs up to this many rows by dense lemke, pgs above
PROJECTION_ROUNDS = 20   # rows added to a projection's active set at most this many times
PROJECTION_SWEEPS = 1000  # pgs sweeps of a projection LCP above PROJECTION_DENSE rows (18e4543's budget)
PARKED = 4096            # removed interactions whose multipliers and warm starts are kept for a re-link
_NOZ = np.zeros(0)


# ============================================================================ the step's problem
@dataclass
class Assembly:
    """One step's OSNS data: ``w = W λ + q`` over the active interactions, in order.

    ``W`` is None when the integrator knows it equals the previous step's (same active set, constant
    operators): the simulation then reuses its problem with :meth:`nsopt.problems.Problem.replace`.
    ``glob`` holds (M, H, q, b) for a global friction-contact problem. ``H``, ``vfree`` and ``osi``
    are there for builders that need the operators themselves (a multiple-impact problem, say):
    ``osi.iteration_matrix()`` is the stacked M̂.

    Attributes
    ----------
    key : tuple
        Identifies the active set and layout (equal keys: the same rows).
    interactions : list of Interaction
        The active interactions, in row order.
    q : numpy.ndarray
        The OSNS vector q.
    W : numpy.ndarray or scipy.sparse matrix or None
        The OSNS matrix (None: the previous step's).
    constant : bool
        Whether W stays the same while the active set does.
    glob : tuple or None
        (M, H, q, b) for a global friction-contact problem.
    sizes : list of int
        Block sizes, when the problem needs them.
    H : matrix or None
        The active rows G0 (m x ndof), when the integrator has them assembled.
    vfree : numpy.ndarray or None
        The free velocity.
    osi : object
        The integrator's run (``osi.iteration_matrix()`` gives the stacked M̂).
    warm : numpy.ndarray or None
        The warm start (the run keeps the multipliers stacked).
    laws : list or None
        The interactions' laws.
    trusted_W : bool
        W built by a compiled assembly in validated form (canonical CSR, finite).
    mu : numpy.ndarray or None
        The laws' friction coefficients (read-only, checked), when at hand.
    factors : nsopt.problems.DelassusFactors or None
        W's factors (W = H M̂⁻¹ Hᵀ with M̂ diagonal) when the integrator built W from them.

    See Also
    --------
    nsopt.modeling.register_osns : a builder receives the step's Assembly.

    Examples
    --------
    A one-step problem builder sees the Assembly of each step with contact:

    >>> import nsopt
    >>> from nsopt import modeling as nm
    >>> ball = nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-9.81])
    >>> nsds = nm.NonSmoothDynamicalSystem(0.0, 0.5)
    >>> inter = nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0]])), ball)
    >>> seen = []
    >>> def build(asm, laws, previous):
    ...     seen.append(asm)
    ...     return previous.replace(q=asm.q) if asm.W is None else nsopt.LCP(asm.W, asm.q)
    >>> nm.register_osns("doc-assembly", build, holds=["lcp"], methods=["lemke"])
    >>> _ = nm.TimeStepping(nsds, h=0.01, osns="doc-assembly").run()
    >>> asm = seen[0]
    >>> asm.interactions, asm.W, asm.q.round(5)
    ([Interaction(NewtonImpactNSL, LagrangianLinearTIR, size=1)], array([[1.]]), array([-6.71985]))
    """

    key: tuple
    interactions: list
    q: np.ndarray
    W: object = None
    constant: bool = False
    glob: tuple | None = None
    sizes: list = field(default_factory=list)
    H: object = None          # the active rows G0 (m x ndof), when the integrator has them assembled
    vfree: np.ndarray | None = None
    osi: object = None        # the integrator's run (``osi.iteration_matrix()`` gives the stacked M̂)
    warm: np.ndarray | None = None   # the warm start (the run keeps the multipliers stacked)
    laws: list | None = None         # the interactions' laws
    trusted_W: bool = False          # W built by a compiled assembly in validated form (canonical CSR, finite)
    mu: np.ndarray | None = None     # the laws' friction coefficients (read-only, checked), when at hand
    factors: object = None           # W's factors (DelassusFactors: W = H M̂⁻¹ Hᵀ, M̂ diagonal), when at hand


@dataclass
class StepRecord:
    r"""What a step solved, for ``TimeStepping(..., on_step=f)`` (an adjoint sweep needs it per step).

    ``k``, ``t``: the step (1-based) and its end time; ``active``: the interactions of the index set
    (in the problem's row order); ``problem``: the one-step problem solved last (W, q; None without
    contact) and ``solution`` its :class:`nsopt.Solution`; ``lam`` the stacked impulses of the active
    rows; ``vfree`` the free velocity; ``ydot`` the outputs :math:`\dot y_k` of the active rows that the
    restitution term of q reads (:math:`q = Hv_{free} + e\odot\dot y_k`); ``newton``: (iterations,
    residual, converged). :meth:`rows` gives the active rows H (G0, m x ndof) of that problem,
    ``iteration_matrix()`` M̂ and :meth:`solve_iteration_matrix` :math:`\hat M^{-1}X` with the step's own
    factors. The adjoint of a differentiable run (:mod:`nsopt.modeling.differentiable`) reads these
    and nothing else of the step: the step is assembled once, by the run.

    Attributes
    ----------
    k : int
        The step, 1-based.
    t : float
        Its end time.
    active : list of Interaction
        The interactions of the index set, in the problem's row order.
    problem : Problem or None
        The one-step problem solved last (None without contact).
    solution : nsopt.Solution or None
        Its solution.
    lam : numpy.ndarray
        The stacked impulses of the active rows.
    vfree : numpy.ndarray
        The free velocity.
    newton : tuple
        (iterations, residual, converged).
    ydot : numpy.ndarray or None
        The outputs :math:`\dot y_k` of the active rows at the step's start (None without contact, or
        from an integrator without a restitution term).

    Examples
    --------
    >>> from nsopt import modeling as nm
    >>> ball = nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-9.81])
    >>> nsds = nm.NonSmoothDynamicalSystem(0.0, 0.5)
    >>> inter = nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0]])), ball)
    >>> records = []
    >>> _ = nm.TimeStepping(nsds, h=0.01, on_step=records.append).run()
    >>> rec = next(r for r in records if r.problem is not None)
    >>> rec.k, round(rec.t, 6), rec.problem, rec.lam.round(5), rec.newton
    (46, 0.46, LCP(n=1, dense), array([6.71985]), (1, 0.0, True))
    >>> rec.rows(), rec.iteration_matrix().toarray(), rec.ydot.round(5), rec.solve_iteration_matrix(rec.vfree).round(5)
    (array([[1.]]), array([[1.]]), array([-4.4145]), array([-4.5126]))
    """

    k: int
    t: float
    active: list
    problem: object
    solution: object
    lam: np.ndarray
    vfree: np.ndarray
    newton: tuple
    _rows: object = None
    _mhat: object = None
    ydot: np.ndarray | None = None
    _minv: object = None

    def rows(self):
        """The active rows H = G0 (scipy sparse or dense) of the step's problem: W = H M̂⁻¹ Hᵀ (+ D)."""
        return self._rows() if callable(self._rows) else self._rows

    def iteration_matrix(self):
        """M̂ of the step (block diagonal, sparse)."""
        return self._mhat()

    def solve_iteration_matrix(self, X):
        r""":math:`\hat M^{-1}X` by the step's factors of M̂ (X: (ndof,) or (ndof, k))."""
        return self._minv(X)


def factor_iteration_matrix(W, owner="W"):
    """The kept factorisation (:class:`nsopt.linalg.LU`) of an iteration matrix W: division for a
    diagonal one (``.d`` its diagonal, else None), LU otherwise; a singular or non-finite W is a
    :class:`ModelingError`."""
    W = np.asarray(W, dtype=float)
    f = factorise(W, diagonal=True)
    if f is None:
        diag = not np.any(W - np.diag(np.diag(W)))
        what = ("is not finite" if not np.all(np.isfinite(W)) else
                "is singular (zero on its diagonal)" if diag else "is singular")
        raise ModelingError(owner, "iteration matrix", what)
    return f


def iteration_matrix(ds, h, th, t, q, v):
    r"""(:math:`\hat M = M(q) + h\theta C + h^2\theta^2 K`, M(q)) of one system at (t, q, v), with
    :math:`K = -\partial F/\partial q`, :math:`C = -\partial F/\partial v` (Siconos' W)."""
    M = ds.mass(q)
    W = np.array(M, dtype=float)
    Kq, Cv = ds.jacobian_forces(t, q, v)
    if Cv is not None:
        W += h * th * Cv
    if Kq is not None:
        W += h * h * th * th * Kq
    return W, M


def linear_residual(Ks, Cs, fe0, fe1, qk, vk, h, th, Fth=None):
    r"""Siconos' residual of a linear time-invariant system at the start of a step,
    :math:`R = hCv_k + hKq_k + h^2\theta Kv_k - h((1-\theta)F_{ext}(t_k) + \theta F_{ext}(t_{k+1}))`
    (K, C None: absent; ``Fth``: the F_ext part when precomputed); :math:`v_{free} = v_k - \hat M^{-1}R`."""
    R = np.zeros(vk.shape[0])
    if Cs is not None:
        R += h * (Cs @ vk)
    if Ks is not None:
        R += h * h * th * (Ks @ vk) + h * (Ks @ qk)
    if Fth is not None:
        R -= Fth
    elif fe0 is not None:
        R -= h * (1 - th) * fe0 + h * th * fe1
    return R


def restitution_rows(law) -> np.ndarray:
    """The per-row coefficient c of a standard law's restitution term c ⊙ ẏ_k (linear in ẏ_k)."""
    r = law.restitution(np.ones(law.size))
    return np.zeros(law.size) if r is None else np.asarray(r, dtype=float)


def same_matrix(A, B) -> bool:
    """True when A and B hold the same numbers in the same storage (both dense, or both CSR with the
    same pattern): the test that lets a step reuse the last problem when the rows G0 that make its W
    did not change."""
    if B is None or type(A) is not type(B) or A.shape != B.shape:
        return False
    if isinstance(A, np.ndarray):
        return bool(np.array_equal(A, B))
    return (sp.isspmatrix_csr(A) and np.array_equal(A.indptr, B.indptr) and np.array_equal(A.indices, B.indices)
            and np.array_equal(A.data, B.data))


def _same_rows(a, b) -> bool:
    """(rows, extras) equal: the rows by :func:`same_matrix`, the extra blocks entry for entry."""
    if b is None or len(a[1]) != len(b[1]) or not same_matrix(a[0], b[0]):
        return False
    return all(o == p and np.array_equal(E, F) for (o, E), (p, F) in zip(a[1], b[1]))


def _ranges(starts, lengths):
    """The concatenated ranges [starts[i], starts[i] + lengths[i]) (vectorized np.arange)."""
    lengths = np.asarray(lengths, dtype=np.intp)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.intp)
    offs = np.zeros(lengths.shape[0], dtype=np.intp)
    np.cumsum(lengths[:-1], out=offs[1:])
    return np.repeat(np.asarray(starts, dtype=np.intp) - offs, lengths) + np.arange(total, dtype=np.intp)


def _stack_blocks(ops, sizes):
    """The block-diagonal (CSR) of per-system operators (None: zero), or None when all are None."""
    if all(o is None for o in ops):
        return None
    return sp.block_diag([sp.csr_matrix((n, n)) if o is None else o for o, n in zip(ops, sizes)], format="csr")


def _readonly(a):
    a.flags.writeable = False
    return a


# ============================================================================ systems
class _Systems:
    """The stacking of the systems (positions k = 0, 1, ...: the model's order), the factors of their
    iteration matrices and what the step asks of them (free velocity, kinematics, Newton residual).

    Constant members (``constant[k]``: M̂ never changes) share stacked K, C (CSR over all columns, zero
    blocks elsewhere) and F_ext, and their factors are computed once; the others are evaluated one by
    one at every Newton iterate. ``per_system`` (the reference path): the constant members one by one
    too. Kept across topology changes that keep the same systems (:meth:`of`)."""

    def __init__(self, systems, h, th, prev=None, per_system=False):
        self.systems = tuple(systems)
        self.h, self.theta, self.per_system = h, th, per_system
        n_s = len(self.systems)
        sizes = [ds.n for ds in self.systems]
        qsizes = [getattr(ds, "qdim", ds.n) for ds in self.systems]
        self.voff = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
        self.qoff = np.concatenate([[0], np.cumsum(qsizes)]).astype(np.intp)
        self.nv, self.nq = int(self.voff[-1]), int(self.qoff[-1])
        self.offsets = list(zip(self.voff[:-1].tolist(), self.voff[1:].tolist()))
        self.ranges = [np.arange(a, b) for a, b in self.offsets]
        self.qranges = self.ranges if self.qoff is self.voff or np.array_equal(self.qoff, self.voff) else \
            [np.arange(a, b) for a, b in zip(self.qoff[:-1].tolist(), self.qoff[1:].tolist())]
        self.index = {id(ds): k for k, ds in enumerate(self.systems)}
        self.constant = np.array([ds.constant_iteration_matrix for ds in self.systems], dtype=bool)
        self.iterate = not bool(np.all(self.constant))        # Newton iterations: a nonlinear system
        self.nonconstant = np.flatnonzero(~self.constant).tolist()
        kept = {}
        if prev is not None and (prev.h, prev.theta) == (h, th):
            kept = {id(ds): f for ds, f, c in zip(prev.systems, prev.factors, prev.constant) if c}
        self.factors = [None] * n_s
        for k, ds in enumerate(self.systems):
            if self.constant[k]:
                f = kept.get(id(ds))
                if f is None:
                    z = np.zeros(ds.n)
                    f = factor_iteration_matrix(iteration_matrix(ds, h, th, 0.0, np.zeros(qsizes[k]), z)[0], label(ds))
                self.factors[k] = f
        self.refresh_diag()
        # the constant members' stacked operators
        cons = [ds if c else None for ds, c in zip(self.systems, self.constant)]
        self.K = _stack_blocks([getattr(ds, "K", None) if ds is not None else None for ds in cons], sizes)
        self.C = _stack_blocks([getattr(ds, "C", None) if ds is not None else None for ds in cons], sizes)
        self.has_fext = any(ds is not None and ds.has_fext for ds in cons)
        self.const_fext = all(ds is None or ds.constant_fext for ds in cons)
        self.Fth = None
        if self.has_fext and self.const_fext:
            fe = self.fext(0.0)
            self.Fth = h * (1 - th) * fe + h * th * fe
        # rigid bodies (NewtonEulerDS: q = position + quaternion (7), v = twist (6)): their kinematics
        # (positions) by ne_positions, the others' by the Lagrangian update
        ne = [k for k, ds in enumerate(self.systems) if isinstance(ds, NewtonEulerDS)]
        self.ne = None
        if ne:
            lag = [k for k in range(n_s) if k not in set(ne)]
            self.ne = (self.qoff[ne].copy(), self.voff[ne].copy())
            cat = (lambda rs: np.concatenate(rs) if rs else np.zeros(0, dtype=np.intp))
            self.lag_q, self.lag_v = cat([self.qranges[k] for k in lag]), cat([self.ranges[k] for k in lag])
        ns = set(sizes)
        self.n_uniform = ns.pop() if len(ns) == 1 and (self.nq == self.nv or self.ne is not None) else 0
        self._Rd = None              # M̂⁻¹R = -M̂⁻¹ h F_ext,θ when F_ext is constant and there is no K, C (at first use)

    @classmethod
    def of(cls, systems, h, th, prev, per_system):
        """``prev`` when it stacks the same systems in the same order with the same h, θ, else a new one."""
        if (prev is not None and len(prev.systems) == len(systems) and (prev.h, prev.theta) == (h, th)
                and prev.per_system == per_system and all(a is b for a, b in zip(prev.systems, systems))):
            return prev
        return cls(systems, h, th, prev, per_system)

    def refresh_diag(self):
        self.all_diag = all(f is not None and f.d is not None for f in self.factors)
        self.d = np.concatenate([f.d for f in self.factors]) if self.all_diag and self.factors else np.zeros(0)

    def fext(self, t):
        """The constant members' F_ext(t), stacked (zeros elsewhere)."""
        return np.concatenate([np.zeros(ds.n) if not ds.has_fext or not c else ds.fext(t)
                               for ds, c in zip(self.systems, self.constant)]) if self.systems else np.zeros(0)

    def minv(self, X):
        """M̂⁻¹ X for X (nv,) or (nv, k), dense or sparse (sparse X comes back sparse when M̂ is diagonal)."""
        if self.all_diag:
            d = self.d
            if sp.issparse(X):
                return sp.diags(1.0 / d) @ X
            return X / d if X.ndim == 1 else X / d[:, None]
        if sp.issparse(X):
            X = X.toarray()
        out = np.empty_like(X)
        for f, (a, b) in zip(self.factors, self.offsets):
            out[a:b] = f.solve(X[a:b])
        return out

    def minv_arg(self):
        """M̂⁻¹ as :func:`nsopt.problems._delassus.delassus` takes it: the diagonal, or the solve."""
        return self.d if self.all_diag else self.minv

    def iteration_matrix(self):
        """The stacked M̂ = M + hθC + h²θ²K of all systems (sparse, block diagonal)."""
        return sp.block_diag([sp.diags(f.d) if f.d is not None else sp.csr_matrix(f.matrix) for f in self.factors],
                             format="csr")

    # ---- the step
    def begin(self, t0, qk, vk):
        """F_k = F(t_k, q_k, v_k) of the nonconstant members (Newton's residual needs it)."""
        return {k: self.systems[k].forces(t0, qk[self.qranges[k]], vk[self.ranges[k]]) for k in self.nonconstant}

    def free_velocity(self, t0, t1, qk, vk, q, v, Fk):
        r""":math:`v_{free}` (nv,) at the Newton iterate (q, v) (the first: :math:`q_k + hv_k`, :math:`v_k`):
        the constant members' :math:`v_k - \hat M^{-1}R` (:func:`linear_residual`), the others'
        :math:`v - \hat M(q)^{-1}[M(q)(v - v_k) - h(1-\theta)F_k - h\theta F(t_{k+1}, q, v)]`, their
        factors refreshed at the iterate."""
        h, th = self.h, self.theta
        own = {}
        for k in self.nonconstant:          # their factors first (M̂⁻¹ of the stacked part needs them)
            ds, r, rq = self.systems[k], self.ranges[k], self.qranges[k]
            W, M = iteration_matrix(ds, h, th, t1, q[rq], v[r])
            f = self.factors[k] = factor_iteration_matrix(W, label(ds))
            R = M @ (v[r] - vk[r]) - h * (1 - th) * Fk[k] - h * th * ds.forces(t1, q[rq], v[r])
            own[k] = v[r] - f.solve(R)
        if own:
            self.refresh_diag()
        if self.per_system:
            vfree = np.empty(self.nv)
            for k, ds in enumerate(self.systems):
                r = self.ranges[k]
                if not self.constant[k]:
                    continue
                if not ds.has_state_forces and not ds.has_fext:
                    vfree[r] = vk[r]
                    continue
                Kk, Ck = ds.jacobian_forces(t0, qk[self.qranges[k]], vk[r])
                R = linear_residual(Kk, Ck, ds.fext(t0), ds.fext(t1), qk[self.qranges[k]], vk[r], h, th)
                vfree[r] = vk[r] - self.factors[k].solve(R)
        elif self.K is None and self.C is None and not self.has_fext:
            vfree = vk.copy() if self.nonconstant else vk
        elif self.K is None and self.C is None and self.const_fext and not self.nonconstant:
            vfree = vk - self.constant_residual_shift()
        else:
            fe0 = fe1 = None
            if self.has_fext and not self.const_fext:
                fe0, fe1 = self.fext(t0), self.fext(t1)
            R = linear_residual(self.K, self.C, fe0, fe1, qk, vk, h, th, self.Fth)
            vfree = vk - self.minv(R)
        for k, vf in own.items():
            vfree[self.ranges[k]] = vf
        return vfree

    def constant_residual_shift(self):
        r""":math:`\hat M^{-1}R` of a step of constant members without K or C and a constant F_ext,
        :math:`R = -h[(1-\theta)+\theta]F_{ext}` (:func:`linear_residual`): the same every step, so that
        :math:`v_{free} = v_k - \hat M^{-1}R` (the general step's and the fused phases' ``Rd``)."""
        if self._Rd is None:
            R = np.zeros(self.nv)
            if self.has_fext:
                R -= self.Fth
            self._Rd = self.minv(R)
        return self._Rd

    def positions(self, qk, vk, v):
        r"""The kinematics: :math:`q_{k+1} = q_k + h[(1-\theta)v_k + \theta v_{k+1}]` (:func:`~nsopt.modeling._kernels.position`)
        and max |q_{k+1}|. A group whose q is not v (a rigid body's quaternion) replaces this with its
        own map on its ``qranges`` (:func:`~nsopt.modeling.newton_euler.ne_positions`)."""
        out = np.empty(self.nq)
        c1, c2 = self.h * (1 - self.theta), self.h * self.theta
        if self.ne is None:
            return out, K.positions(qk, vk, v, c1, c2, out)
        top = 0.0
        if self.lag_q.shape[0]:
            x = np.empty(self.lag_q.shape[0])
            top = K.positions(qk[self.lag_q], vk[self.lag_v], v[self.lag_v], c1, c2, x)
            out[self.lag_q] = x
        top_ne = ne_positions(qk, vk, v, self.ne[0], self.ne[1], c1, c2, out)
        return out, (top_ne if not top_ne <= top else top)

    def residual(self, t1, vk, q, v, p, Fk):
        """Siconos' Newton residual of the nonconstant members: max ‖M(v - v_k) - h(1-θ)F_k - hθF - p‖."""
        h, th, res = self.h, self.theta, 0.0
        for k in self.nonconstant:
            ds, r, rq = self.systems[k], self.ranges[k], self.qranges[k]
            R = ds.mass(q[rq]) @ (v[r] - vk[r]) - h * (1 - th) * Fk[k] - h * th * ds.forces(t1, q[rq], v[r]) - p[r]
            res = max(res, float(np.linalg.norm(R)))
        return res


# ============================================================================ relations
class _Group:
    """Interactions whose scleronomous relations share one batched evaluation (``batch_key``)."""

    __slots__ = ("Z", "both", "cols", "entries", "index", "qcols", "rel", "rels", "rows")

    def __init__(self, rel):
        self.rel, self.index, self.rels, self.entries = rel, [], [], []
        self.both = getattr(rel, "h_G0_batch", None)     # h and G0 by one evaluation (rigid contacts, joints)

    def _members(self, sel):
        if sel is None:
            return self.Z, self.rels
        return self.Z[sel], None if self.rels is None else list(map(self.rels.__getitem__, sel.tolist()))

    def h(self, Q, sel=None):
        return self.rel.h_batch(Q, *self._members(sel))

    def G0(self, Q, sel=None):
        return self.rel.G0_batch(Q, *self._members(sel))

    def h_G0(self, Q, sel=None):
        """(h, G0) at Q: one evaluation where the relation has one (``h_G0_batch``)."""
        if self.both is None:
            return self.h(Q, sel), self.G0(Q, sel)
        return self.both(Q, *self._members(sel))


class _Singles:
    """Interactions evaluated one at a time through their relation's methods (rheonomous and compliant
    relations, laws with their own restitution, and every interaction on the reference path): the
    per-interaction formulas, writing into the stacked rows."""

    def __init__(self, index, inters, qcols, cols, Z, bounds, std, gap_slot):
        self.index = index                      # interaction positions
        self.gap_slot = gap_slot                # per member: its slot in the stepper's compliant gaps (or -1)
        self.inters = [inters[j] for j in index]
        self.qcols, self.cols, self.Z = qcols, cols, Z
        self.bounds = [bounds[j] for j in index]
        self.std = std                          # erow valid (a standard law) per member
        self.compliant = [i.relation.compliant for i in self.inters]

    def rows(self, act, t1, q, qk, vk, vfree, y1k, lam0k, h, th, erow, look):
        """Per active member: (j, G0, row scale, extra diagonal block or None, q part, G0 for the output
        or None): the per-interaction rows of the one-step problem (``formulations/time_stepping.md``), at
        the iterate q (the look-ahead members ``look``: at q_k)."""
        out = []
        for s, j in enumerate(self.index):
            if not act[j]:
                continue
            inter, rel, (lo, hi) = self.inters[s], self.inters[s].relation, self.bounds[s]
            Q, Z, c = (qk if look[j] else q)[self.qcols[s]], self.Z[s], self.cols[s]
            if rel.compliant:
                lam0 = lam0k[lo:hi]
                G0 = rel.G0(Q, t1, lam0, Z)
                G1 = rel.G1(Q, t1, lam0, Z)
                qv = rel.h(Q, t1, lam0, Z) + G0 @ (qk[self.qcols[s]] + h * (1 - th) * vk[c] + h * th * vfree[c] - Q)
                extra = None
                if G1 is not None:
                    qv = qv - G1 @ lam0
                    extra = G1 / h
                out.append((j, G0, h * th, extra, qv, None))
                continue
            G0 = rel.G0(Q, t1, None, Z)
            qv = G0 @ vfree[c]
            hd = rel.hdot(Q, t1, Z)
            if hd is not None:
                qv = qv + hd
            if self.std[s]:
                qv = qv + erow[lo:hi] * y1k[lo:hi]
            else:
                r = inter.nslaw.restitution(y1k[lo:hi])
                if r is not None:
                    qv = qv + r
            out.append((j, G0, 1.0, getattr(rel, "D", None), qv, G0))
        return out

    def outputs(self, t, q, v, L0, L1, Y0, Y1, gap, sel, used, lam0_prev, h):
        """The members' outputs at (t, q, v) into Y0, Y1 (and their gap y(λ=0)[0] into ``gap`` for
        compliant ones): y = h(Q, t, λ0, Z), ẏ = G0 V (+ ∂h/∂t) (+ Dλ1), with the G0 the problem used
        for the active members (``used``); compliant: ẏ = G0 V + G1(λ0 - λ0,prev)/h."""
        for s, j in enumerate(self.index):
            if sel is not None and not sel[j]:
                continue
            rel, (lo, hi) = self.inters[s].relation, self.bounds[s]
            Q, V, Z = q[self.qcols[s]], v[self.cols[s]], self.Z[s]
            lam0, lam1 = L0[lo:hi], L1[lo:hi]
            if rel.compliant:
                Y0[lo:hi] = rel.h(Q, t, lam0, Z)
                gap[self.gap_slot[s]] = rel.h(Q, t, np.zeros(hi - lo), Z)[0]
                G1 = rel.G1(Q, t, lam0, Z)
                y1 = rel.G0(Q, t, lam0, Z) @ V
                if G1 is not None and lam0_prev is not None:
                    y1 = y1 + G1 @ (lam0 - lam0_prev[lo:hi]) / h
                Y1[lo:hi] = y1
                continue
            Y0[lo:hi] = rel.h(Q, t, lam0, Z)
            y1 = rel.velocity(Q, V, t, lam1, Z, None if used is None else used.get(j))
            D = getattr(rel, "D", None)
            if D is not None:
                y1 = y1 + D @ lam1
            Y1[lo:hi] = y1


# ============================================================================ the stepper
class MoreauJeanStepper:
    """The run of a :class:`~nsopt.modeling.MoreauJeanOSI` inside one simulation (see the module
    docstring): built by ``MoreauJeanOSI.start(sim)``, stepped by the simulation, rebuilt or updated
    in place when the model's topology changes.

    State (one array ``buf``: q (nq), v (nv), p (nv), y0, y1, λ0, λ1 (m each), the layout the
    trajectory records), warm starts ``warm`` (m), compliant gaps ``gap``; all indexed by position.
    """

    def __init__(self, osi, sim, prev=None, source=None):
        """``prev``: the stepper this one replaces after a topology change (systems, kept interactions'
        rows, factors and memos are taken from it); ``source``: a stepper whose state this run
        continues (``TimeStepping(continue_from=...)``); neither: the initial conditions."""
        nsds = sim.nsds
        self.osi = osi
        self.sim = sim
        self.h, self.theta, self.gamma, self.thr = sim.h, osi.theta, osi.gamma, osi.activation_threshold
        self.batch = osi.batch
        self.projection = osi.projection is not False      # (acts only on rigid bodies' unilateral contacts)
        self.projection_info = None                         # the last step's projection (MoreauJeanOSI docstring)
        self.builtin = sim.osns_kind not in sim.custom_osns
        self.gfc = sim.osns_kind == "gfc3d"
        self.version = nsds._version
        live = {id(i) for i in nsds.interactions}           # id(inter) -> (inter, S, systems, law, rel, facts)
        self.memo = {} if prev is None else {k: f for k, f in prev.memo.items() if k in live}
        self.parked = collections.OrderedDict() if prev is None else prev.parked
        self.sys = _Systems.of(nsds.dynamical_systems, self.h, self.theta, None if prev is None else prev.sys,
                               not self.batch)
        S = self.sys
        if self.projection and S.ne is not None:
            # a projected contact ends at y = 0 to the linearisation's error: it stays in the index set
            self.thr = self.thr + osi.projection_activation
        self.sparse = S.nv > SPARSE_DOFS
        self.nq, self.nv = S.nq, S.nv
        self.inters = list(nsds.interactions)
        self.alive, self.n_dead = np.ones(len(self.inters), dtype=bool), 0
        facts = [self._facts(i) for i in self.inters]
        self.P = self._primary(facts, self.inters)
        self._secondary()
        if osi.projection is True:
            self._projectable()                          # (a unilateral interaction on another system: an error)
        self._gather(prev if prev is not None else source, t=sim.t)
        self.key = self.pattern = self.rows = None      # the last problem's key, its G0 pattern, its rows
        self.pending = None
        self.count = sim.k                               # the steps taken to this state
        self.last = None                                 # (active, λ, vfree, rows, where ẏ_k is) of the last step, for on_step
        self._sys_at = None                              # id(system) -> its position (state_of), built when asked

    # ------------------------------------------------------------------ facts and layout
    def _facts(self, inter) -> tuple:
        """What the stepper needs of one interaction that changes only with the stacking of the systems,
        its systems, law, relation and the path (memo: ``self.memo``): (size, unilateral, restitution
        rows, v columns, kind (0 linear, 1 group, 2 one by one), H.ravel(), D, batch key, system
        indices, constant offset b, law, relation constant, q columns, standard law)."""
        dss, law, rel, S = inter.systems, inter.nslaw, inter.relation, self.sys
        kept = self.memo.get(id(inter))
        if kept is not None and kept[0] is inter and kept[1] is S and kept[2] is dss and kept[3] is law \
                and kept[4] is rel:
            return kept[5]
        if not dss:
            raise ModelingError(label(inter), "systems", "is not linked to any system")
        if any(id(ds) not in S.index for ds in dss):
            raise ModelingError(label(inter), "systems", "joins a system that is not part of this model")
        std = type(law) in LAWS
        kind = 2
        if self.batch and std:
            kind = 0 if type(rel) is LagrangianLinearTIR else \
                1 if type(rel) is LagrangianScleronomousR or rel.kind == "newton_euler" else 2
        ix = [S.index[id(ds)] for ds in dss]
        cols = S.ranges[ix[0]] if len(ix) == 1 else np.concatenate([S.ranges[ix[0]], S.ranges[ix[1]]])
        qcols = cols if S.qranges is S.ranges else (S.qranges[ix[0]] if len(ix) == 1 else
                                                    np.concatenate([S.qranges[ix[0]], S.qranges[ix[1]]]))
        lin = kind == 0
        f = (inter.size, bool(law.unilateral), restitution_rows(law) if std else np.zeros(inter.size), cols, kind,
             rel.H.ravel() if lin else None, rel.D if lin else None, rel.batch_key() if kind == 1 else None,
             tuple(ix), rel.offset(None) if lin and rel.F is None else None, law, rel.constant, qcols, std)
        self.memo[id(inter)] = (inter, S, dss, law, rel, f)
        return f

    def _Z(self, inter):
        dss = inter.systems
        if len(dss) == 1:
            return dss[0].z
        a, b = dss[0].z, dss[1].z
        return _NOZ if a.shape[0] == 0 and b.shape[0] == 0 else np.concatenate([a, b])

    def _primary(self, facts, inters) -> dict:
        """The interactions' data stacked (from their facts): per interaction ``sizes``, ``unilateral``,
        ``const`` (relation constant), ``kind``, ``nloc`` (columns), ``nsys``, ``keys`` (batch key),
        ``laws``, ``relation``, ``friction`` (a Coulomb law), ``std``, ``compliant``; per stacked row ``erow`` (restitution) and ``b`` (the linear
        relations' offset b + FZ); per column ``cols`` and ``qcols`` (global); per entry ``E_val`` (H of
        the linear relations, row-major, zeros for the others); per slot ``body`` (the systems); ``D``:
        {interaction: D}. Appending interactions concatenates these."""
        n_i = len(facts)
        (sz, uni, er, cols, kind, Hs, Ds, keys, bodies, bs, laws, const, qcols, std) = zip(*facts) if n_i else ((),) * 14
        cat = (lambda a, dt=float: np.concatenate(a) if a else np.zeros(0, dtype=dt))
        sizes = np.array(sz, dtype=np.intp)
        nloc = np.fromiter(map(len, cols), dtype=np.intp, count=n_i)
        qnloc = np.fromiter(map(len, qcols), dtype=np.intp, count=n_i)      # (7 per rigid body, not 6)
        kinds = np.array(kind, dtype=np.int8)
        counts = sizes * nloc
        E_val = np.zeros(int(counts.sum()))
        b = np.zeros(int(sizes.sum()))
        li = np.flatnonzero(kinds == 0)
        if li.size:
            starts = np.cumsum(counts) - counts
            E_val[_ranges(starts[li], counts[li])] = np.concatenate([Hs[j] for j in li.tolist()])
            first = np.cumsum(sizes) - sizes
            b[_ranges(first[li], sizes[li])] = np.concatenate(
                [inters[j].relation.offset(self._Z(inters[j])) if bs[j] is None else bs[j] for j in li.tolist()])
        key_arr = np.empty(n_i, dtype=object)
        key_arr[:] = keys
        law_arr = np.empty(n_i, dtype=object)
        law_arr[:] = laws
        rel_arr = np.empty(n_i, dtype=object)
        rel_arr[:] = [i.relation for i in inters]
        fric = np.fromiter((isinstance(law, NewtonImpactFrictionNSL) for law in laws), dtype=bool, count=n_i)
        nsys = np.fromiter(map(len, bodies), dtype=np.intp, count=n_i)
        return {"sizes": sizes, "unilateral": np.array(uni, dtype=bool), "const": np.array(const, dtype=bool),
                "kind": kinds, "nloc": nloc, "qnloc": qnloc, "nsys": nsys, "keys": key_arr, "laws": law_arr, "relation": rel_arr, "friction": fric, "erow": cat(er),
                "std": np.array(std, dtype=bool),
                "compliant": np.array([i.relation.compliant for i in inters], dtype=bool),
                "b": b, "cols": cat(cols, np.intp).astype(np.intp, copy=False),
                "qcols": cat(qcols, np.intp).astype(np.intp, copy=False), "E_val": E_val,
                "body": np.fromiter(itertools.chain.from_iterable(bodies), dtype=np.intp, count=int(nsys.sum())),
                "D": {j: Ds[j] for j in li.tolist() if Ds[j] is not None}}

    @staticmethod
    def _joined(P, Q) -> dict:
        """Primary data of the interactions of ``P`` followed by those of ``Q``."""
        n = P["sizes"].shape[0]
        out = {k: np.concatenate([P[k], Q[k]]) for k in P if k != "D"}
        out["D"] = {**P["D"], **{j + n: D for j, D in Q["D"].items()}}
        return out

    def _secondary(self):
        """What follows from the primary data and the interactions: the stacked layout (rows, entries,
        columns, slots), the groups of scleronomous relations, the one-by-one members, the linear
        relations' H and b, the block plan of W, the fused compiled phases of linear time-invariant models."""
        P, inters, S = self.P, self.inters, self.sys
        n_i = len(inters)
        sizes, nloc, nsys = P["sizes"], P["nloc"], P["nsys"]
        self.sizes, self.nsys, self.slot_body = sizes, nsys, P["body"]
        self.unilateral, self.erow, self.E_val = P["unilateral"], P["erow"], P["E_val"]
        self.unil_off = ~self.unilateral
        self.constant_relations = bool(np.all(P["const"][self.alive]))
        first = np.cumsum(sizes) - sizes
        self.first, self.mtot = first, int(sizes.sum())
        self.row_inter = np.repeat(np.arange(n_i), sizes)
        counts = sizes * nloc
        self.E_start = np.cumsum(counts) - counts
        cstart = np.cumsum(nloc) - nloc
        qnloc = P["qnloc"]
        qstart = np.cumsum(qnloc) - qnloc
        allcols, allq = P["cols"], P["qcols"]
        self._layout, self._entries = (nloc, counts, cstart, allcols), None    # the entries' index: at first use
        kinds = P["kind"]
        lin_index = np.flatnonzero(kinds == 0)
        self.D = list(P["D"].items())
        body = P["body"]
        two = (np.cumsum(nsys) - nsys)[nsys == 2]
        self.unique_entries = not np.any(body[two] == body[two + 1])
        self.bounds = list(zip(first.tolist(), (first + sizes).tolist()))
        self._activation_rules(first, nsys, body)
        # groups of scleronomous relations (one evaluation per group)
        nonlin = np.flatnonzero(kinds == 1)
        # each interaction's group: its batch key's number in the order of first appearance, kept for the ones
        # before an append (_append: the stepper's interactions are a prefix of the new ones)
        ids, done = self.__dict__.get("_batch_ids") or ({}, np.zeros(0, dtype=np.intp))
        tail = np.flatnonzero(kinds[done.shape[0]:] == 1) + done.shape[0]
        gid_all = np.concatenate([done, np.full(n_i - done.shape[0], -1, dtype=np.intp)])
        gid_all[tail] = [ids.setdefault(k, len(ids)) for k in P["keys"][tail].tolist()]
        self._batch_ids = (ids, gid_all)
        gid = gid_all[nonlin]
        order = np.argsort(gid, kind="stable")          # the interactions of each batch key, in order
        cuts = np.searchsorted(gid[order], np.arange(len(ids) + 1))
        self.groups = []
        for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
            idx = nonlin[order[a:b]]
            g = _Group(inters[idx[0]].relation)
            g.index = idx
            members = idx.tolist()
            sel = _ranges(cstart[idx], nloc[idx])
            g.cols = allcols[sel].reshape(idx.shape[0], -1)
            g.qcols = allq[_ranges(qstart[idx], qnloc[idx])].reshape(idx.shape[0], -1)
            g.Z = (np.zeros((idx.shape[0], 0)) if g.rel.nz == 0 else
                   np.array([self._Z(inters[j]) for j in members]).reshape(idx.shape[0], g.rel.nz))
            g.rows = (first[idx][:, None] + np.arange(g.rel.m)).ravel()
            g.rels = None if g.rel.vectorized else P["relation"][idx].tolist()
            self.groups.append(g)
        # one by one
        one = np.flatnonzero((kinds == 2) & self.alive)
        comp = np.flatnonzero(P["compliant"] & self.alive)
        self.gap_at = comp.astype(np.intp)                 # the compliant interactions: their gap y(λ=0)[0]
        slot = {j: k for k, j in enumerate(comp.tolist())}
        qspan = [allq[qstart[j]:qstart[j] + qnloc[j]] for j in one.tolist()]
        vspan = [allcols[cstart[j]:cstart[j] + nloc[j]] for j in one.tolist()]
        self.singles = _Singles(one.tolist(), inters, qspan, vspan, [self._Z(inters[j]) for j in one.tolist()],
                                self.bounds, P["std"][one].tolist(),
                                [slot.get(j, -1) for j in one.tolist()]) if one.size else None
        self.scale = None
        if comp.size:
            self.scale = np.ones(self.mtot)
            self.scale[_ranges(first[comp], sizes[comp])] = self.h * self.theta
        if lin_index.size:
            li = lin_index
            self.lin_rows = _ranges(first[li], sizes[li])
            ent = _ranges(self.E_start[li], counts[li])                # the linear interactions' entries
            ptr = np.zeros(self.lin_rows.shape[0] + 1, dtype=np.int32)
            np.cumsum(np.repeat(nloc[li], sizes[li]), out=ptr[1:])
            own = np.repeat(li, counts[li])
            col = allcols[cstart[own] + (ent - self.E_start[own]) % nloc[own]]
            self.H_lin = sp.csr_matrix((self.E_val[ent], col.astype(np.int32), ptr),
                                       shape=(self.lin_rows.shape[0], S.nv))     # row-major entries: CSR
            self.H_lin.sort_indices()
            self.b_lin = P["b"][self.lin_rows]
        else:
            self.lin_rows = None
        self.inter_arr = np.empty(n_i, dtype=object)
        self.inter_arr[:] = inters
        self.law_arr = P["laws"]
        self.__dict__.pop("_mu_all", None)
        self.__dict__.pop("_proj", None)
        self._minv_d = None      # (M̂'s diagonal, its inverse): W's factors (_minv_diag)
        self._blocks = (self._block_plan() if self.batch and self.sparse and S.all_diag and not S.iterate and not self.D
                        and self.singles is None and self.builtin and not self.gfc else None)
        # the fused compiled phases (nsopt.modeling._kernels) of linear time-invariant models
        self.fused_phases = (self.batch and not self.lookahead and not self.groups and self.singles is None and not self.D
                     and S.K is None
                     and S.C is None and S.const_fext and S.all_diag and not S.iterate and not self.gfc
                     and S.nq == S.nv)
        if self.fused_phases:
            self.Rd = S.constant_residual_shift()
            if self.lin_rows is None:
                self.H_lin, self.b_lin = sp.csr_matrix((0, S.nv)), np.zeros(0)
            self.H_lin.sort_indices()
            self.Hd, self._sets = self.H_lin.toarray(), {}
            self.gh = self.gamma * self.h
            self.c1, self.c2 = self.h * (1 - self.theta), self.h * self.theta
            self._no_rows, self._no_Ha, self._no_lam = np.zeros(0, dtype=np.intp), np.zeros((0, S.nv)), np.zeros(0)
            self._act = np.empty(n_i, dtype=np.bool_)
            self._cur = (np.zeros(0, dtype=np.bool_), self._no_rows, self._no_Ha, np.zeros(0), None, [], [], None)

    def _activation_rules(self, first, nsys, body):
        r"""Which unilateral interactions take the look-ahead rule (``look``: :func:`~nsopt.modeling._kernels.reaches`,
        their Jacobians at :math:`q_k`; the others Siconos' :func:`~nsopt.modeling._kernels.closes`), per
        ``MoreauJeanOSI(activation=)``: "lookahead" all, "siconos" none, None those whose systems are all
        :class:`~nsopt.modeling.NewtonEulerDS`; and ``close_rows`` (mask over the stacked rows): the normal rows
        of those whose law has no restitution (e = 0) and whose relation is not compliant, which the step may
        close (the gap term of ``formulations/time_stepping.md`` §6)."""
        rule, n_i = self.osi.activation, first.shape[0]
        if rule == "siconos" or not n_i:
            look = np.zeros(n_i, dtype=bool)
        elif rule == "lookahead":
            look = self.unilateral.copy()
        else:
            ne = np.array([isinstance(ds, NewtonEulerDS) for ds in self.sys.systems], dtype=bool)
            look = self.unilateral & np.logical_and.reduceat(ne[body], np.cumsum(nsys) - nsys)
        self.look = look
        self.lookahead = bool(look.any())
        self.close_rows = None
        if self.lookahead and self.theta > 0:
            rows = first[look & ~self.P["compliant"]]
            rows = rows[self.erow[rows] == 0.0]
            if rows.size:
                self.close_rows = np.zeros(self.mtot, dtype=bool)
                self.close_rows[rows] = True
        self._Gk = None          # the look-ahead members' Jacobians at q_k, per group, of the coming step

    def _block_plan(self):
        r"""The block form of :math:`W = G\hat M^{-1}G^\top` when every interaction has the same size m and
        every system the same size n (diagonal M̂): :math:`W_{ab} = \sum_s G_{a,s}D_s^{-1}G_{b,s}^\top` over
        the systems s shared by interactions a and b, where :math:`G_{a,s}` (m x n) is the block of a's
        rows on s's columns. Returns the linear relations' blocks and the (slot, slot) pairs, or None."""
        S = self.sys
        n, inters, sizes = S.n_uniform, self.inters, self.sizes
        if not n or not inters or sizes.min() != sizes.max():
            return None
        m = int(sizes[0])
        nsys, slot_body = self.nsys, self.slot_body
        slot_inter = np.repeat(np.arange(len(inters), dtype=np.intp), nsys)
        G_const = K.slot_blocks(self.E_val, self.E_start, nsys, m, n)   # the linear relations' blocks; the others per step
        first_of = np.cumsum(nsys) - nsys
        two = nsys > 1
        fill = []
        for grp in self.groups:
            f = first_of[grp.index]
            fill.append((f, f + 1 if np.all(two[grp.index]) else None))
        # the pairs (slot_p, slot_q) of blocks on a common system, of the interactions (inter_a, inter_b)
        slot_p, slot_q, inter_a, inter_b, run, mirror = K.block_pairs(slot_inter, slot_body, len(inters), len(S.systems))
        dinv = (1.0 / S.d).reshape(len(S.systems), n)[slot_body]
        slot_off = slot_body * n                        # every system has n columns
        return {"m": m, "G_const": G_const, "fill": fill, "dinv": dinv, "slot_p": slot_p, "slot_q": slot_q,
                "inter_a": inter_a, "inter_b": inter_b, "run": run, "mirror": mirror, "slot_inter": slot_inter,
                "slot_off": slot_off}

    def entry_index(self):
        """(row, column, interaction) of every stacked entry and each row's count, and each group's
        entries (``_Group.entries``): entry k of interaction j is its row k // nloc_j and its column
        cols_j[k % nloc_j] (row-major, as H.ravel()). Built at first use (the block path needs none)."""
        if self._entries is None:
            nloc, counts, cstart, allcols = self._layout
            owner = np.repeat(np.arange(len(self.inters), dtype=np.intp), counts)
            k = np.arange(owner.shape[0], dtype=np.intp) - self.E_start[owner]
            self._entries = (self.first[owner] + k // nloc[owner], allcols[cstart[owner] + k % nloc[owner]], owner,
                             np.repeat(nloc, self.sizes))
            for g in self.groups:
                g.entries = _ranges(self.E_start[g.index], counts[g.index])
        return self._entries

    # ------------------------------------------------------------------ state
    def _part(k, doc):
        def get(self):
            nq, nv, m = self.nq, self.nv, self.mtot
            a = (0, nq, nq + nv, nq + 2 * nv, nq + 2 * nv + m, nq + 2 * nv + 2 * m, nq + 2 * nv + 3 * m,
                 nq + 2 * nv + 4 * m)
            return self.buf[a[k]:a[k + 1]]
        return property(get, doc=doc)

    q, v, p = _part(0, "Stacked positions."), _part(1, "Stacked velocities."), _part(2, "Stacked impulses.")
    Y0, Y1 = _part(3, "Stacked outputs, level 0."), _part(4, "Stacked outputs, level 1.")
    L0, L1 = _part(5, "Stacked multipliers, level 0."), _part(6, "Stacked multipliers, level 1.")
    del _part

    def _gather(self, src, t):
        """The stacked state: the systems' from ``src`` (a stepper of the same or another run) by
        identity, else their initial conditions q0, v0 (p = 0); the interactions' rows from ``src``
        when it holds them, else their multipliers and warm starts from the parked ones (a re-link) or
        zero, and their outputs computed at the current state."""
        S, inters, first, sizes = self.sys, self.inters, self.first, self.sizes
        nq, nv, m, n_i = self.nq, self.nv, self.mtot, len(inters)
        buf = np.empty(nq + 2 * nv + 4 * m)
        same = src is not None and src.sys is S
        if same:
            buf[:nq + 2 * nv] = src.buf[:nq + 2 * nv]
        else:
            q, v, p = buf[:nq], buf[nq:nq + nv], buf[nq + nv:nq + 2 * nv]
            idx = src.sys.index if src is not None else {}
            for k, ds in enumerate(S.systems):
                j = idx.get(id(ds))
                rq, rv = slice(S.qoff[k], S.qoff[k + 1]), slice(S.voff[k], S.voff[k + 1])
                if j is None:
                    q[rq], v[rv], p[rv] = ds.q0, ds.v0, 0.0
                else:
                    so = src.sys
                    q[rq] = src.q[so.qoff[j]:so.qoff[j + 1]]
                    v[rv] = src.v[so.voff[j]:so.voff[j + 1]]
                    p[rv] = src.p[so.voff[j]:so.voff[j + 1]]
        self.buf = buf
        Y0, Y1, L0, L1 = self.Y0, self.Y1, self.L0, self.L1
        L0[:] = 0.0
        L1[:] = 0.0
        warm = self.warm = np.zeros(m)
        self.gap = np.zeros(len(self.gap_at))
        jold = np.full(n_i, -1, dtype=np.intp)
        if src is not None:
            where = src.position
            jold[:] = [where(i) for i in inters]
            keep = np.flatnonzero(jold >= 0)
            if keep.size:
                rn, ro = _ranges(first[keep], sizes[keep]), _ranges(src.first[jold[keep]], sizes[keep])
                for a, b in ((Y0, src.Y0), (Y1, src.Y1), (L0, src.L0), (L1, src.L1), (warm, src.warm)):
                    a[rn] = b[ro]
                for s, j in enumerate(self.gap_at.tolist()):
                    if jold[j] >= 0:
                        self.gap[s] = src.gap[list(src.gap_at).index(jold[j])]
        self._fill_new(jold == -1, t)

    def position(self, inter) -> int:
        """The position of a live interaction of this stepper, or -1."""
        j = self._where.get(id(inter), -1) if hasattr(self, "_where") else -1
        if j < 0 or self.inters[j] is not inter or not self.alive[j]:
            return -1
        return j

    def _fill_new(self, fresh, t, outputs=True):
        """The rows of the interactions ``fresh`` (a mask): multipliers and warm starts from the parked
        ones (re-linked interactions) or zero, outputs at the current state (as the step computes them:
        y = h(Q, Z) or HQ + b + Dλ₀ + FZ, ẏ = G₀V or HV + Dλ₁), unless not ``outputs`` (the caller's
        :meth:`refresh_outputs` computes them next)."""
        self._where = {id(i): j for j, i in enumerate(self.inters)}
        idx = np.flatnonzero(fresh)
        if not idx.size:
            return
        L0, L1, warm = self.L0, self.L1, self.warm
        for j in idx.tolist():
            kept = self.parked.pop(id(self.inters[j]), None)
            if kept is not None and kept[0] is self.inters[j]:
                lo, hi = self.bounds[j]
                L0[lo:hi], L1[lo:hi], warm[lo:hi] = kept[1], kept[2], kept[3]
        if outputs:
            self._outputs(t, self.q, self.v, self.L0, self.L1, self.Y0, self.Y1, self.gap, fresh, None, None,
                          init=True)

    def _outputs(self, t, q, v, L0, L1, Y0, Y1, gap, sel=None, G0p=None, used=None, lam0_prev=None, act=None,
                 init=False, keep=None):
        """The outputs at (t, q, v) into Y0, Y1 (all interactions, or those of the mask ``sel``):
        linear rows by the compiled product, groups by their plug-ins (the active members with the G0
        the problem used, ``G0p``), one-by-one members by their relation. ``keep`` (a dict, with ``G0p``
        None): the Jacobians at q of each group evaluated by one row-wise formula (``h_G0_batch``: a row's numbers
        do not depend on the others) put there, ``keep[gi] = (members (None: all), G0)``."""
        if self.lin_rows is not None:
            H = self.H_lin
            if sel is None:
                K.lin_outputs(H.indptr, H.indices, H.data, self.b_lin, self.lin_rows, q, v, Y0, Y1)
            else:
                li = np.flatnonzero(sel[self.row_inter[self.lin_rows]])
                if li.size:
                    y0, y1 = np.empty(self.mtot), np.empty(self.mtot)
                    K.lin_outputs(H.indptr, H.indices, H.data, self.b_lin, self.lin_rows, q, v, y0, y1)
                    rows = self.lin_rows[li]
                    Y0[rows], Y1[rows] = y0[rows], y1[rows]
            for j, D in self.D:
                if sel is None or sel[j]:
                    lo, hi = self.bounds[j]
                    if init:
                        Y0[lo:hi] += D @ L0[lo:hi]
                    Y1[lo:hi] += D @ L1[lo:hi]
        for gi, grp in enumerate(self.groups):
            if sel is not None:
                s = np.flatnonzero(sel[grp.index])
                if s.size:
                    Qs = q[grp.qcols[s]]
                    rows = grp.rows.reshape(-1, grp.rel.m)[s].ravel()
                    y, G = grp.h_G0(Qs, s)
                    Y0[rows] = y.ravel()
                    K.rows_velocity(G, v, grp.cols[s], rows, Y1)
                    if keep is not None and grp.both is not None:
                        keep[gi] = (s, G)
                continue
            Qn = q[grp.qcols]
            on, Gp = (None, None) if G0p is None else G0p.get(gi, (None, None))
            off = None if Gp is None else np.flatnonzero(~act[grp.index])
            if Gp is None or off.size and grp.both is not None:
                # (h and G0 of every member by one evaluation, the active members' G0 then the problem's)
                y, G = grp.h_G0(Qn)
                if Gp is not None:
                    G[on] = Gp
                elif keep is not None and grp.both is not None:
                    keep[gi] = (None, G)
            else:
                y = grp.h(Qn)
                G = np.empty((Qn.shape[0],) + Gp.shape[1:])
                G[on] = Gp
                if off.size:
                    G[off] = grp.G0(Qn[off], off)
            Y0[grp.rows] = y.ravel()
            K.rows_velocity(G, v, grp.cols, grp.rows, Y1)
        if self.singles is not None:
            self.singles.outputs(t, q, v, L0, L1, Y0, Y1, gap, sel, used, lam0_prev, self.h)

    # ------------------------------------------------------------------ the run's state (sim.state_of)
    def index_of(self, obj):
        """(position, state fields) of a system or a live interaction of this run, or None."""
        systems = self.sys.systems
        if self._sys_at is None:
            self._sys_at = {id(ds): k for k, ds in enumerate(systems)}
        k = self._sys_at.get(id(obj))
        if k is not None and systems[k] is obj:
            return k, _state.FIELDS[obj.order]
        j = self.position(obj)
        return None if j < 0 else (j, _state.FIELDS["interaction"])

    def read(self, k, name):
        S = self.sys
        if name in ("q", "v", "p"):
            if not isinstance(k, int) or k >= len(S.systems):
                raise AttributeError(name)
            off = S.qoff if name == "q" else S.voff
            base = {"q": 0, "v": self.nq, "p": self.nq + self.nv}[name]
            return _readonly(self.buf[base + off[k]:base + off[k + 1]])
        lo, hi = self.bounds[k]
        if name == "y":
            return [_readonly(self.Y0[lo:hi]), _readonly(self.Y1[lo:hi])]
        if name == "lambda_":
            return [_readonly(self.L0[lo:hi]), _readonly(self.L1[lo:hi])]
        raise AttributeError(name)

    def write(self, k, name, value):
        """Set a held object's state (between steps): the run continues from it (an interaction's λ at level 1
        is also the warm start of its next solve)."""
        buf = self.buf.copy()
        S = self.sys
        if name in ("q", "v", "p"):
            ds = S.systems[k]
            off = S.qoff if name == "q" else S.voff
            base = {"q": 0, "v": self.nq, "p": self.nq + self.nv}[name]
            buf[base + off[k]:base + off[k + 1]] = vector(value, label(ds), name, int(off[k + 1] - off[k]))
        elif name in ("y", "lambda_"):
            inter, (lo, hi) = self.inters[k], self.bounds[k]
            a, b = (3, 4) if name == "y" else (5, 6)
            parts = list(value)
            if len(parts) != 2:
                raise ModelingError(label(inter), name, f"expected [level 0, level 1], got {len(parts)} entries")
            base = self.nq + 2 * self.nv
            for lev, part in zip((a, b), parts):
                buf[base + (lev - 3) * self.mtot + lo:base + (lev - 3) * self.mtot + hi] = vector(
                    part, label(inter), name, hi - lo)
            if name == "lambda_":
                self.warm = self.warm.copy()
                self.warm[lo:hi] = buf[base + 3 * self.mtot + lo:base + 3 * self.mtot + hi]
        else:
            raise AttributeError(name)
        self.buf = buf

    def refresh_outputs(self, t):
        """The live interactions' outputs at the current state, recomputed (``TimeStepping.update_outputs``: after
        relation data changed between steps), into a new state array (what was read before stays as it was)."""
        self.buf = self.buf.copy()
        keep = {}
        self._outputs(t, self.q, self.v, self.L0, self.L1, self.Y0, self.Y1, self.gap,
                      self.alive if self.n_dead else None, keep=keep)
        self._Gq = (self.buf, self.groups, keep)     # the groups' Jacobians at q_k, for the coming step (_free_rates)

    def release(self):
        """Write the run's state onto the objects (plain copies: :mod:`nsopt.modeling._state`)."""
        S = self.sys
        for k, ds in enumerate(S.systems):
            for f in ("q", "v", "p"):
                getattr(type(ds), f).keep(ds, self.read(k, f).copy())
        for j, inter in enumerate(self.inters):
            if self.alive[j]:
                self._keep(inter, j)

    def _keep(self, inter, j):
        lo, hi = self.bounds[j]
        type(inter).y.keep(inter, [self.Y0[lo:hi].copy(), self.Y1[lo:hi].copy()])
        type(inter).lambda_.keep(inter, [self.L0[lo:hi].copy(), self.L1[lo:hi].copy()])

    # ------------------------------------------------------------------ topology changes
    def follow(self, changes, outputs=True) -> bool:
        """Follow a topology change in place when it removed interactions of this stepper and linked new
        ones (what contact detection does): a removed interaction is released and its rows stay, never
        active, until the next full build (when they make more than a quarter of the rows); the new ones
        are appended and what follows from them is rebuilt, without a pass over the others. False when
        the change is another one (a system inserted, a path the fused phases do not take): the caller
        builds a new stepper. ``outputs=False``: the new interactions' outputs are left to the caller, who
        recomputes every output next (:meth:`refresh_outputs`)."""
        if self.fused_phases or not self.batch:
            return False
        added, removed = [], []
        for what, obj in changes:
            if what == "link":
                added.append(obj)
            elif what != "remove":
                return False
            elif any(a is obj for a in added):
                added = [a for a in added if a is not obj]
            else:
                removed.append(obj)
        dead = []
        for inter in removed:
            j = self.position(inter)
            if j < 0:
                return False
            dead.append(j)
        if any(not i.systems for i in added):
            return False
        try:
            facts = [self._facts(i) for i in added]
        except ModelingError:
            return False
        n_all = len(self.inters) + len(added)
        if any(f[4] == 2 for f in facts) or 4 * (self.n_dead + len(dead)) > n_all:
            return False
        for inter, j in zip(removed, dead):
            self._park(inter, j)
        self.alive[dead] = False
        self.n_dead += len(dead)
        if added:
            self._append(added, facts, outputs)
        else:
            self.constant_relations = bool(np.all(self.P["const"][self.alive]))
        self.key = self.pattern = self.rows = None
        self.version = self.sim.nsds._version
        return True

    def _park(self, inter, j):
        """A removed interaction: its state handed to the object, its multipliers and warm start kept
        for a re-link (the last ``PARKED``)."""
        lo, hi = self.bounds[j]
        self._keep(inter, j)
        self.parked[id(inter)] = (inter, self.L0[lo:hi].copy(), self.L1[lo:hi].copy(), self.warm[lo:hi].copy())
        self.memo.pop(id(inter), None)
        while len(self.parked) > PARKED:
            self.parked.popitem(last=False)

    def park_all(self):
        """Before a full rebuild: park the interactions the model no longer holds."""
        live = {id(i) for i in self.sim.nsds.interactions}
        for j, inter in enumerate(self.inters):
            if self.alive[j] and id(inter) not in live:
                self._park(inter, j)

    def _append(self, added, facts, outputs=True):
        """Append interactions new to this stepper: the primary data joined, the rest rebuilt, the stacked
        state extended (their outputs computed at the current state, unless not ``outputs``)."""
        n0, m0, base = len(self.inters), self.mtot, self.nq + 2 * self.nv
        self.P = self._joined(self.P, self._primary(facts, added))
        self.inters.extend(added)
        self.alive = np.concatenate([self.alive, np.ones(len(added), dtype=bool)])
        old, warm0 = self.buf, self.warm
        parts = [old[base + k * m0:base + (k + 1) * m0] for k in range(4)]
        self._secondary()
        m = self.mtot
        buf = np.empty(base + 4 * m)
        buf[:base] = old[:base]
        for k in range(4):
            buf[base + k * m:base + k * m + m0] = parts[k]
            buf[base + k * m + m0:base + (k + 1) * m] = 0.0
        self.buf = buf
        self.warm = np.zeros(m)
        self.warm[:m0] = warm0
        fresh = np.zeros(len(self.inters), dtype=bool)
        fresh[n0:] = True
        self._fill_new(fresh, self.sim.t, outputs)

    def row_layout(self):
        """(the systems' field widths {q, v, p}, the linked interactions, their first rows, their last rows
        + 1, the rows of all): where the trajectory finds each object in the stacked row."""
        live = np.flatnonzero(self.alive) if self.n_dead else slice(None)
        return ({"q": self.nq, "v": self.nv, "p": self.nv}, list(self.sys.systems),
                (self.inter_arr[live].tolist(), self.first[live], (self.first + self.sizes)[live], self.mtot))

    def columns(self):
        """Per system its (q columns, v columns) in the stacked row fields (kept while the systems' layout is the
        same: a contact's link or removal starts a trajectory segment, not a new layout of the systems)."""
        S = self.sys
        held = self.__dict__.get("_columns")
        if held is None or held[0] is not S or held[1] is not S.qoff or held[2] is not S.voff:
            q, v = S.qoff.tolist(), S.voff.tolist()
            held = self._columns = (S, S.qoff, S.voff, [((q[k], q[k + 1]), (v[k], v[k + 1])) for k in range(len(S.systems))])
        return held[3]

    # ------------------------------------------------------------------ one step
    def iteration_matrix(self):
        """The stacked iteration matrix M̂ = M + hθC + h²θ²K of all systems (sparse)."""
        return self.sys.iteration_matrix()

    def _mu(self, idx):
        """The friction coefficients of the interactions ``idx`` (read-only), or None when a law has
        none. The laws' μ were checked (finite, >= 0) when they were made."""
        mu = self.__dict__.get("_mu_all")
        if mu is None:
            mus = [getattr(law, "mu", None) for law in self.law_arr]
            mu = self._mu_all = np.array(mus, dtype=float) if None not in mus else False
        if mu is False:
            return None
        out = mu[idx]
        out.setflags(write=False)
        return out

    def _index_set(self, Y1f=None):
        """The index set of the coming step (:func:`~nsopt.modeling._kernels.index_set`); ``Y1f``: the rates
        :math:`G_0(q_k)v_{free}` of the look-ahead interactions (:meth:`_free_rates`)."""
        act = np.empty(len(self.inters), dtype=np.bool_)
        g, h, th = self.osi.lookahead_gamma, self.h, self.theta
        K.index_set(self.Y0, self.Y1, self.first, self.gap_at, self.gap, self.unil_off, self.alive,
                    self.gamma * self.h, self.thr, act, self.look, self.Y1 if Y1f is None else Y1f,
                    g * h * (1 - th), g * h * th)
        return act

    def _free_rates(self, t0, qk, vk, vfree):
        r"""The rates that the look-ahead rule reads (stacked rows; zero off the look-ahead interactions):
        :math:`\dot y_{free} = G_0(q_k)v_{free}`, and on the rows the step may close (``close_rows``)
        :math:`\dot y_{free} - |G_0|\,|v_{free} - v_k|`: a contact between two bodies that fall together (a
        stack) has :math:`\dot y_{free} = \dot y_k`, though the lower one's support stops it within the step; the
        allowance covers either body's free change of velocity being stopped. The groups' Jacobians at
        :math:`q_k` are kept in ``_Gk`` for the step's problem (:meth:`_contact`: the look-ahead contacts' rows
        are taken at :math:`q_k`)."""
        Y1f = np.zeros(self.mtot)
        sel = self.look & self.alive
        close = self.close_rows
        allow = np.zeros(self.mtot) if close is not None else None
        dv = np.abs(vfree - vk) if close is not None else None
        if self.lin_rows is not None:
            Y1f[self.lin_rows] = self.H_lin @ vfree
            if close is not None:
                allow[self.lin_rows] = abs(self.H_lin) @ dv
        self._Gk = {}
        at_q = self.__dict__.get("_Gq")
        self._Gq = None
        if at_q is not None and (at_q[0] is not self.buf or at_q[1] is not self.groups or qk is not self.q
                                 and not np.array_equal(qk, self.q)):
            at_q = None          # (the state or the layout changed since refresh_outputs)
        for gi, grp in enumerate(self.groups):
            s = np.flatnonzero(sel[grp.index])
            if s.size:
                kept = None if at_q is None else at_q[2].get(gi)
                if kept is None:
                    G = grp.G0(qk[grp.qcols[s]], s)
                else:         # the Jacobians refresh_outputs computed at q_k (the same formula, the same numbers)
                    G = kept[1][s] if kept[0] is None else kept[1][np.searchsorted(kept[0], s)]
                rows = grp.rows.reshape(-1, grp.rel.m)[s].ravel()
                K.rows_velocity(G, vfree, grp.cols[s], rows, Y1f)
                if close is not None:
                    K.rows_velocity(np.abs(G), dv, grp.cols[s], rows, allow)
                self._Gk[gi] = (s, G)
        sg = self.singles
        if sg is not None:
            for k, j in enumerate(sg.index):
                if not sel[j]:
                    continue
                rel, (lo, hi) = sg.inters[k].relation, sg.bounds[k]
                Q, V, Z = qk[sg.qcols[k]], vfree[sg.cols[k]], sg.Z[k]
                if rel.compliant:
                    Y1f[lo:hi] = rel.G0(Q, t0, self.L0[lo:hi], Z) @ V
                    continue
                Y1f[lo:hi] = rel.velocity(Q, V, t0, np.zeros(hi - lo), Z, None)
                if close is not None:
                    allow[lo:hi] = np.abs(rel.G0(Q, t0, None, Z)) @ dv[sg.cols[k]]
        if close is not None:       # the plastic rows look over the step and the stop of the next one (the gap term)
            Y1f[close] = (Y1f[close] - allow[close]) / self.theta
        return Y1f

    def _group_rows(self, gi, grp, on, q_it, qk):
        """The Jacobians G0 of the active members ``on`` of group ``gi``: the look-ahead ones at q_k (kept by
        :meth:`_free_rates`), the others at the Newton iterate ``q_it``."""
        lk = self.look[grp.index[on]]
        if not lk.any():
            return grp.G0(q_it[grp.qcols[on]], on)
        kept = self._Gk.get(gi) if self._Gk is not None else None
        Gl = kept[1][np.searchsorted(kept[0], on[lk])] if kept is not None else grp.G0(qk[grp.qcols[on[lk]]], on[lk])
        if lk.all():
            return Gl
        G = np.empty((on.size,) + Gl.shape[1:])
        G[lk] = Gl
        G[~lk] = grp.G0(q_it[grp.qcols[on[~lk]]], on[~lk])
        return G

    def step(self, sim):
        """One step from sim.t to sim.t + h (module docstring); the new state is left in
        ``self.pending`` for :meth:`commit`. Returns (Newton iterations, residual, converged)."""
        if self.fused_phases:
            return self._step_fused(sim)
        S, h = self.sys, self.h
        t0, t1 = sim.t, sim.t + h
        qk, vk, y1k, lam0k = self.q, self.v, self.Y1, self.L0
        Fk = S.begin(t0, qk, vk) if S.iterate else None
        # the Newton iterate (Siconos computeInitialNewtonState): q = q_k + h v_k, v = v_k
        q_it = vfree0 = None
        self._Gk = None
        if self.lookahead:     # the look-ahead rule reads the free velocity (at the first iterate)
            if S.iterate:
                q_it = qk + h * vk if S.ne is None else S.positions(qk, vk, vk)[0]
            vfree0 = S.free_velocity(t0, t1, qk, vk, q_it, vk, Fk)
            act = self._index_set(self._free_rates(t0, qk, vk, vfree0))
        else:
            act = self._index_set()
        if q_it is None and (S.iterate or np.count_nonzero(act)):     # (count_nonzero: a step's per-call cost)
            q_it = qk + h * vk if S.ne is None else S.positions(qk, vk, vk)[0]
        warm = self.warm
        for passes in range(ACTIVATION_PASSES):
            out = self._newton(sim, act, t0, t1, qk, vk, y1k, lam0k, q_it, vfree0, Fk, warm)
            if not self.lookahead:
                break
            # a look-ahead contact left out that the step's end puts into penetration: in the index set, the step again
            y = out[4][self.first]
            if self.close_rows is not None:     # a plastic contact: where the stop of the next step would take it
                c = self.close_rows[self.first]
                y = np.where(c, y + self.h * (1 - self.theta) * out[5][self.first], y)
            miss = self.look & self.alive & ~act & (y < -self.osi.projection_tol)
            if not miss.any():
                break
            act = act | miss
            warm = out[-1]      # the pass again from the last one's impulses (the added contacts: their own warm starts)
        (it, res, converged), qn, vn, p, Y0n, Y1n, L0, L1, gapn, warm = out
        if self.projection and (S.ne is not None or self.osi.projection is True):
            qn = self._project(t1, qn, vn, L0, L1, Y0n, Y1n, gapn, act)
        self.pending = (np.concatenate([qn, vn, p, Y0n, Y1n, L0, L1]), warm, gapn)
        return it, res, converged

    def _newton(self, sim, act, t0, t1, qk, vk, y1k, lam0k, q_it, vfree0, Fk, warm):
        """The step's (Newton) loop on the index set ``act`` from the iterate ``q_it`` (``vfree0``: the free
        velocity there, when computed) and the warm starts ``warm`` (stacked rows): returns ((iterations, residual,
        converged), q, v, p, Y0, Y1, λ0, λ1, compliant gaps, warm starts) at the step's end."""
        S, h = self.sys, self.h
        idx = np.flatnonzero(act)
        v_it = vk
        m = self.mtot
        max_it = sim.newton_max_iter if S.iterate else 1
        it, res, converged = 0, np.inf, False
        while it < max_it:
            it += 1
            vfree = vfree0 if it == 1 and vfree0 is not None else S.free_velocity(t0, t1, qk, vk, q_it, v_it, Fk)
            L1, L0 = np.zeros(m), np.zeros(m)
            G0p, used = None, None
            if idx.size:
                act_rows = act[self.row_inter]
                lam, p, G0p, used, rows_of = self._contact(sim, idx, act, act_rows, t1, q_it, qk, vk, vfree, y1k, lam0k,
                                                           warm)
                L1[act_rows] = lam
                if self.scale is not None:
                    comp = act_rows & (self.scale != 1.0)
                    L0[comp] = L1[comp] / h
                vn = vfree + S.minv(p)
                warm = warm.copy()
                warm[act_rows] = lam
                self.last = (idx, lam, vfree, rows_of, (y1k, None, act_rows))   # (ẏ_k of the active rows, when asked)
            else:
                p, vn = np.zeros(S.nv), vfree
                self.last = (idx, None, vfree, None, None)
            qn, top = S.positions(qk, vk, vn)
            Y0n, Y1n, gapn = np.empty(m), np.empty(m), np.zeros(len(self.gap_at))
            self._outputs(t1, qn, vn, L0, L1, Y0n, Y1n, gapn, None, G0p, used, lam0k, act)
            top = max(top, float(np.max(np.abs(vn), initial=0.0)))
            if not top <= K.STATE_LIMIT:
                self._blow_up(sim, qn, vn)
            if not S.iterate:
                converged, res = True, 0.0
                break
            dv = float(np.linalg.norm(vn - v_it)) / (1.0 + float(np.linalg.norm(vn)))
            res = max(S.residual(t1, vk, qn, vn, p, Fk), dv)
            q_it, v_it = qn, vn
            if res <= sim.newton_tol:
                converged = True
                break
        return (it, res, converged), qn, vn, p, Y0n, Y1n, L0, L1, gapn, warm

    # ------------------------------------------------------------------ position projection (rigid bodies)
    def _projectable(self):
        """(mask of the interactions the projection acts on: unilateral laws on Newton–Euler bodies, the
        stacked normal rows of those (mask over all rows)), per topology. A unilateral interaction on another
        system with ``projection=True``: a :class:`ModelingError`."""
        pr = self.__dict__.get("_proj")
        if pr is None:
            n_i = len(self.inters)
            ne = self.__dict__.get("_ne_systems")        # (the systems do not change with the interactions)
            if ne is None:
                ne = self._ne_systems = np.array([isinstance(ds, NewtonEulerDS) for ds in self.sys.systems], dtype=bool)
            all_ne = np.logical_and.reduceat(ne[self.slot_body], np.cumsum(self.nsys) - self.nsys) if n_i else \
                np.zeros(0, dtype=bool)
            on = self.unilateral & all_ne
            bad = np.flatnonzero(self.unilateral & ~all_ne)
            if bad.size and self.osi.projection is True:
                raise ModelingError(label(self.osi), "projection", f"is for NewtonEulerDS bodies; "
                                    f"{label(self.inters[bad[0]])} is a unilateral interaction on another system "
                                    "(use projection=None: on for rigid bodies only)")
            # the normal rows: the first of a friction contact, every row of the others
            fric = self.P["friction"]
            normal = np.repeat(on & ~fric, self.sizes)
            normal[self.first[on & fric]] = True
            pr = self._proj = (on, normal)
        return pr

    def _ne_rows(self, t, q, sel):
        """(stacked rows, v columns, values) of the twist Jacobians G0 at q of the interactions of the mask
        ``sel`` (COO triplets, all rows of each), by their groups' batched G0 or one by one."""
        R, C, V = [], [], []
        for grp in self.groups:
            s = np.flatnonzero(sel[grp.index])
            if not s.size:
                continue
            G = grp.G0(q[grp.qcols[s]], s)                                 # (k, m, nloc)
            rows = grp.rows.reshape(-1, grp.rel.m)[s]
            R.append(np.broadcast_to(rows[:, :, None], G.shape).ravel())
            C.append(np.broadcast_to(grp.cols[s][:, None, :], G.shape).ravel())
            V.append(G.ravel())
        if self.singles is not None:
            sg = self.singles
            for k, j in enumerate(sg.index):
                if not sel[j]:
                    continue
                lo, hi = sg.bounds[k]
                G = np.asarray(sg.inters[k].relation.G0(q[sg.qcols[k]], t, None, sg.Z[k]), dtype=float)
                R.append(np.repeat(np.arange(lo, hi), G.shape[1]))
                C.append(np.tile(sg.cols[k], hi - lo))
                V.append(G.ravel())
        cat = (lambda a, dt: np.concatenate(a).astype(dt, copy=False) if a else np.zeros(0, dtype=dt))
        return cat(R, np.intp), cat(C, np.intp), cat(V, float)

    def _ne_minv(self):
        """M⁻¹ (sparse, nv x nv) of the rigid bodies, block diagonal (zero on the other systems' columns): the
        metric of the projection (the mass, not the iteration matrix M̂)."""
        S = self.sys
        Mi = getattr(S, "_ne_minv", None)
        if Mi is None:
            blocks = [ds.inverse_mass() if isinstance(ds, NewtonEulerDS) else sp.csr_matrix((ds.n, ds.n))
                      for ds in S.systems]
            Mi = S._ne_minv = sp.block_diag(blocks, format="csr")
        return Mi

    def _project(self, t1, qn, vn, L0, L1, Y0n, Y1n, gapn, act):
        r"""The position projection of :class:`~nsopt.modeling.MoreauJeanOSI` (its docstring): the positions of
        the rigid bodies moved until no projectable gap at q_{k+1} is below ``-projection_tol``; Y0n, Y1n
        re-evaluated in place for the interactions of the moved bodies. Returns q_{k+1}. ``projection_info``:
        (projections, deepest gap before, deepest gap after, rows of the last LCP).

        Each projection is the M-metric projection of the linearised gaps,
        :math:`\min \tfrac12\Delta^\top M\Delta` s.t. :math:`y + H\Delta \ge 0` over the normal rows of the step's
        contacts and the penetrating ones, solved by an active set on those rows (:meth:`_project_rows`): only the
        rows it needs enter its LCP."""
        on, normal = self._projectable()
        tol = self.osi.projection_tol
        cand_rows = normal & on[self.row_inter] & self.alive[self.row_inter]
        if not cand_rows.any():
            return qn
        before = float(Y0n[cand_rows].min())
        if not before < -tol:
            self.projection_info = (0, before, before, 0)
            return qn
        S = self.sys
        Mi = self._ne_minv()
        sel = on & self.alive & act                         # the step's contacts, and the penetrating ones
        ne_sys = np.flatnonzero(np.isin(S.qoff[:-1], S.ne[0]))
        first_slot = np.cumsum(self.nsys) - self.nsys
        zeros = np.zeros(self.nv)
        it, deepest, nr = 0, before, 0
        while it < self.osi.projection_max_iter and deepest < -tol:
            it += 1
            pen = cand_rows & (Y0n < -tol)
            sel = sel | (np.bincount(self.row_inter[pen], minlength=len(self.inters)) > 0)
            r, c, v = self._ne_rows(t1, qn, sel)
            keep = normal[r]
            r, c, v = r[keep], c[keep], v[keep]
            rows = np.unique(r)
            H = sp.csr_matrix((v, (np.searchsorted(rows, r), c)), shape=(rows.shape[0], self.nv))
            delta, nr = self._project_rows(H, Mi, Y0n[rows], tol)
            if delta is None:
                break
            moved = np.zeros(len(S.systems), dtype=bool)
            moved[ne_sys] = np.any(delta[S.voff[ne_sys][:, None] + np.arange(6)] != 0.0, axis=1)
            mk = np.flatnonzero(moved)
            if not mk.size:
                break
            out = qn.copy()
            ne_positions(qn, zeros, delta, S.qoff[mk], S.voff[mk], 0.0, 1.0, out)
            qn = out
            touch = np.logical_or.reduceat(moved[self.slot_body], first_slot) if len(self.inters) else sel
            touch &= self.alive
            self._outputs(t1, qn, vn, L0, L1, Y0n, Y1n, gapn, touch)
            deepest = float(Y0n[cand_rows].min())
        self.projection_info = (it, before, deepest, nr)
        return qn

    @staticmethod
    def _project_rows(H, Mi, y, tol):
        r"""One linearised projection: :math:`\Delta = M^{-1}H_S^\top\mu` with
        :math:`0 \le \mu \perp y_S + H_S M^{-1}H_S^\top\mu \ge 0` on a set S of rows grown from the penetrating
        ones (:math:`y < -`tol) by those whose linearised gap :math:`y + H\Delta` the last :math:`\Delta` left below
        -tol/2 (the KKT conditions of :math:`\min\tfrac12\Delta^\top M\Delta` s.t. :math:`y + H\Delta \ge 0` hold
        once no row is added: a row outside S has :math:`\mu = 0` and a non-negative gap up to tol/2). Each LCP by
        ``lemke`` (dense) up to ``PROJECTION_DENSE`` rows, ``pgs`` above, ``PROJECTION_SWEEPS`` sweeps warm-started
        from the last round's μ (W is singular on a hyperstatic pile: newton-fb took ~180 Newton directions an LCP and
        missed 1e-12; pgs stalls there at gaps of 1e-7..1e-5 m, 5000 sweeps doing little better than 1000, and what it
        leaves the next round or projection projects). When the penetrating rows alone are more than
        ``PROJECTION_DENSE``, S is every row from the start (18e4543's one LCP): on a hyperstatic pile the rounds
        grow S a layer of contacts at a time, each a pgs LCP of 1000 sweeps, where the LCP of all the rows is
        one (1000-cube pile, Siconos' rule, 120 steps: 418 pgs LCPs and 4.1e8 row-sweeps -> 136 and 1.4e8;
        18e4543 203 and 2.0e8). Returns (Δ, rows of the last LCP),
        or (None, rows) when a solve does not give a finite μ."""
        S = y < -tol
        if np.count_nonzero(S) > PROJECTION_DENSE:     # pgs' size: every row at once (see the docstring)
            S[:] = True
        if not (sp.isspmatrix_csr(H) and H.has_canonical_format):      # (the compiled products read CSR rows once each)
            H = sp.csr_matrix(H, copy=True)
            H.sum_duplicates()
        HM = (H @ Mi).tocsr()
        # the rounds' products by compiled loops in the order of scipy's (the same numbers): W of the dense LCPs
        # (K.projection_delassus), Δ and the linearised gaps (K.projection_step)
        hm = (HM.indptr.astype(np.int64), HM.indices.astype(np.int64), np.ascontiguousarray(HM.data, dtype=float))
        hr = (H.indptr.astype(np.int64), H.indices.astype(np.int64), np.ascontiguousarray(H.data, dtype=float))
        delta, gap = np.empty(H.shape[1]), np.empty(H.shape[0])
        prev = mu = None
        for _ in range(PROJECTION_ROUNDS):
            idx = np.flatnonzero(S)
            if idx.shape[0] <= PROJECTION_DENSE:
                W = np.empty((idx.shape[0], idx.shape[0]))
                K.projection_delassus(*hm, *hr, idx, H.shape[1], W)
                res = solve(LCP(W, y[idx]), method="lemke", tol=1e-12)
            else:
                W = (HM[idx] @ H[idx].T).tocsr()
                warm = None
                if mu is not None and mu.any():       # the last round's μ on its rows (a subset of these)
                    warm = np.zeros(idx.shape[0])
                    warm[np.searchsorted(idx, prev)] = mu
                res = solve(LCP(W, y[idx]), method="pgs", tol=1e-12, max_iter=PROJECTION_SWEEPS, warm_start=warm)
            prev = idx
            mu = np.asarray(res.z, dtype=float)
            if not np.all(np.isfinite(mu)):
                return None, idx.shape[0]
            K.projection_step(*hm, *hr, idx, mu, y, delta, gap)
            add = ~S & (gap < -0.5 * tol)
            if not add.any():
                break
            S |= add
        return delta, int(np.count_nonzero(S))

    def _blow_up(self, sim, q, v):
        """A non-finite or exploding state: the run stops (typed), the last committed state kept."""
        S = self.sys
        for k, ds in enumerate(S.systems):
            for name, arr, off in (("q", q, S.qoff), ("v", v, S.voff)):
                a = arr[off[k]:off[k + 1]]
                if not np.all(np.abs(a) <= K.STATE_LIMIT):
                    what = "is not finite" if not np.all(np.isfinite(a)) else \
                        f"exploded (|{name}| = {float(np.max(np.abs(a))):.3g} > {K.STATE_LIMIT:g})"
                    raise StepFailed(f"step {sim.k + 1} (t = {sim.t + self.h:.6g}): the state {name} of {label(ds)} "
                                     f"{what}; the run stops at the last finite state (step {sim.k})",
                                     step=sim.k + 1, time=sim.t + self.h, solution=sim._last[1] if sim._last else None)
        raise StepFailed(f"step {sim.k + 1}: the state is not finite", step=sim.k + 1, time=sim.t + self.h)

    def _contact(self, sim, idx, act, act_rows, t1, q_it, qk, vk, vfree, y1k, lam0k, warm):
        """Assemble the active rows at the iterate, solve the OSNS problem; returns (λ, p = G0ᵀλ, the
        groups' Jacobians used, the one-by-one members' G0 used, the rows (a callable for the blocks))."""
        S, h, th = self.sys, self.h, self.theta
        G0p = {}
        for gi, grp in enumerate(self.groups):       # G0 at the iterate (look-ahead contacts: at q_k) for the active members
            on = np.flatnonzero(act[grp.index])
            G0p[gi] = (on, self._group_rows(gi, grp, on, q_it, qk) if on.size else None)
        single = self.singles.rows(act, t1, q_it, qk, vk, vfree, y1k, lam0k, h, th, self.erow, self.look) \
            if self.singles is not None else []
        used = {s[0]: s[5] for s in single if s[5] is not None}
        key = (id(self), act.tobytes())
        P = self._blocks
        extras = []
        factors = Hf = None
        if P is not None:
            # block form: q, W and p from the blocks G_{a,s}, no assembled G0 (built-in problems only)
            G = P["G_const"].copy()
            n = G.shape[2]
            for (one, two), (on, Gg) in zip(P["fill"], G0p.values()):
                if Gg is not None:
                    G[one[on]] = Gg[:, :, :n]
                    if two is not None:
                        G[two[on]] = Gg[:, :, n:]
            new = np.cumsum(act) - 1
            new[~act] = -1
            qo = K.slot_matvec(G, P["slot_inter"], P["slot_off"], new, vfree)
            Ha = None
            qo += self.erow[act_rows] * y1k[act_rows]
            sig = (G, extras)
        else:
            G = None
            vals = self.E_val
            self.entry_index()
            if self.groups or single:
                vals = vals.copy()
                for gi, grp in enumerate(self.groups):
                    on, Gg = G0p[gi]
                    if Gg is not None:
                        vals[grp.entries.reshape(len(grp.index), -1)[on]] = Gg.reshape(on.size, -1)
                for j, G0, *_ in single:
                    a = self.E_start[j]
                    vals[a:a + G0.size] = np.asarray(G0, dtype=float).ravel()
            Ha = self._rows(act, act_rows, vals, key)
            qo = np.asarray(Ha @ vfree).reshape(-1)
            qo += self.erow[act_rows] * y1k[act_rows]
            newrow = None
            if single or self.D:
                newrow = np.cumsum(act_rows) - 1
            for j, G0, sc, extra, qv, _ in single:         # the one-by-one members' own q (and blocks)
                lo = int(newrow[self.first[j]])
                qo[lo:lo + qv.shape[0]] = qv
                if extra is not None:
                    extras.append((lo, np.asarray(extra, dtype=float)))
            extras = [(int(newrow[self.first[j]]), D) for j, D in self.D if act[j]] + extras
            sig = (Ha, extras)
        if self.close_rows is not None:
            qo = self._close_gaps(qo, act_rows)
        constant = self.constant_relations and not S.iterate
        if self.gfc:
            Mhat = S.iteration_matrix()
            glob = (Mhat, Ha.T if self.sparse else Ha.T.copy(), np.asarray(Mhat @ vfree).reshape(-1),
                    qo - np.asarray(Ha @ vfree).reshape(-1))
            W = None
        else:
            glob = None
            if key == self.key and not S.iterate and (self.constant_relations or _same_rows(sig, self.rows)):
                W = None        # same active set, same rows (operators constant, or contacts at rest): the last problem
            elif G is not None:
                W = self._block_delassus(G, act)
                # W = G M̂⁻¹ Gᵀ with M̂ diagonal: its factors go with it (the Newton systems of the one-step
                # problem in the dofs' space, smaller than the contacts' in a pile)
                Hf = self._assembled_from_blocks(G, act)
                factors = DelassusFactors.trusted(Hf, self._minv_diag())
            else:
                left = Ha
                if self.scale is not None:
                    sc = self.scale[act_rows]
                    left = sp.diags(sc) @ Ha if self.sparse else Ha * sc[:, None]
                W = delassus(Ha, S.minv_arg(), left=left, extras=extras)
                if self.sparse and S.all_diag and self.scale is None and not extras:
                    factors = DelassusFactors.trusted(Ha, self._minv_diag())    # (Ha: a new CSR every step)
        asm = Assembly(key=key, interactions=self.inter_arr[idx].tolist(), q=qo, W=W, constant=constant, glob=glob,
                       H=Ha, vfree=vfree, osi=self, warm=warm[act_rows], laws=self.law_arr[idx].tolist(),
                       trusted_W=G is not None and W is not None, mu=self._mu(idx), factors=factors)
        lam = sim.solve_assembly(asm)
        if W is not None or glob is not None:
            self.rows = sig
        self.key = key
        if G is not None:
            P = self._blocks
            p = K.slot_rmatvec(G, P["slot_inter"], P["slot_off"], new, lam, S.nv)
            rows_of = Hf if Hf is not None else (lambda G=G, act=act: self._assembled_from_blocks(G, act))
        else:
            p = np.asarray(Ha.T @ lam).reshape(-1)
            rows_of = Ha
        return lam, p, G0p, used, rows_of

    def _close_gaps(self, qo, act_rows):
        r"""The gap term of the look-ahead contacts without restitution (``close_rows``): on their normal row,
        :math:`q \mathrel{+}= [y_k + h(1-\theta)\dot y_k]^+ / h`, so that a contact still open when the
        step stops it may close within the step (:math:`y_{k+1} \ge 0` instead of :math:`\dot y_{k+1} \ge 0`
        while the gap is open; ``formulations/time_stepping.md`` §6)."""
        cr = self.close_rows[act_rows]
        if not cr.any():
            return qo
        h, th = self.h, self.theta
        rows = np.flatnonzero(act_rows)[cr]
        b = self.Y0[rows] + h * (1 - th) * self.Y1[rows]
        pos = b > 0.0
        if not pos.any():
            return qo
        qo = qo.copy()
        qo[np.flatnonzero(cr)[pos]] += b[pos] / h
        return qo

    def _minv_diag(self):
        """1 / the diagonal of the stacked M̂ (W's factors), computed once per M̂."""
        d = self.sys.d
        if self._minv_d is None or self._minv_d[0] is not d:
            self._minv_d = (d, 1.0 / d)
        return self._minv_d[1]

    def _assembled_from_blocks(self, G, act):
        """The active rows G0 (CSR, canonical) from the slot blocks (a step record, W's factors)."""
        P, m = self._blocks, self._blocks["m"]
        nb = int(np.count_nonzero(act))
        new = np.cumsum(act) - 1
        new[~act] = -1
        ptr, ind, dat = K.slot_rows_csr(G, P["slot_inter"], P["slot_off"], new, nb)
        H = sp.csr_matrix((dat, ind, ptr), shape=(nb * m, self.nv))
        H.sum_duplicates()          # (two slots of one interaction on one system, if any)
        return H

    def _block_delassus(self, G, act):
        """W of the active interactions from the block plan (CSR, sorted):
        :func:`~nsopt.problems._delassus.block_delassus_for`, the sums of
        :func:`~nsopt.problems._delassus.delassus` grouped by system (the same numbers to rounding)."""
        P = self._blocks
        m, nb = P["m"], int(np.count_nonzero(act))
        ptr, ind, dat = block_delassus_for(m, G.shape[2])(G, P["dinv"], P["slot_p"], P["slot_q"], P["run"],
                                                         P["mirror"], P["inter_a"], P["inter_b"], act)
        W = sp.csr_matrix((dat, ind, ptr), shape=(nb * m, nb * m))
        W.has_canonical_format = True    # the blocks of a row come in increasing column, once each
        for a in (W.data, W.indices, W.indptr):
            a.setflags(write=False)
        return W

    def _rows(self, act, act_rows, vals, key):
        """The rows G0 of the active interactions (CSR when sparse, canonical; the pattern kept per
        active set), from the stacked entry values ``vals``."""
        S = self.sys
        E_row, E_col, E_inter, row_nnz = self.entry_index()
        if not self.sparse:
            sel = act[E_inter]
            newrow = np.cumsum(act_rows) - 1
            r, c, m = newrow[E_row[sel]], E_col[sel], int(newrow[-1]) + 1
            H = np.zeros((m, S.nv))
            if self.unique_entries:         # one entry per (row, column): written, not summed
                H[r, c] = vals[sel]
            else:
                np.add.at(H, (r, c), vals[sel])
            return H
        pat = self.pattern if self.pattern is not None and self.pattern[0] == key else None
        if pat is None:
            sel = np.flatnonzero(act[E_inter])
            ma = int(np.count_nonzero(act_rows))
            if not self.unique_entries:
                Ha = sp.csr_matrix((vals[sel], (np.cumsum(act_rows)[E_row[sel]] - 1, E_col[sel])), shape=(ma, S.nv))
                Ha.sum_duplicates()
                return Ha
            indptr = np.zeros(ma + 1, dtype=np.int32)
            np.cumsum(row_nnz[act_rows], out=indptr[1:])
            Ha = sp.csr_matrix((vals[sel], E_col[sel], indptr), shape=(ma, S.nv))
            if not Ha.has_sorted_indices:     # entries in row order, columns sorted per row
                perm = np.lexsort((Ha.indices, np.repeat(np.arange(ma), np.diff(indptr))))
                sel = sel[perm]
                Ha = sp.csr_matrix((vals[sel], E_col[sel], indptr), shape=(ma, S.nv))
            pat = self.pattern = (key, sel, Ha.indices, indptr, ma)
        else:
            _, sel, cols, indptr, ma = pat
            Ha = sp.csr_matrix((vals[sel], cols, indptr), shape=(ma, S.nv))
        Ha.has_sorted_indices = True
        return Ha

    # ---- linear time-invariant models: the phases by fused compiled loops
    def _step_fused(self, sim):
        """:meth:`step` for the linear time-invariant models of the module docstring, its phases by the
        compiled ``fused_step_start`` (v_free, the index set, and, when the index set is the last contact
        step's, q and the warm start) and ``fused_step_end`` (p, v, q, the outputs), the rows, W and laws of
        each active set kept (dense H). When the index set is the last contact step's (W unchanged),
        the problem is that step's with the new q (``TimeStepping.resolve``)."""
        buf, nd = self.buf, self.nv
        vfree = np.empty(nd)
        cur = self._cur              # the last contact step's active set: (act, rows, Ha, e, W, inters, laws, key)
        q, w = np.empty(cur[1].shape[0]), np.empty(cur[1].shape[0])
        code = K.fused_step_start(buf, nd, self.first, self.unil_off, self.gh, self.thr, self.Rd, vfree, self._act,
                                  cur[0], cur[2], cur[3], cur[1], q, self.warm, w)
        warm = self.warm
        if code == 0:
            rows, Ha, lam = self._no_rows, self._no_Ha, self._no_lam
        else:
            lam = None
            if code == 1 and cur[7] == self.key:
                rows, Ha = cur[1], cur[2]
                lam = sim.resolve(self.key, q, w)
                if lam is None:
                    self.key = None      # the simulation's last problem is another one: hand W over again
            if lam is None:
                lam, rows, Ha = self._solve_index_set(sim, vfree)
            warm = warm.copy()
        out = np.empty(buf.shape[0])
        H = self.H_lin
        top = K.fused_step_end(buf, out, nd, vfree, lam, rows, self.sys.d, self.c1, self.c2, H.indptr, H.indices,
                               H.data, self.b_lin, warm)
        if not top <= K.STATE_LIMIT:
            self._blow_up(sim, out[:nd], out[nd:2 * nd])
        # (the mask: the index set at first use; ẏ_k of the active rows, the restitution's, when asked)
        self.last = (self._act if code else None, lam, vfree, Ha, (buf, 3 * nd + (buf.shape[0] - 3 * nd) // 4, rows))
        self.pending = (out, warm, self.gap)
        return 1, 0.0, True

    def _solve_index_set(self, sim, vfree):
        """The OSNS problem of the index set ``self._act`` (a new one, or W to be handed over again)
        through an :class:`Assembly`; returns (λ, rows, H_a)."""
        act = self._act
        key = act.tobytes()
        c = self._sets.get(key)
        if c is None:
            if len(self._sets) > 64:
                self._sets.clear()
            idx = np.flatnonzero(act)
            rows = np.flatnonzero(act[self.row_inter])
            Ha = np.ascontiguousarray(self.Hd[rows])
            c = self._sets[key] = (act.copy(), rows, Ha, self.erow[rows], delassus(Ha, self.sys.d),
                                   self.inter_arr[idx].tolist(), self.law_arr[idx].tolist(), (id(self), key))
        _, rows, Ha, e, W, inters, laws, k = c
        q = np.empty(rows.shape[0])
        K.problem_vector(Ha, vfree, e, self.buf, self.nv, rows, q)
        asm = Assembly(key=k, interactions=inters, q=q, W=None if k == self.key else W, constant=True,
                       H=Ha, vfree=vfree, osi=self, warm=self.warm[rows], laws=laws)
        self._cur = c
        lam = sim.solve_assembly(asm)
        self.key = k
        return lam, rows, Ha

    def free_flight(self, sim, nmax, rec, j0) -> int:
        """Up to ``nmax`` steps without contact by the compiled :func:`~nsopt.modeling._kernels.free_flight`
        (linear time-invariant models), recorded into rows j0.. of ``rec``; the new state pending.
        Returns the steps taken (0: the next step needs :meth:`step`)."""
        if not self.fused_phases:
            return 0
        buf = self.buf.copy()           # a fresh state: what the objects read before stays a snapshot
        H = self.H_lin
        s = K.free_flight(buf, self.nv, self.first, self.unil_off, self.gh, self.thr, self.Rd, self.c1, self.c2,
                          H.indptr, H.indices, H.data, self.b_lin, nmax, rec, j0)
        self.pending = (buf, self.warm, self.gap) if s else None
        return s

    def commit(self, k):
        """Make the pending state (of :meth:`step` or :meth:`free_flight`) the current one, the state after
        step ``k`` (``count``: the simulation reconciles its step count with it after an interrupt)."""
        buf, warm, gap = self.pending
        self.buf, self.warm, self.gap, self.count = buf, warm, gap, k
        self.pending = None
