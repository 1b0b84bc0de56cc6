"""The working memory's tool-call mapper on the 14 recorded runs (issue 28).

Two figures per harness: the share of all tool calls that yield an observation (any
kind, `ran` included), and precision / recall against the 344 hand-labelled calls of
``tests/data/tool_call_labels.jsonl`` (see ``tests/labels.py`` for how they are scored).

Run: python benchmarks/mapper_coverage.py
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from langchain_core.messages import AIMessage, ToolMessage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_builderforce_memory.working.mapper import observations_from_tool_call
from tests.helpers import load_transcript, transcript_files
from tests.labels import HARNESS, score


def observed_share() -> tuple[Counter[str], Counter[str]]:
    seen: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for path in transcript_files():
        harness = HARNESS[path.name.split("_")[0]]
        msgs = load_transcript(path)
        results = {m.tool_call_id: m for m in msgs if isinstance(m, ToolMessage)}
        for m in msgs:
            if isinstance(m, AIMessage):
                for call in m.tool_calls:
                    result = results.get(str(call["id"]))
                    total[harness] += 1
                    if result and observations_from_tool_call(call["name"], call["args"], result):
                        seen[harness] += 1
    return seen, total


def main() -> None:
    seen, total = observed_share()
    scores = score()
    print("| harness | calls | observed | labelled | precision | recall |")
    print("|---|---:|---:|---:|---:|---:|")
    for harness in sorted(total):
        s = scores[harness]
        print(
            f"| {harness} | {total[harness]} | {seen[harness] / total[harness]:.0%} "
            f"| {s.calls} | {s.precision:.3f} | {s.recall:.3f} |"
        )
    s = scores["all"]
    print(
        f"| all | {sum(total.values())} | {sum(seen.values()) / sum(total.values()):.0%} "
        f"| {s.calls} | {s.precision:.3f} | {s.recall:.3f} |"
    )


if __name__ == "__main__":
    main()
