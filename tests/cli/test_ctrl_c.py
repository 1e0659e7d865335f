"""Ctrl-C (SIGINT) stops ``jaxmarl-accel run`` in each phase, in one line, and leaves a run
folder that ``--resume`` finishes: while compiling (no compile cache, so that the compile
is long; XLA's compile holds the main thread, and a SIGINT handled inside a gc callback was
dropped), while measuring the baselines, while training and writing checkpoints (a run of
many short chunks), and in the middle of a checkpoint's save (deterministic: the signal
sent from inside the writer; the save completes first)."""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from jaxmarl_accel.cli import run
from jaxmarl_accel.runs import checkpoint
from tests.cli.test_run import TINY, one_line

pytestmark = pytest.mark.xdist_group("run")

RESUME_LINE = "interrupted; continue with: jaxmarl-accel run --resume run"


class Started:
    """A ``jaxmarl-accel run`` subprocess whose stderr is read as it comes."""

    def __init__(self, folder: Path, argv: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from jaxmarl_accel.cli.__main__ import console; console()",
             "run", *argv], cwd=folder, env=env, stderr=subprocess.PIPE, text=True)
        self.err = ""
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while chunk := self.process.stderr.read(1):
            self.err += chunk

    def wait_for(self, text: str, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.err:
            if self.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"never saw {text!r}: {self.err[-2000:]}")
            time.sleep(0.05)

    def interrupt(self, timeout: float = 120) -> tuple[int, list[str], float]:
        """SIGINT; the exit status, the last lines of stderr and the seconds it took."""
        sent = time.monotonic()
        self.process.send_signal(signal.SIGINT)
        status = self.process.wait(timeout=timeout)
        self.reader.join(timeout=30)
        lines = [line.strip() for line in self.err.replace("\r", "\n").splitlines()
                 if line.strip()]
        return status, lines, time.monotonic() - sent


def environment(cache: bool = True) -> dict[str, str]:
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(Path(__file__).parents[2]))
    if not cache:
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
    return env


def resume_finishes(folder: Path, chunks: int) -> None:
    done = subprocess.run([sys.executable, "-m", "jaxmarl_accel.cli", "run", "--resume", "run",
                           "--quiet"], cwd=folder, env=environment(), capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    with open(folder / "run" / "metrics.csv") as file:
        assert sorted({int(float(r["chunk"])) for r in csv.DictReader(file)}) == list(
            range(chunks))
    assert (folder / "run" / "summary.json").is_file()


@pytest.mark.slow
def test_ctrl_c_while_compiling_stops_at_once(tmp_path):
    started = Started(tmp_path, [*TINY[:-1], "--out", "run"], environment(cache=False))
    started.wait_for("compiling one chunk")
    time.sleep(1.0)
    status, lines, seconds = started.interrupt()
    assert status == 130 and lines[-1] == ("interrupted before the run was stored; nothing to "
                                           "resume"), lines[-5:]
    assert seconds < 15 and "Traceback" not in started.err


@pytest.mark.slow
def test_ctrl_c_while_measuring_the_baselines_keeps_a_resumable_run(tmp_path):
    argv = [*TINY[:-1], "--out", "run", "--baseline-episodes", "4000"]
    started = Started(tmp_path, argv, environment())
    started.wait_for("evaluating the random and scripted baselines")
    time.sleep(0.5)
    status, lines, seconds = started.interrupt()
    assert status == 130 and lines[-1] == RESUME_LINE, lines[-5:]
    assert "Traceback" not in started.err
    resume_finishes(tmp_path, 3)


@pytest.mark.slow
def test_ctrl_c_while_training_and_checkpointing_keeps_a_resumable_run(tmp_path):
    argv = [*TINY[:-1], "--out", "run", "--total-env-steps", "20000"]  # 100 short chunks
    started = Started(tmp_path, argv, environment())
    started.wait_for("compiled in")
    time.sleep(3.0)
    status, lines, seconds = started.interrupt()
    assert status == 130 and lines[-1] == RESUME_LINE, lines[-5:]
    assert seconds < 15 and "Traceback" not in started.err
    checkpoints = tmp_path / "run" / "checkpoints"
    assert all(name.isdigit() for name in os.listdir(checkpoints))  # no partial one kept
    resume_finishes(tmp_path, 100)


@pytest.mark.slow
def test_ctrl_c_while_a_checkpoint_is_written_stops_after_it(tmp_path, monkeypatch, capsys):
    out = str(tmp_path / "run")
    real_write = checkpoint.write_shards

    def write_then_interrupted(*args, **kwargs):  # Ctrl-C in the middle of chunk 1's save
        if os.path.basename(os.path.dirname(os.path.dirname(args[0]))) == "1.partial":
            os.kill(os.getpid(), signal.SIGINT)
        return real_write(*args, **kwargs)

    monkeypatch.setattr(checkpoint, "write_shards", write_then_interrupted)
    assert run.main([*TINY, "--out", out]) == 130
    assert one_line(capsys.readouterr().err) == (
        f"interrupted; continue with: jaxmarl-accel run --resume {out}")
    assert sorted(os.listdir(os.path.join(out, "checkpoints"))) == ["0", "1"]  # 1 is whole
    checkpoint.Checkpoints(os.path.join(out, "checkpoints")).index(1)
    monkeypatch.undo()
    assert run.main(["--resume", out, "--quiet"]) == 0
    shutil.rmtree(out)
