"""Shared test fakes and builders (append only: several test modules use these)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)

from langchain_builderforce_memory.blocks import is_tool_result_turn

if TYPE_CHECKING:
    from langchain_builderforce_memory.transcript.fold import WorkingTranscript

TRANSCRIPTS_DIR = Path(__file__).resolve().parents[2] / "shared" / "transcripts"
"""The recorded agent runs, laid beside the project root (as CI lays them)."""

CI_EXAMPLES = 40
"""An expensive property's example count under CI, at most: there the draws are
derandomized (the same examples every run, see ``tests/conftest.py``); a developer's run
draws its full count afresh each time, which is where new counterexamples come from.
Properties whose examples are cheap keep their full count under CI too."""


def examples(n: int) -> int:
    """``n`` hypothesis examples, or :data:`CI_EXAMPLES` under CI when ``n`` is more."""
    return min(n, CI_EXAMPLES) if os.environ.get("CI") else n


def transcript_files() -> list[Path]:
    """Every recorded transcript JSON (not the manifest); empty when the folder is absent."""
    if not TRANSCRIPTS_DIR.is_dir():
        return []
    return sorted(p for p in TRANSCRIPTS_DIR.glob("*.json") if p.name != "manifest.json")


NO_TRANSCRIPTS_REASON = (
    f"the recorded runs are not laid beside the project: {TRANSCRIPTS_DIR} is missing "
    "(CI lays ../shared/transcripts/ there; copy it to run these)"
)


def transcript_params(limit: int | None = None) -> list[Any]:
    """``transcript_files()`` as ``parametrize`` values with short ids; when the folder is
    absent, one skipped case that says so (pytest's own reason, "got empty parameter set",
    explains nothing)."""
    import pytest

    paths = transcript_files()[:limit]
    if not paths:
        skip = pytest.mark.skip(reason=NO_TRANSCRIPTS_REASON)
        return [pytest.param(None, id="no-transcripts", marks=skip)]
    return [pytest.param(p, id=p.stem[:40]) for p in paths]


def load_transcript(path: Path) -> list[BaseMessage]:
    """A recorded run as LangChain messages."""
    return messages_from_dict(json.loads(path.read_text(encoding="utf-8")))


def model_turns(messages: list[BaseMessage]) -> Iterator[list[BaseMessage]]:
    """Each prefix of a record at which a model would be called: right before each AIMessage,
    and the whole record at the end."""
    for i, m in enumerate(messages):
        if isinstance(m, AIMessage) and i > 0:
            yield messages[:i]
    yield messages


def msg(role: str, content: str = "x") -> BaseMessage:
    """A message of a seed role ('system' | 'user' | 'assistant' | 'tool')."""
    if role == "system":
        return SystemMessage(content)
    if role == "user":
        return HumanMessage(content)
    if role == "assistant":
        return AIMessage(content)
    if role == "tool":
        return ToolMessage(content, tool_call_id="orphan")
    raise ValueError(role)


def convo_of(n: int, content: Callable[[int], str] = lambda i: f"m{i}") -> list[BaseMessage]:
    """Seed ``convoOf``: user/assistant pairs, ``n`` messages long, each message distinct."""
    return [HumanMessage(content(i)) if i % 2 == 0 else AIMessage(content(i)) for i in range(n)]


def tool_round(i: int, result: str, *, calls: int = 1) -> list[BaseMessage]:
    """An assistant turn with ``calls`` parallel tool calls, then their results."""
    ids = [f"call-{i}-{k}" for k in range(calls)]
    call = AIMessage(
        f"step {i}",
        tool_calls=[
            {"name": "read_file", "args": {"path": f"f{i}_{k}.py"}, "id": cid}
            for k, cid in enumerate(ids)
        ],
    )
    return [call, *(ToolMessage(result, tool_call_id=cid, name="read_file") for cid in ids)]


def seed_msgs(spec: list[tuple[str, str]]) -> list[BaseMessage]:
    """Seed-style ``[(role, content)]`` as LangChain messages, with the tool results after an
    assistant turn linked to tool calls on it (the seed's messages carry no ids; ours must,
    or every such result would be an orphan). A tool result with no assistant before it
    stays an orphan, as in the seed's orphan cases."""
    out: list[BaseMessage] = []
    i = 0
    while i < len(spec):
        role, content = spec[i]
        if role == "assistant":
            j = i + 1
            while j < len(spec) and spec[j][0] == "tool":
                j += 1
            ids = [f"c{i}_{k}" for k in range(j - i - 1)]
            out.append(
                AIMessage(content, tool_calls=[{"name": "t", "args": {}, "id": cid} for cid in ids])
                if ids
                else AIMessage(content)
            )
            out.extend(
                ToolMessage(spec[i + 1 + k][1], tool_call_id=cid) for k, cid in enumerate(ids)
            )
            i = j
            continue
        out.append(msg(role, content))
        i += 1
    return out


