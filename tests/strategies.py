"""Hypothesis strategies for transcripts: valid records built from whole units."""

from __future__ import annotations

from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

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
    body = draw(text())
    if draw(st.integers(0, 4)) == 0:  # a content-block list
        return HumanMessage(
            content=[
                {"type": "text", "text": body},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ]
        )
    return HumanMessage(body)


@st.composite
def units(draw: st.DrawFn, *, allow_user: bool = True) -> list[BaseMessage]:
    """One whole unit: a user turn, an assistant answer, or a tool round (parallel calls)."""
    kinds = ["assistant", "tools", "tools"] + (["user", "user"] if allow_user else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "user":
        return [draw(user_turn())]
    if kind == "assistant":
        return [AIMessage(draw(text()))]
    n_calls = draw(st.integers(min_value=1, max_value=3))
    uid = draw(st.uuids()).hex[:8]
    ids = [f"call_{uid}_{k}" for k in range(n_calls)]
    call = AIMessage(
        draw(text()),
        tool_calls=[
            {"name": "read_file", "args": {"path": f"src/{cid}.py"}, "id": cid} for cid in ids
        ],
    )
    return [call, *(ToolMessage(draw(text()), tool_call_id=cid, name="read_file") for cid in ids)]


@st.composite
def valid_records(draw: st.DrawFn, *, min_units: int = 1, max_units: int = 60) -> list[BaseMessage]:
    """A valid record: optional leading system messages, a user turn first, then whole units."""
    out: list[BaseMessage] = [SystemMessage(draw(text())) for _ in range(draw(st.integers(0, 2)))]
    out.append(draw(user_turn()))
    for _ in range(draw(st.integers(min_value=min_units, max_value=max_units))):
        out.extend(draw(units()))
    return out


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
        elif choice == 2:
            out.append(SystemMessage(draw(text())))
        else:
            out.extend(draw(units(allow_user=draw(st.booleans()))))
    return out
