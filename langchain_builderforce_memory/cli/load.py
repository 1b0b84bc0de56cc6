"""Read a saved transcript for ``bfmem inspect``: LangChain or OpenAI-style, JSON or JSONL.

Accepted shapes, detected per message:

* LangChain's ``messages_to_dict`` form: ``{"type": "human", "data": {...}}``;
* OpenAI-style chat messages: ``{"role": "assistant", "content": ..., "tool_calls":
  [{"id": ..., "type": "function", "function": {"name": ..., "arguments": "<json>"}}]}``
  and ``{"role": "tool", "tool_call_id": ..., "content": ...}``; the legacy functions API's
  ``{"role": "assistant", "function_call": {"name": ..., "arguments": "<json>"}}`` and
  ``{"role": "function", "name": ..., "content": ...}`` too.

A file is either one JSON document (a list of messages, or an object whose
``"messages"`` is that list) or JSONL (one message per line; blank lines skipped).

Hostile input gets the same one-line error, in bounded time and memory: only regular files
are read (a FIFO with no writer would block forever, ``/dev/zero`` never ends), at most
:data:`MAX_FILE_BYTES` of them; JSON nested deeper than :data:`MAX_JSON_DEPTH` (a tool's
arguments included, even inside an ``arguments`` string) and integers past Python's
4,300-digit conversion limit are refused, instead of a ``RecursionError`` or
``ValueError`` traceback from deep inside the parser.

Every error names where it is (``messages[3].tool_calls[0].function.arguments``, or
``line 7: ...`` in JSONL) and what was expected, because whoever runs the command is
looking at the file, not at our code: a traceback from deep inside a converter tells
them nothing they can fix.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_from_dict,
)
from langchain_core.messages.tool import ToolCall
from pydantic import ValidationError

from langchain_builderforce_memory.jsontext import json_text

__all__ = ["LoadedTranscript", "TranscriptFileError", "load_transcript_file", "parse_message"]

FileFormat = Literal["json", "jsonl"]

MAX_FILE_BYTES = 256 * 1024 * 1024
"""The largest transcript ``bfmem inspect`` reads (256 MiB): a recorded run is a few MB;
anything past this is a wrong path or a hostile file, and reading it would hold it all in
memory."""

MAX_JSON_DEPTH = 200
"""How deeply a transcript's JSON may nest (a message is 3-4 levels, a tool's arguments a
few more). Deeper input is refused before anything recursive walks it."""

_SYSTEM_ROLES = frozenset({"system", "developer"})
_USER_ROLES = frozenset({"user", "human"})
_ASSISTANT_ROLES = frozenset({"assistant", "ai"})
_TOOL_ROLES = frozenset({"tool", "function"})
_KNOWN_ROLES = sorted(_SYSTEM_ROLES | _USER_ROLES | _ASSISTANT_ROLES | _TOOL_ROLES)


class TranscriptFileError(ValueError):
    """A transcript file that cannot be read; the message names the line or field."""


@dataclass(frozen=True, slots=True)
class LoadedTranscript:
    """A transcript read from a file."""

    messages: list[BaseMessage]
    """The messages, in file order."""
    file_format: FileFormat
    """``"json"`` (one document) or ``"jsonl"`` (one message a line)."""
    shapes: tuple[str, ...]
    """The message shapes found: ``"langchain"`` and/or ``"openai"``."""


def _fail(where: str, problem: str) -> TranscriptFileError:
    return TranscriptFileError(f"{where}: {problem}")


def _invalid_json(exc: json.JSONDecodeError, line: int | None = None) -> TranscriptFileError:
    """The decoder's whole message, where it is.

    ``exc.msg`` alone is cut mid-sentence for the messages that end in a position
    (``Unterminated string starting at``): they are completed with "this position".
    """
    text = f"{exc.msg} this position" if exc.msg.endswith(" at") else exc.msg
    where = f"line {exc.lineno if line is None else line}, column {exc.colno}"
    return TranscriptFileError(f"{where}: invalid JSON ({text})")


def _detail(exc: Exception) -> str:
    """An exception's whole message on one line (pydantic's: each field and its problem)."""
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(part) for part in e['loc']) or 'value'}: {e['msg']}"
            for e in exc.errors()
        )
    return " ".join(str(exc).split()) or type(exc).__name__


def _too_deep(where: str) -> TranscriptFileError:
    return _fail(
        where,
        f"JSON nested deeper than {MAX_JSON_DEPTH} levels; a transcript needs a handful, "
        "so this is not one (flatten the deep value or remove it)",
    )


def _json_loads(text: str, where: str) -> object:
    """``json.loads`` with every parser failure as a one-line :class:`TranscriptFileError`.

    ``where`` is the location prefix; JSON syntax errors add their line and column.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError as exc:
        raise _too_deep(where) from exc
    except ValueError as exc:  # int too long for the conversion limit (CVE-2020-10735)
        detail = str(exc).splitlines()[0]
        raise _fail(
            where,
            f"a number has too many digits ({detail}); store huge ids as strings",
        ) from exc
    _check_depth(value, where)
    return value


