"""The demo's yardstick: the same scripted run through LangChain's ``SummarizationMiddleware``.

``bfmem demo`` leads with what matters to a user choosing a context policy: what the run
costs with this package against what it costs with the summarizer LangChain ships, on the
same script, tools, budget and fake summarizer. Cost is counted the way a provider bills it:
input tokens with the prefix the previous request shared at a tenth (a prompt cache), plus
every token the summarizer was sent and wrote, at the agent's rate (the conservative case:
a cheaper summarizer model only helps the one that calls it more).

The peer is configured as ``benchmarks/contenders.py`` configures it: triggered at the
budget less the system prompt, keeping half of that, its summarizer's input untrimmed
(``trim_tokens_to_summarize=None``; at its default it summarizes nothing on a tool loop).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, TypeAlias

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    convert_to_messages,
)
from langchain_core.runnables import RunnableConfig

from langchain_builderforce_memory.cli.report import missing, reused_prefix_tokens
from langchain_builderforce_memory.cli.result import CACHED_SHARE, PeerRun
from langchain_builderforce_memory.tokens import TokenCounter, count_tokens

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from langchain_builderforce_memory.testing import ScriptedChatModel, ScriptStep

__all__ = ["NoteWriter", "billed_tokens", "run_peer", "summarizer_tokens"]

NoteWriter: TypeAlias = Callable[[list[BaseMessage]], AIMessage]
"""The scripted summarizer's step: the prompt it was sent -> its note."""


def billed_tokens(requests: Sequence[Sequence[BaseMessage]], counter: TokenCounter) -> int:
    """Input tokens of ``requests``, each one's prefix shared with the one before at a tenth."""
    total = 0.0
    previous: Sequence[BaseMessage] = []
    for request in requests:
        shared = reused_prefix_tokens(previous, request, counter)
        total += count_tokens(request, counter) - (1 - CACHED_SHARE) * shared
        previous = request
    return round(total)


def summarizer_tokens(
    summarizer: ScriptedChatModel, counter: TokenCounter, write: NoteWriter
) -> tuple[int, int]:
    """``(input, output)`` tokens of a scripted summarizer's calls (``write`` wrote each)."""
    sent = summarizer.requests
    written = sum(counter.count_text(write(request).text) for request in sent)
    return sum(count_tokens(request, counter) for request in sent), written


def run_peer(
    *,
    script: Iterable[ScriptStep],
    tools: Sequence[BaseTool],
    directives: Sequence[str],
    budget: int,
    system: SystemMessage,
    counter: TokenCounter,
    write: NoteWriter,
) -> PeerRun:
    """Play ``script`` through ``create_agent`` + ``SummarizationMiddleware``; what it cost."""
    try:
        from langchain.agents import create_agent
        from langchain.agents.middleware import SummarizationMiddleware
        from langgraph.checkpoint.memory import InMemorySaver
    except ImportError as exc:
        raise missing("langchain", exc) from exc
    from langchain_builderforce_memory.testing import ScriptedChatModel

    steps = list(script)
    model = ScriptedChatModel(script=steps, model_name="scripted-coder")
    summarizer = ScriptedChatModel(script=[write] * len(steps), model_name="scripted-summarizer")
    room = budget - counter.count_message(system)
    middleware = SummarizationMiddleware(
        model,
        summarizer=summarizer,
        trigger=("tokens", room),
        keep=("tokens", room // 2),
        token_counter=lambda messages: count_tokens(convert_to_messages(messages), counter),
        trim_tokens_to_summarize=None,
    )
    agent = create_agent(
        model, tools, system_prompt=system, middleware=[middleware], checkpointer=InMemorySaver()
    )
    config: RunnableConfig = {"configurable": {"thread_id": "peer"}, "recursion_limit": 100_000}
    for directive in directives:
        agent.invoke({"messages": [HumanMessage(directive)]}, config)
    summarized_in, summarized_out = summarizer_tokens(summarizer, counter, write)
    return PeerRun(
        name="SummarizationMiddleware (trim_tokens_to_summarize=None)",
        billed_tokens=billed_tokens(model.requests, counter),
        summarizer_calls=len(summarizer.requests),
        summarizer_input_tokens=summarized_in,
        summarizer_output_tokens=summarized_out,
        max_sent_tokens=max((count_tokens(r, counter) for r in model.requests), default=0),
    )
