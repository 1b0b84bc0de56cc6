"""The chat history wrapper against its raw store: one chat turn (add, then read) per size.

A chat app adds a message and reads the history back, every turn. The raw store pays one
write and one read; the wrapper (issue 26) must pay at most 1.5x that at 1,000 and 5,000
messages: one store write per add, one store read per read, and its own work on the new
messages only. Each store is filled to the size first, then timed over ``--turns`` chat
turns; the mean is reported (SQLite reads pause now and then for the garbage collector,
on the raw store and the wrapper alike). The wrapper has a summarizer and the default
64k budget, so it folds as it goes.

The in-memory store's raw turn is a list append, so its ratio only says what the wrapper's
own work costs; SQLite (``SQLChatMessageHistory``) is the store the issue measured.

Run: python benchmarks/history_bench.py [--sizes 100 1000 5000] [--turns 30]
     [--stores in-memory SQLite]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator

from langchain_core.chat_history import BaseChatMessageHistory, InMemoryChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_builderforce_memory import CompactingChatMessageHistory


def _message(i: int) -> BaseMessage:
    text = f"turn {i}: " + "the quick brown fox jumps over the lazy dog " * 5
    return HumanMessage(text) if i % 2 == 0 else AIMessage(text)


def _stores(folder: str) -> Iterator[tuple[str, Callable[[str], BaseChatMessageHistory]]]:
    yield "in-memory", lambda _: InMemoryChatMessageHistory()
    from langchain_community.chat_message_histories import SQLChatMessageHistory

    url = f"sqlite:///{folder}/chat.db"
    yield "SQLite", lambda session: SQLChatMessageHistory(session_id=session, connection=url)


def _turn_ms(history: BaseChatMessageHistory, start: int, turns: int) -> float:
    times = []
    for i in range(start, start + turns):
        t0 = time.perf_counter()
        history.add_messages([_message(i)])
        _ = history.messages
        times.append(time.perf_counter() - t0)
    return statistics.mean(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 1_000, 5_000])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--stores", nargs="*", default=["in-memory", "SQLite"])
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # InMemoryChatMessageHistory's deprecation notice
    print("| store | messages | raw ms / turn | wrapper ms / turn | wrapper / raw |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for name, make in _stores(folder):
            if name not in args.stores:
                continue
            for size in args.sizes:
                filled = [_message(i) for i in range(size)]
                raw = make(f"raw-{size}")
                raw.add_messages(filled)
                store = make(f"wrapped-{size}")
                store.add_messages(filled)
                wrapped = CompactingChatMessageHistory(store, summarizer=lambda p: "the note")
                _ = wrapped.messages  # the first read folds what the filled store needs
                r = _turn_ms(raw, size, args.turns)
                w = _turn_ms(wrapped, size, args.turns)
                print(f"| {name} | {size:,} | {r:.2f} | {w:.2f} | {w / r:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
