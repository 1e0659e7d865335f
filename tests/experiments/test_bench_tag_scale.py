"""experiments/bench/tag_scale: a tiny configuration runs in its own process and writes a
well-formed record (throughput, compiled memory, estimated against measured peak)."""

from __future__ import annotations

import argparse
import json

import pytest

from experiments.bench import tag_scale as bench


@pytest.mark.slow
def test_tiny_configuration_writes_a_record(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    path = tmp_path / "tag_scale.json"
    bench.main(parser.parse_args(["--envs", "tag_continuous", "--algos", "a2c", "--agents", "6",
                                  "--num-envs", "2", "--rollout-length", "4", "--repeats", "1",
                                  "--json", str(path)]))
    (record,) = json.loads(path.read_text())
    assert record["num_agents"] == 6 and record["num_envs"] == 2 and not record["refused"]
    assert record["env_kwargs"] == {"num_taggers": 1, "num_runners": 5,
                                    "num_other_agents_observed": 5}
    for key in ("rollout_env_steps_per_s", "end_to_end_env_steps_per_s", "round_temp_bytes"):
        assert record[key] > 0
    assert record["estimated_peak_bytes"] > 0 and record["peak_rss_bytes"] > 0
    assert "tag_continuous" in capsys.readouterr().out
