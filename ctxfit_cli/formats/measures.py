"""Measuring the texts of a big Claude Code log or Codex rollout on every core.

Such a log is read in one process: its records are merged into messages (a reply's blocks,
results moved after their call, repairs, compactions) by state that runs through the whole
log, so it cannot be cut into pieces the way a JSON Lines chat file is (`parallel.py`). But
most of the time of reading it goes to measuring its texts with the model's profile (a vector
of character classes and run starts per string, `Counter.measure`), and a string's vector
depends on nothing but the string. So worker processes read the log in pieces (cut at line
starts) ahead of the one process that reads it whole, measure every string of the messages
they find, and send back the vectors, keyed by the string's hash and length; the reading
process counts with `Window.counter`, which takes a string's vector from the pieces around
where it is reading and measures itself any string it finds none for (one cut at a piece's
edge, a note a repair wrote). Every message is still made, and every estimate rounded and
added up, by the one reading process, from the counter's own vectors: the figures are those of
reading the log in one process, exactly (the hash is Python's 64-bit one, with the length;
workers are forked, so they hash as the reader does).

Memory stays bounded: a few pieces of vectors are held at a time (those around the line being
read, and the next few being measured), whatever the size of the log.
"""

from __future__ import annotations

import io
import os
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..agents import REGISTRY, claude_code
from ..core.model import Message
from ..counters.seed import SEED, Counter, Vector
from ..errors import BadInput, CtxfitError

if TYPE_CHECKING:
    from concurrent.futures import Future

    from .workers import Workers

#: Logs smaller than this are read in one process: starting workers costs more than it saves.
MIN_BYTES = 32 << 20
#: Bytes of log per piece: a piece's vectors are a few MB at most.
PIECE_BYTES = 8 << 20
#: Strings shorter than this are measured by the reader (a lookup costs about what measuring does).
MIN_CHARS = 8
#: Formats whose logs are read this way: those read lazily, calls filled in as they go (`Agent.streamed`).
FORMATS = tuple(agent.name for agent in REGISTRY if agent.streamed)

# The counter the workers measure with: set before they are forked, so that a counter that
# cannot be pickled (a real tokenizer) needs no sending.
_COUNTER: Counter | None = None


def worth_it(path: str, format: str, counter: Counter) -> bool:
    """Whether a log's texts are measured on several processes: a big regular file of a
    merged-records format, measured with anything but the seed rule (which costs little more
    than reading), on a machine with more than one core."""
    from .parallel import cores

    return (
        format in FORMATS
        and counter is not SEED
        and cores() > 1
        and path != "-"
        and os.path.isfile(path)
        and os.path.getsize(path) >= MIN_BYTES
    )


