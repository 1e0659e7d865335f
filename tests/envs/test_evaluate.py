"""envs.evaluate: returns of a policy over many episodes, against a Python loop."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.envs import make
from jaxmarl_accel.envs.evaluate import episodes_per_batch, evaluate_policy
from jaxmarl_accel.envs.policies import (
    EnvObs,
    available_actions,
    random_policy,
    scripted_policy,
    state_policy,
)


def _act(env, policy):
    """``policy`` under ``jit`` as ``(key, obs, state, params) -> env_action`` (no memory)."""
    return jax.jit(lambda key, obs, state, params: policy(
        (), (), key, EnvObs(obs, state, params), available_actions(env, state, params))[0])


def _evaluate_modes(env, params, modes, num_episodes=200):
    """Per-agent returns ``[len(modes), N]`` of scripted/random mixes, in one compile.

    ``modes[m][i]`` says whether agent i acts scripted (1) or at random (0) in mix m.
    """

    def per_mode(mode):
        def actions(key, state, params):
            scripted = env.scripted_action(key, state, params)
            return jnp.where(mode.astype(bool), scripted, env.random_action(key))

        policy = state_policy(env, actions)
        return evaluate_policy(env, params, policy, jax.random.PRNGKey(0), num_episodes)

    return np.asarray(jax.vmap(per_mode)(jnp.asarray(modes)).agent_returns)


def test_scripted_policies_beat_random():
    env, params = make("simple_spread", num_agents=3)
    rand, heur = _evaluate_modes(env, params, [[0, 0, 0], [1, 1, 1]]).mean(axis=1)
    assert heur > rand + 10.0  # about -7.3 against -26.6 per agent
    env, params = make("simple_tag")
    both_random, chasers, fleeing = _evaluate_modes(
        env, params, [[0, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 1]])
    assert chasers[0] > both_random[0] + 20.0  # about 56 against 4
    assert fleeing[-1] > both_random[-1] + 8.0  # about -2 against -16


def test_evaluate_policy_matches_a_python_loop():
    env, params = make("simple_spread", num_agents=2, episode_length=4)
    policy = random_policy(env)
    result = evaluate_policy(env, params, policy, jax.random.PRNGKey(5), 3)
    assert result.episode_returns.shape == (3, 2) and result.agent_returns.shape == (2,)
    reset, step, act_fn = jax.jit(env.reset), jax.jit(env.step), _act(env, policy)
    for episode, key in enumerate(jax.random.split(jax.random.PRNGKey(5), 3)):
        key_reset, key = jax.random.split(key)
        obs, state = reset(key_reset, params)
        total = np.zeros(2)
        for _ in range(4):
            key, key_act, key_step = jax.random.split(key, 3)
            act = act_fn(key_act, obs, state, params)
            obs, state, rew, _, _, _ = step(key_step, state, act, params)
            total += np.asarray(rew)
        np.testing.assert_allclose(result.episode_returns[episode], total, rtol=1e-5)
    assert float(result.mean_return) == pytest.approx(float(result.episode_returns.mean()))
    assert _act(env, scripted_policy(env))(key, obs, state, params).shape == (2,)


def test_evaluate_policy_episode_follows_params_not_spec():
    env, params = make("simple_spread", num_agents=2, episode_length=4)
    short = params.replace(episode_length=jnp.int32(2))
    assert env.spec.episode_length == 4  # the make-time default; params hold the live value
    policy, key = random_policy(env), jax.random.PRNGKey(5)
    default = evaluate_policy(env, short, policy, key, 3).episode_returns
    np.testing.assert_array_equal(default, evaluate_policy(env, short, policy, key, 3, 2)
                                  .episode_returns)
    with pytest.raises(ValueError, match="num_steps"):
        jax.jit(lambda p: evaluate_policy(env, p, policy, key, 3).mean_return)(short)


def test_returns_stop_after_the_first_episode_and_stats_are_summed():
    # a tiny hunt whose scripted episodes end early (both agents capture the only stag)
    env, params = make("stag_hunt", num_agents=2, num_stags=1, grid_size=4, episode_length=30)
    policy = scripted_policy(env)
    result = evaluate_policy(env, params, policy, jax.random.PRNGKey(2), 4, num_steps=60)
    assert set(result.stats) == {"captures"} and result.stats["captures"].shape == (4,)
    reset, step, act_fn = jax.jit(env.reset), jax.jit(env.step), _act(env, policy)
    for episode, key in enumerate(jax.random.split(jax.random.PRNGKey(2), 4)):
        key_reset, key = jax.random.split(key)
        obs, state = reset(key_reset, params)
        total, captures = 0.0, 0
        for _ in range(60):
            key, key_act, key_step = jax.random.split(key, 3)
            act = act_fn(key_act, obs, state, params)
            obs, state, rew, term, trunc, info = step(key_step, state, act, params)
            total += float(rew[0])
            captures += int(info["captures"])
            if term or trunc:
                break
        np.testing.assert_allclose(result.episode_returns[episode], total, rtol=1e-6)
        assert int(result.stats["captures"][episode]) == captures
    env, params = make("simple_spread", num_agents=2, episode_length=4)
    assert evaluate_policy(env, params, random_policy(env), jax.random.PRNGKey(0), 2).stats == {}


@pytest.mark.slow
def test_batches_run_the_same_episodes():
    env, params = make("stag_hunt", num_agents=2, num_stags=1, grid_size=4, episode_length=6)
    policy, key = random_policy(env), jax.random.PRNGKey(3)
    whole = evaluate_policy(env, params, policy, key, 5)
    batched = evaluate_policy(env, params, policy, key, 5, batch_size=2)  # 3 batches, 1 padded
    np.testing.assert_allclose(batched.episode_returns, whole.episode_returns, rtol=1e-6)
    np.testing.assert_array_equal(batched.stats["captures"], whole.stats["captures"])
    with pytest.raises(ValueError, match="batch_size"):
        evaluate_policy(env, params, policy, key, 5, batch_size=0)


def test_episodes_per_batch_bounds_agent_pairs():
    assert episodes_per_batch(3, 1000) == 1000
    assert episodes_per_batch(1000, 1000) == 67  # 15 batches, 5 padded episodes
    assert episodes_per_batch(1000, 100) == 50
    assert episodes_per_batch(20000, 4) == 1
