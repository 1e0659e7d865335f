"""jaxmarl_accel.trainer.policy: a learner's policy run in an env, with and without scripted
prey, for learners with and without memory, under jit."""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

from jaxmarl_accel.algos import ActorCriticConfig, make_algo
from jaxmarl_accel.envs import make
from jaxmarl_accel.envs.policies import EnvObs, action_vector, available_actions
from jaxmarl_accel.trainer.policy import learner_policy
from tests.algos.value.helpers import SMALL, SMALL_MLP

# the policy runs under jit, the references eagerly: equal up to float rounding
close = functools.partial(np.testing.assert_allclose, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("continuous", [False, True])
def test_prey_scripted_policy_scripts_exactly_the_prey_rows(continuous):
    env, params = make("simple_tag", num_predators=3, num_prey=2, num_obstacles=1,
                       continuous_actions=continuous)
    algo = make_algo("maddpg", env.spec, ActorCriticConfig(hidden_sizes=(8,)))
    algo_state = algo.init(jax.random.key(0))
    obs, env_state = env.reset(jax.random.key(1), params)
    seen, avail = EnvObs(obs, env_state, params), available_actions(env, env_state, params)
    key = jax.random.key(2)
    policy = jax.jit(learner_policy(env, algo, scripted_prey=True, explore=True))
    env_action, action_vec, carry = policy(algo_state, (), key, seen, avail)
    act_key, prey_key = jax.random.split(key)
    learned, learned_vec, _ = algo.policy(True)(algo_state, (), act_key, obs, avail)
    scripted = env.scripted_action(prey_key, env_state, params)
    prey = np.array([team == "prey" for team in env.spec.teams])
    assert prey.sum() == 2 and carry == ()
    close(np.asarray(env_action)[prey], np.asarray(scripted)[prey])
    close(np.asarray(env_action)[~prey], np.asarray(learned)[~prey])
    close(np.asarray(action_vec)[prey], np.asarray(action_vector(env, scripted))[prey])
    close(np.asarray(action_vec)[~prey], np.asarray(learned_vec)[~prey])
    # without the flag every row is the learners', drawn with the same split key
    plain = jax.jit(learner_policy(env, algo, scripted_prey=False, explore=True))
    close(np.asarray(plain(algo_state, (), key, seen, avail)[0]), np.asarray(learned))


def test_a_recurrent_learner_acts_over_the_available_actions_and_carries_its_memory():
    env, params = make("stag_hunt", num_agents=3, num_stags=1, grid_size=5)
    algo = make_algo("qmix", env.spec, SMALL)
    algo_state = algo.init(jax.random.key(0))
    policy = jax.jit(learner_policy(env, algo, scripted_prey=False, explore=False))
    obs, env_state = env.reset(jax.random.key(1), params)
    avail = available_actions(env, env_state, params)
    carry = algo.initial_carry()
    key = jax.random.key(3)
    env_action, action_vec, new_carry = policy(algo_state, carry, key,
                                               EnvObs(obs, env_state, params), avail)
    own, own_vec, own_carry = algo.policy(False)(algo_state, carry, jax.random.split(key)[0],
                                                 obs, avail)
    np.testing.assert_array_equal(env_action, own)
    np.testing.assert_array_equal(action_vec, own_vec)
    np.testing.assert_array_equal(action_vec, action_vector(env, env_action))
    assert np.asarray(avail)[np.arange(3), np.asarray(env_action)].all()
    close(new_carry.hidden, own_carry.hidden)
    assert not np.allclose(new_carry.hidden, carry.hidden)  # the memory moved


def test_every_learner_has_an_initial_carry_the_stateless_ones_empty():
    env, _ = make("simple_spread", num_agents=2)
    assert make_algo("maddpg", env.spec, ActorCriticConfig(hidden_sizes=(8,))).initial_carry() == ()
    assert make_algo("qmix", env.spec, SMALL_MLP).initial_carry() == ()
