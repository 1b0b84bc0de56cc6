"""``bfmem inspect``: what the window, the fold and the hand-off packer would send.

Given a saved transcript (see :mod:`~langchain_builderforce_memory.cli.load`), it shows,
message by message, what each of the three views does with it (kept, dropped, folded
into the note, or re-injected as the active directive), then what each view costs in
total, and any problem a strict provider would reject in the input itself.

The fold is shown WITHOUT a summarizer: nothing is called. The fold's own planner
(:func:`~langchain_builderforce_memory.transcript.fold_plan.plan_working_transcript`, which
sizes the tail with ``compact_tail_start_for_budget``) says where it would cut and what
stays verbatim after the note; the note, not yet written, is counted at the room the fold
reserves for it (:func:`~langchain_builderforce_memory.transcript.plan.note_reserve`).
The hand-off view packs without a summarizer too, so its note is the elision marker.

Everything here is pure data (:func:`inspect_messages` returns an
:class:`InspectReport`); the renderers in :mod:`~langchain_builderforce_memory.cli.render`
only print it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from langchain_core.messages import BaseMessage

from langchain_builderforce_memory.handoff import pack_handoff
from langchain_builderforce_memory.handoff.budget import (
    DEFAULT_RESERVE_FRACTION_DIVISOR,
    handoff_budget,
)
from langchain_builderforce_memory.messages import (
    role_of,
    stamp_of,
)
from langchain_builderforce_memory.native import last_compaction_index, scope_to_compaction
from langchain_builderforce_memory.tokens import (
    TokenCounter,
    TokenCounterLike,
    count_tokens,
    resolve_token_counter,
)
from langchain_builderforce_memory.transcript.elide import ELIDED_KIND
from langchain_builderforce_memory.transcript.fold import (
    COMPACT_TAIL_TOKEN_BUDGET,
    FoldPolicy,
    pinned_directive_index,
    verbatim_start,
)
from langchain_builderforce_memory.transcript.fold_plan import plan_working_transcript
from langchain_builderforce_memory.transcript.plan import note_reserve
from langchain_builderforce_memory.transcript.results import CLEARED_KIND
from langchain_builderforce_memory.transcript.view import (
    RESTORED_KIND,
    restored_message,
    with_clear,
)
from langchain_builderforce_memory.transcript.window import (
    HISTORY_TOKEN_BUDGET,
    HISTORY_WINDOW,
    validate_budget,
    windowed,
)
from langchain_builderforce_memory.validity import repair_request, request_problems

__all__ = [
    "DEFAULT_TARGET_MODEL_TOKENS",
    "Fate",
    "InspectReport",
    "MessageRow",
    "ViewSummary",
    "inspect_messages",
]

Fate = Literal["kept", "dropped", "folded", "re-injected", "cleared"]
"""What a view does with one record message."""

DEFAULT_TARGET_MODEL_TOKENS = 8_192
"""The hand-off target when none is given: an 8k model, the smallest window still common
among tool-calling models, so the packer has something to do on most real runs."""

_PREVIEW_CHARS = 60


@dataclass(frozen=True, slots=True)
class MessageRow:
    """One record message and what each view does with it."""

    index: int
    """Position in the file (0-based, as in ``request_problems``)."""
    role: str
    """``system`` / ``user`` / ``assistant`` / ``tool``."""
    tokens: int
    """Its cost under the report's token counter."""
    window: Fate
    """``kept`` or ``dropped`` by the window."""
    fold: Fate
    """``kept`` verbatim, ``folded`` into the note, or ``re-injected`` (the active
    directive: covered by the note AND repeated verbatim before the tail)."""
    handoff: Fate
    """``kept`` or ``dropped`` (into the hand-off note) by the packer."""
    preview: str
    """The start of its text (tool calls named), one line."""


