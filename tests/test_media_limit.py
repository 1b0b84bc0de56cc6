"""A request holds at most 100 images and document pages (Anthropic's limit), whatever the
token budget: a run of small screenshots was refused on every turn once it had taken its
101st (anthropics/claude-code#19822)."""

from __future__ import annotations

import base64
import copy
import io
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from PIL import Image

from langchain_builderforce_memory import (
    CompactingChatMessageHistory,
    build_working_transcript,
    pack_handoff,
    request_problems,
    windowed,
)
from langchain_builderforce_memory.media import image_size
from langchain_builderforce_memory.media_limit import (
    MANY_IMAGES,
    MANY_IMAGES_BATCH,
    MAX_MEDIA_BYTES,
    MAX_MEDIA_UNITS,
    MAX_MESSAGE_DOCUMENTS,
    MAX_MESSAGE_IMAGES,
    MEDIA_BATCH,
    MEDIA_BYTES_BATCH,
    view_media,
    within_media_limit,
    within_message_media_limit,
)
from langchain_builderforce_memory.testing import ScriptedChatModel

from .helpers import AGENT_KINDS, build_agent, converse_model, examples, pdf_with_object_streams
from .provider_shapes import (
    anthropic_image_problems,
    anthropic_media,
    anthropic_request,
    anthropic_wire,
    bedrock_media_problems,
    bedrock_request,
    png,
    png_b64,
)


def _units(view: list[BaseMessage]) -> int:
    return view_media(view).units


SHOT = png_b64(32, 32)  # 85 tokens by our count: 300 of them fit a 64k budget easily


def _shot(n: int) -> list[str | dict[str, Any]]:
    return [
        {"type": "text", "text": f"screenshot {n}"},
        {"type": "image", "base64": SHOT, "mime_type": "image/png"},
        {"type": "image", "base64": SHOT, "mime_type": "image/png"},
    ]


def _run(steps: int) -> list[BaseMessage]:
    record: list[BaseMessage] = [HumanMessage("Click through the settings pages.", id="u0")]
    for n in range(steps):
        call = {"name": "screenshot", "args": {"n": n}, "id": f"c{n}"}
        record.append(AIMessage(f"step {n}", tool_calls=[call], id=f"a{n}"))
        record.append(ToolMessage(_shot(n), tool_call_id=f"c{n}", id=f"t{n}"))
    return record


ENTRIES: dict[str, tuple[int, Callable[[list[BaseMessage]], list[BaseMessage]]]] = {
    "windowed": (150, lambda r: windowed(r, max_tokens=200_000, max_messages=None)),
    # 60 screenshots, 121 messages: under the ceiling, so nothing is folded yet.
    "build_working_transcript": (
        60,
        lambda r: build_working_transcript(r, summarizer=lambda _: "note").messages,
    ),
    "pack_handoff": (
        150,
        lambda r: (
            pack_handoff(r, target_context_tokens=200_000, reserve_output_tokens=8_000).messages
        ),
    ),
}


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_a_view_holds_at_most_100_media_and_the_newest_whole(entry: str) -> None:
    steps, build = ENTRIES[entry]
    record = _run(steps)
    before = copy.deepcopy(record)
    view = build(record)
    assert anthropic_media(anthropic_request(record)) > MAX_MEDIA_UNITS  # refused as is
    assert anthropic_wire(view) == []
    assert MAX_MEDIA_UNITS - MEDIA_BATCH < _units(view) <= MAX_MEDIA_UNITS
    assert view[-1].content == record[-1].content  # the newest screenshot, as taken
    assert record == before


