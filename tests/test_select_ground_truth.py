"""solve(select="min-norm") against the ground truth (tests/ground_truth.py) and across methods
(issue 30): on problems degenerate by construction, where ``guaranteed`` is True the selections of
every method agree to 1e-8 (relative) and equal the least-norm point of the union of the pieces the
ground truth enumerates; where it is False the rule applied is named and the methods agree all the
same on these families; every selection keeps the solve's tolerance with status solved. The box of
the issue, sliding on four coplanar corners, gives one answer from four methods. The full sweep
(20 seeds per family) is benchmarks/bench_select.py."""

from __future__ import annotations

import warnings

import ground_truth as gt
import numpy as np
import pytest

import nsopt
from nsopt import generate

METHODS = {"lcp": ("lemke", "pgs", "newton-fb"), "mlcp": ("lemke", "pgs"), "relay": ("lemke", "pgs"),
           "fc2d": ("nsgs", "nsn-ac", "nsn-fb", "lemke"), "fc3d": ("nsgs", "nsn-ac", "nsn-fb", "prox")}
TOL = 1e-10
SPREAD = 1e-8
FAMILIES = ("lcp-repeated-rows", "lcp-psd-singular", "lcp-zero-pivot", "lcp-isolated", "mlcp-dependent-eq",
            "relay-psd", "fc2d-particle-duplicated", "fc2d-block-slide", "fc3d-box-stick", "fc3d-box-slide",
            "fc3d-box-turn")


def selections(p):
    out = []
    for m in METHODS[p.kind]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = nsopt.solve(p, method=m, tol=TOL, max_iter=200 if m == "newton-fb" else 20000, select="min-norm")
        sel = s.info.get("select")
        if "why" in sel and "not solved" in sel["why"]:
            continue                                  # the method itself failed: nothing to select from
        out.append((m, s))
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_selection_is_the_same_from_every_method_and_is_the_least_norm(family):
    for seed in range(3):
        p, _ = generate.degenerate(family, seed)
        sols = selections(p)
        assert len(sols) >= 2, (family, seed)
        for m, s in sols:                             # never less accurate than asked
            assert s.success and s.error <= TOL and "select" in s.info, (family, seed, m, s.status, s.error)
        X = np.array([getattr(s, p.primal) for _, s in sols])
        scale = max(float(np.max(np.abs(X))), 1e-300)
        spread = float(np.max(np.abs(X - X[0]))) / scale
        g = {s.info["select"]["guaranteed"] for _, s in sols}
        assert len(g) == 1, (family, seed, [(m, s.info["select"]) for m, s in sols])
        info = sols[0][1].info["select"]
        assert spread <= SPREAD, (family, seed, spread, info)
        if g == {True} and (p.kind != "fc3d" or family == "fc3d-box-stick"):
            ref = gt.union_least_norm(gt.all_pieces(p))
            top = max(float(np.linalg.norm(ref)), float(np.linalg.norm(X[0])), 1e-9)   # (0 vs 1e-19: equal)
            assert abs(np.linalg.norm(X[0]) - np.linalg.norm(ref)) <= 1e-8 * top, (family, seed)
        if g == {False}:
            assert "not convex" in info["set"] and "descent" in info["how"]


def test_the_sliding_box_of_the_issue():
    """A box on four coplanar corners, mu = 0.5, pushed sideways so that every contact slides: the
    normal forces are indeterminate (a curve of solutions whose velocities differ). Before: four
    methods, four reactions up to 67 % apart, all 'guaranteed', all inaccurate after selection. Now:
    one reaction (1e-12), every status solved to 1e-12, guaranteed False with the rule named."""
    pts = np.array([(-0.5, -0.3), (0.5, -0.3), (0.5, 0.3), (-0.5, 0.3)])
    p = generate.rigid_friction_problem(pts, [1.0, 0.3, 0.0, 0.0, 0.0, 0.5], mu=0.5)
    raw, picked = [], []
    for m in ("nsn-ac", "nsgs", "nsn-fb", "prox"):
        raw.append(nsopt.solve(p, method=m, tol=1e-12, max_iter=100000).r)
        s = nsopt.solve(p, method=m, tol=1e-12, max_iter=100000, select="min-norm")
        assert s.status == nsopt.Status.SOLVED and s.error <= 1e-12
        assert s.info["select"]["guaranteed"] is False and "not convex" in s.info["select"]["set"]
        assert np.all(s.u.reshape(4, 3)[:, 1:].any(axis=1))            # every contact slides
        picked.append(s.r)
    raw, picked = np.array(raw), np.array(picked)
    assert np.max(np.abs(raw - raw[0])) > 1e-4                          # the methods' own answers differ
    assert np.max(np.abs(picked - picked[0])) <= 1e-12 * np.max(np.abs(picked))
    assert np.linalg.norm(picked[0]) <= np.linalg.norm(raw, axis=1).min() + 1e-15
    d = nsopt.diagnose(p, {"r": picked[0]})
    assert d.unique == {"r": False, "u": False} and d.dimension == 1


def test_a_selection_that_cannot_meet_tol_keeps_the_methods_solution(monkeypatch):
    """Selection never costs accuracy: when the selected point cannot be brought within tol, the
    method's solution is kept, guaranteed False, and why says so."""
    from nsopt.sensitivity import select as S

    p = nsopt.LCP([[1.0, 1.0], [1.0, 1.0]], [-1.0, -1.0])
    monkeypatch.setattr(S, "_convex", lambda *a, **k: np.array([0.6, 0.5]))    # 0.1 off the set
    monkeypatch.setattr(S, "_newton", lambda *a, **k: None)
    s = nsopt.solve(p, method="lemke", tol=1e-12, select="min-norm")
    assert s.success and s.error <= 1e-12 and s.info["select"]["guaranteed"] is False
    assert "could not be brought within tol" in s.info["select"]["why"]
    np.testing.assert_array_equal(s.z, nsopt.solve(p, method="lemke", tol=1e-12).z)


def test_size_limits_say_what_was_not_checked(monkeypatch):
    """Above the size limits a friction problem gets the least-norm point of the solutions with its
    velocities, not guaranteed, and says what was not checked."""
    from nsopt.sensitivity import select as S

    p = generate.rigid_friction_problem(np.array([(-0.5, -0.3), (0.5, -0.3), (0.5, 0.3), (-0.5, 0.3)]),
                                        [1.0, 0.3, 0.0, 0.0, 0.0, 0.5], mu=0.5)
    monkeypatch.setattr(S, "DESCENT_MAX", 6)
    s = nsopt.solve(p, method="nsn-ac", tol=1e-12, select="min-norm")
    assert s.success and s.info["select"]["guaranteed"] is False
    assert "no descent along the set above 6 unknowns" in s.info["select"]["set"]
    monkeypatch.setattr(S, "CHECK_MAX", 6)
    s = nsopt.solve(p, method="nsn-ac", tol=1e-12, select="min-norm")
    assert s.success and "not checked (more than 6 unknowns" in s.info["select"]["set"]
