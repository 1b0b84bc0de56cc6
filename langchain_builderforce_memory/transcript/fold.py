"""The incremental fold: summarize the bulky older part of a run instead of dropping it.

The window keeps a request in bounds by DROPPING the oldest turns. That never overflows,
but it silently LOSES what the run learned, and a model that lost its reads goes back to
re-read the files (the seed's "LOOP EXHAUSTED" runs). With a summarizer, the older part
becomes ONE memory note instead, the recent part stays verbatim, and the active
instruction is restated after the note: ``[system, note, directive?, ...verbatim tail]``.
Why the note is kept and re-folded incrementally, and when a turn folds, is
:mod:`~langchain_builderforce_memory.transcript.fold_plan`; this module holds the turn:
the summarizer call and the view's assembly.

Why this is not the hand-off packer: the packer is stateless and gives the verbatim tail
priority, handing the note whatever room is left. The working view needs the opposite on
both counts: a memo reused across turns and a tail capped so the note and the next turns
have room. What the two share, the token count, is :mod:`~langchain_builderforce_memory.
tokens`.

Failure is never the user's: no summarizer, a summarizer error, an empty answer or a
timeout keep the note already held (the view may then run over budget until a fold
succeeds; every turn retries), else fall back to the window. Logged, never raised.

One implementation for both twins: :func:`~langchain_builderforce_memory.transcript.
fold_plan.plan_working_transcript` (pure) decides verbatim / reuse the memo / fold
``[from, to)`` / window; only the summarizer call differs between
:func:`build_working_transcript` and :func:`abuild_working_transcript`; then
:func:`finish_working_transcript` (pure) assembles the view.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import BaseMessage, MessageLikeRepresentation, SystemMessage

from langchain_builderforce_memory.facts import RecordFacts
from langchain_builderforce_memory.messages import as_messages, message_id
from langchain_builderforce_memory.native import scope_to_compaction
from langchain_builderforce_memory.options import from_options
from langchain_builderforce_memory.request_check import RequestCheck
from langchain_builderforce_memory.tokens import TokenCounterLike, count_tokens
from langchain_builderforce_memory.transcript.fold_plan import FoldPlan, plan_working_transcript
from langchain_builderforce_memory.transcript.fold_state import FoldState, SummarizerBackoff
from langchain_builderforce_memory.transcript.horizon import ClearHorizon
from langchain_builderforce_memory.transcript.memo import (
    COMPACT_TAIL_MAX_MESSAGES,
    COMPACT_TAIL_TOKEN_BUDGET,
    COMPACT_TAIL_TURNS,
    TAIL_SHARE,
    CompactMemo,
    FoldPolicy,
)
from langchain_builderforce_memory.transcript.plan import (
    assemble_compacted,
    compact_tail_start,
    compact_tail_start_for_budget,
    fold_note_text,
    held_directive_index,
    note_reserve,
    pinned_directive_index,
    present_leading_marker,
    verbatim_start,
)
from langchain_builderforce_memory.transcript.summary import (
    DEFAULT_SUMMARIZER_TIMEOUT,
    Summarizer,
    SummarizerLike,
    asummarize_parts,
    cap_note,
    focused_prompt,
    resolve_summarizer,
    summarize_parts,
    summary_input_limit,
    summary_parts,
)
from langchain_builderforce_memory.transcript.view import (
    ClearStep,
    ViewSteps,
    clear_range,
    fit_view,
    restored_messages,
    with_clear,
)
from langchain_builderforce_memory.transcript.window import (
    HISTORY_TOKEN_BUDGET,
    MessageCeiling,
    windowed,
)
from langchain_builderforce_memory.validity import log_repairs, repair_request

__all__ = [
    "COMPACT_TAIL_MAX_MESSAGES",
    "COMPACT_TAIL_TOKEN_BUDGET",
    "COMPACT_TAIL_TURNS",
    "TAIL_SHARE",
    "CompactMemo",
    "FoldMode",
    "FoldPolicy",
    "TranscriptFold",
    "WorkingTranscript",
    "abuild_working_transcript",
    "afold_turn",
    "assemble_compacted",
    "build_working_transcript",
    "compact_tail_start",
    "compact_tail_start_for_budget",
    "finish_working_transcript",
    "fold_note_text",
    "fold_turn",
    "held_directive_index",
    "pinned_directive_index",
    "verbatim_start",
]

logger = logging.getLogger(__name__)

FoldMode = Literal["verbatim", "window", "memo", "folded"]
"""How a view was made: the whole record, the drop-oldest window, the held note reused,
or a new fold."""


@dataclass(frozen=True, slots=True)
class TranscriptFold:
    """What one fold did, for the caller to record (an event, a consolidation marker)."""

    dropped_messages: int
    """How many conversation messages this fold newly compressed."""
    note: str
    """The note it wrote."""
    covered_end: int
    """The conversation index the note now covers up to, exclusive."""


@dataclass(frozen=True, slots=True)
class WorkingTranscript:
    """One turn's view and what to keep for the next turn."""

    messages: list[BaseMessage]
    """The view: system messages, then the note and directive when folded, then the
    verbatim tail. Always passes ``request_problems``."""
    memo: CompactMemo | None
    """The memo to keep for the next turn (``None``: reset, nothing held)."""
    fold: TranscriptFold | None
    """Set only when this call folded."""
    mode: FoldMode
    """How the view was made."""
    summarizer_calls: int
    """Summarizer calls this turn made (0 or 1; a failed call counts)."""
    backoff: SummarizerBackoff | None = None
    """Set while the summarizer is backed off after a failure (kept in :attr:`state`)."""
    steps: ViewSteps = field(default_factory=ViewSteps)
    """What the view policy cleared, re-attached and elided this turn."""
    horizon: ClearHorizon | None = None
    """The clear tier's horizon, to hold next turn (kept in :attr:`state`), so the view's
    prefix stays put until the view no longer fits."""

    @property
    def state(self) -> FoldState:
        """What to keep for the next turn: the memo, the backoff and the horizon together.

        Hand it (or its ``to_dict()``, for JSON state) back as the next turn's ``memo=``.
        """
        return FoldState(self.memo, self.backoff, self.horizon)


