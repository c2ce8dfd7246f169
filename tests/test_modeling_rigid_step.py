"""Rigid bodies (NewtonEulerDS) through Moreau–Jean's step (TimeStepping): the free body against Euler's
equations, cubes dropped flat and on an edge (against the scheme's closed form and Siconos' kernel), a
pendulum of two capsules held by pivot joints against the ODE of the compound double pendulum, the
grouped step against the one-by-one step, continuing a run."""

import json
import math
import shutil
import subprocess

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from nsopt import modeling as nm
from nsopt.exceptions import ModelingError
from nsopt.modeling import _rotation as rot
from nsopt.modeling.newton_euler import angular_momentum, kinetic_energy

G = 9.81
SICONOS_PY = "/usr/bin/python3"


def _siconos_available():
    return shutil.which(SICONOS_PY) and subprocess.run([SICONOS_PY, "-c", "import siconos.kernel"],
                                                       capture_output=True).returncode == 0


# ---------------------------------------------------------------------------- free bodies
def _free(v0, inertia, T, h, q0=(0, 0, 0, 1, 0, 0, 0), **kw):
    body = nm.NewtonEulerDS(q0, v0, 1.0, inertia, **kw)
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.insert_dynamical_system(body)
    traj = nm.TimeStepping(nsds, h, nm.MoreauJeanOSI(0.5), newton_tol=1e-12).run()
    return body, traj


def test_symmetric_top_against_euler_closed_form_and_second_order():
    """I1 = I2: ω3 constant and (ω1, ω2) turns at Ω = (I3 - I1) ω3 / I1 (Euler's equations). θ = 1/2 with the
    Newton loop converged is the trapezoidal rule on the twist: the error at T falls by 4 when h halves."""
    I1, I3, w3, A, T = 2.0, 5.0, 1.5, 0.4, 4.0
    Om = (I3 - I1) * w3 / I1
    errs = []
    for h in (4e-3, 2e-3):
        body, traj = _free([0, 0, 0, A, 0.0, w3], np.diag([I1, I1, I3]), T, h)
        W = traj.v(body)[:, 3:]
        ref = np.stack([A * np.cos(Om * traj.t), A * np.sin(Om * traj.t), np.full(traj.t.shape, w3)], axis=1)
        errs.append(np.abs(W - ref).max())
        assert traj.newton_converged.all()
        np.testing.assert_allclose(np.linalg.norm(traj.q(body)[:, 3:], axis=1), 1.0, atol=1e-14)
    assert errs[0] < 1e-4
    assert 3.5 < errs[0] / errs[1] < 4.5, errs


def test_dzhanibekov_energy_and_angular_momentum_from_the_trajectory():
    """A torque-free body spinning about its intermediate axis flips; its kinetic energy and world-frame angular
    momentum, taken from the trajectory, stay constant to the scheme's accuracy."""
    I = np.diag([1.0, 2.0, 3.0])
    body, traj = _free([0, 0, 0, 1e-3, 2.0, 1e-3], I, 20.0, 2e-3)
    Q, V = traj.q(body), traj.v(body)
    E = body.kinetic_energy(V)
    L = body.angular_momentum(Q, V)
    assert V[:, 4].min() < -1.5                                   # it flips
    assert np.ptp(E) / E[0] < 1e-4
    assert np.abs(L - L[0]).max() / np.linalg.norm(L[0]) < 1e-3
    np.testing.assert_allclose(E, kinetic_energy(V, 1.0, I), rtol=1e-14)
    np.testing.assert_allclose(L, angular_momentum(Q, V, 1.0, I), rtol=1e-14)


def test_ballistic_flight_is_exact():
    """Gravity and a constant spin about a principal axis: the centre follows the parabola exactly (θ = 1/2 is exact
    for a constant force) and the body turns at the constant rate (the quaternion update is first order per step
    in hω, normalised: the angle is exact to h² ω³ t)."""
    w, T, h = 3.0, 1.0, 1e-3
    body, traj = _free([1.0, 0.5, 4.0, 0, 0, w], np.eye(3), T, h, fext=[0, 0, -G])
    Q, t = traj.q(body), traj.t
    np.testing.assert_allclose(Q[:, :3], np.stack([t, 0.5 * t, 4.0 * t - 0.5 * G * t * t], 1), atol=1e-12)
    angle = 2 * np.arctan2(Q[:, 6], Q[:, 3])
    assert np.abs(angle - w * t).max() < 1e-5
    assert traj.newton_iterations.max() == 1                      # a constant body: no Newton loop


