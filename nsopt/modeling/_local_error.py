r"""The local error estimate of the θ-scheme's smooth phase (``formulations/time_stepping.md`` §6).

Moreau–Jean (Lagrangian systems, rigid bodies; :math:`a = M(q)^{-1}F(t, q, v)` the smooth acceleration,
the impulse p left out) and Euler–Moreau (first-order systems; :math:`f(t, x)`, the input r left out)
advance the smooth part of the motion by the θ-method. From the values at both ends of the step,
:math:`\Delta a_k = a_{k+1} - a_k`, and the previous step's :math:`\Delta a_{k-1}`, the leading terms of the
step's local error (the step minus the exact solution through the step's start) are

.. math::
    e_q = h^2\big[(\theta - \tfrac12)\,a_k + (\theta^2 - \tfrac16)\,\Delta a_k\big],\qquad
    e_v = h\big[(\theta - \tfrac12)\,\Delta a_k + \tfrac1{12}(\Delta a_k - \Delta a_{k-1})\big]

(first order: :math:`e_x` is :math:`e_v` with f for a); the second difference is left out after a change
of the systems, and for a system that received an impulse in either step. The step's estimate is the
largest :math:`|e_i| / (1 + \max(|x_{k,i}|, |x_{k+1,i}|))` over the components (positions in twist
coordinates for rigid bodies: the rotation's error in radians), computed by one compiled pass
(:func:`theta_local_error`).

Cost: one evaluation of the forces (of f) and of M(q) per nonlinear system and step (the accelerations
at the step's start are kept from the step before); for the linear time-invariant systems of constant
F_ext and without K, C, nothing (a is constant: the estimate is 0 at θ = 1/2, :math:`h^2(\theta-\frac12)a`
otherwise), for the others the sparse products K q, C v in the same compiled pass (:func:`lti_accelerations`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ._stepper import factor_iteration_matrix


@njit(cache=True)
def theta_local_error(h, th, a0, a1, dprev, prev_hit, sys_of, hit, x0, x1, xcol, v0, v1, second, da_out):
    r"""The step's estimate (module docstring): (max_i |e_i| / (1 + max(|x_k,i|, |x_k+1,i|)), its column),
    over the columns i of a0, a1 (the accelerations, or f, at both ends); ``dprev`` the previous step's
    differences, used where neither ``prev_hit[sys_of[i]]`` nor ``hit[sys_of[i]]`` (an impulse, or no
    previous step: all True); ``second``:
    positions too (``x0``/``x1`` read at ``xcol[i]``, -1: a rotation, scale 1), else the first-order e_x
    on ``v0``/``v1``. Writes Δa into ``da_out``; a non-finite estimate is returned as nan."""
    n = a0.shape[0]
    best, arg = 0.0, -1
    c1, c2 = th - 0.5, th * th - 1.0 / 6.0
    for i in range(n):
        d = a1[i] - a0[i]
        da_out[i] = d
        s = sys_of[i]
        ev = c1 * h * d
        if not prev_hit[s] and not hit[s]:
            ev += (d - dprev[i]) * (h / 12.0)
        r = abs(ev) / (1.0 + max(abs(v0[i]), abs(v1[i])))
        if second:
            eq = h * h * (c1 * a0[i] + c2 * d)
            j = xcol[i]
            sc = 1.0 if j < 0 else 1.0 + max(abs(x0[j]), abs(x1[j]))
            rq = abs(eq) / sc
            if rq > r or math.isnan(rq):
                r = rq
        if math.isnan(r):
            return np.nan, i
        if r > best:
            best, arg = r, i
    return best, arg


@njit(cache=True)
def impulses(p, voff, hit):
    """hit[s] = whether system s (v columns voff[s]:voff[s+1]) received a nonzero impulse p."""
    for s in range(voff.shape[0] - 1):
        h = False
        for i in range(voff[s], voff[s + 1]):
            if p[i] != 0.0:
                h = True
                break
        hit[s] = h


@njit(cache=True)
def lti_accelerations(fext, Kp, Ki, Kx, Cp, Ci, Cx, q, v, dinv, out):
    """out = dinv ⊙ (fext - K q - C v) for the stacked constant members (K, C in CSR, empty: absent)."""
    n = out.shape[0]
    for i in range(n):
        f = fext[i]
        if Kp.shape[0]:
            for j in range(Kp[i], Kp[i + 1]):
                f -= Kx[j] * q[Ki[j]]
        if Cp.shape[0]:
            for j in range(Cp[i], Cp[i + 1]):
                f -= Cx[j] * v[Ci[j]]
        out[i] = f * dinv[i]


@njit(cache=True)
def lti_step_error(h, th, fext, Kp, Ki, Kx, Cp, Ci, Cx, dinv, X0, X1, nq, nv, voff, sys_of, qcol, a0, dprev, prev_hit,
                   a1, da, hit):
    """:func:`lti_accelerations`, :func:`impulses` and :func:`theta_local_error` in one call, for models whose
    systems all have a constant M̂ (q in the v layout: no rigid body with K): a1, da, hit written."""
    lti_accelerations(fext, Kp, Ki, Kx, Cp, Ci, Cx, X1[:nq], X1[nq:nq + nv], dinv, a1)
    impulses(X1[nq + nv:nq + 2 * nv], voff, hit)
    return theta_local_error(h, th, a0, a1, dprev, prev_hit, sys_of, hit, X0[:nq], X1[:nq], qcol, X0[nq:nq + nv],
                             X1[nq:nq + nv], True, da)


#: The estimate of a step whose smooth phase is exact to the θ-scheme's order (constant accelerations at
#: θ = 1/2): (0, no system).
NO_ERROR = (0.0, -1)


class LocalError:
    """The estimate for one run (its memory, the accelerations and differences of the last step, belongs
    to the run). :meth:`step` estimates the step from the stepper's current and pending states;
    :meth:`commit` adopts its memory once the simulation has committed the step; :meth:`block` estimates
    the steps of a compiled free flight (constant accelerations)."""

    def __init__(self, theta: float, h: float):
        self.theta, self.h = float(theta), float(h)
        self._plan = None            # (stepper layout key, _SecondOrder or _FirstOrder or None)
        self._zero = None            # the stepper's systems on which the estimate is 0 (see _layout)
        self._mem = None             # (step count, a_k, Δa_{k-1}, impulses, state row) after a step
        self._e = None               # (plan, e_q of its constant accelerations, any nonzero): :meth:`block`
        self._pending = None

    def _layout(self, st):
        """What the estimate needs of the stepper's layout (None: a stepper it does not know), rebuilt
        when the systems change (Moreau–Jean keeps its ``_Systems`` across changes of interactions).
        ``_zero``: the stepper's systems when the estimate is 0 on them (constant accelerations at
        θ = 1/2), else None."""
        S = getattr(st, "sys", None)
        key = S if S is not None else (tuple(map(id, getattr(st, "systems", ()))), getattr(st, "nv", None))
        if self._plan is None or not (self._plan[0] is key or (S is None and self._plan[0] == key)):
            plan = _SecondOrder(S) if S is not None else _first_order_plan(st)
            self._plan = (key, plan)
            self._mem = None
            self._zero = S if S is not None and plan.constant and self.theta == 0.5 else None
        return self._plan[1]

    def step(self, st, k: int, t0: float, X0: np.ndarray, X1: np.ndarray):
        """The estimate of step k + 1 (from time t0, state row X0 to X1, the stepper's row layout):
        (the estimate, the index of the system where it is largest, -1 if none)."""
        if self._zero is not None and self._zero is getattr(st, "sys", None):
            return NO_ERROR                # (the layout's estimate is 0: a linear time-invariant model's step)
        plan = self._layout(st)
        if plan is None:
            return np.nan, -1
        if plan.constant:                  # constant accelerations: the free flight's formula (0 at θ = 1/2)
            return NO_ERROR if self.theta == 0.5 else (float(self.block(st, k, X0, X1[None, :])[0]), -1)
        mem = self._mem
        if mem is not None and mem[0] == k and mem[4] is X0:      # (a state written between steps: afresh)
            a0, dprev, prev_hit = mem[1], mem[2], mem[3]
        else:
            a0 = plan.acc(t0, X0)
            dprev, prev_hit = a0, plan.no_memory
        a1, da, hit = plan.buffers[k & 1]      # (the memory holds the other pair: no copy, no allocation)
        if plan.fused:                         # linear time-invariant: one compiled call
            err, col = lti_step_error(self.h, self.theta, plan.fext(t0 + self.h), *plan.K, *plan.C, plan.dinv, X0,
                                      X1, plan.nq, plan.nv, plan.voff, plan.sys_of, plan.qcol, a0, dprev, prev_hit,
                                      a1, da, hit)
        else:
            a1[:] = plan.acc(t0 + self.h, X1)
            plan.hit(X1, hit)
            err, col = theta_local_error(self.h, self.theta, a0, a1, dprev, prev_hit, plan.sys_of, hit,
                                         *plan.scales(X0, X1), plan.second, da)
        self._pending = (k + 1, a1, da, hit, X1)
        return err, (int(plan.sys_of[col]) if col >= 0 else -1)

    def commit(self):
        """The simulation committed the step just estimated: its accelerations become the next step's."""
        if self._pending is not None:
            self._mem, self._pending = self._pending, None

    def block(self, st, k: int, X0: np.ndarray, rows: np.ndarray):
        """The estimates of steps k + 1 .. k + n of constant accelerations (a compiled free flight; ``rows``:
        their n recorded rows, X0 the state before): :math:`e_v = 0`, :math:`e_q = h^2(\\theta - \\frac12)a`;
        an array, or the float 0.0 when every one is 0 (θ = 1/2)."""
        plan = self._layout(st)
        n = rows.shape[0]
        if plan is None:
            return np.full(n, np.nan)
        self._mem = None                  # (the next step that is not a free flight starts afresh)
        if self.theta == 0.5:
            return 0.0
        kept = self._e
        if kept is not None and kept[0] is plan:        # (constant accelerations: e_q once per layout)
            e, nonzero = kept[1], kept[2]
        else:
            a = plan.acc(0.0, X0)
            nonzero = bool(np.any(a))
            e = np.abs(self.h * self.h * (self.theta - 0.5) * a)
            if plan.constant:
                self._e = (plan, e, nonzero)
        if not nonzero:
            return np.zeros(n)
        Q = np.vstack([plan.positions(X0[None, :]), plan.positions(rows)])
        return np.max(e / (1.0 + np.maximum(np.abs(Q[:-1]), np.abs(Q[1:]))), axis=1)


# ============================================================================ second order (Moreau–Jean)
class _SecondOrder:
    """Moreau–Jean's systems (the stepper's ``_Systems`` S): a = M⁻¹F in the twist (v) layout."""

    second = True

    def __init__(self, S):
        self.S = S
        nq, nv = S.nq, S.nv
        self.nq, self.nv = nq, nv
        self.voff = np.ascontiguousarray(S.voff, dtype=np.intp)
        self.sys_of = np.repeat(np.arange(len(S.systems), dtype=np.intp), np.diff(self.voff))
        # positions in the v layout: a Lagrangian column reads its q, a rigid body's rotation column none (-1)
        qcol = np.full(nv, -1, dtype=np.intp)
        for k, ds in enumerate(S.systems):
            a, b = S.offsets[k]
            w = 3 if getattr(ds, "kind", None) == "newton_euler" else b - a
            qcol[a:a + w] = np.arange(int(S.qoff[k]), int(S.qoff[k]) + w)
        self.qcol = qcol
        self._take, self._off = np.where(qcol < 0, 0, qcol), qcol < 0      # (positions)
        cons = [k for k in range(len(S.systems)) if S.constant[k]]
        # constant members: F = F_ext(t) - K q - C v (stacked), a = M⁻¹F with M's own factors (M ≠ M̂ with K, C)
        self.factors = []
        for k in cons:
            ds = S.systems[k]
            f = S.factors[k] if getattr(ds, "K", None) is None and getattr(ds, "C", None) is None else \
                factor_iteration_matrix(ds.mass(None), ds.name or type(ds).__name__)
            self.factors.append((k, f))
        self.diag = all(f.d is not None for _, f in self.factors)
        dinv = np.zeros(nv)
        if self.diag:
            for k, f in self.factors:
                a, b = S.offsets[k]
                dinv[a:b] = 1.0 / f.d
        self.dinv = dinv
        empty = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        self.K = empty if S.K is None else (S.K.indptr, S.K.indices, S.K.data)
        self.C = empty if S.C is None else (S.C.indptr, S.C.indices, S.C.data)
        self.qmap = None if S.K is None or S.ne is None else (S.lag_q, S.lag_v)
        self.lin = S.K is not None or S.C is not None
        self.varying = S.has_fext and not S.const_fext
        self._fext = S.fext(0.0) if S.has_fext else np.zeros(nv)
        self.a_const = self._const_acc(self._fext, None, None) if not self.lin and not self.varying else None
        self.constant = self.a_const is not None and not S.nonconstant     # a never changes
        self.nsys = len(S.systems)
        self.no_memory = np.ones(self.nsys, dtype=np.bool_)          # (as if every system had an impulse)
        self.buffers = [(np.empty(nv), np.empty(nv), np.empty(self.nsys, dtype=np.bool_)) for _ in range(2)]
        # every system of constant M̂, diagonal M, q in the v layout: the fused compiled step
        self.fused = not S.nonconstant and self.diag and self.qmap is None and nq == nv

    def fext(self, t):
        """The stacked F_ext of the constant members at t."""
        return self.S.fext(t) if self.varying else self._fext

    def _const_acc(self, F, q, v):
        """a of the constant members at F_ext = F (and q, v when K, C are present), zeros elsewhere."""
        out = np.zeros(self.nv)
        if not self.factors:
            return out
        if q is None:
            q = v = out
        elif self.qmap is not None:
            qv = np.zeros(self.nv)
            qv[self.qmap[1]] = q[self.qmap[0]]
            q = qv
        if self.diag:
            lti_accelerations(F, *self.K, *self.C, q, v, self.dinv, out)
            return out
        lti_accelerations(F, *self.K, *self.C, q, v, np.ones(self.nv), out)
        for k, f in self.factors:
            a, b = self.S.offsets[k]
            out[a:b] = f.solve(out[a:b])
        return out

    def acc(self, t, X):
        """a = M(q)⁻¹ F(t, q, v) of every system at the state row X."""
        S = self.S
        q, v = X[:self.nq], X[self.nq:self.nq + self.nv]
        if self.a_const is not None:
            a = self.a_const.copy()
        else:
            a = self._const_acc(S.fext(t) if self.varying else self._fext, q, v)
        for k in S.nonconstant:
            ds, r, rq = S.systems[k], S.ranges[k], S.qranges[k]
            M, F = ds.mass(q[rq]), ds.forces(t, q[rq], v[r])
            a[r] = F / M[0, 0] if M.shape[0] == 1 else np.linalg.solve(M, F)
        return a

    def hit(self, X, out):
        """Per system: whether it received an impulse over the step (p ≠ 0), into ``out``."""
        impulses(X[self.nq + self.nv:self.nq + 2 * self.nv], self.voff, out)

    def scales(self, X0, X1):
        nq, nv = self.nq, self.nv
        return X0[:nq], X1[:nq], self.qcol, X0[nq:nq + nv], X1[nq:nq + nv]

    def positions(self, rows):
        Q = rows[:, self._take]
        Q[:, self._off] = 0.0
        return Q


# ============================================================================ first order (Euler–Moreau)
class _FirstOrder:
    """Euler–Moreau's systems: f(t, x) per system, the x layout (x continuous: no impulse)."""

    second = False
    constant = False

    fused = False

    def __init__(self, st):
        self.systems, self.offsets, self.nv = st.systems, st.offsets, st.nv
        voff = np.asarray(st.off, dtype=np.intp)
        self.sys_of = np.repeat(np.arange(len(self.systems), dtype=np.intp), np.diff(voff))
        n, ns = self.nv, len(self.systems)
        self.no_memory = np.ones(ns, dtype=np.bool_)
        self.buffers = [(np.empty(n), np.empty(n), np.zeros(ns, dtype=np.bool_)) for _ in range(2)]
        self._none = np.zeros(0, dtype=np.intp)

    def acc(self, t, X):
        out = np.empty(self.nv)
        for ds, (a, b) in zip(self.systems, self.offsets):
            out[a:b] = ds.f(t, X[a:b])
        return out

    def hit(self, X, out):
        out[:] = False                         # x is continuous: no impulse

    def scales(self, X0, X1):
        x0, x1 = X0[:self.nv], X1[:self.nv]
        return x0, x1, self._none, x0, x1


def _first_order_plan(st):
    if not all(hasattr(st, a) for a in ("systems", "offsets", "off", "nv")):
        return None
    return _FirstOrder(st)

