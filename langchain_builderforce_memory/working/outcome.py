"""What a shell-like tool's output says about how the call went.

Agent harnesses wrap a command's output each in their own way: mini-swe-agent puts
``<returncode>N</returncode>`` first, Codex ``Process exited with code N``, Claude Code
``Exit code N`` (with ``status="error"``), OpenHands ``[The command completed with exit
code N.]``; SWE-agent's text actions report no code at all. :func:`exit_code` reads all of
them. :func:`failed_output` is the successes-only rule for a call whose code is not known:
the error texts shells and editors print. :func:`test_outcome` reads a test or build run's
own summary line, which outlives a pipe into ``tail`` that hides the exit code.
"""

from __future__ import annotations

import posixpath
import re
from typing import Final, Literal

__all__ = [
    "Outcome",
    "exit_code",
    "failed_output",
    "is_python",
    "is_test_run",
    "output_text",
    "test_outcome",
]

Outcome = Literal["passed", "failed"]
"""How a test or build run ended."""

_EXIT_CODE: Final = re.compile(
    r"<returncode>\s*(-?\d+)\s*</returncode>"  # mini-swe-agent
    r"|Process exited with code (-?\d+)"  # Codex
    r"|^Exit code:? (-?\d+)"  # Claude Code, Codex's JSON-less rendering
    r"|\[The command completed with exit code (-?\d+)\.?\]"  # OpenHands
    r"|exit(?:ed)? (?:with )?(?:status|code) (-?\d+)\s*$",  # ShellTool and generic shells
    re.MULTILINE | re.IGNORECASE,
)
_SCAN: Final = 400
"""Characters at each end of an output that the exit code is looked for in: the wrappers
put it first or last, and a long log in between is not searched."""

_FAILURE_TEXT: Final = re.compile(
    r"^\s*(?:error\s*:|<tool_use_error>|ERROR:)"
    r"|Traceback \(most recent call last\)"
    r"|: No such file or directory"
    r"|: command not found"
    r"|: Permission denied"
    r"|Your proposed edit has introduced new syntax error"
    r"|No replacement was performed",
    re.MULTILINE,
)

_FAILED_RUN: Final = re.compile(
    r"^=+ .*\b\d+ (?:failed|errors?)\b"  # pytest summary
    r"|^FAILED \(|^FAILED (?:tests/|test/|\S+::)"  # unittest / django, pytest short summary
    r"|^test result: FAILED"  # cargo test
    r"|^error(?:\[E\d+\])?: |^error: could not compile"  # cargo / rustc build
    r"|^(?:--- )?FAIL\b"  # go test
    r"|^Tests?:.*\b\d+ failed"  # jest / vitest
    r"|^\s*\d+ failing\b"  # mocha
    r"|^make(?:\[\d+\])?: \*\*\* "  # make
    r"|^npm ERR! |^ERR_PNPM_|^error Command failed"  # npm, pnpm, yarn
    r"|^BUILD FAILED|^\[ERROR\] BUILD FAILURE"  # gradle, maven
    r"|^[1-9]\d* issues?\.|^Found [1-9]\d* errors?",  # golangci-lint, ruff / mypy
    re.MULTILINE,
)
_PASSED_RUN: Final = re.compile(
    r"^=+ .*\b\d+ passed\b"  # pytest
    r"|^OK(?: \(.*\))?\s*$"  # unittest / django
    r"|^test result: ok\."  # cargo test
    r"|^ok\s+\S+"  # go test
    r"|^Tests?:.*\b\d+ passed"  # jest / vitest
    r"|^\s*\d+ passing\b"  # mocha
    r"|^BUILD SUCCESS|^BUILD SUCCESSFUL"  # maven, gradle
    r"|^\s*Finished .* target\(s\)"  # cargo build
    r"|^0 issues\.|^All checks passed!|^Success: no issues found",  # golangci-lint, ruff, mypy
    re.MULTILINE,
)


def output_text(output: object) -> str:
    """The text of a tool's output: a string, or the text blocks of a content list.

    Example:
        >>> output_text([{"type": "text", "text": "ok"}, {"type": "image"}])
        'ok'
    """
    if isinstance(output, str):
        return output
    if isinstance(output, (list, tuple)):
        parts = []
        for block in output:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return ""


