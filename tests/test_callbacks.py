"""Tool calls -> working-memory observations: the mapper's rules, and the callback handler
driven by real LangChain tools, a LangGraph ToolNode and a `create_agent` agent."""

from __future__ import annotations

import asyncio
import doctest
import importlib
import json
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any
from uuid import uuid4

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_from_dict
from langchain_core.tools import InjectedToolCallId, ToolException, tool
from langgraph.types import Command

from langchain_builderforce_memory.callbacks import (
    ByCommand,
    PathArg,
    ToolObservationMapper,
    WorkingMemoryCallbackHandler,
    observations_from_tool_call,
    parse_tool_input,
)
from langchain_builderforce_memory.testing import ScriptedChatModel
from langchain_builderforce_memory.working import Observation, consolidate

from .helpers import TRANSCRIPTS_DIR, tool_calls_message, tool_node_graph

with warnings.catch_warnings():  # langchain-community announces its sunset on import
    warnings.simplefilter("ignore", DeprecationWarning)
    from langchain_community.agent_toolkits import FileManagementToolkit

R, C, E, D, S = (
    Observation.read,
    Observation.created,
    Observation.edited,
    Observation.deleted,
    (Observation.searched),
)

# ------------------------------------------------------------------------------- tools


@tool
def read_file(file_path: str) -> str:
    """Read a file."""
    return f"contents of {file_path}"


@tool
def edit_file(file_path: str, old_string: str, new_string: str) -> str:
    """Edit a file."""
    return f"Successfully replaced 1 instance(s) of the string in '{file_path}'"


@tool
def write_file(file_path: str, content: str) -> str:
    """Write a file; refuses the protected folder, the way the file tools do: by text."""
    if file_path.startswith("protected/"):
        return f"Error: permission denied: {file_path}"
    return f"Updated file {file_path}"


@tool
def file_delete(file_path: str) -> str:
    """Delete a file; always crashes."""
    raise RuntimeError("disk on fire")


@tool
def move_file(source_path: str, destination_path: str) -> str:
    """Move a file; a missing source is a handled ToolException (an error ToolMessage)."""
    if source_path.startswith("missing/"):
        raise ToolException(f"no such file: {source_path}")
    return "moved"


move_file.handle_tool_error = True


@tool
def grep(pattern: str, path: str = "/") -> str:
    """Search file contents."""
    return "a.py:1: match"


@tool
def edit_reporting_error(
    file_path: str, tool_call_id: Annotated[str, InjectedToolCallId]
) -> ToolMessage:
    """An editor that reports its own failure as an error ToolMessage."""
    return ToolMessage("old_string not found", tool_call_id=tool_call_id, status="error")


@tool
def write_via_command(
    file_path: str, tool_call_id: Annotated[str, InjectedToolCallId]
) -> Command[Any]:
    """A deepagents-style writer answering with a Command; fails on `protected/`."""
    failed = file_path.startswith("protected/")
    message = ToolMessage(
        "Error: exists" if failed else f"Updated file {file_path}",
        tool_call_id=tool_call_id,
        status="error" if failed else "success",
    )
    return Command(update={"messages": [message]})


@tool
async def slow_read(file_path: str) -> str:
    """An async read that yields to the loop between start and end."""
    for _ in range(3):
        await asyncio.sleep(0)
    return "..."


TOOLS = [read_file, edit_file, write_file, file_delete, move_file, grep]
MAPPER = ToolObservationMapper(
    {"edit_reporting_error": "edited", "write_via_command": "created", "slow_read": "read"}
)


def observed(handler: WorkingMemoryCallbackHandler, thread: str | None) -> dict[str, list[str]]:
    """The thread's non-empty lists, sorted: a ToolNode runs parallel calls in any order."""
    snap = handler.memory_for(thread).snapshot
    return {
        k: sorted(v)
        for k, v in snap.items()
        if isinstance(v, list) and v and k not in ("changed", "failing")  # orderings, derived
    }


