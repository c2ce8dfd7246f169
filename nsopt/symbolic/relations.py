"""Relations of nsopt.modeling from SymPy expressions: Jacobians derived symbolically, compiled to numeric plug-ins."""

from __future__ import annotations

import itertools
import math
import zlib
from types import MappingProxyType

import numpy as np
import sympy as sm
from sympy.printing.codeprinter import PrintMethodNotImplementedError
from sympy.printing.pycode import PythonCodePrinter

from ..exceptions import NsoptError, OptionError, PluginError, ProblemError
from ._autodiff import collect_leaves

__all__ = ["relation", "relation_plugins", "compile_plugin", "KINDS"]

_T = sm.Symbol("t")

# kind -> (argument groups of the plug-ins, what the relation derives)
KINDS = MappingProxyType({
    "FirstOrderR": ("x, t, lam, z", "h, g, H0 = dh/dx, H1 = dh/dlam, G0 = dg/dx, G1 = dg/dlam"),
    "FirstOrderLinearR": ("t, z", "C, B, D, F, e (plug-ins of t, z, or constants)"),
    "FirstOrderLinearTIR": ("", "C, B, D, F, e constants"),
    "LagrangianScleronomousR": ("q, z", "h, G0 = dh/dq"),
    "LagrangianRheonomousR": ("q, t, z", "h, G0 = dh/dq, hdot = dh/dt"),
    "LagrangianCompliantR": ("q, lam, z", "h, G0 = dh/dq, G1 = dh/dlam"),
    "LagrangianLinearTIR": ("", "H, b, D, F constants"),
})


class _Kink(ArithmeticError):
    """A derivative plug-in evaluated where the function it differentiates has a kink (|x| at 0)."""


def _kink_sign(x):
    """d|x|/dx."""
    if x == 0.0:
        raise _Kink()
    return math.copysign(1.0, x)


def _kink_step(x):
    """d max(x, 0)/dx (SymPy's Heaviside in a derivative)."""
    if x == 0.0:
        raise _Kink()
    return 1.0 if x > 0.0 else 0.0


def _kink_delta(x):
    """d sign(x)/dx / 2, d Heaviside(x)/dx: 0 away from the jump."""
    if x == 0.0:
        raise _Kink()
    return 0.0


_KINKS = MappingProxyType({sm.sign: "_kink_sign", sm.Heaviside: "_kink_step", sm.DiracDelta: "_kink_delta"})


class _Printer(PythonCodePrinter):
    """Python code with ``math``; in a derivative, sign, Heaviside and DiracDelta (the derivatives of
    Abs, Max/Min, sign and Heaviside) become helpers that raise at their kink."""

    def __init__(self, derivative=False):
        super().__init__({"fully_qualified_modules": True, "standard": "python3"})
        self.derivative = derivative

    def _print_Symbol(self, expr):
        return expr.name

    def _kink(self, expr):
        if not self.derivative:
            return None
        return f"{_KINKS[expr.func]}({self._print(expr.args[0])})"

    def _print_sign(self, expr):
        return self._kink(expr) or super()._print_sign(expr)

    def _print_Heaviside(self, expr):
        return self._kink(expr) or super()._print_Heaviside(expr)

    def _print_DiracDelta(self, expr):
        return self._kink(expr) or self._print_not_supported(expr)


