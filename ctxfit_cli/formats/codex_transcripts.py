"""A Codex rollout's transcripts: one per compaction, each read lazily, its calls (the
`token_count` events, `usage.py`) filled in as its messages are read (the records become
messages in `codex.py`)."""

from __future__ import annotations

from collections.abc import Iterator

from ..agents.codex import LOOKS_LIKE, NAME
from ..core.model import Message, Transcript
from ..core.repair import repair
from ..errors import NoConversation
from . import openai, usage
from .codex import to_openai
from .common import Where
from .reading import Record
from .repair_writers import WRITERS
from .segments import NO_MESSAGES, require_messages, segments
from .skipped import Skipped


def transcripts(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    """The conversations of a rollout, the first named by the file, each later one by its first line."""
    recorded = usage.CodexCalls([])  # the token_count events: see formats/usage.py
    found = False
    converted = to_openai(records, name, recorded.on_usage, skipped)
    for number, (line, segment) in enumerate(segments(converted)):
        transcript = Transcript(name, NAME, "openai", (), line=1 if number == 0 else line, open_end=[])
        transcript.messages = require_messages(name, _messages(name, segment, transcript, recorded))
        yield transcript
        found = True
    if not found:
        raise NoConversation(name, None, f"{NO_MESSAGES} ({LOOKS_LIKE}, with no conversation yet)")


def _messages(
    name: str, segment: Iterator[Record], transcript: Transcript, recorded: usage.CodexCalls
) -> Iterator[Message]:
    """One conversation of a rollout, repaired, its calls (token_count events) filled in, and
    the history a compaction gave it counted (`Transcript.given`)."""
    recorded.calls, recorded.models = transcript.calls, transcript.named_models
    messages = (openai.parse_message(r.value, r.raw, Where(name, r.line)) for r in segment)
    given = transcript.line > 1  # a compacted conversation opens with the history it was given
    repaired = repair(messages, WRITERS["openai"], name, transcript.repairs, transcript.open_end)
    for message in recorded.messages(repaired):
        given = given and message.line == transcript.line  # all of it carries the compaction's line
        transcript.given += given
        yield message
