"""The contract's stopping rule has one source (nsopt._contract.stop_rule): the kernels call it compiled
(stop_code), the Monitor uncompiled; both give the same stop for every (error, tol, iterations, budget), nan and inf included, and a kernel's
code handed to Monitor.record is judged as the Monitor would judge the error itself."""

import math

import numpy as np
import pytest

from nsopt._contract import MAX_ITER, NON_FINITE, RUN, SOLVED, stop_code
from nsopt.monitor import Monitor
from nsopt.result import Status

STATUS = {SOLVED: Status.SOLVED, NON_FINITE: Status.NUMERICAL_ERROR, MAX_ITER: Status.MAX_ITER, RUN: None}


def _cases():
    rng = np.random.default_rng(0)
    errs = [0.0, 1e-300, 1e-8, 1e-7, 1.0, math.inf, -math.inf, math.nan] + list(10.0 ** rng.uniform(-12, 2, 40))
    for err in errs:
        for tol in (1e-8, 1e-7):
            for k, max_iter in ((0, 0), (0, 5), (5, 5), (6, 5), (3, None)):
                yield err, tol, k, max_iter


@pytest.mark.parametrize("err,tol,k,max_iter", list(_cases()))
def test_monitor_judges_as_the_compiled_rule(err, tol, k, max_iter):
    code = stop_code(err, tol, k, -1 if max_iter is None else max_iter)
    for given in (None, code):          # the Monitor's own judgement, and a kernel's code handed over
        mon = Monitor(tol, max_iter=max_iter)
        mon.k = k
        assert mon._judge(err, given) is STATUS[code]


def test_the_rule_has_one_source():
    """The compiled rule is the Python rule compiled, and the Monitor's judgement calls that rule instead of
    writing its comparisons again (the copy this test replaced kept `err <= self.tol` in monitor.py)."""
    import inspect

    import nsopt._contract as contract
    import nsopt.monitor as monitor

    assert getattr(contract.stop_code, "py_func", contract.stop_code) is contract.stop_rule
    judge = inspect.getsource(monitor.Monitor._judge)
    assert "_stop_rule(" in judge and "self.tol" in judge and "<= self.tol" not in judge
    assert "isfinite" not in judge