class Plugin:
    """A compiled plug-in: ``f(*args) -> ndarray`` of a fixed shape; ``.expr`` is the SymPy matrix,
    ``.source`` the generated code (common subexpressions eliminated), ``.name`` what it computes.

    Called where it is not defined (a division by zero, a square root of a negative number, a
    derivative at a kink such as d|x|/dx at x = 0), it raises :class:`nsopt.exceptions.PluginError`
    naming itself, the point, and the entries that are not defined there.

    Made by :func:`compile_plugin` (and :func:`relation_plugins`), not directly.

    Examples
    --------
    >>> import sympy as sm
    >>> from nsopt.symbolic import compile_plugin
    >>> x = sm.Symbol("x")
    >>> f = compile_plugin([1 / x], [("v", [x])], (1,), name="inverse")
    >>> f([4.0])
    array([0.25])
    >>> f([0.0])
    Traceback (most recent call last):
    ...
    nsopt.exceptions.PluginError: ...inverse...
    """

    def __init__(self, fn, expr, shape, signature, source, name="plug-in", args=(), owner="relation"):
        self.fn, self.expr, self.shape, self.signature, self.source = fn, expr, shape, signature, source
        self.name, self.args, self.owner = name, list(args), owner

    def __call__(self, *args):
        try:
            return self.fn(*args)
        except (ZeroDivisionError, OverflowError, _Kink) as e:
            raise self._undefined(args, e) from None
        except ValueError as e:  # math's domain errors; not the caller's arguments
            if "math domain" not in str(e):
                raise
            raise self._undefined(args, e) from None

    def _undefined(self, values, err):
        point, where = {}, []
        for (name, group), val in zip(self.args, values):
            val = np.atleast_1d(np.asarray(val, dtype=float)) if not isinstance(group, sm.Basic) or \
                isinstance(group, sm.MatrixBase) else float(val)
            where.append(f"{name} = {np.array2string(np.asarray(val), precision=6, separator=', ')}")
            if isinstance(group, sm.Basic) and not isinstance(group, sm.MatrixBase):
                point[group] = sm.Float(val)
            else:
                point.update({v: sm.Float(x) for v, x in zip(group, val)})
        faults = []
        for idx, e in enumerate(self.expr):
            i, j = divmod(idx, self.expr.cols)
            kinks = [k for k in e.atoms(*_KINKS) if k.args[0].xreplace(point).is_zero]
            if kinks:
                faults.append(f"[{i}, {j}] = {e} with " + ", ".join(f"{k.args[0]} = 0 (the kink of {k.func})"
                                                                    for k in kinks))
                continue
            try:
                v = e.xreplace(point)
            except (ZeroDivisionError, ValueError):
                v = sm.nan
            if v.has(sm.nan, sm.zoo, sm.oo, -sm.oo) or (v.is_number and not v.is_extended_real):
                faults.append(f"[{i}, {j}] = {e} is {v}")
        what = "; ".join(faults[:3]) + ("; ..." if len(faults) > 3 else "") if faults else \
            f"{type(err).__name__}: {err}"
        hint = (" (the expression it differentiates is not differentiable there)"
                if "/d" in self.name else "")
        return PluginError(self.owner, self.name, f"not defined at {', '.join(where)}: {what}{hint}")

    def __repr__(self):
        return f"Plugin({self.signature}) -> {self.shape}"


def _unprintable(pr, expr) -> list:
    bad = set()
    for f in expr.atoms(sm.Function):
        try:
            pr.doprint(f)
        except PrintMethodNotImplementedError:
            bad.add(str(f.func))
    return sorted(bad)


