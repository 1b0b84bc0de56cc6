"""The incremental fold: summarize the bulky older part of a run instead of dropping it.

The window keeps a request in bounds by DROPPING the oldest turns. That never overflows,
but it silently LOSES what the run learned, and a model that lost its reads goes back to
re-read the files (the seed's "LOOP EXHAUSTED" runs). With a summarizer, the older part
becomes ONE memory note instead, the recent part stays verbatim, and the active
instruction is restated after the note: ``[system, note, directive?, ...verbatim tail]``.

Why INCREMENTAL: re-summarizing every few turns costs a model call a turn and rewrites the
view's prefix every turn, so no provider prefix cache hits. The note is kept in a small
:class:`CompactMemo` the caller persists (graph state), reused as is while its verbatim
remainder fits, and re-folded only when it no longer does: the previous note plus exactly
the messages since it, up to a token-sized tail. The tail takes at most ``tail_tokens``
(40k of 64k by default), so a fold leaves ~20k tokens of headroom and the summarizer runs
about once per 20k tokens of new work, never every turn.

Why this is not the hand-off packer: the packer is stateless and gives the verbatim tail
priority, handing the note whatever room is left. The working view needs the opposite on
both counts: a memo reused across turns and a tail capped so the note and the next turns
have room. What the two share, the token count, is :mod:`~langchain_builderforce_memory.
tokens`.

Failure is never the user's: no summarizer, a summarizer error, an empty answer or a
timeout keep the note already held (the view may then run over budget until a fold
succeeds; every turn retries), else fall back to the window. Logged, never raised.

One implementation for both twins: :func:`plan_working_transcript` (pure) decides
verbatim / reuse the memo / fold ``[from, to)`` / window; only the summarizer call differs
between :func:`build_working_transcript` and :func:`abuild_working_transcript`; then
:func:`finish_working_transcript` (pure) assembles the view.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from langchain_builderforce_memory.blocks import thinking_span
from langchain_builderforce_memory.messages import (
    leading_system_count,
    log_repairs,
    message_id,
    repair_request,
)
from langchain_builderforce_memory.tokens import (
    TokenCounter,
    TokenCounterLike,
    count_tokens,
    prefix_sums,
    resolve_token_counter,
)
from langchain_builderforce_memory.transcript.backoff import (
    SUMMARIZER_BACKOFF_KEY,
    SummarizerBackoff,
    parse_backoff,
)
from langchain_builderforce_memory.transcript.clear import ToolResult, tool_results
from langchain_builderforce_memory.transcript.elide import check_budget_floor, elide_message
from langchain_builderforce_memory.transcript.plan import (
    COMPACT_TAIL_MAX_MESSAGES,
    COMPACT_TAIL_TOKEN_BUDGET,
    COMPACT_TAIL_TURNS,
    TAIL_SHARE,
    CompactMemo,
    FoldPolicy,
    assemble_compacted,
    compact_tail_start,
    compact_tail_start_for_budget,
    fold_note_text,
    latest_user_index,
    memory_note,
    note_reserve,
    pinned_directive_index,
    present_leading_marker,
    system_messages,
    verbatim_start,
)
from langchain_builderforce_memory.transcript.summary import (
    DEFAULT_SUMMARIZER_TIMEOUT,
    Summarizer,
    SummarizerLike,
    asummarize_transcript,
    cap_note,
    focused_prompt,
    resolve_summarizer,
    summarize_transcript,
)
from langchain_builderforce_memory.transcript.view import (
    ClearStep,
    ViewSteps,
    clear_range,
    fit_view,
    furthest_clear,
    restore_plan,
    restored_message,
    restored_of,
    with_clear,
)
from langchain_builderforce_memory.transcript.window import (
    HISTORY_TOKEN_BUDGET,
    HISTORY_WINDOW,
    windowed,
)

__all__ = [
    "COMPACT_TAIL_MAX_MESSAGES",
    "COMPACT_TAIL_TOKEN_BUDGET",
    "COMPACT_TAIL_TURNS",
    "TAIL_SHARE",
    "CompactMemo",
    "FoldMode",
    "FoldPlan",
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
    "pinned_directive_index",
    "plan_working_transcript",
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
    """Set while the summarizer is backed off after a failure (keep it with the memo:
    :func:`~langchain_builderforce_memory.transcript.plan.memo_state`)."""
    steps: ViewSteps = field(default_factory=ViewSteps)
    """What the view policy cleared, re-attached and elided this turn."""


@dataclass(frozen=True, slots=True)
class FoldPlan:
    """What :func:`plan_working_transcript` decided.

    :func:`finish_working_transcript` turns it (and the summary, when one was asked for)
    into the view.
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

    results: tuple[ToolResult, ...] = ()
    """The conversation's tool results (empty when the record fits as it is)."""
    clear: ClearStep = field(default_factory=ClearStep)
    """What the clear tier clears in this view."""
    restore: tuple[ToolResult, ...] = ()
    """For a fold: the file outputs to re-attach after the new note."""