def tool_calls_message(*calls: tuple[str, dict[str, object]], prefix: str = "call") -> AIMessage:
    """An assistant turn calling each ``(name, args)`` in parallel, ids ``{prefix}-{i}``."""
    return AIMessage(
        "",
        tool_calls=[
            {"name": name, "args": args, "id": f"{prefix}-{i}", "type": "tool_call"}
            for i, (name, args) in enumerate(calls)
        ],
    )


def tool_node_graph(tools: list[object], **tool_node_kwargs: object) -> object:
    """A compiled graph that runs one ``ToolNode`` over ``state["messages"]``:
    START -> tools -> END. Feed it ``{"messages": [tool_calls_message(...)]}``."""
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(tools, **tool_node_kwargs))  # type: ignore[arg-type]
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile()


# --- hand-off packer fakes (tests/test_handoff*.py) ---------------------------------------


def msg14(role: str, tag: str) -> BaseMessage:
    """Seed ``handoff.test.ts`` ``msg``: ``tag`` padded so it is exactly 14 tokens under the
    default estimate (10 of text + 4 of framing; the seed padded to 40 chars for its
    ``chars / 4``)."""
    from langchain_builderforce_memory.tokens import estimate_text_tokens

    text = tag
    while estimate_text_tokens(text + "x") <= 10:
        text += "x"
    if estimate_text_tokens(text) != 10:
        raise ValueError(f"msg14: {tag!r} cannot be padded to exactly 10 text tokens")
    return msg(role, text)


class ScriptedSummarizer:
    """A sync summarizer function: records each prompt it is sent, then returns ``answer``
    (or raises ``error``). ``release`` (a threading.Event) makes it block until set, to
    exercise timeouts without sleeping."""

    def __init__(
        self,
        answer: str | None = "SUMMARY OF THE DROPPED MIDDLE",
        *,
        error: BaseException | None = None,
        block_until: threading.Event | None = None,
    ) -> None:
        self.answer = answer
        self.error = error
        self.block_until = block_until
        self.calls: list[list[BaseMessage]] = []

    def __call__(self, prompt: list[BaseMessage]) -> str | None:
        self.calls.append(prompt)
        if self.block_until is not None:
            self.block_until.wait(10)
        if self.error is not None:
            raise self.error
        return self.answer


