"""jaxmarl_accel.trainer.steps: the env step as transitions and the sample -> update -> priorities
step, under jit, against the pieces they are made of."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.algos import ActorCriticConfig, make_algo
from jaxmarl_accel.buffers import make_buffer
from jaxmarl_accel.envs import make
from jaxmarl_accel.trainer.policy import learner_policy
from jaxmarl_accel.trainer.steps import example_transition, learn_step, transition_step

E = 3


def _pieces(sampler: str = "per"):
    env, params = make("simple_spread", num_agents=2, episode_length=2)
    algo = make_algo("maddpg", env.spec, ActorCriticConfig(hidden_sizes=(8,)))
    buffer = make_buffer(sampler, capacity=64, batch_size=8)
    policy = learner_policy(env, algo, scripted_prey=False, explore=True)
    return env, params, algo, buffer, policy


def test_transition_step_packages_one_step_of_every_env():
    env, params, algo, _, policy = _pieces()
    algo_state = algo.init(jax.random.key(0))
    obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(jax.random.key(1), E), params)
    step = jax.jit(lambda s, o, k1, k2: transition_step(env, params, policy, algo_state, s, o,
                                                        k1, k2))
    first = step(env_state, obs, jax.random.key(2), jax.random.key(3))
    n, d = env.spec.num_agents, env.spec.obs_dim
    chex.assert_shape([first.transition.obs, first.transition.next_obs, first.obs], (E, n, d))
    chex.assert_shape([first.transition.reward, first.transition.done], (E, n))
    chex.assert_shape(first.transition.action, (E, n, algo.action_dim))
    np.testing.assert_array_equal(first.transition.obs, obs)
    np.testing.assert_array_equal(first.transition.next_obs, first.obs)  # no reset yet
    assert not np.any(first.ended)
    # the second step ends the 2-step episodes: truncated (not done), obs auto-reset
    second = step(first.env_state, first.obs, jax.random.key(4), jax.random.key(5))
    assert np.all(second.ended)
    np.testing.assert_array_equal(second.transition.done, 0.0)
    assert not np.allclose(second.transition.next_obs, second.obs)


def test_learn_step_is_sample_update_priorities():
    env, _, algo, buffer, _ = _pieces()
    example = example_transition(env.spec, algo.action_dim)
    batch = jax.tree.map(lambda x: jax.random.normal(jax.random.key(0), (16, *x.shape)),
                         example)
    buffer_state = buffer.add(buffer.init(example), batch)
    algo_state = algo.init(jax.random.key(1))
    keys = jax.random.key(2), jax.random.key(3)
    got = jax.jit(lambda a, b: learn_step(algo, buffer, a, b, *keys))(algo_state, buffer_state)

    @jax.jit
    def by_hand(a, b):
        sample = buffer.sample(b, keys[0])
        a, metrics, td = algo.update(a, sample.experience, sample.weights, keys[1])
        return a, buffer.update_priorities(b, sample.indices, td), metrics

    algo_ref, buffer_ref, metrics_ref = by_hand(algo_state, buffer_state)
    chex.assert_trees_all_equal(got.algo, algo_ref)
    chex.assert_trees_all_equal(got.buffer, buffer_ref)
    chex.assert_trees_all_equal(got.metrics, metrics_ref)
    assert not jnp.array_equal(got.buffer.sampler.tree, buffer_state.sampler.tree)
