"""The hand-off packer: seed ports (002 pack.ts / segments.ts / types.ts, 004 handoff.test.ts).

The seed's ``handoff.test.ts`` is only partly in the seeds: its volatile-tail cases are
ported by name; the rest are written from the behaviour ``pack.ts`` and ``types.ts``
describe and named after it. Every pack case runs through both twins (``mode``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langchain_builderforce_memory.handoff import (
    HandoffPack,
    apack_handoff,
    elision_marker,
    handoff_budget,
    handoff_budget_for_model,
    handoff_line,
    is_volatile_tail,
    pack_handoff,
    volatile_tail,
)
from langchain_builderforce_memory.handoff.budget import SchemaTexts, tools_tokens
from langchain_builderforce_memory.handoff.note import WORK_CONDENSED, compose_note
from langchain_builderforce_memory.messages import (
    is_stamped,
    message_id,
    role_of,
    stamp_of,
)
from langchain_builderforce_memory.tokens import (
    ApproximateTokenCounter,
    count_tokens,
    estimate_text_tokens,
)
from langchain_builderforce_memory.validity import request_problems

from .helpers import (
    ScriptedRecall,
    ScriptedSummarizer,
    async_recall_never,
    load_transcript,
    msg14,
    tool_round,
    transcript_params,
)

SYS = msg14("system", "sys")
TASK = msg14("user", "the real request")


async def run_pack(mode: str, messages: Sequence[BaseMessage], **kwargs: object) -> HandoffPack:
    """Pack through the sync or the async twin."""
    kwargs.setdefault("reserve_output_tokens", 0)
    if mode == "sync":
        return pack_handoff(messages, **kwargs)  # type: ignore[arg-type]
    return await apack_handoff(messages, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def note_tokens(
    dropped_at_most: int, from_model: str | None = None, to_model: str | None = None
) -> int:
    """What the elision note costs (the room the packer reserves for the smallest note)."""
    text = compose_note(handoff_line(from_model, to_model), elision_marker(dropped_at_most))
    return count_tokens([HumanMessage(text)])


def convo(n: int) -> list[BaseMessage]:
    """``SYS`` then ``n`` alternating 14-token messages u0, a1, u2, a3, ..."""
    return [SYS] + [msg14("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(n)]


def notes_in(pack: HandoffPack) -> list[BaseMessage]:
    return [m for m in pack.messages if is_stamped(m, "handoff_note")]


def the_note(pack: HandoffPack) -> str:
    (note,) = notes_in(pack)
    assert isinstance(note.content, str)
    return note.content


def assert_valid(pack: HandoffPack) -> None:
    assert request_problems(pack.messages) == []
    assert pack.estimated_tokens == count_tokens(pack.messages)
    if pack.fits:
        assert pack.estimated_tokens <= pack.budget


def in_order(pack: HandoffPack, originals: Sequence[BaseMessage]) -> bool:
    """The kept originals appear in their original order."""
    positions = {id(m): i for i, m in enumerate(originals)}
    kept = [positions[id(m)] for m in pack.messages if id(m) in positions]
    return kept == sorted(kept)


# --- the budget ---------------------------------------------------------------------------


def test_subtracts_the_reply_reserve_and_the_tools_from_the_window() -> None:
    assert handoff_budget(8_000, 1_000, 500) == 6_500
    assert handoff_budget(8_000, 1_000) == 7_000
    assert handoff_budget(1_000, 900, 200) == 0


@pytest.mark.parametrize(
    ("args", "error", "names"),
    [
        ((0, 0, 0), ValueError, "target_context_tokens"),
        ((1_000, -1, 0), ValueError, "reserve_output_tokens"),
        ((1_000, 0, -5), ValueError, "tools_tokens"),
        ((1_000.0, 0, 0), TypeError, "target_context_tokens"),
        ((1_000, True, 0), TypeError, "reserve_output_tokens"),
    ],
)
def test_rejects_a_bad_budget_number_naming_it(
    args: tuple[object, object, object], error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names):
        handoff_budget(*args)  # type: ignore[arg-type]


def small_model(**profile: int) -> FakeListChatModel:
    return FakeListChatModel(responses=["ok"], profile=profile or None)  # type: ignore[arg-type]


def test_reads_the_budget_from_the_model_profile() -> None:
    model = small_model(max_input_tokens=8_000, max_output_tokens=1_000)
    assert handoff_budget_for_model(model) == 7_000
    assert handoff_budget_for_model(model, reserve_output_tokens=200) == 7_800


def test_caps_the_default_reply_reserve_at_a_quarter_of_the_window() -> None:
    # gpt-4's profile lists its whole window as the output ceiling.
    assert (
        handoff_budget_for_model(small_model(max_input_tokens=8_192, max_output_tokens=8_192))
        == 6_144
    )
    assert handoff_budget_for_model(small_model(max_input_tokens=8_000)) == 8_000


def read_file(path: str) -> str:
    """Read a file from the workspace."""
    return path


def test_counts_the_tool_schemas_bound_to_the_model_and_lets_explicit_tools_replace_them() -> None:
    model = small_model(max_input_tokens=8_000, max_output_tokens=1_000)
    schema = {"type": "function", "function": {"name": "grep", "description": "g" * 400}}
    bound = model.bind(tools=[schema])
    schema_tokens = estimate_text_tokens(json.dumps(schema, sort_keys=True))
    assert 100 < schema_tokens < 150
    assert handoff_budget_for_model(bound) == 7_000 - schema_tokens
    explicit = handoff_budget_for_model(bound, tools=[read_file])
    assert 6_900 < explicit < 7_000
    assert handoff_budget_for_model(model, tools=[read_file]) == explicit


class _TextCounts(ApproximateTokenCounter):
    """The default estimate, noting each text it is asked to count."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def count_text(self, text: str) -> int:
        self.texts.append(text)
        return super().count_text(text)


