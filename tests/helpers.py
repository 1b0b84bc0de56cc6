"""Shared test fakes and builders (append only: several test modules use these)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_from_dict,
)

TRANSCRIPTS_DIR = Path(__file__).resolve().parents[2] / "shared" / "transcripts"
"""The recorded agent runs, laid beside the project root (as CI lays them)."""


def transcript_files() -> list[Path]:
    """Every recorded transcript JSON (not the manifest); empty when the folder is absent."""
    if not TRANSCRIPTS_DIR.is_dir():
        return []
    return sorted(p for p in TRANSCRIPTS_DIR.glob("*.json") if p.name != "manifest.json")


def load_transcript(path: Path) -> list[BaseMessage]:
    """A recorded run as LangChain messages."""
    return messages_from_dict(json.loads(path.read_text(encoding="utf-8")))


def model_turns(messages: list[BaseMessage]) -> Iterator[list[BaseMessage]]:
    """Each prefix of a record at which a model would be called: right before each AIMessage,
    and the whole record at the end."""
    for i, m in enumerate(messages):
        if isinstance(m, AIMessage) and i > 0:
            yield messages[:i]
    yield messages


def msg(role: str, content: str = "x") -> BaseMessage:
    """A message of a seed role ('system' | 'user' | 'assistant' | 'tool')."""
    if role == "system":
        return SystemMessage(content)
    if role == "user":
        return HumanMessage(content)
    if role == "assistant":
        return AIMessage(content)
    if role == "tool":
        return ToolMessage(content, tool_call_id="orphan")
    raise ValueError(role)


def convo_of(n: int, content: Callable[[int], str] = lambda i: f"m{i}") -> list[BaseMessage]:
    """Seed ``convoOf``: user/assistant pairs, ``n`` messages long, each message distinct."""
    return [HumanMessage(content(i)) if i % 2 == 0 else AIMessage(content(i)) for i in range(n)]


def tool_round(i: int, result: str, *, calls: int = 1) -> list[BaseMessage]:
    """An assistant turn with ``calls`` parallel tool calls, then their results."""
    ids = [f"call-{i}-{k}" for k in range(calls)]
    call = AIMessage(
        f"step {i}",
        tool_calls=[
            {"name": "read_file", "args": {"path": f"f{i}_{k}.py"}, "id": cid}
            for k, cid in enumerate(ids)
        ],
    )
    return [call, *(ToolMessage(result, tool_call_id=cid, name="read_file") for cid in ids)]


def seed_msgs(spec: list[tuple[str, str]]) -> list[BaseMessage]:
    """Seed-style ``[(role, content)]`` as LangChain messages, with the tool results after an
    assistant turn linked to tool calls on it (the seed's messages carry no ids; ours must,
    or every such result would be an orphan). A tool result with no assistant before it
    stays an orphan, as in the seed's orphan cases."""
    out: list[BaseMessage] = []
    i = 0
    while i < len(spec):
        role, content = spec[i]
        if role == "assistant":
            j = i + 1
            while j < len(spec) and spec[j][0] == "tool":
                j += 1
            ids = [f"c{i}_{k}" for k in range(j - i - 1)]
            out.append(
                AIMessage(content, tool_calls=[{"name": "t", "args": {}, "id": cid} for cid in ids])
                if ids
                else AIMessage(content)
            )
            out.extend(
                ToolMessage(spec[i + 1 + k][1], tool_call_id=cid) for k, cid in enumerate(ids)
            )
            i = j
            continue
        out.append(msg(role, content))
        i += 1
    return out


def tool_calls_message(*calls: tuple[str, dict[str, object]], prefix: str = "call") -> AIMessage:
    """An assistant turn calling each ``(name, args)`` in parallel, ids ``{prefix}-{i}``."""
    return AIMessage(
        "",
        tool_calls=[
            {"name": name, "args": args, "id": f"{prefix}-{i}", "type": "tool_call"}
            for i, (name, args) in enumerate(calls)
        ],
    )


def tool_node_graph(tools: list[object], **tool_node_kwargs: object) -> object:
    """A compiled graph that runs one ``ToolNode`` over ``state["messages"]``:
    START -> tools -> END. Feed it ``{"messages": [tool_calls_message(...)]}``."""
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(tools, **tool_node_kwargs))  # type: ignore[arg-type]
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile()
