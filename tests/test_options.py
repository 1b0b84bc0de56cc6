"""The entry points' options: explicit keyword-only signatures, documented, typo-checked."""

from __future__ import annotations

import inspect
import pydoc
import re
from typing import Any

import pytest

from langchain_builderforce_memory.agents.middleware import BuilderforceMemoryMiddleware
from langchain_builderforce_memory.agents.node import WorkingTranscriptNode
from langchain_builderforce_memory.agents.policy import MemoryPolicy
from langchain_builderforce_memory.history import CompactingChatMessageHistory
from langchain_builderforce_memory.options import OPTION_DOCS, keyword_options

ENTRY_POINTS: list[type[Any]] = [
    BuilderforceMemoryMiddleware,
    WorkingTranscriptNode,
    CompactingChatMessageHistory,
    MemoryPolicy,
]


def _options(cls: type[Any]) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(cls).parameters)


def test_the_middleware_signature_names_its_options() -> None:
    params = _options(BuilderforceMemoryMiddleware)
    for name in (
        "max_tokens",
        "max_messages",
        "tail_tokens",
        "token_counter",
        "working_memory",
        "code_maps",
        "fit_to_model",
    ):
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, name
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


@pytest.mark.parametrize("cls", ENTRY_POINTS, ids=lambda c: c.__name__)
def test_every_option_is_keyword_only_and_documented_with_its_default(cls: type[Any]) -> None:
    params = _options(cls)
    positional = [n for n, p in params.items() if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    assert positional in ([], ["summarizer"], ["backing"]), positional
    text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    for name in params:
        assert re.search(rf"^[ |]+{name}: \S", text, re.MULTILINE), f"{cls.__name__}.{name}"


@pytest.mark.parametrize("cls", [BuilderforceMemoryMiddleware, WorkingTranscriptNode])
def test_the_adapters_take_the_policy_fields_with_the_policys_defaults(cls: type[Any]) -> None:
    params = _options(cls)
    for name, field in _options(MemoryPolicy).items():
        assert params[name].default == field.default, name
        assert params[name].annotation == field.annotation, name


@pytest.mark.parametrize("cls", ENTRY_POINTS, ids=lambda c: c.__name__)
def test_a_misspelt_option_names_the_close_one(cls: type[Any]) -> None:
    with pytest.raises(
        TypeError, match=r"unknown option 'max_tokns' \(did you mean 'max_tokens'\?\)"
    ):
        cls(max_tokns=1_000)


def test_an_option_with_no_close_name_lists_the_options() -> None:
    with pytest.raises(TypeError, match=r"unknown option 'zzz'; the options are \[.*'timeout'"):
        MemoryPolicy(zzz=1)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_tokens": 0}, r"max_tokens must be an int >= 1; got 0\. Fix: pass max_tokens=64000"),
        ({"code_map_limit": 1.5}, r"got 1\.5\. Fix: pass code_map_limit=3"),
        (
            {"working_memory": "no"},
            r"got 'no'\. Fix: pass working_memory=True or working_memory=False",
        ),
    ],
)
def test_bad_values_name_the_value_and_the_fix(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MemoryPolicy(**options)


def test_an_undocumented_option_is_caught_when_the_class_is_defined() -> None:
    with pytest.raises(RuntimeError, match="'surprise' is documented neither"):

        @keyword_options
        class Surprising:
            """No Args."""

            def __init__(self, *, surprise: int = 1) -> None:
                self.surprise = surprise

    assert "max_tokens" in OPTION_DOCS


def test_a_class_documenting_an_option_itself_keeps_its_own_words() -> None:
    doc = CompactingChatMessageHistory.__doc__ or ""
    assert "max_tokens: Tokens the view may hold." in doc
    assert doc.count("max_tokens:") == 1


def test_the_options_page_is_written_from_the_options_declaration() -> None:
    # docs/options.md once carried its own copy of each option's text and default, which
    # drifted; its table is now written from OPTION_DOCS and the middleware's signature.
    from .options_doc import PAGE, page_with_table

    page = PAGE.read_text(encoding="utf-8")
    assert page == page_with_table(page), "docs/options.md is stale: python -m tests.options_doc"
    history = [f"`{name}`" for name in _options(CompactingChatMessageHistory)]
    assert all(name in page for name in history)
