"""The hand-off packer's pure steps: plan what stays and what goes, then assemble.

:func:`plan_handoff` decides, over an already valid request, the fixed prefix (the leading
system messages), the verbatim tail of whole tool-call units (pins first), the latest
directive re-injected, what the note stands in for, and the room it may take; the
volatile tail is set aside and put back last. :func:`assemble_handoff` builds the result
from the plan and the note. Neither does I/O: the note step between them
(:mod:`.note`) is the only part that differs between the sync and async packers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from langchain_core.messages import BaseMessage

from langchain_builderforce_memory.directive import latest_directive_index
from langchain_builderforce_memory.handoff.note import (
    WORK_CONDENSED,
    HandoffNote,
    NoteRequest,
    min_note_tokens,
)
from langchain_builderforce_memory.handoff.volatile import is_volatile_tail
from langchain_builderforce_memory.messages import (
    ToolCallUnit,
    is_stamped,
    leading_system_count,
    message_id,
    role_of,
    tool_call_units,
)
from langchain_builderforce_memory.tokens import (
    TokenCounter,
    count_tokens,
)
from langchain_builderforce_memory.transcript.elide import cut_floor, fit_to_budget
from langchain_builderforce_memory.transcript.plan import MEMORY_NOTE_KIND
from langchain_builderforce_memory.transcript.window import MAX_VIEW_MESSAGES
from langchain_builderforce_memory.turns import (
    current_turn_start,
    has_thinking,
    opens_turn_at,
    thinking_span,
    turn_step,
)

__all__ = [
    "HandoffPack",
    "HandoffPlan",
    "assemble_handoff",
    "latest_directive_index",
    "plan_handoff",
]


@dataclass(frozen=True, slots=True)
class HandoffPack:
    """The packed transcript and how it was made.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_builderforce_memory.handoff import pack_handoff
        >>> pack = pack_handoff([HumanMessage("hi")], target_context_tokens=100,
        ...                     reserve_output_tokens=10)
        >>> pack.fits, pack.dropped, pack.estimated_tokens
        (True, 0, 6)
    """

    messages: list[BaseMessage]
    """The request to send: input messages (the same objects) plus at most one note."""
    dropped: int
    """Input messages in neither the verbatim tail nor re-injected (counted after
    :func:`~langchain_builderforce_memory.validity.repair_request`; a volatile tail that had
    to go counts too)."""
    summarized: bool
    """The note carries the summarizer's answer."""
    recalled: bool
    """The note carries the ``recall`` block."""
    estimated_tokens: int
    """Tokens of :attr:`messages` under the packer's token counter."""
    fits: bool
    """False only when the system message(s) + the latest directive alone exceed the
    budget; :attr:`messages` is then exactly those, the directive cut to the budget."""
    budget: int
    """The budget packed into (:func:`~.budget.handoff_budget`)."""
    elided_messages: int = 0
    """Messages cut in the view (head and end kept) because they alone were over the room
    left; the record keeps them whole."""
    elided_tokens: int = 0
    """Tokens those cuts removed."""


@dataclass(frozen=True, slots=True)
class HandoffPlan:
    """The pure outcome of planning: what stays, what goes, and what the note may cost."""

    system: tuple[BaseMessage, ...]
    """The leading system messages (the fixed prefix)."""
    kept: tuple[BaseMessage, ...]
    """Conversation messages kept verbatim, in their original order: the re-injected
    directive, the pins and the tail."""
    dropped: tuple[BaseMessage, ...]
    """Conversation messages the note stands in for, in order."""
    trailing: tuple[BaseMessage, ...]
    """The volatile tail(s), put back last."""
    also_dropped: int
    """Messages gone without a place in the note: stale or evicted volatile tails."""
    note: NoteRequest | None
    """What the note step is asked for; ``None`` when there is nothing to note."""
    fits: bool
    """See :attr:`HandoffPack.fits`."""
    budget: int
    """The budget planned for."""
    note_at: int = 0
    """How many kept messages precede the note: the note stands where the dropped middle
    was, so one that follows a pinned memory note describes what came after it."""
    budget_name: str | None = None
    """How an error names :attr:`budget` (it is derived, not a number the caller gave)."""


