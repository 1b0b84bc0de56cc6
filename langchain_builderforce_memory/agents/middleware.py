"""``BuilderforceMemoryMiddleware``: the package in one line of a LangChain v1 agent.

    agent = create_agent(model, tools, middleware=[BuilderforceMemoryMiddleware(summarizer)])

Before every model call (``wrap_model_call``) the agent's full ``messages`` are windowed
or folded into the view the model is sent, the working-memory brief is appended as the
volatile tail, and the request is fitted to the model that will actually serve it. The
view exists only in the request (``request.override``): the record in state is never
shrunk, and the system prompt (``request.system_message``) is counted and kept in front.

State: the fold's memo and the working memory live in two PRIVATE state keys
(:data:`~langchain_builderforce_memory.agents.state.MEMO_KEY`,
:data:`~langchain_builderforce_memory.agents.state.WORKING_MEMORY_KEY`), plain JSON,
written with the model call's response (``ExtendedModelResponse``), so any checkpointer
persists them and a resumed thread neither re-summarizes nor forgets its brief. They are
marked ``PrivateStateAttr``: not part of the agent's input or output schema.

Composition: list this middleware LAST, so it sizes the request the model will get::

    middleware=[ModelFallbackMiddleware(small_model), BuilderforceMemoryMiddleware(summarizer)]

A middleware listed after it changes the request after it was sized: a longer system
prompt (``TodoListMiddleware``) goes over ``max_tokens`` until a usage report corrects
the calibration, and a model picked later (``ModelRouterMiddleware``) is not fitted.
The first middleware is the outermost, so the fallback hands each attempt's request
(with the fallback model in ``request.model``) to this middleware, which fits the view
to THAT model's profile (``max_input_tokens``, less its reply reserve and the tool
schemas). A fallback to a 16k model is fitted automatically; the retry reuses the
attempt's fold, so the summarizer is not paid twice. Placed the other way round, the
fallback would resend a view sized for the primary model and the small one would reject
it. ``ModelRetryMiddleware`` composes the same way.

Observations come from the run's own tool calls (each call next to its result in the
record; successful calls only). With ``code_maps`` (a
:class:`~langchain_builderforce_memory.store.CodeMapStore`) the maps relevant to the task
are recalled into the brief when a directive arrives, and the working memory is
consolidated into the store when the agent finishes (``after_agent``).

Every fold is reported as a custom stream event (``stream_mode="custom"``,
``{"builderforce_memory": "fold", ...}``) and a log line; summarizer calls are tagged
``nostream``, so they never stream into the user's output.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast

from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AnyMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.types import Command
from typing_extensions import TypedDict

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        AgentState,
        ExtendedModelResponse,
        ModelRequest,
        ModelResponse,
    )
except ImportError as exc:  # pragma: no cover - exercised by a test that hides langchain
    msg = (
        "BuilderforceMemoryMiddleware needs LangChain v1 (the `langchain` package, for "
        'create_agent). Install it with: pip install "langchain-builderforce-memory[agents]". '
        "For LangGraph without langchain, use langchain_builderforce_memory.agents.node."
        "WorkingTranscriptNode."
    )
    raise ImportError(msg) from exc

from langchain_builderforce_memory.agents.core import MemoryCore
from langchain_builderforce_memory.agents.driver import (
    arun_turn,
    asave_code_maps,
    emit_events,
    run_turn,
    save_code_maps,
)
from langchain_builderforce_memory.agents.native import NativeMode, unchained
from langchain_builderforce_memory.agents.policy import (
    CODE_MAP_LIMIT,
    TAIL_RESERVE_TOKENS,
    CodeMapScope,
    MaxTokens,
)
from langchain_builderforce_memory.agents.tools import memory_tools
from langchain_builderforce_memory.agents.toolstate import BuilderforceStateKeys
from langchain_builderforce_memory.agents.turn import TurnView
from langchain_builderforce_memory.errors import ContextBudgetError
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

__all__ = ["BuilderforceMemoryMiddleware", "BuilderforceMemoryState"]

logger = logging.getLogger(__name__)


class BuilderforceMemoryState(AgentState[Any], BuilderforceStateKeys):
    """The agent state with this middleware's private keys (:class:`BuilderforceStateKeys`)."""


def _current_config() -> RunnableConfig:
    """The running graph's config (for a ``code_map_scope`` function); ``{}`` outside one."""
    try:
        return get_config()
    except RuntimeError:
        return {}


def _writer(runtime: object) -> Callable[[Any], None] | None:
    writer = getattr(runtime, "stream_writer", None)
    return writer if callable(writer) else None


def _sent(request: ModelRequest[Any], turn: TurnView) -> list[AnyMessage]:
    # The view holds the record's own messages plus generated HumanMessages: all AnyMessage.
    return cast("list[AnyMessage]", unchained(turn.messages, request.messages, request.model))


def _request_for(request: ModelRequest[Any], turn: TurnView) -> ModelRequest[Any]:
    """The request with the turn's view, and the provider's edits when it delegates."""
    if turn.model_settings is None:
        return request.override(messages=_sent(request, turn))
    settings = {**request.model_settings, **turn.model_settings}
    return request.override(messages=_sent(request, turn), model_settings=settings)


class _TurnArgs(TypedDict):
    system: SystemMessage | None
    model: Any
    tools: list[Any]
    model_settings: dict[str, Any]
    config: RunnableConfig


