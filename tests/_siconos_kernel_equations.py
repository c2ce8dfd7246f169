"""Siconos' side of tests/test_siconos_kernel_equations.py, run by /usr/bin/python3 (siconos.kernel 4.4).

Usage: /usr/bin/python3 _siconos_kernel_equations.py OUT.npz [CASE ...]

Each case is a model whose every term is non-zero (internal, gyroscopic and external forces, a
time-dependent relation or operator, restitution, friction), built from Siconos' classes with its
plug-ins written in C (compiled here with gcc: Siconos' plug-in signatures, ``PluginTypes.hpp``;
matrices column-major), simulated by Siconos' ``TimeStepping``; every step's state, outputs and
multipliers are written to OUT.npz as ``<case>.<field>`` arrays. The same formulas, written with
numpy as nsopt plug-ins, are in the test. ``<case>.forces`` (where present) holds the kernel's
``forces()`` and its Jacobians at sample states (``samples``), the equation itself.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import siconos.kernel as sk
import siconos.numerics as sn

PLUGINS = r"""
#include <math.h>
/* ---- lagrangian_ds: M(q), F_gyr(q, v), F_int(t, q, v), F_ext(t); a scleronomous contact */
void lag_mass(unsigned int n, double* q, double* M, unsigned int nz, double* z)
{ M[0] = 2 + 0.5 * cos(q[1]); M[1] = 0.3 + 0.1 * sin(q[0]); M[2] = M[1]; M[3] = 1.5; }
void lag_fgyr(unsigned int n, double* q, double* v, double* f, unsigned int nz, double* z)
{ f[0] = 0.5 * sin(q[1]) * v[0] * v[1] + 0.1 * v[1] * v[1];
  f[1] = -0.25 * sin(q[1]) * v[0] * v[0] + 0.05 * q[0] * v[0] * v[1]; }
void lag_fgyr_q(unsigned int n, double* q, double* v, double* J, unsigned int nz, double* z)
{ J[0] = 0; J[1] = 0.05 * v[0] * v[1]; J[2] = 0.5 * cos(q[1]) * v[0] * v[1]; J[3] = -0.25 * cos(q[1]) * v[0] * v[0]; }
void lag_fgyr_v(unsigned int n, double* q, double* v, double* J, unsigned int nz, double* z)
{ J[0] = 0.5 * sin(q[1]) * v[1]; J[1] = -0.5 * sin(q[1]) * v[0] + 0.05 * q[0] * v[1];
  J[2] = 0.5 * sin(q[1]) * v[0] + 0.2 * v[1]; J[3] = 0.05 * q[0] * v[0]; }
void lag_fint(double t, unsigned int n, double* q, double* v, double* f, unsigned int nz, double* z)
{ f[0] = 20 * q[0] - 5 * q[1] + 0.3 * q[0] * q[0] * q[0] + 0.4 * v[0] + 0.2 * sin(t);
  f[1] = -5 * q[0] + 10 * q[1] + 0.2 * v[1] + 0.1 * v[0] * q[1]; }
void lag_fint_q(double t, unsigned int n, double* q, double* v, double* J, unsigned int nz, double* z)
{ J[0] = 20 + 0.9 * q[0] * q[0]; J[1] = -5; J[2] = -5; J[3] = 10 + 0.1 * v[0]; }
void lag_fint_v(double t, unsigned int n, double* q, double* v, double* J, unsigned int nz, double* z)
{ J[0] = 0.4; J[1] = 0.1 * q[1]; J[2] = 0; J[3] = 0.2; }
void lag_fext(double t, unsigned int n, double* f, unsigned int nz, double* z)
{ f[0] = cos(2 * t); f[1] = -9.81 + 0.5 * sin(3 * t); }
void lag_h(unsigned int nq, double* q, unsigned int ny, double* y, unsigned int nz, double* z)
{ y[0] = q[1] + 0.4 + 0.1 * sin(q[0]); }
void lag_G0(unsigned int nq, double* q, unsigned int ny, double* G, unsigned int nz, double* z)
{ G[0] = 0.1 * cos(q[0]); G[1] = 1.0; }

