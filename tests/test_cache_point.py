"""Anthropic's prompt cache, asked for as ``AnthropicPromptCachingMiddleware`` asks for it
(a top-level ``cache_control``, whose breakpoint lands on the request's last block): with
our brief as that block, no entry it wrote was ever read back. The view now carries the
same breakpoint on its last stable message."""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langchain_builderforce_memory.cache_point import (
    breakpoints,
    cached_before_tail,
    learned_control,
)
from langchain_builderforce_memory.handoff.volatile import is_volatile_tail, volatile_tail

from .helpers import build_agent, typed_model
from .provider_shapes import anthropic_request, anthropic_wire, anthropic_wire_problems

CONTROL = {"type": "ephemeral", "ttl": "5m"}
LOOKBACK = 20  # the blocks Anthropic looks back from a breakpoint for an entry
_MARKED_SYSTEM = {"type": "text", "text": "Be brief.", "cache_control": CONTROL}


class AskToCache(AgentMiddleware[Any, Any]):
    """What ``AnthropicPromptCachingMiddleware`` puts in the request's settings (it takes
    only a ``ChatAnthropic``; the scripted model here only reads as one)."""

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return handler(self._asked(request))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        return await handler(self._asked(request))

    @staticmethod
    def _asked(request: ModelRequest) -> ModelRequest:
        return request.override(model_settings={**request.model_settings, "cache_control": CONTROL})


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}\n" + "line of code here\n" * 150


