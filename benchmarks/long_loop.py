"""Time a turn of one long single-directive tool loop (5,000 / 50,000 messages).

A single directive followed by thousands of tool rounds is one provider turn: whatever a
step recomputes "from the directive on" costs O(record) there. Each turn appends a tool
round and windows the whole record, as an agent does before every model call; the
counter is the default (cached). The target (issue 27): a turn at 50,000 messages costs
at most twice a turn at 5,000. Timed with the conversation's ``RecordFacts`` handed in (a
turn checks the record once and counts its new messages) and without (the module's
caches, which check and copy the record for each fact). Then the chat history's turn
(``add_messages`` of a tool round, then ``messages``), folding as it goes at its default
budget: its facts and its scan of the stored record are the wrapper's own.

Run: python benchmarks/long_loop.py [--turns 50]
"""

from __future__ import annotations

import argparse
import statistics
import time

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory import CompactingChatMessageHistory
from langchain_builderforce_memory.facts import RecordFacts
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


def per_turn(n: int, turns: int, facts: RecordFacts | None) -> float:
    """Median seconds of ``windowed`` a turn, the record grown by one tool round each turn."""
    record = loop_of(n)
    windowed(record, max_tokens=32_000, facts=facts)  # first sight: every message counted once
    times = []
    for t in range(turns):
        record = record + tool_round(n + t)
        start = time.perf_counter()
        windowed(record, max_tokens=32_000, facts=facts)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def history_turn(n: int, turns: int) -> float:
    """Median seconds of a chat history's add + read a turn, grown by one tool round."""
    history = CompactingChatMessageHistory(summarizer=lambda prompt: "the note")
    history.add_messages(loop_of(n))
    _ = history.messages  # first sight: every message counted once, the first folds made
    times = []
    for t in range(turns):
        start = time.perf_counter()
        history.add_messages(tool_round(n + t))
        _ = history.messages
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=50)
    args = parser.parse_args()
    for label, make in (("facts=RecordFacts()", RecordFacts), ("no facts", lambda: None)):
        medians = {n: per_turn(n, args.turns, make()) for n in SIZES}
        for n, median in medians.items():
            print(f"{n:>7,} messages, {label}: windowed {median * 1e3:6.2f} ms/turn (median)")
        print(f"50,000 / 5,000, {label}: {medians[50_000] / medians[5_000]:.1f}x")
    medians = {n: history_turn(n, args.turns) for n in SIZES}
    for n, median in medians.items():
        print(f"{n:>7,} messages, chat history: add + read {median * 1e3:6.2f} ms/turn (median)")
    print(f"50,000 / 5,000, chat history: {medians[50_000] / medians[5_000]:.1f}x")


if __name__ == "__main__":
    main()