class NumberedSummarizer:
    """A sync summarizer whose k-th answer is ``note k``: which call wrote a note, and
    whether a later call was shown it, can be read off the prompts it records."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []

    def __call__(self, prompt: list[BaseMessage]) -> str:
        self.calls.append(prompt)
        return f"note {len(self.calls)}"


class ScriptedRecall:
    """A sync ``recall(query, budget_chars)``: records each call, returns ``answer`` (or raises)."""

    def __init__(
        self, answer: str = "RECALLED MEMORY", *, error: BaseException | None = None
    ) -> None:
        self.answer = answer
        self.error = error
        self.calls: list[tuple[str, int]] = []

    def __call__(self, query: str, budget_chars: int) -> str:
        self.calls.append((query, budget_chars))
        if self.error is not None:
            raise self.error
        return self.answer


async def async_recall_never(query: str, budget_chars: int) -> str:
    """An async recall that never answers in time (cancelled by the caller's timeout)."""
    await asyncio.Event().wait()
    return ""


# ------------------------------------------------- chat histories (test_history*.py)


class RacyHistory(BaseChatMessageHistory):
    """A history that rewrites its whole list on every append and yields to the event loop
    between reading and writing it (like a JSON file or a key-value store over async I/O):
    unserialised concurrent writers lose messages."""

    def __init__(self) -> None:
        self._stored: list[BaseMessage] = []

    @property  # type: ignore[override]
    def messages(self) -> list[BaseMessage]:
        return list(self._stored)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        self._stored = [*self._stored, *messages]

    async def aget_messages(self) -> list[BaseMessage]:
        await asyncio.sleep(0)
        return list(self._stored)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        current = list(self._stored)
        await asyncio.sleep(0)
        self._stored = [*current, *messages]

    def clear(self) -> None:
        self._stored = []


class IdDroppingHistory(BaseChatMessageHistory):
    """A history that serialises like most stores (``message_to_dict``) but does not
    persist message ids; ``store`` is the "database" (share it to reopen a session)."""

    def __init__(self, store: list[dict[str, Any]] | None = None) -> None:
        self.store: list[dict[str, Any]] = store if store is not None else []

    @property  # type: ignore[override]
    def messages(self) -> list[BaseMessage]:
        return messages_from_dict(json.loads(json.dumps(self.store)))

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        for m in messages:
            data = message_to_dict(m)
            data["data"]["id"] = None
            self.store.append(data)

    def clear(self) -> None:
        self.store.clear()


# --- the fold (tests/test_fold*.py, tests/test_summary.py, benchmarks/fold_loop.py) -------


class AsyncScriptedSummarizer:
    """An async summarizer function: records each prompt, returns ``answer`` (or raises
    ``error``); with ``never=True`` it never answers (for the async timeout path)."""

    def __init__(
        self,
        answer: str | None = "SUMMARY OF THE DROPPED MIDDLE",
        *,
        error: BaseException | None = None,
        never: bool = False,
    ) -> None:
        self.answer = answer
        self.error = error
        self.never = never
        self.calls: list[list[BaseMessage]] = []

    async def __call__(self, prompt: list[BaseMessage]) -> str | None:
        self.calls.append(prompt)
        if self.never:
            await asyncio.Event().wait()
        if self.error is not None:
            raise self.error
        return self.answer


def fold_coverage_gaps(record: Sequence[BaseMessage], view: Sequence[BaseMessage]) -> list[int]:
    """Conversation indices (after the leading system run) of ``record`` messages that are
    neither covered by the view's memory note nor sent verbatim in it. A leading marker
    shown as a note counts as sent; a tool result the record itself orphans (which any
    valid request must drop) is excused."""
    from langchain_builderforce_memory.messages import (
        leading_system_count,
        message_id,
        role_of,
        stamp_of,
    )
    from langchain_builderforce_memory.validity import repair_request

    convo = record[leading_system_count(record) :]
    covered = 0
    shown_marker = False
    for m in view:
        s = stamp_of(m)
        if s is not None and "memory_note" in (s["kind"], s.get("was")):
            end = s.get("covered_end")
            covered = max(covered, end if isinstance(end, int) else 0)
            shown_marker = shown_marker or s.get("source") == "consolidation_marker"
    shown = {id(m) for m in view}
    # A message cleared, cut or restated in the view is shown as a stamped stand-in that
    # names it ("of"): it counts as sent (the full text is still in the record).
    stand_ins = {s.get("of") for m in view if (s := stamp_of(m)) is not None}
    kept_by_repair = {id(m) for m in repair_request(record)[0]}
    return [
        i
        for i, m in enumerate(convo)
        if i >= covered
        and id(m) not in shown
        and message_id(m) not in stand_ins
        and not (i == 0 and shown_marker)
        and not (role_of(m) == "tool" and id(m) not in kept_by_repair)
    ]


class FoldLoopReport:
    """What :func:`run_fold_loop` measured (see ``benchmarks/fold_loop.py``)."""

    def __init__(
        self,
        *,
        turns: int,
        summarizer_calls: int,
        new_work_tokens: int,
        view_tokens: list[int],
        prefix_kept: int,
        modes: dict[str, int],
        invalid_views: int,
        coverage_gaps: int,
    ) -> None:
        self.turns = turns
        self.summarizer_calls = summarizer_calls
        self.new_work_tokens = new_work_tokens
        self.view_tokens = view_tokens
        self.prefix_kept = prefix_kept
        self.modes = modes
        self.invalid_views = invalid_views
        self.coverage_gaps = coverage_gaps

    @property
    def tokens_per_call(self) -> float:
        """Tokens of new work per summarizer call (inf with no call)."""
        if not self.summarizer_calls:
            return float("inf")
        return self.new_work_tokens / self.summarizer_calls

    @property
    def prefix_share(self) -> float:
        """Share of turns (after the first) whose view starts with the previous turn's view."""
        return self.prefix_kept / max(1, self.turns - 1)


def run_fold_loop(
    turns: int = 300,
    result_tokens: int = 2_000,
    *,
    note_chars: int = 1_200,
    system_prompt: str = "You are a coding agent. Use the tools; keep the tests green.",
    calls_per_turn: int = 1,
    directive_every: int = 0,
    **build_kwargs: Any,
) -> FoldLoopReport:
    """A scripted tool loop through ``build_working_transcript`` with a counting fake
    summarizer: each turn builds the view (as before a model call), then appends the
    model's tool call(s) and their ``result_tokens``-token results to the record (plus a
    new user directive every ``directive_every`` turns, when set). The conversation's
    facts are carried from turn to turn, as the adapters carry them."""
    from langchain_builderforce_memory.facts import RecordFacts
    from langchain_builderforce_memory.tokens import count_tokens
    from langchain_builderforce_memory.transcript.fold import (
        CompactMemo,
        build_working_transcript,
    )
    from langchain_builderforce_memory.validity import request_problems

    summarizer = ScriptedSummarizer("n" * note_chars)
    record: list[BaseMessage] = [HumanMessage("Port the parser to Rust; keep the tests green.")]
    start_tokens = count_tokens(record)
    memo: CompactMemo | None = None
    previous: list[BaseMessage] | None = None
    view_tokens: list[int] = []
    modes: dict[str, int] = {}
    prefix_kept = invalid = gaps = 0
    body = "y" * (4 * (result_tokens - 4))  # exactly result_tokens under the default count
    facts = RecordFacts(build_kwargs.get("token_counter"))
    for turn in range(turns):
        out = build_working_transcript(
            record,
            memo=memo,
            summarizer=summarizer,
            system_prompt=system_prompt,
            facts=facts,
            **build_kwargs,
        )
        memo = out.memo
        modes[out.mode] = modes.get(out.mode, 0) + 1
        view_tokens.append(count_tokens(out.messages))
        invalid += bool(request_problems(out.messages))
        gaps += len(fold_coverage_gaps(record, out.messages))
        if previous is not None and out.messages[: len(previous)] == previous:
            prefix_kept += 1
        previous = out.messages
        record.extend(tool_round(turn, f"{turn}:{body}"[: len(body)], calls=calls_per_turn))
        if directive_every and (turn + 1) % directive_every == 0:
            record.append(HumanMessage(f"Now also handle case {turn}."))
    return FoldLoopReport(
        turns=turns,
        summarizer_calls=len(summarizer.calls),
        new_work_tokens=count_tokens(record) - start_tokens,
        view_tokens=view_tokens,
        prefix_kept=prefix_kept,
        modes=modes,
        invalid_views=invalid,
        coverage_gaps=gaps,
    )


# --- agent adapters (tests/test_middleware.py, test_nodes.py, test_e2e_agents.py) ----------

AGENT_SYSTEM_PROMPT = "You are a coding agent. Use the tools; keep the tests green."
"""The system prompt every adapter test agent runs with (counted in every budget)."""

AGENT_KINDS = ("create_agent", "react", "graph")
"""``create_agent`` + the middleware; ``create_react_agent`` + the node as its
``pre_model_hook``; a hand-written ``StateGraph`` with the node before the model node."""

RUN_MODES = ("invoke", "ainvoke", "stream", "astream")
"""How a test drives a compiled graph (see :func:`run_directives`)."""

ASYNC_STREAM_WRITER = sys.version_info >= (3, 11)
"""LangGraph finds a node's stream writer through a context variable that asyncio tasks
carry only from Python 3.11 on: below it, async graphs report folds by log line alone
(``create_agent``'s ``runtime.stream_writer`` too: it asks ``get_config()``)."""

STREAMED_MODES = (
    "stream",
    pytest.param(
        "astream",
        marks=pytest.mark.skipif(
            not ASYNC_STREAM_WRITER,
            reason="LangGraph's stream writer needs Python 3.11+ in async graphs",
        ),
    ),
)
"""``stream`` and ``astream``, for a test that reads the custom events (see
:data:`ASYNC_STREAM_WRITER`)."""


def build_agent(
    kind: str,
    model: Any,
    tools: Sequence[Any],
    *,
    summarizer: Any = None,
    checkpointer: Any = None,
    system_prompt: str = AGENT_SYSTEM_PROMPT,
    before: Sequence[Any] = (),
    after: Sequence[Any] = (),
    **options: Any,
) -> Any:
    """A compiled agent of ``kind`` (see :data:`AGENT_KINDS`) using this package's adapter.

    ``before`` is middleware placed ahead of ours (``create_agent`` only), e.g. a
    ``ModelFallbackMiddleware``; ``after``, middleware placed after it. ``options`` go to
    the middleware / node. These agent tests pin the fold's mechanics, so the clear tier
    is off unless a test passes ``clear_tool_results=True`` (the view policy is tested in
    test_view_policy.py and measured end to end in benchmarks/contenders.py).
    """
    import warnings

    options.setdefault("clear_tool_results", False)

    from langchain_builderforce_memory.agents.node import (
        WorkingTranscriptNode,
        WorkingTranscriptState,
    )

    if kind == "create_agent":
        from langchain.agents import create_agent

        from langchain_builderforce_memory.agents.middleware import BuilderforceMemoryMiddleware

        return create_agent(
            model,
            list(tools),
            system_prompt=system_prompt,
            middleware=[*before, BuilderforceMemoryMiddleware(summarizer, **options), *after],
            checkpointer=checkpointer,
        )
    node = WorkingTranscriptNode(
        summarizer, system_prompt=system_prompt, model=model, tools=list(tools), **options
    )
    if kind == "react":
        from langgraph.prebuilt import create_react_agent

        with warnings.catch_warnings():  # deprecated in LangGraph 1.0, still widely deployed
            warnings.simplefilter("ignore")
            return create_react_agent(
                model,
                list(tools),
                prompt=system_prompt,
                pre_model_hook=node,
                state_schema=WorkingTranscriptState,
                checkpointer=checkpointer,
            )
    if kind == "graph":
        return _hand_written_graph(model, tools, node, system_prompt, checkpointer)
    raise ValueError(kind)


def _hand_written_graph(
    model: Any, tools: Sequence[Any], node: Any, system_prompt: str, checkpointer: Any
) -> Any:
    from langchain_core.runnables import RunnableLambda
    from langgraph.graph import END, START, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    from langchain_builderforce_memory.agents.node import WorkingTranscriptState

    bound = model.bind_tools(list(tools))
    prompt = SystemMessage(system_prompt)

    def call_model(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [bound.invoke([prompt, *state["llm_input_messages"]])]}

    async def acall_model(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke([prompt, *state["llm_input_messages"]])]}

    builder = StateGraph(WorkingTranscriptState)
    builder.add_node("memory", node)
    builder.add_node("model", RunnableLambda(call_model, afunc=acall_model))
    builder.add_node("tools", ToolNode(list(tools)))
    builder.add_edge(START, "memory")
    builder.add_edge("memory", "model")
    builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "memory")
    return builder.compile(checkpointer=checkpointer)


