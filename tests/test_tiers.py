"""The plan's tiers (``transcript/tiers.py``): run in order, the first to plan decides.

Each case builds a turn that one tier is there for, and checks that this tier, and no
earlier one, decided it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from langchain_builderforce_memory.tokens import ApproximateTokenCounter
from langchain_builderforce_memory.transcript import fold, fold_plan, tiers
from langchain_builderforce_memory.transcript.fold import build_working_transcript
from langchain_builderforce_memory.transcript.fold_plan import plan_working_transcript
from langchain_builderforce_memory.transcript.fold_state import FoldState
from langchain_builderforce_memory.transcript.memo import FoldPolicy
from langchain_builderforce_memory.transcript.tiers import FoldPlan, Turn

from .helpers import ScriptedSummarizer, read_loop

COUNTER = ApproximateTokenCounter()
FALLBACK = "fold_or_fallback"


@dataclass(slots=True)
class _Spy:
    """A tier that records, in ``decided``, when the tier it wraps took the turn."""

    tier: tiers.Tier
    decided: list[str] = field(default_factory=list)

    def __call__(self, turn: Turn) -> FoldPlan | None:
        planned = self.tier(turn)
        if planned is not None:
            self.decided.append(self.tier.__name__)
        return planned


def _deciding(
    monkeypatch: pytest.MonkeyPatch, record: list[BaseMessage], **kwargs: object
) -> tuple[str, FoldPlan]:
    decided: list[str] = []
    monkeypatch.setattr(fold_plan, "TIERS", tuple(_Spy(t, decided) for t in tiers.TIERS))
    plan = plan_working_transcript(record, token_counter=COUNTER, **kwargs)  # type: ignore[arg-type]
    assert len(decided) <= 1
    return (decided[0] if decided else FALLBACK), plan


def _held_state() -> tuple[list[BaseMessage], FoldState]:
    """A record folded once (no clearing), then grown by reads its held view holds."""
    record = read_loop(20, 1_000)
    first = build_working_transcript(
        record,
        summarizer=ScriptedSummarizer("note"),
        max_tokens=12_000,
        clear_tool_results=False,
        token_counter=COUNTER,
    )
    grown = [*record, *read_loop(26, 1_000)[41:]]  # three more reads, ids not reused
    return grown, FoldState(memo=first.memo)


@pytest.mark.parametrize(
    ("case", "tier", "mode"),
    [
        ("fits", "_verbatim", "verbatim"),
        ("asked", "_asked_fold", "fold"),
        ("asked, record fits", "_asked_fold", "fold"),  # asked wins over the fit
        ("stale results", "_record_cleared", "verbatim"),
        ("held note", "_held_cleared", "memo"),
        ("nothing to clear", FALLBACK, "fold"),
        ("no summarizer", FALLBACK, "window"),
    ],
)
def test_each_tier_takes_the_turn_it_is_for(
    monkeypatch: pytest.MonkeyPatch, case: str, tier: str, mode: str
) -> None:
    record = read_loop(20, 1_000)
    kwargs: dict[str, object] = {"policy": FoldPolicy(max_tokens=12_000)}
    if case == "fits":
        record = read_loop(3, 500)
    elif case.startswith("asked"):
        kwargs["requested"] = True
        if case.endswith("fits"):
            kwargs["policy"] = FoldPolicy(max_tokens=64_000)
    elif case == "held note":
        record, kwargs["memo"] = _held_state()
    elif case == "nothing to clear":
        kwargs["policy"] = FoldPolicy(max_tokens=12_000, clear_tool_results=False)
    elif case == "no summarizer":
        kwargs["policy"] = FoldPolicy(max_tokens=12_000, clear_tool_results=False)
        kwargs["can_summarize"] = False
    decided, plan = _deciding(monkeypatch, record, **kwargs)
    assert (decided, plan.mode) == (tier, mode)
    if tier == "_record_cleared":
        assert plan.clear.cleared  # stale results made the room


def test_a_turn_the_first_tiers_decide_never_reads_the_tool_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_results(self: Turn) -> FoldPlan:
        raise AssertionError("the tool results were computed for a turn that fits")

    monkeypatch.setattr(Turn, "base", property(no_results))
    plan = plan_working_transcript(read_loop(3, 500), token_counter=COUNTER)
    assert plan.mode == "verbatim"
    assert plan.results == ()


def test_the_assembler_takes_the_held_notes_files_from_the_plan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    record, state = _held_state()
    assert state.memo is not None
    assert state.memo.restored  # files re-attached
    calls: list[int] = []
    found = tiers.restored_messages

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return found(*args, **kwargs)

    monkeypatch.setattr(tiers, "restored_messages", counted)
    monkeypatch.setattr(fold, "restored_messages", counted)
    out = build_working_transcript(
        record,
        memo=state,
        summarizer=ScriptedSummarizer("unused"),
        max_tokens=12_000,
        token_counter=COUNTER,
    )
    assert out.mode == "memo"
    assert out.steps.restored  # shown after the note
    assert len(calls) == 1  # by the plan; the assembler reuses them
