"""search_history and compact_context in real agents: create_agent, a StateGraph, a resume.

A 300-call scripted run: at call 10 a tool returns the only copy of an error line; by call
250 it has long been folded out of the view, and the model searches for it; at call 260
it asks for a compaction focused on "the parser".
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langchain_builderforce_memory.agents.core import EVENT_KEY
from langchain_builderforce_memory.agents.node import WorkingTranscriptNode, WorkingTranscriptState
from langchain_builderforce_memory.agents.toolstate import COMPACT_KEY, VIEW_KEY
from langchain_builderforce_memory.messages import is_stamped
from langchain_builderforce_memory.testing import ScriptedChatModel
from langchain_builderforce_memory.tokens import ApproximateTokenCounter
from langchain_builderforce_memory.transcript.plan import MEMORY_NOTE_KIND
from langchain_builderforce_memory.validity import request_problems

from .helpers import STREAMED_MODES, run_directives

NEEDLE = "E7731: unexpected token '}' in src/parser.py at line 120"
CALLS, SEARCH_AT, COMPACT_AT, FOCUS = 300, 250, 260, "the parser"
OPTIONS: dict[str, Any] = {"max_tokens": 24_000, "tail_tokens": 10_000, "agent_tools": True}
FOCUS_LINE = f"keep above all: {FOCUS}"


def read_file(path: str) -> str:
    """Read a file of the repository."""
    body = "\n".join(f"{n:4d}  def step_{n}(x): return x + {n}  # {path}" for n in range(90))
    return f"{body}\n{NEEDLE}" if path == "logs/build-10.txt" else body


def step(i: int) -> AIMessage:
    """The model's answer at call ``i`` (1-based)."""
    if i == SEARCH_AT:
        call = {"name": "search_history", "args": {"query": "E7731"}, "id": f"call{i}"}
    elif i == COMPACT_AT:
        call = {"name": "compact_context", "args": {"focus": FOCUS}, "id": f"call{i}"}
    elif i >= CALLS:
        return AIMessage("done")
    else:
        path = "logs/build-10.txt" if i == 10 else f"src/f{i}.py"
        call = {"name": "read_file", "args": {"path": path}, "id": f"call{i}"}
    return AIMessage(f"step {i}", tool_calls=[call])


class NoteWriter:
    """The summarizer: records each prompt and how many model calls had been made."""

    def __init__(self, model: ScriptedChatModel) -> None:
        self.model = model
        self.calls: list[tuple[int, str]] = []

    def __call__(self, prompt: list[BaseMessage]) -> str:
        self.calls.append((len(self.model.requests), prompt[0].text))
        return f"note {len(self.calls)}: read many files while fixing the parser"


def _graph(model: ScriptedChatModel, node: WorkingTranscriptNode) -> Any:
    tools = [StructuredTool.from_function(read_file), *node.memory_tools]
    bound = model.bind_tools(tools)

    def call_model(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["llm_input_messages"])]}

    async def acall_model(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["llm_input_messages"])]}

    builder = StateGraph(WorkingTranscriptState)
    builder.add_node("memory", node)
    builder.add_node("model", RunnableLambda(call_model, afunc=acall_model))
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "memory")
    builder.add_edge("memory", "model")
    builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "memory")
    return builder.compile(checkpointer=InMemorySaver())


def _agent(kind: str, model: ScriptedChatModel, notes: NoteWriter) -> Any:
    if kind == "graph":
        return _graph(model, WorkingTranscriptNode(notes, **OPTIONS))
    from langchain.agents import create_agent

    from langchain_builderforce_memory.agents.middleware import BuilderforceMemoryMiddleware

    middleware = BuilderforceMemoryMiddleware(notes, **OPTIONS)
    assert [t.name for t in middleware.tools] == ["search_history", "compact_context"]
    return create_agent(
        model,
        [StructuredTool.from_function(read_file)],
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )


