r"""The iteration contract, written once: :class:`Monitor`.

:func:`nsopt.solve` builds one monitor per call from the common options
(``tol, max_iter, time_limit, history, callback, warm_start``) and hands it to the method. A method
keeps only its own reasons to stop (a stall, Lemke's ray, a failed line search); everything else is
the monitor's, in one fixed order, after every iteration :math:`k`:

1. record the error in the history (``history[0]`` is the error of the starting point);
2. keep the best iterate (the smallest error so far; the solve returns it);
3. call ``callback(Iterate)`` (``StopIteration`` gives ``CALLBACK_STOP``);
4. stop on a non-finite error (``NUMERICAL_ERROR``), on ``error <= tol`` (``SOLVED``), on
   ``k == max_iter`` (``MAX_ITER``), or when the ``time_limit`` has run out (``TIME_LIMIT``).

A method's loop::

    x = mon.start_vector("z", n)                # the warm start, or zeros
    if mon.start({"z": x}, problem.error(x)):   # the starting point may already be the answer
        return mon.solution()
    while not mon.stopped:
        ...                                      # one iteration, in place on x
        mon.step({"z": x}, problem.error(x))
    return mon.solution(message=...)

``mon.solution(...)`` makes the :class:`~nsopt.Solution` that ``solve`` returns (the monitor knows
the problem and the method's name); ``mon.outcome(...)`` gives the same as an
:class:`~nsopt.registry.Outcome`, for a method that still changes it (a second attempt, variables
mapped back from a reduction) before it returns it.

What a method builds and can reuse on the next solve of a problem with the same matrices (a CSC
split, work arrays, a Newton system) goes through ``mon.state(problem, key, make, ("W",))``: kept in
the caller's :class:`Workspace` (``solve(..., workspace=ws)``) when there is one, else in the
problem's cache, which ``problem.replace(q=...)`` shares. One-off builds end with ``mon.built()``:
their time is ``Solution.build_time`` and does not count against ``time_limit``. Nor does the time
numba spends loading a compiled kernel from its cache or compiling it, on the kernel's first call
in a process (:func:`nsopt._jit.compile_seconds`; 0.1 to several seconds): it is build time too, so
a first solve and a later one get the same iterations for the same ``time_limit``.

Compiled kernels run several iterations per call: ``n = mon.chunk()`` says how many (1 when a
callback wants every iteration; otherwise a number that keeps each call to a few tens of
milliseconds, so that ``time_limit`` and Ctrl-C act between calls), and ``mon.step(x, err, n, errors)``
records them. A kernel that runs a whole solve (its own chunks, its best iterate, the same stops as
the monitor's) is called in turns of ``mon.schedule(work)`` iterations and each turn is handed to
:meth:`Monitor.record` (``(code, iterations, best)`` of the kernel: the monitor judges them, so the
status, the message and the best iterate are the monitor's whichever path a solve takes).

The time left of ``time_limit`` (for a backend that takes its own limit) is :meth:`Monitor.time_left`.
``time_limit`` and the campaigns' ``timeout`` follow one rule (:func:`check_time_limit`): a
non-negative number of seconds, 0 included (a solve with no time: its starting point is judged,
then ``TIME_LIMIT``), or None / inf (no limit).
"""

from __future__ import annotations

import inspect
import math
import numbers
import operator
import time

import numpy as np

from ._contract import NON_FINITE as _NON_FINITE
from ._contract import RUN as _RUN
from ._contract import SOLVED as _CODE_SOLVED
from ._contract import MAX_ITER as _CODE_MAX_ITER
from ._contract import stop_rule as _stop_rule
from ._jit import COMPILE_CLOCK as _COMPILE
from .exceptions import OptionError
from .problems._base import FLOAT64, all_finite
from .registry import Outcome
from .result import _INFEASIBLE, _MAX_ITER, _SOLVED, Iterate, Solution, Status, judged, lazy_message

_SOLVED_MESSAGE = "error %.3g <= tol after %d iteration(s)"
_INF = math.inf
CHUNK_SECONDS = 0.02     # target duration of one compiled chunk (time_limit and Ctrl-C act between chunks)
WORK_PER_CHUNK = 10**7   # flops of one chunk on the deterministic schedule (a few ms to a few tens)


