"""Provider-native compaction in the record (issue 24, interop): recognised, billed from, kept.

The response fixtures follow the documented shapes and are parsed by the providers' own
LangChain integrations, so the record holds what a real run would hold:

* Anthropic compaction: https://docs.claude.com/en/docs/build-with-claude/compaction
  (a ``compaction`` content block; streamed as a ``compaction_delta``; "the API drops all
  message blocks prior to the compaction block" on later calls);
* OpenAI compaction: https://developers.openai.com/api/docs/guides/compaction (an
  encrypted ``compaction`` output item of the Responses API).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from anthropic.types.beta import (
    BetaCompactionBlock,
    BetaCompactionContentBlockDelta,
    BetaMessage,
    BetaRawContentBlockDeltaEvent,
    BetaToolUseBlock,
    BetaUsage,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_openai.chat_models.base import _construct_lc_result_from_responses_api
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from openai.types.responses import (
    Response,
    ResponseCompactionItem,
    ResponseOutputMessage,
    ResponseOutputText,
)

from langchain_builderforce_memory import build_working_transcript, windowed
from langchain_builderforce_memory.agents.core import MemoryCore
from langchain_builderforce_memory.agents.driver import run_turn
from langchain_builderforce_memory.agents.policy import MemoryPolicy
from langchain_builderforce_memory.history import CompactingChatMessageHistory
from langchain_builderforce_memory.messages import (
    DIRECTIVE_KIND,
    is_stamped,
    leading_system_count,
    message_id,
)
from langchain_builderforce_memory.native import (
    COMPACTION_OPENER_KIND,
    is_provider_compaction,
    last_compaction_index,
)
from langchain_builderforce_memory.tokens import ApproximateTokenCounter, count_tokens
from langchain_builderforce_memory.validity import request_problems

from .helpers import ScriptedSummarizer, agent_views, read_loop
from .provider_shapes import anthropic_wire
from .strategies import units, user_turn

COUNTER = ApproximateTokenCounter()
SUMMARY = "Summary: the user asked to port the parser to Rust; f0..f9 were read."


def _anthropic() -> ChatAnthropic:
    return ChatAnthropic(model="claude-sonnet-4-6", api_key="offline")  # type: ignore[call-arg]


def anthropic_compaction(call_id: str = "toolu_c") -> AIMessage:
    """A compaction response that goes on to call a tool, parsed by langchain-anthropic."""
    response = BetaMessage(
        id="msg_compacted",
        type="message",
        role="assistant",
        model="claude-sonnet-4-6",
        content=[
            BetaCompactionBlock(type="compaction", content=SUMMARY),
            BetaToolUseBlock(type="tool_use", id=call_id, name="read_file", input={"path": "g.py"}),
        ],
        stop_reason="tool_use",
        stop_sequence=None,
        usage=BetaUsage(input_tokens=10, output_tokens=5),
    )
    message = _anthropic()._format_output(response).generations[0].message
    assert isinstance(message, AIMessage)
    return message


def _streamed() -> AIMessage:
    """The compaction streamed (a ``compaction_delta``), merged with a following chunk."""
    event = BetaRawContentBlockDeltaEvent(
        type="content_block_delta",
        index=0,
        delta=BetaCompactionContentBlockDelta(type="compaction_delta", content=SUMMARY),
    )
    chunk, _ = _anthropic()._make_message_chunk_from_anthropic_event(
        event,  # type: ignore[arg-type]
        coerce_content_to_string=False,
    )
    assert chunk is not None
    merged = chunk + AIMessageChunk([{"type": "text", "text": "Going on.", "index": 1}])
    return AIMessage(merged.content, id="streamed")


def _openai() -> AIMessage:
    response = Response(
        id="resp_1",
        created_at=0,
        model="gpt-5",
        object="response",
        output=[
            ResponseCompactionItem(id="cmp_1", type="compaction", encrypted_content="gAAAA"),
            ResponseOutputMessage(
                id="msg_1",
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text="ok", annotations=[])],
            ),
        ],
        parallel_tool_calls=True,
        tool_choice="auto",
        tools=[],
    )
    message = _construct_lc_result_from_responses_api(response).generations[0].message
    assert isinstance(message, AIMessage)
    return message


def _round_tripped() -> AIMessage:
    serde = JsonPlusSerializer()
    back = serde.loads_typed(serde.dumps_typed(anthropic_compaction()))
    assert isinstance(back, AIMessage)
    return back


SHAPES = {
    "anthropic": anthropic_compaction,
    "anthropic streamed": _streamed,
    "openai responses": _openai,
    "v1 non_standard": lambda: AIMessage(
        [{"type": "non_standard", "value": {"type": "compaction", "content": SUMMARY}}]
    ),
    "checkpoint round trip": _round_tripped,
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_shape_of_a_provider_compaction_is_recognised(shape: str) -> None:
    assert is_provider_compaction(SHAPES[shape]())


def test_other_messages_are_not_compactions() -> None:
    assert not is_provider_compaction(AIMessage("compaction"))
    assert not is_provider_compaction(AIMessage([{"type": "text", "text": "compaction"}]))


def compacted_record(before: int = 10, after: int = 10, size: int = 3_000) -> list[BaseMessage]:
    """A system prompt, ``before`` reads, the provider's compaction (calling a tool), its
    result, then ``after`` more reads: what a run holds after one server-side compaction."""
    head = read_loop(before, size)
    block = anthropic_compaction()
    answer = ToolMessage("g" * 400, tool_call_id="toolu_c", name="read_file", id="t_c")
    tail = [m.model_copy(update={"id": f"late-{m.id}"}) for m in read_loop(after, size)[1:]]
    tail = [
        m.model_copy(update={"tool_call_id": f"late-{m.tool_call_id}"})
        if isinstance(m, ToolMessage)
        else m
        for m in tail
    ]
    tail = [
        m.model_copy(update={"tool_calls": [{**c, "id": f"late-{c['id']}"} for c in m.tool_calls]})
        if isinstance(m, AIMessage)
        else m
        for m in tail
    ]
    return [SystemMessage("You port code."), *head, block, answer, *tail]


def _from_block(record: list[BaseMessage]) -> list[BaseMessage]:
    return record[last_compaction_index(record) :]


@pytest.mark.parametrize("budget", [12_000, 20_000, 40_000, 80_000])
def test_a_view_keeps_the_block_first_and_is_counted_from_it(budget: int) -> None:
    record = compacted_record()
    summarizer = ScriptedSummarizer("our note")
    out = build_working_transcript(
        record, summarizer=summarizer, max_tokens=budget, token_counter=COUNTER
    )
    view = out.messages
    assert request_problems(view) == []
    assert anthropic_wire(view) == []
    assert count_tokens(view, COUNTER) <= budget
    assert is_stamped(view[1], COMPACTION_OPENER_KIND)
    at = last_compaction_index(record)
    assert view[2] is record[at]
    # The directive the block compacted away, restated after the block and its answer.
    restated = view[4]
    assert is_stamped(restated, DIRECTIVE_KIND)
    assert restated.content == record[1].content
    early = {message_id(m) for m in record[2:at]}  # the tool rounds before the block
    assert not early & {message_id(m) for m in view}
    provider_view = [record[0], view[1], record[at], record[at + 1], restated, *record[at + 2 :]]
    if count_tokens(provider_view, COUNTER) <= budget:
        # What follows the block fits: sent whole, no fold, counted as the provider
        # bills it (plus the opener, which the provider drops with the rest before it).
        assert view == provider_view
        assert summarizer.calls == []


def test_no_fold_folds_the_block_into_our_note() -> None:
    record = compacted_record(after=60)  # past 80 messages the clear tier cannot fit it
    summarizer = ScriptedSummarizer("our note")
    out = build_working_transcript(
        record, summarizer=summarizer, max_tokens=12_000, max_messages=80, token_counter=COUNTER
    )
    assert out.mode == "folded"
    assert out.messages[2] is record[last_compaction_index(record)]
    shown = summarizer.calls[-1]
    assert not any(is_provider_compaction(m) for m in shown)
    assert not any(SUMMARY in str(m.content) for m in shown)


def test_the_window_opens_at_the_block() -> None:
    record = compacted_record(after=30)
    view = windowed(record, max_tokens=12_000, max_messages=None, token_counter=COUNTER)
    assert view[2] is record[last_compaction_index(record)]
    assert request_problems(view) == []
    assert count_tokens(view, COUNTER) <= 12_000


def test_the_middleware_turn_keeps_the_block_and_holds_its_fold() -> None:
    record = compacted_record(after=40)
    summarizer = ScriptedSummarizer("our note")
    core = MemoryCore(
        MemoryPolicy(max_tokens=12_000, max_messages=80),
        summarizer=summarizer,
        token_counter=COUNTER,
    )
    first = run_turn(core, record, {"messages": record})
    state = {"messages": record, **first.update}
    grown = [*record, AIMessage("still porting", id="later")]
    second = run_turn(core, grown, {**state, "messages": grown})
    for turn in (first, second):
        assert turn.messages[2] is record[last_compaction_index(record)]
        assert request_problems(turn.messages) == []
    assert len(summarizer.calls) == 1  # the second turn reuses the note folded after the block


@st.composite
def compacted_records(draw: st.DrawFn) -> list[BaseMessage]:
    """Valid records with provider compactions (some calling tools) at random unit starts."""
    out: list[BaseMessage] = [SystemMessage("You port code.")]
    out.append(draw(user_turn()))
    for k in range(draw(st.integers(min_value=1, max_value=20))):
        if draw(st.integers(0, 3)) == 0:
            calls = draw(st.booleans())
            block: dict[str, Any] = {
                "type": "compaction",
                "content": "x" * draw(st.integers(0, 4_000)),
            }
            if calls:
                use = {"type": "tool_use", "id": f"cc{k}", "name": "read_file", "input": {}}
                call = {"name": "read_file", "args": {}, "id": f"cc{k}"}
                out.append(AIMessage([block, use], tool_calls=[call], id=f"cmp{k}"))
                out.append(ToolMessage("y" * 800, tool_call_id=f"cc{k}", name="read_file"))
            else:
                out.append(AIMessage([block], id=f"cmp{k}"))
        out.extend(draw(units()))
    return out


def _built(record: list[BaseMessage], budget: int) -> list[BaseMessage]:
    return build_working_transcript(
        record, summarizer=ScriptedSummarizer(), max_tokens=budget, token_counter=COUNTER
    ).messages


def _windowed(record: list[BaseMessage], budget: int) -> list[BaseMessage]:
    return windowed(record, max_tokens=budget, token_counter=COUNTER)


ENTRY_POINTS = {"build": _built, "windowed": _windowed, **agent_views(COUNTER)}


# Cheap examples: the full count under CI too.
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    record=compacted_records(),
    budget=st.integers(min_value=6_000, max_value=40_000),
    entry=st.sampled_from(sorted(ENTRY_POINTS)),
)
def test_records_with_compactions_give_valid_views_in_budget_through_every_entry_point(
    record: list[BaseMessage], budget: int, entry: str
) -> None:
    before = [m.model_dump() for m in record]
    view = ENTRY_POINTS[entry](list(record), budget)
    assert [m.model_dump() for m in record] == before
    assert request_problems(view) == []
    assert count_tokens(view, COUNTER) <= budget
    last = last_compaction_index(record)
    lead = leading_system_count(view)
    pinnable = count_tokens([*record[:1], *record[last : last + 2]], COUNTER) + 30 <= budget // 2
    if last > 0 and pinnable:
        assert is_stamped(view[lead], COMPACTION_OPENER_KIND)
        assert view[lead + 1] is record[last] or view[lead + 1] == record[last]


def _native_events(events: Sequence[Mapping[str, object]]) -> list[Mapping[str, object]]:
    return [e for e in events if e["builderforce_memory"] == "native"]


def _native_event(*, compacted: bool, uses: int, tokens: int) -> dict[str, object]:
    """The native event a turn reports (the fields of ``NativeEvent``)."""
    return {
        "builderforce_memory": "native",
        "compacted": compacted,
        "cleared_tool_uses": uses,
        "cleared_input_tokens": tokens,
    }


def test_a_compaction_answer_is_reported_once_as_a_native_event() -> None:
    record = compacted_record(after=2)
    core = MemoryCore(MemoryPolicy(max_tokens=64_000), token_counter=COUNTER)
    upto = last_compaction_index(record) + 2  # the compaction answer and its tool result
    events = run_turn(core, record[:upto], {"messages": record[:upto]}).events
    assert _native_events(events) == [_native_event(compacted=True, uses=0, tokens=0)]
    later = run_turn(core, record, {"messages": record}).events  # newer answers since
    assert _native_events(later) == []


def _answer(input_tokens: int, cleared: int) -> AIMessage:
    edits = [
        {
            "type": "clear_tool_uses_20250919",
            "cleared_input_tokens": cleared,
            "cleared_tool_uses": 3,
        }
    ]
    return AIMessage(
        "ok",
        response_metadata={"context_management": {"applied_edits": edits}},
        usage_metadata={
            "input_tokens": input_tokens,
            "output_tokens": 1,
            "total_tokens": input_tokens + 1,
        },
    )


def test_the_calibration_adds_back_what_the_providers_edits_cleared() -> None:
    from langchain_builderforce_memory.calibration import UsageCalibration

    sent = UsageCalibration().sent(10_000, 1)
    record: list[BaseMessage] = [HumanMessage("go")]
    learned = sent.read_usage([*record, _answer(7_000, 3_000)])
    assert learned.ratio == pytest.approx(1.0)  # 7,000 billed + 3,000 cleared: our count
    events = run_turn(
        MemoryCore(MemoryPolicy(), token_counter=COUNTER),
        [*record, _answer(7_000, 3_000), HumanMessage("again")],
        {},
    ).events
    assert _native_events(events) == [_native_event(compacted=False, uses=3, tokens=3_000)]


def test_inspect_shows_the_views_starting_at_the_block() -> None:
    from langchain_builderforce_memory.cli.inspect import inspect_messages

    record = compacted_record(after=5)
    at = last_compaction_index(record)
    report = inspect_messages(record, budget=40_000, token_counter=COUNTER)
    assert "provider_compaction" in report.settings
    rows = report.rows
    assert {(r.window, r.fold) for r in rows[1:at]} == {("dropped", "dropped")}
    assert (rows[at].window, rows[at].fold) == ("kept", "kept")


def _history_folds(record: list[BaseMessage], start: int) -> tuple[int, list[BaseMessage]]:
    """Folds of a 24k history fed ``record`` a tool round at a time from ``start``."""
    summarizer = ScriptedSummarizer("our note")
    history = CompactingChatMessageHistory(
        summarizer=summarizer,
        max_tokens=24_000,
        tail_tokens=8_000,
        token_counter=COUNTER,
        clear_tool_results=False,  # the fold, not the clear tier, makes the room
    )
    history.add_messages(record[:start])
    first = history.messages
    assert summarizer.calls == []  # what follows the block fits: no fold
    for step in range(start, len(record), 2):
        history.add_messages(record[step : step + 2])
        view = history.messages
        assert request_problems(view) == []
        assert count_tokens(view, COUNTER) <= 24_000
    return len(summarizer.calls), first


def test_the_chat_history_starts_its_view_at_the_block_and_holds_its_own_note() -> None:
    record = compacted_record(before=30, after=40)
    at = last_compaction_index(record)
    folds, first = _history_folds(record, at + 2)
    assert is_stamped(first[1], COMPACTION_OPENER_KIND)
    assert first[2].content == record[at].content
    plain, _ = _history_folds(read_loop(40, 3_000), 1)  # the same run with no block
    assert folds <= plain  # its own note after the block is held like any other


@pytest.mark.parametrize("bad", ["3", None, True, 2.5, {"n": 1}])
def test_a_malformed_edit_report_is_read_as_nothing_never_a_crash(bad: object) -> None:
    from langchain_builderforce_memory.native import native_event

    edit = {
        "type": "clear_tool_uses_20250919",
        "cleared_input_tokens": bad,
        "cleared_tool_uses": bad,
    }
    answer = AIMessage("ok", response_metadata={"context_management": {"applied_edits": [edit]}})
    event = native_event([HumanMessage("go"), answer])
    assert event is not None
    assert (event["cleared_tool_uses"], event["cleared_input_tokens"]) == (0, 0)
