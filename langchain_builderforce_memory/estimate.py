"""The default text estimate: what a bare text costs under the approximate counter.

:func:`estimate_text_tokens` approximates a cl100k-like tokenizer's count of a text from
the whole text, with no tokenizer and no network. Four parts:

- ASCII weights (hundredths of a token per character, by class), a few C calls;
- every other character at what cl100k charges for it alone (a packed table of 1.1M
  code points, :mod:`~langchain_builderforce_memory._char_costs`): a rarely used block
  costs up to a token a byte, which no price by UTF-8 length can tell from natural text;
- shape weights for what the class weights miss (camelCase and base64's case changes,
  repeating letter patterns such as ``abab``), counted as big-integer bit operations;
- a floor: the pieces cl100k's pre-tokenizer cuts the text into, each at least a token.

The whole text is read, not a sample: a sample can be steered by laying cheap characters
where it reads. The seed's ``ceil(chars / 4)`` undercounted cl100k 1.5x on JSON, 2.4x on
hex ids and ~4x on Chinese; this one errs high on every kind of a committed corpus that
includes the hostile ones, which is the safe side for a budget (docs/tokens.md has the
ratios).

It lives apart from :mod:`langchain_builderforce_memory.tokens` because it is a separate
concern with its own constants and calibration: the counters there (the default,
:class:`~langchain_builderforce_memory.tokens.ApproximateTokenCounter`, counts with this)
decide *what* of a message is counted (content blocks, tool-call payload, framing,
caching); this module only decides what a bare text costs. ``tokens`` imports it and
re-exports :func:`estimate_text_tokens`, so both import paths work.
"""

from __future__ import annotations

import re
import threading

from langchain_builderforce_memory._char_costs import costs

__all__ = ["estimate_text_tokens"]

_UNIT = 100
"""Weights are in hundredths of a token."""
_ROUND = 2 * _UNIT - 1
"""Added before dividing by :data:`_UNIT`: rounds up, plus the token every text costs
whatever its length (a two-letter chat turn is a token)."""


_ASCII_WEIGHTS = (24, 39, 100, 63, 110, 10, 23, 27)
"""Hundredths of a token per ASCII character, by class, in :func:`_shape`'s order: a
lower-case letter, a capital, a digit, other punctuation, a period, a newline, a space,
anything else (tabs, control characters). Fitted with :data:`_SHAPE_WEIGHTS` by
``benchmarks/fit_estimate.py``, the lower-case letter held at 0.24 (prose, ~4.2 characters a
token, a little over)."""


def _ascii_class(b: int) -> int:
    """The index into :data:`_ASCII_WEIGHTS` of ASCII byte ``b``."""
    char = chr(b)
    if char.islower():
        return 0
    if char.isupper():
        return 1
    if char.isdigit():
        return 2
    if char == ".":
        return 4
    if char == "\n":
        return 5
    if char == " ":
        return 6
    return 3 if 33 <= b < 127 else 7


def _byte_weights() -> bytes:
    # Bytes of multi-byte characters weigh nothing here: each such character is priced
    # whole, at what cl100k charges for it alone (:func:`_wide_cost`).
    return bytes([*(_ASCII_WEIGHTS[_ascii_class(b)] for b in range(128)), *([0] * 128)])


_WEIGHTS = _byte_weights()
"""Every byte of UTF-8 text mapped to its ASCII weight (``text.encode().translate``): the
per-class counts of :func:`_shape` sum to the same."""


_LOWER, _UPPER, _DIGIT, _PUNCT, _NEWLINE, _SPACE, _WIDE, _LETTER = (1 << k for k in range(8))
"""Bits of a byte's class (:data:`_CLASSES`). ``_WIDE`` marks every byte of a multi-byte
UTF-8 character; ``_LETTER`` is set beside ``_LOWER`` and ``_UPPER``."""


def _class_bits() -> bytes:
    bits = bytearray(256)
    for b in range(128):
        char = chr(b)
        if char.islower():
            bits[b] = _LOWER | _LETTER
        elif char.isupper():
            bits[b] = _UPPER | _LETTER
        elif char.isdigit():
            bits[b] = _DIGIT
        elif char == "\n":
            bits[b] = _NEWLINE
        elif char == " ":
            bits[b] = _SPACE
        elif 33 <= b < 127:
            bits[b] = _PUNCT
    for b in range(0x80, 0x100):
        bits[b] = _WIDE
    return bytes(bits)


