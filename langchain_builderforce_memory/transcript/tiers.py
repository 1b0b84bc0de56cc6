"""The tiers of one turn's plan, in order, each taking the turn or passing.

:func:`~.fold_plan.plan_working_transcript` runs them: the fold the agent asked for; the
whole record when it fits; the clear tier over the record; the held note's view, cleared;
and last, a fold (the held note plus exactly the messages since it, up to a token-sized
tail, the working set re-attached), else the held note or the window. Each tier reads the
:class:`Turn` (the record's facts, the fold state, the policy) and returns a
:class:`FoldPlan` or passes; what is still over the budget after them is elided by the
assembler (:func:`~.fold.finish_working_transcript`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Final, Literal, Protocol

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_builderforce_memory.copies import Copies
from langchain_builderforce_memory.facts import RecordFacts
from langchain_builderforce_memory.request_check import RequestCheck
from langchain_builderforce_memory.tokens import TokenCounter
from langchain_builderforce_memory.transcript.elide import elide_message
from langchain_builderforce_memory.transcript.fold_state import SummarizerBackoff
from langchain_builderforce_memory.transcript.horizon import ClearHorizon
from langchain_builderforce_memory.transcript.memo import TAIL_SHARE, CompactMemo, FoldPolicy
from langchain_builderforce_memory.transcript.plan import (
    Anchors,
    compact_tail_start_for_budget,
    memory_note,
    note_for_summary,
    note_reserve,
    restated_opening,
    verbatim_start,
)
from langchain_builderforce_memory.transcript.results import ToolResult, results_fact
from langchain_builderforce_memory.transcript.view import (
    ClearStep,
    clear_range,
    furthest_clear,
    restore_plan,
    restored_messages,
    summary_shown,
)
from langchain_builderforce_memory.turns import tail_restarts

__all__ = ["TIERS", "Asked", "FoldPlan", "Tier", "Turn", "fold_or_fallback"]

# Named as the fold's logger, as plan.py's is: the fold's log lines stay under the one
# logger name users already configure, whichever module of the fold writes them.
logger = logging.getLogger("langchain_builderforce_memory.transcript.fold")


@dataclass(frozen=True, slots=True)
class FoldPlan:
    """What :func:`~.fold_plan.plan_working_transcript` decided.

    :func:`~langchain_builderforce_memory.transcript.fold.finish_working_transcript` turns
    it (and the summary, when one was asked for) into the view.
    """

    mode: Literal["verbatim", "window", "memo", "fold"]
    """What to build; ``"fold"`` needs a summary of :attr:`fold_input`."""
    system: list[BaseMessage]
    """The view's system prefix."""
    convo: Sequence[BaseMessage]
    """The record without its leading system messages."""
    memo: CompactMemo | None
    """The memo held (validated, relocated after edits), or ``None``."""
    policy: FoldPolicy
    """The numbers the plan was made with."""
    counter: TokenCounter
    """The count it was made with."""
    fold_from: int = 0
    """First conversation index the fold compresses (the held note's ``covered_end``)."""
    fold_to: int = 0
    """Where the verbatim tail will begin: the new note's ``covered_end``."""
    fold_input: tuple[BaseMessage, ...] = ()
    """What the summarizer is given: the held note, then ``convo[fold_from:fold_to]``."""
    focus: str | None = None
    """For a fold the agent asked for (``compact_context``): what the note must keep."""
    backoff: SummarizerBackoff | None = None
    """The backoff held after a failed summarizer call (``None``: calls allowed)."""
    total_tokens: int = 0
    """The conversation's token total: where a backoff is measured from."""
    backed_off: bool = False
    """A fold was due but the summarizer is backed off (the view degrades within budget)."""

    results: Sequence[ToolResult] = ()
    """The conversation's tool results (empty when the record fits as it is)."""
    clear: ClearStep = field(default_factory=ClearStep)
    """What the clear tier clears in this view."""
    restore: tuple[ToolResult, ...] = ()
    """For a fold: the file outputs to re-attach after the new note."""
    held_horizon: ClearHorizon | None = None
    """The clear tier's horizon carried from the last turn (held while the view fits)."""
    anchors: Anchors | None = None
    """Where the conversation's latest directive and running thinking step are
    (``None``: looked up where needed)."""
    copies: Copies | None = None
    """The conversation's generated messages, kept with its facts (``None``: made anew)."""
    check: RequestCheck | None = None
    """The conversation's request check, kept with its facts (``None``: a whole walk)."""
    restate_earlier: bool = True
    """Whether a held note's view keeps restating the instruction its fold restated once
    a newer one has arrived (see :func:`~.plan.held_directive_index`); ``False`` when the
    message window has no room for it."""
    held_restored: Restored | None = None
    """The held note's re-attached results and their messages, as the plan measured them
    (``None``: the assembler finds them)."""