def _check_depth(value: object, where: str) -> None:
    """Refuse ``value`` when it nests deeper than :data:`MAX_JSON_DEPTH` (iteratively)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise _too_deep(where)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def _content(item: Mapping[str, object], where: str) -> str | list[str | dict[str, object]]:
    value = item.get("content")
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        blocks: list[str | dict[str, object]] = []
        for k, block in enumerate(value):
            if not isinstance(block, str | dict):
                raise _fail(
                    f"{where}.content[{k}]",
                    f"a content block must be a string or an object; got {_kind(block)}",
                )
            blocks.append(block)
        return blocks
    raise _fail(
        f"{where}.content",
        f"must be a string, a list of content blocks or null; got {_kind(value)}",
    )


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def _string_field(item: Mapping[str, object], key: str, where: str, *, required: bool) -> str:
    value = item.get(key)
    if value is None:
        if required:
            raise _fail(where, f"field {key!r} is missing")
        return ""
    if not isinstance(value, str):
        raise _fail(f"{where}.{key}", f"must be a string; got {_kind(value)}")
    return value


def _tool_call(raw: object, where: str) -> ToolCall:
    if not isinstance(raw, dict):
        raise _fail(where, f"a tool call must be an object; got {_kind(raw)}")
    call_id = _string_field(raw, "id", where, required=True)
    function = raw.get("function")
    if function is None and "name" in raw:
        # LangChain's own shape: {"name": ..., "args": {...}, "id": ...}.
        name = _string_field(raw, "name", where, required=True)
        args = raw.get("args", {})
        if not isinstance(args, dict):
            raise _fail(f"{where}.args", f"must be an object; got {_kind(args)}")
        return ToolCall(name=name, args=args, id=call_id, type="tool_call")
    if not isinstance(function, dict):
        raise _fail(
            where,
            "field 'function' is missing or not an object (expected "
            '{"function": {"name": ..., "arguments": "<json>"}})',
        )
    name = _string_field(function, "name", f"{where}.function", required=True)
    parsed = _arguments(function.get("arguments", "{}"), f"{where}.function.arguments")
    return ToolCall(name=name, args=parsed, id=call_id, type="tool_call")


def _arguments(arguments: object, where: str) -> dict[str, object]:
    """A call's ``arguments``: a JSON object, or a string encoding one (``""`` is ``{}``)."""
    if isinstance(arguments, str):
        try:
            parsed = _json_loads(arguments, where) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise _fail(where, f"is not valid JSON ({exc.msg})") from exc
    else:
        parsed = arguments
    if not isinstance(parsed, dict):
        raise _fail(where, f"must encode a JSON object; got {_kind(parsed)}")
    return parsed


