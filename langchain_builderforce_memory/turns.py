"""Provider turns: where a turn begins, and the thinking rules a running tool loop keeps.

A provider reads a conversation as turns: a user turn (the user's words, or tool results)
and the assistant's answer. A tool loop is one assistant turn across its calls and their
results; with Anthropic's extended thinking on, the running loop must open with its
thinking step (the ``thinking`` / ``redacted_thinking`` block it began with), or the
request is rejected. A user message right after tool results goes in the same user turn
as those results (langchain-anthropic merges them), so the loop it joined runs on.
How each content block is read is :mod:`langchain_builderforce_memory.blocks`' concern.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    ToolMessage,
)

from langchain_builderforce_memory.blocks import (
    THINKING_TYPES,
    block_dicts,
    call_ids,
    is_tool_result_turn,
    wire_type,
)

__all__ = [
    "current_turn_start",
    "has_thinking",
    "lost_thinking",
    "misplaced_thinking",
    "opening_span",
    "opens_turn",
    "opens_turn_at",
    "opens_with_thinking",
    "tail_restarts",
    "thinking_first",
    "thinking_out_of_place",
    "thinking_problems",
    "thinking_restart",
    "thinking_span",
    "turn_step",
]


_SIGNED_THINKING: Final = frozenset({"thinking", "redacted_thinking"})
"""Anthropic's thinking blocks: with thinking on, the running tool loop must open with one."""
_OTHER_THINKERS: Final = frozenset({"google_genai", "google_vertexai", "mistralai"})
"""Providers whose ``thinking`` blocks are not Claude's (Gemini's, Magistral's): a thought
of theirs sets no turn rule, and comes on some steps only."""


def _is_signed_thinking(block: Mapping[str, object], message: BaseMessage) -> bool:
    """Whether ``block`` reaches Anthropic as a ``thinking`` / ``redacted_thinking`` block.

    Natively, or as v1 content: langchain-anthropic sends a ``reasoning`` block of a
    Claude message as ``thinking``; a signed ``reasoning`` block is Claude's whoever
    recorded it, as is a signed or redacted ``reasoning_content`` block (langchain-aws:
    Claude on Bedrock, whose Converse API keeps Anthropic's rule). Not the thoughts of
    :data:`_OTHER_THINKERS`' messages.
    """
    kind, provider = wire_type(block), message.response_metadata.get("model_provider")
    if provider in _OTHER_THINKERS or kind not in THINKING_TYPES:
        return False
    inner = block.get("reasoning_content" if kind == "reasoning_content" else "extras")
    signed = isinstance(inner, Mapping) and bool({"signature", "redacted_content"} & set(inner))
    return kind in _SIGNED_THINKING or (kind == "reasoning" and provider == "anthropic") or signed


def opens_with_thinking(message: BaseMessage) -> bool:
    """True when an assistant message's content opens with an Anthropic thinking block."""
    first = message.content[0] if isinstance(message.content, list) and message.content else None
    return isinstance(first, Mapping) and _is_signed_thinking(first, message)


def has_thinking(message: BaseMessage) -> bool:
    """True when an assistant message carries an Anthropic thinking block."""
    return isinstance(message, AIMessage) and any(
        _is_signed_thinking(b, message) for b in block_dicts(message)
    )


def _turn_role(message: BaseMessage) -> str:
    """``"user"``, ``"tool"``, ``"assistant"`` or ``"other"`` as the wire groups turns."""
    if isinstance(message, ToolMessage | FunctionMessage) or is_tool_result_turn(message):
        return "tool"
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, ChatMessage):
        role = message.role.lower()
        if role in {"tool", "function"}:
            return "tool"
        if role in {"user", "human"}:
            return "user"
    return "other"


def current_turn_start(messages: Sequence[BaseMessage]) -> int:
    """Where the provider's current turn begins; ``len(messages)`` when there is none.

    The last message that :func:`opens_turn_at`: the model answers it with a new turn
    (with thinking on, a turn that opens with thinking). A user message right after tool
    results is part of the running turn, not the start of another.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> current_turn_start([HumanMessage("a"), AIMessage("b"), HumanMessage("c")])
        2
    """
    # Read from the end. The fold asks on every model call, and in a single-directive
    # tool loop the turn is the whole record: it asks the conversation's RecordFacts
    # (``facts.turn_start``), which read only the new messages.
    i = len(messages) - 1
    while i >= 0:
        if _turn_role(messages[i]) != "user":
            i -= 1
            continue
        last, role = i, "user"
        i -= 1
        while i >= 0 and (role := _turn_role(messages[i])) == "user":
            i -= 1
        if i < 0 or role != "tool":
            return last
        i -= 1  # user messages that joined the tool results' turn: look before them
    return len(messages)