def test_the_oldest_go_first_in_batches_so_the_front_moves_once_a_batch() -> None:
    views = [windowed(_run(n), max_tokens=200_000, max_messages=None) for n in range(45, 90)]
    left_out = [2 * n - _units(v) for n, v in zip(range(45, 90), views, strict=True)]
    assert all(k % MEDIA_BATCH == 0 for k in left_out)
    assert sorted(set(left_out)) == [0, 20, 40, 60, 80]  # 90 to 180 images: 5 batches
    for view, k in zip(views, left_out, strict=True):
        labelled = [m for m in view if isinstance(m, ToolMessage) and "left out" in str(m.content)]
        assert len(labelled) == k // 2  # two a screenshot, from the first on
        assert all(m.id == f"t{i}" for i, m in enumerate(labelled))


def test_inline_bytes_have_their_limit_too() -> None:
    # A full-screen screenshot is ~1,600 tokens and megabytes of base64: 40 of them fit a
    # 100k budget and no request (Anthropic takes 32 MB in all; Gemini 20 MB inline).
    big = base64.b64encode(png(1920, 1080) + bytes(750_000)).decode()  # 1 MB of base64
    record: list[BaseMessage] = [HumanMessage("Check each page.", id="u0")]
    for n in range(40):
        record.append(AIMessage("", tool_calls=[{"name": "shot", "args": {}, "id": f"c{n}"}]))
        image = {"type": "image", "base64": big, "mime_type": "image/png"}
        record.append(ToolMessage([image], tool_call_id=f"c{n}", id=f"t{n}"))
    view = windowed(record, max_tokens=100_000)
    assert len(json.dumps(anthropic_request(record))) > 32_000_000  # refused as is (413)
    assert len(json.dumps(anthropic_request(view))) < 21_000_000
    held = view_media(view)
    assert MAX_MEDIA_BYTES - MEDIA_BYTES_BATCH - len(big) < held.inline_bytes <= MAX_MEDIA_BYTES
    assert view[-1].content == record[-1].content
    assert anthropic_wire(view) == []


def test_the_task_s_own_image_is_left_out_last() -> None:
    # Oldest first would have labelled the mockup the task is about before any screenshot.
    mockup = {"type": "image", "base64": SHOT, "mime_type": "image/png"}
    record = _run(60)
    record[0] = HumanMessage(["Make the settings page look like this.", mockup], id="u0")
    view = within_media_limit(record)
    assert view[0] is record[0]
    assert _units(view) == 101 - MEDIA_BATCH
    assert "left out" in str(view[2].content)  # the first screenshot instead


def test_a_pdf_counts_its_pages() -> None:
    pdf = base64.b64encode(pdf_with_object_streams(60)).decode()
    document = {"type": "file", "base64": pdf, "mime_type": "application/pdf"}
    read = {"name": "read_manual", "args": {}, "id": "m"}
    record: list[BaseMessage] = [
        HumanMessage("Read the manual, then check the settings pages.", id="u0"),
        AIMessage("", tool_calls=[read], id="am"),
        ToolMessage([document], tool_call_id="m", id="tm"),
        *_run(25)[1:],  # 50 images after it: 110 units
    ]
    view = within_media_limit(record)
    assert _units(view) == 50
    assert "[file application/pdf] (left out of this view" in str(view[2].content)
    assert view[3:] == record[3:]


def test_a_screenshot_a_computer_call_needs_whole_is_never_labelled() -> None:
    shot = {"type": "input_image", "image_url": f"data:image/png;base64,{SHOT}"}
    outputs: list[BaseMessage] = [HumanMessage("go")]
    for n in range(120):
        outputs.append(AIMessage("", tool_calls=[{"name": "computer", "args": {}, "id": f"c{n}"}]))
        outputs.append(
            ToolMessage(
                [shot],
                tool_call_id=f"c{n}",
                additional_kwargs={"type": "computer_call_output"},
            )
        )
    assert within_media_limit(outputs) == outputs  # OpenAI takes 500: they stay whole