/* ---- lagrangian_lti: F_ext(t) of a LagrangianLinearTIDS */
void lti_fext(double t, unsigned int n, double* f, unsigned int nz, double* z)
{ f[0] = sin(5 * t); f[1] = -9.81; f[2] = 0.3 * cos(t); }

/* ---- rheonomous: a LagrangianDS (constant M) against a moving, curved obstacle */
void rh_fint(double t, unsigned int n, double* q, double* v, double* f, unsigned int nz, double* z)
{ f[0] = 50 * q[0] + 5 * q[0] * q[0] * q[0] + 0.5 * v[0]; f[1] = 8 * q[1] - 2 * q[0] + 0.3 * v[1] * v[0]; }
void rh_fint_q(double t, unsigned int n, double* q, double* v, double* J, unsigned int nz, double* z)
{ J[0] = 50 + 15 * q[0] * q[0]; J[1] = -2; J[2] = 0; J[3] = 8; }
void rh_fint_v(double t, unsigned int n, double* q, double* v, double* J, unsigned int nz, double* z)
{ J[0] = 0.5; J[1] = 0.3 * v[1]; J[2] = 0; J[3] = 0.3 * v[0]; }
void rh_fgyr(unsigned int n, double* q, double* v, double* f, unsigned int nz, double* z)
{ f[0] = 0.1 * v[1] * v[1]; f[1] = 0.2 * v[0] * v[1]; }
void rh_fgyr_q(unsigned int n, double* q, double* v, double* J, unsigned int nz, double* z)
{ J[0] = 0; J[1] = 0; J[2] = 0; J[3] = 0; }
void rh_fgyr_v(unsigned int n, double* q, double* v, double* J, unsigned int nz, double* z)
{ J[0] = 0; J[1] = 0.2 * v[1]; J[2] = 0.2 * v[1]; J[3] = 0.2 * v[0]; }
void rh_h(unsigned int nq, double* q, double t, unsigned int ny, double* y, unsigned int nz, double* z)
{ y[0] = q[0] + 0.1 * q[1] * q[1] + 0.3 + 0.05 * sin(8 * t); }
void rh_G0(unsigned int nq, double* q, double t, unsigned int ny, double* G, unsigned int nz, double* z)
{ G[0] = 1.0; G[1] = 0.2 * q[1]; }
void rh_hdot(unsigned int nq, double* q, double t, unsigned int ny, double* y, unsigned int nz, double* z)
{ y[0] = 0.4 * cos(8 * t); }

/* ---- first_order_linear: A(t), b(t) of a FirstOrderLinearDS, C(t) of a FirstOrderLinearR */
void fo_A(double t, unsigned int r, unsigned int c, double* A, unsigned int nz, double* z)
{ A[0] = 0; A[1] = -(4 + sin(t)); A[2] = 1; A[3] = -0.3; }
void fo_b(double t, unsigned int n, double* b, unsigned int nz, double* z)
{ b[0] = 0; b[1] = 0.5 * cos(2 * t); }
void fo_C(double t, unsigned int r, unsigned int c, double* C, unsigned int nz, double* z)
{ C[0] = 1; C[1] = 0.1 * sin(t); }

/* ---- first_order_nonlinear: f(t, x) of a FirstOrderNonLinearDS (a Duffing oscillator) */
void fn_f(double t, unsigned int n, double* x, double* f, unsigned int nz, double* z)
{ f[0] = x[1]; f[1] = -x[0] - 0.5 * x[0] * x[0] * x[0] + 0.2 * sin(t) - 0.1 * x[1]; }
void fn_jf(double t, unsigned int n, double* x, double* J, unsigned int nz, double* z)
{ J[0] = 0; J[1] = -1 - 1.5 * x[0] * x[0]; J[2] = 1; J[3] = -0.1; }

