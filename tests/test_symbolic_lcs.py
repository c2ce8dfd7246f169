"""nsopt.symbolic.lcs: one LCS step against one nonlinear Moreau–Jean step, to first order."""

import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import need_extra

need_extra("symbolic")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import lcs_cartpole_wall as ex  # noqa: E402

from nsopt import ProblemError, symbolic  # noqa: E402


@pytest.fixture(scope="module")
def built():
    return ex.build()


def test_example_runs_and_first_order(tmp_path):
    deltas, errs, at_op = ex.main(tmp_path / "lcs.png")
    assert at_op <= 1e-12                                     # exact at the operating point
    ratios = errs[:-1] / errs[1:]                             # halving δ divides the error by 4: O(δ²)
    assert np.all((ratios > 3.6) & (ratios < 4.4)), ratios
    assert errs[-1] < 1e-5
    need_extra("all", ["matplotlib"])                         # (the example's figure needs matplotlib)
    assert (tmp_path / "lcs.png").stat().st_size > 10_000


def test_contact_is_active_and_pushes(built):
    sys_lcs, model, xstar, u, h = built
    assert list(sys_lcs.active) == [0]
    x1, lam, sol = sys_lcs.step(xstar, u)
    assert sol.success and lam[0] > 0.1                       # a real impulse, not the trivial branch
    w = sys_lcs.E @ xstar + sys_lcs.F @ lam + sys_lcs.H @ u + sys_lcs.c
    assert abs(w[0]) < 1e-10                                  # the tip stops at the wall (e = 0)
    # without the contact the step would be wrong at first order already
    q1, v1, P, _ = model.step(xstar[:2], xstar[2:], u, h, active=[])
    assert np.linalg.norm(np.concatenate([q1, v1]) - x1) > 1e-2


def test_methods_agree(built):
    sys_lcs, model, xstar, u, h = built
    x = xstar + 1e-3
    a = sys_lcs.step(x, u, method="lemke")[0]
    b = sys_lcs.step(x, u, method="pgs", tol=1e-12)[0]
    np.testing.assert_allclose(a, b, atol=1e-9)


def test_free_flight_first_order():
    """Far from the wall no contact is active: the LCS is the linearized smooth step, still O(δ²)."""
    KM, gaps, params, (x, th, vx, w, F) = ex.cartpole()
    op = {**params, x: -0.5, th: 0.1, vx: 0.2, w: -0.1, F: 0.0}
    sys_lcs = symbolic.lcs(KM, gaps, op, 0.01)
    assert len(sys_lcs.active) == 0 and sys_lcs.F.shape == (0, 0)
    model = symbolic.ContactModel(KM, gaps, params)
    xstar, u = np.array([-0.5, 0.1, 0.2, -0.1]), np.zeros(1)
    errs = ex.one_step_errors(sys_lcs, model, xstar, u, 0.01, [1e-2, 5e-3])
    assert 3.6 < errs[0] / errs[1] < 4.4


def test_bad_input(built):
    KM, gaps, params, (x, th, vx, w, F) = ex.cartpole()
    with pytest.raises(ProblemError, match="no value for"):
        symbolic.lcs(KM, gaps, {x: 0.0, th: 0.0, vx: 0.0, w: 0.0, F: 0.0}, 0.01)
    sys_lcs = built[0]
    with pytest.raises(ProblemError, match="x"):
        sys_lcs.step(np.zeros(3), [0.0])


def test_to_modeling_one_step(built):
    from nsopt import modeling as nm
    sys_lcs, model, xstar, u, h = built
    x = xstar + 2e-3
    ds, inter, osi, hh = sys_lcs.to_modeling(x, u)
    nsds = nm.NonSmoothDynamicalSystem(t0=0.0, T=hh)
    nsds.link(inter, ds)
    sim = nm.TimeStepping(nsds, h=hh, integrator=osi, osns="lcp", method="lemke", tol=1e-12)
    sim.step()
    np.testing.assert_allclose(ds.x, sys_lcs.step(x, u)[0], rtol=1e-9, atol=1e-10)


def modeling_cartpole(model, x, u):
    """The cart-pole as nsopt.modeling objects, with the compiled SymPy model as plug-ins."""
    from nsopt import modeling as nm
    ds = nm.LagrangianDS(q0=x[:2], v0=x[2:], M=lambda q, z: model.M(q),
                         fint=lambda t, q, v, z: -model.F(q, v, u),       # M q̈ + F_int = p: F_int = -F
                         jacobian_fint_q=lambda t, q, v, z: -model.F_q(q, v, u),
                         jacobian_fint_v=lambda t, q, v, z: -model.F_v(q, v, u))
    rel = nm.LagrangianScleronomousR(h=lambda q, z: model.g(q), G0=lambda q, z: model.G(q))
    inter = nm.Interaction(nm.NewtonImpactNSL(e=0.0), rel)
    return nm, ds, inter


def test_against_modeling_time_stepping(built):
    """One step of nsopt.modeling's MoreauJeanOSI (the simulator) from x* + δ: equal to
    ContactModel.step, and lcs.step agrees with it to first order (error O(δ²))."""
    sys_lcs, model, xstar, u, h = built
    d = np.array([0.3, -0.5, 0.8, 0.1])
    d /= np.linalg.norm(d)
    errs = []
    for delta in (1e-2, 5e-3, 2.5e-3):
        x = xstar + delta * d
        nm, ds, inter = modeling_cartpole(model, x, u)
        nsds = nm.NonSmoothDynamicalSystem(t0=0.0, T=h)
        nsds.link(inter, ds)
        sim = nm.TimeStepping(nsds, h=h, integrator=nm.MoreauJeanOSI(theta=0.5), osns="lcp", method="lemke",
                              tol=1e-14, newton_tol=1e-13, newton_max_iter=100)
        sim.step()
        x_sim = np.concatenate([ds.q, ds.v])
        q1, v1, P, _ = model.step(x[:2], x[2:], u, h)
        np.testing.assert_allclose(x_sim, np.concatenate([q1, v1]), atol=1e-10)
        assert inter.lambda_[1][0] == pytest.approx(P[0], rel=1e-8)
        errs.append(np.linalg.norm(sys_lcs.step(x, u)[0] - x_sim))
    errs = np.array(errs)
    assert np.all((errs[:-1] / errs[1:] > 3.6) & (errs[:-1] / errs[1:] < 4.4)), errs


def test_lcs_from_modeling_system(built):
    """The same cart-pole given as nsopt.modeling objects (plug-ins, finite-difference curvature)
    linearizes to the same LCS as from SymPy."""
    sys_lcs, model, xstar, u, h = built
    nm, ds, inter = modeling_cartpole(model, xstar, u)
    nsds = nm.NonSmoothDynamicalSystem(t0=0.0, T=1.0)
    nsds.link(inter, ds)
    lm = symbolic.lcs(ds, [inter], None, h)
    assert list(lm.active) == [0]
    # the modeling system has the input folded into its forces: B u and H u move into d and c
    ref = dict(A=sys_lcs.A, D=sys_lcs.D, d=sys_lcs.d + sys_lcs.B @ u, E=sys_lcs.E, F=sys_lcs.F,
               c=sys_lcs.c + sys_lcs.H @ u)
    for name, b in ref.items():
        a = getattr(lm, name)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6 * max(1.0, np.abs(b).max()), err_msg=name)
    with pytest.raises(ProblemError, match="linked"):
        other = nm.Interaction(nm.NewtonImpactNSL(e=0.0), nm.LagrangianLinearTIR(H=[[1.0, 0.0]]))
        symbolic.lcs(ds, [other], None, h)
