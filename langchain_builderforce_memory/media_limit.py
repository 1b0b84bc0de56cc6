"""A request's media limits: how many images and pages, how many bytes, how large each.

Anthropic refuses a request that holds more than 100 images and PDF pages together
(``Too much media: 0 document pages + 102 images > 100``). A run that looks at many small
images (screenshots, a browser's pages, thumbnails) stays far inside any token budget
and is then refused on every turn, its compaction call included
(anthropics/claude-code#19822). Inline media also weigh: Gemini takes 20 MB of inline
data a request, Anthropic 32 MB in all, and a token budget does not see bytes (a
full-screen screenshot costs ~1,600 tokens and 2-3 MB of base64).

One image can be refused too. Anthropic takes no image over 8,000 pixels a side or 5 MB
of base64 (Bedrock: 3.75 MB of bytes, the same image), and, in a request of more than
20 images, none over 2,000 pixels a side: the 21st full-screen screenshot (2,560 x 1,440)
of a browser run made every request after it fail ("At least one of the image dimensions
exceed max allowed size for many-image requests: 2000 pixels",
anthropics/claude-code#13480), though each had been taken in a valid one.

A view therefore keeps the newest media within these limits; the others are shown by
their label, in the view only (the record keeps them, as it keeps everything). The rules
run in turn (:class:`MediaRule`): images no request takes, then the oldest media past
:data:`MAX_MEDIA_UNITS` and :data:`MAX_MEDIA_BYTES`, then the oldest large images of a
view of many. They are left out in batches (:data:`MEDIA_BATCH`,
:data:`MEDIA_BYTES_BATCH`, :data:`MANY_IMAGES_BATCH`), so the view's front changes once
a batch, not with every new image, and the prompt cache keeps hitting in between. What a
provider needs whole (a computer call's screenshot: OpenAI, which takes 500 images a
request) and media in the assistant's own turns are never touched; they count all the
same.

Bedrock's Converse API limits media per message, not per request: a message holds at most
:data:`MAX_MESSAGE_IMAGES` images and :data:`MAX_MESSAGE_DOCUMENTS` documents, and
langchain-aws sends a run of tool results and user turns as ONE message. A turn of eight
parallel screenshot calls of three images each is refused there, though the request holds
far fewer than 100. :func:`within_message_media_limit` brings each such run within those
limits; other providers take what it would label, so the agent adapters run it only for
a serving model that needs it
(:func:`~langchain_builderforce_memory.agents.native.limits_media_per_message`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from langchain_builderforce_memory.directive import latest_directive_index
from langchain_builderforce_memory.media import (
    image_size,
    media_bytes,
    media_kind,
    media_label,
    media_units,
)
from langchain_builderforce_memory.outputs import is_whole_output

__all__ = [
    "MANY_IMAGES",
    "MANY_IMAGES_BATCH",
    "MANY_IMAGES_SIDE",
    "MAX_IMAGE_BYTES",
    "MAX_IMAGE_SIDE",
    "MAX_MEDIA_BYTES",
    "MAX_MEDIA_UNITS",
    "MAX_MESSAGE_DOCUMENTS",
    "MAX_MESSAGE_IMAGES",
    "MEDIA_BATCH",
    "MEDIA_BYTES_BATCH",
    "CrowdedMessage",
    "ExcessMedia",
    "ManyImages",
    "MediaLoad",
    "MediaRule",
    "OversizedImages",
    "view_media",
    "within_media_limit",
    "within_message_media_limit",
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
MAX_IMAGE_SIDE: Final = 8_000
"""Pixels a side of the largest image a request may hold (Anthropic, Bedrock)."""
MAX_IMAGE_BYTES: Final = 5_242_880
"""Base64 characters of the largest inline image a request may hold: Anthropic's 5 MB
("image exceeds 5 MB maximum: 5316852 bytes > 5242880 bytes"); Bedrock's 3.75 MB of
bytes is the same image."""
MANY_IMAGES: Final = 20
"""Images past which a request holds none larger than :data:`MANY_IMAGES_SIDE`."""
MANY_IMAGES_SIDE: Final = 2_000
"""Pixels a side of the largest image in a request of more than :data:`MANY_IMAGES`."""
MANY_IMAGES_BATCH: Final = 10
"""Images left out at a time once a view holds too many large ones."""
MAX_MESSAGE_IMAGES: Final = 20
"""Images one message may hold on Bedrock's Converse API (a run of tool results and user
turns is one message there)."""
MAX_MESSAGE_DOCUMENTS: Final = 5
"""Documents (PDFs, text files) one message may hold on Bedrock's Converse API."""
_LEFT_OUT: Final = "more media than a request may hold"


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


