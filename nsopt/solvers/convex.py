r"""The ``qp`` method (the convex methods' common machinery, backend status maps and a program
compiled once and solved from its data, is :mod:`nsopt.solvers._conic`).

* ``qp``          lcp, mlcp, relay, avi with symmetric PSD M (checked: ``applies``); a convex QP by
  CVXPY + Clarabel / OSQP / SCS, then an active-set polish of the interior-point solution.
* ``socp-fp``, ``socp-tresca`` (fc2d, fc3d) and ``socp-fp`` (gfc2d, gfc3d): the SOCP fixed points,
  in :mod:`nsopt.solvers.socp_fp`.

Backend statuses
----------------
Each backend's own status goes through its ``STATUS_MAP`` (as cvxpy's interfaces do) to an nsopt
:class:`~nsopt.result.Status`; nsopt never reports SOLVED where the backend certified infeasibility:

* ``Solved`` → SOLVED (then judged by nsopt's error measure), ``AlmostSolved`` → INACCURATE;
  Clarabel's ``InsufficientProgress`` (it stopped short of nsopt's 1e-12 tolerances; its last
  iterate can be off by 1e-3) → NUMERICAL_ERROR, and the solve is retried once with tolerances
  1e-10, then with Clarabel's defaults;
* primal infeasible (the feasible set is empty, e.g. an AVI polyhedron ``{Hz >= k}`` with no point)
  → INFEASIBLE; dual infeasible (the QP is unbounded below: for a symmetric PSD M this proves that
  the complementarity problem has no solution, since a convex QP bounded below over a polyhedron
  attains its minimum, Frank–Wolfe) → INFEASIBLE. ``Solution.info["certificate"]`` says which; the
  ``auto`` policy stops there;
* iteration limit → MAX_ITER, time limit → TIME_LIMIT, numerical failure → NUMERICAL_ERROR.

Options (``qp``)
----------------
backend : "CLARABEL" (default), "OSQP", "SCS" (any QP-capable CVXPY backend).
backend_options : dict merged over nsopt's accurate defaults (``nsopt.formulations.ACCURATE``).
polish : active-set polish after the interior-point solve (default True).
formulation : an already built ``LCPasQP`` / ``RelayAsQP`` / ``MLCPasQP`` / ``AVIasQP`` of this problem.

The QP has no starting point: ``history[0]`` is the error of the QP's (polished) solution, and one
more iteration is a second, regularised solve when the first misses ``tol`` (a degenerate,
rank-deficient M). The CVXPY compile is ``Solution.build_time``; ``time_limit`` is passed to the
backend (Clarabel's ``time_limit``, OSQP's ``time_limit``, SCS' ``time_limit_secs``).
``Solution.info`` carries ``formulation``, ``timings`` (build / cvxpy / solver seconds, solves),
``backend``, ``solver_share``, ``backend_status``.
"""

from __future__ import annotations

import math
import time
from types import MappingProxyType

import numpy as np

from ..formulations import AVIasQP, LCPasQP, MLCPasQP, RelayAsQP
from ..formulations._base import cached_sym_psd
from ..registry import register
from ..result import Status

S = Status

from ._conic import (CLARABEL_STATUS_MAP, CVXPY_STATUS_MAP, OSQP_STATUS_MAP, SCS_STATUS_MAP,  # noqa: F401
                     _TOL_OPTS, Compiled, avi_polish, backend_status, box_polish, info_of, reuse)

_QP = MappingProxyType({"lcp": LCPasQP, "mlcp": MLCPasQP, "relay": RelayAsQP, "avi": AVIasQP})


def _psd_applies(problem):
    return cached_sym_psd(problem)


