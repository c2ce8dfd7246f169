"""Re-solving cheaply: ``nsopt.solve(..., workspace=ws)`` runs the one path of every solve (there is
no re-solve plan beside it: issue 19 §1) and keeps what the method built (nsgs' sweeper, the Newton
systems, ...), and gives exactly the Solution of a solve without a workspace (status, error,
iterations, vectors, message, info), converged or not; the error it carries is the problem's error
measure of the vectors it returns; every check still runs."""

import importlib
import math

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt
from nsopt import generate as g
from nsopt.exceptions import OptionError, ProblemError
from nsopt.problems.cones import fc_error
from nsopt.problems.lcp import lcp_error
from nsopt.result import Status
from nsopt.solvers import _gs_kernels as K
from nsopt.linalg import refined_solve
from nsopt.solvers._gs_kernels import lu_refined as _lu_refined

solve_mod = importlib.import_module("nsopt.solve")
FIELDS = ("status", "error", "tol", "nit", "message", "info", "options", "method", "history")


def _equal(x, y):
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(_equal(x[k], y[k]) for k in x)
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return np.array_equal(x, y)
    return x == y


def _same(a, b):
    """Two Solutions are the same up to their timings."""
    for f in FIELDS:
        assert _equal(getattr(a, f), getattr(b, f)) or (f == "error" and math.isnan(a.error) and math.isnan(b.error)), \
            (f, getattr(a, f), getattr(b, f))
    assert a.problem is b.problem
    for v in ("z", "w", "r", "u", "v"):
        x, y = getattr(a, v), getattr(b, v)
        assert (x is None) == (y is None), v
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=v)


@pytest.fixture
def no_full_path(monkeypatch):
    """Count the solves that take the one path (``nsopt.solve``'s body: one Monitor, the method)
    while armed: a re-solve with a workspace must take it like any other solve (there is no plan
    beside it)."""
    state = {"armed": False, "calls": 0}
    real = solve_mod.Monitor

    class Counted(real):
        def __init__(self, *a, **k):
            if state["armed"]:
                state["calls"] += 1
            super().__init__(*a, **k)

    monkeypatch.setattr(solve_mod, "Monitor", Counted)
    return state


def _one_path(state, n_before):
    """The armed solve since ``n_before`` took the one path."""
    assert state["calls"] == n_before + 1, "a solve did not take the one path (its Monitor)"


def _kept(ws):
    """The workspace holds what the method built (what a re-solve reuses)."""
    assert ws._store, "the workspace kept nothing"


