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
