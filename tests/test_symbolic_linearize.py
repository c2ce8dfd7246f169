"""nsopt.symbolic.linearize against SymPy's own Linearizer, entry by entry, and its nan-free and error paths."""

import warnings

import numpy as np
import pytest

from conftest import need_extra

need_extra("symbolic")
import sympy as sm  # noqa: E402
import sympy.physics.mechanics as me  # noqa: E402

from nsopt import NsoptWarning, OptionError, ProblemError  # noqa: E402
from nsopt import symbolic  # noqa: E402

t = me.dynamicsymbols._t
TOL = 1e-10


def assert_entrywise(ours, ref, tol=TOL):
    """Every entry within tol, relative to the matrix's largest entry (and at least absolute tol)."""
    ref = np.asarray(ref, dtype=float)
    ours = np.asarray(ours, dtype=float)
    if ref.size == 0:
        assert ours.size == 0
        return
    assert ours.shape == ref.shape
    scale = max(1.0, np.abs(ref).max())
    assert np.abs(ours - ref).max() <= tol * scale, (ours, ref)


def compare(system, op, sympy_lin, **kw):
    """nsopt in both forms against SymPy's Linearizer at nsopt's completed operating point."""
    res = symbolic.linearize(system, op_point=op, A_and_B=True, **kw)
    full = dict(res.op_point)
    A_ref, B_ref = sympy_lin().linearize(A_and_B=True, op_point=full)
    assert_entrywise(res.A, A_ref)
    assert_entrywise(res.B, B_ref)
    M, A, B, r = symbolic.linearize(system, op_point=op, A_and_B=False, **kw)
    M_ref, A_ref2, B_ref2 = sympy_lin().linearize(A_and_B=False, op_point=full)
    assert_entrywise(M, M_ref)
    assert_entrywise(A, A_ref2)
    assert_entrywise(B, B_ref2)
    assert list(r) == list(sympy_lin().r)
    return res


# ------------------------------------------------------------------------------------ systems

def pendulum_kane(extra_force=None):
    """SymPy's documentation pendulum (Kane); extra_force(q1) adds a force along N.y at P."""
    q1, u1 = me.dynamicsymbols("q1 u1")
    L, m, g = sm.symbols("L m g")
    N = me.ReferenceFrame("N")
    pN = me.Point("N*")
    pN.set_vel(N, 0)
    A = N.orientnew("A", "axis", [q1, N.z])
    A.set_ang_vel(N, u1 * N.z)
    P = pN.locatenew("P", L * A.x)
    P.v2pt_theory(pN, N, A)
    loads = [(P, m * g * N.x + (extra_force(q1) * N.y if extra_force else 0 * N.y))]
    KM = me.KanesMethod(N, q_ind=[q1], u_ind=[u1], kd_eqs=[q1.diff(t) - u1])
    KM.kanes_equations([me.Particle("pP", P, m)], loads)
    return KM, (q1, u1, L, m, g)


def pendulum_lagrange(torque=None):
    q1 = me.dynamicsymbols("q1")
    L, m, g = sm.symbols("L m g")
    N = me.ReferenceFrame("N")
    pN = me.Point("N*")
    pN.set_vel(N, 0)
    A = N.orientnew("A", "axis", [q1, N.z])
    A.set_ang_vel(N, q1.diff(t) * N.z)
    P = pN.locatenew("P", L * A.x)
    P.v2pt_theory(pN, N, A)
    pP = me.Particle("pP", P, m)
    forces = [(P, m * g * N.x)] + ([(A, torque(q1) * N.z)] if torque else [])
    LM = me.LagrangesMethod(me.Lagrangian(N, pP), [q1], forcelist=forces, frame=N)
    LM.form_lagranges_equations()
    return LM, (q1, L, m, g)


def pendulum_nonminimal_kane():
    """SymPy's tutorial pendulum in Cartesian coordinates with the length as configuration constraint."""
    q1, q2 = dynamicsymbols = me.dynamicsymbols("q1:3")
    q1d, q2d = me.dynamicsymbols("q1:3", level=1)
    u1, u2 = me.dynamicsymbols("u1:3")
    L, m, g = sm.symbols("L m g")
    N = me.ReferenceFrame("N")
    pN = me.Point("N*")
    pN.set_vel(N, 0)
    A = N.orientnew("A", "axis", [sm.atan(q2 / q1), N.z])
    P = pN.locatenew("P1", q1 * N.x + q2 * N.y)
    kde = sm.Matrix([q1d - u1, q2d - u2])
    P.set_vel(N, P.pos_from(pN).dt(N).subs(sm.solve(kde, [q1d, q2d])))
    f_c = sm.Matrix([P.pos_from(pN).magnitude() - L])
    f_v = sm.Matrix([P.vel(N).express(A).dot(A.x)])
    f_v.simplify()
    f_a = f_v.diff(t)
    f_a.simplify()
    KM = me.KanesMethod(N, q_ind=[q2], u_ind=[u2], q_dependent=[q1], u_dependent=[u1],
                        configuration_constraints=f_c, velocity_constraints=f_v,
                        acceleration_constraints=f_a, kd_eqs=kde)
    KM.kanes_equations([me.Particle("pP", P, m)], [(P, m * g * N.x)])
    return KM, (*dynamicsymbols, u1, u2, L, m, g)


