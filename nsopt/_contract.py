"""The iteration contract's stopping rule, written once as a compiled function: the
:class:`~nsopt.monitor.Monitor` judges every iteration with it, and the compiled kernels that run
several iterations per call (``nsgs``, the small dense Newton loop) stop their chunk with it, so that
a kernel returns exactly where the monitor would have stopped it (the monitor then judges the result).
"""

from __future__ import annotations

import math

from ._jit import njit

RUN, SOLVED, MAX_ITER, NON_FINITE = 0, 1, 2, 3


def stop_rule(err, tol, k, max_iter):
    """The contract's stops, in order: ``err <= tol`` (SOLVED), a non-finite error (NON_FINITE),
    ``k >= max_iter`` iterations (MAX_ITER; ``max_iter < 0``: no budget), else RUN. (The time limit
    and the callback are the monitor's alone.)"""
    if err <= tol:
        return SOLVED
    if not math.isfinite(err):
        return NON_FINITE
    if max_iter >= 0 and k >= max_iter:
        return MAX_ITER
    return RUN


#: the rule compiled, for the kernels that end their chunks with it; Python (the
#: :class:`~nsopt.monitor.Monitor`) calls :func:`stop_rule` itself, the same source uncompiled: a
#: compiled call from Python costs as much as a whole re-solve's judgement.
stop_code = njit(cache=True)(stop_rule)
