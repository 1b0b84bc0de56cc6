"""The fold's data and partitioning: the memo, the policy, where the tail begins.

Pure functions over a conversation (the record without its leading system messages),
ported from the seed's ``transcript.ts``. :mod:`~langchain_builderforce_memory.transcript.
fold` decides WHEN to fold; this module decides WHERE the cut goes and how a compacted
view is put together, so a fold, a reused memo and a test all assemble alike.

The note is a human-role message. The seed folded into an assistant note right after the
system prompt, while its own window comment says strict providers (Gemini:
``400 INVALID_ARGUMENT``) reject a conversation that does not begin with a user turn; the
tail after a fold usually starts on an assistant tool-call turn, so an assistant note
would put two assistant turns first. A user-role note makes every compacted view begin
with a user turn. It is stamped (kind ``"memory_note"``, with ``covered_end``) so later
passes and UIs recognise it as generated, never as something the user said.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_builderforce_memory.blocks import thinking_span
from langchain_builderforce_memory.incremental import PrefixCache, Recent, last_index
from langchain_builderforce_memory.messages import (
    is_generated,
    role_of,
    stamp,
    tool_call_units,
)
from langchain_builderforce_memory.tokens import (
    TokenCounter,
    TokenCounterLike,
    resolve_token_counter,
)
from langchain_builderforce_memory.transcript.markers import consolidation_marker_of
from langchain_builderforce_memory.transcript.summary import (
    DEFAULT_SUMMARIZER_TIMEOUT,
    TRANSCRIPT_SUMMARY_MAX_TOKENS,
)
from langchain_builderforce_memory.transcript.window import (
    HISTORY_TOKEN_BUDGET,
    HISTORY_WINDOW,
    restated_directive,
    validate_budget,
)

__all__ = [
    "COMPACT_TAIL_MAX_MESSAGES",
    "COMPACT_TAIL_TOKEN_BUDGET",
    "COMPACT_TAIL_TURNS",
    "MEMORY_NOTE_KIND",
    "TAIL_SHARE",
    "CompactMemo",
    "FoldPolicy",
    "assemble_compacted",
    "compact_tail_start",
    "compact_tail_start_for_budget",
    "fold_note_text",
    "latest_user_index",
    "memory_note",
    "note_reserve",
    "pinned_directive_index",
    "present_leading_marker",
    "system_messages",
    "trim_compacted_tail",
    "verbatim_start",
]

logger = logging.getLogger("langchain_builderforce_memory.transcript.fold")

COMPACT_TAIL_TOKEN_BUDGET: Final = 40_000
"""How much of the 64k budget the verbatim TAIL may keep when the older part is folded.
The rest is headroom new work fills before the next fold, so the note is re-folded once
per ~20k tokens of progress, not on every turn."""

COMPACT_TAIL_TURNS: Final = 8
"""The fewest recent messages the verbatim tail keeps, however large they are."""

COMPACT_TAIL_MAX_MESSAGES: Final = 40
"""The most recent messages the verbatim tail may hold: half the 80-message window, so a
compacted view stays inside the window with room to grow."""

MEMORY_NOTE_KIND: Final = "memory_note"
"""The stamp ``kind`` of a memory note in a view (see :func:`memory_note`)."""


TAIL_SHARE: Final = COMPACT_TAIL_TOKEN_BUDGET / HISTORY_TOKEN_BUDGET
"""The most of the room left after the fixed parts (system, note, directive) the tail
takes: the seed's 40k of 64k. The rest is the headroom new work fills before the next
fold, whatever the budget; without it a small budget (or a large system prompt) would
leave no room and fold on every turn."""

_MEMO_FIELDS: Final = ("note", "covered_end", "last_covered_id")


def _checked_memo_fields(
    note: object, covered_end: object, last_covered_id: object
) -> tuple[str, int, str]:
    if not isinstance(note, str) or not note.strip():
        msg = f"CompactMemo.note: expected a non-empty string, got {note!r:.80}."
        raise ValueError(msg)
    if isinstance(covered_end, bool) or not isinstance(covered_end, int) or covered_end < 1:
        msg = f"CompactMemo.covered_end: expected a positive int, got {covered_end!r}."
        raise ValueError(msg)
    if not isinstance(last_covered_id, str) or not last_covered_id:
        msg = f"CompactMemo.last_covered_id: expected a non-empty string, got {last_covered_id!r}."
        raise ValueError(msg)
    return note, covered_end, last_covered_id


@dataclass(frozen=True, slots=True)
class CompactMemo:
    """The compressed memory of a conversation's older part, reused across turns.

    ``note`` summarizes ``convo[:covered_end]`` (``convo`` = the record after its leading
    system messages); every message from ``covered_end`` on is sent verbatim. The id of
    the last covered message lets a memo survive ``RemoveMessage`` edits (it is found
    again by id when the messages before it shift) and lets a memo written for a different
    or rewritten record be detected and discarded.

    Plain data with :meth:`to_dict` / :meth:`from_dict`: keep it in graph state as the
    dict, since LangGraph's strict msgpack refuses unregistered classes in checkpoints.

    Example:
        >>> memo = CompactMemo(note="the note", covered_end=12, last_covered_id="m11")
        >>> CompactMemo.from_dict(memo.to_dict()) == memo
        True
    """

    note: str
    """The note's text, as shown to the model."""
    covered_end: int
    """The conversation index the note covers up to, exclusive."""
    last_covered_id: str
    """``message_id(convo[covered_end - 1])``."""
    restored: tuple[str, ...] = ()
    """Ids of the covered tool results re-attached verbatim after the note (the files the
    run was working on when it folded), in order."""

    def __post_init__(self) -> None:
        _checked_memo_fields(self.note, self.covered_end, self.last_covered_id)
        if not isinstance(self.restored, tuple) or not all(
            isinstance(r, str) for r in self.restored
        ):
            msg = (
                f"CompactMemo.restored: expected a tuple of message ids, got {self.restored!r:.80}."
            )
            raise ValueError(msg)

    def to_dict(self) -> dict[str, object]:
        """The memo as a JSON-serialisable dict."""
        out: dict[str, object] = {
            "note": self.note,
            "covered_end": self.covered_end,
            "last_covered_id": self.last_covered_id,
        }
        if self.restored:
            out["restored"] = list(self.restored)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> CompactMemo:
        """Parse :meth:`to_dict`'s output; unknown keys are ignored.

        Raises:
            ValueError: naming the missing or malformed field.
        """
        candidate: object = data  # checked at run time: state may hold anything
        if not isinstance(candidate, Mapping):
            msg = (
                f"CompactMemo: expected a mapping with keys {list(_MEMO_FIELDS)}, got "
                f"{type(candidate).__name__}."
            )
            raise ValueError(msg)
        for name in _MEMO_FIELDS:
            if name not in data:
                msg = f"CompactMemo.{name}: missing from {sorted(map(str, data))}."
                raise ValueError(msg)
        note, end, last_id = _checked_memo_fields(
            data["note"], data["covered_end"], data["last_covered_id"]
        )
        restored: object = data.get("restored", ())
        if not isinstance(restored, list | tuple):
            msg = f"CompactMemo.restored: expected a list of message ids, got {restored!r:.80}."
            raise ValueError(msg)
        return cls(note=note, covered_end=end, last_covered_id=last_id, restored=tuple(restored))


