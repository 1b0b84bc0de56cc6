"""Delegation to the provider's own context management (``native="auto"`` / ``"only"``).

Anthropic clears old tool uses (``clear_tool_uses_20250919``) and compacts the
conversation server-side (``compact_20260112``); OpenAI's Responses API compacts
(``context_management=[{"type": "compaction", ...}]``). With ``native="auto"``, a request
to such a model carries our fold expressed as the provider's compaction: triggered at our
budget (Anthropic's floor is 50k input tokens), its instructions our summary prompt with
the directive restated. Our clear tier stays client-side: it clears to a horizon it holds
while the view fits, while the provider's edit, re-applied to each request over its
trigger, clears every tool result but ``keep`` every time, so the cleared boundary moves
on every request. On the simulated provider (``benchmarks/native.md``) handing it the
clearing too kept a third to a half of the working set ours keeps, or cost more. When our
clear tier cannot fit the view, it is sent as it stands, up to the hard limit (the
model's window), and the provider compacts it. The default message ceiling (``"auto"``)
stands down wherever the provider compacts: it marks where our fold pays for itself, and
the provider compacts on tokens only. ``"only"`` hands over the clearing as well
(``keep`` as many tool uses as our clear tier leaves standing, ``clear_at_least`` ours)
and keeps only the window's hard limit client-side; every other model then gets the
window alone. Under ``"auto"`` every other model keeps the client-side tiers.

The edits are set per request as model settings (``ModelRequest.override``), never on
the user's model. The view is the record from its latest compaction block on
(:mod:`~langchain_builderforce_memory.native`).

A model the user already configured with ``context_management`` (on the model or in the
request's settings) is left as configured: our clear tier does not clear what the
provider will clear, and our fold does not run where the provider compacts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias
from urllib.parse import urlsplit

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from langchain_builderforce_memory.blocks import result_messages
from langchain_builderforce_memory.cache_point import cached_before_tail, learned_control
from langchain_builderforce_memory.calls_limit import within_calls_limit
from langchain_builderforce_memory.media_limit import within_message_media_limit
from langchain_builderforce_memory.models import serving_models
from langchain_builderforce_memory.tokens import TokenCounter
from langchain_builderforce_memory.transcript.summary import TRANSCRIPT_SUMMARY_PROMPT

__all__ = [
    "ANTHROPIC_BETAS",
    "ANTHROPIC_MIN_TRIGGER",
    "NATIVE_MODES",
    "Delegation",
    "NativeMode",
    "WireLimits",
    "caches_at_last_block",
    "check_native",
    "compacting_claude",
    "delegation_for",
    "kept_tool_uses",
    "limits_calls_per_message",
    "limits_media_per_message",
    "native_provider",
    "served_by_openai",
    "unchained",
    "user_edits",
]

NativeMode: TypeAlias = Literal["off", "auto", "only"]
"""How much of the context management a request hands to the provider."""

NATIVE_MODES: Final = ("off", "auto", "only")

ANTHROPIC_BETAS: Final = ("context-management-2025-06-27", "compact-2026-01-12")
"""The beta headers Anthropic's context editing and server-side compaction need."""

ANTHROPIC_MIN_TRIGGER: Final = 50_000
"""Anthropic's smallest compaction trigger, in input tokens."""

CLEAR_EDIT: Final = "clear_tool_uses_20250919"
COMPACT_EDIT: Final = "compact_20260112"

Provider: TypeAlias = Literal["anthropic", "openai"]


def check_native(value: object) -> None:
    """Raise a ``ValueError`` naming ``value`` and the fix unless it is a native mode."""
    if value not in NATIVE_MODES:
        msg = (
            f"native must be 'off', 'auto' or 'only'; got {value!r}. Fix: pass native='auto' "
            "to let Anthropic and OpenAI Responses models compact server-side, or omit it."
        )
        raise ValueError(msg)


_ANTHROPIC_CHAT: Final = "anthropic-chat"
"""``ChatAnthropic``'s ``_llm_type``: compaction and the request's cache breakpoint read it."""
_CLAUDE = re.compile(r"claude-(?:(opus|sonnet)-(\d+)-(\d+)|mythos)")


