"""What a resumed run decides before compiling (:mod:`jaxmarl_accel.runs.resume`): whether
it is finished, how an extension goes on, and which checkpoint it starts from."""

from __future__ import annotations

import os
from types import SimpleNamespace

import jax.numpy as jnp
import pytest

from jaxmarl_accel.runs.checkpoint import Checkpoints
from jaxmarl_accel.runs.resume import extension_note, finished_note, usable_checkpoints

TRAINER = SimpleNamespace(steps_per_chunk=200, total_steps=1000, num_chunks=5)
"""A run of 5 chunks of 200 env steps, extended from 600."""


def test_a_run_is_finished_after_its_last_chunk_with_its_summary(tmp_path):
    assert finished_note(str(tmp_path), [2, 1], 3, 600) is None  # no summary yet
    (tmp_path / "summary.json").write_text("{}")
    assert "is finished (600 env steps per seed" in finished_note(str(tmp_path), [2, 1], 3, 600)
    assert finished_note(str(tmp_path), [1, 0], 3, 600) is None  # chunk 2 still to train
    assert finished_note(str(tmp_path), [], 3, 600) is None


def test_an_extension_says_where_it_goes_on_and_what_pbt_misses():
    note = extension_note("run", [2, 1], 600, TRAINER, 0)
    assert note.startswith("extending run from 600 to 1,000 env steps per seed (chunks 3 to 4)")
    assert "PBT" not in note
    assert "its step after chunk 2, none as the run's last, is not made up" in extension_note(
        "run", [2, 1], 600, TRAINER, 3)
    assert "not made up" not in extension_note("run", [1, 0], 600, TRAINER, 2)  # unfinished


def test_a_run_that_ended_on_a_shorter_chunk_cannot_be_extended():
    with pytest.raises(ValueError, match="ended with a chunk shorter than the others"):
        extension_note("run", [2], 500, TRAINER, 0)
    extension_note("run", [1], 500, TRAINER, 0)  # interrupted before its short chunk: fine


def test_the_newest_whole_checkpoint_is_chosen_and_newer_ones_named(tmp_path):
    folder = str(tmp_path / "checkpoints")
    checkpoints = Checkpoints(folder)
    items = {".a": jnp.ones((3,), jnp.float32)}
    for step in (0, 1):
        checkpoints.save(step, items)
    target = {".a": jnp.zeros((3,), jnp.float32)}
    assert usable_checkpoints(checkpoints, target, 3, (), print) == [1, 0]
    os.remove(os.path.join(folder, "1", "checkpoint.json"))
    warned = []
    assert usable_checkpoints(checkpoints, target, 3, (), warned.append) == [0]
    assert len(warned) == 1 and "skipping the checkpoint after chunk 1" in warned[0]
    with pytest.raises(ValueError, match="has 1 chunks"):
        usable_checkpoints(checkpoints, target, 1, (), print)
