"""nsopt.diagnose against a ground truth computed without nsopt's solvers or nsopt.sensitivity
(tests/ground_truth.py, issue 30): 300 problems degenerate by construction or unique
(nsopt.generate.degenerate, 15 families x 20 seeds), each diagnosed at the solution its
construction gives and at a method's solution. The verdict unique / not unique, the dimension of the
solution set near the point (every piece through it) and the pieces listed must agree; a wrong
"unique" must never happen. Run with ``-s`` to see the confusion table."""

from __future__ import annotations

import collections
import warnings

import ground_truth as gt
import numpy as np
import pytest

import nsopt
from nsopt import generate
from nsopt.exceptions import NotApplicable, OptionError, ProblemError

SEEDS = 20
METHOD = {"lcp": ("lemke", "pgs"), "mlcp": ("lemke", "pgs"), "relay": ("lemke", "pgs"), "fc2d": ("nsn-ac", "nsgs"),
          "fc3d": ("nsn-ac", "nsgs")}


def _points(p, known, seed):
    """(name, primal variable) of the points diagnosed: the construction's and one method's."""
    out = [("known", known[p.primal])] if known is not None else []
    method = METHOD[p.kind][seed % 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = nsopt.solve(p, method=method, tol=1e-12, max_iter=2000)
    if s.success and s.error < 1e-10:
        out.append((method, getattr(s, p.primal)))
    return out


def _pieces(items):
    return sorted((tuple(sorted(states.items())), dim) for states, dim in items)


def test_diagnose_against_the_ground_truth_confusion_table():
    table = collections.Counter()
    wrong, inconclusive, problems, points = [], 0, 0, 0
    for family in generate.DEGENERATE_FAMILIES:
        for seed in range(SEEDS):
            p, known = generate.degenerate(family, seed)
            problems += 1
            for name, x in _points(p, known, seed):
                points += 1
                truth = gt.local_pieces(p, x)
                gu, gd = gt.verdict(truth)
                d = nsopt.diagnose(p, {p.primal: x})
                table[("unique" if gu else "not unique" if gu is False else "inconclusive",
                       "unique" if d.is_unique else "not unique" if d.is_unique is False else "undecided")] += 1
                if gu is None:
                    inconclusive += 1
                    assert d.is_unique is False or d.is_unique is None, (family, seed, name)   # never "unique"
                    continue
                same = d.is_unique == gu and (gd is None or d.dimension == gd)
                listed = _pieces((pc.states, pc.first_order) for pc in truth) == \
                    _pieces((pc.states, pc.dimension) for pc in d.pieces)
                if not (same and listed):
                    wrong.append((family, seed, name, gu, gd, d.is_unique, d.dimension))
    print(f"\ndiagnose against the ground truth: {problems} problems, {points} points")
    print("  truth \\ diagnose   unique  not unique  undecided")
    for truth in ("unique", "not unique", "inconclusive"):
        print(f"  {truth:17s} {table[(truth, 'unique')]:7d} {table[(truth, 'not unique')]:11d} "
              f"{table[(truth, 'undecided')]:10d}")
    assert problems == 300
    assert table[("not unique", "unique")] == 0 and table[("inconclusive", "unique")] == 0   # no wrong "unique"
    assert not wrong, wrong[:5]
    assert table[("unique", "unique")] > 100 and table[("not unique", "not unique")] > 100
    assert inconclusive <= 0.05 * points


def test_the_readme_example_is_not_unique_from_every_method():
    """LCP([[1, 1], [1, 1]], [-1, -1]): the segment z1 + z2 = 1; lemke ends at z = [0, 1], pgs at
    [1, 0] (a degenerate row each: the piece leaving through it has dimension 1), qp in the middle."""
    p = nsopt.LCP([[1.0, 1.0], [1.0, 1.0]], [-1.0, -1.0])
    seen = set()
    for method in ("lemke", "pgs", "qp", "newton-fb", "enum", "psor"):
        s = nsopt.solve(p, method=method, tol=1e-12)
        d = nsopt.diagnose(p, s)
        assert d.is_unique is False and d.unique == {"z": False, "w": True} and d.dimension == 1, method
        assert "NOT unique" in str(d)
        seen.add(tuple(np.round(s.z, 6)))
    assert {(0.0, 1.0), (1.0, 0.0), (0.5, 0.5)} <= seen


def test_lcp_zero_zero_is_not_unique():
    for n in (1, 3):
        d = nsopt.diagnose(nsopt.LCP(np.zeros((n, n)), np.zeros(n)), {"z": np.zeros(n)})
        assert d.is_unique is False and d.dimension == n
        assert [pc.dimension for pc in d.pieces][-1] == n


def test_ground_truth_on_hand_cases():
    p = nsopt.LCP([[1.0, 1.0], [1.0, 1.0]], [-1.0, -1.0])
    pcs = gt.local_pieces(p, [0.0, 1.0])
    assert sorted((tuple(pc.states.values()), pc.dimension) for pc in pcs) == [(("at lower bound",), 0), (("free",), 1)]
    allp = gt.all_pieces(p)
    np.testing.assert_allclose(gt.union_least_norm(allp), [0.5, 0.5], atol=1e-10)
    assert gt.verdict(gt.local_pieces(nsopt.LCP(np.eye(2), [-1.0, 0.0]), [1.0, 0.0])) == (True, 0)
    # a particle on two identical 2D contacts, sticking: r splits between them (dimension 2)
    H = np.vstack([np.array([[0.0, 1.0], [1.0, 0.0]])] * 2)
    p = nsopt.FrictionContact(2, H @ H.T, H @ np.array([0.0, -0.1]), 0.5)
    assert gt.verdict(gt.local_pieces(p, [0.05, 0.0, 0.05, 0.0])) == (False, 2)


@pytest.mark.parametrize("bad", [-1, 0, 1.5, float("nan"), float("inf"), "1e-9", True, None, 1e-9 + 0j])
def test_rank_tol_and_the_other_options_are_checked(bad):
    p = nsopt.LCP([[1.0, 1.0], [1.0, 1.0]], [-1.0, -1.0])
    x = {"z": [0.5, 0.5]}
    for option in ("rank_tol", "tol_degenerate", "max_error"):
        if option == "max_error" and bad in (1.5, float("inf")):
            continue                                  # (any positive error bound is meaningful)
        with pytest.raises(OptionError, match=option):
            nsopt.diagnose(p, x, **{option: bad})
    assert nsopt.diagnose(p, x, rank_tol=np.float32(1e-9)).dimension == 1


def test_a_point_that_is_not_a_solution_is_refused():
    """A solution of another problem of the same size, or an unconverged one, is not diagnosed
    (before: a warning, then "unique")."""
    p, _ = generate.friction_contact(2, 3, seed=0)
    other, _ = generate.friction_contact(2, 3, seed=1)
    with pytest.raises(ProblemError, match="is not a solution of this problem"):
        nsopt.diagnose(p, nsopt.solve(other, method="nsn-ac", tol=1e-12))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rough = nsopt.solve(p, method="nsgs", tol=1e-14, max_iter=2)
    assert rough.error > 1e-6
    with pytest.raises(ProblemError, match="its error is"):
        nsopt.diagnose(p, rough)
    assert nsopt.diagnose(p, rough, max_error=1.0).error == pytest.approx(rough.error)


def test_bad_solutions_are_typed_errors():
    p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    for bad, match in ((["a", "b"], "real numbers"), ([1 + 1j, 2.0], "complex"), ([[1.0], [2.0]], "finite vector"),
                       ([1.0, 2.0, 3.0], "finite vector")):
        with pytest.raises(ProblemError, match=match):
            nsopt.diagnose(p, {"z": bad})
    with pytest.raises(ProblemError, match="must be an nsopt problem"):
        nsopt.diagnose(np.eye(2), {"z": [1.0, 2.0]})


def test_multiple_impact_is_not_applicable_not_an_attribute_error():
    p = nsopt.MultipleImpact([[1.0]], [[1.0]], [-2.0], restitution=0.5, stiffness=1e6)
    with pytest.raises(NotApplicable, match="LZB process"):
        nsopt.diagnose(p, nsopt.solve(p, method="lzb"))


def test_one_threshold_for_sensitivity_and_diagnose():
    """K with condition numbers around the threshold RANK_RTOL = 1e-9: singular for both, or for
    neither (before: 1e-13 for sensitivity, 1e-9 for diagnose)."""
    from nsopt.sensitivity._factor import RANK_RTOL

    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    for smallest in (1e-6, 1e-8, 1e-10, 1e-12, 1e-14):
        M = (Q * np.array([1.0, 0.7, 0.3, smallest])) @ Q.T
        z = np.array([1.0, 2.0, 0.5, 1.5])
        p = nsopt.LCP(M, -M @ z)                      # every row active: K = M
        s = nsopt.sensitivity(p, {"z": z}, singular="min-norm")
        d = nsopt.diagnose(p, {"z": z})
        assert s.singular == (d.dimension > 0) == (smallest < RANK_RTOL), smallest
