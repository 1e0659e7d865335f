"""The installed command line, from an empty folder: ``jaxmarl-accel run`` trains a tiny run,
is interrupted after its first checkpoint, resumes to the end, ``jaxmarl-accel evaluate``
scores it, and a separate program restores the learners with ``orbax.checkpoint`` alone.

CI installs the package without ``-e`` (``.ci/run``), so this runs the installed copy: the
folder holds no checkout for Python to import from.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

# the tiny run and its chunks: it is interrupted once a checkpoint exists, with chunks left
from experiments.bench.interrupts import TINY
from experiments.bench.interrupts import TINY_CHUNKS as CHUNKS


def command(tmp_path, *argv, **kwargs):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["JAX_PLATFORMS"] = "cpu"
    return subprocess.run(list(argv), cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600, **kwargs)


@pytest.mark.slow
def test_installed_command_trains_resumes_evaluates_and_orbax_restores(tmp_path):
    script = shutil.which("jaxmarl-accel")
    assert script, "no jaxmarl-accel on PATH: install the package (pip install .)"
    assert command(tmp_path, script, "--help").stdout.startswith("usage: jaxmarl-accel")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.Popen([script, "run", *TINY, "--out", "run"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    folder = tmp_path / "run" / "checkpoints"
    # any checkpoint: the run keeps the newest 2, so checkpoint 0 is gone once chunk 2's is
    # written, which can fall between two looks on a loaded machine
    saved = lambda: folder.is_dir() and any(p.name.isdigit() for p in folder.iterdir())
    deadline = time.monotonic() + 600
    while not saved() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=600)
    if proc.returncode == 0:  # finished before the signal: nothing left to resume
        pytest.fail("the tiny run ended before it could be interrupted")
    assert proc.returncode == 130, err[-2000:]
    assert "continue with: jaxmarl-accel run --resume run" in err
    resumed = command(tmp_path, script, "run", "--resume", "run", "--quiet")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    with open(tmp_path / "run" / "metrics.csv") as file:
        chunks = sorted({int(float(row["chunk"])) for row in csv.DictReader(file)})
    assert chunks == list(range(CHUNKS))
    evaluated = command(tmp_path, script, "evaluate", "run", "--episodes", "4")
    assert evaluated.returncode == 0, evaluated.stderr[-2000:]
    with open(tmp_path / "run" / "evaluation.json") as file:
        assert json.load(file)["seeds"] == 2
    restore = textwrap.dedent("""
        import os, jax, orbax.checkpoint as ocp
        state = ocp.StandardCheckpointer().restore(os.path.abspath("run/checkpoints/LAST/state"))
        shapes = {leaf.shape[0] for leaf in jax.tree.leaves(state["algo"])}
        print(sorted(state), shapes)
    """).replace("LAST", str(CHUNKS - 1))
    done = command(tmp_path, sys.executable, "-c", restore)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1].endswith("{2}")
    assert "'algo'" in done.stdout
