"""Re-solving cheaply: the re-solve plans that ``nsopt.solve(..., workspace=ws)`` keeps (nsgs on
fc2d/fc3d, lemke on a small LCP) give exactly the Solution of the full path (status, error,
iterations, vectors, message, info), converged or not; the error they carry is the problem's error
measure of the vectors they return; what the plans skip is still checked where it must be."""

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
from nsopt.solvers.lemke import _lu_refined, refined_solve

solve_mod = importlib.import_module("nsopt.solve")
FIELDS = ("status", "error", "tol", "nit", "message", "info", "options", "method", "history")


def _same(a, b):
    """Two Solutions are the same up to their timings."""
    for f in FIELDS:
        assert getattr(a, f) == getattr(b, f) or (f == "error" and math.isnan(a.error) and math.isnan(b.error)), \
            (f, getattr(a, f), getattr(b, f))
    assert a.problem is b.problem
    for v in ("z", "w", "r", "u", "v"):
        x, y = getattr(a, v), getattr(b, v)
        assert (x is None) == (y is None), v
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=v)


@pytest.fixture
def no_full_path(monkeypatch):
    """Make the full path fail loudly after it has been armed: proves a call took the plan."""
    state = {"armed": False}
    real = solve_mod.run_method

    def guarded(*a, **k):
        if state["armed"]:
            raise AssertionError("the full path ran")
        return real(*a, **k)

    monkeypatch.setattr(solve_mod, "run_method", guarded)
    return state


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
def test_nsgs_plan_gives_the_full_path_solution(kw, no_full_path):
    """Many problems and right-hand sides, warm started from the previous solution: the plan's
    Solution is the full path's, bit for bit, also without convergence (MAX_ITER, best iterate)."""
    best_not_last = 0
    for i, p in enumerate(_fc_cases()):
        ws = nsopt.Workspace()
        no_full_path["armed"] = False
        prev_fast = prev_full = nsopt.solve(p, "nsgs", workspace=ws, **kw)
        assert ws._plans, "no plan was made"
        for j, q in enumerate(_qs(p, 6, i)):
            pk = p.replace(q=q)
            warm = prev_full.r if j % 2 else prev_full      # an array or a Solution
            warm_fast = prev_fast.r if j % 2 else prev_fast
            no_full_path["armed"] = False
            full = nsopt.solve(pk, "nsgs", warm_start=warm, **kw)
            no_full_path["armed"] = True
            fast = nsopt.solve(pk, "nsgs", workspace=ws, warm_start=warm_fast, **kw)
            _same(fast, full)
            prev_fast, prev_full = fast, full
        no_full_path["armed"] = False
        # the best iterate that is not the last one: its u and error are recomputed, as the full path does
        h = nsopt.solve(p, "nsgs", history=True, **kw)
        best_not_last += min(h.history) < h.history[-1]
    if kw.get("tol") == 1e-300:
        assert best_not_last >= 1, "no case where the best iterate is not the last"


def test_nsgs_plan_follows_a_new_W(no_full_path):
    """One workspace for a simulation whose W changes: the plan rebuilds what depends on W (from
    the workspace, as the full path does) and still gives the full path's Solution."""
    ws = nsopt.Workspace()
    p0, _ = g.friction_contact(4, seed=1)
    nsopt.solve(p0, "nsgs", workspace=ws)
    no_full_path["armed"] = True
    for seed in range(2, 6):
        p, _ = g.friction_contact(4, seed=seed)
        fast = nsopt.solve(p, "nsgs", workspace=ws)
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
def test_nsgs_plan_on_a_large_w(storage):
    """Above the ordered products' size (ORDERED_ROWS rows, dense: u by BLAS, left to Python) and
    on a large CSR W (u inside the kernel): the plan's Solution is the full path's, and u is
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
def test_lemke_plan_gives_the_full_path_solution(n):
    """Small dense LCPs, warm started from the previous z as a time-stepping loop does (array, or
    None when it was 0): the plan's Solution is the full path's, whether the plan concludes (the
    start, the warm start or its support solves it; q >= 0) or hands over to Lemke's pivots."""
    taken = 0
    for seed in range(8):
        p, qs = _lcp_sequence(n, seed)
        ws = nsopt.Workspace()
        prev = nsopt.solve(p, "lemke", workspace=ws)
        for q in qs:
            pk = p.replace(q=q)
            warm = prev.z if np.any(prev.z) else None
            plan = ws._plans[("lemke", 1e-8, None)]
            taken += plan(pk, warm, {}) is not None
            fast = nsopt.solve(pk, "lemke", workspace=ws, warm_start=warm)
            full = nsopt.solve(pk, "lemke", warm_start=warm)
            _same(fast, full)
            assert fast.success
            prev = fast
    assert taken >= 8


@pytest.mark.parametrize("n", [1, 2, 5, 16])
def test_lemke_plan_runs_the_path_when_the_start_fails(n, no_full_path):
    """Cold starts (no warm start) on P-matrix LCPs with q of mixed signs: iteration 0 fails, and
    the plan runs Lemke's path itself (no full path: the guard is armed) with the full path's
    Solution (pivots, message, bits); an option the plan does not run (a covering vector) hands
    the call to the full path."""
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
        fast = nsopt.solve(pk, "lemke", workspace=ws)
        no_full_path["armed"] = False
        full = nsopt.solve(pk, "lemke")
        _same(fast, full)
        assert fast.success and fast.nit == fast.info["pivots"] >= 1
        pivots += fast.nit
    assert pivots >= 20
    ws2 = nsopt.Workspace()
    nsopt.solve(p, "lemke", workspace=ws2, cover=np.full(n, 2.0))
    no_full_path["armed"] = True
    with pytest.raises(AssertionError, match="full path"):
        nsopt.solve(p.replace(q=-np.ones(n)), "lemke", workspace=ws2, cover=np.full(n, 2.0))


