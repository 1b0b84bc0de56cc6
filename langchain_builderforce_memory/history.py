"""A chat message history that windows and folds, over any backing store.

Many deployed LangChain apps keep their conversations in a ``BaseChatMessageHistory``
(in memory, a file, SQL, Redis, Postgres) and feed it through
``RunnableWithMessageHistory``. Those histories grow without bound, and LangChain's old
answers (``ConversationSummaryBufferMemory``, ``ConversationTokenBufferMemory``) pruned a
COPY of the messages, so with a database-backed history they silently did nothing.
:class:`CompactingChatMessageHistory` wraps any history and changes only what is READ:

* the stored record is append-only: every message ever added stays, nothing stored is
  deleted or rewritten;
* ``messages`` is the working view: the record scoped to its last consolidation marker,
  shown whole when it fits, else windowed (no summarizer, or the last fold failed);
  always valid for strict providers;
* when an append leaves a view that no longer fits and a summarizer is set, the older
  part is folded into a note, and the note is persisted as an AUTO consolidation marker
  (the seed's durable form of a compressed conversation). The next load, in this process
  or another, after a restart, starts from the marker instead of summarizing the whole
  history again: the view depends only on the stored record, so reading never calls the
  summarizer.

The seed's coverage rule carries over: an auto marker's ``keep_from_id`` names the first
stored message its note does NOT cover, and every message from there on stays verbatim.
Nothing is in neither.

Ids: messages added without an ``id`` are stored as copies with a fresh UUID (the
caller's objects are never changed), because a marker anchors on ids. langchain-core's
``message_to_dict`` keeps ids and ``additional_kwargs`` (so SQL, Redis, Postgres and file
histories round-trip markers intact). A store that does not persist ids still works: a
message read back without one is anchored by
:func:`~langchain_builderforce_memory.messages.message_id`, a hash of its type, content and
tool calls that is the same in every process, on both the writing and the reading side.
Two identical id-less messages share that hash; a marker then keeps from the FIRST of
them, which is conservative (a span covered twice, never lost).

Concurrency (one lock that binds to no event loop): a wrapper may be shared by threads,
by event loops running in different threads (a sync web server calling async code), and by
asyncio tasks, in any mix of the sync and async methods. Its writers (append, fold, manual
consolidation, clear) are serialised by one ``aiologic.Lock``, which sync code takes like a
``threading.Lock`` and async code awaits without blocking its loop, whichever loop that is
(an ``asyncio.Lock`` is bound to the first loop that waits on it). A second lock of the
same kind serialises every single call into the backing store, reads included, so a
backing over ONE connection (langchain-postgres's ``PostgresChatMessageHistory`` with one
``psycopg`` connection) is never used by two callers at once; reads do not wait for a
summarizer call in progress. Concurrent appends on one session lose no message, even over
a backing that reads, modifies and writes its whole list, and fold at most once. Do not
call the sync methods inside a running event loop whose own tasks use the async ones: the
sync call blocks that loop's thread until the lock is free.

Writers in SEVERAL processes get the backing store's own append guarantees: nothing stored
is ever rewritten and an auto marker keeps everything from its ``keep_from_id`` on, so no
message is lost. To also keep two processes from folding the same session at once (a
duplicate summarizer call and a superseded marker), pass a ``fold_guard``
(:class:`~langchain_builderforce_memory.guards.PostgresFoldGuard`, an advisory lock in the
database): the writer that holds it re-reads the record and folds, the others skip their
fold until the next append, so at most one marker wins a race. A backing that rewrites its
whole list on every append (a JSON file) can lose concurrent writes by itself: use a
database-backed history for multi-process writers. Keep one wrapper per session (cache it
in ``get_session_history``) when one process writes a session concurrently.

Deprecation: langchain-core marks ``BaseChatMessageHistory`` and
``RunnableWithMessageHistory`` deprecated (removal in 2.0). This wrapper serves the apps
that still use them, on the whole supported langchain-core range; it raises no
deprecation warning of its own (creating its default in-memory backing included), and
leaves the ones your code triggers alone. New code should use
:class:`~langchain_builderforce_memory.agents.middleware.BuilderforceMemoryMiddleware` with
``create_agent``, or :class:`~langchain_builderforce_memory.agents.node.WorkingTranscriptNode` in
a LangGraph graph, with a checkpointer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import replace
from typing import TypeVar

import aiologic
from langchain_core.chat_history import BaseChatMessageHistory, InMemoryChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage

from langchain_builderforce_memory.calibration import (
    UsageCalibration,
    input_tokens_of,
    scaled_tokens,
)
from langchain_builderforce_memory.guards import FoldGuard
from langchain_builderforce_memory.messages import (
    leading_system_count,
    message_id,
)
from langchain_builderforce_memory.options import keyword_options
from langchain_builderforce_memory.search import RecordIndex, SearchResult, search_outside_view
from langchain_builderforce_memory.tokens import (
    TokenCounter,
    TokenCounterLike,
    count_tokens,
    resolve_token_counter,
)
from langchain_builderforce_memory.transcript.backoff import SummarizerBackoff
from langchain_builderforce_memory.transcript.fold import (
    CompactMemo,
    FoldPolicy,
    finish_working_transcript,
)
from langchain_builderforce_memory.transcript.fold_plan import FoldPlan, plan_working_transcript
from langchain_builderforce_memory.transcript.markers import (
    consolidation_marker,
    consolidation_marker_of,
    is_consolidation_marker,
    scope_to_consolidation,
)
from langchain_builderforce_memory.transcript.plan import (
    COMPACT_TAIL_TOKEN_BUDGET,
)
from langchain_builderforce_memory.transcript.summary import (
    DEFAULT_SUMMARIZER_TIMEOUT,
    Summarizer,
    SummarizerLike,
    asummarize_transcript,
    resolve_summarizer,
    summarize_transcript,
)
from langchain_builderforce_memory.transcript.window import HISTORY_TOKEN_BUDGET, HISTORY_WINDOW

__all__ = [
    "CompactingChatMessageHistory",
    "record_memo",
    "scoped_record",
    "with_ids",
]

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseMessage)


def with_ids(messages: Sequence[M]) -> list[M]:
    """``messages`` with a fresh UUID on each one that has no ``id`` (copies, in order).

    Messages that already carry an id are returned as they are; the caller's objects are
    never changed.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> given = HumanMessage("hi")
        >>> stored = with_ids([given, HumanMessage("yo", id="m2")])
        >>> bool(stored[0].id), given.id, stored[1].id
        (True, None, 'm2')
    """
    return [m if m.id else m.model_copy(update={"id": str(uuid.uuid4())}) for m in messages]


def scoped_record(record: Sequence[BaseMessage]) -> list[BaseMessage]:
    """What of a stored record a view is built from (seed ``scopeToConsolidation``).

    Its leading system messages, then the conversation scoped to its last consolidation
    marker. Leading system messages are kept: a marker summarises the conversation, not the
    instructions in front of it.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> from langchain_builderforce_memory.transcript.markers import consolidation_marker
        >>> record = [HumanMessage("a"), consolidation_marker("sum"), AIMessage("b")]
        >>> [m.type for m in scoped_record(record)]
        ['ai', 'ai']
    """
    lead = leading_system_count(record)
    return [*record[:lead], *scope_to_consolidation(record[lead:])]


def record_memo(record: Sequence[BaseMessage]) -> tuple[list[BaseMessage], CompactMemo | None]:
    """A stored record as the fold sees it: its messages without markers, and its memo.

    The last consolidation marker becomes the memo: its note covers the stored messages
    before its ``keep_from_id`` (an auto marker) or before itself (a manual one). Markers
    are left out of the messages: the memo stands for them.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> record = [HumanMessage("a", id="a"), AIMessage("b", id="b"),
        ...           AIMessage("c", id="c"), consolidation_marker("sum", keep_from_id="c")]
        >>> messages, memo = record_memo(record)
        >>> [m.id for m in messages], memo.covered_end, memo.last_covered_id
        (['a', 'b', 'c'], 2, 'b')
    """
    messages: list[BaseMessage] = []
    marker: BaseMessage | None = None
    marker_at = 0
    for m in record:
        if is_consolidation_marker(m):
            marker, marker_at = m, len(messages)
        else:
            messages.append(m)
    if marker is None:
        return messages, None
    meta = consolidation_marker_of(marker)
    covered_end = marker_at
    keep = meta.keep_from_id if meta is not None else None
    if keep is not None:
        lead = leading_system_count(messages)
        found = next((i for i in range(lead, marker_at) if message_id(messages[i]) == keep), -1)
        covered_end = found if found >= 0 else marker_at
    lead = leading_system_count(messages)
    covered = covered_end - lead  # the memo indexes the conversation after the system
    note = marker.text if isinstance(marker.content, str | list) else str(marker.content)
    if covered < 1 or not note.strip():
        return messages, None
    return messages, CompactMemo(
        note=note, covered_end=covered, last_covered_id=message_id(messages[covered_end - 1])
    )


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
    methods (langchain-community's ``SQLChatMessageHistory`` needs ``async_mode=True``
    for them). Keep one wrapper per session: its locks serialise that session's writers.

    Args:
        backing: The history that stores the record (default: a new
            ``InMemoryChatMessageHistory``). Any ``BaseChatMessageHistory``: SQL, Redis,
            Postgres, a file.
        summarizer: A chat model, a ``"provider:model"`` string, a ``Runnable`` or a
            function (sync or async) that writes the notes; ``None`` only windows.
        max_tokens: Tokens the view may hold.
        max_messages: Conversation messages the view may hold.
        tail_tokens: Tokens a fold keeps verbatim after its note (also capped at the
            fold's share of the room left, so a small budget still folds rarely).
        token_counter: How to count (default: the approximate estimate).
        timeout: Seconds a summarizer call may take before the fold gives up (the view
            stays windowed); ``None`` waits.
        fold_guard: Keeps writers in other processes from folding this session at the
            same time (e.g. :class:`~langchain_builderforce_memory.guards.PostgresFoldGuard`);
            ``None``: this wrapper's own lock only.
        clear_at_least: Tokens of stale tool output the clear tier clears at a time
            (``None``: a quarter of ``max_tokens``).
        restore_tokens: Tokens of the working set's file outputs the clear tier keeps
            verbatim (``None``: an eighth of ``max_tokens``).
        clear_tool_results: Clear stale tool results in the view before folding.
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
        max_tokens: int = HISTORY_TOKEN_BUDGET,
        max_messages: int = HISTORY_WINDOW,
        tail_tokens: int = COMPACT_TAIL_TOKEN_BUDGET,
        token_counter: TokenCounterLike = None,
        timeout: float | None = DEFAULT_SUMMARIZER_TIMEOUT,
        backoff_tokens: int | None = None,
        fold_guard: FoldGuard | None = None,
        clear_at_least: int | None = None,
        restore_tokens: int | None = None,
        clear_tool_results: bool = True,
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
        self.policy = FoldPolicy(
            max_tokens=max_tokens,
            max_messages=max_messages,
            tail_tokens=tail_tokens,
            timeout=timeout,
            backoff_tokens=backoff_tokens,
            clear_at_least=clear_at_least,
            restore_tokens=restore_tokens,
            clear_tool_results=clear_tool_results,
        )
        # Created here, inside this package, so langchain-core's deprecation of the class
        # is not reported against the user's code for a default they did not choose.
        self.backing: BaseChatMessageHistory = (
            backing if backing is not None else InMemoryChatMessageHistory()
        )
        self.summarizer: Summarizer | None = resolve_summarizer(summarizer)
        self.token_counter: TokenCounter = resolve_token_counter(token_counter)
        guard: object = fold_guard
        if guard is not None and not isinstance(guard, FoldGuard):
            msg = (
                f"fold_guard: expected a FoldGuard (e.g. PostgresFoldGuard(url, key=session_id))"
                f" or None; got {type(guard).__name__}."
            )
            raise TypeError(msg)
        self.fold_guard: FoldGuard | None = fold_guard
        # Bound to no thread and no event loop (see the module docstring): _lock serialises
        # writers, _io serialises each call into the backing store (reads included).
        self._lock = aiologic.Lock()
        self._io = aiologic.Lock()
        self._index = RecordIndex()  # search(): extended with each new message
        # This process's last fold and summarizer backoff: the backoff is per wrapper (a
        # history has no state to checkpoint it in), the memo a fallback for stores
        # that drop the marker's stamp.
        self._memo: CompactMemo | None = None
        self._backoff: SummarizerBackoff | None = None
        # Whether the backing keeps a marker's stamp (None: not known until the first).
        self._markers_kept: bool | None = None
        flag: object = usage_calibration
        if not isinstance(flag, bool):
            msg = (
                f"usage_calibration must be True or False; got {flag!r}. "
                "Fix: pass usage_calibration=True or usage_calibration=False."
            )
            raise ValueError(msg)
        # The session's usage calibration: the view read last is what the app sent, the
        # answer it appends says what the provider counted (kept per wrapper, in memory).
        self._calibration = UsageCalibration(off=not usage_calibration)

    @property
    def budget_policy(self) -> FoldPolicy:
        """:attr:`policy` in our counter's tokens, scaled by the session's usage calibration."""
        factor = self._calibration.factor
        if factor == 1.0:
            return self.policy
        return replace(
            self.policy,
            max_tokens=max(1, math.floor(self.policy.max_tokens / factor)),
            tail_tokens=max(1, math.floor(self.policy.tail_tokens / factor)),
            clear_at_least=scaled_tokens(self.policy.clear_at_least, factor),
            restore_tokens=scaled_tokens(self.policy.restore_tokens, factor),
        )

    def _sent(self, record: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The view of ``record`` an app reads to send, noted as sent for the calibration."""
        cal = self._calibration
        if not cal.off and cal.samples == 0 and not cal.silent:
            # Answers already stored without a usage report: this model does not report
            # one, so the first read needs no margin either.
            last = next((m for m in reversed(record) if isinstance(m, AIMessage)), None)
            if last is not None and input_tokens_of(last) is None:
                self._calibration = replace(cal, silent=True)
        view = self.view_of(record)
        if not self._calibration.off:
            sent = count_tokens(view, self.token_counter)
            self._calibration = self._calibration.sent(sent, len(record))
        return view

    # ------------------------------------------------------------------ reads

    @property
    def messages(self) -> list[BaseMessage]:
        """The working view of the stored record (see the class docstring)."""
        return self._sent(self._read())

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
        return self._sent(await self._aread())

    @property
    def full_messages(self) -> list[BaseMessage]:
        """The whole stored record, markers included, oldest first (a new list)."""
        return self._read()

    async def aget_full_messages(self) -> list[BaseMessage]:
        """Async twin of :attr:`full_messages`."""
        return await self._aread()

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
        if leading_system_count(record) == len(record):
            return list(record)
        messages, memo = self._held(record)
        plan = plan_working_transcript(
            messages,
            memo=memo,
            policy=self.budget_policy,
            token_counter=self.token_counter,
            can_summarize=False,
            keep_memo=True,
        )
        if self.summarizer is not None and plan.mode != "verbatim":
            # A folding history's reads stay within budget: between folds (a backoff, a
            # fold held back as futile) the oldest tail units wait for the next fold.
            plan = replace(plan, backed_off=True)
        return finish_working_transcript(plan, None).messages

    def search(self, query: str, limit: int = 5) -> SearchResult:
        """The stored messages matching ``query`` that the working view no longer shows.

        Exact text first, then BM25 on the words (:mod:`~langchain_builderforce_memory.
        search`); never calls the summarizer. Render it for a model with ``render_search``.
        """
        record = self._read()
        return search_outside_view(self._index, record, self.view_of(record), query, limit=limit)

    async def asearch(self, query: str, limit: int = 5) -> SearchResult:
        """Async twin of :meth:`search` (the index is searched in a worker thread)."""
        record = await self._aread()
        view = self.view_of(record)
        return await asyncio.to_thread(
            search_outside_view, self._index, record, view, query, limit=limit
        )

    def _held(self, record: Sequence[BaseMessage]) -> tuple[list[BaseMessage], CompactMemo | None]:
        """The record without its markers, and the memo its last marker (or fold) holds."""
        messages, memo = record_memo(record)
        if memo is None and self._memo is not None:
            # A store that keeps no stamps (role and content only) loses the marker's
            # metadata; this process's own last fold still holds (validated by id).
            memo = self._memo
        return messages, memo

    # ------------------------------------------------------------------ writes

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages`` to the backing store, then fold if the view no longer fits.

        Ids are assigned to copies where missing. The fold's note is appended as an auto
        consolidation marker; a failed fold is logged and leaves the view windowed.
        """
        new = with_ids(messages)
        with self._lock:
            self._calibration = self._calibration.read_added(new, self.token_counter.count_message)
            self._append(new)
            if self.summarizer is None or self._fold_plan(self._read()) is None:
                return
            with self._guard() as held:
                # Another process may have folded since: plan on what is stored now.
                plan = self._fold_plan(self._read()) if held else None
                if plan is None:
                    return
                summary = summarize_transcript(
                    self.summarizer,
                    plan.fold_input,
                    timeout=self.policy.timeout,
                    token_counter=self.token_counter,
                )
                marker = self._after_fold(plan, summary)
                if marker is not None:
                    self._append([marker])
                    if self._markers_kept is None:
                        self._note_marker_kept(self._read())

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async twin of :meth:`add_messages`.

        The summarizer never blocks the event loop: an async one is awaited, a sync one
        runs in a worker thread.
        """
        new = with_ids(messages)
        async with self._lock:
            self._calibration = self._calibration.read_added(new, self.token_counter.count_message)
            await self._aappend(new)
            if self.summarizer is None or self._fold_plan(await self._aread()) is None:
                return
            async with self._aguard() as held:
                plan = self._fold_plan(await self._aread()) if held else None
                if plan is None:
                    return
                summary = await asummarize_transcript(
                    self.summarizer,
                    plan.fold_input,
                    timeout=self.policy.timeout,
                    token_counter=self.token_counter,
                )
                marker = self._after_fold(plan, summary)
                if marker is not None:
                    await self._aappend([marker])
                    if self._markers_kept is None:
                        self._note_marker_kept(await self._aread())

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
            convo = _consolidation_input(self._read()) if held else None
            if convo is None:
                return None
            note = summarize_transcript(summarizer, convo, timeout=self.policy.timeout)
            marker = _manual_marker(note)
            if marker is not None:
                self._append([marker])
            return marker

    async def aconsolidate(self) -> AIMessage | None:
        """Async twin of :meth:`consolidate`."""
        summarizer = self._require_summarizer("aconsolidate")
        async with self._lock, self._aguard() as held:
            convo = _consolidation_input(await self._aread()) if held else None
            if convo is None:
                return None
            note = await asummarize_transcript(summarizer, convo, timeout=self.policy.timeout)
            marker = _manual_marker(note)
            if marker is not None:
                await self._aappend([marker])
            return marker

    def clear(self) -> None:
        """Empty the backing store (passes through, after a write in progress)."""
        with self._lock, self._io:
            self.backing.clear()

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        async with self._lock, self._io:
            await self.backing.aclear()

    # ------------------------------------------------------------------ the backing store

    def _read(self) -> list[BaseMessage]:
        with self._io:
            return list(self.backing.messages)

    async def _aread(self) -> list[BaseMessage]:
        async with self._io:
            return list(await self.backing.aget_messages())

    def _append(self, messages: Sequence[BaseMessage]) -> None:
        with self._io:
            self.backing.add_messages(messages)

    async def _aappend(self, messages: Sequence[BaseMessage]) -> None:
        async with self._io:
            await self.backing.aadd_messages(messages)

    def _guard(self) -> contextlib.AbstractContextManager[bool]:
        if self.fold_guard is None:
            return contextlib.nullcontext(True)
        return _logged_loss(self.fold_guard.hold())

    def _aguard(self) -> contextlib.AbstractAsyncContextManager[bool]:
        if self.fold_guard is None:
            return contextlib.nullcontext(True)
        return _alogged_loss(self.fold_guard.ahold())

    # ------------------------------------------------------------------ planning (pure)

    def _fold_plan(self, record: Sequence[BaseMessage]) -> FoldPlan | None:
        """The fold the record needs now, or ``None`` when its view fits (or cannot fold).

        The middleware's cadence: the held note is reused while its verbatim tail fits,
        a fold leaves headroom for new work, and after a failed call the summarizer is
        backed off for a span of new work.
        """
        messages, memo = self._held(record)
        plan = plan_working_transcript(
            messages,
            memo=memo,
            policy=self.budget_policy,
            token_counter=self.token_counter,
            backoff=self._backoff,
            keep_memo=True,
        )
        return plan if plan.mode == "fold" else None

    def _after_fold(self, plan: FoldPlan, summary: str | None) -> AIMessage | None:
        """Keep the fold's memo and backoff; the auto marker to store, or ``None``.

        ``keep_from_id`` is the first message the note does not cover: the plan's cut
        (never a tool result: the tail starts off them), by its stored id.
        """
        done = finish_working_transcript(plan, summary, summarizer_calls=1)
        self._backoff = done.backoff
        if summary is None or done.memo is None:
            return None  # logged where it failed; the view stays the held note or window
        self._memo = done.memo
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

    def _note_marker_kept(self, stored: Sequence[BaseMessage]) -> None:
        """After the first marker: did the store keep its stamp? If not, write no more.

        A store that keeps only role and content turns a marker into a plain assistant
        message holding a 2.5k-token note, which would then sit in the verbatim tail and
        be folded again; this wrapper's own memo carries the fold instead (per process).
        """
        self._markers_kept = bool(stored) and is_consolidation_marker(stored[-1])
        if not self._markers_kept:
            logger.warning(
                "the backing history does not keep message metadata (additional_kwargs): "
                "consolidation markers cannot be stored, so folds are kept in this wrapper "
                "only and a new process starts from the whole record"
            )

    def _require_summarizer(self, where: str) -> Summarizer:
        if self.summarizer is None:
            msg = (
                f"{where}(): this CompactingChatMessageHistory has no summarizer. Pass "
                "summarizer=<a chat model or function> when creating it."
            )
            raise ValueError(msg)
        return self.summarizer


@contextlib.contextmanager
def _logged_loss(guard: contextlib.AbstractContextManager[bool]) -> Iterator[bool]:
    with guard as held:
        if not held:
            logger.info("another writer is folding this session; this fold is skipped")
        yield held


@contextlib.asynccontextmanager
async def _alogged_loss(guard: contextlib.AbstractAsyncContextManager[bool]) -> AsyncIterator[bool]:
    async with guard as held:
        if not held:
            logger.info("another writer is folding this session; this fold is skipped")
        yield held


def _consolidation_input(record: Sequence[BaseMessage]) -> list[BaseMessage] | None:
    """The scoped conversation a manual consolidation summarises.

    ``None`` when it holds nothing but a marker (nothing new since the last one).
    """
    scoped = scoped_record(record)
    convo = scoped[leading_system_count(scoped) :]
    if all(is_consolidation_marker(m) for m in convo):
        return None
    return convo


def _manual_marker(note: str | None) -> AIMessage | None:
    return with_ids([consolidation_marker(note)])[0] if note is not None else None
