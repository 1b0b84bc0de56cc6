"""A turn's budget, sized: the volatile tail's reserve, and the floor a request must hold.

Also the view as the serving model is sent it (:func:`turn_view`): the tail last, fitted
to what that model's API reads and takes.

Pure functions over a :class:`~langchain_builderforce_memory.agents.turn.TurnPlan`:
:class:`~langchain_builderforce_memory.agents.core.MemoryCore` calls them once a turn,
after the brief and any recalled code maps are known.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Final

from langchain_core.messages import BaseMessage, HumanMessage

from langchain_builderforce_memory.agents.native import (
    Delegation,
    delegation_for,
    kept_tool_uses,
    user_edits,
)
from langchain_builderforce_memory.agents.policy import MemoryPolicy
from langchain_builderforce_memory.agents.turn import TurnPlan
from langchain_builderforce_memory.directive import latest_directive_index
from langchain_builderforce_memory.facts import RecordFacts
from langchain_builderforce_memory.handoff import volatile_tail
from langchain_builderforce_memory.messages import leading_system_count
from langchain_builderforce_memory.native import for_reader, pinned_count
from langchain_builderforce_memory.tokens import TokenCounter
from langchain_builderforce_memory.transcript.elide import (
    check_budget_floor,
    minimal_human_tokens,
    opening_size,
)
from langchain_builderforce_memory.transcript.fold_plan import FoldPlan, plan_working_transcript
from langchain_builderforce_memory.transcript.memo import FoldPolicy
from langchain_builderforce_memory.transcript.view import PROTECTED_RESULTS

__all__ = [
    "DIRECTIVE_CHARS",
    "WIDE",
    "cut_tail",
    "delegated_plan",
    "delegation_of",
    "facts_role",
    "full_tail",
    "sized_plan",
    "turn_fold_plan",
    "turn_view",
]

WIDE: Final = 2
"""Under ``native="auto"``, a view our clear tier cannot fit grows to this many budgets
(at most the model's window) for the provider to compact: over its trigger whatever the
ratio of its tokens to ours down to 0.625 (1.25x a first request's margin), and a bound on
what each compaction reads. At 1.1 budgets the provider never compacted on the simulated
run (the view stayed under its trigger in its tokens); see ``benchmarks/native.md``."""

DIRECTIVE_CHARS: Final = 2_000
"""The directive restated in the provider's compaction instructions is cut to this."""


def full_tail(plan: TurnPlan) -> HumanMessage | None:
    """The volatile tail before any cut: the brief, then the recalled code maps."""
    if plan.run is None:
        return None
    return volatile_tail([plan.brief, plan.run.get("code_maps")], copies=plan.copies)


def cut_tail(plan: TurnPlan, counter: TokenCounter) -> HumanMessage | None:
    """The volatile tail within the plan's reserve.

    A tail over the reserve loses its last lines (the maps first, then the brief's
    least-used entries: both are ranked).
    """
    tail = full_tail(plan)
    reserve = plan.policy.reserve
    if tail is None or plan.run is None or counter.count_message(tail) <= reserve:
        return tail
    sections = [plan.brief, plan.run.get("code_maps")]
    lines = "\n\n".join(s for s in sections if s).split("\n")
    best: HumanMessage | None = None
    lo, hi = 0, len(lines) - 1  # the most lines that fit is in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        cut = volatile_tail(["\n".join([*lines[:mid], "- …"])])
        if cut is not None and counter.count_message(cut) <= reserve:
            lo, best = mid, cut
        else:
            hi = mid - 1
    return best


def turn_view(
    plan: TurnPlan, messages: Sequence[BaseMessage], counter: TokenCounter
) -> list[BaseMessage]:
    """The fold's view ``messages`` as the serving model is sent them.

    The volatile tail last (:func:`cut_tail`); another provider's compactions made readable
    where the record holds one (:attr:`~TurnPlan.plain`); an assistant message of more
    calls than the model's API takes in parts, and each wire message within its media
    limits where the model's API limits them (:attr:`~TurnPlan.wire`).
    """
    tail = cut_tail(plan, counter)
    view = [*messages, tail] if tail is not None else list(messages)
    view = for_reader(view, plan.reader) if plan.plain else view
    return plan.wire.applied(view)


def sized_plan(plan: TurnPlan, counter: TokenCounter, *, asked: object, where: str) -> TurnPlan:
    """``plan`` with its policy's tail reserve sized to this turn's tail.

    ``asked`` is the ``max_tokens`` the user gave, for the error.

    Raises:
        ContextBudgetError: the user's budget cannot hold the system prompt plus one
            human message, naming the ``max_tokens`` the user gave.
    """
    scaled = plan.scaled or plan.policy
    tail = full_tail(plan)
    lead = leading_system_count(plan.record)
    system = [*([plan.system] if plan.system is not None else []), *plan.record[:lead]]
    system_tokens = sum(counter.count_message(m) for m in system)
    directive = plan.directive
    if directive is None:
        directive = latest_directive_index(plan.record)
    opening = opening_size(plan.record[directive], counter) if directive >= lead else None
    floor = minimal_human_tokens(counter)
    floor = floor if opening is None else min(floor, opening)
    check_budget_floor(
        system_tokens,
        plan.limit,
        counter,
        where=where,
        opening_tokens=opening,
        budget_name=f"max_tokens={asked!r} ({plan.limit} of our tokens)",
    )
    policy = scaled.sized(
        tail_tokens=counter.count_message(tail) if tail is not None else 0,
        floor_tokens=system_tokens + floor,
        limit=plan.limit,
    )
    return plan if policy is plan.policy else replace(plan, policy=policy)


def delegation_of(
    policy: MemoryPolicy,
    plan: TurnPlan,
    model: object,
    settings: Mapping[str, object] | None,
    counter: TokenCounter,
) -> Delegation | None:
    """What the provider's own context management takes over this request, if anything.

    ``policy``: the adapter's (its ``native`` mode and the budget the user gave, in the
    provider's tokens: the compaction trigger). The provider clears every tool result but
    the ``keep`` newest each time the input is over its trigger; ``keep`` is as many as
    hold what our clear tier leaves standing (the budget less ``clear_at_least``, at
    least twice the restore budget).
    """
    if policy.native == "off" and not user_edits(model, settings):
        return None  # the common case, without walking the record
    at = plan.directive if plan.directive is not None else -1
    given = policy if policy.fraction is None else plan.policy
    fold = given.fold_policy
    room = max(2 * fold.restore_budget, fold.max_tokens - fold.clear_room)
    return delegation_for(
        policy.native,
        model,
        settings,
        budget=given.budget,
        keep=kept_tool_uses(plan.record, room, counter, least=PROTECTED_RESULTS),
        clear_at_least=fold.clear_room,
        directive=plan.record[at].text[:DIRECTIVE_CHARS] if at >= 0 else None,
    )


def delegated_plan(
    plan: TurnPlan, delegation: Delegation, window: int | None, *, auto_ceiling: bool = False
) -> TurnPlan:
    """``plan`` with the tiers the provider takes over stood down (``native``).

    Where the provider compacts, our fold does not, and a view our clear tier cannot fit
    may grow to :data:`WIDE` budgets (at most the model's ``window``, our tokens) so the
    provider sees it cross its trigger: ``native.limit``. Where the provider clears too
    (``"only"``), our clear tier stands down and the window holds at the model's window.
    With no provider at all (``"only"`` on a model without native support), the window
    holds at the budget.
    """
    policy = plan.scaled or plan.policy
    if delegation.provider is None or not delegation.compacts:
        clear = policy.clear_tool_results and not delegation.clears
        lifted = replace(policy, clear_tool_results=clear)
        return replace(plan, policy=lifted, scaled=lifted, native=delegation)
    top = max(policy.budget, window if window is not None else int(WIDE * policy.budget))
    # The "auto" message ceiling (``auto_ceiling``: the user left it to us) is where our
    # fold pays for itself; the provider compacts on tokens only, so past it the window
    # would drop messages that nothing summarizes.
    count = None if auto_ceiling else policy.max_messages
    if not delegation.clears:
        # Our clear tier still clears, toward this limit: what the provider compacts
        # stays within it, whatever the model's window.
        top = min(top, max(policy.budget, int(WIDE * policy.budget)))
        native = replace(delegation, limit=top)
        lifted = replace(policy, max_messages=count)
        return replace(
            plan, policy=lifted, scaled=lifted, native=native, limit=max(plan.limit, top)
        )
    native = replace(delegation, limit=top)
    lifted = replace(policy, max_tokens=top, clear_tool_results=False, max_messages=count)
    limit = max(plan.limit, top)
    return replace(plan, policy=lifted, scaled=lifted, limit=limit, native=native)


def facts_role(plan: TurnPlan) -> str:
    """Which of its thread's record facts a turn's fold plans with.

    The record's own when the conversation the fold plans is the whole record (nothing
    scoped off, no system message or pinned block before it): the two facts would then
    hold the same messages, and a new run of the thread would compare the checkpointer's
    copies with them twice. Otherwise the conversation's own.
    """
    record = plan.record
    whole = record is plan.source and not leading_system_count(record)
    return "record" if whole and not pinned_count(record, 0) else "conversation"


def turn_fold_plan(plan: TurnPlan, facts: RecordFacts, *, can_summarize: bool) -> FoldPlan:
    """This turn's fold, planned (pure; the summarizer call is the driver's).

    When the provider compacts (``native``), our fold stands down; and when our clear
    tier cannot bring the view within the budget, the view is sent as it is, up to the
    hard limit: over the provider's trigger, so the provider compacts it.
    """
    native = plan.native
    folded = _fold_plan(plan, plan.policy.fold_policy, facts, can_summarize=can_summarize)
    if native is None or native.limit is None or native.clears or folded.mode != "window":
        return folded
    wide = replace(plan.policy, max_tokens=max(native.limit, plan.policy.budget))
    return _fold_plan(plan, wide.fold_policy, facts, can_summarize=False)


def _fold_plan(
    plan: TurnPlan, policy: FoldPolicy, facts: RecordFacts, *, can_summarize: bool
) -> FoldPlan:
    native = plan.native
    return plan_working_transcript(
        plan.record,
        memo=plan.fold.memo,
        system_prompt=plan.system,
        policy=policy,
        can_summarize=can_summarize and (native is None or not native.compacts),
        requested=plan.compact is not None,
        focus=plan.compact.focus if plan.compact is not None else None,
        backoff=plan.fold.backoff,
        horizon=plan.fold.horizon,
        facts=facts,
    )