class MediaRule(Protocol):
    """One limit a view's media are brought within, block by block, oldest first."""

    def pending(self) -> bool:
        """Whether the rule may still leave a block out."""
        ...

    def leaves_out(self, block: Mapping[str, object]) -> str | None:
        """Why ``block`` is shown by its label (counting it out), or ``None``: it stays."""
        ...


@dataclass(slots=True)
class OversizedImages:
    """Every image no request takes: over :data:`MAX_IMAGE_SIDE` a side, or too many bytes.

    Too many: :data:`MAX_IMAGE_BYTES` of base64. No batches: each is refused wherever it is.
    """

    def pending(self) -> bool:
        """Always: any image may be too large."""
        return True

    def leaves_out(self, block: Mapping[str, object]) -> str | None:
        """Its size, when no request takes it."""
        if media_kind(block) != "image":
            return None
        if (size := media_bytes(block)) > MAX_IMAGE_BYTES:
            return f"{size / 1_048_576:.1f} MB, larger than a request takes an image"
        pixels = image_size(block)
        if pixels is not None and max(pixels) > MAX_IMAGE_SIDE:
            return f"{pixels[0]}x{pixels[1]} pixels, larger than a request takes an image"
        return None


@dataclass(slots=True)
class ExcessMedia:
    """The oldest media past :data:`MAX_MEDIA_UNITS` and :data:`MAX_MEDIA_BYTES`."""

    owed: MediaLoad
    """What remains to leave out: whole batches past the limits."""

    def pending(self) -> bool:
        """Whether anything remains to leave out."""
        return self.owed.pending()

    def leaves_out(self, block: Mapping[str, object]) -> str | None:
        """Any media, while some are owed."""
        if media_units(block) or media_bytes(block):
            self.owed.add(block, -1)
            return _LEFT_OUT
        return None


@dataclass(slots=True)
class ManyImages:
    """The oldest images over :data:`MANY_IMAGES_SIDE` a side, in a view of too many images.

    Too many: more than :data:`MANY_IMAGES`, whose sizes a request limits (Anthropic). With
    ``any_size``, the oldest images whatever their size, until no more than that are left:
    where the large ones are the newest, the newest are worth more than the old.
    """

    quota: int
    """Images still to leave out."""
    any_size: bool = False
    """Whether an image of any size may go (else only a large one)."""

    def pending(self) -> bool:
        """Whether images remain to leave out."""
        return self.quota > 0

    def leaves_out(self, block: Mapping[str, object]) -> str | None:
        """A large image (any image, with ``any_size``), while some are owed."""
        if media_kind(block) != "image":
            return None
        pixels = image_size(block)
        large = pixels is not None and max(pixels) > MANY_IMAGES_SIDE
        if not (large or self.any_size):
            return None
        self.quota -= 1
        if pixels is None or not large:
            return f"more than {MANY_IMAGES} images, one of them over {MANY_IMAGES_SIDE} pixels"
        return f"{pixels[0]}x{pixels[1]} pixels, more than a request of many images takes"


