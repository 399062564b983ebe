"""Which format an input is, from the first record a format recognises; and, for a chat transcript,
which dialect.

`recognise` asks each format's own `sniff` in a fixed order: the most specific shapes first (an
OpenHands event list and a SWE-agent trajectory are also lists or objects with messages inside),
then the agents of the registry (`ctxfit_cli/agents/`), plain chat messages last.
`detect_records` reads records until one is recognised (at most `DETECT_RECORDS` records or
`DETECT_BYTES`): agents start their logs with records of types they added last week. An input
none of whose first records is recognised is refused naming the record types it saw.

A chat transcript (`role` on the first line) is OpenAI or Anthropic: the first message only one
dialect can have decides (`chat_dialect`), scanning ahead in a seekable file rather than holding
thousands of records that could be either.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import BinaryIO

import orjson

from ..agents import BY_NAME, recognised
from ..core.model import Dialect
from ..errors import BadInput, NoConversation
from . import aider, claude_code, cline, codex, gemini_cli, openai, opencode, openhands, responses, swe_agent
from .common import type_name
from .reading import Record

#: How many chat lines to look at for a feature that only one dialect has before assuming OpenAI.
SNIFF_LIMIT = 1000


#: How far detection reads for a record it recognises (issue #34: agents put records of new types
#: first — Claude Code 2.1 opens with `permission-mode`, `progress` or `attachment` records).
DETECT_RECORDS = 64
DETECT_BYTES = 1 << 20


def detect(name: str, first: Record) -> str:
    """The format of an input, from one record (its first); unrecognised: refused."""
    found = recognise(name, first)
    if found is None:
        raise _not_a_transcript(name, [first])
    return found


def detect_records(name: str, records: Iterator[Record]) -> tuple[str, Iterator[Record]]:
    """The format of an input from its first record that one format recognises, reading at most
    `DETECT_RECORDS` records or `DETECT_BYTES` bytes; and all its records, those read included.
    Records before the recognised one stay in the stream: the reader skips (and counts) them."""
    held: list[Record] = []
    size = 0
    for record in records:
        held.append(record)
        found = recognise(name, record)
        if found is not None:
            return found, chain(held, records)
        size += len(record.raw)
        if len(held) >= DETECT_RECORDS or size >= DETECT_BYTES:
            break
    if not held:
        raise NoConversation(name, None, "is empty: no JSON records found")
    raise _not_a_transcript(name, held)


def recognise(name: str, record: Record) -> str | None:
    """The format one record belongs to, or None when no format knows its shape. A value that
    is neither a JSON object nor a list is refused at once: no format has such records."""
    value = record.value
    if openhands.sniff(value):
        return "openhands"
    if swe_agent.sniff(value):
        return "swe-agent"
    if cline.sniff(value, name):
        return "cline"
    if (agent := recognised(value)) is not None:
        return agent.name
    if isinstance(value, list):
        return "request"
    if not isinstance(value, dict):
        raise BadInput(name, record.line, f"expected a JSON object per line, got {type_name(value)}")
    if gemini_format := gemini_cli.detect(value):  # (a recording holds "messages": asked first)
        return gemini_format
    if isinstance(value.get("messages"), list) or responses.is_request(value):
        return "request"
    if opencode.sniff(value):
        return "opencode"
    if codex.sniff(value):
        return "codex"
    if claude_code.sniff(value):
        return "claude-code"
    if "role" in value:
        return "chat"
    return None


def _not_a_transcript(name: str, held: list[Record]) -> BadInput:
    """The refusal of an input none of whose first records a format recognises: what its
    records look like."""
    kinds = sorted({str(r.value.get("type")) for r in held if isinstance(r.value, dict) and "type" in r.value})
    seen = f" (its records are of types {', '.join(kinds[:8])}{', …' if len(kinds) > 8 else ''})" if kinds else ""
    return BadInput(
        name,
        held[0].line,
        f'not a transcript: none of its first {len(held)} records is a message with "role", a Claude Code, '
        f'Codex or Gemini CLI record, or a request object with "messages"{seen} (see --format)',
    )


def detect_text(name: str, stream: BinaryIO) -> str | None:
    """The format of an input that is not JSON, from its first bytes (the stream is left where
    it was), or None: aider's markdown history, or a file named as one. (An agent's SQLite
    database is read as records: `formats/database.py`.)"""
    head = _head(stream)
    if aider.sniff_bytes(head) or name.endswith(aider.FILE_NAME):
        return "aider"
    return None


#: What each agent's log looks like, for the message of one that cannot be read.
LOOKS_LIKE = {
    "claude-code": "a Claude Code session log (~/.claude/projects/*/*.jsonl)",
    "codex": "a Codex CLI rollout (~/.codex/sessions/**/rollout-*.jsonl)",
    "cline": "a Cline / Roo Code task history (api_conversation_history.json)",
    "aider": "an aider chat history (.aider.chat.history.md)",
    "opencode": "an OpenCode session (from its storage folder)",
    "gemini-cli": "a Gemini CLI chat recording (chats/session-*.json or .jsonl)",
}


def looks_like(format: str) -> str | None:
    """What a log of `format` looks like, for messages; None for a plain request or chat."""
    agent = BY_NAME.get(format)
    return agent.looks_like if agent is not None else LOOKS_LIKE.get(format)


def described(format: str, transcripts: Iterator) -> Iterator:
    """The transcripts of a reader, its problems saying which agent's log the input looked like."""
    try:
        yield from transcripts
    except BadInput as error:
        look = looks_like(format)
        if look is None or error.problem.startswith("this looks like"):
            raise
        raise type(error)(error.path, error.line, f"this looks like {look}, but {error.problem}") from None


