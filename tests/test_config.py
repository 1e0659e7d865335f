"""jaxmarl_accel.config: validation (its own, its learner's and its replay kind's), the
transition round's schedule helpers and the (de)serialisation."""

from __future__ import annotations

import json

import pytest

from jaxmarl_accel.algos import ActorCriticConfig
from jaxmarl_accel.algos.registry import buffer_kwargs
from jaxmarl_accel.algos.value import ValueConfig
from jaxmarl_accel.config import TrainConfig, config_from_dict, config_to_dict
from jaxmarl_accel.trainer.rounds.transition import (
    first_update_step,
    rounds_per_chunk,
    total_rounds,
    updates_per_round,
)
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
