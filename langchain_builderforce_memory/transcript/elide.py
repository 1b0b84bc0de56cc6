"""Elision: the last step of the view policy, so that no view is ever over its budget.

The window, the clear tier and the fold keep a view in bounds as long as single messages
are small. One 120k-token tool result, or a minimum verbatim tail of four 20k-token file
reads, is bigger than any room a 64k budget leaves, and a request over the provider's
window is refused outright. Such a message is cut IN THE VIEW ONLY: the head and the end
of its text are kept (a file's imports and its last lines, a log's first error and its
summary), with a stamped marker in between saying how many tokens were cut (not that the
text is "in the record": the model cannot read the record). A call whose arguments are
what is big (the whole file a ``Write`` created, a patch) has its long values cut the same
way (:mod:`.call_args`). The record is never touched.

:func:`fit_to_budget` is the step every entry point ends with, and it leaves no more media
in the view than a request may hold (:mod:`~langchain_builderforce_memory.media_limit`).
It caps the largest messages at one common size (water-filling: a message under the cap
is never cut, every message over it is cut to it), keeping the latest directive whole
while anything else can give. Only when even every message at its smallest does not fit
are whole tool units dropped, oldest first (never the directive, never the newest unit
while anything older can go); when that leaves out work done on the latest request, a
stamped notice after the request says how much, so that the model does not make the
same calls again blind. Only a budget that cannot hold the system messages plus one
short human message is an error: :func:`check_budget_floor` raises it, naming the numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_builderforce_memory.blocks import (
    block_dicts,
    cuttable_text,
    has_structure,
    with_cut_text,
)
from langchain_builderforce_memory.directive import latest_directive_index
from langchain_builderforce_memory.errors import ContextBudgetError
from langchain_builderforce_memory.media import (
    media_dropped,
    media_kinds,
    media_label,
    media_phrase,
    media_tokens,
)
from langchain_builderforce_memory.media_limit import within_media_limit
from langchain_builderforce_memory.messages import (
    message_id,
    stamp,
    stamp_of,
)
from langchain_builderforce_memory.native import fixed_prefix_count
from langchain_builderforce_memory.outputs import is_whole_output
from langchain_builderforce_memory.tokens import TokenCounter, content_text_for_count
from langchain_builderforce_memory.transcript.call_args import SHORT, longest_value, with_cut_args
from langchain_builderforce_memory.transcript.drops import (
    LEFT_OUT_KIND,
    kept,
    left_out,
    left_out_notice,
    live,
)
from langchain_builderforce_memory.turns import has_thinking
from langchain_builderforce_memory.validity import as_sent_opening, log_repairs, repair_request

__all__ = [
    "ELIDED_KIND",
    "LEFT_OUT_KIND",
    "Elision",
    "check_budget_floor",
    "cut_floor",
    "elide_message",
    "fit_to_budget",
    "minimal_human_tokens",
    "opening_size",
    "opening_tokens",
]

ELIDED_KIND: Final = "elided"
"""The stamp ``kind`` of a message cut in the view (see :func:`elide_message`)."""

_HEAD_SHARE: Final = 0.6
"""Of what a cut message keeps, the share given to its head (the rest to its end)."""


@dataclass(frozen=True, slots=True)
class Elision:
    """What :func:`fit_to_budget` did to a view (all zero when it already fit)."""

    elided_messages: int = 0
    """Messages cut (head and end kept) in the view."""
    elided_tokens: int = 0
    """Tokens those cuts removed."""
    dropped_messages: int = 0
    """Messages left out because even cut to their minimum they did not fit."""


def _marker(cut: int, dropped: Sequence[str] = ()) -> str:
    # It names no "record" (the model cannot read one), but it names the images and files
    # cut: a screenshot tool's answer cut to its caption otherwise reads as if there were none.
    among = f", {media_phrase(dropped)} among them" if dropped else ""
    return f"\n[... {cut} tokens cut here in this view{among} ...]\n"


_MIN_MARKER: Final = "[cut in this view]"
"""What a message cut to its smallest shows: no text, only this."""


def minimal_human_tokens(counter: TokenCounter) -> int:
    """Tokens of the smallest human message a view can open on (an elided directive)."""
    return counter.count_message(_MIN_MESSAGE)


_MIN_MESSAGE: Final = HumanMessage(_MIN_MARKER)
"""One object, so its count is cached (the floor is checked on every turn)."""


def check_budget_floor(
    system_tokens: int,
    budget: int,
    counter: TokenCounter,
    *,
    where: str,
    opening_tokens: int | None = None,
    budget_name: str | None = None,
) -> None:
    """Raise when ``budget`` cannot hold the system messages and one human turn.

    The human turn is the smallest one a view can open on: the latest directive as it is
    (``opening_tokens``) when that is smaller than the elision stub, else the stub.
    ``budget_name`` says what the budget is when it is no ``max_tokens`` the caller gave.

    Raises:
        ContextBudgetError: naming the budget, both sizes and the fix.

    Example:
        >>> from langchain_builderforce_memory.tokens import ApproximateTokenCounter
        >>> check_budget_floor(95, 100, ApproximateTokenCounter(), where="demo")
        Traceback (most recent call last):
        ...
        langchain_builderforce_memory.errors.ContextBudgetError: demo: max_tokens=100 cannot \
