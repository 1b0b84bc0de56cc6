"""Why a labelled working-set file is missing from our request, on the 14 recorded runs.

``benchmarks/recorded_runs.py`` reports working-set recall: per request, of the last 5
distinct files the hand-labelled calls (``tests/data/tool_call_labels.jsonl``) read so
far, the share whose latest labelled read is in the request verbatim. This replays our
default (``build_working_transcript``, state and record facts carried as the middleware
carries them, the same fake summarizer) and sorts every file it misses by what the run
did after that read, as the default mapper reads every call (labelled or not):

* **re-run, new output**: a later call with the same tool and arguments read the same
  lines of the file again and got other text (the file changed in between); the request
  keeps the newer output, the labels know only the older one;
* **read again, other arguments**: a later call read the file with other arguments
  (another range, ``sed -n '200,250p'`` after ``sed -n '1,80p'``, or another tool), or
  with the same arguments from other lines: SpecStory's renderings of Claude Code's
  ``Read`` keep no ``offset``, so two ranges of one file look like one call, and only
  their outputs' line numbers tell them apart;
* **latest read, not kept**: this is the file's latest read (or a later one gave the
  same output) and the request holds it
  neither verbatim in the tail, spared by the clear tier, nor re-attached after a note;
  split by the file's rank among the files the run touched, most recent first (what the
  clear tier and the fold's restore rank by);
* **no read seen**: the mapper reads the labelled call as reading nothing.

It also reports an upper bound no request within the budget can beat: per request, the
share of those latest labelled reads that fit beside the system prompt and the latest
directive, smallest first, as if the request held nothing else (no tail, no calls, no
framing of their own). The second bound holds only the labelled reads that are still
their file's latest read when every call is read by the mapper: a request that keeps each
file's latest read and nothing older of it (what the working set is meant to be) can
reach no more. The difference between the two is what the labels' sample costs: a third
of the calls are labelled, so a file's latest labelled read is often older than its
latest read.

Run: python benchmarks/working_set_misses.py [--budgets 8000 16000 32000]
"""

from __future__ import annotations

import argparse
import collections
import re
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

sys.path.insert(0, str(Path(__file__).resolve().parent))

from langchain_builderforce_memory.blocks import is_tool_result_turn, result_messages
from recorded_runs import (
    COUNTER,
    ROOT,
    WORKING_SET,
    Ours,
    Tally,
    _text,
    _texts,
    labelled_reads,
    load_transcript,
    model_turns,
    observed_reads,
    transcript_files,
    with_ids,
)

KINDS = (
    "kept",
    "re-run, new output",
    "read again, other arguments",
    "latest read, not kept (rank 1-5)",
    "latest read, not kept (rank 6-10)",
    "latest read, not kept (rank 11+)",
    "no read seen",
)

Reads = dict[str, list[str]]


def latest_reads(prefix: Sequence[BaseMessage], reads: Reads) -> dict[str, BaseMessage]:
    """Each file's latest read in ``prefix`` per ``reads``, the most recently read last."""
    latest: dict[str, BaseMessage] = {}
    for message in prefix:
        for answer in result_messages(message):
            for path in reads.get(str(answer.tool_call_id), ()):
                latest.pop(path, None)
                latest[path] = answer
    return latest


def why_missing(
    answer: BaseMessage,
    observed: Reads,
    seen: dict[str, BaseMessage],
    calls: dict[str, tuple[str, str]],
) -> str:
    """Why a labelled read that the request does not hold is missing (see the docstring)."""
    call_id = str(getattr(answer, "tool_call_id", ""))
    paths = observed.get(call_id, [])
    if not paths:
        return KINDS[6]
    ranked = list(reversed(seen))
    latest = [ranked.index(p) for p in paths if is_latest(answer, p, seen)]
    if latest:
        rank = min(latest)
        return KINDS[3] if rank < 5 else KINDS[4] if rank < 10 else KINDS[5]
    return KINDS[1] if superseded(answer, seen[paths[0]], calls) else KINDS[2]


def is_latest(answer: BaseMessage, path: str, seen: dict[str, BaseMessage]) -> bool:
    """Whether ``answer`` is ``path``'s latest read in the run: a later read with the same
    output is the same read, as far as the request goes."""
    return _text(seen[path]) == _text(answer)


def superseded(answer: BaseMessage, later: BaseMessage, calls: dict[str, tuple[str, str]]) -> bool:
    """Whether ``later``, a later read of ``answer``'s file with other text, ran the same
    call (tool and arguments) on the same lines: the file changed in between."""
    if _first_line(_text(later)) != _first_line(_text(answer)):
        return False  # another range of the file (SpecStory keeps no offset argument)
    ids = (str(getattr(m, "tool_call_id", "")) for m in (later, answer))
    return calls.get(next(ids)) == calls.get(next(ids))


