"""What ``bfmem demo`` reports, and how it is shown.

The measurements are pure functions over the requests a model recorded (what it was
actually SENT), so the demo, its tests and the notebooks read the same numbers the same
way: prefix reuse, where the folds were, the brief, and what the full record would have
cost at each call. The renderers print a :class:`~langchain_builderforce_memory.cli.result.
DemoResult` as tables (rich), JSON, or a PNG (matplotlib); both libraries are imported
inside the functions that use them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from langchain_builderforce_memory.cli.result import DemoResult
from langchain_builderforce_memory.handoff.volatile import (
    VOLATILE_TAIL_CLOSE,
    VOLATILE_TAIL_TAG,
    is_volatile_tail,
)
from langchain_builderforce_memory.jsontext import json_text
from langchain_builderforce_memory.messages import stamp_of
from langchain_builderforce_memory.tokens import TokenCounter, resolve_token_counter
from langchain_builderforce_memory.transcript.plan import MEMORY_NOTE_KIND

__all__ = [
    "DemoDependencyError",
    "brief_of",
    "fold_turns",
    "full_tokens_per_call",
    "memory_tool_answers",
    "missing",
    "prefix_reused",
    "render_demo_json",
    "render_demo_table",
    "reused_prefix_tokens",
    "write_plot",
]


class DemoDependencyError(RuntimeError):
    """An optional dependency of the demo (the ``demo`` extra) is missing."""


def missing(what: str, exc: ImportError) -> DemoDependencyError:
    """The error for a missing optional dependency, naming the extra that installs it."""
    return DemoDependencyError(
        f"bfmem demo needs {what}: pip install 'langchain-builderforce-memory[demo]' ({exc})"
    )


# --------------------------------------------------------------------------- measuring


def _key(message: BaseMessage) -> tuple[object, ...]:
    """What a provider sees of a message: equal keys are the same bytes on the wire."""
    calls = getattr(message, "tool_calls", None) or []
    return (
        message.type,
        json_text(message.content, sort_keys=True),
        json_text([(c.get("id"), c["name"], c["args"]) for c in calls], sort_keys=True),
        getattr(message, "tool_call_id", None),
    )


def _history(request: Sequence[BaseMessage]) -> Sequence[BaseMessage]:
    """``request`` without its trailing volatile tail (the part a cache can reuse)."""
    end = len(request)
    while end > 0 and is_volatile_tail(request[end - 1]):
        end -= 1
    return request[:end]


def reused_prefix_tokens(
    previous: Sequence[BaseMessage],
    current: Sequence[BaseMessage],
    counter: TokenCounter | None = None,
) -> int:
    """Tokens at the start of ``current`` identical, message by message, to ``previous``.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> a, b = HumanMessage("x" * 40), AIMessage("y" * 40)
        >>> reused_prefix_tokens([a, b], [a, b, HumanMessage("next")])
        30
    """
    c = resolve_token_counter(counter)
    n = 0
    for old, new in zip(previous, current, strict=False):
        if _key(old) != _key(new):
            break
        n += c.count_message(new)
    return n


def prefix_reused(previous: Sequence[BaseMessage], current: Sequence[BaseMessage]) -> bool:
    """Does ``current`` start with all of ``previous`` but its volatile tail?

    That is when a provider's prefix cache can serve everything sent before: the history
    only grew. A fold or a window drop moves the front, and the cache starts over.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> a, b = HumanMessage("task"), AIMessage("step")
        >>> prefix_reused([a], [a, b]), prefix_reused([a, b], [b])
        (True, False)
    """
    history = _history(previous)
    if not history or len(current) < len(history):
        return False
    return all(_key(o) == _key(n) for o, n in zip(history, current, strict=False))


def _note_of(request: Sequence[BaseMessage]) -> tuple[object, ...] | None:
    for m in request:
        s = stamp_of(m)
        if s is not None and s.get("kind") == MEMORY_NOTE_KIND:
            return (s.get("covered_end"), _key(m))
    return None


def fold_turns(requests: Sequence[Sequence[BaseMessage]]) -> list[int]:
    """0-based indices of the requests whose memory note differs from the previous one's.

    Read from what the model was sent: a new note (the fold's stamped human message) is
    a fold, whatever the adapter reported.
    """
    out: list[int] = []
    previous: tuple[object, ...] | None = None
    for i, request in enumerate(requests):
        note = _note_of(request)
        if note is not None and note != previous:
            out.append(i)
        previous = note
    return out


def brief_of(request: Sequence[BaseMessage]) -> str | None:
    """The brief a request carried: its volatile tail's text without the tags, or ``None``."""
    if not request or not is_volatile_tail(request[-1]):
        return None
    text = request[-1].text
    return text.removeprefix(VOLATILE_TAIL_TAG).removesuffix(VOLATILE_TAIL_CLOSE).strip()


def full_tokens_per_call(
    record: Sequence[BaseMessage], system: SystemMessage, calls: int, counter: TokenCounter
) -> list[int]:
    """Per model call, the tokens of the system prompt and the record before its answer.

    Each model call appended exactly one AIMessage to the record (the summarizer is a
    separate model), so call ``k`` saw the record up to the ``k``-th AIMessage.
    """
    base = counter.count_message(system)
    out: list[int] = []
    running = base
    for m in record:
        if isinstance(m, AIMessage) and len(out) < calls:
            out.append(running)
        running += counter.count_message(m)
    return out


# --------------------------------------------------------------------------- output


def _cost_rows(result: DemoResult) -> list[tuple[str, str]]:
    """The headline: what the run cost, against SummarizationMiddleware when it was run."""
    ours, peer = result.cost, result.peer
    if ours is None:
        return []
    what = "billed input (cached prefix at a tenth) + summarizer input and output"
    if peer is None:
        return [("cost", f"{ours.total_tokens:,} tokens: {what}")]
    saved = 1 - ours.total_tokens / peer.total_tokens if peer.total_tokens else 0.0
    return [
        (
            "cost against SummarizationMiddleware",
            f"{ours.total_tokens:,} against {peer.total_tokens:,} tokens on the same run "
            f"({saved:.0%} less): {what}",
        ),
        (
            "summarizer calls",
            f"{ours.summarizer_calls} against {peer.summarizer_calls} "
            f"({ours.summarizer_input_tokens:,} against {peer.summarizer_input_tokens:,} "
            "tokens sent to it)",
        ),
    ]


def _summary_rows(result: DemoResult) -> list[tuple[str, str]]:
    full, sent = result.full_tokens, result.sent_tokens
    share = sent / full if full else 0.0
    return [
        *_cost_rows(result),
        ("model calls (turns)", f"{result.turns:,} over {len(result.directives)} directives"),
        (
            "tokens sent",
            f"{sent:,}  ({share:.0%} of the {full:,} that sending the whole record every "
            "turn would cost)",
        ),
        ("largest request", f"{result.max_sent_tokens:,}  (budget {result.budget:,})"),
        ("folds", f"{result.folds}  (at calls {_calls(result.fold_calls)})"),
        (
            "cleared / re-attached / elided",
            "{cleared_requests} requests cleared (up to {max_cleared_tokens:,} tokens); "
            "{restored_files} files re-attached after folds; {elided_tokens:,} tokens "
            "elided".format(**result.view_steps),
        ),
        ("requests reusing the previous prefix", f"{result.prefix_reuse_share:.0%}"),
        (
            "record at the end",
            f"{result.record_messages:,} messages, {result.record_tokens:,} tokens",
        ),
        (
            "checkpoint",
            f"{result.db_path or 'a temporary file, deleted after the run (--db PATH keeps it)'}"
            f" (thread {result.thread_id}; memo covers "
            f"{result.memo_covered_end if result.memo_covered_end is not None else 0} messages)",
        ),
        ("wall time", f"{result.seconds:.1f} s"),
        *_memory_tool_rows(result),
    ]


_MEMORY_TOOLS = ("search_history", "compact_context")


def memory_tool_answers(result: DemoResult) -> list[tuple[str, int, str]]:
    """``(tool, call, answer's first line)`` for each search_history / compact_context call.

    Read from what the model was sent: the answer is the tool result that opens the next
    request's new part.
    """
    out: list[tuple[str, int, str]] = []
    seen: set[str] = set()
    for i, request in enumerate(result.model.requests):
        for m in request:
            if (
                isinstance(m, ToolMessage)
                and m.name in _MEMORY_TOOLS
                and m.tool_call_id not in seen
            ):
                seen.add(m.tool_call_id)
                out.append((str(m.name), i, m.text.splitlines()[0] if m.text else ""))
    return out


def _memory_tool_rows(result: DemoResult) -> list[tuple[str, str]]:
    rows = [(name, f"at call {call}: {line}") for name, call, line in memory_tool_answers(result)]
    requested = [e for e in result.events if e.get("reason") == "requested"]
    if requested:
        rows.append(("folds the model asked for", f"{len(requested)} (reason='requested')"))
    return rows


def _calls(calls: list[int], limit: int = 12) -> str:
    if not calls:
        return "none"
    shown = ", ".join(str(c) for c in calls[:limit])
    return shown + (f", … {len(calls) - limit} more" if len(calls) > limit else "")


def render_demo_table(result: DemoResult, out: TextIO, *, brief: bool = False) -> None:
    """Print the summary and per-directive tables, then the final brief (with ``brief``).

    The summary comes first: its first row is the comparison that matters. The brief runs
    to dozens of lines, so it is printed only when asked for.
    """
    try:
        from rich.console import Console
        from rich.panel import Panel
        from rich.table import Table
    except ImportError as exc:
        raise missing("rich", exc) from exc
    console = Console(file=out, width=max(100, Console(file=out).width), highlight=False)
    table = Table(
        title="bfmem demo: what the model was sent", title_justify="left", show_header=False
    )
    table.add_column("", style="bold")
    table.add_column("")
    for name, value in _summary_rows(result):
        table.add_row(name, value)
    console.print(table)
    per = Table("directive", "calls", "full record", "sent", "folds", title_justify="left")
    for d, text in enumerate(result.directives):
        rows = [r for r in result.requests if r.directive == d]
        per.add_row(
            text,
            str(len(rows)),
            f"{sum(r.full_tokens for r in rows):,}",
            f"{sum(r.sent_tokens for r in rows):,}",
            str(sum(r.folded for r in rows)),
        )
    console.print(per)
    if brief:
        console.print(
            Panel(
                result.brief or "(no brief: the run was too short)",
                title="the brief sent with the last request",
                title_align="left",
            ),
            markup=False,
        )


def render_demo_json(result: DemoResult, out: TextIO) -> None:
    """Write :meth:`DemoResult.to_dict` as JSON."""
    json.dump(result.to_dict(), out, indent=2, ensure_ascii=False)
    out.write("\n")


def write_plot(result: DemoResult, path: str | Path) -> Path:
    """A PNG of tokens per request, full record vs sent, with the folds marked."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise missing("matplotlib", exc) from exc
    calls = [r.call for r in result.requests]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    ax.plot(calls, [r.full_tokens for r in result.requests], color="0.55", label="full record")
    ax.plot(calls, [r.sent_tokens for r in result.requests], color="tab:blue", label="sent")
    for k, call in enumerate(result.fold_calls):
        ax.axvline(call, color="tab:orange", alpha=0.4, lw=1, label="fold" if k == 0 else None)
    ax.axhline(result.budget, color="k", ls=":", lw=1, label=f"budget {result.budget:,}")
    ax.set_yscale("log")
    ax.set_xlabel("model call")
    ax.set_ylabel("tokens per request")
    ax.set_title(
        f"bfmem demo: {result.turns} calls, {result.folds} folds, "
        f"{result.sent_tokens / max(1, result.full_tokens):.0%} of the full record sent"
    )
    ax.legend(loc="upper left")
    fig.tight_layout()
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=110)
    plt.close(fig)
    return target