def pendulum_nonminimal_lagrange():
    q1, q2 = me.dynamicsymbols("q1:3")
    L, m, g = sm.symbols("L m g")
    N = me.ReferenceFrame("N")
    pN = me.Point("N*")
    pN.set_vel(N, 0)
    P = pN.locatenew("P1", q1 * N.x + q2 * N.y)
    P.set_vel(N, P.pos_from(pN).dt(N))
    LM = me.LagrangesMethod(me.Lagrangian(N, me.Particle("pP", P, m)), [q1, q2],
                            hol_coneqs=sm.Matrix([q1 ** 2 + q2 ** 2 - L ** 2]), forcelist=[(P, m * g * N.x)],
                            frame=N)
    LM.form_lagranges_equations()
    return LM, (q1, q2, L, m, g)


def rolling_disc_kane():
    """SymPy's test_linearize_rolling_disc_kane: nonholonomic, with a configuration constraint."""
    r, m, g = sm.symbols("r m g")
    q1, q2, q3, q4, q5, q6 = q = me.dynamicsymbols("q1:7")
    qd = [qi.diff(t) for qi in q]
    u1, u2, u3, u4, u5, u6 = u = me.dynamicsymbols("u1:7")
    N = me.ReferenceFrame("N")
    NO = me.Point("NO")
    A = N.orientnew("A", "Axis", [q1, N.z])
    B = A.orientnew("B", "Axis", [q2, A.x])
    C = B.orientnew("C", "Axis", [q3, B.y])
    CO = NO.locatenew("CO", q4 * N.x + q5 * N.y + q6 * N.z)
    w_c_n_qd, w_b_n_qd = C.ang_vel_in(N), B.ang_vel_in(N)
    C.set_ang_vel(N, u1 * B.x + u2 * B.y + u3 * B.z)
    v_co_n_qd = CO.pos_from(NO).dt(N)
    CO.set_vel(N, u4 * C.x + u5 * C.y + u6 * C.z)
    P = CO.locatenew("P", r * B.z)
    P.v2pt_theory(CO, N, C)
    f_c = sm.Matrix([q6 - me.dot(CO.pos_from(P), N.z)])
    f_v = sm.Matrix([me.dot(P.vel(N), uv) for uv in C])
    kindiffs = sm.Matrix([me.dot(w_c_n_qd - C.ang_vel_in(N), uv) for uv in B]
                         + [me.dot(v_co_n_qd - CO.vel(N), uv) for uv in N])
    qdots = sm.solve(kindiffs, qd)
    B.set_ang_vel(N, w_b_n_qd.subs(qdots))
    C.set_ang_acc(N, C.ang_vel_in(N).dt(B) + me.cross(B.ang_vel_in(N), C.ang_vel_in(N)))
    disc = me.RigidBody("Disc", CO, C, m, (me.inertia(C, m * r ** 2 / 4, m * r ** 2 / 2, m * r ** 2 / 4), CO))
    KM = me.KanesMethod(N, [q1, q2, q3, q4, q5], [u1, u2, u3], kd_eqs=kindiffs, q_dependent=[q6],
                        configuration_constraints=f_c, u_dependent=[u4, u5, u6], velocity_constraints=f_v)
    KM.kanes_equations([disc], [(CO, m * g * A.z)])
    return KM, (q, u, r, m, g)


