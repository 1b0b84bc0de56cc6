"""Issue 16, reproducer 6: the chat history lost the directive and folded on almost every add."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import pytest
from langchain_core.chat_history import BaseChatMessageHistory, InMemoryChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_builderforce_memory.history import CompactingChatMessageHistory
from langchain_builderforce_memory.tokens import count_tokens
from langchain_builderforce_memory.transcript.markers import is_consolidation_marker
from langchain_builderforce_memory.validity import request_problems

INSTRUCTION = "Always answer in French, and cite the file for every claim."
ANSWER = "the answer explains the code in detail " * 100  # ~1k tokens


class Echo:
    """A summarizer that answers with the whole rendered transcript (capped by the fold)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, prompt: list[BaseMessage]) -> str:
        self.calls += 1
        return str(prompt[-1].content)


class RoleAndContentOnly(BaseChatMessageHistory):
    """A store that keeps each message's role and content, nothing else (no ids, no
    additional_kwargs): what a minimal SQL table of (role, text) gives back."""

    def __init__(self) -> None:
        self.rows: list[tuple[type[BaseMessage], object]] = []

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return [kind(content=content) for kind, content in self.rows]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        self.rows.extend((type(m), m.content) for m in messages)

    def clear(self) -> None:
        self.rows = []


def history(backing: BaseChatMessageHistory | None, summarizer: Echo, max_tokens: int):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return CompactingChatMessageHistory(
            backing or InMemoryChatMessageHistory(), summarizer=summarizer, max_tokens=max_tokens
        )


def test_one_instruction_then_30_long_answers_keeps_the_instruction_in_the_view() -> None:
    h = history(None, Echo(), 6_000)
    h.add_message(HumanMessage(INSTRUCTION))
    for _ in range(30):
        h.add_message(AIMessage(ANSWER))
        view = h.messages
        assert any(m.content == INSTRUCTION for m in view)
        assert request_problems(view) == []
        assert count_tokens(view) <= 6_000


def test_100_appends_at_8k_fold_about_once_per_headroom_not_per_add() -> None:
    summarizer = Echo()
    h = history(None, summarizer, 8_000)
    h.add_message(HumanMessage(INSTRUCTION))
    for _ in range(100):
        h.add_message(AIMessage(ANSWER))
        assert count_tokens(h.messages) <= 8_000
    markers = sum(1 for m in h.full_messages if is_consolidation_marker(m))
    # ~1k tokens an add; the fold leaves ~3k of headroom after a 2.5k note and 8 messages.
    assert summarizer.calls <= 35
    assert markers == summarizer.calls


def run(h: CompactingChatMessageHistory, pairs: bool) -> None:
    h.add_message(HumanMessage(INSTRUCTION))
    for i in range(60):
        if pairs:
            h.add_message(HumanMessage(f"question {i}"))
        h.add_message(AIMessage(ANSWER))
        assert request_problems(h.messages) == []
        assert count_tokens(h.messages) <= 8_000


@pytest.mark.parametrize("pairs", [False, True], ids=["answers", "exchanges"])
def test_a_store_that_drops_ids_and_stamps_does_not_refold_per_add(pairs: bool) -> None:
    dropping, keeping = Echo(), Echo()
    run(history(RoleAndContentOnly(), dropping, 8_000), pairs)
    run(history(None, keeping, 8_000), pairs)
    # The same cadence as a store that keeps everything: never a fold per add.
    assert dropping.calls <= keeping.calls + 5
    assert dropping.calls <= 35
