"""``run --sweep``: one run folder for a grid of settings x seeds, its outputs, exact resume,
and one-line refusals of sweeps that cannot run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from jaxmarl_accel.cli import run
from jaxmarl_accel.runs import memory, progress
from jaxmarl_accel.runs.sweep_outputs import read_sweep
from tests.cli.test_run import (
    TINY,
    assert_same_outputs,
    exit_code,
    interrupt_after_chunk_1,
    one_line,
)
from tests.runs.test_checkpoint import read_arrays

pytestmark = pytest.mark.xdist_group("sweep_run")

SWEEP = ["--sweep", "actor_lr=0.01,0.001", "--sweep", "tau=0.01,0.005"]


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("sweep") / "run")
    assert run.main([*TINY, *SWEEP, "--out", out]) == 0
    return out


def test_a_sweep_writes_one_folder_with_a_setting_column(sweep_run):
    for name in ("config.json", "metrics.csv", "summary.json", "sweep.json", "sweep.png",
                 "marl_eval.json", "learning_curve.png"):
        assert os.path.getsize(os.path.join(sweep_run, name)) > 0, name
    lines = Path(sweep_run, "metrics.csv").read_text().strip().splitlines()
    assert lines[0].startswith("setting,seed,chunk,")
    assert len(lines) == 1 + 3 * 4 * 2  # header + chunks x settings x seeds
    sweep = read_sweep(sweep_run)
    assert sweep["settings"] == [{"actor_lr": 0.01, "tau": 0.01}, {"actor_lr": 0.01, "tau": 0.005},
                                 {"actor_lr": 0.001, "tau": 0.01},
                                 {"actor_lr": 0.001, "tau": 0.005}]
    assert sweep["score"] == "normalized_score" and np.asarray(sweep["final"]).shape == (4, 2)
    assert sweep["best"] == int(np.argmax(sweep["median"]))
    assert sweep["best_setting"] == sweep["settings"][sweep["best"]]
    for median, (low, high) in zip(sweep["median"], sweep["iqr"], strict=True):
        assert low <= median <= high
    stored = json.loads(Path(sweep_run, "config.json").read_text())
    assert stored["sweep"]["names"] == ["actor_lr", "tau"]
    algos = json.loads(Path(sweep_run, "marl_eval.json").read_text())["mpe"]["simple_spread_3ag"]
    assert sorted(algos) == sorted(f"matd3 actor_lr={a:g} tau={t:g}" for a in (0.01, 0.001)
                                   for t in (0.01, 0.005))  # one algorithm entry per setting


def test_a_resumed_sweep_writes_the_same_files(sweep_run, monkeypatch, tmp_path, capsys):
    out = str(tmp_path / "interrupted")
    interrupt_after_chunk_1(monkeypatch)
    assert run.main([*TINY, *SWEEP, "--out", out]) == 130
    monkeypatch.undo()
    assert run.main(["--resume", out, "--quiet"]) == 0
    assert_same_outputs(sweep_run, out)


@pytest.mark.parametrize("argv, message", [
    (["--sweep", "actor_lrr=0.1,0.2"], "'actor_lrr' is not a field of ActorCriticConfig"),
    (["--sweep", "actor_lr=abc"], "--sweep actor_lr: 'abc' is not a number"),
    (["--sweep", "actor_lr="], "--sweep actor_lr: no values"),
    (["--sweep", "actor_lr"], "--sweep takes NAME=V1,V2,..."),
    (["--sweep", "hidden_sizes=16,32"], "'hidden_sizes' changes an array shape"),
    (["--sweep", "tau=0.5,2"], "sweep setting 1 (tau=2): tau must lie in [0, 1]"),
    (["--sweep-samples", "4"], "--sweep-samples draws settings from --sweep ranges"),
    (["--sweep", "tau=0.1,0.2", "--sweep-samples", "4"], "the --sweep flags given are lists"),
    (["--sweep", "actor_lr=log:1e-4:1e-2"], "is a range: give --sweep-samples K"),
    (["--sweep", "actor_lr=log:0:1", "--sweep-samples", "2"], "needs 0 < LOW <= HIGH"),
    (["--sweep", "tau=0.1", "--sweep", "tau=0.2"], "--sweep names tau more than once"),
])
def test_bad_sweeps_are_one_line_with_status_2(argv, message, tmp_path, capsys):
    assert exit_code([*TINY, *argv, "--out", str(tmp_path / "bad")]) == 2
    assert message in one_line(capsys.readouterr().err)
    assert not os.path.exists(tmp_path / "bad")


def test_the_memory_refusal_counts_settings_x_seeds(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(memory, "available_bytes", lambda: (2**20, "test host memory"))
    assert run.main([*TINY, *SWEEP, "--out", str(tmp_path / "big")]) == 2
    assert "the sweep of 4 settings x 2 seed(s)" in one_line(capsys.readouterr().err)


def test_evaluate_scores_one_setting_the_best_by_default(sweep_run, tmp_path, capsys):
    from jaxmarl_accel.cli import evaluate

    best = read_sweep(sweep_run)["best"]
    chosen = evaluate.evaluate_run(sweep_run, None, 2, str(tmp_path / "best.json"), None)
    assert chosen["setting"] == best and chosen["setting_values"] == read_sweep(
        sweep_run)["best_setting"]
    assert len(chosen["final_eval_return_per_seed"]) == 2
    other = 1 - best if best < 2 else 0
    assert evaluate.main([sweep_run, "--setting", str(other), "--episodes", "2", "--out",
                          str(tmp_path / "other.json"), "--marl-eval", "none"]) == 0
    result = json.loads((tmp_path / "other.json").read_text())
    assert result["setting"] == other
    rows = [line.split(",") for line in Path(sweep_run, "metrics.csv").read_text().splitlines()]
    last = [float(r[4]) for r in rows[1:] if r[0] == str(other) and r[2] == "2"]
    assert result["run_eval_return_per_seed"] == pytest.approx(last)
    capsys.readouterr()
    assert evaluate.main([sweep_run, "--setting", "4", "--episodes", "2"]) == 2
    assert "the sweep in" in one_line(capsys.readouterr().err)


def test_population_based_training_records_its_lineage_and_resumes_exactly(monkeypatch,
                                                                          tmp_path, capsys):
    """--pbt: after each chunk but the last that learned throughout (chunk 0 starts before
    the first update at 100 env steps) the worst quarter of the 8 lanes copy the best;
    pbt.json holds the two steps, every row the values its lane trained with, sweep.json the
    best final lane with the values it holds at the end, and a run interrupted after chunk 1
    resumes to the same files."""
    whole, longer = str(tmp_path / "whole"), [*TINY, "--total-env-steps", "800"]
    assert run.main([*longer, *SWEEP, "--pbt", "--out", whole]) == 0
    lineage = json.loads(Path(whole, "pbt.json").read_text())["lineage"]
    assert [step["chunk"] for step in lineage] == [1, 2]
    assert all(len(step["replaced"]) == 2 for step in lineage)
    header = Path(whole, "metrics.csv").read_text().splitlines()[0].split(",")
    assert "hp_actor_lr" in header and "hp_tau" in header
    assert os.path.getsize(os.path.join(whole, "pbt.png")) > 0
    lane = read_sweep(whole)["best_lane"]
    rows = [dict(zip(header, map(float, line.split(",")), strict=True))
            for line in Path(whole, "metrics.csv").read_text().splitlines()[1:]]
    last = [r for r in rows if r["chunk"] == 3 and (r["setting"], r["seed"]) == (
        lane["setting"], lane["seed"])]
    assert lane["values"] == pytest.approx({"actor_lr": last[0]["hp_actor_lr"],
                                            "tau": last[0]["hp_tau"]})
    assert lane["score"] == max(read_sweep(whole)["final"][k][s] for k in range(4)
                                for s in range(2))
    out = str(tmp_path / "interrupted")
    interrupt_after_chunk_1(monkeypatch)
    assert run.main([*longer, *SWEEP, "--pbt", "--out", out]) == 130
    monkeypatch.undo()
    assert run.main(["--resume", out, "--quiet"]) == 0
    assert_same_outputs(whole, out)
    capsys.readouterr()
    assert exit_code([*TINY, "--pbt", "--out", str(tmp_path / "bad")]) == 2
    assert "--pbt trains a population of --sweep settings" in one_line(capsys.readouterr().err)


RNN_PBT = ["--algo", "ppo", "--agent", "rnn", "--env", "simple_spread", "--agents", "2",
           "--seeds", "2", "--sweep", "lr=0.03,0.0003", "--num-envs", "2",
           "--rollout-length", "5", "--minibatches", "2", "--epochs", "2", "--hidden-sizes", "8",
           "--total-env-steps", "40", "--eval-every", "10", "--eval-episodes", "2",
           "--baseline-episodes", "2", "--devices", "1", "--pbt", "--quiet"]


@pytest.mark.slow  # three tiny runs; tests/trainer/test_pbt.py checks the carries fast
def test_recurrent_population_based_training_restarts_the_copied_lanes_carries(
        monkeypatch, tmp_path):
    """--pbt with recurrent PPO: after chunks 1 and 2 (of 4 chunks of one 10-step round) the
    worst of the 4 lanes copies the best one's learners and starts its envs' GRU states
    again from zero (:mod:`jaxmarl_accel.trainer.pbt`), the kept lanes keep theirs (their
    episodes of 25 steps are still going at step 20), and a run interrupted after chunk 1
    resumes to the same files."""
    whole = str(tmp_path / "whole")
    assert run.main([*RNN_PBT, "--out", whole]) == 0
    lineage = json.loads(Path(whole, "pbt.json").read_text())["lineage"]
    assert [step["chunk"] for step in lineage] == [1, 2]
    assert all(len(step["replaced"]) == 1 for step in lineage)
    out = str(tmp_path / "interrupted")
    real_update = progress.ProgressBar.update

    def update(bar, steps, *args, **kwargs):
        real_update(bar, steps, *args, **kwargs)
        if steps == 20:  # chunk 1 done, its step taken and saved
            raise KeyboardInterrupt

    monkeypatch.setattr(progress.ProgressBar, "update", update)
    assert run.main([*RNN_PBT, "--out", out]) == 130
    monkeypatch.undo()
    saved = read_arrays(os.path.join(out, "checkpoints"))
    (carry,) = [value for name, value in saved.items() if name.startswith(".carry")]
    carry = carry.reshape(4, *carry.shape[-3:])  # [lanes, E, N, H]
    (copied,) = [entry["lane"] for entry in lineage[0]["replaced"]]
    for lane in range(4):
        assert np.all(carry[lane] == 0.0) == (lane == copied), lane
    assert run.main(["--resume", out, "--quiet"]) == 0
    assert_same_outputs(whole, out, last=3)
