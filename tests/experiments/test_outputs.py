"""experiments.outputs: the metrics CSV round trip, the run folder checks, the stored config."""

from __future__ import annotations

import json

import pytest

from experiments import outputs


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
