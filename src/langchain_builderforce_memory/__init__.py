"""Keep a LangChain / LangGraph agent's context window in bounds without making it forget.

The record (graph state, a chat history's store) is never shrunk; only the model's view
is: a chunked drop-oldest window, an incremental fold into one memory note, a hand-off
packer for smaller models, and the run's working memory restated as a brief.
"""

from __future__ import annotations

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

__version__ = "0.1.0"

__all__ = [
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