def test_kept_schema_texts_are_counted_once_per_counter() -> None:
    """The middleware counts its tools every turn: a kept schema's count is kept with it."""
    schema = {"type": "function", "function": {"name": "grep", "description": "g" * 400}}
    texts, counter, other = SchemaTexts(), _TextCounts(), _TextCounts()
    first = tools_tokens([read_file, schema], token_counter=counter, schemas=texts)
    again = tools_tokens([read_file, schema], token_counter=counter, schemas=texts)
    assert first == again == tools_tokens([read_file, schema], token_counter=other)
    assert len(counter.texts) == 2  # once each, not once a turn
    tools_tokens([read_file], token_counter=other, schemas=texts)
    assert len(other.texts) == 3  # another counter counts afresh


def test_a_missing_profile_is_an_error_naming_the_argument_to_pass() -> None:
    with pytest.raises(ValueError, match=r"max_input_tokens=") as info:
        handoff_budget_for_model(small_model())
    assert "FakeListChatModel" in str(info.value)
    assert handoff_budget_for_model(small_model(), max_input_tokens=4_000) == 4_000


@pytest.mark.parametrize(
    ("window", "error"), [("8k", TypeError), (8e3, TypeError), (0, ValueError)]
)
def test_a_bad_window_is_an_error_naming_max_input_tokens(
    window: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match=r"^max_input_tokens: "):
        handoff_budget_for_model(small_model(), max_input_tokens=window)  # type: ignore[arg-type]


# --- packing ------------------------------------------------------------------------------


async def test_hands_the_transcript_over_untouched_when_it_fits(mode: str) -> None:
    messages = convo(4)
    pack = await run_pack(mode, messages, target_context_tokens=70)
    assert pack.messages == messages
    assert all(a is b for a, b in zip(pack.messages, messages, strict=True))
    assert (pack.dropped, pack.fits, pack.summarized, pack.recalled) == (0, True, False, False)
    assert pack.estimated_tokens == 70


async def test_keeps_the_leading_system_messages_one_note_and_the_longest_tail(mode: str) -> None:
    messages = convo(20)  # directive: m18
    budget = 14 + note_tokens(20) + 14 * 4
    pack = await run_pack(mode, messages, target_context_tokens=budget)
    assert pack.messages[0] is SYS
    assert len(notes_in(pack)) == 1
    assert pack.messages[1] is notes_in(pack)[0]
    assert pack.messages[2:] == messages[-4:]
    assert pack.dropped == 16
    assert_valid(pack)


async def test_re_injects_the_latest_directive_only_when_it_fell_in_the_middle(mode: str) -> None:
    u2 = msg14("user", "u2")
    tail = [msg14("assistant", f"a{i}") for i in range(3, 6)]
    messages = [
        SYS,
        msg14("user", "u1"),
        msg14("assistant", "a0"),
        msg14("assistant", "a1"),
        u2,
        msg14("assistant", "a2"),
        *tail,
    ]
    budget = 14 + note_tokens(len(messages) - 1) + 14 * 4  # the directive + 3 tail messages
    assert count_tokens(messages) > budget  # the whole record does not fit
    pack = await run_pack(mode, messages, target_context_tokens=budget)
    assert pack.messages[2:] == [u2, *tail]
    # the "exact" count: u1, a0, a1, a2 are in neither the tail nor re-injected
    assert pack.dropped == 4
    assert_valid(pack)


