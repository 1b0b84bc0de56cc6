"""Window a long generated coding transcript and print what the model would be sent.

Run: python examples/window_demo.py [--turns N] [--budget TOKENS]
"""

from __future__ import annotations

import argparse
import itertools

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_builderforce_memory import count_tokens, request_problems, windowed
from langchain_builderforce_memory.testing import coding_agent_script, coding_tools


def main() -> None:
    """Run the generated transcript through the window and print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--budget", type=int, default=64_000)
    args = parser.parse_args()

    run = coding_agent_script(turns=args.turns, directives=4)
    tools = {t.name: t for t in coding_tools()}
    record: list[BaseMessage] = [SystemMessage("You are a careful coding agent.")]
    fronts: list[str | None] = []
    sent: list[int] = []
    step = iter(run.script)
    for d, count in enumerate(run.calls_per_directive):
        record.append(HumanMessage(run.directives[d]))
        for _ in range(count):
            view = windowed(record, max_tokens=args.budget)
            assert request_problems(view) == []
            sent.append(count_tokens(view))
            fronts.append(view[1].id or view[1].text[:40])
            answer = next(step)
            record.append(answer)
            for call in answer.tool_calls:
                output = tools[call["name"]].invoke(call["args"])
                record.append(ToolMessage(str(output), tool_call_id=str(call["id"])))

    reused = sum(1 for a, b in itertools.pairwise(fronts) if a == b) / max(1, len(fronts) - 1)
    full = count_tokens(record)
    print(f"turns: {len(sent)}   record: {len(record)} messages, {full:,} tokens")
    print(
        f"sent per request: max {max(sent):,}  mean {sum(sent) // len(sent):,}"
        f"  (budget {args.budget:,})"
    )
    print(f"requests whose front (cached prefix) matched the previous one: {reused:.0%}")
    view = windowed(record, max_tokens=args.budget)
    print(f"last view: {len(view)} messages; starts with: {view[1].text[:60]!r}")


if __name__ == "__main__":
    main()
