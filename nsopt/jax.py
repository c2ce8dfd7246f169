r"""nsopt inside JAX programs: :func:`solve`, differentiable with respect to the problem's data
(``q``, ``M``/``W``, ``mu``, and every other field :func:`nsopt.sensitivity` differentiates) by
``jax.grad``, ``jax.vjp``, ``jax.jacrev`` and, in forward mode, ``jax.jvp`` and ``jax.jacfwd``;
batched by ``jax.vmap``; under ``jax.jit``. Needs the optional extra ``nsopt[jax]``.

The solve runs on the host (``jax.pure_callback``, ``vmap_method="sequential"``: a batch is a loop
of solves). Two ways to differentiate it (``mode``):

* ``"forward"``: a ``jax.custom_jvp`` whose tangent is the Jacobian of the solution with respect to
  each field given in ``data`` (:meth:`nsopt.sensitivity.Sensitivity.jacobian`, one factorisation)
  applied in JAX: every JAX derivative works (``jvp``, ``jacfwd``, and ``grad``/``jacrev`` by
  transposition), at the cost of materialising those Jacobians (size of the solution x size of
  the field). Second derivatives (``jax.hessian``) are given where they are zero on the solution's
  piece (an LCP, MLCP, Relay or Equality differentiated twice with respect to q: the solution is
  piecewise affine in q) and refused otherwise (:class:`~nsopt.exceptions.NotDifferentiable`).
* ``"reverse"``: a ``jax.custom_vjp`` whose backward pass is one adjoint (``Sensitivity.vjp``): no
  Jacobian is formed (large problems, sparse fields), ``grad``, ``vjp``, ``jacrev`` and ``vmap`` work,
  forward mode does not (JAX raises its TypeError for ``jvp`` of a custom_vjp).
* ``"auto"`` (default): forward when the Jacobians have at most ``FORWARD_MAX`` entries, else reverse.

Outputs are floating point whatever the inputs' dtype (integer data are converted): float64 with
``jax.config.update("jax_enable_x64", True)`` (recommended: nsopt's accuracy), float32 otherwise.
Where the solution is not unique the derivative is refused by default, as by :func:`nsopt.sensitivity`
(``singular``); a solve that does not reach ``tol`` is refused too (``max_error``).

>>> import jax, jax.numpy as jnp, nsopt, nsopt.jax
>>> jax.config.update("jax_enable_x64", True)
>>> p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
>>> loss = lambda q: jnp.sum(nsopt.jax.solve(p, {"q": q}, method="lemke")["z"])
>>> [round(float(g), 6) for g in jax.grad(loss)(jnp.array([-5.0, -6.0]))]     # -M^-T 1
[-0.333333, -0.333333]
>>> nsopt.jax.solve(p, {"q": jnp.array([-5, -6])}, method="lemke")["z"]       # integer data: float output
Array([1.33333333, 2.33333333], dtype=float64)
"""

from __future__ import annotations

from collections import OrderedDict
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from .exceptions import NotDifferentiable, OptionError, ProblemError
from .sensitivity import sensitivity
from .solve import solve as _nsopt_solve

from ._extras import require

require("jax", "nsopt.jax")     # pip install "nsopt[jax]"
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

FORWARD_MAX = 20_000_000       # "auto": forward mode when the Jacobians have at most this many entries
MODES = ("auto", "forward", "reverse")
DIFFERENTIABLE = MappingProxyType({"lcp": ("M", "q"), "mlcp": ("M", "q"), "relay": ("M", "q", "lb", "ub"), "equality": ("M", "q"),
                  "avi": ("M", "q", "H", "k"), "fc2d": ("W", "q", "mu"), "fc3d": ("W", "q", "mu"),
                  "gfc2d": ("M", "H", "q", "b", "mu"), "gfc3d": ("M", "H", "q", "b", "mu"), "gmp": ("M", "q"),
                  "multiple-impact": ("M", "H", "v", "restitution", "stiffness", "elasticity")})
PIECEWISE_AFFINE = frozenset({"lcp", "mlcp", "relay", "equality"})     # second derivative in the right-hand side: 0

_CACHE: OrderedDict = OrderedDict()     # (problem id, inputs' bytes) -> (problem, variables, Sensitivity); the last few
_CACHE_SIZE = 8


def _problem_with(problem, names, values):
    changes = {}
    for k, v in zip(names, values):
        a = np.asarray(v, dtype=float)
        if sp.issparse(getattr(problem, k)):
            a = sp.csr_matrix(a)
        changes[k] = a
    return problem.replace(**changes) if changes else problem


def _key(problem, values, settings):
    return (id(problem), settings) + tuple(np.asarray(v, dtype=float).tobytes() for v in values)


def _float_dtype():
    return jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


