"""The one view policy: window -> clear -> fold (then restore) -> elide.

Every entry point (``windowed``, ``build_working_transcript``, ``pack_handoff``, the
middleware, the node, the chat history) builds its view through these steps, each taken
only when the one before it does not fit:

1. the WINDOW (no summarizer) or the VERBATIM record / the held note's tail (with one);
2. the CLEAR tier (:mod:`.clear`): stale tool results become placeholders, in batches;
3. the FOLD (:mod:`.fold`): the older part becomes one note, and the latest output of the
   files the run is working on is RE-ATTACHED verbatim after it (:func:`restore_plan`);
4. ELISION (:mod:`.elide`): whatever is still too big is cut in the view, head and end
   kept, so no view is ever over its budget.

This module holds the pieces the fold's planner and the assembler share: what a view
did (:class:`ViewSteps`), the protected recent tail, the clear step over a conversation
range, the restore choice and the re-attached messages, and the closing :func:`fit_view`.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from langchain_core.messages import BaseMessage, HumanMessage

from langchain_builderforce_memory.blocks import result_messages
from langchain_builderforce_memory.copies import Copies, copy_of
from langchain_builderforce_memory.events import ViewStepsFields
from langchain_builderforce_memory.messages import leading_system_count, message_id, role_of, stamp
from langchain_builderforce_memory.tokens import (
    CallableTokenCounter,
    TokenCounter,
    TokenCounterLike,
    resolve_token_counter,
)
from langchain_builderforce_memory.transcript.clear import (
    apply_clear,
    changed_after_read,
    clearable,
    clearing_with_priority,
    count_before,
    memo_over,
    priority_clearing,
    remember_over,
    results_before,
    working_set,
)
from langchain_builderforce_memory.transcript.elide import Elision, elide_message, fit_to_budget
from langchain_builderforce_memory.transcript.horizon import (
    ClearHorizon,
    choose_horizon,
    held_horizon,
    horizon_of,
    priority_end_for,
)
from langchain_builderforce_memory.transcript.memo import CompactMemo
from langchain_builderforce_memory.transcript.results import ToolResult
from langchain_builderforce_memory.transcript.window import (
    HISTORY_TOKEN_BUDGET,
    HISTORY_WINDOW,
    message_ceiling,
    window_start,
)

__all__ = [
    "CLEARED_EXCERPT_TOKENS",
    "PROTECTED_RESULTS",
    "RESTORED_KIND",
    "ClearStep",
    "ViewSteps",
    "clear_range",
    "fit_view",
    "furthest_clear",
    "protected_start",
    "restore_plan",
    "restored_message",
    "restored_messages",
    "restored_of",
    "still_in_working_context",
    "summary_shown",
    "with_clear",
]

RESTORED_KIND: Final = "restored"
"""The stamp ``kind`` of a file output re-attached after a fold's note."""

PROTECTED_RESULTS: Final = 1
"""The newest tool units the clear tier never touches: the results the model has not
answered yet. One, from the benchmark (``benchmarks/contenders.py``, standard workload):
protecting the newest three results (what ``ContextEditingMiddleware`` keeps) left up to
60k tokens of 20k-token results unclearable, so the fold ran 61 times instead of 11."""


CLEARED_EXCERPT_TOKENS: Final = 80
"""A cleared result as a fold's summarizer reads it: its head and end in this many tokens
(:func:`summary_shown`), enough for a test run's verdict, a search's first matches or a
file's opening lines, at a small share of the result."""