/* ---- first_order_nonlinear_relation: y = h(x, λ), r = g(x, λ) (FirstOrderNonLinearR) */
void fr_h(double t, unsigned int nx, double* x, unsigned int nl, double* l, double* y, unsigned int nz, double* z)
{ y[0] = x[0] + 0.1 * x[0] * x[0] * x[0] + 0.2 * l[0] + 0.1; }
void fr_g(double t, unsigned int nx, double* x, unsigned int nl, double* l, double* r, unsigned int nz, double* z)
{ r[0] = 0; r[1] = l[0] * (1 + 0.1 * x[0] * x[0]); }
void fr_C(double t, unsigned int nx, double* x, unsigned int nl, double* l, double* C, unsigned int nz, double* z)
{ C[0] = 1 + 0.3 * x[0] * x[0]; C[1] = 0; }
void fr_D(double t, unsigned int nx, double* x, unsigned int nl, double* l, double* D, unsigned int nz, double* z)
{ D[0] = 0.2; }
void fr_K(double t, unsigned int nx, double* x, unsigned int nl, double* l, double* K, unsigned int nz, double* z)
{ K[0] = 0; K[1] = 0.2 * l[0] * x[0]; K[2] = 0; K[3] = 0; }
void fr_B(double t, unsigned int nx, double* x, unsigned int nl, double* l, double* B, unsigned int nz, double* z)
{ B[0] = 0; B[1] = 1 + 0.1 * x[0] * x[0]; }

