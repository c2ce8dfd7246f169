"""One result type for every method: :class:`Solution`, its :class:`Status`, and the :class:`Iterate`
handed to callbacks."""

from __future__ import annotations

import enum
import json
import math
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

import numpy as np

VARIABLES = ("z", "w", "v", "r", "u", "p")   # every variable name a problem kind may carry


class Status(str, enum.Enum):
    """Outcome of a solve, judged by nsopt's own error measure (never the backend's claim).

    A ``str`` enum: ``Status.SOLVED == "solved"``, and it prints as the plain word.

    ===================  ==========================================================================
    ``SOLVED``           error <= tol
    ``INACCURATE``       the method stopped on its own criterion but error > tol
    ``MAX_ITER``         iteration budget exhausted; the best iterate is returned
    ``STALLED``          no progress (fixed point stalled or cycled, line search failed)
    ``INFEASIBLE``       a certificate of infeasibility was found (e.g. Lemke's secondary ray)
    ``NUMERICAL_ERROR``  singular system, NaN, backend failure
    ``CALLBACK_STOP``    the user callback raised StopIteration
    ``TIME_LIMIT``       the wall-clock budget (``time_limit``) ran out; the best iterate is returned
    ===================  ==========================================================================

    Examples
    --------
    >>> import nsopt
    >>> s = nsopt.solve(nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0]), method="pgs", max_iter=3)
    >>> s.status, s.status == "max_iter", str(s.status)
    (<Status.MAX_ITER: 'max_iter'>, True, 'max_iter')
    """

    SOLVED = "solved"
    INACCURATE = "inaccurate"
    MAX_ITER = "max_iter"
    STALLED = "stalled"
    INFEASIBLE = "infeasible"
    NUMERICAL_ERROR = "numerical_error"
    CALLBACK_STOP = "callback_stop"
    TIME_LIMIT = "time_limit"

    def __str__(self) -> str:  # print as the plain word
        return self.value


# the statuses a solve's hot path compares with, as module constants (reading an Enum member,
# ``Status.SOLVED``, costs ~80 ns in Python 3.11: several per solve)
_SOLVED, _INFEASIBLE, _MAX_ITER = Status.SOLVED, Status.INFEASIBLE, Status.MAX_ITER


def judged(status: Status, error: float, tol: float) -> Status:
    """The status of a solve judged by the error measure (:meth:`nsopt.monitor.Monitor.solution`).

    Parameters
    ----------
    status : Status
        The method's own view of how it stopped.
    error : float
        The problem's error measure at the returned iterate.
    tol : float
        The requested tolerance.

    Returns
    -------
    Status
        NUMERICAL_ERROR when the error is not finite, SOLVED when it is <= tol, INACCURATE when the
        method claimed SOLVED above tol, else the method's own status.

    Examples
    --------
    >>> from nsopt.result import Status, judged
    >>> judged(Status.SOLVED, 1e-6, 1e-8), judged(Status.MAX_ITER, 1e-9, 1e-8)
    (<Status.INACCURATE: 'inaccurate'>, <Status.SOLVED: 'solved'>)
    """
    if not math.isfinite(error):
        return Status.NUMERICAL_ERROR
    if error <= tol:
        return Status.SOLVED
    return Status.INACCURATE if status is Status.SOLVED else status


class Iterate:
    """What a callback receives after each iteration.

    Attributes
    ----------
    nit : int
        The iteration just done.
    error : float
        The problem's error measure at this iterate.
    x : dict
        The current variables (copies); ``it.z``, ``it.r``, ``it.v`` ... read them by name.

    Examples
    --------
    >>> import nsopt
    >>> seen = []
    >>> s = nsopt.solve(nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0]), method="pgs",
    ...                 callback=lambda it: seen.append((it.nit, it.error)))
    >>> len(seen) == s.nit and seen[-1][1] <= 1e-8
    True
    """

    __slots__ = ("nit", "error", "x")

    def __init__(self, nit: int, error: float, x: dict):
        self.nit, self.error, self.x = nit, error, x

    def __getattr__(self, name):
        if name in VARIABLES:
            return self.x.get(name)
        raise AttributeError(name)

    def __repr__(self):
        return f"Iterate(nit={self.nit}, error={self.error:.3e}, variables={sorted(self.x)})"


def _plain(v):
    """True for values that pickle cheaply and mean the same in another process."""
    if v is None or isinstance(v, (bool, int, float, str, np.generic, np.ndarray)):
        return True
    if isinstance(v, (list, tuple)):
        return all(_plain(x) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _plain(x) for k, x in v.items())
    return False


