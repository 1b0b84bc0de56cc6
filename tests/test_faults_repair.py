"""Issue 16, reproducers 4, 8, 9: repairs are budgeted, keep real data, never anchor on stamps."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_builderforce_memory.messages import stamp
from langchain_builderforce_memory.tokens import count_tokens
from langchain_builderforce_memory.transcript.fold import build_working_transcript
from langchain_builderforce_memory.transcript.window import windowed
from langchain_builderforce_memory.validity import repair_request, request_problems

from .helpers import tool_round

DIRECTIVE = "Port the parser to Rust and keep every test green."


# --- 4. repairs are budgeted -------------------------------------------------------------


@pytest.mark.parametrize("extra", range(0, 40, 3))
def test_windowed_counts_the_inserted_user_turn_in_its_budget(extra: int) -> None:
    system = [SystemMessage("s" * 59), SystemMessage("t" * 65)]
    budget = count_tokens(system) + extra
    needed = count_tokens(repair_request(system)[0])  # with the inserted user turn
    if needed > budget:
        # Nothing to drop: the one documented error, naming the number to raise.
        with pytest.raises(ValueError, match="max_tokens"):
            windowed(system, max_tokens=budget)
        return
    view = windowed(system, max_tokens=budget)
    assert request_problems(view) == []
    assert count_tokens(view) <= budget


def test_windowed_counts_placeholder_results_and_drops_a_turn_to_fit_them() -> None:
    unanswered = AIMessage(
        "", tool_calls=[{"name": f"t{k}", "args": {}, "id": f"lost{k}"} for k in range(6)]
    )
    record: list[BaseMessage] = [
        HumanMessage("first question"),
        unanswered,  # six calls never answered: six placeholders in the view
        HumanMessage(DIRECTIVE),
        AIMessage("on it"),
    ]
    budget = count_tokens(record) + 5
    view = windowed(record, max_tokens=budget)
    assert request_problems(view) == []
    assert count_tokens(view) <= budget
    assert any(m.content == DIRECTIVE for m in view)


# --- 8. a result separated from its call by a user message is moved back --------------


def interjected() -> list[BaseMessage]:
    call = AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "a.py"}, "id": "c1"}])
    return [
        HumanMessage("read a.py"),
        call,
        HumanMessage("also check README"),
        ToolMessage("contents of a.py: def main(): ...", tool_call_id="c1"),
    ]


def test_an_interjected_user_message_does_not_hide_the_tool_result() -> None:
    record = interjected()
    fixed, repairs = repair_request(record)
    assert request_problems(fixed) == []
    assert [m.type for m in fixed] == ["human", "ai", "tool", "human"]
    assert fixed[2] is record[3]  # the real result, not a placeholder
    assert not any("no result was recorded" in str(m.content) for m in fixed)
    assert any("moved tool result 'c1'" in r for r in repairs)
    assert record == interjected()  # the caller's list is untouched


def test_the_window_and_the_fold_keep_the_moved_result() -> None:
    record = interjected()
    for view in (
        windowed(record),
        build_working_transcript(record).messages,
    ):
        assert request_problems(view) == []
        assert any(m.content == "contents of a.py: def main(): ..." for m in view)


# --- 9. a stamped run-state message is never the directive ------------------------------


def with_run_state() -> list[BaseMessage]:
    record: list[BaseMessage] = [HumanMessage(DIRECTIVE)]
    for i in range(30):
        record += tool_round(i, "r" * 2_000)
        if i % 10 == 9:
            record.append(stamp(HumanMessage(f"<run-state> step {i}"), "volatile_tail"))
    return record


def test_windowed_never_anchors_on_a_stamped_run_state_message() -> None:
    view = windowed(with_run_state(), max_tokens=8_000)
    assert request_problems(view) == []
    assert any(m.content == DIRECTIVE for m in view)


def test_the_folds_window_fallback_keeps_the_real_directive() -> None:
    out = build_working_transcript(
        with_run_state(), max_tokens=8_000, clear_tool_results=False
    )  # no summarizer, no clear tier: the window
    assert out.mode == "window"
    assert any(m.content == DIRECTIVE for m in out.messages)
