"""Paper 004's presets for the value learners (:mod:`jaxmarl_accel.algos.value.presets`)."""

from __future__ import annotations

from typing import Any

import pytest

from jaxmarl_accel.algos.registry import buffer_kwargs, family_defaults
from jaxmarl_accel.algos.value.presets import PRESET_REPLAY_CAP, PRESETS, preset
from jaxmarl_accel.buffers import estimate_bytes
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.envs import make
from jaxmarl_accel.trainer.steps import example_episode


def preset_config(name: str, algo: str, **fields: Any) -> TrainConfig:
    """The run of preset ``name`` for ``algo`` with ``fields`` set over it."""
    return TrainConfig(**{**preset(name, algo), "algo": algo, **fields})


@pytest.mark.parametrize("algo", ["qmix", "owqmix", "cwqmix", "macpo", "accmer"])
@pytest.mark.parametrize("name", PRESETS)
def test_paper_004_presets_are_tables_ii_and_iii_with_the_replay_capped(name, algo):
    config = preset_config(name, algo)
    punishment, batch, replay = {"paper004-p0": (0.0, 256, 100_000),
                                 "paper004-p1.5": (-1.5, 128, 10_000)}[name]
    assert config.env == "stag_hunt" and config.algo == algo
    assert dict(config.env_kwargs) == {"miscapture_punishment": punishment, "num_agents": 8,
                                       "num_stags": 8}
    assert config.batch_size == batch
    assert config.buffer_capacity == min(replay, PRESET_REPLAY_CAP)
    assert config.learner.epsilon_start == 0.995
    assert config.learner.target_update_episodes == 200
    assert (config.learner.lr, config.learner.td_lambda) == (1e-3, 0.6)
    assert config.num_envs == family_defaults(algo)["num_envs"]  # pymarl2's defaults beside
    if algo == "accmer":  # gamma_W of Sec. V-B, Alg. 1's window with the paper's d
        assert buffer_kwargs(config) == {"reuse_ratio": 0.5, "loss_weights": "ones",
                                         "decay": 1.0 if name == "paper004-p0" else 0.8,
                                         "reuse_window": replay // batch}
    else:
        assert "sampler_kwargs" not in preset(name, algo)
    assert preset_config(name, algo, batch_size=32).batch_size == 32


def test_the_preset_replay_cap_fits_its_stated_memory():
    """20,000 episodes of the 8-agent stag hunt are 3.7 GiB per seed; Table II's 100,000
    would be 18.6 GiB; a 1.05M-step run collects 5,256 episodes, under the cap."""
    env, _ = make("stag_hunt", num_agents=8, num_stags=8)
    per_episode = estimate_bytes(example_episode(env.spec), capacity=100, layout="episode") / 100
    assert 3.6 < PRESET_REPLAY_CAP * per_episode / 2**30 < 3.8
    assert 18.5 < 100_000 * per_episode / 2**30 < 18.7
    assert preset("paper004-p0", "macpo", replay_cap=50_000)["buffer_capacity"] == 50_000


def test_presets_refuse_unknown_names_and_learners_in_one_line():
    for args, message in ((("paper004-p2", "macpo"), "preset must be one of"),
                          (("paper004-p0", "maddpg"), "algo must be one of qmix.*got 'maddpg'"),
                          (("paper004-p0", "macpo", 0), "replay_cap must be >= 1")):
        with pytest.raises(ValueError, match=message) as error:
            preset(*args)
        assert "\n" not in str(error.value)
