"""Problems and solutions travel: every problem kind, solved by every method, pickled and solved again
in another process (multiprocessing, spawn) gives the same solution there."""

import multiprocessing as mp
import pickle
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt
from nsopt import generate as g
from nsopt import registry

from test_contract import PROBLEMS  # noqa: E402  (one small problem per kind)

OPTIONS = {"tol": 1e-9, "max_iter": 200}


def _cases():
    from nsopt import solvers  # noqa: F401

    out = []
    for kind, p in sorted(PROBLEMS.items()):
        for m in registry.for_kind(kind):
            if m.applies is None or not m.applies(p):
                out.append((kind, m.name))
    return out


def _solve_there(blob):
    """In the child: unpickle (problem, method), solve, send back the pickled solution."""
    problem, method, opts = pickle.loads(blob)
    assert problem._store == {}          # no cache travelled
    return pickle.dumps(nsopt.solve(problem, method=method, **opts))


def test_every_kind_and_method_round_trips_through_another_process():
    cases = _cases()
    here, blobs = [], []
    for kind, method in cases:
        p = PROBLEMS[kind]
        s = nsopt.solve(p, method=method, **OPTIONS)       # fills the problem's caches (SuperLU, ...)
        here.append(s)
        blobs.append(pickle.dumps((p, method, OPTIONS)))
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as ex:
        there = [pickle.loads(b) for b in ex.map(_solve_there, blobs)]
    for (kind, method), a, b in zip(cases, here, there):
        assert b.method == method and b.status == a.status, (kind, method, a, b)
        assert b.nit == a.nit and b.error == pytest.approx(a.error, rel=1e-9, abs=1e-14), (kind, method)
        assert b.problem == a.problem
        for name, v in a.variables().items():
            np.testing.assert_allclose(getattr(b, name), v, rtol=1e-9, atol=1e-12, err_msg=f"{kind}/{method}/{name}")
        rec = b.to_record()
        assert rec["method"] == method and rec["status"] == a.status.value


def test_global_problem_pickles_after_a_solve():
    """The cache (a SuperLU factorisation of M, the local problem) never travels."""
    p = g.global_friction_contact(3, 10, seed=4)[0]
    p = nsopt.GlobalFrictionContact(sp.csr_matrix(p.M), p.H, p.q, p.b, p.mu)   # sparse M: SuperLU
    s = nsopt.solve(p, method="nsgs", tol=1e-10)
    assert not p.factor_M().dense and p._store        # (nsopt.linalg.LU over SuperLU)
    q = pickle.loads(pickle.dumps(p))
    assert q == p and q._store == {}
    s2 = pickle.loads(pickle.dumps(s))
    assert s2.problem == p and s2.error == s.error
    np.testing.assert_array_equal(s2.r, s.r)
