"""Following a log as its agent writes it: each read returns only the lines completed since the
last one, never the whole file again.

A `Follower` keeps where it stopped (`offset`), the bytes of a line still being written
(`partial`), and the file's identity. A file that shrank or was replaced (a log rotated, an agent
that rewrites it) is read again from the start, and the caller is told (`restarted`), so that
its running counts start over too.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "log.jsonl")
>>> _ = open(path, "wb").write(b'{"a": 1}\\n{"b"')
>>> follower = Follower(path)
>>> follower.read().lines, follower.partial
([b'{"a": 1}'], b'{"b"')
>>> _ = open(path, "ab").write(b': 2}\\n')
>>> follower.read().lines
[b'{"b": 2}']
"""

from __future__ import annotations

import os
from typing import NamedTuple

#: Bytes read per call at most: a log that grew by gigabytes is caught up over several polls
#: (the view stays responsive), never held whole.
CHUNK = 8 << 20


class Read(NamedTuple):
    """What one read found: the complete new lines (without their newline, blank ones
    dropped) and whether the file was started over (shrunk or replaced)."""

    lines: list[bytes]
    restarted: bool = False


class Follower:
    """One file followed from the offset read so far."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""
        self.line = 0  # the number of the last complete line read (1-based)
        self._identity: tuple[int, int] | None = None

    def read(self, limit: int = CHUNK) -> Read:
        """The lines completed since the last read (at most `limit` bytes more are read)."""
        try:
            with open(self.path, "rb") as stream:
                status = os.fstat(stream.fileno())
                restarted = self._restart_if_replaced(status)
                if status.st_size <= self.offset:
                    return Read([], restarted)
                stream.seek(self.offset)
                data = stream.read(min(limit, status.st_size - self.offset))
        except FileNotFoundError:
            return Read([], False)
        self.offset += len(data)
        *complete, self.partial = (self.partial + data).split(b"\n")
        lines = []
        for line in complete:
            self.line += 1
            line = line.strip(b" \t\r")
            if line:
                lines.append(line)
        return Read(lines, restarted)

    @property
    def caught_up(self) -> bool:
        """Whether everything the file holds now has been read."""
        try:
            return os.path.getsize(self.path) <= self.offset
        except OSError:
            return True

    def _restart_if_replaced(self, status: os.stat_result) -> bool:
        identity = (status.st_dev, status.st_ino)
        replaced = self._identity is not None and identity != self._identity
        self._identity = identity
        if replaced or status.st_size < self.offset:
            self.offset, self.partial, self.line = 0, b"", 0
            return True
        return False
