"""The small state the agent adapters keep in the graph, and reading it back.

Two keys, both plain JSON so ANY checkpointer persists them (``InMemorySaver``,
``SqliteSaver``, ``PostgresSaver``) and a resumed thread continues exactly where it was:

- :data:`MEMO_KEY`: the fold's :class:`~langchain_builderforce_memory.transcript.fold.CompactMemo`
  as a dict. Without it a resumed thread would summarize its whole history again.
- :data:`WORKING_MEMORY_KEY`: :class:`RunMemoryState`, the run's working memory and how
  far the record has been read for it. Without it a resumed thread forgets its brief.

Both are written by the model-side hook only (one writer a step), so parallel tool calls
need no reducer: observations are read from the record (each call next to its result),
not written by the tools.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from langchain_core.messages import AIMessage, BaseMessage
from typing_extensions import NotRequired, TypedDict

from langchain_builderforce_memory.blocks import (
    legacy_function_call,
    parsed_arguments,
    result_messages,
    valid_calls,
)
from langchain_builderforce_memory.callbacks import (
    ToolObservationMapper,
    observations_from_tool_call,
)
from langchain_builderforce_memory.directive import latest_directive_text
from langchain_builderforce_memory.facts import DIRECTIVES, RecordFacts
from langchain_builderforce_memory.messages import (
    answers_legacy_call,
    leading_system_count,
    message_id,
    role_of,
)
from langchain_builderforce_memory.native import (
    LAST_COMPACTION,
    Reader,
    foreign_item,
    last_compaction_index,
    scope_to_compaction,
)
from langchain_builderforce_memory.transcript.markers import (
    last_consolidation_index,
    scope_to_consolidation,
)
from langchain_builderforce_memory.working.memory import WorkingMemory, WorkingMemorySnapshot

__all__ = [
    "MEMO_KEY",
    "WORKING_MEMORY_KEY",
    "RunMemoryRead",
    "RunMemoryState",
    "latest_directive",
    "read_run_memory",
    "reset_scan",
    "scoped_record",
    "state_get",
    "with_code_maps",
]

logger = logging.getLogger(__name__)

MEMO_KEY: Final = "builderforce_memo"
"""State key of the fold's memo (``CompactMemo.to_dict()``, plain JSON) or ``None``."""

WORKING_MEMORY_KEY: Final = "builderforce_working_memory"
"""State key of the run's working memory (:class:`RunMemoryState`, plain JSON)."""

_MAX_TASK_CHARS: Final = 2_000
"""The task is the latest directive; a pasted log as a directive must not bloat the state."""


class RunMemoryState(TypedDict):
    """The value under :data:`WORKING_MEMORY_KEY`."""

    snapshot: WorkingMemorySnapshot
    """The memory itself (``WorkingMemory.snapshot``)."""
    scanned: int
    """How many record messages have been read for observations."""
    scanned_id: str | None
    """``message_id`` of the last message read, to notice a record rewritten under us."""
    code_maps: NotRequired[str | None]
    """The code maps recalled for ``code_maps_task`` (sent in the volatile tail)."""
    code_maps_task: NotRequired[str | None]
    """The task the maps were recalled for: recalled again only when the task changes."""


@dataclass(frozen=True, slots=True)
class RunMemoryRead:
    """The working memory after reading the record's new part."""

    state: RunMemoryState
    """What to write under :data:`WORKING_MEMORY_KEY`."""
    memory: WorkingMemory
    """The live memory (its brief, its task)."""
    changed: bool
    """Whether :attr:`state` differs from what the graph holds (write only then)."""


def state_get(state: object, key: str) -> object:
    """``state[key]`` for a dict state, the attribute for a pydantic one, else ``None``."""
    if isinstance(state, Mapping):
        return state.get(key)
    return getattr(state, key, None)


