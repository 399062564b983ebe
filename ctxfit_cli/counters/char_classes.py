"""Measuring a text for the calibrated profiles: its characters per character class, then its
run starts per kind of run (`COMPONENTS`), counted at C speed. `profiles.py` turns the vector
into tokens.

One idea that reads best whole, though longer than the ~400 lines the package keeps to: the
class borders, the byte tables built from them, and the two paths that count with those tables,
pure Python (`bytes.translate` and `bytes.count`) and numpy (a table per code point and one
histogram), must give the same vector on every text, and the numpy tables are built from the
pure-Python ones so that they cannot drift apart (tests/test_profiles.py compares the two paths on
every code point). Split, each half would be read only with the other open.

Classes follow the UTF-8 lead byte of each character (the second byte where a lead byte is
shared), which keeps measuring at C speed; the borders are chosen so that every class lies wholly
inside one of the seed rule's three groups (`profiles.SEED_GROUP`), which is what lets `seed` match
`seed.SEED` on every text. A few rare blocks are approximated by their neighbours (e.g. the
Greek U+0370-037F block counts as ``latin``, halfwidth Katakana as ``han``); that only moves
characters between classes of the same seed group.
"""

from __future__ import annotations

from typing import Any

#: numpy, once a text is measured with it (`_numpy_pays`); None before that, and where it is not
#: installed (a dependency, but the pure-Python path works without it).
_np: Any = None

#: The character classes, in vector order.
CLASSES: tuple[str, ...] = (
    "upper",  # ASCII A-Z
    "vowel",  # ASCII a e i o u
    "rare",  # ASCII j k q v w x y z
    "letter",  # the other ASCII lower-case letters
    "digit",  # ASCII 0-9
    "space",  # ASCII space
    "newline",  # ASCII newline, tab, CR, VT, FF
    "bracket",  # ASCII ( ) [ ] { } < > " '
    "punct",  # the rest of ASCII: punctuation, symbols, control characters
    "latin",  # U+0080-00BF, U+0180-037F, U+1E00-1EFF: symbols, Latin Extended-B, IPA, marks
    "latin1",  # U+00C0-00FF: Latin-1 letters (à, ä, ç, ß, ...)
    "latin_ext",  # U+0100-017F: Latin Extended-A (ą, č, ł, ő, ...)
    "greek",  # U+0380-03FF, U+1F00-1FFF
    "cyrillic",  # U+0410-044F: the basic Russian alphabet
    "cyrillic_ext",  # U+0400-040F, U+0450-052F: ё, і, ї, є, ґ, ў, ... and the rest of Cyrillic
    "hebrew",  # U+0580-05FF (Hebrew; Armenian ligatures)
    "arabic",  # U+0600-07FF: Arabic, Syriac, Thaana, NKo
    "indic",  # U+0800-0FFF except Thai/Lao: Devanagari ... Sinhala, Tibetan
    "thai",  # U+0E00-0EFF: Thai, Lao
    "han",  # CJK ideographs, radicals, Bopomofo
    "cjk_punct",  # U+3000-303F CJK punctuation, U+FF00-FFFF full-width and half-width forms
    "kana",  # U+3040-30FF Hiragana and Katakana, U+1B000-1BFFF Kana supplements
    "hangul",  # U+1100-11FF, U+3140-317F, U+AC00-D7FF
    "gen_punct",  # U+2000-207F: dashes, curly quotes, ellipsis, bullets, zero-width chars
    "symbol",  # U+2080-2E7F: currency, arrows, maths, box drawing, dingbats, ...
    "emoji",  # U+10000-1FFFF (emoji and pictographs), U+FE00-FE3F (variation selectors)
    "other",  # everything else: Armenian, Georgian, Ethiopic, PUA, ...
)
N_CLASSES = len(CLASSES)

#: Run starts counted after the character classes: how many runs of ASCII letters, of ASCII
#: digits, of ASCII punctuation (``bracket`` and ``punct``), and of non-ASCII letters (every
#: script class from ``latin`` to ``hangul`` and ``other``) a text has. A run starts at a
#: character of its kind that is the first of the text or follows a character of another kind.
#: Tokenizers spend tokens per word and per number about as much as per character, so these
#: counts take up most of the paragraph-to-paragraph scatter that one rate per class leaves.
RUNS: tuple[str, ...] = ("words", "numbers", "punct_runs", "script_words")
N_RUNS = len(RUNS)

