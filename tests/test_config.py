"""jaxmarl_accel.config: validation, the schedule helpers and the (de)serialisation."""

from __future__ import annotations

import json

import pytest

from jaxmarl_accel.algos import ActorCriticConfig
from jaxmarl_accel.algos.value import ValueConfig
from jaxmarl_accel.buffers import estimate_bytes
from jaxmarl_accel.config import (
    PRESET_REPLAY_CAP,
    PRESETS,
    TrainConfig,
    buffer_kwargs,
    config_from_dict,
    config_to_dict,
    family_defaults,
    first_update_step,
    preset,
    preset_config,
    rounds_per_chunk,
    total_rounds,
    updates_per_round,
)
from jaxmarl_accel.envs import make
from jaxmarl_accel.trainer.steps import example_episode
from tests.trainer.test_train import tiny_config


def test_schedule_helpers():
    config = tiny_config()
    assert updates_per_round(config) == 1
    assert rounds_per_chunk(config) == 4
    assert total_rounds(config) == 12
    assert first_update_step(config) == 100  # learning_starts 100, rounds of 50 steps
    assert first_update_step(tiny_config(learning_starts=120)) == 150
    assert first_update_step(tiny_config(learning_starts=0)) == 50  # batch_size 32
    shorter = tiny_config(total_env_steps=650)  # 3 chunks of 4 rounds, then one of 1 round
    assert total_rounds(shorter) == 13
    many_envs = tiny_config(num_envs=100, update_every=25, eval_every=200)
    assert updates_per_round(many_envs) == 4


@pytest.mark.parametrize("bad, match", [
    (dict(num_envs=3, update_every=50), "divide"),
    (dict(eval_every=130), "multiple of the env steps per round"),
    (dict(total_env_steps=520), "total_env_steps .* multiple of the env steps per round"),
    (dict(batch_size=0), "batch_size"),
    (dict(sampler="nope"), "sampler must be one of"),
    (dict(batch_size=2000), "exceeds buffer_capacity"),
    (dict(episode_updates=0), "episode_updates must be >= 1"),
    (dict(episode_updates=2), "episode_updates \\(2\\) applies to episode replay"),
])
def test_config_rejects_bad_values(bad, match):
    with pytest.raises(ValueError, match=match):
        tiny_config(**bad)


def test_config_survives_a_json_round_trip():
    config = tiny_config(env_kwargs=(("continuous_actions", True), ("num_agents", 4)),
                         sampler="per", sampler_kwargs=(("alpha", 0.7), ("beta", 0.5)),
                         learner=ActorCriticConfig(hidden_sizes=(8, 4), target_entropy=None))
    data = json.loads(json.dumps(config_to_dict(config)))
    assert data["env_kwargs"] == {"continuous_actions": True, "num_agents": 4}
    assert config_from_dict(data) == config
    assert config_from_dict(config_to_dict(TrainConfig())) == TrainConfig()


def test_config_from_dict_names_unknown_fields():
    data = config_to_dict(TrainConfig())
    data["no_such_field"] = 1
    with pytest.raises(TypeError, match="no_such_field"):
        config_from_dict(data)


def test_accmer_samples_with_the_reuse_sampler_and_its_own_defaults():
    config = TrainConfig(algo="accmer", env="stag_hunt")
    assert config.sampler == "reuse"
    assert buffer_kwargs(config) == {"reuse_ratio": 0.5, "loss_weights": "ones", "decay": 1.0}
    given = TrainConfig(algo="accmer", env="stag_hunt", sampler_kwargs=(("decay", 0.8),))
    assert buffer_kwargs(given)["decay"] == 0.8 and buffer_kwargs(given)["reuse_ratio"] == 0.5
    assert buffer_kwargs(TrainConfig(algo="qmix", env="stag_hunt")) == {}
    for kwargs, message in (
            ({"sampler": "per"},
             "sampler 'per': algo 'accmer' draws AccMER's reused and fresh sets with the"),
            ({"sampler": "reuse", "sampler_kwargs": (("loss_weights", "table"),)},
             "loss_weights='table'")):
        with pytest.raises(ValueError, match=message) as error:
            TrainConfig(algo="accmer", env="stag_hunt", **{**kwargs})
        assert "\n" not in str(error.value)


def test_macpo_samples_by_its_weights_by_default_and_weights_its_loss_without_priorities():
    config = TrainConfig(algo="macpo", env="stag_hunt")
    assert config.sampler == "per"  # prioritized episodes, P(i) = p_i / sum p (alpha 1)
    assert buffer_kwargs(config) == {"alpha": 1.0, "beta": 0.0, "beta_final": 0.0}
    uniform = TrainConfig(algo="macpo", env="stag_hunt",
                          **{"sampler": "uniform"})
    assert buffer_kwargs(uniform) == {}  # any sampler: macpo_weighting 'auto' weights the loss
    with pytest.raises(ValueError, match="macpo_weighting 'priority': sampler 'uniform'") as error:
        TrainConfig(algo="macpo", env="stag_hunt", learner=ValueConfig(
            macpo_weighting="priority"), **{"sampler": "uniform"})
    assert "\n" not in str(error.value)


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
