"""Consolidation: what survives a run, as ONE long-term memory per code AREA.

A run that spends ninety turns locating the code behind a feature leaves with that
knowledge in its transcript and nowhere else, so the next run asked about the same area
repeats the whole search. `consolidate` turns the run's working memory into a map (the
files that mattered, changed first, then reads ranked by how much the run leaned on them)
under a key per area (the directory most of them share). Deterministic: built from what the
run actually opened, it cannot invent a path.

`merge_consolidated` is the WRITE-side rule a keyed store applies, so a small run ADDS to an
area's map instead of overwriting the twelve files an earlier one found, and a file this
run deleted leaves the map.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Final

from langchain_builderforce_memory.working.memory import WorkingMemory, rank_by_count

__all__ = [
    "CONSOLIDATED_KEY_PREFIX",
    "MAX_CONSOLIDATED_FILES",
    "MIN_CONSOLIDATED_FILES",
    "NOISE_FILES",
    "NOISE_SEGMENTS",
    "ConsolidatedMemory",
    "MapEntry",
    "consolidate",
    "consolidated_key",
    "map_entries",
    "merge_consolidated",
    "repo_path",
]

CONSOLIDATED_KEY_PREFIX: Final = "codemap:"
"""Key prefix every consolidated code map carries."""
MIN_CONSOLIDATED_FILES: Final = 3
"""Distinct files (changed, deleted and read together) a run must touch for its map to be
kept. Fewer is a lookup, not a map worth keeping. Since 2026.10.27 the same floor holds for
a run that changed files: it used to keep a one-file fix as a map."""
MAX_CONSOLIDATED_FILES: Final = 12
"""Entries a map lists; the rest are counted in a `(+N more file(s) touched)` line."""
_MIN_AREA_SEGMENTS: Final = 2
_MAX_AREA_SEGMENTS: Final = 4
_MAX_TASK_CHARS: Final = 200
_MAX_KEY_CHARS: Final = 255
NOISE_SEGMENTS: Final = frozenset(
    {"node_modules", "dist", ".next", ".turbo", "coverage", ".git", ".builderforce"}
)
"""Dependencies, build output and the knowledge tree itself: never "where the code is"."""
NOISE_FILES: Final = frozenset({"pnpm-lock.yaml", "package-lock.json", "yarn.lock", "bun.lockb"})
"""Lock files: touched by installs, never the code a task is about."""

_DRIVE = re.compile(r"^[a-z]:/", re.IGNORECASE)
# MSYS / Git-Bash spelling of a drive path: `/c/code/x` is `C:/code/x`.
_MSYS_DRIVE = re.compile(r"^/([a-z])/", re.IGNORECASE)
_SLASHES = re.compile(r"/{2,}")
_DOT_SEGMENTS = re.compile(r"(^|/)(\./)+")
_WHITESPACE = re.compile(r"\s+")
# `- <path> (<note>)`: the path is everything before the trailing parenthesised note.
_ENTRY = re.compile(r"- (.+?)(?: \(([^()]*)\))?")
_MORE = re.compile(r"\(\+\d+ more file\(s\) touched\)")


@dataclass(frozen=True, slots=True)
class ConsolidatedMemory:
    """One long-term memory, ready for a keyed store: the same key replaces (or merges)."""

    key: str
    """`codemap:<area>`: stable across runs, so maps of one area meet in one memory."""
    content: str
    """The rendered map (header, `- path (note)` entries, maybe a `(+N more ...)` line)."""
    area: str
    """The directory most of the run's files share, or `(root)`."""


@dataclass(frozen=True, slots=True)
class MapEntry:
    """One `- path (note)` line of a code map."""

    path: str
    """The repo-relative path."""
    note: str | None
    """`changed`, `changed earlier`, `read 3×`, `deleted`, or `None`."""

    def render(self) -> str:
        """The entry as a map line."""
        return f"- {self.path}{f' ({self.note})' if self.note else ''}"


def _canonical(raw: str) -> str:
    p = raw.strip().replace("\\", "/")
    msys = _MSYS_DRIVE.match(p)
    if msys:
        p = f"{msys.group(1)}:/{p[3:]}"
    # Collapse `a//b` and `a/./b`; a leading `./` too.
    return _DOT_SEGMENTS.sub(r"\1", _SLASHES.sub("/", p))