def _checked(view: list[BaseMessage], check: RequestCheck | None) -> list[BaseMessage]:
    fixed, repairs = check.repaired(view) if check is not None else repair_request(view)
    log_repairs(repairs, "build_working_transcript")
    return fixed


def _compacted(
    plan: FoldPlan, memo: CompactMemo, clear: ClearStep | None, *, fresh: bool = False
) -> tuple[list[BaseMessage], ViewSteps, ClearStep]:
    """The note's view (re-attached files after it), cleared and elided to the budget."""
    convo, counter, policy = plan.convo, plan.counter, plan.policy
    restored, shown_restored = (
        plan.held_restored  # measured by the plan: the same note, the same files
        if plan.held_restored is not None and memo is plan.memo
        else restored_messages(convo, memo, plan.results, copies=plan.copies)
    )
    if clear is None:  # a new note: clear its tail only if it still does not fit
        base = assemble_compacted(
            plan.system,
            convo,
            memo.note,
            memo.covered_end,
            shown_restored,
            directive_id=memo.directive_id,
            restate_earlier=plan.restate_earlier,
            anchors=plan.anchors,
            copies=plan.copies,
        )
        clear = (
            clear_range(
                plan.results,
                start=verbatim_start(convo, memo.covered_end),
                length=len(convo),
                need=count_tokens(base, counter) - policy.max_tokens,
                keep_tokens=policy.keep_budget,
                land_below=policy.clear_room,
                held=plan.held_horizon,
                enabled=policy.clear_tool_results,
                fresh=fresh,
            )
            or ClearStep()
        )
    view = assemble_compacted(
        plan.system,
        with_clear(convo, clear, plan.copies),
        memo.note,
        memo.covered_end,
        shown_restored,
        cleared_from=convo,
        directive_id=memo.directive_id,
        restate_earlier=plan.restate_earlier,
        anchors=plan.anchors,
        copies=plan.copies,
    )
    fitted, elision = fit_view(
        _checked(view, plan.check), policy.max_tokens, counter, where="build_working_transcript"
    )
    steps = ViewSteps(
        cleared_messages=len(clear.cleared),
        cleared_tokens=clear.saving,
        restored=tuple(r.target or r.name for r in restored),
        restored_tokens=sum(r.size for r in restored),
        elided_messages=elision.elided_messages,
        elided_tokens=elision.elided_tokens,
        dropped_messages=elision.dropped_messages,
    )
    return fitted, steps, clear


