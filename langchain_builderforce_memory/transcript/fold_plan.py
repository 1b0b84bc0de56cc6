"""When to fold: the pure plan of one turn's working view, before any summarizer call.

:func:`plan_working_transcript` runs the tiers of :mod:`~.tiers` in order (verbatim / clear /
reuse the held memo / fold ``[from, to)`` / window), and :class:`FoldPlan` carries that decision to
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

from collections.abc import Mapping, Sequence
from dataclasses import replace

from langchain_core.messages import BaseMessage, SystemMessage

from langchain_builderforce_memory.facts import DIRECTIVES, RecordFacts, counter_of
from langchain_builderforce_memory.native import fixed_prefix_count
from langchain_builderforce_memory.tokens import TokenCounter, TokenCounterLike
from langchain_builderforce_memory.transcript.elide import check_budget_floor, opening_size
from langchain_builderforce_memory.transcript.fold_state import FoldState, SummarizerBackoff
from langchain_builderforce_memory.transcript.horizon import ClearHorizon
from langchain_builderforce_memory.transcript.memo import CompactMemo, FoldPolicy
from langchain_builderforce_memory.transcript.plan import Anchors, system_messages
from langchain_builderforce_memory.transcript.tiers import (
    TIERS,
    Asked,
    FoldPlan,
    Turn,
    fold_or_fallback,
)

__all__ = ["FoldPlan", "plan_working_transcript"]


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

    The tiers (:mod:`.tiers`), in order, each take the turn as it stands or pass: the
    fold the agent asked for; the whole record when it fits (verbatim, memo reset); the
    clear tier over the record; the held note's view, cleared; and last a fold of the held
    note plus exactly the messages since it, up to a token-sized tail (sized after the
    re-attached files), or, with nothing new to fold or no summarizer, the held note, else
    the window. A fold that could not bring the view within budget (its minimum tail alone
    is over) is held back for the usual headroom of new work; the view is elided to the
    budget instead.

    Raises:
        ValueError: ``max_tokens`` cannot hold the system messages plus one human message.
    """
    state = FoldState.read(memo, where="build_working_transcript")
    turn = _turn_of(
        messages,
        system_prompt,
        policy or FoldPolicy(),
        counter_of(token_counter, facts, where="build_working_transcript"),
        replace(
            state,
            backoff=backoff if backoff is not None else state.backoff,
            horizon=horizon if horizon is not None else state.horizon,
        ),
        facts,
        Asked(requested and can_summarize, focus, can_summarize, keep_memo),
    )
    for tier in TIERS:
        planned = tier(turn)
        if planned is not None:
            return planned
    return fold_or_fallback(turn)


def _turn_of(
    messages: Sequence[BaseMessage],
    system_prompt: str | SystemMessage | None,
    policy: FoldPolicy,
    counter: TokenCounter,
    state: FoldState,
    facts: RecordFacts | None,
    asked: Asked,
) -> Turn:
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
        backoff=state.backoff,
        total_tokens=sums[-1],
        held_horizon=state.horizon,
        anchors=anchors,
        copies=facts.copies,
        check=facts.check,
    )
    system_tokens = sum(counter.count_message(m) for m in system)
    check_budget_floor(
        system_tokens,
        policy.max_tokens,
        counter,
        where="build_working_transcript",
        opening_tokens=_directive_tokens(convo, facts, counter),
    )
    return Turn(plan, sums, anchors, system_tokens, facts, state.memo, asked)


def _directive_tokens(
    convo: Sequence[BaseMessage], facts: RecordFacts, counter: TokenCounter
) -> int | None:
    """The latest user turn's size as a view sends it, or ``None`` without one."""
    last_user = facts.directive
    if last_user < 0:
        return None
    size = facts.sums[last_user + 1] - facts.sums[last_user]
    return opening_size(convo[last_user], counter, size)
