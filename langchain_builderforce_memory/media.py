"""What a media block costs: images by their pixels, files by their text or size, never base64.

Media blocks cost what their size says, never their base64 length: an image is counted
from its pixel size (read from its header with ``imagesize``), a text file from its text,
a PDF by its pages, audio and video by their length (read from the header with
``tinytag``), anything else by size class. The counters of
:mod:`langchain_builderforce_memory.tokens` call :func:`media_tokens` for every block that
is not text, thinking or a tool call.
"""

from __future__ import annotations

import base64
import binascii
import functools
import io
import math
import struct
import wave
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final, Literal, TypeAlias

import imagesize

__all__ = [
    "IMAGE_MAX_TOKENS",
    "IMAGE_MIN_TOKENS",
    "ClipKind",
    "clip_seconds",
    "image_size",
    "media_bytes",
    "media_dropped",
    "media_kind",
    "media_kinds",
    "media_label",
    "media_phrase",
    "media_tokens",
    "media_units",
    "nested_media",
    "pdf_pages",
]

_IMAGE_TYPES: Final = frozenset({"image", "image_url", "input_image", "image_generation_call"})
_GENERATED: Final = "image_generation_call"
"""OpenAI's built-in image tool: an assistant item holding the image in ``result``."""
_FILE_TYPES: Final = frozenset({"file", "document", "input_file"})
_AUDIO_TYPES: Final = frozenset({"audio", "input_audio", "video"})
_GENAI_MEDIA: Final = "media"
"""langchain-google-genai's block for audio, video, images and files: ``data`` (base64 or
bytes) or a ``file_uri``, and a ``mime_type`` that says which."""

IMAGE_MIN_TOKENS: Final = 85
"""An image's floor: OpenAI's low-detail price, and what ``detail="low"`` costs."""
IMAGE_MAX_TOKENS: Final = 1_600
"""An image's ceiling: Anthropic resizes to about 1.15 megapixels (~1,600 tokens) and
OpenAI's high detail of a 2048 x 768 image costs 1,105. Used for an image whose size
cannot be read (a URL): the safe side for a budget."""
_PIXELS_PER_TOKEN: Final = 750
"""Anthropic's published rule: tokens = width x height / 750, after the resize."""
_LONG_EDGE: Final = 1_568
_OPENAI_FIT: Final = 2_048
_OPENAI_SHORT: Final = 768
_OPENAI_BASE: Final = 85
_OPENAI_TILE: Final = 170
_HEADER_READS: Final = (64, 4_096, 96_000)
"""Base64 characters decoded, in turn, to read an image's size: a PNG, GIF or WebP header
fits the first; a JPEG's size comes after its tables and EXIF, which fit the last."""
_EDGE: Final = 64
_SIZES: dict[tuple[int, str | bytes, str | bytes], tuple[int, int] | None] = {}
"""Image sizes read, by :func:`_pixels`' key: a few hundred bytes an entry."""
_SIZES_LIMIT: Final = 4_096
_UNREAD: Final = (0, 0)
_PDF_PAGE_TOKENS: Final = 2_000
"""A PDF page: its text (~500 tokens) plus the page image Anthropic and OpenAI add."""
_PDF_BYTES_PER_PAGE: Final = 4_096
"""The fewest bytes a page takes in a PDF whose pages cannot be counted (a text-only
pdfTeX page compresses to ~3-6 KB; images make pages larger, so fewer are assumed)."""
ClipKind: TypeAlias = Literal["audio", "video"]
_TOKENS_PER_SECOND: Final[Mapping[ClipKind, int]] = {"audio": 32, "video": 263}
"""Gemini's published rates, the highest of the providers that take audio and video."""
_UNTIMED_SECONDS: Final = 60
"""A clip whose length cannot be read, for want of its bytes (a URL, a file id)."""
_LEAST_BYTES_PER_SECOND: Final[Mapping[ClipKind, int]] = {"audio": 1_000, "video": 12_500}
"""A clip whose header cannot be read lasts at most its size at 8 kbit/s (speech codecs)
or 100 kbit/s (video): too long, never too short, since a budget must hold it."""
_FILE_CLASSES: Final = ((16_384, 512), (131_072, 2_048), (1_048_576, 8_192))
"""(decoded bytes at most, tokens) for a binary file whose kind cannot be counted."""
_FILE_CEILING: Final = 32_768
_NESTED_DEPTH: Final = 64


