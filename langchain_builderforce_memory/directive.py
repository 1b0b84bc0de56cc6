"""The directive: the latest turn the user wrote, one concept for every pass.

The window cuts so that it is kept, the fold restates it after its note, the hand-off
packer re-injects it, and the working memory names it as the run's task. All of them ask
the same question through :func:`latest_directive_index`: the latest user-role message
that carries no stamp of a generated message. A restated copy (stamped ``"directive"``)
is still the user's words and counts; a note, a volatile tail (the brief), a repair
placeholder or a converted system message does not.

A record with no turn the user wrote (rare: a record that opens on a generated message)
falls back, when the caller asks, to the latest user-role message that is not a volatile
tail, so a view still has a user turn to open on and never opens on the brief.

Asked every turn of a single-directive tool loop, where the directive is thousands of
messages back, the answer is kept by the conversation's
:class:`~langchain_builderforce_memory.facts.RecordFacts` (``facts.directive``): a turn
costs its new messages. Asked here, without facts, the record is read from its end.

With Anthropic's extended thinking on, the running tool loop must open with the thinking
step it began with, so a view that restates the directive ahead of a tail that passed that
step pins the step too (:func:`pinned_opening`). A user message right after tool results
joins the running loop's turn (see
:func:`~langchain_builderforce_memory.turns.opens_turn_at`): the step may then come before
the latest directive. A step pinned while its turn ran stays pinned after a newer turn
begins, until the next fold, so the front of the view does not move.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from langchain_builderforce_memory.copies import Copies, copy_of
from langchain_builderforce_memory.messages import (
    DIRECTIVE_KIND,
    VOLATILE_TAIL_KIND,
    is_generated,
    is_stamped,
    message_id,
    role_of,
    stamp,
)
from langchain_builderforce_memory.turns import opening_span, opens_turn_at

__all__ = [
    "is_directive",
    "latest_directive_index",
    "latest_directive_text",
    "pinned_opening",
    "restated_directive",
]

Span = tuple[int, int]


def is_directive(message: BaseMessage) -> bool:
    """A user-role message the user wrote (or its restated copy).

    Example:
        >>> from langchain_core.messages import HumanMessage, ToolMessage
        >>> from langchain_builderforce_memory.messages import stamp
        >>> is_directive(HumanMessage("fix it")), is_directive(stamp(HumanMessage("x"), "note"))
        (True, False)
        >>> is_directive(ToolMessage("done", tool_call_id="c1"))
        False
    """
    return role_of(message) == "user" and not is_generated(message)


def latest_directive_index(convo: Sequence[BaseMessage], *, fallback: bool = True) -> int:
    """Index of the latest directive in ``convo``, or -1.

    Args:
        convo: The messages, oldest first.
        fallback: Without a directive, the latest user-role message that is not a volatile
            tail (a note, a placeholder), so a view still opens on a user turn; ``False``:
            -1 then.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> from langchain_builderforce_memory.messages import stamp
        >>> brief = stamp(HumanMessage("<run-state>"), "volatile_tail")
        >>> latest_directive_index([HumanMessage("task"), AIMessage("a"), brief])
        0
        >>> note = stamp(HumanMessage("the note"), "note")
        >>> latest_directive_index([note, AIMessage("a")])
        0
        >>> latest_directive_index([note, AIMessage("a")], fallback=False)
        -1
    """
    found = next((i for i in range(len(convo) - 1, -1, -1) if is_directive(convo[i])), -1)
    if found >= 0 or not fallback:
        return found
    return next(
        (
            i
            for i in range(len(convo) - 1, -1, -1)
            if role_of(convo[i]) == "user" and not is_stamped(convo[i], VOLATILE_TAIL_KIND)
        ),
        -1,
    )


def latest_directive_text(record: Sequence[BaseMessage], max_chars: int) -> str | None:
    """The latest directive's text, stripped and capped at ``max_chars``; ``None`` if none.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> latest_directive_text([HumanMessage(" fix it "), AIMessage("done")], 100)
        'fix it'
    """
    i = latest_directive_index(record, fallback=False)
    if i < 0:
        return None
    text = record[i].text.strip()
    return text[:max_chars] if text else None


def restated_directive(message: BaseMessage, *, copies: Copies | None = None) -> BaseMessage:
    """The latest user turn, restated in front of a view that cut past it (window or fold).

    A copy stamped ``"directive"`` (same class, id and content), so later passes know it
    was placed there, while every directive lookup still takes it as the user's own
    instruction (:func:`~langchain_builderforce_memory.messages.is_generated` is false for
    it). With the conversation's ``copies``
    (:attr:`~langchain_builderforce_memory.facts.RecordFacts.copies`) the same copy is
    returned turn after turn, so the per-message token cache keeps hitting. A message
    that already carries a stamp is returned as it is.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_builderforce_memory.copies import Copies
        >>> from langchain_builderforce_memory.messages import stamp_of
        >>> task, copies = HumanMessage("Refactor the parser.", id="u1"), Copies()
        >>> again = restated_directive(task, copies=copies)
        >>> stamp_of(again), again.content, again is restated_directive(task, copies=copies)
        ({'kind': 'directive', 'of': 'u1'}, 'Refactor the parser.', True)
    """
    if is_stamped(message):
        return message
    return copy_of(
        copies,
        ("directive", id(message)),
        (message, message.content),
        lambda: stamp(message, DIRECTIVE_KIND, of=message_id(message)),
    )


def pinned_opening(
    convo: Sequence[BaseMessage],
    tail_start: int,
    directive: int,
    *,
    running: Span | None,
    directives: Sequence[int] | None = None,
) -> Span | None:
    """The thinking step pinned after ``directive`` (restated; -1: none), or ``None``.

    Only a step the tail at ``tail_start`` has passed. ``running``: the running loop's
    (:func:`~langchain_builderforce_memory.turns.thinking_span`); ``directives``: every
    directive's index, when the caller keeps them (else they are looked up when needed).

    1. The tail starts inside the running loop: its step, or the step answering a
       directive the loop took in when that one thinks (interleaved thinking) and the
       directive is restated. When the tail starts inside the step itself (between its
       assistant messages, one message on the wire), the part of it before the tail.
    2. An earlier directive restated: its step, as it was while it ran.
    3. Nothing restated: the step of the turn the tail starts in, when that turn took in
       a directive (it was pinned by 1 while the turn ran).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> think = {"type": "thinking", "thinking": "hm", "signature": "s"}
        >>> call = {"name": "ls", "args": {}, "id": "t1"}
        >>> convo = [HumanMessage("go"), AIMessage([think], tool_calls=[call]),
        ...          ToolMessage("a", tool_call_id="t1"), HumanMessage("and b"),
        ...          AIMessage("", tool_calls=[{**call, "id": "t2"}]),
        ...          ToolMessage("b", tool_call_id="t2")]
        >>> pinned_opening(convo, 4, 3, running=(1, 3))
        (1, 3)
    """
    if running is not None and running[1] <= tail_start:
        own = opening_span(convo, directive) if running[0] < directive else None
        return own if own is not None and own[1] <= tail_start else running
    if running is not None and running[0] < tail_start:
        # A thought, then its call in a message of its own (Claude Code's transcript): a
        # tail with room for the call alone would otherwise open the loop without it.
        return running[0], tail_start
    turns = _Directives(convo, directives)
    span = (
        _earlier(convo, directive, turns, tail_start)
        if directive >= 0
        else _joined(convo, tail_start, turns)
    )
    return span if span is not None and span[1] <= tail_start else None


class _Directives:
    """Every directive's index, looked up on first use when the caller keeps none."""

    __slots__ = ("_convo", "_known")

    def __init__(self, convo: Sequence[BaseMessage], known: Sequence[int] | None) -> None:
        self._convo = convo
        self._known = known

    def get(self) -> Sequence[int]:
        if self._known is None:
            self._known = [i for i, m in enumerate(self._convo) if is_directive(m)]
        return self._known


