"""No import cycles: no module imports, directly or through others, a module importing it back.

The graph is built from the source with ``ast``: every ``import`` and ``from ... import``
of the package's own modules, at module level and inside functions (both run), except
those under ``if TYPE_CHECKING:`` (they never run). ``from pkg.x import name`` is an edge
to ``pkg.x.name`` when that is a module, else to ``pkg.x``. Importing a submodule also
runs its parent packages' ``__init__``, but Python finds a parent already in
``sys.modules`` while its ``__init__`` imports its children, so those implicit edges are
not counted: only imports a module writes.
"""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import langchain_builderforce_memory

PACKAGE_DIR = Path(langchain_builderforce_memory.__file__).parent


def module_names(root: Path) -> dict[str, Path]:
    """Every module of the package under ``root``, by dotted name."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(tree: ast.AST, *, types: bool = False) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run (``if TYPE_CHECKING:`` bodies skipped unless
    ``types``)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
            continue
        if not types and isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)  # the else branch does run
            continue
        stack.extend(ast.iter_child_nodes(node))


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def import_graph(root: Path, *, types: bool = False) -> dict[str, set[str]]:
    """Each module of the package -> the package modules it imports at run time (and, with
    ``types``, for its type hints)."""
    modules = module_names(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in runtime_imports(tree, types=types):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                source = _absolute(node, name, path.name == "__init__.py")
                targets = [
                    f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                    for alias in node.names
                ]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (``[a, b, ..., a]``), or ``None`` when there is none."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


@pytest.mark.parametrize("types", [False, True], ids=["run time", "type hints too"])
def test_the_package_has_no_import_cycle(types: bool) -> None:
    # Issue 23: type-only imports closed a circle (tokens -> blocks -> incremental -> tokens).
    graph = import_graph(PACKAGE_DIR, types=types)
    assert len(graph) > 30  # every module was found
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_graph_sees_function_level_imports_and_skips_type_checking_ones() -> None:
    graph = import_graph(PACKAGE_DIR)
    # cli.main imports its sub-commands inside functions, so `--help` stays fast.
    assert any(
        m.startswith("langchain_builderforce_memory.cli.")
        for m in graph["langchain_builderforce_memory.cli.main"]
    )
    # The root's public names (and __version__) are imported under TYPE_CHECKING only
    # (loaded lazily).
    assert graph["langchain_builderforce_memory"] == set()


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("files", "cycle"),
    [
        pytest.param(
            {
                "pkg/__init__.py": "",
                "pkg/a.py": "from pkg.b import x\n",
                "pkg/b.py": "import pkg.a\n",
            },
            {"pkg.a", "pkg.b"},
            id="module-level",
        ),
        pytest.param(
            {
                "pkg/__init__.py": "",
                "pkg/a.py": "from . import b\n",
                "pkg/b.py": "def f():\n    from .a import g\n",
            },
            {"pkg.a", "pkg.b"},
            id="relative-and-in-a-function",
        ),
        pytest.param(
            {
                "pkg/__init__.py": "",
                "pkg/sub/__init__.py": "from pkg.sub.c import C\n",
                "pkg/sub/c.py": "from pkg import d\n",
                "pkg/d.py": "from pkg.sub import C\n",
            },
            {"pkg.sub", "pkg.sub.c", "pkg.d"},
            id="through-a-package-init",
        ),
        pytest.param(
            {
                "pkg/__init__.py": "",
                "pkg/a.py": "from typing import TYPE_CHECKING\nimport pkg.b\n",
                "pkg/b.py": "import typing\nif typing.TYPE_CHECKING:\n    from pkg.a import A\n",
            },
            None,
            id="type-checking-only",
        ),
    ],
)
def test_the_cycle_finder(tmp_path: Path, files: dict[str, str], cycle: set[str] | None) -> None:
    found = find_cycle(import_graph(_write(tmp_path, files) / "pkg"))
    assert (set(found) if found else None) == cycle


MODULE_LINE_LIMIT = 550
"""The style guide's "modules under ~500 lines", with room for a docstring's growth: a
module past this is split along its seam (as messages / validity, blocks / media, tokens /
incremental were), not trimmed of comments."""


def test_every_module_stays_under_the_line_limit() -> None:
    sizes = {
        name: len(path.read_text(encoding="utf-8").splitlines())
        for name, path in module_names(PACKAGE_DIR).items()
    }
    over = {name: n for name, n in sizes.items() if n > MODULE_LINE_LIMIT}
    assert not over, f"modules over {MODULE_LINE_LIMIT} lines (split them): {over}"


def _reaches(
    root: object, targets: set[int], skip: set[int], depth: int = 7, *, weakly: bool = False
) -> bool:
    """Whether ``root`` refers to one of ``targets`` (by id) within ``depth`` references.

    ``weakly``: weak references count too (a cache keyed by ``id(message)`` holds one).
    """
    import gc
    import types
    import weakref

    seen: set[int] = set()
    frontier = [root]
    for _ in range(depth):
        following: list[object] = []
        for obj in frontier:
            if id(obj) in seen or id(obj) in skip:
                continue
            seen.add(id(obj))
            if id(obj) in targets:
                return True
            if weakly and isinstance(obj, weakref.ref):
                following.append(obj())
            elif not isinstance(obj, type | types.ModuleType):
                following.extend(gc.get_referents(obj))
        frontier = following
    return False


def _serve_a_record_every_way(record: list[object]) -> None:
    """Views of ``record`` through the pure functions, the packer and an agent turn."""
    from langchain_builderforce_memory.handoff import pack_handoff
    from langchain_builderforce_memory.testing import ScriptedChatModel
    from langchain_builderforce_memory.transcript.window import windowed

    from .helpers import ScriptedSummarizer, build_agent, working_turn

    for n in (41, 61):
        windowed(record[:n], max_tokens=9_000)
        working_turn(record[:n], None, budget=12_000)  # type: ignore[arg-type]
    pack_handoff(
        record,  # type: ignore[arg-type]
        target_context_tokens=12_000,
        reserve_output_tokens=2_000,
        summarizer=ScriptedSummarizer("n"),
    )
    agent = build_agent(
        "create_agent",
        ScriptedChatModel(script=["done"]),
        [],
        summarizer=ScriptedSummarizer("n" * 400),
        max_tokens=12_000,
    )
    agent.invoke({"messages": record})


def test_no_module_keeps_a_conversations_messages() -> None:
    """A conversation's facts live in what its caller keeps (issue 23), never in a module.

    After every entry point has served a record, nothing at module level in the package
    refers to one of its messages.
    """
    import gc
    import importlib
    import sys

    from langchain_core.messages import BaseMessage

    from .helpers import read_loop

    record = read_loop(30, 600)
    _serve_a_record_every_way(list(record))
    gc.collect()
    # The messages themselves: the token counter's per-message cache may hold their
    # contents (weakly keyed by the message, dropped when it is freed), as issue 23 allows.
    targets = {id(m) for m in record}
    modules = [importlib.import_module(name) for name in module_names(PACKAGE_DIR)]
    skip = {id(vars(m)) for m in list(sys.modules.values()) if m is not None}
    held = [
        f"{module.__name__}.{attr}"
        for module in modules
        for attr, value in vars(module).items()
        if not isinstance(value, BaseMessage) and _reaches(value, targets, skip)
    ]
    assert not held, f"module-level state holds the record's messages: {held}"


def test_no_module_caches_a_conversations_messages_by_identity() -> None:
    """No module-level cache keyed by ``id()`` (issue 23), weak references included.

    What is derived from a conversation's messages (a result's placeholder, an edit's cut
    call) lives in its facts and copies. The token counter's per-message cache is the one
    exception issue 23 allows.
    """
    import gc
    import importlib
    import sys

    from langchain_core.messages import BaseMessage

    from langchain_builderforce_memory.tokens import _CachedCounter

    from .helpers import read_write_loop

    record = read_write_loop(16)
    _serve_a_record_every_way(list(record))
    gc.collect()
    targets = {id(m) for m in record}
    modules = [importlib.import_module(name) for name in module_names(PACKAGE_DIR)]
    skip = {id(vars(m)) for m in list(sys.modules.values()) if m is not None}
    # The counter's per-message cache, the one issue 23 allows: its table is not walked.
    skip |= {id(c._cache) for c in gc.get_objects() if isinstance(c, _CachedCounter)}
    held = [
        f"{module.__name__}.{attr}"
        for module in modules
        for attr, value in vars(module).items()
        if not isinstance(value, BaseMessage) and _reaches(value, targets, skip, weakly=True)
    ]
    assert not held, f"module-level caches refer to the record's messages: {held}"


FUNCTION_LINE_LIMIT = 60
"""Lines of code a function may have (its docstring, blank lines and comments aside)."""


def _code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef, source: list[str]) -> int:
    first = node.body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    start = first.end_lineno + 1 if docstring and first.end_lineno else first.lineno
    lines = source[start - 1 : node.end_lineno]
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def test_no_function_is_over_sixty_lines_of_code() -> None:
    over = {}
    for name, path in module_names(PACKAGE_DIR).items():
        text = path.read_text(encoding="utf-8")
        source = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = _code_lines(node, source)
                if n > FUNCTION_LINE_LIMIT:
                    over[f"{name}.{node.name}"] = n
    assert not over, f"functions over {FUNCTION_LINE_LIMIT} lines of code (split them): {over}"
