"""Rule parts for the tools real agents use: shells, patches, IPython cells, answers.

Some tools name their file only in their answer, some do all their work through a shell.

Each part reads one call, its parsed input, the text of its output and whether the harness
marked it an error, and returns the observations the call stands for. They plug into
:class:`~langchain_builderforce_memory.working.mapper.ToolObservationMapper`'s table beside
``PathArg`` / ``QueryArg`` / ``ByCommand``, and decide failure themselves: a failed test run
is still worth remembering (as ``failed``), where a failed read or write is not.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Final, Protocol

from langchain_builderforce_memory.working.memory import FileKind, Observation
from langchain_builderforce_memory.working.outcome import (
    exit_code,
    failed_output,
    test_outcome,
)
from langchain_builderforce_memory.working.patch import patch_observations
from langchain_builderforce_memory.working.shell import ran_target, read_shell_command

__all__ = [
    "IPythonCode",
    "OutputPath",
    "PatchArg",
    "ReadsOutput",
    "ShellCommand",
    "shell_observations",
]

SHELL_KEYS: Final = ("command", "cmd", "commands", "script")
"""Argument names a shell command line is looked up under, first present wins."""


class ReadsOutput(Protocol):
    """A rule part that reads the call's output as well as its input."""

    def observe(
        self,
        args: Mapping[str, object] | str,
        output: str,
        errored: bool,
        known: Collection[str] = (),
    ) -> list[Observation]:
        """The observations of one call (``errored``: the harness marked it failed).

        ``known``: the paths earlier calls of the run showed exist (``listed``).
        """
        ...


def _text_arg(args: Mapping[str, object] | str, keys: tuple[str, ...]) -> str:
    if isinstance(args, str):
        return args
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return "\n".join(value)  # ShellTool's `commands` list
    return ""


def shell_observations(
    command: str, output: str = "", errored: bool = False, known: Collection[str] = ()
) -> list[Observation]:
    r"""What a shell command did, judged by its output: the successes-only rule for shells.

    A test or build run is recorded with its outcome (``passed`` / ``failed``) whatever the
    exit code; everything else only when the call succeeded (a known exit code of 0, or
    else no error text in the output). A command that cannot be read is a ``ran``. The
    paths its output shows exist come first, as ``listed`` (a glob's matches, ``rg --files``):
    a later glob whose output is cut short takes them (pass them back as ``known``).

    Example:
        >>> shell_observations("cat src/app.py", "<returncode>0</returncode>\n<output>x</output>")
        [Observation(kind='read', target='src/app.py')]
        >>> shell_observations("cat nope.py", "cat: nope.py: No such file or directory")
        []
        >>> shell_observations("pytest -q | tail -3", "===== 1 failed, 2 passed in 0.1s =")
        [Observation(kind='failed', target='pytest -q')]
    """
    reading = read_shell_command(command, output=output, known=known)
    code = exit_code(output)
    failed = errored or (code != 0 if code is not None else failed_output(output))
    out: list[Observation] = []
    if reading.runs:
        outcome = test_outcome(output, code) if output else None
        kind = outcome or ("failed" if failed and (output or errored) else "ran")
        out += [Observation(kind, run) for run in reading.runs]
    if failed:
        return out
    out = [*map(Observation.listed, reading.listed), *reading.observations, *out]
    if reading.unread:
        out.append(Observation.ran(ran_target(command)))
    return out


@dataclass(frozen=True, slots=True)
class ShellCommand:
    """Rule part: the call ran a shell command line (``bash``, ``exec_command``, ``Bash``)."""

    keys: tuple[str, ...] = SHELL_KEYS
    """Argument names the command line is looked up under."""

    def observe(
        self,
        args: Mapping[str, object] | str,
        output: str,
        errored: bool,
        known: Collection[str] = (),
    ) -> list[Observation]:
        """The command's observations (see :func:`shell_observations`)."""
        command = _text_arg(args, self.keys)
        if not command.strip("` \n") and isinstance(args, Mapping):
            command = _fenced(args.get("input"))
        return shell_observations(command, output, errored, known) if command.strip() else []


_FENCE: Final = re.compile(r"```(?:bash|sh|shell|zsh|console)?\n(.*?)\n```|`([^`\n]+)`", re.S)