def _qp_solve(problem, mon, form, comp, polish, t0, opts=None):
    """One conic solve and its polish, recorded as the start (``history[0]``); a backend's
    certificate gives INFEASIBLE. Returns ``(z or None, Outcome)``."""
    p = problem
    res = comp.solve(opts=opts, time_limit=mon.time_left())
    info = info_of(form, comp, time.perf_counter() - t0)
    info["backend_status"] = res.label
    msg = f"{form.backend} status {res.label}"
    if res.certificate is not None:
        what = ("the feasible set is empty" if res.certificate == "primal infeasible" else
                "the QP is unbounded below, so the problem (symmetric PSD M) has no solution")
        info["certificate"] = res.certificate
        z0 = np.zeros(p.size)
        if mon.best_x is None:
            mon.start({"z": z0}, p.error(z0))
        return None, mon.outcome(x={"z": z0}, status=S.INFEASIBLE, info=info, message=f"{msg}: {what}")
    if res.x is None:
        z0 = np.zeros(p.size)
        if mon.best_x is None:
            mon.start({"z": z0}, p.error(z0))
        st = res.status if res.status not in (S.SOLVED, S.INACCURATE) else S.NUMERICAL_ERROR
        return None, mon.outcome(status=st, info=info, message=f"{form.backend} returned no solution ({res.label})")
    z, e, msg = _polished(p, form, res.x, polish, msg)
    if mon.best_x is None:
        mon.start({"z": z}, e)
    else:
        mon.step({"z": z}, e)
    info["timings"]["total"] = time.perf_counter() - t0
    return z, mon.outcome(info=info, message=msg, status=mon.status or res.status)


def _polished(p, form, z, polish, msg):
    """The interior-point z after the active-set polish (kept only where the error decreases)."""
    e = p.error(z)
    if not polish or e == 0:
        return z, e, msg
    if isinstance(form, AVIasQP):
        if form.poly is not None and p.H.shape[0]:
            lam = None if form.poly.dual_value is None else np.asarray(form.poly.dual_value, float).reshape(-1)
            z2 = avi_polish(p, form.S, z, lam)
            e2 = p.error(z2)
            if e2 < e:
                return z2, e2, msg + ", polished"
        return z, e, msg
    polished = False
    for z2, e2 in box_polish(p.M, np.asarray(p.q), form.lb, form.ub, z, p.error):
        z, e, polished = z2, e2, True
    return z, e, (msg + ", polished") if polished else msg


@register(("lcp", "mlcp", "relay", "avi"), "qp",
          "convex QP (symmetric PSD M) by CVXPY + Clarabel/OSQP/SCS, then an active-set polish",
          applies=_psd_applies)
def qp(problem, mon, *, backend=None, backend_options=None, polish=True, formulation=None):
    """The convex QP of a symmetric PSD problem (module docstring: options, statuses). The QP itself
    has no starting point: ``history[0]`` is the error of the start (the warm start, else zeros),
    which ends the solve when it already solves; the QP's polished solution is iteration 1.

    {solve_contract}
    >>> p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    >>> s = nsopt.solve(p, method="qp", tol=1e-10)
    >>> print(s.status.value, s.z.round(6))
    solved [1.333333 2.333333]
    """
    t0 = time.perf_counter()
    z0 = mon.start_vector("z", problem.size)
    e0 = problem.error(z0)
    if math.isfinite(e0) and mon.start({"z": z0}, e0):   # (an AVI over an empty K has e0 = inf:
        return mon.outcome(message="the starting point solves the problem")   # the QP certifies it)
    cls = _QP[problem.kind]
    form = reuse(formulation, cls, problem) or cls(problem, backend=backend, backend_options=backend_options,
                                                   check=False)
    comp = Compiled(form, var=form.z, opts=form.backend_options)
    mon.built()
    mon.budget(5)
    z, out = _qp_solve(problem, mon, form, comp, polish, t0)
    if z is None or mon.stopped:
        return out
    # a degenerate, rank-deficient M: Clarabel may stop "almost solved"; a second solve with a
    # stronger static regularisation (Clarabel) or the backend's default tolerances
    retry = dict(form.backend_options)
    if form.backend == "CLARABEL":
        retry["static_regularization_constant"] = 1e-7
    else:
        for k in _TOL_OPTS:
            retry.pop(k, None)
    res = comp.solve(opts=retry, time_limit=mon.time_left())
    if res.x is not None:
        z2, e2, _ = _polished(problem, form, res.x, polish, "")
        mon.step({"z": z2}, e2)
        out = mon.outcome(info=out.info, message=out.message + "; second solve (regularised)",
                          status=mon.status or res.status)
    return out


__all__ = ["CLARABEL_STATUS_MAP", "CVXPY_STATUS_MAP", "Compiled", "OSQP_STATUS_MAP", "SCS_STATUS_MAP",
           "backend_status", "box_polish", "qp"]
