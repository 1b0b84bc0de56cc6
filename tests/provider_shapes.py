"""Recorded provider response shapes and strict wire checks, one per provider.

Each :class:`Shape` plays a model's responses as the provider's LangChain integration
records them (Anthropic extended thinking with tool use, also on Bedrock;
Anthropic-native ``tool_use`` / ``tool_result`` blocks; OpenAI Responses ``reasoning``
items and built-in tools; images; invalid tool calls) and writes the tool results the way
that integration's records hold them. The wire checks convert a request with
langchain-anthropic's / langchain-openai's / langchain-aws's OWN formatting functions and
then check what the provider's API enforces.
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from langchain_anthropic import ChatAnthropic
from langchain_aws.chat_models.bedrock_converse import _messages_to_bedrock
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai.chat_models.base import (
    _construct_responses_api_input,
    _convert_message_to_dict,
)
from PIL import Image
from pypdf import PdfReader

CALLS_PER_DIRECTIVE = 10
"""Model calls per directive: nine tool rounds and an answer."""

DIRECTIVES = [
    f"Task {d}: port module m{d} to the new API and keep its tests green." for d in range(10)
]
"""Ten directives x ten model calls: the 100-turn loop."""
_BEDROCK_CLAUDE = "anthropic.claude-sonnet-4-5"
"""The Bedrock model id the Bedrock shape's requests are formatted for."""


def png(width: int, height: int) -> bytes:
    """A real (tiny, one-colour) PNG of ``width`` x ``height``: its header is what counts."""
    raw = b"".join(b"\x00" + b"\x00" * width * 3 for _ in range(min(height, 4)))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))


def png_b64(width: int, height: int) -> str:
    return base64.b64encode(png(width, height)).decode()


def _result_text(call_id: str, size: int) -> str:
    words = ("def", "return", "self", "value", "config", "parse", "window", "token")
    return f"# result of {call_id}\n" + " ".join(words[(i * 7) % 8] for i in range(size))


@dataclass(frozen=True)
class Shape:
    """A provider's response shape: what the model answers and how results are recorded."""

    name: str
    respond: Callable[[int], AIMessage]
    """The ``i``-th model response of the loop (call ``i % 10 == 9`` answers in text)."""
    results: Callable[[AIMessage], list[BaseMessage]]
    """The tool results recorded after a response's calls (graph-free loops)."""
    wire: Callable[[Sequence[BaseMessage]], list[str]]
    """Problems the provider's API would reject in a request (``[]``: accepted)."""
    thinking: bool = False
    """Whether the provider runs with thinking on (``request_problems(thinking=...)``)."""
    native_results: bool = False
    """Results are Anthropic user turns of ``tool_result`` blocks, not ``ToolMessage`` s."""
    agent_tools: bool = True
    """``create_agent``'s tool node can run the calls (they are in ``tool_calls``)."""
    model_name: str = "scripted"
    """The name the agent's model records: langchain-aws drops the reasoning a model of
    another family wrote, and reads the family from the name."""


# ------------------------------------------------------------------------ responses


def _step(i: int) -> tuple[int, int]:
    return i // CALLS_PER_DIRECTIVE, i % CALLS_PER_DIRECTIVE


def _calls(i: int) -> list[dict[str, Any]]:
    n = 2 if i % 4 == 1 else 1
    return [
        {
            "name": "read_file",
            "args": {"path": f"src/m{i}_{k}.py"},
            "id": f"toolu_{i}_{k}",
            "type": "tool_call",
        }
        for k in range(n)
    ]


def _tool_use(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]} for c in calls
    ]


def anthropic_thinking_response(i: int) -> AIMessage:
    """Claude with extended thinking: ``[thinking, text, tool_use...]`` and ``tool_calls``.

    Without interleaved thinking Claude thinks once, at the start of its turn: the later
    calls of the tool loop carry no thinking block (even directives). With interleaved
    thinking every step thinks (odd directives). Every third thought is redacted, as
    Anthropic does for flagged reasoning.
    """
    d, k = _step(i)
    thought: dict[str, Any] = (
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy" + "Qk" * 200}
        if i % 3 == 2
        else {
            "type": "thinking",
            "thinking": f"Turn {i}: " + "let me reason. " * 60,
            "signature": "Sig" + "x" * 300,
        }
    )
    meta = {"model_provider": "anthropic", "model_name": "claude-sonnet-4-5"}
    thoughts = [thought] if k == 0 or d % 2 == 1 else []
    if k == CALLS_PER_DIRECTIVE - 1:
        return AIMessage(
            [*thoughts, {"type": "text", "text": f"Done with step set {i}."}],
            response_metadata=meta,
        )
    calls = _calls(i)
    content = [
        *thoughts,
        {"type": "text", "text": f"Reading files for turn {i}."},
        *_tool_use(calls),
    ]
    return AIMessage(content, tool_calls=calls, response_metadata=meta)


