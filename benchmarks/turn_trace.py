"""How much of the package one middleware turn walks through, and what importing it loads.

Plays ``--warm`` calls of the standard coding run through ``create_agent`` with
:class:`BuilderforceMemoryMiddleware`, then traces the next turn's ``wrap_model_call``
(the model call itself excluded) with :func:`sys.setprofile`, and reports:

- **files entered**: the package files whose functions the turn calls;
- **returns**: how often the turn goes back to a file it had already left (a turn that reads
  as its tiers enters each file once, or a few times);
- **modules loaded by import**: what ``import langchain_builderforce_memory`` followed by
  the middleware's import brings in (measured in a fresh interpreter with
  ``python -X importtime``), and their lines.

Run from the project root (prints Markdown):

    python benchmarks/turn_trace.py [--warm 100]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

import langchain_builderforce_memory
from langchain_builderforce_memory import BuilderforceMemoryMiddleware
from langchain_builderforce_memory.testing import (
    ScriptedChatModel,
    coding_agent_script,
    coding_tools,
)

PACKAGE = Path(langchain_builderforce_memory.__file__).resolve().parent
SKIP = {PACKAGE / "testing.py"}
"""The scripted model and tools are the harness, not the turn."""


class Tracer:
    """The package files a stretch of code calls into, in order of entry."""

    def __init__(self) -> None:
        self.entries: list[str] = []
        self.on = False

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if event != "call" or not self.on:
            return
        path = Path(frame.f_code.co_filename)
        if path.is_relative_to(PACKAGE) and path not in SKIP:
            name = str(path.relative_to(PACKAGE))
            if not self.entries or self.entries[-1] != name:
                self.entries.append(name)


class TracedMiddleware(BuilderforceMemoryMiddleware):
    """The middleware, with its ``trace_at``-th turn traced (the model call excluded)."""

    tracer = Tracer()
    trace_at = 0
    turns = 0

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> Any:
        self.turns += 1
        if self.turns != self.trace_at:
            return super().wrap_model_call(request, handler)
        tracer = self.tracer

        def untraced(req: ModelRequest[Any]) -> ModelResponse[Any]:
            tracer.on = False
            try:
                return handler(req)
            finally:
                tracer.on = True

        sys.setprofile(tracer)
        tracer.on = True
        try:
            return super().wrap_model_call(request, untraced)
        finally:
            tracer.on = False
            sys.setprofile(None)


def trace_turn(warm: int, budget: int) -> list[str]:
    """The files, in entry order, of the turn after ``warm`` model calls."""
    run = coding_agent_script(turns=warm + 1, directives=1)
    middleware = TracedMiddleware(lambda prompt: "a note", max_tokens=budget)
    middleware.trace_at = warm + 1
    model = ScriptedChatModel(script=list(run.script))
    agent = create_agent(
        model, coding_tools(), middleware=[middleware], checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "t"}, "recursion_limit": 10_000}
    agent.invoke({"messages": [HumanMessage(run.directives[0])]}, config)
    return middleware.tracer.entries


IMPORT = "import langchain_builderforce_memory.agents.middleware"


def imported_modules() -> list[str]:
    """The package modules a fresh interpreter loads to import the middleware."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", IMPORT],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    names = []
    for line in out.splitlines():
        name = line.rsplit("|", 1)[-1].strip()
        if name.startswith("langchain_builderforce_memory"):
            names.append(name)
    return names


def _lines(module: str) -> int:
    rel = Path(*module.split(".")[1:])
    path = PACKAGE / f"{rel}.py"
    if rel == Path() or not path.exists():
        path = PACKAGE / rel / "__init__.py"
    return len(path.read_text(encoding="utf-8").splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--warm", type=int, default=100)
    parser.add_argument("--budget", type=int, default=64_000)
    args = parser.parse_args()
    entries = trace_turn(args.warm, args.budget)
    files = Counter(entries)
    returns = len(entries) - len(files)
    package_files = sum(1 for _ in PACKAGE.rglob("*.py"))
    modules = imported_modules()
    print(f"Command: `python benchmarks/turn_trace.py --warm {args.warm} --budget {args.budget}`")
    print()
    print("| measure | value |")
    print("|---|---:|")
    print(f"| package files entered by one turn (of {package_files}) | {len(files)} |")
    print(f"| returns to a file already left | {returns} |")
    entered = sum(len((PACKAGE / f).read_text(encoding="utf-8").splitlines()) for f in files)
    print(f"| lines of the files entered | {entered:,} |")
    print(f"| package modules loaded by `{IMPORT}` | {len(modules)} |")
    print(f"| their lines | {sum(_lines(m) for m in modules):,} |")
    print()
    print("| file | entries |")
    print("|---|---:|")
    for name, n in files.most_common():
        print(f"| {name} | {n} |")


if __name__ == "__main__":
    main()
