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
        return mon.outcome()
    while not mon.stopped:
        ...                                      # one iteration, in place on x
        mon.step({"z": x}, problem.error(x))
    return mon.outcome(message=...)

What a method builds and can reuse on the next solve of a problem with the same matrices (a CSC
split, work arrays, a Newton system) goes through ``mon.state(problem, key, make, on=("W",))``: kept in
the caller's :class:`Workspace` (``solve(..., workspace=ws)``) when there is one, else in the
problem's cache, which ``problem.replace(q=...)`` shares. One-off builds end with ``mon.built()``:
their time is ``Solution.build_time`` and does not count against ``time_limit``.

Compiled kernels run several iterations per call: ``n = mon.chunk()`` says how many (1 when a
callback wants every iteration; otherwise a number that keeps each call to a few tens of
milliseconds, so that ``time_limit`` and Ctrl-C act between calls), and ``mon.steps(errors, x)``
records them.
"""

from __future__ import annotations

import inspect
import math
import time

import numpy as np

from .exceptions import OptionError
from .registry import Outcome
from .result import Iterate, Status

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

    __slots__ = ("tol", "max_iter", "deadline", "history", "callback", "x0", "k", "best_x",
                 "best_err", "err", "status", "message", "build_time", "_chunk", "_det", "_t_chunk", "_t0",
                 "workspace")

    def __init__(self, *, tol, max_iter=None, time_limit=None, history=False, callback=None, x0=None,
                 workspace=None):
        self.tol = tol
        self.workspace = workspace
        self.max_iter = max_iter
        self._t0 = time.perf_counter()
        self.deadline = None if time_limit is None else self._t0 + time_limit
        self.history = [] if history else None
        self.callback = _callback(callback)
        self.x0 = x0
        self.k = 0
        self.best_x = None
        self.best_err = math.inf
        self.err = math.inf
        self.status = None
        self.message = ""
        self.build_time = 0.0
        self._chunk = 1
        self._det = 1
        self._t_chunk = None

    # -- set-up --------------------------------------------------------------------------------
    def budget(self, default: int) -> int:
        """``max_iter``, with the method's ``default`` when the caller gave None."""
        if self.max_iter is None:
            self.max_iter = int(default)
        return self.max_iter

    def start_vector(self, name: str, size: int) -> np.ndarray:
        """A float copy of the warm start's ``name`` (validated by ``solve``), else zeros."""
        if self.x0 is not None and self.x0.get(name) is not None:
            return np.array(self.x0[name], dtype=float)
        return np.zeros(size)

    def state(self, problem, key, make, on=None):
        """What a method built for ``problem`` and may reuse on the next solve: ``make()`` computed
        once per identity of the fields ``on`` (see :meth:`Problem.cached`), kept in the
        :class:`Workspace` when the caller gave one (it then survives new problem objects that share
        those fields, e.g. made by ``replace``), else in the problem's own cache."""
        if self.workspace is None:
            return problem.cached(key, make, on=on)
        return self.workspace.get(problem, key, make, on)

    def built(self):
        """Mark the end of a one-off build (factorisation, compiled program): its time is reported as
        ``Solution.build_time`` and the deadline moves by as much (a build is not interruptible)."""
        now = time.perf_counter()
        dt = now - self._t0 - self.build_time
        self.build_time += dt
        if self.deadline is not None:
            self.deadline += dt

    def expired(self) -> bool:
        """True when the time limit has run out (for inner loops that want to give up early)."""
        return self.deadline is not None and time.perf_counter() > self.deadline

    # -- the contract --------------------------------------------------------------------------
    def _keep(self, x, err):
        self.err = err
        if err < self.best_err or self.best_x is None:
            self.best_err = err
            self.best_x = {k: np.array(v, dtype=float) for k, v in x.items()}

    def _judge(self, err):
        if not math.isfinite(err):
            return self.stop(Status.NUMERICAL_ERROR, f"non-finite error after {self.k} iteration(s)")
        if err <= self.tol:
            return self.stop(Status.SOLVED, f"error {err:.3g} <= tol after {self.k} iteration(s)")
        if self.max_iter is not None and self.k >= self.max_iter:
            return self.stop(Status.MAX_ITER, f"no convergence in {self.k} iteration(s) (best error "
                                              f"{self.best_err:.3g})")
        if self.deadline is not None and time.perf_counter() > self.deadline:
            return self.stop(Status.TIME_LIMIT, f"time limit reached after {self.k} iteration(s) "
                                                f"(best error {self.best_err:.3g})")
        return None

    def start(self, x: dict, err: float):
        """Record the starting point (iteration 0). Returns the status when it already ends the
        solve (solved, non-finite, ``max_iter == 0``, no time left), else None."""
        err = float(err)
        if self.history is not None:
            self.history.append(err)
        self._keep(x, err)
        return self._judge(err)

    def step(self, x: dict, err: float):
        """Record iteration ``k + 1`` with its iterate ``x`` (dict of the problem's variables) and
        error. Returns the status when the solve must stop, else None."""
        self.k += 1
        err = float(err)
        if self.history is not None:
            self.history.append(err)
        self._keep(x, err)
        if self.callback is not None:
            try:
                self.callback(Iterate(self.k, err, {k: np.array(v, dtype=float) for k, v in x.items()}))
            except StopIteration:
                return self.stop(Status.CALLBACK_STOP, f"stopped by the callback after {self.k} iteration(s)")
        return self._judge(err)

    def chunk(self, per_iteration_errors: bool = True, work: int | None = None) -> int:
        """How many iterations a compiled kernel should run before returning to Python.

        ``per_iteration_errors=False``: the kernel only knows the error at the end of its chunk
        (:meth:`advance`); then a requested history also asks for one iteration per chunk, and the
        chunk sizes must not depend on timing, or the iteration at which the solve stops (and so its
        result) would: give ``work``, the cost of one iteration in flops (e.g. nnz), and the sizes
        double from 1 up to about ``WORK_PER_CHUNK / work``, a schedule fixed by the problem alone."""
        if self.callback is not None or (self.history is not None and not per_iteration_errors):
            return 1
        left = math.inf if self.max_iter is None else self.max_iter - self.k
        if work is not None:
            size = min(self._det, max(1, int(WORK_PER_CHUNK // max(int(work), 1))))
            self._det = 2 * size
            return int(max(1, min(size, left)))
        self._t_chunk = time.perf_counter()
        return int(max(1, min(self._chunk, left)))

    def steps(self, errors, x: dict, best=None):
        """Record a chunk of ``len(errors)`` iterations run by a kernel (``x`` at the chunk's end;
        ``best = (x_best, err_best)``: the best iterate the kernel saw inside the chunk, if it kept
        one). A chunk of one iteration is :meth:`step` (the callback sees it).
        Returns the status when the solve must stop, else None."""
        n = len(errors)
        if n == 0:
            return None
        if self._t_chunk is not None:   # size the next chunk to about CHUNK_SECONDS (at most doubling)
            dt = time.perf_counter() - self._t_chunk
            per = dt / n
            self._chunk = max(1, min(2 * n, int(CHUNK_SECONDS / per) if per > 0 else 2 * n))
            self._t_chunk = None
        if n == 1:   # the iterate of a one-iteration chunk is its best
            return self.step(x, errors[0])
        if best is not None and best[1] < self.best_err:
            self.best_err = float(best[1])
            self.best_x = {k: np.array(v, dtype=float) for k, v in best[0].items()}
        self.k += n
        if self.history is not None:
            self.history.extend(float(e) for e in errors)
        err = float(errors[-1])
        self._keep(x, err)
        return self._judge(err)

    def advance(self, n: int, x: dict, err: float):
        """Record a chunk of ``n`` iterations of which only the last error is known (see
        :meth:`chunk`). Returns the status when the solve must stop, else None."""
        return self.steps([err] * n, x)

    def stop(self, status: Status, message: str = ""):
        """A method's own reason to stop (stall, ray, line-search failure), or the contract's."""
        self.status = status
        if message:
            self.message = message
        return status

    @property
    def stopped(self) -> bool:
        return self.status is not None

    def outcome(self, message: str = "", info: dict | None = None, x: dict | None = None, status=None):
        """The :class:`~nsopt.registry.Outcome` of the solve: the best iterate (or ``x``), the status
        (MAX_ITER when the loop ended without one), iterations, history and message."""
        st = status or self.status or Status.MAX_ITER
        msg = message or self.message
        return Outcome(x=x if x is not None else (self.best_x or {}), status=st, nit=self.k,
                       history=self.history, message=msg, info=info or {}, build_time=self.build_time)


class Workspace:
    """What methods build and may reuse across solves of problems that share their matrices: pass
    one to every ``nsopt.solve(..., workspace=ws)`` of a loop (same W, new q).

    Entries are keyed by (method key, identity of the fields they depend on); an entry whose fields
    changed is rebuilt. Keeps NSGS' CSC split, work arrays and contact order, and the Newton
    system (rho, sparsity pattern of the Newton matrix). Not thread-safe: one per loop.

    It also keeps one re-solve *plan* per (method, tol, max_iter, options) of the calls it was given
    (methods that have one, see :func:`nsopt.registry.plan`): after the first full solve, the next
    calls with the same method and options and neither ``history``, ``callback`` nor
    ``time_limit`` skip the option checks, the registry and the monitor and run the method's whole
    loop in one compiled call where the method has one (``nsgs`` on fc2d/fc3d, ``nsn-ac`` and
    ``nsn-fb`` on a small dense W, ``lemke`` on a small LCP: iteration 0, then the pivots when it
    fails), with the same Solution as the full path (u, w and the error as the problem computes
    them: its ordered products, :mod:`nsopt.problems._products`). A new W is fine (the plan rebuilds what
    depends on it), so one workspace can serve a whole simulation.
    """

    def __init__(self):
        self._store = {}
        self._plans = {}     # (method, tol, max_iter, options) -> the method's re-solve plan (nsopt.solve)

    def get(self, problem, key, make, on=None):
        fields = problem._fields if on is None else on
        deps = tuple(getattr(problem, f) for f in fields)
        hit = self._store.get(key)
        if hit is not None and len(hit[0]) == len(deps) and all(a is b for a, b in zip(hit[0], deps)):
            return hit[1]
        value = make()
        self._store[key] = (deps, value)
        return value

    def clear(self):
        self._store.clear()
        self._plans.clear()

    def __repr__(self):
        return f"Workspace({sorted(self._store)}, plans={[k[0] for k in self._plans]})"
