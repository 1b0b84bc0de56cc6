"""Every ```python block in the README and in ``docs/`` runs as written, offline.

Each page's snippets share one visible setup block (marked ``<!-- readme-test: setup -->``)
that defines ``model``, ``small_model``, ``tools``, ``messages`` and ``summarizer`` with the
offline stand-ins from ``langchain_builderforce_memory.testing`` (a page without one runs
after the README's). Each other block runs in a fresh namespace, after that setup, in a
temporary working directory, with ``DeprecationWarning`` raised as an error. A block about a
deprecated API is marked ``<!-- readme-test: deprecated -->``: it
must emit a ``DeprecationWarning`` (else the mark is stale) and the prose right before it
must say "deprecated". ``<!-- readme-test: skip: REASON -->`` skips a block (one needing a
real provider key); none is skipped today.

Block line numbers are kept (the code is compiled as its page at its own lines), so a
failing snippet's traceback points into the page.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from langchain_core.messages import SystemMessage

README = Path(__file__).resolve().parents[1] / "README.md"
PAGES = [README, *sorted((README.parent / "docs").glob("*.md"))]
"""Every page whose python blocks run: the README and the docs."""
DOCS_TEXT = " ".join(" ".join(p.read_text(encoding="utf-8").split()) for p in PAGES)
"""Every page's text, whitespace folded: where a measured claim is looked up."""
FENCE = re.compile(r"^```(?P<lang>[\w+-]*)\s*$")
MARK = re.compile(r"^<!--\s*readme-test:\s*(?P<mark>[^>]*?)\s*-->\s*$")


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced python block of a page."""

    page: Path
    """The page it is on."""
    line: int
    """The page's line of the block's first code line (1-based)."""
    code: str
    marks: tuple[str, ...]
    """The ``readme-test`` marks on the lines right above the fence."""
    prose: str
    """The paragraph(s) between the previous block and this one."""

    @property
    def skip_reason(self) -> str | None:
        for mark in self.marks:
            if mark.startswith("skip"):
                return mark.partition(":")[2].strip() or "no reason given"
        return None


def readme_blocks(text: str, page: Path = README) -> list[Block]:
    """A page's ```python blocks, in order, with their marks and preceding prose."""
    lines = text.splitlines()
    blocks: list[Block] = []
    prose_start = 0
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        if fence["lang"] in ("python", "py"):
            marks: list[str] = []
            j = i - 1
            while j >= 0 and (m := MARK.match(lines[j])):
                marks.insert(0, m["mark"])
                j -= 1
            blocks.append(
                Block(
                    page=page,
                    line=i + 2,
                    code="\n".join(lines[i + 1 : end]) + "\n",
                    marks=tuple(marks),
                    prose="\n".join(lines[prose_start:i]),
                )
            )
        prose_start = end + 1
        i = end + 1
    return blocks


PAGE_BLOCKS = {page: readme_blocks(page.read_text(encoding="utf-8"), page) for page in PAGES}
BLOCKS = PAGE_BLOCKS[README]
SETUPS = {
    page: next(b for b in blocks if "setup" in b.marks)
    for page, blocks in PAGE_BLOCKS.items()
    if any("setup" in b.marks for b in blocks)
}
SNIPPETS = [b for blocks in PAGE_BLOCKS.values() for b in blocks if "setup" not in b.marks]


def run_block(block: Block, namespace: dict[str, object]) -> None:
    """Execute ``block`` in ``namespace``, its traceback pointing at its page's lines."""
    source = "\n" * (block.line - 1) + block.code
    exec(compile(source, str(block.page), "exec"), namespace)


def fresh_namespace(page: Path = README) -> dict[str, object]:
    """A new ``__main__``-like namespace with ``page``'s setup block already run in it."""
    namespace: dict[str, object] = {"__name__": "__readme__"}
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        run_block(SETUPS.get(page, SETUPS[README]), namespace)
    return namespace


def test_each_page_has_its_snippets_and_at_most_one_setup_first() -> None:
    for page, blocks in PAGE_BLOCKS.items():
        setups = [b for b in blocks if "setup" in b.marks]
        assert len(setups) <= 1, f"{page.name}: more than one setup block"
        if setups:
            assert blocks[0] is setups[0], f"{page.name}: the setup block comes first"
    assert README in SETUPS
    assert len([b for b in SNIPPETS if b.page == README]) >= 3  # the quickstarts
    assert len(SNIPPETS) >= 8
    known = ("setup", "deprecated", "skip")
    for block in (b for blocks in PAGE_BLOCKS.values() for b in blocks):
        for mark in block.marks:
            assert mark.split(":")[0].strip() in known, f"{block.page.name}:{block.line}: {mark!r}"
    # Skips hide rot: keep them for what truly needs a provider key.
    assert sum(b.skip_reason is not None for b in SNIPPETS) <= 1


