"""The facts of one conversation's record, kept by the caller and grown with the record.

Every turn a view policy asks the same questions of the whole record: the token total
before each message, where the latest directive is. Asked afresh, each is a pass over the
record, so a turn of a 50,000-message tool loop costs 50,000 messages. A
:class:`RecordFacts` keeps the answers for the record it last saw and, when the record
handed in starts with exactly those messages, extends them over the new ones only.

The object belongs to one conversation and lives where the caller keeps that
conversation's other state (beside the memo, in a per-thread map): nothing is kept in a
module-level cache, so serving many conversations in turn never evicts one's facts.

Correctness rests on one check, made once a turn: the messages seen must be the record's
first messages (list equality, settled by identity at C speed for the same objects). An
edited message (LangGraph's ``add_messages`` replaces it with a new object), a record cut
short (``RemoveMessage``) or another conversation's record fails it, and the facts are
rebuilt from that record. Messages are values, as LangChain treats them: a message whose
fields are assigned in place after it was seen is not noticed.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar, cast, overload

from langchain_core.messages import BaseMessage

from langchain_builderforce_memory.copies import Copies
from langchain_builderforce_memory.directive import is_directive, latest_directive_index
from langchain_builderforce_memory.messages import check_sound
from langchain_builderforce_memory.request_check import RequestCheck
from langchain_builderforce_memory.tokens import (
    TokenCounter,
    TokenCounterLike,
    resolve_token_counter,
)
from langchain_builderforce_memory.turns import opening_span, turn_step

__all__ = [
    "DIRECTIVES",
    "AllIndices",
    "Fact",
    "LastIndex",
    "Prefix",
    "RecordFacts",
    "bisect_index",
    "counter_of",
    "prefix_sums",
]

S = TypeVar("S")
T = TypeVar("T")
V = TypeVar("V")

logger = logging.getLogger(__name__)


class Fact(Protocol[S]):
    """One incremental fact of a record (its tool results, say), as a strategy.

    :meth:`RecordFacts.get` keeps a fact's state per record and hands ``grow`` only the
    messages new since it was last asked. A fact holds no state of its own: one instance
    serves every conversation.
    """

    def grow(
        self, state: S | None, record: Sequence[BaseMessage], start: int, counter: TokenCounter
    ) -> S:
        """The fact of ``record``, from ``state`` (the fact of ``record[:start]``).

        ``state`` is ``None`` (and ``start`` 0) on the first call. It belongs to the
        :class:`RecordFacts` asking: grow it in place, or return a new one.
        """
        ...


class Prefix(Sequence[T]):
    """The first ``n`` items of a list that only ever grows at the end: a fixed snapshot.

    A record's facts grow in place turn after turn; a plan keeps what it was made from
    by holding this view rather than a copy, so a turn costs no O(record) copy of them.
    Iterating and slicing run at C speed.
    """

    __slots__ = ("_items", "_n")

    def __init__(self, items: list[T], n: int | None = None) -> None:
        """The first ``n`` (default: all) of ``items``, which must only ever be appended to."""
        self._items = items
        self._n = len(items) if n is None else n

    def __len__(self) -> int:
        return self._n

    def base(self) -> tuple[list[T], int]:
        """The list this is a prefix of, and its length: equal bases extend each other."""
        return self._items, self._n

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._n)
            return self._items[start:stop:step]
        k = index + self._n if index < 0 else index
        if not 0 <= k < self._n:
            msg = f"index {index} out of range for {self._n} items"
            raise IndexError(msg)
        return self._items[k]

    def __iter__(self) -> Iterator[T]:
        return itertools.islice(self._items, self._n)

    def __reversed__(self) -> Iterator[T]:
        return reversed(self._items[: self._n])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Prefix, list, tuple)):
            return len(self) == len(other) and all(map(operator.eq, self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal by value, like a list

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._items[: self._n]!r})"


def bisect_index(seq: Sequence[int], x: int, lo: int = 0, hi: int | None = None) -> int:
    """``bisect.bisect_left(seq, x, lo, hi)``, at C speed over a :class:`Prefix` too.

    Example:
        >>> bisect_index(Prefix([1, 3, 5, 7], 3), 6), bisect_index([1, 3, 5], 3)
        (3, 1)
    """
    end = len(seq) if hi is None else min(hi, len(seq))
    if isinstance(seq, Prefix):
        items, n = seq.base()
        return bisect.bisect_left(items, x, lo, min(end, n))
    return bisect.bisect_left(seq, x, lo, end)


class RecordFacts:
    """Token sums and the latest directive of one record, grown by its new messages.

    Hand the same object to every call for one conversation (``windowed(...,
    facts=facts)``); a new conversation gets a new object. Not thread-safe by itself: one
    conversation's turns run one at a time.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> facts = RecordFacts()
        >>> record = [HumanMessage("x" * 40), AIMessage("y" * 40)]
        >>> facts.sync(record)
        >>> facts.sums, facts.directive
        ([0, 15, 30], 0)
        >>> facts.sync([*record, HumanMessage("again")])  # counts the new message only
        >>> facts.sums[-1], facts.directive, facts.rebuilds
        (37, 2, 0)
        >>> facts.sync([HumanMessage("another record")])  # not an extension: rebuilt
        >>> facts.directive, facts.rebuilds
        (0, 1)
    """

    __slots__ = (
        "_after_results",
        "_base",
        "_derived",
        "_directive",
        "_seen",
        "_turn_start",
        "check",
        "copies",
        "counter",
        "rebuilds",
        "sums",
    )

    def __init__(self, token_counter: TokenCounterLike = None) -> None:
        """Facts counted with ``token_counter`` (default: the approximate estimate)."""
        self.counter: TokenCounter = resolve_token_counter(token_counter)
        """What the token sums are counted with."""
        self.sums: list[int] = [0]
        """``sums[i]``: the tokens of the record's first ``i`` messages. Read, never change."""
        self.rebuilds = 0
        """Times a record that did not extend the one seen made the facts start over."""
        self.copies = Copies(limit=1_024)
        """The messages the conversation's views make (its note, restated directive,
        re-attached outputs, brief, edits' cut calls), the same objects turn after turn:
        room for every cleared edit a long view shows."""
        self.check = RequestCheck()
        """The conversation's last valid view: the next one is checked from where it
        changed."""
        self._seen: list[BaseMessage] = []
        self._directive = -1
        self._turn_start = -1
        self._after_results = False
        self._derived: dict[object, tuple[int, object]] = {}
        self._base: list[BaseMessage] | None = None  # the list a Prefix record was last over

    def sync(self, record: Sequence[BaseMessage]) -> None:
        """Make the facts those of ``record``: its new messages counted, or all after an edit."""
        if isinstance(record, Prefix) and self._grown_prefix(record):
            return
        self._base = record.base()[0] if isinstance(record, Prefix) else None
        known = len(self._seen)
        if (
            known == len(record)
            and (not known or record[-1] is self._seen[-1])
            and _equal(self._seen, record if isinstance(record, list) else list(record))
        ):
            return
        if known > len(record) or not self._extends(record):
            self._seen, self.sums, self._directive, self._turn_start = [], [0], -1, -1
            self._after_results = False
            self._derived = {}
            self.rebuilds += 1
            known = 0
            self._seen.extend(record)
        self._count(known)

    def _count(self, known: int) -> None:
        """Grow the sums and indices over the messages seen from ``known`` on."""
        count = self.counter.count_message
        seen, sums = self._seen, self.sums
        total = sums[-1]
        for i in range(known, len(seen)):
            message = seen[i]
            try:
                check_sound(message)
            except TypeError:
                del seen[i:]  # the facts stay those of the sound messages before it
                raise
            total += count(message)
            sums.append(total)
            if is_directive(message):
                self._directive = i
            opens, self._after_results = turn_step(message, self._after_results)
            if opens:
                self._turn_start = i

    def _grown_prefix(self, record: Prefix[BaseMessage]) -> bool:
        """Synced to ``record`` by its new messages alone, when it is over the same list.

        A :class:`Prefix` is over a list that only grows at the end: a record over the
        list the facts last saw, at least as long, starts with the messages seen. No
        comparison (and no copy of the record) is needed.
        """
        items, n = record.base()
        known = len(self._seen)
        if items is not self._base or n < known:
            return False
        self._seen.extend(items[known:n])
        self._count(known)
        return True

    def _extends(self, record: Sequence[BaseMessage]) -> bool:
        """Whether ``record`` starts with the messages seen; they are then all of it.

        The new messages are appended first and the whole lists compared: one C-speed
        comparison, without copying the record's front.

        A checkpointer hands each new run of a thread copies of the messages it stored:
        equal, not the same objects. The facts are facts of the messages' values, so they
        still hold, and the copies take the originals' places (the next turn compares by
        identity again): a new run's first turn counts its new messages, not the thread.
        """
        seen = self._seen
        known = len(seen)
        whole = record if isinstance(record, list) else list(record)
        if known and whole[known - 1] is not seen[-1]:
            front = whole[:known]
            if not _equal(front, seen, copies=True):
                return False
            self._seen = seen = front
        seen.extend(whole[known:])
        return _equal(seen, whole)

    @property
    def held_tokens(self) -> int:
        """The tokens of the record these facts hold.

        What a :class:`~langchain_builderforce_memory.per_thread.PerThread` weighs them by.
        """
        return self.sums[-1]

    @property
    def directive(self) -> int:
        """Index of the latest directive in the record, or -1 (no fallback)."""
        return self._directive

    @property
    def turn_start(self) -> int:
        """:func:`~langchain_builderforce_memory.turns.current_turn_start` of the record."""
        return self._turn_start if self._turn_start >= 0 else len(self._seen)

    @property
    def thinking(self) -> tuple[int, int] | None:
        """:func:`~langchain_builderforce_memory.turns.thinking_span` of the record."""
        return opening_span(self._seen, self.turn_start)

    def latest_directive_index(self, *, fallback: bool = True) -> int:
        """:func:`~langchain_builderforce_memory.directive.latest_directive_index` of the record."""
        if self._directive >= 0 or not fallback:
            return self._directive
        return latest_directive_index(self._seen, fallback=True)

    def __len__(self) -> int:
        """Messages of the record the facts are those of."""
        return len(self._seen)

    def get(self, fact: Fact[S]) -> S:
        """``fact`` of the record last synced, grown over the messages new since it was asked.

        Example:
            >>> from langchain_core.messages import HumanMessage
            >>> class Words:
            ...     def grow(self, state, record, start, counter):
            ...         new = record[start:]
            ...         return (state or 0) + sum(len(str(m.content).split()) for m in new)
            >>> words, facts = Words(), RecordFacts()
            >>> facts.sync([HumanMessage("two words")])
            >>> facts.get(words)
            2
            >>> facts.sync([HumanMessage("two words"), HumanMessage("and three more")])
            >>> facts.get(words)  # grown over the new message only
            5
        """
        known, state = self._derived.get(fact, (0, None))
        if known == len(self._seen) and state is not None:
            return cast("S", state)
        grown = fact.grow(cast("S | None", state), self._seen, known, self.counter)
        self._derived[fact] = (len(self._seen), grown)
        return grown


