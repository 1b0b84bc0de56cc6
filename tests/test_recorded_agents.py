"""Issue 28: a recorded run of each harness replayed through ``create_agent`` and the
middleware (a scripted model playing the recorded assistant turns, tools answering the
recorded results): the brief the model is sent names the files the run actually changed,
as a person labelled them (``tests/data/tool_call_labels.jsonl``)."""

from __future__ import annotations

import json
from collections import defaultdict, deque
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool
from pydantic import Field

from langchain_builderforce_memory.agents.core import MemoryCore
from langchain_builderforce_memory.agents.driver import run_turn
from langchain_builderforce_memory.agents.policy import MemoryPolicy
from langchain_builderforce_memory.agents.state import WORKING_MEMORY_KEY
from langchain_builderforce_memory.messages import is_stamped
from langchain_builderforce_memory.testing import ScriptedChatModel

from .helpers import TRANSCRIPTS_DIR, anthropic_native, load_transcript, model_turns
from .labels import LABELS

pytest.importorskip("langchain.agents")

RUNS = {
    "Claude Code": "specstory-claudecode_opus-4-6_move-watch-command.json",
    "Codex": "specstory-codex_gpt-5-2_git-provenance.json",
    "OpenHands": "openhands-resolver_pr-viewer-dark-mode.json",
    # The pydicom run makes 12 calls, too few for a brief (BRIEF_MIN_OBSERVATIONS).
    "SWE-agent": "sweagent_ctf_i-got-id.json",
    "mini-swe-agent": "minisweagent_deepseek-chat_django-13964.json",
}


class RecordedTool(BaseTool):
    """Answers each call with the result the run recorded for the same call."""

    # A JSON schema that takes any argument: the recorded calls' arguments pass as they are.
    args_schema: Any = Field(
        default_factory=lambda: {"type": "object", "properties": {}, "additionalProperties": True}
    )
    description: str = "A tool of the recorded run."
    answers: Any = None

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.pop("run_manager", None)
        queue = self.answers[json.dumps(kwargs, sort_keys=True, default=str)]
        assert queue, f"{self.name}{kwargs} was not recorded, or was answered already"
        return queue.popleft()


def _edited_files(run: str) -> set[str]:
    """The files the labelled calls of ``run`` edited (created files too, when none)."""
    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines()]
    effects = [e for row in rows if row["run"] == run for e in row["effects"]]
    edited = {e[1] for e in effects if e[0] == "edited"}
    return edited or {e[1] for e in effects if e[0] == "created"}


def _replay(run: str) -> str:
    from langchain.agents import create_agent

    from langchain_builderforce_memory.agents.middleware import BuilderforceMemoryMiddleware

    record = load_transcript(TRANSCRIPTS_DIR / run)
    results = {m.tool_call_id: m for m in record if isinstance(m, ToolMessage)}
    answers: dict[str, dict[str, deque[Any]]] = defaultdict(lambda: defaultdict(deque))
    script = [m for m in record if isinstance(m, AIMessage)]
    for m in script:
        for call in m.tool_calls:
            found = results.get(str(call["id"]))
            key = json.dumps(call["args"], sort_keys=True, default=str)
            answers[call["name"]][key].append(found.content if found else "ok")
    tools = [RecordedTool(name=name, answers=by_args) for name, by_args in answers.items()]
    system = next((m.text for m in record if isinstance(m, SystemMessage)), "You are an agent.")
    task = next(m for m in record if isinstance(m, HumanMessage))
    model = ScriptedChatModel(script=script)
    agent = create_agent(
        model,
        tools,
        system_prompt=system,
        middleware=[BuilderforceMemoryMiddleware(lambda p: "the run so far", max_tokens=32_000)],
    )
    agent.invoke({"messages": [HumanMessage(task.content)]}, {"recursion_limit": 10_000})
    last = model.requests[-1]
    tails = [m for m in last if is_stamped(m, "volatile_tail")]
    assert tails, "no brief in the last request"
    return tails[-1].text


@pytest.mark.parametrize("harness", sorted(RUNS))
def test_the_brief_names_the_files_the_run_changed(harness: str) -> None:
    run = RUNS[harness]
    if not (TRANSCRIPTS_DIR / run).is_file():
        pytest.skip(f"the recorded run {run} is not beside the repository")
    changed = _edited_files(run)
    assert changed, f"the labels name no changed file of {run}"
    brief = _replay(run)
    assert "Changed:" in brief
    missing = sorted(p for p in changed if p not in brief)
    assert not missing, f"{harness}: the brief does not name {missing}"


def _memory_after(record: list[BaseMessage]) -> dict[str, Any]:
    """The working memory the adapters' turn keeps after a replay of ``record``."""
    core = MemoryCore(MemoryPolicy(max_tokens=32_000), summarizer=lambda prompt: "the note")
    state: dict[str, Any] = {}
    for prefix in model_turns(record):
        state.update(run_turn(core, prefix, state).update)
    return dict(state[WORKING_MEMORY_KEY]["snapshot"])


@pytest.mark.parametrize("harness", sorted(RUNS))
def test_an_anthropic_native_record_gives_the_working_memory_what_its_langchain_shape_does(
    harness: str,
) -> None:
    path = TRANSCRIPTS_DIR / RUNS[harness]
    if not path.is_file():
        pytest.skip(f"the recorded run {path.name} is not beside the repository")
    record = load_transcript(path)
    native = anthropic_native(record)
    assert not any(isinstance(m, ToolMessage) for m in native)
    expected = _memory_after(record)
    assert expected["changed"], f"{harness}: the LangChain shape observed no change"
    assert _memory_after(native) == expected
