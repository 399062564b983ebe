"""Reading one big JSON Lines file on several cores: to estimate it, or to fit it.

A chat transcript in JSON Lines (OpenAI or Anthropic messages, one per line) is a list of
independent lines, so a big file can be cut at line boundaries and each piece read by its own
process. To estimate, each piece's totals come back and merge exactly, message numbers and error
line numbers included. To fit, each piece comes back in *outline*: every message with its
estimate and the ids and names of its tool calls and results, but without its text — that is
all the fitter needs — and the few messages the plan sends are then read again in full. Claude
Code and Codex logs merge neighbouring records, and standard input cannot be cut, so those are
always read in one process.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Generator, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import orjson

from ..core.costs import MessageCost, message_cost
from ..core.estimate import TranscriptEstimate
from ..core.model import Dialect, Message, Part, PartKind, Role, Transcript
from ..core.notes import TRIMMED_HISTORY
from ..counters.seed import SEED, Counter
from ..errors import BadInput, NoConversation
from . import NO_MESSAGES, PARSERS, anthropic
from .common import Where
from .reading import BUFFER, as_sent, lines_of, numbered_lines, parse_line

if TYPE_CHECKING:
    from ..core.plan import Plan

#: Files smaller than this are read in one process: starting workers costs more than it saves.
MIN_BYTES = 64 << 20
PARALLEL_DIALECTS = ("openai", "anthropic")


def cores() -> int:
    """The CPUs this process may run on: its affinity mask where the OS has one (a container or
    `taskset` may allow fewer than the machine has), as Python 3.13's `os.process_cpu_count`."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def worth_it(path: str, format: str, counter: Counter) -> bool:
    """Whether a file is read on several processes (`estimate_in_parallel`, `read_outline`): a
    big regular file of a line-independent format, counted with the seed rule, on a machine
    with more than one core."""
    return (
        format in PARALLEL_DIALECTS
        and counter is SEED
        and cores() > 1
        and path != "-"
        and os.path.isfile(path)
        and os.path.getsize(path) >= MIN_BYTES
    )