@dataclass(frozen=True, slots=True)
class ViewSteps:
    """What the view policy did this turn, beyond the window / fold mode.

    Example:
        >>> ViewSteps().as_event()
        {'cleared_messages': 0, 'cleared_tokens': 0, 'restored': [], 'restored_tokens': 0, \
'elided_messages': 0, 'elided_tokens': 0}
    """

    cleared_messages: int = 0
    """Tool results shown as placeholders."""
    cleared_tokens: int = 0
    """Tokens of output those placeholders stand for."""
    restored: tuple[str, ...] = field(default_factory=tuple)
    """Files whose latest output was re-attached after the note."""
    restored_tokens: int = 0
    """Tokens of the re-attached outputs."""
    elided_messages: int = 0
    """Messages cut (head and end kept) to fit."""
    elided_tokens: int = 0
    """Tokens those cuts removed."""
    dropped_messages: int = 0
    """Messages left out because even cut to their minimum they did not fit."""

    def as_event(self) -> ViewStepsFields:
        """The numbers as a stream event's / log line's fields."""
        return ViewStepsFields(
            cleared_messages=self.cleared_messages,
            cleared_tokens=self.cleared_tokens,
            restored=list(self.restored),
            restored_tokens=self.restored_tokens,
            elided_messages=self.elided_messages,
            elided_tokens=self.elided_tokens,
        )

    @property
    def acted(self) -> bool:
        """True when the view was cleared, restored or elided."""
        return bool(self.cleared_messages or self.restored or self.elided_messages)


def protected_start(results: Sequence[ToolResult], length: int) -> int:
    """Where the protected recent tail begins: at the call of the newest results.

    The clear tier never touches a result at or after it. Walked back to the assistant
    turn that made the calls (the result's index less its place in the unit is not known
    here, so the tail simply starts at the oldest protected result: its siblings and call
    come before it and stay clearable only if older than it).
    """
    if not results:
        return length
    # Walk back over the newest units' results (parallel calls answer side by side).
    k = len(results) - 1
    units = 1
    while k > 0:
        if results[k - 1].index != results[k].index - 1:
            if units >= PROTECTED_RESULTS:
                break
            units += 1
        k -= 1
    return results[k].index


@dataclass(frozen=True, slots=True)
class ClearStep:
    """The clear tier's choice for one view: a horizon and what it clears."""

    horizon: int = 0
    """Every clearable result before it is cleared (0: nothing)."""
    cleared: tuple[ToolResult, ...] = ()
    """The results it clears."""
    held: ClearHorizon | None = None
    """The horizon to carry to the next turn (``None``: nothing to hold)."""

    @property
    def saving(self) -> int:
        """Tokens the placeholders stand for (outputs, and edits' call values)."""
        # An output replaced by its placeholder counts whole; an edit's call, its values.
        return sum(
            (r.size if r.size > r.placeholder_size else 0) + r.call_saving for r in self.cleared
        )


def clear_range(
    results: Sequence[ToolResult],
    *,
    start: int,
    length: int,
    need: int,
    keep_tokens: int,
    land_below: int = 0,
    held: ClearHorizon | None = None,
    enabled: bool = True,
    fresh: bool = False,
) -> ClearStep | None:
    """The clear step that saves ``need`` tokens in ``convo[start:]``, or ``None``.

    ``held`` (last turn's horizon) is kept while it still saves ``need``: the view's prefix
    does not move. Otherwise the horizon moves once, so the view lands ``land_below`` under
    the budget where it can. With nothing held (a caller that carries no state), the
    horizon is the nearest fixed cut point, every ``land_below`` tokens of tool output,
    that saves ``need`` (see :func:`~.horizon.choose_horizon`). ``None`` when even the
    furthest horizon does not save enough (the fold must run).

    A move is a prefix-cache miss from the horizon on anyway, so it also clears the
    superseded, search / list / shell and failed results after the new horizon, up to the
    protected tail (:func:`~.clear.priority_clearing`); that end is carried with the
    horizon (``ClearHorizon.priority_end``), so the set holds with it. When nothing is
    needed (``need <= 0``) only the held priority results are cleared, or, right after a
    fold (``fresh``), the new tail's (see :func:`_priority_only`).
    """
    if not enabled:
        return ClearStep(held=held) if need <= 0 else None
    protect = protected_start(results, length)
    if need <= 0:
        return _priority_only(
            results, start=start, protect=protect, land_below=land_below, held=held, fresh=fresh
        )
    found = held_horizon(
        results, held, start=start, protect_from=protect, need=need, keep_tokens=keep_tokens
    )
    if found is None:
        # A move: a prefix-cache miss from the horizon on anyway, so the superseded,
        # search / list / shell and failed results up to the protected tail go too.
        chunk = None if held is not None else max(1, land_below)
        priority_end = priority_end_for(results, start=start, protect_from=protect, chunk=chunk)
        horizon = choose_horizon(
            results,
            start=start,
            protect_from=protect,
            need=need,
            keep_tokens=keep_tokens,
            land_below=land_below,
            chunk=chunk,
            priority_end=priority_end,
        )
        if horizon is None:
            return None
    else:
        horizon, priority_end = found
    cleared = clearing_with_priority(results, start, horizon, priority_end, keep_tokens)[0]
    return ClearStep(horizon, cleared, horizon_of(results, horizon, priority_end))