def _data_of(
    block: Mapping[str, object],
) -> tuple[str | bytes | None, str | None, str | None]:
    """(base64 data or bytes, url, mime type) of a media block in any provider's shape."""
    mime = block.get("mime_type") or block.get("media_type")
    data = block.get("base64") or block.get("data")
    if block.get("type") == _GENERATED:
        data = block.get("result")
    url = block.get("url") or block.get("file_uri")
    source = block.get("source")
    if isinstance(source, Mapping):  # Anthropic: {"source": {"type": "base64", ...}}
        mime = mime or source.get("media_type")
        data = data or (source.get("data") if source.get("type") == "base64" else None)
        url = url or source.get("url")
        if source.get("type") == "text" and isinstance(source.get("data"), str):
            return None, None, "text/plain:" + str(source["data"])
    for key in ("image_url", "file", "input_audio"):  # OpenAI chat shapes
        inner = block.get(key)
        if isinstance(inner, Mapping):
            url = url or inner.get("url")
            data = data or inner.get("file_data") or inner.get("data")
        elif isinstance(inner, str):
            url = url or inner
    if isinstance(url, str) and url.startswith("data:"):
        head, _, payload = url.partition(",")
        mime = mime or head[5:].split(";")[0]
        data, url = data or payload, None
    if isinstance(data, str) and data.startswith("data:"):
        head, _, data = data.partition(",")
        mime = mime or head[5:].split(";")[0]
    return (
        data if isinstance(data, str | bytes) else None,
        url if isinstance(url, str) else None,
        mime if isinstance(mime, str) else None,
    )