def exit_code(output: str) -> int | None:
    r"""The exit code a harness reported in a command's output, or ``None``.

    Example:
        >>> exit_code("<returncode>1</returncode>\n<output>\n</output>")
        1
        >>> exit_code("Chunk ID: 1\nProcess exited with code 0\nOutput:\nok") is None
        False
        >>> exit_code("plain output") is None
        True
    """
    for part in (output[:_SCAN], output[-_SCAN:]) if len(output) > 2 * _SCAN else (output,):
        found = _EXIT_CODE.search(part)
        if found:
            return int(next(g for g in found.groups() if g is not None))
    return None


def failed_output(output: str) -> bool:
    r"""True when an output with no exit code reads as a failure (an error text).

    Example:
        >>> failed_output("cat: a.py: No such file or directory")
        True
        >>> failed_output("def main():\n    pass")
        False
    """
    return _FAILURE_TEXT.search(output) is not None


def test_outcome(output: str, code: int | None) -> Outcome | None:
    """How a test or build run ended: its summary line first, then its exit code.

    Example:
        >>> test_outcome("===== 1 failed, 3 passed in 0.2s =====", 0)
        'failed'
        >>> test_outcome("test result: ok. 29 passed; 0 failed", None)
        'passed'
        >>> test_outcome("", None) is None
        True
    """
    if _FAILED_RUN.search(output):
        return "failed"
    if _PASSED_RUN.search(output):
        return "passed"
    if code is not None:
        return "passed" if code == 0 else "failed"
    return None


_TEST_TOOLS: Final = frozenset(
    ("pytest", "py.test", "tox", "nox", "jest", "vitest", "mocha", "rspec", "ctest", "phpunit",
     "make", "ninja", "tsc", "gradle", "gradlew", "mvn", "runtests.py", "just",
     "golangci-lint", "eslint", "ruff", "mypy", "flake8", "pylint", "pyright")
)  # fmt: skip
_TEST_SUBCOMMANDS: Final[dict[str, frozenset[str]]] = {
    "cargo": frozenset(("test", "build", "check", "nextest", "clippy", "llvm-cov")),
    "go": frozenset(("test", "build", "vet")),
    "npm": frozenset(("test", "t")),
    "yarn": frozenset(("test", "build")),
    "pnpm": frozenset(("test", "build")),
    "bun": frozenset(("test",)),
    "npx": frozenset(("jest", "vitest", "mocha", "tsc", "playwright")),
}
_RUN_SCRIPTS: Final = ("test", "build", "lint", "check", "typecheck")
_SETUP_BUILDS: Final = frozenset(("build", "build_ext", "test", "bdist_wheel", "sdist"))
_PYTHON_TEST_MODULES: Final = frozenset(("pytest", "unittest", "py_compile", "compileall", "tox"))


def is_python(word: str) -> bool:
    """True for a Python interpreter's name: ``python``, ``python3``, ``python3.11``."""
    return _PYTHON.fullmatch(word) is not None


_PYTHON: Final = re.compile(r"python(?:\d(?:\.\d+)?)?")


def is_test_run(words: list[str]) -> bool:
    """True when a simple command's words run tests or a build (``python -m pytest -x``).

    Example:
        >>> is_test_run(["cargo", "test"]), is_test_run(["python", "setup.py", "install"])
        (True, False)
    """
    name = posixpath.basename(words[0])
    rest = words[1:]
    if name in _TEST_TOOLS:
        return True
    if name in _TEST_SUBCOMMANDS and rest:
        if rest[0] in _TEST_SUBCOMMANDS[name]:
            return True
        return (
            name in ("npm", "yarn", "pnpm", "bun")
            and rest[0] == "run"
            and (len(rest) > 1 and rest[1].startswith(_RUN_SCRIPTS))
        )
    if is_python(name) and rest:
        if rest[0] == "-m" and len(rest) > 1:
            return rest[1] in _PYTHON_TEST_MODULES
        return (
            rest[0].endswith("runtests.py")
            or rest[:2] == ["manage.py", "test"]
            or (rest[0] == "setup.py" and len(rest) > 1 and rest[1] in _SETUP_BUILDS)
        )
    return name == "cmake" and "--build" in rest
