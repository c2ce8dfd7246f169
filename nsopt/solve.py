"""``nsopt.solve``: the one entry point (every solve, fresh or re-solve, and each attempt of the ``auto``
policy, runs its one body); ``nsopt.methods``: what applies to a problem."""

from __future__ import annotations

import math

import numpy as np

from . import registry
from .exceptions import MethodNotFound, NotApplicable, OptionError
from .monitor import Monitor, Workspace, check_max_iter, check_time_limit, check_tol, warm_start_of
from .problems._base import Problem
from .registry import ALIASES, Outcome
from .result import Solution, Status

__all__ = ["MethodNotFound", "check_max_iter", "check_time_limit", "check_tol", "methods", "solve",
           "warm_start_of"]

_METHODS = registry._REGISTRY      # (kind, method) -> MethodInfo, filled by nsopt.solvers


def _kind(problem) -> str:
    if not isinstance(problem, Problem):
        raise TypeError(f"nsopt.solve needs an nsopt problem (nsopt.problems.*), got {type(problem).__name__}")
    return problem.kind


def _fill():
    from . import solvers  # noqa: F401  (fills the registry)


def methods(problem) -> dict[str, str]:
    """The methods that apply to ``problem`` (or to a kind given as a string), each with one line.

    Parameters
    ----------
    problem : nsopt.Problem or str
        A problem (methods that do not apply to it, e.g. ``qp`` for a nonsymmetric M, are left
        out), or a kind (``"lcp"``, ``"fc3d"``, ...).

    Returns
    -------
    dict
        ``{method name: one-line description}``, ``"auto"`` first.

    Examples
    --------
    >>> import nsopt
    >>> sorted(nsopt.methods("lcp"))
    ['auto', 'enum', 'lemke', 'newton-fb', 'pgs', 'psor', 'qp']
    >>> "nsn-ac" in nsopt.methods("fc3d")
    True
    """
    kind = problem if isinstance(problem, str) else _kind(problem)
    _fill()
    out = {"auto": "the documented policy (nsopt.policy): tries methods in order, records the path taken"}
    for m in registry.for_kind(kind):
        if not isinstance(problem, str) and m.applies is not None and m.applies(problem):
            continue
        out[m.name] = m.summary
    return out


