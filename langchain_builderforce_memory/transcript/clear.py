"""The clear tier: stale tool results become one-line placeholders in the view, in batches.

Between the window and the fold. A coding run's context is mostly tool output the model
has already read and acted on: a file read three edits ago, a grep whose hits it opened, a
test run re-run since. Summarizing all that costs a model call and rewrites the front of
the request (every provider prefix cache misses); dropping it loses the thread. Clearing
replaces each such result's CONTENT in the view with a stamped one-line placeholder that
names the tool and its arguments and says the full output is still in the record. The
call and its (cleared) result stay paired, so the request stays valid, and the record is
never touched.

What may be cleared, outside the protected recent tail (the newest results, which the
model has not acted on yet): every tool result except the latest read of each file the
run is working on (the working set, ranked as the working memory ranks files: edited
before only read, then recency, then frequency; as many as ``keep_tokens`` holds). That
makes the priority the issue asks for: superseded outputs (a re-read, a re-run: only the
latest is ever kept), bulky search / list / shell outputs, failed calls, then the rest,
oldest first.

Why a HORIZON, moved in batches and then HELD: the clearing is a pure function of the
record and one index, the horizon: every clearable result before it is cleared, and the
working set it spares is judged from the record before it. So the view's prefix stays
byte-identical while the horizon holds. It is carried across turns beside the memo
(:class:`ClearHorizon`, in :func:`~langchain_builderforce_memory.transcript.backoff.
memo_state`) and held while the view fits; when the view no longer fits, it moves once, far
enough that the view lands at least ``clear_at_least`` below the budget (else as far as the
protected tail allows), so each front move (a provider prefix-cache miss) buys several turns
of pure appends. Moving it the least that fits, as before, moved the front by one result
about every second turn (``benchmarks/contenders.py``: 129 of 146 front moves).
"""

from __future__ import annotations

import bisect
import functools
import json
import operator
import re
import weakref
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_builderforce_memory.incremental import PrefixCache, Recent
from langchain_builderforce_memory.messages import message_id, stamp
from langchain_builderforce_memory.tokens import TokenCounter
from langchain_builderforce_memory.working.mapper import ToolObservationMapper

__all__ = [
    "CLEARED_KIND",
    "CLEAR_HORIZON_KEY",
    "ClearHorizon",
    "ResultKind",
    "ToolResult",
    "choose_horizon",
    "clear_cut_points",
    "clearable",
    "cleared_result",
    "held_horizon",
    "in_use_files",
    "parse_horizon",
    "tool_results",
    "working_set",
]

CLEARED_KIND: Final = "cleared"
"""The stamp ``kind`` of a tool result cleared in the view."""

CLEAR_HORIZON_KEY: Final = "clear_horizon"
"""The memo-state key that holds the :class:`ClearHorizon` (beside the memo's own keys, or
alone when no note is held yet), so a checkpointed thread keeps its horizon."""

ResultKind = Literal["read", "edit", "search", "failed", "other"]
"""What a tool result is, for the clear tier and the restore step."""

_MAPPER: Final = ToolObservationMapper()

_BULKY_NAMES: Final = re.compile(
    r"(search|grep|find|glob|list|ls\b|dir|shell|bash|terminal|exec|run|command|cmd)", re.I
)
"""Tool names whose output is a listing or a log: cleared as search output."""

_ARGS_CHARS: Final = 160
"""How much of a call's arguments a placeholder shows."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One tool result of a conversation, as the clear tier sees it."""

    index: int
    """Its index in the conversation."""
    name: str
    """The tool's name (from the call it answers)."""
    args: str
    """The call's arguments, as compact JSON."""
    size: int
    """Its tokens in the view."""
    kind: ResultKind
    """A read, an edit, a search / list / shell output, a failed call, or other."""
    target: str | None
    """The file it read or changed (``None`` for the rest)."""
    message_id: str = ""
    """:func:`~langchain_builderforce_memory.messages.message_id` of the result."""