def _function_call(raw: object, where: str) -> dict[str, str]:
    """A legacy ``function_call``, kept as ``langchain-openai`` keeps it (arguments as text)."""
    if not isinstance(raw, dict):
        shape = '{"name": ..., "arguments": "<json>"}'
        raise _fail(where, f"must be an object ({shape}); got {_kind(raw)}")
    name = _string_field(raw, "name", where, required=True)
    arguments = raw.get("arguments", "{}")
    parsed = _arguments(arguments, f"{where}.arguments")
    return {
        "name": name,
        "arguments": arguments if isinstance(arguments, str) else json_text(parsed),
    }


def _openai_message(item: Mapping[str, object], where: str) -> BaseMessage:
    role = item.get("role")
    if not isinstance(role, str) or role.lower() not in _KNOWN_ROLES:
        raise _fail(f"{where}.role", f"unknown role {role!r}; expected one of {_KNOWN_ROLES}")
    role = role.lower()
    content = _content(item, where)
    msg_id = _string_field(item, "id", where, required=False) or None
    name = _string_field(item, "name", where, required=False) or None
    if role in _SYSTEM_ROLES:
        return SystemMessage(content, id=msg_id, name=name)
    if role in _USER_ROLES:
        return HumanMessage(content, id=msg_id, name=name)
    if role in _ASSISTANT_ROLES:
        raw_calls = item.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise _fail(f"{where}.tool_calls", f"must be a list; got {_kind(raw_calls)}")
        calls = [_tool_call(c, f"{where}.tool_calls[{k}]") for k, c in enumerate(raw_calls)]
        extra: dict[str, object] = {}
        if (legacy := item.get("function_call")) is not None:
            extra["function_call"] = _function_call(legacy, f"{where}.function_call")
        return AIMessage(content, id=msg_id, name=name, tool_calls=calls, additional_kwargs=extra)
    if role == "function":  # the legacy functions API: answered by name, right after the call
        function = _string_field(item, "name", where, required=True)
        return FunctionMessage(content=content, name=function, id=msg_id)
    call_id = _string_field(item, "tool_call_id", where, required=True)
    return ToolMessage(content, tool_call_id=call_id, id=msg_id, name=name)


def parse_message(item: object, where: str) -> tuple[BaseMessage, str]:
    """One message object as a LangChain message, and its shape (``langchain``/``openai``).

    Raises:
        TranscriptFileError: naming ``where`` (and the field) and what was expected.

    Example:
        >>> m, shape = parse_message({"role": "user", "content": "hi"}, "messages[0]")
        >>> (m.type, m.content, shape)
        ('human', 'hi', 'openai')
    """
    if not isinstance(item, dict):
        raise _fail(where, f"expected a message object; got {_kind(item)}")
    if "type" in item and "data" in item:
        try:
            return messages_from_dict([item])[0], "langchain"
        except (ValueError, KeyError, TypeError, ValidationError) as exc:
            raise _fail(
                where, f"not a valid LangChain message dict (type {item['type']!r}): {_detail(exc)}"
            ) from exc
    if "role" in item:
        return _openai_message(item, where), "openai"
    raise _fail(
        where,
        "neither a LangChain message dict ('type' and 'data') nor an OpenAI-style message "
        f"('role'); its keys are {sorted(item)}",
    )


def _from_document(document: object) -> tuple[list[BaseMessage], set[str]]:
    items = document.get("messages") if isinstance(document, dict) else document
    if not isinstance(items, list):
        found = (
            f"an object with keys {sorted(document)}"
            if isinstance(document, dict)
            else (_kind(document))
        )
        msg = (
            f"top level: expected a JSON list of messages, or an object whose 'messages' is "
            f"that list; got {found}"
        )
        raise TranscriptFileError(msg)
    messages: list[BaseMessage] = []
    shapes: set[str] = set()
    for i, item in enumerate(items):
        message, shape = parse_message(item, f"messages[{i}]")
        messages.append(message)
        shapes.add(shape)
    return messages, shapes


