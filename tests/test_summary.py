"""The ONE transcript summarizer: ports of the seed's ``summary.test.ts`` (003).

What it asks, how it renders tool calls, and that a failing or empty completion reads as
"no summary" (the caller falls back). Both twins (``summarize_transcript`` /
``asummarize_transcript``) run every case.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda

from langchain_builderforce_memory.messages import message_id, role_of
from langchain_builderforce_memory.tokens import estimate_text_tokens
from langchain_builderforce_memory.transcript.fold import CompactMemo, build_working_transcript
from langchain_builderforce_memory.transcript.plan import memory_note
from langchain_builderforce_memory.transcript.summary import (
    TRANSCRIPT_SUMMARY_MAX_TOKENS,
    TRANSCRIPT_SUMMARY_PROMPT,
    asummarize_transcript,
    render_for_summary,
    summarize_transcript,
)
from langchain_builderforce_memory.transcript.window import HISTORY_TOKEN_BUDGET

from .helpers import (
    AsyncScriptedSummarizer,
    NumberedSummarizer,
    ScriptedSummarizer,
    anthropic_native,
    read_loop,
)

# Set explicitly: another test (the CLI) may leave the package logger at ERROR.
PACKAGE_LOGGER = "langchain_builderforce_memory"

Summarize = Callable[..., Awaitable[str | None]]


async def _sync_summarize(*args: Any, **kwargs: Any) -> str | None:
    return summarize_transcript(*args, **kwargs)


@pytest.fixture(params=["sync", "async"])
def summarize(request: pytest.FixtureRequest) -> Summarize:
    """Both twins behind one awaitable signature."""
    return _sync_summarize if request.param == "sync" else asummarize_transcript


X = [HumanMessage("x")]


# --- render_for_summary ------------------------------------------------------------------


def test_names_the_tools_an_assistant_turn_called() -> None:
    text = render_for_summary(
        [
            HumanMessage("fix it"),
            AIMessage(
                "",
                tool_calls=[
                    {"name": "read_file", "args": {}, "id": "c1"},
                    {"name": "edit", "args": {}, "id": "c2"},
                ],
            ),
            # The seed's tool content was the object {ok: true}. LangChain coerces a dict
            # content to its str() ("{'ok': True}"), so the object rides in a content-block
            # list, which keeps it; it renders as compact JSON, as JSON.stringify did.
            ToolMessage(content=[{"ok": True}], tool_call_id="c1"),
        ]
    )
    assert text == (
        "user: fix it\n\nassistant [called: read_file, edit({})]:"
        '\n\ntool read_file({}) -> {"ok":true}'
    )


_WRITTEN = "the new body of the file, line by line\n" * 200
_WRITE = {"path": "src/app.py", "content": _WRITTEN}
_WRITE_CALL = {"name": "write_file", "args": _WRITE, "id": "toolu_1", "type": "tool_call"}
_TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": _WRITE}


def _test_run_loop(rounds: int) -> list[BaseMessage]:
    """A loop of test runs whose output ends in its verdict, as pytest's does."""
    record: list[BaseMessage] = [HumanMessage("Make the parser tests pass.", id="u0")]
    for i in range(rounds):
        call = {"name": "bash", "args": {"command": f"pytest tests/test_p{i}.py"}, "id": f"c{i}"}
        out = f"collected {i} items\n" + "tests/test_p.py ." * 300 + f"\n{i} failed, 3 passed"
        record += [
            AIMessage(f"run {i}", tool_calls=[call], id=f"a{i}"),
            ToolMessage(out, tool_call_id=f"c{i}", id=f"t{i}"),
        ]
    return record