/* ---- newton_euler: f_ext(t), m_ext(t), f_int(t, q, v), m_int(t, q, v) of a NewtonEulerDS */
void ne_fext(double t, double* f, unsigned int nz, double* z)
{ f[0] = sin(t); f[1] = 0.5; f[2] = -9.81; }
void ne_mext(double t, double* m, unsigned int nz, double* z)
{ m[0] = 0.1 * cos(t); m[1] = 0.0; m[2] = 0.2; }
void ne_fint(double t, double* q, double* v, double* f, unsigned int nz, double* z)
{ f[0] = 2 * q[0] + 0.1 * v[0]; f[1] = 2 * q[1] + 0.3 * q[4]; f[2] = 3 * q[2] + 0.2 * v[2] + 0.1 * v[4]; }
void ne_mint(double t, double* q, double* v, double* m, unsigned int nz, double* z)
{ m[0] = 0.05 * v[3] + 0.1 * q[5]; m[1] = 0.05 * v[4] + 0.02 * v[0]; m[2] = 0.05 * v[5] + 0.1 * q[0] * q[6]; }
"""


def compile_plugins(folder):
    """The plug-ins above as ``folder/eq.so``; their Siconos name prefix (``folder/eq``)."""
    src = os.path.join(folder, "eq.c")
    with open(src, "w") as f:
        f.write(PLUGINS)
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", os.path.join(folder, "eq.so"), src, "-lm"], check=True)
    return os.path.join(folder, "eq")


def _run(s, record):
    """Step ``s`` to its end; ``record(k)`` after each step (and at k = 0, once the simulation has computed
    the initial outputs)."""
    s.initialize()
    k = 0
    record(k)
    while s.hasNextEvent():
        s.computeOneStep()
        k += 1
        record(k)
        s.nextStep()
    return k


def _lagrangian_recorder(out, N, dss, inters):
    for a, ds in enumerate(dss):
        out[f"q{a}"], out[f"v{a}"] = np.zeros((N + 1, ds.dimension())), np.zeros((N + 1, ds.dimension()))
    for b, it in enumerate(inters):
        m = it.dimension()
        out[f"y0_{b}"], out[f"y1_{b}"], out[f"lam{b}"] = (np.zeros((N + 1, m)) for _ in range(3))

    def rec(k):
        for a, ds in enumerate(dss):
            out[f"q{a}"][k], out[f"v{a}"][k] = ds.q(), ds.velocity()
        for b, it in enumerate(inters):
            out[f"y0_{b}"][k], out[f"y1_{b}"][k], out[f"lam{b}"][k] = it.y(0), it.y(1), it.lambda_(1)
    return rec


def _first_order_recorder(out, N, dss, inters):
    for a, ds in enumerate(dss):
        out[f"x{a}"] = np.zeros((N + 1, ds.dimension()))
    for b, it in enumerate(inters):
        m = it.dimension()
        out[f"y0_{b}"], out[f"lam{b}"] = np.zeros((N + 1, m)), np.zeros((N + 1, m))

    def rec(k):
        for a, ds in enumerate(dss):
            out[f"x{a}"][k] = ds.x()
        for b, it in enumerate(inters):
            out[f"y0_{b}"][k], out[f"lam{b}"][k] = it.y(0), it.lambda_(0)
    return rec


def _simulate(dss, inters_links, T, h, osi, osns, recorder, nonlinear=False):
    nsds = sk.NonSmoothDynamicalSystem(0.0, T)
    for ds in dss:
        nsds.insertDynamicalSystem(ds)
    inters = []
    for it, *ds in inters_links:
        nsds.link(it, *ds)
        inters.append(it)
    s = sk.TimeStepping(nsds, sk.TimeDiscretisation(0.0, h), osi, osns)
    if nonlinear:
        s.setNewtonOptions(sk.SICONOS_TS_NONLINEAR)
        # Siconos' loop stops on the systems' residual M(v - v_k) - h(1-θ)F_k - hθF - p, blind to the change of
        # G0(q) between iterates; nsopt's also asks the velocity to settle. Tolerance 0: every step iterates
        # to the fixed point (20 iterations; its "max. number of steps reached" notes go to /dev/null)
        s.setNewtonTolerance(0.0)
        s.setNewtonMaxIteration(20)
    N = round(T / h)
    out = {}
    with _quiet():
        steps = _run(s, recorder(out, N, dss, inters))
    assert steps == N, (steps, N)
    return out


class _quiet:
    """Siconos' C++ prints to the process's stdout: to /dev/null inside the block."""

    def __enter__(self):
        sys.stdout.flush()
        self.saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)

    def __exit__(self, *exc):
        os.dup2(self.saved, 1)
        os.close(self.saved)


def _samples(rng, n, k=4):
    return [(float(rng.uniform(0, 2)), rng.uniform(-1, 1, n), rng.uniform(-2, 2, n)) for _ in range(k)]


def lagrangian_ds(lib):
    """A LagrangianDS with every operator plugged (M(q), F_gyr, F_int(t), F_ext(t), their Jacobians) and a
    scleronomous contact with Newton's impact law; θ = 1/2; the Newton loop to 1e-13."""
    def build():
        ds = sk.LagrangianDS([0.3, 0.2], [0.5, -1.0], lib + ":lag_mass")
        ds.setComputeFGyrFunction(lib, "lag_fgyr")
        ds.setComputeJacobianFGyrqFunction(lib, "lag_fgyr_q")
        ds.setComputeJacobianFGyrqDotFunction(lib, "lag_fgyr_v")
        ds.setComputeFIntFunction(lib, "lag_fint")
        ds.setComputeJacobianFIntqFunction(lib, "lag_fint_q")
        ds.setComputeJacobianFIntqDotFunction(lib, "lag_fint_v")
        ds.setComputeFExtFunction(lib, "lag_fext")
        return ds
    ds = build()
    inter = sk.Interaction(sk.NewtonImpactNSL(0.6), sk.LagrangianScleronomousR(lib + ":lag_h", lib + ":lag_G0"))
    out = _simulate([ds], [(inter, ds)], 1.5, 1e-3, sk.MoreauJeanOSI(0.5), sk.LCP(), _lagrangian_recorder, True)
    # the equation itself: forces() = F_ext - F_int - F_gyr and its Jacobians at sample states
    probe = build()
    nsds = sk.NonSmoothDynamicalSystem(0.0, 1.0)
    nsds.insertDynamicalSystem(probe)
    sk.TimeStepping(nsds, sk.TimeDiscretisation(0.0, 0.1), sk.MoreauJeanOSI(0.5), sk.LCP()).initialize()
    S, F, Kq, Cv = [], [], [], []
    for t, q, v in _samples(np.random.default_rng(0), 2):
        probe.setQPtr(q)
        probe.setVelocityPtr(v)
        probe.computeForces(t, probe.q(), probe.velocity())
        probe.computeJacobianqForces(t)
        probe.computeJacobianvForces(t)
        S.append(np.concatenate([[t], q, v]))
        F.append(np.array(probe.forces()).copy())
        Kq.append(np.array(probe.jacobianqForces()).copy())
        Cv.append(np.array(probe.jacobianvForces()).copy())
    out.update(samples=np.array(S), forces=np.array(F), jacobian_q=np.array(Kq), jacobian_v=np.array(Cv))
    return out


