"""What a turn reports (:mod:`~langchain_builderforce_memory.events`), from what it decided.

Pure: the turn's plan, its fold's result and its fit in; the events out. A compaction or
clearing the provider did itself is reported from its answer in the record; a fold is
reported once (a retried model call reuses its turn's fold and reports nothing), a view
only when the clear tier moved its horizon, a fit whenever the packer cut the view.
"""

from __future__ import annotations

import logging

from langchain_builderforce_memory.agents.turn import FitPlan, TurnPlan
from langchain_builderforce_memory.events import Event, FoldEvent, fit_event, view_event
from langchain_builderforce_memory.handoff import HandoffPack
from langchain_builderforce_memory.native import native_event
from langchain_builderforce_memory.tokens import TokenCounter
from langchain_builderforce_memory.transcript.fold import WorkingTranscript

__all__ = ["turn_events"]

logger = logging.getLogger("langchain_builderforce_memory.agents.core")


def turn_events(
    plan: TurnPlan,
    transcript: WorkingTranscript,
    fit: FitPlan | None,
    pack: HandoffPack | None,
    counter: TokenCounter,
) -> list[Event]:
    """What this turn reports: the provider's own edits, its fold, its clear batch, its fit."""
    events: list[Event] = []
    native = native_event(plan.source) if plan.cached is None else None
    if native is not None:
        events.append(native)
    # A retried call reuses its turn's fold (plan.cached): report the fold once.
    if transcript.fold is not None and plan.cached is None:
        events.append(
            FoldEvent(
                builderforce_memory="fold",
                reason="requested" if plan.compact is not None else "budget",
                covered_end=transcript.fold.covered_end,
                dropped_messages=transcript.fold.dropped_messages,
                note_tokens=counter.count_text(transcript.fold.note),
                summarizer_calls=transcript.summarizer_calls,
                **transcript.steps.as_event(),
            )
        )
    elif transcript.steps.acted and plan.cached is None:
        # No fold, but the view was cleared or elided. News only when the clear tier
        # moved its horizon (a new batch cleared); a view held as it was, or elided a
        # little differently, is the usual turn: a DEBUG line.
        shown = view_event(transcript.mode, transcript.steps.as_event())
        horizon = transcript.horizon
        if horizon is not None and horizon != plan.fold.horizon:
            events.append(shown)
        else:
            logger.debug("builderforce_memory view: %s", shown)
    if fit is not None and pack is not None:
        events.append(
            fit_event(
                overflow=plan.overflow,
                model=fit.options["to_model"],
                budget=pack.budget,
                dropped=pack.dropped,
                tokens=pack.estimated_tokens,
                fits=pack.fits,
                elided=(pack.elided_messages, pack.elided_tokens),
            )
        )
    return events
