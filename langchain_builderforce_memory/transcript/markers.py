"""Consolidation markers: the durable form of a compressed conversation.

A long conversation is compressed into ONE summary that becomes the new base context:
everything before the marker stays in the record (a reader can still scroll to it), but
the next run's model view starts from the marker instead of the full history. The marker
is a normal assistant message, so a reader SEES the summary, stamped in
``additional_kwargs`` (see :func:`~langchain_builderforce_memory.messages.stamp`) so later
passes recognise it by its metadata, never by its text: a user who types the marker's
words is still a user.

Two writers:

- MANUAL ("Consolidate" / "Fork"): the summary covers everything before the marker.
- AUTO: a run's working-transcript fold, persisted so the next run (after a reload, on
  another surface) starts from the note instead of summarizing the whole history again.
  A fold covers only the OLDER part of the record; its ``keep_from_id`` names the first
  message it did NOT cover, and every message from there on stays verbatim after the
  marker. Nothing is in neither.

Message ids are strings in LangChain (the seed used numbers), so ``keep_from_id`` is a
``str`` and is matched against :func:`~langchain_builderforce_memory.messages.message_id`.
A marker stored as an assistant message cannot lead a strict provider's request (it must
begin with a user turn): :func:`~langchain_builderforce_memory.transcript.fold.
build_working_transcript` presents a leading marker as a human-role memory note.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

from langchain_core.messages import AIMessage, BaseMessage

from langchain_builderforce_memory.facts import LastIndex, RecordFacts
from langchain_builderforce_memory.messages import message_id, stamp, stamp_of

__all__ = [
    "CONSOLIDATION_MARKER_KIND",
    "CONSOLIDATION_MARKER_PREFIX",
    "ConsolidationMarkerMeta",
    "consolidation_marker",
    "consolidation_marker_content",
    "consolidation_marker_of",
    "fold_keep_from_id",
    "is_consolidation_marker",
    "last_consolidation_index",
    "last_with_id",
    "scope_to_consolidation",
]

M = TypeVar("M", bound=BaseMessage)

CONSOLIDATION_MARKER_KIND: Final = "consolidation_marker"
"""The stamp ``kind`` of a marker message."""

CONSOLIDATION_MARKER_PREFIX: Final = (
    "📌 **Consolidated summary** — context continues from here.\n\n"
)
"""The visible header prefixed onto a consolidation summary so a reader recognises it."""


@dataclass(frozen=True, slots=True)
class ConsolidationMarkerMeta:
    """What a marker's stamp says.

    ``auto`` / ``keep_from_id`` / ``folded`` come only from a run's fold; a manual marker
    has none of them.

    Example:
        >>> ConsolidationMarkerMeta(auto=True, keep_from_id="m4", folded=3).to_dict()
        {'auto': True, 'keep_from_id': 'm4', 'folded': 3}
    """

    auto: bool = False
    """Written by auto-compaction, not by a person."""
    keep_from_id: str | None = None
    """The id of the first message the note does NOT cover (kept verbatim after the marker)."""
    folded: int | None = None
    """How many record messages the fold newly compressed."""

    def to_dict(self) -> dict[str, object]:
        """The stamp fields (JSON-serialisable); empty for a manual marker."""
        out: dict[str, object] = {}
        if self.auto:
            out["auto"] = True
        if self.keep_from_id is not None:
            out["keep_from_id"] = self.keep_from_id
        if self.folded is not None:
            out["folded"] = self.folded
        return out


def consolidation_marker_content(summary: str) -> str:
    """Wrap a raw summary as the marker's visible content (prefix + trimmed summary).

    Example:
        >>> consolidation_marker_content("  hello  ") == CONSOLIDATION_MARKER_PREFIX + "hello"
        True
    """
    return f"{CONSOLIDATION_MARKER_PREFIX}{summary.strip()}"


def consolidation_marker(
    summary: str, *, keep_from_id: str | None = None, folded: int | None = None
) -> AIMessage:
    """A marker message: an assistant message showing ``summary``, stamped as a marker.

    Manual when ``keep_from_id`` and ``folded`` are both ``None`` (the summary covers
    everything before the marker); otherwise an AUTO marker, as a persisted fold writes.

    Args:
        summary: The summary text; the visible prefix is added.
        keep_from_id: The id (``message_id``) of the first message the summary does NOT
            cover; every message from it on stays verbatim after the marker.
        folded: How many messages the fold newly compressed (positive).

    Raises:
        TypeError: ``summary`` is not a string.
        ValueError: ``keep_from_id`` is not a non-empty string, or ``folded`` is not a
            positive int.

    Example:
        >>> marker = consolidation_marker("the note", keep_from_id="m4", folded=3)
        >>> consolidation_marker_of(marker)
        ConsolidationMarkerMeta(auto=True, keep_from_id='m4', folded=3)
    """
    text: object = summary  # checked at run time: users pass anything
    if not isinstance(text, str):
        msg = f"consolidation_marker: summary must be the note's text (a str); got {text!r}."
        raise TypeError(msg)
    if keep_from_id is not None and (not isinstance(keep_from_id, str) or not keep_from_id):
        msg = (
            f"consolidation_marker: keep_from_id must be a non-empty message id string "
            f"(message_id(...) of the first kept message); got {keep_from_id!r}."
        )
        raise ValueError(msg)
    if folded is not None and (
        isinstance(folded, bool) or not isinstance(folded, int) or folded < 1
    ):
        msg = f"consolidation_marker: folded must be a positive int or None; got {folded!r}."
        raise ValueError(msg)
    auto = keep_from_id is not None or folded is not None
    meta = ConsolidationMarkerMeta(auto=auto, keep_from_id=keep_from_id, folded=folded)
    content = consolidation_marker_content(summary)
    return stamp(AIMessage(content), CONSOLIDATION_MARKER_KIND, **meta.to_dict())


def consolidation_marker_of(message: BaseMessage) -> ConsolidationMarkerMeta | None:
    """The marker metadata a message carries, or ``None`` when it is not a marker.

    Never raises: malformed metadata reads as "not a marker", and a malformed optional
    field (a non-string ``keep_from_id``, a non-positive ``folded``) is dropped, so a
    marker with a broken ``keep_from_id`` reads as manual.

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> consolidation_marker_of(consolidation_marker("s"))
        ConsolidationMarkerMeta(auto=False, keep_from_id=None, folded=None)
        >>> consolidation_marker_of(AIMessage("s")) is None
        True
    """
    extra: object = getattr(message, "additional_kwargs", None)
    if not isinstance(extra, dict):
        return None
    meta = stamp_of(message)
    if meta is None or meta.get("kind") != CONSOLIDATION_MARKER_KIND:
        return None
    keep = meta.get("keep_from_id")
    folded = meta.get("folded")
    return ConsolidationMarkerMeta(
        auto=meta.get("auto") is True,
        keep_from_id=keep if isinstance(keep, str) and keep else None,
        folded=folded
        if isinstance(folded, int) and not isinstance(folded, bool) and folded > 0
        else None,
    )


def is_consolidation_marker(message: BaseMessage) -> bool:
    """True when ``message`` is a consolidation marker (by its stamp, never its text)."""
    return consolidation_marker_of(message) is not None


def last_consolidation_index(
    messages: Sequence[BaseMessage], *, facts: RecordFacts | None = None
) -> int:
    """The index of the LAST consolidation marker in ``messages``, or -1 if none.

    ``facts``: ``messages``' own :class:`~langchain_builderforce_memory.facts.RecordFacts`,
    synced to them: the marker is then looked for among the new messages only. Without
    them, the messages are read from the end.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> last_consolidation_index([HumanMessage("a"), consolidation_marker("s")])
        1
    """
    if facts is not None:
        return facts.get(LAST_MARKER)
    return next(
        (i for i in range(len(messages) - 1, -1, -1) if is_consolidation_marker(messages[i])),
        -1,
    )


LAST_MARKER: Final = LastIndex(is_consolidation_marker)
"""The :class:`~langchain_builderforce_memory.facts.Fact`: a record's last consolidation marker."""


