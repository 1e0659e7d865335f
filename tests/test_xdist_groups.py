"""tests.xdist_groups: the tests of a module marked with an xdist group run on one worker
under ``pytest -n 2`` (the README's test command), whatever pytest's version does to node ids."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from tests.xdist_groups import module_group

REPO = pathlib.Path(__file__).resolve().parent.parent

MARKED = '''import os
import pytest

pytestmark = pytest.mark.xdist_group("fixtures")


@pytest.mark.parametrize("i", range(6))
def test_marked(i):
    with open(os.path.join(os.environ["WORKERS_DIR"], f"marked_{i}"), "w") as fh:
        fh.write(os.environ["PYTEST_XDIST_WORKER"])
'''
UNMARKED = '''import os
import time
import pytest


@pytest.mark.parametrize("i", range(6))
def test_unmarked(i):
    time.sleep(0.2)
    with open(os.path.join(os.environ["WORKERS_DIR"], f"unmarked_{i}"), "w") as fh:
        fh.write(os.environ["PYTEST_XDIST_WORKER"])
'''


def test_the_group_is_read_from_the_modules_mark(tmp_path):
    (tmp_path / "a.py").write_text(MARKED)
    (tmp_path / "b.py").write_text(UNMARKED)
    (tmp_path / "c.py").write_text('pytestmark = pytest.mark.xdist_group(name="x")\n')
    assert module_group(tmp_path / "a.py") == "fixtures"
    assert module_group(tmp_path / "b.py") is None
    assert module_group(tmp_path / "c.py") == "x"
    assert module_group(tmp_path / "missing.py") is None


def test_a_marked_modules_tests_share_one_worker(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_marked.py").write_text(MARKED)
    (suite / "test_unmarked.py").write_text(UNMARKED)
    (suite / "pytest.ini").write_text("[pytest]\naddopts = --dist loadgroup\n")
    workers = tmp_path / "workers"
    workers.mkdir()
    env = {**os.environ, "WORKERS_DIR": str(workers),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p",
                           "no:cacheprovider", "-p", "tests.xdist_groups", str(suite)],
                          cwd=suite, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = {path.name: path.read_text() for path in workers.iterdir()}
    assert len(ran) == 12, ran
    assert len({ran[f"marked_{i}"] for i in range(6)}) == 1, ran
    assert {ran[f"unmarked_{i}"] for i in range(6)} | {ran["marked_0"]} == {"gw0", "gw1"}, ran
