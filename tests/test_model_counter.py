"""``token_counter=model`` with a model that counts on its provider's server: Anthropic's
``messages/count_tokens`` refuses what its Messages API refuses (inspect_ai#3108), so each
message is counted in the shortest conversation it takes, never alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from langchain_builderforce_memory import (
    BuilderforceMemoryMiddleware,
    CompactingChatMessageHistory,
    WorkingTranscriptNode,
    request_problems,
)
from langchain_builderforce_memory.count_frame import in_frame
from langchain_builderforce_memory.testing import ScriptedChatModel
from langchain_builderforce_memory.tokens import count_tokens, resolve_token_counter
from langchain_builderforce_memory.transcript.results import tool_results
from langchain_builderforce_memory.transcript.view import ClearStep, summary_shown

from .helpers import AGENT_KINDS, build_agent, examples
from .provider_shapes import anthropic_native_response, anthropic_wire, counting_claude
from .strategies import CLAUDE_SHAPES, valid_records

_CALLS: list[dict[str, Any]] = [
    {"name": "read_file", "args": {"path": "src/app.py"}, "id": "toolu_01"},
    {"name": "read_file", "args": {"path": "src/db.py"}, "id": "toolu_02"},
]
_NATIVE = anthropic_native_response(0)
_MESSAGES: dict[str, BaseMessage] = {
    "system": SystemMessage("You fix bugs."),
    "user": HumanMessage("Fix the login bug."),
    "assistant text": AIMessage("The bug is in app.py."),
    "assistant calls": AIMessage("Reading both.", tool_calls=_CALLS),
    "tool result": ToolMessage("def login(): ...", tool_call_id="toolu_01", name="read_file"),
    "invalid call": AIMessage(
        "", invalid_tool_calls=[{"name": "ls", "args": "{bad", "id": "toolu_03", "error": None}]
    ),
    "native tool_use": _NATIVE,
    "native tool_result": HumanMessage(
        [{"type": "tool_result", "tool_use_id": "toolu_native", "content": "ok"}]
    ),
}


@pytest.mark.parametrize("given", ["model", "its method"])
@pytest.mark.parametrize("kind", list(_MESSAGES))
def test_a_server_side_counter_is_asked_for_every_message_in_a_request_it_takes(
    kind: str, given: str
) -> None:
    model, endpoint = counting_claude()
    counter = resolve_token_counter(
        model if given == "model" else model.get_num_tokens_from_messages
    )
    assert counter.count_message(_MESSAGES[kind]) > 0
    assert len(endpoint.requests) == 1


@pytest.mark.parametrize("kind", list(_MESSAGES))
def test_the_frame_keeps_the_message_and_is_a_request_anthropic_takes(kind: str) -> None:
    message = _MESSAGES[kind]
    framed = in_frame([message])
    assert message in framed
    assert anthropic_wire(framed) == []


def test_a_whole_valid_request_is_counted_as_it_is() -> None:
    request = [_MESSAGES[k] for k in ("system", "user", "assistant calls")]
    request += [ToolMessage("ok", tool_call_id=c["id"]) for c in _CALLS]
    assert in_frame(request) == request


@pytest.mark.parametrize("kind", AGENT_KINDS)
def test_agents_count_a_tool_loop_with_a_server_side_counter(kind: str) -> None:
    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    again = [{**_CALLS[0], "id": "toolu_04"}]
    script = [AIMessage("", tool_calls=_CALLS), AIMessage("", tool_calls=again), "fixed"]
    model = ScriptedChatModel(script=script)
    counter, endpoint = counting_claude()
    agent = build_agent(
        kind, model, [read_file], checkpointer=InMemorySaver(), token_counter=counter
    )
    agent.invoke(
        {"messages": [HumanMessage("Fix the login bug.")]}, {"configurable": {"thread_id": "t"}}
    )
    assert len(model.requests) == 3
    assert all(request_problems(r) == [] for r in model.requests)
    assert endpoint.requests  # the view was counted by the model's endpoint


def test_a_local_counter_is_asked_for_the_message_itself() -> None:
    """``ChatOpenAI`` counts with tiktoken, which takes a lone message: no frame."""
    asked: list[list[BaseMessage]] = []

    class LocalCounting(ChatOpenAI):
        def get_num_tokens_from_messages(self, messages: list[BaseMessage], *_: Any) -> int:
            asked.append(messages)
            return 5

    counter = resolve_token_counter(LocalCounting(model="gpt-5", api_key="k"))  # type: ignore[arg-type]
    result = _MESSAGES["tool result"]
    assert counter.count_message(result) == 5
    assert asked[-1] == [result]


def test_a_local_counter_that_cannot_load_its_tokenizer_fails_where_it_is_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With no network, ChatOpenAI's count raised ``requests.ConnectionError`` on the
    graph's first count; now the middleware's constructor names the fixes."""
    import requests
    import tiktoken.load
    import tiktoken.registry

    def offline(blobpath: str) -> bytes:
        raise requests.ConnectionError(f"no network to fetch {blobpath}")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken.load, "read_file", offline)
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    model = ChatOpenAI(model="gpt-5", api_key="k")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="TIKTOKEN_CACHE_DIR"):
        BuilderforceMemoryMiddleware(token_counter=model)


