"""A call's long argument values give way in the view: an edit's at the clear tier, any
call's before the directive when a view must be cut.

A coding agent's largest message is often a call, not a result: the whole file a
``Write`` created, a patch. Before, every tier kept calls whole: in a recorded Claude Code
run at 8k the plan the run carried out was cut to a stub beside one 11k-character
``Write``, and old writes stayed whole in every view until a fold. Every provider shape of
a call is cut alike, and stays valid.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_builderforce_memory import build_working_transcript, request_problems, windowed
from langchain_builderforce_memory.messages import is_stamped, stamp_of
from langchain_builderforce_memory.tokens import ApproximateTokenCounter, count_tokens
from langchain_builderforce_memory.transcript.call_args import SHORT, longest_value, with_cut_args
from langchain_builderforce_memory.transcript.clear import apply_clear
from langchain_builderforce_memory.transcript.elide import elide_message, fit_to_budget
from langchain_builderforce_memory.transcript.results import CLEARED_KIND, tool_results

from .helpers import (
    agent_views,
    load_transcript,
    model_turns,
    read_write_loop,
    transcript_files,
    working_turn,
)
from .provider_shapes import anthropic_wire, openai_chat_wire, openai_responses_wire

COUNTER = ApproximateTokenCounter()
BODY = "".join(f"func helper{i}(x int) int {{ return x * {i} }}\n" for i in range(900))
PATH = "pkg/cmd/watch.go"
DIRECTIVE = "Implement the following plan:\n" + "".join(
    f"- step {i}: move helper{i} into {PATH} and keep its callers building\n" for i in range(60)
)
ARGS = {"file_path": PATH, "content": BODY}


def _plain() -> AIMessage:
    return AIMessage("Writing the file.", tool_calls=[{"name": "Write", "args": ARGS, "id": "c1"}])


def _anthropic() -> AIMessage:
    block = {"type": "tool_use", "id": "c1", "name": "Write", "input": ARGS}
    return AIMessage(
        [{"type": "text", "text": "Writing the file."}, block],
        tool_calls=[{"name": "Write", "args": ARGS, "id": "c1"}],
    )


def _anthropic_native() -> AIMessage:
    """A record kept in Anthropic's own shape: the call only as a ``tool_use`` block."""
    block = {"type": "tool_use", "id": "c1", "name": "Write", "input": ARGS}
    return AIMessage([{"type": "text", "text": "Writing the file."}, block])


def _openai_chat() -> AIMessage:
    legacy = {
        "id": "c1",
        "type": "function",
        "function": {"name": "Write", "arguments": json.dumps(ARGS)},
    }
    return AIMessage(
        "Writing the file.",
        tool_calls=[{"name": "Write", "args": ARGS, "id": "c1"}],
        additional_kwargs={"tool_calls": [legacy]},
    )


def _openai_responses() -> AIMessage:
    block = {
        "type": "function_call",
        "call_id": "c1",
        "name": "Write",
        "arguments": json.dumps(ARGS),
        "id": "fc_1",
    }
    return AIMessage(
        [{"type": "text", "text": "Writing the file."}, block],
        tool_calls=[{"name": "Write", "args": ARGS, "id": "c1"}],
    )


SHAPES: dict[str, Callable[[], AIMessage]] = {
    "tool_calls": _plain,
    "anthropic": _anthropic,
    "openai chat": _openai_chat,
    "openai responses": _openai_responses,
}


def _view(call: AIMessage) -> list[BaseMessage]:
    return [
        SystemMessage("You are a coding agent."),
        HumanMessage(DIRECTIVE),
        call,
        ToolMessage(f"File created successfully at: {PATH}", tool_call_id="c1"),
    ]


