"""nsopt.jax (the optional extra nsopt[jax]): jax.grad through nsopt.solve equals the adjoint of
nsopt.sensitivity (part 1), for an LCP (q, M) and friction contact (q, W, mu), eagerly and under
jax.jit. Skips cleanly without jax; CI installs the extra (.ci/run) and runs it."""

from __future__ import annotations

import numpy as np
import pytest

import nsopt
from nsopt import generate

from conftest import need_extra

need_extra("jax")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
jax.config.update("jax_enable_x64", True)
import nsopt.jax as nj  # noqa: E402


def test_grad_lcp_wrt_q_and_M():
    p, _ = generate.lcp(8, seed=3)
    rng = np.random.default_rng(0)
    c = rng.standard_normal(8)

    def loss(q, M):
        out = nj.solve(p, {"q": q, "M": M}, method="lemke", tol=1e-12)
        return jnp.sum(c * out["z"]) + 0.5 * jnp.sum(out["w"] ** 2)

    gq, gM = jax.grad(loss, argnums=(0, 1))(jnp.asarray(p.q), jnp.asarray(p.M))
    sol = nsopt.solve(p, method="lemke", tol=1e-12)
    G = nsopt.sensitivity(p, sol).vjp(z=c, w=sol.w)
    np.testing.assert_allclose(np.asarray(gq), G["q"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(gM), G["M"], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("jit", [False, True])
def test_grad_friction_wrt_q_W_mu(jit):
    p, _ = generate.friction_contact(4, 3, seed=1)
    c = np.random.default_rng(1).standard_normal(p.size)

    def loss(q, W, mu):
        out = nj.solve(p, {"q": q, "W": W, "mu": mu}, method="nsn-ac", tol=1e-12)
        return jnp.sum(c * out["r"]) + jnp.sum(out["u"] ** 2)

    grad = jax.grad(loss, argnums=(0, 1, 2))
    if jit:
        grad = jax.jit(grad)
    g = grad(jnp.asarray(p.q), jnp.asarray(p.W), jnp.asarray(p.mu))
    sol = nsopt.solve(p, method="nsn-ac", tol=1e-12)
    G = nsopt.sensitivity(p, sol).vjp(r=c, u=2 * sol.u)
    for got, want in zip(g, (G["q"], G["W"], G["mu"])):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)


def test_values_and_bad_input():
    p, _ = generate.friction_contact(3, 2, seed=0)
    out = nj.solve(p, {"q": jnp.asarray(p.q)}, method="nsn-ac", tol=1e-12)
    np.testing.assert_allclose(np.asarray(out["r"]), nsopt.solve(p, method="nsn-ac", tol=1e-12).r, atol=1e-13)
    with pytest.raises(nsopt.ProblemError, match="is not a field"):
        nj.solve(p, {"M": jnp.eye(6)})
    with pytest.raises(nsopt.ProblemError, match="has shape"):
        nj.solve(p, {"q": jnp.ones(3)})


# ---- JAX as JAX users expect (issue 30, item 8)
MURTY = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])


def test_integer_inputs_give_floating_outputs():
    """Before: [1 2] (the output took the input's integer dtype)."""
    out = nj.solve(MURTY, {"q": jnp.array([-5, -6])}, method="lemke")
    assert out["z"].dtype == jnp.float64
    np.testing.assert_allclose(np.asarray(out["z"]), [4 / 3, 7 / 3], rtol=1e-14)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_vmap_is_a_loop_of_solves(mode):
    p, _ = generate.friction_contact(3, 3, seed=2)
    qs = jnp.stack([jnp.asarray(p.q) * s for s in (0.5, 1.0, 1.5)])
    f = lambda q: nj.solve(p, {"q": q}, method="nsn-ac", tol=1e-12, mode=mode)["r"]
    batched = jax.vmap(f)(qs)
    for k in range(3):
        np.testing.assert_allclose(np.asarray(batched[k]), nsopt.solve(p.replace(q=np.asarray(qs[k])), method="nsn-ac",
                                                                       tol=1e-12).r, atol=1e-12)
    g = jax.vmap(jax.grad(lambda q: jnp.sum(f(q) ** 2)))(qs)
    assert g.shape == qs.shape and np.all(np.isfinite(np.asarray(g)))