def _held_memo(
    memo: CompactMemo | Mapping[str, object] | None, convo: Sequence[BaseMessage]
) -> CompactMemo | None:
    """The memo if it belongs to this record (found again by id after edits), else None."""
    if memo is None:
        return None
    candidate: object = memo
    if isinstance(candidate, CompactMemo):
        parsed = candidate
    elif isinstance(candidate, Mapping):
        if "note" not in candidate and SUMMARIZER_BACKOFF_KEY in candidate:
            return None  # only a backoff is held, no note yet
        try:
            parsed = CompactMemo.from_dict(candidate)
        except ValueError as exc:
            logger.warning("build_working_transcript: discarded an unreadable memo: %s", exc)
            return None
    else:
        logger.warning(
            "build_working_transcript: discarded a memo of type %s (expected CompactMemo or "
            "its to_dict())",
            type(candidate).__name__,
        )
        return None
    end = parsed.covered_end
    if end <= len(convo) and message_id(convo[end - 1]) == parsed.last_covered_id:
        return parsed
    # RemoveMessage edits only shift messages left, and need real ids: look for the last
    # covered message by its own id, never by a content hash (a rewritten record could
    # hold an equal message elsewhere).
    for j in range(min(end, len(convo)) - 1, -1, -1):
        if convo[j].id == parsed.last_covered_id:
            logger.info(
                "build_working_transcript: the record was edited; the memo now covers %d "
                "message(s) (was %d)",
                j + 1,
                end,
            )
            return replace(parsed, covered_end=j + 1)
    logger.info(
        "build_working_transcript: discarded a memo written for a different or rewritten "
        "record (message %r is not where it covered up to)",
        parsed.last_covered_id,
    )
    return None


