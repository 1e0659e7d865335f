"""Episode collection and the trainer's episode round, on a toy env with known episodes.

The toy env counts steps: its observation is the step count ``t`` (both agents), every step
gives reward 1, and an episode terminates when ``t`` reaches a length drawn at reset
(``limit`` in ``[2, T + 3)``), so some episodes terminate and the others are truncated at
``T``. A toy recurrent learner always plays action 1 and counts its calls in its carry.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.envs.base import Env, EnvSpec
from jaxmarl_accel.trainer.steps import collect_episodes, example_episode, team_reward

T, N, A = 6, 2, 3


def toy_env() -> tuple[Env, dict]:
    spec = EnvSpec(name="toy", num_agents=N, obs_dim=1, obs_sizes=(1,) * N, teams=("agent",) * N,
                   continuous=False, num_actions=A, action_sizes=(A,) * N, act_dim=A,
                   episode_length=T, shared_reward=True, state_dim=2,
                   episode_stats=("ticks",))
    params = {"episode_length": T}

    def reset(key, params):
        state = {"t": jnp.zeros((), jnp.int32),
                 "limit": jax.random.randint(key, (), 2, T + 3)}
        return observe(state), state

    def observe(state):
        return jnp.full((N, 1), state["t"], jnp.float32)

    def state_of(state, params):
        return jnp.stack([state["t"], state["limit"]]).astype(jnp.float32)

    def avail_actions(state, params):
        return jnp.ones((N, A), bool).at[:, 0].set(state["t"] % 2 == 0)

    def step(key, state, actions, params):
        moved = {"t": state["t"] + 1, "limit": state["limit"]}
        terminated = moved["t"] >= moved["limit"]
        truncated = (moved["t"] >= T) & ~terminated
        fresh_obs, fresh = reset(key, params)
        ended = terminated | truncated
        new = jax.tree.map(lambda a, b: jnp.where(ended, a, b), fresh, moved)
        info = {"final_obs": observe(moved), "final_state": state_of(moved, params),
                "final_avail_actions": avail_actions(moved, params),
                "state": state_of(new, params), "avail_actions": avail_actions(new, params),
                "ticks": jnp.float32(1.0)}
        return (observe(new), new, jnp.ones((N,), jnp.float32), terminated, truncated, info)

    env = Env(spec=spec, reset=reset, step=step, scripted_action=lambda k, s, p: jnp.ones(
        (N,), jnp.int32), random_action=lambda k: jnp.ones((N,), jnp.int32),
        avail_actions=avail_actions, state_of=state_of)
    return env, params


def toy_algo() -> Algo:
    def policy(explore):
        def act(state, carry, key, obs, avail):
            chex.assert_shape((obs, avail), [(N, 1), (N, A)])
            action = jnp.ones((N,), jnp.int32)
            return action, jax.nn.one_hot(action, A), {"calls": carry["calls"] + 1}

        return act

    return Algo(init=lambda key: {}, policy=policy, update=None, action_dim=A,
                initial_carry=lambda: {"calls": jnp.zeros((N,), jnp.int32)})


def test_episodes_hold_their_steps_then_the_final_observation():
    env, params = toy_env()
    batch = jax.jit(lambda key: collect_episodes(env, params, toy_algo(), {}, key, 16, True))(
        jax.random.PRNGKey(0))
    ep = jax.device_get(batch.episodes)
    chex.assert_shape(ep.obs, (16, T + 1, N, 1))
    chex.assert_shape((ep.state, ep.avail, ep.action, ep.reward, ep.filled),
                      [(16, T + 1, 2), (16, T + 1, N, A), (16, T + 1, N), (16, T + 1),
                       (16, T + 1)])
    lengths = np.asarray(batch.lengths)
    limits = ep.state[:, 0, 1].astype(int)
    np.testing.assert_array_equal(lengths, np.minimum(limits, T))
    assert (lengths < T).any() and (lengths == T).any(), "both endings are exercised"
    for e, length in enumerate(lengths):
        np.testing.assert_array_equal(ep.filled[e], np.arange(T + 1) < length)
        np.testing.assert_array_equal(ep.reward[e], ep.filled[e])
        np.testing.assert_array_equal(ep.action[e], ep.filled[e][:, None] * np.ones(N))
        terminated = limits[e] <= T
        np.testing.assert_array_equal(ep.terminated[e],
                                      terminated * (np.arange(T + 1) == length - 1))
        # rows 0..len hold t = row index: row len is the pre-reset observation
        np.testing.assert_array_equal(ep.obs[e, : length + 1, 0, 0], np.arange(length + 1))
        np.testing.assert_array_equal(ep.state[e, : length + 1, 0], np.arange(length + 1))
        np.testing.assert_array_equal(ep.avail[e, : length + 1, 0, 0],
                                      np.arange(length + 1) % 2 == 0)
        np.testing.assert_array_equal(np.asarray(batch.returns)[e], [length] * N)
        assert float(batch.stats["ticks"][e]) == length


def test_binary_observations_are_stored_as_uint8():
    env, _ = toy_env()
    ep = example_episode(env.spec)
    assert ep.obs.dtype == jnp.float32
    binary = example_episode(env.spec.__class__(**{**env.spec.__dict__,
                                                   "binary_observations": True}))
    assert binary.obs.dtype == jnp.uint8 and binary.state.dtype == jnp.uint8


@pytest.mark.parametrize("shared", [True, False])
def test_team_reward(shared):
    env, _ = toy_env()
    spec = env.spec.__class__(**{**env.spec.__dict__, "shared_reward": shared})
    reward = jnp.asarray([[1.0, 1.0], [2.0, 3.0]])
    expected = [1.0, 2.0] if shared else [2.0, 5.0]
    np.testing.assert_allclose(team_reward(spec, reward), expected)


@pytest.mark.parametrize("block_steps", [1, 2, 4, 5])
def test_early_stopping_blocks_collect_the_same_episodes_under_a_seed_vmap(block_steps):
    """The block loop (stopped once every episode has ended, the rows after it filled as
    the remaining steps would have) gives exactly the episodes of one scan of T steps,
    for one seed and vmapped over seeds whose episodes end at different steps."""
    env, params = toy_env()

    def collect(key, block):
        return collect_episodes(env, params, toy_algo(), {}, key, 2, True, block_steps=block)

    keys = jax.random.split(jax.random.PRNGKey(1), 8)
    scan = jax.jit(jax.vmap(lambda key: collect(key, None)))(keys)
    blocks = jax.jit(jax.vmap(lambda key: collect(key, block_steps)))(keys)
    chex.assert_trees_all_equal(jax.device_get(scan), jax.device_get(blocks))
    one = jax.jit(lambda key: collect(key, block_steps))(keys[0])
    chex.assert_trees_all_equal(jax.device_get(one), jax.tree.map(lambda x: x[0], scan))
    longest = np.asarray(scan.lengths).max(axis=1)  # per seed
    last_block_start = (-(-T // block_steps) - 1) * block_steps
    assert longest.min() <= last_block_start, "some seed stops before its last block"
