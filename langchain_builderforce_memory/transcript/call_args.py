"""Long argument values of a call, cut in the view: a written file, a patch, a heredoc.

An answered call's arguments are what the model wrote, and the tool has acted on them
since: the whole file a ``Write`` created, the patch ``apply_patch`` applied. In a coding
agent's transcript they are often its largest messages, and kept whole they take the room
of the directive (in a recorded Claude Code run at 8k, one 11k-character ``Write`` left
the plan it carried out cut to a stub). The elision step (:mod:`.elide`) cuts them the way
it cuts a long tool result: every string value longer than the cut keeps its head and
end, with a marker between. Keys, paths and short values stay, so the view still says
which file was written and how.

The copy's ``tool_calls`` and its ``tool_use`` / ``tool_call`` / ``function_call``
blocks and OpenAI ``additional_kwargs["tool_calls"]`` agree, since providers read one or
the other; JSON argument strings stay valid JSON. The record is never touched.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from typing import Final

from langchain_core.messages import AIMessage, BaseMessage

from langchain_builderforce_memory.blocks import call_id_key, parsed_arguments
from langchain_builderforce_memory.jsontext import json_text

__all__ = ["SHORT", "cut_saving", "longest_value", "with_cut_args"]

SHORT: Final = 160
"""Values of at most this many characters are never cut: paths, flags, a command line."""

_HEAD_SHARE: Final = 0.6
"""Of what a cut value keeps, the share given to its head (the rest to its end)."""


def _marker(cut: int) -> str:
    return f"\n[... {cut:,} characters cut here in this view ...]\n"


_DEEPEST: Final = 64
"""Nesting past which values are left as they are: a model can be made to write arguments
nested hundreds of levels deep, and this walk must not raise ``RecursionError``."""


def _cut(value: object, keep: int, depth: int = 0) -> object:
    """``value`` with every string leaf over ``SHORT`` characters cut to ``keep`` and a marker.

    A leaf the cut would not shorten (``keep`` plus the marker reach its length) is kept
    whole.
    """
    if isinstance(value, str):
        if len(value) <= SHORT:
            return value
        marker = _marker(len(value) - keep)
        if len(value) <= keep + len(marker):
            return value  # a cut that would save nothing
        head = int(keep * _HEAD_SHARE)
        end = keep - head
        tail = value[len(value) - end :] if end else ""
        return value[:head] + marker + tail
    if depth >= _DEEPEST:
        return value
    if isinstance(value, Mapping):
        return {k: _cut(v, keep, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut(v, keep, depth + 1) for v in value]
    return value


def _cut_json(raw: object, keep: int) -> object:
    """A JSON argument string cut inside its values, so it stays JSON; else cut as text."""
    if not isinstance(raw, str):
        return _cut(raw, keep)
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, or nested past the limit
        return _cut(raw, keep)
    return json_text(_cut(parsed, keep))


def _block_id(block: Mapping[str, object]) -> object:
    return block.get(call_id_key(block) or "id")


def _cut_block(block: object, keep: int, only: Collection[str] | None) -> object:
    if not isinstance(block, Mapping) or (only is not None and _block_id(block) not in only):
        return block
    kind = block.get("type")
    if kind == "tool_use":
        out = dict(block)
        if block.get("input"):
            out["input"] = _cut(block["input"], keep)
        if isinstance(block.get("partial_json"), str):
            out["partial_json"] = _cut_json(block["partial_json"], keep)
        return out
    if kind == "tool_call":
        return {**block, "args": _cut(block.get("args"), keep)}
    if kind == "function_call":
        return {**block, "arguments": _cut_json(block.get("arguments"), keep)}
    if kind == "custom_tool_call":  # what goes over the wire: its tool_calls entry is not
        return {**block, "input": _cut(block.get("input"), keep)}
    return block


def _cut_legacy(call: object, keep: int, only: Collection[str] | None) -> object:
    """An OpenAI ``additional_kwargs["tool_calls"]`` entry, its ``arguments`` cut."""
    if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
        return call
    if only is not None and call.get("id") not in only:
        return call
    function = dict(call["function"])
    function["arguments"] = _cut_json(function.get("arguments"), keep)
    return {**call, "function": function}


def _leaves(value: object, depth: int = 0) -> list[int]:
    if isinstance(value, str):
        return [len(value)]
    if depth >= _DEEPEST:
        return []
    if isinstance(value, Mapping):
        return [n for v in value.values() for n in _leaves(v, depth + 1)]
    if isinstance(value, list):
        return [n for v in value for n in _leaves(v, depth + 1)]
    return []


def longest_value(message: BaseMessage) -> int:
    """The longest string argument value of ``message``'s calls (0 without calls).

    Example:
        >>> m = AIMessage("", tool_calls=[{"name": "Write", "id": "c1",
        ...                                "args": {"path": "a.py", "content": "x" * 500}}])
        >>> longest_value(m)
        500
    """
    if not isinstance(message, AIMessage):
        return 0
    values: list[object] = [call["args"] for call in message.tool_calls]
    values += [call.get("args") for call in message.invalid_tool_calls]
    if isinstance(message.content, list):
        values += [
            parsed_arguments(
                b.get("input") or b.get("args") or b.get("arguments") or b.get("partial_json")
            )
            for b in message.content
            if isinstance(b, Mapping)
            and b.get("type") in ("tool_use", "tool_call", "function_call")
        ]
    return max((n for v in values for n in _leaves(v)), default=0)


def with_cut_args(message: AIMessage, keep: int, only: Collection[str] | None = None) -> AIMessage:
    """A copy of ``message`` whose call argument values keep at most ``keep`` characters.

    Values of :data:`SHORT` characters or fewer are kept whole; a longer one keeps its head
    and end around a marker naming how many characters were cut. Ids, names and keys are
    unchanged, so the call still pairs with its answer. ``only``: the ids of the calls to
    cut (``None``: every call).

    Example:
        >>> m = AIMessage("", tool_calls=[{"name": "Write", "id": "c1",
        ...                                "args": {"path": "a.py", "content": "x" * 5_000}}])
        >>> cut = with_cut_args(m, 200)
        >>> cut.tool_calls[0]["args"]["path"], len(cut.tool_calls[0]["args"]["content"]) < 400
        ('a.py', True)
    """

    def chosen(call: Mapping[str, object]) -> bool:
        return only is None or call.get("id") in only

    update: dict[str, object] = {
        "tool_calls": [
            {**c, "args": _cut(c["args"], keep)} if chosen(c) else c for c in message.tool_calls
        ],
        "invalid_tool_calls": [
            {**c, "args": _cut(c.get("args"), keep)} if chosen(c) else c
            for c in message.invalid_tool_calls
        ],
    }
    if isinstance(message.content, list):
        update["content"] = [_cut_block(b, keep, only) for b in message.content]
    legacy = message.additional_kwargs.get("tool_calls")
    if isinstance(legacy, list):
        extra = dict(message.additional_kwargs)
        extra["tool_calls"] = [_cut_legacy(c, keep, only) for c in legacy]
        update["additional_kwargs"] = extra
    return message.model_copy(update=update)


def cut_saving(args: object, count_text: Callable[[str], int]) -> int:
    """Tokens cutting ``args``' long values to their markers saves (0 when none is long).

    Example:
        >>> from langchain_builderforce_memory.tokens import estimate_text_tokens
        >>> cut_saving({"path": "a.py"}, estimate_text_tokens)
        0
        >>> cut_saving({"path": "a.py", "content": "def f(): pass; " * 300},
        ...            estimate_text_tokens) > 1_000
        True
    """
    if max(_leaves(args), default=0) <= SHORT:
        return 0
    whole = json_text(args)
    cut = json_text(_cut(args, 0))
    return max(0, count_text(whole) - count_text(cut))
