"""One file under two names (relative and absolute) is one file to the brief and the restore.

mini-swe-agent's django run reads ``django/db/models/base.py`` and edits
``/testbed/django/db/models/base.py``; Claude Code's ``Read`` takes absolute paths and its
``Bash`` relative ones. The brief listed such a file twice, under "Changed" and again
under "Read", and a re-attached read edited since under its other name did not say so.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory.messages import stamp_of
from langchain_builderforce_memory.transcript.fold import build_working_transcript
from langchain_builderforce_memory.transcript.view import RESTORED_KIND
from langchain_builderforce_memory.validity import request_problems
from langchain_builderforce_memory.working.file_keys import FileKeys
from langchain_builderforce_memory.working.memory import Observation, WorkingMemory

from .helpers import ScriptedSummarizer


@pytest.mark.parametrize(
    ("seen", "path", "key"),
    [
        (["django/db/base.py", "/testbed/django/db/base.py"], "/testbed/setup.py", "setup.py"),
        (["/testbed/django/db/base.py", "django/db/base.py"], "/testbed/a/b.py", "a/b.py"),
        (["/testbed/django/db/base.py", "./django/db/base.py"], "./x.py", "x.py"),
        # One part alone is no evidence: any directory may hold a setup.py.
        (["setup.py", "/tmp/setup.py"], "/tmp/x.py", "/tmp/x.py"),
        # A root is a whole directory: /testbedx is not under /testbed.
        (["a/b.py", "/testbed/a/b.py"], "/testbedx/c.py", "/testbedx/c.py"),
        ([], "/testbed/a/b.py", "/testbed/a/b.py"),
    ],
)
def test_a_path_is_keyed_relative_to_a_root_only_once_both_names_were_seen(
    seen: list[str], path: str, key: str
) -> None:
    keys = FileKeys()
    for name in seen:
        keys.add(name)
    assert keys.key(path) == key


def test_roots_are_capped() -> None:
    keys = FileKeys()
    for i in range(10):
        keys.add(f"d/f{i}.py")
        keys.add(f"/r{i}/d/f{i}.py")
    assert len(keys.roots) == 4
    assert keys.key("/r9/d/f9.py") == "/r9/d/f9.py"


def _bash(i: int, command: str, output: str) -> list[BaseMessage]:
    call = {"name": "bash", "args": {"command": command}, "id": f"b{i}"}
    return [
        AIMessage(f"step {i}", tool_calls=[call], id=f"a{i}"),
        ToolMessage(output, tool_call_id=f"b{i}", id=f"t{i}"),
    ]


def _record(last: str) -> list[BaseMessage]:
    """Reads, two of one file under both names, then ``last`` and small test runs."""
    body, small = "line of code\n" * 40, "line\n" * 20
    record: list[BaseMessage] = [HumanMessage("Fix the save bug.", id="u0")]
    for i in range(27):
        record += _bash(i, f"cat pkg/m{i}.py", f"# m{i}\n" + body)
    record += _bash(27, "cat /testbed/django/db/base.py", "# base\n" + small)
    record += _bash(28, "cat django/db/base.py", "# base again\n" + small)
    record += _bash(29, "cat django/db/other.py", "# other\n" + small)
    record += _bash(30, last, "")
    for i in range(31, 47):
        record += _bash(i, f"python -m pytest -q -k t{i}", f"{i} passed " + "ok " * 60)
    return record


def _restored(record: list[BaseMessage]) -> dict[str, str]:
    """Each re-attached file's name and head, after the fold of ``record``."""
    out = build_working_transcript(
        record,
        summarizer=ScriptedSummarizer("note"),
        max_tokens=4_000,
        restore_tokens=None,
        clear_tool_results=False,
    )
    assert out.mode == "folded"
    assert request_problems(out.messages) == []
    return {
        str((stamp_of(m) or {}).get("file")): m.text.splitlines()[0]
        for m in out.messages
        if (stamp_of(m) or {}).get("kind") == RESTORED_KIND
    }


def test_a_read_edited_since_under_its_other_name_says_it_was_changed() -> None:
    restored = _restored(_record("cd /testbed && sed -i 's/a/b/' django/db/other.py"))
    assert restored["django/db/other.py"].endswith("was changed after it]"), restored
    assert not restored["django/db/base.py"].endswith("was changed after it]"), restored


def test_the_brief_lists_a_file_named_two_ways_once_by_its_absolute_name() -> None:
    memory = WorkingMemory()
    for path in ["django/db/base.py", "django/db/base.py", "/testbed/django/db/x.py", "a.py"]:
        memory.observe(Observation.read(path))
    memory.observe(Observation.edited("/testbed/django/db/base.py"))
    memory.observe(Observation.read("django/db/x.py"))
    brief = memory.brief(observations=20)
    assert brief is not None
    listed = [line for line in brief.splitlines() if line.startswith("- ")]
    assert listed == ["- /testbed/django/db/base.py", "- /testbed/django/db/x.py (2×)", "- a.py"]
