"""Tool calls -> working-memory observations, as a LangChain callback handler.

`WorkingMemoryCallbackHandler` feeds `ToolObservationMapper` (see
`langchain_builderforce_memory.working.mapper`) from `on_tool_start` / `on_tool_end`, one
memory per LangGraph thread.

Only SUCCESSFUL calls are recorded: a raised exception, a `ToolMessage` with
`status="error"`, or an output that reads as an error records nothing. A memory that
claims a write that failed grounds every later turn on a lie; a missed read only costs a
re-read.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from langchain_builderforce_memory.working.mapper import (
    DEFAULT_TOOL_RULES,
    ByCommand,
    ObservationFn,
    ObservationMapper,
    PathArg,
    QueryArg,
    ToolObservationMapper,
    ToolRule,
    observations_from_tool_call,
    parse_tool_input,
)
from langchain_builderforce_memory.working.memory import WorkingMemory

__all__ = [
    "DEFAULT_TOOL_RULES",
    "ByCommand",
    "ObservationFn",
    "ObservationMapper",
    "PathArg",
    "QueryArg",
    "ToolObservationMapper",
    "ToolRule",
    "WorkingMemoryCallbackHandler",
    "observations_from_tool_call",
    "parse_tool_input",
]


@dataclass(frozen=True, slots=True)
class _PendingCall:
    name: str
    args: Mapping[str, object] | str
    thread: str | None


class WorkingMemoryCallbackHandler(BaseCallbackHandler):
    """Records successful tool calls into a `WorkingMemory` per LangGraph thread.

    `on_tool_start` remembers the call by `run_id`; `on_tool_end` records it only when the
    output does not say it failed; `on_tool_error` forgets it. The thread comes from the
    run's metadata (`thread_key`, which LangGraph fills from `configurable["thread_id"]`;
    with plain LangChain pass `config={"metadata": {"thread_id": ...}}`); calls with none go
    to one default memory, `memory_for(None)`.

    The same sync methods serve `invoke` and `ainvoke`: they are a few dict operations
    under a lock, so `run_inline` runs them on the event loop instead of hopping to a
    thread, and a call's start is always handled before its end.

    Example:
        >>> from langchain_core.tools import tool
        >>> @tool
        ... def read_file(file_path: str) -> str:
        ...     '''Read a file.'''
        ...     return "..."
        >>> handler = WorkingMemoryCallbackHandler()
        >>> _ = read_file.invoke(
        ...     {"file_path": "a.py"},
        ...     config={"callbacks": [handler], "metadata": {"thread_id": "t1"}},
        ... )
        >>> handler.memory_for("t1").snapshot["read"]
        ['a.py']
    """

    run_inline = True

    def __init__(
        self, mapper: ObservationMapper | None = None, *, thread_key: str = "thread_id"
    ) -> None:
        """Record tool calls through `mapper` (default `ToolObservationMapper()`).

        Args:
            mapper: Turns a call into observations; see `ToolObservationMapper`.
            thread_key: The run-metadata key naming the thread.

        Raises:
            ValueError: `thread_key` is empty.
        """
        if not isinstance(thread_key, str) or not thread_key:
            raise ValueError(f"thread_key must be a non-empty str; got {thread_key!r}.")
        self.mapper: ObservationMapper = mapper or ToolObservationMapper()
        self.thread_key = thread_key
        self._lock = threading.Lock()
        self._pending: dict[UUID, _PendingCall] = {}
        self._memories: dict[str | None, WorkingMemory] = {}

    # Only tool events matter: skipping the rest spares every LLM / chain event a call.
    # (Tool events are gated by `ignore_agent`, so that one stays False.)
    ignore_llm = ignore_chat_model = ignore_chain = True
    ignore_retriever = ignore_retry = ignore_custom_event = True

    def memory_for(self, thread_id: str | None = None) -> WorkingMemory:
        """The memory of `thread_id` (created empty on first use); `None`: the default one.

        The returned memory is live: the handler keeps writing to it under its lock.
        """
        with self._lock:
            return self._memory(thread_id)

    def threads(self) -> list[str | None]:
        """The threads that have a memory."""
        with self._lock:
            return list(self._memories)

    def release(self, thread_id: str | None = None) -> WorkingMemory | None:
        """Drop the memory of `thread_id` (once its run is consolidated) and return it."""
        with self._lock:
            return self._memories.pop(thread_id, None)

    def _memory(self, thread_id: str | None) -> WorkingMemory:
        memory = self._memories.get(thread_id)
        if memory is None:
            memory = self._memories[thread_id] = WorkingMemory()
        return memory

    def _thread_of(self, metadata: Mapping[str, object] | None) -> str | None:
        value = (metadata or {}).get(self.thread_key)
        return None if value is None or value == "" else str(value)

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the call until it ends."""
        name = (serialized or {}).get("name") or kwargs.get("name")
        if not isinstance(name, str):
            return
        args = inputs if inputs is not None else input_str
        call = _PendingCall(name, args, self._thread_of(metadata))
        with self._lock:
            self._pending[run_id] = call

    def on_tool_end(
        self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """Record the call's observations, unless its output says it failed."""
        with self._lock:
            call = self._pending.pop(run_id, None)
        if call is None:
            return
        with self._lock:
            memory = self._memory(call.thread)
            known = memory.known_paths
        observations = observations_from_tool_call(
            call.name, call.args, output, mapper=self.mapper, known_paths=known
        )
        with self._lock:
            memory.observe_all(observations)

    def on_tool_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Forget the call: a call that raised did nothing worth remembering."""
        with self._lock:
            self._pending.pop(run_id, None)
