"""The grouped Moreau–Jean step (nsopt/modeling/_stepper.py: groups, block form, fused compiled phases,
free flight) against the one-by-one evaluation (``MoreauJeanOSI(batch=False)``) on chosen models, and
the recording of interactions linked mid-run (tests/test_modeling_step.py: the same on random models).

Tolerance: the two paths compute the same formulas in a different order, so they agree to rounding,
1e-12 relative to each trajectory's scale (max |.|), over runs short enough that no solver iteration
count changes (a different count moves the solution by up to the solver's tolerance).
"""

import sys
from pathlib import Path

import numpy as np
import pytest

from nsopt import modeling as nm
from nsopt.exceptions import PluginError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TOL = 1e-12


def _close(a, b, tol=TOL):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, np.nanmax(np.abs(a)))
    assert a.shape == b.shape
    assert np.array_equal(np.isnan(a), np.isnan(b))
    assert np.nanmax(np.abs(a - b), initial=0.0) <= tol * scale, np.nanmax(np.abs(a - b))


def _ball(batch, T=10.0):
    m, r = 1.0, 0.1
    ball = nm.LagrangianLinearTIDS(q0=[1.0, 0.0, 0.0], v0=[0.0, 0.0, 0.0], M=np.diag([m, m, 0.4 * m * r * r]),
                                   fext=[-9.81 * m, 0.0, 0.0])
    ground = nm.Interaction(nm.NewtonImpactNSL(e=0.9), nm.LagrangianLinearTIR(H=[[1.0, 0.0, 0.0]]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(ground, ball)
    sim = nm.TimeStepping(nsds, h=0.005, integrator=nm.MoreauJeanOSI(0.5, batch=batch), osns="lcp",
                          method="lemke", tol=1e-12)
    return sim, ball, ground


def _same_run(ta, tb, systems, inters, levels=(0, 1)):
    for ds in systems:
        for f in ("q", "v", "p"):
            _close(getattr(ta, f)(ds), getattr(tb, f)(ds))
    for i in inters:
        for lev in levels:
            _close(ta.y(i, lev), tb.y(i, lev))
        _close(ta.lambda_(i, 1), tb.lambda_(i, 1))
    assert [s is None for s in ta.status] == [s is None for s in tb.status]


def test_ball_batched_and_compiled_match_the_per_interaction_path():
    sa, ball_a, ground_a = _ball(False)
    sb, ball_b, ground_b = _ball(True)
    ta, tb = sa.run(), sb.run()
    assert sb._stepper.fused_phases and not sa._stepper.fused_phases and not sa._stepper.batch
    for f in ("q", "v", "p"):
        _close(getattr(ta, f)(ball_a), getattr(tb, f)(ball_b))
    for lev in (0, 1):
        _close(ta.y(ground_a, lev), tb.y(ground_b, lev))
    _close(ta.lambda_(ground_a), tb.lambda_(ground_b))
    assert [s is None for s in ta.status] == [s is None for s in tb.status]
    assert np.array_equal(ta.newton_iterations, tb.newton_iterations)
    # the objects hold the final state
    _close(ball_b.q, ball_a.q)
    _close(ground_b.y[0], ground_a.y[0])


@pytest.mark.parametrize("batch", [True, False])
def test_trajectory_recorded_in_chunks_equals_one_block(monkeypatch, batch):
    """Rows recorded in many small chunks (free flights reserving rows across chunk ends, single
    steps) read back as the run recorded in one block."""
    from nsopt.modeling import simulation

    sa, ball_a, ground_a = _ball(batch, T=3.0)
    ta = sa.run()
    monkeypatch.setattr(simulation, "CHUNK_BYTES", 8 * 13 * 37)       # 37 rows of the ball's 13 columns
    sb, ball_b, ground_b = _ball(batch, T=3.0)
    tb = sb.run()
    # the per-interaction path records step by step (a chunk every 37 rows); the compiled free flight
    # reserves the rows it may need at once (a chunk that holds them)
    assert sum(len(seg.chunks) for seg in tb._segments) > (5 if not batch else 0)
    for f in ("q", "v", "p"):
        assert np.array_equal(getattr(ta, f)(ball_a), getattr(tb, f)(ball_b))
    for lev in (0, 1):
        assert np.array_equal(ta.y(ground_a, lev), tb.y(ground_b, lev))
    assert np.array_equal(ta.lambda_(ground_a), tb.lambda_(ground_b))


def test_compiled_steps_give_the_numbers_of_the_numpy_step():
    """The fused compiled phases (and the free flight) of a linear time-invariant model against the
    step's general phases on the same grouped data (the stepper's ``fused_phases`` turned off: a test-only poke)."""
    sa, ball_a, ground_a = _ball(True)
    sb, ball_b, ground_b = _ball(True)
    ta = sa.run()                        # free flights and contact steps by the fused compiled phases
    sb._stepper.fused_phases = False
    tb = sb.run()                        # every step by the general phases
    assert sum(s is None for s in ta.status) > 300 and sum(s is not None for s in ta.status) > 50
    for f in ("q", "v", "p"):
        _close(getattr(ta, f)(ball_a), getattr(tb, f)(ball_b), 1e-14)
    for lev in (0, 1):
        _close(ta.y(ground_a, lev), tb.y(ground_b, lev), 1e-14)
    _close(ta.lambda_(ground_a), tb.lambda_(ground_b), 1e-14)


def _linear_chain(batch, T=0.6):
    """Two LagrangianLinearTIDS with K, C and a time-dependent fext, a spring-less coupling relation
    with b and D, and a ground contact: every linear feature of the batched path."""
    s1 = nm.LagrangianLinearTIDS([0.3, 0.0], [0.0, 1.0], np.diag([1.0, 2.0]), K=[[4.0, -1.0], [-1.0, 3.0]],
                                 C=[[0.1, 0.0], [0.0, 0.2]], fext=lambda t, z: np.array([-9.81, np.sin(5 * t)]))
    s2 = nm.LagrangianLinearTIDS([0.6, 0.1], [0.0, 0.0], np.eye(2), fext=[-9.81, 0.0])
    ground = nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0, 0.0]]))
    gap = nm.Interaction(nm.NewtonImpactNSL(0.2), nm.LagrangianLinearTIR([[-1.0, 0.0, 1.0, 0.0]], b=[-0.1],
                                                                          D=[[1e-3]]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(ground, s1)
    nsds.link(gap, s1, s2)
    sim = nm.TimeStepping(nsds, 1e-3, nm.MoreauJeanOSI(0.5, batch=batch), osns="lcp", method="lemke", tol=1e-12)
    return sim, (s1, s2), (ground, gap)


def test_linear_features_batched_match():
    sa, dsa, ia = _linear_chain(False)
    sb, dsb, ib = _linear_chain(True)
    ta, tb = sa.run(), sb.run()
    assert sb._stepper.batch and not sb._stepper.fused_phases     # K, C: the general phases
    assert any(s is not None for s in ta.status)
    for x, y in zip(dsa, dsb):
        for f in ("q", "v", "p"):
            _close(getattr(ta, f)(x), getattr(tb, f)(y))
    for x, y in zip(ia, ib):
        for lev in (0, 1):
            _close(ta.y(x, lev), tb.y(y, lev))
        _close(ta.lambda_(x), tb.lambda_(y))


def _bowl(batch, vectorized, T=1.5):
    """A point mass bouncing inside a circle: y = 1 - |q| (G0 by finite differences), LagrangianDS."""
    ds = nm.LagrangianDS([0.3, 0.0], [1.0, 0.5], M=np.eye(2), fext=[0.0, -9.81])
    if vectorized:
        rel = nm.LagrangianScleronomousR(lambda q, z: 1.0 - np.sqrt((q * q).sum(axis=1, keepdims=True)),
                                         vectorized=True)
    else:
        # the same arithmetic as the vectorized h (q @ q may use a fused multiply-add: its finite
        # differences then differ at 1e-10, more than the 1e-12 this test compares to)
        rel = nm.LagrangianScleronomousR(lambda q, z: np.array([1.0 - np.sqrt((q * q).sum())]))
    inter = nm.Interaction(nm.NewtonImpactNSL(0.8), rel)
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(inter, ds)
    sim = nm.TimeStepping(nsds, 1e-3, nm.MoreauJeanOSI(0.5, batch=batch), osns="lcp", method="lemke", tol=1e-12)
    return sim, ds, inter


@pytest.mark.parametrize("vectorized", [True, False])
def test_nonlinear_relation_with_finite_differences_batched_match(vectorized):
    sa, da, ia = _bowl(False, False)
    sb, db, ib = _bowl(True, vectorized)
    ta, tb = sa.run(), sb.run()
    assert sb._stepper.groups and sa._stepper.singles is not None
    assert sum(s is not None for s in ta.status) >= 3
    for f in ("q", "v", "p"):
        _close(getattr(ta, f)(da), getattr(tb, f)(db))
    for lev in (0, 1):
        _close(ta.y(ia, lev), tb.y(ib, lev))
    _close(ta.lambda_(ia), tb.lambda_(ib))
    assert np.abs(np.sqrt((tb.q(db) ** 2).sum(axis=1))).max() < 1.0 + 1e-2


def _spheres():
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    import modeling_spheres_box as ex

    return ex


@pytest.mark.parametrize("gap, n, steps", [(0.0, 16, 25), (0.2, 10, 30), (0.0, 60, 12)])
def test_spheres_vectorized_batched_match_the_per_interaction_path(gap, n, steps):
    ex = _spheres()
    runs = []
    for batch, vec in ((False, False), (True, True), (True, False)):
        box = ex.Box(n, T=steps * 2e-3, gap=gap, vectorized=vec)
        sim = nm.TimeStepping(box.nsds, 2e-3, nm.MoreauJeanOSI(0.5, batch=batch), osns="fc3d", method="nsn-ac",
                              tol=1e-8)
        states, W, reused = [], None, 0
        while sim.has_next_step():
            if sim.k % 5 == 0 and sim.k > 0:
                box.detect(sim)          # links and unlinks between steps
            sol = sim.step()
            if sol is not None:
                reused += sol.problem.W is W
                W = sol.problem.W
            states.append(np.concatenate([sim.state_of(s, "q") for s in box.spheres] + [sim.state_of(s, "v") for s in box.spheres]))
        assert sim._stepper.batch == batch and (sim._stepper.singles is None) == batch
        if batch and gap == 0.0:      # a lattice at rest: W repeats, the last problem is re-solved with the new q
            assert reused > 0
        if batch and n >= 60:         # more than SPARSE_DOFS: W by system blocks (compiled)
            assert sim._stepper._blocks is not None
        runs.append((np.array(states), sim.trajectory, box))
    ref = runs[0][0]
    for states, traj, box in runs[1:]:
        _close(states, ref)
        assert [s is None for s in traj.status] == [s is None for s in runs[0][1].status]
    # contact impulses of an interaction that lived through the run agree too
    ta, tb = runs[0][1], runs[1][1]
    key = next(k for k in runs[0][2].links if k in runs[1][2].links)
    _close(ta.lambda_(runs[0][2].links[key]), tb.lambda_(runs[1][2].links[key]))


def _balls(batch, n=320, T=0.4):
    """n balls (1 dof each, more than SPARSE_DOFS in all) falling on the ground, joined pairwise by
    2-row relations (interactions of sizes 1 and 2: the sparse assembled-rows path)."""
    rng = np.random.default_rng(3)
    balls = [nm.LagrangianLinearTIDS([0.02 + 0.1 * rng.random()], [rng.normal(0.0, 0.3)], [[1.0 + rng.random()]],
                                     fext=[-9.81]) for _ in range(n)]
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    inters = []
    for b in balls:
        inters.append(nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0]])), b))
    for a, b in zip(balls[:-1:7], balls[1::7]):      # y = (q_b - q_a + 0.2, q_a - q_b + 0.2) >= 0
        rel = nm.LagrangianLinearTIR([[-1.0, 1.0], [1.0, -1.0]], b=[0.2, 0.2])
        inters.append(nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.0, size=2), rel), a, b))
    sim = nm.TimeStepping(nsds, 2e-3, nm.MoreauJeanOSI(0.5, batch=batch), osns="lcp", method="lemke", tol=1e-12)
    return sim, balls, inters