@pytest.mark.parametrize("shape", ["tool-messages", "anthropic-native"])
def test_a_cleared_result_reaches_the_summarizer_cut_to_its_head_and_end(shape: str) -> None:
    # The model read each result whole before the clear tier took it out of the view, and
    # after the fold the note is all that stays of it. Shown only its size, a summarizer
    # could not say what a test run reported.
    record = _test_run_loop(120)
    record = anthropic_native(record) if shape == "anthropic-native" else record
    summarizer = ScriptedSummarizer()
    build_working_transcript(record, summarizer=summarizer, max_tokens=20_000)
    body = str(summarizer.calls[0][1].content)
    assert "[not shown: cleared" not in body
    assert "make the same call again" not in body
    assert 'bash({"command":"pytest tests/test_p3.py"}) -> collected 3 items' in body
    assert "3 failed, 3 passed" in body
    assert body.count("tests/test_p3.py") == 1
    # Each is cut: the summarizer reads a small share of what the loop returned.
    assert estimate_text_tokens(body) < estimate_text_tokens(render_for_summary(record)) / 10


def test_only_a_cleared_copy_is_rendered_as_its_size() -> None:
    # A tool's own output that reads like a placeholder is shown as it is.
    text = "[cleared from this view: ls returned 9 tokens; to see its output again, make "
    text += "the same call again]"
    call = AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}])
    rendered = render_for_summary([HumanMessage("go"), call, ToolMessage(text, tool_call_id="c1")])
    assert rendered.endswith(f"tool ls({{}}) -> {text}")


def test_a_cleared_shell_write_reaches_the_summarizer_with_the_head_of_its_command() -> None:
    # The view cuts a cleared edit's long values to a marker; a heredoc's command is one
    # value, so the summarizer was shown neither the file written nor what went into it.
    body = "cat > tests/test_repro.py << 'EOF'\nimport django\n" + "x = 1\n" * 800 + "EOF"
    write = {"name": "bash", "args": {"command": body}, "id": "w1"}
    record = read_loop(120, 1_500, files=200)
    record[1:1] = [AIMessage("Writing.", tool_calls=[write]), ToolMessage("", tool_call_id="w1")]
    summarizer = ScriptedSummarizer()
    build_working_transcript(record, summarizer=summarizer, max_tokens=20_000)
    text = str(summarizer.calls[0][1].content)
    assert 'tool bash({"command":"cat > tests/test_repro.py << \'EOF\'\\nimport django' in text
    assert "characters cut here in this view" not in text


def test_the_next_fold_reads_the_held_note_without_the_files_it_re_attached() -> None:
    # Those files followed the note in the view, not in the summarizer's input: "re-attached
    # below" there named what was not below, a claim a note written from it carries on.
    record, memo, notes = read_loop(200, 1_500, files=12), None, []
    summarizer = ScriptedSummarizer()
    for end in range(100, len(record) + 1, 2):
        out = build_working_transcript(
            record[:end], memo=memo, summarizer=summarizer, max_tokens=20_000
        )
        memo = out.state.to_dict()
        notes += [out.memo.note] if out.fold is not None and out.memo is not None else []
        if len(summarizer.calls) == 2:
            break
    assert "re-attached below" in notes[0]
    held = str(summarizer.calls[1][1].content).split("\n\n")[0]
    assert held.startswith("assistant: Compressed memory of the first ")
    assert "re-attached below" not in str(summarizer.calls[1][1].content)


