"""Checkpoint bytes of long agent threads, by durability, on SQLite and PostgreSQL.

A scripted coding run (``testing.coding_agent_script``: 4 directives, reads / greps / edits,
a parallel pair of reads every 5 calls) through ``create_agent`` + the middleware, with
``durability="sync" | "async" | "exit"``, checkpointed by ``SqliteSaver`` (a file) or
``PostgresSaver`` (a fresh database). Reported per run: model calls, checkpoints written,
bytes stored in total and per model call, the largest single checkpoint, what our own
state keys (memo, working memory) add, and the wall time.

What "stored" means: SQLite, the file's size after ``VACUUM``-free growth (``page_count *
page_size``); PostgreSQL, ``pg_total_relation_size`` of LangGraph's checkpoint tables
(TOAST compression included). LangGraph saves the whole ``messages`` channel again at
every checkpoint (a new version per step), so the total grows with the square of the run's
length under ``sync`` and ``async``; ``exit`` writes once per invocation (here: per
directive). Our keys: PostgreSQL stores a blob per changed channel, so their share is read
from ``checkpoint_blobs``; SQLite stores each checkpoint whole, so it is not separable.

Run (PostgreSQL needs a server; scripts/with-postgres.sh starts a throwaway one):
    scripts/with-postgres.sh python benchmarks/checkpoint_bytes.py
    python benchmarks/checkpoint_bytes.py --backend sqlite --calls 300 --durability exit
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from langchain_builderforce_memory.agents.middleware import BuilderforceMemoryMiddleware
from langchain_builderforce_memory.agents.state import MEMO_KEY, WORKING_MEMORY_KEY
from langchain_builderforce_memory.testing import (
    ScriptedChatModel,
    coding_agent_script,
    coding_tools,
)

RESULT_TOKENS = {300: (200, 400), 2_000: (20, 60)}
"""Tool-result sizes per run length: small enough that the quadratic total fits this
machine's disk and time (a 300-call run with 2k-20k-token results wrote 835 MB)."""
OUR_KEYS = (MEMO_KEY, WORKING_MEMORY_KEY)


@dataclass
class Row:
    backend: str
    calls: int
    durability: str
    result_tokens: tuple[int, int]
    checkpoints: int
    total_bytes: int
    largest_bytes: int
    our_key_bytes: int | None
    seconds: float

    def markdown(self) -> str:
        ours = "n/a"
        if self.our_key_bytes is not None:
            share = 100 * self.our_key_bytes / self.total_bytes
            ours = f"{self.our_key_bytes / 1e6:.2f} MB ({share:.1f}%)"
        return (
            f"| {self.backend} | {self.calls} | {self.result_tokens[0]}-{self.result_tokens[1]} "
            f"| {self.durability} | {self.checkpoints} | {self.total_bytes / 1e6:.1f} MB "
            f"| {self.total_bytes / self.calls / 1e3:.1f} kB "
            f"| {self.largest_bytes / 1e3:.0f} kB | {ours} | {self.seconds:.0f} s |"
        )


HEADER = (
    "| backend | model calls | result tokens | durability | checkpoints | stored | per call "
    "| largest checkpoint | our keys | time |\n"
    "|---|---:|---|---|---:|---:|---:|---:|---:|---:|"
)


@contextmanager
def sqlite_saver() -> Iterator[tuple[Any, Any]]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "checkpoints.db")
        with SqliteSaver.from_conn_string(path) as saver:
            saver.setup()
            yield saver, path


@contextmanager
def postgres_saver() -> Iterator[tuple[Any, Any]]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    server = os.environ.get("BFMEM_TEST_POSTGRES_URL")
    if not server:
        raise SystemExit("set BFMEM_TEST_POSTGRES_URL, or run via scripts/with-postgres.sh")
    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = make_conninfo(**{**conninfo_to_dict(server), "dbname": name})
    try:
        with PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
            yield saver, url
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def measure_sqlite(path: str) -> tuple[int, int, int, None]:
    with sqlite3.connect(path) as db:
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        size = db.execute("PRAGMA page_size").fetchone()[0]
        count, largest = db.execute(
            "SELECT count(*), max(length(checkpoint)) FROM checkpoints"
        ).fetchone()
        writes = db.execute("SELECT coalesce(max(length(value)), 0) FROM writes").fetchone()[0]
    return count, pages * size, max(largest or 0, writes), None


def measure_postgres(url: str) -> tuple[int, int, int, int]:
    import psycopg

    with psycopg.connect(url) as db:
        total = sum(
            db.execute("SELECT pg_total_relation_size(%s)", (t,)).fetchone()[0]  # type: ignore[index]
            for t in ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
        )
        count = db.execute("SELECT count(*) FROM checkpoints").fetchone()[0]  # type: ignore[index]
        largest = db.execute(
            "SELECT coalesce(max(pg_column_size(blob)), 0) FROM checkpoint_blobs"
        ).fetchone()[0]  # type: ignore[index]
        ours = db.execute(
            "SELECT coalesce(sum(pg_column_size(blob)), 0) FROM checkpoint_blobs "
            "WHERE channel = ANY(%s)",
            (list(OUR_KEYS),),
        ).fetchone()[0]  # type: ignore[index]
        ours += db.execute(
            "SELECT coalesce(sum(pg_column_size(blob)), 0) FROM checkpoint_writes "
            "WHERE channel = ANY(%s)",
            (list(OUR_KEYS),),
        ).fetchone()[0]  # type: ignore[index]
    return count, total, largest, ours


def run_one(backend: str, calls: int, durability: str) -> Row:
    lo, hi = RESULT_TOKENS.get(calls, (200, 400))
    run = coding_agent_script(turns=calls, directives=4)
    model = ScriptedChatModel(script=run.script)
    opener = postgres_saver if backend == "postgres" else sqlite_saver
    with opener() as (saver, where):
        agent = create_agent(
            model,
            coding_tools(min_tokens=lo, max_tokens=hi),
            system_prompt="You are a coding agent. Use the tools; keep the tests green.",
            middleware=[BuilderforceMemoryMiddleware(lambda prompt: "n" * 1_200)],
            checkpointer=saver,
        )
        config: Any = {"configurable": {"thread_id": "t"}, "recursion_limit": 100_000}
        start = time.perf_counter()
        for directive in run.directives:
            agent.invoke({"messages": [HumanMessage(directive)]}, config, durability=durability)
        seconds = time.perf_counter() - start
        assert len(model.requests) == calls
        measured = measure_postgres(where) if backend == "postgres" else measure_sqlite(where)
    count, total, largest, ours = measured
    return Row(backend, calls, durability, (lo, hi), count, total, largest, ours, seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--backend", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--calls", nargs="+", type=int, default=[300, 2_000])
    parser.add_argument("--durability", nargs="+", default=["sync", "async", "exit"])
    args = parser.parse_args()
    print(HEADER, flush=True)
    for calls in args.calls:
        for backend in args.backend:
            for durability in args.durability:
                print(run_one(backend, calls, durability).markdown(), flush=True)


if __name__ == "__main__":
    main()
