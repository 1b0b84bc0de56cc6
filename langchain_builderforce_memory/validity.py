"""Request validity: the strict-provider checks and the repair that satisfies them.

Every view this package builds goes to a model, and the strictest providers reject a
request that (a) has a system message after the first non-system one, (b) does not
begin its conversation with a user turn (Gemini: ``400 INVALID_ARGUMENT``), (c) has a
tool result that does not follow the call it answers, or (d) has a call that is never
answered (OpenAI, Anthropic). :func:`request_problems` checks exactly those rules and
:func:`repair_request` makes any message list satisfy them, saying what it changed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory.blocks import (
    call_ids,
    result_keys,
    tool_result_ids,
)
from langchain_builderforce_memory.call_identity import idless_calls, renamed_answer, unique_calls
from langchain_builderforce_memory.messages import (
    Role,
    answered_ids,
    answers_legacy_call,
    leading_system_count,
    message_id,
    role_of,
    stamp,
)
from langchain_builderforce_memory.outputs import (
    answer_kind_problem,
    call_kinds,
    computer_output_problem,
    reshaped_answer,
    shaped_answer,
)
from langchain_builderforce_memory.turns import thinking_first, thinking_problems, thinking_restart

__all__ = ["as_sent_opening", "repair_request", "request_problems", "system_as_user"]

_NO_KINDS: Mapping[str, str] = MappingProxyType({})
Pending = tuple[str, str | None, str]
"""An open call: its name, its parse error (an invalid call), its call block's type."""

# The repairs were logged under this name before they moved out of messages.py: logging
# configured for it keeps working.
logger = logging.getLogger("langchain_builderforce_memory.messages")


def _answer_problems(
    i: int, ids: Sequence[str | None], open_calls: dict[str, int], problems: list[str]
) -> None:
    for call_id in ids:
        if call_id is None or call_id not in open_calls:
            problems.append(
                f"message {i}: tool result {call_id!r} does not follow the call it answers"
            )
        else:
            del open_calls[call_id]


def request_problems(messages: Sequence[BaseMessage], *, thinking: bool | None = None) -> list[str]:
    """What a strict provider would reject in ``messages``; ``[]`` when it is valid.

    The rules: system messages only in the leading run; then a user message first; every
    tool result directly follows (within its unit) the assistant message that called it;
    every tool call is answered (``invalid_tool_calls`` and Anthropic ``tool_use`` blocks
    included); a human turn of ``tool_result`` blocks is a tool result; thinking blocks
    stay first, and the current turn keeps its thinking while its tool loop runs (see
    :func:`thinking_problems`; ``thinking=True`` when the provider has thinking on).
    Unknown roles are reported, not raised.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
        >>> request_problems([SystemMessage("s"), HumanMessage("hi"), AIMessage("hello")])
        []
        >>> request_problems([SystemMessage("s"), AIMessage("hello")])[0][:46]
        'message 1: the first non-system message is ass'
    """
    problems: list[str] = []
    roles = read_roles(messages, 0, problems)
    first = opening_problems(roles, problems)
    walk_problems(messages, roles[first:], first, {}, problems)
    if roles and None not in roles:
        problems.extend(thinking_problems(messages, thinking=thinking))
    return problems


def opening_problems(roles: Sequence[Role | None], problems: list[str]) -> int:
    """Where the conversation begins after its leading system messages (problems added).

    It must begin with a user turn, and there must be one.
    """
    first = 0
    while first < len(roles) and roles[first] == "system":
        first += 1
    if first < len(roles) and roles[first] != "user":
        problems.append(
            f"message {first}: the first non-system message is {roles[first]}; "
            "strict providers need a user message first"
        )
    if first == len(roles):
        problems.append("no user message: strict providers need at least one user turn")
    return first


def read_roles(
    messages: Sequence[BaseMessage], start: int, problems: list[str]
) -> list[Role | None]:
    """The provider role of each of ``messages[start:]``; ``None`` (reported) when it has none."""
    roles: list[Role | None] = []
    for i in range(start, len(messages)):
        try:
            roles.append(role_of(messages[i]))
        except (ValueError, TypeError) as exc:
            roles.append(None)
            problems.append(f"message {i}: {exc}")
    return roles


