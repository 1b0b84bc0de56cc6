"""The user speaks while a Claude tool loop runs, with extended thinking on.

A user message right after tool results (the user typed while the agent worked, or a tool
with ``return_direct`` ended the run) goes in the same user turn as those results:
langchain-anthropic merges the two. Anthropic then reads the loop as still running, and
with thinking on it must open with the thinking step it began with, although the user has
spoken since. Every entry point, at budgets that fold or cut the loop, must keep that step
first: each view passes langchain-anthropic's payload builder and the Messages API's rules
(``anthropic_wire``), not only the package's own ``request_problems``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_builderforce_memory.facts import RecordFacts
from langchain_builderforce_memory.handoff import pack_handoff
from langchain_builderforce_memory.tokens import ApproximateTokenCounter, count_tokens
from langchain_builderforce_memory.transcript.window import windowed
from langchain_builderforce_memory.turns import current_turn_start, thinking_problems
from langchain_builderforce_memory.validity import repair_request, request_problems

from .helpers import ScriptedSummarizer, agent_views
from .provider_shapes import anthropic_wire
from .strategies import thinks

COUNTER = ApproximateTokenCounter()
CLAUDE = {"model_provider": "anthropic", "model_name": "claude-sonnet-4-5"}
LATE = "Also check the lexer."


def _step(i: int, *, thinks: bool) -> list[BaseMessage]:
    """One step of the loop: Claude (thinking only on the loop's first step, as without
    interleaved thinking) reads a file, and its result."""
    call = {"name": "read_file", "args": {"path": f"src/f{i}.py"}, "id": f"c{i}"}
    blocks: list[str | dict[str, object]] = (
        [{"type": "thinking", "thinking": "plan " * 50, "signature": "sig"}] if thinks else []
    )
    blocks += [
        {"type": "text", "text": f"Reading src/f{i}.py."},
        {"type": "tool_use", "id": f"c{i}", "name": "read_file", "input": call["args"]},
    ]
    result = ToolMessage(f"# src/f{i}.py\n" + "x = 1\n" * 200, tool_call_id=f"c{i}")
    return [AIMessage(blocks, tool_calls=[call], response_metadata=CLAUDE), result]


def _record(steps: int, after: int) -> list[BaseMessage]:
    """``steps`` steps under one instruction, the user's late message, ``after`` more."""
    out: list[BaseMessage] = [SystemMessage("You fix bugs."), HumanMessage("Fix the parser.")]
    for i in range(steps):
        out += _step(i, thinks=i == 0)
    out.append(HumanMessage(LATE))
    for i in range(steps, steps + after):
        out += _step(i, thinks=False)
    return out


def _entries() -> dict[str, Callable[[list[BaseMessage], int], list[BaseMessage]]]:
    entries = agent_views(COUNTER)
    entries["windowed"] = lambda record, budget: windowed(
        record, max_messages=40, max_tokens=budget, token_counter=COUNTER
    )
    entries["pack_handoff"] = lambda record, budget: (
        pack_handoff(
            record,
            target_context_tokens=budget,
            reserve_output_tokens=500,
            summarizer=ScriptedSummarizer(),
            token_counter=COUNTER,
        ).messages
    )
    return entries


ENTRIES = _entries()


@pytest.mark.parametrize("after", [0, 1, 3])
@pytest.mark.parametrize("budget", [3_000, 6_000, 12_000, 24_000])
@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_a_loop_the_user_spoke_into_still_opens_with_its_thinking_step(
    entry: str, budget: int, after: int
) -> None:
    record = _record(60, after)
    view = ENTRIES[entry](list(record), budget)
    assert anthropic_wire(view, thinking=True) == []
    assert request_problems(view, thinking=True) == []
    assert any(LATE in m.text for m in view if isinstance(m, HumanMessage))
    assert count_tokens(view, COUNTER) <= budget


def test_a_user_message_right_after_tool_results_is_in_the_running_turn() -> None:
    record = _record(3, 1)[1:]
    late = next(i for i, m in enumerate(record) if m.text == LATE)
    assert current_turn_start(record) == 0
    facts = RecordFacts(COUNTER)
    facts.sync(record)
    assert facts.turn_start == 0
    assert facts.thinking == (1, 3)
    # The loop's thinking step folded away: the package's own check reports it, as
    # Anthropic would.
    cut = [record[0], *record[late - 2 :]]
    assert thinking_problems(cut, thinking=True)
    assert anthropic_wire(cut, thinking=True)