async def test_re_injects_the_most_recent_directive_not_the_first(mode: str) -> None:
    first, latest = msg14("user", "first request"), msg14("user", "latest request")
    answers = [msg14("assistant", f"a{i}") for i in range(6)]
    messages = [SYS, first, answers[0], latest, *answers[1:]]
    pack = await run_pack(mode, messages, target_context_tokens=14 + note_tokens(8) + 14 * 3)
    assert latest in pack.messages
    assert first not in pack.messages
    assert_valid(pack)


async def test_does_not_re_inject_the_directive_when_the_tail_holds_it(mode: str) -> None:
    messages = convo(20)
    pack = await run_pack(mode, messages, target_context_tokens=14 + note_tokens(20) + 14 * 5)
    assert pack.messages.count(messages[-2]) == 1  # m18, the directive, inside the tail
    assert pack.messages[2:] == messages[-5:]


async def test_sends_the_system_messages_and_the_directive_when_they_alone_overflow(
    mode: str,
) -> None:
    messages = [*convo(6), volatile_tail(["state"])]
    pack = await run_pack(mode, messages, target_context_tokens=28)
    # m4, the latest user turn, cut in the view to the budget when it alone is over
    assert pack.messages[0] is SYS
    assert len(pack.messages) == 2
    shown = pack.messages[1]
    assert shown is messages[5] or stamp_of(shown)["of"] == message_id(messages[5])  # type: ignore[index]
    assert pack.fits == (count_tokens([SYS, messages[5]]) <= 28)
    assert pack.dropped == len(messages) - 2
    assert pack.estimated_tokens <= pack.budget


async def test_keeps_or_drops_tool_call_units_whole(mode: str) -> None:
    messages: list[BaseMessage] = [SYS, TASK]
    for i in range(8):
        messages += tool_round(i, "r" * (40 * (i % 3 + 1)), calls=1 + i % 3)
    full = count_tokens(messages)
    for budget in range(40, full + 20, 7):
        pack = await run_pack(mode, messages, target_context_tokens=budget)
        assert_valid(pack)
        assert in_order(pack, messages)
        assert pack.fits


async def test_leaves_a_later_system_message_where_it_was_never_hoisted(mode: str) -> None:
    late = SystemMessage("a later rule........................", id="late")
    messages = [
        SYS,
        msg14("user", "u1"),
        msg14("assistant", "a1"),
        late,
        msg14("user", "u2"),
        msg14("assistant", "a2"),
        msg14("assistant", "a3"),
        msg14("assistant", "a4"),
    ]
    # Room for the system prompt, the note, the last four messages and the late rule as the
    # user message it is repaired into ("[system] ..."), which costs a little more than 14.
    late_cost = count_tokens([HumanMessage(f"[system] {late.text}")])
    budget = 14 + note_tokens(7) + 14 * 4 + late_cost
    pack = await run_pack(mode, messages, target_context_tokens=budget)
    assert [m for m in pack.messages if role_of(m) == "system"] == [SYS]
    ids = [m.id for m in pack.messages]
    assert "late" in ids
    assert ids.index("late") < pack.messages.index(messages[4])
    # strict providers reject a system message mid-conversation: it is kept as a stamped
    # user message, in place
    assert stamp_of(pack.messages[ids.index("late")]) == {"kind": "repair", "reason": "system"}
    assert_valid(pack)


async def test_a_later_system_message_falls_in_the_dropped_middle(mode: str) -> None:
    late = SystemMessage("a later rule", id="late")
    messages = [
        SYS,
        msg14("user", "u1"),
        late,
        msg14("assistant", "a1"),
        msg14("user", "u2"),
        *(msg14("assistant", f"a{i}") for i in range(2, 6)),
    ]
    pack = await run_pack(mode, messages, target_context_tokens=14 + note_tokens(8) + 14 * 3)
    assert "late" not in [m.id for m in pack.messages]
    assert [m for m in pack.messages if role_of(m) == "system"] == [SYS]
    assert_valid(pack)


