"""experiments.sweep_evaluations on a hand-made sweep folder: every per-seed figure,
nested ones included, gets its median and IQR per evaluated setting; one-line errors."""

import json

import pytest

from experiments.sweep_evaluations import main, per_seed_figures, summarize


def folder_with(tmp_path, evaluations, settings=3):
    root = tmp_path / "sweep"
    root.mkdir()
    (root / "sweep.json").write_text(json.dumps(
        {"settings": [{"lr": 10.0 ** -(k + 2)} for k in range(settings)]}))
    for k, record in evaluations.items():
        (root / f"evaluation_setting{k}.json").write_text(json.dumps(record))
    return root


def test_nested_per_seed_lists_are_found_and_others_are_not():
    record = {"tags_per_episode_per_seed": [1, 2], "median_return": 3.0, "env": "tag",
              "episode_return_per_seed": [[1.0, 2.0]],  # per episode, not one per seed
              "cross_play": {"tagger_vs_random": {"tags_per_episode_per_seed": [4.0, 5.0]}}}
    assert dict(per_seed_figures(record)) == {
        "tags_per_episode_per_seed": [1, 2],
        "cross_play/tagger_vs_random/tags_per_episode_per_seed": [4.0, 5.0]}


def test_medians_and_iqrs_per_evaluated_setting(tmp_path, capsys):
    root = folder_with(tmp_path, {
        2: {"tags_per_episode_per_seed": [1.0, 2.0, 3.0, 4.0], "only_here_per_seed": [1.0]},
        0: {"tags_per_episode_per_seed": [5.0, 6.0, 7.0, 9.0]}})
    out = tmp_path / "r.json"
    main([str(root), "--json", str(out)])
    record = json.loads(out.read_text())
    assert record["evaluated"] == [0, 2]
    tags = record["figures"]["tags_per_episode_per_seed"]
    assert tags["median"] == pytest.approx([6.5, 2.5])
    assert [pytest.approx(q) for q in ([5.75, 7.5], [1.75, 3.25])] == tags["iqr"]
    assert "only_here_per_seed" not in record["figures"]  # setting 0 lacks it
    printed = capsys.readouterr().out
    assert "lr=0.01 | lr=0.0001" in printed and "6.500 | 2.500" in printed


def test_missing_or_mismatched_files_are_one_line(tmp_path):
    with pytest.raises(SystemExit, match="does not exist"):
        summarize(str(tmp_path))
    root = folder_with(tmp_path, {})
    with pytest.raises(SystemExit, match="no evaluation_setting"):
        summarize(str(root))
    (root / "evaluation_setting5.json").write_text("{}")
    with pytest.raises(SystemExit, match="names setting 5, but the sweep has 3"):
        summarize(str(root))
