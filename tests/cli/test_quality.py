"""The learning-quality table: rows, touches and the speaker-listener communication share."""

from __future__ import annotations

import json
import os

from experiments import quality


def _summary(env: str, finals: list[float], per_team: list[dict], random_team: dict) -> dict:
    return {"env": env, "algo": "maddpg", "sampler": "uniform", "seeds": len(finals),
            "env_steps_per_seed": 1000, "median_normalized_score": 0.5,
            "iqr_normalized_score": [0.4, 0.6], "median_return": sorted(finals)[len(finals) // 2],
            "random_return": -30.0, "scripted_return": -8.0,
            "final_eval_return_per_seed": finals, "final_eval_return_per_team": per_team,
            "random_return_per_team": random_team}


def _write(root, name: str, summary: dict, env_kwargs: dict) -> None:
    os.makedirs(root / name)
    (root / name / "summary.json").write_text(json.dumps(summary))
    (root / name / "config.json").write_text(json.dumps({"train": {"env_kwargs": env_kwargs}}))


def test_table_reports_touches_and_communication_share(tmp_path):
    finals = [-6.0, -10.0, -25.0, -40.0]  # the silent team scores about -16.5
    _write(tmp_path, "speaker-listener", _summary(
        "simple_speaker_listener", finals, [{"speaker": f, "listener": f} for f in finals],
        {"speaker": -60.0, "listener": -60.0}), {})
    _write(tmp_path, "tag-3v1", _summary(
        "simple_tag", [1.0, 2.0, 3.0], [{"predator": 30.0 * k, "prey": -1.0} for k in (1, 2, 3)],
        {"predator": 10.0, "prey": -5.0}), {"num_predators": 3})
    rows = {row["entry"]: row for row in quality.build_table(str(tmp_path))}
    talk = rows["speaker-listener"]
    assert -25.0 < talk["silent_return"] < -10.0
    assert talk["communicating_seeds"] == 2
    assert rows["tag-3v1"]["median_touches"] == 6.0 and rows["tag-3v1"]["random_touches"] == 1.0
    table = (tmp_path / "table.md").read_text()
    assert "2 of 4 seeds learned to communicate" in table
    assert "median touches per episode 6.00 vs 1.00" in table


def test_table_reports_stag_hunt_returns_against_the_most_possible(tmp_path):
    summary = _summary("stag_hunt", [40.0, 30.0, 20.0], [{"agent": f} for f in (40, 30, 20)],
                       {"agent": 0.5})
    summary.update({"final_eval_captures_per_episode_per_seed": [4.0, 3.0, 2.0],
                    "random_captures_per_episode": 0.05, "scripted_captures_per_episode": 2.5})
    _write(tmp_path, "qmix-stag8", summary, {"num_agents": 8, "num_stags": 8})
    row = {r["entry"]: r for r in quality.build_table(str(tmp_path))}["qmix-stag8"]
    assert row["max_return"] == 40.0 and row["median_captures"] == 3.0
    assert "median return 30.0 of 40 possible" in (tmp_path / "table.md").read_text()
    summary.update({"final_eval_captures_per_episode_per_seed": [0.0, 3.6, 0.0, 3.5]})
    _write(tmp_path / "even", "qmix-stag8", summary, {"num_agents": 8, "num_stags": 8})
    row = {r["entry"]: r for r in quality.build_table(str(tmp_path / "even"))}["qmix-stag8"]
    assert row["median_captures"] == 1.75  # 4 seeds: the middle two's mean, not the upper one
    assert quality.SUITE["qmix-stag32"][:4] == ["--env", "stag_hunt", "--agents", "32"]


def test_every_entry_is_a_valid_run_and_the_fig3_entries_take_paper_004s_presets():
    from jaxmarl_accel.cli import run

    parser = run.build_parser()
    for name, flags in quality.SUITE.items():
        argv = [*flags, "--out", "unused"]
        config = run.config_from_args(run.apply_preset(parser, parser.parse_args(argv), argv))
        if "-fig3b" in name:
            assert dict(config.env_kwargs)["miscapture_punishment"] == -1.5
            assert config.batch_size == 128 and config.buffer_capacity == 10_000
        if "-fig3a" in name:
            assert dict(config.env_kwargs)["miscapture_punishment"] == 0.0
        if name.endswith(("-raw-both", "-raw")):
            assert config.algo == name.split("-")[0]
            assert (config.learner.macpo_weighting, config.learner.macpo_normalization) == (
                "both" if config.algo == "macpo" else "auto", "none")
        if name.endswith("-authors"):  # the authors' learner: raw loss weights, uniform replay
            assert (config.algo, config.sampler) == ("macpo", "uniform")
            assert (config.learner.macpo_weighting, config.learner.macpo_normalization) == (
                "loss", "none")
        if name.endswith("-authors-agent"):  # the authors' agent: no id, clamped Q-values
            assert (config.learner.agent_ids, config.learner.agent_q_min,
                    config.learner.agent_q_max) == (False, -5.0, 2.0)
            if config.algo == "macpo":
                assert (config.sampler, config.learner.macpo_normalization) == ("uniform",
                                                                                "none")
        if name.endswith(("-authors-noid", "-authors-clamp")):  # one difference each
            assert (config.learner.agent_ids, config.learner.agent_q_min,
                    config.learner.agent_q_max) == ((False, None, None) if name.endswith("noid")
                                                    else (True, -5.0, 2.0))
        if name.endswith("-authors-decay"):  # AccMER's S- decays: the preset's rest kept
            assert config.sampler == "reuse" and not config.learner.agent_ids
            assert dict(config.sampler_kwargs) == {"decay": 0.8, "reuse_window": 78,
                                                   "reused_weights": "decay"}
        if name.endswith("-authors-decay-filled"):
            assert dict(config.sampler_kwargs) == {"decay": 0.8, "window_basis": "filled",
                                                   "reused_weights": "decay"}
        if name.endswith("-authors-block"):  # the authors' code's reuse, on their network
            assert (config.algo, config.sampler, config.learner.agent_ids) == (
                "accmer", "reuse_block", False)
            assert dict(config.sampler_kwargs) == {"decay": 0.8, "write_every": 7}
        if name.endswith("-fig3b-eps1m"):
            assert config.learner.epsilon_anneal_steps == 1_000_000
            assert config.learner.epsilon_start == 0.995
    assert {n[:-6] for n in quality.SUITE if n.endswith("-fig3b")} == {
        "qmix", "vdn", "owqmix", "cwqmix", "macpo", "accmer"}


def test_curves_follow_each_entrys_metrics_even_while_it_runs(tmp_path):
    from jaxmarl_accel.runs import outputs

    os.makedirs(tmp_path / "qmix-stag8")
    outputs.write_rows(str(tmp_path / "qmix-stag8"), [
        {"seed": seed, "chunk": chunk, "env_steps": 100 * (chunk + 1),
         "eval_return": float(10 * chunk + seed), "eval_captures": float(chunk)}
        for chunk in range(2) for seed in range(4)])
    assert quality.build_table(str(tmp_path)) == []  # no summary yet: no row in table.md
    curves = (tmp_path / "curves.md").read_text()
    assert "### qmix-stag8" in curves
    assert "| 100 | 1.50 (0.75 to 2.25) | 4 | 0.00 |" in curves
    assert "| 200 | 11.50 (10.75 to 12.25) | 4 | 1.00 |" in curves
    assert "### matd3" not in curves
    per_seed = (tmp_path / "qmix-stag8" / "curve.md").read_text().splitlines()
    assert per_seed[0] == "| env steps per seed | greedy return | greedy captures |"
    assert per_seed[2:] == ["| 100 | 0.00, 1.00, 2.00, 3.00 | 0.00, 0.00, 0.00, 0.00 |",
                            "| 200 | 10.00, 11.00, 12.00, 13.00 | 1.00, 1.00, 1.00, 1.00 |"]


def test_an_entry_whose_run_fails_makes_the_suite_exit_non_zero(tmp_path, capsys):
    assert quality.main(["--out", str(tmp_path), "--only", "qmix-fig3b", "--seeds", "0"]) == 1
    assert "failed: qmix-fig3b" in capsys.readouterr().err
