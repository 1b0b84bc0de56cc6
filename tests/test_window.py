"""The drop-oldest window: seed ports (001 transcriptWindow.test.ts, 003 windowed cases)."""

from __future__ import annotations

import logging

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_builderforce_memory.directive import latest_directive_index
from langchain_builderforce_memory.messages import message_id, role_of, stamp_of
from langchain_builderforce_memory.tokens import count_tokens
from langchain_builderforce_memory.transcript.view import still_in_working_context
from langchain_builderforce_memory.transcript.window import (
    HISTORY_TOKEN_BUDGET,
    HISTORY_TOKEN_DROP_CHUNK,
    HISTORY_WINDOW,
    HISTORY_WINDOW_DROP_CHUNK,
    message_window_start,
    token_window_start,
    windowed,
)
from langchain_builderforce_memory.validity import request_problems

from .helpers import convo_of, msg, seed_msgs


def transcript_tokens(msgs: list[BaseMessage]) -> int:
    return count_tokens(msgs)


def big(i: int) -> str:
    """~2k tokens per message (chars/4), so the budget holds ~32 of them."""
    return f"{i}:{'y' * 8_000}"


# --- 001: windowed — chunked message-count drops ------------------------------------------


def test_keeps_everything_up_to_the_window() -> None:
    convo = convo_of(HISTORY_WINDOW)
    assert windowed(convo) == convo


def test_drops_a_whole_chunk_once_over_then_holds_the_front_while_messages_arrive() -> None:
    fronts: list[object] = []
    for n in range(HISTORY_WINDOW + 1, HISTORY_WINDOW + HISTORY_WINDOW_DROP_CHUNK + 1):
        w = windowed(convo_of(n))
        assert len(w) <= HISTORY_WINDOW
        fronts.append(w[0].content)
    # One front for the whole chunk: the prefix did not move turn to turn.
    assert len(set(map(str, fronts))) == 1
    assert fronts[0] == f"m{HISTORY_WINDOW_DROP_CHUNK}"
    # The first drop leaves room: ~75% of the window, not exactly the window.
    assert (
        len(windowed(convo_of(HISTORY_WINDOW + 1)))
        == HISTORY_WINDOW + 1 - HISTORY_WINDOW_DROP_CHUNK
    )


def test_moves_the_front_by_the_next_chunk_only_when_the_window_fills_again() -> None:
    w = windowed(convo_of(HISTORY_WINDOW + HISTORY_WINDOW_DROP_CHUNK + 1))
    assert w[0].content == f"m{2 * HISTORY_WINDOW_DROP_CHUNK}"


# --- 001: windowed — chunked token drops --------------------------------------------------


def _first_over_budget() -> int:
    n = 2
    while transcript_tokens(convo_of(n, big)) <= HISTORY_TOKEN_BUDGET:
        n += 2
    return n


def test_drops_down_to_75_percent_of_the_budget_not_just_under_it() -> None:
    w = windowed(convo_of(_first_over_budget(), big))
    kept = transcript_tokens(w)
    assert kept <= HISTORY_TOKEN_BUDGET
    assert kept <= HISTORY_TOKEN_BUDGET - HISTORY_TOKEN_DROP_CHUNK + 4_100
    assert role_of(w[0]) == "user"


def test_holds_the_front_across_turns_until_a_whole_chunk_of_new_work_arrives() -> None:
    n = _first_over_budget()
    first = windowed(convo_of(n, big))[0]
    # A few more turns (< one chunk of tokens): same front.
    for extra in (2, 4):
        assert windowed(convo_of(n + extra, big))[0].content == first.content


def test_never_drops_the_most_recent_user_turn_however_large_it_is_cut_to_the_budget() -> None:
    convo = [
        msg("user", "old"),
        msg("assistant", "a"),
        msg("user", "z" * (HISTORY_TOKEN_BUDGET * 5) + "END"),
    ]
    w = windowed(convo)
    assert len(w) == 1
    assert w[0].text.startswith("zzz")
    assert w[0].text.endswith("END")
    assert transcript_tokens(w) <= HISTORY_TOKEN_BUDGET
    assert stamp_of(w[0]) == {
        "kind": "elided",
        "cut_tokens": stamp_of(w[0])["cut_tokens"],  # type: ignore[index]
        "of": message_id(convo[2]),
    }
    assert convo[2].text.endswith("END")
    assert len(convo[2].text) == HISTORY_TOKEN_BUDGET * 5 + 3


