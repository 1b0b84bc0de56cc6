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

import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from langchain_builderforce_memory.working.memory import FileKind, Observation
from langchain_builderforce_memory.working.outcome import is_test_run
from langchain_builderforce_memory.working.patch import patch_observations

__all__ = ["ShellReading", "read_shell_command"]

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
_UNSAFE: Final = re.compile(r"[$`*?\[\]{}~<>|;&]|://")
_ASSIGNMENT: Final = re.compile(r"^[A-Za-z_]\w*=")
_UNKNOWN_DIR: Final = "\0"
_WRAPPERS: Final = frozenset(("sudo", "time", "nohup", "nice", "command", "exec", "builtin"))
_KEYWORDS: Final = frozenset(("do", "then", "else", "elif", "if", "while", "until", "!", "{", "}"))
_QUIET: Final = frozenset(
    (
        "echo", "printf", "true", "false", "pwd", "export", "set", "unset", "source", ".",
        "which", "type", "sleep", "clear", "exit", "wait", "read", "alias", "mkdir", "chmod",
        "done", "fi", "esac", "shopt", "hash", "history", "date", "whoami", "env",
    )
)  # fmt: skip
"""Commands that touch no file of the work by themselves (their redirects still count)."""
_CMD_CHARS: Final = 160
"""How much of an unread command a ``ran`` observation keeps."""


@dataclass(slots=True)
class ShellReading:
    """What one shell command line did, as far as it can be read from the line."""

    observations: list[Observation] = field(default_factory=list)
    """Reads, searches and file changes, in the order the commands ran."""
    runs: list[str] = field(default_factory=list)
    """Test and build runs, each as its command (pipes and redirects left out)."""
    unread: list[str] = field(default_factory=list)
    """Commands whose effect on files is not known (``python x.py``, ``pip install``)."""


@dataclass(slots=True)
class _Simple:
    words: list[str]
    redirects: list[tuple[str, str]]
    stdin: str | None = None


@dataclass(slots=True)
class _Context:
    cwd: str | None
    output: str
    reading: ShellReading
    from_stdin: bool = False

    def path(self, word: str) -> str | None:
        """``word`` as a path resolved against the current directory, or ``None``."""
        if not word or word == "-" or word.startswith("-") or _UNSAFE.search(word):
            return None
        if word.startswith("/"):
            return posixpath.normpath(word)
        if self.cwd == _UNKNOWN_DIR:
            return None
        return posixpath.normpath(posixpath.join(self.cwd, word) if self.cwd else word)

    def add(self, kind: FileKind, word: str) -> None:
        """Record ``word`` as a path ``kind``; a word that is no literal path is unread."""
        path = self.path(word)
        if path is None:
            if _UNSAFE.search(word) or self.cwd == _UNKNOWN_DIR:
                self.reading.unread.append(word)
        elif path not in ("/dev/null", "/dev/stdout", "/dev/stderr"):
            self.reading.observations.append(Observation(kind, path))

    def search(self, tool: str, query: str, scopes: list[str]) -> None:
        where = [p for p in (self.path(s) for s in scopes) if p]
        text = f'{tool} "{query}"' if query else tool
        self.reading.observations.append(
            Observation.searched(f"{text} in {' '.join(where)}" if where else text)
        )


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
        for m in _HEREDOC.finditer(line):
            if line[max(0, m.start() - 1) : m.start()] == "<":  # "<<<" is a here-string
                continue
            body: list[str] = []
            while i < len(lines) and (
                lines[i].lstrip("\t") if m.group(1) else lines[i]
            ) != m.group(3):
                body.append(lines[i])
                i += 1
            i += 1  # the terminator
            bodies.append("\n".join(body))
    return "\n".join(kept), bodies


def _tokens(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=_OPERATORS)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def _simple_commands(tokens: list[str], bodies: list[str]) -> list[_Simple]:
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
            current.redirects.append((tok, tokens[next(it)]))
        elif tok.isdigit() and i + 1 < len(tokens) and tokens[i + 1] in _REDIRECTS:
            continue  # the file descriptor of "2>" / "2>&1"
        else:
            current.words.append(tok)
    if current.words or current.redirects:
        out.append(current)
    return out


