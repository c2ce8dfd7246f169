r"""Moreau–Jean on stacked arrays (the batched path of :class:`~nsopt.modeling.MoreauJeanOSI`).

When every system has a constant iteration matrix (``LagrangianLinearTIDS``, or ``LagrangianDS`` with a
constant M and no state-dependent force) and every relation is a ``LagrangianLinearTIR`` or a
``LagrangianScleronomousR`` with a standard law, one step is a fixed sequence of operations on the
stacked state :math:`Q, V` (all systems) and the stacked outputs :math:`Y_0, Y_1` (all interactions):

- the index set from :math:`Y_0 + \gamma h Y_1` on each interaction's first row, at once;
- the linear relations as one constant sparse :math:`H`; the scleronomous ones grouped by plug-in
  (``vectorized=True``: one call of ``h`` / ``G0`` per group and step);
- the rows :math:`G_0` of the active interactions as one sparse matrix, :math:`W = G_0\hat M^{-1}G_0^\top`
  as one product, :math:`q = G_0 v_{free} + e \odot \dot y_k`;
- :math:`p = G_0^\top\lambda`, :math:`v = v_{free} + \hat M^{-1}p`, the outputs, the warm starts,
  all stacked (the systems and interactions get views).

It computes what the per-interaction path computes (same formulas, same order of the OSNS rows), so
the two trajectories agree to rounding (tests/test_modeling_batch.py). ``formulations/time_stepping.md``
(the batched path) lists what it covers; anything else (compliant or rheonomous relations, nonlinear
systems and the Newton loop, ``gfc3d``, other laws) takes the per-interaction path.
"""

from __future__ import annotations

import collections
import itertools
import operator

import numpy as np
import scipy.sparse as sp

from . import _kernels as K
from .laws import (ComplementarityConditionNSL, EqualityConditionNSL, NewtonImpactFrictionNSL, NewtonImpactNSL,
                   RelayNSL)
from .relations import LagrangianLinearTIR, LagrangianScleronomousR
from .systems import LagrangianDS, LagrangianLinearTIDS

_MODULES: dict = {}


def _module(name):
    """``nsopt.modeling.osi`` or ``.simulation`` (they import this module: imported at first use)."""
    mod = _MODULES.get(name)
    if mod is None:
        import importlib

        mod = _MODULES[name] = importlib.import_module(f"nsopt.modeling.{name}")
    return mod


_SRC = operator.attrgetter("_src")
LAWS = (NewtonImpactNSL, ComplementarityConditionNSL, NewtonImpactFrictionNSL, EqualityConditionNSL, RelayNSL)


def restitution_rows(law) -> np.ndarray:
    """The per-row coefficient c of a standard law's restitution term c ⊙ ẏ_k (linear in ẏ_k)."""
    r = law.restitution(np.ones(law.size))
    return np.zeros(law.size) if r is None else np.asarray(r, dtype=float)


def _facts(inter, S) -> tuple:
    """What the batch needs of one interaction that changes only with the stacking ``S`` of the systems,
    the interaction's systems, its law or its relation: (size, unilateral, restitution rows
    (:func:`restitution_rows`), global columns, linear?, H.ravel(), D, batch key, system indices, the
    constant offset b of a linear relation without F (None otherwise), law, relation constant?), or None
    when the batched path does not take it. Kept on the interaction, for the next full build of the
    batch."""
    dss, law, rel = inter.systems, inter.nslaw, inter.relation
    kept = inter.__dict__.get("_batch_facts")
    if kept is not None and kept[0] is S and kept[1] is dss and kept[2] is law and kept[3] is rel:
        return kept[4]
    lin = type(rel) is LagrangianLinearTIR
    if not (lin or type(rel) is LagrangianScleronomousR) or type(law) not in LAWS:
        return None                     # not on the batched path
    f = (inter.size, bool(law.unilateral), restitution_rows(law), S.cols(inter), lin,
         rel.H.ravel() if lin else None, rel.D if lin else None, None if lin else rel.batch_key(),
         tuple(S.index[id(ds)] for ds in dss), rel.offset(None) if lin and rel.F is None else None, law,
         rel.constant)
    inter._batch_facts = (S, dss, law, rel, f)
    return f


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


def _ranges(starts, lengths):
    """The concatenated ranges [starts[i], starts[i] + lengths[i]) (vectorized np.arange)."""
    lengths = np.asarray(lengths, dtype=np.intp)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.intp)
    offs = np.zeros(lengths.shape[0], dtype=np.intp)
    np.cumsum(lengths[:-1], out=offs[1:])
    return np.repeat(np.asarray(starts, dtype=np.intp) - offs, lengths) + np.arange(total, dtype=np.intp)


def _stack_blocks(ops, systems):
    """The block-diagonal (CSR) of the systems' operators (K or C; None: zero), or None when all are None."""
    if all(o is None for o in ops):
        return None
    return sp.block_diag([sp.csr_matrix((ds.n, ds.n)) if o is None else o for o, ds in zip(ops, systems)],
                         format="csr")


