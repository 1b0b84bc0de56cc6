"""Patches -> the files they touch, each with what the patch did to it.

Three spellings reach a tool call: Codex's ``apply_patch`` envelope (``*** Update File:
path``), the same rendered by SpecStory (``**Update: `path`**``), and unified diffs
(``git apply``, ``patch -p1`` fed a heredoc). The unidiff package parses only the last,
and rejects a hunk whose counts are off, which models' hand-written diffs often are; only
the file headers matter here, so they are read line by line.
"""

from __future__ import annotations

import re
from typing import Final

from langchain_builderforce_memory.working.memory import FileKind, Observation

__all__ = ["patch_observations"]

_ENVELOPE: Final = re.compile(
    r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$"
    r"|^\*\*(Add|Update|Delete): `([^`]+)`\*\*\s*$",
    re.MULTILINE,
)
_KINDS: Final[dict[str, FileKind]] = {"Add": "created", "Update": "edited", "Delete": "deleted"}
_DIFF_OLD: Final = re.compile(r"^--- (\S+)")
_DIFF_NEW: Final = re.compile(r"^\+\+\+ (\S+)")


def _strip_prefix(path: str, strip: int) -> str | None:
    if path == "/dev/null":
        return None
    parts = path.split("/")
    if strip and len(parts) > strip and parts[0] in ("a", "b"):
        parts = parts[strip:]
    return "/".join(parts) or None


def _envelope(text: str) -> list[Observation]:
    out: list[Observation] = []
    for m in _ENVELOPE.finditer(text):
        if m.group(3):  # "*** Move to:" renames the file the previous header named
            if out:
                out[-1] = Observation("deleted", out[-1].target)
            out.append(Observation("created", m.group(3)))
        else:
            action, path = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(5))
            out.append(Observation(_KINDS[action], path))
    return out


def _unified(text: str, strip: int) -> list[Observation]:
    out: list[Observation] = []
    old: str | None = None
    for line in text.splitlines():
        if (m := _DIFF_OLD.match(line)) and not line.startswith("--- a/dev/null"):
            old = m.group(1)
            continue
        m = _DIFF_NEW.match(line)
        if m is None or old is None:
            continue
        before, after = _strip_prefix(old, strip), _strip_prefix(m.group(1), strip)
        old = None
        if after is None and before is not None:
            out.append(Observation.deleted(before))
        elif before is None and after is not None:
            out.append(Observation.created(after))
        elif after is not None:
            out.append(Observation.edited(after))
    return out


def patch_observations(text: str, *, strip: int = 1) -> list[Observation]:
    r"""The files a patch touches: created, edited or deleted, in the patch's order.

    Args:
        text: A Codex ``apply_patch`` envelope (raw or as SpecStory renders it) or a
            unified diff.
        strip: Leading path components a unified diff's ``a/`` / ``b/`` headers carry
            (``patch -p1``); only ``a`` and ``b`` are ever stripped.

    Example:
        >>> patch_observations("*** Begin Patch\n*** Update File: src/app.py\n@@\n-x\n+y")
        [Observation(kind='edited', target='src/app.py')]
        >>> patch_observations("--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+x")
        [Observation(kind='created', target='new.py')]
    """
    return _envelope(text) or _unified(text, strip)
