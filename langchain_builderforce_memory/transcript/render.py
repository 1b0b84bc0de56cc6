"""How a transcript is rendered for the summarizer: the text every fold note is written from.

One paragraph a message. A tool result follows the call it answers, with the call's
arguments (cut), so the note can say which file held what. Left out: what only a provider
can read (thinking, encrypted search results) and a call block (rendered as its call). An
image or file is its label, never its base64.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_builderforce_memory.blocks import (
    DECISION_TYPES,
    THINKING_TYPES,
    call_id_key,
    is_tool_result_turn,
    legacy_function_call,
    parsed_arguments,
    result_keys,
    tool_calls_of,
    wire_type,
)
from langchain_builderforce_memory.jsontext import json_text, without_opaque
from langchain_builderforce_memory.media import media_label, nested_media
from langchain_builderforce_memory.messages import answers_legacy_call, role_of, tool_call_units
from langchain_builderforce_memory.tokens import TokenCounter
from langchain_builderforce_memory.transcript.results import cleared_tokens

__all__ = [
    "ARG_VALUE_CHARS",
    "SUMMARY_INPUT_MAX_TOKENS",
    "after_note",
    "call_text",
    "render_for_summary",
    "summary_parts",
]


def _compact_json(value: object) -> str:
    # Compact separators, as the seed's JSON.stringify: a tool result rendered for the
    # summarizer costs no padding tokens, and renders the same as the seed's.
    return json_text(value, compact=True)


_UNSHOWN_BLOCKS: Final = frozenset((*THINKING_TYPES, "tool_use", "tool_call", "function_call"))
"""Content blocks the summarizer is not shown as JSON: the model's reasoning is not the
work, and a call block (any block :func:`call_id_key` reads) is rendered as its call (its
argument values cut), not in full."""
ARG_VALUE_CHARS: Final = 200
"""Each argument value of a call is cut to this many characters in the summarizer's text,
so one huge argument (a file's new content) cannot crowd out the rest (its path)."""


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and (label := media_label(block)) is not None:
                parts.append(f" {label}" if parts else label)
            elif isinstance(block, dict) and (said := _said(block)):
                parts.append(said)
            elif not (isinstance(block, dict) and _unshown(block)):
                parts.append(_compact_json(nested_media(without_opaque(block))[0]))
        return "".join(parts)
    return _compact_json(content)


def _capped(value: object) -> object:
    text = value if isinstance(value, str) else None
    if text is None and isinstance(value, (dict, list, tuple)):
        text = _compact_json(value)
    if text is None or len(text) <= ARG_VALUE_CHARS:
        return value
    return f"{text[: ARG_VALUE_CHARS - 1]}…"


def call_text(call: Mapping[str, object]) -> str:
    """A tool call as the summarizer reads it: ``name({"arg":"value",...})``, compact.

    Example:
        >>> call_text({"name": "read_file", "args": {"path": "src/app.py"}, "id": "1"})
        'read_file({"path":"src/app.py"})'
    """
    args = call.get("args")
    shown = {str(k): _capped(v) for k, v in args.items()} if isinstance(args, Mapping) else {}
    return f"{call.get('name') or 'tool'}({_compact_json(shown)})"


def _legacy_call(message: BaseMessage | None) -> tuple[str, str] | None:
    """A legacy OpenAI ``function_call``'s name and :func:`call_text`, else ``None``."""
    call = legacy_function_call(message) if message is not None else None
    if call is None:
        return None
    name = str(call.get("name") or "tool")
    return name, call_text({"name": name, "args": parsed_arguments(call.get("arguments"))})


def _native_results(message: BaseMessage) -> list[tuple[str, str]]:
    """An Anthropic-native tool-result turn's results as ``(call id, text)``."""
    if not is_tool_result_turn(message) or not isinstance(message.content, list):
        return []
    return [
        (str(b.get(keys[0])), _said(b) or _content_text(b.get(keys[1]) or ""))
        for b in message.content
        if isinstance(b, dict) and (keys := result_keys(b))
    ]


def _unshown(block: dict[str, object]) -> bool:
    return wire_type(block) in _UNSHOWN_BLOCKS or call_id_key(block) is not None


def _said(block: dict[str, object]) -> str:
    """A block that holds no output text, as what it says; else ``""``.

    An MCP approval response's decision; the tools a tool search found, or an MCP server
    listed (OpenAI's ``mcp_list_tools``), by name: their schemas are a few hundred tokens
    each.
    """
    tools, kind = block.get("tools"), block.get("type")
    if kind in ("tool_search_output", "mcp_list_tools") and isinstance(tools, list):
        names = ", ".join(str(t.get("name") or t.get("type")) for t in tools if isinstance(t, dict))
        where = f"listed by {block.get('server_label')}" if kind == "mcp_list_tools" else "found"
        return f"[tools {where}: {names or 'none'}]"
    if block.get("type") not in DECISION_TYPES:
        return ""
    reason = block.get("reason")
    return ("approved" if block.get("approve") else "not approved") + (
        f": {reason}" if reason else ""
    )


def _result_line(message: BaseMessage, call: str | None, text: str) -> str:
    if not call:
        return f"tool: {text}"
    # A cleared result's placeholder names its call again; rendered after that call, a
    # word and its size say the same in a few tokens.
    size = cleared_tokens(message, text)
    return f"tool {call} -> {text if size is None else f'[not shown: cleared, {size} tokens]'}"


def render_for_summary(messages: Sequence[BaseMessage]) -> str:
    r"""Render messages to the compact text the summarizer compresses.

    One paragraph a message, ``role: content``. A tool result is rendered after the call
    it answers, arguments included (``tool read_file({"path":"a.py"}) -> ...``), so a note
    can say which file held what even when the output does not repeat its path; each
    argument value is cut to :data:`ARG_VALUE_CHARS`. The assistant turn names its calls
    (``assistant [called: read_file]: ...``), with their arguments only when no result of
    theirs is rendered; a call block of the content (Anthropic ``tool_use``) is that call,
    not JSON. An Anthropic-native turn of ``tool_result`` blocks renders as its results, and
    a legacy OpenAI ``function_call`` with the ``FunctionMessage`` after it as a call and its
    result.
    Thinking blocks are left out; an image, file or audio block is its label (kind, type,
    URL), never its base64; other non-text blocks are JSON, without the values only the
    provider can read (a web search result's ``encrypted_content``).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> call = {"name": "read_file", "args": {"path": "a.py"}, "id": "1"}
        >>> print(render_for_summary([HumanMessage("fix it"), AIMessage("", tool_calls=[call]),
        ...                           ToolMessage("x = 1", tool_call_id="1")]))
        user: fix it
        <BLANKLINE>
        assistant [called: read_file]:
        <BLANKLINE>
        tool read_file({"path":"a.py"}) -> x = 1
    """
    out: list[str] = []
    calls: dict[str, str] = {}
    # A call's arguments are shown once: with its result when the result is rendered too,
    # else (a call still unanswered) in the turn that made it.
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    answered.update(i for m in messages for i, _ in _native_results(m))
    for i, m in enumerate(messages):
        made = tool_calls_of(m)
        before = messages[i - 1] if i else None
        if made:
            shown = []
            for c in made:
                calls[str(c["id"])] = call_text(c)
                answer = str(c["id"]) in answered
                shown.append(str(c.get("name") or "tool") if answer else calls[str(c["id"])])
            text = _content_text(m.content)
            out.append(f"assistant [called: {', '.join(shown)}]: {text}".rstrip())
        elif isinstance(m, ToolMessage):
            out.append(_result_line(m, calls.get(m.tool_call_id), _content_text(m.content)))
        elif is_tool_result_turn(m):
            out.extend(_result_line(m, calls.get(c), text) for c, text in _native_results(m))
        elif (legacy := _legacy_call(m)) is not None:  # its result, if any, comes next
            answer = i + 1 < len(messages) and answers_legacy_call(messages[i + 1], m)
            text = _content_text(m.content)
            out.append(f"assistant [called: {legacy[0] if answer else legacy[1]}]: {text}".rstrip())
        elif answers_legacy_call(m, before):
            out.append(
                _result_line(m, (_legacy_call(before) or ("", ""))[1], _content_text(m.content))
            )
        else:
            out.append(f"{role_of(m)}: {_content_text(m.content)}")
    return "\n\n".join(out)


SUMMARY_INPUT_MAX_TOKENS = 100_000
"""The most one summarizer call reads when its window is unknown (the budget's counter).

A fold reads its held note and about a budget of new work, but the first fold of a long
record (a thread the middleware is added to), or one after a span the summarizer missed
while failing, reads all of it: one request past a summarizer's window, refused again at
every later fold. Past the limit the input is read in parts (:func:`summary_parts`), each
after the note so far. A chat model's own window sets the limit when its profile gives
one (:func:`~langchain_builderforce_memory.transcript.summary.summary_input_limit`); this
one is for functions and models without a profile, below the windows of the models used
as summarizers (128k and up)."""


def summary_parts(
    messages: Sequence[BaseMessage],
    counter: TokenCounter,
    limit: int = SUMMARY_INPUT_MAX_TOKENS,
) -> list[list[BaseMessage]]:
    """``messages`` in consecutive parts of at most ``limit`` tokens, cut between tool units.

    Sized as the summarizer reads them (:func:`render_for_summary`). A call stays with its
    results, so each part's rendering shows a result after its call.
    A unit over ``limit`` is a part of its own (a fold has already cut each message to a
    quarter of its budget).

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_builderforce_memory.tokens import resolve_token_counter
        >>> counter = resolve_token_counter(None)
        >>> [len(p) for p in summary_parts([HumanMessage("x" * 400)] * 5, counter, limit=250)]
        [2, 2, 1]
    """
    if sum(counter.count_message(m) for m in messages) <= limit:
        return [list(messages)]  # the usual fold: its rendering is about this size or less
    parts: list[list[BaseMessage]] = [[]]
    used = 0
    for unit in tool_call_units(messages):
        span = messages[unit.start : unit.end]
        size = counter.count_text(render_for_summary(span))  # what the summarizer reads
        if parts[-1] and used + size > limit:
            parts.append([])
            used = 0
        parts[-1].extend(span)
        used += size
    return parts


def after_note(note: str | None, part: list[BaseMessage]) -> list[BaseMessage]:
    """``part`` as the summarizer reads it after the note written for the parts before it.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> [m.type for m in after_note("so far: read a.py", [HumanMessage("go on")])]
        ['ai', 'human']
    """
    if note is None:
        return part
    # As a held note is given to a fold: an assistant turn, read as a rendering.
    return [AIMessage(f"Compressed memory of the earlier part of this transcript:\n{note}"), *part]
