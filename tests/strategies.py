"""Hypothesis strategies for transcripts: valid records built from whole units."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langchain_builderforce_memory.blocks import is_tool_result_turn

SIZES = st.one_of(
    st.integers(min_value=0, max_value=200),  # chat-sized
    st.integers(min_value=200, max_value=8_000),  # a file window
    st.integers(min_value=20_000, max_value=120_000),  # a huge single message
)


@st.composite
def text(draw: st.DrawFn) -> str:
    n = (
        draw(st.sampled_from([0, 10, 100, 1_000, 8_000, 60_000]))
        if draw(st.booleans())
        else draw(SIZES)
    )
    return "x" * n


@st.composite
def user_turn(draw: st.DrawFn) -> HumanMessage:
    body = draw(text()) or "x"  # an empty user turn is invalid (Anthropic rejects it)
    if draw(st.integers(0, 4)) == 0:  # a content-block list
        return HumanMessage(
            content=[
                {"type": "text", "text": body},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ]
        )
    return HumanMessage(body)


def _tool_use(ids: list[str]) -> list[dict[str, object]]:
    return [{"type": "tool_use", "id": c, "name": "read_file", "input": {"path": c}} for c in ids]


_CLAUDE = {"model_provider": "anthropic", "model_name": "claude-sonnet-4-5"}
PROVIDER_SHAPES = (
    "native",
    "thinking",
    "thinking_v1",
    "reasoning",
    "invalid",
    "image",
    "computer",
    "patch",
    "mcp",
    "search",
    "bedrock",
)
CLAUDE_SHAPES = ("native", "thinking", "thinking_v1")
"""The shapes a Claude run records (for checks by langchain-anthropic's own formatter)."""


@st.composite
def provider_round(
    draw: st.DrawFn, ids: list[str], body: str, shapes: Sequence[str] = PROVIDER_SHAPES
) -> list[BaseMessage]:
    """One tool round in a provider's own shape (issue 13's shapes).

    Anthropic native (``tool_use`` blocks, answered by a user turn of ``tool_result``
    blocks); Anthropic extended thinking (a signed thinking block first), also as LangChain
    v1 content (``output_version="v1"``: a ``reasoning`` block first, ``tool_call``
    blocks); OpenAI Responses (a reasoning item, ``function_call`` items); a call with
    unparsable arguments (in ``invalid_tool_calls``, answered with an error); a result
    carrying an image; OpenAI computer use (``computer_call`` items, each answered by a
    screenshot that must stay one); OpenAI's ``apply_patch`` (answered in a user turn);
    OpenAI's remote MCP approval requests (decided in a user turn, after an ``mcp_call``
    that holds its own output); OpenAI's tool search (one OpenAI ran, its output beside
    it; the client's, answered in a user turn); Claude's thinking on Bedrock (a signed
    ``reasoning_content`` block first, as langchain-aws records it).
    """
    shape = draw(st.sampled_from(list(shapes)))
    calls = [{"name": "read_file", "args": {"path": c}, "id": c} for c in ids]
    if shape == "native":
        call = AIMessage([{"type": "text", "text": body}, *_tool_use(ids)])
        results = [{"type": "tool_result", "tool_use_id": c, "content": body} for c in ids]
        return [call, HumanMessage(results)]
    answers: list[BaseMessage] = [ToolMessage(body, tool_call_id=c, name="read_file") for c in ids]
    if shape == "bedrock":
        thought = {"type": "reasoning_content", "reasoning_content": {"text": body[:400]}}
        thought["reasoning_content"] |= {"signature": "sig"}
        content = [thought, {"type": "text", "text": "reading"}, *_tool_use(ids)]
        meta = {"model_provider": "bedrock_converse", "model_name": "anthropic.claude"}
        return [AIMessage(content, tool_calls=calls, response_metadata=meta), *answers]
    if shape in ("thinking", "thinking_v1"):
        thought = {"type": "thinking", "thinking": body[:400] or "hm", "signature": "sig"}
        content = [thought, {"type": "text", "text": "reading"}, *_tool_use(ids)]
        message = AIMessage(content, tool_calls=calls, response_metadata=_CLAUDE)
        if shape == "thinking_v1":
            meta = {**_CLAUDE, "output_version": "v1"}
            update = {"content": message.content_blocks, "response_metadata": meta}
            message = message.model_copy(update=update)
        return [message, *answers]
    if shape == "reasoning":
        reasoning = {"type": "reasoning", "id": f"rs_{ids[0]}", "summary": []}
        items = [
            {"type": "function_call", "call_id": c, "name": "read_file", "arguments": "{}"}
            for c in ids
        ]
        return [AIMessage([reasoning, *items], tool_calls=calls), *answers]
    if shape == "patch":  # OpenAI's apply_patch: call items, a user turn answers them
        op = {"type": "update_file", "path": f"src/{ids[0]}.py", "diff": body[:200]}
        patches = [{"type": "apply_patch_call", "call_id": c, "operation": op} for c in ids]
        done = [{"type": "apply_patch_call_output", "call_id": c, "output": body} for c in ids]
        return [AIMessage([{"type": "text", "text": body}, *patches]), HumanMessage(done)]
    if shape == "mcp":  # OpenAI's remote MCP: approval requests, a user turn decides them
        ran = {"type": "mcp_call", "id": f"mcp_{ids[0]}", "name": "read_file", "output": body}
        asks = [{"type": "mcp_approval_request", "id": c, "name": "read_file"} for c in ids]
        yes = [
            {"type": "mcp_approval_response", "approval_request_id": c, "approve": True}
            for c in ids
        ]
        return [AIMessage([ran, *asks]), HumanMessage(yes)]
    if shape == "search":  # OpenAI's tool search: run by OpenAI, then by the client
        ran = {"type": "tool_search_call", "id": f"ts_{ids[0]}", "execution": "server"}
        got = {"type": "tool_search_output", "execution": "server", "tools": []}
        asks = [{"type": "tool_search_call", "call_id": c, "execution": "client"} for c in ids]
        tools = [{"type": "function", "name": "read_file", "description": body}]
        found = [{"type": "tool_search_output", "call_id": c, "tools": tools} for c in ids]
        return [AIMessage([ran | {"arguments": {}}, got, *asks]), HumanMessage(found)]
    if shape == "computer":  # OpenAI computer use: call items, screenshots answer them
        actions = [{"type": "computer_call", "call_id": c, "action": {"type": "wait"}} for c in ids]
        shot = [{"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}]
        kind = {"type": "computer_call_output"}
        outputs = [ToolMessage(shot, tool_call_id=c, additional_kwargs=kind) for c in ids]
        return [AIMessage([{"type": "text", "text": body}, *actions]), *outputs]
    if shape == "invalid":
        bad = {"name": "read_file", "args": "{oops", "id": f"{ids[0]}_bad", "error": "bad json"}
        error = ToolMessage("Error: bad JSON", tool_call_id=f"{ids[0]}_bad", status="error")
        return [AIMessage(body, tool_calls=calls, invalid_tool_calls=[bad]), *answers, error]
    image = {"type": "image", "url": "https://example.com/screen.png"}
    results = [
        ToolMessage([{"type": "text", "text": body}, image], tool_call_id=c, name="read_file")
        for c in ids
    ]
    return [AIMessage(body, tool_calls=calls), *results]


@st.composite
def units(
    draw: st.DrawFn, *, allow_user: bool = True, shapes: Sequence[str] = PROVIDER_SHAPES
) -> list[BaseMessage]:
    """One whole unit: a user turn, an assistant answer, a tool round (parallel calls) in
    LangChain's shape or in a provider's own (see :func:`provider_round`), or a file write
    whose arguments carry the file."""
    kinds = ["assistant", "tools", "tools", "provider", "write"]
    kinds += ["user", "user"] if allow_user else []
    kind = draw(st.sampled_from(kinds))
    if kind == "user":
        return [draw(user_turn())]
    if kind == "assistant":
        return [AIMessage(draw(text()))]
    n_calls = draw(st.integers(min_value=1, max_value=3))
    uid = draw(st.uuids()).hex[:8]
    ids = [f"call_{uid}_{k}" for k in range(n_calls)]
    if kind == "provider":
        return draw(provider_round(ids, draw(text()), shapes))
    if kind == "write":  # the model writes a file: the call's arguments are what is big
        body = draw(text())
        path = f"src/{ids[0]}.py"
        calls = [{"name": "write_file", "args": {"path": path, "content": body}, "id": ids[0]}]
        return [AIMessage("", tool_calls=calls), ToolMessage("ok", tool_call_id=ids[0])]
    call = AIMessage(
        draw(text()),
        tool_calls=[
            {"name": "read_file", "args": {"path": f"src/{cid}.py"}, "id": cid} for cid in ids
        ],
    )
    return [call, *(ToolMessage(draw(text()), tool_call_id=cid, name="read_file") for cid in ids)]


@st.composite
def valid_records(
    draw: st.DrawFn,
    *,
    min_units: int = 1,
    max_units: int = 60,
    shapes: Sequence[str] = PROVIDER_SHAPES,
    alternating: bool = False,
    interrupted: bool = False,
) -> list[BaseMessage]:
    """A valid record: optional leading system messages, a user turn first, then whole units
    (their provider rounds drawn from ``shapes``). ``alternating``: as a provider's own run
    records it (see :func:`_alternate`); ``interrupted``: the user may also speak right
    after tool results, while the loop runs."""
    out: list[BaseMessage] = [SystemMessage(draw(text())) for _ in range(draw(st.integers(0, 2)))]
    out.append(draw(user_turn()))
    for _ in range(draw(st.integers(min_value=min_units, max_value=max_units))):
        unit = draw(units(shapes=shapes))
        if alternating:
            _alternate(out, unit, interrupted=interrupted)
        out.extend(unit)
    return with_thinking_turns(out)


def _alternate(out: list[BaseMessage], unit: list[BaseMessage], *, interrupted: bool) -> None:
    """Make ``out + unit`` read as a provider's own run: the model never answers nothing,
    a user turn comes between two answers, and, unless ``interrupted``, the model answers
    its tool results before the user speaks again. A user message right after tool
    results (the user spoke while the agent worked, a tool ended the run) goes in the
    same user turn as those results: langchain-anthropic merges the two, and the tool
    loop runs on, its thinking step still first."""
    first, last = unit[0], out[-1]
    if isinstance(first, AIMessage):
        if not first.content and not first.tool_calls:
            unit[0] = first.model_copy(update={"content": "Done."})
        if isinstance(last, AIMessage):
            out.append(HumanMessage("Go on."))
    elif not interrupted and (
        not isinstance(last, AIMessage | HumanMessage) or is_tool_result_turn(last)
    ):
        out.append(AIMessage("Done."))


THOUGHT = {"type": "thinking", "thinking": "first, the plan", "signature": "sig"}
_CLAUDE_THOUGHTS = frozenset({"thinking", "redacted_thinking"})


def thinks(message: BaseMessage) -> bool:
    """Whether an assistant message carries a Claude thought, read here rather than by the
    package (its reading is what the checks test): a thinking or redacted thinking block,
    native or wrapped in v1's ``non_standard``, a v1 ``reasoning`` block of Claude's, or a
    signed ``reasoning_content`` block (langchain-aws)."""
    if not isinstance(message, AIMessage) or not isinstance(message.content, list):
        return False
    claude = message.response_metadata.get("model_provider") == "anthropic"
    return any(
        isinstance(b, dict)
        and (
            b.get("type") in _CLAUDE_THOUGHTS
            or (b.get("value") or {}).get("type") in _CLAUDE_THOUGHTS
            or (claude and b.get("type") == "reasoning")
            or "signature" in (b.get("reasoning_content") or {})  # Claude on Bedrock
        )
        for b in message.content
    )


def with_thinking_turns(record: list[BaseMessage]) -> list[BaseMessage]:
    """A record where thinking is on opens every turn's assistant side with thinking.

    That is what Claude sends with extended thinking (it thinks once, at the start of
    its turn); a record that mixes the two is not a valid request, so valid records
    never do.
    """
    if not any(thinks(m) for m in record):
        return record
    out = list(record)
    expect = False
    for i, m in enumerate(out):
        if isinstance(m, HumanMessage) and not is_tool_result_turn(m):
            # A user message right after tool results is in the running loop's turn.
            expect = expect or not _after_results(out, i)
            continue
        if expect and isinstance(m, AIMessage):
            expect = False
            if not thinks(m):
                body = (
                    m.content
                    if isinstance(m.content, list)
                    else [{"type": "text", "text": m.content}]
                )
                out[i] = m.model_copy(update={"content": [THOUGHT, *body]})
    return out


def _after_results(record: list[BaseMessage], i: int) -> bool:
    """Whether the user messages up to ``record[i]`` come right after tool results."""
    j = i - 1
    while j >= 0 and isinstance(record[j], HumanMessage) and not is_tool_result_turn(record[j]):
        j -= 1
    last = record[j] if j >= 0 else None
    return isinstance(last, ToolMessage) or (
        isinstance(last, HumanMessage) and is_tool_result_turn(last)
    )


@st.composite
def any_records(draw: st.DrawFn) -> list[BaseMessage]:
    """Records that may be invalid: no user turn, orphans, unanswered calls, late system."""
    out: list[BaseMessage] = []
    for _ in range(draw(st.integers(min_value=0, max_value=30))):
        choice = draw(st.integers(0, 9))
        if choice == 0:
            out.append(ToolMessage(draw(text()), tool_call_id=f"orphan_{len(out)}"))
        elif choice == 1:
            out.append(
                AIMessage("", tool_calls=[{"name": "finish", "args": {}, "id": f"u_{len(out)}"}])
            )
        elif choice == 3:  # an invalid call never answered; an orphan tool_result turn
            bad = {"name": "edit", "args": "{", "id": f"bad_{len(out)}", "error": "bad json"}
            out.append(AIMessage("", invalid_tool_calls=[bad]))
            orphan = {"type": "tool_result", "tool_use_id": f"gone_{len(out)}", "content": "x"}
            out.append(HumanMessage([orphan]))
        elif choice == 2:
            out.append(SystemMessage(draw(text())))
        else:
            out.extend(draw(units(allow_user=draw(st.booleans()))))
    return out


_ODD_BLOCKS = (
    "a plain string",
    {"type": "text"},
    {"type": "text", "text": " "},
    {"type": "text", "text": "word " * 2_000},
    {"type": "thinking", "thinking": "plan", "signature": "sig"},
    {"type": "document", "source": {"type": "text", "data": "doc " * 50}},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    {"type": "tool_result", "tool_use_id": "gone", "content": "x"},
)


@st.composite
def _odd_call(draw: st.DrawFn, cid: str) -> AIMessage:
    """A call in one of the shapes LangChain and the providers record it, its id ``cid``."""
    shapes = ["tool_calls", "tool_use", "function_call", "v1", "invalid", "computer"]
    shape = draw(st.sampled_from(shapes))
    call = {"name": "run", "args": {"cmd": "cat a.py"}, "id": cid}
    if shape == "tool_calls":
        return AIMessage("", tool_calls=[call])
    if shape == "tool_use":
        return AIMessage([{"type": "tool_use", "id": cid, "name": "run", "input": {}}])
    if shape == "computer":
        return AIMessage([{"type": "computer_call", "call_id": cid, "action": {"type": "wait"}}])
    if shape == "invalid":
        bad = {"name": "run", "args": "{", "id": cid, "error": "bad json"}
        return AIMessage("", invalid_tool_calls=[bad])
    if shape == "v1":
        block: dict[str, object] = {"type": "tool_call", "id": cid, "name": "run", "args": {}}
    else:
        block = {"type": "function_call", "call_id": cid, "name": "run", "arguments": "{}"}
    return AIMessage([block], tool_calls=[call])


@st.composite
def odd_records(draw: st.DrawFn) -> list[BaseMessage]:
    """Records of unusual but legal shapes, valid or not: content lists mixing plain
    strings and blocks (thinking after text, blank text beside an orphan result), and
    calls in every shape a call takes (``tool_calls``, ``tool_use``, a Responses
    ``function_call``, v1 ``tool_call``, ``invalid_tool_calls``), their ids drawn from
    a few so that they are reused, answered by a ``ToolMessage`` or a native turn; and
    OpenAI's legacy ``function_call``, answered or not by a ``FunctionMessage``."""
    out: list[BaseMessage] = []
    blocks = st.lists(st.sampled_from(_ODD_BLOCKS), min_size=1, max_size=3)
    for _ in range(draw(st.integers(min_value=1, max_value=24))):
        kind = draw(st.sampled_from(["user", "assistant", "round", "round", "system", "legacy"]))
        if kind == "user":
            out.append(HumanMessage(draw(blocks)))
        elif kind == "assistant":
            out.append(AIMessage(draw(blocks)))
        elif kind == "system":
            out.append(SystemMessage("be brief"))
        elif kind == "legacy":  # OpenAI's functions API: no call id, answered right after
            call = {"name": "run", "arguments": '{"cmd": "cat a.py"}'}
            out.append(AIMessage("", additional_kwargs={"function_call": call}))
            if draw(st.booleans()):
                out.append(FunctionMessage("out " * draw(st.integers(1, 3_000)), name="run"))
        else:
            cid = draw(st.sampled_from(["t1", "t2", "t3"]))
            out.append(draw(_odd_call(cid)))
            if draw(st.booleans()):
                out.append(ToolMessage("out " * draw(st.integers(1, 3_000)), tool_call_id=cid))
            else:
                result = {"type": "tool_result", "tool_use_id": cid, "content": "out"}
                out.append(HumanMessage([result]))
    return out
