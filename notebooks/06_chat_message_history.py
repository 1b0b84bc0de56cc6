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
# # 06 · A compacting chat message history
#
# **What this shows.** `CompactingChatMessageHistory` wrapping an ordinary
# `BaseChatMessageHistory` behind `RunnableWithMessageHistory`: the stored
# record only grows, while what the chain READS (and so what the model is sent)
# is the windowed / folded view. When the view outgrows its budget the older
# part is folded into a note, persisted as a consolidation marker, so a new
# process starts from the marker without calling the summarizer again.
#
# **Why.** Many deployed apps keep conversations in a chat history (SQL, Redis,
# a file) and feed them through `RunnableWithMessageHistory`. LangChain's older
# buffer memories pruned a copy of the messages, so over a database-backed
# history they silently did nothing and the prompt grew without bound.

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
import warnings

from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_builderforce_memory import (
    CompactingChatMessageHistory,
    count_tokens,
    request_problems,
)
from langchain_builderforce_memory.testing import ScriptedChatModel

# RunnableWithMessageHistory is deprecated (still widely deployed): hush its notice.
warnings.filterwarnings("ignore", category=DeprecationWarning)
answer = "Noted. " + "A detailed answer about src/app/window.py and its budget. " * 12
model = real_model() or ScriptedChatModel(script=[answer] * 60)
prompt = ChatPromptTemplate.from_messages(
    [
        ("system", "You are a helpful assistant."),
        MessagesPlaceholder("history"),
        ("human", "{question}"),
    ]
)
backings = {}  # what a database would hold, per session


def session_history(session_id):
    backing = backings.setdefault(session_id, InMemoryChatMessageHistory())
    return CompactingChatMessageHistory(
        backing, summarizer=note_writer, max_tokens=4_000, tail_tokens=2_000
    )


chat = RunnableWithMessageHistory(
    prompt | model,
    session_history,
    input_messages_key="question",
    history_messages_key="history",
)
config = {"configurable": {"session_id": "s1"}}
sizes = []
for i in range(40):
    question = f"Question {i}: what does src/app/handler_{i % 7}.py do?"
    chat.invoke({"question": question}, config)
    history = session_history("s1")
    stored = history.full_messages
    sizes.append((len(stored), count_tokens(stored), count_tokens(history.messages)))
print("stored messages, stored tokens, tokens the chain reads:")
for i in (0, 9, 19, 29, 39):
    print(f"  after turn {i + 1:>2}: {sizes[i]}")

# %% [markdown]
# ## What the model was sent, and what is stored
#
# The store holds every message plus the consolidation markers; the view starts
# from the last marker (shown as a human-role note) and is always valid for
# strict providers.

# %%
from langchain_builderforce_memory import is_consolidation_marker

history = session_history("s1")
markers = [m for m in history.full_messages if is_consolidation_marker(m)]
print(f"{len(markers)} consolidation marker(s) stored; the latest:")
print(" ", " ".join(markers[-1].text.split())[:300])
if isinstance(model, ScriptedChatModel):
    last = model.requests[-1]
    print(
        f"\nlast request: {len(last)} messages, {count_tokens(last):,} tokens; "
        f"the store holds {len(history.full_messages)} messages"
    )
    assert request_problems(last) == []

# %%
# "Restart": a new wrapper over the same stored record reads the same view, and
# reading never calls the summarizer.
calls = []
reopened = CompactingChatMessageHistory(
    backings["s1"],
    summarizer=lambda p: calls.append(p) or "unused",
    max_tokens=4_000,
    tail_tokens=2_000,
)
assert [m.content for m in reopened.messages] == [m.content for m in history.messages]
assert calls == []
print(f"reopened: {len(reopened.messages)} messages; summarizer calls: {len(calls)}")
