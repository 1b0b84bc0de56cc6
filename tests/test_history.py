"""CompactingChatMessageHistory: folding, durability, failure, concurrency, and
``RunnableWithMessageHistory`` end to end (the store-independent contract is in
``test_history_contract.py``)."""

from __future__ import annotations

import asyncio
import logging
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_builderforce_memory.history import CompactingChatMessageHistory
from langchain_builderforce_memory.messages import is_stamped, message_id
from langchain_builderforce_memory.testing import ScriptedChatModel
from langchain_builderforce_memory.tokens import count_tokens
from langchain_builderforce_memory.transcript.markers import (
    ConsolidationMarkerMeta,
    consolidation_marker_of,
    is_consolidation_marker,
)
from langchain_builderforce_memory.transcript.stored import scoped_record, with_ids
from langchain_builderforce_memory.transcript.window import windowed
from langchain_builderforce_memory.validity import request_problems

from .helpers import IdDroppingHistory, RacyHistory, ScriptedSummarizer, examples

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*InMemoryChatMessageHistory.*:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:.*RunnableWithMessageHistory.*:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:.*langchain-community.*:DeprecationWarning"),
]

MAX_TOKENS = 8_000
TAIL_TOKENS = 4_000


def exchange(i: int, size: int = 2_000) -> list[BaseMessage]:
    return [HumanMessage(f"question {i}"), AIMessage(f"answer {i} " + "y" * size)]


def small_history(backing: object = None, **kwargs: object) -> CompactingChatMessageHistory:
    # The fold's mechanics: the clear tier is off unless a test turns it on.
    options: dict[str, object] = {
        "max_tokens": MAX_TOKENS,
        "tail_tokens": TAIL_TOKENS,
        "clear_tool_results": False,
    }
    options.update(kwargs)
    return CompactingChatMessageHistory(backing, **options)  # type: ignore[arg-type]


def markers_of(record: list[BaseMessage]) -> list[BaseMessage]:
    return [m for m in record if is_consolidation_marker(m)]


def conversation_of(record: list[BaseMessage]) -> list[BaseMessage]:
    return [m for m in record if not is_consolidation_marker(m)]


# --- folding ------------------------------------------------------------------------------


def test_a_fold_appends_an_auto_marker_and_rewrites_nothing_stored() -> None:
    h = small_history(summarizer=ScriptedSummarizer("the note"))
    before: list[BaseMessage] = []
    i = 0
    while not markers_of(h.full_messages):
        before = h.full_messages
        h.add_messages(exchange(i))
        i += 1
    after = h.full_messages
    assert after[: len(before)] == before  # nothing stored was deleted or rewritten
    assert [m.content for m in after[len(before) : -1]] == [m.content for m in exchange(i - 1)]
    meta = consolidation_marker_of(after[-1])
    assert meta is not None
    assert meta.auto
    assert meta.keep_from_id in {message_id(m) for m in after[:-1]}
    assert meta.folded == [message_id(m) for m in after].index(meta.keep_from_id)
    assert "the note" in str(after[-1].content)


def summarized(summarizer: ScriptedSummarizer) -> str:
    """Everything the summarizer was ever shown (the rendered transcripts)."""
    return "\n".join(str(prompt[1].content) for prompt in summarizer.calls)


def test_the_view_after_a_fold_is_the_note_then_every_message_it_does_not_cover() -> None:
    summarizer = ScriptedSummarizer("the note")
    h = small_history(summarizer=summarizer)
    for i in range(40):
        h.add_messages(exchange(i))
    record = h.full_messages
    last = max(i for i, m in enumerate(record) if is_consolidation_marker(m))
    meta = consolidation_marker_of(record[last])
    assert meta is not None
    keep = [message_id(m) for m in record].index(str(meta.keep_from_id))
    view = h.messages
    assert view[0].type == "human"
    assert is_stamped(view[0], "memory_note")  # the marker's note, as the middleware shows it
    assert view[0].content == record[last].content
    kept = conversation_of(record[keep:])
    assert [m.id for m in view[1:]] == [m.id for m in kept]
    # Coverage: what is not kept was summarized; nothing is in neither.
    shown = summarized(summarizer)
    assert all(f"{m.content}\n" in f"{shown}\n" for m in conversation_of(record[:keep]))