_CLASSES = _class_bits()
"""Every byte mapped to its class bits. ``text.encode().translate(_CLASSES)`` read as one
integer (byte ``i`` at bits ``8i`` to ``8i + 7``) turns whole-text counts into a few
big-integer operations in C: a shift by ``8 + d`` sets a class bit of the byte before
beside a class bit ``d`` higher of this one, and ``bit_count`` counts the matches."""

_SHAPE_WEIGHTS = (173, 23)
"""Hundredths added per shape the byte weights miss, in :func:`_shape`'s order: a capital
after a lower-case letter (camelCase, and base64, keys and JWTs, which cl100k cuts every
few characters), and a letter repeating the one two or three back inside a letter run,
twice in a row (``abab``, which cl100k cuts every two letters). Fitted with
:data:`_ASCII_WEIGHTS` by ``benchmarks/fit_estimate.py``: the least overcount that leaves
no text of 20+ tokens of the committed corpus (``tests/text_kinds.py``) more than 7% under
cl100k."""


def _changed(value: int, low: int, high: int) -> int:
    """Bit 7 of each byte of the result: whether that byte of ``value`` is not zero.

    ``low`` is 0x7F and ``high`` 0x80 in each of the text's bytes. SWAR, carry-free per
    byte: adding 0x7F to a byte's low seven bits sets its top bit unless they are all zero.
    """
    return (((value & low) + low) | value) & high


_MASK_BYTES = 1 << 16
"""Texts up to this many bytes cut their masks from ones built once (:data:`_MASKS`);
longer ones build their own."""


def _masks(n: int) -> tuple[int, int, int, int, int, int]:
    """Byte masks over ``n`` bytes: 0x01, 0x7F, 0x80, then class bits.

    The class bits are those of capitals, of digits, and of what starts a pre-tokenizer
    piece (letters, punctuation, line breaks).
    """
    ones = int.from_bytes(b"\x01" * n, "little")
    return (
        ones,
        ones * 0x7F,
        ones << 7,
        ones * _UPPER,
        ones * _DIGIT,
        ones * (_LETTER | _PUNCT | _NEWLINE),
    )


_MASKS = _masks(_MASK_BYTES)


def _masks_for(n: int) -> tuple[int, ...]:
    """:func:`_masks` for ``n`` bytes."""
    if n > _MASK_BYTES:
        return _masks(n)
    # An AND costs the shorter operand, but a sum or a shift the longer: cut to n bytes.
    full = (1 << (8 * n)) - 1
    return tuple(mask & full for mask in _MASKS)


def _periodic(data: bytes, letters: int, low: int, high: int) -> int:
    """Letters of a letter run that repeat the one two or three back, twice in a row.

    A letter repeating the one just before does not count (``yyyy`` merges well). Every
    run is read, short ones too: a check that skipped runs under some length could be
    steered by laying a pattern out in runs just under it.
    """
    raw = int.from_bytes(data, "little")
    repeating = (
        letters
        & (letters << 8)
        & (letters << 16)
        & _changed(raw ^ (raw << 8), low, high)
        & ~(_changed(raw ^ (raw << 16), low, high) & _changed(raw ^ (raw << 24), low, high))
    )
    # Two in a row: a pattern, not a word that happens to repeat a letter ("that", "test").
    return (repeating & (repeating << 8)).bit_count()


