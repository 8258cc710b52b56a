"""The notebooks execute top to bottom (with their small-budget switch on)."""

import os

import nbformat
import pytest
from nbclient import NotebookClient

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


@pytest.mark.parametrize("name", ["Example_Demo.ipynb", "BipedalWalker_Example.ipynb"])
def test_notebook_runs_end_to_end(name, tmp_path, monkeypatch):
    monkeypatch.setenv("ELEGANTRL_QUICK", "1")  # the kernel inherits it
    notebook = nbformat.read(os.path.join(EXAMPLES, name), as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])]
    assert not [output for output in outputs if output.get("output_type") == "error"]
    assert sum("image/png" in output.get("data", {}) or "image/gif" in output.get("data", {}) for output in outputs) >= 2
    assert any((tmp_path / "runs").glob("*/learning_curve.png"))