_NUMBERED = re.compile(r"\s*(\d+)[\t→]")


def _first_line(text: str) -> str | None:
    """The number of an output's first line, when it numbers its lines (``cat -n``,
    Claude Code's ``Read``): two reads from other lines read other parts of the file."""
    found = _NUMBERED.match(text)
    return found.group(1) if found else None


def held_latest(answer: BaseMessage, observed: Reads, seen: dict[str, BaseMessage]) -> bool:
    """Whether ``answer`` is the latest read of a file it read (or the mapper reads it as
    reading nothing: counted as held, so the bound stays an upper bound)."""
    paths = observed.get(str(getattr(answer, "tool_call_id", "")), [])
    return not paths or any(is_latest(answer, p, seen) for p in paths)


def bound(prefix: Sequence[BaseMessage], wanted: list[str], budget: int, of: int) -> float:
    """The share of ``of`` labelled outputs a request within ``budget`` could hold at most,
    holding only ``wanted`` of them (smallest first)."""
    room = budget - sum(COUNTER.count_message(m) for m in prefix if isinstance(m, SystemMessage))
    directive = next(
        (m for m in reversed(prefix) if isinstance(m, HumanMessage) and not is_tool_result_turn(m)),
        None,
    )
    room -= COUNTER.count_message(directive) if directive is not None else 0
    held = 0
    for size in sorted(COUNTER.count_text(w) for w in wanted):
        if size > room:
            break
        room, held = room - size, held + 1
    return held / of


def replay(
    records: Sequence[list[BaseMessage]], budget: int, reads: Reads, observed: Reads
) -> tuple[collections.Counter[str], tuple[float, float]]:
    """Every labelled working-set file of every request sorted by :data:`KINDS`; the two
    bounds (every labelled read; only the files' latest reads)."""
    calls = {
        str(c["id"]): (c["name"], repr(c["args"]))
        for record in records
        for m in record
        if isinstance(m, AIMessage)
        for c in m.tool_calls
    }
    kinds: collections.Counter[str] = collections.Counter()
    bounds: list[float] = []
    latest_bounds: list[float] = []
    for record in records:
        step = Ours(budget, Tally(), clear=True)
        for prefix in model_turns(record):
            shown = [t for m in step(prefix) for t in _texts(m)]
            wanted = list(latest_reads(prefix, reads).values())[-WORKING_SET:]
            if not wanted:
                continue
            seen = latest_reads(prefix, observed)
            latest = [a for a in wanted if held_latest(a, observed, seen)]
            bounds.append(bound(prefix, [_text(a) for a in wanted], budget, len(wanted)))
            latest_bounds.append(bound(prefix, [_text(a) for a in latest], budget, len(wanted)))
            for answer in wanted:
                text = _text(answer)
                held = any(text in t for t in shown)
                kinds[KINDS[0] if held else why_missing(answer, observed, seen, calls)] += 1
    return kinds, (statistics.mean(bounds), statistics.mean(latest_bounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[8_000, 16_000, 32_000])
    args = parser.parse_args()
    files = transcript_files()
    if not files:
        sys.exit("no recorded runs beside the repository (../shared/transcripts)")
    records = [with_ids(load_transcript(p), p.stem) for p in files]
    reads, observed = labelled_reads(), observed_reads(records)
    budgets = " ".join(map(str, args.budgets))
    lines = [
        "# Why a labelled working-set file is missing from our request",
        "",
        f"Command: `python benchmarks/working_set_misses.py --budgets {budgets}`. "
        f"{len(files)} runs; ours at its defaults. What each row means: the docstring "
        "of `benchmarks/working_set_misses.py`. Each cell: files (share of all the "
        "labelled working-set files judged at that budget, pooled over the requests; "
        "`recorded_runs.md`'s working-set column is the mean of each request's share).",
        "",
        "| | " + " | ".join(f"{b:,} tokens" for b in args.budgets) + " |",
        "|---|" + "---:|" * len(args.budgets),
    ]
    results = [replay(records, b, reads, observed) for b in args.budgets]
    for kind in KINDS:
        cells = [f"{k[kind]:,} ({k[kind] / sum(k.values()):.1%})" for k, _ in results]
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    lines.append(
        "| upper bound on recall (the outputs alone, smallest first) | "
        + " | ".join(f"{b:.1%}" for _, (b, _) in results)
        + " |"
    )
    lines.append(
        "| upper bound holding only each file's latest read (as the mapper reads every "
        "call) | " + " | ".join(f"{b:.1%}" for _, (_, b) in results) + " |"
    )
    text = "\n".join(lines) + "\n"
    (ROOT / "benchmarks" / "working_set_misses.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
