"""Provider content shapes: what a message's content blocks mean for roles, calls and counts.

LangChain messages carry provider-native content blocks, and a request built from them
is only as valid as our reading of them:

- **Anthropic native.** An assistant turn lists ``tool_use`` blocks in its content (with
  or without matching ``tool_calls``); the answers come back as ``tool_result`` blocks in
  a USER turn. A human message made only of ``tool_result`` blocks is therefore a tool
  result, not a directive, and it answers the calls of the turn before it.
- **Thinking.** With extended thinking, the assistant turn that calls tools opens with
  ``thinking`` / ``redacted_thinking`` blocks, which must stay first and verbatim while
  its tool loop runs. OpenAI Responses keeps ``reasoning`` items the same way.
- **LangChain v1 content** (``output_version="v1"``). The same blocks in LangChain's
  standard types: Claude's thinking is a ``reasoning`` block (its signature in
  ``extras``), a redacted thought a ``non_standard`` block wrapping the native one, a
  call a ``tool_call`` block. langchain-anthropic turns them back into Anthropic's blocks
  on the way out, so the thinking rules hold for them as they are.
- **Invalid tool calls.** A call whose arguments did not parse is in
  ``invalid_tool_calls``; providers still send it as a call, so it needs an answer.

What a media block costs is :mod:`langchain_builderforce_memory.media`'s concern.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory.jsontext import json_text, without_opaque
from langchain_builderforce_memory.media import media_label, nested_media

__all__ = [
    "DECISION_TYPES",
    "THINKING_TYPES",
    "block_dicts",
    "call_id_key",
    "call_ids",
    "cuttable_text",
    "has_structure",
    "is_tool_result_turn",
    "legacy_function_call",
    "parsed_arguments",
    "reasoning_text",
    "result_keys",
    "result_messages",
    "result_parts",
    "tool_calls_of",
    "tool_result_ids",
    "valid_calls",
    "wire_type",
    "with_cut_text",
]

THINKING_TYPES: Final = frozenset(
    {"thinking", "redacted_thinking", "reasoning", "reasoning_content"}  # the last: Bedrock
)
"""Block types that carry a model's reasoning (Anthropic thinking, OpenAI Responses)."""


def wire_type(block: Mapping[str, object]) -> object:
    """A block's type as the provider receives it.

    LangChain v1 content wraps the provider blocks it has no standard type for (Anthropic's
    ``redacted_thinking``) in ``non_standard``, and the provider package unwraps them.

    Example:
        >>> wire_type({"type": "non_standard", "value": {"type": "redacted_thinking"}})
        'redacted_thinking'
    """
    value = block.get("value")
    if block.get("type") == "non_standard" and isinstance(value, Mapping):
        return value.get("type")
    return block.get("type")


_CALL_ID_KEYS: Final[Mapping[str, str]] = {
    "tool_use": "id",
    "tool_call": "id",
    "function_call": "call_id",  # a Responses item's ``id`` is the item's, not the call's
    "computer_call": "call_id",  # Responses calls a ToolMessage (or a user turn) answers
    "custom_tool_call": "call_id",
    "apply_patch_call": "call_id",  # answered by a user turn (see _RESULT_KEYS)
    "mcp_approval_request": "id",  # a remote MCP call awaiting the user's approval
    "tool_search_call": "call_id",  # when the client runs it (see call_id_key)
}
_UNNAMED: Final = dict(
    computer_call="computer", apply_patch_call="apply_patch", tool_search_call="tool_search"
)
"""The name a call block without one is known by."""
_OWN_ARGS: Final = {
    "computer_call": "action",
    "custom_tool_call": "input",
    "apply_patch_call": "operation",
}
"""Where a call block that is not a function call keeps its arguments."""
_CALL_BLOCK_TYPES: Final = frozenset(_CALL_ID_KEYS)
_RESULT_KEYS: Final[Mapping[str, tuple[str, str]]] = {
    "tool_result": ("tool_use_id", "content"),
    "apply_patch_call_output": ("call_id", "output"),  # sent as that Responses input item
    "mcp_approval_response": ("approval_request_id", "reason"),  # the user's decision
    "tool_search_output": ("call_id", "tools"),  # the tools a client-run search loaded
}
"""A user turn's result block type: the keys of the call id it answers and of its output."""
_RESULT_BLOCK_TYPES: Final = frozenset(_RESULT_KEYS)
DECISION_TYPES: Final = frozenset({"mcp_approval_response"})
"""Result blocks that hold the user's decision, not the call's output: OpenAI runs an
approved MCP call itself and puts its output in the assistant's next ``mcp_call`` item."""


