"""The public API is an explicit, sorted ``__all__`` and every name in it resolves."""

from __future__ import annotations

import langchain_builderforce_memory as pkg

EXPECTED = [
    "HISTORY_TOKEN_BUDGET",
    "HISTORY_TOKEN_DROP_CHUNK",
    "HISTORY_WINDOW",
    "HISTORY_WINDOW_DROP_CHUNK",
    "STAMP_KEY",
    "ApproximateTokenCounter",
    "CallableTokenCounter",
    "CodeMapRecall",
    "CodeMapStore",
    "ConsolidatedMemory",
    "HandoffPack",
    "Observation",
    "TiktokenCounter",
    "TokenCounter",
    "ToolCallUnit",
    "ToolObservationMapper",
    "WorkingMemory",
    "WorkingMemoryCallbackHandler",
    "WorkingMemorySnapshot",
    "apack_handoff",
    "consolidate",
    "consolidated_key",
    "count_tokens",
    "handoff_budget",
    "handoff_budget_for_model",
    "is_volatile_tail",
    "merge_consolidated",
    "message_id",
    "observations_from_tool_call",
    "pack_handoff",
    "rank_by_count",
    "repair_request",
    "request_problems",
    "resolve_token_counter",
    "role_of",
    "still_in_working_context",
    "tool_call_units",
    "volatile_tail",
    "windowed",
]


def test_all_is_pinned() -> None:
    assert pkg.__all__ == EXPECTED


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions, each alphabetical.
    kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return kind, name


def test_all_is_sorted_constants_then_classes_then_functions() -> None:
    assert pkg.__all__ == sorted(pkg.__all__, key=_isort_key)


def test_every_public_name_resolves() -> None:
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None, name
