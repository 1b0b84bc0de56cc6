"""Shell commands -> what they did to files: reads, searches, edits, test and build runs.

Bash-driven agents (mini-swe-agent, SWE-agent, Codex's ``exec_command``, Claude Code's
``Bash``, OpenHands' ``execute_bash``) do all their work through one tool, so the working
memory learns nothing from the tool's name: it has to read the command. The command is
split into words by the standard library's ``shlex`` (POSIX quoting, operators as their own
tokens), heredoc bodies are set aside first (``shlex`` knows no heredocs; a patch fed to
``git apply`` through one is read as a patch), then each simple command of a pipeline or a
``&&`` / ``;`` chain is read by a table of the commands agents use, with ``cd`` moving the
directory later relative paths are resolved against.

``bashlex`` would give a full syntax tree, but it is GPL-3.0 (this package is MIT), has had
no release since 2023, and rejects constructs agents write (``[[ ]]``, ``$(( ))``, some
heredocs); what the memory needs is the simple commands and their words, which ``shlex``
gives exactly. Anything the table does not know is reported as unread, never guessed: a
path from a misread command is worse than no path.
"""

from __future__ import annotations

import ast
import posixpath
import re
import shlex
from collections.abc import Collection
from dataclasses import dataclass
from typing import Final

from langchain_builderforce_memory.working.memory import FileKind
from langchain_builderforce_memory.working.outcome import is_python, is_test_run
from langchain_builderforce_memory.working.shell_commands import (
    _ASSIGNMENT,
    _UNKNOWN_DIR,
    COMMANDS,
    Context,
    ShellReading,
    git,
    patch,
    split_options,
)

__all__ = ["ShellReading", "python_writes", "ran_target", "read_shell_command"]

_OPERATORS: Final = "();<>|&\n"
_SEPARATORS: Final = frozenset(("&&", "||", ";", "|", "&", "\n", "(", ")", ";;", "|&", ";&"))
_REDIRECTS: Final[dict[str, FileKind | None]] = {
    ">": "created",
    ">|": "created",
    "&>": "created",
    ">>": "edited",
    "&>>": "edited",
    "<": "read",
    ">&": None,
    "<&": None,
    "<<<": None,
}
_HEREDOC: Final = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][\w.-]*)\2")
_WRAPPERS: Final = frozenset(("sudo", "time", "nohup", "nice", "command", "exec", "builtin"))
_KEYWORDS: Final = frozenset(("do", "then", "else", "elif", "if", "while", "until", "!", "{", "}"))
_QUIET: Final = frozenset(
    (
        "echo", "printf", "true", "false", "pwd", "export", "set", "unset", "source", ".",
        "which", "type", "sleep", "clear", "exit", "wait", "read", "alias", "mkdir", "chmod",
        "done", "fi", "esac", "submit", "shopt", "hash", "history", "date", "whoami", "env",
    )
)  # fmt: skip
"""Commands that touch no file of the work by themselves (their redirects still count)."""
_CMD_CHARS: Final = 160
"""How much of an unread command a ``ran`` observation keeps."""


@dataclass(slots=True)
class _Simple:
    words: list[str]
    redirects: list[tuple[str, str]]
    stdin: str | None = None


def _split_heredocs(command: str) -> tuple[str, list[str]]:
    """The command with heredoc bodies taken out, and the bodies in order."""
    lines = command.split("\n")
    kept: list[str] = []
    bodies: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        kept.append(line)
        i += 1
        if _SWE_EDIT.match(line):  # SWE-agent's `edit N:M` takes lines up to end_of_edit
            while i < len(lines) and lines[i].strip() != "end_of_edit":
                i += 1
            i += 1
            continue
        for m in _HEREDOC.finditer(line):
            if line[max(0, m.start() - 1) : m.start()] == "<":  # "<<<" is a here-string
                continue
            body: list[str] = []
            while i < len(lines) and (lines[i].lstrip("\t") if m.group(1) else lines[i]) != m.group(
                3
            ):
                body.append(lines[i])
                i += 1
            i += 1  # the terminator
            bodies.append("\n".join(body))
    return "\n".join(kept), bodies


_SWE_EDIT: Final = re.compile(r"^\s*edit \d+:\d+\s*$")
_QUOTED_OPERATOR: Final = re.compile(r"""(['"])([;&|<>()]+)\1""")
_HIDDEN: Final = "\x00op{}\x00"