@dataclass(frozen=True, slots=True)
class ClearHorizon:
    """The clear tier's horizon, carried to the next turn (plain data, JSON-safe).

    Example:
        >>> h = ClearHorizon(end=12, last_id="t5")
        >>> ClearHorizon.from_dict(h.to_dict()) == h
        True
    """

    end: int
    """Every clearable result before this conversation index is cleared."""
    last_id: str
    """:func:`~langchain_builderforce_memory.messages.message_id` of the result just before
    it: the horizon is found again by it after edits, and dropped when it is gone."""

    def to_dict(self) -> dict[str, object]:
        """The horizon as a JSON-serialisable dict."""
        return {"end": self.end, "last_id": self.last_id}

    @classmethod
    def from_dict(cls, data: object) -> ClearHorizon | None:
        """Parse :meth:`to_dict`'s output; ``None`` for anything else (never raises)."""
        if not isinstance(data, Mapping):
            return None
        end, last_id = data.get("end"), data.get("last_id")
        if (
            isinstance(end, int)
            and not isinstance(end, bool)
            and end > 0
            and isinstance(last_id, str)
        ):
            return cls(end=end, last_id=last_id)
        return None


def parse_horizon(raw: object) -> ClearHorizon | None:
    """The horizon a memo state holds (``raw`` is the state's memo value), or ``None``.

    Example:
        >>> parse_horizon({"clear_horizon": {"end": 9, "last_id": "t3"}})
        ClearHorizon(end=9, last_id='t3')
    """
    if isinstance(raw, ClearHorizon):
        return raw
    if isinstance(raw, Mapping):
        return ClearHorizon.from_dict(raw.get(CLEAR_HORIZON_KEY))
    return None


def _calls_by_id(convo: Sequence[BaseMessage]) -> dict[str, tuple[str, Mapping[str, object]]]:
    calls: dict[str, tuple[str, Mapping[str, object]]] = {}
    for m in convo:
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                calls[str(call.get("id"))] = (call["name"], call["args"])
    return calls


def _classify(
    name: str, args: Mapping[str, object], message: ToolMessage
) -> tuple[ResultKind, str | None]:
    if message.status == "error" or _MAPPER.failed(message):
        return "failed", None
    found = _MAPPER.map(name, args)
    for o in found:
        if o.kind == "read":
            return "read", o.target
    for o in found:
        if o.kind in {"edited", "created", "deleted"}:
            return "edit", o.target
    if any(o.kind == "searched" for o in found) or _BULKY_NAMES.search(name):
        return "search", None
    return "other", None


