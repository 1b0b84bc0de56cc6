"""Long-term code maps in a LangGraph `BaseStore`.

A finished run's working memory is consolidated into one map per code area
(`working.consolidation`) and written with `merge_consolidated` as the write rule, so runs on
one area accumulate into one map. The next run asks `maps_for(task)` (or hands
`recall_for(scope)` to the hand-off packer as its `recall`) and opens the right files first
instead of searching again.

Maps live under `namespace + scope`, where the scope names whose they are (user, tenant,
repo). Reads match the namespace EXACTLY: a store search is by namespace prefix, so a
prefix match would let scope `("alice",)` read `("alice", "repo")`'s maps. A scope label
is any text (or a whole number): what LangGraph forbids in a namespace label ('.', NUL)
is percent-escaped, so a user id such as `alice@example.com` is a scope as it is.

Any `BaseStore` works unchanged (`InMemoryStore` by default, `SqliteStore`,
`PostgresStore`); only its public `get` / `put` / `delete` / `search` (and their `a`
twins) are used. Concurrent saves of one area in one scope are last-writer-wins: a
`BaseStore` has no compare-and-set.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Final, TypeAlias, TypedDict

from langgraph.store.base import BaseStore, Item
from langgraph.store.memory import InMemoryStore

from langchain_builderforce_memory.working.consolidation import (
    MIN_CONSOLIDATED_FILES,
    ConsolidatedMemory,
    consolidate,
    map_entries,
    merge_consolidated,
    repo_path,
)
from langchain_builderforce_memory.working.memory import WorkingMemory

__all__ = [
    "DEFAULT_NAMESPACE",
    "CodeMap",
    "CodeMapRecall",
    "CodeMapStore",
    "CodeMapValue",
    "Scope",
    "scope_labels",
]

DEFAULT_NAMESPACE: Final = ("builderforce_memory", "codemaps")
"""Where maps live in the store, before the caller's scope."""
logger = logging.getLogger(__name__)
Scope: TypeAlias = "str | int | Sequence[str | int]"
"""Whose maps: a label (a user, tenant or repo id), or a sequence of them."""
_PAGE: Final = 100
_WORD = re.compile(r"[a-z0-9]+")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]+$")


class CodeMapValue(TypedDict):
    """The JSON value stored per map."""

    key: str
    content: str
    area: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class CodeMap:
    """One stored code map."""

    key: str
    """`codemap:<area>`, the store key."""
    area: str
    """The directory the map is about."""
    content: str
    """The rendered map, ready to show a model."""
    updated_at: str
    """ISO-8601 UTC time of the last save."""

    def to_value(self) -> CodeMapValue:
        """The store value."""
        return CodeMapValue(
            key=self.key, content=self.content, area=self.area, updated_at=self.updated_at
        )

    @classmethod
    def from_item(cls, item: Item) -> CodeMap | None:
        """The map an item holds, or `None` for a value this module did not write."""
        v = item.value
        fields = (v.get("content"), v.get("area"), v.get("updated_at"))
        if not all(isinstance(f, str) for f in fields):
            return None
        return cls(item.key, str(v["area"]), str(v["content"]), str(v["updated_at"]))


def _namespace(value: object) -> tuple[str, ...]:
    """`value` as the maps' namespace prefix, checked against LangGraph's label rules."""
    labels = (value,) if isinstance(value, str) else value
    if not isinstance(labels, Sequence) or not labels:
        msg = f"namespace must name at least one label (e.g. ('maps',)); got {value!r}."
        raise ValueError(msg)
    for label in labels:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise ValueError(
                f"namespace labels must be non-empty strings without '.' or NUL (LangGraph "
                f"namespace rules); got {label!r} in {labels!r}. Replace '.' (e.g. with '_')."
            )
    return tuple(labels)