# ---------------------------------------------------------------------------- cubes on a floor
A, M = 0.1, 2.0
CORNERS = [(sx * A, sy * A, sz * A) for sx in (1, -1) for sy in (1, -1) for sz in (1, -1)]


def _cube(q0, v0, T, h=1e-3, mu=0.5, tol=1e-12, theta=0.5, method="nsn-ac", corners=CORNERS, projection=False, batch=True,
          activation="siconos"):
    cube = nm.NewtonEulerDS(q0, v0, M, np.eye(3) * M * (2 * A) ** 2 / 6, fext=[0, 0, -G * M])
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    inters = []
    for c in corners:
        inter = nm.Interaction(nm.NewtonImpactFrictionNSL(0.0, 0.0, mu, 3), nm.NewtonEuler3DR(point=c, normal=[0, 0, 1]))
        nsds.link(inter, cube)
        inters.append(inter)
    traj = nm.TimeStepping(nsds, h, nm.MoreauJeanOSI(theta, projection=projection, batch=batch, activation=activation),
                           osns="fc3d",
                           method=method, tol=tol).run()
    return cube, inters, traj


def test_cube_dropped_flat_rests_where_the_scheme_puts_it():
    """Dropped flat from 0.05 above the floor: free flight is exact (z_k = z_0 - g h² k²/2), the four bottom corners
    enter the index set of step k+1 for the first k with y_k + h ẏ_k / 2 <= 0, and then v = 0 while the centre
    moves by h(1-θ)v_k: the rest height from that recurrence, to round-off (5.3e-4 below the face's height: the
    scheme's penetration, about h|v|/2 at impact; Siconos' kernel gives the same, 0.09946869000000401). The corner
    forces then carry the weight. ``projection=False``: Siconos' MoreauJeanOSI (the default projects the positions,
    test_projection_cube_dropped_flat_rests_on_its_face)."""
    h, T = 1e-3, 0.3
    cube, inters, traj = _cube([0, 0, A + 0.05, 1, 0, 0, 0], np.zeros(6), T, h, corners=CORNERS[1::2])
    k = 0
    while 0.05 - G * h * h * k * k / 2 - 0.5 * h * G * h * k > 0:      # y_k + γ h ẏ_k, exact free flight
        k += 1
    y_k, v_k = 0.05 - G * h * h * k * k / 2, -G * h * k
    rest = A + y_k + h * 0.5 * v_k
    z = traj.q(cube)[:, 2]
    assert z[-1] == pytest.approx(rest, abs=1e-12)
    assert np.abs(z[k + 2:] - rest).max() < 1e-12
    np.testing.assert_allclose(traj.q(cube)[-1, 3:], [1, 0, 0, 0], atol=1e-12)
    assert not traj.failed_steps
    force = sum(traj.lambda_(i)[-1, 0] for i in inters) / h
    assert force == pytest.approx(M * G, rel=1e-9)


