"""BuilderforceMemoryMiddleware in create_agent, and the per-turn core it shares with the node."""

from __future__ import annotations

import doctest
import importlib
import json
import logging
import sys
from typing import Any

import pytest
from langchain.agents.middleware import ModelFallbackMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import StructuredTool, ToolException
from langgraph.checkpoint.memory import InMemorySaver

from langchain_builderforce_memory.agents import driver as adapter
from langchain_builderforce_memory.agents import policy
from langchain_builderforce_memory.agents import state as adapter_state
from langchain_builderforce_memory.agents.driver import (
    CODE_MAPS_HEADER,
    EVENT_KEY,
    MemoryCore,
    arun_turn,
    run_turn,
)
from langchain_builderforce_memory.agents.middleware import BuilderforceMemoryMiddleware
from langchain_builderforce_memory.agents.node import WorkingTranscriptNode
from langchain_builderforce_memory.agents.policy import MemoryPolicy
from langchain_builderforce_memory.agents.state import (
    MEMO_KEY,
    WORKING_MEMORY_KEY,
    read_run_memory,
)
from langchain_builderforce_memory.callbacks import ToolObservationMapper
from langchain_builderforce_memory.handoff import is_volatile_tail
from langchain_builderforce_memory.store import CodeMap, CodeMapStore
from langchain_builderforce_memory.testing import (
    ScriptedChatModel,
    coding_agent_script,
    coding_tools,
)
from langchain_builderforce_memory.tokens import count_tokens
from langchain_builderforce_memory.transcript.fold import CompactMemo
from langchain_builderforce_memory.validity import request_problems

from .helpers import (
    ScriptedSummarizer,
    build_agent,
    run_directives,
    tool_round,
    volatile_tails,
)

THREAD: Any = {"configurable": {"thread_id": "thread-1"}, "recursion_limit": 1_000}


def _small_run(
    turns: int = 40, *, max_tokens: int = 12_000, **options: Any
) -> tuple[ScriptedChatModel, ScriptedSummarizer, Any]:
    """A short run with 1-2k-token tool results against a 12k budget: it folds."""
    run = coding_agent_script(turns=turns, directives=2)
    model = ScriptedChatModel(script=run.script)
    summarizer = options.pop("summarizer", ScriptedSummarizer("notes so far"))
    agent = build_agent(
        "create_agent",
        model,
        coding_tools(min_tokens=1_000, max_tokens=2_000),
        summarizer=summarizer,
        checkpointer=InMemorySaver(),
        max_tokens=max_tokens,
        **options,
    )
    run_directives(agent, run.directives)
    return model, summarizer, agent


def _record(messages: int, result: str = "r" * 4_000) -> list[BaseMessage]:
    out: list[BaseMessage] = [HumanMessage("Port the parser.")]
    for i in range(messages):
        out += tool_round(i, result)
    return out


# --------------------------------------------------------------------- the middleware


def test_importing_without_langchain_names_the_agents_extra(monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "langchain.agents.middleware", None)
    monkeypatch.delitem(sys.modules, "langchain_builderforce_memory.agents.middleware")
    with pytest.raises(ImportError, match=r'pip install "langchain-builderforce-memory\[agents\]"'):
        importlib.import_module("langchain_builderforce_memory.agents.middleware")


def test_only_the_request_is_shrunk_never_the_record_in_state() -> None:
    model, summarizer, agent = _small_run()
    record = agent.get_state(THREAD).values["messages"]
    assert summarizer.calls  # it folded
    assert max(count_tokens(r) for r in model.requests) <= 12_000
    assert count_tokens(record) > 3 * 12_000
    assert len(record) == 2 + sum(1 + len(m.tool_calls) for m in model.script)


