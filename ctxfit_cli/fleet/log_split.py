"""`estimate` of a big Claude Code log read in pieces on every core (`log_pieces`).

The counter is the one `log_estimate` guesses (the profile of the log's first model), found by
reading the log's head; each piece is then read, estimated and its usage collected by its own
process, and the pieces are put together here: reports merged, message numbers and line numbers
moved on by those of the pieces before, the calls recorded kept once per reply, the spend the
log records added up. The cuts between pieces are checked (`_joins`); a log the pieces cannot
give exactly as one reading gives it (a compaction, a cut that was not a clean one, a line that
does not parse) is read by the one-process path instead, which gives its figures or its error.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

import orjson

from ..core.estimate import TranscriptEstimate
from ..core.model import RecordedCall, Transcript
from ..counters.seed import Counter
from ..errors import CtxfitError
from ..formats import parallel
from ..formats.reading import open_input
from . import log_pieces
from .log_estimate import LogEstimate, estimate_entry, finish, guess_counter

if TYPE_CHECKING:
    from .work import Job

#: Logs smaller than this are read in one process: starting workers costs more than it saves.
MIN_BYTES = 32 << 20


class Split(NamedTuple):
    transcript: Transcript
    estimate: LogEstimate
    #: The log's recorded spend (`fleet.spend.Spend.totals`).
    spend: dict


def worth_it(path: str) -> bool:
    """Whether a file may be read in pieces: a big regular file, on a machine with more than
    one core (whether it is a Claude Code log is found when it is read)."""
    return path != "-" and parallel.cores() > 1 and os.path.isfile(path) and os.path.getsize(path) >= MIN_BYTES


def estimate_split(
    path: str,
    name: str,
    format: str | None,
    given: Counter | None,
    *,
    window: int | None,
    fixed_tokens: int | None,
    top_n: int,
    pieces: int | None = None,
    workers: int | None = None,
) -> Split | None:
    """The estimate of a Claude Code log read in pieces, as `log_estimate.estimate_log` makes it
    reading the log whole; None when the file is no Claude Code log or is not read so (see the
    module). `pieces`: how many (a test asks for many small ones)."""
    head = _head(path, name, format, given)
    if head is None:
        return None
    transcript, guess, sidechain = head
    read = _read_pieces(path, name, guess, sidechain, top_n=top_n, pieces=pieces, workers=workers)
    if read is None:
        return None
    report = TranscriptEstimate(name, "claude-code", counter=guess, top_n=top_n)
    prefix, turns, split = _put_together(read, transcript, report, name)
    estimate = finish(
        transcript, guess, report, prefix, turns, split, given=given, window=window, fixed_tokens=fixed_tokens
    )
    if estimate is None:
        return None
    return Split(transcript, estimate, _spend(read))


def _read_pieces(
    path: str,
    name: str,
    counter: Counter,
    sidechain: bool,
    *,
    top_n: int,
    pieces: int | None = None,
    workers: int | None = None,
) -> list[log_pieces.Piece] | None:
    """The pieces of the log, each read by a worker; None when they do not join as one
    reading (`_joins`)."""
    workers = workers or min(parallel.cores(), 8)
    cuts = parallel.pieces(path, os.path.getsize(path), pieces or 2 * workers)
    jobs = [(path, name, a, b, sidechain, top_n) for a, b in cuts]
    log_pieces.COUNTER = counter  # inherited by the workers, forked at the first submit
    try:
        read = list(parallel._run(log_pieces.read_piece, jobs, workers))
    finally:
        log_pieces.COUNTER = None
    return read if _joins(read) else None


def _add_calls(
    transcript: Transcript, piece: log_pieces.Piece, messages_before: int, name: str, lines_before: int
) -> None:
    """The calls, repairs and notes on being written of a piece, added to the log's."""
    seen = {call.id for call in transcript.calls}
    for index, reply in piece.calls:
        if reply[0] not in seen or not reply[0]:
            seen.add(reply[0])
            transcript.calls.append(RecordedCall(messages_before + index, *reply))
    transcript.repairs.extend(_moved(entry, name, lines_before) for entry in piece.repairs)
    transcript.open_end.extend(piece.open_end)