def lagrangian_lti(lib):
    """A LagrangianLinearTIDS (non-diagonal M, K, Rayleigh C, F_ext(t) plugged), two LagrangianLinearTIR
    with offsets b and Newton's impact law (e = 0.5 and 0)."""
    M = np.array([[2.0, 0.2, 0.0], [0.2, 1.0, 0.0], [0.0, 0.0, 0.5]])
    K = np.array([[30.0, -10.0, 0.0], [-10.0, 20.0, -5.0], [0.0, -5.0, 10.0]])
    C = 0.05 * K + 0.2 * M
    ds = sk.LagrangianLinearTIDS([0.1, 0.5, -0.2], [0.0, -1.0, 0.5], M, K, C)
    ds.setComputeFExtFunction(lib, "lti_fext")
    i1 = sk.Interaction(sk.NewtonImpactNSL(0.5), sk.LagrangianLinearTIR(np.array([[0.0, 1.0, 0.2]]), [0.3]))
    i2 = sk.Interaction(sk.NewtonImpactNSL(0.0), sk.LagrangianLinearTIR(np.array([[1.0, 0.0, -1.0]]), [0.25]))
    out = _simulate([ds], [(i1, ds), (i2, ds)], 2.0, 2e-3, sk.MoreauJeanOSI(0.5), sk.LCP(), _lagrangian_recorder)
    ds.computeForces(0.3, np.array([0.2, -0.1, 0.4]), np.array([1.0, 0.5, -2.0]))
    out["forces"] = ds.forces().copy()
    return out


def rheonomous(lib):
    """A LagrangianDS (constant M, F_int and F_gyr plugged, constant F_ext) against a moving, curved
    obstacle: LagrangianRheonomousR h(q, t), G0(q, t), ∂h/∂t(q, t); θ = 1/2."""
    ds = sk.LagrangianDS([0.4, 0.1], [0.0, 0.0], np.diag([1.0, 2.0]))
    ds.setComputeFIntFunction(lib, "rh_fint")
    ds.setComputeJacobianFIntqFunction(lib, "rh_fint_q")
    ds.setComputeJacobianFIntqDotFunction(lib, "rh_fint_v")
    ds.setComputeFGyrFunction(lib, "rh_fgyr")
    ds.setComputeJacobianFGyrqFunction(lib, "rh_fgyr_q")
    ds.setComputeJacobianFGyrqDotFunction(lib, "rh_fgyr_v")
    ds.setFExtPtr([0.5, -3.0])
    rel = sk.LagrangianRheonomousR(lib + ":rh_h", lib + ":rh_G0", lib + ":rh_hdot")
    inter = sk.Interaction(sk.NewtonImpactNSL(0.8), rel)
    return _simulate([ds], [(inter, ds)], 1.5, 1e-3, sk.MoreauJeanOSI(0.5), sk.LCP(), _lagrangian_recorder, True)


