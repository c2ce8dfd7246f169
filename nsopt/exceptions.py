"""The nsopt error hierarchy: every error nsopt raises on purpose derives from :class:`NsoptError`."""

from __future__ import annotations


class NsoptError(Exception):
    """Base class of all nsopt errors.

    Examples
    --------
    >>> import nsopt
    >>> issubclass(nsopt.ProblemError, nsopt.NsoptError), issubclass(nsopt.ProblemError, ValueError)
    (True, True)
    """


class ProblemError(NsoptError, ValueError):
    """Invalid problem data: names the field and the fault (shape, finiteness, mu < 0, ...).

    Parameters
    ----------
    field : str
        The field at fault (``"M"``, ``"mu"``, ``"blocks[2].size"``).
    fault : str
        What is wrong with it.
    problem : str, optional
        The problem class, prefixed to the message.

    Examples
    --------
    >>> import nsopt
    >>> try:
    ...     nsopt.FrictionContact(3, [[1.0, 0.0, 0.0]] * 3, [0.0] * 3, mu=-1.0)
    ... except nsopt.ProblemError as e:
    ...     print(e.field, "|", e)
    mu | FrictionContact.mu: friction coefficient must be >= 0, got mu[0] = -1.0
    """

    def __init__(self, field: str, fault: str, problem: str | None = None):
        self.field, self.fault, self.problem = field, fault, problem
        where = f"{problem}.{field}" if problem else field
        super().__init__(f"{where}: {fault}")


class MethodNotFound(NsoptError, ValueError):
    """Unknown method, or a method that does not apply to the problem kind; lists the valid ones.

    Examples
    --------
    >>> import nsopt
    >>> try:
    ...     nsopt.solve(nsopt.LCP([[1.0]], [-1.0]), method="nsgs")
    ... except nsopt.MethodNotFound as e:
    ...     print(e)
    unknown method 'nsgs' for a lcp problem ('nsgs' exists for: ...); valid methods: auto, enum, lemke, ...
    """


class OptionError(NsoptError, TypeError):
    """Unknown or ill-typed solver option.

    Examples
    --------
    >>> import nsopt
    >>> try:
    ...     nsopt.solve(nsopt.LCP([[1.0]], [-1.0]), method="lemke", omega=1.2)
    ... except nsopt.OptionError as e:
    ...     print(type(e).__name__)
    OptionError
    """


class NotApplicable(NsoptError, ValueError):
    """The method exists for this kind but its assumptions fail on this instance.

    For example ``method="qp"`` on an LCP whose M is not symmetric positive semidefinite; ``auto``
    skips such a method and records why in ``Solution.trace``.

    Examples
    --------
    >>> import nsopt
    >>> try:
    ...     nsopt.solve(nsopt.LCP([[1.0, 2.0], [0.0, 1.0]], [-1.0, -1.0]), method="qp")
    ... except nsopt.NotApplicable as e:
    ...     print("not applicable:", str(e)[:45])
    not applicable: method 'qp' does not apply to this lcp proble
    """


class NotDifferentiable(NotApplicable):
    """A derivative that does not exist or is not determined where it was asked: the solution is not
    unique there and the requested variable moves along the solution set, or the direction leaves
    the solution's piece (``nsopt.sensitivity``; the message names the free rows or contacts).

    Examples
    --------
    >>> import nsopt
    >>> p = nsopt.LCP([[1.0, 1.0], [1.0, 1.0]], [-1.0, -1.0])      # z1 + z2 = 1: a segment
    >>> s = nsopt.sensitivity(p, {"z": [0.5, 0.5]})
    >>> try:
    ...     s.jvp(q=[-1.0, -1.0])
    ... except nsopt.NotDifferentiable as e:
    ...     print(str(e)[:49])
    z is not unique here: it moves along the solution
    """


class SolverError(NsoptError, RuntimeError):
    """A backend (CVXPY, a conic solver, a factorisation) crashed; wraps the original error."""


class FormatError(NsoptError, ValueError):
    r"""A problem file is corrupt, truncated, or of an unknown kind; names the file and where it broke.

    Parameters
    ----------
    path : str or path-like
        The file.
    message : str
        What is wrong.
    line : int, optional
        The line where reading broke (text formats).

    Examples
    --------
    >>> import os, tempfile, nsopt
    >>> path = os.path.join(tempfile.mkdtemp(), "broken.dat")
    >>> with open(path, "w") as f:
    ...     _ = f.write("3\n1 2\n")
    >>> try:
    ...     nsopt.io.load(path)
    ... except nsopt.FormatError as e:
    ...     print(e.path == path, e.line)
    True 1
    """

    def __init__(self, path, message: str, *, line: int | None = None):
        self.path, self.line = str(path), line
        where = f"{path}" + (f", line {line}" if line is not None else "")
        super().__init__(f"{where}: {message}")


class NsoptWarning(UserWarning):
    """User-fixable conditions: a densified sparse matrix, an unchecked assumption, a singular system.

    Non-convergence is never a warning (it is a :class:`~nsopt.Status`).
    """


class ModelingError(NsoptError, ValueError):
    """Invalid modeling data (nsopt.modeling): names the object, the field and the fault, e.g.
    ``LagrangianLinearTIDS 'ball'.q0: has non-finite entries``."""

    def __init__(self, owner: str, field: str, fault: str):
        self.owner, self.field, self.fault = owner, field, fault
        super().__init__(f"{owner}.{field}: {fault}")


class PluginError(ModelingError):
    """A plug-in (user callable) of a system or relation returned the wrong shape or non-finite values,
    or raised; names the relation, the plug-in and the expected shape."""


class StepFailed(NsoptError, RuntimeError):
    """A time step's one-step problem was not solved and the simulation was asked to stop
    (``on_failure="raise"``); carries ``step``, ``time`` and the ``solution``."""

    def __init__(self, message: str, *, step: int, time: float, solution=None):
        self.step, self.time, self.solution = step, time, solution
        super().__init__(message)


class OutputError(NsoptError, OSError):
    """A file or folder nsopt was asked to write cannot be written as asked: it exists and
    ``overwrite`` is False, it is a folder where a file is expected (or the reverse), its folder is
    missing or not writable. An OSError with ``errno`` and ``filename`` set, so ``except OSError``
    and ``except FileExistsError``-style checks on ``errno`` keep working; raised before anything
    is written."""

    def __init__(self, errno_: int, message: str, path):
        super().__init__(errno_, message, str(path))


class MissingExtra(NsoptError, ImportError):
    """A part of nsopt was used whose optional dependencies are not installed; names the extra to
    install (``pip install "nsopt[mechanics]"``), the missing modules and the part. Raised where the
    part is first used (its import, or the call that needs it), never from deep inside a run.

    Examples
    --------
    >>> import nsopt
    >>> e = nsopt.MissingExtra("mechanics", ["coal"], "nsopt.mechanics")
    >>> print(e)
    nsopt.mechanics needs coal, which is not installed: pip install "nsopt[mechanics]"
    >>> isinstance(e, ImportError), e.extra, e.missing
    (True, 'mechanics', ('coal',))
    """

    def __init__(self, extra: str, missing, feature: str):
        self.extra, self.missing, self.feature = extra, tuple(missing), feature
        names = ", ".join(self.missing)
        verb = "is" if len(self.missing) == 1 else "are"
        super().__init__(f'{feature} needs {names}, which {verb} not installed: pip install "nsopt[{extra}]"',
                         name=self.missing[0] if self.missing else None)