# ------------------------------------------------------------------------ the mapper


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        # LangChain's file-management toolkit
        ("read_file", {"file_path": "a.py"}, [R("a.py")]),
        ("write_file", {"file_path": "a.py", "text": "x"}, [C("a.py")]),
        ("file_delete", {"file_path": "a.py"}, [D("a.py")]),
        ("copy_file", {"source_path": "a.py", "destination_path": "b.py"}, [R("a.py"), C("b.py")]),
        ("move_file", {"source_path": "a.py", "destination_path": "b.py"}, [D("a.py"), C("b.py")]),
        ("list_directory", {"dir_path": "src"}, [S('list_directory "src"')]),
        ("list_directory", {}, [S('list_directory "."')]),
        ("file_search", {"dir_path": "src", "pattern": "*.py"}, [S('file_search "*.py" in src')]),
        # deepagents
        ("ls", {"path": "/src"}, [S('ls "/src"')]),
        ("read_file", {"file_path": "/src/a.py", "offset": 0, "limit": 100}, [R("/src/a.py")]),
        ("edit_file", {"file_path": "/a.py", "old_string": "x", "new_string": "y"}, [E("/a.py")]),
        ("glob", {"pattern": "**/*.py"}, [S('glob "**/*.py"')]),
        ("grep", {"pattern": "canvas", "path": "/web"}, [S('grep "canvas" in /web')]),
        # Claude Code and the OpenHands editor, as recorded
        ("Read", {"file_path": "/r/a.py"}, [R("/r/a.py")]),
        ("MultiEdit", {"file_path": "/r/a.py", "edits": []}, [E("/r/a.py")]),
        ("Grep", {"pattern": "IsSilent", "path": "./pkg/log"}, [S('Grep "IsSilent" in ./pkg/log')]),
        ("str_replace_editor", {"command": "view", "path": "/w/m.c"}, [R("/w/m.c")]),
        ("str_replace_editor", {"command": "insert", "path": "/w/m.c"}, [E("/w/m.c")]),
        ("str_replace_editor", {"command": "create", "path": "/w/n.c"}, [C("/w/n.c")]),
        ("str_replace_editor", {"command": "bogus", "path": "/w/n.c"}, []),
        # Claude's text editor and memory tools (API names; langchain-anthropic middleware)
        ("str_replace_based_edit_tool", {"command": "view", "path": "/r/a.py"}, [R("/r/a.py")]),
        ("str_replace_based_edit_tool", {"command": "str_replace", "path": "/a.py"}, [E("/a.py")]),
        ("str_replace_based_edit_tool", {"command": "insert", "path": "/a.py"}, [E("/a.py")]),
        ("str_replace_based_edit_tool", {"command": "create", "path": "/b.py"}, [C("/b.py")]),
        ("str_replace_based_edit_tool", {"command": "delete", "path": "/b.py"}, [D("/b.py")]),
        (
            "str_replace_based_edit_tool",
            {"command": "rename", "old_path": "/a.py", "new_path": "/b.py"},
            [D("/a.py"), C("/b.py")],
        ),
        ("memory", {"command": "view", "path": "/memories/plan.md"}, [R("/memories/plan.md")]),
        ("memory", {"command": "create", "path": "/memories/plan.md"}, [C("/memories/plan.md")]),
        # LangChain's FilesystemFileSearchMiddleware
        ("glob_search", {"pattern": "*.py", "path": "/src"}, [S('glob_search "*.py" in /src')]),
        ("grep_search", {"pattern": "TODO", "path": "/src"}, [S('grep_search "TODO" in /src')]),
        # search-like names, unknown tools, odd inputs
        ("search_code", {"query": "canvas"}, [S('search_code "canvas"')]),
        (
            "tavily_search_results_json",
            "langgraph store",
            [S('tavily_search_results_json "langgraph store"')],
        ),
        ("bash", {"command": "rm -rf build/"}, [Observation.deleted("build")]),
        ("bash", {"command": "cat a.py"}, [R("a.py")]),
        ("apply_patch", {"input": "*** Update File: a.py"}, [E("a.py")]),
        # OpenAI's built-in apply_patch: the call block's operation
        ("apply_patch", {"type": "update_file", "path": "a.py", "diff": "@@"}, [E("a.py")]),
        ("apply_patch", {"type": "create_file", "path": "b.py", "diff": "+x"}, [C("b.py")]),
        ("apply_patch", {"type": "delete_file", "path": "b.py"}, [D("b.py")]),
        ("read_file", {"file_path": ["a.py", "b.py", 3]}, [R("a.py"), R("b.py")]),
        ("read_file", {"file_path": "  "}, []),
        ("read_file", "a.py", [R("a.py")]),
        ("read_file", '{"file_path": "a.py"}', [R("a.py")]),
        ("read_file", "{'file_path': 'a.py', 'limit': 5}", [R("a.py")]),
    ],
)
def test_the_default_rules_map_the_tool_names_agents_have(
    name: str, args: dict[str, object] | str, expected: list[Observation]
) -> None:
    assert observations_from_tool_call(name, args) == expected