def walk_problems(
    messages: Sequence[BaseMessage],
    roles: Sequence[Role | None],
    start: int,
    used: dict[str, int],
    problems: list[str],
    closed: list[int] | None = None,
) -> None:
    """:func:`request_problems`' call rules over ``messages[start:]`` (``roles``: theirs).

    Each tool result follows the call it answers, every call is answered, no call id is
    used twice. No call may be open before ``start``; ``used`` holds the call ids made
    before it (id -> message) and gains this walk's. ``closed`` gains each ``i + 1``
    where no call is open after message ``i``: where a later walk may resume.
    """
    open_calls: dict[str, int] = {}
    kinds: Mapping[str, str] = _NO_KINDS  # the open calls' block types
    for i in range(start, len(messages)):
        role = roles[i - start]
        m = messages[i]
        calls = call_ids(m) if role == "assistant" else []
        _identity_problems(i, m, role, calls, used, problems)
        if role == "system":
            problems.append(f"message {i}: a system message after the conversation began")
        if role == "tool":
            if (shot := computer_output_problem(m)) is not None:
                problems.append(f"message {i}: {shot}")
            if not answers_legacy_call(m, messages[i - 1] if i else None):
                ids = answered_ids(m) or [None]
                if (
                    ids[0] in open_calls
                    and (kinds or not _plain(m))
                    and (wrong := _kind_problem(kinds, ids[0], m))
                ):
                    problems.append(f"message {i}: {wrong}")
                _answer_problems(i, ids, open_calls, problems)
        else:
            if role == "user":  # an Anthropic user turn may answer calls beside its text
                _answer_problems(i, tool_result_ids(m), open_calls, problems)
            # Anything but a tool result closes the open unit: its unanswered calls stay so.
            for call_id, at in open_calls.items():
                problems.append(f"message {at}: tool call {call_id!r} is never answered")
            open_calls = {}
            for call_id, _name in calls:
                open_calls[call_id] = i
            kinds = call_kinds(m) if calls and isinstance(m.content, list) else _NO_KINDS
        if closed is not None and not open_calls:
            closed.append(i + 1)
    for call_id, at in open_calls.items():
        problems.append(f"message {at}: tool call {call_id!r} is never answered")


def _kind_problem(kinds: Mapping[str, str], call_id: str | None, m: BaseMessage) -> str | None:
    """Why the output kind of tool result ``m`` cannot answer open call ``call_id``."""
    if not isinstance(m, ToolMessage) or call_id is None:
        return None
    return answer_kind_problem(kinds.get(call_id, ""), m)


def _plain(m: BaseMessage) -> bool:
    """A text answer to a call with no call block: a function call's output, as it must be."""
    return isinstance(m.content, str) and not m.additional_kwargs


def _placeholder(message: BaseMessage) -> HumanMessage:
    """What an empty user turn is sent as: a stamped placeholder text."""
    placeholder = HumanMessage("[empty message]", id=message.id)
    return stamp(placeholder, "repair", reason="empty", of=message_id(message))


def as_sent_opening(message: BaseMessage) -> BaseMessage:
    """``message`` as a request opening on it sends it.

    A view's floor is the system prompt plus the turn it opens on; an empty user turn is
    sent as a placeholder text (see :func:`repair_request`), which may count more than the
    empty turn itself, so the floor counts the placeholder.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> as_sent_opening(HumanMessage("")).content
        '[empty message]'
        >>> as_sent_opening(HumanMessage("hi")).content
        'hi'
    """
    return _placeholder(message) if _is_empty_turn(message) else message


def _is_empty_turn(message: BaseMessage) -> bool:
    """A user turn with no content at all (Anthropic rejects empty message content)."""
    if not isinstance(message, HumanMessage):
        return False
    content = message.content
    if isinstance(content, str):
        return not content.strip()
    return all(
        (isinstance(b, str) and not b.strip())
        or (isinstance(b, dict) and b.get("type") == "text" and not str(b.get("text", "")).strip())
        for b in content
    )


