"""The one solve API: dispatch, options, statuses, history, callback, the auto policy."""

import numpy as np
import pytest

import nsopt
from nsopt import generate as g
from nsopt.exceptions import MethodNotFound, OptionError
from nsopt.policy import POLICY
from nsopt.result import Solution, Status

from conftest import need_extra


@pytest.fixture
def murty():
    return nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])


def test_methods_lists_auto_and_registered(murty):
    m = nsopt.methods(murty)
    assert "auto" in m and "pgs" in m
    assert all(isinstance(v, str) and v for v in m.values())
    assert "nsgs" not in m


def test_unknown_method_names_the_valid_ones(murty):
    with pytest.raises(MethodNotFound, match=r"valid methods: auto, .*pgs"):
        nsopt.solve(murty, method="simplex-of-doom")


def test_method_of_another_kind_is_rejected(murty):
    with pytest.raises(MethodNotFound, match="exists for: .*fc3d"):
        nsopt.solve(murty, method="nsgs")


def test_unknown_option_raises(murty):
    with pytest.raises(OptionError, match="unknown option"):
        nsopt.solve(murty, method="pgs", omegaa=1.0)
    with pytest.raises(OptionError, match="accepted by none"):
        nsopt.solve(murty, method="auto", frobnicate=3)


@pytest.mark.parametrize("bad", [dict(tol=-1.0), dict(tol="x"), dict(max_iter=-3), dict(max_iter=2.5)])
def test_bad_common_options(murty, bad):
    with pytest.raises(OptionError):
        nsopt.solve(murty, method="pgs", **bad)


def test_not_a_problem():
    with pytest.raises(TypeError, match="nsopt problem"):
        nsopt.solve(np.eye(2))


def test_solution_fields(murty):
    s = nsopt.solve(murty, method="pgs", tol=1e-10, history=True)
    assert isinstance(s, Solution) and s.status is Status.SOLVED and s.success
    assert np.allclose(s.z, [4 / 3, 7 / 3], atol=1e-8)
    assert np.allclose(s.w, murty.w(s.z))
    assert s.error == murty.error(s.z) <= 1e-10
    assert s.nit > 0 and s.solve_time > 0 and s.method == "pgs"
    assert s.history and s.history[-1] <= 1e-10 and len(s.history) <= s.nit + 1
    assert set(s.variables()) == {"z", "w"}


def test_non_convergence_returns_best_iterate_with_status():
    p, _ = g.lcp(30, seed=3)
    s = nsopt.solve(p, method="pgs", tol=1e-14, max_iter=2)
    assert s.status in (Status.MAX_ITER, Status.STALLED)
    assert not s.success and np.isfinite(s.error) and s.error > 1e-14
    assert s.z is not None and s.z.shape == (30,)


def test_callback_stop(murty):
    seen = []

    def cb(k, x, err):
        seen.append(err)
        if k >= 1:
            raise StopIteration

    s = nsopt.solve(murty, method="pgs", tol=1e-14, callback=cb)
    assert s.status in (Status.CALLBACK_STOP, Status.SOLVED) and len(seen) >= 1


def test_status_judged_by_error_not_by_solver(murty):
    # tol so tight that no method reaches it: never SOLVED
    s = nsopt.solve(murty, method="pgs", tol=1e-300, max_iter=10)  # PGS hits error 0.0 exactly by ~30 sweeps
    assert not s.success


def test_auto_records_the_path(murty):
    s = nsopt.solve(murty)
    assert s.success and s.method.startswith("auto:")
    assert s.trace and s.trace[-1][1] == "solved"
    names = [t[0] for t in s.trace]
    assert names == [m for m in POLICY.auto("lcp") if m in names]


def test_policy_covers_every_kind():
    for kind in ("lcp", "mlcp", "relay", "equality", "avi", "fc2d", "fc3d", "gfc2d", "gfc3d", "gmp"):
        assert POLICY.auto(kind)


def test_a_mistyped_solution_attribute_lists_the_names_and_suggests_the_nearest():
    s = nsopt.solve(nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0]), "lemke")
    with pytest.raises(AttributeError, match=r"did you mean 'nit'\?.*a Solution has: .*nit.*status"):
        s.iterations
    with pytest.raises(AttributeError, match="did you mean 'status'"):
        s.staus
    assert not hasattr(s, "no_such_thing") and getattr(s, "nit") == s.nit


def test_subpackages_load_on_first_attribute_access():
    """``import nsopt`` then ``nsopt.modeling`` (and the others) works without importing them first,
    and ``import nsopt`` alone does not import them (PEP 562)."""
    need_extra("symbolic")                # (it touches nsopt.symbolic)
    import subprocess
    import sys

    names = ["modeling", "symbolic", "studies", "data", "generate", "reductions", "io", "formulations"]
    code = ("import sys, nsopt; before = [n for n in %r if 'nsopt.' + n in sys.modules]; "
            "mods = [getattr(nsopt, n).__name__ for n in %r]; "
            "print(before, mods, all(n in dir(nsopt) for n in %r), nsopt.studies.compare.__name__)"
            % (names, names, names))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"[] {['nsopt.' + n for n in names]} True compare"
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        nsopt.nonexistent
