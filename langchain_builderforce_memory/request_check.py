"""A conversation's request check, kept across turns: each view walked from where it changed.

Every view is checked before it is sent (:func:`~.validity.repair_request`). Turn after
turn a conversation's view is mostly the last one's messages, the same objects, in the
same order, with a few new ones at the end: the front moves only when the view is folded,
cleared or cut. Walking every message of every view made the check the largest part of a
steady step that grows with the view, and a server that holds many conversations reads
each of those messages from cold memory.

A :class:`RequestCheck` belongs to one conversation and is kept by its caller, with the
record's :class:`~langchain_builderforce_memory.facts.RecordFacts` (``facts.check``), not
in a module-level table. It holds the last view found valid and what its walk knew at each
place no call was open. The next view's problems are the same as
:func:`~.validity.request_problems`' (a test holds the two equal), read from the last
such place before the first message that is not the same object as last time.

Messages are compared as the token counter's cache compares them: the same object, with
the same content (a list content also of the same length) and the same call lists. A
message whose content or calls were set anew in place (``HumanInTheLoopMiddleware`` sets
an answer's ``tool_calls``) is walked again.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage

from langchain_builderforce_memory.messages import Role
from langchain_builderforce_memory.turns import (
    has_thinking,
    lost_thinking,
    misplaced_thinking,
    turn_step,
)
from langchain_builderforce_memory.validity import (
    opening_problems,
    read_roles,
    repaired_copy,
    walk_problems,
)

__all__ = ["RequestCheck"]


@dataclass(frozen=True, slots=True)
class _Valid:
    """A view found valid, and what its walk knew (positions are the view's indices)."""

    view: list[BaseMessage]
    """The view, message by message."""
    first: int
    """Its first message after the leading system messages (a user turn)."""
    closed: list[int]
    """Ascending: each ``p`` such that no call is open before ``view[p]``."""
    used: dict[str, int]
    """Each call id, and the message that made it."""
    openers: list[int]
    """Ascending: the messages that open a provider turn (:func:`~.turns.opens_turn_at`)."""
    after_results: list[bool]
    """``after_results[p]``: whether ``view[:p]`` ends with tool results (then user
    messages), as :func:`~.turns.turn_step` reads it."""
    thinking: list[int]
    """Ascending: the messages that carry an Anthropic thinking block."""
    fields: list[Fields]
    """Each message's :func:`_fields` when it was walked."""


Fields = tuple[object, int, object, object]
"""A message's content, its length if a list (else -1), its tool calls, its invalid calls."""


def _fields(message: BaseMessage) -> Fields:
    # As pydantic stores them: getattr on a message without tool calls is ~10x slower.
    stored = message.__dict__
    content = stored.get("content")
    size = len(content) if isinstance(content, list) else -1
    return content, size, stored.get("tool_calls"), stored.get("invalid_tool_calls")


class RequestCheck:
    """:func:`~.validity.request_problems` of one conversation's views, turn after turn.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> check = RequestCheck()
        >>> call = AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "t1"}])
        >>> view = [HumanMessage("go"), call, ToolMessage("a.py", tool_call_id="t1")]
        >>> check.problems(view)
        []
        >>> check.problems([*view, AIMessage("done"), ToolMessage("x", tool_call_id="t9")])
        ["message 4: tool result 't9' does not follow the call it answers"]
        >>> check.resumed  # the second view was walked from its 4th message
        1
    """

    __slots__ = ("_last", "resumed")

    def __init__(self) -> None:
        """A check that has seen no view yet."""
        self._last: _Valid | None = None
        self.resumed = 0
        """Views walked from a place in the last valid one rather than from the start."""

    def problems(self, messages: Sequence[BaseMessage]) -> list[str]:
        """What a strict provider would reject in ``messages``; ``[]`` when it is valid.

        The same list as :func:`~.validity.request_problems` (``thinking=None``).
        """
        view = list(messages)
        last = self._last  # read once: an overlapping turn (a retry) may replace it
        at = _resume_at(last, view) if last is not None else 0
        if last is not None and at:
            self.resumed += 1
            problems, self._last = _resumed(last, view, at)
        else:
            problems, self._last = _whole(view)
        return problems

    def repaired(self, messages: Sequence[BaseMessage]) -> tuple[list[BaseMessage], list[str]]:
        """:func:`~.validity.repair_request` of ``messages``, a valid view checked as above."""
        if not self.problems(messages):
            return list(messages), []
        return repaired_copy(messages)


def _resume_at(last: _Valid, view: list[BaseMessage]) -> int:
    """The last place no call is open within the messages ``view`` shares with ``last``.

    ``0`` when there is none after its opening user turn: the view is walked whole.
    """
    held = last.view
    shared = min(len(held), len(view))
    fields = last.fields
    same = next(
        (i for i in range(shared) if held[i] is not view[i] or _fields(view[i]) != fields[i]),
        shared,
    )
    before = bisect_right(last.closed, same)
    at = last.closed[before - 1] if before else 0
    return at if at > last.first else 0


def _whole(view: list[BaseMessage]) -> tuple[list[str], _Valid | None]:
    """``view``'s problems, walked whole, and what the walk knew if it is valid."""
    problems: list[str] = []
    roles = read_roles(view, 0, problems)
    first = opening_problems(roles, problems)
    # The leading system messages open no turn and end with no tool results.
    lead = [_fields(m) for m in view[:first]]
    turns = _Valid(view, first, [first], {}, [], [False] * (first + 1), [], lead)
    return _walk(turns, roles[first:], first, problems)


def _resumed(last: _Valid, view: list[BaseMessage], at: int) -> tuple[list[str], _Valid | None]:
    """``view``'s problems, walked from ``at``: ``view[:at]`` is ``last.view[:at]``."""
    problems: list[str] = []
    roles = read_roles(view, at, problems)
    held = _Valid(
        view,
        last.first,
        last.closed[: bisect_right(last.closed, at)],
        {call_id: i for call_id, i in last.used.items() if i < at},
        last.openers[: bisect_left(last.openers, at)],
        last.after_results[: at + 1],
        last.thinking[: bisect_left(last.thinking, at)],
        last.fields[:at],
    )
    return _walk(held, roles, at, problems)


def _walk(
    held: _Valid, roles: list[Role | None], at: int, problems: list[str]
) -> tuple[list[str], _Valid | None]:
    """Grow ``held`` (what the walk knew before ``view[at]``) over the rest of its view.

    ``roles`` are ``held.view[at:]``'s. Returns the problems, and ``held`` if it is valid.
    """
    view = held.view
    walk_problems(view, roles, at, held.used, problems, held.closed)
    after = held.after_results[at]
    for i in range(at, len(view)):
        opens, after = turn_step(view[i], after)
        if opens:
            held.openers.append(i)
        held.after_results.append(after)
        if has_thinking(view[i]):
            held.thinking.append(i)
        held.fields.append(_fields(view[i]))
    if view and None not in roles:
        problems.extend(misplaced_thinking(view, at))
        start = held.openers[-1] if held.openers else len(view)
        if held.thinking and held.thinking[-1] >= start:
            lost = lost_thinking(view, start)
            problems.extend([lost] if lost is not None else [])
    return problems, None if problems else held
