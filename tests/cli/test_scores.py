"""The normalized score: undefined when the scripted and random returns tie."""

from __future__ import annotations

import pytest

from jaxmarl_accel.cli import outputs


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
