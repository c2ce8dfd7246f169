"""The iteration contract (nsopt.monitor) and the core API the layers above stand on: common options,
warm starts, replace() with shared caches, pickling, Solution.to_record()."""

import json
import math
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt
from nsopt import generate as g
from nsopt import registry
from nsopt.exceptions import OptionError, ProblemError
from nsopt.result import Iterate, Status

# one small problem per kind (generated, with known solutions)
_RNG = np.random.default_rng(11)


def _problems():
    out = {"lcp": g.lcp(6, seed=1)[0], "mlcp": g.mlcp(2, 4, seed=2)[0], "relay": g.relay(5, seed=3)[0],
           "fc2d": g.friction_contact(3, dim=2, seed=4)[0], "fc3d": g.friction_contact(3, dim=3, seed=5)[0],
           "gfc3d": g.global_friction_contact(2, 8, seed=6)[0],
           "gfc2d": g.global_friction_contact(2, 6, dim=2, seed=7)[0],
           "equality": nsopt.Equality(g.spd_matrix(4, _RNG), _RNG.standard_normal(4))}
    M = g.spd_matrix(3, _RNG)
    out["avi"] = nsopt.AVI(M, _RNG.standard_normal(3), np.vstack([np.eye(3), -np.eye(3)]), -np.ones(6))
    W = g.spd_matrix(5, _RNG)
    out["gmp"] = nsopt.GenericMechanical(W, _RNG.standard_normal(5), [("equality", 1), ("lcp", 1), ("fc3d", 3, 0.4)])
    return out


PROBLEMS = _problems()
from nsopt import solvers  # noqa: F401  (fills the registry)

ALL = [(k, m.name) for k in sorted(PROBLEMS) for m in registry.for_kind(k)]


def _call(kind, method, **kw):
    p = PROBLEMS[kind]
    info = registry.get(kind, method)
    if info.applies is not None and info.applies(p):
        pytest.skip(f"{method} does not apply: {info.applies(p)}")
    return p, nsopt.solve(p, method=method, **kw)


IDS = [f"{k}-{m}" for k, m in ALL]


def _on_contract(kind, method):
    """Every registered method is on the contract (kept as a hook for per-method exceptions)."""


def _err(p, x):
    """The problem's error measure of a dict of variables (the others derived)."""
    return p.error_of(p.complete(dict(x)))


def _start_error(p):
    """Error of the default start (zeros; pgs projects it on its box, which holds 0 here)."""
    return _err(p, {p.primal: np.zeros(p.size)})


@pytest.mark.parametrize("kind,method", ALL, ids=IDS)
def test_contract_history_and_callback(kind, method):
    """history[0] is the error of the start, one entry per iteration after it; the callback sees
    every iteration, the solving one included, with the current iterate (whose error it is given);
    the returned iterate is the best of the history."""
    _on_contract(kind, method)
    seen = []

    def cb(it):
        assert isinstance(it, Iterate) and it.nit == len(seen) + 1
        seen.append((it.error, _err(PROBLEMS[kind], it.x)))

    p, s = _call(kind, method, tol=1e-9, history=True, callback=cb)
    assert s.history is not None and len(s.history) == s.nit + 1
    assert s.history[0] == pytest.approx(_start_error(p), rel=1e-9, abs=1e-14)
    assert len(seen) == s.nit
    for (e, e_x), h in zip(seen, s.history[1:]):
        assert e == h and e == pytest.approx(e_x, rel=1e-6, abs=1e-12)   # current iterate, its error
    if s.status is Status.SOLVED and s.nit:
        assert seen[-1][0] <= 1e-9                                     # the solving iteration
    assert s.error == pytest.approx(min(s.history), rel=1e-6, abs=1e-14)


