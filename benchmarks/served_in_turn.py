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

Each size sets its threads up once (their first sight and two warm-up turns), then
measures ``--blocks`` short blocks, each serving every thread ``--turns`` times in both
orders, which goes first alternating. Reported: each order's median step over all blocks,
their ratio, and the spread of the blocks' own ratios. Blocks of a second or two, paired,
leave a loaded machine's drift little room: rounds that each set their threads up anew
took minutes apiece, and their ratios moved by up to 0.7x within one run.

Run: python benchmarks/served_in_turn.py [--conversations 64] [--sizes 600 4800]
     [--turns 5] [--blocks 12] [--new-runs]
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


def measure(
    conversations: int, size: int, turns: int, blocks: int, *, new_runs: bool = False
) -> tuple[list[float], list[float], list[float]]:
    """Step seconds one by one and in turn, over ``blocks`` paired blocks; each block's ratio.

    The same threads throughout, set up once. In a block each thread is served ``turns``
    times one after another (each alone for its turns) and ``turns`` times round-robin (as
    a server sees them); which order goes first alternates, so a machine's drift moves
    both alike.
    """
    core = MemoryCore(MemoryPolicy(max_tokens=32_000), summarizer=lambda prompt: "the note")
    threads = [Conversation(k, size, new_runs=new_runs) for k in range(conversations)]
    for c in threads:  # first sight: every thread's record counted once, folds made
        c.step(core)
        c.step(core)
    ones: list[float] = []
    manys: list[float] = []
    ratios: list[float] = []
    for k in range(blocks):
        block: dict[bool, list[float]] = {}
        for in_turn in (k % 2 == 1, k % 2 == 0):
            if in_turn:
                block[in_turn] = [c.step(core) for _ in range(turns) for c in threads]
            else:
                block[in_turn] = [c.step(core) for c in threads for _ in range(turns)]
        ones += block[False]
        manys += block[True]
        ratios.append(statistics.median(block[True]) / statistics.median(block[False]))
    return ones, manys, ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--conversations", type=int, default=64)
    parser.add_argument("--sizes", type=int, nargs="+", default=[600, 4_800])
    parser.add_argument("--turns", type=int, default=5, help="turns of each thread a block")
    parser.add_argument("--blocks", type=int, default=12, help="paired blocks of both orders")
    parser.add_argument("--new-runs", action="store_true", help="each step a new run")
    args = parser.parse_args()
    n = args.conversations
    print(
        f"| messages | {n} one by one p50 ms | {n} in turn p50 ms | in turn / one by one "
        "| blocks' ratios: min / median / max |"
    )
    print("|---:|---:|---:|---:|---|")
    for size in args.sizes:
        ones, manys, ratios = measure(n, size, args.turns, args.blocks, new_runs=args.new_runs)
        one, many = statistics.median(ones), statistics.median(manys)
        spread = f"{min(ratios):.2f}x / {statistics.median(ratios):.2f}x / {max(ratios):.2f}x"
        print(
            f"| {size:,} | {one * 1e3:.2f} | {many * 1e3:.2f} | {many / one:.2f}x | {spread} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
