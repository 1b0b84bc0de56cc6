"""Concurrency without loss: CompactingChatMessageHistory under many writers.

8 writers x 50 appends, on one shared session (one wrapper) and on 8 sessions (a wrapper
each), from threads (sync API), from event loops in different threads (async API, a loop
per thread: what a sync web server calling async code does) and from asyncio tasks on one
loop; over SQLite and PostgreSQL. Each case runs ``ROUNDS`` times in a row (a fresh session
each round) under a timeout. After each round: no message lost, duplicated or reordered
within its writer; every marker well-formed; every view read during the run, and the
final one, valid for strict providers and within budget.

Two processes on PostgreSQL (``multiprocessing``, spawned): appending to one session with a
:class:`~langchain_builderforce_memory.guards.PostgresFoldGuard` keeps the same guarantees;
and when two folds race, at most one marker wins while the loser's view stays valid (the
unguarded control writes two).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_builderforce_memory.guards import PostgresFoldGuard
from langchain_builderforce_memory.history import CompactingChatMessageHistory
from langchain_builderforce_memory.messages import message_id
from langchain_builderforce_memory.tokens import count_tokens
from langchain_builderforce_memory.transcript.markers import (
    CONSOLIDATION_MARKER_PREFIX,
    consolidation_marker_of,
    is_consolidation_marker,
)
from langchain_builderforce_memory.validity import request_problems

from .helpers import ScriptedSummarizer

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*langchain-community.*:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:.*InMemoryChatMessageHistory.*:DeprecationWarning"),
]

ROUNDS = int(os.environ.get("BFMEM_CONCURRENCY_ROUNDS", "2"))
"""Each concurrency case runs this many times in a row. The acceptance run is 20:
``BFMEM_CONCURRENCY_ROUNDS=20 scripts/with-postgres.sh pytest tests/test_concurrency.py``
(minutes: every append reads the whole record back, 400 of them per round)."""
TEST_TIMEOUT = 120 + 150 * ROUNDS
"""A whole test's limit (pytest-timeout): a round takes seconds alone, up to ~40 s on a
shared 2-core machine. A single round that hangs is caught sooner: each waits at most
``JOIN_SECONDS`` for its writers."""
WRITERS = 8
ADDS = 50
MAX_TOKENS = 2_000
TAIL_TOKENS = 800
CHECK_VIEW_EVERY = 10
JOIN_SECONDS = 120.0
PG_TABLE = "chat_history"


def message(writer: int, i: int) -> BaseMessage:
    """Writer ``writer``'s ``i``-th message (~55 tokens), tagged to be found again."""
    text = f"w{writer}:{i:03d} " + "x" * 200
    return HumanMessage(text) if i % 2 == 0 else AIMessage(text)


def tag_of(m: BaseMessage) -> tuple[int, int]:
    head = str(m.content).split(" ", 1)[0]
    writer, i = head[1:].split(":")
    return int(writer), int(i)


def session_uuid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"bfmem-concurrency/{name}"))


# ------------------------------------------------------------------ the checks


def marker_problems(record: list[BaseMessage]) -> list[str]:
    """What is wrong with the record's markers: each must be an auto marker stamped with a
    positive ``folded`` count, a note, and a ``keep_from_id`` naming a stored message
    before it."""
    problems: list[str] = []
    seen_ids: set[str] = set()
    for j, m in enumerate(record):
        if not is_consolidation_marker(m):
            seen_ids.add(message_id(m))  # the id, or for an id-less message its hash
            continue
        meta = consolidation_marker_of(m)
        if meta is None or not meta.auto:
            problems.append(f"marker {j}: not an auto marker: {meta}")
        elif meta.keep_from_id not in seen_ids:
            problems.append(f"marker {j}: keep_from_id {meta.keep_from_id!r} is not before it")
        elif not meta.folded or meta.folded < 1:
            problems.append(f"marker {j}: folded={meta.folded}")
        if not str(m.content).startswith(CONSOLIDATION_MARKER_PREFIX) or not m.id:
            problems.append(f"marker {j}: no note or no id")
    return problems


def view_problems(view: list[BaseMessage]) -> list[str]:
    found = [str(p) for p in request_problems(view)]
    if count_tokens(view) > MAX_TOKENS:
        found.append(f"view of {count_tokens(view)} tokens > {MAX_TOKENS}")
    return found