#: Every component of a measuring vector: `CLASSES` then `RUNS`.
COMPONENTS: tuple[str, ...] = CLASSES + RUNS

_C = {name: i for i, name in enumerate(CLASSES)}

# --- Measuring at C speed ---------------------------------------------------------------------
#
# Two paths give the same vectors: this one, pure Python, and a faster one with numpy (below),
# used where numpy is importable (a dependency of ctxfit), the text is not short and enough text
# has been measured to pay for importing it (`NUMPY_AFTER_CHARS`).
#
# 1. Encode to UTF-8 and, in one `bytes.translate`, delete continuation bytes and map every
#    remaining byte (ASCII byte or lead byte: one per character) to a class code. Why: the
#    translate runs in C at memory speed, and a character is then one byte whatever its length
#    in UTF-8, so every later step is a C scan of one byte per character.
# 2. Count each code with `bytes.count`, skipping codes that `in` (memchr) says are absent; the
#    most common code is not counted but inferred from the length. Why: `in` stops at the first
#    hit and most texts hold only a few of the codes, while `count` of a dense code is the
#    slowest scan of all.
# 3. Lead bytes whose characters fall in several classes get a code of their own; when one
#    occurs, the second bytes decide (see `_SPLITS`): a few occurrences are looked up one by
#    one, many are counted with a second `translate` that marks the lead byte and the second
#    bytes of interest, then `count` of the two-byte pattern. UTF-8 is self-synchronising, so a
#    lead byte followed by a given byte is always one character's first two bytes.
# 4. Run starts: the one-code-per-character stream is translated once more per kind of run to
#    b"a" (a character of the kind) and b" " (any other), and ``count(b" a")`` counts the
#    starts, plus one if the text begins with the kind. Since a run may continue across the
#    end of one text into the next, ``measure(a) + measure(b)`` has the same class counts as
#    ``measure(a + b)`` and at most one more start of each kind of run, never fewer: measuring
#    the parts of a message separately can only raise its estimate (rates are never negative).

_CONTINUATION = bytes(range(0x80, 0xC0))
_BRACKETS = "()[]{}<>\"'"


def _ascii_class(byte: int) -> int:
    char = chr(byte)
    if "A" <= char <= "Z":
        return _C["upper"]
    if char in "aeiou":
        return _C["vowel"]
    if char in "jkqvwxyz":
        return _C["rare"]
    if "a" <= char <= "z":
        return _C["letter"]
    if "0" <= char <= "9":
        return _C["digit"]
    if char == " ":
        return _C["space"]
    if char in "\t\n\r\x0b\x0c":
        return _C["newline"]
    if char in _BRACKETS:
        return _C["bracket"]
    return _C["punct"]


def _ranges(*spans: tuple[int, int]) -> bytes:
    return bytes(b for low, high in spans for b in range(low, high + 1))