def four_bar(method, dep=(1, 2)):
    """A four-bar linkage: crank q1, coupler q2, rocker q3, two loop-closure constraints; Kane's
    dependent coordinates are q[dep]."""
    q1, q2, q3 = q = me.dynamicsymbols("q1:4")
    u1, u2, u3 = u = me.dynamicsymbols("u1:4")
    l1, l2, l3, l4, m1, m2, m3, g = sm.symbols("l1:5 m1:4 g")
    T = me.dynamicsymbols("T")
    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)
    speeds = u if method == "kane" else [qi.diff(t) for qi in q]
    frames = [N.orientnew(f"B{i}", "axis", [qi, N.z]) for i, qi in enumerate(q)]
    for Bf, w in zip(frames, speeds):
        Bf.set_ang_vel(N, w * N.z)
    P1 = O.locatenew("P1", l1 * frames[0].x)
    P1.v2pt_theory(O, N, frames[0])
    P2 = P1.locatenew("P2", l2 * frames[1].x)
    P2.v2pt_theory(P1, N, frames[1])
    O4 = O.locatenew("O4", l4 * N.x)
    O4.set_vel(N, 0)
    P3 = O4.locatenew("P3", l3 * frames[2].x)
    P3.v2pt_theory(O4, N, frames[2])
    loop = P2.pos_from(O4) - P3.pos_from(O4)
    f_c = sm.Matrix([loop.dot(N.x), loop.dot(N.y)])
    parts = [me.Particle("p1", P1, m1), me.Particle("p2", P2, m2), me.Particle("p3", P3, m3)]
    loads = [(P1, -m1 * g * N.y), (P2, -m2 * g * N.y), (P3, -m3 * g * N.y), (frames[0], T * N.z)]
    params = dict(zip((l1, l2, l3, l4, m1, m2, m3, g), (1.0, 2.2, 1.6, 2.0, 1.0, 1.5, 0.8, 9.81)))
    if method == "kane":
        f_v = sm.Matrix([(P2.vel(N) - P3.vel(N)).dot(N.x), (P2.vel(N) - P3.vel(N)).dot(N.y)])
        ind = [i for i in range(3) if i not in dep]
        KM = me.KanesMethod(N, [q[i] for i in ind], [u[i] for i in ind],
                            kd_eqs=[qi.diff(t) - ui for qi, ui in zip(q, u)],
                            q_dependent=[q[i] for i in dep], configuration_constraints=f_c,
                            u_dependent=[u[i] for i in dep], velocity_constraints=f_v)
        KM.kanes_equations(parts, loads)
        return KM, q, u, T, params
    for p in parts:
        p.potential_energy = 0
    LM = me.LagrangesMethod(me.Lagrangian(N, *parts), q, hol_coneqs=f_c, forcelist=loads, frame=N)
    LM.form_lagranges_equations()
    return LM, q, speeds, T, params


def four_bar_point(q1v, params):
    """A consistent configuration of the four-bar (q2, q3 solved from the loop closure)."""
    l1, l2, l3, l4 = (params[s] for s in sm.symbols("l1:5"))
    import scipy.optimize as so

    def loop(x):
        q2, q3 = x
        return [l1 * np.cos(q1v) + l2 * np.cos(q2) - l4 - l3 * np.cos(q3),
                l1 * np.sin(q1v) + l2 * np.sin(q2) - l3 * np.sin(q3)]

    q2, q3 = so.fsolve(loop, [0.5, 1.5], xtol=1e-14)
    assert np.allclose(loop([q2, q3]), 0.0, atol=1e-12)
    return q1v, q2, q3


def four_bar_speeds(qv, params, w1):
    """Crank speed w1 and the coupler and rocker speeds the velocity constraints give."""
    l1, l2, l3 = (params[s] for s in sm.symbols("l1:4"))
    q1v, q2v, q3v = qv
    Jd = np.array([[-l2 * np.sin(q2v), l3 * np.sin(q3v)], [l2 * np.cos(q2v), -l3 * np.cos(q3v)]])
    u23 = np.linalg.solve(Jd, -np.array([-l1 * np.sin(q1v), l1 * np.cos(q1v)]) * w1)
    return w1, u23[0], u23[1]


# ------------------------------------------------------------------------------------ agreement

def test_contract_pendulum(capsys):
    import runpy
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "shared" / "contracts" / "linearize_pendulum.py"
    if not path.exists():
        pytest.skip(f"no contract script at {path}")
    runpy.run_path(str(path))
    assert "linearize_pendulum: ok" in capsys.readouterr().out


def test_simple_pendulum_kane():
    KM, (q1, u1, L, m, g) = pendulum_kane()
    op = {q1: 0.3, u1: 0.1, L: 1.5, m: 2.0, g: 9.81}
    res = compare(KM, op, KM.to_linearizer)
    assert_entrywise(res.A, [[0, 1], [-9.81 * np.cos(0.3) / 1.5, 0]], tol=1e-14)
    assert res.x == [q1, u1]
    assert res.op_point[u1.diff(t)] == pytest.approx(9.81 * np.sin(-0.3) / 1.5, rel=1e-14)


def test_simple_pendulum_lagrange():
    LM, (q1, L, m, g) = pendulum_lagrange()
    op = {q1: 0.3, q1.diff(t): 0.1, L: 1.5, m: 2.0, g: 9.81}
    lin = lambda: LM.to_linearizer(q_ind=[q1], qd_ind=[q1.diff(t)])  # noqa: E731
    compare(LM, op, lin)
    compare(LM, op, lin, q_ind=[q1], qd_ind=[q1.diff(t)])