def _turn_args(request: ModelRequest[Any]) -> _TurnArgs:
    """What a turn reads from the request besides its messages and state."""
    return _TurnArgs(
        system=request.system_message,
        model=request.model,
        tools=request.tools,
        model_settings=request.model_settings,
        config=_current_config(),
    )


def _log_overflow(turn: TurnView) -> None:
    logger.warning(
        "the provider refused a request of ~%d tokens (ContextOverflowError): "
        "retrying once with the view fitted to half of it",
        turn.sent_tokens,
    )


def _respond(response: ModelResponse[Any], turn: TurnView) -> Any:
    """The model's response, with the turn's state updates when there are any."""
    if not turn.update:
        return response
    return ExtendedModelResponse(model_response=response, command=Command(update=turn.update))


@keyword_options
class BuilderforceMemoryMiddleware(AgentMiddleware[BuilderforceMemoryState, Any, Any]):
    """Window / fold the agent's view, add the brief, fit the serving model; every turn.

    Args:
        summarizer: Folds the older part of the run into a note: a chat model (tag it
            cheap), a ``"provider:model"`` string (``init_chat_model``), any ``Runnable``,
            or a function ``(prompt messages) -> str``. ``None`` only windows (drops the
            oldest, in chunks).

    The options after ``summarizer`` are the fields of
    :class:`~langchain_builderforce_memory.agents.policy.MemoryPolicy` (one is built from them)
    and the working-memory wiring; their paragraphs are shared with it.

    Raises:
        TypeError: an unknown option or an argument of the wrong kind.
        ValueError: a bad policy number, naming it and the fix.

    Example:
        >>> from langchain.agents import create_agent
        >>> from langchain_builderforce_memory.testing import ScriptedChatModel
        >>> agent = create_agent(
        ...     ScriptedChatModel(script=["hi"]),
        ...     tools=[],
        ...     middleware=[BuilderforceMemoryMiddleware(max_tokens=32_000)],
        ... )
        >>> agent.invoke({"messages": [("user", "hello")]})["messages"][-1].content
        'hi'
    """

    state_schema = BuilderforceMemoryState

    def __init__(
        self,
        summarizer: SummarizerLike | None = None,
        *,
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
        super().__init__()
        self.core = MemoryCore.from_options(locals())
        self.policy = policy = self.core.policy
        # agent_tools: the model gets search_history and compact_context (create_agent
        # adds a middleware's tools to the agent's tool node).
        self.tools = memory_tools(self.core) if policy.agent_tools else []

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> Any:
        """Send the view instead of the record; write the memo and the working memory.

        When the provider still refuses the request (``ContextOverflowError``), the view
        is fitted to half of it and sent once more, reported as a ``fit`` event with
        ``reason="overflow"``; a second refusal is raised unchanged. A call that raised
        keeps its turn's fold for a retry of it (``ModelFallbackMiddleware``); an answered
        one lets it go.
        """
        turn = run_turn(self.core, request.messages, request.state, **_turn_args(request))
        emit_events(turn.events, _writer(request.runtime))
        try:
            response = handler(_request_for(request, turn))
        except ContextOverflowError as refused:
            _log_overflow(turn)
            overflow = refused
        else:
            self.core.settled(request.messages)
            return _respond(response, turn)
        try:
            retry = run_turn(
                self.core,
                request.messages,
                request.state,
                overflowed=turn.sent_tokens,
                **_turn_args(request),
            )
        except ContextBudgetError as exc:
            # Half the refused request cannot hold the system prompt: nothing left to
            # cut, so the provider's refusal stands (the planning error is its cause).
            raise overflow from exc
        emit_events(retry.events, _writer(request.runtime))
        response = handler(_request_for(request, retry))
        self.core.settled(request.messages)
        return _respond(response, retry)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> Any:
        """Async :meth:`wrap_model_call` (the summarizer and the store are awaited)."""
        turn = await arun_turn(self.core, request.messages, request.state, **_turn_args(request))
        emit_events(turn.events, _writer(request.runtime))
        try:
            response = await handler(_request_for(request, turn))
        except ContextOverflowError as refused:
            _log_overflow(turn)
            overflow = refused
        else:
            self.core.settled(request.messages)
            return _respond(response, turn)
        try:
            retry = await arun_turn(
                self.core,
                request.messages,
                request.state,
                overflowed=turn.sent_tokens,
                **_turn_args(request),
            )
        except ContextBudgetError as exc:
            # Half the refused request cannot hold the system prompt: nothing left to
            # cut, so the provider's refusal stands (the planning error is its cause).
            raise overflow from exc
        emit_events(retry.events, _writer(request.runtime))
        response = await handler(_request_for(request, retry))
        self.core.settled(request.messages)
        return _respond(response, retry)

    def after_agent(
        self, state: BuilderforceMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Read the last tool results; consolidate the run into the code maps, if kept."""
        update, snapshot, scope = self.core.end_of_run(state["messages"], state, _current_config())
        save_code_maps(self.core, snapshot, scope)
        return update or None

    async def aafter_agent(
        self, state: BuilderforceMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async :meth:`after_agent`."""
        update, snapshot, scope = self.core.end_of_run(state["messages"], state, _current_config())
        await asave_code_maps(self.core, snapshot, scope)
        return update or None
