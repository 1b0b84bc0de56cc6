"""Search over the record: what the model can no longer see, found again without a model.

The record is never shrunk: every message a fold, a clear or an elision took out of the
model's view is still in the graph state or the chat history's store. This module finds
them again by text, for two readers: the ``search_history`` tool the model calls
(:mod:`langchain_builderforce_memory.agents.tools`) and the hand-off packer's default
``recall`` step (:func:`recall_dropped`).

The index it searches (SQLite FTS5, built incrementally, one per thread) is
:class:`~langchain_builderforce_memory.search_index.RecordIndex`; this module runs the
searches and turns their hits into the answers the model reads. Nothing here calls a
model or the summarizer.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Final

from langchain_core.messages import BaseMessage

from langchain_builderforce_memory.messages import is_generated, message_id
from langchain_builderforce_memory.search_index import (
    RecordIndex,
    RecordIndexes,
    SearchHit,
    SearchResult,
    _cut,
)
from langchain_builderforce_memory.tokens import TokenCounterLike, resolve_token_counter

__all__ = [
    "DEFAULT_ANSWER_TOKENS",
    "DroppedRecall",
    "recall_dropped",
    "render_search",
    "search_outside_view",
    "search_record",
]

DEFAULT_ANSWER_TOKENS: Final = 4_000
"""The search answer's ceiling in tokens: a search must not refill the window it serves."""


def search_record(
    record: Sequence[BaseMessage],
    query: str,
    *,
    limit: int = 5,
    hidden_ids: Collection[str] = (),
    end: int | None = None,
    index: RecordIndex | None = None,
) -> SearchResult:
    """Search ``record`` (less ``hidden_ids``) for ``query``; see :class:`RecordIndex`.

    Pass the ``index`` kept for this record to search it again in O(new messages);
    without one a fresh index is built (and dropped).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> record = [HumanMessage("why does parse_header fail?"), AIMessage("E1042: bad magic")]
        >>> result = search_record(record, "E1042")
        >>> [(h.position, h.role, h.exact) for h in result.hits], result.total
        ([(1, 'assistant', True)], 1)
    """
    own = index is None
    used = RecordIndex() if index is None else index
    try:
        return used.search(record, query, limit=limit, hidden_ids=hidden_ids, end=end)
    finally:
        if own:
            used.close()


def search_outside_view(
    index: RecordIndex,
    record: Sequence[BaseMessage],
    view: Sequence[BaseMessage],
    query: str,
    *,
    limit: int = 5,
) -> SearchResult:
    """Search ``record`` for what ``view`` does not show verbatim (its unstamped messages).

    A view step that changes a message (a note, a placeholder, an elided copy) stamps
    what it sends, so only the record's own messages count as shown.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> record = [HumanMessage("old E42", id="a"), HumanMessage("new E42", id="b")]
        >>> found = search_outside_view(RecordIndex(), record, record[1:], "E42")
        >>> [h.message_id for h in found.hits]
        ['a']
    """
    shown = [message_id(m) for m in view if not is_generated(m)]
    return index.search(record, query, limit=limit, hidden_ids=shown)


def _hit_lines(hit: SearchHit, *, answer: bool = True) -> str:
    """A hit's heading and snippet.

    ``answer=False``: for the hand-off note, which the next model reads as memory, not as a
    search it ran: no record position, no match kind.
    """
    tool = f" {hit.tool_name}({hit.tool_args})" if hit.tool_name else ""
    if not answer:
        return f"{hit.role}{tool}:\n{hit.snippet}"
    match = "exact" if hit.exact else "words"
    return f"#{hit.position} {hit.role}{tool} [{match}]:\n{hit.snippet}"


