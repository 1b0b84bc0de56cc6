"""When to fold: the pure plan of one turn's working view, before any summarizer call.

:func:`plan_working_transcript` decides verbatim / clear / reuse the held memo / fold
``[from, to)`` / window, and :class:`FoldPlan` carries that decision to
:func:`~langchain_builderforce_memory.transcript.fold.finish_working_transcript`, which
assembles the view. It is pure, with more callers than the fold's twins (the adapters,
the history, ``bfmem inspect``); :mod:`~.plan` puts a compacted view together.

Why INCREMENTAL: re-summarizing every few turns costs a model call a turn and rewrites the
view's prefix every turn, so no provider prefix cache hits. The note is kept in a small
:class:`CompactMemo` the caller persists (graph state), reused as is while its verbatim
remainder fits, and re-folded only when it no longer does: the previous note plus exactly
the messages since it, up to a token-sized tail: at most ``tail_tokens`` (1k by default,
about the latest assistant turn and its results) and :data:`~.memo.TAIL_SHARE` of the room
left, so a fold leaves at least :meth:`~.memo.FoldPolicy.fold_headroom` of new work before
the next. The clear tier makes room between folds, so the summarizer runs far less often
than that floor (``benchmarks/sweep.md``: the fewest tokens of new work between two calls).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from langchain_builderforce_memory.copies import Copies
from langchain_builderforce_memory.facts import DIRECTIVES, RecordFacts, counter_of
from langchain_builderforce_memory.native import fixed_prefix_count
from langchain_builderforce_memory.tokens import TokenCounter, TokenCounterLike
from langchain_builderforce_memory.transcript.elide import (
    check_budget_floor,
    elide_message,
)
from langchain_builderforce_memory.transcript.fold_state import FoldState, SummarizerBackoff
from langchain_builderforce_memory.transcript.horizon import ClearHorizon
from langchain_builderforce_memory.transcript.memo import TAIL_SHARE, CompactMemo, FoldPolicy
from langchain_builderforce_memory.transcript.plan import (
    Anchors,
    compact_tail_start_for_budget,
    memory_note,
    note_for_summary,
    note_reserve,
    restated_opening,
    system_messages,
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

__all__ = ["FoldPlan", "plan_working_transcript"]

# Named as the fold's logger, as plan.py's is: the fold's log lines stay under the one
# logger name users already configure, whichever module of the fold writes them.
logger = logging.getLogger("langchain_builderforce_memory.transcript.fold")


@dataclass(frozen=True, slots=True)
class FoldPlan:
    """What :func:`plan_working_transcript` decided.

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
    restate_earlier: bool = True
    """Whether a held note's view keeps restating the instruction its fold restated once
    a newer one has arrived (see :func:`~.plan.held_directive_index`); ``False`` when the
    message window has no room for it."""


def plan_working_transcript(
    messages: Sequence[BaseMessage],
    *,
    memo: FoldState | CompactMemo | Mapping[str, object] | None = None,
    system_prompt: str | SystemMessage | None = None,
    policy: FoldPolicy | None = None,
    token_counter: TokenCounterLike = None,
    can_summarize: bool = True,
    requested: bool = False,
    focus: str | None = None,
    backoff: SummarizerBackoff | None = None,
    keep_memo: bool = False,
    horizon: ClearHorizon | None = None,
    facts: RecordFacts | None = None,
) -> FoldPlan:
    """Decide this turn's view (pure; the view policy, see :mod:`.view`).

    ``requested``: the agent asked for a fold (``compact_context``): fold now, whatever
    the budget, down to the minimum tail, with ``focus`` in the summarizer prompt.
    ``memo``: last turn's :class:`~.fold_state.FoldState` (or its ``to_dict()``, or a bare
    memo). ``backoff`` / ``horizon``: given apart, they win over the state's. ``facts``:
    the conversation's :class:`~langchain_builderforce_memory.facts.RecordFacts` (of the
    messages after the leading system ones), kept from turn to turn so a turn counts only
    its new messages; without it, each call starts from nothing.

    The tiers, in order, each taking the turn as it stands or passing: the whole record
    when it fits (verbatim, memo reset); the clear tier over the record; the held note's
    view, cleared; a fold of the held note plus exactly the messages since it, up to a
    token-sized tail (sized after the re-attached files). When there is nothing new to
    fold or no summarizer, the held note, else the window. A fold that could not bring the
    view within budget (its minimum tail alone is over) is held back for the usual
    headroom of new work; the view is elided to the budget instead.

    Raises:
        ValueError: ``max_tokens`` cannot hold the system messages plus one human message.
    """
    policy = policy or FoldPolicy()
    state = FoldState.read(memo, where="build_working_transcript")
    turn = _turn_of(
        messages,
        system_prompt,
        policy,
        counter_of(token_counter, facts, where="build_working_transcript"),
        backoff if backoff is not None else state.backoff,
        horizon if horizon is not None else state.horizon,
        facts,
    )
    plan, convo, memo = turn.plan, turn.plan.convo, state.memo
    if requested and can_summarize:
        asked = _requested_fold(plan, memo.held_in(convo) if memo is not None else None, focus)
        if asked is not None:
            return asked
    fits = len(convo) <= policy.message_cap and turn.tokens <= policy.max_tokens
    if fits and not keep_memo:
        return plan
    held = memo.held_in(convo) if memo is not None else None
    if fits and held is None:
        return plan
    fact = results_fact(cut_inputs=policy.clear_edit_inputs)
    turn = replace(turn, plan=replace(plan, results=turn.facts.get(fact).results))
    cleared = _record_cleared(turn) if held is None else None
    if cleared is not None:
        return cleared
    measured = _held_view(turn, held)
    if measured.clear is not None:
        return replace(
            turn.plan,
            mode="memo",
            memo=held,
            clear=measured.clear,
            restate_earlier=measured.restate,
        )
    return _fold_or_fallback(turn, held, measured, can_summarize=can_summarize)


