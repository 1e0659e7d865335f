"""envs.rollout: one scan of a policy in an env, against a step-by-step Python loop."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.envs import make
from jaxmarl_accel.envs.policies import EnvObs, available_actions, random_policy, scripted_policy
from jaxmarl_accel.envs.rollout import rollout


@pytest.mark.parametrize("continuous", [False, True])
def test_rollout_matches_a_python_loop(continuous):
    env, params = make("simple_tag", num_predators=2, num_prey=1, num_obstacles=1,
                       episode_length=4, continuous_actions=continuous)
    policy, key, steps = scripted_policy(env), jax.random.PRNGKey(3), 6
    out = jax.jit(rollout, static_argnums=(0, 2, 4))(env, params, policy, key, steps)
    key_reset, key_steps = jax.random.split(key)
    obs, state = jax.jit(env.reset)(key_reset, params)
    step = jax.jit(env.step)
    act_fn = jax.jit(lambda key, obs, state: policy(
        (), (), key, EnvObs(obs, state, params), available_actions(env, state, params))[0])
    for t, step_key in enumerate(jax.random.split(key_steps, steps)):
        key_act, key_step = jax.random.split(step_key)
        np.testing.assert_array_equal(out.obs[t], obs)
        np.testing.assert_array_equal(out.states.pos[t], state.pos)
        action = act_fn(key_act, obs, state)
        obs, state, reward, terminated, truncated, info = step(key_step, state, action,
                                                               params)
        np.testing.assert_allclose(out.actions[t], action, atol=1e-6)
        np.testing.assert_allclose(out.rewards[t], reward, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out.final_obs[t], info["final_obs"], rtol=1e-5, atol=1e-6)
        assert bool(out.truncated[t]) == bool(truncated) and not out.terminated[t]


@pytest.mark.parametrize("continuous", [False, True])
def test_axes_dtypes_and_auto_reset(continuous):
    env, params = make("simple_spread", num_agents=3, episode_length=3,
                       continuous_actions=continuous)
    out = jax.jit(rollout, static_argnums=(0, 2, 4))(
        env, params, random_policy(env), jax.random.PRNGKey(0), 7)
    spec = env.spec
    assert out.obs.shape == out.final_obs.shape == (7, 3, spec.obs_dim)
    assert out.actions.shape == (7, *spec.action_shape)
    assert out.actions.dtype == (jnp.float32 if continuous else jnp.int32)
    assert out.rewards.shape == (7, 3) and out.rewards.dtype == jnp.float32
    assert out.terminated.shape == out.truncated.shape == (7,)
    assert np.flatnonzero(out.truncated).tolist() == [2, 5]
    assert out.states.step.tolist() == [0, 1, 2, 0, 1, 2, 0]
    # without a reset the next step's observation is the one this step reached
    same = np.all(np.asarray(out.obs[1:]) == np.asarray(out.final_obs[:-1]), axis=(1, 2))
    assert same.tolist() == [not t for t in np.asarray(out.truncated[:-1])]


def test_vmap_over_keys_equals_one_key_at_a_time():
    env, params = make("simple_speaker_listener")
    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    run = jax.jit(lambda k: rollout(env, params, random_policy(env), k, 5))
    batch = jax.jit(jax.vmap(run))(keys)
    assert batch.rewards.shape == (3, 5, 2) and batch.states.pos.shape[:2] == (3, 5)
    for i, key in enumerate(keys):
        one = run(key)
        jax.tree.map(lambda a, b, i=i: np.testing.assert_allclose(a[i], b, atol=1e-6),
                     batch, one)


def test_params_are_traced_and_bad_steps_raise():
    env, params = make("simple_spread", num_agents=2)
    run = jax.jit(lambda p: rollout(env, p, random_policy(env), jax.random.PRNGKey(0), 4))
    short = run(params.replace(episode_length=jnp.int32(2)))
    assert np.asarray(short.truncated).tolist() == [False, True, False, True]
    with pytest.raises(ValueError, match="num_steps"):
        rollout(env, params, random_policy(env), jax.random.PRNGKey(0), 0)
