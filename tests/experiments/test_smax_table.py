"""experiments/bench/smax_table: records of separate runs join into one group per side and
learner, seeds identified by their keys; a seed twice is refused; table, JSON and plot."""

from __future__ import annotations

import json

import pytest

from experiments.bench.__main__ import main


def record(seed, seeds, ours_wins, ref_wins=None, algo="qmix", ours_set=()):
    out = {"map": "2s3z", "algo": algo, "seed": seed, "seeds": seeds,
           "ours_set": list(ours_set), "ours_env_steps_per_seed": 1000,
           "ours_win_rate_per_seed": ours_wins, "ours_seconds": [10.0] * seeds,
           "ours_real_env_steps_per_seed": [600.0] * seeds, "ours_compile_s": 20.0}
    if ref_wins is not None:
        out.update(ref_env_steps_per_seed=500, ref_win_rate_per_seed=ref_wins,
                   ref_seconds=[100.0] * seeds, ref_compile_s=30.0,
                   reference_script="baselines/QLearning/qmix_rnn.py",
                   ref_curve=[{"seed": 0, "env_step": [100.0, 500.0],
                               "returned_won_episode": [0.0, 0.5]}],
                   steps_ratio_median=12.0, ref_steps_per_s_median=5.0,
                   ours_real_steps_per_s_median=60.0, load_average_start=[0.5, 0.4, 0.3])
    return out


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(json.dumps(content))
    return str(path)


def test_records_join_by_side_and_learner(tmp_path, capsys):
    files = [write(tmp_path, "a.json", record(0, 4, [0.1, 0.2, 0.3, 0.4])),
             write(tmp_path, "b.json", record(1, 1, [0.5], [0.25])),
             write(tmp_path, "c.json", record(2, 1, [0.6], [0.75])),
             write(tmp_path, "d.json", record(0, 2, [0.9, 0.8], algo="macpo"))]
    out, image = tmp_path / "table.json", tmp_path / "plot.png"
    main(["smax_table", *files, "--json", str(out), "--plot", str(image)])
    rows = {(row["side"], row["learner"]): row for row in json.loads(out.read_text())["rows"]}
    assert rows["ours", "qmix"]["seeds"] == 6
    assert rows["ours", "qmix"]["win_rate_median"] == pytest.approx(0.35)
    assert rows["ours", "qmix"]["real_steps_per_s_median"] == pytest.approx(60.0)
    assert rows["JaxMARL", "qmix_rnn"]["win_rate_per_seed"] == [0.25, 0.75]
    assert rows["JaxMARL", "qmix_rnn"]["win_rate_iqr"] == [0.375, 0.625]
    assert rows["JaxMARL", "qmix_rnn"]["real_steps_per_s_median"] == pytest.approx(5.0)
    assert rows["ours", "macpo"]["seeds"] == 2 and image.stat().st_size > 1000
    same = json.loads(out.read_text())["same_run"]
    assert [(row["record"], row["seed"], row["ratio"]) for row in same] == [
        ("b.json", 1, 12.0), ("c.json", 2, 12.0)]
    printed = capsys.readouterr().out
    assert "| JaxMARL | qmix_rnn |" in printed
    assert "| b.json | 1 | qmix / JaxMARL's settings | 60 | 5 | **12.00x** | 0.50, - |" in printed


def test_a_seed_twice_in_a_group_is_refused(tmp_path):
    # split(PRNGKey(0), 1)[0] is split(PRNGKey(0), 4)[0]: the same seed
    files = [write(tmp_path, "a.json", record(0, 4, [0.1, 0.2, 0.3, 0.4])),
             write(tmp_path, "b.json", record(0, 1, [0.5]))]
    with pytest.raises(ValueError, match="seed 0 index 0 is already in the group"):
        main(["smax_table", *files])
    with pytest.raises(ValueError, match="not a bench qmix_smax record"):
        main(["smax_table", write(tmp_path, "c.json", {"rows": []})])
