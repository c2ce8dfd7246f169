"""nsopt.symbolic.relation: plug-ins from SymPy expressions against finite differences, and in a simulation."""

import numpy as np
import pytest

from conftest import need_extra

need_extra("symbolic")
import sympy as sm  # noqa: E402

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
    import sympy.physics.mechanics as me
    a, b = me.dynamicsymbols("a b")
    s = sm.sin(a + b) ** 2
    p = relation_plugins("LagrangianScleronomousR", h=[s + sm.cos(a), s * b], q=[a, b])
    assert "math.sin" in p["G0"].source and p["G0"].source.count("math.sin(") <= 2  # shared subexpressions once
    np.testing.assert_allclose(p["G0"]([0.2, 0.5], []), fd(lambda v: p["h"](v, []), [0.2, 0.5]), rtol=1e-8)


def test_numba_plugin_matches():
    f = compile_plugin(sm.Matrix([[sm.sin(q1) * q2, q2 ** 2]]), [("q", [q1, q2]), ("z", [])], (1, 2), jit=True)
    g = compile_plugin(sm.Matrix([[sm.sin(q1) * q2, q2 ** 2]]), [("q", [q1, q2]), ("z", [])], (1, 2))
    x = np.array([0.3, -1.2])
    np.testing.assert_array_equal(f(x, np.zeros(0)), g(x, np.zeros(0)))


def test_relation_in_time_stepping():
    """A ball on the ground: the gap written symbolically as a nonlinear scleronomous relation,
    (x + 1)^2 - x^2 - x - 1 (which is x), simulates like the hand-written LagrangianLinearTIR."""
    from nsopt import modeling as nm
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


# ----------------------------------------------------------------------------------- slider-crank
# Flores, Leine, Glocker (2010), Table 1, as in Siconos' examples/Mechanics/SliderCrank
SC = dict(l1=0.1530, l2=0.3060, a=0.05, b=0.025, c=0.001, m1=0.038, m2=0.038, m3=0.0760, J1=7.4e-5,
          J2=5.9e-4, J3=2.7e-6, g=9.81)
SC["d"] = 2.0 * (SC["b"] + SC["c"])
CORNERS = [(-1, 1), (1, 1), (-1, -1), (1, -1)]  # (±a, ±b) in the slider frame; +b: the upper guide


def slider_crank_handwritten():
    """The hand-written gaps and their Jacobians of Siconos' SliderCrankPlugin (g1..g4, W1..W4)."""
    l1, l2, a, b, d = (SC[k] for k in ("l1", "l2", "a", "b", "d"))

    def gap(k):
        sa, sb = CORNERS[k]
        up = sb > 0

        def h(q, z):
            y = l1 * np.sin(q[0]) + l2 * np.sin(q[1]) + sa * a * np.sin(q[2]) + sb * b * np.cos(q[2])
            return np.array([0.5 * d - y if up else 0.5 * d + y])

        def G0(q, z):
            dy = [l1 * np.cos(q[0]), l2 * np.cos(q[1]), sa * a * np.cos(q[2]) - sb * b * np.sin(q[2])]
            return -np.array([dy]) if up else np.array([dy])

        return h, G0

    return [gap(k) for k in range(4)]


def slider_crank_symbolic():
    """The same contacts derived from the geometry with sympy.physics.vector: relation() specs."""
    from sympy.physics.vector import ReferenceFrame

    q = sm.symbols("q0:3")
    l1_, l2_, a_, b_, d_ = sm.symbols("l1 l2 a b d")
    N = ReferenceFrame("N")
    crank, rod, slider = (N.orientnew(f"B{i}", "Axis", [q[i], N.z]) for i in range(3))
    center = l1_ * crank.x + l2_ * rod.x                      # the slider's centre
    specs = []
    for sa, sb in CORNERS:
        corner_y = (center + sa * a_ * slider.x + sb * b_ * slider.y).dot(N.y)
        gap = d_ / 2 - corner_y if sb > 0 else d_ / 2 + corner_y
        specs.append(dict(h=[gap], q=list(q), params={l1_: SC["l1"], l2_: SC["l2"], a_: SC["a"], b_: SC["b"],
                                                      d_: SC["d"]}))
    return specs


def test_slider_crank_plugins_match_handwritten():
    hand = slider_crank_handwritten()
    sym = [relation_plugins("LagrangianScleronomousR", **spec) for spec in slider_crank_symbolic()]
    for _ in range(20):
        q = RNG.uniform(-np.pi, np.pi, 3)
        for (h, G0), p in zip(hand, sym):
            np.testing.assert_allclose(p["h"](q, []), h(q, []), rtol=1e-13, atol=1e-15)
            np.testing.assert_allclose(p["G0"](q, []), G0(q, []), rtol=1e-13, atol=1e-15)


