"""The model's own hands on its memory: ``search_history`` and ``compact_context``.

Both read the graph's state through LangGraph's injected :class:`~langgraph.prebuilt.
ToolRuntime` (the record under ``messages``, the last view's mark, the compaction state),
so they work in ``create_agent`` (the middleware registers them with ``agent_tools=True``)
and in any ``ToolNode`` (``WorkingTranscriptNode(..., agent_tools=True).memory_tools``).

- ``search_history(query, limit=5)`` searches what the model can no longer see: the
  record less the messages the last view sent verbatim (:mod:`~langchain_builderforce_memory.
  search`). Exact text first, then BM25 on the words. The answer is capped in tokens and
  says how many more messages matched. It never calls a model: one SQLite FTS5 index per
  thread, kept by the tool and extended with each new message.
- ``compact_context(focus="")`` asks for a fold at the next model call, keeping ``focus``
  above all (it goes into the summarizer prompt; the fold event says
  ``reason="requested"``). The request is a state update (a ``Command``), so a
  checkpoint keeps it. A second request within ``refold_min_new_tokens`` of new work is
  refused, plainly.

Bad input (an empty query, a number for a string, a limit of a million) gets a short
plain answer, never an exception inside the graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Final

from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolRuntime
from langgraph.types import Command
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from langchain_builderforce_memory.agents.core import MemoryCore
from langchain_builderforce_memory.agents.state import state_get
from langchain_builderforce_memory.agents.toolstate import (
    COMPACT_KEY,
    new_request,
    read_compact,
    read_view_mark,
)
from langchain_builderforce_memory.messages import message_id
from langchain_builderforce_memory.search import (
    DEFAULT_ANSWER_TOKENS,
    render_search,
)
from langchain_builderforce_memory.search_index import MAX_SEARCH_LIMIT, RecordIndexes

__all__ = [
    "COMPACT_CONTEXT",
    "SEARCH_HISTORY",
    "CompactContextTool",
    "SearchHistoryTool",
    "memory_tools",
]

SEARCH_HISTORY: Final = "search_history"
COMPACT_CONTEXT: Final = "compact_context"

_SEARCH_DESCRIPTION: Final = (
    "Search the earlier messages of this conversation that are no longer in your view "
    "(folded into the memory note, cleared or cut): tool outputs, file contents, error "
    "text, earlier instructions. Exact text (a path, an identifier, an error message) is "
    "matched first, then messages sharing its words. Use it before re-running a tool to "
    "get back something you already saw."
)
_COMPACT_DESCRIPTION: Final = (
    "Compact your older context into the memory note before your next step, to free room "
    "for new work. Say in `focus` what the note must keep above all (for example: the "
    "failing test and the plan for the parser). Allowed once per stretch of new work."
)


class SearchHistoryInput(BaseModel):
    """``search_history``'s arguments (the runtime is injected, never the model's)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    # Typed Any for validation, "string" for the model: a wrong type then reaches the tool
    # and gets a plain answer instead of a validation error.
    query: Annotated[
        Any,
        WithJsonSchema(
            {"type": "string", "description": "Exact text (path, identifier, error) or words."}
        ),
    ]
    limit: Annotated[
        Any,
        WithJsonSchema(
            {"type": "integer", "description": f"Messages to show, 1 to {MAX_SEARCH_LIMIT}."}
        ),
    ] = 5
    runtime: ToolRuntime


