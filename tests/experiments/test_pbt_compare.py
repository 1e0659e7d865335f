"""experiments.pbt_compare on two hand-made ``sweep.json`` folders: the grid's best cell,
both runs scored as populations, the verdict, and one-line errors."""

import json

import pytest

from experiments.pbt_compare import compare, main, population


def sweep(folder, final, score="normalized_score"):
    medians = [sorted(row)[len(row) // 2] for row in final]
    folder.mkdir()
    (folder / "sweep.json").write_text(json.dumps({
        "settings": [{"lr": 0.1 * (k + 1)} for k in range(len(final))], "score": score,
        "final": final, "median": medians, "iqr": [[min(r), max(r)] for r in final],
        "best": max(range(len(final)), key=medians.__getitem__)}))
    return folder


def test_population_scores_all_lanes_the_best_quarter_and_the_best_lane():
    scores = population([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6], [0.7, 0.8]])
    assert scores == pytest.approx({"lanes": 8, "median": 0.45, "best_quarter_median": 0.75,
                                    "best_lane": 0.8})


def test_the_record_compares_the_population_with_the_best_cell(tmp_path, capsys):
    grid = sweep(tmp_path / "grid", [[0.1, 0.2, 0.3], [0.6, 0.7, 0.9]])
    pbt = sweep(tmp_path / "pbt", [[0.6, 0.8, 0.9], [0.7, 0.75, 0.8]])
    out = tmp_path / "r.json"
    main([str(grid), str(pbt), "--json", str(out)])
    record = json.loads(out.read_text())
    assert record["grid_best"] == {"setting": {"lr": 0.2}, "median": 0.7, "iqr": [0.6, 0.9]}
    assert record["pbt_population"]["median"] == pytest.approx(0.775)
    assert record["pbt_median_reaches_best_cell"] is True
    assert "grid_cells" in json.loads(capsys.readouterr().out)
    worse = compare(json.loads((grid / "sweep.json").read_text()),
                    {**json.loads((pbt / "sweep.json").read_text()), "final": [[0.1, 0.2]]})
    assert worse["pbt_median_reaches_best_cell"] is False


def test_a_folder_without_a_sweep_or_another_score_is_one_line(tmp_path):
    grid = sweep(tmp_path / "grid", [[0.1, 0.2]])
    with pytest.raises(SystemExit, match="does not exist"):
        main([str(grid), str(tmp_path / "none")])
    other = sweep(tmp_path / "other", [[1.0, 2.0]], score="eval_return")
    with pytest.raises(SystemExit, match="score differently"):
        main([str(grid), str(other)])
