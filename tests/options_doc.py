"""``docs/options.md``'s option table, written from the options' one declaration.

Each option's text is :data:`~langchain_builderforce_memory.options.OPTION_DOCS` (what
``help()`` shows) and its default is the middleware's signature, so the page cannot drift
from the code: ``tests/test_options.py`` compares the page with :func:`option_table`.

Regenerate after adding or changing an option:
    python -m tests.options_doc
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from langchain_builderforce_memory import BuilderforceMemoryMiddleware
from langchain_builderforce_memory.options import OPTION_DOCS

PAGE = Path(__file__).resolve().parent.parent / "docs" / "options.md"
BEGIN = "<!-- option table: written by `python -m tests.options_doc`; edit OPTION_DOCS -->"
END = "<!-- end of the option table -->"


def _markdown(text: str) -> str:
    """reStructuredText literals as Markdown code, and table-safe."""
    return re.sub(r"``(.+?)``", r"`\1`", text).replace("|", "\\|")


def _default(value: object) -> str:
    if value is inspect.Parameter.empty:
        return "required"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000:
        return f"`{value:,}`"
    return f"`{value!r}`"


def option_table() -> str:
    """The table of every middleware option: its name, default, and what it does."""
    init = inspect.unwrap(BuilderforceMemoryMiddleware.__init__)
    rows = ["| option | default | what it does |", "|---|---|---|"]
    for name, param in list(inspect.signature(init).parameters.items())[1:]:
        rows.append(f"| `{name}` | {_default(param.default)} | {_markdown(OPTION_DOCS[name])} |")
    return "\n".join([BEGIN, *rows, END])


def page_with_table(page: str) -> str:
    """``page`` with the text between its markers replaced by :func:`option_table`."""
    start, end = page.index(BEGIN), page.index(END) + len(END)
    return page[:start] + option_table() + page[end:]


if __name__ == "__main__":
    PAGE.write_text(page_with_table(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {PAGE}")