_SICONOS_CUBE = r'''
import json, sys
import numpy as np
import siconos.kernel as sk
import siconos.numerics as sn


class Corner(sk.NewtonEuler3DR):
    """A body-frame corner against the plane z = 0: y = z of the corner (Siconos' kernel NewtonEuler1DR takes its
    distance from a plug-in; mechanics' ContactR from the collision points), the contact point and normal set where
    the Jacobian (computeJachqT, C++) reads them."""

    def computeh(self, time, q0, y):
        q = np.asarray(q0, dtype=float)
        w, x, yy, z = q[3:7]
        R = np.array([[1 - 2 * (yy * yy + z * z), 2 * (x * yy - w * z), 2 * (x * z + w * yy)],
                      [2 * (x * yy + w * z), 1 - 2 * (x * x + z * z), 2 * (yy * z - w * x)],
                      [2 * (x * z - w * yy), 2 * (yy * z + w * x), 1 - 2 * (x * x + yy * yy)]])
        pc1 = q[:3] + R @ np.asarray(self.relPc1())
        np.asarray(self.pc1())[:] = pc1
        np.asarray(self.pc2())[:] = (pc1[0], pc1[1], 0.0)
        np.asarray(self.nc())[:] = (0.0, 0.0, 1.0)
        y[0] = pc1[2]


cfg = json.loads(sys.argv[1])
m, a = cfg["m"], cfg["a"]
body = sk.NewtonEulerDS(np.array(cfg["q0"]), np.array(cfg["v0"]), m, np.eye(3) * m * (2 * a) ** 2 / 6)
body.setFExtPtr(np.array([0, 0, -9.81 * m]))
nsds = sk.NonSmoothDynamicalSystem(0, cfg["T"])
nsds.insertDynamicalSystem(body)
keep = []
for c in cfg["corners"]:
    rel = Corner()
    rel.setRelPc1(np.array(c)); rel.setRelPc2(np.zeros(3)); rel.setRelNc(np.array([0., 0., 1.]))
    inter = sk.Interaction(sk.NewtonImpactFrictionNSL(0.0, 0.0, cfg["mu"], 3), rel)
    nsds.link(inter, body)
    keep.append((inter, rel))
osnspb = sk.FrictionContact(3, sn.SICONOS_FRICTION_3D_NSGS)
osnspb.numericsSolverOptions().dparam[sn.SICONOS_DPARAM_TOL] = cfg["tol"]
osnspb.numericsSolverOptions().iparam[sn.SICONOS_IPARAM_MAX_ITER] = 100000
sim = sk.TimeStepping(nsds, sk.TimeDiscretisation(0, cfg["h"]), sk.MoreauJeanOSI(cfg["theta"]), osnspb)
out = []
while sim.hasNextEvent():
    sim.computeOneStep()
    out.append(np.asarray(body.q()).tolist() + np.asarray(body.twist()).tolist())
    sim.nextStep()
print(json.dumps(out))
'''