def _inputs(problem, data):
    """(names, values): the fields of ``data`` checked (differentiable fields of the problem, real
    numbers, the field's shape) and converted to JAX's floating dtype."""
    kind = problem.kind
    owner = type(problem).__name__
    diff = DIFFERENTIABLE.get(kind, ())
    for k in data:
        if k not in problem._fields:
            raise ProblemError(k, f"is not a field of {owner}; fields: {', '.join(problem._fields)}", owner)
        if k not in diff:
            raise ProblemError(k, f"is not differentiable data of {owner} (differentiable fields: {', '.join(diff)})",
                               owner)
    names = tuple(sorted(data))
    values = []
    for k in names:
        v = data[k]
        dt = getattr(v, "dtype", None)
        if dt is None:
            try:
                dt = np.asarray(v).dtype
            except (TypeError, ValueError):
                raise ProblemError(k, "is not a numeric array", owner) from None
        if np.dtype(dt).kind not in "fiub":
            got = "complex numbers" if np.dtype(dt).kind == "c" else f"dtype {dt}"
            raise ProblemError(k, f"must be real numbers, got {got}", owner)
        a = jnp.asarray(v, dtype=_float_dtype())
        want = np.shape(getattr(problem, k))
        if tuple(a.shape) != tuple(want):
            raise ProblemError(k, f"has shape {tuple(a.shape)}, expected {tuple(want)}", owner)
        values.append(a)
    return names, tuple(values)


