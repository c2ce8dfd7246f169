"""Forward-mode automatic differentiation of SymPy expression graphs at a numeric point, with limits at removable singularities."""

from __future__ import annotations

import math

import numpy as np
import sympy as sm
from sympy.core.function import AppliedUndef

from ..exceptions import ProblemError

__all__ = ["Evaluator", "collect_leaves", "is_leaf", "to_float"]

_NAN = float("nan")


def is_leaf(e) -> bool:
    """Symbols, undefined functions of time (``q1(t)``) and their derivatives: the variables."""
    return e.is_Symbol or isinstance(e, AppliedUndef) or e.is_Derivative


def collect_leaves(exprs) -> set:
    """The set of variables (:func:`is_leaf`) in ``exprs``, walking each shared subexpression once."""
    seen, leaves = set(), set()
    stack = list(exprs)
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        if is_leaf(e):
            leaves.add(e)
        elif e.args:
            stack.extend(e.args)
    return leaves


def to_float(value, name) -> float:
    """A finite real number from a Python, numpy or SymPy number, else a ProblemError naming ``name``."""
    try:
        v = complex(sm.sympify(value).evalf()) if isinstance(value, sm.Basic) else complex(value)
    except (TypeError, ValueError):
        raise ProblemError(f"op_point[{name}]", f"not a number: {value!r}", "linearize") from None
    if v.imag != 0.0 or not math.isfinite(v.real):
        raise ProblemError(f"op_point[{name}]", f"not a finite real number: {value!r}", "linearize")
    return v.real


def _safe(f, *a):
    try:
        return float(f(*a))
    except (ValueError, ZeroDivisionError, OverflowError):
        return _NAN


def _pow(b, e):
    try:
        v = b ** e
    except (ZeroDivisionError, OverflowError):
        return math.inf
    return v if isinstance(v, float) else (_NAN if isinstance(v, complex) else float(v))


# value and derivative of the elementary functions of one argument
_UNARY = {
    sm.sin: (math.sin, math.cos),
    sm.cos: (math.cos, lambda x: -math.sin(x)),
    sm.tan: (math.tan, lambda x: 1.0 / math.cos(x) ** 2),
    sm.cot: (lambda x: 1.0 / math.tan(x), lambda x: -1.0 / math.sin(x) ** 2),
    sm.sec: (lambda x: 1.0 / math.cos(x), lambda x: math.sin(x) / math.cos(x) ** 2),
    sm.csc: (lambda x: 1.0 / math.sin(x), lambda x: -math.cos(x) / math.sin(x) ** 2),
    sm.exp: (math.exp, math.exp),
    sm.log: (math.log, lambda x: 1.0 / x),
    sm.asin: (math.asin, lambda x: 1.0 / math.sqrt(1.0 - x * x)),
    sm.acos: (math.acos, lambda x: -1.0 / math.sqrt(1.0 - x * x)),
    sm.atan: (math.atan, lambda x: 1.0 / (1.0 + x * x)),
    sm.sinh: (math.sinh, math.cosh),
    sm.cosh: (math.cosh, math.sinh),
    sm.tanh: (math.tanh, lambda x: 1.0 - math.tanh(x) ** 2),
    sm.asinh: (math.asinh, lambda x: 1.0 / math.sqrt(x * x + 1.0)),
    sm.acosh: (math.acosh, lambda x: 1.0 / math.sqrt(x * x - 1.0)),
    sm.atanh: (math.atanh, lambda x: 1.0 / (1.0 - x * x)),
    sm.Abs: (abs, lambda x: math.copysign(1.0, x) if x != 0.0 else _NAN),
    sm.sign: (lambda x: float(np.sign(x)), lambda x: 0.0 if x != 0.0 else _NAN),
    sm.Heaviside: (lambda x: 1.0 if x > 0 else (0.0 if x < 0 else 0.5), lambda x: 0.0 if x != 0.0 else _NAN),
}