def test_reading_never_calls_the_summarizer() -> None:
    backing = InMemoryChatMessageHistory()
    for i in range(40):
        backing.add_messages(exchange(i))  # a long history written before the wrapper
    summarizer = ScriptedSummarizer("note")
    h = small_history(backing, summarizer=summarizer)
    view = h.messages
    assert summarizer.calls == []
    assert view == windowed(backing.messages, max_tokens=MAX_TOKENS)
    h.add_messages(exchange(40))  # the first write folds the whole backlog
    assert len(summarizer.calls) == 1
    for _ in range(5):
        assert request_problems(h.messages) == []
    assert len(summarizer.calls) == 1


def test_without_a_summarizer_the_view_is_the_window_and_nothing_is_written() -> None:
    h = small_history()
    for i in range(40):
        h.add_messages(exchange(i))
    assert markers_of(h.full_messages) == []
    assert h.messages == windowed(h.full_messages, max_tokens=MAX_TOKENS)


def test_the_summarizer_runs_about_once_per_tail_of_new_work() -> None:
    summarizer = ScriptedSummarizer("note")
    h = small_history(summarizer=summarizer)
    for i in range(100):
        h.add_messages(exchange(i))
    added = count_tokens(conversation_of(h.full_messages))
    # A fold keeps at most the tail, so the next one waits for the headroom to fill.
    assert 1 <= len(summarizer.calls) <= added // (MAX_TOKENS - TAIL_TOKENS) + 1


def test_leading_system_messages_stay_in_front_and_out_of_the_note() -> None:
    summarizer = ScriptedSummarizer("note")
    h = small_history(summarizer=summarizer)
    h.add_messages([SystemMessage("You are terse.")])
    for i in range(40):
        h.add_messages(exchange(i))
    view = h.messages
    assert view[0] == SystemMessage("You are terse.", id=view[0].id)
    assert "📌" in str(view[1].content)
    assert request_problems(view) == []
    assert all("You are terse." not in str(p[1].content) for p in summarizer.calls)


def test_the_latest_user_turn_stays_verbatim_when_a_tool_loop_after_it_is_folded() -> None:
    backing = InMemoryChatMessageHistory()
    for i in range(10):
        backing.add_messages(with_ids(exchange(i)))
    backing.add_messages(with_ids([HumanMessage("now fix the parser")]))

    def tool_round(i: int) -> list[BaseMessage]:
        call = AIMessage("", tool_calls=[{"name": "read", "args": {"n": i}, "id": f"c{i}"}])
        return with_ids([call, ToolMessage("r" * 4_000, tool_call_id=f"c{i}")])

    for i in range(3):
        backing.add_messages(tool_round(i))
    h = small_history(backing, summarizer=ScriptedSummarizer("note"))
    h.add_messages(tool_round(3))
    assert len(markers_of(h.full_messages)) == 1
    for view in (h.messages, small_history(backing).messages):
        assert [m.content for m in view].count("now fix the parser") == 1
        assert view[1].content == "now fix the parser"
        assert request_problems(view) == []


def test_ids_are_assigned_to_copies_and_the_callers_messages_are_untouched() -> None:
    given_msgs = [HumanMessage("hi"), AIMessage("hello", id="mine")]
    h = CompactingChatMessageHistory()
    h.add_messages(given_msgs)
    assert given_msgs[0].id is None
    stored = h.full_messages
    assert stored[0].id
    assert stored[0] is not given_msgs[0]
    assert stored[1] is given_msgs[1]  # already had an id: stored as is


def test_a_store_that_drops_ids_still_anchors_its_markers() -> None:
    store: list[dict[str, object]] = []
    h = small_history(IdDroppingHistory(store), summarizer=ScriptedSummarizer("note"))
    for i in range(40):
        h.add_messages(exchange(i))
    record = h.full_messages
    assert all(m.id is None for m in record)
    metas = [consolidation_marker_of(m) for m in markers_of(record)]
    assert metas
    assert all(
        meta is not None and meta.keep_from_id in {message_id(m) for m in record} for meta in metas
    )
    reopened = small_history(IdDroppingHistory(store), summarizer=ScriptedSummarizer("never"))
    assert reopened.messages == h.messages
    assert str(h.messages[0].content).startswith("📌")


