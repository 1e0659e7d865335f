"""The on-policy learner: one network per team shared by its agents, gradients that stay
within a team, masked and clipped actions."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos import make_algo
from jaxmarl_accel.algos.on_policy import OnPolicyConfig
from jaxmarl_accel.algos.on_policy.learner import Minibatch
from jaxmarl_accel.algos.on_policy.networks import merge_teams, team_rows, teams_of
from jaxmarl_accel.algos.registry import algo_phases
from jaxmarl_accel.types import Rollout
from tests.algos.helpers import make_spec

SMALL = OnPolicyConfig(hidden_sizes=(8,), epochs=2, minibatches=2, rollout_length=3)
TEAMS = ("hunter", "runner", "hunter", "runner", "runner")  # interleaved: gathered rows


def spec_with_teams(continuous: bool):
    return dataclasses.replace(make_spec(len(TEAMS), continuous), teams=TEAMS)


def test_teams_gather_and_merge_back_in_agent_order():
    teams = teams_of(spec_with_teams(False))
    assert teams.names == ("hunter", "runner") and teams.slices == (None, None)
    x = jnp.arange(2 * 5).reshape(2, 5)
    parts = [team_rows(teams, k, x, 1) for k in range(2)]
    np.testing.assert_array_equal(parts[0], x[:, [0, 2]])
    np.testing.assert_array_equal(merge_teams(teams, parts, 1), x)
    contiguous = teams_of(dataclasses.replace(make_spec(3, False), teams=("a", "a", "b")))
    assert contiguous.slices == (slice(0, 2), slice(2, 3)) and contiguous.inverse is None


def random_minibatch(key, spec, batch=6):
    k_obs, k_act, k_adv, k_tgt = jax.random.split(key, 4)
    n = spec.num_agents
    return Minibatch(obs=jax.random.normal(k_obs, (batch, n, spec.obs_dim)),
                     action=jax.random.randint(k_act, (batch, n), 0, spec.num_actions),
                     log_prob=jnp.full((batch, n), -jnp.log(spec.num_actions)),
                     advantage=jax.random.normal(k_adv, (batch, n)),
                     target=jax.random.normal(k_tgt, (batch, n)), avail=None)


@pytest.mark.parametrize("name", ["a2c", "ppo"])
@pytest.mark.fast_cases(1)
def test_one_team_per_network_and_gradients_stay_within_a_team(name):
    spec = spec_with_teams(False)
    config = SMALL if name == "ppo" else dataclasses.replace(SMALL, epochs=4, minibatches=4)
    algo = make_algo(name, spec, config)
    state = jax.jit(algo.init)(jax.random.PRNGKey(0))
    assert len(state.params) == 2  # hunters and runners; no agent axis in the leaves
    kernel = state.params[0]["net"]["params"]["Dense_0"]["kernel"]
    assert kernel.shape == (spec.obs_dim, 8)
    batch = random_minibatch(jax.random.PRNGKey(1), spec)
    runners = np.asarray([t == "runner" for t in TEAMS])
    # the runners' samples change, the hunters' stay: the hunters' step must not change
    other = batch._replace(advantage=jnp.where(runners, -3.0 * batch.advantage, batch.advantage),
                           target=jnp.where(runners, batch.target + 5.0, batch.target),
                           obs=jnp.where(runners[:, None], -batch.obs, batch.obs))
    step = jax.jit(algo_phases(name, spec, config).minibatch_step)
    (first, metrics), (second, _) = step(state, batch), step(state, other)
    same = jax.tree.map(np.array_equal, first.params[0], second.params[0])
    assert all(jax.tree.leaves(same))
    moved = jax.tree.map(lambda a, b: not np.array_equal(a, b), first.params[1],
                         second.params[1])
    assert any(jax.tree.leaves(moved))
    assert all(np.isfinite(float(v)) for v in metrics.values())
    assert int(first.updates) == 1


def test_actions_respect_availability_and_the_unit_interval():
    spec = spec_with_teams(False)
    algo = make_algo("ppo", spec, SMALL)
    state = jax.jit(algo.init)(jax.random.PRNGKey(0))
    obs = jax.random.normal(jax.random.PRNGKey(1), (4, spec.num_agents, spec.obs_dim))
    avail = jnp.zeros((4, spec.num_agents, spec.num_actions), bool).at[..., 2].set(True)
    step, _ = jax.jit(algo.on_policy.sample)(state, (), obs, None, avail,
                                            jax.random.PRNGKey(2))
    assert step.env_action.shape == (4, spec.num_agents) and step.value.shape == (4, 5)
    np.testing.assert_array_equal(step.env_action, 2)
    np.testing.assert_allclose(step.log_prob, 0.0, atol=1e-6)
    for explore in (False, True):
        chosen, vec, carry = jax.jit(algo.policy(explore))(state, (), jax.random.PRNGKey(3),
                                                           obs[0], avail[0])
        np.testing.assert_array_equal(chosen, 2)
        np.testing.assert_array_equal(vec, jax.nn.one_hot(chosen, spec.num_actions))
        assert carry == () and algo.initial_carry() == ()

    continuous = spec_with_teams(True)
    algo = make_algo("a2c", continuous, dataclasses.replace(SMALL, epochs=4, minibatches=4,
                                                            log_std_init=1.0))
    state = jax.jit(algo.init)(jax.random.PRNGKey(0))
    obs = jax.random.normal(jax.random.PRNGKey(1), (4, 5, continuous.obs_dim))
    step, _ = jax.jit(algo.on_policy.sample)(state, (), obs, None, None,
                                            jax.random.PRNGKey(2))
    assert step.action.shape == (4, 5, continuous.act_dim)
    assert float(jnp.min(step.env_action)) >= 0.0 and float(jnp.max(step.env_action)) <= 1.0
    assert bool(jnp.any(step.action != step.env_action))  # stored unclipped for log pi
    greedy, vec, _ = jax.jit(algo.policy(False))(state, (), jax.random.PRNGKey(3), obs[0], None)
    assert greedy.shape == (5, continuous.act_dim) and bool(jnp.all((greedy >= 0) & (greedy <= 1)))
    np.testing.assert_array_equal(vec, greedy)


def test_each_team_learns_at_its_own_rate():
    spec = spec_with_teams(False)
    config = dataclasses.replace(SMALL, epochs=4, minibatches=4,
                                 team_lr=(("runner", 1e-2), ("hunter", 1e-4)))
    algo = make_algo("a2c", spec, config)
    state = jax.jit(algo.init)(jax.random.PRNGKey(0))
    step = algo_phases("a2c", spec, config).minibatch_step
    moved, _ = jax.jit(step)(state, random_minibatch(
        jax.random.PRNGKey(1), spec))
    # Adam's first step moves each parameter by about lr (g / |g|): the rates differ 100x
    for team, lr in ((0, 1e-4), (1, 1e-2)):
        step = max(float(jnp.max(jnp.abs(a - b))) for a, b in zip(
            jax.tree.leaves(moved.params[team]), jax.tree.leaves(state.params[team]),
            strict=True))
        np.testing.assert_allclose(step, lr, rtol=1e-3)
    with pytest.raises(ValueError, match="team_lr names prey, but the env's teams are "
                                         "hunter, runner"):
        make_algo("a2c", spec, dataclasses.replace(config, team_lr=(("prey", 1e-3),)))


def large_reward_rollout(spec, scale: float):
    """A rollout of 4 steps x 2 envs whose rewards are ``scale`` times a standard normal."""
    key = jax.random.split(jax.random.PRNGKey(3), 3)
    n, t, e = spec.num_agents, 4, 2
    return Rollout(obs=jax.random.normal(key[0], (t, e, n, spec.obs_dim)),
                   action=jax.random.randint(key[1], (t, e, n), 0, spec.num_actions),
                   log_prob=jnp.full((t, e, n), -jnp.log(spec.num_actions)),
                   value=jnp.zeros((t, e, n)), next_value=jnp.zeros((t, e, n)),
                   reward=scale * jax.random.normal(key[2], (t, e, n)),
                   terminated=jnp.zeros((t, e)), ended=jnp.zeros((t, e)))


@pytest.mark.slow
def test_normalized_values_keep_the_value_loss_small_and_map_back():
    spec = spec_with_teams(False)
    losses_of = {}
    for normalize in (False, True):
        algo = make_algo("ppo", spec, dataclasses.replace(SMALL, normalize_value=normalize))
        state = jax.jit(algo.init)(jax.random.PRNGKey(0))
        rollout = large_reward_rollout(spec, 1e4)
        new, metrics, _ = jax.jit(algo.update)(state, rollout, None, jax.random.PRNGKey(4))
        losses_of[normalize] = float(metrics["value_loss"])
        if normalize:
            from jaxmarl_accel.algos.on_policy.losses import gae, value_norm_moments
            returns = gae(rollout.reward, rollout.value, rollout.next_value,
                          rollout.terminated[..., None], rollout.ended[..., None],
                          SMALL.gamma, SMALL.gae_lambda).returns
            hunters = np.asarray([t == "hunter" for t in TEAMS])
            mu, sigma = value_norm_moments(new.value_norm[0])  # hunters, after one update
            np.testing.assert_allclose(mu, np.mean(np.asarray(returns)[..., hunters]),
                                       rtol=1e-4)
            np.testing.assert_allclose(sigma, np.std(np.asarray(returns)[..., hunters]),
                                       rtol=1e-3)
            # the values the rollout round reads are the head's outputs mapped back
            obs = rollout.obs[0]
            head = team_rows(teams_of(spec), 0, obs, -2)
            from jaxmarl_accel.algos.on_policy.networks import make_policy, team_forward
            _, v = team_forward(make_policy(spec, SMALL.hidden_sizes), new.params[0], head)
            np.testing.assert_allclose(team_rows(teams_of(spec), 0, algo.on_policy.value(
                new, (), obs, None), -1), mu + sigma * v, rtol=1e-5, atol=1e-2)
    assert losses_of[False] > 1e6 and losses_of[True] < 10.0


@pytest.mark.slow
def test_factored_actions_draw_each_choice_from_its_own_head():
    spec = dataclasses.replace(spec_with_teams(False), num_actions=12, action_sizes=(12,) * 5,
                               action_factors=(3, 4))
    obs = jax.random.normal(jax.random.PRNGKey(1), (64, 5, spec.obs_dim))
    for factored, out_size in ((True, 3 + 4), (False, 12)):
        algo = make_algo("a2c", spec, dataclasses.replace(SMALL, epochs=4, minibatches=4,
                                                          factored_actions=factored))
        state = jax.jit(algo.init)(jax.random.PRNGKey(0))
        kernel = state.params[0]["net"]["params"]["Dense_1"]["kernel"]
        assert kernel.shape == (8, out_size)
        step, _ = jax.jit(algo.on_policy.sample)(state, (), obs, None, None,
                                            jax.random.PRNGKey(2))
        assert step.action.dtype == jnp.int32
        assert set(np.unique(np.asarray(step.action))) == set(range(12))  # every joint action
        np.testing.assert_allclose(step.log_prob, -np.log(12.0), atol=0.05)  # near uniform
