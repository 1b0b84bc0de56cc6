"""Working memory: the run's own record, and what survives it.

A run has two memories, and they do different jobs:

- SHORT-TERM: `WorkingMemory`, what THIS run has read, searched and changed. Restated
  before every turn (`WorkingMemory.brief`), because a model's own reasoning is not carried
  into its next turn and old tool results are compacted out of its window: without it a
  long run re-derives the codebase every turn.
- LONG-TERM: `consolidate`, what survives the run: a map of where the code for that area
  lives, keyed per area so the next run on it opens the right files first.
  `merge_consolidated` is the write-side rule that makes consolidations of one area
  accumulate instead of overwriting each other.

The memory knows observations ("read this file", "changed that one"), never tool names: a
host maps its own tool vocabulary onto `Observation`. Pure: no I/O.
"""

from __future__ import annotations

from langchain_builderforce_memory.working.consolidation import (
    CONSOLIDATED_KEY_PREFIX,
    MAX_CONSOLIDATED_FILES,
    MIN_CONSOLIDATED_FILES,
    ConsolidatedMemory,
    MapEntry,
    consolidate,
    consolidated_key,
    map_entries,
    merge_consolidated,
    repo_path,
)
from langchain_builderforce_memory.working.memory import (
    BRIEF_MAX_FILES,
    BRIEF_MAX_SEARCHES,
    BRIEF_MIN_OBSERVATIONS,
    OBSERVATION_KINDS,
    Observation,
    ObservationKind,
    WorkingMemory,
    WorkingMemorySnapshot,
    rank_by_count,
)

__all__ = [
    "BRIEF_MAX_FILES",
    "BRIEF_MAX_SEARCHES",
    "BRIEF_MIN_OBSERVATIONS",
    "CONSOLIDATED_KEY_PREFIX",
    "MAX_CONSOLIDATED_FILES",
    "MIN_CONSOLIDATED_FILES",
    "OBSERVATION_KINDS",
    "ConsolidatedMemory",
    "MapEntry",
    "Observation",
    "ObservationKind",
    "WorkingMemory",
    "WorkingMemorySnapshot",
    "consolidate",
    "consolidated_key",
    "map_entries",
    "merge_consolidated",
    "rank_by_count",
    "repo_path",
]