def block_dicts(message: BaseMessage) -> list[Mapping[str, object]]:
    """The content blocks of ``message`` that are dicts (none for a string content).

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> block_dicts(AIMessage(["hi", {"type": "text", "text": "ok"}]))
        [{'type': 'text', 'text': 'ok'}]
    """
    content = message.content
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, Mapping)]


def call_id_key(block: Mapping[str, object]) -> str | None:
    """The key a call block keeps its call id under, or ``None`` for any other block.

    Example:
        >>> call_id_key({"type": "function_call", "call_id": "c1", "id": "fc_1"})
        'call_id'
        >>> call_id_key({"type": "tool_use", "id": "t1"}), call_id_key({"type": "text"})
        ('id', None)
    """
    kind = block.get("type")
    if kind == "tool_search_call" and block.get("execution") != "client":
        return None  # OpenAI ran the search: its output is in the same response
    return _CALL_ID_KEYS.get(kind) if isinstance(kind, str) else None


def call_ids(message: BaseMessage) -> list[tuple[str, str]]:
    """The calls an assistant message makes, as ``(id, name)``, in order, each once.

    ``tool_calls``, then ``tool_use`` / ``function_call`` content blocks not among them
    (Anthropic-native records), then ``invalid_tool_calls`` (providers send those as calls
    too, so they need an answer). Calls without an id cannot be answered and are skipped.

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> m = AIMessage(
        ...     [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
        ...     invalid_tool_calls=[{"name": "cat", "args": "{bad", "id": "t2", "error": None}],
        ... )
        >>> call_ids(m)
        [('t1', 'ls'), ('t2', 'cat')]
    """
    return [(key, name) for key, (name, _source) in _call_sources(message).items()]


def legacy_function_call(message: BaseMessage) -> Mapping[str, object] | None:
    """An assistant message's legacy OpenAI ``function_call``, else ``None``.

    The functions API before tool calls: one call in ``additional_kwargs``, with no id,
    answered by the ``FunctionMessage`` right after it. A message with tool calls sends
    those instead (``langchain-openai`` never sends both: OpenAI rejects them).

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> legacy_function_call(AIMessage("", additional_kwargs={
        ...     "function_call": {"name": "ls", "arguments": "{}"}}))
        {'name': 'ls', 'arguments': '{}'}
    """
    if not isinstance(message, AIMessage) or message.tool_calls or message.invalid_tool_calls:
        return None
    call = message.additional_kwargs.get("function_call")
    return call if isinstance(call, Mapping) else None


def parsed_arguments(raw: object) -> object:
    """A call's arguments as JSON text (``arguments``, ``partial_json``) parsed; else as is.

    Text that is not JSON (or is nested past the parser's limit) is returned unparsed.

    Example:
        >>> parsed_arguments('{"path": "a.py"}'), parsed_arguments("{bad")
        ({'path': 'a.py'}, '{bad')
    """
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return raw


def _block_args(block: Mapping[str, object]) -> object:
    if block.get("type") == "tool_use":
        return block.get("input")
    if block.get("type") == "tool_call":
        return block.get("args")
    if (own := _OWN_ARGS.get(str(block.get("type")))) is not None:
        return block.get(own)
    return parsed_arguments(block.get("arguments"))


