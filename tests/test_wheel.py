"""The README's second way to get the package: ``pip wheel --no-deps . -w dist`` builds one
wheel that holds the library and the ``jaxmarl-accel`` command, and not the checkout's
``experiments/`` and ``tests/`` (the README says they are in the checkout only)."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from tests.test_docs import REPO


@pytest.mark.slow
def test_pip_wheel_builds_the_library_and_its_command(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                    "-q", str(REPO), "-w", str(tmp_path)], check=True, timeout=300,
                   cwd=tmp_path)
    (wheel,) = tmp_path.glob("jaxmarl_accel-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "jaxmarl_accel/__init__.py" in names and "jaxmarl_accel/cli/run.py" in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "jaxmarl-accel = jaxmarl_accel.cli" in zipfile.ZipFile(wheel).read(
        entry_points).decode()
    assert not any(n.startswith(("experiments/", "tests/")) for n in names)
