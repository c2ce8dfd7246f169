r"""The LZB multiple-impact method ("lzb"), a faithful port of Siconos 4.4's ``MultipleImpact``.

The Darboux–Keller dynamics :math:`du = W\,dP` (:math:`W = HM^{-1}H^\top`) is integrated in the
normal impulse of a *primary contact*, with a fixed step :math:`\Delta P` (``impulse_step``). Each
step (Siconos' ``ComputeImpact`` loop):

1. state of each contact: 0 (no stored energy, not approaching: inactive), 1 (no stored energy,
   approaching), 2 (stored potential energy :math:`E_i > 0`);
2. stop when every contact has :math:`E_i \le \varepsilon_E` and :math:`u_i \ge -\varepsilon_u`;
3. primary contact: the one with the largest stored energy, or, when no contact stores energy, the
   one with the most negative relative velocity;
4. distribution vector :math:`\gamma_i = \Delta P_i / \Delta P` from the compliance law
   :math:`F_i = k_i\delta_i^{\eta_i}`, whose stored energy gives
   :math:`F_i = (1+\eta_i)^{\eta_i/(1+\eta_i)}k_i^{1/(1+\eta_i)}E_i^{\eta_i/(1+\eta_i)}`, so that
   :math:`\gamma_i = F_i / F_{\text{primary}}` (with :math:`E_i \approx |u_i|\Delta P_i` for a contact
   that is just starting, which makes :math:`\gamma_i` a fixed point solved in closed form);
5. :math:`P \mathrel{+}= \gamma\Delta P`, :math:`u \mathrel{+}= W\gamma\Delta P`;
6. energy: :math:`E_i \mathrel{-}= \bar u_i\,\Delta P_i` in compression (:math:`\bar u_i \le 0`, the mean
   relative velocity over the step), :math:`E_i \mathrel{-}= \bar u_i\,\Delta P_i / e_i^2` in expansion,
   clipped at 0 (``compliance="bi"``, Siconos' ``BiStiffness``); or, ``compliance="mono"``
   (``MonoStiffness``), one stiffness and the energy discarded when it falls below
   :math:`(1 - e_i^2)` times the work of the last compression.

The post-impact velocity is :math:`v = v^- + M^{-1}H^\top P`. The steps run in a compiled kernel in
chunks of about 20 ms (time_limit and Ctrl-C act between chunks); ``max_iter`` bounds the number of
impulse steps (Siconos' ``NstepMax``). The error reported after each step is the termination residual

.. math::  \max_i \max\big(0, -u_i, \sqrt{2W_{ii}E_i}\big) / (1 + \|Hv^-\|_\infty),

the relative velocity still approaching or the velocity the stored energy would give back, so that
the solve also ends when it falls below ``tol``; the method otherwise stops on Siconos' own rule.
The returned iterate is the last one (an unfinished impact is not improved by an earlier state).

References: C. Liu, Z. Zhao, B. Brogliato, Proc. R. Soc. A 464 (2008) 3193–3211 and 465 (2009) 1–23;
Siconos ``kernel/src/simulationTools/MultipleImpact.cpp`` (4.4.0).
"""

from __future__ import annotations

import math
import numbers
from types import MappingProxyType

import numpy as np
from .._jit import njit

from ..exceptions import OptionError
from ..registry import register
from ..result import Status

DBL_EPS = float(np.finfo(float).eps)     # Siconos' MACHINE_PREC, the default of its four tolerances
DEFAULT_MAX_ITER = 10_000_000
_ERRORS = MappingProxyType({
    1: "the relative velocity at the primary contact is not negative (PrimConVelocity)",
    2: "a component of the distribution vector is negative (Compute_distributionVector)",
    3: "a starting contact has a non-negative relative velocity (Compute_distributionVector)",
    5: "the potential energy became negative in compression (Compute_energyContact)",
})