@pytest.mark.parametrize("compiled", [True, False])
def test_sparse_rows_of_mixed_sizes_batched_match(compiled):
    sa, ba, ia = _balls(False)
    sb, bb, ib = _balls(True)
    fast = sb._stepper
    assert fast.fused_phases
    fast.fused_phases = compiled                     # the fused compiled phases, or the general ones with sparse rows
    ta, tb = sa.run(), sb.run()
    assert fast.sparse and fast._blocks is None
    assert (fast.pattern is None) == compiled     # the CSR rows of the general phases (pattern kept)
    assert sum(s is not None for s in ta.status) > 20
    assert [s is None for s in ta.status] == [s is None for s in tb.status]
    for x, y in zip(ba[::37], bb[::37]):
        for f in ("q", "v", "p"):
            _close(getattr(ta, f)(x), getattr(tb, f)(y))
    for x, y in zip(ia[::41], ib[::41]):
        for lev in (0, 1):
            _close(ta.y(x, lev), tb.y(y, lev))
        _close(ta.lambda_(x), tb.lambda_(y))


def test_vectorized_plugin_with_the_wrong_shape_names_the_relation():
    ds = nm.LagrangianDS([0.3, 0.0], [0.0, 0.0], M=np.eye(2))
    rel = nm.LagrangianScleronomousR(lambda q, z: np.zeros(3), vectorized=True, name="bad")
    nsds = nm.NonSmoothDynamicalSystem(0.0, 0.1)
    nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), rel), ds)
    with pytest.raises(PluginError, match="bad.*h.*expected"):
        nm.TimeStepping(nsds, 1e-2, osns="lcp")


