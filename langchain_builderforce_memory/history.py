"""A chat message history that windows and folds, over any backing store.

Many deployed LangChain apps keep their conversations in a ``BaseChatMessageHistory``
(in memory, a file, SQL, Redis, Postgres) and feed it through
``RunnableWithMessageHistory``. Those histories grow without bound, and LangChain's old
answers (``ConversationSummaryBufferMemory``, ``ConversationTokenBufferMemory``) pruned a
COPY of the messages, so with a database-backed history they silently did nothing.
:class:`CompactingChatMessageHistory` wraps any history and changes only what is READ: the
stored record is append-only; ``messages`` is its working view; a fold is persisted as an
auto consolidation marker whose ``keep_from_id`` names the first stored message its note
does NOT cover, so the next load, in any process, starts from the note and reading never
calls the summarizer. The record helpers are in
:mod:`~langchain_builderforce_memory.transcript.stored`.

Concurrency: writers are serialised by one ``aiologic.Lock`` and every store call by
another (neither binds to an event loop: threads, loops and tasks mix freely); writers in
several processes pass a ``fold_guard``. docs/guide.md ("Ids and markers", "Many writers")
says what each guarantee covers, and why the deprecation of ``BaseChatMessageHistory``
leaves this wrapper useful.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import aiologic
from langchain_core.chat_history import BaseChatMessageHistory, InMemoryChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable

from langchain_builderforce_memory.agents.native import WireLimits
from langchain_builderforce_memory.agents.policy import MaxTokens, token_budget
from langchain_builderforce_memory.calibration import UsageCalibration
from langchain_builderforce_memory.chat_store import ChatStore
from langchain_builderforce_memory.errors import ContextBudgetError
from langchain_builderforce_memory.facts import RecordFacts
from langchain_builderforce_memory.guards import FoldGuard, aheld_or_skipped, held_or_skipped
from langchain_builderforce_memory.messages import (
    as_messages,
    check_sound,
    leading_system_count,
    message_id,
)
from langchain_builderforce_memory.models import resolve_model
from langchain_builderforce_memory.options import from_options, keyword_options
from langchain_builderforce_memory.search import search_outside_view
from langchain_builderforce_memory.search_index import RecordIndex, SearchResult
from langchain_builderforce_memory.tokens import (
    TokenCounter,
    TokenCounterLike,
    count_tokens,
    resolve_token_counter,
)
from langchain_builderforce_memory.transcript.fold import (
    CompactMemo,
    FoldPolicy,
    finish_working_transcript,
)
from langchain_builderforce_memory.transcript.fold_plan import FoldPlan, plan_working_transcript
from langchain_builderforce_memory.transcript.fold_state import FoldState
from langchain_builderforce_memory.transcript.markers import consolidation_marker
from langchain_builderforce_memory.transcript.memo import COMPACT_TAIL_TOKEN_BUDGET
from langchain_builderforce_memory.transcript.stored import (
    RecordScan,
    consolidation_input,
    manual_marker,
    with_ids,
)
from langchain_builderforce_memory.transcript.summary import (
    DEFAULT_SUMMARIZER_TIMEOUT,
    Summarizer,
    SummarizerLike,
    asummarize_transcript,
    resolve_summarizer,
    summarize_transcript,
)
from langchain_builderforce_memory.transcript.window import HISTORY_TOKEN_BUDGET, MessageCeiling

__all__ = ["CompactingChatMessageHistory"]

logger = logging.getLogger(__name__)


@keyword_options
class CompactingChatMessageHistory(BaseChatMessageHistory):
    """A ``BaseChatMessageHistory`` that windows and folds, over any backing history.

    Reads (``messages``, ``aget_messages``) return the working view: the record scoped to
    its last consolidation marker, whole when it fits, else windowed to ``max_messages`` /
    ``max_tokens``; always valid for strict providers. They never call the summarizer.
    Writes (``add_messages``, ``aadd_messages``) append to the backing store first, then,
    when the view no longer fits and a ``summarizer`` is set, fold the older part into a
    note and append it as an auto consolidation marker. A failing summarizer leaves the
    record intact and the view windowed (logged, never raised); the next append retries.

    ``max_tokens`` is the HISTORY's share of a request: leave room for the prompt's system
    message, the new input and the answer. The async twins use the backing's async
    methods, or its sync ones in a worker thread where those cannot run
    (``SQLChatMessageHistory`` without ``async_mode=True``). Keep one wrapper per session:
    its locks serialise that session's writers.

    Args:
        backing: The history that stores the record (default: a new
            ``InMemoryChatMessageHistory``). Any ``BaseChatMessageHistory``: SQL, Redis,
            Postgres, a file.
        summarizer: A chat model, a ``"provider:model"`` string, a ``Runnable`` or a
            function (sync or async) that writes the notes; ``None`` only windows.
        max_tokens: Tokens the view may hold. Or a share of ``model``'s window (``0.8``
            or ``("fraction", 0.8)``: that share of its ``profile["max_input_tokens"]``,
            less its reply reserve), as the middleware takes it.
        model: The chat model the history feeds (or a ``"provider:model"`` string, built
            here, as the node builds it): read to resolve a fractional ``max_tokens``, and
            to keep its API's limits per message (``ChatBedrockConverse``'s media,
            ``ChatOpenAI``'s 128 calls: see ``agents.native.WireLimits``).
        max_messages: Conversation messages the view may hold (``"auto"``: see FoldPolicy).
        tail_tokens: Tokens a fold keeps verbatim after its note (also capped at the
            fold's share of the room left, so a small budget still folds rarely).
        timeout: Seconds a summarizer call may take before the fold gives up (the view
            stays windowed); ``None`` waits.
        fold_guard: Keeps writers in other processes from folding this session at the
            same time (e.g. :class:`~langchain_builderforce_memory.guards.PostgresFoldGuard`);
            ``None``: this wrapper's own lock only.
        usage_calibration: Learn the provider's count from the ``usage_metadata`` of the
            answers appended, and keep the budgets in the provider's tokens (see
            :class:`~langchain_builderforce_memory.calibration.UsageCalibration`).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> history = CompactingChatMessageHistory(
        ...     summarizer=lambda prompt: "they talked", max_tokens=8_000, tail_tokens=4_000
        ... )
        >>> for i in range(40):
        ...     history.add_messages([HumanMessage(f"q{i}"), AIMessage("y" * 2_000)])
        >>> len(history.full_messages) > 80, len(history.messages) < 30
        (True, True)
        >>> history.messages[0].content.startswith("📌")
        True
    """

    def __init__(
        self,
        backing: BaseChatMessageHistory | None = None,
        *,
        summarizer: SummarizerLike | None = None,
        max_tokens: MaxTokens = HISTORY_TOKEN_BUDGET,
        model: Runnable[Any, Any] | str | None = None,
        max_messages: MessageCeiling = "auto",
        tail_tokens: int = COMPACT_TAIL_TOKEN_BUDGET,
        token_counter: TokenCounterLike = None,
        timeout: float | None = DEFAULT_SUMMARIZER_TIMEOUT,
        backoff_tokens: int | None = None,
        fold_guard: FoldGuard | None = None,
        clear_at_least: int | None = None,
        restore_tokens: int | None = None,
        clear_tool_results: bool = True,
        clear_edit_inputs: bool = True,
        usage_calibration: bool = True,
    ) -> None:
        super().__init__()
        candidate: object = backing
        if candidate is not None and not isinstance(candidate, BaseChatMessageHistory):
            msg = (
                f"backing: expected a BaseChatMessageHistory (InMemoryChatMessageHistory, "
                f"SQLChatMessageHistory, ...) or None; got {type(candidate).__name__}."
            )
            raise TypeError(msg)
        # Validates every number, naming the bad value and its default.
        # A "provider:model" string is resolved once, here, as the node resolves it.
        served = resolve_model(model, what="model") if model is not None else None
        budget = token_budget(max_tokens, served, where="CompactingChatMessageHistory")
        self.policy = from_options(FoldPolicy, {**locals(), "max_tokens": budget})
        # Created here, inside this package, so langchain-core's deprecation of the class
        # is not reported against the user's code for a default they did not choose.
        self.backing: BaseChatMessageHistory = (
            backing if backing is not None else InMemoryChatMessageHistory()
        )
        self.summarizer: Summarizer | None = resolve_summarizer(summarizer)
        self.token_counter: TokenCounter = resolve_token_counter(token_counter)
        self._wire = WireLimits.of(served)
        guard: object = fold_guard
        if guard is not None and not isinstance(guard, FoldGuard):
            msg = (
                f"fold_guard: expected a FoldGuard (e.g. PostgresFoldGuard(url, key=session_id))"
                f" or None; got {type(guard).__name__}."
            )
            raise TypeError(msg)
        self.fold_guard: FoldGuard | None = fold_guard
        # Bound to no thread and no event loop (see the module docstring): _lock serialises
        # writers, the store each call into the backing store (reads included).
        self._lock = aiologic.Lock()
        self._store = ChatStore(self.backing)
        self._scan = RecordScan()  # the record's markers and memo, read incrementally
        self._index = RecordIndex()  # search(): extended with each new message
        # Per wrapper, as a history has no state to checkpoint them in: the facts of the
        # record's conversation (token sums, tool results; a turn counts its new messages
        # only) and this process's fold state (the last fold's memo, a fallback for stores
        # that drop the marker's stamp; the summarizer's backoff; the clear horizon of the
        # last view read). Reads run beside writes: one plan at a time reads and grows
        # them (a plan holds no await, so a thread lock serves both twins).
        self._facts = RecordFacts(self.token_counter)
        self._state = FoldState()
        self._state_lock = threading.Lock()
        # Whether the backing keeps a marker's stamp (None: not known until the first).
        self._markers_kept: bool | None = None
        # The session's usage calibration (per wrapper, in memory): the view read last is
        # what the app sent, the answer it appends says what the provider counted; the
        # view's (id, our count) pairs are what it counted (UsageCalibration.fresh_factor).
        self._calibration = UsageCalibration.of_option(usage_calibration)
        self._sent_keys: frozenset[tuple[str | None, int]] = frozenset()

    @property
    def budget_policy(self) -> FoldPolicy:
        """:attr:`policy` in our counter's tokens, scaled by the session's usage calibration."""
        return self.policy.scaled(self._calibration.factor)

    @property
    def fold_budget_policy(self) -> FoldPolicy:
        """The policy a fold is planned under: no first-request margin.

        Whether an append folds must not depend on whether the app has read a view yet:
        the margin guards what is sent, and a read fits its view under it on its own.
        """
        return self.policy.scaled(self._calibration.measured)

    def _sent(self, record: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The view of ``record`` an app reads to send, noted as sent for the calibration."""
        self._calibration = self._calibration.first_read(record)
        view = self.view_of(record)
        if not self._calibration.off:
            view = self._priced_fresh(record, view)
            sent = count_tokens(view, self.token_counter)
            self._calibration = self._calibration.sent(sent, len(record))
        return view

    def _priced_fresh(
        self, record: Sequence[BaseMessage], view: list[BaseMessage]
    ) -> list[BaseMessage]:
        """``view``, or a tighter one when its unmeasured part could take it over budget.

        The measured ratio holds for what the provider counted: the last view sent. A view
        can hold other content (the newest messages, a new note, older messages a fold
        brought back whole), priced with the first-request margin until counted.
        """
        count = self.token_counter.count_message
        sizes = [count(m) for m in view]
        fresh = sum(n for m, n in zip(view, sizes, strict=True) if (m.id, n) not in self._sent_keys)
        budget = self.policy.max_tokens
        factor = self._calibration.fresh_factor(budget, fresh)
        if factor > self._calibration.factor and sum(sizes) * factor > budget:
            # A budget that cannot hold the system prompt plus one message at the fresh
            # price still holds the view priced at the measured ratio: keep that one.
            with contextlib.suppress(ContextBudgetError):
                view = self._view(record, self.policy.scaled(factor))
        self._sent_keys = frozenset((m.id, count(m)) for m in view)
        return view

    # ------------------------------------------------------------------ reads

    @property
    def messages(self) -> list[BaseMessage]:
        """The working view of the stored record (see the class docstring)."""
        return self._sent(self._store.read())

    @messages.setter
    def messages(self, value: list[BaseMessage]) -> None:
        msg = (
            "CompactingChatMessageHistory.messages is the read-only working view; append "
            "with add_messages(), read the whole record with full_messages, empty it with "
            "clear()."
        )
        raise AttributeError(msg)

    async def aget_messages(self) -> list[BaseMessage]:
        """Async twin of :attr:`messages` (reads the backing store asynchronously)."""
        return self._sent(await self._store.aread())

    @property
    def full_messages(self) -> list[BaseMessage]:
        """The whole stored record, markers included, oldest first (a new list)."""
        return list(self._store.read())

    async def aget_full_messages(self) -> list[BaseMessage]:
        """Async twin of :attr:`full_messages`."""
        return list(await self._store.aread())

    def view_of(self, record: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The working view of ``record``: pure, and never calls the summarizer.

        The same view policy as the agent adapters: the last consolidation marker is the
        held memo (its note covers the stored messages before its ``keep_from_id``), so
        the view is ``[system, note, directive?, ...verbatim tail]`` with the latest user
        turn restated when the note covered it, the tail shortened within budget when it
        outgrew it, or the window when nothing is folded. Two wrappers with the same
        policy over the same stored record return equal views, which is what lets a new
        process start from a stored marker for free. A record with no conversation yet
        (empty, or only system messages) reads as it is: the request's own input
        supplies the user turn.
        """
        try:
            return self._view(record, self.budget_policy)
        except ContextBudgetError:
            cal = self._calibration
            if cal.factor <= cal.measured:
                raise
            # The first-request margin alone leaves no room for the system prompt plus one
            # message: the user's budget by our count holds it, and refusing is worse.
            return self._view(record, self.policy.scaled(cal.measured))

    def _view(self, record: Sequence[BaseMessage], policy: FoldPolicy) -> list[BaseMessage]:
        if leading_system_count(record) == len(record):
            return list(record)
        plan = self._plan(record, policy, fold=False)
        if self.summarizer is not None and plan.mode != "verbatim":
            # A folding history's reads stay within budget: between folds (a backoff, a
            # fold held back as futile) the oldest tail units wait for the next fold.
            plan = replace(plan, backed_off=True)
        done = finish_working_transcript(plan, None)
        with self._state_lock:
            self._state = replace(self._state, horizon=done.horizon)
        view, sent = done.messages, self._wire.applied(done.messages)
        if len(sent) > len(view):  # the parts of a split message cost a few tokens each
            over = count_tokens(sent, self.token_counter) - policy.max_tokens
            if over > 0:
                room = max(1, policy.max_tokens - over)
                return self._view(record, policy.scaled(policy.max_tokens / room))
        return sent

    def _plan(self, record: Sequence[BaseMessage], policy: FoldPolicy, *, fold: bool) -> FoldPlan:
        """The view policy's plan of ``record``: a fold's (``fold``) or a read's (no summarizer)."""
        messages, memo = self._held(record)
        with self._state_lock:
            return plan_working_transcript(
                messages,
                memo=memo,
                policy=policy,
                can_summarize=fold,
                backoff=self._state.backoff if fold else None,
                keep_memo=True,
                horizon=self._state.horizon,
                facts=self._facts,
            )

    def search(self, query: str, limit: int = 5) -> SearchResult:
        """The stored messages matching ``query`` that the working view no longer shows.

        Exact text first, then BM25 on the words (:mod:`~langchain_builderforce_memory.
        search`); never calls the summarizer. Render it for a model with ``render_search``.
        """
        record = self._store.read()
        return search_outside_view(self._index, record, self.view_of(record), query, limit=limit)

    async def asearch(self, query: str, limit: int = 5) -> SearchResult:
        """Async twin of :meth:`search` (the index is searched in a worker thread)."""
        record = await self._store.aread()
        view = self.view_of(record)
        return await asyncio.to_thread(
            search_outside_view, self._index, record, view, query, limit=limit
        )

    def _held(
        self, record: Sequence[BaseMessage]
    ) -> tuple[Sequence[BaseMessage], CompactMemo | None]:
        """The record without its markers, and the memo its last marker (or fold) holds."""
        messages, memo = self._scan.read(record)
        # A store that keeps no stamps (role and content only) loses the marker's metadata;
        # this process's own last fold still holds (validated by id).
        memo = memo if memo is not None else self._state.memo
        return self._scan.scoped(messages, memo, self._facts.copies)

    # ------------------------------------------------------------------ writes

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages`` to the backing store, then fold if the view no longer fits.

        Ids are assigned to copies where missing. The fold's note is appended as an auto
        consolidation marker; a failed fold is logged and leaves the view windowed.
        """
        with self._lock:
            new = self._incoming(messages, "add_messages")
            self._store.append(new)
            plan = self._fold_plan(self._store.known())
            if plan is None:
                return
            with self._guard() as held:
                if held and self.fold_guard is not None:
                    # Another process may have folded since: plan on what is stored now.
                    plan = self._fold_plan(self._store.read())
                if not held or plan is None or self.summarizer is None:
                    return
                summary = summarize_transcript(
                    self.summarizer,
                    plan.fold_input,
                    timeout=self.policy.timeout,
                    token_counter=self.token_counter,
                )
                marker = self._after_fold(plan, summary)
                if marker is not None:
                    self._store.append([marker])
                    if self._markers_kept is None:
                        self._markers_kept = self._store.keeps_marker(marker)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async twin of :meth:`add_messages`.

        The summarizer never blocks the event loop: an async one is awaited, a sync one
        runs in a worker thread.
        """
        async with self._lock:
            new = self._incoming(messages, "aadd_messages")
            await self._store.aappend(new)
            plan = self._fold_plan(await self._store.aknown())
            if plan is None:
                return
            async with self._aguard() as held:
                if held and self.fold_guard is not None:
                    plan = self._fold_plan(await self._store.aread())
                if not held or plan is None or self.summarizer is None:
                    return
                summary = await asummarize_transcript(
                    self.summarizer,
                    plan.fold_input,
                    timeout=self.policy.timeout,
                    token_counter=self.token_counter,
                )
                marker = self._after_fold(plan, summary)
                if marker is not None:
                    await self._store.aappend([marker])
                    if self._markers_kept is None:
                        self._markers_kept = await self._store.akeeps_marker(marker)

    def consolidate(self) -> AIMessage | None:
        """Summarise everything so far into a MANUAL marker and append it.

        The summarizer is sent the scoped record (the last marker's note and everything
        after it) in one call. Returns the stored marker, or ``None`` when there is nothing
        new to consolidate or the summarizer gave no note (logged).

        Raises:
            ValueError: when the history has no summarizer.
        """
        summarizer = self._require_summarizer("consolidate")
        with self._lock, self._guard() as held:
            convo = consolidation_input(self._store.read()) if held else None
            if convo is None:
                return None
            note = summarize_transcript(summarizer, convo, timeout=self.policy.timeout)
            marker = manual_marker(note)
            if marker is not None:
                self._store.append([marker])
            return marker

    async def aconsolidate(self) -> AIMessage | None:
        """Async twin of :meth:`consolidate`."""
        summarizer = self._require_summarizer("aconsolidate")
        async with self._lock, self._aguard() as held:
            convo = consolidation_input(await self._store.aread()) if held else None
            if convo is None:
                return None
            note = await asummarize_transcript(summarizer, convo, timeout=self.policy.timeout)
            marker = manual_marker(note)
            if marker is not None:
                await self._store.aappend([marker])
            return marker

    def clear(self) -> None:
        """Empty the backing store (passes through, after a write in progress)."""
        with self._lock:
            self._store.clear()

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        async with self._lock:
            await self._store.aclear()

    # ------------------------------------------------------------------ the backing store

    def _guard(self) -> contextlib.AbstractContextManager[bool]:
        return held_or_skipped(self.fold_guard, logger)

    def _aguard(self) -> contextlib.AbstractAsyncContextManager[bool]:
        return aheld_or_skipped(self.fold_guard, logger)

    # ------------------------------------------------------------------ planning (pure)

    def _incoming(self, messages: Sequence[BaseMessage], where: str) -> list[BaseMessage]:
        """The twins' first step: check (never store a malformed message), id, calibrate."""
        checked = as_messages(messages, where=where, every=True)
        for message in checked:
            check_sound(message)
        new = with_ids(checked)
        self._calibration = self._calibration.read_added(new, self.token_counter.count_message)
        return new

    def _fold_plan(self, record: Sequence[BaseMessage]) -> FoldPlan | None:
        """The fold the record needs now, or ``None`` when its view fits (or cannot fold).

        The middleware's cadence: the held note is reused while its verbatim tail fits,
        a fold leaves headroom for new work, and after a failed call the summarizer is
        backed off for a span of new work.
        """
        if self.summarizer is None:
            return None
        plan = self._plan(record, self.fold_budget_policy, fold=True)
        return plan if plan.mode == "fold" else None

    def _after_fold(self, plan: FoldPlan, summary: str | None) -> AIMessage | None:
        """Keep the fold's memo and backoff; the auto marker to store, or ``None``.

        ``keep_from_id`` is the first message the note does not cover: the plan's cut
        (never a tool result: the tail starts off them), by its stored id.
        """
        done = finish_working_transcript(plan, summary, summarizer_calls=1)
        with self._state_lock:
            kept = done.memo if summary is not None else None
            memo = kept if kept is not None else self._state.memo
            self._state = replace(self._state, memo=memo, backoff=done.backoff)
        if summary is None or done.memo is None:
            return None  # logged where it failed; the view stays the held note or window
        if self._markers_kept is False:
            return None  # the store would keep it as a plain message: the memo holds it
        convo = plan.convo
        cut = plan.fold_to
        keep = message_id(convo[cut]) if cut < len(convo) else None
        if keep is None:
            logger.debug("the fold covered the whole record; no marker written")
            return None
        logger.info("folded %d stored message(s) into a consolidation marker", cut - plan.fold_from)
        return with_ids(
            [consolidation_marker(summary, keep_from_id=keep, folded=cut - plan.fold_from)]
        )[0]

    def _require_summarizer(self, where: str) -> Summarizer:
        if self.summarizer is None:
            msg = (
                f"{where}(): this CompactingChatMessageHistory has no summarizer. Pass "
                "summarizer=<a chat model or function> when creating it."
            )
            raise ValueError(msg)
        return self.summarizer
