"""A conversation's tool results, as the clear tier and the restore step see them.

Each result is classified once (a read, an edit, a search / list / shell output, a failed
call) with the call it answers, its size and its placeholder's size when cleared. They are
a :class:`~langchain_builderforce_memory.facts.Fact` of the record: kept in its
:class:`~langchain_builderforce_memory.facts.RecordFacts`, a turn classifies and counts
only the results new since the last.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_builderforce_memory.blocks import (
    DECISION_TYPES,
    block_dicts,
    has_structure,
    is_tool_result_turn,
    result_keys,
    result_messages,
    tool_result_ids,
    valid_calls,
    with_cut_text,
)
from langchain_builderforce_memory.copies import Copies
from langchain_builderforce_memory.facts import Prefix, RecordFacts, counter_of
from langchain_builderforce_memory.jsontext import json_text
from langchain_builderforce_memory.messages import is_stamped, message_id, stamp
from langchain_builderforce_memory.outputs import is_whole_output
from langchain_builderforce_memory.tokens import TokenCounter
from langchain_builderforce_memory.transcript.call_args import cut_saving, with_cut_args
from langchain_builderforce_memory.working.mapper import ToolObservationMapper

__all__ = [
    "CLEARED_KIND",
    "TOOL_RESULTS",
    "TOOL_RESULTS_WHOLE_CALLS",
    "ResultKind",
    "ToolResult",
    "ToolResults",
    "cleared_call",
    "cleared_result",
    "cleared_tokens",
    "results_fact",
    "shown_cleared",
    "tool_results",
]

CLEARED_KIND: Final = "cleared"
"""The stamp ``kind`` of a tool result cleared in the view."""

ResultKind = Literal["read", "edit", "search", "failed", "other"]
"""What a tool result is, for the clear tier and the restore step."""


_MAPPER: Final = ToolObservationMapper()

_BULKY_NAMES: Final = re.compile(
    r"(search|grep|find|glob|list|ls\b|dir|shell|bash|terminal|exec|run|command|cmd)", re.I
)
"""Tool names whose output is a listing or a log: cleared as search output."""

_SHARED_KINDS: Final[frozenset[ResultKind]] = frozenset({"search", "failed", "other"})
"""Kinds several answers in one turn keep together (a read or an edit names one file)."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One tool result of a conversation, as the clear tier sees it."""

    index: int
    """Its index in the conversation."""
    name: str
    """The tool's name (from the call it answers)."""
    args: str
    """The call's arguments, as compact JSON."""
    size: int
    """Its tokens in the view."""
    kind: ResultKind
    """A read, an edit, a search / list / shell output, a failed call, or other."""
    target: str | None
    """The file it read or changed (``None`` for the rest)."""
    message_id: str = ""
    """:func:`~langchain_builderforce_memory.messages.message_id` of the result."""
    placeholder_size: int = 60
    """Its placeholder's tokens when cleared (:func:`cleared_result`, counted): the
    placeholder quotes the call's arguments, so a shell command's costs more than a path."""
    call_saving: int = 0
    """Tokens its call's long argument values take beyond their markers, for an edit (the
    file a write created, a patch): clearing the result cuts them too (:func:`cleared_call`).
    The tool has acted on them, and an edit's own output is too short to clear."""
    call_id: str = ""
    """The id of the call it answers."""
    placeholder: BaseMessage | None = field(default=None, compare=False, repr=False)
    """Its placeholder (:func:`shown_cleared`), made once when the result is first seen, so
    a view shows the same object turn after turn while its horizon holds."""

    @property
    def shown_as_placeholder(self) -> bool:
        """Whether clearing replaces the output itself (a placeholder is shorter)."""
        return self.size > self.placeholder_size


def _calls_by_id(convo: Sequence[BaseMessage]) -> dict[str, tuple[str, Mapping[str, object]]]:
    calls: dict[str, tuple[str, Mapping[str, object]]] = {}
    for m in convo:
        if isinstance(m, AIMessage):
            for key, (name, args) in valid_calls(m).items():
                calls[key] = (name, args if isinstance(args, Mapping) else {})
    return calls


def _classify(
    name: str, args: Mapping[str, object], message: ToolMessage
) -> tuple[ResultKind, str | None]:
    if message.status == "error" or _MAPPER.failed(message):
        return "failed", None
    found = _MAPPER.map(name, args, message)
    for o in found:
        if o.kind == "read":
            return "read", o.target
    for o in found:
        if o.kind in {"edited", "created", "deleted"}:
            return "edit", o.target
    if any(o.kind == "searched" for o in found) or _BULKY_NAMES.search(name):
        return "search", None
    return "other", None