def opens_turn(message: BaseMessage) -> bool:
    """Whether ``message`` is a user message, not a tool result (see :func:`opens_turn_at`)."""
    return _turn_role(message) == "user"


def opens_turn_at(messages: Sequence[BaseMessage], i: int) -> bool:
    """Whether ``messages[i]`` begins a provider turn.

    A user message, not a tool result, that does not come right after one (or after user
    messages that do). langchain-anthropic sends a user message that follows tool results
    in the same user turn as those results, and Anthropic reads that turn as the running
    tool loop's (the
    user spoke while the agent was working, or a tool ended the agent's run): with
    thinking on, the loop must still open with the thinking step it began with.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> call = AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "t1"}])
        >>> loop = [HumanMessage("go"), call, ToolMessage("a", tool_call_id="t1")]
        >>> [opens_turn_at([*loop, HumanMessage("and b")], i) for i in (0, 3)]
        [True, False]
    """
    if not opens_turn(messages[i]):
        return False
    j = i - 1
    while j >= 0 and _turn_role(messages[j]) == "user":  # user messages in a row merge
        j -= 1
    return j < 0 or _turn_role(messages[j]) != "tool"


def turn_step(message: BaseMessage, after_results: bool) -> tuple[bool, bool]:
    """:func:`opens_turn_at` read forward, one message at a time.

    ``after_results``: whether the messages before ``message`` end with tool results (and
    user messages after them). Returns whether ``message`` opens a turn, and
    ``after_results`` for the next message.

    Example:
        >>> from langchain_core.messages import HumanMessage, ToolMessage
        >>> turn_step(ToolMessage("a", tool_call_id="t1"), False)
        (False, True)
        >>> turn_step(HumanMessage("and b"), True)
        (False, True)
    """
    role = _turn_role(message)
    if role == "user":
        return not after_results, after_results
    return False, role == "tool"


def thinking_problems(
    messages: Sequence[BaseMessage], *, thinking: bool | None = None
) -> list[str]:
    """Thinking blocks a provider would reject: reordered, or lost from the current turn.

    Anthropic's rule: with extended thinking on, the assistant turn whose tool loop is
    running (the current turn, see :func:`current_turn_start`) must open with its
    ``thinking`` / ``redacted_thinking`` block, and thinking blocks come before the text
    and tool calls of their message. ``thinking=None`` infers "thinking is on" from a
    thinking block in the current turn; pass ``thinking=True`` when the provider has it
    on (then a turn that lost all its thinking is reported too).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> call = AIMessage([{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}])
        >>> loop = [HumanMessage("go"), call, ToolMessage("a.py", tool_call_id="t1")]
        >>> thinking_problems(loop, thinking=True)[0][:40]
        'message 1: the current turn opens with a'
    """
    problems = misplaced_thinking(messages)
    start = current_turn_start(messages)
    uses = thinking if thinking is not None else any(has_thinking(m) for m in messages[start:])
    if uses and (lost := lost_thinking(messages, start)) is not None:
        problems.append(lost)
    return problems


def misplaced_thinking(messages: Sequence[BaseMessage], begin: int = 0) -> list[str]:
    """:func:`thinking_problems`' first rule, read from ``messages[begin]`` on."""
    return [
        f"message {i}: a thinking block follows other content; providers need thinking "
        "blocks first in their message"
        for i in range(begin, len(messages))
        if isinstance(m := messages[i], AIMessage) and thinking_out_of_place(m)
    ]


def lost_thinking(messages: Sequence[BaseMessage], start: int) -> str | None:
    """:func:`thinking_problems`' second rule, with thinking on and the turn at ``start``."""
    turn = [(i, m) for i in range(start, len(messages)) if isinstance(m := messages[i], AIMessage)]
    if not turn or not any(call_ids(m) for _, m in turn) or _opens_loop(turn[0][1]):
        return None
    at, first = turn[0]
    kinds = [b.get("type") for b in block_dicts(first)] or ["text"]
    return (
        f"message {at}: the current turn opens with an assistant message of {kinds}, but "
        "thinking is on and its tool loop is running: its thinking block was lost (keep "
        "the turn's thinking blocks first and verbatim)"
    )


def thinking_span(messages: Sequence[BaseMessage]) -> tuple[int, int] | None:
    """The current turn's opening assistant message and its tool results, as ``(start, end)``.

    Only when that message carries an Anthropic thinking block: with thinking on, the
    running tool loop must open with it, so a view that cuts inside the current turn keeps
    this span right after the directive (every later step of the loop may go to the note,
    the thinking may not). ``None`` otherwise.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> think = {"type": "thinking", "thinking": "hm", "signature": "s"}
        >>> call = AIMessage([think, {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}])
        >>> thinking_span([HumanMessage("go"), call, ToolMessage("a", tool_call_id="t1")])
        (1, 3)
    """
    return opening_span(messages, current_turn_start(messages))


