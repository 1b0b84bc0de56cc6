"""Facts about a record that grow with it: a turn pays for its new messages only.

An agent's record grows at the end between two model calls, and every turn the view
policy asks the same questions of all of it: the token total before each message, every
tool result with its call, the latest user turn, the last consolidation marker. Asked
afresh, each is a pass over the whole transcript, so a turn costs O(transcript) and a
300-call run pays for its history 300 times. :class:`PrefixCache` keeps the answer for
the record last seen and, when the record handed in starts with exactly those messages,
extends it over the new ones. :func:`prefix_sums`, the running token totals every budget
check starts from, works the same way with its own small table.

Correctness rests on one check, made every time: the cached messages must be the record's
first messages. Records are filed by the identity of their first two messages (LangGraph
passes the same message objects turn after turn), and the check is list equality, which
Python settles by identity at C speed for the same objects and by value where they
differ, so a hit is never wrong. Anything else misses and starts over: an edited message
(LangGraph's ``add_messages`` replaces it with a new object), a record replaced by a
shorter one (``RemoveMessage``), another thread's record, a record restored from a
checkpoint (equal messages, new objects: counted afresh once). Messages are treated as
values, as LangChain treats them: a message whose fields are assigned in place after it
was seen is not noticed (the per-message token cache notices a new ``content``; this
cache does not look).

Bounded: a few records per cache (the most recently used; each entry holds its messages,
which a live graph holds anyway), entries never mutated after they are stored, so threads
can share one cache under its lock.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from itertools import accumulate
from typing import TYPE_CHECKING, Final, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = [
    "PrefixCache",
    "Recent",
    "all_indices",
    "clear_caches",
    "last_index",
    "message_sizes",
    "prefix_sums",
]


class MessageCounter(Protocol):
    """What the running totals count with: any token counter.

    Structural, so this module (which the counters' own modules import) imports none of
    them back, not even for its types.
    """

    def count_message(self, message: BaseMessage) -> int:
        """Tokens ``message`` costs."""
        ...


S = TypeVar("S")
T = TypeVar("T")

_LIMIT: Final = 16
"""Record openings an instance keeps facts for (the most recently used)."""

_PER_KEY: Final = 4
"""Records kept under one opening (a conversation, its cleared view, an edited copy)."""


class _Entry(Generic[S]):
    __slots__ = ("owner", "refs", "state")

    def __init__(self, owner: object, refs: list[object], state: S) -> None:
        self.owner = owner
        self.refs = refs
        self.state = state


_ALL: weakref.WeakSet[PrefixCache[object] | Recent[object, object]] = weakref.WeakSet()
"""Every cache made here, for :func:`clear_caches`."""


def clear_caches() -> None:
    """Forget what every cache of this module holds (a cold start, e.g. to compare with).

    Example:
        >>> clear_caches()
    """
    for cache in list(_ALL):
        cache.clear()
    with _prefix_lock:
        _prefix_cache.clear()


class PrefixCache(Generic[S]):
    """Facts about the last few records seen, resumed when a record grew at the end.

    ``owner`` is what the facts also depend on (a token counter, say): compared by
    identity. The state stored must not be changed afterwards: copy it to extend it.
    Records are filed by their first two messages; a few records may share those (a
    conversation and its view with some results cleared), so each keeps its own entry.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> cache: PrefixCache[int] = PrefixCache()
        >>> record = [HumanMessage("a"), HumanMessage("b")]
        >>> cache.resume(record) is None
        True
        >>> cache.save(record, None, 2)
        >>> cache.resume([*record, HumanMessage("c")])
        (2, 2)
        >>> cache.resume([HumanMessage("x"), *record]) is None
        True
    """

    __slots__ = ("__weakref__", "_entries", "_limit", "_lock", "_prefixes")

    def __init__(self, limit: int = _LIMIT, *, prefixes: int = 0) -> None:
        """Keep facts for ``limit`` record openings, and ``prefixes`` shorter prefixes.

        ``prefixes``: shorter prefixes of a record kept beside it (0: a record that grew
        replaces them). For facts asked of several prefixes of one record in a turn (the
        results before each clear horizon tried): a prefix shorter than the last one
        asked then extends the longest kept below it instead of starting over.
        """
        self._entries: OrderedDict[tuple[int, int, int], list[_Entry[S]]] = OrderedDict()
        self._lock = threading.Lock()
        self._limit = limit
        self._prefixes = prefixes
        _ALL.add(self)  # type: ignore[arg-type]  # cleared, never read, through the set

    @staticmethod
    def _key(messages: Sequence[object], owner: object) -> tuple[int, int, int]:
        # Two messages, not one: threads whose records open with one shared message
        # object (a module-level system prompt) would otherwise evict each other.
        second = id(messages[1]) if len(messages) > 1 else 0
        return (id(owner), id(messages[0]), second)

    def _find(self, messages: Sequence[object], owner: object) -> _Entry[S] | None:
        key = self._key(messages, owner)
        with self._lock:
            # Grown from one message to two: the key moved; look under the old one too.
            found: list[_Entry[S]] = [
                *self._entries.get(key, []),
                *self._entries.get((key[0], key[1], 0), []),
            ]
        if len(found) > 1:
            found.sort(key=_known, reverse=True)  # the longest that fits: least to extend
        for entry in found:
            refs = entry.refs
            known = len(refs)
            # Cheap rejections first (a record sharing the opening, a shorter one); then
            # the whole prefix, without a copy when the record has no new message.
            if entry.owner is not owner or known > len(messages):
                continue
            if refs[-1] is not messages[known - 1] and refs[-1] != messages[known - 1]:
                continue
            head = messages if known == len(messages) else messages[:known]
            if refs == (head if isinstance(head, list) else list(head)):
                return entry
        return None

    def resume(self, messages: Sequence[object], owner: object = None) -> tuple[int, S] | None:
        """``(known, state)``: the state of ``messages[:known]``; ``None`` when unknown."""
        if not messages:
            return None
        entry = self._find(messages, owner)
        return (len(entry.refs), entry.state) if entry is not None else None

    def save(self, messages: Sequence[object], owner: object, state: S) -> None:
        """Keep ``state`` as the facts of ``messages`` (the least recently used goes).

        It replaces the entry of any record ``messages`` extends.
        """
        if not messages:
            return
        key = self._key(messages, owner)
        entry = _Entry(owner, list(messages), state)
        with self._lock:
            # Entries this record extends are superseded. Judged by the whole prefix, not
            # the last message: a view that shares the record's opening and its newest
            # messages (old results cleared in between) must not evict the record's entry,
            # or every turn recounts the record from the start.
            n = len(entry.refs)
            kept = [
                e
                for e in self._entries.get(key, ())
                if (self._prefixes and len(e.refs) < n) or not _extends(entry.refs, e.refs)
            ]
            self._entries[key] = [entry, *kept[: _PER_KEY + self._prefixes - 1]]
            self._entries.move_to_end(key)
            while len(self._entries) > self._limit:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every record."""
        with self._lock:
            self._entries.clear()


def _known(entry: _Entry[S]) -> int:
    return len(entry.refs)


def _extends(longer: list[object], shorter: list[object]) -> bool:
    """Whether ``longer`` starts with ``shorter`` (by identity at C speed, cheap test first)."""
    n = len(shorter)
    return n <= len(longer) and longer[n - 1] is shorter[-1] and longer[:n] == shorter


def last_index(cache: PrefixCache[int], messages: Sequence[T], test: Callable[[T], bool]) -> int:
    """The index of the last message passing ``test``, or -1: only new messages are tested.

    ``cache`` must serve this one ``test`` (its state is the answer for the record it saw).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> cache: PrefixCache[int] = PrefixCache()
        >>> record = [HumanMessage("a"), AIMessage("b")]
        >>> last_index(cache, record, lambda m: m.type == "human")
        0
        >>> last_index(cache, [*record, HumanMessage("c")], lambda m: m.type == "human")
        2
    """
    hit = cache.resume(messages)
    known, found = hit if hit is not None else (0, -1)
    if known == len(messages):
        return found
    for i in range(len(messages) - 1, known - 1, -1):
        if test(messages[i]):
            found = i
            break
    cache.save(messages, None, found)
    return found


def all_indices(
    cache: PrefixCache[tuple[int, ...]], messages: Sequence[T], test: Callable[[T], bool]
) -> tuple[int, ...]:
    """The indices of every message passing ``test``, ascending: only new messages are tested.

    ``cache`` must serve this one ``test``. For tests few messages pass (user turns): the
    tuple is copied only when a new message passes.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> cache: PrefixCache[tuple[int, ...]] = PrefixCache()
        >>> record = [HumanMessage("a"), AIMessage("b")]
        >>> all_indices(cache, record, lambda m: m.type == "human")
        (0,)
        >>> all_indices(cache, [*record, HumanMessage("c")], lambda m: m.type == "human")
        (0, 2)
    """
    hit = cache.resume(messages)
    known, found = hit if hit is not None else (0, ())
    if known == len(messages):
        return found
    new = [i for i in range(known, len(messages)) if test(messages[i])]
    if new:
        found = (*found, *new)
    cache.save(messages, None, found)
    return found


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Recent(Generic[K, V]):
    """A small map that forgets its oldest entries, safe to share between threads.

    For the messages a turn generates again and again (the note, the re-attached files,
    the brief): the same object every turn keeps the per-message token cache hitting.

    Example:
        >>> recent: Recent[str, int] = Recent(2)
        >>> recent.put("a", 1); recent.put("b", 2); recent.put("c", 3)
        >>> recent.get("a") is None, recent.get("c")
        (True, 3)
    """

    __slots__ = ("__weakref__", "_entries", "_limit", "_lock")

    def __init__(self, limit: int = 256) -> None:
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self._limit = limit
        _ALL.add(self)  # type: ignore[arg-type]  # cleared, never read, through the set

    def get(self, key: K) -> V | None:
        """The value kept for ``key``, or ``None`` (a lookup is atomic: no lock taken)."""
        return self._entries.get(key)

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` for ``key`` (the oldest kept goes past the limit)."""
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._limit:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()


# ---------------------------------------------------------------- running token totals


def message_sizes(messages: Sequence[BaseMessage], counter: MessageCounter) -> list[int]:
    """Per-message token counts, in order (cached counts make this O(new messages))."""
    count = counter.count_message
    return [count(m) for m in messages]


class _PrefixEntry:
    __slots__ = ("counter", "refs", "sums")

    def __init__(self, counter: MessageCounter, refs: list[BaseMessage], sums: list[int]) -> None:
        self.counter = counter
        self.refs = refs
        self.sums = sums


_PREFIX_LIMIT = 16
"""Transcripts whose running totals are kept (strongly: the identity check needs the
message objects; a graph holds its live transcripts anyway, so 16 costs little)."""
_prefix_cache: OrderedDict[tuple[int, int], _PrefixEntry] = OrderedDict()
_prefix_lock = threading.Lock()


def prefix_sums(messages: Sequence[BaseMessage], counter: MessageCounter) -> list[int]:
    """Running token totals: ``sums[i]`` is the tokens of ``messages[:i]`` (length n + 1).

    A transcript that grew at the end since the last call (the same message objects in
    front, checked by identity at C speed) only has its new messages counted and summed,
    so a turn costs O(new messages) plus one identity pass. The result is a fresh list
    the caller may keep.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_builderforce_memory.tokens import ApproximateTokenCounter
        >>> prefix_sums([HumanMessage("x" * 40), HumanMessage("y" * 40)], ApproximateTokenCounter())
        [0, 15, 30]
    """
    if not messages:
        return [0]
    if getattr(counter, "cache", True) is False:
        # An uncached counter asks for a full recount every time (benchmarks, debugging).
        return [0, *accumulate(counter.count_message(m) for m in messages)]
    key = (id(counter), id(messages[0]))
    with _prefix_lock:
        entry = _prefix_cache.get(key)
        if entry is not None:
            _prefix_cache.move_to_end(key)
    sums: list[int]
    head = messages[: len(entry.refs)] if entry is not None else []
    if (
        entry is not None
        and entry.counter is counter
        and len(entry.refs) <= len(messages)
        # List equality: identity at C speed (the same objects), by value otherwise.
        and entry.refs == (head if isinstance(head, list) else list(head))
    ):
        known = len(entry.refs)
        if known == len(messages):
            return entry.sums.copy()
        sums = entry.sums.copy()
        refs = entry.refs.copy()
    else:
        known = 0
        sums = [0]
        refs = []
    count = counter.count_message
    total = sums[-1]
    for m in messages[known:]:
        total += count(m)
        sums.append(total)
        refs.append(m)
    with _prefix_lock:
        _prefix_cache[key] = _PrefixEntry(counter, refs, sums.copy())
        _prefix_cache.move_to_end(key)
        while len(_prefix_cache) > _PREFIX_LIMIT:
            _prefix_cache.popitem(last=False)
    return sums
