"""The incremental fold: ports of the seed's compaction tests (003 ``transcript.test.ts``)
and the behaviour of ``build_working_transcript`` / ``abuild_working_transcript``.

Item 3 of the issue deliberately changes the note's role: the seed's note was an
assistant message, ours is a human-role message stamped ``memory_note``. Each place a
seed assertion changes for that reason says so in a comment.
"""

from __future__ import annotations

import dataclasses
import logging
import statistics
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_builderforce_memory.messages import (
    STAMP_KEY,
    leading_system_count,
    message_id,
    role_of,
    stamp_of,
)
from langchain_builderforce_memory.tokens import count_tokens
from langchain_builderforce_memory.transcript.fold import (
    COMPACT_TAIL_TURNS,
    CompactMemo,
    FoldPolicy,
    WorkingTranscript,
    abuild_working_transcript,
    assemble_compacted,
    build_working_transcript,
    compact_tail_start,
    compact_tail_start_for_budget,
    held_directive_index,
    pinned_directive_index,
    verbatim_start,
)
from langchain_builderforce_memory.transcript.plan import MEMORY_NOTE_KIND, memory_note
from langchain_builderforce_memory.transcript.window import windowed
from langchain_builderforce_memory.validity import request_problems

from .helpers import (
    AsyncScriptedSummarizer,
    ScriptedSummarizer,
    fold_coverage_gaps,
    keeps_front,
    msg,
    restates,
    run_fold_loop,
    seed_msgs,
    tool_round,
)

# Set explicitly: another test (the CLI) may leave the package logger at ERROR.
PACKAGE_LOGGER = "langchain_builderforce_memory"

Build = Callable[..., Awaitable[WorkingTranscript]]

FOLD_ONLY: dict[str, Any] = {"clear_tool_results": False, "restore_tokens": 0}
"""These tests pin the fold's own mechanics: the clear tier and the re-attached files
(tested in test_view_policy.py) are off unless a test turns them on."""


async def _sync_build(*args: Any, **kwargs: Any) -> WorkingTranscript:
    return build_working_transcript(*args, **{**FOLD_ONLY, **kwargs})


async def _async_build(*args: Any, **kwargs: Any) -> WorkingTranscript:
    return await abuild_working_transcript(*args, **{**FOLD_ONLY, **kwargs})


@pytest.fixture(params=["sync", "async"])
def build(request: pytest.FixtureRequest) -> Build:
    """Both twins behind one awaitable signature."""
    return _sync_build if request.param == "sync" else _async_build


def alternating(spec_role: Callable[[int], str], n: int) -> list[tuple[str, str]]:
    return [(spec_role(i), f"s{i}") for i in range(n)]


def assistant_or_tool(i: int) -> str:
    return "assistant" if i % 2 == 0 else "tool"


def is_note(m: BaseMessage) -> bool:
    s = stamp_of(m)
    return s is not None and s["kind"] == MEMORY_NOTE_KIND


def tool_loop(turns: int, result_chars: int, task: str = "task") -> list[BaseMessage]:
    record: list[BaseMessage] = [HumanMessage(task)]
    for i in range(turns):
        record.extend(tool_round(i, f"{i}:" + "r" * result_chars))
    return record


# --- auto-compaction partitioning (summarize the middle, never orphan a tool) ------------


def test_walks_the_tail_forward_off_a_leading_orphaned_tool_result() -> None:
    # A tail that would start on a tool result (its assistant call is in the summarized
    # middle) must advance past it so nothing is orphaned.
    convo = seed_msgs(
        [("user", "x"), ("assistant", "x"), ("tool", "x"), ("assistant", "x"), ("user", "x")]
    )
    start = compact_tail_start(convo, 3)  # last 3 = [tool, assistant, user]
    assert role_of(convo[start]) != "tool"


def test_assembled_output_is_system_memo_active_directive_tail_and_never_orphans_a_tool() -> None:
    convo = seed_msgs([("user", "task"), *alternating(assistant_or_tool, 30)])
    start = compact_tail_start(convo, COMPACT_TAIL_TURNS)
    out = assemble_compacted("SYS", convo, "MEMO", start)
    assert out[0] == SystemMessage("SYS")
    # Memo first (the compressed history), THEN the active directive verbatim, so the
    # model reads the directive as the current instruction.
    # Item 3: the memo is a human-role note stamped "memory_note" (the seed's was
    # {role: 'assistant', content: 'MEMO'}).
    assert out[1] == memory_note("MEMO", start)
    assert role_of(out[1]) == "user"
    assert out[1].content == "MEMO"
    assert role_of(out[2]) == "user"
    assert out[2].content == "task"
    # The first tail message after the directive is never an orphaned tool result.
    assert role_of(out[3]) != "tool"
    assert request_problems(out) == []


