"""Turning text into tokens: the script-aware seed rule and the counter interface.

A *counter* measures a piece of text as a small vector of integers that adds up across pieces
(`measure`), and turns a summed vector into whole tokens once (`tokens`). Summing before rounding
is what makes the rounding rule explicit and the same everywhere: the estimate module rounds once
per message and kind of content, never per string, so per-message estimates add up exactly.

The seed rule (DESIGN §3) is the default counter:

    tokens = ceil(ascii / 4) + cjk + ceil(other / 2)

>>> SEED.measure("hello, мир, 世界")
(9, 2, 3)
>>> SEED.tokens(SEED.measure("hello, мир, 世界"))
7
"""

from __future__ import annotations

import re
from typing import Protocol

Vector = tuple[int, ...]


class Counter(Protocol):
    """Anything that can count tokens: the seed rule, a calibrated profile, a real tokenizer."""

    #: Stable name, used as the cache key on messages and in reports ("seed", "cl100k", ...).
    name: str
    #: Names of the vector's components, for reports (e.g. ``("ascii", "cjk", "other")``).
    classes: tuple[str, ...]

    def measure(self, text: str) -> Vector:
        """Measure one string; vectors of several strings are summed element-wise."""
        ...

    def tokens(self, vector: Vector) -> int:
        """Whole tokens for a summed vector (this is where rounding happens)."""
        ...


def add(a: Vector, b: Vector) -> Vector:
    """Element-wise sum of two measurement vectors."""
    return tuple(x + y for x, y in zip(a, b))


# --- The seed rule ---------------------------------------------------------------------------
#
# Speed matters: a transcript can be a gigabyte and the estimate runs before every request, so
# every pass below runs at C speed (a per-character Python loop or a regex over the whole text
# runs at ~30 MB/s). Pure-ASCII strings cost nothing: `str.isascii` is a flag CPython keeps.
#
# CJK characters are counted from UTF-16: a BMP character's high byte is its 256-code-point
# block, and the CJK blocks are whole blocks — U+1100-11FF (Hangul Jamo), U+2F00-2FFF (Kangxi
# radicals), U+3000-9FFF (CJK punctuation, kana, Bopomofo, Hangul compatibility Jamo, CJK
# Extension A, CJK Unified Ideographs), U+AC00-D7FF (Hangul), U+F900-FAFF (CJK compatibility
# ideographs), U+FF00-FFFF (full-width and half-width forms). So one encode, one strided slice
# and one `bytes.translate` count them. Two rarer ranges are counted separately, only when
# present: U+2E80-2EFF (CJK radicals supplement) shares its block with punctuation, and the
# astral ranges U+1B000-1BFFF (kana supplement) and U+20000-3FFFF (CJK extensions B-H) are
# found by their UTF-8 prefixes. Anything else is "other", which errs high, as the rule should.
#
# ASCII-heavy text (code, JSON, English with the odd “quote”) is first reduced to its non-ASCII
# characters (UTF-8 encode, delete ASCII bytes, decode), so the UTF-16 step sees only those.

_ASCII = bytes(range(0x80))
_CJK_BLOCKS = bytes([0x11, 0x2F, *range(0x30, 0xA0), *range(0xAC, 0xD8), 0xF9, 0xFA, 0xFF])
_NOT_CJK_BLOCK = bytes(b for b in range(0x100) if b not in _CJK_BLOCKS)
_RADICALS_SUPPLEMENT = re.compile("[\u2e80-\u2eff]")
_ASTRAL_CJK = re.compile(rb"\xf0[\x9b\xa0-\xbf]")  # UTF-8 of U+1B000-1BFFF, U+20000-3FFFF
#: Below this many UTF-8 bytes per character in a string's first 512 characters, the string
#: is treated as ASCII-heavy. Either way the counts are the same; only the speed differs.
_ASCII_HEAVY = 1.25


def script_counts(text: str) -> tuple[int, int, int]:
    """Characters of `text` as (ascii, cjk, other), at C speed.

    >>> script_counts("Привет, 世界! 👋")
    (4, 2, 7)
    """
    if text.isascii():
        return (len(text), 0, 0)
    sample = text[:512]
    if len(sample.encode("utf-8", "surrogatepass")) < _ASCII_HEAVY * len(sample):
        rest = text.encode("utf-8", "surrogatepass").translate(None, _ASCII).decode("utf-8", "surrogatepass")
        ascii_chars = len(text) - len(rest)
    else:
        rest = text
        ascii_chars = len(text.encode("ascii", "ignore"))
    cjk = _cjk_count(rest)
    return (ascii_chars, cjk, len(text) - ascii_chars - cjk)


def _cjk_count(text: str) -> int:
    utf16 = text.encode("utf-16-le", "surrogatepass")
    blocks = utf16[1::2]
    cjk = len(blocks.translate(None, _NOT_CJK_BLOCK))
    if 0x2E in blocks:
        cjk += len(_RADICALS_SUPPLEMENT.findall(text))
    if len(utf16) > 2 * len(text):  # astral characters take two UTF-16 units: no scan to know
        cjk += len(_ASTRAL_CJK.findall(text.encode("utf-8", "surrogatepass")))
    return cjk


class SeedCounter:
    """DESIGN §3: ASCII 4 characters per token, CJK 1, everything else 2; round up."""

    name = "seed"
    classes: tuple[str, ...] = ("ascii", "cjk", "other")
    #: Characters per token for each class, in `classes` order.
    rates = (4, 1, 2)

    def measure(self, text: str) -> Vector:
        return script_counts(text)

    def tokens(self, vector: Vector) -> int:
        ascii_chars, cjk_chars, other_chars = vector
        return -(-ascii_chars // 4) + cjk_chars + -(-other_chars // 2)


SEED = SeedCounter()


def naive_tokens(chars: int) -> int:
    """The chars ÷ 4 rule that DESIGN §1 shows to be wrong outside English, rounded up."""
    return -(-chars // 4)
