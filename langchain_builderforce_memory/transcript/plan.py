"""The fold's partitioning: where the tail begins and how a compacted view is assembled.

Pure functions over a conversation (the record without its leading system messages),
ported from the seed's ``transcript.ts``. :mod:`~langchain_builderforce_memory.transcript.
fold` decides WHEN to fold; this module decides WHERE the cut goes and how a compacted
view is put together, so a fold, a reused memo and a test all assemble alike. The memo
and the policy themselves are :mod:`~langchain_builderforce_memory.transcript.memo`.

The note is a human-role message. The seed folded into an assistant note right after the
system prompt, while its own window comment says strict providers (Gemini:
``400 INVALID_ARGUMENT``) reject a conversation that does not begin with a user turn; the
tail after a fold usually starts on an assistant tool-call turn, so an assistant note
would put two assistant turns first. A user-role note makes every compacted view begin
with a user turn. It is stamped (kind ``"memory_note"``, with ``covered_end``) so later
passes and UIs recognise it as generated, never as something the user said.
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_builderforce_memory.copies import Copies, copy_of
from langchain_builderforce_memory.directive import (
    is_directive,
    latest_directive_index,
    pinned_opening,
    restated_directive,
)
from langchain_builderforce_memory.messages import (
    message_id,
    role_of,
    stamp,
    tool_call_units,
)
from langchain_builderforce_memory.tokens import (
    TokenCounter,
    TokenCounterLike,
    resolve_token_counter,
)
from langchain_builderforce_memory.transcript.markers import consolidation_marker_of
from langchain_builderforce_memory.transcript.memo import (
    COMPACT_TAIL_MAX_MESSAGES,
    COMPACT_TAIL_TURNS,
    CompactMemo,
)
from langchain_builderforce_memory.transcript.summary import TRANSCRIPT_SUMMARY_MAX_TOKENS
from langchain_builderforce_memory.turns import opening_span, thinking_span

__all__ = [
    "MEMORY_NOTE_KIND",
    "Anchors",
    "assemble_compacted",
    "compact_tail_start",
    "compact_tail_start_for_budget",
    "fold_note_text",
    "held_directive_index",
    "memory_note",
    "note_for_summary",
    "note_reserve",
    "pinned_directive_index",
    "present_leading_marker",
    "restated_opening",
    "system_messages",
    "trim_compacted_tail",
    "verbatim_start",
]

logger = logging.getLogger("langchain_builderforce_memory.transcript.fold")

MEMORY_NOTE_KIND: Final = "memory_note"
"""The stamp ``kind`` of a memory note in a view (see :func:`memory_note`)."""


_RESTORED_LINE: Final = "\n\nre-attached below, verbatim (their latest output): "


def fold_note_text(summary: str, covered_end: int, restored: Sequence[str] = ()) -> str:
    """The note's text: a header saying what it covers, the summary, what is re-attached."""
    text = (
        f"Compressed memory of the first {covered_end} message(s) of this conversation:\n{summary}"
    )
    if restored:
        text += f"{_RESTORED_LINE}{', '.join(restored)}"
    return text


def note_for_summary(note: str) -> str:
    r"""A held note as the next fold's summarizer reads it: without its re-attached line.

    The files that line names followed the note in the view, not in the summarizer's
    input. There, "re-attached below" names what is not below, and a note written from
    it could carry the claim on to a view that re-attaches other files.

    Example:
        >>> note_for_summary(fold_note_text("Read a.py.", 4, ["a.py"]))
        'Compressed memory of the first 4 message(s) of this conversation:\nRead a.py.'
    """
    head, found, _ = note.rpartition(_RESTORED_LINE)
    return head if found else note


def note_reserve(counter: TokenCounter, covered_end: int) -> int:
    """Tokens to keep free for a note not yet written.

    Its ceiling, its header, and 16 more for its framing and the cut marker of a capped
    answer.
    """
    header = counter.count_text(fold_note_text("", covered_end))
    return header + TRANSCRIPT_SUMMARY_MAX_TOKENS + 16


