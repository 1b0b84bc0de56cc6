"""The create_agent middleware with 8 concurrent threads on one agent and one checkpointer.

One compiled agent (one middleware instance, one fold cache, one model, one summarizer)
serves 8 conversation threads at once from 8 OS threads, each working in its own area of a
code base. The checkpointer is shared: in memory, an SQLite file, or a PostgreSQL database.
No thread's memo (its fold's note) or working memory (files read, task) may mention
another thread's area. Runs ``ROUNDS`` times in a row under a timeout.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_builderforce_memory.agents.state import MEMO_KEY, WORKING_MEMORY_KEY
from langchain_builderforce_memory.messages import is_generated
from langchain_builderforce_memory.testing import ScriptedChatModel, coding_tools
from langchain_builderforce_memory.validity import request_problems

from .helpers import build_agent
from .test_concurrency import ROUNDS, TEST_TIMEOUT, run_in_threads

THREADS = 8
CALLS = 24
"""Tool calls per thread: 24 reads of 1.5k-3k tokens overflow the 12k view several times."""
AREA = re.compile(r"\barea\d\b")


class AreaModel:
    """The model's turn for any thread: read the next file of the request's own area.

    The area comes from the request's directive, so a request carrying another thread's
    context would read (and then remember) another area's files.
    """

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, messages: list[BaseMessage]) -> AIMessage:
        directive = next(
            str(m.content)
            for m in reversed(messages)
            if isinstance(m, HumanMessage) and not is_generated(m)
        )
        area = directive.rsplit(" ", 1)[-1]
        with self.lock:
            n = self.calls.get(area, 0)
            self.calls[area] = n + 1
        if n >= CALLS:
            return AIMessage(f"done with {area}")
        path = f"{area}/module{n}.py"
        return AIMessage(
            "", tool_calls=[{"name": "read_file", "args": {"path": path}, "id": f"{area}-{n}"}]
        )


def summarize_areas(prompt: list[BaseMessage]) -> str:
    """A note naming every area the fold was shown (a leak shows up as a foreign area)."""
    seen = sorted({a for m in prompt for a in AREA.findall(str(m.content) + str(m))})
    return "worked on " + " ".join(seen)


def checkpointers(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if backend == "memory":
        from contextlib import nullcontext

        from langgraph.checkpoint.memory import InMemorySaver

        return nullcontext(InMemorySaver())
    if backend == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        return SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db"))
    from langgraph.checkpoint.postgres import PostgresSaver

    return PostgresSaver.from_conn_string(request.getfixturevalue("postgres_url"))


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def open_checkpointer(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Callable[[], AbstractContextManager[Any]]:
    return lambda: checkpointers(request.param, request, tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT)
def test_eight_threads_on_one_checkpointer_never_share_memo_or_working_memory(
    open_checkpointer: Callable[[], AbstractContextManager[Any]],
) -> None:
    with open_checkpointer() as saver:
        if hasattr(saver, "setup"):
            saver.setup()
        for r in range(ROUNDS):
            areas = [f"area{t}" for t in range(THREADS)]
            script = AreaModel()
            model = ScriptedChatModel(script=[script] * (THREADS * (CALLS + 1)))
            agent = build_agent(
                "create_agent",
                model,
                coding_tools(min_tokens=1_500, max_tokens=3_000),
                summarizer=summarize_areas,
                checkpointer=saver,
                max_tokens=12_000,
            )

            def work(area: str, round_: int = r, agent: Any = agent) -> None:
                config: Any = {"configurable": {"thread_id": f"{round_}-{area}"}}
                agent.invoke({"messages": [HumanMessage(f"Work in {area}")]}, config)

            run_in_threads([lambda a=a: work(a) for a in areas])

            assert all(request_problems(req) == [] for req in model.requests)
            for area in areas:
                values = agent.get_state({"configurable": {"thread_id": f"{r}-{area}"}}).values
                memo = values[MEMO_KEY]
                assert memo is not None, f"{area}: never folded; the test exercised nothing"
                note = memo["note"]
                assert AREA.findall(note.split("worked on", 1)[1]) == [area], f"round {r}: {note}"
                memory = values[WORKING_MEMORY_KEY]["snapshot"]
                read = memory["read"]
                assert len(read) == CALLS
                assert all(p.startswith(f"{area}/") for p in read), f"round {r}: {read}"
                assert memory.get("task") == f"Work in {area}"
                assert values["messages"][-1].content == f"done with {area}"


def test_a_search_index_evicted_while_held_reopens_instead_of_failing() -> None:
    """What crashed the 8-thread run: the packer's recall keeps 4 indexes (LRU); a 5th
    thread evicted, and closed, one that another thread was still searching."""
    from langchain_core.messages import ToolMessage

    from langchain_builderforce_memory.search_index import RecordIndexes

    indexes = RecordIndexes(size=1)
    held = indexes.get("thread-a")
    record = [HumanMessage("fix it"), ToolMessage("E42 in lexer.py", tool_call_id="c")]
    assert [h.position for h in held.search(record, "lexer.py").hits] == [1]
    indexes.get("thread-b")  # evicts and closes thread-a's index
    assert [h.position for h in held.search(record, "lexer.py").hits] == [1]
