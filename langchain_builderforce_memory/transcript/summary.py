"""The transcript summarizer: the ONE prompt every fold, note and consolidation uses.

The model call is the caller's (a LangChain chat model, any ``Runnable``, or a plain
function); this module owns what is asked (the transcript rendered by
:mod:`~langchain_builderforce_memory.transcript.render`), so a fold note, a hand-off note
and a consolidation summary read the same everywhere.

A summarizer is a utility call: it must never stream into the user's output (it is
tagged ``nostream``), and its failure is never the user's failure. Any error,
timeout or empty answer reads as "no summary" and the caller falls back (the window,
the elision marker, "nothing to consolidate"), with a log line saying why.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import TypeAlias, TypeGuard

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.runnables.base import RunnableBindingBase

from langchain_builderforce_memory.guarded import acall_guarded, call_guarded, log_no_answer
from langchain_builderforce_memory.messages import clean_text
from langchain_builderforce_memory.models import chat_model_from_string, profile_tokens
from langchain_builderforce_memory.tokens import TokenCounterLike, resolve_token_counter
from langchain_builderforce_memory.transcript.render import (
    ARG_VALUE_CHARS,
    SUMMARY_INPUT_MAX_TOKENS,
    after_note,
    call_text,
    render_for_summary,
    summary_parts,
)

__all__ = [
    "ARG_VALUE_CHARS",
    "DEFAULT_SUMMARIZER_TIMEOUT",
    "SUMMARIZER_TAGS",
    "SUMMARY_INPUT_MAX_TOKENS",
    "TRANSCRIPT_SUMMARY_MAX_TOKENS",
    "TRANSCRIPT_SUMMARY_PROMPT",
    "Summarizer",
    "SummarizerLike",
    "asummarize_parts",
    "asummarize_transcript",
    "call_text",
    "cap_note",
    "focused_prompt",
    "render_for_summary",
    "resolve_summarizer",
    "summarize_parts",
    "summarize_transcript",
    "summary_input_limit",
    "summary_parts",
    "summary_request",
]


TRANSCRIPT_SUMMARY_PROMPT = (
    "You are compressing the older part of an AI agent's working transcript into a memory "
    "note the agent will keep working from; it will no longer see the messages themselves.\n"
    "Write down:\n"
    "- the CURRENT instruction: the most recent user message is authoritative; earlier "
    "requests it replaced are history, not the task;\n"
    "- the concrete facts and answers found so far;\n"
    "- the tool results that still matter, with their ids, file paths and values;\n"
    "- the decisions made and why;\n"
    "- what remains to be done;\n"
    "- a section headed 'Files and resources' that names each file, command or resource "
    "the remaining work depends on, one a line, with what it holds or showed.\n"
    "Each tool result follows the call it answers (`tool read_file({...}) -> output`): take "
    "the path from the call when the output does not repeat it. Keep every file path, "
    "symbol name and line number the remaining work depends on, together with what was "
    "learned in each file: whatever you leave out, the agent must read again. Be dense and "
    "factual. No preamble, no pleasantries, no closing remarks."
)
"""The summarizer's instructions (our words, the seed's intent)."""

FOCUS_MAX_CHARS = 500
"""A requested fold's focus is cut to this many characters: it steers the note, it is not one."""


def focused_prompt(focus: str | None) -> str | None:
    """The summarizer prompt for a fold the agent asked for, keeping ``focus`` above all.

    ``None`` (the standard prompt) for no focus.

    Example:
        >>> focused_prompt("the parser").endswith("keep above all: the parser")
        True
        >>> focused_prompt("  ") is None
        True
    """
    text = (focus or "").strip()
    if not text:
        return None
    return (
        f"{TRANSCRIPT_SUMMARY_PROMPT}\n"
        "The agent asked for this compaction itself and said what the note must "
        f"keep above all: {text[:FOCUS_MAX_CHARS]}"
    )


TRANSCRIPT_SUMMARY_MAX_TOKENS = 2_500
"""The note's ceiling. The note is the agent's only record of every file it folds (paths,
symbols, line numbers); the seed found 1.2k too little to carry them. Longer answers are
cut to this many tokens of the budget's own counter (see :func:`cap_note`)."""

_CUT_MARK = " [...]"

DEFAULT_SUMMARIZER_TIMEOUT = 120.0
"""Seconds a summarizer call may take by default before it counts as failed. A note is at
most 2,500 tokens written from at most ~40k read: a slow model (~30 tokens/s out, a few
seconds to read) needs 60-90 s, so 120 s leaves room for a slow healthy call, while a call
hung on a dead connection no longer holds the turn for as long as the socket lives (the
view falls back, and the backoff waits before the next attempt)."""