def compacting_claude(name: object) -> bool:
    """Whether the Claude model ``name`` takes server-side compaction.

    Anthropic lists Claude Mythos Preview, Opus 4.6 and 4.7 and Sonnet 4.6; an Opus or
    Sonnet from 4.6 on is taken to, any other is not (a request would be refused).

    Example:
        >>> compacting_claude("claude-sonnet-4-6"), compacting_claude("claude-sonnet-4-5")
        (True, False)
    """
    found = _CLAUDE.match(name) if isinstance(name, str) else None
    if found is None:
        return False
    if found.group(1) is None:
        return True
    return (int(found.group(2)), int(found.group(3))) >= (4, 6)


def native_provider(model: object) -> Provider | None:
    """Whose native context management ``model`` can take: Anthropic, OpenAI Responses, none.

    Read from the chat model's ``_llm_type`` (LangChain's own name for the integration):
    a Claude model that takes compaction (:func:`compacting_claude`), or an OpenAI or Azure
    OpenAI model on the Responses API (``use_responses_api=True``: Chat Completions has no
    compaction). Whether we may also *send* it compaction is :func:`served_by_openai`.

    Example:
        >>> from langchain_core.language_models import GenericFakeChatModel
        >>> native_provider(GenericFakeChatModel(messages=iter([])))
        >>> native_provider("not a model")
    """
    kind = getattr(model, "_llm_type", None)
    if kind == _ANTHROPIC_CHAT:
        name = getattr(model, "model", None) or getattr(model, "model_name", None)
        return "anthropic" if compacting_claude(name) else None
    responses = getattr(model, "use_responses_api", None) is True
    if kind in ("openai-chat", "azure-openai-chat") and responses:
        return "openai"
    return None


def limits_media_per_message(model: object) -> bool:
    """Whether ``model``'s API limits images and documents per message (Bedrock Converse).

    Read from the chat model's ``_llm_type``: langchain-aws's ``ChatBedrockConverse``, or
    its ``ChatBedrock`` sending through the Converse API (``beta_use_converse_api=True``).
    ``ChatBedrock`` on InvokeModel sends Anthropic's own request, whose media limits are
    the request's. See
    :func:`~langchain_builderforce_memory.media_limit.within_message_media_limit`.

    Example:
        >>> from langchain_aws import ChatBedrockConverse
        >>> limits_media_per_message(
        ...     ChatBedrockConverse(model="anthropic.claude-sonnet-4-5", region_name="us-east-1")
        ... )
        True
        >>> limits_media_per_message("not a model")
        False
    """
    kind = getattr(model, "_llm_type", None)
    if kind == "amazon_bedrock_chat":
        return getattr(model, "beta_use_converse_api", None) is True
    return kind == "amazon_bedrock_converse_chat"


def caches_at_last_block(model: object) -> bool:
    """Whether ``model``'s API puts a request's ``cache_control`` on its last block alone.

    Anthropic's through ``ChatAnthropic`` (``AnthropicPromptCachingMiddleware``), and
    Claude on Bedrock's InvokeModel through langchain-aws's ``ChatBedrock``
    (``BedrockPromptCachingMiddleware``): the last block is our brief, whose entry no later
    request reads. ``ChatBedrockConverse`` also marks the message before the last, which
    the next request does read back; it marks it only in a request that carries no mark
    of its own, so it gets none from us.

    Example:
        >>> from langchain_aws import ChatBedrock, ChatBedrockConverse
        >>> claude = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
        >>> caches_at_last_block(ChatBedrock(model_id=claude, region_name="us-east-1"))
        True
        >>> caches_at_last_block(ChatBedrockConverse(model=claude, region_name="us-east-1"))
        False
    """
    kind = getattr(model, "_llm_type", None)
    if kind == _ANTHROPIC_CHAT:
        return True
    if kind != "amazon_bedrock_chat" or getattr(model, "beta_use_converse_api", None) is True:
        return False
    provider = getattr(model, "provider", None)
    if isinstance(provider, str) and provider:
        return provider.lower() == "anthropic"
    model_id = getattr(model, "model_id", None)
    # "anthropic.claude-...", or a cross-region profile: "us.anthropic.claude-..."
    parts = model_id.lower().split(".", 2)[:2] if isinstance(model_id, str) else []
    return "anthropic" in parts


