"""A Claude Code log's transcripts: one per compaction, each read lazily, its calls filled in as
its messages are read (the records become messages in `claude_code.py`)."""

from __future__ import annotations

from collections.abc import Iterator

from ..agents.claude_code import LOOKS_LIKE, NAME
from ..core.model import Message, RecordedCall, Transcript
from ..core.repair import MADE_FROM, repair
from ..errors import NoConversation
from . import anthropic
from .claude_code import Built, Reply, to_anthropic
from .common import Where
from .reading import Record
from .repair_writers import WRITERS
from .segments import NO_MESSAGES, require_messages, segments
from .skipped import Skipped


def transcripts(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    """The conversations of a Claude Code log, the first named by the file, each later one by its
    first line."""
    found = False
    built = segments(to_anthropic(records, name, skipped), lambda first: first.record.line)
    for number, (line, segment) in enumerate(built):
        transcript = Transcript(name, NAME, "anthropic", (), line=1 if number == 0 else line, open_end=[])
        transcript.messages = require_messages(name, _with_calls(name, segment, transcript))
        yield transcript
        found = True
    if not found:  # only bookkeeping records
        raise NoConversation(name, None, f"{NO_MESSAGES} ({LOOKS_LIKE}, with no conversation yet)")


def _with_calls(name: str, built: Iterator[Built], transcript: Transcript) -> Iterator[Message]:
    """A Claude Code conversation's messages, repaired, with `transcript.calls` filled as they
    are read: one call per distinct `message.id`, at the index of the message it produced."""
    replies: dict[Message, Reply] = {}  # Message hashes by identity

    def parsed() -> Iterator[Message]:
        for record, reply in built:
            message = anthropic.parse_message(record.value, record.raw, Where(name, record.line))
            if reply is not None:
                replies[message] = reply
            yield message

    seen: set[str] = set()
    repaired = repair(parsed(), WRITERS["anthropic"], name, transcript.repairs, transcript.open_end)
    for index, message in enumerate(repaired):
        for reply in _replies_of(message, replies):
            if reply.id not in seen or not reply.id:
                seen.add(reply.id)
                transcript.calls.append(RecordedCall(index, *reply))
        yield message


def _replies_of(message: Message, replies: dict[Message, Reply]) -> list[Reply]:
    """The calls recorded for a message: its own, or those of the replies it combines."""
    reply = replies.pop(message, None)
    if reply is not None:
        return [reply]
    return [r for part in message.memo.get(MADE_FROM, ()) for r in _replies_of(part, replies)]
