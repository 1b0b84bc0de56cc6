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
# # 04 · Hand-off to a smaller model
#
# **What this shows.** A long run's transcript packed for a model with an 8k
# window with `pack_handoff`: the system prompt, ONE note standing in for the
# dropped middle, the latest directive re-injected, and the longest verbatim
# tail of whole tool-call units that fits; then the same packing done
# automatically when `ModelFallbackMiddleware` falls back from a large model to
# a small one.
#
# **Why.** A fallback after an error (or a router picking a cheaper model)
# resends the SAME request, and a smaller window rejects it: the fallback fails
# exactly when it is needed. The packer fits the request to the model that will
# serve it, and never sends a tool result without its call (or a call without
# its results), which strict providers reject.

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
from langchain_core.messages import HumanMessage, SystemMessage

from langchain_builderforce_memory.testing import coding_tools, coding_transcript

# The record of an offline scripted coding run: what a graph's state would hold.
record = [
    SystemMessage("You are a careful coding agent."),
    *coding_transcript(turns=60, min_tokens=300, max_tokens=2_500),
]


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
from langchain_builderforce_memory import (
    count_tokens,
    handoff_budget_for_model,
    pack_handoff,
    request_problems,
)
from langchain_builderforce_memory.testing import ScriptedChatModel

small = ScriptedChatModel(
    script=["Picking up from the note: the fix is in src/app/window.py."],
    model_name="small-8k",
    profile={"max_input_tokens": 8_192, "max_output_tokens": 1_024},
)
budget = handoff_budget_for_model(small, tools=coding_tools())
print(f"record: {len(record)} messages, {count_tokens(record):,} tokens")
print(f"budget for small-8k: {budget:,} tokens (8,192 less its reply and the tools)")

# %% [markdown]
# ## Pack it
#
# `pack_handoff` never mutates the record: the kept messages are the same
# objects, plus at most one stamped note. With a summarizer the note carries a
# summary of what was dropped; without one (or when it fails) a recall block,
# else an elision marker that says how many messages were left out.

# %%
pack = pack_handoff(
    record,
    target_context_tokens=budget,
    reserve_output_tokens=0,
    from_model="big-128k",
    to_model="small-8k",
    summarizer=real_model() or note_writer,
)
print(
    f"fits: {pack.fits}; {pack.estimated_tokens:,} tokens in {len(pack.messages)} "
    f"messages; {pack.dropped} dropped behind the note (summarized: {pack.summarized})"
)
assert pack.fits
assert pack.estimated_tokens <= budget
assert request_problems(pack.messages) == []
for m in pack.messages:
    text = " ".join(m.text.split())
    calls = [c["name"] for c in getattr(m, "tool_calls", [])]
    called = f"calls {calls} " if calls else ""
    print(f"  {m.type:>6} {count_tokens([m]):>5,}  {called}{text[:80]}")

plain = pack_handoff(record, target_context_tokens=budget, reserve_output_tokens=0)
print("\nwithout a summarizer the note is:", repr(plain.messages[1].content))

# %% [markdown]
# ## The same, automatically: `ModelFallbackMiddleware`
#
# The primary model fails (here it always raises, standing in for an outage or
# a rate limit); `ModelFallbackMiddleware` retries with the 8k model. Listed
# AFTER the fallback middleware, `BuilderforceMemoryMiddleware` runs inside each
# attempt, sees which model will serve it, reads that model's window from its
# `profile`, and packs the view to fit.

# %%
from langchain.agents import create_agent
from langchain.agents.middleware import ModelFallbackMiddleware
from langgraph.checkpoint.memory import InMemorySaver

from langchain_builderforce_memory import BuilderforceMemoryMiddleware

primary = ScriptedChatModel(
    fail_with=RuntimeError("503 overloaded"),
    model_name="big-128k",
    profile={"max_input_tokens": 128_000, "max_output_tokens": 8_192},
)
small = ScriptedChatModel(
    script=["Resuming: the off-by-one is fixed in src/app/window.py."],
    model_name="small-8k",
    profile={"max_input_tokens": 8_192, "max_output_tokens": 1_024},
)
agent = create_agent(
    primary,
    coding_tools(),
    system_prompt="You are a careful coding agent.",
    middleware=[
        ModelFallbackMiddleware(small),  # outermost: each attempt goes through ...
        BuilderforceMemoryMiddleware(real_model() or note_writer),  # ... this
    ],
    checkpointer=InMemorySaver(),
)
config = {"configurable": {"thread_id": "handoff"}}
# The thread already holds the long run (as if the big model had done it).
agent.update_state(config, {"messages": record[1:]})
events = []
inputs = {"messages": [HumanMessage("Continue: finish the fix.")]}
for mode, chunk in agent.stream(inputs, config, stream_mode=["custom", "updates"]):
    if mode == "custom":
        events.append(chunk)
sent = small.requests[-1]
print(
    f"primary tried {len(primary.requests)} time(s); small-8k was sent {len(sent)} "
    f"messages, {count_tokens(sent):,} tokens (the record: {count_tokens(record):,})"
)
for event in events:
    print(" ", event)
assert count_tokens(sent) <= 8_192
assert request_problems(sent) == []
