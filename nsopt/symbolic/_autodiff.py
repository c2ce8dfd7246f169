"""Forward-mode automatic differentiation of SymPy expression graphs at a numeric point, with limits at removable singularities."""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np
import sympy as sm
from sympy.core.function import AppliedUndef

from ..exceptions import ProblemError

__all__ = ["Evaluator", "MPEvaluator", "collect_leaves", "is_leaf", "to_float"]

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


_INF = math.inf


def _safe(f, *a):
    try:
        return float(f(*a))
    except (ValueError, ZeroDivisionError, OverflowError, TypeError):
        return _NAN


def _pow(b, e):
    try:
        v = b ** e
    except (ZeroDivisionError, OverflowError):
        return math.inf
    return v if isinstance(v, float) else (_NAN if isinstance(v, complex) else float(v))


def _pow_spread(b, eb, x):
    r"""A bound on :math:`|(b + \delta)^x - b^x|` over :math:`|\delta| \le e_b` (not first order: exact
    for an integer power, from the relative spread :math:`\max |(1 \pm e_b/|b|)^x - 1|` otherwise)."""
    if eb == 0:
        return 0.0 * eb
    ab = abs(b)
    try:
        if x == int(x) and x >= 0:
            return (ab + eb) ** int(x) - ab ** int(x)
        if 0 < x < 1 and eb >= ab:
            return (2 * eb) ** x  # Hölder: |y^x - z^x| <= |y - z|^x for y, z >= 0
        if eb >= ab:
            return _INF
        r = eb / ab
        return ab ** x * max(abs((1 + r) ** x - 1), abs((1 - r) ** x - 1))
    except (ZeroDivisionError, OverflowError, ValueError):
        return _INF


# value and derivative of the elementary functions of one argument, and the class of their error bound:
# "lip1": |f'| <= 1 and |f''| <= 1 everywhere; "ends": on an interval inside one branch, |f'| is largest and
# f' deviates most from its middle value at an end (|f'| quasi-convex, f' monotone, convex or concave);
# "trig": as "ends", within a period where the denominator keeps its sign (that of the given function)
_UNARY = MappingProxyType({
    sm.sin: (math.sin, math.cos, "lip1"),
    sm.cos: (math.cos, lambda x: -math.sin(x), "lip1"),
    sm.tan: (math.tan, lambda x: 1.0 / math.cos(x) ** 2, math.cos),
    sm.cot: (lambda x: 1.0 / math.tan(x), lambda x: -1.0 / math.sin(x) ** 2, math.sin),
    sm.sec: (lambda x: 1.0 / math.cos(x), lambda x: math.sin(x) / math.cos(x) ** 2, math.cos),
    sm.csc: (lambda x: 1.0 / math.sin(x), lambda x: -math.cos(x) / math.sin(x) ** 2, math.sin),
    sm.exp: (math.exp, math.exp, "ends"),
    sm.log: (math.log, lambda x: 1.0 / x, "ends"),
    sm.asin: (math.asin, lambda x: 1.0 / math.sqrt(1.0 - x * x), "ends"),
    sm.acos: (math.acos, lambda x: -1.0 / math.sqrt(1.0 - x * x), "ends"),
    sm.atan: (math.atan, lambda x: 1.0 / (1.0 + x * x), "lip1"),
    sm.sinh: (math.sinh, math.cosh, "ends"),
    sm.cosh: (math.cosh, math.sinh, "ends"),
    sm.tanh: (math.tanh, lambda x: 1.0 - math.tanh(x) ** 2, "lip1"),
    sm.asinh: (math.asinh, lambda x: 1.0 / math.sqrt(x * x + 1.0), "lip1"),
    sm.acosh: (math.acosh, lambda x: 1.0 / math.sqrt(x * x - 1.0), "ends"),
    sm.atanh: (math.atanh, lambda x: 1.0 / (1.0 - x * x), "ends"),
    sm.Abs: (abs, lambda x: math.copysign(1.0, x) if x != 0.0 else _NAN, "abs"),
    sm.sign: (lambda x: float(np.sign(x)), lambda x: 0.0 if x != 0.0 else _NAN, "step"),
    sm.Heaviside: (lambda x: 1.0 if x > 0 else (0.0 if x < 0 else 0.5), lambda x: 0.0 if x != 0.0 else _NAN,
                   "step"),
})