def test_nonminimal_pendulum_kane():
    KM, (q1, q2, u1, u2, L, m, g) = pendulum_nonminimal_kane()
    th, w, Lv = 0.4, 0.7, 1.3
    op = {q1: Lv * np.cos(th), q2: Lv * np.sin(th), u1: -Lv * w * np.sin(th), u2: Lv * w * np.cos(th),
          L: Lv, m: 0.9, g: 9.8}
    res = compare(KM, op, KM.to_linearizer)
    # physics: in the independent coordinate q2 = L sin(theta), d(q2')/dq2 etc. are finite and real
    assert np.all(np.isfinite(res.A))


def test_nonminimal_pendulum_lagrange():
    LM, (q1, q2, L, m, g) = pendulum_nonminimal_lagrange()
    th, w, Lv = 0.4, 0.7, 1.3
    q1d, q2d = q1.diff(t), q2.diff(t)
    op = {q1: Lv * np.cos(th), q2: Lv * np.sin(th), q1d: -Lv * w * np.sin(th), q2d: Lv * w * np.cos(th),
          L: Lv, m: 0.9, g: 9.8}
    kw = dict(q_ind=[q2], qd_ind=[q2d], q_dep=[q1], qd_dep=[q1d])
    res = compare(LM, op, lambda: LM.to_linearizer(**kw), **kw)
    # the multiplier the equations gave agrees with SymPy's solve_multipliers at that point
    full = {k: v for k, v in res.op_point.items()}
    lam = LM.solve_multipliers(op_point=full)
    for k, v in lam.items():
        assert float(v) == pytest.approx(full[k], rel=1e-10)


def test_rolling_disc_kane():
    KM, (q, u, r, m, g) = rolling_disc_kane()
    q1, q2, q3, q4, q5, q6 = q
    u1, u2, u3, u4, u5, u6 = u
    q1d, q3d = 0.3, 2.0
    qv = {q1: 0.2, q2: 0.1, q3: 0.5, q4: 0.0, q5: 0.0}
    rv = 0.7
    qv[q6] = -rv * np.cos(qv[q2])
    s = np.sin(qv[q2]) * q1d + q3d
    uv = {u1: 0.0, u2: s, u3: np.cos(qv[q2]) * q1d, u4: -rv * s * np.cos(qv[q3]), u5: 0.0,
          u6: -rv * s * np.sin(qv[q3])}
    op = {**qv, **uv, r: rv, m: 1.2, g: 9.81}
    res = compare(KM, op, KM.to_linearizer)
    assert res.A.shape == (8, 8)


def test_rolling_disc_lagrange():
    q1, q2, q3 = q = me.dynamicsymbols("q1 q2 q3")
    qd = [x.diff(t) for x in q]
    r, m, g = sm.symbols("r m g")
    N = me.ReferenceFrame("N")
    Y = N.orientnew("Y", "Axis", [q1, N.z])
    L = Y.orientnew("L", "Axis", [q2, Y.x])
    R = L.orientnew("R", "Axis", [q3, L.y])
    C = me.Point("C")
    C.set_vel(N, 0)
    Dmc = C.locatenew("Dmc", r * L.z)
    Dmc.v2pt_theory(C, N, R)
    body = me.RigidBody("D", Dmc, R, m, (me.inertia(L, m / 4 * r ** 2, m / 2 * r ** 2, m / 4 * r ** 2), Dmc))
    body.potential_energy = -m * g * r * sm.cos(q2)
    LM = me.LagrangesMethod(me.Lagrangian(N, body), q)
    LM.form_lagranges_equations()
    op = {q1: 0.1, q2: 0.2, q3: 0.3, qd[0]: 0.4, qd[1]: -0.2, qd[2]: 1.5, r: 0.5, m: 2.0, g: 9.81}
    compare(LM, op, lambda: LM.to_linearizer(q_ind=q, qd_ind=qd))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_n_link_pendulum_on_cart(n):
    from sympy.physics.mechanics.models import n_link_pendulum_on_cart

    KM = n_link_pendulum_on_cart(n, cart_force=True, joint_torques=False)
    op = n_link_op_point(KM, n)
    res = compare(KM, op, KM.to_linearizer)
    assert res.A.shape == (2 * (n + 1), 2 * (n + 1)) and res.B.shape == (2 * (n + 1), 1)
    assert str(res.r[0]) == "F(t)"


def n_link_op_point(KM, n, seed=0):
    """A generic operating point of SymPy's n-link pendulum on a cart (not an equilibrium)."""
    rng = np.random.default_rng(seed)
    syms = sorted(set().union(*[e.free_symbols for e in list(KM.mass_matrix_full) + list(KM.forcing_full)])
                  - {t}, key=str)
    op = {s: rng.uniform(0.5, 2.0) for s in syms}
    op.update({x: rng.uniform(-1.0, 1.0) for x in list(KM.q) + list(KM.u)})
    op[me.dynamicsymbols("F")] = 0.3
    return op