def _budget(view: list[BaseMessage]) -> int:
    """Room for the directive whole and about a tenth of the written file."""
    return count_tokens(view, COUNTER) - 9 * COUNTER.count_message(view[2]) // 10


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_written_file_gives_way_and_the_directive_stays_whole(shape: str) -> None:
    view = _view(SHAPES[shape]())
    budget = _budget(view)
    fitted, report = fit_to_budget(view, budget, COUNTER)
    assert count_tokens(fitted, COUNTER) <= budget
    assert request_problems(fitted) == []
    assert fitted[1].content == DIRECTIVE  # before: cut to fit beside the whole call
    call = fitted[2]
    assert isinstance(call, AIMessage)
    args = call.tool_calls[0]["args"]
    assert args["file_path"] == PATH
    assert call.tool_calls[0]["id"] == "c1"
    assert "characters cut here in this view" in args["content"]
    assert args["content"].startswith(BODY[:200])
    assert args["content"].endswith(BODY[-100:])
    assert "Writing the file." in call.text
    assert report.elided_messages == 1


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_representation_of_the_call_is_cut_alike_and_stays_json(shape: str) -> None:
    cut = with_cut_args(SHAPES[shape](), 300)
    args = cut.tool_calls[0]["args"]
    for block in cut.content if isinstance(cut.content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            assert block["input"] == args
        if isinstance(block, dict) and block.get("type") == "function_call":
            assert json.loads(block["arguments"]) == args
    for legacy in cut.additional_kwargs.get("tool_calls", []):
        assert json.loads(legacy["function"]["arguments"]) == args
    assert len(args["content"]) < 500
    assert args["file_path"] == PATH


def test_a_custom_tool_call_is_cut_where_it_is_sent() -> None:
    # langchain-openai sends the custom_tool_call block, not its tool_calls entry, and the
    # count skips the block as a copy of that entry: both must be cut alike.
    block = {"type": "custom_tool_call", "call_id": "c1", "name": "run_python", "input": BODY}
    call = AIMessage(
        [block], tool_calls=[{"name": "run_python", "args": {"__arg1": BODY}, "id": "c1"}]
    )
    cut = with_cut_args(call, 300)
    assert isinstance(cut.content[0], dict)
    assert cut.content[0]["input"] == cut.tool_calls[0]["args"]["__arg1"]
    assert len(cut.content[0]["input"]) < 500


@pytest.mark.parametrize(
    "wire", [anthropic_wire, openai_chat_wire, openai_responses_wire], ids=lambda w: w.__name__
)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_cut_call_passes_each_providers_own_formatter(
    shape: str, wire: Callable[[list[BaseMessage]], list[str]]
) -> None:
    view = _view(SHAPES[shape]())
    fitted, _ = fit_to_budget(view, _budget(view), COUNTER)
    assert wire(fitted) == []


def test_a_call_only_in_anthropic_blocks_is_cut_too() -> None:
    view = _view(_anthropic_native())
    budget = _budget(view)
    fitted, _ = fit_to_budget(view, budget, COUNTER)
    assert count_tokens(fitted, COUNTER) <= budget
    assert fitted[1].content == DIRECTIVE
    block = next(b for b in fitted[2].content if isinstance(b, dict) and b["type"] == "tool_use")
    assert block["id"] == "c1"
    assert block["input"]["file_path"] == PATH
    assert "characters cut here" in block["input"]["content"]


def test_short_values_and_the_record_are_never_touched() -> None:
    call = _plain()
    before = call.model_dump()
    small = elide_message(call, 200, COUNTER)
    assert call.model_dump() == before
    assert small.tool_calls[0]["args"]["file_path"] == PATH  # type: ignore[attr-defined]
    assert COUNTER.count_message(small) <= 200


@pytest.mark.parametrize("entry", ["windowed", "build_working_transcript"])
def test_the_entry_points_keep_the_directive_beside_a_big_write(entry: str) -> None:
    record: list[BaseMessage] = [HumanMessage(DIRECTIVE), _plain()]
    record.append(ToolMessage("File created", tool_call_id="c1"))
    budget = _budget([SystemMessage(""), *record]) + 200
    if entry == "windowed":
        view = windowed(record, max_tokens=budget)
    else:
        view = build_working_transcript(
            record, summarizer=lambda p: "note", max_tokens=budget
        ).messages
    assert request_problems(view) == []
    assert count_tokens(view, COUNTER) <= budget
    assert any(m.content == DIRECTIVE for m in view)
    # Before, the running call was dropped whole (with its answer) to keep the directive.
    assert any(isinstance(m, AIMessage) and m.tool_calls for m in view)


@pytest.mark.slow
def test_the_claude_code_run_keeps_its_plan_in_every_request_at_8k() -> None:
    """The run whose last turns cut the plan to a stub beside its ``Write`` of watch.go."""
    path = next(p for p in transcript_files() if "move-watch-command" in p.stem)
    record = load_transcript(path)
    state: dict[str, object] | None = None
    for prefix in model_turns(record):
        out = build_working_transcript(
            prefix, memo=state, summarizer=lambda p: "Progress noted.", max_tokens=8_000
        )
        state = out.state.to_dict()
        directive = next(m for m in reversed(prefix) if isinstance(m, HumanMessage))
        assert any(directive.text in m.text for m in out.messages), len(prefix)


# ------------------------------------------------------------ the clear tier, on edits


def _writes(view: list[BaseMessage]) -> list[tuple[bool, BaseMessage]]:
    """Each write call in ``view``, with whether its content is cut."""
    return [
        ("characters cut here" in m.tool_calls[0]["args"]["content"], m)
        for m in view
        if isinstance(m, AIMessage) and m.tool_calls and m.tool_calls[0]["name"] == "write_file"
    ]


@pytest.mark.parametrize("shape", ["tool_calls", "anthropic"])
def test_the_clear_tier_cuts_old_writes_and_keeps_the_paths(shape: str) -> None:
    record = read_write_loop(16, shape=shape)
    out = working_turn(record, None, budget=48_000)
    view = out.messages
    assert out.memo is None  # the clear tier alone, no fold
    writes = _writes(view)
    cut = [m for was_cut, m in writes if was_cut]
    assert cut  # before: every write kept whole, so the view folded or dropped more
    assert not writes[-1][0]  # the newest, in the protected tail, stays whole
    for m in cut:
        assert isinstance(m, AIMessage)
        assert m.tool_calls[0]["args"]["path"].startswith("src/m")
        assert (stamp_of(m) or {}).get("kind") == "cleared"
        for block in m.content if isinstance(m.content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                assert block["input"] == m.tool_calls[0]["args"]
    assert request_problems(view) == []
    assert anthropic_wire(view) == []
    assert count_tokens(view, COUNTER) <= 48_000


def _entry_points(
    **options: bool,
) -> dict[str, Callable[[list[BaseMessage], int], list[BaseMessage]]]:
    return {
        **agent_views(COUNTER, **options),
        "build_working_transcript": lambda record, budget: (
            working_turn(record, None, budget=budget, **options).messages
        ),
    }


@pytest.mark.parametrize("cut", [True, False])
@pytest.mark.parametrize("entry", ["build_working_transcript", "history", "middleware", "node"])
def test_clear_edit_inputs_decides_whether_cleared_writes_are_cut(entry: str, cut: bool) -> None:
    """``False`` is the opt-out LangChain's ``ClearToolUsesEdit`` users expect (its
    default): reads are still cleared, every call stays whole."""
    record = read_write_loop(16, read_lines=3_000, written_lines=100)
    view = _entry_points(clear_edit_inputs=cut)[entry](list(record), 60_000)
    assert any(was_cut for was_cut, _ in _writes(view)) == cut  # before: always cut
    assert any(is_stamped(m, CLEARED_KIND) for m in view if isinstance(m, ToolMessage))
    assert request_problems(view) == []
    assert count_tokens(view, COUNTER) <= 60_000


@pytest.mark.parametrize("value", [None, "no", 0])
def test_clear_edit_inputs_must_be_a_bool(value: object) -> None:
    with pytest.raises(ValueError, match="clear_edit_inputs must be True or False"):
        build_working_transcript([HumanMessage("hi")], clear_edit_inputs=value)  # type: ignore[arg-type]


def test_cut_writes_hold_their_bytes_from_turn_to_turn() -> None:
    """The cut is part of the clear tier's horizon: the prefix stays while it holds."""
    record = read_write_loop(16)
    first = working_turn(record, None, budget=48_000)
    grown = [*record, AIMessage("checking", id="x1"), HumanMessage("and the docs?", id="u1")]
    assert any(was_cut for was_cut, _ in _writes(first.messages))
    second = working_turn(grown, first.state.to_dict(), budget=48_000)
    assert second.messages[: len(first.messages)] == first.messages


def test_the_cleared_tokens_count_the_cut_calls() -> None:
    record = read_write_loop(16)
    results = tool_results(record, COUNTER)
    writes = [r for r in results if r.name == "write_file"]
    assert all(r.kind == "edit" and r.call_saving > 1_000 for r in writes)
    assert all(not r.shown_as_placeholder for r in writes)  # "wrote ..." is short
    cleared, tokens = apply_clear(record, writes[:3])
    assert tokens == sum(r.call_saving for r in writes[:3])
    assert count_tokens(cleared, COUNTER) <= count_tokens(record, COUNTER) - tokens + 300
    assert [m.content for m in cleared if isinstance(m, ToolMessage)] == [
        m.content for m in record if isinstance(m, ToolMessage)
    ]


# ------------------------------------------------------- arguments nested past the limit


def _deep(levels: int) -> object:
    value: object = "x" * 2_000
    for _ in range(levels):
        value = [value]
    return value


ENTRY_POINTS = {
    **agent_views(COUNTER),
    "windowed": lambda record, budget: windowed(record, max_tokens=budget),
    "build_working_transcript": lambda record, budget: (
        build_working_transcript(record, summarizer=lambda p: "note", max_tokens=budget).messages
    ),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_arguments_nested_past_the_recursion_limit_never_raise(entry: str) -> None:
    """A model can be made to write arguments nested deeper than ``json.dumps`` goes."""
    args = {"data": _deep(3_000), "content": "y" * 40_000}
    record: list[BaseMessage] = [HumanMessage("Store the tree.", id="u0")]
    for i in range(3):
        record += [
            AIMessage("", tool_calls=[{"name": "store", "args": args, "id": f"c{i}"}], id=f"a{i}"),
            ToolMessage("stored", tool_call_id=f"c{i}", id=f"t{i}"),
        ]
    view = ENTRY_POINTS[entry](list(record), 6_000)  # before: RecursionError
    assert request_problems(view) == []
    assert count_tokens(view, COUNTER) <= 6_000
    assert any(m.text == "Store the tree." for m in view)


@pytest.mark.parametrize("limit", [1_000, 100_000])
def test_a_deep_value_gets_the_same_text_whatever_the_recursion_limit(limit: int) -> None:
    """Before: the text (and so the token count) depended on ``sys.getrecursionlimit()``,
    which a test runner or a library may raise, and the doctest failed in some orders."""
    import sys

    from langchain_builderforce_memory.jsontext import DEEPEST, json_text

    before = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        assert json_text({"k": _deep(5_000)}) == "k " + "x" * 2_000
        assert json_text(_deep(DEEPEST)).startswith("[" * DEEPEST + '"x')  # up to it: JSON
    finally:
        sys.setrecursionlimit(before)


# ------------------------------------------------------------------ any arguments, any cut

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=400),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _shape(value: object) -> object:
    """``value`` with every long string replaced by a token: what a cut must keep."""
    if isinstance(value, str):
        return "<long>" if len(value) > SHORT or "characters cut here" in value else value
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return value


@settings(max_examples=150, deadline=None)  # cheap: the full count under CI too
@given(args=st.dictionaries(st.text(max_size=8), JSON, max_size=4), keep=st.integers(0, 500))
def test_a_cut_keeps_every_key_short_value_and_id_and_stays_json(
    args: dict[str, object], keep: int
) -> None:
    message = AIMessage(
        [{"type": "function_call", "call_id": "c1", "name": "t", "arguments": json.dumps(args)}],
        tool_calls=[{"name": "t", "args": args, "id": "c1"}],
    )
    cut = with_cut_args(message, keep)
    assert cut.tool_calls[0]["id"] == "c1"
    assert _shape(cut.tool_calls[0]["args"]) == _shape(args)
    block = cut.content[0]
    assert isinstance(block, dict)
    assert json.loads(block["arguments"]) == cut.tool_calls[0]["args"]
    assert longest_value(cut) <= max(SHORT, keep + 120)  # the kept characters and a marker
    assert longest_value(cut) <= longest_value(message)  # a cut never lengthens a value


@pytest.mark.parametrize(("keep", "shortens"), [(0, True), (100, True), (130, False), (159, False)])
def test_a_cut_that_would_not_shorten_a_value_keeps_it_whole(keep: int, shortens: bool) -> None:
    """A 165-character value: ``keep`` plus the ~45-character marker fits under it only for
    a small ``keep``; otherwise the value stays whole (before: it came out longer)."""
    value = "v" * (SHORT + 5)
    message = AIMessage("", tool_calls=[{"name": "t", "args": {"v": value}, "id": "c1"}])
    shown = with_cut_args(message, keep).tool_calls[0]["args"]["v"]
    if shortens:
        assert "characters cut here" in shown
        assert len(shown) < len(value)
    else:
        assert shown == value