def _shape(data: bytes) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """``(ASCII class counts, shape counts, lower bound on tokens)`` of ``data``.

    The class counts are in :data:`_ASCII_WEIGHTS`' order, the shape counts in
    :data:`_SHAPE_WEIGHTS`'. The bound counts the pieces cl100k's pre-tokenizer cuts a
    text into before merging (letter runs, punctuation runs, line breaks, number groups of
    at most three digits, a space before a number): each is at least one token, however
    the pieces repeat.
    """
    n = len(data)
    _, low, high, capital, digit, piece = _masks_for(n)
    classes = data.translate(_CLASSES)
    bits = int.from_bytes(classes, "little")
    counted = (
        classes.count(_LOWER | _LETTER),
        classes.count(_UPPER | _LETTER),
        classes.count(_DIGIT),
        classes.count(_PUNCT) - data.count(b"."),
        data.count(b"."),
        classes.count(_NEWLINE),
        classes.count(_SPACE),
    )
    wide = classes.count(_WIDE)
    shapes = (
        ((bits << 9) & bits & capital).bit_count() if counted[1] else 0,
        _periodic(data, bits & high, low, high),
    )
    starts = bits ^ (bits & (bits << 8))  # a class bit whose byte before lacks it
    pieces = (starts & piece).bit_count()
    if counted[2]:
        pieces += max((starts & digit).bit_count(), -(-counted[2] // 3))
        pieces += (bits & (bits << 5) & digit).bit_count()
    return (*counted, n - wide - sum(counted)), shapes, pieces


def estimate_text_tokens(text: str) -> int:
    """A deliberately high estimate of ``text``'s tokens (cl100k-like tokenizers).

    Per character: a lower-case letter 0.24, a space 0.23, a capital 0.39, a digit 1.00,
    punctuation 0.63 (a period 1.10), a newline 0.10, anything else in ASCII 0.27; any
    other character what cl100k charges for it alone (1 to 4); plus the shape weights
    (:data:`_SHAPE_WEIGHTS`) and 1 a text; and never fewer than the text's pre-tokenizer
    pieces. Calibrated against cl100k on the corpus of ``tests/text_kinds.py`` (prose,
    code, JSON, paths, ids, chat turns, CJK and right-to-left text, logs, HTML, the
    recorded runs' messages and tool calls, base64, JWTs, keys, symbols, repeated patterns,
    number lists, hex dumps, text laid against a sampling stride, random characters of
    rarely used Unicode blocks) so that no text of 50+
    tokens is undercounted by more than 10% (docs/tokens.md has the ratios). It reads the
    whole text: ``benchmarks/estimate_bench.py`` times it.

    Example:
        >>> estimate_text_tokens("x" * 40), estimate_text_tokens("3f9a" * 10)
        (11, 40)
        >>> estimate_text_tokens("上下文窗口")
        7
    """
    if not text:
        return 0
    if len(text) < _REMEMBER_FROM:
        return _estimate(text)
    # A long text is often counted again as another message (a restored read, a copy with
    # a new id): remembered by its hash and length, so no text is kept alive here.
    key = (hash(text), len(text))
    found = _REMEMBERED.get(key)
    if found is None:
        found = _estimate(text)
        with _REMEMBERED_LOCK:  # threads share it: evict under the lock
            _REMEMBERED[key] = found
            if len(_REMEMBERED) > _REMEMBER:
                del _REMEMBERED[next(iter(_REMEMBERED))]
    return found


_REMEMBER_FROM = 2_048
"""Texts this long or longer have their estimate remembered (shorter ones cost less to
estimate than to look up)."""
_REMEMBER = 4_096
"""Long texts whose estimates are remembered (the oldest forgotten first)."""
_REMEMBERED: dict[tuple[int, int], int] = {}
"""``(hash(text), len(text))`` to the estimate. ``str`` hashes are keyed per process, so a
text cannot be crafted to collide with another."""
_REMEMBERED_LOCK = threading.Lock()
"""Held while :data:`_REMEMBERED` grows and evicts (threads share it)."""


def _estimate(text: str) -> int:
    data = text.encode("utf-8", "surrogatepass")
    classes, shapes, pieces = _shape(data)
    total = sum(w * c for w, c in zip(_SHAPE_WEIGHTS, shapes, strict=True))
    total += sum(w * c for w, c in zip(_ASCII_WEIGHTS, classes, strict=True))
    if not text.isascii():
        total += _wide_cost(text)
    return max((total + _ROUND) // _UNIT, pieces)


def _wide_cost(text: str) -> int:
    """Hundredths for ``text``'s non-ASCII characters: each at cl100k's tokens for it alone.

    Priced by its UTF-8 length instead (1.1 / 1.2 / 3.0), random characters of a rarely
    used block (CJK ideographs, Hangul, arrows, braille) counted half of what cl100k
    charges. Merges across characters only make a text cheaper than its characters' sum:
    natural Chinese costs 0.87 of it, random characters of any block 1.00.
    """
    # ASCII characters cost nothing here (their weights are above): only the others are
    # looked up, so a brief with one dash is not priced character by character.
    wide = _ASCII_RUNS.sub("", text)
    return _UNIT * sum(map(costs().__getitem__, map(ord, wide)))


_ASCII_RUNS = re.compile(r"[\x00-\x7f]+")
"""Runs of ASCII characters: what :func:`_wide_cost` leaves out."""
