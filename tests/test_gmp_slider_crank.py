"""The slider-crank example: a Moreau–Jean simulation that solves a GenericMechanical problem (joints +
frictional contact) at every step. Invariants: the joints hold, the contact impulses are admissible."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import slider_crank_gmp as sc  # noqa: E402


@pytest.fixture(scope="module")
def run():
    return sc.simulate(T=0.4, h=1e-3, method="nsn")


def test_every_step_is_a_solved_gmp(run):
    assert run["failed"] == [] and all(s is not None for s in run["status"])
    assert np.all(run["error"] <= 1e-10)
    assert set(run["method"]) <= {"nsn", "nsgs"}
    mixed = sum(k == ("equality", "fc2d") for k in run["kinds"])
    assert mixed >= len(run["kinds"]) // 2          # joints and the frictional contact in one problem


def test_joints_hold(run):
    """Velocity-level joints drift by O(h^2) per step: |h(q)| <= 1e-4 m (1e-3 of the crank) over 400 steps."""
    assert np.all(run["joint_error"] <= 1e-4)
    assert run["joint_error"][0] <= 1e-15


def test_contact_impulses_admissible(run):
    lam_n, lam_t = run["lam_n"], run["lam_t"]
    assert np.all(lam_n >= -1e-12)                                  # unilateral: pushes only
    assert np.all(np.abs(lam_t) <= sc.MU * lam_n + 1e-12)           # Coulomb cone
    assert np.any(np.abs(lam_t) >= sc.MU * lam_n - 1e-12) and np.any(lam_n > 0)
    assert run["q"][:, 7].min() >= sc.S - 1e-6                      # the slider does not sink into the floor


def test_the_mechanism_moves(run):
    assert run["q"][-1, 2] - run["q"][0, 2] > 0.5                   # the crank turns under its torque
    assert np.ptp(run["q"][:, 6]) > 0.05                            # and drives the slider


def test_gauss_seidel_gives_the_same_motion(run):
    """The same simulation with nsgs at every step follows the Newton one (first 100 steps)."""
    gs = sc.simulate(T=0.1, h=1e-3, method="nsgs")
    assert gs["failed"] == []
    assert np.max(np.abs(gs["q"] - run["q"][:101])) <= 1e-6
