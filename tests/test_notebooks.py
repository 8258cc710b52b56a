"""The notebooks execute top to bottom (with their small-budget switch on), and install this library, not its namesake."""

import ast
import importlib.util
import os
import re
import subprocess
import sys
import types

import nbformat
import pytest
from nbclient import NotebookClient

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")
NOTEBOOKS = ["Example_Demo.ipynb", "BipedalWalker_Example.ipynb"]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_end_to_end(name, tmp_path, monkeypatch):
    monkeypatch.setenv("ELEGANTRL_QUICK", "1")  # the kernel inherits it
    notebook = nbformat.read(os.path.join(EXAMPLES, name), as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])]
    assert not [output for output in outputs if output.get("output_type") == "error"]
    assert sum("image/png" in output.get("data", {}) or "image/gif" in output.get("data", {}) for output in outputs) >= 2
    assert any((tmp_path / "runs").glob("*/learning_curve.png"))


def pip_install_arguments(source: str) -> list[str]:
    """What a cell's code passes to pip install: in an argument list (subprocess) or in a command string."""
    arguments = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.List):
            items = [item.value if isinstance(item, ast.Constant) else "<expression>" for item in node.elts]
            arguments += items[items.index("install") + 1 :] if "install" in items else []
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "pip install " in node.value:
            arguments += node.value.split("pip install ", 1)[1].split()
    return arguments


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_a_notebook_installs_this_library_from_its_source_never_the_index_namesake(name, monkeypatch):
    cells = [cell.source for cell in nbformat.read(os.path.join(EXAMPLES, name), as_version=4).cells if cell.cell_type == "code"]
    arguments = [argument for cell in cells for argument in pip_install_arguments(cell)]
    # the package named elegantrl on the public index is another project: never a bare spec, always -e <source>
    assert not [argument for argument in arguments if re.match(r"""['"]?elegantrl\b""", str(argument))]
    assert "-e" in arguments
    # run where elegantrl is missing, from examples/: it installs the clone it lies in, editable
    commands, find_spec = [], importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda module, *args: None if module == "elegantrl" else find_spec(module, *args))
    monkeypatch.setattr(subprocess, "run", lambda command, **kwargs: commands.append(command))
    monkeypatch.setattr(sys, "path", list(sys.path))  # the cell puts the source on the path
    monkeypatch.chdir(EXAMPLES)
    exec(cells[0], {})
    root = os.path.dirname(os.path.realpath(EXAMPLES))
    assert [command[3:] for command in commands] == [["install", "-q", "-e", f"{root}[box2d]"]]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_a_notebook_says_so_when_the_elegantrl_installed_is_its_namesake(name, monkeypatch):
    monkeypatch.setitem(sys.modules, "elegantrl.run", types.ModuleType("elegantrl.run"))  # an elegantrl without this library's names
    install_cell = next(cell.source for cell in nbformat.read(os.path.join(EXAMPLES, name), as_version=4).cells if cell.cell_type == "code")
    with pytest.raises(ImportError, match=r"another project of the same name.*pip uninstall elegantrl.*pip install -e"):
        exec(install_cell, {})
