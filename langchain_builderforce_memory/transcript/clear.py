"""The clear tier: stale tool results become one-line placeholders in the view, in batches.

Between the window and the fold. A coding run's context is mostly tool output the model
has already read and acted on: a file read three edits ago, a grep whose hits it opened, a
test run re-run since. Summarizing all that costs a model call and rewrites the front of
the request (every provider prefix cache misses); dropping it loses the thread. Clearing
replaces each such result's CONTENT in the view with a stamped one-line placeholder that
names the tool and the size of its output and tells the model to make the same call again
to see it (the record keeps it, but the model cannot read the record). The call stays just
above, whole, paired with its (cleared) result by its id, so the request stays valid and
the placeholder need not repeat the call's arguments; the record is never touched.

What may be cleared, outside the protected recent tail (the newest results, which the
model has not acted on yet): every tool result except the latest read of each file the
run is working on (the working set: the most recently touched files first, as many as
``keep_tokens`` holds; :func:`in_use_files` says why recency alone). The
priority: superseded outputs (a re-read, a re-run), bulky search / list / shell outputs
and failed calls (:func:`priority_clearing`) go first, up to the protected tail, each
time the horizon moves; then the rest, oldest first, up to the horizon. An edit's output
("wrote a.py") is too short to clear, but the call that made it carries the file written
or the patch: clearing an edit cuts those long values in the call instead, its path kept
(:func:`~.results.cleared_call`).

Why a HORIZON: the clearing is a pure function of the record and one index, the horizon:
every clearable result before it is cleared, and the working set it spares is judged from
the record before it. So the view's prefix stays byte-identical while the horizon holds;
where it goes, and how it is held from turn to turn, is :mod:`.horizon`.
"""

from __future__ import annotations

import operator
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from langchain_core.messages import AIMessage, BaseMessage

from langchain_builderforce_memory.blocks import call_ids
from langchain_builderforce_memory.copies import Copies
from langchain_builderforce_memory.facts import bisect_index
from langchain_builderforce_memory.transcript.results import (
    ToolResult,
    ToolResults,
    cleared_call,
    shown_cleared,
)
from langchain_builderforce_memory.working.file_keys import FileKeys

__all__ = [
    "changed_after_read",
    "clearable",
    "clearing_with_priority",
    "in_use_files",
    "priority_clearing",
    "working_set",
]


@dataclass(frozen=True, slots=True)
class _FileStats:
    """What the in-use ranking needs of a run's results, kept to extend."""

    last: dict[str, int]
    """Each file's latest result index."""
    latest_read: dict[str, ToolResult]
    """Each file's latest read."""
    last_change: dict[str, int]
    """Each file's latest edit (create, edit, delete) index."""


_FILE_MARKS: Final = 8
"""Counts of results whose file stats a record keeps: each clear horizon tried asks for
the results before it, and the next nearest below is extended rather than started over."""


def _file_stats(results: Sequence[ToolResult], count: int | None = None) -> _FileStats:
    """The ranking's counts over the first ``count`` results (default: all of them).

    Kept with a record's :class:`~.results.ToolResults`, and extended from the nearest
    count kept below; any other sequence is counted whole.
    """
    n = len(results) if count is None else count
    derived = results.derived if isinstance(results, ToolResults) else None
    if derived is None:
        return _grown_stats(None, results[:n])
    held = derived.get(("files", n))
    if held is not None and isinstance(held[1], _FileStats):
        return held[1]
    marked = derived.get(("file marks",), (0, ()))[1]
    marks = marked if isinstance(marked, tuple) else ()
    base = max((m for m in marks if m <= n), default=0)
    below = derived.get(("files", base))
    so_far = below[1] if below is not None and isinstance(below[1], _FileStats) else None
    stats = _grown_stats(so_far, results[base if so_far else 0 : n])
    kept = (*[m for m in marks if m != n][1 - _FILE_MARKS :], n)
    for gone in set(marks) - set(kept):
        derived.pop(("files", gone), None)
    derived[("files", n)] = (0, stats)
    derived[("file marks",)] = (0, kept)
    return stats


