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

from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from langchain_builderforce_memory.directive import is_directive, latest_directive_index
from langchain_builderforce_memory.tokens import (
    TokenCounter,
    TokenCounterLike,
    resolve_token_counter,
)

__all__ = ["RecordFacts"]


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

    __slots__ = ("_directive", "_seen", "counter", "rebuilds", "sums")

    def __init__(self, token_counter: TokenCounterLike = None) -> None:
        """Facts counted with ``token_counter`` (default: the approximate estimate)."""
        self.counter: TokenCounter = resolve_token_counter(token_counter)
        """What the token sums are counted with."""
        self.sums: list[int] = [0]
        """``sums[i]``: the tokens of the record's first ``i`` messages. Read, never change."""
        self.rebuilds = 0
        """Times a record that did not extend the one seen made the facts start over."""
        self._seen: list[BaseMessage] = []
        self._directive = -1

    def sync(self, record: Sequence[BaseMessage]) -> None:
        """Make the facts those of ``record``: its new messages counted, or all after an edit."""
        known = len(self._seen)
        if (
            known == len(record)
            and (not known or record[-1] is self._seen[-1])
            and self._seen == (record if isinstance(record, list) else list(record))
        ):
            return
        if known > len(record) or not self._extends(record):
            self._seen, self.sums, self._directive = [], [0], -1
            self.rebuilds += 1
            known = 0
            self._seen.extend(record)
        count = self.counter.count_message
        sums = self.sums
        total = sums[-1]
        for i in range(known, len(record)):
            message = record[i]
            total += count(message)
            sums.append(total)
            if is_directive(message):
                self._directive = i

    def _extends(self, record: Sequence[BaseMessage]) -> bool:
        """Whether ``record`` starts with the messages seen; they are then all of it.

        The new messages are appended first and the whole lists compared: one C-speed
        comparison, without copying the record's front.
        """
        seen = self._seen
        known = len(seen)
        if known and record[known - 1] is not seen[-1]:
            return False
        seen.extend(record[known:])
        return seen == (record if isinstance(record, list) else list(record))

    @property
    def directive(self) -> int:
        """Index of the latest directive in the record, or -1 (no fallback)."""
        return self._directive

    def latest_directive_index(self, *, fallback: bool = True) -> int:
        """:func:`~langchain_builderforce_memory.directive.latest_directive_index` of the record."""
        if self._directive >= 0 or not fallback:
            return self._directive
        return latest_directive_index(self._seen, fallback=True)