def _trailing_volatile_start(messages: Sequence[BaseMessage]) -> int:
    """Where the trailing run of volatile tails begins (``len(messages)`` without one)."""
    i = len(messages)
    while i > 0 and is_volatile_tail(messages[i - 1]):
        i -= 1
    return i


def _untouched(history: Sequence[BaseMessage], budget: int) -> HandoffPlan:
    lead = leading_system_count(history)
    keep = [True] * (len(history) - lead)
    return _plan_result(tuple(history[:lead]), history[lead:], keep, budget, fits=True)


def _plan_history(
    history: Sequence[BaseMessage],
    budget: int,
    counter: TokenCounter,
    header: str,
    pins: frozenset[str],
) -> HandoffPlan:
    """Plan ``history`` (no volatile tail) into ``budget``; see the module docstring."""
    if _holds(history, budget, counter):
        return _untouched(history, budget)
    lead = leading_system_count(history)
    system, convo = tuple(history[:lead]), history[lead:]
    sizes = [counter.count_message(m) for m in convo]
    system_tokens = count_tokens(system, counter)
    d = latest_directive_index(convo)
    irreducible = _irreducible(convo, d)
    keep = [False] * len(convo)
    for i in irreducible:
        keep[i] = True
    core = system_tokens + sum(sizes[i] for i in irreducible)

    # The irreducible core does not fit: send it anyway and say so.
    if core > budget:
        return _plan_result(system, convo, keep, budget, fits=False)

    # Reserve room for the smallest note (the marker, at its widest count) when it fits.
    min_note = min_note_tokens(header, len(convo), counter)
    room = budget - core - (min_note if core + min_note <= budget else 0)

    units = [u for u in tool_call_units(convo) if role_of(convo[u.start]) != "tool"]
    spare = budget - core
    cut = _cut_newest(convo, units, sizes, keep, room, d, counter, spare=spare, min_note=min_note)
    if cut is None:
        pinned = [_is_pinned(convo, u, pins) for u in units]
        count_room = MAX_VIEW_MESSAGES - 1 - keep.count(True)  # the note is one message
        _select(units, sizes, keep, room, pinned=pinned, count_room=count_room)
    if d >= 0 and any(map(has_thinking, convo)):
        _keep_turns(convo, keep, units, frozenset(irreducible))

    used = system_tokens + sum(s for s, k in zip(sizes, keep, strict=True) if k)
    plan = _plan_result(system, convo, keep, budget, fits=True)
    if not plan.dropped:
        return plan
    directive_text = (convo[d].text or None) if d >= 0 else None
    room = budget - used if cut is None else cut  # a newest unit cut: what it leaves
    note = NoteRequest(
        header=_header_for(header, keep, d, room, counter),
        dropped=plan.dropped,
        directive_text=directive_text,
        room=room,
    )
    return replace(plan, note=note)


def _holds(messages: Sequence[BaseMessage], budget: int, counter: TokenCounter) -> bool:
    """Whether ``messages`` go as they are: within ``budget`` and the message limit.

    :data:`~langchain_builderforce_memory.transcript.window.MAX_VIEW_MESSAGES`: a chat of
    short messages is refused past 2,048 of them (OpenAI) however few tokens they cost.
    """
    lead = leading_system_count(messages)
    return len(messages) - lead <= MAX_VIEW_MESSAGES and count_tokens(messages, counter) <= budget


