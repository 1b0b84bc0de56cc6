"""The output kinds OpenAI Responses calls are answered in, and how to answer each.

A ``function_call`` is answered by a ``function_call_output``: what langchain-openai sends
for a plain ``ToolMessage``. Other calls need an output of their own kind, and OpenAI
rejects any other: a ``computer_call`` (a ``ToolMessage`` marked ``computer_call_output``
holding a screenshot), a ``custom_tool_call`` (a ``ToolMessage`` holding a
``custom_tool_call_output`` block, what ``langchain_openai.custom_tool`` returns), an
``apply_patch_call`` and an ``mcp_approval_request`` (a user turn's
``apply_patch_call_output`` / ``mcp_approval_response`` item; a ``ToolMessage`` cannot
answer them), and a ``tool_search_call`` the client runs (a user turn's
``tool_search_output`` item, holding the tools it found). An error text written by the
tool node or by a middleware (``HumanInTheLoopMiddleware`` rejecting a call,
``ToolCallLimitMiddleware`` blocking one) is a plain ``ToolMessage``, so the repair
reshapes it (:func:`reshaped_answer`).
"""

from __future__ import annotations

from typing import Final

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory.blocks import block_dicts, call_id_key, wire_type

__all__ = [
    "answer_kind_problem",
    "call_kinds",
    "computer_output_problem",
    "is_computer_output",
    "is_whole_output",
    "reshaped_answer",
    "shaped_answer",
]

_OWN_KINDS: Final = frozenset(
    {
        "computer_call",
        "custom_tool_call",
        "apply_patch_call",
        "mcp_approval_request",
        "tool_search_call",
    }
)
"""Call block types a ``function_call_output`` cannot answer."""


def call_kinds(message: BaseMessage) -> dict[str, str]:
    """An assistant message's call ids -> the type of the call block naming them.

    A call known only from ``tool_calls`` is not in it (langchain-openai sends it as a
    ``function_call``).

    Example:
        >>> call_kinds(AIMessage([{"type": "computer_call", "call_id": "c1", "action": {}}]))
        {'c1': 'computer_call'}
    """
    if not isinstance(message, AIMessage):
        return {}
    return {str(b.get(k)): str(b["type"]) for b in block_dicts(message) if (k := call_id_key(b))}


def is_computer_output(message: BaseMessage) -> bool:
    """Whether langchain-openai sends ``message`` as a ``computer_call_output``.

    A ``ToolMessage`` marked ``additional_kwargs["type"] == "computer_call_output"``, or
    holding that item as a ``non_standard`` block. Only its screenshot is a valid output, so
    the clear tier and the elider leave it whole (a window or a fold drops it with its call).

    Example:
        >>> shot = [{"type": "input_image", "image_url": "data:image/png;base64,iVBO"}]
        >>> is_computer_output(ToolMessage(shot, tool_call_id="c1",
        ...     additional_kwargs={"type": "computer_call_output"}))
        True
    """
    if not isinstance(message, ToolMessage):
        return False
    if message.additional_kwargs.get("type") == "computer_call_output":
        return True
    return isinstance(message.content, list) and any(
        wire_type(b) == "computer_call_output" for b in block_dicts(message)
    )


def is_whole_output(message: BaseMessage) -> bool:
    """Whether ``message`` answers a call validly only whole: never cleared or cut.

    A screenshot answering a computer call (:func:`is_computer_output`); a user turn of
    ``tool_search_output`` items: the tools a client-run search loaded, a list OpenAI
    rejects text in place of (and gone, they are unloaded). A window or a fold drops
    either with its call.

    Example:
        >>> found = {"type": "tool_search_output", "call_id": "c1", "tools": []}
        >>> is_whole_output(HumanMessage([found])), is_whole_output(HumanMessage("hi"))
        (True, False)
    """
    if isinstance(message, HumanMessage):
        return any(wire_type(b) == "tool_search_output" for b in block_dicts(message))
    return is_computer_output(message)


