"""``pack_handoff``: fit a transcript into the NEXT model's window (seed ``packHandoff``).

When a run moves to another model (a fallback after an error, a router choosing a
cheaper model, a sub-agent), that model's window may be much smaller, and resending the
same request (what ``ModelFallbackMiddleware`` does) gets it rejected. The packed request:

    leading system message(s) · ONE note for the dropped middle · the latest directive
    re-injected verbatim (only when it fell in the middle) · the verbatim tail ·
    the volatile tail, last

- Only the LEADING run of system messages is the fixed prefix. A system message later in
  the conversation is never hoisted to the front, where it would read as if it governed
  the whole conversation. (Strict providers reject it mid-conversation, so the input is
  first made valid with :func:`~langchain_builderforce_memory.validity.repair_request`,
  which turns it into a stamped ``[system]`` user message in place; that message then
  stays where it was, or falls in the dropped middle.)
- The tail is the longest run of whole tool-call units (:func:`tool_call_units`) from the
  end that fits what is left after the prefix, the directive, the pins and room for the
  elision marker: never a tool result without its call, nor a call without its results.
  A newest unit after the directive that is over that room by itself is kept and cut in
  the view instead, when it fits cut to its smallest (the note then gets a quarter of the
  room): it is the work on the request, and a next model shown the request without it
  would make the same calls again.
- Whatever room the tail leaves is the note's (:mod:`.note`): summary, else recall, else
  the elision marker. The note is a stamped human message, so the view opens with a user
  turn for strict providers.
- The result never exceeds the budget unless the prefix + the latest directive alone do;
  then it is exactly those two, and ``fits`` is False.

Why this is not the fold (``transcript/fold.py``): the packer is stateless and gives the
verbatim tail priority, handing the note whatever room the tail leaves; the fold keeps an
incremental memo across turns and caps its tail so the note has headroom.

Planning is pure (:func:`plan_handoff`), the note step is the only part that differs
between :func:`pack_handoff` and :func:`apack_handoff`, and assembly is pure again.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import replace

from langchain_core.messages import MessageLikeRepresentation

from langchain_builderforce_memory.handoff.budget import handoff_budget
from langchain_builderforce_memory.handoff.note import (
    Recall,
    abuild_note,
    build_note,
    handoff_line,
)
from langchain_builderforce_memory.handoff.plan import (
    HandoffPack,
    HandoffPlan,
    assemble_handoff,
    latest_directive_index,
    plan_handoff,
)
from langchain_builderforce_memory.messages import as_messages, check_sound
from langchain_builderforce_memory.tokens import (
    TokenCounter,
    TokenCounterLike,
    resolve_token_counter,
)
from langchain_builderforce_memory.transcript.summary import (
    DEFAULT_SUMMARIZER_TIMEOUT,
    Summarizer,
    SummarizerLike,
    resolve_summarizer,
)
from langchain_builderforce_memory.validity import log_repairs, repair_request

__all__ = [
    "HandoffPack",
    "HandoffPlan",
    "apack_handoff",
    "assemble_handoff",
    "latest_directive_index",
    "pack_handoff",
    "plan_handoff",
]


def _check_timeout(timeout: float | None) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        msg = f"timeout: expected None or a number of seconds > 0, got {timeout!r}."
        raise ValueError(msg)
    return float(timeout)


def _check_pins(pinned_ids: Iterable[str]) -> frozenset[str]:
    if isinstance(pinned_ids, str):
        msg = (
            f"pinned_ids: expected a collection of message ids, got the string "
            f"{pinned_ids!r}; pass pinned_ids=({pinned_ids!r},)."
        )
        raise TypeError(msg)
    ids = list(pinned_ids) if isinstance(pinned_ids, Iterable) else None
    if ids is None or not all(isinstance(i, str) for i in ids):
        msg = f"pinned_ids: expected a collection of message ids (str), got {pinned_ids!r}."
        raise TypeError(msg)
    return frozenset(ids)


def _summarizer_argument(
    summarizer: SummarizerLike | None, summarize: SummarizerLike | None, *, where: str
) -> Summarizer | None:
    """``summarizer``, or the deprecated ``summarize`` (warned about), resolved."""
    if summarize is None:
        return resolve_summarizer(summarizer)
    if summarizer is not None:
        msg = f"{where}: pass summarizer= only (summarize= is its deprecated spelling)."
        raise TypeError(msg)
    warnings.warn(
        f"{where}(summarize=...) is deprecated and will be removed in 0.3; use "
        "summarizer=..., as everywhere else in langchain-builderforce-memory.",
        DeprecationWarning,
        stacklevel=3,  # the caller of pack_handoff / apack_handoff
    )
    return resolve_summarizer(summarize)


def _prepare(
    messages: Sequence[MessageLikeRepresentation],
    *,
    target_context_tokens: int,
    reserve_output_tokens: int,
    tools_tokens: int,
    from_model: str | None,
    to_model: str | None,
    timeout: float | None,
    pinned_ids: Iterable[str],
    token_counter: TokenCounterLike,
    where: str,
) -> tuple[HandoffPlan, TokenCounter, float | None]:
    """Validate the arguments, make the request valid, and plan (shared by both twins)."""
    budget = handoff_budget(target_context_tokens, reserve_output_tokens, tools_tokens)
    seconds = _check_timeout(timeout)
    pins = _check_pins(pinned_ids)
    counter = resolve_token_counter(token_counter)
    # Recorded transcripts can be invalid (a run that ended on an unanswered call, an
    # orphaned result): the packed view must not be, so repair first and say what changed.
    record = as_messages(messages, where=where)
    for message in record:  # a hand-off reads the whole record anyway
        check_sound(message)
    valid, repairs = repair_request(record)
    log_repairs(repairs, where)
    plan = plan_handoff(
        valid,
        budget=budget,
        counter=counter,
        header=handoff_line(from_model, to_model),
        pinned_ids=pins,
    )
    named = (
        f"the hand-off budget ({budget} tokens: target_context_tokens="
        f"{target_context_tokens} less reserve_output_tokens={reserve_output_tokens} and "
        f"tools_tokens={tools_tokens})"
    )
    return replace(plan, budget_name=named), counter, seconds


def pack_handoff(
    messages: Sequence[MessageLikeRepresentation],
    *,
    target_context_tokens: int,
    reserve_output_tokens: int,
    tools_tokens: int = 0,
    from_model: str | None = None,
    to_model: str | None = None,
    summarizer: SummarizerLike | None = None,
    recall: Recall | None = None,
    timeout: float | None = DEFAULT_SUMMARIZER_TIMEOUT,
    pinned_ids: Iterable[str] = (),
    token_counter: TokenCounterLike = None,
    summarize: SummarizerLike | None = None,
) -> HandoffPack:
    """Fit ``messages`` into the next model's window (see the module docstring).

    Args:
        messages: The transcript (never mutated; kept messages are the same objects);
            tuples and dicts are taken as ``convert_to_messages`` takes them.
        target_context_tokens: The next model's context window, in tokens.
        reserve_output_tokens: Tokens held back for its reply.
        tools_tokens: Tokens its tool schemas cost (see :func:`~.budget.tools_tokens`).
        from_model: The model handing over, named in the note's header.
        to_model: The model taking over, named in the note's header.
        summarizer: Summarizes the dropped middle: a chat model, a ``"provider:model"``
            string or a function (see
            :data:`~langchain_builderforce_memory.transcript.summary.Summarizer`).
        recall: ``recall(query, budget_chars)``: a memory block for the latest directive,
            used when there is no summary.
        timeout: Seconds each of ``summarizer`` / ``recall`` may take; one that outlives it
            counts as a failure and the next note source is used. No ceiling when None.
        pinned_ids: Ids (``message.id``, or
            :func:`~langchain_builderforce_memory.messages.message_id` for messages
            without one) of messages to keep verbatim in place when they
            fit, ahead of older tail units; each keeps its whole tool-call unit.
        token_counter: What budgets are counted with (default: the approximate estimate).
        summarize: Deprecated spelling of ``summarizer`` (a ``DeprecationWarning``; removed
            in 0.3).

    Returns:
        The :class:`HandoffPack`.

    Raises:
        TypeError: an async ``summarizer`` / ``recall`` (use :func:`apack_handoff`),
            ``pinned_ids`` given as one string, or both ``summarizer`` and ``summarize``.
        ValueError: a bad budget number or timeout, naming it.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
        >>> history = [SystemMessage("be brief"), HumanMessage("fix the bug")]
        >>> history += [AIMessage("x" * 400), HumanMessage("y" * 400)] * 5
        >>> pack = pack_handoff(history, target_context_tokens=400, reserve_output_tokens=100,
        ...                     from_model="big", to_model="small")
        >>> pack.fits, pack.estimated_tokens <= 300, pack.messages[-1] is history[-1]
        (True, True, True)
    """
    chosen = _summarizer_argument(summarizer, summarize, where="pack_handoff")
    for name, fn in (("summarizer", chosen), ("recall", recall)):
        if fn is not None and inspect.iscoroutinefunction(fn):
            msg = f"{name}: an async function was given to pack_handoff; use apack_handoff."
            raise TypeError(msg)
    plan, counter, seconds = _prepare(
        messages,
        target_context_tokens=target_context_tokens,
        reserve_output_tokens=reserve_output_tokens,
        tools_tokens=tools_tokens,
        from_model=from_model,
        to_model=to_model,
        timeout=timeout,
        pinned_ids=pinned_ids,
        token_counter=token_counter,
        where="pack_handoff",
    )
    note = (
        build_note(plan.note, counter, summarize=chosen, recall=recall, timeout=seconds)
        if plan.note is not None
        else None
    )
    return assemble_handoff(plan, note, counter)


async def apack_handoff(
    messages: Sequence[MessageLikeRepresentation],
    *,
    target_context_tokens: int,
    reserve_output_tokens: int,
    tools_tokens: int = 0,
    from_model: str | None = None,
    to_model: str | None = None,
    summarizer: SummarizerLike | None = None,
    recall: Recall | None = None,
    timeout: float | None = DEFAULT_SUMMARIZER_TIMEOUT,
    pinned_ids: Iterable[str] = (),
    token_counter: TokenCounterLike = None,
    summarize: SummarizerLike | None = None,
) -> HandoffPack:
    """Async twin of :func:`pack_handoff`: ``summarizer`` / ``recall`` may be async.

    Sync functions given here run in a worker thread, so they never block the event loop.

    Example:
        >>> import asyncio
        >>> from langchain_core.messages import HumanMessage
        >>> pack = asyncio.run(apack_handoff([HumanMessage("hi")], target_context_tokens=100,
        ...                                  reserve_output_tokens=10))
        >>> pack.fits
        True
    """
    chosen = _summarizer_argument(summarizer, summarize, where="apack_handoff")
    plan, counter, seconds = _prepare(
        messages,
        target_context_tokens=target_context_tokens,
        reserve_output_tokens=reserve_output_tokens,
        tools_tokens=tools_tokens,
        from_model=from_model,
        to_model=to_model,
        timeout=timeout,
        pinned_ids=pinned_ids,
        token_counter=token_counter,
        where="apack_handoff",
    )
    note = (
        await abuild_note(plan.note, counter, summarize=chosen, recall=recall, timeout=seconds)
        if plan.note is not None
        else None
    )
    return assemble_handoff(plan, note, counter)