def render_search(
    result: SearchResult,
    *,
    max_tokens: int = DEFAULT_ANSWER_TOKENS,
    token_counter: TokenCounterLike = None,
    view_known: bool = True,
) -> str:
    """The answer the model reads: a header, the hits that fit ``max_tokens``, the rest counted.

    ``view_known=False``: no view was recorded yet, so the whole record was searched.

    Example:
        >>> result = SearchResult("x", (SearchHit(3, "tool", "t1", "x = 1", True, "grep",
        ...                                       '{"q": "x"}'),), 4, 10, 12)
        >>> print(render_search(result))
        Found 4 messages matching 'x' among the 10 not in your current view (record: 12).
        #3 tool grep({"q": "x"}) [exact]:
        x = 1
        3 more matching messages not shown; narrow the query to see them.
    """
    counter = resolve_token_counter(token_counter)
    where = (
        f"among the {result.searched} not in your current view (record: {result.record_size})"
        if view_known
        else f"in the whole record ({result.record_size} messages)"
    )
    if not result.hits:
        return f"No messages matching {result.query!r} {where}."
    lines = [f"Found {result.total} messages matching {result.query!r} {where}."]
    used = counter.count_text(lines[0]) + 24  # room for the closing line
    shown = 0
    for hit in result.hits:
        block = _hit_lines(hit)
        cost = counter.count_text(block) + 1
        if used + cost > max_tokens:
            if shown:
                break
            # The best hit alone is over the cap: shown cut rather than not at all.
            block = _cut(block, max(40, (max_tokens - used) * 3))
            cost = counter.count_text(block) + 1
        lines.append(block)
        used += cost
        shown += 1
    more = result.total - shown
    if more > 0:
        lines.append(f"{more} more matching messages not shown; narrow the query to see them.")
    return "\n".join(lines)


def recall_dropped(
    dropped: Sequence[BaseMessage],
    query: str,
    budget_chars: int,
    *,
    limit: int = 5,
    index: RecordIndex | None = None,
) -> str:
    """The hand-off packer's default recall: dropped messages that match ``query``.

    ``query`` is the latest directive; the hits are rendered best first within
    ``budget_chars`` (the note's room). ``""`` when nothing matches or nothing fits.
    ``index``: the one kept for this dropped part (it grows at the end turn by turn).

    Example:
        >>> from langchain_core.messages import HumanMessage, ToolMessage
        >>> dropped = [HumanMessage("hi"), ToolMessage("parser.py: 120 def", tool_call_id="c")]
        >>> print(recall_dropped(dropped, "fix the parser in parser.py", 400))
        tool:
        parser.py: 120 def
    """
    if budget_chars <= 0 or not dropped:
        return ""
    result = search_record(dropped, query, limit=limit, index=index)
    blocks: list[str] = []
    left = budget_chars
    for hit in result.hits:
        block = _hit_lines(hit, answer=False)
        if len(block) + 2 > left:
            if not blocks and left > 80:
                blocks.append(block[: left - 1] + "…")
            break
        blocks.append(block)
        left -= len(block) + 2
    return "\n\n".join(blocks)


@dataclass(frozen=True, slots=True)
class DroppedRecall:
    """The hand-off packer's default ``recall``: :func:`recall_dropped` over its dropped part.

    Example:
        >>> from langchain_core.messages import ToolMessage
        >>> recall = DroppedRecall((ToolMessage("E42 in lexer.py", tool_call_id="c"),))
        >>> recall("fix E42", 200).splitlines()[1]
        'E42 in lexer.py'
    """

    dropped: tuple[BaseMessage, ...]
    """The messages the packer's note stands in for."""

    def __call__(self, query: str, budget_chars: int) -> str:
        """The dropped messages matching ``query``, best first, within ``budget_chars``."""
        if not self.dropped:
            return ""
        # Turn after turn the packer drops the same front of a growing run, and more of
        # it: the index kept for that front is extended, not rebuilt.
        index = _DROPPED_INDEXES.get(message_id(self.dropped[0]))
        return recall_dropped(self.dropped, query, budget_chars, index=index)


_DROPPED_INDEXES: Final = RecordIndexes(size=4)
"""The packer's recall indexes, by the first dropped message."""