@dataclass(slots=True)
class CrowdedMessage:
    """The oldest images and documents past one wire message's limits (Bedrock Converse)."""

    images: int
    """Images still to leave out (past :data:`MAX_MESSAGE_IMAGES`)."""
    documents: int
    """Documents still to leave out (past :data:`MAX_MESSAGE_DOCUMENTS`)."""

    def pending(self) -> bool:
        """Whether images or documents remain to leave out."""
        return self.images > 0 or self.documents > 0

    def leaves_out(self, block: Mapping[str, object]) -> str | None:
        """An image or a document, while some of that kind are owed."""
        kind = media_kind(block)
        if kind == "image" and self.images > 0:
            self.images -= 1
            return f"more than {MAX_MESSAGE_IMAGES} images in one message"
        if kind == "file" and self.documents > 0:
            self.documents -= 1
            return f"more than {MAX_MESSAGE_DOCUMENTS} documents in one message"
        return None


_MANY_IMAGES_STEPS: Final = ((False, True), (True, True), (False, False))
"""(any size, the newest message spared) in turn: the large images before the newest
message; then any before it; then the newest message's own large ones, when it alone
holds too many."""


def _media_blocks(content: object, *, inner: bool = False) -> Iterator[Mapping[str, object]]:
    """A message's media blocks, those in its ``tool_result`` blocks' content too.

    One level deep: where a provider takes media; deeper, a block is text to it.
    """
    if not isinstance(content, list):
        return
    for block in content:
        if isinstance(block, Mapping):
            if media_kind(block) is not None:
                yield block
            elif not inner:
                yield from _media_blocks(block.get("content"), inner=True)


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
        for block in _media_blocks(message.content):
            load.add(block)
    return load


def _shown(
    content: Sequence[object], rule: MediaRule, *, inner: bool = False
) -> list[object] | None:
    """``content`` with the media ``rule`` leaves out labelled, last block first.

    Last first within a message, as a cut keeps a message's head: its media came together.
    """
    out: list[object] = []
    changed = False
    for block in reversed(content):
        if rule.pending() and isinstance(block, Mapping):
            if (why := rule.leaves_out(block)) is not None:
                out.append(
                    {"type": "text", "text": f"{media_label(block)} (left out of this view: {why})"}
                )
                changed = True
                continue
            nested = block.get("content")
            shown = _shown(nested, rule, inner=True) if isinstance(nested, list) else None
            if not inner and shown is not None:
                out.append({**block, "content": shown})
                changed = True
                continue
        out.append(block)
    return out[::-1] if changed else None


def _applied(view: list[BaseMessage], rule: MediaRule) -> list[BaseMessage]:
    """``view`` with ``rule`` applied to its user turns and tool results, oldest first.

    The latest directive's media last: the mockup a task was given is what it is about.
    """
    out = list(view)
    directive = latest_directive_index(out, fallback=False)
    later = [directive] if directive >= 0 else []
    for i in [*(j for j in range(len(out)) if j != directive), *later]:
        message = out[i]
        if not rule.pending():
            break
        if not isinstance(message, HumanMessage | ToolMessage) or is_whole_output(message):
            continue
        if isinstance(message.content, list) and (shown := _shown(message.content, rule)):
            out[i] = message.model_copy(update={"content": shown})
    return out


def _batched(over: int, batch: int) -> int:
    return math.ceil(over / batch) * batch if over > 0 else 0


def _blocks(view: Sequence[BaseMessage]) -> list[Mapping[str, object]]:
    return [block for message in view for block in _media_blocks(message.content)]


def _too_many_large(images: Sequence[Mapping[str, object]]) -> int:
    """Images past :data:`MANY_IMAGES`, when any is over :data:`MANY_IMAGES_SIDE`; else 0."""
    if len(images) <= MANY_IMAGES:
        return 0
    sizes = [image_size(block) for block in images]
    large = any(s is not None and max(s) > MANY_IMAGES_SIDE for s in sizes)
    return len(images) - MANY_IMAGES if large else 0