@pytest.mark.parametrize(
    ("call", "result"),
    [
        # langchain-anthropic: the call twice, as a tool_use block and in tool_calls
        (
            AIMessage([{"type": "text", "text": "Writing."}, _TOOL_USE], tool_calls=[_WRITE_CALL]),
            ToolMessage("wrote 200 lines", tool_call_id="toolu_1"),
        ),
        # output_version="v1": a tool_call block and tool_calls
        (
            AIMessage(
                [{"type": "text", "text": "Writing."}, {**_WRITE_CALL}],
                tool_calls=[_WRITE_CALL],
                response_metadata={"output_version": "v1", "model_provider": "anthropic"},
            ),
            ToolMessage("wrote 200 lines", tool_call_id="toolu_1"),
        ),
        # an Anthropic-native record: the block alone, answered by a tool_result turn
        (
            AIMessage([{"type": "text", "text": "Writing."}, _TOOL_USE]),
            HumanMessage(
                [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "wrote 200 lines"}]
            ),
        ),
    ],
    ids=["anthropic", "v1", "anthropic-native"],
)
def test_a_call_block_reaches_the_summarizer_as_its_call_with_its_result(
    call: AIMessage, result: BaseMessage
) -> None:
    # The call's argument values are cut as every call's are, and its result is rendered
    # after the call it answers: the whole file written was in the prompt as a block's JSON.
    text = render_for_summary([HumanMessage("write the app"), call, result])
    assert _WRITTEN[:200] not in text
    assert len(text) < 800
    assert text.startswith("user: write the app\n\nassistant [called: write_file]: Writing.")
    last = text.split("\n\n")[-1]
    assert last.startswith('tool write_file({"path":"src/app.py","content":"the new body')
    assert last.endswith('…"}) -> wrote 200 lines')


@pytest.mark.parametrize(
    ("decision", "rendered"),
    [({"approve": True}, "approved"), ({"approve": False, "reason": "no"}, "not approved: no")],
)
def test_an_mcp_approval_reaches_the_summarizer_as_its_decision(
    decision: dict[str, object], rendered: str
) -> None:
    # An approval response has no output: rendered by it, the call read as if it had none.
    ask = {"type": "mcp_approval_request", "id": "mcpr_1", "name": "ls", "arguments": "{}"}
    answer = {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", **decision}
    text = render_for_summary([HumanMessage("list it"), AIMessage([ask]), HumanMessage([answer])])
    assert text.split("\n\n")[-1] == f"tool ls({{}}) -> {rendered}"


def test_a_tool_search_reaches_the_summarizer_as_the_tools_it_found() -> None:
    # The tools a search loads are schemas, a few hundred tokens each: the summarizer
    # needs their names, once, not their JSON (nor the call block's JSON beside its call).
    tools = [{"type": "function", "name": f"edit_{n}", "description": "Edit. " * 80} for n in "ab"]
    ask = {"type": "tool_search_call", "id": "ts_1", "call_id": "c1", "execution": "client"}
    ask |= {"arguments": {"query": "edit tools"}}
    found = {"type": "tool_search_output", "call_id": "c1", "execution": "client", "tools": tools}
    served = {**ask, "execution": "server", "call_id": None}
    record = [HumanMessage("edit it"), AIMessage([ask]), HumanMessage([found])]
    record.append(AIMessage([served, {**found, "execution": "server", "call_id": None}]))
    text = render_for_summary(record)
    assert "Edit. Edit." not in text
    blocks = text.split("\n\n")
    assert blocks[1] == "assistant [called: tool_search]:"
    assert blocks[2] == 'tool tool_search({"query":"edit tools"}) -> [tools found: edit_a, edit_b]'
    assert blocks[3].endswith("[tools found: edit_a, edit_b]")


def test_an_mcp_servers_tool_list_reaches_the_summarizer_as_the_tools_names() -> None:
    # OpenAI's remote MCP lists the server's tools in the assistant's turn, each with its
    # input schema: the note needs what the server offers, not the schemas.
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(40)}}
    tools = [{"name": n, "input_schema": schema, "description": "A tool. " * 40} for n in "ab"]
    listed = {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "repo", "tools": tools}
    text = render_for_summary([HumanMessage("list them"), AIMessage([listed])])
    assert text.split("\n\n")[-1] == "assistant: [tools listed by repo: a, b]"