def test_re_injects_the_most_recent_user_directive_not_the_first_when_several_fell_out_of_the_tail() -> None:  # noqa: E501  # fmt: skip
    # The opening request, then a superseding instruction, then a long tool loop that
    # pushes BOTH out of the verbatim tail. The active directive is the latest one.
    convo = seed_msgs(
        [
            ("user", "run a self-diagnostic"),
            ("assistant", "ok"),
            ("user", "now create the gap and fix the code"),
            *alternating(assistant_or_tool, 30),
        ]
    )
    idx = pinned_directive_index(convo, compact_tail_start(convo, COMPACT_TAIL_TURNS))
    assert convo[idx].content == "now create the gap and fix the code"
    out = assemble_compacted("SYS", convo, "MEMO", COMPACT_TAIL_TURNS)
    directive = out[2]
    assert role_of(directive) == "user"
    assert directive.content == "now create the gap and fix the code"
    # The stale opening request is NOT re-injected verbatim (it lives only in the memo).
    assert [m for m in out if m.content == "run a self-diagnostic"] == []


def test_keeps_every_message_from_the_covered_end_on_nothing_falls_between_the_memo_and_the_tail() -> None:  # noqa: E501  # fmt: skip
    # The old fold summarised "all but the last eight" on a turn count, so messages that
    # slid out of the tail between two folds were in neither the memo nor the tail.
    convo = [msg("user", "task"), *(msg("assistant", f"a{i}") for i in range(30))]
    out = assemble_compacted("SYS", convo, "MEMO", 5)
    # [system, memo, the covered directive 'task', ...convo[5:]]
    assert restates(out[2], convo[0])
    assert out[3:] == convo[5:]


def test_walks_the_verbatim_start_off_tool_results_whose_call_the_memo_folded() -> None:
    convo = seed_msgs(
        [("user", "x"), ("assistant", "x"), ("tool", "x"), ("tool", "x"), ("assistant", "x")]
    )
    assert verbatim_start(convo, 2) == 4
    assert verbatim_start(convo, 99) == len(convo)


def test_sizes_the_compacted_tail_by_tokens_never_below_the_minimum_tail() -> None:
    # Small messages: far more than eight fit, so far more than eight are kept verbatim.
    small = [msg("user", "task"), *(msg("assistant", "short") for _ in range(30))]
    assert len(small) - compact_tail_start_for_budget(small, 10_000) > COMPACT_TAIL_TURNS
    # Oversized messages: the minimum tail survives however large it is.
    big = [msg("user", "task"), *(msg("assistant", "x" * 40_000) for _ in range(30))]
    assert len(big) - compact_tail_start_for_budget(big, 10_000) == COMPACT_TAIL_TURNS


def test_does_not_re_inject_the_directive_when_the_latest_user_turn_already_lives_in_the_tail() -> (
    None
):
    convo = [msg("user", "task"), msg("assistant"), msg("user", "later")]
    # Latest user turn ('later') is inside the tail: nothing to re-inject.
    assert pinned_directive_index(convo, compact_tail_start(convo, COMPACT_TAIL_TURNS)) == -1
    out = assemble_compacted("SYS", convo, "MEMO", COMPACT_TAIL_TURNS)
    assert len([m for m in out if m.content == "later"]) == 1


# --- the tail and the directive, beyond the seed -----------------------------------------


def test_the_tail_keeps_a_whole_run_of_parallel_results_rather_than_fall_below_its_minimum() -> (
    None
):
    # The seed walked forward off tool results even when that emptied the tail: the model
    # lost the results of its own latest calls. Ten parallel results end the record here.
    convo = [HumanMessage("task"), *tool_round(0, "r" * 8_000), *tool_round(1, "s", calls=10)]
    start = compact_tail_start_for_budget(convo, 100)
    assert isinstance(convo[start], AIMessage)
    assert len(convo) - start == 11


def test_stamped_human_messages_are_never_pinned_as_the_directive() -> None:
    convo = [HumanMessage("task"), AIMessage("a"), memory_note("old note", 1), AIMessage("b")]
    assert pinned_directive_index(convo, 3) == 0


