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
# Speed matters: a transcript can be a gigabyte and the estimate runs before every request.
# Pure-ASCII strings cost nothing (`str.isascii` is a flag CPython keeps on every string). For the
# rest we encode to UTF-8 once and classify characters by their UTF-8 lead byte with
# `bytes.translate`, which runs at C speed: each character has exactly one lead byte (ASCII
# bytes, or 0xC0-0xF4), and continuation bytes (0x80-0xBF) are dropped.
#
# Lead bytes E3-E9 cover U+3000-U+9FFF (CJK punctuation, Hiragana, Katakana, Bopomofo, Hangul
# compatibility Jamo, CJK Extension A, CJK Unified Ideographs) and EB-EC cover U+B000-U+CFFF
# (Hangul syllables): every character there is CJK. Five lead bytes are shared between CJK and
# other blocks; for those we count the exact two-byte prefixes of the CJK blocks. Rare CJK-adjacent
# blocks (Hangul Jamo Extended-A, CJK compatibility forms U+FE30-FE4F) are counted as "other",
# which errs high, as the rule should.

_CONTINUATION = bytes(range(0x80, 0xC0))
_ASCII = bytes(range(0x80))
_KEEP_LEADS = _CONTINUATION + _ASCII  # delete these to keep only multi-byte lead bytes
_CJK_LEADS = bytes([0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0xEB, 0xEC])
_NOT_CJK_LEAD = bytes(b for b in range(0xC0, 0x100) if b not in _CJK_LEADS)

# Shared lead byte -> second bytes that start a CJK block.
_SHARED_CJK_PREFIXES: dict[int, tuple[bytes, ...]] = {
    0xE1: tuple(bytes([0xE1, s]) for s in range(0x84, 0x88)),  # U+1100-11FF Hangul Jamo
    0xE2: tuple(bytes([0xE2, s]) for s in range(0xBA, 0xC0)),  # U+2E80-2FFF CJK radicals, Kangxi
    0xEA: tuple(bytes([0xEA, s]) for s in range(0xB0, 0xC0)),  # U+AC00-AFFF Hangul syllables
    0xED: tuple(bytes([0xED, s]) for s in range(0x80, 0xA0)),  # U+D000-D7FF Hangul (not surrogates)
    0xEF: tuple(bytes([0xEF, s]) for s in (*range(0xA4, 0xAC), *range(0xBC, 0xC0))),
    # ^ U+F900-FAFF CJK compatibility ideographs, U+FF00-FFFF full-width and half-width forms
    0xF0: tuple(bytes([0xF0, s]) for s in (0x9B, *range(0xA0, 0xC0))),
    # ^ U+1B000-1BFFF Kana supplement, U+20000-3FFFF CJK extensions B-H
}
_SHARED_LEADS = bytes(_SHARED_CJK_PREFIXES)
_NOT_SHARED_LEAD = bytes(b for b in range(0x100) if b not in _SHARED_LEADS)


def script_counts(text: str) -> tuple[int, int, int]:
    """Characters of `text` as (ascii, cjk, other), at C speed.

    >>> script_counts("Привет, 世界! 👋")
    (4, 2, 7)
    """
    if text.isascii():
        return (len(text), 0, 0)
    data = text.encode("utf-8", "surrogatepass")
    leads = data.translate(None, _KEEP_LEADS)
    cjk = len(leads.translate(None, _NOT_CJK_LEAD))
    if leads.translate(None, _NOT_SHARED_LEAD):
        for lead, prefixes in _SHARED_CJK_PREFIXES.items():
            if lead in leads:
                cjk += sum(data.count(prefix) for prefix in prefixes)
    non_ascii = len(leads)
    return (len(text) - non_ascii, cjk, non_ascii - cjk)


class SeedCounter:
    """DESIGN §3: ASCII 4 characters per token, CJK 1, everything else 2; round up."""

    name = "seed"
    classes = ("ascii", "cjk", "other")
    #: Characters per token for each class, in `classes` order.
    rates = (4, 1, 2)

    def measure(self, text: str) -> Vector:
        return script_counts(text)

    def tokens(self, vector: Vector) -> int:
        ascii_chars, cjk_chars, other_chars = vector
        return -(-ascii_chars // 4) + cjk_chars + -(-other_chars // 2)

    def class_tokens(self, vector: Vector) -> Vector:
        """Tokens per class (these add up to `tokens(vector)`)."""
        ascii_chars, cjk_chars, other_chars = vector
        return (-(-ascii_chars // 4), cjk_chars, -(-other_chars // 2))


SEED = SeedCounter()


def naive_tokens(chars: int) -> int:
    """The chars ÷ 4 rule that DESIGN §1 shows to be wrong outside English, rounded up."""
    return -(-chars // 4)
