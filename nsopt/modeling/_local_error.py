r"""The local error estimate of the θ-scheme's smooth phase (``formulations/time_stepping.md`` §6).

Moreau–Jean (Lagrangian systems, rigid bodies; :math:`a = M(q)^{-1}F(t, q, v)` the smooth acceleration,
the impulse p left out) and Euler–Moreau (first-order systems; :math:`f(t, x)`, the input r left out)
advance the smooth part of the motion by the θ-method. From the values at both ends of the step,
:math:`\Delta a_k = a_{k+1} - a_k`, and the previous step's :math:`\Delta a_{k-1}`, the leading terms of the
step's local error (the step minus the exact solution through the step's start) are

.. math::
    e_q = h^2\big[(\theta - \tfrac12)\,a_k + (\theta^2 - \tfrac16)\,\Delta a_k\big],\qquad
    e_v = h\big[(\theta - \tfrac12)\,\Delta a_k + \tfrac1{12}(\Delta a_k - \Delta a_{k-1})\big]

(first order: :math:`e_x` is :math:`e_v` with f for a); the second difference is left out after a
change of the systems, and for a system that received an impulse in either step. The step's estimate is
the largest :math:`|e_i| / (1 + \max(|x_{k,i}|, |x_{k+1,i}|))` over the components (positions in twist
coordinates for rigid bodies: the rotation's error in radians). Cost: one evaluation of the forces (of f)
and of M(q) per nonlinear system and step, the accelerations at the step's start kept from the step
before; none for the systems of constant M̂ without K, C and with a constant F_ext (their a is
constant: the estimate is 0 at θ = 1/2, :math:`h^2(\theta - \frac12)a` otherwise), two sparse products
(K Δq, C Δv) for the other linear time-invariant ones.
"""

from __future__ import annotations

import numpy as np

from ._stepper import Factor