@pytest.mark.parametrize("method", ["kane", "lagrange"])
def test_four_bar(method):
    sys_, q, u, T, params = four_bar(method)
    q1v, q2v, q3v = four_bar_point(0.6, params)
    op = {**params, q[0]: q1v, q[1]: q2v, q[2]: q3v, T: 0.5}
    op.update(zip(u, four_bar_speeds((q1v, q2v, q3v), params, 1.1)))
    if method == "kane":
        res = compare(sys_, op, sys_.to_linearizer)
    else:
        kw = dict(q_ind=[q[0]], qd_ind=[u[0]], q_dep=[q[1], q[2]], qd_dep=[u[1], u[2]])
        res = compare(sys_, op, lambda: sys_.to_linearizer(**kw), **kw)
    assert res.A.shape == (2, 2)
    assert res.B.shape == (2, 1)


def test_system_object():
    """A sympy.physics.mechanics.System (joints API) goes through its eom_method."""
    q, u = me.dynamicsymbols("q u")
    L, m, g = sm.symbols("L m g")
    ground = me.RigidBody("ground")
    Bf, Pb = me.ReferenceFrame("B"), me.Point("Pb")
    bob = me.RigidBody("bob", Pb, Bf, m, (me.inertia(Bf, 0, 0, 0), Pb))
    sys_ = me.System.from_newtonian(ground)
    pin = me.PinJoint("pin", ground, bob, coordinates=q, speeds=u, child_point=L * Bf.y,
                      joint_axis=ground.frame.z)
    sys_.add_joints(pin)
    sys_.apply_uniform_gravity(-g * ground.frame.y)
    with pytest.raises(ProblemError, match="form_eoms"):
        symbolic.linearize(sys_, {q: 0.2, u: 0.0, L: 1.0, m: 1.0, g: 9.81})
    sys_.form_eoms()
    op = {q: 0.2, u: 0.3, L: 1.2, m: 1.0, g: 9.81}
    res = compare(sys_, op, sys_.eom_method.to_linearizer)
    assert_entrywise(res.A, [[0, 1], [-9.81 * np.cos(0.2) / 1.2, 0]])


def test_linearizer_input():
    KM, (q1, u1, L, m, g) = pendulum_kane()
    op = {q1: 0.3, u1: 0.1, L: 1.5, m: 2.0, g: 9.81}
    lin = KM.to_linearizer()
    A1 = symbolic.linearize(lin, op).A
    assert_entrywise(A1, symbolic.linearize(KM, op).A, tol=1e-15)


def test_symbolic_output():
    KM, (q1, u1, L, m, g) = pendulum_kane()
    A, B, r = symbolic.linearize(KM, {q1: 0, u1: 0}, symbolic=True)
    assert sm.simplify(A - sm.Matrix([[0, 1], [-g / L, 0]])) == sm.zeros(2, 2)
    M, A2, B2, r2 = symbolic.linearize(KM, {q1: 0, u1: 0}, A_and_B=False, symbolic=True)
    assert M == sm.Matrix([[1, 0], [0, -L ** 2 * m]])


# ------------------------------------------------------------------------------------ nan

def test_nan_documentation_example():
    """SymPy's 'Potential Issues' example sin(q1)/tan(q1) at q1 = 0, inside a force: SymPy gives nan."""
    k = sm.Symbol("k")
    KM, (q1, u1, L, m, g) = pendulum_kane(lambda q: k * sm.sin(q) / sm.tan(q))
    op = {q1: 0.0, u1: 0.0, L: 1.5, m: 2.0, g: 9.81, k: 3.0}
    A_sympy = np.array(KM.to_linearizer().linearize(A_and_B=True, op_point={**op, u1.diff(t): 0.0})[0])
    assert any(x.has(sm.nan, sm.zoo, sm.oo) for x in A_sympy.ravel())
    with pytest.warns(NsoptWarning, match="q1"):
        res = symbolic.linearize(KM, op)
    # reference: the same system with sin/tan simplified to cos
    KMr, (q1r, u1r, Lr, mr, gr) = pendulum_kane(lambda q: k * sm.cos(q))
    opr = {q1r: 0.0, u1r: 0.0, Lr: 1.5, mr: 2.0, gr: 9.81, k: 3.0}
    ref = symbolic.linearize(KMr, opr)
    A_ref = KMr.to_linearizer().linearize(A_and_B=True, op_point=dict(ref.op_point))[0]
    assert_entrywise(res.A, A_ref, tol=1e-8)
    assert res.op_point[u1.diff(t)] == pytest.approx(ref.op_point[u1r.diff(t)], rel=1e-8)
    assert res.repaired and res.repaired_entries["A"].any()
    # the symbolic path takes the limit too
    with pytest.warns(NsoptWarning):
        As = symbolic.linearize(KM, {**op, u1.diff(t): ref.op_point[u1r.diff(t)]}, symbolic=True).A
    assert_entrywise(np.array(As, dtype=float), A_ref, tol=1e-10)