async def test_the_note_is_a_human_message_stamped_handoff_note(mode: str) -> None:
    # the tail opens on an assistant turn: the human note keeps the view valid
    messages = [SYS, TASK, *(msg14("assistant", f"a{i}") for i in range(10))]
    pack = await run_pack(mode, messages, target_context_tokens=14 + note_tokens(11) + 14 * 3)
    (note,) = notes_in(pack)
    assert isinstance(note, HumanMessage)
    assert stamp_of(note) == {"kind": "handoff_note", "source": "elision", "dropped": 8}
    assert pack.messages[2] is TASK
    assert role_of(pack.messages[3]) == "assistant"
    assert_valid(pack)


async def test_the_note_names_the_hand_off(mode: str) -> None:
    pack = await run_pack(
        mode, convo(20), target_context_tokens=200, from_model="gpt-4o", to_model="haiku"
    )
    assert the_note(pack).splitlines()[0].startswith("[Hand-off gpt-4o -> haiku:")
    assert "earlier messages omitted" in the_note(pack)


async def test_the_note_is_the_summary_when_the_summarizer_answers(mode: str) -> None:
    summarizer = ScriptedSummarizer("the agent read a.py and b.py")
    messages = convo(20)
    # the tail has priority and the note gets what it leaves: leave it 13 tokens spare
    budget = 14 + note_tokens(20) + 14 * 4 + 13
    pack = await run_pack(mode, messages, target_context_tokens=budget, summarizer=summarizer)
    assert "the agent read a.py and b.py" in the_note(pack)
    assert (pack.summarized, pack.recalled) == (True, False)
    (prompt,) = summarizer.calls
    rendered = prompt[-1].content
    assert isinstance(rendered, str)
    assert "m0" in rendered
    assert "m19" not in rendered
    assert_valid(pack)


async def test_the_note_is_the_recall_block_for_the_directive_without_a_summary(mode: str) -> None:
    recall = ScriptedRecall("src/parser.rs holds the tokenizer")
    messages = convo(20)
    # the tail has priority and the note gets what it leaves: leave it 13 tokens spare
    budget = 14 + note_tokens(20) + 14 * 4 + 13
    pack = await run_pack(mode, messages, target_context_tokens=budget, recall=recall)
    assert "src/parser.rs holds the tokenizer" in the_note(pack)
    assert (pack.summarized, pack.recalled) == (False, True)
    ((query, budget_chars),) = recall.calls
    assert query == messages[-2].text  # m18, the latest directive
    assert 0 < budget_chars <= 4 * budget
    assert_valid(pack)


@pytest.mark.parametrize(
    "summarizer",
    [
        ScriptedSummarizer(error=RuntimeError("model overloaded")),
        ScriptedSummarizer(""),
        ScriptedSummarizer(None),
    ],
    ids=["raises", "empty", "none"],
)
async def test_falls_through_to_recall_when_the_summary_fails(
    mode: str, summarizer: ScriptedSummarizer
) -> None:
    pack = await run_pack(
        mode,
        convo(20),
        target_context_tokens=14 + note_tokens(20) + 14 * 4 + 13,
        summarizer=summarizer,
        recall=ScriptedRecall(),
    )
    assert "RECALLED MEMORY" in the_note(pack)
    assert (pack.summarized, pack.recalled) == (False, True)


async def test_falls_through_to_the_elision_marker_when_every_source_fails(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="langchain_builderforce_memory"):
        pack = await run_pack(
            mode,
            convo(20),
            target_context_tokens=200,
            summarizer=ScriptedSummarizer(error=RuntimeError("boom")),
            recall=ScriptedRecall(error=KeyError("store down")),
        )
    assert f"[{pack.dropped} earlier messages omitted.]" in the_note(pack)
    assert (pack.summarized, pack.recalled) == (False, False)
    assert "boom" in caplog.text
    assert "store down" in caplog.text
    assert_valid(pack)