class LocalError:
    """The estimate for one run (its memory, the accelerations and differences of the last step, belongs
    to the run). :meth:`step` estimates the step from the stepper's current and pending states;
    :meth:`commit` adopts its memory once the simulation has committed the step; :meth:`block` estimates
    the steps of a compiled free flight (constant accelerations)."""

    def __init__(self, theta: float, h: float):
        self.theta, self.h = float(theta), float(h)
        self._plan = None            # (stepper layout key, what the layout needs)
        self._mem = None             # (step count, layout key, a_k, Δa_{k-1} or None, smooth mask) after a step
        self._pending = None

    # ------------------------------------------------------------------ layouts
    def _layout(self, st):
        """What the estimate needs of the stepper's layout (None: a stepper it does not know), rebuilt
        when the systems change (Moreau–Jean keeps its ``_Systems`` across changes of interactions)."""
        S = getattr(st, "sys", None)
        key = S if S is not None else (tuple(map(id, getattr(st, "systems", ()))), getattr(st, "nv", None))
        if self._plan is None or not (self._plan[0] is key or (S is None and self._plan[0] == key)):
            self._plan = (key, _SecondOrder(S) if S is not None else _first_order_plan(st))
            self._mem = None
        return self._plan[1]

    # ------------------------------------------------------------------ one step
    def step(self, st, k: int, t0: float, X0: np.ndarray, X1: np.ndarray):
        """The estimate of step k + 1 (from time t0, state row X0 to X1, the stepper's row layout):
        (the estimate, the index of the system where it is largest)."""
        plan = self._layout(st)
        if plan is None:
            return np.nan, -1
        h, th = self.h, self.theta
        if plan.constant:                  # constant accelerations: the free flight's formula
            return float(self.block(st, k, X0, X1[None, :])[0]), -1
        t1 = t0 + h
        s0, s1 = plan.split(X0), plan.split(X1)     # (positions in v layout, velocities, impulse per system)
        mem = self._mem
        a0 = mem[2] if mem is not None and mem[0] == k and mem[1] is self._plan[0] else plan.acc(t0, X0)
        a1 = plan.acc(t1, X1)
        da = a1 - a0
        smooth = plan.smooth(X1)
        e_v = (th - 0.5) * h * da
        if mem is not None and mem[0] == k and mem[3] is not None:
            use = smooth & mem[4]
            if np.any(use):
                e_v = e_v + np.where(use, (da - mem[3]) * (h / 12.0), 0.0)
        e_q = h * h * ((th - 0.5) * a0 + (th * th - 1.0 / 6.0) * da)
        rq = np.abs(e_q) / (1.0 + np.maximum(np.abs(s0[0]), np.abs(s1[0])))
        rv = np.abs(e_v) / (1.0 + np.maximum(np.abs(s0[1]), np.abs(s1[1])))
        self._pending = (k + 1, self._plan[0], a1, da, smooth)
        return plan.report(rq, rv)

    def commit(self):
        """The simulation committed the step just estimated: its accelerations become the next step's."""
        if self._pending is not None:
            self._mem, self._pending = self._pending, None

    def block(self, st, k: int, X0: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The estimates of steps k + 1 .. k + n taken by the compiled free flight (``rows``: their n
        recorded rows; X0 the state before): constant accelerations, so :math:`e_v = 0` and
        :math:`e_q = h^2(\\theta - \\frac12)a`."""
        plan = self._layout(st)
        n = rows.shape[0]
        if plan is None:
            return np.full(n, np.nan)
        self._mem = None                  # (the next step that is not a free flight starts afresh)
        if self.theta == 0.5:
            return np.zeros(n)
        a = plan.acc(0.0, X0)
        if not np.any(a):
            return np.zeros(n)
        e = np.abs(self.h * self.h * (self.theta - 0.5) * a)
        Q = np.vstack([plan.split(X0)[0][None, :], plan.positions(rows)])
        return np.max(e / (1.0 + np.maximum(np.abs(Q[:-1]), np.abs(Q[1:]))), axis=1)


# ============================================================================ second order (Moreau–Jean)
class _SecondOrder:
    """Moreau–Jean's systems (the stepper's ``_Systems`` S): a = M⁻¹F in the twist (v) layout."""

    def __init__(self, S):
        self.S = S
        nq, nv = S.nq, S.nv
        self.nq, self.nv = nq, nv
        self.voff = S.voff
        # positions in the v layout: a Lagrangian column reads its q, a rigid body's rotation column reads 0
        qcol = np.full(nv, -1, dtype=np.intp)
        for k, ds in enumerate(S.systems):
            a, b = S.offsets[k]
            qa = int(S.qoff[k])
            w = 3 if getattr(ds, "kind", None) == "newton_euler" else b - a
            qcol[a:a + w] = np.arange(qa, qa + w)
        self.qcol, self.has_rot = qcol, bool(np.any(qcol < 0))
        self.qcol_safe = np.where(qcol < 0, 0, qcol)
        cons = [k for k in range(len(S.systems)) if S.constant[k]]
        # constant members: F = F_ext(t) - K q - C v (stacked), a = M⁻¹F with M's own factors (M ≠ M̂ with K, C)
        self.lin = S.K is not None or S.C is not None
        self.varying = S.has_fext and not S.const_fext
        self.factors = []
        for k in cons:
            ds = S.systems[k]
            if getattr(ds, "K", None) is None and getattr(ds, "C", None) is None:
                f = S.factors[k]                             # M̂ = M
            else:
                f = Factor(ds.mass(None), ds.name or type(ds).__name__)
            self.factors.append((k, f))
        self.diag = all(f.d is not None for _, f in self.factors)
        if self.diag and self.factors:
            d = np.ones(nv)
            for k, f in self.factors:
                a, b = S.offsets[k]
                d[a:b] = f.d
            self.d = d
        self.cmask = np.zeros(nv, dtype=bool)
        for k in cons:
            a, b = S.offsets[k]
            self.cmask[a:b] = True
        self.a_const = None
        if not self.lin and not self.varying:
            self.a_const = self._minv(S.fext(0.0)) if S.has_fext else np.zeros(nv)
        self.constant = self.a_const is not None and not S.nonconstant     # a never changes
        if S.ne is not None and self.lin:
            self.lag_q, self.lag_v = S.lag_q, S.lag_v

    def _minv(self, F):
        if self.diag:
            return np.where(self.cmask, F / self.d, 0.0)
        out = np.zeros(self.nv)
        for k, f in self.factors:
            a, b = self.S.offsets[k]
            out[a:b] = f.solve(F[a:b])
        return out

    def split(self, X):
        q, v = X[:self.nq], X[self.nq:self.nq + self.nv]
        qv = q[self.qcol_safe]
        if self.has_rot:
            qv = np.where(self.qcol < 0, 0.0, qv)
        return qv, v

    def positions(self, rows):
        Q = rows[:, :self.nq][:, self.qcol_safe]
        if self.has_rot:
            Q[:, self.qcol < 0] = 0.0
        return Q

    def smooth(self, X):
        """Per v column: whether its system received no impulse over the step (p = 0)."""
        p = X[self.nq + self.nv:self.nq + 2 * self.nv]
        hit = np.logical_or.reduceat(p != 0.0, self.voff[:-1]) if self.nv else np.zeros(0, dtype=bool)
        return np.repeat(~hit, np.diff(self.voff))

    def acc(self, t, X):
        """a = M(q)⁻¹ F(t, q, v) of every system at the state row X."""
        S = self.S
        q, v = X[:self.nq], X[self.nq:self.nq + self.nv]
        if self.a_const is not None:
            a = self.a_const.copy()
        else:
            F = S.fext(t) if S.has_fext else np.zeros(self.nv)
            if S.K is not None:
                if S.ne is None:
                    F = F - S.K @ q
                else:
                    qv = np.zeros(self.nv)
                    qv[self.lag_v] = q[self.lag_q]
                    F = F - S.K @ qv
            if S.C is not None:
                F = F - S.C @ v
            a = self._minv(F)
        for k in S.nonconstant:
            ds, r, rq = S.systems[k], S.ranges[k], S.qranges[k]
            a[r] = np.linalg.solve(ds.mass(q[rq]), ds.forces(t, q[rq], v[r]))
        return a

    def report(self, rq, rv):
        r = np.maximum(rq, rv)
        if not r.shape[0]:
            return 0.0, -1
        j = int(np.argmax(r))
        return float(r[j]), int(np.searchsorted(self.voff, j, side="right") - 1)


# ============================================================================ first order (Euler–Moreau)
class _FirstOrder:
    """Euler–Moreau's systems: f(t, x) per system, the x layout."""

    constant = False

    def __init__(self, st):
        self.systems, self.offsets, self.nv = st.systems, st.offsets, st.nv
        self.voff = st.off

    def split(self, X):
        x = X[:self.nv]
        return x, x

    def positions(self, rows):
        return rows[:, :self.nv]

    def smooth(self, X):
        return np.ones(self.nv, dtype=bool)          # x is continuous: no impulse

    def acc(self, t, X):
        out = np.empty(self.nv)
        for ds, (a, b) in zip(self.systems, self.offsets):
            out[a:b] = ds.f(t, X[a:b])
        return out

    def report(self, rq, rv):
        # e_x is the e_v formula with f for a (the e_q formula does not apply)
        if not rv.shape[0]:
            return 0.0, -1
        j = int(np.argmax(rv))
        return float(rv[j]), int(np.searchsorted(self.voff, j, side="right") - 1)


def _first_order_plan(st):
    if not hasattr(st, "systems") or not hasattr(st, "offsets"):
        return None
    return _FirstOrder(st)