@pytest.mark.filterwarnings("ignore:Using fallback GPT-2 tokenizer")
@pytest.mark.parametrize("entry", ["middleware", "node", "history"])
def test_a_model_with_no_count_of_its_own_fails_where_it_is_given(
    monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    """LangChain's fallback counts GPT-2 tokens with ``transformers``: not installed (or
    not downloadable), it raised ``ImportError`` on the graph's first count."""
    import langchain_core.language_models.base as lm_base
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    def missing() -> Any:
        raise ImportError("Could not import transformers python package.")

    monkeypatch.setattr(lm_base, "get_tokenizer", missing)
    model = GenericFakeChatModel(messages=iter([]))
    build = {
        "middleware": BuilderforceMemoryMiddleware,
        "node": WorkingTranscriptNode,
        "history": CompactingChatMessageHistory,
    }[entry]
    with pytest.raises(RuntimeError, match="has no token count of its own"):
        build(token_counter=model)


def test_a_payload_is_asked_for_once_whatever_object_carries_it() -> None:
    """The system prompt, the brief and the tool schemas are new objects every turn: each
    was a new request to the provider's count."""
    model, endpoint = counting_claude()
    counter = resolve_token_counter(model)
    for _ in range(3):
        counter.count_message(SystemMessage("You fix bugs."))
        counter.count_text('{"name": "read_file", "parameters": {}}')
    assert len(endpoint.requests) == 2


def test_a_failing_count_falls_back_to_the_estimate_and_is_not_retried_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A count is a request to the provider and fails as one (a 429 on a fold's burst):
    it raised inside the user's graph."""

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"contents of {path}\n" + "line of code\n" * 200

    calls = [
        AIMessage(
            "", tool_calls=[{"name": "read_file", "args": {"path": f"f{i}.py"}, "id": f"r{i}"}]
        )
        for i in range(12)
    ]
    model = ScriptedChatModel(script=[*calls, "done"])
    counter, endpoint = counting_claude()
    endpoint.down = True
    agent = build_agent("create_agent", model, [read_file], token_counter=counter, max_tokens=4_000)
    with caplog.at_level("WARNING"):
        agent.invoke({"messages": [HumanMessage("Read them all.")]})
    assert len(model.requests) == 13
    assert all(request_problems(r) == [] for r in model.requests)
    assert max(count_tokens(r) for r in model.requests) <= 4_000  # by the estimate
    assert endpoint.refused == 1  # then the estimate counts for a while
    assert "the model's token count failed" in caplog.text


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=valid_records(max_units=8, shapes=CLAUDE_SHAPES, alternating=True), data=st.data())
def test_any_slice_of_a_claude_run_is_framed_into_a_request_anthropic_takes(
    record: list[BaseMessage], data: st.DataObject
) -> None:
    """What a counter is asked for: one message, or any run of them (``count_tokens`` of
    a part), from Claude's own records (tool_use blocks, thinking, tool_result turns)."""
    start = data.draw(st.integers(0, len(record) - 1))
    part = record[start : data.draw(st.integers(start + 1, len(record)))]
    framed = in_frame(part)
    assert anthropic_wire(framed) == []
    assert [m for m in framed if any(m is p for p in part)] == part  # unchanged, in order


def test_a_fold_cuts_the_summarizers_excerpts_without_asking_the_provider() -> None:
    """Each cleared result a fold shows its summarizer is cut to an 80-token excerpt: four
    or five counts a cut, a hundred requests to ``count_tokens`` on a fold turn (each
    one counted against the account's rate limit). An excerpt's length is a shape, not
    a budget: estimated."""
    model, endpoint = counting_claude()
    counter = resolve_token_counter(model)
    convo: list[BaseMessage] = [HumanMessage("run the tests")]
    for i in range(6):
        convo.append(AIMessage("", tool_calls=[{"name": "bash", "args": {}, "id": f"t{i}"}]))
        out = f"collected {i} items\n" + "." * 4_000 + f"\n{i} failed"
        convo.append(ToolMessage(out, tool_call_id=f"t{i}"))
    step = ClearStep(cleared=tuple(tool_results(convo, counter)))
    asked = len(endpoint.requests)
    shown = summary_shown(convo, step, counter)
    assert len(endpoint.requests) == asked
    for i in range(6):
        assert shown[2 + 2 * i].text.startswith(f"collected {i} items")
        assert shown[2 + 2 * i].text.endswith(f"{i} failed")
        assert len(shown[2 + 2 * i].text) < 1_000
