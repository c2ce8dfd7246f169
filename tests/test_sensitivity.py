"""nsopt.sensitivity: derivatives of solutions against central finite differences, the adjoint against
the forward map, sparse gradients, degenerate rows and contacts, smoothing, CVXPY's own derivative.

Finite differences: central, step h = 1e-6 relative to the datum's size, each side re-solved to
1e-14 from the base solution (the same branch); their error is O(h^2) (truncation, ~1e-12 here) plus
O(tol / h) (the re-solves, ~1e-8), so the relative difference with jvp must be below 1e-5
(``FD_RTOL``), measured against the largest entry of the finite difference over all variables."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt
from nsopt import generate
from nsopt.exceptions import NotApplicable, ProblemError
from conftest import need_extra

FD_RTOL = 1e-5
H_STEP = 1e-6
ADJ_RTOL = 1e-11     # adjoint = transpose of the forward map, to round-off
METHOD = {"lcp": "lemke", "mlcp": "lemke", "relay": "lemke", "equality": "linear", "avi": "lemke",
          "fc2d": "nsn-ac", "fc3d": "nsn-ac", "gfc2d": "nsn-ac", "gfc3d": "nsn-ac", "gmp": "nsn"}


# ------------------------------------------------------------------------------------ helpers
def _directions(p, rng):
    """A random direction of every differentiable field (matrices on their pattern if sparse)."""
    d = {}
    for f in nsopt.sensitivity(p, solve_tight(p)).fields:
        v = getattr(p, f)
        if f == "blocks":
            d[f] = [({"mu": rng.standard_normal()} if b.kind.startswith("fc") else
                     {"lb": rng.standard_normal(b.size), "ub": rng.standard_normal(b.size)} if b.kind == "relay" else None)
                    for b in v]
        elif sp.issparse(v):
            C = sp.csr_matrix(v, copy=True)
            C.data = rng.standard_normal(C.nnz)
            d[f] = C
        else:
            d[f] = rng.standard_normal(np.shape(v))
    if "M" in d and p.kind == "gfc3d":       # keep M symmetric positive definite under the step
        d["M"] = 0.5 * (d["M"] + d["M"].T)
    return d


def _shifted(p, d, s):
    ch = {}
    for f, v in d.items():
        a = getattr(p, f)
        if f == "blocks":
            blocks = []
            for b, db in zip(a, v):
                if db is None:
                    blocks.append(b)
                elif "mu" in db:
                    blocks.append(nsopt.Block(b.kind, b.size, b.mu + s * db["mu"]))
                else:
                    blocks.append(nsopt.Block("relay", b.size, None, tuple(np.add(b.lb, s * db["lb"])),
                                              tuple(np.add(b.ub, s * db["ub"]))))
            ch[f] = blocks
        else:
            ch[f] = a + s * v
    return p.replace(**ch)


def _scaled(p, d):
    """The direction scaled to H_STEP relative to each field's size."""
    out = {}
    for f, v in d.items():
        a = getattr(p, f)
        if f == "blocks":
            out[f] = [None if db is None else {k: H_STEP * np.asarray(x) for k, x in db.items()} for db in v]
            continue
        size = float(np.max(np.abs(a.data if sp.issparse(a) else a), initial=0.0)) or 1.0
        out[f] = v * (H_STEP * size)
    return out


def solve_tight(p, warm=None):
    kw = {"max_iter": 200} if p.kind in ("fc2d", "fc3d", "gfc2d", "gfc3d") else {}
    return nsopt.solve(p, method=METHOD[p.kind], tol=1e-14, warm_start=warm, **kw)


def fd_difference(p, d=None, seed=0):
    """max |jvp - FD| / max |FD| over the variables, for a random direction (the test's measure)."""
    rng = np.random.default_rng(seed)
    base = solve_tight(p)
    assert base.error < 1e-12
    s = nsopt.sensitivity(p, base)
    assert s.differentiable and not s.singular, (s.degenerate, s.singular)
    d = _scaled(p, _directions(p, rng) if d is None else d)
    plus, minus = solve_tight(_shifted(p, d, 1.0), base), solve_tight(_shifted(p, d, -1.0), base)
    assert plus.error < 1e-12 and minus.error < 1e-12
    J = s.jvp(**d)
    worst, scale = 0.0, 0.0
    for v in J:
        fd = (getattr(plus, v) - getattr(minus, v)) / 2.0
        worst = max(worst, float(np.max(np.abs(J[v] - fd), initial=0.0)))
        scale = max(scale, float(np.max(np.abs(fd), initial=0.0)))
    return worst / max(scale, 1e-300)