def scope_labels(scope: object, what: str = "scope") -> tuple[str, ...]:
    """A scope as its labels: a label (text, or a number as text), or a sequence of them.

    Any text is a label: it is escaped where it meets the store (:func:`_escaped`), so a
    user id such as ``alice@example.com`` scopes its maps as it is.

    Raises:
        ValueError: no label, an empty one, or one that is neither text nor a number.

    Example:
        >>> scope_labels("alice@example.com"), scope_labels(("team", 42))
        (('alice@example.com',), ('team', '42'))
    """
    labels = (scope,) if isinstance(scope, str | int) else scope
    if not isinstance(labels, Sequence) or not labels:
        msg = f"{what} must be a label or a non-empty sequence of labels; got {scope!r}."
        raise ValueError(msg)
    if not all(isinstance(x, str | int) and not isinstance(x, bool) and x != "" for x in labels):
        msg = f"{what} labels must be non-empty text or whole numbers; got {scope!r}."
        raise ValueError(msg)
    return tuple(str(x) for x in labels)


def scope_of_run(value: object) -> tuple[str, ...] | None:
    """The labels a ``code_map_scope`` function gave a run; ``None``: no code maps this run.

    ``None`` says so on purpose (an anonymous user); anything else that is not a scope is
    logged, and the run goes on without code maps rather than failing in the graph.

    Example:
        >>> scope_of_run(["team", 7]), scope_of_run(None)
        (('team', '7'), None)
    """
    if value is None:
        return None
    try:
        return scope_labels(value, "code_map_scope's function: its result")
    except ValueError as exc:
        logger.warning("%s This run reads and saves no code maps.", exc)
        return None


def _escaped(label: str) -> str:
    """A scope label as a LangGraph namespace label, which may hold no '.' or NUL.

    Both are percent-escaped, and '%' too, so two labels never meet in one namespace.

    Example:
        >>> _escaped("alice@example.com"), _escaped("50%.")
        ('alice@example%2Ecom', '50%25%2E')
    """
    return label.replace("%", "%25").replace(".", "%2E").replace("\x00", "%00")


def _terms(path: str) -> set[str]:
    """Lower-case words of a path's directories and file stem: `web/src/App.tsx` -> web, src, app.

    Not the extension: it would match every file of a language.
    """
    return set(_WORD.findall(_EXTENSION.sub("", path).lower()))


@dataclass(frozen=True, slots=True)
class _Query:
    paths: frozenset[str]
    words: frozenset[str]


def _score(m: CodeMap, q: _Query) -> int:
    """Relevance of map `m` to query `q`; 0 is not relevant.

    3 per query path listed in the map, 2 per query path under the map's area, 2 per query
    word naming a directory of the area, 1 per other query word in the map's entry paths.
    """
    entries = {e.path for e in map_entries(m.content)}
    area = set(_WORD.findall(m.area.lower()))
    entry_terms = set().union(*(_terms(p) for p in entries)) if entries else set()
    score = sum(3 for p in q.paths if p in entries)
    score += sum(2 for p in q.paths if p.startswith(f"{m.area}/"))
    score += sum(2 if w in area else 1 for w in q.words if w in area or w in entry_terms)
    return score


@dataclass(frozen=True, slots=True)
class _SavePlan:
    namespace: tuple[str, ...]
    memory: ConsolidatedMemory
    updated_at: str

    def apply(self, prior: Item | None) -> CodeMap | None:
        """The map to store over `prior`, or `None` when no entry is left (delete)."""
        earlier = CodeMap.from_item(prior) if prior is not None else None
        content = merge_consolidated(
            self.memory.key, earlier.content if earlier else None, self.memory.content
        )
        if not map_entries(content):
            return None
        return CodeMap(self.memory.key, self.memory.area, content, self.updated_at)


