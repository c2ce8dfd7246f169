r"""One-step integrators: :class:`MoreauJeanOSI` (Lagrangian systems, impulse–velocity level) and
:class:`EulerMoreauOSI` (first-order systems), the schemes of Siconos' kernel.

Each integrator, given the state at :math:`t_k`, computes the free state, assembles the one-step
nonsmooth (OSNS) problem of the active interactions as an :class:`Assembly` (matrix, vector, one
block per interaction), lets the :class:`~nsopt.modeling.TimeStepping` solve it, and updates the state.
Nonlinear systems or relations get a Newton loop around the OSNS solve. The derivation of what is
assembled is in ``formulations/time_stepping.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..exceptions import ModelingError
from ._batch import BatchMoreauJean
from ._check import label, scalar

_NOZ = np.zeros(0)
SPARSE_DOFS = 300        # above this many degrees of freedom, H and W are assembled sparse


_ROW_PATTERNS: dict = {}


def block_coords(off, m, c):
    """Row and column indices of a dense m x len(c) block placed at rows off.., columns c (row-major)."""
    key = (m, len(c))
    pat = _ROW_PATTERNS.get(key)
    if pat is None:
        pat = _ROW_PATTERNS[key] = np.repeat(np.arange(m), len(c))
    return off + pat, np.tile(c, m)


def assemble_rows(rows, cols, vals, m, ndof, sparse):
    """The m x ndof matrix of the given entries (duplicates summed): CSR when ``sparse``, else dense."""
    if sparse:
        return sp.csr_matrix((vals, (rows, cols)), shape=(m, ndof))
    H = np.zeros((m, ndof))
    np.add.at(H, (rows, cols), vals)
    return H


def delassus(S, H, left, extras, sparse):
    r"""The OSNS matrix :math:`W = L \hat M^{-1} H^\top` (+ the extra diagonal blocks ``extras``,
    a list of (offset, block)), with ``left`` = L the scaled rows of H; CSR when ``sparse``."""
    if sparse and S.all_diag and sp.isspmatrix_csr(H):
        # M̂⁻¹Hᵀ is the transpose of H with its columns divided by the diagonal (the same products)
        Xt = sp.csr_matrix((H.data * (1.0 / S._d)[H.indices], H.indices, H.indptr), shape=H.shape)
        X = Xt.T
    else:
        X = S.minv(H.T.tocsc() if sparse else H.T)
    W = left @ X
    if sparse:
        W = sp.csr_matrix(W)
        if extras:
            W = W.tolil()
            for o, E in extras:
                W[o:o + E.shape[0], o:o + E.shape[0]] = W[o:o + E.shape[0], o:o + E.shape[0]].toarray() + E
            W = W.tocsr()
    else:
        W = np.asarray(W)
        for o, E in extras:
            W[o:o + E.shape[0], o:o + E.shape[0]] += E
    return W


class Factor:
    """A kept factorisation of an iteration matrix: division for a diagonal one, LU otherwise."""

    __slots__ = ("d", "lu", "n")

    def __init__(self, W, owner="W"):
        W = np.asarray(W, dtype=float)
        self.n = W.shape[0]
        off = W - np.diag(np.diag(W))
        if not np.any(off):
            d = np.diag(W).copy()
            if np.any(d == 0):
                raise ModelingError(owner, "iteration matrix", "is singular (zero on its diagonal)")
            self.d, self.lu = d, None
        else:
            self.d = None
            self.lu = sla.lu_factor(W, check_finite=False)
            if np.any(np.diag(self.lu[0]) == 0):
                raise ModelingError(owner, "iteration matrix", "is singular")

    def solve(self, b):
        if self.d is not None:
            return b / self.d if b.ndim == 1 else b / self.d[:, None]
        return sla.lu_solve(self.lu, b, check_finite=False)


@dataclass
class Assembly:
    """One step's OSNS data: ``w = W λ + q`` over the active interactions, in order.

    ``W`` is None when the integrator knows it equals the previous step's (same active set, constant
    operators): the simulation then reuses its problem with :meth:`nsopt.problems.Problem.replace`.
    ``glob`` holds (M, H, q, b) for a global friction-contact problem. ``H``, ``vfree`` and ``osi``
    are there for builders that need the operators themselves (a multiple-impact problem, say).
    """

    key: tuple
    interactions: list
    q: np.ndarray
    W: object = None
    constant: bool = False
    glob: tuple | None = None
    sizes: list = field(default_factory=list)
    H: object = None          # the active rows G0 (m x ndof), when the integrator has them
    vfree: np.ndarray | None = None
    osi: object = None        # the integrator (``osi.iteration_matrix()`` gives the stacked M̂)
    warm: np.ndarray | None = None   # the warm start, when the integrator keeps it stacked (it stores λ too)
    laws: list | None = None         # the interactions' laws, when the integrator has them at hand
    trusted_W: bool = False          # W built by a compiled assembly in validated form (canonical CSR, finite)
    mu: np.ndarray | None = None     # the laws' friction coefficients (read-only, checked), when the integrator keeps them


class OneStepIntegrator:
    """Base class: ``theta`` and the order of the systems it integrates."""

    order = 0

    def __init__(self, theta=0.5, *, name=None):
        self.name = name
        self.theta = scalar(theta, label(self), "theta", low=0.0, high=1.0)

    def __repr__(self):
        return f"{label(self)}(theta={self.theta})"


def _blockdiag_solve(factors, offsets, X):
    """Apply the block-diagonal inverse (one Factor per system) to the rows of X (dense)."""
    out = np.empty_like(X)
    for f, (a, b) in zip(factors, offsets):
        out[a:b] = f.solve(X[a:b])
    return out


class _Stacked:
    """Global (stacked) view of the systems: offsets, per-system factor of the iteration matrix."""

    def __init__(self, systems):
        self.systems = systems
        self._members = tuple(systems)      # the stacking (``systems`` is the model's list, which grows)
        self.offsets, off = [], 0
        self.index = {}
        for k, ds in enumerate(systems):
            self.offsets.append((off, off + ds.n))
            self.index[id(ds)] = k
            off += ds.n
        self.ndof = off
        self._ranges = [np.arange(a, b) for a, b in self.offsets]
        self.factors = [None] * len(systems)
        self.all_diag = False

    @classmethod
    def of(cls, systems, kept=None):
        """The stacking of ``systems``: ``kept`` (the last one) when it holds the same systems in the
        same order (a topology change that only linked or removed interactions), else a new one."""
        if kept is not None and len(kept._members) == len(systems) and all(
                a is b for a, b in zip(kept._members, systems)):
            return kept
        return cls(systems)

    def cols(self, inter):
        """Global column indices of an interaction's concatenated state (kept on the interaction
        while the stacking and its systems are the same: a topology change keeps the stacking)."""
        dss = inter.systems
        kept = inter.__dict__.get("_cols_of")
        if kept is not None and kept[0] is self and kept[1] is dss:
            return kept[2]
        r, ix = self._ranges, self.index
        c = r[ix[id(dss[0])]] if len(dss) == 1 else np.concatenate([r[ix[id(dss[0])]], r[ix[id(dss[1])]]])
        inter._cols_of = (self, dss, c)
        return c

    def minv(self, X):
        """M̂⁻¹ X for X (ndof,) or (ndof, k), dense or sparse (sparse X comes back sparse)."""
        if self.all_diag:
            d = self._d
            if sp.issparse(X):
                return sp.diags(1.0 / d) @ X
            return X / d if X.ndim == 1 else X / d[:, None]
        if sp.issparse(X):
            X = X.toarray()
        return _blockdiag_solve(self.factors, self.offsets, X)

    def refresh_diag(self):
        self.all_diag = all(f.d is not None for f in self.factors)
        if self.all_diag:
            self._d = np.concatenate([f.d for f in self.factors])


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
    (γ = 1/2), Siconos 4.4's ``MoreauJeanOSI::addInteractionInIndexSet``.

    Parameters
    ----------
    theta : float in [0, 1], 0.5 by default.
    gamma : the γ of the activation rule (None: 1/2, as Siconos).
    activation_threshold : 0 by default.
    batch : take the batched path (stacked arrays, one evaluation per group of relations; see
        :mod:`nsopt.modeling._batch`) where it applies (True by default); False: the
        per-interaction path everywhere (the reference the batched path is tested against).
    """

    order = 2

    def __init__(self, theta=0.5, gamma=None, *, activation_threshold=0.0, batch=True, name=None):
        super().__init__(theta, name=name)
        self.batch = bool(batch)
        self.compiled = True    # linear time-invariant models: the compiled twins of the batched step
        self.gamma = 0.5 if gamma is None else scalar(gamma, label(self), "gamma", low=0.0, high=1.0)
        self.activation_threshold = scalar(activation_threshold, label(self), "activation_threshold")

    # ---------------------------------------------------------------- set-up
    def initialize(self, sim):
        nsds = sim.nsds
        fast = getattr(self, "_fast", None)
        if fast is not None and self.fast and self.batch and self.sim is sim and self.h == sim.h \
                and self.S.__dict__.get("_mj") == (self.h, self.theta):
            # a topology change the batch follows in place (contact detection: links and removals)
            changes = nsds.changes_since(self._version)
            if changes and fast.follow(changes, sim):
                self.inters = list(nsds.interactions)
                self._version = nsds._version
                self.nonlinear = not fast.constant_relations
                return
        self.sim = sim
        self.h = sim.h
        self.S = _Stacked.of(nsds.dynamical_systems, getattr(self, "S", None))
        self.inters = list(nsds.interactions)
        self._inter_cols = None      # the per-interaction path's columns (the batched path keeps its own)
        S, key = self.S, (self.h, self.theta)
        if S.__dict__.get("_mj") != key:        # a new stacking (or step, or θ): the constant factors
            S._const_ds = [ds.constant_iteration_matrix for ds in S.systems]
            for k, ds in enumerate(S.systems):
                if S._const_ds[k]:
                    kept = getattr(ds, "_mj_factor", None)      # kept across topology changes
                    if kept is None or kept[0] != key:
                        kept = (key, Factor(self._iteration_matrix(ds, sim.t, ds.q, ds.v), label(ds)))
                        ds._mj_factor = kept
                    S.factors[k] = kept[1]
            if all(S._const_ds):
                S.refresh_diag()
            S._mj = key
        self._const_ds = S._const_ds
        # Newton iterations only for nonlinear systems; nonlinear relations on linear systems take one
        # pass per step, as Siconos (whose residual of a linear system is zero)
        self.iterate = any(not c for c in self._const_ds)
        self._stamp = None
        self._H_cache = None   # (key, H, left) of the last assembly with constant operators
        self._version = nsds._version
        facts = BatchMoreauJean.applies(self, sim) if self.batch else None
        self.fast = facts is not None
        if self.fast:       # (it computes the outputs of the interactions new to this integrator)
            self._fast = BatchMoreauJean(self, sim, facts, getattr(self, "_fast", None))
            self.nonlinear = not self._fast.constant_relations
        else:
            self.nonlinear = not all(self._const_ds) or any(not i.relation.constant for i in self.inters)
            self._inter_cols = {id(i): self.S.cols(i) for i in self.inters}
            for inter in self.inters:
                if getattr(inter, "_mj_owner", None) is not self:   # new interactions only
                    self._update_output(inter, sim.t)
                    inter._mj_owner = self
            self._fast = None
            for inter in self.inters:
                inter._detach()
            for ds in self.S.systems:
                ds._detach()
            self._batch_linear_outputs()

    def _batch_linear_outputs(self):
        """Stack the LagrangianLinearTIR interactions: their outputs are two sparse products per step."""
        from .relations import LagrangianLinearTIR

        lin = [i for i in self.inters if type(i.relation) is LagrangianLinearTIR]
        self._other_inters = [i for i in self.inters if type(i.relation) is not LagrangianLinearTIR]
        self._lin = None
        if len(lin) < 8:
            self._other_inters = self.inters
            return
        rows, cols, vals, b, slices, off = [], [], [], [], [], 0
        for inter in lin:
            rel, m = inter.relation, inter.size
            c = self._inter_cols[id(inter)]
            rr, cc = block_coords(off, m, c)
            rows.append(rr)
            cols.append(cc)
            vals.append(rel.H.ravel())
            b.append(rel.offset(self._Z(inter)))
            slices.append((off, off + m))
            off += m
        H = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(off, self.S.ndof))
        self._lin = (lin, H, np.concatenate(b), slices)

    def _linear_outputs(self, qg, vg):
        if self._lin is None:
            return
        lin, H, b, slices = self._lin
        Y0, Y1 = H @ qg + b, H @ vg
        for inter, (lo, hi) in zip(lin, slices):
            inter.y[0] = Y0[lo:hi]
            D = inter.relation.D
            inter.y[1] = Y1[lo:hi] if D is None else Y1[lo:hi] + D @ inter.lambda_[1]

    def _iteration_matrix(self, ds, t, q, v):
        h, th = self.h, self.theta
        W = np.array(ds.mass(q), dtype=float)
        K, C = ds.jacobian_forces(t, q, v)
        if C is not None:
            W += h * th * C
        if K is not None:
            W += h * h * th * th * K
        return W

    def _concat(self, inter, attr):
        dss = inter.systems
        if len(dss) == 1:
            return getattr(dss[0], attr)
        return np.concatenate([getattr(d, attr) for d in dss])

    def _Z(self, inter):
        dss = inter.systems
        if len(dss) == 1:
            return dss[0].z
        a, b = dss[0].z, dss[1].z
        return _NOZ if a.shape[0] == 0 and b.shape[0] == 0 else np.concatenate([a, b])

    def _update_output(self, inter, t, qg=None, vg=None):
        rel = inter.relation
        if qg is None:
            Q, V = self._concat(inter, "q"), self._concat(inter, "v")
        else:                       # from the stacked state: one gather instead of two concatenations
            c = self._inter_cols[id(inter)]
            Q, V = qg[c], vg[c]
        Z = self._Z(inter)
        lam0, lam1 = inter.lambda_
        if rel.compliant:
            inter.y[0] = rel.h(Q, t, lam0, Z)
            inter._gap = rel.h(Q, t, np.zeros(inter.size), Z)[0]   # the activation test: y at λ = 0
            G1 = rel.G1(Q, t, lam0, Z)
            inter.y[1] = rel.G0(Q, t, lam0, Z) @ V
            if G1 is not None and getattr(inter, "_lam0_prev", None) is not None:
                inter.y[1] = inter.y[1] + G1 @ (lam0 - inter._lam0_prev) / self.h
        else:
            inter.y[0] = rel.h(Q, t, lam0, Z)
            # the Jacobian of this Newton iterate when the OSNS used it (Siconos keeps it for the output)
            st = self._stamp
            G0 = inter._G0_used if st is not None and getattr(inter, "_G0_stamp", None) == st else None
            y1 = rel.velocity(Q, V, t, lam1, Z, G0)
            D = getattr(rel, "D", None)
            if D is not None:
                y1 = y1 + D @ lam1
            inter.y[1] = y1

    # ---------------------------------------------------------------- one step
    def active_set(self):
        """The interactions of the index set for the coming step (Siconos 4.4's rule)."""
        h, g, thr = self.h, self.gamma, self.activation_threshold
        out = []
        for inter in self.inters:
            y0 = inter._gap if inter.relation.compliant else inter.y[0][0]
            if not inter.nslaw.unilateral or y0 + g * h * inter.y[1][0] <= thr:
                out.append(inter)
        return out

    def fast_forward(self, sim, nmax) -> int:
        """Take up to ``nmax`` steps without contact at once (compiled, linear time-invariant models on
        the batched path), recording them; returns how many (0: the next step needs :meth:`step`)."""
        fast = self._fast
        if fast is None or not fast.can_fly or not self.compiled or sim.nsds._version != self._version:
            return 0
        rec, j0 = sim.trajectory._reserve(sim.k + 1, nmax)
        return fast.fly(sim, nmax, rec, j0)

    def step(self, sim):
        """Advance the systems from sim.t to sim.t + h; returns the Newton report (iterations, residual, converged)."""
        if sim.nsds._version != self._version:
            self.initialize(sim)
        if self.fast:
            fast = self._fast
            return fast.lean_step(sim) if fast.can_fly and self.compiled else fast.step(sim)
        h, th = self.h, self.theta
        t0, t1 = sim.t, sim.t + h
        S = self.S
        systems = S.systems
        for ds in systems:
            ds._qk, ds._vk = ds.q.copy(), ds.v.copy()
            ds._Fk = ds.forces(t0, ds.q, ds.v) if not ds.constant_iteration_matrix else None
        active = self.active_set()
        for inter in self.inters:
            inter._y1k = inter.y[1].copy()
            inter._lam0_prev = inter.lambda_[0].copy()
            inter.lambda_[0] = np.zeros(inter.size)
            inter.lambda_[1] = np.zeros(inter.size)
        # Newton initial state (Siconos computeInitialNewtonState): q = q_k + h v_k
        for ds in systems:
            ds.q = ds._qk + h * ds._vk
        it, converged, res = 0, False, np.inf
        max_it = sim.newton_max_iter if self.iterate else 1
        record = None
        while it < max_it:
            it += 1
            self._stamp = (sim.k, it)
            vfree = self._free_velocity(t0, t1)
            lam, record = self._solve_osns(sim, active, vfree, t1)
            dv_norm = self._update_state(active, lam, vfree, t1)
            qg, vg = self._stacked_state
            self._linear_outputs(qg, vg)
            for inter in self._other_inters:
                self._update_output(inter, t1, qg, vg)
            self._stamp = None
            if not self.iterate:
                converged, res = True, 0.0
                break
            res = max(self._residual(t0, t1), dv_norm)
            if res <= sim.newton_tol:
                converged = True
                break
        return it, res, converged, record

    def _free_velocity(self, t0, t1):
        h, th, S = self.h, self.theta, self.S
        parts = []
        changed = False
        for k, ds in enumerate(S.systems):
            if self._const_ds[k] and not ds.has_state_forces and ds._fext is None:
                parts.append(ds._vk)
                continue
            if self._const_ds[k]:
                # Siconos' LagrangianLinearTIDS residual: h C v_k + h K q_k + h²θ K v_k - h fext_θ
                R = np.zeros(ds.n)
                K, C = ds.jacobian_forces(t0, ds._qk, ds._vk)
                if C is not None:
                    R += h * (C @ ds._vk)
                if K is not None:
                    R += h * h * th * (K @ ds._vk) + h * (K @ ds._qk)
                fe0, fe1 = ds.fext(t0), ds.fext(t1)
                if fe0 is not None:
                    R -= h * (1 - th) * fe0 + h * th * fe1
                parts.append(ds._vk - S.factors[k].solve(R))
            else:
                W = self._iteration_matrix(ds, t1, ds.q, ds.v)
                S.factors[k] = Factor(W, label(ds))
                changed = True
                R = ds.mass(ds.q) @ (ds.v - ds._vk) - h * (1 - th) * ds._Fk - h * th * ds.forces(t1, ds.q, ds.v)
                parts.append(ds.v - S.factors[k].solve(R))
        if changed:
            S.refresh_diag()
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _rows(self, inter, t1, vfree_loc):
        """G0 (m x n_loc), row scale, extra diagonal block, and q part for one active interaction."""
        rel = inter.relation
        Q, Z = self._concat(inter, "q"), self._Z(inter)
        lam1 = inter._lam_prev if hasattr(inter, "_lam_prev") else None
        if rel.compliant:
            h, th = self.h, self.theta
            lam0 = inter._lam0_prev
            G0 = rel.G0(Q, t1, lam0, Z)
            G1 = rel.G1(Q, t1, lam0, Z)
            Qk, Vk = self._concat(inter, "_qk"), self._concat(inter, "_vk")
            qv = rel.h(Q, t1, lam0, Z) + G0 @ (Qk + h * (1 - th) * Vk + h * th * vfree_loc - Q)
            extra = None
            if G1 is not None:
                qv = qv - G1 @ lam0
                extra = G1 / h
            inter._G0_used, inter._G0_stamp = G0, None
            return G0, h * th, extra, qv
        G0 = inter._G0_used = rel.G0(Q, t1, lam1, Z)
        inter._G0_stamp = self._stamp
        qv = G0 @ vfree_loc
        hd = rel.hdot(Q, t1, Z)
        if hd is not None:
            qv = qv + hd
        r = inter.nslaw.restitution(inter._y1k)
        if r is not None:
            qv = qv + r
        return G0, 1.0, getattr(rel, "D", None), qv

    def _solve_osns(self, sim, active, vfree, t1):
        if not active:
            return None, None
        S = self.S
        key = tuple(id(i) for i in active)
        cache = self._H_cache
        const = not self.nonlinear and all(i.relation.constant for i in active) and not any(
            i.relation.compliant for i in active)
        reuse = const and cache is not None and cache[0] == key and sim.osns_kind != "gfc3d"
        qs = []
        if reuse:
            H = cache[1]
            q = np.asarray(H @ vfree).reshape(-1)
            off = 0
            for inter in active:
                m = inter.size
                r = inter.nslaw.restitution(inter._y1k)
                if r is not None:
                    q[off:off + m] += r
                off += m
            asm = Assembly(key=key, interactions=active, q=q, W=None, constant=True)
            return sim.solve_assembly(asm), None
        sparse = S.ndof > SPARSE_DOFS
        rows, cols, vals, extras, scales, off = [], [], [], [], [], 0
        for inter in active:
            c = self._inter_cols[id(inter)]
            G0, s, extra, qv = self._rows(inter, t1, vfree[c])
            m = inter.size
            qs.append(qv)
            rr, cc = block_coords(off, m, c)
            rows.append(rr)
            cols.append(cc)
            vals.append(np.asarray(G0, dtype=float).ravel())
            scales.append(np.full(m, s))
            if extra is not None:
                extras.append((off, extra))
            off += m
        mtot = off
        H = assemble_rows(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), mtot, S.ndof, sparse)
        q = np.concatenate(qs)
        scale = np.concatenate(scales)
        left = H if np.all(scale == 1.0) else (sp.diags(scale) @ H if sparse else H * scale[:, None])
        glob = None
        if sim.osns_kind == "gfc3d":
            Mhat = self._global_matrix()
            glob = (Mhat, H.T if sparse else H.T.copy(), np.asarray(Mhat @ vfree).reshape(-1), q - np.asarray(H @ vfree).reshape(-1))
            W = None
        else:
            W = delassus(S, H, left, extras, sparse)
        if const:
            self._H_cache = (key, left, None, extras)
        asm = Assembly(key=key, interactions=active, q=q, W=W, constant=const, glob=glob, H=H, vfree=vfree, osi=self)
        return sim.solve_assembly(asm), None

    def iteration_matrix(self):
        """The stacked iteration matrix M̂ = M + hθC + h²θ²K of all systems (sparse)."""
        return self._global_matrix()

    def _global_matrix(self):
        blocks = []
        for k, ds in enumerate(self.S.systems):
            f = self.S.factors[k]
            if f.d is not None:
                blocks.append(sp.diags(f.d))
            else:
                blocks.append(sp.csr_matrix(self._iteration_matrix(ds, self.sim.t + self.h, ds.q, ds.v)))
        return sp.block_diag(blocks, format="csr")

    def _update_state(self, active, lam, vfree, t1):
        """v = v_free + M̂⁻¹ G0ᵀ λ, q = q_k + h((1-θ) v_k + θ v); returns ||Δv|| relative."""
        h, th, S = self.h, self.theta, self.S
        p = np.zeros(S.ndof)
        seen = set()
        if active:
            off = 0
            for inter in active:
                m = inter.size
                lm = lam[off:off + m]
                off += m
                seen.add(id(inter))
                inter.lambda_[1] = lm.copy()
                inter._lam_prev = inter.lambda_[1]
                if inter.relation.compliant:
                    inter.lambda_[0] = lm / h
                c = self._inter_cols[id(inter)]
                np.add.at(p, c, np.asarray(inter._G0_used).T @ lm)
        for inter in self.inters:
            if id(inter) not in seen:
                inter._lam_prev = np.zeros(inter.size)
        v = vfree + S.minv(p) if active else vfree
        systems = S.systems
        vold = np.concatenate([ds.v for ds in systems])
        qk = np.concatenate([ds._qk for ds in systems])
        vk = np.concatenate([ds._vk for ds in systems])
        qn = qk + h * (1 - th) * vk + h * th * v
        dv = float(np.linalg.norm(v - vold)) / (1.0 + float(np.linalg.norm(v)))
        for k, ds in enumerate(systems):
            a, b = S.offsets[k]
            ds.v, ds.p, ds.q = v[a:b], p[a:b], qn[a:b]
        self._stacked_state = (qn, v)
        return dv

    def _residual(self, t0, t1):
        """Siconos' Newton residual of the nonlinear systems: ||M(v - v_k) - h(1-θ)F_k - hθF - p||."""
        h, th, res = self.h, self.theta, 0.0
        for k, ds in enumerate(self.S.systems):
            if self._const_ds[k]:
                continue
            R = ds.mass(ds.q) @ (ds.v - ds._vk) - h * (1 - th) * ds._Fk - h * th * ds.forces(t1, ds.q, ds.v) - ds.p
            res = max(res, float(np.linalg.norm(R)))
        return res


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
    """

    order = 1

    def __init__(self, theta=0.5, gamma=None, *, name=None):
        super().__init__(theta, name=name)
        self.gamma = None if gamma is None else scalar(gamma, label(self), "gamma", low=0.0, high=1.0)

    def initialize(self, sim):
        nsds = sim.nsds
        self.sim, self.h = sim, sim.h
        self.S = _Stacked(nsds.dynamical_systems)
        self.inters = list(nsds.interactions)
        self._inter_cols = {id(i): self.S.cols(i) for i in self.inters}
        self._lin_ds = [ds.linear and ds.constant_jacobian for ds in self.S.systems]
        self.nonlinear = any(not c for c in self._lin_ds) or any(not i.relation.linear for i in self.inters)
        self._const = all(self._lin_ds) and all(i.relation.constant for i in self.inters)
        self._W = [None] * len(self.S.systems)
        self._cache = None
        for inter in self.inters:
            X, Z = self._concat(inter, "x"), self._Z(inter)
            inter.y[0] = inter.relation.output(X, sim.t, inter.lambda_[0], Z)
        self._version = nsds._version

    _concat = MoreauJeanOSI._concat
    _Z = MoreauJeanOSI._Z

    def step(self, sim):
        if sim.nsds._version != self._version:
            self.initialize(sim)
        h, th = self.h, self.theta
        gam = 1.0 if self.gamma is None else self.gamma
        t0, t1 = sim.t, sim.t + h
        S = self.S
        for ds in S.systems:
            ds._xk = ds.x.copy()
            ds._rk = ds.r.copy()
            ds._fk = ds.f(t0, ds.x)
        it, converged, res, rec = 0, False, np.inf, None
        max_it = sim.newton_max_iter if self.nonlinear else 1
        lam_alpha = {id(i): i.lambda_[0].copy() for i in self.inters}
        while it < max_it:
            it += 1
            # Jacobians of the relations at the current iterate
            jac = {}
            for inter in self.inters:
                X, Z = self._concat(inter, "x"), self._Z(inter)
                C, D, K, B = inter.relation.jacobians(X, t1, lam_alpha[id(inter)], Z)
                jac[id(inter)] = (X, Z, C, D, K, B)
            reuse = self._const and self._cache is not None
            if not reuse:
                for k, ds in enumerate(S.systems):
                    W = np.eye(ds.n) - h * th * ds.jacobian_f(t1, ds.x)
                    a, b = S.offsets[k]
                    for inter in self.inters:
                        K = jac[id(inter)][4]
                        if K is None or not any(d is ds for d in inter.systems):
                            continue
                        c = self._inter_cols[id(inter)]
                        sel = (c >= a) & (c < b)
                        W -= h * gam * K[np.ix_(sel, sel)]
                    S.factors[k] = Factor(W, label(ds))
                S.refresh_diag()
            # free state: x_free = x - W⁻¹[x - x_k - h(1-θ) f_k - hθ f(x) - h(1-γ) r_k]
            xfree = np.empty(S.ndof)
            for k, ds in enumerate(S.systems):
                a, b = S.offsets[k]
                R = ds.x - ds._xk - h * (1 - th) * ds._fk - h * th * ds.f(t1, ds.x)
                if self.gamma is not None:
                    R = R - h * (1 - gam) * ds._rk
                xfree[a:b] = ds.x - S.factors[k].solve(R)
            # nonlinear relations: shift the free state by hγ W⁻¹ (g_α - B λ_α)
            xp = xfree
            if self.nonlinear:
                shift = np.zeros(S.ndof)
                for inter in self.inters:
                    X, Z, C, D, K, B = jac[id(inter)]
                    if inter.relation.linear:
                        continue
                    la = lam_alpha[id(inter)]
                    g = inter.relation.input(X, t1, la, Z)
                    np.add.at(shift, self._inter_cols[id(inter)], g - B @ la)
                xp = xfree + h * gam * S.minv(shift)
            # assembly
            qs = []
            for inter in self.inters:
                X, Z, C, D, K, B = jac[id(inter)]
                c = self._inter_cols[id(inter)]
                if inter.relation.linear:
                    qs.append(C @ xp[c] + inter.relation.offset(t1, Z))
                else:
                    la = lam_alpha[id(inter)]
                    qs.append(inter.relation.output(X, t1, la, Z) + C @ (xp[c] - X) - D @ la)
            q = np.concatenate(qs) if qs else np.zeros(0)
            if reuse:
                asm = Assembly(key=self._cache, interactions=self.inters, q=q, W=None, constant=True)
            else:
                mtot = q.shape[0]
                Cg = np.zeros((mtot, S.ndof))
                Bg = np.zeros((S.ndof, mtot))
                Dg = np.zeros((mtot, mtot))
                off = 0
                for inter in self.inters:
                    X, Z, C, D, K, B = jac[id(inter)]
                    c = self._inter_cols[id(inter)]
                    m = inter.size
                    Cg[off:off + m, c] = C
                    Bg[c, off:off + m] = B
                    Dg[off:off + m, off:off + m] = D
                    off += m
                W = Dg + h * gam * Cg @ S.minv(Bg)
                key = ("euler-moreau", tuple(id(i) for i in self.inters))
                if self._const:
                    self._cache = key
                asm = Assembly(key=key, interactions=self.inters, q=q, W=W, constant=self._const)
            lam = sim.solve_assembly(asm) if self.inters else np.zeros(0)
            # update: r = g_α + B(λ - λ_α) (= Bλ for linear relations), x = x_p + hγ W⁻¹ B λ
            r = np.zeros(S.ndof)
            off, dl = 0, 0.0
            new_alpha = {}
            for inter in self.inters:
                X, Z, C, D, K, B = jac[id(inter)]
                m = inter.size
                lm = lam[off:off + m].copy()
                off += m
                dl = max(dl, float(np.linalg.norm(lm - lam_alpha[id(inter)])) / (1.0 + float(np.linalg.norm(lm))))
                new_alpha[id(inter)] = lm
                inter.lambda_[0] = lm
                np.add.at(r, self._inter_cols[id(inter)], B @ lm)
            x = xp + h * gam * S.minv(r) if self.inters else xp
            dx = 0.0
            for k, ds in enumerate(S.systems):
                a, b = S.offsets[k]
                dx = max(dx, float(np.linalg.norm(x[a:b] - ds.x)) / (1.0 + float(np.linalg.norm(x[a:b]))))
                ds.x = x[a:b].copy()
            for inter in self.inters:
                X, Z = self._concat(inter, "x"), self._Z(inter)
                lm = inter.lambda_[0]
                inter.y[0] = inter.relation.output(X, t1, lm, Z)
            for ds in S.systems:
                ds.r = np.zeros(ds.n)
            for inter in self.inters:
                X, Z = self._concat(inter, "x"), self._Z(inter)
                g = inter.relation.input(X, t1, inter.lambda_[0], Z)
                o = 0
                for ds in inter.systems:
                    ds.r = ds.r + g[o:o + ds.n]
                    o += ds.n
            lam_alpha = new_alpha
            if not self.nonlinear:
                converged, res = True, 0.0
                break
            res = max(dx, dl)
            if res <= sim.newton_tol:
                converged = True
                break
        return it, res, converged, rec
