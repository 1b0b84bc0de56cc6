"""The default text estimate as it was before issue 27 (df617c1), kept to time against.

It read ASCII texts over 512 characters at ~64 characters sampled at a prime stride: a few
C calls whatever the length, and steerable by laying cheap characters where the sample
reads. ``benchmarks/estimate_bench.py`` times today's whole-text estimate against it.
"""

from __future__ import annotations

from zlib import adler32

_UNIT = 100
"""Weights are in hundredths of a token."""
_ROUND = 2 * _UNIT - 1
"""Added before dividing by :data:`_UNIT`: rounds up, plus the token every text costs
whatever its length (a two-letter chat turn is a token)."""
_WHOLE = 512
"""ASCII texts up to this many characters are read whole; longer ones are sampled."""
_SAMPLES = 64
"""Characters a longer ASCII text is sampled at (see :data:`_STEPS`)."""
_CONT = 50
"""Hundredths a UTF-8 continuation byte carries; each lead byte carries its character's
weight less its continuation bytes', so a whole character sums to the weights below."""


def _byte_weights() -> bytes:
    weights = bytearray(256)
    for b in range(128):
        char = chr(b)
        if char.isdigit() or char == "\n":
            # cl100k splits numbers into 1-3 digit groups and hex ids alternate letters and
            # digits (~1.7 characters a token); a newline is a token of its own.
            weights[b] = 119
        elif char == ".":
            # Its own token after a digit and at a sentence end; merged only in attribute
            # access and file extensions (a printed numeric matrix is ~1 token a character).
            weights[b] = 70
        elif 33 <= b < 127 and (not char.isalnum() or char.isupper()):
            # Punctuation and capitals: JSON, paths and identifiers break into many short
            # tokens (~2.6 characters a token).
            weights[b] = 51
        else:
            # Lower-case letters, spaces, tabs, control characters: prose runs ~4.2
            # characters a token; 0.24 keeps it a little over.
            weights[b] = 24
    for b in range(0x80, 0x100):
        # 2-byte characters (Greek, Cyrillic, Hebrew, Arabic) ~1 token: 1.1; 3-byte (CJK,
        # kana, Hangul, Indic, symbols) ~1-1.2: 1.2; 4-byte (emoji, rare CJK) ~3, as cl100k
        # falls back to its byte tokens: 3.0.
        if b < 0xC0:
            weights[b] = _CONT
        elif b < 0xE0:
            weights[b] = 110 - _CONT
        elif b < 0xF0:
            weights[b] = 120 - 2 * _CONT
        else:
            weights[b] = 300 - 3 * _CONT
    return bytes(weights)


_WEIGHTS = _byte_weights()
"""Every byte of UTF-8 text mapped to its weight: ``text.encode().translate(_WEIGHTS)``
turns a text into its weights, and ``adler32`` sums them in C (its low 16 bits are the
byte sum modulo 65,521, exact while the sum stays below that)."""
_CHUNK = 65_520 // max(_WEIGHTS)
"""Bytes whose weights always sum below adler32's modulus (non-ASCII text is summed in
chunks of this size)."""
if _WHOLE * max(_WEIGHTS[:128]) >= 65_521:  # pragma: no cover - a guard on the constants
    raise AssertionError("_WHOLE ASCII characters could overflow one adler32 sum")


def _sample_steps(limit: int) -> list[int]:
    """``steps[s]``: the smallest prime >= max(s, 11), for s < limit.

    A prime stride shares no factor with a text's period (a numeric list repeats every 2-5
    characters, a table every row) unless the period is a multiple of it, so the sample
    cycles through every column instead of landing on the same one each time.
    """
    size = limit + 128  # prime gaps below 4,224 are under 40
    sieve = bytearray([1]) * size
    sieve[0] = sieve[1] = 0
    for i in range(2, int(size**0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = bytes(len(range(i * i, size, i)))
    steps = [0] * limit
    nxt = 0
    for s in range(size - 1, -1, -1):
        if sieve[s] and s >= 11:
            nxt = s
        if s < limit:
            steps[s] = nxt
    return steps


_SAMPLES_AT = [slice(step >> 1, None, step) for step in _sample_steps(4096)]
"""The sample of an ASCII text of ``n`` characters is ``text[_SAMPLES_AT[n >> 6]]``: ~64
characters at a prime stride, starting half a stride in, whatever the length (texts over
262,143 characters use the next odd stride). Built once: a slice object per stride costs
less than computing the start and building the slice on every count."""


def sampled_estimate_text_tokens(text: str) -> int:
    """A cheap, deliberately high estimate of ``text``'s tokens (cl100k-like tokenizers).

    Per character: lower-case letters, spaces and other ASCII 0.24; digits and newlines
    1.19; punctuation and capitals 0.51 (a period 0.70); then 1.1 / 1.2 / 3.0 for a 2- /
    3- / 4-byte UTF-8 character; plus 1 a text. Calibrated against cl100k on prose, code,
    JSON, paths, hex ids, chat turns, Chinese and mixed CJK / emoji / right-to-left text so
    that it never undercounts a kind by more than 10% (docs/tokens.md has the
    ratios). ASCII texts over 512 characters are measured on ~64 characters sampled at a
    prime stride across the whole text, so the cost is a few C calls whatever the length
    (~0.3 µs; ``benchmarks/estimate_bench.py`` times it against ``len(text) / 4``);
    non-ASCII texts are read whole.

    Example:
        >>> estimate_text_tokens("x" * 40), estimate_text_tokens("3f9a" * 10)
        (11, 30)
        >>> estimate_text_tokens("上下文窗口")
        7
    """
    n = len(text)
    if text.isascii():
        # The hot path of every uncached count: a few C calls and nothing per character in
        # Python (encode, translate to weights, adler32 to sum them). Seeded with 0, adler32's
        # low 16 bits are the weights' sum itself; one expression, no temporaries: this
        # path's cost is mostly interpreter overhead, and each saved step shows.
        if n <= _WHOLE:
            return (
                ((adler32(text.encode().translate(_WEIGHTS), 0) & 0xFFFF) + _ROUND) // _UNIT
                if n
                else 0
            )
        try:
            sample = text[_SAMPLES_AT[n >> 6]]
        except IndexError:  # over 262,143 characters
            step = (n >> 6) | 1
            sample = text[step >> 1 :: step]
        return (
            (adler32(sample.encode().translate(_WEIGHTS), 0) & 0xFFFF) * n // len(sample) + _ROUND
        ) // _UNIT
    weights = memoryview(text.encode("utf-8", "surrogatepass").translate(_WEIGHTS))
    total = sum(
        adler32(weights[i : i + _CHUNK], 0) & 0xFFFF for i in range(0, len(weights), _CHUNK)
    )
    return (total + _ROUND) // _UNIT