@pytest.mark.parametrize("kind,method", ALL, ids=IDS)
def test_contract_callback_stop_and_max_iter(kind, method):
    _on_contract(kind, method)
    seen = []

    def cb(it):
        seen.append(it.error)
        if it.nit == 2:
            raise StopIteration

    _, s = _call(kind, method, tol=1e-300, callback=cb, history=True)
    if s.nit >= 2 or s.status is Status.CALLBACK_STOP:
        assert s.nit == 2 and len(seen) == 2
        assert s.status is Status.CALLBACK_STOP or (s.status is Status.SOLVED and s.error == 0.0)
    else:   # one-step methods: solved exactly (or stopped on their own) before a second iteration
        assert s.status is not Status.MAX_ITER or s.nit == 0
    _, s1 = _call(kind, method, tol=1e-300, max_iter=1, history=True)
    assert s1.nit <= 1 and len(s1.history) == s1.nit + 1
    assert s1.status in (Status.MAX_ITER, Status.SOLVED, Status.STALLED, Status.INACCURATE,
                         Status.NUMERICAL_ERROR, Status.INFEASIBLE)
    _, s0 = _call(kind, method, tol=1e-300, max_iter=0, history=True)
    assert s0.nit == 0 and s0.history[0] == pytest.approx(_start_error(PROBLEMS[kind]), rel=1e-9, abs=1e-14)


class VirtualClock:
    """``time.perf_counter`` for a test: time moves only when told (:meth:`sleep`), so a time limit
    ends a solve after a number of iterations fixed by the test, whatever the machine's load and
    numba's cache (``tests/test_time_limit.py`` runs the same with kernels loaded and compiled)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


@pytest.mark.parametrize("kind,method", ALL, ids=IDS)
def test_contract_time_limit_returns_the_best_iterate(kind, method, monkeypatch):
    """A callback that takes 20 ms (of a virtual clock) per iteration makes a 50 ms time limit run
    out after the third iteration: TIME_LIMIT with the best iterate, 3 iterations at most (a conic
    backend that gets the time left, socp-fp's, counts it on the real clock and may stop first)."""
    _on_contract(kind, method)
    import time

    clock = VirtualClock()
    monkeypatch.setattr(time, "perf_counter", clock)
    _, s = _call(kind, method, tol=1e-300, time_limit=0.05, callback=lambda it: clock.sleep(0.02),
                 history=True, max_iter=10**6)
    if s.status is not Status.SOLVED:   # an exact solve (error 0) may come first
        assert s.status in (Status.TIME_LIMIT, Status.STALLED, Status.INFEASIBLE, Status.NUMERICAL_ERROR,
                            Status.INACCURATE), s     # INACCURATE: a one-step method that finished
        assert s.error == pytest.approx(min(s.history), rel=1e-6, abs=1e-14)
    if s.status is Status.TIME_LIMIT:     # 0.02, 0.04, 0.06 > 0.05: the third iteration is the last
        assert 1 <= s.nit <= 3, s         # (fewer: a backend given the time left, on its own clock, used it)
    monkeypatch.undo()          # time_limit=0 on the real clock: the start is judged, then the time is up
    _, s0 = _call(kind, method, tol=1e-300, time_limit=0.0)
    assert s0.status in (Status.TIME_LIMIT, Status.SOLVED, Status.INFEASIBLE, Status.NUMERICAL_ERROR)
    if s0.status is Status.TIME_LIMIT:
        assert s0.nit == 0, s0


@pytest.mark.parametrize("kind,method", ALL, ids=IDS)
def test_contract_warm_start_means_start_here(kind, method):
    """Every method started from a solution stops at once (nit 0) with it; a Solution, a dict of
    variables and an array of the primal variable are the same warm start."""
    _on_contract(kind, method)
    p, s = _call(kind, method, tol=1e-9)
    if not s.success:
        pytest.skip(f"{method} does not solve this {kind} case: {s.status}")
    for ws in (s, s.variables(), getattr(s, p.primal)):
        _, w = _call(kind, method, tol=max(s.error, 1e-300) * 1.0001 + 1e-15, warm_start=ws, history=True)
        assert w.nit == 0 and w.status is Status.SOLVED and w.history[0] == pytest.approx(w.error)


def _same_solution(a, b):
    """Two Solutions are the same up to their timings (and what a backend reports of its own work)."""
    for f in ("status", "error", "tol", "nit", "message", "method", "history"):
        x, y = getattr(a, f), getattr(b, f)
        assert x == y or (f == "error" and math.isnan(x) and math.isnan(y)), (f, x, y)
    for v in ("z", "w", "r", "u", "v", "p"):
        x, y = getattr(a, v), getattr(b, v)
        assert (x is None) == (y is None), v
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=v)


_BACKEND_TIMES = ("socp-fp", "socp-tresca", "qp")   # their info carries timings of the backend