def compile_plugin(expr, args, shape, *, jit: bool = False, name: str = "plug-in",
                   derivative: bool = False) -> Plugin:
    r"""Compile a SymPy matrix to ``f(*args) -> ndarray(shape)``.

    ``args`` is a list of ``(name, variables)``: a list of SymPy variables for a vector argument,
    a single symbol for a scalar one (t). The code is generated once from ``sympy.cse`` of all the
    entries (common subexpressions computed once), with ``math`` functions; ``jit=True`` compiles it
    with numba (worth it for plug-ins called very often: the first call pays the compilation).
    ``name`` says what it computes (in error messages); ``derivative=True`` marks a derivative, in
    which sign, Heaviside and DiracDelta (the derivatives of Abs, Max, Min, sign, Heaviside) raise
    at their kink instead of returning a value there.

    Parameters
    ----------
    expr : sympy.Matrix or list
        The expressions (flattened into ``shape``).
    args : list of (str, list or sympy.Symbol)
        The arguments, in order.
    shape : tuple
        The shape of the result.
    jit : bool, default False
        Compile with numba.
    name : str, default "plug-in"
        What it computes (in error messages).
    derivative : bool, default False
        Mark a derivative (kinks raise).

    Returns
    -------
    Plugin

    Raises
    ------
    ProblemError
        An expression the generated code cannot compute (a function SymPy cannot print as Python).

    Examples
    --------
    >>> import sympy as sm
    >>> from nsopt.symbolic import compile_plugin
    >>> x, y, t = sm.symbols("x y t")
    >>> f = compile_plugin([x * y, sm.sin(t)], [("q", [x, y]), ("t", t)], (2,), name="f")
    >>> f([1.0, 2.0], 0.0)
    array([2., 0.])
    """
    expr = sm.Matrix(expr)
    names, subs, unpack = [], {}, []
    for gi, (name_, group) in enumerate(args):
        names.append(name_)
        if isinstance(group, sm.Basic) and not isinstance(group, sm.MatrixBase):
            s = sm.Symbol(f"_{name_}")
            subs[group] = s
            unpack.append(f"    _{name_} = {name_}")
            continue
        for i, v in enumerate(group):
            s = sm.Symbol(f"_{name_}{i}")
            subs[v] = s
            unpack.append(f"    _{name_}{i} = {name_}[{i}]")
    flat = [e.xreplace(subs) for e in expr]
    reps, reduced = sm.cse(flat, symbols=(sm.Symbol(f"_c{i}") for i in itertools.count()))
    pr = _Printer(derivative)
    lines = list(unpack)
    try:
        lines += [f"    {s.name} = {pr.doprint(e)}" for s, e in reps]
        lines.append(f"    out = np.empty({len(flat)})")
        lines += [f"    out[{i}] = {pr.doprint(e)}" for i, e in enumerate(reduced)]
    except PrintMethodNotImplementedError as err:
        bad = _unprintable(pr, expr) or [str(err)]
        raise ProblemError(name, f"cannot be compiled: the generated code does not support {', '.join(bad)}",
                           "relation") from None
    lines.append(f"    return out.reshape({tuple(shape)!r})")
    # named after its own code (no process-wide counter): the same relation compiles to the same name
    body = "\n".join(lines)
    fname = f"_plugin_{zlib.crc32(body.encode()):08x}"
    source = f"def {fname}({', '.join(names)}):\n{body}"
    ns = {"math": math, "np": np, "_kink_sign": _kink_sign, "_kink_step": _kink_step, "_kink_delta": _kink_delta}
    if jit:
        import numba

        ns.update({k: numba.njit(cache=False)(ns[k]) for k in ("_kink_sign", "_kink_step", "_kink_delta")})
    exec(compile(source, f"<nsopt.symbolic {fname}>", "exec"), ns)
    fn = ns[fname]
    if jit:
        import numba

        fn = numba.njit(cache=False)(fn)
    return Plugin(fn, expr, tuple(shape), ", ".join(names), source, name=name, args=args)


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

    Parameters
    ----------
    kind : str
        A relation class of ``nsopt.modeling`` (see :func:`relation`).
    h, g : list or sympy.Matrix, optional
        The output and input expressions.
    q, x, lam, z : list, optional
        The variables: coordinates (Lagrangian), state (first order), multipliers, free vector.
    t : sympy.Symbol, optional
        The time (default ``Symbol("t")``).
    C, B, D, F, e, H, b : optional
        The operators of the linear kinds, as expressions.
    params : dict, optional
        ``{symbol: value}`` fixed before compilation.
    jit : bool, default False
        Compile with numba.

    Returns
    -------
    dict
        The keyword arguments of the modeling constructor.

    Raises
    ------
    OptionError
        An unknown ``kind``.
    ProblemError
        A missing expression or variable, a symbol with no value, or an expression that is not
        affine where the kind needs it (the message names it).

    Examples
    --------
    >>> import sympy as sm
    >>> from nsopt.symbolic import relation_plugins
    >>> q1, q2 = sm.symbols("q1 q2")
    >>> sorted(relation_plugins("LagrangianLinearTIR", h=[q1 - 2 * q2 + 1], q=[q1, q2]))
    ['H', 'b']
    """
    if kind not in KINDS:
        raise OptionError(f"unknown relation kind {kind!r}; expected one of {', '.join(KINDS)}")
    t = _T if t is None else t
    q, x, lam, z = _vec(q, "q"), _vec(x, "x"), _vec(lam, "lam"), _vec(z, "z")
    h, g = _exprs(h, "h", params), _exprs(g, "g", params)
    ops = {k: _exprs(v, k, params) for k, v in dict(C=C, B=B, D=D, F=F, e=e, H=H, b=b).items()}
    # the variables are real (d|x|/dx is sign(x), not SymPy's expression in re(x) and im(x)); same names
    real = {v: sm.Symbol(str(v), real=True) for v in dict.fromkeys(q + x + lam + z + [t])
            if isinstance(v, sm.Basic) and not (v.is_Symbol and v.is_real)}
    if real:
        q, x, lam, z = ([real.get(v, v) for v in vs] for vs in (q, x, lam, z))
        t = real.get(t, t)
        h, g = (None if m is None else m.xreplace(real) for m in (h, g))
        ops = {k: (None if m is None else m.xreplace(real)) for k, m in ops.items()}

    def cp(expr, args, shape, name):
        return compile_plugin(expr, args, shape, jit=jit, name=name, derivative="/d" in name)

    def need(name, val):
        if val is None or (isinstance(val, list) and not val):
            raise ProblemError(name, f"is required for {kind}", "relation")

    out = {}
    if kind == "LagrangianScleronomousR":
        need("h", h), need("q", q)
        _check_free("h", h, q + z)
        args, m = [("q", q), ("z", z)], len(h)
        out["h"] = cp(h, args, (m,), "h")
        out["G0"] = cp(h.jacobian(q), args, (m, len(q)), "G0 = dh/dq")
    elif kind == "LagrangianRheonomousR":
        need("h", h), need("q", q)
        _check_free("h", h, q + z + [t])
        args, m = [("q", q), ("t", t), ("z", z)], len(h)
        out["h"] = cp(h, args, (m,), "h")
        out["G0"] = cp(h.jacobian(q), args, (m, len(q)), "G0 = dh/dq")
        out["hdot"] = cp(h.diff(t), args, (m,), "hdot = dh/dt")
    elif kind == "LagrangianCompliantR":
        need("h", h), need("q", q), need("lam", lam)
        _check_free("h", h, q + lam + z)
        args, m = [("q", q), ("lam", lam), ("z", z)], len(h)
        out["h"] = cp(h, args, (m,), "h")
        out["G0"] = cp(h.jacobian(q), args, (m, len(q)), "G0 = dh/dq")
        out["G1"] = cp(h.jacobian(lam), args, (m, len(lam)), "G1 = dh/dlam")
    elif kind == "FirstOrderR":
        need("h", h), need("g", g), need("x", x)
        allowed = x + [t] + lam + z
        _check_free("h", h, allowed), _check_free("g", g, allowed)
        args, m, n = [("x", x), ("t", t), ("lam", lam), ("z", z)], len(h), len(g)
        out["h"] = cp(h, args, (m,), "h")
        out["g"] = cp(g, args, (n,), "g")
        out["H0"] = cp(h.jacobian(x), args, (m, len(x)), "H0 = dh/dx")
        out["H1"] = cp(h.jacobian(lam), args, (m, len(lam)), "H1 = dh/dlam")
        out["G0"] = cp(g.jacobian(x), args, (n, len(x)), "G0 = dg/dx")
        out["G1"] = cp(g.jacobian(lam), args, (n, len(lam)), "G1 = dg/dlam")
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
                out[k] = cp(v, [("t", t), ("z", z)], shape, k)
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
    for v in out.values():
        if isinstance(v, Plugin):
            v.owner = kind
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

    Parameters
    ----------
    kind : str
        The relation class's name, one of the kinds above.
    name : str, optional
        The relation's name (in messages).
    **spec
        The expressions and variables (see :func:`relation_plugins`).

    Returns
    -------
    nsopt.modeling.Relation
        The relation, its plug-ins compiled.

    Raises
    ------
    OptionError
        An unknown ``kind``.
    ProblemError
        As :func:`relation_plugins`.

    Examples
    --------
    >>> import sympy as sm
    >>> from nsopt.symbolic import relation, relation_plugins
    >>> x, y = sm.symbols("x y")
    >>> relation("LagrangianScleronomousR", h=[2.0 * sm.sin(x) + y], q=[x, y], name="wall")
    LagrangianScleronomousR 'wall'(m=None, n=None)

    >>> q1, q2, l = sm.symbols("q1 q2 l")
    >>> plug = relation_plugins("LagrangianScleronomousR", h=[l * sm.sin(q1) + q2], q=[q1, q2], params={l: 2.0})
    >>> plug["G0"]([0.0, 1.0], []).tolist()
    [[2.0, 1.0]]
    """
    kw = relation_plugins(kind, **spec)
    for v in kw.values():
        if isinstance(v, Plugin):
            v.owner = f"{kind} {name!r}" if name else kind
    try:
        from .. import modeling
    except ImportError as err:  # pragma: no cover - the modeling layer is part of nsopt
        raise NsoptError("nsopt.modeling is not available: use relation_plugins() for the plug-ins") from err
    return getattr(modeling, kind)(name=name, **kw)