def test_slider_crank_simulation_matches_handwritten():
    """Siconos' slider-crank (Moreau–Jean, impacts on the guide) with the symbolic relations
    reproduces the run with the hand-written ones, step by step."""
    from nsopt import modeling as nm
    from nsopt.symbolic import relation

    l1, l2, m1, m2, m3, J1, J2, J3, g = (SC[k] for k in ("l1", "l2", "m1", "m2", "m3", "J1", "J2", "J3", "g"))
    c12 = (0.5 * m2 + m3) * l1 * l2

    def M(q, z):
        c = c12 * np.cos(q[1] - q[0])
        return np.array([[J1 + (0.25 * m1 + m2 + m3) * l1 ** 2, c, 0.0],
                         [c, J2 + (0.25 * m2 + m3) * l2 ** 2, 0.0], [0.0, 0.0, J3]])

    def fgyr(q, v, z):
        s = c12 * np.sin(q[0] - q[1])
        return np.array([s * v[1] ** 2, -s * v[0] ** 2, 0.0])

    def fint(t, q, v, z):      # gravity, on the left of M q̈ + F_gyr + F_int = p (Siconos' sign)
        return np.array([(0.5 * m1 + m2 + m3) * g * l1 * np.cos(q[0]), (0.5 * m2 + m3) * g * l2 * np.cos(q[1]),
                         0.0])

    def run(relations):
        ds = nm.LagrangianDS(q0=[np.pi / 2, 0.0, 0.0], v0=[-150.0, 75.0, 0.0], M=M, fgyr=fgyr, fint=fint)
        nsds = nm.NonSmoothDynamicalSystem(t0=0.0, T=0.008)
        inters = [nm.Interaction(nm.NewtonImpactNSL(e=0.4), r) for r in relations]
        for i in inters:
            nsds.link(i, ds)
        traj = nm.TimeStepping(nsds, h=1e-4, integrator=nm.MoreauJeanOSI(theta=0.5), osns="lcp",
                               method="lemke", tol=1e-12, newton_tol=1e-12).run()
        return traj.q(ds), np.hstack([traj.lambda_(i, 1) for i in inters])

    q_sym, lam_sym = run([relation("LagrangianScleronomousR", **spec) for spec in slider_crank_symbolic()])
    q_ref, lam_ref = run([nm.LagrangianScleronomousR(h=h, G0=G0) for h, G0 in slider_crank_handwritten()])
    assert lam_ref.max() > 0                                   # the slider hit the guides
    np.testing.assert_allclose(q_sym, q_ref, rtol=0, atol=1e-9)
    np.testing.assert_allclose(lam_sym, lam_ref, rtol=0, atol=1e-9 * max(1.0, np.abs(lam_ref).max()))