class CompactContextInput(BaseModel):
    """``compact_context``'s arguments (the runtime is injected)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    focus: Annotated[
        Any,
        WithJsonSchema(
            {"type": "string", "description": "What the memory note must keep above all."}
        ),
    ] = ""
    runtime: ToolRuntime


def _record(runtime: ToolRuntime | None, key: str) -> list[BaseMessage] | None:
    raw = state_get(runtime.state, key) if runtime is not None else None
    if isinstance(raw, Sequence) and not isinstance(raw, str):
        return [m for m in raw if isinstance(m, BaseMessage)]
    return None


def _thread_key(runtime: ToolRuntime, record: Sequence[BaseMessage]) -> str:
    configurable = (runtime.config or {}).get("configurable") or {}
    thread = configurable.get("thread_id")
    if thread is not None:
        return f"thread:{thread}"
    # No checkpointer: the record's first message names the conversation.
    return f"record:{message_id(record[0])}" if record else "record:"


def _limit(raw: object) -> int | str:
    """The limit as an int in range, or the plain answer for a bad one."""
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return f"limit must be a whole number from 1 to {MAX_SEARCH_LIMIT}; got {raw!r}."
    try:
        value = int(raw)
    except (ValueError, OverflowError):  # "many", NaN; infinity (JSON's 1e400)
        return f"limit must be a whole number from 1 to {MAX_SEARCH_LIMIT}; got {raw!r}."
    return max(1, min(value, MAX_SEARCH_LIMIT))


def _thread_indexes() -> RecordIndexes:
    return RecordIndexes(skip_tools=(SEARCH_HISTORY, COMPACT_CONTEXT))


class SearchHistoryTool(BaseTool):
    """``search_history(query, limit=5)``: find what the view no longer shows.

    Example:
        >>> from langchain_builderforce_memory.agents.core import MemoryCore
        >>> from langchain_builderforce_memory.agents.policy import MemoryPolicy
        >>> SearchHistoryTool(core=MemoryCore(MemoryPolicy())).name
        'search_history'
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = SEARCH_HISTORY
    description: str = _SEARCH_DESCRIPTION
    args_schema: type[BaseModel] = SearchHistoryInput
    core: MemoryCore
    """Its counter caps the answer."""
    messages_key: str = "messages"
    """Where the record is in the state."""
    answer_tokens: int = DEFAULT_ANSWER_TOKENS
    """The answer's ceiling in tokens."""
    indexes: RecordIndexes = Field(default_factory=_thread_indexes)
    """One full-text index per thread, extended with each new message. Its own earlier
    answers are not searched: they quote other messages, which would then match twice."""

    def _run(
        self, query: object, limit: object = 5, runtime: ToolRuntime | None = None, **_: Any
    ) -> str:
        # The async path is BaseTool's: this runs in a worker thread, off the event loop
        # (a first search of a long record indexes all of it).
        if not isinstance(query, str) or not query.strip():
            return (
                "search_history needs `query`: a non-empty string (a path, an identifier, "
                f"error text or words); got {query!r}."
            )
        count = _limit(limit)
        if isinstance(count, str):
            return count
        record = _record(runtime, self.messages_key)
        if runtime is None or record is None:
            return f"search_history: no message record under {self.messages_key!r} here."
        mark = read_view_mark(runtime.state)
        result = self.indexes.get(_thread_key(runtime, record)).search(
            record,
            query,
            limit=count,
            hidden_ids=mark["ids"] if mark is not None else (),
            end=mark["end"] if mark is not None else None,
        )
        return render_search(
            result,
            max_tokens=self.answer_tokens,
            token_counter=self.core.counter,
            view_known=mark is not None,
        )


class CompactContextTool(BaseTool):
    """``compact_context(focus="")``: fold at the next model call, keeping ``focus``.

    Example:
        >>> from langchain_builderforce_memory.agents.core import MemoryCore
        >>> from langchain_builderforce_memory.agents.policy import MemoryPolicy
        >>> CompactContextTool(core=MemoryCore(MemoryPolicy())).name
        'compact_context'
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = COMPACT_CONTEXT
    description: str = _COMPACT_DESCRIPTION
    args_schema: type[BaseModel] = CompactContextInput
    core: MemoryCore
    """Its policy's ``refold_after`` rate-limits requests; its summarizer makes the fold."""
    messages_key: str = "messages"
    """Where the record is in the state (the answer is appended there)."""

    def _run(
        self, focus: object = "", runtime: ToolRuntime | None = None, **_: Any
    ) -> Command[Any] | str:
        if focus is None:
            focus = ""
        if not isinstance(focus, str):
            return (
                "compact_context takes `focus` as a string (what the note must keep), or "
                f"nothing; got {focus!r}."
            )
        if self.core.summarizer is None:
            return "Not compacted: this agent has no summarizer; its view can only be windowed."
        record = _record(runtime, self.messages_key)
        if runtime is None or record is None:
            return f"compact_context: no message record under {self.messages_key!r} here."
        tokens = sum(map(self.core.counter.count_message, record))
        held = read_compact(runtime.state)
        if held is not None and held["pending"]:
            return "Already requested: the compaction happens before your next step."
        wait = self.core.policy.refold_after
        if held is not None and tokens - held["asked_at"] < wait:
            done = tokens - held["asked_at"]
            return (
                f"Not compacted: the last compaction was asked {done:,} tokens of work ago; "
                f"ask again after {wait - done:,} more. search_history finds what the note "
                "left out."
            )
        keep = f", keeping: {focus.strip()}" if focus.strip() else ""
        answer = ToolMessage(
            f"Compaction requested: your older context is folded into the memory note "
            f"before your next step{keep}.",
            tool_call_id=runtime.tool_call_id or "",
            name=self.name,
        )
        return Command(
            update={COMPACT_KEY: new_request(focus, tokens), self.messages_key: [answer]}
        )


def memory_tools(
    core: MemoryCore,
    *,
    messages_key: str = "messages",
    answer_tokens: int = DEFAULT_ANSWER_TOKENS,
) -> list[BaseTool]:
    """``[search_history, compact_context]`` bound to an adapter's core.

    Example:
        >>> from langchain_builderforce_memory.agents.policy import MemoryPolicy
        >>> [t.name for t in memory_tools(MemoryCore(MemoryPolicy()))]
        ['search_history', 'compact_context']
    """
    if isinstance(answer_tokens, bool) or not isinstance(answer_tokens, int) or answer_tokens < 200:
        msg = f"answer_tokens must be an int >= 200; got {answer_tokens!r}."
        raise ValueError(msg)
    return [
        SearchHistoryTool(core=core, messages_key=messages_key, answer_tokens=answer_tokens),
        CompactContextTool(core=core, messages_key=messages_key),
    ]