# --- consolidate ----------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["sync", "async"])
async def test_consolidate_writes_a_manual_marker_covering_everything_so_far(api: str) -> None:
    summarizer = ScriptedSummarizer("everything so far")
    h = CompactingChatMessageHistory(summarizer=summarizer)
    h.add_messages(exchange(0) + exchange(1))
    marker = h.consolidate() if api == "sync" else await h.aconsolidate()
    assert marker is not None
    assert consolidation_marker_of(marker) == ConsolidationMarkerMeta()
    assert h.full_messages[-1] == marker
    rendered = str(summarizer.calls[0][1].content)
    assert all(f"question {i}" in rendered for i in (0, 1))
    h.add_messages(exchange(2))
    assert [m.content for m in h.messages[1:]] == [m.content for m in exchange(2)]
    # Nothing new since the marker: nothing to consolidate, no call.
    h.clear()
    assert (h.consolidate() if api == "sync" else await h.aconsolidate()) is None
    assert len(summarizer.calls) == 1


def test_consolidate_twice_in_a_row_writes_one_marker() -> None:
    summarizer = ScriptedSummarizer("note")
    h = CompactingChatMessageHistory(summarizer=summarizer)
    h.add_messages(exchange(0))
    assert h.consolidate() is not None
    assert h.consolidate() is None
    assert len(markers_of(h.full_messages)) == 1
    assert len(summarizer.calls) == 1


def test_consolidate_needs_a_summarizer() -> None:
    with pytest.raises(ValueError, match="summarizer="):
        CompactingChatMessageHistory().consolidate()


def test_a_failing_consolidation_writes_nothing() -> None:
    h = CompactingChatMessageHistory(summarizer=ScriptedSummarizer(error=RuntimeError("down")))
    h.add_messages(exchange(0))
    assert h.consolidate() is None
    assert markers_of(h.full_messages) == []


# --- failure ----------------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["sync", "async"])
async def test_a_failing_summarizer_leaves_the_record_intact_and_the_view_windowed(
    api: str, caplog: pytest.LogCaptureFixture
) -> None:
    h = small_history(summarizer=ScriptedSummarizer(error=RuntimeError("model is down")))
    added: list[BaseMessage] = []
    with caplog.at_level(logging.WARNING, logger="langchain_builderforce_memory"):
        for i in range(40):
            added.extend(exchange(i))
            if api == "sync":
                h.add_messages(exchange(i))  # never raises
            else:
                await h.aadd_messages(exchange(i))
    record = h.full_messages
    assert markers_of(record) == []
    assert [m.content for m in record] == [m.content for m in added]
    view = h.messages if api == "sync" else await h.aget_messages()
    assert view == windowed(record, max_tokens=MAX_TOKENS)
    assert "model is down" in caplog.text


def test_a_summarizer_slower_than_the_timeout_leaves_the_view_windowed() -> None:
    release = threading.Event()
    h = small_history(summarizer=ScriptedSummarizer("late", block_until=release), timeout=0.05)
    try:
        for i in range(25):
            h.add_messages(exchange(i))
        assert markers_of(h.full_messages) == []
        assert h.messages == windowed(h.full_messages, max_tokens=MAX_TOKENS)
    finally:
        release.set()


# --- durability -------------------------------------------------------------------------------


def test_a_new_wrapper_over_the_same_sqlite_file_starts_from_the_marker_with_no_summarizer_call(
    tmp_path: Path,
) -> None:
    from langchain_community.chat_message_histories import SQLChatMessageHistory

    url = f"sqlite:///{tmp_path / 'chat.db'}"
    first_store = SQLChatMessageHistory(session_id="user-1", connection=url)
    first = small_history(first_store, summarizer=ScriptedSummarizer("note"))
    for i in range(40):
        first.add_messages(exchange(i))
    view = first.messages
    assert markers_of(first.full_messages)
    first_store.engine.dispose()

    fresh = ScriptedSummarizer("never asked")
    second_store = SQLChatMessageHistory(session_id="user-1", connection=url)
    second = small_history(second_store, summarizer=fresh)
    assert second.messages == view
    assert str(second.messages[0].content).startswith("📌")
    second.add_messages([HumanMessage("one more")])  # fits: no fold
    assert fresh.calls == []
    second_store.engine.dispose()


# --- concurrency and the event loop ---------------------------------------------------------


