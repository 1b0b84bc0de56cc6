"""The data one turn passes between its steps.

See :mod:`langchain_builderforce_memory.agents.driver`.

:class:`TurnPlan` is what the state and the record say, :class:`FitPlan` what the
hand-off packer is asked, :class:`TurnView` what the adapter sends and writes.
:class:`FoldCache` lets a retried model call reuse its turn's fold.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from typing_extensions import TypedDict

from langchain_builderforce_memory.agents.native import Delegation, WireLimits
from langchain_builderforce_memory.agents.policy import MemoryPolicy
from langchain_builderforce_memory.agents.state import RunMemoryState
from langchain_builderforce_memory.agents.toolstate import CompactRequest
from langchain_builderforce_memory.calibration import UsageCalibration
from langchain_builderforce_memory.copies import Copies
from langchain_builderforce_memory.events import Event
from langchain_builderforce_memory.handoff import HandoffPack
from langchain_builderforce_memory.native import Reader
from langchain_builderforce_memory.store import CodeMapRecall
from langchain_builderforce_memory.tokens import TokenCounter
from langchain_builderforce_memory.transcript.fold import WorkingTranscript
from langchain_builderforce_memory.transcript.fold_state import FoldState
from langchain_builderforce_memory.transcript.summary import Summarizer
from langchain_builderforce_memory.transcript.view import ViewSteps

__all__ = ["FitPlan", "FoldCache", "MemoryRead", "PackOptions", "TurnPlan", "TurnView", "thread_of"]


@dataclass(frozen=True, slots=True)
class TurnView:
    """What one turn decided: the messages to send and the state to write."""

    messages: list[BaseMessage]
    """The request's messages AFTER the system prompt (the adapter sends that itself)."""
    update: dict[str, Any]
    """State keys to write (only those that changed); empty when nothing did."""
    events: tuple[Event, ...]
    """What to report (a fold, a new clear batch, a fit): :mod:`~langchain_builderforce_memory.
    events`."""
    transcript: WorkingTranscript
    """The fold's result (its mode, its memo, the fold it made this turn if any)."""
    pack: HandoffPack | None
    """The hand-off packer's result, when the view had to be fitted to the model."""
    tail: HumanMessage | None
    """The volatile tail sent last (never stored), if one was sent."""
    run: RunMemoryState | None
    """The working memory as of this turn (``None``: working memory off)."""
    sent_tokens: int = 0
    """Our count of the request: system prompt, messages and tool schemas."""
    model_settings: Mapping[str, Any] | None = None
    """Model settings to merge into the request's (``native``: the provider's edits)."""

    @property
    def steps(self) -> ViewSteps:
        """What the view policy cleared, re-attached and elided this turn (the fold's)."""
        return self.transcript.steps


@dataclass(frozen=True, slots=True)
class TurnPlan:
    """What :meth:`MemoryCore.begin` read; the drivers fetch what it asks for."""

    source: list[BaseMessage]
    """The record as the graph holds it (its identity keys the fold cache)."""
    record: list[BaseMessage]
    """The conversation the fold reads: ``source`` scoped to its last consolidation
    marker (the same list when there is none)."""
    system: SystemMessage | None
    """The system prompt sent in front (counted, kept first; not in the record)."""
    memo_raw: object
    """The memo as the state holds it (its identity keys the fold cache)."""
    fold: FoldState
    """The fold's state (note, backoff, horizon), parsed once."""
    run: RunMemoryState | None
    """The working memory after reading the record (``None``: working memory off)."""
    run_changed: bool
    """Whether :attr:`run` must be written."""
    brief: str | None
    """The working-memory brief (``None`` until the run is long enough)."""
    recall_task: str | None
    """A task whose code maps must be fetched this turn."""
    scope: tuple[str, ...] | None
    """The code-map scope (``None`` without a store)."""
    cached: WorkingTranscript | None
    """This very turn's fold, when the model call is being retried."""
    policy: MemoryPolicy
    """This request's numbers: ``max_tokens`` resolved and in our counter's tokens."""
    calibration: UsageCalibration
    """The thread's usage calibration, the last request's usage report read."""
    compact: CompactRequest | None = None
    """A fold the model asked for (``compact_context``), made this turn."""
    overflow: bool = False
    """This request retries one the provider refused (``ContextOverflowError``)."""
    tools_tokens: int = 0
    """Our count of the tool schemas the request carries."""
    scaled: MemoryPolicy | None = None
    """:attr:`policy` before the tail's reserve was sized (see :meth:`MemoryPolicy.sized`)."""
    limit: int = 0
    """The most :attr:`policy` may be lifted to: the user's budget in our tokens, with no
    safety margin (see :meth:`UsageCalibration.limit`)."""
    thread: str | None = None
    """The run's ``thread_id`` (``None`` without one): whose record facts the fold uses."""
    directive: int | None = None
    """The latest directive's index in :attr:`record` (``None``: looked up where needed)."""
    copies: Copies | None = None
    """The thread's generated messages (its brief), the same objects turn after turn."""
    native: Delegation | None = None
    """What the provider's own context management takes over this request (``native``)."""
    reader: Reader = None
    """Whose compactions the serving model reads natively."""
    plain: bool = False
    """The record holds a provider compaction: the view's are made readable for
    :attr:`reader` (another provider's summary as text, an unreadable item left out)."""
    wire: WireLimits = field(default_factory=WireLimits)
    """What the serving model's API refuses beyond the budget (Bedrock's media per
    message, OpenAI's calls per message): the view is brought within it last."""