def run_directives(
    agent: Any,
    directives: Sequence[str],
    *,
    mode: str = "invoke",
    thread_id: str = "thread-1",
    durability: str = "exit",
) -> list[dict[str, Any]]:
    """Send each directive as a new user turn on one thread; return the custom stream
    events (``stream`` / ``astream``; none for ``invoke`` / ``ainvoke``).

    ``durability="exit"`` checkpoints once per directive: a 300-turn run with
    20k-token tool results would otherwise serialise the whole record every step.
    """
    config: Any = {"configurable": {"thread_id": thread_id}, "recursion_limit": 10_000}
    events: list[dict[str, Any]] = []

    async def go_async() -> None:
        for d in directives:
            payload = {"messages": [HumanMessage(d)]}
            if mode == "ainvoke":
                await agent.ainvoke(payload, config, durability=durability)
            else:
                async for chunk in agent.astream(
                    payload, config, stream_mode="custom", durability=durability
                ):
                    events.append(chunk)

    if mode in ("ainvoke", "astream"):
        asyncio.run(go_async())
        return events
    for d in directives:
        payload = {"messages": [HumanMessage(d)]}
        if mode == "invoke":
            agent.invoke(payload, config, durability=durability)
        else:
            stream = agent.stream(payload, config, stream_mode="custom", durability=durability)
            events.extend(stream)
    return events


