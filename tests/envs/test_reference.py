"""simple_reference: parity with jaxmarl 0.2.0 and mpe2, action encoding, scripted policy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxmarl.environments.mpe import SimpleReferenceMPE

from jaxmarl_accel.envs import make
from jaxmarl_accel.envs.policies import random_policy, scripted_policy
from jaxmarl_accel.envs.rollout import rollout
from tests.envs.mpe_reference import compare_jaxmarl, compare_mpe2, our_rollouts, seed_keys
from tests.envs.rollouts import STEPS

SEEDS = 4


def _goal(ref_state, state):
    return ref_state.replace(goal=state.goal)


def _mpe2_goal(world, state):
    for i, agent in enumerate(world.agents):  # agent i knows the goal of the other
        agent.goal_b = world.landmarks[int(state.goal[1 - i])]


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.fast_cases(1)
def test_parity_with_jaxmarl(continuous):
    env, params = make("simple_reference", continuous_actions=continuous)
    ref = SimpleReferenceMPE(action_type="Continuous" if continuous else "Discrete")
    keys = jax.random.split(jax.random.PRNGKey(3), SEEDS)
    ours = our_rollouts(env, params, keys, random_policy(env))
    compare_jaxmarl(ref, ours, inject=_goal).assert_close(atol=1e-5)


def test_parity_with_mpe2():
    from mpe2 import simple_reference_v3

    env, params = make("simple_reference")
    ref = simple_reference_v3.parallel_env(max_cycles=STEPS)
    ours = our_rollouts(env, params, seed_keys([0, 1]), random_policy(env))
    compare_mpe2(ref, ours, inject=_mpe2_goal).assert_close(atol=1e-5)


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


def test_scripted_beats_random():
    env, params = make("simple_reference")

    def returns(key):
        scripted = rollout(env, params, scripted_policy(env), key, STEPS).rewards.sum(0)
        random = rollout(env, params, random_policy(env), key, STEPS).rewards.sum(0)
        return scripted, random

    keys = jax.random.split(jax.random.PRNGKey(0), 64)
    scripted, random = jax.jit(jax.vmap(returns))(keys)
    assert bool((scripted.mean(0) > 0.5 * random.mean(0)).all())  # loses < half as much