# Shared lead byte -> (default class, [(second bytes, class), ...]). The splits marked "seed"
# must mirror the seed rule's CJK ranges (`seed._CJK_BLOCKS`, `seed._ASTRAL_CJK`) exactly.
_SPLITS: dict[int, tuple[int, list[tuple[bytes, int]]]] = {
    0xD0: (_C["cyrillic"], [(_ranges((0x80, 0x8F)), _C["cyrillic_ext"])]),  # U+0400-040F
    0xD1: (_C["cyrillic_ext"], [(_ranges((0x80, 0x8F)), _C["cyrillic"])]),  # U+0440-044F
    0xE0: (_C["indic"], [(_ranges((0xB8, 0xBB)), _C["thai"])]),  # U+0E00-0EFF
    0xE1: (
        _C["other"],
        [
            (_ranges((0x84, 0x87)), _C["hangul"]),  # seed: U+1100-11FF Hangul Jamo
            (_ranges((0xB8, 0xBB)), _C["latin"]),  # U+1E00-1EFF Latin Extended Additional
            (_ranges((0xBC, 0xBF)), _C["greek"]),  # U+1F00-1FFF Greek Extended
        ],
    ),
    0xE2: (
        _C["symbol"],
        [
            (_ranges((0x80, 0x81)), _C["gen_punct"]),  # U+2000-207F
            (_ranges((0xBA, 0xBF)), _C["han"]),  # seed: U+2E80-2FFF CJK radicals, Kangxi
        ],
    ),
    0xE3: (
        _C["han"],
        [
            (_ranges((0x80, 0x80)), _C["cjk_punct"]),  # U+3000-303F
            (_ranges((0x81, 0x83)), _C["kana"]),  # U+3040-30FF
            (_ranges((0x85, 0x85)), _C["hangul"]),  # U+3140-317F Hangul compatibility Jamo
        ],
    ),
    0xEA: (_C["other"], [(_ranges((0xB0, 0xBF)), _C["hangul"])]),  # seed: U+AC00-AFFF
    0xED: (_C["hangul"], [(_ranges((0xA0, 0xBF)), _C["other"])]),  # seed: surrogates are not
    0xEF: (
        _C["other"],
        [
            (_ranges((0xA4, 0xAB)), _C["han"]),  # seed: U+F900-FAFF CJK compatibility ideographs
            (_ranges((0xBC, 0xBF)), _C["cjk_punct"]),  # seed: U+FF00-FFFF full-width/half-width forms
            (_ranges((0xB8, 0xB8)), _C["emoji"]),  # U+FE00-FE3F variation selectors
        ],
    ),
    0xF0: (
        _C["emoji"],
        [
            (_ranges((0x9B, 0x9B)), _C["kana"]),  # seed: U+1B000-1BFFF Kana supplements
            (_ranges((0xA0, 0xBF)), _C["han"]),  # seed: U+20000-3FFFF CJK extensions B-H
        ],
    ),
}


def _lead_class(byte: int) -> int:
    if byte < 0x80:
        return _ascii_class(byte)
    if byte == 0xC2:
        return _C["latin"]
    if byte == 0xC3:
        return _C["latin1"]
    if byte <= 0xC5:
        return _C["latin_ext"]
    if byte <= 0xCD:
        return _C["latin"]
    if byte <= 0xCF:
        return _C["greek"]
    if byte <= 0xD4:
        return _C["cyrillic_ext"]
    if byte == 0xD5:
        return _C["other"]  # Armenian
    if byte <= 0xD7:
        return _C["hebrew"]
    if byte <= 0xDF:
        return _C["arabic"]
    if 0xE4 <= byte <= 0xE9:
        return _C["han"]
    if byte in (0xEB, 0xEC):
        return _C["hangul"]
    return _C["other"]  # EE (private use), F1-F4, and bytes that never lead


#: Code of each shared lead byte in the translated stream (after the class codes).
_SHARED_CODE = {lead: N_CLASSES + i for i, lead in enumerate(_SPLITS)}
_CODES = bytes(
    _SHARED_CODE[b] if b in _SHARED_CODE else _lead_class(b) if b >= 0xC0 or b < 0x80 else 0 for b in range(256)
)

#: Lead byte -> translate table marking it (1) and its split second bytes (2, 3, ...).
_SPLIT_TABLES: dict[int, bytes] = {}
#: Lead byte -> class of each possible second byte (indexed by byte - 0x80).
_SECOND_CLASS: dict[int, list[int]] = {}
for _lead, (_default, _splits) in _SPLITS.items():
    _table = bytearray(256)
    _table[_lead] = 1
    _second = [_default] * 64
    for _j, (_seconds, _cls) in enumerate(_splits):
        for _b in _seconds:
            _table[_b] = 2 + _j
            _second[_b - 0x80] = _cls
    _SPLIT_TABLES[_lead] = bytes(_table)
    _SECOND_CLASS[_lead] = _second

#: Up to this many characters with a shared lead byte are resolved one by one: each is a `find`
#: from the previous hit, while the bulk way costs one more `translate` of the whole text.
_FEW = 24


