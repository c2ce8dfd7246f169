"""Relations of nsopt.modeling from SymPy expressions: Jacobians derived symbolically, compiled to numeric plug-ins."""

from __future__ import annotations

import itertools
import math

import numpy as np
import sympy as sm
from sympy.printing.pycode import PythonCodePrinter

from ..exceptions import NsoptError, OptionError, ProblemError
from ._autodiff import collect_leaves

__all__ = ["relation", "relation_plugins", "compile_plugin", "KINDS"]

_T = sm.Symbol("t")
_counter = itertools.count()

# kind -> (argument groups of the plug-ins, what the relation derives)
KINDS = {
    "FirstOrderR": ("x, t, lam, z", "h, g, H0 = dh/dx, H1 = dh/dlam, G0 = dg/dx, G1 = dg/dlam"),
    "FirstOrderLinearR": ("t, z", "C, B, D, F, e (plug-ins of t, z, or constants)"),
    "FirstOrderLinearTIR": ("", "C, B, D, F, e constants"),
    "LagrangianScleronomousR": ("q, z", "h, G0 = dh/dq"),
    "LagrangianRheonomousR": ("q, t, z", "h, G0 = dh/dq, hdot = dh/dt"),
    "LagrangianCompliantR": ("q, lam, z", "h, G0 = dh/dq, G1 = dh/dlam"),
    "LagrangianLinearTIR": ("", "H, b, D, F constants"),
}


class _Printer(PythonCodePrinter):
    def _print_Symbol(self, expr):
        return expr.name


class Plugin:
    """A compiled plug-in: ``f(*args) -> ndarray`` of a fixed shape; ``.expr`` is the SymPy matrix,
    ``.source`` the generated code (common subexpressions eliminated)."""

    def __init__(self, fn, expr, shape, signature, source):
        self.fn, self.expr, self.shape, self.signature, self.source = fn, expr, shape, signature, source

    def __call__(self, *args):
        return self.fn(*args)

    def __repr__(self):
        return f"Plugin({self.signature}) -> {self.shape}"


def compile_plugin(expr, args, shape, *, jit: bool = False) -> Plugin:
    r"""Compile a SymPy matrix to ``f(*args) -> ndarray(shape)``.

    ``args`` is a list of ``(name, variables)``: a list of SymPy variables for a vector argument,
    a single symbol for a scalar one (t). The code is generated once from ``sympy.cse`` of all the
    entries (common subexpressions computed once), with ``math`` functions; ``jit=True`` compiles it
    with numba (worth it for plug-ins called very often: the first call pays the compilation).
    """
    expr = sm.Matrix(expr)
    names, subs, unpack = [], {}, []
    for gi, (name, group) in enumerate(args):
        names.append(name)
        if isinstance(group, sm.Basic) and not isinstance(group, sm.MatrixBase):
            s = sm.Symbol(f"_{name}")
            subs[group] = s
            unpack.append(f"    _{name} = {name}")
            continue
        for i, v in enumerate(group):
            s = sm.Symbol(f"_{name}{i}")
            subs[v] = s
            unpack.append(f"    _{name}{i} = {name}[{i}]")
    flat = [e.xreplace(subs) for e in expr]
    reps, reduced = sm.cse(flat, symbols=(sm.Symbol(f"_c{i}") for i in itertools.count()))
    pr = _Printer({"fully_qualified_modules": True, "standard": "python3"})
    fname = f"_plugin{next(_counter)}"
    lines = [f"def {fname}({', '.join(names)}):"] + unpack
    lines += [f"    {s.name} = {pr.doprint(e)}" for s, e in reps]
    lines.append(f"    out = np.empty({len(flat)})")
    lines += [f"    out[{i}] = {pr.doprint(e)}" for i, e in enumerate(reduced)]
    lines.append(f"    return out.reshape({tuple(shape)!r})")
    source = "\n".join(lines)
    ns = {"math": math, "np": np}
    exec(compile(source, f"<nsopt.symbolic {fname}>", "exec"), ns)
    fn = ns[fname]
    if jit:
        import numba

        fn = numba.njit(cache=False)(fn)
    return Plugin(fn, expr, tuple(shape), ", ".join(names), source)


def _vec(v, field):
    if v is None:
        return []
    if isinstance(v, sm.MatrixBase):
        return list(v)
    if isinstance(v, sm.Basic):
        return [v]
    try:
        return list(v)
    except TypeError:
        raise ProblemError(field, f"expected a list of SymPy variables, got {v!r}", "relation") from None