def _identity_problems(
    i: int,
    m: BaseMessage,
    role: Role | None,
    calls: list[tuple[str, str]],
    used: dict[str, int],
    problems: list[str],
) -> None:
    """Calls without ids, call ids used twice, empty user turns: what Anthropic rejects.

    ``calls`` is ``call_ids(m)`` (read once by the caller, which also opens them).
    """
    if role == "user" and _is_empty_turn(m):
        problems.append(f"message {i}: an empty user turn; strict providers reject it")
    if role != "assistant" or not isinstance(m, AIMessage):
        return
    for name in idless_calls(m):
        problems.append(f"message {i}: a {name} tool call has no id; nothing can answer it")
    for call_id, _name in calls:
        if call_id in used:
            problems.append(
                f"message {i}: tool call id {call_id!r} was already used by message "
                f"{used[call_id]}; strict providers need unique ids"
            )
        else:
            used[call_id] = i


def _placeholder_answer(call_id: str, name: str, error: str | None, kind: str) -> BaseMessage:
    if error is not None:
        reason = "invalid_tool_call"
        text = (
            f"Error: the {name} call {call_id} was not run: its arguments could not "
            f"be parsed ({error}). Call the tool again with valid JSON arguments."
        )
    else:
        reason, text = "unanswered_call", f"[no result was recorded for the {name} call {call_id}]"
    answer = ToolMessage(content=text, tool_call_id=call_id, name=name, status="error")
    return shaped_answer(kind, stamp(answer, "repair", reason=reason))


def _close_unit(
    out: list[BaseMessage],
    pending: dict[str, Pending],
    deferred: list[BaseMessage],
    repairs: list[str],
) -> None:
    """End the open tool unit: answer its unanswered calls, then release what waited."""
    for call_id, (name, error, kind) in pending.items():
        out.append(_placeholder_answer(call_id, name, error, kind))
        what = "an error result (invalid arguments)" if error is not None else "a placeholder"
        repairs.append(f"answered tool call {call_id!r} ({name}) with {what}")
    pending.clear()
    out.extend(deferred)
    deferred.clear()


def _tool_call_id_of(message: BaseMessage) -> str | None:
    """The (first) call id a tool result answers (see :func:`answered_ids`)."""
    ids = answered_ids(message)
    return ids[0] if ids else None


def _regroup_results(messages: Sequence[BaseMessage], repairs: list[str]) -> list[BaseMessage]:
    """``messages`` with each tool result moved back into its call's unit.

    When a message (a user typing while a tool ran) came between a call and its result, the
    result is real data: answering the call with a placeholder and dropping the result
    as an orphan would lose it. A result is moved only to a call made BEFORE it that no
    earlier result answered; anything else stays where it is (and the repair drops it).
    """
    issued: dict[str, int] = {}  # call id -> index of the assistant message making it
    claimed: dict[int, list[int]] = {}  # assistant index -> indices of its results
    moved: set[int] = set()
    unit_owner = -1  # the assistant message whose unit is open at this point
    for j, m in enumerate(messages):
        role = role_of(m) if isinstance(m, BaseMessage) else None
        if role == "tool":
            call_id = _tool_call_id_of(m)
            owner = issued.pop(call_id, -1) if call_id is not None else -1
            if owner >= 0:
                claimed.setdefault(owner, []).append(j)
                if owner != unit_owner:
                    moved.add(j)
            continue
        if role == "system":
            continue  # a late system message is deferred past the unit, not a break in it
        unit_owner = -1
        if role == "assistant" and isinstance(m, AIMessage) and m.tool_calls:
            unit_owner = j
            for call in m.tool_calls:
                issued.setdefault(str(call.get("id")), j)
    if not moved:
        return list(messages)
    out: list[BaseMessage] = []
    for j, m in enumerate(messages):
        if j in moved:
            continue
        out.append(m)
        for k in claimed.get(j, ()):
            if k in moved:
                out.append(messages[k])
                repairs.append(
                    f"moved tool result {_tool_call_id_of(messages[k])!r} back after its "
                    "call (a message had come between them)"
                )
    return out


def system_as_user(message: BaseMessage) -> HumanMessage:
    """A system message met after the conversation began, as a stamped user message.

    Strict providers reject a system message mid-conversation; its words still matter,
    so they are kept as a user message ("[system] ...") that a later pass recognises.

    Example:
        >>> from langchain_core.messages import SystemMessage
        >>> system_as_user(SystemMessage("be brief")).content
        '[system] be brief'
    """
    text = message.text if isinstance(message.content, str | list) else str(message.content)
    return stamp(HumanMessage(f"[system] {text}", id=message.id), "repair", reason="system")


