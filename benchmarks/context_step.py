"""The context step's time as the run grows: ours against SummarizationMiddleware.

Plays the standard workload of ``benchmarks/contenders.py`` (the same scripted coding run,
tools, budget and step timer) at several lengths, and prints each contender's median and
p95 context-step time. A step whose cost grows with the transcript shows it here: its
median climbs with ``--turns``; one that costs O(new messages) stays flat. The last column
is the first step of each directive after the first: a new ``invoke`` of the thread, whose
messages are the checkpointer's copies.

Times are from one process on one machine, contenders played one after the other; expect
them to move by up to ~2x between runs on a loaded machine. Compare the rows of one run.

Run (from the project root):
    .venv/bin/python benchmarks/context_step.py [--turns 100 300 600]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from contenders import KEYS, Workload, play
from langchain_builderforce_memory.testing import coding_agent_script


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[100, 300, 600])
    parser.add_argument("--budget", type=int, default=64_000)
    parser.add_argument(
        "--only", nargs="*", choices=sorted(KEYS), default=["ours", "summarization"]
    )
    args = parser.parse_args()
    print("| model calls | contender | step p50 ms | step p95 ms | a new run's first step, ms |")
    print("|---:|---|---:|---:|---|")
    for turns in args.turns:
        run = coding_agent_script(turns=turns, directives=4)
        work = Workload("standard", run, 2_000, 20_000)
        # Each directive is a new run of the thread: its first step reads the
        # checkpointer's copies of every message so far.
        starts = list(itertools.accumulate(run.calls_per_directive))[:-1]
        for key in args.only:
            out = play(KEYS[key], work, args.budget)
            steps = [s * 1_000 for s in out.step_seconds]
            first = ", ".join(f"{steps[i]:.1f}" for i in starts if i < len(steps))
            print(
                f"| {turns} | {KEYS[key]} | {statistics.median(steps):.2f} | {_p95(steps):.2f} "
                f"| {first} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
