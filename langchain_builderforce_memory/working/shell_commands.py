"""The commands the shell reader knows, each recording what it did into a context.

:mod:`langchain_builderforce_memory.working.shell` splits a command line into simple
commands; each is looked up here by name (``cat``, ``sed``, ``grep``, ``git``, SWE-agent's
``open`` / ``edit``...) and records its reads, searches and changes into a
:class:`ShellReading`, resolving paths against the directory the line has ``cd``-ed to.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Final

from langchain_builderforce_memory.working.memory import FileKind, Observation
from langchain_builderforce_memory.working.patch import patch_observations

__all__ = ["COMMANDS", "Context", "ShellReading", "git", "patch", "split_options"]

_UNSAFE: Final = re.compile(r"[$`*?\[\]{}~<>|;&]|://")
_GLOB_ONLY: Final = re.compile(r"[$`{}~<>|;&]|://")
"""What a glob word must not hold besides ``*``, ``?`` and ``[...]``: it is matched as it is."""
_GLOB: Final = re.compile(r"[*?\[]")
_PATH_WORD: Final = re.compile(r"[\w./-]+")
_ASSIGNMENT: Final = re.compile(r"^[A-Za-z_]\w*=")
_UNKNOWN_DIR: Final = "\0"


@dataclass(slots=True)
class ShellReading:
    """What one shell command line did, as far as it can be read from the line."""

    observations: list[Observation] = field(default_factory=list)
    """Reads, searches and file changes, in the order the commands ran."""
    runs: list[str] = field(default_factory=list)
    """Test and build runs, each as its command (pipes and redirects left out)."""
    unread: list[str] = field(default_factory=list)
    """Commands whose effect on files is not known (``python x.py``, ``pip install``)."""
    listed: dict[str, None] = field(default_factory=dict)
    """Paths the output shows exist (a listing, the files a glob took), in order."""


@dataclass(slots=True)
class Context:
    """What the reader knows while it reads one command line: where it is, what it found."""

    cwd: str | None
    output: str
    reading: ShellReading
    from_stdin: bool = False
    loop: tuple[str, list[str]] | None = None
    """A ``for`` loop's variable and the paths it takes, while its body is read."""
    scripts: dict[str, str] = field(default_factory=dict)
    """Python scripts this command line wrote from a heredoc, by path, for a later run."""
    known: Collection[str] = ()
    """Paths earlier calls of the run showed exist: what a glob the output hides can take."""
    listings: list[tuple[str | None, bool]] = field(default_factory=list)
    """The listing commands of the line: the directory, and whether the output holds names
    under it (``ls``) rather than paths (``find``, ``rg --files``, ``git ls-files``)."""
    _shown: list[str] | None = None

    def path(self, word: str) -> str | None:
        """``word`` as a path resolved against the current directory, or ``None``."""
        if not word or word == "-" or word.startswith("-") or _UNSAFE.search(word):
            return None
        if word.startswith("/"):
            return posixpath.normpath(word)
        if self.cwd == _UNKNOWN_DIR:
            return None
        return posixpath.normpath(posixpath.join(self.cwd, word) if self.cwd else word)

    def glob(self, word: str, *, known: bool = True) -> list[str] | None:
        """The paths glob ``word`` takes, sorted as a shell expands it; ``None``: no glob.

        A path is taken when the output shows it (and is then listed) or, with ``known``,
        when an earlier call of the run did: a truncated output does not hide a file the
        run has seen. Each ``/``-separated part is matched on its own, as the shell does.
        """
        if not _GLOB.search(word) or _GLOB_ONLY.search(word) or word.startswith("-"):
            return None
        if self.cwd == _UNKNOWN_DIR and not word.startswith("/"):
            return []
        pattern = posixpath.normpath(posixpath.join(self.cwd or "", word))
        if self._shown is None:  # the output's words, resolved below against today's cwd
            self._shown = list(dict.fromkeys(_PATH_WORD.findall(self.output)))
        shown = [p for w in self._shown if (p := self.path(w)) and _glob_match(p, pattern)]
        self.reading.listed.update(dict.fromkeys(shown))
        earlier = (p for p in self.known if known and _glob_match(p, pattern))
        return sorted({*shown, *earlier})

    def add(self, kind: FileKind, word: str) -> None:
        """Record ``word`` as a path ``kind``; a word that is no literal path is unread."""
        if self.loop is not None and word in (f"${self.loop[0]}", f"${{{self.loop[0]}}}"):
            for value in self.loop[1]:
                self.add(kind, value)
            return
        # A change is taken from what the output shows only: ``gofmt -w pkg/*.go`` rewrites
        # the files that needed it, which no listing tells.
        taken = self.glob(word, known=kind == "read")
        if taken:
            for value in taken:
                self.reading.observations.append(Observation(kind, value))
            return
        path = self.path(word)
        if path is None:
            if _UNSAFE.search(word) or self.cwd == _UNKNOWN_DIR:
                self.reading.unread.append(word)
        elif path not in ("/dev/null", "/dev/stdout", "/dev/stderr"):
            self.reading.observations.append(Observation(kind, path))

    def list_output(self) -> None:
        """Take the paths the output lists as shown to exist, when one command listed them.

        Two listings in one line (``ls a && ls b``) share one output that cannot be told
        apart, so neither is read. A name must look like a file (``x.py``, ``dir/x``): a
        harness's own header lines are not paths.
        """
        if len(self.listings) != 1:
            return
        base, names = self.listings[0]
        output = self.output.split("\nOutput:\n", 1)[-1]  # Codex's header
        for line in _TAGS.sub("", output).splitlines():
            words = line.split()
            if names and words and _LONG_LISTING.match(words[0]):
                words = words[-1:]
            elif not names:
                words = words if len(words) == 1 else []
            for word in words:
                if not _LISTED.fullmatch(word) or ("." not in word and "/" not in word.strip("/")):
                    continue
                path = self.path(posixpath.join(base or ".", word) if names else word)
                if path is not None:
                    self.reading.listed[path] = None

    def search(self, tool: str, query: str, scopes: list[str]) -> None:
        """Record a search for ``query`` by ``tool`` in ``scopes`` (resolved paths)."""
        where = [p for p in (self.path(s) for s in scopes) if p]
        text = f'{tool} "{query}"' if query else tool
        self.reading.observations.append(
            Observation.searched(f"{text} in {' '.join(where)}" if where else text)
        )