def _resolve(data: bytes, lead: int, n: int, counts: list[int], surrogates: bool) -> None:
    """Add `n` characters with lead byte `lead` to their classes, by their second byte."""
    default, splits = _SPLITS[lead]
    if lead == 0xED and not surrogates:  # strict UTF-8 has no surrogates: all Hangul
        counts[default] += n
        return
    if n <= _FEW:
        second_class, find, lead_byte = _SECOND_CLASS[lead], data.find, bytes([lead])
        i = find(lead_byte)
        while i >= 0:
            counts[second_class[data[i + 1] - 0x80]] += 1
            i = find(lead_byte, i + 2)
        return
    marked = data.translate(_SPLIT_TABLES[lead])
    moved = 0
    for j, (_seconds, cls) in enumerate(splits):
        k = marked.count(bytes([1, 2 + j]))
        counts[cls] += k
        moved += k
    counts[default] += n - moved


# Run kinds, as sets of class codes. A shared lead byte counts as a script letter unless most of
# its characters are not letters (E2 symbols and punctuation, EF forms, F0 emoji); the CJK
# punctuation under E3 counts as a script letter, an approximation.
_SCRIPT_CLASSES = {
    _C[c]
    for c in (
        "latin",
        "latin1",
        "latin_ext",
        "greek",
        "cyrillic",
        "cyrillic_ext",
        "hebrew",
        "arabic",
        "indic",
        "thai",
        "han",
        "kana",
        "hangul",
        "other",
    )
}
_RUN_KINDS: tuple[set[int], ...] = (
    {_C[c] for c in ("upper", "vowel", "rare", "letter")},
    {_C["digit"]},
    {_C["bracket"], _C["punct"]},
    _SCRIPT_CLASSES | {_SHARED_CODE[b] for b in _SPLITS if b not in (0xE2, 0xEF, 0xF0)},
)


#: The kind of run (index in `RUNS`) each ASCII class's characters start, if any (space and
#: newline start none): what a character of the class can cost at most, its rate and one run start.
ASCII_RUN_KIND: dict[int, int] = {c: k for k, kind in enumerate(_RUN_KINDS[:3]) for c in kind}


def _run_table(kind: set[int], code_of: bytes) -> bytes:
    return bytes(0x61 if code_of[b] in kind else 0x20 for b in range(256))


_N_CODES = N_CLASSES + len(_SPLITS)
_IDENTITY = bytes(range(256))
#: Per kind of run: translate from a code stream (non-ASCII path) / from ASCII text.
_RUN_TABLES_CODES = tuple(_run_table(kind, _IDENTITY) for kind in _RUN_KINDS)
_RUN_TABLES_ASCII = tuple(
    bytes(0x61 if b < 0x80 and _ascii_class(b) in kind else 0x20 for b in range(256)) for kind in _RUN_KINDS[:3]
)


def _starts(marked: bytes) -> int:
    return marked.count(b" a") + (marked[:1] == b"a")


# ASCII text, the bulk of agent transcripts (code, JSON, shell output, English), takes a shorter
# path: one translate to one-hot flag bits (the eight ASCII classes but ``letter``, the most
# common, whose count is what is left), then either `count` (short strings) or, for long ones,
# the flags read as one big integer whose masked popcounts give the counts (`int.bit_count` is
# much faster than `count` on dense matches). Run starts: one translate and one count each.
_ASCII_ORDER = ("upper", "vowel", "rare", "digit", "space", "newline", "bracket", "punct")
_ASCII_FLAGS = bytes(
    (1 << _ASCII_ORDER.index(CLASSES[_ascii_class(b)])) if b < 0x80 and CLASSES[_ascii_class(b)] != "letter" else 0
    for b in range(256)
)
#: Below this many characters `count` is faster: building the big integer costs more than it saves.
_POPCOUNT_FROM = 2048
#: The flags are read at most this many bytes at a time, so an integer never grows past that size,
#: whatever the length of the text.
_MASK_CHARS = 1 << 20
#: The eight masks, as long as the longest text measured so far needed (a power of two, at most
#: `_MASK_CHARS`): built on demand, since building them at 1 MiB each cost every process ~25 ms
#: at import (8 MB of integers) though most texts are a few KB.
_masks: tuple[int, ...] = ()


def _masks_for(n: int) -> tuple[int, ...]:
    global _masks
    size = min(_MASK_CHARS, 1 << (n - 1).bit_length())
    if not _masks or _masks[0].bit_length() < 8 * size - 7:  # (mask i's top bit is bit 8 * size - 8 + i)
        _masks = tuple(int.from_bytes(bytes([1 << i]) * size, "little") for i in range(8))
    return _masks


