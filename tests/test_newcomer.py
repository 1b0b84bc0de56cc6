"""Issue 26: what a newcomer trips over off the happy path gets a working call or an error
that names the fix, never a raw exception from inside a dependency."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from langchain_builderforce_memory import (
    BuilderforceMemoryMiddleware,
    CodeMapStore,
    CompactingChatMessageHistory,
    TiktokenCounter,
    WorkingTranscriptKeys,
    WorkingTranscriptNode,
    WorkingTranscriptState,
    abuild_working_transcript,
    apack_handoff,
    build_working_transcript,
    consolidation_marker,
    pack_handoff,
    volatile_tail,
    windowed,
)
from langchain_builderforce_memory.testing import assert_valid_request

# ---------------------------------------------------------------- tuples and dicts

TUPLES: list[Any] = [
    ("system", "be brief"),
    ("user", "fix the bug"),
    ("ai", "on it"),
    ("user", "go"),
]
DICTS: list[Any] = [
    {"role": "user", "content": "fix the bug"},
    {"role": "assistant", "content": "on it"},
    {"role": "user", "content": "go"},
]
MIXED: list[Any] = [HumanMessage("fix the bug"), AIMessage("on it"), ("user", "go")]


def _view_of(entry: str, given: list[Any]) -> Sequence[BaseMessage]:
    if entry == "windowed":
        return windowed(given, max_tokens=4_000)
    if entry == "build_working_transcript":
        return build_working_transcript(given, max_tokens=4_000).messages
    if entry == "abuild_working_transcript":
        return asyncio.run(abuild_working_transcript(given, max_tokens=4_000)).messages
    if entry == "pack_handoff":
        packed = pack_handoff(given, target_context_tokens=8_000, reserve_output_tokens=1_000)
        return packed.messages
    if entry == "apack_handoff":
        packed = apack_handoff(given, target_context_tokens=8_000, reserve_output_tokens=1_000)
        return asyncio.run(packed).messages
    if entry == "node.invoke":
        return WorkingTranscriptNode(max_tokens=4_000).invoke({"messages": given})[
            "llm_input_messages"
        ]
    if entry == "node.ainvoke":
        out = asyncio.run(WorkingTranscriptNode(max_tokens=4_000).ainvoke({"messages": given}))
        return out["llm_input_messages"]
    history = CompactingChatMessageHistory(max_tokens=4_000)
    if entry == "history.add_messages":
        history.add_messages(given)
    else:
        asyncio.run(history.aadd_messages(given))
    return history.messages


ENTRY_POINTS = [
    "windowed",
    "build_working_transcript",
    "abuild_working_transcript",
    "pack_handoff",
    "apack_handoff",
    "node.invoke",
    "node.ainvoke",
    "history.add_messages",
    "history.aadd_messages",
]


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("given", [TUPLES, DICTS, MIXED], ids=["tuples", "dicts", "mixed"])
def test_every_entry_point_takes_what_convert_to_messages_takes(
    entry: str, given: list[Any]
) -> None:
    view = _view_of(entry, given)
    assert all(isinstance(m, BaseMessage) for m in view)
    assert any(m.text == "go" for m in view)
    assert_valid_request(view)


@pytest.mark.parametrize("entry", ["windowed", "build_working_transcript", "pack_handoff"])
def test_a_bare_string_is_refused_naming_the_entry_point(entry: str) -> None:
    with pytest.raises(TypeError, match=f"{entry}: messages must be a list of messages"):
        _view_of(entry, "fix the bug")  # type: ignore[arg-type]


def test_an_unreadable_element_is_refused_naming_the_accepted_shapes() -> None:
    with pytest.raises(ValueError, match=r"(?s)windowed: a message could not be read.*tuples"):
        windowed([("user", "hi"), {"nonsense": 1}], max_tokens=4_000)


# ---------------------------------------------------------------- the node on MessagesState


class MixedState(MessagesState, WorkingTranscriptKeys):
    pass


def _tool_loop_graph(schema: type[Any], sent: list[int] | None = None, rounds: int = 2) -> Any:
    """The pre-model node, then a model node that sends the view when the state has one and
    falls back to the record otherwise (the silent failure the issue measured); ``sent``
    gets each request's length."""
    sent = [] if sent is None else sent

    def model(state: dict[str, Any]) -> dict[str, Any]:
        request = state.get("llm_input_messages") or state["messages"]
        sent.append(len(request))
        n = sum(isinstance(m, ToolMessage) for m in state["messages"])
        if n >= rounds:
            return {"messages": [AIMessage("done")]}
        call = f"call-{len(state['messages'])}"
        return {
            "messages": [
                AIMessage("", tool_calls=[{"name": "read", "args": {"path": "a.py"}, "id": call}]),
                ToolMessage("x = 1\n" * 50, tool_call_id=call),
            ]
        }

    graph = StateGraph(schema)
    graph.add_node("memory", WorkingTranscriptNode(max_tokens=8_000))
    graph.add_node("model", model)
    graph.add_edge(START, "memory")
    graph.add_edge("memory", "model")
    graph.add_conditional_edges(
        "model", lambda s: END if s["messages"][-1].text == "done" else "memory"
    )
    return graph