def _pending_calls(message: AIMessage) -> dict[str, Pending]:
    """The calls ``message`` opens: id -> (name, parse error, call block type)."""
    errors = {
        str(bad.get("id")): str(bad.get("error") or "invalid JSON arguments")
        for bad in message.invalid_tool_calls
        if bad.get("id")
    }
    valid = {str(c.get("id")) for c in message.tool_calls}
    kinds = call_kinds(message)
    return {
        call_id: (
            name,
            errors.get(call_id) if call_id not in valid else None,
            kinds.get(call_id, ""),
        )
        for call_id, name in call_ids(message)
    }


def _keep_answers(
    m: BaseMessage, pending: dict[str, Pending], repairs: list[str]
) -> BaseMessage | None:
    """``m`` with only the tool results that answer an open call (``None``: none left).

    A ``ToolMessage`` is kept or dropped whole; an Anthropic user turn loses the
    ``tool_result`` blocks whose call is not open (a copy).
    """
    if not isinstance(m, HumanMessage) or not isinstance(m.content, list):
        call_id = answered_ids(m)[0]
        if call_id is not None and call_id in pending:
            kind = pending.pop(call_id)[2]
            if isinstance(m, ToolMessage) and (wrong := answer_kind_problem(kind, m)):
                repairs.append(f"sent the answer to {call_id!r} as a {kind} output: {wrong}")
                return reshaped_answer(kind, m)
            return m
        repairs.append(f"dropped tool result {call_id!r}: its call is not in front of it")
        return None
    kept: list[str | dict[str, object]] = []
    for block in m.content:
        if isinstance(block, dict) and (keys := result_keys(block)) is not None:
            call_id = str(block.get(keys[0]))
            if call_id not in pending:
                repairs.append(f"dropped tool result {call_id!r}: its call is not in front of it")
                continue
            del pending[call_id]
        kept.append(block)
    if len(kept) == len(m.content):
        return m
    return m.model_copy(update={"content": kept}) if kept else None


def repair_request(messages: Sequence[BaseMessage]) -> tuple[list[BaseMessage], list[str]]:
    """A copy of ``messages`` that passes :func:`request_problems`, and what was changed.

    Repairs, each logged by the caller through the returned list:
      * a tool result separated from its call by another message (a user typing while
        the tool ran) is moved back after its call: it is real data;
      * a tool result whose call is not in front of it is dropped (an orphan; for an
        Anthropic user turn, its orphan ``tool_result`` blocks);
      * a call never answered gets a stamped placeholder result (``status="error"``), so
        the model sees that the call happened and returned nothing; an invalid tool call
        (unparsable arguments) gets a stamped error result saying so;
      * an answer in the wrong output kind for its OpenAI Responses call (a middleware's
        plain-text error for a custom-tool, computer or ``apply_patch`` call) is sent in
        the call's own kind, its text kept (:func:`~.outputs.reshaped_answer`);
      * a reused call id gets a fresh one (``<id>_<n>``) in every place the call names it
        (``tool_calls``, its ``tool_use`` / ``function_call`` / v1 ``tool_call`` block,
        ``invalid_tool_calls``) and in the result answering it; a call without an id,
        which nothing can answer, is left out;
      * an empty user turn, or one left empty by dropping its orphan results, gets a
        stamped placeholder text;
      * thinking blocks behind other content (a plain string in a content list included)
        are moved first in their message;
      * a system message after the conversation began becomes a stamped user message
        ("[system] ..."), moved after the tool unit it interrupted;
      * a conversation that does not begin with a user turn gets a stamped placeholder
        user turn in front.

    A current turn whose thinking block was lost cannot be repaired (the block is the
    provider's, signed): it stays reported by :func:`request_problems`.
    A valid list comes back equal (same objects, in order) with no repairs.

    Example:
        >>> from langchain_core.messages import HumanMessage, ToolMessage
        >>> orphan = ToolMessage("x", tool_call_id="c9")
        >>> fixed, repairs = repair_request([HumanMessage("hi"), orphan])
        >>> [m.type for m in fixed], repairs
        (['human'], ["dropped tool result 'c9': its call is not in front of it"])
    """
    if not request_problems(messages):
        return list(messages), []
    return repaired_copy(messages)


