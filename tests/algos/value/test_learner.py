"""The value learner as an Algo: what it needs, acting from its carry, the update and its
phases, priorities, the target copy every K episodes, and the feed-forward form on
transitions."""

from __future__ import annotations

import dataclasses
import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos import make_algo
from jaxmarl_accel.algos.registry import algo_phases
from jaxmarl_accel.algos.value import Carry, ValueConfig, central, mixers, targets
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import Episode, Transition
from tests.algos.helpers import Compiled, assert_trees_close, batched_act
from tests.algos.value.helpers import SMALL, SMALL_MLP, random_episodes, value_spec

LENGTHS, TERMINATED = (6, 3, 4, 1), (False, True, False, True)


@functools.cache
def compiled(name: str, spec: EnvSpec, config: ValueConfig = SMALL) -> Compiled:
    algo = make_algo(name, spec, config)

    def act(state, carry, key, obs, avail, explore):  # the policy of one env
        return algo.policy(explore)(state, carry, key, obs, avail)

    return Compiled(algo, jax.jit(algo.init), jax.jit(act, static_argnums=5),
                    jax.jit(algo.update), algo_phases(name, spec, config))


def _episodes(spec: EnvSpec, seed: int = 0) -> Episode:
    return random_episodes(jax.random.key(seed), spec, LENGTHS, TERMINATED)


@pytest.mark.parametrize("name", ["qmix", "vdn", "iql"])
@pytest.mark.parametrize("agent", ["rnn", "mlp"])
def test_value_learners_declare_their_replay_and_protocol(name, agent):
    spec = value_spec()
    algo = make_algo(name, spec, dataclasses.replace(SMALL, agent=agent))
    assert algo.action_dim == spec.num_actions
    phases = algo_phases(name, spec, dataclasses.replace(SMALL, agent=agent))
    assert phases._fields == ("agent_q", "targets", "loss_and_grad", "apply", "target_update")
    assert algo.observe is not None
    if agent == "mlp":
        assert algo.initial_carry() == ()
        return
    carry = algo.initial_carry()
    assert isinstance(carry, Carry)
    chex.assert_trees_all_equal(carry, Carry(jnp.zeros((3, SMALL.hidden)), jnp.zeros((3, 4))))


@pytest.mark.parametrize("name", ["qmix", "vdn", "iql"])
@pytest.mark.fast_cases(1)
def test_repeated_updates_on_one_batch_lower_the_loss(name):
    spec = value_spec()
    c = compiled(name, spec, dataclasses.replace(SMALL, lr=1e-2))
    state = c.init(jax.random.key(0))
    batch, weights = _episodes(spec), jnp.ones(len(LENGTHS))
    losses = []
    for _ in range(30):
        state, metrics, td = c.update(state, batch, weights, jax.random.key(1))
        losses.append(float(metrics["loss"]))
    assert td.shape == (len(LENGTHS),) and bool(jnp.all(td >= 0))
    assert losses[-1] < 0.3 * losses[0]
    assert int(state.step) == 30