def _grown_stats(so_far: _FileStats | None, results: Sequence[ToolResult]) -> _FileStats:
    """``so_far``'s counts (none: empty) extended over ``results``."""
    last = dict(so_far.last) if so_far else {}
    latest = dict(so_far.latest_read) if so_far else {}
    changed = dict(so_far.last_change) if so_far else {}
    for r in results:
        if r.target is None:
            continue
        last[r.target] = r.index
        if r.kind == "read":
            latest[r.target] = r
        elif r.kind == "edit":
            changed[r.target] = r.index
    return _FileStats(last, latest, changed)


def in_use_files(results: Sequence[ToolResult], *, count: int | None = None) -> list[str]:
    """Files the run is working on, the most recently touched (read or edited) first.

    Over the first ``count`` results (default: all). Recency alone, not the working
    memory's "edited before only read": an edit made long ago kept its file spared turn
    after turn while the files read since were cleared, and what a run reads next is
    mostly what it touched last (``docs/benchmarks.md``: the clear tier's ranking).
    """
    last = _file_stats(results, count).last
    return sorted(last, key=lambda p: -last[p])


def changed_after_read(
    results: Sequence[ToolResult], reads: Iterable[ToolResult], *, count: int | None = None
) -> set[int]:
    """The indices of ``reads`` whose file a later result changed, among the first ``count``.

    A re-attached read of such a file shows it as it was, not as it is. Counted over the
    results a note covers (``count``), the answer holds while the note does: a change
    made after it is in the view itself.

    Example:
        >>> read = ToolResult(1, "read_file", '{"path": "a.py"}', 9, "read", "a.py")
        >>> edit = ToolResult(3, "edit_file", '{"path": "a.py"}', 9, "edit", "a.py")
        >>> changed_after_read([read, edit], [read]), changed_after_read([read], [read])
        ({1}, set())
    """
    stats = _file_stats(results, count)
    # One file under two names (relative and absolute) is one file: keyed over the
    # distinct names, once per note (the caller keeps the answer).
    keys = FileKeys()
    for path in stats.last:
        keys.add(path)
    changed: dict[str, int] = {}
    for path, index in stats.last_change.items():
        changed[keys.key(path)] = max(index, changed.get(keys.key(path), -1))
    return {
        r.index
        for r in reads
        if r.target is not None and changed.get(keys.key(r.target), -1) > r.index
    }


def working_set(
    results: Sequence[ToolResult], keep_tokens: int, *, since: int = 0, count: int | None = None
) -> list[ToolResult]:
    """The latest read of each in-use file, in rank order, as many as ``keep_tokens`` holds.

    A read too big for what is left is skipped and the next file tried, so one huge file
    does not crowd out the rest. ``since``: reads before this index are not in the view (a
    note covers them) and take no room; the files are still ranked over every result.
    ``count``: over the first ``count`` results only (default: all of them).
    """
    latest = _file_stats(results, count).latest_read
    chosen: list[ToolResult] = []
    room = keep_tokens
    for path in in_use_files(results, count=count):
        read = latest.get(path)
        if read is not None and read.index >= since and read.size <= room:
            chosen.append(read)
            room -= read.size
    return chosen


def result_order(results: Sequence[ToolResult]) -> tuple[Sequence[int], bool]:
    """Every result's index, and whether they ascend (``tool_results`` gives them so).

    Read off a record's :class:`~.results.ToolResults`; worked out for any other sequence.
    """
    if isinstance(results, ToolResults):
        return results.order
    indices = [r.index for r in results]
    return indices, all(map(operator.lt, indices, indices[1:]))


_Order = tuple[Sequence[int], bool]
"""Every result's index, and whether they ascend (see :func:`result_order`)."""


def results_before(
    results: Sequence[ToolResult], index: int, order: _Order | None = None
) -> list[ToolResult]:
    """The results at conversation indices below ``index``, in order.

    A bisection when the indices ascend (as :func:`tool_results` gives them). ``order``:
    ``result_order(results)``, when the caller already has it.
    """
    count = count_before(results, index, order)
    if count is not None:
        return list(results[:count])
    return [r for r in results if r.index < index]


