"""The public API: an explicit, sorted, short ``__all__``, loaded lazily, every name resolving."""

from __future__ import annotations

import pytest

import langchain_builderforce_memory as pkg

EXPECTED = [
    "ApproximateTokenCounter",
    "BuilderforceMemoryMiddleware",
    "BuilderforceMemoryState",
    "CodeMapStore",
    "CompactMemo",
    "CompactingChatMessageHistory",
    "FitEvent",
    "FoldEvent",
    "HandoffPack",
    "MemoryPolicy",
    "RecordFacts",
    "Summarizer",
    "TiktokenCounter",
    "TokenCounter",
    "ToolObservationMapper",
    "ViewEvent",
    "WorkingMemory",
    "WorkingMemoryCallbackHandler",
    "WorkingTranscript",
    "WorkingTranscriptKeys",
    "WorkingTranscriptNode",
    "WorkingTranscriptState",
    "abuild_working_transcript",
    "apack_handoff",
    "build_working_transcript",
    "consolidation_marker",
    "count_tokens",
    "handoff_budget_for_model",
    "is_consolidation_marker",
    "pack_handoff",
    "repair_request",
    "request_problems",
    "scope_to_consolidation",
    "volatile_tail",
    "windowed",
]


def test_all_is_pinned() -> None:
    assert pkg.__all__ == EXPECTED
    assert len(pkg.__all__) <= 35  # a surface a user can hold in their head (issue 11)


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions, each alphabetical.
    kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return kind, name


def test_all_is_sorted_constants_then_classes_then_functions() -> None:
    assert pkg.__all__ == sorted(pkg.__all__, key=_isort_key)


def test_every_public_name_resolves() -> None:
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None, name


def test_the_package_imports_without_langchain_and_names_the_extra_for_the_middleware() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['langchain'] = None; sys.modules['langchain.agents'] = None\n"
        "import langchain_builderforce_memory as p\n"
        "assert p.windowed and p.WorkingTranscriptNode\n"
        "try:\n"
        "    p.BuilderforceMemoryMiddleware\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "langchain-builderforce-memory[agents]" in out.stdout


def test_unknown_attributes_raise_attribute_error() -> None:
    import pytest

    with pytest.raises(AttributeError, match="no_such_name"):
        _ = pkg.no_such_name


def _run(code: str) -> str:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout


def test_importing_the_package_imports_no_langchain_package() -> None:
    code = (
        "import sys\n"
        "import langchain_builderforce_memory\n"
        "print(sorted(m for m in sys.modules if m.startswith(('langchain', 'langgraph'))))\n"
    )
    assert _run(code).strip() == "['langchain_builderforce_memory']"


def test_importing_the_cli_imports_neither_langchain_nor_langgraph() -> None:
    # `bfmem --help` must stay fast: the CLI's own module, loaded through the lazy root.
    code = (
        "import sys\n"
        "import langchain_builderforce_memory.cli.main\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'langchain', 'langgraph'}))\n"
    )
    assert _run(code).strip() == "[]"


def test_star_import_and_dir_show_the_public_names() -> None:
    code = (
        "from langchain_builderforce_memory import *\n"
        "import langchain_builderforce_memory as p\n"
        "missing = [n for n in p.__all__ if n not in globals()]\n"
        "print(missing, [n for n in p.__all__ if n not in dir(p)])\n"
    )
    assert _run(code).strip() == "[] []"


def test_each_public_name_is_the_object_of_its_own_module() -> None:
    import importlib

    for name, module in pkg._LAZY.items():
        assert getattr(pkg, name) is getattr(importlib.import_module(module), name), name


def test_a_name_moved_out_of_the_root_says_where_it_lives() -> None:
    import importlib

    import pytest

    from langchain_builderforce_memory.transcript.fold import verbatim_start

    with pytest.raises(AttributeError, match=r"import it from .*transcript\.fold"):
        _ = pkg.verbatim_start
    assert importlib.import_module("langchain_builderforce_memory.transcript.fold").verbatim_start
    assert verbatim_start is not None
    for name, module in pkg._MOVED.items():
        assert name not in pkg.__all__, name
        module_path = f"langchain_builderforce_memory.{module}"
        assert getattr(importlib.import_module(module_path), name) is not None, name


def test_type_checkers_see_the_lazy_names_and_reject_unknown_ones(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The root's __getattr__ is hidden from type checkers (a visible one would type every
    # attribute, typos included, as `object`); they read the TYPE_CHECKING imports instead.
    from pathlib import Path

    from mypy import api

    root = Path(pkg.__file__).parent.parent
    monkeypatch.setenv("MYPYPATH", str(root))  # this checkout, not another installed copy
    user = Path(str(tmp_path)) / "user_code.py"
    user.write_text(
        "import langchain_builderforce_memory as p\n"
        "from langchain_builderforce_memory import BuilderforceMemoryMiddleware\n"
        "reveal_type(p.pack_handoff)\n"
        "BuilderforceMemoryMiddleware(max_tokens=8_000)\n"
        "p.verbatim_start\n",
        encoding="utf-8",
    )
    out, _, _ = api.run(
        ["--strict", "--cache-dir", str(root / ".mypy_cache"), "--no-error-summary", str(user)]
    )
    lines = out.splitlines()
    assert any("Revealed type" in line and "HandoffPack" in line for line in lines), out
    errors = [line for line in lines if ": error:" in line]
    assert len(errors) == 1, out
    assert 'Module has no attribute "verbatim_start"' in errors[0]
