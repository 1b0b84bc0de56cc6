"""The hand-off note: ONE message standing in for the dropped middle of a transcript.

Whatever room the verbatim tail leaves is the note's. It is, in order of preference:

1. the SUMMARY of the dropped messages (the shared summarizer prompt,
   :func:`~langchain_builderforce_memory.transcript.summary.summarize_transcript`);
2. else the RECALL block for the latest directive (``recall(query, budget_chars)``, a
   host's memory search; by default :class:`~langchain_builderforce_memory.search.
   DroppedRecall`, the dropped messages that match the directive, best first: the same
   search the model's ``search_history`` tool runs);
3. else the ELISION MARKER, which says how many messages were left out.

Every note opens with a one-line header naming the hand-off (``from -> to``), so the next
model knows it is continuing someone else's work. Each source is bounded by the caller's
timeout; a failure, a timeout or an empty answer falls through to the next source, logged.
A summary or recall block longer than the room is cut to fit: the note never pushes the
request over budget.

The note is always a :class:`~langchain_core.messages.HumanMessage` stamped
``kind="handoff_note"``. Deviation from the seed, which made it an assistant turn when a
user turn followed: a conversation must open with a user turn for strict providers
(Gemini), and two user turns in a row are valid everywhere (Anthropic merges them), so a
human note is valid in every position the packer puts it.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

from langchain_core.messages import BaseMessage, HumanMessage

from langchain_builderforce_memory.guarded import acall_guarded, call_guarded, log_no_answer
from langchain_builderforce_memory.messages import stamp
from langchain_builderforce_memory.search import DroppedRecall
from langchain_builderforce_memory.tokens import TokenCounter
from langchain_builderforce_memory.transcript.summary import (
    Summarizer,
    asummarize_transcript,
    summarize_transcript,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "HANDOFF_NOTE_KIND",
    "WORK_CONDENSED",
    "HandoffNote",
    "NoteRequest",
    "NoteSource",
    "Recall",
    "abuild_note",
    "build_note",
    "compose_note",
    "elision_marker",
    "handoff_line",
    "min_note_tokens",
    "note_message",
]


HANDOFF_NOTE_KIND = "handoff_note"
"""The stamp kind of the note message."""

CHARS_PER_TOKEN = 4
"""Characters a token is assumed to hold when telling ``recall`` its budget in chars (the
approximate estimate's ratio). An answer that still costs too many tokens is cut."""

TRIM_MARK = " [...]"
"""Ends a summary or recall block cut to fit the room."""

WORK_CONDENSED = (
    "[Work already done on the request below is condensed here too: its tool calls were made.]"
)
"""The header's second line when the note stands in for work done after the directive."""

NoteSource = Literal["summary", "recall", "elision"]
"""Where the note's body came from."""

Recall: TypeAlias = "Callable[[str, int], str] | Callable[[str, int], Awaitable[str]]"
"""``recall(query, budget_chars)``: a memory block for the latest directive, at most
``budget_chars`` long (longer answers are cut). Sync for :func:`build_note` /
``pack_handoff``; sync or async for the async twins."""

"""Runs a sync ``recall`` when it has a timeout, so the caller can stop waiting for it."""


def handoff_line(from_model: str | None, to_model: str | None) -> str:
    """The note's one-line header naming the hand-off (``from -> to``).

    Kept short: it is paid on every packed request, and small windows are the point. With
    neither model named, the same model is being kept inside its own budget, and the
    header says that instead of announcing a hand-off.

    Example:
        >>> handoff_line("gpt-4o", "claude-haiku")
        '[Hand-off gpt-4o -> claude-haiku: earlier messages condensed; the latest follow verbatim.]'
        >>> handoff_line(None, None).startswith("[Earlier messages condensed to fit this model's")
        True
    """
    if from_model is None and to_model is None:
        return (
            "[Earlier messages condensed to fit this model's context window; "
            "the latest follow verbatim.]"
        )
    source = from_model or "another model"
    target = to_model or "this model"
    return (
        f"[Hand-off {source} -> {target}: earlier messages condensed; the latest follow verbatim.]"
    )


def elision_marker(dropped: int) -> str:
    """The last-resort note body: how many messages were left out.

    Example:
        >>> elision_marker(3)
        '[3 earlier messages omitted.]'
    """
    noun = "message" if dropped == 1 else "messages"
    return f"[{dropped} earlier {noun} omitted.]"


def compose_note(header: str, body: str) -> str:
    """The note's text: the header line, a blank line, the body."""
    return f"{header}\n\n{body}" if body else header


def note_message(text: str, *, source: NoteSource, dropped: int) -> HumanMessage:
    """The note as a stamped human message (see the module docstring for why human)."""
    return stamp(HumanMessage(text), HANDOFF_NOTE_KIND, source=source, dropped=dropped)


_LEADS: dict[NoteSource, str] = {
    "summary": "Summary of the earlier part:\n",
    "recall": "Memory recalled for the current request:\n",
    "elision": "",
}


@dataclass(frozen=True, slots=True)
class NoteRequest:
    """What the note step needs to know, decided by the packer's planning step."""

    header: str
    """The one-line hand-off header (:func:`handoff_line`)."""
    dropped: tuple[BaseMessage, ...]
    """The messages the note stands in for, in order."""
    directive_text: str | None
    """The latest directive's text: the recall query (``None``: no recall)."""
    room: int
    """Tokens the note message may cost, framing included."""


@dataclass(frozen=True, slots=True)
class HandoffNote:
    """A built note: the message and where its body came from."""

    message: HumanMessage
    """The stamped human note message."""
    source: NoteSource
    """``"summary"``, ``"recall"`` or ``"elision"``."""


def _note_cost(text: str, counter: TokenCounter) -> int:
    return counter.count_message(HumanMessage(text))


def fit_note(
    request: NoteRequest, source: NoteSource, body: str | None, counter: TokenCounter
) -> HandoffNote | None:
    """The note for ``body`` cut to ``request.room``, or ``None`` when nothing of it fits.

    A cut keeps the head: the summarizer prompt puts the current instruction and the
    facts first, and a recall block is ranked best first. The cut is searched on text
    counts (no per-candidate message objects enter the counter's cache) and checked once
    on the message.
    """
    text = (body or "").strip()
    if not text:
        return None
    lead = _LEADS[source]
    n = len(request.dropped)
    whole = compose_note(request.header, lead + text)
    if _note_cost(whole, counter) <= request.room:
        return HandoffNote(note_message(whole, source=source, dropped=n), source)
    if source == "elision":
        return None
    # Framing the message adds over its text, so the search can count bare text.
    framing = _note_cost(request.header, counter) - counter.count_text(request.header)
    limit = request.room - framing
    lo, hi = 0, len(text)  # invariant: text[:lo] fits (0 means "nothing fits yet")
    while lo < hi:
        mid = (lo + hi + 1) // 2
        cut = compose_note(request.header, lead + text[:mid].rstrip() + TRIM_MARK)
        if counter.count_text(cut) <= limit:
            lo = mid
        else:
            hi = mid - 1
    # A counter that is not additive over text can still put the message over: shrink.
    while lo > 0:
        cut = compose_note(request.header, lead + text[:lo].rstrip() + TRIM_MARK)
        if _note_cost(cut, counter) <= request.room:
            return HandoffNote(note_message(cut, source=source, dropped=n), source)
        lo = lo * 9 // 10
    return None


def elision_note(request: NoteRequest, counter: TokenCounter) -> HandoffNote | None:
    """The marker note, or ``None`` when not even that fits the room."""
    return fit_note(request, "elision", elision_marker(len(request.dropped)), counter)


def min_note_tokens(header: str, dropped_at_most: int, counter: TokenCounter) -> int:
    """What the smallest note (the marker) costs at its widest count: the room to reserve."""
    return _note_cost(compose_note(header, elision_marker(dropped_at_most)), counter)


def recall_budget_chars(request: NoteRequest, counter: TokenCounter) -> int:
    """What ``recall`` is told it may return: the room left after header and lead, in chars."""
    empty = compose_note(request.header, _LEADS["recall"])
    return max(0, (request.room - _note_cost(empty, counter)) * CHARS_PER_TOKEN)


def _recall_ask(
    request: NoteRequest, counter: TokenCounter, recall: Recall | None
) -> tuple[Recall, str, int] | None:
    """``(recall, query, budget_chars)`` when recall is worth asking, else ``None``.

    Without a ``recall`` of the caller's, the dropped messages themselves are searched.
    """
    if not request.directive_text or (recall is None and not request.dropped):
        return None
    if recall is None:
        recall = DroppedRecall(tuple(request.dropped))
    chars = recall_budget_chars(request, counter)
    return (recall, request.directive_text, chars) if chars > 0 else None


def _recall_answer(recall: Recall, raw: object) -> str | None:
    if isinstance(raw, str) and raw.strip():
        return raw
    # The packer's own search of what it drops finding nothing is an answer (nothing there
    # matches the request), not a failing source of the caller's: no warning for it.
    if not (isinstance(recall, DroppedRecall) and raw == ""):
        log_no_answer(
            "recall", "empty answer" if raw in (None, "") else f"not a str: {type(raw).__name__}"
        )
    return None


def _call_recall_sync(recall: Recall, query: str, chars: int) -> object:
    raw = recall(query, chars)
    if inspect.isawaitable(raw):
        if inspect.iscoroutine(raw):
            raw.close()
        msg = "recall: an async function was given to pack_handoff; use apack_handoff."
        raise TypeError(msg)
    return raw


def recall_sync(recall: Recall, query: str, chars: int, timeout: float | None) -> str | None:
    """Call a sync ``recall``; ``None`` on failure, timeout or an empty answer.

    Each is logged, but for the packer's own search finding nothing.
    """
    raw = call_guarded(
        functools.partial(_call_recall_sync, recall, query, chars), what="recall", timeout=timeout
    )
    return _recall_answer(recall, raw)


async def _call_recall_async(recall: Recall, query: str, chars: int) -> object:
    if inspect.iscoroutinefunction(recall):
        return await recall(query, chars)
    # A sync recall runs in a worker thread: it must not block the event loop.
    raw: object = await asyncio.to_thread(recall, query, chars)
    if inspect.isawaitable(raw):
        return await raw
    return raw


async def arecall(recall: Recall, query: str, chars: int, timeout: float | None) -> str | None:
    """Async twin of :func:`recall_sync` (sync functions run in a thread)."""
    raw = await acall_guarded(
        functools.partial(_call_recall_async, recall, query, chars), what="recall", timeout=timeout
    )
    return _recall_answer(recall, raw)


def build_note(
    request: NoteRequest,
    counter: TokenCounter,
    *,
    summarize: Summarizer | None,
    recall: Recall | None,
    timeout: float | None,
) -> HandoffNote | None:
    """The note for ``request``: summary, else recall, else the marker; ``None`` if none fits.

    Only the source calls differ from :func:`abuild_note`: whether a source is asked
    (:func:`_recall_ask`) and how its answer becomes a note (:func:`fit_note`) is shared.
    """
    if summarize is not None and request.dropped:
        body = summarize_transcript(
            summarize, request.dropped, timeout=timeout, token_counter=counter
        )
        note = fit_note(request, "summary", body, counter)
        if note is not None:
            return note
    ask = _recall_ask(request, counter, recall)
    if ask is not None:
        note = fit_note(request, "recall", recall_sync(*ask, timeout), counter)
        if note is not None:
            return note
    return elision_note(request, counter)


async def abuild_note(
    request: NoteRequest,
    counter: TokenCounter,
    *,
    summarize: Summarizer | None,
    recall: Recall | None,
    timeout: float | None,
) -> HandoffNote | None:
    """Async twin of :func:`build_note`."""
    if summarize is not None and request.dropped:
        body = await asummarize_transcript(
            summarize, request.dropped, timeout=timeout, token_counter=counter
        )
        note = fit_note(request, "summary", body, counter)
        if note is not None:
            return note
    ask = _recall_ask(request, counter, recall)
    if ask is not None:
        note = fit_note(request, "recall", await arecall(*ask, timeout), counter)
        if note is not None:
            return note
    return elision_note(request, counter)