def scoped_record(
    record: list[BaseMessage],
    *,
    facts: RecordFacts | None = None,
    reader: Reader | Literal["record"] = "record",
) -> list[BaseMessage]:
    """The part of the record the view is built from: after the last marker or block.

    A record with a durable marker (a manual "Consolidate", or a fold persisted by
    :class:`~langchain_builderforce_memory.history.CompactingChatMessageHistory`) starts
    the model's view at the marker; leading system messages stay in front. Without a
    marker the record itself is returned (no copy: the fold's caches key on it). A
    provider compaction block later than any marker starts the view instead
    (:func:`~langchain_builderforce_memory.native.scope_to_compaction`).
    ``facts``: the record's own, synced to it. ``reader``: whose compactions the
    serving model reads (``"record"``: any, as recorded); a block it cannot read and that
    holds no text starts nothing (:func:`~langchain_builderforce_memory.native.foreign_item`).
    """
    lead = leading_system_count(record)
    marker = last_consolidation_index(record, facts=facts)
    block = facts.get(LAST_COMPACTION) if facts is not None else last_compaction_index(record)
    if block > marker and (reader == "record" or not foreign_item(record[block], reader)):
        if facts is None:
            return scope_to_compaction(record, last=block)
        directives = facts.get(DIRECTIVES)
        before = bisect.bisect_left(directives, block)
        task = directives[before - 1] if before else -1
        return scope_to_compaction(record, last=block, directive=task, copies=facts.copies)
    if marker < lead:
        return record
    return [*record[:lead], *scope_to_consolidation(record[lead:])]


def latest_directive(
    record: Sequence[BaseMessage], *, facts: RecordFacts | None = None
) -> str | None:
    """The latest user message a user wrote (generated user turns carry a stamp).

    ``facts``: the record's own, synced to it (the directive is then not looked for).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> latest_directive([HumanMessage("fix it"), AIMessage("done")])
        'fix it'
    """
    if facts is None:
        return latest_directive_text(record, _MAX_TASK_CHARS)
    text = record[facts.directive].text.strip() if facts.directive >= 0 else ""
    return text[:_MAX_TASK_CHARS] or None


def _resume_at(record: Sequence[BaseMessage], scanned: int, scanned_id: str | None) -> int:
    """Where to continue reading ``record`` for observations.

    Normally ``scanned``. When the record was rewritten under us (another middleware
    replaced it), the last message read is looked up by id; when it is gone, reading
    resumes at the end: the rewritten part was read before, and reading it again would
    count every call twice.
    """
    if scanned <= 0:
        return 0
    if scanned <= len(record) and message_id(record[scanned - 1]) == scanned_id:
        return scanned
    for i in range(len(record) - 1, -1, -1):
        if message_id(record[i]) == scanned_id:
            return i + 1
    return len(record)


def _observe_new(
    memory: WorkingMemory,
    record: Sequence[BaseMessage],
    start: int,
    mapper: ToolObservationMapper,
) -> None:
    """Record the successful tool calls whose results are at ``record[start:]``."""
    # A result's call can sit before ``start`` (the record was read mid-unit), so calls
    # are collected from the start of the unit ``start`` falls in.
    first = start
    while first > 0 and role_of(record[first - 1]) == "tool":
        first -= 1
    if first > 0 and isinstance(record[first - 1], AIMessage):
        first -= 1
    calls: dict[str, tuple[str, object]] = {}
    for i in range(first, len(record)):
        m = record[i]
        if isinstance(m, AIMessage):
            calls.update(valid_calls(m))
            continue
        # A ToolMessage, the tool_result blocks of an Anthropic-native user turn, or the
        # FunctionMessage answering a legacy OpenAI function_call (it names no call id).
        answered: list[tuple[tuple[str, object] | None, object]] = [
            (calls.get(r.tool_call_id), r) for r in result_messages(m)
        ] + [(legacy, m.content) for legacy in _legacy_call(record, i)]
        for found, result in answered if i >= start else ():
            if found is not None and isinstance(found[1], Mapping):
                # The mapper reads the ToolMessage: status="error" or an "Error: ..."
                # answer records nothing (a failed write must not be remembered).
                memory.observe_all(
                    observations_from_tool_call(
                        found[0], found[1], result, mapper=mapper, known_paths=memory.known_paths
                    )
                )


def _legacy_call(record: Sequence[BaseMessage], i: int) -> list[tuple[str, object]]:
    """The legacy ``function_call`` (name, parsed arguments) ``record[i]`` answers, if any."""
    previous = record[i - 1] if i > 0 else None
    call = legacy_function_call(previous) if previous is not None else None
    if call is None or not answers_legacy_call(record[i], previous):
        return []
    return [(str(call.get("name") or "tool"), parsed_arguments(call.get("arguments")))]


