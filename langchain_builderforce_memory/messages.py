"""Message basics: roles, stamps, stable ids, and tool-call units.

Every pass of this package reads messages through these: :func:`role_of` reduces any
LangChain message to a provider role, :func:`stamp` marks what the package generated,
:func:`message_id` gives every message a stable id, and :func:`tool_call_units` splits a
list into the runs no view may cut. The strict-provider checks built on them
(:func:`~langchain_builderforce_memory.validity.request_problems`,
:func:`~langchain_builderforce_memory.validity.repair_request`) are in
:mod:`langchain_builderforce_memory.validity`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeVar, cast

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    MessageLikeRepresentation,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)

from langchain_builderforce_memory.blocks import (
    call_ids,
    is_tool_result_turn,
    legacy_function_call,
    tool_result_ids,
)
from langchain_builderforce_memory.jsontext import json_text

__all__ = [
    "DIRECTIVE_KIND",
    "STAMP_KEY",
    "VOLATILE_TAIL_KIND",
    "Role",
    "ToolCallUnit",
    "as_messages",
    "check_sound",
    "clean_text",
    "is_generated",
    "is_stamped",
    "is_volatile_tail",
    "leading_system_count",
    "message_id",
    "role_of",
    "stamp",
    "stamp_of",
    "tool_call_units",
]

Role = Literal["system", "user", "assistant", "tool"]
"""The four roles every provider's chat format reduces to."""

STAMP_KEY = "builderforce_memory"
"""The ``additional_kwargs`` key that marks a message this package generated.

Its value is a dict with at least ``kind`` (``"note"``, ``"directive"``,
``"volatile_tail"``, ``"consolidation_marker"``, ``"repair"``). Later passes recognise
generated messages by it, never by their text: a user who types a marker's words is
still a user.
"""

_LC_SOURCE = "lc_source"

_CHAT_ROLES: Mapping[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
}

M = TypeVar("M", bound=BaseMessage)


def as_messages(
    messages: Sequence[MessageLikeRepresentation], *, where: str, every: bool = False
) -> Sequence[BaseMessage]:
    """``messages`` as LangChain messages: what ``convert_to_messages`` accepts is accepted.

    Tuples (``("user", "hi")``), strings, dicts (``{"role": "user", "content": "hi"}``) and
    message objects may be mixed, as everywhere in LangChain. A list of messages is
    returned as it is (never copied or changed). The entry points that run every turn on a
    whole record look at its two ends only (``every=False``): a record in graph state is
    already made of messages, and looking at each one would make a turn O(record); a stray
    tuple inside it still gets :func:`role_of`'s error naming the fix. The chat history
    checks every new message (``every=True``): they are few, and they are stored.

    Args:
        messages: The messages, or anything ``convert_to_messages`` takes for them.
        where: The entry point, for the error message.
        every: Check every element, not only the two ends.

    Raises:
        TypeError: a bare string or a non-sequence where a list of messages belongs.
        ValueError: an element ``convert_to_messages`` cannot read, naming it.

    Example:
        >>> [m.type for m in as_messages([("user", "hi"), ("ai", "hello")], where="demo")]
        ['human', 'ai']
    """
    if isinstance(messages, str) or not isinstance(messages, Sequence):
        msg = (
            f"{where}: messages must be a list of messages (or tuples / dicts that "
            f"convert_to_messages takes); got {type(messages).__name__}."
        )
        raise TypeError(msg)
    if not messages:
        return []
    ends = (messages[0], messages[-1])
    if all(isinstance(m, BaseMessage) for m in (messages if every else ends)):
        return cast("Sequence[BaseMessage]", messages)
    try:
        return convert_to_messages(messages)
    except (ValueError, NotImplementedError, TypeError) as exc:
        msg = (
            f"{where}: a message could not be read ({exc}). Pass LangChain messages, "
            "(role, content) tuples or {'role': ..., 'content': ...} dicts."
        )
        raise ValueError(msg) from exc


