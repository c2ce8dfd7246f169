"""Siconos' names carry Siconos' equations and signs: every modeling class named after a Siconos class,
against Debian's Siconos 4.4 kernel, step by step, with every term non-zero.

The Siconos side (tests/_siconos_kernel_equations.py, run by /usr/bin/python3 in a subprocess) builds
each model from Siconos' classes with its plug-ins in C; this side builds the same model from nsopt's
classes with the same formulas in numpy and compares every step's state, outputs and multipliers.
Tolerances: 1e-10 times the trajectory's scale (max(1, max |.|)), what a Newton loop solved to 1e-13 and
an exact one-step solver (Lemke, enumeration) leave after hundreds of steps (the runs reach 1e-14 to
1e-12: the table in docs/siconos.md); the forces and Jacobians at sample states to 1e-12 (exact
formulas), 1e-6 where nsopt differentiates a plug-in by finite differences.

What is covered (class: the terms that are non-zero):

- LagrangianDS: M(q), F_gyr(q, v), F_int(t, q, v), F_ext(t) and the four Jacobians, with a
  LagrangianScleronomousR and NewtonImpactNSL; ``forces()`` = F_ext - F_int - F_gyr and (K, C);
- LagrangianLinearTIDS: non-diagonal M, K, C, F_ext(t); LagrangianLinearTIR with offsets b; two
  NewtonImpactNSL (e = 0.5 and e = 0);
- LagrangianRheonomousR: h(q, t), G0(q, t), ∂h/∂t on a LagrangianDS with F_int, F_gyr, F_ext;
- NewtonImpactFrictionNSL (dim 2 and 3, en, μ > 0) on a LagrangianLinearTIDS with K, C, F_ext:
  FrictionContact(2) (Lemke), FrictionContact(3) (sliding, then sticking);
- EqualityConditionNSL between two systems with two NewtonImpactNSL: an MLCP;
- FirstOrderLinearDS A(t), b(t); FirstOrderLinearR C(t), B, D, e; ComplementarityConditionNSL;
- FirstOrderLinearTIDS (A, b), FirstOrderLinearTIR (C, B, D, e), RelayNSL(lb, ub): a Relay problem; the
  same with NormalConeNSL on the box [lb, ub] (an AVI on nsopt's side: Debian's Siconos has no AVI solver);
- FirstOrderNonLinearDS f(t, x) with its Jacobian; FirstOrderR (Siconos' FirstOrderNonLinearR) h(x, λ),
  g(x, λ) and its four Jacobians, on a nonlinear and on a linear system;
- NewtonEulerDS: f_ext(t), m_ext(t) (body frame), f_int(t, q, v), m_int(t, q, v) and the gyroscopic moment
  (non-isotropic inertia): the wrench at sample states, and a free flight.

Siconos 4.4 has no MoreauJeanOSI branch for a general LagrangianCompliantR (its ``computeFreeOutput``
handles LagrangianCompliantLinearTIR only): nsopt's treatment of compliant relations is its own
(``formulations/time_stepping.md``), checked in tests/test_modeling.py.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nsopt import modeling as nm

SICONOS_PY = "/usr/bin/python3"
DRIVER = Path(__file__).with_name("_siconos_kernel_equations.py")
TOL = 1e-10
sin, cos = np.sin, np.cos


def _siconos_available():
    return bool(shutil.which(SICONOS_PY)) and subprocess.run([SICONOS_PY, "-c", "import siconos.kernel"],
                                                             check=False, capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(not _siconos_available(),
                                reason="Siconos 4.4 (python3-siconos for /usr/bin/python3) absent")


@pytest.fixture(scope="module")
def siconos(tmp_path_factory):
    """Every case's Siconos run (one subprocess): {case: {field: array}}."""
    out = tmp_path_factory.mktemp("siconos") / "equations.npz"
    r = subprocess.run([SICONOS_PY, str(DRIVER), str(out)], check=False, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    res = {}
    with np.load(out) as f:
        for key in f.files:
            case, field = key.split(".", 1)
            res.setdefault(case, {})[field] = f[key]
    return res


def _case(siconos, name):
    s = siconos[name]
    assert "error" not in s, str(s["error"])
    return s


def assert_close(a, b, what, tol=TOL):
    """a and b agree to tol times the scale max(1, max |b|); returns the error relative to that scale."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    scale = max(1.0, float(np.abs(b).max()))
    err = float(np.abs(a - b).max()) / scale
    assert err <= tol, f"{what}: nsopt and Siconos differ by {err:.3e} (scale {scale:.3g}) > {tol:g}"
    return err


def compare_lagrangian(traj, dss, inters, s, tol=TOL):
    errs = []
    for a, ds in enumerate(dss):
        errs += [assert_close(traj.q(ds), s[f"q{a}"], f"q of system {a}", tol),
                 assert_close(traj.v(ds), s[f"v{a}"], f"v of system {a}", tol)]
    for b, it in enumerate(inters):
        errs += [assert_close(traj.y(it, 0), s[f"y0_{b}"], f"y0 of interaction {b}", tol),
                 assert_close(traj.y(it, 1), s[f"y1_{b}"], f"y1 of interaction {b}", tol),
                 assert_close(traj.lambda_(it, 1), s[f"lam{b}"], f"λ1 of interaction {b}", tol)]
    return max(errs)


def compare_first_order(traj, dss, inters, s, tol=TOL):
    errs = [assert_close(traj.x(ds), s[f"x{a}"], f"x of system {a}", tol) for a, ds in enumerate(dss)]
    for b, it in enumerate(inters):
        errs += [assert_close(traj.y(it, 0), s[f"y0_{b}"], f"y0 of interaction {b}", tol),
                 assert_close(traj.lambda_(it, 0), s[f"lam{b}"], f"λ0 of interaction {b}", tol)]
    return max(errs)


def _run(dss, links, T, h, osi, **kw):
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    for ds in dss:
        nsds.insert_dynamical_system(ds)
    inters = []
    for inter, *ds in links:
        nsds.link(inter, *ds)
        inters.append(inter)
    kw.setdefault("tol", 1e-14)
    traj = nm.TimeStepping(nsds, h, osi, newton_tol=1e-13, newton_max_iter=100, **kw).run()
    assert not traj.failed_steps
    return traj, inters


# ---------------------------------------------------------------------------- Lagrangian systems
def lagrangian_ds():
    """The LagrangianDS of the driver's ``lagrangian_ds`` (lag_* plug-ins)."""
    return nm.LagrangianDS(
        [0.3, 0.2], [0.5, -1.0],
        M=lambda q, z: np.array([[2 + 0.5 * cos(q[1]), 0.3 + 0.1 * sin(q[0])], [0.3 + 0.1 * sin(q[0]), 1.5]]),
        fgyr=lambda q, v, z: np.array([0.5 * sin(q[1]) * v[0] * v[1] + 0.1 * v[1] ** 2,
                                       -0.25 * sin(q[1]) * v[0] ** 2 + 0.05 * q[0] * v[0] * v[1]]),
        fint=lambda t, q, v, z: np.array([20 * q[0] - 5 * q[1] + 0.3 * q[0] ** 3 + 0.4 * v[0] + 0.2 * sin(t),
                                          -5 * q[0] + 10 * q[1] + 0.2 * v[1] + 0.1 * v[0] * q[1]]),
        fext=lambda t, z: np.array([cos(2 * t), -9.81 + 0.5 * sin(3 * t)]),
        jacobian_fgyr_q=lambda q, v, z: np.array([[0.0, 0.5 * cos(q[1]) * v[0] * v[1]],
                                                  [0.05 * v[0] * v[1], -0.25 * cos(q[1]) * v[0] ** 2]]),
        jacobian_fgyr_v=lambda q, v, z: np.array([[0.5 * sin(q[1]) * v[1], 0.5 * sin(q[1]) * v[0] + 0.2 * v[1]],
                                                  [-0.5 * sin(q[1]) * v[0] + 0.05 * q[0] * v[1], 0.05 * q[0] * v[0]]]),
        jacobian_fint_q=lambda t, q, v, z: np.array([[20 + 0.9 * q[0] ** 2, -5.0], [-5.0, 10 + 0.1 * v[0]]]),
        jacobian_fint_v=lambda t, q, v, z: np.array([[0.4, 0.0], [0.1 * q[1], 0.2]]))


def test_lagrangian_ds_forces_are_siconos_forces(siconos):
    """forces() = F_ext - F_int - F_gyr and (K, C) = -(∇q, ∇v) of it, Siconos' jacobianqForces and
    jacobianvForces with their sign flipped (Siconos stores the Jacobians of F, nsopt's K, C of M̂)."""
    s = _case(siconos, "lagrangian_ds")
    ds = lagrangian_ds()
    for (t, *x), F, Jq, Jv in zip(s["samples"], s["forces"], s["jacobian_q"], s["jacobian_v"]):
        q, v = np.array(x[:2]), np.array(x[2:])
        assert_close(ds.forces(t, q, v), F, "forces", 1e-13)
        K, C = ds.jacobian_forces(t, q, v)
        assert_close(K, -Jq, "K = -∂F/∂q", 1e-13)
        assert_close(C, -Jv, "C = -∂F/∂v", 1e-13)


def test_lagrangian_ds_trajectory_is_siconos(siconos):
    s = _case(siconos, "lagrangian_ds")
    ds = lagrangian_ds()
    rel = nm.LagrangianScleronomousR(h=lambda q, z: np.array([q[1] + 0.4 + 0.1 * sin(q[0])]),
                                     G0=lambda q, z: np.array([[0.1 * cos(q[0]), 1.0]]))
    inter = nm.Interaction(nm.NewtonImpactNSL(0.6), rel)
    traj, inters = _run([ds], [(inter, ds)], 1.5, 1e-3, nm.MoreauJeanOSI(0.5), osns="lcp", method="lemke")
    assert s["lam0"].max() > 1.0                     # impacts happened
    compare_lagrangian(traj, [ds], inters, s)


def test_lagrangian_linear_tids_is_siconos(siconos):
    """M q̈ + C q̇ + K q = F_ext(t) + p (Siconos' LagrangianLinearTIDS), y = H q + b (LagrangianLinearTIR)."""
    s = _case(siconos, "lagrangian_lti")
    M = np.array([[2.0, 0.2, 0.0], [0.2, 1.0, 0.0], [0.0, 0.0, 0.5]])
    K = np.array([[30.0, -10.0, 0.0], [-10.0, 20.0, -5.0], [0.0, -5.0, 10.0]])
    C = 0.05 * K + 0.2 * M
    ds = nm.LagrangianLinearTIDS([0.1, 0.5, -0.2], [0.0, -1.0, 0.5], M, K=K, C=C,
                                 fext=lambda t, z: np.array([sin(5 * t), -9.81, 0.3 * cos(t)]))
    assert_close(ds.forces(0.3, np.array([0.2, -0.1, 0.4]), np.array([1.0, 0.5, -2.0])), s["forces"], "forces", 1e-13)
    i1 = nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[0.0, 1.0, 0.2]], b=[0.3]))
    i2 = nm.Interaction(nm.NewtonImpactNSL(0.0), nm.LagrangianLinearTIR([[1.0, 0.0, -1.0]], b=[0.25]))
    traj, inters = _run([ds], [(i1, ds), (i2, ds)], 2.0, 2e-3, nm.MoreauJeanOSI(0.5), osns="lcp", method="lemke")
    assert s["lam0"].max() > 1.0 and s["lam1"].max() > 0.1
    compare_lagrangian(traj, [ds], inters, s)