SUMMARIZER_TAGS = ("nostream", "langsmith:nostream", "builderforce_memory:summarizer")
"""Tags on every summarizer call. LangGraph's ``stream_mode="messages"`` skips runs
tagged ``nostream`` (``langgraph.constants.TAG_NOSTREAM``; older releases and LangSmith
read ``langsmith:nostream``), so a note never streams into the user's output. A plain
function runs as a ``RunnableLambda`` child run, so a chat model it calls inherits them."""

Summarizer: TypeAlias = (
    "Runnable[list[BaseMessage], object] | Callable[[list[BaseMessage]], object]"
)
"""A chat model (or any ``Runnable``), or a function, sync or async, that takes the
prompt messages ``[SystemMessage(prompt), HumanMessage(rendered transcript)]`` and
returns the note as text (or a message, or a message's content blocks: their text
blocks are the note). ``None`` or ``""`` means "no summary"."""

SummarizerLike: TypeAlias = "Summarizer | str"
"""What ``summarizer=`` arguments accept: a :data:`Summarizer`, or a ``"provider:model"``
string made into a chat model by ``init_chat_model`` (see :func:`resolve_summarizer`)."""


def resolve_summarizer(summarizer: SummarizerLike | None) -> Summarizer | None:
    """A ``summarizer=`` argument, checked; a ``"provider:model"`` string made a chat model.

    Every entry point calls this where it takes the argument, so a missing provider
    package or a wrong kind of value fails there, with the fix, rather than degrading
    silently on the first fold (summarizer CALLS are guarded; taking one is not).

    Raises:
        TypeError: neither a model, a string, a ``Runnable`` nor a function.
        ImportError: the string's provider package (or ``langchain``) is not installed.
        ValueError: the string names no provider ``init_chat_model`` knows.

    Example:
        >>> resolve_summarizer(None) is None
        True
        >>> resolve_summarizer(42)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: summarizer must be a chat model, a 'provider:model' string, ...; got int...
    """
    if summarizer is None:
        return None
    if isinstance(summarizer, str):
        return chat_model_from_string(summarizer, what="summarizer")
    candidate: object = summarizer  # checked at run time: users pass anything here
    if isinstance(candidate, Runnable) or callable(candidate):
        return summarizer
    msg = (
        "summarizer must be a chat model, a 'provider:model' string, a Runnable or a "
        f"function of the prompt messages; got {type(candidate).__name__}. Pass "
        "summarizer=None to only window."
    )
    raise TypeError(msg)


def summary_request(
    messages: Sequence[BaseMessage], *, prompt: str | None = None
) -> list[BaseMessage] | None:
    """The prompt messages a summarizer is sent for ``messages``; ``None`` for nothing."""
    if not messages:
        return None
    return [
        SystemMessage(prompt or TRANSCRIPT_SUMMARY_PROMPT),
        HumanMessage(render_for_summary(messages)),
    ]


def _config() -> RunnableConfig:
    return {"tags": list(SUMMARIZER_TAGS), "run_name": "builderforce_memory_summarizer"}


def _answer_text(raw: object) -> str | None:
    """The answer's text, or ``None``, logged.

    A string; a message's text; or the text blocks of a message's content, which is what
    ``lambda p: model.invoke(p).content`` returns with Claude's thinking or citations.
    A summarizer that returns a dict (a rate-limit error body), a number or bytes gave no
    note: storing its JSON as the run's memory would replace what the run learned with an
    error message, silently.
    """
    if raw is None:
        log_no_answer("summarizer", "empty answer")
        return None
    text: object = raw
    if isinstance(raw, BaseMessage):
        text = raw.text
    elif _content_blocks(raw):
        text = AIMessage(content=raw).text  # langchain-core's own reading of text blocks
    if not isinstance(text, str):
        log_no_answer(
            "summarizer",
            f"answered {type(raw).__name__}, not text; a summary must be a string or a "
            "message whose text is one",
        )
        return None
    if not text.strip():
        log_no_answer("summarizer", "empty answer")
        return None
    problem = transport_error_kind(text)
    if problem is not None:
        log_no_answer("summarizer", f"answered {problem}, not a summary")
        return None
    return clean_text(text.strip())


def _content_blocks(raw: object) -> TypeGuard[list[str | dict[str, object]]]:
    """A message's content blocks: a list of typed dicts, one of them a text block."""
    return (
        isinstance(raw, list)
        and all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in raw)
        and any(b.get("type") == "text" for b in raw)
    )


_HTTP_STATUS_LINE = re.compile(r"HTTP/\d(?:\.\d)? [1-5]\d\d\b")
_ERROR_KEYS = frozenset(
    {"error", "errors", "detail", "message", "type", "code", "status", "request_id"}
    | {"retry_after", "param"}
)