def test_one_directive_then_60_tool_rounds_of_121k_tokens_is_cut_at_a_unit_and_restated() -> None:
    # The regression: windowed() returned all 121 messages (121,437 tokens) for a 64k
    # budget because the latest user turn was never dropped.
    record: list[BaseMessage] = [HumanMessage("Refactor the parser.", id="u1")]
    for i in range(60):
        call = {"name": "read_file", "args": {"path": f"f{i}.py"}, "id": f"c{i}"}
        record += [AIMessage("", tool_calls=[call]), ToolMessage("x" * 8_300, tool_call_id=f"c{i}")]
    assert transcript_tokens(record) > 120_000
    view = windowed(record, max_tokens=64_000)
    assert transcript_tokens(view) <= 64_000
    assert request_problems(view) == []
    # Restated as a stamped copy of the user's own message (the fold does the same), which
    # every directive lookup still takes as the user's.
    assert stamp_of(view[0]) == {"kind": "directive", "of": "u1"}
    assert view[0].content == "Refactor the parser."
    assert view[0].id == "u1"
    assert latest_directive_index(view) == 0
    assert isinstance(view[1], AIMessage)
    assert view[1].tool_calls
    assert view[1:] == record[len(record) - len(view) + 1 :]


def test_still_starts_on_a_user_turn_after_a_drop_strict_vendors() -> None:
    spec: list[tuple[str, str]] = []
    for i in range(40):
        spec += [("user", f"u{i}"), ("assistant", big(i)), ("tool", big(i))]
    view = windowed(seed_msgs(spec))
    assert role_of(view[0]) == "user"
    assert request_problems(view) == []


# --- 003: windowed history (must begin with a user turn) ----------------------------------


def test_keeps_a_normal_short_conversation_intact() -> None:
    convo = [msg("user"), msg("assistant"), msg("user"), msg("assistant")]
    assert windowed(convo) == convo


def test_drops_a_leading_orphaned_tool_result() -> None:
    convo = [msg("tool"), msg("user"), msg("assistant")]
    assert role_of(windowed(convo)[0]) == "user"


def test_drops_a_leading_assistant_turn_so_the_payload_starts_at_a_user_turn_the_googleai_400() -> (
    None
):
    # After a long tool loop slid the user turn out of the last-N slice, the window would
    # otherwise start on an assistant tool-call turn, which Gemini rejects.
    convo = seed_msgs(
        [("assistant", "x"), ("tool", "x"), ("user", "x"), ("assistant", "x"), ("tool", "x")]
    )
    view = windowed(convo)
    assert role_of(view[0]) == "user"
    assert request_problems(view) == []


def test_anchors_to_the_last_user_turn_when_the_window_has_none_tool_loop_gt_window() -> None:
    # 90 assistant/tool messages after a single user turn: the last-80 slice has no user
    # turn, so the window falls back to the most recent user turn in the full transcript.
    spec = [("user", "go")] + [("assistant" if i % 2 == 0 else "tool", f"s{i}") for i in range(90)]
    w = windowed(seed_msgs(spec))
    assert role_of(w[0]) == "user"
    assert w[0].content == "go"


# --- our additions: system prefix, budgets, repairs, validation ---------------------------


def test_keeps_leading_system_messages_in_front_and_counts_them_in_the_budget() -> None:
    system = SystemMessage("s" * 4_000)  # 1,004 tokens
    convo = convo_of(20, lambda i: f"{i}:" + "y" * 396)  # ~104 tokens each
    view = windowed([system, *convo], max_tokens=2_000)
    assert view[0] is system
    assert transcript_tokens(view) <= 2_000
    assert role_of(view[1]) == "user"


def test_no_user_turn_keeps_everything_that_fits_else_the_last_message_repaired_to_be_valid() -> (
    None
):
    only_ai = [AIMessage("a"), AIMessage("b")]
    fits = windowed(only_ai)
    assert fits[-2:] == only_ai
    assert request_problems(fits) == []
    huge = [AIMessage("a" * 400), AIMessage("b" * 400)]
    view = windowed(huge, max_tokens=150)
    assert view[-1] is huge[-1]
    assert huge[0] not in view
    assert request_problems(view) == []


