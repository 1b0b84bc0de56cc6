"""What a turn reports: the fold, view and fit events, as typed dicts.

The agent adapters write each event to LangGraph's stream writer (``stream_mode="custom"``)
and log it as one INFO line; ``bfmem demo`` collects them. Each is a plain dict whose
:data:`EVENT_KEY` names it, typed here so a consumer can narrow on that key:

- :class:`FoldEvent`: the older part was folded into a new note (once a fold, not again by
  a retried model call);
- :class:`ViewEvent`: no fold, and the clear tier moved its horizon (a new batch of old
  tool results cleared); a view sent as it stood is not news (a DEBUG line);
- :class:`FitEvent`: the view was still over the serving model's limit and the hand-off
  packer fitted it;
- :class:`NativeEvent`: the provider compacted or cleared the last request itself.

Example:
    >>> from langchain_builderforce_memory.transcript.view import ViewSteps
    >>> event = view_event("memo", ViewSteps(cleared_messages=3, cleared_tokens=900).as_event())
    >>> event["builderforce_memory"], event["cleared_messages"], event["restored"]
    ('view', 3, [])
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from typing_extensions import TypedDict

__all__ = [
    "EVENT_KEY",
    "Event",
    "FitEvent",
    "FoldEvent",
    "NativeEvent",
    "ViewEvent",
    "ViewStepsFields",
    "fit_event",
    "view_event",
]

EVENT_KEY: Final = "builderforce_memory"
"""The key every event carries, naming it (``"fold"``, ``"view"``, ``"fit"``)."""


class ViewStepsFields(TypedDict):
    """What the view policy did to this turn's view (fold and view events carry these)."""

    cleared_messages: int
    """Tool results shown as placeholders."""
    cleared_tokens: int
    """Tokens of output those placeholders stand for."""
    restored: list[str]
    """Files whose latest output was re-attached after the note."""
    restored_tokens: int
    """Tokens of the re-attached outputs."""
    elided_messages: int
    """Messages cut (head and end kept) to fit."""
    elided_tokens: int
    """Tokens those cuts removed."""


class FoldEvent(ViewStepsFields):
    """The older part was folded into a new note this turn."""

    builderforce_memory: Literal["fold"]
    reason: Literal["budget", "requested"]
    """``"requested"``: the model asked with ``compact_context``; else the budget."""
    covered_end: int
    """Conversation messages the note now covers."""
    dropped_messages: int
    """Of them, newly folded by this fold."""
    note_tokens: int
    """The note's size."""
    summarizer_calls: int
    """Summarizer calls this turn made (a failed one counts)."""


class ViewEvent(ViewStepsFields):
    """No fold; the clear tier moved its horizon (a new batch now stands as placeholders)."""

    builderforce_memory: Literal["view"]
    mode: str
    """How the view was made (``"verbatim"``, ``"memo"``, ``"windowed"``...)."""


class FitEvent(TypedDict):
    """The view was still over the limit and the hand-off packer fitted it."""

    builderforce_memory: Literal["fit"]
    reason: Literal["overflow", "model", "budget"]
    """``"overflow"``: the provider refused the request as too long and it was retried."""
    model: str | None
    """The serving model's name; ``None`` when ``max_tokens`` itself was the limit."""
    budget: int
    """The budget the view was fitted to."""
    dropped_messages: int
    """Messages the packer left out."""
    estimated_tokens: int
    """The fitted view's size."""
    fits: bool
    """Whether it fits (``False``: even the packer's smallest view is over)."""
    elided_messages: int
    """Messages the packer cut."""
    elided_tokens: int
    """Tokens those cuts removed."""


class NativeEvent(TypedDict):
    """The provider's own context management acted on the request just answered."""

    builderforce_memory: Literal["native"]
    compacted: bool
    """The answer carries a compaction block: from this turn the view starts at it."""
    cleared_tool_uses: int
    """Tool uses the provider's clearing edit cleared."""
    cleared_input_tokens: int
    """Input tokens that edit cleared."""


Event: TypeAlias = "FoldEvent | ViewEvent | FitEvent | NativeEvent"
"""Any event a turn reports."""


def view_event(mode: str, steps: ViewStepsFields) -> ViewEvent:
    """The view event of a turn that made its view in ``mode`` with ``steps``."""
    return ViewEvent(builderforce_memory="view", mode=mode, **steps)


def fit_event(
    *,
    overflow: bool,
    model: str | None,
    budget: int,
    dropped: int,
    tokens: int,
    fits: bool,
    elided: tuple[int, int],
) -> FitEvent:
    """The fit event of a view the packer fitted to ``budget`` (``elided``: messages, tokens)."""
    return FitEvent(
        builderforce_memory="fit",
        reason="overflow" if overflow else ("model" if model else "budget"),
        model=model,
        budget=budget,
        dropped_messages=dropped,
        estimated_tokens=tokens,
        fits=fits,
        elided_messages=elided[0],
        elided_tokens=elided[1],
    )
