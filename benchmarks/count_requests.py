"""What ``token_counter=`` a server-side counter costs: the count requests of a tool loop.

``ChatAnthropic``'s ``get_num_tokens_from_messages`` is a request to Anthropic's
``messages/count_tokens``. Here a real ``ChatAnthropic`` is given an offline stand-in of
that endpoint (``tests.provider_shapes.CountTokensEndpoint``: it refuses what the Messages
API refuses and counts a quarter of the payload's JSON), and a scripted tool loop runs
through ``create_agent`` with the middleware counting with it. Reported: the requests
made before each model call, their total, and the model calls. The requests a turn makes
are the new messages it counts; a fold turn also counts the excerpts it cuts for the
summarizer.

Run: python benchmarks/count_requests.py [--calls 60] [--budget 8000]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_builderforce_memory.testing import ScriptedChatModel
from tests.helpers import build_agent
from tests.provider_shapes import counting_claude


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}\n" + "line of code here\n" * 150


def main() -> None:
    """Run the loop and print the requests made before each model call."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--budget", type=int, default=8_000)
    args = parser.parse_args()
    script: list[Any] = [
        AIMessage(
            "", tool_calls=[{"name": "read_file", "args": {"path": f"f{i}.py"}, "id": f"t{i}"}]
        )
        for i in range(args.calls)
    ]
    model = ScriptedChatModel(script=[*script, "done"])
    counter, endpoint = counting_claude()
    asked: list[int] = []
    count = endpoint.count_tokens

    def counted(**kwargs: Any) -> Any:
        asked.append(len(model.requests))  # the model calls made before this request
        return count(**kwargs)

    endpoint.count_tokens = counted  # type: ignore[method-assign]
    summarizer = ScriptedChatModel(script=["a note " * 50] * args.calls)
    agent = build_agent(
        "create_agent",
        model,
        [read_file],
        checkpointer=InMemorySaver(),
        token_counter=counter,
        max_tokens=args.budget,
        summarizer=summarizer,
        clear_tool_results=True,
    )
    config: Any = {"configurable": {"thread_id": "t"}, "recursion_limit": 4 * args.calls + 10}
    agent.invoke({"messages": [HumanMessage("Read every file.")]}, config)
    per_call = Counter(asked)
    print(f"model calls: {len(model.requests)}; count requests: {len(asked)}")
    print("before each model call:", [per_call[i] for i in range(len(model.requests))])


if __name__ == "__main__":
    main()