def test_nan_removable_singularity_in_equations():
    """A spring torque k (1 - cos q)/q, written with a 0/0 at q = 0 (its limit there is k q / 2)."""
    k = sm.Symbol("k")
    LM, (q1, L, m, g) = pendulum_lagrange(lambda q: -k * (1 - sm.cos(q)) / q)
    op = {q1: 0.0, q1.diff(t): 0.0, L: 1.5, m: 2.0, g: 9.81, k: 4.0}
    A_sympy = LM.to_linearizer(q_ind=[q1], qd_ind=[q1.diff(t)]).linearize(
        A_and_B=True, op_point={**op, q1.diff(t, 2): 0.0})[0]
    assert A_sympy.has(sm.nan) or A_sympy.has(sm.zoo)
    with pytest.warns(NsoptWarning):
        res = symbolic.linearize(LM, op)
    LMr, (q1r, Lr, mr, gr) = pendulum_lagrange(lambda q: -k * q / 2)
    opr = {q1r: 0.0, q1r.diff(t): 0.0, Lr: 1.5, mr: 2.0, gr: 9.81, k: 4.0}
    A_ref = symbolic.linearize(LMr, opr).A
    assert_entrywise(res.A, A_ref, tol=1e-8)
    # analytic: theta'' = -(g/L) sin(theta) ... with the N.x gravity of the SymPy example: -g/L - k/(2 m L^2)
    assert res.A[1, 0] == pytest.approx(-9.81 / 1.5 - 4.0 / (2 * 2.0 * 1.5 ** 2), rel=1e-8)
    # the symbolic path takes SymPy's limit of the entries instead
    with pytest.warns(NsoptWarning):
        As = symbolic.linearize(LM, {**op, q1.diff(t, 2): 0.0}, symbolic=True).A
    assert_entrywise(np.array(As, dtype=float), A_ref, tol=1e-12)


def test_true_singularity_raises():
    k = sm.Symbol("k")
    KM, (q1, u1, L, m, g) = pendulum_kane(lambda q: k / q)
    with pytest.raises(ProblemError, match="no finite limit"):
        symbolic.linearize(KM, {q1: 0.0, u1: 0.0, L: 1.0, m: 1.0, g: 9.81, k: 1.0})


# ------------------------------------------------------------------------------------ errors

def test_singular_dependent_coordinate():
    """Crank q1 and coupler q2 of the four-bar as dependent coordinates: singular when aligned."""
    KM, q, u, T, params = four_bar("kane", dep=(0, 1))
    q1v = np.arccos((3.2 ** 2 + 2.0 ** 2 - 1.6 ** 2) / (2 * 3.2 * 2.0))  # (l1 + l2) e(q1) - l4 e_x = l3 e(q3)
    p = 3.2 * np.array([np.cos(q1v), np.sin(q1v)]) - [2.0, 0.0]
    op = {**params, q[0]: q1v, q[1]: q1v, q[2]: np.arctan2(p[1], p[0]), T: 0.0,
          u[0]: 0.0, u[1]: 0.0, u[2]: 0.0}
    with pytest.raises(ProblemError, match=r"q_dep.*q1\(t\), q2\(t\)") as e:
        symbolic.linearize(KM, op)
    assert "d f_c / d q_dep" in str(e.value)
    # the same configuration with the regular choice (dependent q2, q3) linearizes
    KM2, q, u, T, params = four_bar("kane")
    assert np.all(np.isfinite(symbolic.linearize(KM2, {**op, **{a: op[b] for a, b in zip(q + u, q + u)}}).A))


def test_singular_dependent_coordinate_lagrange():
    LM, (q1, q2, L, m, g) = pendulum_nonminimal_lagrange()
    op = {q1: 1.0, q2: 0.0, q1.diff(t): 0.0, q2.diff(t): 0.0, L: 1.0, m: 1.0, g: 9.8}
    kw = dict(q_ind=[q1], qd_ind=[q1.diff(t)], q_dep=[q2], qd_dep=[q2.diff(t)])
    with pytest.raises(ProblemError, match="q2"):
        symbolic.linearize(LM, op, **kw)


