"""``bfmem demo``: an offline coding agent run through the middleware, and what it cost.

:func:`run_demo` plays a scripted coding run (:mod:`~langchain_builderforce_memory.testing`:
reads, greps and edits with multi-kilobyte outputs, parallel calls, several user
directives) through ``langchain.agents.create_agent`` with
:class:`~langchain_builderforce_memory.agents.middleware.BuilderforceMemoryMiddleware` and a
``SqliteSaver`` checkpointer, and returns a :class:`DemoResult`: per model call, what the
full record would have cost against what the model was actually sent, where the folds
happened, the summarizer calls, prefix reuse and the brief. Nothing needs an API key or
the network: the agent and the summarizer are :class:`~langchain_builderforce_memory.
testing.ScriptedChatModel` s, and both record every request they were sent, so the result
can be checked against what the models saw.

Checkpoints are written once per directive (``durability="exit"``), not after every step:
the SQLite saver stores the whole state each time, and a 300-call run re-serialised its
growing record ~600 times (~800 MB, most of the run's time). Once per ``invoke`` is what
resuming a thread needs: the memo and the working memory are in the final state of each.

Without ``db`` the checkpoint file lives in a temporary folder that is deleted when the
run ends (it reaches several MB on a 300-call run); pass ``db`` to keep it.

rich (progress, tables) and matplotlib (``--plot``) are imported inside the functions
that use them; langchain and the SQLite checkpointer inside :func:`run_demo`.
"""

from __future__ import annotations

import re
import sqlite3
import sys
import tempfile
import time
import uuid
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from langchain_builderforce_memory.agents.driver import EVENT_KEY
from langchain_builderforce_memory.cli.peer import billed_tokens, run_peer, summarizer_tokens
from langchain_builderforce_memory.cli.report import (
    brief_of,
    fold_turns,
    full_tokens_per_call,
    missing,
    prefix_reused,
    reused_prefix_tokens,
)
from langchain_builderforce_memory.cli.result import DemoRequest, DemoResult, PeerRun
from langchain_builderforce_memory.messages import stamp_of
from langchain_builderforce_memory.testing import (
    ScriptedChatModel,
    coding_agent_script,
    coding_tools,
    with_memory_tool_calls,
)
from langchain_builderforce_memory.tokens import TokenCounter, count_tokens, resolve_token_counter
from langchain_builderforce_memory.transcript.elide import ELIDED_KIND
from langchain_builderforce_memory.transcript.memo import COMPACT_TAIL_TOKEN_BUDGET
from langchain_builderforce_memory.transcript.results import CLEARED_KIND
from langchain_builderforce_memory.transcript.window import HISTORY_TOKEN_BUDGET

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["DEMO_SYSTEM_PROMPT", "DemoRequest", "DemoResult", "run_demo"]

DEMO_SYSTEM_PROMPT = (
    "You are a careful coding agent working in a Python repository. Use read_file, grep "
    "and edit_file; read before you edit; say what you changed."
)
"""The demo agent's system prompt (sent first in every request, counted in the budget)."""

_TAIL_RESERVE = 3_000
"""The middleware's default room for the volatile tail (``MemoryPolicy.tail_reserve_tokens``)."""

_FILE = re.compile(r"src/app/\w+\.py")
_TASK = re.compile(r"(?:user|Task): (.+)")


# --------------------------------------------------------------------------- running


def _note_writer(request: list[BaseMessage]) -> AIMessage:
    """The demo's summarizer: the task and every file the folded part touched.

    Deterministic, so runs can be compared. A re-fold is handed the held note first, so
    the files it listed carry forward.
    """
    text = request[-1].text if request else ""
    files = sorted(set(_FILE.findall(text)))
    tasks = _TASK.findall(text)
    task = tasks[-1].strip() if tasks else "see the latest directive"
    return AIMessage(
        f"Task: {task}\nFiles read or edited so far ({len(files)}): {', '.join(files)}"
    )