class Evaluator:
    r"""Values and gradients of SymPy expressions at one numeric point (forward-mode AD), with a
    running bound on their rounding errors.

    Every shared subexpression is evaluated once (the expression graph, not the tree). A node
    carries ``(v, G, ev, rho)``: its value, None when it does not depend on the *seeds* or else an
    array ``G`` of shape (3, nseeds) holding its gradient ``G[0]``, a bound ``G[1]`` on the
    gradient's absolute value and a bound ``G[2]`` on the gradient's error, entry by entry, a bound
    ``ev`` on the error of ``v``, and the count ``rho`` of roundings not yet in ``G[2]`` (each worth
    :math:`u G[1]`: added where the gradient is next scaled, so that each operation on a
    gradient is one product with a 3 x 3 matrix). Variables (:func:`is_leaf`) are looked up in ``values``; those in
    ``zero`` evaluate to 0 with a zero gradient, which is ``msubs(expr, dict.fromkeys(zero, 0))``
    differentiated, without rebuilding the expression.

    The error bounds are a running error analysis [1]_: each operation adds its rounding,
    :math:`u |result|` with :math:`u = 2^{-52}` (twice the unit roundoff, room for the second-order
    terms), to the errors of its arguments carried through it; a sum of k terms adds
    :math:`(k-1) u \sum |g_i|` to its gradient's, a product carries the errors through prefix and
    suffix products, a power through the exact spread of :math:`(1 \pm r)^x`, a function of one
    argument through the largest :math:`|f'|` over the argument's error interval. The bounds see
    cancellation: a sum of terms of size :math:`1/\delta` that cancel to O(1) gets a bound of size
    :math:`u/\delta`, which is what evaluating it in floating point may lose. ``errors`` gives the
    variables' own errors (values known only approximately), carried the same way.

    Parameters
    ----------
    values : dict
        Variable -> float.
    seeds : dict
        Variable -> column of the gradient.
    zero : set, optional
        Variables set to zero.
    errors : dict, optional
        Variable -> bound on the error of its value (default 0: exact).

    References
    ----------
    .. [1] N. J. Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., SIAM 2002, §3.3
       (running error analysis).
    """

    u = 2.0 ** -52
    _unary = _UNARY
    _zero = 0.0
    _one = 1.0
    _atan2f = staticmethod(math.atan2)

    def __init__(self, values: dict, seeds: dict, zero=frozenset(), errors=None):
        self.values, self.seeds, self.zero = values, seeds, zero
        self.errors = errors or {}
        self.nseeds = len(set(seeds.values()))
        self.memo: dict = {}
        self._C = self._array((3, 3))

    # --- backend: floats (MPEvaluator evaluates in mpmath)

    def _number(self, e):
        v = float(e)
        exact = e.is_Integer and abs(v) < 2.0 ** 53 or (e.is_Float and e._prec <= 53)
        return v, (0.0 if exact else self.u * abs(v))

    def _array(self, shape):
        return np.zeros(shape)

    def _call(self, f, *a):
        return _safe(f, *a)

    def _power(self, b, x):
        return _pow(b, x)

    def _log(self, x):
        return _safe(math.log, x)

    def _sub(self, values):
        return Evaluator(values, {})

    def _generic_value(self, fx, point):
        return _safe(lambda: complex(fx.xreplace({x: sm.Float(v) for x, v in point.items()}).evalf()).real)

    # ---

    def jacobian(self, exprs):
        """``(v, J, ev, eJ)``: values (m,), Jacobian (m, nseeds) and bounds on their errors (same shapes)."""
        m = len(exprs)
        v, J = self._array(m), self._array((m, self.nseeds))
        ev, eJ = np.zeros(m), np.zeros((m, self.nseeds))
        u = self.u
        for i, e in enumerate(exprs):
            val, G, e_v, rho = self.eval(e)
            v[i] = val
            ev[i] = e_v
            if G is not None:
                J[i] = G[0]
                eJ[i] = G[2] + G[1] * (rho * u)
        return v, J, ev, eJ

    def eval(self, e):
        try:
            return self.memo[e]
        except KeyError:
            pass
        r = self._node(e)
        self.memo[e] = r
        return r

    def _scaled(self, G, rho, d, ed):
        r"""The packed gradient of :math:`d \cdot x` from x's (``G``, with ``rho`` roundings pending), for a
        factor d known to ``ed``: :math:`[g d,\ b |d|,\ e (|d| + e_d) + b (e_d + \rho u (|d| + e_d))]` with
        b the bound on |g| and e on its error; its own rounding is left pending (the caller's rho)."""
        C = self._C
        ad = abs(d)
        C[0, 0], C[1, 1], C[2, 2] = d, ad, ad + ed
        C[2, 1] = ed + rho * self.u * (ad + ed)
        return np.dot(C, G)

    def _node(self, e):
        u = self.u
        if e.is_Number or e.is_NumberSymbol:
            v, err = self._number(e)
            return v, None, err, 0
        if is_leaf(e):
            if e in self.zero:
                return self._zero, None, 0.0, 0
            try:
                v = self.values[e]
            except KeyError:
                raise _Missing(e) from None
            G = None
            if e in self.seeds:
                G = self._array((3, self.nseeds))
                G[0, self.seeds[e]] = G[1, self.seeds[e]] = self._one
            return v, G, self.errors.get(e, 0.0), 0
        ev = self.eval
        if e.is_Add:
            val, err, G, rho, k = self._zero, 0.0, None, 0, -1
            for a in e.args:
                av, aG, aev, arho = ev(a)
                val += av
                err += aev + u * abs(val)
                if aG is not None:
                    G = aG.copy() if G is None else G.__iadd__(aG)
                    rho = max(rho, arho)
                    k += 1
            return val, G, err, rho + k
        if e.is_Mul:
            return self._mul([ev(a) for a in e.args])
        if e.is_Pow:
            return self._pow_node(*e.args)
        f = e.func
        if f in self._unary:
            return self._unary_node(f, ev(e.args[0]))
        if f is sm.atan2:
            return self._atan2(ev(e.args[0]), ev(e.args[1]))
        if f is sm.Piecewise:
            for expr, cond in e.args:
                if self._truth(cond):
                    return ev(expr)
            return _NAN, None, _INF, 0
        if isinstance(e, sm.Function):
            return self._generic(e)
        raise ProblemError("expression", f"cannot evaluate {type(e).__name__} node {e}", "linearize")

    def _mul(self, parts):
        u = self.u
        k = len(parts)
        if k == 2:  # the common case, the general one below unrolled
            (a, Ga, ea, ra), (b, Gb, eb, rb) = parts
            val = a * b
            err = abs(a) * eb + ea * (abs(b) + eb) + u * abs(val)
            if Ga is None:
                if Gb is None:
                    return val, None, err, 0
                return val, self._scaled(Gb, rb, a, ea), err, 1
            G = self._scaled(Ga, ra, b, eb)
            if Gb is None:
                return val, G, err, 1
            return val, G.__iadd__(self._scaled(Gb, rb, a, ea)), err, 2
        P, EP = self._one, 0.0
        grads = []
        for i, (v, G, e_, _) in enumerate(parts):
            newP = P * v
            EP = abs(P) * e_ + EP * (abs(v) + e_) + u * abs(newP)
            P = newP
            if G is not None:
                grads.append(i)
        if not grads:
            return P, None, EP, 0
        if len(grads) == 1:  # one factor depends on the seeds: its coefficient, the product of the others
            i = grads[0]
            c, ec = self._one, 0.0
            for j, (v, _, e_, _) in enumerate(parts):
                if j != i:
                    newc = c * v
                    ec = abs(c) * e_ + ec * (abs(v) + e_) + u * abs(newc)
                    c = newc
            return P, self._scaled(parts[i][1], parts[i][3], c, ec), EP, 1
        pre, epre = [self._one], [0.0]  # prefix and suffix products, with their errors
        for v, _, e_, _ in parts:
            newP = pre[-1] * v
            epre.append(abs(pre[-1]) * e_ + epre[-1] * (abs(v) + e_) + u * abs(newP))
            pre.append(newP)
        S, ES, G = self._one, 0.0, None
        for i in range(k - 1, -1, -1):
            v, Gi, e_, ri = parts[i]
            if Gi is not None:
                c = pre[i] * S
                ec = abs(pre[i]) * ES + epre[i] * (abs(S) + ES) + u * abs(c)
                T = self._scaled(Gi, ri, c, ec)
                G = T if G is None else G.__iadd__(T)
            newS = S * v
            ES = abs(S) * e_ + ES * (abs(v) + e_) + u * abs(newS)
            S = newS
        return P, G, EP, len(grads)

    def _pow_node(self, b, x):
        u = self.u
        bv, bG, bev, brho = self.eval(b)
        if x.is_Number:
            xv = self._number(x)[0]
            val = self._power(bv, xv)
            err = _pow_spread(bv, bev, xv) + u * abs(val)
            if bG is None:
                return val, None, err, 0
            if xv == 2:
                d, ed = 2 * bv, 2 * bev
            else:
                d = xv * self._power(bv, xv - 1)
                ed = abs(xv) * _pow_spread(bv, bev, xv - 1) + 2 * u * abs(d)
            return val, self._scaled(bG, brho, d, ed), err, 1
        xv, xG, xev, xrho = self.eval(x)
        val = self._power(bv, xv)
        lb = self._log(bv)
        if bev == 0 and xev == 0:
            err, rel, elb = 4 * u * abs(val), 4 * u, 0.0
        elif bv > bev:
            elb = bev / (bv - bev)
            ey = abs(xv) * elb + xev * (abs(lb) + elb) + u * abs(xv * lb)
            rel = _safe(math.expm1, float(ey)) + 4 * u
            err = abs(val) * rel
        else:
            elb, err, rel = _INF, _INF, _INF
        G = None
        if bG is not None:
            d = xv * self._power(bv, xv - 1)
            G = self._scaled(bG, brho, d, abs(d) * (rel + (xev / abs(xv) if xev else 0.0) + elb + 2 * u))
        if xG is not None:
            d = val * lb
            T = self._scaled(xG, xrho, d, abs(d) * rel + abs(val) * elb + 2 * u * abs(d))
            G = T if G is None else G.__iadd__(T)
        return val, G, err, 2

    def _unary_node(self, f, a):
        u = self.u
        av, aG, aev, arho = a
        fv, df, kind = self._unary[f]
        val = self._call(fv, av)
        d = self._call(df, av) if (aG is not None or aev) else None
        if not aev:
            err, ed = 2 * u * abs(val), 0.0
        elif kind == "lip1":
            err, ed = min(1.0, abs(d) + aev) * aev + 2 * u * abs(val), min(aev, 2.0)
        elif kind == "abs":
            err, ed = aev + 2 * u * abs(val), (0.0 if abs(av) > aev else 2.0)
        elif kind == "step":
            jump = abs(av) <= aev
            err, ed = (2.0 if jump else 0.0), (_INF if jump else 0.0)
        else:
            lo, hi = av - aev, av + aev
            if kind != "ends" and not (self._call(kind, lo) * self._call(kind, hi) > 0 and aev < 1.5):
                lo = hi = _NAN  # the interval may hold a pole: no bound
            dlo, dhi = self._call(df, lo), self._call(df, hi)
            if dlo != dlo or dhi != dhi or d != d:
                L = ed = _INF
            else:
                L, ed = max(abs(dlo), abs(d), abs(dhi)), max(abs(dlo - d), abs(dhi - d))
            err = L * aev + 2 * u * abs(val)
        if aG is None:
            return val, None, err, 0
        return val, self._scaled(aG, arho, d, ed + 4 * u * abs(d)), err, 1

    def _atan2(self, y, x):
        u = self.u
        (yv, yG, yev, yrho), (xv, xG, xev, xrho) = y, x
        val = self._call(self._atan2f, yv, xv)
        r2 = xv * xv + yv * yv
        rmin = r2 ** 0.5 - (yev + xev)
        err = ((yev + xev) / rmin if rmin > 0 else _INF) + 2 * u * abs(val)
        G = None
        for pG, prho, num in ((yG, yrho, xv), (xG, xrho, -yv)):
            if pG is None:
                continue
            d = self._call(lambda: num / r2)
            ed = ((yev + xev) / (rmin * rmin) if rmin > 0 else _INF) + 4 * u * abs(d)
            T = self._scaled(pG, prho, d, ed)
            G = T if G is None else G.__iadd__(T)
        return val, G, err, 2

    def _truth(self, cond) -> bool:
        """A Piecewise condition at the point (the branch's derivative is the branch's own)."""
        if cond in (sm.true, sm.false):
            return bool(cond)
        point = {x: sm.Float(self.eval(x)[0]) for x in collect_leaves([cond])}
        return bool(cond.xreplace(point))

    def _generic(self, e):
        """Any other SymPy function: value by evalf, derivative by ``fdiff`` evaluated here; the error
        bound first order in the arguments' errors, doubled."""
        u = self.u
        parts = [self.eval(a) for a in e.args]
        xs = sm.symbols(f"_x0:{len(parts)}", real=True)
        point = {x: p[0] for x, p in zip(xs, parts)}
        fx = e.func(*xs)
        val = self._generic_value(fx, point)
        err = 4 * u * abs(val)
        G, m = None, 0
        for i, (x, (_, pG, pev, prho)) in enumerate(zip(xs, parts)):
            if pG is None and not pev:
                continue
            d, _, ed, _ = self._sub(point).eval(fx.fdiff(i + 1))
            err += 2 * abs(d) * pev
            if pG is None:
                continue
            ed = ed + (2 * abs(d) * pev / max(abs(point[x]), pev) if pev else 0.0)
            T = self._scaled(pG, prho, d, ed)
            G = T if G is None else G.__iadd__(T)
            m += 1
        return val, G, err, m


