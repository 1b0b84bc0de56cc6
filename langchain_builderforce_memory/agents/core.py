"""The per-turn planner both agent adapters hold: :class:`MemoryCore`.

Every step is pure (state and record in, plan out); the drivers in
:mod:`langchain_builderforce_memory.agents.driver` do the only I/O a turn has (the summarizer,
the code-map store) between the steps, once for sync graphs and once for async ones:

``begin`` (read the state and the record's new part) -> ``with_code_maps`` (what the
store recalled) -> the fold (``fold_plan``) -> ``view`` (the volatile tail last) ->
``plan_fit`` (what the packer must cut, for ``max_tokens`` or the serving model) ->
``finish`` (the messages to send, the state to write, the events to report).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool

from langchain_builderforce_memory.agents.native import WireLimits, native_provider
from langchain_builderforce_memory.agents.policy import CodeMapScope, MemoryPolicy
from langchain_builderforce_memory.agents.report import turn_events
from langchain_builderforce_memory.agents.sizing import (
    cut_tail,
    delegated_plan,
    delegation_of,
    facts_role,
    sized_plan,
    turn_fold_plan,
    turn_view,
)
from langchain_builderforce_memory.agents.state import (
    MEMO_KEY,
    WORKING_MEMORY_KEY,
    RunMemoryRead,
    WrittenMemory,
    read_run_memory,
    scoped_record,
    state_get,
    with_code_maps,
)
from langchain_builderforce_memory.agents.toolstate import (
    COMPACT_KEY,
    VIEW_KEY,
    compact_request,
    honoured,
    view_mark,
)
from langchain_builderforce_memory.agents.turn import (
    FitPlan,
    FoldCache,
    MemoryRead,
    PackOptions,
    TurnPlan,
    TurnView,
    thread_of,
)
from langchain_builderforce_memory.calibration import CALIBRATION_KEY, UsageCalibration
from langchain_builderforce_memory.callbacks import ToolObservationMapper
from langchain_builderforce_memory.events import EVENT_KEY
from langchain_builderforce_memory.facts import RecordFacts
from langchain_builderforce_memory.handoff import (
    HandoffPack,
    ToolLike,
    handoff_budget_for_model,
    is_volatile_tail,
    tools_tokens,
)
from langchain_builderforce_memory.handoff.budget import SchemaTexts
from langchain_builderforce_memory.messages import is_stamped, message_id, role_of
from langchain_builderforce_memory.models import model_name
from langchain_builderforce_memory.native import LAST_COMPACTION
from langchain_builderforce_memory.options import from_options
from langchain_builderforce_memory.per_thread import PerThread, held_tokens
from langchain_builderforce_memory.store import CodeMap, CodeMapStore, scope_labels, scope_of_run
from langchain_builderforce_memory.tokens import (
    TokenCounterLike,
    count_tokens,
    resolve_token_counter,
)
from langchain_builderforce_memory.transcript.fold import WorkingTranscript
from langchain_builderforce_memory.transcript.fold_plan import FoldPlan
from langchain_builderforce_memory.transcript.fold_state import FoldState
from langchain_builderforce_memory.transcript.plan import MEMORY_NOTE_KIND
from langchain_builderforce_memory.transcript.summary import SummarizerLike, resolve_summarizer
from langchain_builderforce_memory.working.memory import WorkingMemorySnapshot

__all__ = ["CODE_MAPS_HEADER", "EVENT_KEY", "MemoryCore"]

logger = logging.getLogger(__name__)

CODE_MAPS_HEADER: Final = "## Code maps from earlier runs on this area"
"""Opens the recalled code maps inside the volatile tail."""
_MAPS_WANTED: Final = "a CodeMapStore (e.g. CodeMapStore(SqliteStore(...)))"
_SCOPE_WANTED: Final = "a label, a sequence of labels or a function of the run's config"


class MemoryCore:
    """The per-turn planner both adapters hold: pure steps; the drivers do the I/O.

    Args:
        policy: The turn policy.
        summarizer: Folds the older part of the run into a note (a chat model, a
            ``"provider:model"`` string, a ``Runnable`` or a function); ``None`` only
            windows.
        token_counter: What every budget is counted with (default: the approximate one).
        code_maps: Where finished runs' code maps are kept and recalled from.
        code_map_scope: Whose maps (labels, or a function of the run's config).
        tool_mapper: Maps tool calls to observations (default rules otherwise).

    Raises:
        TypeError: an argument of the wrong kind, naming it and what it takes.
    """

    def __init__(
        self,
        policy: MemoryPolicy,
        *,
        summarizer: SummarizerLike | None = None,
        token_counter: TokenCounterLike = None,
        code_maps: CodeMapStore | None = None,
        code_map_scope: CodeMapScope = "default",
        tool_mapper: ToolObservationMapper | None = None,
    ) -> None:
        scope, mapper = code_map_scope, tool_mapper
        maps_ok = code_maps is None or isinstance(code_maps, CodeMapStore)
        scope_ok = callable(scope) or isinstance(scope, str | int | Sequence)
        mapper_ok = mapper is None or isinstance(mapper, ToolObservationMapper)
        checks: tuple[tuple[str, object, bool, str], ...] = (
            ("policy", policy, isinstance(policy, MemoryPolicy), "a MemoryPolicy"),
            ("code_maps", code_maps, maps_ok, _MAPS_WANTED),
            ("code_map_scope", scope, scope_ok, _SCOPE_WANTED),
            ("tool_mapper", mapper, mapper_ok, "a ToolObservationMapper"),
        )
        for name, value, ok, wanted in checks:
            if not ok:
                msg = f"{name} must be {wanted}; got {type(value).__name__}."
                raise TypeError(msg)
        self.policy = policy
        self.summarizer = resolve_summarizer(summarizer)
        self.counter = resolve_token_counter(token_counter)
        self.code_maps = code_maps
        self.code_map_scope = scope if callable(scope) else scope_labels(scope, "code_map_scope")
        self.mapper = tool_mapper or ToolObservationMapper()
        self._folds = FoldCache()
        # Per thread, grown turn by turn: the record's facts, the memory its last turn wrote.
        self._facts = PerThread(functools.partial(RecordFacts, self.counter), weigh=held_tokens)
        self._memories = PerThread(WrittenMemory)
        self._schemas = SchemaTexts()

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> MemoryCore:
        """The core an adapter's options make (its ``locals()``): the policy, then the rest.

        The adapters spell their options out for ``help()``; the policy is built from
        them here, once, by its own fields (:func:`~langchain_builderforce_memory.options.
        from_options`).
        """
        return cls(
            from_options(MemoryPolicy, options),
            summarizer=options.get("summarizer"),
            token_counter=options.get("token_counter"),
            code_maps=options.get("code_maps"),
            code_map_scope=options.get("code_map_scope", "default"),
            tool_mapper=options.get("tool_mapper"),
        )

    def scope_for(self, config: RunnableConfig | None) -> tuple[str, ...] | None:
        """The code-map scope of a run; ``None`` when its scope function gives none."""
        scope = self.code_map_scope
        return scope_of_run(scope(config or {})) if callable(scope) else scope

    def begin(
        self,
        record: Sequence[BaseMessage],
        state: object,
        *,
        system: SystemMessage | None,
        config: RunnableConfig | None,
        model: Runnable[Any, Any] | None = None,
        tools: Sequence[BaseTool | ToolLike] | None = None,
        model_settings: Mapping[str, object] | None = None,
        overflowed: int | None = None,
    ) -> TurnPlan:
        """Read the state and the record's new part; decide what this turn must fetch.

        Also this request's budgets: ``max_tokens`` resolved against the serving model
        (a fraction of its window) and scaled by the thread's usage calibration.
        ``overflowed``: our count of a request the provider just refused; this one is cut
        to half of it, and the calibration learns the ceiling.
        """
        source = record if isinstance(record, list) else list(record)
        calibration = self.calibration(source, state, model)
        cap: int | None = None
        if overflowed is not None:
            calibration = calibration.overflowed(overflowed)
            cap = max(1, overflowed // 2)
        policy = self.request_policy(calibration, model, tools, model_settings, cap=cap)
        limit = self.request_limit(calibration, policy, model, tools, model_settings, cap=cap)
        memo_raw = state_get(state, MEMO_KEY)
        thread = thread_of(config)
        facts = self._facts.take((thread, "record"))
        try:
            facts.sync(source)
            memory = self._read_memory(source, state, config, facts, thread)
            reader = native_provider(model)
            record = scoped_record(
                source, facts=facts, reader=reader if model is not None else "record"
            )
            directive = facts.latest_directive_index() if record is source else None
            plain = model is not None and facts.get(LAST_COMPACTION) >= 0
        finally:
            self._facts.give((thread, "record"), facts)
        plan = TurnPlan(
            source=source,
            record=record,
            system=system,
            memo_raw=memo_raw,
            fold=FoldState.read(memo_raw, where=MEMO_KEY),
            run=memory.run,
            run_changed=memory.changed,
            brief=memory.brief,
            recall_task=memory.recall_task,
            scope=memory.scope,
            cached=self._folds.get(source, memo_raw, system),
            compact=compact_request(state),
            policy=policy,
            calibration=calibration,
            overflow=overflowed is not None,
            tools_tokens=tools_tokens(tools, token_counter=self.counter, schemas=self._schemas)
            if tools
            else 0,
            scaled=policy,
            limit=limit,
            thread=thread,
            directive=directive,
            copies=facts.copies,
            reader=reader,
            plain=plain,
            wire=WireLimits.of(model, model_settings, (source, system, tools or ())),
        )
        native = delegation_of(self.policy, plan, model, model_settings, self.counter)
        if native is not None:
            window = self.model_budget(model, tools, model_settings) if model is not None else None
            scaled = calibration.scale(window) if window else None
            auto = self.policy.max_messages == "auto"
            plan = delegated_plan(plan, native, scaled, auto_ceiling=auto)
        return self.sized(plan)

    def _read_memory(
        self,
        source: list[BaseMessage],
        state: object,
        config: RunnableConfig | None,
        facts: RecordFacts,
        thread: str | None,
    ) -> MemoryRead:
        """The working memory's part of a turn: the new observations, the brief, recall."""
        if not self.policy.working_memory:
            return MemoryRead()
        read = self._read_run(source, state, thread, facts)
        run, task = read.state, read.memory.task
        scope = self.scope_for(config) if self.code_maps is not None else None
        recall = task if scope is not None and task and run.get("code_maps_task") != task else None
        return MemoryRead(run, read.changed, read.memory.brief(), recall, scope)

    def _read_run(
        self,
        record: Sequence[BaseMessage],
        state: object,
        thread: str | None,
        facts: RecordFacts | None = None,
    ) -> RunMemoryRead:
        """:func:`~.state.read_run_memory`, with what the thread's last turn wrote."""
        held = self._memories.take(thread)
        try:
            return read_run_memory(record, state, self.mapper, facts=facts, held=held)
        finally:
            self._memories.give(thread, held)

    def calibration(
        self, source: Sequence[BaseMessage], state: object, model: object | None
    ) -> UsageCalibration:
        """The thread's usage calibration, with the last request's usage report read."""
        if not self.policy.usage_calibration:
            return UsageCalibration(off=True)
        held = UsageCalibration.from_state(state_get(state, CALIBRATION_KEY))
        return held.read_usage(source).for_model(model_name(model) if model is not None else None)

    def request_policy(
        self,
        calibration: UsageCalibration,
        model: Runnable[Any, Any] | None,
        tools: Sequence[BaseTool | ToolLike] | None,
        model_settings: Mapping[str, object] | None,
        *,
        cap: int | None = None,
    ) -> MemoryPolicy:
        """This request's policy: a fractional ``max_tokens`` resolved, in our tokens.

        Raises:
            ValueError: a fractional ``max_tokens`` and no model, or a model without
                ``profile["max_input_tokens"]``, naming the fix.
        """
        policy = self.policy
        share = policy.fraction
        if share is not None:
            policy = policy.resolved(self.fraction_budget(share, model, tools, model_settings))
        ceiling = calibration.scale(policy.budget)  # the learned ceiling, in our tokens
        return policy.scaled(
            calibration.factor, ceiling=ceiling if cap is None else min(cap, ceiling)
        )

    def fraction_budget(
        self,
        share: float,
        model: Runnable[Any, Any] | None,
        tools: Sequence[BaseTool | ToolLike] | None,
        model_settings: Mapping[str, object] | None,
    ) -> int:
        """``share`` of the serving model's window, less its reply reserve and tool schemas."""
        window = self.model_budget(model, [], None, reserve=0) if model is not None else None
        if model is None or window is None:
            share_of = f"max_tokens={self.policy.max_tokens!r} is a share of the serving model's"
            msg = (
                f"{share_of} profile['max_input_tokens'], and {model_name(model)} has none. "
                "Fix: give the model a profile (ChatModel(..., profile={'max_input_tokens': "
                "128_000})), or pass max_tokens as a token count (max_tokens=64_000)."
                if model is not None
                else f"{share_of} window, and no model was given. Fix: pass the model the "
                "node serves as model= (its profile['max_input_tokens'] is the window), or "
                "max_tokens as a token count (max_tokens=64_000)."
            )
            raise ValueError(msg)
        budget = self.model_budget(
            model, tools, model_settings, max_input_tokens=max(1, math.floor(window * share))
        )
        return max(1, budget or 1)

    def with_code_maps(self, plan: TurnPlan, maps: Sequence[CodeMap]) -> TurnPlan:
        """``plan`` with the code maps recalled for its task (sent in the volatile tail)."""
        if plan.run is None or plan.recall_task is None:
            return plan
        text = "\n\n".join(m.content for m in maps)
        if text:
            logger.info("recalled %d code map(s) for the task", len(maps))
        run = with_code_maps(
            plan.run, plan.recall_task, f"{CODE_MAPS_HEADER}\n{text}" if text else None
        )
        return self.sized(replace(plan, run=run, run_changed=True, recall_task=None))

    def request_limit(
        self,
        calibration: UsageCalibration,
        policy: MemoryPolicy,
        model: Runnable[Any, Any] | None,
        tools: Sequence[BaseTool | ToolLike] | None,
        model_settings: Mapping[str, object] | None,
        *,
        cap: int | None,
    ) -> int:
        """The most this request's budget may be lifted to, in our tokens (no margin)."""
        share = self.policy.fraction
        budget = (
            self.fraction_budget(share, model, tools, model_settings)
            if share is not None
            else self.policy.budget
        )
        limit = calibration.limit(budget)
        return limit if cap is None else min(limit, cap)

    def sized(self, plan: TurnPlan) -> TurnPlan:
        """``plan`` with its tail reserve sized (see :func:`~.sizing.sized_plan`)."""
        return sized_plan(
            plan, self.counter, asked=self.policy.max_tokens, where=type(self).__name__
        )

    def fold_plan(self, plan: TurnPlan) -> FoldPlan:
        """This turn's fold, planned (pure): the summarizer call is the driver's."""
        key = (plan.thread, facts_role(plan))
        facts = self._facts.take(key)
        try:
            return turn_fold_plan(plan, facts, can_summarize=self.summarizer is not None)
        finally:
            self._facts.give(key, facts)

    def remember(self, plan: TurnPlan, transcript: WorkingTranscript) -> WorkingTranscript:
        """Keep ``transcript`` for a retry of the same model call (see :class:`FoldCache`)."""
        self._folds.put(plan, transcript)
        return transcript

    def settled(self, record: Sequence[BaseMessage]) -> None:
        """The model answered the request made from ``record``: no retry reuses its fold."""
        self._folds.discard(record)

    def tail(self, plan: TurnPlan) -> HumanMessage | None:
        """The volatile tail within the reserve (see :func:`~.sizing.cut_tail`)."""
        return cut_tail(plan, self.counter)

    def view(self, plan: TurnPlan, transcript: WorkingTranscript) -> list[BaseMessage]:
        """The fold's view with the volatile tail last (system prompt first, if any)."""
        return turn_view(plan, transcript.messages, self.counter)

    def model_budget(
        self,
        model: Runnable[Any, Any],
        tools: Sequence[BaseTool | ToolLike] | None,
        model_settings: Mapping[str, object] | None,
        *,
        reserve: int | None = None,
        max_input_tokens: int | None = None,
    ) -> int | None:
        """Its window (or ``max_input_tokens``) less reply and tool schemas; ``None``: unknown."""
        reserve = self.policy.reserve_output_tokens if reserve is None else reserve
        asked = (model_settings or {}).get("max_tokens")
        if reserve is None and isinstance(asked, int) and not isinstance(asked, bool):
            reserve = asked
        try:
            return handoff_budget_for_model(
                model,
                tools=list(tools) if tools is not None else None,
                reserve_output_tokens=reserve,
                max_input_tokens=max_input_tokens,
                token_counter=self.counter,
            )
        except ValueError:
            # No max_input_tokens in the profile: the window is unknown, so the policy's
            # max_tokens is the only limit there is.
            return None

    def plan_fit(
        self,
        plan: TurnPlan,
        view: list[BaseMessage],
        view_tokens: int,
        *,
        model: Runnable[Any, Any] | None,
        tools: Sequence[BaseTool | ToolLike] | None,
        model_settings: Mapping[str, object] | None = None,
    ) -> FitPlan | None:
        """What the packer must do to fit ``view`` (``view_tokens`` of it); ``None`` when it fits.

        The limit is ``max_tokens``, or the serving model's budget when that is smaller
        (``fit_to_model``). ``max_tokens`` is enforced here too: the fold keeps at least the
        latest assistant turn and its results verbatim however large (correctness over
        size), and a few 20k-token tool results can carry that past the budget.
        """
        hard = plan.native.limit if plan.native is not None else None
        limit, to_model = hard or plan.policy.budget, None
        if self.policy.fit_to_model and model is not None:
            # The window is in the provider's tokens: scaled like every other budget.
            window = self.model_budget(model, tools, model_settings)
            window = plan.calibration.scale(window) if window is not None else None
            if window is not None and window < limit:
                limit, to_model = window, model_name(model)
        if view_tokens <= limit:
            return None
        # The fold's note is the run's only record of what it folded: keep it in place
        # when it fits rather than let the packer stand an elision marker in for it.
        pins = tuple(message_id(m) for m in view if is_stamped(m, MEMORY_NOTE_KIND))
        recall = (
            self.code_maps.recall_for(plan.scope, limit=self.policy.code_map_limit)
            if self.code_maps is not None and plan.scope is not None and to_model is not None
            else None
        )
        options = PackOptions(
            target_context_tokens=max(1, limit),
            reserve_output_tokens=0,
            from_model=None,
            to_model=to_model,
            summarizer=self.summarizer if self.policy.handoff_summarize else None,
            timeout=self.policy.timeout,
            pinned_ids=pins,
            token_counter=self.counter,
        )
        return FitPlan(messages=view, options=options, recall=recall)

    def finish(
        self,
        plan: TurnPlan,
        transcript: WorkingTranscript,
        view: list[BaseMessage],
        view_tokens: int,
        fit: FitPlan | None,
        pack: HandoffPack | None,
    ) -> TurnView:
        """The turn's result: the messages after the system prompt, updates and events.

        ``view_tokens``: ``view`` counted (what was sent, when the packer did not cut it).
        """
        sent = pack.messages if pack is not None else view
        if plan.system is not None and sent and role_of(sent[0]) == "system":
            sent = sent[1:]
        update: dict[str, Any] = {}
        # The memo and the summarizer's backoff travel together, so a checkpointed thread
        # keeps both (transcript.backoff is the plan's when nothing changed).
        new_memo = transcript.state.to_dict()
        old_memo = plan.fold.to_dict()
        if new_memo != old_memo or (new_memo is None and plan.memo_raw is not None):
            update[MEMO_KEY] = new_memo
        if plan.run is not None and plan.run_changed:
            update[WORKING_MEMORY_KEY] = plan.run
        if plan.compact is not None:
            update[COMPACT_KEY] = honoured(plan.compact)
        if self.policy.agent_tools:
            update[VIEW_KEY] = view_mark(len(plan.source), sent)
        sent_tokens = count_tokens(pack.messages, self.counter) if pack is not None else view_tokens
        sent_tokens += plan.tools_tokens
        if self.policy.usage_calibration:
            # What was sent, to read its usage report from the record next turn.
            update[CALIBRATION_KEY] = plan.calibration.sent(sent_tokens, len(plan.source)).to_dict()
        events = turn_events(plan, transcript, fit, pack, self.counter)
        tail = sent[-1] if sent and is_volatile_tail(sent[-1]) else None
        return TurnView(
            messages=list(sent),
            update=update,
            events=tuple(events),
            transcript=transcript,
            pack=pack,
            tail=tail if isinstance(tail, HumanMessage) else None,
            run=plan.run,
            sent_tokens=sent_tokens,
            model_settings=plan.native.settings if plan.native is not None else None,
        )

    def end_of_run(
        self, record: Sequence[BaseMessage], state: object, config: RunnableConfig | None
    ) -> tuple[dict[str, Any], WorkingMemorySnapshot | None, tuple[str, ...] | None]:
        """The final working-memory update, and what to consolidate: (update, snapshot, scope)."""
        if not self.policy.working_memory:
            return {}, None, None
        read = self._read_run(record, state, thread_of(config))
        update: dict[str, Any] = {WORKING_MEMORY_KEY: read.state} if read.changed else {}
        if self.code_maps is None:
            return update, None, None
        return update, read.memory.snapshot, self.scope_for(config)
