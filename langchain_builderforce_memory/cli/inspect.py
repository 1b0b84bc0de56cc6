"""``bfmem inspect``: what the window, the fold and the hand-off packer would send.

Given a saved transcript (see :mod:`~langchain_builderforce_memory.cli.load`), it shows,
message by message, what each of the three views does with it (kept, dropped, folded
into the note, or re-injected as the active directive), then what each view costs in
total, and any problem a strict provider would reject in the input itself.

The fold is shown WITHOUT a summarizer: nothing is called. The fold's own planner
(:func:`~langchain_builderforce_memory.transcript.fold_plan.plan_working_transcript`) says
where it would cut, and its own assembler
(:func:`~langchain_builderforce_memory.transcript.fold.fold_turn`) makes the
view a run would send: cleared, files re-attached, elided to the budget. The note, not yet
written, is a stand-in as long as the room the fold keeps for it.
The hand-off view packs without a summarizer too, so its note is the elision marker.

Everything here is pure data (:func:`inspect_messages` returns an
:class:`InspectReport`); the renderers in :mod:`~langchain_builderforce_memory.cli.render`
only print it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from langchain_core.messages import BaseMessage

from langchain_builderforce_memory.blocks import is_tool_result_turn, result_messages, valid_calls
from langchain_builderforce_memory.errors import ContextBudgetError
from langchain_builderforce_memory.handoff import pack_handoff
from langchain_builderforce_memory.handoff.budget import (
    DEFAULT_RESERVE_FRACTION_DIVISOR,
    handoff_budget,
)
from langchain_builderforce_memory.messages import DIRECTIVE_KIND, message_id, role_of, stamp_of
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
    fold_turn,
    verbatim_start,
)
from langchain_builderforce_memory.transcript.fold_plan import plan_working_transcript
from langchain_builderforce_memory.transcript.results import CLEARED_KIND
from langchain_builderforce_memory.transcript.view import RESTORED_KIND
from langchain_builderforce_memory.transcript.window import (
    HISTORY_TOKEN_BUDGET,
    MessageCeiling,
    auto_ceiling,
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

Fate = Literal["kept", "dropped", "folded", "re-injected", "cleared", "elided"]
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
    """``kept`` verbatim, ``folded`` into the note, ``re-injected`` (the active
    directive: covered by the note AND repeated before the tail), ``cleared`` (a
    placeholder, or a call with its long values cut), ``elided`` (sent, its text cut to
    fit), or ``dropped``."""
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
    # An Anthropic-native turn of results shows its outputs; its calls, their names.
    answers = result_messages(message) if is_tool_result_turn(message) else []
    body = " ".join(a.text for a in answers) if answers else message.text
    text = " ".join(body.split()) if message.content else ""
    names = [name for name, _ in valid_calls(message).values()]
    if names:
        text = f"[calls {', '.join(names)}] {text}".strip()
    return text if len(text) <= _PREVIEW_CHARS else text[: _PREVIEW_CHARS - 1] + "…"


def _role(message: BaseMessage) -> str:
    try:
        return role_of(message)
    except (ValueError, TypeError):
        return "?"


_STAND_IN_SUMMARY: Final = ("(the note the summarizer would write) " * 4_096).rstrip()
"""The fold's note in a report: capped, as every note is, to the room the fold keeps for
it, so the view is counted and elided as it would be with the longest note allowed."""


def _stand_in_summarizer(_prompt: Sequence[BaseMessage]) -> str:
    """The summarizer of a report: no model is called."""
    return _STAND_IN_SUMMARY


def _fold_plan(
    valid: Sequence[BaseMessage],
    *,
    policy: FoldPolicy,
    counter: TokenCounter,
) -> tuple[dict[int, Fate], list[BaseMessage], str]:
    """What the fold would send for ``valid`` (a repaired record), without calling anything.

    The fold's own planner and assembler make the view, with a stand-in note as long as
    the fold allows: the cut, the clear tier, the re-attached files and the elision shown
    are the ones a run would make; nothing is summarized.

    Returns:
        The fate of each message (by identity), the messages sent, and a sentence.
    """
    plan = plan_working_transcript(valid, policy=policy, token_counter=counter, can_summarize=True)
    turn = fold_turn(plan, _stand_in_summarizer)
    view = list(turn.messages)
    folded = verbatim_start(plan.convo, plan.fold_to) if plan.mode == "fold" else 0
    fates = _fold_fates(plan.system, plan.convo, view, folded)
    if plan.mode == "fold":
        lead = len(plan.system)
        restored = f"; re-attaches {len(plan.restore)} file output(s)" if plan.restore else ""
        again = [lead + i for i, m in enumerate(plan.convo) if fates[id(m)] == "re-injected"]
        detail = (
            f"would fold messages {lead}..{lead + folded - 1} into one note (a stand-in "
            f"as long as the fold allows){restored}"
            + "".join(f"; re-injects the directive, message {i}" for i in again)
        )
    elif plan.mode == "verbatim":
        cleared = turn.steps.cleared_messages
        detail = (
            f"clears {cleared} stale tool result(s) ({turn.steps.cleared_tokens:,} tokens) "
            "into placeholders: no fold"
            if cleared
            else "fits verbatim: no fold"
        )
    else:
        detail = "nothing to fold past the minimum tail: the window is used"
    return fates, view, detail


_STANDS_FOR: Final[dict[object, Fate]] = {
    CLEARED_KIND: "cleared",
    DIRECTIVE_KIND: "re-injected",
    None: "elided",
}
"""A record message's fate, by the kind of the copy the fold shows of it (an elided copy:
by the kind it had before it was cut, ``None`` for the record message itself)."""


def _fold_fates(
    system: Sequence[BaseMessage],
    convo: Sequence[BaseMessage],
    view: Sequence[BaseMessage],
    folded: int,
) -> dict[int, Fate]:
    """Each message's fate in the fold's ``view``; ``convo[:folded]`` is in the note.

    A message the view shows as a copy (a placeholder, a call with its values cut, an
    elided text, the restated directive) is found by the ``of`` its copy is stamped with.
    """
    sent = {id(m) for m in view}
    stands_for: dict[str, Fate] = {}
    for m in view:
        stamp = stamp_of(m) or {}
        of, kind = stamp.get("of"), stamp.get("kind")
        # An elided copy names what it cut: a record message (no "was"), or a stand-in.
        fate = _STANDS_FOR.get(stamp.get("was") if kind == ELIDED_KIND else kind)
        if isinstance(of, str) and fate is not None:
            stands_for[of] = fate
    fates: dict[int, Fate] = {id(m): "kept" for m in system if id(m) in sent}
    for i, m in enumerate(convo):
        if id(m) in sent:
            fates[id(m)] = "kept"
        elif i < folded:
            # Only the directive is shown again from the folded part: a copy of the tail's
            # that shares this message's id (the same text, neither with an id of its own)
            # stands for the tail's message, not this one.
            fate = stands_for.get(message_id(m))
            fates[id(m)] = "re-injected" if fate == "re-injected" else "folded"
        else:
            fates[id(m)] = stands_for.get(message_id(m), "dropped")
    return fates


def _summary(
    view: str,
    record: Sequence[BaseMessage],
    sent: Sequence[BaseMessage],
    *,
    fates: dict[int, Fate],
    budget: int,
    counter: TokenCounter,
    detail: str,
) -> ViewSummary:
    """A view's totals."""
    kept = sum(1 for m in record if fates.get(id(m)) in ("kept", "re-injected"))
    tokens = count_tokens(sent, counter)
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
        messages=len(sent),
        tokens=tokens,
        kept=kept,
        not_sent=len(record) - kept,
        generated=len(sent) - kept,
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
    max_messages: MessageCeiling = "auto",
    tail_tokens: int | None = None,
    target_model_tokens: int = DEFAULT_TARGET_MODEL_TOKENS,
    reserve_output_tokens: int | None = None,
    token_counter: TokenCounterLike = None,
    source: str = "<messages>",
    clear_tool_results: bool = True,
    clear_edit_inputs: bool = True,
) -> InspectReport:
    """What the window, the fold (planned) and the hand-off packer would send.

    Args:
        messages: The record, oldest first (never changed).
        budget: The view's token budget (window and fold ``max_tokens``).
        max_messages: The view's message ceiling, as the adapters take it: a count,
            ``"auto"`` (their default) or ``None``.
        tail_tokens: Tokens the fold keeps verbatim at most (default 1,000; the fold also
            caps it at the seed's 40/64 share of what the budget leaves).
        target_model_tokens: The hand-off target's context window.
        reserve_output_tokens: Held back for its reply (default a quarter of the window).
        token_counter: How to count (default: the approximate estimate).
        source: A label for the report (the file name).
        clear_tool_results: Plan the fold with the clear tier (stale tool results shown
            as placeholders), as a run does.
        clear_edit_inputs: When the clear tier clears an edit, cut its call's long values
            (a whole file written, a patch), as a run does by default.

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
    ceiling = auto_ceiling(max_messages, budget)
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
        clear_edit_inputs=clear_edit_inputs,
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
        "max_messages": "none" if ceiling is None else ceiling,
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
    fates, sent, detail = _fold_plan(valid, policy=policy, counter=counter)
    summary = _summary(
        "fold",
        record,
        sent,
        fates=fates,
        budget=policy.max_tokens,
        counter=counter,
        detail=detail,
    )
    return summary, fates


def _handoff_column(
    record: Sequence[BaseMessage], target: int, reserve: int, counter: TokenCounter
) -> tuple[ViewSummary, dict[int, Fate]]:
    """The hand-off column: ``record`` packed for a ``target``-token model.

    A target too small for the system prompt is a column that does not fit, saying why:
    the window and the fold still have their report.
    """
    try:
        pack = pack_handoff(
            record,
            target_context_tokens=target,
            reserve_output_tokens=reserve,
            token_counter=counter,
        )
    except ContextBudgetError as exc:
        fates: dict[int, Fate] = {id(m): "dropped" for m in record}
        budget = handoff_budget(target, reserve)
        unsent = ViewSummary("handoff", 0, 0, 0, len(record), 0, budget, False, str(exc))
        return unsent, fates
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