async def test_the_racy_store_loses_messages_under_unserialised_writers() -> None:
    # The control for the next test: the store really does lose concurrent writes.
    backing = RacyHistory()
    await asyncio.gather(*(backing.aadd_messages(exchange(i)) for i in range(20)))
    assert len(backing.messages) < 40


async def test_concurrent_aadd_messages_on_one_session_lose_no_message() -> None:
    summarizer = ScriptedSummarizer("note")
    h = small_history(RacyHistory(), summarizer=summarizer)
    await asyncio.gather(*(h.aadd_messages(exchange(i)) for i in range(40)))
    record = await h.aget_full_messages()
    convo = conversation_of(record)
    assert sorted(str(m.content) for m in convo) == sorted(
        str(m.content) for i in range(40) for m in exchange(i)
    )
    for k in range(0, len(convo), 2):  # each call's messages stay together
        assert str(convo[k + 1].content).startswith(f"answer {str(convo[k].content).split()[1]} ")
    assert len(markers_of(record)) == len(summarizer.calls) >= 1
    assert request_problems(await h.aget_messages()) == []


async def test_a_sync_summarizer_runs_off_the_event_loop() -> None:
    started = threading.Event()
    release = threading.Event()
    threads: list[int] = []

    def summarizer(prompt: list[BaseMessage]) -> str:
        threads.append(threading.get_ident())
        started.set()
        # Blocks until a coroutine on the loop releases it: run on the loop, it never would.
        return "note" if release.wait(10) else ""

    async def release_when_started() -> None:
        while not started.is_set():
            await asyncio.sleep(0.001)
        release.set()

    h = small_history(summarizer=summarizer)

    async def write() -> None:
        for i in range(40):
            await h.aadd_messages(exchange(i))

    await asyncio.gather(write(), release_when_started())
    assert threading.get_ident() not in threads
    assert markers_of(await h.aget_full_messages())


async def test_an_async_summarizer_is_awaited() -> None:
    calls: list[int] = []

    async def summarizer(prompt: list[BaseMessage]) -> str:
        await asyncio.sleep(0)
        calls.append(len(prompt))
        return "async note"

    h = small_history(summarizer=summarizer)
    for i in range(40):
        await h.aadd_messages(exchange(i))
    assert calls
    assert "async note" in str((await h.aget_messages())[0].content)


# --- configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({"backing": "a list"}, TypeError, "BaseChatMessageHistory"),
        ({"summarizer": 42}, TypeError, "summarizer"),
        ({"max_tokens": 0}, ValueError, "max_tokens"),
        ({"max_messages": -1}, ValueError, "max_messages"),
        ({"tail_tokens": 0}, ValueError, "tail_tokens"),
        ({"timeout": 0}, ValueError, "timeout"),
    ],
)
def test_bad_configuration_names_the_value_and_the_fix(
    kwargs: dict[str, object], error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names):
        CompactingChatMessageHistory(**kwargs)  # type: ignore[arg-type]


def test_messages_is_a_read_only_view() -> None:
    h = CompactingChatMessageHistory()
    with pytest.raises(AttributeError, match="add_messages"):
        h.messages = []


def test_the_wrapper_raises_no_deprecation_warning_of_its_own() -> None:
    def run(setup: str) -> subprocess.CompletedProcess[str]:
        code = (
            "from langchain_core.messages import HumanMessage\n"
            "from langchain_core.chat_history import InMemoryChatMessageHistory\n"
            "from langchain_builderforce_memory.history import CompactingChatMessageHistory\n"
            "import warnings\n"
            "warnings.simplefilter('error', DeprecationWarning)\n"
            f"{setup}\n"
            "h = CompactingChatMessageHistory()\n"
            "h.add_messages([HumanMessage('hi')])\n"
            "assert len(h.messages) == 1\n"
        )
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)

    ours = run("pass")
    assert ours.returncode == 0, ours.stderr
    # The control: the same check does catch the deprecation when the user's code triggers it.
    users = run("InMemoryChatMessageHistory()")
    assert users.returncode != 0
    assert "deprecated" in users.stderr


def test_scoped_record_keeps_leading_system_messages() -> None:
    from langchain_builderforce_memory.transcript.markers import consolidation_marker

    record = [SystemMessage("s"), HumanMessage("a"), consolidation_marker("n"), AIMessage("b")]
    assert [m.type for m in scoped_record(record)] == ["system", "ai", "ai"]