def _thinking_round(i: int) -> list[BaseMessage]:
    think = {"type": "thinking", "thinking": f"plan {i}", "signature": "sig"}
    call = AIMessage(
        [think, {"type": "tool_use", "id": f"t{i}", "name": "ls", "input": {}}],
        tool_calls=[{"name": "ls", "args": {}, "id": f"t{i}"}],
    )
    return [call, ToolMessage("a.py", tool_call_id=f"t{i}", name="ls")]


@pytest.mark.parametrize("thinking", [False, True], ids=["plain", "thinking"])
def test_a_new_instruction_after_a_fold_keeps_the_front_of_the_view(thinking: bool) -> None:
    # The tail opens inside the first instruction's tool loop; a second instruction then
    # arrives. Dropping the restated first one moved the front of every request after the
    # note (~35k tokens re-sent a new instruction, benchmarks/contenders.py): it stays
    # until the next fold, with (thinking on) the opening thinking step it was sent with.
    first = _thinking_round(0) if thinking else tool_round(0, "x")
    convo: list[BaseMessage] = [
        HumanMessage("task", id="u0"),
        *first,
        *(m for i in range(1, 6) for m in tool_round(i, f"r{i}")),
    ]
    covered_end = len(convo) - 4
    before = assemble_compacted("SYS", convo, "MEMO", covered_end)
    assert restates(before[2], convo[0])
    assert (before[3:5] == first) is thinking
    later = [*convo, HumanMessage("now the docs"), *tool_round(9, "d")]
    assert pinned_directive_index(later, covered_end) == -1
    assert held_directive_index(later, covered_end, "u0") == 0
    after = assemble_compacted("SYS", later, "MEMO", covered_end, directive_id="u0")
    assert after[: len(before)] == before
    assert after[len(before) :] == later[len(convo) :]
    assert request_problems(after) == []
    # A fold made after the new instruction restated nothing: its views keep nothing.
    fresh = assemble_compacted("SYS", later, "MEMO", covered_end)
    assert [m for m in fresh if m.content == "task"] == []
    assert request_problems(fresh) == []


async def test_a_fold_keeps_the_id_of_the_instruction_it_restated(build: Build) -> None:
    # A budget with room for a tail past the note's reserve: at 1,500 the fold keeps only
    # the latest call and its result (the tail's floor gives way to its token budget).
    record = _two_instructions(60)
    first = await build(record[:101], summarizer=ScriptedSummarizer(), max_tokens=6_000)
    assert first.mode == "folded"
    assert first.memo is not None
    assert first.memo.directive_id == "u0"
    assert CompactMemo.from_dict(first.memo.to_dict()) == first.memo
    # Folded just after the second instruction: the tail holds it, nothing is restated.
    later = await build(record[:128], summarizer=ScriptedSummarizer(), max_tokens=6_000)
    assert later.mode == "folded"
    assert later.memo is not None
    assert later.memo.directive_id is None


def test_a_tail_that_opens_on_a_user_turn_restates_no_earlier_one() -> None:
    convo = [HumanMessage("task"), *tool_round(0, "x"), HumanMessage("next"), *tool_round(1, "y")]
    assert pinned_directive_index(convo, 3) == -1
    out = assemble_compacted("SYS", convo, "MEMO", 3)
    assert [m for m in out if m.content == "task"] == []
    assert out[2:] == convo[3:]


def _two_instructions(rounds: int) -> list[BaseMessage]:
    return [
        HumanMessage("task", id="u0"),
        *(m for i in range(rounds) for m in tool_round(i, f"r{i} " + "x" * 400)),
        HumanMessage("now the docs", id="u1"),
        *(m for i in range(rounds, 2 * rounds) for m in tool_round(i, f"r{i} " + "x" * 400)),
    ]


@pytest.mark.parametrize("max_messages", [20, 21])
async def test_a_full_message_window_drops_the_earlier_instruction_rather_than_fold(
    build: Build, max_messages: int
) -> None:
    # The tail opens in the first instruction's loop (messages 5 on), the second is in it:
    # 1 note + 1 restated + 19 tail messages. With room for 21 the earlier instruction
    # stays; with 20 it goes, and nothing is folded (a fold would call the summarizer
    # to make room for one message).
    record = _two_instructions(6)[:24]
    memo = CompactMemo(
        note="MEMO", covered_end=5, last_covered_id=message_id(record[4]), directive_id="u0"
    )
    summarizer = ScriptedSummarizer()
    out = await build(
        record, memo=memo, summarizer=summarizer, max_messages=max_messages, max_tokens=64_000
    )
    assert out.mode == "memo"
    assert summarizer.calls == []
    restated = [m for m in out.messages if m.content == "task"]
    assert len(restated) == (1 if max_messages == 21 else 0)
    assert len(out.messages) == max_messages
    assert request_problems(out.messages) == []