def _fenced(text: object) -> str:
    """The command a SpecStory rendering keeps only in its ``input`` (fenced, or in ticks)."""
    m = _FENCE.search(text) if isinstance(text, str) else None
    return (m.group(1) or m.group(2)) if m else ""


@dataclass(frozen=True, slots=True)
class PatchArg:
    """Rule part: the call applied a patch.

    Codex's ``apply_patch`` envelope, a unified diff, or OpenAI's built-in ``apply_patch``
    (one ``operation``: its type and the file it names).
    """

    keys: tuple[str, ...] = ("input", "patch", "diff")
    """Argument names the patch text is looked up under."""

    def observe(
        self,
        args: Mapping[str, object] | str,
        output: str,
        errored: bool,
        known: Collection[str] = (),
    ) -> list[Observation]:
        """The files the patch touches, unless the call failed."""
        if errored or _PATCH_FAILED.search(output[:400]):
            return []
        if isinstance(args, Mapping) and (kind := _OPERATIONS.get(str(args.get("type")))):
            path = args.get("path")
            return [Observation(kind, path)] if isinstance(path, str) and path else []
        return patch_observations(_text_arg(args, self.keys))


_OPERATIONS: Final[Mapping[str, FileKind]] = {
    "create_file": "created",
    "update_file": "edited",
    "delete_file": "deleted",
}
"""OpenAI ``apply_patch`` operation types, and what each did to its ``path``."""


_PATCH_FAILED: Final = re.compile(
    r"verification failed|^error|failed to apply|patch does not apply", re.I | re.M
)


@dataclass(frozen=True, slots=True)
class OutputPath:
    """Rule part: the path is in the tool's answer, when the rule's other parts found none.

    SpecStory's ``Edit`` keeps no arguments; its answer says "The file X has been updated
    successfully."
    """

    kind: FileKind
    """What the call did to the path."""
    pattern: re.Pattern[str]
    """Matches the answer; its first group that matched is the path."""

    def observe(
        self,
        args: Mapping[str, object] | str,
        output: str,
        errored: bool,
        known: Collection[str] = (),
    ) -> list[Observation]:
        """The path the answer names, unless the call failed."""
        m = None if errored else self.pattern.search(output[:2_000])
        path = next((g for g in m.groups() if g), None) if m else None
        return [Observation(self.kind, path)] if path else []


_IPYTHON_FAILED: Final = ("[Your proposed edit", "[No exact match found", "[Error")
_IPYTHON_CALLS: Final[dict[str, FileKind | None]] = {
    "open_file": "read",
    "goto_line": None,
    "create_file": "created",
    "edit_file_by_replace": "edited",
    "insert_content_at_line": "edited",
    "append_file": "edited",
    "search_file": None,
    "search_dir": None,
    "find_file": None,
}


@dataclass(frozen=True, slots=True)
class IPythonCode:
    """Rule part: an OpenHands CodeAct IPython cell calling its file helpers.

    ``open_file('a.py')``, ``edit_file_by_replace('a.py', ...)``, ``search_dir('x')``...
    The cell is parsed with :mod:`ast`, never evaluated; a cell that does not parse
    records nothing.
    """

    keys: tuple[str, ...] = ("code",)
    """Argument names the cell's source is looked up under."""

    def observe(
        self,
        args: Mapping[str, object] | str,
        output: str,
        errored: bool,
        known: Collection[str] = (),
    ) -> list[Observation]:
        """The helpers' observations, unless the cell failed."""
        if errored or failed_output(output) or output.lstrip().startswith(_IPYTHON_FAILED):
            return []
        try:
            tree = ast.parse(_text_arg(args, self.keys))
        except (SyntaxError, ValueError):
            return []
        out: list[Observation] = []
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            name = node.func.id
            first = node.args[0] if node.args else None
            value = first.value if isinstance(first, ast.Constant) else None
            if name not in _IPYTHON_CALLS or not isinstance(value, str):
                continue
            kind = _IPYTHON_CALLS[name]
            scope = node.args[1] if len(node.args) > 1 else None
            where = scope.value if isinstance(scope, ast.Constant) else None
            where = where if isinstance(where, str) else None
            out.append(
                Observation(kind, value)
                if kind
                else Observation.searched(f'{name} "{value}"' + (f" in {where}" if where else ""))
            )
        return out