class WrittenMemory:
    """The working memory a thread's last turn wrote, kept by the adapter for its next.

    The state holds only the snapshot; rebuilding the memory (and its brief) from it
    each turn costs the size of the memory. The next turn takes the memory over and
    changes it in place; the turn's reader only reads it. Kept per thread (see
    :class:`~langchain_builderforce_memory.per_thread.PerThread`), never in a module cache.
    """

    __slots__ = ("written",)

    def __init__(self) -> None:
        """Nothing written yet."""
        self.written: tuple[Mapping[str, Any], WorkingMemorySnapshot, WorkingMemory] | None = None
        """The snapshot as stored in the state, a copy of it as written, and its memory."""


def _prior_memory(
    raw: object, held: WrittenMemory | None
) -> tuple[Mapping[str, Any], WorkingMemory]:
    prior: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    snapshot = prior.get("snapshot")
    known = held.written if held is not None else None
    if held is not None and known is not None:
        # Taken, not copied (a copy costs the memory's size every turn): this turn
        # changes it in place, so until it writes back, nothing claims to match.
        held.written = None
        # The snapshot this thread's last turn wrote, unchanged since (compared by value
        # with the copy kept of it): its memory and brief, instead of re-reading. By value
        # alone: a new run of the thread reads the checkpointer's copy of the state.
        if known[1] == snapshot:
            return prior, known[2]
    try:
        return prior, WorkingMemory.from_snapshot(snapshot if isinstance(snapshot, Mapping) else {})
    except ValueError:
        logger.warning("resetting an unreadable %s", WORKING_MEMORY_KEY, exc_info=True)
        return {}, WorkingMemory()


def read_run_memory(
    record: Sequence[BaseMessage],
    state: object,
    mapper: ToolObservationMapper,
    *,
    facts: RecordFacts | None = None,
    held: WrittenMemory | None = None,
) -> RunMemoryRead:
    """The run's working memory after reading the tool results added since the last turn.

    O(new messages) a turn: the state remembers how far the record was read (and
    ``facts``, the record's own synced to it, where its task is). ``held``: what this
    thread's last turn wrote, kept by the caller; the memory is rebuilt from the state's
    snapshot without it.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> call = AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "a.py"},
        ...                                   "id": "c1"}])
        >>> record = [HumanMessage("fix a"), call, ToolMessage("...", tool_call_id="c1")]
        >>> read = read_run_memory(record, {}, ToolObservationMapper())
        >>> read.state["snapshot"]["read"], read.state["scanned"], read.memory.task
        (['a.py'], 3, 'fix a')
    """
    prior, memory = _prior_memory(state_get(state, WORKING_MEMORY_KEY), held)
    scanned = prior.get("scanned", 0)
    scanned_id = prior.get("scanned_id")
    start = _resume_at(
        record,
        scanned if isinstance(scanned, int) and not isinstance(scanned, bool) else 0,
        scanned_id if isinstance(scanned_id, str) else None,
    )
    before = (memory.size, memory.task)
    _observe_new(memory, record, start, mapper)
    task = latest_directive(record, facts=facts)
    if task:
        memory.set_task(task)
    last_id = message_id(record[-1]) if record else None
    snapshot = memory.snapshot
    memory.brief()  # worked out once per change; the copy kept carries it to the next turn
    if held is not None:
        held.written = (snapshot, memory.snapshot, memory)
    run = RunMemoryState(snapshot=snapshot, scanned=len(record), scanned_id=last_id)
    for key in ("code_maps", "code_maps_task"):
        value = prior.get(key)
        if isinstance(value, str):
            run[key] = value
    changed = (
        not prior
        or before != (memory.size, memory.task)
        or prior.get("scanned") != len(record)
        or prior.get("scanned_id") != last_id
    )
    return RunMemoryRead(state=run, memory=memory, changed=changed)


def with_code_maps(run: RunMemoryState, task: str, maps_text: str | None) -> RunMemoryState:
    """``run`` with the code maps recalled for ``task`` (``None``: nothing relevant)."""
    out = RunMemoryState(
        snapshot=run["snapshot"], scanned=run["scanned"], scanned_id=run["scanned_id"]
    )
    out["code_maps"] = maps_text
    out["code_maps_task"] = task
    return out


def reset_scan(run: RunMemoryState, record: Sequence[BaseMessage]) -> RunMemoryState:
    """``run`` marked as having read all of ``record`` (after the record was replaced)."""
    out = RunMemoryState(
        snapshot=run["snapshot"],
        scanned=len(record),
        scanned_id=message_id(record[-1]) if record else None,
    )
    if "code_maps" in run:
        out["code_maps"] = run.get("code_maps")
        out["code_maps_task"] = run.get("code_maps_task")
    return out
