"""The public API is an explicit, sorted ``__all__`` and every name in it resolves."""

from __future__ import annotations

import langchain_builderforce_memory as pkg

EXPECTED = [
    "COMPACT_TAIL_TOKEN_BUDGET",
    "COMPACT_TAIL_TURNS",
    "CONSOLIDATION_MARKER_PREFIX",
    "HISTORY_TOKEN_BUDGET",
    "HISTORY_TOKEN_DROP_CHUNK",
    "HISTORY_WINDOW",
    "HISTORY_WINDOW_DROP_CHUNK",
    "STAMP_KEY",
    "TRANSCRIPT_SUMMARY_MAX_TOKENS",
    "TRANSCRIPT_SUMMARY_PROMPT",
    "ApproximateTokenCounter",
    "BuilderforceMemoryMiddleware",
    "BuilderforceMemoryState",
    "CallableTokenCounter",
    "CodeMapRecall",
    "CodeMapStore",
    "CompactMemo",
    "CompactingChatMessageHistory",
    "ConsolidatedMemory",
    "ConsolidationMarkerMeta",
    "FoldPolicy",
    "HandoffPack",
    "MemoryPolicy",
    "Observation",
    "Summarizer",
    "TiktokenCounter",
    "TokenCounter",
    "ToolCallUnit",
    "ToolObservationMapper",
    "TranscriptFold",
    "WorkingMemory",
    "WorkingMemoryCallbackHandler",
    "WorkingMemorySnapshot",
    "WorkingTranscript",
    "WorkingTranscriptKeys",
    "WorkingTranscriptNode",
    "WorkingTranscriptState",
    "abuild_working_transcript",
    "apack_handoff",
    "assemble_compacted",
    "asummarize_transcript",
    "build_working_transcript",
    "compact_tail_start_for_budget",
    "consolidate",
    "consolidated_key",
    "consolidation_marker",
    "consolidation_marker_content",
    "consolidation_marker_of",
    "count_tokens",
    "fold_keep_from_id",
    "handoff_budget",
    "handoff_budget_for_model",
    "is_consolidation_marker",
    "is_volatile_tail",
    "last_consolidation_index",
    "merge_consolidated",
    "message_id",
    "observations_from_tool_call",
    "pack_handoff",
    "pinned_directive_index",
    "rank_by_count",
    "render_for_summary",
    "repair_request",
    "request_problems",
    "resolve_token_counter",
    "role_of",
    "scope_to_consolidation",
    "still_in_working_context",
    "summarize_transcript",
    "tool_call_units",
    "verbatim_start",
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


def test_the_package_imports_without_langchain_and_names_the_extra_for_the_middleware() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['langchain'] = None; sys.modules['langchain.agents'] = None\n"
        "import langchain_builderforce_memory as p\n"
        "assert p.windowed and p.WorkingTranscriptNode\n"
        "try:\n"
        "    p.BuilderforceMemoryMiddleware\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "langchain-builderforce-memory[agents]" in out.stdout


def test_unknown_attributes_raise_attribute_error() -> None:
    import pytest

    with pytest.raises(AttributeError, match="no_such_name"):
        _ = pkg.no_such_name
