"""Messages a view makes from a record, kept so each is the same object turn after turn.

A view shows messages that are not in the record: the note as a human turn, the
directive restated, a re-attached file output, the brief. Each is made from record
messages or text that stay the same for many turns. Made anew every turn, each would be
counted anew by the token counter's per-message cache, and every comparison of this
turn's view with the last one's would fall back from identity to field by field.

A :class:`Copies` belongs to one conversation and is kept by its caller, with the
record's :class:`~langchain_builderforce_memory.facts.RecordFacts` (``facts.copies``), not
in a module-level table. Without one, a view makes its copies afresh: the same content,
new objects.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar, cast

from langchain_core.messages import BaseMessage

__all__ = ["Copies", "copy_of"]

M = TypeVar("M", bound=BaseMessage)


class Copies:
    """A conversation's generated messages, by what they were made from.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> copies, task = Copies(), HumanMessage("Fix the bug.")
        >>> make = lambda: HumanMessage(f"restated: {task.content}")
        >>> first = copies.get(("restated",), (task, task.content), make)
        >>> copies.get(("restated",), (task, task.content), make) is first
        True
        >>> other = HumanMessage("Fix the bug.")  # equal, but another message: made anew
        >>> copies.get(("restated",), (other, other.content), make) is first
        False
    """

    __slots__ = ("_held", "_limit", "_lock")

    def __init__(self, *, limit: int = 64) -> None:
        """Copies of up to ``limit`` keys (the least recently used go first)."""
        self._held: OrderedDict[Hashable, tuple[tuple[object, ...], BaseMessage]] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()  # two turns of one thread may overlap (a retry)

    def get(self, key: Hashable, sources: tuple[object, ...], make: Callable[[], M]) -> M:
        """The copy kept under ``key`` if it was made from these very ``sources``, else ``make()``.

        ``sources`` are compared by identity (a message edited in place gets a new
        ``content`` object); the entry holds them, so their ids cannot be reused.
        """
        with self._lock:
            held = self._held.get(key)
            if (
                held is not None
                and len(held[0]) == len(sources)
                and all(a is b for a, b in zip(held[0], sources, strict=True))
            ):
                self._held.move_to_end(key)
                return cast("M", held[1])
        made = make()
        with self._lock:
            self._held[key] = (sources, made)
            self._held.move_to_end(key)
            while len(self._held) > self._limit:
                self._held.popitem(last=False)
        return made

    def __len__(self) -> int:
        """Copies kept."""
        return len(self._held)


def copy_of(
    copies: Copies | None, key: Hashable, sources: tuple[object, ...], make: Callable[[], M]
) -> M:
    """``copies.get(key, sources, make)``, or ``make()`` when there is no :class:`Copies`.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> copy_of(None, "k", (), lambda: HumanMessage("new")).content
        'new'
    """
    return make() if copies is None else copies.get(key, sources, make)
