"""Time ``windowed`` per turn in one long single-directive tool loop (5,000 / 50,000 messages).

A single directive followed by thousands of tool rounds is one provider turn: whatever a
step recomputes "from the directive on" costs O(record) there. Each turn appends a tool
round and windows the whole record, as an agent does before every model call; the
counter is the default (cached). The target (issue 27): a turn at 50,000 messages costs
at most twice a turn at 5,000.

Run: python benchmarks/long_loop.py [--turns 20]
"""

from __future__ import annotations

import argparse
import statistics
import time

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory.transcript.window import windowed

SIZES = (5_000, 50_000)


def tool_round(i: int) -> list[BaseMessage]:
    cid = f"c{i}"
    return [
        AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": f"f{i}.py"}, "id": cid}]),
        ToolMessage("x = 1\n" * 50, tool_call_id=cid),
    ]


def loop_of(n: int) -> list[BaseMessage]:
    out: list[BaseMessage] = [HumanMessage("Read every module and fix the bug.")]
    i = 0
    while len(out) < n:
        out += tool_round(i)
        i += 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    medians: dict[int, float] = {}
    for n in SIZES:
        record = loop_of(n)
        windowed(record, max_tokens=32_000)  # first sight: every message counted once
        times = []
        for t in range(args.turns):
            record = record + tool_round(n + t)
            start = time.perf_counter()
            windowed(record, max_tokens=32_000)
            times.append(time.perf_counter() - start)
        medians[n] = statistics.median(times)
        print(f"{n:>7,} messages: windowed {medians[n] * 1e3:6.2f} ms/turn (median)")
    print(f"50,000 / 5,000: {medians[50_000] / medians[5_000]:.1f}x")


if __name__ == "__main__":
    main()