def _info(
    message: ToolMessage, call: tuple[str, Mapping[str, object]] | None
) -> tuple[str, str, ResultKind, str | None]:
    """(name, args JSON, kind, target) of a tool result."""
    name, args = call if call is not None else (message.name or "tool", {})
    kind, target = _classify(name, args, message)
    return name, json_text(args, sort_keys=True), kind, target


class ToolResults(Prefix[ToolResult]):
    """A conversation's tool results in order, with their indices (:data:`TOOL_RESULTS`).

    A read-only sequence to every reader; :func:`result_order` reads :attr:`order` off it
    instead of walking the results again.
    """

    __slots__ = ("derived", "order")

    def __init__(
        self,
        items: list[ToolResult],
        indices: list[int],
        ordered: bool,
        derived: dict[Hashable, tuple[int, object]],
    ) -> None:
        """The results so far of ``items`` (and ``indices``, their indices), append-only."""
        super().__init__(items)
        self.order: tuple[Sequence[int], bool] = (Prefix(indices), ordered)
        """Every result's index, and whether they ascend (see :func:`result_order`)."""
        self.derived = derived
        """What is worked out from the results, shared by every snapshot of one record's:
        ``key -> (n, value)``, the value over the first ``n`` results. A snapshot of at
        least ``n`` results extends it over its new ones (see :func:`clear_cut_points`)."""

    def grown(self, key: Hashable) -> tuple[int, object] | None:
        """``(n, value)`` kept for ``key`` over at most these results, or ``None``."""
        held = self.derived.get(key)
        return held if held is not None and held[0] <= len(self) else None


class _ResultsSoFar:
    """The :data:`TOOL_RESULTS` of a record: its calls by id, and its results."""

    __slots__ = ("answered", "calls", "derived", "indices", "items", "ordered", "results")

    def __init__(self) -> None:
        self.calls: dict[str, tuple[str, Mapping[str, object]]] = {}
        self.answered: set[str] = set()
        self.items: list[ToolResult] = []
        self.indices: list[int] = []
        self.ordered = True
        self.derived: dict[Hashable, tuple[int, object]] = {}
        self.results = ToolResults(self.items, self.indices, self.ordered, self.derived)


@dataclass(frozen=True, slots=True)
class _ToolResultsFact:
    """Every tool result of a record with its call, size and kind.

    A :class:`~langchain_builderforce_memory.facts.Fact`: a turn classifies and counts
    only the results new since the last.
    """

    cut_inputs: bool
    """Whether clearing an edit also cuts its call's long values (:attr:`ToolResult.
    call_saving`); ``False``: every call stays whole (``clear_edit_inputs=False``)."""

    def grow(
        self,
        state: _ResultsSoFar | None,
        record: Sequence[BaseMessage],
        start: int,
        counter: TokenCounter,
    ) -> _ResultsSoFar:
        """The results of ``record``, the new messages' added to ``state``'s."""
        new_calls = _calls_by_id(record[start:])
        if state is None or not state.answered.isdisjoint(new_calls):
            # A call id re-used after a result already answered it changes that result's
            # call (the last call of an id wins): start over.
            state, start, new_calls = _ResultsSoFar(), 0, _calls_by_id(record)
        state.calls.update(new_calls)
        known = len(state.items)
        for i in range(start, len(record)):
            m = record[i]
            if isinstance(m, ToolMessage):
                state.items.append(self._result(m, i, state.calls, counter))
                state.answered.add(m.tool_call_id)
            elif is_tool_result_turn(m):
                result = _turn_result(m, i, state.calls, counter, cut_inputs=self.cut_inputs)
                state.items.append(result)
                state.answered.update(tool_result_ids(m))
            else:
                continue
            state.indices.append(i)
        if len(state.items) > known:
            seq = state.indices[max(0, known - 1) :]
            state.ordered = state.ordered and all(map(operator.lt, seq, seq[1:]))
            state.results = ToolResults(state.items, state.indices, state.ordered, state.derived)
        return state

    def _result(
        self,
        m: ToolMessage,
        i: int,
        calls: Mapping[str, tuple[str, Mapping[str, object]]],
        counter: TokenCounter,
    ) -> ToolResult:
        """The result ``m`` at index ``i``, with its placeholder and what clearing saves."""
        call = calls.get(m.tool_call_id)
        name, text, kind, target = _info(m, call)
        result = ToolResult(i, name, text, counter.count_message(m), kind, target, message_id(m))
        # A computer call's screenshot is valid only whole: never worth clearing.
        placeholder = m if is_whole_output(m) else cleared_result(m, result)
        edit = self.cut_inputs and kind == "edit" and call is not None
        saving = cut_saving(call[1], counter.count_text) if edit and call else 0
        return replace(
            result,
            placeholder_size=counter.count_message(placeholder),
            call_saving=saving,
            call_id=m.tool_call_id,
            placeholder=placeholder,
        )