def test_lagrangian_rheonomous_relation_is_siconos(siconos):
    s = _case(siconos, "rheonomous")
    ds = nm.LagrangianDS(
        [0.4, 0.1], [0.0, 0.0], M=np.diag([1.0, 2.0]),
        fint=lambda t, q, v, z: np.array([50 * q[0] + 5 * q[0] ** 3 + 0.5 * v[0], 8 * q[1] - 2 * q[0] + 0.3 * v[1] * v[0]]),
        jacobian_fint_q=lambda t, q, v, z: np.array([[50 + 15 * q[0] ** 2, 0.0], [-2.0, 8.0]]),
        jacobian_fint_v=lambda t, q, v, z: np.array([[0.5, 0.0], [0.3 * v[1], 0.3 * v[0]]]),
        fgyr=lambda q, v, z: np.array([0.1 * v[1] ** 2, 0.2 * v[0] * v[1]]),
        jacobian_fgyr_q=lambda q, v, z: np.zeros((2, 2)),
        jacobian_fgyr_v=lambda q, v, z: np.array([[0.0, 0.2 * v[1]], [0.2 * v[1], 0.2 * v[0]]]),
        fext=[0.5, -3.0])
    rel = nm.LagrangianRheonomousR(h=lambda q, t, z: np.array([q[0] + 0.1 * q[1] ** 2 + 0.3 + 0.05 * sin(8 * t)]),
                                   G0=lambda q, t, z: np.array([[1.0, 0.2 * q[1]]]),
                                   hdot=lambda q, t, z: np.array([0.4 * cos(8 * t)]))
    inter = nm.Interaction(nm.NewtonImpactNSL(0.8), rel)
    traj, inters = _run([ds], [(inter, ds)], 1.5, 1e-3, nm.MoreauJeanOSI(0.5), osns="lcp", method="lemke")
    assert s["lam0"].max() > 0.5
    compare_lagrangian(traj, [ds], inters, s)


