"""WorkingTranscriptNode: create_react_agent's pre_model_hook and a node in any StateGraph."""

from __future__ import annotations

import asyncio
import doctest
import warnings
from typing import Annotated, Any

import pytest
from langchain_core.messages import AnyMessage, HumanMessage, RemoveMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt import create_react_agent
from typing_extensions import NotRequired

from langchain_builderforce_memory.agents import node as nodes
from langchain_builderforce_memory.agents.driver import EVENT_KEY
from langchain_builderforce_memory.agents.node import (
    WorkingTranscriptKeys,
    WorkingTranscriptNode,
    WorkingTranscriptState,
)
from langchain_builderforce_memory.agents.state import MEMO_KEY, WORKING_MEMORY_KEY
from langchain_builderforce_memory.calibration import CALIBRATION_KEY
from langchain_builderforce_memory.handoff import is_volatile_tail
from langchain_builderforce_memory.store import CodeMapStore
from langchain_builderforce_memory.testing import (
    ScriptedChatModel,
    coding_agent_script,
    coding_tools,
)
from langchain_builderforce_memory.tokens import count_tokens
from langchain_builderforce_memory.validity import request_problems

from .helpers import (
    AGENT_SYSTEM_PROMPT,
    STREAMED_MODES,
    ScriptedSummarizer,
    build_agent,
    run_directives,
    tool_round,
    volatile_tails,
)

THREAD: Any = {"configurable": {"thread_id": "thread-1"}, "recursion_limit": 1_000}
SMALL_TOOLS = {"min_tokens": 1_000, "max_tokens": 2_000}


def _long_state(rounds: int = 30) -> dict[str, Any]:
    messages: list[AnyMessage] = [HumanMessage("Port the parser.")]
    for i in range(rounds):
        messages += tool_round(i, "r" * 4_000)
    return {"messages": messages}


def test_as_a_pre_model_hook_it_returns_the_view_and_its_keys_never_messages() -> None:
    node = WorkingTranscriptNode(
        ScriptedSummarizer("notes"), max_tokens=8_000, clear_tool_results=False
    )
    state = _long_state()
    before = list(state["messages"])
    update = node.invoke(state)
    assert set(update) == {"llm_input_messages", MEMO_KEY, WORKING_MEMORY_KEY, CALIBRATION_KEY}
    assert "messages" not in update
    assert state["messages"] == before  # the caller's state is not touched
    view = update["llm_input_messages"]
    assert request_problems(view) == []
    assert count_tokens(view) <= 8_000
    assert is_volatile_tail(view[-1])  # 30 reads: the brief rides last


def test_create_react_agent_sends_the_view_and_keeps_the_record() -> None:
    run = coding_agent_script(turns=40, directives=2)
    model = ScriptedChatModel(script=run.script)
    agent = build_agent(
        "react",
        model,
        coding_tools(**SMALL_TOOLS),
        summarizer=ScriptedSummarizer("notes"),
        checkpointer=InMemorySaver(),
        max_tokens=12_000,
    )
    run_directives(agent, run.directives)
    values = agent.get_state(THREAD).values
    record = values["messages"]
    assert len(record) == 2 + sum(1 + len(m.tool_calls) for m in run.script)
    assert not volatile_tails(record)
    assert values[MEMO_KEY] is not None
    for request in model.requests:
        assert request[0].content == AGENT_SYSTEM_PROMPT  # create_react_agent(prompt=...)
        assert sum(isinstance(m, SystemMessage) for m in request) == 1
        assert request_problems(request) == []
        assert count_tokens(request) <= 12_000


class _ViewState(MessagesState, WorkingTranscriptKeys):
    model_view: NotRequired[list[AnyMessage]]


def test_in_a_state_graph_the_view_goes_to_the_configured_key() -> None:
    seen: list[list[AnyMessage]] = []

    def model_node(state: dict[str, Any]) -> dict[str, Any]:
        seen.append(state["model_view"])
        return {"messages": [("ai", "done")]}

    builder = StateGraph(_ViewState)
    builder.add_node(
        "memory",
        WorkingTranscriptNode(
            ScriptedSummarizer("n"),
            max_tokens=8_000,
            view_key="model_view",
            clear_tool_results=False,
        ),
    )
    builder.add_node("model", model_node)
    builder.add_edge(START, "memory")
    builder.add_edge("memory", "model")
    builder.add_edge("model", END)
    graph = builder.compile()
    out = graph.invoke(_long_state())
    (view,) = seen
    assert count_tokens(view) <= 8_000
    assert len(out["messages"]) == 62  # the record, plus the answer
    assert "llm_input_messages" not in out


def test_overwrite_messages_replaces_the_record_only_when_asked() -> None:
    state = _long_state()
    kept = WorkingTranscriptNode(
        ScriptedSummarizer("n"), max_tokens=8_000, clear_tool_results=False
    ).invoke(state)
    assert "messages" not in kept
    node = WorkingTranscriptNode(
        ScriptedSummarizer("n"), max_tokens=8_000, overwrite_messages=True, clear_tool_results=False
    )
    update = node.invoke(state)
    remove, *stored = update["messages"]
    assert isinstance(remove, RemoveMessage)
    assert remove.id == REMOVE_ALL_MESSAGES
    assert not volatile_tails(stored)  # the brief is never stored
    assert update[MEMO_KEY] is None  # the note now lives in the record itself
    assert update[WORKING_MEMORY_KEY]["scanned"] == len(stored)
    assert is_volatile_tail(update["llm_input_messages"][-1])