@pytest.mark.parametrize("checkpointer", [None, InMemorySaver], ids=["stateless", "saver"])
@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_the_node_on_messages_state_fails_naming_the_fix(
    mode: str, checkpointer: Callable[[], Any] | None
) -> None:
    sent: list[int] = []
    app = _tool_loop_graph(MessagesState, sent).compile(
        checkpointer=checkpointer() if checkpointer else None
    )
    config = {"configurable": {"thread_id": "t"}}
    given = {"messages": [HumanMessage("fix it")]}
    run = app.invoke if mode == "invoke" else lambda *a: asyncio.run(app.ainvoke(*a))
    with pytest.raises(ValueError, match=r"WorkingTranscriptState.*WorkingTranscriptKeys"):
        run(given, config)
    assert sent == []  # on its first call: the model was never sent the record


@pytest.mark.parametrize("schema", [WorkingTranscriptState, MixedState])
@pytest.mark.parametrize("checkpointer", [None, InMemorySaver], ids=["stateless", "saver"])
def test_the_node_on_its_own_keys_runs_and_a_grown_record_is_no_false_alarm(
    schema: type[Any], checkpointer: Callable[[], Any] | None
) -> None:
    app = _tool_loop_graph(schema).compile(checkpointer=checkpointer() if checkpointer else None)
    config = {"configurable": {"thread_id": "t"}}
    first = app.invoke({"messages": [HumanMessage("fix it")]}, config)
    # A chat app without a checkpointer sends the grown record back on its next run.
    again = [*first["messages"], HumanMessage("now the tests")] if not checkpointer else []
    final = app.invoke({"messages": again or [HumanMessage("now the tests")]}, config)
    assert final["messages"][-1].text == "done"


# ---------------------------------------------------------------- a summarizer string, no key


def test_a_model_string_without_its_key_names_the_option_and_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("langchain_openai")
    for variable in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ValueError, match=r"summarizer='openai:gpt-4o-mini'.*OPENAI_API_KEY"):
        BuilderforceMemoryMiddleware(summarizer="openai:gpt-4o-mini")


# ---------------------------------------------------------------- async over a sync store


@pytest.mark.parametrize("connection", ["string", "engine"])
def test_async_calls_over_a_sync_sql_history_run_it_in_a_thread(
    tmp_path: Path, connection: str
) -> None:
    sql = pytest.importorskip("langchain_community.chat_message_histories")
    sqlalchemy = pytest.importorskip("sqlalchemy")
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    engine = sqlalchemy.create_engine(url)
    store = sql.SQLChatMessageHistory(
        session_id="s", connection=url if connection == "string" else engine
    )
    history = CompactingChatMessageHistory(store, max_tokens=4_000)

    async def run() -> tuple[list[BaseMessage], list[BaseMessage]]:
        await history.aadd_messages([HumanMessage("hi"), AIMessage("hello")])
        seen = await history.aget_messages()
        await history.aclear()
        return seen, await history.aget_messages()

    seen, cleared = asyncio.run(run())
    engine.dispose()
    assert [m.text for m in seen] == ["hi", "hello"]
    assert cleared == []


# ---------------------------------------------------------------- the test suite itself


def test_a_missing_transcripts_folder_is_a_skip_that_says_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tests import helpers

    monkeypatch.setattr(helpers, "TRANSCRIPTS_DIR", tmp_path / "shared" / "transcripts")
    (param,) = helpers.transcript_params()
    (mark,) = param.marks
    assert mark.name == "skip"
    assert "shared/transcripts" in mark.kwargs["reason"]
    assert "empty parameter set" not in mark.kwargs["reason"]


@pytest.mark.slow  # two pytest subprocesses
@pytest.mark.parametrize("leaves", [True, False])
def test_a_run_that_leaves_a_temp_file_behind_fails(tmp_path: Path, leaves: bool) -> None:
    import shutil
    import subprocess
    import sys

    suite = tmp_path / "suite"
    (suite / "tests").mkdir(parents=True)
    shutil.copy(Path(__file__).with_name("conftest.py"), suite / "tests" / "conftest.py")
    body = "pathlib.Path(tempfile.mkdtemp(), 'left.db').write_text('x')" if leaves else "pass"
    (suite / "tests" / "test_leaves.py").write_text(
        f"import pathlib, tempfile\n\n\ndef test_it():\n    {body}\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=suite,
        capture_output=True,
        text=True,
        check=False,
        env={
            **{k: v for k, v in os.environ.items() if k != "BFMEM_REQUIRE_POSTGRES"},
            "TMPDIR": str(tmp_path),  # what the inner run keeps stays in this test's folder
        },
    )
    assert ("left files behind" in run.stdout) is leaves, run.stdout
    assert run.returncode == (1 if leaves else 0), run.stdout