def _option_repr(v):
    """Options as JSON-friendly values: arrays by shape, other objects by type name."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return f"array{list(v.shape)}"
    if isinstance(v, (list, tuple)) and len(v) <= 8 and all(isinstance(x, (bool, int, float, str)) for x in v):
        return list(v)
    if isinstance(v, dict):
        return {str(k): _option_repr(x) for k, x in v.items()}
    return type(v).__name__


@dataclass
class Solution:
    """The result of :func:`nsopt.solve`.

    Attributes
    ----------
    problem : Problem
        The problem solved.
    method : str
        The method used (``"auto:<method>"`` for ``method="auto"``).
    status : Status
        How it ended, judged by ``error`` against ``tol``; ``success`` is ``status is Status.SOLVED``.
    error : float
        The kind's Siconos error measure recomputed by nsopt on the returned vectors.
    tol : float
    nit : int
        Iterations of the method (sweeps, pivots, Newton steps, fixed-point steps).
    solve_time : float
        Seconds, including ``build_time``, the one-off set-up (factorisations, compiled programs) that
        the method could not interrupt.
    z, w, r, u, v, p : ndarray or None
        The problem's own variables, named as in its math: ``z, w`` (LCP, MLCP, Relay, AVI, Equality),
        ``r, u`` (friction contact: reaction, local velocity), ``v, r, u`` (global friction contact:
        global velocity, reaction, local velocity), ``r, u`` (generic mechanical: reaction and velocity
        of the stacked blocks), ``v, p`` (multiple impact: post-impact velocity, impulse per contact).
    history : list of float or None
        The error per iteration, with ``history=True``.
    message : str
    info : dict
        Method-specific data (e.g. Lemke's ``certificate``, ``bases``).
    trace : list
        For ``method="auto"``: ``(method, status, error, seconds, note)`` per attempt.
    options : dict
        The options the call was given.

    Examples
    --------
    >>> import nsopt
    >>> s = nsopt.solve(nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0]), history=True)
    >>> s.success, s.method, s.z.round(6).tolist()
    (True, 'auto:qp', [1.333333, 2.333333])
    >>> sorted(s.variables())
    ['w', 'z']
    >>> [attempt[:2] for attempt in s.trace]
    [('qp', 'solved')]
    """

    problem: Any
    method: str
    status: Status
    error: float
    tol: float
    nit: int = 0
    solve_time: float = 0.0
    z: np.ndarray | None = None
    w: np.ndarray | None = None
    r: np.ndarray | None = None
    u: np.ndarray | None = None
    v: np.ndarray | None = None
    p: np.ndarray | None = None
    history: list[float] | None = None
    message: str = ""
    info: dict = field(default_factory=dict)
    trace: list = field(default_factory=list)
    options: dict = field(default_factory=dict)
    build_time: float = 0.0

    @property
    def success(self) -> bool:
        """True when the error measure reached the tolerance."""
        return self.status is _SOLVED

    def variables(self) -> dict[str, np.ndarray]:
        """The problem's variables that this solution carries, by name."""
        return {k: getattr(self, k) for k in VARIABLES if getattr(self, k) is not None}

    def to_record(self) -> dict:
        """One flat row of plain values for a results table (studies, benchmarks)."""
        p = self.problem
        nc = getattr(p, "nc", None)
        return {
            "kind": getattr(p, "kind", type(p).__name__),
            "method": self.method,
            "status": self.status.value,
            "error": float(self.error),
            "tol": float(self.tol),
            "nit": int(self.nit),
            "solve_time": float(self.solve_time),
            "build_time": float(self.build_time),
            "size": int(getattr(p, "size", 0)),
            "nc": None if nc is None else int(nc),
            "message": self.message,
            "options": json.dumps({k: _option_repr(v) for k, v in self.options.items()}, sort_keys=True),
        }

    def __getattr__(self, name):
        """Only for names that are not attributes: an AttributeError that lists the names a Solution
        has and suggests the nearest (``sol.iterations`` -> ``nit``, scipy's name)."""
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(_unknown(name))

    def __getstate__(self):
        state = dict(self.__dict__)
        state["info"] = {k: v for k, v in self.info.items() if _plain(v)}
        state["options"] = {k: v for k, v in self.options.items() if _plain(v)}
        return state

    def __repr__(self) -> str:
        kind = getattr(self.problem, "kind", type(self.problem).__name__)
        return (f"Solution(kind={kind!r}, method={self.method!r}, status={self.status.value!r}, "
                f"error={self.error:.3e}, nit={self.nit}, solve_time={self.solve_time:.3g}s)")


# names other libraries (and nsopt 0.1) give to a Solution's attributes
_SYNONYMS = MappingProxyType({"iterations": "nit", "iteration": "nit", "iters": "nit", "iter": "nit", "n_iter": "nit",
             "niter": "nit", "num_iters": "nit", "x": "variables()", "fun": "error", "residual": "error",
             "time": "solve_time", "runtime": "solve_time", "found": "success", "converged": "success",
             "status_message": "message", "msg": "message", "primal": "variables()"})


def _unknown(name: str) -> str:
    import difflib

    names = sorted({f.name for f in fields(Solution)} | {"success", "variables()", "to_record()"})
    near = _SYNONYMS.get(name) or next(iter(difflib.get_close_matches(name, names, n=1, cutoff=0.6)), None)
    hint = f"; did you mean {near!r}?" if near else ""
    return f"'Solution' object has no attribute {name!r}{hint} (a Solution has: {', '.join(names)})"


def lazy_message(attribute: str = "_message", doc: str = "What the method says about its stop."):
    """A ``message`` property over the instance attribute ``attribute``, which holds a str or a
    (format, values) pair made into the str when it is first read (a solve's message is mostly
    never read: the Monitor, the Outcome and the Solution hand it over unformatted)."""
    def get(self) -> str:
        d = self.__dict__
        m = d.get(attribute, "")
        if type(m) is tuple:
            m = d[attribute] = m[0] % m[1]
        return m

    def set_(self, value):
        self.__dict__[attribute] = value

    return property(get, set_, doc=doc)


# ``message`` of a re-solve loop's Solutions is mostly never read: a plan may hand over (format, values)
# (``Solution._make``), and the text is made when it is asked for
Solution.message = lazy_message("message")