def _callback(cb):
    """Normalise a callback to ``f(Iterate)``; the legacy form ``f(k, x, err)`` is accepted too."""
    if cb is None:
        return None
    if not callable(cb):
        raise OptionError(f"callback must be callable, got {type(cb).__name__}")
    try:
        params = [p for p in inspect.signature(cb).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    except (TypeError, ValueError):  # builtins without a signature: the documented one-argument form
        return cb
    if len(params) == 3:
        return lambda it: cb(it.nit, it.x, it.error)
    return cb


class Monitor:
    """The common stopping logic of every method (see the module docstring).

    Attributes a method reads: ``tol``, ``max_iter`` (after :meth:`budget`), ``x0`` (the warm start:
    a dict of the problem's variables, or None), ``stopped``, ``k`` (iterations done), ``deadline``.
    """

    # the state of a solve that has not started (class defaults: a monitor is made per solve, and
    # setting only what the caller gave keeps that cheap)
    max_iter = deadline = history = callback = x0 = workspace = problem = None
    method = ""
    options = None      # the options the solve was given (the Solution's own dict), None: none
    k = 0
    best_x = None
    best_err = err = math.inf
    status = None
    _message = ""
    build_time = 0.0
    _chunk = _det = 1
    _t_chunk = None
    _borrowed = False

    def __init__(self, tol, max_iter=None, time_limit=None, history=False, callback=None, x0=None,
                 workspace=None, problem=None, method="", options=None):
        self.tol = tol
        self.problem = problem      # (what :meth:`solution` makes the Solution of, by ``method``)
        self.method = method
        if options is not None:
            self.options = options
        self._t0 = t0 = time.perf_counter()
        self._jit = _COMPILE.total     # (kernels loaded or compiled from here on: build time)
        if max_iter is not None:
            self.max_iter = max_iter
        if time_limit is not None:
            self.deadline = t0 + time_limit
        if history:
            self.history = []
        if callback is not None:
            self.callback = _callback(callback)
        if x0 is not None:
            self.x0 = x0
        if workspace is not None:
            self.workspace = workspace

    # -- set-up --------------------------------------------------------------------------------
    def budget(self, default: int) -> int:
        """``max_iter``, with the method's ``default`` when the caller gave None."""
        if self.max_iter is None:
            self.max_iter = int(default)
        return self.max_iter

    def start_vector(self, name: str, size: int) -> np.ndarray:
        """A float copy of the warm start's ``name`` (validated by ``solve``), else zeros."""
        x0 = self.x0
        if x0 is not None:
            v = x0.get(name)
            if v is not None:     # (warm_start_of gives float64 vectors)
                return v.copy() if type(v) is np.ndarray and v.dtype is FLOAT64 else np.array(v, dtype=float)
        return np.zeros(size)

    def state(self, problem, key, make, on, args=(), previous=False):
        """What a method built for ``problem`` and may reuse on the next solve: ``make(problem,
        *args)`` computed once per identity of the fields ``on`` (a tuple of field names, the same
        for every use of ``key``; see :meth:`Problem.cached`), kept in the :class:`Workspace` when
        the caller gave one (it then survives new problem objects that share those fields, e.g. made
        by ``replace``), else in the problem's own cache. (One lookup, by identity: a re-solve's
        per-call cost.) A new one is a one-off build (:meth:`built`). ``previous``: ``make`` also
        gets the value it replaces (``previous=``, None if none), e.g. to keep what depends on a
        pattern that did not change."""
        store = problem._store if self.workspace is None else self.workspace._store
        hit = store.get(key)
        if hit is not None:
            had = hit[0]
            if had[0] is getattr(problem, on[0]) and (len(on) == 1 or had[1] is getattr(problem, on[1]) and (
                    len(on) == 2 or all(map(operator.is_, had[2:], problem.dependencies(on[2:]))))):
                return hit[1]
        value = make(problem, *args, previous=hit and hit[1]) if previous else make(problem, *args)
        store[key] = (problem.dependencies(on), value)
        self.built()        # (a one-off build: its time is the solve's build_time)
        return value

    def built(self):
        """Mark the end of a one-off build (factorisation, compiled program): its time is reported as
        ``Solution.build_time`` and the deadline moves by as much (a build is not interruptible)."""
        now = time.perf_counter()
        self._jit = _COMPILE.total     # (a kernel loaded or compiled in the build is part of it)
        dt = now - self._t0 - self.build_time
        self.build_time += dt
        if self.deadline is not None:
            self.deadline += dt

    def _compiled(self):
        """Count the time numba spent loading or compiling kernels since the last look as build
        time: ``build_time`` grows and the deadline moves by as much."""
        j = _COMPILE.total
        if j != self._jit:
            dt, self._jit = j - self._jit, j
            self.build_time += dt
            if self.deadline is not None:
                self.deadline += dt

    def _late(self) -> bool:
        """The deadline has passed (numba's loading and compiling excluded)."""
        self._compiled()
        return time.perf_counter() > self.deadline

    def expired(self) -> bool:
        """True when the time limit has run out (for inner loops that want to give up early)."""
        return self.deadline is not None and self._late()

    def time_left(self):
        """Seconds left of ``time_limit`` (>= 0), or None without one: the budget to hand to a
        backend or an inner solve that takes its own time limit."""
        if self.deadline is None:
            return None
        self._compiled()
        return max(self.deadline - time.perf_counter(), 0.0)

    # -- the contract --------------------------------------------------------------------------
    def _keep(self, x, err):
        self.err = err
        if err < self.best_err or self.best_x is None:
            self.best_err = err
            self.best_x = {k: np.array(v, dtype=float) for k, v in x.items()}
            self._borrowed = False

    def _judge(self, err, code=None):
        """The contract's stops, in order, then the deadline; ``code``: the rule's value as a kernel
        computed it for this error (:func:`nsopt._contract.stop_code`, the rule compiled, with which
        kernels end their chunks), else the rule's one source called here uncompiled
        (:func:`nsopt._contract.stop_rule`). The message is kept as (format, values) and made when read
        (:attr:`message`)."""
        if code is None:
            code = _stop_rule(err, self.tol, self.k, -1 if self.max_iter is None else self.max_iter)
        if code == _RUN:
            if self.deadline is not None and self._late():
                return self.stop(Status.TIME_LIMIT, ("time limit reached after %d iteration(s) (best error %.3g)",
                                                     (self.k, self.best_err)))
            return None
        if code == _CODE_SOLVED:
            self.status = _SOLVED      # (self.stop, inline: the common end of a solve)
            self._message = (_SOLVED_MESSAGE, (err, self.k))
            return _SOLVED
        if code == _NON_FINITE:
            return self.stop(Status.NUMERICAL_ERROR, ("non-finite error after %d iteration(s)", (self.k,)))
        return self.stop(Status.MAX_ITER, ("no convergence in %d iteration(s) (best error %.3g)", (self.k, self.best_err)))

    def start(self, x: dict, err: float):
        """Record the starting point (iteration 0). Returns the status when it already ends the
        solve (solved, non-finite, ``max_iter == 0``, no time left), else None."""
        err = float(err)
        if self.history is not None:
            self.history.append(err)
        self._keep(x, err)
        return self._judge(err)

    def step(self, x: dict, err: float, n: int = 1, errors=None, best=None):
        """Record ``n`` iterations (default 1: iteration ``k + 1``) ending at the iterate ``x`` (dict
        of the problem's variables) with error ``err``: the one way to record iterations, one by a
        Python loop or a chunk of them by a compiled kernel. ``errors``: the errors of the ``n``
        iterations, for the history (None: ``err`` for each, a kernel that knows only its last
        error, see :meth:`chunk`); ``best = (x_best, err_best)``: the best iterate a kernel saw inside
        its chunk, if it kept one. The callback sees an iteration recorded alone. Returns the status
        when the solve must stop, else None."""
        if n != 1:
            if n == 0:
                return None
            self.timed(n)
            if best is not None and best[1] < self.best_err:
                self.best_err = float(best[1])
                self.best_x = {k: np.array(v, dtype=float) for k, v in best[0].items()}
                self._borrowed = False
        elif self._t_chunk is not None:
            self.timed(1)
        self.k += n
        err = float(err)
        if self.history is not None:
            if n == 1:
                self.history.append(err)
            else:
                self.history.extend([err] * n if errors is None else [float(e) for e in errors])
        self._keep(x, err)
        if n == 1 and self.callback is not None:
            try:
                self.callback(Iterate(self.k, err, {k: np.array(v, dtype=float) for k, v in x.items()}))
            except StopIteration:
                return self.stop(Status.CALLBACK_STOP, f"stopped by the callback after {self.k} iteration(s)")
        return self._judge(err)

    def chunk(self, per_iteration_errors: bool = True, work: int | None = None, first=None) -> int:
        """How many iterations a compiled kernel should run before returning to Python.

        ``per_iteration_errors=False``: the kernel only knows the error at the end of its chunk
        (:meth:`step` without ``errors``); then a requested history also asks for one iteration per chunk, and the
        chunk sizes must not depend on timing, or the iteration at which the solve stops (and so its
        result) would: give ``work``, the cost of one iteration in flops (e.g. nnz), and the sizes
        double from 1 up to about ``WORK_PER_CHUNK / work``, a schedule fixed by the problem alone.
        Without ``work``, the sizes double up to about ``CHUNK_SECONDS`` of kernel time (measured by
        :meth:`step`, or given to :meth:`timed`), from ``first`` when given (the first chunk of a
        series of cheap iterations, e.g. the pivots of a new Lemke path)."""
        if self.callback is not None or (self.history is not None and not per_iteration_errors):
            return 1
        left = math.inf if self.max_iter is None else self.max_iter - self.k
        if work is not None:
            size = min(self._det, max(1, int(WORK_PER_CHUNK // max(int(work), 1))))
            self._det = 2 * size
            return int(max(1, min(size, left)))
        if first is not None:
            self._chunk = max(1, int(first))
        self._t_chunk = time.perf_counter()
        return int(max(1, min(self._chunk, left)))

    def timed(self, n: int):
        """The last :meth:`chunk` (timed) ran ``n`` iterations: size the next one to about
        ``CHUNK_SECONDS`` (at most doubling), for kernels recorded otherwise than by :meth:`step`."""
        if n > 0 and self._t_chunk is not None:
            per = (time.perf_counter() - self._t_chunk) / n
            self._chunk = max(1, min(2 * n, int(CHUNK_SECONDS / per) if per > 0 else 2 * n))
            self._t_chunk = None

    def schedule(self, work: int):
        """``(cap, turn, first)`` for a kernel that runs a whole solve with its own chunk schedule
        (chunk sizes doubling from 1 up to ``cap``, the deterministic one of :meth:`chunk`):
        ``turn`` iterations per call between which the monitor judges (``time_limit``, Ctrl-C), and
        ``first`` for the first call. A callback wants every iteration (``cap = turn = 1``); a time
        limit has the starting point judged alone first (``first = 0``) and the deadline read after
        every chunk (``turn = cap``: a quarter of the turn without one)."""
        if self.callback is not None:
            return 1, 1, 0 if self.deadline is not None else 1
        cap, turn = plain_schedule(work)
        return (cap, turn, turn) if self.deadline is None else (cap, cap, 0)

    def record(self, start, n: int, last: float, errors, x: dict, best: dict, best_err: float, code=None):
        """Record one call of a kernel that runs a whole solve and keeps its best iterate itself:
        ``start``, the error of the starting point when this call began the solve (iteration 0,
        judged first, as :meth:`start`), else None; ``n`` iterations run in the call, the last with
        error ``last``, the errors of all of them in ``errors[:n]`` (read for a history); ``x``, the
        iterate at the end of the call; ``best`` (with ``best_err``), the best iterate of the solve
        so far, the start included: the kernel's own arrays, copied when the solution is made. The
        callback sees each iteration of a one-iteration call; ``code``, the contract's code with which the
        kernel ended the call (:func:`nsopt._contract.stop_code` of its last error: the monitor judges
        with it, not computing it again). Returns the status when the solve must stop, else None."""
        self.best_x, self.best_err, self._borrowed = best, best_err, True
        if start is not None:
            self.err = start
            if self.history is not None:
                self.history.append(start)
            # the start is judged (iteration 0) unless none of _judge's stops can apply to it: an
            # error above tol and finite, a budget of at least one iteration, no deadline
            if not (self.tol < start < _INF and self.max_iter != 0 and self.deadline is None) \
                    and self._judge(start, None if code is None else code if n == 0 else _RUN) is not None:
                return self.status
        if n == 0:
            return None
        self.k += n
        self.err = last
        if self.history is not None:
            self.history.extend(errors[:n].tolist())
        if self.callback is not None and n == 1:
            try:
                self.callback(Iterate(self.k, last, {k: np.array(v, dtype=float) for k, v in x.items()}))
            except StopIteration:
                return self.stop(Status.CALLBACK_STOP, f"stopped by the callback after {self.k} iteration(s)")
        if code == _CODE_SOLVED:      # (_judge's first stop, inline: the common end of a re-solve)
            self.status = _SOLVED
            self._message = (_SOLVED_MESSAGE, (last, self.k))
            return _SOLVED
        return self._judge(last, code)

    def stop(self, status: Status, message="") -> Status:
        """A method's own reason to stop (stall, ray, line-search failure), or the contract's.
        ``message``: a str, or (format, values) made into one when it is read."""
        self.status = status
        if message:
            self._message = message
        return status

    message = lazy_message()

    @property
    def stopped(self) -> bool:
        return self.status is not None

    def solution(self, message="", info: dict | None = None, x: dict | None = None, status=None, error=None):
        """The :class:`~nsopt.Solution` of the solve, what a method returns to :func:`nsopt.solve`,
        and the one place a Solution is made from what a method did (an :class:`Outcome` goes
        through :meth:`finish`): the best iterate (or ``x``) with every variable of the monitor's
        ``problem`` and its error measure, recomputed unless ``error`` is given (then ``x`` holds
        all the variables and ``error`` is the problem's measure of them, computed by the same
        formula); the status (MAX_ITER when the loop ended without one) judged by that error
        (:func:`nsopt.result.judged`; a backend's infeasibility certificate is not overruled);
        iterations, history, message (a str, or (format, values) formatted when first read), and
        ``solve_time`` from the monitor's start to the end of this judgement, which is part of the
        solve. Built without the dataclass' ``__init__`` (the same fields, one store each: what a
        re-solve loop saves is its per-call cost)."""
        problem, tol = self.problem, self.tol
        if x is None:
            x = self._best()
        if error is None:
            x = problem.complete(x)
            error = float(problem.error_of(x))
        if status is None:
            status = self.status or _MAX_ITER
        if info is None:
            info = {}
        if status is not _INFEASIBLE or not info.get("certificate"):
            status = _SOLVED if 0.0 <= error <= tol else judged(status, error, tol)
        s = object.__new__(Solution)
        # (the variables it does not carry, a history of None, a build time of 0: the class defaults)
        s.problem = problem
        s.method = self.method
        s.status = status
        s.error = error
        s.tol = tol
        s.nit = self.k
        s.solve_time = time.perf_counter() - self._t0
        if _COMPILE.total != self._jit:     # (_compiled: a kernel loaded or compiled during the solve)
            self._compiled()
        s.info = info
        s.trace = []
        s.options = {} if self.options is None else self.options
        if self.build_time:
            s.build_time = self.build_time
        if self.history is not None:
            s.history = self.history
        d = s.__dict__
        d["message"] = message or self._message     # (unformatted: ``message`` formats it when read)
        d.update(x)
        return s

    def finish(self, out: Outcome):
        """The :class:`~nsopt.Solution` of an :class:`Outcome` that a method returned
        (:meth:`solution`, with the outcome's iterations, history and build time)."""
        self.k, self.history, self.build_time = out.nit, out.history, out.build_time
        return self.solution(out._message, out.info, out.x, out.status,
                             float(out.error) if out.complete and out.error is not None else None)

    def outcome(self, message="", info: dict | None = None, x: dict | None = None, status=None, error=None):
        """The same as :meth:`solution`, as an :class:`~nsopt.registry.Outcome` that a method may
        still change (its variables mapped back from a reduction, a second attempt) before it
        returns it (``solve`` makes its Solution: :meth:`finish`)."""
        return Outcome(self._best() if x is None else x, status or self.status or _MAX_ITER, self.k,
                       self.history, message or self._message, info, self.build_time, error, error is not None)

    def _best(self):
        """The best iterate as the result's variables (the kernel's arrays copied when borrowed)."""
        x = self.best_x
        if x is None:
            return {}
        return {k: v.copy() for k, v in x.items()} if self._borrowed else x


def plain_schedule(work: int):
    """``(cap, turn)`` of :meth:`Monitor.schedule` for a solve without callback or time limit (the
    same numbers; a method may keep them with what it built for its matrix)."""
    cap = WORK_PER_CHUNK // work if work > 0 else WORK_PER_CHUNK
    cap = cap if cap > 0 else 1
    return cap, 4 * cap


# ------------------------------------------------------------------------------------------ the common options
def check_tol(tol) -> float:
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not (0 < float(tol) < math.inf):
        raise OptionError(f"tol must be a finite positive number, got {tol!r}")
    return float(tol)


def check_max_iter(max_iter):
    if max_iter is None:
        return None
    if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 0:
        raise OptionError(f"max_iter must be a non-negative integer or None, got {max_iter!r}")
    return int(max_iter)


def check_time_limit(time_limit, name="time_limit"):
    """The one rule of ``time_limit`` (``nsopt.solve``) and of the campaigns' ``timeout``: a
    non-negative number of seconds (0: no time at all, the starting point is judged and the solve
    ends with ``TIME_LIMIT`` unless it is already solved), or None / inf for no limit. Returns a
    float, or None for no limit."""
    if time_limit is None:
        return None
    if isinstance(time_limit, bool) or not isinstance(time_limit, numbers.Real) or not float(time_limit) >= 0:
        raise OptionError(f"{name} must be a non-negative number of seconds or None, got {time_limit!r}")
    t = float(time_limit)
    return None if t == math.inf else t


# kinds whose only starting variable is the primal one (the others are derived from it)
_PRIMAL_ONLY = frozenset(("lcp", "mlcp", "relay", "avi", "equality", "fc2d", "fc3d"))


def warm_start_of(problem, warm_start, label="warm_start") -> dict | None:
    """The warm start as a dict of the problem's variables (float arrays of the right sizes, finite).

    Accepts a :class:`Solution`, a dict of variables, or an array of the problem's primal variable.
    The arrays of a finite Solution of the same kind (made by nsopt) are taken as they are, and
    a float64 vector of the right size is checked for finiteness only (the methods copy what they
    start from)."""
    if warm_start is None:
        return None
    primal = problem.primal
    if type(warm_start) is Solution and type(wp := warm_start.problem) is type(problem) \
            and (kind := problem.kind) in _PRIMAL_ONLY and wp.kind == kind and math.isfinite(warm_start.error) \
            and (a := warm_start.__dict__.get(primal)) is not None and a.shape == (problem.size,):
        return {primal: a}     # a finite Solution of a problem of this kind: its arrays as they are
    if type(warm_start) is np.ndarray and warm_start.dtype == FLOAT64 and warm_start.ndim == 1:
        if warm_start.shape[0] == problem.size and all_finite(warm_start):
            return {primal: warm_start}
        x = {primal: warm_start}
    elif isinstance(warm_start, Solution):
        sizes = problem.variable_sizes()
        if warm_start.problem is not None and getattr(warm_start.problem, "kind", None) == problem.kind \
                and math.isfinite(warm_start.error):
            # a finite solution of a problem of this kind: its variables are finite arrays made by
            # nsopt; only their sizes are checked (the common re-solve loop, kept cheap)
            out = {}
            for name in (primal, "v"):
                a = warm_start.__dict__.get(name)
                if a is not None and name in sizes and a.shape == (sizes[name],):
                    out[name] = a
            if primal in out:
                return out
        x = warm_start.variables()
    elif isinstance(warm_start, dict):
        x = warm_start
    else:
        x = {primal: warm_start}
    sizes = problem.variable_sizes()
    derived = ("w", "u") if primal in x else ()   # determined by the primal one: never a start
    out = {}
    for name, value in x.items():
        if name not in sizes or name in derived:
            continue
        try:
            a = np.array(value, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise OptionError(f"{label}: {name} is not a numeric vector") from None
        if a.shape[0] != sizes[name] or not np.all(np.isfinite(a)):
            raise OptionError(f"{label}: {name} must be a finite vector of size {sizes[name]}, "
                              f"got shape {np.shape(value)}")
        out[name] = a
    if not out:
        raise OptionError(f"{label}: none of {sorted(x)} is a variable of this {problem.kind} problem "
                          f"({', '.join(sizes)})")
    return out


class Workspace:
    """What methods build and may reuse across solves of problems that share their matrices: pass
    one to every ``nsopt.solve(..., workspace=ws)`` of a loop (same W, new q).

    Entries (made and found by :meth:`Monitor.state`) are keyed by (method key, identity of the
    fields they depend on); an entry whose fields changed is rebuilt, so one workspace can serve a whole simulation whose W changes. Keeps NSGS'
    sweeper (CSC split, diagonal blocks, work arrays), the Newton systems (rho, the pattern of the
    Newton matrix; a new W of the same pattern keeps the last one's order and factorisation
    patterns), Lemke's small-LCP data. A solve with a workspace runs the very code of a solve
    without one (the same Solution); it only skips what the workspace already holds.
    Not thread-safe: one per loop.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> p = nsopt.FrictionContact(3, np.eye(3), [-1.0, 1.0, 0.0], [0.5])
    >>> ws = nsopt.Workspace()
    >>> for qn in (-1.0, -2.0, -3.0):                      # same W, new q: the re-solve of a loop
    ...     s = nsopt.solve(p.replace(q=[qn, 1.0, 0.0]), method="nsgs", workspace=ws)
    >>> print(s.status.value, s.r.round(6))
    solved [ 3. -1.  0.]
    """

    def __init__(self):
        self._store = {}

    def clear(self):
        self._store.clear()

    def __repr__(self):
        return f"Workspace({sorted(self._store)})"
