"""An assistant message's tool calls within what a request may hold: 128 on OpenAI.

OpenAI refuses an assistant message of more than 128 tool calls ("Invalid
'messages[2].tool_calls': array too long. Expected an array with maximum length 128"),
though its own model makes them: a turn of 200 parallel calls was answered, and every
request after it refused (openai/openai-dotnet#317). :func:`within_calls_limit` sends
such a message as consecutive assistant messages of at most :data:`MAX_MESSAGE_TOOL_CALLS`
calls, each followed by its own results: the same calls and results, in a shape every
provider takes. The first part keeps the message's text and id; the others are stamped
(``"split_calls"``). The agent adapters run it for an OpenAI model only
(:func:`~langchain_builderforce_memory.agents.native.limits_calls_per_message`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_builderforce_memory.messages import message_id, stamp

__all__ = ["MAX_MESSAGE_TOOL_CALLS", "within_calls_limit"]

MAX_MESSAGE_TOOL_CALLS: Final = 128
"""Tool calls one assistant message may hold (OpenAI)."""


def _splittable(message: AIMessage) -> bool:
    """A message of more calls than the limit, its calls all in ``tool_calls``.

    Its content is text only: calls carried as content blocks (Anthropic ``tool_use``,
    Responses items) are another provider's shape, left as they are.
    """
    if len(message.tool_calls) + len(message.invalid_tool_calls) <= MAX_MESSAGE_TOOL_CALLS:
        return False
    content = message.content
    return isinstance(content, str) or all(
        isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text") for b in content
    )


def _parts(message: AIMessage, results: Sequence[ToolMessage]) -> list[BaseMessage]:
    """``message`` as parts of at most the limit, each followed by the results it called."""
    first = MAX_MESSAGE_TOOL_CALLS - len(message.invalid_tool_calls)
    if first < 1:
        return [message, *results]
    calls = list(message.tool_calls)
    chunks = [calls[:first]]
    chunks += [
        calls[k : k + MAX_MESSAGE_TOOL_CALLS]
        for k in range(first, len(calls), MAX_MESSAGE_TOOL_CALLS)
    ]
    out: list[BaseMessage] = []
    placed: set[int] = set()
    for n, chunk in enumerate(chunks):
        if n == 0:
            ids = {c["id"] for c in chunk} | {c.get("id") for c in message.invalid_tool_calls}
            out.append(message.model_copy(update={"tool_calls": chunk}))
        else:
            ids = {c["id"] for c in chunk}
            part = AIMessage(
                "", tool_calls=chunk, id=f"{message.id}-calls-{n}" if message.id else None
            )
            out.append(stamp(part, "split_calls", of=message_id(message), part=n))
        for k, result in enumerate(results):
            if k not in placed and result.tool_call_id in ids:
                out.append(result)
                placed.add(k)
    out += [r for k, r in enumerate(results) if k not in placed]  # none in a valid view
    return out


def within_calls_limit(view: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``view`` with each assistant message of too many calls sent in parts.

    A message of more than :data:`MAX_MESSAGE_TOOL_CALLS` calls becomes consecutive
    assistant messages of at most that many, each followed by the tool results that
    answer its calls (in their order in ``view``). Any other message is the same object;
    a new copy of each message changed: never the caller's.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> calls = [{"name": "ls", "args": {}, "id": f"c{i}"} for i in range(130)]
        >>> view = [HumanMessage("list"), AIMessage("", tool_calls=calls)]
        >>> view += [ToolMessage("ok", tool_call_id=f"c{i}") for i in range(130)]
        >>> [len(m.tool_calls) for m in within_calls_limit(view) if isinstance(m, AIMessage)]
        [128, 2]
    """
    out: list[BaseMessage] = []
    i = 0
    while i < len(view):
        message = view[i]
        if not (isinstance(message, AIMessage) and _splittable(message)):
            out.append(message)
            i += 1
            continue
        j = i + 1
        while j < len(view) and isinstance(view[j], ToolMessage):
            j += 1
        results = [r for r in view[i + 1 : j] if isinstance(r, ToolMessage)]
        out += _parts(message, results)
        i = j
    return out