def _operands(args: list[str], valued: frozenset[str]) -> tuple[list[str], list[str]]:
    """``args`` split into options and operands; an option in ``valued`` takes the next."""
    flags: list[str] = []
    operands: list[str] = []
    it = iter(args)
    for arg in it:
        if arg == "--":
            operands += list(it)
        elif arg.startswith("-") and len(arg) > 1:
            flags.append(arg)
            if arg in valued:
                flags.append(next(it, ""))
        else:
            operands.append(arg)
    return flags, operands


def _read_files(args: list[str], ctx: _Context, valued: frozenset[str] = frozenset()) -> None:
    for word in _operands(args, valued)[1]:
        ctx.add("read", word)


def _head_tail(args: list[str], ctx: _Context) -> None:
    _read_files(args, ctx, frozenset(("-n", "-c", "--lines", "--bytes")))


def _sed(args: list[str], ctx: _Context) -> None:
    flags, operands = _operands(args, frozenset(("-e", "-f", "--expression", "--file", "-l")))
    scripted = any(f in ("-e", "-f", "--expression", "--file") for f in flags)
    files = operands if scripted else operands[1:]
    kind: FileKind = (
        "edited" if any(f.startswith(("-i", "--in-place")) for f in flags) else "read"
    )
    for word in files:
        ctx.add(kind, word)


def _awk(args: list[str], ctx: _Context) -> None:
    flags, operands = _operands(args, frozenset(("-F", "-v", "-f")))
    files = operands if "-f" in flags else operands[1:]
    inplace = "-i" in flags and "inplace" in flags
    for word in files:
        if not _ASSIGNMENT.match(word):
            ctx.add("edited" if inplace else "read", word)


_GREP_VALUED: Final = frozenset(
    ("-e", "-f", "-m", "-A", "-B", "-C", "-g", "-t", "-T", "-M", "-j", "--glob", "--type",
     "--max-count", "--context", "--include", "--exclude", "--max-depth", "-d", "-D")
)  # fmt: skip


def _grep(tool: str, recursive_default: bool) -> Callable[[list[str], _Context], None]:
    def read(args: list[str], ctx: _Context) -> None:
        flags, operands = _operands(args, _GREP_VALUED)
        patterns = [flags[i + 1] for i, f in enumerate(flags[:-1]) if f == "-e"]
        if not patterns:
            if not operands:
                return
            patterns, operands = [operands[0]], operands[1:]
        recursive = recursive_default or any(
            f in ("-r", "-R", "--recursive") or (f[1:2] != "-" and "r" in f.lower()[1:])
            for f in flags
        )
        if operands or recursive or ctx.from_stdin:
            ctx.search(tool, patterns[0], operands)

    return read


def _find(args: list[str], ctx: _Context) -> None:
    paths: list[str] = []
    i = 0
    while i < len(args) and not args[i].startswith(("-", "(", "!")):
        paths.append(args[i])
        i += 1
    expr = args[i:]
    if "-delete" in expr or ("-exec" in expr and "rm" in expr):
        ctx.reading.unread.append("find")
        return
    names = [
        expr[j + 1]
        for j, a in enumerate(expr[:-1])
        if a in ("-name", "-iname", "-path", "-ipath", "-regex", "-wholename")
    ]
    ctx.search("find", " ".join(names), paths or ["."])


def _ls(args: list[str], ctx: _Context) -> None:
    operands = _operands(args, frozenset(("-I", "--ignore", "-L")))[1] or ["."]
    for word in operands:
        path = ctx.path(word)
        if path is not None:
            ctx.reading.observations.append(Observation.searched(f'ls "{path}"'))


def _tee(args: list[str], ctx: _Context) -> None:
    flags, operands = _operands(args, frozenset())
    kind: FileKind = "edited" if any(f in ("-a", "--append") for f in flags) else "created"
    for word in operands:
        ctx.add(kind, word)


def _into(target: str, source: str) -> str:
    if target.endswith("/") or target in (".", ".."):
        return posixpath.join(target, posixpath.basename(source))
    return target


def _copy_move(source_kind: FileKind) -> Callable[[list[str], _Context], None]:
    def read(args: list[str], ctx: _Context) -> None:
        flags, operands = _operands(args, frozenset(("-t", "--target-directory", "-S")))
        if len(operands) < 2 or any(f.startswith("-t") for f in flags):
            ctx.reading.unread.append("cp" if source_kind == "read" else "mv")
            return
        *sources, target = operands
        for source in sources:
            ctx.add(source_kind, source)
            ctx.add("created", _into(target, source))

    return read


