"""symbolic.linearize near removable singularities of KanesMethod's elimination, against 50-digit references.

Two linkages whose dependent speeds KanesMethod eliminates by a symbolic LU solve with a pivot that
vanishes at a configuration where nothing is singular: a four-bar (pivot -l2 sin q2, zero with the
coupler horizontal) and a slider-crank (pivot -l2 sin q2, zero at the dead centre). At distances
1e-2 ... 1e-12 from that configuration the expressions carry terms of size 1/delta that cancel.
The reference is SymPy's own symbolic M, A, B (``Linearizer.linearize(simplify=False)``) evaluated in
mpmath at 50 digits at the same (float) operating point, the accelerations solved at 50 digits from
``mass_matrix_full`` and ``forcing_full``. Checked at every distance:

* in floating point only (``max_precision=53``), the error bound covers the true error of every entry;
* by default, every entry is within ``tol`` of the reference (relative to its matrix's largest entry)
  and its bound still covers its true error; the entries that needed it were re-evaluated.

``python tests/test_symbolic_accuracy.py`` prints the largest true and estimated errors per distance.
"""

import functools
import warnings

import numpy as np
import pytest

from conftest import need_extra

need_extra("symbolic")
import mpmath  # noqa: E402
import sympy as sm  # noqa: E402
import sympy.physics.mechanics as me  # noqa: E402

from nsopt import NsoptWarning  # noqa: E402
from nsopt import symbolic  # noqa: E402
from test_symbolic_linearize import four_bar as four_bar_system  # noqa: E402

t = me.dynamicsymbols._t
DPS = 50
DISTANCES = [1e-2, 1e-4, 1e-6, 1e-8, 1e-10, 1e-12]


def four_bar():
    """The four-bar of test_symbolic_linearize (crank q1 with torque T, coupler q2, rocker q3; q2, q3
    dependent), with lengths that make the coupler horizontal (q2 = 0) reachable:
    |l1 e(q1) + (l2 - l4) e_x| = l3."""
    KM, q, u, T, _ = four_bar_system("kane")
    q1, q2, q3 = q
    l1, l2, l3, l4, m1, m2, m3, g = sm.symbols("l1:5 m1:4 g")
    params = dict(zip((l1, l2, l3, l4, m1, m2, m3, g, T), (1.0, 2.5, 1.2, 2.0, 1.0, 1.5, 0.8, 9.81, 0.5)))
    mp = mpmath.mp

    def point(delta):
        """q2 = delta; q1, q3 from the loop closure, u2, u3 from the velocity constraints (50 digits)."""
        c = [mp.mpf(params[s]) for s in (l1, l2, l3, l4)]
        a2 = mp.mpf(delta)
        px, py = c[3] - c[1] * mp.cos(a2), -c[1] * mp.sin(a2)  # l1 e(q1) - l3 e(q3) = p
        r, phi = mp.sqrt(px ** 2 + py ** 2), mp.atan2(py, px)
        a1 = phi + mp.acos((c[0] ** 2 + r ** 2 - c[2] ** 2) / (2 * c[0] * r))
        a3 = mp.atan2(c[0] * mp.sin(a1) - py, c[0] * mp.cos(a1) - px)
        w1 = mp.mpf("0.7")  # d/dt (l1 e(q1) + l2 e(q2) - l3 e(q3)) = 0 for u2, u3
        Jd = mp.matrix([[-c[1] * mp.sin(a2), c[2] * mp.sin(a3)], [c[1] * mp.cos(a2), -c[2] * mp.cos(a3)]])
        w23 = mp.lu_solve(Jd, mp.matrix([c[0] * mp.sin(a1) * w1, -c[0] * mp.cos(a1) * w1]))
        return {**params, q1: float(a1), q2: float(a2), q3: float(a3), u[0]: float(w1), u[1]: float(w23[0]),
                u[2]: float(w23[1])}

    return KM, point