def _equal(these: list[BaseMessage], those: list[BaseMessage], *, copies: bool = False) -> bool:
    """Whether two lists hold equal messages; ``False`` when that cannot be told.

    Equality compares every field, a tool result's ``artifact`` too, and an artifact may be
    any object (an array's ``==`` answers element by element, and reading that as one
    answer raises): such a record is counted afresh rather than failing the turn.

    ``copies``: the lists are expected to hold equal copies, not the same messages (a
    checkpointer's): :func:`_same_fields` is tried first.
    """
    try:
        return (copies and _same_fields(these, those)) or these == those
    except Exception:  # noqa: BLE001  (a user object's __eq__: any failure means "not known")
        logger.debug("the record's messages could not be compared; its facts are rebuilt")
        return False


def _same_fields(these: list[BaseMessage], those: list[BaseMessage]) -> bool:
    """Whether each pair has one class and equal fields, extras and private attributes.

    When it does, pydantic's ``==`` says they are equal (these are what it compares first);
    compared list by list, without a method call a message, it costs 40-45% less
    on a checkpointer's copies of a thread. ``False`` only means "not shown this way"; a
    message without these attributes raises, and the record is counted afresh.
    """
    return (
        len(these) == len(those)
        and list(map(type, these)) == list(map(type, those))
        and [m.__dict__ for m in these] == [m.__dict__ for m in those]
        and [m.__pydantic_extra__ for m in these] == [m.__pydantic_extra__ for m in those]
        and [m.__pydantic_private__ for m in these] == [m.__pydantic_private__ for m in those]
    )


