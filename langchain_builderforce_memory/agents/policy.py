"""The turn policy both agent adapters take: one validated, frozen set of numbers.

The defaults are the seed's (``HISTORY_WINDOW = 80``, ``HISTORY_TOKEN_BUDGET = 64_000``,
a 40k-token verbatim tail after a fold), as defaults of a dataclass, never hard-coded
limits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from langchain_core.runnables import RunnableConfig

from langchain_builderforce_memory.transcript.plan import (
    COMPACT_TAIL_MAX_MESSAGES,
    COMPACT_TAIL_TOKEN_BUDGET,
    COMPACT_TAIL_TURNS,
    FoldPolicy,
)
from langchain_builderforce_memory.transcript.window import HISTORY_TOKEN_BUDGET, HISTORY_WINDOW

__all__ = ["CodeMapScope", "MemoryPolicy"]

CodeMapScope: TypeAlias = "str | Sequence[str] | Callable[[RunnableConfig], str | Sequence[str]]"
"""Whose code maps a run reads and writes: labels, or a function of the run's config
(e.g. ``lambda c: ("team", c["configurable"]["user_id"])``)."""


def _check_int(name: str, value: object, *, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        msg = f"{name} must be an int >= {minimum}; got {value!r}."
        raise ValueError(msg)


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryPolicy:
    """What both adapters do each turn, validated once at construction.

    Example:
        >>> MemoryPolicy(max_tokens=32_000).fold_budget
        29000
        >>> MemoryPolicy(max_tokens=2_000)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: max_tokens (2000) must exceed tail_reserve_tokens (3000), ...
    """

    max_tokens: int = HISTORY_TOKEN_BUDGET
    """Tokens a request may hold: system prompt, view and volatile tail together."""
    max_messages: int = HISTORY_WINDOW
    """Conversation messages the view may hold (system messages excluded)."""
    tail_tokens: int = COMPACT_TAIL_TOKEN_BUDGET
    """Tokens a fold keeps verbatim after its note (the fold also caps it by its share
    of the room left, so a small ``max_tokens`` still leaves headroom)."""
    min_tail_messages: int = COMPACT_TAIL_TURNS
    """Messages a fold keeps verbatim at the least, however large."""
    max_tail_messages: int = COMPACT_TAIL_MAX_MESSAGES
    """Messages a fold keeps verbatim at the most."""
    working_memory: bool = True
    """Keep the run's working memory and send its brief as the volatile tail."""
    tail_reserve_tokens: int = 3_000
    """Tokens held back from the fold for the volatile tail (brief + recalled maps) when
    working memory is on. Fixed, not the tail's size of the day: the fold's budget, and
    with it the view's cut points (the provider's prefix cache), stays put while the
    brief grows. A longer tail loses its last lines."""
    fit_to_model: bool = True
    """Fit the view to the serving model's window (its profile) with the hand-off packer."""
    reserve_output_tokens: int | None = None
    """Tokens held back for the reply when fitting. ``None``: the request's ``max_tokens``
    setting, else the profile's ``max_output_tokens`` (at most a quarter of the window)."""
    handoff_summarize: bool = False
    """Let the packer call the summarizer for what it drops. Off by default: the packer
    runs on EVERY turn a smaller model serves, and a summarizer call a turn is the cost
    the fold exists to avoid; the fold's own note is pinned in the packed view instead."""
    timeout: float | None = None
    """Seconds a summarizer (or recall) call may take before it counts as failed."""
    code_map_limit: int = 3
    """Code maps recalled into the brief at most."""

    def __post_init__(self) -> None:
        for flag in ("working_memory", "fit_to_model", "handoff_summarize"):
            if not isinstance(getattr(self, flag), bool):
                msg = f"{flag} must be True or False; got {getattr(self, flag)!r}."
                raise ValueError(msg)
        _check_int("max_tokens", self.max_tokens)
        _check_int("tail_reserve_tokens", self.tail_reserve_tokens, minimum=0)
        _check_int("code_map_limit", self.code_map_limit)
        if self.reserve_output_tokens is not None:
            _check_int("reserve_output_tokens", self.reserve_output_tokens, minimum=0)
        if self.fold_budget < 1:
            msg = (
                f"max_tokens ({self.max_tokens}) must exceed tail_reserve_tokens "
                f"({self.tail_reserve_tokens}), which the volatile tail (the working-memory "
                "brief) is given: raise max_tokens, lower tail_reserve_tokens, or pass "
                "working_memory=False."
            )
            raise ValueError(msg)
        self.fold_policy  # noqa: B018 - the fold validates its own numbers, with its messages

    @property
    def reserve(self) -> int:
        """Tokens held for the volatile tail (0 without working memory)."""
        return self.tail_reserve_tokens if self.working_memory else 0

    @property
    def fold_budget(self) -> int:
        """The fold's (and window's) budget: ``max_tokens`` less the tail's reserve."""
        return self.max_tokens - self.reserve

    @property
    def fold_policy(self) -> FoldPolicy:
        """The fold's numbers under this policy (its budget is :attr:`fold_budget`)."""
        return FoldPolicy(
            max_tokens=self.fold_budget,
            max_messages=self.max_messages,
            tail_tokens=self.tail_tokens,
            min_tail_messages=self.min_tail_messages,
            max_tail_messages=self.max_tail_messages,
            timeout=self.timeout,
        )
