"""Consolidation markers: ports of the seed's ``consolidationMarker.test.ts`` (003).

The seed tagged a persisted row's ``metadata`` JSON string; ours stamp a message's
``additional_kwargs`` (``STAMP_KEY``), and ids are strings. Markers are built with
``consolidation_marker`` where the seed built metadata with ``consolidationMetadata``.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_builderforce_memory.messages import STAMP_KEY, message_id
from langchain_builderforce_memory.transcript.fold import build_working_transcript
from langchain_builderforce_memory.transcript.markers import (
    CONSOLIDATION_MARKER_KIND,
    CONSOLIDATION_MARKER_PREFIX,
    ConsolidationMarkerMeta,
    consolidation_marker,
    consolidation_marker_content,
    consolidation_marker_of,
    fold_keep_from_id,
    is_consolidation_marker,
    last_consolidation_index,
    scope_to_consolidation,
)
from langchain_builderforce_memory.transcript.plan import MEMORY_NOTE_KIND
from langchain_builderforce_memory.validity import request_problems


def plain(content: str, **extra: object) -> AIMessage:
    return AIMessage(content, additional_kwargs=dict(extra))


def marker(content: str, **auto: object) -> AIMessage:
    """A marker whose content is exactly ``content`` (the seed's rows hold raw text)."""
    made = consolidation_marker(content, **auto)  # type: ignore[arg-type]
    return made.model_copy(update={"content": content})


def row(id_: str, content: str, **auto: object) -> BaseMessage:
    m = marker(content, **auto) if auto else HumanMessage(content)
    return m.model_copy(update={"id": id_})


def contents(messages: list[BaseMessage]) -> list[object]:
    return [m.content for m in messages]


# --- consolidation markers ---------------------------------------------------------------


def test_flags_a_message_tagged_in_metadata() -> None:
    assert is_consolidation_marker(consolidation_marker("x"))
    assert not is_consolidation_marker(plain("x"))
    assert not is_consolidation_marker(plain("x", feedback="up"))
    # Malformed stamps are "not a marker", never an exception (the seed's 'not json').
    assert not is_consolidation_marker(plain("x", **{STAMP_KEY: "not json"}))
    assert not is_consolidation_marker(plain("x", **{STAMP_KEY: {"kind": "note"}}))
    assert not is_consolidation_marker(plain("x", **{STAMP_KEY: {"kind": 3}}))
    assert not is_consolidation_marker(plain("x", **{STAMP_KEY: None}))


def test_finds_the_last_marker_index() -> None:
    msgs = [plain("a"), marker("sum1"), plain("b"), marker("sum2"), plain("c")]
    assert last_consolidation_index(msgs) == 3
    assert last_consolidation_index([plain("a"), plain("b")]) == -1


def test_scopes_the_seed_from_the_last_marker_inclusive() -> None:
    msgs = [plain("a"), plain("b"), marker("sum"), plain("c")]
    assert contents(scope_to_consolidation(msgs)) == ["sum", "c"]


def test_returns_the_full_list_unchanged_when_there_is_no_marker() -> None:
    msgs: list[BaseMessage] = [plain("a"), plain("b")]
    scoped = scope_to_consolidation(msgs)
    # The seed returned the same array; ours is a copy (we never hand back the caller's
    # list), holding the same message objects in the same order.
    assert scoped == msgs
    assert scoped is not msgs
    assert all(a is b for a, b in zip(scoped, msgs, strict=True))


def test_wraps_a_summary_with_the_visible_marker_prefix() -> None:
    assert consolidation_marker_content("  hello  ") == f"{CONSOLIDATION_MARKER_PREFIX}hello"
    assert consolidation_marker("  hello  ").content == f"{CONSOLIDATION_MARKER_PREFIX}hello"


# --- auto consolidation markers (a persisted fold) ---------------------------------------


def test_keeps_every_message_from_keep_from_id_on_after_the_marker_and_drops_older_notes() -> None:
    msgs = [
        row("1", "old user"),
        row("2", "old reply"),
        row("3", "superseded note", keep_from_id="2"),
        row("4", "user turn"),
        row("5", "narration"),
        row("6", "note", keep_from_id="4", folded=12),
        row("7", "final reply"),
    ]
    scoped = scope_to_consolidation(msgs)
    assert contents(scoped) == ["note", "user turn", "narration", "final reply"]
    assert scoped[0] is msgs[5]


def test_reads_as_manual_when_keep_from_id_is_gone_or_after_the_marker() -> None:
    gone = [row("1", "a"), row("2", "note", keep_from_id="99"), row("3", "b")]
    assert contents(scope_to_consolidation(gone)) == ["note", "b"]
    after = [row("1", "a"), row("2", "note", keep_from_id="3"), row("3", "b")]
    assert contents(scope_to_consolidation(after)) == ["note", "b"]


def test_round_trips_the_auto_metadata() -> None:
    auto = consolidation_marker("x", keep_from_id="4", folded=3)
    assert consolidation_marker_of(auto) == ConsolidationMarkerMeta(
        auto=True, keep_from_id="4", folded=3
    )
    assert consolidation_marker_of(consolidation_marker("x")) == ConsolidationMarkerMeta()
    assert consolidation_marker_of(plain("x")) is None


# --- fold_keep_from_id -------------------------------------------------------------------

ANCHORS = [(0, "10"), (1, "11"), (2, "12"), (7, "20")]


def test_is_exact_when_a_persisted_message_sits_at_the_cut() -> None:
    assert fold_keep_from_id(ANCHORS, 2) == "12"


def test_falls_back_to_the_nearest_persisted_message_before_the_cut_covered_twice_never_lost() -> (
    None
):
    assert fold_keep_from_id(ANCHORS, 5) == "12"
    assert fold_keep_from_id(ANCHORS, 30) == "20"


def test_is_undefined_with_nothing_persisted_before_the_cut() -> None:
    assert fold_keep_from_id([(4, "1")], 2) is None


# --- beyond the seed ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stamp_fields", "expected"),
    [
        ({"auto": True, "keep_from_id": 4, "folded": 3}, ConsolidationMarkerMeta(True, None, 3)),
        ({"auto": "yes", "keep_from_id": "", "folded": 0}, ConsolidationMarkerMeta()),
        ({"auto": True, "folded": True}, ConsolidationMarkerMeta(auto=True)),
        ({"keep_from_id": ["4"], "folded": -2.5}, ConsolidationMarkerMeta()),
    ],
)
def test_malformed_optional_fields_are_dropped_never_raised(
    stamp_fields: dict[str, object], expected: ConsolidationMarkerMeta
) -> None:
    m = plain("x", **{STAMP_KEY: {"kind": CONSOLIDATION_MARKER_KIND, **stamp_fields}})
    assert consolidation_marker_of(m) == expected


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"keep_from_id": ""}, "keep_from_id"),
        ({"keep_from_id": 4}, "keep_from_id"),
        ({"folded": 0}, "folded"),
        ({"folded": True}, "folded"),
    ],
)
def test_the_constructor_rejects_bad_auto_fields_naming_them(
    kwargs: dict[str, object], field: str
) -> None:
    with pytest.raises(ValueError, match=field):
        consolidation_marker("s", **kwargs)  # type: ignore[arg-type]


