"""Reading inputs: a path or `-`, line by line, into JSON records with exact error locations.

Inputs are JSON Lines (one object per line) or a single JSON document (a request object or a
list of messages, possibly pretty-printed). Files are streamed: a JSONL file is never held whole.
Every problem becomes a `BadInput` naming the file, the line and what is wrong.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import BinaryIO, Iterable, Iterator

import orjson

from ..errors import BadInput

_BOM = b"\xef\xbb\xbf"
#: Read buffer: transcript lines run to tens of kilobytes, and with the default 8 KB buffer
#: reading them line by line costs a third as much as parsing them.
BUFFER = 1 << 20


@dataclass(frozen=True, slots=True)
class Record:
    """One parsed JSON value with where it came from and its exact bytes."""

    line: int
    value: object
    raw: bytes


def open_input(path: str, stdin: BinaryIO | None = None) -> BinaryIO:
    """Open `path` for binary reading; `-` is standard input."""
    if path == "-":
        if stdin is None:
            raise BadInput("-", None, "no standard input to read")
        return stdin
    if os.path.isdir(path):
        raise BadInput(path, None, "is a directory; give a transcript file (or - for stdin)")
    try:
        return open(path, "rb", buffering=BUFFER)
    except FileNotFoundError:
        raise BadInput(path, None, "no such file") from None
    except PermissionError:
        raise BadInput(path, None, "permission denied") from None
    except OSError as error:
        raise BadInput(path, None, f"cannot open: {error.strerror or error}") from None


def read_records(name: str, stream: BinaryIO) -> Iterator[Record]:
    """JSON records of a stream: one per line, or the one document the whole stream holds.

    The first non-blank line decides: if it parses, the input is JSON Lines; if it does not,
    the whole input is read as one JSON document (a pretty-printed request, say); if that fails
    too, the first line's error is reported.
    """
    lines = numbered_lines(name, stream)
    for number, line in lines:
        first = _try_parse(line)
        if first is not _INVALID:
            yield Record(number, first, line)
            for number, line in lines:
                yield Record(number, parse_line(name, number, line), line)
            return
        if not line.lstrip()[:1] in (b"{", b"["):
            parse_line(name, number, line)  # not a document either: report this line
        rest = b"\n".join(chunk for _, chunk in lines)
        document = line + b"\n" + rest
        value = _try_parse(document)
        if value is _INVALID:
            parse_line(name, number, line)  # raises with the first line's problem
        yield Record(number, value, document)
        return
    raise BadInput(name, None, "is empty: no JSON records found")


def numbered_lines(name: str, stream: Iterable[bytes], *, at_start: bool = True) -> Iterator[tuple[int, bytes]]:
    """Non-blank lines with their 1-based numbers; BOM and CR stripped; NUL bytes refused.

    `at_start`: the lines begin the file (only there can a byte-order mark stand)."""
    for number, line in enumerate(stream, start=1):
        if number == 1 and at_start and line.startswith(_BOM):
            line = line[len(_BOM):]
        line = line.rstrip(b"\r\n")
        if b"\x00" in line:
            column = line.index(b"\x00") + 1
            raise BadInput(name, number, f"contains a NUL byte (column {column}); "
                                         "this looks like a binary file, not a JSON transcript")
        if line and not line.isspace():
            yield number, line


_INVALID = object()


def _try_parse(data: bytes) -> object:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return _INVALID


def parse_line(name: str, number: int, line: bytes) -> object:
    """Parse one line, or raise a `BadInput` that says what is wrong with it."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as error:
        raise BadInput(name, number, _describe(line, error)) from None


def _describe(line: bytes, error: orjson.JSONDecodeError) -> str:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad:
        return f"invalid UTF-8 at byte {bad.start + 1}; transcripts must be UTF-8"
    message = str(error.msg if hasattr(error, "msg") else error)
    if error.pos >= len(line.rstrip()) or "EOF" in message or "end of" in message.lower():
        return "truncated JSON: the line ends before the value is complete"
    return f"not valid JSON at column {error.colno}: {message}"
