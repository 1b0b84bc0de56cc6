"""One chat history store, called one call at a time from threads and event loops alike.

:class:`~langchain_builderforce_memory.history.CompactingChatMessageHistory` reads and
writes its backing ``BaseChatMessageHistory`` only through :class:`ChatStore`:

- Every call into the store is serialised by one ``aiologic.Lock`` (it binds to no event
  loop, so threads, loops in other threads and tasks mix freely).
- A store whose async methods refuse to run is driven from the async twins through its sync
  methods in a worker thread. ``SQLChatMessageHistory`` on a sync engine (or a connection
  string without ``async_mode=True``) raises a raw ``TypeError`` from its async ones.
- :meth:`ChatStore.known` is the record as last read plus what this wrapper appended since,
  so an add plans its fold on it without reading the store again: an add costs one store
  write, a read one store read, as they do on the raw store. A read still goes to the
  store every time, because another writer may have appended. The known record is trusted
  only once a read has shown that the store gives back what this wrapper wrote as it was
  written: a store that drops ids or metadata is read on every add, as before.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import aiologic
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from langchain_builderforce_memory.facts import Prefix
from langchain_builderforce_memory.transcript.markers import is_consolidation_marker

__all__ = ["ChatStore", "is_sync_only"]

logger = logging.getLogger("langchain_builderforce_memory.history")
"""The history's own logger: its warnings were logged there before the store calls moved
here, and an app filtering on it keeps seeing them."""


def is_sync_only(store: BaseChatMessageHistory) -> bool:
    """Whether ``store``'s async methods cannot run (its sync ones must serve them).

    ``SQLChatMessageHistory`` says so in ``async_mode``: ``False`` for an ``Engine``,
    ``None`` for a connection string given without ``async_mode=True``.

    Example:
        >>> from langchain_core.chat_history import InMemoryChatMessageHistory
        >>> is_sync_only(InMemoryChatMessageHistory())
        False
    """
    return hasattr(store, "async_mode") and not getattr(store, "async_mode", False)


class ChatStore:
    """A backing store, its I/O lock, and the record as this wrapper last knew it.

    Example:
        >>> from langchain_core.chat_history import InMemoryChatMessageHistory
        >>> from langchain_core.messages import HumanMessage
        >>> store = ChatStore(InMemoryChatMessageHistory())
        >>> store.append([HumanMessage("hi", id="m1")])
        >>> [m.id for m in store.known()], [m.id for m in store.read()]
        (['m1'], ['m1'])
    """

    __slots__ = ("_faithful", "_io", "_known", "_sync_only", "_written", "backing")

    def __init__(self, backing: BaseChatMessageHistory) -> None:
        self.backing = backing
        self._io = aiologic.Lock()
        self._sync_only = is_sync_only(backing)
        self._known: list[BaseMessage] | None = None
        # The record as last read, extended by this wrapper's own appends (never handed
        # out: read() returns a copy), None until the first read.
        self._written: BaseMessage | None = None  # the last message written, to judge by
        self._faithful: bool | None = None  # whether the store gives it back unchanged

    def read(self) -> Sequence[BaseMessage]:
        """The whole stored record, read from the store (read-only: copy it to change it)."""
        with self._io:
            record = list(self.backing.messages)
        return self._keep(record)

    async def aread(self) -> Sequence[BaseMessage]:
        """Async twin of :meth:`read`."""
        async with self._io:
            if self._sync_only:
                record = list(await asyncio.to_thread(lambda: self.backing.messages))
            else:
                record = list(await self.backing.aget_messages())
        return self._keep(record)

    def known(self) -> Sequence[BaseMessage]:
        """The record as last read plus this wrapper's appends since (read if never read).

        Read-only: the list is extended in place by the next append. Read from the store
        until a read has shown that the store keeps what is written unchanged.
        """
        return self._known if self._known is not None and self._faithful else self.read()

    async def aknown(self) -> Sequence[BaseMessage]:
        """Async twin of :meth:`known`."""
        if self._known is not None and self._faithful:
            return self._known
        return await self.aread()

    def keeps_marker(self, marker: BaseMessage) -> bool:
        """After the first marker is written: did the store keep its stamp?

        A store that keeps only role and content turns a marker into a plain assistant
        message holding a 2.5k-token note, which would then sit in the verbatim tail and
        be folded again: the history then writes no more markers and its own memo carries
        the fold (per process). The marker is looked up by its note from the end, not
        taken to be the last stored message (another writer may have appended right after
        it), nor by its id (a store may drop ids and keep the metadata).
        """
        return self._judge_marker(self.read(), marker)

    async def akeeps_marker(self, marker: BaseMessage) -> bool:
        """Async twin of :meth:`keeps_marker`."""
        return self._judge_marker(await self.aread(), marker)

    def _judge_marker(self, stored: Sequence[BaseMessage], marker: BaseMessage) -> bool:
        kept = any(
            is_consolidation_marker(m) and m.content == marker.content for m in reversed(stored)
        )
        if not kept:
            self._faithful = False  # what it gives back is not what was written
            logger.warning(
                "the backing history does not keep message metadata (additional_kwargs): "
                "consolidation markers cannot be stored, so folds are kept in this wrapper "
                "only and a new process starts from the whole record"
            )
        return kept

    def append(self, messages: Sequence[BaseMessage]) -> None:
        """Write ``messages`` to the store (one call) and to the known record."""
        with self._io:
            self.backing.add_messages(messages)
        self._extend(messages)

    async def aappend(self, messages: Sequence[BaseMessage]) -> None:
        """Async twin of :meth:`append`."""
        async with self._io:
            if self._sync_only:
                await asyncio.to_thread(self.backing.add_messages, messages)
            else:
                await self.backing.aadd_messages(messages)
        self._extend(messages)

    def clear(self) -> None:
        """Empty the store."""
        with self._io:
            self.backing.clear()
        self._known = []

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        async with self._io:
            if self._sync_only:
                await asyncio.to_thread(self.backing.clear)
            else:
                await self.backing.aclear()
        self._known = []

    def _extend(self, messages: Sequence[BaseMessage]) -> None:
        if messages:
            self._written = messages[-1]
        if self._known is not None:
            self._known.extend(messages)

    def _keep(self, record: list[BaseMessage]) -> Sequence[BaseMessage]:
        """Keep ``record`` as the known one (judging the store once); a fixed view of it.

        The known list only grows (this wrapper's appends) or is replaced, so the view is
        a :class:`~langchain_builderforce_memory.facts.Prefix`: no copy per read.
        """
        written = self._written
        if self._faithful is None and written is not None:
            # Searched from the end: another writer may have appended after it.
            self._faithful = any(m == written for m in reversed(record))
        self._known = record
        return Prefix(record)
