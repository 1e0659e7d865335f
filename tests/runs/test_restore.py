"""A saved run read back: one-line refusals of a folder that holds no run or no checkpoint
(the restore itself is tested end to end by ``tests/cli/test_evaluate.py``)."""

from __future__ import annotations

import pytest

from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.runs.restore import load_run, restore_checkpoint


def test_a_folder_without_a_run_is_refused_in_one_line(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_run(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match=r"is not a run folder \(no config.json\)"):
        load_run(str(tmp_path))


def test_a_run_without_checkpoints_is_refused_in_one_line(tmp_path):
    config = TrainConfig()
    with pytest.raises(ValueError, match=r"holds no checkpoints \(no checkpoints/\)"):
        restore_checkpoint(str(tmp_path), config, 1, None)
    (tmp_path / "checkpoints").mkdir()
    with pytest.raises(ValueError, match="holds no checkpoints$"):
        restore_checkpoint(str(tmp_path), config, 1, None)
