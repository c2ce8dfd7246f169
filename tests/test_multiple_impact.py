"""The multiple-impact problem and its LZB method: two balls (analytic), Newton's cradle (conservation,
dispersion, the time-domain compliant chain as reference), bad input."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import nsopt
from nsopt.exceptions import OptionError, ProblemError
from nsopt.result import Status

RHO, YOUNG, POISSON = 7780.0, 203e9, 0.3     # steel, as in siconos-tutorials' ChainOfBalls
# Siconos counts a stored energy below DBL_EPSILON joules as zero (a contact then restarts from the
# velocity formula at every step), which stops the scheme from converging below impulse steps of about
# 1e-4 m V; with these thresholds the LZB scheme converges at first order in the impulse step.
SHARP = dict(tol_energy=1e-300, end_energy=1e-300)


def ball_mass(R):
    return 4.0 / 3.0 * np.pi * R**3 * RHO


def hertz_stiffness(R1, R2):
    """Hertz constant of two steel spheres, F = k delta^1.5 (Siconos' ChainOfBalls formula)."""
    return np.sqrt(R1 * R2 / (R1 + R2)) * (2.0 / 3.0) * YOUNG / (1.0 - POISSON**2)


def chain(masses, v, e=1.0, k=1e9, eta=1.5):
    nb = len(masses)
    H = np.zeros((nb - 1, nb))
    for i in range(nb - 1):
        H[i, i], H[i, i + 1] = -1.0, 1.0
    return nsopt.MultipleImpact(np.diag(masses), H, v, restitution=e, stiffness=k, elasticity=eta)


def cradle(nb, e=1.0, eta=1.5, R=0.01, V=1.0):
    m = ball_mass(R)
    v = np.zeros(nb)
    v[0] = V
    return chain(np.full(nb, m), v, e, hertz_stiffness(R, R), eta), m


def compliant_chain(masses, k, eta, v0):
    """Reference for e = 1: the time-domain chain of unilateral springs F = k delta^eta (delta > 0),
    integrated by DOP853 until long after the last contact has opened."""
    nb = len(masses)

    def rhs(t, y):
        x, v = y[:nb], y[nb:]
        f = k * np.maximum(0.0, x[:-1] - x[1:]) ** eta
        a = np.zeros(nb)
        a[:-1] -= f
        a[1:] += f
        return np.concatenate([v, a / masses])

    T = 50 * (np.max(masses) / np.min(k) / np.max(np.abs(v0)) ** (eta - 1)) ** (1 / (1 + eta))
    sol = solve_ivp(rhs, (0, T), np.concatenate([np.zeros(nb), v0]), method="DOP853", rtol=1e-11, atol=1e-14)
    return sol.y[nb:, -1]


# ------------------------------------------------------------------------------------ two balls
@pytest.mark.parametrize("compliance", ["bi", "mono"])
@pytest.mark.parametrize("eta", [1.5, 1.0])
@pytest.mark.parametrize("e", [1.0, 0.8, 0.5, 0.0])
def test_two_equal_balls_analytic(e, eta, compliance):
    """Two equal balls, V onto one at rest: v = V(1 -+ e)/2, to O(impulse_step / m)."""
    m, V = 0.0325889, 1.0
    p = nsopt.MultipleImpact(np.diag([m, m]), [[-1.0, 1.0]], [V, 0.0], restitution=e, stiffness=1.05e10,
                             elasticity=eta)
    dp = 1e-6
    s = nsopt.solve(p, method="lzb", impulse_step=dp, compliance=compliance)
    assert s.status is Status.SOLVED and s.error <= 1e-12
    assert np.allclose(s.v, [V * (1 - e) / 2, V * (1 + e) / 2], atol=2 * dp / m, rtol=0)
    assert s.p[0] == pytest.approx(m * V * (1 + e) / 2, abs=2 * dp)
    assert abs(m * s.v.sum() - m * V) <= 1e-15
    assert s.info["stored_energy"][0] == 0.0 and s.info["impact_duration"] > 0


def test_the_impulse_step_controls_the_error():
    m, V, e = 0.0325889, 1.0, 0.7
    p = nsopt.MultipleImpact(np.diag([m, m]), [[-1.0, 1.0]], [V, 0.0], restitution=e, stiffness=1e9)
    errs = [abs(nsopt.solve(p, method="lzb", impulse_step=dp).v[1] - V * (1 + e) / 2) for dp in (1e-4, 1e-6)]
    assert errs[1] < errs[0] / 10 and errs[1] <= 2e-6 / m


# ------------------------------------------------------------------------------------ Newton's cradle
@pytest.mark.parametrize("nb", [3, 5])
@pytest.mark.parametrize("e", [1.0, 0.8])
def test_cradle_conservation(nb, e):
    """Momentum to round-off; kinetic energy kept for e = 1 (to the O(impulse_step) of the scheme),
    lost for e < 1; every contact separating at the end."""
    p, m = cradle(nb, e)
    s = nsopt.solve(p, method="lzb", impulse_step=1e-5 * m)
    assert s.status is Status.SOLVED and s.error <= 1e-12
    assert abs(m * s.v.sum() - m * 1.0) <= 4 * np.finfo(float).eps * m * nb
    T0, T1 = p.kinetic_energy(p.v), p.kinetic_energy(s.v)
    if e == 1.0:
        assert abs(T1 - T0) <= 1e-4 * T0
    else:
        assert T1 < 0.8 * T0
    assert np.all(np.diff(s.v) >= -1e-12) and np.all(s.p > 0)
    assert s.info["kinetic_energy_post"] == pytest.approx(T1)


@pytest.mark.parametrize("nb", [3, 5])
def test_cradle_hertz_disperses(nb):
    """Hertz, e = 1: the last ball takes most but not all of the momentum (0.98 < v_last < 0.999 V);
    the first ball bounces back (v_0 < -0.05 V) and the middle ones keep small velocities (|v_i| < 0.15 V).
    Linear contacts (elasticity 1) disperse more: their last ball is slower."""
    p, m = cradle(nb, 1.0, 1.5)
    v = nsopt.solve(p, method="lzb", impulse_step=1e-5 * m).v
    assert 0.98 < v[-1] < 0.999
    assert v[0] < -0.05
    assert np.all(np.abs(v[:-1]) < 0.15)
    lin = nsopt.solve(cradle(nb, 1.0, 1.0)[0], method="lzb", impulse_step=1e-5 * m).v
    assert lin[-1] < v[-1] - 0.005 and lin[0] < v[0]


@pytest.mark.parametrize("nb,eta", [(3, 1.5), (3, 1.0), (5, 1.5), (5, 1.0)])
def test_cradle_elastic_matches_the_compliant_chain(nb, eta):
    """For e = 1 the LZB dynamics is a change of variable of the time-domain chain of unilateral springs
    F = k delta^eta: the post-impact velocities agree to 1e-4 V at impulse_step = 1e-5 m V (sharp
    energy thresholds), and to 1e-3 V with Siconos' default thresholds."""
    p, m = cradle(nb, 1.0, eta)
    ref = compliant_chain(np.full(nb, m), p.stiffness[0], eta, np.asarray(p.v))
    s = nsopt.solve(p, method="lzb", impulse_step=1e-5 * m, **SHARP)
    assert np.max(np.abs(s.v - ref)) <= 1e-4
    s = nsopt.solve(p, method="lzb", impulse_step=1e-5 * m)
    assert np.max(np.abs(s.v - ref)) <= 1e-3


def test_tapered_chain_elastic_matches_the_compliant_chain():
    """Unequal masses and stiffnesses (a tapered chain, radii shrinking by 5 % per ball)."""
    R = 0.01 * 0.95 ** np.arange(1, 7)
    masses = ball_mass(R)
    k = hertz_stiffness(R[:-1], R[1:])
    v0 = np.zeros(6)
    v0[0] = 1.0
    p = chain(masses, v0, 1.0, k, 1.5)
    s = nsopt.solve(p, method="lzb", impulse_step=1e-5 * masses[-1], **SHARP)
    assert np.max(np.abs(s.v - compliant_chain(masses, k, 1.5, v0))) <= 1e-4
    assert abs(masses @ s.v - masses[0]) <= 1e-15


# ------------------------------------------------------------------------------------ contract
def test_no_approaching_contact_is_no_impact():
    p = nsopt.MultipleImpact(np.eye(2), [[-1.0, 1.0]], [0.0, 1.0])
    s = nsopt.solve(p, method="lzb")
    assert s.success and s.nit == 0 and np.all(s.p == 0) and np.array_equal(s.v, p.v)


def test_empty_contact_set():
    p = nsopt.MultipleImpact(np.eye(2), np.zeros((0, 2)), [1.0, 0.0])
    s = nsopt.solve(p)
    assert s.success and s.p.shape == (0,) and np.array_equal(s.v, p.v)


def test_max_iter_callback_history_time_limit():
    p, m = cradle(3)
    s = nsopt.solve(p, method="lzb", impulse_step=1e-4 * m, max_iter=50)
    assert s.status is Status.MAX_ITER and s.nit == 50 and s.error > 0
    seen = []

    def cb(it):
        seen.append(it.error)
        if it.nit == 3:
            raise StopIteration
    s = nsopt.solve(p, method="lzb", impulse_step=1e-4 * m, callback=cb)
    assert s.status is Status.CALLBACK_STOP and s.nit == 3 and len(seen) == 3
    s = nsopt.solve(p, method="lzb", impulse_step=1e-4 * m, history=True)
    assert s.success and len(s.history) == s.nit + 1 and s.history[-1] <= 1e-15
    s = nsopt.solve(p, method="lzb", impulse_step=1e-8 * m, time_limit=0.05)
    assert s.status is Status.TIME_LIMIT and s.solve_time < 5


def test_error_measure():
    p, m = cradle(3)
    s = nsopt.solve(p, method="lzb", impulse_step=1e-4 * m)
    assert p.error(s.p) <= 1e-12 and p.error(s.p, s.v) <= 1e-12
    assert p.error(np.zeros(2)) > 0.1                       # ball 0 still runs into ball 1
    assert p.error(s.p, s.v + 0.1) > 1e-3                   # momentum balance broken
    assert p.error(-s.p) > 0.1
    assert np.allclose(p.complete({"v": s.v})["p"], s.p)


# ------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("kw,field", [
    (dict(M=np.eye(3)), "H"),
    (dict(M=[[1.0, 2.0], [0.0, 1.0]]), "M"),
    (dict(M=[[1.0, 0.0], [0.0, -1.0]]), "M"),
    (dict(v=[1.0, 0.0, 0.0]), "v"),
    (dict(v=[np.nan, 0.0]), "v"),
    (dict(restitution=1.5), "restitution"),
    (dict(restitution=-0.1), "restitution"),
    (dict(restitution=[0.5, 0.5]), "restitution"),
    (dict(stiffness=0.0), "stiffness"),
    (dict(stiffness=np.inf), "stiffness"),
    (dict(elasticity=-1.0), "elasticity"),
    (dict(H=[[1.0, 1.0, 1.0]]), "H"),
])
def test_bad_input(kw, field):
    args = dict(M=np.eye(2), H=[[-1.0, 1.0]], v=[1.0, 0.0], restitution=0.9, stiffness=1e8, elasticity=1.5)
    args.update(kw)
    with pytest.raises(ProblemError, match=field):
        nsopt.MultipleImpact(**args)