def _earlier(
    convo: Sequence[BaseMessage], directive: int, turns: _Directives, tail_start: int
) -> Span | None:
    """The step pinned with an earlier ``directive``, as it was while it ran.

    The step answering it when that one thinks and the tail has passed it; else, for a
    directive the loop took in, the opening step of the turn it joined (1. above pinned
    that one while the loop ran, its own step being in the tail: a new turn must not move
    it, or the front moves with no fold).
    """
    own = opening_span(convo, directive)
    if opens_turn_at(convo, directive) or (own is not None and own[1] <= tail_start):
        return own
    return _opening_before(convo, turns.get(), directive)


def _joined(convo: Sequence[BaseMessage], tail_start: int, turns: _Directives) -> Span | None:
    """The opening step of the turn the tail starts in, when it must stay.

    When that turn took in the first directive at the tail's start or after.
    """
    known = turns.get()
    k = bisect_left(known, tail_start)
    if k == len(known) or opens_turn_at(convo, known[k]):
        return None
    return _opening_before(convo, known, tail_start)


def _opening_before(convo: Sequence[BaseMessage], turns: Sequence[int], index: int) -> Span | None:
    """The opening step of the turn ``convo[index]`` is in.

    That of the latest directive before it that opens a turn: the directives passed on the
    way came in while that turn's loop ran.
    """
    for k in range(bisect_left(turns, index) - 1, -1, -1):
        if opens_turn_at(convo, turns[k]):
            return opening_span(convo, turns[k])
    return None