def test_a_web_search_reaches_the_summarizer_as_its_urls_and_titles() -> None:
    # Anthropic's server-side web search answers in the assistant message itself; each
    # result carries its page as encrypted_content, base64 only Anthropic reads: one
    # search of eight results was 23k tokens of the summarizer's prompt.
    results = [
        {
            "type": "web_search_result",
            "url": f"https://example.com/{i}",
            "title": f"Result {i}",
            "encrypted_content": "EqgfCioIARgBIiQ3YTAw" * 200,
            "page_age": "April 30, 2025",
        }
        for i in range(8)
    ]
    search = AIMessage(
        [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {"query": "langgraph context window"},
            },
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": results},
            {"type": "text", "text": "LangGraph trims messages in a pre-model hook."},
        ]
    )
    text = render_for_summary([HumanMessage("research it"), search])
    assert "EqgfCioI" not in text
    assert all(f"https://example.com/{i}" in text and f"Result {i}" in text for i in range(8))
    assert "langgraph context window" in text
    assert text.endswith("LangGraph trims messages in a pre-model hook.")
    assert len(text) < 2_000


_SHOT = "iVBORw0KGgoAAAANSUhEUgAAB4AAAAQ4CAIAAAB" * 5_000  # a screenshot's size, ~200k chars


@pytest.mark.parametrize(
    ("block", "label"),
    [
        ({"type": "image", "base64": _SHOT, "mime_type": "image/png"}, "[image image/png]"),
        (
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": _SHOT},
            },
            "[image image/png]",
        ),
        (
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_SHOT}"}},
            "[image image/png]",
        ),
        (
            {"type": "file", "base64": _SHOT, "mime_type": "application/pdf"},
            "[file application/pdf]",
        ),
        (
            {"type": "image_url", "image_url": {"url": "https://example.com/chart.png"}},
            "[image https://example.com/chart.png]",
        ),
    ],
    ids=["standard", "anthropic", "openai-data-url", "pdf", "url"],
)
def test_an_image_or_file_reaches_the_summarizer_as_its_label(
    block: dict[str, object], label: str
) -> None:
    # A computer-use agent's screenshots were rendered as their base64: a 150 KB PNG is
    # 143k cl100k tokens of the summarizer's prompt, past what most summarizers take.
    call = AIMessage("", tool_calls=[{"name": "screenshot", "args": {}, "id": "c1"}])
    result = ToolMessage([{"type": "text", "text": "the login page"}, block], tool_call_id="c1")
    text = render_for_summary([HumanMessage("check the page"), call, result])
    assert text.endswith(f"tool screenshot({{}}) -> the login page {label}")


def test_a_document_in_a_server_tools_result_reaches_the_summarizer_as_its_label() -> None:
    # Claude's web_fetch of a PDF holds the document in base64 inside the assistant's turn.
    source = {"type": "base64", "media_type": "application/pdf", "data": _SHOT}
    fetched = {"type": "web_fetch_result", "content": {"type": "document", "source": source}}
    turn = AIMessage([{"type": "web_fetch_tool_result", "tool_use_id": "s1", "content": fetched}])
    text = render_for_summary([HumanMessage("read the paper"), turn])
    assert text.endswith(
        '"content":{"type":"web_fetch_result","content":"[file application/pdf]"}}'
    )


def test_a_generated_image_reaches_the_summarizer_as_its_prompt() -> None:
    # OpenAI's image tool keeps the image in the assistant's item: its base64 was rendered,
    # 800 KB of the prompt for one 600 KB PNG.
    made = {"type": "image_generation_call", "id": "ig_1", "result": _SHOT * 2_000}
    reply = AIMessage([made | {"revised_prompt": "a red login page"}, " Here it is."])
    text = render_for_summary([HumanMessage("draw the page"), reply])
    assert text.endswith("assistant: [generated image: a red login page] Here it is.")


# --- summarize_transcript ----------------------------------------------------------------


async def test_asks_the_shared_prompt_with_the_bounded_budget_and_trims_the_answer(
    summarize: Summarize,
) -> None:
    summarizer = ScriptedSummarizer("  the note  ")
    assert await summarize(summarizer, X) == "the note"
    system, user = summarizer.calls[0]
    assert isinstance(system, SystemMessage)
    assert system.content == TRANSCRIPT_SUMMARY_PROMPT
    assert isinstance(user, HumanMessage)
    assert user.content == "user: x"
    # The seed passed maxTokens to the host's completion. A LangChain summarizer is a
    # model or function its owner configured, so the bound is enforced on the answer
    # instead: a longer one is cut to the ceiling and marked.
    long = await summarize(ScriptedSummarizer("y" * (8 * TRANSCRIPT_SUMMARY_MAX_TOKENS)), X)
    assert long is not None
    assert long.endswith("[...]")
    assert estimate_text_tokens(long) <= TRANSCRIPT_SUMMARY_MAX_TOKENS + 2