@pytest.mark.skipif(not _siconos_available(), reason="Siconos 4.4 (python3-siconos for /usr/bin/python3) absent")
def test_cube_on_an_edge_against_siconos_kernel():
    """A cube thrown tilted (0.5 rad about (1, 0.4, 0)) with a spin lands on an edge, tumbles and settles; its eight
    corners are hand-built NewtonEuler3DR against the floor on both sides (Siconos: the kernel's NewtonEuler3DR
    with the corner's distance as h), same h, θ, μ and a tight solver tolerance (1e-12). The trajectories agree to
    1e-8 over 1000 steps: both move the quaternion by the exponential map, Siconos 4.4 with the series of
    tan(x)/x for sin(x)/x below a half-angle of 1e-3 (here hω/2 = 1e-3: 5e-10 a step while it spins;
    formulations/time_stepping.md §4). ``projection=False``: Siconos' MoreauJeanOSI, no position projection."""
    quat = rot.quat_exp(0.5 * np.array([1.0, 0.4, 0.0]) / np.linalg.norm([1.0, 0.4, 0.0]))
    cfg = dict(m=M, a=A, h=1e-3, T=1.0, theta=0.5, mu=0.5, tol=1e-12, q0=[0, 0, 0.3, *quat.tolist()],
               v0=[0.3, 0, 0, 0, 0, 2.0], corners=CORNERS)
    r = subprocess.run([SICONOS_PY, "-c", _SICONOS_CUBE, json.dumps(cfg)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    theirs = np.array(json.loads(r.stdout.strip().splitlines()[-1]))
    cube, inters, traj = _cube(cfg["q0"], cfg["v0"], cfg["T"], cfg["h"], tol=1e-12)
    Q, V = traj.q(cube)[1:], traj.v(cube)[1:]
    assert Q.shape == theirs[:, :7].shape
    assert np.abs(Q - theirs[:, :7]).max() < 1e-7
    assert np.abs(V - theirs[:, 7:]).max() < 5e-7
    # it settled flat: a face down, at rest, at the rest height to the scheme's penetration
    assert np.abs(V[-50:]).max() < 1e-9
    R = rot.rotation_matrix(Q[-1, 3:])
    assert np.abs(R[2]).max() == pytest.approx(1.0, abs=1e-5)          # a face down, to a tilt of 4e-3 rad
    assert Q[-1, 2] == pytest.approx(A, abs=1e-3)


def test_cube_on_an_edge_settles_flat():
    """Without Siconos: the tumbling cube above settles on a face, every step solved to the tolerance; after the
    landing its energy never rises above the landing's by more than the scheme's O(h²) drift while it rolls on an
    edge (the velocity-level constraint with the Jacobian at the predicted pose), and it ends lower (the impacts
    dissipate: no restitution)."""
    quat = rot.quat_exp(0.5 * np.array([1.0, 0.4, 0.0]) / np.linalg.norm([1.0, 0.4, 0.0]))
    cube, inters, traj = _cube([0, 0, 0.3, *quat.tolist()], [0.3, 0, 0, 0, 0, 2.0], 1.0, 1e-3, tol=1e-10)
    assert not traj.failed_steps
    Q, V = traj.q(cube), traj.v(cube)
    E = cube.kinetic_energy(V) + cube.potential_energy(Q)
    land = next(k for k, s in enumerate(traj.status) if s is not None)
    assert E[land + 1:].max() - E[land] < 1e-3 * E[land]
    assert E[-1] < E[land] - 0.1
    assert np.abs(V[-1]).max() < 1e-9
    assert np.abs(rot.rotation_matrix(Q[-1, 3:])[2]).max() == pytest.approx(1.0, abs=1e-5)


# ---------------------------------------------------------------------------- the position projection
TILT = rot.quat_exp(0.5 * np.array([1.0, 0.4, 0.0]) / np.linalg.norm([1.0, 0.4, 0.0])).tolist()


def _gaps(inters, Q):
    """The corners' signed distances to the floor at every pose (k, corners), from the relations' own formula."""
    return np.array([[i.relation.distance(q) for i in inters] for q in Q])


def test_projection_cube_dropped_flat_rests_on_its_face():
    """The contract's drop (rigid_body_free.py) with the default projection: the cube rests at z = a to 1e-6 (the
    unprojected scheme leaves it 5.3e-4 lower, test_cube_dropped_flat_rests_where_the_scheme_puts_it), no corner
    deeper than projection_tol (1e-8) at any step, flat, the corner forces carrying the weight."""
    h = 1e-3
    cube, inters, traj = _cube([0, 0, A + 0.05, 1, 0, 0, 0], np.zeros(6), 0.3, h, corners=CORNERS[1::2], projection=None)
    Q = traj.q(cube)
    land = next(k for k, s in enumerate(traj.status) if s is not None)
    assert np.abs(Q[land + 1:, 2] - A).max() < 1e-6
    assert _gaps(inters, Q).min() >= -1e-8
    np.testing.assert_allclose(Q[-1, 3:], [1, 0, 0, 0], atol=1e-12)
    assert not traj.failed_steps
    assert sum(traj.lambda_(i)[-1, 0] for i in inters) / h == pytest.approx(M * G, rel=1e-8)


@pytest.mark.parametrize("q0, v0", [([0, 0, 0.3, *TILT], [0.3, 0, 0, 0, 0, 2.0]),          # lands on an edge, tumbles
                                    ([0, 0, 0.25, *TILT], [0.0, 0, -1.0, 3.0, -1.0, 0.5])])   # tilted, thrown down
def test_projection_no_penetration_after_landing(q0, v0):
    """A cube landing on an edge and a tilted cube thrown down, eight corner contacts: with the projection no corner
    is ever deeper than projection_tol (1e-8), where the unprojected scheme sinks by up to h|v|/2 (more than 1e-4
    here); both settle on a face at z = a (1e-6 with the projection)."""
    cube, inters, traj = _cube(q0, v0, 1.0, 1e-3, tol=1e-10, projection=None)
    assert not traj.failed_steps
    assert _gaps(inters, traj.q(cube)).min() >= -1e-8
    assert traj.q(cube)[-1, 2] == pytest.approx(A, abs=1e-6)
    cube2, inters2, off = _cube(q0, v0, 1.0, 1e-3, tol=1e-10, projection=False)
    assert _gaps(inters2, off.q(cube2)).min() < -1e-4


def test_projection_moves_positions_only():
    """The projection changes no velocity: the flat drop with and without it is the same trajectory (bit for bit)
    up to the landing step, whose twist (so kinetic energy) is the same, its centre raised to the face's height;
    the kinetic energy after the landing never exceeds the one before it."""
    args = ([0, 0, A + 0.05, 1, 0, 0, 0], np.zeros(6), 0.15, 1e-3)
    cube, inters, on = _cube(*args, corners=CORNERS[1::2], projection=None)
    cube2, inters2, off = _cube(*args, corners=CORNERS[1::2], projection=False)
    land = next(k for k, s in enumerate(on.status) if s is not None)      # the step from row land to land + 1
    np.testing.assert_array_equal(on.v(cube)[:land + 2], off.v(cube2)[:land + 2])
    np.testing.assert_array_equal(on.q(cube)[:land], off.q(cube2)[:land])
    assert off.q(cube2)[land, 2] < A and off.q(cube2)[land + 1, 2] < A - 1e-4      # sinks in free flight, then h|v|/2
    assert np.abs(on.q(cube)[land:, 2] - A).max() < 1e-12
    E, E2 = cube.kinetic_energy(on.v(cube)), cube2.kinetic_energy(off.v(cube2))
    np.testing.assert_array_equal(E[:land + 2], E2[:land + 2])
    assert E[land:].max() <= E[land]


def test_projection_batched_equals_one_by_one():
    """With the projection on, the grouped step (one contact_outputs call per relation group) and the one-by-one
    step (batch=False) give the same tumbling cube to 1e-12."""
    a = _cube([0, 0, 0.3, *TILT], [0.3, 0, 0, 0, 0, 2.0], 0.5, 1e-3, tol=1e-12, projection=True)
    b = _cube([0, 0, 0.3, *TILT], [0.3, 0, 0, 0, 0, 2.0], 0.5, 1e-3, tol=1e-12, projection=True, batch=False)
    np.testing.assert_allclose(a[2].q(a[0]), b[2].q(b[0]), atol=1e-12, rtol=0)
    np.testing.assert_allclose(a[2].v(a[0]), b[2].v(b[0]), atol=1e-12, rtol=0)



def test_projection_products_are_scipys_to_the_bit():
    """The position projection's round products by compiled loops (K.projection_delassus, K.projection_step) are
    the numbers of the scipy products they replace (HM[S] @ H[S].T, HM[S].T @ mu, y + H @ delta), bit for bit,
    with HM = H @ M⁻¹ as scipy stores it (rows in reverse column order, full 3x3 inverse inertias), H from COO
    triplets in any order, subsets S of rows, magnitudes over 1e-6..1e2: the projection's LCPs, hence the
    trajectory, are unchanged."""
    import scipy.sparse as sp

    from nsopt.modeling import _kernels as K

    rng = np.random.default_rng(11)
    for _ in range(30):
        nb, nr = int(rng.integers(1, 8)), int(rng.integers(1, 40))
        nv = 6 * nb
        blocks = []
        for _ in range(nb):
            A = rng.normal(size=(3, 3))
            blocks.append(np.diag(np.r_[np.full(3, 1.0 / rng.uniform(0.5, 2.0)), np.zeros(3)]))
            blocks[-1][3:, 3:] = np.linalg.inv(A @ A.T + np.eye(3))
        Mi = sp.block_diag(blocks, format="csr")
        H = sp.random(nr, nv, density=0.25, random_state=rng, format="coo")
        H.data *= 10.0 ** rng.uniform(-6, 2, H.nnz)
        perm = rng.permutation(H.nnz)
        H = sp.csr_matrix((H.data[perm], (H.row[perm], H.col[perm])), shape=H.shape)
        HM = (H @ Mi).tocsr()
        hm = (HM.indptr.astype(np.int64), HM.indices.astype(np.int64), HM.data.copy())
        hr = (H.indptr.astype(np.int64), H.indices.astype(np.int64), H.data.copy())
        idx = np.flatnonzero(rng.random(nr) < 0.6)
        W = np.empty((idx.size, idx.size))
        K.projection_delassus(*hm, *hr, idx, nv, W)
        assert W.tobytes() == (HM[idx] @ H[idx].T).toarray().tobytes()
        mu, y = rng.random(idx.size), rng.normal(size=nr)
        delta, gap = np.empty(nv), np.empty(nr)
        K.projection_step(*hm, *hr, idx, mu, y, delta, gap)
        ref = np.asarray(HM[idx].T @ mu).reshape(-1)
        assert delta.tobytes() == ref.tobytes()
        assert gap.tobytes() == (y + H @ ref).tobytes()


def _ball(projection):
    ball = nm.LagrangianLinearTIDS([1.0, 0, 0], [0, 0, 0], np.diag([1.0, 1.0, 0.1]), fext=[-G, 0, 0])
    nsds = nm.NonSmoothDynamicalSystem(0.0, 2.0)
    nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR(np.array([[1.0, 0, 0]]))), ball)
    return ball, nm.TimeStepping(nsds, 1e-3, nm.MoreauJeanOSI(0.5, projection=projection), osns="lcp", method="lemke")


