"""The clear tier's horizon: where it goes, and how it is held from turn to turn.

Everything before the horizon that the clear tier may clear is cleared (:mod:`.clear`
says what may be, and what the working set spares). Moving the horizon the least that
fits, every turn, moved the front of the request by one tool result about every second
turn (``benchmarks/contenders.py``: 129 of 146 front moves, each a provider prefix-cache
miss of everything after it). So the horizon is HELD: carried to the next turn beside the
memo (:class:`ClearHorizon`, under :data:`CLEAR_HORIZON_KEY` in the :class:`~langchain_
builderforce_memory.transcript.fold_state.FoldState`, found again by the id of the result
before it), kept while it still makes room, and moved only when the view no longer fits,
once, so the view lands ``clear_at_least`` under the budget (:func:`choose_horizon`). A
caller that carries nothing gets a pure function of the record instead: fixed cut points
every ``clear_at_least`` tokens of tool output, the nearest that fits.

A move (or a fold) is a cache miss from there on anyway, so it also clears the priority
results (superseded, search / list / shell, failed: :func:`~.clear.priority_clearing`)
up to the protected tail, and carries that end too (:attr:`ClearHorizon.priority_end`):
the view lands lower, so the next move is further away, and the set holds with the
horizon (results superseded later wait for the next move).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeGuard

from langchain_builderforce_memory.facts import bisect_index
from langchain_builderforce_memory.transcript.clear import clearing_with_priority, result_order
from langchain_builderforce_memory.transcript.results import ToolResult, ToolResults

__all__ = [
    "CLEAR_HORIZON_KEY",
    "ClearHorizon",
    "choose_horizon",
    "clear_cut_points",
    "held_horizon",
    "horizon_of",
]

CLEAR_HORIZON_KEY: Final = "clear_horizon"
"""The memo-state key that holds the :class:`ClearHorizon` (beside the memo's own keys, or
alone when no note is held yet), so a checkpointed thread keeps its horizon."""


@dataclass(frozen=True, slots=True)
class ClearHorizon:
    """The clear tier's horizon, carried to the next turn (plain data, JSON-safe).

    Example:
        >>> h = ClearHorizon(end=12, last_id="t5", priority_end=20, priority_last_id="t9")
        >>> ClearHorizon.from_dict(h.to_dict()) == h
        True
        >>> ClearHorizon.from_dict({"end": 12, "last_id": "t5"})  # carried before 0.x
        ClearHorizon(end=12, last_id='t5', priority_end=0, priority_last_id='')
    """

    end: int
    """Every clearable result before this conversation index is cleared."""
    last_id: str
    """:func:`~langchain_builderforce_memory.messages.message_id` of the result just before
    it: the horizon is found again by it after edits, and dropped when it is gone."""
    priority_end: int = 0
    """The protected tail's start when the horizon last moved: the superseded, search /
    list / shell and failed results before it (judged from the record before it) are
    cleared too (:func:`~.clear.priority_clearing`; 0: none)."""
    priority_last_id: str = ""
    """The id of the result just before :attr:`priority_end`, to find it again."""

    def to_dict(self) -> dict[str, object]:
        """The horizon as a JSON-serialisable dict."""
        out: dict[str, object] = {"end": self.end, "last_id": self.last_id}
        if self.priority_end > 0:
            out.update(priority_end=self.priority_end, priority_last_id=self.priority_last_id)
        return out

    @classmethod
    def from_dict(cls, data: object) -> ClearHorizon | None:
        """Parse :meth:`to_dict`'s output; ``None`` for anything else (never raises).

        A horizon carried without the priority fields (or with unreadable ones) parses
        with none (``priority_end=0``).
        """
        if not isinstance(data, Mapping):
            return None
        end, last_id = data.get("end"), data.get("last_id")
        if not (isinstance(end, int) and not isinstance(end, bool) and end >= 0):
            return None
        if not isinstance(last_id, str):
            return None
        p_end, p_id = data.get("priority_end"), data.get("priority_last_id")
        if _index(p_end) and isinstance(p_id, str) and p_end > end:
            return cls(end, last_id, p_end, p_id)
        return cls(end=end, last_id=last_id) if end > 0 else None


def _index(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


@dataclass(frozen=True, slots=True)
class _CutsSoFar:
    total: int
    next_cut: int
    points: tuple[int, ...]


def _cuts(results: Sequence[ToolResult], chunk: int) -> _CutsSoFar:
    """The cut points of ``results``, extended over the results new since they were asked.

    Kept with a record's :class:`~.clear.ToolResults` (a turn sums only its new results);
    any other sequence is summed whole.
    """
    key = ("cuts", chunk)
    held = results.grown(key) if isinstance(results, ToolResults) else None
    known, so_far = (held[0], held[1]) if held is not None else (0, None)
    if not isinstance(so_far, _CutsSoFar):
        known, so_far = 0, None
    elif known == len(results):
        return so_far
    step = max(1, chunk)
    total, next_cut = (so_far.total, so_far.next_cut) if so_far else (0, step)
    points = list(so_far.points) if so_far else []
    for r in results[known:]:
        total += r.size
        if total >= next_cut:
            points.append(r.index + 1)
            next_cut = (total // step + 1) * step
    out = _CutsSoFar(total, next_cut, tuple(points))
    if isinstance(results, ToolResults):
        results.derived[key] = (len(results), out)
    return out


def clear_cut_points(results: Sequence[ToolResult], chunk: int) -> list[int]:
    """The fixed horizons of the stateless rule (see :func:`choose_horizon`).

    Just after each result where the running total of tool output crosses a multiple of
    ``chunk``: fixed positions as the record grows (so only new results are summed).
    """
    return list(_cuts(results, chunk).points)


def _ends(results: Sequence[ToolResult], start: int, protect_from: int) -> list[int]:
    """The horizons to choose from: just after each result in ``[start, protect_from)``."""
    indices, ordered = result_order(results)
    if ordered:
        lo = bisect_index(indices, start)
        hi = bisect_index(indices, protect_from)
        return [i + 1 for i in indices[lo:hi]]
    return sorted({r.index + 1 for r in results if start <= r.index < protect_from})


def _fixed_points(
    results: Sequence[ToolResult], start: int, protect_from: int, chunk: int
) -> Sequence[int]:
    """:func:`clear_cut_points` in ``(start, protect_from]``."""
    cuts = _cuts(results, chunk).points
    if result_order(results)[1]:  # ascending results, ascending cut points
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
    priority_end: int = 0,
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

    ``priority_end``: the superseded, search / list / shell and failed results before it
    are cleared too (:func:`~.clear.priority_clearing`). They count towards ``need``, not
    towards ``land_below``: the view lands lower, so the next move is further away.

    ``None`` when nothing saves ``need`` (the fold must run); ``need <= 0`` needs no
    clearing: 0.

    Example:
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
        counted = 0  # the horizon moves as far as before; the priority lands it lower
    else:
        points = _fixed_points(results, start, protect_from, chunk)
        target = need
        counted = priority_end
    if not points:
        return None
    order = result_order(results)  # once for every probe below
    lo, hi = 0, len(points)
    # Savings grow with the horizon (more results before it), so bisect for the first fit.
    while lo < hi:
        mid = (lo + hi) // 2
        if _saves(results, start, points[mid], counted, keep_tokens, order) >= target:
            hi = mid
        else:
            lo = mid + 1
    if lo < len(points):
        return points[lo]
    # Near the end of a fold cycle the clearable output runs out: the horizon then creeps
    # to the furthest point that fits. Folding there instead (as soon as no move could
    # land a quarter of ``land_below`` under) cost more when measured: 27 summarizer calls
    # instead of 17, 5.17M billed instead of 5.09M (benchmarks/contenders.py, standard).
    if (
        target > need
        and _saves(results, start, points[-1], priority_end, keep_tokens, order) >= need
    ):
        return points[-1]
    return None


def _saves(
    results: Sequence[ToolResult],
    start: int,
    horizon: int,
    priority_end: int,
    keep_tokens: int,
    order: tuple[Sequence[int], bool] | None = None,
) -> int:
    return clearing_with_priority(results, start, horizon, priority_end, keep_tokens, order)[1]


def _position(results: Sequence[ToolResult], index: int) -> int:
    """Where the result at conversation ``index`` is in ``results`` (-1: none there)."""
    indices, ordered = result_order(results)
    k = bisect_index(indices, index) if ordered else -1
    if not (0 <= k < len(results) and results[k].index == index):
        k = next((j for j, r in enumerate(results) if r.index == index), -1)
    return k


def _locate(results: Sequence[ToolResult], end: int, last_id: str) -> int | None:
    """``end`` (just after the result ``last_id``), found again by id after edits."""
    k = _position(results, end - 1)
    if k < 0 or results[k].message_id != last_id:
        # Edits shifted it: look for its result by message_id (its own id, or for a
        # message without one the stable id derived from its content).
        k = next(
            (j for j in range(len(results) - 1, -1, -1) if results[j].message_id == last_id),
            -1,
        )
        if k < 0:
            return None
        end = results[k].index + 1
    return end


def held_horizon(
    results: Sequence[ToolResult],
    held: ClearHorizon | None,
    *,
    start: int,
    protect_from: int,
    need: int,
    keep_tokens: int,
) -> tuple[int, int] | None:
    """``held``'s horizon and priority end, found again by id, if they still make room.

    ``(end, priority_end)`` when clearing up to them still saves ``need``. ``None`` when
    it does not, when the horizon lies outside ``(start, protect_from]`` (a fold moved past
    it) or its result is gone from the record. A priority end that is gone (or past the
    protected tail) is dropped: 0.
    """
    if held is None:
        return None
    end = 0  # a horizon carried from a fold clears by priority only
    if held.end > 0:
        end = _locate(results, held.end, held.last_id) or 0
        if not start < end <= protect_from:
            return None
    priority_end = 0
    if held.priority_end > 0:
        priority_end = _locate(results, held.priority_end, held.priority_last_id) or 0
        if not max(start, end) < priority_end <= protect_from:
            priority_end = 0
    if end == 0 and (priority_end == 0 or need > 0):
        return None
    if need > 0 and _saves(results, start, end, priority_end, keep_tokens) < need:
        return None
    return end, priority_end


def priority_end_for(
    results: Sequence[ToolResult], *, start: int, protect_from: int, chunk: int | None
) -> int:
    """How far a move clears the superseded, search / list / shell and failed results.

    Carried (``chunk=None``): up to the protected tail, carried with the horizon. Nothing
    carried: up to the furthest fixed cut point (:func:`clear_cut_points`) before the
    protected tail, so it too is a pure function of the record that moves in batches.
    """
    if chunk is None:
        ends = _ends(results, start, protect_from)  # just after the last result before it
        return ends[-1] if ends else 0
    points = _fixed_points(results, start, protect_from, chunk)
    return points[-1] if points else 0


def horizon_of(
    results: Sequence[ToolResult], horizon: int, priority_end: int = 0
) -> ClearHorizon | None:
    """The :class:`ClearHorizon` to carry (``None`` when it clears nothing)."""
    last_id = _id_before(results, horizon) if horizon > 0 else ""
    priority_id = _id_before(results, priority_end) if priority_end > horizon else ""
    if priority_id and (last_id or horizon <= 0):
        return ClearHorizon(max(0, horizon), last_id, priority_end, priority_id)
    if last_id:
        return ClearHorizon(end=horizon, last_id=last_id)
    return None


def _id_before(results: Sequence[ToolResult], end: int) -> str:
    """The message id of the result at ``end - 1`` ("" when there is none)."""
    k = _position(results, end - 1)
    return results[k].message_id if k >= 0 else ""
