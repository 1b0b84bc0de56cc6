"""Issue 28: ``max_messages=None`` means no message ceiling at every entry point: the token
budget alone decides (it raised before)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from langchain_core.messages import BaseMessage

from langchain_builderforce_memory import (
    CompactingChatMessageHistory,
    build_working_transcript,
    windowed,
)
from langchain_builderforce_memory.agents.core import MemoryCore
from langchain_builderforce_memory.agents.driver import run_turn
from langchain_builderforce_memory.agents.policy import MemoryPolicy
from langchain_builderforce_memory.transcript.memo import FoldPolicy
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


def test_the_policy_reads_none_as_an_unreachable_cap() -> None:
    policy = FoldPolicy(max_messages=None)
    assert policy.max_messages is None
    assert policy.message_cap > 10**9
    assert policy.tail_message_cap == policy.max_tail_messages


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "80"])
def test_a_bad_ceiling_names_the_field_and_none(bad: object) -> None:
    with pytest.raises(ValueError, match=r"max_messages must be a positive int, or None"):
        windowed(RECORD, max_messages=bad)  # type: ignore[arg-type]