def assert_record_whole(
    record: list[BaseMessage],
    writers: list[int],
    adds: int,
    others: tuple[tuple[int, int], ...] = (),
) -> None:
    """Every writer's messages exactly once, in the order it wrote them; markers well-formed.

    ``others``: the tags of messages other writers added once each (a racer's).
    """
    convo = [m for m in record if not is_consolidation_marker(m)]
    tags = [tag_of(m) for m in convo]
    duplicated = [t for t, n in Counter(tags).items() if n > 1]
    assert not duplicated, f"duplicated: {duplicated[:5]}"
    expected = {(w, i) for w in writers for i in range(adds)} | set(others)
    assert set(tags) == expected, f"lost: {sorted(expected - set(tags))[:5]}"
    for w in writers:
        order = [i for ww, i in tags if ww == w]
        assert order == sorted(order), f"writer {w} reordered"
    assert marker_problems(record) == []


# ------------------------------------------------------------------ backings


@dataclass
class Backings:
    """Opens backing histories of one store: sync ones, and async ones usable from any loop."""

    sync: Callable[[str], BaseChatMessageHistory]
    asynchronous: Callable[[str], BaseChatMessageHistory]
    closers: list[Callable[[], None]] = field(default_factory=list)


def _test_pragmas(dbapi_connection: Any, _record: object) -> None:
    # WAL: readers and the writer do not block each other (what a server would set);
    # no fsync per commit, as the PostgreSQL test server runs.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=OFF")
    cursor.close()


def sqlite_backings(tmp_path: Path) -> Backings:
    from langchain_community.chat_message_histories import SQLChatMessageHistory
    from sqlalchemy import create_engine, event
    from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
    from sqlalchemy.pool import NullPool

    path = tmp_path / "chat.db"
    engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": 60})
    event.listen(engine, "connect", _test_pragmas)
    SQLChatMessageHistory(session_id="setup", connection=engine)  # creates the table
    aengines: list[AsyncEngine] = []

    def asynchronous(s: str) -> BaseChatMessageHistory:
        # An engine per session: SQLAlchemy's async engine holds asyncio locks of its own
        # (bound to one loop once contended). NullPool: no pooled aiosqlite connection
        # outlives the loop that opened it.
        aengines.append(
            create_async_engine(
                f"sqlite+aiosqlite:///{path}", poolclass=NullPool, connect_args={"timeout": 60}
            )
        )
        event.listen(aengines[-1].sync_engine, "connect", _test_pragmas)
        return SQLChatMessageHistory(session_id=s, connection=aengines[-1])

    def close() -> None:
        engine.dispose()
        for aengine in aengines:
            asyncio.run(aengine.dispose())

    return Backings(
        sync=lambda s: SQLChatMessageHistory(session_id=s, connection=engine),
        asynchronous=asynchronous,
        closers=[close],
    )


def postgres_backings(url: str) -> Backings:
    import psycopg
    from langchain_postgres import PostgresChatMessageHistory

    with psycopg.connect(url) as setup:
        PostgresChatMessageHistory.create_tables(setup, PG_TABLE)
    opened: list[Any] = []

    def sync(s: str) -> BaseChatMessageHistory:
        opened.append(psycopg.connect(url))
        return PostgresChatMessageHistory(PG_TABLE, session_uuid(s), sync_connection=opened[-1])

    def asynchronous(s: str) -> BaseChatMessageHistory:
        # One async connection, opened here and then used from whichever loop writes: the
        # wrapper's locks keep it to one caller at a time.
        conn = asyncio.run(psycopg.AsyncConnection.connect(url))
        opened.append(conn)
        return PostgresChatMessageHistory(PG_TABLE, session_uuid(s), async_connection=conn)

    def close() -> None:
        for conn in opened:
            if isinstance(conn, psycopg.AsyncConnection):
                asyncio.run(conn.close())
            else:
                conn.close()

    return Backings(sync=sync, asynchronous=asynchronous, closers=[close])


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backings]:
    if request.param == "postgres":
        opened = postgres_backings(request.getfixturevalue("postgres_url"))
    else:
        opened = sqlite_backings(tmp_path)
    yield opened
    for close in opened.closers:
        close()


# ------------------------------------------------------------------ writers


def folding(
    backing: BaseChatMessageHistory, summarizer: Any, **kwargs: Any
) -> CompactingChatMessageHistory:
    return CompactingChatMessageHistory(
        backing, summarizer=summarizer, max_tokens=MAX_TOKENS, tail_tokens=TAIL_TOKENS, **kwargs
    )


def write_sync(h: CompactingChatMessageHistory, w: int, problems: list[str]) -> None:
    for i in range(ADDS):
        h.add_messages([message(w, i)])
        if i % CHECK_VIEW_EVERY == CHECK_VIEW_EVERY - 1:
            problems.extend(view_problems(h.messages))