@pytest.mark.parametrize("kind,method", ALL, ids=IDS)
def test_contract_resolve_is_the_fresh_solve(kind, method):
    """A re-solve (``replace(q=...)``, one Workspace kept across the solves, the previous Solution as
    warm start) gives the very Solution of a fresh solve without a workspace, for every registered
    method: there is one path (no re-solve plan beside it), and what the workspace keeps changes
    nothing but the time."""
    _on_contract(kind, method)
    p = PROBLEMS[kind]
    info = registry.get(kind, method)
    if info.applies is not None and info.applies(p):
        pytest.skip(f"{method} does not apply: {info.applies(p)}")
    ws = nsopt.Workspace()
    prev_ws = prev = nsopt.solve(p, method=method, tol=1e-9, workspace=ws)
    _same_solution(prev_ws, nsopt.solve(p, method=method, tol=1e-9))
    rng = np.random.default_rng(3)
    for k in range(3):
        pk = p.replace(q=np.asarray(p.q) * (1.0 + 0.05 * rng.standard_normal(p.q.shape[0])))
        fresh = nsopt.solve(pk, method=method, tol=1e-9, warm_start=prev)
        again = nsopt.solve(pk, method=method, tol=1e-9, warm_start=prev_ws, workspace=ws)
        _same_solution(again, fresh)
        if method not in _BACKEND_TIMES:
            assert again.info.keys() == fresh.info.keys()
        prev, prev_ws = fresh, again


# ---------------------------------------------------------------------------------- common options
@pytest.mark.parametrize("bad", [dict(tol=float("inf")), dict(tol=True), dict(tol=-1.0), dict(tol="x"),
                                 dict(max_iter=True), dict(max_iter=-1), dict(max_iter=2.5),
                                 dict(time_limit="abc"), dict(time_limit=-1.0), dict(time_limit=True)])
def test_bad_common_options(bad):
    with pytest.raises(OptionError):
        nsopt.solve(PROBLEMS["lcp"], method="pgs", **bad)


def test_numpy_scalars_are_valid_options():
    s = nsopt.solve(PROBLEMS["lcp"], method="pgs", tol=np.float32(1e-6), max_iter=np.int64(500),
                    time_limit=np.float64(10.0))
    assert s.success


def test_warm_start_from_a_solution_an_array_or_a_dict():
    p, known = g.lcp(10, seed=6)
    s = nsopt.solve(p, method="pgs", tol=1e-12)
    assert nsopt.solve(p, method="pgs", tol=1e-10, warm_start=s).nit == 0
    assert nsopt.solve(p, method="pgs", warm_start=known["z"]).nit == 0
    assert nsopt.solve(p, method="pgs", warm_start={"z": known["z"]}).nit == 0
    assert nsopt.solve(p, method="pgs", z0=known["z"]).nit == 0      # the 0.1 alias
    with pytest.raises(OptionError, match="warm_start"):
        nsopt.solve(p, method="pgs", warm_start=np.ones(3))
    with pytest.raises(OptionError, match="warm_start"):
        nsopt.solve(p, method="pgs", warm_start={"r": np.ones(10)})


def test_empty_problem_every_method():
    p = nsopt.LCP(np.zeros((0, 0)), np.zeros(0))
    for m in nsopt.methods(p):
        s = nsopt.solve(p, method=m)
        assert s.success and s.z.shape == (0,)


# ---------------------------------------------------------------------------------- replace, caches
def test_replace_validates_only_what_changed_and_shares_caches():
    p = g.friction_contact(4, dim=3, seed=2)[0]
    made = []
    v1 = p.cached("probe", lambda: made.append(1) or "W-structure", on=("W",))
    p2 = p.replace(q=np.asarray(p.q) + 1.0)
    assert p2.W is p.W and p2.mu is p.mu and not np.array_equal(p2.q, p.q)
    assert p2.cached("probe", lambda: made.append(2) or "rebuilt", on=("W",)) == v1 and made == [1]
    assert p2.cached("per-problem", lambda: "x") == "x"         # on=None: every field, q included
    p3 = p.replace(mu=0.1)
    assert p3.cached("probe", lambda: "again", on=("W",)) == v1   # mu did not touch W's entry
    with pytest.raises(ProblemError, match="q"):
        p.replace(q=np.ones(5))
    with pytest.raises(ProblemError, match="not a field"):
        p.replace(Q=np.ones(12))
    lcp = PROBLEMS["lcp"].replace(q=np.arange(6.0))
    assert isinstance(lcp, nsopt.LCP) and lcp.q[3] == 3.0 and not lcp.q.flags.writeable
    m = PROBLEMS["mlcp"].replace(q=np.ones(6))
    assert m.n == PROBLEMS["mlcp"].n and np.all(m.q == 1.0)


