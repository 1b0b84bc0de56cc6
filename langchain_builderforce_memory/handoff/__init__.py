"""Fit a transcript into the NEXT model's window (seed ``handoff/*``).

When a run moves to another model (a fallback after an error, a router choosing a
cheaper model, a sub-agent), that model's window may be much smaller. :func:`pack_handoff`
(and :func:`apack_handoff`) fits the transcript to it: the leading system messages, one
note for the dropped middle, the latest directive re-injected, and the longest verbatim
tail of whole tool-call units, with the per-request volatile tail (:func:`volatile_tail`)
kept last. :func:`handoff_budget_for_model` reads the budget from a chat model's profile
and its bound tools.

Example:
    >>> from langchain_core.language_models import FakeListChatModel
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> small = FakeListChatModel(
    ...     responses=["ok"], profile={"max_input_tokens": 300, "max_output_tokens": 50}
    ... )
    >>> budget = handoff_budget_for_model(small)
    >>> history = [HumanMessage("do it")] + [AIMessage("x" * 200)] * 20
    >>> pack = pack_handoff(history, target_context_tokens=budget, reserve_output_tokens=0)
    >>> pack.fits, pack.estimated_tokens <= budget
    (True, True)
"""

from __future__ import annotations

from langchain_builderforce_memory.handoff.budget import (
    ToolLike,
    handoff_budget,
    handoff_budget_for_model,
    tools_tokens,
)
from langchain_builderforce_memory.handoff.note import (
    HANDOFF_NOTE_KIND,
    Recall,
    elision_marker,
    handoff_line,
)
from langchain_builderforce_memory.handoff.pack import (
    HandoffPack,
    apack_handoff,
    latest_directive_index,
    pack_handoff,
)
from langchain_builderforce_memory.handoff.volatile import (
    VOLATILE_TAIL_TAG,
    is_volatile_tail,
    volatile_tail,
)

__all__ = [
    "HANDOFF_NOTE_KIND",
    "VOLATILE_TAIL_TAG",
    "HandoffPack",
    "Recall",
    "ToolLike",
    "apack_handoff",
    "elision_marker",
    "handoff_budget",
    "handoff_budget_for_model",
    "handoff_line",
    "is_volatile_tail",
    "latest_directive_index",
    "pack_handoff",
    "tools_tokens",
    "volatile_tail",
]