def _priority_only(
    results: Sequence[ToolResult],
    *,
    start: int,
    protect: int,
    land_below: int,
    held: ClearHorizon | None,
    fresh: bool,
) -> ClearStep:
    """The clear step of a view that fits: the priority results only, where they are held.

    Right after a fold (``fresh``: the front moved anyway) the superseded, search / list /
    shell and failed results of the verbatim tail are cleared up to the protected tail,
    and that end is carried (a horizon with ``end=0``), so the next turns keep the same
    prefix. The horizon held before the fold is dropped then: keeping one that still lay
    in the new tail made the first move after the fold land just under the budget instead
    of ``land_below`` under (``bfmem demo --turns 300``: 3.20M effective billed instead of
    3.02M). A held horizon's priority end is kept; with nothing held, the stateless rule
    (:func:`~.horizon.priority_end_for`) keeps the view a pure function of the record.
    """
    if held is not None and not fresh:
        found = held_horizon(
            results, held, start=start, protect_from=protect, need=0, keep_tokens=0
        )
        priority_end = found[1] if found is not None else 0
        carried: ClearHorizon | None = held
    else:
        chunk = None if held is not None else max(1, land_below)
        priority_end = priority_end_for(results, start=start, protect_from=protect, chunk=chunk)
        carried = horizon_of(results, 0, priority_end) or held
    if priority_end <= start:
        return ClearStep(held=carried)
    return ClearStep(0, priority_clearing(results, start, priority_end), carried)


def furthest_clear(
    results: Sequence[ToolResult], *, start: int, end: int, keep_tokens: int
) -> ClearStep:
    """Everything clearable in ``convo[start:end]`` (what a fold's summarizer is shown)."""
    cleared = clearable(results, start=start, horizon=end, keep_tokens=keep_tokens)
    return ClearStep(end, tuple(cleared))


def with_clear(
    convo: Sequence[BaseMessage], step: ClearStep, copies: Copies | None = None
) -> list[BaseMessage]:
    """``convo`` with ``step``'s results shown as placeholders.

    ``copies``: the conversation's, where an edit's cut call is kept from turn to turn.
    """
    return apply_clear(convo, step.cleared, copies)[0] if step.cleared else list(convo)


