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
# # 01 · The window and the fold
#
# **What this shows.** A long offline coding run (240 model calls, four user
# directives, multi-kilobyte file reads) replayed turn by turn, and at each turn
# what the model would be sent by the two views this package builds from the
# same record:
#
# * the **window** (`windowed`): the newest messages inside 80 messages / 64k
#   tokens, the oldest dropped in chunks;
# * the **fold** (`build_working_transcript`): the older part compressed into ONE
#   memory note, the working set's files re-attached, the latest turn verbatim,
#   the active directive restated.
#
# **Why.** The record grows without bound; a request must not. How it is kept in
# bounds decides what the model still knows, what each turn costs, and whether
# the provider's prefix cache can hit. The plots show all three.
#
# Everything runs offline: the run is scripted, the summarizer is a deterministic
# function (swap in any chat model).

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

from langchain_builderforce_memory import (
    RecordFacts,
    build_working_transcript,
    count_tokens,
    request_problems,
    windowed,
)
from langchain_builderforce_memory.testing import coding_agent_script, coding_tools

TURNS, BUDGET = 240, 64_000
run = coding_agent_script(turns=TURNS, directives=4)
tools = {t.name: t for t in coding_tools(min_tokens=500, max_tokens=4_000)}
print(run.directives)

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


# %% [markdown]
# ## Replay the run
#
# At each model call: build both views from the record, check that a strict
# provider would accept them, and note their size. The fold's **state** (the note
# and where it ends, the summarizer's backoff, the clear tier's horizon:
# `folded.state`) is all it carries from turn to turn; an agent adapter keeps it
# in the graph state, where a checkpointer persists it. The window is handed the
# conversation's `RecordFacts`, so a turn counts only its new messages.


# %%
def same(a, b):
    return a is b or (a.type == b.type and a.content == b.content)


def reused_prefix_tokens(previous, current):
    """Tokens at the start of `current` identical to the start of `previous`: what a
    provider's prefix cache can serve."""
    n = 0
    for a, b in zip(previous, current, strict=False):
        if not same(a, b):
            break
        n += count_tokens([b])
    return n


record = [SystemMessage("You are a careful coding agent.")]
state, facts, summarizer_calls, rows = None, RecordFacts(), 0, []
previous = {"window": [], "fold": []}
steps = iter(run.script)
for d, calls in enumerate(run.calls_per_directive):
    record.append(HumanMessage(run.directives[d]))
    for _ in range(calls):
        window_view = windowed(record, max_tokens=BUDGET, facts=facts)
        folded = build_working_transcript(
            record, memo=state, summarizer=note_writer, max_tokens=BUDGET
        )
        state, summarizer_calls = folded.state, summarizer_calls + folded.summarizer_calls
        assert request_problems(window_view) == []
        assert request_problems(folded.messages) == []
        rows.append(
            {
                "full": count_tokens(record),
                "window": count_tokens(window_view),
                "fold": count_tokens(folded.messages),
                "folded_now": folded.fold is not None,
                "window_reuse": reused_prefix_tokens(previous["window"], window_view),
                "fold_reuse": reused_prefix_tokens(previous["fold"], folded.messages),
            }
        )
        previous = {"window": window_view, "fold": folded.messages}
        answer = next(steps)  # what the scripted model answers
        record.append(answer)
        for call in answer.tool_calls:
            output = tools[call["name"]].invoke(call["args"])
            result = ToolMessage(output, tool_call_id=call["id"], name=call["name"])
            record.append(result)

folds = [i for i, r in enumerate(rows) if r["folded_now"]]
print(f"{len(rows)} calls; record: {len(record)} msgs, {count_tokens(record):,} tokens")
largest = {view: max(r[view] for r in rows) for view in ("window", "fold")}
print(f"largest request: window {largest['window']:,}, fold {largest['fold']:,} tokens")
print(f"folds: {len(folds)} (at calls {folds}); summarizer calls: {summarizer_calls}")
assert largest["fold"] <= BUDGET
assert summarizer_calls == len(folds)

# %% [markdown]
# ## Tokens per request
#
# The full record grows with every tool result. The window keeps the newest
# messages inside the budget (the largest request printed above is under it),
# dropping the oldest a chunk at a time. Here each directive's tool loop (60 calls
# of multi-kilobyte reads) outgrows the budget by itself, so the window restates
# the latest user turn in front and keeps only the newest part of the loop: the
# loop's earlier reads, and every earlier task, are simply gone from the view.
# (With shorter loops the window saws under the budget, a quarter of it dropped
# at a time.)
#
# The fold stays under the budget throughout. Between folds the clear tier makes
# room first: the oldest tool results are replaced by one-line placeholders (the
# record keeps them), a batch at a time, so the prefix holds between batches. Only
# when clearing is not enough, or the view reaches its message ceiling (128), does
# it fold: the older part becomes one note, the directive is restated and the files
# in use are re-attached. In this run that is four summarizer calls in 240 model
# calls (about one per directive's loop), never one per turn, and what it folds
# lives on in the note.

# %%
x = range(1, len(rows) + 1)
fig, ax = plt.subplots(figsize=(10, 4))
ax.plot(x, [r["full"] for r in rows], label="full record", color="0.6")
ax.plot(x, [r["window"] for r in rows], label="window")
ax.plot(x, [r["fold"] for r in rows], label="fold")
for i in folds:
    ax.axvline(i + 1, color="tab:orange", alpha=0.25, lw=1)
ax.axhline(BUDGET, color="k", ls=":", lw=1, label="budget")
ax.set(xlabel="model call", ylabel="tokens sent", yscale="log")
ax.set_title("Tokens per request (orange lines: folds)")
ax.legend()
plt.show()

# %% [markdown]
# ## Prefix reuse
#
# Providers cache a request's prefix: the tokens that start the same way as the
# previous request are cheaper and faster. A window that slid by a message every
# turn would change its first message every turn and never hit. The chunked
# window and the fold move their front only at a chunk drop or a fold, so almost
# every request starts exactly like the one before it.

# %%
fig, ax = plt.subplots(figsize=(10, 3))
for view in ("window", "fold"):
    ax.plot(x, [r[f"{view}_reuse"] / r[view] for r in rows], label=view, lw=1)
ax.set(xlabel="model call", ylabel="share that was\na cached prefix", ylim=(0, 1.05))
ax.legend()
plt.show()
for view in ("window", "fold"):
    hits = sum(1 for r in rows[1:] if r[f"{view}_reuse"] > 0.5 * r[view])
    total = sum(r[view] for r in rows)
    cached = sum(r[f"{view}_reuse"] for r in rows)
    print(
        f"{view}: {hits / (len(rows) - 1):.0%} of requests reused most of the previous "
        f"one; {cached / total:.0%} of all tokens sent were a reusable prefix"
    )


# %% [markdown]
# ## What the model sees at the end
#
# The window's view opens on a user turn (the oldest one it kept): everything
# before it is simply gone. The fold's view opens with the note (a stamped
# human-role message), restates the directive the note covers, then the verbatim
# tail.


# %%
def show(view, n=4):
    for m in view[:n]:
        text = " ".join(m.text.split())
        print(f"  {m.type:>6}: {text[:110]}")
    print(f"  ... {len(view) - n} more, {count_tokens(view):,} tokens")


print("window:")
show(windowed(record, max_tokens=BUDGET))
final = build_working_transcript(record, memo=state, summarizer=note_writer, max_tokens=BUDGET)
print(f"\nfold (mode {final.mode!r}, note covers {final.memo.covered_end} messages):")
show(final.messages)
