"""The middleware's whole turn on the 14 recorded runs: working memory, brief and view.

``benchmarks/recorded_runs.py`` times the view alone (``build_working_transcript``); a
turn of the middleware or the node also reads the new tool results into the working
memory and writes its snapshot into the state. Here each run is replayed through
``run_turn`` (what both adapters run before a model call), one thread per run, the
state's update applied after each turn as the graph would, at ``--budget`` tokens. The
summarizer is a constant function, so only our own work is timed.

Reported per run: its model calls and the median turn; then the sum of the medians and
the total time of all turns. Compare packages by putting one first on ``PYTHONPATH``
(a git worktree), alternating runs: the spread between runs on a busy machine is a few
percent.

Run: python benchmarks/recorded_turns.py [--budget 32000] [--repeat 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

# Appended, not inserted: a package put first on PYTHONPATH is the one timed.
sys.path.append(str(Path(__file__).resolve().parents[1]))

from langchain_builderforce_memory.agents.core import MemoryCore
from langchain_builderforce_memory.agents.driver import run_turn
from langchain_builderforce_memory.agents.policy import MemoryPolicy
from tests.helpers import load_transcript, transcript_files


def turn_times(record: list[BaseMessage], budget: int, thread: str) -> list[float]:
    """Seconds of each turn of ``record`` (the record before each assistant message)."""
    core = MemoryCore(MemoryPolicy(max_tokens=budget), summarizer=lambda prompt: "the note")
    state: dict[str, Any] = {}
    config: Any = {"configurable": {"thread_id": thread}}
    times: list[float] = []
    for i, message in enumerate(record):
        if not isinstance(message, AIMessage) or i == 0:
            continue
        started = time.perf_counter()
        turn = run_turn(core, record[:i], state, config=config)
        times.append(time.perf_counter() - started)
        state.update(turn.update)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--budget", type=int, default=32_000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    import langchain_builderforce_memory

    print(f"package: {Path(langchain_builderforce_memory.__file__).parent}")
    print("| run | model calls | turn p50 ms |")
    print("|---|---:|---:|")
    medians: list[float] = []
    total = 0.0
    for path in transcript_files():
        record = load_transcript(path)
        runs = [turn_times(record, args.budget, path.name) for _ in range(args.repeat)]
        median = min(statistics.median(t) for t in runs)
        medians.append(median)
        total += min(sum(t) for t in runs)
        print(f"| {path.stem} | {len(runs[0])} | {median * 1e3:.2f} |")
    print(f"\nsum of the per-run medians: {sum(medians) * 1e3:.2f} ms; all turns: {total:.2f} s")


if __name__ == "__main__":
    main()
