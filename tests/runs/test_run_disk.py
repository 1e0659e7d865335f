"""Checkpoints and the disk: a run whose checkpoints cannot fit is refused before it trains,
and a checkpoint that fails to write (e.g. the disk filled up meanwhile) stops the run in one
line, keeps the last complete checkpoint and removes the incomplete files."""

from __future__ import annotations

import errno
import os
from collections import namedtuple

import jax
import jax.numpy as jnp
import pytest
from flax import struct

from jaxmarl_accel.cli import run
from jaxmarl_accel.runs import run_store
from jaxmarl_accel.runs.checkpoint import Checkpoints
from tests.cli.test_run import TINY, one_line

pytestmark = pytest.mark.xdist_group("run")

Usage = namedtuple("Usage", "total used free")


@struct.dataclass
class State:
    algo: jax.Array
    buffer: jax.Array


def test_checkpoint_bytes_count_the_replay_only_when_it_is_kept():
    state = State(algo=jnp.zeros((3, 4), jnp.float32), buffer=jnp.zeros((10,), jnp.uint8))
    abstract = jax.eval_shape(lambda: state)
    assert sorted(run_store.checkpoint_items(state)) == [".algo", run_store.REPLAY]
    assert run_store.checkpoint_bytes(abstract) == 48 + 10
    assert run_store.checkpoint_bytes(abstract, replay=False) == 48


def test_a_run_whose_checkpoints_cannot_fit_is_refused_before_it_trains(monkeypatch, tmp_path,
                                                                        capsys):
    monkeypatch.setattr(run_store.shutil, "disk_usage", lambda path: Usage(10**9, 0, 1000))
    out = tmp_path / "out"
    assert run.main([*TINY, "--out", str(out)]) == 2
    line = one_line(capsys.readouterr().err)
    assert "the run's checkpoints need" in line and "are free" in line
    assert "--checkpoint-replay false" in line
    assert not out.exists()  # refused before anything was written


def test_a_checkpoint_that_fails_to_write_stops_the_run_and_keeps_the_last(monkeypatch, tmp_path,
                                                                           capsys):
    real_save = Checkpoints.save

    def disk_full_from_chunk_1(self, step, items, *args, **kwargs):
        if step < 1:
            return real_save(self, step, items, *args, **kwargs)
        os.makedirs(self.path(step) + ".partial")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Checkpoints, "save", disk_full_from_chunk_1)
    out = str(tmp_path / "full")
    assert run.main([*TINY, "--out", out]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    line = one_line(err)
    assert "the checkpoint after chunk 1 could not be written (No space left on device)" in line
    assert "checkpoint after chunk 0 kept" in line and "--resume" in line
    assert sorted(os.listdir(os.path.join(out, "checkpoints"))) == ["0"]
    monkeypatch.undo()
    assert run.main(["--resume", out, "--quiet"]) == 0