Restored = tuple[Sequence[ToolResult], Sequence[HumanMessage]]
"""Re-attached file outputs: their results and the messages that show them."""


@dataclass(frozen=True, slots=True)
class Asked:
    """What the caller asked of a turn besides a view within budget."""

    fold: bool
    """The agent asked for a fold (``compact_context``) and a summarizer can make it."""
    focus: str | None
    """What the asked-for note must keep."""
    can_summarize: bool
    """A summarizer is there to fold with."""
    keep_memo: bool
    """Keep serving the held note even when the record fits again."""


@dataclass(frozen=True)
class Turn:
    """What every tier of one turn reads, computed once.

    The costlier facts are computed on first use and kept for the tiers after (a
    ``cached_property``, so not slotted): a turn the first tiers decide never computes them.
    """

    plan: FoldPlan
    """The verbatim plan: system prefix, conversation, policy, counter, backoff, horizon."""
    sums: Sequence[int]
    """Running token totals of the conversation (``sums[i]``: its first ``i`` messages)."""
    anchors: Anchors
    """The conversation's latest directive and running thinking step."""
    system_tokens: int
    """The system prefix's tokens."""
    facts: RecordFacts
    """The conversation's facts, synced to it."""
    memo: CompactMemo | None
    """Last turn's memo, not yet checked against the conversation (see :attr:`held`)."""
    asked: Asked
    """What the caller asked of the turn."""

    @property
    def tokens(self) -> int:
        """The whole request: system prefix and conversation."""
        return self.system_tokens + self.sums[-1]

    @property
    def fits(self) -> bool:
        """The whole record fits the budget and the message cap as it is."""
        policy = self.plan.policy
        return len(self.plan.convo) <= policy.message_cap and self.tokens <= policy.max_tokens

    @cached_property
    def held(self) -> CompactMemo | None:
        """The memo, if it belongs to this conversation (relocated after edits)."""
        return self.memo.held_in(self.plan.convo) if self.memo is not None else None

    @cached_property
    def base(self) -> FoldPlan:
        """The plan the tiers past the verbatim one start from: with the tool results."""
        fact = results_fact(cut_inputs=self.plan.policy.clear_edit_inputs)
        return replace(self.plan, results=self.facts.get(fact).results)

    @cached_property
    def measured(self) -> _HeldView:
        """The held note's view, measured and cleared (see :func:`_held_view`)."""
        return _held_view(self)


class Tier(Protocol):
    """One tier: the plan it makes of the turn, or ``None`` to pass to the next."""

    __name__: str

    def __call__(self, turn: Turn, /) -> FoldPlan | None:
        """Plan the turn, or pass."""


def _asked_fold(turn: Turn) -> FoldPlan | None:
    """The fold the agent asked for, whatever the budget."""
    asked = turn.asked
    return _requested_fold(turn.plan, turn.held, asked.focus) if asked.fold else None


def _verbatim(turn: Turn) -> FoldPlan | None:
    """The whole record, when it fits (and no held note is to be kept regardless)."""
    if turn.fits and (not turn.asked.keep_memo or turn.held is None):
        return turn.plan
    return None