# ---------------------------------------------------------------- the history's store calls


class CountingHistory(InMemoryChatMessageHistory):
    """An in-memory store that counts whole-record reads and writes."""

    reads: int = 0
    writes: int = 0

    def __getattribute__(self, name: str) -> Any:
        if name == "messages":
            object.__setattr__(self, "reads", object.__getattribute__(self, "reads") + 1)
        return super().__getattribute__(name)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        object.__setattr__(self, "writes", self.writes + 1)
        reads = self.reads
        super().add_messages(messages)  # it extends self.messages: not a read of ours
        object.__setattr__(self, "reads", reads)

    async def aget_messages(self) -> list[BaseMessage]:
        return list(self.messages)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        self.add_messages(messages)


def _chat_turn(i: int) -> BaseMessage:
    return (HumanMessage if i % 2 == 0 else AIMessage)(f"turn {i}: " + "words " * 200)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_chat_turn_costs_one_store_write_and_one_store_read(mode: str) -> None:
    store = CountingHistory()
    history = CompactingChatMessageHistory(
        store, summarizer=lambda prompt: "the note", max_tokens=4_000
    )
    turns = 60

    async def run() -> None:
        for i in range(turns):
            await history.aadd_messages([_chat_turn(i)])
            await history.aget_messages()

    if mode == "async":
        asyncio.run(run())
    else:
        for i in range(turns):
            history.add_messages([_chat_turn(i)])
            _ = history.messages
    reads = store.reads
    markers = sum(1 for m in store.messages if m.additional_kwargs.get("builderforce_memory"))
    assert markers >= 2  # it folded on the way
    # One write per add, plus the markers; one read per read, plus the first add's (the
    # wrapper has not read the store yet) and the first marker's check that the store
    # keeps its stamp.
    assert store.writes == turns + markers
    assert reads <= turns + 2


def test_a_write_behind_the_wrappers_back_is_seen_on_the_next_read() -> None:
    store = CountingHistory()
    history = CompactingChatMessageHistory(store, summarizer=lambda prompt: "the note")
    history.add_messages([HumanMessage("mine")])
    _ = history.messages
    store.add_messages([AIMessage("another writer's")])
    history.add_messages([HumanMessage("mine again")])
    assert [m.text for m in history.messages] == ["mine", "another writer's", "mine again"]


# ---------------------------------------------------------------- a share of the window


@pytest.mark.parametrize("share", [0.5, ("fraction", 0.5)])
def test_the_history_takes_a_share_of_its_models_window(share: Any) -> None:
    from langchain_core.language_models import FakeListChatModel

    model = FakeListChatModel(
        responses=["ok"], profile={"max_input_tokens": 100_000, "max_output_tokens": 8_000}
    )
    history = CompactingChatMessageHistory(max_tokens=share, model=model)
    assert history.policy.max_tokens == 50_000 - 8_000  # half the window, less the reply


@pytest.mark.parametrize(
    ("model", "match"),
    [(None, "CompactingChatMessageHistory feeds as model="), ("profile-less", "profile")],
)
def test_a_share_without_a_model_window_names_the_fix(model: Any, match: str) -> None:
    from langchain_core.language_models import FakeListChatModel

    given = FakeListChatModel(responses=["ok"]) if model else None
    with pytest.raises(ValueError, match=match):
        CompactingChatMessageHistory(max_tokens=0.5, model=given)


# ---------------------------------------------------------------- a wrong kind of argument


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: TiktokenCounter(encoding=None), TypeError, r"encoding must be a name"),
        (lambda: build_working_transcript(TUPLES, system_prompt=5), TypeError, r"system_prompt"),
        (lambda: WorkingTranscriptNode(tools=5), TypeError, r"tools must be a list of tools"),
        (lambda: volatile_tail(["brief", 3]), TypeError, r"each section must be a str"),
        (lambda: consolidation_marker(None), TypeError, r"summary must be the note's text"),
        (lambda: BuilderforceMemoryMiddleware(max_messages={}), ValueError, r"max_messages"),
        (lambda: CodeMapStore(namespace=7), ValueError, r"namespace must name at least one"),
    ],
    ids=["encoding", "system-prompt", "node-tools", "section", "marker", "ceiling", "namespace"],
)
def test_a_wrong_kind_of_argument_is_refused_naming_it(
    call: Callable[[], object], error: type[Exception], match: str
) -> None:
    # Each raised AttributeError, "object is not iterable" or "unhashable type" before.
    with pytest.raises(error, match=match):
        call()