def _each(
    kind: FileKind, valued: frozenset[str] = frozenset()
) -> Callable[[list[str], _Context], None]:
    def read(args: list[str], ctx: _Context) -> None:
        for word in _operands(args, valued)[1]:
            ctx.add(kind, word)

    return read


def _perl(args: list[str], ctx: _Context) -> None:
    flags, operands = _operands(args, frozenset(("-e", "-E", "-M", "-I")))
    if any(f.startswith("-") and "i" in f[1:].split("e")[0] for f in flags if f[:2] != "--"):
        for word in operands if any(f in ("-e", "-E") for f in flags) else operands[1:]:
            ctx.add("edited", word)
    else:
        ctx.reading.unread.append("perl")


def _patch(args: list[str], ctx: _Context, stdin: str | None) -> None:
    flags, _ = _operands(args, frozenset(("-p", "-i", "-d", "-o")))
    strip = next((int(f[2:]) for f in flags if f[:2] == "-p" and f[2:].isdigit()), 1)
    found = patch_observations(stdin, strip=strip) if stdin else []
    if found:
        ctx.reading.observations += [
            Observation(o.kind, p) for o in found if (p := ctx.path(o.target))
        ]
    else:
        ctx.reading.unread.append("patch")


_GIT_QUERIES: Final = frozenset(("diff", "show", "log", "blame", "status"))


def _git(args: list[str], ctx: _Context, stdin: str | None) -> None:
    while len(args) > 1 and args[0] in ("-C", "-c", "--no-pager"):
        if args[0] == "-C":
            ctx.cwd = ctx.path(args[1]) or _UNKNOWN_DIR
        args = args[2:] if args[0] != "--no-pager" else args[1:]
    sub, rest = (args[0], args[1:]) if args else ("", [])
    if sub in _GIT_QUERIES:
        words = [w for w in rest if not _UNSAFE.search(w)]
        ctx.reading.observations.append(Observation.searched(" ".join(["git", sub, *words])))
    elif sub == "grep":
        _grep("git grep", True)(rest, ctx)
    elif sub in ("apply", "am") and stdin:
        _patch(["-p1"], ctx, stdin)
    elif sub == "restore" or (sub == "checkout" and "--" in rest):
        for word in _operands(rest, frozenset(("-s", "--source")))[1]:
            ctx.add("edited", word)
    elif sub == "rm":
        _each("deleted")(rest, ctx)
    elif sub == "mv":
        _copy_move("deleted")(rest, ctx)
    else:
        ctx.reading.unread.append(f"git {sub}".strip())


_OUTPUT_FILE: Final = re.compile(r"^\[File: (.+?) \(\d+ lines total|^\(Open file: (.+?)\)", re.M)


def _swe_agent(kind: FileKind, from_output: bool) -> Callable[[list[str], _Context], None]:
    """SWE-agent's file commands: ``open path``, ``create path``, ``edit N:M``, ``goto N``."""

    def read(args: list[str], ctx: _Context) -> None:
        m = _OUTPUT_FILE.search(ctx.output) if from_output or not args else None
        if m is not None:
            ctx.add(kind, m.group(1) or m.group(2))
        elif args and not from_output:
            ctx.add(kind, args[0])

    return read


def _swe_search(tool: str) -> Callable[[list[str], _Context], None]:
    def read(args: list[str], ctx: _Context) -> None:
        if args:
            ctx.search(tool, args[0], args[1:2])

    return read


