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
kind only (their query text is the mapper's rendering). ``ran`` and ``listed`` are no
file-level effect and are not scored. Each run's calls are mapped in order through one
working memory, as the adapters map them, so a glob can take the paths earlier calls
listed.
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
from langchain_builderforce_memory.working.memory import Observation, WorkingMemory
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
_UNSCORED = ("ran", "listed")
"""Kinds that are no file-level effect of the call."""


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


Call = tuple[dict[str, object], ToolMessage | None, list[Observation]]


def _calls(run: str) -> dict[str, Call]:
    """Each call of ``run`` by id: the call, its result, and what the mapper made of it.

    The calls are mapped in the run's order through one memory, as the adapters do, so a
    call knows the paths earlier calls listed. An unanswered call (the run ended on it) is
    never observed: the adapters read observations from results.
    """
    msgs = load_transcript(TRANSCRIPTS / run)
    results = {m.tool_call_id: m for m in msgs if isinstance(m, ToolMessage)}
    memory = WorkingMemory()
    out: dict[str, Call] = {}
    for m in msgs:
        for c in m.tool_calls if isinstance(m, AIMessage) else []:
            result = results.get(str(c["id"]))
            seen = (
                observations_from_tool_call(
                    c["name"], c["args"], result, known_paths=memory.known_paths
                )
                if result
                else []
            )
            memory.observe_all(seen)
            out[str(c["id"])] = (dict(c), result, seen)
    return out


Labelled = tuple[str, dict[str, object], ToolMessage | None, list[list[str]]]


def labelled_calls() -> Iterator[Labelled]:
    """Each labelled call: its harness, the call, its result and its labelled effects."""
    for harness, call, result, _, effects in _labelled():
        yield harness, call, result, effects


def _labelled() -> Iterator[
    tuple[str, dict[str, object], ToolMessage | None, list[Observation], list[list[str]]]
]:
    runs: dict[str, dict[str, Call]] = {}
    for line in LABELS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["run"] not in runs:  # setdefault would map the whole run again for each label
            runs[row["run"]] = _calls(row["run"])
        calls = runs[row["run"]]
        call, result, seen = calls[row["id"]]
        yield HARNESS[row["run"].split("_")[0]], call, result, seen, row["effects"]


def score() -> dict[str, Score]:
    """The mapper against the labels, per harness and ``"all"``."""
    scores: dict[str, Score] = {}
    for harness, call, _, seen, effects in _labelled():
        args = call["args"]
        found = Counter(_key(o.kind, o.target) for o in seen if o.kind not in _UNSCORED)
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