def repo_path(raw: str, root: str | None = None) -> str | None:
    r"""A repo-relative path, or `None` when `raw` is not a repo file worth mapping.

    Not worth mapping: outside `root` (or absolute with no root to resolve it against),
    escaping with `..`, dependencies or build output, or a lock file. Windows drive and
    MSYS (`/c/...`) paths compare case-insensitively, as the filesystem does.

    Example:
        >>> repo_path(r"C:\code\repo\web\src\a.ts", root="/c/code/repo")
        'web/src/a.ts'
        >>> repo_path("web/node_modules/x.js") is None
        True
    """
    p = _canonical(raw)
    if p.startswith("/") or _DRIVE.match(p):
        base = _canonical(root).rstrip("/") if root else ""
        if not base or base == "/":
            return None
        if _DRIVE.match(base):
            under = p.lower().startswith(f"{base.lower()}/")
        else:
            under = p.startswith(f"{base}/")
        if not under:
            return None
        p = p[len(base) + 1 :]
    segments = p.split("/")
    if not p or ".." in segments:
        return None
    if any(s in NOISE_SEGMENTS for s in segments) or segments[-1] in NOISE_FILES:
        return None
    return p


def _area_of(files: list[str]) -> str:
    """The area a set of files belongs to.

    The DEEPEST directory (to a bounded depth, so keys stay stable from run to run) holding
    a majority of them, else the depth-2 directory holding the most. Root-level files
    (DONE.md, package.json: touched by many unrelated runs) never decide it.
    """
    placed = [parts[:-1] for parts in (f.split("/") for f in files) if len(parts) > 1]
    if not placed:
        return "(root)"
    for depth in range(_MAX_AREA_SEGMENTS, _MIN_AREA_SEGMENTS - 1, -1):
        ranked = _dir_prefixes(placed, depth)
        if ranked and ranked[0][1] * 2 > len(placed):
            return ranked[0][0]
    ranked = _dir_prefixes(placed, _MIN_AREA_SEGMENTS) or _dir_prefixes(placed, 1)
    return ranked[0][0]


def _dir_prefixes(placed: list[list[str]], depth: int) -> list[tuple[str, int]]:
    """The directories ``depth`` segments deep, ranked by how many files they hold."""
    return rank_by_count("/".join(d[:depth]) for d in placed if len(d) >= depth)


def _repo_paths(items: Iterable[str], root: str | None) -> list[str]:
    """The repo-relative paths among ``items``, noise and outside paths left out."""
    return [p for p in (repo_path(raw, root) for raw in items) if p is not None]


def consolidated_key(area: str) -> str:
    """The key for an area: stable across runs, so consolidations of one area meet.

    Example:
        >>> consolidated_key("web/src/a")
        'codemap:web/src/a'
    """
    return f"{CONSOLIDATED_KEY_PREFIX}{area}"[:_MAX_KEY_CHARS]


def _utc_day(at: datetime | None) -> str:
    when = at if at is not None else datetime.now(timezone.utc)
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc)
    return when.date().isoformat()


