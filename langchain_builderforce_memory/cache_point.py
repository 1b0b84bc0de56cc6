"""A prompt-cache breakpoint before the volatile tail, for a provider that caches only there.

Anthropic caches a prompt only up to a ``cache_control`` breakpoint, and reads an entry
back only when a later request repeats that prefix exactly. Its automatic caching (the
request's top-level ``cache_control``, which LangChain's
``AnthropicPromptCachingMiddleware`` sets) puts the breakpoint on the request's last block:
here the brief, which changes every turn and sits after the newest messages. Each entry
then ends with a brief the next request no longer holds, so no entry is ever read: every
request pays the cache write on its whole prefix, and the cached prefix our view keeps
stable (the reason its front moves only at a cut, a clear batch or a fold) is never
billed as cached.

:func:`cached_before_tail` puts the same ``cache_control`` on the last stable message
before the tail. The entry written there is a prefix of the next request (a tool loop
adds a call and its result after it), so the provider reads it back, within the 20
blocks it looks back from a breakpoint.

A caching middleware listed AFTER ours asks for the cache only once we have built the
view, so the request we are handed says nothing. The provider's last answer does: its
usage reports the cache it wrote and for how long (:func:`learned_control`), and from the
next request on the view carries the breakpoint as if it had been asked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory.messages import is_volatile_tail

__all__ = ["MAX_BREAKPOINTS", "breakpoints", "cached_before_tail", "learned_control"]

MAX_BREAKPOINTS: Final = 4
"""Anthropic refuses a request with more ``cache_control`` breakpoints than this."""

_OTHERS: Final = 3
"""Breakpoints the request may carry that the view does not show: the system prompt's, the
last tool schema's and the top-level automatic one (what ``AnthropicPromptCachingMiddleware``
adds, before or after us). With 2, a view holding one breakpoint of the caller's (a
document cached in the first user turn) got ours too: five in all, and Anthropic refuses
more than four. A view that shows its system prompt counts that one twice: ours is then
left out, which costs a cache read, never a refused request."""

_UNCACHEABLE: Final = frozenset({"thinking", "redacted_thinking"})


def breakpoints(messages: Sequence[BaseMessage]) -> int:
    """How many content blocks of ``messages`` carry a ``cache_control`` breakpoint.

    Example:
        >>> from langchain_core.messages import SystemMessage
        >>> marked = {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
        >>> breakpoints([SystemMessage([marked]), HumanMessage("hi")])
        1
    """
    return sum(
        1
        for m in messages
        if isinstance(m.content, list)
        for b in m.content
        if isinstance(b, dict) and "cache_control" in b
    )


def cached_before_tail(view: list[BaseMessage], control: Mapping[str, str]) -> list[BaseMessage]:
    """``view`` with ``control`` on the last user turn or tool result before its tail.

    ``view`` itself when it ends with no volatile tail (the automatic breakpoint is then
    on a stable block), when no message before the tail can carry one, or when the view
    already holds more breakpoints than the request leaves room for. The message is a
    copy; the caller's is not changed.

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> from langchain_builderforce_memory.handoff.volatile import volatile_tail
        >>> call = AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}])
        >>> view = [HumanMessage("list it"), call, ToolMessage("a.py", tool_call_id="c1")]
        >>> sent = cached_before_tail([*view, volatile_tail(["brief"])], {"type": "ephemeral"})
        >>> sent[2].content
        [{'type': 'text', 'text': 'a.py', 'cache_control': {'type': 'ephemeral'}}]
        >>> view[2].content
        'a.py'
    """
    if len(view) < 2 or not is_volatile_tail(view[-1]):
        return view
    if breakpoints(view) + _OTHERS + 1 > MAX_BREAKPOINTS:
        return view
    for i in range(len(view) - 2, -1, -1):
        message = view[i]
        if not isinstance(message, HumanMessage | ToolMessage):
            continue
        content = _marked(message.content, control)
        if content is not None:
            return [*view[:i], message.model_copy(update={"content": content}), *view[i + 1 :]]
    return view


def _marked(
    content: str | list[str | dict[str, object]], control: Mapping[str, str]
) -> list[str | dict[str, object]] | None:
    """``content`` with ``control`` on its last block (``None``: no block may carry it)."""
    if isinstance(content, str):
        content = [content]
    last = content[-1] if content else None
    if isinstance(last, str):
        block: dict[str, object] | None = {"type": "text", "text": last} if last else None
    elif isinstance(last, dict) and last.get("type") not in _UNCACHEABLE and last.get("text") != "":
        block = last  # Anthropic refuses a breakpoint on thinking, or on an empty text
    else:
        block = None
    if block is None:
        return None
    return [*content[:-1], {**block, "cache_control": dict(control)}]


def learned_control(
    record: Sequence[BaseMessage],
    system: BaseMessage | None = None,
    tools: Sequence[object] = (),
) -> dict[str, str] | None:
    """The breakpoint a request was given after us, read off the provider's last answer.

    Its usage says Anthropic wrote a prompt cache, and for how long (langchain-anthropic's
    ``ephemeral_5m_input_tokens`` / ``ephemeral_1h_input_tokens``), though neither the
    system prompt nor the tools we were handed carry a breakpoint: a caching middleware
    listed after ours, or ``cache_control`` in the model's own arguments, marks the last
    block, which is our brief. ``None`` when the answer says no such thing, or not for how
    long: a 5-minute breakpoint before a 1-hour one is refused, and a provider that caches
    on its own (OpenAI's ``cache_read``) reports no such write.

    Example:
        >>> usage = {"input_tokens": 900, "output_tokens": 9, "total_tokens": 909,
        ...          "input_token_details": {"ephemeral_1h_input_tokens": 800}}
        >>> learned_control([HumanMessage("hi"), AIMessage("ok", usage_metadata=usage)])
        {'type': 'ephemeral', 'ttl': '1h'}
        >>> learned_control([HumanMessage("hi")]) is None
        True
    """
    extras = [t if isinstance(t, Mapping) else getattr(t, "extras", None) for t in tools]
    marked_tools = any(isinstance(e, Mapping) and "cache_control" in e for e in extras)
    if marked_tools or (system is not None and breakpoints([system])):
        return None  # the caller places its own breakpoints: add none it did not ask for
    answer = next((m for m in reversed(record) if isinstance(m, AIMessage)), None)
    # Read as untrusted: a message built without validation may carry any usage at all.
    usage: object = answer.usage_metadata if answer is not None else None
    details = usage.get("input_token_details") if isinstance(usage, Mapping) else None
    written: Mapping[str, object] = details if isinstance(details, Mapping) else {}
    for ttl in ("1h", "5m"):  # the longer one when both were written: it must come first
        count = written.get(f"ephemeral_{ttl}_input_tokens")
        if isinstance(count, int) and count > 0:
            return {"type": "ephemeral", "ttl": ttl}
    return None
