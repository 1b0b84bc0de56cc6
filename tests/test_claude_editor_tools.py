"""Claude's text-editor tool, run by langchain-anthropic's middleware beside ours.

``StateClaudeTextEditorMiddleware`` gives the agent Claude's ``str_replace_based_edit_tool``
(one tool: ``view`` / ``create`` / ``str_replace`` / ``insert`` / ``delete`` / ``rename``,
files kept in the graph state). The working memory must read it as it reads OpenHands'
``str_replace_editor``: the brief names the files the run changed, and a fold re-attaches
what the run viewed through it.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_anthropic.middleware import StateClaudeTextEditorMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_builderforce_memory import BuilderforceMemoryMiddleware
from langchain_builderforce_memory.messages import is_stamped
from langchain_builderforce_memory.testing import ScriptedChatModel, assert_valid_request
from langchain_builderforce_memory.tokens import count_tokens

EDITOR = "str_replace_based_edit_tool"
BUDGET = 8_000


def _edit(i: int, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": EDITOR, "args": args, "id": f"edit-{i}"}])


def _script() -> list[AIMessage | str]:
    """Write and fix app.py, then write and view ten notes: enough to fold at 8k."""
    body = "".join(f"def handler_{k}(request):\n    return f(request, {k})\n" for k in range(30))
    script: list[AIMessage | str] = [
        _edit(0, command="create", path="/src/app.py", file_text=body),
        _edit(1, command="str_replace", path="/src/app.py", old_str="(request, 7)", new_str="(8)"),
        _edit(2, command="view", path="/src/app.py"),
    ]
    for i in range(10):
        note = f"/docs/n{i}.md"
        script.append(_edit(10 + 2 * i, command="create", path=note, file_text="x\n" * 400))
        script.append(_edit(11 + 2 * i, command="view", path=note))
    return [*script, "done"]


def _requests() -> list[list[BaseMessage]]:
    model = ScriptedChatModel(script=_script())
    agent = create_agent(
        model,
        [],
        middleware=[
            StateClaudeTextEditorMiddleware(),
            BuilderforceMemoryMiddleware(lambda prompt: "NOTE", max_tokens=BUDGET),
        ],
        checkpointer=InMemorySaver(),
    )
    agent.invoke(
        {"messages": [HumanMessage("Fix the off-by-one in app.py")]},
        {"configurable": {"thread_id": "t"}},
    )
    return model.requests


def test_the_brief_names_the_file_changed_and_a_fold_re_attaches_a_viewed_one() -> None:
    requests = _requests()
    for request in requests:
        assert_valid_request(request)
        assert count_tokens(request) <= BUDGET
    last = requests[-1]
    briefs = [m.text for m in last if is_stamped(m, "volatile_tail")]
    assert briefs, "no brief: the working memory saw none of the editor's calls"
    changed = briefs[0].split("Changed:", 1)[1]
    assert "/src/app.py" in changed
    assert "/docs/n9.md" in changed
    reattached = [m.text for m in last if is_stamped(m, "restored")]
    assert reattached, "the fold re-attached nothing"
    assert all(f"{EDITOR}(" in text and '"command": "view"' in text for text in reattached)
