"""Which format an input is, from its first record; and, for a chat transcript, which dialect.

`detect` asks each format's own `sniff` in a fixed order: the most specific shapes first (an
OpenHands event list and a SWE-agent trajectory are also lists or objects with messages inside),
plain chat messages last. A new format adds its `sniff` to that order and nothing else.

A chat transcript (`role` on the first line) is OpenAI or Anthropic: the first message only one
dialect can have decides (`chat_dialect`), scanning ahead in a seekable file rather than holding
thousands of records that could be either.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import BinaryIO

import orjson

from ..core.model import Dialect
from ..errors import BadInput
from . import aider, claude_code, cline, codex, gemini_cli, openai, opencode, openhands, responses, swe_agent
from .common import type_name
from .reading import Record

#: How many chat lines to look at for a feature that only one dialect has before assuming OpenAI.
SNIFF_LIMIT = 1000


def detect(name: str, first: Record) -> str:
    """The format of an input, from its first record."""
    value = first.value
    if openhands.sniff(value):
        return "openhands"
    if swe_agent.sniff(value):
        return "swe-agent"
    if cline.sniff(value, name):
        return "cline"
    if isinstance(value, list):
        return "request"
    if not isinstance(value, dict):
        raise BadInput(name, first.line, f"expected a JSON object per line, got {type_name(value)}")
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
    raise BadInput(
        name,
        first.line,
        'not a transcript: expected a message with "role", a Claude Code '
        'or Codex record, or a request object with "messages" (see --format)',
    )


def detect_text(name: str, stream: BinaryIO) -> str | None:
    """The format of an input that is not JSON, from its first bytes (the stream is left where
    it was), or None: aider's markdown history, or a file named as one."""
    if aider.sniff_bytes(_head(stream)) or name.endswith(aider.FILE_NAME):
        return "aider"
    return None


#: What each agent's log looks like, for the message of one that cannot be read.
LOOKS_LIKE = {
    "cline": "a Cline / Roo Code task history (api_conversation_history.json)",
    "aider": "an aider chat history (.aider.chat.history.md)",
    "opencode": "an OpenCode session (from its storage folder)",
    "gemini-cli": "a Gemini CLI chat recording (chats/session-*.json or .jsonl)",
}


def described(format: str, transcripts: Iterator) -> Iterator:
    """The transcripts of a reader, its problems saying which agent's log the input looked like."""
    try:
        yield from transcripts
    except BadInput as error:
        if format not in LOOKS_LIKE or error.problem.startswith("this looks like"):
            raise
        raise type(error)(
            error.path, error.line, f"this looks like {LOOKS_LIKE[format]}, but {error.problem}"
        ) from None


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