async def write_async(h: CompactingChatMessageHistory, w: int, problems: list[str]) -> None:
    for i in range(ADDS):
        await h.aadd_messages([message(w, i)])
        if i % CHECK_VIEW_EVERY == CHECK_VIEW_EVERY - 1:
            problems.extend(view_problems(await h.aget_messages()))


def run_in_threads(targets: list[Callable[[], object]]) -> None:
    """Run each target in its own thread; re-raise the first error; fail on a hang."""
    pool = ThreadPoolExecutor(max_workers=len(targets))
    try:
        futures = [pool.submit(t) for t in targets]
        for f in futures:
            f.result(timeout=JOIN_SECONDS)  # raises the writer's error, or TimeoutError
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def run_writers(mode: str, wrappers: list[CompactingChatMessageHistory]) -> list[str]:
    """Writer ``w`` appends through ``wrappers[w]``; returns the view problems seen."""
    problems: list[str] = []
    if mode == "threads":
        run_in_threads([lambda w=w: write_sync(wrappers[w], w, problems) for w in range(WRITERS)])
    elif mode == "loops":
        run_in_threads(
            [lambda w=w: asyncio.run(write_async(wrappers[w], w, problems)) for w in range(WRITERS)]
        )
    else:

        async def tasks() -> None:
            writers = (write_async(wrappers[w], w, problems) for w in range(WRITERS))
            await asyncio.wait_for(asyncio.gather(*writers), JOIN_SECONDS)

        asyncio.run(tasks())
    return problems


def read_back(
    h: CompactingChatMessageHistory, mode: str
) -> tuple[list[BaseMessage], list[BaseMessage]]:
    """The stored record and the view, through the API the writers used."""
    if mode == "threads":
        return h.full_messages, h.messages

    async def both() -> tuple[list[BaseMessage], list[BaseMessage]]:
        return await h.aget_full_messages(), await h.aget_messages()

    return asyncio.run(both())


# ------------------------------------------------------------------ the tests


@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT)
@pytest.mark.parametrize("sessions", ["one-session", "eight-sessions"])
@pytest.mark.parametrize("mode", ["threads", "loops", "tasks"])
def test_eight_writers_lose_duplicate_and_reorder_nothing(
    backings: Backings, mode: str, sessions: str
) -> None:
    open_backing = backings.sync if mode == "threads" else backings.asynchronous
    for r in range(ROUNDS):
        summarizer = ScriptedSummarizer("what the writers said")
        if sessions == "one-session":
            shared = folding(open_backing(f"{mode}-{r}"), summarizer)
            wrappers = [shared] * WRITERS
        else:
            wrappers = [
                folding(open_backing(f"{mode}-{r}-{w}"), summarizer) for w in range(WRITERS)
            ]
        problems = run_writers(mode, wrappers)

        assert problems == [], f"round {r}"
        assert summarizer.calls, "the writers never folded: the test exercised nothing"
        for w, h in enumerate(wrappers[: 1 if sessions == "one-session" else WRITERS]):
            record, view = read_back(h, mode)
            writers = list(range(WRITERS)) if sessions == "one-session" else [w]
            assert_record_whole(record, writers, ADDS)
            assert view_problems(view) == [], f"round {r}"


# ------------------------------------------------------------------ two processes (PostgreSQL)

SPAWN = multiprocessing.get_context("spawn")  # no fork: the test process runs threads
PREFILL = 60
"""Messages stored before a race (~3,300 tokens): the next append must fold."""


def pg_history(url: str, conn: Any, session: str) -> BaseChatMessageHistory:
    from langchain_postgres import PostgresChatMessageHistory

    return PostgresChatMessageHistory(PG_TABLE, session_uuid(session), sync_connection=conn)


def append_in_process(url: str, sessions: list[str], writer: int, barrier: Any) -> None:
    """A process's writer: ADDS appends to each session, starting with the other process."""
    import psycopg

    with psycopg.connect(url) as conn:
        for session in sessions:
            h = folding(
                pg_history(url, conn, session),
                ScriptedSummarizer(f"notes of writer {writer}"),
                fold_guard=PostgresFoldGuard(url, key=session),
            )
            problems: list[str] = []
            barrier.wait(JOIN_SECONDS)
            write_sync(h, writer, problems)
            assert problems == [], problems


class BlockingSummarizer:
    """Announces that its fold started, then answers only once told to (or after 60 s)."""

    def __init__(self, started: Any, release: Any) -> None:
        self.started = started
        self.release = release

    def __call__(self, prompt: list[BaseMessage]) -> str:
        self.started.set()
        self.release.wait(60)
        return "the slow writer's note"