def _mp():
    import mpmath

    return mpmath


class MPEvaluator(Evaluator):
    """:class:`Evaluator` in mpmath at ``prec`` bits (values mpf, gradients numpy object arrays of
    mpf), with the same running error bounds at that precision's ``u`` (the bounds themselves floats)."""

    def __init__(self, values: dict, seeds: dict, zero=frozenset(), errors=None, *, prec: int):
        mp = _mp()
        self.prec, self.mp = prec, mp
        self._zero, self._one = mp.mpf(0), mp.mpf(1)
        super().__init__(values, seeds, zero, errors)
        self.u = mp.mpf(2) ** (1 - prec)
        self._unary = _mp_unary()
        self._atan2f = mp.atan2

    def _sub(self, values):
        return MPEvaluator(values, {}, prec=self.prec)

    def _number(self, e):
        v = self.mp.mpf(e._to_mpmath(self.prec))
        exact = e.is_Integer or (e.is_Float and e._prec <= self.prec)
        return v, (0.0 if exact else self.u * abs(v))

    def _array(self, shape):
        a = np.empty(shape, dtype=object)
        a[...] = self._zero
        return a

    def _call(self, f, *a):
        try:
            r = f(*a)
        except (ValueError, ZeroDivisionError, OverflowError, TypeError):
            return self.mp.nan
        return r if isinstance(r, self.mp.mpf) else (self.mp.mpf(r) if isinstance(r, (int, float)) else self.mp.nan)

    def _power(self, b, x):
        return self._call(lambda: b ** x)

    def _log(self, x):
        return self._call(self.mp.log, x)

    def _generic_value(self, fx, point):
        dps = int(self.prec * 0.30103) + 5
        return self._call(lambda: self.mp.mpf(
            sm.re(fx.xreplace({x: sm.Float(v, dps) for x, v in point.items()}).evalf(dps))._to_mpmath(self.prec)))

    def jacobian(self, exprs):
        with self.mp.workprec(self.prec):
            return super().jacobian(exprs)