@dataclass(frozen=True, slots=True)
class _Turn:
    """What every tier of one turn reads, computed once."""

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

    @property
    def tokens(self) -> int:
        """The whole request: system prefix and conversation."""
        return self.system_tokens + self.sums[-1]


def _turn_of(
    messages: Sequence[BaseMessage],
    system_prompt: str | SystemMessage | None,
    policy: FoldPolicy,
    counter: TokenCounter,
    backoff: SummarizerBackoff | None,
    horizon: ClearHorizon | None,
    facts: RecordFacts | None,
) -> _Turn:
    """The turn's facts, after checking the budget holds the system prompt plus a turn.

    The fixed prefix is the system messages, and a provider compaction block with its
    opener when the record was scoped to one (:func:`~langchain_builderforce_memory.native.
    pinned_count`): no tier cuts, clears, elides or folds it.
    """
    lead = fixed_prefix_count(messages, policy.max_tokens, counter)
    system = [*system_messages(system_prompt), *messages[:lead]]
    convo = messages[lead:] if lead else messages  # no copy: the plan never changes it
    facts = facts if facts is not None else RecordFacts(counter)
    facts.sync(convo)
    sums = facts.sums
    anchors = Anchors(facts.directive, facts.thinking, facts.get(DIRECTIVES))
    plan = FoldPlan(
        "verbatim",
        system,
        convo,
        None,
        policy,
        counter,
        backoff=backoff,
        total_tokens=sums[-1],
        held_horizon=horizon,
        anchors=anchors,
        copies=facts.copies,
    )
    system_tokens = sum(counter.count_message(m) for m in system)
    check_budget_floor(
        system_tokens,
        policy.max_tokens,
        counter,
        where="build_working_transcript",
        opening_tokens=_directive_tokens(convo, facts),
    )
    return _Turn(plan, sums, anchors, system_tokens, facts)


def _record_cleared(turn: _Turn) -> FoldPlan | None:
    """The clear tier over the whole record (no note held), when it makes room."""
    plan = turn.plan
    if len(plan.convo) > plan.policy.message_cap:
        return None
    step = _clear(plan, plan.results, 0, turn.tokens - plan.policy.max_tokens)
    return replace(plan, clear=step) if step is not None else None


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


def _held_view(turn: _Turn, held: CompactMemo | None) -> _HeldView:
    """Measure the held note's view (note, re-attached files, directive, tail) and clear it."""
    plan, sums = turn.plan, turn.sums
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
    return _HeldView(last_user, directive_tokens, note_tokens, counts_fit, restate, step)


def _fold_or_fallback(
    turn: _Turn, held: CompactMemo | None, measured: _HeldView, *, can_summarize: bool
) -> FoldPlan:
    """A fold up to a token-sized tail, or, when none can or should be made, the fallback."""
    plan, sums = turn.plan, turn.sums
    policy = plan.policy
    start = held.covered_end if held is not None else 0
    to, restore = _tail_and_restore(turn, start, measured.directive_tokens)
    fallback = replace(
        plan,
        mode="memo" if held is not None else "window",
        memo=held,
        restate_earlier=measured.restate,
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
    if not can_summarize:
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
    turn: _Turn, start: int, directive_tokens: int
) -> tuple[int, list[ToolResult]]:
    """Where a new fold's verbatim tail begins, and the files it re-attaches."""
    plan = turn.plan
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


def _directive_tokens(convo: Sequence[BaseMessage], facts: RecordFacts) -> int | None:
    """The latest user turn's size, or ``None`` without one."""
    last_user = facts.directive
    return facts.sums[last_user + 1] - facts.sums[last_user] if last_user >= 0 else None


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
