"""Issue 28: shell command lines, patches and harness outputs read into observations."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory.transcript.summary import summary_request
from langchain_builderforce_memory.working.agent_tools import shell_observations
from langchain_builderforce_memory.working.mapper import observations_from_tool_call
from langchain_builderforce_memory.working.memory import Observation, WorkingMemory
from langchain_builderforce_memory.working.outcome import exit_code
from langchain_builderforce_memory.working.outcome import test_outcome as outcome_of
from langchain_builderforce_memory.working.patch import patch_observations
from langchain_builderforce_memory.working.shell import read_shell_command

R, C, E, D, S = (
    Observation.read,
    Observation.created,
    Observation.edited,
    Observation.deleted,
    Observation.searched,
)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cat a.py b.py", [R("a.py"), R("b.py")]),
        ("head -n 20 src/x.py", [R("src/x.py")]),
        ("tail -5 log.txt", [R("log.txt")]),
        ("sed -n '10,20p' ./pkg/a.go", [R("pkg/a.go")]),
        ("nl -ba README.md | sed -n '1,9p'", [R("README.md")]),
        ("sed -i 's/a/b/' f.py", [E("f.py")]),
        ("cd /repo && grep -n 'def x' src/a.py | head", [S('grep "def x" in /repo/src/a.py')]),
        ("grep -r ';;' test/ --include='*.py'", [S('grep ";;" in test')]),
        ("ls | grep foo", [S('ls "."')]),
        ("find src -name '*.py'", [S('find "*.py" in src')]),
        ("echo hi > out.txt", [C("out.txt")]),
        ("cat > new.py << 'EOF'\nprint(1)\nEOF", [C("new.py")]),
        ("printf x | tee -a log.txt", [E("log.txt")]),
        ("mv a.py b.py", [D("a.py"), C("b.py")]),
        ("cp a.py backup/", [R("a.py"), C("backup/a.py")]),
        ("rm -rf build/", [D("build")]),
        ("git diff src/a.py", [S("git diff src/a.py")]),
        ("git apply << 'EOF'\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\nEOF", [E("x.py")]),
        ("cd /w && cat $f", []),
        ("for f in a.py b.py; do cat $f; done", [R("a.py"), R("b.py")]),
        ("gofmt -w main.go", [E("main.go")]),
        (
            "cat > /tmp/e.py << 'EOF'\nopen('src/m.py', 'w').write(x)\nEOF\npython /tmp/e.py",
            [C("/tmp/e.py"), E("src/m.py")],
        ),
    ],
)
def test_commands_read_into_what_they_did(command: str, expected: list[Observation]) -> None:
    assert read_shell_command(command).observations == expected


@pytest.mark.parametrize(
    ("command", "runs"),
    [
        ("python -m pytest tests/a.py -x 2>&1 | tail -5", ["python -m pytest tests/a.py -x"]),
        ("cd web && npm test", ["npm test"]),
        ("cargo test --lib", ["cargo test --lib"]),
        ("go test ./...", ["go test ./..."]),
        ("make", ["make"]),
        ("pip install -e .", []),
    ],
)
def test_test_and_build_runs_are_found(command: str, runs: list[str]) -> None:
    assert read_shell_command(command).runs == runs


@pytest.mark.parametrize(
    ("output", "code"),
    [
        ("<returncode>2</returncode>\n<output>\n</output>", 2),
        ("Chunk ID: x\nProcess exited with code 1\nOutput:\n", 1),
        ("Exit code 1\nnothing to commit", 1),
        ("done\n[The command completed with exit code 0.]", 0),
        ("plain", None),
    ],
)
def test_each_harness_exit_code_is_read(output: str, code: int | None) -> None:
    assert exit_code(output) == code


def test_a_failed_call_marks_nothing_read_but_a_failed_test_run_is_kept() -> None:
    assert shell_observations("cat gone.py", "<returncode>1</returncode>\n<output>\n") == []
    failing = "===== 1 failed, 2 passed in 0.3s ====="
    # `&&` reached the tests, so the read worked; a known non-zero exit keeps only the run.
    assert shell_observations("cat a.py && pytest -q", failing) == [
        R("a.py"),
        Observation("failed", "pytest -q"),
    ]
    assert shell_observations(
        "cat a.py && pytest -q", f"<returncode>1</returncode>\n{failing}"
    ) == [Observation("failed", "pytest -q")]
    assert outcome_of("test result: FAILED. 1 passed; 1 failed", 0) == "failed"


def test_an_unreadable_command_is_a_ran_never_a_path() -> None:
    assert shell_observations("python reproduce.py", "<returncode>0</returncode>") == [
        Observation.ran("python reproduce.py")
    ]
    assert shell_observations("cat 'unbalanced", "") == [Observation.ran("cat 'unbalanced")]


def test_patches_name_their_files_with_their_kind() -> None:
    envelope = (
        "*** Begin Patch\n*** Add File: n.py\n*** Delete File: o.py\n"
        "*** Update File: a.py\n*** Move to: b.py\n*** End Patch"
    )
    assert patch_observations(envelope) == [C("n.py"), D("o.py"), D("a.py"), C("b.py")]
    assert patch_observations("**Update: `docs/x.md`**\n```diff\n@@\n-a\n+b\n```") == [
        E("docs/x.md")
    ]


@pytest.mark.parametrize(
    ("name", "args", "output", "expected"),
    [
        ("Edit", {"input": ""}, "The file /w/a.go has been updated successfully.", [E("/w/a.go")]),
        ("Write", {"input": "x"}, "File created successfully at: /w/b.go", [C("/w/b.go")]),
        ("Edit", {"input": ""}, "<tool_use_error>File has not been read yet.</tool_use_error>", []),
        ("apply_patch", {"input": "*** Update File: a.py"}, "apply_patch verification failed", []),
        (
            "run_ipython",
            {"code": "open_file('/w/a.css')"},
            "[File: /w/a.css (4 lines total)]",
            [R("/w/a.css")],
        ),
        (
            "run_ipython",
            {"code": "edit_file_by_replace('/w/a.css', to_replace='x')"},
            "[No exact match found in /w/a.css",
            [],
        ),
        (
            "Bash",
            {"command": "`", "input": "Lint\n\n```bash\ncd /w\ncat a.go\n```"},
            "x",
            [R("/w/a.go")],
        ),
        (
            "bash",
            {"command": "edit 1:2\nx\nend_of_edit"},
            "[File: /r/a.py (9 lines total)]\n(Current directory: /r)",
            [E("/r/a.py")],
        ),
        ("terminal", {"commands": ["cd /w", "cat a.txt"]}, "hello", [R("/w/a.txt")]),
    ],
)
def test_real_agents_tools(
    name: str, args: dict[str, object], output: str, expected: list[Observation]
) -> None:
    assert (
        observations_from_tool_call(name, args, ToolMessage(output, tool_call_id="1")) == expected
    )


def test_the_brief_says_what_is_failing_now() -> None:
    memory = WorkingMemory()
    memory.observe_all([R(f"f{i}.py") for i in range(10)])
    memory.observe(Observation("failed", "pytest -q"))
    memory.observe(Observation("failed", "cargo test"))
    memory.observe(Observation("passed", "cargo test"))
    brief = memory.brief()
    assert brief is not None
    assert "Failing now:\n- pytest -q" in brief
    assert "Passed (latest run):\n- cargo test" in brief
    again = WorkingMemory.from_snapshot(memory.snapshot).brief()
    assert again == brief


def test_a_path_only_in_the_arguments_reaches_the_summarizer_with_its_result() -> None:
    call = {"name": "read_file", "args": {"path": "src/billing/rates.py"}, "id": "c1"}
    request = summary_request(
        [
            HumanMessage("fix the rate"),
            AIMessage("", tool_calls=[call]),
            ToolMessage("RATE = 0.07  # the bug", tool_call_id="c1"),
        ]
    )
    assert request is not None
    prompt = request[1].content
    assert isinstance(prompt, str)
    assert 'tool read_file({"path":"src/billing/rates.py"}) -> RATE = 0.07  # the bug' in prompt
    assert "Files and resources" in request[0].content


def test_one_huge_argument_cannot_crowd_out_the_path() -> None:
    call = {"name": "write_file", "args": {"content": "x" * 50_000, "path": "a.py"}, "id": "c1"}
    request = summary_request([HumanMessage("go"), AIMessage("", tool_calls=[call])])
    assert request is not None
    prompt = str(request[1].content)
    assert '"path":"a.py"' in prompt
    assert len(prompt) < 1_000


def test_the_brief_lists_the_latest_change_first_and_keeps_the_order_across_a_snapshot() -> None:
    memory = WorkingMemory()
    memory.observe_all([R(f"f{i}.py") for i in range(10)])
    memory.observe_all([E("a.py"), C("b.py"), E("c.py"), E("a.py")])
    brief = memory.brief()
    assert brief is not None
    assert "Changed:\n- a.py\n- c.py\n- b.py\n" in brief
    assert WorkingMemory.from_snapshot(memory.snapshot).brief() == brief


# ------------------------------------------- listings, and globs whose output was cut

_LOOP = 'for f in docs/sys/*.md; do echo "== $f"; cat "$f"; done'
_CUT = "== docs/sys/a.md\n# A\n... (truncated)"
_KNOWN = frozenset({"docs/sys/a.md", "docs/sys/b.md", "docs/sys/deep/c.md", "docs/d.md"})


@pytest.mark.parametrize(
    ("command", "output", "listed"),
    [
        ("rg --files docs", "docs/a.md\ndocs/sys/b.md\n", ["docs/a.md", "docs/sys/b.md"]),
        ("cd /r && ls -1 docs", "a.md\nb.md\n", ["/r/docs/a.md", "/r/docs/b.md"]),
        ("ls -la src", "total 8\n-rw-r--r-- 1 u g 3 Jan 1 a.py\n", ["src/a.py"]),
        ("git ls-files", "Chunk ID: 1\nWall time: 0.1 s\nOutput:\nsrc/a.py\n", ["src/a.py"]),
        ("find . -name '*.py'", "<returncode>0</returncode>\n<output>./a/b.py\n", ["a/b.py"]),
        ("wc -l src/*.py", "  3 src/a.py\n  4 src/b.py\n  7 total", ["src/a.py", "src/b.py"]),
        # Two listings share one output that cannot be told apart: neither is read.
        ("ls -1 a && ls -1 b", "x.py\ny.py", []),
        ("find . -name '*.py' -exec cat {} +", "print(1)", []),
    ],
)
def test_a_listing_shows_which_paths_exist(command: str, output: str, listed: list[str]) -> None:
    assert list(read_shell_command(command, output=output).listed) == listed


def test_rg_files_is_a_listing_not_a_search_for_its_directory() -> None:
    assert read_shell_command("rg --files docs").observations == [S("rg --files in docs")]


def test_a_glob_whose_output_was_cut_takes_the_paths_the_run_listed() -> None:
    assert read_shell_command(_LOOP, output=_CUT).observations == [R("docs/sys/a.md")]
    # `*` never crosses a `/`: deep/c.md and d.md are not taken.
    assert read_shell_command(_LOOP, output=_CUT, known=_KNOWN).observations == [
        R("docs/sys/a.md"),
        R("docs/sys/b.md"),
    ]
    assert read_shell_command("cat docs/sys/*.md", known=_KNOWN).observations == [
        R("docs/sys/a.md"),
        R("docs/sys/b.md"),
    ]


def test_a_change_through_a_glob_takes_only_what_the_output_shows() -> None:
    # gofmt -w rewrites the files that needed it, which no earlier listing tells.
    reading = read_shell_command("gofmt -w docs/sys/*.md", known=_KNOWN)
    assert (reading.observations, reading.unread) == ([], ["docs/sys/*.md"])


def test_listed_paths_are_kept_by_the_memory_not_counted_and_survive_a_snapshot() -> None:
    memory = WorkingMemory()
    memory.observe_all(shell_observations("rg --files docs", "docs/sys/a.md\ndocs/sys/b.md"))
    assert memory.size == 1  # the search; the listed paths are no observation of the run
    assert memory.known_paths == {"docs/sys/a.md", "docs/sys/b.md"}
    again = WorkingMemory.from_snapshot(memory.snapshot)
    assert again.known_paths == memory.known_paths
    assert again.size == 1
    memory.observe_all(
        observations_from_tool_call(
            "bash", {"command": _LOOP}, _CUT, known_paths=memory.known_paths
        )
    )
    assert memory.snapshot["read"] == ["docs/sys/a.md", "docs/sys/b.md"]


def test_a_listing_that_failed_lists_nothing() -> None:
    listed = shell_observations("ls -1 x", "<returncode>0</returncode>\n<output>a.py\n")
    assert listed == [Observation.listed("x/a.py"), S('ls "x"')]
    failed = "<returncode>2</returncode>\n<output>ls: x: No such file\na.py\n"
    assert shell_observations("ls -1 x", failed) == []


def test_a_glob_after_a_cd_is_matched_against_the_new_directory() -> None:
    reading = read_shell_command("cd a && cat *.py && cd ../b && cat *.md", output="x.py\nnotes.md")
    assert R("b/notes.md") in reading.observations


@pytest.mark.parametrize("name", ["Bash", "exec_command", "str_replace_editor", "Grep", None])
@pytest.mark.parametrize("args", [None, 5, [], ["cat", "a.py"]])
def test_a_call_built_without_validation_is_not_observed_rather_than_a_crash(
    name: str, args: object
) -> None:
    # A ToolCall is a TypedDict: a hand-built or mutated one can carry anything.
    assert observations_from_tool_call(name, args, "ok") == []  # type: ignore[arg-type]