def prefix_sums(messages: Sequence[BaseMessage], counter: TokenCounter) -> list[int]:
    """Running token totals: ``sums[i]`` is the tokens of ``messages[:i]`` (length n + 1).

    Counted afresh (each message's count is cached by the counter). A caller asking turn
    after turn keeps a :class:`RecordFacts` instead: its :attr:`~RecordFacts.sums` grow
    by the new messages.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_builderforce_memory.tokens import ApproximateTokenCounter
        >>> prefix_sums([HumanMessage("x" * 40), HumanMessage("y" * 40)], ApproximateTokenCounter())
        [0, 15, 30]
    """
    return [0, *itertools.accumulate(map(counter.count_message, messages))]


def counter_of(
    token_counter: TokenCounterLike, facts: RecordFacts | None, *, where: str
) -> TokenCounter:
    """The counter a call counts with: ``facts``' own when given, else ``token_counter``.

    Raises:
        ValueError: both given, and they differ (the facts' sums would be another count's).
    """
    if facts is None:
        return resolve_token_counter(token_counter)
    if token_counter is not None and resolve_token_counter(token_counter) is not facts.counter:
        msg = (
            f"{where}: facts= counts with another counter than token_counter=; pass the "
            "counter the RecordFacts was made with, or leave token_counter out."
        )
        raise ValueError(msg)
    return facts.counter


