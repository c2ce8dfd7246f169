r"""nsopt inside JAX programs: :func:`solve` with a ``jax.custom_vjp``, so that ``jax.grad`` of a loss
of the solution works with respect to the problem's data (``q``, ``M``/``W``, ``mu``, and every other
field :func:`nsopt.sensitivity` differentiates). Needs the optional extra ``nsopt[jax]``.

The forward pass is :func:`nsopt.solve` on the host (``jax.pure_callback``, so it also runs under
``jax.jit``); the backward pass is the adjoint of :func:`nsopt.sensitivity` at that solution (one
factorisation, kept for the backward pass of the same inputs). Enable double precision
(``jax.config.update("jax_enable_x64", True)``) for nsopt's accuracy; in single precision the
values are converted at the boundary.

>>> import jax, jax.numpy as jnp, nsopt, nsopt.jax
>>> jax.config.update("jax_enable_x64", True)
>>> p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
>>> loss = lambda q: jnp.sum(nsopt.jax.solve(p, {"q": q}, method="lemke")["z"])
>>> [round(float(g), 6) for g in jax.grad(loss)(jnp.array([-5.0, -6.0]))]     # -M^-T 1
[-0.333333, -0.333333]
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import scipy.sparse as sp

from .exceptions import ProblemError
from .sensitivity import sensitivity
from .solve import solve as _nsopt_solve

from ._extras import require

require("jax", "nsopt.jax")     # pip install "nsopt[jax]"
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

_CACHE: OrderedDict = OrderedDict()     # (problem id, inputs' bytes) -> (Sensitivity, variables); the last few
_CACHE_SIZE = 8


def _problem_with(problem, names, values):
    changes = {}
    for k, v in zip(names, values):
        a = np.asarray(v, dtype=float)
        if sp.issparse(getattr(problem, k)):
            a = sp.csr_matrix(a)
        changes[k] = a
    return problem.replace(**changes) if changes else problem


def _key(problem, values):
    return (id(problem),) + tuple(np.asarray(v, dtype=float).tobytes() for v in values)


def solve(problem, data: dict | None = None, method: str = "auto", tol: float = 1e-8, *, select=None,
          **options) -> dict:
    r"""Solve ``problem`` with its fields replaced by the JAX arrays of ``data`` (e.g.
    ``{"q": q, "W": W, "mu": mu}``) and return its variables as JAX arrays (``{"z", "w"}``,
    ``{"r", "u"}``, ``{"v", "r", "u"}``), differentiable with respect to ``data`` by ``jax.grad``,
    ``jax.vjp`` (reverse mode, the adjoint of :func:`nsopt.sensitivity`). ``method``, ``tol``,
    ``select`` and ``options`` go to :func:`nsopt.solve`. A matrix field that is sparse in
    ``problem`` and given in ``data`` is passed dense here and its gradient comes back dense.

    A solve that does not reach ``tol`` still returns its best iterate (as :func:`nsopt.solve`); its
    gradient is then that of the laws' states at that point.

    Parameters
    ----------
    problem : nsopt.Problem
        The problem whose fields ``data`` replaces (the others stay constant).
    data : dict, optional
        ``{field: JAX array}`` of the problem's shapes, e.g. ``{"q": q, "mu": mu}``.
    method : str, default "auto"
        The method of :func:`nsopt.solve`.
    tol : float, default 1e-8
        Its tolerance.
    select : str, optional
        ``"min-norm"`` to differentiate the least-norm solution (``nsopt.solve``'s ``select``).
    **options
        Further options of the method.

    Returns
    -------
    dict
        The solution's variables as JAX arrays: ``{"z", "w"}``, ``{"r", "u"}`` or ``{"v", "r", "u"}``.

    Raises
    ------
    ProblemError
        When a key of ``data`` is not a field of the problem, or a value has the wrong shape.

    Examples
    --------
    >>> import jax, jax.numpy as jnp, nsopt, nsopt.jax
    >>> jax.config.update("jax_enable_x64", True)
    >>> p = nsopt.FrictionContact(3, [[1.0, 0.1, 0.0], [0.1, 1.2, 0.0], [0.0, 0.0, 1.2]], [-1.0, -2.0, 0.5], [0.3])
    >>> normal = lambda mu: nsopt.jax.solve(p, {"mu": mu}, method="nsn-ac", tol=1e-12)["r"][0]
    >>> round(float(jax.grad(normal)(jnp.array([0.3]))[0]), 6)        # d r_N / d mu
    -0.091348
    """
    data = dict(data or {})
    fields = problem._fields
    for k in data:
        if k not in fields:
            raise ProblemError(k, f"is not a field of {type(problem).__name__}; fields: {', '.join(fields)}",
                               type(problem).__name__)
    names = tuple(sorted(data))
    values = tuple(jnp.asarray(data[k]) for k in names)
    for k, v in zip(names, values):
        want = np.shape(getattr(problem, k))
        if tuple(v.shape) != tuple(want):
            raise ProblemError(k, f"has shape {tuple(v.shape)}, expected {tuple(want)}", type(problem).__name__)
    sizes = problem.variable_sizes()
    var_names = tuple(k for k in ("z", "w", "v", "r", "u", "p") if k in sizes)
    dtype = jnp.result_type(*values) if values else jnp.zeros(0).dtype
    out_shapes = tuple(jax.ShapeDtypeStruct((sizes[k],), dtype) for k in var_names)

    def host_solve(*vals):
        p = _problem_with(problem, names, vals)
        sol = _nsopt_solve(p, method=method, tol=tol, select=select, **options)
        xs = p.complete({p.primal: getattr(sol, p.primal)})
        if "v" in sizes and getattr(sol, "v", None) is not None:
            xs = {**xs, "v": sol.v}
        key = _key(problem, vals)
        _CACHE[key] = (p, {k: np.asarray(xs[k], float) for k in var_names})
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
        return tuple(np.asarray(xs[k], dtype=dtype) for k in var_names)

    def host_vjp(*args):
        vals, outs, gs = args[:len(names)], args[len(names):len(names) + len(var_names)], args[len(names) + len(var_names):]
        key = _key(problem, vals)
        hit = _CACHE.get(key)
        if hit is not None and len(hit) == 3:
            s = hit[2]
        else:
            p = hit[0] if hit is not None else _problem_with(problem, names, vals)
            xs = {k: np.asarray(o, float) for k, o in zip(var_names, outs)}
            s = sensitivity(p, xs)
            if hit is not None:
                _CACHE[key] = (hit[0], hit[1], s)
        grads = s.vjp(**{k: np.asarray(g, float) for k, g in zip(var_names, gs)})
        res = []
        for k in names:
            g = grads[k]
            g = g.toarray() if sp.issparse(g) else np.asarray(g, float)
            res.append(g.astype(dtype).reshape(np.shape(getattr(problem, k))))
        return tuple(res)

    @jax.custom_vjp
    def f(*vals):
        return jax.pure_callback(host_solve, out_shapes, *vals)

    def f_fwd(*vals):
        outs = f(*vals)
        return outs, (vals, outs)

    def f_bwd(res, gs):
        vals, outs = res
        in_shapes = tuple(jax.ShapeDtypeStruct(v.shape, dtype) for v in vals)
        return jax.pure_callback(host_vjp, in_shapes, *vals, *outs, *gs)

    f.defvjp(f_fwd, f_bwd)
    outs = f(*values)
    return dict(zip(var_names, outs))


__all__ = ["solve"]
