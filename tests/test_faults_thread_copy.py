"""Issue 16, reproducer 11: a thread copied with ``update_state`` keeps its private state."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from langchain_builderforce_memory.agents.state import MEMO_KEY, WORKING_MEMORY_KEY
from langchain_builderforce_memory.testing import (
    ScriptedChatModel,
    coding_agent_script,
    coding_tools,
)

from .helpers import ScriptedSummarizer, build_agent, run_directives


def folded_agent() -> tuple[Any, ScriptedSummarizer]:
    run = coding_agent_script(turns=40, directives=2)
    summarizer = ScriptedSummarizer("notes so far")
    agent = build_agent(
        "create_agent",
        ScriptedChatModel(script=run.script),
        coding_tools(min_tokens=1_000, max_tokens=2_000),
        summarizer=summarizer,
        checkpointer=InMemorySaver(),
        max_tokens=12_000,
    )
    run_directives(agent, run.directives)
    return agent, summarizer


def test_copying_a_thread_as_the_readme_says_carries_the_memo_and_working_memory() -> None:
    agent, _ = folded_agent()
    old = agent.get_state({"configurable": {"thread_id": "thread-1"}})
    assert old.values[MEMO_KEY] is not None
    copy: Any = {"configurable": {"thread_id": "copy"}}
    # The README's recipe: write the values as a node of the graph (a new thread's default
    # is its input, which leaves the private keys out).
    agent.update_state(copy, old.values, as_node="model")
    new = agent.get_state(copy).values
    assert new[MEMO_KEY] == old.values[MEMO_KEY]
    assert new[WORKING_MEMORY_KEY] == old.values[WORKING_MEMORY_KEY]
    assert new["messages"] == old.values["messages"]


def test_the_readme_names_the_recipe() -> None:
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[1] / "docs" / "guide.md").read_text("utf-8")
    assert 'update_state(copy, old.values, as_node="model")' in guide
