"""``replay_obs="physical_state"`` in whole runs: the replay holds the envs' physical states
and its samples the env's observations, a smaller training state (as the run's memory check
counts it), the CLI flag, and one-line refusals where it cannot be used."""

from __future__ import annotations

import csv
import dataclasses
import os

import jax
import numpy as np
import pytest

from jaxmarl_accel.algos import ActorCriticConfig, make_algo
from jaxmarl_accel.buffers import LAYOUTS
from jaxmarl_accel.buffers.next_slot import next_obs_of, side_capacity
from jaxmarl_accel.cli import run
from jaxmarl_accel.compact_rows import observe_rows
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.envs import make
from jaxmarl_accel.runs import memory
from jaxmarl_accel.trainer.train import learner_observes, make_trainer
from jaxmarl_accel.tree_util import tree_leaf_bytes
from tests.test_replay_next_obs import bits, tiny_config

SPREAD_6 = (("k_nearest", 3), ("num_agents", 6))


def spread_config(**overrides) -> TrainConfig:
    """6-agent k = 3 spread, 4 envs, a replay of 90 slots that wraps, episodes of 25 steps."""
    return tiny_config(env_kwargs=SPREAD_6, **overrides)


@pytest.mark.parametrize("next_obs", ["stored", "next_slot"])
@pytest.mark.fast_cases(1)
def test_without_updates_the_replay_recomputes_the_stored_observations_bit_for_bit(next_obs):
    # no update: the same actions and env steps in both modes, so the replays hold the same
    # joint steps (rewards may differ in the last bit: the env step is compiled without
    # observing the pre-reset state, which XLA fuses with the reward)
    config = spread_config(learning_starts=1000, replay_next_obs=next_obs)
    key = jax.random.PRNGKey(3)
    stored, _ = jax.jit(make_trainer(config).train)(key)
    trainer = make_trainer(dataclasses.replace(config, replay_obs="physical_state"))
    physical, _ = jax.jit(trainer.train)(key)
    assert bits((physical.env_state, physical.obs)) == bits((stored.env_state, stored.obs))
    replay, kept = physical.buffer, stored.buffer
    assert replay.experience.obs.shape == (90, 6, trainer.env.spec.physical_state_dim)
    assert bits(replay.experience.action) == bits(kept.experience.action)
    np.testing.assert_allclose(replay.experience.reward, kept.experience.reward, rtol=1e-6)
    observe = jax.jit(lambda rows: observe_rows(
        lambda p: trainer.env.observe_physical(p, trainer.env_params), rows))
    slots = np.arange(90, dtype=np.int32)
    layout = LAYOUTS[config.layout]
    if next_obs == "next_slot":
        derive = jax.jit(lambda s: next_obs_of(s, slots, 90, config.num_envs, layout))
        got, want = derive(replay), derive(kept)
    else:
        got, want = replay.experience.next_obs, kept.experience.next_obs
    assert bits(observe(replay.experience.obs)) == bits(kept.experience.obs)
    assert bits(observe(got)) == bits(want)


@pytest.mark.slow  # the bit-for-bit recompute test keeps the module in the fast tier
def test_a_run_learns_the_same_to_float_rounding():
    key = jax.random.PRNGKey(3)
    config = spread_config(algo="matd3", sampler="per", replay_next_obs="next_slot")
    _, want = jax.jit(make_trainer(config).train)(key)
    _, got = jax.jit(make_trainer(dataclasses.replace(
        config, replay_obs="physical_state")).train)(key)
    assert int(np.sum(got.updates)) > 0
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("algo", "critic", "sharing", "batch"), [
    ("matd3", "knearest", "team", "pairs"), ("masac", "pic", "team", "pairs"),
    ("maddpg", "meanfield", "team", "joint_steps")])