def finish_working_transcript(
    plan: FoldPlan, summary: str | None, *, summarizer_calls: int = 0
) -> WorkingTranscript:
    """Assemble the view a plan decided (pure), cleared, restored and elided as planned.

    ``summary`` is the summarizer's answer for a ``"fold"`` plan; ``None`` means no
    summary: the view falls back to the held note (its tail shortened to fit the
    budget), else the window, and the summarizer is backed off (see
    :class:`~langchain_builderforce_memory.transcript.fold_state.SummarizerBackoff`).
    """
    backoff = _backoff_after(plan, summary, summarizer_calls)
    if plan.mode == "fold" and summary is not None:
        return _folded(plan, summary, summarizer_calls, backoff)
    if plan.mode == "verbatim":
        return _verbatim(plan, summarizer_calls, backoff)
    if plan.memo is not None:  # "memo", or a fold that got no summary: keep the held note
        if plan.mode == "fold":
            # The failed call already logged its one WARNING, with the cause.
            logger.debug("build_working_transcript: no new note this turn; kept the held one")
        clear = plan.clear if plan.mode == "memo" else None
        view, steps, used = _compacted(plan, plan.memo, clear)
        return WorkingTranscript(
            view, plan.memo, None, "memo", summarizer_calls, backoff, steps, used.held
        )
    view = windowed(
        [*plan.system, *present_leading_marker(plan.convo)],
        max_messages=plan.policy.max_messages,
        max_tokens=plan.policy.max_tokens,
        token_counter=plan.counter,
    )
    return WorkingTranscript(view, None, None, "window", summarizer_calls, backoff)


def _backoff_after(
    plan: FoldPlan, summary: str | None, summarizer_calls: int
) -> SummarizerBackoff | None:
    """The backoff to keep: reset by a note, doubled by a fold call that gave none."""
    if plan.mode != "fold" or not summarizer_calls:
        return plan.backoff
    if summary is not None:
        return None
    backoff = SummarizerBackoff.after_failure(
        plan.backoff, plan.total_tokens, plan.policy.backoff_span
    )
    logger.warning(
        "build_working_transcript: the summarizer gave no note (failure %d in a "
        "row); no new call until %d more tokens of work; the view falls back to "
        "the %s",
        backoff.failures,
        backoff.resume_at - plan.total_tokens,
        "held note" if plan.memo is not None else "window",
    )
    return backoff


def _folded(
    plan: FoldPlan, summary: str, summarizer_calls: int, backoff: SummarizerBackoff | None
) -> WorkingTranscript:
    """The view after a fold: the new note, the restated directive, the files, the tail."""
    convo, counter, to = plan.convo, plan.counter, plan.fold_to
    names = [r.target or r.name for r in plan.restore]
    # Capped again with its header: an estimate is not additive over concatenation,
    # and the note must fit the room note_reserve() kept for it.
    note = cap_note(
        fold_note_text(summary, to, names),
        counter,
        max_tokens=note_reserve(counter, to) - 16,
    )
    directive = pinned_directive_index(convo, verbatim_start(convo, to), anchors=plan.anchors)
    memo = CompactMemo(
        note=note,
        covered_end=to,
        last_covered_id=message_id(convo[to - 1]),
        restored=tuple(message_id(convo[r.index]) for r in plan.restore),
        directive_id=message_id(convo[directive]) if directive >= 0 else None,
    )
    logger.info(
        "build_working_transcript: folded %d message(s); the note covers %d of %d%s",
        to - plan.fold_from,
        to,
        len(convo),
        f"; re-attached {', '.join(names)}" if names else "",
    )
    view, steps, used = _compacted(plan, memo, None, fresh=True)
    fold = TranscriptFold(dropped_messages=to - plan.fold_from, note=note, covered_end=to)
    return WorkingTranscript(
        view, memo, fold, "folded", summarizer_calls, backoff, steps, used.held
    )


