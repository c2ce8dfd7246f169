"""nsopt.symbolic.relation: plug-ins from SymPy expressions against finite differences, and in a simulation."""

import numpy as np
import pytest

sm = pytest.importorskip("sympy")

from nsopt import OptionError, ProblemError  # noqa: E402
from nsopt.symbolic import compile_plugin, relation_plugins  # noqa: E402

q1, q2, q3, l1, l2, t, la1, la2, z1 = sm.symbols("q1 q2 q3 l1 l2 t lam1 lam2 z1")
RNG = np.random.default_rng(3)


def fd(f, x, *, eps=1e-6):
    """Central finite differences of f at x (vector x; columns = components of x)."""
    x = np.asarray(x, float)
    cols = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))]
    return np.stack(cols, axis=-1)


def test_scleronomous_against_fd():
    h = [l1 * sm.cos(q1) + l2 * sm.cos(q1 + q2) - q3 * z1, sm.sqrt(1 + q2 ** 2) * sm.sin(q1 * q3)]
    p = relation_plugins("LagrangianScleronomousR", h=h, q=[q1, q2, q3], z=[z1], params={l1: 1.0, l2: 0.7})
    for _ in range(5):
        q, z = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 1)
        assert p["h"](q, z).shape == (2,)
        np.testing.assert_allclose(p["G0"](q, z), fd(lambda v: p["h"](v, z), q), rtol=1e-8, atol=1e-9)
        ref = [np.cos(q[0]) + 0.7 * np.cos(q[0] + q[1]) - q[2] * z[0], np.sqrt(1 + q[1] ** 2) * np.sin(q[0] * q[2])]
        np.testing.assert_allclose(p["h"](q, z), ref, rtol=1e-14)


def test_rheonomous_against_fd():
    h = [q1 - 0.1 * sm.sin(3 * t) * q2, q1 * q2 * sm.exp(-t)]
    p = relation_plugins("LagrangianRheonomousR", h=h, q=[q1, q2])
    q, tt = RNG.uniform(-1, 1, 2), 0.4
    np.testing.assert_allclose(p["G0"](q, tt, []), fd(lambda v: p["h"](v, tt, []), q), rtol=1e-8, atol=1e-9)
    dt = fd(lambda s: p["h"](q, s[0], []), [tt])[:, 0]
    np.testing.assert_allclose(p["hdot"](q, tt, []), dt, rtol=1e-8, atol=1e-9)