_TAGS: Final = re.compile(r"</?(?:output|returncode)>")
"""mini-swe-agent's output markup."""
_LONG_LISTING: Final = re.compile(r"^[-dlbcps][-rwxsStT@+.]{9}")
"""The mode column of ``ls -l``: the name is the line's last word."""
_LISTED: Final = re.compile(r"(?:\.\.?/)*\.?\w[\w.@+-]*(?:/[\w.@+-]+)*/?")


def _glob_match(path: str, pattern: str) -> bool:
    """Whether ``path`` is one the shell's ``pattern`` takes (``*`` never crosses a ``/``)."""
    parts, wanted = path.split("/"), pattern.split("/")
    return len(parts) == len(wanted) and all(
        fnmatch.fnmatchcase(p, w) for p, w in zip(parts, wanted, strict=True)
    )


def split_options(args: list[str], valued: frozenset[str]) -> tuple[list[str], list[str]]:
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


@dataclass(frozen=True, slots=True)
class _Each:
    """``cat a b``, ``rm -rf a``, ``touch a``: every operand is ``kind``."""

    kind: FileKind
    """What the command does to each operand."""
    valued: frozenset[str] = frozenset()
    """Options that take the next word as their value (``head -n 5``)."""

    def __call__(self, args: list[str], ctx: Context) -> None:
        for word in split_options(args, self.valued)[1]:
            ctx.add(self.kind, word)


def _sed(args: list[str], ctx: Context) -> None:
    flags, operands = split_options(args, frozenset(("-e", "-f", "--expression", "--file", "-l")))
    scripted = any(f in ("-e", "-f", "--expression", "--file") for f in flags)
    files = operands if scripted else operands[1:]
    kind: FileKind = "edited" if any(f.startswith(("-i", "--in-place")) for f in flags) else "read"
    for word in files:
        ctx.add(kind, word)


def _awk(args: list[str], ctx: Context) -> None:
    flags, operands = split_options(args, frozenset(("-F", "-v", "-f")))
    files = operands if "-f" in flags else operands[1:]
    inplace = "-i" in flags and "inplace" in flags
    for word in files:
        if not _ASSIGNMENT.match(word):
            ctx.add("edited" if inplace else "read", word)