class Evaluator:
    r"""Values and gradients of SymPy expressions at one numeric point (forward-mode AD).

    Every shared subexpression is evaluated once (the expression graph, not the tree). A node
    carries its value and its gradient with respect to the *seeds*, a numpy vector, or None when it
    does not depend on them. Variables (:func:`is_leaf`) are looked up in ``values``; those in
    ``zero`` evaluate to 0 with a zero gradient, which is ``msubs(expr, dict.fromkeys(zero, 0))``
    differentiated, without rebuilding the expression.

    Parameters
    ----------
    values : dict
        Variable -> float.
    seeds : dict
        Variable -> column of the gradient.
    zero : set, optional
        Variables set to zero.
    """

    def __init__(self, values: dict, seeds: dict, zero=frozenset()):
        self.values, self.seeds, self.zero = values, seeds, zero
        self.nseeds = len(set(seeds.values()))
        self.memo: dict = {}

    def jacobian(self, exprs) -> tuple[np.ndarray, np.ndarray]:
        """``(v, J)``: values (m,) and Jacobian (m, nseeds) of a list of expressions."""
        v = np.empty(len(exprs))
        J = np.zeros((len(exprs), self.nseeds))
        for i, e in enumerate(exprs):
            val, g = self.eval(e)
            v[i] = val
            if g is not None:
                J[i] = g
        return v, J

    def eval(self, e):
        try:
            return self.memo[e]
        except KeyError:
            pass
        r = self._node(e)
        self.memo[e] = r
        return r

    def _unit(self, e):
        g = np.zeros(self.nseeds)
        g[self.seeds[e]] = 1.0
        return g

    def _node(self, e):
        if e.is_Number or e.is_NumberSymbol:
            return float(e), None
        if is_leaf(e):
            if e in self.zero:
                return 0.0, None
            try:
                v = self.values[e]
            except KeyError:
                raise _Missing(e) from None
            return v, (self._unit(e) if e in self.seeds else None)
        ev = self.eval
        if e.is_Add:
            val, g = 0.0, None
            for a in e.args:
                av, ag = ev(a)
                val += av
                if ag is not None:
                    g = ag.copy() if g is None else g.__iadd__(ag)
            return val, g
        if e.is_Mul:
            parts = [ev(a) for a in e.args]
            vals = [p[0] for p in parts]
            val = math.prod(vals)
            g = None
            if any(p[1] is not None for p in parts):
                k = len(vals)
                pre = [1.0] * (k + 1)
                for i in range(k):
                    pre[i + 1] = pre[i] * vals[i]
                suf = 1.0
                for i in range(k - 1, -1, -1):
                    gi = parts[i][1]
                    if gi is not None:
                        c = pre[i] * suf
                        g = gi * c if g is None else g.__iadd__(gi * c)
                    suf *= vals[i]
            return val, g
        if e.is_Pow:
            b, x = e.args
            bv, bg = ev(b)
            if x.is_Number:
                xv = float(x)
                val = _pow(bv, xv)
                if bg is None:
                    return val, None
                if xv == 2.0:
                    return val, bg * (2.0 * bv)
                return val, bg * (xv * _pow(bv, xv - 1.0))
            xv, xg = ev(x)
            val = _pow(bv, xv)
            g = None
            if bg is not None:
                g = bg * (xv * _pow(bv, xv - 1.0))
            if xg is not None:
                t = xg * (val * _safe(math.log, bv))
                g = t if g is None else g + t
            return val, g
        f = e.func
        if f in _UNARY:
            av, ag = ev(e.args[0])
            fv, df = _UNARY[f]
            val = _safe(fv, av)
            return val, (None if ag is None else ag * _safe(df, av))
        if f is sm.atan2:
            (yv, yg), (xv, xg) = ev(e.args[0]), ev(e.args[1])
            val, r2 = math.atan2(yv, xv), xv * xv + yv * yv
            g = None
            if yg is not None:
                g = yg * _safe(lambda: xv / r2)
            if xg is not None:
                t = xg * _safe(lambda: -yv / r2)
                g = t if g is None else g + t
            return val, g
        if f is sm.Piecewise:
            for expr, cond in e.args:
                if self._truth(cond):
                    return ev(expr)
            return _NAN, None
        if isinstance(e, sm.Function):
            return self._generic(e)
        raise ProblemError("expression", f"cannot evaluate {type(e).__name__} node {e}", "linearize")

    def _truth(self, cond) -> bool:
        """A Piecewise condition at the point (the branch's derivative is the branch's own)."""
        if cond in (sm.true, sm.false):
            return bool(cond)
        point = {x: sm.Float(self.eval(x)[0]) for x in collect_leaves([cond])}
        return bool(cond.xreplace(point))

    def _generic(self, e):
        """Any other SymPy function: value by evalf, derivative by ``fdiff`` evaluated here."""
        parts = [self.eval(a) for a in e.args]
        xs = sm.symbols(f"_x0:{len(parts)}", real=True)
        point = {x: p[0] for x, p in zip(xs, parts)}
        fx = e.func(*xs)
        val = _safe(lambda: complex(fx.xreplace({x: sm.Float(v) for x, v in point.items()}).evalf()).real)
        g = None
        for i, (x, (_, ag)) in enumerate(zip(xs, parts)):
            if ag is None:
                continue
            d, _ = Evaluator(point, {}).eval(fx.fdiff(i + 1))
            g = ag * d if g is None else g + ag * d
        return val, g