def transport_error_kind(text: str) -> str | None:
    """What transport error ``text`` looks like (an HTTP error body), else ``None``.

    A gateway or client wrapper that returns the response body instead of raising hands
    us a 429 JSON body or a 502 HTML page as if it were the summary; stored as the note,
    it would replace what the run learned. Only whole-answer shapes count: a JSON object
    made of error fields, an HTML document, an HTTP status line. A summary that merely
    mentions an error stays a summary.

    Example:
        >>> transport_error_kind('{"error": {"type": "rate_limit_error"}}')
        'a JSON error body'
        >>> transport_error_kind("<html><head><title>502 Bad Gateway</title></html>")
        'an HTML page'
        >>> transport_error_kind("The build failed with error: E0425.") is None
        True
    """
    head = text.lstrip()[:200].lower()
    if head.startswith(("<!doctype html", "<html", "<?xml")):
        return "an HTML page"
    if _HTTP_STATUS_LINE.match(text.lstrip()):
        return "an HTTP status line"
    if head.startswith("{"):
        try:
            body = json.loads(text)
        except ValueError:
            return None
        if (
            isinstance(body, dict)
            and ("error" in body or "errors" in body)
            and set(body) <= _ERROR_KEYS
        ):
            return "a JSON error body"
    return None


def cap_note(
    text: str,
    token_counter: TokenCounterLike = None,
    *,
    max_tokens: int = TRANSCRIPT_SUMMARY_MAX_TOKENS,
) -> str:
    """``text`` cut (with a `` [...]`` mark) to ``max_tokens`` of ``token_counter``'s count.

    The cap is in the same tokens every budget is counted in, so the room a fold reserves
    for its note (:data:`TRANSCRIPT_SUMMARY_MAX_TOKENS`) is the room the note takes, with
    any counter and any script.

    Example:
        >>> cap_note("word " * 10, max_tokens=8)  # the cut mark counts too
        'word word [...]'
    """
    counter = resolve_token_counter(token_counter)
    if counter.count_text(text) <= max_tokens:
        return text
    # No token is shorter than a character, and none in practice is longer than 32: the
    # cut lies below max_tokens * 32 characters, which bounds the search on a huge answer.
    lo, hi = 0, min(len(text), max_tokens * 32)
    while lo < hi:  # invariant: text[:lo] + mark fits
        mid = (lo + hi + 1) // 2
        if counter.count_text(text[:mid].rstrip() + _CUT_MARK) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + _CUT_MARK


@dataclass(frozen=True, slots=True)
class _Answered:
    """What the summarizer returned, boxed.

    ``None`` from the guarded call then means the call itself failed (already logged); an
    answer of ``None`` is this box holding it.
    """

    raw: object
    """The summarizer's return value, as it came."""


def _finish(answered: _Answered | None, counter: TokenCounterLike) -> str | None:
    """The answer as a trimmed note capped at the output ceiling, or None (logged once)."""
    if answered is None:
        return None  # the call raised or timed out: call_guarded logged it
    text = _answer_text(answered.raw)
    return None if text is None else cap_note(text, counter)


def _as_runnable(summarizer: Summarizer) -> Runnable[list[BaseMessage], object]:
    if isinstance(summarizer, Runnable):
        return summarizer
    return RunnableLambda(summarizer)


def _async_given_to_sync(raw: object = None) -> TypeError:
    if inspect.iscoroutine(raw):
        raw.close()
    return TypeError(
        "summarizer: an async function was given to a sync call; use the async twin "
        "(abuild_working_transcript / apack_handoff / asummarize_transcript) or pass a "
        "sync function or a chat model."
    )


def _call_sync(summarizer: Summarizer, request: list[BaseMessage]) -> _Answered:
    # An object with an async __call__ is an async function too.
    call_method = type(summarizer).__call__ if not inspect.isfunction(summarizer) else None
    if not isinstance(summarizer, Runnable) and (
        inspect.iscoroutinefunction(summarizer) or inspect.iscoroutinefunction(call_method)
    ):
        raise _async_given_to_sync()
    raw = _as_runnable(summarizer).invoke(request, config=_config())
    if inspect.isawaitable(raw):
        raise _async_given_to_sync(raw)
    return _Answered(raw)


async def _call_async(summarizer: Summarizer, request: list[BaseMessage]) -> _Answered:
    # A sync function runs in an executor under ainvoke: it never blocks the event loop.
    raw = await _as_runnable(summarizer).ainvoke(request, config=_config())
    if inspect.isawaitable(raw):
        return _Answered(await raw)
    return _Answered(raw)