def limits_calls_per_message(model: object) -> bool:
    """Whether ``model``'s API refuses an assistant message of more than 128 tool calls.

    OpenAI's and Azure OpenAI's (``_llm_type``), Chat Completions and Responses alike. See
    :func:`~langchain_builderforce_memory.calls_limit.within_calls_limit`.

    Example:
        >>> from langchain_openai import ChatOpenAI
        >>> limits_calls_per_message(ChatOpenAI(model="gpt-5", api_key="k"))
        True
        >>> limits_calls_per_message("not a model")
        False
    """
    return getattr(model, "_llm_type", None) in ("openai-chat", "azure-openai-chat")


@dataclass(frozen=True, slots=True)
class WireLimits:
    """What the serving model's API refuses or needs beyond the token budget, and brought within.

    Read once from the model and the request's settings (:meth:`of`); every adapter
    applies it to the view it sends (:meth:`applied`), last, so one declaration serves the
    agents and the history.

    Example:
        >>> from langchain_openai import ChatOpenAI
        >>> WireLimits.of(ChatOpenAI(model="gpt-5", api_key="k"))
        WireLimits(per_message_media=False, split_calls=True, cache_point=None)
    """

    per_message_media: bool = False
    """The API limits media per message (Bedrock's Converse): the view's runs of tool
    results and user turns are brought within them."""
    split_calls: bool = False
    """The API refuses an assistant message of more than 128 calls (OpenAI): such a
    message is sent in parts, each followed by its results."""
    cache_point: Mapping[str, str] | None = None
    """The request asks Claude to cache (``cache_control`` in its settings, as
    ``AnthropicPromptCachingMiddleware`` and ``BedrockPromptCachingMiddleware`` set it) on
    an API that marks only the last block (:func:`caches_at_last_block`): the last stable
    message before the volatile tail carries this breakpoint too
    (:mod:`~langchain_builderforce_memory.cache_point`: the automatic one lands on the
    tail, whose entry is never read)."""

    @classmethod
    def of(
        cls,
        model: object,
        settings: Mapping[str, object] | None = None,
        request: tuple[Sequence[BaseMessage], BaseMessage | None, Sequence[object]] | None = None,
    ) -> WireLimits:
        """The limits of ``model``'s API (none for a model not read as one that has them).

        Read through ``bind`` / ``with_config`` / ``with_retry`` wrappers, and over every
        model of ``with_fallbacks`` (any of them may serve the request; each rule is valid
        for every provider, so one that needs it applies it). ``settings``: the request's
        model settings. ``request``: its record, system prompt and tools; when the
        settings ask for no cache, the provider's last answer may say a request was given
        one after us (:func:`~langchain_builderforce_memory.cache_point.learned_control`).
        """
        models = serving_models(model)
        wanted = (settings or {}).get("cache_control")
        claude = any(map(caches_at_last_block, models))
        if wanted is not None or not claude or request is None:
            control = _control(wanted) if claude else None
        else:
            control = learned_control(*request)
        return cls(
            per_message_media=any(map(limits_media_per_message, models)),
            split_calls=any(map(limits_calls_per_message, models)),
            cache_point=control,
        )

    def applied(self, view: list[BaseMessage]) -> list[BaseMessage]:
        """``view`` within these limits (``view`` itself when it already is, or none apply)."""
        view = within_calls_limit(view) if self.split_calls else view
        view = within_message_media_limit(view) if self.per_message_media else view
        return cached_before_tail(view, self.cache_point) if self.cache_point else view


def _control(wanted: object) -> dict[str, str] | None:
    """A ``cache_control`` setting as a block's breakpoint (``None``: none, or not one)."""
    if not isinstance(wanted, Mapping) or wanted.get("type") != "ephemeral":
        return None
    return {str(k): str(v) for k, v in wanted.items()}