def test_the_system_prompt_is_counted_and_kept_in_front() -> None:
    big_prompt = "Follow the house rules. " * 1_500  # ~9k tokens of a 16k budget
    run = coding_agent_script(turns=30, directives=1)
    model = ScriptedChatModel(script=run.script)
    agent = build_agent(
        "create_agent",
        model,
        coding_tools(min_tokens=1_000, max_tokens=2_000),
        summarizer=ScriptedSummarizer("notes"),
        system_prompt=big_prompt,
        max_tokens=16_000,
    )
    agent.invoke({"messages": [HumanMessage(run.directives[0])]}, THREAD)
    for request in model.requests:
        assert isinstance(request[0], SystemMessage)
        assert request[0].content == big_prompt
        assert sum(isinstance(m, SystemMessage) for m in request) == 1
        assert count_tokens(request) <= 16_000


def test_the_private_state_keys_stay_out_of_the_agent_input_and_output() -> None:
    _, _, agent = _small_run(turns=12)
    for schema in (agent.get_input_jsonschema(), agent.get_output_jsonschema()):
        assert not [k for k in schema.get("properties", {}) if k.startswith("builderforce")]
    values = agent.get_state(THREAD).values
    assert MEMO_KEY in values
    assert WORKING_MEMORY_KEY in values


def test_both_state_schemas_build_on_the_one_declaration_of_the_keys() -> None:
    """Issue 23: one TypedDict of the state keys, private in both schemas."""
    from typing import get_args, get_type_hints

    from langchain.agents.middleware.types import PrivateStateAttr

    from langchain_builderforce_memory import BuilderforceMemoryState, WorkingTranscriptKeys
    from langchain_builderforce_memory.agents.toolstate import BuilderforceStateKeys

    declared = get_type_hints(BuilderforceStateKeys, include_extras=True)
    assert len(declared) == 5
    for schema in (BuilderforceMemoryState, WorkingTranscriptKeys):
        assert BuilderforceStateKeys in schema.__orig_bases__  # type: ignore[attr-defined]
        hints = get_type_hints(schema, include_extras=True)
        ours = {k: v for k, v in hints.items() if k.startswith("builderforce")}
        assert {k: ours[k] for k in declared} == declared
        assert all(PrivateStateAttr in get_args(hints[k]) for k in declared)
        assert declared.keys() <= schema.__optional_keys__


def test_the_memo_and_the_working_memory_are_plain_json_in_state() -> None:
    _, _, agent = _small_run()
    values = agent.get_state(THREAD).values
    memo, memory = values[MEMO_KEY], values[WORKING_MEMORY_KEY]
    assert json.loads(json.dumps(memo)) == memo
    assert json.loads(json.dumps(memory)) == memory
    assert CompactMemo.from_dict(memo).covered_end > 0
    assert memory["snapshot"]["read"]
    assert memory["scanned"] == len(values["messages"])


def test_the_brief_rides_last_in_the_request_and_is_never_stored() -> None:
    model, _, agent = _small_run()
    late = model.requests[-1]
    assert is_volatile_tail(late[-1])
    assert "What this run has already established" in late[-1].text
    assert not volatile_tails(agent.get_state(THREAD).values["messages"])
    # Below BRIEF_MIN_OBSERVATIONS there is nothing worth restating.
    assert not volatile_tails(model.requests[0])


def _tools_that_fail() -> list[Any]:
    def read_file(path: str) -> str:
        """Read a file."""
        return "Error: no such file" if "missing" in path else f"contents of {path}"

    def edit_file(path: str, change: str) -> str:
        """Edit a file."""
        raise ToolException(f"cannot write {path}")

    return [
        StructuredTool.from_function(read_file),
        StructuredTool.from_function(edit_file, handle_tool_error=True),
    ]


def _calls(*calls: tuple[str, dict[str, str]]) -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[
            {"name": name, "args": args, "id": f"c{i}-{name}"}
            for i, (name, args) in enumerate(calls)
        ],
    )


