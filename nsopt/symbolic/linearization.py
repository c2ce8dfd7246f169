"""Numeric, nan-free linearization of SymPy equations of motion (KanesMethod, LagrangesMethod, System, Linearizer)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import sympy as sm
import sympy.physics.mechanics as me
from sympy.core.function import AppliedUndef

from ..exceptions import NsoptWarning, OptionError, ProblemError
from ._autodiff import Evaluator, _Missing, collect_leaves, limit_jacobian, to_float

__all__ = ["linearize", "Linearization"]

_t = me.dynamicsymbols._t
_NAMES = ("f_0", "f_1", "f_2", "f_3", "f_4", "f_c", "f_v", "f_a")


class Linearization(tuple):
    r"""The linearized equations of motion: a tuple ``(A, B, r)`` (``A_and_B=True``) or ``(M, A, B, r)``.

    It unpacks and indexes like SymPy's ``KanesMethod.linearize(...)`` result. Attributes:

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
    """

    def __new__(cls, M, A, B, r, A_and_B, **info):
        self = super().__new__(cls, (A, B, r) if A_and_B else (M, A, B, r))
        self.M, self.A, self.B, self.r = (None if A_and_B else M), A, B, r
        self.x = info.get("x", [])
        self.op_point = info.get("op_point", {})
        self.repaired = info.get("repaired", [])
        self.repaired_entries = info.get("repaired_entries", {})
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
    qd, qd_dup = list(lin._qd), list(lin._qd_dup)
    return _Form(terms, list(lin.q), list(lin.u), _flat(lin.q_i), _flat(lin.q_d), _flat(lin.u_i),
                 _flat(lin.u_d), _flat(lin.r), _flat(lin.lams), qd, [a != b for a, b in zip(qd, qd_dup)],
                 list(lin._ud), linearizer=lin)


def _dynamic(leaves) -> set:
    """SymPy's ``find_dynamicsymbols`` on a set of variables (derivatives also give their function)."""
    out = set()
    for x in leaves:
        for y in ((x, x.expr) if x.is_Derivative else (x,)):
            if (isinstance(y, AppliedUndef) or y.is_Derivative) and y.free_symbols == {_t}:
                out.add(y)
    return out


def _form_kane(KM) -> _Form:
    """Kane's general form without SymPy's ``to_linearizer`` (whose ``msubs`` rebuild the equations)."""
    if KM._fr is None or KM._frstar is None:
        raise ProblemError("system", "equations of motion not formed: call KanesMethod.kanes_equations("
                           "bodies, loads) first", "linearize")
    if len(KM._uaux):
        return _form_from_linearizer(KM.to_linearizer())
    q, u, qdot, udot = list(KM.q), list(KM.u), list(KM._qdot), list(KM._udot)
    terms = {"f_0": [(_flat(KM._f_k), frozenset(u)), (_flat(KM._k_kqdot * sm.Matrix(qdot)), frozenset())],
             "f_1": [(_flat(KM._f_k), frozenset(qdot)), (_flat(KM._k_ku * sm.Matrix(u)), frozenset())],
             "f_2": [(_flat(KM._frstar), frozenset(qdot + u))],
             "f_3": [(_flat(KM._frstar), frozenset(udot)), (_flat(KM._fr), frozenset())],
             "f_4": [([sm.S.Zero] * len(KM._frstar), frozenset())],
             "f_c": [(_flat(KM._f_h), frozenset())],
             "f_v": [(_flat(KM._f_nh + KM._k_nh * sm.Matrix(u)) if len(KM._f_nh) and len(KM._k_nh) else [],
                      frozenset())],
             "f_a": [(_flat(KM._f_dnh + KM._k_dnh * sm.Matrix(udot)) if len(KM._f_dnh) and len(KM._k_dnh)
                      else [], frozenset())]}
    nd, nud = len(KM._qdep), len(KM._udep)
    r = sorted(_dynamic(collect_leaves(_flat(KM._f_d))) - set(q + qdot + u + udot), key=sm.default_sort_key)
    for x in r:
        if x.diff(_t) in r:
            raise ProblemError("system", f"derivative of the input {x} is also an input", "linearize")
    qdup = set(qdot) & set(u)
    return _Form(terms, q, u, q[:len(q) - nd], list(KM._qdep), u[:len(u) - nud], list(KM._udep), r, [],
                 qdot, [x in qdup for x in qdot], udot)


