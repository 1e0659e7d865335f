"""The per-agent maths under jit: critic target (paper 001 eq. 2), critic loss, actor loss
(eq. 1), the temperature step (SAC eq. 18) and the raveled optimizer step, against hand
computations in numpy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxmarl_accel.algos import ActorCriticConfig, networks
from jaxmarl_accel.algos.actor_critic import losses
from jaxmarl_accel.algos.actor_critic.config import ACTOR_STEPS
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


def _actor_loss(actor, action, index, setup, reg=0.1, form="full"):
    dist, actor_mlp, _, critic_mlp, critics, obs, _ = setup
    mask = jnp.ones((ACT,), bool)
    return losses.actor_loss(actor, actor_mlp, critic_mlp, dist, index, mask, critics, obs,
                             action, jax.random.key(5), jnp.float32(0.0), reg,
                             losses.JOINT_Q[form])


def test_joint_q_forms_are_named_by_the_config_values():
    assert tuple(losses.JOINT_Q) == ACTOR_STEPS
    assert losses.JOINT_Q["linear"] is losses.joint_q_linear
    assert losses.JOINT_Q["full"] is losses.joint_q_full


@pytest.mark.parametrize("form", ACTOR_STEPS)
def test_actor_loss_matches_a_hand_computation(form):
    setup = _actor_setup()
    _, _, actor, _, critics, obs, action = setup
    loss, entropy = jax.jit(lambda a: _actor_loss(a, action, jnp.int32(1), setup,
                                                  form=form))(actor)
    out = mlp_numpy(actor, np.asarray(obs)[:, 1])
    joint = np.array(action)
    joint[:, 1] = 1 / (1 + np.exp(-out))
    expected = -np.mean(_q_numpy(critics, obs, joint)[0]) + 0.1 * np.mean(out**2)
    np.testing.assert_allclose(loss, expected, rtol=1e-5, atol=1e-6)
    assert float(entropy) == 0.0  # deterministic actors have no entropy bonus


@pytest.mark.parametrize("form", ACTOR_STEPS)
@pytest.mark.parametrize("index", [0, 2])
@pytest.mark.fast_cases(1)
def test_actor_loss_gradient_flows_only_through_the_own_action(index, form):
    """The replayed own action does not enter (the linear form cancels it up to rounding)."""
    setup = _actor_setup()
    _, _, actor, _, _, _, action = setup
    loss = lambda a, act, index=index: _actor_loss(a, act, jnp.int32(index), setup, form=form)
    d_actor, d_action = jax.jit(jax.grad(lambda a, act: loss(a, act)[0], argnums=(0, 1)))(
        actor, action)
    d_action = np.asarray(d_action)
    others = d_action[:, [j for j in range(N) if j != index]]
    tol = 0.0 if form == "full" else 1e-6 * np.max(np.abs(others))
    assert np.all(np.abs(d_action[:, index]) <= tol), "the replayed own action must not enter"
    assert np.any(others != 0.0)
    assert any(np.any(np.asarray(g) != 0.0) for g in jax.tree.leaves(d_actor))
    changed = action.at[:, index].set(1.0 - action[:, index])  # the loss ignores it
    np.testing.assert_allclose(loss(actor, action)[0], loss(actor, changed)[0],
                               rtol=0.0 if form == "full" else 1e-6)


# every kind of own action: (continuous, continuous_policy, straight_through, default head)
HEADS = [(False, "auto", True, "sigmoid"), (False, "auto", False, "sigmoid"),
         (True, "sigmoid", True, "sigmoid"), (True, "gaussian", True, "gaussian"),
         (True, "gumbel_softmax", True, "sigmoid")]


@pytest.mark.parametrize("num_critics", [1, 2])
@pytest.mark.parametrize(("continuous", "policy", "straight_through", "default"), HEADS)
@pytest.mark.fast_cases(1)
def test_linear_actor_loss_equals_the_full_one(continuous, policy, straight_through, default,
                                               num_critics):
    """``joint_q_linear`` gives ``joint_q_full``'s actor loss and actor gradient within 1e-5
    relative, for every action head, one critic or the min of two, first and last agent."""
    n, obs_dim, batch = 5, 7, 64
    spec = make_spec(n, continuous, obs_dim=obs_dim,
                     action_sizes=None if continuous else (5, 3, 5, 4, 5))
    config = ActorCriticConfig(continuous_policy=policy, straight_through=straight_through)
    dist = make_distribution(spec, config, default)
    actor_mlp, critic_mlp = networks.MLP((64, 64), dist.out_size), networks.MLP((64, 64), 1)
    actor = actor_mlp.init(jax.random.key(0), jnp.zeros((1, obs_dim)))
    critics = networks.init_critics(critic_mlp, jax.random.key(1), 1, num_critics,
                                    n * (obs_dim + dist.action_dim))
    critics = agent_slice(critics, 0)
    obs = jax.random.normal(jax.random.key(2), (batch, n, obs_dim))
    action = jax.random.uniform(jax.random.key(3), (batch, n, dist.action_dim))

    def loss(actor, form, index, mask):
        return losses.actor_loss(actor, actor_mlp, critic_mlp, dist, index, mask, critics, obs,
                                 action, jax.random.key(4), jnp.float32(0.05), 1e-3,
                                 losses.JOINT_Q[form])

    # one program per form; the agent and its action mask are traced arguments
    grad = jax.jit(jax.value_and_grad(loss, has_aux=True), static_argnums=1)
    for index in (0, n - 1):
        mask = spec.action_mask[index] if not continuous else jnp.ones(dist.action_dim, bool)
        (full, full_bonus), full_grad = grad(actor, "full", jnp.int32(index), mask)
        (linear, linear_bonus), linear_grad = grad(actor, "linear", jnp.int32(index), mask)
        np.testing.assert_allclose(linear, full, rtol=1e-5)
        np.testing.assert_array_equal(linear_bonus, full_bonus)
        for a, b in zip(jax.tree.leaves(linear_grad), jax.tree.leaves(full_grad), strict=True):
            scale = np.max(np.abs(np.asarray(b)))
            assert scale > 0.0
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * scale)


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