def test_missing_and_non_numeric_op_point():
    KM, (q1, u1, L, m, g) = pendulum_kane()
    with pytest.raises(ProblemError, match=r"op_point.*\bg\b"):
        symbolic.linearize(KM, {q1: 0.3, u1: 0.1, L: 1.5, m: 2.0})
    with pytest.raises(ProblemError, match=r"op_point.*u1"):
        symbolic.linearize(KM, [{q1: 0.3}, {L: 1.5, m: 2.0, g: 9.81}])
    with pytest.raises(ProblemError, match=r"op_point\[L\]"):
        symbolic.linearize(KM, {q1: 0.3, u1: 0.1, L: sm.Symbol("x"), m: 2.0, g: 9.81})
    with pytest.raises(ProblemError, match=r"op_point\[m\]"):
        symbolic.linearize(KM, {q1: 0.3, u1: 0.1, L: 1.5, m: "heavy", g: 9.81})
    with pytest.raises(ProblemError, match=r"op_point\[g\]"):
        symbolic.linearize(KM, {q1: 0.3, u1: 0.1, L: 1.5, m: 2.0, g: float("nan")})
    with pytest.raises(ProblemError, match="op_point"):
        symbolic.linearize(KM, 3.0)
    with pytest.raises(ProblemError, match=r"op_point\['L'\]"):
        symbolic.linearize(KM, {q1: 0.3, u1: 0.1, "L": 1.5, m: 2.0, g: 9.81})
    # sympy numbers are numbers
    res = symbolic.linearize(KM, {q1: sm.pi / 4, u1: 0, L: sm.Rational(3, 2), m: 2, g: sm.Float(9.81)})
    assert res.A[1, 0] == pytest.approx(-9.81 * np.cos(np.pi / 4) / 1.5, rel=1e-14)


def test_equations_not_formed():
    q1, u1 = me.dynamicsymbols("q1 u1")
    N = me.ReferenceFrame("N")
    KM = me.KanesMethod(N, q_ind=[q1], u_ind=[u1], kd_eqs=[q1.diff(t) - u1])
    with pytest.raises(ProblemError, match="kanes_equations"):
        symbolic.linearize(KM, {q1: 0.0, u1: 0.0})
    P = me.Point("P")
    P.set_vel(N, q1.diff(t) * N.x)
    LM = me.LagrangesMethod(me.Lagrangian(N, me.Particle("p", P, 1)), [q1])
    with pytest.raises(ProblemError, match="form_lagranges_equations"):
        symbolic.linearize(LM, {q1: 0.0})
    with pytest.raises(ProblemError, match="KanesMethod"):
        symbolic.linearize(object(), {})


def test_lagrange_arguments():
    LM, (q1, q2, L, m, g) = pendulum_nonminimal_lagrange()
    op = {q1: 1.0, q2: 0.0, L: 1.0, m: 1.0, g: 9.8}
    with pytest.raises(ProblemError, match="q_ind"):
        symbolic.linearize(LM, op)
    KM, (q1, u1, L, m, g) = pendulum_kane()
    with pytest.raises(OptionError):
        symbolic.linearize(KM, {q1: 0.0}, q_ind=[q1])


def test_no_warning_on_regular_point():
    KM, (q1, u1, L, m, g) = pendulum_kane()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = symbolic.linearize(KM, {q1: 0.3, u1: 0.1, L: 1.5, m: 2.0, g: 9.81})
    assert res.repaired == []


def test_dependent_coordinate_order():
    """A (in q_i, u_i) cannot depend on the order of q_dep. nsopt's does not; SymPy's Linearizer slices
    the transpose of the permutation it needs, which agrees only when the reordering of q is its own
    inverse (there nsopt and SymPy agree entry by entry, as everywhere above)."""
    LM, q, u, T, params = four_bar("lagrange")
    q1v, q2v, q3v = four_bar_point(0.6, params)
    op = {**params, q[0]: q1v, q[1]: q2v, q[2]: q3v, T: 0.5}
    op.update(zip(u, four_bar_speeds((q1v, q2v, q3v), params, 0.2)))

    def kw(ind, dep):
        return dict(q_ind=[q[ind]], qd_ind=[u[ind]], q_dep=[q[i] for i in dep], qd_dep=[u[i] for i in dep])

    cyclic, swap = kw(2, (0, 1)), kw(2, (1, 0))  # q -> [q3, q1, q2] is a 3-cycle, [q3, q2, q1] a swap
    A_cyc, A_swap = symbolic.linearize(LM, op, **cyclic).A, symbolic.linearize(LM, op, **swap).A
    assert_entrywise(A_cyc, A_swap, tol=1e-12)
    full = dict(symbolic.linearize(LM, op, **swap).op_point)
    assert_entrywise(A_swap, LM.to_linearizer(**swap).linearize(A_and_B=True, op_point=full)[0])


