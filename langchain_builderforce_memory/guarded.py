"""Calls into the caller's code that must never fail the caller's graph.

A summarizer (a remote model) and a recall function (a store, a vector search) are the two
pieces of someone else's code this package calls on every fold and hand-off. Their failure
is never the user's failure: an error, or a call that outlives its timeout, reads as "no
answer" and the caller falls back (the held note or the window; the next note source, or
the elision marker), with a log line saying why. This module is that one boundary.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["acall_guarded", "call_guarded", "describe_error", "log_no_answer"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


def _run_into(future: concurrent.futures.Future[T], call: Callable[[], T]) -> None:
    """Run ``call`` and settle ``future`` with its result or exception (a thread's body)."""
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(call())
    # The thread's boundary: whatever the call raises is handed to the waiting caller.
    except BaseException as exc:  # noqa: BLE001
        future.set_exception(exc)


def _start_daemon(call: Callable[[], T]) -> concurrent.futures.Future[T]:
    """``call()`` in a new daemon thread of its own, as a future.

    Not a shared fixed-size pool: a call abandoned at its timeout keeps running, and with
    a pool of four, four hung calls left every later call (any thread's, any graph's)
    waiting behind them forever. A thread per call costs ~50 µs, next to a model call's
    seconds; a hung one holds only itself, and being a daemon it never blocks exit.
    """
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    thread = threading.Thread(
        target=_run_into, args=(future, call), name="bfmem-guarded", daemon=True
    )
    thread.start()
    return future


def describe_error(exc: BaseException) -> str:
    """``Type: message`` for a log line, even when the exception's ``__str__`` raises.

    A log line that formats a hostile exception must not itself raise out of the boundary
    that exists to keep that exception from the caller's graph.

    Example:
        >>> class Hostile(Exception):
        ...     def __str__(self) -> str:
        ...         raise RuntimeError("no")
        >>> describe_error(Hostile())
        'Hostile: <unprintable>'
    """
    try:
        message = str(exc)
    # Any __str__ may raise anything; the type name still says what failed.
    except Exception:  # noqa: BLE001
        message = "<unprintable>"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def log_no_answer(what: str, reason: str, exc: BaseException | None = None) -> None:
    """One warning line: ``what`` gave no answer, why, and that the caller falls back.

    The traceback, when there is one, goes out at DEBUG: a failing remote service is news
    once a turn, not a page of stack frames.
    """
    logger.warning("%s gave no answer (%s); falling back", what, reason)
    if exc is not None and logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s failure traceback", what, exc_info=exc)


def call_guarded(call: Callable[[], T], *, what: str, timeout: float | None) -> T | None:
    """``call()``, or ``None`` (logged) when it raises or outlives ``timeout`` seconds.

    With a timeout the call runs in a daemon thread of its own (never a shared pool a hung
    call could fill), in a copy of the caller's context (so it stays a child of the
    caller's run for tracing and tags), and is abandoned, not killed, when it outlives it.

    Example:
        >>> call_guarded(lambda: 1 / 0, what="demo", timeout=None) is None
        True
    """
    try:
        if timeout is None:
            return call()
        context = contextvars.copy_context()
        return _start_daemon(functools.partial(context.run, call)).result(timeout=timeout)
    except concurrent.futures.TimeoutError:
        log_no_answer(what, f"timed out after {timeout}s")
        return None
    # The fallback boundary: the caller's code or a remote service; its failure must
    # degrade (and be logged), never raise into the user's graph. A CancelledError here
    # is the callee's own (a sync call is no task we could have cancelled).
    except (Exception, asyncio.CancelledError) as exc:  # noqa: BLE001
        log_no_answer(what, describe_error(exc), exc)
        return None


async def acall_guarded(
    call: Callable[[], Awaitable[T]], *, what: str, timeout: float | None
) -> T | None:
    """Async twin of :func:`call_guarded`: the call runs as a task of its own.

    Waiting on a separate task tells the two cancellations apart: our own task being
    cancelled re-raises (the run is ending), while a ``CancelledError`` the callee raised
    by itself is its failure, logged and fallen back from. At ``timeout`` the task is
    cancelled and abandoned, not awaited: a callee that swallows its cancellation cannot
    hold the turn, and its late answer is never read.

    Example:
        >>> async def slow() -> int:
        ...     await asyncio.sleep(1)
        ...     return 1
        >>> asyncio.run(acall_guarded(slow, what="demo", timeout=0.01)) is None
        True
    """
    task = asyncio.ensure_future(call())
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:
        task.cancel()  # our caller is ending the run: take the callee down with it
        raise
    if not done:
        task.cancel()
        task.add_done_callback(_forget)
        log_no_answer(what, f"timed out after {timeout}s")
        return None
    if task.cancelled():
        log_no_answer(what, "CancelledError: the call cancelled itself")
        return None
    exc = task.exception()
    if exc is None:
        return task.result()
    # The fallback boundary, as in the sync twin; a BaseException that is no
    # CancelledError (KeyboardInterrupt, SystemExit) is the process ending: re-raise it.
    if isinstance(exc, (Exception, asyncio.CancelledError)):
        log_no_answer(what, describe_error(exc), exc)
        return None
    raise exc


def _forget(task: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned task's outcome, so asyncio logs no 'never retrieved' error."""
    if not task.cancelled():
        task.exception()