def fold_slowly_in_process(
    url: str, sessions: list[str], guarded: bool, started: list[Any], release: list[Any]
) -> None:
    """Appends one message to each session; its fold blocks until the racer is done."""
    import psycopg

    with psycopg.connect(url) as conn:
        for r, session in enumerate(sessions):
            guard = PostgresFoldGuard(url, key=session) if guarded else None
            summarizer = BlockingSummarizer(started[r], release[r])
            h = folding(pg_history(url, conn, session), summarizer, fold_guard=guard)
            h.add_messages([message(0, PREFILL)])


def race_in_process(
    url: str,
    sessions: list[str],
    guarded: bool,
    started: list[Any],
    release: list[Any],
    results: Any,
) -> None:
    """While the slow writer folds, appends one message (and would fold too)."""
    import psycopg

    with psycopg.connect(url) as conn:
        for r, session in enumerate(sessions):
            assert started[r].wait(JOIN_SECONDS), "the slow writer never folded"
            guard = PostgresFoldGuard(url, key=session) if guarded else None
            summarizer = ScriptedSummarizer("the racer's note")
            h = folding(pg_history(url, conn, session), summarizer, fold_guard=guard)
            h.add_messages([message(1, 0)])
            results.put((r, len(summarizer.calls), view_problems(h.messages)))
            release[r].set()


def join_all(processes: list[Any]) -> None:
    for p in processes:
        p.join(JOIN_SECONDS * 2)
    hung = [p for p in processes if p.is_alive()]
    for p in hung:
        p.kill()
    assert not hung, "a writer process hung"
    assert [p.exitcode for p in processes] == [0] * len(processes)


def stored(url: str, session: str) -> tuple[list[BaseMessage], list[BaseMessage]]:
    """The session's record and the view a fresh wrapper (no summarizer) reads."""
    import psycopg

    with psycopg.connect(url) as conn:
        h = CompactingChatMessageHistory(
            pg_history(url, conn, session), max_tokens=MAX_TOKENS, tail_tokens=TAIL_TOKENS
        )
        return h.full_messages, h.messages


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT)
def test_two_processes_appending_to_one_session_lose_nothing(postgres_url: str) -> None:
    postgres_backings(postgres_url)  # creates the table
    sessions = [f"two-processes-{r}" for r in range(ROUNDS)]
    barrier = SPAWN.Barrier(2)
    processes = [
        SPAWN.Process(target=append_in_process, args=(postgres_url, sessions, w, barrier))
        for w in range(2)
    ]
    for p in processes:
        p.start()
    join_all(processes)
    for session in sessions:
        record, view = stored(postgres_url, session)
        assert_record_whole(record, [0, 1], ADDS)
        assert any(is_consolidation_marker(m) for m in record), "nothing folded"
        assert view_problems(view) == []


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT)
@pytest.mark.parametrize("guarded", [True, False], ids=["advisory-lock", "unguarded-control"])
def test_when_two_folds_race_at_most_one_marker_wins(postgres_url: str, guarded: bool) -> None:
    import psycopg

    postgres_backings(postgres_url)  # creates the table
    sessions = [f"race-{r}" for r in range(ROUNDS)]
    with psycopg.connect(postgres_url) as conn:
        for session in sessions:
            pg_history(postgres_url, conn, session).add_messages(
                [message(0, i) for i in range(PREFILL)]
            )
    started = [SPAWN.Event() for _ in sessions]
    release = [SPAWN.Event() for _ in sessions]
    results = SPAWN.Queue()
    processes = [
        SPAWN.Process(
            target=fold_slowly_in_process,
            args=(postgres_url, sessions, guarded, started, release),
        ),
        SPAWN.Process(
            target=race_in_process,
            args=(postgres_url, sessions, guarded, started, release, results),
        ),
    ]
    for p in processes:
        p.start()
    racer = sorted(results.get(timeout=JOIN_SECONDS * 2) for _ in sessions)
    join_all(processes)

    for r, session in enumerate(sessions):
        record, view = stored(postgres_url, session)
        markers = [m for m in record if is_consolidation_marker(m)]
        assert marker_problems(record) == []
        assert view_problems(view) == []
        # The racer's message stays in: a marker may keep the view from it (at this budget,
        # under the note's reserve, a fold's tail is the latest message alone).
        assert_record_whole(record, [0], PREFILL + 1, others=((1, 0),))
        _, racer_folds, racer_view_problems = racer[r]
        assert racer_view_problems == []  # the loser's view is valid
        if guarded:
            assert len(markers) == 1, f"round {r}: {len(markers)} markers"
            assert "slow writer" in str(markers[0].content)
            assert racer_folds == 0  # it skipped its fold: no duplicate summarizer call
        else:
            assert len(markers) == 2  # the race the guard closes
            assert racer_folds == 1