def _agent_requests(
    shots: Callable[[int], list[str | dict[str, Any]]], steps: int
) -> list[list[BaseMessage]]:
    """What ``create_agent`` with our middleware sends the model over ``steps`` screenshots."""

    @tool(response_format="content")
    def screenshot(n: int) -> list[str | dict[str, Any]]:
        """Take a screenshot."""
        return shots(n)

    calls = [
        AIMessage(f"step {n}", tool_calls=[{"name": "screenshot", "args": {"n": n}, "id": f"c{n}"}])
        for n in range(steps)
    ]
    model = ScriptedChatModel(script=[*calls, "done"])
    agent = build_agent("create_agent", model, [screenshot], checkpointer=InMemorySaver())
    agent.invoke(
        {"messages": [HumanMessage("Click through the settings pages.")]},
        {"configurable": {"thread_id": "t"}, "recursion_limit": 1_000},
    )
    return model.requests


@pytest.mark.slow  # long: the main stage runs it; the Python 3.10 stage does not
def test_create_agent_never_sends_more_than_100_media() -> None:
    requests = _agent_requests(_shot, 80)
    media = [anthropic_media(anthropic_request(r)) for r in requests]
    assert max(media) <= MAX_MEDIA_UNITS
    assert media[-1] > MAX_MEDIA_UNITS - MEDIA_BATCH  # the newest still there
    assert all(anthropic_wire(r) == [] for r in requests)


LARGE = png_b64(2560, 1440)  # a full-screen screenshot: its header is what the limits read


def _browse(steps: int, shot: str = LARGE) -> list[BaseMessage]:
    record: list[BaseMessage] = [HumanMessage("Check each page of the shop.", id="u0")]
    for n in range(steps):
        call = {"name": "screenshot", "args": {"n": n}, "id": f"c{n}"}
        record.append(AIMessage(f"step {n}", tool_calls=[call], id=f"a{n}"))
        image = {"type": "image", "base64": shot, "mime_type": "image/png"}
        record.append(ToolMessage([image], tool_call_id=f"c{n}", id=f"t{n}"))
    return record


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_past_20_images_a_view_holds_none_over_2000_pixels(entry: str) -> None:
    # Anthropic refuses a request of more than 20 images if one is over 2,000 pixels a
    # side: the 21st full-screen screenshot made every request after it fail
    # (anthropics/claude-code#13480).
    record = _browse(30)
    before = copy.deepcopy(record)
    view = ENTRIES[entry][1](record)
    assert anthropic_image_problems(anthropic_request(record))  # refused as is
    assert anthropic_wire(view) == []
    assert view[-1].content == record[-1].content  # the newest screenshot, as taken
    assert record == before


def test_large_images_go_oldest_first_in_batches_of_ten() -> None:
    views = [windowed(_browse(n), max_tokens=200_000, max_messages=None) for n in range(15, 60)]
    left_out = [n - _units(v) for n, v in zip(range(15, 60), views, strict=True)]
    assert all(k % MANY_IMAGES_BATCH == 0 for k in left_out)
    assert sorted(set(left_out)) == [0, 10, 20, 30, 40]
    for view, k in zip(views, left_out, strict=True):
        assert _units(view) <= MANY_IMAGES
        labelled = [m for m in view if isinstance(m, ToolMessage) and "left out" in str(m.content)]
        assert [m.id for m in labelled] == [f"t{i}" for i in range(k)]
        assert all("2560x1440 pixels" in str(m.content) for m in labelled)
    small = windowed(_browse(60, SHOT), max_tokens=200_000, max_messages=None)
    assert _units(small) == 60  # 32 x 32: any number of them (up to 100) is fine


def test_the_newest_large_images_stay_where_older_small_ones_can_go() -> None:
    # Found by the property below: 18 thumbnails, then a tool returned 3 full-screen
    # screenshots; leaving out large images first labelled the 3 newest. Older ones of any
    # size go first (10 at a time), and the newest stay whole.
    record = _browse(18, SHOT)
    call = {"name": "screenshot", "args": {"n": 18}, "id": "c18"}
    large = {"type": "image", "base64": LARGE, "mime_type": "image/png"}
    record += [
        AIMessage("step 18", tool_calls=[call], id="a18"),
        ToolMessage([large] * 3, tool_call_id="c18", id="t18"),
    ]
    view = within_media_limit(record)
    assert anthropic_wire(view) == []
    assert view[-1] is record[-1]
    labelled = [m.id for m in view if "left out" in str(m.content)]
    assert labelled == [f"t{i}" for i in range(MANY_IMAGES_BATCH)]