def _record_cleared(turn: Turn) -> FoldPlan | None:
    """The clear tier over the whole record (no note held), when it makes room."""
    plan = turn.base
    if turn.held is not None or len(plan.convo) > plan.policy.message_cap:
        return None
    step = _clear(plan, plan.results, 0, turn.tokens - plan.policy.max_tokens)
    return replace(plan, clear=step) if step is not None else None


def _held_cleared(turn: Turn) -> FoldPlan | None:
    """The held note's view, its tail cleared to fit."""
    measured = turn.measured
    if measured.clear is None:
        return None
    return replace(
        turn.base,
        mode="memo",
        memo=turn.held,
        clear=measured.clear,
        restate_earlier=measured.restate,
        held_restored=measured.restored,
    )


TIERS: Final[tuple[Tier, ...]] = (
    _asked_fold,
    _verbatim,
    _record_cleared,
    _held_cleared,
)
"""The tiers in order, each taking the turn or passing; the last word is
:func:`fold_or_fallback`'s (a fold, else the held note or the window). What is still over
the budget after them is elided by the assembler."""


@dataclass(frozen=True, slots=True)
class _HeldView:
    """The held note's view as measured: cleared to fit, or what a fold needs of it."""

    last_user: int = -1
    """The latest directive's index, or -1."""
    directive_tokens: int = 0
    """Its tokens, with the loop's opening thinking turn pinned to it."""
    note_tokens: int = 0
    """The held note's tokens (0: none held)."""
    counts_fit: bool = False
    """Its messages fit the message cap (only its tokens may be over)."""
    restate: bool = True
    """Whether it keeps restating an earlier instruction (see :attr:`FoldPlan.restate_earlier`)."""
    clear: ClearStep | None = None
    """The clear tier's step that brings it within budget, or ``None``."""
    restored: Restored | None = None
    """The held note's re-attached results and their messages (``None``: none held)."""


def _held_view(turn: Turn) -> _HeldView:
    """Measure the held note's view (note, re-attached files, directive, tail) and clear it."""
    plan, sums, held = turn.base, turn.sums, turn.held
    convo, policy, counter = plan.convo, plan.policy, plan.counter
    anchors = turn.anchors
    last_user = anchors.directive
    directive_tokens = sums[last_user + 1] - sums[last_user] if last_user >= 0 else 0
    span = anchors.thinking
    if span is not None:
        # With thinking on, the loop's opening turn is pinned with the directive (issue 13).
        directive_tokens += sums[span[1]] - sums[span[0]]
    if held is None:
        return _HeldView(last_user, directive_tokens)
    tail_start = verbatim_start(convo, held.covered_end)
    opening, opening_thinking = restated_opening(
        convo, tail_start, held.directive_id, anchors=anchors
    )
    directive = opening >= 0
    note_tokens = counter.count_message(
        memory_note(held.note, held.covered_end, copies=plan.copies)
    )
    restored, shown_restored = restored_messages(convo, held, plan.results, copies=plan.copies)
    tokens = (
        turn.system_tokens
        + note_tokens
        + sum(map(counter.count_message, shown_restored))
        + _restated_tokens(sums, opening, opening_thinking, last_user, directive_tokens)
        + sums[-1]
        - sums[tail_start]
    )
    # The loop's opening thinking turn goes in with the directive when the tail has
    # passed it: it counts against the message cap like the rest of the view.
    pinned = opening_thinking[1] - opening_thinking[0] if opening_thinking else 0
    count = 1 + len(restored) + int(directive) + pinned + len(convo) - tail_start
    restate = True
    if count > policy.message_cap and directive and opening != last_user:
        # An earlier instruction restated only keeps the front in place: when the
        # message window has no room for it, it goes (the front moves once) before
        # anything is folded. Not for tokens: that cost more than the fold it saved
        # (benchmarks/defaults.md).
        restate = False
        dropped = None if opening_thinking == anchors.thinking else opening_thinking
        count -= 1 + (dropped[1] - dropped[0] if dropped else 0)
        tokens -= _restated_tokens(sums, opening, dropped, last_user, 0)
        # Without its opening step the loop in view may need a turn restarted (2 messages).
        count += 2 * (dropped is not None and tail_restarts(convo, tail_start))
    counts_fit = count <= policy.message_cap
    step = (
        _clear(plan, plan.results, tail_start, tokens - policy.max_tokens) if counts_fit else None
    )
    shown = (restored, shown_restored)
    return _HeldView(last_user, directive_tokens, note_tokens, counts_fit, restate, step, shown)