def directive_of_request(calls_per_directive: Sequence[int]) -> Callable[[int], int]:
    """Which directive (its index) the ``i``-th model request of a scripted run serves."""
    import bisect
    import itertools

    ends = list(itertools.accumulate(calls_per_directive))
    return lambda i: bisect.bisect_right(ends, i)


def volatile_tails(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The volatile tails (brief messages) in ``messages``."""
    from langchain_builderforce_memory.handoff import is_volatile_tail

    return [m for m in messages if is_volatile_tail(m)]


def restates(shown: BaseMessage, original: BaseMessage) -> bool:
    """True when ``shown`` is ``original`` restated in a view: the window's or fold's
    stamped copy (kind ``"directive"``) of the same class, id and content."""
    from langchain_builderforce_memory.messages import DIRECTIVE_KIND, message_id, stamp_of

    return (
        type(shown) is type(original)
        and shown.content == original.content
        and shown.id == original.id
        and stamp_of(shown) == {"kind": DIRECTIVE_KIND, "of": message_id(original)}
    )


def keeps_front(
    before: Sequence[BaseMessage], view: Sequence[BaseMessage], max_messages: int
) -> bool:
    """True when ``view`` starts with the whole of ``before``, or with ``before`` less the
    instruction it restated (and the thinking step pinned with it) when putting them back
    would overflow the message window: the one move a held note's views may make (see
    ``FoldPlan.restate_earlier``). The window need not be exactly full after the move: the
    instruction and its thinking step go together, two messages for one over.

    The two may go on different turns: while the instruction's tool loop runs, its opening
    thinking step is the provider's (kept when the instruction goes); a new instruction
    ends the loop, and the step then goes the same way, when the window has no room for it.
    """
    from langchain_builderforce_memory.messages import (
        DIRECTIVE_KIND,
        is_stamped,
        leading_system_count,
    )
    from langchain_builderforce_memory.turns import opens_with_thinking

    if list(view[: len(before)]) == list(before):
        return True
    start = next(
        (i for i, (a, b) in enumerate(zip(before, view, strict=False)) if a != b),
        min(len(before), len(view)),
    )
    restated = [i for i, m in enumerate(before) if is_stamped(m, DIRECTIVE_KIND)]
    if restated != [start] and (restated or not opens_with_thinking(before[start])):
        return False  # not the restated instruction, nor the thinking step left behind
    # What went: the instruction with its opening thinking step, or the step alone.
    end = next(
        (
            end
            for end in range(start + 1, len(before) + 1)
            if list(view[: len(before) - end + start]) == [*before[:start], *before[end:]]
        ),
        None,
    )
    if end is None:
        return False
    return len(view) - leading_system_count(view) + end - start > max_messages  # forced


def written_body(lines: int = 900) -> str:
    """What :func:`read_write_loop` writes to each file: ``lines`` short Go functions."""
    return "".join(f"func helper{i}(x int) int {{ return x * {i} }}\n" for i in range(lines))


def read_write_loop(
    rounds: int, *, shape: str = "tool_calls", read_lines: int = 1_500, written_lines: int = 900
) -> list[BaseMessage]:
    """A directive, then per round a read of a file (big output) and a write of it (big
    call: the file's ~9k tokens): the run whose old writes the clear tier cuts. ``shape``:
    ``"anthropic"`` also puts each write in a ``tool_use`` block."""
    record: list[BaseMessage] = [HumanMessage("Port every module to the new API.", id="u0")]
    for i in range(rounds):
        path = f"src/m{i}.py"
        read = {"name": "read_file", "args": {"path": path}, "id": f"r{i}"}
        write_args = {"path": path, "content": f"# m{i}\n" + written_body(written_lines)}
        write = {"name": "write_file", "args": write_args, "id": f"w{i}"}
        content: str | list[str | dict[str, object]] = f"writing {path}"
        if shape == "anthropic":
            block = {"type": "tool_use", "id": f"w{i}", "name": "write_file", "input": write_args}
            content = [{"type": "text", "text": f"writing {path}"}, block]
        record += [
            AIMessage(f"reading {path}", tool_calls=[read], id=f"a{i}"),
            ToolMessage(f"{path}:\n" + "y = 1\n" * read_lines, tool_call_id=f"r{i}", id=f"t{i}"),
            AIMessage(content, tool_calls=[write], id=f"b{i}"),
            ToolMessage(f"wrote {path}", tool_call_id=f"w{i}", id=f"s{i}"),
        ]
    return record


def read_loop(rounds: int, size: int = 3_000, *, files: int = 40) -> list[BaseMessage]:
    """One directive, then ``rounds`` reads of ``size`` tokens each (``files`` paths in
    turn): the long single-directive tool loop the clear tier is built for."""
    record: list[BaseMessage] = [HumanMessage("Port the parser to Rust.", id="u0")]
    for i in range(rounds):
        call = {"name": "read_file", "args": {"path": f"f{i % files}.py"}, "id": f"c{i}"}
        record += [
            AIMessage(f"step {i}", tool_calls=[call], id=f"a{i}"),
            ToolMessage(f"{i}:" + "x" * (4 * size), tool_call_id=f"c{i}", id=f"t{i}"),
        ]
    return record


def anthropic_native(record: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``record`` as an Anthropic-native history holds it (``convert_to_messages`` of
    Messages-API dicts): each call a ``tool_use`` block with no ``tool_calls``, and each
    run of results one user turn of ``tool_result`` blocks (``is_error`` for a failure)."""
    out: list[BaseMessage] = []
    for m in record:
        if isinstance(m, AIMessage) and m.tool_calls:
            text = [{"type": "text", "text": m.text}] if m.text else []
            uses = [
                {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]}
                for c in m.tool_calls
            ]
            out.append(AIMessage([*text, *uses], id=m.id))
        elif isinstance(m, ToolMessage):
            block = {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id,
                "content": m.content,
                **({"is_error": True} if m.status == "error" else {}),
            }
            if out and is_tool_result_turn(out[-1]):
                out[-1] = HumanMessage([*out[-1].content, block], id=out[-1].id)
            else:
                out.append(HumanMessage([block], id=m.id))
        else:
            out.append(m)
    return out