def _note(request: list[BaseMessage]) -> str:
    (note,) = [m.text for m in request if is_stamped(m, MEMORY_NOTE_KIND)]
    return note


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["create_agent", "graph"])
@pytest.mark.parametrize("mode", STREAMED_MODES)
def test_300_calls_search_then_compact(kind: str, mode: str) -> None:
    model = ScriptedChatModel(script=[step(i) for i in range(1, CALLS + 1)])
    notes = NoteWriter(model)
    agent = _agent(kind, model, notes)
    events = run_directives(agent, ["fix the parser"], mode=mode)
    requests = model.requests
    assert len(requests) == CALLS
    assert all(request_problems(r) == [] for r in requests)
    record = agent.get_state({"configurable": {"thread_id": "thread-1"}}).values["messages"]
    # Call 250 no longer sees the call-10 output: it was folded out long ago.
    assert not any(NEEDLE in m.text for m in requests[SEARCH_AT - 1])
    (found,) = [m for m in record if isinstance(m, ToolMessage) and m.tool_call_id == "call250"]
    assert NEEDLE in found.text
    assert found.text.startswith("Found 1 messages matching 'E7731' among the ")
    assert 'read_file({"path": "logs/build-10.txt"})' in found.text
    assert ApproximateTokenCounter().count_text(found.text) <= 4_000
    # ... and the search itself called no summarizer: every call was a fold's.
    folds = [e for e in events if e.get(EVENT_KEY) == "fold"]
    assert sum(int(e["summarizer_calls"]) for e in folds) == len(notes.calls)
    # Call 260 asks for a compaction: call 261 carries a new note, made for the request.
    (requested,) = [e for e in folds if e["reason"] == "requested"]
    assert _note(requests[COMPACT_AT]) != _note(requests[COMPACT_AT - 1])
    focused = [n for n, prompt in notes.calls if FOCUS_LINE in prompt]
    assert focused == [COMPACT_AT]  # the fold right before call 261
    assert f"the first {requested['covered_end']} message(s)" in _note(requests[COMPACT_AT])
    held = agent.get_state({"configurable": {"thread_id": "thread-1"}}).values[COMPACT_KEY]
    assert (held["pending"], held["focus"]) == (False, FOCUS)


def test_search_skips_what_the_view_shows_and_compact_is_rate_limited() -> None:
    script = [
        AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "a"}, "id": "r1"}]),
        AIMessage(
            "", tool_calls=[{"name": "search_history", "args": {"query": "step_3"}, "id": "s1"}]
        ),
        AIMessage("", tool_calls=[{"name": "compact_context", "args": {}, "id": "k1"}]),
        AIMessage("", tool_calls=[{"name": "compact_context", "args": {"focus": "x"}, "id": "k2"}]),
        "done",
    ]
    model = ScriptedChatModel(script=script)
    node = WorkingTranscriptNode(NoteWriter(model), **OPTIONS)
    agent = _graph(model, node)
    run_directives(agent, ["go"])
    state = agent.get_state({"configurable": {"thread_id": "thread-1"}}).values
    answers = {m.tool_call_id: m.text for m in state["messages"] if isinstance(m, ToolMessage)}
    # The read is in the view: searching it finds nothing outside the view.
    assert answers["s1"].startswith("No messages matching 'step_3' among the ")
    assert answers["k1"].startswith("Compaction requested")
    assert answers["k2"].startswith("Not compacted: the last compaction was asked ")
    assert state[VIEW_KEY]["end"] == len(state["messages"]) - 1


@pytest.mark.parametrize(
    ("args", "answer"),
    [
        ({"query": ""}, "search_history needs `query`: a non-empty string"),
        ({"query": 42}, "search_history needs `query`: a non-empty string"),
        ({"query": ["a"]}, "search_history needs `query`: a non-empty string"),
        ({"query": "go", "limit": "many"}, "limit must be a whole number from 1 to 50"),
        ({"query": "go", "limit": 10**9}, "No messages matching 'go' among the 0 not"),
        # JSON's 1e400 parses to infinity, which int() refuses with an OverflowError.
        ({"query": "go", "limit": float("inf")}, "limit must be a whole number from 1 to 50"),
        ({}, "Error invoking tool 'search_history'"),
    ],
)
def test_bad_search_input_gets_a_plain_answer(args: dict[str, Any], answer: str) -> None:
    model = ScriptedChatModel(
        script=[
            AIMessage("", tool_calls=[{"name": "search_history", "args": args, "id": "s"}]),
            "ok",
        ]
    )
    agent = _graph(model, WorkingTranscriptNode(None, agent_tools=True))
    run_directives(agent, ["go"])
    last_tool = [m for m in model.requests[-1] if isinstance(m, ToolMessage)][-1]
    assert last_tool.text.startswith(answer)
    assert len(last_tool.text) < 300