def _sidechain(path: str) -> bool | None:
    """Whether the log is a sub-agent's (its first conversation record a sidechain); None: it
    has no conversation record."""
    with open(path, "rb") as file:
        for line in file:
            value = orjson.loads(line) if line.strip() else None
            if isinstance(value, dict) and value.get("type") in ("user", "assistant"):
                return bool(value.get("isSidechain"))
    return None


def _head(path: str, name: str, format: str | None, given: Counter | None) -> tuple[Transcript, Counter, bool] | None:
    """The log's first conversation (empty: its messages are read in pieces), the counter of its
    first model, and whether it is a sub-agent's log (its first conversation record a sidechain);
    None for another format, or a head the one-process path reports on."""
    from ..formats import read_transcripts

    try:
        with open_input(path) as stream:
            transcripts = read_transcripts(name, stream, format)
            first = next(transcripts)
            if first.format != "claude-code":
                return None
            _, guess = guess_counter(iter(first.messages), first, given)

    except (CtxfitError, StopIteration):
        return None
    transcript = Transcript(name, "claude-code", "anthropic", (), line=1, open_end=[])
    sidechain = _sidechain(path)
    return None if sidechain is None else (transcript, guess, sidechain)


def _joins(read: list[log_pieces.Piece]) -> bool:
    """Whether the pieces read the log as one reading does: none refused, and at each cut the
    piece before ends in a user message, the one after starts with the reply at the cut, and the
    repairs around the cut are reported in one reading's order (those of the piece before after
    its last message was made, or those of the piece after before its first was done: none)."""
    if any(piece.refused is not None or (piece.first is None and piece.cut) for piece in read):
        return False  # (a piece that read records but made no message: they were read on their own)
    used = [piece for piece in read if piece.first is not None]
    for before, after in zip(used, used[1:]):
        assert before.last is not None and after.first is not None
        if before.open_end or before.last[0] != "user":
            return False
        if after.first != ("assistant", after.cut) or (before.tail and after.head):
            return False
    return bool(used)


def _put_together(
    read: list[log_pieces.Piece], transcript: Transcript, report: TranscriptEstimate, name: str
) -> tuple[list[int], list[int], int]:
    """Merge the pieces into `report` and `transcript` (calls, repairs, why it looks still being
    written); the running totals `log_estimate.finish` takes."""
    split = read[0].split
    prefix, turns = [sum(read[0].tokens[:split])], []
    lines_before = messages_before = 0
    for piece in read:
        assert piece.report is not None
        report.merge(piece.report)
        for index in piece.turns:
            at = messages_before + index - split
            if at:
                turns.append(at)
        _add_calls(transcript, piece, messages_before, name, lines_before)
        for tokens in piece.tokens[split if piece is read[0] else 0 :]:
            prefix.append(prefix[-1] + tokens)
        lines_before += piece.lines
        messages_before += len(piece.tokens)
    return prefix, turns, split


_ANSWERED = " has no result before line "


def _moved(entry: str, name: str, lines: int) -> str:
    """A repair a piece reported, its line numbers (counted from the piece's first byte) moved
    on by the `lines` before it."""
    if not lines:
        return entry
    line, _, what = entry[len(name) + 1 :].partition(":")
    if int(line):
        entry = f"{name}:{int(line) + lines}:{what}"
    if _ANSWERED in what and what.endswith("; answered it with an aborted result"):
        head, _, tail = entry.rpartition(_ANSWERED)
        before, _, rest = tail.partition(";")
        entry = f"{head}{_ANSWERED}{int(before) + lines};{rest}"
    return entry


def _spend(read: list[log_pieces.Piece]) -> dict:
    """The spend the pieces recorded, added up as one `Spend` reading the log adds it up."""
    from .spend import Spend

    spend = Spend()
    for piece in read:
        replies, unnamed = piece.spend
        spend._replies.update(replies)
        spend._unnamed.extend(unnamed)
    return spend.totals()


def entry(path: str, name: str, job: Job, given: Counter | None) -> dict | None:
    """`estimate`'s item of a big Claude Code log read in pieces (`fleet.work`), with the spend
    it records (so it is not read again for it); None: read it in one process."""
    if not job.split_big_files or job.compare or not worth_it(path):
        return None
    split = estimate_split(
        path, name, job.format, given, window=job.window, fixed_tokens=job.fixed_tokens, top_n=job.top
    )
    if split is None:
        return None
    found = estimate_entry(split.transcript, split.estimate.report, None, split.estimate.usage)
    found["spend"] = split.spend
    return found
