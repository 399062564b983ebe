"""Estimating the messages of a big Claude Code log or Codex rollout on every core.

Such a log is read in one process: its records are merged into messages (a reply's blocks,
results moved after their call, repairs, compactions) by state that runs through the whole
log, so it cannot be cut into pieces the way a JSON Lines chat file is (`parallel.py`). But
most of the time of reading it goes to estimating its messages with the model's profile (a
vector of character classes and run starts per string, `Counter.measure`), and a message's
estimate depends on nothing but its bytes as sent (`Message.raw`, from which its role and parts
are read). So worker processes read the log in pieces (cut at line starts) ahead of the one
process that reads it whole, and send back the estimates of the messages they make, keyed by
the hash and length of their bytes; the reading process puts each message's estimates in its
memo from the pieces around where it is reading (`measured`), and estimates any message it finds
none for itself (one cut at a piece's edge, one a repair made). Every structure is still made
by the one reading process, and every estimate is the counter's own: the figures are those of
reading the log in one process, exactly (the hash is Python's 64-bit one, with the length;
workers are forked, so they hash as the reader does).

Memory stays bounded: a few pieces of estimates are held at a time (those around the line being
read, and the next few being made), whatever the size of the log.
"""

from __future__ import annotations

import io
import os
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..core.estimate import MessageCost, message_cost
from ..core.model import Message
from ..counters.seed import SEED, Counter
from ..errors import CtxfitError

if TYPE_CHECKING:
    from concurrent.futures import Future

    from .workers import Workers

#: Logs smaller than this are read in one process: starting workers costs more than it saves.
MIN_BYTES = 32 << 20
#: Bytes of log per piece: a piece's vectors are a few MB at most.
PIECE_BYTES = 8 << 20
#: Formats whose logs are read this way.
FORMATS = ("claude-code", "codex")

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
        seed: bool = True,
        checks: str | None = None,
        workers: int | None = None,
    ) -> None:
        from .parallel import cores, pieces

        self.workers = workers or min(cores(), 8)
        size = os.path.getsize(path)
        start = _offset_of_line(path, line)
        count = max(1, -(-(size - start) // PIECE_BYTES))
        self.jobs = [(path, name, format, seed, checks, a, b) for a, b in pieces(path, size, count, start)]
        self.checks = checks
        self.name = name
        self.counter = counter
        #: The vectors of the pieces held, newest first, and the line range of each.
        self.held: deque[dict] = deque()
        self._ranges: deque[tuple[int, int]] = deque()
        self._next_line = line  # the first line of the next piece to be taken
        self._futures: deque[Future] = deque()
        self._submitted = 0
        self._pool: Workers | None = None
        #: Messages the reader estimated itself (no piece had them): a test looks.
        self.missed = 0

    def __enter__(self) -> Window:
        global _COUNTER
        from .workers import Workers

        _COUNTER = self.counter  # inherited by the workers, forked at the first submit
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


def _measure_piece(job: tuple) -> tuple[int, dict[tuple[int, int], tuple[MessageCost, MessageCost | None, Any]]]:
    """In a worker: (how many lines a piece has, the estimates of every message it makes — the
    counter's, with `seed` the seed rule's, with `checks` the validator's checks — by the hash and
    length of its bytes). The piece is read as a log of its own: what it makes of a reply cut at
    its start does not matter (a message it did not make is estimated by the reader)."""
    from ..errors import BadInput
    from . import read_transcripts

    path, name, format, seed, checks, start, end = job
    if checks:
        from ..replay.validity import checked
    counter = _COUNTER
    assert counter is not None
    with open(path, "rb") as file:
        file.seek(start)
        data = file.read(end - start)
    costs: dict[tuple[int, int], tuple[MessageCost, MessageCost | None, Any]] = {}
    try:
        for transcript in read_transcripts(name, io.BytesIO(data), format):
            for message in transcript.messages:
                raw = message.raw
                made = checked(message, checks) if checks else None
                costs[hash(raw), len(raw)] = (
                    message_cost(message, counter),
                    message_cost(message, SEED) if seed else None,
                    made,
                )
    except (BadInput, CtxfitError, RecursionError):
        pass  # the reader reports it (a piece read on its own may also fail where the log does not)
    return data.count(b"\n"), costs


def measured(messages: Iterator[Message], window: Window | None) -> Iterator[Message]:
    """The messages, each with the estimates the workers made of it in its memo (the window moved
    to each as it passes; nothing done without a window)."""
    if window is None:
        yield from messages
        return
    at, held, name = window.at, window.held, window.counter.name
    checks = ("checked", window.checks) if window.checks else None  # (`core.validate.memo_key`)
    for message in messages:
        at(message.line)
        raw = message.raw
        key = (hash(raw), len(raw))
        for piece in held:
            costs = piece.get(key)
            if costs is not None:
                memo = message.memo
                if name not in memo:
                    memo[name] = costs[0]
                if costs[1] is not None and _SEED_NAME not in memo:
                    memo[_SEED_NAME] = costs[1]
                if checks is not None and checks not in memo:
                    memo[checks] = costs[2]
                break
        else:
            window.missed += 1
        yield message


_SEED_NAME = SEED.name
