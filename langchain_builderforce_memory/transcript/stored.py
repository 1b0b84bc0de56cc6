"""A stored record (a chat history's messages) as the view and the fold read it.

Pure functions over ``list[BaseMessage]``: the ids a record is stored with, the part of it
a view is built from (scoped to its last consolidation marker), the memo its last marker
holds, and the manual markers written into it.
:class:`~langchain_builderforce_memory.history.CompactingChatMessageHistory` reads and
writes its backing store through these.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TypeVar

from langchain_core.messages import AIMessage, BaseMessage

from langchain_builderforce_memory.messages import clean_text, leading_system_count, message_id
from langchain_builderforce_memory.transcript.markers import (
    consolidation_marker,
    consolidation_marker_of,
    is_consolidation_marker,
    last_with_id,
    scope_to_consolidation,
)
from langchain_builderforce_memory.transcript.memo import CompactMemo

__all__ = [
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
    are left out of the messages: the memo stands for them.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> record = [HumanMessage("a", id="a"), AIMessage("b", id="b"),
        ...           AIMessage("c", id="c"), consolidation_marker("sum", keep_from_id="c")]
        >>> messages, memo = record_memo(record)
        >>> [m.id for m in messages], memo.covered_end, memo.last_covered_id
        (['a', 'b', 'c'], 2, 'b')
    """
    messages: list[BaseMessage] = []
    marker: BaseMessage | None = None
    marker_at = 0
    for m in record:
        if is_consolidation_marker(m):
            marker, marker_at = m, len(messages)
        else:
            messages.append(m)
    if marker is None:
        return messages, None
    meta = consolidation_marker_of(marker)
    covered_end = marker_at
    keep = meta.keep_from_id if meta is not None else None
    if keep is not None:
        lead = leading_system_count(messages)
        found = last_with_id(messages, keep, lead, marker_at)
        covered_end = found if found >= 0 else marker_at
    lead = leading_system_count(messages)
    covered = covered_end - lead  # the memo indexes the conversation after the system
    note = clean_text(
        marker.text if isinstance(marker.content, str | list) else str(marker.content)
    )
    if covered < 1 or not note.strip():
        return messages, None
    return messages, CompactMemo(
        note=note, covered_end=covered, last_covered_id=message_id(messages[covered_end - 1])
    )


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
