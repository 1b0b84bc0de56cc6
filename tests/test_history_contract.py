"""The CompactingChatMessageHistory contract, run over every kind of backing store.

In the style of ``langchain-tests``: :class:`CompactingHistoryContract` holds the tests and
one abstract fixture, ``open_backing`` (a function ``session_id -> backing history`` that
opens a fresh handle on the same store each call, so "reopen" means what it means in
production); each ``Test*`` subclass provides it for one store. Each test runs through the
sync API and the async twins (``io``), where the store supports them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from langchain_core.chat_history import BaseChatMessageHistory, InMemoryChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_builderforce_memory.history import CompactingChatMessageHistory
from langchain_builderforce_memory.tokens import count_tokens
from langchain_builderforce_memory.transcript.markers import (
    consolidation_marker_of,
    is_consolidation_marker,
)
from langchain_builderforce_memory.validity import request_problems

from .helpers import IdDroppingHistory, ScriptedSummarizer

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*InMemoryChatMessageHistory.*:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:.*langchain-community.*:DeprecationWarning"),
]

OpenBacking = Callable[[str], BaseChatMessageHistory]

MAX_TOKENS = 8_000
TAIL_TOKENS = 4_000
FOLDING_EXCHANGES = 40


def exchange(i: int, size: int = 2_000) -> list[BaseMessage]:
    """A user turn and its ~500-token answer (no ids: the wrapper assigns them)."""
    return [HumanMessage(f"question {i}"), AIMessage(f"answer {i} " + "y" * size)]


class Io:
    """One test body, two APIs: the sync methods or their async twins."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    async def add(self, h: CompactingChatMessageHistory, msgs: list[BaseMessage]) -> None:
        if self.mode == "sync":
            h.add_messages(msgs)
        else:
            await h.aadd_messages(msgs)

    async def view(self, h: CompactingChatMessageHistory) -> list[BaseMessage]:
        return h.messages if self.mode == "sync" else await h.aget_messages()

    async def full(self, h: CompactingChatMessageHistory) -> list[BaseMessage]:
        return h.full_messages if self.mode == "sync" else await h.aget_full_messages()

    async def clear(self, h: CompactingChatMessageHistory) -> None:
        if self.mode == "sync":
            h.clear()
        else:
            await h.aclear()

    async def consolidate(self, h: CompactingChatMessageHistory) -> AIMessage | None:
        return h.consolidate() if self.mode == "sync" else await h.aconsolidate()