def summary_shown(
    convo: Sequence[BaseMessage], step: ClearStep, counter: TokenCounter
) -> list[BaseMessage]:
    r"""``convo`` as a fold's summarizer is shown it: ``step``'s results cut to head and end.

    The model read each of them whole before the clear tier took it out of the view, and
    the note is all that stays of it after the fold: shown only its size, a summarizer
    could not say what a test run reported or what a search found. Each is cut to
    :data:`CLEARED_EXCERPT_TOKENS` instead (:func:`~.elide.elide_message`: its head, the
    tokens cut, its end), and its call stays whole (the rendering cuts each argument).

    Example:
        >>> from langchain_core.messages import AIMessage, ToolMessage
        >>> from langchain_builderforce_memory.tokens import resolve_token_counter
        >>> from langchain_builderforce_memory.transcript.results import tool_results
        >>> call = AIMessage("", tool_calls=[{"name": "bash", "args": {}, "id": "c1"}])
        >>> out = "collected 9 items\n" + "." * 4_000 + "\n1 failed, 8 passed"
        >>> convo = [HumanMessage("run the tests"), call, ToolMessage(out, tool_call_id="c1")]
        >>> counter = resolve_token_counter(None)
        >>> step = ClearStep(cleared=tuple(tool_results(convo, counter)))
        >>> shown = summary_shown(convo, step, counter)[2].text
        >>> shown.startswith("collected 9 items"), shown.endswith("1 failed, 8 passed")
        (True, True)
    """
    if isinstance(counter, CallableTokenCounter) and counter.asks_provider:
        # An excerpt's length is a shape, not a budget, and each cut asks four or five
        # counts: a provider's count is a request (a fold asked a hundred), so estimate.
        counter = resolve_token_counter(None)
    out = list(convo)
    for r in step.cleared:
        out[r.index] = elide_message(out[r.index], CLEARED_EXCERPT_TOKENS, counter)
    return out


def restore_plan(
    results: Sequence[ToolResult], *, covered_end: int, room: int, max_count: int | None = None
) -> list[ToolResult]:
    """The file outputs to re-attach after a note covering ``convo[:covered_end]``.

    The latest read of each in-use file (the most recently touched first), within
    ``room`` tokens and at most ``max_count`` of them, skipping every file touched again
    in the verbatim tail (its newer state is there). The count matters
    as much as the tokens: each file is a message of the view, and 40 small reads
    re-attached under a 40-message window refold on every turn.
    """
    in_tail = {r.target for r in results if r.index >= covered_end and r.target is not None}
    folded = [r for r in results if r.index < covered_end]
    chosen = working_set([r for r in folded if r.target not in in_tail], room)
    return sorted(chosen[:max_count], key=lambda r: r.index)


def restored_message(
    message: BaseMessage,
    result: ToolResult,
    *,
    changed: bool = False,
    copies: Copies | None = None,
) -> HumanMessage:
    r"""A re-attached file output: a stamped human message after the note.

    A human message, not a replayed tool call: the call it answered is inside the note,
    and a result without its call is invalid for strict providers. ``changed``: a later
    call changed the file, which the head says, so the output is not taken for the
    file's current text.

    Example:
        >>> from langchain_core.messages import ToolMessage
        >>> r = ToolResult(7, "read_file", '{"path": "a.py"}', 9, "read", "a.py")
        >>> restored_message(ToolMessage("print(1)", tool_call_id="c1"), r).content
        '[re-attached: the latest output of read_file({"path": "a.py"}), verbatim]\nprint(1)'
        >>> changed = restored_message(ToolMessage("print(1)", tool_call_id="c1"), r, changed=True)
        >>> changed.text.splitlines()[0][-26:]
        'a.py was changed after it]'
    """
    since = f"; {result.target} was changed after it" if changed and result.target else ""
    head = f"[re-attached: the latest output of {result.name}({result.args}), verbatim{since}]"
    return copy_of(
        copies,
        ("restored", id(message), result.name, result.args, result.target, bool(since)),
        (message, message.content),
        lambda: stamp(
            HumanMessage(f"{head}\n{_output_text(message)}"),
            RESTORED_KIND,
            of=message_id(message),
            file=result.target,
        ),
    )


def _output_text(message: BaseMessage) -> str:
    """A result's output: a ``ToolMessage``'s text, or an Anthropic-native turn's answers'."""
    return "\n".join(answer.text for answer in result_messages(message))