class _Missing(KeyError):
    """A variable without a value (turned into a ProblemError by the caller)."""


def limit_jacobian(evaluate, values: dict, movable, *, h=1e-2, levels=7, rng_seed=0):
    r"""Values and Jacobian of a function of the variables as a limit at a removable singularity.

    ``evaluate(values) -> (v, J)``. Along a fixed random direction :math:`d` (scaled by
    :math:`\max(1, |x_j|)`), the symmetric means :math:`S(s) = (F(x+sd) + F(x-sd))/2 = F(x) +
    c_2 s^2 + c_4 s^4 + \dots` for :math:`s = h, h/2, \dots` are extrapolated to :math:`s = 0`
    by Richardson's table; each entry keeps the table value whose change from its neighbour is
    smallest, which is also its error estimate. Returns ``(v, J, v_err, J_err)``.
    """
    rng = np.random.default_rng(rng_seed)
    movable = list(movable)
    d = rng.standard_normal(len(movable))
    d /= np.linalg.norm(d)
    scale = np.array([max(1.0, abs(values[x])) for x in movable]) * d
    table = []
    with np.errstate(all="ignore"):
        return _richardson(evaluate, values, movable, scale, h, levels, table)


def _richardson(evaluate, values, movable, scale, h, levels, table):
    for k in range(levels):
        s = h / 2 ** k
        pts = []
        for sgn in (1.0, -1.0):
            vals = dict(values)
            for x, dx in zip(movable, scale):
                vals[x] = values[x] + sgn * s * dx
            pts.append(evaluate(vals))
        row = [tuple((a + b) / 2 for a, b in zip(*pts))]
        for j in range(1, k + 1):
            prev, cur = table[k - 1][j - 1], row[j - 1]
            row.append(tuple(c + (c - p) / (4 ** j - 1) for c, p in zip(cur, prev)))
        table.append(row)
    best, err = [None, None], [None, None]
    for k in range(1, levels):
        for j in range(k + 1):
            cand, ref = table[k][j], table[k - 1][min(j, k - 1)]
            for part in (0, 1):
                e = np.abs(cand[part] - ref[part])
                e = np.where(np.isfinite(e), e, np.inf)
                if best[part] is None:
                    best[part], err[part] = cand[part].copy(), e
                else:
                    better = e < err[part]
                    best[part] = np.where(better, cand[part], best[part])
                    err[part] = np.where(better, e, err[part])
    return best[0], best[1], err[0], err[1]