def _decode(data: str | bytes, limit: int | None = None) -> bytes:
    if isinstance(data, bytes):  # langchain-google-genai takes raw bytes too
        return data if limit is None else data[: limit // 4 * 3]
    chunk = data if limit is None else data[: limit - limit % 4]
    try:
        return base64.b64decode(chunk + "=" * (-len(chunk) % 4), validate=False)
    except (binascii.Error, ValueError):
        return b""


def _anthropic_image(width: int, height: int) -> int:
    """Anthropic's rule: resized to a 1,568-pixel long edge, then ``w x h / 750``."""
    scale = min(1.0, _LONG_EDGE / max(width, height))
    return math.ceil(width * scale * height * scale / _PIXELS_PER_TOKEN)


def _openai_image(width: int, height: int) -> int:
    """OpenAI's high-detail rule: fit 2048 x 2048, short side to 768, 170 a 512-tile + 85."""
    scale = min(1.0, _OPENAI_FIT / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, _OPENAI_SHORT / min(w, h))
    w, h = w * scale, h * scale
    return _OPENAI_BASE + _OPENAI_TILE * math.ceil(w / 512) * math.ceil(h / 512)


def _image_tokens(block: Mapping[str, object], data: str | bytes | None) -> int:
    detail = block.get("detail")
    inner = block.get("image_url")
    if isinstance(inner, Mapping):
        detail = detail or inner.get("detail")
    if detail == "low":
        return IMAGE_MIN_TOKENS
    size = _pixels(data) if data is not None else None
    if size is None:
        return IMAGE_MAX_TOKENS
    width, height = size
    # The block's shape says whose request it is; a LangChain standard block could go
    # to either provider, so it costs the larger of the two.
    if isinstance(block.get("source"), Mapping):
        tokens = _anthropic_image(width, height)
    elif block.get("type") in ("image_url", "input_image", _GENERATED):
        tokens = _openai_image(width, height)
    else:
        tokens = max(_anthropic_image(width, height), _openai_image(width, height))
    return max(IMAGE_MIN_TOKENS, min(IMAGE_MAX_TOKENS, tokens))


def _pixels(data: str | bytes) -> tuple[int, int] | None:
    # Remembered by the data's length, head and tail, not its hash: hashing reads all of
    # it (megabytes, for each message a checkpointer loads afresh), and a view asks for the
    # same images turn after turn. The head holds a PNG's, GIF's or WebP's size; a JPEG's
    # compressed end (its last 48 bytes) is as good as its identity.
    key = (len(data), data[:_EDGE], data[-_EDGE:])
    if (known := _SIZES.get(key, _UNREAD)) is not _UNREAD:
        return known
    size: tuple[int, int] | None = None
    for chars in _HEADER_READS:
        read: tuple[int, int] = imagesize.get(io.BytesIO(_decode(data, chars)))
        if read[0] > 0 and read[1] > 0:
            size = read
            break
        if chars >= len(data):
            break
    if len(_SIZES) >= _SIZES_LIMIT:
        _SIZES.clear()
    _SIZES[key] = size
    return size


def image_size(block: Mapping[str, object]) -> tuple[int, int] | None:
    """An inline image's ``(width, height)`` in pixels, read from its header.

    ``None`` for any other block, and for an image whose size cannot be read without
    fetching it (a URL, a file id) or from its bytes.

    Example:
        >>> gif = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"
        >>> image_size({"type": "image", "base64": gif, "mime_type": "image/gif"})
        (1, 1)
        >>> image_size({"type": "image", "url": "https://x/y.png"}) is None
        True
    """
    if media_kind(block) != "image":
        return None
    data = _data_of(block)[0]
    return _pixels(data) if data is not None else None


def _file_tokens(
    data: str | bytes | None, mime: str | None, count_text: Callable[[str], int]
) -> int:
    if mime is not None and mime.startswith("text/plain:"):
        return count_text(mime.removeprefix("text/plain:"))
    if data is None:
        return _FILE_CEILING  # a URL or a provider file id: its size cannot be seen
    raw = _decode(data)
    if mime is not None and (mime.startswith("text/") or mime in {"application/json"}):
        return count_text(raw.decode("utf-8", errors="replace"))
    if mime == "application/pdf" or raw.startswith(b"%PDF"):
        return pdf_pages(raw) * _PDF_PAGE_TOKENS
    for limit, tokens in _FILE_CLASSES:
        if len(raw) <= limit:
            return tokens
    return _FILE_CEILING


def _pypdf_pages(raw: bytes) -> int | None:
    """The page count ``pypdf`` reads, or ``None`` without it or for a file it cannot read."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError:
        return None
    try:
        return len(PdfReader(io.BytesIO(raw), strict=False).pages)
    # A damaged or hostile file: pypdf's own errors and the parse errors it lets through.
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


def pdf_pages(raw: bytes) -> int:
    """A PDF's page count: read with ``pypdf`` (the ``pdf`` extra), else bounded from above.

    Modern writers (pdfTeX, Chrome, Word) put the page objects in compressed object
    streams, where no ``/Type /Page`` is visible in the raw bytes. Without ``pypdf`` such
    a file is counted as one page per :data:`_PDF_BYTES_PER_PAGE` bytes: too many pages,
    never too few, since a budget must hold what the provider bills.

    Example:
        >>> pdf_pages(b"%PDF-1.4 1 0 obj << /Type /Page >> endobj")
        1
    """
    counted = _pypdf_pages(raw)
    if counted is not None:
        return max(1, counted)
    visible = raw.count(b"/Type /Page") - raw.count(b"/Type /Pages")
    visible = max(visible, raw.count(b"/Type/Page") - raw.count(b"/Type/Pages"), 1)
    if b"/ObjStm" in raw:
        return max(visible, math.ceil(len(raw) / _PDF_BYTES_PER_PAGE))
    return visible


def media_tokens(block: Mapping[str, object], count_text: Callable[[str], int]) -> int | None:
    """What an image / file / audio / video block costs, or ``None`` for any other block.

    Images: their pixel size read from the header (``width x height / 750`` after a resize
    to a 1,568-pixel long edge, between :data:`IMAGE_MIN_TOKENS` and
    :data:`IMAGE_MAX_TOKENS`); ``detail="low"`` the floor; a URL the ceiling. Files: a
    text file its text, a PDF ~2,000 tokens a page, anything else by size class. Audio
    and video: their length (:func:`clip_seconds`) at Gemini's 32 and 263 tokens a second.
    Never the base64 length.

    Example:
        >>> media_tokens({"type": "image_url", "image_url": {"url": "https://x/y.png"}}, len)
        1600
        >>> media_tokens({"type": "audio", "url": "https://x/talk.mp3"}, len)
        1920
        >>> media_tokens({"type": "text", "text": "hi"}, len) is None
        True
    """
    kind = media_kind(block)
    if kind is None or (block.get("type") == _GENERATED and not block.get("result")):
        return None  # not media; or a reference to a stored image (its id), or one running
    data, _url, mime = _data_of(block)
    if kind == "image" or (kind == "file" and (mime or "").startswith("image/") and data):
        return _image_tokens(block, data)
    if kind == "file":
        return _file_tokens(data, mime, count_text)
    timed: ClipKind = "video" if kind == "video" else "audio"
    seconds = _UNTIMED_SECONDS if data is None else clip_seconds(_decode(data), timed)
    return math.ceil(seconds * _TOKENS_PER_SECOND[timed])


def media_units(block: Mapping[str, object]) -> int:
    """What ``block`` counts toward a request's media limit: images, and a PDF's pages.

    Anthropic counts images and document pages together (at most 100 a request); any
    other file counts one, audio and video (which it does not take) none.

    Example:
        >>> media_units({"type": "image_url", "image_url": {"url": "https://x/y.png"}})
        1
        >>> media_units({"type": "text", "text": "hi"})
        0
    """
    kind = media_kind(block)
    if kind is None or kind in ("audio", "video"):
        return 0
    if kind == "image":
        return 1
    data, _url, mime = _data_of(block)
    if data is not None and (mime == "application/pdf" or mime is None):
        return _pdf_pages_of(data)
    return 1


def media_bytes(block: Mapping[str, object]) -> int:
    """The inline data ``block`` sends: its base64 characters (0 for a URL, a file id).

    Example:
        >>> media_bytes({"type": "image", "base64": "iVBORw0KGgo", "mime_type": "image/png"})
        11
        >>> media_bytes({"type": "image", "url": "https://x/y.png"})
        0
    """
    if media_kind(block) is None:
        return 0
    data = _data_of(block)[0]
    if isinstance(data, bytes):  # raw bytes (langchain-google-genai) go out as base64
        return math.ceil(len(data) / 3) * 4
    return len(data) if data is not None else 0


@functools.lru_cache(maxsize=64)
def _pdf_pages_of(data: str | bytes) -> int:
    # Keyed by the data itself: a PDF held in a conversation is the same object turn after
    # turn, whose hash Python keeps, so a view that holds it parses it once.
    raw = _decode(data)
    return pdf_pages(raw) if raw.startswith(b"%PDF") else 1


def _tinytag_seconds(raw: bytes) -> float | None:
    """The length ``tinytag`` reads (the ``media`` extra), else ``None``.

    ``None`` without ``tinytag``, and for a clip it cannot read.
    """
    try:
        from tinytag import TinyTag, TinyTagException
    except ImportError:
        return None
    try:
        seconds = TinyTag.get(file_obj=io.BytesIO(raw), tags=False).duration
    # A damaged or hostile file: tinytag's own errors and the parse errors it lets through.
    except (TinyTagException, struct.error, ValueError, IndexError, KeyError, EOFError):
        return None
    return seconds if seconds is not None and math.isfinite(seconds) and seconds > 0 else None


def _wave_seconds(raw: bytes) -> float | None:
    """A PCM WAV file's length from its header (the standard library), else ``None``."""
    try:
        with wave.open(io.BytesIO(raw)) as clip:
            frames, rate = clip.getnframes(), clip.getframerate()
    # A damaged file: the module's own error, and the ones its chunk reader lets through.
    except (wave.Error, EOFError, struct.error, ValueError, RuntimeError, OverflowError):
        return None
    return frames / rate if rate > 0 else None


def clip_seconds(raw: bytes, kind: ClipKind = "audio") -> float:
    """How long an audio or video clip lasts, in seconds, from its bytes.

    Read from its header with ``tinytag`` (the ``media`` extra: MP3, MP4 / M4A, OGG, Opus,
    FLAC, WAV, AIFF, WMA), else a WAV's with the standard library. A clip neither reads is
    bounded from above by its size (:data:`_LEAST_BYTES_PER_SECOND`): too long, never too
    short, since a budget must hold what the provider bills.

    Example:
        >>> import io, wave
        >>> buf = io.BytesIO()
        >>> with wave.open(buf, "wb") as w:
        ...     w.setnchannels(1); w.setsampwidth(2); w.setframerate(8000)
        ...     w.writeframes(bytes(16000 * 3))
        >>> clip_seconds(buf.getvalue())
        3.0
    """
    read = _tinytag_seconds(raw) or _wave_seconds(raw)
    return read if read is not None else len(raw) / _LEAST_BYTES_PER_SECOND[kind]


def media_label(block: Mapping[str, object]) -> str | None:
    """A media block as a reader of the transcript sees it, or ``None`` for any other block.

    Its kind, type and URL (a text document its text), never its base64: a screenshot is
    hundreds of thousands of characters the summarizer cannot read.

    Example:
        >>> media_label({"type": "image", "base64": "iVBORw0KGgo", "mime_type": "image/png"})
        '[image image/png]'
        >>> media_label({"type": "image_url", "image_url": {"url": "https://x/y.png"}})
        '[image https://x/y.png]'
    """
    label = media_kind(block)
    if label is None:
        return None
    if block.get("type") == _GENERATED:  # what it shows is the prompt it was drawn from
        prompt = block.get("revised_prompt")
        return f"[generated image: {prompt}]" if prompt else "[generated image]"
    _data, url, mime = _data_of(block)
    if mime is not None and mime.startswith("text/plain:"):
        return f"[{label}]\n{mime.removeprefix('text/plain:')}"
    return "[" + " ".join([label, *(part for part in (mime, url) if part)]) + "]"


def media_kind(block: Mapping[str, object]) -> str | None:
    """``"image"``, ``"file"``, ``"audio"`` or ``"video"``; ``None`` for any other block.

    Example:
        >>> media_kind({"type": "image_url", "image_url": {"url": "https://x/y.png"}})
        'image'
        >>> media_kind({"type": "tool_result", "content": []}) is None
        True
    """
    kind = block.get("type")
    if kind in _IMAGE_TYPES:
        return "image"
    if kind in _FILE_TYPES:
        return "file"
    if kind in _AUDIO_TYPES:
        return "video" if kind == "video" else "audio"
    if kind == _GENAI_MEDIA:
        mime = block.get("mime_type")
        head = mime.partition("/")[0] if isinstance(mime, str) else ""
        return head if head in ("image", "audio", "video") else "file"
    return None


def media_kinds(blocks: Iterable[object]) -> list[str]:
    """The kind of each media block in ``blocks``, in order, those inside tool results too.

    Example:
        >>> media_kinds([{"type": "text", "text": "shot"}, {"type": "image_url"},
        ...              {"type": "tool_result", "content": [{"type": "document"}]}])
        ['image', 'file']
    """
    out: list[str] = []
    stack: list[object] = list(blocks)[::-1]  # a stack, not recursion: results nest deep
    while stack:
        block = stack.pop()
        if not isinstance(block, Mapping):
            continue
        kind = media_kind(block)
        if kind is not None:
            out.append(kind)
        elif isinstance(inner := block.get("content"), list):
            stack.extend(reversed(inner))
    return out


def media_dropped(before: Iterable[object], after: Iterable[object]) -> list[str]:
    """The kinds of the media blocks in ``before`` that ``after`` no longer holds.

    Example:
        >>> media_dropped([{"type": "image"}, {"type": "image"}, {"type": "file"}],
        ...               [{"type": "image"}])
        ['image', 'file']
    """
    dropped = media_kinds(before)
    for kind in media_kinds(after):
        if kind in dropped:
            dropped.remove(kind)
    return dropped


def media_phrase(kinds: Sequence[str]) -> str:
    """``kinds`` counted in words, for a reader told they are not shown: ``"2 images"``.

    Example:
        >>> media_phrase(["image", "file", "image"]), media_phrase([])
        ('2 images and 1 file', '')
    """
    counted = {kind: kinds.count(kind) for kind in dict.fromkeys(kinds)}
    parts = [f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in counted.items()]
    return " and ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 2 else parts)


def nested_media(value: object) -> tuple[object, list[Mapping[str, object]]]:
    """``value`` with each base64 media block inside it as its label, and those blocks.

    A server tool's result can carry a document or an image in base64 within the
    assistant's own content (Anthropic's ``web_fetch`` of a PDF: a ``document`` block deep
    in a ``web_fetch_tool_result``). Counted or shown as the block's JSON, that base64
    would be taken for text. Only blocks holding data are replaced: a tool's arguments may
    well say ``"type": "file"``.

    Example:
        >>> pdf = {"type": "document", "source": {"type": "base64", "data": "JVBERi0x",
        ...                                      "media_type": "application/pdf"}}
        >>> shown, found = nested_media({"type": "web_fetch_result", "content": pdf})
        >>> shown, len(found)
        ({'type': 'web_fetch_result', 'content': '[file application/pdf]'}, 1)
    """
    found: list[Mapping[str, object]] = []
    return _without_media(value, found, 0), found


def _without_media(value: object, found: list[Mapping[str, object]], depth: int) -> object:
    if depth > _NESTED_DEPTH:
        return value
    if isinstance(value, Mapping):
        if media_kind(value) is not None and _data_of(value)[0] is not None:
            found.append(value)
            return media_label(value)
        return {k: _without_media(v, found, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_media(v, found, depth + 1) for v in value]
    return value