@pytest.mark.parametrize(
    "output",
    [
        ToolMessage("boom", tool_call_id="1", status="error"),
        "Error: no such file or directory: a.py",
        "  error : denied",
        ToolMessage("Error: denied", tool_call_id="1"),
        "ERROR:\nNo replacement was performed",
        Command(update={"messages": [ToolMessage("x", tool_call_id="1", status="error")]}),
        Command(update=[("messages", ToolMessage("x", tool_call_id="1", status="error"))]),
        [ToolMessage("ok", tool_call_id="1"), ToolMessage("x", tool_call_id="2", status="error")],
    ],
)
def test_an_output_that_says_the_call_failed_maps_to_nothing(output: object) -> None:
    assert MAPPER.failed(output)
    assert MAPPER.map("write_file", {"file_path": "a.py"}, output) == []


@pytest.mark.parametrize(
    "output",
    [
        None,
        "Updated file a.py",
        "error_handler.py:1: def handle()",
        ToolMessage("done", tool_call_id="1"),
        Command(update={"files": {}}),
        Command(update={"messages": [ToolMessage("ok", tool_call_id="1")]}),
    ],
)
def test_an_output_that_does_not_say_it_failed_is_a_success(output: object) -> None:
    assert not MAPPER.failed(output)
    assert MAPPER.map("write_file", {"file_path": "a.py"}, output) == [C("a.py")]


def test_failure_text_can_be_turned_off() -> None:
    assert ToolObservationMapper(failure_text=None).map("read_file", {"file_path": "a"}, "Error: x")


def test_overrides_take_a_kind_a_rule_a_callable_or_none() -> None:
    def opened(name: str, args: object, output: object) -> list[Observation]:
        assert isinstance(args, dict)
        return [R(str(args["target"])), S(f"{name} {output}")]

    mapper = ToolObservationMapper(
        {
            "open": "read",
            "find": "searched",
            "rename": (PathArg("deleted", ("old",)), PathArg("created", ("new",))),
            "editor": ByCommand("op", {"rm": (PathArg("deleted"),)}),
            "peek": opened,
            "one": lambda name, args, output: R("one.py"),
            "nothing": lambda name, args, output: None,
            "read_file": None,
        }
    )
    assert mapper.map("open", {"path": "x.py"}) == [R("x.py")]
    assert mapper.map("find", {"q": "needle"}) == [S('find "needle"')]
    assert mapper.map("rename", {"old": "a", "new": "b"}) == [D("a"), C("b")]
    assert mapper.map("editor", {"op": "rm", "file": "z"}) == [D("z")]
    assert mapper.map("peek", '{"target": "p.py"}', "ok") == [R("p.py"), S("peek ok")]
    assert mapper.map("one", {}) == [R("one.py")]
    assert mapper.map("nothing", {}) == []
    assert mapper.map("read_file", {"file_path": "a.py"}) == []
    assert mapper.map("edit_file", {"file_path": "a.py"}) == [E("a.py")]  # defaults kept
    assert ToolObservationMapper(use_defaults=False).map("edit_file", {"file_path": "a"}) == []


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"open": "opened"}, r"overrides\['open'\] = 'opened' is not an observation kind"),
        ({"open": ()}, r"overrides\['open'\]: a rule is a non-empty tuple"),
        ({"open": ("read",)}, r"overrides\['open'\]: a rule is a non-empty tuple"),
        ({"open": 3}, r"overrides\['open'\] must be a kind, a rule, a callable or None"),
    ],
)
def test_a_bad_override_is_rejected_naming_the_tool(
    overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ToolObservationMapper(overrides)


def test_an_override_returning_junk_raises_naming_the_tool() -> None:
    mapper = ToolObservationMapper({"junk": lambda name, args, output: ["a.py"]})
    with pytest.raises(TypeError, match=r"override for tool 'junk' must return an Observation"):
        mapper.map("junk", {})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"file_path": "a.py"}', {"file_path": "a.py"}),
        ('"a.py"', "a.py"),
        ("{'file_path': 'C:\\\\x\\\\a.py', 'n': 2}", {"file_path": "C:\\x\\a.py"}),
        ("{'q': \"it's\"}", {"q": "it's"}),
        ("  plain text  ", "plain text"),
        ("{not a dict}", "{not a dict}"),
        ("[1, 2]", "[1, 2]"),
    ],
)
def test_parse_tool_input_reads_json_then_a_dict_rendering_never_evaluating(
    raw: str, expected: object
) -> None:
    assert parse_tool_input(raw) == expected