@pytest.mark.parametrize(
    ("focus", "answer"),
    [(7, "compact_context takes `focus` as a string"), ("x", "Not compacted: this agent has no")],
)
def test_bad_compact_input_gets_a_plain_answer(focus: object, answer: str) -> None:
    call = {"name": "compact_context", "args": {"focus": focus}, "id": "k"}
    model = ScriptedChatModel(script=[AIMessage("", tool_calls=[call]), "ok"])
    run_directives(_graph(model, WorkingTranscriptNode(None, agent_tools=True)), ["go"])
    assert [m for m in model.requests[-1] if isinstance(m, ToolMessage)][-1].text.startswith(answer)


def test_tools_are_off_by_default() -> None:
    assert WorkingTranscriptNode().memory_tools == []
    from langchain_builderforce_memory.agents.middleware import BuilderforceMemoryMiddleware

    assert BuilderforceMemoryMiddleware().tools == []


_RESUME = textwrap.dedent(
    """
    import json, sys
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import StructuredTool
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langchain_builderforce_memory.agents.middleware import BuilderforceMemoryMiddleware
    from langchain_builderforce_memory.testing import ScriptedChatModel
    from tests.test_agent_tools import OPTIONS, FOCUS, NoteWriter, read_file, step

    phase, db = sys.argv[1], sys.argv[2]
    if phase == "first":
        script = [step(i) for i in range(1, 60)] + [AIMessage("paused")]
    else:
        script = [
            AIMessage("", tool_calls=[{"name": "search_history", "args": {"query": "E7731"},
                                       "id": "s1"}]),
            AIMessage("", tool_calls=[{"name": "compact_context", "args": {"focus": FOCUS},
                                       "id": "k1"}]),
            AIMessage("done"),
        ]
    model = ScriptedChatModel(script=script)
    notes = NoteWriter(model)
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 1000}
    with SqliteSaver.from_conn_string(db) as saver:
        agent = create_agent(model, [StructuredTool.from_function(read_file)],
                             middleware=[BuilderforceMemoryMiddleware(notes, **OPTIONS)],
                             checkpointer=saver)
        events = list(agent.stream({"messages": [HumanMessage("go on")]}, config,
                                   stream_mode="custom"))
        record = agent.get_state(config).values["messages"]
    answers = {m.tool_call_id: m.text for m in record if isinstance(m, ToolMessage)}
    print(json.dumps({"answers": answers, "events": events, "prompts": [p for _, p in notes.calls],
                      "needle_in_last_view": any("E7731" in m.text for m in model.requests[0])}))
    """
)


@pytest.mark.slow
def test_tools_work_after_a_resume_in_a_new_process(tmp_path: Path) -> None:
    db = str(tmp_path / "checkpoints.sqlite")
    root = Path(__file__).resolve().parents[1]
    runs = [
        subprocess.run(
            [sys.executable, "-c", _RESUME, phase, db],
            capture_output=True,
            text=True,
            check=True,
            cwd=root,
            timeout=600,
        )
        for phase in ("first", "second")
    ]
    second = json.loads(runs[1].stdout.strip().splitlines()[-1])
    assert not second["needle_in_last_view"]
    assert NEEDLE in second["answers"]["s1"]
    assert second["answers"]["k1"].startswith("Compaction requested")
    assert any(e.get("reason") == "requested" for e in second["events"])
    assert any(FOCUS_LINE in p for p in second["prompts"])


def test_the_demo_with_agent_tools_searches_once_and_compacts_once() -> None:
    import io

    from langchain_builderforce_memory.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code = main(
        [
            "demo",
            "--turns",
            "60",
            "--directives",
            "2",
            "--budget",
            "8000",
            "--agent-tools",
            "--no-progress",
        ],
        stdout=out,
        stderr=err,
    )
    assert code == 0, err.getvalue()
    text = " ".join(re.sub(r"[│┃┌┐└┘─├┤┬┴┼╭╮╰╯]", " ", out.getvalue()).split())
    assert "search_history at call 37: Found " in text
    assert "compact_context at call 40: Compaction requested" in text
    assert "folds the model asked for 1 (reason='requested')" in text