_FLAG_BYTES = tuple(bytes([1 << i]) for i in range(8))
_TAIL = (0,) * (N_CLASSES - 9)  # ASCII text has no character of the non-ASCII classes


def _ascii_counts(text: str) -> tuple[int, ...]:
    raw = text.encode("ascii")
    flags = raw.translate(_ASCII_FLAGS)
    n = len(flags)
    if n < _POPCOUNT_FROM:
        c = [flags.count(b) for b in _FLAG_BYTES]
    else:
        c = [0] * 8
        masks = _masks_for(n)
        for start in range(0, n, _MASK_CHARS):
            x = int.from_bytes(flags[start : start + _MASK_CHARS], "little")
            for i, mask in enumerate(masks):
                c[i] += (x & mask).bit_count()
    upper, vowel, rare, digit, space, newline, bracket, punct = c
    letter = n - sum(c)
    words, numbers, puncts = (_starts(raw.translate(t)) for t in _RUN_TABLES_ASCII)
    return (upper, vowel, rare, letter, digit, space, newline, bracket, punct, *_TAIL, words, numbers, puncts, 0)


_CODE_BYTES = [bytes([c]) for c in range(_N_CODES)]


def class_counts(text: str) -> tuple[int, ...]:
    """Characters of `text` per class of `CLASSES`, then its run starts per kind of `RUNS`.

    Class counts add up exactly across texts; run starts add up to at most one more per kind
    than the concatenated text has (see above). Measured with numpy where it is importable
    (`USE_NUMPY`), the text is not short and numpy's import has paid (`NUMPY_AFTER_CHARS`), else
    in pure Python; the vectors are the same.

    >>> dict(zip(COMPONENTS, class_counts("Ok 42 — ça, мир, 世界とハングル 한국 🙂")))["kana"]
    5
    """
    if USE_NUMPY and len(text) >= _NUMPY_FROM and (_np is not None or _numpy_pays(text)):
        return _class_counts_numpy(text)
    return _class_counts_python(text)


#: When importing numpy pays (a ski rental: keep measuring in pure Python until what that has cost
#: beyond numpy's path equals the import, then import): the import costs 70-100 ms of a process
#: that measures; numpy's path then saves ~12 ns a character of ASCII text, ~31 ns of non-ASCII
#: text from real logs and ~40 ns of many scripts mixed (medians on the shared real logs' texts
#: of 512 characters or more, 2026-12). So a non-ASCII character weighs `NON_ASCII_WEIGHT` ASCII
#: ones, and numpy is imported once `NUMPY_AFTER_CHARS` weighed characters were measured without
#: it: never more than twice the cheaper choice's time, whatever the text. (At 1 M characters,
#: the rule before, `sessions` on the 9 real Claude Code logs imported numpy in each worker for
#: ~2 M characters that it measured 30-70 ms faster than pure Python: 90 ms paid for 40 saved.)
#: A first text this long imports it at once.
NUMPY_AFTER_CHARS = 6_000_000
NON_ASCII_WEIGHT = 3
_measured = 0
_numpy_tried = False


def _numpy_pays(text: str) -> bool:
    """Whether to measure `text` with numpy, importing it once enough text has been measured
    without it (the vectors are the same either way)."""
    global _measured
    if _numpy_tried:
        return False  # tried, and numpy is not there
    _measured += len(text) if text.isascii() else NON_ASCII_WEIGHT * len(text)
    return _measured >= NUMPY_AFTER_CHARS and _numpy() is not None


def _numpy() -> Any:
    """numpy, imported on first use; None where it is not installed."""
    global _np, _numpy_tried
    if _np is None and not _numpy_tried:
        _numpy_tried = True
        try:
            import numpy
        except ImportError:
            return None
        _np = numpy
    return _np


