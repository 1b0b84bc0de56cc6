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
# # 05 · Working memory and code maps
#
# **What this shows.** `WorkingMemoryCallbackHandler` turning an agent's tool
# calls into a working memory (files read, edited, searched), the **brief** it
# restates to the model, consolidation of the finished run into a **code map**
# in a `SqliteStore`, and recall of that map when the next run starts on the
# same area.
#
# **Why.** A model's reasoning is not carried into its next turn, and old tool
# results are windowed or folded away: by turn forty a run cannot see what it
# concluded at turn ten and re-reads the same files. The brief is the run's own
# record, sent with every request (never stored in the transcript). A code map
# is what survives the run: where the code for that area lives, so the next run
# opens the right files first instead of searching again.

# %%
import sqlite3
import tempfile
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.sqlite import SqliteStore

from langchain_builderforce_memory import CodeMapStore, WorkingMemoryCallbackHandler
from langchain_builderforce_memory.testing import (
    ScriptedChatModel,
    coding_agent_script,
    coding_tools,
)

run = coding_agent_script(turns=24, directives=1, files=8)
model = ScriptedChatModel(script=run.script)
tools = coding_tools(min_tokens=200, max_tokens=800)
agent = create_agent(model, tools, checkpointer=InMemorySaver())
handler = WorkingMemoryCallbackHandler()
config = {"configurable": {"thread_id": "run-1"}, "callbacks": [handler]}
agent.invoke({"messages": [HumanMessage(run.directives[0])]}, config)
memory = handler.memory_for("run-1")
memory.set_task(run.directives[0])  # the handler sees tools; the task is the host's
print(memory)
# The snapshot is plain JSON (what a checkpointer stores). Its lists are in the order the
# tool calls finished, which varies between runs when calls run in parallel: sorted here.
print({k: sorted(v) if isinstance(v, list) else v for k, v in memory.snapshot.items()})

# %% [markdown]
# ## The brief
#
# What the run has already established, ranked by use. It is `None` until the
# run has done enough for a restatement to be worth its tokens. An agent adapter
# sends it as the request's **volatile tail**: one stamped user message, last,
# built per request and never written into the record, so it neither grows the
# history nor breaks the prompt cache.

# %%
from langchain_builderforce_memory import volatile_tail

print(memory.brief())
tail = volatile_tail([memory.brief()])
print("\nsent as:", type(tail).__name__, tail.additional_kwargs)

# %% [markdown]
# ## Consolidate into a `SqliteStore`, recall next time
#
# When the run ends, its memory is consolidated into one map per code area and
# merged into what earlier runs on that area stored. Maps are scoped (here by
# user and repository): a scope reads only its own maps.

# %%
workdir = tempfile.TemporaryDirectory()  # removed when the kernel exits
db = Path(workdir.name) / "code_maps.sqlite"
store = SqliteStore(sqlite3.connect(db, check_same_thread=False, isolation_level=None))
store.setup()
maps = CodeMapStore(store)
saved = maps.save(memory, scope=("alice", "shop-repo"))
print("stored under", maps.namespace_for(("alice", "shop-repo")), "key", saved.key)
print(saved.content)

# %%
# A new process, a new run on the same area: open the store again and ask.
connection = sqlite3.connect(db, check_same_thread=False, isolation_level=None)
maps_again = CodeMapStore(SqliteStore(connection))
task = "Fix the budget bug in src/app and add a test."
found = maps_again.maps_for(task, scope=("alice", "shop-repo"))
print([m.area for m in found])
print("another user sees:", maps_again.maps_for(task, scope=("bob", "shop-repo")))
recall = maps_again.recall_for(("alice", "shop-repo"))
print("\nrecall(task, 400) ->\n" + recall(task, 400))
assert found
assert not maps_again.maps_for(task, scope=("bob", "shop-repo"))
