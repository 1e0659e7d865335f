"""Smoke tests of the sampler and training benchmarks on tiny configurations."""

from __future__ import annotations

import json

import pytest

from experiments.bench.__main__ import main


@pytest.mark.slow
def test_sampler_bench_writes_the_samplers_asked_for_and_flashbax(tmp_path, capsys):
    """One sampler asked for (each sampler's own code is tested in ``tests/buffers``; every
    one compiles loops of its own here, about 5 s each on 2 cores), so the others are
    absent."""
    path = tmp_path / "samplers.json"
    main(["samplers", "--json", str(path), "--agents", "3", "--capacities", "2000",
          "--batch", "64", "--repeats", "2", "--budget-s", "0.05", "--samplers", "uniform"])
    records = json.loads(path.read_text())
    samplers = {(r["sampler"], r["layout"], r["index_sharing"]) for r in records}
    assert {"per", "neighbor", "prioritized_locality", "reuse"}.isdisjoint(
        n for n, _, _ in samplers)
    for layout in ("transition_major", "agent_major"):
        assert ("uniform", layout, "shared") in samplers
        assert ("uniform", layout, "per_agent") in samplers
    uniform = [r for r in records if r["sampler"] == "uniform" and r["index_sharing"] == "shared"]
    assert all(r["ref_ms"] > 0 and r["contiguous_copy_ms"] > 0 for r in uniform)
    assert all(r["ms"] > 0 and r["gb_per_s"] > 0 for r in records)
    assert "goals" in capsys.readouterr().out


@pytest.mark.slow
def test_train_bench_records_throughput_and_matmul_share(tmp_path):
    """--num-envs, --update-every and --batch-size left out: the family's defaults apply."""
    path = tmp_path / "train.json"
    main(["train", "--json", str(path), "--envs", "simple_spread", "--agents", "2",
          "--seeds", "1", "--learners", "parallel", "--capacity", "2048", "--chunk-steps", "600",
          "--chunks", "1"])
    (record,) = json.loads(path.read_text())
    assert record["env"] == "simple_spread" and record["num_agents"] == 2
    assert record["batch"] == 1024 and record["update_every"] == 100
    assert record["env_steps_per_s"] > 0 and record["compile_s"] > 0
    assert record["share_of_matmul_rate"] > 0


@pytest.mark.slow
def test_accmer_bench_times_the_sampling_phase_of_all_three_sides(tmp_path, capsys):
    path = tmp_path / "accmer.json"
    main(["accmer", "--json", str(path), "--settings", "p1.5", "--capacity", "256",
          "--phases", "sampling", "--rounds", "2", "--reps", "1", "--window-steps", "3"])
    (record,) = json.loads(path.read_text())["records"]
    assert record["capacity"] == 256 and record["paper_capacity"] == 10_000
    assert record["accmer_sampler_kwargs"] == {"decay": 0.8, "loss_weights": "ones",
                                               "reuse_ratio": 0.5}
    for side in ("accmer", "macpo", "macpo_uniform"):
        assert record[f"{side}_sampling_best_s"] > 0
        assert 0 < record[f"{side}_distinct_slots_3_steps"] <= 3 * 128
    # AccMER reads its 64 reused slots again: at most 64 + 3 * 64 distinct ones in 3 steps
    assert record["accmer_distinct_slots_3_steps"] <= 64 + 3 * 64
    assert record["sampling_ratio_vs_macpo"] > 0
    assert "p1.5 sampling: accmer/macpo" in capsys.readouterr().out


@pytest.mark.slow
def test_scale_bench_times_team_learners_and_the_rollout_alone(tmp_path, capsys):
    path = tmp_path / "scale" / "scale.json"
    main(["scale", "--json", str(path), "--envs", "simple_tag", "--agents", "6",
          "--k-nearest", "3", "--critic-k", "3", "--num-envs", "2", "--update-every", "10",
          "--batch-size", "8", "--capacity", "200", "--chunk-steps", "40", "--chunks", "1",
          "--replay-obs", "physical_state"])
    records = json.loads(path.read_text())
    assert [r["shared_batch"] for r in records] == ["pairs", "joint_steps"]
    for r in records:
        assert r["num_agents"] == 7 and r["critic"] == "knearest"
        assert r["replay_obs"] == "physical_state"
        assert r["agent_steps_per_s"] == pytest.approx(7 * r["env_steps_per_s"])
        assert r["rollout_env_steps_per_s"] > 0 and r["compile_s"] > 0
    assert "rollout" in capsys.readouterr().out