def test_an_image_no_request_takes_is_left_out_wherever_it_is() -> None:
    # Over 8,000 pixels a side, or 5 MB of base64: refused in any request, so one a tool
    # returned would fail every turn after it, the user's own too.
    tall = {"type": "image", "base64": png_b64(300, 9_000), "mime_type": "image/png"}
    heavy = base64.b64encode(png(800, 600) + bytes(4_000_000)).decode()  # 5.3 MB of base64
    record = _browse(3, SHOT)
    record[2] = ToolMessage([tall], tool_call_id="c0", id="t0")
    record[4] = ToolMessage(
        [{"type": "image", "base64": heavy, "mime_type": "image/png"}], tool_call_id="c1", id="t1"
    )
    record.append(HumanMessage(["Now make the header look like this.", tall], id="u1"))
    view = within_media_limit(record)
    assert anthropic_wire(record)
    assert anthropic_wire(view) == []
    assert "300x9000 pixels, larger than a request takes an image" in str(view[2].content)
    assert "5.1 MB, larger than a request takes an image" in str(view[4].content)
    assert view[6] is record[6]  # a small screenshot stays
    assert view[-1].content[0] == record[-1].content[0]
    assert "300x9000 pixels" in str(view[-1].content[1])


def test_create_agent_takes_more_than_20_full_screen_screenshots() -> None:
    requests = _agent_requests(
        lambda n: [{"type": "image", "base64": LARGE, "mime_type": "image/png"}], 35
    )
    assert [p for r in requests for p in anthropic_wire(r)] == []
    assert "[image" not in str(requests[-1][-1].content)  # the newest, whole


@pytest.mark.parametrize(
    ("fmt", "exif_chars"), [("PNG", 0), ("GIF", 0), ("WEBP", 0), ("JPEG", 0), ("JPEG", 50_000)]
)
def test_an_image_s_size_is_read_from_its_header_as_pillow_reads_it(
    fmt: str, exif_chars: int
) -> None:
    # Read a little of the base64 first, more only when the header is further in (a JPEG's
    # size comes after its tables and EXIF); remembered, so a view asks once an image.
    buffer = io.BytesIO()
    options: dict[str, Any] = {}
    if exif_chars:
        exif = Image.Exif()
        exif[0x010E] = "x" * exif_chars  # an ImageDescription: the header grows
        options["exif"] = exif
    Image.new("RGB", (2561, 1441), (40, 90, 200)).save(buffer, fmt, **options)
    data = base64.b64encode(buffer.getvalue()).decode()
    block = {"type": "image", "base64": data, "mime_type": f"image/{fmt.lower()}"}
    assert image_size(block) == (2561, 1441)
    assert image_size(block) == (2561, 1441)  # remembered
    assert image_size({"type": "image", "url": "https://x/y.png"}) is None


_PALETTE: dict[str, str] = {
    "small": SHOT,
    "large": LARGE,
    "tall": png_b64(300, 9_000),
    "heavy": base64.b64encode(png(800, 600) + bytes(4_000_000)).decode(),  # 5.3 MB of base64
}