def test_projection_default_leaves_lagrangian_systems_alone():
    """The default (None) is projection=False for Lagrangian systems, bit for bit (a bouncing ball); projection=True
    on them is an error naming the field."""
    b1, s1 = _ball(None)
    b2, s2 = _ball(False)
    np.testing.assert_array_equal(s1.run().q(b1), s2.run().q(b2))
    with pytest.raises(ModelingError, match="projection.*NewtonEulerDS"):
        _ball(True)
    with pytest.raises(ModelingError, match="projection"):
        nm.MoreauJeanOSI(projection="yes")
    with pytest.raises(ModelingError, match="projection_tol"):
        nm.MoreauJeanOSI(projection_tol=-1.0)


# ---------------------------------------------------------------------------- joints
def capsule_inertia(m, r, l):
    """Principal moments of a solid capsule along y: (perp, axial, perp)."""
    vc, vs = math.pi * r * r * l, 4.0 / 3.0 * math.pi * r ** 3
    rho = m / (vc + vs)
    mc, ms = rho * vc, rho * vs
    axial = mc * r * r / 2 + ms * 2 * r * r / 5
    perp = mc * (l * l / 12 + r * r / 4) + ms * (2 * r * r / 5 + l * l / 4 + 3 * l * r / 8)
    return np.array([perp, axial, perp])