def test_compliant_against_fd():
    h = [q1 - 0.01 * la1 - 0.001 * la1 * la2, q2 + sm.atan(la2) * q1]
    p = relation_plugins("LagrangianCompliantR", h=h, q=[q1, q2], lam=[la1, la2])
    q, lam = RNG.uniform(-1, 1, 2), RNG.uniform(0, 1, 2)
    np.testing.assert_allclose(p["G0"](q, lam, []), fd(lambda v: p["h"](v, lam, []), q), rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(p["G1"](q, lam, []), fd(lambda v: p["h"](q, v, []), lam), rtol=1e-8, atol=1e-9)


def test_first_order_against_fd():
    x1, x2 = sm.symbols("x1 x2")
    h = [x1 ** 2 - la1 * x2 + sm.cos(t), x2 + la1 ** 3]
    g = [la1 * sm.sin(x1), -x2 * la1 + z1]
    p = relation_plugins("FirstOrderR", h=h, g=g, x=[x1, x2], lam=[la1], z=[z1])
    x, lam, z, tt = RNG.uniform(-1, 1, 2), RNG.uniform(0, 1, 1), [0.3], 0.2
    for jac, f, wrt in (("H0", "h", "x"), ("H1", "h", "lam"), ("G0", "g", "x"), ("G1", "g", "lam")):
        if wrt == "x":
            ref = fd(lambda v: p[f](v, tt, lam, z), x)
        else:
            ref = fd(lambda v: p[f](x, tt, v, z), lam)
        np.testing.assert_allclose(p[jac](x, tt, lam, z), ref, rtol=1e-8, atol=1e-9)


def test_linear_kinds():
    x1, x2 = sm.symbols("x1 x2")
    p = relation_plugins("FirstOrderLinearTIR", h=[2 * x1 - x2 + 3 * la1 + 1], g=[0, la1], x=[x1, x2], lam=[la1])
    np.testing.assert_array_equal(p["C"], [[2.0, -1.0]])
    np.testing.assert_array_equal(p["B"], [[0.0], [1.0]])
    np.testing.assert_array_equal(p["D"], [[3.0]])
    np.testing.assert_array_equal(p["e"], [1.0])
    pt = relation_plugins("FirstOrderLinearR", C=[[sm.cos(t), 1]], B=[[0], [1]])
    assert callable(pt["C"]) and isinstance(pt["B"], np.ndarray)
    np.testing.assert_allclose(pt["C"](0.5, []), [[np.cos(0.5), 1.0]])
    pl = relation_plugins("LagrangianLinearTIR", h=[q1 - 2 * q2 + 0.5], q=[q1, q2])
    np.testing.assert_array_equal(pl["H"], [[1.0, -2.0]])
    np.testing.assert_array_equal(pl["b"], [0.5])
    with pytest.raises(ProblemError, match="affine"):
        relation_plugins("LagrangianLinearTIR", h=[q1 * q2], q=[q1, q2])


def test_bad_input():
    with pytest.raises(OptionError, match="LagrangianScleronomousR"):
        relation_plugins("Scleronomous", h=[q1], q=[q1])
    with pytest.raises(ProblemError, match=r"h.*\bl1\b"):
        relation_plugins("LagrangianScleronomousR", h=[l1 * q1], q=[q1])
    with pytest.raises(ProblemError, match="q"):
        relation_plugins("LagrangianScleronomousR", h=[q1])


def test_dynamicsymbols_and_cse():
    me = pytest.importorskip("sympy.physics.mechanics")
    a, b = me.dynamicsymbols("a b")
    s = sm.sin(a + b) ** 2
    p = relation_plugins("LagrangianScleronomousR", h=[s + sm.cos(a), s * b], q=[a, b])
    assert "math.sin" in p["G0"].source and p["G0"].source.count("math.sin(") <= 2  # shared subexpressions once
    np.testing.assert_allclose(p["G0"]([0.2, 0.5], []), fd(lambda v: p["h"](v, []), [0.2, 0.5]), rtol=1e-8)


def test_numba_plugin_matches():
    pytest.importorskip("numba")
    f = compile_plugin(sm.Matrix([[sm.sin(q1) * q2, q2 ** 2]]), [("q", [q1, q2]), ("z", [])], (1, 2), jit=True)
    g = compile_plugin(sm.Matrix([[sm.sin(q1) * q2, q2 ** 2]]), [("q", [q1, q2]), ("z", [])], (1, 2))
    x = np.array([0.3, -1.2])
    np.testing.assert_array_equal(f(x, np.zeros(0)), g(x, np.zeros(0)))


def test_relation_in_time_stepping():
    """A ball on the ground: the gap written symbolically as a nonlinear scleronomous relation,
    (x + 1)^2 - x^2 - x - 1 (which is x), simulates like the hand-written LagrangianLinearTIR."""
    nm = pytest.importorskip("nsopt.modeling")
    from nsopt.symbolic import relation

    x, y, th = sm.symbols("x y theta")

    def run(rel):
        ball = nm.LagrangianLinearTIDS(q0=[1.0, 0.0, 0.0], v0=[0.0, 0.0, 0.0],
                                       M=np.diag([1.0, 1.0, 0.004]), fext=[-9.81, 0.0, 0.0])
        inter = nm.Interaction(nm.NewtonImpactNSL(e=0.9), rel)
        nsds = nm.NonSmoothDynamicalSystem(t0=0.0, T=1.5)
        nsds.link(inter, ball)
        traj = nm.TimeStepping(nsds, h=0.005, integrator=nm.MoreauJeanOSI(theta=0.5), osns="lcp",
                               method="lemke", tol=1e-12).run()
        return traj.q(ball), traj.lambda_(inter, 1)

    q_sym, l_sym = run(relation("LagrangianScleronomousR", h=[(x + 1) ** 2 - x ** 2 - x - 1], q=[x, y, th]))
    q_ref, l_ref = run(nm.LagrangianLinearTIR(H=[[1.0, 0.0, 0.0]]))
    assert l_ref.max() > 0  # it bounced
    np.testing.assert_allclose(q_sym, q_ref, atol=1e-9)
    np.testing.assert_allclose(l_sym, l_ref, atol=1e-9)
    lin = relation("LagrangianLinearTIR", h=[x], q=[x, y, th])
    np.testing.assert_array_equal(lin.H, [[1.0, 0.0, 0.0]])