# ------------------------------------------------------------- the handler, by hand


def test_a_call_that_errored_is_forgotten_even_if_an_end_arrives_for_it() -> None:
    handler = WorkingMemoryCallbackHandler()
    run = uuid4()
    handler.on_tool_start({"name": "read_file"}, "a.py", run_id=run, inputs={"file_path": "a.py"})
    handler.on_tool_error(RuntimeError("x"), run_id=run)
    handler.on_tool_end("contents", run_id=run)
    assert handler.memory_for().size == 0


def test_the_input_string_is_used_when_no_inputs_are_given() -> None:
    handler = WorkingMemoryCallbackHandler()
    for i, raw in enumerate(['{"file_path": "a.py"}', "{'file_path': 'b.py'}", "c.py"]):
        run = uuid4()
        handler.on_tool_start({"name": "read_file"}, raw, run_id=run, metadata={"thread_id": i})
        handler.on_tool_end("ok", run_id=run)
    assert [handler.memory_for(str(i)).snapshot["read"] for i in range(3)] == [
        ["a.py"],
        ["b.py"],
        ["c.py"],
    ]


def test_a_custom_thread_key_is_read_from_metadata() -> None:
    handler = WorkingMemoryCallbackHandler(thread_key="session")
    read_file.invoke(
        {"file_path": "a.py"}, config={"callbacks": [handler], "metadata": {"session": "s1"}}
    )
    assert handler.memory_for("s1").snapshot["read"] == ["a.py"]
    assert handler.threads() == ["s1"]
    released = handler.release("s1")
    assert released is not None
    assert released.size == 1
    assert handler.threads() == []


def test_a_blank_thread_key_is_rejected() -> None:
    with pytest.raises(ValueError, match="thread_key must be a non-empty str"):
        WorkingMemoryCallbackHandler(thread_key="")


def test_calls_without_a_thread_go_to_the_default_memory() -> None:
    handler = WorkingMemoryCallbackHandler()
    read_file.invoke({"file_path": "a.py"}, config={"callbacks": [handler]})
    assert handler.memory_for(None).snapshot["read"] == ["a.py"]


# -------------------------------------------------------- the handler, through LangGraph


def _run_all(handler: WorkingMemoryCallbackHandler, thread: str) -> dict[str, Any]:
    graph = tool_node_graph(
        [*TOOLS, edit_reporting_error, write_via_command], handle_tool_errors=True
    )
    message = tool_calls_message(
        ("read_file", {"file_path": "web/a.ts"}),
        ("edit_file", {"file_path": "web/b.ts", "old_string": "x", "new_string": "y"}),
        ("write_file", {"file_path": "web/c.ts", "content": "c"}),
        ("grep", {"pattern": "canvas", "path": "web"}),
        ("write_file", {"file_path": "protected/d.ts", "content": "d"}),  # "Error: ..." text
        ("file_delete", {"file_path": "web/e.ts"}),  # raises
        ("move_file", {"source_path": "missing/f.ts", "destination_path": "web/f.ts"}),
        ("edit_reporting_error", {"file_path": "web/g.ts"}),  # error ToolMessage
        ("write_via_command", {"file_path": "protected/h.ts"}),  # error inside a Command
        ("write_via_command", {"file_path": "web/i.ts"}),
    )
    config = {"configurable": {"thread_id": thread}, "callbacks": [handler]}
    return graph.invoke({"messages": [message]}, config)  # type: ignore[attr-defined,no-any-return]