@pytest.mark.parametrize("opt", [dict(impulse_step=0.0), dict(impulse_step=-1e-6), dict(impulse_step="x"),
                                 dict(compliance="tri"), dict(end_energy=-1.0), dict(omega=1.0)])
def test_bad_options(opt):
    p = nsopt.MultipleImpact(np.eye(2), [[-1.0, 1.0]], [1.0, 0.0])
    with pytest.raises(OptionError):
        nsopt.solve(p, method="lzb", **opt)


def test_immutable_replace_pickle():
    import pickle

    p, m = cradle(3)
    with pytest.raises(AttributeError):
        p.v = np.zeros(3)
    p2 = p.replace(restitution=0.5)
    assert p2.restitution.shape == (2,) and p2.restitution[1] == 0.5 and p2.M is p.M
    assert pickle.loads(pickle.dumps(p)) == p
    with pytest.raises(ProblemError, match="restitution"):
        p.replace(restitution=2.0)


# ------------------------------------------------------------------------------------ modeling layer
def _ts_cradle(nb, e=1.0, **kw):
    from nsopt import modeling as nm

    R = 0.01
    m, k = ball_mass(R), hertz_stiffness(R, R)
    balls = [nm.LagrangianLinearTIDS(q0=[2 * R * i - (1e-3 if i == 0 else 0.0)], v0=[1.0 if i == 0 else 0.0],
                                     M=[[m]]) for i in range(nb)]
    nsds = nm.NonSmoothDynamicalSystem(0.0, 3e-3)
    for i in range(nb - 1):
        law = nm.MultipleImpactNSL(e, k, 1.5)
        nsds.link(nm.Interaction(law, nm.LagrangianLinearTIR(H=[[-1.0, 1.0]], b=[-2 * R])), balls[i], balls[i + 1])
    return nm.TimeStepping(nsds, h=1e-4, impulse_step=1e-5 * m, **kw), balls, m


