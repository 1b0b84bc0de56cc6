"""Window invariants over generated transcripts (hypothesis) and the recorded runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory.facts import prefix_sums
from langchain_builderforce_memory.messages import (
    leading_system_count,
    message_id,
    role_of,
    stamp_of,
    tool_call_units,
)
from langchain_builderforce_memory.tokens import ApproximateTokenCounter, count_tokens
from langchain_builderforce_memory.transcript.window import (
    message_window_start,
    token_window_start,
    window_start,
    windowed,
)
from langchain_builderforce_memory.turns import has_thinking, opens_turn_at, thinking_span
from langchain_builderforce_memory.validity import request_problems

from .helpers import examples, floor_tokens, load_transcript, model_turns, transcript_params
from .strategies import any_records, units, valid_records

PROPERTY = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
BUDGETS = st.tuples(
    st.integers(min_value=4, max_value=120), st.integers(min_value=500, max_value=80_000)
)


def _last_user(messages: list[BaseMessage]) -> int:
    return max((i for i, m in enumerate(messages) if role_of(m) == "user"), default=-1)


def _view_or_none(
    record: list[BaseMessage], max_messages: int, max_tokens: int
) -> list[BaseMessage] | None:
    """``windowed``'s view, or ``None`` when the budget cannot hold system + one turn (it
    must then raise, naming the budget)."""
    counter = ApproximateTokenCounter()
    if floor_tokens(record, counter) > max_tokens:
        with pytest.raises(ValueError, match=f"max_tokens={max_tokens}"):
            windowed(record, max_messages=max_messages, max_tokens=max_tokens)
        return None
    try:
        return windowed(record, max_messages=max_messages, max_tokens=max_tokens)
    except ValueError as exc:
        error = str(exc)
    # Repairs can move system text into the prefix, so the record's own count can miss
    # the floor by a few tokens: the one documented error is still allowed, and its
    # numbers must say the budget really is too small.
    found = re.search(r"\((\d+) tokens\) plus one human message \((\d+) tokens\)", error)
    assert found, error
    assert f"max_tokens={max_tokens}" in error
    assert int(found.group(1)) + int(found.group(2)) > max_tokens
    return None


def _shows(view: list[BaseMessage], message: BaseMessage) -> bool:
    """``message`` is in ``view``: itself, restated, or cut (stamped with its id)."""
    wanted = message_id(message)
    return any(m is message or (stamp_of(m) or {}).get("of") == wanted for m in view)


@PROPERTY
@given(record=valid_records(), budget=BUDGETS)
def test_a_valid_record_yields_its_system_prefix_plus_a_valid_view_holding_the_latest_user_turn(
    record: list[BaseMessage], budget: tuple[int, int]
) -> None:
    max_messages, max_tokens = budget
    view = _view_or_none(record, max_messages, max_tokens)
    if view is None:
        return
    lead = leading_system_count(record)
    assert view[:lead] == record[:lead]
    assert request_problems(view) == []
    assert _shows(view, record[_last_user(record)])
    # Every message is a record message or a stamped stand-in for one (restated or cut).
    assert all(any(m is r for r in record) or stamp_of(m) is not None for m in view)


def _thinking_loop(tag: str) -> list[BaseMessage]:
    """One Claude step with thinking that reads three files, and the three results."""
    ids = [f"{tag}_{i}" for i in range(3)]
    step = AIMessage(
        [
            {"type": "thinking", "thinking": "x" * 400, "signature": "sig"},
            {"type": "text", "text": "reading"},
            *(
                {"type": "tool_use", "id": i, "name": "read_file", "input": {"path": i}}
                for i in ids
            ),
        ],
        tool_calls=[
            {"name": "read_file", "args": {"path": i}, "id": i, "type": "tool_call"} for i in ids
        ],
        response_metadata={"model_provider": "anthropic", "model_name": "claude-sonnet-4-5"},
    )
    return [step, *(ToolMessage("x" * 1_000, name="read_file", tool_call_id=i) for i in ids)]


LEFT_OUT_CASE: list[BaseMessage] = [
    HumanMessage(
        [
            {"type": "text", "text": "x"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ]
    ),
    *_thinking_loop("a"),
    *_thinking_loop("b"),
]
"""A longer hypothesis run's find: the window keeps the directive, a stamped "left out"
marker and the newest step with thinking; the marker is the least view's stand-in for the
dropped step, not a tool unit of its own."""


@PROPERTY
@given(record=valid_records(), budget=BUDGETS)
@example(record=LEFT_OUT_CASE, budget=(4, 500))
def test_the_view_always_fits_its_budget_and_message_window(
    record: list[BaseMessage], budget: tuple[int, int]
) -> None:
    max_messages, max_tokens = budget
    view = _view_or_none(record, max_messages, max_tokens)
    if view is None:
        return
    assert count_tokens(view) <= max_tokens
    rest = view[leading_system_count(view) :]
    # The note or the "left out" marker after the user turn stands in for what was cut.
    lead = 1
    while lead < len(rest) and role_of(rest[lead]) == "user" and stamp_of(rest[lead]):
        lead += 1
    # A tool unit is never split: only one whole unit after its user turn may be longer,
    # and with thinking on, the running turn's opening thinking step stays in front of it.
    # (Assistant messages in a row are one step: the thinking step may span units.)
    units = tool_call_units(rest[lead:])
    span = thinking_span(rest) if len(rest) > lead else None
    after = [u for u in units if lead + u.start >= span[1]] if span and span[0] == lead else units
    assert len(rest) <= max_messages or len(units) == 1 or len(after) <= 1


@PROPERTY
@given(
    record=valid_records(max_units=40),
    more=st.lists(units(), min_size=1, max_size=6),
    budget=BUDGETS,
)
def test_appending_messages_that_cross_no_cut_point_never_changes_the_first_message(
    record: list[BaseMessage], more: list[list[BaseMessage]], budget: tuple[int, int]
) -> None:
    max_messages, max_tokens = budget
    grown = record + [m for unit in more for m in unit]
    counter = ApproximateTokenCounter()
    lead = leading_system_count(record)
    system_tokens = count_tokens(record[:lead])
    convo, grown_convo = record[lead:], grown[lead:]
    token_budget = max(1, max_tokens - system_tokens)

    def raw_cut(c: list[BaseMessage]) -> int:
        sizes = [counter.count_message(m) for m in c]
        return max(
            message_window_start(len(c), max_messages=max_messages),
            token_window_start(sizes, budget=token_budget),
        )

    before = window_start(
        convo, max_messages=max_messages, max_tokens=token_budget, token_counter=counter
    )
    after = window_start(
        grown_convo, max_messages=max_messages, max_tokens=token_budget, token_counter=counter
    )
    # The front never moves backwards as the record grows...
    assert after >= before
    # ...and stays put while no cut point is crossed (and the latest-user cap did not bind).
    if raw_cut(convo) == raw_cut(grown_convo) and raw_cut(convo) <= _last_user(convo):
        assert after == before
        v1 = _view_or_none(record, max_messages, max_tokens)
        v2 = _view_or_none(grown, max_messages, max_tokens)
        # A window that starts at a user message a thinking loop took in also shows the
        # loop's thinking step, from before its start: the chunks do not count it, so the
        # view may pass its start before a cut point is crossed, and come back to it once
        # a new turn closes that loop (a documented front move).
        took_in = not opens_turn_at(convo, before) and any(map(has_thinking, convo))
        if v1 is not None and v2 is not None and stamp_of(v1[lead]) is None and not took_in:
            assert v1[lead] is v2[lead]


@PROPERTY
@given(record=any_records(), budget=BUDGETS)
def test_any_record_even_an_invalid_one_yields_a_valid_view(
    record: list[BaseMessage], budget: tuple[int, int]
) -> None:
    max_messages, max_tokens = budget
    snapshot = [m.model_copy(deep=True) for m in record]
    view = _view_or_none(record, max_messages, max_tokens)
    assert record == snapshot
    if view is None:
        return
    assert request_problems(view) == []
    assert count_tokens(view) <= max_tokens


@PROPERTY
@given(record=valid_records(), cut=st.integers(min_value=0, max_value=50))
def test_cached_running_totals_equal_a_fresh_count(record: list[BaseMessage], cut: int) -> None:
    counter = ApproximateTokenCounter()
    first = prefix_sums(record[: min(cut, len(record))], counter)
    grown = prefix_sums(record, counter)  # extends the cached prefix
    fresh = prefix_sums(record, ApproximateTokenCounter(cache=False))
    assert grown == fresh
    assert grown[: len(first)] == first


@pytest.mark.parametrize("path", transcript_params())
def test_every_recorded_run_replayed_turn_by_turn_yields_valid_views(path: Path) -> None:
    record = load_transcript(path)
    turns = 0
    for prefix in model_turns(record):
        view = windowed(prefix, max_tokens=8_000)
        assert request_problems(view) == [], (path.name, len(prefix))
        turns += 1
    assert turns > 1
