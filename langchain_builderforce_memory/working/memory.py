"""Short-term memory for one run: what it has read, searched and changed so far.

Why the brief exists
--------------------
A model's reasoning is stripped from the transcript it reads next (models copy reasoning
markup instead of calling tools), and a bounded working window compacts old tool results
away. So by turn forty a run cannot see what it concluded at turn ten, and re-derives the
whole architecture in every turn's reasoning: measured, 8-10k completion tokens a turn for
two tool calls each, the same files re-read a dozen times. `WorkingMemory.brief` is the
run's own record, handed to EVERY turn on that request only (never into the transcript, so
it neither grows history nor breaks prompt caching), so the model reasons from "here is
what I have" instead of from scratch.

Record SUCCESSFUL observations only: a memory claiming a file was written when the write
failed grounds every later turn (and run) on a lie.

The memory knows observations ("read this file", "changed that one"), never tool names: a
host maps its own tool vocabulary onto `Observation` (see
`langchain_builderforce_memory.callbacks.ToolObservationMapper`).
"""

from __future__ import annotations

import operator
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypedDict, get_args

from langchain_builderforce_memory.working.file_keys import FileKeys, named_once

__all__ = [
    "BRIEF_MAX_COMMANDS",
    "BRIEF_MAX_FILES",
    "BRIEF_MAX_SEARCHES",
    "BRIEF_MIN_OBSERVATIONS",
    "COMMAND_KINDS",
    "FILE_KINDS",
    "OBSERVATION_KINDS",
    "FileKind",
    "Observation",
    "ObservationKind",
    "WorkingMemory",
    "WorkingMemorySnapshot",
    "rank_by_count",
]

ObservationKind = Literal[
    "read", "created", "edited", "deleted", "searched", "ran", "passed", "failed", "listed"
]
"""What a run did: four things to a path, a search, a command whose effect on files is not
known (``ran``), a test or build run that ``passed`` or ``failed`` (the target is the
command, as run), or a path an output showed exists (``listed``: not something the run did
to it, so it is not counted; a later shell glob can take it)."""

FileKind = Literal["read", "created", "edited", "deleted"]
"""The observation kinds whose target is a file path."""

OBSERVATION_KINDS: Final[tuple[ObservationKind, ...]] = get_args(ObservationKind)
FILE_KINDS: Final[tuple[FileKind, ...]] = get_args(FileKind)
COMMAND_KINDS: Final[tuple[ObservationKind, ...]] = ("ran", "passed", "failed")
_LISTED_LIMIT: Final = 500
"""Listed paths a memory keeps (the most recent): it lives in graph state, checkpointed."""
"""The kinds whose target is a command line; a snapshot lists them only when it has any."""
BRIEF_MAX_COMMANDS: Final = 10
"""Commands listed per section of the brief."""

BRIEF_MIN_OBSERVATIONS: Final = 10
"""Below this many observations the run's own results are still in its window, so a
restatement only costs tokens. Past it, compaction starts dropping them."""
BRIEF_MAX_FILES: Final = 25
"""Files listed per section of the brief."""
BRIEF_MAX_SEARCHES: Final = 15
"""Searches listed in the brief."""

