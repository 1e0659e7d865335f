"""Action distributions under jit: shapes, valid actions, what is stored, entropy bonuses, and
the distrax-based samples, log-probs and entropies against direct formulas."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos.distributions import (
    FactoredCategorical,
    make_distribution,
    masked_categorical,
    squashed_gaussian,
)
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


def test_discrete_explore_is_the_gumbel_argmax_and_never_picks_masked_actions():
    _, dist, out, mask = _discrete()
    z = jnp.where(mask, out, -1e9)
    keys = jax.random.split(jax.random.key(3), 256)
    idx, _ = jax.jit(jax.vmap(dist.explore, in_axes=(None, None, 0)))(out, mask, keys)
    direct = jax.jit(jax.vmap(
        lambda k: jnp.argmax(z + jax.random.gumbel(k, z.shape), -1).astype(jnp.int32)))(keys)
    np.testing.assert_array_equal(idx, direct)  # the same draw as argmax(logits + g)
    assert idx.dtype == jnp.int32
    m = np.broadcast_to(np.asarray(mask), out.shape)
    assert np.all(np.take_along_axis(m[None], np.asarray(idx)[..., None], -1))
    # one row's frequencies follow the masked softmax
    freq = np.bincount(np.asarray(idx)[:, 0, 1], minlength=5) / len(keys)
    p = np.asarray(jax.nn.softmax(z[0, 1]))
    assert np.all(freq[~np.asarray(mask[1])] == 0)
    np.testing.assert_allclose(freq, p, atol=0.1)


def test_masked_categorical_log_probs_entropy_and_mode_match_the_masked_softmax():
    _, _, out, mask = _discrete()
    z = jnp.where(mask, out, -1e9)
    actions = jnp.arange(5).reshape(5, 1, 1)

    @jax.jit
    def stats(o):
        pi = masked_categorical(o, mask)
        return pi.log_prob(actions), pi.entropy(), pi.mode(), pi.probs

    log_prob, entropy, mode, probs = stats(out)
    logp = jax.nn.log_softmax(z)
    m = np.broadcast_to(np.asarray(mask), out.shape)
    np.testing.assert_allclose(np.moveaxis(np.asarray(log_prob), 0, -1)[m], np.asarray(logp)[m],
                               rtol=1e-5, atol=1e-6)
    assert np.all(np.asarray(probs)[~m] == 0.0)  # masked actions have probability 0
    p = np.exp(np.asarray(logp, np.float64))
    expected = -np.sum(np.where(m, p * np.asarray(logp, np.float64), 0.0), -1)
    np.testing.assert_allclose(entropy, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(mode, jnp.argmax(z, -1))
    assert mode.dtype == jnp.int32


def _squashed_out(mean_scale: float, log_std: float):
    mean = mean_scale * jax.random.normal(jax.random.key(0), (B, N, 2))
    out = jnp.concatenate([mean, jnp.full((B, N, 2), log_std)], -1)
    return mean, out


def _log_pi(eps: np.ndarray, u: np.ndarray, log_std: np.ndarray) -> np.ndarray:
    """log pi(a) of a = (tanh(u) + 1) / 2, u = mean + std eps, in float64."""
    log_n = -0.5 * eps**2 - log_std - 0.5 * np.log(2 * np.pi)
    # log |da/du| = log(1/2) + log(1 - tanh(u)^2) = log(1/2) + 2 (log 2 - |u| - log1p(e^-2|u|))
    log_det = np.log(0.5) + 2 * (np.log(2) - np.abs(u) - np.log1p(np.exp(-2 * np.abs(u))))
    return np.sum(log_n - log_det, -1)


@pytest.mark.parametrize(("mean_scale", "log_std"), [(0.3, -1.0), (3.0, 1.0), (0.5, 10.0)])
def test_squashed_gaussian_sample_and_bonus_match_the_formula(mean_scale, log_std):
    spec = make_spec(N, continuous=True, act_dim=2)
    dist = make_distribution(spec, SMALL, "gaussian")
    mean, out = _squashed_out(mean_scale, log_std)
    key = jax.random.key(1)
    action, bonus = jax.jit(dist.sample)(out, jnp.ones((N, 2), bool), key)
    clipped = np.clip(log_std, SMALL.log_std_min, SMALL.log_std_max)  # 10.0 is clipped

    @jax.jit
    def direct(o, k):
        m, s = o[..., :2], jnp.clip(o[..., 2:], SMALL.log_std_min, SMALL.log_std_max)
        e = jax.random.normal(k, m.shape)
        u = m + jnp.exp(s) * e
        return 0.5 * (jnp.tanh(u) + 1.0), e, u

    want, eps, u = direct(out, key)
    np.testing.assert_array_equal(action, want)  # the same draw
    expected = -_log_pi(np.asarray(eps, np.float64), np.asarray(u, np.float64), clipped)
    assert np.all(np.isfinite(np.asarray(bonus)))
    np.testing.assert_allclose(bonus, expected, rtol=1e-4, atol=2e-4)
    env_action, stored = jax.jit(dist.explore)(out, jnp.ones((N, 2), bool), key)
    np.testing.assert_array_equal(env_action, action)
    np.testing.assert_array_equal(stored, action)


def test_squashed_gaussian_log_prob_inverts_the_squashing():
    mean, out = _squashed_out(0.5, -0.5)
    u = mean + 0.3 * jax.random.normal(jax.random.key(2), mean.shape)
    a = 0.5 * (jnp.tanh(u) + 1.0)
    log_prob = jax.jit(lambda o, x: squashed_gaussian(o, 2, -5.0, 2.0).log_prob(x))(out, a)
    u64 = np.arctanh(2 * np.asarray(a, np.float64) - 1)
    eps = (u64 - np.asarray(mean, np.float64)) / np.exp(-0.5)
    np.testing.assert_allclose(log_prob, _log_pi(eps, u64, -0.5), rtol=1e-3, atol=1e-3)


def test_squashed_gaussian_bonus_gradient_is_finite_when_saturated():
    spec = make_spec(N, continuous=True, act_dim=2)
    dist = make_distribution(spec, SMALL, "gaussian")
    mean, _ = _squashed_out(1.0, -5.0)
    mean = jnp.sign(mean) * (10.0 + jnp.abs(mean))  # tanh(u) rounds to +-1 in float32
    out = jnp.concatenate([mean, jnp.full_like(mean, -5.0)], -1)
    grad = jax.jit(jax.grad(lambda o: jnp.sum(dist.sample(o, None, jax.random.key(1))[1])))(out)
    assert np.all(np.isfinite(np.asarray(grad)))
    # d(-log pi)/d mean = d log|da/du| / du = -2 tanh(u): pushes the mean back from saturation
    np.testing.assert_allclose(grad[..., :2], -2.0 * np.sign(np.asarray(out[..., :2])),
                               rtol=1e-5)


def test_gumbel_softmax_continuous_bonus_is_the_softmax_entropy():
    spec = make_spec(N, continuous=True, act_dim=5)
    dist = make_distribution(spec, dataclasses.replace(SMALL, continuous_policy="gumbel_softmax"))
    out = jax.random.normal(jax.random.key(0), (B, N, 5))
    key = jax.random.key(1)
    soft, entropy = jax.jit(dist.sample)(out, jnp.ones((N, 5), bool), key)
    np.testing.assert_array_equal(soft, jax.nn.softmax(out + jax.random.gumbel(key, out.shape)))
    p = np.asarray(jax.nn.softmax(out), np.float64)
    np.testing.assert_allclose(entropy, -np.sum(p * np.log(p), -1), rtol=1e-5)


def test_factored_categorical_is_the_joint_categorical_of_independent_factors():
    factors = (3, 4, 2)
    logits = jax.random.normal(jax.random.key(0), (5, sum(factors)))
    dist = FactoredCategorical(logits, factors)
    # the joint index's logits are the factors' logits summed over their outer product
    joint = (logits[:, :3, None, None] + logits[:, None, 3:7, None]
             + logits[:, None, None, 7:]).reshape(5, 24)
    log_joint = jax.nn.log_softmax(joint)
    every = jnp.broadcast_to(jnp.arange(24)[:, None], (24, 5))
    np.testing.assert_allclose(jax.jit(jax.vmap(dist.log_prob))(every), log_joint.T, atol=1e-5)
    np.testing.assert_allclose(dist.entropy(), -jnp.sum(jnp.exp(log_joint) * log_joint, -1),
                               atol=1e-5)
    np.testing.assert_array_equal(dist.mode(), jnp.argmax(joint, -1))
    draws = jax.jit(lambda key: FactoredCategorical(logits, factors).sample(
        seed=key, sample_shape=20_000))(jax.random.key(1))
    assert draws.dtype == jnp.int32 and int(draws.min()) >= 0 and int(draws.max()) < 24
    freq = np.stack([np.bincount(np.asarray(draws[:, i]), minlength=24) / 20_000
                     for i in range(5)])
    np.testing.assert_allclose(freq, np.exp(log_joint), atol=0.015)
    action, log_prob = dist.sample_and_log_prob(seed=jax.random.key(2))
    np.testing.assert_allclose(log_prob, dist.log_prob(action), atol=1e-6)
    with pytest.raises(ValueError, match="logits have 8 entries, the factors"):
        FactoredCategorical(logits[:, :8], factors)
