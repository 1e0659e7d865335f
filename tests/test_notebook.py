"""notebooks/quickstart.ipynb: its install cell chooses the right requirement (run here with
pip stubbed out), and the whole notebook executes top to bottom on CPU with its tiny sizes
(``TINY = True`` in its first code cell)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess

import nbformat
import pytest
from nbclient import NotebookClient

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(REPO, "notebooks", "quickstart.ipynb")
TPU_VARS = ("COLAB_TPU_ADDR", "TPU_NAME")


def code_cells(notebook) -> list:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def outputs_text(cell) -> str:
    return "".join(out.get("text", "") for out in cell.get("outputs", []))


def run_install_cell(monkeypatch, tmp_path, repository: str) -> list[list[str]]:
    """Runs the install cell as if jaxmarl_accel were not installed, from a folder with no
    checkout above it, with `REPOSITORY = repository`; returns the commands it ran."""
    setting, install = (cell.source for cell in code_cells(nbformat.read(NOTEBOOK, 4))[:2])
    assert setting.splitlines() == [
        'REPOSITORY = ""  # fill in: a git URL of jaxmarl_accel, or the path of an uploaded .whl',
        "TINY = False  # True: tiny sizes, one to two minutes on a CPU (too small to learn)"]
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "jaxmarl_accel"
                        else real_find_spec(name, *a))
    commands: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", lambda command, **kw: commands.append(command))
    (tmp_path / "notebooks").mkdir(exist_ok=True)
    monkeypatch.chdir(tmp_path / "notebooks")
    exec(f"REPOSITORY = {repository!r}\n{install}", {})
    return commands


def on_a_gpu(monkeypatch) -> None:
    """The install cell's runtime check sees an NVIDIA GPU (and no TPU)."""
    for name in TPU_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/nvidia-smi"
                        if name == "nvidia-smi" else None)


def test_install_cell_without_a_repository_says_what_to_set(monkeypatch, tmp_path):
    with pytest.raises(SystemExit, match="Set REPOSITORY in the first code cell") as err:
        run_install_cell(monkeypatch, tmp_path, "")
    message = str(err.value)
    assert "\n" not in message and "OWNER" not in message
    assert "git URL" in message and "uploaded wheel" in message


def test_install_cell_on_a_gpu_installs_the_gpu_extra_from_an_uploaded_wheel(monkeypatch,
                                                                              tmp_path):
    on_a_gpu(monkeypatch)
    wheel = tmp_path / "jaxmarl_accel-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    (command,) = run_install_cell(monkeypatch, tmp_path, str(wheel))
    assert command[-1] == f"jaxmarl_accel[gpu] @ file://{wheel}"
    with pytest.raises(SystemExit, match="which is not there: upload it"):
        run_install_cell(monkeypatch, tmp_path, str(tmp_path / "missing.whl"))
    # left empty: the one wheel uploaded to the working folder
    (tmp_path / "notebooks" / wheel.name).write_bytes(b"")
    (command,) = run_install_cell(monkeypatch, tmp_path, "")
    assert command[-1] == f"jaxmarl_accel[gpu] @ file://{tmp_path / 'notebooks' / wheel.name}"


def test_install_cell_on_a_tpu_installs_the_tpu_extra_from_the_repository(monkeypatch, tmp_path):
    monkeypatch.setenv("COLAB_TPU_ADDR", "10.0.0.2:8470")
    commands = run_install_cell(monkeypatch, tmp_path, "github.com/someone/jaxmarl_accel@main")
    assert len(commands) == 1
    assert commands[0][-1] == "jaxmarl_accel[tpu] @ git+https://github.com/someone/jaxmarl_accel@main"
    assert commands[0][1:4] == ["-m", "pip", "install"]


@pytest.mark.slow
def test_quickstart_notebook_runs_with_the_tiny_sizes(tmp_path, monkeypatch):
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0 "
                                    "--xla_llvm_disable_expensive_passes=true")
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", os.environ["JAXMARL_TEST_CACHE"])
    for name in TPU_VARS:
        monkeypatch.delenv(name, raising=False)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not cell.get("outputs") for cell in code_cells(notebook))
    setting = code_cells(notebook)[0]
    setting.source = setting.source.replace("TINY = False", "TINY = True")  # as a user would
    client = NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    text = [outputs_text(cell) for cell in code_cells(notebook)]
    assert "skipping pip install" in text[1]
    assert "tiny: True" in text[2]
    everything = "\n".join(text)
    for algo, env in (("matd3", "simple_spread"), ("qmix", "stag_hunt")):
        assert f"{algo} on {env}; settings" in everything
        assert f"{algo} chunk 3/3" in everything
    reports = [cell for cell in code_cells(notebook) if "normalized score per seed"
               in outputs_text(cell)]
    assert len(reports) == 2
    for cell in reports:
        assert any("image/png" in out.get("data", {}) for out in cell.outputs)
        assert "random" in outputs_text(cell) and "scripted" in outputs_text(cell)
    assert not re.search(r"\bnan\b", everything, re.IGNORECASE)