def test_system_object_lagrange():
    q = me.dynamicsymbols("q")
    qd = q.diff(t)
    L, m, g = sm.symbols("L m g")
    ground = me.RigidBody("ground")
    Bf, Pb = me.ReferenceFrame("B"), me.Point("Pb")
    bob = me.RigidBody("bob", Pb, Bf, m, (me.inertia(Bf, 0, 0, 0), Pb))
    sys_ = me.System.from_newtonian(ground)
    sys_.add_joints(me.PinJoint("pin", ground, bob, coordinates=q, speeds=qd, child_point=L * Bf.y,
                                joint_axis=ground.frame.z))
    sys_.apply_uniform_gravity(-g * ground.frame.y)
    sys_.form_eoms(eom_method=me.LagrangesMethod)
    op = {q: 0.2, qd: 0.3, L: 1.2, m: 1.0, g: 9.81}
    compare(sys_, op, lambda: sys_.eom_method.to_linearizer(q_ind=[q], qd_ind=[qd]))


def test_piecewise_force():
    """A one-sided spring (Piecewise) in the equations: the active branch's derivative."""
    k = sm.Symbol("k")
    KM, (q1, u1, L, m, g) = pendulum_kane(lambda q: sm.Piecewise((-k * q, q > 0), (0, True)))
    for qv, stiff in ((0.3, True), (-0.3, False)):
        res = symbolic.linearize(KM, {q1: qv, u1: 0.0, L: 1.5, m: 2.0, g: 9.81, k: 5.0})
        KMr, (q1r, u1r, Lr, mr, gr) = pendulum_kane((lambda q: -k * q) if stiff else (lambda q: 0 * q))
        ref = symbolic.linearize(KMr, {q1r: qv, u1r: 0.0, Lr: 1.5, mr: 2.0, gr: 9.81, k: 5.0})
        A_ref = KMr.to_linearizer().linearize(A_and_B=True, op_point=dict(ref.op_point))[0]
        assert_entrywise(res.A, A_ref)


# ------------------------------------------------------------------------------------ constraints

def test_operating_point_violating_constraints():
    """SymPy returns numbers at a point off the constraints; nsopt names the constraint and its residual."""
    KM, (q1, q2, u1, u2, L, m, g) = pendulum_nonminimal_kane()
    th, w, Lv = 0.4, 0.7, 1.3
    good = {q1: Lv * np.cos(th), q2: Lv * np.sin(th), u1: -Lv * w * np.sin(th), u2: Lv * w * np.cos(th),
            L: Lv, m: 0.9, g: 9.8}
    assert np.all(np.isfinite(symbolic.linearize(KM, good).A))  # round-off is no violation
    with pytest.raises(ProblemError, match=r"op_point.*configuration constraint f_c\[0\] = .*residual is 0.001"):
        symbolic.linearize(KM, {**good, q1: good[q1] + 1e-3 * Lv / good[q1]})  # residual ~ 1e-3
    with pytest.raises(ProblemError, match=r"op_point.*velocity constraint f_v\[0\] = .*residual"):
        symbolic.linearize(KM, {**good, u1: good[u1] + 1e-3})
    # a looser constraint_tol accepts it (the caller's choice)
    res = symbolic.linearize(KM, {**good, u1: good[u1] + 1e-7}, constraint_tol=1e-6)
    assert np.all(np.isfinite(res.A))
    LM, (q1, q2, L, m, g) = pendulum_nonminimal_lagrange()
    kw = dict(q_ind=[q2], qd_ind=[q2.diff(t)], q_dep=[q1], qd_dep=[q1.diff(t)])
    op = {q1: 1.0, q2: 0.5, q1.diff(t): 0.0, q2.diff(t): 0.0, L: 1.0, m: 1.0, g: 9.8}  # |q| = 1.118 != L
    with pytest.raises(ProblemError, match=r"configuration constraint f_c\[0\] = .*q1\(t\)\*\*2"):
        symbolic.linearize(LM, op, **kw)


def test_accuracy_options():
    KM, (q1, u1, L, m, g) = pendulum_kane()
    op = {q1: 0.3, u1: 0.1, L: 1.5, m: 2.0, g: 9.81}
    for bad in (dict(tol=0.0), dict(tol=2.0), dict(tol="1e-8"), dict(constraint_tol=-1.0),
                dict(max_precision=0), dict(max_precision=4096), dict(max_precision=64.0)):
        with pytest.raises(OptionError):
            symbolic.linearize(KM, op, **bad)
    res = symbolic.linearize(KM, op)
    assert set(res.errors) == {"A", "B"} and res.errors["A"].shape == res.A.shape
    assert np.all(res.errors["A"] <= 1e-14 * np.abs(res.A).max())
    M, A, B, r = full = symbolic.linearize(KM, op, A_and_B=False)
    assert set(full.errors) == {"M", "A", "B"} and full.errors["M"].shape == M.shape
    assert res.reevaluated == [] and res.inaccurate == [] and res.precision is None and res.tol == 1e-10