@pytest.mark.slow
def test_neighbourhood_learners_observe_the_physical_states_themselves(algo, critic, sharing,
                                                                       batch):
    """The replay hands a neighbourhood learner the packed physical states, and it observes
    the rows it reads (pairs: [1 + k, N] distances per sample; otherwise all rows): the run
    learns what it learns from the observations, to float rounding."""
    key = jax.random.PRNGKey(5)
    algo_config = ActorCriticConfig(hidden_sizes=(16, 16), critic=critic, critic_k=2,
                                    sharing=sharing, shared_batch=batch)
    config = spread_config(algo=algo, learner=algo_config, replay_next_obs="next_slot")
    _, want = jax.jit(make_trainer(config).train)(key)
    physical = dataclasses.replace(config, replay_obs="physical_state")
    assert learner_observes(physical) and not learner_observes(config)
    trainer = make_trainer(physical)
    state = jax.eval_shape(trainer.init, key)
    sample = jax.eval_shape(trainer.buffer.sample, state.buffer, key).experience  # learner's
    assert sample.obs.shape[-1] == trainer.env.spec.physical_state_dim
    _, got = jax.jit(trainer.train)(key)
    assert int(np.sum(got.updates)) > 0
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def test_a_learner_told_to_observe_needs_a_neighbourhood_critic_and_a_physical_state():
    env, _ = make("simple_spread", num_agents=4, k_nearest=2)
    observe_at = lambda physical, agents: physical[agents]
    with pytest.raises(ValueError, match="only the neighbourhood critics observe"):
        make_algo("maddpg", env.spec, ActorCriticConfig(), observe_at)
    positions_only = dataclasses.replace(env.spec, physical_state_dim=0,
                                         physical_position_columns=None)
    with pytest.raises(ValueError, match="has no physical state"):
        make_algo("maddpg", positions_only, ActorCriticConfig(critic="knearest", critic_k=1),
                  observe_at)


def test_the_memory_check_counts_the_smaller_state():
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    config = spread_config(buffer_capacity=1000)
    counted = {}
    for obs_mode in ("observation", "physical_state"):
        for next_obs in ("stored", "next_slot"):
            trainer = make_trainer(dataclasses.replace(config, replay_obs=obs_mode,
                                                       replay_next_obs=next_obs))
            abstract = jax.eval_shape(jax.vmap(trainer.init), keys)
            counted[obs_mode, next_obs] = memory.check_state_fits(abstract, seeds=2)[0]
            assert counted[obs_mode, next_obs] == tree_leaf_bytes(abstract)
    spec = make_trainer(config).env.spec
    row = 6 * (spec.obs_dim - spec.physical_state_dim) * 4  # one [N, D] row as [N, F]
    side = side_capacity(1000, 4, 25)
    assert counted["observation", "stored"] - counted["physical_state", "stored"] == (
        2 * 2 * 1000 * row)
    assert counted["observation", "next_slot"] - counted["physical_state", "next_slot"] == (
        2 * (1000 + 4 + side) * row)


@pytest.mark.slow
def test_a_cli_run_trains_with_the_physical_state_replay(tmp_path):
    out = str(tmp_path / "out")
    argv = ["--env", "simple_spread", "--agents", "6", "--env-kwargs", "k_nearest=3",
            "--replay-obs", "physical_state", "--replay-next-obs", "next_slot",
            "--algo", "matd3", "--seeds", "2", "--hidden-sizes", "16", "16",
            "--buffer-capacity", "400", "--batch-size", "32", "--num-envs", "4",
            "--update-every", "20", "--learning-starts", "40", "--eval-every", "100",
            "--total-env-steps", "200", "--eval-episodes", "2", "--baseline-episodes", "4",
            "--quiet", "--out", out]
    assert run.main(argv) == 0
    with open(os.path.join(out, "metrics.csv")) as handle:
        rows = list(csv.DictReader(handle))
    assert rows and all(np.isfinite(float(v)) for row in rows for k, v in row.items()
                        if v not in ("", None) and k.endswith("return"))


def test_the_flag_sets_the_mode_and_refuses_unknown_ones(capsys):
    parser = run.build_parser()
    args = parser.parse_args(["--replay-obs", "physical_state"])
    assert run.config_from_args(args).replay_obs == "physical_state"
    assert run.config_from_args(parser.parse_args([])).replay_obs == "observation"
    with pytest.raises(SystemExit):
        parser.parse_args(["--replay-obs", "state"])
    assert "--replay-obs" in capsys.readouterr().err
    help_text = " ".join(parser.format_help().split())
    assert "--replay-obs {observation,physical_state}" in help_text
    assert "recomputes the observations with the env's own observation function" in help_text
    assert "neighbourhood critics observe only the rows they read" in help_text  # whole entry


def test_replays_that_cannot_recompute_observations_refuse_in_one_line():
    with pytest.raises(ValueError, match="replay_obs must be one of observation, "
                                         "physical_state; got 'state'"):
        spread_config(replay_obs="state")
    with pytest.raises(ValueError, match="replay_obs 'physical_state': episode replay"):
        TrainConfig(algo="qmix", env="stag_hunt", replay_obs="physical_state")
    with pytest.raises(ValueError, match="replay_obs 'physical_state': simple_adversary has "
                                         "no physical state"):
        make_trainer(tiny_config(env="simple_adversary", env_kwargs=(),
                                 replay_obs="physical_state"))
    with pytest.raises(ValueError, match="layout 'episode' stores whole episodes"):
        make_trainer(spread_config(layout="episode", replay_obs="physical_state"))