class _ProgressBar:
    """A rich progress bar of model calls and folds; does nothing when disabled."""

    def __init__(self, total: int, *, enabled: bool, out: TextIO) -> None:
        self.total = total
        self.enabled = enabled
        self.out = out
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> _ProgressBar:
        if not self.enabled:
            return self
        try:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )
        except ImportError as exc:
            raise missing("rich", exc) from exc
        self._bar = Progress(
            TextColumn("[bold]model calls"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("folds: {task.fields[folds]}"),
            TimeElapsedColumn(),
            console=Console(file=self.out),
        )
        self._bar.start()
        self._task = self._bar.add_task("run", total=self.total, folds=0)
        return self

    def update(self, done: int, folds: int) -> None:
        """Show ``done`` model calls and ``folds`` folds so far."""
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=done, folds=folds)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()


def run_demo(
    *,
    turns: int = 300,
    budget: int = HISTORY_TOKEN_BUDGET,
    directives: int = 4,
    db: str | Path | None = None,
    progress: bool = False,
    progress_file: TextIO | None = None,
    seed: int = 0,
    agent_tools: bool = False,
    compare: bool = False,
) -> DemoResult:
    """Run the offline coding agent through the middleware and measure every request.

    Args:
        turns: Model calls the scripted run makes (at least 2 per directive).
        budget: The middleware's ``max_tokens``. Tool outputs scale with it (reads of up
            to 1/16 of it, at most 4k tokens), so a small budget still folds
            realistically; the fold's tail is 1k tokens (at most 5/8 of the room the
            fixed parts leave).
        directives: User directives (one ``invoke`` each, on one thread).
        db: The SQLite checkpoint file, kept after the run (an existing file gets a new
            thread). ``None``: a file in a temporary folder, deleted when the run ends
            (the result's ``db_path`` is then ``None``).
        progress: Show a rich progress bar on ``progress_file``.
        progress_file: Where the bar goes (default stderr).
        seed: The script's and the tools' seed.
        agent_tools: Give the model ``search_history`` and ``compact_context``: the script
            searches once (for the first file it read) and compacts once, at about 60%
            of the run.
        compare: Also play the same run through LangChain's ``SummarizationMiddleware``
            (:mod:`~langchain_builderforce_memory.cli.peer`) and keep what it cost as the
            result's ``peer``.

    Returns:
        The :class:`DemoResult`.

    Raises:
        ValueError: too few turns for the directives, or a budget the policy rejects.
        DemoDependencyError: langchain, the SQLite checkpointer or rich is missing.

    Example:
        >>> result = run_demo(turns=12, directives=2, budget=8_000)
        >>> result.turns, len(result.model.requests)
        (12, 12)
    """
    options = _RunOptions(
        turns=turns,
        budget=budget,
        directives=directives,
        progress=progress,
        progress_file=progress_file or sys.stderr,
        seed=seed,
        agent_tools=agent_tools,
        compare=compare,
    )
    if db is not None:
        path = Path(db)
        path.parent.mkdir(parents=True, exist_ok=True)
        return _run(path, options)
    with tempfile.TemporaryDirectory(prefix="bfmem-demo-") as folder:
        return replace(_run(Path(folder) / "checkpoints.sqlite", options), db_path=None)


@dataclass(frozen=True, slots=True)
class _RunOptions:
    """:func:`run_demo`'s arguments, once the checkpoint file is chosen."""

    turns: int
    """Model calls."""
    budget: int
    """The middleware's ``max_tokens``."""
    directives: int
    """User directives."""
    progress: bool
    """Show the progress bar."""
    progress_file: TextIO
    """Where the bar goes."""
    seed: int
    """The script's and the tools' seed."""
    agent_tools: bool
    """Give the model ``search_history`` and ``compact_context``."""
    compare: bool
    """Also play the run through ``SummarizationMiddleware``."""