_BRIEF_HEADER: Final = "## What this run has already established"
_BRIEF_GUIDANCE: Final = (
    "Your own record so far, kept by the runtime — not a new request. Build on it instead "
    "of re-deriving it: earlier results may have been compressed out of your context, but "
    "what you concluded from them still holds. Re-read a file only when it may have changed "
    "since (a command rewrote it) or you need a part you have not seen; re-running a search "
    "to verify an edit is fine. If you already know where the change goes, make it."
)
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Observation:
    """One thing a run did that is worth remembering, in the memory's own terms.

    Example:
        >>> Observation.read("web/src/App.tsx")
        Observation(kind='read', target='web/src/App.tsx')
        >>> Observation.searched('search_code "canvas"').kind
        'searched'
    """

    kind: ObservationKind
    """`read` / `created` / `edited` / `deleted` a path, or `searched` a query."""
    target: str
    """The path (file kinds) or the query (`searched`), as the tool spelled it."""

    def __post_init__(self) -> None:
        if self.kind not in OBSERVATION_KINDS:
            raise ValueError(
                f"Observation.kind must be one of {', '.join(OBSERVATION_KINDS)}; "
                f"got {self.kind!r}."
            )
        if not isinstance(self.target, str):
            raise ValueError(
                "Observation.target must be a str (a path, or a search query); "
                f"got {type(self.target).__name__}."
            )

    @classmethod
    def read(cls, path: str) -> Observation:
        """The run read `path`."""
        return cls("read", path)

    @classmethod
    def created(cls, path: str) -> Observation:
        """The run created (or wrote) `path`."""
        return cls("created", path)

    @classmethod
    def edited(cls, path: str) -> Observation:
        """The run edited `path`."""
        return cls("edited", path)

    @classmethod
    def deleted(cls, path: str) -> Observation:
        """The run deleted `path`."""
        return cls("deleted", path)

    @classmethod
    def searched(cls, query: str) -> Observation:
        """The run searched for `query` (a grep, a glob, a directory listing...)."""
        return cls("searched", query)

    @classmethod
    def ran(cls, command: str) -> Observation:
        """The run ran `command`, whose effect on files is not known."""
        return cls("ran", command)

    @classmethod
    def listed(cls, path: str) -> Observation:
        """An output showed that `path` exists (a listing, a glob's matches)."""
        return cls("listed", path)

    @property
    def is_file(self) -> bool:
        """True when `target` is a path (read, created, edited, deleted)."""
        return self.kind in FILE_KINDS


class _SnapshotLists(TypedDict):
    created: list[str]
    edited: list[str]
    deleted: list[str]
    read: list[str]
    searched: list[str]


class WorkingMemorySnapshot(_SnapshotLists, total=False):
    """What a run's working memory holds, as plain JSON (it can live in graph state).

    Lists keep duplicates: how often is a signal. `observations` counts every observation
    (also those whose path was empty); when absent it is the total of the lists.
    """

    task: str
    """What the run was asked."""
    ran: list[str]
    """Commands whose effect on files is not known, in order."""
    passed: list[str]
    """Test and build runs that passed, in order."""
    failed: list[str]
    """Test and build runs that failed, in order."""
    listed: list[str]
    """Paths outputs showed exist, oldest first, each once (at most _LISTED_LIMIT)."""
    failing: list[str]
    """The runs whose latest outcome is a failure (what is failing now)."""
    changed: list[str]
    """The files created or edited, each once, least recent change first."""
    observations: int
    """Observations recorded so far."""


_KEPT_KINDS: Final = tuple(k for k in OBSERVATION_KINDS if k != "listed")
"""The kinds kept as lists, every occurrence counted (``listed`` is a set, not counted)."""
_SNAPSHOT_KEYS: Final = frozenset(
    (*OBSERVATION_KINDS, "changed", "failing", "task", "observations")
)


def rank_by_count(items: Iterable[str]) -> list[tuple[str, int]]:
    """Each distinct item with how often it occurs, most frequent first, ties by name.

    The one ranking the brief, the consolidation and its area all use (and that hosts
    reuse for their own renderings of a run, so a run reads the same everywhere). Ties
    sort by code point, not by locale, so the order is the same on every machine.

    Example:
        >>> rank_by_count(["b", "a", "b"])
        [('b', 2), ('a', 1)]
    """
    return _ranked(Counter(items))