def test_gru_paths_bench_times_both_paths_and_restores_the_limit(tmp_path, capsys):
    from jaxmarl_accel.algos.value import networks
    limit = networks.SAVED_GATES_BYTES
    path = tmp_path / "gru.json"
    main(["gru_paths", "--shapes", "mpe_spread_b32", "--reps", "1", "--json", str(path)])
    row = json.loads(path.read_text())["shapes"]["mpe_spread_b32"]
    assert set(row["median_s"]) == {"saved_gates", "rematerialized"}
    assert all(s > 0 for s in row["median_s"].values())
    assert row["picked"] == "saved_gates" and row["faster"] in row["median_s"]
    assert limit == networks.SAVED_GATES_BYTES  # restored
    assert "mpe_spread_b32: saved gates" in capsys.readouterr().out
    with pytest.raises(ValueError, match="--reps"):
        main(["gru_paths", "--shapes", "mpe_spread_b32", "--reps", "0"])


@pytest.mark.slow
def test_update_profile_splits_an_update_into_loops_mixer_and_the_rest(tmp_path, capsys):
    path = tmp_path / "profile.json"
    main(["update_profile", "--reps", "2", "--profile-updates", "2", "--top", "3",
          "--json", str(path)])
    record = json.loads(path.read_text())
    assert (record["batch_episodes"], record["rows"], record["agents"]) == (32, 26, 3)
    assert 0 < record["update_ms_min"] <= record["update_ms_median"]
    split = record["profile"]
    kinds = split["busy_ms_by_kind"]
    # three GRU scans (online and target forward, backward) and QMIX's hypernetworks
    assert kinds["loops"] > 0 and kinds["mixer"] > 0 and kinds["rest"] > 0
    assert sum(kinds.values()) == pytest.approx(split["busy_ms"], rel=1e-3)
    assert 0 < split["cores_busy"] <= record["affinity"] + 0.5
    assert len(split["top_level"]) <= 3 and len(split["loop_bodies"]) >= 3
    assert all(row["calls"] >= 1 for body in split["loop_bodies"].values() for row in body)
    assert "qmix update:" in capsys.readouterr().out


@pytest.mark.slow
def test_update_profile_smax_profiles_qmix_smax_run_with_its_overrides(tmp_path, capsys):
    path = tmp_path / "profile.json"
    main(["update_profile", "--smax", "3m", "--set", "hidden=16", "--set", "batch_size=4",
          "--set", "train_rows=8", "--reps", "1", "--profile-updates", "1", "--json",
          str(path)])
    record = json.loads(path.read_text())
    # SMAX 3m: 3 agents, episodes of 101 steps (102 rows); the overrides reached the learner
    assert (record["batch_episodes"], record["rows"], record["agents"]) == (4, 102, 3)
    assert (record["hidden"], record["train_rows"], record["smax"]) == (16, 8, "3m")
    assert record["set"] == ["hidden=16", "batch_size=4", "train_rows=8"]
    assert 0 < record["update_ms_min"] <= record["update_ms_median"]
    assert "qmix update:" in capsys.readouterr().out


@pytest.mark.slow
def test_update_profile_gru_path_forces_the_unroll_and_restores_the_limit(tmp_path):
    from jaxmarl_accel.algos.value import networks
    limit = networks.SAVED_GATES_BYTES
    ops = {}
    for path in ("rematerialized", "saved_gates"):
        out = tmp_path / f"{path}.json"
        main(["update_profile", "--gru-path", path, "--reps", "1", "--profile-updates", "1",
              "--top", "200", "--json", str(out)])
        record = json.loads(out.read_text())
        assert record["gru_path"] == path
        rows = record["profile"]["top_level"] + [
            row for body in record["profile"]["loop_bodies"].values() for row in body]
        ops[path] = " ".join(row["op_name"] for row in rows)
    # spread's batch takes the saved gates by default; forced, the scan is rematerialized
    assert "checkpoint" in ops["rematerialized"] and "checkpoint" not in ops["saved_gates"]
    assert limit == networks.SAVED_GATES_BYTES


def test_update_profile_refuses_set_without_smax_and_an_unknown_field():
    with pytest.raises(ValueError, match="--set changes bench qmix_smax's run"):
        main(["update_profile", "--set", "hidden=16"])
    with pytest.raises(ValueError, match="expected KEY=VALUE"):
        main(["update_profile", "--smax", "3m", "--set", "no_such_field=1"])


def test_update_profile_refuses_an_empty_count():
    with pytest.raises(ValueError, match="--profile-updates must be >= 1"):
        main(["update_profile", "--profile-updates", "0"])