def test_lemke_plan_with_solution_warm_start_and_max_iter(no_full_path):
    p = nsopt.LCP(np.array([[2.0]]), np.array([-1.0]))
    ws = nsopt.Workspace()
    s = nsopt.solve(p, "lemke", workspace=ws, max_iter=0)
    assert s.status is Status.MAX_ITER
    prev = nsopt.solve(p, "lemke")
    no_full_path["armed"] = True
    p2 = p.replace(q=np.array([-1.5]))
    fast = nsopt.solve(p2, "lemke", workspace=ws, max_iter=0, warm_start=prev)
    assert fast.status is Status.SOLVED and fast.z[0] == 0.75 and fast.nit == 0
    with pytest.raises(AssertionError, match="full path"):   # q >= 0 from a bad start with no budget
        nsopt.solve(p.replace(q=np.array([1.0])), "lemke", workspace=ws, max_iter=0, warm_start=np.array([3.0]))


def test_plan_is_skipped_when_the_contract_is_asked_for(no_full_path):
    """history, callback and time_limit take the full path (the contract), with their results."""
    p, _ = g.friction_contact(3, seed=2)
    ws = nsopt.Workspace()
    nsopt.solve(p, "nsgs", workspace=ws)
    no_full_path["armed"] = True
    for kw in ({"history": True}, {"callback": lambda it: None}, {"time_limit": 10.0}):
        with pytest.raises(AssertionError, match="full path"):
            nsopt.solve(p, "nsgs", workspace=ws, **kw)
    no_full_path["armed"] = False
    s = nsopt.solve(p, "nsgs", workspace=ws, history=True)
    assert s.history is not None and len(s.history) == s.nit + 1


def test_what_the_plan_skips_is_still_checked():
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
    with pytest.raises(OptionError):   # True is not 3 nor 1: another plan key, the full path checks it
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
def test_direct_plan_gives_the_full_path_solution(kind, method, opts, no_full_path):
    """Methods without a compiled plan (and lemke on an LCP above SMALL_LCP) get the generic one:
    their function called directly with the options checked once; the same Solution."""
    for seed in range(3):
        if kind in ("fc2d", "fc3d"):
            p, _ = g.friction_contact(2 + seed, dim=int(kind[2]), seed=seed)
        elif kind == "lcp":
            p, _ = g.lcp(20 if method == "lemke" else 6, seed=seed)
        else:
            p, _ = g.relay(5, seed=seed)
        ws = nsopt.Workspace()
        no_full_path["armed"] = False
        prev = nsopt.solve(p, method, tol=1e-9, workspace=ws, **opts)
        assert ws._plans
        for j, q in enumerate(_qs(p, 3, seed)):
            pk = p.replace(q=q)
            warm = getattr(prev, p.primal) if j % 2 else prev
            no_full_path["armed"] = False
            full = nsopt.solve(pk, method, tol=1e-9, warm_start=warm, **opts)
            no_full_path["armed"] = True
            fast = nsopt.solve(pk, method, tol=1e-9, workspace=ws, warm_start=warm, **opts)
            _same(fast, full)
            prev = fast
    no_full_path["armed"] = True
    other = g.lcp(4, seed=9)[0] if kind == "lcp" else g.relay(4, seed=9)[0] if kind == "relay" else \
        g.friction_contact(2, dim=int(kind[2]), seed=9)[0]
    with pytest.raises(AssertionError, match="full path"):      # another matrix: the full path checks it
        nsopt.solve(other, method, tol=1e-9, workspace=ws, **opts)


@pytest.mark.parametrize("method", ["nsn-ac", "nsn-fb"])
@pytest.mark.parametrize("kw", [{"tol": 1e-10}, {"tol": 1e-300, "max_iter": 4}, {"tol": 1e-12, "reg": 0.0},
                                {"tol": 1e-12, "line_search": "armijo", "hybrid": False}],
                         ids=["default", "max_iter", "noreg", "armijo"])
def test_newton_dense_plan_gives_the_full_path_solution(method, kw, no_full_path):
    """nsn-ac / nsn-fb on small dense systems: the plan runs the compiled loop in one call; the
    Solution is the full path's, also at MAX_ITER with the best iterate."""
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
            plan = next(iter(ws._plans.values()))
            no_full_path["armed"] = type(plan).__name__ == "_DensePlan"
            fast = nsopt.solve(pk, method, workspace=ws, warm_start=warm_fast, **kw)
            _same(fast, full)
            prev_fast, prev_full = fast, full


def test_plan_message_is_made_when_read_and_travels():
    """The plan hands its message over unformatted; reading, comparing, pickling and to_record see
    the monitor's text, as the full path writes it."""
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


def test_plan_warm_start_from_an_edited_solution():
    """The plan's own last Solution is taken as it is; one whose r was replaced by a vector of the
    wrong size goes to the full path's check (an OptionError, no read past the array)."""
    p, _ = g.friction_contact(3, seed=4)
    ws = nsopt.Workspace()
    prev = nsopt.solve(p, "nsgs", workspace=ws)
    prev = nsopt.solve(p.replace(q=np.asarray(p.q) * 1.02), "nsgs", workspace=ws, warm_start=prev)
    prev.r = np.zeros(2)
    with pytest.raises(OptionError):
        nsopt.solve(p.replace(q=np.asarray(p.q) * 1.03), "nsgs", workspace=ws, warm_start=prev)
