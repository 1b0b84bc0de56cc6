"""The drop-oldest window: what of a long run the model is shown when nothing is folded.

A run's transcript grows without bound; the request sent to the model must not. The
window keeps the NEWEST messages inside a message-count ceiling and a token budget,
dropping the oldest in CHUNKS with hysteresis, anchored on a user turn.

Why chunks: dropping exactly to the limit slid the front by a message or two on every
turn, so the request's prefix changed every turn and no provider prefix cache could hit
past the system prompt. The cut points here are fixed positions counted from the
transcript's own start, so the front stays put while new messages arrive and jumps a
whole chunk (a quarter of the window) when it moves.

Why a user turn first: a window starting on an assistant tool-call turn, or on a tool
result whose call fell off the front, is invalid for strict providers (Gemini rejects a
conversation that does not begin with a user turn: ``400 INVALID_ARGUMENT`` after a long
tool loop crossed the window boundary). The most recent user turn is never lost:
when a tool loop under one directive outgrows the window, the cut passes it at a whole
tool unit and the directive is restated (a stamped copy) in front of what is kept, and a
single message bigger than the room left is cut in the view (head and end kept, see
:mod:`~langchain_builderforce_memory.transcript.elide`). The view is never over budget;
only a budget that cannot hold the system messages plus one short human message raises.

Leading system messages are the fixed prefix: kept in front, never dropped, and counted
against ``max_tokens`` (the budget is the whole request's), but not against
``max_messages`` (the seed's message window counts the conversation).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from langchain_core.messages import BaseMessage, MessageLikeRepresentation

from langchain_builderforce_memory.copies import Copies
from langchain_builderforce_memory.directive import latest_directive_index, restated_directive
from langchain_builderforce_memory.facts import RecordFacts, counter_of, prefix_sums
from langchain_builderforce_memory.messages import as_messages, role_of
from langchain_builderforce_memory.native import fixed_prefix_count, scope_to_compaction
from langchain_builderforce_memory.tokens import TokenCounter, TokenCounterLike
from langchain_builderforce_memory.transcript.elide import (
    check_budget_floor,
    fit_to_budget,
    opening_size,
)
from langchain_builderforce_memory.turns import (
    current_turn_start,
    opening_span,
    thinking_restart,
    thinking_span,
)
from langchain_builderforce_memory.validity import log_repairs, repair_request, system_as_user

__all__ = [
    "AUTO_CEILING_FLOOR",
    "AUTO_TOKENS_PER_MESSAGE",
    "HISTORY_TOKEN_BUDGET",
    "HISTORY_TOKEN_DROP_CHUNK",
    "HISTORY_WINDOW",
    "HISTORY_WINDOW_DROP_CHUNK",
    "MAX_REQUEST_MESSAGES",
    "MAX_VIEW_MESSAGES",
    "NO_MESSAGE_CEILING",
    "MessageCeiling",
    "WindowCut",
    "auto_ceiling",
    "message_ceiling",
    "message_window_start",
    "token_window_start",
    "token_window_start_from_sums",
    "validate_budget",
    "window_cut",
    "window_start",
    "window_view",
    "windowed",
]

HISTORY_WINDOW = 80
"""How many conversation messages a request may hold (the message-count ceiling)."""

HISTORY_TOKEN_BUDGET = 64_000
"""Token budget for what of the run the model can see each turn.

The seed's reason for 64k, not 24k: six 4k-token file windows filled 24k, the fold
squeezed them into a 1.2k-token note, and the model went back for the files it had just
read (55 turns, 63% of calls revisiting, zero edits). 64k holds a coding task's working
set, a dozen-plus file windows, verbatim, while a full turn stays inside the 128k window
every coding-capable model has.
"""

HISTORY_WINDOW_DROP_CHUNK = HISTORY_WINDOW // 4
"""How far the message window's front moves at a time: a quarter of the window."""

HISTORY_TOKEN_DROP_CHUNK = HISTORY_TOKEN_BUDGET // 4
"""How far (in tokens) the token window's front moves at a time: a quarter of the
budget, so a drop leaves the window at ~75% and the next waits for ~16k tokens of work."""


MAX_REQUEST_MESSAGES: Final = 2_048
"""Messages one request may hold: OpenAI's limit ("Invalid 'messages': array too long.
Expected an array with maximum length 2048"), the lowest of the providers. A chat of short
messages under ``max_messages=None`` reaches it long before any token budget does."""