_Handler = Callable[[list[str], _Context], None]
_COMMANDS: Final[dict[str, _Handler]] = {
    "cat": _read_files,
    "nl": lambda a, c: _read_files(a, c, frozenset(("-b", "-s", "-w", "-v", "-i"))),
    "less": _read_files,
    "more": _read_files,
    "bat": _read_files,
    "tac": _read_files,
    "head": _head_tail,
    "tail": _head_tail,
    "sed": _sed,
    "awk": _awk,
    "gawk": _awk,
    "grep": _grep("grep", False),
    "egrep": _grep("grep", False),
    "fgrep": _grep("grep", False),
    "rg": _grep("rg", True),
    "ag": _grep("ag", True),
    "ack": _grep("ack", True),
    "find": _find,
    "ls": _ls,
    "tree": _ls,
    "tee": _tee,
    "cp": _copy_move("read"),
    "mv": _copy_move("deleted"),
    "rm": _each("deleted"),
    "touch": _each("created", frozenset(("-t", "-d", "-r"))),
    "truncate": _each("edited", frozenset(("-s", "--size", "-r"))),
    "perl": _perl,
    "open": _swe_agent("read", False),
    "create": _swe_agent("created", False),
    "edit": _swe_agent("edited", True),
    "goto": _swe_agent("read", True),
    "scroll_down": _swe_agent("read", True),
    "scroll_up": _swe_agent("read", True),
    "search_dir": _swe_search("search_dir"),
    "search_file": _swe_search("search_file"),
    "find_file": _swe_search("find_file"),
    "submit": lambda a, c: None,
}
"""Commands by name (the word's basename); each records what it did into the context."""

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
            words = _operands(words[1:], frozenset(("-I", "-n", "-P", "-d", "-L", "-s")))[1]
        else:
            break
    return words, from_stdin


def _read_simple(command: _Simple, ctx: _Context) -> None:
    words, ctx.from_stdin = _unwrap(command.words)
    for op, target in command.redirects:
        kind = _REDIRECTS.get(op)
        if kind is not None:
            ctx.add(kind, target)
    if not words:
        return
    name = posixpath.basename(words[0])
    if name == "cd":
        target = words[1] if len(words) > 1 else "~"
        ctx.cwd = ctx.path(target) or _UNKNOWN_DIR
    elif name in ("bash", "sh", "zsh") and len(words) > 2 and words[1] in ("-c", "-lc"):
        _read_line(words[2], ctx)
    elif name == "for":
        return
    elif is_test_run(words):
        ctx.reading.runs.append(" ".join(words))
    elif name == "git":
        _git(words[1:], ctx, command.stdin)
    elif name == "patch":
        _patch(words[1:], ctx, command.stdin)
    elif name in _COMMANDS:
        _COMMANDS[name](words[1:], ctx)
    elif name not in _QUIET:
        ctx.reading.unread.append(name)


def _read_line(command: str, ctx: _Context) -> None:
    text, bodies = _split_heredocs(command)
    try:
        tokens = _tokens(text)
    except ValueError:  # an unbalanced quote: nothing can be read safely
        ctx.reading.unread.append(command.split(maxsplit=1)[0] if command.split() else "")
        return
    for simple in _simple_commands(tokens, bodies):
        _read_simple(simple, ctx)


_CURRENT_DIR: Final = re.compile(r"^\(Current directory: (/[^)\n]*)\)", re.M)


def read_shell_command(command: str, *, output: str = "", cwd: str | None = None) -> ShellReading:
    """Read a shell command line into what it did, without running it.

    Args:
        command: The command line, as the agent sent it (pipelines, ``&&`` chains,
            heredocs and ``cd dir && ...`` included).
        output: The command's output, for the commands that name their file only there
            (SWE-agent's ``edit``) and for SWE-agent's ``(Current directory: ...)``.
        cwd: The directory relative paths are resolved against; by default, the one
            SWE-agent's output names, else paths stay relative as written.

    Example:
        >>> r = read_shell_command("cd /repo && grep -n 'def save' src/base.py | head -5")
        >>> r.observations
        [Observation(kind='searched', target='grep "def save" in /repo/src/base.py')]
        >>> read_shell_command("sed -i 's/a/b/' x.py && python -m pytest -q").runs
        ['python -m pytest -q']
    """
    if cwd is None and (m := _CURRENT_DIR.search(output[-400:])):
        cwd = m.group(1)
    ctx = _Context(cwd, output, ShellReading())
    _read_line(command.strip(), ctx)
    return ctx.reading


def ran_target(command: str) -> str:
    """A command as a ``ran`` observation shows it: heredocs out, spaces folded, capped."""
    text = " ".join(_split_heredocs(command.strip())[0].split())
    return text if len(text) <= _CMD_CHARS else text[: _CMD_CHARS - 1] + "…"
