"""The convex formulations (nsopt.formulations) registered as nsopt.solve methods.

* ``qp``          lcp, mlcp, relay, avi with symmetric PSD M (checked: ``applies``)
* ``socp-fp``     fc2d, fc3d (SOCP + De Saxcé fixed point), gfc2d, gfc3d (primal SOCP over v)
* ``socp-tresca`` fc2d, fc3d (Tresca cylinder programs, fixed point g = mu r_N)

Common options: ``solver`` ("CLARABEL" default, "SCS", "OSQP" for QPs, "ECOS", ...) and
``solver_options`` (a dict merged over nsopt's accurate defaults, ``nsopt.formulations.ACCURATE``);
``formulation`` re-uses an already built formulation object (its compiled program).
Fixed-point options (socp-fp, socp-tresca): ``anderson`` (memory, 0 = plain), ``polish`` /
``polish_at`` (Newton polish of the last digits once the error is below polish_at), ``time_limit``
(seconds, Status.TIME_LIMIT), ``r0`` (initial reaction: s from its velocity), ``prox``, ``inexact``,
``direct`` (socp-fp with Clarabel: hand the compiled program's data to Clarabel once and update only
its linear term per iteration, instead of going through ``cvxpy.Problem.solve`` each time).
``Solution.info`` carries ``formulation`` (the object: ``.program``, ``.explain()``, ``.history``),
``timings`` (build / cvxpy / solver seconds, number of conic solves) and ``solver_share``.
"""

from __future__ import annotations

import time

import numpy as np

from ..exceptions import OptionError
from ..formulations import (
    AVIasQP,
    BoxQP,
    FCasSOCP,
    FCTresca,
    GFCPrimalSOCP,
    LCPasQP,
    MLCPasQP,
    RelayAsQP,
)
from ..formulations._base import cached_sym_psd
from ..registry import Outcome, register
from ..result import Status

_QP = {"lcp": LCPasQP, "mlcp": MLCPasQP, "relay": RelayAsQP, "avi": AVIasQP}


def _psd_applies(problem):
    return cached_sym_psd(problem)


def _gfc_applies(problem):
    why = cached_sym_psd(problem, key="convex:sym_psd_M")
    return f"the mass matrix M: {why}" if why else None


def _info(form, t_total):
    t = dict(form.timings)
    t["total"] = t_total
    return {"formulation": form, "timings": t, "solver": form.solver, "solver_share": form.time_share()}


def _reuse(formulation, cls, problem):
    if formulation is None:
        return None
    if not isinstance(formulation, cls) or formulation.problem is not problem:
        raise OptionError(f"formulation must be a {cls.__name__} built on this problem")
    return formulation


@register(("lcp", "mlcp", "relay", "avi"), "qp",
          "convex QP (symmetric PSD M) by CVXPY + Clarabel/OSQP/SCS, then an active-set polish",
          applies=_psd_applies)
def qp(problem, *, tol, max_iter, history=False, callback=None, solver=None, solver_options=None,
       polish=True, formulation=None):
    t0 = time.perf_counter()
    cls = _QP[problem.kind]
    form = _reuse(formulation, cls, problem) or cls(problem, solver=solver, solver_options=solver_options,
                                                   check=False)
    if max_iter is not None:
        key = {"CLARABEL": "max_iter", "OSQP": "max_iter", "SCS": "max_iters", "ECOS": "max_iters"}.get(form.solver)
        if key and max_iter > 0:
            form.solver_options = {**form.solver_options, key: int(max_iter)}
    try:
        z, status, it = form.run(polish=polish, callback=callback, tol=tol) if isinstance(form, BoxQP) \
            else form.run(polish=polish, callback=callback)
    except StopIteration:
        z, status, it = form.z.value, "callback", 0
        return Outcome({"z": np.zeros(problem.size) if z is None else np.asarray(z)}, Status.CALLBACK_STOP,
                       it, message="callback stopped the QP", info=_info(form, time.perf_counter() - t0))
    hist = [h["error"] for h in form.history] if history else None
    info = _info(form, time.perf_counter() - t0)
    if z is None:
        return Outcome({"z": np.zeros(problem.size)}, Status.NUMERICAL_ERROR, it, hist,
                       message=f"{form.solver} returned no solution (status {status})", info=info)
    msg = f"{form.solver} status {status}" + (", polished" if len(form.history) > 1 and
                                              form.history[-1]["error"] < form.history[0]["error"] else "")
    return Outcome({"z": z}, Status.SOLVED, it, hist, message=msg, info=info)


