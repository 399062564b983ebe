"""Reading inputs: a path or `-`, line by line, into JSON records with exact error locations.

Inputs are JSON Lines (one object per line) or a single JSON document (a request object or a
list of messages, possibly pretty-printed). Files are streamed: a JSONL file is never held whole,
and no line (or single document) longer than `line_limit()` is held at all, so memory is bounded
by that limit whatever the input (`/dev/zero`, a file with no newline). Every problem becomes a
`BadInput` naming the file, the line and what is wrong.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import orjson

from ..errors import BadInput, NoConversation, UsageProblem
from ..input_formats import DEFAULT_LINE_LIMIT_MB

if TYPE_CHECKING:
    from .cut import Cut  # (loaded only for a document cut short)

_BOM = b"\xef\xbb\xbf"
#: The first bytes of every SQLite 3 database: an agent's database, read by `formats.database`.
SQLITE_HEADER = b"SQLite format 3\x00"
#: Read buffer: transcript lines run to tens of kilobytes, and with the default 8 KB buffer
#: reading them line by line costs a third as much as parsing them.
BUFFER = 1 << 20
_line_limit = DEFAULT_LINE_LIMIT_MB << 20


def set_line_limit(megabytes: int) -> None:
    """Raise or lower the longest line read (for the whole process: workers inherit it)."""
    global _line_limit
    _line_limit = megabytes << 20


def line_limit() -> int:
    """The longest line (or single JSON document) read, in bytes."""
    return _line_limit


@dataclass(frozen=True, slots=True)
class Record:
    """One parsed JSON value with where it came from and its exact bytes."""

    line: int
    value: Any  # parsed JSON: each reader checks the shape it reads
    raw: bytes


def open_input(path: str, stdin: BinaryIO | None = None) -> BinaryIO:
    """Open `path` for binary reading; `-` is standard input."""
    if path == "-":
        if stdin is None:
            raise UsageProblem("'-' reads standard input, but it is closed: pipe the input in")
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


def read_records(name: str, stream: BinaryIO, torn: list[str] | None = None) -> Iterator[Record]:
    """JSON records of a stream: one per line, or the one document the whole stream holds.

    The first non-blank line decides, without reading the input twice: if it parses, the input
    is JSON Lines. If it is the start of a value (`{`, `[`, `{"messages": [`) and the line after
    it is not a record on its own, the input is one document (a pretty-printed request, say),
    read up to the line limit. Otherwise the first line's problem is reported at once.

    A log being written may end in a record cut short: JSON Lines are read up to the last
    complete record, and the cut last line is named in `torn` (a broken line anywhere else is
    still an error); one document cut short is read up to its last complete element
    (`formats.cut`) as a `CutDocument`, also named in `torn`.
    """
    if _is_database(stream):  # an agent's SQLite database: its agent makes records of it
        from .database import database_records

        yield from database_records(name, stream)
        return
    lines = numbered_lines(name, stream)
    for number, line in lines:
        try:
            first = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            failure = error  # (kept: a one-line document is not parsed again to learn why)
        else:
            yield Record(number, first, as_sent(line))
            yield from _json_lines(name, lines, torn)
            return
        _refuse_lone_cr(name, number, line)
        if line.lstrip()[:1] not in (b"{", b"[") or not truncated(line, failure):
            parse_line(name, number, line)  # not the start of a document: report this line
        yield _document(name, number, line, lines, torn, failure)
        return
    raise NoConversation(name, None, "is empty: no JSON records found")


def _is_database(stream: BinaryIO) -> bool:
    """Whether the stream starts with SQLite's header (`formats.database`), without consuming it."""
    if not hasattr(stream, "peek"):
        from .database import is_database  # (a stream that cannot peek, an in-memory one: seeks)

        return is_database(stream)
    try:
        return stream.peek(len(SQLITE_HEADER))[: len(SQLITE_HEADER)] == SQLITE_HEADER
    except (OSError, ValueError):
        return False  # reading it says what is wrong


