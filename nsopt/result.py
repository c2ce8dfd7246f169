"""One result type for every method: :class:`Solution` and its :class:`Status`."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class Status(str, enum.Enum):
    """Outcome of a solve, judged by nsopt's own error measure (never the backend's claim).

    SOLVED             error <= tol
    INACCURATE         the method stopped on its own criterion but error > tol
    MAX_ITER           iteration budget exhausted; the best iterate is returned
    STALLED            no progress (fixed point stalled or cycled, line search failed)
    INFEASIBLE         a certificate of infeasibility was found (e.g. Lemke's secondary ray)
    NUMERICAL_ERROR    singular system, NaN, backend failure
    CALLBACK_STOP      the user callback raised StopIteration
    TIME_LIMIT         the wall-clock budget ran out
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


@dataclass
class Solution:
    """The result of :func:`nsopt.solve`.

    The problem's own variables are set for its kind, named as in its math:
    ``z, w`` (LCP, MLCP, Relay, AVI, Equality), ``r, u`` (friction contact: reaction, local velocity),
    ``v, r, u`` (global friction contact: global velocity, reaction, local velocity),
    ``r, u`` (generic mechanical: reaction and velocity of the stacked blocks).
    ``error`` is the kind's Siconos error measure recomputed by nsopt on those vectors.
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
    history: list[float] | None = None
    message: str = ""
    info: dict = field(default_factory=dict)
    trace: list = field(default_factory=list)

    @property
    def success(self) -> bool:
        """True when the error measure reached the tolerance."""
        return self.status is Status.SOLVED

    def variables(self) -> dict[str, np.ndarray]:
        """The problem's variables that this solution carries, by name."""
        return {k: getattr(self, k) for k in ("z", "w", "v", "r", "u") if getattr(self, k) is not None}

    def __repr__(self) -> str:
        kind = getattr(self.problem, "kind", type(self.problem).__name__)
        return (f"Solution(kind={kind!r}, method={self.method!r}, status={self.status.value!r}, "
                f"error={self.error:.3e}, nit={self.nit}, solve_time={self.solve_time:.3g}s)")