def _lagrange_linearizer(LM, q_ind, qd_ind, q_dep, qd_dep):
    if LM.eom is None:
        raise ProblemError("system", "equations of motion not formed: call "
                           "LagrangesMethod.form_lagranges_equations() first", "linearize")
    q = list(LM.q)
    if q_ind is None and q_dep is None:
        if len(LM._hol_coneqs) or len(LM.coneqs):
            raise ProblemError("q_dep", f"the system has {len(LM._hol_coneqs)} configuration and "
                               f"{len(LM.coneqs)} velocity constraints: give q_ind, qd_ind, q_dep, qd_dep",
                               "linearize")
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
            if system._fr is None or system._frstar is None:
                _form_kane(system)
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
    """Evaluates the general form's values and Jacobians at one numeric point."""

    def __init__(self, form: _Form, values: dict):
        self.form, self.values = form, values
        seeds = {}
        for x in form.q + form.qdot + form.u + form.udot + form.r + form.lams:
            seeds.setdefault(x, len(seeds))
        self.seeds, self.names = seeds, {i: x for x, i in seeds.items()}
        self.repaired: list[str] = []
        self.repaired_idx: dict = {}

    def evaluate(self, values=None):
        """``{name: (v, J)}`` for f_0 ... f_a, with removable singularities replaced by limits."""
        values = self.values if values is None else values
        self.repaired, self.repaired_idx = [], {}
        with np.errstate(all="ignore"):
            return self._evaluate(values)

    def _evaluate(self, values):
        evals, out = {}, {}
        for name in _NAMES:
            v = J = None
            for k, (exprs, zero) in enumerate(self.form.terms[name]):
                if not exprs:
                    continue
                ev = evals.get(zero) or evals.setdefault(zero, Evaluator(values, self.seeds, zero))
                tv, tJ = ev.jacobian(exprs)
                bad = ~(np.isfinite(tv) & np.all(np.isfinite(tJ), axis=1))
                if bad.any():
                    self._repair(name, k, exprs, zero, values, tv, tJ, bad)
                v, J = (tv, tJ) if v is None else (v + tv, J + tJ)
            if v is None:
                v, J = np.zeros(0), np.zeros((0, len(self.seeds)))
            out[name] = (v, J)
        return out

    def _repair(self, name, k, exprs, zero, values, tv, tJ, bad):
        rows = np.flatnonzero(bad)
        sub = [exprs[i] for i in rows]
        movable = sorted((collect_leaves(sub) & values.keys()) - zero, key=sm.default_sort_key)

        def ev(vals):
            return Evaluator(vals, self.seeds, zero).jacobian(sub)

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


def _cols(J, idx):
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


def _solve(Mat, rhs, field, what):
    """Dense LU solve; a singular (or numerically singular) matrix raises a ProblemError naming it."""
    if Mat.size:
        s = np.linalg.svd(Mat, compute_uv=False)
        if s[0] == 0.0 or s[-1] <= 1e-12 * s[0] or not np.all(np.isfinite(s)):
            raise ProblemError(field, f"{what} is singular at the operating point (singular values "
                               f"{np.array2string(s, precision=3)})", "linearize")
    return np.linalg.solve(Mat, rhs)


def _assemble(form: _Form, F: dict, seeds: dict, A_and_B: bool):
    """SymPy's Linearizer (_form_permutation_matrices, _form_block_matrices, _form_coefficient_matrices,
    linearize) with the Jacobians already numbers at the operating point."""
    q, u, lams, r = form.q, form.u, form.lams, form.r
    l, m, n, o, s, k = len(F["f_c"][0]), len(F["f_v"][0]), len(q), len(u), len(r), len(lams)
    cq, cu = [seeds[x] for x in q], [seeds[x] for x in u]
    cqd = [seeds[x] for x in form.qdot]
    cqd_dup = [None if d else seeds[x] for x, d in zip(form.qdot, form.qdot_dup)]
    cud, cr, cl = [seeds[x] for x in form.udot], [seeds[x] for x in r], [seeds[x] for x in lams]
    J = {name: F[name][1] for name in _NAMES}
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
    M = np.block([[M_qq, Z((n, o)), Z((n, k))],
                  [M_uqc.reshape(m, n), M_uuc.reshape(m, o), Z((m, k))],
                  [M_uqd.reshape(nd, n), M_uud.reshape(nd, o), M_uld.reshape(nd, k)]])
    col1 = np.vstack([(A_qq + A_qu @ C1) @ C0, (A_uqc.reshape(m, n) + A_uuc.reshape(m, o) @ C1) @ C0,
                      (A_uqd.reshape(nd, n) + A_uud.reshape(nd, o) @ C1) @ C0])
    col2 = np.vstack([A_qu @ C2, A_uuc.reshape(m, o) @ C2, A_uud.reshape(nd, o) @ C2])
    Amat = np.hstack([col1, col2])
    Bmat = np.vstack([Z((n + m, s)), B_u.reshape(nd, s)])
    if not A_and_B:
        return M, Amat, Bmat
    X = _solve(M, np.hstack([Amat, Bmat]), "system", "the mass matrix M of the linearized equations")
    return None, perm_mat.T @ X[:, :Amat.shape[1]], perm_mat.T @ X[:, Amat.shape[1]:]