class _PerMessage:
    """Values derived from one message, cached while the message lives.

    A turn looks at every tool result of the run again; classifying a result, hashing its
    id and building its placeholder are pure functions of the message, so they are worked
    out once. Keyed by ``id(message)`` with a weak reference (a freed message leaves the
    cache) and the identity of its content (an edited message is worked out again).
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[BaseMessage], int, object]] = {}

    def _evict(self, key: int, _dead: object) -> None:
        self._entries.pop(key, None)

    def get(self, message: BaseMessage) -> object | None:
        hit = self._entries.get(id(message))
        if hit is not None and hit[0]() is message and hit[1] == id(message.content):
            return hit[2]
        return None

    def put(self, message: BaseMessage, value: object) -> None:
        if len(self._entries) > 200_000:
            self._entries.clear()
        key = id(message)
        try:
            ref = weakref.ref(message, functools.partial(self._evict, key))
        except TypeError:
            return
        self._entries[key] = (ref, id(message.content), value)


_INFO: Final = _PerMessage()
_PLACEHOLDERS: Final = _PerMessage()


def _info(
    message: ToolMessage, call: tuple[str, Mapping[str, object]] | None
) -> tuple[str, str, ResultKind, str | None, str]:
    """(name, args JSON, kind, target, message id) of a tool result, cached."""
    hit = _INFO.get(message)
    if isinstance(hit, tuple) and hit[0] == (call[0] if call else message.name or "tool"):
        return hit
    name, args = call if call is not None else (message.name or "tool", {})
    kind, target = _classify(name, args, message)
    text = json.dumps(args, ensure_ascii=False, default=str, sort_keys=True)
    value = (name, text, kind, target, message_id(message))
    _INFO.put(message, value)
    return value


@dataclass(frozen=True, slots=True)
class _ResultsSoFar:
    """:func:`tool_results` of a record, kept to extend when the record grows."""

    calls: dict[str, tuple[str, Mapping[str, object]]]
    answered: frozenset[str]
    results: tuple[ToolResult, ...]


_RESULTS: Final[PrefixCache[_ResultsSoFar]] = PrefixCache()


def tool_results(convo: Sequence[BaseMessage], counter: TokenCounter) -> list[ToolResult]:
    """Every tool result in ``convo`` with its call, size and kind, in order.

    O(new messages) over a record that grew at the end since the last call (see
    :mod:`~langchain_builderforce_memory.incremental`).

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_builderforce_memory.tokens import ApproximateTokenCounter
        >>> call = AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "a.py"},
        ...                                   "id": "c1"}])
        >>> [(r.kind, r.target) for r in tool_results(
        ...     [HumanMessage("go"), call, ToolMessage("code", tool_call_id="c1")],
        ...     ApproximateTokenCounter())]
        [('read', 'a.py')]
    """
    hit = _RESULTS.resume(convo, counter)
    known, calls, answered, out = 0, {}, frozenset[str](), list[ToolResult]()
    if hit is not None:
        known, so_far = hit
        if known == len(convo):
            return list(so_far.results)
        new_calls = _calls_by_id(convo[known:])
        # A call id re-used after a result already answered it changes that result's
        # call (the last call of an id wins): start over.
        if so_far.answered.isdisjoint(new_calls):
            calls = {**so_far.calls, **new_calls}
            answered, out = so_far.answered, list(so_far.results)
        else:
            known = 0
    if known == 0:
        calls = _calls_by_id(convo)
    new_answered: list[str] = []
    for i in range(known, len(convo)):
        m = convo[i]
        if not isinstance(m, ToolMessage):
            continue
        name, text, kind, target, mid = _info(m, calls.get(m.tool_call_id))
        out.append(ToolResult(i, name, text, counter.count_message(m), kind, target, mid))
        new_answered.append(m.tool_call_id)
    _RESULTS.save(convo, counter, _ResultsSoFar(calls, answered.union(new_answered), tuple(out)))
    return out


@dataclass(frozen=True, slots=True)
class _FileStats:
    """What the working-memory ranking needs of a run's results, kept to extend."""

    last: dict[str, int]
    """Each file's latest result index."""
    count: dict[str, int]
    """How many results touched each file."""
    edited: frozenset[str]
    """Files an edit touched."""
    latest_read: dict[str, ToolResult]
    """Each file's latest read."""


_FILES: Final[PrefixCache[_FileStats]] = PrefixCache()


def _file_stats(results: Sequence[ToolResult]) -> _FileStats:
    """The ranking's counts over ``results``, extended over the results new since."""
    hit = _FILES.resume(results)
    if hit is not None and hit[0] == len(results):
        return hit[1]
    known, so_far = hit if hit is not None else (0, None)
    last = dict(so_far.last) if so_far else {}
    count = dict(so_far.count) if so_far else {}
    latest = dict(so_far.latest_read) if so_far else {}
    edited = set(so_far.edited) if so_far else set()
    for r in results[known:]:
        if r.target is None:
            continue
        last[r.target] = r.index
        count[r.target] = count.get(r.target, 0) + 1
        if r.kind == "edit":
            edited.add(r.target)
        elif r.kind == "read":
            latest[r.target] = r
    out = _FileStats(last, count, frozenset(edited), latest)
    _FILES.save(results, None, out)
    return out


def in_use_files(results: Sequence[ToolResult]) -> list[str]:
    """Files the run is working on, best first.

    Edited before only read, then the most recently touched, then the most often touched
    (the working memory's ranking). Counted over the results new since the last call.
    """
    stats = _file_stats(results)
    last, count, edited = stats.last, stats.count, stats.edited
    return sorted(last, key=lambda p: (p not in edited, -last[p], -count[p]))


def working_set(
    results: Sequence[ToolResult], keep_tokens: int, *, since: int = 0
) -> list[ToolResult]:
    """The latest read of each in-use file, in rank order, as many as ``keep_tokens`` holds.

    A read too big for what is left is skipped and the next file tried, so one huge file
    does not crowd out the rest. ``since``: reads before this index are not in the view (a
    note covers them) and take no room; the files are still ranked over every result.
    """
    latest = _file_stats(results).latest_read
    chosen: list[ToolResult] = []
    room = keep_tokens
    for path in in_use_files(results):
        read = latest.get(path)
        if read is not None and read.index >= since and read.size <= room:
            chosen.append(read)
            room -= read.size
    return chosen