@pytest.mark.parametrize("block", SNIPPETS, ids=[f"{b.page.stem}:{b.line}" for b in SNIPPETS])
def test_the_snippet_runs_as_written(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if block.skip_reason is not None:
        pytest.skip(block.skip_reason)
    monkeypatch.chdir(tmp_path)  # a snippet may create files (memory.db)
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    namespace = fresh_namespace(block.page)
    if "deprecated" not in block.marks:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            run_block(block, namespace)
        return
    assert "deprecated" in block.prose.lower(), (
        f"{block.page.name}:{block.line}: a block marked deprecated must say so above it"
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_block(block, namespace)
    assert any(issubclass(w.category, DeprecationWarning) for w in caught), (
        f"{block.page.name}:{block.line} is marked deprecated but warns nothing: drop the mark"
    )


def test_a_plain_string_system_prompt_would_become_a_user_turn() -> None:
    """The StateGraph snippet's claim: why ``SYSTEM`` must be a ``SystemMessage``."""
    namespace = fresh_namespace()
    model = namespace["model"]
    model.invoke(["You are a coding agent.", ("user", "Fix the bug")])  # type: ignore[attr-defined]
    model.invoke([SystemMessage("You are a coding agent."), ("user", "Fix the bug")])  # type: ignore[attr-defined]
    as_str, as_system = model.requests  # type: ignore[attr-defined]
    assert [m.type for m in as_str] == ["human", "human"]
    assert [m.type for m in as_system] == ["system", "human"]


def test_the_state_graph_snippet_sends_one_system_prompt_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (block,) = [b for b in SNIPPETS if "StateGraph(" in b.code]
    namespace = fresh_namespace()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        run_block(block, namespace)
    requests = namespace["model"].requests  # type: ignore[attr-defined]
    assert len(requests) >= 2
    for request in requests:
        assert [m.type for m in request].count("system") == 1
        assert request[0].type == "system"
        assert request[1].type == "human"


def test_max_tokens_bounds_the_history_not_the_request() -> None:
    """The README's measurement: ``max_tokens`` bounds the history; the prompt comes on top.

    100 turns through ``RunnableWithMessageHistory``: a ~350-token system prompt, ~80-token
    questions, ~400-token answers, ``max_tokens=8_000``. The numbers the README states are
    the ones measured here.
    """
    from langchain_core.chat_history import InMemoryChatMessageHistory
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables.history import RunnableWithMessageHistory

    from langchain_builderforce_memory import CompactingChatMessageHistory, count_tokens
    from langchain_builderforce_memory.testing import ScriptedChatModel

    model = ScriptedChatModel(script=["answer " + "a" * 1_600] * 100)
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "You are a helpful assistant. " + "Be precise. " * 100),
            MessagesPlaceholder("history"),
            ("human", "{question}"),
        ]
    )
    with warnings.catch_warnings():
        # The API under measurement is deprecated by langchain-core (the README says so).
        warnings.simplefilter("ignore", DeprecationWarning)
        history = CompactingChatMessageHistory(
            InMemoryChatMessageHistory(),
            summarizer=lambda prompt: "Earlier: they discussed the bug.",
            max_tokens=8_000,
        )
        chat = RunnableWithMessageHistory(
            prompt | model,
            lambda session_id: history,
            input_messages_key="question",
            history_messages_key="history",
        )
        for i in range(100):
            chat.invoke(
                {"question": f"Question {i}: " + "x" * 300},
                {"configurable": {"session_id": "s"}},
            )
    sizes = [
        (count_tokens(r), count_tokens(r[1:-1]), count_tokens(r[:1]), count_tokens(r[-1:]))
        for r in model.requests
    ]
    for request, from_history, system, question in sizes:
        assert from_history <= 8_000
        assert request == from_history + system + question
    largest_history = max(s[1] for s in sizes)
    largest_request = max(s[0] for s in sizes)
    assert largest_request > 8_000
    assert f"never exceeded {largest_history:,} tokens" in DOCS_TEXT
    assert f"the largest request was {largest_request:,}" in DOCS_TEXT


@pytest.mark.slow  # long: the main stage runs it; the Python 3.10 stage does not
def test_the_demo_caption_states_what_bfmem_demo_measures(tmp_path: Path) -> None:
    """The numbers under the README's figure are ``bfmem demo --turns 300``'s, today's."""
    from langchain_builderforce_memory.cli.demo import run_demo

    text = " ".join(README.read_text(encoding="utf-8").split())
    caption = re.search(
        r"(\d+) model calls, the record grows to (\d+)k tokens; every request stays under "
        r"the (\d+)k budget, (\d+) folds, (\d+)% of requests reuse the previous request's "
        r"prefix, (\d+)% of the full record's tokens sent",
        text,
    )
    assert caption is not None, "the caption under the figure changed shape: update this test"
    calls, record_k, budget_k, folds, reuse, sent = map(int, caption.groups())
    result = run_demo(
        turns=calls, budget=budget_k * 1_000, db=tmp_path / "demo.sqlite", compare=True
    )
    regenerate = "run `bfmem demo --turns 300 --plot docs/tokens_per_request.png`"
    peer_caption = re.search(
        r"The same run through `SummarizationMiddleware` costs (\d+)% more, billed input and "
        r"summarizer tokens together \(([\d.]+)M against ([\d.]+)M\), with (\d+) summarizer "
        r"calls against (\d+)",
        text,
    )
    assert peer_caption is not None, "the comparison under the figure changed shape"
    more, peer_m, ours_m, peer_calls, ours_calls = peer_caption.groups()
    assert result.cost is not None
    assert result.peer is not None
    assert f"{result.peer.total_tokens / 1e6:.2f}" == peer_m, regenerate
    assert f"{result.cost.total_tokens / 1e6:.2f}" == ours_m, regenerate
    assert round((result.peer.total_tokens / result.cost.total_tokens - 1) * 100) == int(more)
    assert (result.peer.summarizer_calls, result.cost.summarizer_calls) == (
        int(peer_calls),
        int(ours_calls),
    )
    assert len(result.requests) == calls
    assert round(result.record_tokens / 1_000) == record_k, regenerate
    assert result.max_sent_tokens <= budget_k * 1_000
    assert result.folds == folds, regenerate
    assert round(result.prefix_reuse_share * 100) == reuse, regenerate
    assert round(result.sent_tokens / result.full_tokens * 100) == sent, regenerate