def _fc_cases():
    out = []
    for seed in range(12):
        dim = 3 if seed % 3 else 2
        nc = [1, 1, 2, 3, 5, 8][seed % 6]
        p, _ = g.friction_contact(nc, dim=dim, seed=seed, mu=[0.1, 0.3, 0.8][seed % 3])
        out.append(p)
    rng = np.random.default_rng(5)
    for seed in range(4):   # W not positive definite: NSGS may wander, the best iterate is not the last
        n = 3 * (seed + 2)
        A = rng.standard_normal((n, n))
        W = A @ A.T / n + np.eye(n) * 0.05 + (A - A.T) * 0.4
        out.append(nsopt.FrictionContact(3, W, rng.standard_normal(n), rng.uniform(0.1, 1.0, n // 3)))
    return out


def _qs(p, k, seed, drift=0.05):
    rng = np.random.default_rng(seed)
    q0 = np.asarray(p.q)
    return [q0 * (1.0 + drift * rng.standard_normal(q0.shape[0])) for _ in range(k)]


@pytest.mark.parametrize("kw", [{"tol": 1e-8}, {"tol": 1e-12, "max_iter": 3}, {"tol": 1e-300, "max_iter": 7},
                                {"tol": 1e-10, "omega": 1.3, "resync": 0}, {"tol": 1e-9, "local_max_iter": 2}],
                         ids=["default", "max_iter3", "never", "omega", "local"])
def test_nsgs_resolve_gives_the_fresh_solution(kw, no_full_path):
    """Many problems and right-hand sides, warm started from the previous solution: the re-solve's
    Solution is the fresh solve's, bit for bit, also without convergence (MAX_ITER, best iterate)."""
    best_not_last = 0
    for i, p in enumerate(_fc_cases()):
        ws = nsopt.Workspace()
        no_full_path["armed"] = False
        prev_fast = prev_full = nsopt.solve(p, "nsgs", workspace=ws, **kw)
        _kept(ws)
        for j, q in enumerate(_qs(p, 6, i)):
            pk = p.replace(q=q)
            warm = prev_full.r if j % 2 else prev_full      # an array or a Solution
            warm_fast = prev_fast.r if j % 2 else prev_fast
            no_full_path["armed"] = False
            full = nsopt.solve(pk, "nsgs", warm_start=warm, **kw)
            no_full_path["armed"] = True
            n0 = no_full_path["calls"]
            fast = nsopt.solve(pk, "nsgs", workspace=ws, warm_start=warm_fast, **kw)
            _one_path(no_full_path, n0)
            _same(fast, full)
            prev_fast, prev_full = fast, full
        no_full_path["armed"] = False
        # the best iterate that is not the last one: its u and error are recomputed, as the full path does
        h = nsopt.solve(p, "nsgs", history=True, **kw)
        best_not_last += min(h.history) < h.history[-1]
    if kw.get("tol") == 1e-300:
        assert best_not_last >= 1, "no case where the best iterate is not the last"


def test_nsgs_resolve_follows_a_new_W(no_full_path):
    """One workspace for a simulation whose W changes: the solve rebuilds what depends on W (in
    the workspace) and still gives the Solution of a solve without one."""
    ws = nsopt.Workspace()
    p0, _ = g.friction_contact(4, seed=1)
    nsopt.solve(p0, "nsgs", workspace=ws)
    no_full_path["armed"] = True
    for seed in range(2, 6):
        p, _ = g.friction_contact(4, seed=seed)
        n0 = no_full_path["calls"]
        fast = nsopt.solve(p, "nsgs", workspace=ws)
        _one_path(no_full_path, n0)
        assert ws._store["nsgs_sweeper"][0][0] is p.W      # rebuilt for the new W
        no_full_path["armed"] = False
        _same(fast, nsopt.solve(p, "nsgs"))
        no_full_path["armed"] = True


@pytest.mark.parametrize("method,storage", [("nsgs", "dense"), ("nsgs", "csr"), ("nsn-ac", "dense")])
@pytest.mark.parametrize("dim", [2, 3])
def test_in_kernel_error_is_the_problem_error(dim, method, storage):
    """The error an nsgs / nsn-ac Solution carries (solve() does not recompute it) is the compiled
    twin of cones.fc_error on the (r, u) it returns, u computed inside the kernel as problem.u
    computes it (the ordered products of problems/_products: dense, and CSR as the modeling layer
    assembles W): on many random problems u is problem.u(r) exactly and the error is
    problem.error(r) to the twin's rounding (rel 1e-12), often exactly."""
    ws = nsopt.Workspace()
    exact = total = 0
    for seed in range(60):
        p, _ = g.friction_contact(1 + seed % 7, dim=dim, seed=100 + seed, mu=0.05 + 0.1 * (seed % 9))
        if storage == "csr":
            p = nsopt.FrictionContact(dim, sp.csr_matrix(p.W), p.q, p.mu)
        for q in _qs(p, 3, seed, drift=0.3):
            pk = p.replace(q=q)
            s = nsopt.solve(pk, method, tol=[1e-300, 1e-8][seed % 2], max_iter=1 + seed % 4, workspace=ws)
            if s.u is None:
                continue
            np.testing.assert_allclose(s.u, pk.u(s.r), rtol=1e-13, atol=1e-15 * np.abs(q).max())
            home = fc_error(s.r, s.u, pk.mu, dim, pk.qnorm)
            assert s.error == pytest.approx(home, rel=1e-13, abs=1e-300)
            assert s.error == pytest.approx(pk.error(s.r), rel=1e-12, abs=1e-300)
            np.testing.assert_array_equal(s.u, pk.u(s.r))      # u as problem.u computes it
            exact += s.error == pk.error(s.r)
            total += 1
    assert total > 100 and exact > 0


@pytest.mark.parametrize("storage", ["dense", "csr"])
def test_nsgs_resolve_on_a_large_w(storage):
    """Above the ordered products' size (ORDERED_ROWS rows, dense: u by BLAS, left to Python) and
    on a large CSR W (u inside the kernel): the re-solve's Solution is the fresh solve's, and u is
    problem.u(r)."""
    p, _ = g.friction_contact(25, dim=3, seed=3)                 # 75 rows
    if storage == "csr":
        p = nsopt.FrictionContact(3, sp.csr_matrix(p.W), p.q, p.mu)
    ws = nsopt.Workspace()
    prev = nsopt.solve(p, "nsgs", workspace=ws)
    for q in _qs(p, 4, 7, drift=0.05):
        pk = p.replace(q=q)
        fast = nsopt.solve(pk, "nsgs", workspace=ws, warm_start=prev)
        _same(fast, nsopt.solve(pk, "nsgs", warm_start=prev))
        np.testing.assert_array_equal(fast.u, pk.u(fast.r))
        prev = fast


def test_lcp_error_twin():
    """The compiled LCP error (lemke's compiled start) gives the NumPy home's numbers."""
    rng = np.random.default_rng(0)
    for _ in range(500):
        n = int(rng.integers(1, 12))
        z = rng.standard_normal(n) * rng.uniform(1e-3, 1e3)
        w = rng.standard_normal(n) * rng.uniform(1e-3, 1e3)
        z[rng.random(n) < 0.3] = 0.0
        qn = float(rng.uniform(0, 10)) if rng.random() < 0.9 else 0.0
        assert K.lcp_error(z, w, qn) == pytest.approx(lcp_error(z, w, qn), rel=1e-14, abs=1e-300)
    assert math.isnan(K.lcp_error(np.array([np.nan]), np.array([1.0]), 1.0))


def test_lu_refined_matches_refined_solve():
    rng = np.random.default_rng(1)
    for _ in range(200):
        m = int(rng.integers(1, 9))
        A = g.p_matrix(m, rng) * rng.uniform(1e-3, 1e3)
        b = rng.standard_normal(m)
        x = np.empty(m)
        assert _lu_refined(A, b, x, 3)
        np.testing.assert_allclose(x, refined_solve(A, b), rtol=1e-13, atol=1e-300)
    assert not _lu_refined(np.zeros((2, 2)), np.ones(2), np.empty(2), 3)   # singular: the Python path


def _lcp_sequence(n, seed, k=12):
    """A time-stepping-like sequence of right-hand sides: free (q >= 0), contact, impact, lift-off."""
    rng = np.random.default_rng(seed)
    M = g.spd_matrix(n, rng) if n > 1 else np.array([[rng.uniform(0.5, 3.0)]])
    base = rng.standard_normal(n)
    qs = []
    for j in range(k):
        phase = math.sin(0.7 * j + seed)
        qs.append(base * 0.1 + phase + 0.02 * rng.standard_normal(n))
    return nsopt.LCP(M, qs[0]), qs


@pytest.mark.parametrize("n", [1, 2, 3, 6, 16])
def test_lemke_resolve_gives_the_fresh_solution(n):
    """Small dense LCPs, warm started from the previous z as a time-stepping loop does (array, or
    None when it was 0): the re-solve's Solution is the fresh solve's, whether iteration 0 concludes
    (the start, the warm start or its support solves it) or Lemke's pivots run."""
    taken = 0
    for seed in range(8):
        p, qs = _lcp_sequence(n, seed)
        ws = nsopt.Workspace()
        prev = nsopt.solve(p, "lemke", workspace=ws)
        for q in qs:
            pk = p.replace(q=q)
            warm = prev.z if np.any(prev.z) else None
            fast = nsopt.solve(pk, "lemke", workspace=ws, warm_start=warm)
            taken += fast.nit == 0 and warm is not None
            full = nsopt.solve(pk, "lemke", warm_start=warm)
            _same(fast, full)
            assert fast.success
            prev = fast
    assert taken >= 8


@pytest.mark.parametrize("n", [1, 2, 5, 16])
def test_lemke_resolve_runs_the_path_when_the_start_fails(n, no_full_path):
    """Cold starts (no warm start) on P-matrix LCPs with q of mixed signs: iteration 0 fails, and
    the re-solve runs Lemke's path (the one path) with the fresh solve's Solution (pivots,
    message, bits); so does a re-solve with a covering vector."""
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n))
    M = A @ A.T + np.eye(n)
    p = nsopt.LCP(M, -np.ones(n))
    ws = nsopt.Workspace()
    nsopt.solve(p, "lemke", workspace=ws)
    pivots = 0
    for k in range(20):
        q = rng.standard_normal(n)
        q[k % n] = -abs(q[k % n]) - 0.1        # the start z = 0 is not a solution
        pk = p.replace(q=q)
        no_full_path["armed"] = True
        n0 = no_full_path["calls"]
        fast = nsopt.solve(pk, "lemke", workspace=ws)
        _one_path(no_full_path, n0)
        no_full_path["armed"] = False
        full = nsopt.solve(pk, "lemke")
        _same(fast, full)
        assert fast.success and fast.nit == fast.info["pivots"] >= 1
        pivots += fast.nit
    assert pivots >= 20
    ws2 = nsopt.Workspace()
    nsopt.solve(p, "lemke", workspace=ws2, cover=np.full(n, 2.0))
    no_full_path["armed"] = True
    n0 = no_full_path["calls"]
    pn = p.replace(q=-np.ones(n))
    fast = nsopt.solve(pn, "lemke", workspace=ws2, cover=np.full(n, 2.0))
    _one_path(no_full_path, n0)
    _same(fast, nsopt.solve(pn, "lemke", cover=np.full(n, 2.0)))


def test_lemke_resolve_with_solution_warm_start_and_max_iter(no_full_path):
    p = nsopt.LCP(np.array([[2.0]]), np.array([-1.0]))
    ws = nsopt.Workspace()
    s = nsopt.solve(p, "lemke", workspace=ws, max_iter=0)
    assert s.status is Status.MAX_ITER
    prev = nsopt.solve(p, "lemke")
    no_full_path["armed"] = True
    p2 = p.replace(q=np.array([-1.5]))
    fast = nsopt.solve(p2, "lemke", workspace=ws, max_iter=0, warm_start=prev)
    assert fast.status is Status.SOLVED and fast.z[0] == 0.75 and fast.nit == 0
    # q >= 0 from a bad start with no budget: the budget ends the solve at the start
    p3 = p.replace(q=np.array([1.0]))
    bad = nsopt.solve(p3, "lemke", workspace=ws, max_iter=0, warm_start=np.array([3.0]))
    assert bad.status is Status.MAX_ITER and bad.nit == 0
    assert no_full_path["calls"] == 2
    _same(bad, nsopt.solve(p3, "lemke", max_iter=0, warm_start=np.array([3.0])))


def test_resolve_keeps_the_contract(no_full_path):
    """history, callback and time_limit with a workspace: the contract's results, as without one."""
    p, _ = g.friction_contact(3, seed=2)
    ws = nsopt.Workspace()
    nsopt.solve(p, "nsgs", workspace=ws)
    no_full_path["armed"] = True
    seen = []
    for kw in ({"history": True}, {"callback": lambda it: seen.append(it.nit)}, {"time_limit": 10.0}):
        n0 = no_full_path["calls"]
        a = nsopt.solve(p, "nsgs", workspace=ws, **kw)
        _one_path(no_full_path, n0)
        _same(a, nsopt.solve(p, "nsgs", **kw))
    assert seen and seen[:a.nit] == list(range(1, a.nit + 1))
    no_full_path["armed"] = False
    s = nsopt.solve(p, "nsgs", workspace=ws, history=True)
    assert s.history is not None and len(s.history) == s.nit + 1


def test_a_resolve_checks_everything():
    p, _ = g.friction_contact(2, seed=3)
    ws = nsopt.Workspace()
    nsopt.solve(p, "nsgs", workspace=ws)
    with pytest.raises(OptionError):
        nsopt.solve(p, "nsgs", workspace=ws, warm_start=np.full(6, np.nan))   # the kernel refuses, full path says why
    with pytest.raises(OptionError):
        nsopt.solve(p, "nsgs", workspace=ws, warm_start=np.zeros(5))
    with pytest.raises(OptionError):
        nsopt.solve(p, "nsgs", workspace=ws, bogus=1)
    nsopt.solve(p, "nsgs", workspace=ws, local_max_iter=3)
    with pytest.raises(OptionError):   # True is not 3 nor 1: checked (options are remembered by value and type)
        nsopt.solve(p, "nsgs", workspace=ws, local_max_iter=True)
    with pytest.raises(OptionError):
        nsopt.solve(p, "nsgs", workspace=ws, tol=True)
    with pytest.raises(OptionError):
        nsopt.solve(p, "nsgs", workspace=object())
    lcp = nsopt.LCP(np.eye(2), np.ones(2))
    ws2 = nsopt.Workspace()
    nsopt.solve(lcp, "lemke", workspace=ws2)
    with pytest.raises(OptionError):
        nsopt.solve(lcp, "lemke", workspace=ws2, warm_start=np.array([np.inf, 0.0]))


@pytest.mark.parametrize("bad", [np.array([1.0, np.nan, 0.0]), np.array([1.0, 2.0]), np.zeros((3, 1)) + np.inf,
                                 [1.0, 2.0, np.inf], np.array([1, 2, 3, 4])])
def test_replace_still_validates_q(bad):
    p, _ = g.friction_contact(1, seed=0)
    with pytest.raises(ProblemError):
        p.replace(q=bad)
    lcp = nsopt.LCP(np.eye(3), np.ones(3))
    with pytest.raises(ProblemError):
        lcp.replace(q=bad)


def test_replace_copies_and_shares():
    lcp = nsopt.LCP(np.eye(3), np.ones(3))
    q = np.array([1.0, -2.0, 3.0])
    p2 = lcp.replace(q=q)
    q[0] = 99.0
    assert p2.q[0] == 1.0 and not p2.q.flags.writeable and p2.M is lcp.M
    assert lcp.replace(q=[1, 2, 3]).q.dtype == np.float64


_DIRECT = [("fc3d", "nsn-ac", {}), ("fc3d", "nsn-fb", {}), ("fc2d", "nsn-ac", {"rho": 1.0}), ("fc3d", "prox", {}),
           ("lcp", "pgs", {}), ("lcp", "newton-fb", {}), ("lcp", "lemke", {}), ("relay", "lemke", {}),
           ("fc3d", "nsgs", {"shuffle": True, "seed": 3})]


@pytest.mark.parametrize("kind,method,opts", _DIRECT, ids=[f"{k}-{m}" for k, m, _ in _DIRECT])
def test_resolve_gives_the_fresh_solution(kind, method, opts, no_full_path):
    """Other methods (and lemke on an LCP above SMALL_LCP), re-solved with a workspace: the same
    Solution as a fresh solve, by the one path."""
    for seed in range(3):
        if kind in ("fc2d", "fc3d"):
            p, _ = g.friction_contact(2 + seed, dim=int(kind[2]), seed=seed)
        elif kind == "lcp":
            p, _ = g.lcp(20 if method == "lemke" else 6, seed=seed)
        else:
            p, _ = g.relay(5, seed=seed)
        ws = nsopt.Workspace()
        no_full_path["armed"] = False
        no_full_path["armed"] = True
        n0 = no_full_path["calls"]
        prev = nsopt.solve(p, method, tol=1e-9, workspace=ws, **opts)
        _one_path(no_full_path, n0)
        for j, q in enumerate(_qs(p, 3, seed)):
            pk = p.replace(q=q)
            warm = getattr(prev, p.primal) if j % 2 else prev
            no_full_path["armed"] = False
            full = nsopt.solve(pk, method, tol=1e-9, warm_start=warm, **opts)
            no_full_path["armed"] = True
            n0 = no_full_path["calls"]
            fast = nsopt.solve(pk, method, tol=1e-9, workspace=ws, warm_start=warm, **opts)
            _one_path(no_full_path, n0)
            _same(fast, full)
            prev = fast
    no_full_path["armed"] = True
    other = g.lcp(4, seed=9)[0] if kind == "lcp" else g.relay(4, seed=9)[0] if kind == "relay" else \
        g.friction_contact(2, dim=int(kind[2]), seed=9)[0]
    no_full_path["armed"] = False        # another matrix: what depends on it is rebuilt, the same Solution
    _same(nsopt.solve(other, method, tol=1e-9, workspace=ws, **opts), nsopt.solve(other, method, tol=1e-9, **opts))


@pytest.mark.parametrize("method", ["nsn-ac", "nsn-fb"])
@pytest.mark.parametrize("kw", [{"tol": 1e-10}, {"tol": 1e-300, "max_iter": 4}, {"tol": 1e-12, "reg": 0.0},
                                {"tol": 1e-12, "line_search": "armijo", "hybrid": False}],
                         ids=["default", "max_iter", "noreg", "armijo"])
def test_newton_dense_resolve_gives_the_fresh_solution(method, kw, no_full_path):
    """nsn-ac / nsn-fb on small dense systems: the compiled loop runs in one call; the re-solve's
    Solution is the fresh solve's, also at MAX_ITER with the best iterate."""
    if method == "nsn-fb" and "reg" in kw:
        kw = {**kw, "reg": 0.5}
    for i, p in enumerate(_fc_cases()):
        ws = nsopt.Workspace()
        no_full_path["armed"] = False
        prev_fast = prev_full = nsopt.solve(p, method, workspace=ws, **kw)
        for j, q in enumerate(_qs(p, 4, i)):
            pk = p.replace(q=q)
            warm_full = prev_full.r if j % 2 else prev_full
            warm_fast = prev_fast.r if j % 2 else prev_fast
            no_full_path["armed"] = False
            full = nsopt.solve(pk, method, warm_start=warm_full, **kw)
            _kept(ws)
            no_full_path["armed"] = True
            n0 = no_full_path["calls"]
            fast = nsopt.solve(pk, method, workspace=ws, warm_start=warm_fast, **kw)
            _one_path(no_full_path, n0)
            _same(fast, full)
            prev_fast, prev_full = fast, full


def test_message_is_made_when_read_and_travels():
    """The monitor hands its message over unformatted; reading, comparing, pickling and to_record
    see its text, with a workspace or without."""
    import pickle

    p, _ = g.friction_contact(2, seed=3)
    ws = nsopt.Workspace()
    first = nsopt.solve(p, "nsgs", workspace=ws)
    pk = p.replace(q=np.asarray(p.q) * 1.01)
    fast = nsopt.solve(pk, "nsgs", workspace=ws, warm_start=first)
    full = nsopt.solve(pk, "nsgs", warm_start=first)
    assert fast.success and type(fast.__dict__["message"]) is tuple
    back = pickle.loads(pickle.dumps(fast))
    assert back.message == fast.message == full.message and isinstance(fast.message, str)
    assert fast.to_record()["message"] == full.message
    fast.message = "edited"
    assert fast.message == "edited"


def test_warm_start_from_an_edited_solution():
    """A previous Solution is taken as it is; one whose r was replaced by a vector of the wrong size
    is refused by the warm-start check (an OptionError, no read past the array)."""
    p, _ = g.friction_contact(3, seed=4)
    ws = nsopt.Workspace()
    prev = nsopt.solve(p, "nsgs", workspace=ws)
    prev = nsopt.solve(p.replace(q=np.asarray(p.q) * 1.02), "nsgs", workspace=ws, warm_start=prev)
    prev.r = np.zeros(2)
    with pytest.raises(OptionError):
        nsopt.solve(p.replace(q=np.asarray(p.q) * 1.03), "nsgs", workspace=ws, warm_start=prev)
