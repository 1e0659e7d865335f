"""runs.fit: the replay capacity and evaluation period a user leaves out follow the run's
budget and the machine; values given are kept."""

from __future__ import annotations

import pytest

from jaxmarl_accel.cli import run as run_cli
from jaxmarl_accel.runs import fit

SMALL = ["--num-envs", "4", "--batch-size", "32", "--hidden-sizes", "16", "16", "--quiet"]


def test_nice_rounding():
    assert [fit.round_down_nicely(v) for v in (0, 1, 3, 7, 19, 250, 6_000, 150_000)] == [
        1, 1, 2, 5, 10, 200, 5_000, 100_000]
    assert [fit.round_down_figures(v) for v in (7, 99, 3_456, 1_049_999)] == [
        7, 99, 3_400, 1_000_000]


@pytest.mark.parametrize(("total", "per_round", "every"), [
    (1_500_000, 100, 50_000), (60_000, 100, 5_000), (20_000, 100, 2_000),
    (400, 100, 100), (22_400, 3_200, 3_200), (1_050_000, 200, 50_000),
    (1_536_000, 3_200, 51_200)])
def test_the_evaluation_period_follows_the_budget(total, per_round, every):
    assert fit.budget_eval_every(total, per_round) == every


def options(argv):
    parser = run_cli.build_parser()
    trainer, _ = run_cli.options_from_args(parser, parser.parse_args(argv))
    return trainer.config


def test_left_out_the_capacity_is_what_the_run_adds_and_the_period_a_tenth(capsys):
    config = options(["--algo", "maddpg", "--total-env-steps", "2000", *SMALL[:-1]])
    assert (config.buffer_capacity, config.eval_every) == (2_000, 200)
    line = capsys.readouterr().out.strip()
    assert line.startswith("defaults for this run: replay capacity 2,000 transitions per "
                           "seed (all the run adds")
    assert "--buffer-capacity sets it" in line and "every 200 env steps" in line
    assert "\n" not in line


def test_given_values_are_kept():
    config = options(["--algo", "maddpg", "--total-env-steps", "2000", "--eval-every", "1000",
                      "--buffer-capacity", "50000", *SMALL])
    assert (config.buffer_capacity, config.eval_every) == (50_000, 1_000)


def test_episode_replay_counts_episodes():
    # 2 rounds of 4 whole 25-step episodes: 8 episodes, below the batch of 32
    config = options(["--algo", "qmix", "--total-env-steps", "200", *SMALL[:4], "--quiet"])
    assert config.buffer_capacity == 32
    config = options(["--algo", "qmix", "--total-env-steps", "10000", *SMALL[:4], "--quiet"])
    assert config.buffer_capacity == 400  # 100 rounds x 4 envs


def test_the_capacity_fits_the_memory_available(monkeypatch):
    gib = 2**30
    monkeypatch.setattr(fit, "available_bytes", lambda: (2 * gib, "cpu (host MemAvailable)"))
    config = options(["--algo", "maddpg", "--total-env-steps", "3000000", "--seeds", "2",
                      *SMALL])
    # half of 2 GiB less the fixed 0.75 GiB leaves 0.25 GiB for 2 replays of ~0.9 KB items
    assert 32 < config.buffer_capacity < 1_000_000
    assert config.buffer_capacity == fit.round_down_figures(config.buffer_capacity)
    monkeypatch.setattr(fit, "available_bytes", lambda: (gib // 2, "cpu (host MemAvailable)"))
    assert options(["--algo", "maddpg", "--total-env-steps", "3000000", *SMALL]
                   ).buffer_capacity == 32  # the batch: the memory check then refuses


def test_a_run_without_replay_keeps_its_fields():
    config = options(["--algo", "ppo", "--total-env-steps", "6400", "--num-envs", "4",
                      "--quiet"])
    assert config.buffer_capacity == 1_000_000 and config.eval_every == 800