_GREP_VALUED: Final = frozenset(
    ("-e", "-f", "-m", "-A", "-B", "-C", "-g", "-t", "-T", "-M", "-j", "--glob", "--type",
     "--max-count", "--context", "--include", "--exclude", "--max-depth", "-d", "-D")
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Grep:
    """``grep -n pat a.py``, ``rg pat``: a search, unless it only filters a pipe."""

    tool: str
    """The name the search is recorded under."""
    recursive: bool
    """Searches the directory when given no path (``rg``), where ``grep`` reads stdin."""

    def __call__(self, args: list[str], ctx: Context) -> None:
        flags, operands = split_options(args, _GREP_VALUED)
        if "--files" in flags:  # rg --files [dir]: a listing, not a search for "dir"
            ctx.search(f"{self.tool} --files", "", operands or ["."])
            ctx.listings.append((None, False))
            return
        patterns = [flags[i + 1] for i, f in enumerate(flags[:-1]) if f == "-e"]
        if not patterns:
            if not operands:
                return
            patterns, operands = [operands[0]], operands[1:]
        recursive = self.recursive or any(
            f in ("-r", "-R", "--recursive") or (f[1:2] != "-" and "r" in f.lower()[1:])
            for f in flags
        )
        if operands or recursive or ctx.from_stdin:
            ctx.search(self.tool, patterns[0], operands)


_FIND_OUTPUTS: Final = ("-exec", "-ok", "-print0", "-printf", "-fprint", "-ls")


def _find(args: list[str], ctx: Context) -> None:
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
    if not any(a.startswith(_FIND_OUTPUTS) for a in expr):  # else it prints no path list
        ctx.listings.append((None, False))
    ctx.search("find", " ".join(names), paths or ["."])


def _ls(args: list[str], ctx: Context) -> None:
    flags, operands = split_options(args, frozenset(("-I", "--ignore", "-L")))
    operands = operands or ["."]
    if len(operands) == 1 and not any("R" in f for f in flags if not f.startswith("--")):
        ctx.listings.append((operands[0], True))
    for word in operands:
        path = ctx.path(word)
        if path is not None:
            ctx.reading.observations.append(Observation.searched(f'ls "{path}"'))


def _tee(args: list[str], ctx: Context) -> None:
    flags, operands = split_options(args, frozenset())
    kind: FileKind = "edited" if any(f in ("-a", "--append") for f in flags) else "created"
    for word in operands:
        ctx.add(kind, word)


def _into(target: str, source: str) -> str:
    if target.endswith("/") or target in (".", ".."):
        return posixpath.join(target, posixpath.basename(source))
    return target


@dataclass(frozen=True, slots=True)
class _CopyMove:
    """``cp a b`` (a read, b created) and ``mv a b`` (a gone, b created)."""

    source_kind: FileKind
    """What happens to each source."""

    def __call__(self, args: list[str], ctx: Context) -> None:
        flags, operands = split_options(args, frozenset(("-t", "--target-directory", "-S")))
        if len(operands) < 2 or any(f.startswith("-t") for f in flags):
            ctx.reading.unread.append("cp" if self.source_kind == "read" else "mv")
            return
        *sources, target = operands
        for source in sources:
            ctx.add(self.source_kind, source)
            ctx.add("created", _into(target, source))


@dataclass(frozen=True, slots=True)
class _Formatter:
    """``gofmt -w f``, ``black f``, ``prettier --write f``: the files are rewritten."""

    writes: tuple[str, ...] = ()
    """The flags that make it write; none: it always writes. Without them it only checks."""

    def __call__(self, args: list[str], ctx: Context) -> None:
        flags, operands = split_options(args, frozenset(("--config", "-l", "--line-length")))
        if self.writes and not any(f in self.writes for f in flags):
            return  # a check (``gofmt -l``) changes nothing
        for word in operands:
            ctx.add("edited", word)


def _perl(args: list[str], ctx: Context) -> None:
    flags, operands = split_options(args, frozenset(("-e", "-E", "-M", "-I")))
    if any(f.startswith("-") and "i" in f[1:].split("e")[0] for f in flags if f[:2] != "--"):
        for word in operands if any(f in ("-e", "-E") for f in flags) else operands[1:]:
            ctx.add("edited", word)
    else:
        ctx.reading.unread.append("perl")


def patch(args: list[str], ctx: Context, stdin: str | None) -> None:
    """``patch -p1`` / ``git apply`` fed a diff on stdin: the files the diff touches."""
    flags, _ = split_options(args, frozenset(("-p", "-i", "-d", "-o")))
    strip = next((int(f[2:]) for f in flags if f[:2] == "-p" and f[2:].isdigit()), 1)
    found = patch_observations(stdin, strip=strip) if stdin else []
    if found:
        ctx.reading.observations += [
            Observation(o.kind, p) for o in found if (p := ctx.path(o.target))
        ]
    else:
        ctx.reading.unread.append("patch")


_GIT_QUERIES: Final = frozenset(("diff", "show", "log", "blame", "status", "ls-files"))
_PATHS_UPDATED: Final = re.compile(r"^Updated \d+ paths? from", re.M)
"""What ``git checkout <path>`` prints: the operands were paths, not a branch."""


def git(args: list[str], ctx: Context, stdin: str | None) -> None:
    """``git``: queries are searches, ``restore`` / ``checkout -- p`` edits, ``rm`` / ``mv``."""
    while len(args) > 1 and args[0] in ("-C", "-c", "--no-pager"):
        if args[0] == "-C":
            ctx.cwd = ctx.path(args[1]) or _UNKNOWN_DIR
        args = args[2:] if args[0] != "--no-pager" else args[1:]
    sub, rest = (args[0], args[1:]) if args else ("", [])
    if sub == "ls-files":
        ctx.listings.append((None, False))
    if sub in _GIT_QUERIES:
        words = [w for w in rest if not _UNSAFE.search(w)]
        ctx.reading.observations.append(Observation.searched(" ".join(["git", sub, *words])))
    elif sub == "grep":
        _Grep("git grep", recursive=True)(rest, ctx)
    elif sub in ("apply", "am") and stdin:
        patch(["-p1"], ctx, stdin)
    elif sub == "restore" or (
        sub == "checkout" and ("--" in rest or _PATHS_UPDATED.search(ctx.output[:400]))
    ):
        for word in split_options(rest, frozenset(("-s", "--source")))[1]:
            ctx.add("edited", word)
    elif sub == "rm":
        _Each("deleted")(rest, ctx)
    elif sub == "mv":
        _CopyMove("deleted")(rest, ctx)
    else:
        ctx.reading.unread.append(f"git {sub}".strip())


_OUTPUT_FILE: Final = re.compile(r"^\[File: (.+?) \(\d+ lines total|^\(Open file: (.+?)\)", re.M)


@dataclass(frozen=True, slots=True)
class _SweAgentFile:
    """SWE-agent's file commands: ``open path``, ``create path``, ``edit N:M``, ``goto N``."""

    kind: FileKind
    """What the command does to the file."""
    from_output: bool
    """The file is the one the output names (``[File: ...]``), not an argument."""

    def __call__(self, args: list[str], ctx: Context) -> None:
        m = _OUTPUT_FILE.search(ctx.output) if self.from_output or not args else None
        if m is not None:
            ctx.add(self.kind, m.group(1) or m.group(2))
        elif args and not self.from_output:
            ctx.add(self.kind, args[0])


@dataclass(frozen=True, slots=True)
class _SweSearch:
    """SWE-agent's ``search_dir term [dir]``, ``search_file term [file]``, ``find_file``."""

    tool: str
    """The command, recorded as the search's name."""

    def __call__(self, args: list[str], ctx: Context) -> None:
        if args:
            ctx.search(self.tool, args[0], args[1:2])


_Handler = Callable[[list[str], Context], None]
_READS: Final = _Each("read")
_HEAD_TAIL: Final = _Each("read", frozenset(("-n", "-c", "--lines", "--bytes")))
COMMANDS: Final[dict[str, _Handler]] = {
    "cat": _READS,
    "nl": _Each("read", frozenset(("-b", "-s", "-w", "-v", "-i"))),
    "less": _READS,
    "more": _READS,
    "bat": _READS,
    "tac": _READS,
    "head": _HEAD_TAIL,
    "tail": _HEAD_TAIL,
    "sed": _sed,
    "awk": _awk,
    "gawk": _awk,
    "grep": _Grep("grep", recursive=False),
    "egrep": _Grep("grep", recursive=False),
    "fgrep": _Grep("grep", recursive=False),
    "rg": _Grep("rg", recursive=True),
    "ag": _Grep("ag", recursive=True),
    "ack": _Grep("ack", recursive=True),
    "find": _find,
    "ls": _ls,
    "tree": _ls,
    "tee": _tee,
    "cp": _CopyMove("read"),
    "mv": _CopyMove("deleted"),
    "rm": _Each("deleted"),
    "touch": _Each("created", frozenset(("-t", "-d", "-r"))),
    "truncate": _Each("edited", frozenset(("-s", "--size", "-r"))),
    "perl": _perl,
    "gofmt": _Formatter(("-w",)),
    "rustfmt": _Formatter(),
    "black": _Formatter(),
    "prettier": _Formatter(("--write", "-w")),
    "open": _SweAgentFile("read", from_output=False),
    "create": _SweAgentFile("created", from_output=False),
    "edit": _SweAgentFile("edited", from_output=True),
    "goto": _SweAgentFile("read", from_output=True),
    "scroll_down": _SweAgentFile("read", from_output=True),
    "scroll_up": _SweAgentFile("read", from_output=True),
    "search_dir": _SweSearch("search_dir"),
    "search_file": _SweSearch("search_file"),
    "find_file": _SweSearch("find_file"),
}
"""Commands by name (the word's basename); each records what it did into the context."""