@pytest.mark.parametrize("e", [1.0, 0.8])
def test_time_stepping_with_the_multiple_impact_osns(e):
    """Moreau–Jean with osns="multiple-impact": the cradle simulated in time leaves with the velocities
    of the LZB impact computed directly (to round-off), and the balls separate afterwards."""
    sim, balls, m = _ts_cradle(3, e, osns="multiple-impact")
    tr = sim.run()
    assert tr.failed_steps == [] and sim.osns_kind == "multiple-impact"
    v_end = np.array([tr.v(b)[-1, 0] for b in balls])
    ref = nsopt.solve(cradle(3, e)[0], method="lzb", impulse_step=1e-5 * m).v
    assert np.max(np.abs(v_end - ref)) <= 1e-12
    x_end = np.array([tr.q(b)[-1, 0] for b in balls])
    assert np.all(np.diff(x_end) >= 2 * 0.01 - 1e-12)
    sim2, _, _ = _ts_cradle(3, e)                      # osns inferred from the laws
    assert sim2.osns_kind == "multiple-impact"


def test_multiple_impact_law_bad_input():
    from nsopt import modeling as nm
    from nsopt.exceptions import ModelingError

    for bad in (dict(e=1.5, stiffness=1.0), dict(e=0.5, stiffness=0.0), dict(e=0.5, stiffness=1.0, elasticity=-1)):
        with pytest.raises(ModelingError):
            nm.MultipleImpactNSL(**bad)
    with pytest.raises(ModelingError, match="osns"):
        _ts_cradle(2, osns="lcp")


