"""``native="auto"`` / ``"only"``: the provider's own context management, per request (issue 24).

The requests are built by the providers' own payload builders and checked against the
documented shapes:

* Anthropic context editing: https://docs.claude.com/en/docs/build-with-claude/context-editing
  (``clear_tool_uses_20250919``: ``trigger``, ``keep``, ``clear_at_least``; beta
  ``context-management-2025-06-27``);
* Anthropic compaction: https://docs.claude.com/en/docs/build-with-claude/compaction
  (``compact_20260112``: ``trigger`` of at least 50,000 input tokens, ``instructions``;
  beta ``compact-2026-01-12``);
* OpenAI compaction: https://developers.openai.com/api/docs/guides/compaction
  (``context_management=[{"type": "compaction", "compact_threshold": N}]``, Responses API).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_anthropic import ChatAnthropic
from langchain_core.language_models import BaseChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_openai import AzureChatOpenAI, ChatOpenAI

from langchain_builderforce_memory.agents.middleware import BuilderforceMemoryMiddleware
from langchain_builderforce_memory.agents.native import ANTHROPIC_BETAS
from langchain_builderforce_memory.agents.node import WorkingTranscriptNode
from langchain_builderforce_memory.agents.policy import MemoryPolicy
from langchain_builderforce_memory.agents.sizing import WIDE
from langchain_builderforce_memory.messages import is_stamped
from langchain_builderforce_memory.native import is_provider_compaction
from langchain_builderforce_memory.tokens import ApproximateTokenCounter, count_tokens
from langchain_builderforce_memory.transcript.results import CLEARED_KIND
from langchain_builderforce_memory.validity import request_problems

from .helpers import ScriptedSummarizer, anthropic_native, examples, read_loop
from .test_native import compacted_records

COUNTER = ApproximateTokenCounter()


def is_cleared(message: BaseMessage) -> bool:
    return is_stamped(message, CLEARED_KIND)


DIRECTIVE = "Port the parser to Rust."


def anthropic() -> ChatAnthropic:
    return ChatAnthropic(model="claude-sonnet-4-6", api_key="offline")  # type: ignore[call-arg]


def openai_responses() -> ChatOpenAI:
    return ChatOpenAI(model="gpt-5", api_key="offline", use_responses_api=True)  # type: ignore[arg-type]


def sent(
    model: BaseChatModel,
    record: list[BaseMessage],
    *,
    settings: dict[str, Any] | None = None,
    summarizer: ScriptedSummarizer | None = None,
    **options: Any,
) -> ModelRequest[Any]:
    """The request the middleware hands the model for one turn over ``record``."""
    middleware = BuilderforceMemoryMiddleware(
        summarizer, token_counter=COUNTER, working_memory=False, **options
    )
    seen: list[ModelRequest[Any]] = []

    def handler(request: ModelRequest[Any]) -> ModelResponse[Any]:
        seen.append(request)
        return ModelResponse(result=[AIMessage("ok")])

    request = ModelRequest(
        model=model,
        messages=list(record),  # type: ignore[arg-type]
        state={"messages": record},  # type: ignore[typeddict-item]
        model_settings=dict(settings or {}),
    )
    middleware.wrap_model_call(request, handler)
    return seen[0]


def anthropic_payload(request: ModelRequest[Any]) -> dict[str, Any]:
    """langchain-anthropic's own payload for ``request`` (its builder is private: one call)."""
    model = request.model
    assert isinstance(model, ChatAnthropic)
    return model._get_request_payload(request.messages, **request.model_settings)


def openai_payload(request: ModelRequest[Any]) -> dict[str, Any]:
    """langchain-openai's own payload for ``request`` (its builder is private: one call)."""
    model = request.model
    assert isinstance(model, ChatOpenAI)
    return model._get_request_payload(request.messages, **request.model_settings)


