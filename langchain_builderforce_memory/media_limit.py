"""A request's media limits: at most 100 images and document pages, and 20 MB of them.

Anthropic refuses a request that holds more than 100 images and PDF pages together
(``Too much media: 0 document pages + 102 images > 100``). A run that looks at many small
images (screenshots, a browser's pages, thumbnails) stays far inside any token budget
and is then refused on every turn, its compaction call included
(anthropics/claude-code#19822). Inline media also weigh: Gemini takes 20 MB of inline
data a request, Anthropic 32 MB in all, and a token budget does not see bytes (a
full-screen screenshot costs ~1,600 tokens and 2-3 MB of base64).

A view therefore keeps the newest media within :data:`MAX_MEDIA_UNITS` and
:data:`MAX_MEDIA_BYTES`; older ones are shown by their label, in the view only (the record
keeps them, as it keeps everything). They are left out oldest first, in batches
(:data:`MEDIA_BATCH`, :data:`MEDIA_BYTES_BATCH`), so the view's front changes once a
batch, not with every new image, and the prompt cache keeps hitting in between. What a
provider needs whole (a computer call's screenshot: OpenAI, which takes 500 images a
request) and media in the assistant's own turns are never touched; they count all the
same.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory.directive import latest_directive_index
from langchain_builderforce_memory.media import media_bytes, media_label, media_units
from langchain_builderforce_memory.outputs import is_whole_output

__all__ = [
    "MAX_MEDIA_BYTES",
    "MAX_MEDIA_UNITS",
    "MEDIA_BATCH",
    "MEDIA_BYTES_BATCH",
    "MediaLoad",
    "view_media",
    "within_media_limit",
]

MAX_MEDIA_UNITS: Final = 100
"""Images plus document pages one request may hold: Anthropic's limit, the lowest of the
providers (OpenAI takes 500 images, Gemini thousands)."""
MAX_MEDIA_BYTES: Final = 20_000_000
"""Inline media (their base64) one request may hold: Gemini's inline limit, the lowest
(Anthropic's whole request may be 32 MB)."""
MEDIA_BATCH: Final = 20
"""Media units left out at a time once a view holds too many."""
MEDIA_BYTES_BATCH: Final = 4_000_000
"""Inline bytes left out at a time once a view holds too many."""
_LEFT_OUT: Final = " (left out of this view: more media than a request may hold)"


@dataclass(slots=True)
class MediaLoad:
    """Media a view holds (or has yet to leave out): units and inline bytes."""

    units: int = 0
    """Images, and a PDF's pages (:func:`~langchain_builderforce_memory.media.media_units`)."""
    inline_bytes: int = 0
    """Their base64 characters, as sent."""

    def add(self, block: Mapping[str, object], sign: int = 1) -> None:
        """Count ``block`` in (``sign=-1``: out)."""
        self.units += sign * media_units(block)
        self.inline_bytes += sign * media_bytes(block)

    def pending(self) -> bool:
        """Whether anything remains to leave out."""
        return self.units > 0 or self.inline_bytes > 0


def _load(content: object, load: MediaLoad, *, inner: bool = False) -> None:
    """Count a message's media into ``load``, its ``tool_result`` blocks' content too.

    One level deep: where a provider takes media; deeper, a block is text to it.
    """
    if not isinstance(content, list):
        return
    for block in content:
        if isinstance(block, Mapping):
            if media_units(block) or media_bytes(block):
                load.add(block)
            elif not inner:
                _load(block.get("content"), load, inner=True)


def view_media(view: Sequence[BaseMessage]) -> MediaLoad:
    """The media ``view`` holds: images and PDF pages, and their inline bytes.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> shot = {"type": "image", "url": "https://x/shot.png"}
        >>> view_media([HumanMessage(["look", shot, shot])])
        MediaLoad(units=2, inline_bytes=0)
    """
    load = MediaLoad()
    for message in view:
        _load(message.content, load)
    return load


def _shown(
    content: Sequence[object], owed: MediaLoad, *, inner: bool = False
) -> list[object] | None:
    """``content`` with media labelled while ``owed`` is pending, last block first.

    Last first within a message, as a cut keeps a message's head: its media came together.
    """
    out: list[object] = []
    changed = False
    for block in reversed(content):
        if owed.pending() and isinstance(block, Mapping):
            if media_units(block) or media_bytes(block):
                owed.add(block, -1)
                out.append({"type": "text", "text": f"{media_label(block)}{_LEFT_OUT}"})
                changed = True
                continue
            nested = block.get("content")
            shown = _shown(nested, owed, inner=True) if isinstance(nested, list) else None
            if not inner and shown is not None:
                out.append({**block, "content": shown})
                changed = True
                continue
        out.append(block)
    return out[::-1] if changed else None


def _batched(over: int, batch: int) -> int:
    return math.ceil(over / batch) * batch if over > 0 else 0


def within_media_limit(view: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``view`` with its oldest media labelled until it is within both media limits.

    The oldest message's first (within a message, its last first; the latest directive's
    last of all), a multiple of
    :data:`MEDIA_BATCH` units (:data:`MEDIA_BYTES_BATCH` bytes) at a time; only in user
    turns and tool results (a new copy of each message changed: never the caller's). A
    label costs fewer tokens than the image or pages it stands for, so a view within its
    token budget stays there.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> shot = {"type": "image", "url": "https://x/shot.png"}
        >>> view = within_media_limit([HumanMessage([shot])] * 101 + [HumanMessage("go")])
        >>> view_media(view).units, view[0].content[0]["text"][:25]
        (81, '[image https://x/shot.png')
    """
    held = view_media(view)
    owed = MediaLoad(
        _batched(held.units - MAX_MEDIA_UNITS, MEDIA_BATCH),
        _batched(held.inline_bytes - MAX_MEDIA_BYTES, MEDIA_BYTES_BATCH),
    )
    out = list(view)
    if not owed.pending():
        return out
    # The latest directive's media last: the mockup a task was given is what it is about.
    directive = latest_directive_index(out, fallback=False)
    later = [directive] if directive >= 0 else []
    for i in [*(j for j in range(len(out)) if j != directive), *later]:
        message = out[i]
        if not owed.pending():
            break
        if not isinstance(message, HumanMessage | ToolMessage) or is_whole_output(message):
            continue
        if isinstance(message.content, list) and (shown := _shown(message.content, owed)):
            out[i] = message.model_copy(update={"content": shown})
    return out