def solve(problem, method: str = "auto", tol: float = 1e-8, max_iter: int | None = None, *,
          time_limit: float | None = None, history: bool = False, callback=None, warm_start=None,
          workspace=None, select=None, **options) -> Solution:
    """Solve a one-step nonsmooth problem.

    Parameters
    ----------
    problem : an ``nsopt.problems`` object (LCP, MLCP, Relay, Equality, AVI, FrictionContact,
        GlobalFrictionContact, GenericMechanical, ...).
    method : a name from :func:`methods`, or ``"auto"`` (the policy of :mod:`nsopt.policy`).
    tol : target of the problem's Siconos error measure; ``Solution.status`` is SOLVED iff error <= tol.
    max_iter : the method's iteration budget (None: the method's default).
    time_limit : wall-clock budget in seconds, >= 0 (None or inf: none; 0: the starting point is
        judged, then ``TIME_LIMIT``); ``Status.TIME_LIMIT`` with the best iterate when it runs out.
        One-off builds that cannot be interrupted are not counted and are reported as
        ``Solution.build_time``. The campaigns' ``timeout`` follows the same rule.
    history : record the error after every iteration (``history[0]``: the starting point).
    callback : ``callback(it)`` after every iteration with an :class:`nsopt.Iterate`; raising
        ``StopIteration`` stops with ``CALLBACK_STOP`` (``callback(k, x, err)`` is accepted too).
    warm_start : where to start: a previous :class:`Solution`, a dict of the problem's variables, or
        an array of its primal variable (``z`` or ``r``). ``z0``/``r0``/``v0`` are accepted as aliases.
    workspace : an :class:`nsopt.Workspace` kept across the solves of a loop (same matrices, new
        q): the method reuses what it built there (splits, work arrays, Newton pattern, compiled
        state); the solve runs the same code as without it and gives the same Solution. Methods
        that build nothing reusable ignore it. Not used by ``method="auto"``.
    select : None (the method's solution), or a rule that chooses among the solutions when there
        are several (``nsopt.sensitivity.select.SELECT_RULES``): ``"min-norm"``, the solution of
        least norm of z (or r), through the convex view where the solution set is convex;
        ``Solution.info["select"]`` says what was done and whether it is guaranteed.
    **options : the method's own options (see ``help`` of the method, or :func:`methods`); an
        unknown option raises :class:`OptionError`.

    Returns
    -------
    Solution
        Never raises on non-convergence: the best iterate comes back with a status.

    Examples
    --------
    >>> import nsopt
    >>> p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    >>> s = nsopt.solve(p, method="lemke")
    >>> print(s.status.value, s.z.round(6), s.error <= 1e-8)
    solved [1.333333 2.333333] True
    >>> s = nsopt.solve(p, method="pgs", max_iter=3)            # not converged: a status
    >>> s.status.value, s.nit
    ('max_iter', 3)
    >>> nsopt.solve(p, method="nsgs")
    Traceback (most recent call last):
    ...
    nsopt.exceptions.MethodNotFound: ...
    """
    if select is not None:   # which solution (issue 21): the method's, then the rule's choice
        from .sensitivity.select import check_select, select as select_solution

        check_select(select)
        return select_solution(solve(problem, method, tol, max_iter, time_limit=time_limit, history=history,
                                     callback=callback, warm_start=warm_start, workspace=workspace, **options),
                               select)
    try:
        info = _METHODS.get((problem.kind, method))
    except (AttributeError, TypeError):      # not a problem, or a method that is not a name
        info = None
    if info is None:
        kind = _kind(problem)
        _fill()
        if method == "auto":
            from .policy import solve_auto

            options = registry.renamed(options, {o for m in registry.for_kind(kind) for o in m.options},
                                       f"method 'auto' on {kind}")

            return solve_auto(problem, kind, check_tol(tol), check_max_iter(max_iter), options, solve,
                              time_limit=check_time_limit(time_limit), history=history, callback=callback,
                              x0=warm_start_of(problem, warm_start))
        if not isinstance(method, str):
            raise MethodNotFound(f"method must be a name (str), got {type(method).__name__}")
        info = registry.get(kind, method)
    if type(tol) is not float or not 0.0 < tol < math.inf:
        tol = check_tol(tol)
    if max_iter is not None and (type(max_iter) is not int or max_iter < 0):
        max_iter = check_max_iter(max_iter)
    if time_limit is not None:
        time_limit = check_time_limit(time_limit)
    if workspace is not None and type(workspace) is not Workspace and not isinstance(workspace, Workspace):
        raise OptionError(f"workspace must be an nsopt.Workspace or None, got {type(workspace).__name__}")
    x0 = None if warm_start is None else warm_start_of(problem, warm_start)
    if info.applies is not None:
        why = info.applies(problem)
        if why:
            raise NotApplicable(f"method {method!r} does not apply to this {info.kind} problem: {why}")
    # the method under the contract: a Monitor built from the common options (checked above), the
    # method's own options checked once per distinct values (MethodInfo.call_options)
    given = options or None
    if given is not None and not options.keys().isdisjoint(ALIASES):
        options, x0 = _pop_aliases(problem, info, options, x0)
    # (bare: the checked defaults are the defaults, which the method takes from its signature)
    opts = None if info.bare and not options else info.call_options(options)
    mon = Monitor(tol, max_iter, time_limit, history, callback, x0, workspace, problem, info.name, given)
    if problem.size == 0:       # every method: the trivial solution of an empty problem
        return _trivial(problem, mon, None)
    if (why := problem.infeasibility()) is not None:    # every method: a certified empty problem
        return _trivial(problem, mon, why)
    out = info.func(problem, mon) if opts is None else info.func(problem, mon, **opts)
    if type(out) is Solution:      # (mon.solution(...): the common case)
        return out
    return mon.finish(out)


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


def _trivial(problem, mon, why):
    """Every method's Solution of an empty problem (the trivial one), or of a problem certified empty
    (``why``, :meth:`Problem.infeasibility`)."""
    if why is None:
        out = Outcome({problem.primal: np.zeros(0)}, nit=0, history=None if mon.history is None else [0.0],
                      message="empty problem")
    else:
        x = {problem.primal: np.zeros(problem.size)}
        out = Outcome(x, Status.INFEASIBLE, 0, message=why, info={"certificate": "problem"},
                      history=None if mon.history is None else [float(problem.error_of(problem.complete(x)))])
    return mon.finish(out)


# nsopt.solve is this module, called as its function (nsopt.solve(problem, ...)); nsopt.solve.methods
# and the module's other names stay reachable
from ._callable import make_callable  # noqa: E402

make_callable(__name__, solve)