def standard_content(response: Callable[[int], AIMessage]) -> Callable[[int], AIMessage]:
    """``response`` as a model with ``output_version="v1"`` records it: LangChain's standard
    content blocks (``reasoning``, ``tool_call``, ``non_standard``), marked ``"v1"`` in
    ``response_metadata`` as langchain-core marks it."""

    def respond(i: int) -> AIMessage:
        message = response(i)
        meta = {**message.response_metadata, "output_version": "v1"}
        return message.model_copy(
            update={"content": message.content_blocks, "response_metadata": meta}
        )

    return respond


def bedrock_thinking_response(i: int) -> AIMessage:
    """Claude with extended thinking on Bedrock, as langchain-aws's ``ChatBedrockConverse``
    records it: each thought a ``reasoning_content`` block (its text and signature inside,
    a redacted one its ``redacted_content``), then the text and ``tool_use`` blocks."""
    claude = anthropic_thinking_response(i)
    blocks: list[str | dict[str, Any]] = []
    for b in claude.content:
        assert isinstance(b, dict)
        if b["type"] in ("thinking", "redacted_thinking"):
            inner = (
                {"text": b["thinking"], "signature": b["signature"]}
                if b["type"] == "thinking"
                else {"redacted_content": b["data"]}
            )
            b = {"type": "reasoning_content", "reasoning_content": inner}
        blocks.append(b)
    meta = {"model_provider": "bedrock_converse", "model_name": _BEDROCK_CLAUDE}
    return AIMessage(blocks, tool_calls=claude.tool_calls, response_metadata=meta)


def anthropic_native_response(i: int) -> AIMessage:
    """A raw Anthropic record: ``tool_use`` blocks in the content, no ``tool_calls``."""
    _, k = _step(i)
    if k == CALLS_PER_DIRECTIVE - 1:
        return AIMessage([{"type": "text", "text": f"Finished turn {i}."}])
    return AIMessage([{"type": "text", "text": f"Turn {i}."}, *_tool_use(_calls(i))])


def openai_reasoning_response(i: int) -> AIMessage:
    """OpenAI Responses (``output_version="responses/v1"``): a reasoning item, then a
    ``function_call`` item per call, and the matching ``tool_calls``."""
    _, k = _step(i)
    reasoning = {
        "type": "reasoning",
        "id": f"rs_{i:04d}",
        "summary": [
            {"type": "summary_text", "text": f"Plan for turn {i}: " + "check the code. " * 30}
        ],
    }
    meta = {"model_provider": "openai", "model_name": "gpt-5"}
    if k == CALLS_PER_DIRECTIVE - 1:
        text = {"type": "text", "text": f"All done for turn {i}.", "id": f"msg_{i:04d}"}
        return AIMessage([reasoning, text], response_metadata=meta)
    calls = _calls(i)
    items = [
        {
            "type": "function_call",
            "call_id": c["id"],
            "name": c["name"],
            "arguments": f'{{"path": "{c["args"]["path"]}"}}',
            "id": f"fc_{c['id']}",
        }
        for c in calls
    ]
    return AIMessage([reasoning, *items], tool_calls=calls, response_metadata=meta)


def openai_computer_response(i: int) -> AIMessage:
    """OpenAI computer use (Responses): a reasoning item and a ``computer_call`` item, and
    no ``tool_calls`` (the client runs the action and answers with a screenshot)."""
    _, k = _step(i)
    meta = {"model_provider": "openai", "model_name": "computer-use-preview"}
    if k == CALLS_PER_DIRECTIVE - 1:
        text = {"type": "text", "text": f"Done with turn {i}.", "id": f"msg_{i:04d}"}
        return AIMessage([text], response_metadata=meta)
    reasoning = {"type": "reasoning", "id": f"rs_{i:04d}", "summary": []}
    call = {
        "type": "computer_call",
        "id": f"cu_{i:04d}",
        "call_id": f"call_{i:04d}",
        "action": {"type": "click", "button": "left", "x": 10 * i, "y": 20},
        "pending_safety_checks": [],
        "status": "completed",
    }
    return AIMessage([reasoning, call], response_metadata=meta)


def openai_custom_tool_response(i: int) -> AIMessage:
    """OpenAI custom (freeform) tools, as langchain-openai records them: a
    ``custom_tool_call`` item and its ``tool_calls`` entry (the input as ``__arg1``)."""
    _, k = _step(i)
    meta = {"model_provider": "openai", "model_name": "gpt-5"}
    if k == CALLS_PER_DIRECTIVE - 1:
        return AIMessage([{"type": "text", "text": f"Ran turn {i}."}], response_metadata=meta)
    code, cid = f"print(open('src/m{i}.py').read())", f"call_{i:04d}"
    item = {"type": "custom_tool_call", "call_id": cid, "name": "run_python", "input": code}
    call = {"name": "run_python", "args": {"__arg1": code}, "id": cid, "type": "tool_call"}
    return AIMessage([item], tool_calls=[call], response_metadata=meta)


