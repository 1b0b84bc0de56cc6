"""A stored record (a chat history's messages) as the view and the fold read it.

Pure functions over ``list[BaseMessage]``: the ids a record is stored with, the part of it
a view is built from (scoped to its last consolidation marker), the memo its last marker
holds, and the manual markers written into it.
:class:`~langchain_builderforce_memory.history.CompactingChatMessageHistory` reads and
writes its backing store through these.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from typing import TypeVar

from langchain_core.messages import AIMessage, BaseMessage

from langchain_builderforce_memory.copies import Copies
from langchain_builderforce_memory.directive import is_directive
from langchain_builderforce_memory.facts import Prefix
from langchain_builderforce_memory.messages import (
    check_sound,
    clean_text,
    leading_system_count,
    message_id,
)
from langchain_builderforce_memory.native import is_provider_compaction, scope_to_compaction
from langchain_builderforce_memory.transcript.markers import (
    consolidation_marker,
    consolidation_marker_of,
    is_consolidation_marker,
    last_with_id,
    scope_to_consolidation,
)
from langchain_builderforce_memory.transcript.memo import CompactMemo

__all__ = [
    "RecordScan",
    "consolidation_input",
    "manual_marker",
    "record_memo",
    "scoped_record",
    "with_ids",
]

M = TypeVar("M", bound=BaseMessage)


def with_ids(messages: Sequence[M]) -> list[M]:
    """``messages`` with a fresh UUID on each one that has no ``id`` (copies, in order).

    Messages that already carry an id are returned as they are; the caller's objects are
    never changed.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> given = HumanMessage("hi")
        >>> stored = with_ids([given, HumanMessage("yo", id="m2")])
        >>> bool(stored[0].id), given.id, stored[1].id
        (True, None, 'm2')
    """
    return [m if m.id else m.model_copy(update={"id": str(uuid.uuid4())}) for m in messages]


def scoped_record(record: Sequence[BaseMessage]) -> list[BaseMessage]:
    """What of a stored record a view is built from (seed ``scopeToConsolidation``).

    Its leading system messages, then the conversation scoped to its last consolidation
    marker. Leading system messages are kept: a marker summarises the conversation, not the
    instructions in front of it.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> from langchain_builderforce_memory.transcript.markers import consolidation_marker
        >>> record = [HumanMessage("a"), consolidation_marker("sum"), AIMessage("b")]
        >>> [m.type for m in scoped_record(record)]
        ['ai', 'ai']
    """
    lead = leading_system_count(record)
    return [*record[:lead], *scope_to_consolidation(record[lead:])]


def record_memo(record: Sequence[BaseMessage]) -> tuple[list[BaseMessage], CompactMemo | None]:
    """A stored record as the fold sees it: its messages without markers, and its memo.

    The last consolidation marker becomes the memo: its note covers the stored messages
    before its ``keep_from_id`` (an auto marker) or before itself (a manual one). Markers
    are left out of the messages: the memo stands for them. (:class:`RecordScan` gives the
    same answer as the record grows, reading only its new messages.)

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> record = [HumanMessage("a", id="a"), AIMessage("b", id="b"),
        ...           AIMessage("c", id="c"), consolidation_marker("sum", keep_from_id="c")]
        >>> messages, memo = record_memo(record)
        >>> [m.id for m in messages], memo.covered_end, memo.last_covered_id
        (['a', 'b', 'c'], 2, 'b')
    """
    messages, memo = RecordScan().read(record)
    return list(messages), memo


def _memo_of(
    messages: Sequence[BaseMessage], marker: BaseMessage | None, marker_at: int
) -> CompactMemo | None:
    """The memo the last marker holds; it stood before ``messages[marker_at]``."""
    if marker is None:
        return None
    meta = consolidation_marker_of(marker)
    covered_end = marker_at
    keep = meta.keep_from_id if meta is not None else None
    lead = leading_system_count(messages)
    if keep is not None:
        found = last_with_id(messages, keep, lead, marker_at)
        covered_end = found if found >= 0 else marker_at
    covered = covered_end - lead  # the memo indexes the conversation after the system
    note = clean_text(
        marker.text if isinstance(marker.content, str | list) else str(marker.content)
    )
    if covered < 1 or not note.strip():
        return None
    return CompactMemo(
        note=note, covered_end=covered, last_covered_id=message_id(messages[covered_end - 1])
    )


class RecordScan:
    """:func:`record_memo` for a stored record that grows: each read scans only what is new.

    A chat history's record only grows (appends, and markers appended after a fold), so
    the scan resumes where the last read stopped, after checking that the message it
    stopped at is still there at that place. Anything else (a cleared store, another
    conversation) starts over. One per history; reads from several threads are
    serialised by its lock.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> scan = RecordScan()
        >>> record = [HumanMessage("a", id="a")]
        >>> [m.id for m in scan.read(record)[0]]
        ['a']
        >>> [m.id for m in scan.read([*record, HumanMessage("b", id="b")])[0]]
        ['a', 'b']
    """

    __slots__ = (
        "_block_at",
        "_block_directive",
        "_directive_at",
        "_lock",
        "_marker",
        "_marker_at",
        "_messages",
        "_seen",
        "_seen_id",
    )

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._messages: list[BaseMessage] = []
        self._seen = 0
        self._seen_id: str | None = None
        self._marker: BaseMessage | None = None
        self._marker_at = 0
        self._block_at = -1
        self._directive_at = -1
        self._block_directive = -1

    def read(
        self, record: Sequence[BaseMessage]
    ) -> tuple[Sequence[BaseMessage], CompactMemo | None]:
        """``record``'s messages without markers, and the memo it holds.

        The messages are a :class:`~langchain_builderforce_memory.facts.Prefix` of the
        scan's own list, which only grows (a restart makes a new one): a fixed snapshot,
        with no copy of the record made per read.
        """
        with self._lock:
            seen = self._seen
            if seen > len(record) or (seen and message_id(record[seen - 1]) != self._seen_id):
                self._messages, self._marker, self._marker_at, seen = [], None, 0, 0
                self._block_at = self._directive_at = self._block_directive = -1
            new = record[seen:]
            for m in new:  # before anything is kept: a bad message leaves the scan as it was
                check_sound(m)
            for m in new:
                if is_consolidation_marker(m):
                    self._marker, self._marker_at = m, len(self._messages)
                else:
                    if is_provider_compaction(m):
                        self._block_at = len(self._messages)
                        self._block_directive = self._directive_at
                    elif is_directive(m):
                        self._directive_at = len(self._messages)
                    self._messages.append(m)
            self._seen = len(record)
            self._seen_id = message_id(record[-1]) if record else None
            messages = Prefix(self._messages)
            marker, marker_at = self._marker, self._marker_at
        return messages, _memo_of(messages, marker, marker_at)

    def scoped(
        self, messages: Sequence[BaseMessage], memo: CompactMemo | None, copies: Copies | None
    ) -> tuple[Sequence[BaseMessage], CompactMemo | None]:
        """``messages`` (last read) from their latest provider compaction on, and ``memo``.

        The compaction supersedes what precedes it, and a note of ours that covers only
        that part (one covering later messages is found again by id); the directive it
        compacted away is restated after it
        (:func:`~langchain_builderforce_memory.native.scope_to_compaction`).
        """
        with self._lock:
            block, task = self._block_at, self._block_directive
        if block < 0:
            return messages, memo
        if memo is not None and memo.covered_end + leading_system_count(messages) <= block:
            memo = None
        scoped = scope_to_compaction(messages, last=block, directive=task, copies=copies)
        return scoped, memo


def consolidation_input(record: Sequence[BaseMessage]) -> list[BaseMessage] | None:
    """The scoped conversation a manual consolidation summarises.

    ``None`` when it holds nothing but a marker (nothing new since the last one).

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> [m.text for m in consolidation_input([HumanMessage("a"), HumanMessage("b")])]
        ['a', 'b']
        >>> consolidation_input([HumanMessage("a"), consolidation_marker("sum")]) is None
        True
    """
    scoped = scoped_record(record)
    convo = scoped[leading_system_count(scoped) :]
    if all(is_consolidation_marker(m) for m in convo):
        return None
    return convo


def manual_marker(note: str | None) -> AIMessage | None:
    """A MANUAL consolidation marker holding ``note``, with a fresh id; ``None`` for no note.

    Example:
        >>> marker = manual_marker("they fixed the parser")
        >>> is_consolidation_marker(marker), bool(marker.id), manual_marker(None)
        (True, True, None)
    """
    return with_ids([consolidation_marker(note)])[0] if note is not None else None