def slider_crank():
    """Crank q1 (torque T), rod q2, slider q3 on the x axis; q2, q3 dependent; dead centre at q1 = 0."""
    q1, q2, q3 = q = me.dynamicsymbols("q1:4")
    u = me.dynamicsymbols("u1:4")
    l1, l2, m1, m2, m3, g = sm.symbols("l1 l2 m1:4 g")
    T = me.dynamicsymbols("T")
    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)
    C = N.orientnew("C", "axis", [q1, N.z])
    C.set_ang_vel(N, u[0] * N.z)
    R = N.orientnew("R", "axis", [q2, N.z])
    R.set_ang_vel(N, u[1] * N.z)
    A = O.locatenew("A", l1 * C.x)
    A.v2pt_theory(O, N, C)
    G2 = A.locatenew("G2", l2 / 2 * R.x)
    G2.v2pt_theory(A, N, R)
    B = A.locatenew("B", l2 * R.x)
    B.v2pt_theory(A, N, R)
    S = O.locatenew("S", q3 * N.x)
    S.set_vel(N, u[2] * N.x)
    f_c = sm.Matrix([B.pos_from(O).dot(N.x) - q3, B.pos_from(O).dot(N.y)])
    f_v = sm.Matrix([B.vel(N).dot(N.x) - u[2], B.vel(N).dot(N.y)])
    rod = me.RigidBody("rod", G2, R, m2, (me.inertia(R, 0, 0, m2 * l2 ** 2 / 12), G2))
    parts = [me.Particle("crank", A, m1), rod, me.Particle("slider", S, m3)]
    loads = [(A, -m1 * g * N.y), (G2, -m2 * g * N.y), (S, -m3 * g * N.y), (C, T * N.z)]
    KM = me.KanesMethod(N, [q1], [u[0]], kd_eqs=[qi.diff(t) - ui for qi, ui in zip(q, u)],
                        q_dependent=[q2, q3], configuration_constraints=f_c, u_dependent=u[1:],
                        velocity_constraints=f_v)
    KM.kanes_equations(parts, loads)
    params = dict(zip((l1, l2, m1, m2, m3, g, T), (0.4, 1.1, 0.5, 1.2, 2.0, 9.81, -0.3)))
    mp = mpmath.mp

    def point(delta):
        c1, c2 = mp.mpf(params[l1]), mp.mpf(params[l2])
        a1 = mp.mpf(delta)
        a2 = mp.asin(-c1 * mp.sin(a1) / c2)
        a3 = c1 * mp.cos(a1) + c2 * mp.cos(a2)
        w1 = mp.mpf("1.3")
        w2 = -c1 * mp.cos(a1) * w1 / (c2 * mp.cos(a2))
        w3 = -c1 * mp.sin(a1) * w1 - c2 * mp.sin(a2) * w2
        return {**params, q1: float(a1), q2: float(a2), q3: float(a3), u[0]: float(w1), u[1]: float(w2),
                u[2]: float(w3)}

    return KM, point


SYSTEMS = {"four_bar": four_bar, "slider_crank": slider_crank}


@functools.lru_cache(maxsize=None)
def system(name):
    """The system, its point(delta), and its reference(op) -> (A, B) at 50 digits."""
    KM, point = SYSTEMS[name]()
    lin = KM.to_linearizer()
    M, A, B = lin.linearize(A_and_B=False, simplify=False)
    P = np.array(lin.perm_mat.T, dtype=float)
    xdot = [v.diff(t) for v in list(KM.q) + list(KM.u)]
    cache = {}

    def reference(op):
        mp = mpmath.mp
        with mp.workdps(DPS):
            keys = list(op)
            if "eom" not in cache:
                cache["eom"] = sm.lambdify(keys, [KM.mass_matrix_full, KM.forcing_full], modules="mpmath")
                cache["lin"] = sm.lambdify(keys + xdot, [M, A, B], modules="mpmath")
            vals = [mp.mpf(v) for v in op.values()]  # the float operating point, exactly
            Mf, Ff = cache["eom"](*vals)
            rates = mp.lu_solve(mp.matrix(Mf), mp.matrix(Ff))
            Mn, An, Bn = cache["lin"](*vals, *[rates[i] for i in range(len(xdot))])
            Minv = mp.inverse(mp.matrix(Mn))
            Pm = mp.matrix(P.tolist())
            Ar, Br = Pm * (Minv * mp.matrix(An)), Pm * (Minv * mp.matrix(Bn))
            return (np.array(Ar.tolist(), dtype=float), np.array(Br.tolist(), dtype=float))

    return KM, point, reference


def case(name, delta):
    """The system, the operating point at ``delta`` from its vanishing pivot, and the 50-digit A, B there."""
    KM, point, reference = system(name)
    op = point(delta)
    return (KM, op, *reference(op))


