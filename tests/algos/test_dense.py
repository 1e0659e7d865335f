"""The dense layer with the seed-batched kernel gradient (:mod:`jaxmarl_accel.algos.dense`)
against ``flax.linen.Dense`` and JAX's own autodiff."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos.dense import Dense, dense, kernel_gradient


def _loss(apply, params, x):
    y = apply(params, x)
    return jnp.sum(jnp.sin(y) * y)


@pytest.mark.parametrize("features", [64, 5, 1])
def test_same_parameters_forward_and_gradients_as_flax(features):
    x = jax.random.normal(jax.random.PRNGKey(1), (32, 3, 18))
    ours, flax_dense = Dense(features), nn.Dense(features)
    params = ours.init(jax.random.PRNGKey(0), x)
    reference = flax_dense.init(jax.random.PRNGKey(0), x)
    assert jax.tree.map(jnp.shape, params) == jax.tree.map(jnp.shape, reference)
    np.testing.assert_array_equal(params["params"]["kernel"], reference["params"]["kernel"])
    np.testing.assert_array_equal(ours.apply(params, x), flax_dense.apply(params, x))
    grads = jax.jit(jax.grad(lambda p, x: _loss(ours.apply, p, x), argnums=(0, 1)))(params, x)
    expected = jax.grad(lambda p, x: _loss(flax_dense.apply, p, x), argnums=(0, 1))(params, x)
    for got, want in zip(jax.tree.leaves(grads), jax.tree.leaves(expected), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seeds", [1, 3])
@pytest.mark.parametrize("widths", [(18, 64), (64, 5)])
def test_gradients_under_the_seed_vmap(seeds, widths):
    """Every seed's gradients equal autodiff's of the plain product (both transposes of the
    batched rule: the narrower input, the narrower output), one vmap and two nested."""
    k_in, k_out = widths
    keys = jax.random.split(jax.random.PRNGKey(2), 3)
    x = jax.random.normal(keys[0], (seeds, 40, 2, k_in))
    kernel = jax.random.normal(keys[1], (seeds, k_in, k_out))
    bias = jax.random.normal(keys[2], (seeds, k_out))

    def plain(x, kernel, bias):
        return jnp.sum(jnp.tanh(x @ kernel + bias))

    def ours(x, kernel, bias):
        return jnp.sum(jnp.tanh(dense(x, kernel, bias)))

    got = jax.jit(jax.vmap(jax.grad(ours, argnums=(0, 1, 2))))(x, kernel, bias)
    want = jax.vmap(jax.grad(plain, argnums=(0, 1, 2)))(x, kernel, bias)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    nested = jax.jit(jax.vmap(jax.vmap(jax.grad(ours, argnums=1))))(
        x[None].repeat(2, 0), kernel[None].repeat(2, 0), bias[None].repeat(2, 0))
    np.testing.assert_allclose(nested[1], want[1], rtol=1e-4, atol=1e-4)


def test_batched_rule_is_one_library_product():
    """Under a vmap of 4 the kernel gradient is a plain batched product of a materialized
    transpose, not a dot that contracts the middle axis of both operands."""
    x, g = jnp.ones((4, 256, 64)), jnp.ones((4, 256, 32))
    text = jax.jit(jax.vmap(kernel_gradient)).lower(x, g).as_text()
    assert "optimization_barrier" in text
    np.testing.assert_allclose(jax.vmap(kernel_gradient)(x, g), jnp.full((4, 64, 32), 256.0))