def _tokens(command: str) -> list[_Token]:
    # shlex returns a quoted ";;" as the bare word ";;", which reads as an operator: quoted
    # operator characters are hidden from it and put back in the words.
    hidden: list[str] = []

    def hide(m: re.Match[str]) -> str:
        hidden.append(m.group(2))
        return _HIDDEN.format(len(hidden) - 1)

    lexer = shlex.shlex(
        _QUOTED_OPERATOR.sub(hide, command), posix=True, punctuation_chars=_OPERATORS
    )
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    return [_Token(w, hidden) for w in lexer]


class _Token(str):
    """A word as shlex read it; ``text`` puts back the quoted operators hidden from it."""

    __slots__ = ("hidden",)
    hidden: list[str]

    def __new__(cls, word: str, hidden: list[str]) -> _Token:
        token = super().__new__(cls, word)
        token.hidden = hidden
        return token

    @property
    def text(self) -> str:
        out = str(self)
        for i, value in enumerate(self.hidden):
            out = out.replace(_HIDDEN.format(i), value)
        return out


def _simple_commands(tokens: list[_Token], bodies: list[str]) -> list[_Simple]:
    out: list[_Simple] = []
    current = _Simple([], [])
    it = iter(range(len(tokens)))
    for i in it:
        tok = tokens[i]
        if tok in _SEPARATORS:
            if current.words or current.redirects:
                out.append(current)
            current = _Simple([], [])
        elif tok.startswith("#") and not current.words:
            while i + 1 < len(tokens) and tokens[i + 1] != "\n":
                i = next(it)
        elif tok == "<<" or tok == "<<-":
            next(it, None)  # the delimiter word
            current.stdin = bodies.pop(0) if bodies else ""
        elif tok in _REDIRECTS and i + 1 < len(tokens):
            current.redirects.append((tok, tokens[next(it)].text))
        elif tok.isdigit() and i + 1 < len(tokens) and tokens[i + 1] in _REDIRECTS:
            continue  # the file descriptor of "2>" / "2>&1"
        else:
            current.words.append(tok.text)
    if current.words or current.redirects:
        out.append(current)
    return out


def _unwrap(words: list[str]) -> tuple[list[str], bool]:
    """The command under ``sudo`` / ``timeout 30`` / ``env A=1`` / ``xargs -0`` wrappers."""
    from_stdin = False
    while words:
        head = posixpath.basename(words[0])
        if _ASSIGNMENT.match(words[0]) or head in _WRAPPERS or head in _KEYWORDS:
            words = words[1:]
        elif head == "timeout":
            words = [w for w in words[1:] if not w.startswith("-")][1:]
        elif head == "env" and len(words) > 1:
            words = words[1:]
        elif head == "xargs":
            from_stdin = True
            words = split_options(words[1:], frozenset(("-I", "-n", "-P", "-d", "-L", "-s")))[1]
        else:
            break
    return words, from_stdin


def _loop(words: list[str], ctx: Context) -> tuple[str, list[str]] | None:
    """``for f in a.py src/*.md``: the variable, and the paths it takes.

    A glob takes the paths the output shows (the loop's body printed them) or the run
    showed before (:meth:`Context.glob`), so a file is named only when the run saw it.
    """
    if len(words) < 3 or words[1] != "in":
        return None
    values: list[str] = []
    for word in words[2:]:
        taken = ctx.glob(word)
        values += [word] if taken is None else taken
    return words[0], values


_WRITE_MODES: Final = re.compile(r"[wax+]")