def tool_calls_of(message: BaseMessage) -> list[dict[str, object]]:
    """The calls of :func:`call_ids` with their arguments, as ``{"id", "name", "args"}``.

    A call block of the content that ``tool_calls`` lacks (an Anthropic-native record)
    gives its ``input`` / ``args`` / parsed ``arguments``; an invalid call its raw text.

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> tool_calls_of(AIMessage([{"type": "tool_use", "id": "t1", "name": "ls",
        ...                           "input": {"path": "src"}}]))
        [{'id': 't1', 'name': 'ls', 'args': {'path': 'src'}}]
    """
    return [
        {"id": key, "name": name, "args": _args_of(source)}
        for key, (name, source) in _call_sources(message).items()
    ]


def _args_of(source: Mapping[str, object]) -> object:
    """A call's arguments: a ``tool_calls`` entry's ``args``, or a call block's own."""
    if "type" in source and source.get("type") in _CALL_BLOCK_TYPES:
        return _block_args(source)
    return source.get("args")


def _call_sources(message: BaseMessage) -> dict[str, tuple[str, Mapping[str, object]]]:
    """Each call of :func:`call_ids` by id: its name and the entry or block it came from.

    The arguments are read from the source only when asked (:func:`tool_calls_of`): the
    validity check reads ids and names on every turn, and a ``function_call`` block's
    arguments are JSON to parse.
    """
    if not isinstance(message, AIMessage):
        return {}
    found: dict[str, tuple[str, Mapping[str, object]]] = {}
    for call in message.tool_calls:
        if call.get("id"):
            found.setdefault(str(call["id"]), (str(call["name"]), call))
    for block in block_dicts(message):
        id_key = call_id_key(block)
        if id_key is not None:
            key = block.get(id_key)
            if isinstance(key, str) and key and key not in found:
                name = block.get("name") or _UNNAMED.get(str(block.get("type")), "tool")
                found[key] = (str(name), block)
    for bad in message.invalid_tool_calls:
        if bad.get("id"):
            found.setdefault(str(bad["id"]), (str(bad.get("name") or "tool"), bad))
    return found


def valid_calls(message: BaseMessage) -> dict[str, tuple[str, object]]:
    """The calls of :func:`tool_calls_of` whose arguments parsed, by id, as ``(name, args)``.

    Its ``tool_calls``, and the call blocks of an Anthropic-native record (``tool_use``
    without ``tool_calls``). A call in ``invalid_tool_calls`` is left out: the tool never
    ran it as asked, so there is nothing to read from its answer.

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> valid_calls(AIMessage([{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
        ...     invalid_tool_calls=[{"name": "cat", "args": "{bad", "id": "t2", "error": None}]))
        {'t1': ('ls', {})}
    """
    if not isinstance(message, AIMessage):
        return {}
    invalid = {c.get("id") for c in message.invalid_tool_calls} - {
        c.get("id") for c in message.tool_calls
    }
    return {
        str(call["id"]): (str(call["name"]), call["args"])
        for call in tool_calls_of(message)
        if call["id"] not in invalid
    }


def result_keys(block: Mapping[str, object]) -> tuple[str, str] | None:
    """A user turn's result block: the keys of its call id and its output; else ``None``.

    Example:
        >>> result_keys({"type": "apply_patch_call_output", "call_id": "c1", "output": "ok"})
        ('call_id', 'output')
    """
    return _RESULT_KEYS.get(str(block.get("type")))


def tool_result_ids(message: BaseMessage) -> list[str]:
    """The call ids a human message's result blocks answer (Anthropic ``tool_result``)."""
    if not isinstance(message, HumanMessage):
        return []
    return [str(b.get(keys[0])) for b in block_dicts(message) if (keys := result_keys(b))]


def is_tool_result_turn(message: BaseMessage) -> bool:
    """True for a human message made only of ``tool_result`` blocks: a tool result.

    Such a turn answers the calls before it; it is not a directive, and a view may not
    start or be cut at it.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> is_tool_result_turn(HumanMessage([{"type": "tool_result", "tool_use_id": "t1",
        ...                                    "content": "ok"}]))
        True
        >>> is_tool_result_turn(HumanMessage("fix the tests"))
        False
    """
    if not isinstance(message, HumanMessage) or not isinstance(message.content, list):
        return False
    content = message.content
    return bool(content) and all(
        isinstance(b, Mapping) and b.get("type") in _RESULT_BLOCK_TYPES for b in content
    )