def _ranked(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    ranked = sorted(counts.items(), key=_NAME)
    ranked.sort(key=_COUNT, reverse=True)  # stable: equal counts stay in name order
    return ranked


_NAME: Final = operator.itemgetter(0)
_COUNT: Final = operator.itemgetter(1)


def _normalize_task(task: str) -> str:
    return _WHITESPACE.sub(" ", task).strip()


_FILE_KINDS: Final = ("read", "created", "edited", "deleted")
"""The kinds whose target is a file path."""
_COUNTED_KINDS: Final = ("read", "searched", "ran")
"""The kinds the brief lists with how often each occurred."""


def _counted(entries: list[tuple[str, int]]) -> list[str]:
    return [f"- {item}{f' ({n}×)' if n > 1 else ''}" for item, n in entries]


class WorkingMemory:
    """The run's own record of what it read, searched and changed.

    Not thread-safe by itself: one writer at a time (the callback handler serialises its
    writes under a lock).

    Example:
        >>> m = WorkingMemory()
        >>> m.set_task("Move the   canvas")
        >>> m.observe(Observation.read("web/src/App.tsx"))
        >>> m.size, m.snapshot["task"]
        (1, 'Move the canvas')
        >>> m.brief() is None  # too short a run to be worth restating
        True
    """

    __slots__ = (
        "_brief",
        "_changed",
        "_counts",
        "_created",
        "_deleted",
        "_edited",
        "_failed",
        "_failing",
        "_keys",
        "_listed",
        "_observations",
        "_passed",
        "_ran",
        "_read",
        "_searched",
        "_task",
    )

    def __init__(self) -> None:
        self._task: str | None = None
        self._created: list[str] = []
        self._edited: list[str] = []
        self._deleted: list[str] = []
        self._read: list[str] = []
        self._searched: list[str] = []
        self._ran: list[str] = []
        self._passed: list[str] = []
        self._failed: list[str] = []
        # Runs whose latest outcome is a failure, in the order they first failed.
        self._failing: dict[str, None] = {}
        # Files created or edited, least recent change first (a re-edit moves to the end).
        self._changed: dict[str, None] = {}
        self._listed: dict[str, None] = {}
        # How often each file was read, each query searched, each command run: kept as
        # observed, so a turn's brief and mapper cost what it observed, not the run.
        self._counts: dict[str, dict[str, int]] = {k: {} for k in _COUNTED_KINDS}
        # The roots the run's file paths showed, so the brief names a file once.
        self._keys = FileKeys()
        self._observations = 0
        # brief() ranks every observation; kept until the memory changes (a turn asks
        # for it again with nothing new observed).
        self._brief: tuple[str | None] | None = None

    def copy(self) -> WorkingMemory:
        """An independent copy (the lists copied, not re-validated like from_snapshot)."""
        out = WorkingMemory()
        out._task = self._task
        out._created = list(self._created)
        out._edited = list(self._edited)
        out._deleted = list(self._deleted)
        out._read = list(self._read)
        out._searched = list(self._searched)
        out._ran = list(self._ran)
        out._passed = list(self._passed)
        out._failed = list(self._failed)
        out._failing = dict(self._failing)
        out._changed = dict(self._changed)
        out._listed = dict(self._listed)
        out._counts = {k: dict(c) for k, c in self._counts.items()}
        out._keys = self._keys.copy()
        out._observations = self._observations
        out._brief = self._brief
        return out

    def set_task(self, task: str) -> None:
        """Record what the run was asked: the consolidation names it, so a map is a lesson.

        Whitespace is collapsed; a blank task leaves the recorded one unchanged.
        """
        asked = _normalize_task(task)
        if asked and asked != self._task:
            self._task = asked
            self._brief = None

    @property
    def task(self) -> str | None:
        """What the run was asked, if known."""
        return self._task

    def observe(self, observation: Observation) -> None:
        """Record one SUCCESSFUL observation. A blank path or query counts but is not kept."""
        if observation.kind == "listed":
            self._list_path(observation.target.strip())
            return
        self._observations += 1
        self._brief = None
        target = observation.target.strip()
        if not target:
            return
        self._list(observation.kind).append(target)
        if observation.kind in _COUNTED_KINDS:
            counts = self._counts[observation.kind]
            counts[target] = counts.get(target, 0) + 1
        if observation.kind in _FILE_KINDS:
            self._keys.add(target)
        if observation.kind in ("created", "edited"):
            self._changed.pop(target, None)
            self._changed[target] = None
        elif observation.kind == "failed":
            self._failing[target] = None
        elif observation.kind == "passed":
            self._failing.pop(target, None)

    def _list_path(self, path: str) -> None:
        if path:
            self._listed.pop(path, None)
            self._listed[path] = None
            if len(self._listed) > _LISTED_LIMIT:
                del self._listed[next(iter(self._listed))]

    @property
    def known_paths(self) -> frozenset[str]:
        """Every path the run has seen exist: listed, read or changed (for the mapper)."""
        return frozenset((*self._listed, *self._counts["read"], *self._changed))

    def observe_all(self, observations: Iterable[Observation]) -> None:
        """Record several observations, in order."""
        for observation in observations:
            self.observe(observation)

    def _list(self, kind: ObservationKind) -> list[str]:
        lists = {
            "created": self._created,
            "edited": self._edited,
            "deleted": self._deleted,
            "read": self._read,
            "searched": self._searched,
            "ran": self._ran,
            "passed": self._passed,
            "failed": self._failed,
        }
        return lists[kind]

    @property
    def size(self) -> int:
        """Observations recorded so far (searches and file events alike)."""
        return self._observations

    @property
    def snapshot(self) -> WorkingMemorySnapshot:
        """A JSON-able copy of the memory; `from_snapshot` rebuilds it."""
        snap = WorkingMemorySnapshot(
            created=list(self._created),
            edited=list(self._edited),
            deleted=list(self._deleted),
            read=list(self._read),
            searched=list(self._searched),
            observations=self._observations,
        )
        for kind in COMMAND_KINDS:
            if self._list(kind):
                snap[kind] = list(self._list(kind))
        if self._failing:
            snap["failing"] = list(self._failing)
        if self._changed:
            snap["changed"] = list(self._changed)
        if self._listed:
            snap["listed"] = list(self._listed)
        if self._task:
            snap["task"] = self._task
        return snap

    @classmethod
    def from_snapshot(cls, snapshot: Mapping[str, object]) -> WorkingMemory:
        """Rebuild a memory from `snapshot` (e.g. read back from graph state as JSON).

        Missing lists read as empty, so a snapshot written by a host that does not track
        one kind still loads.

        Raises:
            ValueError: `snapshot` is not a mapping of the snapshot's keys to their types,
                naming the bad key.
        """
        if not isinstance(snapshot, Mapping):
            raise ValueError(
                "A working-memory snapshot must be a mapping (WorkingMemorySnapshot); "
                f"got {type(snapshot).__name__}."
            )
        unknown = sorted(str(k) for k in snapshot if k not in _SNAPSHOT_KEYS)
        if unknown:
            raise ValueError(
                f"Unknown working-memory snapshot key(s) {unknown}; "
                f"allowed: {sorted(_SNAPSHOT_KEYS)}."
            )
        memory = cls()
        for kind in _KEPT_KINDS:
            memory._list(kind).extend(_string_list(snapshot, kind))
        memory._counts = {k: dict(Counter(memory._list(k))) for k in _COUNTED_KINDS}
        for path in _string_list(snapshot, "listed"):
            memory._list_path(path)
        failing = (
            _string_list(snapshot, "failing")
            if "failing" in snapshot
            else [c for c in memory._failed if c not in set(memory._passed)]
        )
        memory._failing = dict.fromkeys(failing)
        changed = (
            _string_list(snapshot, "changed")
            if "changed" in snapshot
            else [*memory._created, *memory._edited]
        )
        memory._changed = dict.fromkeys(changed)
        for kind in _FILE_KINDS:
            for path in memory._list(kind):
                memory._keys.add(path)
        kept = sum(len(memory._list(k)) for k in _KEPT_KINDS)
        memory._observations = _observation_count(snapshot, kept)
        task = snapshot.get("task")
        if task is not None:
            if not isinstance(task, str):
                raise ValueError(f"Snapshot key 'task' must be a str; got {type(task).__name__}.")
            memory.set_task(task)
        return memory

    def brief(self, *, observations: int | None = None) -> str | None:
        """What this run has ALREADY established, to put in front of its next turn.

        `None` until the run has done enough for a restatement to be worth its tokens.
        `observations` lets a host count its own activity (every tool call, not only the
        memory-relevant ones) toward that threshold. Hosts deliver the brief inside the
        per-request volatile tail, so it never becomes the cached prefix nor "the latest
        user directive".

        Example:
            >>> m = WorkingMemory()
            >>> m.observe(Observation.read("a.ts"))
            >>> print(m.brief(observations=12).splitlines()[-1])
            - a.ts
        """
        if observations is not None and (
            isinstance(observations, bool) or not isinstance(observations, int)
        ):
            raise ValueError(f"brief(observations=...) must be an int; got {observations!r}.")
        if observations is None and self._brief is not None:
            return self._brief[0]
        text = self._render_brief(self._observations if observations is None else observations)
        if observations is None:
            self._brief = (text,)
        return text

    def _render_brief(self, observations: int) -> str | None:
        if observations < BRIEF_MIN_OBSERVATIONS:
            return None
        changed, deleted, reads = self._files()
        searches = _ranked(self._counts["searched"])
        ran = _ranked(self._counts["ran"])
        failing = list(self._failing)
        passing = [c for c in dict.fromkeys(reversed(self._passed)) if c not in self._failing]
        if not (changed or deleted or reads or searches or ran or failing or passing):
            return None
        lines = [_BRIEF_HEADER, _BRIEF_GUIDANCE]
        if failing:
            lines += ["", "Failing now:", *(f"- {c}" for c in failing[-BRIEF_MAX_COMMANDS:])]
        if changed:
            lines += ["", "Changed:", *(f"- {p}" for p in changed[:BRIEF_MAX_FILES])]
            if len(changed) > BRIEF_MAX_FILES:
                lines.append(f"- … {len(changed) - BRIEF_MAX_FILES} more")
        if deleted:
            lines += ["", "Deleted:", *(f"- {p}" for p in deleted[:BRIEF_MAX_FILES])]
        if reads:
            lines += ["", "Read:", *_counted(reads[:BRIEF_MAX_FILES])]
            if len(reads) > BRIEF_MAX_FILES:
                lines.append(f"- … {len(reads) - BRIEF_MAX_FILES} more")
        if searches:
            lines += ["", "Searched:", *_counted(searches[:BRIEF_MAX_SEARCHES])]
        if passing:
            lines += ["", "Passed (latest run):", *(f"- {c}" for c in passing[:BRIEF_MAX_COMMANDS])]
        if ran:
            lines += ["", "Ran:", *_counted(ran[:BRIEF_MAX_COMMANDS])]
        return "\n".join(lines)

    def _files(self) -> tuple[list[str], list[str], list[tuple[str, int]]]:
        """The brief's changed (latest first), deleted and read files (with read counts)."""
        changed, deleted, read_counts = named_once(
            self._keys, list(reversed(self._changed)), self._deleted, self._counts["read"]
        )
        changed_set = set(changed)
        return changed, deleted, [(p, n) for p, n in _ranked(read_counts) if p not in changed_set]

    def __repr__(self) -> str:
        return f"WorkingMemory(size={self._observations}, task={self._task!r})"


def _string_list(snapshot: Mapping[str, object], key: str) -> list[str]:
    value = snapshot.get(key, [])
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"Snapshot key {key!r} must be a list of str; got {value!r:.80}.")
    return list(value)


def _observation_count(snapshot: Mapping[str, object], kept: int) -> int:
    count = snapshot.get("observations", kept)
    if isinstance(count, bool) or not isinstance(count, int) or count < kept:
        raise ValueError(
            "Snapshot key 'observations' must be an int no smaller than the number of "
            f"recorded entries ({kept}); got {count!r}."
        )
    return count
