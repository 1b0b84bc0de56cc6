"""A conversation's facts, kept turn after turn, never change an answer.

Each fact kept in a :class:`RecordFacts` (tool results, cut points, the latest user turn,
the last marker, the clear tier's choice, whole views turn by turn) is compared with the
same fact computed cold: with fresh facts and a fresh token counter. The record is grown,
edited in the middle, replaced by a shorter one, restored as equal copies, and
interleaved with another thread's record.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory import turns
from langchain_builderforce_memory.directive import latest_directive_index
from langchain_builderforce_memory.facts import RecordFacts
from langchain_builderforce_memory.messages import stamp
from langchain_builderforce_memory.tokens import ApproximateTokenCounter
from langchain_builderforce_memory.transcript.clear import clearable
from langchain_builderforce_memory.transcript.fold import CompactMemo, build_working_transcript
from langchain_builderforce_memory.transcript.horizon import choose_horizon, clear_cut_points
from langchain_builderforce_memory.transcript.markers import (
    consolidation_marker,
    last_consolidation_index,
)
from langchain_builderforce_memory.transcript.results import ToolResult, tool_results
from langchain_builderforce_memory.turns import current_turn_start

from .helpers import ScriptedSummarizer, examples, model_turns
from .strategies import valid_records

PROPERTY = settings(
    max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _call(cid: str, name: str = "read_file", path: str = "a.py") -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": {"path": path}, "id": cid}])


def _loop(n: int, size: int = 400) -> list[BaseMessage]:
    """A directive, then ``n`` tool rounds reading files of ``size`` characters."""
    out: list[BaseMessage] = [HumanMessage("fix the parser", id="u0")]
    for i in range(n):
        out.append(_call(f"c{i}", path=f"src/f{i % 5}.py"))
        out.append(ToolMessage("x" * size, tool_call_id=f"c{i}", id=f"t{i}"))
    return out


def _cold_results(convo: Sequence[BaseMessage]) -> list[ToolResult]:
    return list(tool_results(convo, ApproximateTokenCounter()))


# ------------------------------------------------------------------ no module keeps facts


@pytest.fixture
def looked(monkeypatch: pytest.MonkeyPatch) -> list[BaseMessage]:
    """The messages whose turn role is looked up, in order (``turns._turn_role`` spied)."""
    seen: list[BaseMessage] = []
    real = turns._turn_role

    def counted(m: BaseMessage) -> str:
        seen.append(m)
        return real(m)

    monkeypatch.setattr(turns, "_turn_role", counted)
    return seen


def test_the_current_turn_start_is_read_from_the_end(looked: list[BaseMessage]) -> None:
    record = [*_loop(50), AIMessage("done"), HumanMessage("next"), _call("c99")]
    assert current_turn_start(record) == len(record) - 2
    # Newest first, then the message before the user turn (no tool result), then it stops.
    assert looked == [record[-1], record[-2], record[-3]]
    assert current_turn_start([_call("z"), *record[1:-2]]) == len(record) - 2  # no user turn


def test_kept_facts_look_at_the_new_messages_only(looked: list[BaseMessage]) -> None:
    facts = RecordFacts()
    record = _loop(50)
    facts.sync(record)
    looked.clear()
    grown = [*record, _call("c99"), ToolMessage("y", tool_call_id="c99", id="t99")]
    facts.sync(grown)
    assert facts.turn_start == 0
    assert looked == grown[-2:]
    facts.sync([_call("z"), *record[1:]])  # edited: rebuilt, and no user turn
    assert facts.turn_start == len(record)


# ------------------------------------------------------------------ facts, warm vs cold


def test_tool_results_follow_growth_edits_and_a_shorter_record() -> None:
    counter = ApproximateTokenCounter()
    facts = RecordFacts(counter)
    record = _loop(6)
    for n in range(1, len(record) + 1):
        assert tool_results(record[:n], counter, facts=facts) == _cold_results(record[:n])
    edited = list(record)
    edited[4] = ToolMessage("y" * 5_000, tool_call_id="c1", id="t1-edited", status="error")
    tool_results(record, counter, facts=facts)
    assert tool_results(edited, counter, facts=facts) == _cold_results(edited)
    assert tool_results(record[:5], counter, facts=facts) == _cold_results(record[:5])


def test_a_call_id_reused_after_its_result_starts_over() -> None:
    counter = ApproximateTokenCounter()
    facts = RecordFacts(counter)
    record = _loop(2)
    tool_results(record, counter, facts=facts)
    # The last call of an id wins: the earlier result now answers a "bash" call.
    grown = [*record, _call("c0", name="bash", path="ls")]
    warm = tool_results(grown, counter, facts=facts)
    assert warm == _cold_results(grown)
    assert warm[0].name == "bash"


def test_latest_user_and_marker_indices_follow_edits() -> None:
    record: list[BaseMessage] = [*_loop(3), HumanMessage("next"), *_loop(2)[1:]]
    assert latest_directive_index(record, fallback=False) == 7
    assert last_consolidation_index(record) == -1
    with_marker = [*record[:3], consolidation_marker("done so far"), *record[3:]]
    assert last_consolidation_index(with_marker) == 3
    assert last_consolidation_index(record) == -1
    stamped = list(record)
    stamped[7] = stamp(HumanMessage("next"), "note")
    assert latest_directive_index(stamped, fallback=False) == 0
    assert latest_directive_index(record[:7], fallback=False) == 0
    assert latest_directive_index(record, fallback=False) == 7


def test_horizons_and_clearing_match_a_cold_computation() -> None:
    counter = ApproximateTokenCounter()
    facts = RecordFacts(counter)
    record = _loop(30, size=3_000)
    for n in (10, 31, 47, 61):
        results = tool_results(record[:n], counter, facts=facts)
        points = clear_cut_points(results, 2_000)
        warm = [clearable(results, start=0, horizon=p, keep_tokens=1_500) for p in points]
        chosen = [
            choose_horizon(
                results, start=0, protect_from=n, need=need, keep_tokens=1_500, land_below=5_000
            )
            for need in (1_000, 9_000, 30_000)
        ]
        cold_results = _cold_results(record[:n])
        assert [
            clearable(cold_results, start=0, horizon=p, keep_tokens=1_500) for p in points
        ] == warm
        assert clear_cut_points(cold_results, 2_000) == points
        assert [
            choose_horizon(
                cold_results,
                start=0,
                protect_from=n,
                need=need,
                keep_tokens=1_500,
                land_below=5_000,
            )
            for need in (1_000, 9_000, 30_000)
        ] == chosen
    # Results given out of order are judged as given, not by a stale bisection.
    results = tool_results(record, counter, facts=facts)
    shuffled = [*results[5:], *results[:5]]
    expected = clearable(list(shuffled), start=0, horizon=20, keep_tokens=0)
    assert clearable(shuffled, start=0, horizon=20, keep_tokens=0) == expected


# ------------------------------------------------------------------ whole views


_View = tuple[list[tuple[str, object, object]], CompactMemo | None, str]


def _view(record: list[BaseMessage], memo: CompactMemo | None, facts: RecordFacts) -> _View | str:
    """The view's messages, memo and mode; or the ValueError a too-small budget raises."""
    try:
        out = build_working_transcript(
            record,
            memo=memo,
            summarizer=ScriptedSummarizer("n" * 400),
            system_prompt="You are a coding agent.",
            max_tokens=20_000,
            facts=facts,
        )
    except ValueError as exc:  # the documented floor: system messages over the budget
        return str(exc)
    shown: list[tuple[str, object, object]] = [
        (m.type, m.content, m.additional_kwargs) for m in out.messages
    ]
    return shown, out.memo, str(out.mode)