def friction2d(lib):
    """A disk (x, y, θ) sliding then rolling on the ground: LagrangianLinearTIDS with K, C and F_ext, a
    LagrangianLinearTIR (normal, tangent) with NewtonImpactFrictionNSL(en = 0.2, et = 0, μ = 0.4, 2),
    FrictionContact(2) by Lemke."""
    ds = sk.LagrangianLinearTIDS([0.0, 0.25, 0.0], [2.0, 0.0, 0.0], np.diag([1.0, 1.0, 0.005]),
                                 np.diag([4.0, 0.0, 0.0]), np.diag([0.1, 0.0, 0.001]))
    ds.setFExtPtr([1.5, -9.81, 0.02])
    rel = sk.LagrangianLinearTIR(np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.1]]), [-0.1, 0.0])
    inter = sk.Interaction(sk.NewtonImpactFrictionNSL(0.2, 0.0, 0.4, 2), rel)
    osns = sk.FrictionContact(2, sn.SICONOS_FRICTION_2D_LEMKE)
    return _simulate([ds], [(inter, ds)], 1.5, 2e-3, sk.MoreauJeanOSI(0.5), osns, _lagrangian_recorder)


def friction3d(lib):
    """A particle sliding, then sticking, on the ground in 3D: LagrangianLinearTIDS (x, y, z) with K, C and
    F_ext, LagrangianLinearTIR (normal, two tangents, offset b), NewtonImpactFrictionNSL(en = 0.3, et = 0,
    μ = 0.5, 3), FrictionContact(3) by NSGS to 1e-15."""
    ds = sk.LagrangianLinearTIDS([0.0, 0.0, 0.2], [2.0, 1.0, 0.0], np.diag([1.0, 1.0, 1.0]),
                                 np.diag([3.0, 1.0, 0.0]), np.diag([0.1, 0.2, 0.0]))
    ds.setFExtPtr([0.5, -0.3, -9.81])
    rel = sk.LagrangianLinearTIR(np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), [-0.05, 0.0, 0.0])
    inter = sk.Interaction(sk.NewtonImpactFrictionNSL(0.3, 0.0, 0.5, 3), rel)
    osns = sk.FrictionContact(3, sn.SICONOS_FRICTION_3D_NSGS)
    osns.numericsSolverOptions().dparam[sn.SICONOS_DPARAM_TOL] = 1e-15
    osns.numericsSolverOptions().iparam[sn.SICONOS_IPARAM_MAX_ITER] = 100000
    return _simulate([ds], [(inter, ds)], 1.5, 2e-3, sk.MoreauJeanOSI(0.5), osns, _lagrangian_recorder)


def equality(lib):
    """Two LagrangianLinearTIDS joined by a bar (EqualityConditionNSL, LagrangianLinearTIR between two
    systems), each on the ground with Newton's impact law: an MLCP (Siconos' enumeration)."""
    d1 = sk.LagrangianLinearTIDS([0.0, 0.3], [0.5, 0.0], np.eye(2), np.diag([5.0, 0.0]), np.diag([0.1, 0.1]))
    d1.setFExtPtr([1.0, -9.81])
    d2 = sk.LagrangianLinearTIDS([0.5, 0.1], [0.5, 1.0], 2 * np.eye(2), np.diag([0.0, 3.0]), np.zeros((2, 2)))
    d2.setFExtPtr([0.0, -19.62])
    bar = sk.Interaction(sk.EqualityConditionNSL(1), sk.LagrangianLinearTIR(np.array([[1.0, 0.0, -1.0, 0.0]]), [0.5]))
    g1 = sk.Interaction(sk.NewtonImpactNSL(0.5), sk.LagrangianLinearTIR(np.array([[0.0, 1.0]])))
    g2 = sk.Interaction(sk.NewtonImpactNSL(0.3), sk.LagrangianLinearTIR(np.array([[0.0, 1.0]]), [0.2]))
    return _simulate([d1, d2], [(bar, d1, d2), (g1, d1), (g2, d2)], 1.5, 2e-3, sk.MoreauJeanOSI(0.5),
                     sk.MLCP(sn.SICONOS_MLCP_ENUM), _lagrangian_recorder)