def test_newton_impact_friction_2d_is_siconos(siconos):
    s = _case(siconos, "friction2d")
    ds = nm.LagrangianLinearTIDS([0.0, 0.25, 0.0], [2.0, 0.0, 0.0], np.diag([1.0, 1.0, 0.005]),
                                 K=np.diag([4.0, 0.0, 0.0]), C=np.diag([0.1, 0.0, 0.001]), fext=[1.5, -9.81, 0.02])
    rel = nm.LagrangianLinearTIR([[0.0, 1.0, 0.0], [1.0, 0.0, 0.1]], b=[-0.1, 0.0])
    inter = nm.Interaction(nm.NewtonImpactFrictionNSL(0.2, 0.0, 0.4, 2), rel)
    traj, inters = _run([ds], [(inter, ds)], 1.5, 2e-3, nm.MoreauJeanOSI(0.5), osns="fc2d", method="lemke")
    lam = s["lam0"]
    assert np.any(np.abs(lam[:, 1]) >= 0.4 * lam[:, 0] - 1e-12) and lam[:, 0].max() > 0.5   # sliding steps
    compare_lagrangian(traj, [ds], inters, s)


def test_newton_impact_friction_3d_is_siconos(siconos):
    """A particle sliding then sticking on the ground: NewtonImpactFrictionNSL(dim 3), FrictionContact(3)
    (Siconos: NSGS to 1e-15; nsopt: nsn-ac to 1e-14)."""
    s = _case(siconos, "friction3d")
    ds = nm.LagrangianLinearTIDS([0.0, 0.0, 0.2], [2.0, 1.0, 0.0], np.eye(3), K=np.diag([3.0, 1.0, 0.0]),
                                 C=np.diag([0.1, 0.2, 0.0]), fext=[0.5, -0.3, -9.81])
    rel = nm.LagrangianLinearTIR([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], b=[-0.05, 0.0, 0.0])
    inter = nm.Interaction(nm.NewtonImpactFrictionNSL(0.3, 0.0, 0.5, 3), rel)
    traj, inters = _run([ds], [(inter, ds)], 1.5, 2e-3, nm.MoreauJeanOSI(0.5), osns="fc3d", method="nsn-ac")
    lam = s["lam0"]
    sliding = np.linalg.norm(lam[:, 1:], axis=1) >= 0.5 * lam[:, 0] * (1 - 1e-9)
    assert np.any(sliding & (lam[:, 0] > 0.01)) and np.any(~sliding & (lam[:, 0] > 0.01))   # slides, then sticks
    compare_lagrangian(traj, [ds], inters, s)


