"""The fold's data: the memo it carries across turns and the policy (its numbers).

:class:`CompactMemo` is what a fold leaves for the next turn (the note, what it covers);
:class:`FoldPolicy` holds the fold's budgets, every default the seed's constant. Where
the cut goes and how a compacted view is put together is
:mod:`~langchain_builderforce_memory.transcript.plan`; when a turn folds is
:mod:`~langchain_builderforce_memory.transcript.fold_plan`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from langchain_core.messages import BaseMessage

from langchain_builderforce_memory.calibration import scaled_tokens
from langchain_builderforce_memory.messages import message_id
from langchain_builderforce_memory.transcript.summary import DEFAULT_SUMMARIZER_TIMEOUT
from langchain_builderforce_memory.transcript.window import (
    HISTORY_TOKEN_BUDGET,
    MessageCeiling,
    auto_ceiling,
    message_ceiling,
    validate_budget,
)

__all__ = [
    "COMPACT_TAIL_MAX_MESSAGES",
    "COMPACT_TAIL_TOKEN_BUDGET",
    "COMPACT_TAIL_TURNS",
    "TAIL_SHARE",
    "CompactMemo",
    "FoldPolicy",
]

# The fold's logger: its log lines stay under the one name users already configure.
logger = logging.getLogger("langchain_builderforce_memory.transcript.fold")

COMPACT_TAIL_TOKEN_BUDGET: Final = 1_000
"""How many tokens the verbatim TAIL may keep when the older part is folded: in practice
the latest assistant turn and its results (the tail's floor), since the note, the
restated directive and the restored files carry the rest. The seed kept 40k of its 64k;
a tail that large left every later request re-reading it at a tenth, and on the recorded
runs it cost more and recalled less of the working set than the restore tier does
(``benchmarks/defaults_grid.md``)."""

_SEED_TAIL_TOKENS: Final = 40_000
"""The seed's tail budget of its 64k: what :data:`TAIL_SHARE` is the share of."""

COMPACT_TAIL_TURNS: Final = 8
"""The fewest recent messages the verbatim tail keeps while they fit its token budget."""

COMPACT_TAIL_MAX_MESSAGES: Final = 40
"""The most recent messages the verbatim tail may hold: the seed's half of its 80-message
window, and never more than half the window in force (:attr:`FoldPolicy.tail_message_cap`),
so a compacted view stays inside the window with room to grow."""


TAIL_SHARE: Final = _SEED_TAIL_TOKENS / HISTORY_TOKEN_BUDGET
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
    directive_id: str | None = None
    """Id of the user turn the fold restated after the note (its latest, when the note
    covered it), or ``None``. Views on this note keep restating it after a newer user turn
    arrives, so the front of the request does not move until the next fold."""

    def __post_init__(self) -> None:
        _checked_memo_fields(self.note, self.covered_end, self.last_covered_id)
        if not isinstance(self.restored, tuple) or not all(
            isinstance(r, str) for r in self.restored
        ):
            msg = (
                f"CompactMemo.restored: expected a tuple of message ids, got {self.restored!r:.80}."
            )
            raise ValueError(msg)
        directive: object = self.directive_id
        if directive is not None and (not isinstance(directive, str) or not directive):
            msg = f"CompactMemo.directive_id: expected a message id or None, got {directive!r:.80}."
            raise ValueError(msg)

    def held_in(self, convo: Sequence[BaseMessage]) -> CompactMemo | None:
        """This memo if it belongs to ``convo`` (found again by id after edits), else None.

        Example:
            >>> from langchain_core.messages import HumanMessage
            >>> memo = CompactMemo(note="n", covered_end=2, last_covered_id="b")
            >>> convo = [HumanMessage("a", id="a"), HumanMessage("b", id="b")]
            >>> memo.held_in(convo) is memo, memo.held_in(convo[1:]).covered_end
            (True, 1)
        """
        end = self.covered_end
        if end <= len(convo) and message_id(convo[end - 1]) == self.last_covered_id:
            return self
        # RemoveMessage edits only shift messages left, and need real ids: look for the
        # last covered message by its own id, never by a content hash (a rewritten record
        # could hold an equal message elsewhere).
        for j in range(min(end, len(convo)) - 1, -1, -1):
            if convo[j].id == self.last_covered_id:
                logger.info(
                    "build_working_transcript: the record was edited; the memo now covers "
                    "%d message(s) (was %d)",
                    j + 1,
                    end,
                )
                return replace(self, covered_end=j + 1)
        logger.info(
            "build_working_transcript: discarded a memo written for a different or "
            "rewritten record (message %r is not where it covered up to)",
            self.last_covered_id,
        )
        return None

    def to_dict(self) -> dict[str, object]:
        """The memo as a JSON-serialisable dict."""
        out: dict[str, object] = {
            "note": self.note,
            "covered_end": self.covered_end,
            "last_covered_id": self.last_covered_id,
        }
        if self.restored:
            out["restored"] = list(self.restored)
        if self.directive_id is not None:
            out["directive_id"] = self.directive_id
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
        directive: object = data.get("directive_id")
        if directive is not None and not isinstance(directive, str):
            msg = f"CompactMemo.directive_id: expected a message id or None, got {directive!r:.80}."
            raise ValueError(msg)
        return cls(
            note=note,
            covered_end=end,
            last_covered_id=last_id,
            restored=tuple(restored),
            directive_id=directive,
        )


@dataclass(frozen=True, slots=True)
class FoldPolicy:
    """The fold's numbers (each default and its reason: ``docs/options.md``).

    The measurements behind the defaults are in ``benchmarks/defaults.md``.

    Example:
        >>> FoldPolicy(max_tokens=8_000).tail_tokens
        1000
    """

    max_tokens: int = HISTORY_TOKEN_BUDGET
    """Tokens a view may hold, leading system messages (and ``system_prompt``) included."""
    max_messages: MessageCeiling = "auto"
    """Conversation messages a view may hold (system messages excluded); ``"auto"``: 128,
    raised to one per 500 tokens of ``max_tokens`` (resolved here, so a scaled
    policy keeps the count); ``None``: no message ceiling, the token budget decides. Any
    ceiling is at most 2,000 (:data:`~.window.MAX_VIEW_MESSAGES`)."""
    tail_tokens: int = COMPACT_TAIL_TOKEN_BUDGET
    """Tokens the verbatim tail may keep after a fold (also capped by :data:`TAIL_SHARE`)."""
    min_tail_messages: int = COMPACT_TAIL_TURNS
    """The fewest messages the tail keeps while they fit its token budget; past it, the latest
    assistant turn and its results (a floor that fills the view leaves no headroom)."""
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
    clear_edit_inputs: bool = True
    """When the clear tier clears an edit, cut its call's long values too (the file it
    wrote, the patch; ``False``: every call's arguments stay whole)."""

    def __post_init__(self) -> None:
        validate_budget(max_messages=self.max_messages, max_tokens=self.max_tokens)
        object.__setattr__(self, "max_messages", auto_ceiling(self.max_messages, self.max_tokens))
        backoff: object = self.backoff_tokens
        if backoff is not None and (
            isinstance(backoff, bool) or not isinstance(backoff, int) or backoff < 1
        ):
            msg = (
                f"backoff_tokens must be a positive int or None (half of max_tokens); "
                f"got {backoff!r}."
            )
            raise ValueError(msg)
        for name in ("clear_tool_results", "clear_edit_inputs"):
            flag: object = getattr(self, name)
            if not isinstance(flag, bool):
                msg = f"{name} must be True or False; got {flag!r}."
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

    def scaled(self, factor: float) -> FoldPolicy:
        """This policy's token numbers divided by ``factor`` (provider tokens per ours).

        Example:
            >>> FoldPolicy(max_tokens=13_000, tail_tokens=2_600).scaled(1.3).max_tokens
            10000
        """
        if factor == 1.0:
            return self
        return replace(
            self,
            max_tokens=max(1, math.floor(self.max_tokens / factor)),
            tail_tokens=max(1, math.floor(self.tail_tokens / factor)),
            clear_at_least=scaled_tokens(self.clear_at_least, factor),
            restore_tokens=scaled_tokens(self.restore_tokens, factor),
        )

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

    def fold_headroom(self, room: int) -> int:
        """The new work a fold leaves room for, of the ``room`` after its fixed parts.

        What the default restore (an eighth of the budget) and a tail at its
        :data:`TAIL_SHARE` leave: ``(1 - TAIL_SHARE) * (room - max_tokens // 8)``. A larger
        ``restore_tokens`` shrinks the tail, and a tail over its share (its fewest
        messages are one large unit) shrinks the restore, never this: re-attaching 16k or
        more at a 64k budget made a fold come after a few hundred tokens of new work, turn
        after turn (``benchmarks/sweep.md``).

        Example:
            >>> FoldPolicy(max_tokens=64_000).fold_headroom(60_000)
            19500
        """
        return int((1 - TAIL_SHARE) * max(0, room - self.max_tokens // 8))

    @property
    def keep_budget(self) -> int:
        """What the clear tier spares of the working set: twice :attr:`restore_budget`.

        A quarter of the budget by default, and never more than the clear tier can land
        below with the restore beside it (``max_tokens - clear_room - restore_budget``):
        sparing more left it unable to land, so the fold ran instead, turn after turn.
        ``benchmarks/defaults.md`` has the measurements behind both.
        """
        return min(
            self.restore_budget * 2,
            max(0, self.max_tokens - self.clear_room - self.restore_budget),
        )

    @property
    def restore_message_cap(self) -> int:
        """The most files a fold re-attaches: an eighth of the message window.

        With the note, the directive and the tail (at most half the window), this leaves
        over a quarter of the window for new work before the next fold.
        """
        return max(1, self.message_cap // 8)

    def files_cap(self, kept: int) -> int:
        """The most files a fold re-attaches beside ``kept`` verbatim messages.

        The files are the view's one optional part: they take only the message room the
        note, the directive and the kept messages leave. Sized against the tail alone, 2
        files made a 16-message ceiling's view 17 (a pinned thinking step of 4 messages).
        """
        return max(0, min(self.restore_message_cap, self.message_cap - 2 - kept))

    @property
    def tail_message_floor(self) -> int:
        """The tail's fewest messages: ``min_tail_messages``, at most half the window.

        Capped as the tail's ceiling is: a floor of 8 under ``max_messages=10`` made every
        fold view 11 conversation messages (the note, the directive and 8 tail messages
        at least, the brief beside them).
        """
        return max(1, min(self.min_tail_messages, self.message_cap // 2))

    @property
    def tail_message_cap(self) -> int:
        """The tail's message ceiling: ``max_tail_messages``, at most half the window."""
        return max(self.tail_message_floor, min(self.max_tail_messages, self.message_cap // 2))

    @property
    def message_cap(self) -> int:
        """``max_messages`` as a number (at most :data:`~.window.MAX_VIEW_MESSAGES`)."""
        return message_ceiling(auto_ceiling(self.max_messages, self.max_tokens))
