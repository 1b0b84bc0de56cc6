"""Chat models named by string: ``"provider:model"``, as ``create_agent`` takes them.

Wherever this package takes a chat model (a ``summarizer``, the node's ``model``,
:func:`~langchain_builderforce_memory.handoff.handoff_budget_for_model`), a string such as
``"openai:gpt-4o-mini"`` or ``"anthropic:claude-haiku-4-5"`` is accepted too and turned
into the model by LangChain's ``init_chat_model``, the same resolver ``create_agent`` and
``SummarizationMiddleware`` use. The string is resolved once, when the argument is taken,
so a missing provider package is an error there, not a silent fallback on the first fold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = [
    "chat_model_from_string",
    "model_name",
    "profile_tokens",
    "resolve_model",
    "serving_models",
]

M = TypeVar("M")

_EXAMPLE = "e.g. 'openai:gpt-4o-mini' or 'anthropic:claude-haiku-4-5'"

_KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "azure_openai": "AZURE_OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google_genai": "GOOGLE_API_KEY",
    "mistralai": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "fireworks": "FIREWORKS_API_KEY",
    "together": "TOGETHER_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
    "cohere": "COHERE_API_KEY",
}
"""The environment variable each common provider's client reads its key from."""


def _construction_error(spec: str, what: str, provider: str | None, exc: Exception) -> str:
    """The message for a provider client that refused to be built (most often: no key)."""
    variable = _KEY_VARIABLES.get(provider or "")
    fix = (
        f"Set {variable} in the environment, or pass {what}= a chat model object built "
        "with its api_key"
        if variable
        else f"Give the provider its credentials, or pass {what}= a chat model object"
    )
    return (
        f"{what}={spec!r}: the provider's client could not be built "
        f"({type(exc).__name__}: {exc}). {fix}."
    )


def chat_model_from_string(spec: str, *, what: str) -> BaseChatModel:
    """The chat model named ``spec`` (``"provider:model"``), made by ``init_chat_model``.

    Args:
        spec: ``"provider:model"``; a bare model name works where LangChain can infer its
            provider (``"gpt-4o"``).
        what: The argument's name, for the error messages (``"summarizer"``).

    Raises:
        ImportError: ``langchain`` (for ``init_chat_model``) or the provider's package is
            not installed; the message names the package to install.
        ValueError: an unknown provider, a name whose provider cannot be inferred, or a
            provider client that cannot be built (a missing API key: the message names
            the option and the environment variable to set).

    Example:
        >>> chat_model_from_string("nosuch:model", what="summarizer")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: summarizer='nosuch:model': unknown model provider 'nosuch'...
    """
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as exc:
        msg = (
            f"{what}={spec!r}: a model string is resolved with LangChain's init_chat_model, "
            "and the `langchain` package is not installed. Install it with: pip install "
            '"langchain-builderforce-memory[agents]"; or pass a chat model object.'
        )
        raise ImportError(msg) from exc
    provider = spec.split(":", 1)[0] if ":" in spec else None
    try:
        return init_chat_model(spec)
    except ImportError as exc:
        # LangChain's message names the package: "... requires the langchain-openai
        # package. Please install it with `pip install langchain-openai`".
        msg = f"{what}={spec!r}: the provider's integration package is missing. {exc}"
        raise ImportError(msg) from exc
    except ValueError as exc:
        reason = (
            f"unknown model provider {provider!r}"
            if provider
            else "LangChain cannot tell its provider from the name"
        )
        msg = (
            f"{what}={spec!r}: {reason}. Pass 'provider:model' ({_EXAMPLE}) with a provider "
            f"init_chat_model supports, or a chat model object. (init_chat_model: {exc})"
        )
        raise ValueError(msg) from exc
    except Exception as exc:
        # Provider clients raise their own types at construction, most often for a missing
        # key (openai.OpenAIError); re-raised with the option named and the fix, not hidden.
        raise ValueError(_construction_error(spec, what, provider, exc)) from exc


def resolve_model(model: M | str, *, what: str) -> M | BaseChatModel:
    """``model`` itself, or the chat model a ``"provider:model"`` string names.

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> fake = FakeListChatModel(responses=["ok"])
        >>> resolve_model(fake, what="model") is fake
        True
    """
    if isinstance(model, str):
        return chat_model_from_string(model, what=what)
    return model


def model_name(model: object) -> str:
    """The name a chat model goes by: its ``model_name`` or ``model``, else its class's.

    Example:
        >>> from langchain_builderforce_memory.testing import ScriptedChatModel
        >>> model_name(ScriptedChatModel(script=["ok"], model_name="coder")), model_name(object())
        ('coder', 'object')
    """
    for attr in ("model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def serving_models(model: object) -> list[object]:
    """The chat models ``model`` may send a request through.

    Under ``bind`` / ``bind_tools`` / ``with_config`` / ``with_retry`` wrappers (LangChain's
    ``RunnableBindingBase``), and each model of ``with_fallbacks``, in order.

    Example:
        >>> from langchain_builderforce_memory.testing import ScriptedChatModel
        >>> a, b = ScriptedChatModel(script=[]), ScriptedChatModel(script=[])
        >>> serving_models(a.with_retry().with_fallbacks([b])) == [a, b]
        True
    """
    # From the defining modules: ``langchain_core.runnables`` resolves its names through a
    # lazy ``__getattr__`` that imports afresh on each lookup, and this runs every turn.
    from langchain_core.runnables.base import RunnableBindingBase
    from langchain_core.runnables.fallbacks import RunnableWithFallbacks

    if isinstance(model, RunnableWithFallbacks):
        return [m for r in (model.runnable, *model.fallbacks) for m in serving_models(r)]
    if isinstance(model, RunnableBindingBase):
        return serving_models(model.bound)
    return [model]


def profile_tokens(profile: object, key: str) -> int | None:
    """``profile[key]`` as a positive token count; ``None`` when absent or no such count.

    A model's ``profile`` (``max_input_tokens``, ``max_output_tokens``) is validated when
    the model is built, not when it is set later (``model.profile = {...}``): a whole float
    is taken then (``128e3``, written by hand), since read as absent the model's window went
    unfitted and its requests could run past it.

    Example:
        >>> profile_tokens({"max_input_tokens": 128e3}, "max_input_tokens")
        128000
        >>> profile_tokens({"max_input_tokens": "8k"}, "max_input_tokens") is None
        True
    """
    value = profile.get(key) if isinstance(profile, Mapping) else None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value
