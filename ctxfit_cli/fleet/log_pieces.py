"""A Claude Code log read in pieces, each by its own process, as one process reads it whole.

A log's records are merged into messages by state that runs through the log (a reply's blocks,
its results moved after it, repairs: `claude_code`, `core.repair`), so a piece cannot start at
any line. But that state is empty again where a new reply starts after the user message that
answered the one before: there the reader has just flushed the reply and its results, and what
comes next depends on nothing before it. So a piece starts at a *cut*, found the same way from
its first byte by the process that reads it and by the one that reads the piece before (which
reads on past its last byte up to that cut): past the first reply that starts in the piece, the
first record of another reply (`Cuts`). Each process reads its piece from its cut to the next,
as the whole log is read: records merged, messages parsed, repaired, estimated, calls and usage
collected; what it sends back is small (`Piece`: totals, one integer a message, the repairs).

Whether a cut really was such a place is checked where the pieces are put together
(`fleet.log_split`): the piece before ends in a user message, the piece after starts with the
reply that starts at the cut, and the repairs reported around the cut come in the order one
reading reports them. A piece that read something else (a compaction, a line it could not
parse) says so, and the log is then read in one process, which gives the same figures.
Line numbers in a piece are counted from its first byte; the caller adds the lines before it.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from typing import Any, NamedTuple

import orjson

from ..agents.claude_code import NAME as CLAUDE_CODE
from ..agents.claude_code import billed
from ..core.costs import message_cost
from ..core.estimate import TranscriptEstimate
from ..core.model import Message, Role
from ..core.repair import repair
from ..counters.seed import Counter
from ..errors import BadInput, CtxfitError
from ..formats import anthropic, claude_code
from ..formats.claude_code_transcripts import _replies_of
from ..formats.common import Where
from ..formats.reading import BUFFER, Record, as_sent, numbered_lines
from ..formats.repair_writers import WRITERS
from ..formats.skipped import Skipped
from .spend import Parts, Spend

# The counter a piece is estimated with: set before the workers are forked, so that a counter
# that cannot be pickled (a real tokenizer) needs no sending.
COUNTER: Counter | None = None


class Piece(NamedTuple):
    """What one process read of its piece (plain data: it is sent back to the parent)."""

    #: Why the piece cannot be used (the log is then read in one process), or None.
    refused: str | None
    #: Lines of the piece's byte range (the caller numbers the next piece's lines from them).
    lines: int
    #: The line its reading started at (the cut; 1 for the first piece), 0 if it read nothing.
    cut: int
    report: TranscriptEstimate | None
    #: The estimate of each message, in order (`log_estimate` adds them up).
    tokens: list[int]
    #: How many messages lead with the system prompt (the first piece's; the fixed part).
    split: int
    #: The messages that start a human turn (indexes into `tokens`).
    turns: list[int]
    #: (message index, `claude_code.Reply`) of each call, as `claude_code_transcripts._with_calls` makes them.
    calls: list[tuple]
    repairs: list[str]
    open_end: list[str]
    #: (role, line) of the first and last message read, for the checks at the cuts.
    first: tuple[str, int] | None
    last: tuple[str, int] | None
    #: How many repairs were reported before the first message was done (`head`), and after the
    #: last one was made (`tail`): around a cut, one of the two must be none.
    head: int
    tail: int
    #: The log's recorded spend in the piece (`fleet.spend.Spend.parts`).
    spend: Parts
    #: What the piece holds that the reader does not know (`formats.skipped.Skipped.as_dict`).
    unread: dict = {}  # (never changed: read by `Skipped.merge`)


def _reply_key(value: Any, sidechain: bool) -> str | None:
    """The reply a record belongs to, as the reader keys it ("" for a record without an id), if
    it is a record of the conversation's replies; else None."""
    if not isinstance(value, dict) or value.get("type") != "assistant":
        return None
    if bool(value.get("isSidechain")) != sidechain:
        return None
    message = value.get("message")
    if not isinstance(message, dict) or message.get("model") == claude_code.SYNTHETIC:
        return None
    reply = message.get("id")
    return reply if isinstance(reply, str) else ""


class Cuts:
    """Finds the cut in the lines read from some line on: the first record of a reply (with an
    id) that differs from the reply of the first reply record seen."""

    def __init__(self, sidechain: bool) -> None:
        self.sidechain = sidechain
        self.current: str | None = None

    def at(self, value: Any) -> bool:
        key = _reply_key(value, self.sidechain)
        if key is None:
            return False
        if self.current is not None and key and key != self.current:
            return True
        self.current = key
        return False


class _Lines:
    """The lines of a file from byte `start`: the offset of the one last given, and how many
    start before byte `end` (blank ones too: they are numbered)."""

    def __init__(self, file: Any, start: int, end: int) -> None:
        self.file, self.position, self.at, self.end = file, start, start, end
        self.before_end = 0

    def __iter__(self) -> Iterator[bytes]:
        from ..formats.reading import lines_of

        for line in lines_of(self.file):
            self.at = self.position
            self.position += len(line)
            self.before_end += self.at < self.end
            yield line