def test_auto_scope_matches_keep_from_id_against_content_ids_of_id_less_messages() -> None:
    kept = HumanMessage("user turn")
    msgs = [HumanMessage("old"), kept, consolidation_marker("n", keep_from_id=message_id(kept))]
    assert contents(scope_to_consolidation(msgs))[1:] == ["user turn"]


def test_a_scoped_record_is_presented_with_the_marker_as_a_human_role_note() -> None:
    record = [
        HumanMessage("old task", id="1"),
        AIMessage("old answer", id="2"),
        HumanMessage("user turn", id="3"),
        AIMessage("narration", id="4"),
        consolidation_marker("the note", keep_from_id="3", folded=2).model_copy(update={"id": "5"}),
        AIMessage("final reply", id="6"),
    ]
    scoped = scope_to_consolidation(record)
    assert isinstance(scoped[0], AIMessage)  # as stored: a reader sees the summary
    view = build_working_transcript(scoped, system_prompt="SYS").messages
    assert request_problems(view) == []
    note = view[1]
    assert isinstance(note, HumanMessage)
    assert note.content == scoped[0].content
    assert note.id == "5"
    stamp = note.additional_kwargs[STAMP_KEY]
    assert stamp["kind"] == MEMORY_NOTE_KIND
    assert stamp["source"] == "consolidation_marker"
    assert stamp["marker"] == {"auto": True, "keep_from_id": "3", "folded": 2}
    assert contents(view[2:]) == ["user turn", "narration", "final reply"]
    # The record and the scoped list are untouched.
    assert isinstance(record[4], AIMessage)
    assert is_consolidation_marker(scoped[0])