def _head(stream: BinaryIO, size: int = 64) -> bytes:
    """The first bytes of a stream, without consuming them (nothing if it can neither peek nor seek)."""
    try:
        if hasattr(stream, "peek"):
            return stream.peek(size)[:size]
        if _seekable(stream):
            start = stream.tell()
            try:
                return stream.read(size)
            finally:
                stream.seek(start)
    except (OSError, ValueError):
        pass
    return b""


def chat_dialect(records: Iterator[Record], stream: BinaryIO) -> tuple[Dialect, Iterator[Record]]:
    """Whether a chat transcript is OpenAI or Anthropic: the first message only one dialect can
    have decides (`openai.sniff`); a transcript with none is OpenAI (it is valid as either).

    The records read before the verdict are held, but never more than `SNIFF_LIMIT`: past
    that, a seekable file is scanned ahead for the verdict (lines without a marker of either
    dialect are not even parsed) and read on from where it was; standard input, which cannot
    be read twice, keeps its records until the verdict.
    """
    seen: list[Record] = []
    for record in records:
        seen.append(record)
        verdict = openai.sniff(record.value) if isinstance(record.value, dict) else None
        if verdict is not None:
            return ("openai" if verdict else "anthropic"), chain(seen, records)
        if len(seen) == SNIFF_LIMIT and _seekable(stream):
            verdict = _scan_ahead(stream)
            return ("openai" if verdict is not False else "anthropic"), chain(seen, records)
    return "openai", iter(seen)


def _markers():
    """Bytes that only a line holding a dialect-specific message can contain (compiled when a
    scan first needs it: importing `regex` costs every command ~8 ms)."""
    global _MARKERS
    if _MARKERS is None:
        import regex

        _MARKERS = regex.compile(
            rb'"(?:tool_calls|tool|developer|function|image_url|input_audio|refusal|file|'
            rb'tool_use|tool_result|thinking|redacted_thinking|document|image|server_tool_use)"'
        )
    return _MARKERS


_MARKERS = None


def _seekable(stream: BinaryIO) -> bool:
    try:
        return stream.seekable()
    except (AttributeError, ValueError):
        return False


def _scan_ahead(stream: BinaryIO) -> bool | None:
    """The verdict of the first decisive line after the current position; the stream is put
    back where it was."""
    start = stream.tell()
    markers = _markers()
    try:
        for line in stream:
            if markers.search(line) is None:
                continue
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # the reader reports it when it gets there
            verdict = openai.sniff(value) if isinstance(value, dict) else None
            if verdict is not None:
                return verdict
        return None
    finally:
        stream.seek(start)