def _bare(value: object) -> object:
    """``value`` without its markers, a string content as the one text block it stands for
    (the Messages API's shorthand: a marked result's text is sent as a block)."""
    if isinstance(value, dict):
        out = {k: _bare(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(out.get("content"), str):
            out["content"] = [{"type": "text", "text": out["content"]}]
        return out
    if isinstance(value, list):
        return [_bare(v) for v in value]
    return value


def _blocks(messages: list[BaseMessage]) -> tuple[list[str], list[int]]:
    """The request's blocks as Anthropic hashes them (without the markers), and the
    positions of its breakpoints: each marked block, and the last block (the automatic
    one the top-level ``cache_control`` places)."""
    return _wire_blocks(anthropic_request(messages))


def _wire_blocks(wire: list[dict[str, Any]]) -> tuple[list[str], list[int]]:
    """:func:`_blocks` of a Messages API ``messages`` list."""
    keys: list[str] = []
    marked: list[int] = []
    for m in wire:
        content = m["content"] if isinstance(m["content"], list) else [m["content"]]
        for block in content:
            if isinstance(block, dict) and "cache_control" in json.dumps(block):
                marked.append(len(keys))
            keys.append(json.dumps([m["role"], _bare(block)], sort_keys=True, default=str))
    return keys, sorted({*marked, len(keys) - 1})


def _reads(before: list[BaseMessage], after: list[BaseMessage]) -> bool:
    """Whether ``after`` reads back an entry ``before`` wrote."""
    return _reads_blocks(_blocks(before), _blocks(after))


def _reads_blocks(before: tuple[list[str], list[int]], after: tuple[list[str], list[int]]) -> bool:
    """:func:`_reads` of two requests' :func:`_blocks`."""
    old, written = before
    new, points = after
    entries = {tuple(old[: p + 1]) for p in written}
    return any(
        tuple(new[: r + 1]) in entries for q in points for r in range(max(0, q - LOOKBACK), q + 1)
    )


def _read(i: int) -> dict[str, Any]:
    return {"name": "read_file", "args": {"path": f"f{i}.py"}, "id": f"t{i}"}


def _written(ttl: str) -> dict[str, Any]:
    """An answer's usage as langchain-anthropic reports a cache write of ``ttl``."""
    details = {"cache_creation": 0, f"ephemeral_{ttl}_input_tokens": 1_500}
    usage = {"input_tokens": 2_000, "output_tokens": 9, "total_tokens": 2_009}
    return {**usage, "input_token_details": details}


def _run(
    llm_type: str, calls: int = 24, *, asked: str = "before", usage: dict[str, Any] | None = None
) -> list[list[BaseMessage]]:
    script: list[Any] = [
        AIMessage("", tool_calls=[_read(i)], usage_metadata=usage) for i in range(calls)
    ]
    model = typed_model([*script, "done"], llm_type)
    agent = build_agent(
        "create_agent",
        model,
        [read_file],
        before=[AskToCache()] if asked == "before" else [],
        after=[AskToCache()] if asked == "after" else [],
        checkpointer=InMemorySaver(),
        max_tokens=16_000,
        summarizer=typed_model(["a note " * 50] * calls, llm_type),
        clear_tool_results=True,
        usage_calibration=False,  # the scripted usage reports the cache, not our count
    )
    config: Any = {"configurable": {"thread_id": "t"}, "recursion_limit": 4 * calls + 10}
    agent.invoke({"messages": [HumanMessage("Read every file.")]}, config)
    return model.requests


def test_each_request_reads_back_the_cache_the_one_before_wrote_unless_its_front_moved() -> None:
    requests = _run("anthropic-chat")
    steady = 0
    for before, after in itertools.pairwise(requests):
        kept, _ = _blocks(before[:-1])  # its stable part: all but the brief
        if _blocks(after)[0][: len(kept)] != kept:
            continue  # the front moved (a clear batch, a fold): nothing to read back
        steady += 1
        assert _reads(before, after)
    assert steady >= len(requests) // 2
    for request in requests:
        assert anthropic_wire(request) == []
        # One, leaving room for the system prompt's, the tools' and the automatic one.
        assert breakpoints(request) == (1 if is_volatile_tail(request[-1]) else 0)


def test_a_caching_middleware_listed_after_ours_is_read_off_the_providers_usage() -> None:
    # Listed after ours it asks once the view is built: its breakpoint landed on the brief
    # and no entry was ever read back. The answers' usage says Anthropic writes a cache;
    # from the second request on the view carries the breakpoint before the brief.
    requests = _run("anthropic-chat", asked="after", usage=_written("5m"))
    assert breakpoints(requests[0]) == 0  # nothing answered yet: nothing learned
    steady = 0
    for before, after in itertools.pairwise(requests[1:]):
        kept, _ = _blocks(before[:-1])
        if _blocks(after)[0][: len(kept)] == kept:
            steady += 1
            assert _reads(before, after)
    assert steady >= len(requests) // 2
    for request in requests[1:]:
        assert anthropic_wire(request) == []
        assert breakpoints(request) == (1 if is_volatile_tail(request[-1]) else 0)


_USAGE = {"input_tokens": 9, "output_tokens": 1, "total_tokens": 10}


@pytest.mark.parametrize(
    ("details", "system", "tools", "learned"),
    [
        ({"ephemeral_5m_input_tokens": 800}, None, [], {"type": "ephemeral", "ttl": "5m"}),
        (
            {"ephemeral_5m_input_tokens": 800, "ephemeral_1h_input_tokens": 90},
            None,
            [],
            {"type": "ephemeral", "ttl": "1h"},
        ),
        ({"cache_read": 800}, None, [], None),
        ({"cache_creation": 800}, None, [], None),
        ({"ephemeral_5m_input_tokens": 800}, SystemMessage([_MARKED_SYSTEM]), [], None),
        ({"ephemeral_5m_input_tokens": 800}, None, [{"name": "f", "cache_control": CONTROL}], None),
        (
            {"ephemeral_5m_input_tokens": 800},
            None,
            [read_file.model_copy(update={"extras": {"cache_control": CONTROL}})],
            None,
        ),
        ({"ephemeral_5m_input_tokens": 0}, None, [], None),
        (
            {"ephemeral_5m_input_tokens": 800},
            None,
            [SimpleNamespace(extras=5)],  # a tool object whose extras is no mapping
            {"type": "ephemeral", "ttl": "5m"},
        ),
    ],
    ids=[
        "5m",
        "1h-first",
        "openai-read",
        "no-ttl",
        "marked-system",
        "marked-dict-tool",
        "marked-tool",
        "nothing-written",
        "odd-extras",
    ],
)
def test_the_breakpoint_learned_from_usage_is_one_the_provider_takes(
    details: dict[str, int],
    system: SystemMessage | None,
    tools: list[Any],
    learned: dict[str, str] | None,
) -> None:
    # A 5-minute breakpoint before a 1-hour one is refused: the TTL must be the one the
    # provider wrote, never a guess. OpenAI's own caching reports reads, not writes.
    answer = AIMessage("ok", usage_metadata={**_USAGE, "input_token_details": details})
    assert learned_control([HumanMessage("hi"), answer], system, tools) == learned


@pytest.mark.parametrize("usage", ["x", 5, {"input_token_details": "y"}])
def test_a_usage_built_without_validation_learns_nothing(usage: object) -> None:
    # Read for the breakpoint, such a usage raised inside the graph (the calibration
    # reads it safely); it says nothing about a cache.
    answer = AIMessage.model_construct(content="ok", usage_metadata=usage, tool_calls=[])
    assert learned_control([HumanMessage("hi"), answer]) is None


def test_a_model_that_is_not_claude_gets_no_breakpoint() -> None:
    for request in _run("openai-chat", calls=6):
        assert breakpoints(request) == 0


_CALL = AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}])
_MARKED = {"type": "text", "text": "x", "cache_control": CONTROL}
_EMPTY = {"type": "text", "text": ""}


