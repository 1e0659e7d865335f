"""Joint policies: learned rows, scripted rows and the action vectors the replay stores."""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

from jaxmarl_accel.algos import ActorCriticConfig, make_algo
from jaxmarl_accel.envs import make
from jaxmarl_accel.envs.policies import (
    action_vector,
    learner_policy,
    random_policy,
    scripted_team,
)


@pytest.mark.parametrize("continuous", [False, True])
def test_action_vector_is_one_hot_or_the_action(continuous):
    env, _ = make("simple_spread", num_agents=3, continuous_actions=continuous)
    if continuous:
        action = jax.random.uniform(jax.random.key(0), (4, 3, env.spec.act_dim))
        np.testing.assert_array_equal(jax.jit(lambda a: action_vector(env, a))(action), action)
    else:
        action = jax.numpy.array([[0, 4, 2]])
        vec = jax.jit(lambda a: action_vector(env, a))(action)
        assert vec.shape == (1, 3, env.spec.num_actions)
        np.testing.assert_array_equal(np.argmax(vec, -1), action)
        np.testing.assert_array_equal(vec.sum(-1), 1.0)


@pytest.mark.parametrize("continuous", [False, True])
def test_prey_scripted_policy_scripts_exactly_the_prey_rows(continuous):
    env, params = make("simple_tag", num_predators=3, num_prey=2, num_obstacles=1,
                       continuous_actions=continuous)
    algo = make_algo("maddpg", env.spec, ActorCriticConfig(hidden_sizes=(8,)))
    algo_state = algo.init(jax.random.key(0))
    obs, env_state = env.reset(jax.random.key(1), params)
    key = jax.random.key(2)
    policy = jax.jit(learner_policy(env, algo, scripted_prey=True, explore=True))
    env_action, action_vec = policy(algo_state, key, obs, env_state, params)
    act_key, prey_key = jax.random.split(key)
    learned, learned_vec = algo.act(algo_state, obs, act_key, True)
    scripted = env.scripted_action(prey_key, env_state, params)
    prey = np.array([team == "prey" for team in env.spec.teams])
    # the policy runs under jit, the references eagerly: equal up to float rounding
    close = functools.partial(np.testing.assert_allclose, rtol=1e-5, atol=1e-6)
    assert prey.sum() == 2
    close(np.asarray(env_action)[prey], np.asarray(scripted)[prey])
    close(np.asarray(env_action)[~prey], np.asarray(learned)[~prey])
    close(np.asarray(action_vec)[prey],
          np.asarray(action_vector(env, scripted))[prey])
    close(np.asarray(action_vec)[~prey], np.asarray(learned_vec)[~prey])
    # without the flag every row is the learners'
    plain = jax.jit(learner_policy(env, algo, scripted_prey=False, explore=True))
    close(
        np.asarray(plain(algo_state, key, obs, env_state, params)[0]),
        np.asarray(learned))


@pytest.mark.parametrize("continuous", [False, True])
def test_scripted_team_replaces_only_that_teams_rows(continuous):
    env, params = make("simple_tag", num_predators=3, num_prey=2, num_obstacles=1,
                       continuous_actions=continuous)
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    mixed = jax.jit(scripted_team(env, random_policy(env), "prey"))
    key = jax.random.PRNGKey(3)
    actions = mixed(key, obs, state, params)
    own_key, scripted_key = jax.random.split(key)
    prey = np.asarray([t == "prey" for t in env.spec.teams])
    expected_prey = env.scripted_action(scripted_key, state, params)
    expected_rest = env.random_action(own_key)
    # jit vs eager rounding of the continuous scripted action: 1 ulp
    np.testing.assert_allclose(np.asarray(actions)[prey], np.asarray(expected_prey)[prey],
                               atol=1e-6)
    np.testing.assert_allclose(np.asarray(actions)[~prey], np.asarray(expected_rest)[~prey],
                               atol=1e-6)
    with pytest.raises(ValueError, match="team 'goalkeeper'"):
        scripted_team(env, random_policy(env), "goalkeeper")


@pytest.mark.parametrize("opponent", ["random", "scripted"])
def test_against_opponents_keeps_the_teams_rows_and_replaces_the_others(opponent):
    from jaxmarl_accel.envs.policies import StepPolicy, against_opponents, team_rows

    env, params = make("tag_gridworld", num_taggers=3, num_runners=2)
    marker = 4  # a learner that always plays action 4 in every row, carrying a step count
    policy = StepPolicy(lambda: 0, lambda algo_state, carry, key, obs, state, params: (
        jax.numpy.full((env.spec.num_agents,), marker, jax.numpy.int32), None, carry + 1))
    step = jax.jit(against_opponents(env, policy, "tagger", opponent))
    obs, state = env.reset(jax.random.key(0), params)
    rows = np.asarray(team_rows(env, "tagger"))
    seen = []
    for i in range(20):
        key = jax.random.key(i)
        actions, carry = step(None, key, obs, state, params, i)
        actions = np.asarray(actions)
        assert carry == i + 1 and (actions[rows] == marker).all()
        other_key = jax.random.split(key)[1]
        expected = (env.random_action(other_key) if opponent == "random"
                    else env.scripted_action(other_key, state, params))
        np.testing.assert_array_equal(actions[~rows], np.asarray(expected)[~rows])
        seen.extend(actions[~rows].tolist())
    assert opponent == "scripted" or len(set(seen)) > 1
    with pytest.raises(ValueError, match="team 'prey': tag_gridworld has teams tagger, runner"):
        against_opponents(env, policy, "prey", opponent)