def test_equality_condition_between_two_systems_is_siconos(siconos):
    s = _case(siconos, "equality")
    d1 = nm.LagrangianLinearTIDS([0.0, 0.3], [0.5, 0.0], np.eye(2), K=np.diag([5.0, 0.0]), C=np.diag([0.1, 0.1]),
                                 fext=[1.0, -9.81])
    d2 = nm.LagrangianLinearTIDS([0.5, 0.1], [0.5, 1.0], 2 * np.eye(2), K=np.diag([0.0, 3.0]), fext=[0.0, -19.62])
    bar = nm.Interaction(nm.EqualityConditionNSL(1), nm.LagrangianLinearTIR([[1.0, 0.0, -1.0, 0.0]], b=[0.5]))
    g1 = nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[0.0, 1.0]]))
    g2 = nm.Interaction(nm.NewtonImpactNSL(0.3), nm.LagrangianLinearTIR([[0.0, 1.0]], b=[0.2]))
    traj, inters = _run([d1, d2], [(bar, d1, d2), (g1, d1), (g2, d2)], 1.5, 2e-3, nm.MoreauJeanOSI(0.5),
                        osns="mlcp", method="enum")
    assert s["lam1"].max() > 1.0 and s["lam2"].max() > 1.0
    compare_lagrangian(traj, [d1, d2], inters, s)