@st.composite
def _media_runs(draw: st.DrawFn) -> list[BaseMessage]:
    """A run of screenshots of any size, one to three a tool result, and user turns
    carrying their own."""
    kinds = st.sampled_from(sorted(_PALETTE))
    record: list[BaseMessage] = [HumanMessage("Check each page.", id="u0")]
    for n in range(draw(st.integers(1, 70))):
        if draw(st.integers(0, 9)) == 0:
            shown = [
                {"type": "image", "base64": _PALETTE[k], "mime_type": "image/png"}
                for k in draw(st.lists(kinds, max_size=2))
            ]
            record.append(AIMessage("Looked.", id=f"d{n}"))
            record.append(HumanMessage(["And this one.", *shown], id=f"u{n + 1}"))
        call = {"name": "screenshot", "args": {"n": n}, "id": f"c{n}"}
        record.append(AIMessage(f"step {n}", tool_calls=[call], id=f"a{n}"))
        shots = [
            {"type": "image", "base64": _PALETTE[k], "mime_type": "image/png"}
            for k in draw(st.lists(kinds, min_size=1, max_size=3))
        ]
        record.append(ToolMessage(shots, tool_call_id=f"c{n}", id=f"t{n}"))
    return record


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=_media_runs())
def test_any_run_of_images_gets_views_a_provider_takes(record: list[BaseMessage]) -> None:
    before = copy.deepcopy(record)
    view = windowed(record, max_tokens=400_000, max_messages=None)
    assert anthropic_wire(view) == []  # 100 images and pages; each image's size
    assert view_media(view).inline_bytes <= MAX_MEDIA_BYTES
    newest = [b for b in record[-1].content if isinstance(b, dict)]
    shown = [b for b in view[-1].content if isinstance(b, dict)]
    for was, now in zip(newest, shown, strict=True):  # the newest whole, but what none takes
        assert now == was or "larger than a request takes an image" in str(now)
    assert record == before


def _parallel_shots(calls: int, per_call: int) -> list[BaseMessage]:
    """One assistant turn of ``calls`` parallel screenshot calls, ``per_call`` images each:
    langchain-aws sends their results as ONE Converse message."""
    ids = [f"c{n}" for n in range(calls)]
    record: list[BaseMessage] = [
        HumanMessage("Check every tab at once.", id="u0"),
        AIMessage("", tool_calls=[{"name": "shot", "args": {}, "id": i} for i in ids], id="a0"),
    ]
    shot = {"type": "image", "base64": SHOT, "mime_type": "image/png"}
    record += [
        ToolMessage([{"type": "text", "text": f"tab {i}"}, *[shot] * per_call], tool_call_id=i)
        for i in ids
    ]
    return record


def _pdfs(n: int) -> list[BaseMessage]:
    pdf = {"type": "file", "base64": _PDF, "mime_type": "application/pdf", "name": "spec"}
    return [HumanMessage(["Compare these specs.", *[pdf] * n], id="u0")]


_PDF = base64.b64encode(pdf_with_object_streams(1)).decode()


@pytest.mark.parametrize(
    ("record", "images", "documents"),
    [(_parallel_shots(8, 3), 20, 0), (_parallel_shots(4, 3), 12, 0), (_pdfs(7), 0, 5)],
    ids=["24 images", "12 images", "7 documents"],
)
def test_a_converse_message_holds_at_most_20_images_and_5_documents(
    record: list[BaseMessage], images: int, documents: int
) -> None:
    before = copy.deepcopy(record)
    view = within_message_media_limit(record)
    blocks = [b for m in view for b in m.content if isinstance(b, dict)]
    assert sum(b["type"] == "image" for b in blocks) == images
    assert sum(b["type"] == "file" for b in blocks) == documents
    assert bedrock_media_problems(bedrock_request(view)) == []
    assert anthropic_wire(view) == []
    assert record == before  # the record keeps them all
    if len(record) > 1:
        assert view[-1] is record[-1]  # the newest whole
    if view == record:  # within the limits: the very messages, nothing copied
        assert all(a is b for a, b in zip(view, record, strict=True))


