"""The hand-labelled sample of recorded tool calls, and the mapper scored against it.

``tests/data/tool_call_labels.jsonl`` holds 344 tool calls drawn evenly from the 14
recorded runs in ``shared/transcripts`` (every harness), each with its file-level effect as
a person read it from the call and its output: each path read, created, edited or deleted
(resolved against a ``cd`` in the same command), each search, and each test, build or lint
run with its outcome. A failed call has no effect. Effects that no mapper could see are
labelled all the same (a script that rewrites a file, a command SpecStory did not render),
so recall is measured against what happened, not against what is readable.

Scoring: created and edited count as one class (``changed``: the brief and the code map
fold them), paths are compared after ``posixpath.normpath``, searches and test runs by
kind only (their query text is the mapper's rendering). ``ran`` is not a file-level effect
and is not scored.
"""

from __future__ import annotations

import json
import posixpath
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.messages import AIMessage, ToolMessage

from langchain_builderforce_memory.working.mapper import observations_from_tool_call
from tests.helpers import TRANSCRIPTS_DIR, load_transcript

LABELS = Path(__file__).parent / "data" / "tool_call_labels.jsonl"
TRANSCRIPTS = TRANSCRIPTS_DIR
HARNESS = {
    "claudecode": "Claude Code",
    "specstory-claudecode": "Claude Code",
    "specstory-codex": "Codex",
    "openhands": "OpenHands",
    "openhands-resolver": "OpenHands",
    "sweagent": "SWE-agent",
    "minisweagent": "mini-swe-agent",
}
_CLASS = {"created": "changed", "edited": "changed"}


def _key(kind: str, target: str | None) -> tuple[str, str]:
    kind = _CLASS.get(kind, kind)
    if kind in ("searched", "passed", "failed") or target is None:
        return kind, ""
    return kind, posixpath.normpath(target)


@dataclass
class Score:
    """Matches of the mapper's observations against the labels."""

    true_pos: int = 0
    false_pos: int = 0
    false_neg: int = 0
    calls: int = 0
    wrong: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.true_pos / max(1, self.true_pos + self.false_pos)

    @property
    def recall(self) -> float:
        return self.true_pos / max(1, self.true_pos + self.false_neg)


def _calls(run: str) -> dict[str, tuple[dict[str, object], ToolMessage | None]]:
    msgs = load_transcript(TRANSCRIPTS / run)
    results = {m.tool_call_id: m for m in msgs if isinstance(m, ToolMessage)}
    return {
        str(c["id"]): (dict(c), results.get(str(c["id"])))
        for m in msgs
        if isinstance(m, AIMessage)
        for c in m.tool_calls
    }


Labelled = tuple[str, dict[str, object], ToolMessage | None, list[list[str]]]


def labelled_calls() -> Iterator[Labelled]:
    """Each labelled call: its harness, the call, its result and its labelled effects."""
    runs: dict[str, dict[str, tuple[dict[str, object], ToolMessage | None]]] = {}
    for line in LABELS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        calls = runs.setdefault(row["run"], _calls(row["run"]))
        call, result = calls[row["id"]]
        yield HARNESS[row["run"].split("_")[0]], call, result, row["effects"]


def score() -> dict[str, Score]:
    """The mapper against the labels, per harness and ``"all"``."""
    scores: dict[str, Score] = {}
    for harness, call, result, effects in labelled_calls():
        args = call["args"]
        assert isinstance(args, dict)
        # An unanswered call (the run ended on it) is never observed: the adapters read
        # observations from results.
        seen = observations_from_tool_call(str(call["name"]), args, result) if result else []
        found = Counter(_key(o.kind, o.target) for o in seen if o.kind != "ran")
        want = Counter(_key(e[0], e[1] if len(e) > 1 else None) for e in effects)
        for name in (harness, "all"):
            s = scores.setdefault(name, Score())
            s.calls += 1
            s.true_pos += sum((found & want).values())
            s.false_pos += sum((found - want).values())
            s.false_neg += sum((want - found).values())
            if name == "all" and found != want:
                s.wrong.append(
                    f"{call['name']} {json.dumps(args)[:100]} -> extra {sorted(found - want)}"
                    f" missing {sorted(want - found)}"
                )
    return scores