def check_sound(message: BaseMessage) -> None:
    """Raise a ``TypeError`` naming the field when ``message`` has a shape its class rejects.

    A message built by its constructor is validated; one built by ``model_construct`` or
    edited in place is not, and a ``None`` where a list belongs would otherwise fail deep
    inside a turn with an error naming neither the message nor the fix. Only the fields
    every pass relies on are read, once per message: each entry point checks a message
    when it first sees it (:class:`~langchain_builderforce_memory.facts.RecordFacts`, the
    chat history's scan, the hand-off packer).

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> check_sound(AIMessage("hi"))
        >>> check_sound(AIMessage.model_construct(content="", tool_calls=None))
        Traceback (most recent call last):
        ...
        TypeError: The record holds a malformed AIMessage (id None): tool_calls is None, \
not a list of tool calls. Build messages with their constructors (e.g. AIMessage(content=..., \
tool_calls=[...])), which validate them; model_construct() and in-place edits do not.
    """
    problem = _shape_problem(message)
    if problem is not None:
        field, value, expected = problem
        msg = (
            f"The record holds a malformed {type(message).__name__} (id {message.id!r}): "
            f"{field} is {value!r:.60}, not {expected}. Build messages with their "
            "constructors (e.g. AIMessage(content=..., tool_calls=[...])), which validate "
            "them; model_construct() and in-place edits do not."
        )
        raise TypeError(msg)


_SHAPE: Final = (
    ("id", (str, type(None)), "a string or None"),
    ("content", (str, list), "a string or a list of content blocks"),
    ("additional_kwargs", dict, "a dict"),
    ("response_metadata", dict, "a dict"),
)
_CALL_SHAPE: Final = (
    ("name", str, "a string"),
    ("args", dict, "a dict"),
    ("id", (str, type(None)), "a string or None"),
)


def _shape_problem(message: BaseMessage) -> tuple[str, object, str] | None:
    extra = (("tool_call_id", str, "a string"),) if isinstance(message, ToolMessage) else ()
    for field, kinds, expected in (*_SHAPE, *extra):
        value: object = getattr(message, field, None)
        if not isinstance(value, kinds):
            return field, value, expected
    calls: object = message.tool_calls if isinstance(message, AIMessage) else []
    if not isinstance(calls, list):
        return "tool_calls", calls, "a list of tool calls"
    for call in calls:
        if not isinstance(call, dict):
            return "a tool call", call, "a dict"
        for key, kinds, expected in _CALL_SHAPE:
            if not isinstance(call.get(key), kinds):
                return f"a tool call's {key}", call.get(key), expected
    return None


def role_of(message: BaseMessage) -> Role:
    """The provider role of any LangChain message.

    ``ChatMessage`` roles map by name (``developer`` -> system, ``ai`` / ``model`` ->
    assistant, ``function`` -> tool); ``FunctionMessage`` is a tool result, and so is a
    human message made only of Anthropic ``tool_result`` blocks.

    Raises:
        ValueError: for a ``RemoveMessage`` (a state edit, not a message to send) or an
            unknown ``ChatMessage`` role, naming the role and the fix.
        TypeError: for something that is not a ``BaseMessage``.

    Example:
        >>> from langchain_core.messages import ChatMessage, HumanMessage
        >>> role_of(HumanMessage("hi")), role_of(ChatMessage(role="developer", content="x"))
        ('user', 'system')
    """
    known = _ROLE_OF_TYPE.get(type(message))
    # The common classes, exactly: one lookup, every turn, every message. A human message
    # of content blocks takes the checks below (a turn of tool_result blocks is a tool).
    if known is not None and (known != "user" or isinstance(message.content, str)):
        return known
    candidate: object = message  # checked at run time: users pass dicts here
    if not isinstance(candidate, BaseMessage):
        msg = (
            f"messages: expected LangChain BaseMessage objects, got {type(candidate).__name__}. "
            "Convert dicts with langchain_core.messages.convert_to_messages()."
        )
        raise TypeError(msg)
    if isinstance(message, HumanMessage):
        # Anthropic-native records answer calls with tool_result blocks in a user turn: a
        # turn made only of them is a tool result, never a directive or a cut point.
        return "tool" if is_tool_result_turn(message) else "user"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, (ToolMessage, FunctionMessage)):
        return "tool"
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, RemoveMessage):
        msg = (
            f"messages: found a RemoveMessage (id={message.id!r}), which is a state edit, "
            "not a message. Apply it with LangGraph's add_messages reducer before building "
            "a view."
        )
        raise ValueError(msg)
    if isinstance(message, ChatMessage):
        role = _CHAT_ROLES.get(message.role.lower())
        if role is None:
            msg = (
                f"ChatMessage.role: unknown role {message.role!r}. Use one of "
                f"{sorted(_CHAT_ROLES)} or the typed message classes (HumanMessage, "
                "AIMessage, SystemMessage, ToolMessage)."
            )
            raise ValueError(msg)
        return role
    msg = (
        f"messages: unknown message type {type(message).__name__} (type={message.type!r}). "
        "Use HumanMessage, AIMessage, SystemMessage, ToolMessage or ChatMessage."
    )
    raise ValueError(msg)