@pytest.mark.parametrize(
    ("recall", "warned"), [(None, False), (ScriptedRecall(""), True)], ids=["own", "callers"]
)
async def test_the_packers_own_recall_finding_nothing_is_no_warning(
    mode: str, recall: ScriptedRecall | None, warned: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # Without a recall of the caller's the packer searches what it drops; nothing there
    # matching the request is an answer, not a failure to warn about in the caller's log.
    with caplog.at_level(logging.WARNING, logger="langchain_builderforce_memory"):
        pack = await run_pack(mode, convo(20), target_context_tokens=200, recall=recall)
    assert f"[{pack.dropped} earlier messages omitted.]" in the_note(pack)
    assert ("recall gave no answer" in caplog.text) is warned


async def never_summarize(prompt: list[BaseMessage]) -> str:
    await asyncio.Event().wait()
    return "never"


async def test_a_source_that_outlives_the_timeout_falls_through_sync() -> None:
    release = threading.Event()
    try:
        pack = pack_handoff(
            convo(20),
            # Room for a recalled note, as in the fall-through test above (a fixed 200 left
            # recall 12 characters once the estimate charged the note's header its periods).
            target_context_tokens=14 + note_tokens(20) + 14 * 4 + 13,
            reserve_output_tokens=0,
            summarizer=ScriptedSummarizer(block_until=release),
            recall=ScriptedRecall(),
            timeout=0.05,
        )
    finally:
        release.set()
    assert (pack.summarized, pack.recalled) == (False, True)


async def test_a_source_that_outlives_the_timeout_falls_through_async() -> None:
    pack = await apack_handoff(
        convo(20),
        target_context_tokens=200,
        reserve_output_tokens=0,
        summarizer=never_summarize,
        recall=async_recall_never,
        timeout=0.05,
    )
    assert (pack.summarized, pack.recalled) == (False, False)
    assert "earlier messages omitted" in the_note(pack)


@pytest.mark.parametrize("source", ["summarize", "recall"])
async def test_the_note_never_pushes_the_result_over_budget(mode: str, source: str) -> None:
    huge = "word " * 20_000
    kwargs: dict[str, object] = (
        {"summarizer": ScriptedSummarizer(huge)}
        if source == "summarize"
        else {"recall": ScriptedRecall(huge)}
    )
    pack = await run_pack(mode, convo(40), target_context_tokens=300, **kwargs)
    assert pack.fits
    assert pack.estimated_tokens <= 300
    assert the_note(pack).endswith("[...]")
    assert (pack.summarized, pack.recalled) == (source == "summarize", source == "recall")


async def test_leaves_out_the_note_when_it_cannot_fit_and_still_opens_on_a_user_turn(
    mode: str,
) -> None:
    u2, a2 = msg14("user", "u2"), msg14("assistant", "a2")
    messages = [SYS, msg14("user", "u1"), msg14("assistant", "a1"), u2, a2]
    pack = await run_pack(mode, messages, target_context_tokens=14 * 4)
    # a1 would fit, but without a note it would open the conversation: it goes too
    assert pack.messages == [SYS, u2, a2]
    assert pack.dropped == 2
    assert pack.fits
    assert_valid(pack)


async def test_makes_an_invalid_record_valid_before_packing(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    finish = AIMessage("", tool_calls=[{"name": "finish", "args": {}, "id": "end"}])
    orphan = ToolMessage("stray", tool_call_id="nobody")
    messages = [SYS, TASK, orphan, *convo(10)[1:], finish]
    for budget in (1_000, 120):
        with caplog.at_level(logging.WARNING, logger="langchain_builderforce_memory"):
            pack = await run_pack(mode, messages, target_context_tokens=budget)
        assert_valid(pack)
        assert orphan not in pack.messages
        assert "repaired an invalid request" in caplog.text


async def test_never_mutates_the_callers_messages(mode: str) -> None:
    messages = [*convo(30), volatile_tail(["state"])]
    before = [m.model_dump() for m in messages]
    snapshot = list(messages)
    await run_pack(mode, messages, target_context_tokens=150, summarizer=ScriptedSummarizer())
    assert messages == snapshot
    assert [m.model_dump() for m in messages] == before


async def test_rejects_an_async_source_in_the_sync_twin() -> None:
    with pytest.raises(TypeError, match="apack_handoff"):
        pack_handoff(
            convo(4), target_context_tokens=10, reserve_output_tokens=0, recall=async_recall_never
        )
    with pytest.raises(TypeError, match="apack_handoff"):
        pack_handoff(
            convo(4), target_context_tokens=10, reserve_output_tokens=0, summarizer=never_summarize
        )


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({"timeout": 0}, ValueError, "timeout"),
        ({"timeout": -1.5}, ValueError, "timeout"),
        ({"pinned_ids": "m1"}, TypeError, "pinned_ids"),
        ({"pinned_ids": 7}, TypeError, "pinned_ids"),
        ({"pinned_ids": [["m1"]]}, TypeError, "pinned_ids"),
        ({"target_context_tokens": 0}, ValueError, "target_context_tokens"),
    ],
)
async def test_rejects_bad_arguments_naming_them(
    mode: str, kwargs: dict[str, object], error: type[Exception], names: str
) -> None:
    kwargs = {"target_context_tokens": 100, **kwargs}
    with pytest.raises(error, match=names):
        await run_pack(mode, convo(4), **kwargs)