def pieces(path: str, size: int, count: int, start: int = 0) -> list[tuple[int, int]]:
    """Byte ranges that cut a file of `size` bytes from `start` (a line start) into about
    `count` pieces at line starts."""
    cuts = [start]
    with open(path, "rb") as file:
        for k in range(1, count):
            file.seek(max(start + (size - start) * k // count, cuts[-1]))
            file.readline()  # on to the start of the next line
            cuts.append(min(file.tell(), size))
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a] or [(start, size)]


def _run(function, jobs: list, workers: int) -> Generator:
    """`function` over `jobs` (`(path, ...)` tuples) in `workers` forked processes: results in
    job order, each as soon as it and those before it are ready (closed early, the workers are
    killed)."""
    from .workers import Workers

    with Workers(workers, tasks=len(jobs)) as pool:
        yield from pool.map(function, jobs, name=jobs[0][0] if jobs else "")


def _jobs(path: str, count: int, *args, start: int = 0) -> list[tuple]:
    """One job per piece: (path, *args, piece start, piece end)."""
    return [(path, *args, a, b) for a, b in pieces(path, os.path.getsize(path), count, start)]


def estimate_in_parallel(
    path: str, name: str, dialect: str, *, top_n: int, workers: int | None = None
) -> TranscriptEstimate:
    """The estimate of a JSON Lines chat transcript, read by several processes.

    Gives exactly what reading it in one process gives (tests hold it to that).
    """
    workers = workers or min(cores(), 8)
    # Twice as many pieces as workers: one that finishes early takes another piece.
    results = _run(_estimate_piece, _jobs(path, 2 * workers, name, dialect, top_n), workers)
    total, lines_before = None, 0
    for estimate, lines, error in results:
        _raise_first(name, error, lines_before)
        if total is None:
            total = estimate
        else:
            total.merge(estimate)
        lines_before += lines
    if total is None or total.messages == 0:
        raise NoConversation(name, None, NO_MESSAGES)
    return total


def _raise_first(name: str, error: tuple[int, str] | None, lines_before: int) -> None:
    """Report a piece's error (pieces are checked in file order: the first one is reported)."""
    if error is not None:
        line, problem = error
        raise BadInput(name, line + lines_before if line else None, problem)


def _estimate_piece(job: tuple) -> tuple[TranscriptEstimate | None, int, tuple[int, str] | None]:
    """One piece: (its estimate, how many lines it has, (line, problem) of its first error)."""
    path, name, dialect, top_n, start, end = job
    parse = PARSERS[dialect]
    estimate = TranscriptEstimate(name, dialect, top_n=top_n)
    with open(path, "rb", buffering=BUFFER) as file:
        file.seek(start)
        piece = _Piece(file, end)
        try:
            messages: Iterator[Message] = (
                parse(parse_line(name, number, line), line, Where(name, number))
                for number, line in numbered_lines(name, piece, at_start=start == 0)
            )
            if dialect == "anthropic" and start == 0:  # the system lines, counted as the one prompt they are
                messages = anthropic.one_system_prompt(messages)
            for message in messages:
                estimate.add(message)
        except BadInput as error:
            return None, 0, (error.line or 0, error.problem)
    return estimate, piece.lines, None


class _Piece:
    """The lines of a file from where it is up to byte `end` (a line start), counted.

    Streamed, like every read of a transcript: memory stays the same whatever the file size."""

    def __init__(self, file, end: int) -> None:
        self.file, self.end, self.lines = file, end, 0
        self.line_start = file.tell()  # byte offset of the line last read

    def __iter__(self):
        position = self.file.tell()
        for line in lines_of(self.file):
            if position >= self.end:
                return
            self.line_start = position
            position += len(line)
            self.lines += 1
            yield line


# --- fitting: a history held in outline --------------------------------------------------------

# Roles and part kinds cross the process boundary as plain strings: unpickling an enum member
# costs a call, and an outline holds hundreds of thousands of them.
_KINDS = {kind.value: kind for kind in PartKind}
_ROLES = {role.value: role for role in Role}
_VALUES = {member: member.value for member in (*PartKind, *Role)}
_SEED = SEED.name


class Outline:
    """A big transcript read in outline (see the module's docstring).

    `transcript` holds the system prompt (its leading system lines, read in full); `messages`
    reads the conversation, in outline, repaired as any transcript is (`core.repair`), and
    yields each piece's messages as soon as the piece is read, so the caller can work on them
    while later pieces are still being read. Outline messages carry their exact estimates (in
    their memo; with `checks`, the validator's checks too) but no text and no raw bytes:
    `complete` reads in full the ones a plan sends.
    """

    def __init__(
        self,
        path: str,
        transcript: Transcript,
        start: int,
        lines_before: int,
        workers: int | None = None,
        checks: bool = False,
    ) -> None:
        self.path, self.transcript = path, transcript
        self.start, self.lines_before = start, lines_before  # where the conversation begins
        self.workers = workers or min(cores(), 8)
        self.checks = checks
        #: Byte offset of each line of the conversation (-1: a line holding no message), by line
        #: number from the first: an array, 8 bytes a line (a dict of ints was ~100 bytes).
        self.offsets = array("q")

    def messages(self) -> Iterator[Message]:
        """The conversation in outline, repaired, in order (reading it again starts over)."""
        from ..core.repair import repair
        from .repair_writers import WRITERS

        name, dialect = self.transcript.path, self.transcript.dialect
        self.transcript.repairs.clear()
        yield from repair(self._outline(), _ReadsInFull(WRITERS[dialect], self), name, self.transcript.repairs)

    def _outline(self) -> Iterator[Message]:
        name, dialect = self.transcript.path, self.transcript.dialect
        offsets = self.offsets = array("q")
        first_line = self.lines_before + 1
        # Four pieces per worker: the caller works on the first while the rest are read.
        jobs = _jobs(self.path, 4 * self.workers, name, dialect, self.checks, start=self.start)
        checks_key, make_checked = _checks(dialect) if self.checks else (None, None)
        lines_before, found = self.lines_before, False
        for records, lines, error in _run(_outline_piece, jobs, self.workers):
            _raise_first(name, error, lines_before)
            costs: dict[int, MessageCost] = {}  # a piece sends an estimate once per shape (`_outline_piece`)
            for role, number, offset, parts, cost, checks, repaired in records:
                parts = tuple(
                    [
                        Part(_KINDS[kind], text, tool, call_id, images, is_error)
                        for kind, text, tool, call_id, images, is_error in parts
                    ]
                )
                line = number + lines_before
                if line - first_line > len(offsets):  # blank lines hold no message
                    offsets.extend([-1] * (line - first_line - len(offsets)))
                offsets.append(offset)
                found = True
                made = costs.get(id(cost))
                if made is None:
                    made = costs[id(cost)] = MessageCost._make(cost)
                memo: dict[object, Any] = {_SEED: made}
                if checks_key is not None:
                    memo[checks_key] = make_checked(checks)
                yield Message(_ROLES[role], parts, b"", line, memo, repaired)
            lines_before += lines
        if not found:
            raise NoConversation(name, None, NO_MESSAGES)

    def full(self, message: Message) -> Message:
        """A message of the conversation read in full (itself if it already is: one a repair made)."""
        with open(self.path, "rb") as file:
            return self._read_in_full(file, message)

    def complete(self, transcript: Transcript, plan: Plan) -> Transcript:
        """`transcript` (its messages those `messages` gave, its system prompt perhaps with a
        note added) with the messages `plan` sends read in full."""
        messages = list(transcript.messages)
        with open(self.path, "rb") as file:
            for i in plan.sent():
                messages[i] = self._read_in_full(file, messages[i])
        return replace(transcript, messages=tuple(messages))

    def _read_in_full(self, file, message: Message) -> Message:
        if message.raw:
            return message
        name, offset = self.transcript.path, self.offsets[message.line - self.lines_before - 1]
        file.seek(offset)
        [(_, line)] = numbered_lines(name, [file.readline()], at_start=offset == 0)
        full = PARSERS[self.transcript.dialect](
            parse_line(name, message.line, line), as_sent(line), Where(name, message.line)
        )
        if message_cost(full).tokens != message_cost(message).tokens:
            raise BadInput(name, message.line, "changed while it was being read; run ctxfit again")
        return full


class _ReadsInFull:
    """A dialect's repair writer that first reads in full a message it rebuilds: an outline
    message has no text to rebuild it from."""

    def __init__(self, writer, outline: Outline) -> None:
        self.writer, self.outline = writer, outline
        self.user_first, self.results_in_user = writer.user_first, writer.results_in_user
        self.combines_turns = writer.combines_turns

    def answers(self, call_ids: list[str], line: int) -> list[Message]:
        return self.writer.answers(call_ids, line)

    def reorder(self, message: Message, order: list[int | str]) -> Message | None:
        return self.writer.reorder(self.outline.full(message), order)

    def opener(self, line: int) -> Message:
        return self.writer.opener(line)

    def combined(self, first: Message, second: Message) -> Message:
        return self.writer.combined(self.outline.full(first), self.outline.full(second))


def read_outline(
    path: str, name: str, format: str, dialect: Dialect, *, workers: int | None = None, checks: bool = False
) -> Outline:
    """Start reading a JSON Lines chat transcript in outline, on several processes (see
    `worth_it`): the system prompt now, the conversation from `Outline.messages`. With
    `checks`, each message's validator checks (`core.validate.check_message`) are made where
    it is read, for a replay that checks every request."""
    parse = PARSERS[dialect]
    system: list[Message] = []
    with open(path, "rb", buffering=BUFFER) as file:
        piece = _Piece(file, os.path.getsize(path))
        for number, line in numbered_lines(name, piece):
            message = parse(parse_line(name, number, line), as_sent(line), Where(name, number))
            if message.role is not Role.SYSTEM:
                if dialect == "anthropic":
                    system = list(anthropic.one_system_prompt(system))
                transcript = Transcript(name, format, dialect, (), tuple(system))
                return Outline(path, transcript, piece.line_start, piece.lines - 1, workers, checks)
            system.append(message)  # leading system lines are the system prompt, as always
    raise NoConversation(name, None, NO_MESSAGES)


def _checks(dialect: str) -> tuple:
    """Where a message keeps its checks, and how they are made from the tuple a piece sends."""
    from ..core.validate import Checked, memo_key  # (only a replay asks for checks)

    return memo_key(dialect), Checked._make


def _items(mapping: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(mapping.items())


def _outline_piece(job: tuple) -> tuple[list | None, int, tuple[int, str] | None]:
    """One piece in outline: plain tuples per message, cheap to send back."""
    path, name, dialect, checks, start, end = job
    parse = PARSERS[dialect]
    if checks:
        from ..core.validate import check_message
    records = []
    # Equal estimates are sent as one object (pickle sends an object it has sent once as a
    # reference): messages of the same shape have the same estimate, and sending every one's
    # two dicts was a third of a piece's time.
    costs: dict[tuple, tuple] = {}
    with open(path, "rb", buffering=BUFFER) as file:
        file.seek(start)
        piece = _Piece(file, end)
        try:
            for number, line in numbered_lines(name, piece, at_start=start == 0):
                value = parse_line(name, number, line)
                message = parse(value, line, Where(name, number))
                if checks:  # (checked as the reader left it: a repaired message as it is sent)
                    sent = orjson.loads(message.raw) if message.repaired else value
                    checked = tuple(check_message(sent, dialect))  # (a plain tuple pickles 3× faster)
                else:
                    checked = None
                # Texts are left out but for ctxfit's own note, which the fitter looks for.
                parts = tuple(
                    [
                        (_VALUES[kind], text if text == TRIMMED_HISTORY else "", tool, call_id, images, is_error)
                        for kind, text, tool, call_id, images, is_error in message.parts
                    ]
                )
                cost = message_cost(message)
                key = (*cost[:1], _items(cost.by_kind), _items(cost.vectors), *cost[3:])
                packed = costs.get(key) or costs.setdefault(key, tuple(cost))
                records.append(
                    (_VALUES[message.role], number, piece.line_start, parts, packed, checked, message.repaired)
                )
        except BadInput as error:
            return None, 0, (error.line or 0, error.problem)
    return records, piece.lines, None
