"""Policies of an env on the one signature: scripted, random, team mixing, action vectors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.envs import make
from jaxmarl_accel.envs.policies import (
    EnvObs,
    action_vector,
    against_opponents,
    available_actions,
    observing,
    random_policy,
    scripted_policy,
    scripted_team,
    team_rows,
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


def _seen(env, params, key):
    """A reset env's :class:`EnvObs` and available actions."""
    obs, state = env.reset(key, params)
    return EnvObs(obs, state, params), available_actions(env, state, params)


@pytest.mark.parametrize("continuous", [False, True])
def test_scripted_and_random_policies_read_the_env_and_pass_the_carry(continuous):
    env, params = make("simple_tag", num_predators=2, num_prey=1, continuous_actions=continuous)
    seen, avail = _seen(env, params, jax.random.key(0))
    key, carry = jax.random.key(1), {"memory": jnp.arange(3)}
    for policy, expected in ((scripted_policy(env), env.scripted_action(key, seen.state, params)),
                             (random_policy(env), env.random_action(key))):
        env_action, vec, out = jax.jit(policy)((), carry, key, seen, avail)
        np.testing.assert_allclose(env_action, expected, atol=1e-6)  # jit vs eager: 1 ulp
        np.testing.assert_array_equal(vec, action_vector(env, env_action))
        np.testing.assert_array_equal(out["memory"], carry["memory"])


def test_random_policy_samples_the_available_actions_unless_unmasked():
    env, params = make("stag_hunt", num_agents=2, num_stags=1, grid_size=4)
    seen, _ = _seen(env, params, jax.random.key(0))
    only = jnp.zeros((2, env.spec.num_actions), bool).at[:, 3].set(True)  # one action each
    masked, unmasked = jax.jit(random_policy(env)), jax.jit(random_policy(env, masked=False))
    for i in range(10):
        key = jax.random.key(i)
        np.testing.assert_array_equal(masked((), (), key, seen, only)[0], [3, 3])
        np.testing.assert_array_equal(unmasked((), (), key, seen, only)[0],
                                      env.random_action(key))


def test_observing_hands_the_observations_alone_to_a_policy_over_observations():
    env, params = make("simple_spread", num_agents=3)
    seen, avail = _seen(env, params, jax.random.key(0))
    got = {}

    def over_obs(algo_state, carry, key, obs, avail):
        got.update(obs=obs, algo_state=algo_state)
        return jnp.zeros(3, jnp.int32), jnp.zeros((3, 5)), carry + 1

    _, _, carry = observing(over_obs)("learner", 1, jax.random.key(2), seen, avail)
    assert carry == 2 and got["algo_state"] == "learner"
    np.testing.assert_array_equal(got["obs"], seen.obs)


@pytest.mark.parametrize("continuous", [False, True])
def test_scripted_team_replaces_only_that_teams_rows(continuous):
    env, params = make("simple_tag", num_predators=3, num_prey=2, num_obstacles=1,
                       continuous_actions=continuous)
    seen, avail = _seen(env, params, jax.random.PRNGKey(0))
    mixed = jax.jit(scripted_team(env, random_policy(env), "prey"))
    key = jax.random.PRNGKey(3)
    actions, vec, carry = mixed((), (), key, seen, avail)
    own_key, scripted_key = jax.random.split(key)
    prey = np.asarray([t == "prey" for t in env.spec.teams])
    expected_prey = env.scripted_action(scripted_key, seen.state, params)
    expected_rest = env.random_action(own_key)
    # jit vs eager rounding of the continuous scripted action: 1 ulp
    np.testing.assert_allclose(np.asarray(actions)[prey], np.asarray(expected_prey)[prey],
                               atol=1e-6)
    np.testing.assert_allclose(np.asarray(actions)[~prey], np.asarray(expected_rest)[~prey],
                               atol=1e-6)
    np.testing.assert_array_equal(vec, action_vector(env, actions))
    assert carry == ()
    with pytest.raises(ValueError, match="team 'goalkeeper'"):
        scripted_team(env, random_policy(env), "goalkeeper")


@pytest.mark.parametrize("opponent", ["random", "scripted"])
def test_against_opponents_keeps_the_teams_rows_and_replaces_the_others(opponent):
    env, params = make("tag_gridworld", num_taggers=3, num_runners=2)
    marker = 4  # a learner that always plays action 4 in every row, carrying a step count

    def learners(algo_state, carry, key, obs, avail):
        action = jnp.full((env.spec.num_agents,), marker, jnp.int32)
        return action, action_vector(env, action), carry + 1

    step = jax.jit(against_opponents(env, learners, "tagger", opponent))
    seen, avail = _seen(env, params, jax.random.key(0))
    rows = np.asarray(team_rows(env, "tagger"))
    picked = []
    for i in range(20):
        key = jax.random.key(i)
        actions, _, carry = step(None, i, key, seen, avail)
        actions = np.asarray(actions)
        assert carry == i + 1 and (actions[rows] == marker).all()
        other_key = jax.random.split(key)[1]
        expected = (env.random_action(other_key) if opponent == "random"
                    else env.scripted_action(other_key, seen.state, params))
        np.testing.assert_array_equal(actions[~rows], np.asarray(expected)[~rows])
        picked.extend(actions[~rows].tolist())
    assert opponent == "scripted" or len(set(picked)) > 1
    with pytest.raises(ValueError, match="team 'prey': tag_gridworld has teams tagger, runner"):
        against_opponents(env, learners, "prey", opponent)
