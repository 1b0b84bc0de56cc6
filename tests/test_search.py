"""The search core: FTS5 substring + BM25 ranking over the record, incremental per thread."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory.messages import message_id
from langchain_builderforce_memory.search import (
    recall_dropped,
    render_search,
    search_record,
)
from langchain_builderforce_memory.search_index import (
    MAX_SEARCH_LIMIT,
    RecordIndex,
    RecordIndexes,
    message_search_text,
)
from langchain_builderforce_memory.tokens import ApproximateTokenCounter
from tests.helpers import anthropic_native, examples, load_transcript, transcript_params


def _run(n_rounds: int, *, needle_at: int | None = None) -> list[BaseMessage]:
    out: list[BaseMessage] = [HumanMessage("fix the parser in src/parser.py", id="h0")]
    for i in range(n_rounds):
        cid = f"c{i}"
        out.append(
            AIMessage(
                f"step {i}",
                id=f"a{i}",
                tool_calls=[{"name": "read_file", "args": {"path": f"src/m{i}.py"}, "id": cid}],
            )
        )
        body = f"# src/m{i}.py\ndef handler_{i}(request): return parse(request)\n"
        if i == needle_at:
            body += "Traceback: ValueError: bad magic 0xDEADBEEF in header\n"
        out.append(ToolMessage(body, tool_call_id=cid, id=f"t{i}"))
    return out


@pytest.mark.parametrize("native", [False, True], ids=["tool_messages", "anthropic_native"])
def test_exact_substring_first_with_tool_name_args_and_snippet(native: bool) -> None:
    record = _run(40, needle_at=10)
    record = anthropic_native(record) if native else record
    # A phrase across two lines of the output: a native result is searched as its text.
    result = search_record(record, "parse(request)\nTraceback: ValueError: bad magic 0xDEADBEEF")
    first = result.hits[0]
    assert first.exact
    assert first.message_id == "t10"
    assert first.position == 22
    assert first.role == "tool"
    assert first.tool_name == "read_file"
    assert first.tool_args == '{"path": "src/m10.py"}'
    assert "0xDEADBEEF" in first.snippet
    # Then the lexical (BM25) hits: messages sharing the query's distinctive words.
    assert all(not h.exact for h in result.hits[1:])


def test_words_rank_by_bm25_when_no_substring_matches() -> None:
    record = [
        HumanMessage("hello", id="h"),
        AIMessage("the lexer tokenizes input", id="a1"),
        AIMessage("lexer lexer: the lexer rejects unicode escapes in the lexer", id="a2"),
        AIMessage("unrelated text about the weather", id="a3"),
    ]
    result = search_record(record, "why does the lexer reject unicode")
    assert [h.message_id for h in result.hits] == ["a2", "a1"]
    assert not any(h.exact for h in result.hits)
    assert result.total == 2


def test_hidden_ids_and_end_exclude_what_the_view_shows() -> None:
    record = _run(10)
    shown = {message_id(m) for m in record[-4:]}
    result = search_record(record, "handler_9", hidden_ids=shown)
    assert result.hits == ()
    assert result.searched == len(record) - 4
    assert search_record(record, "handler_9").hits[0].message_id == "t9"
    assert search_record(record, "handler_9", end=len(record) - 1).hits == ()


def test_incremental_index_adds_only_new_messages_and_rebuilds_a_rewritten_record() -> None:
    index = RecordIndex()
    record = _run(20)
    assert index.search(record, "handler_3").hits[0].message_id == "t3"
    grown = [*record, *_run(25)[41:]]  # five more rounds appended, a new list
    assert index.search(grown, "handler_21").hits[0].message_id == "t21"
    assert len(index) == len(grown)
    assert index.rebuilds == 0
    rewritten = [m for m in grown if m.id not in {"a3", "t3"}]  # a RemoveMessage edit
    assert index.search(rewritten, "handler_3").hits == ()
    assert index.rebuilds == 1
    assert len(index) == len(rewritten)
    assert index.search(rewritten, "handler_21").hits[0].position == 44 - 2


def test_the_callers_messages_are_not_mutated() -> None:
    record = _run(5, needle_at=2)
    before = copy.deepcopy(record)
    search_record(record, "0xDEADBEEF")
    assert record == before


@pytest.mark.parametrize(
    "query",
    ['"', "*", "AND OR NOT", "NEAR(a b)", "col:x", "a'b", "^start", "((", "\\", "%_", "x"],
)
def test_fts_syntax_in_a_query_is_searched_as_text(query: str) -> None:
    record = [HumanMessage("hi"), AIMessage(f"literal {query} here")]
    result = search_record(record, query)
    assert result.hits
    assert result.hits[0].position == 1
    assert result.hits[0].exact


def test_a_nul_in_a_query_is_a_word_break_not_an_sqlite_error() -> None:
    # JSON carries "\u0000" in a model's arguments; SQLite stopped the query string there.
    record = [HumanMessage("hi"), AIMessage("E42 in the lexer")]
    assert [h.position for h in search_record(record, "lexer\x00E42").hits] == [1]
    assert search_record(record, "\x00").hits == ()


def test_empty_query_and_huge_limit() -> None:
    record = _run(80)
    assert search_record(record, "   ").hits == ()
    many = search_record(record, "handler", limit=10_000)
    assert len(many.hits) == MAX_SEARCH_LIMIT
    assert many.total == 80


def test_render_caps_tokens_and_says_how_many_more() -> None:
    record = [HumanMessage("go")] + [AIMessage(f"needle {i} " + "pad " * 300) for i in range(30)]
    result = search_record(record, "needle", limit=MAX_SEARCH_LIMIT)
    counter = ApproximateTokenCounter()
    text = render_search(result, max_tokens=600, token_counter=counter)
    assert counter.count_text(text) <= 600
    shown = text.count("[exact]")
    assert 0 < shown < 30
    assert text.endswith(
        f"{30 - shown} more matching messages not shown; narrow the query to see them."
    )
    tiny = render_search(result, max_tokens=60, token_counter=counter)
    assert tiny.count("[exact]") == 1
    assert counter.count_text(tiny) <= 120


def test_render_no_hits_is_plain() -> None:
    result = search_record([HumanMessage("a")], "zzz")
    assert render_search(result) == (
        "No messages matching 'zzz' among the 1 not in your current view (record: 1)."
    )


def test_recall_dropped_fits_its_budget_best_first() -> None:
    dropped = _run(30, needle_at=7)[1:]
    text = recall_dropped(dropped, "fix the ValueError bad magic in the header", 300)
    assert text.startswith("tool read_file")
    assert "bad magic" in text
    assert len(text) <= 300
    # The next model reads it as memory: no search's match kinds or record positions.
    assert "[exact]" not in text
    assert "[words]" not in text
    assert not text.startswith("#")
    assert recall_dropped(dropped, "anything", 0) == ""
    assert recall_dropped([], "anything", 100) == ""


@pytest.mark.parametrize(
    ("block", "label"),
    [
        ({"type": "image", "base64": "QUJD" * 999}, "[image]"),
        # Anthropic's document block (a PDF) was indexed as its base64
        (
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": "QUJD" * 999},
            },
            "[file application/pdf]",
        ),
    ],
    ids=["image", "anthropic-document"],
)
def test_media_blocks_are_not_indexed_as_base64(block: dict[str, object], label: str) -> None:
    m = HumanMessage([{"type": "text", "text": "see"}, block])
    assert message_search_text(m) == f"see\n{label}"


def test_a_web_search_is_indexed_by_its_urls_not_its_encrypted_pages() -> None:
    # Anthropic's server-side search answers in the assistant message; each result's page
    # is encrypted_content, base64 nobody searches for (and FTS5 indexes every trigram).
    result = {
        "type": "web_search_result",
        "url": "https://example.com/parser",
        "title": "Parser notes",
        "encrypted_content": "EqgfCioIARgBIiQ3YTAw" * 500,
    }
    m = AIMessage(
        [
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [result]},
            {"type": "text", "text": "Found it."},
        ]
    )
    text = message_search_text(m)
    assert "https://example.com/parser" in text
    assert "Parser notes" in text
    assert "EqgfCioI" not in text
    assert len(text) < 300


def test_indexes_keep_one_per_thread_and_drop_the_oldest() -> None:
    indexes = RecordIndexes(size=2)
    a = indexes.get("a")
    indexes.get("b")
    indexes.get("c")
    assert indexes.get("a") is not a
    with pytest.raises(ValueError, match="size must be an int >= 1"):
        RecordIndexes(size=0)


@pytest.mark.parametrize("path", transcript_params())
def test_recorded_transcripts_agree_with_a_plain_scan(path: Path) -> None:
    record = load_transcript(path)
    texts = [message_search_text(m).lower() for m in record]
    index = RecordIndex()
    checked = 0
    for _pos, m in enumerate(record):
        if not isinstance(m, ToolMessage) or checked >= 5:
            continue
        lines = [ln.strip() for ln in m.text.splitlines() if len(ln.strip()) >= 12]
        if not lines:
            continue
        needle = max(lines, key=len)[:50]
        holders = [i for i, t in enumerate(texts) if needle.lower() in t]
        result = index.search(record, needle, limit=MAX_SEARCH_LIMIT)
        assert result.total >= len(holders)
        if len(holders) <= MAX_SEARCH_LIMIT:
            assert sorted(h.position for h in result.hits if h.exact) == holders
        checked += 1


_texts = st.text(alphabet="abcXYZ _./:-\"'*()", min_size=0, max_size=40)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(_texts, min_size=1, max_size=25), st.data())
def test_property_hits_are_honest(texts: list[str], data: st.DataObject) -> None:
    record: list[BaseMessage] = [HumanMessage(t, id=f"m{i}") for i, t in enumerate(texts)]
    source = data.draw(st.sampled_from(texts))
    start = data.draw(st.integers(0, len(source)))
    query = source[start : start + data.draw(st.integers(1, 12))]
    hidden = set(data.draw(st.lists(st.sampled_from([m.id for m in record]), max_size=5)))
    result = search_record(record, query, limit=MAX_SEARCH_LIMIT, hidden_ids=hidden)
    q = query.strip()
    assert result.total >= len(result.hits)
    for hit in result.hits:
        assert hit.message_id not in hidden
        if hit.exact:
            assert q.lower() in texts[hit.position].lower()
    holders = {
        f"m{i}"
        for i, t in enumerate(texts)
        if q and q.lower() in t.lower() and f"m{i}" not in hidden
    }
    exact = {h.message_id for h in result.hits if h.exact}
    assert exact == holders


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_history_search_finds_what_its_view_folded_away(mode: str) -> None:
    import asyncio

    from langchain_builderforce_memory.history import CompactingChatMessageHistory

    history = CompactingChatMessageHistory(
        summarizer=lambda prompt: "they talked", max_tokens=8_000, tail_tokens=4_000
    )
    for i in range(40):
        extra = " ValueError: bad magic 0xDEADBEEF" if i == 3 else ""
        history.add_messages(
            [HumanMessage(f"q{i}"), AIMessage(f"answer {i}{extra} " + "y" * 1_500)]
        )
    view_ids = {m.id for m in history.messages}
    result = (
        history.search("0xDEADBEEF")
        if mode == "sync"
        else asyncio.run(history.asearch("0xDEADBEEF"))
    )
    (hit,) = result.hits
    assert hit.exact
    assert hit.message_id not in view_ids
    assert "bad magic" in hit.snippet
    # What the view shows verbatim is not searched: the latest answer is in it.
    assert not any(h.exact for h in history.search("answer 39").hits)
    assert any(h.exact for h in history.search("answer 3 ").hits)
    assert result.searched < len(history.full_messages)


def test_skipped_tools_answers_are_not_searched() -> None:
    record = [
        HumanMessage("go", id="h"),
        ToolMessage("E42 in lexer.py", tool_call_id="c1", name="read_file", id="t1"),
        ToolMessage("Found 1: E42 in lexer.py", tool_call_id="c2", name="search_history", id="t2"),
    ]
    assert sorted(h.message_id for h in RecordIndex().search(record, "E42").hits) == ["t1", "t2"]
    index = RecordIndex(skip_tools={"search_history"})
    assert [h.message_id for h in index.search(record, "E42").hits] == ["t1"]


def test_a_long_query_is_searched_by_its_words_and_stays_fast() -> None:
    record = [HumanMessage("go"), AIMessage("a" * 40_000), AIMessage("the parser fails")]
    query = "a" * 2_000 + " parser"
    result = search_record(record, query)
    assert [(h.position, h.exact) for h in result.hits] == [(2, False)]


def test_a_result_nested_in_results_as_deep_as_a_hostile_record_goes_is_text_not_a_crash() -> None:
    block: dict[str, object] = {"type": "tool_result", "tool_use_id": "t", "content": "x"}
    for _ in range(5_000):
        block = {"type": "tool_result", "tool_use_id": "t", "content": [block]}
    turn = HumanMessage.model_construct(
        content=[block], type="human", additional_kwargs={}, response_metadata={}
    )
    text = message_search_text(turn)  # a RecursionError before
    assert "tool_result" in text
    assert text.endswith("x")


def test_a_lone_surrogate_in_the_record_or_the_query_leaves_the_index_usable() -> None:
    # Undecodable bytes in a tool's output (Python's surrogateescape) made SQLite refuse
    # the insert, and the transaction left open failed every later search on that index.
    index = RecordIndex()
    record: list[BaseMessage] = [
        HumanMessage("fix it", id="u"),
        ToolMessage("caf\udce9.py: E42 in lexer", tool_call_id="c", id="t"),
    ]
    assert [h.position for h in index.search(record, "E42").hits] == [1]
    grown = [*record, ToolMessage("E43 in parser", tool_call_id="d", id="t2")]
    assert [h.position for h in index.search(grown, "E43").hits] == [2]
    assert [h.position for h in index.search(grown, "caf\udce9.py").hits] == [1]