def _pendulum(h, T, L=0.5, H=1.0, m=1.0, batch=True):
    I = capsule_inertia(m, 0.05, L - 0.1)
    b1 = nm.NewtonEulerDS([0, L / 2, H, 1, 0, 0, 0], np.zeros(6), m, I, fext=[0, 0, -G * m])
    b2 = nm.NewtonEulerDS([0, 1.5 * L, H, 1, 0, 0, 0], np.zeros(6), m, I, fext=[0, 0, -G * m])
    nsds = nm.NonSmoothDynamicalSystem(0, T)
    j1 = nm.Interaction(nm.EqualityConditionNSL(5), nm.PivotJointR([0, 0, H], [1, 0, 0], True, b1))
    j2 = nm.Interaction(nm.EqualityConditionNSL(5), nm.PivotJointR([0, L, H], [1, 0, 0], True, b2, b1))
    nsds.link(j1, b1)
    nsds.link(j2, b2, b1)
    traj = nm.TimeStepping(nsds, h, nm.MoreauJeanOSI(0.5, batch=batch), newton_tol=1e-10).run()
    return (b1, b2), (j1, j2), traj, I[0]


def _double_pendulum(t, L, H, m, Ip):
    """The compound double pendulum in the y-z plane, released horizontal (angles below +y), by solve_ivp:
    the centres of the two links (k, 2) each."""
    def rhs(_, x):
        a1, a2, w1, w2 = x
        M = np.array([[Ip + m * L * L / 4 + m * L * L, m * L * L / 2 * np.cos(a1 - a2)],
                      [m * L * L / 2 * np.cos(a1 - a2), Ip + m * L * L / 4]])
        c = m * L * L / 2 * np.sin(a1 - a2)
        f = [-c * w2 * w2 + 1.5 * m * G * L * np.cos(a1), c * w1 * w1 + 0.5 * m * G * L * np.cos(a2)]
        return [w1, w2, *np.linalg.solve(M, f)]
    sol = solve_ivp(rhs, (t[0], t[-1]), [0, 0, 0, 0], rtol=1e-11, atol=1e-12, t_eval=t)
    a1, a2 = sol.y[0], sol.y[1]
    c1 = np.stack([L / 2 * np.cos(a1), H - L / 2 * np.sin(a1)], 1)
    c2 = np.stack([L * np.cos(a1) + L / 2 * np.cos(a2), H - L * np.sin(a1) - L / 2 * np.sin(a2)], 1)
    return c1, c2


