"""`fit` and `replay` of a big Claude Code log or Codex rollout, held in outline.

A fitter and a replay need each message's estimate, its role, and the ids and names of its
tool calls and results; the text only of what a payload sends. So a big log's conversation is
held as the outline path for JSON Lines chat files holds it (`formats.parallel.Outline`): each
message with its estimates (the counter's, in its memo; for a replay, the seed rule's and the
validator's checks too) and its parts without their text. Its bytes as sent are written as they
are read to a temporary file (deleted when closed, and by the system if ctxfit dies), by offset
and size, and read back for the messages a plan sends (`LogOutline.complete`): a message of
such a log is made from several records and repaired, so its bytes are no span of the log to
read again. The messages are read and estimated as `estimate` reads them (their texts measured
on every core, for a big log: `formats.measures`), so memory holds the outline, not the text.

The estimates are the counter's of the log's first model (`log_estimate.guess_counter`); if the
choice made from the whole log picks another (its last model is of another family), the caller
reads the log whole instead (`LogOutline.holds`), so the result is the same either way.
"""

from __future__ import annotations

import os
import tempfile
from itertools import chain
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from ..core.costs import message_cost, seed_cost_read_off
from ..core.model import Message, PartKind, Role, Transcript
from ..core.notes import TRIMMED_HISTORY
from ..counters.seed import SEED, Counter
from ..formats import PARSERS, measures
from ..formats.common import Where
from .log_estimate import guess_counter, measuring

if TYPE_CHECKING:
    from ..core.plan import Plan

#: Logs smaller than this are held whole: their text is small, and the outline's file costs time.
MIN_BYTES = 64 << 20
#: Where an outline message keeps the offset and size of its bytes in the outline's file.
_AT = "log_outline.at"
_TEXT = PartKind.TEXT


def worth_it(path: str, format: str) -> bool:
    """Whether a log is held in outline: a big regular file of a merged-records format."""
    return format in measures.FORMATS and path != "-" and os.path.isfile(path) and os.path.getsize(path) >= MIN_BYTES


class LogOutline:
    """One conversation of a log in outline: `transcript` (materialized, its messages in
    outline, its system prompt in full), and its messages' bytes in a temporary file."""

    def __init__(self, transcript: Transcript, counter: Counter, spill: Any) -> None:
        self.transcript, self.counter, self._spill = transcript, counter, spill

    def holds(self, counter: Counter) -> bool:
        """Whether the outline's estimates are `counter`'s (else read the log whole)."""
        return counter.name == self.counter.name

    def close(self) -> None:
        if self._spill is not None:
            self._spill.close()

    def full(self, message: Message) -> Message:
        """A message of the conversation with its text and bytes (itself if it already has them:
        one the system prompt holds, or one a fitter made)."""
        if self._spill is None:
            raise AssertionError(f"{self.transcript.path}: read without its messages' bytes: nothing can be sent")
        at = message.memo.get(_AT)
        if at is None:
            return message
        offset, size = at
        self._spill.seek(offset)
        raw = self._spill.read(size)
        parsed = PARSERS[self.transcript.dialect](orjson.loads(raw), raw, Where(self.transcript.path, message.line))
        memo = {key: value for key, value in message.memo.items() if key != _AT}
        full = Message(parsed.role, parsed.parts, raw, message.line, memo, message.repaired)
        if message_cost(parsed, self.counter).tokens != memo[self.counter.name].tokens:  # (ours: never changes)
            raise AssertionError(f"{self.transcript.path}:{message.line}: message read back differs")
        return full

    def complete(self, transcript: Transcript, plan: Plan) -> Transcript:
        """`transcript` with the messages `plan` sends read in full (`payload.fit_transcript`)."""
        from dataclasses import replace

        messages = list(transcript.messages)
        for i in plan.sent():
            messages[i] = self.full(messages[i])
        return replace(transcript, messages=tuple(messages))