# --- pins ---------------------------------------------------------------------------------


def pinned_convo() -> list[BaseMessage]:
    return [
        SYS,
        msg14("user", "u1"),
        AIMessage("the plan parse lower emit", id="plan"),  # 11 tokens: one unit's room
        msg14("assistant", "a1"),
        msg14("user", "u2"),
        *(msg14("assistant", f"a{i}") for i in range(2, 8)),
    ]


async def test_keeps_a_pinned_message_in_place_when_it_fits(mode: str) -> None:
    messages = pinned_convo()
    budget = 14 + note_tokens(10) + 14 * 5
    plain = await run_pack(mode, messages, target_context_tokens=budget)
    pinned = await run_pack(mode, messages, target_context_tokens=budget, pinned_ids=["plan"])
    assert messages[2] not in plain.messages
    assert messages[2] in pinned.messages
    # in place: after the note, before the directive it preceded
    assert pinned.messages.index(messages[2]) < pinned.messages.index(messages[4])
    assert in_order(pinned, messages)
    # ahead of older tail units: the pin cost the tail its oldest unit
    assert len(pinned.messages) == len(plain.messages)
    assert pinned.messages[-1] is messages[-1]
    assert_valid(pinned)


async def test_a_pin_never_crowds_out_the_newest_unit(mode: str) -> None:
    messages = pinned_convo()
    budget = 14 + note_tokens(10) + 14 * 2  # the directive and one more message
    pack = await run_pack(mode, messages, target_context_tokens=budget, pinned_ids={"plan"})
    assert messages[2] not in pack.messages
    assert pack.messages[-1] is messages[-1]


@pytest.mark.parametrize("calls", [1, 3])
async def test_a_newest_unit_over_the_budget_is_kept_cut_not_dropped(mode: str, calls: int) -> None:
    """The result the next model must answer is cut in the view, never silently dropped.

    Before, the tail stopped at the first unit that did not fit whole, and the newest one
    is the first it tries: the pack was [system, note, request], with 7,000 tokens of room
    used for ~70, and the next model saw the request with no trace of the work on it.
    """
    messages: list[BaseMessage] = [SYS, TASK]
    for i in range(5):
        messages += tool_round(i, "x = 1\n" * 150)
    newest = tool_round(5, "def handler():\n    pass\n" * 3_000, calls=calls)
    summarizer = ScriptedSummarizer("Read five modules.")
    pack = await run_pack(
        mode, [*messages, *newest], target_context_tokens=7_000, summarizer=summarizer
    )
    assert_valid(pack)
    assert pack.fits
    assert pack.messages[-len(newest) - 1] is TASK
    kept_call = pack.messages[-len(newest)]
    assert kept_call is newest[0]
    for result in pack.messages[-calls:]:
        assert isinstance(result, ToolMessage)
        assert result.text.startswith("def handler():")
        assert "cut here in this view" in result.text
    assert pack.elided_messages == calls
    assert pack.summarized  # the note keeps a share of the room for the earlier work
    assert pack.estimated_tokens > 7_000 * 3 // 4


@pytest.mark.parametrize("work_after_request", [True, False])
async def test_a_note_standing_in_for_work_on_the_request_says_so(
    mode: str, work_after_request: bool
) -> None:
    """The note goes before the re-injected request and spoke of "earlier messages" only.

    200 parallel reads after the request, too many to keep even cut: the next model was
    shown the note, then the request, as if nothing had been done on it yet.
    """
    old_work = tool_round(0, "r" * 40_000) if not work_after_request else []
    reads = tool_round(1, "x = 1\n" * 60, calls=200) if work_after_request else []
    later = [HumanMessage("and now?")] if not work_after_request else []
    messages: list[BaseMessage] = [SYS, TASK, *old_work, *later, *reads]
    pack = await run_pack(
        mode, messages, target_context_tokens=7_000, summarizer=ScriptedSummarizer("read.")
    )
    assert_valid(pack)
    note = next(m for m in pack.messages if is_stamped(m, "handoff_note"))
    assert (WORK_CONDENSED in note.text) is work_after_request