def repaired_copy(messages: Sequence[BaseMessage]) -> tuple[list[BaseMessage], list[str]]:
    """:func:`repair_request` of ``messages`` already found invalid (not checked again)."""
    repairs: list[str] = []
    messages = _regroup_results(messages, repairs)
    lead = leading_system_count(messages)
    walk = _Walk(list(messages[:lead]), repairs)
    for m in messages[lead:]:
        walk.take(m)
    walk.close_unit()
    out = walk.out
    first = leading_system_count(out)
    if first == len(out) or role_of(out[first]) != "user":
        out.insert(
            first,
            stamp(
                HumanMessage("[The conversation continues from an earlier point.]"),
                "repair",
                reason="no_user_turn_first",
            ),
        )
        repairs.append("inserted a placeholder user turn: the conversation began with no user turn")
    restart = thinking_restart(out)
    if restart >= 0:
        _start_turn(out, restart)
        repairs.append("started a new turn where thinking begins: the turn opened without it")
    return out, repairs


def _start_turn(out: list[BaseMessage], at: int) -> None:
    """Make the assistant message at ``out[at]`` open a new turn, in place.

    A placeholder user turn goes before it. User messages right after tool results join
    their turn rather than start one, so a placeholder answer closes that turn first.
    """
    j = at - 1
    while j >= 0 and role_of(out[j]) == "user":
        j -= 1
    if j >= 0 and role_of(out[j]) == "tool":
        out.insert(j + 1, stamp(AIMessage("[paused]"), "repair", reason="thinking_turn"))
        at += 1
    if at == 0 or role_of(out[at - 1]) != "user":
        out.insert(at, stamp(HumanMessage("[continue]"), "repair", reason="thinking_turn"))


class _Walk:
    """:func:`repair_request`'s pass over the conversation, one message at a time."""

    __slots__ = ("deferred", "out", "pending", "renames", "repairs", "used")

    def __init__(self, out: list[BaseMessage], repairs: list[str]) -> None:
        self.out = out
        self.repairs = repairs
        self.deferred: list[BaseMessage] = []  # system messages met inside a tool unit
        self.pending: dict[str, Pending] = {}  # open call -> (name, error, block type)
        self.used: set[str] = set()  # every call id made so far
        self.renames: dict[str, str] = {}  # the open unit's reused call ids -> new ids

    def take(self, m: BaseMessage) -> None:
        """Add ``m`` to the repaired conversation (or drop, move or rewrite it)."""
        try:
            role = role_of(m)
        except (ValueError, TypeError) as exc:
            self.repairs.append(f"dropped a message that has no provider role: {exc}")
            return
        if role == "tool":
            if answers_legacy_call(m, self.out[-1] if self.out else None):
                self.out.append(m)  # a legacy function result: its call has no id
                return
            kept = _keep_answers(renamed_answer(m, self.renames), self.pending, self.repairs)
            if kept is not None:
                self.out.append(kept)
            return
        if role == "system":
            converted = system_as_user(m)
            self.repairs.append("turned a mid-conversation system message into a user message")
            (self.deferred if self.pending else self.out).append(converted)
            return
        if role == "user" and tool_result_ids(m):
            m = _keep_answers(m, self.pending, self.repairs) or m
        if role == "user" and _is_empty_turn(m):  # empty, or left empty by dropped results
            m = _placeholder(m)
            self.repairs.append("gave an empty user turn a placeholder text")
        self.close_unit()
        self.renames = {}
        if isinstance(m, AIMessage):
            m, moved = thinking_first(m)
            if moved:
                self.repairs.append(f"moved the thinking blocks of message {m.id!r} first")
            m, self.renames = unique_calls(m, self.used, self.repairs)
            self.pending.update(_pending_calls(m))
        self.out.append(m)

    def close_unit(self) -> None:
        """End the open tool unit: unanswered calls answered, deferred messages after it."""
        _close_unit(self.out, self.pending, self.deferred, self.repairs)


def log_repairs(repairs: Sequence[str], where: str) -> None:
    """Log what :func:`repair_request` changed, once per call site and turn."""
    if repairs:
        logger.warning("%s: repaired an invalid request: %s", where, "; ".join(repairs))