@pytest.mark.parametrize(("budget", "trigger"), [(64_000, 64_000), (20_000, 50_000)])
def test_auto_puts_anthropics_compaction_in_the_payload(budget: int, trigger: int) -> None:
    request = sent(anthropic(), read_loop(4, 500), native="auto", max_tokens=budget)
    payload = anthropic_payload(request)
    (compact,) = payload["context_management"]["edits"]  # our clear tier stays ours
    assert compact["type"] == "compact_20260112"
    assert compact["trigger"] == {"type": "input_tokens", "value": trigger}
    assert DIRECTIVE in compact["instructions"]
    assert set(ANTHROPIC_BETAS) <= set(payload["betas"])


def test_only_puts_anthropics_clearing_in_the_payload_too() -> None:
    request = sent(anthropic(), read_loop(4, 500), native="only", max_tokens=64_000)
    clear, compact = anthropic_payload(request)["context_management"]["edits"]
    assert clear == {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": 64_000},
        # The four reads (~500 tokens each) fit in what our clear tier keeps: all kept.
        "keep": {"type": "tool_uses", "value": 4},
        "clear_at_least": {"type": "input_tokens", "value": 32_000},
    }
    assert compact["type"] == "compact_20260112"


def test_auto_keeps_the_users_own_betas_and_leaves_the_model_alone() -> None:
    model = ChatAnthropic(  # type: ignore[call-arg]
        model="claude-sonnet-4-6", api_key="offline", betas=["files-api-2025-04-14"]
    )
    request = sent(model, read_loop(2, 100), native="auto")
    assert anthropic_payload(request)["betas"][0] == "files-api-2025-04-14"
    assert model.context_management is None
    assert model.betas == ["files-api-2025-04-14"]


def test_auto_puts_openais_compaction_in_a_responses_payload() -> None:
    request = sent(openai_responses(), read_loop(2, 100), native="auto", max_tokens=64_000)
    payload = openai_payload(request)
    assert payload["context_management"] == [{"type": "compaction", "compact_threshold": 64_000}]


@pytest.mark.parametrize(
    "model",
    [
        ChatOpenAI(model="gpt-4o", api_key="offline"),  # type: ignore[arg-type]
        GenericFakeChatModel(messages=iter([])),
        ChatOpenAI(  # type: ignore[call-arg]
            model="qwen3", api_key="offline", use_responses_api=True, base_url="http://vllm:8000/v1"
        ),
    ],
    ids=["chat completions", "generic fake", "responses api off openai"],
)
@pytest.mark.parametrize("native", ["auto", "off"])
def test_models_without_native_compaction_are_sent_as_before(
    model: BaseChatModel, native: str
) -> None:
    request = sent(model, read_loop(2, 100), native=native, settings={"temperature": 0})
    assert request.model_settings == {"temperature": 0}


def azure_responses() -> AzureChatOpenAI:
    return AzureChatOpenAI(  # type: ignore[call-arg]
        azure_deployment="gpt-5",
        azure_endpoint="https://example.openai.azure.com",
        api_key="offline",
        api_version="2025-04-01-preview",
        use_responses_api=True,
    )


def test_azure_openai_on_the_responses_api_is_delegated_like_openai() -> None:
    request = sent(azure_responses(), read_loop(2, 100), native="auto", max_tokens=64_000)
    assert request.model_settings["context_management"] == [
        {"type": "compaction", "compact_threshold": 64_000}
    ]


def test_only_on_a_responses_endpoint_off_openai_keeps_the_window_and_sends_no_edits() -> None:
    model = ChatOpenAI(  # type: ignore[call-arg]
        model="qwen3", api_key="offline", use_responses_api=True, base_url="http://vllm:8000/v1"
    )
    request = sent(model, read_loop(40, 2_000), native="only", max_tokens=16_000)
    assert "context_management" not in openai_payload(request)
    assert count_tokens(request.messages, COUNTER) <= 16_000
    assert request_problems(request.messages) == []