class _Group:
    """Interactions whose scleronomous relations share one batched evaluation (``batch_key``)."""

    __slots__ = ("Z", "cols", "entries", "index", "rel", "rels", "rows")

    def __init__(self, rel):
        self.rel, self.index, self.rels, self.entries = rel, [], [], []

    def h(self, Q, sel=None):
        if sel is None:
            return self.rel.h_batch(Q, self.Z, self.rels)
        return self.rel.h_batch(Q, self.Z[sel], None if self.rels is None else [self.rels[j] for j in sel])

    def G0(self, Q, sel=None):
        if sel is None:
            return self.rel.G0_batch(Q, self.Z, self.rels)
        return self.rel.G0_batch(Q, self.Z[sel], None if self.rels is None else [self.rels[j] for j in sel])


class BatchMoreauJean:
    """One Moreau–Jean step on stacked arrays; built by :meth:`MoreauJeanOSI.initialize` when
    :meth:`applies` (and ``MoreauJeanOSI(batch=True)``, the default)."""

    @staticmethod
    def applies(osi, sim):
        """The interactions' facts (:func:`_facts`) when the batched path takes the model, else None."""
        if sim.osns_kind == "gfc3d" or not all(osi._const_ds):
            return None
        S = osi.S
        ok = S.__dict__.get("_batch_systems")        # the systems' part, once per stacking
        if ok is None:
            ok = S._batch_systems = all(type(ds) is LagrangianLinearTIDS or (type(ds) is LagrangianDS
                                                                             and not ds.has_state_forces)
                                        for ds in S.systems)
        if not ok:
            return None
        facts = [_facts(i, S) for i in osi.inters]
        return None if None in facts else facts

    def __init__(self, osi, sim, facts, prev=None):
        """``facts``: :meth:`applies`' answer; ``prev``: the batch this one replaces after a topology
        change (the interactions that stay take their outputs, multipliers and warm starts from its
        stacked arrays; the outputs of the interactions new to the integrator are computed at the
        systems' current state)."""
        self.osi = osi
        S = osi.S
        self.sparse = S.ndof > _module("osi").SPARSE_DOFS
        self._S, self.nd = S, S.ndof
        self._systems_part(sim)
        self.inters = list(osi.inters)
        self.alive, self.n_dead = np.ones(len(self.inters), dtype=bool), 0
        self.P = self._primary(facts, self.inters)
        self._secondary()
        self._gather(prev)
        self.dirty = True       # attach the systems at the first _publish
        # (their warm starts stay here: Interaction._detach hands them over)
        collections.deque(map(setattr, self.inters, itertools.repeat("_src"),
                              zip(itertools.repeat(self), range(len(self.inters)))), 0)
        self.key = self.pattern = self.rows = None      # the last active set, its G0 pattern, its rows (G or H_a)
        self._publish()

    def follow(self, changes, sim) -> bool:
        """Follow a topology change in place when it removed interactions of this batch and linked new
        ones (what contact detection does): a removed interaction is detached and its rows stay, never
        active, until the next full build (when they make more than a quarter of the rows); the new ones
        are appended and what follows from them is rebuilt, without a pass over the others. False when
        the change is another one (a system inserted, an interaction this batch does not hold, one
        the batched path does not take): the caller builds a new batch."""
        if self.can_fly:            # (the compiled twins keep their own index sets: a new batch)
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
            src = inter._src
            if src is None or src[0] is not self or not self.alive[src[1]]:
                return False
            dead.append(src[1])
        S = self._S
        facts = [_facts(i, S) for i in added]
        n_all = len(self.inters) + len(added)
        if None in facts or 4 * (self.n_dead + len(dead)) > n_all or any(not i.systems for i in added):
            return False
        for inter in removed:
            inter._detach()
        self.alive[dead] = False
        self.n_dead += len(dead)
        if added:
            self._append(added, facts)
        else:
            self.constant_relations = bool(np.all(self.P["const"][self.alive]))
        self.key = self.pattern = self.rows = None
        return True

    def _append(self, added, facts):
        """Append interactions new to this batch: the primary data joined, the rest rebuilt, the stacked
        state extended (their outputs computed at the systems' current state)."""
        n0, m0, nd = len(self.inters), self.mtot, self.nd
        self.P = self._joined(self.P, self._primary(facts, added))
        self.inters.extend(added)
        self.alive = np.concatenate([self.alive, np.ones(len(added), dtype=bool)])
        old, warm0 = self.buf, self.warm
        parts = [old[3 * nd + k * m0:3 * nd + (k + 1) * m0] for k in range(4)]
        self._secondary()
        m = self.mtot
        buf = np.empty(3 * nd + 4 * m)
        buf[:3 * nd] = old[:3 * nd]
        for k in range(4):
            buf[3 * nd + k * m:3 * nd + k * m + m0] = parts[k]
        self._set_state(buf)
        self.warm = np.zeros(m)
        self.warm[:m0] = warm0
        jold = np.full(len(self.inters), -1, dtype=np.intp)
        jold[:n0] = -2              # rows in place already
        self._fill_new(jold)
        for j, inter in enumerate(added, n0):
            inter._src = (self, j)
        self._publish()

    def _primary(self, facts, inters) -> dict:
        """The interactions' data stacked (from their :func:`_facts`): per interaction ``sizes``,
        ``unilateral``, ``const`` (relation constant), ``lin`` (LagrangianLinearTIR), ``nloc``
        (columns), ``nsys``, ``keys`` (batch key, None for linear), ``laws``; per stacked row ``erow``
        (restitution) and ``b`` (the linear relations' offset b + FZ); per column ``cols`` (global);
        per entry ``E_val`` (H of the linear relations, row-major, zeros for the others); per slot
        ``body`` (the systems); ``D``: {interaction: D}. Appending interactions concatenates these."""
        n_i = len(facts)
        (sz, uni, er, cols, lin, Hs, Ds, keys, bodies, bs, laws, const) = zip(*facts) if n_i else ((),) * 12
        cat = (lambda a, dt=float: np.concatenate(a) if a else np.zeros(0, dtype=dt))
        sizes = np.array(sz, dtype=np.intp)
        nloc = np.fromiter(map(len, cols), dtype=np.intp, count=n_i)
        is_lin = np.array(lin, dtype=bool)
        counts = sizes * nloc
        E_val = np.zeros(int(counts.sum()))
        b = np.zeros(int(sizes.sum()))
        li = np.flatnonzero(is_lin)
        if li.size:
            starts = np.cumsum(counts) - counts
            E_val[_ranges(starts[li], counts[li])] = np.concatenate([Hs[j] for j in li.tolist()])
            first = np.cumsum(sizes) - sizes
            osi = self.osi
            b[_ranges(first[li], sizes[li])] = np.concatenate(
                [inters[j].relation.offset(osi._Z(inters[j])) if bs[j] is None else bs[j] for j in li.tolist()])
        key_arr = np.empty(n_i, dtype=object)
        key_arr[:] = keys
        law_arr = np.empty(n_i, dtype=object)
        law_arr[:] = laws
        nsys = np.fromiter(map(len, bodies), dtype=np.intp, count=n_i)
        return {"sizes": sizes, "unilateral": np.array(uni, dtype=bool), "const": np.array(const, dtype=bool),
                "lin": is_lin, "nloc": nloc, "nsys": nsys, "keys": key_arr, "laws": law_arr, "erow": cat(er),
                "b": b, "cols": cat(cols, np.intp).astype(np.intp, copy=False), "E_val": E_val,
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
        columns, slots), the groups of scleronomous relations, the linear relations' H and b, the
        block plan of W, the compiled free flight of linear time-invariant models."""
        P, inters, osi, S = self.P, self.inters, self.osi, self._S
        n_i = len(inters)
        sizes, nloc, nsys = P["sizes"], P["nloc"], P["nsys"]
        self.sizes, self.nsys, self.slot_body = sizes, nsys, P["body"]
        self.unilateral, self.erow, self.E_val = P["unilateral"], P["erow"], P["E_val"]
        self.constant_relations = bool(np.all(P["const"][self.alive]))
        first = np.cumsum(sizes) - sizes
        self.first, self.mtot = first, int(sizes.sum())
        self.row_inter = np.repeat(np.arange(n_i), sizes)
        # entries of the stacked rows: (row, column, interaction) and the constant values; entry k of
        # interaction j is its row k // nloc_j and its column cols_j[k % nloc_j] (row-major, as H.ravel())
        counts = sizes * nloc
        self.E_start = np.cumsum(counts) - counts
        cstart = np.cumsum(nloc) - nloc
        allcols = P["cols"]
        self._layout, self._entries = (nloc, counts, cstart, allcols), None    # the entries' index: at first use
        is_lin = P["lin"]
        lin_index = np.flatnonzero(is_lin)
        self.D = list(P["D"].items())
        # rows belong to one interaction each and its columns are its systems' ranges: two entries on
        # one (row, column) only when an interaction joins a system to itself
        body = P["body"]
        two = (np.cumsum(nsys) - nsys)[nsys == 2]
        self.unique_entries = not np.any(body[two] == body[two + 1])
        nonlin = np.flatnonzero(~is_lin)
        ids: dict = {}
        gid = np.array([ids.setdefault(k, len(ids)) for k in P["keys"][nonlin].tolist()], dtype=np.intp)
        order = np.argsort(gid, kind="stable")          # the interactions of each batch key, in order
        cuts = np.searchsorted(gid[order], np.arange(len(ids) + 1))
        self.groups = []
        for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
            idx = nonlin[order[a:b]]
            g = _Group(inters[idx[0]].relation)
            g.index = idx
            members = idx.tolist()
            g.cols = allcols[_ranges(cstart[idx], nloc[idx])].reshape(idx.shape[0], -1)
            g.Z = (np.zeros((idx.shape[0], 0)) if g.rel.nz == 0 else
                   np.array([osi._Z(inters[j]) for j in members]).reshape(idx.shape[0], g.rel.nz))
            g.rows = (first[idx][:, None] + np.arange(g.rel.m)).ravel()
            g.rels = None if g.rel.vectorized else [inters[j].relation for j in members]
            self.groups.append(g)
        if lin_index.size:
            li = lin_index
            self.lin_rows = _ranges(first[li], sizes[li])
            ent = _ranges(self.E_start[li], counts[li])                # the linear interactions' entries
            ptr = np.zeros(self.lin_rows.shape[0] + 1, dtype=np.int32)
            np.cumsum(np.repeat(nloc[li], sizes[li]), out=ptr[1:])
            own = np.repeat(li, counts[li])
            col = allcols[cstart[own] + (ent - self.E_start[own]) % nloc[own]]
            self.H_lin = sp.csr_matrix((self.E_val[ent], col.astype(np.int32), ptr),
                                       shape=(self.lin_rows.shape[0], S.ndof))     # row-major entries: CSR
            self.H_lin.sort_indices()
            self.b_lin = P["b"][self.lin_rows]
        else:
            self.lin_rows = None
        self.bounds = list(zip(first.tolist(), (first + sizes).tolist()))
        self.inter_arr = np.empty(n_i, dtype=object)
        self.inter_arr[:] = inters
        self.law_arr = P["laws"]
        self.__dict__.pop("_mu_all", None)
        self._blocks = self._block_plan() if self.sparse and S.all_diag and not self.D else None
        # the compiled free flight (nsopt.modeling._kernels) of linear time-invariant models
        self.can_fly = (not self.groups and not self.D and self.K is None and self.C is None and self.const_fext
                        and S.all_diag)
        if self.can_fly:
            R = np.zeros(S.ndof)
            if self.has_fext:
                R -= self.Fth
            self.Rd = S.minv(R)
            if self.lin_rows is None:
                self.H_lin, self.b_lin = sp.csr_matrix((0, S.ndof)), np.zeros(0)
            self.H_lin.sort_indices()
            h, th = osi.h, osi.theta
            self.Hd, self.d, self._sets = self.H_lin.toarray(), S._d, {}
            self._unilateral_off = ~self.unilateral
            self.gh, self.thr = osi.gamma * h, osi.activation_threshold
            self.c1, self.c2 = h * (1 - th), h * th
            self._no_rows, self._no_Ha, self._no_lam = np.zeros(0, dtype=np.intp), np.zeros((0, S.ndof)), np.zeros(0)
            self._act = np.empty(n_i, dtype=np.bool_)
            self._cur = (np.zeros(0, dtype=np.bool_), self._no_rows, self._no_Ha, np.zeros(0), None, [], [], None)

    # ------------------------------------------------------------------ helpers
    def _systems_part(self, sim):
        """What depends on the systems only (kept on their stacking ``S`` for the next topology change):
        the stacked K and C, whether F_ext is present and constant, h((1-θ) F_ext + θ F_ext) when it is,
        the common size of the systems (0: sizes differ)."""
        S, h, th = self._S, self.osi.h, self.osi.theta
        kept = S.__dict__.get("_batch_part")
        if kept is None or kept[0] != (h, th):
            syss = S.systems
            K = _stack_blocks([getattr(ds, "K", None) for ds in syss], syss)
            C = _stack_blocks([getattr(ds, "C", None) for ds in syss], syss)
            has_fext = any(ds._fext is not None for ds in syss)
            const_fext = all(ds._fext is None or ds._fext.constant for ds in syss)
            Fth = None
            if has_fext and const_fext:
                fe = self._fext(sim.t)
                Fth = h * (1 - th) * fe + h * th * fe
            ns = {ds.n for ds in syss}
            kept = S._batch_part = ((h, th), K, C, has_fext, const_fext, Fth, ns.pop() if len(ns) == 1 else 0)
        _, self.K, self.C, self.has_fext, self.const_fext, self.Fth, self.n_uniform = kept
        self._dv_ext = None          # M̂⁻¹ h F_ext,θ when F_ext is constant and there is no K, C (at first use)

    def _fext(self, t):
        return np.concatenate([np.zeros(ds.n) if ds._fext is None else ds.fext(t) for ds in self.osi.S.systems])

    def _gather(self, prev):
        """The stacked state (q, v, p, y0, y1, λ0, λ1) and warm starts: the systems' state and the
        kept interactions' rows from ``prev`` (the batch this one replaces) when it has them, the
        others (and the outputs of the interactions new to the integrator) by :meth:`_fill_new`."""
        syss, inters, first, sizes = self.osi.S.systems, self.inters, self.first, self.sizes
        nd, m, n_i = self.nd, self.mtot, len(inters)
        buf = np.empty(3 * nd + 4 * m)
        if prev is not None and prev._S is self._S and not prev.dirty:
            buf[:3 * nd] = prev.buf[:3 * nd]            # the same stacking, the systems attached to it
        elif nd:
            buf[:3 * nd] = np.concatenate([ds.q for ds in syss] + [ds.v for ds in syss] + [ds.p for ds in syss])
        self._set_state(buf)
        Y0, Y1, L0, L1 = self.Y0, self.Y1, self.L0, self.L1
        warm = self.warm = np.zeros(m)
        jold = np.full(n_i, -1, dtype=np.intp)
        if prev is not None:
            jold[:] = [s[1] if s is not None and s[0] is prev else -1 for s in map(_SRC, inters)]
            keep = np.flatnonzero(jold >= 0)
            if keep.size:
                rn, ro = _ranges(first[keep], sizes[keep]), _ranges(prev.first[jold[keep]], sizes[keep])
                for a, b in ((Y0, prev.Y0), (Y1, prev.Y1), (L0, prev.L0), (L1, prev.L1), (warm, prev.warm)):
                    a[rn] = b[ro]
        self._fill_new(jold)

    def _fill_new(self, jold):
        """The rows of the interactions with ``jold == -1`` from the objects (outputs, multipliers,
        warm starts), then the outputs of those new to the integrator at the systems' current state
        (as :meth:`MoreauJeanOSI._update_output` computes them: y = h(Q, Z) or HQ + b + Dλ₀ + FZ,
        and ẏ = G₀V or HV + Dλ₁)."""
        inters, m, n_i = self.inters, self.mtot, len(self.inters)
        Y0, Y1, L0, L1, warm = self.Y0, self.Y1, self.L0, self.L1, self.warm
        osi, new = self.osi, []
        for j in np.flatnonzero(jold == -1).tolist():
            inter, (lo, hi) = inters[j], self.bounds_of(j)
            if inter.__dict__.get("_mj_owner") is not osi:
                new.append(j)
                inter._mj_owner = osi
            y, lam = inter.y, inter.lambda_
            Y0[lo:hi], Y1[lo:hi], L0[lo:hi], L1[lo:hi] = y[0], y[1], lam[0], lam[1]
            src = inter._src
            w = src[0].warm[slice(*src[0].bounds[src[1]])] if src is not None else inter.__dict__.get("_lam_warm")
            if w is not None:
                warm[lo:hi] = w
        if not new:
            return
        fresh = np.zeros(n_i, dtype=bool)
        fresh[new] = True
        q, v = self.q, self.v
        if self.lin_rows is not None:
            li = np.flatnonzero(fresh[self.row_inter[self.lin_rows]])     # the new interactions' linear rows
            if li.size:
                y0, y1 = np.empty(m), np.empty(m)
                H = self.H_lin
                K.lin_outputs(H.indptr, H.indices, H.data, self.b_lin, self.lin_rows, q, v, y0, y1)
                rows = self.lin_rows[li]
                Y0[rows], Y1[rows] = y0[rows], y1[rows]
            for j, D in self.D:
                if fresh[j]:
                    lo, hi = self.bounds_of(j)
                    Y0[lo:hi] += D @ L0[lo:hi]
                    Y1[lo:hi] += D @ L1[lo:hi]
        for g in self.groups:
            sel = np.flatnonzero(fresh[g.index])
            if sel.size:
                Q, cols = q[g.cols[sel]], g.cols[sel]
                rows = g.rows.reshape(-1, g.rel.m)[sel].ravel()
                Y0[rows] = g.h(Q, sel).ravel()
                K.rows_velocity(g.G0(Q, sel), v, cols, rows, Y1)

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

    def row_layout(self):
        """(the linked interactions, their first rows, their last rows + 1, the rows of all): where
        the trajectory finds each interaction in the stacked outputs and multipliers."""
        live = np.flatnonzero(self.alive) if self.n_dead else slice(None)
        return (self.inter_arr[live].tolist(), self.first[live], (self.first + self.sizes)[live], self.mtot)

    def bounds_of(self, j):
        """The stacked rows [lo, hi) of interaction j."""
        lo = int(self.first[j])
        return lo, lo + int(self.sizes[j])

    def _publish(self):
        """The systems and interactions read views of the new stacked arrays (lazily, when asked)."""
        self.stamp = object()
        if self.dirty:
            for k, ds in enumerate(self.osi.S.systems):
                ds._src, ds._stamp = (self, k), None
            self.dirty = False

    def _pull(self):
        """A system's state was set from outside since the last step: gather the state from the objects
        (and the outputs from the interactions, as the per-interaction path reads them)."""
        syss, inters = self.osi.S.systems, self.inters
        self._set_state(np.concatenate([ds.q for ds in syss] + [ds.v for ds in syss] + [ds.p for ds in syss]
                                       + [i.y[0] for i in inters] + [i.y[1] for i in inters]
                                       + [self.L0, self.L1]))

    def touched(self) -> bool:
        """True when a system's q, v or p was set from outside since the last step."""
        return self.dirty

    def _set_state(self, buf):
        """The stacked state (q, v, p, y0, y1, λ0, λ1) in one array; ``q``, ``v``, ... are its parts."""
        self.buf = buf

    def _part(k, doc):
        def get(self):
            nd, m = self.nd, self.mtot
            a = (0, nd, 2 * nd, 3 * nd, 3 * nd + m, 3 * nd + 2 * m, 3 * nd + 3 * m, 3 * nd + 4 * m)
            return self.buf[a[k]:a[k + 1]]
        return property(get, doc=doc)

    q, v, p = _part(0, "Stacked positions."), _part(1, "Stacked velocities."), _part(2, "Stacked impulses.")
    Y0, Y1 = _part(3, "Stacked outputs, level 0."), _part(4, "Stacked outputs, level 1.")
    L0, L1 = _part(5, "Stacked multipliers, level 0."), _part(6, "Stacked multipliers, level 1.")
    del _part

    # ------------------------------------------------------------------ one step
    def free_velocity(self, t0, t1, q, v):
        osi, S = self.osi, self.osi.S
        h, th = osi.h, osi.theta
        if self.K is None and self.C is None:
            if not self.has_fext:
                return v
            if self.const_fext:         # v - M̂⁻¹(-F): the same numbers as the general formula below
                if self._dv_ext is None:
                    self._dv_ext = S.minv(self.Fth)
                return v + self._dv_ext
        R = np.zeros(S.ndof)
        if self.C is not None:
            R += h * (self.C @ v)
        if self.K is not None:
            R += h * h * th * (self.K @ v) + h * (self.K @ q)
        if self.has_fext:
            if self.const_fext:
                R -= self.Fth
            else:
                R -= h * (1 - th) * self._fext(t0) + h * th * self._fext(t1)
        return v - S.minv(R)

    def lean_step(self, sim):
        """:meth:`step` for the linear time-invariant models of the compiled free flight (``can_fly``),
        by its compiled twin (``_kernels.lean_pre``, ``lean_post``): the same formulas, the rows, the
        matrix W and the laws of each active set kept (dense H). When the index set is the previous
        contact step's (W unchanged), the step's problem is that step's with the new q
        (``TimeStepping.resolve``): no Assembly, no look-up."""
        if self.dirty:
            self._pull()
        buf, nd = self.buf, self.nd
        vfree = np.empty(nd)
        cur = self._cur              # the last contact step's active set: (act, rows, Ha, e, W, inters, laws, key)
        q, w = np.empty(cur[1].shape[0]), np.empty(cur[1].shape[0])
        code = K.lean_pre(buf, nd, self.first, self._unilateral_off, self.gh, self.thr, self.Rd, vfree, self._act,
                          cur[0], cur[2], cur[3], cur[1], q, self.warm, w)
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
                lam, rows, Ha = self._lean_solve(sim, vfree)
        out = np.empty(buf.shape[0])
        K.lean_post(buf, out, nd, vfree, lam, rows, Ha, self.d, self.c1, self.c2, self.Hd, self.b_lin, self.warm)
        self.buf = out
        self._publish()
        return 1, 0.0, True, None

    def _lean_solve(self, sim, vfree):
        """The OSNS problem of the index set ``self._act`` (a new one, or W to be handed over again)
        through an :class:`~nsopt.modeling.osi.Assembly`; returns (λ, rows, H_a)."""
        act = self._act
        key = act.tobytes()
        c = self._sets.get(key)
        if c is None:
            if len(self._sets) > 64:
                self._sets.clear()
            idx = np.flatnonzero(act)
            rows = np.flatnonzero(act[self.row_inter])
            Ha = np.ascontiguousarray(self.Hd[rows])
            c = self._sets[key] = (act.copy(), rows, Ha, self.erow[rows],
                                   _module("osi").delassus(self.osi.S, Ha, Ha, [], False),
                                   self.inter_arr[idx].tolist(), self.law_arr[idx].tolist(), (id(self), key))
        _, rows, Ha, e, W, inters, laws, k = c
        q = np.empty(rows.shape[0])
        K.lean_q(Ha, vfree, e, self.buf, self.nd, rows, q)
        asm = _module("osi").Assembly(key=k, interactions=inters, q=q, W=None if k == self.key else W, constant=True,
                                      H=Ha, vfree=vfree, osi=self.osi, warm=self.warm[rows], laws=laws)
        self.key = k
        self._cur = c
        return sim.solve_assembly(asm), rows, Ha

    def step(self, sim):
        osi, S = self.osi, self.osi.S
        h, th, g, thr = osi.h, osi.theta, osi.gamma, osi.activation_threshold
        t0, t1 = sim.t, sim.t + h
        if self.dirty:
            self._pull()
        q, v, Y0, Y1k = self.q, self.v, self.Y0, self.Y1
        vfree = self.free_velocity(t0, t1, q, v)
        fi = self.first
        act = ~self.unilateral | (Y0[fi] + g * h * Y1k[fi] <= thr)
        if self.n_dead:
            act &= self.alive
        idx = np.flatnonzero(act)
        mtot = self.mtot
        L1 = np.zeros(mtot)
        G0p = {}
        if idx.size:
            act_rows = act[self.row_inter]
            lam, p = self._solve(sim, idx, act, act_rows, q + h * v, vfree, Y1k, G0p)
            L1[act_rows] = lam
            vn = vfree + S.minv(p)
        else:
            p = np.zeros(S.ndof)
            vn = vfree
        qn = q + h * (1 - th) * v + h * th * vn
        # outputs at the new state (active scleronomous rows: ẏ with the G0 the OSNS used)
        Y0n, Y1n = np.empty(mtot), np.empty(mtot)
        if self.lin_rows is not None:
            H = self.H_lin
            K.lin_outputs(H.indptr, H.indices, H.data, self.b_lin, self.lin_rows, qn, vn, Y0n, Y1n)
            for j, D in self.D:
                lo, hi = self.bounds[j]
                Y1n[lo:hi] += D @ L1[lo:hi]
        for gi, grp in enumerate(self.groups):
            Qn = qn[grp.cols]
            Y0n[grp.rows] = grp.h(Qn).ravel()
            on, Gp = G0p.get(gi, (None, None))
            if Gp is None:
                G = grp.G0(Qn)
            else:
                G = np.empty((Qn.shape[0],) + Gp.shape[1:])
                G[on] = Gp
                off = np.flatnonzero(~act[grp.index])
                if off.size:
                    G[off] = grp.G0(Qn[off], off)
            K.rows_velocity(G, vn, grp.cols, grp.rows, Y1n)
        self._set_state(np.concatenate([qn, vn, p, Y0n, Y1n, np.zeros(mtot), L1]))
        self._publish()
        return 1, 0.0, True, None

    def _block_plan(self):
        r"""The block form of :math:`W = G\hat M^{-1}G^\top` when every interaction has the same size m and
        every system the same size n (diagonal M̂): :math:`W_{ab} = \sum_s G_{a,s}D_s^{-1}G_{b,s}^\top` over
        the systems s shared by interactions a and b, where :math:`G_{a,s}` (m x n) is the block of a's
        rows on s's columns. Returns the linear relations' blocks and the (slot, slot) pairs, or None."""
        S = self.osi.S
        n, inters, sizes = self.n_uniform, self.inters, self.sizes
        if not n or not inters or sizes.min() != sizes.max():
            return None
        m = int(sizes[0])
        # a slot: one (interaction a, its l-th system) block G_{a,s} of m x n entries
        nsys, slot_body = self.nsys, self.slot_body
        slot_inter = np.repeat(np.arange(len(inters), dtype=np.intp), nsys)
        G_const = K.slot_blocks(self.E_val, self.E_start, nsys, m, n)   # the linear relations' blocks; the others per step
        # the first (and second) slot of each interaction: slots are in interaction order
        first_of = np.cumsum(nsys) - nsys
        two = nsys > 1
        fill = []
        for grp in self.groups:
            f = first_of[grp.index]
            fill.append((f, f + 1 if np.all(two[grp.index]) else None))
        # pairs of slots on one system (every (p, q) with the same body), ordered by (a, b)
        tp, tq, ta, tb, run, mirror = K.block_pairs(slot_inter, slot_body, len(inters), len(S.systems))
        dinv = (1.0 / S._d).reshape(len(S.systems), n)[slot_body]
        slot_off = slot_body * n                        # every system has n columns
        return {"m": m, "G_const": G_const, "fill": fill, "dinv": dinv, "tp": tp, "tq": tq,
                "ta": ta, "tb": tb, "run": run, "mirror": mirror, "slot_inter": slot_inter, "slot_off": slot_off}

    def _block_delassus(self, G, act):
        """W of the active interactions from the block plan (CSR, sorted): the compiled
        :func:`~nsopt.modeling._kernels.block_delassus_for`, the sums of :func:`~nsopt.modeling.osi.delassus`
        grouped by system (the same numbers to rounding). ``G``: the slot blocks."""
        P = self._blocks
        m, nb = P["m"], int(np.count_nonzero(act))
        ptr, ind, dat = K.block_delassus_for(m, G.shape[2])(G, P["dinv"], P["tp"], P["tq"], P["run"], P["mirror"],
                                                           P["ta"], P["tb"], act)
        W = sp.csr_matrix((dat, ind, ptr), shape=(nb * m, nb * m))
        W.has_canonical_format = True    # the blocks of a row come in increasing column, once each
        for a in (W.data, W.indices, W.indptr):
            a.setflags(write=False)
        return W

    def fly(self, sim, nmax, rec, j0) -> int:
        """Up to ``nmax`` steps without contact by the compiled twin (``can_fly`` models); the state,
        outputs and recorded rows j0.. as :meth:`step` would leave them. Returns the steps taken."""
        osi = self.osi
        if self.dirty:
            self._pull()
        buf = self.buf.copy()           # a fresh state: what the objects read before stays a snapshot
        H, h, th = self.H_lin, osi.h, osi.theta
        s = K.free_flight(buf, osi.S.ndof, self.first, self.unilateral, osi.gamma * h, osi.activation_threshold,
                        self.Rd, h * (1 - th), h * th, H.indptr, H.indices, H.data, self.b_lin, nmax, rec, j0)
        self._set_state(buf)
        self._publish()
        return s

    def _solve(self, sim, idx, act, act_rows, qpred, vfree, Y1k, G0p):
        """Assemble the active rows, solve the OSNS problem; returns (λ, p = G0ᵀλ)."""
        osi, S = self.osi, self.osi.S
        Assembly, delassus = _module("osi").Assembly, _module("osi").delassus
        for gi, grp in enumerate(self.groups):       # G0 at q_k + h v_k for the active members
            on = np.flatnonzero(act[grp.index])
            G0p[gi] = (on, grp.G0(qpred[grp.cols[on]], on) if on.size else None)
        key = (id(self), act.tobytes())
        P = self._blocks
        if P is not None and sim.osns_kind not in _module("simulation").OSNS_BUILDERS:
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
        else:
            G = None
            vals = self.E_val
            self.entry_index()
            if self.groups:
                vals = vals.copy()
                for gi, grp in enumerate(self.groups):
                    on, Gg = G0p[gi]
                    if Gg is not None:
                        vals[grp.entries.reshape(len(grp.index), -1)[on]] = Gg.reshape(on.size, -1)
            Ha = self._rows(act, act_rows, vals, key)
            qo = np.asarray(Ha @ vfree).reshape(-1)
        qo += self.erow[act_rows] * Y1k[act_rows]
        rows = G if G is not None else Ha          # W = G0 M̂⁻¹ G0ᵀ (+ the constant D blocks) follows from them
        if key == self.key and (not osi.nonlinear or same_matrix(rows, self.rows)):
            W = None        # same active set, same rows (operators constant, or contacts at rest): the last problem
        else:
            if G is not None:
                W = self._block_delassus(G, act)
            else:
                newrow = np.cumsum(act_rows) - 1
                extras = [(int(newrow[self.first[j]]), D) for j, D in self.D if act[j]]
                W = delassus(S, Ha, Ha, extras, self.sparse)
            self.rows = rows
        self.key = key
        asm = Assembly(key=key, interactions=self.inter_arr[idx].tolist(), q=qo, W=W, constant=not osi.nonlinear,
                       H=Ha, vfree=vfree, osi=osi, warm=self.warm[act_rows], laws=self.law_arr[idx].tolist(),
                       trusted_W=G is not None and W is not None, mu=self._mu(idx))
        lam = sim.solve_assembly(asm)
        self.warm[act_rows] = lam
        if G is not None:
            return lam, K.slot_rmatvec(G, P["slot_inter"], P["slot_off"], new, lam, S.ndof)
        return lam, np.asarray(Ha.T @ lam).reshape(-1)

    def _rows(self, act, act_rows, vals, key):
        """The rows G0 of the active interactions (CSR when sparse, canonical as
        :func:`~nsopt.modeling.osi.assemble_rows` makes them; the pattern kept per active set)."""
        assemble_rows = _module("osi").assemble_rows
        S = self.osi.S
        E_row, E_col, E_inter, row_nnz = self.entry_index()
        if not self.sparse:
            sel = act[E_inter]
            newrow = np.cumsum(act_rows) - 1
            r, c, m = newrow[E_row[sel]], E_col[sel], int(newrow[-1]) + 1
            if self.unique_entries:         # one entry per (row, column): written, not summed
                H = np.zeros((m, S.ndof))
                H[r, c] = vals[sel]
                return H
            return assemble_rows(r, c, vals[sel], m, S.ndof, False)
        pat = self.pattern if self.pattern is not None and self.pattern[0] == key else None
        if pat is None:
            sel = np.flatnonzero(act[E_inter])
            ma = int(np.count_nonzero(act_rows))
            indptr = np.zeros(ma + 1, dtype=np.int32)
            np.cumsum(row_nnz[act_rows], out=indptr[1:])
            Ha = sp.csr_matrix((vals[sel], E_col[sel], indptr), shape=(ma, S.ndof))
            if not Ha.has_sorted_indices:     # entries in row order, columns sorted per row
                perm = np.lexsort((Ha.indices, np.repeat(np.arange(ma), np.diff(indptr))))
                sel = sel[perm]
                Ha = sp.csr_matrix((vals[sel], E_col[sel], indptr), shape=(ma, S.ndof))
            pat = self.pattern = (key, sel, Ha.indices, indptr, ma)
        else:
            _, sel, cols, indptr, ma = pat
            Ha = sp.csr_matrix((vals[sel], cols, indptr), shape=(ma, S.ndof))
        Ha.has_sorted_indices = True
        return Ha