def python_writes(source: str) -> list[str]:
    r"""The files a Python script opens for writing: ``open('p', 'w')``, ``Path('p').write_text``.

    Parsed with :mod:`ast`, never run; only literal paths count, and a script that does
    not parse writes nothing known.

    Example:
        >>> python_writes("with open('src/a.py', 'w') as f:\n    f.write(x)")
        ['src/a.py']
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func, args = node.func, node.args
        if isinstance(func, ast.Name) and func.id == "open" and len(args) >= 2:
            path, mode = args[0], args[1]
            if (
                isinstance(path, ast.Constant) and isinstance(path.value, str)
                and isinstance(mode, ast.Constant) and isinstance(mode.value, str)
                and _WRITE_MODES.search(mode.value)
            ):  # fmt: skip
                out.append(path.value)
        elif (
            isinstance(func, ast.Attribute) and func.attr in ("write_text", "write_bytes")
            and isinstance(func.value, ast.Call) and func.value.args
            and isinstance(func.value.args[0], ast.Constant)
            and isinstance(func.value.args[0].value, str)
        ):  # fmt: skip
            out.append(func.value.args[0].value)
    return out


def _read_simple(command: _Simple, ctx: Context) -> None:
    words, ctx.from_stdin = _unwrap(command.words)
    for op, target in command.redirects:
        kind = _REDIRECTS.get(op)
        if kind is not None:
            ctx.add(kind, target)
        if kind == "created" and command.stdin and target.endswith(".py"):
            ctx.scripts[ctx.path(target) or ""] = command.stdin
    if not words:
        return
    name = posixpath.basename(words[0])
    if name == "cd":
        target = words[1] if len(words) > 1 else "~"
        ctx.cwd = ctx.path(target) or _UNKNOWN_DIR
    elif name in ("bash", "sh", "zsh") and len(words) > 2 and words[1] in ("-c", "-lc"):
        _read_line(words[2], ctx)
    elif name == "for":
        ctx.loop = _loop(words[1:], ctx)
    elif name == "done":
        ctx.loop = None
    elif is_test_run(words):
        ctx.reading.runs.append(" ".join(words))
    elif name == "git":
        git(words[1:], ctx, command.stdin)
    elif name == "patch":
        patch(words[1:], ctx, command.stdin)
    elif name in COMMANDS:
        COMMANDS[name](words[1:], ctx)
    elif is_python(name) and len(words) > 1 and ctx.path(words[1]) in ctx.scripts:
        for path in python_writes(ctx.scripts[ctx.path(words[1]) or ""]):
            ctx.add("edited", path)
    else:
        if name not in _QUIET:
            ctx.reading.unread.append(name)
        for word in words[1:]:  # ``wc -l docs/*.md``: the output shows what the glob took
            ctx.glob(word)


def _read_line(command: str, ctx: Context) -> None:
    text, bodies = _split_heredocs(command)
    try:
        tokens = _tokens(text)
    except ValueError:  # an unbalanced quote: nothing can be read safely
        ctx.reading.unread.append(command.split(maxsplit=1)[0] if command.split() else "")
        return
    for simple in _simple_commands(tokens, bodies):
        _read_simple(simple, ctx)


_CURRENT_DIR: Final = re.compile(r"^\(Current directory: (/[^)\n]*)\)", re.M)


def read_shell_command(
    command: str, *, output: str = "", cwd: str | None = None, known: Collection[str] = ()
) -> ShellReading:
    """Read a shell command line into what it did, without running it.

    Args:
        command: The command line, as the agent sent it (pipelines, ``&&`` chains,
            heredocs and ``cd dir && ...`` included).
        output: The command's output, for the commands that name their file only there
            (SWE-agent's ``edit``) and for SWE-agent's ``(Current directory: ...)``.
        cwd: The directory relative paths are resolved against; by default, the one
            SWE-agent's output names, else paths stay relative as written.
        known: Paths earlier calls showed exist (the run's listings): what a glob whose
            matches the output does not show (``for f in docs/*.md; ...`` cut short) takes.

    Example:
        >>> r = read_shell_command("cd /repo && grep -n 'def save' src/base.py | head -5")
        >>> r.observations
        [Observation(kind='searched', target='grep "def save" in /repo/src/base.py')]
        >>> read_shell_command("sed -i 's/a/b/' x.py && python -m pytest -q").runs
        ['python -m pytest -q']
    """
    if cwd is None and (m := _CURRENT_DIR.search(output[-400:])):
        cwd = m.group(1)
    ctx = Context(cwd, output, ShellReading(), known=known)
    _read_line(command.strip(), ctx)
    ctx.list_output()
    return ctx.reading


def ran_target(command: str) -> str:
    """A command as a ``ran`` observation shows it: heredocs out, spaces folded, capped."""
    text = " ".join(_split_heredocs(command.strip())[0].split())
    return text if len(text) <= _CMD_CHARS else text[: _CMD_CHARS - 1] + "…"