def test_overwrite_messages_leaves_a_record_that_fits_alone() -> None:
    node = WorkingTranscriptNode(overwrite_messages=True)
    update = node.invoke({"messages": [HumanMessage("hi")]})
    assert "messages" not in update


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"view_key": "messages"}, ValueError, "overwrite_messages=True"),
        ({"view_key": ""}, ValueError, "view_key must be a non-empty state key"),
        ({"overwrite_messages": "yes"}, ValueError, "overwrite_messages must be True or False"),
        ({"system_prompt": 3}, TypeError, "system_prompt must be a str or a SystemMessage"),
        ({"max_tokns": 3}, TypeError, "did you mean 'max_tokens'"),
    ],
)
def test_bad_options_are_rejected_naming_the_fix(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        WorkingTranscriptNode(**kwargs)


def test_a_state_without_the_messages_key_names_the_option() -> None:
    with pytest.raises(ValueError, match="messages_key"):
        WorkingTranscriptNode().invoke({"history": []})


def test_the_system_prompt_is_counted_but_not_added() -> None:
    prompt = "Follow the house rules. " * 800  # ~4.8k tokens
    node = WorkingTranscriptNode(ScriptedSummarizer("n"), system_prompt=prompt, max_tokens=10_000)
    view = node.invoke(_long_state())["llm_input_messages"]
    assert not [m for m in view if isinstance(m, SystemMessage)]
    assert count_tokens([SystemMessage(prompt), *view]) <= 10_000


def test_the_node_fits_the_view_to_its_model() -> None:
    small = ScriptedChatModel(profile={"max_input_tokens": 6_000, "max_output_tokens": 1_000})
    node = WorkingTranscriptNode(ScriptedSummarizer("n"), model=small, max_tokens=20_000)
    view = node.invoke(_long_state())["llm_input_messages"]
    assert request_problems(view) == []
    assert count_tokens(view) <= 6_000 - 1_000


@pytest.mark.parametrize(
    "mode",
    STREAMED_MODES,
)
def test_folds_reach_the_custom_stream_of_a_graph(mode: str) -> None:
    run = coding_agent_script(turns=40, directives=1)
    summarizer = ScriptedSummarizer("notes")
    agent = build_agent(
        "graph",
        ScriptedChatModel(script=run.script),
        coding_tools(**SMALL_TOOLS),
        summarizer=summarizer,
        checkpointer=InMemorySaver(),
        max_tokens=12_000,
    )
    events = run_directives(agent, run.directives, mode=mode)
    assert sum(e[EVENT_KEY] == "fold" for e in events) == len(summarizer.calls) > 0


@pytest.mark.parametrize("kind", ["create_agent", "react", "graph"])
def test_sync_and_async_agents_send_the_same_requests(kind: str) -> None:
    # The middleware and the node share one core: both drivers, sync and async, must agree.
    def requests(mode: str) -> list[list[tuple[str, object]]]:
        run = coding_agent_script(turns=40, directives=2)
        model = ScriptedChatModel(script=run.script)
        agent = build_agent(
            kind,
            model,
            coding_tools(**SMALL_TOOLS),
            summarizer=ScriptedSummarizer("notes"),
            checkpointer=InMemorySaver(),
            max_tokens=12_000,
        )
        run_directives(agent, run.directives, mode=mode)
        return [[(m.type, m.content) for m in r] for r in model.requests]

    assert requests("stream") == requests("ainvoke")


def test_the_async_node_awaits_an_async_summarizer() -> None:
    calls: list[int] = []

    async def summarize(prompt: list[AnyMessage]) -> str:
        calls.append(len(prompt))
        return "async notes"

    node = WorkingTranscriptNode(summarize, max_tokens=8_000, clear_tool_results=False)
    update = asyncio.run(node.ainvoke(_long_state()))
    assert calls
    assert "async notes" in update[MEMO_KEY]["note"]


def test_the_consolidation_node_saves_the_runs_code_map() -> None:
    maps = CodeMapStore()
    node = WorkingTranscriptNode(code_maps=maps, code_map_scope=("team", "repo"))
    run = coding_agent_script(turns=30, directives=1)
    model = ScriptedChatModel(script=run.script)
    tools = coding_tools(min_tokens=50, max_tokens=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(
            model, tools, pre_model_hook=node, state_schema=WorkingTranscriptState
        )
    final = agent.invoke({"messages": [HumanMessage(run.directives[0])]}, THREAD)
    assert maps.maps_for("src/app", scope=("team", "repo")) == []
    update = node.consolidation_node.invoke(final)
    assert isinstance(update, dict)
    (saved,) = maps.maps_for("src/app", scope=("team", "repo"))
    assert saved.area == "src/app"


def test_the_keys_mix_into_a_users_own_schema() -> None:
    class State(MessagesState, WorkingTranscriptKeys):
        step: NotRequired[Annotated[int, lambda a, b: a + b]]

    builder = StateGraph(State)
    builder.add_node("memory", WorkingTranscriptNode())
    builder.add_edge(START, "memory")
    builder.add_edge("memory", END)
    out = builder.compile().invoke({"messages": [HumanMessage("hi")]})
    assert [m.content for m in out["llm_input_messages"]] == ["hi"]
    assert out[WORKING_MEMORY_KEY]["snapshot"]["task"] == "hi"


def test_the_examples_in_the_docstrings_run() -> None:
    result = doctest.testmod(nodes)
    assert result.attempted > 0
    assert result.failed == 0
