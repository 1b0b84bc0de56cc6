"""The clear tier's hysteresis: its horizon moves in batches and holds while the view fits.

Moving the horizon the least that fits moved the front of the request by one tool result
about every second turn (each move a provider prefix-cache miss of everything after it).
Now the horizon is carried beside the memo (in ``FoldState``), held while the
view fits, and moved once, far enough that the view lands ``clear_at_least`` under the
budget, so each move buys turns of pure appends. A resumed thread (the state through JSON,
a fresh process's caches) builds the same views.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_builderforce_memory.agents.state import MEMO_KEY
from langchain_builderforce_memory.handoff import is_volatile_tail
from langchain_builderforce_memory.messages import stamp_of
from langchain_builderforce_memory.testing import (
    ScriptedChatModel,
    coding_agent_script,
    coding_tools,
)
from langchain_builderforce_memory.tokens import ApproximateTokenCounter, count_tokens
from langchain_builderforce_memory.transcript.clear import clearable, in_use_files, working_set
from langchain_builderforce_memory.transcript.fold import (
    WorkingTranscript,
)
from langchain_builderforce_memory.transcript.fold_state import FoldState
from langchain_builderforce_memory.transcript.horizon import (
    CLEAR_HORIZON_KEY,
    choose_horizon,
)
from langchain_builderforce_memory.transcript.results import CLEARED_KIND, tool_results
from langchain_builderforce_memory.validity import request_problems

from .helpers import (
    ScriptedSummarizer,
    build_agent,
    model_turns,
    read_loop,
    run_directives,
    working_turn,
)

BUDGET = 64_000


def _carried(out: WorkingTranscript) -> dict[str, object] | None:
    return out.state.to_dict()


def _moves(views: list[list[BaseMessage]]) -> list[int]:
    """The turns whose view does not start with the previous view (a front move)."""
    return [i for i in range(1, len(views)) if views[i][: len(views[i - 1])] != views[i - 1]]


def _run(record: list[BaseMessage], *, through_json: bool = False) -> list[WorkingTranscript]:
    state: Mapping[str, object] | None = None
    outs: list[WorkingTranscript] = []
    for prefix in model_turns(record):
        out = working_turn(prefix, state)
        outs.append(out)
        state = _carried(out)
        if through_json and state is not None:
            state = json.loads(json.dumps(state))
    return outs


def test_the_horizon_holds_while_the_view_fits_and_each_move_buys_several_turns() -> None:
    record = read_loop(90)  # 3k-token reads: ~270k tokens against a 64k budget
    outs = _run(record)
    views = [o.messages for o in outs]
    moves = _moves(views)
    cleared_turns = [i for i, o in enumerate(outs) if o.steps.cleared_messages]
    assert cleared_turns, "the run must need the clear tier"
    assert all(o.summarizer_calls == 0 for o in outs)  # the clear tier alone keeps it within
    assert all(count_tokens(v) <= BUDGET and request_problems(v) == [] for v in views)
    # Half a budget of room per move at ~3k tokens a turn: ~10 turns of pure appends each.
    # (Moving the least that fits moved the front 13 times here, every 4-6 turns.)
    gaps = [b - a for a, b in itertools.pairwise(moves)]
    assert len(moves) <= 9
    assert gaps
    assert min(gaps) >= 5


def test_the_held_horizon_is_carried_in_the_fold_state_and_kept_unchanged_while_it_fits() -> None:
    outs = _run(read_loop(60))
    held = [o.horizon for o in outs if o.horizon is not None]
    assert held
    # The same horizon is handed on turn after turn, and only ever moves forward.
    assert len(set(held)) < len(held) // 3
    ends = [h.end for h in held]
    assert ends == sorted(ends)
    state = _carried(outs[-1])
    assert state is not None
    assert FoldState.from_dict(state).horizon == outs[-1].horizon
    assert json.loads(json.dumps(state)) == state


def test_a_resumed_thread_builds_the_same_views() -> None:
    record = read_loop(70, 4_000, files=12)
    first = [o.messages for o in _run(record)]
    # A new process: nothing carried but the state (no module keeps a record's facts).
    resumed = [o.messages for o in _run(record, through_json=True)]
    assert resumed == first


def test_without_the_horizon_the_view_is_still_within_budget_and_valid() -> None:
    # A caller that carries only result.memo: the horizon is chosen afresh each turn.
    memo = None
    for prefix in model_turns(read_loop(60)):
        out = working_turn(prefix, None if memo is None else memo.to_dict())
        memo = out.memo
        assert count_tokens(out.messages) <= BUDGET
        assert request_problems(out.messages) == []


def test_a_held_horizon_whose_result_is_gone_or_unreadable_is_dropped() -> None:
    record = read_loop(40)
    out = working_turn(record, None)
    assert out.horizon is not None
    # Written for another record: its result is not in this one, so a new one is chosen
    # (where the view lands under the budget: the caller carries state).
    foreign = working_turn(record, {CLEAR_HORIZON_KEY: {"end": out.horizon.end, "last_id": "gone"}})
    other = working_turn(record, {CLEAR_HORIZON_KEY: {"end": 3, "last_id": "also-gone"}})
    assert foreign.messages == other.messages
    assert foreign.horizon is not None
    assert foreign.horizon.last_id.startswith("t")
    assert count_tokens(foreign.messages) <= BUDGET - 32_000 + 3_100  # lands half under
    for junk in ({CLEAR_HORIZON_KEY: "x"}, {CLEAR_HORIZON_KEY: {"end": True, "last_id": 1}}):
        with pytest.raises(ValueError, match=CLEAR_HORIZON_KEY):
            FoldState.from_dict(junk)
        assert working_turn(record, junk).messages == out.messages


def test_a_held_horizon_is_found_again_by_id_after_an_edit_shifts_the_record() -> None:
    record = read_loop(40)
    before = working_turn(record, None)
    assert before.horizon is not None
    # Drop one early result's unit (call and result): every later index shifts by two.
    edited = [m for m in record if m.id not in {"a1", "t1"}]
    after = working_turn(edited, _carried(before))
    assert after.horizon is not None
    assert after.horizon.last_id == before.horizon.last_id
    assert after.horizon.end == before.horizon.end - 2


def test_choose_horizon_lands_the_view_under_the_budget_or_takes_the_furthest() -> None:
    counter = ApproximateTokenCounter()
    results = tool_results(read_loop(20)[:-2], counter)
    protect = results[-1].index
    nearest = choose_horizon(results, start=0, protect_from=protect, need=5_000, keep_tokens=0)
    landed = choose_horizon(
        results, start=0, protect_from=protect, need=5_000, keep_tokens=0, land_below=20_000
    )
    furthest = choose_horizon(
        results, start=0, protect_from=protect, need=5_000, keep_tokens=0, land_below=10**9
    )
    assert nearest is not None
    assert landed is not None
    assert nearest < landed < (furthest or 0) <= protect
    assert furthest == results[-2].index + 1  # everything up to the protected tail
    assert choose_horizon(results, start=0, protect_from=protect, need=10**9, keep_tokens=0) is None


def _record_of(calls: list[tuple[str, dict[str, str]]]) -> list[BaseMessage]:
    """A record answering each of ``calls`` with 4,000 characters of output."""
    record: list[BaseMessage] = [HumanMessage("Fix the parser.", id="u0")]
    for i, (name, args) in enumerate(calls):
        record += [
            AIMessage(f"step {i}", tool_calls=[{"name": name, "args": args, "id": f"c{i}"}]),
            ToolMessage(f"{i}:" + "x" * 4_000, tool_call_id=f"c{i}", id=f"t{i}"),
        ]
    return record


def test_the_working_set_spares_only_reads_still_in_the_view() -> None:
    # After a fold the verbatim tail starts at ``start``: a read the note covers takes none
    # of the working set's room (sparing it would spare nothing), so the tail's reads are.
    record = _record_of(
        [
            ("read_file", {"path": "parser.py"}),
            ("read_file", {"path": "lexer.py"}),
            ("read_file", {"path": "ast.py"}),
            ("edit_file", {"path": "parser.py", "change": "fix"}),  # ranks parser.py first
        ]
    )
    results = tool_results(record, ApproximateTokenCounter())
    keep = results[0].size  # room for one read
    start = results[1].index  # a note covers the first read of parser.py
    assert [r.target for r in working_set(results, keep)] == ["parser.py"]
    assert [r.target for r in working_set(results, keep, since=start)] == ["ast.py"]
    horizon = results[-1].index  # everything but the newest result
    cleared = clearable(results, start=start, horizon=horizon, keep_tokens=keep)
    # lexer.py's read is cleared; ast.py's (touched after it) is kept.
    assert [(r.kind, r.target) for r in cleared] == [("read", "lexer.py")]


def test_the_working_set_spares_the_files_touched_last_before_an_old_edit() -> None:
    # An edit made long ago does not keep its file spared ahead of the files read since:
    # ranking edited files first cleared the run's newest reads instead.
    record = _record_of(
        [
            ("read_file", {"path": "old.py"}),
            ("edit_file", {"path": "old.py", "change": "fix"}),
            ("read_file", {"path": "b.py"}),
            ("read_file", {"path": "c.py"}),
        ]
    )
    results = tool_results(record, ApproximateTokenCounter())
    keep = results[0].size * 2  # room for two reads
    assert [r.target for r in working_set(results, keep)] == ["c.py", "b.py"]
    assert in_use_files(results) == ["c.py", "b.py", "old.py"]


@pytest.mark.parametrize("kind", ["create_agent", "graph"])
def test_the_agent_adapters_carry_the_horizon_in_the_checkpointed_state(kind: str) -> None:
    run = coding_agent_script(turns=60, directives=1)
    model = ScriptedChatModel(script=run.script)
    agent = build_agent(
        kind,
        model,
        coding_tools(min_tokens=2_000, max_tokens=8_000),
        summarizer=ScriptedSummarizer("notes so far"),
        checkpointer=InMemorySaver(),
        max_tokens=32_000,
        clear_tool_results=True,
    )
    run_directives(agent, run.directives)
    requests = [[m for m in r if not is_volatile_tail(m)] for r in model.requests]
    cleared = [
        i
        for i, r in enumerate(requests)
        if any((stamp_of(m) or {}).get("kind") == CLEARED_KIND for m in r)
    ]
    assert cleared, "the run must need the clear tier"
    moves = _moves(requests[cleared[0] :])
    # Held between moves: the front moves on fewer than half the requests that clear (it
    # moved on 33 of these 54 when each turn moved it the least that fits).
    assert len(moves) * 2 < len(cleared)
    memo = agent.get_state({"configurable": {"thread_id": "thread-1"}}).values[MEMO_KEY]
    assert isinstance(memo, dict)
    assert CLEAR_HORIZON_KEY in memo
    assert json.loads(json.dumps(memo)) == memo
