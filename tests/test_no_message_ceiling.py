"""Issue 28: ``max_messages=None`` means no message ceiling at every entry point: the token
budget alone decides (it raised before)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from langchain_core.messages import BaseMessage

from langchain_builderforce_memory import (
    CompactingChatMessageHistory,
    build_working_transcript,
    pack_handoff,
    windowed,
)
from langchain_builderforce_memory.agents.core import MemoryCore
from langchain_builderforce_memory.agents.driver import run_turn
from langchain_builderforce_memory.agents.policy import MemoryPolicy
from langchain_builderforce_memory.transcript.memo import FoldPolicy
from langchain_builderforce_memory.transcript.window import MAX_REQUEST_MESSAGES, MAX_VIEW_MESSAGES
from langchain_builderforce_memory.validity import request_problems

from .helpers import convo_of

RECORD = convo_of(401)  # 401 short messages, far under any token budget


def _windowed(record: list[BaseMessage], ceiling: int | None) -> list[BaseMessage]:
    return windowed(record, max_messages=ceiling, max_tokens=64_000)


def _fold(record: list[BaseMessage], ceiling: int | None) -> list[BaseMessage]:
    out = build_working_transcript(
        record, summarizer=lambda p: "note", max_messages=ceiling, max_tokens=64_000
    )
    return out.messages


def _adapter(record: list[BaseMessage], ceiling: int | None) -> list[BaseMessage]:
    core = MemoryCore(
        MemoryPolicy(max_tokens=64_000, max_messages=ceiling, usage_calibration=False),
        summarizer=lambda p: "note",
    )
    return [m for m in run_turn(core, record, {}).messages if m.type != "system"]


def _history(record: list[BaseMessage], ceiling: int | None) -> list[BaseMessage]:
    history = CompactingChatMessageHistory(
        summarizer=lambda p: "note", max_tokens=64_000, max_messages=ceiling
    )
    history.add_messages(record)
    return history.messages


ENTRY_POINTS: list[Callable[[list[BaseMessage], int | None], list[BaseMessage]]] = [
    _windowed,
    _fold,
    _adapter,
    _history,
]


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda f: f.__name__)
def test_none_is_no_ceiling_and_80_is_the_seed_window(
    entry: Callable[[list[BaseMessage], int | None], list[BaseMessage]],
) -> None:
    unbounded = entry(RECORD, None)
    shown = [m.content for m in unbounded]
    assert [c for c in shown if c in {m.content for m in RECORD}] == [m.content for m in RECORD]
    assert request_problems(unbounded) == []
    assert len(entry(RECORD, 80)) <= 81  # the ceiling still binds when it is set


def test_the_policy_reads_none_as_the_most_a_request_may_hold() -> None:
    policy = FoldPolicy(max_messages=None)
    assert policy.max_messages is None
    assert policy.message_cap == MAX_VIEW_MESSAGES
    assert policy.tail_message_cap == policy.max_tail_messages


def _packed(record: list[BaseMessage], ceiling: int | None) -> list[BaseMessage]:
    return pack_handoff(record, target_context_tokens=128_000, reserve_output_tokens=8_000).messages


@pytest.mark.parametrize("ceiling", [None, 5_000])
@pytest.mark.parametrize("entry", [*ENTRY_POINTS, _packed], ids=lambda f: f.__name__)
def test_no_view_holds_more_messages_than_a_request_may(
    entry: Callable[[list[BaseMessage], int | None], list[BaseMessage]], ceiling: int | None
) -> None:
    # OpenAI: "Invalid 'messages': array too long. Expected an array with maximum length
    # 2048" (obot-platform/obot#1009). 4,001 short messages are ~20k tokens: any token
    # budget here holds them all, so only the message limit keeps the request valid.
    record = convo_of(4_001)
    view = entry(record, ceiling)
    assert len(view) <= MAX_REQUEST_MESSAGES
    assert request_problems(view) == []
    assert view[-1].content == record[-1].content  # the newest, as it was


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "80", "Auto"])
def test_a_bad_ceiling_names_the_field_and_none(bad: object) -> None:
    with pytest.raises(ValueError, match=r"max_messages must be a positive int, 'auto' .* or None"):
        windowed(RECORD, max_messages=bad)  # type: ignore[arg-type]


# ------------------------------------------ "auto": the default ceiling, from the budget


def test_auto_is_one_message_per_500_budget_tokens_never_under_128() -> None:
    pairs = ((4_000, 128), (32_000, 128), (64_000, 128), (200_000, 400), (2_000_000, 2_000))
    for budget, ceiling in pairs:
        assert FoldPolicy(max_tokens=budget).max_messages == ceiling
        assert MemoryPolicy(max_tokens=budget).fold_policy.max_messages == ceiling


def test_auto_counts_from_the_users_budget_so_calibration_does_not_move_the_cut() -> None:
    # The provider's ratio is learned turn by turn: the ceiling, and so the window's cut
    # points, must not follow it.
    for factor in (0.8, 1.25, 1.3):
        assert FoldPolicy(max_tokens=128_000).scaled(factor).max_messages == 256
        assert MemoryPolicy(max_tokens=128_000).scaled(factor).fold_policy.max_messages == 256


def test_small_messages_no_longer_call_the_summarizer_at_80() -> None:
    calls: list[int] = []

    def summarizer(prompt: object) -> str:
        calls.append(1)
        return "note"

    record = RECORD[:121]  # 121 short messages: far under 32k tokens
    out = build_working_transcript(record, summarizer=summarizer, max_tokens=32_000)
    assert (out.mode, calls) == ("verbatim", [])
    seed = build_working_transcript(
        record, summarizer=summarizer, max_tokens=32_000, max_messages=80
    )
    assert (seed.mode, len(calls)) == ("folded", 1)