def summary_input_limit(summarizer: Summarizer) -> int:
    """The most one call to ``summarizer`` reads (:func:`summary_parts`' ``limit``).

    Three quarters of its window when its profile gives one (the prompt, the note it
    writes and a tokenizer unlike our counter's fit in the rest), else
    :data:`SUMMARY_INPUT_MAX_TOKENS`.

    Example:
        >>> from langchain_builderforce_memory.testing import ScriptedChatModel
        >>> summary_input_limit(ScriptedChatModel(profile={"max_input_tokens": 200_000}))
        150000
        >>> summary_input_limit(lambda prompt: "note")
        100000
    """
    inner: object = summarizer
    while isinstance(inner, RunnableBindingBase):
        inner = inner.bound
    window = profile_tokens(getattr(inner, "profile", None), "max_input_tokens")
    return max(1, window * 3 // 4) if window is not None else SUMMARY_INPUT_MAX_TOKENS


def _part_notes(
    parts: Sequence[list[BaseMessage]], prompt: str | None, counter: TokenCounterLike
) -> Generator[list[BaseMessage], _Answered | None, tuple[str | None, int]]:
    """The twins' shared steps: yields each request, is sent its answer, returns the note."""
    note: str | None = None
    for calls, part in enumerate(parts, start=1):
        request = summary_request(after_note(note, part), prompt=prompt)
        if request is None:
            return None, calls - 1
        note = _finish((yield request), counter)
        if note is None:
            return None, calls
    return note, len(parts)


def summarize_parts(
    summarizer: Summarizer,
    parts: Sequence[list[BaseMessage]],
    *,
    timeout: float | None = None,
    prompt: str | None = None,
    token_counter: TokenCounterLike = None,
) -> tuple[str | None, int]:
    """The note for ``parts`` (:func:`summary_parts`), one call a part, and the calls made.

    Each part is summarized after the note so far; a failed call fails the whole note
    (``None``), as one failed call does.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> summarize_parts(lambda p: "note", [[HumanMessage("a")], [HumanMessage("b")]])
        ('note', 2)
    """
    steps = _part_notes(parts, prompt, token_counter)
    try:
        request = next(steps)
        while True:
            call = functools.partial(_call_sync, summarizer, request)
            request = steps.send(call_guarded(call, what="summarizer", timeout=timeout))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def asummarize_parts(
    summarizer: Summarizer,
    parts: Sequence[list[BaseMessage]],
    *,
    timeout: float | None = None,
    prompt: str | None = None,
    token_counter: TokenCounterLike = None,
) -> tuple[str | None, int]:
    """Async twin of :func:`summarize_parts` (sync functions run in a thread)."""
    steps = _part_notes(parts, prompt, token_counter)
    try:
        request = next(steps)
        while True:
            call = functools.partial(_call_async, summarizer, request)
            request = steps.send(await acall_guarded(call, what="summarizer", timeout=timeout))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def summarize_transcript(
    summarizer: SummarizerLike,
    messages: Sequence[BaseMessage],
    *,
    timeout: float | None = None,
    prompt: str | None = None,
    token_counter: TokenCounterLike = None,
) -> str | None:
    """Compress ``messages`` into a memory note; ``None`` on failure (the caller falls back).

    ``None`` for nothing to summarize, an empty or non-text answer, an error or a
    timeout; each failure is logged. The note is capped at
    :data:`TRANSCRIPT_SUMMARY_MAX_TOKENS` of ``token_counter`` (default: the estimate).
    With a ``timeout`` each call runs in its own worker thread and is abandoned (not
    killed) when it outlives it. Over :data:`SUMMARY_INPUT_MAX_TOKENS`, ``messages`` are
    summarized in parts, one call each.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> summarize_transcript(lambda prompt: "  the note  ", [HumanMessage("x")])
        'the note'
    """
    chosen = resolve_summarizer(summarizer)
    if chosen is None:
        return None
    counter = resolve_token_counter(token_counter)
    parts = summary_parts(messages, counter, summary_input_limit(chosen))
    return summarize_parts(chosen, parts, timeout=timeout, prompt=prompt, token_counter=counter)[0]


async def asummarize_transcript(
    summarizer: SummarizerLike,
    messages: Sequence[BaseMessage],
    *,
    timeout: float | None = None,
    prompt: str | None = None,
    token_counter: TokenCounterLike = None,
) -> str | None:
    """Async twin of :func:`summarize_transcript` (sync functions run in a thread).

    Example:
        >>> import asyncio
        >>> from langchain_core.messages import HumanMessage
        >>> async def fake(prompt):
        ...     return "note"
        >>> asyncio.run(asummarize_transcript(fake, [HumanMessage("x")]))
        'note'
    """
    chosen = resolve_summarizer(summarizer)
    if chosen is None:
        return None
    counter = resolve_token_counter(token_counter)
    parts = summary_parts(messages, counter, summary_input_limit(chosen))
    note, _ = await asummarize_parts(
        chosen, parts, timeout=timeout, prompt=prompt, token_counter=counter
    )
    return note
