"""Keep a LangChain / LangGraph agent's context window in bounds without making it forget.

The record (graph state, a chat history's store) is never shrunk; only the model's view
is: a chunked drop-oldest window, an incremental fold into one memory note, a hand-off
packer for smaller models, and the run's working memory restated as a brief.

The names below are the public API. Every other name lives in its own module
(``transcript``, ``handoff``, ``working``, ``agents``, ``tokens``, ``messages``, ...) and is
imported from there. Names are loaded on first use (PEP 562), so importing one submodule
(``bfmem --help`` imports ``cli.main``) does not import LangChain and LangGraph.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_builderforce_memory._version import __version__ as __version__
    from langchain_builderforce_memory.agents.middleware import (
        BuilderforceMemoryMiddleware,
        BuilderforceMemoryState,
    )
    from langchain_builderforce_memory.agents.node import (
        WorkingTranscriptKeys,
        WorkingTranscriptNode,
        WorkingTranscriptState,
    )
    from langchain_builderforce_memory.agents.policy import MemoryPolicy
    from langchain_builderforce_memory.callbacks import WorkingMemoryCallbackHandler
    from langchain_builderforce_memory.events import FitEvent, FoldEvent, ViewEvent
    from langchain_builderforce_memory.facts import RecordFacts
    from langchain_builderforce_memory.handoff import (
        HandoffPack,
        apack_handoff,
        handoff_budget_for_model,
        pack_handoff,
        volatile_tail,
    )
    from langchain_builderforce_memory.history import CompactingChatMessageHistory
    from langchain_builderforce_memory.store import CodeMapStore
    from langchain_builderforce_memory.tokens import (
        ApproximateTokenCounter,
        TiktokenCounter,
        TokenCounter,
        count_tokens,
    )
    from langchain_builderforce_memory.transcript.fold import (
        CompactMemo,
        WorkingTranscript,
        abuild_working_transcript,
        build_working_transcript,
    )
    from langchain_builderforce_memory.transcript.markers import (
        consolidation_marker,
        is_consolidation_marker,
        scope_to_consolidation,
    )
    from langchain_builderforce_memory.transcript.summary import Summarizer
    from langchain_builderforce_memory.transcript.window import windowed
    from langchain_builderforce_memory.validity import repair_request, request_problems
    from langchain_builderforce_memory.working import WorkingMemory
    from langchain_builderforce_memory.working.mapper import ToolObservationMapper

_PACKAGE = "langchain_builderforce_memory"

_MODULES: dict[str, tuple[str, ...]] = {
    # importlib.metadata costs more than the rest of `bfmem --help`: read on first use.
    "_version": ("__version__",),
    # The create_agent middleware needs `langchain` (the [agents] extra); everything else
    # runs on langchain-core and langgraph.
    "agents.middleware": ("BuilderforceMemoryMiddleware", "BuilderforceMemoryState"),
    "agents.node": ("WorkingTranscriptKeys", "WorkingTranscriptNode", "WorkingTranscriptState"),
    "agents.policy": ("MemoryPolicy",),
    "callbacks": ("WorkingMemoryCallbackHandler",),
    "events": ("FitEvent", "FoldEvent", "ViewEvent"),
    "facts": ("RecordFacts",),
    "handoff": (
        "HandoffPack",
        "apack_handoff",
        "handoff_budget_for_model",
        "pack_handoff",
        "volatile_tail",
    ),
    "history": ("CompactingChatMessageHistory",),
    "store": ("CodeMapStore",),
    "tokens": ("ApproximateTokenCounter", "TiktokenCounter", "TokenCounter", "count_tokens"),
    "transcript.fold": (
        "CompactMemo",
        "WorkingTranscript",
        "abuild_working_transcript",
        "build_working_transcript",
    ),
    "transcript.markers": (
        "consolidation_marker",
        "is_consolidation_marker",
        "scope_to_consolidation",
    ),
    "transcript.summary": ("Summarizer",),
    "transcript.window": ("windowed",),
    "validity": ("repair_request", "request_problems"),
    "working": ("WorkingMemory",),
    "working.mapper": ("ToolObservationMapper",),
}
_LAZY: dict[str, str] = {
    name: f"{_PACKAGE}.{module}" for module, names in _MODULES.items() for name in names
}

_MOVED: dict[str, str] = {
    # Names the root exported before the public API was cut to what the README and the
    # notebooks use: an AttributeError for them says where they live now.
    **dict.fromkeys(
        ("COMPACT_TAIL_TOKEN_BUDGET", "COMPACT_TAIL_TURNS", "FoldPolicy", "TranscriptFold"),
        "transcript.fold",
    ),
    **dict.fromkeys(
        (
            "assemble_compacted",
            "compact_tail_start_for_budget",
            "pinned_directive_index",
            "verbatim_start",
        ),
        "transcript.fold",
    ),
    **dict.fromkeys(
        (
            "CONSOLIDATION_MARKER_PREFIX",
            "ConsolidationMarkerMeta",
            "consolidation_marker_content",
            "consolidation_marker_of",
            "fold_keep_from_id",
            "last_consolidation_index",
        ),
        "transcript.markers",
    ),
    **dict.fromkeys(
        (
            "TRANSCRIPT_SUMMARY_MAX_TOKENS",
            "TRANSCRIPT_SUMMARY_PROMPT",
            "asummarize_transcript",
            "render_for_summary",
            "summarize_transcript",
        ),
        "transcript.summary",
    ),
    **dict.fromkeys(
        (
            "HISTORY_TOKEN_BUDGET",
            "HISTORY_TOKEN_DROP_CHUNK",
            "HISTORY_WINDOW",
            "HISTORY_WINDOW_DROP_CHUNK",
        ),
        "transcript.window",
    ),
    "still_in_working_context": "transcript.view",
    **dict.fromkeys(
        ("STAMP_KEY", "ToolCallUnit", "message_id", "role_of", "tool_call_units"), "messages"
    ),
    **dict.fromkeys(("CallableTokenCounter", "resolve_token_counter"), "tokens"),
    **dict.fromkeys(("handoff_budget", "is_volatile_tail"), "handoff"),
    **dict.fromkeys(
        (
            "ConsolidatedMemory",
            "Observation",
            "WorkingMemorySnapshot",
            "consolidate",
            "consolidated_key",
            "merge_consolidated",
            "rank_by_count",
        ),
        "working",
    ),
    "observations_from_tool_call": "working.mapper",
    "CodeMapRecall": "store",
}


def _load(name: str) -> object:
    """Import a public name on first use (PEP 562); point a moved name to its module."""
    module = _LAZY.get(name)
    if module is None:
        moved = _MOVED.get(name)
        hint = (
            f"; it is not part of the public API: import it from {_PACKAGE}.{moved}"
            if moved
            else ""
        )
        msg = f"module {__name__!r} has no attribute {name!r}{hint}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain module attribute
    return value


if not TYPE_CHECKING:
    # Hidden from type checkers, which see the names through the imports above: with a
    # visible module __getattr__ they would accept any attribute, typos included.
    __getattr__ = _load


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "ApproximateTokenCounter",
    "BuilderforceMemoryMiddleware",
    "BuilderforceMemoryState",
    "CodeMapStore",
    "CompactMemo",
    "CompactingChatMessageHistory",
    "FitEvent",
    "FoldEvent",
    "HandoffPack",
    "MemoryPolicy",
    "RecordFacts",
    "Summarizer",
    "TiktokenCounter",
    "TokenCounter",
    "ToolObservationMapper",
    "ViewEvent",
    "WorkingMemory",
    "WorkingMemoryCallbackHandler",
    "WorkingTranscript",
    "WorkingTranscriptKeys",
    "WorkingTranscriptNode",
    "WorkingTranscriptState",
    "abuild_working_transcript",
    "apack_handoff",
    "build_working_transcript",
    "consolidation_marker",
    "count_tokens",
    "handoff_budget_for_model",
    "is_consolidation_marker",
    "pack_handoff",
    "repair_request",
    "request_problems",
    "scope_to_consolidation",
    "volatile_tail",
    "windowed",
]
