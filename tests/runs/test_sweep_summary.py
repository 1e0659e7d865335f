"""``sweep.json``'s content from hand-made ``metrics.csv`` rows: scores and the env's
episode counters are read at the last evaluation, per setting, with median and IQR over
seeds."""

from __future__ import annotations

import numpy as np

from jaxmarl_accel.runs.pbt_run import PbtSteps
from jaxmarl_accel.runs.sweep_outputs import best_note, sweep_summary
from jaxmarl_accel.trainer.sweep import grid


def rows_of(returns, won):
    """Two chunks of rows for ``returns``/``won`` ``[K, S]`` at the last chunk; the first
    chunk's values are decoys that must not be read."""
    rows = []
    for chunk in (0, 1):
        for k, (ret_k, won_k) in enumerate(zip(returns, won, strict=True)):
            for s, (ret, w) in enumerate(zip(ret_k, won_k, strict=True)):
                rows.append({"setting": k, "seed": s, "chunk": chunk,
                             "eval_return": ret if chunk else -99.0,
                             "eval_won": w if chunk else -1.0})
    return rows


def test_scores_and_counters_are_the_last_evaluations_per_setting():
    sweep = grid({"lr": (0.001, 0.0005)})
    returns = [[1.0, 2.0, 3.0, 4.0], [0.0, 0.5, 1.0, 1.5]]
    won = [[0.5, 0.25, 1.0, 0.75], [0.0, 0.0, 0.25, 0.5]]
    summary = sweep_summary(rows_of(returns, won), sweep, 4, random_return=0.0,
                            scripted_return=2.0, stats=("won",))
    assert summary["score"] == "normalized_score"
    np.testing.assert_allclose(summary["final"], np.asarray(returns) / 2.0)
    np.testing.assert_allclose(summary["median"], [1.25, 0.375])
    assert summary["best"] == 0 and summary["best_setting"] == {"lr": 0.001}
    won_summary = summary["stats"]["won"]
    np.testing.assert_allclose(won_summary["final"], won)
    np.testing.assert_allclose(won_summary["median"], [0.625, 0.125])
    np.testing.assert_allclose(won_summary["iqr"], [[0.4375, 0.8125], [0.0, 0.3125]])


def test_a_counter_the_rows_do_not_have_is_left_out():
    sweep = grid({"lr": (0.001, 0.0005)})
    rows = [{k: v for k, v in row.items() if k != "eval_won"}
            for row in rows_of([[1.0], [2.0]], [[0.0], [0.0]])]
    summary = sweep_summary(rows, sweep, 1, 0.0, None, stats=("won",))
    assert summary["score"] == "eval_return" and summary["stats"] == {}
    assert summary["best"] == 1


def test_a_population_names_its_best_final_lane_with_the_values_it_ends_with():
    sweep = grid({"lr": (0.001, 0.0005)})
    rows = rows_of([[1.0, 2.0], [3.0, 0.5]], [[0.0, 0.0], [0.0, 0.0]])
    for row in rows:  # the values each lane trained its chunk with
        row["hp_lr"] = 0.01 * (1 + row["chunk"]) * (1 + row["setting"] * 2 + row["seed"])
    summary = sweep_summary(rows, sweep, 2, 0.0, None, population=True)
    lane = summary["best_lane"]
    assert (lane["lane"], lane["setting"], lane["seed"], lane["score"]) == (2, 1, 0, 3.0)
    assert lane["values"] == {"lr": 0.06}  # the last chunk's, not the starting 0.0005
    assert best_note(summary).startswith("best lane 2 (started as setting 1, seed 0; at the "
                                         "end lr=0.06): eval return 3.000")
    assert "best_lane" not in sweep_summary(rows, sweep, 2, 0.0, None)
    assert best_note(sweep_summary(rows, sweep, 2, 0.0, None)).startswith("best setting 1")


def test_population_steps_wait_for_learning_and_for_scores_that_differ(tmp_path):
    steps = PbtSteps(None, 0, 1, 10, str(tmp_path), False, first_update_step=250,
                     steps_per_chunk=100)
    assert not steps.steps_after(1, [1.0, 2.0])  # chunk 1 (100-200) ran before learning
    assert not steps.steps_after(2, [1.0, 2.0])  # chunk 2 (200-300) learned from 250 only
    assert steps.steps_after(3, [1.0, 2.0])
    assert not steps.steps_after(3, [1.5, 1.5, float("nan")])  # a tie: no best to copy
    assert not steps.steps_after(9, [1.0, 2.0])  # the last chunk