def openai_apply_patch_response(i: int) -> AIMessage:
    """OpenAI's built-in ``apply_patch`` tool: an ``apply_patch_call`` item naming one file
    operation, no ``tool_calls`` (the client applies it and answers in a user turn)."""
    _, k = _step(i)
    meta = {"model_provider": "openai", "model_name": "gpt-5.1"}
    if k == CALLS_PER_DIRECTIVE - 1:
        return AIMessage([{"type": "text", "text": f"Patched turn {i}."}], response_metadata=meta)
    reasoning = {"type": "reasoning", "id": f"rs_{i:04d}", "summary": []}
    diff = "".join(f"@@\n-value = {n}\n+value = {n + 1}\n" for n in range(120))
    operation = {"type": "update_file", "path": f"src/m{i}.py", "diff": diff}
    call = {"type": "apply_patch_call", "id": f"apc_{i:04d}", "call_id": f"call_{i:04d}"}
    call |= {"status": "completed", "operation": operation}
    return AIMessage([reasoning, call], response_metadata=meta)


def openai_mcp_response(i: int) -> AIMessage:
    """OpenAI's remote MCP tool with approval required: the call approved last round runs
    on OpenAI's side (an ``mcp_call`` item holding its output), and the next one waits in
    an ``mcp_approval_request`` item, with no ``tool_calls``."""
    _, k = _step(i)
    meta = {"model_provider": "openai", "model_name": "gpt-5"}
    items: list[dict[str, Any]] = []
    if k > 0:
        ran = {"type": "mcp_call", "id": f"mcp_{i:04d}", "approval_request_id": f"mcpr_{i - 1:04d}"}
        ran |= {"name": "read_file", "arguments": f'{{"path": "src/m{i - 1}.py"}}'}
        items.append(ran | {"server_label": "repo", "output": _result_text(f"mcp_{i}", 1_400)})
    if k == CALLS_PER_DIRECTIVE - 1:
        return AIMessage(
            [*items, {"type": "text", "text": f"Read for turn {i}."}], response_metadata=meta
        )
    ask = {"type": "mcp_approval_request", "id": f"mcpr_{i:04d}", "name": "read_file"}
    ask |= {"arguments": f'{{"path": "src/m{i}.py"}}', "server_label": "repo"}
    return AIMessage([*items, ask], response_metadata=meta)


def openai_tool_search_response(i: int) -> AIMessage:
    """OpenAI's tool search: the model looks up tools it has not loaded yet. Run by the
    client (``execution="client"``), the ``tool_search_call`` item waits for a user turn's
    ``tool_search_output`` item; run by OpenAI, both items come in the assistant's output,
    here before a ``function_call`` of a tool the search found."""
    _, k = _step(i)
    meta = {"model_provider": "openai", "model_name": "gpt-5"}
    reasoning = {"type": "reasoning", "id": f"rs_{i:04d}", "summary": []}
    if k == CALLS_PER_DIRECTIVE - 1:
        text = {"type": "text", "text": f"Done with turn {i}.", "id": f"msg_{i:04d}"}
        return AIMessage([reasoning, text], response_metadata=meta)
    search = {"type": "tool_search_call", "id": f"tsc_{i:04d}", "status": "completed"}
    search |= {"arguments": {"query": f"tools to port module m{i}"}}
    if k % 2 == 0:
        asked = search | {"execution": "client", "call_id": f"call_ts_{i:04d}"}
        return AIMessage([reasoning, asked], response_metadata=meta)
    found = {"type": "tool_search_output", "id": f"tso_{i:04d}", "execution": "server"}
    found |= {"status": "completed", "tools": _found_tools(i)}
    calls = _calls(i)
    items = [
        {"type": "function_call", "call_id": c["id"], "name": c["name"], "id": f"fc_{c['id']}"}
        | {"arguments": f'{{"path": "{c["args"]["path"]}"}}'}
        for c in calls
    ]
    served = search | {"execution": "server"}
    return AIMessage([reasoning, served, found, *items], tool_calls=calls, response_metadata=meta)


