"""experiments/bench/envs: a tiny side-by-side run writes well-formed records."""

from __future__ import annotations

import argparse
import json

import jaxmarl.environments.mpe  # noqa: F401  (its import resets sys.stdout: before capsys)
import pytest

from experiments.bench import envs as bench

KEYS = {"scenario", "num_agents", "num_envs", "ours_steps_per_s", "ref_steps_per_s",
        "ours_compile_s", "ref_compile_s"}


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.mark.slow
def test_tiny_run_writes_records(tmp_path, capsys):
    path = tmp_path / "out" / "bench.json"
    bench.main(_args("--scenarios", "spread,reference", "--agents", "2", "--envs", "3",
                     "--steps", "4", "--repeats", "1", "--compile-repeats", "2",
                     "--json", str(path)))
    records = json.loads(path.read_text())
    assert [(r["scenario"], r["num_agents"], r["num_envs"]) for r in records] == [
        ("spread", 2, 3), ("reference", 2, 3)]
    for record in records:
        assert set(record) >= KEYS
        assert all(record[k] > 0 for k in KEYS if k.endswith(("_s", "per_s")))
    assert "spread" in capsys.readouterr().out


@pytest.mark.slow
def test_stag_hunt_runs_ours_only(tmp_path):
    path = tmp_path / "bench.json"
    bench.main(_args("--scenarios", "stag_hunt", "--agents", "3", "--envs", "2", "--steps",
                     "3", "--repeats", "1", "--compile-repeats", "1", "--sides", "ours",
                     "--json", str(path)))
    (record,) = json.loads(path.read_text())
    assert record["scenario"] == "stag_hunt" and record["ours_steps_per_s"] > 0
    assert record["ref_steps_per_s"] is None
    with pytest.raises(ValueError, match="--sides ours"):
        bench.main(_args("--scenarios", "stag_hunt"))


@pytest.mark.parametrize(
    "argv", [("--scenarios", "nope"), ("--agents", "0"), ("--tag-teams", "3x1"),
             ("--sides", "theirs"), ("--steps", "0"),
             ("--compile-repeats", "0")])
def test_bad_flags_raise(argv):
    with pytest.raises(ValueError):
        bench.main(_args(*argv))
