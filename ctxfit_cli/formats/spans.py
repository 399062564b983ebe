"""Where each value of a JSON document sits in its bytes.

A payload sends every message it leaves alone as the exact bytes it came as (DESIGN §4). For a
JSON Lines transcript those are its lines; for a request document (`{"messages": [...], ...}`,
what `fit` writes and the proxy receives) they are the byte spans of the elements of its
`messages` array and of its other fields. Keeping the spans, not a re-serialization of the parsed
values, is what makes fitting a payload again give the same bytes, and what keeps integers
beyond 64 bits (which orjson reads as floats) exactly as they were written.

The scanner is the standard library's C one (`json.JSONDecoder.raw_decode`), which reports where
each value ends.

>>> members(b'{"model": "m", "messages": [{"role": "user"}, 7]}')
{'model': b'"m"', 'messages': b'[{"role": "user"}, 7]'}
>>> members(b'{"model": "m", "messages": [{"role": "user"}, 7]}', split="messages")["messages"]
[b'{"role": "user"}', b'7']
>>> minified(b'{\\n  "a": [1, 2],\\n  "b": "x  y"\\n}')
b'{"a":[1,2],"b":"x  y"}'
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

_DECODER = json.JSONDecoder()
WHITESPACE = " \t\n\r"
#: A JSON string (kept as it is) or a run of whitespace outside strings (dropped).
_STRING_OR_SPACE = re.compile(rb'("(?:[^"\\]|\\.)*")|[ \t\r\n]+', re.S)


class SpanError(ValueError):
    """The bytes are not the JSON shape expected."""


class Offsets:
    """Byte offsets of character offsets of a text, computed forward in one pass."""

    __slots__ = ("text", "char", "byte")

    def __init__(self, text: str, base: int = 0) -> None:
        self.text, self.char, self.byte = text, 0, base

    def at(self, char: int) -> int:
        if char < self.char:
            raise ValueError("offsets must be asked in order")
        self.byte += len(self.text[self.char : char].encode("utf-8"))
        self.char = char
        return self.byte


def elements(text: str, i: int, byte: Offsets, *, first: bool) -> tuple[list, list[tuple[int, int]], int]:
    """The array elements from `i` (just after "[" or after a previous element) to the "]":
    (values, byte spans, index just after the "]")."""
    values: list[Any] = []
    spans: list[tuple[int, int]] = []
    i = skip(text, i)
    while True:
        if text[i : i + 1] == "]":
            return values, spans, i + 1
        if not first or values:
            if text[i : i + 1] != ",":
                raise SpanError("not valid JSON (expected ',' or ']')")
            i = skip(text, i + 1)
        start = byte.at(i)
        item, end = value(text, i)
        spans.append((start, byte.at(end)))
        values.append(item)
        i = skip(text, end)


def value(text: str, i: int) -> tuple[Any, int]:
    """The JSON value that starts at `i`, and the index just after it."""
    try:
        return _DECODER.raw_decode(text, i)
    except json.JSONDecodeError as error:
        raise SpanError(f"not valid JSON ({error.msg} at character {error.pos})") from None


def string(text: str, i: int) -> tuple[str, int]:
    if text[i : i + 1] != '"':
        raise SpanError("not valid JSON (expected a key)")
    return value(text, i)


def skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in WHITESPACE:
        i += 1
    return i


class Member(NamedTuple):
    """One member of a JSON object: its key, its value, where the value's bytes start and end,
    and, for the array member split into elements, each element's byte span."""

    key: str
    value: Any
    start: int
    end: int
    elements: list[tuple[int, int]] | None


def object_members(text: str, *, split: str | None = None) -> Iterator[Member]:
    """The members of the JSON object that is all of `text` (whitespace aside), in order, each
    value scanned once; an array member named `split` comes with its elements' byte spans."""
    byte = Offsets(text)
    i = skip(text, 0)
    if text[i : i + 1] != "{":
        raise SpanError("not a JSON object")
    i = skip(text, i + 1)
    if text[i : i + 1] == "}":
        i += 1
    else:
        while True:
            key, i = string(text, skip(text, i))
            i = skip(text, i)
            if text[i : i + 1] != ":":
                raise SpanError("not valid JSON (expected ':')")
            i = skip(text, i + 1)
            start, spans = byte.at(i), None
            if key == split and text[i : i + 1] == "[":
                item, spans, i = elements(text, i + 1, byte, first=True)
            else:
                item, i = value(text, i)
            yield Member(key, item, start, byte.at(i), spans)
            i = skip(text, i)
            if text[i : i + 1] == "}":
                i += 1
                break
            if text[i : i + 1] != ",":
                raise SpanError("not valid JSON (expected ',' or '}')")
            i += 1
    if text[i:].strip(WHITESPACE):
        raise SpanError("not valid JSON (expected ',' or '}')")


def members(document: bytes, *, split: str | None = None) -> dict[str, bytes | list[bytes]]:
    """The exact bytes of each member of a top-level JSON object, by key (the last of a repeated
    key, as orjson reads it). The array member named `split` comes as the bytes of each of its
    elements instead, in the same pass (each value is scanned once)."""
    return {
        m.key: [document[a:b] for a, b in m.elements] if m.elements is not None else document[m.start : m.end]
        for m in object_members(document.decode("utf-8"), split=split)
    }


def minified(raw: bytes) -> bytes:
    """`raw` without the whitespace outside its strings: every number, string and escape as
    written."""
    return _STRING_OR_SPACE.sub(lambda m: m.group(1) or b"", raw)


def one_line(raw: bytes) -> bytes:
    """`raw` as it is, or minified when it spans several lines (a pretty-printed request): each
    payload `fit` writes is one line.

    >>> one_line(b'{"a": 1}'), one_line(b'{\\n "a": 1\\n}')
    (b'{"a": 1}', b'{"a":1}')
    """
    return minified(raw) if b"\n" in raw or b"\r" in raw else raw
