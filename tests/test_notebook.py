"""notebooks/quickstart.ipynb executes top to bottom on CPU with its tiny configuration."""

from __future__ import annotations

import os
import tempfile

import nbformat
import pytest
from nbclient import NotebookClient

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(REPO, "notebooks", "quickstart.ipynb")


def outputs_text(cell) -> str:
    return "".join(out.get("text", "") for out in cell.get("outputs", []))


@pytest.mark.slow
def test_quickstart_notebook_runs_with_the_tiny_config(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXMARL_NOTEBOOK_TINY", "1")
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0 "
                                    "--xla_llvm_disable_expensive_passes=true")
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", os.environ.get(
        "JAXMARL_TEST_CACHE", os.path.join(tempfile.gettempdir(), "jaxmarl_accel_xla_cache")))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")
    client = NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert "skipping pip install" in outputs_text(code[0])
    assert "tiny: True" in outputs_text(code[1])
    assert "chunk 3/3" in outputs_text(code[2])
    assert "final normalized score per seed" in outputs_text(code[3])
    assert any("image/png" in out.get("data", {}) for out in code[3].outputs)
    assert (tmp_path / "episode.gif").stat().st_size > 0
    assert any("image/gif" in out.get("data", {}) for out in code[4].outputs)
    assert "updates" in outputs_text(code[5]) and "nan" not in outputs_text(code[5])