def _avi(n=4, m=6, seed=0):
    rng = np.random.default_rng(seed)
    M = generate.spd_matrix(n, rng)
    H = rng.standard_normal((m, n))
    return nsopt.AVI(M, 3 * rng.standard_normal(n), H, -rng.uniform(0.1, 1.0, m))


def _gmp(seed=0):
    rng = np.random.default_rng(seed)
    blocks = [("equality", 1), ("lcp", 2), ("relay", 2, None, (-1.0, -1.0), (1.0, 1.0)), ("fc3d", 3, 0.5),
              ("fc2d", 2, 0.3)]
    return nsopt.GenericMechanical(generate.spd_matrix(10, rng), 2 * rng.standard_normal(10), blocks)


def _equality(seed=0):
    rng = np.random.default_rng(seed)
    return nsopt.Equality(generate.spd_matrix(5, rng) + 0.3 * rng.standard_normal((5, 5)), rng.standard_normal(5))


GENERATED = {
    "lcp-spd": lambda s: generate.lcp(10, seed=s)[0],
    "lcp-p": lambda s: generate.lcp(10, seed=s, matrix="p")[0],
    "lcp-sparse": lambda s: nsopt.LCP(sp.csr_matrix(generate.lcp(10, seed=s)[0].M), generate.lcp(10, seed=s)[0].q),
    "mlcp": lambda s: generate.mlcp(3, 5, seed=s)[0],
    "relay": lambda s: generate.relay(6, seed=s)[0],
    "equality": _equality,
    "avi": lambda s: _avi(seed=s),
    "fc2d": lambda s: generate.friction_contact(5, 2, seed=s)[0],
    "fc3d": lambda s: generate.friction_contact(5, 3, seed=s)[0],
    "fc3d-sparse": lambda s: (lambda p: nsopt.FrictionContact(3, sp.csr_matrix(p.W), p.q, p.mu))(
        generate.friction_contact(6, 3, seed=s)[0]),
    "gfc3d": lambda s: generate.global_friction_contact(4, 12, 3, seed=s)[0],
    "gfc2d": lambda s: generate.global_friction_contact(4, 10, 2, seed=s)[0],
    "gmp": _gmp,
}


# ------------------------------------------------------------------------------------ tests
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("case", sorted(GENERATED))
def test_jvp_against_central_differences(case, seed):
    p = GENERATED[case](seed)
    assert fd_difference(p, seed=seed) < FD_RTOL


@pytest.mark.parametrize("case", sorted(GENERATED))
def test_adjoint_is_the_transpose_of_the_forward_map(case):
    p = GENERATED[case](3)
    rng = np.random.default_rng(7)
    s = nsopt.sensitivity(p, solve_tight(p))
    d = _directions(p, rng)
    J = s.jvp(**d)
    g = {v: rng.standard_normal(J[v].shape[0]) for v in J}
    G = s.vjp(**g)
    assert set(G) == set(s.fields)
    lhs = sum(float(g[v] @ J[v]) for v in J)
    rhs = 0.0
    for f, dv in d.items():
        if f == "blocks":
            for gb, db in zip(G[f], dv):
                for k, x in (db or {}).items():
                    rhs += float(np.sum(np.asarray(gb[k]) * np.asarray(x)))
        elif sp.issparse(G[f]):
            assert G[f].nnz == getattr(p, f).nnz      # on the field's pattern, never densified
            rhs += float(G[f].multiply(dv).sum())
        else:
            assert np.shape(G[f]) == np.shape(getattr(p, f))
            rhs += float(np.sum(G[f] * dv))
    assert abs(lhs - rhs) <= ADJ_RTOL * max(abs(lhs), 1.0)