@dataclass(frozen=True, slots=True)
class _CutsSoFar:
    chunk: int
    total: int
    next_cut: int
    points: tuple[int, ...]


_CUTS: Final[PrefixCache[_CutsSoFar]] = PrefixCache()


def _cuts(results: Sequence[ToolResult], chunk: int) -> _CutsSoFar:
    """The cut points of ``results``, extended over the new results."""
    hit = _CUTS.resume(results)
    known, so_far = hit if hit is not None and hit[1].chunk == chunk else (0, None)
    if so_far is not None and known == len(results):
        return so_far
    step = max(1, chunk)
    total, next_cut = (so_far.total, so_far.next_cut) if so_far else (0, step)
    points = list(so_far.points) if so_far else []
    for r in results[known:]:
        total += r.size
        if total >= next_cut:
            points.append(r.index + 1)
            next_cut = (total // step + 1) * step
    out = _CutsSoFar(chunk, total, next_cut, tuple(points))
    _CUTS.save(results, None, out)
    return out


def clear_cut_points(results: Sequence[ToolResult], chunk: int) -> list[int]:
    """The fixed horizons of the stateless rule (see :func:`choose_horizon`).

    Just after each result where the running total of tool output crosses a multiple of
    ``chunk``: fixed positions as the record grows (so only new results are summed).
    """
    return list(_cuts(results, chunk).points)


_ORDER: Final[PrefixCache[tuple[tuple[int, ...], bool]]] = PrefixCache()


def _indices(results: Sequence[ToolResult]) -> tuple[tuple[int, ...], bool]:
    """Every result's index, and whether they ascend (``tool_results`` gives them so)."""
    hit = _ORDER.resume(results)
    known, (indices, ordered) = hit if hit is not None else (0, ((), True))
    if known == len(results):
        return indices, ordered
    more = [r.index for r in results[known:]]
    seq = [*indices[-1:], *more]  # the last known index, then the new ones
    ordered = ordered and all(map(operator.lt, seq, seq[1:]))
    out = ((*indices, *more), ordered)
    _ORDER.save(results, None, out)
    return out


_Order = tuple[tuple[int, ...], bool]
"""Every result's index, and whether they ascend (see :func:`_indices`)."""


def results_before(
    results: Sequence[ToolResult], index: int, order: _Order | None = None
) -> list[ToolResult]:
    """The results at conversation indices below ``index``, in order.

    A bisection when the indices ascend (as :func:`tool_results` gives them). ``order``:
    ``_indices(results)``, when the caller already has it.
    """
    indices, ordered = order if order is not None else _indices(results)
    if ordered:
        return list(results[: bisect.bisect_left(indices, index)])
    return [r for r in results if r.index < index]


_MEMO_LIMIT: Final = 256
"""Answers kept by :func:`memo_over` (a turn asks a handful; they hold as the record grows)."""
_MEMO: Final[Recent[tuple[Hashable, int], tuple[list[ToolResult], object]]] = Recent(_MEMO_LIMIT)


def memo_over(before: list[ToolResult], key: Hashable) -> object | None:
    """What :func:`remember_over` kept for ``key`` and exactly these results, or ``None``.

    For answers that depend only on the results before some index: as the record grows,
    those stay the same objects, so the check is a list comparison at C speed.
    """
    hit = _MEMO.get((key, len(before)))
    if hit is None or hit[0] != before:
        return None
    if hit[0] and hit[0][-1] is not before[-1]:
        # Equal results, new objects (a record restored from a checkpoint): keep these,
        # so the next check is by identity again.
        _MEMO.put((key, len(before)), (before, hit[1]))
    return hit[1]


def remember_over(before: list[ToolResult], key: Hashable, value: object) -> None:
    """Keep ``value`` as the answer for ``key`` over exactly ``before``."""
    _MEMO.put((key, len(before)), (before, value))


def _clearing(
    results: Sequence[ToolResult],
    start: int,
    horizon: int,
    keep_tokens: int,
    order: _Order | None = None,
) -> tuple[tuple[ToolResult, ...], int]:
    """:func:`clearable`'s results and their saving (kept per horizon)."""
    before = results_before(results, horizon, order)
    key = ("clearable", start, horizon, keep_tokens)
    hit = memo_over(before, key)
    if isinstance(hit, tuple):
        return hit
    # Reads a note covers are not in the view: sparing them would spare nothing.
    kept = {r.index for r in working_set(before, keep_tokens, since=start)}
    cleared = tuple(r for r in before if r.index >= start and r.index not in kept)
    value = (cleared, _saving(cleared))
    remember_over(before, key, value)
    return value


def clearable(
    results: Sequence[ToolResult], *, start: int, horizon: int, keep_tokens: int
) -> list[ToolResult]:
    """The results a horizon clears.

    Those in ``[start, horizon)`` outside the working set (its reads from ``start`` on)
    judged from the record before the horizon (so the choice never changes as the record
    grows after it, and is worked out once a horizon: kept, and checked against the
    results before the horizon).
    """
    return list(_clearing(results, start, horizon, keep_tokens)[0])


def cleared_result(message: ToolMessage, result: ToolResult) -> ToolMessage:
    """The one-line stamped placeholder a cleared result shows in the view.

    Example:
        >>> r = ToolResult(3, "read_file", '{"path": "a.py"}', 2_000, "read", "a.py")
        >>> cleared_result(ToolMessage("...", tool_call_id="c1"), r).content[:46]
        '[cleared from this view: read_file({"path": "a'
    """
    hit = _PLACEHOLDERS.get(message)
    if isinstance(hit, ToolMessage):
        return hit
    args = result.args if len(result.args) <= _ARGS_CHARS else result.args[:_ARGS_CHARS] + "…"
    text = (
        f"[cleared from this view: {result.name}({args}) returned {result.size} tokens; "
        "the full output is still in the conversation record]"
    )
    copy = message.model_copy(update={"content": text})
    placeholder = stamp(
        copy, CLEARED_KIND, of=result.message_id or message_id(message), tokens=result.size
    )
    _PLACEHOLDERS.put(message, placeholder)
    return placeholder


_PLACEHOLDER_TOKENS: Final = 60
"""What a placeholder is reckoned to cost while choosing the horizon (its header, the
call's arguments up to :data:`_ARGS_CHARS`, framing); the view is counted exactly after."""


def _saving(cleared: Sequence[ToolResult]) -> int:
    return sum(max(0, r.size - _PLACEHOLDER_TOKENS) for r in cleared)


def _ends(results: Sequence[ToolResult], start: int, protect_from: int) -> list[int]:
    """The horizons to choose from: just after each result in ``[start, protect_from)``."""
    indices, ordered = _indices(results)
    if ordered:
        lo = bisect.bisect_left(indices, start)
        hi = bisect.bisect_left(indices, protect_from)
        return [i + 1 for i in indices[lo:hi]]
    return sorted({r.index + 1 for r in results if start <= r.index < protect_from})


def _fixed_points(
    results: Sequence[ToolResult], start: int, protect_from: int, chunk: int
) -> Sequence[int]:
    """:func:`clear_cut_points` in ``(start, protect_from]``."""
    cuts = _cuts(results, chunk).points
    if _indices(results)[1]:  # ascending results, ascending cut points
        return cuts[bisect.bisect_right(cuts, start) : bisect.bisect_right(cuts, protect_from)]
    return tuple(p for p in cuts if start < p <= protect_from)


def choose_horizon(
    results: Sequence[ToolResult],
    *,
    start: int,
    protect_from: int,
    need: int,
    keep_tokens: int,
    land_below: int = 0,
    chunk: int | None = None,
) -> int | None:
    r"""Where to put the horizon when the view needs ``need`` tokens of room.

    With a horizon carried from turn to turn (``chunk=None``): the nearest one (just
    after a result before ``protect_from``, the protected recent tail) whose clearing saves
    ``need + land_below``, so the view lands ``land_below`` under the budget and the
    horizon can then hold for that much new work; when none saves that much, the furthest
    one, if it saves ``need``.

    With nothing carried (``chunk`` given: each turn chooses afresh, a pure function of the
    record): the nearest fixed cut point (:func:`clear_cut_points`, every ``chunk`` tokens
    of tool output) that saves ``need``, so the horizon still moves a batch at a time.

    ``None`` when nothing saves ``need`` (the fold must run); ``need <= 0`` needs no
    clearing: 0.

    Example:
        >>> from langchain_builderforce_memory.transcript.clear import ToolResult
        >>> rs = [ToolResult(i, "read_file", "{}", 1_000, "read", f"f{i}.py", f"t{i}")
        ...       for i in range(1, 20, 2)]
        >>> choose_horizon(rs, start=0, protect_from=19, need=1_500, keep_tokens=0), \
        ... choose_horizon(rs, start=0, protect_from=19, need=1_500, keep_tokens=0,
        ...                land_below=3_000)
        (4, 10)
    """
    if need <= 0:
        return 0
    points: Sequence[int]
    if chunk is None:
        points = _ends(results, start, protect_from)
        target = need + max(0, land_below)
    else:
        points = _fixed_points(results, start, protect_from, chunk)
        target = need
    if not points:
        return None
    order = _indices(results)  # once for every probe below
    lo, hi = 0, len(points)
    # Savings grow with the horizon (more results before it), so bisect for the first fit.
    while lo < hi:
        mid = (lo + hi) // 2
        if _clearing(results, start, points[mid], keep_tokens, order)[1] >= target:
            hi = mid
        else:
            lo = mid + 1
    if lo < len(points):
        return points[lo]
    # Near the end of a fold cycle the clearable output runs out: the horizon then creeps
    # to the furthest point that fits. Folding there instead (as soon as no move could
    # land a quarter of ``land_below`` under) cost more: 27 summarizer calls instead of 17
    # and 5.17M billed instead of 5.09M (benchmarks/contenders.py, standard workload).
    if target > need and _clearing(results, start, points[-1], keep_tokens, order)[1] >= need:
        return points[-1]
    return None


def held_horizon(
    results: Sequence[ToolResult],
    held: ClearHorizon | None,
    *,
    start: int,
    protect_from: int,
    need: int,
    keep_tokens: int,
) -> int | None:
    """``held``'s horizon, found again by id, if it still makes room for ``need``; else None.

    ``None`` too when it lies outside ``(start, protect_from]`` (a fold moved past it) or
    its result is gone from the record.
    """
    if held is None:
        return None
    end = held.end
    indices, ordered = _indices(results)
    k = bisect.bisect_left(indices, end - 1) if ordered else -1
    if not (0 <= k < len(results) and results[k].index == end - 1):
        k = next((j for j, r in enumerate(results) if r.index == end - 1), -1)
    if k < 0 or results[k].message_id != held.last_id:
        # Edits shifted it: look for its result by id (ids, never a content hash).
        k = next(
            (j for j in range(len(results) - 1, -1, -1) if results[j].message_id == held.last_id),
            -1,
        )
        if k < 0:
            return None
        end = results[k].index + 1
    if not start < end <= protect_from:
        return None
    if _clearing(results, start, end, keep_tokens)[1] < need:
        return None
    return end


def horizon_of(results: Sequence[ToolResult], horizon: int) -> ClearHorizon | None:
    """The :class:`ClearHorizon` to carry for ``horizon`` (``None`` for 0: nothing cleared)."""
    if horizon <= 0:
        return None
    indices, ordered = _indices(results)
    k = bisect.bisect_left(indices, horizon - 1) if ordered else -1
    if not (0 <= k < len(results) and results[k].index == horizon - 1):
        k = next((j for j, r in enumerate(results) if r.index == horizon - 1), -1)
    if k < 0 or not results[k].message_id:
        return None
    return ClearHorizon(end=horizon, last_id=results[k].message_id)


def apply_clear(
    convo: Sequence[BaseMessage], cleared: Sequence[ToolResult]
) -> tuple[list[BaseMessage], int]:
    """``convo`` with ``cleared`` results replaced by placeholders, and the tokens cleared."""
    out = list(convo)
    tokens = 0
    for r in cleared:
        m = out[r.index]
        if isinstance(m, ToolMessage):
            out[r.index] = cleared_result(m, r)
            tokens += r.size
    return out, tokens