@pytest.mark.parametrize("batch", [True, False])
def test_interactions_linked_mid_run_are_recorded_from_their_step(batch):
    sim, ball, ground = _ball(batch, T=1.0)
    ceiling = nm.Interaction(nm.NewtonImpactNSL(0.0), nm.LagrangianLinearTIR([[-1.0, 0.0, 0.0]], b=[2.0]))
    seen = {}
    while sim.has_next_step():
        if sim.k == 50:
            sim.nsds.link(ceiling, ball)
        if sim.k == 120:
            sim.nsds.remove_interaction(ceiling)
        sim.step()
        if 50 < sim.k <= 120:
            seen[sim.k] = sim.state_of(ceiling).y[0].copy()
    traj = sim.trajectory
    y = traj.y(ceiling, 0)[:, 0]
    assert np.isnan(y[:51]).all() and np.isnan(y[121:]).all()
    assert np.allclose(y[51:121], [seen[k][0] for k in range(51, 121)], rtol=0, atol=1e-15)
    assert np.allclose(y[51:121], 2.0 - traj.q(ball)[51:121, 0], rtol=0, atol=1e-14)
    assert np.isnan(traj.lambda_(ceiling)[:51]).all()
    # the ground and the ball are recorded at every step
    assert not np.isnan(traj.y(ground, 0)).any() and not np.isnan(traj.q(ball)).any()