def _from_lines(text: str) -> tuple[list[BaseMessage], set[str]]:
    messages: list[BaseMessage] = []
    shapes: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = _json_loads(line, f"line {number}")
        except json.JSONDecodeError as exc:
            raise _invalid_json(exc, number) from exc
        message, shape = parse_message(item, f"line {number}")
        messages.append(message)
        shapes.add(shape)
    return messages, shapes


def _read_regular_file(p: Path) -> str:
    """The file's text: a regular file only, at most :data:`MAX_FILE_BYTES`, UTF-8."""
    try:
        info = p.stat()  # stat, not open: opening a FIFO with no writer blocks
    except FileNotFoundError as exc:
        msg = f"{p}: no such file"
        raise TranscriptFileError(msg) from exc
    except OSError as exc:
        msg = f"{p}: cannot read it ({exc.strerror or exc})"
        raise TranscriptFileError(msg) from exc
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a pipe, device or socket"
        msg = f"{p}: not a regular file ({kind}); pass a saved .json or .jsonl transcript"
        raise TranscriptFileError(msg)
    if info.st_size > MAX_FILE_BYTES:
        msg = _size_message(p, info.st_size)
        raise TranscriptFileError(msg)
    try:
        # O_NONBLOCK: if the path was swapped for a FIFO since the stat, do not hang on it.
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                msg = f"{p}: not a regular file; pass a saved .json or .jsonl transcript"
                raise TranscriptFileError(msg)
            data = handle.read(MAX_FILE_BYTES + 1)  # a file still growing stops here
    except OSError as exc:
        msg = f"{p}: cannot read it ({exc.strerror or exc})"
        raise TranscriptFileError(msg) from exc
    if len(data) > MAX_FILE_BYTES:
        msg = _size_message(p, len(data))
        raise TranscriptFileError(msg)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"{p}: not UTF-8 text (byte {exc.start}); expected a JSON or JSONL transcript"
        raise TranscriptFileError(msg) from exc


def _size_message(p: Path, size: int) -> str:
    return (
        f"{p}: {size:,} bytes is over the {MAX_FILE_BYTES:,} bytes bfmem inspect reads; "
        "inspect a shorter excerpt of the transcript (split a JSONL file by lines)"
    )


def load_transcript_file(path: str | Path) -> LoadedTranscript:
    r"""Read ``path`` (JSON or JSONL; LangChain or OpenAI-style messages).

    Raises:
        TranscriptFileError: the file is missing, unreadable, not JSON / JSONL, empty, or
            a message in it is malformed; the message names the line or field.

    Example:
        >>> import pathlib, tempfile
        >>> lines = ['{"role": "user", "content": "hi"}', '{"role": "assistant", "content": "yo"}']
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     p = pathlib.Path(folder) / "t.jsonl"
        ...     _ = p.write_text("\n".join(lines))
        ...     [m.type for m in load_transcript_file(p).messages]
        ['human', 'ai']
    """
    p = Path(path)
    text = _read_regular_file(p)
    if not text.strip():
        msg = f"{p}: the file is empty; expected a JSON list of messages or JSONL"
        raise TranscriptFileError(msg)
    file_format: FileFormat
    if p.suffix.lower() == ".jsonl":
        messages, shapes = _from_lines(text)
        file_format = "jsonl"
    else:
        try:
            document = _json_loads(text, "top level")
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":
                raise _invalid_json(exc) from exc
            # Several JSON values one after the other: JSONL under another name.
            messages, shapes = _from_lines(text)
            file_format = "jsonl"
        else:
            messages, shapes = _from_document(document)
            file_format = "json"
    if not messages:
        msg = f"{p}: no messages in the file"
        raise TranscriptFileError(msg)
    return LoadedTranscript(
        messages=messages, file_format=file_format, shapes=tuple(sorted(shapes))
    )
