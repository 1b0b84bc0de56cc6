"""Every notebook runs top to bottom, offline, and matches its jupytext script.

Each notebook is its own source, paired with a jupytext percent-format script
(``notebooks/NN_name.py``, the file to review and edit). After an edit to either, sync the
pair and re-execute, so the stored outputs match the code::

    cd notebooks
    jupytext --sync 0*.py                     # (or 0*.ipynb, whichever you edited)
    BFMEM_NOTEBOOKS_OFFLINE=1 jupyter execute --inplace 0*.ipynb

Each committed notebook is executed in a fresh ``python3`` kernel (this venv's python:
jupyter_client runs the native kernel with ``sys.executable``) with the provider API keys
removed and ``BFMEM_NOTEBOOKS_OFFLINE`` set, so a cell that would use a real model uses
the scripted one. A cell that raises or outlives :data:`CELL_TIMEOUT` fails the test, and
so does a stored output that is not what the code prints now (stdout and results; dates
masked): the committed outputs are documentation, and go stale when the package changes.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

NOTEBOOKS_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 120
PROVIDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "LANGSMITH_API_KEY")


def test_there_is_a_notebook_for_every_topic() -> None:
    assert [p.name[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04", "05", "06"]


def _cells(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source) for c in nb.cells]


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:T[\d:.]+Z?)?")


def _printed(nb: nbformat.NotebookNode) -> list[list[str]]:
    """Each code cell's printed text (stdout and plain-text results), dates masked.

    stderr (log lines, warnings) and images are left out: they carry timings and
    renderer details, not what the code computed. Everything else is deterministic:
    the scripted model, the tools and the summarizer stand-in are.
    """
    printed: list[list[str]] = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        texts = [
            o.get("text", "") if o.output_type == "stream" else o.data.get("text/plain", "")
            for o in cell.outputs
            if (o.output_type == "stream" and o.get("name") == "stdout")
            or o.output_type == "execute_result"
        ]
        printed.append([_DATE.sub("<date>", "".join(texts))])
    return printed


def test_every_script_in_the_folder_is_a_notebooks_pair() -> None:
    scripts = sorted(p.stem for p in NOTEBOOKS_DIR.glob("*.py"))
    assert scripts == [p.stem for p in NOTEBOOKS], "each notebook and only them: NN_name.py"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_notebook_and_its_script_are_in_sync(path: Path) -> None:
    committed = nbformat.read(path, as_version=4)
    assert committed.metadata.get("jupytext", {}).get("formats") == "ipynb,py:percent"
    script = jupytext.read(path.with_suffix(".py"))
    assert _cells(script) == _cells(committed), (
        f"{path.name} and {path.stem}.py differ: run `jupytext --sync` on the one you edited"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_notebook_is_committed_executed_top_to_bottom(path: Path) -> None:
    committed = nbformat.read(path, as_version=4)
    first = committed.cells[0]
    assert first.cell_type == "markdown"
    assert "**What this shows.**" in first.source
    assert "**Why.**" in first.source
    code = [c for c in committed.cells if c.cell_type == "code"]
    # One run after the last edit: jupytext drops the outputs of a cell whose code changed,
    # and a partial re-run leaves the counts out of order.
    assert [c.get("execution_count") for c in code] == list(range(1, len(code) + 1)), (
        "re-execute: BFMEM_NOTEBOOKS_OFFLINE=1 jupyter execute --inplace " + path.name
    )
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert errors == []


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
    committed = nbformat.read(path, as_version=4)
    assert _printed(nb) == _printed(committed), (
        f"{path.name}: the stored outputs are stale (the code or the package changed since "
        f"the last run); re-execute: BFMEM_NOTEBOOKS_OFFLINE=1 jupyter execute --inplace "
        f"{path.name}"
    )