def test_two_capsule_pendulum_with_pivots_against_the_ode():
    """Two capsules held by pivot joints (one to the world, one between them) fall from horizontal: their centres
    follow the compound double pendulum (Lagrange's equations in the two angles, solve_ivp at 1e-11) to the
    scheme's first order (constraints at the velocity level): the error halves with h; the joints hold
    (h(q) small) and the motion stays in the y-z plane."""
    errs = []
    for h in (2e-3, 1e-3):
        (b1, b2), (j1, j2), traj, Ip = _pendulum(h, 0.3)
        c1, c2 = _double_pendulum(traj.t, 0.5, 1.0, 1.0, Ip)
        errs.append(max(np.abs(traj.q(b1)[:, 1:3] - c1).max(), np.abs(traj.q(b2)[:, 1:3] - c2).max()))
        assert np.abs(traj.q(b1)[:, 0]).max() < 1e-12 and np.abs(traj.q(b2)[:, 0]).max() < 1e-12
        assert np.abs(traj.y(j1, 0)).max() < 1e-5 and np.abs(traj.y(j2, 0)).max() < 2e-5
        assert traj.newton_converged.all() and not traj.failed_steps
    assert errs[1] < 1e-3
    assert 1.8 < errs[0] / errs[1] < 2.2, errs


def test_pivot_angle_of_a_swinging_link():
    """One capsule pinned at its end: the pivot's angle is the pendulum angle (its centre's direction)."""
    (b1, b2), (j1, j2), traj, _ = _pendulum(2e-3, 0.2)
    q1 = traj.q(b1)[-1]
    ang = j1.relation.angle(q1)
    c = q1[1:3] - [0, 1.0]
    assert ang == pytest.approx(np.arctan2(c[1], c[0]), abs=1e-5)      # (to the joint's drift, 2e-6)


# ---------------------------------------------------------------------------- the grouped step
def _mixed_model(batch, T=0.4):
    """Bodies of both kinds (isotropic: constant; anisotropic: gyroscopic, one by one), 1DR and 3DR contacts with the
    floor, a body-body contact, a ball joint and a pivot to the world: GenericMechanical with friction."""
    rng = np.random.default_rng(5)
    bodies = []
    for j in range(4):
        I = np.eye(3) * 0.02 if j % 2 == 0 else np.diag([0.01, 0.02, 0.03])
        q0 = np.r_[0.3 * j, 0.0, 0.25 + 0.05 * j, rot.quat_exp(0.2 * rng.normal(size=3))]
        bodies.append(nm.NewtonEulerDS(q0, np.r_[rng.normal(size=3) * 0.2, rng.normal(size=3)], 1.0 + j * 0.1, I,
                                       fext=[0, 0, -G * (1.0 + j * 0.1)]))
    nsds = nm.NonSmoothDynamicalSystem(0, T)
    for b in bodies[:3]:
        for c in [(0.1, 0.1, -0.1), (-0.1, 0.1, -0.1), (0.0, -0.1, -0.1)]:
            nsds.link(nm.Interaction(nm.NewtonImpactFrictionNSL(0.2, 0.0, 0.4, 3), nm.NewtonEuler3DR(point=c, normal=[0, 0, 1])), b)
    nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.0), nm.NewtonEuler1DR(point=[0, 0, -0.1], normal=[0, 0, 1])), bodies[3])
    rel = nm.NewtonEuler3DR()
    inter = nm.Interaction(nm.NewtonImpactFrictionNSL(0.0, 0.0, 0.3, 3), rel)
    nsds.link(inter, bodies[1], bodies[0])
    rel.set_contact(bodies[1].q0[:3] - [0.1, 0, 0], bodies[0].q0[:3] + [0.1, 0, 0], [1.0, 0, 0], bodies[1].q0, bodies[0].q0)
    nsds.link(nm.Interaction(nm.EqualityConditionNSL(3), nm.KneeJointR(bodies[3].q0[:3] - [0.15, 0, 0], True,
                                                                       bodies[2], bodies[3])), bodies[2], bodies[3])
    nsds.link(nm.Interaction(nm.EqualityConditionNSL(5), nm.PivotJointR(bodies[3].q0[:3] + [0, 0, 0.3], [0, 1, 0],
                                                                        True, bodies[3])), bodies[3])
    sim = nm.TimeStepping(nsds, 2e-3, nm.MoreauJeanOSI(0.5, batch=batch), osns="gmp", method="nsgs", tol=1e-12,
                          newton_tol=1e-10, max_iter=100000)
    return bodies, nsds, sim.run()