def working_turn(
    prefix: list[BaseMessage],
    state: Mapping[str, object] | None,
    *,
    budget: int = 64_000,
    max_messages: int = 400,
    **options: int,
) -> WorkingTranscript:
    """One turn of ``build_working_transcript`` over ``prefix`` with the carried ``state``
    (``FoldState.to_dict()``), a 400-character scripted note and a roomy message cap."""
    from langchain_builderforce_memory.transcript.fold import build_working_transcript

    return build_working_transcript(
        prefix,
        memo=state,
        summarizer=ScriptedSummarizer("n" * 400),
        max_tokens=budget,
        max_messages=max_messages,
        **options,  # type: ignore[arg-type]
    )


def replay_turns(
    record: list[BaseMessage], max_tokens: int, **options: int | bool
) -> list[tuple[WorkingTranscript, int]]:
    """Each model turn of ``record`` (once every call is answered) through
    ``build_working_transcript``, the state and the facts carried, a ~300-token scripted
    note: each turn's result with the record's tokens at that turn."""
    from langchain_builderforce_memory.facts import RecordFacts
    from langchain_builderforce_memory.tokens import ApproximateTokenCounter
    from langchain_builderforce_memory.transcript.fold import build_working_transcript

    facts = RecordFacts(ApproximateTokenCounter())
    state = None
    out = []
    for n in range(2, len(record) + 1):
        if n < len(record) and record[n].type != "ai":
            continue  # a model turn starts here only once every call is answered
        turn = build_working_transcript(
            record[:n],
            memo=state,
            summarizer=ScriptedSummarizer("note " * 300),
            max_tokens=max_tokens,
            facts=facts,
            **options,  # type: ignore[arg-type]
        )
        state = turn.state
        out.append((turn, facts.sums[-1]))
    return out


