"""The state the agent's memory tools share with the per-turn core (plain JSON keys).

Two private keys, written only when ``agent_tools=True``:

- :data:`VIEW_KEY` (:class:`ViewMark`): which record messages the LAST view showed
  verbatim, and how long the record was then. ``search_history`` searches the rest: what
  the window dropped, the fold summarized, or a clear / elision step replaced. Computed
  from what was actually sent (after the fold, the packer and any later view step), so it
  stays right whatever steps the view gains: a step that changes a message stamps the
  copy (:func:`~langchain_builderforce_memory.messages.stamp`), and a stamped message is
  never counted as the record's own.
- :data:`COMPACT_KEY` (:class:`CompactState`): a fold the model asked for with
  ``compact_context``, pending until the next model call honours it, and when the last
  one was asked (for the rate limit). In the graph state, so it survives a checkpoint.

:class:`BuilderforceStateKeys` declares every key the package keeps in graph state, once:
the middleware's state schema and the node's both build on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final

from langchain_core.messages import BaseMessage
from typing_extensions import TypedDict

from langchain_builderforce_memory.agents.state import RunMemoryState, state_get
from langchain_builderforce_memory.messages import is_generated, message_id
from langchain_builderforce_memory.transcript.summary import FOCUS_MAX_CHARS

__all__ = [
    "COMPACT_KEY",
    "PRIVATE",
    "VIEW_KEY",
    "BuilderforceStateKeys",
    "CompactRequest",
    "CompactState",
    "ViewMark",
    "compact_request",
    "honoured",
    "new_request",
    "read_compact",
    "read_view_mark",
    "view_mark",
]

VIEW_KEY: Final = "builderforce_view"
"""State key of the last view's :class:`ViewMark` (plain JSON)."""

COMPACT_KEY: Final = "builderforce_compact"
"""State key of :class:`CompactState` (plain JSON)."""


try:
    from langchain.agents.middleware.types import PrivateStateAttr

    PRIVATE: object = PrivateStateAttr
except ImportError:  # pragma: no cover - LangGraph alone: no schema reads the mark
    PRIVATE = "private"
"""The mark that keeps a key out of ``create_agent``'s input and output schemas
(LangChain's ``PrivateStateAttr``); a plain LangGraph graph ignores it."""


class ViewMark(TypedDict):
    """What the last view showed of the record."""

    end: int
    """The record's length when the view was built: later messages are the model's own
    reply and its tool results, which it has in front of it anyway."""
    ids: list[str]
    """``message_id`` of every record message the view sent verbatim."""


class CompactState(TypedDict):
    """The value under :data:`COMPACT_KEY`."""

    pending: bool
    """A fold was asked for and the next model call has not made it yet."""
    focus: str
    """What the note must keep above all (``""``: nothing in particular)."""
    asked_at: int
    """The record's tokens when the last accepted request was made (the rate limit)."""


@dataclass(frozen=True, slots=True)
class CompactRequest:
    """A pending request, as the core reads it."""

    focus: str | None
    """What to keep (``None``: nothing in particular)."""
    state: CompactState
    """The state it was read from (written back as honoured)."""


def view_mark(record_length: int, sent: Sequence[BaseMessage]) -> ViewMark:
    """The :class:`ViewMark` of a view: the unstamped (record's own) messages it sent.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_builderforce_memory.messages import stamp
        >>> note = stamp(HumanMessage("note", id="n"), "memory_note")
        >>> view_mark(9, [note, HumanMessage("x", id="u")])
        {'end': 9, 'ids': ['u']}
    """
    return ViewMark(end=record_length, ids=[message_id(m) for m in sent if not is_generated(m)])


def read_view_mark(state: object) -> ViewMark | None:
    """The view mark a state holds; ``None`` when absent or unreadable (search all)."""
    raw = state_get(state, VIEW_KEY)
    if not isinstance(raw, Mapping):
        return None
    end, ids = raw.get("end"), raw.get("ids")
    if isinstance(end, bool) or not isinstance(end, int) or not isinstance(ids, list):
        return None
    return ViewMark(end=end, ids=[i for i in ids if isinstance(i, str)])


def read_compact(state: object) -> CompactState | None:
    """The compaction state a graph state holds; ``None`` when absent or unreadable."""
    raw = state_get(state, COMPACT_KEY)
    if not isinstance(raw, Mapping):
        return None
    pending, focus, asked = raw.get("pending"), raw.get("focus"), raw.get("asked_at")
    if not isinstance(pending, bool) or isinstance(asked, bool) or not isinstance(asked, int):
        return None
    return CompactState(
        pending=pending, focus=focus if isinstance(focus, str) else "", asked_at=asked
    )


def compact_request(state: object) -> CompactRequest | None:
    """The pending compaction request in ``state``, if there is one."""
    held = read_compact(state)
    if held is None or not held["pending"]:
        return None
    return CompactRequest(focus=held["focus"] or None, state=held)


def honoured(request: CompactRequest) -> CompactState:
    """The state to write once the next model call has made the requested fold."""
    return CompactState(
        pending=False, focus=request.state["focus"], asked_at=request.state["asked_at"]
    )


def new_request(focus: str, record_tokens: int) -> CompactState:
    """The state a ``compact_context`` call writes (focus cut to a sane length)."""
    return CompactState(pending=True, focus=focus.strip()[:FOCUS_MAX_CHARS], asked_at=record_tokens)


class BuilderforceStateKeys(TypedDict, total=False):
    """The keys the package keeps in graph state: plain JSON, checkpointed with the thread.

    Declared once: :class:`~langchain_builderforce_memory.agents.middleware.
    BuilderforceMemoryState` and :class:`~langchain_builderforce_memory.agents.node.
    WorkingTranscriptKeys` build on it. Each is marked :data:`PRIVATE`, so an agent's
    callers neither pass nor receive them.

    Example:
        >>> sorted(BuilderforceStateKeys.__annotations__)  # doctest: +NORMALIZE_WHITESPACE
        ['builderforce_calibration', 'builderforce_compact', 'builderforce_memo',
         'builderforce_view', 'builderforce_working_memory']
    """

    builderforce_memo: Annotated[dict[str, Any] | None, PRIVATE]
    """The fold's state (``FoldState.to_dict()``): its note, backoff and horizon."""
    builderforce_working_memory: Annotated[RunMemoryState | None, PRIVATE]
    """The run's working memory and how far the record has been read for it."""
    builderforce_view: Annotated[ViewMark | None, PRIVATE]
    """What the last view showed (``agent_tools``: search_history searches the rest)."""
    builderforce_compact: Annotated[CompactState | None, PRIVATE]
    """A fold the model asked for with compact_context, and when (the rate limit)."""
    builderforce_calibration: Annotated[dict[str, Any] | None, PRIVATE]
    """The thread's usage calibration (``UsageCalibration.to_dict()``)."""
