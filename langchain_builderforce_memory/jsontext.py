"""JSON text of message parts, for counting, hashing and search: never an exception.

Contents and call arguments come from a model's output and a tool's, and a model can be
made to write arguments nested a few hundred levels deep: ``json.dumps`` then raises
``RecursionError`` inside someone's graph (a view counts every call's arguments). Such a
value is rendered instead as its keys and scalars in order, walked without recursion:
the same text for the same value, close to the JSON's tokens.
"""

from __future__ import annotations

import json

__all__ = ["json_text"]


def json_text(value: object, *, sort_keys: bool = False, compact: bool = False) -> str:
    """``value`` as JSON (non-ASCII kept, unknown types as ``str``), whatever its depth.

    ``compact``: no spaces after separators. A value too deep for ``json.dumps`` (or one
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
    try:
        return json.dumps(
            value, ensure_ascii=False, default=str, sort_keys=sort_keys, separators=separators
        )
    except (RecursionError, ValueError):  # too deep, or circular
        return " ".join(_scalars(value))


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