def _replay_warm_and_cold(record: list[BaseMessage], edits: list[int]) -> None:
    """Every turn's view with the facts kept equals the view computed cold."""
    kept = RecordFacts(ApproximateTokenCounter())
    memo: CompactMemo | None = None
    for turn, prefix in enumerate(model_turns(record)):
        current = list(prefix)
        if turn in edits and len(current) > 3:
            # Edits in the middle and near the end: LangGraph replaces a message with a new
            # object; these grow it, so every count and decision after it changes.
            for i in (len(current) // 2, len(current) - 3):
                old = current[i]
                current[i] = old.model_copy(update={"content": "edited " + "y" * 8_000})
        if turn - 1 in edits:
            current = current[: max(1, len(current) * 2 // 3)]  # shrunk by RemoveMessage
        warm = _view(current, memo, kept)
        cold = _view(current, memo, RecordFacts(ApproximateTokenCounter()))
        assert warm == cold, f"turn {turn}: the warm view differs from the cold one"
        memo = warm[1] if not isinstance(warm, str) else None


def test_views_turn_by_turn_match_cold_views_over_a_tool_loop() -> None:
    _replay_warm_and_cold(_loop(80, size=4_000), edits=[30, 55])


@PROPERTY
@given(valid_records(max_units=40), st.lists(st.integers(0, 60), max_size=3))
def test_views_match_cold_views_over_random_records(
    record: list[BaseMessage], edits: list[int]
) -> None:
    _replay_warm_and_cold(record, edits)


def test_two_threads_interleaved_match_cold_views() -> None:
    a = _loop(40, size=5_000)
    b = [*a[:3], HumanMessage("a different task"), *_loop(40, size=3_000)[1:]]
    counter = ApproximateTokenCounter()
    kept = {"a": RecordFacts(counter), "b": RecordFacts(counter)}
    memos: dict[str, CompactMemo | None] = {"a": None, "b": None}
    for n in range(4, 80, 3):
        for name, record in (("a", a), ("b", b)):
            warm = _view(record[:n], memos[name], kept[name])
            assert warm == _view(record[:n], memos[name], RecordFacts(ApproximateTokenCounter()))
            assert not isinstance(warm, str)
            memos[name] = warm[1]


# ------------------------------------------------------------------ working memory, counts


def test_the_working_memory_is_reused_only_while_its_snapshot_is_unchanged() -> None:
    from langchain_builderforce_memory.agents.state import WORKING_MEMORY_KEY, read_run_memory
    from langchain_builderforce_memory.callbacks import ToolObservationMapper

    mapper = ToolObservationMapper()
    record = _loop(12)
    first = read_run_memory(record, {}, mapper)
    state = {WORKING_MEMORY_KEY: first.state}
    grown = [*record, _call("c99", path="src/new.py")]
    grown.append(ToolMessage("new", tool_call_id="c99", id="t99"))
    warm = read_run_memory(grown, state, mapper)
    cold = read_run_memory(grown, state, mapper)
    assert warm.state == cold.state
    assert warm.memory.brief() == cold.memory.brief()
    # A snapshot edited in place (not through this package) is read again, not reused.
    edited = read_run_memory(record, {}, mapper).state
    edited["snapshot"]["read"].append("src/edited_in_place.py")
    edited["snapshot"]["observations"] += 1
    again = read_run_memory(record, {WORKING_MEMORY_KEY: edited}, mapper)
    assert "src/edited_in_place.py" in (again.memory.brief() or "")


def test_a_working_memory_copy_is_independent_and_its_brief_follows_changes() -> None:
    from langchain_builderforce_memory.working.memory import Observation, WorkingMemory

    memory = WorkingMemory()
    for i in range(12):
        memory.observe(Observation.read(f"f{i}.py"))
    before = memory.brief()
    copy = memory.copy()
    copy.observe(Observation.edited("f3.py"))
    assert memory.brief() == before
    assert copy.brief() != before
    assert "Changed:" in (copy.brief() or "")
    assert copy.brief() == WorkingMemory.from_snapshot(copy.snapshot).brief()


def test_a_count_follows_content_replaced_or_a_block_list_grown_in_place() -> None:
    counter = ApproximateTokenCounter()
    message = HumanMessage(content=[{"type": "text", "text": "x" * 400}])
    first = counter.count_message(message)
    assert isinstance(message.content, list)
    message.content.append({"type": "text", "text": "y" * 400})
    grown = counter.count_message(message)
    assert grown > first
    message.content = "short"
    assert counter.count_message(message) == ApproximateTokenCounter().count_message(message)


def test_the_working_set_over_a_growing_record_matches_a_cold_one() -> None:
    from langchain_builderforce_memory.transcript.clear import in_use_files, working_set

    counter = ApproximateTokenCounter()
    facts = RecordFacts(counter)
    record = _loop(40, size=2_000)
    for n in (9, 30, 55, 81):
        results = tool_results(record[:n], counter, facts=facts)
        warm = (in_use_files(results), working_set(results, 3_000))
        cold = _cold_results(record[:n])
        assert (in_use_files(cold), working_set(cold, 3_000)) == warm


def test_the_role_lookup_keeps_a_turn_of_tool_result_blocks_a_tool_result() -> None:
    from langchain_core.messages import SystemMessage

    from langchain_builderforce_memory.messages import role_of

    blocks = HumanMessage([{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}])
    assert role_of(blocks) == "tool"
    assert role_of(HumanMessage([{"type": "text", "text": "fix it"}])) == "user"
    assert [role_of(m) for m in (HumanMessage("a"), _call("c"), SystemMessage("s"))] == [
        "user",
        "assistant",
        "system",
    ]


def test_views_of_an_anthropic_tool_round_stay_valid() -> None:
    """The record hypothesis found when the role lookup called such a turn a user turn."""
    from langchain_builderforce_memory.transcript.window import windowed
    from langchain_builderforce_memory.validity import request_problems

    record: list[BaseMessage] = [
        HumanMessage([{"type": "text", "text": "go"}]),
        AIMessage(
            [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.py"}}]
        ),
        HumanMessage([{"type": "tool_result", "tool_use_id": "t1", "content": ""}]),
    ]
    assert request_problems(windowed(record, max_tokens=600)) == []
    out = build_working_transcript(record, max_tokens=600, system_prompt="SYS")
    assert request_problems(out.messages) == []


@PROPERTY
@given(st.lists(st.sampled_from(["a.py", "b.py", "c.py", "d/e.py", "B.py", "ä.py"]), max_size=40))
def test_the_brief_ranking_is_by_count_then_name(items: list[str]) -> None:
    from collections import Counter

    from langchain_builderforce_memory.working.memory import rank_by_count

    expected = sorted(Counter(items).items(), key=lambda kv: (-kv[1], kv[0]))
    assert rank_by_count(items) == expected