def count_before(
    results: Sequence[ToolResult], index: int, order: _Order | None = None
) -> int | None:
    """How many results come before conversation ``index``; ``None`` when out of order."""
    indices, ordered = order if order is not None else result_order(results)
    return bisect_index(indices, index) if ordered else None


def memo_over(results: Sequence[ToolResult], count: int | None, key: Hashable) -> object:
    """What :func:`remember_over` kept for ``key`` over the first ``count`` results, or ``None``.

    For answers that depend only on the results before some index (the first ``count``,
    from :func:`count_before`): as the record grows they stay the same, so the answer is
    kept with the record's :class:`~.results.ToolResults` and holds until an edit makes
    new ones; the results need not be copied to ask. Other sequences keep nothing.
    """
    store = _memo_store(results, count)
    held = store.get(("memo", key, count)) if store is not None else None
    return held[1] if held is not None else None


def remember_over(
    results: Sequence[ToolResult], count: int | None, key: Hashable, value: object
) -> None:
    """Keep ``value`` as the answer for ``key`` over the first ``count`` results."""
    store = _memo_store(results, count)
    if store is not None:
        store[("memo", key, count)] = (0, value)


def _memo_store(
    results: Sequence[ToolResult], count: int | None
) -> dict[Hashable, tuple[int, object]] | None:
    """The record's own store, when the first ``count`` results are what is asked about."""
    if isinstance(results, ToolResults) and count is not None and count <= len(results):
        return results.derived
    return None


def clearing(
    results: Sequence[ToolResult],
    start: int,
    horizon: int,
    keep_tokens: int,
    order: _Order | None = None,
) -> tuple[tuple[ToolResult, ...], int]:
    """:func:`clearable`'s results and their saving (kept per horizon)."""
    order = order if order is not None else result_order(results)
    count = count_before(results, horizon, order)
    key = ("clearable", start, horizon, keep_tokens)
    hit = memo_over(results, count, key)
    if isinstance(hit, tuple):
        return hit
    before = results_before(results, horizon, order)
    # Reads a note covers are not in the view: sparing them would spare nothing.
    if count is not None:  # the first ``count`` results: ranked with the record's counts kept
        spared = working_set(results, keep_tokens, since=start, count=count)
    else:
        spared = working_set(before, keep_tokens, since=start)
    kept = {r.index for r in spared}
    cleared = tuple(
        r
        for r in before[_first_from(order, start, len(before)) :]
        if r.index >= start and r.index not in kept and _worth_clearing(r)
    )
    value = (cleared, _saving(cleared))
    remember_over(results, count, key, value)
    return value


def _first_from(order: _Order, start: int, end: int) -> int:
    """Where the results from conversation ``start`` on begin among the first ``end``.

    Only those can be cleared: bisect to them rather than walk every result a note
    covers (most of a long run's).
    """
    indices, ordered = order
    return bisect_index(indices, start, 0, end) if ordered else 0


_PRIORITY_KINDS: Final = frozenset({"search", "failed"})
"""Kinds cleared ahead of the horizon at a move: bulky search / list / shell outputs and
failed calls (with superseded outputs, the issue's clear priorities 1-3)."""


def priority_clearing(
    results: Sequence[ToolResult], start: int, end: int, order: _Order | None = None
) -> tuple[ToolResult, ...]:
    """The results in ``[start, end)`` the clear tier clears first, in order.

    Outputs superseded by a later call of the same tool with the same arguments before
    ``end`` (a re-read, a re-run test), bulky search / list / shell outputs, and failed
    calls. Judged from the record before ``end`` only, so the set never changes as the
    record grows after it (kept, and checked against the results before ``end``).

    Example:
        >>> rs = [ToolResult(1, "read_file", '{"path": "a.py"}', 900, "read", "a.py"),
        ...       ToolResult(3, "grep", '{"q": "x"}', 700, "search", None),
        ...       ToolResult(5, "read_file", '{"path": "a.py"}', 900, "read", "a.py")]
        >>> [r.index for r in priority_clearing(rs, 0, 6)]  # a.py read again at 5
        [1, 3]
        >>> [r.index for r in priority_clearing(rs, 0, 5)]  # judged before 5: not yet
        [3]
    """
    order = order if order is not None else result_order(results)
    count = count_before(results, end, order)
    key = ("priority", start)
    hit = memo_over(results, count, key)
    if isinstance(hit, tuple):
        return hit
    before = results_before(results, end, order)
    seen: set[tuple[str, str]] = set()
    chosen: list[ToolResult] = []
    for r in reversed(before[_first_from(order, start, len(before)) :]):
        if r.index < start:
            continue
        call = (r.name, r.args)
        if (r.kind in _PRIORITY_KINDS or call in seen) and _worth_clearing(r):
            chosen.append(r)
        seen.add(call)
    value = tuple(sorted(chosen, key=_INDEX))
    remember_over(results, count, key, value)
    return value