def test_jacobian_matches_jvp():
    p = generate.friction_contact(3, 3, seed=4)[0]
    s = nsopt.sensitivity(p, solve_tight(p))
    Jq = s.jacobian("q")
    dq = np.random.default_rng(0).standard_normal(p.size)
    np.testing.assert_allclose(Jq["r"] @ dq, s.jvp(q=dq)["r"], rtol=1e-12, atol=1e-13)
    JW = s.jacobian("W")
    assert JW["u"].shape == (p.size, p.size, p.size)
    sp_p = nsopt.LCP(sp.csr_matrix(generate.lcp(6, seed=1)[0].M), generate.lcp(6, seed=1)[0].q)
    JM = nsopt.sensitivity(sp_p, solve_tight(sp_p)).jacobian("M")
    assert JM["z"].shape == (6, sp_p.M.nnz)


def test_lcp_closed_form():
    """Murty's LCP: both rows have z > 0, so dz = -M^-1 (dq + dM z)."""
    M = np.array([[2.0, 1.0], [1.0, 2.0]])
    p = nsopt.LCP(M, [-5.0, -6.0])
    s = nsopt.sensitivity(p, nsopt.solve(p, method="lemke"))
    dq = np.array([0.3, -0.7])
    dM = np.array([[0.1, 0.2], [-0.4, 0.3]])
    z = np.array([4 / 3, 7 / 3])
    np.testing.assert_allclose(s.jvp(q=dq, M=dM)["z"], -np.linalg.solve(M, dq + dM @ z), rtol=1e-13)
    np.testing.assert_allclose(s.vjp(z=[1.0, 0.0])["q"], -np.linalg.solve(M.T, [1.0, 0.0]), rtol=1e-13)


def test_bad_directions_are_typed_errors():
    p = generate.lcp(4, seed=0)[0]
    s = nsopt.sensitivity(p, solve_tight(p))
    with pytest.raises(ProblemError, match="not a differentiable field"):
        s.jvp(W=np.eye(4))
    with pytest.raises(ProblemError, match=r"LCP.q: direction has 3 entries"):
        s.jvp(q=np.ones(3))
    with pytest.raises(ProblemError, match="not a variable"):
        s.vjp(r=np.ones(4))
    with pytest.raises(ProblemError, match="M: direction has shape"):
        s.jvp(M=np.ones((3, 3)))


# ---- degenerate points
def test_degenerate_lcp_row_is_listed_and_follows_the_rule():
    """Row 1 has z = w = 0: listed; the rule (the row stays at its bound) gives the one-sided
    derivative for a change that opens the row (dq_1 > 0), and the smoothed derivative averages."""
    M = np.array([[2.0, 0.5], [0.5, 1.0]])
    z = np.array([1.0, 0.0])
    q = -(M @ z)                                      # w = Mz + q = 0: row 0 z > 0, row 1 z = w = 0
    p = nsopt.LCP(M, q)
    s = nsopt.sensitivity(p, {"z": z})
    assert list(s.degenerate["rows"]) == [1] and not s.differentiable
    dq = np.array([0.0, 1.0])
    h = 1e-7
    fd = (nsopt.solve(p.replace(q=q + h * dq), method="lemke", tol=1e-15).z - z) / h
    np.testing.assert_allclose(s.jvp(q=dq)["z"], fd, atol=1e-7)
    # smoothed: row 1 weighs both branches; at eps -> 0 the derivative of z_1 is half the other branch's
    other = -np.linalg.solve(M, dq)                   # both rows active: w = 0
    sm = s.smoothed(1e-6)
    np.testing.assert_allclose(sm.jvp(q=dq)["z"][1], 0.5 * other[1], rtol=1e-3)
    assert abs(sm.point()["z"][1]) < 1e-5


def test_degenerate_contacts_are_listed():
    """Contact 0: zero force and zero normal velocity (grazing); contact 1: on the cone's edge with
    zero sliding velocity (stick/slip); contact 2: a plain slide."""
    rng = np.random.default_rng(0)
    W = generate.spd_matrix(9, rng)
    mu = np.array([0.5, 0.5, 0.5])
    r = np.array([0.0, 0.0, 0.0, 1.0, 0.5, 0.0, 1.0, 0.3, 0.4])         # contact 1: ||r_T|| = mu r_N
    u = np.array([0.0, 0.2, -0.1, 0.0, 0.0, 0.0, 0.0, -0.6, -0.8])      # contact 2: u_T = -s r_T/||r_T||
    p = nsopt.FrictionContact(3, W, u - W @ r, mu)
    assert p.error(r) < 1e-14
    s = nsopt.sensitivity(p, {"r": r})
    assert sorted(s.degenerate["contacts"]) == [0, 1]
    assert list(s.states["contacts"]) == ["take-off", "stick", "slide"]
    assert "take-off" in s.rule and "stick" in s.rule
    sm = s.smoothed(1e-6)
    assert sm.smoothing == 1e-6 and not sm.degenerate
    assert np.all(np.isfinite(sm.jvp(q=np.ones(9))["r"]))