def _mp_unary():
    mp = _mp()
    return {
        sm.sin: (mp.sin, mp.cos, "lip1"),
        sm.cos: (mp.cos, lambda x: -mp.sin(x), "lip1"),
        sm.tan: (mp.tan, lambda x: 1 / mp.cos(x) ** 2, mp.cos),
        sm.cot: (mp.cot, lambda x: -1 / mp.sin(x) ** 2, mp.sin),
        sm.sec: (mp.sec, lambda x: mp.sin(x) / mp.cos(x) ** 2, mp.cos),
        sm.csc: (mp.csc, lambda x: -mp.cos(x) / mp.sin(x) ** 2, mp.sin),
        sm.exp: (mp.exp, mp.exp, "ends"),
        sm.log: (lambda x: mp.log(x) if x > 0 else mp.nan, lambda x: 1 / x, "ends"),
        sm.asin: (lambda x: mp.asin(x) if abs(x) <= 1 else mp.nan, lambda x: 1 / mp.sqrt(1 - x * x), "ends"),
        sm.acos: (lambda x: mp.acos(x) if abs(x) <= 1 else mp.nan, lambda x: -1 / mp.sqrt(1 - x * x), "ends"),
        sm.atan: (mp.atan, lambda x: 1 / (1 + x * x), "lip1"),
        sm.sinh: (mp.sinh, mp.cosh, "ends"),
        sm.cosh: (mp.cosh, mp.sinh, "ends"),
        sm.tanh: (mp.tanh, lambda x: 1 - mp.tanh(x) ** 2, "lip1"),
        sm.asinh: (mp.asinh, lambda x: 1 / mp.sqrt(x * x + 1), "lip1"),
        sm.acosh: (lambda x: mp.acosh(x) if x >= 1 else mp.nan, lambda x: 1 / mp.sqrt(x * x - 1), "ends"),
        sm.atanh: (lambda x: mp.atanh(x) if abs(x) < 1 else mp.nan, lambda x: 1 / (1 - x * x), "ends"),
        sm.Abs: (abs, lambda x: mp.sign(x) if x != 0 else mp.nan, "abs"),
        sm.sign: (mp.sign, lambda x: mp.mpf(0) if x != 0 else mp.nan, "step"),
        sm.Heaviside: (lambda x: mp.mpf(1) if x > 0 else (mp.mpf(0) if x < 0 else mp.mpf(0.5)),
                       lambda x: mp.mpf(0) if x != 0 else mp.nan, "step"),
    }


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
