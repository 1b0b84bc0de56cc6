"""``WorkingTranscriptNode``: the pre-model step for LangGraph agents.

Two ways in, one node:

- ``create_react_agent(model, tools, pre_model_hook=node, state_schema=WorkingTranscriptState)``
  (deprecated in favour of ``create_agent``, still widely deployed). The node returns the
  view under ``llm_input_messages``, which the agent sends INSTEAD of ``messages``, plus
  its own state keys. It never rewrites ``messages`` unless ``overwrite_messages=True``
  asks for exactly that.
- Any ``StateGraph``: add the node before the model node; the view is written to
  ``view_key`` (default ``"llm_input_messages"``) and the model node sends
  ``state[view_key]``.

Each turn the record (``state["messages"]``) is windowed or folded into the view, the
working-memory brief is appended as the volatile tail (last, never stored in
``messages``), and with ``model=`` the view is fitted to that model's profile. The memo
and the working memory are written to :data:`~langchain_builderforce_memory.agents.state.
MEMO_KEY` and :data:`~langchain_builderforce_memory.agents.state.WORKING_MEMORY_KEY` as
plain JSON, so any checkpointer persists them: add the keys to your state schema
(:class:`WorkingTranscriptKeys`, or use :class:`WorkingTranscriptState`).

The node is a ``Runnable`` with a real ``invoke`` and ``ainvoke``, so sync graphs
(``invoke`` / ``stream``) and async ones (``ainvoke`` / ``astream``) each run their own
path; the summarizer is awaited in the async one. This module needs only langchain-core
and langgraph (no ``langchain``).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any

from langchain_core.messages import AnyMessage, BaseMessage, RemoveMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.config import get_stream_writer
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from langgraph.managed import RemainingSteps
from langgraph.types import StreamWriter
from typing_extensions import NotRequired, Required

from langchain_builderforce_memory.agents.core import MemoryCore
from langchain_builderforce_memory.agents.driver import (
    arun_turn,
    asave_code_maps,
    emit_events,
    run_turn,
    save_code_maps,
)
from langchain_builderforce_memory.agents.native import NativeMode, check_native, unchained
from langchain_builderforce_memory.agents.policy import (
    CODE_MAP_LIMIT,
    TAIL_RESERVE_TOKENS,
    CodeMapScope,
    MaxTokens,
)
from langchain_builderforce_memory.agents.state import (
    MEMO_KEY,
    WORKING_MEMORY_KEY,
    reset_scan,
    state_get,
)
from langchain_builderforce_memory.agents.tools import memory_tools
from langchain_builderforce_memory.agents.toolstate import BuilderforceStateKeys
from langchain_builderforce_memory.agents.turn import TurnView
from langchain_builderforce_memory.handoff import ToolLike
from langchain_builderforce_memory.messages import as_messages, role_of
from langchain_builderforce_memory.models import resolve_model
from langchain_builderforce_memory.options import keyword_options
from langchain_builderforce_memory.store import CodeMapStore
from langchain_builderforce_memory.tokens import TokenCounterLike
from langchain_builderforce_memory.transcript.memo import (
    COMPACT_TAIL_MAX_MESSAGES,
    COMPACT_TAIL_TOKEN_BUDGET,
    COMPACT_TAIL_TURNS,
)
from langchain_builderforce_memory.transcript.summary import (
    DEFAULT_SUMMARIZER_TIMEOUT,
    SummarizerLike,
)
from langchain_builderforce_memory.transcript.window import HISTORY_TOKEN_BUDGET, MessageCeiling
from langchain_builderforce_memory.working.mapper import ToolObservationMapper

__all__ = [
    "DEFAULT_VIEW_KEY",
    "WorkingTranscriptKeys",
    "WorkingTranscriptNode",
    "WorkingTranscriptState",
]

DEFAULT_VIEW_KEY = "llm_input_messages"
"""Where the view goes: the key ``create_react_agent`` sends instead of ``messages``."""


class WorkingTranscriptKeys(BuilderforceStateKeys, total=False):
    """The keys the node writes: mix them into your own state schema.

    The package's state keys (:class:`~langchain_builderforce_memory.agents.toolstate.
    BuilderforceStateKeys`), the view, and the schema marker.

    Example:
        >>> from langgraph.graph import MessagesState
        >>> class State(MessagesState, WorkingTranscriptKeys):
        ...     pass
        >>> keys = sorted(k for k in State.__annotations__ if k.startswith("builderforce"))
        >>> print(*keys)  # doctest: +NORMALIZE_WHITESPACE
        builderforce_calibration builderforce_compact builderforce_memo
        builderforce_schema builderforce_view builderforce_working_memory
    """

    llm_input_messages: list[AnyMessage]
    """The view the model is sent this turn (rewritten every turn)."""
    builderforce_schema: Annotated[list[str], operator.add]
    """Never written. A key with a reducer is in every state LangGraph hands a node, as
    ``[]``, from the first step on: the node reads it to know the graph keeps its keys."""


class WorkingTranscriptState(WorkingTranscriptKeys):
    """A complete agent state with the node's keys.

    For ``create_react_agent(..., state_schema=WorkingTranscriptState)`` or a
    ``StateGraph``: ``messages`` (with ``add_messages``), ``remaining_steps`` and
    :class:`WorkingTranscriptKeys`.
    """

    messages: Required[Annotated[list[AnyMessage], add_messages]]
    """The record: every message of the run, never shrunk by the node."""
    remaining_steps: NotRequired[RemainingSteps]
    """Managed by LangGraph: steps left before the recursion limit."""


SCHEMA_KEY = "builderforce_schema"
"""The state key that shows the graph's schema holds :class:`WorkingTranscriptKeys`."""


def _in_graph(config: RunnableConfig | None) -> bool:
    """Whether a call runs as a step of a LangGraph run (not a direct ``invoke``)."""
    metadata = (config or {}).get("metadata") or {}
    return isinstance(metadata.get("langgraph_step"), int)


def _stream_writer() -> StreamWriter | None:
    """LangGraph's stream writer inside a graph run; ``None`` outside one.

    (On Python 3.10 an async graph cannot reach it, contextvars do not propagate there;
    the fold is then reported by its log line only.)
    """
    try:
        return get_stream_writer()
    except (RuntimeError, KeyError):
        return None


@keyword_options
class WorkingTranscriptNode(Runnable[Any, dict[str, Any]]):
    """Window / fold the record into the model's view, add the brief, fit the model.

    Args:
        summarizer: Folds the older part of the run into a note: a chat model, a
            ``"provider:model"`` string (``init_chat_model``), any ``Runnable``, or a
            function ``(prompt messages) -> str``. ``None`` only windows.
        system_prompt: The system prompt the MODEL node sends in front of the view (e.g.
            ``create_react_agent(prompt=...)``): counted in ``max_tokens``, not added to
            the view (the model node adds it). Leading system messages of the record
            itself are kept in the view.
        model: The model that will serve the request (a chat model or a
            ``"provider:model"`` string): its ``profile["max_input_tokens"]`` (less its
            reply and tool schemas) caps the view (``fit_to_model``).
        tools: The tool schemas that model is sent, when they are not bound to ``model``
            (``create_react_agent`` binds them itself): counted against its window.
        messages_key: Where the record is in the state.
        view_key: Where the view is written (the model node sends ``state[view_key]``).
        overwrite_messages: ALSO replace the record with the view (without the volatile
            tail): the destructive ``RemoveMessage(REMOVE_ALL_MESSAGES)`` overwrite, which
            the node never does unless asked. The memo is then reset (the record is the
            view).

    The options after ``summarizer`` are the fields of
    :class:`~langchain_builderforce_memory.agents.policy.MemoryPolicy` (one is built from them)
    and the working-memory wiring; their paragraphs are shared with it.

    Raises:
        TypeError: an unknown option or an argument of the wrong kind.
        ValueError: a bad number or key, naming it and the fix.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> node = WorkingTranscriptNode(max_tokens=32_000)
        >>> out = node.invoke({"messages": [HumanMessage("hi")]})
        >>> [m.content for m in out["llm_input_messages"]]
        ['hi']
    """

    def __init__(
        self,
        summarizer: SummarizerLike | None = None,
        *,
        system_prompt: str | SystemMessage | None = None,
        model: Runnable[Any, Any] | str | None = None,
        tools: Sequence[ToolLike] | None = None,
        messages_key: str = "messages",
        view_key: str = DEFAULT_VIEW_KEY,
        overwrite_messages: bool = False,
        max_tokens: MaxTokens = HISTORY_TOKEN_BUDGET,
        max_messages: MessageCeiling = "auto",
        tail_tokens: int = COMPACT_TAIL_TOKEN_BUDGET,
        min_tail_messages: int = COMPACT_TAIL_TURNS,
        max_tail_messages: int = COMPACT_TAIL_MAX_MESSAGES,
        working_memory: bool = True,
        tail_reserve_tokens: int = TAIL_RESERVE_TOKENS,
        fit_to_model: bool = True,
        reserve_output_tokens: int | None = None,
        handoff_summarize: bool = False,
        timeout: float | None = DEFAULT_SUMMARIZER_TIMEOUT,
        backoff_tokens: int | None = None,
        code_map_limit: int = CODE_MAP_LIMIT,
        agent_tools: bool = False,
        refold_min_new_tokens: int | None = None,
        clear_at_least: int | None = None,
        restore_tokens: int | None = None,
        clear_tool_results: bool = True,
        clear_edit_inputs: bool = True,
        token_counter: TokenCounterLike = None,
        code_maps: CodeMapStore | None = None,
        code_map_scope: CodeMapScope = "default",
        tool_mapper: ToolObservationMapper | None = None,
        usage_calibration: bool = True,
        native: NativeMode = "off",
    ) -> None:
        for name, key in (("messages_key", messages_key), ("view_key", view_key)):
            if not isinstance(key, str) or not key:
                msg = f"{name} must be a non-empty state key; got {key!r}."
                raise ValueError(msg)
        if view_key == messages_key:
            msg = (
                f"view_key and messages_key are both {view_key!r}: writing the view into the "
                "record would merge it into the history. Use another view_key, or "
                "overwrite_messages=True to replace the record with the view."
            )
            raise ValueError(msg)
        flag: object = overwrite_messages  # checked at run time: users pass anything
        if not isinstance(flag, bool):
            msg = f"overwrite_messages must be True or False; got {flag!r}."
            raise ValueError(msg)
        prompt: object = system_prompt
        if prompt is not None and not isinstance(prompt, str | SystemMessage):
            msg = f"system_prompt must be a str or a SystemMessage; got {type(prompt).__name__}."
            raise TypeError(msg)
        given: object = tools
        if given is not None and not isinstance(given, Sequence):
            msg = f"tools must be a list of tools (or None); got {type(given).__name__}."
            raise TypeError(msg)
        check_native(native)
        if native != "off":
            msg = (
                f"native={native!r} needs BuilderforceMemoryMiddleware (create_agent), which "
                "sets each request's model settings; a pre-model node cannot. Fix: configure "
                "context_management on the model you pass as model= (the node's tiers then "
                "stand down where the provider acts), or omit native."
            )
            raise ValueError(msg)
        self.core = MemoryCore.from_options(locals())
        self.policy = policy = self.core.policy
        self.system_prompt = (
            SystemMessage(system_prompt) if isinstance(system_prompt, str) else system_prompt
        )
        self.model = resolve_model(model, what="model")
        self.tools = list(tools) if tools is not None else None
        if policy.fraction is not None:
            # A share of the model's window needs that model and its profile: say so now,
            # not on the graph's first step.
            self.core.fraction_budget(policy.fraction, self.model, self.tools, None)
        self.messages_key = messages_key
        self.view_key = view_key
        self.overwrite_messages = overwrite_messages
        self.name = type(self).__name__
        self.memory_tools = (
            memory_tools(self.core, messages_key=messages_key) if self.policy.agent_tools else []
        )
        """``agent_tools``: search_history and compact_context, for the graph's ``ToolNode``."""

    def _record(self, state: object) -> list[BaseMessage]:
        raw = state_get(state, self.messages_key)
        if not isinstance(raw, Sequence) or isinstance(raw, str):
            msg = (
                f"{self.name}: the state has no message list under {self.messages_key!r} "
                f"(got {type(raw).__name__}); pass messages_key=<your messages key>."
            )
            raise ValueError(msg)
        record = as_messages(raw, where=f"{self.name} state[{self.messages_key!r}]")
        return record if isinstance(record, list) else list(record)

    def _check_schema(self, state: object, config: RunnableConfig | None) -> None:
        """Fail on a graph's first step when its state schema lacks the node's keys.

        LangGraph silently drops a node's writes to keys its state schema lacks
        (``MessagesState`` has no ``llm_input_messages``): the model node then fails with a
        ``KeyError`` or, falling back to ``state["messages"]``, sends the whole record over
        any budget, and the memo is lost every turn. :data:`SCHEMA_KEY` is in every state
        of a graph that has the keys, so its absence says so before the model is called.
        """
        if not _in_graph(config) or state_get(state, SCHEMA_KEY) is not None:
            return
        msg = (
            f"{self.name}: the graph's state schema lacks the node's keys (MessagesState "
            f"has none), so LangGraph would drop the view it writes to {self.view_key!r} and "
            "the model would be sent the whole record. Build the graph on the node's state: "
            "StateGraph(WorkingTranscriptState), or add the node's keys to your own: "
            "class State(MessagesState, WorkingTranscriptKeys): pass."
        )
        raise ValueError(msg)

    def _update(self, turn: TurnView, record: list[BaseMessage]) -> dict[str, Any]:
        view = unchained(turn.messages, record, self.model)
        out: dict[str, Any] = {**turn.update, self.view_key: view}
        emit_events(turn.events, _stream_writer())
        if not self.overwrite_messages or turn.transcript.mode == "verbatim":
            return out
        kept = list(turn.transcript.messages)
        if self.system_prompt is not None and kept and role_of(kept[0]) == "system":
            kept = kept[1:]  # the model node adds the prompt; the record never held it
        out[self.messages_key] = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *kept]
        out[MEMO_KEY] = None  # the note is now IN the record: nothing to remember
        if turn.run is not None:
            out[WORKING_MEMORY_KEY] = reset_scan(turn.run, kept)
        return out

    def invoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """The state update for one turn.

        The view under ``view_key``; the memo and the working memory when they changed.
        """
        record = self._record(input)
        self._check_schema(input, config)
        turn = run_turn(
            self.core,
            record,
            input,
            system=self.system_prompt,
            model=self.model,
            tools=self.tools,
            config=config,
        )
        self.core.settled(record)  # a graph retries the model node, never this one
        return self._update(turn, record)

    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """Async :meth:`invoke` (the summarizer and the store are awaited)."""
        record = self._record(input)
        self._check_schema(input, config)
        turn = await arun_turn(
            self.core,
            record,
            input,
            system=self.system_prompt,
            model=self.model,
            tools=self.tools,
            config=config,
        )
        self.core.settled(record)  # a graph retries the model node, never this one
        return self._update(turn, record)

    def consolidate(self, state: Any, config: RunnableConfig | None = None) -> dict[str, Any]:
        """End of a run: read the last tool results and save the code map (``code_maps``).

        Add :attr:`consolidation_node` after the agent loop in a ``StateGraph``, or call
        this with the final state after ``create_react_agent(...).invoke(...)``.
        """
        record = self._record(state)
        update, snapshot, scope = self.core.end_of_run(record, state, config)
        save_code_maps(self.core, snapshot, scope)
        return update

    async def aconsolidate(
        self, state: Any, config: RunnableConfig | None = None
    ) -> dict[str, Any]:
        """Async :meth:`consolidate`."""
        record = self._record(state)
        update, snapshot, scope = self.core.end_of_run(record, state, config)
        await asave_code_maps(self.core, snapshot, scope)
        return update

    @property
    def consolidation_node(self) -> Runnable[Any, dict[str, Any]]:
        """:meth:`consolidate` / :meth:`aconsolidate` as one graph node."""
        return RunnableLambda(
            self.consolidate, afunc=self.aconsolidate, name="builderforce_consolidate"
        )
