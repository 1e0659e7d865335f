"""What a small run reports: the env steps it really takes and why, the exploration rate its
episodes were collected at, and its learning curve's title."""

from __future__ import annotations

import json
import os

import pytest

from jaxmarl_accel.cli import run
from jaxmarl_accel.runs import outputs, summary
from jaxmarl_accel.trainer.train import make_trainer
from tests.cli.test_run import TINY
from tests.conftest import run_keeping_titles

pytestmark = pytest.mark.xdist_group("small_runs")

STAG = ["--env", "stag_hunt", "--agents", "4", "--seeds", "1", "--algo", "qmix",
        "--env-kwargs", "num_stags=2,grid_size=5,episode_length=10", "--hidden", "8",
        "--mixer-embed", "4", "--hypernet-hidden", "8", "--buffer-capacity", "16",
        "--batch-size", "4", "--num-envs", "2", "--eval-every", "100",
        "--epsilon-anneal-steps", "200", "--total-env-steps", "190", "--eval-episodes", "2",
        "--baseline-episodes", "16", "--quiet"]
"""QMIX on a tiny stag hunt, 1 seed: rounds of 2 envs x 10 steps, so 190 steps are 200;
epsilon falls from 1 to 0.05 over 200 env steps."""


@pytest.fixture(scope="module")
def stag_run(tmp_path_factory):
    """The tiny QMIX run's folder and the titles its learning curve was drawn with."""
    out = str(tmp_path_factory.mktemp("stag") / "run")
    return out, run_keeping_titles([*STAG, "--out", out])


def read(folder: str, name: str) -> dict:
    with open(os.path.join(folder, name)) as handle:
        return json.load(handle)


@pytest.mark.slow
def test_the_summary_reports_the_steps_taken_and_why(stag_run):
    out, _ = stag_run
    record = read(out, outputs.SUMMARY_NAME)
    assert record["env_steps_per_seed"] == 200 and record["env_steps_requested"] == 190
    assert record["env_steps_note"] == (
        "--total-env-steps 190 is rounded up to 200 env steps per seed: whole rounds of 20 "
        "steps (one whole episode of 10 steps in each of the --num-envs 2 envs)")
    rows = outputs.read_rows(out)
    assert max(row["env_steps"] for row in rows) == 200


@pytest.mark.slow
def test_metrics_show_the_exploration_rate_the_episodes_were_collected_at(stag_run):
    out, _ = stag_run
    rows = outputs.read_rows(out)
    # chunk 0 acts at the clocks 0, 20, .., 80 (mean 40), chunk 1 at 100, .., 180 (mean 140):
    # epsilon = 1 - 0.95 * clock / 200, the first chunk's before any update was made
    assert [row["epsilon"] for row in rows] == pytest.approx([0.81, 0.335])


@pytest.mark.slow  # the fast tier: curve_title's own test (tests/runs/test_figures.py) and the
# title a run draws (tests/cli/test_run.py's test_the_curve_is_titled_with_the_algo_env_and_seeds)
def test_the_curve_of_one_seed_is_titled_in_the_singular(stag_run):
    _, titles = stag_run
    assert titles == ["qmix on stag_hunt (1 seed)"]


def test_the_exploration_rate_is_the_schedule_of_the_runs_clock():
    parser = run.build_parser()
    config = run.config_from_args(parser.parse_args(STAG))
    trainer = make_trainer(config)
    assert outputs.exploration_rates(trainer, 0) == {"epsilon": pytest.approx(0.81)}
    matd3 = make_trainer(run.config_from_args(parser.parse_args(TINY)))
    assert outputs.exploration_rates(matd3, 0) == {}
    assert summary.rounded_steps_note(matd3) is None  # 600 steps: whole rounds of 50