def solve(problem, data: dict | None = None, method: str = "auto", tol: float = 1e-8, *, select=None,
          mode: str = "auto", singular: str = "raise", max_error: float = 1e-6, **options) -> dict:
    r"""Solve ``problem`` with its fields replaced by the JAX arrays of ``data`` (e.g.
    ``{"q": q, "W": W, "mu": mu}``) and return its variables as JAX arrays (``{"z", "w"}``,
    ``{"r", "u"}``, ``{"v", "r", "u"}``), differentiable with respect to ``data`` (module
    docstring). ``method``, ``tol``, ``select`` and ``options`` go to :func:`nsopt.solve`. A matrix
    field that is sparse in ``problem`` and given in ``data`` is passed dense here and its gradient
    comes back dense.

    Parameters
    ----------
    problem : nsopt.Problem
        The problem whose fields ``data`` replaces (the others stay constant).
    data : dict, optional
        ``{field: array}`` of the problem's shapes, e.g. ``{"q": q, "mu": mu}``: differentiable
        fields only (not ``dim``, ``n``, ``blocks``...), real numbers (integers are converted).
    method : str, default "auto"
        The method of :func:`nsopt.solve`.
    tol : float, default 1e-8
        Its tolerance.
    select : str, optional
        ``"min-norm"`` to differentiate the least-norm solution (``nsopt.solve``'s ``select``).
    mode : {"auto", "forward", "reverse"}, default "auto"
        How JAX differentiates it (module docstring).
    singular, max_error
        As in :func:`nsopt.sensitivity`: where a derivative is not determined (the solution is not
        unique), and the largest error of a solution that is differentiated.
    **options
        Further options of the method.

    Returns
    -------
    dict
        The solution's variables as JAX arrays of JAX's floating dtype.

    Raises
    ------
    ProblemError
        When a key of ``data`` is not a differentiable field of the problem, or a value has the wrong
        shape or is not made of real numbers.
    OptionError
        When ``mode`` is not one of its values.

    Examples
    --------
    >>> import jax, jax.numpy as jnp, nsopt, nsopt.jax
    >>> jax.config.update("jax_enable_x64", True)
    >>> p = nsopt.FrictionContact(3, [[1.0, 0.1, 0.0], [0.1, 1.2, 0.0], [0.0, 0.0, 1.2]], [-1.0, -2.0, 0.5], [0.3])
    >>> normal = lambda mu: nsopt.jax.solve(p, {"mu": mu}, method="nsn-ac", tol=1e-12)["r"][0]
    >>> round(float(jax.grad(normal)(jnp.array([0.3]))[0]), 6)        # d r_N / d mu
    -0.091348
    >>> jax.jacfwd(normal)(jnp.array([0.3])).round(6)                 # forward mode, the same
    Array([-0.091348], dtype=float64)
    >>> qs = jnp.array([[-1.0, -2.0, 0.5], [-2.0, -2.0, 0.5]])
    >>> jax.vmap(lambda q: nsopt.jax.solve(p, {"q": q}, method="nsn-ac", tol=1e-12)["r"][0])(qs).round(6)
    Array([0.971803, 1.943801], dtype=float64)
    """
    if mode not in MODES:
        raise OptionError(f"nsopt.jax.solve: mode must be one of {list(MODES)}, got {mode!r}")
    names, values = _inputs(problem, dict(data or {}))
    sizes = problem.variable_sizes()
    var_names = tuple(k for k in ("z", "w", "v", "r", "u", "p") if k in sizes)
    dtype = _float_dtype()
    out_shapes = tuple(jax.ShapeDtypeStruct((sizes[k],), dtype) for k in var_names)
    if mode == "auto":
        total = sum(sizes[v] for v in var_names) * sum(int(np.prod(np.shape(getattr(problem, k)))) for k in names)
        mode = "forward" if total <= FORWARD_MAX else "reverse"

    settings = repr((names, method, tol, select, singular, max_error, sorted(options.items())))

    def entry(vals):
        """(problem, variables, Sensitivity) at the inputs, solved once and kept for the derivative."""
        key = _key(problem, vals, settings)
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
        p = _problem_with(problem, names, vals)
        if p.kind == "multiple-impact":
            sol = _nsopt_solve(p, method=method, **options)
        else:
            sol = _nsopt_solve(p, method=method, tol=tol, select=select, **options)
        xs = p.complete({p.primal: getattr(sol, p.primal)}) if p.kind != "multiple-impact" else {}
        for k in var_names:
            if getattr(sol, k, None) is not None:
                xs = {**xs, k: getattr(sol, k)}
        hit = [p, {k: np.asarray(xs[k], float) for k in var_names}, None, sol]
        _CACHE[key] = hit
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
        return hit

    def sens(vals):
        hit = entry(vals)
        if hit[2] is None:
            hit[2] = sensitivity(hit[0], hit[3] if hit[0].kind != "multiple-impact" else hit[1], singular=singular,
                                 max_error=max_error)
        return hit[2]

    def host_solve(*vals):
        hit = entry(vals)
        return tuple(np.asarray(hit[1][k], dtype=dtype) for k in var_names)

    def call_solve(vals):
        return jax.pure_callback(host_solve, out_shapes, *vals, vmap_method="sequential")

    if not names:
        return dict(zip(var_names, call_solve(())))
    if mode == "reverse":
        def host_vjp(*args):
            vals, gs = args[:len(names)], args[len(names):]
            s = sens(vals)
            cot = {}
            for k, g in zip(var_names, gs):
                g = np.asarray(g, float)
                if not np.all(np.isfinite(g)):
                    raise ProblemError(k, "the cotangent of this solution variable, from the loss that JAX "
                                          "differentiates, has non-finite entries (NaN or inf in the loss's "
                                          "gradient)", "nsopt.jax.solve")
                cot[k] = g
            grads = s.vjp(**cot)
            return tuple(_dense(grads[k]).astype(dtype).reshape(np.shape(getattr(problem, k))) for k in names)

        @jax.custom_vjp
        def f(*vals):
            return call_solve(vals)

        def f_fwd(*vals):
            return f(*vals), vals

        def f_bwd(vals, gs):
            in_shapes = tuple(jax.ShapeDtypeStruct(v.shape, dtype) for v in vals)
            return jax.pure_callback(host_vjp, in_shapes, *vals, *gs, vmap_method="sequential")

        f.defvjp(f_fwd, f_bwd)
        return dict(zip(var_names, f(*values)))

    jac_shapes = tuple(jax.ShapeDtypeStruct((sizes[v], *np.shape(getattr(problem, k))), dtype)
                       for v in var_names for k in names)

    def host_jacobians(*vals):
        s = sens(vals)
        out = []
        J = {k: s.jacobian(k) for k in names}
        for v in var_names:
            for k in names:
                Jk = J[k][v]
                F = getattr(s.problem, k)
                if sp.issparse(F):                     # (nnz columns in CSR order) -> dense field shape
                    A = sp.csr_matrix(F)
                    full = np.zeros((Jk.shape[0], *F.shape))
                    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
                    full[:, rows, A.indices] = Jk
                    Jk = full
                out.append(np.asarray(Jk, dtype=dtype))
        return tuple(out)

    affine = problem.kind in PIECEWISE_AFFINE

    @jax.custom_jvp
    def jacobians(*vals):
        return jax.pure_callback(host_jacobians, jac_shapes, *vals, vmap_method="sequential")

    def jacobians_jvp(primals, tangents):
        moved = [k for k, t in zip(names, tangents) if not isinstance(t, jax.custom_derivatives.SymbolicZero)]
        if not affine or any(k not in ("q", "lb", "ub") for k in moved):
            raise NotDifferentiable(f"nsopt.jax.solve: second derivatives of a {problem.kind} solution with respect to "
                                    f"{', '.join(moved)} are not computed (only those of LCP, MLCP, Relay and "
                                    f"Equality solutions with respect to q, lb and ub, which are zero on the "
                                    f"solution's piece)")
        Js = jacobians(*primals)
        return Js, tuple(jnp.zeros_like(J) for J in Js)

    jacobians.defjvp(jacobians_jvp, symbolic_zeros=True)

    @jax.custom_jvp
    def f(*vals):
        return call_solve(vals)

    @f.defjvp
    def f_jvp(primals, tangents):
        outs = f(*primals)
        Js = jacobians(*primals)
        touts = []
        i = 0
        for _ in var_names:
            t = None
            for k, d in zip(names, tangents):
                term = jnp.tensordot(Js[i], d, axes=d.ndim)
                t = term if t is None else t + term
                i += 1
            touts.append(t)
        return outs, tuple(touts)

    return dict(zip(var_names, f(*values)))


def _dense(g):
    return g.toarray() if sp.issparse(g) else np.asarray(g, float)


__all__ = ["solve"]