def consolidate(
    snapshot: Mapping[str, object] | WorkingMemory,
    *,
    at: datetime | None = None,
    root: str | None = None,
    min_files: int = MIN_CONSOLIDATED_FILES,
) -> ConsolidatedMemory | None:
    """The long-term memory for one finished run, or `None` when it touched too little.

    Files the run deleted are carried as `(deleted)` lines, which `merge_consolidated`
    applies as removals and never stores.

    Args:
        snapshot: The run's `WorkingMemorySnapshot` (validated), or the memory itself.
        at: Dates the memory so a reader can judge its age (UTC day; a naive datetime is
            taken as UTC). Default: now.
        root: The workspace root: absolute paths under it are kept, made relative; other
            absolute paths are dropped.
        min_files: Distinct files (changed, deleted and read together) the run must touch
            for its map to be kept; the same floor for a run that changed files as for one
            that only read.

    Raises:
        ValueError: `min_files` is below 1, or `snapshot` is malformed.

    Example:
        >>> c = consolidate(
        ...     {"read": ["w/s/a.ts", "w/s/b.ts"], "edited": ["w/s/c.ts"]},
        ...     at=datetime(2026, 10, 24, tzinfo=timezone.utc),
        ... )
        >>> c.key
        'codemap:w/s'
        >>> print(c.content)
        Code map for `w/s` (mapped 2026-10-24).
        Open these first instead of searching:
        - w/s/c.ts (changed)
        - w/s/a.ts
        - w/s/b.ts
    """
    if isinstance(min_files, bool) or not isinstance(min_files, int) or min_files < 1:
        raise ValueError(f"min_files must be an int >= 1; got {min_files!r}.")
    memory = (
        snapshot if isinstance(snapshot, WorkingMemory) else WorkingMemory.from_snapshot(snapshot)
    )
    snap = memory.snapshot
    deleted = list(dict.fromkeys(_repo_paths(snap["deleted"], root)))
    deleted_set = set(deleted)
    changed = [
        p
        for p in dict.fromkeys(_repo_paths([*snap["created"], *snap["edited"]], root))
        if p not in deleted_set
    ]
    changed_set = set(changed)
    reads = [
        (p, n)
        for p, n in rank_by_count(_repo_paths(snap["read"], root))
        if p not in changed_set and p not in deleted_set
    ]
    read_counts = dict(reads)
    ranked = [*changed, *(p for p, _ in reads)]
    if len(ranked) + len(deleted) < min_files:
        return None

    shown = ranked[:MAX_CONSOLIDATED_FILES]
    area = _area_of(ranked or deleted)
    asked = _WHITESPACE.sub(" ", snap.get("task", "")).strip()[:_MAX_TASK_CHARS]
    by_run = f' by a run asked: "{asked}"' if asked else ""
    lines = [
        f"Code map for `{area}` (mapped {_utc_day(at)}{by_run}).",
        "Open these first instead of searching:",
    ]
    for p in shown:
        n = read_counts.get(p, 1)
        note = "changed" if p in changed_set else (f"read {n}×" if n > 1 else None)
        lines.append(MapEntry(p, note).render())
    lines += [MapEntry(p, "deleted").render() for p in deleted]
    if len(ranked) > len(shown):
        lines.append(f"(+{len(ranked) - len(shown)} more file(s) touched)")
    return ConsolidatedMemory(key=consolidated_key(area), content="\n".join(lines), area=area)


def map_entries(content: str) -> list[MapEntry]:
    r"""The `- path (note)` entries of a rendered map, in order.

    Example:
        >>> map_entries("Code map for `w`.\n- w/a.ts (changed)\n- w/b.ts")
        [MapEntry(path='w/a.ts', note='changed'), MapEntry(path='w/b.ts', note=None)]
    """
    out: list[MapEntry] = []
    for line in content.split("\n"):
        m = _ENTRY.fullmatch(line)
        if m:
            out.append(MapEntry(m.group(1), m.group(2)))
    return out


def merge_consolidated(key: str, prior: str | None, next: str) -> str:
    r"""The content to STORE when a consolidated map lands on a key that may hold one.

    The new run's entries first, then the earlier map's entries it did not touch (an
    earlier run's `changed` is restated as `changed earlier`, so this run is not credited
    with edits it never made), minus every file this run deleted, capped with a
    `(+N more file(s) touched)` line. With no prior, `next` is stored without its
    `(deleted)` lines. Any key that is not a code map stores `next` as sent.

    The STORE decides whether `prior` is still live: pass it only when the stored memory
    has not expired or been superseded, or a retired map comes back to life.

    Example:
        >>> prior = "Code map for `w`.\n- w/a.ts (changed)\n- w/b.ts"
        >>> nxt = "Code map for `w`.\n- w/b.ts (deleted)"
        >>> print(merge_consolidated("codemap:w", prior, nxt))
        Code map for `w`.
        - w/a.ts (changed earlier)
    """
    if not key.startswith(CONSOLIDATED_KEY_PREFIX):
        return next
    header = [
        line
        for line in next.split("\n")
        if not _ENTRY.fullmatch(line) and not _MORE.fullmatch(line)
    ]
    fresh = map_entries(next)
    seen = {e.path for e in fresh if e.note == "deleted"}
    merged: list[str] = []
    for e in fresh:
        if e.path not in seen:
            seen.add(e.path)
            merged.append(e.render())
    for e in map_entries(prior) if prior and prior.strip() else []:
        if e.path in seen or e.note == "deleted":
            continue
        seen.add(e.path)
        merged.append((MapEntry(e.path, "changed earlier") if e.note == "changed" else e).render())
    shown = merged[:MAX_CONSOLIDATED_FILES]
    more = len(merged) - len(shown)
    return "\n".join([*header, *shown, *([f"(+{more} more file(s) touched)"] if more else [])])
