"""The nsopt error hierarchy: every error nsopt raises on purpose derives from :class:`NsoptError`."""

from __future__ import annotations


class NsoptError(Exception):
    """Base class of all nsopt errors."""


class ProblemError(NsoptError, ValueError):
    """Invalid problem data: names the field and the fault (shape, finiteness, mu < 0, ...)."""

    def __init__(self, field: str, fault: str, problem: str | None = None):
        self.field, self.fault, self.problem = field, fault, problem
        where = f"{problem}.{field}" if problem else field
        super().__init__(f"{where}: {fault}")


class MethodNotFound(NsoptError, ValueError):
    """Unknown method, or a method that does not apply to the problem kind."""


class OptionError(NsoptError, TypeError):
    """Unknown or ill-typed solver option."""


class NotApplicable(NsoptError, ValueError):
    """The method exists for this kind but its assumptions fail on this instance
    (e.g. ``method="qp"`` on an LCP whose M is not symmetric positive semidefinite)."""


class SolverError(NsoptError, RuntimeError):
    """A backend (CVXPY, a conic solver, a factorisation) crashed; wraps the original error."""


class FormatError(NsoptError, ValueError):
    """A problem file is corrupt, truncated, or of an unknown kind; names the file and where it broke."""

    def __init__(self, path, message: str, *, line: int | None = None):
        self.path, self.line = str(path), line
        where = f"{path}" + (f", line {line}" if line is not None else "")
        super().__init__(f"{where}: {message}")


class NsoptWarning(UserWarning):
    """User-fixable conditions: a densified sparse matrix, an unchecked assumption, a singular system."""