def fold_or_fallback(turn: Turn) -> FoldPlan:
    """A fold up to a token-sized tail, or, when none can or should be made, the fallback."""
    plan, sums, held, measured = turn.base, turn.sums, turn.held, turn.measured
    policy = plan.policy
    start = held.covered_end if held is not None else 0
    to, restore = _tail_and_restore(turn, start, measured.directive_tokens)
    fallback = replace(
        plan,
        mode="memo" if held is not None else "window",
        memo=held,
        restate_earlier=measured.restate,
        held_restored=measured.restored,
    )
    # When the minimum tail (with the system messages, a note the size of the held one and
    # the directive) is over the token budget, every turn overflows, and refolding the one
    # or two messages that slid out of the minimum tail would cost a summarizer call a
    # turn for nothing. Such a view is refolded once per the usual headroom of new work
    # (the 1 - TAIL_SHARE of the budget a fold leaves free) instead, its tail shortened
    # to fit meanwhile. A fold that could fit is never held back.
    directive = measured.directive_tokens if 0 <= measured.last_user < to else 0
    futile = (
        held is not None
        and measured.counts_fit
        and turn.system_tokens + measured.note_tokens + directive + sums[-1] - sums[to]
        > policy.max_tokens
        and sums[to] - sums[start] < int(policy.max_tokens * (1 - TAIL_SHARE))
    )
    if to <= start or futile:
        return fallback
    if not turn.asked.can_summarize:
        logger.debug("build_working_transcript: no summarizer; using the %s", fallback.mode)
        return fallback
    backoff = plan.backoff
    if backoff is not None and backoff.waiting(sums[-1]):
        # Logged at the failure that started it (once a span), not on every turn it waits.
        logger.debug(
            "build_working_transcript: summarizer backed off until %d tokens (now %d)",
            backoff.resume_at,
            sums[-1],
        )
        return replace(fallback, backed_off=True)
    return replace(
        fallback,
        mode="fold",
        fold_from=start,
        fold_to=to,
        fold_input=_fold_input(plan, held, start, to),
        restore=tuple(restore),
        restate_earlier=True,  # a new note restates the latest turn only, sized above
    )


def _tail_and_restore(
    turn: Turn, start: int, directive_tokens: int
) -> tuple[int, list[ToolResult]]:
    """Where a new fold's verbatim tail begins, and the files it re-attaches."""
    plan = turn.base
    convo, policy, counter = plan.convo, plan.policy, plan.counter
    # The note's room is reserved at its ceiling (its size is unknown until it is written),
    # and the directive's whether or not it lands in the tail; the re-attached files come
    # out of the room before the tail is sized, so the tail after a fold is smaller and the
    # next fold further away.
    room = (
        policy.max_tokens
        - turn.system_tokens
        - note_reserve(counter, len(convo))
        - directive_tokens
    )
    to = _tail_start(convo, policy, counter, room, start)
    cap = policy.restore_message_cap
    restore = restore_plan(plan.results, covered_end=to, room=policy.restore_budget, max_count=cap)
    if restore:
        # What the tail and the files may hold together leaves the next fold its headroom:
        # a larger restore takes it from the tail, and a tail over its share (its fewest
        # messages) takes it from the restore.
        limit = room - policy.fold_headroom(room)
        restore_cost = sum(r.size + _RESTORE_OVERHEAD for r in restore)
        to = _tail_start(convo, policy, counter, room - restore_cost, start, limit - restore_cost)
        fits = min(restore_cost, limit - (turn.sums[-1] - turn.sums[to]))
        cap = policy.files_cap(turn.anchors.pinned_before(to) + len(convo) - to)
        restore = restore_plan(plan.results, covered_end=to, room=max(0, fits), max_count=cap)
    return to, restore