def _churn(follow, monkeypatch, n=14, steps=45, mass_removal=None):
    """Spheres dropped in a box, contact detection every 3 steps, and more changes between steps: an
    interaction unlinked and linked again two steps later, one linked and unlinked before any step,
    and (``mass_removal``) most interactions unlinked at once at that step. ``follow=False``: every
    change takes the full build. Returns the states, the trajectory, the box, every interaction ever
    linked, and what the batch did with each change (followed with additions, followed, rebuilt)."""
    from nsopt.modeling import _stepper

    ex = _spheres()
    seen = {"append": 0, "remove": 0, "rebuild": 0}
    real = _stepper.MoreauJeanStepper.follow

    def spy(self, changes, outputs=True):
        ok = follow and real(self, changes, outputs)
        seen["append" if ok and any(w == "link" for w, _ in changes) else "remove" if ok else "rebuild"] += 1
        return ok

    monkeypatch.setattr(_stepper.MoreauJeanStepper, "follow", spy)
    box = ex.Box(n, T=steps * 2e-3, gap=0.2)
    sim = nm.TimeStepping(box.nsds, 2e-3, nm.MoreauJeanOSI(0.5), osns="fc3d", method="nsn-ac", tol=1e-10)
    rng = np.random.default_rng(7)
    ever, parked, states = list(box.links.values()), {}, []
    while sim.has_next_step():
        k = sim.k
        if k % 3 == 0 and k > 0:
            box.detect(sim)
        if k % 4 == 1 and box.links:              # unlink one, link the same object again at k + 2
            key = sorted(box.links)[rng.integers(len(box.links))]
            parked[k + 2] = (key, box.links.pop(key))
            box.nsds.remove_interaction(parked[k + 2][1])
        if k in parked and parked[k][0] not in box.links:
            key, inter = parked.pop(k)
            box.links[key] = box.nsds.link(inter, *([box.spheres[key[1]]] if key[0] == "w" else
                                                      [box.spheres[key[1]], box.spheres[key[2]]]))
        if k == 7:                                # linked and unlinked between two steps
            extra = nm.Interaction(box.law(), ex.pair_relation())
            box.nsds.link(extra, box.spheres[0], box.spheres[1])
            box.nsds.remove_interaction(extra)
        if k == mass_removal:
            for key in sorted(box.links)[::4] + sorted(box.links)[1::4]:
                box.nsds.remove_interaction(box.links.pop(key))
        ever += [i for i in box.links.values() if all(i is not e for e in ever)]
        sim.step()
        states.append(np.concatenate([sim.state_of(s, "q") for s in box.spheres] + [sim.state_of(s, "v") for s in box.spheres]))
    return np.array(states), sim.trajectory, ever, seen