class LastIndex:
    """A :class:`Fact`: the index of the record's last message that passes ``test`` (or -1).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> last_answer, facts = LastIndex(lambda m: m.type == "ai"), RecordFacts()
        >>> facts.sync([HumanMessage("q"), AIMessage("a"), HumanMessage("q2")])
        >>> facts.get(last_answer)
        1
    """

    __slots__ = ("test",)

    def __init__(self, test: Callable[[BaseMessage], bool]) -> None:
        """The fact of the last message passing ``test``."""
        self.test = test

    def grow(
        self, state: int | None, record: Sequence[BaseMessage], start: int, counter: TokenCounter
    ) -> int:
        """The last passing index: among the new messages, else the one found before."""
        test = self.test
        for i in range(len(record) - 1, start - 1, -1):
            if test(record[i]):
                return i
        return -1 if state is None else state


class AllIndices:
    """A :class:`Fact`: the indices of the record's messages that pass ``test``, in order.

    The list is grown in place and must not be changed by its readers.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> questions, facts = AllIndices(lambda m: m.type == "human"), RecordFacts()
        >>> facts.sync([HumanMessage("q"), AIMessage("a"), HumanMessage("q2")])
        >>> facts.get(questions)
        [0, 2]
    """

    __slots__ = ("test",)

    def __init__(self, test: Callable[[BaseMessage], bool]) -> None:
        """The fact of the messages passing ``test``."""
        self.test = test

    def grow(
        self,
        state: list[int] | None,
        record: Sequence[BaseMessage],
        start: int,
        counter: TokenCounter,
    ) -> list[int]:
        """The indices found before, then the new messages' that pass."""
        found = [] if state is None else state
        test = self.test
        found.extend(i for i in range(start, len(record)) if test(record[i]))
        return found


DIRECTIVES = AllIndices(is_directive)
"""Every directive's index in the record (a held note's restated turn is looked up here)."""