def test_a_cut_landing_on_a_late_system_message_keeps_it_a_user_message_within_budget() -> None:
    # Found by the faults property test: the window began at a large mid-record system
    # message, which then led the view as a system prompt that nothing could elide, and
    # windowed() raised inside the graph.
    late = SystemMessage("x" * 19_200)  # ~4.8k tokens, over the whole budget
    record: list[BaseMessage] = [AIMessage("a" * 400), AIMessage("b" * 400), late]
    view = windowed(record, max_tokens=3_000)
    assert request_problems(view) == []
    assert transcript_tokens(view) <= 3_000
    assert all(role_of(m) != "system" for m in view)
    assert stamp_of(view[-1])["reason"] == "system"  # type: ignore[index]


@pytest.mark.parametrize(
    ("record", "repair"),
    [
        pytest.param(
            [HumanMessage("go"), ToolMessage("stray", tool_call_id="nope"), AIMessage("ok")],
            "dropped tool result",
            id="orphan-result",
        ),
        pytest.param(
            [
                HumanMessage("go"),
                AIMessage("", tool_calls=[{"name": "finish", "args": {}, "id": "f1"}]),
            ],
            "answered tool call",
            id="unanswered-call",
        ),
        pytest.param(
            [HumanMessage("go"), AIMessage("a"), SystemMessage("late rule"), HumanMessage("next")],
            "system message",
            id="mid-system",
        ),
    ],
)
def test_an_invalid_record_yields_a_valid_view_and_logs_the_repair(
    record: list[BaseMessage], repair: str, caplog: pytest.LogCaptureFixture
) -> None:
    before = [m.model_copy(deep=True) for m in record]
    with caplog.at_level(logging.WARNING):
        view = windowed(record)
    assert request_problems(record) != []
    assert request_problems(view) == []
    assert repair in caplog.text
    assert record == before  # the caller's record is untouched


@pytest.mark.parametrize(
    ("kwargs", "field"), [({"max_messages": 0}, "max_messages"), ({"max_tokens": -5}, "max_tokens")]
)
def test_rejects_a_bad_budget_naming_the_argument(kwargs: dict[str, int], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        windowed(convo_of(4), **kwargs)


def test_cut_points_are_fixed_positions_from_the_start() -> None:
    assert message_window_start(80) == 0
    assert message_window_start(81) == 20
    assert message_window_start(100) == 20
    assert message_window_start(101) == 40
    assert token_window_start([10] * 10, budget=100) == 0
    assert token_window_start([10] * 11, budget=100) == 3


def test_still_in_working_context_follows_the_window_and_the_memo() -> None:
    convo = convo_of(HISTORY_WINDOW + 1)
    assert not still_in_working_context(convo, convo[0])
    assert still_in_working_context(convo, convo[-1])
    assert not still_in_working_context(convo, HumanMessage("not in the record"))
    # With a memo covering the first 30 messages, message 29 is folded, 30 is verbatim.
    assert not still_in_working_context(convo, convo[29], covered_end=30)
    assert still_in_working_context(convo, convo[30], covered_end=30)


def test_does_not_mutate_the_callers_list() -> None:
    convo = convo_of(HISTORY_WINDOW + 5)
    snapshot = list(convo)
    view = windowed(convo)
    assert convo == snapshot
    view.append(HumanMessage("extra"))
    assert len(convo) == len(snapshot)


def _thinking_call(cid: str, thought: str) -> AIMessage:
    blocks: list[str | dict[str, object]] = [
        {"type": "thinking", "thinking": thought, "signature": "sig"},
        {"type": "tool_use", "id": cid, "name": "read_file", "input": {"path": cid}},
    ]
    call = {"name": "read_file", "args": {"path": cid}, "id": cid, "type": "tool_call"}
    return AIMessage(blocks, tool_calls=[call])


def test_a_turn_that_turned_thinking_on_midway_stays_within_the_message_window() -> None:
    # Found by a random hypothesis run: the window restated the directive and kept a step
    # without thinking before one with it; the repair then opened a new turn at the
    # thinking step, one message more than max_messages. The view now opens the turn
    # there instead.
    record: list[BaseMessage] = [
        HumanMessage("fix the parser"),
        AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c0", "type": "tool_call"}]),
        ToolMessage("a.py", tool_call_id="c0"),
        AIMessage("looking"),
        _thinking_call("c1", "hm"),
        ToolMessage("print(1)", tool_call_id="c1"),
    ]
    view = windowed(record, max_messages=4, max_tokens=500)
    assert len(view) <= 4
    assert request_problems(view, thinking=True) == []
    assert (stamp_of(view[0]) or {}).get("kind") == "directive"
    assert view[1:] == record[4:]  # the thinking step and its result, verbatim