@dataclass(frozen=True, slots=True)
class ViewSummary:
    """One view's totals."""

    view: str
    """``window``, ``fold`` or ``handoff``."""
    messages: int
    """Messages sent, generated ones included."""
    tokens: int
    """Tokens sent (for the fold without a summarizer: with the note at its ceiling)."""
    kept: int
    """Record messages sent verbatim."""
    not_sent: int
    """Record messages dropped, or folded into the note."""
    generated: int
    """Messages the view adds: a note, a repair placeholder."""
    budget: int
    """What the view must fit."""
    fits: bool
    """``tokens <= budget``."""
    detail: str
    """One sentence on what the view did."""
    cleared: int = 0
    """Tokens of tool output the view shows as placeholders (the clear tier)."""
    restored: int = 0
    """Tokens of file outputs re-attached after the fold's note."""
    elided: int = 0
    """Tokens cut from messages too big for the room left."""


@dataclass(frozen=True, slots=True)
class InspectReport:
    """Everything ``bfmem inspect`` shows, as data (``--format json`` prints it)."""

    source: str
    """The file (or a label)."""
    record_messages: int
    """Messages in the input."""
    record_tokens: int
    """What sending the whole input would cost."""
    problems: list[str]
    """``request_problems`` of the input: what a strict provider would reject in it."""
    rows: list[MessageRow]
    """Per message, in order."""
    views: list[ViewSummary]
    """Window, fold, hand-off."""
    settings: dict[str, int | str] = field(default_factory=dict)
    """The budgets used."""


def _preview(message: BaseMessage) -> str:
    text = " ".join(message.text.split()) if message.content else ""
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        text = f"[calls {', '.join(str(c['name']) for c in calls)}] {text}".strip()
    return text if len(text) <= _PREVIEW_CHARS else text[: _PREVIEW_CHARS - 1] + "…"


def _role(message: BaseMessage) -> str:
    try:
        return role_of(message)
    except (ValueError, TypeError):
        return "?"


def _fold_plan(
    valid: Sequence[BaseMessage],
    *,
    policy: FoldPolicy,
    counter: TokenCounter,
) -> tuple[dict[int, Fate], list[BaseMessage], int, str]:
    """Where the fold would cut ``valid`` (a repaired record), without calling anything.

    Asks the fold's own planner (:func:`plan_working_transcript`, told a summarizer is
    there), so the cut shown is the one a run would make; nothing is summarized.

    Returns:
        The fate of each message (by identity), the messages sent besides the note, the
        note's reserved tokens (0 without a fold), and a sentence.
    """
    plan = plan_working_transcript(valid, policy=policy, token_counter=counter, can_summarize=True)
    fates: dict[int, Fate] = {id(m): "kept" for m in valid}
    if plan.mode == "verbatim":
        if not plan.clear.cleared:
            return fates, list(valid), 0, "fits verbatim: no fold"
        shown = with_clear(plan.convo, plan.clear)
        sent = [*plan.system, *shown]
        for original, copy in zip(plan.convo, shown, strict=True):
            if copy is not original:  # a placeholder, or an edit's call with its values cut
                fates[id(original)] = "cleared"
        return (
            fates,
            sent,
            0,
            f"clears {len(plan.clear.cleared)} stale tool result(s) ({plan.clear.saving:,} "
            "tokens) into placeholders: no fold",
        )
    convo = plan.convo
    if plan.mode != "fold":
        # Nothing the minimum tail leaves to fold: the fold falls back to the window.
        view = windowed(
            valid,
            max_messages=policy.max_messages,
            max_tokens=policy.max_tokens,
            token_counter=counter,
        )
        kept = {id(m) for m in view}
        fates = {id(m): ("kept" if id(m) in kept else "dropped") for m in valid}
        return fates, view, 0, "nothing to fold past the minimum tail: the window is used"
    cut = plan.fold_to
    tail_start = verbatim_start(convo, cut)
    directive = pinned_directive_index(convo, tail_start)
    for i, m in enumerate(convo[:tail_start]):
        fates[id(m)] = "re-injected" if i == directive else "folded"
    restored = [restored_message(convo[r.index], r) for r in plan.restore]
    sent = [
        *plan.system,
        *restored,
        *([convo[directive]] if directive >= 0 else []),
        *convo[tail_start:],
    ]
    lead = len(plan.system)
    reserve = note_reserve(counter, cut)
    detail = (
        f"would fold messages {lead}..{lead + tail_start - 1} into one note (counted at its "
        f"{reserve:,}-token reserve)"
        + (f"; re-attaches {len(restored)} file output(s)" if restored else "")
        + (f"; re-injects the directive, message {lead + directive}" if directive >= 0 else "")
    )
    return fates, sent, reserve, detail


