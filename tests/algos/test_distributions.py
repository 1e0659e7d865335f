"""Action distributions under jit: shapes, valid actions, what is stored, entropy bonuses."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos.distributions import make_distribution
from tests.algos.helpers import SMALL, make_spec

B, N = 64, 3


def _discrete(straight_through: bool = True):
    spec = make_spec(N, continuous=False, action_sizes=(5, 3, 4))
    dist = make_distribution(spec, dataclasses.replace(SMALL, straight_through=straight_through))
    out = jax.random.normal(jax.random.key(0), (B, N, dist.out_size))
    return spec, dist, out, spec.action_mask


@pytest.mark.parametrize(("policy", "default", "out_size"), [
    ("auto", "sigmoid", 2), ("auto", "gaussian", 4), ("sigmoid", "gaussian", 2),
    ("gaussian", "sigmoid", 4), ("gumbel_softmax", "sigmoid", 2),
])
def test_make_distribution_picks_the_continuous_head(policy, default, out_size):
    spec = make_spec(N, continuous=True, act_dim=2)
    dist = make_distribution(spec, dataclasses.replace(SMALL, continuous_policy=policy), default)
    assert (dist.out_size, dist.action_dim) == (out_size, 2)
    assert make_distribution(make_spec(N, False), SMALL, default).action_dim == 5


@pytest.mark.parametrize("straight_through", [True, False])
def test_discrete_sample_is_a_masked_relaxed_categorical(straight_through):
    _, dist, out, mask = _discrete(straight_through)
    action, entropy = jax.jit(dist.sample)(out, mask, jax.random.key(1))
    assert action.shape == (B, N, 5) and entropy.shape == (B, N)
    np.testing.assert_allclose(np.sum(np.asarray(action), -1), 1.0, rtol=1e-5)
    assert np.all(np.abs(np.asarray(action)[np.broadcast_to(~mask, action.shape)]) < 1e-6)
    if straight_through:  # one-hot forward value
        assert set(np.unique(np.round(np.asarray(action), 6))) <= {0.0, 1.0}
    p = jax.nn.softmax(jnp.where(mask, out, -1e9))
    expected = -jnp.sum(jnp.where(mask, p * jnp.log(jnp.where(mask, p, 1.0)), 0.0), -1)
    np.testing.assert_allclose(entropy, expected, rtol=1e-5, atol=1e-6)
    grad = jax.grad(lambda o: jnp.sum(dist.sample(o, mask, jax.random.key(1))[0] * out))(out)
    assert np.any(np.asarray(grad) != 0.0)  # differentiable through the soft sample


def test_discrete_explore_and_exploit_store_the_executed_one_hot():
    spec, dist, out, mask = _discrete()
    idx, vec = jax.jit(dist.explore)(out, mask, jax.random.key(2))
    assert idx.dtype == jnp.int32 and idx.shape == (B, N)
    assert np.all(np.asarray(idx) < np.asarray(spec.action_sizes))
    np.testing.assert_array_equal(vec, jax.nn.one_hot(idx, 5))
    greedy, _ = jax.jit(dist.exploit)(out, mask)
    np.testing.assert_array_equal(greedy, jnp.argmax(jnp.where(mask, out, -jnp.inf), -1))
    reg = jax.jit(dist.reg)(out, mask)
    m = np.broadcast_to(np.asarray(mask), out.shape)
    np.testing.assert_allclose(reg, np.mean(np.asarray(out)[m] ** 2), rtol=1e-5)


def test_deterministic_head_is_a_sigmoid_with_clipped_noise():
    spec = make_spec(N, continuous=True, act_dim=2)
    dist = make_distribution(spec, SMALL, "sigmoid")
    out = 3.0 * jax.random.normal(jax.random.key(0), (B, N, 2))
    mask = jnp.ones((N, 2), bool)
    action, bonus = jax.jit(dist.sample)(out, mask, jax.random.key(1))
    np.testing.assert_allclose(action, jax.nn.sigmoid(out), rtol=1e-6)
    np.testing.assert_array_equal(bonus, 0.0)
    env_action, stored = jax.jit(dist.explore)(out, mask, jax.random.key(2))
    np.testing.assert_array_equal(env_action, stored)
    assert np.all((np.asarray(env_action) >= 0) & (np.asarray(env_action) <= 1))
    assert not np.allclose(env_action, action)
    np.testing.assert_allclose(jax.jit(dist.reg)(out, mask), jnp.mean(out**2), rtol=1e-6)


def test_squashed_gaussian_bonus_is_minus_log_density():
    spec = make_spec(N, continuous=True, act_dim=2)
    dist = make_distribution(spec, SMALL, "gaussian")
    mean = 0.3 * jax.random.normal(jax.random.key(0), (B, N, 2))
    log_std = jnp.full((B, N, 2), -1.0)
    out = jnp.concatenate([mean, log_std], -1)
    action, bonus = jax.jit(dist.sample)(out, jnp.ones((N, 2), bool), jax.random.key(1))
    a = np.asarray(action, np.float64)
    assert np.all((a > 0) & (a < 1))
    u = np.arctanh(2 * a - 1)  # a = (tanh(u) + 1) / 2
    std = np.exp(-1.0)
    log_n = -0.5 * ((u - np.asarray(mean)) / std) ** 2 - np.log(std) - 0.5 * np.log(2 * np.pi)
    log_p = np.sum(log_n - np.log(0.5 * (1 - np.tanh(u) ** 2)), -1)
    np.testing.assert_allclose(bonus, -log_p, rtol=1e-3, atol=1e-3)
    greedy, _ = jax.jit(dist.exploit)(out, jnp.ones((N, 2), bool))
    np.testing.assert_allclose(greedy, 0.5 * (jnp.tanh(mean) + 1), rtol=1e-6)


def test_gumbel_softmax_continuous_head_executes_soft_samples():
    spec = make_spec(N, continuous=True, act_dim=5)
    dist = make_distribution(spec, dataclasses.replace(SMALL, continuous_policy="gumbel_softmax"))
    out = jax.random.normal(jax.random.key(0), (B, N, 5))
    mask = jnp.ones((N, 5), bool)
    env_action, stored = jax.jit(dist.explore)(out, mask, jax.random.key(1))
    np.testing.assert_array_equal(env_action, stored)
    np.testing.assert_allclose(np.sum(np.asarray(env_action), -1), 1.0, rtol=1e-5)
    sample, _ = jax.jit(dist.sample)(out, mask, jax.random.key(1))
    np.testing.assert_array_equal(sample, env_action)
    greedy, _ = jax.jit(dist.exploit)(out, mask)
    np.testing.assert_allclose(greedy, jax.nn.softmax(out), rtol=1e-6)
