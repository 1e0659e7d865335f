"""The per-agent maths under jit: critic target (paper 001 eq. 2), critic loss, actor loss
(eq. 1), the temperature step (SAC eq. 18) and the raveled optimizer step, against hand
computations in numpy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxmarl_accel.algos import losses, networks
from jaxmarl_accel.algos.distributions import make_distribution
from tests.algos.helpers import SMALL, agent_slice, make_spec, mlp_numpy

B, N, OBS, ACT, C = 16, 3, 4, 2, 2
GAMMA = 0.95


def _critics(num_critics: int = C):
    mlp = networks.MLP((8, 8), 1)
    params = jax.vmap(lambda k: mlp.init(k, jnp.zeros((1, N * (OBS + ACT)))))(
        jax.random.split(jax.random.key(0), num_critics))
    return mlp, params


def _data(key: jax.Array):
    k = jax.random.split(key, 5)
    return (jax.random.normal(k[0], (B, N, OBS)), jax.random.uniform(k[1], (B, N, ACT)),
            jax.random.normal(k[2], (B,)), (jax.random.uniform(k[3], (B,)) < 0.3) * 1.0,
            jax.random.uniform(k[4], (B,)))


def _q_numpy(params, obs, action) -> np.ndarray:
    """``[C, B]`` Q-values of every critic on the centralized input, in numpy."""
    x = np.concatenate([np.asarray(obs).reshape(B, -1), np.asarray(action).reshape(B, -1)], -1)
    num = jax.tree.leaves(params)[0].shape[0]
    return np.stack([mlp_numpy(agent_slice(params, c), x)[:, 0] for c in range(num)])


@pytest.mark.parametrize("alpha", [0.0, 0.2])
def test_critic_target_matches_a_hand_computation(alpha):
    mlp, params = _critics()
    next_obs, next_action, reward, done, bonus = _data(jax.random.key(1))
    target = jax.jit(losses.critic_target, static_argnums=(0, 8))
    y = target(mlp, params, next_obs, next_action, reward, done, bonus, jnp.float32(alpha), GAMMA)
    q_next = np.min(_q_numpy(params, next_obs, next_action), axis=0)
    expected = reward + GAMMA * (1 - done) * (q_next + alpha * np.asarray(bonus))
    assert y.shape == (B,)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def test_critic_loss_matches_a_hand_computation():
    mlp, params = _critics()
    obs, action, y, _, weights = _data(jax.random.key(2))
    loss, (td, q_mean) = jax.jit(losses.critic_loss, static_argnums=1)(
        params, mlp, obs, action, weights, y)
    q = _q_numpy(params, obs, action)
    np.testing.assert_allclose(loss, np.mean(weights * np.sum((q - y) ** 2, 0)), rtol=1e-5)
    np.testing.assert_allclose(td, np.mean(np.abs(q - y), 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(q_mean, np.mean(q), rtol=1e-5, atol=1e-6)


def _actor_setup():
    spec = make_spec(N, True, obs_dim=OBS, act_dim=ACT)
    dist = make_distribution(spec, SMALL, "sigmoid")
    actor_mlp = networks.MLP((8,), dist.out_size)
    actor = actor_mlp.init(jax.random.key(3), jnp.zeros((1, OBS)))
    critic_mlp, critics = _critics(1)
    obs, action, _, _, _ = _data(jax.random.key(4))
    return dist, actor_mlp, actor, critic_mlp, critics, obs, action


def _actor_loss(actor, action, index, setup, reg=0.1):
    dist, actor_mlp, _, critic_mlp, critics, obs, _ = setup
    mask = jnp.ones((ACT,), bool)
    return losses.actor_loss(actor, actor_mlp, critic_mlp, dist, index, mask, critics, obs,
                             action, jax.random.key(5), jnp.float32(0.0), reg)


def test_actor_loss_matches_a_hand_computation():
    setup = _actor_setup()
    _, _, actor, _, critics, obs, action = setup
    loss, entropy = jax.jit(lambda a: _actor_loss(a, action, jnp.int32(1), setup))(actor)
    out = mlp_numpy(actor, np.asarray(obs)[:, 1])
    joint = np.array(action)
    joint[:, 1] = 1 / (1 + np.exp(-out))
    expected = -np.mean(_q_numpy(critics, obs, joint)[0]) + 0.1 * np.mean(out**2)
    np.testing.assert_allclose(loss, expected, rtol=1e-5, atol=1e-6)
    assert float(entropy) == 0.0  # deterministic actors have no entropy bonus


@pytest.mark.parametrize("index", [0, 2])
def test_actor_loss_gradient_flows_only_through_the_own_action(index):
    setup = _actor_setup()
    _, _, actor, _, _, _, action = setup
    grads = jax.jit(jax.grad(lambda a, act: _actor_loss(a, act, jnp.int32(index), setup)[0],
                             argnums=(0, 1)))
    d_actor, d_action = grads(actor, action)
    d_action = np.asarray(d_action)
    assert np.all(d_action[:, index] == 0.0), "the replayed own action must not enter"
    assert np.any(d_action[:, [j for j in range(N) if j != index]] != 0.0)
    assert any(np.any(np.asarray(g) != 0.0) for g in jax.tree.leaves(d_actor))
    changed = action.at[:, index].set(1.0 - action[:, index])  # the loss ignores it
    np.testing.assert_array_equal(_actor_loss(actor, action, index, setup)[0],
                                  _actor_loss(actor, changed, index, setup)[0])


def test_sac_temperature_step_follows_eq_18_and_fixed_keeps_alpha():
    tx = optax.adam(0.01)
    log_alpha = jnp.float32(np.log(0.05))
    opt = tx.init(log_alpha)
    step = jax.jit(losses.sac_temperature_step, static_argnums=0)
    # entropy above its target: the first Adam step lowers log(alpha) by the learning rate
    new, _ = step(tx, log_alpha, opt, jnp.float32(0.3), jnp.float32(-2.0))
    np.testing.assert_allclose(new, log_alpha - 0.01, rtol=1e-5)
    new, _ = step(tx, log_alpha, opt, jnp.float32(-3.0), jnp.float32(-2.0))
    np.testing.assert_allclose(new, log_alpha + 0.01, rtol=1e-5)
    kept, kept_opt = jax.jit(losses.fixed_temperature, static_argnums=0)(
        tx, log_alpha, opt, jnp.float32(0.3), jnp.float32(-2.0))
    assert kept == log_alpha and jax.tree.structure(kept_opt) == jax.tree.structure(opt)


@pytest.mark.parametrize("clip", [None, 0.5])
def test_flat_step_equals_the_step_on_the_pytree(clip):
    tx = losses.make_optimizer(0.01, clip)
    _, params = _critics()
    grads = jax.tree.map(lambda p: 3.0 * jnp.ones_like(p), params)
    flat_opt = losses.flat_init(tx, params)
    new, _ = jax.jit(losses.flat_step, static_argnums=0)(tx, grads, flat_opt, params)
    updates, _ = tx.update(grads, tx.init(params), params)
    for a, b in zip(jax.tree.leaves(new), jax.tree.leaves(optax.apply_updates(params, updates)),
                    strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
