"""Keep a LangChain / LangGraph agent's context window in bounds without making it forget.

The record (graph state, a chat history's store) is never shrunk; only the model's view
is: a chunked drop-oldest window, an incremental fold into one memory note, a hand-off
packer for smaller models, and the run's working memory restated as a brief.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from langchain_builderforce_memory.agents.node import (
    WorkingTranscriptKeys,
    WorkingTranscriptNode,
    WorkingTranscriptState,
)
from langchain_builderforce_memory.agents.policy import (
    MemoryPolicy,
)
from langchain_builderforce_memory.callbacks import WorkingMemoryCallbackHandler
from langchain_builderforce_memory.handoff import (
    HandoffPack,
    apack_handoff,
    handoff_budget,
    handoff_budget_for_model,
    is_volatile_tail,
    pack_handoff,
    volatile_tail,
)
from langchain_builderforce_memory.history import (
    CompactingChatMessageHistory,
)
from langchain_builderforce_memory.messages import (
    STAMP_KEY,
    ToolCallUnit,
    message_id,
    repair_request,
    request_problems,
    role_of,
    tool_call_units,
)
from langchain_builderforce_memory.store import CodeMapRecall, CodeMapStore
from langchain_builderforce_memory.tokens import (
    ApproximateTokenCounter,
    CallableTokenCounter,
    TiktokenCounter,
    TokenCounter,
    count_tokens,
    resolve_token_counter,
)
from langchain_builderforce_memory.transcript.fold import (
    COMPACT_TAIL_TOKEN_BUDGET,
    COMPACT_TAIL_TURNS,
    CompactMemo,
    FoldPolicy,
    TranscriptFold,
    WorkingTranscript,
    abuild_working_transcript,
    assemble_compacted,
    build_working_transcript,
    compact_tail_start_for_budget,
    pinned_directive_index,
    verbatim_start,
)
from langchain_builderforce_memory.transcript.markers import (
    CONSOLIDATION_MARKER_PREFIX,
    ConsolidationMarkerMeta,
    consolidation_marker,
    consolidation_marker_content,
    consolidation_marker_of,
    fold_keep_from_id,
    is_consolidation_marker,
    last_consolidation_index,
    scope_to_consolidation,
)
from langchain_builderforce_memory.transcript.summary import (
    TRANSCRIPT_SUMMARY_MAX_TOKENS,
    TRANSCRIPT_SUMMARY_PROMPT,
    Summarizer,
    asummarize_transcript,
    render_for_summary,
    summarize_transcript,
)
from langchain_builderforce_memory.transcript.window import (
    HISTORY_TOKEN_BUDGET,
    HISTORY_TOKEN_DROP_CHUNK,
    HISTORY_WINDOW,
    HISTORY_WINDOW_DROP_CHUNK,
    still_in_working_context,
    windowed,
)
from langchain_builderforce_memory.working import (
    ConsolidatedMemory,
    Observation,
    WorkingMemory,
    WorkingMemorySnapshot,
    consolidate,
    consolidated_key,
    merge_consolidated,
    rank_by_count,
)
from langchain_builderforce_memory.working.mapper import (
    ToolObservationMapper,
    observations_from_tool_call,
)

if TYPE_CHECKING:
    from langchain_builderforce_memory.agents.middleware import (
        BuilderforceMemoryMiddleware,
        BuilderforceMemoryState,
    )

from langchain_builderforce_memory._version import __version__ as __version__

_LAZY = {
    # The create_agent middleware needs `langchain` (the [agents] extra); everything else
    # runs on langchain-core and langgraph, so it is imported on first use only.
    "BuilderforceMemoryMiddleware": "langchain_builderforce_memory.agents.middleware",
    "BuilderforceMemoryState": "langchain_builderforce_memory.agents.middleware",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(module), name)


__all__ = [
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
