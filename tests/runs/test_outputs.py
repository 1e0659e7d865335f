"""experiments.outputs: the metrics CSV round trip, the run folder checks, the stored config."""

from __future__ import annotations

import json

import pytest

from jaxmarl_accel.runs import outputs


def test_rewriting_the_rows_read_back_reproduces_the_csv(tmp_path):
    rows = [{"seed": s, "chunk": 0, "env_steps": 5000, "eval_return": -12.5 + s, "alpha": 0.0,
             "q_mean": 0.1 + 0.2, "updates": 9} for s in range(2)]
    outputs.write_rows(str(tmp_path), rows)
    written = (tmp_path / outputs.CSV_NAME).read_bytes()
    read = outputs.read_rows(str(tmp_path))
    assert read == rows and [type(v) for v in read[0].values()] == [
        type(v) for v in rows[0].values()]
    outputs.write_rows(str(tmp_path), read)
    assert (tmp_path / outputs.CSV_NAME).read_bytes() == written


def test_clear_run_removes_only_what_a_run_writes(tmp_path):
    assert outputs.run_entries(str(tmp_path)) == []
    (tmp_path / outputs.CONFIG_NAME).write_text("{}")
    (tmp_path / outputs.CHECKPOINTS_NAME / "3").mkdir(parents=True)
    (tmp_path / "notes.txt").write_text("mine")
    assert outputs.run_entries(str(tmp_path)) == [outputs.CONFIG_NAME, outputs.CHECKPOINTS_NAME]
    outputs.clear_run(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_the_stored_config_round_trips_and_names_missing_keys(tmp_path):
    outputs.write_run_config(str(tmp_path), {"train": {}, "seeds": 2})
    assert outputs.read_run_config(str(tmp_path), ("train", "seeds")) == {"train": {},
                                                                          "seeds": 2}
    with pytest.raises(ValueError, match="lacks seed, render"):
        outputs.read_run_config(str(tmp_path), ("train", "seed", "render"))
    (tmp_path / outputs.CONFIG_NAME).write_text(json.dumps([1]))
    with pytest.raises(ValueError, match="lacks train"):
        outputs.read_run_config(str(tmp_path), ("train",))


def test_an_output_folder_must_be_a_writable_folder(tmp_path):
    outputs.ensure_writable_folder(str(tmp_path / "new" / "run"))
    assert (tmp_path / "new" / "run").is_dir()
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        outputs.ensure_writable_folder(str(tmp_path / "file"))
    with pytest.raises(ValueError, match="cannot be created"):
        outputs.ensure_writable_folder(str(tmp_path / "file" / "run"))


def test_baselines_that_are_not_told_apart_are_flagged():
    # 10 +- 1 against 13 +- 1: the difference (3) exceeds 2 * hypot(1, 1) = 2.83.
    assert outputs.baselines_apart(10.0, 13.0, 1.0, 1.0, 64) is None
    # 10 +- 1 against 12.5 +- 1: within two standard errors, in either order.
    note = outputs.baselines_apart(10.0, 12.5, 1.0, 1.0, 64)
    assert note is not None and "64 episode(s)" in note and "not meaningful" in note
    assert outputs.baselines_apart(12.5, 10.0, 1.0, 1.0, 64) is not None
    apart = outputs.summarize([11.0, 12.0], 10.0, 13.0, baseline_se=(1.0, 1.0, 64))
    assert "baseline_warning" not in apart and apart["random_return_se"] == 1.0
    assert apart["baseline_episodes"] == 64
    close = outputs.summarize([11.0, 12.0], 10.0, 12.5, baseline_se=(1.0, 1.0, 64))
    assert close["baseline_warning"] == note
    assert "baseline_warning" not in outputs.summarize([11.0], 10.0, 12.5)
