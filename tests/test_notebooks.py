"""Every notebook runs top to bottom, offline, and is what the generator writes.

Each committed notebook is executed in a fresh ``python3`` kernel (this venv's python:
jupyter_client runs the native kernel with ``sys.executable``) with the provider API keys
removed and ``BFMEM_NOTEBOOKS_OFFLINE`` set, so a cell that would use a real model uses
the scripted one. A cell that raises or outlives :data:`CELL_TIMEOUT` fails the test.
"""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from types import ModuleType

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

NOTEBOOKS_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 120
PROVIDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "LANGSMITH_API_KEY")


def _generator() -> ModuleType:
    path = NOTEBOOKS_DIR / "build_notebooks.py"
    spec = importlib.util.spec_from_file_location("build_notebooks", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_there_is_a_notebook_for_every_topic() -> None:
    assert [p.name[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04", "05", "06"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_notebook_is_what_the_generator_writes(path: Path) -> None:
    _, built = _generator().build(path.name[:2])
    committed = nbformat.read(path, as_version=4)
    assert [(c.cell_type, c.source) for c in committed.cells] == [
        (c.cell_type, c.source) for c in built.cells
    ], "regenerate: python notebooks/build_notebooks.py --execute"
    first = committed.cells[0]
    assert first.cell_type == "markdown"
    assert "**What this shows.**" in first.source
    assert "**Why.**" in first.source
    code = [c for c in committed.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "committed without outputs"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_notebook_runs_offline_top_to_bottom(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in PROVIDER_KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("BFMEM_NOTEBOOKS_OFFLINE", "1")
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    nb = copy.deepcopy(nbformat.read(path, as_version=4))
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
    )
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError) as exc:
        pytest.fail(f"{path.name}: a cell failed:\n{exc}")
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]
    assert errors == []
