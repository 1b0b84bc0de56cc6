"""One file under two names: relative to where the agent works, and absolute.

Real agents name one file both ways in one run. mini-swe-agent's model reads
``django/db/models/base.py`` from its working directory and edits
``/testbed/django/db/models/base.py`` after a ``cd /testbed``; Claude Code's ``Read`` takes
absolute paths, and the paths in its ``Bash`` commands are relative. Ranked as two files,
one file was re-attached twice after a fold, or its older read was re-attached while the
newer edit under its other name sat in the tail.

A root is learned only from evidence: an absolute path ``R/p`` and the relative path ``p``
both seen, where ``p`` has at least two parts (``django/db/models/base.py``, not
``setup.py``, which any directory may hold). From then on every path under ``R`` is keyed
relative to it. Nothing is resolved against a guessed working directory.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

__all__ = ["FileKeys", "named_once"]

_MAX_ROOTS: Final = 4
"""Roots learned at most: a run works in one or two trees; more is a coincidence of names."""


@dataclass(slots=True)
class FileKeys:
    """The roots a run's paths showed, grown path by path, and the key of a path.

    Example:
        >>> keys = FileKeys()
        >>> keys.add("django/db/base.py"), keys.add("/testbed/django/db/base.py")
        (None, '/testbed')
        >>> keys.key("/testbed/setup.py"), keys.key("./setup.py"), keys.key("/tmp/x.py")
        ('setup.py', 'setup.py', '/tmp/x.py')
    """

    roots: list[str] = field(default_factory=list)
    """The directories learned as where relative paths start, in the order learned."""
    relative: set[str] = field(default_factory=set)
    """Relative paths of two parts or more seen so far."""
    suffixes: dict[str, str] = field(default_factory=dict)
    """Each absolute path's tails of two parts or more, to the directory above the tail."""

    def copy(self) -> FileKeys:
        """An independent copy, to grow without changing this one."""
        return FileKeys(list(self.roots), set(self.relative), dict(self.suffixes))

    def add(self, path: str) -> str | None:
        """Note ``path``; the root it shows, when it shows a new one, else ``None``."""
        if path.startswith("/"):
            found = None
            for cut in _cuts(path):
                tail, root = path[cut + 1 :], path[:cut]
                self.suffixes.setdefault(tail, root)
                if found is None and tail in self.relative:
                    found = root
            return self._learn(found)
        relative = _relative(path)
        if "/" not in relative:
            return None
        self.relative.add(relative)
        return self._learn(self.suffixes.get(relative))

    def key(self, path: str) -> str:
        """``path`` relative to the first learned root it is under, else as written."""
        if not path.startswith("/"):
            return _relative(path)
        for root in self.roots:
            if path.startswith(root) and path[len(root) : len(root) + 1] == "/":
                return path[len(root) + 1 :]
        return path

    def _learn(self, root: str | None) -> str | None:
        if root is None or not root or root in self.roots or len(self.roots) >= _MAX_ROOTS:
            return None
        self.roots.append(root)
        return root


def _relative(path: str) -> str:
    """A relative path without its leading ``./``."""
    while path.startswith("./"):
        path = path[2:]
    return path


def _cuts(path: str) -> list[int]:
    """The slashes of absolute ``path`` that leave a tail of two parts or more after them."""
    slashes = [i for i, char in enumerate(path) if char == "/"]
    return slashes[1:-1] if len(slashes) > 2 else []


def named_once(
    keys: FileKeys, changed: Sequence[str], deleted: Sequence[str], read_counts: Mapping[str, int]
) -> tuple[list[str], list[str], Mapping[str, int]]:
    """A brief's file lists with each file named once, by its absolute name.

    mini-swe-agent's django run read ``django/db/models/base.py`` and changed
    ``/testbed/django/db/models/base.py``, and the brief listed both. With no root learned
    every name is its own, and nothing is renamed (the common case, kept cheap: the brief
    is rendered on every turn that observed something).

    Example:
        >>> keys = FileKeys()
        >>> _ = keys.add("a/b.py"), keys.add("/r/a/b.py")
        >>> named_once(keys, ["/r/a/b.py"], [], Counter({"a/b.py": 2}))
        (['/r/a/b.py'], [], Counter({'/r/a/b.py': 2}))
    """
    if not keys.roots:
        return list(dict.fromkeys(changed)), list(dict.fromkeys(deleted)), read_counts
    names: dict[str, str] = {}
    for path in (*read_counts, *changed, *deleted):
        key = keys.key(path)
        if path.startswith("/") or key not in names:
            names[key] = path

    def name(path: str) -> str:
        return names.get(keys.key(path), path)

    merged: Counter[str] = Counter()
    for path, n in read_counts.items():
        merged[name(path)] += n
    return list(dict.fromkeys(map(name, changed))), list(dict.fromkeys(map(name, deleted))), merged