@pytest.mark.parametrize("max_messages", [8, 10])
async def test_a_small_message_ceiling_caps_the_tails_floor_too(
    build: Build, max_messages: int
) -> None:
    # min_tail_messages=8 under max_messages=10 made every fold view 11 messages: the
    # note, the re-attached outputs, the restated directive and 8 tail messages at least.
    # The floor is capped at half the window, as the tail's ceiling is.
    out = await build(
        [SystemMessage("sys"), *tool_loop(60, 400)],
        summarizer=ScriptedSummarizer(),
        max_messages=max_messages,
        max_tokens=100_000,
        tail_tokens=2_000,
        restore_tokens=None,
    )
    restored = [m for m in out.messages if not is_note(m) and stamp_of(m) is not None]
    assert restored, "the re-attached outputs are part of what the ceiling must hold"
    assert out.mode == "folded"
    assert len(out.messages) - 1 <= max_messages
    assert request_problems(out.messages) == []


def _reads(i: int, paths: list[str], *, thought: bool = False) -> list[BaseMessage]:
    calls = [
        {"name": "read_file", "args": {"path": p}, "id": f"c{i}_{k}"} for k, p in enumerate(paths)
    ]
    content: str | list[str | dict[str, Any]] = ""
    if thought:
        content = [{"type": "thinking", "thinking": "plan", "signature": "sig"}]
    results = [
        ToolMessage(f"contents of {p}\n" + "line\n" * 200, tool_call_id=f"c{i}_{k}")
        for k, p in enumerate(paths)
    ]
    return [AIMessage(content, tool_calls=calls), *results]


@pytest.mark.parametrize("rounds", [4, 7])
async def test_re_attached_outputs_take_only_the_room_a_pinned_thinking_step_leaves(
    build: Build, rounds: int
) -> None:
    # The opening thinking step (3 parallel reads, 4 messages) goes in with the directive;
    # the files were sized against the tail alone, and 2 of them made the view 17
    # messages under max_messages=16. The files are the one optional part of a fold view.
    record: list[BaseMessage] = [
        HumanMessage("task"),
        *_reads(0, ["a.py", "b.py", "c.py"], thought=True),
    ]
    for i in range(rounds):
        record += _reads(1 + i, [f"src/m{i}a.py", f"src/m{i}b.py"])
    out = await build(
        record,
        summarizer=ScriptedSummarizer(),
        max_messages=16,
        max_tokens=100_000,
        restore_tokens=None,
    )
    assert out.mode == "folded"
    kinds = [(stamp_of(m) or {}).get("kind") for m in out.messages]
    assert "restored" in kinds, "a file is re-attached while the window has room"
    assert len(out.messages) <= 16
    assert request_problems(out.messages, thinking=True) == []


@pytest.mark.parametrize("max_messages", [12, 16, 20, 24])
def test_after_a_fold_the_next_views_keep_its_front_across_a_new_instruction(
    max_messages: int,
) -> None:
    # Turn by turn through two instructions, the memo carried: every view that holds the
    # note of the view before it starts with that whole view (the restated instruction
    # included, also when a full message window dropped it before the fold).
    record = _two_instructions(20)
    summarizer = ScriptedSummarizer("NOTE")
    memo: CompactMemo | None = None
    before: list[BaseMessage] | None = None
    checked = drops = 0
    for end in range(2, len(record) + 1):
        if not isinstance(record[end - 1], ToolMessage) and end != len(record):
            continue
        out = build_working_transcript(
            record[:end],
            memo=memo,
            summarizer=summarizer,
            max_messages=max_messages,
            max_tokens=64_000,
            **FOLD_ONLY,
        )
        assert request_problems(out.messages) == []
        assert len(out.messages) <= max_messages
        if out.mode == "memo" and before is not None and memo == out.memo:
            checked += 1
            if out.messages[: len(before)] != before:
                # The one other move: a full message window dropped the restated one.
                assert keeps_front(before, out.messages, max_messages)
                drops += 1
        memo, before = out.memo, out.messages
    assert summarizer.calls
    assert checked >= 10
    assert drops <= len(summarizer.calls)


# --- build_working_transcript ------------------------------------------------------------


