"""Remote run folders (``--out URL``): the mirror's uploads, order and deletions on an
in-memory fsspec file system, and the command line end to end on ``file://`` URLs: an
interrupted run resumed from the remote copy alone (another stage, as on another machine)
writes what the uninterrupted local run wrote; evaluate reads a URL; bad URLs are one line."""

from __future__ import annotations

import os
import shutil
import uuid

import fsspec
import pytest

from jaxmarl_accel.cli import evaluate, run
from jaxmarl_accel.runs import outputs, remote
from tests.cli.test_run import (
    TINY,
    assert_same_outputs,
    interrupt_after_chunk_1,
    one_line,
)


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


@pytest.fixture
def memory_mirror(tmp_path):
    url = f"memory://runs/{uuid.uuid4().hex}"
    mirror = remote.Mirror(url, str(tmp_path / "stage"), outputs.RUN_ENTRIES)
    yield mirror
    fs = fsspec.filesystem("memory")
    if fs.exists(mirror.root):
        fs.rm(mirror.root, recursive=True)


def test_urls_and_default_stage():
    assert remote.is_remote("gs://bucket/run") and remote.is_remote("file:///tmp/x")
    assert not remote.is_remote("/tmp/x") and not remote.is_remote("runs/a:b")
    stage = remote.default_stage("gs://bucket/runs/../qmix/")
    assert stage.endswith(os.path.join("jaxmarl_accel", "stage", "gs", "bucket", "runs", "qmix"))


def test_push_uploads_new_and_changed_files_indexes_last(memory_mirror, monkeypatch):
    stage = memory_mirror.stage
    write(f"{stage}/config.json", "{}")
    write(f"{stage}/checkpoints/0/checkpoint.json", "index")
    write(f"{stage}/checkpoints/0/replay/00000.bin", "data")
    write(f"{stage}/checkpoints/0/state/manifest.ocdbt", "state")
    write(f"{stage}/checkpoints/1.partial/replay/00000.bin", "half written")
    uploads = []
    real_put = memory_mirror.fs.put_file
    monkeypatch.setattr(memory_mirror.fs, "put_file",
                        lambda src, dst, **kw: (uploads.append(dst), real_put(src, dst, **kw)))
    assert memory_mirror.push() == 4
    names = [path[len(memory_mirror.root) + 1:] for path in uploads]
    assert names[-1] == "checkpoints/0/checkpoint.json"  # the index after its data
    assert not any(".partial" in name for name in names)
    assert memory_mirror.remote_files() == sorted(names)
    assert memory_mirror.push() == 0  # nothing changed, nothing uploaded
    write(f"{stage}/config.json", '{"changed": 1}')
    assert memory_mirror.push() == 1
    assert memory_mirror.fs.cat_file(f"{memory_mirror.root}/config.json") == b'{"changed": 1}'


def test_push_deletes_what_the_stage_no_longer_has_index_first(memory_mirror, monkeypatch):
    stage = memory_mirror.stage
    for step in (0, 1):
        write(f"{stage}/checkpoints/{step}/checkpoint.json", "index")
        write(f"{stage}/checkpoints/{step}/replay/00000.bin", "data")
    memory_mirror.push()
    shutil.rmtree(f"{stage}/checkpoints/0")
    deleted = []
    real_rm = memory_mirror.fs.rm_file
    monkeypatch.setattr(memory_mirror.fs, "rm_file",
                        lambda path, **kw: (deleted.append(path), real_rm(path, **kw)))
    memory_mirror.push()
    assert [path[len(memory_mirror.root) + 1:] for path in deleted] == [
        "checkpoints/0/checkpoint.json", "checkpoints/0/replay/00000.bin"]
    assert memory_mirror.remote_files() == ["checkpoints/1/checkpoint.json",
                                            "checkpoints/1/replay/00000.bin"]


def test_only_the_runs_own_files_are_ever_deleted(memory_mirror, tmp_path):
    fs, root = memory_mirror.fs, memory_mirror.root
    fs.pipe_file(f"{root}/notes.txt", b"the user's")
    fs.pipe_file(f"{root}/metrics.csv", b"an old run's")
    memory_mirror.forget_remote_run()  # --overwrite
    write(f"{memory_mirror.stage}/config.json", "{}")
    memory_mirror.push()
    assert memory_mirror.remote_files() == ["config.json", "notes.txt"]
    other = remote.Mirror(memory_mirror.url, str(tmp_path / "other"), outputs.RUN_ENTRIES)
    assert other.pull() == 2 and sorted(other.local_files()) == ["config.json", "notes.txt"]
    assert other.push() == 0  # a pulled copy is in step with the remote


@pytest.mark.slow
def test_interrupted_remote_run_resumes_from_the_remote_copy(tmp_path, monkeypatch, capsys):
    """Ctrl-C after chunk 1's checkpoint: the remote holds the run so far; resumed from the
    URL into a fresh stage, it ends with the files of the uninterrupted local run."""
    local = str(tmp_path / "local")
    assert run.main([*TINY, "--out", local]) == 0
    url = f"file://{tmp_path}/bucket/run"
    interrupt_after_chunk_1(monkeypatch)
    stage = str(tmp_path / "stage")
    assert run.main([*TINY, "--out", url, "--stage", stage]) == 130
    assert one_line(capsys.readouterr().err) == (
        f"interrupted; continue with: jaxmarl-accel run --resume {url}")
    remote_dir = str(tmp_path / "bucket" / "run")
    assert sorted(os.listdir(os.path.join(remote_dir, "checkpoints"))) == ["0", "1"]
    monkeypatch.undo()
    shutil.rmtree(stage)  # another machine: only the remote copy is left
    assert run.main(["--resume", url, "--stage", str(tmp_path / "stage2"), "--quiet"]) == 0
    assert_same_outputs(local, remote_dir)
    assert sorted(os.listdir(os.path.join(remote_dir, "checkpoints"))) == ["1", "2"]
    capsys.readouterr()
    # evaluate reads the URL and uploads what it writes into the run folder
    assert evaluate.main([url, "--episodes", "2", "--stage", str(tmp_path / "stage3")]) == 0
    assert os.path.exists(os.path.join(remote_dir, outputs.EVALUATION_NAME))


@pytest.mark.parametrize("argv, message", [
    (["--out", "nosuchscheme://x"], "nosuchscheme://x cannot be opened (Protocol not known"),
    (["--stage", "/tmp/somewhere"], "--stage is for a remote --out or --resume URL only"),
])
def test_bad_remote_flags_are_one_line(argv, message, capsys):
    assert run.main([*TINY, *argv]) == 2
    assert one_line(capsys.readouterr().err).startswith(f"error: {message}")


def test_remote_folders_holding_or_missing_a_run_are_one_line(tmp_path, capsys):
    held = tmp_path / "held"
    write(str(held / "config.json"), "{}")
    assert run.main([*TINY, "--out", f"file://{held}"]) == 2
    assert one_line(capsys.readouterr().err) == (
        f"error: --out file://{held} holds a run already (config.json); continue it with "
        f"--resume file://{held}, or replace it with --overwrite")
    assert run.main(["--resume", f"file://{tmp_path}/empty"]) == 2
    assert one_line(capsys.readouterr().err) == (
        f"error: --resume file://{tmp_path}/empty holds no run (config.json is missing)")
    assert evaluate.main([f"file://{tmp_path}/empty"]) == 2
    assert "holds no run" in one_line(capsys.readouterr().err)
