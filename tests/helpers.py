"""Shared test fakes and builders (append only: several test modules use these)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
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


# --- hand-off packer fakes (tests/test_handoff*.py) ---------------------------------------


def msg14(role: str, tag: str) -> BaseMessage:
    """Seed ``handoff.test.ts`` ``msg``: ``tag`` padded to 40 chars, so exactly 14 tokens
    under the default estimate (40 / 4 + 4)."""
    return msg(role, tag.ljust(40, "."))


class ScriptedSummarizer:
    """A sync summarizer function: records each prompt it is sent, then returns ``answer``
    (or raises ``error``). ``release`` (a threading.Event) makes it block until set, to
    exercise timeouts without sleeping."""

    def __init__(
        self,
        answer: str | None = "SUMMARY OF THE DROPPED MIDDLE",
        *,
        error: BaseException | None = None,
        block_until: threading.Event | None = None,
    ) -> None:
        self.answer = answer
        self.error = error
        self.block_until = block_until
        self.calls: list[list[BaseMessage]] = []

    def __call__(self, prompt: list[BaseMessage]) -> str | None:
        self.calls.append(prompt)
        if self.block_until is not None:
            self.block_until.wait(10)
        if self.error is not None:
            raise self.error
        return self.answer


class ScriptedRecall:
    """A sync ``recall(query, budget_chars)``: records each call, returns ``answer`` (or raises)."""

    def __init__(
        self, answer: str = "RECALLED MEMORY", *, error: BaseException | None = None
    ) -> None:
        self.answer = answer
        self.error = error
        self.calls: list[tuple[str, int]] = []

    def __call__(self, query: str, budget_chars: int) -> str:
        self.calls.append((query, budget_chars))
        if self.error is not None:
            raise self.error
        return self.answer


async def async_recall_never(query: str, budget_chars: int) -> str:
    """An async recall that never answers in time (cancelled by the caller's timeout)."""
    await asyncio.Event().wait()
    return ""


# ------------------------------------------------- chat histories (test_history*.py)


class RacyHistory(BaseChatMessageHistory):
    """A history that rewrites its whole list on every append and yields to the event loop
    between reading and writing it (like a JSON file or a key-value store over async I/O):
    unserialised concurrent writers lose messages."""

    def __init__(self) -> None:
        self._stored: list[BaseMessage] = []

    @property  # type: ignore[override]
    def messages(self) -> list[BaseMessage]:
        return list(self._stored)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        self._stored = [*self._stored, *messages]

    async def aget_messages(self) -> list[BaseMessage]:
        await asyncio.sleep(0)
        return list(self._stored)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        current = list(self._stored)
        await asyncio.sleep(0)
        self._stored = [*current, *messages]

    def clear(self) -> None:
        self._stored = []


class IdDroppingHistory(BaseChatMessageHistory):
    """A history that serialises like most stores (``message_to_dict``) but does not
    persist message ids; ``store`` is the "database" (share it to reopen a session)."""

    def __init__(self, store: list[dict[str, Any]] | None = None) -> None:
        self.store: list[dict[str, Any]] = store if store is not None else []

    @property  # type: ignore[override]
    def messages(self) -> list[BaseMessage]:
        return messages_from_dict(json.loads(json.dumps(self.store)))

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        for m in messages:
            data = message_to_dict(m)
            data["data"]["id"] = None
            self.store.append(data)

    def clear(self) -> None:
        self.store.clear()