def _found_tools(i: int) -> list[dict[str, Any]]:
    """The tool definitions a search loads: a few hundred tokens each."""
    return [
        {"type": "function", "name": f"m{i}_tool_{t}", "description": "Edit the module. " * 40}
        | {"parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
        for t in range(3)
    ]


def image_response(i: int) -> AIMessage:
    """A plain tool-calling response; the images come in the tool results and directives."""
    _, k = _step(i)
    if k == CALLS_PER_DIRECTIVE - 1:
        return AIMessage(f"Looked at the screenshots of turn {i}.")
    calls = [dict(c, name="screenshot") for c in _calls(i)]
    return AIMessage(f"Taking screenshots for turn {i}.", tool_calls=calls)


def invalid_call_response(i: int) -> AIMessage:
    """Every third tool turn also emits a call whose arguments did not parse."""
    _, k = _step(i)
    if k == CALLS_PER_DIRECTIVE - 1:
        return AIMessage(f"Answer {i}.")
    calls = _calls(i)
    bad = (
        [
            {
                "name": "read_file",
                "args": '{"path": "src/broken',
                "id": f"bad_{i}",
                "error": "Unterminated string",
                "type": "invalid_tool_call",
            }
        ]
        if i % 3 == 0
        else []
    )
    return AIMessage(f"Turn {i}.", tool_calls=calls, invalid_tool_calls=bad)


# ------------------------------------------------------------------------ results


def tool_messages(response: AIMessage, size: int = 1_400) -> list[BaseMessage]:
    return [
        ToolMessage(_result_text(c["id"] or "", size), tool_call_id=c["id"] or "", name=c["name"])
        for c in response.tool_calls
    ]


def native_results(response: AIMessage, size: int = 1_400) -> list[BaseMessage]:
    ids = [b["id"] for b in response.content if isinstance(b, dict) and b.get("type") == "tool_use"]
    if not ids:
        return []
    return [
        HumanMessage(
            [
                {"type": "tool_result", "tool_use_id": cid, "content": _result_text(cid, size)}
                for cid in ids
            ]
        )
    ]


def image_results(response: AIMessage) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for n, c in enumerate(response.tool_calls):
        w, h = ((1920, 1080), (640, 480), (4000, 3000))[n % 3]
        out.append(
            ToolMessage(
                [
                    {"type": "text", "text": f"screenshot {c['id']}"},
                    {"type": "image", "base64": png_b64(w, h), "mime_type": "image/png"},
                ],
                tool_call_id=c["id"] or "",
                name=c["name"],
            )
        )
    return out


def computer_outputs(response: AIMessage) -> list[BaseMessage]:
    """A screenshot per ``computer_call``, recorded the way langchain-openai reads it back."""
    return [
        ToolMessage(
            [{"type": "input_image", "image_url": f"data:image/png;base64,{png_b64(1280, 800)}"}],
            tool_call_id=block["call_id"],
            additional_kwargs={"type": "computer_call_output"},
        )
        for block in response.content
        if isinstance(block, dict) and block.get("type") == "computer_call"
    ]


def custom_outputs(response: AIMessage, size: int = 1_400) -> list[BaseMessage]:
    """What langchain-openai's ``custom_tool`` answers: one ``custom_tool_call_output`` block."""
    return [
        ToolMessage(
            [{"type": "custom_tool_call_output", "output": _result_text(c["id"] or "", size)}],
            tool_call_id=c["id"] or "",
            name=c["name"],
        )
        for c in response.tool_calls
    ]


def patch_outputs(response: AIMessage) -> list[BaseMessage]:
    """A user turn of ``apply_patch_call_output`` items: how langchain-openai sends them."""
    ids = [b["call_id"] for b in response.content if isinstance(b, dict) and "operation" in b]
    if not ids:
        return []
    done = [{"type": "apply_patch_call_output", "call_id": c, "status": "completed"} for c in ids]
    return [HumanMessage([{**d, "output": f"Applied {d['call_id']}"} for d in done])]


def approvals(response: AIMessage) -> list[BaseMessage]:
    """The user's approval of each MCP approval request: a user turn of
    ``mcp_approval_response`` items, as langchain-openai's docs send them."""
    ids = [
        b["id"]
        for b in response.content
        if isinstance(b, dict) and b["type"] == "mcp_approval_request"
    ]
    yes = [
        {"type": "mcp_approval_response", "approval_request_id": r, "approve": True} for r in ids
    ]
    return [HumanMessage(yes)] if yes else []


def tool_search_outputs(response: AIMessage) -> list[BaseMessage]:
    """The client's answer to a client-run tool search: a user turn of ``tool_search_output``
    items (langchain-openai sends them as those items); other calls' results as usual."""
    asked = [
        b["call_id"]
        for b in response.content
        if isinstance(b, dict) and b["type"] == "tool_search_call" and b["execution"] == "client"
    ]
    if not asked:
        return tool_messages(response)
    found = {"type": "tool_search_output", "execution": "client", "status": "completed"}
    return [HumanMessage([found | {"call_id": c, "tools": _found_tools(len(c))} for c in asked])]


def image_directive(d: int) -> HumanMessage:
    """A directive with an attached screenshot (OpenAI chat shape, a data URL)."""
    return HumanMessage(
        [
            {"type": "text", "text": DIRECTIVES[d]},
            {
                "type": "image_url",
                "image_url": {"url": f"data:image/png;base64,{png_b64(1280, 720)}"},
            },
        ]
    )


# ------------------------------------------------------------------------ wire checks

_ANTHROPIC = ChatAnthropic(model="claude-sonnet-4-5", api_key="offline-test-key")  # type: ignore[call-arg]


def anthropic_request(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """The Messages API ``messages`` langchain-anthropic sends for ``messages``: its own
    payload builder (private, so wrapped here), which also turns LangChain v1 content
    back into Anthropic's blocks."""
    payload: dict[str, Any] = _ANTHROPIC._get_request_payload(list(messages))
    wire: list[dict[str, Any]] = payload["messages"]
    return wire


def anthropic_wire(messages: Sequence[BaseMessage], *, thinking: bool = False) -> list[str]:
    """Format with langchain-anthropic, then check the Messages API's rules.

    Roles alternate and start with a user turn; every ``tool_use`` is answered by a
    ``tool_result`` in the next user turn and every ``tool_result`` answers the turn
    before; no base64 survives outside an image / document source; with thinking on,
    thinking blocks come first and the running tool loop's first assistant turn opens
    with one.
    """
    try:
        wire = anthropic_request(messages)
    except (ValueError, KeyError, TypeError) as exc:
        return [f"langchain-anthropic could not format the request: {exc}"]
    return anthropic_wire_problems(wire, thinking=thinking)


def anthropic_wire_problems(wire: Sequence[dict[str, Any]], *, thinking: bool = False) -> list[str]:
    """The Messages API's rules (see :func:`anthropic_wire`) checked on its own payload."""
    problems: list[str] = []
    if not wire or wire[0]["role"] != "user":
        problems.append("the first message is not a user turn")
    for a, b in itertools.pairwise(wire):
        if a["role"] == b["role"]:
            problems.append(f"two {a['role']} turns in a row")
    turn_start = 0
    for i, m in enumerate(wire):
        blocks = (
            m["content"]
            if isinstance(m["content"], list)
            else [{"type": "text", "text": m["content"]}]
        )
        kinds = [b.get("type") for b in blocks]
        if m["role"] == "user" and "tool_result" not in kinds:
            turn_start = i
        if m["role"] == "assistant":
            uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            thinks = [k in ("thinking", "redacted_thinking") for k in kinds]
            if any(thinks) and not all(thinks[: sum(thinks)]):
                problems.append(f"wire {i}: thinking is not first: {kinds}")
            nxt = wire[i + 1] if i + 1 < len(wire) else None
            answered = (
                [
                    b.get("tool_use_id")
                    for b in nxt["content"]
                    if isinstance(b, dict) and b.get("type") == "tool_result"
                ]
                if nxt is not None and isinstance(nxt["content"], list)
                else []
            )
            if uses and sorted(answered) != sorted(uses):
                problems.append(f"wire {i}: tool_use {uses} answered by {answered}")
        if m["role"] == "user":
            prev = wire[i - 1] if i else {"content": []}  # a first tool_result answers nothing
            prev_uses = (
                {
                    b.get("id")
                    for b in prev["content"]
                    if isinstance(b, dict) and b.get("type") == "tool_use"
                }
                if isinstance(prev["content"], list)
                else set()
            )
            for b in blocks:
                if b.get("type") == "tool_result" and b.get("tool_use_id") not in prev_uses:
                    problems.append(f"wire {i}: orphan tool_result {b.get('tool_use_id')}")
    if (
        thinking
        and wire
        and any(
            m["role"] == "assistant"
            and isinstance(m["content"], list)
            and any(b.get("type") == "tool_use" for b in m["content"])
            for m in wire[turn_start:]
        )
    ):
        first = next((m for m in wire[turn_start:] if m["role"] == "assistant"), None)
        if first is not None:
            head = (
                first["content"][0].get("type")
                if isinstance(first["content"], list) and first["content"]
                else "text"
            )
            if head not in ("thinking", "redacted_thinking"):
                problems.append(
                    f"the running tool loop's assistant turn opens with {head!r}, not thinking"
                )
    if (media := anthropic_media(wire)) > 100:
        problems.append(f"Too much media: {media} images and document pages > 100")
    return problems + anthropic_image_problems(wire)


class CountTokensEndpoint:
    """Anthropic's ``messages/count_tokens``, offline: it refuses what the Messages API
    refuses (inspect_ai#3108), and counts a quarter of the payload's JSON plus 7."""

    def __init__(self) -> None:
        self.requests: list[list[dict[str, Any]]] = []
        self.down = False  # True: every request fails, as when rate-limited
        self.refused = 0

    def count_tokens(self, *, model: str, messages: list[dict[str, Any]], **_: Any) -> Any:
        if self.down:
            self.refused += 1
            raise RuntimeError("429 rate_limit_error: too many count_tokens requests")
        if problems := anthropic_wire_problems(messages):
            raise ValueError(f"400 invalid_request_error from count_tokens: {problems}")
        self.requests.append(messages)
        return SimpleNamespace(input_tokens=len(json.dumps(messages, default=str)) // 4 + 7)


def counting_claude() -> tuple[ChatAnthropic, CountTokensEndpoint]:
    """A real ``ChatAnthropic`` whose client is :class:`CountTokensEndpoint`: what
    ``get_num_tokens_from_messages`` (its server-side count) is sent, checked offline."""
    model = ChatAnthropic(model="claude-sonnet-4-5", api_key="offline-test-key")  # type: ignore[call-arg]
    endpoint = CountTokensEndpoint()
    client = SimpleNamespace(messages=endpoint, beta=SimpleNamespace(messages=endpoint))
    model.__dict__["_client"] = client  # the cached_property's slot: no network
    return model, endpoint


def _wire_blocks(wire: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every block of a Messages API payload, tool results' content included."""
    out: list[dict[str, Any]] = []
    for m in wire:
        for b in m["content"] if isinstance(m["content"], list) else []:
            if not isinstance(b, dict):
                continue
            out.append(b)
            if isinstance(inner := b.get("content"), list):
                out.extend(x for x in inner if isinstance(x, dict))
    return out


def anthropic_image_problems(wire: Sequence[dict[str, Any]]) -> list[str]:
    """Why the Messages API refuses an image in ``wire`` (sizes read with Pillow here, not
    with the package): over 5 MB of base64 or 8,000 pixels a side; in a request of more
    than 20 images, over 2,000 pixels a side."""
    images = [b for b in _wire_blocks(wire) if b.get("type") == "image"]
    problems: list[str] = []
    for b in images:
        source = b.get("source") or {}
        if source.get("type") != "base64":
            continue
        if len(source["data"]) > 5_242_880:
            problems.append(f"image exceeds 5 MB maximum: {len(source['data'])} bytes")
            continue
        try:
            side = max(Image.open(io.BytesIO(base64.b64decode(source["data"]))).size)
        except (OSError, ValueError):  # not an image: a property test's stand-in bytes
            continue
        if side > 8_000 or (len(images) > 20 and side > 2_000):
            problems.append(
                f"an image of {side} pixels a side in a request of {len(images)} images"
            )
    return problems


def anthropic_media(wire: Sequence[dict[str, Any]]) -> int:
    """Images plus PDF pages in a Messages API payload, tool results' content included: the
    Messages API refuses more than 100 (read with pypdf here, not with the package)."""
    total = 0
    for b in _wire_blocks(wire):
        if b.get("type") not in ("image", "document"):
            continue
        source = b.get("source") or {}
        if b["type"] == "document" and source.get("type") == "base64":
            total += len(PdfReader(io.BytesIO(base64.b64decode(source["data"]))).pages)
        else:
            total += 1
    return total


def bedrock_request(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """The Converse API ``messages`` langchain-aws sends for ``messages``: its own message
    formatter (private, so wrapped here), which merges runs of one role into one turn."""
    wire, _system = _messages_to_bedrock(list(messages), model_id=_BEDROCK_CLAUDE)
    return wire


def bedrock_wire(messages: Sequence[BaseMessage], *, thinking: bool = False) -> list[str]:
    """Format with langchain-aws, then check the rules Bedrock keeps for Claude.

    Roles alternate and start with a user turn; every ``toolUse`` is answered in the next
    user turn and every ``toolResult`` answers the turn before; reasoning comes first in a
    turn; with thinking on, the running tool loop's first assistant turn opens with it.
    """
    try:
        wire = bedrock_request(messages)
    except (ValueError, KeyError, TypeError) as exc:
        return [f"langchain-aws could not format the request: {exc}"]
    problems = [] if wire and wire[0]["role"] == "user" else ["the first turn is not a user's"]
    problems += [
        f"two {a['role']} turns in a row"
        for a, b in itertools.pairwise(wire)
        if a["role"] == b["role"]
    ]
    loop_opens: list[str] | None = None
    for i, turn in enumerate(wire):
        kinds = [next(iter(b)) for b in turn["content"]]
        if turn["role"] == "user" and "toolResult" not in kinds:
            loop_opens = None
        elif turn["role"] == "assistant":
            loop_opens = kinds if loop_opens is None else loop_opens
            thinks = [k == "reasoningContent" for k in kinds]
            if not all(thinks[: sum(thinks)]):
                problems.append(f"turn {i}: reasoning is not first: {kinds}")
            uses = sorted(b["toolUse"]["toolUseId"] for b in turn["content"] if "toolUse" in b)
            nxt = wire[i + 1]["content"] if i + 1 < len(wire) else None
            answers = sorted(b["toolResult"]["toolUseId"] for b in nxt or [] if "toolResult" in b)
            if nxt is not None and uses != answers:
                problems.append(f"turn {i}: toolUse {uses} answered by {answers}")
    running = bool(wire) and any("toolResult" in b for b in wire[-1]["content"])
    if thinking and running and loop_opens and loop_opens[0] != "reasoningContent":
        problems.append(f"the running tool loop opens without its reasoning: {loop_opens}")
    return problems


def bedrock_media_problems(wire: Sequence[dict[str, Any]]) -> list[str]:
    """Converse ``messages`` that hold more than 20 images or 5 documents (a ``toolResult``'s
    content included): Bedrock's limits per message (``API_runtime_Message``)."""
    problems = []
    for i, turn in enumerate(wire):
        blocks = [
            inner
            for b in turn["content"]
            for inner in [b, *b.get("toolResult", {}).get("content", [])]
        ]
        images = sum("image" in b for b in blocks)
        documents = sum("document" in b for b in blocks)
        if images > 20 or documents > 5:
            problems.append(f"turn {i}: {images} images, {documents} documents")
    return problems


def openai_responses_wire(messages: Sequence[BaseMessage]) -> list[str]:
    """Format with langchain-openai's Responses input builder, then check its rules.

    A ``reasoning`` item must be followed by the output item it preceded (a call or an
    assistant message); every function, computer, custom or patch call, and every MCP
    approval request, has one output (decision) of its own kind after it, every output
    answers a call of its kind before it, a computer call's output is a screenshot, and a
    tool search's output a list of tools.
    """
    try:
        items = _construct_responses_api_input(list(messages))
    except (ValueError, KeyError, TypeError) as exc:
        return [f"langchain-openai could not format the request: {exc}"]
    problems: list[str] = []
    convo = [
        it
        for it in items
        if not (it.get("type") == "message" and it.get("role") in ("system", "developer"))
    ]
    if not convo or convo[0].get("role") != "user":
        problems.append("the first input item is not a user message")
    calls: dict[str, tuple[int, str]] = {}
    for i, it in enumerate(items):
        kind = it.get("type")
        if kind == "reasoning":
            nxt = items[i + 1] if i + 1 < len(items) else None
            if nxt is None or not (
                nxt.get("type") in _RESPONSES_OUTPUTS
                or (nxt.get("type") == "message" and nxt.get("role") == "assistant")
            ):
                problems.append(f"item {i}: reasoning {it.get('id')} without its following item")
        elif it.get("execution") == "server":
            continue  # a tool search OpenAI ran: its output is in the same response
        elif kind in _RESPONSES_OUTPUTS:
            calls[it["id" if kind == "mcp_approval_request" else "call_id"]] = (i, kind)
        elif kind in _RESPONSES_OUTPUTS.values():
            cid = it["approval_request_id" if kind == "mcp_approval_response" else "call_id"]
            problems.extend(_responses_output_problems(i, it, cid, calls.pop(cid, None)))
    problems.extend(f"item {at}: call {cid} has no output" for cid, (at, _) in calls.items())
    return problems


_RESPONSES_OUTPUTS = {
    "function_call": "function_call_output",
    "computer_call": "computer_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "mcp_approval_request": "mcp_approval_response",
    "tool_search_call": "tool_search_output",  # run by the client
}
"""A Responses call item's type, and the type of the output item that answers it."""


def _responses_output_problems(
    i: int, item: dict[str, Any], call_id: str, call: tuple[int, str] | None
) -> list[str]:
    """Why OpenAI would reject output ``item`` answering ``call`` (``None``: no such call)."""
    if call is None:
        return [f"item {i}: output for unknown call {call_id}"]
    if _RESPONSES_OUTPUTS[call[1]] != item["type"]:
        return [f"item {i}: a {item['type']} answers a {call[1]}"]
    if item["type"] == "tool_search_output" and not isinstance(item.get("tools"), list):
        return [f"item {i}: a tool search output's tools are not a list of tools"]
    url = str((item.get("output") or {}).get("image_url", "")) if "computer" in call[1] else ""
    if "computer" in call[1] and not url.startswith(("data:image/", "https://")):
        return [f"item {i}: a computer call's output is not a screenshot: {url[:40]!r}"]
    return []


def openai_chat_wire(messages: Sequence[BaseMessage]) -> list[str]:
    """Format with langchain-openai's chat-completions converter, then check its rules.

    Every assistant ``tool_calls`` entry (invalid ones included: langchain-openai sends
    their raw arguments) is answered by the ``tool`` messages right after it; a ``tool``
    message answers the assistant message before it; no system message mid-conversation;
    at most 2,048 messages, and 128 calls an assistant message (OpenAI's array limits).
    """
    wire = [_convert_message_to_dict(m) for m in messages]
    problems: list[str] = [f"{len(wire)} messages"] if len(wire) > 2_048 else []
    problems += [
        f"wire {i}: {len(m['tool_calls'])} tool calls"
        for i, m in enumerate(wire)
        if len(m.get("tool_calls") or []) > 128
    ]
    lead = 0
    while lead < len(wire) and wire[lead]["role"] in ("system", "developer"):
        lead += 1
    if lead == len(wire) or wire[lead]["role"] != "user":
        problems.append("no user message after the system prompt")
    open_ids: set[str] = set()
    for i, m in enumerate(wire[lead:], lead):
        if m["role"] == "tool":
            if m["tool_call_id"] not in open_ids:
                problems.append(f"wire {i}: tool message for a call not in front of it")
            open_ids.discard(m["tool_call_id"])
            continue
        if open_ids:
            problems.append(f"wire {i}: calls {sorted(open_ids)} never answered")
        open_ids = {c["id"] for c in m.get("tool_calls", [])}
        if m["role"] in ("system", "developer"):
            problems.append(f"wire {i}: a system message mid-conversation")
    if open_ids:
        problems.append(f"calls {sorted(open_ids)} never answered at the end")
    return problems


def image_wire(messages: Sequence[BaseMessage]) -> list[str]:
    """Both providers' formatters accept the images; no image goes over as text."""
    problems = anthropic_wire(messages) + openai_chat_wire(messages)
    for m in messages:
        if isinstance(m.content, str) and "base64" in m.content:
            problems.append("an image was flattened into text")
    return problems


SHAPES: dict[str, Shape] = {
    "anthropic_thinking": Shape(
        "anthropic_thinking",
        anthropic_thinking_response,
        tool_messages,
        lambda ms: anthropic_wire(ms, thinking=True),
        thinking=True,
    ),
    "bedrock_thinking": Shape(
        "bedrock_thinking",
        bedrock_thinking_response,
        tool_messages,
        lambda ms: bedrock_wire(ms, thinking=True),
        thinking=True,
        model_name=_BEDROCK_CLAUDE,
    ),
    "anthropic_native": Shape(
        "anthropic_native",
        anthropic_native_response,
        native_results,
        anthropic_wire,
        native_results=True,
    ),
    "openai_reasoning": Shape(
        "openai_reasoning", openai_reasoning_response, tool_messages, openai_responses_wire
    ),
    "anthropic_thinking_v1": Shape(
        "anthropic_thinking_v1",
        standard_content(anthropic_thinking_response),
        tool_messages,
        lambda ms: anthropic_wire(ms, thinking=True),
        thinking=True,
    ),
    "openai_reasoning_v1": Shape(
        "openai_reasoning_v1",
        standard_content(openai_reasoning_response),
        tool_messages,
        openai_responses_wire,
    ),
    "openai_computer": Shape(
        "openai_computer",
        openai_computer_response,
        computer_outputs,
        openai_responses_wire,
        agent_tools=False,
    ),
    "openai_custom_tool": Shape(
        "openai_custom_tool", openai_custom_tool_response, custom_outputs, openai_responses_wire
    ),
    "openai_apply_patch": Shape(
        "openai_apply_patch",
        openai_apply_patch_response,
        patch_outputs,
        openai_responses_wire,
        native_results=True,
        agent_tools=False,
    ),
    "openai_mcp": Shape(
        "openai_mcp",
        openai_mcp_response,
        approvals,
        openai_responses_wire,
        native_results=True,
        agent_tools=False,
    ),
    "openai_tool_search": Shape(
        "openai_tool_search",
        openai_tool_search_response,
        tool_search_outputs,
        openai_responses_wire,
        native_results=True,
        agent_tools=False,
    ),
    "images": Shape("images", image_response, image_results, image_wire),
    "invalid_tool_calls": Shape(
        "invalid_tool_calls", invalid_call_response, tool_messages, openai_chat_wire
    ),
}


def directive_message(shape: Shape, d: int) -> HumanMessage:
    return image_directive(d) if shape.name == "images" else HumanMessage(DIRECTIVES[d])


def system_prompt() -> SystemMessage:
    return SystemMessage("You are a coding agent. Use the tools; keep the tests green.")
