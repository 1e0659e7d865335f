"""simple_speaker_listener: parity with jaxmarl 0.2.0 and mpe2, shapes, scripted policy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxmarl.environments.mpe import SimpleSpeakerListenerMPE

from jaxmarl_accel.envs import make
from jaxmarl_accel.envs.policies import random_policy
from tests.envs.mpe_reference import compare_jaxmarl, compare_mpe2, our_rollouts, seed_keys
from tests.envs.rollouts import STEPS, episode

SEEDS = 4


def _goal(ref_state, state):
    return ref_state.replace(goal=state.goal[0])


def _mpe2_goal(world, state):
    world.agents[0].goal_b = world.landmarks[int(state.goal[0])]


def _ref_actions(continuous):
    if continuous:
        return lambda actions: {"speaker_0": actions[0, :3], "listener_0": actions[1]}
    return lambda actions: {"speaker_0": actions[0], "listener_0": actions[1]}


@pytest.mark.parametrize("continuous", [False, True])
def test_parity_with_jaxmarl(continuous):
    env, params = make("simple_speaker_listener", continuous_actions=continuous)
    ref = SimpleSpeakerListenerMPE(action_type="Continuous" if continuous else "Discrete")
    keys = jax.random.split(jax.random.PRNGKey(1), SEEDS)
    ours = our_rollouts(env, params, keys, random_policy(env))
    compare_jaxmarl(ref, ours, inject=_goal,
                    ref_actions=_ref_actions(continuous)).assert_close(atol=1e-5)
    assert ours.truncated[:, -1].all() and not ours.truncated[:, :-1].any()


def test_parity_with_mpe2():
    from mpe2 import simple_speaker_listener_v4

    env, params = make("simple_speaker_listener")
    ref = simple_speaker_listener_v4.parallel_env(max_cycles=STEPS)
    ours = our_rollouts(env, params, seed_keys([0, 1]), random_policy(env))
    compare_mpe2(ref, ours, inject=_mpe2_goal).assert_close(atol=1e-5)


def test_spec_shapes_and_vmap():
    env, params = make("simple_speaker_listener", episode_length=7)
    spec = env.spec
    assert spec.teams == ("speaker", "listener")
    assert spec.obs_sizes == (3, 11) and spec.obs_dim == 11
    assert spec.action_sizes == (3, 5) and spec.num_actions == 5
    keys = jax.random.split(jax.random.PRNGKey(0), 6)
    obs, state = jax.jit(jax.vmap(env.reset, (0, None)))(keys, params)
    assert obs.shape == (6, 2, 11) and obs.dtype == jnp.float32
    actions = jax.vmap(env.random_action)(keys)
    assert actions.shape == (6, 2) and bool((actions[:, 0] < 3).all())
    step = jax.jit(jax.vmap(env.step, (0, 0, 0, None)))
    obs, state, reward, terminated, truncated, info = step(keys, state, actions, params)
    assert reward.shape == (6, 2) and truncated.shape == (6,) and not terminated.any()
    assert info["final_obs"].shape == (6, 2, 11)


def test_speaker_comm_reaches_listener_observation():
    env, params = make("simple_speaker_listener")
    _, state = env.reset(jax.random.PRNGKey(3), params)
    for said in range(3):
        obs, *_ = env.step(jax.random.PRNGKey(0), state, jnp.array([said, 0]), params)
        np.testing.assert_array_equal(obs[1, -3:], np.eye(3)[said])


def test_scripted_beats_random():
    env, params = make("simple_speaker_listener")

    def first_return(key, scripted):
        return episode(env, params, key, jnp.full(2, scripted)).rewards[:, 0].sum()

    keys = jax.random.split(jax.random.PRNGKey(0), 128)
    run = jax.jit(jax.vmap(first_return, (0, None)))
    scripted, random = run(keys, True).mean(), run(keys, False).mean()
    assert scripted > 0.5 * random  # returns are negative: scripted loses < half as much


@pytest.mark.parametrize("continuous", [False, True])
def test_silent_policy_sits_between_random_and_communicating(continuous):
    from jaxmarl_accel.envs.evaluate import evaluate_policy
    from jaxmarl_accel.envs.mpe.simple_speaker_listener import silent_policy
    from jaxmarl_accel.envs.policies import scripted_policy

    env, params = make("simple_speaker_listener", continuous_actions=continuous)
    key = jax.random.PRNGKey(3)
    returns = {name: float(evaluate_policy(env, params, fn, key, 256).agent_returns[1])
               for name, fn in (("random", random_policy(env)), ("silent", silent_policy(env)),
                                ("talking", scripted_policy(env)))}
    assert returns["random"] < returns["silent"] < returns["talking"]
    # hearing the goal is worth a lot: the silent listener loses much more
    assert returns["talking"] > 0.6 * returns["silent"]