@njit(cache=True)
def _lzb_steps(W, c, e, eta, dp, mono, tol_zero, tol_vel, tol_ener, end_vel, end_ener,
               u, u_old, E, Wc, state, P, dP, gamma, scale, errs, nmax, out):
    """Run up to ``nmax`` LZB steps in place. ``out`` receives [steps, terminated, error code, primary
    contact, impact-time increment]; ``errs[s]`` is the termination residual after step s."""
    m = u.shape[0]
    steps = 0
    terminated = 0
    code = 0
    prim = -1
    dtime = 0.0
    for s in range(nmax):
        # 1. state of the contacts (Check_stateContact)
        for i in range(m):
            if abs(E[i]) <= tol_ener:
                state[i] = 1 if u[i] < -tol_vel else 0
            else:
                state[i] = 2
        # 2. termination (IsMulImpactTerminate)
        done = True
        for i in range(m):
            if E[i] > end_ener or u[i] < -end_vel:
                done = False
                break
        if done:
            terminated = 1
            break
        # 3. primary contact (SelectPrimaContact): energy first, else velocity (first index on ties)
        emax = E[0]
        imax = 0
        for i in range(1, m):
            if E[i] > emax:
                emax = E[i]
                imax = i
        by_energy = not (abs(emax) <= tol_ener)
        if by_energy:
            prim = imax
            e_p = emax
            u_p = u[prim]
        else:
            umin = u[0]
            imin = 0
            for i in range(1, m):
                if u[i] < umin:
                    umin = u[i]
                    imin = i
            prim = imin
            u_p = umin
            e_p = E[prim]
            if not (u_p < -tol_vel):
                code = 1
                break
        # 4. distribution vector (Compute_distributionVector); c_i = (1+eta_i)^(eta_i/(1+eta_i)) k_i^(1/(1+eta_i))
        mu_p = eta[prim]
        for i in range(m):
            g = 0.0
            if state[i] != 0:
                mu = eta[i]
                r_mk = c[i] / c[prim]
                if not by_energy:
                    if not (u[i] < -tol_vel):
                        code = 3
                        break
                    r_v = abs(u[i]) ** (mu / (mu + 1.0)) / abs(u_p) ** (mu_p / (1.0 + mu_p))
                    g = (r_mk * r_v) ** (1.0 + mu) * dp ** ((mu - mu_p) / (1.0 + mu_p))
                elif state[i] == 1:
                    if not (u[i] < -tol_vel):
                        code = 3
                        break
                    r_e = abs(u[i] * dp) ** (mu / (mu + 1.0)) / e_p ** (mu_p / (mu_p + 1.0))
                    g = (r_mk * r_e) ** (1.0 + mu)
                else:
                    r_e = E[i] ** (mu / (mu + 1.0)) / e_p ** (mu_p / (mu_p + 1.0))
                    g = r_mk * r_e
            if g < 0.0:
                code = 2
                break
            gamma[i] = g
        if code != 0:
            break
        # 5. impulse increments; the primary contact's force for the time variable (ComputeImpulseContact)
        for i in range(m):
            dP[i] = gamma[i] * dp
            P[i] += dP[i]
        mu = eta[prim]
        if abs(E[prim]) <= tol_ener:
            f_p = c[prim] * (abs(u[prim]) * dP[prim]) ** (mu / (1.0 + mu)) if u[prim] < -tol_vel else 0.0
        else:
            f_p = c[prim] * E[prim] ** (mu / (1.0 + mu))
        # 6. relative velocities (Compute_velocityContact)
        for i in range(m):
            u_old[i] = u[i]
        for i in range(m):
            acc = 0.0
            for j in range(m):
                if dP[j] != 0.0:
                    acc += W[i, j] * dP[j]
            u[i] += acc
        # 7. potential energies (Compute_energyContact)
        for i in range(m):
            ubar = 0.5 * (u_old[i] + u[i])
            if not mono:
                if ubar <= 0.0:
                    E[i] = E[i] - ubar * dP[i]
                elif not (abs(e[i]) <= tol_zero):
                    E[i] = E[i] - ubar * dP[i] / (e[i] * e[i])
                    if E[i] < 0.0:
                        E[i] = 0.0
                else:
                    E[i] = 0.0
                if E[i] < 0.0:
                    code = 5
            else:
                if u_old[i] < 0.0 and u[i] >= 0.0:
                    Wc[i] = E[i]
                E[i] = E[i] - ubar * dP[i]
                if state[i] == 2 and u[i] > 0.0 and E[i] <= (1.0 - e[i] * e[i]) * Wc[i]:
                    E[i] = 0.0
        if code != 0:
            break
        if f_p > 0.0:
            dtime += dp / f_p
        steps += 1
        # termination residual after this step
        r = 0.0
        for i in range(m):
            a = -u[i]
            if a > r:
                r = a
            if E[i] > 0.0:
                b = math.sqrt(2.0 * W[i, i] * E[i])
                if b > r:
                    r = b
        errs[s] = r / scale
    out[0] = steps
    out[1] = terminated
    out[2] = code
    out[3] = prim
    out[4] = dtime


def _positive(name, x):
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not (0.0 < float(x) < math.inf):
        raise OptionError(f"lzb: {name} must be a finite positive number, got {x!r}")
    return float(x)


def _residual(problem, W, u, E, scale):
    r = max(0.0, float(np.max(-u, initial=0.0)))
    if E.size:
        r = max(r, float(np.max(np.sqrt(2.0 * np.diag(W) * np.maximum(E, 0.0)))))
    return r / scale


def _record(mon, errs, x):
    """Hand a chunk to the monitor (one step at a time when a callback wants every iteration)."""
    if mon.callback is not None and len(errs) == 1:
        return mon.step(x, errs[0])
    return mon.step(x, errs[-1], len(errs), errs) if len(errs) else None


@register("multiple-impact", "lzb", "LZB multiple-impact model (Siconos MultipleImpact): Darboux–Keller "
          "dynamics stepped on the primary contact's impulse, energetic restitution per contact")
