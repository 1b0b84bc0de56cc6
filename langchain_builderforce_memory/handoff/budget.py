"""The hand-off budget: how many tokens of transcript the NEXT model can take.

A request must fit the target model's context window together with the reply it is
allowed to write and the tool schemas it is sent, so the transcript's share is
``target_context_tokens - reserve_output_tokens - tools_tokens`` (seed ``handoffBudget``).

:func:`handoff_budget_for_model` reads those numbers from a LangChain chat model: its
``profile`` (``max_input_tokens``, ``max_output_tokens``; langchain-core 1.x) and the tool
schemas bound to it with ``bind_tools``. Profiles are the models.dev limits, where
``max_input_tokens`` is the whole context window, which the reply shares; so the reply's
ceiling is held back from it.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

from langchain_core.runnables import Runnable
from langchain_core.runnables.base import RunnableBindingBase
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from langchain_builderforce_memory.models import profile_tokens, resolve_model
from langchain_builderforce_memory.tokens import (
    TokenCounter,
    TokenCounterLike,
    resolve_token_counter,
)

__all__ = [
    "DEFAULT_RESERVE_FRACTION_DIVISOR",
    "SchemaTexts",
    "ToolLike",
    "handoff_budget",
    "handoff_budget_for_model",
    "share_of_model_budget",
    "tools_tokens",
]

ToolLike: TypeAlias = "Mapping[str, Any] | type[BaseModel] | Callable[..., Any] | BaseTool"
"""Anything ``bind_tools`` accepts: a schema dict, a pydantic model, a function, a tool."""


DEFAULT_RESERVE_FRACTION_DIVISOR = 4
"""The default reply reserve is at most ``window // 4``. Some profiles list the whole
window as the output ceiling (gpt-4: 8192 in, 8192 out); reserving all of it would leave
the transcript nothing, and a reply that long is not what a hand-off asks for."""


def _check_tokens(name: str, value: object, *, minimum: int) -> int:
    """``value`` as a token count ``>= minimum``, or a ValueError naming the argument."""
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name}: expected an int number of tokens, got {value!r} ({type(value).__name__})."
        raise TypeError(msg)
    if value < minimum:
        msg = f"{name}: must be >= {minimum} tokens, got {value}."
        raise ValueError(msg)
    return value


def handoff_budget(
    target_context_tokens: int, reserve_output_tokens: int, tools_tokens: int = 0
) -> int:
    """Tokens the transcript may use in the next model's request (never below 0).

    Args:
        target_context_tokens: The next model's context window, in tokens (> 0).
        reserve_output_tokens: Tokens held back for the next model's reply (>= 0).
        tools_tokens: Tokens the advertised tool schemas cost (>= 0).

    Raises:
        TypeError: a count that is not an int.
        ValueError: a window <= 0 or a negative reserve / tools count, naming it.

    Example:
        >>> handoff_budget(8_000, 1_000, 500)
        6500
        >>> handoff_budget(1_000, 1_000, 200)
        0
    """
    window = _check_tokens("target_context_tokens", target_context_tokens, minimum=1)
    reserve = _check_tokens("reserve_output_tokens", reserve_output_tokens, minimum=0)
    tools = _check_tokens("tools_tokens", tools_tokens, minimum=0)
    return max(0, window - reserve - tools)


def _tool_schema(tool: ToolLike) -> Mapping[str, Any]:
    # A dict is already what goes over the wire (bound tools are stored formatted, in the
    # provider's own shape): count it as it is rather than re-shape it.
    if isinstance(tool, Mapping):
        return tool
    return convert_to_openai_tool(tool)


class SchemaTexts:
    """The JSON each tool's schema is counted as, kept by whoever sends the tools every turn.

    ``convert_to_openai_tool`` builds a pydantic JSON schema: a fifth of a millisecond a
    tool, on every turn of every request. The middleware keeps one of these (not a
    module-level table); a kept text is checked against the tool's name, description and
    argument schema (what the schema is made from), and holds the tool, so its ``id`` is
    not reused.

    Example:
        >>> from langchain_core.tools import tool
        >>> @tool
        ... def ls(path: str) -> str:
        ...     "List a directory."
        ...     return path
        >>> texts = SchemaTexts()
        >>> texts.json(ls) is texts.json(ls)
        True
    """

    __slots__ = ("_counted", "_held", "_limit", "_lock")

    def __init__(self, *, limit: int = 256) -> None:
        """Texts of up to ``limit`` tools (the least recently used go first)."""
        self._held: OrderedDict[int, tuple[object, tuple[object, object, int], str]] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()
        # The counter the counts are by, and each text's count by it.
        self._counted: tuple[TokenCounter, dict[str, int]] | None = None

    def json(self, tool: ToolLike) -> str:
        """The JSON ``tool``'s schema is counted as."""
        if isinstance(tool, Mapping):
            return json.dumps(tool, ensure_ascii=False, sort_keys=True)
        made_of = (
            getattr(tool, "name", None),
            getattr(tool, "description", None),
            id(getattr(tool, "args_schema", None)),
        )
        with self._lock:
            hit = self._held.get(id(tool))
        if hit is not None and hit[0] is tool and hit[1] == made_of:
            return hit[2]
        text = json.dumps(_tool_schema(tool), ensure_ascii=False, sort_keys=True)
        with self._lock:
            self._held[id(tool)] = (tool, made_of, text)
            while len(self._held) > self._limit:
                self._held.popitem(last=False)
        return text

    def tokens(self, tool: ToolLike, counter: TokenCounter) -> int:
        """Tokens ``tool``'s schema costs by ``counter``: counted once, kept with its text.

        A counter is deterministic (:class:`~langchain_builderforce_memory.tokens.
        TokenCounter`), so a kept text counts the same every turn; another counter starts
        the counts over.

        Example:
            >>> from langchain_builderforce_memory.tokens import ApproximateTokenCounter
            >>> schema = {"type": "function", "function": {"name": "ls"}}
            >>> SchemaTexts().tokens(schema, ApproximateTokenCounter())
            20
        """
        text = self.json(tool)
        with self._lock:
            if self._counted is None or self._counted[0] is not counter:
                self._counted = (counter, {})
            counts = self._counted[1]
            kept = counts.get(text)
        if kept is not None:
            return kept
        n = counter.count_text(text)
        with self._lock:
            if len(counts) >= self._limit:
                counts.clear()
            counts[text] = n
        return n