@pytest.mark.parametrize("converse", [True, False], ids=["Bedrock Converse", "other model"])
@pytest.mark.parametrize("kind", AGENT_KINDS)
def test_agents_keep_bedrock_s_limit_per_message_only_for_bedrock(
    kind: str, converse: bool
) -> None:
    @tool(response_format="content")
    def shot(tab: int) -> list[str | dict[str, Any]]:
        """Screenshot a browser tab."""
        shot = {"type": "image", "base64": SHOT, "mime_type": "image/png"}
        return [{"type": "text", "text": f"tab {tab}"}, shot, shot, shot]

    calls = [{"name": "shot", "args": {"tab": n}, "id": f"c{n}"} for n in range(8)]
    script = [AIMessage("", tool_calls=calls), "done"]
    model = converse_model(script) if converse else ScriptedChatModel(script=script)
    agent = build_agent(kind, model, [shot], checkpointer=InMemorySaver())
    agent.invoke(
        {"messages": [HumanMessage("Check every tab.")]}, {"configurable": {"thread_id": "t"}}
    )
    sent = model.requests[-1]
    images = sum(b.get("type") == "image" for m in sent for b in m.content if isinstance(b, dict))
    assert bedrock_media_problems(bedrock_request(sent)) == (
        [] if converse else ["turn 2: 24 images, 0 documents"]
    )
    assert images == (20 if converse else 24)  # Anthropic and OpenAI take all 24: untouched


@pytest.mark.parametrize("converse", [True, False], ids=["Bedrock Converse", "other model"])
def test_the_history_keeps_bedrock_s_limit_per_message_only_for_bedrock(converse: bool) -> None:
    model = converse_model([]) if converse else ScriptedChatModel(script=[])
    history = CompactingChatMessageHistory(max_tokens=64_000, model=model)
    history.add_messages(_parallel_shots(8, 3))
    view = history.messages
    assert bedrock_media_problems(bedrock_request(view)) == (
        [] if converse else ["turn 2: 24 images, 0 documents"]
    )
    assert len(history.full_messages) == 10  # the record keeps every image


@st.composite
def _crowded_runs(draw: st.DrawFn) -> list[BaseMessage]:
    """Turns of parallel calls whose results carry images and PDFs, and user turns with
    their own: runs of any size, against Bedrock's limits per message."""
    image = {"type": "image", "base64": SHOT, "mime_type": "image/png"}
    pdf = {"type": "file", "base64": _PDF, "mime_type": "application/pdf", "name": "spec"}
    record: list[BaseMessage] = [HumanMessage("Review the tabs and specs.", id="u0")]
    for n in range(draw(st.integers(1, 6))):
        if n and draw(st.booleans()):
            media = [image] * draw(st.integers(0, 25)) + [pdf] * draw(st.integers(0, 7))
            record += [AIMessage("Next?", id=f"q{n}"), HumanMessage(["More.", *media], id=f"h{n}")]
        ids = [f"c{n}-{k}" for k in range(draw(st.integers(1, 10)))]
        calls = [{"name": "shot", "args": {}, "id": i} for i in ids]
        record.append(AIMessage("", tool_calls=calls, id=f"a{n}"))
        for i in ids:
            media = [image] * draw(st.integers(0, 4)) + [pdf] * draw(st.integers(0, 2))
            record.append(ToolMessage([{"type": "text", "text": i}, *media], tool_call_id=i))
    return record


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=_crowded_runs())
def test_any_run_keeps_bedrock_s_limits_per_message_labelling_no_more_than_needed(
    record: list[BaseMessage],
) -> None:
    before = copy.deepcopy(record)
    view = within_message_media_limit(record)
    assert bedrock_media_problems(bedrock_request(view)) == []
    assert request_problems(view) == []
    assert record == before
    for sent, held in zip(bedrock_request(view), bedrock_request(record), strict=True):
        kept, had = (
            Counter(
                next(iter(b))
                for m in turn["content"]
                for b in [m, *m.get("toolResult", {}).get("content", [])]
            )
            for turn in (sent, held)
        )
        assert kept["image"] == min(had["image"], MAX_MESSAGE_IMAGES)
        assert kept["document"] == min(had["document"], MAX_MESSAGE_DOCUMENTS)
