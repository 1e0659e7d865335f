"""Feed-forward QMIX and VDN on a discrete MPE scenario through the transition data path
(``steps.transition_step`` and ``steps.learn_step``), QMIX from every sampler, and the
refusal of continuous actions."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos import make_algo
from jaxmarl_accel.buffers import SAMPLERS, make_buffer
from jaxmarl_accel.envs import make
from jaxmarl_accel.trainer import steps
from jaxmarl_accel.trainer.policy import learner_policy
from tests.algos.helpers import random_batch
from tests.algos.value.helpers import SMALL, SMALL_MLP

ENVS, ITERS, BATCH = 4, 4, 8


@functools.cache
def _run(name: str, sampler: str):
    """A few vectorized env steps of ``name`` (feed-forward) into ``sampler``'s buffer, then
    one learn step; returns the learner state before it and the :class:`LearnStep`."""
    env, params = make("simple_spread", num_agents=3, episode_length=5)
    algo = make_algo(name, env.spec, SMALL_MLP)
    policy = learner_policy(env, algo, scripted_prey=False, explore=True)
    buffer = make_buffer(sampler, capacity=64, batch_size=BATCH)

    @jax.jit
    def run(key: jax.Array):
        init_key, reset_key, loop_key, learn_key = jax.random.split(key, 4)
        algo_state = algo.observe(algo.init(init_key), jnp.int32(0), jnp.int32(0))
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(reset_key, ENVS), params)
        buffer_state = buffer.init(steps.example_transition(env.spec, algo.action_dim))
        def env_step(carry, k):
            env_state, obs, buffer_state = carry
            act_key, step_key = jax.random.split(k)
            out = steps.transition_step(env, params, policy, algo_state, env_state, obs,
                                        act_key, step_key)
            return (out.env_state, out.obs, buffer.add(buffer_state, out.transition)), None

        (_, _, buffer_state), _ = jax.lax.scan(env_step, (env_state, obs, buffer_state),
                                               jax.random.split(loop_key, ITERS))
        sample_key, update_key = jax.random.split(learn_key)
        learned = steps.learn_step(algo, buffer, algo_state, buffer_state, sample_key,
                                   update_key)
        return algo_state, learned

    return run(jax.random.key(0))


@pytest.mark.parametrize("name", ["qmix", "vdn"])
@pytest.mark.fast_cases(1)
def test_feedforward_learners_train_on_spread_through_the_transition_path(name):
    before, learned = _run(name, "uniform")
    assert np.isfinite(float(learned.metrics["loss"]))
    assert float(learned.metrics["epsilon"]) == SMALL_MLP.epsilon_start
    assert int(learned.algo.step) == 1
    moved = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), before.params, learned.algo.params)
    assert any(jax.tree.leaves(moved))


@pytest.mark.parametrize("sampler", SAMPLERS)
@pytest.mark.fast_cases(1)
def test_feedforward_qmix_learns_from_every_sampler(sampler):
    env, _ = make("simple_spread", num_agents=3, episode_length=5)
    algo = make_algo("qmix", env.spec, SMALL_MLP)
    buffer = make_buffer(sampler, capacity=32, batch_size=BATCH)

    @jax.jit
    def learn(key: jax.Array):
        init_key, data_key, act_key, sample_key, update_key = jax.random.split(key, 5)
        data = random_batch(data_key, env.spec, algo.action_dim, 32)
        action = jax.random.randint(act_key, data.reward.shape, 0, env.spec.num_actions)
        data = data.replace(action=jax.nn.one_hot(action, algo.action_dim))
        buffer_state = buffer.add(buffer.init(steps.example_transition(env.spec,
                                                                       algo.action_dim)), data)
        state = algo.init(init_key)
        return steps.learn_step(algo, buffer, state, buffer_state, sample_key, update_key)

    learned = learn(jax.random.key(1))
    assert np.isfinite(float(learned.metrics["loss"]))
    assert np.isfinite(float(learned.metrics["td_error"]))


@pytest.mark.parametrize("name", ["qmix", "vdn", "iql"])
def test_value_learners_refuse_continuous_actions(name):
    env, _ = make("simple_spread", continuous_actions=True)
    with pytest.raises(ValueError, match=f"algo '{name}' needs discrete actions; simple_spread "
                                         "was made with continuous_actions=True"):
        make_algo(name, env.spec, SMALL)
