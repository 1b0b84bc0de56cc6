"""Anthropic's prompt cache, asked for as ``AnthropicPromptCachingMiddleware`` asks for it
(a top-level ``cache_control``, whose breakpoint lands on the request's last block): with
our brief as that block, no entry it wrote was ever read back. The view now carries the
same breakpoint on its last stable message."""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langchain_builderforce_memory.cache_point import breakpoints, cached_before_tail
from langchain_builderforce_memory.handoff.volatile import is_volatile_tail, volatile_tail

from .helpers import build_agent, typed_model
from .provider_shapes import anthropic_request, anthropic_wire

CONTROL = {"type": "ephemeral", "ttl": "5m"}
LOOKBACK = 20  # the blocks Anthropic looks back from a breakpoint for an entry


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
    keys: list[str] = []
    marked: list[int] = []
    for m in anthropic_request(messages):
        content = m["content"] if isinstance(m["content"], list) else [m["content"]]
        for block in content:
            if isinstance(block, dict) and "cache_control" in json.dumps(block):
                marked.append(len(keys))
            keys.append(json.dumps([m["role"], _bare(block)], sort_keys=True, default=str))
    return keys, sorted({*marked, len(keys) - 1})


def _reads(before: list[BaseMessage], after: list[BaseMessage]) -> bool:
    """Whether ``after`` reads back an entry ``before`` wrote."""
    old, written = _blocks(before)
    new, points = _blocks(after)
    entries = {tuple(old[: p + 1]) for p in written}
    return any(
        tuple(new[: r + 1]) in entries for q in points for r in range(max(0, q - LOOKBACK), q + 1)
    )


def _read(i: int) -> dict[str, Any]:
    return {"name": "read_file", "args": {"path": f"f{i}.py"}, "id": f"t{i}"}


def _run(llm_type: str, calls: int = 24) -> list[list[BaseMessage]]:
    script: list[Any] = [AIMessage("", tool_calls=[_read(i)]) for i in range(calls)]
    model = typed_model([*script, "done"], llm_type)
    agent = build_agent(
        "create_agent",
        model,
        [read_file],
        before=[AskToCache()],
        checkpointer=InMemorySaver(),
        max_tokens=16_000,
        summarizer=typed_model(["a note " * 50] * calls, llm_type),
        clear_tool_results=True,
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
        ([HumanMessage("ls"), AIMessage("ok")], 0),
    ],
    ids=["tool-result", "empty-text-skipped", "no-room-left", "user-turn"],
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