async def test_a_record_that_fits_is_sent_whole_and_the_memo_reset(build: Build) -> None:
    record = tool_loop(3, 100)
    stale = CompactMemo(note="old", covered_end=1, last_covered_id=message_id(record[0]))
    summarizer = ScriptedSummarizer()
    out = await build(record, memo=stale, summarizer=summarizer, system_prompt="SYS")
    assert out.mode == "verbatim"
    assert out.messages == [SystemMessage("SYS"), *record]
    assert (out.memo, out.fold, out.summarizer_calls, summarizer.calls) == (None, None, 0, [])


async def test_an_overflow_folds_into_a_human_note_then_reuses_it_without_a_call(
    build: Build,
) -> None:
    record = tool_loop(60, 4_000)  # ~1k tokens a result, ~63k in all
    summarizer = ScriptedSummarizer("what the run learned")
    first = await build(record, summarizer=summarizer, system_prompt="SYS", max_tokens=20_000)
    assert first.mode == "folded"
    assert first.summarizer_calls == 1
    assert first.fold is not None
    assert first.memo is not None
    assert first.fold.covered_end == first.memo.covered_end
    assert first.fold.dropped_messages == first.memo.covered_end
    assert first.memo.last_covered_id == message_id(record[first.memo.covered_end - 1])
    view = first.messages
    assert [role_of(m) for m in view[:3]] == ["system", "user", "user"]
    assert is_note(view[1])
    assert stamp_of(view[1]) == {"kind": MEMORY_NOTE_KIND, "covered_end": first.memo.covered_end}
    assert view[1].content.startswith(  # type: ignore[union-attr]
        f"Compressed memory of the first {first.memo.covered_end} message(s)"
    )
    assert restates(view[2], record[0])  # the task, re-injected after the note
    assert view[3:] == record[first.memo.covered_end :]
    assert count_tokens(view) <= 20_000
    assert request_problems(view) == []
    # Two more turns of work: the held note is reused, the prefix unchanged, no call.
    grown = [*record, *tool_round(60, "r" * 4_000)]
    second = await build(
        grown, memo=first.memo, summarizer=summarizer, system_prompt="SYS", max_tokens=20_000
    )
    assert second.mode == "memo"
    assert (second.summarizer_calls, len(summarizer.calls), second.fold) == (0, 1, None)
    assert second.memo == first.memo
    assert second.messages[: len(view)] == view


async def test_a_refold_summarizes_the_held_note_plus_exactly_the_messages_since_it(
    build: Build,
) -> None:
    record = tool_loop(60, 4_000)
    summarizer = ScriptedSummarizer("NOTE-1")
    first = await build(record, summarizer=summarizer, max_tokens=20_000)
    assert first.memo is not None
    grown = tool_loop(90, 4_000)  # the same record, 30 more rounds (equal content ids)
    summarizer.answer = "NOTE-2"
    second = await build(grown, memo=first.memo, summarizer=summarizer, max_tokens=20_000)
    assert second.mode == "folded"
    assert second.memo is not None
    assert second.fold is not None
    start, end = first.memo.covered_end, second.memo.covered_end
    assert second.fold.dropped_messages == end - start
    rendered = summarizer.calls[1][1].content
    assert isinstance(rendered, str)
    assert rendered.startswith(f"assistant: {first.memo.note}")
    assert rendered.count("\n\nassistant [called: read_file]") == (end - start) // 2
    assert f") -> {grown[start + 1].content}" in rendered
    assert f") -> {grown[start - 1].content}" not in rendered
    assert second.memo.note.endswith("NOTE-2")


async def test_a_message_count_overflow_folds_too(build: Build) -> None:
    record = tool_loop(50, 10)  # 101 small messages: over an 80-message window only
    out = await build(record, summarizer=ScriptedSummarizer(), max_messages=80)
    assert out.mode == "folded"
    assert len(out.messages) <= 80
    assert request_problems(out.messages) == []


async def test_without_a_summarizer_the_view_is_the_window(build: Build) -> None:
    record = tool_loop(60, 4_000)
    out = await build(record, max_tokens=20_000)
    assert (out.mode, out.memo, out.fold, out.summarizer_calls) == ("window", None, None, 0)
    assert out.messages == windowed(record, max_tokens=20_000)
    # With a user turn every few rounds the window can drop the oldest ones.
    chatty = [m for i in range(20) for m in (HumanMessage(f"u{i}"), *tool_round(i, "r" * 8_000))]
    out = await build(chatty, max_tokens=20_000)
    assert out.mode == "window"
    assert count_tokens(out.messages) <= 20_000
    assert request_problems(out.messages) == []