def _exprs(v, field, params):
    if v is None:
        return None
    m = sm.Matrix([v]).T if isinstance(v, sm.Basic) and not isinstance(v, sm.MatrixBase) else sm.Matrix(v)
    if params:
        m = m.xreplace({k: sm.sympify(x) for k, x in params.items()})
    return m


def _check_free(field, expr, allowed):
    """Every variable of ``expr`` is declared (a dynamicsymbol q1(t) counts as one variable)."""
    extra = collect_leaves(list(expr)) - set(allowed)
    if extra:
        raise ProblemError(field, f"depends on {', '.join(sorted(map(str, extra)))}, which is not among the "
                           f"declared variables {[str(a) for a in allowed]}; give it a value in params=",
                           "relation")


def _const(expr, field):
    if expr is None:
        return None
    try:
        return np.array(expr.evalf(), dtype=float).reshape(expr.shape)
    except TypeError:
        raise ProblemError(field, f"must be constant, but depends on {sorted(map(str, expr.free_symbols))}",
                           "relation") from None


def relation_plugins(kind: str, *, h=None, g=None, q=None, x=None, lam=None, z=None, t=None, C=None, B=None,
                     D=None, F=None, e=None, H=None, b=None, params=None, jit=False) -> dict:
    r"""The keyword arguments of ``nsopt.modeling.<kind>`` from SymPy expressions.

    Returns a dict of compiled :class:`Plugin` objects (and numpy constants for the time-invariant
    kinds) named and signed as the modeling constructors expect; see :func:`relation`.
    """
    if kind not in KINDS:
        raise OptionError(f"unknown relation kind {kind!r}; expected one of {', '.join(KINDS)}")
    t = _T if t is None else t
    q, x, lam, z = _vec(q, "q"), _vec(x, "x"), _vec(lam, "lam"), _vec(z, "z")
    h, g = _exprs(h, "h", params), _exprs(g, "g", params)
    ops = {k: _exprs(v, k, params) for k, v in dict(C=C, B=B, D=D, F=F, e=e, H=H, b=b).items()}

    def need(name, val):
        if val is None or (isinstance(val, list) and not val):
            raise ProblemError(name, f"is required for {kind}", "relation")

    out = {}
    if kind == "LagrangianScleronomousR":
        need("h", h), need("q", q)
        _check_free("h", h, q + z)
        args, m = [("q", q), ("z", z)], len(h)
        out["h"] = compile_plugin(h, args, (m,), jit=jit)
        out["G0"] = compile_plugin(h.jacobian(q), args, (m, len(q)), jit=jit)
    elif kind == "LagrangianRheonomousR":
        need("h", h), need("q", q)
        _check_free("h", h, q + z + [t])
        args, m = [("q", q), ("t", t), ("z", z)], len(h)
        out["h"] = compile_plugin(h, args, (m,), jit=jit)
        out["G0"] = compile_plugin(h.jacobian(q), args, (m, len(q)), jit=jit)
        out["hdot"] = compile_plugin(h.diff(t), args, (m,), jit=jit)
    elif kind == "LagrangianCompliantR":
        need("h", h), need("q", q), need("lam", lam)
        _check_free("h", h, q + lam + z)
        args, m = [("q", q), ("lam", lam), ("z", z)], len(h)
        out["h"] = compile_plugin(h, args, (m,), jit=jit)
        out["G0"] = compile_plugin(h.jacobian(q), args, (m, len(q)), jit=jit)
        out["G1"] = compile_plugin(h.jacobian(lam), args, (m, len(lam)), jit=jit)
    elif kind == "FirstOrderR":
        need("h", h), need("g", g), need("x", x)
        allowed = x + [t] + lam + z
        _check_free("h", h, allowed), _check_free("g", g, allowed)
        args, m, n = [("x", x), ("t", t), ("lam", lam), ("z", z)], len(h), len(g)
        out["h"] = compile_plugin(h, args, (m,), jit=jit)
        out["g"] = compile_plugin(g, args, (n,), jit=jit)
        out["H0"] = compile_plugin(h.jacobian(x), args, (m, len(x)), jit=jit)
        out["H1"] = compile_plugin(h.jacobian(lam), args, (m, len(lam)), jit=jit)
        out["G0"] = compile_plugin(g.jacobian(x), args, (n, len(x)), jit=jit)
        out["G1"] = compile_plugin(g.jacobian(lam), args, (n, len(lam)), jit=jit)
    elif kind in ("FirstOrderLinearR", "FirstOrderLinearTIR"):
        if h is not None:  # y = h(x, lam, z, t) affine in x, lam, z; R = g affine in lam
            need("x", x), need("g", g)
            ops["C"], ops["D"] = h.jacobian(x), (h.jacobian(lam) if lam else None)
            ops["F"] = h.jacobian(z) if z else None
            ops["e"] = h.xreplace(dict.fromkeys(x + lam + z, 0))
            ops["B"] = g.jacobian(lam)
            for k in ("C", "D", "F", "B"):
                if ops[k] is not None and ops[k].free_symbols & set(x + lam):
                    raise ProblemError("h" if k != "B" else "g", f"is not affine in the state and lam "
                                       f"({k} depends on them)", "relation")
        need("C", ops["C"]), need("B", ops["B"])
        for k in ("C", "B", "D", "F", "e"):
            v = ops[k]
            if v is None:
                continue
            if k == "e":
                v = sm.Matrix(list(v))
            if kind == "FirstOrderLinearTIR" or not (v.free_symbols & ({t} | set(z))):
                out[k] = _const(v, k)
                if k == "e":
                    out[k] = out[k].ravel()
            else:
                _check_free(k, v, [t] + z)
                shape = (len(v),) if k == "e" else v.shape
                out[k] = compile_plugin(v, [("t", t), ("z", z)], shape, jit=jit)
    else:  # LagrangianLinearTIR
        if h is not None:
            need("q", q)
            ops["H"] = h.jacobian(q)
            ops["D"] = h.jacobian(lam) if lam else None
            ops["F"] = h.jacobian(z) if z else None
            ops["b"] = h.xreplace(dict.fromkeys(q + lam + z, 0))
            if ops["H"].free_symbols & set(q + lam + z):
                raise ProblemError("h", "is not affine in q (use LagrangianScleronomousR)", "relation")
        need("H", ops["H"])
        for k in ("H", "b", "D", "F"):
            if ops[k] is not None:
                out[k] = _const(ops[k], k)
        if out.get("b") is not None:
            out["b"] = out["b"].ravel()
            if not np.any(out["b"]):
                out["b"] = None
        for k in ("D", "F"):
            if out.get(k) is not None and not np.any(out[k]):
                out[k] = None
    return out


