"""Smoke tests of the sampler and training benchmarks on tiny configurations."""

from __future__ import annotations

import json

from experiments.bench.__main__ import main


def test_sampler_bench_writes_every_sampler_and_flashbax(tmp_path, capsys):
    path = tmp_path / "samplers.json"
    main(["samplers", "--json", str(path), "--agents", "3", "--capacities", "2000",
          "--batch", "64", "--repeats", "2", "--budget-s", "0.05"])
    records = json.loads(path.read_text())
    samplers = {(r["sampler"], r["layout"], r["index_sharing"]) for r in records}
    for layout in ("transition_major", "agent_major"):
        for name in ("uniform", "neighbor", "per", "prioritized_locality", "reuse"):
            assert (name, layout, "shared") in samplers
        assert ("uniform", layout, "per_agent") in samplers
    uniform = [r for r in records if r["sampler"] == "uniform" and r["index_sharing"] == "shared"]
    assert all(r["ref_ms"] > 0 and r["contiguous_copy_ms"] > 0 for r in uniform)
    assert all(r["ms"] > 0 and r["gb_per_s"] > 0 for r in records)
    assert "goals" in capsys.readouterr().out


def test_train_bench_records_throughput_and_matmul_share(tmp_path):
    path = tmp_path / "train.json"
    main(["train", "--json", str(path), "--envs", "simple_spread", "--agents", "2",
          "--seeds", "1", "--learners", "parallel", "--num-envs", "2", "--update-every", "10",
          "--batch-size", "16", "--capacity", "256", "--chunk-steps", "40", "--chunks", "1"])
    (record,) = json.loads(path.read_text())
    assert record["env"] == "simple_spread" and record["num_agents"] == 2
    assert record["env_steps_per_s"] > 0 and record["compile_s"] > 0
    assert record["share_of_matmul_rate"] > 0