def _turn_result(
    turn: BaseMessage,
    i: int,
    calls: Mapping[str, tuple[str, Mapping[str, object]]],
    counter: TokenCounter,
    *,
    cut_inputs: bool,
) -> ToolResult:
    """An Anthropic-native user turn of ``tool_result`` blocks, as one result.

    Cleared and re-attached whole: each block's content gives way to its own placeholder
    line. One answer is classified as its call, and an edit's ``tool_use`` block has its
    long values cut when cleared (``cut_inputs``), as a ``ToolMessage``'s call does;
    several answers are one read or edit of no single file, so they are ``other`` (or
    ``search`` / ``failed`` when every answer is), and their calls stay whole.
    """
    answers = result_messages(turn)
    infos = [_info(a, calls.get(a.tool_call_id)) for a in answers]
    sizes = [counter.count_message(a) for a in answers]
    if len(infos) == 1:
        name, args, kind, target = infos[0]
    else:
        name = ", ".join(dict.fromkeys(info[0] for info in infos))
        args = "[" + ", ".join(info[1] for info in infos) + "]"
        kinds = {info[2] for info in infos}
        kind = kinds.pop() if len(kinds) == 1 and kinds <= _SHARED_KINDS else "other"
        target = None
    blocks = [
        {**block, (result_keys(block) or ("", "content"))[1]: _placeholder_text(info[0], size)}
        for block, info, size in zip(block_dicts(turn), infos, sizes, strict=True)
    ]
    if any(b.get("type") in DECISION_TYPES for b in block_dicts(turn)) or is_whole_output(turn):
        kind, target = "other", None  # no file's output: never re-attached as one
    call = calls.get(answers[0].tool_call_id) if len(answers) == 1 else None
    edit = cut_inputs and kind == "edit" and call is not None
    saving = cut_saving(call[1], counter.count_text) if edit and call else 0
    size = counter.count_message(turn)
    copy = turn.model_copy(update={"content": blocks})
    placeholder = (
        turn
        if is_whole_output(turn)
        else stamp(copy, CLEARED_KIND, of=message_id(turn), tokens=size)
    )
    return ToolResult(
        i,
        name,
        args,
        size,
        kind,
        target,
        message_id(turn),
        placeholder_size=counter.count_message(placeholder),
        call_saving=saving,
        call_id=answers[0].tool_call_id,
        placeholder=placeholder,
    )


TOOL_RESULTS: Final = _ToolResultsFact(cut_inputs=True)
"""The :class:`~langchain_builderforce_memory.facts.Fact` of a record's tool results."""

TOOL_RESULTS_WHOLE_CALLS: Final = _ToolResultsFact(cut_inputs=False)
"""The same, for a clear tier that leaves every call whole (``clear_edit_inputs=False``):
a fact of its own, so what is derived from the results (cut points, per-horizon answers)
is never shared between the two."""


def results_fact(*, cut_inputs: bool) -> _ToolResultsFact:
    """:data:`TOOL_RESULTS`, or :data:`TOOL_RESULTS_WHOLE_CALLS` for ``clear_edit_inputs=False``."""
    return TOOL_RESULTS if cut_inputs else TOOL_RESULTS_WHOLE_CALLS


def tool_results(
    convo: Sequence[BaseMessage], counter: TokenCounter, *, facts: RecordFacts | None = None
) -> ToolResults:
    """Every tool result in ``convo`` with its call, size and kind, in order.

    ``facts``: the conversation's :class:`~langchain_builderforce_memory.facts.RecordFacts`
    (synced here to ``convo``): then a turn counts only the results new since the last.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_builderforce_memory.tokens import ApproximateTokenCounter
        >>> call = AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "a.py"},
        ...                                   "id": "c1"}])
        >>> [(r.kind, r.target) for r in tool_results(
        ...     [HumanMessage("go"), call, ToolMessage("code", tool_call_id="c1")],
        ...     ApproximateTokenCounter())]
        [('read', 'a.py')]
    """
    facts = facts if facts is not None else RecordFacts(counter)
    counter_of(counter, facts, where="tool_results")
    facts.sync(convo)
    return facts.get(TOOL_RESULTS).results