MAX_VIEW_MESSAGES: Final = 2_000
"""The most conversation messages any ceiling lets a view hold: :data:`MAX_REQUEST_MESSAGES`
less room for what a view adds to them (the system messages, the volatile tail)."""

NO_MESSAGE_CEILING: Final = MAX_VIEW_MESSAGES
"""What ``max_messages=None`` (no ceiling of the caller's) is worked with: the token budget
decides, up to the most messages a request may hold."""

MessageCeiling: TypeAlias = "int | Literal['auto'] | None"
"""What ``max_messages=`` takes: a count, ``"auto"`` (see :func:`auto_ceiling`) or ``None``."""

AUTO_CEILING_FLOOR: Final = 128
"""The fewest messages ``max_messages="auto"`` allows a view, whatever the budget."""

AUTO_TOKENS_PER_MESSAGE: Final = 500
"""``max_messages="auto"`` is one message per this many budget tokens, past its floor."""


def auto_ceiling(max_messages: MessageCeiling, max_tokens: int) -> int | None:
    """``max_messages`` as a count or ``None``: ``"auto"`` is ``max(128, max_tokens // 500)``.

    At most :data:`MAX_VIEW_MESSAGES`, which binds past a 1M budget.

    The seed's 80 binds long before the token budget when messages are small (real
    agents' tool calls, a chat), and each time it binds the fold calls the summarizer.
    With no ceiling, the front of the request moves whenever the token budget cuts it,
    and the fold waits until the view fills the budget, every request re-reading it at a
    tenth. 128 messages up to a 64k budget, one per 500 tokens beyond, was the ceiling no
    other candidate beat on both cost and working set over the recorded runs and the
    scripted workloads (``benchmarks/defaults_grid.md``).

    Example:
        >>> auto_ceiling("auto", 8_000), auto_ceiling("auto", 200_000), auto_ceiling(50, 32_000)
        (128, 400, 50)
    """
    if max_messages == "auto":
        return min(
            MAX_VIEW_MESSAGES, max(AUTO_CEILING_FLOOR, max_tokens // AUTO_TOKENS_PER_MESSAGE)
        )
    return max_messages


def validate_budget(*, max_messages: MessageCeiling, max_tokens: int) -> None:
    """Raise a ``ValueError`` naming the bad policy number and the fix."""
    if (
        max_messages is not None
        and max_messages != "auto"
        and (
            isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 1
        )
    ):
        msg = (
            f"max_messages must be a positive int, 'auto' (one message per "
            f"{AUTO_TOKENS_PER_MESSAGE} budget tokens, at least {AUTO_CEILING_FLOOR}), or None for "
            f"no message ceiling; got {max_messages!r}."
        )
        raise ValueError(msg)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        msg = (
            f"max_tokens must be a positive int (default {HISTORY_TOKEN_BUDGET}); "
            f"got {max_tokens!r}."
        )
        raise ValueError(msg)


def message_ceiling(max_messages: int | None) -> int:
    """``max_messages`` as the number the window works with, at most :data:`MAX_VIEW_MESSAGES`.

    ``None`` (no ceiling of the caller's) and any larger count are that: a view of more
    messages than a request may hold is refused, however few tokens it costs.

    Example:
        >>> message_ceiling(80), message_ceiling(None), message_ceiling(5_000)
        (80, 2000, 2000)
    """
    return MAX_VIEW_MESSAGES if max_messages is None else min(max_messages, MAX_VIEW_MESSAGES)


def message_window_start(length: int, *, max_messages: int = HISTORY_WINDOW) -> int:
    """Where the message-count window begins.

    0 while ``length`` fits ``max_messages``, else the first multiple of the drop chunk
    (a quarter of ``max_messages``) that brings it back under. Cut points are fixed
    positions, so the front stays put while messages arrive.

    Example:
        >>> message_window_start(80), message_window_start(81), message_window_start(100)
        (0, 20, 20)
    """
    if length <= max_messages:
        return 0
    chunk = max(1, max_messages // 4)
    return math.ceil((length - max_messages) / chunk) * chunk


def token_window_start(sizes: Sequence[int], *, budget: int) -> int:
    """Where the token window begins, given each message's token count.

    0 while the total fits ``budget``, else the first cut point that brings it back
    under. A cut point is the message after which the running total from the
    transcript's start crosses a multiple of the drop chunk (a quarter of ``budget``), so
    a cut point never moves as the transcript grows at the end.

    Example:
        >>> token_window_start([10] * 10, budget=100)
        0
        >>> token_window_start([10] * 11, budget=100)  # chunk 25: cuts after 30, 60, ...
        3
    """
    remaining = sum(sizes)
    if remaining <= budget:
        return 0
    chunk = max(1, budget // 4)
    dropped = 0
    next_cut = chunk
    for i, size in enumerate(sizes):
        dropped += size
        remaining -= size
        if dropped < next_cut:
            continue
        next_cut = (dropped // chunk + 1) * chunk
        if remaining <= budget:
            return i + 1
    return len(sizes)


def token_window_start_from_sums(sums: Sequence[int], *, budget: int) -> int:
    """:func:`token_window_start` from running totals, by binary search.

    ``sums[i]`` is the tokens of the first ``i`` messages; two bisections replace the
    walk over the transcript.

    The first index whose drop leaves ``remaining <= budget`` is found by bisection; the
    seed's answer is the first chunk crossing at or after it, which is again a bisection
    for the next multiple of the chunk above the running total there.
    """
    total = sums[-1]
    if total <= budget:
        return 0
    chunk = max(1, budget // 4)
    n = len(sums) - 1
    # First message i whose drop leaves the rest within budget: sums[i + 1] >= total - budget.
    first_fit = bisect.bisect_left(sums, total - budget, lo=1) - 1
    if first_fit >= n:
        return n
    target = (sums[first_fit] // chunk + 1) * chunk
    j = bisect.bisect_left(sums, target, lo=first_fit + 1)
    return min(j, n)


def window_start(
    convo: Sequence[BaseMessage],
    *,
    max_messages: int = HISTORY_WINDOW,
    max_tokens: int = HISTORY_TOKEN_BUDGET,
    token_counter: TokenCounter,
    facts: RecordFacts | None = None,
) -> int:
    """Index in ``convo`` (no leading system messages) where the window begins.

    The seed's rule: the later of the message and token cut points, capped at the latest
    user turn, then walked forward to a user turn. With no user turn at all: everything
    when it fits the budget, else only the last message. ``facts``: ``convo``'s, synced.
    """
    sums, last_user = _sums_and_directive(convo, token_counter, facts)
    if last_user < 0:
        return 0 if sums[-1] <= max_tokens else max(0, len(convo) - 1)
    start = max(
        message_window_start(len(convo), max_messages=max_messages),
        token_window_start_from_sums(sums, budget=max_tokens),
    )
    start = min(start, last_user)
    while role_of(convo[start]) != "user":
        start += 1
    return start


def _sums_and_directive(
    convo: Sequence[BaseMessage], counter: TokenCounter, facts: RecordFacts | None
) -> tuple[Sequence[int], int]:
    if facts is None:
        return prefix_sums(convo, counter), latest_directive_index(convo)
    return facts.sums, facts.latest_directive_index()


def windowed(
    messages: Sequence[MessageLikeRepresentation],
    *,
    max_messages: MessageCeiling = HISTORY_WINDOW,
    max_tokens: int = HISTORY_TOKEN_BUDGET,
    token_counter: TokenCounterLike = None,
    facts: RecordFacts | None = None,
) -> list[BaseMessage]:
    """The newest part of ``messages`` that fits the message window and token budget.

    Leading system messages stay in front; the conversation after them is cut at fixed
    chunk points (see the module docstring) and anchored on a user turn; when the cut must
    pass the latest user turn it is restated in front, and what is still too big is cut
    in the view (never over ``max_tokens``). A record that is itself invalid (an orphan
    tool result, a call never answered, a system message mid-conversation) yields a
    repaired view that passes
    :func:`~langchain_builderforce_memory.validity.request_problems`, the repair logged.

    The caller's list and messages are never changed.

    Args:
        messages: The full record, oldest first (messages, or the tuples and dicts
            ``convert_to_messages`` takes).
        max_messages: Conversation messages the view may hold (system messages excluded);
            ``"auto"``: see :func:`auto_ceiling`; ``None``: no message ceiling, the token
            budget decides. At most :data:`MAX_VIEW_MESSAGES` whatever is given.
        max_tokens: Tokens the view may hold, leading system messages included.
        token_counter: How to count (default: the seed's approximate estimate, or the
            counter of ``facts``).
        facts: This conversation's :class:`~langchain_builderforce_memory.facts.
            RecordFacts`, kept by the caller from turn to turn: a turn then costs its new
            messages, however long the record. Without it each call reads the whole
            record. The view is the same with or without.

    Returns:
        A new list: the leading system messages, then the kept suffix.

    Raises:
        ValueError: ``facts`` counts with another counter than ``token_counter``.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> convo = [HumanMessage(f"u{i}") if i % 2 == 0 else AIMessage(f"a{i}") for i in range(81)]
        >>> view = windowed(convo)
        >>> len(view), view[0].content
        (61, 'u20')
    """
    validate_budget(max_messages=max_messages, max_tokens=max_tokens)
    ceiling = auto_ceiling(max_messages, max_tokens)
    messages = scope_to_compaction(as_messages(messages, where="windowed"))
    counter = counter_of(token_counter, facts, where="windowed")
    lead = fixed_prefix_count(messages, max_tokens, counter)
    system = list(messages[:lead])
    convo = messages[lead:] if lead else messages  # never changed: no copy of a long record
    # Without the caller's facts, this call's own: the record is then read once.
    facts = facts if facts is not None else RecordFacts(counter)
    facts.sync(convo)
    system_tokens = sum(counter.count_message(m) for m in system)
    directive = facts.latest_directive_index()
    check_budget_floor(
        system_tokens,
        max_tokens,
        counter,
        where="windowed",
        opening_tokens=opening_size(convo[directive], counter) if directive >= 0 else None,
    )
    cut = window_cut(
        convo,
        max_messages=message_ceiling(ceiling),
        max_tokens=max(1, max_tokens - system_tokens),
        token_counter=counter,
        facts=facts,
    )
    shown = window_view(convo, cut, copies=facts.copies)
    restart = thinking_restart(shown)
    if restart > 0 and len(shown) >= message_ceiling(ceiling):
        # The current turn opens without thinking and a later step has it (thinking
        # turned on mid-turn): the repair would start a new turn there, one message more
        # than the window holds. Open the turn on that step instead; the steps before it
        # leave the view (they are still in the record).
        begin = current_turn_start(shown)
        shown = [*shown[: begin + 1], *shown[restart:]]
    view, repairs = facts.check.repaired([*system, *shown])
    if repairs and cut.directive < 0:
        view, repairs = _repairs_within_budget(
            system, convo, cut.start, view, repairs, max_tokens, counter
        )
    log_repairs(repairs, "windowed")
    fitted, _ = fit_to_budget(view, max_tokens, counter, where="windowed")
    return fitted


@dataclass(frozen=True, slots=True)
class WindowCut:
    """Where a window begins, and whether the directive is restated in front of it."""

    start: int
    """Index in the conversation where the verbatim part begins."""
    directive: int = -1
    """Index of the latest user turn restated (a stamped copy) before ``start``, or -1. Shown
    as itself when the running loop took it in (``span`` is then before it)."""
    span: tuple[int, int] | None = None
    """Messages kept right after the restated directive, as ``(start, end)``: the running
    turn's opening thinking step and its results (with thinking on, the tool loop must
    open with it)."""


def window_view(
    convo: Sequence[BaseMessage], cut: WindowCut, *, copies: Copies | None = None
) -> list[BaseMessage]:
    """The conversation part of a windowed view: the restated directive, then the rest.

    ``copies``: the conversation's, so the restated directive is the last turn's object.
    """
    d, span = cut.directive, cut.span
    # A user message the running loop took in, shown with the loop's step after it: itself,
    # as the window showed it before the model answered it.
    joined = span is not None and span[0] < d
    head = [convo[d] if joined else restated_directive(convo[d], copies=copies)] if d >= 0 else []
    if span is not None:
        head.extend(convo[span[0] : span[1]])
    tail = list(convo[cut.start :])
    # A cut that lands on a late system message must not promote it to the system prompt:
    # it could not be elided there, and a large one would make the view impossible.
    for i, m in enumerate(tail):
        if role_of(m) != "system":
            break
        tail[i] = system_as_user(m)
    return [*head, *tail]


def window_cut(
    convo: Sequence[BaseMessage],
    *,
    max_messages: int = HISTORY_WINDOW,
    max_tokens: int = HISTORY_TOKEN_BUDGET,
    token_counter: TokenCounter,
    facts: RecordFacts | None = None,
) -> WindowCut:
    """The window over ``convo`` (no leading system messages), past the directive if need be.

    :func:`window_start`, unless keeping everything from the latest user turn on is over
    the budget (one directive, then a long tool loop): the cut then passes the user turn,
    at a fixed chunk point moved forward to the start of a whole tool unit, and the user
    turn is restated in front (:func:`restated_directive`) instead of keeping everything.
    ``facts``: ``convo``'s, synced.
    """
    start = window_start(
        convo,
        max_messages=max_messages,
        max_tokens=max_tokens,
        token_counter=token_counter,
        facts=facts,
    )
    if not convo or role_of(convo[start]) != "user":
        return WindowCut(start)
    sums, last_user = _sums_and_directive(convo, token_counter, facts)
    while True:
        span, merged = _opening_step(convo, start, facts)
        # A merged turn's opening step is before ``start``: it adds to the view.
        extra = (span[1] - span[0], sums[span[1]] - sums[span[0]]) if merged and span else (0, 0)
        if (
            len(convo) - start + extra[0] <= max_messages
            and sums[-1] - sums[start] + extra[1] <= max_tokens
        ):
            return WindowCut(start + 1, directive=start, span=span) if merged else WindowCut(start)
        if not merged or start >= last_user:
            break
        start = last_user  # the step pushed it over: only the latest directive is cut past
    front = start + 1 if merged or span is None else span[1]
    pinned = span[1] - span[0] if span is not None else 0
    raw = max(
        front,
        message_window_start(len(convo), max_messages=max(1, max_messages - 1 - pinned)),
        token_window_start_from_sums(
            sums, budget=max(1, max_tokens - (sums[front] - sums[start]) - extra[1])
        ),
    )
    # A unit starts at every message that is no tool result: found by walking from the
    # cut, not by splitting the whole turn (a long single-directive loop is all one turn).
    later = _unit_start(convo, raw, step=1, stop=len(convo))
    if later >= 0:
        return WindowCut(later, directive=start, span=span)
    newest = _unit_start(convo, len(convo) - 1, step=-1, stop=front - 1)
    if newest >= 0:  # even the newest unit alone is over: keep it, and let elision cut it
        return WindowCut(newest, directive=start, span=span)
    return WindowCut(start)


def _opening_step(
    convo: Sequence[BaseMessage], start: int, facts: RecordFacts | None
) -> tuple[tuple[int, int] | None, bool]:
    """The opening thinking step a window from the user message at ``start`` keeps with it.

    With thinking on, the running tool loop must open with its thinking step. It is the
    turn at ``start``'s own, right after it (when that step thinks), or, when ``start``
    came in while the running loop ran (right after a tool result, see
    :func:`~langchain_builderforce_memory.turns.opens_turn_at`), that loop's step before
    it (``merged``: the view puts it after that message), also before the model has
    answered (so the front does not move when it does).
    """
    span = opening_span(convo, start)
    if span is not None and span[0] == start + 1:
        return span, False
    running = facts.thinking if facts is not None else thinking_span(convo)
    if running is not None and running[1] <= start:
        return running, True
    return None, False


def _unit_start(convo: Sequence[BaseMessage], i: int, *, step: int, stop: int) -> int:
    """The first index from ``i`` (walking by ``step``, before ``stop``) that starts a unit."""
    while i != stop and role_of(convo[i]) == "tool":
        i += step
    return i if i != stop else -1


def _repairs_within_budget(
    system: list[BaseMessage],
    convo: Sequence[BaseMessage],
    start: int,
    view: list[BaseMessage],
    repairs: list[str],
    max_tokens: int,
    counter: TokenCounter,
) -> tuple[list[BaseMessage], list[str]]:
    """A repaired view within ``max_tokens``, its repair additions counted.

    Placeholder results and an inserted user turn cost tokens too: when they do not fit,
    the window starts at a later user turn, up to the latest directive (never dropped).

    Raises:
        ValueError: there is no conversation to drop and the system messages with the
            placeholder user turn a request needs are over ``max_tokens``.
    """
    directive = latest_directive_index(convo)
    while sum(counter.count_message(m) for m in view) > max_tokens:
        later = next(
            (i for i in range(start + 1, max(directive, 0) + 1) if role_of(convo[i]) == "user"),
            -1,
        )
        if later < 0:
            break
        start = later
        view, repairs = repair_request([*system, *convo[start:]])
    total = sum(counter.count_message(m) for m in view)
    if total > max_tokens and start >= len(convo):
        msg = (
            f"max_tokens={max_tokens} cannot hold the system messages and the placeholder "
            f"user turn a request needs ({total} tokens): raise max_tokens to at least "
            f"{total}, or shorten the system prompt."
        )
        raise ValueError(msg)
    return view, repairs