def errors(res, A_ref, B_ref):
    """The true error and the bound of every entry of A and B, stacked."""
    true = np.concatenate([np.abs(res.A - A_ref).ravel(), np.abs(res.B - B_ref).ravel()])
    bound = np.concatenate([res.errors["A"].ravel(), res.errors["B"].ravel()])
    return true, bound


@pytest.mark.parametrize("delta", DISTANCES)
@pytest.mark.parametrize("name", list(SYSTEMS))
def test_bound_covers_the_error_in_floating_point(name, delta):
    KM, op, A_ref, B_ref = case(name, delta)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NsoptWarning)  # the inaccurate entries are reported: checked below
        res = symbolic.linearize(KM, op, max_precision=53)
    true, bound = errors(res, A_ref, B_ref)
    assert np.all(true <= bound), (true, bound)
    assert res.reevaluated == [] and res.precision is None
    # an entry whose true error exceeds tol is never returned without saying so
    reported = {x.split(" (")[0] for x in res.inaccurate}
    for X, X_ref, key in ((res.A, A_ref, "A"), (res.B, B_ref, "B")):
        wrong = np.abs(X - X_ref) > res.tol * np.abs(X_ref).max()
        assert {f"{key}[{i}, {j}]" for i, j in zip(*np.nonzero(wrong))} <= reported


@pytest.mark.parametrize("delta", DISTANCES)
@pytest.mark.parametrize("name", list(SYSTEMS))
def test_reevaluated_entries_are_accurate(name, delta):
    KM, op, A_ref, B_ref = case(name, delta)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NsoptWarning)  # nothing left inaccurate, nothing repaired
        res = symbolic.linearize(KM, op)
    true, bound = errors(res, A_ref, B_ref)
    assert np.all(true <= bound), (true, bound)
    for X, X_ref, key in ((res.A, A_ref, "A"), (res.B, B_ref, "B")):
        scale = np.abs(X_ref).max()
        assert np.abs(X - X_ref).max() <= res.tol * scale, key
        assert res.errors[key].max() <= res.tol * scale * (1 + 1e-8), key
    assert res.inaccurate == []
    if delta <= 1e-6:  # there the floating-point evaluation cannot be trusted: it was done again
        assert res.reevaluated and res.precision >= 128
    # the re-evaluated entries are the ones whose floating-point bound was above tol
    float_res = _float_only(KM, op)
    over = float_res.errors["A"] > res.tol * np.abs(res.A).max()
    assert {f"A[{i}, {j}]" for i, j in zip(*np.nonzero(over))} <= set(res.reevaluated)


def _float_only(KM, op):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NsoptWarning)
        return symbolic.linearize(KM, op, max_precision=53)


def test_regular_point_needs_no_reevaluation():
    """Far from the vanishing pivot the floating-point bound is small and nothing is re-evaluated."""
    KM, point, reference = system("four_bar")
    op = point(0.8)
    res = symbolic.linearize(KM, op)
    A_ref, B_ref = reference(op)
    true, bound = errors(res, A_ref, B_ref)
    assert np.all(true <= bound)
    assert res.reevaluated == [] and res.precision is None
    assert res.errors["A"].max() <= 1e-11 * np.abs(A_ref).max()  # pessimistic by about 1e3, still far below tol


def table():
    """The largest true and estimated errors, relative to the largest entry of A, per system and distance."""
    rows = []
    for name in SYSTEMS:
        for delta in DISTANCES:
            KM, op, A_ref, B_ref = case(name, delta)
            scale = np.abs(A_ref).max()
            f = _float_only(KM, op)
            r = symbolic.linearize(KM, op)
            rows.append((name, delta, np.abs(f.A - A_ref).max() / scale, f.errors["A"].max() / scale,
                         np.abs(r.A - A_ref).max() / scale, r.errors["A"].max() / scale, len(r.reevaluated),
                         r.precision))
    return rows


if __name__ == "__main__":
    print(f"{'system':13s} {'delta':>6s} | {'float: true':>11s} {'bound':>8s} | {'returned: true':>14s} {'bound':>8s}"
          f" {'re-evaluated':>12s} {'bits':>5s}   (errors relative to max |A|)")
    for name, d, ft, fb, rt, rb, n, prec in table():
        print(f"{name:13s} {d:6.0e} | {ft:11.1e} {fb:8.1e} | {rt:14.1e} {rb:8.1e} {n:12d} {prec or '-':>5}")