def system_messages(system: str | BaseMessage | Sequence[BaseMessage] | None) -> list[BaseMessage]:
    """The system prefix a view starts with: ``None`` -> none, a string -> one message."""
    if system is None:
        return []
    if isinstance(system, str):
        return [SystemMessage(system)]
    if isinstance(system, BaseMessage):
        return [system]
    found: list[object] | None = list(system) if isinstance(system, Sequence) else None
    if found is None or not all(isinstance(m, BaseMessage) for m in found):
        msg = f"system_prompt must be a str, a SystemMessage or a list of messages; got {system!r}."
        raise TypeError(msg)
    return [m for m in found if isinstance(m, BaseMessage)]


def memory_note(note: str, covered_end: int, *, copies: Copies | None = None) -> HumanMessage:
    """The note as it is shown to the model: a human-role message, stamped.

    With the conversation's ``copies`` it is one object for as long as the note is held,
    so its count stays cached.

    Example:
        >>> from langchain_builderforce_memory.messages import stamp_of
        >>> stamp_of(memory_note("MEMO", 5))
        {'kind': 'memory_note', 'covered_end': 5}
    """
    return copy_of(
        copies,
        ("note", note, covered_end),
        (),
        lambda: stamp(HumanMessage(note), MEMORY_NOTE_KIND, covered_end=covered_end),
    )