def test_the_repair_for_thinking_turned_on_mid_loop_starts_a_turn_anthropic_sees() -> None:
    # The loop opened without thinking and a later step has it: the repair starts a new
    # turn at that step. A user message right after the results would join their turn, so
    # a stamped assistant message closes the old turn first.
    record = [HumanMessage("Fix the parser."), *_step(0, thinks=False), *_step(1, thinks=True)]
    assert anthropic_wire(record, thinking=True)
    repaired, repairs = repair_request(record)
    assert repairs
    assert anthropic_wire(repaired, thinking=True) == []
    assert request_problems(repaired, thinking=True) == []


def _split_record(thought_words: int) -> list[BaseMessage]:
    """A finished instruction, then a new one whose loop opens with its thinking step as
    a message of its own before the call, as Claude Code's transcript writes each content
    block: a long thought, then the call in the next message."""
    out: list[BaseMessage] = [SystemMessage("You fix bugs."), HumanMessage("Fix the parser.")]
    for i in range(30):
        call = {"name": "read_file", "args": {"path": f"src/p{i}.py"}, "id": f"p{i}"}
        out += [
            AIMessage("", tool_calls=[call], response_metadata=CLAUDE),
            ToolMessage("x = 1\n" * 150, tool_call_id=f"p{i}"),
        ]
    out += [AIMessage("Parser fixed.", response_metadata=CLAUDE), HumanMessage("Fix the lexer.")]
    thought = {"type": "thinking", "thinking": "plan " * thought_words, "signature": "sig"}
    out.append(AIMessage([thought], response_metadata=CLAUDE))
    return [*out, *_step(0, thinks=False)]


@pytest.mark.parametrize("budget", [6_000, 12_000])
@pytest.mark.parametrize("entry", ["history", "middleware", "node"])
def test_a_tail_with_room_for_the_call_but_not_its_thought_keeps_the_thought(
    entry: str, budget: int
) -> None:
    # The fold's tail had room for the loop's call but not for the long thought before it,
    # and started between the two (one assistant message on the wire). The thought went
    # to the note and the loop opened with the call: Anthropic rejects that with thinking
    # on. The part of the step before the tail is now pinned ahead of it.
    record = _split_record(3_000)
    view = ENTRIES[entry](list(record), budget)
    assert request_problems(view, thinking=True) == []
    assert any(thinks(m) for m in view)
    assert count_tokens(view, COUNTER) <= budget


def _opening_over_budget(shape: str) -> list[BaseMessage]:
    """A loop whose opening step's thought (3.5k tokens) is over a 3k budget by itself:
    written as a message of its own (``"split"``), or in the call's message with two more
    steps after it (``"joined"``, langchain-anthropic's shape)."""
    if shape == "split":
        return _split_record(3_000)
    record = _split_record(3_000)[:-3]
    thought = {"type": "thinking", "thinking": "plan " * 3_000, "signature": "sig"}
    first = _step(0, thinks=False)
    opening = first[0].model_copy(update={"content": [thought, *first[0].content]})
    return [*record, opening, first[1], *_step(1, thinks=False), *_step(2, thinks=False)]


@pytest.mark.parametrize("shape", ["split", "joined"])
@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_a_loop_whose_thought_is_over_the_budget_is_left_out_whole(entry: str, shape: str) -> None:
    # Whole units are dropped last, the running loop's opening step after every other;
    # when even it went, the newest unit stayed, and the loop opened with a call and no
    # thinking, which Anthropic rejects with thinking on. Now the rest of the loop goes
    # too: the view ends at the request and the notice says what was left out.
    view = ENTRIES[entry](list(_opening_over_budget(shape)), 3_000)
    assert request_problems(view, thinking=True) == []
    assert count_tokens(view, COUNTER) <= 3_000
    assert any(m.text == "Fix the lexer." for m in view)
    assert not any(isinstance(m, AIMessage | ToolMessage) for m in view[-2:])