def tools_tokens(
    tools: Sequence[ToolLike],
    *,
    token_counter: TokenCounterLike = None,
    schemas: SchemaTexts | None = None,
) -> int:
    """Tokens the tool schemas cost: each schema's JSON, counted as text.

    Dicts count as they are; other tool-likes as their OpenAI tool schema
    (``convert_to_openai_tool``). ``schemas``: texts kept from the last call (the
    middleware's), else each schema is built afresh.

    Example:
        >>> tools_tokens([{"type": "function", "function": {"name": "ls"}}])
        20
    """
    counter = resolve_token_counter(token_counter)
    texts = schemas if schemas is not None else SchemaTexts()
    return sum(texts.tokens(t, counter) for t in tools)


def _unwrap(model: Runnable[Any, Any]) -> tuple[Runnable[Any, Any], list[ToolLike] | None]:
    """The model under any ``bind`` / ``bind_tools`` wrappers, and the tools bound to it.

    The outermost binding that carries ``tools`` wins: that is what the request sends.
    """
    bound_tools: list[ToolLike] | None = None
    inner = model
    while isinstance(inner, RunnableBindingBase):
        found = inner.kwargs.get("tools")
        if bound_tools is None and isinstance(found, Sequence) and not isinstance(found, str):
            bound_tools = list(found)
        inner = inner.bound
    return inner, bound_tools


