"""simple_speaker_listener: parity with jaxmarl 0.2.0 and mpe2, shapes, scripted policy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxmarl.environments.mpe import SimpleSpeakerListenerMPE
from jaxmarl.environments.mpe.simple import State as RefState

from jaxmarl_accel.envs import make

STEPS = 25
SEEDS = 4


def _rollout(env, params, key):
    """Random-action episode: initial state, actions [T, ...], final obs [T, N, D], rewards."""
    key_reset, key_steps = jax.random.split(key)
    _, state0 = env.reset(key_reset, params)

    def body(state, key):
        key_act, key_step = jax.random.split(key)
        actions = env.random_action(key_act)
        _, state, reward, _, truncated, info = env.step(key_step, state, actions, params)
        return state, (actions, info["final_obs"], reward, truncated)

    _, out = jax.lax.scan(body, state0, jax.random.split(key_steps, STEPS))
    return state0, out


def _ref_actions(actions, continuous):
    if continuous:
        return {"speaker_0": actions[0, :3], "listener_0": actions[1]}
    return {"speaker_0": actions[0], "listener_0": actions[1]}


@pytest.mark.parametrize("continuous", [False, True])
def test_parity_with_jaxmarl(continuous):
    env, params = make("simple_speaker_listener", continuous_actions=continuous)
    ref = SimpleSpeakerListenerMPE(action_type="Continuous" if continuous else "Discrete")

    def both(key):
        state0, (actions, obs, reward, truncated) = _rollout(env, params, key)
        ref_state = RefState(p_pos=state0.pos, p_vel=state0.vel, c=jnp.zeros((2, 3)),
                             done=jnp.array(False), step=jnp.array(0), goal=state0.goal[0])

        def ref_body(state, a):
            ref_obs, state, ref_rew, _, _ = ref.step_env(key, state, _ref_actions(a, continuous))
            return state, (ref_obs, ref_rew)

        _, (ref_obs, ref_rew) = jax.lax.scan(ref_body, ref_state, actions)
        return obs, reward, truncated, ref_obs, ref_rew

    keys = jax.random.split(jax.random.PRNGKey(1), SEEDS)
    obs, reward, truncated, ref_obs, ref_rew = jax.jit(jax.vmap(both))(keys)
    np.testing.assert_allclose(obs[..., 0, :3], ref_obs["speaker_0"], atol=1e-5)
    np.testing.assert_array_equal(obs[..., 0, 3:], 0.0)
    np.testing.assert_allclose(obs[..., 1, :], ref_obs["listener_0"], atol=1e-5)
    for i, name in enumerate(["speaker_0", "listener_0"]):
        np.testing.assert_allclose(reward[..., i], ref_rew[name], atol=1e-5)
    assert truncated[:, -1].all() and not truncated[:, :-1].any()


def test_parity_with_mpe2():
    from mpe2 import simple_speaker_listener_v4

    env, params = make("simple_speaker_listener")
    for seed in range(2):
        state0, (actions, obs, reward, _) = jax.jit(_rollout, static_argnums=0)(
            env, params, jax.random.PRNGKey(seed))
        ref = simple_speaker_listener_v4.parallel_env(max_cycles=STEPS)
        ref.reset(seed=seed)
        world = ref.unwrapped.world
        for entity, p in zip(world.entities, np.asarray(state0.pos, np.float64), strict=True):
            entity.state.p_pos = p.copy()
            entity.state.p_vel = np.zeros(2)
        world.agents[0].goal_b = world.landmarks[int(state0.goal[0])]
        for t in range(STEPS):
            ref_obs, ref_rew, _, _, _ = ref.step(
                {"speaker_0": int(actions[t, 0]), "listener_0": int(actions[t, 1])})
            np.testing.assert_allclose(obs[t, 0, :3], ref_obs["speaker_0"], atol=1e-5)
            np.testing.assert_allclose(obs[t, 1], ref_obs["listener_0"], atol=1e-5)
            np.testing.assert_allclose(reward[t, 0], ref_rew["speaker_0"], atol=1e-5)
            np.testing.assert_allclose(reward[t, 1], ref_rew["listener_0"], atol=1e-5)


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


def test_heuristic_beats_random():
    env, params = make("simple_speaker_listener")

    def episode(key, scripted):
        key_reset, key_steps = jax.random.split(key)
        _, state = env.reset(key_reset, params)

        def body(carry, key):
            state, ret = carry
            key_act, key_step = jax.random.split(key)
            actions = jnp.where(scripted, env.heuristic_action(key_act, state, params),
                                env.random_action(key_act))
            _, state, reward, *_ = env.step(key_step, state, actions, params)
            return (state, ret + reward[0]), None

        init = (state, jnp.zeros(()))
        return jax.lax.scan(body, init, jax.random.split(key_steps, STEPS))[0][1]

    keys = jax.random.split(jax.random.PRNGKey(0), 128)
    run = jax.jit(jax.vmap(episode, (0, None)))
    scripted, random = run(keys, True).mean(), run(keys, False).mean()
    assert scripted > 0.5 * random  # returns are negative: scripted loses < half as much


@pytest.mark.parametrize("continuous", [False, True])
def test_silent_policy_sits_between_random_and_communicating(continuous):
    from jaxmarl_accel.envs.evaluate import evaluate_policy, heuristic_policy, random_policy
    from jaxmarl_accel.envs.simple_speaker_listener import silent_policy

    env, params = make("simple_speaker_listener", continuous_actions=continuous)
    key = jax.random.PRNGKey(3)
    returns = {name: float(evaluate_policy(env, params, fn, key, 256).agent_returns[1])
               for name, fn in (("random", random_policy(env)), ("silent", silent_policy(
                   continuous)), ("talking", heuristic_policy(env)))}
    assert returns["random"] < returns["silent"] < returns["talking"]
    # hearing the goal is worth a lot: the silent listener loses much more
    assert returns["talking"] > 0.6 * returns["silent"]