def _numeric_linearize(form: _Form, op: dict, A_and_B: bool) -> Linearization:
    for x in op:
        if not isinstance(x, sm.Basic):
            raise ProblemError(f"op_point[{x!r}]", "keys must be SymPy symbols or functions of time, as in the "
                               "equations", "linearize")
    values = {x: to_float(v, x) for x, v in op.items()}
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
    if completed:
        F = _complete(num, F, completed)
    M, A, B = _assemble(form, F, num.seeds, A_and_B)
    masks = {}
    if num.repaired:  # which returned entries depend on a repaired derivative: perturb those, compare
        rng = np.random.default_rng(1)
        F2 = {name: (v, J.copy()) for name, (v, J) in F.items()}
        for name, where in num.repaired_idx.items():
            for _, i, j in where:
                if j is not None:
                    F2[name][1][i, j] += rng.uniform(0.5, 1.5) * max(1.0, abs(F2[name][1][i, j]))
        out2 = _assemble(form, F2, num.seeds, A_and_B)
        for key, a, b in zip(("M", "A", "B"), (M, A, B), out2):
            if a is not None:
                masks[key] = ~np.isclose(a, b, rtol=1e-12, atol=0.0)
        warnings.warn(f"linearize: plain substitution gives nan/zoo/oo for {', '.join(num.repaired)}; "
                      "used the limit at the operating point instead (see .repaired, .repaired_entries)",
                      NsoptWarning, stacklevel=3)
    x = form.q_i + form.u_i
    return Linearization(M, A, B, sm.Matrix(form.r), A_and_B, x=x, op_point=values, repaired=num.repaired,
                         repaired_entries=masks)


def _complete(num: _Numeric, F: dict, unknown: list, max_iter: int = 8):
    r"""Solve the equations of motion at the operating point for the :math:`\dot q, \dot u, \lambda`
    the operating point leaves out (Newton; one step, since they enter linearly)."""
    cols = [num.seeds[x] for x in unknown]
    for _ in range(max_iter):
        res = np.concatenate([F["f_0"][0] + F["f_1"][0], F["f_a"][0], F["f_2"][0] + F["f_3"][0] + F["f_4"][0]])
        Jz = np.vstack([F["f_0"][1] + F["f_1"][1], F["f_a"][1],
                        F["f_2"][1] + F["f_3"][1] + F["f_4"][1]])[:, cols]
        scale = max(1.0, float(np.abs(Jz).max(initial=0.0)))
        if np.abs(res).max(initial=0.0) <= 1e-13 * scale:
            break
        dz = np.linalg.lstsq(Jz, -res, rcond=None)[0]
        for x, d in zip(unknown, dz):
            num.values[x] += d
        F = num.evaluate()
    return F


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
              qd_dep=None, symbolic: bool = False) -> Linearization:
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

    Returns
    -------
    Linearization
        A tuple ``(A, B, r)`` or ``(M, A, B, r)`` of numpy arrays and the input vector, with
        ``.x``, ``.op_point``, ``.repaired`` (see :class:`Linearization`).

    Raises
    ------
    ProblemError
        Equations not formed; an operating point that misses a variable or gives a non-numeric
        value (named); dependent coordinates or speeds singular at the operating point (naming
        them and the singular constraint Jacobian); a true (non-removable) singularity.

    References
    ----------
    .. [1] D. L. Peterson, G. Gede, M. Hubbard, "Symbolic linearization of equations of motion of
       constrained multibody systems", Multibody Syst. Dyn. 33(2), 143-161, 2015.

    Examples
    --------
    >>> import sympy as sm, sympy.physics.mechanics as me
    >>> from nsopt import symbolic
    >>> q, u = me.dynamicsymbols("q u"); L, g = sm.symbols("L g")
    >>> N = me.ReferenceFrame("N"); O = me.Point("O"); O.set_vel(N, 0)
    >>> A = N.orientnew("A", "axis", [q, N.z]); A.set_ang_vel(N, u * N.z)
    >>> P = O.locatenew("P", L * A.x); _ = P.v2pt_theory(O, N, A)
    >>> KM = me.KanesMethod(N, [q], [u], kd_eqs=[q.diff() - u])
    >>> _ = KM.kanes_equations([me.Particle("p", P, 1)], [(P, g * N.x)])
    >>> A, B, r = symbolic.linearize(KM, {q: 0.0, u: 0.0, L: 2.0, g: 9.8})
    >>> A.round(6).tolist()
    [[0.0, 1.0], [-4.9, 0.0]]
    """
    op = _merge_op(op_point)
    args = (q_ind, qd_ind, q_dep, qd_dep)
    if symbolic:
        return _symbolic_linearize(system, op, A_and_B, args)
    return _numeric_linearize(_form_of(system, *args), op, A_and_B)
