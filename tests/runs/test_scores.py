"""The normalized score and its baselines: undefined when the scripted and random returns
tie, and fewer baseline episodes by default for large scenarios."""

from __future__ import annotations

import pytest

from jaxmarl_accel.cli import run
from jaxmarl_accel.runs import outputs, summary
from tests.cli.test_run import TINY


def test_baselines_that_tie_leave_the_normalized_score_undefined():
    # a 1,000-agent gridworld: scripted and random 1e-4 apart, the learners at 0.5
    tied = outputs.summarize([0.5, 0.4], -0.0101, -0.0100, baseline_se=(1e-5, 1e-5, 80))
    assert not any(key.endswith("normalized_score") or key == "normalized_score_per_seed"
                   for key in tied)
    assert "undefined" in tied["normalized_score_note"] and tied["median_return"] == 0.45
    assert "baseline_warning" not in tied and tied["scripted_return"] == -0.0100
    # the recorded A2C gridworld run: baselines 0.196 apart, returns up to 6.7 stay scored
    kept = outputs.summarize([-3.76, -3.24, 6.706], -0.796, -0.600)
    assert kept["median_normalized_score"] == pytest.approx((-3.24 + 0.796) / 0.196)
    assert outputs.undefined_score_note(0.0, 0.0, [0.0]) is not None


def test_large_scenarios_have_fewer_baseline_episodes_by_default(capsys):
    assert summary.default_baseline_episodes(4, 200) == 1000
    assert summary.default_baseline_episodes(32, 200) == 1000  # paper 004's largest hunt
    assert summary.default_baseline_episodes(1000, 100) == 80
    assert summary.default_baseline_episodes(1000, 5000) == 8
    parser = run.build_parser()
    args = parser.parse_args(["--algo", "a2c", "--env", "tag_gridworld", "--agents", "1000",
                              "--env-kwargs", "use_full_observation=false"])
    _, options = run.options_from_args(parser, args)
    assert options.baseline_episodes == 80
    given = parser.parse_args([*TINY, "--baseline-episodes", "5"])
    assert run.options_from_args(parser, given)[1].baseline_episodes == 5
    with pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "fewer for large scenarios" in text and "80 for 1,000 agents x 100 steps" in text
