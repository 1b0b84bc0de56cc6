"""One agent turn's context step, for conversations served one by one and in turn.

A server runs the middleware for many threads, one model call after another. Each thread
here is a single-directive coding loop (reads of varied files, so the clear tier and the
fold both work), grown by one tool round a turn; the step is ``run_turn`` (what the
middleware and the node run before each model call), with the thread's ``thread_id`` in
the config. Reported: the median step at a record size, with ``--conversations``
threads served one after another (each alone for all its turns) and round-robin: the
same turns, in another order. Facts kept per thread (issue 23) make the two equal; facts
kept in module-level caches of a few records fall off the incremental path once more
threads than they hold take turns.

``--new-runs``: each step is a new run of its thread, as when a server answers every
request with one run: the record and the state are the checkpointer's copies (LangGraph's
serializer, round-tripped before the step's clock starts), equal to the last turn's but
new objects.

Each size is measured ``--repeat`` times in both orders (which goes first alternates), and
the medians of the rounds are reported with each round's ratio: one round's ratio moves by
up to 1.5x between runs on a loaded 2-core machine.

Run: python benchmarks/served_in_turn.py [--conversations 64] [--sizes 600 4800]
     [--turns 20] [--new-runs] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langchain_builderforce_memory.agents.core import MemoryCore
from langchain_builderforce_memory.agents.driver import run_turn
from langchain_builderforce_memory.agents.policy import MemoryPolicy


def tool_round(thread: int, i: int) -> list[BaseMessage]:
    """One read of a file (one of 40), its output ~300 tokens."""
    cid = f"t{thread}c{i}"
    path = f"src/module_{i % 40}.py"
    body = "\n".join(f"def f{i}_{k}(x):\n    return x * {k}" for k in range(25))
    return [
        AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": path}, "id": cid}]),
        ToolMessage(body, tool_call_id=cid, name="read_file"),
    ]


def loop_of(thread: int, n: int) -> list[BaseMessage]:
    out: list[BaseMessage] = [HumanMessage("Read the modules and fix the failing test.")]
    i = 0
    while len(out) < n:
        out += tool_round(thread, i)
        i += 1
    return out


class Conversation:
    """One thread: its record, its state and its config."""

    def __init__(self, thread: int, size: int, *, new_runs: bool = False) -> None:
        self.thread = thread
        self.new_runs = new_runs
        self.record = loop_of(thread, size)
        self.state: dict[str, Any] = {}
        self.config: Any = {"configurable": {"thread_id": f"thread-{thread}"}}
        self.rounds = len(self.record)

    def step(self, core: MemoryCore) -> float:
        """Grow the record by a tool round, then time one context step."""
        self.record = self.record + tool_round(self.thread, self.rounds)
        self.rounds += 2
        record, state = self.record, self.state
        if self.new_runs:
            record, state = _checkpointed(record), _checkpointed(state)
        start = time.perf_counter()
        turn = run_turn(core, record, state, config=self.config)
        took = time.perf_counter() - start
        self.state.update(turn.update)
        return took


_SERDE = JsonPlusSerializer()


def _checkpointed(value: Any) -> Any:
    """``value`` as a checkpointer hands it to a new run: serialized and read back."""
    return _SERDE.loads_typed(_SERDE.dumps_typed(value))


def median_step(
    conversations: int, size: int, turns: int, *, in_turn: bool, new_runs: bool = False
) -> float:
    """Median seconds of a step: each thread served ``turns`` times, in turn or one by one.

    The same turns of the same threads either way, so only the order differs: one thread
    after another (each served alone), or round-robin (as a server sees them).
    """
    core = MemoryCore(MemoryPolicy(max_tokens=32_000), summarizer=lambda prompt: "the note")
    threads = [Conversation(k, size, new_runs=new_runs) for k in range(conversations)]
    for c in threads:  # first sight: every thread's record counted once, folds made
        c.step(core)
        c.step(core)
    if in_turn:
        times = [c.step(core) for _ in range(turns) for c in threads]
    else:
        times = [c.step(core) for c in threads for _ in range(turns)]
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--conversations", type=int, default=64)
    parser.add_argument("--sizes", type=int, nargs="+", default=[600, 4_800])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--new-runs", action="store_true", help="each step a new run")
    parser.add_argument(
        "--repeat", type=int, default=3, help="rounds of both orders, alternating which goes first"
    )
    args = parser.parse_args()
    n = args.conversations
    print(
        f"| messages | {n} one by one p50 ms | {n} in turn p50 ms | in turn / one by one "
        "| each round's ratio |"
    )
    print("|---:|---:|---:|---:|---|")
    for size in args.sizes:
        ones: list[float] = []
        manys: list[float] = []
        for k in range(args.repeat):
            # Alternate which order goes first: a machine's drift then moves both alike.
            for in_turn in (k % 2 == 1, k % 2 == 0):
                step = median_step(n, size, args.turns, in_turn=in_turn, new_runs=args.new_runs)
                (manys if in_turn else ones).append(step)
        one, many = statistics.median(ones), statistics.median(manys)
        rounds = ", ".join(f"{m / o:.2f}x" for o, m in zip(ones, manys, strict=True))
        print(
            f"| {size:,} | {one * 1e3:.2f} | {many * 1e3:.2f} | {many / one:.2f}x | {rounds} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