@pytest.mark.parametrize(
    ("messages", "make"),
    [
        ([], lambda: ScriptedSummarizer("x")),  # nothing to summarize
        (X, lambda: ScriptedSummarizer("   ")),  # an empty answer
        (X, lambda: ScriptedSummarizer(None)),
        (X, lambda: ScriptedSummarizer(error=RuntimeError("down"))),  # a failure
        (X, lambda: AsyncScriptedSummarizer(error=RuntimeError("down"))),
    ],
    ids=["nothing", "blank", "none", "error", "async-error"],
)
async def test_is_null_for_nothing_to_summarize_an_empty_answer_or_a_failure(
    summarize: Summarize,
    messages: list[BaseMessage],
    make: Callable[[], ScriptedSummarizer | AsyncScriptedSummarizer],
) -> None:
    summarizer = make()
    assert await summarize(summarizer, messages) is None
    if isinstance(summarizer, ScriptedSummarizer):  # (an async one never runs on the sync twin)
        assert len(summarizer.calls) == (1 if messages else 0)


def test_is_null_when_an_async_summarizer_is_given_to_the_sync_twin(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger=PACKAGE_LOGGER):
        assert summarize_transcript(AsyncScriptedSummarizer("note"), X) is None
    assert "async function was given to a sync call" in caplog.text


async def test_is_null_when_the_summarizer_outlives_its_timeout(summarize: Summarize) -> None:
    release = threading.Event()
    try:
        assert await summarize(ScriptedSummarizer(block_until=release), X, timeout=0.05) is None
    finally:
        release.set()


async def test_a_chat_model_summarizer_is_tagged_nostream(summarize: Summarize) -> None:
    seen: list[RunnableConfig] = []

    def answer(prompt: list[BaseMessage], config: RunnableConfig) -> str:
        seen.append(config)
        return "note"

    assert await summarize(RunnableLambda(answer), X) == "note"
    assert "langsmith:nostream" in seen[0].get("tags", [])


# --- buildWorkingTranscript fold report --------------------------------------------------


async def test_reports_the_note_and_the_index_it_covers_up_to() -> None:
    big = "x" * HISTORY_TOKEN_BUDGET  # ~16k tokens each
    record: list[BaseMessage] = [AIMessage(big) if i % 2 else HumanMessage(big) for i in range(12)]
    for out in (
        build_working_transcript(
            record, summarizer=ScriptedSummarizer("summary"), system_prompt="sys"
        ),
        await asummarize_fold(record),
    ):
        fold = out.fold
        assert fold is not None
        assert fold.dropped_messages == fold.covered_end
        assert "summary" in fold.note
        # Each message is 16k tokens: the tail keeps the latest answer alone, and the
        # question before it, folded, is restated.
        assert out.memo == CompactMemo(
            note=fold.note,
            covered_end=fold.covered_end,
            last_covered_id=message_id(record[fold.covered_end - 1]),
            directive_id=message_id(record[fold.covered_end - 1]),
        )
        # Item 3: the note is a human-role message stamped "memory_note" (the seed's was
        # {role: 'assistant', content: note}).
        assert out.messages[1] == memory_note(fold.note, fold.covered_end)
        assert role_of(out.messages[1]) == "user"
        assert out.messages[1].content == fold.note


async def asummarize_fold(record: list[BaseMessage]) -> Any:
    from langchain_builderforce_memory.transcript.fold import abuild_working_transcript

    return await abuild_working_transcript(
        record, summarizer=AsyncScriptedSummarizer("summary"), system_prompt="sys"
    )


