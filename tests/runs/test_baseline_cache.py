"""runs.baseline_cache: an env's baselines are measured once, then read back by later runs of
the same env; another env setting, episode count or seed measures again."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.runs import baseline_cache, summary


def fake_trainer(**fields):
    config = TrainConfig(total_env_steps=200, eval_every=100, buffer_capacity=64,
                         batch_size=32, num_envs=4, **fields)
    return SimpleNamespace(config=config, env=SimpleNamespace(spec=SimpleNamespace(
        episode_length=25)))


@pytest.fixture
def measured(monkeypatch, tmp_path):
    """The measurements made (one entry per call), with the cache in a temporary folder."""
    monkeypatch.setenv(baseline_cache.CACHE_ENV, str(tmp_path / "baselines"))
    calls = []

    def measure(trainer, key, episodes):
        calls.append((trainer.config.env_kwargs, episodes))
        return {"random": np.asarray([-1.25, -2.5], np.float32) * len(calls),
                "scripted": np.asarray([0.125, 0.375], np.float32), "random_se": 0.1,
                "scripted_se": 0.05, "random_captures": 1.5}

    monkeypatch.setattr(summary, "baseline_returns", measure)
    return calls


def test_a_second_run_of_the_same_env_reads_the_cache(measured):
    lines = []
    first = summary.run_baselines(fake_trainer(), 1, 8, lines.append)
    assert len(measured) == 1
    assert "--baseline-episodes lowers it" in lines[0] and "8 episodes each" in lines[0]
    assert "200 env steps each" in lines[0] and "kept in" in lines[0]
    second = summary.run_baselines(fake_trainer(), 1, 8, lines.append)
    assert len(measured) == 1 and "read from" in lines[1]
    assert first.keys() == second.keys()
    for name, value in first.items():
        np.testing.assert_array_equal(second[name], value)
        assert np.asarray(second[name]).dtype == np.asarray(value).dtype


@pytest.mark.parametrize("change", [dict(fields=dict(env_kwargs=(("num_agents", 2),))),
                                    dict(fields=dict(env="simple_tag")),
                                    dict(episodes=9), dict(key_seed=2)])
def test_other_settings_measure_again(measured, change):
    summary.run_baselines(fake_trainer(), 1, 8, lambda line: None)
    summary.run_baselines(fake_trainer(**change.get("fields", {})), change.get("key_seed", 1),
                          change.get("episodes", 8), lambda line: None)
    assert len(measured) == 2


def test_off_measures_every_time(measured, monkeypatch):
    monkeypatch.setenv(baseline_cache.CACHE_ENV, "off")
    lines = []
    for _ in range(2):
        summary.run_baselines(fake_trainer(), 1, 8, lines.append)
    assert len(measured) == 2 and "kept in" not in lines[1]


def test_the_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv(baseline_cache.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert baseline_cache.cache_folder() == str(tmp_path / "jaxmarl_accel" / "baselines")


def test_an_unreadable_or_foreign_entry_is_measured_again(measured, tmp_path):
    trainer = fake_trainer()
    summary.run_baselines(trainer, 1, 8, lambda line: None)
    key = baseline_cache.baseline_key(trainer.config, 1, 8)
    path = baseline_cache.entry_path(str(tmp_path / "baselines"), key)
    with open(path, "w") as handle:
        handle.write("{not json")
    summary.run_baselines(trainer, 1, 8, lambda line: None)
    assert len(measured) == 2


def test_the_env_code_is_part_of_the_key():
    assert baseline_cache.env_code_tag("jaxmarl:overcooked").split(" ")[1] == "jaxmarl"
    own = baseline_cache.env_code_tag("simple_spread")
    assert own != baseline_cache.env_code_tag("examples.custom_env:make")