def _fold_input(
    plan: FoldPlan, held: CompactMemo | None, start: int, to: int
) -> tuple[BaseMessage, ...]:
    """What the summarizer is given: the held note, then ``convo[start:to]`` as shown."""
    policy, counter = plan.policy, plan.counter
    # The held note goes in as an assistant turn, as the seed's did: the summarizer reads
    # a rendering, not a request, so the strict-provider role rule does not apply to it.
    # What the clear tier would clear is shown cut to its head and end (summary_shown),
    # and a single huge message is cut, so its request stays bounded.
    held_note = (AIMessage(note_for_summary(held.note)),) if held is not None else ()
    shown: Sequence[BaseMessage] = plan.convo
    if policy.clear_tool_results:
        step = furthest_clear(plan.results, start=start, end=to, keep_tokens=policy.keep_budget)
        shown = summary_shown(plan.convo, step, counter)
    cap = max(1, policy.max_tokens // 4)
    return (*held_note, *(elide_message(m, cap, counter) for m in shown[start:to]))


def _clear(
    plan: FoldPlan, results: Sequence[ToolResult], start: int, need: int
) -> ClearStep | None:
    policy = plan.policy
    return clear_range(
        results,
        start=start,
        length=len(plan.convo),
        need=need,
        keep_tokens=policy.keep_budget,
        land_below=policy.clear_room,
        held=plan.held_horizon,
        enabled=policy.clear_tool_results,
    )


_RESTORE_OVERHEAD: Final = 40
"""Tokens a re-attached output costs beyond its own: its header line and framing."""


def _tail_start(
    convo: Sequence[BaseMessage],
    policy: FoldPolicy,
    counter: TokenCounter,
    room: int,
    start: int,
    cap: int | None = None,
) -> int:
    tail_budget = max(0, min(policy.tail_tokens, int(room * TAIL_SHARE)))
    if cap is not None:
        tail_budget = max(0, min(tail_budget, cap))
    return max(
        start,
        compact_tail_start_for_budget(
            convo,
            tail_budget,
            min_tail_messages=policy.tail_message_floor,
            max_tail_messages=policy.tail_message_cap,
            token_counter=counter,
            floor_within_budget=True,
        ),
    )


def _requested_fold(plan: FoldPlan, held: CompactMemo | None, focus: str | None) -> FoldPlan | None:
    """The fold the agent asked for: everything but the minimum tail, into the note.

    With nothing new to fold the held note is rewritten around ``focus``; ``None`` when
    there is neither a note nor anything to fold (the record is the minimum tail).
    """
    convo, policy = plan.convo, plan.policy
    start = held.covered_end if held is not None else 0
    to = max(
        start,
        compact_tail_start_for_budget(
            convo,
            0,
            min_tail_messages=policy.tail_message_floor,
            max_tail_messages=policy.tail_message_cap,
            token_counter=plan.counter,
        ),
    )
    if to <= 0:
        return None
    held_note = (AIMessage(note_for_summary(held.note)),) if held is not None else ()
    return replace(
        plan,
        mode="fold",
        memo=held,
        fold_from=start,
        fold_to=to,
        fold_input=(*held_note, *convo[start:to]),
        focus=focus,
    )


def _restated_tokens(
    sums: Sequence[int],
    opening: int,
    thinking: tuple[int, int] | None,
    last_user: int,
    latest: int,
) -> int:
    """Tokens of the directive restated ahead of the tail (``opening``; -1: none).

    ``latest``: the latest user turn's, the running loop's thinking span included (reserved
    either way); an earlier turn's, or none, is counted with the span pinned (``thinking``).
    """
    pinned = sums[thinking[1]] - sums[thinking[0]] if thinking is not None else 0
    if opening < 0:
        return pinned
    if opening == last_user:
        return latest
    return sums[opening + 1] - sums[opening] + pinned