def _json_lines(name: str, lines: Iterator[tuple[int, bytes]], torn: list[str] | None) -> Iterator[Record]:
    """The records of the lines after the first; a last line that ends before its value does is
    the record being written, left out (and named in `torn`)."""
    for number, line in lines:
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            if next(lines, None) is not None or not truncated(line, error):
                raise BadInput(name, number, _describe(line, error)) from None
            if torn is not None:
                torn.append(f"its last line ({number}) is cut short")
            return
        yield Record(number, value, as_sent(line))


def as_sent(line: bytes) -> bytes:
    """A record's bytes as a payload sends them: as they are, unless a CR stands between its
    tokens (JSON whitespace, but a line end to many readers of the one-payload-per-line output),
    which is then left out with the rest of the whitespace outside strings (`spans.minified`)."""
    if b"\r" not in line:
        return line
    from .spans import minified  # (rare: not loaded at start-up)

    return minified(line)


@dataclass(frozen=True, slots=True)
class CutDocument(Record):
    """A document cut short (its agent was rewriting it), read up to its last complete element.
    Only the logs agents rewrite as they run are read so (`formats.LIVE_DOCUMENTS`); any other
    document cut short is refused with `refused`."""

    refused: BadInput
    #: Its reading (`cut.Cut`): `beginning()` is what the document is read as far as it goes, for
    #: detection, even before its first element is complete.
    cut: Cut | None = None


def _document(
    name: str,
    number: int,
    first: bytes,
    lines: Iterator[tuple[int, bytes]],
    torn: list[str] | None = None,
    failure: orjson.JSONDecodeError | None = None,
) -> Record:
    """The one JSON document that starts with `first` (which failed to parse alone with
    `failure`), read from the rest of `lines`."""
    numbers, chunks, size = [number], [first], len(first)
    for index, (at, line) in enumerate(lines):
        if index == 0 and isinstance(_try_parse(line), dict):
            parse_line(name, number, first)  # JSON Lines with a broken first line: report it
        numbers.append(at)
        chunks.append(line)
        size += len(line) + 1
        if size > _line_limit:
            raise BadInput(
                name,
                number,
                f"a single JSON document longer than {_line_limit >> 20} MiB; "
                "if it is really one document, raise --max-line-mb",
            )
    document = b"\n".join(chunks)
    try:
        if failure is not None and len(chunks) == 1:
            raise failure  # (the document is that one line)
        return Record(number, orjson.loads(document), document)
    except orjson.JSONDecodeError as error:
        failed = numbers[min(error.lineno, len(numbers)) - 1]
        problem = BadInput(name, failed, _describe(chunks[min(error.lineno, len(chunks)) - 1], error, whole=document))
        if not truncated(document, error):
            raise problem from None
    from .cut import cut_of  # (only for a document cut short)

    cut = cut_of(document)
    try:
        value = orjson.loads(cut.kept) if cut is not None else None
    except orjson.JSONDecodeError:
        cut = None
    if cut is None:
        raise problem
    if torn is not None:
        torn.append(f"it is cut short at line {numbers[-1]} (its last element is being written)")
    return CutDocument(number, value, cut.kept, problem, cut)


def _refuse_lone_cr(name: str, number: int, line: bytes) -> None:
    if b"\r" in line and _try_parse(line.split(b"\r", 1)[0]) is not _INVALID:
        raise BadInput(
            name,
            number,
            "lines end with a lone CR (classic Mac line ends), so the file reads as "
            "one line; convert them to LF, e.g. tr '\\r' '\\n' < FILE > FIXED",
        )


def lines_of(stream: BinaryIO) -> Iterator[bytes]:
    """The lines of a binary stream, none longer than the limit plus one byte (the caller sees
    that it is too long by its length): a file with no newline is never held whole."""
    readline, size = stream.readline, _line_limit + 1
    while line := readline(size):
        yield line