def _class_counts_python(text: str) -> tuple[int, ...]:
    """`class_counts` without numpy."""
    if text.isascii():
        return _ascii_counts(text)
    try:
        data, surrogates = text.encode("utf-8"), False
    except UnicodeEncodeError:  # lone surrogates
        data, surrogates = text.encode("utf-8", "surrogatepass"), True
    codes = data.translate(_CODES, _CONTINUATION)
    counts = [0] * _N_CODES
    # Count every code present except the one at the middle of the text, the likely most
    # common, whose count is what is left (counting dense matches is the slow part).
    main = codes[len(codes) >> 1]
    left = len(codes)
    for code, code_byte in enumerate(_CODE_BYTES):
        if code != main and code_byte in codes:
            k = codes.count(code_byte)
            counts[code] = k
            left -= k
    counts[main] = left
    for lead, code in _SHARED_CODE.items():
        n = counts[code]
        if n:
            _resolve(data, lead, n, counts, surrogates)
    return (*counts[:N_CLASSES], *(_starts(codes.translate(t)) for t in _RUN_TABLES_CODES))


# --- Measuring with numpy -------------------------------------------------------------------
#
# The same counts, from code points: a character's class and kind of run are functions of its
# UTF-8 lead byte and second byte, so a table indexed by code point can hold, for each, a small
# *id* naming its (class, kind of run) pair: the kind in the high bits (``id >> 4``), an index
# among the classes of that kind in the low four. The tables are built from `_CODES`,
# `_SECOND_CLASS` and `_RUN_KINDS` themselves, so they cannot drift from the pure-Python path.
#
# 1. Encode to UTF-16 (ASCII text: to ASCII) and look every code unit up in a 65,536-entry
#    table (`take`). An astral character is a surrogate pair: its high surrogate carries its
#    class (classes of astral characters change every 4,096 code points, a high surrogate names
#    1,024) and its low surrogate an id of no class and no kind of run, which is what the high
#    one has too (below U+40000), so it neither counts nor breaks a run. Texts with lone
#    surrogates (strict UTF-16 refuses them) or with characters from U+40000 on (script
#    letters by their lead byte, whose pairs a no-kind low surrogate would split) take UTF-32
#    and a table of every code point instead.
# 2. A run starts where the kind changes to one that is not "none": one more bit per id (bit 7)
#    says whether the kind changed there (the first character always counts as a change).
# 3. One histogram of those bytes (`bincount`; long texts read them two at a time as 16-bit
#    numbers, half as many elements, and sum the 256 x 256 histogram both ways) gives the
#    class counts and the run starts at once.


#: Measure with numpy when it is importable (tests and benchmarks switch this off to compare).
USE_NUMPY = True
#: Below this many characters the pure-Python path is faster than numpy's per-call overhead.
_NUMPY_FROM = 512
#: From this many characters on, the histogram reads the bytes in pairs.
_PAIRS_FROM = 32768
#: Pairs per `bincount` call (which copies its input to 8-byte integers).
_PAIRS_CHUNK = 1 << 22


