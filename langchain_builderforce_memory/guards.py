"""Fold guards: at most one writer folds a stored session at a time, across processes.

:class:`~langchain_builderforce_memory.history.CompactingChatMessageHistory` serialises the
writers of one wrapper with its own lock. Writers in SEVERAL processes (a web server's
workers, a job queue) share only the database: without a guard, two of them can see the
same overflowing record, both call the summarizer, and both append a marker. A
:class:`FoldGuard` closes that race where the record lives. A writer that wants to fold
asks the guard first; while another writer holds it, it skips its fold (its view stays
windowed, and valid, until the winner's marker lands; the next append retries), so one
race costs no duplicate summarizer call and at most one marker wins. The winner re-reads
the record inside the guard, so it folds what is stored, including any marker written
since it last looked.

:class:`PostgresFoldGuard` is a PostgreSQL session-level advisory lock
(``pg_try_advisory_lock``) on a key derived from the session, taken on a short-lived
connection of its own: nothing is written, no table is needed, and a crashed holder's lock
goes with its connection.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    asynccontextmanager,
    contextmanager,
    nullcontext,
)
from typing import Final, Protocol, runtime_checkable

__all__ = ["FoldGuard", "PostgresFoldGuard", "aheld_or_skipped", "held_or_skipped"]

_TRY_LOCK: Final = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
_UNLOCK: Final = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"
_KEY_PREFIX: Final = "builderforce_memory.fold:"


@runtime_checkable
class FoldGuard(Protocol):
    """Who may fold one session now: a non-blocking, cross-process try-lock.

    Both context managers yield ``True`` when this writer holds the guard until the block
    ends, ``False`` when another writer holds it (then the caller skips its fold).
    """

    def hold(self) -> AbstractContextManager[bool]:
        """Try to take the guard (sync)."""
        ...

    def ahold(self) -> AbstractAsyncContextManager[bool]:
        """Try to take the guard (async)."""
        ...


class PostgresFoldGuard:
    """A :class:`FoldGuard` that is a PostgreSQL advisory lock on ``key``.

    Needs the ``postgres`` extra (psycopg 3). Use the same ``key`` in every process that
    writes the session (its session id is the natural choice); the lock lives in the
    server, so any database on it will do, usually the one holding the history.

    Args:
        conninfo: A libpq connection string or URL (``postgresql://user@host/db``).
        key: The session's name; hashed to the advisory lock's 64-bit key.

    Example:
        >>> guard = PostgresFoldGuard("postgresql://app@db/chat", key="session-42")
        >>> guard.key
        'session-42'
    """

    __slots__ = ("conninfo", "key")

    def __init__(self, conninfo: str, *, key: str) -> None:
        for name, value in (("conninfo", conninfo), ("key", key)):
            if not isinstance(value, str) or not value:
                msg = (
                    f"PostgresFoldGuard: {name} must be a non-empty string; got {value!r}. "
                    "Pass the database URL and the session id."
                )
                raise ValueError(msg)
        if importlib.util.find_spec("psycopg") is None:
            msg = (
                "PostgresFoldGuard needs psycopg 3, which is not installed. Fix: pip install "
                "'langchain-builderforce-memory[postgres]'."
            )
            raise ImportError(msg)
        self.conninfo = conninfo
        self.key = key

    @property
    def _lock_key(self) -> str:
        return _KEY_PREFIX + self.key

    @contextmanager
    def _hold(self) -> Iterator[bool]:
        import psycopg

        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            row = conn.execute(_TRY_LOCK, (self._lock_key,)).fetchone()
            won = bool(row and row[0])
            try:
                yield won
            finally:
                if won and not conn.closed:
                    conn.execute(_UNLOCK, (self._lock_key,))

    @asynccontextmanager
    async def _ahold(self) -> AsyncIterator[bool]:
        import psycopg

        async with await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True) as conn:
            cursor = await conn.execute(_TRY_LOCK, (self._lock_key,))
            row = await cursor.fetchone()
            won = bool(row and row[0])
            try:
                yield won
            finally:
                if won and not conn.closed:
                    await conn.execute(_UNLOCK, (self._lock_key,))

    def hold(self) -> AbstractContextManager[bool]:
        """Try the advisory lock on a new connection; released (and closed) on exit."""
        return self._hold()

    def ahold(self) -> AbstractAsyncContextManager[bool]:
        """Async twin of :meth:`hold`."""
        return self._ahold()

    def __repr__(self) -> str:
        return f"PostgresFoldGuard(key={self.key!r})"


def held_or_skipped(
    guard: FoldGuard | None, logger: logging.Logger
) -> AbstractContextManager[bool]:
    """``guard.hold()``, logging on ``logger`` when another writer holds it.

    ``None`` (no guard) always holds: the caller's own lock is the only one.

    Example:
        >>> with held_or_skipped(None, logging.getLogger("demo")) as held:
        ...     held
        True
    """
    if guard is None:
        return nullcontext(True)
    return _logged_loss(guard.hold(), logger)


def aheld_or_skipped(
    guard: FoldGuard | None, logger: logging.Logger
) -> AbstractAsyncContextManager[bool]:
    """Async twin of :func:`held_or_skipped` (``guard.ahold()``).

    Example:
        >>> import asyncio
        >>> async def main() -> bool:
        ...     async with aheld_or_skipped(None, logging.getLogger("demo")) as held:
        ...         return held
        >>> asyncio.run(main())
        True
    """
    if guard is None:
        return nullcontext(True)
    return _alogged_loss(guard.ahold(), logger)


@contextmanager
def _logged_loss(guard: AbstractContextManager[bool], logger: logging.Logger) -> Iterator[bool]:
    with guard as held:
        if not held:
            logger.info("another writer is folding this session; this fold is skipped")
        yield held


@asynccontextmanager
async def _alogged_loss(
    guard: AbstractAsyncContextManager[bool], logger: logging.Logger
) -> AsyncIterator[bool]:
    async with guard as held:
        if not held:
            logger.info("another writer is folding this session; this fold is skipped")
        yield held
