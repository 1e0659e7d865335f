"""GAE against a direct loop over the steps, PPO's clipped loss against eq. 7 written out."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.algos.on_policy import losses

GAE = jax.jit(losses.gae)  # gamma and lambda traced: one compilation for every example


def gae_loop(reward, value, next_value, terminated, ended, gamma, lam):
    """Schulman et al. 2016, eq. 16, one step at a time from the rollout's end."""
    steps = reward.shape[0]
    advantages = np.zeros_like(reward)
    later = np.zeros_like(reward[0])
    for t in reversed(range(steps)):
        delta = reward[t] + gamma * (1 - terminated[t]) * next_value[t] - value[t]
        later = delta + gamma * lam * (1 - ended[t]) * later
        advantages[t] = later
    return advantages


@settings(deadline=None, max_examples=20)
@given(seed=st.integers(0, 2**16), gamma=st.floats(0.0, 1.0), lam=st.floats(0.0, 1.0))
def test_gae_matches_a_direct_loop(seed, gamma, lam):
    rng = np.random.default_rng(seed)
    shape = (7, 3, 2)  # [T, E, N]
    reward, value, next_value = (rng.normal(size=shape).astype(np.float32) for _ in range(3))
    ended = (rng.random((7, 3, 1)) < 0.3).astype(np.float32)
    terminated = ended * (rng.random((7, 3, 1)) < 0.5)
    got = GAE(reward, value, next_value, terminated,
                                                       ended, gamma, lam)
    want = gae_loop(reward, value, next_value, np.broadcast_to(terminated, shape),
                    np.broadcast_to(ended, shape), gamma, lam)
    np.testing.assert_allclose(got.advantages, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got.returns, want + value, rtol=1e-5, atol=1e-5)


def test_lambda_one_gives_n_step_returns_bootstrapped_at_truncation():
    reward = np.array([1.0, 2.0, 3.0, 4.0], np.float32)[:, None]
    value = np.array([4.0, 9.0, 1.0, 6.0], np.float32)[:, None]
    # the next step's value where the episode runs on; the true last state's at the end
    next_value = np.array([9.0, 5.0, 6.0, 7.0], np.float32)[:, None]
    ended = np.array([0, 1, 0, 0], np.float32)[:, None]  # step 1 truncated: bootstrap 5
    got = losses.gae(reward, value, next_value, np.zeros_like(ended), ended, 0.5, 1.0)
    want = [1 + 0.5 * (2 + 0.5 * 5), 2 + 0.5 * 5, 3 + 0.5 * (4 + 0.5 * 7), 4 + 0.5 * 7]
    np.testing.assert_allclose(got.returns[:, 0], want)
    terminated = losses.gae(reward, value, next_value, ended, ended, 0.5, 1.0)
    np.testing.assert_allclose(terminated.returns[:2, 0], [1 + 0.5 * 2, 2])


@pytest.mark.parametrize("clip_eps", [0.1, 0.2])
def test_ppo_clip_loss_is_equation_7(clip_eps):
    key_new, key_old, key_adv = jax.random.split(jax.random.PRNGKey(0), 3)
    log_prob = jax.random.normal(key_new, (64,)) * 0.3
    old = jax.random.normal(key_old, (64,)) * 0.3
    advantage = jax.random.normal(key_adv, (64,))
    got = jax.jit(losses.ppo_clip_loss, static_argnums=3)(log_prob, old, advantage, clip_eps)
    r = np.exp(np.asarray(log_prob) - np.asarray(old))
    a = np.asarray(advantage)
    want = -np.mean(np.minimum(r * a, np.clip(r, 1 - clip_eps, 1 + clip_eps) * a))
    np.testing.assert_allclose(got.loss, want, rtol=1e-5)
    np.testing.assert_allclose(got.clip_fraction, np.mean(np.abs(r - 1) > clip_eps))
    # no gradient through the clipped side: d/dlogp is -A r where unclipped or improving
    grad = jax.grad(lambda lp: losses.ppo_clip_loss(lp, old, advantage, clip_eps).loss)(log_prob)
    active = (r * a) <= (np.clip(r, 1 - clip_eps, 1 + clip_eps) * a)
    np.testing.assert_allclose(grad, np.where(active, -a * r / 64, 0.0), rtol=1e-4, atol=1e-7)


def test_a2c_and_value_losses():
    log_prob = jnp.array([-1.0, -2.0])
    advantage = jnp.array([2.0, -1.0])
    assert losses.a2c_policy_loss(log_prob, advantage) == pytest.approx(-(-2.0 + 2.0) / 2)
    assert losses.value_loss(jnp.array([1.0, 3.0]), jnp.array([0.0, 1.0])) == pytest.approx(2.5)
    np.testing.assert_allclose(jnp.mean(losses.standardize(jnp.arange(5.0))), 0.0, atol=1e-6)


def test_value_norm_is_a_debiased_running_mean_and_deviation():
    mu, sigma = losses.value_norm_moments(losses.value_norm_init())
    assert (float(mu), float(sigma)) == (0.0, 1.0)  # nothing seen: the identity
    batches = [np.random.default_rng(k).normal(3.0 * k, 1.0 + k, (5, 4)) for k in range(4)]
    update = jax.jit(losses.value_norm_update, static_argnums=2)
    norm, beta = losses.value_norm_init(), 0.5
    for batch in batches:
        norm = update(norm, jnp.asarray(batch, jnp.float32), beta)
    weights = np.asarray([beta ** (len(batches) - 1 - k) for k in range(len(batches))])
    weights /= weights.sum()  # the debiased EMA is a weighted mean of the batches
    mean = sum(w * b.mean() for w, b in zip(weights, batches, strict=True))
    mean_sq = sum(w * (b ** 2).mean() for w, b in zip(weights, batches, strict=True))
    mu, sigma = losses.value_norm_moments(norm)
    np.testing.assert_allclose(mu, mean, rtol=1e-5)
    np.testing.assert_allclose(sigma, np.sqrt(mean_sq - mean ** 2), rtol=1e-5)
    tiny = losses.value_norm_update(losses.value_norm_init(), jnp.full((3,), 7.0))
    np.testing.assert_allclose(losses.value_norm_moments(tiny), (7.0, 0.1), rtol=1e-5)
