"""Every OSNS kind a TimeStepping can assemble, on small systems with known answers.

Tolerances: analytic trajectories to 1e-8; two formulations of the same step to 1e-8.
"""

import numpy as np
import pytest

from nsopt import modeling as nm


def sliding_block(osns, mu=0.3, T=0.3, h=1e-2):
    ds = nm.LagrangianLinearTIDS([0.0, 0.0, 0.0], [1.0, 0.5, 0.0], np.eye(3), fext=[0.0, 0.0, -9.81])
    inter = nm.Interaction(nm.NewtonImpactFrictionNSL(0.0, 0.0, mu, 3),
                           nm.LagrangianLinearTIR([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
    nsds = nm.NonSmoothDynamicalSystem(0, T)
    nsds.link(inter, ds)
    return nm.TimeStepping(nsds, h, osns=osns, tol=1e-10).run(), ds


@pytest.mark.parametrize("osns", ["fc3d", "gfc3d", "gmp"])
def test_sliding_block_decelerates_by_mu_g(osns):
    traj, ds = sliding_block(osns)
    v0 = np.array([1.0, 0.5])
    speed = np.linalg.norm(v0) - 0.3 * 9.81 * traj.t            # Coulomb: |v| falls at μg along v
    v = traj.v(ds)
    assert np.allclose(v[:, :2], speed[:, None] * v0 / np.linalg.norm(v0), atol=1e-8)
    assert np.abs(traj.q(ds)[:, 2]).max() < 1e-12
    assert not traj.failed_steps


def dumbbell(osns, T=1.0, h=1e-2):
    """Two unit masses on a vertical line joined by a rigid rod (equality at the velocity level);
    the lower one lands on the ground (e = 0)."""
    ds = nm.LagrangianLinearTIDS([1.5, 0.5], [0.0, 0.0], np.eye(2), fext=[-9.81, -9.81])
    rod = nm.Interaction(nm.EqualityConditionNSL(1), nm.LagrangianLinearTIR([[1.0, -1.0]], b=[-1.0]))
    ground = nm.Interaction(nm.NewtonImpactNSL(0.0), nm.LagrangianLinearTIR([[0.0, 1.0]]))
    nsds = nm.NonSmoothDynamicalSystem(0, T)
    nsds.link(rod, ds)
    nsds.link(ground, ds)
    return nm.TimeStepping(nsds, h, osns=osns, tol=1e-12).run(), ds, rod, ground


def test_mlcp_rod_and_ground_and_gmp_agree():
    traj, ds, rod, ground = dumbbell(None)
    assert traj.method[0] == "lemke"
    q = traj.q(ds)
    assert np.allclose(q[:, 0] - q[:, 1], 1.0, atol=1e-12)       # the rod keeps its length
    assert abs(q[-1, 1]) < 0.05 and np.abs(traj.v(ds)[-1]).max() < 1e-9   # landed and at rest
    assert traj.lambda_(ground, 1).min() >= -1e-12
    g, ds2, _, _ = dumbbell("gmp")
    assert np.allclose(g.q(ds2), q, atol=1e-8)


def test_equality_first_order():
    ds = nm.FirstOrderLinearTIDS([1.0, 0.0], [[-1.0, 0.0], [0.0, -2.0]])
    inter = nm.Interaction(nm.EqualityConditionNSL(1), nm.FirstOrderLinearTIR(C=[[1.0, -1.0]], B=[[1.0], [-1.0]]))
    nsds = nm.NonSmoothDynamicalSystem(0, 1.0)
    nsds.link(inter, ds)
    traj = nm.TimeStepping(nsds, 1e-2, nm.EulerMoreauOSI(0.5)).run()
    x = traj.x(ds)
    assert np.allclose(x[1:, 0], x[1:, 1], atol=1e-12)          # y = x1 - x2 = 0 from the first step
    # on the constraint, x1 = x2 = s with ṡ = -1.5 s (average of the two rates): trapezoidal decay
    r = (1 - 0.75 * 1e-2) / (1 + 0.75 * 1e-2)
    assert np.allclose(x[2:, 0] / x[1:-1, 0], r, rtol=1e-10)


def test_avi_normal_cone_equals_relay():
    def run(law, osns):
        plant = nm.FirstOrderLinearTIDS([1.0, 0.0], [[0.0, 1.0], [-1.0, -0.2]])
        inter = nm.Interaction(law, nm.FirstOrderLinearTIR(C=[[1.0, 0.0]], B=[[0.0], [1.0]]))
        nsds = nm.NonSmoothDynamicalSystem(0, 2.0)
        nsds.link(inter, plant)
        return nm.TimeStepping(nsds, 1e-2, nm.EulerMoreauOSI(0.5), osns=osns, method="lemke", tol=1e-12).run().x(plant)

    relay = run(nm.RelayNSL(1, -1.0, 1.0), "relay")
    avi = run(nm.NormalConeNSL(1, H=[[1.0], [-1.0]], k=[-1.0, -1.0]), "avi")   # λ ∈ [-1, 1], -y ∈ N(λ)
    assert np.allclose(avi, relay, atol=1e-9)


def test_register_osns_extension_point():
    """A new one-step problem kind (how a multiple-impact problem plugs in): its builder receives the
    assembly with W, q and the operators H, v_free and the integrator."""
    from nsopt import LCP

    seen = []

    def build(asm, laws, previous):
        seen.append(asm.H is not None and asm.vfree is not None and asm.osi is not None)
        if previous is not None:                 # same active set, constant operators: keep W
            assert asm.W is None
            return previous.replace(q=asm.q)
        Mhat = asm.osi.iteration_matrix().toarray()
        H = asm.H.toarray() if hasattr(asm.H, "toarray") else asm.H
        assert np.allclose(H @ np.linalg.solve(Mhat, H.T), asm.W)       # W = H M̂⁻¹ Hᵀ
        assert all(isinstance(law, nm.NewtonImpactNSL) for law in laws)
        return LCP(asm.W, asm.q)

    nm.register_osns("lcp-test-copy", build, holds={"lcp"}, methods=("lemke",))
    runs = {}
    for kind in ("lcp", "lcp-test-copy"):
        ball = nm.LagrangianLinearTIDS(q0=[1.0, 0.0], v0=[0.0, 1.0], M=np.diag([1.0, 2.0]), fext=[-9.81, 0.0])
        ground = nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0, 0.0]]))
        nsds = nm.NonSmoothDynamicalSystem(0.0, 2.0)
        nsds.link(ground, ball)
        runs[kind] = nm.TimeStepping(nsds, 1e-2, osns=kind).run().q(ball)
    assert seen and all(seen)
    assert np.allclose(runs["lcp"], runs["lcp-test-copy"], atol=1e-12)