@pytest.mark.parametrize(
    ("view", "marked_at"),
    [
        ([HumanMessage("ls"), _CALL, ToolMessage("a.py", tool_call_id="c1")], 2),
        ([HumanMessage("ls"), _CALL, ToolMessage([_EMPTY], tool_call_id="c1")], 0),
        ([HumanMessage([_MARKED]), HumanMessage([_MARKED]), AIMessage("ok")], None),
        # One of the caller's beside the system prompt's, the tools' and the automatic one
        # makes four: a fifth, ours, was refused.
        ([HumanMessage([_MARKED]), _CALL, ToolMessage("a.py", tool_call_id="c1")], None),
        ([HumanMessage("ls"), AIMessage("ok")], 0),
    ],
    ids=["tool-result", "empty-text-skipped", "no-room-left", "one-of-the-callers", "user-turn"],
)
def test_the_breakpoint_goes_on_the_last_message_that_may_carry_one(
    view: list[BaseMessage], marked_at: int | None
) -> None:
    tail = volatile_tail(["brief"])
    assert tail is not None
    sent = cached_before_tail([*view, tail], CONTROL)
    changed = [i for i, (a, b) in enumerate(zip(view, sent, strict=False)) if a is not b]
    assert changed == ([] if marked_at is None else [marked_at])
    assert sent[-1] is tail
    assert cached_before_tail(view, CONTROL) is view  # no tail: the automatic one serves


# --- Claude on Bedrock: BedrockPromptCachingMiddleware asks the same of ChatBedrock ------


class _Body:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def read(self) -> bytes:
        return self._data


class FakeBedrockRuntime:
    """A ``bedrock-runtime`` client: keeps each InvokeModel body (what langchain-aws sends,
    markers included), answers with a scripted Claude message calling ``read_file``."""

    def __init__(self, calls: int) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.calls = calls

    def invoke_model(self, **request: Any) -> dict[str, Any]:
        self.bodies.append(json.loads(request["body"]))
        i = len(self.bodies) - 1
        call = {"type": "tool_use", "id": f"t{i}", "name": "read_file", "input": _read(i)["args"]}
        content = [call] if i < self.calls else [{"type": "text", "text": "done"}]
        answer = {
            "id": f"msg_{i}",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": "tool_use" if i < self.calls else "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        return {"body": _Body(json.dumps(answer).encode())}


CLAUDE_ON_BEDROCK = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def test_claude_on_bedrock_reads_back_the_cache_the_request_before_wrote() -> None:
    # ChatBedrock puts the breakpoint BedrockPromptCachingMiddleware asks for on the last
    # block, our brief: once the brief showed, no request read the one before's entry.
    from langchain.agents import create_agent
    from langchain_aws import ChatBedrock
    from langchain_aws.middleware.prompt_caching import BedrockPromptCachingMiddleware

    from langchain_builderforce_memory import BuilderforceMemoryMiddleware

    from .helpers import ScriptedSummarizer

    client = FakeBedrockRuntime(calls=24)
    model = ChatBedrock(model_id=CLAUDE_ON_BEDROCK, region_name="us-east-1", client=client)
    ours = BuilderforceMemoryMiddleware(ScriptedSummarizer(), max_tokens=16_000)
    agent = create_agent(model, [read_file], middleware=[BedrockPromptCachingMiddleware(), ours])
    agent.invoke({"messages": [HumanMessage("Read every file.")]}, {"recursion_limit": 100})
    sent = [_wire_blocks(body["messages"]) for body in client.bodies]
    briefed = [i for i, body in enumerate(client.bodies) if "<run-state>" in json.dumps(body)]
    steady = [i for i in briefed if sent[i][0][: len(sent[i - 1][0]) - 1] == sent[i - 1][0][:-1]]
    assert len(steady) >= 8  # the others follow a clear batch: the front moved
    assert all(_reads_blocks(sent[i - 1], sent[i]) for i in steady)
    for body in client.bodies:
        assert anthropic_wire_problems(body["messages"]) == []
        assert json.dumps(body).count("cache_control") <= 2  # ours and langchain-aws's


@pytest.mark.parametrize(
    ("model", "marked"),
    [
        ("ChatBedrock", True),
        ("ChatBedrock-arn", True),
        ("ChatBedrock-llama", False),
        ("ChatBedrock-converse", False),
        ("ChatBedrockConverse", False),
    ],
)
def test_bedrock_models_that_mark_only_the_last_block_get_the_breakpoint(
    model: str, marked: bool
) -> None:
    # Converse marks the message before the last too, but only in a request that carries
    # no marker of its own: one of ours would take that read-back away.
    from langchain_aws import ChatBedrock, ChatBedrockConverse

    from langchain_builderforce_memory.agents.native import WireLimits

    region = {"region_name": "us-east-1"}
    models = {
        "ChatBedrock": lambda: ChatBedrock(model_id=CLAUDE_ON_BEDROCK, **region),
        "ChatBedrock-arn": lambda: ChatBedrock(
            model_id="arn:aws:bedrock:us-east-1:1:inference-profile/x",
            provider="anthropic",
            base_model_id="anthropic.claude-sonnet-4-5-20250929-v1:0",
            **region,
        ),
        "ChatBedrock-llama": lambda: ChatBedrock(
            model_id="meta.llama3-70b-instruct-v1:0", **region
        ),
        "ChatBedrock-converse": lambda: ChatBedrock(
            model_id=CLAUDE_ON_BEDROCK, beta_use_converse_api=True, **region
        ),
        "ChatBedrockConverse": lambda: ChatBedrockConverse(model=CLAUDE_ON_BEDROCK, **region),
    }
    limits = WireLimits.of(models[model](), {"cache_control": CONTROL})
    assert (limits.cache_point == CONTROL) is marked
