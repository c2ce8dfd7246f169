"""``nsopt.solve``: the one entry point; ``nsopt.methods``: what applies to a problem."""

from __future__ import annotations

import time

import numpy as np

from . import registry
from .exceptions import MethodNotFound, NotApplicable, OptionError
from .result import Solution, Status

_PRIMAL = {"lcp": ("z",), "mlcp": ("z",), "relay": ("z",), "equality": ("z",), "avi": ("z",),
           "fc2d": ("r",), "fc3d": ("r",), "gfc2d": ("r", "v"), "gfc3d": ("r", "v"), "gmp": ("r",)}


def _kind(problem) -> str:
    k = getattr(problem, "kind", None)
    if not k or k not in _PRIMAL:
        raise TypeError(f"nsopt.solve needs an nsopt problem (nsopt.problems.*), got {type(problem).__name__}")
    return k


def methods(problem) -> dict[str, str]:
    """The methods that apply to ``problem`` (or to a kind given as a string), each with one line."""
    kind = problem if isinstance(problem, str) else _kind(problem)
    from . import solvers  # noqa: F401  (fills the registry)

    out = {"auto": "the documented policy (nsopt.policy): tries methods in order, records the path taken"}
    for m in registry.for_kind(kind):
        if not isinstance(problem, str) and m.applies is not None and m.applies(problem):
            continue
        out[m.name] = m.summary
    return out


def _variables(problem, kind, x):
    """Complete the problem's own variables from the primal ones (w = Mz + q, u = Wr + q, ...)."""
    if kind in ("lcp", "mlcp", "relay", "equality", "avi"):
        z = x["z"]
        return {"z": z, "w": x.get("w") if x.get("w") is not None else problem.w(z)}
    if kind in ("fc2d", "fc3d", "gmp"):
        r = x["r"]
        return {"r": r, "u": problem.u(r)}
    r = x["r"]
    v = x.get("v")
    if v is None:
        v = problem.v(r)
    return {"r": r, "v": v, "u": problem.u(v)}


def _error(problem, kind, xs):
    if kind in ("gfc2d", "gfc3d"):
        return problem.error(xs["r"], xs["v"])
    return problem.error(xs[_PRIMAL[kind][0]])


def run_method(problem, kind, info, tol, max_iter, options):
    """Call one registered method and judge its iterate by the problem's error measure."""
    bad = [k for k in options if k not in info.options]
    if bad:
        valid = [o for o in info.options if o not in registry.COMMON]
        raise OptionError(f"unknown option(s) {bad} for method {info.name!r} on {kind}; "
                          f"valid options: {valid + list(registry.COMMON)}")
    t0 = time.perf_counter()
    out = info.func(problem, tol=tol, max_iter=max_iter, **options)
    elapsed = time.perf_counter() - t0
    xs = _variables(problem, kind, out.x)
    err = _error(problem, kind, xs)
    if not np.isfinite(err):
        status = Status.NUMERICAL_ERROR
    elif err <= tol:
        status = Status.SOLVED
    elif out.status is Status.SOLVED:
        status = Status.INACCURATE
    else:
        status = out.status
    return Solution(problem=problem, method=info.name, status=status, error=float(err), tol=tol,
                    nit=out.nit, solve_time=elapsed, history=out.history, message=out.message,
                    info=out.info, **xs)


def solve(problem, method: str = "auto", tol: float = 1e-8, max_iter: int | None = None,
          **options) -> Solution:
    """Solve a one-step nonsmooth problem.

    Parameters
    ----------
    problem : an ``nsopt.problems`` object (LCP, MLCP, Relay, Equality, AVI, FrictionContact,
        GlobalFrictionContact, GenericMechanical).
    method : a name from :func:`methods`, or ``"auto"`` (the policy of :mod:`nsopt.policy`).
    tol : target of the problem's Siconos error measure; ``Solution.status`` is SOLVED iff error <= tol.
    max_iter : the method's iteration budget (None: the method's default).
    **options : method options (``history=True`` records the error per iteration, ``callback``,
        ``z0``/``r0``, ``omega``, ``solver`` ...); an unknown option raises :class:`OptionError`.

    Returns
    -------
    Solution
        Never raises on non-convergence: the best iterate comes back with a status.
    """
    kind = _kind(problem)
    from . import solvers  # noqa: F401  (fills the registry)

    if not (isinstance(tol, (int, float)) and tol > 0):
        raise OptionError(f"tol must be a positive number, got {tol!r}")
    if max_iter is not None and (not isinstance(max_iter, (int, np.integer)) or max_iter < 0):
        raise OptionError(f"max_iter must be a non-negative integer or None, got {max_iter!r}")
    if method == "auto":
        from .policy import solve_auto

        return solve_auto(problem, kind, tol, max_iter, options)
    info = registry.get(kind, method)
    if info.applies is not None:
        why = info.applies(problem)
        if why:
            raise NotApplicable(f"method {method!r} does not apply to this {kind} problem: {why}")
    return run_method(problem, kind, info, tol, max_iter, options)


__all__ = ["solve", "methods", "MethodNotFound"]
