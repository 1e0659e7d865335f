"""The actor-critic skeleton: shapes of init / act / update under jit, the semantics of one
update (target updates, importance weights, TD errors), the per-agent steps, the phases, and
learning one-step cooperative games with a known optimum.

Shapes are checked for N in {1, 3, 6}, both action kinds (``helpers.CASES``); discrete agents
have different numbers of valid actions (padding is masked). Continuous MASAC tunes its
entropy coefficient (``auto_alpha``), discrete MASAC does not.
"""

from __future__ import annotations

import dataclasses
import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos import ActorCriticConfig, make_algo
from jaxmarl_accel.algos.actor_critic import learner as ac
from jaxmarl_accel.algos.actor_critic import losses
from jaxmarl_accel.algos.actor_critic.config import ACTOR_STEPS
from jaxmarl_accel.algos.registry import algo_phases, variant_of
from jaxmarl_accel.types import Transition
from tests.algos.helpers import (
    BATCH,
    CASES,
    SMALL,
    agent_slice,
    assert_trees_close,
    compiled,
    config_for,
    make_spec,
    mlp_numpy,
    random_batch,
    spec_for,
)

TAU = SMALL.tau


@pytest.mark.parametrize(("name", "n", "continuous"), CASES)
@pytest.mark.fast_cases(1)
def test_act_and_update_shapes(name, n, continuous):
    spec = spec_for(n, continuous)
    fns = compiled(name, spec, config_for(name, continuous))
    adim = fns.algo.action_dim
    assert adim == (spec.act_dim if continuous else spec.num_actions)
    state = fns.init(jax.random.key(0))
    for leaf in jax.tree.leaves((state.actor, state.critic, state.actor_opt)):
        assert leaf.ndim == 0 or leaf.shape[0] == n
    obs = jax.random.normal(jax.random.key(1), (7, 4, n, spec.obs_dim))
    for explore in (True, False):
        env_action, vec = fns.act(state, obs, jax.random.key(2), explore)
        assert vec.shape == (7, 4, n, adim) and vec.dtype == jnp.float32
        if continuous:
            assert env_action.shape == (7, 4, n, spec.act_dim)
            assert env_action.dtype == jnp.float32
            assert np.all((np.asarray(env_action) >= 0) & (np.asarray(env_action) <= 1))
            np.testing.assert_array_equal(env_action, vec)
        else:
            assert env_action.shape == (7, 4, n) and env_action.dtype == jnp.int32
            assert np.all(np.asarray(env_action) < np.asarray(spec.action_sizes))
            np.testing.assert_array_equal(vec, jax.nn.one_hot(env_action, spec.num_actions))
    batch = random_batch(jax.random.key(3), spec, adim, BATCH)
    new, metrics, td = fns.update(state, batch, jnp.ones(BATCH), jax.random.key(4))
    assert td.shape == (BATCH, n) and np.all(np.asarray(td) >= 0)
    assert jax.tree.structure(new) == jax.tree.structure(state)
    for a, b in zip(jax.tree.leaves(new), jax.tree.leaves(state), strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
    assert int(new.step) == 1
    if name == "masac" and not continuous:
        np.testing.assert_array_equal(new.log_alpha, state.log_alpha)
    for key, value in metrics.items():
        assert value.shape == () and np.isfinite(float(value)), key
    assert set(metrics) == {"critic_loss", "actor_loss", "q_mean", "entropy", "alpha",
                            "td_error", "actor_updated"}


def test_targets_move_by_tau():
    spec = spec_for(6, True)
    fns = compiled("maddpg", spec)
    state = fns.init(jax.random.key(0))
    for step in range(2):  # after the first update, targets and online parameters differ
        batch = random_batch(jax.random.key(step), spec, fns.algo.action_dim, BATCH)
        new, _, _ = fns.update(state, batch, jnp.ones(BATCH), jax.random.key(7))
        for online, old, target in [(new.actor, state.target_actor, new.target_actor),
                                    (new.critic, state.target_critic, new.target_critic)]:
            expected = jax.tree.map(lambda o, t: TAU * o + (1 - TAU) * t, online, old)
            assert_trees_close(target, expected, rtol=1e-6, atol=1e-7)
            assert not np.allclose(jax.tree.leaves(target)[1], jax.tree.leaves(old)[1])
        state = new


def test_zero_importance_weight_removes_a_sample_from_the_critic_update():
    spec = spec_for(6, True)
    fns = compiled("maddpg", spec)
    state = fns.init(jax.random.key(0))
    batch = random_batch(jax.random.key(1), spec, fns.algo.action_dim, BATCH)
    other = random_batch(jax.random.key(2), spec, fns.algo.action_dim, BATCH)
    changed = jax.tree.map(lambda x, y: x.at[0].set(3.0 * y[0]), batch, other)
    weights = jnp.ones(BATCH).at[0].set(0.0)
    key = jax.random.key(3)
    new_a, _, td_a = fns.update(state, batch, weights, key)
    new_b, _, td_b = fns.update(state, changed, weights, key)
    assert_trees_close(new_a.critic, new_b.critic, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(td_a[1:], td_b[1:], rtol=1e-5)
    # With weight 1 the changed sample does change the critic (the test can fail).
    new_c, _, _ = fns.update(state, changed, jnp.ones(BATCH), key)
    assert not np.allclose(jax.tree.leaves(new_a.critic)[1], jax.tree.leaves(new_c.critic)[1])


def test_td_errors_match_a_hand_computation():
    """MADDPG continuous: ``|Q_i(x, a) - r_i - gamma (1 - d_i) Q'_i(x', sigmoid(mu'(o')))|``."""
    spec = spec_for(6, True)
    fns = compiled("maddpg", spec)
    state = fns.init(jax.random.key(0))
    batch = random_batch(jax.random.key(1), spec, fns.algo.action_dim, BATCH)
    state, _, _ = fns.update(state, batch, jnp.ones(BATCH), jax.random.key(2))  # targets != online
    _, _, td = fns.update(state, batch, jnp.ones(BATCH), jax.random.key(3))
    b = jax.tree.map(np.asarray, batch)
    n = spec.num_agents
    next_act = np.stack(
        [1 / (1 + np.exp(-mlp_numpy(agent_slice(state.target_actor, j), b.next_obs[:, j])))
         for j in range(n)], axis=1)
    x = np.concatenate([b.obs.reshape(BATCH, -1), b.action.reshape(BATCH, -1)], -1)
    x_next = np.concatenate([b.next_obs.reshape(BATCH, -1), next_act.reshape(BATCH, -1)], -1)
    expected = np.zeros((BATCH, n))
    for i in range(n):
        q = mlp_numpy(agent_slice(agent_slice(state.critic, i), 0), x)[:, 0]
        q_next = mlp_numpy(agent_slice(agent_slice(state.target_critic, i), 0), x_next)[:, 0]
        y = b.reward[:, i] + SMALL.gamma * (1 - b.done[:, i]) * q_next
        expected[:, i] = np.abs(q - y)
    np.testing.assert_allclose(np.asarray(td), expected, rtol=1e-4, atol=1e-5)


def _skeleton_agent_and_batch(name: str, n: int, continuous: bool, i: int):
    spec = spec_for(n, continuous)
    config = config_for(name, continuous)
    sk = ac.make_skeleton(spec, config, variant_of(name, spec, config))
    state = ac.init(sk, jax.random.key(0))
    agent = jax.tree.map(lambda x: x[i], ac.agents_of(sk, state))
    return sk, agent, random_batch(jax.random.key(1), spec, sk.dist.action_dim, BATCH)


@pytest.mark.parametrize(("name", "n", "continuous"), [("maddpg", 3, False), ("masac", 3, True)])
@pytest.mark.fast_cases(1)
def test_agent_critic_step_is_one_optimizer_step_on_the_critic_loss(name, n, continuous):
    sk, agent, batch = _skeleton_agent_and_batch(name, n, continuous, i=1)
    y = jax.random.normal(jax.random.key(2), (BATCH,))
    weights = jax.random.uniform(jax.random.key(3), (BATCH,))
    step = jax.jit(functools.partial(ac.agent_critic_step, sk))
    new, info = step(agent, y, batch, weights)
    grad = jax.grad(lambda c: losses.critic_loss(c, sk.critic_mlp, batch.obs, batch.action,
                                                 weights, y)[0])(agent.critic)
    critic, _ = losses.flat_step(sk.critic_tx, grad, agent.critic_opt, agent.critic)
    assert_trees_close(new.critic, critic, rtol=1e-5, atol=1e-6)
    assert info.td.shape == (BATCH,) and info.loss.shape == info.q_mean.shape == ()
    assert_trees_close((new.actor, new.log_alpha), (agent.actor, agent.log_alpha), 0, 0)


@pytest.mark.parametrize(("name", "n", "continuous"), [("matd3", 3, False), ("masac", 3, True)])
@pytest.mark.fast_cases(1)
def test_agent_actor_step_moves_only_the_actor_and_temperature(name, n, continuous):
    sk, agent, batch = _skeleton_agent_and_batch(name, n, continuous, i=2)
    step = jax.jit(functools.partial(ac.agent_actor_step, sk))
    new, info = step(agent, jax.random.key(4), batch)
    assert info.loss.shape == info.entropy.shape == ()
    assert not np.allclose(jax.tree.leaves(new.actor)[1], jax.tree.leaves(agent.actor)[1])
    assert_trees_close((new.critic, new.critic_opt), (agent.critic, agent.critic_opt), 0, 0)
    moved = not np.allclose(new.log_alpha, agent.log_alpha)
    assert moved == (name == "masac" and sk.config.auto_alpha)


@pytest.mark.parametrize(("name", "n", "continuous", "learners", "per_agent"), [
    *[(name, n, continuous, "parallel", False) for name, n, continuous in CASES],
    ("matd3", 3, False, "sequential", False), ("masac", 3, True, "parallel", True),
])
@pytest.mark.fast_cases(1)
def test_linear_actor_step_equals_the_full_one(name, n, continuous, learners, per_agent):
    """``config.actor_step`` picks the skeleton's ``joint_q``; the linear and the full actor
    steps move every agent's actor (and temperature) alike, within 1e-5 relative."""
    spec = spec_for(n, continuous)
    config = dataclasses.replace(config_for(name, continuous), learners=learners)
    forms = {form: make_algo(name, spec, dataclasses.replace(config, actor_step=form))
             for form in ACTOR_STEPS}
    lead = (n,) if per_agent else ()
    state = jax.jit(forms["full"].init)(jax.random.key(0))
    state = state.replace(critic=jax.tree.map(  # critics unlike their initialization
        lambda x: x * (1.0 + 0.1 * jax.random.normal(jax.random.key(9), x.shape)),
        state.critic))
    batch = random_batch(jax.random.key(1), spec, forms["full"].action_dim, BATCH, lead)
    steps = {form: algo_phases(name, spec, dataclasses.replace(config, actor_step=form)).actor_step
             for form in ACTOR_STEPS}
    (full, full_info), (linear, linear_info) = (
        jax.jit(steps[form])(state, batch, jax.random.key(2)) for form in ACTOR_STEPS[::-1])
    for form in ACTOR_STEPS:
        form_config = dataclasses.replace(config, actor_step=form)
        sk = ac.make_skeleton(spec, form_config, variant_of(name, spec, form_config))
        assert sk.joint_q is losses.JOINT_Q[form]
    assert_trees_close(linear_info, full_info, rtol=1e-5, atol=1e-6)
    assert_trees_close((linear.actor, linear.log_alpha), (full.actor, full.log_alpha),
                       rtol=1e-5, atol=1e-6)
    assert not np.allclose(jax.tree.leaves(linear.actor)[1], jax.tree.leaves(state.actor)[1])


@pytest.mark.parametrize(("name", "n", "continuous"), [("maddpg", 6, True), ("masac", 3, True)])
def test_phases_compose_to_update(name, n, continuous):
    """``target_q``, ``critic_step``, ``actor_step``, ``target_update`` (``Phases``) give the
    update's state, up to float rounding of the separate passes."""
    spec = spec_for(n, continuous)
    fns = compiled(name, spec, config_for(name, continuous))
    phases = algo_phases(name, spec, config_for(name, continuous))
    state = fns.init(jax.random.key(0))
    batch = random_batch(jax.random.key(1), spec, fns.algo.action_dim, BATCH)
    weights, key = jnp.ones(BATCH), jax.random.key(2)
    expected, _, _ = fns.update(state, batch, weights, key)

    @jax.jit
    def by_phases(state):
        next_key, actor_key = jax.random.split(key)
        y = phases.target_q(state, batch, next_key)
        state, _ = phases.critic_step(state, batch, weights, y)
        state, _ = phases.actor_step(state, batch, actor_key)
        return phases.target_update(state).replace(step=state.step + 1)

    assert_trees_close(by_phases(state), expected, rtol=1e-5, atol=1e-6)


# Learning sanity: one-step cooperative games with a known optimum (synthetic data).
#
# The behaviour data are uniformly random joint actions, every transition terminates
# (``done = 1``, so the critic target is the reward), and all agents share the reward. The
# actors must end up choosing the optimal joint action. A random initialisation picks the
# discrete optimum with probability 1/20 and samples it with frequency about 0.2 per agent;
# the checks (greedy action, sampled frequency > 0.6, continuous error < 0.12 from targets
# 0.2-0.3 away from the initial 0.5) rule out passing by chance.

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
    critic_losses = []
    for step, key in enumerate(jax.random.split(jax.random.key(1), STEPS)):
        tr = Transition(obs=obs, action=jnp.asarray(action_vec[step]),
                        reward=jnp.asarray(np.repeat(reward[step][:, None], n, 1)),
                        next_obs=obs, done=jnp.ones((BATCH, n)))
        state, metrics, _ = update(state, tr, jnp.ones(BATCH), key)
        critic_losses.append(float(metrics["critic_loss"]))
    return state, np.array(critic_losses)


@pytest.mark.parametrize("name", ["maddpg", "masac"])
@pytest.mark.fast_cases(1)
def test_discrete_matrix_game_finds_optimum(name):
    spec = make_spec(2, continuous=False, obs_dim=2, action_sizes=(5, 4))
    fns = compiled(name, spec)
    rng = np.random.default_rng(0)
    a0 = rng.integers(0, 5, (STEPS, BATCH))
    a1 = rng.integers(0, 4, (STEPS, BATCH))
    action_vec = np.stack([np.eye(5)[a0], np.eye(5)[a1]], axis=2).astype(np.float32)
    state, critic_losses = _train(fns, spec, action_vec, PAYOFF[a0, a1])
    greedy, _ = fns.act(state, jnp.ones((2, 2)), jax.random.key(1), False)
    np.testing.assert_array_equal(np.asarray(greedy), [3, 1])
    samples, _ = fns.act(state, jnp.ones((2000, 2, 2)), jax.random.key(2), True)
    samples = np.asarray(samples)
    assert np.all(np.mean(samples == np.array([3, 1]), axis=0) > 0.6)
    assert np.all(samples[:, 1] < 4), "a padded action was sampled"
    assert critic_losses[-50:].mean() < 0.2 * critic_losses[:10].mean()


@pytest.mark.parametrize("name", ["maddpg", "matd3"])
@pytest.mark.fast_cases(1)
def test_continuous_quadratic_game_finds_optimum(name):
    spec = make_spec(2, continuous=True, obs_dim=2, act_dim=2)
    fns = compiled(name, spec, ActorCriticConfig())
    action_vec = np.random.default_rng(0).uniform(size=(STEPS, BATCH, 2, 2)).astype(np.float32)
    reward = 1.0 - np.sum((action_vec - TARGETS) ** 2, axis=(2, 3))
    state, _ = _train(fns, spec, action_vec, reward)
    greedy, _ = fns.act(state, jnp.ones((2, 2)), jax.random.key(1), False)
    np.testing.assert_allclose(np.asarray(greedy), TARGETS, atol=0.12)


@pytest.mark.parametrize("name", ["maddpg", "matd3"])
@pytest.mark.fast_cases(1)
def test_gumbel_softmax_continuous_actor_moves_mass_to_the_paying_component(name):
    # the original MADDPG code's treatment of MPE's move vector: soft samples on the simplex
    spec = make_spec(2, continuous=True, obs_dim=2, act_dim=5)
    fns = compiled(name, spec, ActorCriticConfig(continuous_policy="gumbel_softmax"))
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
