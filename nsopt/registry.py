"""The one registry of methods, keyed by (problem kind, method name), filled by :func:`register`."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .exceptions import MethodNotFound
from .result import Solution, Status, judged


@dataclass
class Outcome:
    """What a method returns to :func:`nsopt.solve`: its iterate and how it stopped.

    ``x`` maps the problem's variable names (``z``, ``r``, ``v``, ...) to vectors; ``status`` is the
    method's own view (SOLVED when its criterion was met), which ``solve`` re-judges by the error
    measure. ``nit`` counts the method's main iterations (sweeps, pivots, Newton steps).
    ``complete=True`` says that ``x`` holds every variable of the problem and ``error`` is the
    problem's own measure of them, computed by the same formula (``solve`` then does not recompute).
    """

    x: dict
    status: Status = Status.SOLVED
    nit: int = 0
    history: list | None = None
    message: str = ""
    info: dict = field(default_factory=dict)
    build_time: float = 0.0
    error: float | None = None
    complete: bool = False

    def solution(self, problem, tol: float, method: str, t0: float, options: dict) -> Solution:
        """The :class:`Solution` of this outcome (``nsopt.solve`` and the re-solve plans): every
        variable of the problem and its error measure (recomputed unless ``complete``), the status
        judged by that error (:func:`nsopt.result.judged`; a backend's infeasibility certificate is
        not overruled). ``solve_time``: from ``t0`` (``time.perf_counter()`` when the method
        started) to the end of this judgement, which is part of the solve."""
        if self.complete and self.error is not None:
            xs, err = self.x, float(self.error)
        else:
            xs = problem.complete(self.x)
            err = float(problem.error_of(xs))
        if self.status is Status.INFEASIBLE and self.info.get("certificate"):
            status = Status.INFEASIBLE
        else:
            status = judged(self.status, err, tol)
        return Solution._make(problem, method, status, err, tol, self.nit, time.perf_counter() - t0, xs,
                              self.history, self.message, self.info, options, self.build_time)


@dataclass(frozen=True)
class MethodInfo:
    kind: str
    name: str
    func: Callable
    summary: str
    options: tuple[str, ...]          # the method's own options (keyword-only parameters)
    applies: Callable | None = None   # problem -> None or a reason why not (cheap structural check)
    plan: Callable | None = None      # (problem, tol, max_iter, options, workspace, info=) -> Plan or None


_REGISTRY: dict[tuple[str, str], MethodInfo] = {}
COMMON = ("tol", "max_iter", "time_limit", "history", "callback", "warm_start", "workspace")


def register(kinds, name: str, summary: str, *, applies: Callable | None = None):
    """Decorator: register ``func(problem, mon, **options) -> Outcome`` for one or more kinds.

    ``mon`` is the :class:`~nsopt.monitor.Monitor` that :func:`nsopt.solve` built from the common
    options (``tol, max_iter, time_limit, history, callback, warm_start``); the method's own options
    are its keyword-only parameters, whose defaults are the method's defaults. ``applies(problem)``
    returns None or the reason why the method does not apply to an instance (checked before solving).
    ``kinds`` is a kind or a tuple of kinds (``"lcp"``, ``"fc3d"``, ...).
    """
    if isinstance(kinds, str):
        kinds = (kinds,)

    def deco(func):
        sig = inspect.signature(func)
        opts = tuple(p.name for p in sig.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY)
        clash = [o for o in opts if o in COMMON]
        if clash:
            raise TypeError(f"method {name!r}: {clash} are common options, handled by the monitor")
        for k in kinds:
            if (k, name) in _REGISTRY:
                raise ValueError(f"method {name!r} registered twice for kind {k!r}")
            _REGISTRY[(k, name)] = MethodInfo(k, name, func, summary, opts, applies)
        return func

    return deco


def plan(kinds, name: str):
    """Decorator: register the re-solve plan of the method ``name`` for ``kinds`` (already registered).

    ``make(problem, tol, max_iter, options, workspace, info=method_info)`` is called by :func:`nsopt.solve` after a full
    solve with a :class:`~nsopt.Workspace` and none of ``history``, ``callback``, ``time_limit``; it
    returns None or a callable ``plan(problem, warm_start, options) -> Solution | None`` that
    :func:`nsopt.solve` calls first on the next solves with the same method and options (the lean
    path: no option checks, no registry look-up, no monitor). The plan must return exactly the
    Solution the full path would (status, error, iterations, vectors, message), or None to hand
    the call back to the full path (a case it does not cover: a changed matrix, a warm start to
    validate, ...). A method without a plan of its own, or whose ``make`` returns None, gets a
    generic one (``nsopt.solve``: the method's function called directly, for a problem with the
    same fields but q)."""
    if isinstance(kinds, str):
        kinds = (kinds,)

    def deco(make):
        for k in kinds:
            info = _REGISTRY[(k, name)]
            _REGISTRY[(k, name)] = MethodInfo(info.kind, info.name, info.func, info.summary, info.options,
                                              info.applies, make)
        return make

    return deco


def has(kind: str, name: str) -> bool:
    return (kind, name) in _REGISTRY


def get(kind: str, name: str) -> MethodInfo:
    try:
        return _REGISTRY[(kind, name)]
    except KeyError:
        valid = sorted(n for (k, n) in _REGISTRY if k == kind)
        others = sorted({k for (k, n) in _REGISTRY if n == name})
        hint = f" ({name!r} exists for: {', '.join(others)})" if others else ""
        raise MethodNotFound(f"unknown method {name!r} for a {kind} problem{hint}; "
                             f"valid methods: {', '.join(['auto'] + valid)}") from None


def for_kind(kind: str) -> list[MethodInfo]:
    return [m for (k, _), m in sorted(_REGISTRY.items()) if k == kind]


def kinds() -> list[str]:
    return sorted({k for k, _ in _REGISTRY})