_ROLE_OF_TYPE: Final[dict[type, Role]] = {
    HumanMessage: "user",
    AIMessage: "assistant",
    ToolMessage: "tool",
    FunctionMessage: "tool",
    SystemMessage: "system",
}
"""Roles of the exact message classes (subclasses take :func:`role_of`'s checks)."""


def stamp(message: M, kind: str, **meta: object) -> M:
    """A copy of ``message`` marked as generated by this package (see :data:`STAMP_KEY`).

    Also sets ``lc_source`` the way LangChain's own generated messages do, so UIs that
    know that convention recognise it.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> stamp_of(stamp(HumanMessage("note"), "note", covered_end=3))
        {'kind': 'note', 'covered_end': 3}
    """
    extra = dict(message.additional_kwargs)
    extra[STAMP_KEY] = {"kind": kind, **meta}
    extra.setdefault(_LC_SOURCE, STAMP_KEY)
    return message.model_copy(update={"additional_kwargs": extra})


def stamp_of(message: BaseMessage) -> dict[str, object] | None:
    """The stamp :func:`stamp` put on ``message``, or ``None`` (malformed stamps too)."""
    value = message.additional_kwargs.get(STAMP_KEY)
    if isinstance(value, dict) and isinstance(value.get("kind"), str):
        return value
    return None


def is_stamped(message: BaseMessage, kind: str | None = None) -> bool:
    """True when ``message`` carries this package's stamp (of ``kind``, when given)."""
    s = stamp_of(message)
    return s is not None and (kind is None or s["kind"] == kind)


VOLATILE_TAIL_KIND = "volatile_tail"
"""The stamp ``kind`` that, alone, makes a message a volatile tail (the brief)."""


def is_volatile_tail(message: BaseMessage) -> bool:
    r"""True for a user message built by :func:`~.handoff.volatile.volatile_tail`.

    Read by its stamp, not its text.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> tail = stamp(HumanMessage("<run-state>brief</run-state>"), VOLATILE_TAIL_KIND)
        >>> is_volatile_tail(tail)
        True
        >>> is_volatile_tail(HumanMessage("<run-state>\nmy real request\n</run-state>"))
        False
    """
    return role_of(message) == "user" and is_stamped(message, VOLATILE_TAIL_KIND)


DIRECTIVE_KIND = "directive"
"""The stamp ``kind`` of a user turn restated in front of a view that cut past it.

The one stamped message that is still the user's own words: every pass that looks for
the user's directive takes it (:func:`is_generated` is false for it)."""


def is_generated(message: BaseMessage) -> bool:
    """True when this package wrote ``message`` (stamped, and not a restated directive).

    A restated directive carries a stamp so later passes know it is a copy placed in the
    view, yet it is the user's instruction: searches, directive lookups and view marks
    treat it as the record's own message.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> task = HumanMessage("task", id="u1")
        >>> is_generated(stamp(task, DIRECTIVE_KIND, of="u1")), is_generated(stamp(task, "note"))
        (False, True)
    """
    s = stamp_of(message)
    return s is not None and s["kind"] != DIRECTIVE_KIND


def _canonical(message: BaseMessage) -> str:
    payload: dict[str, object] = {"type": message.type, "content": message.content}
    if isinstance(message, AIMessage) and message.tool_calls:
        payload["tool_calls"] = [(c.get("id"), c["name"], c["args"]) for c in message.tool_calls]
    if isinstance(message, ToolMessage):
        payload["tool_call_id"] = message.tool_call_id
    return json_text(payload, sort_keys=True)


def clean_text(text: str) -> str:
    r"""``text`` as a plain ``str`` with every lone surrogate replaced by U+FFFD.

    Python makes lone surrogates when it decodes non-UTF-8 bytes with ``surrogateescape``
    (file names, subprocess output), and a summarizer may echo them. LangChain's message
    validation rejects them in a ``str`` subclass (``message.text`` is one), and no
    provider accepts them on the wire, so text this package writes into a message goes
    through here first.

    Example:
        >>> clean_text("caf\udce9.py")
        'caf�.py'
    """
    plain = str.__str__(text)
    try:
        plain.encode("utf-8")
    except UnicodeEncodeError:
        return plain.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return plain