def _summary(
    view: str,
    record: Sequence[BaseMessage],
    sent: Sequence[BaseMessage],
    *,
    fates: dict[int, Fate],
    extra: tuple[int, int] = (0, 0),
    budget: int,
    counter: TokenCounter,
    detail: str,
) -> ViewSummary:
    """A view's totals; ``extra`` is (messages, tokens) sent beyond ``sent`` (a note)."""
    kept = sum(1 for m in record if fates.get(id(m)) in ("kept", "re-injected"))
    tokens = count_tokens(sent, counter) + extra[1]
    cleared = restored = elided = 0
    for m in sent:
        stamp = stamp_of(m) or {}
        kind = stamp.get("kind")
        if kind == CLEARED_KIND and isinstance(stamp.get("tokens"), int):
            cleared += int(stamp["tokens"])  # type: ignore[call-overload]
        elif kind == RESTORED_KIND:
            restored += counter.count_message(m)
        elif kind == ELIDED_KIND and isinstance(stamp.get("cut_tokens"), int):
            elided += int(stamp["cut_tokens"])  # type: ignore[call-overload]
    return ViewSummary(
        view=view,
        messages=len(sent) + extra[0],
        tokens=tokens,
        kept=kept,
        not_sent=len(record) - kept,
        generated=len(sent) + extra[0] - kept,
        budget=budget,
        fits=tokens <= budget,
        detail=detail,
        cleared=cleared,
        restored=restored,
        elided=elided,
    )


def _sent_fates(record: Sequence[BaseMessage], sent: Sequence[BaseMessage]) -> dict[int, Fate]:
    sent_ids = {id(m) for m in sent}
    return {id(m): ("kept" if id(m) in sent_ids else "dropped") for m in record}


def inspect_messages(
    messages: Sequence[BaseMessage],
    *,
    budget: int = HISTORY_TOKEN_BUDGET,
    max_messages: int = HISTORY_WINDOW,
    tail_tokens: int | None = None,
    target_model_tokens: int = DEFAULT_TARGET_MODEL_TOKENS,
    reserve_output_tokens: int | None = None,
    token_counter: TokenCounterLike = None,
    source: str = "<messages>",
    clear_tool_results: bool = True,
) -> InspectReport:
    """What the window, the fold (planned) and the hand-off packer would send.

    Args:
        messages: The record, oldest first (never changed).
        budget: The view's token budget (window and fold ``max_tokens``).
        max_messages: The window's message ceiling.
        tail_tokens: Tokens the fold keeps verbatim at most (default 40,000; the fold also
            caps it at the seed's 40/64 share of what the budget leaves).
        target_model_tokens: The hand-off target's context window.
        reserve_output_tokens: Held back for its reply (default a quarter of the window).
        token_counter: How to count (default: the approximate estimate).
        source: A label for the report (the file name).
        clear_tool_results: Plan the fold with the clear tier (stale tool results shown
            as placeholders), as a run does.

    Returns:
        The :class:`InspectReport`.

    Raises:
        ValueError: a bad budget, naming it.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> report = inspect_messages([HumanMessage("hi"), AIMessage("hello")])
        >>> [(r.role, r.window, r.fold, r.handoff) for r in report.rows]
        [('user', 'kept', 'kept', 'kept'), ('assistant', 'kept', 'kept', 'kept')]
    """
    validate_budget(max_messages=max_messages, max_tokens=budget)
    tail = COMPACT_TAIL_TOKEN_BUDGET if tail_tokens is None else tail_tokens
    reserve = (
        target_model_tokens // DEFAULT_RESERVE_FRACTION_DIVISOR
        if reserve_output_tokens is None
        else reserve_output_tokens
    )
    target_budget = handoff_budget(target_model_tokens, reserve)
    counter = resolve_token_counter(token_counter)
    record = list(messages)
    problems = request_problems(record)
    # Every view repairs an invalid record first; the fold plan is made over that same
    # repaired list, so a message the repair dropped reads as dropped in every column.
    valid, repairs = repair_request(record)
    # A provider's compaction: billed from it, every view starts at it (the provider
    # ignores what precedes it), so the fold plans over the record from it on.
    block = last_compaction_index(valid)
    valid = list(scope_to_compaction(valid, last=block))

    window_view = windowed(
        record, max_messages=max_messages, max_tokens=budget, token_counter=counter
    )
    window_fates = _sent_fates(record, window_view)
    fold_policy = FoldPolicy(
        max_tokens=budget,
        max_messages=max_messages,
        tail_tokens=tail,
        clear_tool_results=clear_tool_results,
    )
    fold_view, fold_fates = _fold_column(record, valid, fold_policy, counter)
    handoff_view, handoff_fates = _handoff_column(record, target_model_tokens, reserve, counter)
    views = [
        _window_summary(record, window_view, window_fates, budget, counter),
        fold_view,
        handoff_view,
    ]
    settings: dict[str, int | str] = {
        "budget": budget,
        "max_messages": max_messages,
        "tail_tokens": tail,
        "target_model_tokens": target_model_tokens,
        "reserve_output_tokens": reserve,
        "handoff_budget": target_budget,
        "token_counter": type(counter).__name__,
    }
    if repairs:
        settings["repairs"] = "; ".join(repairs)
    if block >= 0:
        settings["provider_compaction"] = (
            f"a provider compaction block at message {block}: the views start at it"
        )
    return InspectReport(
        source=source,
        record_messages=len(record),
        record_tokens=count_tokens(record, counter),
        problems=problems,
        rows=_rows(record, counter, window_fates, fold_fates, handoff_fates),
        views=views,
        settings=settings,
    )


