"""``replay_next_obs="next_slot"`` in whole runs: the same numbers as ``"stored"`` bit for bit,
a smaller training state (as the run's memory check counts it), and its CLI flag."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from jaxmarl_accel.algos import ActorCriticConfig
from jaxmarl_accel.buffers import LAYOUTS
from jaxmarl_accel.buffers.next_slot import next_obs_of, side_capacity
from jaxmarl_accel.cli import run
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.runs import memory
from jaxmarl_accel.trainer.train import make_trainer


def tiny_config(**overrides) -> TrainConfig:
    """3-agent spread, 4 envs, a replay of 90 slots that wraps, episodes of 25 steps."""
    settings = dict(
        env="simple_spread", env_kwargs=(("num_agents", 3),), algo="maddpg",
        learner=ActorCriticConfig(hidden_sizes=(16, 16)), buffer_capacity=90, batch_size=16,
        num_envs=4, total_env_steps=240, update_every=20, learning_starts=40,
        eval_every=120, eval_episodes=2)
    settings.update(overrides)
    return TrainConfig(**settings)


def bits(tree) -> list[bytes]:
    return [np.asarray(leaf).tobytes() for leaf in jax.tree.leaves(tree)]


def test_a_run_computes_the_same_numbers_in_both_modes():
    """A whole run with PER (its priorities written back through both modes) and twin critics;
    every sampler's draws from both modes are compared in ``tests/buffers/test_next_slot.py``."""
    key = jax.random.PRNGKey(3)
    stored_cfg = tiny_config(algo="matd3", sampler="per")
    compact_cfg = dataclasses.replace(stored_cfg, replay_next_obs="next_slot")
    stored, stored_metrics = jax.jit(make_trainer(stored_cfg).train)(key)
    compact, compact_metrics = jax.jit(make_trainer(compact_cfg).train)(key)
    assert bits(compact_metrics) == bits(stored_metrics)
    for field in ("algo", "env_state", "obs", "episode_return", "key", "env_steps"):
        assert bits(getattr(compact, field)) == bits(getattr(stored, field)), field
    replay, kept = compact.buffer, stored.buffer
    assert bits(replay.experience) == bits(kept.experience.replace(next_obs=None))
    assert bits((replay.sampler, replay.write_pos, replay.size)) == bits(
        (kept.sampler, kept.write_pos, kept.size))
    slots = np.arange(stored_cfg.buffer_capacity, dtype=np.int32)
    derived = next_obs_of(replay, slots, stored_cfg.buffer_capacity, stored_cfg.num_envs,
                          LAYOUTS[stored_cfg.layout])
    assert bits(derived) == bits(kept.experience.next_obs)
    assert np.any(np.asarray(replay.successor.side_slot) >= 0)  # episode ends were kept aside


def test_the_memory_check_counts_the_smaller_state():
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    config = tiny_config(buffer_capacity=1000)
    counted = {}
    for mode in ("stored", "next_slot"):
        trainer = make_trainer(dataclasses.replace(config, replay_next_obs=mode))
        abstract = jax.eval_shape(jax.vmap(trainer.init), keys)
        counted[mode] = memory.check_state_fits(abstract, seeds=2)[0]
    obs_bytes = 3 * make_trainer(config).env.spec.obs_dim * 4
    side = side_capacity(1000, 4, 25)
    extra = 4 * obs_bytes + 1000 * 4 + side * (obs_bytes + 4) + 4
    assert counted["stored"] - counted["next_slot"] == 2 * (1000 * obs_bytes - extra)


def test_the_flag_sets_the_mode_and_refuses_unknown_ones(capsys):
    parser = run.build_parser()
    args = parser.parse_args(["--replay-next-obs", "next_slot"])
    assert run.config_from_args(args).replay_next_obs == "next_slot"
    assert run.config_from_args(parser.parse_args([])).replay_next_obs == "stored"
    with pytest.raises(SystemExit):
        parser.parse_args(["--replay-next-obs", "derived"])
    assert "--replay-next-obs" in capsys.readouterr().err


def test_replays_that_cannot_derive_next_obs_refuse_in_one_line():
    with pytest.raises(ValueError, match="replay_next_obs 'next_slot': episode replay"):
        TrainConfig(algo="qmix", env="stag_hunt", replay_next_obs="next_slot")
    with pytest.raises(ValueError, match="replay_next_obs 'next_slot' needs episodes of a "
                                         "fixed length; stag_hunt's can terminate early"):
        make_trainer(tiny_config(env="stag_hunt", env_kwargs=(), replay_next_obs="next_slot"))
    with pytest.raises(ValueError, match="layout 'episode' stores whole episodes"):
        make_trainer(tiny_config(layout="episode", replay_next_obs="next_slot"))
