"""Test helpers for your own graphs: a scripted tool-calling model and request checks.

:class:`ScriptedChatModel` is a deterministic chat model that plays a script of
responses (tool calls and answers) and records every request it was sent, so a test can
assert on what the model actually saw: that it fits a budget, that it is valid for
strict providers (:func:`assert_valid_request`), that the latest directive is in it.
:func:`coding_agent_script` and :func:`coding_tools` make a realistic offline coding
run: reads, greps and edits with multi-kilobyte outputs, parallel calls, several user
directives.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import ConfigDict, Field, PrivateAttr

from langchain_builderforce_memory.handoff.budget import tools_tokens
from langchain_builderforce_memory.tokens import count_tokens, resolve_token_counter
from langchain_builderforce_memory.validity import request_problems

__all__ = [
    "CodingRun",
    "ScriptedChatModel",
    "assert_valid_request",
    "coding_agent_script",
    "coding_tools",
    "coding_transcript",
]

ScriptStep = AIMessage | str | Callable[[list[BaseMessage]], AIMessage]
"""One scripted response: a message, a text answer, or a function of the request."""


def assert_valid_request(messages: Sequence[BaseMessage]) -> None:
    """Raise ``AssertionError`` listing every strict-provider problem in ``messages``.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> assert_valid_request([HumanMessage("hi")])
    """
    problems = request_problems(messages)
    if problems:
        msg = "invalid request:\n- " + "\n- ".join(problems)
        raise AssertionError(msg)


class ScriptedChatModel(BaseChatModel):
    """A chat model that plays ``script`` in order and records every request.

    Works wherever a tool-calling chat model does (``bind_tools`` returns the model
    itself and records the tools), including ``create_agent``, ``create_react_agent``
    and hand-written graphs, sync and async. When the script runs out it answers
    ``"(script exhausted)"``, so a runaway loop ends instead of hanging.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> model = ScriptedChatModel(script=["hello"])
        >>> model.invoke([HumanMessage("hi")]).content
        'hello'
        >>> [m.content for m in model.requests[0]]
        ['hi']
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: list[Any] = Field(default_factory=list)
    """The responses, in order (:data:`ScriptStep` items)."""
    fail_with: BaseException | None = None
    """When set, every call raises it (a failing primary model for fallback tests)."""
    model_name: str = "scripted"
    """Reported in ``response_metadata`` and in hand-off notes."""
    usage_counter: Any = None
    """A ``TokenCounter``: when set, each response reports ``usage_metadata`` input tokens
    of ``usage_ratio`` x its count of the request (messages and bound tool schemas), the
    way a provider whose tokenizer differs from ours would."""
    usage_ratio: float = 1.0
    """The provider's tokens per token of ``usage_counter`` (e.g. 1.3 or 0.8)."""
    overflow_above: int | None = None
    """When set, a request of more input tokens than this (as reported) raises
    ``ContextOverflowError``, as a provider refusing an over-long prompt does."""

    _requests: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _position: int = PrivateAttr(default=0)
    _tools: list[Any] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "builderforce-scripted"

    @property
    def requests(self) -> list[list[BaseMessage]]:
        """Every request received, oldest first (each a list of the messages sent)."""
        return self._requests

    @property
    def bound_tools(self) -> list[Any]:
        """The tools the last ``bind_tools`` call passed."""
        return self._tools

    @property
    def remaining(self) -> int:
        """Script steps not yet played."""
        return len(self.script) - self._position

    def bind_tools(
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Record ``tools`` and return the model itself (the script decides the calls)."""
        self._tools = list(tools)
        return self

    def input_tokens(self, messages: Sequence[BaseMessage]) -> int:
        """What this model reports as the input tokens of ``messages`` (see ``usage_ratio``)."""
        counter = resolve_token_counter(self.usage_counter)
        tools = tools_tokens(self._tools, token_counter=counter) if self._tools else 0
        return math.ceil(self.usage_ratio * (count_tokens(messages, counter) + tools))

    def _next(self, messages: list[BaseMessage]) -> AIMessage:
        with self._lock:
            self._requests.append(list(messages))
            if self.fail_with is not None:
                raise self.fail_with
            if (
                self.overflow_above is not None
                and self.input_tokens(messages) > self.overflow_above
            ):
                msg = (
                    f"prompt is too long: {self.input_tokens(messages)} tokens > "
                    f"{self.overflow_above} maximum"
                )
                raise ContextOverflowError(msg)
            if self._position >= len(self.script):
                return AIMessage("(script exhausted)")
            step = self.script[self._position]
            self._position += 1
        if isinstance(step, str):
            return AIMessage(step)
        if isinstance(step, AIMessage):
            return step
        if callable(step):
            answer = step(messages)
            if isinstance(answer, AIMessage):
                return answer
        msg = (
            f"ScriptedChatModel.script[{self._position - 1}]: expected an AIMessage, a str "
            f"or a function returning an AIMessage; got {type(step).__name__}."
        )
        raise TypeError(msg)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._next(messages)
        update: dict[str, Any] = {
            "response_metadata": {**message.response_metadata, "model_name": self.model_name}
        }
        if self.usage_counter is not None:
            n = self.input_tokens(messages)
            update["usage_metadata"] = {
                "input_tokens": n,
                "output_tokens": 1,
                "total_tokens": n + 1,
            }
        message = message.model_copy(update=update)
        return ChatResult(generations=[ChatGeneration(message=message)])


# --------------------------------------------------------------------------- coding run

_WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "config",
    "parser",
    "token",
    "window",
    "budget",
    "handler",
    "request",
    "cache",
    "session",
    "router",
    "model",
    "state",
    "node",
    "graph",
    "edge",
    "value",
    "index",
    "buffer",
    "stream",
    "record",
]


def _source_text(path: str, tokens: int, seed: int) -> str:
    """Deterministic code-like text of about ``tokens`` tokens (4 chars a token)."""
    rng = random.Random(f"{path}:{seed}")
    lines: list[str] = [f"# {path}"]
    size = len(lines[0])
    n = 0
    while size < tokens * 4:
        n += 1
        a, b, c = rng.choice(_WORDS), rng.choice(_WORDS), rng.choice(_WORDS)
        line = f"{n:5d}  def {a}_{b}(self, {c}: int) -> int:  return self.{c} + {n}"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


@dataclass(slots=True)
class CodingRun:
    """A scripted offline coding run: the model's script and the user's directives."""

    script: list[AIMessage]
    """What the model answers, call by call (tool calls, then a closing answer)."""
    directives: list[str]
    """The user messages, one per ``invoke``; each is followed by its share of the script."""
    calls_per_directive: list[int] = field(default_factory=list)
    """Model calls each directive's agent loop makes (tool-call turns + the answer)."""


def coding_agent_script(
    *,
    turns: int = 300,
    directives: int = 4,
    parallel_every: int = 5,
    files: int = 40,
    seed: int = 0,
) -> CodingRun:
    """A realistic coding run: ``turns`` model calls split across ``directives``.

    Each directive's loop reads, greps and edits files under ``src/app/`` (a parallel
    pair of reads every ``parallel_every`` turns) and ends with a short answer.

    Example:
        >>> run = coding_agent_script(turns=10, directives=2)
        >>> len(run.script), len(run.directives)
        (10, 2)
    """
    if turns < directives * 2:
        msg = f"turns must be at least 2 per directive ({directives * 2}); got {turns}."
        raise ValueError(msg)
    rng = random.Random(seed)
    paths = [f"src/app/{rng.choice(_WORDS)}_{i}.py" for i in range(files)]
    per = [turns // directives + (1 if i < turns % directives else 0) for i in range(directives)]
    script: list[AIMessage] = []
    asks = [
        "Find where the request budget is computed and explain it.",
        "Now fix the off-by-one in the window handler and add a test.",
        "Rename the cache module to store and update every import.",
        "Finally, summarise what you changed and what is left.",
    ]
    call_no = 0
    for d, count in enumerate(per):
        for t in range(count - 1):
            call_no += 1
            if t % parallel_every == parallel_every - 1:
                a, b = rng.sample(paths, 2)
                calls = [
                    {"name": "read_file", "args": {"path": a}, "id": f"call_{call_no}_a"},
                    {"name": "read_file", "args": {"path": b}, "id": f"call_{call_no}_b"},
                ]
            else:
                kind = rng.choice(["read_file", "read_file", "grep", "edit_file"])
                path = rng.choice(paths)
                args: dict[str, object] = (
                    {"pattern": rng.choice(_WORDS)} if kind == "grep" else {"path": path}
                )
                if kind == "edit_file":
                    args["change"] = f"fix {rng.choice(_WORDS)}"
                calls = [{"name": kind, "args": args, "id": f"call_{call_no}"}]
            script.append(AIMessage(f"Step {t + 1} of task {d + 1}.", tool_calls=calls))
        script.append(AIMessage(f"Done with task {d + 1}: {asks[d % len(asks)]}"))
    directives_text = [
        asks[d % len(asks)] + ("" if d < len(asks) else f" (round {d // len(asks) + 1})")
        for d in range(directives)
    ]
    return CodingRun(script=script, directives=directives_text, calls_per_directive=per)


@dataclass(slots=True)
class _CodingTools:
    min_tokens: int
    max_tokens: int
    seed: int

    def size(self, key: str) -> int:
        rng = random.Random(f"size:{key}:{self.seed}")
        return rng.randint(self.min_tokens, self.max_tokens)

    def read_file(self, path: str) -> str:
        """Read a file of the repository."""
        return _source_text(path, self.size(path), self.seed)

    def grep(self, pattern: str) -> str:
        """Search the repository for a pattern."""
        body = _source_text(f"grep:{pattern}", self.size(pattern) // 4 + 50, self.seed)
        return f"matches for {pattern!r}:\n{body}"

    def edit_file(self, path: str, change: str) -> str:
        """Apply a change to a file."""
        return f"edited {path}: {change}"


def coding_tools(
    *, min_tokens: int = 2_000, max_tokens: int = 20_000, seed: int = 0
) -> list[BaseTool]:
    """Offline ``read_file`` / ``grep`` / ``edit_file`` tools with deterministic outputs.

    A read returns ``min_tokens``..``max_tokens`` tokens of code-like text (stable per
    path), so a long run exercises real budgets.

    Example:
        >>> tools = coding_tools(min_tokens=10, max_tokens=20)
        >>> sorted(t.name for t in tools)
        ['edit_file', 'grep', 'read_file']
    """
    impl = _CodingTools(min_tokens, max_tokens, seed)
    return [
        StructuredTool.from_function(impl.read_file, name="read_file"),
        StructuredTool.from_function(impl.grep, name="grep"),
        StructuredTool.from_function(impl.edit_file, name="edit_file"),
    ]


def coding_transcript(
    *,
    turns: int = 60,
    directives: int = 2,
    min_tokens: int = 2_000,
    max_tokens: int = 20_000,
    seed: int = 0,
) -> list[BaseMessage]:
    """The record a scripted coding run leaves: what ``messages`` holds after ``turns`` calls.

    Plays :func:`coding_agent_script` against :func:`coding_tools` without a graph: each
    directive as a user message, each scripted answer, and every tool call's result. Use
    it wherever an example or a test needs a long, valid, realistic transcript.

    Example:
        >>> record = coding_transcript(turns=6, directives=1, min_tokens=10, max_tokens=20)
        >>> [m.type for m in record[:4]]
        ['human', 'ai', 'tool', 'ai']
        >>> assert_valid_request(record)
    """
    run = coding_agent_script(turns=turns, directives=directives, seed=seed)
    tools = {
        t.name: t for t in coding_tools(min_tokens=min_tokens, max_tokens=max_tokens, seed=seed)
    }
    record: list[BaseMessage] = []
    steps = iter(run.script)
    for directive, calls in zip(run.directives, run.calls_per_directive, strict=True):
        record.append(HumanMessage(directive))
        for answer in (next(steps) for _ in range(calls)):
            record.append(answer)
            record.extend(
                ToolMessage(
                    str(tools[call["name"]].invoke(call["args"])),
                    tool_call_id=str(call["id"]),
                    name=call["name"],
                )
                for call in answer.tool_calls
            )
    return record


def _tool_step_at(script: Sequence[AIMessage], start: int) -> int:
    """The first step at or after ``start`` that calls a tool (not a directive's answer)."""
    for i in range(max(0, start), len(script)):
        if script[i].tool_calls:
            return i
    msg = f"no tool-calling step at or after {start} in a script of {len(script)} steps."
    raise ValueError(msg)


def with_memory_tool_calls(
    script: Sequence[AIMessage], *, search_at: int, query: str, compact_at: int, focus: str
) -> list[AIMessage]:
    """``script`` with one ``search_history`` and one ``compact_context`` call in it.

    The tool-calling steps at (or first after) ``search_at`` and ``compact_at`` (0-based)
    are replaced, so the run keeps its length and its directives' answers.

    Example:
        >>> run = coding_agent_script(turns=10, directives=1)
        >>> script = with_memory_tool_calls(run.script, search_at=5, query="x", compact_at=6,
        ...                                 focus="the tests")
        >>> [c["name"] for m in script[5:7] for c in m.tool_calls]
        ['search_history', 'compact_context']
    """
    out = list(script)
    first = _tool_step_at(out, search_at)
    out[first] = AIMessage(
        "Looking up what I read earlier.",
        tool_calls=[{"name": "search_history", "args": {"query": query}, "id": f"search_{first}"}],
    )
    second = _tool_step_at(out, max(compact_at, first + 1))
    out[second] = AIMessage(
        "Freeing room before the next step.",
        tool_calls=[
            {"name": "compact_context", "args": {"focus": focus}, "id": f"compact_{second}"}
        ],
    )
    return out


def iter_requests(model: ScriptedChatModel) -> Iterator[list[BaseMessage]]:
    """The model's recorded requests (a snapshot, safe to iterate while it runs)."""
    return iter(list(model.requests))