def share_of_model_budget(share: float, model: Runnable[Any, Any] | str, *, where: str) -> int:
    """``share`` of ``model``'s window, less its reply reserve and bound tool schemas.

    What a fractional ``max_tokens`` (``0.8``, ``("fraction", 0.8)``) resolves to.

    Raises:
        ValueError: the model's profile has no ``max_input_tokens``, naming the fix.

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> model = FakeListChatModel(responses=["ok"], profile={"max_input_tokens": 8_000})
        >>> share_of_model_budget(0.5, model, where="demo")
        4000
    """
    model = resolve_model(model, what="model")  # a client that cannot be built says so
    try:
        window = handoff_budget_for_model(model, reserve_output_tokens=0)
    except ValueError as exc:
        msg = (
            f"{where}: max_tokens is a share of the model's profile['max_input_tokens'], and "
            "the model has none. Fix: give it a profile (ChatModel(..., profile="
            "{'max_input_tokens': 128_000})), or pass max_tokens as a token count "
            "(max_tokens=64_000)."
        )
        raise ValueError(msg) from exc
    return max(1, handoff_budget_for_model(model, max_input_tokens=max(1, int(window * share))))


def handoff_budget_for_model(
    model: Runnable[Any, Any] | str,
    *,
    tools: Sequence[ToolLike] | None = None,
    reserve_output_tokens: int | None = None,
    max_input_tokens: int | None = None,
    token_counter: TokenCounterLike = None,
) -> int:
    """The hand-off budget for ``model``, read from its profile and its bound tools.

    Pass the result as ``target_context_tokens`` with ``reserve_output_tokens=0`` (it is
    already net of the reply and the tools).

    Args:
        model: A chat model (langchain-core 1.x models carry ``profile``), a
            ``"provider:model"`` string (``init_chat_model``), or a model wrapped by
            ``bind_tools`` / ``bind``: the profile is read from the model underneath and
            the bound tool schemas are counted.
        tools: The tool schemas the request will carry, when they are not bound to
            ``model`` (``create_agent`` binds at request time). Given, they replace the
            bound ones rather than add to them.
        reserve_output_tokens: Tokens held back for the reply. Default: the profile's
            ``max_output_tokens``, at most a quarter of the window (0 without one). Pass
            the ``max_tokens`` you actually request to reserve exactly that.
        max_input_tokens: The model's context window, when its profile lacks one (or to
            override it).
        token_counter: Counts the tool schemas (default: the approximate estimate).

    Raises:
        ValueError: no ``max_input_tokens`` in the profile and none passed.

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> small = FakeListChatModel(
        ...     responses=["ok"], profile={"max_input_tokens": 8_000, "max_output_tokens": 1_000}
        ... )
        >>> handoff_budget_for_model(small)
        7000
    """
    inner, bound_tools = _unwrap(resolve_model(model, what="model"))
    raw_profile = getattr(inner, "profile", None)
    profile: Mapping[str, object] = raw_profile if isinstance(raw_profile, Mapping) else {}
    window = (
        _check_tokens("max_input_tokens", max_input_tokens, minimum=1)
        if max_input_tokens is not None
        else profile_tokens(profile, "max_input_tokens")
    )
    if window is None:
        given = profile.get("max_input_tokens")
        what = "no " if given is None else f"an unusable ({given!r}, not a positive int) "
        msg = (
            f"handoff_budget_for_model: {type(inner).__name__} has {what}"
            "profile['max_input_tokens'], so its context window is unknown. Pass "
            "max_input_tokens=<the model's window in tokens>, or build the model with "
            "profile={'max_input_tokens': ..., 'max_output_tokens': ...}."
        )
        raise ValueError(msg)
    if reserve_output_tokens is None:
        ceiling = profile_tokens(profile, "max_output_tokens") or 0
        reserve_output_tokens = min(ceiling, window // DEFAULT_RESERVE_FRACTION_DIVISOR)
    schemas = tools if tools is not None else (bound_tools or [])
    return handoff_budget(
        window, reserve_output_tokens, tools_tokens(schemas, token_counter=token_counter)
    )