def lzb(problem, mon, *, impulse_step=1e-5, compliance="bi", tol_velocity=DBL_EPS, tol_energy=DBL_EPS,
        end_velocity=DBL_EPS, end_energy=DBL_EPS):
    """Integrate the LZB impact dynamics (see the module docstring).

    Options
    -------
    impulse_step : the step :math:`\\Delta P` on the primary contact's impulse (Siconos' ``DelP``;
        default 1e-5 as Siconos' constructor). The error of the result is O(impulse_step / (m V)).
    compliance : ``"bi"`` (Siconos' ``BiStiffness``, default: the stiffness is scaled by 1/e^2 in
        expansion) or ``"mono"`` (``MonoStiffness``).
    tol_velocity, tol_energy : thresholds below which a relative velocity counts as non-negative and a
        stored energy as zero when classifying contacts (Siconos' ``Tol_Vel``, ``Tol_Ener``; DBL_EPSILON).
    end_velocity, end_energy : the same in the termination rule (``ZeroVel_EndIm``, ``ZeroEner_EndIm``).

    {solve_contract}
    >>> p = nsopt.MultipleImpact([[1.0]], [[1.0]], [-2.0], restitution=0.5, stiffness=1e6)
    >>> s = nsopt.solve(p, method="lzb", tol=1e-10)
    >>> print(s.status.value, s.v.round(4))
    solved [1.]
    """
    dp = _positive("impulse_step", impulse_step)
    if compliance not in ("bi", "mono"):
        raise OptionError(f"lzb: compliance must be 'bi' or 'mono', got {compliance!r}")
    tols = [_positive(n, x) for n, x in (("tol_velocity", tol_velocity), ("tol_energy", tol_energy),
                                         ("end_velocity", end_velocity), ("end_energy", end_energy))]
    m = problem.size
    mon.budget(DEFAULT_MAX_ITER)
    W = problem.delassus()
    B = problem.minv_ht()
    v0 = np.asarray(problem.v, float)
    u = np.asarray(problem.u(v0), float).copy()
    scale = 1.0 + float(np.max(np.abs(u), initial=0.0))
    P = np.zeros(m)
    E = np.zeros(m)
    e = np.array(problem.restitution, dtype=float)       # writable copies: one compiled signature
    eta = np.array(problem.elasticity, dtype=float)
    c = (1.0 + eta) ** (eta / (1.0 + eta)) * np.asarray(problem.stiffness, float) ** (1.0 / (1.0 + eta))
    u_old, Wc, dP, gamma = (np.zeros(m) for _ in range(4))
    state = np.zeros(m, dtype=np.int64)
    out = np.zeros(5)
    errs = np.empty(1)
    _lzb_steps(W, c, e, eta, dp, compliance == "mono", DBL_EPS, *tols,   # nmax = 0: only loads the kernel
               u, u_old, E, Wc, state, P, dP, gamma, scale, errs, 0, out)
    mon.built()       # W, M^{-1}H^T and the kernel's loading are the build
    info = {"impulse_step": dp, "compliance": compliance, "kinetic_energy_pre": problem.kinetic_energy(v0)}

    def x_of():
        return {"v": v0 + B @ P, "p": P.copy()}

    def finish(status=None, message=""):
        x = x_of()
        info.update(kinetic_energy_post=problem.kinetic_energy(x["v"]), stored_energy=E.copy(),
                    impact_duration=duration, primary_impulse=mon.k * dp, steps=mon.k)
        return mon.solution(x=x, info=info, status=status, message=message)

    duration = 0.0
    if not np.any(u < -tols[0]):   # Siconos computes nothing when no contact approaches (IsVcminNegative)
        mon.start(x_of(), _residual(problem, W, u, E, scale))
        return finish(Status.SOLVED, "no contact is approaching: no impact")
    if mon.start(x_of(), _residual(problem, W, u, E, scale)):
        return finish()
    while not mon.stopped:
        nc = mon.chunk(per_iteration_errors=True)
        if errs.shape[0] < nc:
            errs = np.empty(nc)
        _lzb_steps(W, c, e, eta, dp, compliance == "mono", DBL_EPS, tols[0], tols[1], tols[2], tols[3],
                   u, u_old, E, Wc, state, P, dP, gamma, scale, errs, nc, out)
        steps, terminated, code = int(out[0]), bool(out[1]), int(out[2])
        duration += float(out[4])
        info["primary_contact"] = int(out[3])
        if code:
            if steps:
                _record(mon, errs[:steps], x_of())
            return finish(Status.NUMERICAL_ERROR, "LZB: " + _ERRORS[code])
        if steps:
            if _record(mon, errs[:steps], x_of()) and not terminated:
                break
        if terminated:
            return finish(Status.SOLVED, f"LZB impact terminated after {mon.k} impulse step(s): every "
                                         "contact has released its energy and is separating")
    return finish()