class CodeMapStore:
    """Code maps per scope in any LangGraph `BaseStore`.

    Example:
        >>> from langchain_builderforce_memory.working import Observation, WorkingMemory
        >>> maps = CodeMapStore()
        >>> m = WorkingMemory()
        >>> m.observe_all(Observation.read(f"web/src/{n}.ts") for n in "abc")
        >>> maps.save(m, scope=("alice", "repo1")).key
        'codemap:web/src'
        >>> [c.area for c in maps.maps_for("fix the web page", scope=("alice", "repo1"))]
        ['web/src']
        >>> maps.maps_for("fix the web page", scope="bob")
        []
    """

    def __init__(
        self,
        store: BaseStore | None = None,
        *,
        namespace: tuple[str, ...] = DEFAULT_NAMESPACE,
        min_files: int = MIN_CONSOLIDATED_FILES,
        root: str | None = None,
    ) -> None:
        """Maps in `store` under `namespace + scope`.

        Args:
            store: Any LangGraph store; default a fresh `InMemoryStore`.
            namespace: The maps' namespace prefix; the caller's scope is appended.
            min_files: Passed to `consolidate`: the fewest distinct files a run must touch
                for its map to be kept.
            root: The workspace root: absolute paths under it are stored relative.

        Raises:
            ValueError: `namespace` breaks LangGraph's label rules (or starts with
                `"langgraph"`), or `min_files` is below 1.
        """
        self.namespace = _namespace(namespace)
        if self.namespace[0] == "langgraph":
            raise ValueError('namespace may not start with "langgraph" (reserved by LangGraph).')
        if isinstance(min_files, bool) or not isinstance(min_files, int) or min_files < 1:
            raise ValueError(f"min_files must be an int >= 1; got {min_files!r}.")
        self.store: BaseStore = store if store is not None else InMemoryStore()
        self.min_files = min_files
        self.root = root

    def namespace_for(self, scope: Scope) -> tuple[str, ...]:
        """The exact namespace a scope's maps live in (its labels escaped: :func:`_escaped`).

        Example:
            >>> CodeMapStore().namespace_for(("alice@example.com", 7))
            ('builderforce_memory', 'codemaps', 'alice@example%2Ecom', '7')
        """
        return (*self.namespace, *map(_escaped, scope_labels(scope)))

    def _plan(
        self,
        memory_or_snapshot: WorkingMemory | Mapping[str, object],
        scope: Scope,
        at: datetime | None,
    ) -> _SavePlan | None:
        namespace = self.namespace_for(scope)
        when = at or datetime.now(timezone.utc)
        # Naive times are taken as UTC, so `updated_at` strings compare in one zone.
        when = when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when
        when = when.astimezone(timezone.utc)
        memory = consolidate(memory_or_snapshot, at=when, root=self.root, min_files=self.min_files)
        if memory is None:
            return None
        return _SavePlan(namespace, memory, when.isoformat())

    def save(
        self,
        memory_or_snapshot: WorkingMemory | Mapping[str, object],
        *,
        scope: Scope,
        at: datetime | None = None,
    ) -> CodeMap | None:
        """Consolidate a finished run and merge it into its area's map in `scope`.

        Returns:
            The map as stored, or `None` when the run touched too little to keep (or left
            its area's map empty, which is then deleted).

        Raises:
            ValueError: A bad scope, or a malformed snapshot.
        """
        plan = self._plan(memory_or_snapshot, scope, at)
        if plan is None:
            return None
        stored = plan.apply(self.store.get(plan.namespace, plan.memory.key))
        if stored is None:
            self.store.delete(plan.namespace, plan.memory.key)
        else:
            self.store.put(plan.namespace, stored.key, dict(stored.to_value()))
        return stored

    async def asave(
        self,
        memory_or_snapshot: WorkingMemory | Mapping[str, object],
        *,
        scope: Scope,
        at: datetime | None = None,
    ) -> CodeMap | None:
        """Async `save`."""
        plan = self._plan(memory_or_snapshot, scope, at)
        if plan is None:
            return None
        stored = plan.apply(await self.store.aget(plan.namespace, plan.memory.key))
        if stored is None:
            await self.store.adelete(plan.namespace, plan.memory.key)
        else:
            await self.store.aput(plan.namespace, stored.key, dict(stored.to_value()))
        return stored

    def _query(self, task_or_paths: str | Sequence[str]) -> _Query:
        """Paths and words to rank by: a task's path-like words (with a `/`), or the paths."""
        if isinstance(task_or_paths, str):
            texts: list[str] = [task_or_paths]
            tokens = [t.strip("`'\"()[]{}<>,;").rstrip(".:") for t in task_or_paths.split()]
            candidates = [t for t in tokens if "/" in t]
        else:
            texts = candidates = [str(p) for p in task_or_paths]
        paths = {p for p in (repo_path(t, self.root) for t in candidates) if p}
        words = {w for t in texts for w in _WORD.findall(t.lower()) if len(w) >= 3}
        return _Query(frozenset(paths), frozenset(words))

    def _prepare(
        self, task_or_paths: str | Sequence[str], scope: Scope, limit: int
    ) -> tuple[tuple[str, ...], _Query]:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be an int >= 1; got {limit!r}.")
        return self.namespace_for(scope), self._query(task_or_paths)

    @staticmethod
    def _rank(
        namespace: tuple[str, ...], items: list[Item], query: _Query, limit: int
    ) -> list[CodeMap]:
        scored: list[tuple[int, CodeMap]] = []
        for item in items:
            # A prefix search also returns deeper scopes' maps: only this exact one counts.
            found = CodeMap.from_item(item) if tuple(item.namespace) == namespace else None
            if found is not None and (score := _score(found, query)) > 0:
                scored.append((score, found))
        # Best first; among equals the most recently updated, then by key (deterministic).
        scored.sort(key=lambda sm: sm[1].key)
        scored.sort(key=lambda sm: (sm[0], sm[1].updated_at), reverse=True)
        return [m for _, m in scored[:limit]]

    def maps_for(
        self, task_or_paths: str | Sequence[str], *, scope: Scope, limit: int = 3
    ) -> list[CodeMap]:
        """The scope's maps most relevant to a task (its text) or to a set of paths.

        Ranking is deterministic word / path overlap, no embeddings: 3 per queried path a
        map lists, 2 per queried path under its area, 2 per task word (3+ letters) naming
        a directory of its area, 1 per other task word found in its file paths. Maps
        scoring 0 are left out; ties go to the most recently updated.
        """
        namespace, query = self._prepare(task_or_paths, scope, limit)
        items: list[Item] = []
        while True:
            page = self.store.search(namespace, limit=_PAGE, offset=len(items))
            items += page
            if len(page) < _PAGE:
                break
        return self._rank(namespace, items, query, limit)

    async def amaps_for(
        self, task_or_paths: str | Sequence[str], *, scope: Scope, limit: int = 3
    ) -> list[CodeMap]:
        """Async `maps_for`."""
        namespace, query = self._prepare(task_or_paths, scope, limit)
        items: list[Item] = []
        while True:
            page = await self.store.asearch(namespace, limit=_PAGE, offset=len(items))
            items += page
            if len(page) < _PAGE:
                break
        return self._rank(namespace, items, query, limit)

    def recall_for(self, scope: Scope, *, limit: int = 3) -> CodeMapRecall:
        """A `recall(query, budget_chars)` over this scope's maps, for the hand-off packer."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be an int >= 1; got {limit!r}.")
        return CodeMapRecall(self, scope_labels(scope), limit)


def _fit(maps: list[CodeMap], budget_chars: int) -> str:
    """Whole maps, best first, while they fit; the first one cut at a line if none does."""
    if budget_chars <= 0 or not maps:
        return ""
    out: list[str] = []
    used = 0
    for m in maps:
        cost = len(m.content) + (2 if out else 0)
        if used + cost <= budget_chars:
            out.append(m.content)
            used += cost
    if out:
        return "\n\n".join(out)
    lines: list[str] = []
    for line in maps[0].content.split("\n"):
        if len("\n".join([*lines, line])) > budget_chars:
            break
        lines.append(line)
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class CodeMapRecall:
    """`recall(query, budget_chars) -> str` over one scope's code maps.

    The hand-off packer calls it with the latest directive when it must drop history: the
    maps most relevant to it, whole and best first, within `budget_chars` (the best one cut
    at a line boundary when not even it fits); `""` when nothing is relevant.
    """

    maps: CodeMapStore
    """The store to read."""
    scope: tuple[str, ...]
    """Whose maps."""
    limit: int = 3
    """At most this many maps."""

    def __call__(self, query: str, budget_chars: int) -> str:
        """The relevant maps as text, at most `budget_chars` long."""
        return _fit(self.maps.maps_for(query, scope=self.scope, limit=self.limit), budget_chars)

    async def acall(self, query: str, budget_chars: int) -> str:
        """Async `__call__`."""
        found = await self.maps.amaps_for(query, scope=self.scope, limit=self.limit)
        return _fit(found, budget_chars)