def test_forward_mode_jvp_jacfwd_and_reverse_agree_with_the_sensitivity():
    p, _ = generate.friction_contact(3, 3, seed=1)
    sol = nsopt.solve(p, method="nsn-ac", tol=1e-12)
    s = nsopt.sensitivity(p, sol)
    f = lambda q, mu: nj.solve(p, {"q": q, "mu": mu}, method="nsn-ac", tol=1e-12, mode="forward")["r"]
    q, mu = jnp.asarray(p.q), jnp.asarray(p.mu)
    dq = jnp.asarray(np.random.default_rng(0).standard_normal(p.size))
    _, tan = jax.jvp(f, (q, mu), (dq, jnp.zeros_like(mu)))
    np.testing.assert_allclose(np.asarray(tan), s.jvp(q=np.asarray(dq))["r"], rtol=1e-10, atol=1e-12)
    Jf = jax.jacfwd(f)(q, mu)
    Jr = jax.jacrev(lambda q: nj.solve(p, {"q": q}, method="nsn-ac", tol=1e-12, mode="reverse")["r"])(q)
    np.testing.assert_allclose(np.asarray(Jf), s.jacobian("q")["r"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(Jr), np.asarray(Jf), rtol=1e-10, atol=1e-12)
    g = jax.grad(lambda q: jnp.sum(f(q, mu) ** 2))(q)
    np.testing.assert_allclose(np.asarray(g), s.vjp(r=2 * sol.r)["q"], rtol=1e-10, atol=1e-12)


def test_hessian_where_meaningful_and_refused_elsewhere():
    loss = lambda q: jnp.sum(nj.solve(MURTY, {"q": q}, method="lemke", tol=1e-12)["z"] ** 2)
    H = jax.hessian(loss)(jnp.array([-5.0, -6.0]))       # z = -M^-1 q on this piece: 2 M^-T M^-1
    Mi = np.linalg.inv(np.asarray(MURTY.M))
    np.testing.assert_allclose(np.asarray(H), 2 * Mi.T @ Mi, rtol=1e-10)
    lossM = lambda M: jnp.sum(nj.solve(MURTY, {"M": M}, method="lemke", tol=1e-12)["z"] ** 2)
    with pytest.raises(nsopt.NotDifferentiable, match="second derivatives"):
        jax.hessian(lossM)(jnp.asarray(MURTY.M))


def test_typed_errors_for_data_that_is_not_differentiable():
    p, _ = generate.friction_contact(2, 3, seed=0)
    with pytest.raises(nsopt.ProblemError, match="dim: is not differentiable data"):
        nj.solve(p, {"dim": 3})
    with pytest.raises(nsopt.ProblemError, match="complex numbers"):
        nj.solve(p, {"q": jnp.asarray(p.q) * (1 + 1j)})
    with pytest.raises(nsopt.ProblemError, match="real numbers"):
        nj.solve(p, {"q": np.array(["a"] * 6)})
    with pytest.raises(nsopt.OptionError, match="mode must be one of"):
        nj.solve(p, {"q": jnp.asarray(p.q)}, mode="both")


def test_nan_cotangent_names_the_loss():
    loss = lambda q: jnp.sum(nj.solve(MURTY, {"q": q}, method="lemke", mode="reverse")["z"] * jnp.nan)
    with pytest.raises(Exception, match="cotangent of this solution variable, from the loss"):
        jax.grad(loss)(jnp.array([-5.0, -6.0]))


def test_non_unique_solution_is_refused_unless_asked():
    p = nsopt.LCP([[1.0, 1.0], [1.0, 1.0]], [-1.0, -1.0])           # qp: the middle of the segment z1 + z2 = 1
    loss = lambda q, **kw: jnp.sum(nj.solve(p, {"q": q}, method="qp", tol=1e-12, **kw)["z"] * jnp.array([1.0, 2.0]))
    with pytest.raises(Exception, match="move along the solution set"):
        jax.grad(loss)(jnp.array([-1.0, -1.0]))
    g = jax.grad(lambda q: loss(q, singular="min-norm"))(jnp.array([-1.0, -1.0]))
    assert np.all(np.isfinite(np.asarray(g)))
    gs = jax.grad(lambda q: loss(q, select="min-norm"))(jnp.array([-1.0, -1.0]))   # z = -(q1 + q2)/4 (1, 1) near q1 = q2
    np.testing.assert_allclose(np.asarray(gs), [-0.75, -0.75], rtol=1e-12)
