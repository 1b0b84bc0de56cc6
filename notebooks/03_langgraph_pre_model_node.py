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
# # 03 · LangGraph: a pre-model node
#
# **What this shows.** `WorkingTranscriptNode` in the two places LangGraph users
# put a pre-model step: a hand-written `StateGraph` (memory node → model node →
# tools → memory node ...) and `create_react_agent(pre_model_hook=...)`. The node
# writes the view to `llm_input_messages` and its memo / working memory to their
# own state keys; `messages`, the record, is never rewritten.
#
# **Why.** Not every graph is a `create_agent` agent. The node needs only
# langchain-core and langgraph, and the model node decides what to send: the
# view, not the record.

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
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langchain_builderforce_memory import (
    WorkingTranscriptNode,
    WorkingTranscriptState,
    count_tokens,
    request_problems,
)
from langchain_builderforce_memory.testing import (
    ScriptedChatModel,
    coding_agent_script,
    coding_tools,
)

SYSTEM = SystemMessage("You are a careful coding agent.")
run = coding_agent_script(turns=80, directives=2)
tools = coding_tools(min_tokens=200, max_tokens=1_500)
summarizer = real_model() or note_writer

# %% [markdown]
# ## A hand-written `StateGraph`
#
# The memory node runs before every model call; the model node sends the system
# prompt and `state["llm_input_messages"]`.

# %%
model = ScriptedChatModel(script=run.script, model_name="scripted-coder")
bound = model.bind_tools(tools)
memory = WorkingTranscriptNode(
    summarizer, system_prompt=SYSTEM, max_tokens=16_000, tail_tokens=10_000
)


def call_model(state):
    return {"messages": [bound.invoke([SYSTEM, *state["llm_input_messages"]])]}


builder = StateGraph(WorkingTranscriptState)
builder.add_node("memory", memory)
builder.add_node("model", call_model)
builder.add_node("tools", ToolNode(tools))
builder.add_edge(START, "memory")
builder.add_edge("memory", "model")
builder.add_conditional_edges("model", tools_condition)
builder.add_edge("tools", "memory")
graph = builder.compile(checkpointer=InMemorySaver())
print(graph.get_graph().draw_mermaid())

# %%
config = {"configurable": {"thread_id": "graph-1"}, "recursion_limit": 1_000}
calls = 0  # model calls finished: the "updates" stream reports each one after its events
for directive in run.directives:
    inputs = {"messages": [HumanMessage(directive)]}
    for mode, chunk in graph.stream(inputs, config, stream_mode=["custom", "updates"]):
        if mode == "custom":
            print(f"  model call {calls + 1}: {chunk}")
        elif "model" in chunk:
            calls += 1
state = graph.get_state(config).values
record = state["messages"]
print(f"record: {len(record)} messages, {count_tokens(record):,} tokens")
print(
    f"last view: {len(state['llm_input_messages'])} messages, "
    f"{count_tokens(state['llm_input_messages']):,} tokens; memo covers "
    f"{state['builderforce_memo']['covered_end']}"
)
assert all(request_problems(r) == [] for r in model.requests)
assert max(count_tokens(r) for r in model.requests) <= 16_000

# %% [markdown]
# ## `create_react_agent(pre_model_hook=node)`
#
# `create_react_agent` sends `llm_input_messages` instead of `messages` when a
# pre-model hook returns it. It is deprecated in LangGraph v1 (removal in v2.0)
# in favour of `langchain.agents.create_agent` with the middleware (notebook 02),
# but still widely deployed.

# %%
import warnings

from langgraph.prebuilt import create_react_agent

react_model = ScriptedChatModel(script=run.script, model_name="scripted-coder")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the deprecation notice for create_react_agent
    agent = create_react_agent(
        react_model,
        tools,
        prompt=SYSTEM,
        pre_model_hook=WorkingTranscriptNode(
            summarizer, system_prompt=SYSTEM, max_tokens=16_000, tail_tokens=10_000
        ),
        state_schema=WorkingTranscriptState,
        checkpointer=InMemorySaver(),
    )
config = {"configurable": {"thread_id": "react-1"}, "recursion_limit": 1_000}
for directive in run.directives:
    agent.invoke({"messages": [HumanMessage(directive)]}, config)
state = agent.get_state(config).values
sizes = [count_tokens(r) for r in react_model.requests]
print(
    f"{len(sizes)} model calls; largest request {max(sizes):,} tokens; "
    f"record {count_tokens(state['messages']):,} tokens"
)
# The same run, the same views: both ways in share one implementation.
assert sizes == [count_tokens(r) for r in model.requests]