def pdf_with_object_streams(pages: int) -> bytes:
    """A valid PDF 1.5 whose catalog, page tree and pages all sit in one compressed object
    stream, with an xref stream (pdfTeX's and Chrome's layout): no ``/Type /Page`` shows
    in its raw bytes."""
    import zlib

    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages)).encode()
    objects.append(b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(pages).encode() + b" >>")
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * pages
    header, body, offset = [], b"", 0
    for number, obj in enumerate(objects, start=1):
        header.append(f"{number} {offset}")
        body += obj + b"\n"
        offset += len(obj) + 1
    head = (" ".join(header) + "\n").encode()
    packed = zlib.compress(head + body)
    stm = len(objects) + 1
    out = b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n"
    stm_at = len(out)
    out += (
        (
            f"{stm} 0 obj\n<< /Type /ObjStm /N {len(objects)} /First {len(head)} "
            f"/Filter /FlateDecode /Length {len(packed)} >>\nstream\n"
        ).encode()
        + packed
        + b"\nendstream\nendobj\n"
    )
    xref_at = len(out)
    rows = [bytes([0]) + (0).to_bytes(4, "big") + (65535).to_bytes(2, "big")]
    rows += [
        bytes([2]) + stm.to_bytes(4, "big") + i.to_bytes(2, "big") for i in range(len(objects))
    ]
    rows += [bytes([1]) + stm_at.to_bytes(4, "big") + (0).to_bytes(2, "big")]
    rows += [bytes([1]) + xref_at.to_bytes(4, "big") + (0).to_bytes(2, "big")]
    table = b"".join(rows)
    out += (
        (
            f"{stm + 1} 0 obj\n<< /Type /XRef /Size {stm + 2} /W [1 4 2] /Root 1 0 R "
            f"/Length {len(table)} >>\nstream\n"
        ).encode()
        + table
        + b"\nendstream\nendobj\n"
    )
    return out + f"startxref\n{xref_at}\n%%EOF\n".encode()