def test_update_is_the_composition_of_its_phases_and_td_is_the_masked_mean():
    spec = value_spec()
    c = compiled("qmix", spec)
    p = c.phases
    state = c.algo.observe(c.init(jax.random.key(2)), jnp.int32(10), jnp.int32(0))
    batch = _episodes(spec, seed=1)
    weights = jnp.array([1.0, 0.5, 2.0, 1.0])
    new, metrics, td = c.update(state, batch, weights, jax.random.key(3))

    q = jax.jit(p.agent_q)(state, batch)
    y = jax.jit(p.targets)(state, batch, q)
    grads, info = jax.jit(p.loss_and_grad)(state, batch, weights, y)
    by_phases = jax.jit(p.target_update)(jax.jit(p.apply)(state, grads))
    assert_trees_close(new.params, by_phases.params, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(td, info.td, rtol=1e-5)
    np.testing.assert_allclose(metrics["loss"], info.loss, rtol=1e-5)
    np.testing.assert_allclose(metrics["grad_norm"], info.grad_norm, rtol=1e-4)

    # td: each episode's mean |Q_tot - y| over its filled steps
    mixer = mixers.qmix(spec, SMALL)
    q_taken = targets.chosen(q[:, :-1], batch.action[:, :-1])
    q_tot = mixer.apply(state.params.mixer, q_taken, batch.state[:, :-1])[..., 0]
    filled = np.asarray(batch.filled[:, :-1])
    manual = (np.abs(np.asarray(q_tot - y[..., 0])) * filled).sum(1) / filled.sum(1)
    np.testing.assert_allclose(td, manual, rtol=1e-4, atol=1e-6)
    # an episode's priority does not depend on the episodes' weights
    _, _, td_ones = c.update(state, batch, jnp.ones(4), jax.random.key(3))
    np.testing.assert_allclose(td, td_ones, rtol=1e-6)


def test_the_update_is_traced_once():
    spec = value_spec(2)
    algo = make_algo("iql", spec, SMALL)
    chex.clear_trace_counter()
    update = jax.jit(chex.assert_max_traces(algo.update, n=1))
    state, batch = algo.init(jax.random.key(0)), random_episodes(
        jax.random.key(1), spec, (2, 1), (True, False), rows=3)
    for i in range(3):
        state, _, _ = update(algo.observe(state, jnp.int32(i), jnp.int32(i)), batch,
                             jnp.ones(2), jax.random.key(i))
    assert int(state.step) == 3


def test_zero_weights_leave_the_parameters_and_weights_scale_the_loss():
    spec = value_spec()
    c = compiled("qmix", spec)
    state, batch = c.init(jax.random.key(4)), _episodes(spec, seed=2)
    new, metrics, _ = c.update(state, batch, jnp.zeros(4), jax.random.key(0))
    chex.assert_trees_all_equal(new.params, state.params)
    assert float(metrics["loss"]) == 0.0
    _, one, _ = c.update(state, batch, jnp.ones(4), jax.random.key(0))
    _, three, _ = c.update(state, batch, 3 * jnp.ones(4), jax.random.key(0))
    np.testing.assert_allclose(three["loss"], 3 * one["loss"], rtol=1e-5)


def test_targets_are_copied_once_every_k_finished_episodes():
    spec = value_spec()
    config = dataclasses.replace(SMALL, target_update_episodes=200)
    c = compiled("vdn", spec, config)
    state, batch, w = c.init(jax.random.key(5)), _episodes(spec, seed=3), jnp.ones(4)
    copied = []
    for episodes in (0, 199, 200, 210, 399, 400):
        state = c.algo.observe(state, jnp.int32(25 * episodes), jnp.int32(episodes))
        state, metrics, _ = c.update(state, batch, w, jax.random.key(0))
        is_copy = bool(metrics["target_updated"])
        copied.append(is_copy)
        if is_copy:
            chex.assert_trees_all_equal(state.target, state.params)
        else:
            assert not np.allclose(jax.tree.leaves(state.target)[0],
                                   jax.tree.leaves(state.params)[0])
    assert copied == [False, False, True, False, False, True]
    assert int(state.last_target_update) == 400


def test_greedy_acting_from_the_initial_carry_reproduces_the_unrolled_q():
    """The GRU state starts from zeros at every episode: stepping the policy from
    ``initial_carry`` chooses the greedy actions of the network unrolled over the episode."""
    spec = value_spec()
    c = compiled("qmix", spec)
    state = c.init(jax.random.key(6))
    ep = _episodes(spec, seed=4)
    actions, carry = [], c.algo.initial_carry()
    for t in range(ep.filled.shape[1]):
        action, vec, carry = c.act(state, carry, jax.random.key(t), ep.obs[0, t],
                                   ep.avail[0, t], False)
        np.testing.assert_array_equal(vec, jax.nn.one_hot(action, spec.num_actions))
        actions.append(action)
        assert bool(jnp.all(jnp.take_along_axis(ep.avail[0, t], action[:, None], -1)))
    actions = jnp.stack(actions)  # [T + 1, N]
    played = ep.replace(action=jnp.broadcast_to(actions, ep.action.shape),
                        filled=jnp.ones_like(ep.filled))
    q = jax.jit(c.phases.agent_q)(state, played)
    np.testing.assert_array_equal(targets.greedy(q[0], ep.avail[0]), actions)


def test_exploration_follows_the_observed_env_steps():
    spec = value_spec(actions=5)
    config = dataclasses.replace(SMALL, epsilon_start=1.0, epsilon_finish=0.0,
                                 epsilon_anneal_steps=100)
    c = compiled("vdn", spec, config)
    state, carry = c.init(jax.random.key(7)), c.algo.initial_carry()
    obs = jax.random.normal(jax.random.key(8), (3, spec.obs_dim))
    avail = jnp.array([[True, False, True, False, True]] * 3)
    explore = jax.jit(jax.vmap(c.algo.policy(True), in_axes=(None, None, 0, None, None)))
    keys = jax.random.split(jax.random.key(9), 200)
    greedy = c.act(state, carry, keys[0], obs, avail, False)[0]
    early = explore(state, carry, keys, obs, avail)[0]
    late_state = c.algo.observe(state, jnp.int32(100), jnp.int32(4))
    late = explore(late_state, carry, keys, obs, avail)[0]
    assert bool(jnp.all(late == greedy))
    assert set(np.unique(np.asarray(early))) == {0, 2, 4}


def test_feedforward_form_acts_over_valid_actions_and_learns_one_step_targets():
    spec = dataclasses.replace(value_spec(shared_reward=False),
                               action_sizes=(4, 2, 3), num_actions=4, state_dim=0)
    c = compiled("vdn", spec, SMALL_MLP)
    state = c.init(jax.random.key(10))
    obs = jax.random.normal(jax.random.key(11), (64, 3, spec.obs_dim))
    env_action, vec = jax.jit(batched_act(c.algo), static_argnums=3)(state, obs,
                                                                    jax.random.key(12), True)
    assert env_action.shape == (64, 3) and env_action.dtype == jnp.int32
    np.testing.assert_array_equal(vec, jax.nn.one_hot(env_action, 4))
    assert bool(jnp.all(jnp.take_along_axis(spec.action_mask[None], env_action[..., None], -1)))

    k = jax.random.split(jax.random.key(13), 3)
    batch = Transition(obs=obs[:8], action=vec[:8],
                       reward=jax.random.normal(k[0], (8, 3)),
                       next_obs=jax.random.normal(k[1], (8, 3, spec.obs_dim)),
                       done=jnp.broadcast_to((jnp.arange(8) % 3 == 0)[:, None], (8, 3)) * 1.0)
    p = c.phases
    q = jax.jit(p.agent_q)(state, batch)
    y = jax.jit(p.targets)(state, batch, q)
    # VDN, one step, double Q: r_team + gamma (1 - done) sum_i Q^-_i(o'_i, argmax over valid)
    q_next = q[:, 1]
    boot = targets.chosen(q_next, targets.greedy(q_next, spec.action_mask))  # target == online
    expect = batch.reward.sum(-1) + SMALL.gamma * (1 - batch.done[:, 0]) * boot.sum(-1)
    np.testing.assert_allclose(y[:, 0, 0], expect, rtol=1e-5, atol=1e-5)
    _, metrics, td = c.update(state, batch, jnp.ones(8), jax.random.key(0))
    assert td.shape == (8,) and np.isfinite(float(metrics["loss"]))
    per_agent = jax.tree.map(lambda x: jnp.broadcast_to(x, (3, *x.shape)), batch)
    with pytest.raises(ValueError, match="one batch for all agents"):
        c.algo.update(state, per_agent, jnp.ones((3, 8)), jax.random.key(0))


@pytest.mark.parametrize("algo_name", ["qmix", "owqmix"])
@pytest.mark.fast_cases(1)
def test_reward_scale_multiplies_the_reward_in_every_target(algo_name):
    """``reward_scale`` k gives the targets (and the loss) of the batch whose team reward is k
    times as large, for QMIX's targets and for Q*'s."""
    spec = value_spec()
    batch = random_episodes(jax.random.key(4), spec, (3, 5), (True, False), rows=5)
    scaled = batch.replace(reward=batch.reward * 3.0)
    out = {}
    for scale, episodes in ((3.0, batch), (1.0, scaled)):
        config = dataclasses.replace(SMALL, reward_scale=scale)
        algo = make_algo(algo_name, spec, config)
        phases = algo_phases(algo_name, spec, config)

        @jax.jit
        def targets_and_loss(episodes, algo=algo, phases=phases):
            state = algo.init(jax.random.key(1))
            q = phases.agent_q(state, episodes)
            y = phases.targets(state, episodes, q)
            return y, phases.loss_and_grad(state, episodes, jnp.ones(2), y)[1].loss

        out[scale] = targets_and_loss(episodes)
    np.testing.assert_allclose(out[3.0][0], out[1.0][0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out[3.0][1], out[1.0][1], rtol=1e-6)
    with pytest.raises(ValueError, match="reward_scale must be > 0"):
        dataclasses.replace(SMALL, reward_scale=0.0)


def _update_outputs(algo_name: str, config: ValueConfig, batch: Episode):
    c = compiled(algo_name, value_spec(), config)
    weights = jnp.ones(batch.filled.shape[0])
    return c.update(c.init(jax.random.key(2)), batch, weights, jax.random.key(3))


@pytest.mark.parametrize("algo_name", ["qmix", "owqmix", "macpo"])
@pytest.mark.fast_cases(1)
def test_train_rows_past_every_episode_change_nothing(algo_name):
    """With ``train_rows`` at or past every episode's bootstrap row, only padding rows are
    dropped: the update (parameters, metrics, priorities) is the full-length one."""
    spec = value_spec()
    batch = random_episodes(jax.random.key(5), spec, (3, 4, 2), (True, False, False))
    full = _update_outputs(algo_name, SMALL, batch)
    short = _update_outputs(algo_name, dataclasses.replace(SMALL, train_rows=4), batch)
    assert float(short[1].pop("cut_episodes")) == 0.0
    assert_trees_close(short[0].params, full[0].params, rtol=1e-5, atol=1e-6)
    assert_trees_close(short[1], full[1], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(short[2], full[2], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("algo_name", ["qmix", "owqmix"])
@pytest.mark.fast_cases(1)
def test_train_rows_cut_a_longer_episode_as_a_truncated_one(algo_name):
    """An episode running past ``train_rows`` = K is learned as the same episode truncated
    after K steps (rows K.. unfilled, not terminated), bootstrapped from row K."""
    spec = value_spec()
    batch = random_episodes(jax.random.key(6), spec, (6, 2), (True, False))
    cut_at = 3
    truncated = batch.replace(
        filled=batch.filled.at[0, cut_at:].set(0.0),
        terminated=batch.terminated.at[0, cut_at:].set(0.0))
    short = _update_outputs(algo_name, dataclasses.replace(SMALL, train_rows=cut_at), batch)
    full = _update_outputs(algo_name, SMALL, truncated)
    assert float(short[1].pop("cut_episodes")) == 0.5
    assert_trees_close(short[0].params, full[0].params, rtol=1e-5, atol=1e-6)
    assert_trees_close(short[1], full[1], rtol=1e-4, atol=1e-6)
    # and it differs from learning the whole episode
    whole = _update_outputs(algo_name, SMALL, batch)
    assert not np.allclose(float(short[1]["loss"]), float(whole[1]["loss"]))


def test_train_rows_is_checked():
    with pytest.raises(ValueError, match="train_rows must be an int >= 0"):
        dataclasses.replace(SMALL, train_rows=-1)
    with pytest.raises(ValueError, match="train_rows cuts replayed episodes"):
        dataclasses.replace(SMALL_MLP, train_rows=40)


def test_the_agent_options_reach_acting_updates_and_qstar():
    """``agent_ids=False`` and the clamp (the AccMER authors' stag-hunt agent): the agent
    network and ``Q*``'s take inputs without the id, acting and the update see clamped
    Q-values, ``Q*``'s agent is not clamped, and the update is finite."""
    spec = value_spec()
    config = dataclasses.replace(SMALL, agent_ids=False, agent_q_min=-0.01, agent_q_max=0.01)
    c = compiled("macpo", spec, config)
    state = c.init(jax.random.key(0))
    in_dim = spec.obs_dim + spec.num_actions
    assert state.params.agent["params"]["encoder"]["kernel"].shape[0] == in_dim
    assert state.params.qstar.agent["params"]["encoder"]["kernel"].shape[0] == in_dim
    qstar_agent = central.make_qstar(config, spec.num_actions).agent
    assert (qstar_agent.ids, qstar_agent.q_min, qstar_agent.q_max) == (False, None, None)
    ep = _episodes(spec)
    q = jax.jit(c.phases.agent_q)(state, ep)
    assert float(jnp.max(jnp.abs(q))) <= 0.01 + 1e-7
    assert float(jnp.min(q)) == pytest.approx(-0.01) or float(jnp.max(q)) == pytest.approx(0.01)
    state, metrics, _ = c.update(state, ep, jnp.ones(len(LENGTHS)), jax.random.key(1))
    assert all(np.isfinite(np.asarray(v)).all() for v in jax.tree.leaves(metrics))
    action, _, _ = c.act(state, c.algo.initial_carry(), jax.random.key(2), ep.obs[0, 0],
                         ep.avail[0, 0], False)
    assert action.shape == (spec.num_agents,)