class _NumpyTables:
    def __init__(self) -> None:
        np = _numpy()
        # Class by (lead byte, second byte); kind of run (0: none, 1..4: `RUNS`) by the lead
        # byte's code, as `_RUN_TABLES_CODES` has it.
        leads = [b for b in range(256) if not 0x80 <= b < 0xC0]
        self.by_lead = np.array(
            [_SECOND_CLASS[b] if b in _SECOND_CLASS else [_CODES[b]] * 64 for b in range(256)], dtype=np.int32
        )
        kind_of_code = [0] * _N_CODES
        for k, codes in enumerate(_RUN_KINDS, 1):
            for code in codes:
                kind_of_code[code] = k
        self.kind_of_lead = np.array([kind_of_code[_CODES[b]] for b in range(256)], np.int32)
        # Ids: kind << 4 | index of the class among those of its kind. Two more of kind 0:
        # "skip" (a low surrogate: no class) and "bail" (a high surrogate of U+40000 and above).
        pairs = sorted({(int(self.kind_of_lead[b]), int(c)) for b in leads for c in self.by_lead[b]})
        next_index = [0] * (N_RUNS + 1)
        id_class = [N_CLASSES] * 128  # N_CLASSES: no class
        self.lookup = np.zeros(N_CLASSES * 8, dtype=np.uint8)  # class * 8 + kind -> id
        for k, c in pairs:
            self.lookup[c * 8 + k] = i = k << 4 | next_index[k]
            next_index[k] += 1
            id_class[i] = c
        self.skip, self.bail = next_index[0], next_index[0] + 1
        if max(next_index) > 16 or self.bail > 15:
            raise AssertionError("more than 16 ids of one kind of run")
        table16 = self.ids(np.arange(0x10000, dtype=np.int32))
        high = np.arange(0xD800, 0xD8C0, dtype=np.int32)
        table16[high] = self.ids(0x10000 + ((high - 0xD800) << 10))
        table16[0xD8C0:0xDC00] = self.bail
        table16[0xDC00:0xE000] = self.skip
        self.table16 = table16
        self._table32 = None
        # Each of the 256 bytes (bit 7: a run starts here if the kind is not 0; bits 0-6: id)
        # as (its class's index in the vector, or the index past the vector's end for "no
        # class"; its run start's index in the vector, or None).
        end = N_CLASSES + N_RUNS
        self.fold = [
            (
                end if id_class[b & 0x7F] == N_CLASSES else id_class[b & 0x7F],
                N_CLASSES + (b >> 4 & 7) - 1 if b & 0x80 and b & 0x70 else None,
            )
            for b in range(256)
        ]

    def ids(self, cp: Any) -> Any:
        """The id of each code point of an int32 array, from its UTF-8 lead and second byte."""
        np = _numpy()
        lead = np.where(
            cp < 0x80,
            cp,
            np.where(cp < 0x800, 0xC0 | (cp >> 6), np.where(cp < 0x10000, 0xE0 | (cp >> 12), 0xF0 | (cp >> 18))),
        )
        second = np.where(cp < 0x800, cp, np.where(cp < 0x10000, cp >> 6, cp >> 12)) & 0x3F
        return self.lookup[self.by_lead[lead, second] * 8 + self.kind_of_lead[lead]]

    @property
    def table32(self) -> Any:
        """Id of every code point (lone surrogates as UTF-8's "surrogatepass" has them)."""
        if self._table32 is None:
            np = _numpy()
            self._table32 = self.ids(np.arange(0x110000, dtype=np.int32))
        return self._table32


_tables: _NumpyTables | None = None


def _class_counts_numpy(text: str) -> tuple[int, ...]:
    """`class_counts` with numpy."""
    global _tables
    np = _numpy()
    t = _tables or (_tables := _NumpyTables())
    if text.isascii():
        ids = t.table16.take(np.frombuffer(text.encode("ascii"), np.uint8))
    else:
        try:
            units = text.encode("utf-16-le")
            ids = t.table16.take(np.frombuffer(units, np.uint16))
            # Only a surrogate pair (a text longer in UTF-16 units than in characters) may "bail".
            paired = len(units) != 2 * len(text)
        except UnicodeEncodeError:  # lone surrogates
            ids, paired = None, True
        if ids is None or (paired and t.bail in ids):
            ids = t.table32.take(np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32))
    n = len(ids)
    if not n:
        return (0,) * (N_CLASSES + N_RUNS)
    kinds = ids >> 4
    marked = np.empty(n, np.uint8)
    np.not_equal(kinds[1:], kinds[:-1], out=marked[1:].view(np.bool_))
    marked[0] = 1
    marked <<= 7
    marked |= ids
    if n >= _PAIRS_FROM:
        half = n & ~1
        pairs = marked[:half].view(np.uint16)
        h = np.zeros(65536, np.int64)
        for i in range(0, len(pairs), _PAIRS_CHUNK):  # bincount makes an int64 copy: bound it
            h += np.bincount(pairs[i : i + _PAIRS_CHUNK], minlength=65536)
        grid = h.reshape(256, 256)  # (first byte, second byte) of each pair
        hist = grid.sum(axis=0) + grid.sum(axis=1)
        if n & 1:
            hist[marked[-1]] += 1
    else:
        hist = np.bincount(marked, minlength=256)
    vector = [0] * (N_CLASSES + N_RUNS + 1)  # the last: low surrogates (no class)
    fold, counts = t.fold, hist.tolist()
    for b in np.flatnonzero(hist).tolist():
        k = counts[b]
        c, start = fold[b]
        vector[c] += k
        if start is not None:
            vector[start] += k
    return tuple(vector[: N_CLASSES + N_RUNS])
