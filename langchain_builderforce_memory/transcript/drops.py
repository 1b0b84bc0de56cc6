"""Which whole units a view too big for its budget leaves out, and what it says of them.

:func:`~.elide.fit_to_budget` cuts messages first; only when even every message at its
smallest does not fit are whole tool units dropped (:func:`kept`), in :func:`drop_order`'s
order. When that leaves out work done on the latest request, :func:`left_out_notice`
says so after the request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_builderforce_memory.blocks import call_ids
from langchain_builderforce_memory.messages import is_stamped, role_of, stamp, tool_call_units
from langchain_builderforce_memory.turns import thinking_span

__all__ = ["LEFT_OUT_KIND", "drop_order", "kept", "left_out", "left_out_notice", "live"]

LEFT_OUT_KIND: Final = "left_out"
"""The stamp ``kind`` of the notice that work on the request was left out of the view."""

_PROTECTED_KINDS: Final = frozenset({"memory_note", "restored"})
"""Generated messages dropped only after every plain tool unit: the run's memory."""


def drop_order(convo: Sequence[BaseMessage], directive: int) -> list[tuple[int, int]]:
    """Whole units that may be dropped, in the order they go.

    Plain units before the directive (oldest first), then units after it (oldest first,
    never the newest), then the generated memory (notes, re-attached files), and last the
    running loop's opening thinking turn: with thinking on, a request whose tool loop has
    lost it is rejected, so every other unit goes first.
    """
    units = tool_call_units(convo)
    span = thinking_span(convo)
    plain_before: list[tuple[int, int]] = []
    plain_after: list[tuple[int, int]] = []
    memory: list[tuple[int, int]] = []
    thinking: list[tuple[int, int]] = []
    for k, u in enumerate(units):
        if u.start <= directive < u.end or k == len(units) - 1:
            continue
        head = convo[u.start]
        if span is not None and u.start == span[0]:  # the message that opens with thinking
            thinking.append((u.start, u.end))
        elif any(is_stamped(head, kind) for kind in _PROTECTED_KINDS):
            memory.append((u.start, u.end))
        elif u.start < directive:
            plain_before.append((u.start, u.end))
        else:
            plain_after.append((u.start, u.end))
    return [*plain_before, *plain_after, *memory, *thinking]


def live(values: Sequence[int], keep: Sequence[bool], *, skip: int = -1) -> list[int]:
    """The ``values`` of the messages kept, less the one at ``skip``.

    Example:
        >>> live([5, 6, 7], [True, False, True]), live([5, 6, 7], [True] * 3, skip=0)
        ([5, 7], [6, 7])
    """
    return [v for i, v in enumerate(values) if keep[i] and i != skip]


def kept(
    convo: Sequence[BaseMessage],
    floors: Sequence[int],
    directive: int,
    directive_size: int,
    room: int,
) -> list[bool]:
    """Which messages of ``convo`` stay when ``room`` must hold them at their floors.

    Whole units go in :func:`drop_order`'s order while the rest does not fit (the directive
    whole while it can be). When the running loop's opening thinking step went, the rest
    of that loop goes with it, the newest unit too: with thinking on, a loop that opens
    without its thinking is rejected. Then, if even the newest unit at its smallest does
    not fit beside the directive (a call whose arguments alone are over), all but the
    directive; then whatever comes before the first user turn left (strict providers need
    it first).
    """
    keep = [True] * len(convo)
    order = drop_order(convo, directive)
    while order and sum(live(floors, keep)) > room:
        if sum(live(floors, keep, skip=directive)) + directive_size <= room:
            break
        start, end = order.pop(0)
        keep[start:end] = [False] * (end - start)
    span = thinking_span(convo)
    if span is not None and not keep[span[0]]:
        # With thinking on, the running loop cannot go on without its opening step: the
        # rest of it goes too, and the view ends at the request (the model thinks anew).
        keep[span[0] :] = [i == directive for i in range(span[0], len(convo))]
    if sum(live(floors, keep)) > room:
        keep = [i == directive for i in range(len(convo))]
    for i, m in enumerate(convo):
        if keep[i] and role_of(m) == "user":
            break
        keep[i] = False
    return keep


def left_out(
    convo: Sequence[BaseMessage], sizes: Sequence[int], keep: Sequence[bool], directive: int
) -> tuple[int, int, int]:
    """The messages after the directive left out, their tokens and the calls among them."""
    gone = [i for i in range(directive + 1, len(convo)) if not keep[i]]
    calls = sum(len(call_ids(convo[i])) for i in gone if isinstance(convo[i], AIMessage))
    return len(gone), sum(sizes[i] for i in gone), calls


def left_out_notice(messages: int, tokens: int, calls: int, budget: int) -> HumanMessage:
    """What the model is told when the work on its request cannot fit the view at all.

    Without it the view would end at the request, and a model that made the same calls
    again would be given the same view, call after call.

    Example:
        >>> left_out_notice(202, 61_432, 200, 8_000).text[:60]
        '[Left out of this request: 202 messages after the request ab'
    """
    text = (
        f"[Left out of this request: {messages} messages after the request above "
        f"({tokens:,} tokens, {calls} tool calls and their results), which do not fit its "
        f"{budget:,}-token budget even cut short. The calls were made; to see what they "
        "returned, make fewer or smaller calls at a time.]"
    )
    return stamp(HumanMessage(text), LEFT_OUT_KIND)
