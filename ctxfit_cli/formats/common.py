"""Small helpers every dialect reader shares: where a value came from, and how to complain."""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson

from ..errors import BadInput

#: One fixed option set for every JSON that ctxfit writes itself (sorted keys would reorder the
#: user's fields, so insertion order is kept; orjson output is compact and deterministic).
JSON_OPTIONS = 0


#: Stands in a reader's record stream where the log was compacted: what follows is a new
#: conversation (Claude Code `compact_boundary`, Codex `compacted`).
COMPACTED = object()


def dumps(value: object) -> bytes:
    """Serialize a value the one way ctxfit always does, as bytes of exactly its length (what a
    reader keeps as `Message.raw`: see `exact`)."""
    try:
        return exact(orjson.dumps(value, option=JSON_OPTIONS))
    except orjson.JSONEncodeError:
        return _deep_dumps(value)


def exact(data: bytes) -> bytes:
    """A copy of `data` that holds only its bytes: `orjson.dumps` returns bytes inside a buffer
    that keeps its spare capacity (4 KB for a short message, ~10x the length of a long one), so
    anything kept is copied out (`memoryview.tobytes`: the cheapest copy measured).

    >>> exact(b'{"a":1}')
    b'{"a":1}'
    """
    return memoryview(data).tobytes()


def _deep_dumps(value: object) -> bytes:
    """orjson reads JSON nested up to 1,024 levels but writes only 254: what it read, the
    standard library writes (compact, UTF-8, deterministic), with room for the recursion."""
    import json
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 5000))
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    finally:
        sys.setrecursionlimit(limit)


class Where(NamedTuple):
    """A place in the input: file, line, and a JSON path inside a multi-line document.

    (A NamedTuple: one is made for every line read, and most are never looked at.)"""

    path: str
    line: int
    inside: str = ""

    def at(self, key: str | int) -> Where:
        step = f"[{key}]" if isinstance(key, int) else (f".{key}" if self.inside else key)
        return Where(self.path, self.line, self.inside + step)

    def fail(self, problem: str) -> BadInput:
        return BadInput(self.path, self.line, f"{self.inside}: {problem}" if self.inside else problem)


def type_name(value: object) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        int: "a number",
        float: "a number",
        bool: "a boolean",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def expect_dict(value: object, where: Where, what: str) -> dict:
    if not isinstance(value, dict):
        raise where.fail(f"{what} must be a JSON object, got {type_name(value)}")
    return value


def json_object(value: dict[str, Any], key: str) -> dict[str, Any]:
    """`value[key]` when it is a JSON object, else an empty one (an optional part of a record)."""
    inner = value.get(key)
    return inner if isinstance(inner, dict) else {}


def expect_str(value: object, where: Where, what: str) -> str:
    if not isinstance(value, str):
        raise where.fail(f"{what} must be a string, got {type_name(value)}")
    return value


def as_blocks(content: object) -> list:
    """Message content as a new list of blocks (a string becomes one text block).

    >>> as_blocks("hi"), as_blocks(None)
    ([{'type': 'text', 'text': 'hi'}], [])
    """
    if isinstance(content, list):
        return list(content)
    if isinstance(content, str) and content:
        return [{"type": "text", "text": content}]
    return []


def json_text(value: object) -> str:
    """Compact JSON of a value, as it is counted when a dialect sends it as JSON."""
    try:
        return orjson.dumps(value, option=JSON_OPTIONS).decode("utf-8")  # not kept: no copy
    except orjson.JSONEncodeError:
        return _deep_dumps(value).decode("utf-8")