class Window:
    """The vectors of the pieces around the line being read, measured by worker processes.

    Use as a context manager; call `at(line)` as the reading moves on, and count with
    `counter`. `line`: the first line the reading needs (a later conversation of a compacted
    log starts there)."""

    def __init__(
        self,
        path: str,
        name: str,
        format: str,
        counter: Counter,
        *,
        line: int = 1,
        workers: int | None = None,
    ) -> None:
        from .parallel import cores, pieces

        self.workers = workers or min(cores(), 8)
        size = os.path.getsize(path)
        start = _offset_of_line(path, line)
        count = max(1, -(-(size - start) // PIECE_BYTES))
        self.jobs = [(path, name, format, a, b) for a, b in pieces(path, size, count, start)]
        self.name = name
        self._counter = counter
        #: The vectors of the pieces held, newest first, and the line range of each.
        self.held: deque[dict] = deque()
        #: The counter to count with: `counter`, its vectors taken from the pieces held.
        self.counter: Counter = _Cached(counter, self)
        self._ranges: deque[tuple[int, int]] = deque()
        self._next_line = line  # the first line of the next piece to be taken
        self._futures: deque[Future] = deque()
        self._submitted = 0
        self._pool: Workers | None = None
        #: Strings the reader measured itself (no piece held them): a test looks.
        self.missed = 0

    def __enter__(self) -> Window:
        global _COUNTER
        from .workers import Workers

        _COUNTER = self._counter  # inherited by the workers, forked at the first submit
        self._pool = Workers(self.workers, tasks=len(self.jobs)).__enter__()
        self._fill()
        return self

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        global _COUNTER
        pool, self._pool = self._pool, None
        self.held.clear()
        _COUNTER = None
        if pool is None:
            return
        if kind is None and (self._futures or self._submitted < len(self.jobs)):
            # Read no further (another counter is needed): the pieces still being measured are not.
            kind, error = _StoppedEarly, _StoppedEarly()
        pool.__exit__(kind, error, traceback)

    def _fill(self) -> None:
        """Keep a few pieces being measured ahead of the reading (not all: their vectors would be
        held until read)."""
        assert self._pool is not None
        while self._submitted < len(self.jobs) and len(self._futures) < 2 * self.workers:
            self._futures.append(self._pool.submit(_measure_piece, self.jobs[self._submitted], name=self.name))
            self._submitted += 1

    def at(self, line: int) -> None:
        """The reading is at `line`: hold the pieces from the one before it to the one after it."""
        ranges = self._ranges
        while self._futures and (not ranges or ranges[0][0] <= line):
            assert self._pool is not None
            lines, vectors = self._pool.result(self._futures.popleft())
            self._fill()
            self.held.appendleft(vectors)
            ranges.appendleft((self._next_line, self._next_line + lines))
            self._next_line += lines
        while len(ranges) > 2 and ranges[-2][1] <= line:
            ranges.pop()
            self.held.pop()


class _StoppedEarly(Exception):
    """The reading stopped before the last piece: the workers are killed, not waited for."""


def _offset_of_line(path: str, line: int) -> int:
    """The byte offset where line `line` (1-based) of a file starts."""
    if line <= 1:
        return 0
    left, offset = line - 1, 0
    with open(path, "rb") as file:
        while chunk := file.read(1 << 22):
            found = chunk.count(b"\n")
            if found >= left:
                end = -1
                for _ in range(left):
                    end = chunk.index(b"\n", end + 1)
                return offset + end + 1
            left -= found
            offset += len(chunk)
    return offset


class _Cached:
    """A counter that takes each string's vector from the pieces a `Window` holds when they have
    it: the same name, rounding and framing, so what it estimates is the counter's own (and is
    kept under its name)."""

    def __init__(self, counter: Counter, window: Window) -> None:
        self.inner, self.window, self.held = counter, window, window.held
        self.name, self.classes, self.tokens = counter.name, counter.classes, counter.tokens

    def measure(self, text: str) -> Vector:
        if len(text) >= MIN_CHARS:
            key = (hash(text), len(text))
            for piece in self.held:
                vector = piece.get(key)
                if vector is not None:
                    return vector
            self.window.missed += 1
        return self.inner.measure(text)

    def __getattr__(self, name: str) -> Any:  # the rest of the counter (`framing`, ...)
        return getattr(self.inner, name)


def _measure_piece(job: tuple) -> tuple[int, dict[tuple[int, int], Vector]]:
    """In a worker: (how many lines a piece has, the vector of every string of `MIN_CHARS` or
    more of its messages, by its hash and length). The piece is read on its own: what it makes of
    a reply cut at its start does not matter (a string it did not see is measured by the reader)."""
    path, name, format, start, end = job
    counter = _COUNTER
    assert counter is not None
    with open(path, "rb") as file:
        file.seek(start)
        data = file.read(end - start)
    vectors: dict[tuple[int, int], Vector] = {}
    try:
        for text in _texts(name, data, format):
            if len(text) >= MIN_CHARS:
                key = (hash(text), len(text))
                if key not in vectors:
                    vectors[key] = counter.measure(text)
    except (BadInput, CtxfitError, RecursionError):
        pass  # the reader reports it (a piece read on its own may also fail where the log does not)
    return data.count(b"\n"), vectors


def _texts(name: str, data: bytes, format: str) -> Iterator[str]:
    """Every string a log's messages are counted by, read from a piece of it. A Claude Code
    message's parts are its records' content blocks, each read as the reader reads it, so only
    those are parsed (not merged into messages); a Codex rollout is read as the reader reads it."""
    from . import read_transcripts

    if format == claude_code.NAME:
        from .anthropic import content_parts
        from .common import Where
        from .reading import read_records

        where = Where(name, 0)
        for record in read_records(name, io.BytesIO(data)):
            value = record.value
            if isinstance(value, dict) and value.get("type") in ("user", "assistant"):
                message = value.get("message")
                if isinstance(message, dict):
                    try:
                        parts = content_parts(message.get("content"), where)
                    except BadInput:
                        continue
                    for part in parts:
                        yield part.tool
                        yield part.text
                        yield part.call_id
        return
    for transcript in read_transcripts(name, io.BytesIO(data), format):
        for message in transcript.messages:
            for part in message.parts:
                yield part.tool
                yield part.text
                yield part.call_id


def measured(messages: Iterator[Message], window: Window | None) -> Iterator[Message]:
    """The messages, the window moved to each as it passes (nothing done without a window)."""
    if window is None:
        yield from messages
        return
    at = window.at
    for message in messages:
        at(message.line)
        yield message