def restored_messages(
    convo: Sequence[BaseMessage],
    memo: CompactMemo,
    results: Sequence[ToolResult],
    *,
    copies: Copies | None = None,
) -> tuple[list[ToolResult], list[HumanMessage]]:
    """The results ``memo`` re-attaches (:func:`restored_of`) and their messages.

    A read whose file a call the note covers changed says so in its head. With the
    conversation's ``copies`` a file re-attached turn after turn is one object, whose
    count stays cached.
    """
    restored = restored_of(convo, memo, results)
    changed = _changed_of(results, memo, restored) if restored else frozenset()
    shown = [
        restored_message(convo[r.index], r, changed=r.index in changed, copies=copies)
        for r in restored
    ]
    return restored, shown


def _changed_of(
    results: Sequence[ToolResult], memo: CompactMemo, restored: Sequence[ToolResult]
) -> frozenset[int]:
    """:func:`.clear.changed_after_read` of ``restored``, kept while ``memo`` is held."""
    count = count_before(results, memo.covered_end)
    key = ("changed", tuple(r.index for r in restored))
    hit = memo_over(results, count, key)
    if isinstance(hit, frozenset):
        return hit
    changed = frozenset(changed_after_read(results, restored, count=count))
    remember_over(results, count, key, changed)
    return changed


def restored_of(
    convo: Sequence[BaseMessage], memo: CompactMemo, results: Sequence[ToolResult]
) -> list[ToolResult]:
    """The results ``memo`` re-attaches, found again by id among what it covers."""
    if not memo.restored:
        return []
    count = count_before(results, memo.covered_end)
    key = ("restored", memo.restored)
    hit = memo_over(results, count, key)
    if isinstance(hit, tuple):  # asked every turn the note is held: the same answer
        return list(hit)
    before = results_before(results, memo.covered_end)
    wanted = set(memo.restored)
    # A result's own message_id is message_id(convo[r.index]) (tool_results sets it).
    found = tuple(r for r in before if (r.message_id or message_id(convo[r.index])) in wanted)
    if all(map(_OWN_ID, before)):  # else the answer depends on convo too: not kept
        remember_over(results, count, key, found)
    return list(found)


_OWN_ID: Final = operator.attrgetter("message_id")


def fit_view(
    view: Sequence[BaseMessage], budget: int, counter: TokenCounter, *, where: str
) -> tuple[list[BaseMessage], Elision]:
    """The closing step: ``view`` within ``budget`` (see :func:`.elide.fit_to_budget`)."""
    return fit_to_budget(view, budget, counter, where=where)


def still_in_working_context(
    messages: Sequence[BaseMessage],
    anchor: BaseMessage,
    *,
    covered_end: int | None = None,
    max_messages: int | None = HISTORY_WINDOW,
    max_tokens: int = HISTORY_TOKEN_BUDGET,
    token_counter: TokenCounterLike = None,
) -> bool:
    """Is ``anchor`` (a message of ``messages``, by identity) still what the model sees?

    False once a fold has covered it (pass the memo's ``covered_end``, an index into the
    conversation after the leading system messages) or the window has let it fall off
    the front. Deliberately conservative: it judges against the CURRENT record, which has
    grown since the last view was built, so it can only call a message gone a turn early;
    a needless replay costs tokens, a stub for a vanished result costs the run.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> first = HumanMessage("task")
        >>> still_in_working_context([first], first)
        True
    """
    idx = next((i for i, m in enumerate(messages) if m is anchor), -1)
    if idx < 0:
        return False
    lead = leading_system_count(messages)
    if idx < lead:
        return True
    convo = messages[lead:]
    if covered_end is not None:
        start = max(0, min(covered_end, len(convo)))
        while start < len(convo) and role_of(convo[start]) == "tool":
            start += 1
        return idx - lead >= start
    counter = resolve_token_counter(token_counter)
    system_tokens = sum(counter.count_message(m) for m in messages[:lead])
    start = window_start(
        convo,
        max_messages=message_ceiling(max_messages),
        max_tokens=max(1, max_tokens - system_tokens),
        token_counter=counter,
    )
    return idx - lead >= start