def wav_bytes(seconds: float, rate: int = 8_000) -> bytes:
    """A silent 16-bit mono PCM WAV file ``seconds`` long."""
    import io
    import wave

    buf = io.BytesIO()
    with wave.open(buf, "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(rate)
        clip.writeframes(bytes(2 * round(rate * seconds)))
    return buf.getvalue()


def mp4_bytes(seconds: float) -> bytes:
    """The boxes an MP4 reader needs for its length: ``ftyp``, then ``moov`` holding an
    ``mvhd`` (a millisecond timescale), then ``mdat`` (the frames: zeros here)."""
    import struct

    def box(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", 8 + len(payload)) + kind + payload

    times = struct.pack(">IIII", 0, 0, 1_000, round(seconds * 1_000))
    moov = box(b"moov", box(b"mvhd", bytes(4) + times + bytes(80)))
    return box(b"ftyp", b"isom\0\0\0\1isommp41") + moov + box(b"mdat", bytes(4_096))


def floor_tokens(record: Sequence[BaseMessage], counter: Any, *, extra: int = 0) -> int:
    """What a view of ``record`` must hold at the least: its leading system messages
    (plus ``extra``) and one human turn, the latest directive as it is when that is
    smaller than the elision stub (the view policy's floor)."""
    from langchain_builderforce_memory.messages import leading_system_count, role_of
    from langchain_builderforce_memory.tokens import count_tokens
    from langchain_builderforce_memory.transcript.elide import minimal_human_tokens

    lead = leading_system_count(record)
    system = count_tokens(list(record[:lead]), counter) + extra
    users = [m for m in record[lead:] if role_of(m) == "user"]
    floor = minimal_human_tokens(counter)
    if users:
        floor = min(floor, counter.count_message(users[-1]))
    return system + floor


def history_replay(
    record: Sequence[BaseMessage],
    history: BaseChatMessageHistory,
    provider: Callable[[Sequence[BaseMessage]], int],
) -> list[int]:
    """A recorded run replayed through a chat history as a chat app drives one.

    Before each assistant message the app adds what came since the last one, reads the
    view and "sends" it: ``provider`` counts it, and the answer is stored with that count
    as its ``usage_metadata["input_tokens"]`` (what a provider reports). Returns the
    provider's count of every view sent.
    """
    sent: list[int] = []
    pending: list[BaseMessage] = []
    for i, message in enumerate(record):
        if isinstance(message, AIMessage) and i > 0:
            history.add_messages(pending)
            n = provider(history.messages)
            sent.append(n)
            usage = {"input_tokens": n, "output_tokens": 1, "total_tokens": n + 1}
            pending = [message.model_copy(update={"usage_metadata": usage})]
        else:
            pending.append(message)
    return sent


def agent_views(
    counter: Any, **options: Any
) -> dict[str, Callable[[list[BaseMessage], int], list[BaseMessage]]]:
    """The view each agent-facing entry point sends for a record at a budget (the
    middleware's turn, the pre-model node, the chat history), counted with ``counter``
    (``options``: given to each, e.g. ``clear_edit_inputs=False``)."""
    from langchain_builderforce_memory.agents.core import MemoryCore
    from langchain_builderforce_memory.agents.driver import run_turn
    from langchain_builderforce_memory.agents.node import WorkingTranscriptNode
    from langchain_builderforce_memory.agents.policy import MemoryPolicy
    from langchain_builderforce_memory.history import CompactingChatMessageHistory

    def middleware(record: list[BaseMessage], budget: int) -> list[BaseMessage]:
        policy = MemoryPolicy(max_tokens=budget, **options)
        core = MemoryCore(policy, summarizer=ScriptedSummarizer(), token_counter=counter)
        return list(run_turn(core, record, {"messages": record}).messages)

    def node(record: list[BaseMessage], budget: int) -> list[BaseMessage]:
        node = WorkingTranscriptNode(
            ScriptedSummarizer(), max_tokens=budget, token_counter=counter, **options
        )
        return list(node.invoke({"messages": record})["llm_input_messages"])

    def history(record: list[BaseMessage], budget: int) -> list[BaseMessage]:
        history = CompactingChatMessageHistory(
            summarizer=ScriptedSummarizer(),
            max_tokens=budget,
            tail_tokens=budget // 2,
            token_counter=counter,
            **options,
        )
        history.add_messages(record)
        return history.messages

    return {"middleware": middleware, "node": node, "history": history}


def typed_model(script: Sequence[Any], llm_type: str) -> Any:
    """A scripted chat model whose ``_llm_type`` is ``llm_type``: what the adapters read to
    keep a provider's own limits (``"amazon_bedrock_converse_chat"``: langchain-aws's
    ``ChatBedrockConverse``; ``"openai-chat"``: ``ChatOpenAI``)."""
    from langchain_builderforce_memory.testing import ScriptedChatModel

    class TypedScriptedModel(ScriptedChatModel):
        @property
        def _llm_type(self) -> str:
            return llm_type

    return TypedScriptedModel(script=list(script))


def converse_model(script: Sequence[Any]) -> Any:
    """A scripted chat model that reads as ``ChatBedrockConverse`` (see :func:`typed_model`)."""
    return typed_model(script, "amazon_bedrock_converse_chat")