def _verbatim(
    plan: FoldPlan, summarizer_calls: int, backoff: SummarizerBackoff | None
) -> WorkingTranscript:
    """The whole record (cleared as planned), elided to the budget if need be."""
    shown = [*plan.system, *present_leading_marker(with_clear(plan.convo, plan.clear, plan.copies))]
    view, elision = fit_view(
        _checked(shown, plan.check),
        plan.policy.max_tokens,
        plan.counter,
        where="build_working_transcript",
    )
    steps = ViewSteps(
        cleared_messages=len(plan.clear.cleared),
        cleared_tokens=plan.clear.saving,
        elided_messages=elision.elided_messages,
        elided_tokens=elision.elided_tokens,
        dropped_messages=elision.dropped_messages,
    )
    memo_out = plan.memo if plan.clear.cleared else None
    return WorkingTranscript(
        view, memo_out, None, "verbatim", summarizer_calls, backoff, steps, plan.clear.held
    )


def fold_turn(plan: FoldPlan, summarizer: Summarizer | None) -> WorkingTranscript:
    """Carry out a :class:`~langchain_builderforce_memory.transcript.fold_plan.FoldPlan`.

    Calls the summarizer when the plan folds, then assembles. The one step the sync and
    async paths do differently; callers that plan with their own :class:`FoldPolicy` (the
    agent adapters) use it after
    :func:`~langchain_builderforce_memory.transcript.fold_plan.plan_working_transcript`.
    """
    if plan.mode != "fold" or summarizer is None:
        return finish_working_transcript(plan, None)
    summary, calls = summarize_parts(
        summarizer,
        summary_parts(plan.fold_input, plan.counter, summary_input_limit(summarizer)),
        timeout=plan.policy.timeout,
        prompt=focused_prompt(plan.focus),
        token_counter=plan.counter,
    )
    return finish_working_transcript(plan, summary, summarizer_calls=calls)


async def afold_turn(plan: FoldPlan, summarizer: Summarizer | None) -> WorkingTranscript:
    """Async twin of :func:`fold_turn` (the summarizer is awaited)."""
    if plan.mode != "fold" or summarizer is None:
        return finish_working_transcript(plan, None)
    summary, calls = await asummarize_parts(
        summarizer,
        summary_parts(plan.fold_input, plan.counter, summary_input_limit(summarizer)),
        timeout=plan.policy.timeout,
        prompt=focused_prompt(plan.focus),
        token_counter=plan.counter,
    )
    return finish_working_transcript(plan, summary, summarizer_calls=calls)


def _plan_turn(options: Mapping[str, Any]) -> FoldPlan:
    """The twins' shared first step, from their arguments (``locals()``).

    The twins differ only in how the summarizer is called; the fold's policy is built
    from its own fields (:func:`~langchain_builderforce_memory.options.from_options`).
    """
    return plan_working_transcript(
        scope_to_compaction(as_messages(options["messages"], where="build_working_transcript")),
        memo=options["memo"],
        system_prompt=options["system_prompt"],
        policy=from_options(FoldPolicy, options),
        token_counter=options["token_counter"],
        can_summarize=options["summarizer"] is not None,
        facts=options["facts"],
    )


