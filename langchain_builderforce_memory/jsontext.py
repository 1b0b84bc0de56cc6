"""JSON text of message parts, for counting, hashing and search: never an exception.

Contents and call arguments come from a model's output and a tool's, and a model can be
made to write arguments nested a few hundred levels deep: ``json.dumps`` then raises
``RecursionError`` inside someone's graph (a view counts every call's arguments). Such a
value is rendered instead as its keys and scalars in order, walked without recursion:
the same text for the same value, close to the JSON's tokens. "Too deep" is a fixed
depth (:data:`DEEPEST`), not the interpreter's recursion limit of the moment, which a test
runner or a library may have raised: the same value gets the same text in every process.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

__all__ = ["DEEPEST", "OPAQUE_KEYS", "json_text", "without_opaque"]

DEEPEST: Final = 200
"""Nesting past which a value is rendered as its keys and scalars (well under Python's
default recursion limit of 1,000, with room for the caller's own frames)."""


OPAQUE_KEYS: Final = frozenset(("encrypted_content", "encrypted_index"))
"""Keys whose values only the provider can read (an Anthropic web search result's page, a
citation's index): base64 no reader can use, thousands of tokens a search."""


def without_opaque(value: object, depth: int = 0) -> object:
    """``value`` without its :data:`OPAQUE_KEYS`, as a reader (the summarizer, search) sees it.

    Example:
        >>> without_opaque({"url": "https://x", "encrypted_content": "EqgfCioI"})
        {'url': 'https://x'}
    """
    if depth > DEEPEST:
        return value
    if isinstance(value, Mapping):
        return {k: without_opaque(v, depth + 1) for k, v in value.items() if k not in OPAQUE_KEYS}
    if isinstance(value, list):
        return [without_opaque(v, depth + 1) for v in value]
    return value


def json_text(value: object, *, sort_keys: bool = False, compact: bool = False) -> str:
    """``value`` as JSON (non-ASCII kept, unknown types as ``str``), whatever its depth.

    ``compact``: no spaces after separators. A value nested past :data:`DEEPEST` (or one
    that contains itself) becomes its keys and scalars joined by spaces, in order.

    Example:
        >>> json_text({"path": "a.py"}), json_text({"b": 1, "a": [2]}, sort_keys=True)
        ('{"path": "a.py"}', '{"a": [2], "b": 1}')
        >>> deep = "x"
        >>> for _ in range(5_000):
        ...     deep = [deep]
        >>> json_text({"k": deep})
        'k x'
    """
    separators = (",", ":") if compact else None
    if _deeper_than(value, DEEPEST):
        return " ".join(_scalars(value))
    try:
        return json.dumps(
            value, ensure_ascii=False, default=str, sort_keys=sort_keys, separators=separators
        )
    except (RecursionError, ValueError):  # too deep, or circular
        return " ".join(_scalars(value))


def _deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` nests containers more than ``limit`` deep (no recursion)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    seen: set[int] = set()
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list | tuple) or id(item) in seen:
            continue
        if depth >= limit:
            return True
        seen.add(id(item))
        inner = item.values() if isinstance(item, dict) else item
        stack.extend((v, depth + 1) for v in inner if isinstance(v, dict | list | tuple))
    return False


def _scalars(value: object) -> list[str]:
    """The keys and scalars of ``value``, depth first, with an explicit stack."""
    out: list[str] = []
    stack: list[object] = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list | tuple):
            if id(item) in seen:
                continue  # a circular reference is walked once
            seen.add(id(item))
            if isinstance(item, dict):
                pairs = [(str(k), v) for k, v in item.items()]
                for key, inner in reversed(pairs):
                    stack.append(inner)
                    stack.append(key)
            else:
                stack.extend(reversed(item))
        else:
            out.append(item if isinstance(item, str) else str(item))
    return out
