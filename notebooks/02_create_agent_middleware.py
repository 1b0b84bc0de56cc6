# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 02 · `create_agent` with `BuilderforceMemoryMiddleware`
#
# **What this shows.** The package in one line of a LangChain v1 agent: a
# scripted coding agent built with `create_agent`, the middleware, and a
# `SqliteSaver` checkpointer. We stream the middleware's **fold events** as they
# happen, look at exactly what the model was sent (system prompt, memory note,
# restated directive, verbatim tail, and the **brief** last), then **resume the
# thread** from the SQLite file in a fresh agent: the memo and the working
# memory come back with it, so nothing is re-summarized and nothing forgotten.
#
# **Why.** The record in the agent's state is never shrunk; only the model's
# view is. The small state the view needs (the memo, the working memory) lives in
# the graph state, where the checkpointer already persists everything else.

# %%
import importlib.util
import os


def real_model():
    """A real chat model when its API key AND package are present; else None (offline)."""
    if os.environ.get("BFMEM_NOTEBOOKS_OFFLINE"):
        return None
    if os.environ.get("OPENAI_API_KEY") and importlib.util.find_spec("langchain_openai"):
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model="gpt-4o-mini")
    if os.environ.get("ANTHROPIC_API_KEY") and importlib.util.find_spec("langchain_anthropic"):
        from langchain_anthropic import ChatAnthropic

        return ChatAnthropic(model="claude-3-5-haiku-latest")
    return None


found = real_model()
print("real provider:", type(found).__name__ if found else "none (offline, scripted)")

# %%
import re


def note_writer(prompt):
    """A deterministic stand-in for a summarizer model: the files the folded part touched.

    It is handed the summary prompt: [SystemMessage(instructions), HumanMessage(transcript)].
    """
    text = prompt[-1].content
    files = sorted(set(re.findall(r"src/app/\w+\.py", text)))
    # The held note comes first in a re-fold, so its task carries over.
    tasks = re.findall(r"(?:user|Task): (.+)", text)
    return (
        f"Task: {tasks[-1] if tasks else 'unknown'}\n"
        f"Files read or edited so far ({len(files)}): {', '.join(files)}"
    )


# %%
import sqlite3
import tempfile
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_builderforce_memory import (
    BuilderforceMemoryMiddleware,
    count_tokens,
    request_problems,
)
from langchain_builderforce_memory.testing import (
    ScriptedChatModel,
    coding_agent_script,
    coding_tools,
)

SYSTEM = "You are a careful coding agent."
run = coding_agent_script(turns=120, directives=4)
tools = coding_tools(min_tokens=200, max_tokens=1_500)
summarizer_calls = []


def counted_note_writer(prompt):
    summarizer_calls.append(prompt)
    return note_writer(prompt)


# Any chat model works as the summarizer (give it a cheap one); offline, a function.
summarizer = real_model() or counted_note_writer


def memory_middleware():
    return BuilderforceMemoryMiddleware(summarizer, max_tokens=16_000, tail_tokens=10_000)


workdir = tempfile.TemporaryDirectory()  # removed when the kernel exits
db = Path(workdir.name) / "agent.sqlite"
first_half = sum(run.calls_per_directive[:2])
model = ScriptedChatModel(script=run.script[:first_half], model_name="scripted-coder")
agent = create_agent(
    model,
    tools,
    system_prompt=SYSTEM,
    middleware=[memory_middleware()],
    checkpointer=SqliteSaver(sqlite3.connect(db, check_same_thread=False)),
)
config = {"configurable": {"thread_id": "ticket-42"}, "recursion_limit": 1_000}

# %% [markdown]
# ## Stream the run: fold events as they happen
#
# `stream_mode="custom"` carries the middleware's events
# (`{"builderforce_memory": "fold", ...}`); the summarizer call itself is
# tagged `nostream`, so it never streams into the user's output.

# %%
calls = 0  # model calls finished: the "updates" stream reports each one after its events
for directive in run.directives[:2]:
    print(f"> {directive}")
    inputs = {"messages": [HumanMessage(directive)]}
    for mode, chunk in agent.stream(inputs, config, stream_mode=["custom", "updates"]):
        if mode == "custom":
            print(f"  model call {calls + 1}: {chunk}")
        elif "model" in chunk:
            calls += 1
print(f"{len(model.requests)} model calls, {len(summarizer_calls)} summarizer calls")

# %% [markdown]
# ## What the model was sent last
#
# System prompt, the memory note (a stamped human message), the active
# directive restated, the verbatim tail, and the brief as the volatile tail:
# ONE stamped message, last, never written into the record.

# %%
last = model.requests[-1]
assert request_problems(last) == []
for m in [*last[:3], "...", *last[-2:]]:
    if m == "...":
        print(f"  ... {len(last) - 5} more")
        continue
    kind = m.additional_kwargs.get("builderforce_memory", {}).get("kind", "")
    text = " ".join(m.text.split())
    print(f"  {m.type:>6} {kind:>13}  {text[:90]}")
state = agent.get_state(config).values
record = state["messages"]
print(
    f"\nrecord in state: {len(record)} messages, {count_tokens(record):,} tokens; "
    f"sent: {count_tokens(last):,} tokens"
)
print("memo covers", state["builderforce_memo"]["covered_end"], "messages")
print("\n" + last[-1].text)

# %% [markdown]
# ## Resume the thread in a fresh agent
#
# A new process: a new connection to the same SQLite file, a new agent, the same
# thread id. The memo and the working memory come back from the checkpoint, so
# the first request after resuming reuses the held note instead of summarizing
# the whole history again.

# %%
calls_before = len(summarizer_calls)
note_before = last[1].text  # the memory note of the last request before resuming
resumed_model = ScriptedChatModel(script=run.script[first_half:])
resumed = create_agent(
    resumed_model,
    tools,
    system_prompt=SYSTEM,
    middleware=[memory_middleware()],
    checkpointer=SqliteSaver(sqlite3.connect(db, check_same_thread=False)),
)
for directive in run.directives[2:]:
    resumed.invoke({"messages": [HumanMessage(directive)]}, config)
first = resumed_model.requests[0]
print("the first request after resuming has that note:", first[1].text == note_before)
print(
    f"{len(resumed_model.requests)} more model calls, "
    f"{len(summarizer_calls) - calls_before} more summarizer calls"
)
print("record now:", len(resumed.get_state(config).values["messages"]), "messages")