def _fp_outcome(form, sol, status, nit, msg, history, t0, var_default):
    hist = [h["error"] for h in form.history if "error" in h] if history else None
    if sol is None:
        sol = var_default
    info = _info(form, time.perf_counter() - t0)
    info["fixed_point"] = form.history
    return Outcome(sol, status, nit, hist, message=msg, info=info)


@register(("fc2d", "fc3d"), "socp-fp",
          "SOCP (CVXPY, compiled once) + Anderson-accelerated fixed point on s = mu ||u_T|| (De Saxce), "
          "Newton polish of the last digits")
def socp_fp(problem, *, tol, max_iter, history=False, callback=None, solver=None, solver_options=None,
            anderson=5, prox=0.0, inexact=False, direct=True, polish=True, polish_at=1e-6, time_limit=None,
            r0=None, formulation=None):
    t0 = time.perf_counter()
    form = _reuse(formulation, FCasSOCP, problem) or FCasSOCP(
        problem, solver=solver, solver_options=solver_options, prox=prox, inexact=inexact, direct=direct)
    sol, _err, status, nit, msg = form.run(tol=tol, max_iter=max_iter, anderson=anderson, r0=r0,
                                          callback=callback, polish=polish, polish_at=polish_at,
                                          time_limit=time_limit)
    return _fp_outcome(form, sol, status, nit, msg, history, t0, {"r": np.zeros(problem.size)})


@register(("fc2d", "fc3d"), "socp-tresca",
          "Tresca (cylinder) SOCPs + Anderson-accelerated fixed point on the thresholds g = mu r_N")
def socp_tresca(problem, *, tol, max_iter, history=False, callback=None, solver=None, solver_options=None,
                anderson=5, inexact=False, polish=True, polish_at=1e-6, time_limit=None, r0=None,
                formulation=None):
    t0 = time.perf_counter()
    form = _reuse(formulation, FCTresca, problem) or FCTresca(
        problem, solver=solver, solver_options=solver_options, inexact=inexact)
    sol, _err, status, nit, msg = form.run(tol=tol, max_iter=max_iter, anderson=anderson, r0=r0,
                                          callback=callback, polish=polish, polish_at=polish_at,
                                          time_limit=time_limit)
    return _fp_outcome(form, sol, status, nit, msg, history, t0, {"r": np.zeros(problem.size)})


@register(("gfc2d", "gfc3d"), "socp-fp",
          "primal SOCP over v (min 1/2 v'Mv - q'v, H'v + b + s~ in K*; no M inverse) + fixed point on s",
          applies=_gfc_applies)
def gfc_socp_fp(problem, *, tol, max_iter, history=False, callback=None, solver=None, solver_options=None,
                anderson=5, inexact=False, polish=True, polish_at=1e-6, time_limit=None, r0=None,
                formulation=None):
    t0 = time.perf_counter()
    form = _reuse(formulation, GFCPrimalSOCP, problem) or GFCPrimalSOCP(
        problem, solver=solver, solver_options=solver_options, inexact=inexact, check=False)
    sol, _err, status, nit, msg = form.run(tol=tol, max_iter=max_iter, anderson=anderson, r0=r0,
                                          callback=callback, polish=polish, polish_at=polish_at,
                                          time_limit=time_limit)
    return _fp_outcome(form, sol, status, nit, msg, history, t0,
                       {"r": np.zeros(problem.size), "v": problem.v(np.zeros(problem.size))})
