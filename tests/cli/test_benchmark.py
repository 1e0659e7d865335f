"""``jaxmarl-accel benchmark``: refusals before anything trains (one line, exit 2), and the
tiny example suite run, interrupted and resumed without repeating a finished pair (slow)."""

import os
import signal
import subprocess
import sys
import time

import pytest

from jaxmarl_accel.cli import benchmark

TINY = "examples/benchmark_tiny.yaml"


def refused(capsys, argv):
    try:
        status = benchmark.main(argv)
    except SystemExit as stop:
        status = stop.code
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_an_unknown_suite_is_one_line(capsys, tmp_path):
    err = refused(capsys, ["no-such-suite", "--out", str(tmp_path)])
    assert err.startswith("error: unknown suite 'no-such-suite'")
    assert not os.listdir(tmp_path)


def test_a_yaml_with_an_unknown_learner_is_one_line_naming_the_pair(capsys, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("seeds: 1\ntasks: [{name: t, env: simple_spread, env_steps: 100}]\n"
                    "learners: [{name: mine, algo: no_such_algo}]\n")
    err = refused(capsys, [str(path), "--out", str(tmp_path / "out")])
    assert err.startswith("error: pair t/mine: argument --algo: invalid choice")
    assert not (tmp_path / "out").exists()


def test_a_reference_that_is_not_a_jaxmarl_checkout_is_one_line(capsys, tmp_path):
    err = refused(capsys, [TINY, "--reference", f"jaxmarl={tmp_path}"])
    assert "is not a JaxMARL checkout" in err


def test_budget_scale_must_be_positive(capsys):
    assert "--budget-scale must be > 0" in refused(capsys, [TINY, "--budget-scale", "0"])


def test_the_tiny_suite_checks(capsys):
    assert benchmark.main([TINY, "--check"]) == 0
    assert "4 pair(s) checked" in capsys.readouterr().err


@pytest.mark.slow
def test_the_tiny_suite_runs_stops_and_resumes_without_repeating_a_pair(tmp_path):
    """Ctrl-C once the first pair is finished: the suite stops (130); the same command then
    runs only what is left (the first pair's files are untouched) and reports."""
    out = tmp_path / "tiny"
    command = [sys.executable, "-m", "jaxmarl_accel.cli", "benchmark", TINY, "--out", str(out),
               "--reps", "100"]
    first = out / "runs" / "spread" / "iql" / "summary.json"
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    while not first.exists() and process.poll() is None:
        time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 130, err
    assert "continue with the same command" in err
    stamp = first.stat().st_mtime_ns
    done = subprocess.run(command + ["--markdown"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert first.stat().st_mtime_ns == stamp
    assert "running spread/iql" not in done.stderr
    assert "4/4 pairs done" in done.stderr
    assert "| spread | normalized score |" in done.stdout
    for name in ("statistics.json", "marl_eval.json", "table.md", "profiles.png"):
        assert (out / name).exists()