def present_leading_marker(convo: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``convo`` with a leading consolidation marker shown as a human-role memory note.

    :func:`~langchain_builderforce_memory.transcript.markers.scope_to_consolidation`
    returns the marker first, and a marker is stored as an assistant message (a reader
    sees the summary); a request must begin with a user turn. The note keeps the marker's
    id and content, and its stamp carries the marker's metadata (``source`` says where it
    came from; ``covered_end`` is 0: it covers history that is no longer in the list).
    Any other list comes back as a plain copy.
    """
    out = list(convo)
    if not out or role_of(out[0]) == "user":
        return out
    meta = consolidation_marker_of(out[0])
    if meta is None:
        return out
    marker = out[0]
    out[0] = stamp(
        HumanMessage(content=marker.content, id=marker.id),
        MEMORY_NOTE_KIND,
        covered_end=0,
        source="consolidation_marker",
        marker=meta.to_dict(),
    )
    return out


def verbatim_start(convo: Sequence[BaseMessage], start: int) -> int:
    """The first index at or after ``start`` that is not a tool result.

    A tool result whose assistant call was folded into the note would be an orphan, which
    strict providers reject. ``start`` is clamped to ``[0, len(convo)]``.

    Example:
        >>> from langchain_core.messages import AIMessage, ToolMessage
        >>> verbatim_start([AIMessage("a"), ToolMessage("r", tool_call_id="c"), AIMessage("b")], 1)
        2
    """
    i = max(0, min(start, len(convo)))
    while i < len(convo) and role_of(convo[i]) == "tool":
        i += 1
    return i


def compact_tail_start(convo: Sequence[BaseMessage], tail_messages: int) -> int:
    """Start index of the last ``tail_messages`` messages, walked off a leading tool result."""
    return verbatim_start(convo, len(convo) - tail_messages)


def compact_tail_start_for_budget(
    convo: Sequence[BaseMessage],
    budget_tokens: int,
    *,
    min_tail_messages: int = COMPACT_TAIL_TURNS,
    max_tail_messages: int = COMPACT_TAIL_MAX_MESSAGES,
    token_counter: TokenCounterLike = None,
    floor_within_budget: bool = False,
) -> int:
    """Where the verbatim tail begins when the conversation is folded.

    As many of the most recent messages as fit in ``budget_tokens``, never fewer than
    ``min_tail_messages``, never more than ``max_tail_messages``, walked forward off a
    leading tool result. Sized by TOKENS, not a message count: a fixed eight messages is
    four tool results, so after a fold the fifth file the model needed was always the one
    it had to read again.

    One change from the seed: when walking forward off tool results would leave fewer
    than ``min_tail_messages`` (the cut fell inside a run of parallel results), the tail
    starts at the assistant turn that made the calls instead, so the model never loses
    the results of its latest calls to the note.

    ``floor_within_budget`` (the fold's own sizing): the ``min_tail_messages`` floor holds
    only while those messages fit ``budget_tokens``; past that the tail keeps at least the
    latest assistant turn and its results. A floor of eight 7k-token results fills a 32k
    view by itself, so the view has no headroom and the next turn folds again: with the
    clear tier off, or with nothing it can clear, the summarizer ran on every turn.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> convo = [HumanMessage("task")] + [AIMessage("x" * 40_000) for _ in range(30)]
        >>> len(convo) - compact_tail_start_for_budget(convo, 10_000)
        8
    """
    counter = resolve_token_counter(token_counter)
    n = len(convo)
    start = n
    tokens = 0
    floor = (
        min(min_tail_messages, _latest_unit(convo)) if floor_within_budget else min_tail_messages
    )
    while start > 0:
        kept = n - start
        if kept >= max_tail_messages:
            break
        size = counter.count_message(convo[start - 1])
        if kept >= floor and tokens + size > budget_tokens:
            break
        tokens += size
        start -= 1
    forward = verbatim_start(convo, start)
    if n - forward >= min(min_tail_messages, n):
        return forward
    back = start
    while back > 0 and role_of(convo[back]) == "tool":
        back -= 1
    return back


def _latest_unit(convo: Sequence[BaseMessage]) -> int:
    """Messages from the latest assistant turn on, its tool results (either shape) included.

    (:func:`~langchain_builderforce_memory.messages.role_of` reads a user turn of
    ``tool_result`` blocks as a tool result).
    """
    for i in range(len(convo) - 1, -1, -1):
        if role_of(convo[i]) != "tool":
            return len(convo) - i
    return len(convo)


@dataclass(frozen=True, slots=True)
class Anchors:
    """Where a conversation's latest directive and its running turn's thinking step are.

    Found once a turn (from the conversation's
    :class:`~langchain_builderforce_memory.facts.RecordFacts`) and handed to each step
    that places the directive, so none of them looks through the record again.
    """

    directive: int
    """The latest directive's index, or -1 (no fallback)."""
    thinking: tuple[int, int] | None
    """:func:`~langchain_builderforce_memory.turns.thinking_span` of the conversation."""
    directives: Sequence[int] | None = None
    """Every directive's index, in order (``None``: the record is read where needed)."""

    @classmethod
    def of(cls, convo: Sequence[BaseMessage]) -> Anchors:
        """The anchors of ``convo``, looked up.

        Example:
            >>> from langchain_core.messages import AIMessage, HumanMessage
            >>> Anchors.of([HumanMessage("go"), AIMessage("ok")])
            Anchors(directive=0, thinking=None, directives=None)
        """
        return cls(latest_directive_index(convo, fallback=False), thinking_span(convo))

    def pinned_before(self, to: int) -> int:
        """Messages of the running thinking step before ``to``: a fold keeps them."""
        span = self.thinking
        return min(span[1], to) - span[0] if span is not None and span[0] < to else 0


def pinned_directive_index(
    convo: Sequence[BaseMessage], tail_start: int, *, anchors: Anchors | None = None
) -> int:
    """Index of the user turn to re-inject verbatim ahead of the tail, or -1.

    The ACTIVE directive is the MOST RECENT user turn. Pinning the first one (the seed's
    old behaviour) made a multi-instruction chat revert to its opening request. -1 when
    the latest user turn is already inside the tail (or there is none). Generated
    (stamped) human messages are never directives.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> convo = [HumanMessage("old"), AIMessage("a"), HumanMessage("new"), AIMessage("b")]
        >>> pinned_directive_index(convo, 3), pinned_directive_index(convo, 2)
        (2, -1)
    """
    last = (
        anchors.directive if anchors is not None else latest_directive_index(convo, fallback=False)
    )
    return last if 0 <= last < tail_start else -1


def held_directive_index(
    convo: Sequence[BaseMessage],
    tail_start: int,
    directive_id: str | None,
    *,
    anchors: Anchors | None = None,
) -> int:
    """The user turn a fold restated (``directive_id``), else :func:`pinned_directive_index`.

    -1 when neither is before ``tail_start``. A fold restates the latest user turn when
    its note covers it, and keeps its id in the memo
    (:attr:`~.memo.CompactMemo.directive_id`). When a newer user turn arrives it lands in
    the tail, and the views on that note keep restating the one the fold did:
    dropping it would move the front of every request after the note, and the provider's
    prefix cache would miss everything the request before had sent (~35k tokens a new
    instruction in ``benchmarks/contenders.py``). A fold that restated nothing (the latest
    turn was in its tail) keeps nothing: restating an earlier turn then would only cost
    room. Generated (stamped) human messages are never directives.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> convo = [HumanMessage("old", id="u0"), AIMessage("a"), HumanMessage("new")]
        >>> held_directive_index(convo, 2, "u0"), held_directive_index(convo, 2, None)
        (0, -1)
    """
    last = pinned_directive_index(convo, tail_start, anchors=anchors)
    if last >= 0 or directive_id is None or tail_start <= 0:
        return last
    # Newest first: the held turn is the latest before the tail unless the record was
    # edited (then it may be gone: nothing is restated).
    turns = anchors.directives if anchors is not None else None
    if turns is None:
        turns = range(min(tail_start, len(convo)))
    for k in range(bisect_left(turns, tail_start) - 1, -1, -1):
        i = turns[k]
        if message_id(convo[i]) == directive_id and is_directive(convo[i]):
            return i
    return -1


def restated_opening(
    convo: Sequence[BaseMessage],
    tail_start: int,
    directive_id: str | None = None,
    *,
    anchors: Anchors | None = None,
) -> tuple[int, tuple[int, int] | None]:
    """The directive restated ahead of a tail at ``tail_start`` and the span pinned with it.

    The directive is :func:`held_directive_index`'s (``directive_id``: the user turn the
    note's fold restated; -1: none). With thinking on, the turn's opening thinking step
    (with its tool results) goes in right after the directive when the tail has passed it:
    for the running loop the provider requires it, and for an earlier turn it was there
    while that turn ran, so the front stays put (see
    :func:`~langchain_builderforce_memory.directive.pinned_opening`).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> convo = [HumanMessage("task")] + [AIMessage(f"a{i}") for i in range(5)]
        >>> restated_opening(convo, 3)
        (0, None)
    """
    anchors = anchors if anchors is not None else Anchors.of(convo)
    directive = held_directive_index(convo, tail_start, directive_id, anchors=anchors)
    span = pinned_opening(
        convo, tail_start, directive, running=anchors.thinking, directives=anchors.directives
    )
    return directive, span


def assemble_compacted(
    system: str | BaseMessage | Sequence[BaseMessage] | None,
    convo: Sequence[BaseMessage],
    note: str,
    covered_end: int,
    restored: Sequence[BaseMessage] = (),
    *,
    cleared_from: Sequence[BaseMessage] | None = None,
    directive_id: str | None = None,
    restate_earlier: bool = True,
    anchors: Anchors | None = None,
    copies: Copies | None = None,
) -> list[BaseMessage]:
    """A compacted view: system, the note, re-attached files, the directive, the tail.

    ``note`` summarizes ``convo[:covered_end]``; EVERY message from ``covered_end`` on is
    kept verbatim (walked off tool results whose call the note folded), so nothing is in
    neither the note nor the tail. The directive sits right before the tail so the model
    reads it as the CURRENT instruction, after the compressed history. The note is a
    human-role stamped message (see the module docstring).

    Args:
        system: The system prefix (a prompt string, a message, or the leading messages).
        convo: The conversation, without its leading system messages.
        note: The note's text.
        covered_end: The conversation index the note covers up to (exclusive).
        restored: Re-attached file outputs, shown right after the note.
        cleared_from: The record ``convo`` is a cleared copy of, when it is one. Its latest
            user turn and thinking span are ``convo``'s (placeholders are tool results in
            the same places), and they are looked up incrementally on the record, which
            grows at the end, not on a copy that changes wherever the clear tier moves.
        directive_id: The user turn the note's fold restated
            (:attr:`~.memo.CompactMemo.directive_id`): restated while it is before the tail,
            also once a newer one has arrived (see :func:`held_directive_index`).
        restate_earlier: Restate ``directive_id``'s turn when a newer one is in the tail
            (it keeps the front in place; ``False`` when the view has no room for it).
        anchors: The record's :class:`Anchors`, when the caller has them.
        copies: The conversation's :class:`~langchain_builderforce_memory.copies.Copies`:
            the note and the restated directive are then the objects of the last turn.

    Returns:
        A new list; ``convo``'s messages are reused, never changed.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> convo = [HumanMessage("task")] + [AIMessage(f"a{i}") for i in range(5)]
        >>> [m.content for m in assemble_compacted("SYS", convo, "MEMO", 3)]
        ['SYS', 'MEMO', 'task', 'a2', 'a3', 'a4']
    """
    tail_start = verbatim_start(convo, covered_end)
    out = system_messages(system)
    out.append(memory_note(note, max(0, min(covered_end, len(convo))), copies=copies))
    out.extend(restored)
    record = convo if cleared_from is None else cleared_from
    anchors = anchors if anchors is not None else Anchors.of(record)
    last, span = restated_opening(record, tail_start, directive_id, anchors=anchors)
    if last >= 0 and not restate_earlier and last != anchors.directive:
        last, span = -1, (span if span == anchors.thinking else None)
    if last >= 0:
        out.append(restated_directive(convo[last], copies=copies))
    # With thinking on, the running tool loop must open with its thinking turn: it
    # stays with the directive while later steps of the loop go to the note.
    if span is not None:
        out.extend(convo[span[0] : span[1]])
    out.extend(convo[tail_start:])
    return out


def _opening_in_tail(convo: Sequence[BaseMessage], directive: int, tail_start: int) -> int:
    """Where the opening thinking step a trimmed tail must keep begins, or -1.

    The running loop's (:func:`~langchain_builderforce_memory.turns.thinking_span`), or
    an earlier directive's own when that one is restated (it was there while its turn ran).
    """
    running = thinking_span(convo)
    earlier = (
        directive >= 0
        and directive != latest_directive_index(convo, fallback=False)
        and (running is None or directive < running[0])
    )
    span = opening_span(convo, directive) if earlier else running
    return span[0] if span is not None and span[0] >= tail_start else -1


def trim_compacted_tail(
    system: Sequence[BaseMessage],
    convo: Sequence[BaseMessage],
    memo: CompactMemo | None,
    *,
    max_tokens: int,
    token_counter: TokenCounterLike = None,
) -> tuple[list[BaseMessage], int]:
    """A view within ``max_tokens`` between folds, and how many tail messages it left out.

    Between folds (a failed or backed-off summarizer) the verbatim tail outgrows the room
    the fold left it, and a tool loop under one directive cannot be windowed (the window
    never drops the latest user turn). The system messages, the note (with ``memo``) and
    the latest user turn (restated when the note covered it) stay; the oldest whole
    tool-call units of the tail go until the view fits; the latest unit always stays
    (correctness over size).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> convo = [HumanMessage("task")] + [AIMessage("x" * 400) for _ in range(6)]
        >>> memo = CompactMemo(note="MEMO", covered_end=2, last_covered_id="x")
        >>> view, dropped = trim_compacted_tail([], convo, memo, max_tokens=300)
        >>> [m.content[:4] for m in view], dropped
        (['MEMO', 'task', 'xxxx', 'xxxx'], 3)
    """
    counter = resolve_token_counter(token_counter)
    head = list(system)
    if memo is not None:
        head.append(memory_note(memo.note, max(0, min(memo.covered_end, len(convo)))))
        tail_start = verbatim_start(convo, memo.covered_end)
        directive_id = memo.directive_id
    else:
        latest = latest_directive_index(convo, fallback=False)
        tail_start = verbatim_start(convo, latest + 1) if latest >= 0 else 0
        directive_id = None
    directive, span = restated_opening(convo, tail_start, directive_id)
    if directive >= 0:
        head.append(convo[directive])
    # With thinking on, the running loop's opening thinking turn stays with the directive:
    # pinned when the tail has passed it, else kept when the units around it go.
    if span is not None:
        head.extend(convo[span[0] : span[1]])
    opening = _opening_in_tail(convo, directive, tail_start) if span is None else -1
    tail = list(convo[tail_start:])
    total = sum(counter.count_message(m) for m in (*head, *tail))
    units = tool_call_units(tail)
    k = 0
    kept_opening: list[BaseMessage] = []
    while k < len(units) - 1 and total > max_tokens:
        u = units[k]
        if tail_start + u.start == opening:
            kept_opening = tail[u.start : u.end]  # moved next to the directive, still counted
        else:
            total -= sum(counter.count_message(m) for m in tail[u.start : u.end])
        k += 1
    start = units[k].start if units else 0
    return [*head, *kept_opening, *tail[start:]], start - len(kept_opening)