def numbered_lines(
    name: str, stream: BinaryIO | Iterable[bytes], *, at_start: bool = True
) -> Iterator[tuple[int, bytes]]:
    """Non-blank lines with their 1-based numbers; BOM and CR stripped; NUL bytes, lines over
    the limit and text in UTF-16/32 refused; read failures reported as `BadInput`.

    `at_start`: the lines begin the file (only there can a byte-order mark stand)."""
    source = lines_of(cast(BinaryIO, stream)) if hasattr(stream, "readline") else stream
    limit, number = _line_limit, 0
    try:
        for number, line in enumerate(source, start=1):
            if number == 1 and at_start:
                line = _first_line(name, line)
            if len(line) > limit and not line.endswith(b"\n"):
                raise BadInput(
                    name,
                    number,
                    f"line longer than {limit >> 20} MiB (the limit); if the file "
                    "really holds such lines, raise --max-line-mb",
                )
            # Whitespace around a record is not part of it (a refit sends the record alone).
            line = line.strip(b" \t\r\n")
            if b"\x00" in line:
                column = line.index(b"\x00") + 1
                raise BadInput(
                    name,
                    number,
                    f"contains a NUL byte (column {column}); this looks like a binary file, not a JSON transcript",
                )
            if line and not line.isspace():
                yield number, line
    except OSError as error:
        raise BadInput(name, number + 1, f"cannot read: {error.strerror or error}") from None


def _first_line(name: str, line: bytes) -> bytes:
    """The first line without its UTF-8 byte-order mark; UTF-16 and UTF-32 named and refused."""
    if line.startswith(_BOM):
        return line[len(_BOM) :]
    encoding = _wide_encoding(line)
    if encoding:
        raise BadInput(
            name,
            1,
            f"the file is {encoding} text; transcripts must be UTF-8: convert it, "
            f"e.g. iconv -f {encoding.split()[0]} -t UTF-8 FILE > FIXED",
        )
    return line


def _wide_encoding(head: bytes) -> str | None:
    """UTF-16 or UTF-32, from a byte-order mark or the NULs around the first (ASCII) character."""
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16"
    starts = b'{["\t\n\r '  # a JSON text's first character
    if len(head) >= 4 and (
        (head[:3] == b"\x00\x00\x00" and head[3] in starts) or (head[0] in starts and head[1:4] == b"\x00\x00\x00")
    ):
        return "UTF-32"
    if len(head) >= 2 and ((head[0] == 0 and head[1] in starts) or (head[0] in starts and head[1] == 0)):
        return "UTF-16"
    return None


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


def truncated(line: bytes, error: orjson.JSONDecodeError) -> bool:
    """Whether `line` failed to parse only because it ends too early (cut short)."""
    message = str(getattr(error, "msg", error))
    if "UTF-8" in message:  # cut inside a character: only its last bytes are missing
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as bad:
            return bad.reason == "unexpected end of data"
    return (
        error.pos >= len(line.rstrip()) or "end of" in message.lower() or "EOF" in message or "allocate" in message
    )  # orjson's word for a truncated value 250+ levels deep


def _describe(line: bytes, error: orjson.JSONDecodeError, *, whole: bytes | None = None) -> str:
    """What is wrong with `line` (of the document `whole`, when the error is in one)."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad:
        return f"invalid UTF-8 at byte {bad.start + 1}; transcripts must be UTF-8"
    message = str(getattr(error, "msg", error))
    if "depth" in message or "recursion" in message.lower():
        return (
            "JSON nested more than 1,024 levels deep, more than ctxfit (or most JSON readers) "
            "can read; flatten the value"
        )
    if truncated(whole or line, error):
        what = "the document" if whole else "the line"
        return f"truncated JSON: {what} ends before the value is complete"
    return f"not valid JSON at column {error.colno}: {message}"