def _irreducible(convo: Sequence[BaseMessage], d: int) -> list[int]:
    """The messages every pack keeps.

    The directive; with thinking on, the running tool loop's opening turn (its thinking)
    too, as irreducible: without it the provider rejects the request. It is before the
    directive when the loop took that in (a user message right after tool results), and is
    then kept in place with the user turn that opened the loop and the step the directive
    came in after.
    """
    if d < 0:
        return []
    span = thinking_span(convo)
    if span is None:
        return [d]
    if d < span[0]:
        return sorted({d, *range(*span)})
    # The loop took the directive in: the step whose results it follows stays too, so it
    # stays in the loop's turn (else it would open a turn without thinking).
    j = d - 1
    while j >= 0 and role_of(convo[j]) == "user":
        j -= 1
    k = j
    while k >= 0 and role_of(convo[k]) == "tool":
        k -= 1
    joined = range(k, j + 1) if j > k >= 0 else range(0)
    return sorted({d, current_turn_start(convo), *range(*span), *joined})


def _keep_turns(
    convo: Sequence[BaseMessage],
    keep: list[bool],
    units: Sequence[ToolCallUnit],
    fixed: frozenset[int],
) -> None:
    """With thinking on, keep each kept user message in the turn it had in the record.

    A user message right after tool results joins their turn on the wire (see
    :func:`~langchain_builderforce_memory.turns.opens_turn_at`). A pack that drops what
    stood between would move a message into or out of a running loop, and the loop would
    open without its thinking step. Such a message goes (it came in while the loop ran),
    or the unit whose results it would join goes (it opened a turn). ``fixed`` (the
    irreducible messages) stay. Dropping only frees room.
    """
    while (at := _turn_moved(convo, keep)) >= 0:
        if not opens_turn_at(convo, at):  # came in while a loop ran; would open a turn
            if at in fixed:
                return
            keep[at] = False
            continue
        # It opened a turn, and would join the kept tool results before it.
        p = next(i for i in range(at - 1, -1, -1) if keep[i] and role_of(convo[i]) != "user")
        unit = next((u for u in units if u.start <= p < u.end), None)
        span = range(unit.start, unit.end) if unit is not None else range(p, p + 1)
        if fixed.intersection(span):
            return
        for i in span:
            keep[i] = False


def _turn_moved(convo: Sequence[BaseMessage], keep: Sequence[bool]) -> int:
    """The first kept user message whose turn the kept messages change, or -1.

    One that opens a turn in the record and would join tool results, or the other way round.
    """
    after_results = False
    for i, m in enumerate(convo):
        if keep[i]:
            opens, after_results = turn_step(m, after_results)  # the turns the pack shows
            if opens != opens_turn_at(convo, i):
                return i
    return -1


def _header_for(
    header: str, keep: Sequence[bool], directive: int, room: int, counter: TokenCounter
) -> str:
    """``header``, saying so when the note stands in for work done after the directive.

    The note goes before the re-injected directive, and its header says the earlier
    messages were condensed: a next model would take the work on the request for not
    done yet, and make its calls again. Said when the marker note still fits ``room``.
    """
    if directive < 0 or all(keep[directive + 1 :]):
        return header
    dropped = keep.count(False)
    longer = f"{header}\n{WORK_CONDENSED}"
    return longer if min_note_tokens(longer, dropped, counter) <= room else header