class CompactingHistoryContract:
    """The tests every backing store must pass. Subclass, provide ``open_backing``."""

    io_modes: ClassVar[tuple[str, ...]] = ("sync", "async")
    """Which APIs the store supports (langchain-community's SQL history is one or the other)."""
    keeps_ids: ClassVar[bool] = True
    """Whether the store persists message ids (the wrapper copes either way)."""

    @pytest.fixture
    def open_backing(self) -> OpenBacking:
        raise NotImplementedError

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """Run each test through every API the store supports (``io``)."""
        if "io" in metafunc.fixturenames:
            modes = metafunc.cls.io_modes if metafunc.cls is not None else ("sync",)
            metafunc.parametrize("io", [Io(m) for m in modes], ids=list(modes))

    def wrap(
        self, open_backing: OpenBacking, session: str = "s1", **kwargs: object
    ) -> CompactingChatMessageHistory:
        return CompactingChatMessageHistory(open_backing(session), **kwargs)  # type: ignore[arg-type]

    def folding(
        self, open_backing: OpenBacking, summarizer: ScriptedSummarizer, session: str = "s1"
    ) -> CompactingChatMessageHistory:
        return self.wrap(
            open_backing,
            session,
            summarizer=summarizer,
            max_tokens=MAX_TOKENS,
            tail_tokens=TAIL_TOKENS,
        )

    async def test_add_then_get_returns_the_messages_in_order(
        self, open_backing: OpenBacking, io: Io
    ) -> None:
        h = self.wrap(open_backing)
        await io.add(h, exchange(0))
        await io.add(h, exchange(1))
        assert [m.content for m in await io.view(h)] == [
            m.content for m in exchange(0) + exchange(1)
        ]

    async def test_an_empty_history_reads_as_no_messages(
        self, open_backing: OpenBacking, io: Io
    ) -> None:
        h = self.wrap(open_backing)
        assert await io.view(h) == []
        assert await io.full(h) == []

    async def test_ids_are_assigned_to_copies_where_missing(
        self, open_backing: OpenBacking, io: Io
    ) -> None:
        h = self.wrap(open_backing)
        given = [HumanMessage("no id"), AIMessage("has one", id="a-1")]
        await io.add(h, given)
        assert given[0].id is None  # the caller's object is untouched
        stored = await io.full(h)
        if self.keeps_ids:
            assert stored[0].id
            assert stored[1].id == "a-1"
            assert [m.id for m in await io.view(h)] == [m.id for m in stored]

    async def test_clear_empties_the_store(self, open_backing: OpenBacking, io: Io) -> None:
        h = self.folding(open_backing, ScriptedSummarizer("note"))
        for i in range(FOLDING_EXCHANGES):
            await io.add(h, exchange(i))
        await io.clear(h)
        assert await io.full(h) == []
        assert await io.view(h) == []
        assert await io.full(self.wrap(open_backing)) == []

    async def test_the_record_keeps_every_message_ever_added_plus_the_markers(
        self, open_backing: OpenBacking, io: Io
    ) -> None:
        summarizer = ScriptedSummarizer("note")
        h = self.folding(open_backing, summarizer)
        added: list[BaseMessage] = []
        for i in range(FOLDING_EXCHANGES):
            added.extend(exchange(i))
            await io.add(h, exchange(i))
        stored = await io.full(h)
        markers = [m for m in stored if is_consolidation_marker(m)]
        assert summarizer.calls  # it did fold
        assert len(markers) == len(summarizer.calls)
        assert [m.content for m in stored if not is_consolidation_marker(m)] == [
            m.content for m in added
        ]

    async def test_every_view_is_valid_and_fits_the_budget(
        self, open_backing: OpenBacking, io: Io
    ) -> None:
        h = self.folding(open_backing, ScriptedSummarizer("note"))
        for i in range(FOLDING_EXCHANGES):
            await io.add(h, exchange(i))
            view = await io.view(h)
            assert request_problems(view) == []
            assert count_tokens(view) <= MAX_TOKENS

    async def test_a_manual_marker_round_trips_through_the_store(
        self, open_backing: OpenBacking, io: Io
    ) -> None:
        h = self.wrap(open_backing, summarizer=ScriptedSummarizer("everything so far"))
        await io.add(h, exchange(0))
        marker = await io.consolidate(h)
        assert marker is not None
        await io.add(h, exchange(1))
        reopened = self.wrap(open_backing)
        stored = await io.full(reopened)
        assert consolidation_marker_of(stored[2]) == consolidation_marker_of(marker)
        assert stored[2].content == marker.content
        view = await io.view(reopened)
        assert "everything so far" in str(view[0].content)
        assert [m.content for m in view[1:]] == [m.content for m in exchange(1)]

    async def test_an_auto_marker_round_trips_and_a_new_wrapper_starts_from_it_for_free(
        self, open_backing: OpenBacking, io: Io
    ) -> None:
        h = self.folding(open_backing, ScriptedSummarizer("note"))
        for i in range(FOLDING_EXCHANGES):
            await io.add(h, exchange(i))
        stored = await io.full(h)
        marker = next(m for m in reversed(stored) if is_consolidation_marker(m))
        fresh = ScriptedSummarizer("never asked")
        reopened = self.folding(open_backing, fresh)
        reread = await io.full(reopened)
        assert consolidation_marker_of(reread[stored.index(marker)]) == consolidation_marker_of(
            marker
        )
        assert await io.view(reopened) == await io.view(h)
        assert fresh.calls == []

    async def test_sessions_do_not_share_a_record(self, open_backing: OpenBacking, io: Io) -> None:
        a = self.folding(open_backing, ScriptedSummarizer("note"), session="a")
        b = self.wrap(open_backing, "b")
        for i in range(FOLDING_EXCHANGES):
            await io.add(a, exchange(i))
        await io.add(b, [HumanMessage("only in b")])
        assert [m.content for m in await io.full(b)] == ["only in b"]
        assert all(m.content != "only in b" for m in await io.full(a))


