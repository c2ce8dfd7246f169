"""nsn-ac on a problem next to one it solved, from a warm start that stalls, and the active-set polish of a
stalled Newton (issue 31 §1).

Siconos' Capsules-i100-1090 (828 unknowns, singular W) with q moved by a relative 1e-6; a one-step problem of the
hyperstatic 10-cube pile (``benchmarks/rigid_scenes.py`` cubes10, step 40, tol 1e-9: 54 unknowns, its warm start
the previous step's impulses; ``python benchmarks/newton_nearby.py --capture cubes10 DIR --T 0.3 --tol 1e-9``,
its solve 3, stored in tests/data/cubes10_step40.npz with W dense). Counts, not times
(``benchmarks/newton_nearby.py`` measures the times).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import data_dir, load_corpus_file, need_corpus

import nsopt
from nsopt.monitor import Monitor
from nsopt.result import Status
from nsopt.solvers.newton import STALL, _active_set_polish, _local_system

FILE = "fc3d/Capsules-i100-1090.dat"
PILE_STEP = Path(__file__).parent / "data" / "cubes10_step40.npz"


def _nearby(p, seed):
    rng = np.random.default_rng(seed)
    return nsopt.FrictionContact(p.dim, p.W, p.q * (1.0 + 1e-6 * rng.standard_normal(p.q.shape[0])), p.mu)


@pytest.fixture(scope="module")
def capsules():
    need_corpus()
    p = load_corpus_file(data_dir() / FILE)
    s = nsopt.solve(p, method="nsn-ac", tol=1e-12)
    assert s.success, s.message
    return p, s


def _pile_step():
    d = np.load(PILE_STEP)
    return nsopt.FrictionContact(3, d["W"], d["q"], d["mu"]), d["warm"]


# ------------------------------------------------------------------ the nearby problem


@pytest.mark.parametrize("seed", [0, 1])
def test_warm_start_from_nearby_solution_not_worse_than_cold(capsules, seed):
    p, s0 = capsules
    pp = _nearby(p, seed)
    cold = nsopt.solve(pp, method="nsn-ac", tol=1e-8)
    warm = nsopt.solve(pp, method="nsn-ac", tol=1e-8, r0=s0.r)
    assert cold.success and warm.success, (cold.message, warm.message)
    assert warm.nit <= cold.nit, (warm.nit, cold.nit)


# ------------------------------------------------------------------ the hyperstatic pile


def test_warm_start_that_stalls_costs_its_stall_not_a_solve():
    """The pile step whose warm start (the previous step's impulses) stalls: the warm solve took 274 iterations
    (the continuation from the warm iterate), the cold one 116. A warm start that stalls now restarts the Newton
    from zero: it costs about its stall more than the cold solve (79 iterations against 53, both ended by the
    active-set polish; 162 against 136 without it)."""
    p, warm0 = _pile_step()
    cold = nsopt.solve(p, method="nsn-ac", tol=1e-9)
    warm = nsopt.solve(p, method="nsn-ac", tol=1e-9, warm_start=warm0)
    assert cold.success and warm.success, (cold.message, warm.message)
    assert p.error(warm.r) <= 1e-9 and p.error(cold.r) <= 1e-9
    # the warm start's stall (26 iterations here, at most a few times STALL["ac"]) and the continuation's path
    # from a best iterate that may differ (a few iterations)
    assert warm.nit <= cold.nit + 2 * STALL["ac"], (warm.nit, cold.nit, warm.message)
    assert "from zero" in warm.message


def test_slow_pile_step_still_converges():
    """The cold solve of that step: its best error stays at 4e-9 from iteration ~25; the Newton stalls at 52 and
    the active-set polish ends it (without the polish, the proximal continuation converged at 136)."""
    p, _ = _pile_step()
    s = nsopt.solve(p, method="nsn-ac", tol=1e-9)
    assert s.status is Status.SOLVED, (s.status, s.nit, s.message)
    assert p.error(s.r) <= 1e-9


# ------------------------------------------------------------------ the active-set polish


def test_stalled_pile_step_is_ended_by_the_active_set_polish():
    """At the stall (52 iterations at 4.0e-9: three sticking contacts of the solution sit on their cone's boundary,
    their slip velocities ~1e-8, the solution 0.32 away along W's null space from the iterate, |r| = 1.6), the
    reduced system with two of them held on the boundary gives 7.2e-10: solved in one more iteration, where the
    proximal continuation took 84 more (136 in all). Also with hybrid=False (no stall test), at max_iter."""
    p, _ = _pile_step()
    s = nsopt.solve(p, method="nsn-ac", tol=1e-9)
    assert s.status is Status.SOLVED and p.error(s.r) <= 1e-9, (s.status, s.message)
    assert s.info.get("polished") and "active-set polish" in s.message, s.message
    assert s.nit <= 2 * STALL["ac"] + 10, (s.nit, s.message)      # the stall's iterations and one
    plain = nsopt.solve(p, method="nsn-ac", tol=1e-9, hybrid=False, max_iter=60)
    assert plain.status is Status.SOLVED and p.error(plain.r) <= 1e-9, (plain.status, plain.message)
    assert plain.nit == 60 and plain.info.get("polished"), plain.message


def test_active_set_polish_is_judged_by_the_error_measure():
    """The polish returns a point only when the problem's measure of it is lower than the iterate's (the number
    it returns is that measure), and nothing at a solution."""
    p, _ = _pile_step()
    seen = []       # the plain Newton's iterates (the callback does not see the polish of the result at max_iter)
    nsopt.solve(p, method="nsn-ac", tol=1e-9, hybrid=False, max_iter=52,
                callback=lambda it: seen.append((it.error, it.r)))
    e0, r0 = min(seen, key=lambda c: c[0])
    assert e0 == pytest.approx(p.error(r0), rel=1e-9)
    sys = _local_system(p, Monitor(1e-9), "ac", "auto")
    x, e = _active_set_polish(sys, r0.copy(), e0, 1e-9)
    # (u = Wr + q of a solution is all cancellation: the two products agree to ~1e-8 relative)
    assert e == pytest.approx(p.error(x), rel=1e-6) and p.error(x) < 1e-9 < 4e-9 < e0 <= 1e-8, (e, e0)
    exact = nsopt.solve(p, method="nsn-ac", tol=1e-13, max_iter=4000)
    assert _active_set_polish(sys, exact.r.copy(), p.error(exact.r), 0.0) is None