@dataclass(frozen=True)
class _Script:
    """The scripted run: its directives, the model's replies and the tools' sizes."""

    directives: tuple[str, ...]
    """The user's directives, in order."""
    replies: list[AIMessage]
    """The coding model's scripted replies."""
    largest: int
    """The largest tool output, in tokens."""

    def tools(self, seed: int) -> list[Any]:
        """A fresh set of the scripted coding tools."""
        return coding_tools(
            min_tokens=max(4, self.largest // 8), max_tokens=self.largest, seed=seed
        )


def _script(options: _RunOptions) -> _Script:
    """The run's script; with ``agent_tools``, the model also searches and compacts."""
    turns = options.turns
    run = coding_agent_script(turns=turns, directives=options.directives, seed=options.seed)
    replies = list(run.script)
    if options.agent_tools:
        first_read = next(
            c["args"]["path"] for m in replies for c in m.tool_calls if c["name"] == "read_file"
        )
        at = turns * 3 // 5
        replies = with_memory_tool_calls(
            replies,
            search_at=at,
            query=first_read,
            compact_at=at + 3,
            focus="the files still to edit",
        )
    largest = max(8, min(4_000, options.budget // 16))
    return _Script(tuple(run.directives), replies, largest)


def _run(path: Path, options: _RunOptions) -> DemoResult:
    """Run the agent with its checkpoints in ``path``, and measure it."""
    try:
        from langchain_builderforce_memory.agents.middleware import BuilderforceMemoryMiddleware
    except ImportError as exc:
        raise missing("langchain and langgraph-checkpoint-sqlite", exc) from exc
    script, budget = _script(options), options.budget
    model = ScriptedChatModel(script=script.replies, model_name="scripted-coder")
    summarizer = ScriptedChatModel(
        script=[_note_writer] * options.turns, model_name="scripted-summarizer"
    )
    middleware = BuilderforceMemoryMiddleware(
        summarizer,
        max_tokens=budget,
        tail_tokens=max(1, min(COMPACT_TAIL_TOKEN_BUDGET, budget - _TAIL_RESERVE)),
        agent_tools=options.agent_tools,
    )
    thread_id = f"demo-{uuid.uuid4().hex[:8]}"
    counter = resolve_token_counter(None)
    system = SystemMessage(DEMO_SYSTEM_PROMPT)
    started = time.perf_counter()
    events, spans = _stream(path, thread_id, script, options, model, middleware, system)
    seconds = time.perf_counter() - started
    record_messages, memo_end = _read_back(path, thread_id)
    peer = (
        run_peer(
            script=script.replies,
            tools=script.tools(options.seed),
            directives=list(script.directives),
            budget=budget,
            system=system,
            counter=counter,
            write=_note_writer,
        )
        if options.compare
        else None
    )
    result = _result(
        model=model,
        summarizer=summarizer,
        record=record_messages,
        memo_covered_end=memo_end,
        system=system,
        spans=spans,
        events=events,
        budget=budget,
        directives=list(script.directives),
        db_path=str(path),
        thread_id=thread_id,
        seconds=seconds,
        counter=counter,
    )
    return replace(result, peer=peer)


def _stream(
    path: Path,
    thread_id: str,
    script: _Script,
    options: _RunOptions,
    model: ScriptedChatModel,
    middleware: Any,
    system: SystemMessage,
) -> tuple[list[dict[str, object]], list[int]]:
    """Stream the run through ``create_agent``, checkpointed in ``path``.

    Returns the custom events the middleware wrote, and the model calls made by the end
    of each directive.
    """
    try:
        from langchain.agents import create_agent
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError as exc:
        raise missing("langchain and langgraph-checkpoint-sqlite", exc) from exc
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}, "recursion_limit": 100_000}
    events: list[dict[str, object]] = []
    spans: list[int] = []
    with (
        closing(sqlite3.connect(path, check_same_thread=False)) as conn,
        _ProgressBar(options.turns, enabled=options.progress, out=options.progress_file) as bar,
    ):
        agent = create_agent(
            model,
            script.tools(options.seed),
            system_prompt=system,
            middleware=[middleware],
            checkpointer=SqliteSaver(conn),
        )
        for directive in script.directives:
            # create_agent's input schema is a private TypedDict: pass the plain dict.
            inputs: Any = {"messages": [HumanMessage(directive)]}
            for mode, chunk in agent.stream(
                inputs, config, stream_mode=["custom", "updates"], durability="exit"
            ):
                if mode == "custom" and isinstance(chunk, dict):
                    events.append(dict(chunk))
                bar.update(
                    len(model.requests), sum(1 for e in events if e.get(EVENT_KEY) == "fold")
                )
            spans.append(len(model.requests))
    return events, spans


def _read_back(path: Path, thread_id: str) -> tuple[list[BaseMessage], int | None]:
    """The record and the memo as a NEW connection reads them: what a resumed thread gets."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        saved = SqliteSaver(conn).get_tuple({"configurable": {"thread_id": thread_id}})
    if saved is None:
        return [], None
    values = saved.checkpoint["channel_values"]
    record = [m for m in values.get("messages", []) if isinstance(m, BaseMessage)]
    memo = values.get("builderforce_memo")
    end = memo.get("covered_end") if isinstance(memo, dict) else None
    return record, end if isinstance(end, int) else None


def view_stamps(request: list[BaseMessage]) -> dict[str, int]:
    """What a request carries cleared and elided, read from the stamps on its messages."""
    out = {"cleared_messages": 0, "cleared_tokens": 0, "elided_tokens": 0}
    for message in request:
        meta = stamp_of(message) or {}
        kind = meta.get("was") if meta.get("kind") == ELIDED_KIND else meta.get("kind")
        if kind == CLEARED_KIND:
            out["cleared_messages"] += 1
            tokens = meta.get("tokens")
            out["cleared_tokens"] += tokens if isinstance(tokens, int) else 0
        cut = meta.get("cut_tokens")
        out["elided_tokens"] += cut if isinstance(cut, int) else 0
    return out


def _result(
    *,
    model: ScriptedChatModel,
    summarizer: ScriptedChatModel,
    record: list[BaseMessage],
    memo_covered_end: int | None,
    system: SystemMessage,
    spans: list[int],
    events: list[dict[str, object]],
    budget: int,
    directives: list[str],
    db_path: str,
    thread_id: str,
    seconds: float,
    counter: TokenCounter,
) -> DemoResult:
    sent = list(model.requests)
    full = full_tokens_per_call(record, system, len(sent), counter)
    folded = set(fold_turns(sent))
    rows: list[DemoRequest] = []
    for i, request in enumerate(sent):
        previous = sent[i - 1] if i else []
        rows.append(
            DemoRequest(
                call=i + 1,
                directive=next(d for d, end in enumerate(spans) if i < end),
                full_tokens=full[i] if i < len(full) else 0,
                sent_tokens=count_tokens(request, counter),
                sent_messages=len(request),
                prefix_tokens=reused_prefix_tokens(previous, request, counter),
                prefix_reused=prefix_reused(previous, request) if i else False,
                folded=i in folded,
                **view_stamps(request),
            )
        )
    summarized_in, summarized_out = summarizer_tokens(summarizer, counter, _note_writer)
    cost = PeerRun(
        name="BuilderforceMemoryMiddleware",
        billed_tokens=billed_tokens(sent, counter),
        summarizer_calls=len(summarizer.requests),
        summarizer_input_tokens=summarized_in,
        summarizer_output_tokens=summarized_out,
        max_sent_tokens=max((r.sent_tokens for r in rows), default=0),
    )
    return DemoResult(
        turns=len(sent),
        budget=budget,
        directives=directives,
        requests=rows,
        folds=sum(1 for e in events if e.get(EVENT_KEY) == "fold"),
        events=events,
        summarizer_calls=len(summarizer.requests),
        brief=brief_of(sent[-1]) if sent else None,
        record_messages=len(record),
        record_tokens=count_tokens(record, counter),
        memo_covered_end=memo_covered_end,
        db_path=db_path,
        thread_id=thread_id,
        seconds=seconds,
        model=model,
        summarizer=summarizer,
        cost=cost,
    )
