"""Provider-native compaction in the record: recognised, billed from, never folded away.

Anthropic's server-side compaction (``compact_20260112``) answers with a ``compaction``
content block, and on later calls the API ignores every message block before it: the
provider bills from the block on. OpenAI's Responses API compaction returns an encrypted
``compaction`` item that only OpenAI can read. ``langchain-anthropic`` and
``langchain-openai`` both keep it as a content block of the assistant message:
``{"type": "compaction", ...}``, or ``{"type": "non_standard", "value": {"type":
"compaction", ...}}`` under the v1 content format.

A view built from such a record must not fight the provider:

* it is counted from the latest block on, the way the provider bills it, so our own
  tiers run only when what FOLLOWS the block is still over budget (else the user pays
  for two compactions and loses the provider's summary);
* the block is never cut, cleared, elided or folded into our note: it is part of the
  view's fixed prefix, like the system prompt.

What precedes the block may be left out of the request, since the provider ignores it:
:func:`scope_to_compaction` keeps the leading system messages, then a one-line human
opener (strict providers want a user turn first; Anthropic drops it with the rest of the
pre-block messages), then the record from the block on. The tiers treat the opener and
the block (with the tool results that answer it) as fixed, like the system messages:
:func:`pinned_count`.

The record itself is untouched: search, the hand-off packer and the working memory keep
reading the plaintext of the whole run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal, TypeAlias, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory.copies import Copies
from langchain_builderforce_memory.directive import latest_directive_index, restated_directive
from langchain_builderforce_memory.events import NativeEvent
from langchain_builderforce_memory.facts import LastIndex
from langchain_builderforce_memory.messages import (
    DIRECTIVE_KIND,
    is_stamped,
    leading_system_count,
    message_id,
    stamp,
)
from langchain_builderforce_memory.tokens import TokenCounter

__all__ = [
    "COMPACTION_OPENER_KIND",
    "LAST_COMPACTION",
    "OPENER_TEXT",
    "BlockKind",
    "Reader",
    "applied_edits",
    "cleared_input_tokens",
    "compaction_kind",
    "compaction_opener",
    "fixed_prefix_count",
    "for_reader",
    "foreign_item",
    "is_provider_compaction",
    "last_compaction_index",
    "native_event",
    "pinned_count",
    "scope_to_compaction",
]

S = TypeVar("S", bound=Sequence[BaseMessage])

COMPACTION_OPENER_KIND: Final = "compaction_opener"
"""The stamp ``kind`` of the human opener put in front of a provider compaction block."""

OPENER_TEXT: Final = "(The conversation before this point was compacted by the provider.)"
"""The opener's text: short, since it is counted in the view's budget."""


BlockKind: TypeAlias = Literal["summary", "encrypted"]
"""A compaction's kind: a plaintext summary (Anthropic) or an item only its provider
reads (OpenAI's ``encrypted_content``)."""


def compaction_kind(block: object) -> BlockKind | None:
    """What kind of provider compaction ``block`` is; ``None`` when it is none.

    A block whose summary is null or empty is a compaction that failed: Anthropic treats
    it as a no-op when it is sent back, so it is not a compaction here either.

    Example:
        >>> compaction_kind({"type": "compaction", "content": "so far"})
        'summary'
        >>> compaction_kind({"type": "compaction", "id": "cmp_1", "encrypted_content": "gA"})
        'encrypted'
        >>> compaction_kind({"type": "compaction", "content": None}) is None
        True
    """
    if not isinstance(block, Mapping):
        return None
    if block.get("type") == "non_standard":
        block = block.get("value")
        if not isinstance(block, Mapping):
            return None
    if block.get("type") != "compaction":
        return None
    content = block.get("content")
    if isinstance(content, str) and content:
        return "summary"
    if "content" not in block and isinstance(block.get("encrypted_content"), str):
        return "encrypted"
    return None


def is_provider_compaction(message: BaseMessage) -> bool:
    """True when ``message`` is an assistant message carrying a provider compaction block.

    Anthropic's ``compaction`` block and OpenAI's compaction item, in the shapes
    ``langchain-anthropic`` and ``langchain-openai`` give them (whole, streamed and merged,
    v1 ``non_standard``, or after a JSON checkpoint round trip: all are dict blocks).

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> is_provider_compaction(AIMessage([{"type": "compaction", "content": "so far"}]))
        True
        >>> is_provider_compaction(AIMessage("compaction"))
        False
    """
    content = message.content
    if not isinstance(content, list) or not isinstance(message, AIMessage):
        return False
    return any(compaction_kind(block) is not None for block in content)


def applied_edits(message: BaseMessage) -> list[Mapping[str, object]]:
    """The context-management edits the provider reports it applied to ``message``'s request.

    Anthropic reports them in the response (``context_management.applied_edits``), which
    ``langchain-anthropic`` keeps in ``response_metadata``.
    """
    report = message.response_metadata.get("context_management")
    edits = report.get("applied_edits") if isinstance(report, Mapping) else None
    return [e for e in edits if isinstance(e, Mapping)] if isinstance(edits, list) else []


def _edit_total(message: BaseMessage, key: str) -> int:
    """The sum of ``key`` over the applied edits' reports; a malformed value counts 0."""
    values = (edit.get(key) for edit in applied_edits(message))
    return sum(v for v in values if isinstance(v, int) and not isinstance(v, bool))


def cleared_input_tokens(message: BaseMessage) -> int:
    """Input tokens the provider's own edits cleared before it counted the request.

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> edit = {"type": "clear_tool_uses_20250919", "cleared_input_tokens": 900}
        >>> report = {"context_management": {"applied_edits": [edit]}}
        >>> cleared_input_tokens(AIMessage("ok", response_metadata=report))
        900
    """
    return _edit_total(message, "cleared_input_tokens")


def native_event(record: Sequence[BaseMessage]) -> NativeEvent | None:
    """What the provider's own context management did to the request last answered.

    Read from the record's latest assistant message: a compaction block, and the edits
    reported applied. ``None`` when it did neither.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> block = {"type": "compaction", "content": "so far"}
        >>> native_event([HumanMessage("go"), AIMessage([block])])["compacted"]
        True
    """
    for message in reversed(record):
        if not isinstance(message, AIMessage):
            continue
        edits = applied_edits(message)
        compacted = is_provider_compaction(message)
        if not compacted and not edits:
            return None
        return NativeEvent(
            builderforce_memory="native",
            compacted=compacted,
            cleared_tool_uses=_edit_total(message, "cleared_tool_uses"),
            cleared_input_tokens=cleared_input_tokens(message),
        )
    return None


LAST_COMPACTION: Final = LastIndex(is_provider_compaction)
"""The record's latest provider compaction, as a fact grown over new messages only."""


def last_compaction_index(messages: Sequence[BaseMessage]) -> int:
    """Index of the latest provider compaction message in ``messages``, or -1.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> block = {"type": "compaction", "content": "a"}
        >>> last_compaction_index([HumanMessage("a"), AIMessage([block])])
        1
    """
    for i in range(len(messages) - 1, -1, -1):
        if is_provider_compaction(messages[i]):
            return i
    return -1


def compaction_opener(block: BaseMessage) -> HumanMessage:
    """The human turn put before ``block`` in a view, the same for the same block.

    Its id derives from the block's, so the scoped record of one conversation compares
    equal turn after turn (its facts then grow by the new messages only).
    """
    of = message_id(block)
    opener = HumanMessage(OPENER_TEXT, id=f"bfmem-opener-{of}")
    return stamp(opener, COMPACTION_OPENER_KIND, of=of)


def scope_to_compaction(
    messages: S,
    *,
    last: int | None = None,
    directive: int | None = None,
    copies: Copies | None = None,
) -> S | list[BaseMessage]:
    """The record as the provider reads it: system messages, opener, block on.

    The latest directive, when the block compacted it away, is restated right after the
    block (and the tool results answering it): the provider's summary may not carry the
    user's words, and every view of ours does.

    ``last``: the latest compaction's index when the caller knows it (its record facts'
    :data:`LAST_COMPACTION`), else found by a scan; ``directive``: the latest directive's
    index before it (-1: none), else looked up. Without a block, or already scoped,
    ``messages`` itself is returned (no copy). ``copies``: the conversation's, so the
    restated directive is the same object turn after turn.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
        >>> record = [SystemMessage("s"), HumanMessage("a"), AIMessage("b"),
        ...           AIMessage([{"type": "compaction", "content": "a, b"}]), AIMessage("c")]
        >>> [(m.type, m.text) for m in scope_to_compaction(record)][2:]
        [('ai', ''), ('human', 'a'), ('ai', 'c')]
    """
    at = last_compaction_index(messages) if last is None else last
    lead = leading_system_count(messages)
    if at < lead or (at == lead + 1 and is_stamped(messages[lead], COMPACTION_OPENER_KIND)):
        return messages
    if directive is None:
        directive = latest_directive_index(messages[lead:at], fallback=False)
        directive = directive + lead if directive >= 0 else -1
    end = at + _answers(messages, at)
    task = [restated_directive(messages[directive], copies=copies)] if directive >= lead else []
    opener = compaction_opener(messages[at])
    return [*messages[:lead], opener, *messages[at:end], *task, *messages[end:]]


def _answers(messages: Sequence[BaseMessage], at: int) -> int:
    """The compaction message at ``at`` and the tool results right after it answering it."""
    block, end = messages[at], at + 1
    if isinstance(block, AIMessage) and block.tool_calls:
        while end < len(messages) and isinstance(messages[end], ToolMessage):
            end += 1
    return end - at


def pinned_count(messages: Sequence[BaseMessage], lead: int) -> int:
    """Messages after the ``lead`` system ones that a scoped record pins: 0 when unscoped.

    The opener, the compaction message, the tool results answering the compaction
    message's own calls (a compaction response may also call tools), and the directive
    restated after them.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> block = AIMessage([{"type": "compaction", "content": "so far"}], id="c1")
        >>> pinned_count([compaction_opener(block), block, HumanMessage("go on")], 0)
        2
    """
    if len(messages) < lead + 2 or not is_stamped(messages[lead], COMPACTION_OPENER_KIND):
        return 0
    if not is_provider_compaction(messages[lead + 1]):
        return 0
    end = lead + 1 + _answers(messages, lead + 1)
    if end < len(messages) and is_stamped(messages[end], DIRECTIVE_KIND):
        end += 1  # the directive restated after the block
    return end - lead


def fixed_prefix_count(
    messages: Sequence[BaseMessage], max_tokens: int, counter: TokenCounter
) -> int:
    """The leading messages every view keeps as they are: system, then a pinned block.

    A pinned prefix over half of ``max_tokens`` gives up its restated directive first
    (the tiers then keep it, or cut it, as the conversation's first message), then the
    block (treated as any other message): a small budget still has room for a turn.

    Example:
        >>> from langchain_core.messages import AIMessage, SystemMessage
        >>> from langchain_builderforce_memory.tokens import ApproximateTokenCounter
        >>> block = AIMessage([{"type": "compaction", "content": "so far"}], id="c1")
        >>> record = [SystemMessage("s"), compaction_opener(block), block]
        >>> fixed_prefix_count(record, 1_000, ApproximateTokenCounter())
        3
    """
    lead = leading_system_count(messages)
    pinned = pinned_count(messages, lead)
    while pinned:
        if sum(counter.count_message(m) for m in messages[: lead + pinned]) <= max_tokens // 2:
            return lead + pinned
        if not is_stamped(messages[lead + pinned - 1], DIRECTIVE_KIND):
            return lead
        pinned -= 1
    return lead


Reader: TypeAlias = Literal["anthropic", "openai"] | None
"""Whose compactions the serving model reads natively (``None``: neither)."""


def _readable(kind: BlockKind, reader: Reader) -> bool:
    return (kind == "summary" and reader == "anthropic") or (
        kind == "encrypted" and reader == "openai"
    )


def foreign_item(message: BaseMessage, reader: Reader) -> bool:
    """True when ``message`` holds a compaction item ``reader`` cannot read and no text.

    Scoping the record to such an item would leave the model nothing of what precedes
    it: the view is built from the whole record instead (the item left out).
    """
    content = message.content
    kinds = [compaction_kind(b) for b in content] if isinstance(content, list) else []
    return "encrypted" in kinds and not _readable("encrypted", reader)


def for_reader(view: Sequence[BaseMessage], reader: Reader) -> list[BaseMessage]:
    """``view`` with every compaction the serving model cannot read made plain.

    Another provider's summary becomes a text block (the summary is plaintext); an item
    only its provider can read is left out, and an assistant message left with nothing
    is dropped. The record is not changed: the copies are the view's.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> view = [HumanMessage("go"), AIMessage([{"type": "compaction", "content": "so far"}])]
        >>> for_reader(view, None)[1].content
        [{'type': 'text', 'text': 'so far'}]
    """
    out: list[BaseMessage] = []
    for message in view:
        if not is_provider_compaction(message):
            out.append(message)
            continue
        kept: list[str | dict[str, object]] = []
        for block in message.content:
            kind = compaction_kind(block)
            if kind is None or _readable(kind, reader):
                kept.append(block)
            elif kind == "summary" and isinstance(block, Mapping):
                body = block.get("value", block) if block.get("type") == "non_standard" else block
                kept.append({"type": "text", "text": str(body["content"])})
        calls = message.tool_calls if isinstance(message, AIMessage) else []
        if kept or calls:
            out.append(message.model_copy(update={"content": kept}))
    return out
