"""The kernels that a solve calls without numba's dispatch (``nsopt._jit.entry_point``: nsgs'
``nsgs_fc_solve``, the small dense Newton's ``newton_dense``) get arguments of exactly the types of
the signature they were resolved for, whichever way the problem, its q and mu, and the warm start
were made: the entry point does not check them, so this test does.

Every call is checked against ``typeof`` of its actual arguments (numba's own typing, as its
dispatcher would do it), and the solution against a solve through the dispatcher (the same bits).
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from numba import typeof, types

import nsopt
from nsopt.solvers import _gs_kernels as GS
from nsopt.solvers import _newton_kernels as NK
from nsopt.solvers import newton, nsgs

VECTOR = types.Array(types.float64, 1, "C", readonly=True)


def _problems():
    """One small fc3d problem made every way a FrictionContact can be made."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((6, 6))
    W = A @ A.T / 6 + np.eye(6)
    q, mu = rng.standard_normal(6), np.array([0.3, 0.6])
    base = nsopt.FrictionContact(3, W, q, mu)
    ro_mu = mu.copy()
    ro_mu.setflags(write=False)
    ro_W = W.copy()
    ro_W.setflags(write=False)
    return {
        "arrays": base,
        "lists": nsopt.FrictionContact(3, W.tolist(), q.tolist(), mu.tolist()),
        "fortran int W": nsopt.FrictionContact(3, np.asfortranarray(np.rint(10 * W).astype(int)), q, mu),
        "float32 q": nsopt.FrictionContact(3, W, q.astype(np.float32), mu),
        "strided q": nsopt.FrictionContact(3, W, np.repeat(q, 2)[::2], mu),
        "scalar mu": nsopt.FrictionContact(3, W, q, 0.4),
        "replace q array": base.replace(q=q[::-1].copy()),
        "replace q strided": base.replace(q=np.repeat(q, 2)[::2]),
        "replace q list": base.replace(q=list(-q)),
        "replace mu": base.replace(mu=[0.1, 0.2]),
        "pickled": pickle.loads(pickle.dumps(base)),
        "assembled": nsopt.FrictionContact.assembled(("W", "mu"), dim=3, W=ro_W, q=q, mu=ro_mu),
    }


@pytest.fixture
def checked_calls(monkeypatch):
    """Wrap the entry points the solvers resolve: each call asserts that its arguments have the
    entry's signature; returns the list of calls checked."""
    calls = []

    def wrap(kernel, make):
        def resolve(*a):
            entry = make(*a)
            sig = next(s for s, c in kernel.overloads.items() if c.entry_point is entry)

            def call(*args):
                got = tuple(kernel.typeof_pyval(x) for x in args)
                assert got == sig, [(i, g, s) for i, (g, s) in enumerate(zip(got, sig)) if g != s]
                calls.append(kernel.__name__)
                return entry(*args)
            return call
        return resolve

    monkeypatch.setattr(nsgs, "_solve_kernel", wrap(GS.nsgs_fc_solve, nsgs._solve_kernel))
    monkeypatch.setattr(newton, "_dense_kernel", wrap(NK.newton_dense, newton._dense_kernel))
    monkeypatch.setattr(nsgs, "_KERNELS", {})
    monkeypatch.setattr(newton, "_DENSE_KERNELS", {})
    return calls


@pytest.mark.parametrize("method", ["nsgs", "nsn-ac", "nsn-fb"])
def test_entry_points_get_their_signature(method, checked_calls):
    for name, p in _problems().items():
        assert nsopt.solve(p, method) is not None
        assert typeof(p.q) == VECTOR and typeof(p.mu) == VECTOR, name
        ws = nsopt.Workspace()
        prev = nsopt.solve(p, method, workspace=ws)
        for start in (prev, prev.r, prev.r.astype(np.float32), {"r": prev.r.tolist()}, np.repeat(prev.r, 2)[::2]):
            nsopt.solve(p.replace(q=np.asarray(p.q) * 1.01), method, workspace=ws, warm_start=start, history=True)
            nsopt.solve(p, method, workspace=ws, warm_start=start, max_iter=3, time_limit=10.0,
                        callback=lambda it: None)
    kernel = "nsgs_fc_solve" if method == "nsgs" else "newton_dense"
    assert checked_calls.count(kernel) >= 12 * 11, "the entry point was not used"


@pytest.mark.parametrize("method", ["nsgs", "nsn-ac"])
def test_entry_point_gives_the_dispatchers_bits(method, monkeypatch):
    """The same solves through numba's dispatcher: the same Solutions, bit for bit."""
    probs = _problems()
    got = {k: nsopt.solve(p, method, tol=1e-12) for k, p in probs.items()}
    monkeypatch.setattr(nsgs, "_solve_kernel", lambda head, problem: GS.nsgs_fc_solve)
    monkeypatch.setattr(newton, "_dense_kernel", lambda *a: NK.newton_dense)
    for k, p in probs.items():
        p2 = pickle.loads(pickle.dumps(p))      # (a new object: nothing kept from the first solve)
        ref = nsopt.solve(p2, method, tol=1e-12)
        assert ref.status == got[k].status and ref.nit == got[k].nit, k
        np.testing.assert_array_equal(ref.r, got[k].r, err_msg=k)
        np.testing.assert_array_equal(ref.u, got[k].u, err_msg=k)
        assert ref.error == got[k].error, k