def test_only_successful_tool_calls_are_remembered() -> None:
    script = [
        _calls(
            ("read_file", {"path": "src/ok.py"}),
            ("read_file", {"path": "src/missing.py"}),
            ("edit_file", {"path": "src/ok.py", "change": "x"}),
        ),
        AIMessage("done"),
    ]
    model = ScriptedChatModel(script=script)
    agent = build_agent("create_agent", model, _tools_that_fail(), checkpointer=InMemorySaver())
    agent.invoke({"messages": [HumanMessage("fix ok.py")]}, THREAD)
    snapshot = agent.get_state(THREAD).values[WORKING_MEMORY_KEY]["snapshot"]
    assert snapshot["read"] == ["src/ok.py"]
    assert snapshot["edited"] == []
    assert snapshot["task"] == "fix ok.py"


def test_every_fold_is_streamed_as_a_custom_event_and_logged(caplog: Any) -> None:
    run = coding_agent_script(turns=40, directives=2)
    summarizer = ScriptedSummarizer("notes")
    agent = build_agent(
        "create_agent",
        ScriptedChatModel(script=run.script),
        coding_tools(min_tokens=1_000, max_tokens=2_000),
        summarizer=summarizer,
        checkpointer=InMemorySaver(),
        max_tokens=12_000,
    )
    with caplog.at_level(logging.INFO, logger="langchain_builderforce_memory.agents.driver"):
        events = run_directives(agent, run.directives, mode="stream")
    folds = [e for e in events if e[EVENT_KEY] == "fold"]
    assert len(folds) == len(summarizer.calls) > 0
    assert {"covered_end", "dropped_messages", "note_tokens"} <= set(folds[0])
    logged = [r for r in caplog.records if "builderforce_memory fold" in r.getMessage()]
    assert len(logged) == len(folds)


def test_summarizer_calls_never_stream_into_the_users_output() -> None:
    run = coding_agent_script(turns=40, directives=1)
    notes = [f"NOTE-{i}" for i in range(40)]
    summarizer = ScriptedChatModel(script=list(notes), model_name="summarizer")
    agent = build_agent(
        "create_agent",
        ScriptedChatModel(script=run.script),
        coding_tools(min_tokens=1_000, max_tokens=2_000),
        summarizer=summarizer,
        checkpointer=InMemorySaver(),
        max_tokens=12_000,
    )
    streamed = list(
        agent.stream(
            {"messages": [HumanMessage(run.directives[0])]}, THREAD, stream_mode="messages"
        )
    )
    assert summarizer.requests  # the summarizer ran inside the stream
    texts = [chunk.text for chunk, _ in streamed]
    assert any(t.startswith("Step") for t in texts)  # the agent's own turns do stream
    assert not [t for t in texts if t.startswith("NOTE-")]


def test_a_failing_summarizer_degrades_to_the_window_and_never_raises(caplog: Any) -> None:
    summarizer = ScriptedSummarizer(error=RuntimeError("summarizer is down"))
    with caplog.at_level(logging.WARNING, logger="langchain_builderforce_memory"):
        model, _, agent = _small_run(summarizer=summarizer)
    assert summarizer.calls
    for request in model.requests:
        assert request_problems(request) == []
        assert count_tokens(request) <= 12_000
    # No note is ever stored; only the summarizer's backoff (issue 16).
    memo = agent.get_state(THREAD).values.get(MEMO_KEY)
    assert memo is None or set(memo) == {"summarizer_backoff", "fold_state_version"}
    assert any("summarizer" in r.getMessage() for r in caplog.records)


def test_fit_to_model_false_leaves_the_view_at_max_tokens() -> None:
    run = coding_agent_script(turns=30, directives=1)
    small = ScriptedChatModel(script=run.script, profile={"max_input_tokens": 8_000})
    agent = build_agent(
        "create_agent",
        small,
        coding_tools(min_tokens=1_000, max_tokens=2_000),
        summarizer=ScriptedSummarizer("notes"),
        max_tokens=20_000,
        fit_to_model=False,
    )
    agent.invoke({"messages": [HumanMessage(run.directives[0])]}, THREAD)
    assert max(count_tokens(r) for r in small.requests) > 8_000