def read_outline(
    transcript: Transcript,
    path: str,
    given: Counter | None,
    *,
    seed: bool = False,
    checks: bool = False,
    workers: bool = True,
    sends: bool = True,
) -> LogOutline:
    """Read one conversation of a log (`transcript`, as `read_transcripts` gives it) into an
    outline, its messages estimated with `given` or the counter of the log's first model (and
    with `seed`, with the seed rule too: a replay reports every message's script figures), on
    every core unless not `workers` (the files are already spread over processes). Unless it
    `sends` (a replay sends nothing), the messages' bytes are not kept for `LogOutline.full`."""
    messages = iter(transcript.messages)
    ahead, counter = guess_counter(messages, transcript, given)
    dialect = transcript.dialect
    if checks:
        from ..replay.validity import checked
    from ..core.validate import memo_key

    spill = tempfile.TemporaryFile() if sends else None
    spilled = 0  # (counted here: `tell` is a system call, a message at a time ~5% of the reading)
    # What an outline message keeps of its memo: its estimates and checks (not the messages a
    # repair made it from, which hold their text).
    keys = (counter.name, *((SEED.name,) if seed else ()), *((memo_key(dialect),) if checks else ()))
    held: list[Message] = []
    leading = True  # the system prompt (the leading system messages) is kept in full
    try:
        where = path if workers else None
        with measuring(where, transcript, counter) as pieces:
            measure = pieces.counter if pieces is not None else counter  # (the same name, the same figures)
            for message in measures.measured(chain(ahead, messages), pieces):
                message_cost(message, measure)
                if seed and pieces is not None:  # (the vectors measured on other cores at hand)
                    seed_cost_read_off(message, measure)
                elif seed:
                    message_cost(message, SEED)
                if checks:
                    checked(message, dialect)
                leading = leading and message.role is Role.SYSTEM
                if leading:
                    held.append(message)
                else:
                    held.append(_outlined(message, keys, spill, spilled))
                    spilled += len(message.raw)
    except BaseException:
        if spill is not None:
            spill.close()
        raise
    if spill is not None:
        spill.flush()
    outline = Transcript(
        transcript.path,
        transcript.format,
        dialect,
        tuple(held),
        transcript.system,
        transcript.tools,
        transcript.extra,
        transcript.line,
        transcript.calls,
        transcript.repairs,
        transcript.unlogged,
        transcript.given,
        transcript.open_end,
    ).materialize()
    return LogOutline(outline, counter, spill)


def _outlined(message: Message, keys: tuple, spill: Any = None, offset: int = 0) -> Message:
    """The message without its text and bytes (but ctxfit's own note, which a fitter looks
    for), its estimates and checks kept, its bytes written to `spill` (at `offset`) if given."""
    memo: dict[object, Any] = {key: message.memo[key] for key in keys if key in message.memo}
    if spill is not None:
        spill.write(message.raw)
        memo[_AT] = (offset, len(message.raw))
    parts = tuple(
        [
            part if not part.text or (part.kind is _TEXT and part.text == TRIMMED_HISTORY) else part._replace(text="")
            for part in message.parts
        ]
    )
    return Message(message.role, parts, b"", message.line, memo, message.repaired)


def read_whole(path: str, transcript: Transcript, format: str | None, opened: BinaryIO | None = None) -> Transcript:
    """The conversation of the log at `path` (or `opened` from it: a URI's object) that starts
    where `transcript` does, read again from the start and held whole (materialized)."""
    from ..formats import read_transcripts
    from ..formats.reading import open_input

    with opened if opened is not None else open_input(path) as stream:
        for again in read_transcripts(transcript.path, stream, format):
            if again.line == transcript.line:
                return again.materialize()
            for _ in again.messages:  # an earlier conversation of a compacted log: passed over
                pass
    raise AssertionError(f"{path}: conversation at line {transcript.line} not found when read again")