async def test_skips_a_pin_that_does_not_fit(mode: str) -> None:
    messages = pinned_convo()
    messages[2] = AIMessage("p" * 4_000, id="plan")
    pack = await run_pack(mode, messages, target_context_tokens=200, pinned_ids=("plan",))
    assert messages[2] not in pack.messages
    assert pack.fits
    assert pack.estimated_tokens <= 200


async def test_a_pinned_tool_result_keeps_its_whole_unit(mode: str) -> None:
    messages: list[BaseMessage] = [SYS, TASK]
    for i in range(10):
        messages += tool_round(i, "r" * 200)
    target = messages[5]  # the result of round 1
    assert isinstance(target, ToolMessage)
    pack = await run_pack(
        mode, messages, target_context_tokens=400, pinned_ids=[message_id(target)]
    )
    assert target in pack.messages
    assert pack.messages[pack.messages.index(target) - 1] is messages[4]  # its call
    assert_valid(pack)


async def test_pins_a_message_without_an_id_by_its_derived_id(mode: str) -> None:
    messages = pinned_convo()
    messages[2] = AIMessage("the plan, with no id")
    pack = await run_pack(
        mode,
        messages,
        target_context_tokens=14 + note_tokens(10) + 14 * 5,
        pinned_ids=[message_id(messages[2])],
    )
    assert messages[2] in pack.messages


# --- the volatile tail (seed 004 handoff.test.ts) -----------------------------------------


def test_builds_one_tagged_message_or_none_for_empty_sections() -> None:
    assert volatile_tail(["", None, "   "]) is None
    tail = volatile_tail(["brief", "budget line"])
    assert tail is not None
    assert is_volatile_tail(tail)
    assert tail.content == "<run-state>\nbrief\n\nbudget line\n</run-state>"


async def test_is_never_taken_for_the_directive_the_real_request_survives_and_the_tail_stays_last(
    mode: str,
) -> None:
    tail = volatile_tail(["x" * 20])
    assert tail is not None
    messages = [
        SYS,
        TASK,
        msg14("assistant", "a1"),
        msg14("user", "u2"),
        msg14("assistant", "a2"),
        msg14("assistant", "a3"),
        tail,
    ]
    pack = await run_pack(mode, messages, target_context_tokens=90)
    assert pack.messages[-1] is tail
    assert any(m is messages[3] for m in pack.messages)
    assert len([m for m in pack.messages if is_volatile_tail(m)]) == 1
    assert_valid(pack)


async def test_is_what_goes_when_the_history_needs_the_whole_budget(mode: str) -> None:
    tail = volatile_tail(["y" * 400])
    assert tail is not None
    pack = await run_pack(mode, [SYS, TASK, tail], target_context_tokens=40)
    assert pack.messages == [SYS, TASK]
    assert pack.dropped == 1
    assert pack.fits


async def test_a_user_message_that_types_the_tag_is_still_the_directive(mode: str) -> None:
    typed = HumanMessage("<run-state>\nplease keep this request\n</run-state>")
    assert not is_volatile_tail(typed)
    messages = [SYS, typed, *(msg14("assistant", f"a{i}") for i in range(10))]
    pack = await run_pack(mode, messages, target_context_tokens=14 + note_tokens(11) + 14 * 4)
    assert pack.messages[2] is typed  # re-injected as the directive, not treated as disposable


async def test_a_stale_volatile_tail_inside_the_history_is_left_out(mode: str) -> None:
    stale, current = volatile_tail(["old state"]), volatile_tail(["new state"])
    assert stale is not None
    assert current is not None
    messages = [*convo(6), stale, *convo(20)[7:], current]
    pack = await run_pack(mode, messages, target_context_tokens=250)
    assert stale not in pack.messages
    assert [m for m in pack.messages if is_volatile_tail(m)] == [current]
    assert pack.messages[-1] is current


# --- acceptance: a long tool loop handed to an 8k model ------------------------------------


def tool_loop(n_messages: int = 200) -> list[BaseMessage]:
    messages: list[BaseMessage] = [
        SystemMessage("You are a coding agent. Use the tools."),
        HumanMessage("Port the tokenizer in parser.py to Rust, keeping every test green."),
    ]
    i = 0
    while len(messages) < n_messages:
        messages += tool_round(i, f"file {i}: " + "fn token() {}\n" * 140)
        i += 1
    return messages


EIGHT_K = small_model(max_input_tokens=8_000, max_output_tokens=1_000)