@pytest.mark.parametrize("mass_removal", [None, 20])
def test_topology_changes_followed_in_place_give_the_full_build(monkeypatch, mass_removal):
    """The batch follows links and removals in place (removed rows stay, inactive; new interactions
    appended; a full build when removed rows would be more than a quarter): the same numbers, bit for
    bit, as a new batch at every change, and the same recording (NaN where an interaction was not
    linked, a re-linked one recorded again)."""
    sa, ta, ea, seen_a = _churn(True, monkeypatch, mass_removal=mass_removal)
    sb, tb, eb, seen_b = _churn(False, monkeypatch, mass_removal=mass_removal)
    assert seen_a["append"] >= 3 and seen_a["remove"] >= 3, seen_a
    assert seen_b["append"] == seen_b["remove"] == 0
    if mass_removal:
        assert seen_a["rebuild"] >= 1                      # the quarter: compacted by a full build
    np.testing.assert_array_equal(sa, sb)
    assert len(ea) == len(eb) and len(ea) > 20
    gaps = 0
    for x, y in zip(ea, eb):
        for lev in (0, 1):
            np.testing.assert_array_equal(ta.y(x, lev), tb.y(y, lev))
        np.testing.assert_array_equal(ta.lambda_(x), tb.lambda_(y))
        linked = ~np.isnan(ta.y(x, 0)[:, 0])[:len(sa) + 1]
        gaps += np.count_nonzero(np.diff(np.r_[0, linked.astype(int)]) == 1) > 1    # linked twice
    assert gaps >= 1, "no interaction recorded, unlinked and recorded again"