@pytest.mark.parametrize("case", ["lcp-spd", "fc3d", "gfc3d", "relay", "gmp"])
def test_smoothed_derivative_tends_to_the_exact_one(case):
    p = GENERATED[case](1)
    s = nsopt.sensitivity(p, solve_tight(p))
    d = _directions(p, np.random.default_rng(2))
    exact = s.jvp(**d)
    sm = s.smoothed(1e-9).jvp(**d)
    for v in exact:
        scale = float(np.max(np.abs(exact[v]), initial=1e-300))
        assert np.max(np.abs(sm[v] - exact[v])) <= 1e-5 * max(scale, 1.0)


# ---- multiple impact
def test_multiple_impact_decoupled_closed_form():
    M = np.diag([2.0, 3.0])
    H = np.eye(2)
    v = np.array([-1.0, -0.5])
    e = np.array([0.8, 0.6])
    p = nsopt.MultipleImpact(M, H, v, restitution=e, stiffness=1e6, elasticity=1.5)
    sol = nsopt.solve(p, method="lzb", impulse_step=1e-6)
    s = nsopt.sensitivity(p, sol)
    np.testing.assert_allclose(s.point()["p"], (1 + e) * -v * np.diag(M), rtol=1e-12)
    np.testing.assert_allclose(sol.p, s.point()["p"], rtol=1e-5)       # LZB: O(impulse_step)
    rng = np.random.default_rng(0)
    d = {"M": np.diag(rng.standard_normal(2)), "H": np.diag(rng.standard_normal(2)),
         "v": rng.standard_normal(2), "restitution": rng.standard_normal(2)}
    J = s.jvp(**d)

    def point(sgn):
        q = nsopt.MultipleImpact(M + sgn * H_STEP * d["M"], H + sgn * H_STEP * d["H"], v + sgn * H_STEP * d["v"],
                                 restitution=e + sgn * H_STEP * d["restitution"], stiffness=1e6)
        return nsopt.sensitivity(q, {"p": np.zeros(2)}).point()

    a, b = point(1), point(-1)
    for k in ("v", "p"):
        np.testing.assert_allclose(J[k], (a[k] - b[k]) / (2 * H_STEP), rtol=1e-6)
    g = {"v": rng.standard_normal(2), "p": rng.standard_normal(2)}
    G = s.vjp(**g)
    assert np.allclose(sum(g[k] @ J[k] for k in J), sum(np.sum(G[k] * d[k]) for k in d), rtol=1e-12)
    assert np.all(G["stiffness"] == 0)


def test_multiple_impact_coupled_is_not_applicable():
    p = nsopt.MultipleImpact(np.diag([2.0, 3.0]), [[1.0, 0.2], [0.0, 1.0]], [-1.0, -0.5], restitution=0.8,
                             stiffness=1e6)
    with pytest.raises(NotApplicable, match="coupled"):
        nsopt.sensitivity(p, nsopt.solve(p, method="lzb", impulse_step=1e-5))


