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
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from ..agents.claude_code import NAME as CLAUDE_CODE
from ..core.estimate import TranscriptEstimate
from ..core.model import RecordedCall, Transcript
from ..counters.seed import Counter
from ..errors import CtxfitError
from ..formats import parallel
from ..formats.reading import open_input
from ..formats.skipped import Skipped
from . import log_pieces
from .log_estimate import LogEstimate, estimate_entry, finish, guess_counter
from .spend import Spend

if TYPE_CHECKING:
    from .job import Job

#: Logs smaller than this are read in one process: starting workers costs more than it saves.
MIN_BYTES = 32 << 20
#: Pieces are at most about this big: the parent holds a piece's figures (a few MB for 64 MB of
#: log) from when it is read until the pieces before it are merged, and the last piece to finish
#: keeps one core alone the shorter, the smaller it is.
PIECE_BYTES = 32 << 20


class Split(NamedTuple):
    transcript: Transcript
    estimate: LogEstimate
    #: The log's recorded spend (`fleet.spend.Spend.totals`).
    spend: dict
    #: What the log holds that the reader does not know (`formats.skipped.Skipped.as_dict`).
    unread: dict


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
    report, spend = TranscriptEstimate(name, CLAUDE_CODE, counter=guess, top_n=top_n), Spend()
    merged = _Merged(transcript, report, spend, name)
    workers = workers or min(parallel.cores(), 8)
    size = os.path.getsize(path)
    cuts = parallel.pieces(path, size, pieces or max(2 * workers, -(-size // PIECE_BYTES)))
    jobs = [(path, name, a, b, sidechain, top_n) for a, b in cuts]
    log_pieces.COUNTER = guess  # inherited by the workers, forked at the first submit
    results = parallel._run(log_pieces.read_piece, jobs, workers)
    try:
        # Each piece merged as it comes and let go: the parent holds the log's totals, not its pieces.
        if not all(merged.add(piece) for piece in results) or merged.last is None:
            return None  # (the workers still reading are killed)
    finally:
        results.close()
        log_pieces.COUNTER = None
    estimate = finish(
        transcript,
        guess,
        report,
        merged.prefix,
        merged.turns,
        merged.split,
        given=given,
        window=window,
        fixed_tokens=fixed_tokens,
    )
    if estimate is None:
        return None
    return Split(transcript, estimate, spend.totals(), merged.unread.as_dict())


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
            if first.format != CLAUDE_CODE:
                return None
            _, guess = guess_counter(iter(first.messages), first, given)

    except (CtxfitError, StopIteration):
        return None
    transcript = Transcript(name, CLAUDE_CODE, "anthropic", (), line=1, open_end=[])
    sidechain = _sidechain(path)
    return None if sidechain is None else (transcript, guess, sidechain)


def _joins(read: list[log_pieces.Piece]) -> bool:
    """Whether the pieces read the log as one reading does (`_Merged.add`, without merging)."""
    merged = _Merged(Transcript("", CLAUDE_CODE, "anthropic", ()), None, None, "")
    return all(merged.add(piece) for piece in read) and merged.last is not None


class _Merged:
    """The pieces merged as they come, in order: into `report`, `transcript` (calls, repairs,
    why it looks still being written) and `spend` (as one `Spend` reading the log adds it up),
    and the running totals `log_estimate.finish` takes (`prefix`, `turns`, `split`)."""

    def __init__(self, transcript: Transcript, report: TranscriptEstimate | None, spend: Any, name: str) -> None:
        self.transcript, self.report, self.spend, self.name = transcript, report, spend, name
        self.prefix: list[int] = [0]
        self.turns: list[int] = []
        self.split = 0
        self.lines_before = self.messages_before = 0
        self.unread = Skipped()
        #: The last piece that made messages (the one a cut is checked against).
        self.last: log_pieces.Piece | None = None

    def check(self, piece: log_pieces.Piece) -> bool:
        """Whether `piece` joins the pieces before it as one reading reads them: not refused, and
        at the cut the piece before ends in a user message, this one starts with the reply at the
        cut, and the repairs around it come in one reading's order (those of the piece before
        after its last message was made, or those of this one before its first was done: none).
        A piece that read records but made no message is not joined: read with its neighbours,
        what it read may have been (a blank reply, dropped as empty rather than left out)."""
        if piece.refused is not None or (piece.first is None and piece.cut):
            return False
        before = self.last
        if piece.first is None or before is None:
            return True
        assert before.last is not None
        if before.open_end or before.last[0] != "user" or piece.first != ("assistant", piece.cut):
            return False
        return not (before.tail and piece.head)

    def add(self, piece: log_pieces.Piece) -> bool:
        """Merge one more piece (False: it does not join, see `check`)."""
        if not self.check(piece):
            return False
        tokens = piece.tokens
        if self.last is None and piece.first is not None:  # the first piece: the system prompt
            self.split = piece.split
            self.prefix[0] = sum(tokens[: piece.split])
            tokens = tokens[piece.split :]
        if self.report is not None:
            assert piece.report is not None
            self.report.merge(piece.report)
        for index in piece.turns:
            at = self.messages_before + index - self.split
            if at:
                self.turns.append(at)
        _add_calls(self.transcript, piece, self.messages_before, self.name, self.lines_before)
        prefix = self.prefix
        for count in tokens:
            prefix.append(prefix[-1] + count)
        if self.spend is not None:
            self.spend.merge(piece.spend)
        self.unread.merge(piece.unread)
        self.lines_before += piece.lines
        self.messages_before += len(piece.tokens)
        if piece.first is not None:
            self.last = piece._replace(
                report=None, tokens=[], turns=[], calls=[], repairs=[], spend=({}, []), unread={}
            )
        return True


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
    found["spend"], found["unread"] = split.spend, split.unread
    return found
