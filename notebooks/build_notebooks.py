"""Write the notebooks in this folder, and (with ``--execute``) run them and save the outputs.

The notebooks are generated, not hand-edited, so they stay reviewable as code and can be
regenerated after an API change:

    python notebooks/build_notebooks.py --execute            # all of them
    python notebooks/build_notebooks.py 01 04 --execute      # some of them

Every notebook runs offline in a few seconds: the scripted fake model from
``langchain_builderforce_memory.testing`` plays the agent. A cell that can use a real
provider does so only when its API key is set AND its package is installed (and
``BFMEM_NOTEBOOKS_OFFLINE`` is not set, which the test suite sets).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from textwrap import dedent

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
CELL_TIMEOUT = 120
"""Seconds one cell may run when executing (the tests use the same limit)."""


def md(text: str) -> NotebookNode:
    """A markdown cell from an indented triple-quoted string."""
    return new_markdown_cell(dedent(text).strip())


def code(text: str) -> NotebookNode:
    """A code cell from an indented triple-quoted string."""
    return new_code_cell(dedent(text).strip())


REAL_MODEL = code(
    '''
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
    '''
)

FAKE_SUMMARIZER = code(
    '''
    import re


    def note_writer(prompt):
        """A deterministic stand-in for a summarizer model: the files the folded part touched.

        It is handed the summary prompt: [SystemMessage(instructions), HumanMessage(transcript)].
        """
        text = prompt[-1].content
        files = sorted(set(re.findall(r"src/app/\\w+\\.py", text)))
        # The held note comes first in a re-fold, so its task carries over.
        tasks = re.findall(r"(?:user|Task): (.+)", text)
        return (
            f"Task: {tasks[-1] if tasks else 'unknown'}\\n"
            f"Files read or edited so far ({len(files)}): {', '.join(files)}"
        )
    '''
)


# --------------------------------------------------------------------------- 01


def notebook_01() -> list[NotebookNode]:
    """The window and the fold over a long coding run."""
    return [
        md(
            """
            # 01 · The window and the fold

            **What this shows.** A long offline coding run (240 model calls, four user
            directives, multi-kilobyte file reads) replayed turn by turn, and at each turn
            what the model would be sent by the two views this package builds from the
            same record:

            * the **window** (`windowed`): the newest messages inside 80 messages / 64k
              tokens, the oldest dropped in chunks;
            * the **fold** (`build_working_transcript`): the older part compressed into ONE
              memory note, the newest ~40k tokens verbatim, the active directive restated.

            **Why.** The record grows without bound; a request must not. How it is kept in
            bounds decides what the model still knows, what each turn costs, and whether
            the provider's prefix cache can hit. The plots show all three.

            Everything runs offline: the run is scripted, the summarizer is a deterministic
            function (swap in any chat model).
            """
        ),
        code(
            """
            %matplotlib inline
            import matplotlib.pyplot as plt
            from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

            from langchain_builderforce_memory import count_tokens, request_problems, windowed
            from langchain_builderforce_memory.testing import coding_agent_script, coding_tools
            from langchain_builderforce_memory.transcript.fold import build_working_transcript

            TURNS, BUDGET = 240, 64_000
            run = coding_agent_script(turns=TURNS, directives=4)
            tools = {t.name: t for t in coding_tools(min_tokens=500, max_tokens=4_000)}
            print(run.directives)
            """
        ),
        FAKE_SUMMARIZER,
        md(
            """
            ## Replay the run

            At each model call: build both views from the record, check that a strict
            provider would accept them, and note their size. The fold's **memo** (the note
            and where it ends) is the only state carried from turn to turn; an agent
            adapter keeps it in the graph state, where a checkpointer persists it.
            """
        ),
        code(
            """
            def same(a, b):
                return a is b or (a.type == b.type and a.content == b.content)


            def reused_prefix_tokens(previous, current):
                \"\"\"Tokens at the start of `current` identical to the start of `previous`: what a
                provider's prefix cache can serve.\"\"\"
                n = 0
                for a, b in zip(previous, current, strict=False):
                    if not same(a, b):
                        break
                    n += count_tokens([b])
                return n


            record = [SystemMessage("You are a careful coding agent.")]
            memo, summarizer_calls, rows = None, 0, []
            previous = {"window": [], "fold": []}
            steps = iter(run.script)
            for d, calls in enumerate(run.calls_per_directive):
                record.append(HumanMessage(run.directives[d]))
                for _ in range(calls):
                    window_view = windowed(record, max_tokens=BUDGET)
                    folded = build_working_transcript(
                        record, memo=memo, summarizer=note_writer, max_tokens=BUDGET
                    )
                    memo, summarizer_calls = folded.memo, summarizer_calls + folded.summarizer_calls
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
            """
        ),
        md(
            """
            ## Tokens per request

            The full record grows with every tool result. The window keeps the newest
            messages inside the budget, but it never drops the LATEST user turn (a request
            must open with one). Here each directive's tool loop (60 calls of multi-kilobyte
            reads) outgrows the budget by itself, so the window grows past it until the next
            directive arrives, then drops everything before that directive at once: the model
            forgets the whole previous task. (With shorter loops the window saws under the
            budget, a quarter of it dropped at a time.)

            The fold stays under the budget throughout: at each fold it drops to ~40k tokens
            of verbatim tail plus one note, restates the directive, then grows for ~20k tokens
            of new work before the next fold: one summarizer call per ~20k tokens of work,
            never one per turn, and what it folds lives on in the note.
            """
        ),
        code(
            """
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
            """
        ),
        md(
            """
            ## Prefix reuse

            Providers cache a request's prefix: the tokens that start the same way as the
            previous request are cheaper and faster. A window that slid by a message every
            turn would change its first message every turn and never hit. The chunked
            window and the fold move their front only at a chunk drop or a fold, so almost
            every request starts exactly like the one before it.
            """
        ),
        code(
            """
            fig, ax = plt.subplots(figsize=(10, 3))
            for view in ("window", "fold"):
                ax.plot(x, [r[f"{view}_reuse"] / r[view] for r in rows], label=view, lw=1)
            ax.set(xlabel="model call", ylabel="share that was\\na cached prefix", ylim=(0, 1.05))
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
            """
        ),
        md(
            """
            ## What the model sees at the end

            The window's view opens on a user turn (the oldest one it kept): everything
            before it is simply gone. The fold's view opens with the note (a stamped
            human-role message), restates the directive the note covers, then the verbatim
            tail.
            """
        ),
        code(
            """
            def show(view, n=4):
                for m in view[:n]:
                    text = " ".join(m.text.split())
                    print(f"  {m.type:>6}: {text[:110]}")
                print(f"  ... {len(view) - n} more, {count_tokens(view):,} tokens")


            print("window:")
            show(windowed(record, max_tokens=BUDGET))
            final = build_working_transcript(
                record, memo=memo, summarizer=note_writer, max_tokens=BUDGET
            )
            print(f"\\nfold (mode {final.mode!r}, note covers {final.memo.covered_end} messages):")
            show(final.messages)
            """
        ),
    ]


REPLAY = code(
    """
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

    from langchain_builderforce_memory.testing import coding_agent_script, coding_tools


    def replay(turns, *, directives=2, min_tokens=300, max_tokens=2_500, seed=0):
        \"\"\"The record of an offline scripted coding run: what a graph's state would hold.\"\"\"
        run = coding_agent_script(turns=turns, directives=directives, seed=seed)
        made = coding_tools(min_tokens=min_tokens, max_tokens=max_tokens, seed=seed)
        tools = {t.name: t for t in made}
        record, steps = [SystemMessage("You are a careful coding agent.")], iter(run.script)
        for d, calls in enumerate(run.calls_per_directive):
            record.append(HumanMessage(run.directives[d]))
            for _ in range(calls):
                answer = next(steps)
                record.append(answer)
                for call in answer.tool_calls:
                    output = tools[call["name"]].invoke(call["args"])
                    record.append(ToolMessage(output, tool_call_id=call["id"], name=call["name"]))
        return record
    """
)


# --------------------------------------------------------------------------- 02


def notebook_02() -> list[NotebookNode]:
    """create_agent + the middleware + a checkpointer: fold events, the brief, resuming."""
    return [
        md(
            """
            # 02 · `create_agent` with `BuilderforceMemoryMiddleware`

            **What this shows.** The package in one line of a LangChain v1 agent: a
            scripted coding agent built with `create_agent`, the middleware, and a
            `SqliteSaver` checkpointer. We stream the middleware's **fold events** as they
            happen, look at exactly what the model was sent (system prompt, memory note,
            restated directive, verbatim tail, and the **brief** last), then **resume the
            thread** from the SQLite file in a fresh agent: the memo and the working
            memory come back with it, so nothing is re-summarized and nothing forgotten.

            **Why.** The record in the agent's state is never shrunk; only the model's
            view is. The small state the view needs (the memo, the working memory) lives in
            the graph state, where the checkpointer already persists everything else.
            """
        ),
        REAL_MODEL,
        FAKE_SUMMARIZER,
        code(
            """
            import sqlite3
            import tempfile
            from pathlib import Path

            from langchain.agents import create_agent
            from langchain_core.messages import HumanMessage
            from langgraph.checkpoint.sqlite import SqliteSaver

            from langchain_builderforce_memory import count_tokens, request_problems
            from langchain_builderforce_memory.agents.middleware import BuilderforceMemoryMiddleware
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
                return BuilderforceMemoryMiddleware(
                    summarizer, max_tokens=16_000, tail_tokens=10_000
                )


            db = Path(tempfile.mkdtemp()) / "agent.sqlite"
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
            """
        ),
        md(
            """
            ## Stream the run: fold events as they happen

            `stream_mode="custom"` carries the middleware's events
            (`{"builderforce_memory": "fold", ...}`); the summarizer call itself is
            tagged `nostream`, so it never streams into the user's output.
            """
        ),
        code(
            """
            for directive in run.directives[:2]:
                print(f"> {directive}")
                inputs = {"messages": [HumanMessage(directive)]}
                for mode, chunk in agent.stream(inputs, config, stream_mode=["custom", "updates"]):
                    if mode == "custom":
                        print(f"  model call {len(model.requests)}: {chunk}")
            print(f"{len(model.requests)} model calls, {len(summarizer_calls)} summarizer calls")
            """
        ),
        md(
            """
            ## What the model was sent last

            System prompt, the memory note (a stamped human message), the active
            directive restated, the verbatim tail, and the brief as the volatile tail:
            ONE stamped message, last, never written into the record.
            """
        ),
        code(
            """
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
                f"\\nrecord in state: {len(record)} messages, {count_tokens(record):,} tokens; "
                f"sent: {count_tokens(last):,} tokens"
            )
            print("memo covers", state["builderforce_memo"]["covered_end"], "messages")
            print("\\n" + last[-1].text)
            """
        ),
        md(
            """
            ## Resume the thread in a fresh agent

            A new process: a new connection to the same SQLite file, a new agent, the same
            thread id. The memo and the working memory come back from the checkpoint, so
            the first request after resuming reuses the held note instead of summarizing
            the whole history again.
            """
        ),
        code(
            """
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
            print(f"{len(resumed_model.requests)} more model calls, "
                  f"{len(summarizer_calls) - calls_before} more summarizer calls")
            print("record now:", len(resumed.get_state(config).values["messages"]), "messages")
            """
        ),
    ]


# --------------------------------------------------------------------------- 03


def notebook_03() -> list[NotebookNode]:
    """A hand-written StateGraph and create_react_agent with WorkingTranscriptNode."""
    return [
        md(
            """
            # 03 · LangGraph: a pre-model node

            **What this shows.** `WorkingTranscriptNode` in the two places LangGraph users
            put a pre-model step: a hand-written `StateGraph` (memory node → model node →
            tools → memory node ...) and `create_react_agent(pre_model_hook=...)`. The node
            writes the view to `llm_input_messages` and its memo / working memory to their
            own state keys; `messages`, the record, is never rewritten.

            **Why.** Not every graph is a `create_agent` agent. The node needs only
            langchain-core and langgraph, and the model node decides what to send: the
            view, not the record.
            """
        ),
        REAL_MODEL,
        FAKE_SUMMARIZER,
        code(
            """
            from langchain_core.messages import HumanMessage, SystemMessage
            from langgraph.checkpoint.memory import InMemorySaver
            from langgraph.graph import START, StateGraph
            from langgraph.prebuilt import ToolNode, tools_condition

            from langchain_builderforce_memory import count_tokens, request_problems
            from langchain_builderforce_memory.agents.node import (
                WorkingTranscriptNode,
                WorkingTranscriptState,
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
            """
        ),
        md(
            """
            ## A hand-written `StateGraph`

            The memory node runs before every model call; the model node sends the system
            prompt and `state["llm_input_messages"]`.
            """
        ),
        code(
            """
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
            """
        ),
        code(
            """
            config = {"configurable": {"thread_id": "graph-1"}, "recursion_limit": 1_000}
            for directive in run.directives:
                inputs = {"messages": [HumanMessage(directive)]}
                for event in graph.stream(inputs, config, stream_mode="custom"):
                    print(f"  model call {len(model.requests)}: {event}")
            state = graph.get_state(config).values
            record = state["messages"]
            print(f"record: {len(record)} messages, {count_tokens(record):,} tokens")
            print(f"last view: {len(state['llm_input_messages'])} messages, "
                  f"{count_tokens(state['llm_input_messages']):,} tokens; memo covers "
                  f"{state['builderforce_memo']['covered_end']}")
            assert all(request_problems(r) == [] for r in model.requests)
            assert max(count_tokens(r) for r in model.requests) <= 16_000
            """
        ),
        md(
            """
            ## `create_react_agent(pre_model_hook=node)`

            `create_react_agent` sends `llm_input_messages` instead of `messages` when a
            pre-model hook returns it. It is deprecated in favour of `create_agent` (see
            notebook 02) but still widely deployed.
            """
        ),
        code(
            """
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
            print(f"{len(sizes)} model calls; largest request {max(sizes):,} tokens; "
                  f"record {count_tokens(state['messages']):,} tokens")
            # The same run, the same views: both ways in share one implementation.
            assert sizes == [count_tokens(r) for r in model.requests]
            """
        ),
    ]


# --------------------------------------------------------------------------- 04


def notebook_04() -> list[NotebookNode]:
    """Hand-off packing for an 8k model, alone and under ModelFallbackMiddleware."""
    return [
        md(
            """
            # 04 · Hand-off to a smaller model

            **What this shows.** A long run's transcript packed for a model with an 8k
            window with `pack_handoff`: the system prompt, ONE note standing in for the
            dropped middle, the latest directive re-injected, and the longest verbatim
            tail of whole tool-call units that fits; then the same packing done
            automatically when `ModelFallbackMiddleware` falls back from a large model to
            a small one.

            **Why.** A fallback after an error (or a router picking a cheaper model)
            resends the SAME request, and a smaller window rejects it: the fallback fails
            exactly when it is needed. The packer fits the request to the model that will
            serve it, and never sends a tool result without its call (or a call without
            its results), which strict providers reject.
            """
        ),
        REAL_MODEL,
        REPLAY,
        FAKE_SUMMARIZER,
        code(
            """
            from langchain_builderforce_memory import count_tokens, request_problems
            from langchain_builderforce_memory.handoff import handoff_budget_for_model, pack_handoff
            from langchain_builderforce_memory.testing import ScriptedChatModel

            record = replay(60)
            small = ScriptedChatModel(
                script=["Picking up from the note: the fix is in src/app/window.py."],
                model_name="small-8k",
                profile={"max_input_tokens": 8_192, "max_output_tokens": 1_024},
            )
            budget = handoff_budget_for_model(small, tools=coding_tools())
            print(f"record: {len(record)} messages, {count_tokens(record):,} tokens")
            print(f"budget for small-8k: {budget:,} tokens (8,192 less its reply and the tools)")
            """
        ),
        md(
            """
            ## Pack it

            `pack_handoff` never mutates the record: the kept messages are the same
            objects, plus at most one stamped note. With a summarizer the note carries a
            summary of what was dropped; without one (or when it fails) a recall block,
            else an elision marker that says how many messages were left out.
            """
        ),
        code(
            """
            pack = pack_handoff(
                record,
                target_context_tokens=budget,
                reserve_output_tokens=0,
                from_model="big-128k",
                to_model="small-8k",
                summarize=real_model() or note_writer,
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
            print("\\nwithout a summarizer the note is:", repr(plain.messages[1].content))
            """
        ),
        md(
            """
            ## The same, automatically: `ModelFallbackMiddleware`

            The primary model fails (here it always raises, standing in for an outage or
            a rate limit); `ModelFallbackMiddleware` retries with the 8k model. Listed
            AFTER the fallback middleware, `BuilderforceMemoryMiddleware` runs inside each
            attempt, sees which model will serve it, reads that model's window from its
            `profile`, and packs the view to fit.
            """
        ),
        code(
            """
            from langchain.agents import create_agent
            from langchain.agents.middleware import ModelFallbackMiddleware
            from langgraph.checkpoint.memory import InMemorySaver

            from langchain_builderforce_memory.agents.middleware import BuilderforceMemoryMiddleware

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
            """
        ),
    ]


# --------------------------------------------------------------------------- 05


def notebook_05() -> list[NotebookNode]:
    """Working memory, the brief, code maps in a SqliteStore, recall in the next run."""
    return [
        md(
            """
            # 05 · Working memory and code maps

            **What this shows.** `WorkingMemoryCallbackHandler` turning an agent's tool
            calls into a working memory (files read, edited, searched), the **brief** it
            restates to the model, consolidation of the finished run into a **code map**
            in a `SqliteStore`, and recall of that map when the next run starts on the
            same area.

            **Why.** A model's reasoning is not carried into its next turn, and old tool
            results are windowed or folded away: by turn forty a run cannot see what it
            concluded at turn ten and re-reads the same files. The brief is the run's own
            record, sent with every request (never stored in the transcript). A code map
            is what survives the run: where the code for that area lives, so the next run
            opens the right files first instead of searching again.
            """
        ),
        code(
            """
            import sqlite3
            import tempfile
            from pathlib import Path

            from langchain.agents import create_agent
            from langchain_core.messages import HumanMessage
            from langgraph.checkpoint.memory import InMemorySaver
            from langgraph.store.sqlite import SqliteStore

            from langchain_builderforce_memory.callbacks import WorkingMemoryCallbackHandler
            from langchain_builderforce_memory.store import CodeMapStore
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
            print(memory.snapshot)
            """
        ),
        md(
            """
            ## The brief

            What the run has already established, ranked by use. It is `None` until the
            run has done enough for a restatement to be worth its tokens. An agent adapter
            sends it as the request's **volatile tail**: one stamped user message, last,
            built per request and never written into the record, so it neither grows the
            history nor breaks the prompt cache.
            """
        ),
        code(
            """
            from langchain_builderforce_memory.handoff import volatile_tail

            print(memory.brief())
            tail = volatile_tail([memory.brief()])
            print("\\nsent as:", type(tail).__name__, tail.additional_kwargs)
            """
        ),
        md(
            """
            ## Consolidate into a `SqliteStore`, recall next time

            When the run ends, its memory is consolidated into one map per code area and
            merged into what earlier runs on that area stored. Maps are scoped (here by
            user and repository): a scope reads only its own maps.
            """
        ),
        code(
            """
            db = Path(tempfile.mkdtemp()) / "code_maps.sqlite"
            store = SqliteStore(sqlite3.connect(db, check_same_thread=False, isolation_level=None))
            store.setup()
            maps = CodeMapStore(store)
            saved = maps.save(memory, scope=("alice", "shop-repo"))
            print("stored under", maps.namespace_for(("alice", "shop-repo")), "key", saved.key)
            print(saved.content)
            """
        ),
        code(
            """
            # A new process, a new run on the same area: open the store again and ask.
            connection = sqlite3.connect(db, check_same_thread=False, isolation_level=None)
            maps_again = CodeMapStore(SqliteStore(connection))
            task = "Fix the budget bug in src/app and add a test."
            found = maps_again.maps_for(task, scope=("alice", "shop-repo"))
            print([m.area for m in found])
            print("another user sees:", maps_again.maps_for(task, scope=("bob", "shop-repo")))
            recall = maps_again.recall_for(("alice", "shop-repo"))
            print("\\nrecall(task, 400) ->\\n" + recall(task, 400))
            assert found
            assert not maps_again.maps_for(task, scope=("bob", "shop-repo"))
            """
        ),
    ]


# --------------------------------------------------------------------------- 06


def notebook_06() -> list[NotebookNode]:
    """The chat-history wrapper with RunnableWithMessageHistory."""
    return [
        md(
            """
            # 06 · A compacting chat message history

            **What this shows.** `CompactingChatMessageHistory` wrapping an ordinary
            `BaseChatMessageHistory` behind `RunnableWithMessageHistory`: the stored
            record only grows, while what the chain READS (and so what the model is sent)
            is the windowed / folded view. When the view outgrows its budget the older
            part is folded into a note, persisted as a consolidation marker, so a new
            process starts from the marker without calling the summarizer again.

            **Why.** Many deployed apps keep conversations in a chat history (SQL, Redis,
            a file) and feed them through `RunnableWithMessageHistory`. LangChain's older
            buffer memories pruned a copy of the messages, so over a database-backed
            history they silently did nothing and the prompt grew without bound.
            """
        ),
        REAL_MODEL,
        FAKE_SUMMARIZER,
        code(
            """
            import warnings

            from langchain_core.chat_history import InMemoryChatMessageHistory
            from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
            from langchain_core.runnables.history import RunnableWithMessageHistory

            from langchain_builderforce_memory import count_tokens, request_problems
            from langchain_builderforce_memory.history import CompactingChatMessageHistory
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
            """
        ),
        md(
            """
            ## What the model was sent, and what is stored

            The store holds every message plus the consolidation markers; the view starts
            from the last marker (shown as a human-role note) and is always valid for
            strict providers.
            """
        ),
        code(
            """
            from langchain_builderforce_memory.transcript.markers import is_consolidation_marker

            history = session_history("s1")
            markers = [m for m in history.full_messages if is_consolidation_marker(m)]
            print(f"{len(markers)} consolidation marker(s) stored; the latest:")
            print(" ", " ".join(markers[-1].text.split())[:300])
            if isinstance(model, ScriptedChatModel):
                last = model.requests[-1]
                print(f"\\nlast request: {len(last)} messages, {count_tokens(last):,} tokens; "
                      f"the store holds {len(history.full_messages)} messages")
                assert request_problems(last) == []
            """
        ),
        code(
            """
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
            """
        ),
    ]


# --------------------------------------------------------------------------- registry


NOTEBOOKS: dict[str, tuple[str, Callable[[], list[NotebookNode]]]] = {
    "01": ("01_window_and_fold.ipynb", notebook_01),
    "02": ("02_create_agent_middleware.ipynb", notebook_02),
    "03": ("03_langgraph_pre_model_node.ipynb", notebook_03),
    "04": ("04_handoff_to_a_smaller_model.ipynb", notebook_04),
    "05": ("05_working_memory_and_code_maps.ipynb", notebook_05),
    "06": ("06_chat_message_history.ipynb", notebook_06),
}


def build(key: str) -> tuple[Path, NotebookNode]:
    """The notebook ``key`` ("01"...) and where it is saved."""
    name, cells = NOTEBOOKS[key]
    nb = new_notebook(
        cells=cells(),
        metadata={
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
    )
    return HERE / name, nb


def execute(nb: NotebookNode, *, timeout: int = CELL_TIMEOUT) -> NotebookNode:
    """Run ``nb`` top to bottom in a fresh python3 kernel (cwd: this folder)."""
    from nbclient import NotebookClient

    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}
    )
    client.execute()
    return nb


def main(argv: list[str] | None = None) -> int:
    """Build the notebooks named on the command line (default all)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("keys", nargs="*", help=f"which (default all: {sorted(NOTEBOOKS)})")
    parser.add_argument("--execute", action="store_true", help="run them and save the outputs")
    args = parser.parse_args(argv)
    for key in args.keys or sorted(NOTEBOOKS):
        path, nb = build(key)
        if args.execute:
            execute(nb)
        nbformat.write(nb, path)
        print(f"wrote {path.name}" + (" (executed)" if args.execute else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