def test_a_link_the_batch_does_not_take_switches_paths_mid_run():
    """Spheres on the grouped path; mid-run a rheonomous relation (a floor plate that rises; the groups
    do not take it) is linked, later removed: it is evaluated one by one while it is linked (warm starts
    and outputs handed over at each rebuild), and the run agrees with the one-by-one path throughout
    (1e-12)."""
    ex = _spheres()
    runs = []
    for batch in (True, False):
        box = ex.Box(6, T=60 * 2e-3, gap=0.2)
        sim = nm.TimeStepping(box.nsds, 2e-3, nm.MoreauJeanOSI(0.5, batch=batch), osns="fc3d", method="nsn-ac",
                              tol=1e-10)
        plate = nm.Interaction(box.law(), nm.LagrangianRheonomousR(
            lambda q, t, z: np.array([q[2] - ex.R - 0.02 * t, q[0] * 0.0, q[1] * 0.0]),
            lambda q, t, z: np.array([[0.0, 0.0, 1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, -ex.R, 0.0],
                                      [0.0, 1.0, 0.0, ex.R, 0.0, 0.0]]),
            lambda q, t, z: np.array([-0.02, 0.0, 0.0])))
        paths, states = [], []
        while sim.has_next_step():
            if sim.k == 20:
                box.nsds.link(plate, box.spheres[0])
            if sim.k == 40:
                box.nsds.remove_interaction(plate)
            if sim.k % 5 == 0 and sim.k > 0:
                box.detect(sim)
            sim.step()
            st = sim._stepper
            paths.append(st.singles is not None and any(st.alive[j] for j in st.singles.index))
            states.append(np.concatenate([sim.state_of(s, "q") for s in box.spheres] + [sim.state_of(s, "v") for s in box.spheres]))
        runs.append((np.array(states), paths))
    (sa, pa), (sb, pb) = runs
    assert not any(pa[:20]) and all(pa[20:40]) and not pa[40] and all(pb)
    _close(sa, sb)


def test_a_new_stepper_of_the_same_simulation_builds_anew():
    """A stepper started again for the same simulation with another θ (no topology change) builds its
    stacking and factors anew, with the state of the one it replaces."""
    sim, ball, ground = _ball(True, T=0.2)
    for _ in range(10):
        sim.step()
    osi, first = sim.integrator, sim._stepper
    osi.theta = 1.0
    second = osi.start(sim, prev=first)
    assert second is not first and second.sys is not first.sys and second.sys.theta == 1.0
    assert np.array_equal(second.buf, first.buf)


def test_block_pairs_against_a_direct_enumeration():
    """The compiled slot pairs of the block plan: every (p, q) on a common system, ordered by their
    interactions (a, b) then by system, cut into runs, each run's mirror the run of (b, a)."""
    from nsopt.modeling import _kernels as K

    rng = np.random.default_rng(11)
    for trial in range(20):
        n_body, n_inter = int(rng.integers(1, 12)), int(rng.integers(1, 30))
        bodies = [tuple(rng.choice(n_body, size=min(n_body, int(rng.integers(1, 3))), replace=False).tolist())
                  for _ in range(n_inter)]
        slot_inter = np.repeat(np.arange(n_inter), [len(b) for b in bodies])
        slot_body = np.array([s for b in bodies for s in b], dtype=np.intp)
        slot_p, slot_q, inter_a, inter_b, run, mirror = K.block_pairs(slot_inter, slot_body, n_inter, n_body)
        want = sorted((slot_inter[p], slot_inter[q], slot_body[p], p, q) for p in range(len(slot_body))
                      for q in range(len(slot_body)) if slot_body[p] == slot_body[q])
        got = list(zip(inter_a.tolist(), inter_b.tolist(), slot_body[slot_p].tolist(), slot_p.tolist(), slot_q.tolist()))
        assert got == [tuple(int(x) for x in w) for w in want], trial
        starts = [k for k in range(len(got)) if k == 0 or got[k][:2] != got[k - 1][:2]]
        assert run.tolist() == starts + [len(got)]
        for r, m in enumerate(mirror.tolist()):
            assert (inter_a[run[m]], inter_b[run[m]]) == (inter_b[run[r]], inter_a[run[r]])