# ---------------------------------------------------------------------------- first-order systems
def test_first_order_linear_ds_and_relation_are_siconos(siconos):
    """ẋ = A(t) x + b(t) + r, y = C(t) x + D λ + e, r = B λ (FirstOrderLinearDS, FirstOrderLinearR)."""
    s = _case(siconos, "first_order_linear")
    ds = nm.FirstOrderLinearDS([1.0, 0.0], lambda t, z: np.array([[0.0, 1.0], [-(4 + sin(t)), -0.3]]),
                               b=lambda t, z: np.array([0.0, 0.5 * cos(2 * t)]))
    rel = nm.FirstOrderLinearR(C=lambda t, z: np.array([[1.0, 0.1 * sin(t)]]), B=[[0.0], [1.0]], D=[[0.1]], e=[0.2])
    inter = nm.Interaction(nm.ComplementarityConditionNSL(1), rel)
    traj, inters = _run([ds], [(inter, ds)], 5.0, 1e-2, nm.EulerMoreauOSI(0.5), osns="lcp", method="lemke")
    assert s["lam0"].max() > 1.0
    compare_first_order(traj, [ds], inters, s)


def test_first_order_linear_tids_relay_is_siconos(siconos):
    """ẋ = A x + b + r (FirstOrderLinearTIDS), FirstOrderLinearTIR, -y ∈ N_[lb, ub](λ) (RelayNSL)."""
    s = _case(siconos, "first_order_lti_relay")
    ds = nm.FirstOrderLinearTIDS([1.0, 0.5], [[0.0, 1.0], [-1.0, -0.1]], b=[0.0, 0.5])
    rel = nm.FirstOrderLinearTIR(C=[[0.0, 1.0]], B=[[0.0], [1.0]], D=[[0.01]], e=[0.05])
    inter = nm.Interaction(nm.RelayNSL(1, lb=-1.0, ub=2.0), rel)
    traj, inters = _run([ds], [(inter, ds)], 10.0, 1e-2, nm.EulerMoreauOSI(0.5), osns="relay", method="lemke")
    lam = s["lam0"]
    assert lam.min() == pytest.approx(-1.0) and np.any((lam > -1.0 + 1e-6) & (lam < 2.0 - 1e-6))
    compare_first_order(traj, [ds], inters, s)


def test_normal_cone_on_a_box_is_siconos_relay(siconos):
    """NormalConeNSL: λ ∈ P = {Hλ >= k}, -y ∈ N_P(λ) (Siconos' sign); on the box P = [-1, 2] it is the relay of
    ``first_order_lti_relay`` (Debian's Siconos 4.4 has no AVI solver: built without lp_solve), an AVI here."""
    s = _case(siconos, "first_order_lti_relay")
    ds = nm.FirstOrderLinearTIDS([1.0, 0.5], [[0.0, 1.0], [-1.0, -0.1]], b=[0.0, 0.5])
    rel = nm.FirstOrderLinearTIR(C=[[0.0, 1.0]], B=[[0.0], [1.0]], D=[[0.01]], e=[0.05])
    inter = nm.Interaction(nm.NormalConeNSL(1, H=[[1.0], [-1.0]], k=[-1.0, -2.0]), rel)
    traj, inters = _run([ds], [(inter, ds)], 10.0, 1e-2, nm.EulerMoreauOSI(0.5), osns="avi", method="lemke", tol=1e-13)
    compare_first_order(traj, [ds], inters, s)


def _nonlinear_relation():
    """Siconos' FirstOrderNonLinearR of the driver (fr_*): y = h(x, λ), r = g(x, λ), C, D, K, B."""
    return nm.FirstOrderR(
        h=lambda x, t, lam, z: np.array([x[0] + 0.1 * x[0] ** 3 + 0.2 * lam[0] + 0.1]),
        g=lambda x, t, lam, z: np.array([0.0, lam[0] * (1 + 0.1 * x[0] ** 2)]),
        H0=lambda x, t, lam, z: np.array([[1 + 0.3 * x[0] ** 2, 0.0]]),
        H1=lambda x, t, lam, z: np.array([[0.2]]),
        G0=lambda x, t, lam, z: np.array([[0.0, 0.0], [0.2 * lam[0] * x[0], 0.0]]),
        G1=lambda x, t, lam, z: np.array([[0.0], [1 + 0.1 * x[0] ** 2]]))


