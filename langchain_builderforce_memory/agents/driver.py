"""The per-turn core both agent adapters share: record -> view, memo, brief, fit, events.

:class:`~langchain_builderforce_memory.agents.middleware.BuilderforceMemoryMiddleware` (for
``create_agent``) and :class:`~langchain_builderforce_memory.agents.node.WorkingTranscriptNode`
(for ``create_react_agent`` and hand-written ``StateGraph`` s) are thin: they read the
graph's state, call :func:`run_turn` / :func:`arun_turn`, send the view and write back
the small state the core returned. Everything a turn decides is here, once, as data
(ARCHITECTURE "One turn, as data"):

1. The record (the graph's ``messages``) is never shrunk; only the view is.
2. With a summarizer the fold builds ``[system, note, directive?, ...verbatim tail]`` and
   returns a new memo only when it folded; without one, the window.
3. The working-memory brief (and any code maps recalled for the task) is appended as the
   volatile tail: ONE stamped user message, last, never written into the record.
4. When the model that will serve the request has a smaller window (its
   ``profile["max_input_tokens"]``, less its reply and tool schemas), the hand-off
   packer fits the view to it.
5. The memo and the working memory are returned as plain-JSON state updates, where any
   checkpointer persists them: a resumed thread neither re-summarizes nor forgets its
   brief. Every fold is reported as an event (stream writer) and a log line.

Why observations come from the record, not a tool hook: the record already holds every
call (the assistant's ``tool_calls``) next to its result (the ``ToolMessage``, with its
``status``). Reading the NEW part of it each turn gives both adapters one implementation,
is parallel-safe (tools write nothing extra, so no reducer channel is needed), survives a
restart between the tool node and the model node, and leaves tool results untouched for
any other middleware. Only successful calls are recorded (see
:class:`~langchain_builderforce_memory.callbacks.ToolObservationMapper`).

The sync and async drivers share every step; only the summarizer / store calls differ
(``fold_turn`` vs ``afold_turn``, ``pack_handoff`` vs
``apack_handoff``, ``maps_for`` vs ``amaps_for``). A store's failure costs the run its
code maps, never the turn (:func:`_recall`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool

from langchain_builderforce_memory.agents.core import (
    CODE_MAPS_HEADER,
    EVENT_KEY,
    MemoryCore,
)
from langchain_builderforce_memory.agents.turn import TurnPlan, TurnView
from langchain_builderforce_memory.guarded import acall_guarded, call_guarded
from langchain_builderforce_memory.handoff import (
    ToolLike,
    apack_handoff,
    pack_handoff,
)
from langchain_builderforce_memory.store import CodeMap, CodeMapStore
from langchain_builderforce_memory.tokens import count_tokens
from langchain_builderforce_memory.transcript.fold import (
    afold_turn,
    fold_turn,
)
from langchain_builderforce_memory.working.memory import WorkingMemorySnapshot

__all__ = [
    "CODE_MAPS_HEADER",
    "EVENT_KEY",
    "MemoryCore",
    "arun_turn",
    "asave_code_maps",
    "emit_events",
    "run_turn",
    "save_code_maps",
]

logger = logging.getLogger(__name__)


def emit_events(
    events: Sequence[Mapping[str, object]], writer: Callable[[Any], None] | None
) -> None:
    """Report each event: one log line, and the stream writer when there is one.

    ``stream_mode="custom"`` shows the written events; outside a streaming run LangGraph's
    writer is a no-op. On Python 3.10 an async graph's writer cannot find its run (LangGraph
    reads it from a context variable that asyncio tasks only carry from 3.11 on) and
    raises ``RuntimeError``: the event is then reported by its log line alone, never by
    failing the user's graph.
    """
    for event in events:
        logger.info(
            "builderforce_memory %s: %s",
            event.get(EVENT_KEY),
            ", ".join(f"{k}={v}" for k, v in event.items() if k != EVENT_KEY),
        )
        if writer is None:
            continue
        try:
            writer(dict(event))
        except RuntimeError:
            logger.debug("no stream writer in this context (async on Python < 3.11)")


# ----------------------------------------------------------------------- the drivers


def _recall(
    core: MemoryCore, plan: TurnPlan
) -> tuple[CodeMapStore, str, tuple[str, ...], int] | None:
    """The code-map lookup this turn owes its run (store, task, scope, limit), if any.

    The lookup and the save at the run's end go through the fallback boundary
    (:mod:`~langchain_builderforce_memory.guarded`), as the hand-off's recall does: a store
    that is down or slow costs the run its code maps (logged), never the user's turn.
    """
    if plan.recall_task is None or core.code_maps is None or plan.scope is None:
        return None
    return core.code_maps, plan.recall_task, plan.scope, core.policy.code_map_limit


def run_turn(
    core: MemoryCore,
    record: Sequence[BaseMessage],
    state: object,
    *,
    system: SystemMessage | None = None,
    model: Runnable[Any, Any] | None = None,
    tools: Sequence[BaseTool | ToolLike] | None = None,
    model_settings: Mapping[str, object] | None = None,
    config: RunnableConfig | None = None,
    overflowed: int | None = None,
) -> TurnView:
    """One turn, sync: the record and the state in; the view and the state updates out.

    ``overflowed`` retries a request the provider refused (``ContextOverflowError``): our
    count of it; this turn is fitted to half of it (the fold is reused, the packer cuts).

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_builderforce_memory.agents.policy import MemoryPolicy
        >>> turn = run_turn(MemoryCore(MemoryPolicy()), [HumanMessage("hi")], {})
        >>> [m.content for m in turn.messages], sorted(turn.update)
        (['hi'], ['builderforce_calibration', 'builderforce_working_memory'])
    """
    plan = core.begin(
        record,
        state,
        system=system,
        config=config,
        model=model,
        tools=tools,
        model_settings=model_settings,
        overflowed=overflowed,
    )
    if (lookup := _recall(core, plan)) is not None:
        maps, task, scope, limit = lookup
        found = call_guarded(
            lambda: maps.maps_for(task, scope=scope, limit=limit),
            what="code-map recall",
            timeout=core.policy.timeout,
        )
        plan = core.with_code_maps(plan, found or ())
    transcript = plan.cached or core.remember(
        plan, fold_turn(core.fold_plan(plan), core.summarizer)
    )
    view = core.view(plan, transcript)
    tokens = count_tokens(view, core.counter)  # counted once: the fit and the report use it
    fit = core.plan_fit(plan, view, tokens, model=model, tools=tools, model_settings=model_settings)
    pack = pack_handoff(fit.messages, recall=fit.recall, **fit.options) if fit else None
    return core.finish(plan, transcript, view, tokens, fit, pack)


async def arun_turn(
    core: MemoryCore,
    record: Sequence[BaseMessage],
    state: object,
    *,
    system: SystemMessage | None = None,
    model: Runnable[Any, Any] | None = None,
    tools: Sequence[BaseTool | ToolLike] | None = None,
    model_settings: Mapping[str, object] | None = None,
    config: RunnableConfig | None = None,
    overflowed: int | None = None,
) -> TurnView:
    """Async twin of :func:`run_turn`: the summarizer, the store and recall are awaited."""
    plan = core.begin(
        record,
        state,
        system=system,
        config=config,
        model=model,
        tools=tools,
        model_settings=model_settings,
        overflowed=overflowed,
    )
    if (lookup := _recall(core, plan)) is not None:
        maps, task, scope, limit = lookup
        found = await acall_guarded(
            lambda: maps.amaps_for(task, scope=scope, limit=limit),
            what="code-map recall",
            timeout=core.policy.timeout,
        )
        plan = core.with_code_maps(plan, found or ())
    transcript = plan.cached or core.remember(
        plan, await afold_turn(core.fold_plan(plan), core.summarizer)
    )
    view = core.view(plan, transcript)
    tokens = count_tokens(view, core.counter)  # counted once: the fit and the report use it
    fit = core.plan_fit(plan, view, tokens, model=model, tools=tools, model_settings=model_settings)
    recall = fit.recall.acall if fit is not None and fit.recall is not None else None
    pack = await apack_handoff(fit.messages, recall=recall, **fit.options) if fit else None
    return core.finish(plan, transcript, view, tokens, fit, pack)


def save_code_maps(
    core: MemoryCore, snapshot: WorkingMemorySnapshot | None, scope: tuple[str, ...] | None
) -> CodeMap | None:
    """Consolidate a finished run's working memory into the code-map store."""
    if core.code_maps is None or snapshot is None or scope is None:
        return None
    maps, seen = core.code_maps, snapshot
    saved = call_guarded(
        lambda: maps.save(seen, scope=scope), what="code-map save", timeout=core.policy.timeout
    )
    _log_saved(saved, scope)
    return saved


async def asave_code_maps(
    core: MemoryCore, snapshot: WorkingMemorySnapshot | None, scope: tuple[str, ...] | None
) -> CodeMap | None:
    """Async twin of :func:`save_code_maps`."""
    if core.code_maps is None or snapshot is None or scope is None:
        return None
    maps, seen = core.code_maps, snapshot
    saved = await acall_guarded(
        lambda: maps.asave(seen, scope=scope), what="code-map save", timeout=core.policy.timeout
    )
    _log_saved(saved, scope)
    return saved


def _log_saved(saved: CodeMap | None, scope: tuple[str, ...]) -> None:
    if saved is not None:
        logger.info("saved code map %s in scope %s", saved.key, "/".join(scope))