def test_replace_then_solve_reuses_the_split():
    p = g.lcp(8, seed=3)[0]
    nsopt.solve(p, method="pgs")
    key = p._store["gs_csr_box"][1]
    p2 = p.replace(q=-np.ones(8))
    s = nsopt.solve(p2, method="pgs")
    assert s.success and p2._store["gs_csr_box"][1] is key


# ---------------------------------------------------------------------------------- pickling, records
@pytest.mark.parametrize("kind", sorted(PROBLEMS))
def test_problems_pickle_without_their_caches(kind):
    p = PROBLEMS[kind]
    s = nsopt.solve(p)
    q = pickle.loads(pickle.dumps(p))
    assert q == p and q._store == {} and q is not p
    s2 = pickle.loads(pickle.dumps(s))
    assert s2.status == s.status and s2.error == s.error
    for name, v in s.variables().items():
        assert np.array_equal(getattr(s2, name), v)


def test_to_record_is_flat_and_plain():
    s = nsopt.solve(PROBLEMS["fc3d"], method="nsgs", tol=1e-9, omega=1.0)
    rec = s.to_record()
    assert rec["kind"] == "fc3d" and rec["method"] == "nsgs" and rec["status"] == "solved"
    assert rec["nc"] == 3 and rec["size"] == 9 and json.loads(rec["options"]) == {"omega": 1.0}
    for v in rec.values():
        assert v is None or isinstance(v, (str, int, float, bool))


def test_sparse_problem_replace_keeps_sparse():
    p = nsopt.LCP(sp.csr_matrix(g.spd_matrix(5, _RNG)), np.ones(5))
    p2 = p.replace(q=-np.ones(5))
    assert sp.issparse(p2.M) and p2.M is p.M


# ---------------------------------------------------------------------------------- workspace
@pytest.mark.parametrize("method", ["nsgs", "nsn-ac", "nsn-fb", "prox"])
def test_workspace_keeps_what_the_method_built(method):
    """A re-solve with replace(q=...), a workspace and a warm start reuses the built objects (the
    same ones) and gives the numbers of a solve without the workspace."""
    p0 = g.friction_contact(12, dim=3, seed=9)[0]
    p = nsopt.FrictionContact(3, sp.csr_matrix(p0.W), p0.q, p0.mu)      # sparse W: the Newton pattern
    ws = nsopt.Workspace()
    s1 = nsopt.solve(p, method=method, workspace=ws, tol=1e-10)
    built = {k: v[1] for k, v in ws._store.items()}
    assert built and s1.success
    for k in range(3):
        p2 = p.replace(q=np.asarray(p.q) * (1.0 + 0.01 * (k + 1)))
        s2 = nsopt.solve(p2, method=method, workspace=ws, tol=1e-10, warm_start=s1)
        assert {k2: v[1] for k2, v in ws._store.items()} == built and all(
            ws._store[k2][1] is v for k2, v in built.items())
        ref = nsopt.solve(p2, method=method, tol=1e-10, warm_start=s1)
        assert s2.success and s2.nit == ref.nit and s2.status == ref.status
        np.testing.assert_allclose(s2.r, ref.r, rtol=1e-12, atol=1e-14)
        s1 = s2
    if method != "nsgs":
        assert p2._store["newton_pattern"][1] is p._store["newton_pattern"][1]   # keyed on W
    with pytest.raises(OptionError, match="workspace"):
        nsopt.solve(p, method=method, workspace={})


def test_replace_q_shares_w_and_checks_q():
    p = g.friction_contact(4, dim=3, seed=2)[0]
    p2 = p.replace(q=np.ones(12))
    assert p2.W is p.W and p2.mu is p.mu and p2._store is p._store and not p2.q.flags.writeable
    with pytest.raises(ProblemError, match="q"):
        p.replace(q=np.ones(11))
    with pytest.raises(ProblemError, match="q"):
        p.replace(q=np.full(12, np.nan))
