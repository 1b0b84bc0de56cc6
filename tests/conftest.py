"""PostgreSQL for the tests marked ``postgres``, and the CI check that none of them skipped.

``BFMEM_TEST_POSTGRES_URL`` names a server the tests may create databases on
(``scripts/with-postgres.sh`` starts a throwaway one and sets it). Each test gets a fresh
database, dropped afterwards. Without the variable the tests skip, saying how to run them.

With ``BFMEM_REQUIRE_POSTGRES=1`` (``.ci/run`` sets it) a run in which any ``postgres``
test skipped, or none ran, fails; every run that collected one prints how many ran.

A run leaves nothing behind: every temporary file the suite makes (its notebooks' kernels
and subprocesses included) goes under one fresh directory, and the run fails when that
directory, or the working tree, holds a new file at the end (pytest's own ``tmp_path``
directories and the tool caches excepted).

Hypothesis: with ``CI`` set the property tests run the ``ci`` profile, derandomized, so
main's verdict depends on the commit, not on the draw (a case a random run finds on a
developer's machine is pinned as a named regression test, as test_window's late-system
case was). Elsewhere they explore with fresh random draws.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from langchain_core.messages import content as _content

# Under CI a slow property also runs at most 40 examples (``tests.helpers.examples``): the
# same draws every run, so the breadth comes from developers' runs, which draw afresh.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# langchain-core re-derives its data-block types from TypedDict hints on every block it
# checks (`typing.get_type_hints`, ~0.1 ms a block): the provider payload builders the
# wire checks call do it tens of thousands of times a test. The answer is a constant.
_content._get_data_content_block_types = functools.cache(_content._get_data_content_block_types)

POSTGRES_URL_VAR = "BFMEM_TEST_POSTGRES_URL"
HOW_TO_RUN = (
    f"needs PostgreSQL: set {POSTGRES_URL_VAR}, or run "
    "`scripts/with-postgres.sh pytest -m postgres` (starts a throwaway server)"
)


def _with_database(url: str, name: str) -> str:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(url)
    params["dbname"] = name
    return make_conninfo(**params)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A conninfo string for a fresh, empty database (dropped after the test)."""
    server = os.environ.get(POSTGRES_URL_VAR)
    if not server:
        pytest.skip(HOW_TO_RUN)
    import psycopg

    name = f"bfmem_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _with_database(server, name)
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# ------------------------------------------------------------- a run leaves nothing behind

ROOT = Path(__file__).resolve().parents[1]
_CACHES = (
    "__pycache__/",
    ".pytest_cache/",
    ".hypothesis/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".benchmarks/",
    ".ipynb_checkpoints/",
    ".egg-info/",
)
"""Tool caches in the working tree that a run may leave (each is git-ignored)."""
_suite_temp: Path | None = None
_tree_before: set[str] | None = None
_left_behind: list[str] = []


def _tree_files() -> set[str] | None:
    """The working tree's untracked and ignored files (``None`` outside a git checkout)."""
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    paths = {line[3:] for line in out.splitlines() if line[:2] in ("??", "!!")}
    return {p for p in paths if not any(cache in f"/{p}" for cache in _CACHES)}


def pytest_configure(config: pytest.Config) -> None:
    global _suite_temp, _tree_before
    if hasattr(config, "workerinput"):  # pragma: no cover - xdist workers share the parent's
        return
    _suite_temp = Path(tempfile.mkdtemp(prefix="bfmem-tests-"))
    os.environ["TMPDIR"] = str(_suite_temp)
    tempfile.tempdir = str(_suite_temp)
    # tiktoken copies every encoding it loads into <temp>/data-gym-cache; no cache here.
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")
    _tree_before = _tree_files()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Hypothesis properties are marked `property`, so a stage that checks only that the
    # package runs (CI's oldest-Python stage) can leave them to the main stage.
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)


def _leftovers() -> list[str]:
    found: list[str] = []
    if _suite_temp is not None and _suite_temp.exists():
        found += [
            f"{tempfile.gettempdir()}/{p.name}"
            for p in sorted(_suite_temp.iterdir())
            if not p.name.startswith("pytest-of-")
        ]
    after = _tree_files()
    if _tree_before is not None and after is not None:
        found += sorted(after - _tree_before)
    return found


def pytest_unconfigure(config: pytest.Config) -> None:
    if _suite_temp is not None and not _left_behind:
        shutil.rmtree(_suite_temp, ignore_errors=True)


# ------------------------------------------------------------- counting the postgres tests

_outcomes: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Read off the report, not the collected items: under pytest-xdist the items are
    # collected in the workers, and only the reports reach this process.
    if "postgres" not in report.keywords:
        return
    if report.skipped:
        _outcomes[report.nodeid] = "skipped"
    elif report.failed:
        _outcomes[report.nodeid] = "failed"
    elif report.when == "call":
        _outcomes.setdefault(report.nodeid, "passed")


def _counts() -> dict[str, int]:
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for outcome in _outcomes.values():
        counts[outcome] += 1
    return counts


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if session.testscollected and exitstatus == 0:
        _left_behind.extend(_leftovers())
        if _left_behind:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if os.environ.get("BFMEM_REQUIRE_POSTGRES") != "1":
        return
    counts = _counts()
    if counts["skipped"] or not _outcomes:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _left_behind:
        terminalreporter.write_line(
            "FAILED: the run left files behind (a test must remove what it makes): "
            + ", ".join(_left_behind)
        )
    if not _outcomes:
        if os.environ.get("BFMEM_REQUIRE_POSTGRES") == "1":
            terminalreporter.write_line("FAILED: no postgres test ran (BFMEM_REQUIRE_POSTGRES=1)")
        return
    counts = _counts()
    ran = counts["passed"] + counts["failed"]
    terminalreporter.write_line(
        f"postgres tests run: {ran} (passed {counts['passed']}, failed {counts['failed']}, "
        f"skipped {counts['skipped']})"
    )
    if counts["skipped"] and os.environ.get("BFMEM_REQUIRE_POSTGRES") == "1":
        terminalreporter.write_line(
            "FAILED: postgres tests skipped although BFMEM_REQUIRE_POSTGRES=1"
        )
