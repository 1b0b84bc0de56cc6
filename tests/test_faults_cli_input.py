"""Issue 16, reproducer 10: ``bfmem inspect`` on hostile files: one line, exit 2, bounded."""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path

import pytest

from langchain_builderforce_memory.cli import load as load_module
from langchain_builderforce_memory.cli import main


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def assert_one_line_usage_error(path: Path, expected: str) -> None:
    code, out, err = run_cli("inspect", str(path))
    assert code == 2, err
    assert out == ""
    assert err.startswith("bfmem: error: ")
    assert "Traceback" not in err
    assert err.count("\n") == 1, err
    assert expected in err, err


def deep_list(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_100k_deep_nested_json_is_an_error_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(deep_list(100_000))
    assert_one_line_usage_error(path, "nested")


def test_deeply_nested_tool_arguments_are_an_error(tmp_path: Path) -> None:
    args = {"a": json.loads(deep_list(900))}
    record = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": args}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    path = tmp_path / "deep_args.json"
    path.write_text(json.dumps(record))
    assert_one_line_usage_error(path, "nested")


def test_deeply_nested_arguments_inside_a_json_string_are_an_error(tmp_path: Path) -> None:
    record = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"a": ' + deep_list(5_000) + "}"},
                }
            ],
        },
    ]
    path = tmp_path / "deep_string_args.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in record))
    assert_one_line_usage_error(path, "nested")


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_a_5000_digit_integer_is_an_error_naming_the_limit(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"bigint{suffix}"
    path.write_text('[{"role": "user", "content": "hi", "n": ' + "7" * 5_000 + "}]")
    if suffix == ".jsonl":
        path.write_text('{"role": "user", "content": "hi", "n": ' + "7" * 5_000 + "}")
    assert_one_line_usage_error(path, "digits")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_with_no_writer_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    result: list[tuple[int, str, str]] = []
    worker = threading.Thread(target=lambda: result.append(run_cli("inspect", str(path))))
    worker.daemon = True
    worker.start()
    worker.join(timeout=10)
    if worker.is_alive():
        # Unblock the reader so the test process can exit, then fail.
        with open(path, "w"):
            pass
        pytest.fail("bfmem inspect blocked on a FIFO with no writer")
    code, _, err = result[0]
    assert code == 2
    assert "not a regular file" in err
    assert err.count("\n") == 1


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_is_refused() -> None:
    assert_one_line_usage_error(Path("/dev/zero"), "not a regular file")


def test_a_directory_is_refused(tmp_path: Path) -> None:
    assert_one_line_usage_error(tmp_path, "not a regular file")


def test_a_file_over_the_size_cap_is_refused_with_the_cap_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(load_module, "MAX_FILE_BYTES", 1_000)
    path = tmp_path / "big.json"
    path.write_text(json.dumps([{"role": "user", "content": "x" * 2_000}]))
    assert_one_line_usage_error(path, "1,000 bytes")


def test_the_default_size_cap_is_documented_in_the_error(tmp_path: Path) -> None:
    assert load_module.MAX_FILE_BYTES >= 64 * 1024 * 1024
    path = tmp_path / "ok.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    code, _, err = run_cli("inspect", str(path))
    assert code == 0, err


@pytest.mark.parametrize(
    "text",
    [
        "[" * 50 + "]" * 49,  # truncated deep
        '{"messages": ' + deep_list(3_000) + "}",
        '[{"type": "human", "data": {"content": ' + deep_list(2_000) + "}}]",
        "[1e999999]",
        '[{"role": "user", "content": "\\ud800"}]',
        "\x00\x01\x02",
    ],
    ids=["truncated", "deep-messages", "deep-langchain", "huge-float", "lone-surrogate", "binary"],
)
def test_other_malformed_inputs_are_one_line_errors_or_load(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    code, _, err = run_cli("inspect", str(path))
    assert code in (0, 2), err
    assert "Traceback" not in err
    if code == 2:
        assert err.count("\n") == 1