def opening_span(messages: Sequence[BaseMessage], start: int) -> tuple[int, int] | None:
    """The turn at ``start``'s opening thinking step and its tool results, or ``None``.

    ``(start, end)`` of the turn's first assistant message and the tool results after it,
    when that message carries a thinking block. :func:`thinking_span` is this for the
    current turn. A view that restates an earlier turn's directive keeps that turn's
    opening thinking step with it, as it did while the turn was current, so the front of
    the view does not move when a new turn begins.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> think = {"type": "thinking", "thinking": "hm", "signature": "s"}
        >>> call = AIMessage([think, {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}])
        >>> turn = [HumanMessage("go"), call, ToolMessage("a", tool_call_id="t1")]
        >>> opening_span([*turn, HumanMessage("next"), AIMessage("ok")], 0)
        (1, 3)
    """
    first = -1
    for i in range(start + 1, len(messages)):
        if isinstance(messages[i], AIMessage):
            first = i
            break
        if opens_turn_at(messages, i):
            return None
    if first < 0 or not has_thinking(messages[first]):
        return None
    # Assistant messages in a row are one message on the wire: the step is all of them.
    end = first + 1
    while end < len(messages) and _turn_role(messages[end]) == "assistant":
        end += 1
    while end < len(messages) and _turn_role(messages[end]) == "tool":
        end += 1
    return first, end


def thinking_restart(messages: Sequence[BaseMessage]) -> int:
    """Where a new turn must begin so the current one opens with its thinking, or -1.

    A current turn whose first assistant message has no thinking block while a later one
    does (a record that turned thinking on mid-turn): starting a turn right before that
    later message makes the request valid. -1 when there is nothing to do or no such
    message (a turn that lost all its thinking cannot be repaired).
    """
    start = current_turn_start(messages)
    turn = [i for i in range(start, len(messages)) if isinstance(messages[i], AIMessage)]
    if not turn or not any(call_ids(messages[i]) for i in turn):
        return -1
    if _opens_loop(messages[turn[0]]):
        return -1
    return next((i for i in turn if opens_with_thinking(messages[i])), -1)


def tail_restarts(convo: Sequence[BaseMessage], tail_start: int) -> bool:
    """Whether a note (a user turn) then ``convo[tail_start:]`` needs a turn restarted.

    :func:`~langchain_builderforce_memory.validity.repair_request` then starts a new turn
    at the loop's first thinking step (:func:`thinking_restart`), adding a placeholder
    answer and user turn: two messages a view's message count must hold.

    Example:
        >>> from langchain_core.messages import AIMessage, ToolMessage
        >>> think = {"type": "thinking", "thinking": "hm", "signature": "s"}
        >>> call = {"name": "ls", "args": {}, "id": "t1"}
        >>> convo = [AIMessage("", tool_calls=[call]), ToolMessage("a", tool_call_id="t1"),
        ...          AIMessage([think], tool_calls=[{**call, "id": "t2"}]),
        ...          ToolMessage("b", tool_call_id="t2")]
        >>> tail_restarts(convo, 0), tail_restarts(convo, 2)
        (True, False)
    """
    return thinking_restart([HumanMessage(""), *convo[tail_start:]]) >= 0


def _opens_loop(message: BaseMessage) -> bool:
    """Whether an assistant message may open a running loop with thinking on.

    It opens with its thinking, or with a provider compaction block: the provider reads
    nothing before that block, the loop's earlier thinking included.
    """
    blocks = block_dicts(message)
    return opens_with_thinking(message) or (bool(blocks) and wire_type(blocks[0]) == "compaction")


def thinking_out_of_place(message: BaseMessage) -> bool:
    """True when a thinking block follows a non-thinking block (reordered or separated).

    A plain string in a content list is a text block to the providers' formatters.
    """
    if not isinstance(message.content, list):
        return False
    seen_other = False
    for block in message.content:
        if isinstance(block, Mapping) and wire_type(block) in THINKING_TYPES:
            if seen_other:
                return True
        else:
            seen_other = True
    return False


def thinking_first(message: AIMessage) -> tuple[AIMessage, bool]:
    """``message`` with its thinking blocks moved in front (a copy), and whether it moved."""
    if not thinking_out_of_place(message) or not isinstance(message.content, list):
        return message, False
    blocks = message.content

    def thought(b: object) -> bool:
        return isinstance(b, Mapping) and wire_type(b) in THINKING_TYPES

    ordered = [b for b in blocks if thought(b)] + [b for b in blocks if not thought(b)]
    return message.model_copy(update={"content": ordered}), True
