"""The view policy through every agent-facing entry point (issue 12), under hypothesis.

``windowed``, ``build_working_transcript`` and ``pack_handoff`` have their own property
suites; this one drives the adapters a user drops into an agent: the middleware's turn
(``run_turn`` over a ``MemoryCore``, what ``wrap_model_call`` sends), the LangGraph
pre-model node and the chat history. For random valid records (single-directive tool
loops, messages far over the budget, thinking and provider shapes included), every view
passes ``request_problems``, is within budget, holds the latest directive (itself,
restated or cut, naming it), and the caller's record is unchanged. Views of Claude runs
pass langchain-anthropic's formatter and the Messages API's rules too.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage, HumanMessage

from langchain_builderforce_memory.blocks import is_tool_result_turn
from langchain_builderforce_memory.cli.inspect import inspect_messages
from langchain_builderforce_memory.messages import (
    is_stamped,
    leading_system_count,
    message_id,
    stamp_of,
)
from langchain_builderforce_memory.tokens import ApproximateTokenCounter, count_tokens
from langchain_builderforce_memory.validity import request_problems

from .helpers import agent_views, examples
from .provider_shapes import anthropic_wire
from .strategies import CLAUDE_SHAPES, thinks, valid_records

COUNTER = ApproximateTokenCounter()
PROPERTY = settings(
    max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck)
)


ENTRY_POINTS = agent_views(COUNTER)
ENTRIES = st.sampled_from(sorted(ENTRY_POINTS))
BUDGETS = st.integers(min_value=6_000, max_value=40_000)


def _holds_system(record: list[BaseMessage], budget: int) -> bool:
    """Whether ``budget`` holds the record's system prompt with room to spare (a budget
    that cannot is the documented ValueError)."""
    system = record[: leading_system_count(record)]
    return count_tokens(system, COUNTER) + 100 <= budget // 2


def _directive(record: list[BaseMessage]) -> BaseMessage | None:
    for m in reversed(record):
        if isinstance(m, HumanMessage) and not is_stamped(m) and not is_tool_result_turn(m):
            return m
    return None


def _shows(view: list[BaseMessage], wanted: BaseMessage) -> bool:
    """``wanted`` is in ``view``: itself, a copy, restated or cut (stamped with its id)."""
    wanted_id = message_id(wanted)
    head = wanted.text[:40]
    return any(
        m is wanted
        or m.content == wanted.content
        or (stamp_of(m) or {}).get("of") == wanted_id
        or (head.strip() and head in m.text)
        for m in view
    )


@PROPERTY
@given(record=valid_records(max_units=25), budget=BUDGETS, entry=ENTRIES)
def test_every_entry_point_sends_a_valid_view_in_budget_with_the_directive(
    record: list[BaseMessage], budget: int, entry: str
) -> None:
    if not _holds_system(record, budget):
        return
    before = [m.model_dump() for m in record]
    view = ENTRY_POINTS[entry](list(record), budget)
    assert [m.model_dump() for m in record] == before  # the caller's record, untouched
    assert request_problems(view) == []
    assert count_tokens(view, COUNTER) <= budget
    directive = _directive(record)
    assert directive is None or _shows(view, directive)


def _claude_records(interrupted: bool) -> st.SearchStrategy[list[BaseMessage]]:
    return valid_records(
        max_units=25, shapes=CLAUDE_SHAPES, alternating=True, interrupted=interrupted
    )


@pytest.mark.slow  # long: the main stage runs it; the Python 3.10 stage does not
@settings(PROPERTY, max_examples=300)  # cheap: few cut a running turn; the full count under CI
@given(record=_claude_records(False), budget=BUDGETS, entry=ENTRIES)
def test_every_entry_point_sends_claude_runs_what_anthropic_accepts(
    record: list[BaseMessage], budget: int, entry: str
) -> None:
    # The oracle is langchain-anthropic's own payload builder and the Messages API's
    # rules, not request_problems: a shape the package misreads (thinking recorded as
    # output_version="v1" content) passes the package's own check all the same.
    _assert_anthropic_accepts(record, budget, entry)


@pytest.mark.slow  # long: the main stage runs it; the Python 3.10 stage does not
@settings(PROPERTY, max_examples=300)  # cheap: the full count under CI too
@given(record=_claude_records(True), budget=BUDGETS, entry=ENTRIES)
def test_claude_runs_the_user_spoke_into_keep_the_loops_thinking_step(
    record: list[BaseMessage], budget: int, entry: str
) -> None:
    # A user message right after tool results goes in their user turn (langchain-anthropic
    # merges the two), so the loop that began before it is still running: its opening
    # thinking step must stay first, also once the view has folded or cut the steps after.
    _assert_anthropic_accepts(record, budget, entry)


def _assert_anthropic_accepts(record: list[BaseMessage], budget: int, entry: str) -> None:
    if not _holds_system(record, budget):
        return
    view = ENTRY_POINTS[entry](list(record), budget)
    assert anthropic_wire(view, thinking=any(thinks(m) for m in record)) == []
    assert request_problems(view) == []


@PROPERTY
@given(record=valid_records(max_units=25), budget=BUDGETS)
def test_bfmem_inspect_reports_the_window_and_the_fold_within_budget(
    record: list[BaseMessage], budget: int
) -> None:
    # What `bfmem inspect` shows for the fold is what a run would send, so it fits too.
    if not _holds_system(record, budget):
        return
    report = inspect_messages(record, budget=budget, token_counter=COUNTER)
    views = {v.view: v for v in report.views}
    assert views["window"].fits, views["window"]
    assert views["fold"].fits, views["fold"]
    # Every record message the fold column says is sent (as is, cleared or cut) is one of
    # the messages its view counts, which also holds the note and any restated directive.
    shown = sum(r.fold in ("kept", "cleared", "elided") for r in report.rows)
    assert shown <= views["fold"].messages