def first_order_linear(lib):
    """FirstOrderLinearDS with A(t), b(t) plugged; FirstOrderLinearR with C(t) plugged, B, D, e; a
    complementarity law; EulerMoreauOSI(θ = 1/2) (γ = 1)."""
    ds = sk.FirstOrderLinearDS([1.0, 0.0], lib + ":fo_A", lib + ":fo_b")
    rel = sk.FirstOrderLinearR(np.array([[1.0, 0.0]]), np.array([[0.0], [1.0]]))
    rel.setComputeCFunction(lib, "fo_C")
    rel.setDPtr(np.array([[0.1]]))
    rel.setePtr([0.2])
    inter = sk.Interaction(sk.ComplementarityConditionNSL(1), rel)
    return _simulate([ds], [(inter, ds)], 5.0, 1e-2, sk.EulerMoreauOSI(0.5), sk.LCP(), _first_order_recorder)


def first_order_lti_relay(lib):
    """FirstOrderLinearTIDS (A, b), FirstOrderLinearTIR (C, B, D, e), RelayNSL(lb = -1, ub = 2): a dry
    friction oscillator; a Relay problem by Lemke; EulerMoreauOSI(θ = 1/2)."""
    ds = sk.FirstOrderLinearTIDS([1.0, 0.5], np.array([[0.0, 1.0], [-1.0, -0.1]]), [0.0, 0.5])
    rel = sk.FirstOrderLinearTIR(np.array([[0.0, 1.0]]), np.array([[0.0], [1.0]]))
    rel.setDPtr(np.array([[0.01]]))
    rel.setePtr([0.05])
    inter = sk.Interaction(sk.RelayNSL(1, -1.0, 2.0), rel)
    return _simulate([ds], [(inter, ds)], 10.0, 1e-2, sk.EulerMoreauOSI(0.5), sk.Relay(sn.SICONOS_RELAY_LEMKE),
                     _first_order_recorder)


def first_order_nonlinear(lib):
    """FirstOrderNonLinearDS f(t, x) and its Jacobian plugged (a forced Duffing oscillator) with the
    FirstOrderNonLinearR of :func:`first_order_nonlinear_relation`; complementarity; EulerMoreauOSI(θ = 1/2);
    the Newton loop to 1e-13. (Siconos 4.4 segfaults in its first step when a FirstOrderNonLinearDS has a
    FirstOrderLinearTIR.)"""
    ds = sk.FirstOrderNonLinearDS([0.5, -1.0], lib + ":fn_f", lib + ":fn_jf")
    inter = sk.Interaction(sk.ComplementarityConditionNSL(1), _nonlinear_relation(lib))
    return _simulate([ds], [(inter, ds)], 5.0, 1e-2, sk.EulerMoreauOSI(0.5), sk.LCP(), _first_order_recorder, True)


def _nonlinear_relation(lib):
    rel = sk.FirstOrderNonLinearR()
    rel.setComputehFunction(lib, "fr_h")
    rel.setComputegFunction(lib, "fr_g")
    rel.setComputeJachxFunction(lib, "fr_C")
    rel.setComputeJachlambdaFunction(lib, "fr_D")
    rel.setComputeJacgxFunction(lib, "fr_K")
    rel.setComputeJacglambdaFunction(lib, "fr_B")
    return rel


