"""The turn policy both agent adapters take: one validated, frozen set of numbers.

The defaults are the seed's budget (``HISTORY_TOKEN_BUDGET = 64_000``) and two chosen on
the recorded runs (``benchmarks/defaults_grid.md``): the ``"auto"`` message ceiling (128,
more past 64k) and a 1k-token verbatim tail after a fold. They are defaults of a
dataclass, never hard-coded limits.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, TypeAlias, cast

from langchain_core.runnables import Runnable, RunnableConfig

from langchain_builderforce_memory.agents.native import NativeMode, check_native
from langchain_builderforce_memory.calibration import scaled_tokens
from langchain_builderforce_memory.handoff.budget import share_of_model_budget
from langchain_builderforce_memory.options import keyword_options
from langchain_builderforce_memory.store import Scope
from langchain_builderforce_memory.transcript.memo import (
    COMPACT_TAIL_MAX_MESSAGES,
    COMPACT_TAIL_TOKEN_BUDGET,
    COMPACT_TAIL_TURNS,
    TAIL_SHARE,
    FoldPolicy,
)
from langchain_builderforce_memory.transcript.summary import DEFAULT_SUMMARIZER_TIMEOUT
from langchain_builderforce_memory.transcript.window import (
    HISTORY_TOKEN_BUDGET,
    MessageCeiling,
    auto_ceiling,
)

__all__ = [
    "CODE_MAP_LIMIT",
    "TAIL_RESERVE_STEP",
    "TAIL_RESERVE_TOKENS",
    "CodeMapScope",
    "MaxTokens",
    "MemoryPolicy",
    "budget_fraction",
    "token_budget",
]

MaxTokens: TypeAlias = "int | float | tuple[Literal['fraction'], float]"
"""A request budget: a token count, or a share of the serving model's window (``0.8`` or
``("fraction", 0.8)``, as ``SummarizationMiddleware.trigger`` takes it)."""


def token_budget(
    max_tokens: MaxTokens, model: Runnable[Any, Any] | str | None, *, where: str
) -> int:
    """``max_tokens`` as tokens: a share of ``model``'s window, or a token count as it is.

    A share is that of the model's window less its reply reserve
    (``handoff.budget.share_of_model_budget``), as the middleware takes it. For an entry
    point given its model up front (the chat history). A value that is neither comes back
    as it is, for the policy's own check to name.

    Raises:
        ValueError: a share without a model, naming ``model=`` and the alternative.

    Example:
        >>> token_budget(32_000, None, where="demo")
        32000
    """
    share = budget_fraction(max_tokens)
    if share is None:
        return cast("int", max_tokens)  # a count, or a bad value the policy names
    if model is None:
        msg = (
            f"max_tokens={max_tokens!r} is a share of a model's window: pass the chat model "
            f"{where} feeds as model= (or a 'provider:model' string), or a token count "
            "(max_tokens=64_000)."
        )
        raise ValueError(msg)
    return share_of_model_budget(share, model, where=where)


def budget_fraction(value: object) -> float | None:
    """The share ``value`` asks for (``None`` for a token count).

    Raises:
        ValueError: a fraction outside ``(0, 1]`` or a malformed tuple, naming the fix.

    Example:
        >>> budget_fraction(0.8), budget_fraction(("fraction", 0.5)), budget_fraction(32_000)
        (0.8, 0.5, None)
    """
    share: object = None
    if isinstance(value, float):
        share = value
    elif isinstance(value, tuple):
        if len(value) != 2 or value[0] != "fraction" or isinstance(value[1], bool):
            msg = (
                f"max_tokens: expected a token count, a fraction such as 0.8 or "
                f"('fraction', 0.8); got {value!r}."
            )
            raise ValueError(msg)
        share = float(value[1]) if isinstance(value[1], int | float) else value[1]
    else:
        return None
    if not isinstance(share, float) or not 0 < share <= 1:
        msg = (
            f"max_tokens: a fraction of the model's window must be in (0, 1]; got {value!r}. "
            "Fix: pass e.g. max_tokens=0.8, or a token count such as max_tokens=64_000."
        )
        raise ValueError(msg)
    return share


CodeMapScope: TypeAlias = "Scope | Callable[[RunnableConfig], Scope | None]"
"""Whose code maps a run reads and writes: labels, or a function of the run's config
(e.g. ``lambda c: ("team", c["configurable"]["user_id"])``). Any text or whole number is
a label (``alice@example.com`` too: the store escapes what LangGraph forbids). A function
that returns ``None`` gives its run no code maps; one whose result is no scope is logged,
and its run goes on without them."""


TAIL_RESERVE_TOKENS: Final = 3_000
"""Default :attr:`MemoryPolicy.tail_reserve_tokens`: room for the brief and recalled maps."""

TAIL_RESERVE_STEP: Final = 512
"""The volatile tail's reserve is what it uses, rounded up to this step: the fold's budget
then moves only when the brief crosses a step, not on every line it gains (each move of
the budget can move the view's front, and the provider's prompt cache with it)."""

CODE_MAP_LIMIT: Final = 3
"""Default :attr:`MemoryPolicy.code_map_limit`."""


def _check_int(name: str, value: object, default: int | None, *, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        fix = f"pass {name}={default!r} (the default)" if default is not None else "omit it"
        msg = f"{name} must be an int >= {minimum}; got {value!r}. Fix: {fix}."
        raise ValueError(msg)


@keyword_options
@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryPolicy:
    """What both adapters do each turn, validated once at construction.

    The adapters (``BuilderforceMemoryMiddleware``, ``WorkingTranscriptNode``) take the
    same options as keywords and build one of these; each field is documented below.

    Raises:
        ValueError: a bad number or flag, naming it, the value given and the fix.

    Example:
        >>> MemoryPolicy(max_tokens=32_000).fold_budget
        29000
        >>> MemoryPolicy(max_tokens=0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: max_tokens must be an int >= 1; got 0. ...
    """

    # Each field's paragraph is in options.OPTION_DOCS, shared with the adapters' docs.
    max_tokens: MaxTokens = HISTORY_TOKEN_BUDGET
    max_messages: MessageCeiling = "auto"
    tail_tokens: int = COMPACT_TAIL_TOKEN_BUDGET
    min_tail_messages: int = COMPACT_TAIL_TURNS
    max_tail_messages: int = COMPACT_TAIL_MAX_MESSAGES
    working_memory: bool = True
    tail_reserve_tokens: int = TAIL_RESERVE_TOKENS
    fit_to_model: bool = True
    reserve_output_tokens: int | None = None
    handoff_summarize: bool = False
    timeout: float | None = DEFAULT_SUMMARIZER_TIMEOUT
    backoff_tokens: int | None = None
    code_map_limit: int = CODE_MAP_LIMIT
    agent_tools: bool = False
    refold_min_new_tokens: int | None = None
    clear_at_least: int | None = None
    restore_tokens: int | None = None
    clear_tool_results: bool = True
    clear_edit_inputs: bool = True
    usage_calibration: bool = True
    native: NativeMode = "off"

    def __post_init__(self) -> None:
        for flag in (
            "working_memory",
            "fit_to_model",
            "handoff_summarize",
            "agent_tools",
            "clear_tool_results",
            "clear_edit_inputs",
            "usage_calibration",
        ):
            if not isinstance(getattr(self, flag), bool):
                msg = (
                    f"{flag} must be True or False; got {getattr(self, flag)!r}. "
                    f"Fix: pass {flag}=True or {flag}=False."
                )
                raise ValueError(msg)
        check_native(self.native)
        if self.fraction is not None:
            # Resolved per request from the serving model's profile (see resolved()).
            _check_int(
                "tail_reserve_tokens", self.tail_reserve_tokens, TAIL_RESERVE_TOKENS, minimum=0
            )
            return
        _check_int("max_tokens", self.max_tokens, HISTORY_TOKEN_BUDGET)
        _check_int("tail_reserve_tokens", self.tail_reserve_tokens, TAIL_RESERVE_TOKENS, minimum=0)
        _check_int("code_map_limit", self.code_map_limit, CODE_MAP_LIMIT)
        if self.reserve_output_tokens is not None:
            _check_int("reserve_output_tokens", self.reserve_output_tokens, None, minimum=0)
        if self.refold_min_new_tokens is not None:
            _check_int("refold_min_new_tokens", self.refold_min_new_tokens, None, minimum=0)
        # The fold validates its own numbers, with its messages; uncached: a bad value (a
        # list) may not be hashable.
        _fold_policy.__wrapped__(self)

    @property
    def fraction(self) -> float | None:
        """The share of the serving model's window ``max_tokens`` asks for, or ``None``."""
        return budget_fraction(self.max_tokens)

    @property
    def budget(self) -> int:
        """``max_tokens`` as a token count (a fraction must be :meth:`resolved` first)."""
        if isinstance(self.max_tokens, int):
            return self.max_tokens
        msg = (
            f"max_tokens={self.max_tokens!r} is a share of the serving model's window: "
            "resolve it per request with MemoryPolicy.resolved(window)."
        )
        raise ValueError(msg)

    def resolved(self, max_tokens: int) -> MemoryPolicy:
        """This policy with ``max_tokens`` a token count (a fraction's share, resolved).

        Raises:
            ValueError: the count cannot hold the volatile tail's reserve.

        Example:
            >>> MemoryPolicy(max_tokens=0.5).resolved(16_000).fold_budget
            13000
        """
        return replace(self, max_tokens=max_tokens)

    def scaled(self, factor: float, *, ceiling: int | None = None) -> MemoryPolicy:
        """This policy in a counter's tokens when budgets are in the provider's.

        Every token number is divided by ``factor`` (provider tokens per token of ours,
        see :class:`~langchain_builderforce_memory.calibration.UsageCalibration`);
        ``ceiling`` (our tokens) caps ``max_tokens`` after that.

        Example:
            >>> MemoryPolicy(max_tokens=13_000).scaled(1.3).max_tokens
            10000
        """
        if factor == 1.0 and ceiling is None:
            return self
        return _scaled(self, factor, ceiling)

    def _scaled_now(self, factor: float, ceiling: int | None) -> MemoryPolicy:
        top = max(1, math.floor(self.budget / factor))
        if ceiling is not None:
            top = max(1, min(top, ceiling))
        reserve = min(math.floor(self.tail_reserve_tokens / factor), top - 1)
        return replace(
            self,
            # "auto" counts from the user's budget, not the scaled one: the ceiling, and so
            # the window's cut points, stay put while the provider's ratio is learned.
            max_messages=auto_ceiling(self.max_messages, self.budget),
            max_tokens=top,
            tail_tokens=max(1, math.floor(self.tail_tokens / factor)),
            tail_reserve_tokens=max(0, reserve),
            clear_at_least=scaled_tokens(self.clear_at_least, factor),
            restore_tokens=scaled_tokens(self.restore_tokens, factor),
        )

    def sized(self, *, tail_tokens: int, floor_tokens: int, limit: int) -> MemoryPolicy:
        """This request's policy with the tail's reserve sized to the tail it sends.

        The reserve is what the volatile tail uses (rounded up to
        :data:`TAIL_RESERVE_STEP`), at most :attr:`tail_reserve_tokens`: a 300-token brief
        does not take 3,000 tokens from the conversation. When the budget less that
        reserve cannot hold ``floor_tokens`` (the system prompt plus one human message),
        ``max_tokens`` is lifted up to ``limit`` (the user's budget with no safety margin)
        and then the reserve shrinks: the turn is served, not refused.

        Example:
            >>> p = MemoryPolicy(max_tokens=8_000)
            >>> p.sized(tail_tokens=300, floor_tokens=100, limit=8_000).fold_budget
            7488
            >>> p.sized(tail_tokens=3_000, floor_tokens=7_900, limit=10_000).max_tokens
            10000
        """
        reserve = min(self.reserve, -(-tail_tokens // TAIL_RESERVE_STEP) * TAIL_RESERVE_STEP)
        top = self.budget
        if top - reserve < floor_tokens:
            top = max(top, min(limit, floor_tokens + reserve))
            reserve = max(0, min(reserve, top - floor_tokens))
        if (top, reserve) == (self.budget, self.tail_reserve_tokens):
            return self
        return replace(self, max_tokens=top, tail_reserve_tokens=reserve)

    @property
    def reserve(self) -> int:
        """Tokens held for the volatile tail (0 without working memory).

        At most ``max_tokens - 1``: a budget under :attr:`tail_reserve_tokens` is valid,
        and each request sizes the reserve to its tail (:meth:`sized`).
        """
        if not self.working_memory:
            return 0
        return min(self.tail_reserve_tokens, self.budget - 1)

    @property
    def refold_after(self) -> int:
        """Tokens of new work between two requested folds (``refold_min_new_tokens``)."""
        if self.refold_min_new_tokens is not None:
            return self.refold_min_new_tokens
        return int(self.fold_budget * (1 - TAIL_SHARE))

    @property
    def fold_budget(self) -> int:
        """The fold's (and window's) budget: ``max_tokens`` less the tail's reserve."""
        return self.budget - self.reserve

    @property
    def fold_policy(self) -> FoldPolicy:
        """The fold's numbers under this policy (its budget is :attr:`fold_budget`)."""
        return _fold_policy(self)


@functools.lru_cache(maxsize=64)
def _fold_policy(policy: MemoryPolicy) -> FoldPolicy:
    # Built (and validated) once per distinct request policy: the policy is frozen, and a
    # request's differs from the configured one only when a fraction is resolved or the
    # calibration scales it.
    return FoldPolicy(
        max_tokens=policy.fold_budget,
        max_messages=auto_ceiling(policy.max_messages, policy.budget),
        tail_tokens=policy.tail_tokens,
        min_tail_messages=policy.min_tail_messages,
        max_tail_messages=policy.max_tail_messages,
        timeout=policy.timeout,
        backoff_tokens=policy.backoff_tokens,
        clear_at_least=policy.clear_at_least,
        restore_tokens=policy.restore_tokens,
        clear_tool_results=policy.clear_tool_results,
        clear_edit_inputs=policy.clear_edit_inputs,
    )


@functools.lru_cache(maxsize=256)
def _scaled(policy: MemoryPolicy, factor: float, ceiling: int | None) -> MemoryPolicy:
    # Every request scales the policy (the calibration's margin or ratio, the learned
    # ceiling), and building one validates every number: the same inputs, turn after
    # turn, get the same frozen policy back.
    return policy._scaled_now(factor, ceiling)
