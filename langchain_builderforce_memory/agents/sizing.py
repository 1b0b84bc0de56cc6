"""A turn's budget, sized: the volatile tail's reserve, and the floor a request must hold.

Pure functions over a :class:`~langchain_builderforce_memory.agents.turn.TurnPlan`:
:class:`~langchain_builderforce_memory.agents.core.MemoryCore` calls them once a turn,
after the brief and any recalled code maps are known.
"""

from __future__ import annotations

from dataclasses import replace

from langchain_core.messages import HumanMessage

from langchain_builderforce_memory.agents.turn import TurnPlan
from langchain_builderforce_memory.directive import latest_directive_index
from langchain_builderforce_memory.handoff import volatile_tail
from langchain_builderforce_memory.messages import leading_system_count
from langchain_builderforce_memory.tokens import TokenCounter
from langchain_builderforce_memory.transcript.elide import (
    check_budget_floor,
    minimal_human_tokens,
)

__all__ = ["cut_tail", "full_tail", "sized_plan"]


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
    opening = counter.count_message(plan.record[directive]) if directive >= lead else None
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
