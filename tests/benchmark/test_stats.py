"""Statistics and report of made-up scores: rliable's aggregates, intervals, probabilities of
improvement, profiles and curves, and the files of a report."""

import json
import os

import numpy as np
import pytest

from jaxmarl_accel.benchmark import report, scores, stats

pytest.importorskip("rliable")


def record(task, learner, level, wins=False, seeds=3):
    steps = np.array([100.0, 200.0])
    returns = np.stack([np.linspace(-10, level, 2) + 0.1 * s for s in range(seeds)])
    won = np.clip(returns / 10, 0, 1) if wins else None
    return scores.Record(task, learner, steps, returns, won, 1.5, -10.0, 0.0)


def test_scores_are_win_rates_normalized_or_min_max():
    smax = scores.task_scores([record("t", "a", 5.0, wins=True)])
    assert smax.kind == scores.WIN_RATE
    normalized = scores.task_scores([record("t", "a", -5.0)])
    assert normalized.kind == scores.NORMALIZED
    np.testing.assert_allclose(normalized.final["a"], [0.5, 0.51, 0.52])
    bare = dataclass_without_scripted(record("t", "a", -5.0))
    other = dataclass_without_scripted(record("t", "b", -2.0))
    minmax = scores.task_scores([bare, other])
    assert minmax.kind == scores.MIN_MAX
    assert minmax.final["b"].max() == pytest.approx(1.0)


def dataclass_without_scripted(item):
    import dataclasses

    return dataclasses.replace(item, scripted_return=None)


def test_statistics_and_report_files(tmp_path):
    records = [record("t1", "good", -1.0), record("t1", "bad", -8.0),
               record("t2", "good", -2.0), record("t2", "bad", -9.0),
               record("t3", "good", -3.0)]
    task_scores = scores.suite_scores(records)
    result = stats.suite_statistics(task_scores, reps=50)
    assert result["overall"]["good"]["tasks"] == ["t1", "t2", "t3"]
    assert result["overall"]["bad"]["tasks"] == ["t1", "t2"]
    point, low, high = result["overall"]["good"]["IQM"]
    assert low <= point <= high
    assert result["improvement"]["good,bad"][0] == 1.0
    assert result["improvement"]["good,bad"][3] == ["t1", "t2"]
    assert len(result["profiles"]["good"]) == len(result["profiles"]["tau"])
    assert len(result["curves"]["bad"]["iqm"]) == 10
    paths = report.write_report(str(tmp_path), "mini", records, task_scores, result)
    assert sorted(os.path.basename(p) for p in paths) == sorted(
        [report.STATISTICS, report.MARL_EVAL, report.TABLE, *report.FIGURES])
    table = (tmp_path / report.TABLE).read_text()
    assert "| t3 | normalized score | " in table and "| IQM | " in table
    from jaxmarl_accel.runs import marl_eval

    exported = json.loads((tmp_path / report.MARL_EVAL).read_text())
    marl_eval.validate(exported)
    assert exported["mini"]["t1"]["good"]["seed_0"]["step_1"]["step_count"] == 200