def build_working_transcript(
    messages: Sequence[MessageLikeRepresentation],
    *,
    memo: FoldState | CompactMemo | Mapping[str, object] | None = None,
    summarizer: SummarizerLike | None = None,
    system_prompt: str | SystemMessage | None = None,
    max_tokens: int = HISTORY_TOKEN_BUDGET,
    max_messages: MessageCeiling = "auto",
    tail_tokens: int = COMPACT_TAIL_TOKEN_BUDGET,
    min_tail_messages: int = COMPACT_TAIL_TURNS,
    max_tail_messages: int = COMPACT_TAIL_MAX_MESSAGES,
    token_counter: TokenCounterLike = None,
    timeout: float | None = DEFAULT_SUMMARIZER_TIMEOUT,
    clear_at_least: int | None = None,
    restore_tokens: int | None = None,
    clear_tool_results: bool = True,
    clear_edit_inputs: bool = True,
    facts: RecordFacts | None = None,
) -> WorkingTranscript:
    """This turn's view of a run: verbatim, the held note reused, a new fold, or the window.

    The record is never changed: the result carries the view, the memo to keep for the
    next turn and the fold event (see the module docstring for the algorithm and why).

    Args:
        messages: The full record, oldest first (messages, or the tuples and dicts
            ``convert_to_messages`` takes); leading system messages are kept in
            front and counted in ``max_tokens``. A leading consolidation marker (what
            ``scope_to_consolidation`` returns first) is shown as a human-role note.
        memo: Last turn's ``result.state`` (a :class:`~.fold_state.FoldState`) or its
            ``to_dict()`` (or just ``result.memo``: then the summarizer's backoff and the
            clear tier's horizon are not held, and the horizon is chosen afresh each
            turn, so the view's prefix moves more often). An unreadable state, or a memo
            written for a different or rewritten record, is discarded and logged.
        summarizer: A chat model / ``Runnable``, a ``"provider:model"`` string, or a
            function taking the prompt messages and returning text. ``None``: never fold
            (held note, else the window).
        system_prompt: Put in front of the record's own system messages.
        max_tokens: Tokens the view may hold.
        max_messages: Conversation messages the view may hold: ``"auto"``, one per 500
            tokens of ``max_tokens`` and at least 128; ``None``: no ceiling (any ceiling is
            at most 2,000: OpenAI refuses a request of more than 2,048 messages).
        tail_tokens: Tokens the verbatim tail may keep after a fold.
        min_tail_messages: The fewest messages the tail keeps while they fit its token
            budget; past it, the latest assistant turn and its results.
        max_tail_messages: The most messages the tail keeps.
        token_counter: How to count (default: the seed's approximate estimate).
        timeout: Seconds a summarizer call may take (``None``: no limit).
        clear_at_least: When the clear tier moves its horizon, how far under the budget
            the view lands, so it then holds for that much new work (``None``: half of
            ``max_tokens``).
        restore_tokens: Tokens of file outputs re-attached after a fold's note (``None``:
            an eighth of ``max_tokens``; 0: none); the clear tier keeps twice that verbatim.
        clear_tool_results: Run the clear tier before folding.
        clear_edit_inputs: When the clear tier clears an edit, cut its call's long values
            too (``False``: every call's arguments stay whole).
        facts: The conversation's :class:`~langchain_builderforce_memory.facts.RecordFacts`
            (of the messages after the leading system ones), kept with the memo from turn
            to turn: a turn then counts and classifies only its new messages. Without
            it, each call goes over the whole record.

    Returns:
        The view (always valid for strict providers), the memo, the fold and the mode.

    Raises:
        ValueError: a policy number is invalid (the message names it and the fix).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> record = [HumanMessage("task")] + [AIMessage("x" * 400) for _ in range(100)]
        >>> out = build_working_transcript(record, summarizer=lambda p: "did 92 steps",
        ...                                max_tokens=8_000)
        >>> out.mode, out.memo.covered_end, [m.type for m in out.messages[:3]]
        ('folded', 92, ['human', 'human', 'ai'])
    """
    chosen = resolve_summarizer(summarizer)
    plan = _plan_turn(locals())
    return fold_turn(plan, chosen)


async def abuild_working_transcript(
    messages: Sequence[MessageLikeRepresentation],
    *,
    memo: FoldState | CompactMemo | Mapping[str, object] | None = None,
    summarizer: SummarizerLike | None = None,
    system_prompt: str | SystemMessage | None = None,
    max_tokens: int = HISTORY_TOKEN_BUDGET,
    max_messages: MessageCeiling = "auto",
    tail_tokens: int = COMPACT_TAIL_TOKEN_BUDGET,
    min_tail_messages: int = COMPACT_TAIL_TURNS,
    max_tail_messages: int = COMPACT_TAIL_MAX_MESSAGES,
    token_counter: TokenCounterLike = None,
    timeout: float | None = DEFAULT_SUMMARIZER_TIMEOUT,
    clear_at_least: int | None = None,
    restore_tokens: int | None = None,
    clear_tool_results: bool = True,
    clear_edit_inputs: bool = True,
    facts: RecordFacts | None = None,
) -> WorkingTranscript:
    """Async twin of :func:`build_working_transcript`.

    Same plan and assembly; the summarizer is awaited (a sync one runs in a worker thread).

    Example:
        >>> import asyncio
        >>> from langchain_core.messages import HumanMessage
        >>> asyncio.run(abuild_working_transcript([HumanMessage("hi")])).mode
        'verbatim'
    """
    chosen = resolve_summarizer(summarizer)
    plan = _plan_turn(locals())
    return await afold_turn(plan, chosen)