def cleared_result(message: ToolMessage, result: ToolResult) -> ToolMessage:
    """The one-line stamped placeholder a cleared result shows in the view.

    Example:
        >>> r = ToolResult(3, "read_file", '{"path": "a.py"}', 2_000, "read", "a.py")
        >>> cleared_result(ToolMessage("...", tool_call_id="c1"), r).content[:45]
        '[cleared from this view: read_file returned 2'
    """
    held = result.placeholder
    if isinstance(held, ToolMessage) and held.tool_call_id == message.tool_call_id:
        return held
    text = _placeholder_text(result.name, result.size)
    # A custom tool's output block keeps its shape, or it goes over as another item kind.
    content = with_cut_text(message, text) if has_structure(message) else text
    copy = message.model_copy(update={"content": content})
    of = result.message_id or message_id(message)
    return stamp(copy, CLEARED_KIND, of=of, tokens=result.size)


def shown_cleared(message: BaseMessage, result: ToolResult) -> BaseMessage | None:
    """What ``message`` (the result ``result`` reads) shows when cleared, or ``None``.

    A ``ToolMessage``'s :func:`cleared_result`; an Anthropic-native turn of results, the
    placeholder made when it was first seen.

    Example:
        >>> r = ToolResult(3, "read_file", '{"path": "a.py"}', 2_000, "read", "a.py")
        >>> shown_cleared(ToolMessage("...", tool_call_id="c1"), r).content[:24]
        '[cleared from this view:'
    """
    if isinstance(message, ToolMessage):
        return cleared_result(message, result)
    held = result.placeholder
    return held if held is not None and is_tool_result_turn(message) else None


_PLACEHOLDER_START: Final = "[cleared from this view: "
_PLACEHOLDER_END: Final = " tokens; to see its output again, make the same call again]"


def _placeholder_text(name: str, size: int) -> str:
    """A cleared result's one line: the tool and the size of what it returned.

    Not the call's arguments: the call it answers stays in the view above it, paired by
    its id, so naming them again would be paid for on every request the placeholder is in.
    """
    return f"{_PLACEHOLDER_START}{name} returned {size}{_PLACEHOLDER_END}"


_PLACEHOLDER_SIZE: Final = re.compile(r" returned (\d+)" + re.escape(_PLACEHOLDER_END) + r"\Z")


def cleared_tokens(message: BaseMessage, text: str) -> int | None:
    """The tokens a cleared result's placeholder ``text`` says its output was, else ``None``.

    ``text`` is the placeholder only when ``message`` is stamped cleared: a tool's own
    output that happens to read like one is its output.

    Example:
        >>> r = ToolResult(3, "read_file", '{"path": "a.py"}', 2_000, "read", "a.py")
        >>> shown = cleared_result(ToolMessage("...", tool_call_id="c1"), r)
        >>> cleared_tokens(shown, shown.text)
        2000
        >>> cleared_tokens(ToolMessage("x", tool_call_id="c1"), "x") is None
        True
    """
    if not is_stamped(message, CLEARED_KIND) or not text.startswith(_PLACEHOLDER_START):
        return None
    found = _PLACEHOLDER_SIZE.search(text)
    return int(found.group(1)) if found else None


def cleared_call(
    message: AIMessage, results: Sequence[ToolResult], copies: Copies | None = None
) -> AIMessage:
    """``message`` with the long argument values of the calls ``results`` answer cut.

    Stamped cleared, with the tokens cut. ``copies``: the conversation's, so a view shows
    the same object turn after turn while its horizon holds (without, made anew).

    Example:
        >>> call = AIMessage("", tool_calls=[{"name": "write_file", "id": "c1",
        ...     "args": {"path": "a.py", "content": "x = 1; " * 500}}])
        >>> r = ToolResult(2, "write_file", "{}", 3, "edit", "a.py", call_saving=900,
        ...                call_id="c1")
        >>> cleared_call(call, [r]).tool_calls[0]["args"]["content"].strip()[:20]
        '[... 3,500 character'
    """
    ids = frozenset(r.call_id for r in results)
    tokens = sum(r.call_saving for r in results)

    def make() -> AIMessage:
        copy = with_cut_args(message, 0, ids)
        return stamp(copy, CLEARED_KIND, of=message_id(message), tokens=tokens)

    if copies is None:
        return make()
    # Keyed by where its first result sits, not by message_id (a hash of the whole call
    # when the message has no id): a turn looks each cleared call up again.
    key = (CLEARED_KIND, min(r.index for r in results), ids)
    return copies.get(key, (message, message.content), make)
