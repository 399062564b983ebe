"""The conversations of a log its agent compacts (a Claude Code log, a Codex rollout), split
where it was compacted and read lazily from the one stream; and the check that an input held a
conversation at all."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from ..core.model import Message, Role
from ..errors import NoConversation
from .common import COMPACTED
from .reading import Record

NO_MESSAGES = "has no messages: nothing from a user, assistant or tool was found"


def segments(records: Iterator, line_of=lambda first: first.line) -> Iterator[tuple[int, Iterator]]:
    """The conversations of a log, split at each `COMPACTED` mark in `records`.

    Each is (its first line, by `line_of` of its first record; its records), read lazily from
    the one stream; a segment that holds no records (a log that starts with a boundary, two
    boundaries in a row) is skipped.
    """
    records = iter(records)
    start = next(records, None)
    while start is not None:
        if start is COMPACTED:
            start = next(records, None)
            continue
        segment = _Segment(start, records)
        yield line_of(start), iter(segment)
        segment.read_rest()  # a consumer that moves on early still gets its records later
        start = segment.end


class _Segment:
    """One conversation's records, read from a shared stream up to the next boundary."""

    def __init__(self, first: Record, records: Iterator[Record]) -> None:
        self.first, self.records = first, records
        self.buffer: deque[Record] = deque()
        self.finished = False
        self.end: object = None  # what ended the segment: None, or COMPACTED

    def _next(self) -> Record | None:
        record = next(self.records, None)
        if record is None or record is COMPACTED:
            self.finished, self.end = True, record
            return None
        return record

    def __iter__(self) -> Iterator[Record]:
        yield self.first
        while True:
            if self.buffer:
                yield self.buffer.popleft()
            elif self.finished or (record := self._next()) is None:
                return
            else:
                yield record

    def read_rest(self) -> None:
        while not self.finished:
            record = self._next()
            if record is not None:
                self.buffer.append(record)


def require_messages(name: str, messages: Iterable[Message]) -> Iterator[Message]:
    """Pass messages through; complain at the end if there was no conversation at all."""
    conversation = False
    for message in messages:
        conversation = conversation or message.role not in (Role.SYSTEM, Role.TOOLS)
        yield message
    if not conversation:
        raise NoConversation(name, None, NO_MESSAGES)