def test_from_delassus_is_the_same_impact():
    p, m = cradle(4, 0.9)
    W, u = p.delassus(), p.u(p.v)
    q = nsopt.MultipleImpact.from_delassus(W, u, 0.9, p.stiffness, 1.5)
    a = nsopt.solve(p, method="lzb", impulse_step=1e-4 * m)
    b = nsopt.solve(q, method="lzb", impulse_step=1e-4 * m)
    assert np.allclose(a.p, b.p, rtol=1e-10, atol=1e-15) and a.nit == b.nit
    with pytest.raises(ProblemError, match="W"):
        nsopt.MultipleImpact.from_delassus(-np.eye(2), [1.0, 0.0])


# ------------------------------------------------------------------------------------ Siconos 4.4
def test_agrees_with_siconos_multiple_impact():
    """A 5-ball tapered chain (e = 0.9, Hertz): lzb and Siconos 4.4's MultipleImpact (the C++ driver of
    benchmarks/, built once with g++ against the installed kernel) agree to 1e-12. Skips without them."""
    import shutil
    import sys
    from pathlib import Path

    if shutil.which("g++") is None:
        pytest.skip("g++ not available")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import bench_multiple_impact_siconos as b

    exe = b.build()
    if exe is None:
        pytest.skip("Siconos kernel headers/library (libsiconos-kernel-dev) not available")
    R = b.tapered(5)
    mass, e, k, eta = b.chain_data(R, 0.9, 1.5)
    dp = 1e-4 * float(mass.min())
    ref, _ = b.run_siconos(exe, R, mass, e, k, eta, 1.0, dp, "BiStiffness")
    s, _ = b.run_nsopt(mass, e, k, eta, 1.0, dp, "BiStiffness")
    assert np.max(np.abs(s.v - ref["v"])) <= 1e-12
    assert np.max(np.abs(s.p - ref["p"])) <= 1e-12 * np.max(ref["p"])