def first_order_nonlinear_relation(lib):
    """FirstOrderLinearTIDS and a FirstOrderNonLinearR y = h(x, λ), r = g(x, λ) with its four Jacobians
    plugged (C = ∇x h, D = ∇λ h, K = ∇x g, B = ∇λ g); complementarity; EulerMoreauOSI(θ = 1/2); Newton
    to 1e-13."""
    ds = sk.FirstOrderLinearTIDS([1.0, -0.5], np.array([[0.0, 1.0], [-2.0, -0.2]]), [0.0, -0.3])
    inter = sk.Interaction(sk.ComplementarityConditionNSL(1), _nonlinear_relation(lib))
    return _simulate([ds], [(inter, ds)], 5.0, 1e-2, sk.EulerMoreauOSI(0.5), sk.LCP(), _first_order_recorder, True)


def newton_euler(lib):
    """A NewtonEulerDS (non-isotropic inertia: a gyroscopic moment) with f_ext(t), m_ext(t) (body frame),
    f_int(t, q, v), m_int(t, q, v) plugged: the wrench computeForces() at sample states, and a free flight
    (MoreauJeanOSI(1/2) with T(q) taken at the step's start, ``setExplicitNewtonEulerDSOperators``)."""
    def build(q0, v0):
        ds = sk.NewtonEulerDS(q0, v0, 2.0, np.diag([0.1, 0.2, 0.3]))
        ds.setComputeFExtFunction(lib, "ne_fext")
        ds.setComputeMExtFunction(lib, "ne_mext")
        ds.setComputeFIntFunction(lib, "ne_fint")
        ds.setComputeMIntFunction(lib, "ne_mint")
        return ds
    rng = np.random.default_rng(1)
    S, F = [], []
    for _ in range(4):
        t = float(rng.uniform(0, 2))
        quat = rng.normal(size=4)
        q = np.concatenate([rng.uniform(-1, 1, 3), quat / np.linalg.norm(quat)])
        v = rng.uniform(-2, 2, 6)
        ds = build(q, v)
        ds.computeForces(t, ds.q(), ds.twist())
        S.append(np.concatenate([[t], q, v]))
        F.append(np.array(ds.forces()).copy())
    q0 = np.array([0.1, -0.2, 0.3, 1.0, 0.0, 0.0, 0.0])
    v0 = np.array([1.0, 0.0, 2.0, 1.0, -2.0, 0.5])
    ds = build(q0, v0)
    osi = sk.MoreauJeanOSI(0.5)
    osi.setExplicitNewtonEulerDSOperators(True)
    nsds = sk.NonSmoothDynamicalSystem(0.0, 0.5)
    nsds.insertDynamicalSystem(ds)
    s = sk.TimeStepping(nsds, sk.TimeDiscretisation(0.0, 1e-3), osi, sk.LCP())
    s.setNewtonOptions(sk.SICONOS_TS_NONLINEAR)
    s.setNewtonTolerance(0.0)                 # to the fixed point, as in _simulate
    s.setNewtonMaxIteration(20)
    N = 500
    out = {"samples": np.array(S), "forces": np.array(F), "q0": np.zeros((N + 1, 7)), "v0": np.zeros((N + 1, 6))}

    def rec(k):
        out["q0"][k], out["v0"][k] = ds.q(), ds.twist()
    with _quiet():
        assert _run(s, rec) == N
    return out


CASES = {f.__name__: f for f in (lagrangian_ds, lagrangian_lti, rheonomous, friction2d, friction3d, equality,
                                  first_order_linear,
                                  first_order_lti_relay, first_order_nonlinear, first_order_nonlinear_relation,
                                  newton_euler)}


if __name__ == "__main__":
    path, names = sys.argv[1], sys.argv[2:] or list(CASES)
    res = {}
    with tempfile.TemporaryDirectory() as d:
        lib = compile_plugins(d)
        for name in names:
            try:
                out = CASES[name](lib)
            except Exception as e:  # noqa: BLE001  (one case that Siconos refuses does not hide the others)
                res[f"{name}.error"] = np.array(f"{type(e).__name__}: {e}")
                continue
            res.update({f"{name}.{k}": v for k, v in out.items()})
    np.savez(path, **res)