def served_by_openai(model: object) -> bool:
    """Whether an OpenAI-shaped ``model`` is served by OpenAI or Azure OpenAI.

    Compaction is OpenAI's own: a ``ChatOpenAI`` pointed at another ``base_url`` (vLLM,
    Ollama, a gateway) may refuse the ``context_management`` field or drop it, so we never
    add it there; the client-side tiers run instead. Read from the endpoint the client
    will call (its ``root_client.base_url``, which also reflects ``OPENAI_BASE_URL``), else
    from ``openai_api_base``.

    Example:
        >>> from langchain_openai import ChatOpenAI
        >>> served_by_openai(ChatOpenAI(model="gpt-5", api_key="k"))
        True
        >>> served_by_openai(ChatOpenAI(model="m", api_key="k", base_url="http://localhost:8000/v1"))
        False
    """
    if getattr(model, "_llm_type", None) == "azure-openai-chat":
        return True
    client_url = getattr(getattr(model, "root_client", None), "base_url", None)
    url = str(client_url) if client_url is not None else getattr(model, "openai_api_base", None)
    if not isinstance(url, str):
        return True  # no endpoint set anywhere: the SDK's default, api.openai.com
    return urlsplit(url).hostname == "api.openai.com"


@dataclass(frozen=True, slots=True)
class Delegation:
    """What one request hands to the provider, and what stays client-side."""

    provider: Provider | None
    """Whose context management serves the request (``None``: ``"only"`` on a model
    without any: the window alone runs client-side)."""
    settings: Mapping[str, Any]
    """Model settings to merge into the request's (empty: nothing to add)."""
    clears: bool
    """The provider clears old tool results: our clear tier stands down."""
    compacts: bool
    """The provider compacts: our fold stands down."""
    limit: int | None = None
    """The hard limit the view may grow to so the provider sees its trigger crossed (our
    tokens; set per request from the model's window)."""


def kept_tool_uses(
    record: Sequence[BaseMessage], room: int, counter: TokenCounter, *, least: int = 1
) -> int:
    """How many of the newest tool results fit in ``room`` tokens (at least ``least``).

    Our clear tier keeps the working set (the latest outputs, up to twice the restore
    budget) verbatim; the provider's edit keeps a count of tool uses: the count that
    holds as many tokens.

    Example:
        >>> from langchain_core.messages import ToolMessage
        >>> from langchain_builderforce_memory.tokens import ApproximateTokenCounter
        >>> record = [ToolMessage("x" * 4_000, tool_call_id=str(i)) for i in range(5)]
        >>> kept_tool_uses(record, 2_000, ApproximateTokenCounter())  # 965 tokens each
        2
    """
    kept = used = 0
    # A ToolMessage is one tool use; so is each tool_result block of a native user turn.
    for message in reversed(record):
        for answer in reversed(result_messages(message)):
            used += counter.count_message(answer)
            if used > room:
                return max(least, kept)
            kept += 1
    return max(least, kept)


def user_edits(model: object, settings: Mapping[str, Any] | None) -> object:
    """The ``context_management`` the user configured: the request's, else the model's."""
    settings = settings or {}
    own = settings.get("context_management")
    return own if own is not None else getattr(model, "context_management", None)


def _edit_types(edits: object) -> set[str]:
    """The edit types a ``context_management`` value asks for (Anthropic's or OpenAI's)."""
    items = edits.get("edits") if isinstance(edits, Mapping) else edits
    if not isinstance(items, list | tuple):
        return set()
    return {str(e.get("type")) for e in items if isinstance(e, Mapping)}


def _instructions(directive: str | None) -> str:
    if not directive:
        return TRANSCRIPT_SUMMARY_PROMPT
    return (
        f"{TRANSCRIPT_SUMMARY_PROMPT}\nThe user's current instruction, to restate verbatim "
        f"at the top of the summary:\n{directive}"
    )


def _anthropic_settings(
    model: object,
    settings: Mapping[str, Any],
    *,
    trigger: int,
    keep: int,
    clear_at_least: int,
    directive: str | None,
    clears: bool,
) -> dict[str, Any]:
    clear = {
        "type": CLEAR_EDIT,
        "trigger": {"type": "input_tokens", "value": trigger},
        "keep": {"type": "tool_uses", "value": keep},
        "clear_at_least": {"type": "input_tokens", "value": clear_at_least},
    }
    compact = {
        "type": COMPACT_EDIT,
        "trigger": {"type": "input_tokens", "value": trigger},
        "instructions": _instructions(directive),
    }
    edits = [clear, compact] if clears else [compact]
    betas = list(settings.get("betas") or getattr(model, "betas", None) or [])
    betas += [b for b in ANTHROPIC_BETAS if b not in betas]
    return {"context_management": {"edits": edits}, "betas": betas}


