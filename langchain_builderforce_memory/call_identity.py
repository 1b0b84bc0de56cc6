"""Call identity: calls that carry no id, and call ids used twice.

Anthropic rejects a ``tool_use`` without an id and an id used by two calls. The repair
(:func:`~langchain_builderforce_memory.validity.repair_request`) leaves an id-less call out
of the view (nothing can answer it) and gives a reused id a fresh one, in every place the
call and its answer name it.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_builderforce_memory.blocks import call_id_key, call_ids, result_keys

__all__ = ["idless_calls", "renamed_answer", "unique_calls"]


def idless_calls(message: AIMessage) -> list[str]:
    """The names of ``message``'s calls that carry no id (nothing can answer them)."""
    names = [str(c.get("name") or "tool") for c in message.tool_calls if not c.get("id")]
    if isinstance(message.content, list):
        names += [
            str(b.get("name") or "tool")
            for b in message.content
            if isinstance(b, dict) and b.get("type") == "tool_use" and not b.get("id")
        ]
    return names


def unique_calls(
    message: AIMessage, used: set[str], repairs: list[str]
) -> tuple[AIMessage, dict[str, str]]:
    """``message`` with id-less calls dropped and reused call ids renamed (a copy).

    Returns the copy and the renames (old id -> new id) its results must follow. A call
    without an id cannot be answered, so the view leaves it out (the record keeps it); a
    reused id (an app whose id counter restarted) gets a fresh one, ``<id>_<n>``, within
    Anthropic's id alphabet and OpenAI's 40 characters.
    """
    dropped = idless_calls(message)
    renames: dict[str, str] = {}
    for call_id, _name in call_ids(message):
        if call_id in used:
            renames[call_id] = _fresh_id(call_id, used)
        used.add(renames.get(call_id, call_id))
    if not dropped and not renames:
        return message, renames
    for name in dropped:
        repairs.append(f"left out a {name} tool call that has no id")
    for old, new in renames.items():
        repairs.append(f"renamed the reused tool call id {old!r} to {new!r}")

    calls = [{**c, "id": _renamed(c.get("id"), renames)} for c in message.tool_calls if c.get("id")]
    invalid = [{**c, "id": _renamed(c.get("id"), renames)} for c in message.invalid_tool_calls]
    content = message.content
    if isinstance(content, list):
        content = [
            _renamed_call_block(b, renames)
            for b in content
            if not (isinstance(b, dict) and b.get("type") == "tool_use" and not b.get("id"))
        ]
    update = {"content": content, "tool_calls": calls, "invalid_tool_calls": invalid}
    return message.model_copy(update=update), renames


MAX_ID_CHARS = 40
"""OpenAI refuses a tool call id longer than this ("string too long. Expected a string with
maximum length 40"), whoever made the id."""


def _fresh_id(call_id: str, used: set[str]) -> str:
    """``<id>_<n>`` for the least ``n`` from 2 not in ``used``, the id cut to fit 40 chars.

    Example:
        >>> _fresh_id("t1", {"t1", "t1_2"}), len(_fresh_id("c" * 40, {"c" * 40}))
        ('t1_3', 40)
    """
    n = 2
    while True:
        suffix = f"_{n}"
        fresh = call_id[: MAX_ID_CHARS - len(suffix)] + suffix
        if fresh not in used:
            return fresh
        n += 1


def _renamed(call_id: object, renames: dict[str, str]) -> object:
    return renames.get(call_id, call_id) if isinstance(call_id, str) else call_id


def _renamed_call_block(
    block: str | dict[str, object], renames: dict[str, str]
) -> str | dict[str, object]:
    """A call block with its id renamed, in every shape :func:`call_ids` reads.

    ``tool_use``, v1 ``tool_call``, a Responses ``function_call``'s ``call_id``: the block
    and ``tool_calls`` must still name one call.
    """
    if not renames or not isinstance(block, dict):
        return block
    key = call_id_key(block)
    return {**block, key: _renamed(block.get(key), renames)} if key else block


def _renamed_result(
    block: str | dict[str, object], renames: dict[str, str]
) -> str | dict[str, object]:
    """``block`` answering the new id, if it is a result block answering a renamed call."""
    if not isinstance(block, dict) or (keys := result_keys(block)) is None:
        return block
    answered = block.get(keys[0])
    if not isinstance(answered, str) or answered not in renames:
        return block
    return {**block, keys[0]: renames[answered]}


def renamed_answer(message: BaseMessage, renames: dict[str, str]) -> BaseMessage:
    """A tool result answering a renamed call, as a copy answering the new id.

    A ``ToolMessage``, or an Anthropic-native user turn's ``tool_result`` blocks.
    """
    if not renames:
        return message
    if isinstance(message, ToolMessage):
        if message.tool_call_id in renames:
            return message.model_copy(update={"tool_call_id": renames[message.tool_call_id]})
        return message
    if not isinstance(message.content, list):
        return message
    content = [_renamed_result(b, renames) for b in message.content]
    return message.model_copy(update={"content": content})
