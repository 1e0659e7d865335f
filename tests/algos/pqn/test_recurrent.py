"""Recurrent PQN (``agent="rnn"``): the rollout keeps the GRU state each env's sequence
started from, the Q-values recomputed from it (state zeroed where an episode starts) equal
those taken while acting, the round resets the carry at episode ends, and a tiny run trains
under jit and the seed vmap and resumes exactly."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos.pqn import PQNConfig
from jaxmarl_accel.algos.pqn import networks as nets
from jaxmarl_accel.algos.pqn.learner import make_skeleton
from jaxmarl_accel.algos.value.targets import masked_q
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.runs.run_store import checkpoint_items, state_from_items
from jaxmarl_accel.trainer.rounds.rollout import make_collect
from jaxmarl_accel.trainer.train import make_trainer

RNN = PQNConfig(agent="rnn", hidden_sizes=(8, 8), rollout_length=5, epochs=2, minibatches=2,
                epsilon_anneal_steps=20)
HUNT = (("episode_length", 3), ("grid_size", 4), ("num_agents", 2), ("num_stags", 1))


def rnn_run(algo: str = "pqn_vdn") -> TrainConfig:
    return TrainConfig(env="stag_hunt", env_kwargs=HUNT, algo=algo, num_envs=2,
                       total_env_steps=20, eval_every=10, eval_episodes=2, learner=RNN)


def test_q_values_recomputed_from_the_stored_carry_equal_those_taken_while_acting():
    config = rnn_run()
    trainer = make_trainer(config)
    s = make_skeleton("pqn_vdn", trainer.env.spec, RNN)
    collect = jax.jit(make_collect(config, trainer.env, trainer.env_params, trainer.algo))
    state = trainer.init(jax.random.PRNGKey(0))
    first, rollout_1, _ = collect(state)
    _, rollout_2, _ = collect(first)  # starts mid-episode, from a carry that is not zero
    for rollout, start in ((rollout_1, state), (rollout_2, first)):
        np.testing.assert_array_equal(rollout.carry, start.carry)
        assert rollout.ended.sum() > 0  # episodes of 3 steps end inside rollouts of 5
        starts = jnp.concatenate([jnp.zeros((1, 2)), rollout.ended[:-1]], axis=0)
        q = nets.q_unroll(s.net, state.algo.params, rollout.obs, rollout.carry, starts)
        best = jnp.max(masked_q(q, rollout.avail), axis=-1)
        np.testing.assert_allclose(best, rollout.value, rtol=1e-5, atol=1e-5)
    assert float(jnp.max(jnp.abs(rollout_2.carry))) > 0
    # the carry is back at zero in every env whose episode ended at the rollout's last step
    ended_last = np.asarray(rollout_1.ended[-1]) > 0
    np.testing.assert_array_equal(np.asarray(first.carry)[ended_last], 0.0)


def test_the_recurrent_policy_carries_its_state():
    trainer = make_trainer(rnn_run("pqn"))
    state = trainer.init(jax.random.PRNGKey(0))
    carry = trainer.algo.initial_carry()
    assert carry.shape == (2, 8) and not carry.any()
    obs, env_state = trainer.env.reset(jax.random.PRNGKey(1), trainer.env_params)
    avail = trainer.env.avail_actions(env_state, trainer.env_params)
    _, _, carry = jax.jit(trainer.algo.policy(False))(state.algo, carry, jax.random.PRNGKey(2),
                                                      obs, avail)
    assert float(jnp.max(jnp.abs(carry))) > 0


@pytest.mark.slow
def test_a_tiny_recurrent_run_trains_under_jit_and_vmap_and_resumes_exactly():
    trainer = make_trainer(rnn_run())
    run_chunk = jax.jit(jax.vmap(trainer.run_chunk, in_axes=(0, None)))
    start = jax.jit(jax.vmap(trainer.init))(jax.random.split(jax.random.PRNGKey(0), 2))
    middle, first = run_chunk(start, np.int32(0))
    end, second = run_chunk(middle, np.int32(1))
    for metrics in (first, second):
        np.testing.assert_array_equal(metrics.updates, 2 * 2)
        for value in jax.tree.leaves((metrics.learner, metrics.eval_return)):
            assert np.all(np.isfinite(value))
    items = {name: np.asarray(leaf) for name, leaf in checkpoint_items(middle).items()}
    restored = state_from_items(jax.eval_shape(lambda: middle), items)
    for a, b in zip(jax.tree.leaves((end, second)),
                    jax.tree.leaves(run_chunk(restored, np.int32(1))), strict=True):
        np.testing.assert_array_equal(a, b)