def test_modeling_slider_crank_written_symbolically(monkeypatch):
    """examples/modeling_slider_crank.py (hand-written plug-ins) written with SymPy: the mass, the
    gyroscopic force and the stop derived from x(θ) = l1 cos θ + sqrt(l2² - l1² sin² θ), compiled by
    nsopt.symbolic, reproduce the hand-written simulation step by step."""
    from nsopt import modeling as nm
    from pathlib import Path

    from nsopt.symbolic import relation

    path = Path(__file__).resolve().parents[1] / "examples" / "modeling_slider_crank.py"
    if not path.exists():
        pytest.skip("no modeling slider-crank example")
    import importlib.util

    monkeypatch.syspath_prepend(str(path.parent))      # the example imports its folder's _plotting

    spec = importlib.util.spec_from_file_location("modeling_slider_crank", path)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)

    th, w = sm.symbols("theta omega")
    L1, L2, J, MS, XW = sm.symbols("l1 l2 J m x_w")
    vals = {L1: ex.L1, L2: ex.L2, J: ex.J, MS: ex.MS, XW: ex.XW}
    x = L1 * sm.cos(th) + sm.sqrt(L2 ** 2 - L1 ** 2 * sm.sin(th) ** 2)
    dx = x.diff(th)
    M = sm.Matrix([[J + MS * dx ** 2]]).xreplace(vals)
    fgyr = sm.Matrix([MS * dx * dx.diff(th) * w ** 2]).xreplace(vals)    # d/dt(M) θ̇ - ½ M' θ̇²
    M_p = compile_plugin(M, [("q", [th]), ("z", [])], (1, 1))
    fgyr_p = compile_plugin(fgyr, [("q", [th]), ("v", [w]), ("z", [])], (1,))
    fq = compile_plugin(fgyr.jacobian([th]), [("q", [th]), ("v", [w]), ("z", [])], (1, 1))
    fv = compile_plugin(fgyr.jacobian([w]), [("q", [th]), ("v", [w]), ("z", [])], (1, 1))
    stop = relation("LagrangianScleronomousR", h=[XW - x], q=[th], params=vals, name="stop")
    plug = relation_plugins("LagrangianScleronomousR", h=[XW - x], q=[th], params=vals)
    for t_ in RNG.uniform(-np.pi, np.pi, 10):
        np.testing.assert_allclose(plug["h"]([t_], []), [ex.XW - ex.x_of(t_)], rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(plug["G0"]([t_], []), [[-ex.dx_of(t_)]], rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(fgyr_p([t_], [3.0], []), [ex.MS * ex.dx_of(t_) * ex.ddx_of(t_) * 9.0],
                                   rtol=1e-12, atol=1e-14)

    def run(crank, inter):
        nsds = nm.NonSmoothDynamicalSystem(0.0, 0.6)
        nsds.link(inter, crank)
        traj = nm.TimeStepping(nsds, 1e-3, nm.MoreauJeanOSI(0.5), osns="lcp", method="lemke", tol=1e-12,
                               newton_tol=1e-10).run()
        return traj.q(crank)[:, 0], traj.v(crank)[:, 0], traj.lambda_(inter, 1)[:, 0]

    ref = run(*ex.build())
    crank = nm.LagrangianDS([np.pi / 2], [-10.0], M=M_p, fgyr=fgyr_p, jacobian_fgyr_q=fq, jacobian_fgyr_v=fv)
    sym = run(crank, nm.Interaction(nm.NewtonImpactNSL(0.7), stop))
    assert ref[2].max() > 0                                              # it hit the stop
    for a, b in zip(sym, ref):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 * max(1.0, np.abs(b).max()))


def test_nonsmooth_and_undefined_plugins():
    """Abs in h compiles (the variables are real: d|x|/dx = sign x); a derivative plug-in at a kink, or any
    plug-in at a point where its expression is not defined, raises a PluginError naming the plug-in, the
    point and the entries; a function the generated code cannot compute is refused at construction."""
    from nsopt.exceptions import PluginError, ProblemError

    qa, qb = sm.symbols("qa qb")
    p = relation_plugins("LagrangianScleronomousR", h=[sm.Abs(qa) - 1, qa * qb], q=[qa, qb])
    np.testing.assert_array_equal(p["h"]([-0.5, 2.0], []), [-0.5, -1.0])
    np.testing.assert_array_equal(p["G0"]([-0.5, 2.0], []), [[-1.0, 0.0], [2.0, -0.5]])
    with pytest.raises(PluginError, match=r"LagrangianScleronomousR\.G0 = dh/dq: not defined at q = \[0. *, 2. *\]"
                                          r".*\[0, 0\] = sign\(qa\) with qa = 0 \(the kink of sign\)"):
        p["G0"]([0.0, 2.0], [])
    # the distance to the origin: its gradient at the origin divides by zero (the ZeroDivisionError)
    p = relation_plugins("LagrangianScleronomousR", h=[sm.sqrt(qa ** 2 + qb ** 2) - 1], q=[qa, qb])
    np.testing.assert_allclose(p["G0"]([3.0, 4.0], []), [[0.6, 0.8]])
    with pytest.raises(PluginError, match=r"G0 = dh/dq: not defined at q = \[0., 0.\].*\[0, 0\] = "
                                          r"qa/sqrt\(qa\*\*2 \+ qb\*\*2\) is nan.*not differentiable"):
        p["G0"]([0.0, 0.0], [])
    with pytest.raises(PluginError, match=r"\.h: not defined at q = .*sqrt\(qa\) is"):
        relation_plugins("LagrangianScleronomousR", h=[sm.sqrt(qa)], q=[qa, qb])["h"]([-1.0, 0.0], [])
    # Max: its derivative at the tie; also compiled by numba
    for jit in ((False, True) if _has_numba() else (False,)):
        p = relation_plugins("LagrangianScleronomousR", h=[sm.Max(qa, qb)], q=[qa, qb], jit=jit)
        np.testing.assert_array_equal(p["G0"](np.array([1.0, 0.0]), np.zeros(0)), [[1.0, 0.0]])
        with pytest.raises(PluginError, match=r"qa - qb = 0 \(the kink of Heaviside\)"):
            p["G0"](np.array([0.5, 0.5]), np.zeros(0))
    with pytest.raises(ProblemError, match=r"relation\.h: cannot be compiled: .*does not support besselj"):
        relation_plugins("LagrangianScleronomousR", h=[sm.besselj(0, qa)], q=[qa, qb])
    # in a modeling relation: its name in the message (the modeling layer's own PluginError around it)
    from nsopt.symbolic import relation

    r = relation("LagrangianScleronomousR", name="ring", h=[sm.sqrt(qa ** 2 + qb ** 2) - 1], q=[qa, qb])
    r.bind(1, 2, 0)
    with pytest.raises(PluginError, match=r"LagrangianScleronomousR 'ring'\.G0 = dh/dq: not defined at q = "):
        r.G0(np.zeros(2), 0.0, None, np.zeros(0))


def _has_numba():
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True