def result_messages(message: BaseMessage) -> list[ToolMessage]:
    """The tool results ``message`` carries, each as a ``ToolMessage``.

    A ``ToolMessage`` is its own; a human turn's Anthropic ``tool_result`` blocks (an
    Anthropic-native record) are each read as the ``ToolMessage`` langchain-anthropic
    would send as that block: its content, and ``status="error"`` for ``is_error``. So
    whatever reads a call's result (the working memory) reads both shapes alike.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> turn = HumanMessage([{"type": "tool_result", "tool_use_id": "t1",
        ...                       "content": "no such file", "is_error": True}])
        >>> [(m.tool_call_id, m.content, m.status) for m in result_messages(turn)]
        [('t1', 'no such file', 'error')]
    """
    if isinstance(message, ToolMessage):
        return [message]
    if not isinstance(message, HumanMessage) or isinstance(message.content, str):
        return []
    return [
        ToolMessage(
            _result_content(b.get(keys[1])),
            tool_call_id=str(b.get(keys[0])),
            status="error" if b.get("is_error") or b.get("status") == "failed" else "success",
        )
        for b in block_dicts(message)
        if (keys := result_keys(b))
    ]


def _result_content(content: object) -> str | list[str | dict[str, object]]:
    """A ``tool_result`` block's content as a ``ToolMessage`` takes it (``None``: empty)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return [b for b in result_parts(content) if isinstance(b, (str, dict))]
    return ""


def result_parts(content: list[object]) -> list[object]:
    """A ``tool_result`` block's content list, read one level deep.

    A result nested in a result is no provider's shape: it stands as its JSON text, so
    whatever reads a result (the count, the search text) never recurses as deep as a
    hostile record nests.

    Example:
        >>> result_parts(["ok", {"type": "tool_result", "tool_use_id": "t", "content": "x"}])
        ['ok', '{"content": "x", "tool_use_id": "t", "type": "tool_result"}']
    """
    return [
        json_text(part, sort_keys=True)
        if isinstance(part, dict) and part.get("type") in _RESULT_BLOCK_TYPES
        else part
        for part in content
    ]


_OUTPUT_BLOCK_TYPES: Final = frozenset({"custom_tool_call_output"})
"""Outputs a ``ToolMessage`` holds as a block (langchain-openai's ``custom_tool``): sent as
that item, not a ``function_call_output``, only while the block stays; text in ``output``."""
_STRUCTURAL_TYPES: Final = (
    THINKING_TYPES | _CALL_BLOCK_TYPES | _RESULT_BLOCK_TYPES | _OUTPUT_BLOCK_TYPES
)
_CUT_RESULT: Final = "[output cut]"


def has_structure(message: BaseMessage) -> bool:
    """True when the content holds blocks a provider pairs or orders.

    Thinking, calls and results: a cut must keep them and shorten only the text around.
    """
    return any(wire_type(b) in _STRUCTURAL_TYPES for b in block_dicts(message))


def _result_text(block: Mapping[str, object]) -> str:
    inner = block.get((result_keys(block) or ("", "content"))[1])
    if isinstance(inner, str):
        return inner
    if isinstance(inner, list):
        return "\n".join(
            str(b.get("text", "")) for b in inner if isinstance(b, Mapping) and "text" in b
        )
    return ""


def cuttable_text(message: BaseMessage) -> str:
    """The text of ``message`` a cut may shorten.

    A tool-result turn's results, else its text and the blocks a cut drops (a server tool's
    as its JSON: :func:`_part_text`); never thinking, calls or their arguments.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> cuttable_text(HumanMessage([{"type": "tool_result", "tool_use_id": "t1",
        ...                              "content": "42 lines"}]))
        '42 lines'
    """
    content = message.content
    if isinstance(content, str):
        return content
    if is_tool_result_turn(message):
        return "\n".join(_result_text(b) for b in block_dicts(message))
    if outputs := [b for b in block_dicts(message) if b.get("type") in _OUTPUT_BLOCK_TYPES]:
        return "\n".join(str(b.get("output") or "") for b in outputs)
    return "\n".join(_part_text(b) for b in content if isinstance(b, str | Mapping))


def _part_text(block: str | Mapping[str, object]) -> str:
    """What a cut keeps of a part it drops: its text; a server tool's block as its JSON.

    A page Claude's ``web_fetch`` read sits in such a block: dropped untold, the cut would
    take the whole page from the view however much room the budget left.
    """
    if isinstance(block, str) or block.get("type") == "text":
        return block if isinstance(block, str) else str(block.get("text", ""))
    if wire_type(block) in _STRUCTURAL_TYPES or media_label(block) is not None:
        return ""  # kept whole; or media, which the cut's marker counts
    return json_text(nested_media(without_opaque(block))[0])


def with_cut_text(message: BaseMessage, text: str) -> list[str | dict[str, object]]:
    """``message``'s content with its cuttable text replaced by ``text``, blocks in place.

    Thinking, calls and results keep their order (a provider checks it); in a tool-result
    turn the first result carries ``text`` and the others a short marker, so every call
    is still answered; elsewhere ``text`` takes the place of the first non-structural
    part and the other text, images and files are dropped.

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> m = AIMessage([{"type": "thinking", "thinking": "hm", "signature": "s"},
        ...                {"type": "text", "text": "long " * 100},
        ...                {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}])
        >>> [b["type"] for b in with_cut_text(m, "short")]
        ['thinking', 'text', 'tool_use']
    """
    out: list[str | dict[str, object]] = []
    placed = False
    result_turn = is_tool_result_turn(message)
    content = message.content if isinstance(message.content, list) else [message.content]
    for block in content:
        if isinstance(block, Mapping) and wire_type(block) in _STRUCTURAL_TYPES:
            output = block.get("type") in _OUTPUT_BLOCK_TYPES
            if result_turn or output:
                body = text if not placed else _CUT_RESULT
                key = "output" if output else (result_keys(block) or ("", "content"))[1]
                out.append({**block, key: body})
                placed = True
            else:
                out.append(dict(block))
        elif not placed:
            out.append({"type": "text", "text": text})
            placed = True
    if not placed:
        # Only structure (thinking and calls): the text goes after thinking, before calls.
        at = next(
            (
                i
                for i, b in enumerate(out)
                if isinstance(b, dict) and wire_type(b) not in THINKING_TYPES
            ),
            len(out),
        )
        out.insert(at, {"type": "text", "text": text})
    return out


def reasoning_text(block: Mapping[str, object]) -> str:
    """The countable text of a thinking / reasoning block (signatures are not text).

    ``thinking`` counts its thought; ``redacted_thinking`` its opaque data (the provider
    bills the thought it stands for, which that data's size tracks), as Bedrock's
    ``reasoning_content``; OpenAI ``reasoning`` its summary texts and encrypted content.
    """
    kind, inner = block.get("type"), block.get("reasoning_content")
    if kind == "thinking":  # Mistral's thought is a list of text blocks
        thought = block.get("thinking")
        pieces = thought if isinstance(thought, list) else [{"text": thought or ""}]
        return "".join(str(p.get("text") or "") for p in pieces if isinstance(p, Mapping))
    if kind == "redacted_thinking":
        return str(block.get("data") or "")
    if isinstance(inner, Mapping):  # langchain-aws (Bedrock Converse)
        return str(inner.get("text") or inner.get("redacted_content") or "")
    parts: list[str] = []
    summary = block.get("summary")
    if isinstance(summary, list):
        parts.extend(str(s.get("text") or "") for s in summary if isinstance(s, Mapping))
    for key in ("reasoning", "text"):
        value = block.get(key)
        if isinstance(value, str):
            parts.append(value)
    encrypted = block.get("encrypted_content")
    if isinstance(encrypted, str):
        parts.append(encrypted)
    return "\n".join(parts)