def test_grouped_step_equals_the_one_by_one_step():
    """MoreauJeanOSI(batch=True) (stacked constant bodies, one contact_outputs / joint_outputs call per relation group)
    against batch=False (every body and relation one by one): the same trajectory to 1e-10."""
    bodies, nsds, grouped = _mixed_model(True, T=0.3)
    bodies2, nsds2, single = _mixed_model(False, T=0.3)
    assert sum(s is not None for s in grouped.status) > 50 and not grouped.failed_steps
    hit = [i for i in nsds.interactions if np.abs(grouped.lambda_(i)).max() > 0]
    assert {type(i.relation).__name__ for i in hit} >= {"NewtonEuler3DR", "KneeJointR", "PivotJointR"}
    for a, b in zip(bodies, bodies2):
        np.testing.assert_allclose(grouped.q(a), single.q(b), atol=1e-10)
        np.testing.assert_allclose(grouped.v(a), single.v(b), atol=1e-9)
    for i, j in zip(nsds.interactions, nsds2.interactions):
        np.testing.assert_allclose(grouped.lambda_(i), single.lambda_(j), atol=1e-9)


def test_continued_run_equals_the_uninterrupted_run():
    bodies, nsds, whole = _mixed_model(True, T=0.3)
    bodies2, nsds2, _ = _mixed_model(True, T=0.3)
    nsds2.T = 0.14
    sim = nm.TimeStepping(nsds2, 2e-3, nm.MoreauJeanOSI(0.5), osns="gmp", method="nsgs", tol=1e-12, newton_tol=1e-10,
                          max_iter=100000)
    first = sim.run()
    nsds2.T = 0.3
    rest = nm.TimeStepping(nsds2, 2e-3, continue_from=first, osns="gmp", method="nsgs", tol=1e-12, newton_tol=1e-10,
                           max_iter=100000).run()
    for a, b in zip(bodies, bodies2):
        np.testing.assert_allclose(rest.q(b)[-1], whole.q(a)[-1], atol=1e-12)
        np.testing.assert_allclose(rest.v(b)[-1], whole.v(a)[-1], atol=1e-12)


def test_rigid_and_lagrangian_relations_do_not_mix():
    body = nm.NewtonEulerDS([0, 0, 0, 1, 0, 0, 0], np.zeros(6), 1.0, np.eye(3))
    lag = nm.LagrangianLinearTIDS(np.zeros(6), np.zeros(6), np.eye(6))
    nsds = nm.NonSmoothDynamicalSystem(0, 1)
    with pytest.raises(ModelingError, match="not a NewtonEulerDS"):
        nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.0), nm.NewtonEuler1DR(point=[0, 0, 0], normal=[0, 0, 1])), lag)
    with pytest.raises(ModelingError, match="is a NewtonEulerDS"):
        nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.0), nm.LagrangianLinearTIR(np.ones((1, 6)))), body)