# --- RunnableWithMessageHistory end to end ------------------------------------------------------

MODEL_BUDGET = 64_000
HISTORY_SHARE = 60_000  # the rest is the prompt's system message and the new question


def answers(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"answer {i}: " + "z" * (4 * rng.randint(1_000, 3_000)) for i in range(n)]


@pytest.mark.parametrize("api", ["sync", "async"])
async def test_runnable_with_message_history_keeps_150_exchanges_in_budget(api: str) -> None:
    script = answers(150)
    model = ScriptedChatModel(script=list(script))
    summarizer = ScriptedChatModel(script=[f"note {k}" for k in range(100)])
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "You are a helpful assistant."),
            MessagesPlaceholder("history"),
            ("human", "{question}"),
        ]
    )
    sessions: dict[str, CompactingChatMessageHistory] = {}

    def session_history(session_id: str) -> CompactingChatMessageHistory:
        return sessions.setdefault(
            session_id,
            CompactingChatMessageHistory(summarizer=summarizer, max_tokens=HISTORY_SHARE),
        )

    chain = RunnableWithMessageHistory(
        prompt | model,
        session_history,
        input_messages_key="question",
        history_messages_key="history",
    )
    config = {"configurable": {"session_id": "s1"}}
    for i in range(150):
        question = {"question": f"question {i}"}
        if api == "sync":
            chain.invoke(question, config=config)  # type: ignore[arg-type]
        else:
            await chain.ainvoke(question, config=config)  # type: ignore[arg-type]

    assert len(model.requests) == 150
    for request in model.requests:
        assert count_tokens(request) <= MODEL_BUDGET
        assert request_problems(request) == []
    assert model.requests[-1][-1].content == "question 149"
    record = sessions["s1"].full_messages
    expected = [text for i in range(150) for text in (f"question {i}", script[i])]
    assert [m.content for m in conversation_of(record)] == expected
    folds = len(summarizer.requests)
    assert len(markers_of(record)) == folds
    total = count_tokens(conversation_of(record))
    assert 1 <= folds <= total // 20_000 + 1  # about once per 20k tokens of new work


# --- properties -------------------------------------------------------------------------------


@st.composite
def exchanges(draw: st.DrawFn) -> list[BaseMessage]:
    """A user turn, then an answer or a tool round; each message at most ~500 tokens."""
    size = st.one_of(st.integers(min_value=0, max_value=100), st.integers(400, 2_000))
    uid = draw(st.uuids()).hex[:12]  # unique contents: coverage is checked by content
    out: list[BaseMessage] = [HumanMessage(f"{uid}-q " + "q" * draw(size))]
    if draw(st.booleans()):
        out.append(AIMessage("", tool_calls=[{"name": "read", "args": {}, "id": uid}]))
        out.append(ToolMessage(f"{uid}-r " + "r" * draw(size), tool_call_id=uid))
    out.append(AIMessage(f"{uid}-a " + "a" * draw(size)))
    return out


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(exchanges(), min_size=12, max_size=40))
def test_every_stored_message_is_in_the_note_or_in_the_view(
    turns: list[list[BaseMessage]],
) -> None:
    summarizer = ScriptedSummarizer("note")
    # The fold's coverage: the clear tier (placeholders in the view) is off here.
    h = small_history(summarizer=summarizer, clear_tool_results=False)
    added: list[BaseMessage] = []
    for turn in turns:
        added.extend(turn)
        h.add_messages(turn)
        record = h.full_messages
        view = h.messages
        assert request_problems(view) == []
        assert count_tokens(view) <= MAX_TOKENS
        assert [m.content for m in conversation_of(record)] == [m.content for m in added]
        marks = [i for i, m in enumerate(record) if is_consolidation_marker(m)]
        if not marks:
            assert view == record  # nothing folded yet: everything verbatim
            continue
        meta = consolidation_marker_of(record[marks[-1]])
        assert meta is not None
        keep = [message_id(m) for m in record].index(str(meta.keep_from_id))
        # From keep_from_id on: every message, verbatim, in order. Before it: summarized.
        assert [m.id for m in view[1:]] == [m.id for m in conversation_of(record[keep:])]
        shown = summarized(summarizer)
        covered = conversation_of(record[:keep])
        assert all(str(m.content) in shown for m in covered)
