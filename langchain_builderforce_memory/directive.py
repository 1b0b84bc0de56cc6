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
"""

from __future__ import annotations

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

__all__ = [
    "is_directive",
    "latest_directive_index",
    "latest_directive_text",
    "restated_directive",
]


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
