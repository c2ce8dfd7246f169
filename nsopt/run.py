"""One registered method run under the iteration contract: :func:`run_method` (``nsopt.solve`` and the
``auto`` policy call it, a fresh solve and a re-solve alike)."""

from __future__ import annotations

from time import perf_counter

import numpy as np

from .monitor import Monitor, warm_start_of
from .registry import Outcome
from .result import Status

ALIASES = ("z0", "r0", "v0")    # the per-method initial-guess options of nsopt 0.1, now warm_start


def _pop_aliases(problem, info, options, x0):
    """z0 / r0 / v0 given to a method that does not take them itself: they are warm starts."""
    options = dict(options)
    for a in ALIASES:
        if a in options and a not in info.options:
            v = options.pop(a)
            if v is not None:
                w = warm_start_of(problem, {a[0]: v}, label=a)
                x0 = {**(x0 or {}), **w}
    return options, x0


def run_method(problem, info, tol, max_iter, options, time_limit=None, history=False, callback=None,
               x0=None, workspace=None):
    """Call one registered method (``info``, a :class:`~nsopt.registry.MethodInfo`) on ``problem``
    under the contract (a :class:`Monitor` built from the common options, already checked; ``x0``:
    the warm start as :func:`warm_start_of` gives it) and return its Solution
    (:meth:`Outcome.solution`). The method's own ``options`` are checked here (once per distinct
    values: :meth:`MethodInfo.call_options`)."""
    given = options
    if options and not options.keys().isdisjoint(ALIASES):
        options, x0 = _pop_aliases(problem, info, options, x0)
    bare = info.bare and not options      # the checked defaults are the defaults: func takes them itself
    opts = None if bare else info.call_options(options)
    t0 = perf_counter()
    if problem.size == 0:   # every method: the trivial solution of an empty problem
        out = Outcome({problem.primal: np.zeros(0)}, nit=0, history=[0.0] if history else None,
                      message="empty problem")
    elif (why := problem.infeasibility()) is not None:   # every method: a certified empty problem
        x = {problem.primal: np.zeros(problem.size)}
        out = Outcome(x, Status.INFEASIBLE, 0, message=why, info={"certificate": "problem"},
                      history=[float(problem.error_of(problem.complete(x)))] if history else None)
    else:
        mon = Monitor(tol, max_iter, time_limit, history, callback, x0, workspace)
        out = info.func(problem, mon) if bare else info.func(problem, mon, **opts)
    return out.solution(problem, tol, info.name, t0, dict(given) if given else {})