async def test_packs_a_200_message_tool_loop_for_an_8k_model_with_a_summary_note(mode: str) -> None:
    messages = tool_loop()
    assert len(messages) == 200
    assert count_tokens(messages) > 8_000 * 6
    summarizer = FakeListChatModel(responses=["Read files 0-90; the tokenizer lives in parser.py."])
    budget = handoff_budget_for_model(EIGHT_K)
    pack = await run_pack(
        mode,
        messages,
        target_context_tokens=budget,
        summarizer=summarizer,
        from_model="big-model",
        to_model="small-model",
    )
    assert pack.fits
    assert pack.estimated_tokens <= budget == 7_000
    assert pack.summarized
    assert "the tokenizer lives in parser.py" in the_note(pack)
    assert messages[1] in pack.messages  # the directive, re-injected
    assert pack.messages[-1] is messages[-1]
    assert pack.dropped == 200 - (len(pack.messages) - 1)
    assert_valid(pack)


@pytest.mark.parametrize("directive", ["Port the tokenizer to Rust.", "Write the changelog."])
async def test_packs_a_200_message_loop_for_8k_with_recall_or_the_marker_if_summarizing_fails(
    mode: str, directive: str
) -> None:
    messages = tool_loop()
    messages[1] = HumanMessage(directive)
    budget = handoff_budget_for_model(EIGHT_K)
    pack = await run_pack(
        mode,
        messages,
        target_context_tokens=budget,
        summarizer=ScriptedSummarizer(error=ConnectionError("summarizer unreachable")),
    )
    assert pack.fits
    assert pack.estimated_tokens <= budget
    assert not pack.summarized
    # The default recall: the dropped reads of token() match "tokenizer" (BM25, stemmed);
    # nothing dropped mentions a changelog, so that note is the marker.
    assert pack.recalled == ("tokenizer" in directive)
    if pack.recalled:
        note = the_note(pack)
        assert "Memory recalled for the current request:\ntool" in note
        assert "fn token() {}" in note
    else:
        assert f"[{pack.dropped} earlier messages omitted.]" in the_note(pack)
    assert_valid(pack)


# --- every recorded transcript ------------------------------------------------------------


@pytest.mark.parametrize("window", [4_000, 8_000, 32_000])
@pytest.mark.parametrize(
    "path",
    transcript_params(),
)
async def test_packs_every_recorded_transcript_valid_and_within_budget(
    mode: str, path: Path, window: int
) -> None:
    messages = load_transcript(path)
    pack = await run_pack(
        mode, messages, target_context_tokens=window, reserve_output_tokens=window // 8
    )
    assert_valid(pack)
    if not pack.fits:
        # only the irreducible core overflows: it is exactly the system prefix + directive
        assert [role_of(m) for m in pack.messages][-1] == "user"
        assert all(role_of(m) == "system" for m in pack.messages[:-1])


async def test_a_pinned_memory_note_stays_first_and_the_packer_note_follows_it(mode: str) -> None:
    # A fold's view kept inside its own budget: the memory note covers what came before
    # everything the packer drops, so the packer's note must come after it, not before.
    from langchain_builderforce_memory.messages import stamp

    memory = stamp(
        HumanMessage("Compressed memory of the first 50 messages: read a.py", id="memo"),
        "memory_note",
    )
    messages = [SYS, memory, *convo(20)]
    budget = 14 + count_tokens([memory]) + note_tokens(20) + 14 * 5
    pack = await run_pack(mode, messages, target_context_tokens=budget, pinned_ids=("memo",))
    assert pack.messages[1] is memory
    assert is_stamped(pack.messages[2], "handoff_note")
    assert the_note(pack).startswith(
        "[Earlier messages condensed to fit this model's context window"
    )
    assert pack.estimated_tokens <= budget
    assert_valid(pack)


@pytest.mark.parametrize(
    ("window", "budget"), [(8e3, 8_000), (8_000, 8_000), ("8000", None), (8_000.5, None)]
)
def test_a_profile_window_set_as_a_whole_float_is_read(window: object, budget: int | None) -> None:
    # A profile set after the model is built is not validated (pydantic converts 8e3 only
    # in the constructor): 8e3 read as "no window", and the model's requests went
    # unfitted. A value that is no whole count still is none, and the error quotes it.
    model = small_model(max_input_tokens=1)
    model.profile = {"max_input_tokens": window}  # type: ignore[typeddict-item]
    if budget is not None:
        assert handoff_budget_for_model(model) == budget
        return
    with pytest.raises(ValueError, match=re.escape(f"unusable ({window!r}, not a positive int)")):
        handoff_budget_for_model(model)