_INDEX: Final = operator.attrgetter("index")


def clearing_with_priority(
    results: Sequence[ToolResult],
    start: int,
    horizon: int,
    priority_end: int,
    keep_tokens: int,
    order: _Order | None = None,
) -> tuple[tuple[ToolResult, ...], int]:
    """:func:`clearing` up to ``horizon`` plus :func:`priority_clearing` up to an end.

    With their saving; ``priority_end <= start``: the horizon's alone.
    """
    base = clearing(results, start, horizon, keep_tokens, order)
    if priority_end <= start:
        return base
    extra = priority_clearing(results, start, priority_end, order)
    if not extra:
        return base
    have = {r.index for r in base[0]}
    more = [r for r in extra if r.index not in have]
    if not more:
        return base
    return tuple(sorted((*base[0], *more), key=_INDEX)), base[1] + _saving(more)


def clearable(
    results: Sequence[ToolResult], *, start: int, horizon: int, keep_tokens: int
) -> list[ToolResult]:
    """The results a horizon clears.

    Those in ``[start, horizon)`` outside the working set (its reads from ``start`` on)
    judged from the record before the horizon (so the choice never changes as the record
    grows after it, and is worked out once a horizon: kept, and checked against the
    results before the horizon).
    """
    return list(clearing(results, start, horizon, keep_tokens)[0])


def _worth_clearing(result: ToolResult) -> bool:
    """Whether clearing shrinks the view (by the output, or an edit's call values)."""
    # Plain fields (no property call): this runs over every result before a horizon.
    return result.size > result.placeholder_size or result.call_saving > 0


def _saving(cleared: Sequence[ToolResult]) -> int:
    """Tokens clearing ``cleared`` takes off the view: outputs, and edits' call values."""
    return sum(max(0, r.size - r.placeholder_size) + r.call_saving for r in cleared)


def apply_clear(
    convo: Sequence[BaseMessage], cleared: Sequence[ToolResult], copies: Copies | None = None
) -> tuple[list[BaseMessage], int]:
    """``convo`` with ``cleared`` results replaced by placeholders, and the tokens cleared.

    An edit's call also has its long argument values cut (:func:`~.results.cleared_call`;
    ``copies``: the conversation's, where the cut copies are kept).
    """
    out = list(convo)
    tokens = 0
    calls: dict[int, list[ToolResult]] = {}
    for r in cleared:
        shown = shown_cleared(out[r.index], r)
        if shown is None:
            continue
        if r.shown_as_placeholder:
            out[r.index] = shown
            tokens += r.size
        if r.call_saving and (at := _call_index(out, r)) is not None:
            calls.setdefault(at, []).append(r)
    for at, answered in calls.items():
        call = out[at]
        if isinstance(call, AIMessage):
            out[at] = cleared_call(call, answered, copies)
            tokens += sum(r.call_saving for r in answered)
    return out, tokens


def _call_index(convo: Sequence[BaseMessage], result: ToolResult) -> int | None:
    """The index of the assistant message that made the call ``result`` answers."""
    for i in range(result.index - 1, -1, -1):
        m = convo[i]
        if isinstance(m, AIMessage):
            return i if any(key == result.call_id for key, _ in call_ids(m)) else None
    return None
