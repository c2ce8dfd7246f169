"""Numeric, nan-free linearization of SymPy equations of motion (KanesMethod, LagrangesMethod, System, Linearizer)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import sympy as sm
import sympy.physics.mechanics as me
from sympy.core.function import AppliedUndef

from ..exceptions import NsoptWarning, OptionError, ProblemError
from ._autodiff import Evaluator, MPEvaluator, _Missing, _mp, collect_leaves, limit_jacobian, to_float

__all__ = ["linearize", "Linearization"]

_t = me.dynamicsymbols._t
_NAMES = ("f_0", "f_1", "f_2", "f_3", "f_4", "f_c", "f_v", "f_a")


class Linearization(tuple):
    r"""The linearized equations of motion: a tuple ``(A, B, r)`` (``A_and_B=True``) or ``(M, A, B, r)``.

    It unpacks and indexes like SymPy's ``KanesMethod.linearize(...)`` result. Made by
    :func:`linearize`, not by hand.

    Parameters
    ----------
    M, A, B : ndarray or sympy.Matrix
        The matrices (``M`` ignored with ``A_and_B=True``).
    r : sympy.Matrix
        The inputs.
    A_and_B : bool
        Whether the tuple is ``(A, B, r)`` (True) or ``(M, A, B, r)``.
    **info
        The other attributes below (``x``, ``op_point``, ``repaired``, ``repaired_entries``,
        ``errors``, ``tol``, ``reevaluated``, ``precision``, ``inaccurate``); missing ones are empty.

    Attributes
    ----------
    M, A, B : ndarray or sympy.Matrix
        :math:`M [\delta\dot q; \delta\dot u; \delta\lambda] = A [\delta q_i; \delta u_i] + B\,\delta r`,
        or, with ``A_and_B=True``, :math:`[\delta\dot q_i; \delta\dot u_i] = A [\delta q_i; \delta u_i]
        + B\,\delta r` (``M`` is None then). Rows and columns in SymPy's order. ``B`` has zero columns
        when there is no input.
    r : sympy.Matrix
        The inputs: every other function of time in the equations, sorted as SymPy sorts them.
    x : list
        The independent coordinates and speeds, ``[q_i, u_i]``, the columns of A.
    op_point : dict
        The numeric operating point used, with the values of :math:`\dot q, \dot u, \lambda` that the
        equations of motion gave where the operating point did not set them.
    repaired : list of str
        The derivatives that plain substitution made nan/zoo/oo (e.g. ``d f_3[1] / d q1(t)``), whose
        value is the limit at the operating point instead; empty almost always.
    repaired_entries : dict
        For each returned matrix name, a boolean mask of the entries that depend on a repaired one.
    errors : dict
        For each returned matrix name ("A", "B", and "M" with ``A_and_B=False``), a bound on the error
        of each entry (same shape): the rounding of the evaluation and of the dense algebra, carried
        through (see :func:`linearize`). Empty from the symbolic path.
    tol : float
        The accepted error of an entry, relative to the largest entry of its matrix.
    reevaluated : list of str
        The entries (e.g. ``"A[3, 1]"``) whose error bound in floating point exceeded ``tol`` and that
        were evaluated again in extended precision; empty almost always.
    precision : int or None
        The precision in bits of that re-evaluation (None: none was needed).
    inaccurate : list of str
        The entries whose error bound still exceeds ``tol`` (with a warning), each with its bound.

    See Also
    --------
    linearize : computes it.

    Examples
    --------
    See the example of :func:`linearize` (a pendulum, its Linearization's fields and both forms).
    """

    def __new__(cls, M, A, B, r, A_and_B, **info):
        self = super().__new__(cls, (A, B, r) if A_and_B else (M, A, B, r))
        self.M, self.A, self.B, self.r = (None if A_and_B else M), A, B, r
        self.x = info.get("x", [])
        self.op_point = info.get("op_point", {})
        self.repaired = info.get("repaired", [])
        self.repaired_entries = info.get("repaired_entries", {})
        self.errors = info.get("errors", {})
        self.tol = info.get("tol")
        self.reevaluated = info.get("reevaluated", [])
        self.precision = info.get("precision")
        self.inaccurate = info.get("inaccurate", [])
        return self


@dataclass
class _Form:
    """The general form of the equations of motion, as SymPy's Linearizer holds it.

    ``terms[name]`` is a list of ``(exprs, zero)``: f_name is the sum over the terms of ``exprs``
    with the variables in ``zero`` set to 0 (SymPy's ``msubs(expr, dict.fromkeys(zero, 0))``).
    """

    terms: dict
    q: list
    u: list
    q_i: list
    q_d: list
    u_i: list
    u_d: list
    r: list
    lams: list
    qdot: list
    qdot_dup: list
    udot: list
    linearizer: object = None


def _flat(m) -> list:
    return list(sm.Matrix(m)) if m is not None and len(m) else []


def _form_from_linearizer(lin) -> _Form:
    terms = {n: [(_flat(getattr(lin, n)), frozenset())] for n in _NAMES}
    q, u = list(lin.q), list(lin.u)
    qd = [x.diff(_t) for x in q]         # (SymPy's Linearizer: qd = q', marked where it is also a u)
    return _Form(terms, q, u, _flat(lin.q_i), _flat(lin.q_d), _flat(lin.u_i), _flat(lin.u_d), _flat(lin.r),
                 _flat(lin.lams), qd, [x in set(u) for x in qd], [x.diff(_t) for x in u], linearizer=lin)


def _dynamic(leaves) -> set:
    """SymPy's ``find_dynamicsymbols`` on a set of variables (derivatives also give their function)."""
    out = set()
    for x in leaves:
        for y in ((x, x.expr) if x.is_Derivative else (x,)):
            if (isinstance(y, AppliedUndef) or y.is_Derivative) and y.free_symbols == {_t}:
                out.add(y)
    return out


def _kane_constraints(KM):
    """The dependent coordinates and speeds and the constraints a KanesMethod was built with:
    (q_dep, u_dep, f_h, f_nh, k_nh). SymPy (1.14) keeps them only in private attributes, read here and
    nowhere else; a ``System`` (``sympy.physics.mechanics.System``) has them public (``q_dep``,
    ``u_dep``, ``holonomic_constraints``, ``nonholonomic_constraints``)."""
    return (list(KM._qdep), list(KM._udep), _flat(KM._f_h), KM._f_nh, KM._k_nh)


def _form_kane(KM) -> _Form:
    r"""Kane's general form from the KanesMethod's public matrices, without SymPy's ``to_linearizer``
    (whose ``msubs`` rebuild the equations). With ``mass_matrix`` :math:`= [K_d; K_{dnh}]` and
    ``forcing`` :math:`= -[f_d; f_{dnh}]` (the dynamic equations, then the differentiated velocity
    constraints), :math:`F_r + F_r^* = -K_d\dot u + F_{:n_d}`; the Linearizer's split of it into
    :math:`f_2(q, \dot u) + f_3(q, \dot q, u, r)` is :math:`f_2 = -K_d\dot u` (SymPy's
    :math:`F_r^*|_{\dot q = u = 0}`: Kane's inertia forces are linear in :math:`\dot u` with coefficients
    of q, and vanish at rest) and :math:`f_3 = F_{:n_d}` (SymPy's :math:`F_r^*|_{\dot u = 0} + F_r`), and
    the kinematic equations :math:`K_{k\dot q}\dot q + K_{ku}u + f_k = 0` are ``mass_matrix_kin``
    :math:`\dot q` ``- forcing_kin``."""
    try:
        MM, F = KM.mass_matrix, KM.forcing
    except ValueError:          # (SymPy's: 'Need to compute Fr, Fr* first.')
        raise ProblemError("system", "equations of motion not formed: call KanesMethod.kanes_equations("
                           "bodies, loads) first", "linearize") from None
    try:
        _ = KM.auxiliary_eqs    # (SymPy raises when no auxiliary speed was declared)
    except ValueError:
        pass
    else:
        return _form_from_linearizer(KM.to_linearizer())
    q, u = list(KM.q), list(KM.u)
    qdot, udot = [x.diff(_t) for x in q], [x.diff(_t) for x in u]
    q_dep, u_dep, f_h, f_nh, k_nh = _kane_constraints(KM)
    nd = len(u) - len(u_dep)
    Ud = sm.Matrix(udot)
    explicit = KM.explicit_kinematics       # (SymPy's Linearizer takes the explicit kinematic equations,
    KM.explicit_kinematics = True           # solved for q': the public attribute selects them)
    try:
        kin, Kq = -KM.forcing_kin, KM.mass_matrix_kin     # K_ku u + f_k, K_kq'
    finally:
        KM.explicit_kinematics = explicit
    f_d = F[:nd, :]
    terms = {"f_0": [(_flat(kin), frozenset(u)), (_flat(Kq * sm.Matrix(qdot)), frozenset())],
             "f_1": [(_flat(kin), frozenset(qdot))],
             "f_2": [(_flat(-MM[:nd, :] * Ud), frozenset())],
             "f_3": [(_flat(f_d), frozenset())],
             "f_4": [([sm.S.Zero] * nd, frozenset())],
             "f_c": [(f_h, frozenset())],
             "f_v": [(_flat(f_nh + k_nh * sm.Matrix(u)) if len(f_nh) and len(k_nh) else [], frozenset())],
             "f_a": [(_flat(MM[nd:, :] * Ud - F[nd:, :]) if len(u_dep) else [], frozenset())]}
    r = sorted(_dynamic(collect_leaves(_flat(f_d))) - set(q + qdot + u + udot), key=sm.default_sort_key)
    for x in r:
        if x.diff(_t) in r:
            raise ProblemError("system", f"derivative of the input {x} is also an input", "linearize")
    qdup = set(qdot) & set(u)
    return _Form(terms, q, u, q[:len(q) - len(q_dep)], q_dep, u[:len(u) - len(u_dep)], u_dep, r, [],
                 qdot, [x in qdup for x in qdot], udot)


def _lagrange_linearizer(LM, q_ind, qd_ind, q_dep, qd_dep):
    if LM.eom is None:
        raise ProblemError("system", "equations of motion not formed: call "
                           "LagrangesMethod.form_lagranges_equations() first", "linearize")
    q = list(LM.q)
    if q_ind is None and q_dep is None:
        if len(LM.coneqs):      # (the velocity form of every constraint, configuration ones differentiated)
            raise ProblemError("q_dep", f"the system has {len(LM.coneqs)} constraint(s) (LagrangesMethod.coneqs): "
                               "give q_ind, qd_ind, q_dep, qd_dep", "linearize")
        q_ind = q
    if qd_ind is None and q_ind is not None:
        qd_ind = [x.diff(_t) for x in q_ind]
    if qd_dep is None and q_dep is not None:
        qd_dep = [x.diff(_t) for x in q_dep]
    try:
        return LM.to_linearizer(q_ind=q_ind, qd_ind=qd_ind, q_dep=q_dep, qd_dep=qd_dep)
    except ValueError as e:
        raise ProblemError("q_ind", str(e), "linearize") from None


def _form_of(system, q_ind, qd_ind, q_dep, qd_dep, *, fast=True) -> _Form:
    given = any(x is not None for x in (q_ind, qd_ind, q_dep, qd_dep))
    if isinstance(system, me.System):
        method = system.eom_method
        if method is None:
            raise ProblemError("system", "equations of motion not formed: call System.form_eoms() first",
                               "linearize")
        if isinstance(method, me.LagrangesMethod) and not given:
            q_ind, q_dep = list(system.q_ind), list(system.q_dep) or None
        system = method
    if isinstance(system, me.LagrangesMethod):
        return _form_from_linearizer(_lagrange_linearizer(system, q_ind, qd_ind, q_dep, qd_dep))
    if given:
        raise OptionError("q_ind, qd_ind, q_dep, qd_dep apply to a LagrangesMethod only (KanesMethod and "
                          "Linearizer fix them at construction)")
    if isinstance(system, me.KanesMethod):
        if not fast:
            _form_kane(system)          # (ProblemError when the equations are not formed)
            return _form_from_linearizer(system.to_linearizer())
        return _form_kane(system)
    if isinstance(system, me.Linearizer):
        return _form_from_linearizer(system)
    raise ProblemError("system", f"expected a KanesMethod, LagrangesMethod, System or Linearizer, got "
                       f"{type(system).__name__}", "linearize")


def _merge_op(op_point) -> dict:
    if op_point is None:
        return {}
    if isinstance(op_point, Mapping):
        return dict(op_point)
    if isinstance(op_point, Iterable):
        out = {}
        for d in op_point:
            if not isinstance(d, Mapping):
                raise ProblemError("op_point", f"expected a dict or a list of dicts, got an item {d!r}",
                                   "linearize")
            out.update(d)
        return out
    raise ProblemError("op_point", f"expected a dict or a list of dicts, got {type(op_point).__name__}",
                       "linearize")


# ---------------------------------------------------------------------------------------------
# numeric path

class _Numeric:
    """Evaluates the general form's values and Jacobians at one numeric point, with bounds on their
    errors; in floats, or in mpmath at ``prec`` bits."""

    def __init__(self, form: _Form, values: dict, prec=None):
        self.form, self.values, self.prec = form, values, prec
        seeds = {}
        for x in form.q + form.qdot + form.u + form.udot + form.r + form.lams:
            seeds.setdefault(x, len(seeds))
        self.seeds, self.names = seeds, {i: x for x, i in seeds.items()}
        self.errors: dict = {}  # variable -> bound on the error of its value (the completed ones)
        self.repaired: list[str] = []
        self.repaired_idx: dict = {}
        self.repaired_err: dict = {}
        self.u = Evaluator.u if prec is None else MPEvaluator({}, {}, prec=prec).u

    def evaluator(self, values, zero):
        if self.prec is None:
            return Evaluator(values, self.seeds, zero, self.errors)
        return MPEvaluator(values, self.seeds, zero, self.errors, prec=self.prec)

    def evaluate(self, values=None):
        """``{name: (v, J, ev, eJ)}`` for f_0 ... f_a: values, Jacobians and bounds on their errors (per
        value, per row of J), with removable singularities replaced by limits (in floats)."""
        values = self.values if values is None else values
        self.repaired, self.repaired_idx, self.repaired_err = [], {}, {}
        with np.errstate(all="ignore"):
            return self._evaluate(values)

    def _evaluate(self, values):
        evals, out = {}, {}
        u = self.u
        for name in _NAMES:
            v = J = ev = eJ = None
            for k, (exprs, zero) in enumerate(self.form.terms[name]):
                if not exprs:
                    continue
                evr = evals.get(zero) or evals.setdefault(zero, self.evaluator(values, zero))
                tv, tJ, tev, teJ = evr.jacobian(exprs)
                if self.prec is None:
                    bad = ~(np.isfinite(tv) & np.all(np.isfinite(tJ), axis=1))
                    if bad.any():
                        self._repair(name, k, exprs, zero, values, tv, tJ, tev, teJ, bad)
                if v is None:
                    v, J, ev, eJ = tv, tJ, tev, teJ
                else:
                    v, J = v + tv, J + tJ
                    ev = ev + tev + float(u) * np.abs(v.astype(float))
                    eJ = eJ + teJ + float(u) * np.abs(J.astype(float))
            if v is None:
                v, J = np.zeros(0), np.zeros((0, len(self.seeds)))
                ev, eJ = np.zeros(0), np.zeros((0, len(self.seeds)))
            out[name] = (v, J, ev, eJ)
        return out

    def _repair(self, name, k, exprs, zero, values, tv, tJ, tev, teJ, bad):
        rows = np.flatnonzero(bad)
        sub = [exprs[i] for i in rows]
        movable = sorted((collect_leaves(sub) & values.keys()) - zero, key=sm.default_sort_key)

        def ev(vals):
            return Evaluator(vals, self.seeds, zero).jacobian(sub)[:2]

        lv, lJ, ev_err, eJ_err = limit_jacobian(ev, values, movable)
        for a, i in enumerate(rows):
            entries = [(None, lv[a], ev_err[a], tv[i])] + [
                (j, lJ[a, j], eJ_err[a, j], tJ[i, j]) for j in range(tJ.shape[1])]
            for j, val, err, old in entries:
                if np.isfinite(old):
                    continue
                what = (f"{name}[{i}]" if j is None else f"d {name}[{i}] / d {self.names[j]}")
                if not np.isfinite(val) or err > 1e-6 * max(1.0, abs(val)):
                    raise ProblemError("op_point", f"{what} is {old} at the operating point and has no finite "
                                       "limit there (not a removable singularity)", "linearize")
                if j is None:
                    tv[i] = val
                else:
                    tJ[i, j] = val
                self.repaired.append(what)
                self.repaired_idx.setdefault(name, []).append((k, i, j))
            # the bounds of the row: where the float evaluation gave none, the limit's error estimate, doubled
            if not np.isfinite(tev[i]):
                tev[i] = 2 * ev_err[a]
            nb = ~np.isfinite(teJ[i])
            teJ[i, nb] = 2 * eJ_err[a, nb]


class _U:
    """A matrix with a bound on the error of each entry (``e``), carried through the dense algebra of
    :func:`_assemble`: sums and products add their rounding (:math:`k u |A||B|` for an inner
    dimension k), a solve follows the perturbation bound of :func:`_solve`."""

    __array_ufunc__ = None  # numpy defers ``ndarray @ _U`` to _U.__rmatmul__
    __slots__ = ("v", "e")

    def __init__(self, v, e=None):
        self.v = np.asarray(v, dtype=float)
        self.e = np.zeros(self.v.shape) if e is None else e

    @property
    def shape(self):
        return self.v.shape

    def reshape(self, *shape):
        return _U(self.v.reshape(*shape), self.e.reshape(*shape))

    def __getitem__(self, idx):
        return _U(self.v[idx], self.e[idx])

    def __add__(self, o):
        o = _lift(o)
        v = self.v + o.v
        return _U(v, self.e + o.e + _EPS * np.abs(v))

    __radd__ = __add__

    def __neg__(self):
        return _U(-self.v, self.e)

    def __sub__(self, o):
        return self + (-_lift(o))

    def __rsub__(self, o):
        return _lift(o) + (-self)

    def __matmul__(self, o):
        return _matmul(self, _lift(o))

    def __rmatmul__(self, o):
        return _matmul(_lift(o), self)


_EPS = Evaluator.u


def _lift(x):
    return x if isinstance(x, _U) else _U(x)


def _matmul(a, b):
    v = a.v @ b.v
    k = a.v.shape[-1]
    av, bv = np.abs(a.v), np.abs(b.v)
    return _U(v, av @ b.e + a.e @ (bv + b.e) + k * _EPS * (av @ bv))


def _stack(how, parts):
    if not any(isinstance(p, _U) for p in parts):
        return how(parts)
    parts = [_lift(p) for p in parts]
    return _U(how([p.v for p in parts]), how([p.e for p in parts]))


def _block(rows):
    if not any(isinstance(p, _U) for r in rows for p in r):
        return np.block(rows)
    rows = [[_lift(p) for p in r] for r in rows]
    return _U(np.block([[p.v for p in r] for r in rows]), np.block([[p.e for p in r] for r in rows]))


def _cols(J, idx):
    if isinstance(J, _U):
        return _U(_cols(J.v, idx), _cols(J.e, idx))
    out = np.zeros((J.shape[0], len(idx)))
    for c, i in enumerate(idx):
        if i is not None:
            out[:, c] = J[:, i]
    return out


def _perm(orig, per):
    """The permutation P with ``orig == P @ per``, so that ``q = P_qi q_i + P_qd q_d``.

    SymPy's ``permutation_matrix`` returns its transpose (``P.T @ orig == per``) and the Linearizer
    slices its columns as if it were this one; the two agree when the reordering is its own inverse
    (always for KanesMethod, whose q is ``q_ind + q_dep``), but for a cyclic reordering of a
    LagrangesMethod's coordinates SymPy's A depends on the order of ``q_dep``. nsopt uses the
    permutation the derivation asks for.
    """
    P = np.zeros((len(orig), len(orig)))
    for i, x in enumerate(per):
        P[orig.index(x), i] = 1.0
    return P


def _nonsingular(Mat, field, what):
    if Mat.size:
        s = np.linalg.svd(Mat, compute_uv=False) if np.all(np.isfinite(Mat)) else np.array([np.nan])
        if s[0] == 0.0 or s[-1] <= 1e-12 * s[0] or not np.all(np.isfinite(s)):
            raise ProblemError(field, f"{what} is singular at the operating point (singular values "
                               f"{np.array2string(s, precision=3)})", "linearize")


def _dependent_jacobians(form: _Form, num):
    """Raise if d f_c / d q_dep or d f_v / d u_dep is singular at the point (evaluated alone: the
    elimination through them is what makes the rest of the equations nan there)."""
    what = {"f_c": ("q_dep", form.q_d, form.q), "f_v": ("u_dep", form.u_d, form.u)}
    for name, (field, dep, over) in what.items():
        rows = [(exprs, zero) for exprs, zero in form.terms[name] if exprs]
        if not rows or not dep:
            continue
        J = sum(num.evaluator(num.values, zero).jacobian(exprs)[1] for exprs, zero in rows)
        with np.errstate(all="ignore"):
            _nonsingular(J[:, [num.seeds[x] for x in dep]], field, f"the {'configuration' if name == 'f_c' else 'velocity'}"
                         f"-constraint Jacobian d {name} / d {field} with {field} = {dep}")


def _solve(Mat, rhs, field, what):
    r"""Dense LU solve; a singular (or numerically singular) matrix raises a ProblemError naming it.

    With errors (:class:`_U`): the computed :math:`\hat X` solves :math:`(\tilde M + \delta)\hat X = \tilde R`
    with :math:`|\delta| \le \gamma_{3n} P|L||U|` (Higham, Thm 9.4), so for the exact :math:`M^* = \tilde M
    - \Delta_M`, :math:`R^*`: :math:`|\hat X - X^*| \le |M^{*-1}| (e_R + (e_M + |\delta|)|\hat X|)`, with
    :math:`|M^{*-1}|` bounded through :math:`\rho = \| |\tilde M^{-1}| e_M \|_\infty < 1`."""
    Mv = Mat.v if isinstance(Mat, _U) else Mat
    rv = rhs.v if isinstance(rhs, _U) else rhs
    _nonsingular(Mv, field, what)
    if not isinstance(Mat, _U) and not isinstance(rhs, _U):
        return np.linalg.solve(Mv, rv)
    Mat, rhs = _lift(Mat), _lift(rhs)
    n = Mv.shape[0]
    if n == 0:
        return _U(np.zeros(rv.shape))
    P, L, Uf = scipy.linalg.lu(Mv)  # the factors LAPACK's solve computes (partial pivoting)
    X = np.linalg.solve(Mv, rv)
    Minv = np.abs(np.linalg.inv(Mv))
    dM = Mat.e + 3 * n * _EPS * (P @ (np.abs(L) @ np.abs(Uf)))
    rho = float((Minv @ dM).sum(axis=1).max())
    y = Minv @ (rhs.e + dM @ np.abs(X))
    if not rho < 1.0:
        return _U(X, np.full(X.shape, np.inf))
    return _U(X, y + (rho / (1.0 - rho)) * y.max(axis=0, initial=0.0))


def _assemble(form: _Form, J: dict, seeds: dict, A_and_B: bool):
    """SymPy's Linearizer (_form_permutation_matrices, _form_block_matrices, _form_coefficient_matrices,
    linearize) with the Jacobians ``J[name]`` already numbers at the operating point: numpy arrays, or
    :class:`_U` (the results then carry error bounds)."""
    q, u, lams, r = form.q, form.u, form.lams, form.r
    l, m, n, o, s, k = J["f_c"].shape[0], J["f_v"].shape[0], len(q), len(u), len(r), len(lams)
    cq, cu = [seeds[x] for x in q], [seeds[x] for x in u]
    cqd = [seeds[x] for x in form.qdot]
    cqd_dup = [None if d else seeds[x] for x, d in zip(form.qdot, form.qdot_dup)]
    cud, cr, cl = [seeds[x] for x in form.udot], [seeds[x] for x in r], [seeds[x] for x in lams]
    Z = np.zeros
    # permutation matrices
    Pq = _perm(q, form.q_i + form.q_d) if n else Z((0, 0))
    Pqi, Pqd = (Pq[:, :-l], Pq[:, -l:]) if l else (Pq, Z((n, 0)))
    Pu = _perm(u, form.u_i + form.u_d) if o else Z((0, 0))
    Pui, Pud = (Pu[:, :-m], Pu[:, -m:]) if m else (Pu, Z((o, 0)))
    perm_mat = np.block([[Pqi, Z((n, o - m))], [Z((o + k, n - l)), np.vstack([Pui, Z((k, o - m))])]])
    # coefficient matrices
    if l:
        fcq = _cols(J["f_c"], cq)
        C0 = (np.eye(n) - Pqd @ _solve(fcq @ Pqd, fcq, "q_dep", f"the configuration-constraint Jacobian "
                                       f"d f_c / d q_dep with q_dep = {form.q_d}")) @ Pqi
    else:
        C0 = np.eye(n)
    if m:
        fvu = _cols(J["f_v"], cu)
        temp = fvu @ Pud
        what = f"the velocity-constraint Jacobian d f_v / d u_dep with u_dep = {form.u_d}"
        C1 = -Pud @ _solve(temp, _cols(J["f_v"], cq), "u_dep", what) if n else Z((o, n))
        C2 = (np.eye(o) - Pud @ _solve(temp, fvu, "u_dep", what)) @ Pui
    else:
        C1, C2 = Z((o, n)), np.eye(o)
    nd = o - m + k
    J023 = J["f_2"] + J["f_3"]
    M_qq, A_qq = _cols(J["f_0"], cqd), -_cols(J["f_0"] + J["f_1"], cq)
    M_uqc, A_uqc = _cols(J["f_a"], cqd_dup), -_cols(J["f_a"], cq)
    M_uqd, A_uqd = _cols(J["f_3"], cqd_dup), -_cols(J023 + J["f_4"], cq)
    M_uuc, A_uuc = _cols(J["f_a"], cud), -_cols(J["f_a"], cu)
    M_uud, A_uud = _cols(J["f_2"], cud), -_cols(J023, cu)
    A_qu = -_cols(J["f_1"], cu)
    M_uld = _cols(J["f_4"], cl)
    B_u = -_cols(J["f_3"], cr)
    M = _block([[M_qq, Z((n, o)), Z((n, k))],
                [M_uqc.reshape(m, n), M_uuc.reshape(m, o), Z((m, k))],
                [M_uqd.reshape(nd, n), M_uud.reshape(nd, o), M_uld.reshape(nd, k)]])
    col1 = _stack(np.vstack, [(A_qq + A_qu @ C1) @ C0, (A_uqc.reshape(m, n) + A_uuc.reshape(m, o) @ C1) @ C0,
                              (A_uqd.reshape(nd, n) + A_uud.reshape(nd, o) @ C1) @ C0])
    col2 = _stack(np.vstack, [A_qu @ C2, A_uuc.reshape(m, o) @ C2, A_uud.reshape(nd, o) @ C2])
    Amat = _stack(np.hstack, [col1, col2])
    Bmat = _stack(np.vstack, [Z((n + m, s)), B_u.reshape(nd, s)])
    if not A_and_B:
        return M, Amat, Bmat
    X = _solve(M, _stack(np.hstack, [Amat, Bmat]), "system", "the mass matrix M of the linearized equations")
    return None, perm_mat.T @ X[:, :Amat.shape[1]], perm_mat.T @ X[:, Amat.shape[1]:]


_KEYS = ("M", "A", "B")
_MAX_PREC = 512  # bits: the highest precision of a re-evaluation (about 154 digits; its error bounds
# are floats, which must not underflow)


def _with_errors(F: dict) -> dict:
    """The Jacobians of an evaluation as :class:`_U`."""
    return {name: _U(J, eJ) for name, (_, J, _, eJ) in F.items()}


def _scale(val, err):
    """The largest entry the matrix is known to have: max(|a_ij| - e_ij), at least 0."""
    if val is None or not val.size:
        return 0.0
    with np.errstate(invalid="ignore"):
        lo = np.abs(val) - err
    lo = lo[np.isfinite(lo)]
    return float(max(lo.max(initial=0.0), 0.0))


def _over(vals, errs, tol):
    """Per returned matrix, the entries whose error bound exceeds ``tol`` times the matrix's scale (that of
    all of them for a matrix with no known nonzero entry)."""
    scales = {k: _scale(vals[k], errs[k]) for k in vals if vals[k] is not None}
    common = max(scales.values(), default=0.0)
    return {k: ~(errs[k] <= tol * (scales[k] or common)) for k in scales}


def _names(key, mask):
    return [f"{key}[{i}, {j}]" for i, j in zip(*np.nonzero(mask))]


def _numeric_linearize(form: _Form, op: dict, A_and_B: bool, tol: float, constraint_tol: float,
                       max_precision: int) -> Linearization:
    for x in op:
        if not isinstance(x, sm.Basic):
            raise ProblemError(f"op_point[{x!r}]", "keys must be SymPy symbols or functions of time, as in the "
                               "equations", "linearize")
    values = {x: to_float(v, x) for x, v in op.items()}
    given = dict(values)
    completed = [x for x in dict.fromkeys(
        [x for x, d in zip(form.qdot, form.qdot_dup) if not d] + form.udot + form.lams) if x not in values]
    for x in completed:
        values[x] = 0.0
    num = _Numeric(form, values)
    try:
        F = num.evaluate()
    except _Missing:
        all_exprs = [e for name in _NAMES for exprs, _ in form.terms[name] for e in exprs]
        missing = sorted(collect_leaves(all_exprs) - values.keys(), key=sm.default_sort_key)
        raise ProblemError("op_point", f"no value for {', '.join(map(str, missing))}", "linearize") from None
    except ProblemError:
        _dependent_jacobians(form, num)  # the clearer reason, if it is that
        raise
    _check_constraints(form, F, num, constraint_tol)
    if completed:
        F = _complete(num, F, completed)
    out = _assemble(form, _with_errors(F), num.seeds, A_and_B)
    vals = {k: (None if x is None else x.v) for k, x in zip(_KEYS, out)}
    errs = {k: (None if x is None else x.e) for k, x in zip(_KEYS, out)}
    masks = {}
    if num.repaired:  # which returned entries depend on a repaired derivative: perturb those, compare
        rng = np.random.default_rng(1)
        J2 = {name: J.copy() for name, (_, J, _, _) in F.items()}
        for name, where in num.repaired_idx.items():
            for _, i, j in where:
                if j is not None:
                    J2[name][i, j] += rng.uniform(0.5, 1.5) * max(1.0, abs(J2[name][i, j]))
        out2 = _assemble(form, J2, num.seeds, A_and_B)
        for key, b in zip(_KEYS, out2):
            if vals[key] is not None:
                masks[key] = ~np.isclose(vals[key], b, rtol=1e-12, atol=0.0)
        warnings.warn(f"linearize: plain substitution gives nan/zoo/oo for {', '.join(num.repaired)}; "
                      "used the limit at the operating point instead (see .repaired, .repaired_entries)",
                      NsoptWarning, stacklevel=3)
    over = _over(vals, errs, tol)
    reevaluated, prec = [], None
    if any(m.any() for m in over.values()) and max_precision > 53:
        prec = _reevaluate(form, given, completed, A_and_B, F, num, vals, errs, over, tol, max_precision)
        reevaluated = [name for k in _KEYS if k in over for name in _names(k, over[k])]
        values = {**values, **num.values}
    over = _over(vals, errs, tol)
    inaccurate = [f"{name} (error up to {errs[k][i, j]:.2g})" for k in _KEYS if k in over
                  for name, (i, j) in zip(_names(k, over[k]), zip(*np.nonzero(over[k])))]
    if inaccurate:
        where = f"even at {prec} bits" if prec else "in floating point (max_precision=53)"
        warnings.warn(f"linearize: the estimated error of {', '.join(inaccurate)} is larger than tol = {tol:g} "
                      f"times the largest entry of its matrix, {where} (see .errors, .inaccurate)",
                      NsoptWarning, stacklevel=3)
    x = form.q_i + form.u_i
    return Linearization(vals["M"], vals["A"], vals["B"], sm.Matrix(form.r), A_and_B, x=x, op_point=values,
                         repaired=num.repaired, repaired_entries=masks,
                         errors={k: v for k, v in errs.items() if v is not None}, reevaluated=reevaluated,
                         inaccurate=inaccurate, precision=prec, tol=tol)


def _check_constraints(form: _Form, F: dict, num: _Numeric, tol: float):
    r"""Raise if the operating point violates a configuration (f_c) or velocity (f_v) constraint: its
    residual larger than ``tol`` times the constraint's size near the point,
    :math:`\max_j |\partial f_i/\partial x_j| \max(1, |x_j|)`, plus the bound on the residual's own
    rounding error."""
    for name, what, over in (("f_c", "configuration", form.q), ("f_v", "velocity", form.q + form.u)):
        v, J, ev, _ = F[name]
        if not len(v):
            continue
        cols = [num.seeds[x] for x in over]
        size = np.abs(J[:, cols]) * np.maximum(1.0, np.abs([num.values[x] for x in over]))
        size = size.max(axis=1, initial=0.0)
        with np.errstate(invalid="ignore"):
            bad = ~(np.abs(v) <= tol * size + ev)
        for i in np.flatnonzero(bad):
            expr = str([e for exprs, _ in form.terms[name] for e in exprs[i:i + 1]][0])
            expr = expr if len(expr) <= 120 else expr[:117] + "..."
            raise ProblemError("op_point", f"violates the {what} constraint {name}[{i}] = {expr}: its residual "
                               f"is {v[i]:.3g} at the operating point (more than constraint_tol = {tol:g} "
                               f"times its size {size[i]:.3g}); give {'coordinates' if name == 'f_c' else 'speeds'}"
                               " that satisfy the constraints (or a larger constraint_tol)", "linearize")


def _complete(num: _Numeric, F: dict, unknown: list, max_iter: int = 8):
    r"""Solve the equations of motion at the operating point for the :math:`\dot q, \dot u, \lambda`
    the operating point leaves out (Newton; one step, since they enter linearly), and bound the
    distance of the result to the exact solution: with the residual's bound :math:`e_r` and the
    Jacobian's :math:`e_J`, :math:`|z - z^*| \le 2 |J_z^+| (e_r + e_J \|\Delta z\|_1 + 4 k u |J_z||\Delta z|)`
    (the factor 2 for the first-order terms). These bounds are the unknowns' input errors in the
    evaluation that follows, so that they reach the Jacobians' bounds."""
    cols = [num.seeds[x] for x in unknown]
    u = num.u
    mp = num.prec is not None
    for _ in range(max_iter):
        res = np.concatenate([F["f_0"][0] + F["f_1"][0], F["f_a"][0], F["f_2"][0] + F["f_3"][0] + F["f_4"][0]])
        e_res = np.concatenate([F["f_0"][2] + F["f_1"][2], F["f_a"][2],
                                F["f_2"][2] + F["f_3"][2] + F["f_4"][2]]).astype(float)
        Jz = np.vstack([F["f_0"][1] + F["f_1"][1], F["f_a"][1], F["f_2"][1] + F["f_3"][1] + F["f_4"][1]])[:, cols]
        eJz = np.vstack([F["f_0"][3] + F["f_1"][3], F["f_a"][3], F["f_2"][3] + F["f_3"][3] + F["f_4"][3]])[:, cols]
        Jzf = Jz.astype(float)
        scale = max(1.0, float(np.abs(Jzf).max(initial=0.0)))
        if np.all(np.abs(res.astype(float)) <= e_res + 8 * float(u) * scale):
            break
        if mp:
            mpm = _mp()
            with mpm.workprec(num.prec):
                dz = -mpm.qr_solve(mpm.matrix(Jz.tolist()), mpm.matrix(res.tolist()))[0]
                dz = np.array([dz[i] for i in range(len(cols))], dtype=object)
        else:
            dz = np.linalg.lstsq(Jzf, -res, rcond=None)[0]
        adz = np.abs(dz.astype(float))
        pinv = np.abs(np.linalg.pinv(Jzf))
        e_z = 2 * pinv @ (e_res + eJz @ adz + 4 * len(cols) * float(u) * (np.abs(Jzf) @ adz))
        for x, d, e in zip(unknown, dz, e_z):
            num.values[x] += d
            num.errors[x] = e + float(u) * abs(float(num.values[x]))
        F = num.evaluate()
    return F


def _reevaluate(form, given, completed, A_and_B, F, num, vals, errs, over, tol, max_prec):
    """Re-evaluate in mpmath, from 128 bits and doubling up to ``max_prec``, until the entries in ``over``
    have error bounds within ``tol``; replace those entries (and their bounds) in ``vals``, ``errs``.
    Jacobian entries the float evaluation repaired by a limit (nan in any precision) keep the limit.
    Returns the precision used; ``num.values`` gets the completed unknowns at that precision."""
    mp = _mp()
    prec = min(128, max_prec)
    while True:
        mpn = _Numeric(form, {x: mp.mpf(v) for x, v in given.items()}, prec=prec)
        for x in completed:
            mpn.values[x] = mp.mpf(num.values[x])  # the float solution as the starting point
        Fm = mpn.evaluate()
        if completed:
            Fm = _complete(mpn, Fm, completed)
        J = {}
        for name, (_, Jm, _, eJm) in Fm.items():
            Jf = Jm.astype(float)
            eJ = eJm + Evaluator.u * np.abs(Jf)
            bad = ~np.isfinite(Jf) | ~np.isfinite(eJ)
            if bad.any():  # where the limit was needed: keep it
                Jf[bad], eJ[bad] = F[name][1][bad], F[name][3][bad]
            J[name] = _U(Jf, eJ)
        out = _assemble(form, J, num.seeds, A_and_B)
        new_vals = {k: x.v for k, x in zip(_KEYS, out) if x is not None}
        new_errs = {k: x.e for k, x in zip(_KEYS, out) if x is not None}
        done = _over(new_vals, new_errs, tol)
        if not any((done[k] & over[k]).any() for k in over) or prec >= max_prec:
            break
        prec = min(2 * prec, max_prec)
    for k in over:
        take = over[k] & (new_errs[k] < errs[k])
        vals[k][take], errs[k][take] = new_vals[k][take], new_errs[k][take]
    num.values.update({x: float(mpn.values[x]) for x in completed})
    return prec


# ---------------------------------------------------------------------------------------------
# symbolic path

def _finite_subs(mat, op: dict, repaired: list, name: str):
    """``msubs(mat, op)``, entry by entry; where that gives nan/zoo/oo, the limit, one variable at a time."""
    out = me.msubs(mat, op)
    bad = (sm.nan, sm.zoo, sm.oo, -sm.oo)
    for idx in range(len(out)):
        if not out[idx].has(*bad):
            continue
        e = mat[idx]
        leaves = sorted(op, key=lambda x: (not x.is_Derivative, sm.default_sort_key(x)))
        dummies = {x: sm.Dummy(str(x)) for x in leaves}
        e = me.msubs(e, dummies)
        for x in leaves:
            d, v = dummies[x], op[x]
            new = e.xreplace({d: v})
            if new.has(*bad):
                new = sm.limit(e, d, v, "+-")
            e = new
        if e.has(*bad):
            raise ProblemError("op_point", f"{name}[{idx // out.cols}, {idx % out.cols}] has no finite limit "
                               "at the operating point", "linearize")
        out[idx] = e.xreplace({d: x for x, d in dummies.items()})
        repaired.append(f"{name}[{idx // out.cols}, {idx % out.cols}]")
    return out


def _symbolic_linearize(system, op, A_and_B, args) -> Linearization:
    form = _form_of(system, *args, fast=False)
    lin = form.linearizer
    M, A, B = lin.linearize(op_point=None, A_and_B=False)
    repaired: list[str] = []
    M, A = _finite_subs(M, op, repaired, "M"), _finite_subs(A, op, repaired, "A")
    B = _finite_subs(B, op, repaired, "B") if len(B) else B
    if A_and_B:
        A_, B_ = lin.perm_mat.T * M.LUsolve(A), (lin.perm_mat.T * M.LUsolve(B) if len(B) else B)
        M, A, B = None, A_, B_
    if repaired:
        warnings.warn(f"linearize: plain substitution gives nan/zoo/oo for {', '.join(repaired)}; "
                      "used the limit at the operating point instead", NsoptWarning, stacklevel=3)
    return Linearization(M, A, B, lin.r, A_and_B, x=form.q_i + form.u_i, op_point=op, repaired=repaired)


def linearize(system, op_point=None, A_and_B: bool = True, q_ind=None, qd_ind=None, q_dep=None,
              qd_dep=None, symbolic: bool = False, *, tol: float = 1e-10, constraint_tol: float = 1e-8,
              max_precision: int = 512) -> Linearization:
    r"""Linearize SymPy equations of motion about an operating point, numerically and without nan.

    The equations are SymPy's general form (``sympy.physics.mechanics.Linearizer``)

    .. math::
        f_c(q) = 0,\quad f_v(q, u) = 0,\quad f_a(q, \dot q, u, \dot u) = 0,\quad
        f_0(q, \dot q) + f_1(q, u) = 0,\quad f_2(q, u, \dot u) + f_3(q, \dot q, u, r) + f_4(q, \lambda) = 0,

    and the result is SymPy's [1]_, entry by entry: :math:`M [\delta\dot q; \delta\dot u;
    \delta\lambda] = A [\delta q_i; \delta u_i] + B \delta r`, or with ``A_and_B=True``
    :math:`[\delta\dot q_i; \delta\dot u_i] = A [\delta q_i; \delta u_i] + B \delta r`, with the
    dependent coordinates and speeds eliminated through
    :math:`C_0 = (I - P_{qd} (f_{c,q} P_{qd})^{-1} f_{c,q}) P_{qi}` and its velocity analogues.

    Unlike SymPy, nothing is differentiated or solved symbolically: the Jacobians of the general
    form are evaluated at the operating point by forward-mode automatic differentiation over the
    expression graph (each shared subexpression once), and the linear algebra is dense LU in
    floating point. Where plain substitution gives nan, zoo or oo (``sin(q)/tan(q)`` at q = 0, a
    removable singularity inside the equations), the derivative is the limit at the operating point
    (Richardson extrapolation of symmetric means along a random direction), with a warning and the
    list in ``result.repaired``.

    **Accuracy.** Near such a point (a linkage whose symbolic LU pivot, in KanesMethod's elimination
    of the dependent speeds, vanishes at a configuration), nothing is singular but the expressions
    carry terms of size :math:`1/\delta` that cancel: in floating point their evaluation may lose
    every digit (SymPy's too). So every value and Jacobian entry carries a running bound on its
    rounding error (see ``Evaluator``), through the accelerations the operating point leaves out and
    through the dense algebra; ``result.errors`` holds the bound of each returned entry. Where it
    exceeds ``tol`` times the largest entry of the matrix, the equations are evaluated again in
    mpmath at 128 bits, then 256, ... up to ``max_precision``, until those entries' bounds are
    within ``tol``; they are listed in ``result.reevaluated``. An entry still above ``tol`` is listed
    in ``result.inaccurate``, with a warning. The bounds are rigorous to first order in the unit
    roundoff (with a factor 2 of room) except where a limit was taken, whose error is Richardson's
    estimate, doubled. On a well-conditioned system they cost about as much again as the evaluation.

    **Constraints.** The operating point must satisfy the configuration and velocity constraints:
    a residual larger than ``constraint_tol`` times the constraint's size there
    (:math:`\max_j |\partial f_i / \partial x_j| \max(1, |x_j|)`) raises, naming the constraint.

    Parameters
    ----------
    system : KanesMethod, LagrangesMethod, sympy.physics.mechanics.System or Linearizer
        With its equations of motion formed.
    op_point : dict or list of dicts
        A number for every coordinate, speed, parameter and input in the equations. The values of
        :math:`\dot q, \dot u, \lambda` it leaves out are solved from the equations of motion at
        that point (so an equilibrium needs only q, u, the parameters and the inputs).
    A_and_B : bool
        Return ``(A, B, r)`` (default) rather than ``(M, A, B, r)``.
    q_ind, qd_ind, q_dep, qd_dep : list, optional
        For a LagrangesMethod, as in its ``to_linearizer`` (default: every coordinate independent,
        when there are no constraints).
    symbolic : bool
        Return SymPy matrices from SymPy's own symbolic linearization (the operating point may then
        be partial or symbolic), with nan/zoo/oo entries replaced by limits.
    tol : float
        The accepted error of a returned entry, relative to the largest entry of its matrix
        (default 1e-10); entries whose error bound is larger are evaluated again in extended precision.
    constraint_tol : float
        The accepted residual of a constraint at the operating point, relative to its size there
        (default 1e-8).
    max_precision : int
        The highest precision, in bits, of a re-evaluation (default and at most 512; 53: none, the
        inaccurate entries are only reported).

    Returns
    -------
    Linearization
        A tuple ``(A, B, r)`` or ``(M, A, B, r)`` of numpy arrays and the input vector, with
        ``.x``, ``.op_point``, ``.repaired``, ``.errors``, ``.reevaluated``, ``.inaccurate`` (see
        :class:`Linearization`).

    Raises
    ------
    ProblemError
        Equations not formed; an operating point that misses a variable or gives a non-numeric
        value (named); dependent coordinates or speeds singular at the operating point (naming
        them and the singular constraint Jacobian); a true (non-removable) singularity; an operating
        point that violates a configuration or velocity constraint (naming it and its residual).
    OptionError
        ``tol``, ``constraint_tol`` or ``max_precision`` out of range.

    References
    ----------
    .. [1] D. L. Peterson, G. Gede, M. Hubbard, "Symbolic linearization of equations of motion of
       constrained multibody systems", Multibody Syst. Dyn. 33(2), 143-161, 2015.

    Examples
    --------
    A pendulum of length 2 under gravity 9.8, about its lowest position:

    >>> import sympy as sm, sympy.physics.mechanics as me
    >>> from nsopt import symbolic
    >>> q, u = me.dynamicsymbols("q u"); L, g = sm.symbols("L g")
    >>> N = me.ReferenceFrame("N"); O = me.Point("O"); O.set_vel(N, 0)
    >>> A = N.orientnew("A", "axis", [q, N.z]); A.set_ang_vel(N, u * N.z)
    >>> P = O.locatenew("P", L * A.x); _ = P.v2pt_theory(O, N, A)
    >>> KM = me.KanesMethod(N, [q], [u], kd_eqs=[q.diff() - u])
    >>> _ = KM.kanes_equations([me.Particle("p", P, 1)], [(P, g * N.x)])
    >>> lin = symbolic.linearize(KM, {q: 0.0, u: 0.0, L: 2.0, g: 9.8})
    >>> A, B, r = lin
    >>> A.round(6).tolist()
    [[0.0, 1.0], [-4.9, 0.0]]
    >>> len(lin), lin.M, lin.x, lin.B.shape, lin.repaired, lin.inaccurate
    (3, None, [q(t), u(t)], (2, 0), [], [])

    With ``A_and_B=False``, the form ``(M, A, B, r)``:

    >>> M, A, B, r = symbolic.linearize(KM, {q: 0.0, u: 0.0, L: 2.0, g: 9.8}, A_and_B=False)
    >>> M.round(6).tolist(), A.round(6).tolist()
    ([[1.0, 0.0], [0.0, -4.0]], [[0.0, 1.0], [19.6, 0.0]])
    """
    op = _merge_op(op_point)
    args = (q_ind, qd_ind, q_dep, qd_dep)
    if symbolic:
        return _symbolic_linearize(system, op, A_and_B, args)
    for name, v in (("tol", tol), ("constraint_tol", constraint_tol)):
        if not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1):
            raise OptionError(f"linearize: {name} must be a number in (0, 1), got {v!r}")
    if not (isinstance(max_precision, int) and not isinstance(max_precision, bool) and max_precision > 0):
        raise OptionError(f"linearize: max_precision must be a positive number of bits, got {max_precision!r}")
    if max_precision > _MAX_PREC:
        raise OptionError(f"linearize: max_precision is at most {_MAX_PREC} bits (the error bounds are floats), "
                          f"got {max_precision}")
    return _numeric_linearize(_form_of(system, *args), op, A_and_B, float(tol), float(constraint_tol),
                              max_precision)
