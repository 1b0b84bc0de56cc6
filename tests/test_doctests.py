"""Every runnable example in the package's docstrings runs and holds."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import langchain_builderforce_memory as pkg

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{pkg.__name__}.")
    if not info.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


def test_the_examples_cover_the_core_modules() -> None:
    attempted = {
        name: doctest.testmod(importlib.import_module(name)).attempted
        for name in (
            "langchain_builderforce_memory.tokens",
            "langchain_builderforce_memory.messages",
            "langchain_builderforce_memory.transcript.window",
        )
    }
    assert all(n > 0 for n in attempted.values()), attempted