def within_media_limit(view: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``view`` with media labelled until every provider's media limits hold.

    The rules in turn: :class:`OversizedImages`, :class:`ExcessMedia` (a multiple of
    :data:`MEDIA_BATCH` units, :data:`MEDIA_BYTES_BATCH` bytes), :class:`ManyImages` (a
    multiple of :data:`MANY_IMAGES_BATCH`). The oldest message's media first (within a
    message its last first; the latest directive's last of all), only in user turns and
    tool results, a new copy of each message changed: never the caller's. A label costs
    fewer tokens than the image or pages it stands for, so a view within its token budget
    stays there.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> shot = {"type": "image", "url": "https://x/shot.png"}
        >>> view = within_media_limit([HumanMessage([shot])] * 101 + [HumanMessage("go")])
        >>> view_media(view).units, view[0].content[0]["text"][:25]
        (81, '[image https://x/shot.png')
    """
    out = list(view)
    media = _blocks(out)
    if not media:
        return out
    oversized = OversizedImages()
    if any(oversized.leaves_out(block) for block in media):
        out = _applied(out, oversized)
        media = _blocks(out)
    held = MediaLoad()
    for block in media:
        held.add(block)
    owed = MediaLoad(
        _batched(held.units - MAX_MEDIA_UNITS, MEDIA_BATCH),
        _batched(held.inline_bytes - MAX_MEDIA_BYTES, MEDIA_BYTES_BATCH),
    )
    if owed.pending():
        out = _applied(out, ExcessMedia(owed))
        media = _blocks(out)
    return _fewer_images(out, media)


def _fewer_images(
    view: list[BaseMessage], media: Sequence[Mapping[str, object]]
) -> list[BaseMessage]:
    """``view`` with its oldest images labelled while too many hold a large one."""
    for any_size, spare_newest in _MANY_IMAGES_STEPS:
        over = _too_many_large([block for block in media if media_kind(block) == "image"])
        if not over:
            break
        head, newest = (view[:-1], view[-1:]) if spare_newest else (view, [])
        view = [*_applied(head, ManyImages(_batched(over, MANY_IMAGES_BATCH), any_size)), *newest]
        media = _blocks(view)
    return view


def _user_runs(view: Sequence[BaseMessage]) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each run of tool results and user turns: one wire message."""
    start: int | None = None
    for i, message in enumerate([*view, None]):
        joins = isinstance(message, HumanMessage | ToolMessage)
        if joins and start is None:
            start = i
        elif not joins and start is not None:
            yield start, i
            start = None


def within_message_media_limit(view: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``view`` with media labelled until each wire message keeps Bedrock's limits.

    Each run of tool results and user turns (langchain-aws sends it as one message) holds
    at most :data:`MAX_MESSAGE_IMAGES` images and :data:`MAX_MESSAGE_DOCUMENTS`
    documents, those inside tool results counted. The oldest go first, the latest
    directive's last, as in :func:`within_media_limit`; a run already within the limits is
    left as it is, so a past turn is labelled the same way every turn and the prompt cache
    keeps its prefix. A new copy of each message changed: never the caller's.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> shot = {"type": "image", "url": "https://x/shot.png"}
        >>> view = within_message_media_limit([HumanMessage(["look", *[shot] * 22])])
        >>> view_media(view).units, view[0].content[-1]["text"][:25]
        (20, '[image https://x/shot.png')
    """
    out = list(view)
    for start, end in _user_runs(out):
        kinds = [media_kind(block) for block in _blocks(out[start:end])]
        rule = CrowdedMessage(
            max(0, kinds.count("image") - MAX_MESSAGE_IMAGES),
            max(0, kinds.count("file") - MAX_MESSAGE_DOCUMENTS),
        )
        if rule.pending():
            out[start:end] = _applied(out[start:end], rule)
    return out