def delegation_for(
    mode: NativeMode,
    model: object,
    settings: Mapping[str, Any] | None,
    *,
    budget: int,
    keep: int,
    clear_at_least: int,
    directive: str | None,
) -> Delegation | None:
    """This request's delegation under ``mode``; ``None`` when the client-side tiers run.

    ``budget``: the request budget in the provider's tokens (the compaction trigger).

    Example:
        >>> from langchain_core.language_models import GenericFakeChatModel
        >>> fake = GenericFakeChatModel(messages=iter([]))
        >>> delegation_for("auto", fake, {}, budget=64_000, keep=1, clear_at_least=8_000,
        ...                directive=None) is None
        True
        >>> delegation_for("only", fake, {}, budget=64_000, keep=1, clear_at_least=8_000,
        ...                directive=None).compacts
        True
    """
    settings = settings or {}
    provider = native_provider(model)
    configured = _edit_types(user_edits(model, settings)) if provider is not None else set()
    if configured:
        # The user's own edits stand; ours stand down where the provider acts.
        clears = CLEAR_EDIT in configured
        compacts = COMPACT_EDIT in configured or "compaction" in configured
        return Delegation(provider, {}, clears, compacts) if clears or compacts else None
    if provider == "openai" and not served_by_openai(model):
        provider = None  # the user's own edits were honoured above; we send none here
    if mode == "off" or (provider is None and mode == "auto"):
        return None
    if provider == "anthropic":
        new = _anthropic_settings(
            model,
            settings,
            trigger=max(budget, ANTHROPIC_MIN_TRIGGER),
            keep=keep,
            clear_at_least=clear_at_least,
            directive=directive,
            clears=mode == "only",
        )
        return Delegation(provider, new, clears=mode == "only", compacts=True)
    if provider == "openai":
        new = {"context_management": [{"type": "compaction", "compact_threshold": budget}]}
        return Delegation(provider, new, clears=False, compacts=True)
    return Delegation(None, {}, clears=True, compacts=True)


def _response_id(message: BaseMessage) -> bool:
    """Whether ``message`` is an OpenAI response a request can be chained to by its id."""
    rid = message.response_metadata.get("id") if isinstance(message, AIMessage) else None
    return isinstance(rid, str) and rid.startswith("resp_")


def _chain_intact(view: Sequence[BaseMessage], record: Sequence[BaseMessage]) -> bool:
    """Whether ``view`` holds ``record`` as it is up to the latest response it chains to.

    Then the responses OpenAI stores are the view's own head, and a chained request reads
    what the view says.
    """
    last = next((i for i in range(len(view) - 1, -1, -1) if _response_id(view[i])), -1)
    if last < 0:
        return True
    head = [m for m in view[: last + 1] if not isinstance(m, SystemMessage)]
    stored = [m for m in record if not isinstance(m, SystemMessage)][: len(head)]
    return len(stored) == len(head) and all(a is b for a, b in zip(head, stored, strict=True))


def unchained(
    view: Sequence[BaseMessage], record: Sequence[BaseMessage], model: object
) -> list[BaseMessage]:
    """``view`` as ``model`` must be handed it for the provider to read the view itself.

    ``ChatOpenAI(use_previous_response_id=True)`` sends only the messages after the latest
    assistant message with a Responses id (``resp_...``), and OpenAI reads the whole
    stored chain of responses before them: the record, past the budget, not the view.
    While the view holds the record as it is up to that response, the chain is the view
    and stays; once the view departs from it (a window, a clear, a fold), its assistant
    messages go without their ids, so langchain-openai sends the view whole (OpenAI
    bills a chained request's stored input as input too). Any other model: ``view``.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> class Chained:
        ...     use_previous_response_id = True
        >>> reply = AIMessage("ok", response_metadata={"id": "resp_1"})
        >>> record = [HumanMessage("a"), reply, HumanMessage("b")]
        >>> unchained(record, record, Chained()) == record
        True
        >>> [m.response_metadata for m in unchained(record[1:], record, Chained())]
        [{}, {}]
    """
    if getattr(model, "use_previous_response_id", None) is not True:
        return list(view)
    if _chain_intact(view, record):
        return list(view)
    return [
        m.model_copy(
            update={
                "response_metadata": {k: v for k, v in m.response_metadata.items() if k != "id"}
            }
        )
        if _response_id(m)
        else m
        for m in view
    ]