# ---- large sparse: the adjoint does not densify
def test_large_sparse_lcp_vjp_stays_sparse():
    n = 20_000
    rng = np.random.default_rng(0)
    M = sp.diags([-np.ones(n - 1), 4.0 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="csr")
    z = np.where(rng.random(n) < 0.5, rng.uniform(0.1, 1.0, n), 0.0)
    w = np.where(z > 0, 0.0, rng.uniform(0.1, 1.0, n))
    p = nsopt.LCP(M, w - M @ z)
    s = nsopt.sensitivity(p, {"z": z})
    assert s.differentiable and not s.singular
    G = s.vjp(z=rng.standard_normal(n))
    assert sp.issparse(G["M"]) and G["M"].nnz == M.nnz
    dq = rng.standard_normal(n)
    dz = s.jvp(q=dq)["z"]
    act = z > 0                     # on the active rows M_AA dz_A = -dq_A, elsewhere dz = 0
    assert np.all(dz[~act] == 0)
    MA = M[act][:, act]
    assert np.max(np.abs(MA @ dz[act] + dq[act])) < 1e-10


# ---- the corpus, where strict complementarity holds
CORPUS = ["lcp/lcp_mmc.dat", "lcp/lcp_enum_fails.dat", "lcp/lcp_exp_murty.dat", "mlcp/PDSym_mlcp.dat",
          "mlcp/relay2_mlcp.dat", "relay/relay_4x4.dat", "gmp/GMP0.dat", "gmp/GMP1.dat", "gmp/Example1_Fc3D_SBM.dat", "fc3d/Rover4516.dat",
          "fc3d/NESpheres_10_1.dat", "fc3d/Confeti-ex13-4contact-Fc3D-SBM.dat",
          "fc3d/GFC3D_TwoRods1-condensed.dat", "fc2d/FrictionContactProblem00394.dat",
          "fc2d/FC2D_SliderCrankLagrangian00000.dat", "gfc3d/GFC3D_Example1.dat"]


@pytest.mark.corpus
@pytest.mark.parametrize("name", CORPUS)
def test_jvp_against_central_differences_on_the_corpus(corpus, name):
    p = nsopt.io.load(corpus / name)
    d = _directions(p, np.random.default_rng(0))
    if "M" in d and p.kind.startswith("gfc"):
        d["M"] = 0.5 * (d["M"] + d["M"].T)
    assert fd_difference(p, d) < FD_RTOL


# ---- CVXPY's own derivative (diffcp) as an independent check
def _cvxpy_qp(cp, p):
    """The convex view of a symmetric PD affine problem as a DPP program: (program, variable,
    {field: parameter}) with q and the constraint data as parameters."""
    n = p.size
    z = cp.Variable(n)
    q = cp.Parameter(n, value=np.asarray(p.q))
    S = 0.5 * (np.asarray(p.M) + np.asarray(p.M).T)
    obj = cp.Minimize(0.5 * cp.quad_form(z, cp.psd_wrap(S)) + q @ z)
    params = {"q": q}
    if p.kind == "lcp":
        cons = [z >= 0]
    elif p.kind == "mlcp":
        cons = [z[p.n:] >= 0]
    elif p.kind == "relay":
        params["lb"], params["ub"] = cp.Parameter(n, value=np.asarray(p.lb)), cp.Parameter(n, value=np.asarray(p.ub))
        cons = [z >= params["lb"], z <= params["ub"]]
    else:   # avi: z in {Hz >= k}
        params["k"] = cp.Parameter(p.H.shape[0], value=np.asarray(p.k))
        cons = [np.asarray(p.H) @ z >= params["k"]]
    return cp.Problem(obj, cons), z, params


@pytest.mark.filterwarnings("ignore:Solved/Inaccurate", "ignore:Solution may be inaccurate")
@pytest.mark.parametrize("case", ["lcp-spd", "mlcp", "relay", "avi"])
def test_cvxpy_derivative_of_the_convex_view(case):
    """CVXPY's own derivative (diffcp, through SCS) of the QP whose KKT system is the problem, in the
    data it holds as parameters, against nsopt's jvp (to SCS' accuracy, 1e-5)."""
    import cvxpy as cp
    need_extra("test", ["diffcp"])
    p = GENERATED[case](3)
    prog, z, params = _cvxpy_qp(cp, p)
    prog.solve(solver="SCS", requires_grad=True, eps=1e-12, max_iters=100000)
    s = nsopt.sensitivity(p, solve_tight(p))
    np.testing.assert_allclose(z.value, s.point()["z"], atol=1e-6)
    rng = np.random.default_rng(3)
    d = {}
    for name, par in params.items():
        d[name] = rng.standard_normal(par.shape)
        par.delta = d[name]
    prog.derivative()
    want = s.jvp(**d)["z"]
    np.testing.assert_allclose(z.delta, want, atol=1e-5 * max(1.0, np.abs(want).max()))


def test_cvxpy_derivative_friction_at_a_fixed_shift():
    r"""The SOCP of a frozen De Saxcé shift s gives S = dr/d(q + s~) (CVXPY); Coulomb's derivative is
    then the fixed point dr = S (dq + ds~), ds~_a = mu_a g_a . du_T,a, du = W dr + dq."""
    import cvxpy as cp
    need_extra("test", ["diffcp"])
    p = generate.friction_contact(4, 3, seed=5, mu=0.4)[0]
    n, nc, mu = p.size, p.nc, np.asarray(p.mu)
    base = solve_tight(p)
    U = base.u.reshape(nc, 3)
    shift = np.zeros((nc, 3))
    shift[:, 0] = mu * np.linalg.norm(U[:, 1:], axis=1)
    r = cp.Variable(n)
    c = cp.Parameter(n)
    R = cp.reshape(r, (nc, 3), order="C")
    W = np.asarray(p.W)
    prog = cp.Problem(cp.Minimize(0.5 * cp.quad_form(r, cp.psd_wrap(0.5 * (W + W.T))) + c @ r),
                      [cp.SOC(cp.multiply(mu, R[:, 0]), R[:, 1:], axis=1)])
    c.value = np.asarray(p.q) + shift.reshape(-1)
    prog.solve(solver="SCS", requires_grad=True, eps=1e-12, max_iters=200000)
    np.testing.assert_allclose(r.value, base.r, atol=1e-6)
    S = np.zeros((n, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = 1.0
        c.delta = e
        prog.derivative()
        S[:, j] = r.delta
    D = np.zeros((n, n))                # ds~ = D du
    for a in range(nc):
        nu = np.linalg.norm(U[a, 1:])
        if nu > 1e-9:
            D[3 * a, 3 * a + 1:3 * a + 3] = mu[a] * U[a, 1:] / nu
    dq = np.random.default_rng(0).standard_normal(n)
    dr = np.linalg.solve(np.eye(n) - S @ D @ W, S @ (dq + D @ dq))
    np.testing.assert_allclose(dr, nsopt.sensitivity(p, base).jvp(q=dq)["r"], atol=1e-4 * np.abs(dr).max())


# ---- where the solution is not unique (issue 30, items 5 and 6)
def _box(v0=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)):
    """A box resting on its four bottom corners (W = H M^-1 H^T of rank 6 of 12), and H."""
    pts = np.array([(-0.5, -0.3), (0.5, -0.3), (0.5, 0.3), (-0.5, 0.3)])
    _, H = generate.rigid_body_contacts(pts)
    return generate.rigid_friction_problem(pts, v0, mu=0.5), H


def test_singular_box_refuses_what_is_not_determined_and_returns_what_is():
    """The static box: r is not unique (its normal and tangential forces split among the corners);
    u is. A generic dq leaves the piece (no u = 0 stick solution nearby with these forces): refused.
    A dq = H dv (a change of the box's free velocity) keeps it: u's derivative is returned (exact,
    against a one-sided difference), r's refused, naming the free contacts, or NaN with a warning.
    Before: a least-squares answer for both, without a word (68-76 % off on u for a generic dq)."""
    p, H = _box()
    s0 = nsopt.solve(p, method="nsn-ac", tol=1e-14)
    s = nsopt.sensitivity(p, s0)
    assert s.singular and s.null_space.shape[1] == 6 and s.free["r"].all() and not s.free["u"].any()
    rng = np.random.default_rng(0)
    with pytest.raises(nsopt.NotDifferentiable, match="leaves the solution's piece"):
        s.jvp(q=rng.standard_normal(12))
    dq = H @ rng.standard_normal(6) * 1e-3
    with pytest.raises(nsopt.NotDifferentiable, match=r"r is not unique here.*free contacts: 0, 1, 2, 3"):
        s.jvp(q=dq)
    w = nsopt.sensitivity(p, s0, singular="warn")
    with pytest.warns(nsopt.NsoptWarning, match="r is not unique"):
        J = w.jvp(q=dq)
    assert np.all(np.isnan(J["r"])) and np.all(np.isfinite(J["u"]))
    h = 1e-6
    plus = nsopt.solve(p.replace(q=p.q + h * dq), method="nsn-ac", tol=1e-15, warm_start=s0.r)
    np.testing.assert_allclose(J["u"], (plus.u - s0.u) / h, atol=1e-8)        # (0: the corners keep sticking)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # min-norm: the old answer, asked for, no warning
        assert np.all(np.isfinite(nsopt.sensitivity(p, s0, singular="min-norm").jvp(q=dq)["r"]))
    # the adjoint: a loss of u, or of the total force sum(r) (unique), is differentiable; one of r_0 is not
    assert np.all(np.isfinite(s.vjp(u=rng.standard_normal(12))["q"]))
    assert np.all(np.isfinite(s.vjp(r=np.ones(12))["q"]))
    with pytest.raises(nsopt.NotDifferentiable, match="cotangent weighs entries that move"):
        s.vjp(r=np.eye(12)[0])


def test_sliding_particle_on_duplicated_contacts_velocity_derivative():
    """A point sliding on two identical 2D contacts: the split of the normal force is free, the
    velocity is not: du against central differences along a change of the free velocity."""
    H = np.vstack([np.array([[0.0, 1.0], [1.0, 0.0]])] * 2)
    vfree = np.array([1.0, -0.1])
    p = nsopt.FrictionContact(2, H @ H.T, H @ vfree, 0.4)
    s0 = nsopt.solve(p, method="nsn-ac", tol=1e-14)
    s = nsopt.sensitivity(p, s0, singular="warn")
    assert s.singular and s.free["r"][[0, 2]].all() and not s.free["u"].any()
    dq = H @ np.array([0.3, -0.2])
    with pytest.warns(nsopt.NsoptWarning):
        J = s.jvp(q=dq)
    h = 1e-6
    a = nsopt.solve(p.replace(q=p.q + h * dq), method="nsn-ac", tol=1e-15)
    b = nsopt.solve(p.replace(q=p.q - h * dq), method="nsn-ac", tol=1e-15)
    np.testing.assert_allclose(J["u"], (a.u - b.u) / (2 * h), atol=1e-8)


@pytest.mark.parametrize("family", ["mlcp-dependent-eq", "fc2d-block-stick", "fc3d-box-stick", "lcp-repeated-rows"])
def test_derivative_of_the_selection_against_finite_differences_of_the_selection(family):
    """At the solution select='min-norm' returns (strict complementarity, every contact sticking or
    open), the free entries have the selection's derivative along the right-hand side: against
    central differences of nsopt.solve(..., select='min-norm') to 1e-6. At a degenerate selection
    (its face may change) they are refused; along the matrix too."""
    method = {"mlcp": "lemke", "lcp": "lemke", "fc2d": "nsn-ac", "fc3d": "nsn-ac"}
    checked = refused = 0
    for seed in range(8):
        p, _ = generate.degenerate(family, seed)

        def sel(q, p=p):
            return nsopt.solve(p.replace(q=q), method=method[p.kind], tol=1e-13, max_iter=1000, select="min-norm")

        s0 = sel(p.q)
        s = nsopt.sensitivity(p, s0)
        if not s.singular:
            continue
        A = np.asarray(p.M if p.kind in ("lcp", "mlcp") else p.W)
        dq = A @ np.random.default_rng(seed).standard_normal(p.size)        # keeps the piece
        if not s.selection:
            with pytest.raises(nsopt.NotDifferentiable):
                s.jvp(q=dq)
            refused += 1
            continue
        h = 1e-6 * np.abs(p.q).max() / np.abs(dq).max()
        fd = (getattr(sel(p.q + h * dq), p.primal) - getattr(sel(p.q - h * dq), p.primal)) / (2 * h)
        J = s.jvp(q=dq)[p.primal]
        assert np.abs(J - fd).max() <= 1e-6 * np.abs(fd).max(), (family, seed)
        matrix = "M" if p.kind in ("lcp", "mlcp") else "W"
        with pytest.raises(nsopt.NotDifferentiable, match="along the right-hand side only"):
            s.jvp(**{matrix: np.eye(p.size)})
        checked += 1
    assert checked >= 1 and checked + refused >= 2


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["fc3d/OneObject-i1028-138.hdf5.dat", "fc3d/Capsules-i101-404.dat"])
def test_singular_corpus_problems_say_what_is_determined(corpus, name):
    """Siconos' OneObject and Capsules (redundant contacts, W singular): a generic dq is refused
    (before: a least-squares answer 47-100 % off); for dq in the range of W, u's derivative agrees
    with a one-sided difference to 1e-4 of its size (Capsules has degenerate contacts: one-sided)."""
    p = nsopt.io.load(corpus / name)
    s0 = nsopt.solve(p, method="nsn-ac", tol=1e-13, max_iter=500)
    s = nsopt.sensitivity(p, s0, singular="warn")
    assert s.singular and s.free["u"] is not None and not s.free["u"].any() and s.free["r"].any()
    rng = np.random.default_rng(0)
    with pytest.raises(nsopt.NotDifferentiable, match="leaves the solution's piece"):
        nsopt.sensitivity(p, s0).jvp(q=rng.standard_normal(p.size))
    W = p.W.toarray() if sp.issparse(p.W) else np.asarray(p.W)
    dq = W @ rng.standard_normal(p.size)
    dq *= 1e-6 * np.abs(p.q).max() / np.abs(dq).max()
    with pytest.warns(nsopt.NsoptWarning, match="r is not unique"):
        J = s.jvp(q=dq)
    plus = nsopt.solve(p.replace(q=p.q + dq), method="nsn-ac", tol=1e-14, max_iter=500, warm_start=s0.r)
    fd = plus.u - s0.u
    assert np.abs(J["u"] - fd).max() <= 1e-4 * np.abs(fd).max()


# ---- inputs (issue 29 §3-§4, issue 30's weak inputs)
def test_bad_inputs_are_typed_errors_naming_them():
    p = generate.lcp(4, seed=0)[0]
    s = nsopt.sensitivity(p, solve_tight(p))
    for bad, match in ((["a", "b", "c", "d"], "real numbers"), (np.ones(4) * (1 + 1j), "complex numbers"),
                       (np.ones((4, 1)), r"shape \(4, 1\), expected \(4,\)"), ([1.0, None, 2.0, 3.0], "real numbers")):
        with pytest.raises(ProblemError, match=match):
            s.jvp(q=bad)
    with pytest.raises(ProblemError, match="real numbers"):
        s.jvp(M=[["a"] * 4] * 4)
    with pytest.raises(ProblemError, match=r"cotangent has non-finite entries"):
        s.vjp(z=[np.nan, 0.0, 0.0, 0.0])
    with pytest.raises(ProblemError, match="must be an nsopt problem"):
        nsopt.sensitivity(np.eye(2), {"z": [1.0, 2.0]})
    with pytest.raises(ProblemError, match="real numbers"):
        nsopt.sensitivity(p, {"z": ["1", "2", "3", "4"]})
    with pytest.raises(ProblemError, match=r"wrt.*got 3"):
        s.jacobian(3)
    with pytest.raises(nsopt.OptionError, match="singular must be one of"):
        nsopt.sensitivity(p, solve_tight(p), singular="ignore")


@pytest.mark.parametrize("eps, ok", [(True, False), (1e300, False), (0.0, False), (-1e-6, False), ("1e-6", False),
                                     (np.float32(1e-6), True), (np.float64(1e-8), True), (1, True)])
def test_smoothed_eps_is_checked(eps, ok):
    p = nsopt.LCP([[1.0, 0.0], [0.0, 1.0]], [-1.0, 0.0])
    s = nsopt.sensitivity(p, {"z": [1.0, 0.0]})
    if ok:
        assert s.smoothed(eps).smoothing == pytest.approx(float(eps))
    else:
        with pytest.raises(ProblemError, match=r"eps.*\(0, 1\]"):
            s.smoothed(eps)


def test_a_solution_of_another_problem_is_refused():
    p, _ = generate.friction_contact(2, 3, seed=0)
    other, _ = generate.friction_contact(2, 3, seed=1)
    wrong = nsopt.solve(other, method="nsn-ac", tol=1e-12)
    with pytest.raises(ProblemError, match="is not a solution of this problem"):
        nsopt.sensitivity(p, wrong)
    with pytest.warns(nsopt.NsoptWarning, match="the solution's error is"):
        nsopt.sensitivity(p, wrong, max_error=np.inf, singular="min-norm")


def test_smoothed_newton_is_the_one_newton_loop(monkeypatch):
    """Sensitivity.smoothed runs the globalised Newton loop of every Newton method (issue 31 §1: no loop of its own),
    and reaches the smoothed system's solution (its residual below the loop's tolerance)."""
    import nsopt.solvers.newton_loop as loop

    newton_loop = loop.newton_loop

    calls = []

    def counted(*a, **k):
        calls.append(1)
        return newton_loop(*a, **k)

    monkeypatch.setattr(loop, "newton_loop", counted)
    p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-1.0, 0.5])
    s = nsopt.sensitivity(p, nsopt.solve(p, method="lemke"))
    sm = s.smoothed(1e-6)
    assert calls == [1]
    assert sm.smoothed_residual <= 1e-13
    assert np.allclose(sm.point()["z"], s.point()["z"], atol=1e-5)
