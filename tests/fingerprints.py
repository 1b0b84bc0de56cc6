"""Fingerprints of every view the package builds on the benchmark runs (issue 23).

A refactor that must not change behaviour is checked against these: every request the
agent's model is sent and every prompt the summarizer is sent, turn by turn, on

- the three workloads of ``benchmarks/contenders.py`` (standard, heavy and light, 300
  calls, 64k),
  through ``create_agent`` and the middleware;
- the 14 recorded runs at 8k and 32k, through ``build_working_transcript`` with its state
  carried as the middleware carries it (``benchmarks/recorded_runs.py``);
- ``bfmem demo`` (300 calls, 64k), with its stream events.

Notes, restated directives, placeholders and the brief are all in those requests, so a
change to any of them changes a fingerprint. Message ids LangGraph draws at random
(``uuid4``) are replaced by their order of first appearance.

Regenerate (after an intended change, saying why in the commit):
    python -m tests.fingerprints
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.messages import BaseMessage, message_to_dict

ROOT = Path(__file__).resolve().parents[1]
FINGERPRINTS = ROOT / "tests" / "data" / "view_fingerprints.json"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def digest(requests: Iterable[Sequence[BaseMessage]], events: Sequence[object] = ()) -> str:
    """One hash of ``requests`` (in order) and ``events``, random ids made ordinal."""
    seen: dict[str, str] = {}

    def ordinal(match: re.Match[str]) -> str:
        return seen.setdefault(match.group(0), f"id-{len(seen)}")

    h = hashlib.sha256()
    for request in requests:
        text = json.dumps([message_to_dict(m) for m in request], sort_keys=True, default=str)
        h.update(_UUID.sub(ordinal, text).encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    h.update(_UUID.sub(ordinal, json.dumps(list(events), sort_keys=True, default=str)).encode())
    return h.hexdigest()[:16]


def contender_fingerprints(turns: int = 300) -> dict[str, str]:
    """The workloads of ``benchmarks/contenders.py``, ours: its requests and summarizer."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from contenders import KEYS, all_workloads, play

    out: dict[str, str] = {}
    for work in all_workloads(turns=turns):
        outcome = play(KEYS["ours"], work, 64_000)
        name = work.name
        prompts = outcome.summarizer_calls or []
        out[f"contenders/{name}"] = digest([*outcome.requests, *prompts])
    return out


def recorded_fingerprints(budgets: Sequence[int] = (8_000, 32_000)) -> dict[str, str]:
    """The 14 recorded runs at each budget, through ``build_working_transcript``."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from recorded_runs import Ours, Tally, model_turns, with_ids
    from tests.helpers import load_transcript, transcript_files

    @dataclass
    class Prompts(Tally):
        prompts: list[Sequence[BaseMessage]] = field(default_factory=list)

        def summarized(self, prompt: Sequence[BaseMessage], answer: str) -> None:
            self.prompts.append(list(prompt))
            super().summarized(prompt, answer)

    out: dict[str, str] = {}
    for path in transcript_files():
        for budget in budgets:
            record = with_ids(load_transcript(path), path.stem)
            tally = Prompts()
            step = Ours(budget, tally, clear=True)
            views = [step(prefix) for prefix in model_turns(record)]
            out[f"recorded/{path.stem}@{budget}"] = digest([*views, *tally.prompts])
    return out


def demo_fingerprint(turns: int = 300) -> dict[str, str]:
    """``bfmem demo``: the agent's requests, the summarizer's and the stream events."""
    from langchain_builderforce_memory.cli.demo import run_demo

    result = run_demo(turns=turns)
    return {"demo": digest([*result.model.requests, *result.summarizer.requests], result.events)}


def all_fingerprints() -> dict[str, str]:
    """Every fingerprint, by scenario."""
    return {**contender_fingerprints(), **recorded_fingerprints(), **demo_fingerprint()}


if __name__ == "__main__":
    FINGERPRINTS.write_text(json.dumps(all_fingerprints(), indent=1, sort_keys=True) + "\n")
    print(f"written to {FINGERPRINTS}")
