"""The clear tier's priority: superseded, search / list / shell and failed results go first.

When the horizon moves (a provider prefix-cache miss from there on anyway), or a fold
writes a new note, the results after the horizon that are superseded by a later call of
the same tool with the same arguments (a re-read, a re-run), bulky search / list / shell
outputs and failed calls are cleared too, up to the protected tail. How far is carried
with the horizon (``ClearHorizon.priority_end``), so the set is a pure function of the
record and what is carried, and the view's prefix holds until the next move; a caller
that carries nothing gets fixed, record-only ends.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory.messages import stamp_of
from langchain_builderforce_memory.tokens import ApproximateTokenCounter, count_tokens
from langchain_builderforce_memory.transcript.clear import priority_clearing
from langchain_builderforce_memory.transcript.fold import (
    WorkingTranscript,
)
from langchain_builderforce_memory.transcript.fold_state import FoldState
from langchain_builderforce_memory.transcript.horizon import (
    CLEAR_HORIZON_KEY,
    ClearHorizon,
)
from langchain_builderforce_memory.transcript.results import (
    CLEARED_KIND,
    cleared_result,
    tool_results,
)
from langchain_builderforce_memory.transcript.view import ClearStep, clear_range, with_clear
from langchain_builderforce_memory.validity import request_problems

from .helpers import model_turns, working_turn

BUDGET = 64_000

Call = tuple[str, dict[str, object]]


def _record(calls: list[Call], size: int = 3_000) -> list[BaseMessage]:
    record: list[BaseMessage] = [HumanMessage("Port the parser to Rust.", id="u0")]
    for i, (name, args) in enumerate(calls):
        call = {"name": name, "args": args, "id": f"c{i}"}
        record += [
            AIMessage(f"step {i}", tool_calls=[call], id=f"a{i}"),
            ToolMessage(f"{i}:" + "x" * (4 * size), tool_call_id=f"c{i}", id=f"t{i}"),
        ]
    return record


def _read(path: str) -> Call:
    return ("read_file", {"path": path})


def _cleared(step: ClearStep) -> set[int]:
    return {r.index for r in step.cleared}


def _result_index(record: list[BaseMessage], unit: int) -> int:
    return 2 + 2 * unit  # u0, then (call, result) per unit


def _step(record: list[BaseMessage], held: ClearHorizon | None, need: int) -> ClearStep:
    results = tool_results(record, ApproximateTokenCounter())
    step = clear_range(results, start=0, length=len(record), need=need, keep_tokens=0, held=held)
    assert step is not None
    return step


def test_a_superseded_re_read_is_cleared_at_the_move_and_stays_cleared_while_it_holds() -> None:
    calls = [_read(f"f{i}.py") for i in range(12)]
    calls[6] = _read("a.py")
    calls[9] = _read("a.py")  # supersedes unit 6, before the protected (newest) unit
    record = _record(calls)
    # A carried horizon that is gone: the horizon moves, the least that saves ``need``.
    moved = _step(record, ClearHorizon(end=1, last_id="gone"), need=1_000)
    first_read = _result_index(record, 6)
    assert moved.horizon < first_read  # the horizon alone would keep it
    assert first_read in _cleared(moved)
    assert _result_index(record, 9) not in _cleared(moved)  # the latest read stays
    assert moved.held is not None
    assert moved.held.priority_end == _result_index(record, 10) + 1  # before the newest
    # The record grows: f7 is re-read, superseding unit 7 after the move.
    grown = _record([*calls, ("grep", {"pattern": "parse"}), _read("f7.py"), _read("g.py")])
    held = json.loads(json.dumps(moved.held.to_dict()))
    kept = _step(grown, ClearHorizon.from_dict(held), need=1_000)
    assert (kept.horizon, kept.held) == (moved.horizon, moved.held)
    assert first_read in _cleared(kept)
    assert _result_index(grown, 7) not in _cleared(kept)  # until the next move
    assert _result_index(grown, 12) not in _cleared(kept)  # the grep too
    # So the view's prefix is byte-identical while it holds.
    before, after = with_clear(record, moved), with_clear(grown, kept)
    assert after[: len(record) - 2] == before[: len(record) - 2]
    # The next move clears the newly superseded read and the grep as well.
    again = _step(grown, None if kept.held is None else ClearHorizon(1, "gone"), need=1_000)
    assert {_result_index(grown, 7), _result_index(grown, 12)} <= _cleared(again)


def test_search_and_failed_results_are_cleared_first_and_the_latest_read_last() -> None:
    calls = [_read("a.py"), ("grep", {"q": "x"}), _read("b.py"), _read("a.py")]
    record = _record(calls)
    # A failed call with a traceback worth clearing (a result smaller than its
    # placeholder is never cleared: that would grow the view).
    trace = "Error: no such file\n" + '  File "src/app.py", line 12, in main\n' * 40
    record[_result_index(record, 2)] = ToolMessage(
        trace, tool_call_id="c2", id="t2", status="error"
    )
    results = tool_results(record, ApproximateTokenCounter())
    chosen = priority_clearing(results, 0, len(record))
    assert [(r.index, r.kind) for r in chosen] == [
        (_result_index(record, 0), "read"),  # superseded by the re-read of a.py
        (_result_index(record, 1), "search"),
        (_result_index(record, 2), "failed"),
    ]


def test_a_stateless_call_clears_by_priority_and_stays_a_pure_function_of_the_record() -> None:
    calls = [_read(f"f{i}.py") for i in range(14)]
    calls[9] = ("grep", {"pattern": "lexer"})
    record = _record(calls)
    results = tool_results(record, ApproximateTokenCounter())
    step = clear_range(
        results, start=0, length=len(record), need=1_000, keep_tokens=0, land_below=6_000
    )
    assert step is not None
    grep = _result_index(record, 9)
    assert step.horizon <= grep  # the fixed cut point nearest the start
    assert grep in _cleared(step)
    # The same answer from copies of the messages.
    copies = [m.model_copy() for m in record]
    again = clear_range(
        tool_results(copies, ApproximateTokenCounter()),
        start=0,
        length=len(copies),
        need=1_000,
        keep_tokens=0,
        land_below=6_000,
    )
    assert again is not None
    assert (again.horizon, _cleared(again), again.held) == (step.horizon, _cleared(step), step.held)


def _coding_calls(n: int) -> list[Call]:
    calls: list[Call] = []
    for i in range(n):
        if i % 4 == 3:
            calls.append(("grep", {"pattern": f"p{i}"}))
        else:
            calls.append(_read(f"f{i % 9}.py"))
    return calls


def test_a_stateless_caller_gets_the_same_views_whatever_it_asked_before() -> None:
    record = _record(_coding_calls(60))
    warm = [working_turn(prefix, None).messages for prefix in model_turns(record)]
    cold = working_turn(record, None).messages
    assert cold == warm[-1]
    assert any((stamp_of(m) or {}).get("kind") == CLEARED_KIND for m in cold)


def test_an_old_carried_horizon_without_the_priority_fields_parses_and_works() -> None:
    old = {"end": 12, "last_id": "t5"}
    parsed = ClearHorizon.from_dict(old)
    assert parsed == ClearHorizon(end=12, last_id="t5", priority_end=0, priority_last_id="")
    assert parsed is not None
    assert parsed.to_dict() == old  # written as before when it has none
    junk = {**old, "priority_end": "x", "priority_last_id": 3}
    assert ClearHorizon.from_dict(junk) == parsed
    new = ClearHorizon(12, "t5", 20, "t9")
    assert ClearHorizon.from_dict(json.loads(json.dumps(new.to_dict()))) == new
    # A thread checkpointed before: its horizon is found again, and the next move carries
    # the priority end.
    record = _record(_coding_calls(40))
    first = working_turn(record[:-20], None)
    assert first.horizon is not None
    state = {CLEAR_HORIZON_KEY: {"end": first.horizon.end, "last_id": first.horizon.last_id}}
    assert FoldState.from_dict(state).horizon == ClearHorizon(
        first.horizon.end, first.horizon.last_id
    )
    out = working_turn(record, state)
    assert count_tokens(out.messages) <= BUDGET
    assert request_problems(out.messages) == []
    assert out.horizon is not None
    assert out.horizon.priority_end > out.horizon.end


def test_after_a_fold_the_tails_search_outputs_are_cleared_and_the_prefix_then_holds() -> None:
    # Small outputs, few messages allowed: the folds are for the message count, and each
    # fold's view fits without clearing (only the priority results are cleared).
    record = _record(_coding_calls(120), size=1_000)
    state: Mapping[str, object] | None = None
    outs: list[WorkingTranscript] = []
    for prefix in model_turns(record):
        # folds every ~30 units; the seed's 40k tail keeps search outputs to clear
        out = working_turn(prefix, state, max_messages=60, tail_tokens=40_000)
        outs.append(out)
        state = out.state.to_dict()
    folds = [i for i, o in enumerate(outs) if o.fold is not None]
    assert folds
    checked = 0
    for i in folds:
        view = outs[i].messages
        tail_greps = [
            m
            for m in view
            if (stamp_of(m) or {}).get("kind") == CLEARED_KIND and "grep" in str(m.content)
        ]
        if not tail_greps or i + 1 >= len(outs) or outs[i + 1].fold is not None:
            continue
        held = outs[i].horizon
        assert held is not None
        assert held.end == 0  # a priority end only: nothing needed clearing
        assert held.priority_end > 0
        nxt = outs[i + 1]
        if nxt.horizon == held:  # held: the fold's view is the next view's prefix
            assert nxt.messages[: len(view) - 1] == view[:-1]
            checked += 1
    assert checked


def test_a_result_smaller_than_its_placeholder_is_never_cleared() -> None:
    # A shell call whose command is long and whose output is short: its placeholder
    # (which quotes the command) costs more than the output it would replace.
    command = " && ".join(
        ["cd /testbed", *[f"grep -n 'def save{i}' django/db/models/base.py" for i in range(3)]]
    )
    calls: list[Call] = [("bash", {"command": command}) for _ in range(6)]
    record = _record(calls, size=5)
    counter = ApproximateTokenCounter()
    results = tool_results(record, counter)
    placeholders = [counter.count_message(cleared_result(record[r.index], r)) for r in results]
    assert all(r.size < p for r, p in zip(results, placeholders, strict=True))
    assert priority_clearing(results, 0, len(record)) == ()
    assert clear_range(results, start=0, length=len(record), need=1, keep_tokens=0) is None


def test_a_cleared_view_lands_where_the_clear_tier_planned() -> None:
    # Large and small results mixed: the plan's saving is what the view saves, so the
    # view is not elided a little more on every turn (each a prefix-cache miss).
    calls: list[Call] = []
    for i in range(30):
        calls += [_read(f"f{i}.py"), ("bash", {"command": f"grep -n 'x{i}' src/module_{i}.py"})]
    record = _record(calls, size=400)
    for i in range(30):  # the greps found one short line each
        record[_result_index(record, 2 * i + 1)] = ToolMessage(
            f"{i}: x", tool_call_id=f"c{2 * i + 1}", id=f"t{2 * i + 1}"
        )
    counter = ApproximateTokenCounter()
    results = tool_results(record, counter)
    total = count_tokens(record, counter)
    step = clear_range(results, start=0, length=len(record), need=total - 8_000, keep_tokens=0)
    assert step is not None
    assert count_tokens(with_clear(record, step), counter) <= 8_000