def _is_compaction(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "system" and value.get("subtype") == "compact_boundary"


def read_piece(job: tuple) -> Piece:
    """In a worker: one piece of a Claude Code log, from its cut to the next (see the module)."""
    path, name, start, end, sidechain, top_n = job
    # What the process held when it was forked is never garbage: the collector need not walk it
    # again and again as the piece's messages come and go (a few percent of a piece's time).
    gc.freeze()
    counter = COUNTER
    assert counter is not None
    state = _State(start == 0)
    keep = _Estimating(name, counter, top_n)
    try:
        with open(path, "rb", buffering=BUFFER) as file:
            file.seek(start)
            lines = _Lines(file, start, end)
            records = _records(name, lines, start == 0, sidechain, state)
            piece = _read(name, records, keep, state, start == 0)
            return piece._replace(lines=lines.before_end) if piece.refused is None else piece
    except (BadInput, CtxfitError, RecursionError, orjson.JSONDecodeError) as error:
        return _refused(f"{type(error).__name__}: {error}")


class _State:
    """What the record reader found on the way: its lines, where it started, a compaction."""

    def __init__(self, first: bool) -> None:
        self.cut = 1 if first else 0
        self.compacted = False
        self.spend: Parts = ({}, [])


def _records(name: str, lines: _Lines, first: bool, sidechain: bool, state: _State) -> Iterator[Record]:
    """The records from the piece's cut up to the next cut (found from its first line at or
    after the end of its byte range), the spend they record kept on the way."""
    spend = Spend()
    started, own, after = first, Cuts(sidechain), Cuts(sidechain)
    for number, line in numbered_lines(name, lines, at_start=first):
        value = orjson.loads(line)
        if lines.at >= lines.end and after.at(value):
            break
        if not started and own.at(value):
            started, state.cut = True, number
        if _is_compaction(value):
            state.compacted = True
        if started:
            billed(spend, value)
            yield Record(number, value, as_sent(line))
    state.spend = spend.parts()


class _Estimating:
    """What a piece keeps of each message to estimate the log: its report, each message's
    estimate, the human turns."""

    def __init__(self, name: str, counter: Counter, top_n: int) -> None:
        self.report = TranscriptEstimate(name, CLAUDE_CODE, counter=counter, top_n=top_n)
        self.counter = counter
        self.tokens: list[int] = []
        self.turns: list[int] = []
        self.split = 0

    def add(self, index: int, message: Message, leading: bool) -> None:
        self.report.add(message)
        self.tokens.append(message_cost(message, self.counter).tokens)
        self.split += leading
        if not leading and message.is_human_turn:
            self.turns.append(index)


def _read(name: str, records: Iterator[Record], keep: _Estimating, state: _State, first: bool) -> Piece:
    repairs: list[str] = []
    open_end: list[str] = []
    replies: dict[Message, claude_code.Reply] = {}
    made = [0]  # how many repairs were reported when the last message was made

    skipped = Skipped()

    def parsed() -> Iterator[Message]:
        for item in claude_code.to_anthropic(records, name, skipped):
            if not isinstance(item, claude_code.Built):
                raise BadInput(name, None, "compacted")  # (a compaction: read in one process)
            record, reply = item
            message = anthropic.parse_message(record.value, record.raw, Where(name, record.line))
            if reply is not None:
                replies[message] = reply
            yield message
        made[0] = len(repairs)

    calls: list[tuple] = []
    seen: set[str] = set()
    head = -1
    first_seen = last_seen = None
    leading = first
    for index, message in enumerate(repair(parsed(), WRITERS["anthropic"], name, repairs, open_end, started=not first)):
        if head < 0:
            head, first_seen = len(repairs), (message.role.value, message.line)
        last_seen = (message.role.value, message.line)
        for reply in _replies_of(message, replies):
            if reply.id not in seen or not reply.id:
                seen.add(reply.id)
                calls.append((index, (reply.id, sys.intern(reply.model), reply.prompt_tokens, reply.output_tokens)))
        leading = leading and message.role is Role.SYSTEM
        keep.add(index, message, leading)
    if state.compacted:
        return _refused("compacted")
    keep.report.counter = None  # type: ignore[assignment]  # (the parent's own is put back)
    return Piece(
        None,
        0,
        state.cut,
        keep.report,
        keep.tokens,
        keep.split,
        keep.turns,
        calls,
        repairs,
        open_end,
        first_seen,
        last_seen,
        max(head, 0),
        len(repairs) - made[0],
        state.spend,
        skipped.as_dict(),
    )


def _refused(why: str) -> Piece:
    return Piece(why, 0, 0, None, [], 0, [], [], [], [], None, None, 0, 0, ({}, []), {})
