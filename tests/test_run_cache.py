"""tests/conftest.py's compilation cache: each run of the suite compiles into an empty folder
of its own, shared by its workers and by the command-line runs its tests start, and removed
when the run ends."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile

import jax
import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent

RECORDING = '''import os

import jax
import pytest


@pytest.mark.parametrize("i", range(4))
def test_record(i):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(os.environ["RECORD_DIR"], f"{worker}_{i}"), "w") as fh:
        fh.write(" ".join([jax.config.jax_compilation_cache_dir,
                           os.environ["JAX_COMPILATION_CACHE_DIR"],
                           str(os.path.isdir(jax.config.jax_compilation_cache_dir))]))
'''


def test_this_run_compiles_into_its_own_folder():
    folder = os.environ["JAXMARL_TEST_CACHE"]
    assert jax.config.jax_compilation_cache_dir == folder
    assert os.environ["JAX_COMPILATION_CACHE_DIR"] == folder  # what command-line runs read
    assert os.path.isdir(folder)


@pytest.mark.slow
def test_a_run_makes_shares_and_removes_its_own_folder(tmp_path):
    suite, record = tmp_path / "suite", tmp_path / "record"
    suite.mkdir()
    record.mkdir()
    (suite / "test_recording.py").write_text(RECORDING)
    env = {name: value for name, value in os.environ.items()
           if name not in ("JAXMARL_TEST_CACHE", "JAX_COMPILATION_CACHE_DIR")}
    env["RECORD_DIR"] = str(record)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "1", "-p",
                           "no:cacheprovider", "-p", "tests.conftest", str(suite)],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = {path.read_text() for path in record.iterdir()}
    assert len(list(record.iterdir())) == 4 and len(seen) == 1  # one folder for every test
    config_dir, env_dir, existed = seen.pop().split(" ")
    assert config_dir == env_dir and existed == "True"
    assert os.path.dirname(config_dir) == tempfile.gettempdir()
    assert config_dir != os.environ["JAXMARL_TEST_CACHE"]  # not this run's folder
    assert not os.path.exists(config_dir)  # removed at the end of its run
