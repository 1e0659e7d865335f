"""Learning sanity: one-step cooperative games with a known optimum (synthetic data).

The behaviour data are uniformly random joint actions, every transition terminates
(``done = 1``, so the critic target is the reward), and all agents share the reward. The
actors must end up choosing the optimal joint action. A random initialisation picks the
discrete optimum with probability 1/20 and samples it with frequency about 0.2 per agent;
the checks (greedy action, sampled frequency > 0.6, continuous error < 0.12 from targets
0.2-0.3 away from the initial 0.5) rule out passing by chance.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos import AlgoConfig
from jaxmarl_accel.types import Transition
from tests.algos.helpers import BATCH, compiled, make_spec

STEPS = 400
# Payoff of the joint action (a0, a1); agent 1 has 4 valid actions of 5 (the 5th is
# padding). Unique optimum (3, 1) = 1.0; the best other entry is 0.8.
PAYOFF = np.array([
    [0.0, 0.2, 0.1, 0.0],
    [0.1, 0.4, 0.0, 0.2],
    [0.2, 0.5, 0.3, 0.1],
    [0.6, 1.0, 0.5, 0.4],
    [0.3, 0.8, 0.2, 0.1],
], np.float32)
TARGETS = np.array([[0.2, 0.7], [0.8, 0.3]], np.float32)


def _train(fns, spec, action_vec: np.ndarray, reward: np.ndarray) -> tuple:
    """``STEPS`` jitted updates on the synthetic batches ``action_vec [STEPS, B, N, A]``.

    The update is traced once for all ``STEPS`` calls (``chex.assert_max_traces``).
    """
    n = spec.num_agents
    chex.clear_trace_counter()
    update = jax.jit(chex.assert_max_traces(fns.algo.update, n=1))
    obs = jnp.ones((BATCH, n, spec.obs_dim))
    state = fns.init(jax.random.key(0))
    losses = []
    for step, key in enumerate(jax.random.split(jax.random.key(1), STEPS)):
        tr = Transition(obs=obs, action=jnp.asarray(action_vec[step]),
                        reward=jnp.asarray(np.repeat(reward[step][:, None], n, 1)),
                        next_obs=obs, done=jnp.ones((BATCH, n)))
        state, metrics, _ = update(state, tr, jnp.ones(BATCH), key)
        losses.append(float(metrics["critic_loss"]))
    return state, np.array(losses)


@pytest.mark.parametrize("name", ["maddpg", "masac"])
def test_discrete_matrix_game_finds_optimum(name):
    spec = make_spec(2, continuous=False, obs_dim=2, action_sizes=(5, 4))
    fns = compiled(name, spec)
    rng = np.random.default_rng(0)
    a0 = rng.integers(0, 5, (STEPS, BATCH))
    a1 = rng.integers(0, 4, (STEPS, BATCH))
    action_vec = np.stack([np.eye(5)[a0], np.eye(5)[a1]], axis=2).astype(np.float32)
    state, losses = _train(fns, spec, action_vec, PAYOFF[a0, a1])
    greedy, _ = fns.act(state, jnp.ones((2, 2)), jax.random.key(1), False)
    np.testing.assert_array_equal(np.asarray(greedy), [3, 1])
    samples, _ = fns.act(state, jnp.ones((2000, 2, 2)), jax.random.key(2), True)
    samples = np.asarray(samples)
    assert np.all(np.mean(samples == np.array([3, 1]), axis=0) > 0.6)
    assert np.all(samples[:, 1] < 4), "a padded action was sampled"
    assert losses[-50:].mean() < 0.2 * losses[:10].mean()


@pytest.mark.parametrize("name", ["maddpg", "matd3"])
def test_continuous_quadratic_game_finds_optimum(name):
    spec = make_spec(2, continuous=True, obs_dim=2, act_dim=2)
    fns = compiled(name, spec, AlgoConfig())
    action_vec = np.random.default_rng(0).uniform(size=(STEPS, BATCH, 2, 2)).astype(np.float32)
    reward = 1.0 - np.sum((action_vec - TARGETS) ** 2, axis=(2, 3))
    state, _ = _train(fns, spec, action_vec, reward)
    greedy, _ = fns.act(state, jnp.ones((2, 2)), jax.random.key(1), False)
    np.testing.assert_allclose(np.asarray(greedy), TARGETS, atol=0.12)


@pytest.mark.parametrize("name", ["maddpg", "matd3"])
def test_gumbel_softmax_continuous_actor_moves_mass_to_the_paying_component(name):
    # the original MADDPG code's treatment of MPE's move vector: soft samples on the simplex
    spec = make_spec(2, continuous=True, obs_dim=2, act_dim=5)
    fns = compiled(name, spec, AlgoConfig(continuous_policy="gumbel_softmax"))
    rng = np.random.default_rng(0)
    action_vec = rng.dirichlet(np.ones(5), (STEPS, BATCH, 2)).astype(np.float32)
    paying = (2, 4)  # agent i is paid the mass it puts on component paying[i]
    reward = action_vec[..., 0, paying[0]] + action_vec[..., 1, paying[1]]
    state, _ = _train(fns, spec, action_vec, reward)
    greedy, vec = fns.act(state, jnp.ones((2, 2)), jax.random.key(1), False)
    np.testing.assert_array_equal(greedy, vec)
    np.testing.assert_allclose(np.sum(np.asarray(greedy), -1), 1.0, rtol=1e-5)
    assert greedy[0, paying[0]] > 0.8 and greedy[1, paying[1]] > 0.8
    samples, stored = fns.act(state, jnp.ones((500, 2, 2)), jax.random.key(2), True)
    np.testing.assert_array_equal(samples, stored)  # the env executes what is stored
    np.testing.assert_allclose(np.sum(np.asarray(samples), -1), 1.0, rtol=1e-5)
    assert np.mean(np.argmax(np.asarray(samples), -1) == np.array(paying)) > 0.6