@dataclass(frozen=True, slots=True)
class FoldPolicy:
    """The fold's numbers; every default is the seed's constant.

    Example:
        >>> FoldPolicy(max_tokens=8_000).tail_tokens
        40000
    """

    max_tokens: int = HISTORY_TOKEN_BUDGET
    """Tokens a view may hold, leading system messages (and ``system_prompt``) included."""
    max_messages: int = HISTORY_WINDOW
    """Conversation messages a view may hold (system messages excluded)."""
    tail_tokens: int = COMPACT_TAIL_TOKEN_BUDGET
    """Tokens the verbatim tail may keep after a fold (also capped by :data:`TAIL_SHARE`)."""
    min_tail_messages: int = COMPACT_TAIL_TURNS
    """The fewest messages the tail keeps, however large: correctness over the budget."""
    max_tail_messages: int = COMPACT_TAIL_MAX_MESSAGES
    """The most messages the tail keeps (also capped at half of ``max_messages``)."""
    timeout: float | None = DEFAULT_SUMMARIZER_TIMEOUT
    """Seconds a summarizer call may take before it is abandoned (``None``: no limit)."""
    backoff_tokens: int | None = None
    """Tokens of new work to wait after a failed summarizer call before the next one
    (doubling while it keeps failing, reset by a success). ``None``: half of
    ``max_tokens``."""

    clear_at_least: int | None = None
    """When the clear tier must move its horizon, how far under the budget the view lands
    (``None``: half of ``max_tokens``): the prefix moves once per batch and then holds for
    that much new work."""
    restore_tokens: int | None = None
    """Tokens of file outputs re-attached after a fold's note (``None``: an eighth of
    ``max_tokens``; 0: none); the clear tier keeps twice that verbatim."""
    clear_tool_results: bool = True
    """Run the clear tier before folding (``False``: fold as soon as the view overflows)."""

    def __post_init__(self) -> None:
        validate_budget(max_messages=self.max_messages, max_tokens=self.max_tokens)
        backoff: object = self.backoff_tokens
        if backoff is not None and (
            isinstance(backoff, bool) or not isinstance(backoff, int) or backoff < 1
        ):
            msg = (
                f"backoff_tokens must be a positive int or None (half of max_tokens); "
                f"got {backoff!r}."
            )
            raise ValueError(msg)
        flag: object = self.clear_tool_results
        if not isinstance(flag, bool):
            msg = f"clear_tool_results must be True or False; got {flag!r}."
            raise ValueError(msg)
        for name, minimum in (("clear_at_least", 1), ("restore_tokens", 0)):
            number: object = getattr(self, name)
            if number is not None and (
                isinstance(number, bool) or not isinstance(number, int) or number < minimum
            ):
                share = "half" if name == "clear_at_least" else "an eighth"
                msg = (
                    f"{name} must be an int >= {minimum} or None ({share} of max_tokens); "
                    f"got {number!r}."
                )
                raise ValueError(msg)
        for name, default in (
            ("tail_tokens", COMPACT_TAIL_TOKEN_BUDGET),
            ("min_tail_messages", COMPACT_TAIL_TURNS),
            ("max_tail_messages", COMPACT_TAIL_MAX_MESSAGES),
        ):
            value: object = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                msg = f"{name} must be a positive int (default {default}); got {value!r}."
                raise ValueError(msg)
        if self.max_tail_messages < self.min_tail_messages:
            msg = (
                f"max_tail_messages ({self.max_tail_messages}) must be at least "
                f"min_tail_messages ({self.min_tail_messages}); raise max_tail_messages or "
                "lower min_tail_messages."
            )
            raise ValueError(msg)
        timeout: object = self.timeout
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            msg = f"timeout must be a positive number of seconds or None; got {timeout!r}."
            raise ValueError(msg)

    @property
    def backoff_span(self) -> int:
        """Tokens of new work between a failed summarizer call and the next attempt."""
        return self.backoff_tokens if self.backoff_tokens is not None else self.max_tokens // 2

    @property
    def clear_room(self) -> int:
        """:attr:`clear_at_least`, or half of the budget."""
        return (
            self.clear_at_least if self.clear_at_least is not None else max(1, self.max_tokens // 2)
        )

    @property
    def restore_budget(self) -> int:
        """:attr:`restore_tokens`, or an eighth of the budget: re-attached after a note."""
        return self.restore_tokens if self.restore_tokens is not None else self.max_tokens // 8

    @property
    def keep_budget(self) -> int:
        """What the clear tier spares of the working set: twice :attr:`restore_budget`.

        A quarter of the budget by default. Measured (``benchmarks/contenders.py``, mean
        working-set recall, standard / heavy workload): sparing only what a fold
        re-attaches (an eighth) kept 30% / 30%; 1.75x 32.98% / 33.38%; twice 33.19% /
        33.61%, not below the 33.10% / 33.39% of the clear tier before its horizon was
        held. Re-attaching as much after every note instead folded more often.
        """
        return self.restore_budget * 2

    @property
    def tail_message_cap(self) -> int:
        """The tail's message ceiling: ``max_tail_messages``, at most half the window."""
        return max(self.min_tail_messages, min(self.max_tail_messages, self.max_messages // 2))


def fold_note_text(summary: str, covered_end: int, restored: Sequence[str] = ()) -> str:
    """The note's text: a header saying what it covers, the summary, what is re-attached."""
    text = (
        f"Compressed memory of the first {covered_end} message(s) of this conversation:\n{summary}"
    )
    if restored:
        text += f"\n\nre-attached below, verbatim (their latest output): {', '.join(restored)}"
    return text


def note_reserve(counter: TokenCounter, covered_end: int) -> int:
    """Tokens to keep free for a note not yet written.

    Its ceiling, its header, and 16 more for its framing and the cut marker of a capped
    answer.
    """
    header = counter.count_text(fold_note_text("", covered_end))
    return header + TRANSCRIPT_SUMMARY_MAX_TOKENS + 16


def system_messages(system: str | BaseMessage | Sequence[BaseMessage] | None) -> list[BaseMessage]:
    """The system prefix a view starts with: ``None`` -> none, a string -> one message."""
    if system is None:
        return []
    if isinstance(system, str):
        return [SystemMessage(system)]
    if isinstance(system, BaseMessage):
        return [system]
    return list(system)


def memory_note(note: str, covered_end: int) -> HumanMessage:
    """The note as it is shown to the model: a human-role message, stamped.

    Example:
        >>> from langchain_builderforce_memory.messages import stamp_of
        >>> stamp_of(memory_note("MEMO", 5))
        {'kind': 'memory_note', 'covered_end': 5}
    """
    key = (note, covered_end)
    shown = _NOTES.get(key)
    if shown is None:
        # One object per note: the view reuses it turn after turn, so its count is cached.
        shown = stamp(HumanMessage(note), MEMORY_NOTE_KIND, covered_end=covered_end)
        _NOTES.put(key, shown)
    return shown


_NOTES: Final[Recent[tuple[str, int], HumanMessage]] = Recent(64)


def present_leading_marker(convo: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``convo`` with a leading consolidation marker shown as a human-role memory note.

    :func:`~langchain_builderforce_memory.transcript.markers.scope_to_consolidation`
    returns the marker first, and a marker is stored as an assistant message (a reader
    sees the summary); a request must begin with a user turn. The note keeps the marker's
    id and content, and its stamp carries the marker's metadata (``source`` says where it
    came from; ``covered_end`` is 0: it covers history that is no longer in the list).
    Any other list comes back as a plain copy.
    """
    out = list(convo)
    if not out or role_of(out[0]) == "user":
        return out
    meta = consolidation_marker_of(out[0])
    if meta is None:
        return out
    marker = out[0]
    out[0] = stamp(
        HumanMessage(content=marker.content, id=marker.id),
        MEMORY_NOTE_KIND,
        covered_end=0,
        source="consolidation_marker",
        marker=meta.to_dict(),
    )
    return out


def verbatim_start(convo: Sequence[BaseMessage], start: int) -> int:
    """The first index at or after ``start`` that is not a tool result.

    A tool result whose assistant call was folded into the note would be an orphan, which
    strict providers reject. ``start`` is clamped to ``[0, len(convo)]``.

    Example:
        >>> from langchain_core.messages import AIMessage, ToolMessage
        >>> verbatim_start([AIMessage("a"), ToolMessage("r", tool_call_id="c"), AIMessage("b")], 1)
        2
    """
    i = max(0, min(start, len(convo)))
    while i < len(convo) and role_of(convo[i]) == "tool":
        i += 1
    return i


def compact_tail_start(convo: Sequence[BaseMessage], tail_messages: int) -> int:
    """Start index of the last ``tail_messages`` messages, walked off a leading tool result."""
    return verbatim_start(convo, len(convo) - tail_messages)


def compact_tail_start_for_budget(
    convo: Sequence[BaseMessage],
    budget_tokens: int,
    *,
    min_tail_messages: int = COMPACT_TAIL_TURNS,
    max_tail_messages: int = COMPACT_TAIL_MAX_MESSAGES,
    token_counter: TokenCounterLike = None,
) -> int:
    """Where the verbatim tail begins when the conversation is folded.

    As many of the most recent messages as fit in ``budget_tokens``, never fewer than
    ``min_tail_messages``, never more than ``max_tail_messages``, walked forward off a
    leading tool result. Sized by TOKENS, not a message count: a fixed eight messages is
    four tool results, so after a fold the fifth file the model needed was always the one
    it had to read again.

    One change from the seed: when walking forward off tool results would leave fewer
    than ``min_tail_messages`` (the cut fell inside a run of parallel results), the tail
    starts at the assistant turn that made the calls instead, so the model never loses
    the results of its latest calls to the note.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> convo = [HumanMessage("task")] + [AIMessage("x" * 40_000) for _ in range(30)]
        >>> len(convo) - compact_tail_start_for_budget(convo, 10_000)
        8
    """
    counter = resolve_token_counter(token_counter)
    n = len(convo)
    start = n
    tokens = 0
    while start > 0:
        kept = n - start
        if kept >= max_tail_messages:
            break
        size = counter.count_message(convo[start - 1])
        if kept >= min_tail_messages and tokens + size > budget_tokens:
            break
        tokens += size
        start -= 1
    forward = verbatim_start(convo, start)
    if n - forward >= min(min_tail_messages, n):
        return forward
    back = start
    while back > 0 and role_of(convo[back]) == "tool":
        back -= 1
    return back


def latest_user_index(convo: Sequence[BaseMessage]) -> int:
    """Index of the latest user turn the USER wrote (stamped, generated ones skipped), or -1.

    O(new messages) over a record that grew since the last call.
    """
    return last_index(_LATEST_USER, convo, _is_directive)


def _is_directive(message: BaseMessage) -> bool:
    return role_of(message) == "user" and not is_generated(message)


_LATEST_USER: Final[PrefixCache[int]] = PrefixCache()


def pinned_directive_index(convo: Sequence[BaseMessage], tail_start: int) -> int:
    """Index of the user turn to re-inject verbatim ahead of the tail, or -1.

    The ACTIVE directive is the MOST RECENT user turn. Pinning the first one (the seed's
    old behaviour) made a multi-instruction chat revert to its opening request. -1 when
    the latest user turn is already inside the tail (or there is none). Generated
    (stamped) human messages are never directives.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> convo = [HumanMessage("old"), AIMessage("a"), HumanMessage("new"), AIMessage("b")]
        >>> pinned_directive_index(convo, 3), pinned_directive_index(convo, 2)
        (2, -1)
    """
    last = latest_user_index(convo)
    return last if 0 <= last < tail_start else -1


def assemble_compacted(
    system: str | BaseMessage | Sequence[BaseMessage] | None,
    convo: Sequence[BaseMessage],
    note: str,
    covered_end: int,
    restored: Sequence[BaseMessage] = (),
    *,
    latest_user: int | None = None,
) -> list[BaseMessage]:
    """A compacted view: system, the note, re-attached files, the directive, the tail.

    ``note`` summarizes ``convo[:covered_end]``; EVERY message from ``covered_end`` on is
    kept verbatim (walked off tool results whose call the note folded), so nothing is in
    neither the note nor the tail. The directive sits right before the tail so the model
    reads it as the CURRENT instruction, after the compressed history. The note is a
    human-role stamped message (see the module docstring).

    Args:
        system: The system prefix (a prompt string, a message, or the leading messages).
        convo: The conversation, without its leading system messages.
        note: The note's text.
        covered_end: The conversation index the note covers up to (exclusive).
        restored: Re-attached file outputs, shown right after the note.
        latest_user: :func:`latest_user_index` of ``convo``, when the caller has it (a
            view with cleared results has the record's: placeholders are tool results).

    Returns:
        A new list; ``convo``'s messages are reused, never changed.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> convo = [HumanMessage("task")] + [AIMessage(f"a{i}") for i in range(5)]
        >>> [m.content for m in assemble_compacted("SYS", convo, "MEMO", 3)]
        ['SYS', 'MEMO', 'task', 'a2', 'a3', 'a4']
    """
    tail_start = verbatim_start(convo, covered_end)
    out = system_messages(system)
    out.append(memory_note(note, max(0, min(covered_end, len(convo)))))
    out.extend(restored)
    last = latest_user_index(convo) if latest_user is None else latest_user
    if 0 <= last < tail_start:
        out.append(restated_directive(convo[last]))
        # With thinking on, the running tool loop must open with its thinking turn: it
        # stays with the directive while later steps of the loop go to the note.
        span = thinking_span(convo)
        if span is not None and last < span[0] and span[1] <= tail_start:
            out.extend(convo[span[0] : span[1]])
    out.extend(convo[tail_start:])
    return out


def trim_compacted_tail(
    system: Sequence[BaseMessage],
    convo: Sequence[BaseMessage],
    memo: CompactMemo | None,
    *,
    max_tokens: int,
    token_counter: TokenCounterLike = None,
) -> tuple[list[BaseMessage], int]:
    """A view within ``max_tokens`` between folds, and how many tail messages it left out.

    Between folds (a failed or backed-off summarizer) the verbatim tail outgrows the room
    the fold left it, and a tool loop under one directive cannot be windowed (the window
    never drops the latest user turn). The system messages, the note (with ``memo``) and
    the latest user turn (restated when the note covered it) stay; the oldest whole
    tool-call units of the tail go until the view fits; the latest unit always stays
    (correctness over size).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> convo = [HumanMessage("task")] + [AIMessage("x" * 400) for _ in range(6)]
        >>> memo = CompactMemo(note="MEMO", covered_end=2, last_covered_id="x")
        >>> view, dropped = trim_compacted_tail([], convo, memo, max_tokens=300)
        >>> [m.content[:4] for m in view], dropped
        (['MEMO', 'task', 'xxxx', 'xxxx'], 3)
    """
    counter = resolve_token_counter(token_counter)
    head = list(system)
    if memo is not None:
        head.append(memory_note(memo.note, max(0, min(memo.covered_end, len(convo)))))
        tail_start = verbatim_start(convo, memo.covered_end)
        directive = pinned_directive_index(convo, tail_start)
    else:
        directive = latest_user_index(convo)
        tail_start = verbatim_start(convo, directive + 1) if directive >= 0 else 0
    if directive >= 0:
        head.append(convo[directive])
    # With thinking on, the running loop's opening thinking turn stays with the directive.
    span = thinking_span(convo)
    opening = span[0] if span is not None and 0 <= directive < span[0] else -1
    if span is not None and opening >= 0 and span[1] <= tail_start:
        head.extend(convo[span[0] : span[1]])
    tail = list(convo[tail_start:])
    total = sum(counter.count_message(m) for m in (*head, *tail))
    units = tool_call_units(tail)
    k = 0
    kept_opening: list[BaseMessage] = []
    while k < len(units) - 1 and total > max_tokens:
        u = units[k]
        if tail_start + u.start == opening:
            kept_opening = tail[u.start : u.end]  # moved next to the directive, still counted
        else:
            total -= sum(counter.count_message(m) for m in tail[u.start : u.end])
        k += 1
    start = units[k].start if units else 0
    return [*head, *kept_opening, *tail[start:]], start - len(kept_opening)
