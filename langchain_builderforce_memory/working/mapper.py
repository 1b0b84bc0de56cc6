"""Tool calls -> working-memory observations: the tool-name table and its overrides.

The memory knows observations, never tool names, so something has to translate "the
model called `move_file(source_path=a, destination_path=b)` and it worked" into "a is
gone, b was created". `ToolObservationMapper` does that from a data table of the tool names
agents actually have (LangChain's file-management toolkit, deepagents, Claude Code,
OpenHands' editor, anything named like a search), overridable per tool.

Only SUCCESSFUL calls map to observations: a `ToolMessage` with `status="error"`, or an
output that reads as an error (the file-management tools return `"Error: ..."` instead of
raising), maps to nothing. A memory that claims a write that failed grounds every later
turn on a lie; a missed read only costs a re-read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Protocol, TypeAlias

from langchain_core.messages import ToolMessage
from langgraph.types import Command

from langchain_builderforce_memory.working.agent_tools import (
    IPythonCode,
    OutputPath,
    PatchArg,
    ShellCommand,
)
from langchain_builderforce_memory.working.memory import (
    FILE_KINDS,
    FileKind,
    Observation,
    ObservationKind,
)
from langchain_builderforce_memory.working.outcome import output_text

__all__ = [
    "DEFAULT_TOOL_RULES",
    "ByCommand",
    "ObservationFn",
    "ObservationMapper",
    "PathArg",
    "QueryArg",
    "ToolObservationMapper",
    "ToolRule",
    "observations_from_tool_call",
    "parse_tool_input",
]

PATH_KEYS: Final = ("file_path", "path", "filepath", "filename", "file", "target_file")
"""Argument names a file path is looked up under, first present wins."""
QUERY_KEYS: Final = ("query", "pattern", "q", "regex", "search_query", "search", "keyword")
"""Argument names a search query is looked up under, first present wins."""

ObservationFn: TypeAlias = Callable[
    [str, "Mapping[str, object] | str", object], "Observation | Sequence[Observation] | None"
]
"""A per-tool override: `(tool name, parsed input, output) -> observation(s) or None`."""


@dataclass(frozen=True, slots=True)
class PathArg:
    """Rule part: the path(s) in the first of `keys` present are `kind`.

    A list of paths under the key yields one observation each. A tool called with a bare
    string gives that string to the rule's first part.
    """

    kind: FileKind
    """What the call did to the path."""
    keys: tuple[str, ...] = PATH_KEYS
    """Argument names to look the path up under."""


@dataclass(frozen=True, slots=True)
class QueryArg:
    """Rule part: the call was a search, recorded as `name "query"` (`in <scope>`).

    The seed's hosts render a search the same way (`search_code "canvas"`), so a repeated
    search counts up in the brief instead of listing twice.
    """

    keys: tuple[str, ...] = QUERY_KEYS
    """Argument names to look the query up under."""
    scope_keys: tuple[str, ...] = ()
    """Argument names of where it searched (a directory), rendered as ` in <scope>`."""
    default: str | None = None
    """The query when no key is present (`list_directory` with no `dir_path` lists `.`)."""


@dataclass(frozen=True, slots=True)
class ByCommand:
    """Rule part: dispatch on a sub-command argument (OpenHands' `str_replace_editor`)."""

    arg: str
    """The argument holding the sub-command."""
    cases: Mapping[str, tuple[PathArg | QueryArg, ...]]
    """Sub-command -> the rule parts it stands for; other sub-commands record nothing."""


RulePart: TypeAlias = (
    "PathArg | QueryArg | ByCommand | ShellCommand | PatchArg | OutputPath | IPythonCode"
)
ToolRule: TypeAlias = "tuple[RulePart, ...]"
_PART_TYPES: Final = (PathArg, QueryArg, ByCommand, ShellCommand, PatchArg, OutputPath, IPythonCode)
_OUTPUT_PARTS: Final = (ShellCommand, PatchArg, OutputPath, IPythonCode)
"""Parts that read the call's output and judge its failure themselves."""
"""How one tool's call becomes observations: each part contributes, in order."""
Override: TypeAlias = "ToolRule | RulePart | ObservationKind | ObservationFn | None"


_UPDATED: Final = re.compile(r"^The file (\S+) has been (?:updated|edited)")
_WRITTEN: Final = re.compile(
    r"^(?:File created successfully at: (\S+)|The file (\S+) has been (?:updated|edited))"
)


_SHELL_TOOLS: Final = (
    "bash",
    "Bash",
    "exec_command",
    "shell",
    "execute_bash",
    "run",
    "terminal",
    "execute",
    "run_shell_command",
    "local_shell",
)


def _path(kind: FileKind, *keys: str) -> tuple[PathArg]:
    return (PathArg(kind, keys or PATH_KEYS),)


_EDITOR: Final = ByCommand(
    "command",
    {
        "view": _path("read", "path"),
        "create": _path("created", "path"),
        "str_replace": _path("edited", "path"),
        "insert": _path("edited", "path"),
        "undo_edit": _path("edited", "path"),
        # Only langchain-anthropic's Claude text-editor and memory middleware have these.
        "delete": _path("deleted", "path"),
        "rename": (PathArg("deleted", ("old_path",)), PathArg("created", ("new_path",))),
    },
)

DEFAULT_TOOL_RULES: Final[Mapping[str, ToolRule]] = MappingProxyType(
    {
        # LangChain's file-management toolkit (langchain_community.agent_toolkits) and
        # deepagents share `read_file` / `write_file`; both name the path `file_path`.
        # A write is `created`: deepagents refuses to overwrite, and the brief and the
        # map both fold created and edited into "changed" anyway.
        "read_file": _path("read", "file_path", "path"),
        "write_file": _path("created", "file_path", "path"),
        "file_delete": _path("deleted", "file_path"),
        "copy_file": (PathArg("read", ("source_path",)), PathArg("created", ("destination_path",))),
        "move_file": (
            PathArg("deleted", ("source_path",)),
            PathArg("created", ("destination_path",)),
        ),
        "list_directory": (QueryArg(("dir_path",), default="."),),
        "file_search": (QueryArg(("pattern",), scope_keys=("dir_path",)),),
        # deepagents' FilesystemMiddleware.
        "ls": (QueryArg(("path",), default="/"),),
        "edit_file": _path("edited", "file_path", "path"),
        "glob": (QueryArg(("pattern",), scope_keys=("path",)),),
        "grep": (QueryArg(("pattern",), scope_keys=("path",)),),
        # Claude Code's tools, as they appear in recorded runs.
        "Read": _path("read", "file_path"),
        # SpecStory's renderings keep no path in Edit / Write arguments: the answer has it.
        "Write": (PathArg("created", ("file_path",)), OutputPath("created", _WRITTEN)),
        "Edit": (PathArg("edited", ("file_path",)), OutputPath("edited", _UPDATED)),
        "MultiEdit": (PathArg("edited", ("file_path",)), OutputPath("edited", _UPDATED)),
        "NotebookEdit": _path("edited", "notebook_path"),
        "Grep": (QueryArg(("pattern",), scope_keys=("path",)),),
        "Glob": (QueryArg(("pattern",), scope_keys=("path",)),),
        "LS": (QueryArg(("path",)),),
        # One editor tool whose sub-command says what it did: OpenHands / SWE-agent and
        # Claude's older text editor (`str_replace_editor`); Claude's current text editor
        # (`str_replace_based_edit_tool`: the Messages API tool and langchain-anthropic's
        # text-editor middleware); Claude's memory tool (files under `/memories`).
        "str_replace_editor": (_EDITOR,),
        "str_replace_based_edit_tool": (_EDITOR,),
        "memory": (_EDITOR,),
        # LangChain's FilesystemFileSearchMiddleware (and langchain-anthropic's).
        "glob_search": (QueryArg(("pattern",), scope_keys=("path",)),),
        "grep_search": (QueryArg(("pattern",), scope_keys=("path",)),),
        # Shells: mini-swe-agent and SWE-agent (`bash`), Claude Code (`Bash`), Codex
        # (`exec_command`, `shell`), OpenHands (`execute_bash`, legacy `run`), LangChain's
        # ShellTool (`terminal`), deepagents' sandboxes (`execute`), Gemini CLI.
        **dict.fromkeys(_SHELL_TOOLS, (ShellCommand(),)),
        "apply_patch": (PatchArg(),),
        "run_ipython": (IPythonCode(),),
        "execute_ipython_cell": (IPythonCode(),),
    }
)
"""The default rules, by exact tool name."""

_SEARCH_HINTS: Final = ("search", "grep")
_ERROR_TEXT: Final = re.compile(r"\s*(?:error\s*:|<tool_use_error>)", re.IGNORECASE)
_REPR_PAIR = re.compile(r"""(['"])(\w+)\1\s*:\s*(['"])(.*?)(?<!\\)\3""")
_REPR_ESCAPE = re.compile(r"\\(.)")


def parse_tool_input(args: Mapping[str, object] | str) -> Mapping[str, object] | str:
    """Tool input as a mapping of arguments, or the bare string the tool was called with.

    A string is tried as JSON first, then as the `str(dict)` rendering LangChain puts in
    `on_tool_start`'s `input_str` (its string-valued `'key': 'value'` pairs are read with a
    regex, never evaluated); anything else is the bare input. Input that is neither a
    mapping nor a string (``None``, a number, a list: a tool call built without validation)
    is read as no arguments, so a malformed call is not observed instead of failing a turn.

    Example:
        >>> parse_tool_input('{"file_path": "a.ts"}')
        {'file_path': 'a.ts'}
        >>> parse_tool_input("{'file_path': 'a.ts', 'limit': 5}")
        {'file_path': 'a.ts'}
        >>> parse_tool_input("canvas")
        'canvas'
    """
    given: object = args  # checked at run time: a hand-built call can carry anything
    if isinstance(given, Mapping):
        return given
    if not isinstance(given, str):
        return {}
    text = given.strip()
    try:
        loaded = json.loads(text)
    except ValueError:
        loaded = None
    if isinstance(loaded, dict):
        return {str(k): v for k, v in loaded.items()}
    if isinstance(loaded, str):
        return loaded
    if text.startswith("{") and text.endswith("}"):
        pairs = {m.group(2): _REPR_ESCAPE.sub(r"\1", m.group(4)) for m in _REPR_PAIR.finditer(text)}
        if pairs:
            return pairs
    return text


def _values(args: Mapping[str, object] | str, keys: tuple[str, ...], first: bool) -> list[str]:
    if isinstance(args, str):
        return [args] if first and args else []
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return [value]
        if isinstance(value, (list, tuple)):
            found = [v for v in value if isinstance(v, str) and v.strip()]
            if found:
                return found
    return []


def _apply_rule(
    name: str,
    rule: tuple[RulePart, ...],
    args: Mapping[str, object] | str,
    output: str = "",
    errored: bool = False,
    known: Collection[str] = (),
) -> list[Observation]:
    out: list[Observation] = []
    for i, part in enumerate(rule):
        if isinstance(part, _OUTPUT_PARTS):
            if not (isinstance(part, OutputPath) and out):
                out += part.observe(args, output, errored, known)
        elif errored:
            continue
        elif isinstance(part, ByCommand):
            command = args.get(part.arg) if isinstance(args, Mapping) else None
            case = part.cases.get(command) if isinstance(command, str) else None
            out += _apply_rule(name, case, args, output, known=known) if case else []
        elif isinstance(part, PathArg):
            out += [Observation(part.kind, p) for p in _values(args, part.keys, i == 0)]
        else:
            queries = _values(args, part.keys, i == 0) or ([part.default] if part.default else [])
            scope = _values(args, part.scope_keys, False)[:1]
            where = f" in {scope[0]}" if scope else ""
            out += [Observation.searched(f'{name} "{q}"{where}') for q in queries]
    return out


def _normalize_override(name: str, value: Override) -> tuple[RulePart, ...] | ObservationFn | None:
    if value is None:
        return None
    if isinstance(value, tuple):
        if not value or not all(isinstance(p, _PART_TYPES) for p in value):
            raise ValueError(
                f"overrides[{name!r}]: a rule is a non-empty tuple of PathArg / QueryArg / "
                f"ByCommand / ShellCommand / PatchArg / OutputPath / IPythonCode; "
                f"got {value!r:.120}."
            )
        return value
    if isinstance(value, _PART_TYPES):
        return (value,)
    if isinstance(value, str):
        if value == "searched":
            return (QueryArg(),)
        if value in FILE_KINDS:
            return (PathArg(value),)
        raise ValueError(
            f"overrides[{name!r}] = {value!r} is not an observation kind; use one of "
            f"{', '.join((*FILE_KINDS, 'searched'))}, a rule (PathArg / QueryArg / ByCommand), "
            "a callable (name, input, output) -> Observation | list | None, or None."
        )
    if callable(value):
        return value
    raise ValueError(
        f"overrides[{name!r}] must be a kind, a rule, a callable or None; "
        f"got {type(value).__name__}."
    )


def _messages_in(update: object) -> list[object]:
    """The messages a `Command` update carries (a mapping, or `(key, value)` pairs)."""
    if isinstance(update, Mapping):
        pairs: list[tuple[object, object]] = list(update.items())
    elif isinstance(update, (list, tuple)):
        pairs = [p for p in update if isinstance(p, tuple) and len(p) == 2]
    else:
        return []
    out: list[object] = []
    for key, value in pairs:
        if key == "messages":
            out += list(value) if isinstance(value, (list, tuple)) else [value]
    return out


def _output_text(output: object) -> str:
    """The text of what a tool returned: a string, a message's content, a Command's."""
    if isinstance(output, Command):
        found = [m for m in _messages_in(output.update) if isinstance(m, ToolMessage)]
        output = found[0] if found else None
    if isinstance(output, ToolMessage):
        output = output.content
    return output_text(output)


class ObservationMapper(Protocol):
    """What the handler (and the middleware's tool hook) needs from a mapper."""

    def map(
        self, name: str, args: Mapping[str, object] | str, output: object = None
    ) -> list[Observation]:
        """The observations one call stands for; `[]` for a failed or unmapped one."""
        ...


@dataclass(frozen=True, slots=True)
class ToolObservationMapper:
    """Turns a tool call into working-memory observations.

    Rules come from `DEFAULT_TOOL_RULES` (by exact name), then any name containing one of
    `search_hints` is a search; `overrides` win over both. An override is a kind
    (`"read"`: the path in the usual argument names), a rule, a callable
    `(name, input, output) -> Observation | list[Observation] | None`, or `None` to ignore
    the tool.

    Example:
        >>> mapper = ToolObservationMapper()
        >>> mapper.map("move_file", {"source_path": "a.py", "destination_path": "b.py"})
        [Observation(kind='deleted', target='a.py'), Observation(kind='created', target='b.py')]
        >>> mapper.map("write_file", {"file_path": "a.py"}, "Error: permission denied")
        []
        >>> ToolObservationMapper({"open": "read"}).map("open", {"path": "x.py"})
        [Observation(kind='read', target='x.py')]
    """

    overrides: Mapping[str, Override] = field(default_factory=dict)
    """Per tool name: a kind, a rule, a callable, or `None` (ignore that tool)."""
    use_defaults: bool = True
    """Start from `DEFAULT_TOOL_RULES`; `False` maps only `overrides` (and search hints)."""
    search_hints: tuple[str, ...] = _SEARCH_HINTS
    """Lower-case fragments that make an unlisted tool name a search (`search_code`)."""
    failure_text: re.Pattern[str] | None = _ERROR_TEXT
    """Output text that marks a call as failed though it returned (the file-management
    tools return `"Error: ..."`); matched at the start. `None` trusts every return."""
    _rules: Mapping[str, tuple[RulePart, ...] | ObservationFn | None] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if not isinstance(self.overrides, Mapping):
            raise ValueError(
                "ToolObservationMapper.overrides must be a mapping of tool name -> rule; "
                f"got {type(self.overrides).__name__}."
            )
        rules: dict[str, tuple[RulePart, ...] | ObservationFn | None] = (
            dict(DEFAULT_TOOL_RULES) if self.use_defaults else {}
        )
        rules.update({n: _normalize_override(n, v) for n, v in self.overrides.items()})
        object.__setattr__(self, "_rules", MappingProxyType(rules))

    def rule_for(self, name: str) -> tuple[RulePart, ...] | ObservationFn | None:
        """The rule that maps `name`, or `None` when its calls are not observed."""
        if name in self._rules:
            return self._rules[name]
        if any(hint in name.lower() for hint in self.search_hints):
            return (QueryArg(),)
        return None

    def failed(self, output: object) -> bool:
        """True when `output` says the call failed, so it must not be remembered."""
        if isinstance(output, (list, tuple)):
            return any(self.failed(o) for o in output)
        if isinstance(output, Command):
            return any(self.failed(m) for m in _messages_in(output.update))
        if isinstance(output, ToolMessage):
            if output.status == "error":
                return True
            output = output.content
        return (
            self.failure_text is not None
            and isinstance(output, str)
            and self.failure_text.match(output) is not None
        )

    def map(
        self,
        name: str,
        args: Mapping[str, object] | str,
        output: object = None,
        *,
        known_paths: Collection[str] = (),
    ) -> list[Observation]:
        """The observations one SUCCESSFUL call stands for; `[]` for a failed one.

        Args:
            name: The tool's name.
            args: Its input: the argument mapping, or the string it was called with.
            output: What it returned (a `ToolMessage`, a `Command`, a string...), or
                `None` when not known; used only to tell a failed call.
            known_paths: Paths earlier calls of the run showed exist
                (`WorkingMemory.known_paths`): a shell glob whose output is cut short
                takes them.

        Raises:
            TypeError: An override callable returned something other than observations.
        """
        rule = self.rule_for(name) if isinstance(name, str) else None
        if rule is None:
            return []
        failed = output is not None and self.failed(output)
        parsed = parse_tool_input(args)
        if isinstance(rule, tuple) and any(isinstance(p, _OUTPUT_PARTS) for p in rule):
            # These parts judge failure themselves: a failed test run is still recorded.
            return _apply_rule(name, rule, parsed, _output_text(output), failed, known_paths)
        if failed:
            return []
        if isinstance(rule, tuple):
            return _apply_rule(name, rule, parsed)
        result = rule(name, parsed, output)
        found = [] if result is None else [result] if isinstance(result, Observation) else result
        if not all(isinstance(o, Observation) for o in found):
            raise TypeError(
                f"The observation override for tool {name!r} must return an Observation, "
                f"a list of them, or None; got {result!r:.120}."
            )
        return list(found)


_DEFAULT_MAPPER: Final = ToolObservationMapper()


def observations_from_tool_call(
    name: str,
    args: Mapping[str, object] | str,
    output: object = None,
    *,
    mapper: ObservationMapper | None = None,
    known_paths: Collection[str] = (),
) -> list[Observation]:
    """The observations a tool call stands for (the default mapper unless one is given).

    The middleware's own tool hook calls this, so it feeds a memory exactly as the
    callback handler does. ``known_paths``: see :meth:`ToolObservationMapper.map`.

    Example:
        >>> observations_from_tool_call("grep", {"pattern": "canvas", "path": "web"})
        [Observation(kind='searched', target='grep "canvas" in web')]
    """
    chosen = mapper or _DEFAULT_MAPPER
    if known_paths and isinstance(chosen, ToolObservationMapper):
        # A mapper of the host's own keeps the protocol's three arguments.
        return chosen.map(name, args, output, known_paths=known_paths)
    return chosen.map(name, args, output)