def scope_to_consolidation(messages: Sequence[M]) -> list[M]:
    """Trim a record to its compressed context: the last marker, then what it does not cover.

    A manual marker covers everything before it: the result is the record from the
    marker on. An auto marker covers up to its ``keep_from_id``: the marker, then every
    message from that id on (other markers dropped: an older note is superseded by the
    newer one). A ``keep_from_id`` no longer in the record, or after the marker, reads as
    manual. With no marker the result is a copy of the whole record.

    The result is a new list (the caller's is never changed); its first message is the
    marker, an assistant message, so pass it to ``build_working_transcript``, which
    presents a leading marker as a human-role note, rather than straight to a model.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> record = [HumanMessage("a"), consolidation_marker("s"), HumanMessage("b")]
        >>> [m.type for m in scope_to_consolidation(record)]
        ['ai', 'human']
    """
    idx = last_consolidation_index(messages)
    if idx < 0:
        return list(messages)
    marker = messages[idx]
    meta = consolidation_marker_of(marker)
    keep = meta.keep_from_id if meta is not None else None
    start = -1
    if keep is not None:
        start = last_with_id(messages, keep, 0, idx)
    if start < 0:
        return list(messages[idx:])
    return [
        marker,
        *(m for m in messages[start:] if m is not marker and not is_consolidation_marker(m)),
    ]


def last_with_id(messages: Sequence[BaseMessage], wanted: str, start: int, end: int) -> int:
    """The last index in ``messages[start:end]`` whose :func:`message_id` is ``wanted``; -1.

    A marker's ``keep_from_id`` is resolved from the marker back: an app whose id counter
    restarted reuses ids, and the first message with the id is then an old one the note
    already covers, which would put the messages between in neither note nor view.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> record = [HumanMessage("a", id="m1"), HumanMessage("b", id="m1")]
        >>> last_with_id(record, "m1", 0, 2)
        1
    """
    for i in range(min(end, len(messages)) - 1, max(start, 0) - 1, -1):
        if message_id(messages[i]) == wanted:
            return i
    return -1


def fold_keep_from_id(anchors: Iterable[tuple[int, str]], covered_end: int) -> str | None:
    """Where an auto marker's verbatim part begins.

    ``anchors`` maps the positions of the PERSISTED messages in the run's transcript to
    their ids (``(index, id)`` pairs); ``covered_end`` is the index the fold now covers up
    to (exclusive). Returns the id the next scope must keep from: exact when a persisted
    message sits AT ``covered_end``, else the nearest persisted message BEFORE it
    (conservative: the span between is then both in the note and verbatim, never in
    neither), else ``None`` when nothing persisted precedes the cut.

    When every message of the record is persisted (LangGraph state), this is simply
    ``message_id(convo[covered_end])``.

    Example:
        >>> fold_keep_from_id([(0, "a"), (2, "b"), (7, "c")], 5)
        'b'
    """
    best: tuple[int, str] | None = None
    for index, anchor_id in anchors:
        if index <= covered_end and (best is None or index > best[0]):
            best = (index, anchor_id)
    return best[1] if best is not None else None
