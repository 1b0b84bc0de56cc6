"""``RequestCheck``: a conversation's views checked from where they changed (issue 23's speed).

Each view a turn builds shares most of its messages with the last one. The check kept by
the conversation walks only from the last place no call was open before the first message
that changed; whatever the views, its answer must be :func:`request_problems`'.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory.request_check import RequestCheck
from langchain_builderforce_memory.validity import request_problems

from .helpers import examples
from .strategies import any_records, odd_records, units, valid_records

PROPERTY = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

RECORDS = st.one_of(
    valid_records(max_units=12),
    valid_records(max_units=12, shapes=("anthropic",), alternating=True, interrupted=True),
    any_records(),
    odd_records(),
)

# What a turn does to the last view: keeps its first ``cut`` messages (the same objects)
# and puts whole units, or the messages of another record, after them; swaps one
# message for another; or sets a message's calls or content anew in place.
STEPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("tail"),
            st.integers(0, 2),
            st.lists(units(), max_size=4).map(lambda us: [m for u in us for m in u]),
            st.just(12),
        ),
        st.tuples(st.just("grow"), st.integers(0, 10_000), RECORDS, st.integers(0, 12)),
        st.tuples(st.just("swap"), st.integers(0, 10_000), RECORDS, st.integers(0, 12)),
        st.tuples(st.just("edit"), st.integers(0, 10_000), st.just([]), st.just(0)),
    ),
    min_size=1,
    max_size=6,
)


def _next_view(
    view: list[BaseMessage], step: tuple[str, int, list[BaseMessage], int]
) -> list[BaseMessage]:
    kind, at, other, take = step
    if kind == "tail":  # a turn's new messages, after the last view less its last ``at``
        return [*view[: max(0, len(view) - at)], *other[:take]]
    if kind == "grow":
        cut = at % (len(view) + 1)
        return [*view[:cut], *other[:take]]
    if kind == "edit" and view:  # a field set anew in place: the same object, changed
        m = view[at % len(view)]
        if isinstance(m, AIMessage):
            m.tool_calls = []
        else:
            m.content = ""
        return view
    if not view or not other:
        return view
    i = at % len(view)
    return [*view[:i], other[take % len(other)], *view[i + 1 :]]


@PROPERTY
@given(first=RECORDS, steps=STEPS)
def test_each_view_has_the_problems_a_whole_walk_finds(
    first: list[BaseMessage], steps: list[tuple[str, int, list[BaseMessage], int]]
) -> None:
    check, view = RequestCheck(), first
    assert check.problems(view) == request_problems(view)
    for step in steps:
        view = _next_view(view, step)
        assert check.problems(view) == request_problems(view)


def _round(i: int) -> list[BaseMessage]:
    call = AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": f"c{i}"}])
    return [call, ToolMessage(f"out {i}", tool_call_id=f"c{i}")]


def test_a_growing_view_is_walked_from_where_it_grew() -> None:
    check, view = RequestCheck(), [HumanMessage("go"), *_round(0)]
    assert check.problems(view) == []
    for i in range(1, 5):
        view = [*view, *_round(i)]
        assert check.problems(view) == []
    assert check.resumed == 4


def test_a_call_id_used_before_the_change_is_still_seen() -> None:
    check, view = RequestCheck(), [HumanMessage("go"), *_round(0), *_round(1)]
    assert check.problems(view) == []
    reused = [*view, *_round(0)]
    assert check.problems(reused) == request_problems(reused) != []
    assert check.resumed == 1


def test_an_invalid_view_leaves_nothing_to_resume_from() -> None:
    check, view = RequestCheck(), [HumanMessage("go"), *_round(0)]
    orphan = [*view, ToolMessage("late", tool_call_id="c9")]
    assert check.problems(view) == []
    assert check.problems(orphan) != []
    assert check.problems([*orphan, *_round(1)]) != []
    assert check.resumed == 1  # the view after the invalid one was walked whole


def test_a_message_whose_calls_were_set_anew_in_place_is_walked_again() -> None:
    check, view = RequestCheck(), [HumanMessage("go"), *_round(0), *_round(1)]
    assert check.problems(view) == []
    view[1].tool_calls = []  # as HumanInTheLoopMiddleware revises an answer's calls
    grown = [*view, *_round(2)]
    assert check.problems(grown) == request_problems(grown) != []