def message_id(message: BaseMessage) -> str:
    """A stable id for ``message``: its own ``id``, else one derived from its content.

    Derived ids are a hash of the type, content and tool-call payload, so the same message
    gets the same id in every process (a memo written before a restart still recognises
    the record it covers). The caller's object is never changed.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> message_id(HumanMessage("hi", id="m1"))
        'm1'
        >>> message_id(HumanMessage("hi")) == message_id(HumanMessage("hi"))
        True
    """
    if message.id:
        return message.id
    # surrogatepass: text decoded with surrogateescape (file names, subprocess output)
    # holds lone surrogates, which plain UTF-8 refuses to encode.
    canonical = _canonical(message).encode("utf-8", "surrogatepass")
    digest = hashlib.sha1(canonical, usedforsecurity=False)
    return f"bfmem-{digest.hexdigest()[:16]}"


def leading_system_count(messages: Sequence[BaseMessage]) -> int:
    """Length of the leading run of system messages (the fixed prefix of a request)."""
    n = 0
    while n < len(messages) and role_of(messages[n]) == "system":
        n += 1
    return n


@dataclass(frozen=True, slots=True)
class ToolCallUnit:
    """A contiguous, never-split run of messages: ``messages[start:end]``.

    An assistant message with tool calls and the tool results that follow it form one
    unit: strict providers reject a result whose call is missing and a call whose results
    are missing. Every other message is a unit of its own, except that a stray tool result
    joins the unit before it, so it can never lead a verbatim tail.
    """

    start: int
    """Index of the unit's first message."""
    end: int
    """Index one past the unit's last message."""


def tool_call_units(messages: Sequence[BaseMessage]) -> list[ToolCallUnit]:
    """Split ``messages`` into atomic units, in order (seed ``segmentTranscript``).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> call = AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}])
        >>> msgs = [HumanMessage("go"), call, ToolMessage("a.py", tool_call_id="c1")]
        >>> [(u.start, u.end) for u in tool_call_units(msgs)]
        [(0, 1), (1, 3)]
    """
    out: list[ToolCallUnit] = []
    i = 0
    n = len(messages)
    while i < n:
        m = messages[i]
        role = role_of(m)
        end = i + 1
        if role == "assistant" and call_ids(m):
            while end < n and role_of(messages[end]) == "tool":
                end += 1
        if role == "tool" and out:
            out[-1] = ToolCallUnit(out[-1].start, end)
        else:
            out.append(ToolCallUnit(i, end))
        i = end
    return out


def answered_ids(message: BaseMessage) -> list[str | None]:
    """The call ids a tool result answers.

    One for a ``ToolMessage`` (``None`` when it names none), one per ``tool_result`` block
    of an Anthropic-native user turn.
    """
    if isinstance(message, ToolMessage):
        return [message.tool_call_id]
    if isinstance(message, HumanMessage):
        return list(tool_result_ids(message))
    if isinstance(message, ChatMessage | FunctionMessage):
        value = message.additional_kwargs.get("tool_call_id")
        return [value if isinstance(value, str) else None]
    return [None]


def answers_legacy_call(message: BaseMessage, previous: BaseMessage | None) -> bool:
    """Whether ``message`` is the function result of ``previous``'s legacy ``function_call``.

    A ``FunctionMessage`` (or ``ChatMessage`` of role ``function``) naming no call id,
    right after the assistant message that made the call: what ``langchain-openai`` sends
    as ``role: "function"``. Anywhere else it answers nothing.

    Example:
        >>> call = AIMessage("", additional_kwargs={
        ...     "function_call": {"name": "ls", "arguments": "{}"}})
        >>> answers_legacy_call(FunctionMessage("a.py", name="ls"), call)
        True
        >>> answers_legacy_call(FunctionMessage("a.py", name="ls"), None)
        False
    """
    legacy = isinstance(message, FunctionMessage) or (
        isinstance(message, ChatMessage) and message.role == "function"
    )
    return (
        legacy
        and answered_ids(message) == [None]
        and previous is not None
        and legacy_function_call(previous) is not None
    )
