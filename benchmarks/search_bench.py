"""Time ``search_history``'s core (:class:`RecordIndex`) at 1,000 / 10,000 / 50,000 messages.

A coding-agent record (reads with ~1.5 KB of source each, greps, edits, directives) is
searched the way the tool searches it: everything but the ~60 messages the view shows.

- ``first``: a new index (a new process, or a thread seen for the first time): the whole
  record is indexed, then searched once.
- ``repeated``: the same thread searched again, each time after the agent appended one
  tool round (so the index adds 2 messages, then searches): the median over the queries.

Queries: a unique error code (an exact substring in one message), a path read many times
(hundreds of exact hits), and words from a directive (a BM25 word search).

Both wall time and this process's CPU time are reported: on a shared machine the wall
time also counts the time other processes held the cores.

Run: python benchmarks/search_bench.py [--sizes 1000 10000 50000] [--rounds 30]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_builderforce_memory.messages import message_id
from langchain_builderforce_memory.search_index import RecordIndex

SIZES = (1_000, 10_000, 50_000)
QUERIES = ("E7731: unexpected token", "src/mod_17.py", "why does the tokenizer reject unicode")
WORDS = [
    "parse",
    "token",
    "lexer",
    "buffer",
    "header",
    "render",
    "cache",
    "index",
    "retry",
    "socket",
    "frame",
    "schema",
]


def source(rng: random.Random, path: str, lines: int = 40) -> str:
    body = [
        f"{n:4d}  def {rng.choice(WORDS)}_{rng.choice(WORDS)}(self, {rng.choice(WORDS)}): "
        f"return self.{rng.choice(WORDS)} + {n}"
        for n in range(lines)
    ]
    return f"# {path}\n" + "\n".join(body)


def record_of(n: int, seed: int = 7) -> list[BaseMessage]:
    rng = random.Random(seed)
    out: list[BaseMessage] = [SystemMessage("You are a coding agent.", id="sys")]
    i = 0
    while len(out) < n:
        if i % 40 == 0:
            out.append(HumanMessage(f"directive {i}: fix the {rng.choice(WORDS)}", id=f"h{i}"))
        path = f"src/mod_{rng.randrange(60)}.py"
        cid = f"c{i}"
        tool = rng.choice(("read_file", "read_file", "grep", "edit_file"))
        out.append(
            AIMessage(
                f"step {i}",
                id=f"a{i}",
                tool_calls=[{"name": tool, "args": {"path": path}, "id": cid}],
            )
        )
        text = source(rng, path)
        if i == 10:
            text += "\nE7731: unexpected token '}' at line 120"
        out.append(ToolMessage(text, tool_call_id=cid, id=f"t{i}"))
        i += 1
    return out[:n]


def tool_round(i: int) -> list[BaseMessage]:
    cid = f"new{i}"
    return [
        AIMessage(
            f"new {i}", id=f"na{i}", tool_calls=[{"name": "grep", "args": {"q": "x"}, "id": cid}]
        ),
        ToolMessage(f"match {i}\n" * 20, tool_call_id=cid, id=f"nt{i}"),
    ]


def bench(n: int, rounds: int) -> dict[str, float]:
    record = record_of(n)
    hidden = {message_id(m) for m in record[-60:]}
    index = RecordIndex()
    t0, c0 = time.perf_counter(), time.process_time()
    first = index.search(record, QUERIES[0], hidden_ids=hidden)
    first_s, first_cpu = time.perf_counter() - t0, time.process_time() - c0
    assert first.hits[0].message_id == "t10", first.hits  # the call-10 result, first
    wall: list[float] = []
    cpu: list[float] = []
    for r in range(rounds):
        record = [*record, *tool_round(r)]  # a new list, as a graph state hands it over
        for q in QUERIES:
            t0, c0 = time.perf_counter(), time.process_time()
            index.search(record, q, hidden_ids=hidden)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    out = {"first_ms": first_s * 1e3, "first_cpu_ms": first_cpu * 1e3}
    out["wall_ms"] = statistics.median(wall) * 1e3
    out["cpu_ms"] = statistics.median(cpu) * 1e3
    out["p90_ms"] = statistics.quantiles(wall, n=10)[-1] * 1e3
    assert index.rebuilds == 0  # appends are indexed incrementally, never from scratch
    index.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    print(f"queries: {', '.join(map(repr, QUERIES))}; repeated = median over all of them,")
    print("each search after one tool round was appended (2 messages indexed, then searched)")
    print("wall = elapsed time; cpu = this process's CPU time (what a busy machine cannot inflate)")
    print(
        f"{'messages':>9} {'first wall/cpu (ms)':>20} {'repeated wall (ms)':>19} "
        f"{'p90 (ms)':>9} {'repeated cpu (ms)':>18}"
    )
    for n in args.sizes:
        r = bench(n, args.rounds)
        first = f"{r['first_ms']:,.0f} / {r['first_cpu_ms']:,.0f}"
        print(f"{n:>9,} {first:>20} {r['wall_ms']:>19.2f} {r['p90_ms']:>9.2f} {r['cpu_ms']:>18.2f}")


if __name__ == "__main__":
    main()
