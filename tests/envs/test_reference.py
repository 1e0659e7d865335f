"""simple_reference: parity with jaxmarl 0.2.0 and mpe2, action encoding, scripted policy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxmarl.environments.mpe import SimpleReferenceMPE
from jaxmarl.environments.mpe.simple import State as RefState

from jaxmarl_accel.envs import make

STEPS = 25
SEEDS = 4
NAMES = ("agent_0", "agent_1")


def _rollout(env, params, key, scripted=False):
    """One episode: initial state, then per step actions, final obs [T, 2, 21], rewards [T, 2]."""
    key_reset, key_steps = jax.random.split(key)
    _, state0 = env.reset(key_reset, params)

    def body(state, key):
        key_act, key_step = jax.random.split(key)
        if scripted:
            actions = env.heuristic_action(key_act, state, params)
        else:
            actions = env.random_action(key_act)
        _, state, reward, _, truncated, info = env.step(key_step, state, actions, params)
        return state, (actions, info["final_obs"], reward, truncated)

    _, out = jax.lax.scan(body, state0, jax.random.split(key_steps, STEPS))
    return state0, out


@pytest.mark.parametrize("continuous", [False, True])
def test_parity_with_jaxmarl(continuous):
    env, params = make("simple_reference", continuous_actions=continuous)
    ref = SimpleReferenceMPE(action_type="Continuous" if continuous else "Discrete")

    def both(key):
        state0, (actions, obs, reward, _) = _rollout(env, params, key)
        ref_state = RefState(p_pos=state0.pos, p_vel=state0.vel, c=jnp.zeros((2, 10)),
                             done=jnp.array(False), step=jnp.array(0), goal=state0.goal)

        def ref_body(state, a):
            act = {name: a[i] for i, name in enumerate(NAMES)}
            ref_obs, state, ref_rew, _, _ = ref.step_env(key, state, act)
            return state, (ref_obs, ref_rew)

        _, (ref_obs, ref_rew) = jax.lax.scan(ref_body, ref_state, actions)
        return obs, reward, ref_obs, ref_rew

    keys = jax.random.split(jax.random.PRNGKey(3), SEEDS)
    obs, reward, ref_obs, ref_rew = jax.jit(jax.vmap(both))(keys)
    for i, name in enumerate(NAMES):
        np.testing.assert_allclose(obs[..., i, :], ref_obs[name], atol=1e-5)
        np.testing.assert_allclose(reward[..., i], ref_rew[name], atol=1e-5)


def test_parity_with_mpe2():
    from mpe2 import simple_reference_v3

    env, params = make("simple_reference")
    rollout = jax.jit(_rollout, static_argnums=0)
    for seed in range(2):
        state0, (actions, obs, reward, _) = rollout(env, params, jax.random.PRNGKey(seed))
        ref = simple_reference_v3.parallel_env(max_cycles=STEPS)
        ref.reset(seed=seed)
        world = ref.unwrapped.world
        for entity, p in zip(world.entities, np.asarray(state0.pos, np.float64), strict=True):
            entity.state.p_pos = p.copy()
        for i, agent in enumerate(world.agents):  # agent i knows the goal of the other
            agent.goal_b = world.landmarks[int(state0.goal[1 - i])]
        for t in range(STEPS):
            ref_obs, ref_rew, _, _, _ = ref.step(
                {name: int(actions[t, i]) for i, name in enumerate(NAMES)})
            for i, name in enumerate(NAMES):
                np.testing.assert_allclose(obs[t, i], ref_obs[name], atol=1e-5)
                np.testing.assert_allclose(reward[t, i], ref_rew[name], atol=1e-5)


def test_discrete_encoding_and_spec():
    env, params = make("simple_reference")
    assert env.spec.action_sizes == (50, 50) and env.spec.obs_dim == 21
    _, state = env.reset(jax.random.PRNGKey(0), params)
    # agent 0: move +x (2), say 7 -> 37; agent 1: no move, say 3 -> 15
    obs, state, *_ = jax.jit(env.step)(jax.random.PRNGKey(1), state, jnp.array([37, 15]),
                                       params)
    np.testing.assert_array_equal(state.comm, np.eye(10)[[7, 3]])
    np.testing.assert_array_equal(obs[0, -10:], np.eye(10)[3])  # each hears the other
    np.testing.assert_array_equal(obs[1, -10:], np.eye(10)[7])
    assert float(state.vel[0, 0]) > 0 and float(state.vel[0, 1]) == 0.0
    np.testing.assert_array_equal(state.vel[1], 0.0)
    with pytest.raises(ValueError, match="local_ratio"):
        make("simple_reference", local_ratio=1.5)


def test_heuristic_beats_random():
    env, params = make("simple_reference")

    def returns(key):
        scripted = _rollout(env, params, key, scripted=True)[1][2].sum(0)
        random = _rollout(env, params, key)[1][2].sum(0)
        return scripted, random

    keys = jax.random.split(jax.random.PRNGKey(0), 64)
    scripted, random = jax.jit(jax.vmap(returns))(keys)
    assert bool((scripted.mean(0) > 0.5 * random.mean(0)).all())  # loses < half as much
