"""A fold leaves room for new work, whatever the options (issue 25).

A large ``restore_tokens`` used to take the headroom the next fold needs: at a 64k budget,
re-attaching 24k or 32k of files made the fold run again after a few hundred tokens of new
work, turn after turn (``benchmarks/sweep.md``). The restore now gives way to the tail's
fewest messages and to the headroom, and the clear tier spares no more than it can land
below.
"""

from __future__ import annotations

import itertools

import pytest
from langchain_core.messages import BaseMessage

from langchain_builderforce_memory.testing import coding_transcript
from langchain_builderforce_memory.transcript.memo import FoldPolicy
from langchain_builderforce_memory.transcript.plan import compact_tail_start_for_budget

from .helpers import anthropic_native, read_loop, replay_turns

NEW_WORK_FLOOR = 10_000
"""The fewest tokens of new work issue 25 allows between two summarizer calls."""


def _fold_points(
    record: list[BaseMessage], *, max_tokens: int = 61_000, **options: int | bool
) -> list[int]:
    """The record tokens at each turn that folded, replayed turn by turn (61k budget)."""
    return [
        tokens
        for turn, tokens in replay_turns(record, max_tokens, **options)
        if turn.mode == "folded"
    ]


@pytest.fixture(scope="module")
def record() -> list[BaseMessage]:
    return coding_transcript(turns=300, directives=4)


@pytest.mark.slow
@pytest.mark.parametrize("restore", [16_000, 24_000, 32_000])
def test_a_large_restore_leaves_room_for_new_work_between_folds(
    record: list[BaseMessage], restore: int
) -> None:
    # The token headroom alone: under a message ceiling the re-attached files are messages
    # like any others, and the folds the ceiling makes are the ceiling's.
    points = _fold_points(record, restore_tokens=restore, max_messages=None)
    gaps = [b - a for a, b in itertools.pairwise(points)]
    assert len(points) <= len(_fold_points(record, max_messages=None)) + 1
    assert min(gaps, default=NEW_WORK_FLOOR) >= NEW_WORK_FLOOR, gaps


@pytest.mark.parametrize("restore", [None, 16_000, 32_000])
def test_the_clear_tier_spares_no_more_than_it_can_land_below(restore: int | None) -> None:
    policy = FoldPolicy(max_tokens=64_000, restore_tokens=restore)
    assert policy.restore_budget + policy.keep_budget <= policy.max_tokens - policy.clear_room
    assert policy.fold_headroom(60_000) == 19_500


@pytest.mark.parametrize("shape", ["tool_messages", "anthropic_native"])
def test_a_fold_of_results_nothing_clears_leaves_room_for_new_work(shape: str) -> None:
    # Eight 7.5k-token results (the fewest messages a fold kept, however large) filled a 32k
    # view by themselves: with nothing the clear tier could clear, the summarizer ran on
    # every turn (56 calls in 60). The floor now gives way to the tail's token budget.
    record = read_loop(60, 7_500)
    if shape == "anthropic_native":
        record = anthropic_native(record)
    points = _fold_points(record, max_tokens=32_000, clear_tool_results=False)
    gaps = [b - a for a, b in itertools.pairwise(points)]
    assert len(points) <= 60 // 2, len(points)
    assert min(gaps, default=NEW_WORK_FLOOR) >= NEW_WORK_FLOOR, gaps


@pytest.mark.parametrize("shape", ["tool_messages", "anthropic_native"])
def test_a_tail_over_its_budget_keeps_the_latest_call_with_its_result(shape: str) -> None:
    record = read_loop(6, 7_500)
    if shape == "anthropic_native":
        record = anthropic_native(record)
    start = compact_tail_start_for_budget(record, 1_000, floor_within_budget=True)
    assert [m.type for m in record[start:]] == ["ai", record[-1].type]
    assert start == len(record) - 2
