"""MAPPO's critic reads the global state and its actor does not; the recurrent learners'
carry resets where an episode ends, and the values the update recomputes from the rollout's
stored carry equal those taken while acting."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos import make_algo
from jaxmarl_accel.algos.on_policy import OnPolicyConfig
from jaxmarl_accel.algos.on_policy.learner import make_skeleton, recomputed_values
from jaxmarl_accel.algos.on_policy.skeleton import check_world
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.trainer.rounds.rollout import make_collect, reset_where
from jaxmarl_accel.trainer.train import make_trainer
from tests.algos.helpers import make_spec

SMALL = OnPolicyConfig(hidden_sizes=(8,), epochs=2, minibatches=2, rollout_length=3)


def test_mappo_values_read_the_state_and_its_actions_do_not():
    spec = dataclasses.replace(make_spec(3, False), teams=("a", "b", "a"), state_dim=5)
    algo = make_algo("mappo", spec, SMALL)
    state = jax.jit(algo.init)(jax.random.PRNGKey(0))
    assert set(state.params[0]) == {"net", "critic"}  # an actor and a critic per team
    sample = jax.jit(algo.on_policy.sample)
    obs = jax.random.normal(jax.random.PRNGKey(1), (4, 3, spec.obs_dim))
    world = jax.random.normal(jax.random.PRNGKey(2), (4, 5))
    key = jax.random.PRNGKey(3)
    base, _ = sample(state, (), obs, world, None, key)
    other_world, _ = sample(state, (), obs, world + 1.0, None, key)
    other_obs, _ = sample(state, (), obs + 1.0, world, None, key)
    np.testing.assert_array_equal(other_world.log_prob, base.log_prob)  # actor: no state
    assert bool(jnp.all(other_world.value != base.value))  # critic: the state
    np.testing.assert_array_equal(other_obs.value, base.value)  # critic: no observation
    assert bool(jnp.any(other_obs.log_prob != base.log_prob))
    # the agents' one-hot ids make the values of one state differ per agent
    assert bool(jnp.all(base.value[:, 0] != base.value[:, 2]))
    # the greedy and exploring policies act on observations alone
    for explore in (False, True):
        action, _, carry = jax.jit(algo.policy(explore))(state, (), key, obs[0], None)
        assert action.shape == (3,) and carry == ()
    with pytest.raises(ValueError, match="cannot be formed at this scale"):
        check_world(make_spec(1000, False, obs_dim=30))


def rnn_run(algo: str, **kwargs) -> TrainConfig:
    """Two envs of 2-agent spread with episodes of 4 steps, rollouts of 6: every rollout
    holds an episode end inside it."""
    learner = dataclasses.replace(SMALL, agent="rnn", rollout_length=6, **kwargs)
    return TrainConfig(env="simple_spread", algo=algo, num_envs=2, total_env_steps=24,
                       eval_every=12, eval_episodes=2, learner=learner,
                       env_kwargs=(("episode_length", 4), ("num_agents", 2)))


@pytest.mark.parametrize("algo", ["ppo", "mappo"])
@pytest.mark.fast_cases(1)
def test_recurrent_values_recomputed_from_the_stored_carry_equal_the_acting_values(algo):
    config = rnn_run(algo)
    trainer = make_trainer(config)
    s = make_skeleton(algo, trainer.env.spec, config.learner)
    collect = jax.jit(make_collect(config, trainer.env, trainer.env_params, trainer.algo))
    state = trainer.init(jax.random.PRNGKey(0))
    first, rollout_1, _ = collect(state)
    after, rollout_2, _ = collect(first)  # starts mid-episode, from a carry that is not zero
    for rollout, start in ((rollout_1, state), (rollout_2, first)):
        for leaf, stored in zip(jax.tree.leaves(start.carry), jax.tree.leaves(rollout.carry),
                                strict=True):
            np.testing.assert_array_equal(stored, leaf)
        np.testing.assert_array_equal(rollout.ended[:, 0], [0, 1, 0, 0, 0, 1] if
                                      rollout is rollout_2 else [0, 0, 0, 1, 0, 0])
        np.testing.assert_allclose(recomputed_values(s, state.algo, rollout), rollout.value,
                                   rtol=1e-5, atol=1e-5)
        # the value of a step's reached observation is the next step's, within an episode
        within = np.asarray(rollout.ended[:-1] == 0)
        np.testing.assert_allclose(np.asarray(rollout.next_value[:-1])[within],
                                   np.asarray(rollout.value[1:])[within], rtol=1e-5, atol=1e-5)
    assert float(jnp.max(jnp.abs(rollout_2.carry["net"]))) > 0
    if algo == "mappo":
        assert rollout_1.world.shape == (6, 2, 2 * trainer.env.spec.obs_dim)
        np.testing.assert_array_equal(rollout_1.world,
                                      rollout_1.obs.reshape(6, 2, -1))  # no state_of: obs
        assert set(after.carry) == {"net", "critic"}


def test_the_carry_resets_where_an_episode_ends():
    carry = {"net": jnp.ones((3, 2, 4))}
    initial = {"net": jnp.zeros((3, 2, 4))}
    reset = reset_where(jnp.asarray([False, True, False]), initial, carry)
    np.testing.assert_array_equal(reset["net"][:, 0, 0], [1.0, 0.0, 1.0])
    # a rollout that ends exactly with the episodes leaves every env's carry at zero
    config = dataclasses.replace(rnn_run("ppo"), env_kwargs=(("episode_length", 6),
                                                            ("num_agents", 2)))
    trainer = make_trainer(config)
    collect = jax.jit(make_collect(config, trainer.env, trainer.env_params, trainer.algo))
    state, rollout, _ = collect(trainer.init(jax.random.PRNGKey(0)))
    np.testing.assert_array_equal(rollout.ended[-1], 1.0)
    np.testing.assert_array_equal(state.carry["net"], 0.0)
    assert rollout.carry is None or float(jnp.max(jnp.abs(rollout.carry["net"]))) == 0


def test_the_recurrent_policy_carries_its_state():
    spec = make_spec(2, False)
    algo = make_algo("ppo", spec, dataclasses.replace(SMALL, agent="rnn"))
    state = jax.jit(algo.init)(jax.random.PRNGKey(0))
    carry = algo.initial_carry()
    assert carry["net"].shape == (2, 8)
    obs = jax.random.normal(jax.random.PRNGKey(1), (2, spec.obs_dim))
    policy = jax.jit(algo.policy(False))
    _, _, after = policy(state, carry, jax.random.PRNGKey(2), obs, None)
    assert float(jnp.max(jnp.abs(after["net"]))) > 0