def chat(turns: int, size: int) -> list[BaseMessage]:
    """A directive, then ``turns`` long answers: nothing the clear tier can clear."""
    answers = [AIMessage(f"{i}: " + "y" * (4 * size), id=f"a{i}") for i in range(turns)]
    return [HumanMessage(DIRECTIVE, id="u0"), *answers]


def test_auto_lets_the_provider_compact_what_our_clear_tier_cannot_fit() -> None:
    record = chat(40, 3_000)  # ~120k tokens: over the budget, under Claude's window
    summarizer = ScriptedSummarizer("our note")
    request = sent(anthropic(), record, native="auto", max_tokens=64_000, summarizer=summarizer)
    assert summarizer.calls == []  # the provider compacts instead
    shown = count_tokens(request.messages, COUNTER)
    # Over the trigger (the budget), within WIDE budgets: the provider compacts it.
    assert 64_000 < shown <= WIDE * 64_000
    assert request_problems(request.messages) == []
    off = ScriptedSummarizer("n")
    sent(anthropic(), record, max_tokens=64_000, summarizer=off)
    assert off.calls  # our fold (in two parts: ~120k tokens to read)


@pytest.mark.parametrize("native", ["auto", "only"])
def test_the_default_ceiling_defers_to_the_providers_token_trigger(native: str) -> None:
    # 200 short answers, far under the budget: past the "auto" ceiling (128 messages) our
    # fold would run, but where the provider compacts, and it compacts on tokens only, the
    # window would drop messages that nothing summarizes.
    record = chat(200, 20)
    summarizer = ScriptedSummarizer("our note")
    request = sent(anthropic(), record, native=native, max_tokens=64_000, summarizer=summarizer)
    assert [m.content for m in request.messages] == [m.content for m in record]
    assert summarizer.calls == []
    # A ceiling the user set still holds.
    capped = sent(anthropic(), record, native=native, max_tokens=64_000, max_messages=128)
    assert len(capped.messages) <= 129


def test_auto_keeps_our_clear_tier() -> None:
    record = read_loop(40, 3_000)
    summarizer = ScriptedSummarizer("our note")
    request = sent(anthropic(), record, native="auto", max_tokens=64_000, summarizer=summarizer)
    assert any(is_cleared(m) for m in request.messages)
    assert summarizer.calls == []


def test_only_hands_the_clearing_over_too() -> None:
    record = read_loop(40, 3_000)
    request = sent(anthropic(), record, native="only", max_tokens=64_000)
    assert request.messages == record


def test_only_windows_a_model_without_native_compaction() -> None:
    record = read_loop(40, 3_000)
    summarizer = ScriptedSummarizer("our note")
    model = GenericFakeChatModel(messages=iter([]))
    request = sent(model, record, native="only", max_tokens=32_000, summarizer=summarizer)
    assert summarizer.calls == []
    assert not any(is_cleared(m) for m in request.messages)
    assert request_problems(request.messages) == []
    assert len(request.messages) < len(record)


def test_the_users_own_clearing_edit_stands_our_clear_tier_down() -> None:
    edits = {"edits": [{"type": "clear_tool_uses_20250919"}]}
    model = ChatAnthropic(  # type: ignore[call-arg]
        model="claude-sonnet-4-6", api_key="offline", context_management=edits
    )
    record = read_loop(40, 3_000)
    mine = sent(model, record, max_tokens=64_000, summarizer=ScriptedSummarizer("n"))
    assert not any(is_cleared(m) for m in mine.messages)
    assert anthropic_payload(mine)["context_management"] == edits
    theirs = sent(anthropic(), record, max_tokens=64_000, summarizer=ScriptedSummarizer("n"))
    assert any(is_cleared(m) for m in theirs.messages)


