"""Every recorded agent run, replayed turn by turn through the fold.

A turn is each point right before an AIMessage (when a model would be called), plus the
whole record at the end, which may end on an unanswered call. The budget is small (8k)
so runs fold many times; the summarizer is a fake. Every view must be valid for strict
providers (the records can be invalid: the view is repaired) and covered: every message
in the note or verbatim (the window only when there is nothing to fold).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage

from langchain_builderforce_memory.messages import (
    leading_system_count,
    message_id,
)
from langchain_builderforce_memory.tokens import count_tokens
from langchain_builderforce_memory.transcript.fold import (
    COMPACT_TAIL_MAX_MESSAGES,
    COMPACT_TAIL_TURNS,
    CompactMemo,
    abuild_working_transcript,
    build_working_transcript,
    compact_tail_start_for_budget,
)
from langchain_builderforce_memory.transcript.markers import (
    consolidation_marker,
    scope_to_consolidation,
)
from langchain_builderforce_memory.validity import request_problems

from .helpers import (
    AsyncScriptedSummarizer,
    ScriptedSummarizer,
    fold_coverage_gaps,
    load_transcript,
    model_turns,
    transcript_params,
)

BUDGET = 8_000


def nothing_to_fold(prefix: list[BaseMessage]) -> bool:
    convo = prefix[leading_system_count(prefix) :]
    return (
        compact_tail_start_for_budget(
            convo,
            0,
            min_tail_messages=COMPACT_TAIL_TURNS,
            max_tail_messages=COMPACT_TAIL_MAX_MESSAGES,
        )
        == 0
    )


def check_turn(
    path: Path, prefix: list[BaseMessage], view: list[BaseMessage], mode: str, dropped: int = 0
) -> None:
    where = (path.name, len(prefix), mode)
    assert request_problems(view) == [], where
    assert count_tokens(view) <= BUDGET, where
    if mode == "window":
        assert nothing_to_fold(prefix), where
    elif not dropped:  # units left out of the view only when even cut they did not fit
        assert fold_coverage_gaps(prefix, view) == [], where


@pytest.mark.slow  # every model turn of the recorded runs, end to end
@pytest.mark.parametrize("path", transcript_params())
def test_every_recorded_run_replayed_through_the_fold_keeps_every_view_valid_and_covered(
    path: Path,
) -> None:
    record = load_transcript(path)
    summarizer = ScriptedSummarizer("what the run established so far")
    memo: CompactMemo | None = None
    turns = folds = 0
    for prefix in model_turns(record):
        out = build_working_transcript(prefix, memo=memo, summarizer=summarizer, max_tokens=BUDGET)
        check_turn(path, prefix, out.messages, out.mode, out.steps.dropped_messages)
        memo = out.memo
        turns += 1
        folds += out.fold is not None
    assert turns > 1
    if count_tokens(record) > 2 * BUDGET:
        assert folds > 0
    # Never every turn, even at 8k: the tail leaves headroom, so most turns reuse the note
    # (measured: one fold per 3 to 12 turns across the recorded runs).
    assert folds * 2 <= turns


@pytest.mark.slow  # every model turn of the recorded runs, end to end
@pytest.mark.parametrize("path", transcript_params(4))
async def test_the_async_twin_replays_a_recorded_run_identically(path: Path) -> None:
    record = load_transcript(path)
    sync_memo: CompactMemo | None = None
    async_memo: CompactMemo | None = None
    for prefix in model_turns(record):
        a = build_working_transcript(
            prefix, memo=sync_memo, summarizer=ScriptedSummarizer("N"), max_tokens=BUDGET
        )
        b = await abuild_working_transcript(
            prefix, memo=async_memo, summarizer=AsyncScriptedSummarizer("N"), max_tokens=BUDGET
        )
        assert (a.messages, a.memo, a.mode) == (b.messages, b.memo, b.mode)
        sync_memo, async_memo = a.memo, b.memo


@pytest.mark.slow
@pytest.mark.parametrize("path", transcript_params())
def test_a_recorded_run_scoped_to_a_persisted_fold_marker_yields_valid_views(path: Path) -> None:
    # Persist a fold halfway as an auto marker (what an adapter writes), scope the record
    # to it, and keep replaying: the marker leads the scoped record as an assistant
    # message, and must reach the model as a human-role note.
    record = load_transcript(path)
    lead = leading_system_count(record)
    half = lead + (len(record) - lead) // 2
    marker = consolidation_marker(
        "the first half", keep_from_id=message_id(record[half]), folded=half - lead
    )
    stored = [*record, marker]
    scoped = [*stored[:lead], *scope_to_consolidation(stored[lead:])]
    assert scoped[lead] is marker
    memo: CompactMemo | None = None
    for prefix in model_turns(scoped):
        out = build_working_transcript(
            prefix, memo=memo, summarizer=ScriptedSummarizer("N"), max_tokens=BUDGET
        )
        check_turn(path, prefix, out.messages, out.mode, out.steps.dropped_messages)
        memo = out.memo