class TestInMemory(CompactingHistoryContract):
    @pytest.fixture
    def open_backing(self) -> OpenBacking:
        sessions: dict[str, InMemoryChatMessageHistory] = {}

        def open_session(session_id: str) -> BaseChatMessageHistory:
            return sessions.setdefault(session_id, InMemoryChatMessageHistory())

        return open_session


class TestIdDroppingStore(CompactingHistoryContract):
    """A store that serialises messages but loses their ids: anchors fall back to hashes."""

    keeps_ids = False

    @pytest.fixture
    def open_backing(self) -> OpenBacking:
        stores: dict[str, list[dict[str, object]]] = {}

        def open_session(session_id: str) -> BaseChatMessageHistory:
            return IdDroppingHistory(stores.setdefault(session_id, []))

        return open_session


class TestSqlite(CompactingHistoryContract):
    """langchain-community's SQLChatMessageHistory over an SQLite file (sync engine)."""

    io_modes = ("sync",)

    @pytest.fixture
    def open_backing(self, tmp_path: Path) -> Iterator[OpenBacking]:
        from langchain_community.chat_message_histories import SQLChatMessageHistory

        opened: list[SQLChatMessageHistory] = []
        url = f"sqlite:///{tmp_path / 'history.db'}"

        def open_session(session_id: str) -> BaseChatMessageHistory:
            opened.append(SQLChatMessageHistory(session_id=session_id, connection=url))
            return opened[-1]

        yield open_session
        for h in opened:
            h.engine.dispose()


class TestSqliteAsync(CompactingHistoryContract):
    """The same store through an async engine (aiosqlite)."""

    io_modes = ("async",)

    @pytest.fixture
    async def open_backing(self, tmp_path: Path) -> AsyncIterator[OpenBacking]:
        from langchain_community.chat_message_histories import SQLChatMessageHistory

        opened: list[SQLChatMessageHistory] = []
        url = f"sqlite+aiosqlite:///{tmp_path / 'history.db'}"

        def open_session(session_id: str) -> BaseChatMessageHistory:
            opened.append(
                SQLChatMessageHistory(session_id=session_id, connection=url, async_mode=True)
            )
            return opened[-1]

        yield open_session
        for h in opened:
            await h.async_engine.dispose()


# ------------------------------------------------------------------ PostgreSQL (langchain-postgres)

PG_TABLE = "chat_history"


def pg_session(name: str) -> str:
    """langchain-postgres wants UUID session ids: one per test session name."""
    import uuid

    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"bfmem-test/{name}"))


@pytest.mark.postgres
class TestPostgres(CompactingHistoryContract):
    """langchain-postgres's PostgresChatMessageHistory, a new connection per opening."""

    io_modes = ("sync",)

    @pytest.fixture
    def open_backing(self, postgres_url: str) -> Iterator[OpenBacking]:
        import psycopg
        from langchain_postgres import PostgresChatMessageHistory

        connections: list[psycopg.Connection[object]] = []
        with psycopg.connect(postgres_url) as setup:
            PostgresChatMessageHistory.create_tables(setup, PG_TABLE)

        def open_session(session_id: str) -> BaseChatMessageHistory:
            connections.append(psycopg.connect(postgres_url))
            return PostgresChatMessageHistory(
                PG_TABLE, pg_session(session_id), sync_connection=connections[-1]
            )

        yield open_session
        for conn in connections:
            conn.close()


@pytest.mark.postgres
class TestPostgresAsync(CompactingHistoryContract):
    """The same store through psycopg's async connection."""

    io_modes = ("async",)

    @pytest.fixture
    async def open_backing(self, postgres_url: str) -> AsyncIterator[OpenBacking]:
        import psycopg
        from langchain_postgres import PostgresChatMessageHistory

        connections: list[psycopg.AsyncConnection[object]] = []
        async with await psycopg.AsyncConnection.connect(postgres_url) as setup:
            await PostgresChatMessageHistory.acreate_tables(setup, PG_TABLE)
        # Opened ahead: open_session is sync, an async connection is opened by awaiting.
        pool = [await psycopg.AsyncConnection.connect(postgres_url) for _ in range(3)]

        def open_session(session_id: str) -> BaseChatMessageHistory:
            connections.append(pool.pop())
            return PostgresChatMessageHistory(
                PG_TABLE, pg_session(session_id), async_connection=connections[-1]
            )

        yield open_session
        for conn in connections + pool:
            await conn.close()