@pytest.mark.parametrize("native_shape", [False, True], ids=["tool_messages", "anthropic_native"])
def test_the_provider_keeps_as_many_tool_uses_as_our_clear_tier_keeps_tokens(
    native_shape: bool,
) -> None:
    record = read_loop(40, 3_000)
    record = anthropic_native(record) if native_shape else record
    request = sent(anthropic(), record, native="only", max_tokens=64_000)
    clear = anthropic_payload(request)["context_management"]["edits"][0]
    # What our clear tier leaves standing, the budget less clear_at_least (32,000), holds
    # eleven of these reads (2,888 tokens each by the approximate count).
    assert clear["keep"] == {"type": "tool_uses", "value": 11}


def _chained_loop(rounds: int) -> list[BaseMessage]:
    """A read loop as a Responses ``ChatOpenAI`` records it: each answer with its id."""
    return [
        m.model_copy(update={"response_metadata": {"id": f"resp_{m.id}"}})
        if isinstance(m, AIMessage)
        else m
        for m in read_loop(rounds)
    ]


@pytest.mark.parametrize(("rounds", "chained"), [(3, True), (40, False)])
def test_a_model_chaining_its_responses_is_sent_the_view_not_the_stored_chain(
    rounds: int, chained: bool
) -> None:
    # ChatOpenAI(use_previous_response_id=True) sends only the messages after the latest
    # response and chains the request to it: OpenAI reads the whole stored record, 120k
    # tokens here, whatever the view. While the view is the record, the chain stays.
    model = ChatOpenAI(  # type: ignore[call-arg]
        model="gpt-5", api_key="offline", use_responses_api=True, use_previous_response_id=True
    )
    record = _chained_loop(rounds)
    summarizer = ScriptedSummarizer("our note")
    payload = openai_payload(sent(model, record, max_tokens=32_000, summarizer=summarizer))
    assert ("previous_response_id" in payload) is chained
    if not chained:  # the view goes whole: the directive, the cleared steps, the latest
        assert DIRECTIVE in str(payload["input"])
        assert "cleared from this view" in str(payload["input"])
        assert len(payload["input"]) > 40
    node = WorkingTranscriptNode(summarizer, model=model, max_tokens=32_000)
    view = node.invoke({"messages": record})["llm_input_messages"]
    assert ("previous_response_id" in model._get_request_payload(view)) is chained
    assert record == _chained_loop(rounds)  # the record's messages keep their ids


def test_a_bad_native_mode_names_the_value_and_the_fix() -> None:
    with pytest.raises(ValueError, match=r"native must be 'off', 'auto' or 'only'; got 'on'"):
        MemoryPolicy(native="on")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("native", "said"),
    [
        ("auto", r"native='auto' needs BuilderforceMemoryMiddleware"),
        ("yes", r"native must be 'off', 'auto' or 'only'; got 'yes'"),  # not "needs"
    ],
)
def test_the_node_says_native_needs_the_middleware(native: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        WorkingTranscriptNode(native=native)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("model", "said"),
    [
        (
            None,
            r"and no model was given\. Fix: pass the model the node serves as model= \(its profile",
        ),
        ("scripted", r"and scripted has none\. Fix: give the model a profile"),
    ],
)
def test_a_share_of_the_window_without_a_window_names_what_is_missing(
    model: str | None, said: str
) -> None:
    from langchain_builderforce_memory.testing import ScriptedChatModel

    served = ScriptedChatModel(script=["ok"]) if model else None
    with pytest.raises(ValueError, match=said):
        WorkingTranscriptNode(max_tokens=0.8, model=served)


def test_a_run_compacted_by_anthropic_is_handed_to_an_openai_fallback_in_plain_text() -> None:
    from .provider_shapes import openai_chat_wire
    from .test_native import SUMMARY, compacted_record

    record = compacted_record(after=3)
    fallback = ChatOpenAI(model="gpt-4o", api_key="offline")  # type: ignore[arg-type]
    request = sent(fallback, record, max_tokens=64_000)
    assert not any(is_provider_compaction(m) for m in request.messages)
    assert any(SUMMARY in m.text for m in request.messages)  # the summary, as text
    assert openai_chat_wire(request.messages) == []
    assert request_problems(request.messages) == []
    same = sent(anthropic(), record, max_tokens=64_000)
    assert any(is_provider_compaction(m) for m in same.messages)


