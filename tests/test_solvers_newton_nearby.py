"""nsn-ac on a problem next to one it solved, and from a warm start that stalls (issue 31 §1).

Siconos' Capsules-i100-1090 (828 unknowns, singular W) with q moved by a relative 1e-6; a one-step problem of the
hyperstatic 10-cube pile (``benchmarks/rigid_scenes.py`` cubes10, step 40, tol 1e-9: 54 unknowns, its warm start
the previous step's impulses, stored in tests/data). Counts, not times (``benchmarks/newton_nearby.py`` measures
the times).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import data_dir, load_corpus_file, need_corpus

import nsopt
from nsopt.policy import POLICY
from nsopt.result import Status
from nsopt.solvers.newton import STALL
from nsopt.solvers.newton_loop import RATE_MARGIN, RATE_WINDOW, out_of_reach

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


# ------------------------------------------------------------------ the rule


def _halving(per, k, e0=1.0):
    """The best errors of k iterations halving every ``per``."""
    return [e0 * 0.5 ** (i / per) for i in range(k + 1)]


def test_out_of_reach_at_the_observed_rate():
    """Stops only when the rate over the window, projected, needs more than RATE_MARGIN x the iterations left."""
    # halving per 10 iterations: 1e-9 is ~300 iterations from 1, well within 1000
    assert out_of_reach(_halving(10, 150), 150, 1000, 1e-9) is None
    # halving per 200 iterations at 1e-10 after 300, tol 1e-12 (~1330 more), 500 left: out of reach
    bests = _halving(200, 300, e0=1e-10 * 2 ** 1.5)
    why = out_of_reach(bests, 300, 800, 1e-12)
    assert why is not None and "stalls" in why and "500 left" in why
    # the same rate with a budget that covers it (RATE_MARGIN x left > need): goes on
    need = 200 * math.log2(bests[-1] / 1e-12)
    assert out_of_reach(bests, 300, 300 + int(need / RATE_MARGIN) + 2, 1e-12) is None
    # no progress over the window: out of reach, however large the budget; a window not yet full: never
    flat = [1.0] * 10 + [1e-6] * (RATE_WINDOW + 1)
    assert out_of_reach(flat, len(flat) - 1, 10 ** 9, 1e-9) is not None
    assert out_of_reach(flat[:RATE_WINDOW], RATE_WINDOW - 1, 10 ** 9, 1e-9) is None
    # no budget, or tol reached: never
    assert out_of_reach(flat, len(flat) - 1, None, 1e-9) is None
    assert out_of_reach(flat, len(flat) - 1, 10 ** 9, 1e-5) is None


# ------------------------------------------------------------------ the nearby problem


def test_nearby_problem_ends_early_with_its_best_iterate(capsules):
    """q moved off the range of the singular W by a relative 1e-6: a solution exists (the problem is strictly
    feasible) but is degenerate, and every method creeps (Siconos 4.4's NSGS, NSN_AC, NSN_FB, PROX and ADMM do not
    reach 1e-9 in 10000 iterations or 60 s). nsn-ac crept to max_iter (1000 iterations, 80x the unperturbed solve's
    iterations); it now stops STALLED when tol is out of reach at the observed rate, saying so, with its best
    iterate."""
    p, s0 = capsules
    pp = _nearby(p, 0)
    W = p.W.toarray()
    ev, V = np.linalg.eigh(0.5 * (W + W.T))
    Y = V[:, ev < 1e-10 * ev[-1]]
    assert np.linalg.norm(Y.T @ p.q) < 1e-9       # the premise: q was in range(W) ...
    assert np.linalg.norm(Y.T @ pp.q) > 1e-6      # ... and left it
    s = nsopt.solve(pp, method="nsn-ac", tol=1e-12)
    assert s.status is Status.STALLED, (s.status, s.nit, s.message)
    assert s.nit < 50 * s0.nit, (s.nit, s0.nit)
    assert "the error stalls" in s.message and "left" in s.message
    assert s.error == pytest.approx(pp.error(s.r)) and s.error < 1e-9


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
    from zero: it costs at most its stall (STALL["ac"] iterations) more than the cold solve."""
    p, warm0 = _pile_step()
    cold = nsopt.solve(p, method="nsn-ac", tol=1e-9)
    warm = nsopt.solve(p, method="nsn-ac", tol=1e-9, warm_start=warm0)
    assert cold.success and warm.success, (cold.message, warm.message)
    assert p.error(warm.r) <= 1e-9 and p.error(cold.r) <= 1e-9
    assert warm.nit <= cold.nit + STALL["ac"], (warm.nit, cold.nit, warm.message)
    assert "from zero" in warm.message


def test_slow_pile_step_still_converges():
    """The cold solve of that step: its best error stays at 4e-9 for ~50 iterations, then converges (116
    iterations); a plateau shorter than the window (RATE_WINDOW iterations of the continuation) never ends a
    solve."""
    p, _ = _pile_step()
    s = nsopt.solve(p, method="nsn-ac", tol=1e-9)
    assert s.status is Status.SOLVED, (s.status, s.nit, s.message)
    assert p.error(s.r) <= 1e-9


def test_policy_does_not_repeat_a_cold_start_the_solve_made(capsules):
    """The fallback rule's cold retry of a warm-started solve that failed is skipped when that solve restarted
    from zero itself (nsn-ac after a warm start that stalls): the retry repeated the same cold Newton, doubling
    the time of a step that cannot reach tol."""
    p, s0 = capsules
    pp = _nearby(p, 0)
    sol = POLICY.attempt(pp, ("nsn-ac",), nsopt.solve, tol=1e-12, warm=s0.r)
    assert not sol.success and "from zero" in sol.message, sol.message
    assert [t[0] for t in sol.trace] == ["nsn-ac"], sol.trace