def test_a_fallback_placed_before_the_middleware_is_fitted_to_the_fallback_model() -> None:
    run = coding_agent_script(turns=30, directives=1)
    primary = ScriptedChatModel(
        fail_with=RuntimeError("down"), profile={"max_input_tokens": 100_000}
    )
    small = ScriptedChatModel(script=run.script, profile={"max_input_tokens": 8_000})
    agent = build_agent(
        "create_agent",
        primary,
        coding_tools(min_tokens=1_000, max_tokens=2_000),
        summarizer=ScriptedSummarizer("notes"),
        max_tokens=20_000,
        before=[ModelFallbackMiddleware(small)],
    )
    agent.invoke({"messages": [HumanMessage(run.directives[0])]}, THREAD)
    assert max(count_tokens(r) for r in primary.requests) > 8_000
    assert max(count_tokens(r) for r in small.requests) <= 8_000


def test_code_maps_are_recalled_into_the_brief_and_saved_when_the_run_ends() -> None:
    class CountingMaps(CodeMapStore):
        lookups = 0

        def maps_for(self, *args: Any, **kwargs: Any) -> list[CodeMap]:
            CountingMaps.lookups += 1
            return super().maps_for(*args, **kwargs)

    maps = CountingMaps()
    tools = coding_tools(min_tokens=50, max_tokens=100)
    run = coding_agent_script(turns=30, directives=1)
    first = build_agent(
        "create_agent",
        ScriptedChatModel(script=run.script),
        tools,
        checkpointer=InMemorySaver(),
        code_maps=maps,
        code_map_scope="repo-1",
    )
    run_directives(first, run.directives)
    (saved,) = maps.maps_for("src/app", scope="repo-1")
    assert saved.area == "src/app"

    later = ScriptedChatModel(script=["looking", "done"])
    second = build_agent(
        "create_agent",
        later,
        tools,
        checkpointer=InMemorySaver(),
        code_maps=maps,
        code_map_scope="repo-1",
    )
    CountingMaps.lookups = 0
    run_directives(second, ["Fix the bug in src/app again.", "And in src/app once more."])
    opening = later.requests[0][-1]
    assert is_volatile_tail(opening)
    assert CODE_MAPS_HEADER in opening.text
    assert saved.content.splitlines()[0] in opening.text
    assert CountingMaps.lookups == 2  # once per new task, not once per turn
    assert maps.maps_for("src/app", scope="someone-else") == []