def test_first_order_nonlinear_ds_is_siconos(siconos):
    """ẋ = f(t, x) + r (FirstOrderNonLinearDS) with a nonlinear relation, Newton's loop on both sides."""
    s = _case(siconos, "first_order_nonlinear")
    ds = nm.FirstOrderNonLinearDS(
        [0.5, -1.0], lambda t, x, z: np.array([x[1], -x[0] - 0.5 * x[0] ** 3 + 0.2 * sin(t) - 0.1 * x[1]]),
        lambda t, x, z: np.array([[0.0, 1.0], [-1 - 1.5 * x[0] ** 2, -0.1]]))
    inter = nm.Interaction(nm.ComplementarityConditionNSL(1), _nonlinear_relation())
    traj, inters = _run([ds], [(inter, ds)], 5.0, 1e-2, nm.EulerMoreauOSI(0.5), osns="lcp", method="lemke")
    assert s["lam0"].max() > 0.5
    compare_first_order(traj, [ds], inters, s)


def test_first_order_nonlinear_relation_is_siconos(siconos):
    """y = h(x, t, λ), R = g(x, t, λ) (FirstOrderR, Siconos' FirstOrderNonLinearR) on a linear system."""
    s = _case(siconos, "first_order_nonlinear_relation")
    ds = nm.FirstOrderLinearTIDS([1.0, -0.5], [[0.0, 1.0], [-2.0, -0.2]], b=[0.0, -0.3])
    inter = nm.Interaction(nm.ComplementarityConditionNSL(1), _nonlinear_relation())
    traj, inters = _run([ds], [(inter, ds)], 5.0, 1e-2, nm.EulerMoreauOSI(0.5), osns="lcp", method="lemke")
    assert s["lam0"].max() > 0.5
    compare_first_order(traj, [ds], inters, s)


# ---------------------------------------------------------------------------- rigid bodies
def newton_euler_body(q0, v0):
    """The NewtonEulerDS of the driver (ne_* plug-ins; f_ext and m_ext depend on t only, as Siconos' do)."""
    return nm.NewtonEulerDS(
        q0, v0, 2.0, [0.1, 0.2, 0.3],
        fext=lambda t, q, v, z: np.array([sin(t), 0.5, -9.81]),
        mext=lambda t, q, v, z: np.array([0.1 * cos(t), 0.0, 0.2]),
        fint=lambda t, q, v, z: np.array([2 * q[0] + 0.1 * v[0], 2 * q[1] + 0.3 * q[4], 3 * q[2] + 0.2 * v[2] + 0.1 * v[4]]),
        mint=lambda t, q, v, z: np.array([0.05 * v[3] + 0.1 * q[5], 0.05 * v[4] + 0.02 * v[0],
                                          0.05 * v[5] + 0.1 * q[0] * q[6]]))


def test_newton_euler_wrench_is_siconos(siconos):
    """[f_ext - f_int, m_ext - ω × Iω - m_int] (Siconos' NewtonEulerDS::computeForces) at sample states."""
    s = _case(siconos, "newton_euler")
    for (t, *x), F in zip(s["samples"], s["forces"]):
        q, v = np.array(x[:7]), np.array(x[7:])
        body = newton_euler_body(q, v)
        assert_close(body.forces(t, q, v), F, "wrench", 1e-13)


def test_newton_euler_free_flight_is_siconos(siconos):
    """The same body in free flight, MoreauJeanOSI(1/2), T(q) at the step's start on both sides."""
    s = _case(siconos, "newton_euler")
    body = newton_euler_body([0.1, -0.2, 0.3, 1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 2.0, 1.0, -2.0, 0.5])
    traj, _ = _run([body], [], 0.5, 1e-3, nm.MoreauJeanOSI(0.5))
    # both move the quaternion by the exponential map (h|ω|/2 > 1e-3 here: Siconos 4.4's sin(x)/x is its
    # series of tan(x)/x below 1e-3, formulations/time_stepping.md §4)
    assert np.linalg.norm(s["v0"][:, 3:], axis=1).min() * 1e-3 / 2 > 1e-3
    assert_close(traj.q(body), s["q0"], "q")
    assert_close(traj.v(body), s["v0"], "v")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