def _window_summary(
    record: Sequence[BaseMessage],
    view: Sequence[BaseMessage],
    fates: dict[int, Fate],
    budget: int,
    counter: TokenCounter,
) -> ViewSummary:
    """The window column's totals: what it keeps, or how many of the oldest it drops."""
    kept = sum(1 for f in fates.values() if f == "kept")
    detail = (
        "keeps everything"
        if kept == len(record)
        else f"drops the oldest {len(record) - kept} (in chunks)"
    )
    return _summary(
        "window", record, view, fates=fates, budget=budget, counter=counter, detail=detail
    )


def _fold_column(
    record: Sequence[BaseMessage],
    valid: Sequence[BaseMessage],
    policy: FoldPolicy,
    counter: TokenCounter,
) -> tuple[ViewSummary, dict[int, Fate]]:
    """The fold column, planned over the repaired record ``valid``."""
    fates, sent, note_tokens, detail = _fold_plan(valid, policy=policy, counter=counter)
    summary = _summary(
        "fold",
        record,
        sent,
        fates=fates,
        extra=(1, note_tokens) if note_tokens else (0, 0),
        budget=policy.max_tokens,
        counter=counter,
        detail=detail,
    )
    return summary, fates


def _handoff_column(
    record: Sequence[BaseMessage], target: int, reserve: int, counter: TokenCounter
) -> tuple[ViewSummary, dict[int, Fate]]:
    """The hand-off column: ``record`` packed for a ``target``-token model."""
    pack = pack_handoff(
        record, target_context_tokens=target, reserve_output_tokens=reserve, token_counter=counter
    )
    fates = _sent_fates(record, pack.messages)
    fit = "fits" if pack.fits else "the system prompt + directive alone do not fit"
    dropped = f"; {pack.dropped} message(s) behind one note" if pack.dropped else ""
    summary = _summary(
        "handoff",
        record,
        pack.messages,
        fates=fates,
        budget=handoff_budget(target, reserve),
        counter=counter,
        detail=f"{reserve:,} reserved for the reply; {fit}{dropped}",
    )
    return summary, fates


def _rows(
    record: Sequence[BaseMessage],
    counter: TokenCounter,
    window: dict[int, Fate],
    fold: dict[int, Fate],
    handoff: dict[int, Fate],
) -> list[MessageRow]:
    """One row per record message: its fate in each view (by the message's ``id()``)."""
    return [
        MessageRow(
            index=i,
            role=_role(m),
            tokens=counter.count_message(m),
            window=window[id(m)],
            fold=fold.get(id(m), "dropped"),  # not in the repaired list: dropped
            handoff=handoff[id(m)],
            preview=_preview(m),
        )
        for i, m in enumerate(record)
    ]