@pytest.mark.parametrize(
    "failure",
    ["error", "empty", "none", "timeout"],
)
async def test_a_failing_summarizer_keeps_the_held_note_else_the_window_and_never_raises(
    build: Build, failure: str, caplog: pytest.LogCaptureFixture
) -> None:
    record = tool_loop(60, 4_000)
    held = (await build(record, summarizer=ScriptedSummarizer(), max_tokens=20_000)).memo
    assert held is not None
    grown = tool_loop(90, 4_000)
    release = threading.Event()
    summarizer = {
        "error": ScriptedSummarizer(error=RuntimeError("model down")),
        "empty": ScriptedSummarizer("   "),
        "none": ScriptedSummarizer(None),
        "timeout": ScriptedSummarizer(block_until=release),
    }[failure]
    timeout = 0.05 if failure == "timeout" else None
    try:
        with caplog.at_level(logging.WARNING, logger=PACKAGE_LOGGER):
            kept = await build(
                grown, memo=held, summarizer=summarizer, max_tokens=20_000, timeout=timeout
            )
            fresh = await build(grown, summarizer=summarizer, max_tokens=20_000, timeout=timeout)
    finally:
        release.set()
    assert (kept.mode, kept.memo, kept.fold, kept.summarizer_calls) == ("memo", held, None, 1)
    assert kept.messages[0] == memory_note(held.note, held.covered_end)
    assert (fresh.mode, fresh.memo, fresh.fold, fresh.summarizer_calls) == ("window", None, None, 1)
    for out in (kept, fresh):
        # Degraded within budget (issue 16): the oldest tail units wait for the next fold.
        assert request_problems(out.messages) == []
        assert count_tokens(out.messages) <= 20_000
        assert out.backoff is not None
        assert out.backoff.failures == 1
    assert "summarizer gave no answer" in caplog.text


async def test_an_async_summarizer_that_never_answers_times_out_to_the_window() -> None:
    out = await abuild_working_transcript(
        tool_loop(60, 4_000),
        summarizer=AsyncScriptedSummarizer(never=True),
        max_tokens=20_000,
        max_messages=80,  # 121 messages: past it, only a fold (or the window) fits
        timeout=0.05,
    )
    assert (out.mode, out.summarizer_calls) == ("window", 1)


async def test_the_twins_build_the_same_views() -> None:
    record = tool_loop(90, 4_000)
    sync = build_working_transcript(record, summarizer=ScriptedSummarizer("N"), max_tokens=20_000)
    both = await abuild_working_transcript(
        record, summarizer=AsyncScriptedSummarizer("N"), max_tokens=20_000
    )
    assert (sync.messages, sync.memo, sync.fold, sync.mode) == (
        both.messages,
        both.memo,
        both.fold,
        both.mode,
    )


# --- the memo ----------------------------------------------------------------------------


async def test_a_memo_given_as_its_dict_is_parsed_and_reused(build: Build) -> None:
    record = tool_loop(60, 4_000)
    memo = build_working_transcript(
        record, summarizer=ScriptedSummarizer(), max_tokens=20_000, max_messages=80
    ).memo
    assert memo is not None
    again = await build(
        record,
        memo=memo.to_dict(),
        summarizer=ScriptedSummarizer(),
        max_tokens=20_000,
        max_messages=80,
    )
    assert (again.mode, again.memo) == ("memo", memo)


