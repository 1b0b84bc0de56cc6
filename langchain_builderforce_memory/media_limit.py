"""A request's media limit: at most 100 images and document pages, however few tokens.

Anthropic refuses a request that holds more than 100 images and PDF pages together
(``Too much media: 0 document pages + 102 images > 100``). A run that looks at many small
images (screenshots, a browser's pages, thumbnails) stays far inside any token budget
and is then refused on every turn, its compaction call included
(anthropics/claude-code#19822). A view therefore keeps the newest media up to
:data:`MAX_MEDIA_UNITS`; older ones are shown by their label, in the view only (the
record keeps them, as it keeps everything).

They are left out in batches of :data:`MEDIA_BATCH`, oldest first, so the view's front
changes once a batch, not with every new image, and the prompt cache keeps hitting in
between. What a provider needs whole (a computer call's screenshot: OpenAI, which takes
500 images a request) and media in the assistant's own turns are never touched; they
count all the same.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Final

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory.media import media_label, media_units
from langchain_builderforce_memory.outputs import is_whole_output

__all__ = ["MAX_MEDIA_UNITS", "MEDIA_BATCH", "view_media_units", "within_media_limit"]

MAX_MEDIA_UNITS: Final = 100
"""Images plus document pages one request may hold: Anthropic's limit, the lowest of the
providers (OpenAI takes 500 images, Gemini thousands)."""
MEDIA_BATCH: Final = 20
"""Media units left out at a time once a view is over the limit."""
_LEFT_OUT: Final = " (left out of this view: a request holds at most 100 images and pages)"


def _units(content: object, *, inner: bool = False) -> int:
    """Media units in a message's content and its ``tool_result`` blocks' content.

    One level deep: where a provider takes media; deeper, a block is text to it.
    """
    if not isinstance(content, list):
        return 0
    total = 0
    for block in content:
        if isinstance(block, Mapping):
            own = media_units(block)
            total += own or (0 if inner else _units(block.get("content"), inner=True))
    return total


def view_media_units(view: Sequence[BaseMessage]) -> int:
    """The media units (images, PDF pages) ``view`` holds, as the provider counts them.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> shot = {"type": "image", "url": "https://x/shot.png"}
        >>> view_media_units([HumanMessage(["look", shot, shot])])
        2
    """
    return sum(_units(m.content) for m in view)


def _shown(
    content: Sequence[object], budget: list[int], *, inner: bool = False
) -> list[object] | None:
    """``content`` with media labelled while ``budget[0]`` units remain to leave out."""
    out: list[object] = []
    changed = False
    for block in content:
        if budget[0] > 0 and isinstance(block, Mapping):
            units = media_units(block)
            if units:
                budget[0] -= units
                out.append({"type": "text", "text": f"{media_label(block)}{_LEFT_OUT}"})
                changed = True
                continue
            nested = block.get("content")
            if (
                not inner
                and isinstance(nested, list)
                and (shown := _shown(nested, budget, inner=True))
            ):
                out.append({**block, "content": shown})
                changed = True
                continue
        out.append(block)
    return out if changed else None


def within_media_limit(view: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``view`` with its oldest media labelled until it holds :data:`MAX_MEDIA_UNITS`.

    Oldest first, a multiple of :data:`MEDIA_BATCH` units at a time; only in user turns and
    tool results (a new copy of each message changed: never the caller's). A label costs
    fewer tokens than the image or pages it stands for, so the view stays in its budget.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> shot = {"type": "image", "url": "https://x/shot.png"}
        >>> view = within_media_limit([HumanMessage([shot])] * 101 + [HumanMessage("go")])
        >>> view_media_units(view), view[0].content[0]["text"][:25]
        (81, '[image https://x/shot.png')
    """
    over = view_media_units(view) - MAX_MEDIA_UNITS
    if over <= 0:
        return list(view)
    budget = [math.ceil(over / MEDIA_BATCH) * MEDIA_BATCH]
    out = list(view)
    for i, message in enumerate(out):
        if budget[0] <= 0:
            break
        if not isinstance(message, HumanMessage | ToolMessage) or is_whole_output(message):
            continue
        if isinstance(message.content, list) and (shown := _shown(message.content, budget)):
            out[i] = message.model_copy(update={"content": shown})
    return out