def relation(kind: str, *, name=None, **spec):
    r"""Build a relation of ``nsopt.modeling`` from SymPy expressions.

    The Jacobians the relation needs are derived symbolically, common subexpressions eliminated,
    and compiled to plug-ins with the modeling layer's signatures (``jit=True``: numba).

    - ``LagrangianScleronomousR``: give ``h``, ``q`` [, ``z``]; plug-ins h, G0 = ∂h/∂q, as ``(q, z)``.
    - ``LagrangianRheonomousR``: ``h``, ``q`` [, ``t``, ``z``]; h, G0, hdot = ∂h/∂t, as ``(q, t, z)``.
    - ``LagrangianCompliantR``: ``h``, ``q``, ``lam`` [, ``z``]; h, G0, G1 = ∂h/∂λ, as ``(q, lam, z)``.
    - ``LagrangianLinearTIR``: ``h`` affine in ``q`` [, ``lam``, ``z``] (or ``H``, ``b``, ``D``, ``F``);
      constants H, b, D, F.
    - ``FirstOrderR``: ``h``, ``g``, ``x`` [, ``lam``, ``t``, ``z``]; h, g, H0 = ∂h/∂x, H1 = ∂h/∂λ,
      G0 = ∂g/∂x, G1 = ∂g/∂λ, as ``(x, t, lam, z)``.
    - ``FirstOrderLinearR``: ``C``, ``B`` [, ``D``, ``F``, ``e``] as expressions of (t, z), or ``h``
      affine in ``x``, ``lam``, ``z`` and ``g`` affine in ``lam``; plug-ins ``(t, z)`` (constants
      where an operator depends on neither).
    - ``FirstOrderLinearTIR``: as FirstOrderLinearR, constants C, B, D, F, e.

    ``params={symbol: value}`` fixes parameters before compilation; any other symbol is an error
    naming it. ``t`` defaults to ``Symbol("t")`` (SymPy's ``dynamicsymbols._t``).

    Examples
    --------
    >>> import sympy as sm
    >>> q1, q2, l = sm.symbols("q1 q2 l")
    >>> plug = relation_plugins("LagrangianScleronomousR", h=[l * sm.sin(q1) + q2], q=[q1, q2], params={l: 2.0})
    >>> plug["G0"]([0.0, 1.0], []).tolist()
    [[2.0, 1.0]]
    """
    kw = relation_plugins(kind, **spec)
    try:
        from .. import modeling
    except ImportError as err:  # pragma: no cover - the modeling layer is part of nsopt
        raise NsoptError("nsopt.modeling is not available: use relation_plugins() for the plug-ins") from err
    return getattr(modeling, kind)(name=name, **kw)