@pytest.mark.parametrize(
    "bad",
    [
        "not a dict",
        {"note": "n", "covered_end": 3},
        {"note": "", "covered_end": 3, "last_covered_id": "x"},
        {"note": "n", "covered_end": "3", "last_covered_id": "x"},
        {"note": "n", "covered_end": True, "last_covered_id": "x"},
        {"note": "n", "covered_end": 3, "last_covered_id": 7},
    ],
)
async def test_an_unreadable_memo_is_discarded_with_a_log_line_never_raised(
    build: Build, bad: object, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=PACKAGE_LOGGER):
        out = await build(
            tool_loop(60, 4_000), memo=bad, summarizer=ScriptedSummarizer(), max_tokens=20_000
        )
    assert out.mode == "folded"
    assert out.fold is not None
    assert out.fold.dropped_messages == out.fold.covered_end  # folded from scratch
    assert "discarded" in caplog.text


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"covered_end": 3, "last_covered_id": "x"}, "note"),
        ({"note": "n", "last_covered_id": "x"}, "covered_end"),
        ({"note": "n", "covered_end": 3}, "last_covered_id"),
        ({"note": 5, "covered_end": 3, "last_covered_id": "x"}, "note"),
        ({"note": "n", "covered_end": 0, "last_covered_id": "x"}, "covered_end"),
        ({"note": "n", "covered_end": 2.0, "last_covered_id": "x"}, "covered_end"),
        ({"note": "n", "covered_end": 3, "last_covered_id": ""}, "last_covered_id"),
        (
            {"note": "n", "covered_end": 3, "last_covered_id": "x", "directive_id": 7},
            "directive_id",
        ),
        (
            {"note": "n", "covered_end": 3, "last_covered_id": "x", "directive_id": ""},
            "directive_id",
        ),
    ],
)
def test_compact_memo_from_dict_names_the_bad_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=f"CompactMemo.{field}"):
        CompactMemo.from_dict(data)


def test_compact_memo_round_trips_as_plain_json() -> None:
    import json

    for memo in (
        CompactMemo(note="n", covered_end=3, last_covered_id="m2"),
        CompactMemo(note="n", covered_end=3, last_covered_id="m2", directive_id="m0"),
    ):
        assert CompactMemo.from_dict(json.loads(json.dumps(memo.to_dict()))) == memo
    assert CompactMemo.from_dict({**memo.to_dict(), "version": 2}) == memo


async def test_a_memo_survives_remove_message_edits_before_its_end(build: Build) -> None:
    record = [m.model_copy(update={"id": f"m{i}"}) for i, m in enumerate(tool_loop(60, 4_000))]
    summarizer = ScriptedSummarizer()
    memo = (await build(record, summarizer=summarizer, max_tokens=20_000)).memo
    assert memo is not None
    # add_messages applying RemoveMessage("m1"), RemoveMessage("m2"): a whole tool round.
    edited = [m for m in record if m.id not in {"m1", "m2"}]
    out = await build(edited, memo=memo, summarizer=summarizer, max_tokens=20_000)
    assert out.mode == "memo"
    assert len(summarizer.calls) == 1
    assert out.memo == dataclasses.replace(memo, covered_end=memo.covered_end - 2)
    assert fold_coverage_gaps(edited, out.messages) == []


async def test_a_memo_for_a_rewritten_or_different_record_is_discarded(build: Build) -> None:
    record = tool_loop(60, 4_000)
    memo = (await build(record, summarizer=ScriptedSummarizer(), max_tokens=20_000)).memo
    assert memo is not None
    rewritten = list(record)
    end = memo.covered_end
    rewritten[end - 1] = rewritten[end - 1].model_copy(update={"content": "edited"})
    other = tool_loop(60, 4_000, task="a different task")
    other = [other[0], *(m.model_copy(update={"id": f"o{i}"}) for i, m in enumerate(other[1:]))]
    for changed in (rewritten, other, record[: end - 1]):
        summarizer = ScriptedSummarizer("fresh")
        out = await build(changed, memo=memo, summarizer=summarizer, max_tokens=20_000)
        assert out.memo != memo
        assert all(m.content != memo.note for m in out.messages)
        assert out.fold is not None
        assert out.fold.dropped_messages == out.fold.covered_end  # folded from scratch


# --- the view -----------------------------------------------------------------------------


async def test_leading_system_messages_stay_in_front_after_the_prompt_and_count(
    build: Build,
) -> None:
    big_system = SystemMessage("s" * 40_000)  # 10k tokens
    record = [big_system, *tool_loop(60, 4_000)]
    out = await build(
        record, summarizer=ScriptedSummarizer(), system_prompt="SYS", max_tokens=30_000
    )
    assert out.messages[0] == SystemMessage("SYS")
    assert out.messages[1] is big_system
    assert is_note(out.messages[2])
    assert count_tokens(out.messages) <= 30_000
    assert fold_coverage_gaps(record, out.messages) == []


async def test_never_changes_the_callers_record(build: Build) -> None:
    record = tool_loop(60, 4_000)
    snapshot = [m.model_copy(deep=True) for m in record]
    ids = [id(m) for m in record]
    await build(record, summarizer=ScriptedSummarizer(), max_tokens=20_000)
    assert record == snapshot
    assert [id(m) for m in record] == ids
    assert all(STAMP_KEY not in m.additional_kwargs for m in record)