def _long_unfolded_record() -> list[BaseMessage]:
    """A record whose first fold has ~350k tokens to summarize (a long thread adopted)."""
    record: list[BaseMessage] = [HumanMessage("Port the parser.")]
    for i in range(120):
        call = {"name": "read_file", "args": {"path": f"src/m{i}.py"}, "id": f"c{i}"}
        record += [
            AIMessage("", tool_calls=[call]),
            ToolMessage(f"UNIT-{i} " + "tok " * 2_900, tool_call_id=f"c{i}"),
        ]
    return record


@pytest.mark.parametrize("twin", ["sync", "async"])
def test_a_fold_past_the_summarizers_input_ceiling_is_summarized_in_parts(twin: str) -> None:
    # Before, a first fold over a long record sent it all in one request (950k tokens for
    # 50,000 messages), which a summarizer's window refuses at every later fold too.
    from langchain_builderforce_memory.tokens import count_tokens
    from langchain_builderforce_memory.transcript.fold import abuild_working_transcript
    from langchain_builderforce_memory.transcript.summary import SUMMARY_INPUT_MAX_TOKENS

    record, summarizer = _long_unfolded_record(), NumberedSummarizer()
    options: dict[str, Any] = {"max_tokens": 32_000, "clear_tool_results": False}
    if twin == "sync":
        out = build_working_transcript(record, summarizer=summarizer, **options)
    else:
        out = asyncio.run(abuild_working_transcript(record, summarizer=summarizer, **options))
    calls = summarizer.calls
    assert len(calls) > 1
    assert out.summarizer_calls == len(calls)
    assert all(count_tokens(c) <= SUMMARY_INPUT_MAX_TOKENS + 3_000 for c in calls)
    for k in range(1, len(calls)):  # each part is read after the note so far
        assert f"note {k}" in calls[k][1].text
    assert out.memo is not None
    assert f"note {len(calls)}" in out.memo.note
    sent = "".join(c[1].text for c in calls)
    assert all(f"UNIT-{i} " in sent for i in range(out.memo.covered_end // 2))


def test_summarize_transcript_reads_past_the_ceiling_in_parts() -> None:
    # What the history's manual consolidation calls: one part per ceiling, each after
    # the note so far, and the last note is the answer.
    summarizer = NumberedSummarizer()
    note = summarize_transcript(summarizer, _long_unfolded_record())
    assert len(summarizer.calls) > 1
    assert note == f"note {len(summarizer.calls)}"


def test_a_hand_off_summarizes_a_long_dropped_middle_in_parts() -> None:
    from langchain_builderforce_memory.handoff.pack import pack_handoff

    summarizer = NumberedSummarizer()
    pack = pack_handoff(
        _long_unfolded_record(),
        target_context_tokens=16_000,
        reserve_output_tokens=1_000,
        summarizer=summarizer,
    )
    assert len(summarizer.calls) > 1
    assert any(f"note {len(summarizer.calls)}" in m.text for m in pack.messages)


@pytest.mark.parametrize("window", [40_000, 1_000_000])
def test_a_chat_model_summarizer_is_sent_parts_that_fit_its_own_window(window: int) -> None:
    # Its profile's window sets the parts (three quarters of it); a model with room for
    # the whole input reads it in one call, as before the ceiling existed.
    from langchain_builderforce_memory.testing import ScriptedChatModel
    from langchain_builderforce_memory.tokens import count_tokens

    model = ScriptedChatModel(
        script=[f"note {k}" for k in range(1, 40)], profile={"max_input_tokens": window}
    )
    out = build_working_transcript(
        _long_unfolded_record(), summarizer=model, max_tokens=32_000, clear_tool_results=False
    )
    sizes = [count_tokens(r) for r in model.requests]
    assert out.summarizer_calls == len(sizes)
    assert all(size <= window for size in sizes)
    assert (len(sizes) == 1) == (window > 400_000)