def plan_working_transcript(
    messages: Sequence[BaseMessage],
    *,
    memo: CompactMemo | Mapping[str, object] | None = None,
    system_prompt: str | SystemMessage | None = None,
    policy: FoldPolicy | None = None,
    token_counter: TokenCounterLike = None,
    can_summarize: bool = True,
    requested: bool = False,
    focus: str | None = None,
    backoff: SummarizerBackoff | None = None,
    keep_memo: bool = False,
) -> FoldPlan:
    """Decide this turn's view (pure; the view policy, see :mod:`.view`).

    ``requested``: the agent asked for a fold (``compact_context``): fold now, whatever
    the budget, down to the minimum tail, with ``focus`` in the summarizer prompt.

    Whole record fits -> verbatim (memo reset). Else the clear tier over the record, then
    the held memo's view as is, then cleared. Otherwise fold the held note plus exactly the
    messages since it, up to a token-sized tail (sized after the re-attached files); when
    there is nothing new to fold or no summarizer, the held note, else the window. A fold
    that could not bring the view within budget (its minimum tail alone is over) is held
    back for the usual headroom of new work; the view is elided to the budget instead.

    Raises:
        ValueError: ``max_tokens`` cannot hold the system messages plus one human message.
    """
    policy = policy or FoldPolicy()
    counter = resolve_token_counter(token_counter)
    lead = leading_system_count(messages)
    system = [*system_messages(system_prompt), *messages[:lead]]
    convo = messages[lead:]
    if backoff is None:
        backoff = parse_backoff(memo)
    sums = prefix_sums(convo, counter)
    plan = FoldPlan(
        "verbatim", system, convo, None, policy, counter, backoff=backoff, total_tokens=sums[-1]
    )
    system_tokens = sum(counter.count_message(m) for m in system)
    check_budget_floor(system_tokens, policy.max_tokens, counter, where="build_working_transcript")
    budget = policy.max_tokens
    if requested and can_summarize:
        asked = _requested_fold(plan, _held_memo(memo, convo), focus)
        if asked is not None:
            return asked
    fits = len(convo) <= policy.max_messages and system_tokens + sums[-1] <= budget
    if fits and not keep_memo:
        return plan
    held = _held_memo(memo, convo)
    if fits and held is None:
        return plan
    results = tuple(tool_results(convo, counter))
    plan = replace(plan, results=results)
    if held is None and len(convo) <= policy.max_messages:
        step = _clear(policy, results, len(convo), 0, system_tokens + sums[-1] - budget)
        if step is not None:
            return replace(plan, clear=step)
    last_user = latest_user_index(convo)
    directive_tokens = sums[last_user + 1] - sums[last_user] if last_user >= 0 else 0
    span = thinking_span(convo)
    if span is not None and 0 <= last_user < span[0]:
        # With thinking on, the loop's opening turn is pinned with the directive (issue 13).
        directive_tokens += sums[span[1]] - sums[span[0]]
    counts_fit = False
    held_note_tokens = 0
    if held is not None:
        tail_start = verbatim_start(convo, held.covered_end)
        directive = 0 <= last_user < tail_start
        held_note_tokens = counter.count_message(memory_note(held.note, held.covered_end))
        restored = restored_of(convo, held, results)
        tokens = (
            system_tokens
            + held_note_tokens
            + sum(counter.count_message(restored_message(convo[r.index], r)) for r in restored)
            + (directive_tokens if directive else 0)
            + sums[-1]
            - sums[tail_start]
        )
        counts_fit = (
            1 + len(restored) + int(directive) + len(convo) - tail_start <= policy.max_messages
        )
        if counts_fit:
            step = _clear(policy, results, len(convo), tail_start, tokens - budget)
            if step is not None:
                return replace(plan, mode="memo", memo=held, clear=step)
    start = held.covered_end if held is not None else 0
    # The note's room is reserved at its ceiling (its size is unknown until it is written),
    # and the directive's whether or not it lands in the tail; the re-attached files come
    # out of the room before the tail is sized, so the tail after a fold is smaller and the
    # next fold further away.
    room = budget - system_tokens - note_reserve(counter, len(convo)) - directive_tokens
    to = _tail_start(convo, policy, counter, room, start)
    restore = restore_plan(results, covered_end=to, room=policy.restore_budget)
    if restore:
        restore_cost = sum(r.size + _RESTORE_OVERHEAD for r in restore)
        to = _tail_start(convo, policy, counter, room - restore_cost, start)
        restore = restore_plan(results, covered_end=to, room=restore_cost)
    fallback = replace(plan, mode="memo" if held is not None else "window", memo=held)
    # When the minimum tail (with the system messages, a note the size of the held one and
    # the directive) is over the token budget, every turn overflows, and refolding the one
    # or two messages that slid out of the minimum tail would cost a summarizer call a
    # turn for nothing. Such a view is refolded once per the usual headroom of new work
    # (the 1 - TAIL_SHARE of the budget a fold leaves free) instead, its tail shortened
    # to fit meanwhile. A fold that could fit is never held back.
    futile = (
        held is not None
        and counts_fit
        and system_tokens
        + held_note_tokens
        + (directive_tokens if 0 <= last_user < to else 0)
        + sums[-1]
        - sums[to]
        > policy.max_tokens
        and sums[to] - sums[start] < int(policy.max_tokens * (1 - TAIL_SHARE))
    )
    if to <= start or futile:
        return fallback
    if not can_summarize:
        logger.debug("build_working_transcript: no summarizer; using the %s", fallback.mode)
        return fallback
    if backoff is not None and backoff.waiting(sums[-1]):
        # Logged at the failure that started it (once a span), not on every turn it waits.
        logger.debug(
            "build_working_transcript: summarizer backed off until %d tokens (now %d)",
            backoff.resume_at,
            sums[-1],
        )
        return replace(fallback, backed_off=True)
    # The held note goes in as an assistant turn, as the seed's did: the summarizer reads
    # a rendering, not a request, so the strict-provider role rule does not apply to it.
    # What the clear tier would clear is shown to it as placeholders too (the model saw no
    # more), and a single huge message is cut, so its request stays bounded.
    held_note = (AIMessage(held.note),) if held is not None else ()
    shown = (
        with_clear(
            convo, furthest_clear(results, start=start, end=to, keep_tokens=policy.restore_budget)
        )
        if policy.clear_tool_results
        else convo
    )
    cap = max(1, budget // 4)
    fold_input = tuple(elide_message(m, cap, counter) for m in shown[start:to])
    return replace(
        fallback,
        mode="fold",
        fold_from=start,
        fold_to=to,
        fold_input=(*held_note, *fold_input),
        restore=tuple(restore),
    )


def _clear(
    policy: FoldPolicy, results: Sequence[ToolResult], length: int, start: int, need: int
) -> ClearStep | None:
    return clear_range(
        results,
        start=start,
        length=length,
        need=need,
        chunk=policy.clear_chunk,
        keep_tokens=policy.restore_budget,
        enabled=policy.clear_tool_results,
    )


_RESTORE_OVERHEAD: Final = 40
"""Tokens a re-attached output costs beyond its own: its header line and framing."""


def _tail_start(
    convo: Sequence[BaseMessage], policy: FoldPolicy, counter: TokenCounter, room: int, start: int
) -> int:
    tail_budget = max(0, min(policy.tail_tokens, int(room * TAIL_SHARE)))
    return max(
        start,
        compact_tail_start_for_budget(
            convo,
            tail_budget,
            min_tail_messages=policy.min_tail_messages,
            max_tail_messages=policy.tail_message_cap,
            token_counter=counter,
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
            min_tail_messages=policy.min_tail_messages,
            max_tail_messages=policy.tail_message_cap,
            token_counter=plan.counter,
        ),
    )
    if to <= 0:
        return None
    held_note = (AIMessage(held.note),) if held is not None else ()
    return replace(
        plan,
        mode="fold",
        memo=held,
        fold_from=start,
        fold_to=to,
        fold_input=(*held_note, *convo[start:to]),
        focus=focus,
    )


def _checked(view: list[BaseMessage]) -> list[BaseMessage]:
    fixed, repairs = repair_request(view)
    log_repairs(repairs, "build_working_transcript")
    return fixed


def _compacted(
    plan: FoldPlan, memo: CompactMemo, clear: ClearStep | None
) -> tuple[list[BaseMessage], ViewSteps]:
    """The note's view (re-attached files after it), cleared and elided to the budget."""
    convo, counter, policy = plan.convo, plan.counter, plan.policy
    restored = restored_of(convo, memo, plan.results)
    shown_restored = [restored_message(convo[r.index], r) for r in restored]
    if clear is None:  # a new note: clear its tail only if it still does not fit
        base = assemble_compacted(plan.system, convo, memo.note, memo.covered_end, shown_restored)
        clear = (
            clear_range(
                plan.results,
                start=verbatim_start(convo, memo.covered_end),
                length=len(convo),
                need=count_tokens(base, counter) - policy.max_tokens,
                chunk=policy.clear_chunk,
                keep_tokens=policy.restore_budget,
            )
            or ClearStep()
        )
    view = assemble_compacted(
        plan.system,
        with_clear(convo, clear),
        memo.note,
        memo.covered_end,
        shown_restored,
        latest_user=latest_user_index(convo),
    )
    fitted, elision = fit_view(
        _checked(view), policy.max_tokens, counter, where="build_working_transcript"
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
    return fitted, steps


def finish_working_transcript(
    plan: FoldPlan, summary: str | None, *, summarizer_calls: int = 0
) -> WorkingTranscript:
    """Assemble the view a plan decided (pure), cleared, restored and elided as planned.

    ``summary`` is the summarizer's answer for a ``"fold"`` plan; ``None`` means no
    summary: the view falls back to the held note (its tail shortened to fit the
    budget), else the window, and the summarizer is backed off (see
    :class:`~langchain_builderforce_memory.transcript.plan.SummarizerBackoff`).
    """
    convo, counter, policy = plan.convo, plan.counter, plan.policy
    backoff = plan.backoff
    if plan.mode == "fold" and summarizer_calls:
        if summary is not None:
            backoff = None
        else:
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
    if plan.mode == "fold" and summary is not None:
        to = plan.fold_to
        names = [r.target or r.name for r in plan.restore]
        # Capped again with its header: an estimate is not additive over concatenation,
        # and the note must fit the room note_reserve() kept for it.
        note = cap_note(
            fold_note_text(summary, to, names),
            counter,
            max_tokens=note_reserve(counter, to) - 16,
        )
        memo = CompactMemo(
            note=note,
            covered_end=to,
            last_covered_id=message_id(convo[to - 1]),
            restored=tuple(message_id(convo[r.index]) for r in plan.restore),
        )
        logger.info(
            "build_working_transcript: folded %d message(s); the note covers %d of %d%s",
            to - plan.fold_from,
            to,
            len(convo),
            f"; re-attached {', '.join(names)}" if names else "",
        )
        view, steps = _compacted(plan, memo, None)
        fold = TranscriptFold(dropped_messages=to - plan.fold_from, note=note, covered_end=to)
        return WorkingTranscript(view, memo, fold, "folded", summarizer_calls, backoff, steps=steps)
    if plan.mode == "verbatim":
        shown = [*plan.system, *present_leading_marker(with_clear(convo, plan.clear))]
        view, elision = fit_view(
            _checked(shown), policy.max_tokens, counter, where="build_working_transcript"
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
            view, memo_out, None, "verbatim", summarizer_calls, backoff, steps=steps
        )
    if plan.memo is not None:  # "memo", or a fold that got no summary: keep the held note
        if plan.mode == "fold":
            logger.warning("build_working_transcript: no new note this turn; kept the held one")
        clear = plan.clear if plan.mode == "memo" else None
        view, steps = _compacted(plan, plan.memo, clear)
        return WorkingTranscript(
            view, plan.memo, None, "memo", summarizer_calls, backoff, steps=steps
        )
    view = windowed(
        [*plan.system, *present_leading_marker(convo)],
        max_messages=policy.max_messages,
        max_tokens=policy.max_tokens,
        token_counter=counter,
    )
    return WorkingTranscript(view, None, None, "window", summarizer_calls, backoff)


def fold_turn(plan: FoldPlan, summarizer: Summarizer | None) -> WorkingTranscript:
    """Carry out a :class:`FoldPlan`: call the summarizer when it folds, then assemble.

    The one step the sync and async paths do differently; callers that plan with their own
    :class:`FoldPolicy` (the agent adapters) use it after :func:`plan_working_transcript`.
    """
    if plan.mode != "fold" or summarizer is None:
        return finish_working_transcript(plan, None)
    summary = summarize_transcript(
        summarizer,
        plan.fold_input,
        timeout=plan.policy.timeout,
        prompt=focused_prompt(plan.focus),
        token_counter=plan.counter,
    )
    return finish_working_transcript(plan, summary, summarizer_calls=1)


async def afold_turn(plan: FoldPlan, summarizer: Summarizer | None) -> WorkingTranscript:
    """Async twin of :func:`fold_turn` (the summarizer is awaited)."""
    if plan.mode != "fold" or summarizer is None:
        return finish_working_transcript(plan, None)
    summary = await asummarize_transcript(
        summarizer,
        plan.fold_input,
        timeout=plan.policy.timeout,
        prompt=focused_prompt(plan.focus),
        token_counter=plan.counter,
    )
    return finish_working_transcript(plan, summary, summarizer_calls=1)


def _plan_turn(
    messages: Sequence[BaseMessage],
    memo: CompactMemo | Mapping[str, object] | None,
    system_prompt: str | SystemMessage | None,
    summarizer: Summarizer | None,
    token_counter: TokenCounterLike,
    policy: FoldPolicy,
) -> FoldPlan:
    """The twins' shared first step (their only difference is how the summarizer is called)."""
    return plan_working_transcript(
        messages,
        memo=memo,
        system_prompt=system_prompt,
        policy=policy,
        token_counter=token_counter,
        can_summarize=summarizer is not None,
    )


def build_working_transcript(
    messages: Sequence[BaseMessage],
    *,
    memo: CompactMemo | Mapping[str, object] | None = None,
    summarizer: SummarizerLike | None = None,
    system_prompt: str | SystemMessage | None = None,
    max_tokens: int = HISTORY_TOKEN_BUDGET,
    max_messages: int = HISTORY_WINDOW,
    tail_tokens: int = COMPACT_TAIL_TOKEN_BUDGET,
    min_tail_messages: int = COMPACT_TAIL_TURNS,
    max_tail_messages: int = COMPACT_TAIL_MAX_MESSAGES,
    token_counter: TokenCounterLike = None,
    timeout: float | None = DEFAULT_SUMMARIZER_TIMEOUT,
    clear_at_least: int | None = None,
    restore_tokens: int | None = None,
    clear_tool_results: bool = True,
) -> WorkingTranscript:
    """This turn's view of a run: verbatim, the held note reused, a new fold, or the window.

    The record is never changed: the result carries the view, the memo to keep for the
    next turn and the fold event (see the module docstring for the algorithm and why).

    Args:
        messages: The full record, oldest first; leading system messages are kept in
            front and counted in ``max_tokens``. A leading consolidation marker (what
            ``scope_to_consolidation`` returns first) is shown as a human-role note.
        memo: Last turn's ``result.memo`` (or its ``to_dict()``). An unreadable memo, or
            one written for a different or rewritten record, is discarded and logged.
        summarizer: A chat model / ``Runnable``, a ``"provider:model"`` string, or a
            function taking the prompt messages and returning text. ``None``: never fold
            (held note, else the window).
        system_prompt: Put in front of the record's own system messages.
        max_tokens: Tokens the view may hold.
        max_messages: Conversation messages the view may hold.
        tail_tokens: Tokens the verbatim tail may keep after a fold.
        min_tail_messages: The fewest messages the tail keeps, however large.
        max_tail_messages: The most messages the tail keeps.
        token_counter: How to count (default: the seed's approximate estimate).
        timeout: Seconds a summarizer call may take (``None``: no limit).
        clear_at_least: Tokens of tool output the clear tier clears at a time (``None``:
            a quarter of ``max_tokens``).
        restore_tokens: Tokens of file outputs re-attached after a fold's note and kept
            by the clear tier (``None``: an eighth of ``max_tokens``; 0: none).
        clear_tool_results: Run the clear tier before folding.

    Returns:
        The view (always valid for strict providers), the memo, the fold and the mode.

    Raises:
        ValueError: a policy number is invalid (the message names it and the fix).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> record = [HumanMessage("task")] + [AIMessage("x" * 400) for _ in range(100)]
        >>> out = build_working_transcript(record, summarizer=lambda p: "did 68 steps",
        ...                                max_tokens=8_000)
        >>> out.mode, out.memo.covered_end, [m.type for m in out.messages[:3]]
        ('folded', 68, ['human', 'human', 'ai'])
    """
    chosen = resolve_summarizer(summarizer)
    plan = _plan_turn(
        messages,
        memo,
        system_prompt,
        chosen,
        token_counter,
        FoldPolicy(
            max_tokens=max_tokens,
            max_messages=max_messages,
            tail_tokens=tail_tokens,
            min_tail_messages=min_tail_messages,
            max_tail_messages=max_tail_messages,
            timeout=timeout,
            clear_at_least=clear_at_least,
            restore_tokens=restore_tokens,
            clear_tool_results=clear_tool_results,
        ),
    )
    return fold_turn(plan, chosen)


async def abuild_working_transcript(
    messages: Sequence[BaseMessage],
    *,
    memo: CompactMemo | Mapping[str, object] | None = None,
    summarizer: SummarizerLike | None = None,
    system_prompt: str | SystemMessage | None = None,
    max_tokens: int = HISTORY_TOKEN_BUDGET,
    max_messages: int = HISTORY_WINDOW,
    tail_tokens: int = COMPACT_TAIL_TOKEN_BUDGET,
    min_tail_messages: int = COMPACT_TAIL_TURNS,
    max_tail_messages: int = COMPACT_TAIL_MAX_MESSAGES,
    token_counter: TokenCounterLike = None,
    timeout: float | None = DEFAULT_SUMMARIZER_TIMEOUT,
    clear_at_least: int | None = None,
    restore_tokens: int | None = None,
    clear_tool_results: bool = True,
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
    plan = _plan_turn(
        messages,
        memo,
        system_prompt,
        chosen,
        token_counter,
        FoldPolicy(
            max_tokens=max_tokens,
            max_messages=max_messages,
            tail_tokens=tail_tokens,
            min_tail_messages=min_tail_messages,
            max_tail_messages=max_tail_messages,
            timeout=timeout,
            clear_at_least=clear_at_least,
            restore_tokens=restore_tokens,
            clear_tool_results=clear_tool_results,
        ),
    )
    return await afold_turn(plan, chosen)
