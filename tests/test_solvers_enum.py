"""Enumeration of complementary bases for small LCP/MLCP, and its size guard."""

import numpy as np
import pytest

import nsopt
from nsopt import generate as g
from nsopt.exceptions import NotApplicable
from nsopt.result import Status
from nsopt.solvers.enum import MAX_PAIRS

from conftest import corpus_params, load_corpus_file, need_corpus
from conftest import given, settings, st  # hypothesis' names (property tests skip without it)

FAST = settings(max_examples=20, deadline=None)


@FAST
@given(n=st.integers(1, 12), seed=st.integers(0, 10_000), kind=st.sampled_from(["p", "spd", "psd"]))
def test_lcp_generated(n, seed, kind):
    p, _ = g.lcp(n, seed=seed, matrix=kind)
    s = nsopt.solve(p, method="enum", tol=1e-10)
    assert s.success, (s.error, s.message)


@FAST
@given(n=st.integers(0, 5), m=st.integers(1, 10), seed=st.integers(0, 10_000))
def test_mlcp_generated(n, m, seed):
    p, sol = g.mlcp(n, m, seed=seed)
    s = nsopt.solve(p, method="enum", tol=1e-10)
    assert s.success, (s.error, s.message)
    np.testing.assert_allclose(s.z, sol["z"], atol=1e-8)   # SPD: unique solution


def test_size_guard_names_the_limit():
    big = nsopt.LCP(np.eye(MAX_PAIRS + 1), -np.ones(MAX_PAIRS + 1))
    with pytest.raises(NotApplicable, match=f"exceeds the limit {MAX_PAIRS}"):
        nsopt.solve(big, method="enum")
    assert "enum" not in nsopt.methods(big)
    assert "enum" in nsopt.methods(nsopt.LCP(np.eye(MAX_PAIRS), -np.ones(MAX_PAIRS)))
    p, _ = g.mlcp(3, MAX_PAIRS + 1, seed=0)
    with pytest.raises(NotApplicable, match="complementarity pairs"):
        nsopt.solve(p, method="enum")


def test_warm_start_and_budget():
    p, sol = g.lcp(14, seed=5, matrix="p")
    cold = nsopt.solve(p, method="enum")
    warm = nsopt.solve(p, method="enum", z0=sol["z"])
    assert cold.success and warm.success and warm.nit == 0 < cold.nit   # the warm start is iteration 0
    s = nsopt.solve(p, method="enum", max_iter=3)
    assert s.status is Status.MAX_ITER and s.nit == 3


def test_no_solution_visits_every_basis():
    n = 10
    s = nsopt.solve(nsopt.LCP(-np.eye(n), -np.ones(n)), method="enum")
    assert s.status is Status.STALLED and s.nit == 2 ** n


def test_history_and_callback():
    p, _ = g.lcp(6, seed=2, matrix="p")
    calls = []
    s = nsopt.solve(p, method="enum", history=True, callback=lambda k, x, e: calls.append(k))
    assert s.success and s.history[-1] <= 1e-8 and calls[-1] == s.nit

    def stop(k, x, e):
        raise StopIteration
    assert nsopt.solve(p, method="enum", callback=stop).status is Status.CALLBACK_STOP


# Siconos 4.4 ENUM at tol 1e-8: lcp 15/15 run (n <= 20), mlcp 12/12 run with m <= 20 (Rectangular
# counted by Siconos; it is not a square MLCP for nsopt).
@pytest.mark.parametrize("path", corpus_params("lcp", "mlcp"))
def test_corpus_enum(path):
    if path is None:
        need_corpus()
    p = load_corpus_file(path)
    if p is None:                       # refused on purpose, with its error (conftest.EXPECTED_INVALID)
        return
    m = p.size if p.kind == "lcp" else p.m
    if m > MAX_PAIRS:
        pytest.skip(f"{m} pairs > {MAX_PAIRS}")
    s = nsopt.solve(p, method="enum")
    assert s.success, (path.name, s.status, s.error)