def computer_output_problem(message: BaseMessage) -> str | None:
    """Why OpenAI would reject computer-call output ``message`` (no screenshot), or ``None``.

    Example:
        >>> computer_output_problem(ToolMessage("[cleared]", tool_call_id="c1",
        ...     additional_kwargs={"type": "computer_call_output"}))[:32]
        'a computer_call_output lost its '
    """
    if not is_computer_output(message) or "type" not in message.additional_kwargs:
        return None  # not one, or a non_standard item: sent as it is
    content = message.content  # langchain-openai sends a string as the image's URL
    if isinstance(content, str):
        ok = content.startswith(("data:image/", "https://", "http://"))
    else:
        ok = any(isinstance(b, dict) and b.get("type") == "input_image" for b in content)
    return None if ok else "a computer_call_output lost its screenshot: OpenAI needs an image"


_BLANK_PNG: Final = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGP4DwABAQEA"
    "sTj2FAAAAABJRU5ErkJggg=="
)
"""A 1x1 white PNG: all a computer call's made-up answer can show (a text is invalid)."""


def shaped_answer(kind: str | None, answer: ToolMessage) -> BaseMessage:
    """``answer`` in the shape a Responses call block of ``kind`` must be answered in.

    Example:
        >>> shaped_answer("custom_tool_call", ToolMessage("none", tool_call_id="c1")).content
        [{'type': 'custom_tool_call_output', 'output': 'none'}]
    """
    text, call_id, extra = answer.text, answer.tool_call_id, answer.additional_kwargs
    if kind == "custom_tool_call":
        return answer.model_copy(update={"content": [{"type": f"{kind}_output", "output": text}]})
    if kind == "apply_patch_call":  # sent only from a user turn
        done = {"type": f"{kind}_output", "call_id": call_id, "status": "failed", "output": text}
        return HumanMessage([done], additional_kwargs=extra)
    if kind == "mcp_approval_request":  # no decision came: the call was not approved
        no = {"type": "mcp_approval_response", "approval_request_id": call_id, "approve": False}
        return HumanMessage([{**no, "reason": text}], additional_kwargs=extra)
    if kind == "tool_search_call":  # found nothing: a text has no place in its output
        none = {"type": "tool_search_output", "call_id": call_id, "execution": "client"}
        return HumanMessage([{**none, "status": "completed", "tools": []}], additional_kwargs=extra)
    if kind == "computer_call":
        shot = [{"type": "input_image", "image_url": _BLANK_PNG}]
        meta = {**extra, "type": "computer_call_output"}
        return answer.model_copy(update={"content": shot, "additional_kwargs": meta})
    return answer


def _answer_kind(message: BaseMessage) -> str:
    """The call kind langchain-openai sends ``ToolMessage`` ``message`` as the output of."""
    if is_computer_output(message):
        return "computer_call"
    if any(wire_type(b) == "custom_tool_call_output" for b in block_dicts(message)):
        return "custom_tool_call"
    return "function_call"


def answer_kind_problem(call_kind: str, message: BaseMessage) -> str | None:
    """Why OpenAI would reject ``ToolMessage`` ``message`` answering a ``call_kind`` call.

    ``call_kind`` is the call's block type (:func:`call_kinds`; ``""`` for a call known
    only from ``tool_calls``). ``None`` when the output kinds match.

    Example:
        >>> answer_kind_problem("custom_tool_call", ToolMessage("Error: rejected",
        ...     tool_call_id="c1"))
        'a function_call_output answers a custom_tool_call; OpenAI rejects it'
    """
    want = call_kind if call_kind in _OWN_KINDS else "function_call"
    plain = isinstance(message.content, str) and "type" not in message.additional_kwargs
    if want == "function_call" and plain:  # the common case
        return None
    got = _answer_kind(message)
    return None if got == want else f"a {got}_output answers a {want}; OpenAI rejects it"


def reshaped_answer(call_kind: str, message: ToolMessage) -> BaseMessage:
    """``message`` sent as the output kind a ``call_kind`` call needs (a copy), keeping its text.

    A computer call can only take a screenshot, so its text is lost there (a blank one).

    Example:
        >>> reshaped_answer("custom_tool_call", ToolMessage("Error: rejected",
        ...     tool_call_id="c1")).content
        [{'type': 'custom_tool_call_output', 'output': 'Error: rejected'}]
    """
    if answer_kind_problem(call_kind, message) is None:
        return message
    outputs = [str(b.get("output") or "") for b in block_dicts(message) if "output" in b]
    text = "\n".join(outputs) if outputs and not message.text else message.text
    extra = {k: v for k, v in message.additional_kwargs.items() if k != "type"}
    plain = message.model_copy(update={"content": text, "additional_kwargs": extra})
    return shaped_answer(call_kind, plain)