def _cut_newest(
    convo: Sequence[BaseMessage],
    units: Sequence[ToolCallUnit],
    sizes: Sequence[int],
    keep: list[bool],
    room: int,
    directive: int,
    counter: TokenCounter,
    *,
    spare: int,
    min_note: int,
) -> int | None:
    """Keep the newest unit to be cut in the view when it alone is over ``room``.

    It is the work on the request after the ``directive``, and the result the next model
    has to answer: dropped, the next model would see the request with no trace of it and
    make the same calls again. Kept when, beside a note of ``min_note`` tokens, its
    messages fit ``spare`` cut no shorter than the note: the view cuts every message down
    to one common size (:func:`.elide.fit_to_budget`), so the note then stays whole. The
    note gets the most room up to a quarter of ``spare`` that keeps this so. Returns the
    note's room, or ``None`` (the tail is then chosen as usual).
    """
    if not units or units[-1].end != len(convo) or units[-1].start <= directive:
        return None
    newest = [i for i in range(units[-1].start, units[-1].end) if not keep[i]]
    if sum(sizes[i] for i in newest) <= room:
        return None
    own = [(sizes[i], cut_floor(convo[i], counter)) for i in newest]
    if not _fits_beside(min_note, own, spare):
        return None
    lo, hi = min_note, max(min_note, spare // 4)  # the largest note that fits, by bisection
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if _fits_beside(mid, own, spare) else (lo, mid - 1)
    for i in newest:
        keep[i] = True
    return lo


def _fits_beside(note: int, sized: Sequence[tuple[int, int]], spare: int) -> bool:
    """Do a note of ``note`` tokens and ``sized`` (size, floor) cut no shorter fit ``spare``?"""
    return note + sum(min(size, max(note, floor)) for size, floor in sized) <= spare


def _is_pinned(convo: Sequence[BaseMessage], unit: ToolCallUnit, pins: frozenset[str]) -> bool:
    return bool(pins) and any(message_id(convo[i]) in pins for i in range(unit.start, unit.end))


def _unit_cost(unit: ToolCallUnit, sizes: Sequence[int], keep: Sequence[bool]) -> int:
    """Tokens keeping ``unit`` adds: its messages not kept already (the directive)."""
    return sum(sizes[i] for i in range(unit.start, unit.end) if not keep[i])


def _select(
    units: Sequence[ToolCallUnit],
    sizes: Sequence[int],
    keep: list[bool],
    room: int,
    *,
    pinned: Sequence[bool],
    count_room: int,
) -> None:
    """Mark whole units to keep in ``keep``, within ``room`` tokens, by priority.

    And within ``count_room`` messages (the newest unit aside: it is always worth its
    place, and the ceiling leaves room for more than any unit holds).

    1. The newest unit: it is the turn the next model continues from (the result it has
       to answer), so a pin never crowds it out.
    2. Pinned units, newest first, each kept in place when it fits.
    3. The longest run of whole units from the end that fits what is left (the verbatim
       tail); it stops at the first unit that does not fit, so it has no holes.

    ``units`` excludes an orphan tool result at the very front (the only place one can
    lead a unit), so the tail never starts with one.
    """
    order: list[int] = []
    newest = len(units) - 1 if units and units[-1].end == len(sizes) else -1
    if newest >= 0:
        order.append(newest)
    order.extend(i for i in range(len(units) - 1, -1, -1) if pinned[i])
    for i in order:
        cost, count = _unit_cost(units[i], sizes, keep), _unit_count(units[i], keep)
        if cost <= room and (count <= count_room or i == newest):
            room, count_room = room - cost, count_room - count
            _take(units[i], keep)
    for unit in reversed(units):
        cost, count = _unit_cost(unit, sizes, keep), _unit_count(unit, keep)
        if cost > room or count > count_room:
            break
        room, count_room = room - cost, count_room - count
        _take(unit, keep)


def _unit_count(unit: ToolCallUnit, keep: Sequence[bool]) -> int:
    """Messages keeping ``unit`` adds."""
    return sum(not keep[i] for i in range(unit.start, unit.end))


def _take(unit: ToolCallUnit, keep: list[bool]) -> None:
    for i in range(unit.start, unit.end):
        keep[i] = True


def _plan_result(
    system: tuple[BaseMessage, ...],
    convo: Sequence[BaseMessage],
    keep: Sequence[bool],
    budget: int,
    *,
    fits: bool,
) -> HandoffPlan:
    kept = tuple(m for m, k in zip(convo, keep, strict=True) if k)
    # A kept memory note (a fold's, pinned by the caller) that precedes everything dropped
    # stays first: the dropped middle came after what it covers, so the note goes after it.
    # The directive is not moved: it stays right before the tail, read as the current ask.
    note_at = 0
    while note_at < len(kept) and is_stamped(kept[note_at], MEMORY_NOTE_KIND):
        note_at += 1
    first_drop = next((i for i, k in enumerate(keep) if not k), len(keep))
    note_at = min(note_at, sum(1 for k in keep[:first_drop] if k))
    return HandoffPlan(
        system=system,
        kept=kept,
        dropped=tuple(m for m, k in zip(convo, keep, strict=True) if not k),
        trailing=(),
        also_dropped=0,
        note=None,
        fits=fits,
        budget=budget,
        note_at=note_at,
    )


def plan_handoff(
    messages: Sequence[BaseMessage],
    *,
    budget: int,
    counter: TokenCounter,
    header: str,
    pinned_ids: frozenset[str] = frozenset(),
) -> HandoffPlan:
    """The pure planning step of :func:`pack_handoff`, over an already VALID request.

    Under budget the transcript is handed over untouched. Otherwise the volatile tail
    (:mod:`.volatile`) is set aside, the history packed into what is left, and the tail put
    back LAST: never the directive, never in the middle. When the history needs the whole
    budget, the tail is what goes: it is a per-turn aid, the history is the work. A
    volatile tail that is not at the end is stale (an earlier request's run state that
    leaked into the record) and is left out rather than shown as current.
    """
    if _holds(messages, budget, counter):
        return _untouched(messages, budget)
    cut = _trailing_volatile_start(messages)
    trailing = tuple(messages[cut:])
    history = [m for m in messages[:cut] if not is_volatile_tail(m)]
    stale = cut - len(history)
    if trailing:
        room = budget - count_tokens(trailing, counter)
        with_tail = _plan_history(history, room, counter, header, pinned_ids)
        if with_tail.fits:
            return replace(with_tail, trailing=trailing, also_dropped=stale, budget=budget)
    plan = _plan_history(history, budget, counter, header, pinned_ids)
    return replace(plan, also_dropped=stale + len(trailing))


def _open_on_user(kept: Sequence[BaseMessage]) -> tuple[list[BaseMessage], int]:
    """``kept`` from its first unit that opens with a user turn, and how many went.

    Without a note, the kept messages open the conversation, and strict providers need a
    user turn first. The directive is kept and is a user turn, so this stops at it at the
    latest.
    """
    for unit in tool_call_units(kept):
        if role_of(kept[unit.start]) == "user":
            return list(kept[unit.start :]), unit.start
    return [], len(kept)


def assemble_handoff(
    plan: HandoffPlan, note: HandoffNote | None, counter: TokenCounter
) -> HandoffPack:
    """The pure assembly step: ``system · kept before the gap · note · kept · trailing``.

    The note stands where the dropped middle was: right after the system prefix, unless
    kept messages (a pinned memory note) came before everything that was dropped.
    """
    messages: list[BaseMessage] = [*plan.system]
    if note is not None:
        trimmed = 0
        messages.extend(plan.kept[: plan.note_at])
        messages.append(note.message)
        messages.extend(plan.kept[plan.note_at :])
    else:
        kept, trimmed = _open_on_user(plan.kept)
        messages.extend(kept)
    messages.extend(plan.trailing)
    # The view policy's last step: what is still over (a directive or a newest unit bigger
    # than the budget) is cut in the view, so a pack is never over its budget.
    fitted, elision = fit_to_budget(
        messages, plan.budget, counter, where="pack_handoff", budget_name=plan.budget_name
    )
    return HandoffPack(
        messages=fitted,
        dropped=len(plan.dropped) + trimmed + plan.also_dropped + elision.dropped_messages,
        summarized=note is not None and note.source == "summary",
        recalled=note is not None and note.source == "recall",
        estimated_tokens=count_tokens(fitted, counter),
        fits=plan.fits,
        budget=plan.budget,
        elided_messages=elision.elided_messages,
        elided_tokens=elision.elided_tokens,
    )
