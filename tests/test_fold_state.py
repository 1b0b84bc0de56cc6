"""``FoldState``: the note, the backoff and the horizon as one object, read in one place.

Issue 23: the fold's state was split over three types and read by four parsers. Now one
dataclass writes one JSON form (with a version) and one parser reads it, naming the field
it cannot read; the entry points log such a state and fold afresh.
"""

from __future__ import annotations

import logging

import pytest
from langchain_core.messages import BaseMessage

from langchain_builderforce_memory.transcript.fold import CompactMemo, build_working_transcript
from langchain_builderforce_memory.transcript.fold_state import (
    FOLD_STATE_VERSION,
    VERSION_KEY,
    FoldState,
    SummarizerBackoff,
)
from langchain_builderforce_memory.transcript.horizon import ClearHorizon

from .helpers import read_loop

STATE = FoldState(
    CompactMemo(note="read a.py", covered_end=12, last_covered_id="m11"),
    SummarizerBackoff(failures=2, resume_at=9_000),
    ClearHorizon(end=8, last_id="t7"),
)


def test_one_json_form_with_its_version_read_back_as_written() -> None:
    data = STATE.to_dict()
    assert data is not None
    assert data[VERSION_KEY] == FOLD_STATE_VERSION
    assert FoldState.from_dict(data) == STATE
    # The form before the version key (what checkpointed threads hold) reads the same.
    legacy = {k: v for k, v in data.items() if k != VERSION_KEY}
    assert FoldState.from_dict(legacy) == STATE
    assert FoldState().to_dict() is None
    assert FoldState.from_dict(None) == FoldState()


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"note": "n", "covered_end": "12", "last_covered_id": "m"}, "covered_end"),
        ({"note": "n", "last_covered_id": "m"}, "covered_end"),
        ({"summarizer_backoff": {"failures": 0, "resume_at": 5}}, "summarizer_backoff"),
        ({"clear_horizon": {"end": True, "last_id": "t"}}, "clear_horizon"),
        ({"clear_horizon": "t7"}, "clear_horizon"),
        ({VERSION_KEY: "1"}, VERSION_KEY),
        ({VERSION_KEY: FOLD_STATE_VERSION + 1}, "upgrade"),
        (["not", "a", "mapping"], "FoldState.to_dict"),
    ],
)
def test_a_state_that_cannot_be_read_names_the_field(bad: object, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        FoldState.from_dict(bad)


def _turns(record: list[BaseMessage], as_dict: bool) -> list[list[BaseMessage]]:
    state: object = None
    views = []
    for n in range(40, len(record) + 1, 6):
        out = build_working_transcript(
            record[:n], memo=state, summarizer=lambda p: "n" * 400, max_tokens=16_000
        )
        state = out.state.to_dict() if as_dict else out.state
        views.append(out.messages)
    return views


def test_the_state_object_and_its_json_form_make_the_same_views() -> None:
    record = read_loop(60)
    assert _turns(record, as_dict=True) == _turns(record, as_dict=False)


def test_an_unreadable_state_is_logged_and_the_turn_folds_afresh(
    caplog: pytest.LogCaptureFixture,
) -> None:
    record = read_loop(60)
    fresh = build_working_transcript(record, summarizer=lambda p: "note", max_tokens=16_000)
    with caplog.at_level(logging.WARNING, logger="langchain_builderforce_memory"):
        out = build_working_transcript(
            record,
            memo={"summarizer_backoff": "soon"},
            summarizer=lambda p: "note",
            max_tokens=16_000,
        )
    assert out.messages == fresh.messages
    assert any("summarizer_backoff" in r.getMessage() for r in caplog.records)
