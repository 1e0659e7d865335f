"""The run CLI: flags, outputs, resume, and stopping on non-finite values."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

from experiments import host_loop, run

TINY = ["--env", "simple_spread", "--agents", "3", "--seeds", "2", "--algo", "matd3",
        "--hidden-sizes", "16", "16", "--buffer-capacity", "1000", "--batch-size", "32",
        "--num-envs", "5", "--update-every", "50", "--learning-starts", "100",
        "--eval-every", "200", "--total-env-steps", "600", "--eval-episodes", "4",
        "--baseline-episodes", "16", "--quiet"]


def restore_params(out_dir: str, step: int):
    manager = ocp.CheckpointManager(os.path.abspath(os.path.join(out_dir, "checkpoints")))
    restored = manager.restore(step, args=ocp.args.StandardRestore())
    manager.close()
    return {name: value for name, value in restored.items() if name.startswith(".algo")}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("run") / "out")
    assert run.main([*TINY, "--out", out, "--render"]) == 0
    return out


def test_help_documents_every_flag(capsys):
    with pytest.raises(SystemExit) as exit_info:
        run.main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--algo", "--sampler", "--layout", "--index-sharing", "--prey", "--learners",
                 "--actor-lr", "--policy-delay", "--alpha", "--total-env-steps", "--resume",
                 "--render", "--seeds", "--hidden-sizes"):
        assert flag in text


@pytest.mark.parametrize("argv, message", [
    (["--algo", "dqn"], "invalid choice"),
    (["--batch-size", "0"], "batch_size must be >= 1"),
    (["--seeds", "0"], "--seeds must be >= 1"),
    (["--gamma", "2"], "gamma must lie in [0, 1]"),
    (["--env-kwargs", "oops"], "expected name=value"),
])
def test_bad_flags_give_one_line_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_outputs(finished_run):
    for name in ("config.json", "metrics.csv", "summary.json", "learning_curve.png",
                 "episode.gif", "episode.png"):
        assert os.path.getsize(os.path.join(finished_run, name)) > 0, name
    with open(os.path.join(finished_run, "summary.json")) as handle:
        summary = json.load(handle)
    assert len(summary["final_eval_return_per_seed"]) == 2
    assert summary["heuristic_return"] > summary["random_return"]
    assert np.isfinite(summary["median_normalized_score"])
    lines = Path(finished_run, "metrics.csv").read_text().strip().splitlines()
    assert len(lines) == 1 + 3 * 2  # header + chunks x seeds


def test_resume_gives_the_uninterrupted_parameters(finished_run, tmp_path):
    interrupted = str(tmp_path / "interrupted")
    shutil.copytree(finished_run, interrupted)
    shutil.rmtree(os.path.join(interrupted, "checkpoints", "2"))  # as if killed in chunk 2
    assert run.main(["--resume", interrupted, "--quiet", "--baseline-episodes", "16"]) == 0
    expected, resumed = restore_params(finished_run, 2), restore_params(interrupted, 2)
    assert expected.keys() == resumed.keys() and len(expected) > 4
    for name, value in expected.items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(resumed[name]), err_msg=name)
    rows = Path(interrupted, "metrics.csv").read_text().strip().splitlines()
    assert len(rows) == 1 + 3 * 2


def test_non_finite_metric_stops_the_run(monkeypatch, tmp_path, capsys):
    real = host_loop.make_trainer

    def poisoned(config):
        trainer = real(config)

        def run_chunk(state, index):
            state, metrics = trainer.run_chunk(state, index)
            bad = jax.numpy.where(index >= 1, jax.numpy.nan, 0.0)
            return state, metrics._replace(eval_return=metrics.eval_return + bad)

        return trainer._replace(run_chunk=run_chunk)

    monkeypatch.setattr(host_loop, "make_trainer", poisoned)
    out = str(tmp_path / "nan")
    assert run.main([*TINY, "--out", out]) == 1
    err = capsys.readouterr().err
    assert "non-finite eval_return in seed 0" in err
    assert "checkpoint after chunk 0 kept" in err
    assert os.path.isdir(os.path.join(out, "checkpoints", "0"))
    assert not os.path.isdir(os.path.join(out, "checkpoints", "1"))


def test_oversized_buffer_is_refused_before_compiling(capsys):
    code = run.main([*TINY, "--buffer-capacity", "2000000000", "--out", "/tmp/never"])
    assert code == 2
    assert "GiB" in capsys.readouterr().err