def test_an_openai_compaction_item_is_left_out_for_another_model() -> None:
    from .provider_shapes import anthropic_wire
    from .test_native import _openai

    early = read_loop(3, 500)
    item = _openai()
    later = [m.model_copy(update={"id": f"late-{m.id}"}) for m in read_loop(2, 500)[1:]]
    later = [
        m.model_copy(update={"tool_call_id": f"late-{m.tool_call_id}"})
        if isinstance(m, ToolMessage)
        else m.model_copy(
            update={"tool_calls": [{**c, "id": f"late-{c['id']}"} for c in m.tool_calls]}
        )
        for m in later
    ]
    record = [*early, item, HumanMessage("Go on.", id="u1"), *later]
    request = sent(anthropic(), record, max_tokens=64_000)
    assert not any(is_provider_compaction(m) for m in request.messages)
    assert request.messages[0] == early[0]  # not scoped to an item Claude cannot read
    assert anthropic_wire(request.messages) == []
    native = sent(openai_responses(), record, max_tokens=64_000)
    assert any(is_provider_compaction(m) for m in native.messages)


def test_the_users_own_openai_compaction_stands_our_fold_down() -> None:
    own = [{"type": "compaction", "compact_threshold": 64_000}]
    model = ChatOpenAI(model="gpt-5", api_key="offline", context_management=own)  # type: ignore[arg-type]
    summarizer = ScriptedSummarizer("n")
    request = sent(model, chat(40, 3_000), max_tokens=64_000, summarizer=summarizer)
    assert summarizer.calls == []
    assert openai_payload(request)["context_management"] == own


def test_auto_leaves_a_claude_without_compaction_to_the_client_side_tiers() -> None:
    older = ChatAnthropic(model="claude-sonnet-4-5", api_key="offline")  # type: ignore[call-arg]
    summarizer = ScriptedSummarizer("n")
    request = sent(older, chat(40, 3_000), native="auto", summarizer=summarizer)
    assert "context_management" not in request.model_settings
    assert summarizer.calls  # our fold, as without native


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    record=compacted_records(),
    budget=st.integers(min_value=50_000, max_value=120_000),
    native=st.sampled_from(["auto", "only"]),
)
def test_delegated_requests_are_valid_for_claude_whatever_the_record(
    record: list[BaseMessage], budget: int, native: str
) -> None:
    before = [m.model_dump() for m in record]
    request = sent(anthropic(), record, native=native, max_tokens=budget)
    assert [m.model_dump() for m in record] == before
    assert request_problems(request.messages) == []
    limit = WIDE * budget if native == "auto" else 1_000_000  # Claude 4.6's window
    assert count_tokens(request.messages, COUNTER) <= limit


def test_the_async_middleware_sets_the_same_edits() -> None:
    import asyncio

    middleware = BuilderforceMemoryMiddleware(
        token_counter=COUNTER, working_memory=False, native="auto"
    )
    seen: list[ModelRequest[Any]] = []

    async def handler(request: ModelRequest[Any]) -> ModelResponse[Any]:
        seen.append(request)
        return ModelResponse(result=[AIMessage("ok")])

    record = read_loop(2, 100)
    request = ModelRequest(
        model=anthropic(),
        messages=list(record),  # type: ignore[arg-type]
        state={"messages": record},  # type: ignore[typeddict-item]
    )
    asyncio.run(middleware.awrap_model_call(request, handler))
    sync = sent(anthropic(), record, native="auto")
    assert seen[0].model_settings == sync.model_settings
    assert "context_management" in seen[0].model_settings