def test_successful_calls_are_observed_and_failed_ones_are_not() -> None:
    handler = WorkingMemoryCallbackHandler(MAPPER)
    result = _run_all(handler, "t1")
    statuses = Counter(m.status for m in result["messages"] if isinstance(m, ToolMessage))
    assert statuses == {"success": 6, "error": 4}  # the graph really saw the failures
    assert observed(handler, "t1") == {
        "read": ["web/a.ts"],
        "edited": ["web/b.ts"],
        "created": ["web/c.ts", "web/i.ts"],
        "searched": ['grep "canvas" in web'],
    }
    assert handler.memory_for("t1").size == 5
    assert handler.threads() == ["t1"]


def test_langchain_file_management_tools_are_observed_on_a_real_directory(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("print('a')\n")
    tools = FileManagementToolkit(root_dir=str(tmp_path)).get_tools()
    handler = WorkingMemoryCallbackHandler()
    graph = tool_node_graph(tools)
    calls = tool_calls_message(
        ("read_file", {"file_path": "src/a.py"}),
        ("read_file", {"file_path": "src/missing.py"}),  # "Error: no such file" -> nothing
        ("list_directory", {"dir_path": "src"}),
        ("file_search", {"dir_path": ".", "pattern": "*.py"}),
    )
    then = tool_calls_message(
        ("write_file", {"file_path": "src/b.py", "text": "b = 1\n"}),
        ("copy_file", {"source_path": "src/a.py", "destination_path": "src/c.py"}),
        ("file_delete", {"file_path": "src/nope.py"}),  # fails -> nothing
        prefix="w",
    )
    finally_ = tool_calls_message(
        ("move_file", {"source_path": "src/c.py", "destination_path": "src/d.py"}),
        ("file_delete", {"file_path": "src/b.py"}),
        prefix="m",
    )
    config = {"configurable": {"thread_id": "fs"}, "callbacks": [handler]}
    for message in (calls, then, finally_):
        graph.invoke({"messages": [message]}, config)  # type: ignore[attr-defined]
    assert sorted(p.name for p in (tmp_path / "src").iterdir()) == ["a.py", "d.py"]
    assert observed(handler, "fs") == {
        "read": ["src/a.py", "src/a.py"],
        "created": ["src/b.py", "src/c.py", "src/d.py"],
        "deleted": ["src/b.py", "src/c.py"],
        "searched": ['file_search "*.py" in .', 'list_directory "src"'],
    }


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
async def test_an_agent_with_a_scripted_model_feeds_the_memory(mode: str) -> None:
    model = ScriptedChatModel(
        script=[
            tool_calls_message(
                ("read_file", {"file_path": "web/src/App.tsx"}),
                ("grep", {"pattern": "canvas"}),
            ),
            tool_calls_message(
                (
                    "edit_file",
                    {"file_path": "web/src/App.tsx", "old_string": "a", "new_string": "b"},
                ),
                ("write_file", {"file_path": "protected/x.ts", "content": "x"}),
                ("move_file", {"source_path": "missing/a.ts", "destination_path": "web/a.ts"}),
                prefix="second",
            ),
            "done",
        ]
    )
    agent = create_agent(model, TOOLS)
    handler = WorkingMemoryCallbackHandler()
    config: Any = {"configurable": {"thread_id": mode}, "callbacks": [handler]}
    state = {"messages": [HumanMessage("move the canvas")]}
    result = agent.invoke(state, config) if mode == "invoke" else await agent.ainvoke(state, config)
    assert result["messages"][-1].content == "done"
    assert observed(handler, mode) == {
        "read": ["web/src/App.tsx"],
        "edited": ["web/src/App.tsx"],
        "searched": ['grep "canvas"'],
    }


# --------------------------------------------------------------------- isolation


def _reads_for(thread: str, n: int) -> dict[str, Any]:
    return {
        "messages": [
            tool_calls_message(
                *[("slow_read", {"file_path": f"{thread}/{i}.py"}) for i in range(n)]
            )
        ]
    }


async def test_concurrent_asyncio_threads_never_see_each_others_observations() -> None:
    handler = WorkingMemoryCallbackHandler(MAPPER)
    graph: Any = tool_node_graph([slow_read])
    threads = [f"t{i}" for i in range(4)]
    await asyncio.gather(
        *(
            graph.ainvoke(
                _reads_for(t, 6), {"configurable": {"thread_id": t}, "callbacks": [handler]}
            )
            for t in threads
            for _ in range(3)
        )
    )
    for t in threads:
        reads = handler.memory_for(t).snapshot["read"]
        assert Counter(reads) == {f"{t}/{i}.py": 3 for i in range(6)}
    assert sorted(handler.threads(), key=str) == threads


def test_concurrent_os_threads_never_see_each_others_observations() -> None:
    handler = WorkingMemoryCallbackHandler()
    graph: Any = tool_node_graph([read_file])
    threads = [f"t{i}" for i in range(4)]

    def run(thread: str) -> None:
        message = tool_calls_message(
            *[("read_file", {"file_path": f"{thread}/{i}.py"}) for i in range(6)]
        )
        graph.invoke(
            {"messages": [message]}, {"configurable": {"thread_id": thread}, "callbacks": [handler]}
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(run, threads * 5))
    for t in threads:
        assert Counter(handler.memory_for(t).snapshot["read"]) == {
            f"{t}/{i}.py": 5 for i in range(6)
        }
        assert handler.memory_for(t).size == 30


# ------------------------------------------------------------ recorded agent runs


def _replay(name: str) -> tuple[Any, Counter[str]]:
    path = TRANSCRIPTS_DIR / name
    if not path.is_file():
        pytest.skip(f"recorded transcript {name} not available")
    messages = messages_from_dict(json.loads(path.read_text(encoding="utf-8")))
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    handler = WorkingMemoryCallbackHandler()
    kinds: Counter[str] = Counter()
    for m in messages:
        for call in m.tool_calls if isinstance(m, AIMessage) else []:
            run = uuid4()
            handler.on_tool_start({"name": call["name"]}, "", run_id=run, inputs=call["args"])
            handler.on_tool_end(results.get(call["id"]), run_id=run)
            kinds[str(call["args"].get("command", call["name"]))] += 1
    return handler.memory_for(None), kinds


def test_a_recorded_openhands_run_keeps_only_the_edits_that_happened() -> None:
    # The editor reports "ERROR: No replacement was performed" with a success status:
    # 12 of its 13 str_replace calls failed. Recording them would claim 12 edits.
    memory, kinds = _replay("openhands_llama4-maverick_ponyc-4588.json")
    assert kinds["str_replace"] == 13
    snap = memory.snapshot
    # ... and one `sed -i` through execute_bash.
    assert len(snap["edited"]) == 1 + kinds["insert"] + 1
    assert len(snap["read"]) == kinds["view"]
    c = consolidate(memory, root="/workspace/ponylang__ponyc__0.1", min_files=1)
    assert c is not None
    assert c.key == "codemap:src/libponyc/expr"


def test_a_recorded_claude_code_run_maps_reads_edits_and_globs() -> None:
    memory, _ = _replay("claudecode_opus-4-5_coverage-test-fix.json")
    snap = memory.snapshot
    assert "/tmp/tmpw6sk2trg/src/math_utils.py" in snap["read"]
    assert "/tmp/tmpw6sk2trg/src/math_utils.py" in snap["edited"]
    globs = [s for s in snap["searched"] if s.startswith("Glob")]
    assert globs == ['Glob "**/*.py"', 'Glob ".gitignore"']
    assert "git status" in snap["searched"]  # through Bash


def test_docstring_examples_run() -> None:
    module = importlib.import_module("langchain_builderforce_memory.callbacks")
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0


def test_the_handler_takes_a_cut_glob_from_the_paths_an_earlier_call_listed() -> None:
    handler = WorkingMemoryCallbackHandler()
    calls = [
        ("rg --files docs", "docs/sys/a.md\ndocs/sys/b.md\n"),
        ('for f in docs/sys/*.md; do cat "$f"; done', "# A\n... (truncated)"),
    ]
    for command, output in calls:
        run = uuid4()
        handler.on_tool_start({"name": "bash"}, command, run_id=run, inputs={"command": command})
        handler.on_tool_end(output, run_id=run)
    assert handler.memory_for().snapshot["read"] == ["docs/sys/a.md", "docs/sys/b.md"]