hold the system prompt (95 tokens) plus one human message (11 tokens); raise max_tokens to \
at least 106 or shorten the system prompt.
    """
    floor = minimal_human_tokens(counter)
    if opening_tokens is not None:
        floor = min(floor, opening_tokens)
    if system_tokens + floor > budget:
        name = budget_name or f"max_tokens={budget}"
        raise_name = "max_tokens" if budget_name is None else "the budget"
        msg = (
            f"{where}: {name} cannot hold the system prompt ({system_tokens} "
            f"tokens) plus one human message ({floor} tokens); raise {raise_name} to at "
            f"least {system_tokens + floor} or shorten the system prompt."
        )
        raise ContextBudgetError(msg)


def opening_tokens(convo: Sequence[BaseMessage], counter: TokenCounter) -> int | None:
    """Tokens of the human turn a view of ``convo`` opens on at the least: the directive.

    ``None`` when ``convo`` has no user turn (the floor is then the elision stub).
    """
    directive = latest_directive_index(convo)
    return opening_size(convo[directive], counter) if directive >= 0 else None


def opening_size(message: BaseMessage, counter: TokenCounter, size: int | None = None) -> int:
    """Tokens of the user turn ``message`` as a view opening on it sends it.

    ``size``: ``message``'s own count, when the caller has it. An empty turn is sent as a
    placeholder text (:func:`~langchain_builderforce_memory.validity.as_sent_opening`); a
    floor sized to the empty turn would leave the view no room for it.
    """
    sent = as_sent_opening(message)
    if sent is not message:
        return counter.count_message(sent)
    return counter.count_message(message) if size is None else size


def _text_of(message: BaseMessage) -> str:
    if has_structure(message):
        return cuttable_text(message)  # thinking, calls and results are kept whole
    text, _ = content_text_for_count(message.content)
    return text


def _with_text(
    message: BaseMessage, text: str, cut: int, media: Sequence[dict[str, object]] = ()
) -> BaseMessage:
    content: str | list[str | dict[str, object]] = text
    if has_structure(message):
        content = with_cut_text(message, text)
    elif media:
        content = [{"type": "text", "text": text}, *media]
    return _stamped(message, message.model_copy(update={"content": content}), cut)


def _media_of(message: BaseMessage) -> list[dict[str, object]]:
    """The images, files and audio of a message with no calls or results, in order."""
    if not isinstance(message.content, list) or has_structure(message):
        return []
    return [b for b in message.content if isinstance(b, dict) and media_label(b) is not None]


def _with_first_media(
    original: BaseMessage,
    message: BaseMessage,
    blocks: Sequence[dict[str, object]],
    text: str,
    max_tokens: int,
    counter: TokenCounter,
) -> BaseMessage | None:
    """``message``, its text whole, with the first media ``blocks`` that fit (else None)."""
    size = counter.count_message(message)
    kinds = media_kinds(blocks)
    widest: dict[str, object] = {"type": "text", "text": _marker(size, kinds)}  # the most

    def fits(k: int) -> bool:
        return (
            counter.count_message(_with_text(message, text, 0, [*blocks[:k], widest])) <= max_tokens
        )

    # Each block's cost once, then one check (a counter not adding blocks up: searched).
    used, hi = counter.count_message(_with_text(message, text, 0, [widest])), 0
    for block in blocks:
        used += media_tokens(block, counter.count_text) or 0
        if used > max_tokens:
            break
        hi += 1
    lo = hi if hi and fits(hi) else 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    if lo == 0:
        return None
    cut = max(0, size - counter.count_message(_with_text(message, text, 0, blocks[:lo])))
    marker: dict[str, object] = {"type": "text", "text": _marker(cut, kinds[lo:])}  # after
    return _stamped(original, _with_text(message, text, cut, [*blocks[:lo], marker]), cut)


def _stamped(message: BaseMessage, copy: BaseMessage, cut: int) -> BaseMessage:
    """``copy`` (``message`` cut) stamped ``"elided"`` with the tokens cut."""
    original = stamp_of(message)
    meta: dict[str, object] = {}
    if original is not None:
        # A cut note keeps what it covers (``covered_end``...): only its text is shorter.
        meta = {k: v for k, v in original.items() if k != "kind"}
        meta["was"] = original.get("kind")
    meta["cut_tokens"] = cut
    # A stand-in cut again (a placeholder, a restated directive) names what it stands for.
    meta.setdefault("of", message_id(message))
    return stamp(copy, ELIDED_KIND, **meta)


def elide_message(message: BaseMessage, max_tokens: int, counter: TokenCounter) -> BaseMessage:
    """``message`` cut to at most ``max_tokens`` (when its calls allow), head and end kept.

    The copy keeps the message's type, id, tool calls and ``tool_call_id`` (so it stays
    valid where the original was) and is stamped ``"elided"`` with the tokens cut. A
    message already within ``max_tokens`` comes back as is. A message of text and images
    or files keeps its whole text and the first of them that fit, when one does; else its
    blocks become their text, cut. When a call's arguments are what is big (a whole file
    written, a patch), their long values are cut the same way (:mod:`.call_args`), the text kept
    while that is enough. When even the marker alone is over ``max_tokens`` the smallest
    form is returned: the marker without any text, and call values at their markers.

    Example:
        >>> from langchain_core.messages import ToolMessage
        >>> from langchain_builderforce_memory.tokens import ApproximateTokenCounter
        >>> c = ApproximateTokenCounter()
        >>> big = ToolMessage("a" * 4_000 + "z" * 4_000, tool_call_id="c1")
        >>> small = elide_message(big, 500, c)
        >>> c.count_message(small) <= 500, small.text[:3], small.text[-3:]
        (True, 'aaa', 'zzz')
    """
    size = counter.count_message(message)
    if size <= max_tokens or is_whole_output(message):  # a screenshot, loaded tools: whole
        return message
    if isinstance(message, AIMessage) and _calls_are_big(message, max_tokens, counter):
        # The calls are what is big: their values give first, the text after.
        fitted = _cut_args_to(message, size, max_tokens, counter)
        if fitted is not None:
            return fitted
        shorter = with_cut_args(message, 0)
        cut = size - counter.count_message(shorter)
        return _cut_text(message, shorter, cut, max_tokens, counter)
    return _cut_text(message, message, 0, max_tokens, counter)


def _calls_are_big(message: AIMessage, max_tokens: int, counter: TokenCounter) -> bool:
    """True when ``message`` holds a long call value and its text alone cannot give enough."""
    return (
        longest_value(message) > SHORT
        and counter.count_message(_with_text(message, _MIN_MARKER, 0)) > max_tokens
    )


def _cut_args_to(
    message: AIMessage, size: int, max_tokens: int, counter: TokenCounter
) -> BaseMessage | None:
    """``message`` with its call values cut to the most characters that fit, or ``None``."""
    lo, hi = 0, longest_value(message)
    best: AIMessage | None = None
    while lo <= hi:
        keep = (lo + hi) // 2
        candidate = with_cut_args(message, keep)
        if counter.count_message(candidate) <= max_tokens:
            best, lo = candidate, keep + 1
        else:
            hi = keep - 1
    if best is None:
        return None
    return _stamped(message, best, size - counter.count_message(best))


def _cut_text(
    original: BaseMessage,
    message: BaseMessage,
    cut_before: int,
    max_tokens: int,
    counter: TokenCounter,
) -> BaseMessage:
    """``message``'s text cut to fit ``max_tokens``, stamped as a cut of ``original``.

    ``cut_before`` is what was cut from ``original`` to make ``message`` (its calls).
    """
    size = counter.count_message(message)
    if size <= max_tokens:
        return _stamped(original, message, cut_before)
    text = _text_of(message)
    blocks = _media_of(message)
    if blocks and (kept := _with_first_media(original, message, blocks, text, max_tokens, counter)):
        return kept
    total = max(1, counter.count_text(text))
    per_token = len(text) / total
    # Measured without the images and files a cut leaves out: they are not what the text
    # must make room for (ten screenshots used to cut a three-word request to the marker).
    bare = counter.count_message(_with_text(message, text, 0))
    media = max(0, size - bare)
    overhead = bare - counter.count_text(text)
    left: Sequence[object] = with_cut_text(message, "") if has_structure(message) else ()
    dropped = media_dropped(block_dicts(message), left)  # what a cut leaves of them
    keep = max(0, max_tokens - overhead - counter.count_text(_marker(total + media, dropped)))
    for _ in range(8):
        head = int(keep * _HEAD_SHARE * per_token)
        end = int(keep * (1 - _HEAD_SHARE) * per_token)
        if head + end >= len(text):
            head, end = len(text), 0
        kept_text = text[:head] + (text[len(text) - end :] if end else "")
        cut = max(0, total - counter.count_text(kept_text)) + media
        shown = text[:head] + _marker(cut, dropped) + text[len(text) - end :]
        candidate = _with_text(message, shown, cut)
        if counter.count_message(candidate) <= max_tokens:
            return _stamped(original, candidate, cut + cut_before)
        keep = int(keep * 0.8)
        if keep <= 0:
            break
    return _stamped(original, _with_text(message, _MIN_MARKER, total), total + cut_before)


def cut_floor(message: BaseMessage, counter: TokenCounter) -> int:
    """The fewest tokens ``message`` can be cut to (its calls' keys and the marker remain).

    Example:
        >>> from langchain_builderforce_memory.tokens import ApproximateTokenCounter
        >>> cut_floor(HumanMessage("x" * 4_000), ApproximateTokenCounter())
        11
    """
    whole = counter.count_message(message)
    if is_whole_output(message):  # a screenshot or loaded tools: valid only whole
        return whole
    smallest = message
    if isinstance(message, AIMessage) and longest_value(message) > SHORT:
        smallest = with_cut_args(message, 0)
    return min(whole, counter.count_message(_with_text(smallest, _MIN_MARKER, 10**9)))


def _cap_for(sizes: Sequence[int], floors: Sequence[int], room: int) -> int | None:
    """The largest cap ``c`` with ``sum(min(size, max(c, floor))) <= room``, or ``None``."""
    if sum(floors) > room:
        return None
    if sum(sizes) <= room:
        return max(sizes, default=0)
    lo, hi = 0, max(sizes)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        used = sum(min(s, max(mid, f)) for s, f in zip(sizes, floors, strict=True))
        lo, hi = (mid, hi) if used <= room else (lo, mid - 1)
    return lo


def _kept_and_notice(
    convo: Sequence[BaseMessage],
    sizes: Sequence[int],
    floors: Sequence[int],
    directive: int,
    room: int,
    budget: int,
    counter: TokenCounter,
) -> tuple[list[bool], int, HumanMessage | None]:
    """The messages kept (:func:`.drops.kept`), the room left them, and the left-out notice.

    Each thing a dropped unit may call for is sized first and its room kept, since leaving
    room for it may leave more out: the notice that work on the request was left out, and
    with thinking in the view, the repair's two placeholders (a dropped unit can leave a
    user message that joined tool results opening a turn of its own, which the repair then
    opens again at the thinking step).
    """
    d_size = sizes[directive] if directive >= 0 else 0
    keep = kept(convo, floors, directive, d_size, room)
    if all(keep):
        return keep, room, None
    if any(map(has_thinking, convo)):
        room -= sum(map(counter.count_message, (AIMessage("[paused]"), HumanMessage("[continue]"))))
        keep = kept(convo, floors, directive, d_size, room)
    notice = None
    if directive >= 0 and not all(keep[directive + 1 :]):
        bound = counter.count_message(left_out_notice(10**6, 10**12, 10**6, budget))
        fewer = kept(convo, floors, directive, d_size, room - bound)
        if sum(live(floors, fewer)) <= room - bound:
            keep, room = fewer, room - bound
            notice = left_out_notice(*left_out(convo, sizes, fewer, directive), budget)
    return keep, room, notice


def fit_to_budget(
    view: Sequence[BaseMessage],
    budget: int,
    counter: TokenCounter,
    *,
    where: str = "view",
    budget_name: str | None = None,
) -> tuple[list[BaseMessage], Elision]:
    """``view`` within ``budget`` tokens: the largest messages cut, whole units dropped last.

    ``view`` must be valid (``request_problems(view) == []``); the result is valid too:
    cut messages keep their role, calls and call ids, and dropped units are whole and
    never leave the conversation without a user turn first.

    Raises:
        ContextBudgetError: the budget cannot hold the leading system messages plus one
            human message (see :func:`check_budget_floor`; ``budget_name`` names it).

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_builderforce_memory.tokens import ApproximateTokenCounter
        >>> c = ApproximateTokenCounter()
        >>> view, report = fit_to_budget([HumanMessage("task " * 2_000)], 300, c)
        >>> c.count_message(view[0]) <= 300, report.elided_messages
        (True, 1)
    """
    lead = fixed_prefix_count(view, budget, counter)  # a pinned compaction block: fixed too
    system_tokens = sum(counter.count_message(m) for m in view[:lead])
    convo = list(view[lead:])
    sizes = [counter.count_message(m) for m in convo]
    directive = latest_directive_index(convo)
    check_budget_floor(
        system_tokens,
        budget,
        counter,
        where=where,
        opening_tokens=opening_size(convo[directive], counter, sizes[directive])
        if directive >= 0
        else None,
        budget_name=budget_name,
    )
    if system_tokens + sum(sizes) <= budget:  # then the media (a label costs less than they)
        return within_media_limit(view), Elision()
    floors = [cut_floor(m, counter) for m in convo]
    d_size = sizes[directive] if directive >= 0 else 0
    keep, room, notice = _kept_and_notice(
        convo, sizes, floors, directive, budget - system_tokens, budget, counter
    )
    dropped = keep.count(False)
    whole_directive = directive >= 0 and sum(live(floors, keep, skip=directive)) + d_size <= room
    if whole_directive:
        cap = _cap_for(
            live(sizes, keep, skip=directive), live(floors, keep, skip=directive), room - d_size
        )
    else:
        cap = _cap_for(live(sizes, keep), live(floors, keep), room)
    out: list[BaseMessage] = list(view[:lead])
    elided = cut_tokens = 0
    for i, m in enumerate(convo):
        if not keep[i]:
            continue
        limit = sizes[i] if (whole_directive and i == directive) else max(cap or 0, floors[i])
        if sizes[i] > limit:
            m = elide_message(m, limit, counter)
            elided += 1
            cut_tokens += sizes[i] - counter.count_message(m)
        out.append(m)
        if i == directive and notice is not None:
            out.append(notice)
    if dropped:  # a unit gone can leave a user message opening a turn thinking must open
        out, repairs = repair_request(out)
        log_repairs(repairs, where)
    return within_media_limit(out), Elision(elided, cut_tokens, dropped)
