"""What an adapter serving many threads keeps for each between turns, and how much.

:class:`~langchain_builderforce_memory.agents.core.MemoryCore` keeps each thread's
:class:`~langchain_builderforce_memory.facts.RecordFacts` (the middleware's and the
node's) and the working memory its last turn wrote here: the caller's per-thread state,
not a module-level cache.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Final, Generic, TypeVar

from langchain_builderforce_memory.facts import RecordFacts

__all__ = ["HELD_TOKENS", "IDLE_SECONDS", "PerThread", "held_tokens"]

V = TypeVar("V")

HELD_TOKENS: Final = 20_000_000
"""What a :class:`PerThread` of record facts may hold before idle threads' go, in tokens
(a conversation counted twice when its record's facts and its conversation's differ: a
system message or a provider's compaction before it). At 3-5
bytes of memory a token so counted, some 100 MB."""

IDLE_SECONDS: Final = 60.0
"""A thread unused this long is idle. A running tool loop comes back within seconds; a
tool that runs longer only costs its thread one count of its record, and only when the
idle threads hold more than :data:`HELD_TOKENS`."""


class PerThread(Generic[V]):
    """What an adapter serving many threads keeps for each (its record facts, say).

    A turn checks its thread's value out and back in, so two turns of one thread running
    at once (a retry beside the call it retries) never share one: the second gets a new
    one from ``factory``, which only costs it the work the value saves.

    The least recently used thread's value goes first, past ``limit`` threads, or past
    ``capacity`` (what the values hold, by ``weigh``) once that thread has been idle for
    ``grace`` seconds. A record is held here past its run: a database checkpointer reads
    new copies each run, so an idle thread's record would otherwise stay in memory for
    nothing. Threads served in turn are never idle that long, and keep theirs however
    many there are; a thread whose value was let go has it rebuilt on its next turn.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> threads = PerThread(RecordFacts)
        >>> facts = threads.take("t1")
        >>> facts.sync([HumanMessage("hi")])
        >>> threads.give("t1", facts)
        >>> threads.take("t1") is facts, threads.take("t1") is facts  # checked out: new ones
        (True, False)
    """

    __slots__ = (
        "_capacity",
        "_clock",
        "_factory",
        "_grace",
        "_held",
        "_limit",
        "_lock",
        "_total",
        "_weigh",
    )

    def __init__(
        self,
        factory: Callable[[], V],
        *,
        limit: int = 2_048,
        weigh: Callable[[V], int] | None = None,
        capacity: int = HELD_TOKENS,
        grace: float = IDLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Values made by ``factory``, kept for up to ``limit`` threads and ``capacity``."""
        self._factory = factory
        self._held: OrderedDict[Hashable, tuple[V, int, float]] = OrderedDict()
        self._limit = limit
        self._weigh = weigh
        self._capacity = capacity
        self._grace = grace
        self._clock = clock
        self._total = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        """What the values kept hold, by ``weigh`` (0 without it)."""
        return self._total

    def take(self, thread: Hashable) -> V:
        """``thread``'s value, checked out (a new one when it has none here)."""
        with self._lock:
            entry = self._held.pop(thread, None)
            if entry is not None:
                self._total -= entry[1]
        return entry[0] if entry is not None else self._factory()

    def give(self, thread: Hashable, value: V) -> None:
        """Check ``value`` back in as ``thread``'s (the threads past the bounds let go)."""
        weight = self._weigh(value) if self._weigh is not None else 0
        now = self._clock()
        with self._lock:
            old = self._held.pop(thread, None)
            self._total += weight - (old[1] if old is not None else 0)
            self._held[thread] = (value, weight, now)
            while len(self._held) > 1:
                _, (_, oldest, used) = next(iter(self._held.items()))
                full = self._total > self._capacity and now - used >= self._grace
                if len(self._held) <= self._limit and not full:
                    break
                self._held.popitem(last=False)
                self._total -= oldest


def held_tokens(facts: RecordFacts) -> int:
    """What ``facts`` hold, for :class:`PerThread`'s ``weigh``: their record's tokens."""
    return facts.held_tokens