class PackOptions(TypedDict):
    """``pack_handoff``'s keyword arguments for one turn (``recall`` aside)."""

    target_context_tokens: int
    reserve_output_tokens: int
    from_model: str | None
    to_model: str | None
    summarizer: Summarizer | None
    timeout: float | None
    pinned_ids: tuple[str, ...]
    token_counter: TokenCounter


@dataclass(frozen=True, slots=True)
class FitPlan:
    """What the hand-off packer is asked to fit, and into what."""

    messages: list[BaseMessage]
    """The view, system prompt first, volatile tail last."""
    options: PackOptions
    """The packer's keyword arguments (the budget, the pins, the counter)."""
    recall: CodeMapRecall | None
    """Code maps the packer may recall into its note."""


@dataclass(frozen=True, slots=True)
class FoldEntry:
    """One cached fold and the inputs it was made from."""

    source: list[BaseMessage]
    length: int
    memo_raw: object
    system: SystemMessage | None
    result: WorkingTranscript


class FoldCache:
    """The last few folds, by the identity of their inputs.

    A retried model call (``ModelFallbackMiddleware`` trying the next model,
    ``ModelRetryMiddleware``) runs this middleware again on the SAME request state;
    without this it would fold again and pay the summarizer twice for one turn. Entries
    hold their record, so an ``id`` cannot be reused while cached; an answered call's
    entry is discarded, so an idle server holds no record here.
    """

    __slots__ = ("_entries", "_lock", "_size")

    def __init__(self, size: int = 16) -> None:
        self._entries: OrderedDict[int, FoldEntry] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def get(
        self, source: list[BaseMessage], memo_raw: object, system: SystemMessage | None
    ) -> WorkingTranscript | None:
        """The fold made from exactly these inputs (by identity), or ``None``."""
        with self._lock:
            entry = self._entries.get(id(source))
        if (
            entry is not None
            and entry.source is source
            and entry.length == len(source)
            and entry.memo_raw is memo_raw
            and entry.system is system
        ):
            return entry.result
        return None

    def discard(self, source: Sequence[BaseMessage]) -> None:
        """Forget the fold made from ``source`` (by identity): its model call was answered."""
        with self._lock:
            entry = self._entries.get(id(source))
            if entry is not None and entry.source is source:
                del self._entries[id(source)]

    def __len__(self) -> int:
        """Folds held."""
        return len(self._entries)

    def put(self, plan: TurnPlan, result: WorkingTranscript) -> None:
        """Remember ``result`` as the fold of ``plan``'s inputs (the oldest entry goes)."""
        key = id(plan.source)
        with self._lock:
            self._entries[key] = FoldEntry(
                plan.source, len(plan.source), plan.memo_raw, plan.system, result
            )
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)


def thread_of(config: RunnableConfig | None) -> str | None:
    """The run's ``thread_id`` as text (any value a checkpointer takes), or ``None``."""
    thread = ((config or {}).get("configurable") or {}).get("thread_id")
    return None if thread is None else str(thread)


@dataclass(frozen=True, slots=True)
class MemoryRead:
    """What the working memory gave a turn (all empty with working memory off)."""

    run: RunMemoryState | None = None
    """The working memory's state after reading the record."""
    changed: bool = False
    """Whether :attr:`run` must be written."""
    brief: str | None = None
    """The brief sent in the volatile tail."""
    recall_task: str | None = None
    """The task to recall code maps for, when it changed."""
    scope: tuple[str, ...] | None = None
    """The code-map scope (``None``: no code-map store)."""
