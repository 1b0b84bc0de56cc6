"""A scripted 300-turn tool loop through ``build_working_transcript``.

Each turn builds the view (as an agent does before every model call), then appends the
model's tool call(s) and their results to the record. The summarizer is a counting fake
that answers a fixed note. Reported per scenario: summarizer calls, tokens of new work
per call, tokens per view (max / mean), the share of turns whose view keeps the previous
turn's view as a prefix (a provider prefix cache hits), how the views were made, and the
wall time per turn (the loop also checks every view's validity and coverage, so it is an
upper bound on the fold's own cost).

The loop lives in ``tests/helpers.py`` (``run_fold_loop``), so the test that asserts
bounds on these numbers (``tests/test_fold.py``) measures the same thing.

Run: python benchmarks/fold_loop.py [--turns 300]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers import FoldLoopReport, run_fold_loop

SCENARIOS: dict[str, dict[str, object]] = {
    "2k results (default policy)": {},
    "2k results, 16k-token system prompt": {"system_prompt": "s" * 64_000},
    "2k results, 2 parallel calls a turn": {"calls_per_turn": 2},
    "2k results, max 2.5k-token notes": {"note_chars": 10_000},
    "2k results, new directive every 25": {"directive_every": 25},
    "2k results, max_tokens=8k": {"max_tokens": 8_000},
}


def row(name: str, report: FoldLoopReport, seconds: float) -> str:
    views = report.view_tokens
    return (
        f"{name:38} {report.summarizer_calls:6} {report.tokens_per_call:11,.0f} "
        f"{max(views):9,} {statistics.mean(views):9,.0f} {report.prefix_share:8.1%} "
        f"{seconds / report.turns * 1e3:8.2f}  "
        + " ".join(f"{k}={v}" for k, v in sorted(report.modes.items()))
        + (f"  INVALID={report.invalid_views}" if report.invalid_views else "")
        + (f"  GAPS={report.coverage_gaps}" if report.coverage_gaps else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    args = parser.parse_args()
    print(
        f"{'scenario':38} {'calls':>6} {'tok/call':>11} {'view max':>9} {'view mean':>9} "
        f"{'prefix':>8} {'ms/turn':>8}  modes"
    )
    for name, kwargs in SCENARIOS.items():
        started = time.perf_counter()
        report = run_fold_loop(args.turns, 2_000, **kwargs)  # type: ignore[arg-type]
        print(row(name, report, time.perf_counter() - started))


if __name__ == "__main__":
    main()