async def test_an_invalid_record_yields_a_repaired_valid_view(build: Build) -> None:
    record = [
        *tool_loop(60, 4_000),
        ToolMessage("stray", tool_call_id="nobody"),
        AIMessage("", tool_calls=[{"name": "finish", "args": {}, "id": "end"}]),
    ]
    out = await build(record, summarizer=ScriptedSummarizer(), max_tokens=20_000)
    assert out.mode == "folded"
    assert request_problems(out.messages) == []
    assert fold_coverage_gaps(record, out.messages) == []


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_messages": -1}, "max_messages"),
        ({"tail_tokens": 0}, "tail_tokens"),
        ({"min_tail_messages": 0}, "min_tail_messages"),
        ({"max_tail_messages": True}, "max_tail_messages"),
        ({"min_tail_messages": 9, "max_tail_messages": 8}, "max_tail_messages"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": "5"}, "timeout"),
    ],
)
def test_a_bad_policy_number_is_rejected_naming_it(kwargs: dict[str, object], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        build_working_transcript([HumanMessage("hi")], **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=name):
        FoldPolicy(**kwargs)  # type: ignore[arg-type]


def test_a_small_budget_still_leaves_headroom_so_the_next_turns_reuse_the_note() -> None:
    # The tail takes at most 5/8 of the room the fixed parts leave: with max_tokens=8k and
    # the default tail_tokens=40k, a 40k tail would fold on every turn.
    report = run_fold_loop(60, 500, max_tokens=8_000, **FOLD_ONLY)
    assert report.modes.get("memo", 0) > report.modes.get("folded", 0)
    assert max(report.view_tokens) <= 8_000


# --- the scripted 300-turn tool loop (also printed by benchmarks/fold_loop.py) -------------


def test_a_300_turn_tool_loop_folds_rarely_keeps_its_prefix_and_stays_in_budget() -> None:
    report = run_fold_loop(300, 2_000, **FOLD_ONLY)
    assert report.invalid_views == 0
    assert report.coverage_gaps == 0
    # 600k tokens of work through a 64k view: a fold about once per budget of new work
    # (the 1k tail leaves the rest as headroom); never more often than once per 15k.
    assert report.summarizer_calls >= 8
    assert report.tokens_per_call >= 15_000
    assert max(report.view_tokens) <= 64_000
    assert 30_000 <= statistics.mean(report.view_tokens) <= 64_000
    # The view changes its prefix only at a fold (and once, when it first stops fitting).
    assert report.prefix_share >= 0.9
    assert report.turns - 1 - report.prefix_kept <= report.summarizer_calls + 1


def _loop_joined_by_user_turns() -> list[BaseMessage]:
    """A thinking loop that two user messages join after tool results, then plain steps."""
    think = {"type": "thinking", "thinking": "hm", "signature": "s"}

    def step(i: int, thinks: bool = False) -> list[BaseMessage]:
        call = {"name": "read_file", "args": {"path": f"f{i}.py"}, "id": f"c{i}"}
        opening = [think] if thinks else ""
        return [
            AIMessage(opening, tool_calls=[call], id=f"a{i}"),  # type: ignore[arg-type]
            ToolMessage(f"out {i}", tool_call_id=f"c{i}", id=f"t{i}"),
        ]

    convo = [HumanMessage("task", id="u0"), *step(1, True), HumanMessage("also", id="u1")]
    convo += [*step(2, True), *step(3), *step(4, True), HumanMessage("and finally", id="u2")]
    return [SystemMessage("SYS"), *convo, *(AIMessage(f"step {k}", id=f"s{k}") for k in range(4))]


@pytest.mark.parametrize("max_messages", range(5, 16))
def test_a_held_view_whose_loop_must_restart_its_turn_stays_within_the_message_ceiling(
    max_messages: int,
) -> None:
    # The held note's tail starts past the opening step of the earlier user turn it no
    # longer restates, so repair_request restarts the loop at its next thinking step: two
    # messages the plan did not count (12 messages under a ceiling of 10 and 11). Found
    # by a long run of test_fold_properties; such a view now folds instead.
    memo = CompactMemo(note="n", covered_end=6, last_covered_id="t2", directive_id="u1")
    out = build_working_transcript(
        _loop_joined_by_user_turns(),
        memo=memo,
        max_messages=max_messages,
        summarizer=lambda _: "n2",
        min_tail_messages=1,
        max_tail_messages=1,
    )
    assert request_problems(out.messages) == []
    assert len(out.messages) - leading_system_count(out.messages) <= max_messages
