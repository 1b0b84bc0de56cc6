"""An assistant message holds at most 128 tool calls on OpenAI ("Invalid
'messages[2].tool_calls': array too long", openai/openai-dotnet#317): a view sends a wider
one in parts, each followed by its results, for an OpenAI model."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langchain_builderforce_memory import CompactingChatMessageHistory, request_problems
from langchain_builderforce_memory.calls_limit import MAX_MESSAGE_TOOL_CALLS, within_calls_limit
from langchain_builderforce_memory.testing import ScriptedChatModel
from langchain_builderforce_memory.tokens import count_tokens, resolve_token_counter

from .helpers import AGENT_KINDS, build_agent, examples, typed_model
from .provider_shapes import openai_chat_wire


def _wide(calls: int, invalid: int = 0, *, text: str = "Reading them all.") -> list[BaseMessage]:
    ids = [f"c{n}" for n in range(calls)]
    bad = [{"name": "ls", "args": "{oops", "id": f"x{n}", "error": None} for n in range(invalid)]
    call = AIMessage(
        text,
        tool_calls=[{"name": "ls", "args": {"n": n}, "id": i} for n, i in enumerate(ids)],
        invalid_tool_calls=bad,
        id="a0",
    )
    results = [ToolMessage(f"out {i}", tool_call_id=i) for i in ids]
    results += [
        ToolMessage("bad args", tool_call_id=f"x{n}", status="error") for n in range(invalid)
    ]
    return [HumanMessage("List every package.", id="u0"), call, *results[::-1]]


def _calls(view: list[BaseMessage]) -> list[int]:
    return [len(m.tool_calls) + len(m.invalid_tool_calls) for m in view if isinstance(m, AIMessage)]


@pytest.mark.parametrize(
    ("calls", "invalid", "parts"),
    [(128, 0, [128]), (129, 0, [128, 1]), (300, 0, [128, 128, 44]), (200, 3, [128, 75])],
)
def test_a_message_of_more_than_128_calls_goes_in_parts_each_with_its_results(
    calls: int, invalid: int, parts: list[int]
) -> None:
    record = _wide(calls, invalid)
    before = copy.deepcopy(record)
    view = within_calls_limit(record)
    assert _calls(view) == parts
    assert openai_chat_wire(view) == []
    assert request_problems(view) == []
    assert record == before
    assert sorted(m.tool_call_id for m in view if isinstance(m, ToolMessage)) == sorted(
        m.tool_call_id for m in record if isinstance(m, ToolMessage)
    )
    assert view[1].content == record[1].content  # the text stays with the first part
    if parts == [calls]:
        assert all(a is b for a, b in zip(view, record, strict=True))


def test_calls_carried_as_content_blocks_are_another_provider_s_shape_left_alone() -> None:
    record = _wide(130)
    uses = [
        {"type": "tool_use", "id": c["id"], "name": "ls", "input": {}} for c in record[1].tool_calls
    ]
    record[1] = record[1].model_copy(update={"content": uses})
    assert within_calls_limit(record) == record


@st.composite
def _wide_runs(draw: st.DrawFn) -> list[BaseMessage]:
    record: list[BaseMessage] = [HumanMessage("Go.", id="u0")]
    for t in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, 300))
        ids = [f"c{t}-{k}" for k in range(n)]
        record.append(
            AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": i} for i in ids], id=f"a{t}")
        )
        record += [ToolMessage("ok", tool_call_id=i) for i in draw(st.permutations(ids))]
    return record


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=_wide_runs())
def test_any_turns_of_calls_go_in_parts_openai_takes(record: list[BaseMessage]) -> None:
    view = within_calls_limit(record)
    assert openai_chat_wire(view) == []
    assert request_problems(view) == []
    assert all(n <= MAX_MESSAGE_TOOL_CALLS for n in _calls(view))
    assert sum(_calls(view)) == sum(_calls(record))


@pytest.mark.parametrize("openai", [True, False], ids=["OpenAI", "other model"])
@pytest.mark.parametrize("kind", AGENT_KINDS)
def test_agents_send_200_parallel_calls_in_parts_only_to_openai(kind: str, openai: bool) -> None:
    @tool
    def ls(n: int) -> str:
        """List a directory."""
        return f"dir {n}: 3 files"

    calls: list[dict[str, Any]] = [
        {"name": "ls", "args": {"n": n}, "id": f"c{n}"} for n in range(200)
    ]
    script = [AIMessage("", tool_calls=calls), "done"]
    model = typed_model(script, "openai-chat") if openai else ScriptedChatModel(script=script)
    agent = build_agent(kind, model, [ls], checkpointer=InMemorySaver())
    agent.invoke(
        {"messages": [HumanMessage("List every directory.")]}, {"configurable": {"thread_id": "t"}}
    )
    sent = model.requests[-1]
    assert _calls(sent) == ([128, 72] if openai else [200])
    assert request_problems(sent) == []


@pytest.mark.parametrize("openai", [True, False], ids=["OpenAI", "other model"])
def test_the_history_sends_200_parallel_calls_in_parts_only_to_openai(openai: bool) -> None:
    model = typed_model([], "openai-chat") if openai else ScriptedChatModel(script=[])
    history = CompactingChatMessageHistory(max_tokens=64_000, model=model)
    history.add_messages(_wide(200))
    view = history.messages
    assert _calls(view) == ([128, 72] if openai else [200])
    assert openai_chat_wire(view) == ([] if openai else ["wire 1: 200 tool calls"])
    assert request_problems(view) == []
    assert len(history.full_messages) == 202  # the record keeps the one message


def test_the_history_reads_the_limit_from_a_model_string(monkeypatch: pytest.MonkeyPatch) -> None:
    """``model="openai:gpt-5"`` named the model the history feeds, but was read only for a
    share of its window: the split never ran for it."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")  # never sent: no call
    history = CompactingChatMessageHistory(max_tokens=64_000, model="openai:gpt-5")
    history.add_messages(_wide(200))
    assert _calls(history.messages) == [128, 72]


def test_the_history_plans_for_the_tokens_of_the_parts() -> None:
    """A record that fits its budget exactly whole no longer fits sent in parts: the view
    is planned again under a budget that leaves room for them."""
    record = [HumanMessage("Look around first.", id="s0"), AIMessage("Done: 3 dirs.", id="s1")]
    record += _wide(200)
    counter = resolve_token_counter(None)
    budget = count_tokens(record, counter)
    history = CompactingChatMessageHistory(
        max_tokens=budget,
        max_messages=None,
        model=typed_model([], "openai-chat"),
        usage_calibration=False,
    )
    history.add_messages(record)
    view = history.messages
    assert count_tokens(view, counter) <= budget
    assert all(n <= MAX_MESSAGE_TOOL_CALLS for n in _calls(view))
    assert request_problems(view) == []


@pytest.mark.parametrize(
    "wrap",
    ["with_retry", "with_config", "fallback"],
    ids=["with_retry", "with_config", "an OpenAI fallback"],
)
def test_the_limit_is_read_through_wrappers_and_fallbacks(wrap: str) -> None:
    """``model.with_retry()`` hid the model's type: a history given it sent 200 calls whole."""
    openai = typed_model([], "openai-chat")
    model = {
        "with_retry": lambda: openai.with_retry(),
        "with_config": lambda: openai.with_config(tags=["x"]).with_retry(),
        "fallback": lambda: ScriptedChatModel(script=[]).with_fallbacks([openai]),
    }[wrap]()
    history = CompactingChatMessageHistory(max_tokens=64_000, model=model)
    history.add_messages(_wide(200))
    assert _calls(history.messages) == [128, 72]
