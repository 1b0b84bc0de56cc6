"""Anthropic-native records: calls as ``tool_use`` blocks with no ``tool_calls``, results as
user turns of ``tool_result`` blocks (what ``convert_to_messages`` makes of Messages-API
dicts). The clear tier clears such a turn and a fold re-attaches its read, as it does for
``ToolMessage`` results, so such a run folds no more often than its LangChain shape (before,
only the fold could keep it in budget: ``docs/benchmarks.md`` has the recorded runs)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_builderforce_memory.agents.state import read_run_memory
from langchain_builderforce_memory.callbacks import ToolObservationMapper
from langchain_builderforce_memory.messages import stamp_of
from langchain_builderforce_memory.testing import coding_transcript
from langchain_builderforce_memory.tokens import count_tokens
from langchain_builderforce_memory.transcript.fold import (
    WorkingTranscript,
    build_working_transcript,
)
from langchain_builderforce_memory.validity import request_problems

from .helpers import anthropic_native, read_loop, read_write_loop, replay_turns
from .provider_shapes import anthropic_wire
from .strategies import valid_records


def _replay(
    record: list[BaseMessage], max_tokens: int, **options: int | bool
) -> list[WorkingTranscript]:
    return [turn for turn, _ in replay_turns(record, max_tokens, **options)]


@pytest.mark.parametrize(
    "record",
    [read_loop(60, 7_500), coding_transcript(turns=120, directives=2)],
    ids=["reads", "coding"],
)
def test_a_native_record_folds_no_more_often_than_its_langchain_shape(
    record: list[BaseMessage],
) -> None:
    langchain = sum(t.mode == "folded" for t in _replay(record, 32_000))
    turns = _replay(anthropic_native(record), 32_000)
    assert sum(t.mode == "folded" for t in turns) <= langchain
    for turn in turns:
        assert count_tokens(turn.messages) <= 32_000
        assert request_problems(turn.messages) == []
        assert anthropic_wire(turn.messages) == []


def _read(call_id: str, path: str) -> dict[str, object]:
    return {"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": path}}


def _answer(call_id: str, text: str) -> dict[str, object]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": text}


def test_a_cleared_native_turn_shows_each_answer_as_its_own_placeholder() -> None:
    record: list[BaseMessage] = [
        HumanMessage("Port the parser."),
        AIMessage([_read("a", "a.py"), _read("b", "b.py")]),
        HumanMessage([_answer("a", "A" * 12_000), _answer("b", "B" * 12_000)]),
        AIMessage([_read("c", "c.py")]),
        HumanMessage([_answer("c", "C" * 12_000)]),
        AIMessage([_read("d", "d.py")]),
        HumanMessage([_answer("d", "D" * 12_000)]),
    ]
    view = build_working_transcript(record, max_tokens=5_000).messages
    cleared = [m for m in view if (stamp_of(m) or {}).get("kind") == "cleared"]
    assert cleared, [m.type for m in view]
    first = cleared[0].content
    assert isinstance(first, list)
    assert [b["tool_use_id"] for b in first] == ["a", "b"]
    for block in first:  # its tool_use block, whole and just above, names the file
        placeholder = r"\[cleared from this view: read_file returned \d+ tokens;"
        assert re.match(placeholder, block["content"]), block["content"]
    assert count_tokens(view) <= 5_000
    assert request_problems(view) == []
    assert anthropic_wire(view) == []
    assert record[2].content[0]["content"] == "A" * 12_000  # the record is untouched


def test_a_fold_re_attaches_a_native_read_verbatim() -> None:
    record = anthropic_native(read_loop(40, 1_500, files=8))
    turns = _replay(record, 16_000, clear_tool_results=False, restore_tokens=6_000)
    restored = [
        m for t in turns for m in t.messages if (stamp_of(m) or {}).get("kind") == "restored"
    ]
    assert restored
    outputs = {
        b["content"]
        for m in record
        if isinstance(m.content, list)
        for b in m.content
        if isinstance(b, dict) and b.get("type") == "tool_result"
    }
    for m in restored:
        head, body = m.text.split("\n", 1)
        assert head.startswith("[re-attached: the latest output of read_file(")
        assert body in outputs


def test_the_clear_tier_cuts_an_old_native_write_and_keeps_its_path() -> None:
    record = anthropic_native(read_write_loop(16))
    out = build_working_transcript(record, max_tokens=48_000)
    assert out.memo is None  # the clear tier alone, no fold
    writes = [
        (m, block["input"])
        for m in out.messages
        if isinstance(m, AIMessage) and isinstance(m.content, list)
        for block in m.content
        if isinstance(block, dict) and block.get("name") == "write_file"
    ]
    cut = [(m, args) for m, args in writes if "characters cut here" in args["content"]]
    assert cut  # before: each write's tool_use block stayed whole
    assert "characters cut here" not in writes[-1][1]["content"]  # the newest stays whole
    for m, args in cut:
        assert args["path"].startswith("src/m")
        assert (stamp_of(m) or {}).get("kind") == "cleared"
    assert count_tokens(out.messages) <= 48_000
    assert request_problems(out.messages) == []
    assert anthropic_wire(out.messages) == []


# Cheap examples: the full count under CI too.
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=valid_records())
def test_any_record_in_the_native_shape_gives_the_same_working_memory(
    record: list[BaseMessage],
) -> None:
    def memory(messages: list[BaseMessage]) -> object:
        return read_run_memory(messages, {}, ToolObservationMapper()).state["snapshot"]

    assert memory(anthropic_native(record)) == memory(record)