@pytest.mark.parametrize(
    ("scope", "saved_in", "warns"),
    [
        (lambda c: ("team", "alice@example.com"), ("team", "alice@example.com"), False),
        (lambda c: ("team", 42), ("team", "42"), False),
        (lambda c: None, None, False),  # an anonymous run: no maps, on purpose
        (lambda c: {"user": "alice"}, None, True),
        (lambda c: ("team", ""), None, True),
    ],
    ids=["email", "number", "none", "mapping", "empty-label"],
)
def test_a_scope_functions_result_scopes_the_maps_or_the_run_goes_on_without_them(
    scope: Any, saved_in: tuple[str, ...] | None, warns: bool, caplog: Any
) -> None:
    # A user id from the config is often an email, whose '.' LangGraph's namespaces refuse,
    # or a number; neither may fail the user's graph.
    maps = CodeMapStore()
    run = coding_agent_script(turns=30, directives=1)
    agent = build_agent(
        "create_agent",
        ScriptedChatModel(script=run.script),
        coding_tools(min_tokens=50, max_tokens=100),
        checkpointer=InMemorySaver(),
        code_maps=maps,
        code_map_scope=scope,
    )
    with caplog.at_level(logging.WARNING, logger="langchain_builderforce_memory"):
        run_directives(agent, run.directives)
    saved = maps.store.search(maps.namespace, limit=100)
    if saved_in is None:
        assert saved == []
    else:
        assert [m.area for m in maps.maps_for("src/app", scope=saved_in)] == ["src/app"]
    assert any("code_map_scope" in r.getMessage() for r in caplog.records) is warns


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"max_token": 1}, TypeError, "did you mean 'max_tokens'"),
        ({"max_tokens": 0}, ValueError, "max_tokens must be an int >= 1"),
        ({"fit_to_model": "yes"}, ValueError, "fit_to_model must be True or False"),
        ({"min_tail_messages": 50}, ValueError, "max_tail_messages"),
        ({"timeout": -1}, ValueError, "timeout"),
        ({"code_maps": {}}, TypeError, "code_maps must be a CodeMapStore"),
        ({"code_map_scope": ()}, ValueError, "code_map_scope must be a label or a non-empty"),
        ({"tail_tokens": []}, ValueError, r"tail_tokens must be a positive int .*got \[\]"),
        ({"tool_mapper": "read"}, TypeError, "tool_mapper must be a ToolObservationMapper"),
    ],
)
def test_options_are_validated_with_the_fix_named(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        BuilderforceMemoryMiddleware(**options)


def test_a_summarizer_that_is_not_callable_is_rejected() -> None:
    with pytest.raises(TypeError, match="summarizer must be a chat model, a 'provider:model'"):
        BuilderforceMemoryMiddleware(42)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the shared core


def _core(**options: Any) -> MemoryCore:
    options.setdefault("clear_tool_results", False)  # these tests pin the fold
    return BuilderforceMemoryMiddleware(**options).core


def test_a_retried_model_call_reuses_the_turns_fold() -> None:
    summarizer = ScriptedSummarizer("notes")
    core = _core(summarizer=summarizer, max_tokens=8_000)
    record = _record(20)
    state: dict[str, Any] = {}
    first = run_turn(core, record, state)
    again = run_turn(core, record, state)
    assert len(summarizer.calls) == 1
    assert [e[EVENT_KEY] for e in first.events] == ["fold"]
    assert again.events == ()  # the fold is reported once
    assert again.messages == first.messages
    # A new turn (a new record list) is planned afresh, from the memo.
    run_turn(core, [*record], {MEMO_KEY: first.update[MEMO_KEY]})
    assert len(summarizer.calls) == 1


async def test_the_async_turn_matches_the_sync_turn() -> None:
    record = _record(20)
    sync = run_turn(_core(summarizer=ScriptedSummarizer("n"), max_tokens=8_000), record, {})
    other = await arun_turn(_core(summarizer=ScriptedSummarizer("n"), max_tokens=8_000), record, {})
    assert [m.content for m in sync.messages] == [m.content for m in other.messages]
    assert sync.update == other.update


def test_an_unreadable_memo_in_state_is_discarded_not_raised(caplog: Any) -> None:
    with caplog.at_level(logging.WARNING, logger="langchain_builderforce_memory"):
        turn = run_turn(_core(max_tokens=8_000), _record(20), {MEMO_KEY: {"note": ""}})
    assert request_problems(turn.messages) == []
    assert turn.update[MEMO_KEY] is None
    assert any(MEMO_KEY in r.getMessage() for r in caplog.records)


def test_the_model_budget_reserves_the_requests_max_tokens_setting() -> None:
    core = _core()
    model = ScriptedChatModel(profile={"max_input_tokens": 10_000, "max_output_tokens": 4_000})
    assert core.model_budget(model, None, None) == 10_000 - 2_500  # a quarter of the window
    assert core.model_budget(model, None, {"max_tokens": 1_000}) == 9_000
    assert core.model_budget(ScriptedChatModel(), None, None) is None  # no profile: not fitted


def test_a_long_brief_is_cut_to_the_tail_reserve() -> None:
    core = _core(tail_reserve_tokens=150)
    record: list[BaseMessage] = [HumanMessage("go")]
    for i in range(60):
        record += tool_round(i, "ok")
    whole = _core().tail(_core().begin(record, {}, system=None, config=None))
    assert whole is not None
    assert core.counter.count_message(whole) > 150
    turn = run_turn(core, record, {})
    assert turn.tail is not None
    assert core.counter.count_message(turn.tail) <= 150
    assert turn.tail.text.endswith("- …\n</run-state>")
    assert turn.tail.text.startswith(whole.text[: len(turn.tail.text) - len("- …\n</run-state>")])


def test_the_working_memory_reads_only_what_is_new_and_never_counts_a_call_twice() -> None:
    mapper = ToolObservationMapper()
    record = _record(3)
    first = read_run_memory(record, {}, mapper)
    assert first.state["snapshot"]["read"] == ["f0_0.py", "f1_0.py", "f2_0.py"]
    again = read_run_memory(record, {WORKING_MEMORY_KEY: first.state}, mapper)
    assert again.state == first.state
    assert not again.changed
    # The record was replaced under us: what it held was read before, so it is not re-read.
    rewritten = [HumanMessage("summary"), *tool_round(9, "x")]
    after = read_run_memory(rewritten, {WORKING_MEMORY_KEY: first.state}, mapper)
    assert after.state["snapshot"]["read"] == first.state["snapshot"]["read"]


def test_a_consolidation_marker_scopes_the_view() -> None:
    from langchain_builderforce_memory.transcript.markers import consolidation_marker

    record = [*_record(5), consolidation_marker("Earlier: read five files."), HumanMessage("next")]
    turn = run_turn(_core(), record, {})
    assert turn.messages[0].text.endswith("Earlier: read five files.")
    assert [m.text for m in turn.messages[1:]] == ["next"]


def test_the_policy_holds_the_tail_reserve_back_from_the_fold() -> None:
    assert MemoryPolicy().fold_budget == 61_000
    assert MemoryPolicy(working_memory=False).fold_budget == 64_000
    assert MemoryPolicy(max_tokens=20_000).fold_policy.max_tokens == 17_000


@pytest.mark.parametrize("module", [adapter, adapter_state, policy])
def test_the_examples_in_the_docstrings_run(module: Any) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0


def test_the_middleware_example_runs() -> None:
    import langchain_builderforce_memory.agents.middleware as middleware

    result = doctest.testmod(middleware)
    assert result.attempted > 0
    assert result.failed == 0


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_an_answered_model_call_lets_its_turns_fold_go(mode: str) -> None:
    # A fold is kept only for a retry of its model call (a fallback after a failure): once
    # a model answered, nothing holds the record, so an idle server keeps none of them.
    # The fallback still reuses its turn's fold: one summarizer call per fold, as without.
    import asyncio

    from langchain.agents import create_agent

    def folds(fallback: bool) -> tuple[int, int, int]:
        run = coding_agent_script(turns=30, directives=1)
        answering = ScriptedChatModel(script=run.script)
        model = ScriptedChatModel(fail_with=RuntimeError("down")) if fallback else answering
        summarizer = ScriptedSummarizer("notes")
        ours = BuilderforceMemoryMiddleware(summarizer, max_tokens=8_000)
        before = [ModelFallbackMiddleware(answering)] if fallback else []
        tools = coding_tools(min_tokens=1_000, max_tokens=2_000)
        agent = create_agent(model, tools, middleware=[*before, ours])
        messages = {"messages": [HumanMessage(run.directives[0])]}
        if mode == "invoke":
            agent.invoke(messages, THREAD)
        else:
            asyncio.run(agent.ainvoke(messages, THREAD))
        return len(ours.core._folds), len(summarizer.calls), len(answering.requests)

    held, calls, requests = folds(fallback=False)
    assert (held, requests) == (0, 30)
    assert calls > 0
    assert folds(fallback=True) == (0, calls, requests)


def test_the_node_keeps_no_fold_once_it_returned_the_view() -> None:
    # A graph retries its model node, never the pre-model node: the node has no retry to
    # keep a fold for.
    node = WorkingTranscriptNode(ScriptedSummarizer("notes"), max_tokens=8_000)
    record = _record(20)
    update = node.invoke({"messages": record})
    assert request_problems(update["llm_input_messages"]) == []
    assert len(node.core._folds) == 0
